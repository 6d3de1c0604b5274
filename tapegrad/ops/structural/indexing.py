"""Indexing: gather, setitem and scatter by flat indices."""

import numpy as np

from .helpers import transposed_backward

# ---- indexing: m, idx[m] (flat indices into the operand, or into the output for SCATTER) -------------


def gather_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    for j in range(n):
        v = A[pa + ipool[p + 1 + j]]
        D[lo + j] = D[lo + j] + v if acc else v


def scatter_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    m = ipool[p]
    if not acc:
        for j in range(n):
            D[lo + j] = 0.0
    for j in range(m):  # repeated indices accumulate
        D[lo + ipool[p + 1 + j]] += A[pa + j]


def _index(rows, r):
    m = rows.ints(r, 0, 1)[0]
    return np.asarray(rows.ints(r, 1, m), np.int64)


# Gather and scatter with the same indices are transposes of each other: each one's backward is
# the other's forward run from the row's adjoint into its operand's (``transposed_backward``),
# and each one's Tensor-level vjp is the other's function; a linear op's jvp is itself.
gather_backward = transposed_backward("gather", scatter_forward)
scatter_backward = transposed_backward("scatter", gather_forward)


def gather_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.scatter_add(g, _index(rows, r), rows.shape(ra)))]


def scatter_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.gather_flat(g, _index(rows, r), rows.shape(ra)))]


def gather_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    return None if ta is None else rows.ops.gather_flat(ta, _index(rows, r), rows.shape(r))


def scatter_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    return None if ta is None else rows.ops.scatter_add(ta, _index(rows, r), rows.shape(r))


# SETITEM: out = a; out[idx[j]] = b[j] in order, so with repeated indices the last write wins


def setitem_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    m = ipool[p]
    for j in range(n):
        D[lo + j] = A[pa + j]
    for j in range(m):
        D[lo + ipool[p + 1 + j]] = B[pb + j]


def setitem_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    m = ipool[p]
    written = np.zeros(n, np.bool_)
    if rg[rb] != 0:
        state[rb] |= 1
    for j in range(m - 1, -1, -1):  # the last write of each position takes its gradient
        q = ipool[p + 1 + j]
        if not written[q]:
            written[q] = True
            if rg[rb] != 0:
                D[pb + j] += G[lo + q]
    if rg[ra] != 0:
        state[ra] |= 1
        for j in range(n):
            if not written[j]:
                D[pa + j] += G[lo + j]
    return 0


def _setitem_masks(rows, r, size):
    idx = _index(rows, r)
    last = np.zeros(idx.size)
    written = np.zeros(size, bool)
    for j in range(idx.size - 1, -1, -1):
        if not written[idx[j]]:
            written[idx[j]] = True
            last[j] = 1.0
    return idx, last, (~written).astype(np.float64)


def setitem_vjp(rows, r, g):
    ra, rb = rows.operands(r)
    idx, last, keep = _setitem_masks(rows, r, g.size)
    O = rows.ops
    gb = O.gather_flat(g, idx, rows.shape(rb)) * rows.const(last.reshape(rows.shape(rb)))
    return [(ra, g * rows.const(keep.reshape(g.shape))), (rb, gb)]


def setitem_jvp(rows, r, tangent):
    ra, rb = rows.operands(r)
    ta, tb = tangent(ra), tangent(rb)
    if ta is None and tb is None:
        return None
    shape = rows.shape(r)
    size = int(np.prod(shape, dtype=np.int64))
    idx, last, keep = _setitem_masks(rows, r, size)
    O = rows.ops
    out = None if ta is None else ta * rows.const(keep.reshape(shape))
    if tb is not None:
        put = O.scatter_add(tb * rows.const(last.reshape(rows.shape(rb))), idx, shape)
        out = put if out is None else out + put
    return out
