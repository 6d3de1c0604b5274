"""Reductions over axes: sum, prod, max and min."""

import numpy as np

from .helpers import FALSE, TRUE, ZERO, reduce_groups, strided_offsets
from .index_maps import strided_index, strided_move

# ---- reductions: ndim, in_shape[ndim], out_strides[ndim] (0 on reduced axes) -----------------------


# SUM adds each operand entry into its output entry: a scatter along the strided map with the
# reduced axes' strides 0, declared with ``linear`` (its forward adds in NumPy's pairwise
# order, ``strided_move``); the other reductions read the same map.


def reduce_offsets(ipool, p):
    return strided_offsets(ipool, p + 1, ipool[p], ZERO)


def reduce_index(ipool, p):
    return strided_index(ipool, p + 1, int(ipool[p]), 0)


def sum_scatter(S, s0, D, d0, ipool, p):
    strided_move(S, s0, D, d0, ipool, p + 1, ipool[p], ZERO, FALSE, TRUE)


def sum_take(S, s0, D, d0, ipool, p, add):
    strided_move(S, s0, D, d0, ipool, p + 1, ipool[p], ZERO, TRUE, add)


def prod_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    for j in range(n):
        D[lo + j] = 1.0
    for j in range(offs.shape[0]):
        D[lo + offs[j]] *= A[pa + j]


def prod_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    # exact with zeros: d out / d x_j is the product of the other entries
    offs = reduce_offsets(ipool, p)
    m = offs.shape[0]
    zc, pnz, z1, z2 = reduce_groups(V, pa, lo, n, offs, m)
    state[ra] |= 1
    for j in range(m):
        q = offs[j]
        x = V[pa + j]
        if zc[q] == 0:
            D[pa + j] += G[lo + q] * pnz[q] / x
        elif zc[q] == 1 and x == 0.0:
            D[pa + j] += G[lo + q] * pnz[q]
    return 0


def prod_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    """sum_j t_j * prod_{k != j} x_k per group, exact with zeros."""
    offs = reduce_offsets(ipool, p)
    m = offs.shape[0]
    zc, pnz, z1, z2 = reduce_groups(val, pa, lo, n, offs, m)
    for q in range(n):
        tval[lo + q] = 0.0
    for j in range(m):
        q = offs[j]
        x = val[pa + j]
        t = tval[pa + j]
        if zc[q] == 0:
            tval[lo + q] += t * pnz[q] / x
        elif zc[q] == 1 and x == 0.0:
            tval[lo + q] += t * pnz[q]


def prod_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    """Tangent of prod_backward: tadj_j += tg * P_-j + g * dP_-j, with P_-j (the product of
    the other entries of j's group) and its derivative along the tangents from prefix and
    suffix products carried as dual numbers: no division, so exact with zeros and without
    cancellation between huge and tiny entries (a sum of t_k / x_k minus t_j / x_j loses the
    small terms).  Zero tangents and adjoints are symbolic zeros, as in the other sweeps."""
    offs = reduce_offsets(ipool, p)
    m = offs.shape[0]
    run = np.ones(n)
    drun = np.zeros(n)
    pre = np.empty(m)
    dpre = np.empty(m)
    for j in range(m):
        q = offs[j]
        pre[j] = run[q]
        dpre[j] = drun[q]
        x = val[pa + j]
        t = tval[pa + j]
        drun[q] = (drun[q] * x if drun[q] != 0.0 else 0.0) + (run[q] * t if t != 0.0 else 0.0)
        run[q] *= x
    for q in range(n):
        run[q] = 1.0
        drun[q] = 0.0
    state[ra] |= 1
    for j in range(m - 1, -1, -1):
        q = offs[j]
        pj = pre[j] * run[q]
        dpj = (dpre[j] * run[q] if dpre[j] != 0.0 else 0.0) + (
            pre[j] * drun[q] if drun[q] != 0.0 else 0.0
        )
        g = adj[lo + q]
        tgq = tadj[lo + q]
        tadj[pa + j] += (tgq * pj if tgq != 0.0 else 0.0) + (g * dpj if g != 0.0 else 0.0)
        x = val[pa + j]
        t = tval[pa + j]
        drun[q] = (drun[q] * x if drun[q] != 0.0 else 0.0) + (run[q] * t if t != 0.0 else 0.0)
        run[q] *= x


