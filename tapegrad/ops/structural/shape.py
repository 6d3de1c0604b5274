"""Shape ops: strided views (broadcast, transpose, basic indexing), reshapes and concatenation."""

from .helpers import FALSE, TRUE, strided_offsets
from .index_maps import strided_index, strided_move

# ---- shape -----------------------------------------------------------------------------------------
# VIEW: ndim, shape[ndim], strides[ndim], base (out[idx] = a[base + sum(idx * stride)]), a
# gather along a strided map; RESHAPE: no parameters (the identity map: same flat order).
# Both are declared with ``linear``, which writes their kernels and rules from the map.


def view_offsets(ipool, p):
    nd = ipool[p]
    return strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])


def view_index(ipool, p):
    nd = int(ipool[p])
    return strided_index(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])


def view_scatter(S, s0, D, d0, ipool, p):
    nd = ipool[p]
    strided_move(S, s0, D, d0, ipool, p + 1, nd, ipool[p + 1 + 2 * nd], FALSE, TRUE)


def view_take(S, s0, D, d0, ipool, p, add):
    nd = ipool[p]
    strided_move(S, s0, D, d0, ipool, p + 1, nd, ipool[p + 1 + 2 * nd], TRUE, add)


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
