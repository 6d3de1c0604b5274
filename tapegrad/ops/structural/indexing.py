"""Indexing: gather, setitem and scatter by flat indices."""

import numpy as np

# ---- indexing: m, idx[m] (flat indices into the operand, or into the output for SCATTER) -------------
# GATHER (out[j] = a[idx[j]]) and SCATTER (out[idx[j]] += a[j]) are the two directions of one
# map, so each is the other's transpose; both are declared with ``linear``.


def index_offsets(ipool, p):
    return ipool[p + 1 : p + 1 + ipool[p]]


def index_list(ipool, p):
    return np.asarray(ipool[p + 1 : p + 1 + int(ipool[p])], np.int64)


def _index(rows, r):
    ipool, p = rows.params(r)
    return index_list(ipool, p)


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