def _exclusive_products(rows, r, a):
    """P[j] = product of the other entries of j's group, as a differentiable Tensor (built
    from a masked product of repeated rows, so it is exact at zeros, at every order)."""
    O = rows.ops
    in_shape, offs = rows.reduce_offsets(r)
    size = offs.size
    nout = max(int(np.prod(rows.shape(r), dtype=np.int64)), 1)
    m = size // nout if nout else 0
    order = np.argsort(offs, kind="stable")
    grouped = O.gather_flat(a, order, (nout, m))
    rep = O.broadcast_to(O.reshape(grouped, (nout, 1, m)), (nout, m, m))
    mask = np.broadcast_to(np.eye(m, dtype=bool), (nout, m, m))
    excl = O.prod(O.where(mask, 1.0, rep), axis=2)  # (nout, m)
    inverse = np.empty(size, np.int64)
    inverse[order] = np.arange(size)
    return O.gather_flat(excl, inverse, in_shape), offs, in_shape


def prod_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    excl, offs, in_shape = _exclusive_products(rows, r, rows.tensor(ra))
    return [(ra, rows.ops.gather_flat(g, offs, in_shape) * excl)]


def prod_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    if ta is None:
        return None
    excl, offs, _ = _exclusive_products(rows, r, rows.tensor(ra))
    return rows.ops.scatter_add(ta * excl, offs, rows.shape(r))


def extreme_into(A, D, lo, n, pa, p, ipool, larger):
    """The maximum (``larger``) or minimum of each reduced group into D; NaN propagates."""
    offs = reduce_offsets(ipool, p)
    seen = np.zeros(n, np.bool_)
    for j in range(offs.shape[0]):
        q = offs[j]
        x = A[pa + j]
        if not seen[q]:
            seen[q] = True
            D[lo + q] = x
            continue
        cur = D[lo + q]
        if cur == cur and (x != x or (x > cur if larger else x < cur)):
            D[lo + q] = x


def amax_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    extreme_into(A, D, lo, n, pa, p, ipool, TRUE)


def amin_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    extreme_into(A, D, lo, n, pa, p, ipool, FALSE)


def extreme_weights(V, pa, lo, n, offs):
    """Each entry's share of its group's gradient: ties split it evenly; a NaN extreme is the
    group's NaN entries' (as PyTorch's max sends it to the NaN: a zero gradient would look
    like an answer)."""
    m = offs.shape[0]
    cnt = np.zeros(n)
    for j in range(m):
        x = V[pa + j]
        e = V[lo + offs[j]]
        if x == e or (x != x and e != e):
            cnt[offs[j]] += 1.0
    w = np.zeros(m)
    for j in range(m):
        x = V[pa + j]
        e = V[lo + offs[j]]
        if x == e or (x != x and e != e):
            w[j] = 1.0 / cnt[offs[j]]
    return w


def extreme_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(V, pa, lo, n, offs)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + j] += G[lo + offs[j]] * w[j]
    return 0


def extreme_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(val, pa, lo, n, offs)
    for q in range(n):
        tval[lo + q] = 0.0
    for j in range(offs.shape[0]):
        tval[lo + offs[j]] += tval[pa + j] * w[j]


def extreme_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(val, pa, lo, n, offs)
    if n == 1:  # to one entry: each lane's sum in a register (a store per entry costs ~10x)
        for ln in range(tvals.shape[0]):
            s = 0.0
            for j in range(offs.shape[0]):
                s += tvals[ln, pa + j] * w[j]
            tvals[ln, lo] = s
        return
    for ln in range(tvals.shape[0]):
        for q in range(n):
            tvals[ln, lo + q] = 0.0
        for j in range(offs.shape[0]):
            tvals[ln, lo + offs[j]] += tvals[ln, pa + j] * w[j]


def extreme_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(val, pa, lo, n, offs)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]] * w[j]


def _extreme_weights(rows, r):
    ra, _ = rows.operands(r)
    in_shape, offs = rows.reduce_offsets(r)
    rows.guard_extremes(ra, r, offs, in_shape)
    av = rows.value(ra)
    ov = rows.value(r)
    hit = ((av == ov[offs]) | (np.isnan(av) & np.isnan(ov[offs]))).astype(np.float64)
    count = np.zeros(ov.size)
    np.add.at(count, offs, hit)
    w = hit / np.where(count[offs] > 0, count[offs], 1.0)
    return rows.const(w.reshape(in_shape)), offs, in_shape


def extreme_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    w, offs, in_shape = _extreme_weights(rows, r)
    return [(ra, rows.ops.gather_flat(g, offs, in_shape) * w)]


def extreme_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    if ta is None:
        return None
    w, offs, _ = _extreme_weights(rows, r)
    return rows.ops.scatter_add(ta * w, offs, rows.shape(r))
