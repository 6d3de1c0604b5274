"""Shape ops: strided views (broadcast, transpose, basic indexing), reshapes and concatenation."""

import numpy as np

from .helpers import strided_offsets

# ---- shape -----------------------------------------------------------------------------------------
# VIEW: ndim, shape[ndim], strides[ndim], base (out[idx] = a[base + sum(idx * stride)])


def view_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])
    for j in range(n):
        D[lo + j] = A[pa + offs[j]]


def view_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    nd = ipool[p]
    state[ra] |= 1
    if nd == 0:
        D[pa + ipool[p + 1]] += G[lo]
        return 0
    # an odometer over the leading dims; the last dim is one strided run per step (a broadcast
    # bias row is a contiguous add per output row, not an offset array and a scatter)
    last = ipool[p + nd]
    step = ipool[p + 2 * nd]
    idx = np.zeros(max(nd - 1, 1), np.int64)
    cur = ipool[p + 1 + 2 * nd]
    for u in range(n // last if last else 0):
        o = pa + cur
        g0 = lo + u * last
        for v in range(last):
            D[o + v * step] += G[g0 + v]
        d = nd - 2
        while d >= 0:
            idx[d] += 1
            cur += ipool[p + 1 + nd + d]
            if idx[d] < ipool[p + 1 + d]:
                break
            cur -= ipool[p + 1 + nd + d] * idx[d]
            idx[d] = 0
            d -= 1
    return 0


def _view_offsets(rows, r):
    nd = rows.ints(r, 0, 1)[0]
    shape = rows.ints(r, 1, nd)
    strides = rows.ints(r, 1 + nd, nd)
    base = rows.ints(r, 1 + 2 * nd, 1)[0]
    return rows.strided(shape, strides, base)


def view_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.scatter_add(g, _view_offsets(rows, r), rows.shape(ra)))]


def view_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    offs = _view_offsets(rows, r)
    return None if ta is None else rows.ops.gather_flat(ta, offs, offs.shape)


def view_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = tvals[ln, pa + offs[j]]


def view_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])
    for ln in range(tadjs.shape[0]):
        for j in range(n):
            tadjs[ln, pa + offs[j]] += tadjs[ln, lo + j]


# RESHAPE: no parameters (same flat order)


def reshape_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    for j in range(n):
        D[lo + j] = A[pa + j]


def reshape_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    state[ra] |= 1
    for j in range(n):
        D[pa + j] += G[lo + j]
    return 0


def reshape_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.reshape(g, rows.shape(ra)))]


def reshape_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    return None if ta is None else rows.ops.reshape(ta, rows.shape(r))


def reshape_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = tvals[ln, pa + j]


def reshape_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    for ln in range(tadjs.shape[0]):
        for j in range(n):
            tadjs[ln, pa + j] += tadjs[ln, lo + j]


# CONCAT: outer, inner, k, rows[k], lens[k] (operands are listed in ipool; a = b = -1)


def concat_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    outer = ipool[p]
    inner = ipool[p + 1]
    k = ipool[p + 2]
    width = 0
    for t in range(k):
        width += ipool[p + 3 + k + t] * inner
    start = 0
    for t in range(k):
        pr = voff[ipool[p + 3 + t]]
        wd = ipool[p + 3 + k + t] * inner
        for u in range(outer):
            for v in range(wd):
                D[lo + u * width + start + v] = A[pr + u * wd + v]
        start += wd


def concat_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    outer = ipool[p]
    inner = ipool[p + 1]
    k = ipool[p + 2]
    width = 0
    for t in range(k):
        width += ipool[p + 3 + k + t] * inner
    start = 0
    for t in range(k):
        r = ipool[p + 3 + t]
        wd = ipool[p + 3 + k + t] * inner
        if rg[r] != 0:
            state[r] |= 1
            pr = voff[r]
            for u in range(outer):
                for v in range(wd):
                    D[pr + u * wd + v] += G[lo + u * width + start + v]
        start += wd
    return 0


def concat_operands(ipool, p):
    """The rows CONCAT reads (listed in its parameters)."""
    k = ipool[p + 2]
    return ipool[p + 3 : p + 3 + k]


def _concat_params(rows, r):
    outer, inner, k = rows.ints(r, 0, 3)
    return outer, inner, rows.ints(r, 3, k), rows.ints(r, 3 + k, k)


def concat_vjp(rows, r, g):
    O = rows.ops
    outer, inner, ins, lens = _concat_params(rows, r)
    G = O.reshape(g, (outer, sum(lens) * inner))
    out, start = [], 0
    for row, ln in zip(ins, lens):
        w = ln * inner
        if rows.rg(row):
            piece = O.getitem(G, (slice(None), slice(start, start + w)))
            out.append((row, O.reshape(piece, rows.shape(row))))
        start += w
    return out


def concat_jvp(rows, r, tangent):
    O = rows.ops
    outer, inner, ins, lens = _concat_params(rows, r)
    parts = [tangent(row) for row in ins]
    if all(t is None for t in parts):
        return None
    parts = [
        O.reshape(rows.zeros(rows.shape(row)) if t is None else t, (outer, ln * inner))
        for t, row, ln in zip(parts, ins, lens)
    ]
    return O.reshape(O.concatenate(parts, axis=1), rows.shape(r))
