"""Structural ops: reductions, shape, indexing and linear algebra, each declared once.

Kernels are plain functions; the generator copies their source into the generated kernel
module (so Numba's cache, keyed on that file, sees them) and calls them from every sweep.
Argument conventions (see ``decl.Structural``):

    forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool)
    backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)

``lo``/``n``: the row's value offset and size; ``pa``/``pb``: the operands' offsets; ``p``:
the start of the row's integer parameters in ``ipool``.  ``kind`` is 0 in a plain backward
(a large matmul may hand itself to NumPy's BLAS) and 1 inside higher-order sweeps.

The Tensor-level rules ``vjp(rows, r, g)`` and ``jvp(rows, r, tangent)`` receive ``rows``, a
view of the tape with differentiable ops (``rows.ops``); see ``autograd/rows.py``.
"""

import math

import numpy as np

from .decl import BadParams, Structural

HIT_MATMUL = 4  # status: a large matmul for NumPy's BLAS (kept equal in the sweeps)
SMALL_MATMUL = 1 << 16


# ---- helpers the kernels call ----------------------------------------------------------------------


def strided_offsets(ipool, p, ndim, base):
    """Flat offsets base + sum(idx[d] * stride[d]) for every multi-index idx (C order) of the
    shape ipool[p:p+ndim] with strides ipool[p+ndim:p+2*ndim]."""
    n = 1
    for d in range(ndim):
        n *= ipool[p + d]
    out = np.empty(n, np.int64)
    if n == 0:
        return out
    idx = np.zeros(max(ndim, 1), np.int64)
    cur = base
    for j in range(n):
        out[j] = cur
        d = ndim - 1
        while d >= 0:
            idx[d] += 1
            cur += ipool[p + ndim + d]
            if idx[d] < ipool[p + d]:
                break
            cur -= ipool[p + ndim + d] * idx[d]
            idx[d] = 0
            d -= 1
    return out


def pairwise_sum(val, s, n):
    """NumPy's pairwise summation of val[s:s+n] (same blocking, same order)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += val[s + i]
        return res
    if n <= 128:
        r0 = val[s]
        r1 = val[s + 1]
        r2 = val[s + 2]
        r3 = val[s + 3]
        r4 = val[s + 4]
        r5 = val[s + 5]
        r6 = val[s + 6]
        r7 = val[s + 7]
        i = 8
        while i < n - (n % 8):
            r0 += val[s + i]
            r1 += val[s + i + 1]
            r2 += val[s + i + 2]
            r3 += val[s + i + 3]
            r4 += val[s + i + 4]
            r5 += val[s + i + 5]
            r6 += val[s + i + 6]
            r7 += val[s + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += val[s + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(val, s, n2) + pairwise_sum(val, s + n2, n - n2)


def reduce_groups(V, pa, lo, n, offs, m):
    """Per output q of a product reduction: zero count, product of the non-zeros, first and
    second zero position, sum of t/x over non-zeros is left to the caller."""
    zc = np.zeros(n, np.int64)
    pnz = np.ones(n)
    z1 = np.full(n, -1, np.int64)
    z2 = np.full(n, -1, np.int64)
    for j in range(m):
        q = offs[j]
        x = V[pa + j]
        if x == 0.0:
            if zc[q] == 0:
                z1[q] = j
            elif zc[q] == 1:
                z2[q] = j
            zc[q] += 1
        else:
            pnz[q] *= x
    return zc, pnz, z1, z2


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


# ---- reductions: ndim, in_shape[ndim], out_strides[ndim] (0 on reduced axes) -----------------------


def sum_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    # NumPy adds pairwise over the innermost reduced run: follow it, so a replay matches
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    m = offs.shape[0]
    run = 1
    d = nd - 1
    while d >= 0:
        s = ipool[p + 1 + d]
        if s != 1:
            if ipool[p + 1 + nd + d] != 0:
                break
            run *= s
        d -= 1
    for j in range(n):
        D[lo + j] = 0.0
    if run > 0:
        for j in range(0, m, run):
            D[lo + offs[j]] += pairwise_sum(A, pa + j, run)


def sum_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + j] += G[lo + offs[j]]
    return 0


def sum_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    in_shape, offs = rows.reduce_offsets(r)
    return [(ra, rows.ops.gather_flat(g, offs, in_shape))]


def sum_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    if ta is None:
        return None
    _, offs = rows.reduce_offsets(r)
    return rows.ops.scatter_add(ta, offs, rows.shape(r))


def sum_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    offs = strided_offsets(ipool, p + 1, ipool[p], 0)
    for ln in range(tvals.shape[0]):
        for q in range(n):
            tvals[ln, lo + q] = 0.0
        for j in range(offs.shape[0]):
            tvals[ln, lo + offs[j]] += tvals[ln, pa + j]


def sum_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = strided_offsets(ipool, p + 1, ipool[p], 0)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]]


def prod_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    for j in range(n):
        D[lo + j] = 1.0
    for j in range(offs.shape[0]):
        D[lo + offs[j]] *= A[pa + j]


def prod_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    # exact with zeros: d out / d x_j is the product of the other entries
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
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
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
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
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
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


def amax_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    seen = np.zeros(n, np.bool_)
    for j in range(offs.shape[0]):  # NaN propagates
        q = offs[j]
        x = A[pa + j]
        if not seen[q]:
            seen[q] = True
            D[lo + q] = x
            continue
        cur = D[lo + q]
        if cur == cur and (x != x or x > cur):
            D[lo + q] = x


def amin_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    seen = np.zeros(n, np.bool_)
    for j in range(offs.shape[0]):  # NaN propagates
        q = offs[j]
        x = A[pa + j]
        if not seen[q]:
            seen[q] = True
            D[lo + q] = x
            continue
        cur = D[lo + q]
        if cur == cur and (x != x or x < cur):
            D[lo + q] = x


def extreme_weights(V, pa, lo, n, offs):
    """Each entry's share of its group's gradient: ties split it evenly."""
    m = offs.shape[0]
    cnt = np.zeros(n)
    for j in range(m):
        if V[pa + j] == V[lo + offs[j]]:
            cnt[offs[j]] += 1.0
    w = np.zeros(m)
    for j in range(m):
        q = offs[j]
        if V[pa + j] == V[lo + q]:
            w[j] = 1.0 / cnt[q]
    return w


def extreme_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    w = extreme_weights(V, pa, lo, n, offs)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + j] += G[lo + offs[j]] * w[j]
    return 0


def extreme_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    nd = ipool[p]
    offs = strided_offsets(ipool, p + 1, nd, 0)
    w = extreme_weights(val, pa, lo, n, offs)
    for q in range(n):
        tval[lo + q] = 0.0
    for j in range(offs.shape[0]):
        tval[lo + offs[j]] += tval[pa + j] * w[j]


def extreme_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    offs = strided_offsets(ipool, p + 1, ipool[p], 0)
    w = extreme_weights(val, pa, lo, n, offs)
    for ln in range(tvals.shape[0]):
        for q in range(n):
            tvals[ln, lo + q] = 0.0
        for j in range(offs.shape[0]):
            tvals[ln, lo + offs[j]] += tvals[ln, pa + j] * w[j]


def extreme_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = strided_offsets(ipool, p + 1, ipool[p], 0)
    w = extreme_weights(val, pa, lo, n, offs)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]] * w[j]


def _extreme_weights(rows, r):
    ra, _ = rows.operands(r)
    in_shape, offs = rows.reduce_offsets(r)
    av = rows.value(ra)
    ov = rows.value(r)
    hit = (av == ov[offs]).astype(np.float64)
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


# ---- elementwise choice: ipool[p] is the row of the 0/1 condition -----------------------------------


def where_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    cond = voff[ipool[p]]
    for j in range(n):
        D[lo + j] = A[pa + j] if V[cond + j] != 0.0 else B[pb + j]


def where_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    cond = voff[ipool[p]]
    ga = rg[ra] != 0
    gb = rg[rb] != 0
    if ga:
        state[ra] |= 1
    if gb:
        state[rb] |= 1
    for j in range(n):
        if V[cond + j] != 0.0:
            if ga:
                D[pa + j] += G[lo + j]
        elif gb:
            D[pb + j] += G[lo + j]
    return 0


def _where_cond(rows, r, shape):
    return rows.value(rows.ints(r, 0, 1)[0]).reshape(shape) != 0.0


def where_vjp(rows, r, g):
    ra, rb = rows.operands(r)
    cond = _where_cond(rows, r, g.shape)
    O = rows.ops
    return [(ra, O.where(cond, g, 0.0)), (rb, O.where(cond, 0.0, g))]


def where_jvp(rows, r, tangent):
    ra, rb = rows.operands(r)
    ta, tb = tangent(ra), tangent(rb)
    if ta is None and tb is None:
        return None
    shape = rows.shape(r)
    return rows.ops.where(
        _where_cond(rows, r, shape), 0.0 if ta is None else ta, 0.0 if tb is None else tb
    )


# ---- indexing: m, idx[m] (flat indices into the operand, or into the output for SCATTER) -------------


def gather_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    for j in range(n):
        D[lo + j] = A[pa + ipool[p + 1 + j]]


def gather_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    state[ra] |= 1
    for j in range(n):  # repeated indices accumulate
        D[pa + ipool[p + 1 + j]] += G[lo + j]
    return 0


def _index(rows, r):
    m = rows.ints(r, 0, 1)[0]
    return np.asarray(rows.ints(r, 1, m), np.int64)


def gather_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.scatter_add(g, _index(rows, r), rows.shape(ra)))]


def gather_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    return None if ta is None else rows.ops.gather_flat(ta, _index(rows, r), rows.shape(r))


def scatter_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    m = ipool[p]
    for j in range(n):
        D[lo + j] = 0.0
    for j in range(m):
        D[lo + ipool[p + 1 + j]] += A[pa + j]


def scatter_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    m = ipool[p]
    state[ra] |= 1
    for j in range(m):
        D[pa + j] += G[lo + ipool[p + 1 + j]]
    return 0


def scatter_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    return [(ra, rows.ops.gather_flat(g, _index(rows, r), rows.shape(ra)))]


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


# ---- scans along one axis: outer, m, inner[, reverse] (element (o, k, i) at (o*m + k)*inner + i) -


def scan_offsets(ipool, p):
    """Offsets of a scan's elements, one row per lane (o, i), in order along the axis."""
    outer = ipool[p]
    m = ipool[p + 1]
    inner = ipool[p + 2]
    offs = np.empty((outer * inner, m), np.int64)
    for o in range(outer):
        for i in range(inner):
            for k in range(m):
                offs[o * inner + i, k] = (o * m + k) * inner + i
    return offs


def cumsum_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 0.0
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = offs[r, m - 1 - k if rev else k]
            s += A[pa + q]
            D[lo + q] = s


def cumsum_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    # the adjoint of a running sum is the running sum the other way
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    state[ra] |= 1
    for r in range(offs.shape[0]):
        s = 0.0
        for k in range(m):
            q = offs[r, k if rev else m - 1 - k]
            s += G[lo + q]
            D[pa + q] += s
    return 0


def cumsum_vjp(rows, r, g):
    ra, _ = rows.operands(r)
    outer, m, inner, rev = rows.ints(r, 0, 4)
    return [(ra, rows.ops.scan_sum(g, outer, m, inner, 1 - rev))]


def cumsum_jvp(rows, r, tangent):
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    return None if ta is None else rows.ops.scan_sum(ta, *rows.ints(r, 0, 4))


def cumprod_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    for r in range(offs.shape[0]):
        s = 1.0
        for k in range(offs.shape[1]):
            q = offs[r, k]
            s *= A[pa + q]
            D[lo + q] = s


def cumprod_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    # exact with zeros: d x_j = E_j R_j, E_j = prod_{i<j} x_i (the previous output) and
    # R_j = sum_{k>=j} g_k prod_{j<i<=k} x_i = g_j + x_{j+1} R_{j+1}; no division
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    state[ra] |= 1
    for r in range(offs.shape[0]):
        R = 0.0
        for k in range(m - 1, -1, -1):
            q = offs[r, k]
            R = G[lo + q] + (V[pa + offs[r, k + 1]] * R if k + 1 < m else 0.0)
            e = V[lo + offs[r, k - 1]] if k > 0 else 1.0
            D[pa + q] += e * R
    return 0


def cumprod_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    """t out_k = t out_{k-1} x_k + out_{k-1} t_k (exact with zeros)."""
    offs = scan_offsets(ipool, p)
    for r in range(offs.shape[0]):
        tp = 0.0
        e = 1.0
        for k in range(offs.shape[1]):
            q = offs[r, k]
            tp = tp * val[pa + q] + e * tval[pa + q]
            tval[lo + q] = tp
            e = val[lo + q]


def cumprod_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    """Tangent of cumprod_backward: t(E_j R_j) = tE_j R_j + E_j tR_j, with tE_j the tangent of
    the previous output and tR_j = tg_j + t_{j+1} R_{j+1} + x_{j+1} tR_{j+1}."""
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    state[ra] |= 1
    for r in range(offs.shape[0]):
        R = 0.0
        tR = 0.0
        for k in range(m - 1, -1, -1):
            q = offs[r, k]
            if k + 1 < m:
                q1 = offs[r, k + 1]
                tR = tadj[lo + q] + tval[pa + q1] * R + val[pa + q1] * tR
                R = adj[lo + q] + val[pa + q1] * R
            else:
                tR = tadj[lo + q]
                R = adj[lo + q]
            if k > 0:
                tadj[pa + q] += tval[lo + offs[r, k - 1]] * R + val[lo + offs[r, k - 1]] * tR
            else:
                tadj[pa + q] += tR


def _cumprod_parts(rows, r):
    """For the Tensor-level rules: x as (outer, m, inner), E (the exclusive running product)
    and Q[o, j, k, i] = prod_{j<l<=k} x_l for k >= j (0 below), all polynomials in x, so
    exact with zeros at every order."""
    O = rows.ops
    ra, _ = rows.operands(r)
    outer, m, inner = rows.ints(r, 0, 3)
    x = O.reshape(rows.tensor(ra), (outer, m, inner))
    shifted = O.concatenate(
        [rows.const(np.ones((outer, 1, inner))), O.getitem(x, (slice(None), slice(0, m - 1)))],
        axis=1,
    )
    E = O.scan_prod(shifted, outer, m, inner)
    jj = np.arange(m).reshape(1, m, 1, 1)
    kk = np.arange(m).reshape(1, 1, m, 1)
    full = (outer, m, m, inner)
    xb = O.broadcast_to(O.reshape(x, (outer, 1, m, inner)), full)
    picked = O.where(np.broadcast_to(kk > jj, full), xb, 1.0)
    Q = O.reshape(O.scan_prod(O.reshape(picked, (outer * m, m, inner)), outer * m, m, inner), full)
    Q = O.where(np.broadcast_to(kk >= jj, full), Q, 0.0)
    return ra, outer, m, inner, E, Q


def cumprod_vjp(rows, r, g):
    O = rows.ops
    ra, outer, m, inner, E, Q = _cumprod_parts(rows, r)
    G = O.reshape(g, (outer, 1, m, inner))
    R = O.sum(Q * G, axis=2)  # (outer, m, inner)
    return [(ra, O.reshape(E * R, rows.shape(ra)))]


def cumprod_jvp(rows, r, tangent):
    O = rows.ops
    ra, _ = rows.operands(r)
    ta = tangent(ra)
    if ta is None:
        return None
    _, outer, m, inner, E, Q = _cumprod_parts(rows, r)
    TE = O.reshape(O.reshape(ta, (outer, m, inner)) * E, (outer, m, 1, inner))
    return O.reshape(O.sum(Q * TE, axis=1), rows.shape(r))


# ---- linear algebra ---------------------------------------------------------------------------------
# MATMUL: batch, m, k, n, ta, tb: out (batch, m, n) = a @ b, where a is stored (batch, m, k), or
# (batch, k, m) when ta (read transposed, never copied), and b (batch, k, n), or (batch, n, k)
# when tb: so x @ w.T (a linear layer) records no transpose.


def matmul_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    nb = ipool[p]
    mm = ipool[p + 1]
    kk = ipool[p + 2]
    nn = ipool[p + 3]
    su, sq = (1, mm) if ipool[p + 4] else (kk, 1)  # strides of a over (row u, inner q)
    tq, tv = (1, kk) if ipool[p + 5] else (nn, 1)  # strides of b over (inner q, column v)
    if not acc:
        for j in range(n):
            D[lo + j] = 0.0
    for t in range(nb):
        a0 = pa + t * mm * kk
        b0 = pb + t * kk * nn
        c0 = lo + t * mm * nn
        for u in range(mm):
            for q in range(kk):
                x = A[a0 + u * su + q * sq]
                for v in range(nn):
                    D[c0 + u * nn + v] += x * B[b0 + q * tq + v * tv]


def matmul_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    nb = ipool[p]
    mm = ipool[p + 1]
    kk = ipool[p + 2]
    nn = ipool[p + 3]
    if kind == 0 and nb * mm * kk * nn > SMALL_MATMUL:
        return HIT_MATMUL  # the caller runs it through NumPy's BLAS
    su, sq = (1, mm) if ipool[p + 4] else (kk, 1)
    tq, tv = (1, kk) if ipool[p + 5] else (nn, 1)
    for t in range(nb):
        a0 = pa + t * mm * kk
        b0 = pb + t * kk * nn
        g0 = lo + t * mm * nn
        if rg[ra] != 0:  # dA = G @ B^T
            for u in range(mm):
                for q in range(kk):
                    acc = 0.0
                    for v in range(nn):
                        acc += G[g0 + u * nn + v] * B[b0 + q * tq + v * tv]
                    D[a0 + u * su + q * sq] += acc
        if rg[rb] != 0:  # dB = A^T @ G
            for u in range(mm):
                for q in range(kk):
                    x = A[a0 + u * su + q * sq]
                    for v in range(nn):
                        D[b0 + q * tq + v * tv] += x * G[g0 + u * nn + v]
    if rg[ra] != 0:
        state[ra] |= 1
    if rg[rb] != 0:
        state[rb] |= 1
    return 0


def matmul_layout(ipool, p):
    """(batch, m, k, n, a's strides over (row, inner), b's over (inner, column))."""
    mm = ipool[p + 1]
    kk = ipool[p + 2]
    nn = ipool[p + 3]
    su, sq = (1, mm) if ipool[p + 4] else (kk, 1)
    tq, tv = (1, kk) if ipool[p + 5] else (nn, 1)
    return ipool[p], mm, kk, nn, su, sq, tq, tv


def lane_matmul(S, s0, sr, sc, V, v0, vr, vc, D, d0, dr, dc, m, k, n, left):
    """For every lane ln: D[ln] block (m x n) += V[ln] block @ S block (``left``) or S block @
    V[ln] block, blocks given by offset, row and column strides (S shared by all lanes).  The
    lane operand is copied lane-minor first, so the innermost loop runs over lanes: contiguous,
    free of reductions, and a matrix-vector product becomes a matrix-matrix one."""
    nl = V.shape[0]
    r0, c0 = (m, k) if left else (k, n)
    W = np.empty((r0, c0, nl))
    for i in range(r0):
        for j in range(c0):
            for ln in range(nl):
                W[i, j, ln] = V[ln, v0 + i * vr + j * vc]
    R = np.zeros((m, n, nl))
    for i in range(m):
        for q in range(k):
            if left:
                for j in range(n):
                    y = S[s0 + q * sr + j * sc]
                    for ln in range(nl):
                        R[i, j, ln] += W[i, q, ln] * y
            else:
                x = S[s0 + i * sr + q * sc]
                for j in range(n):
                    for ln in range(nl):
                        R[i, j, ln] += x * W[q, j, ln]
    for ln in range(nl):
        for i in range(m):
            for j in range(n):
                D[ln, d0 + i * dr + j * dc] += R[i, j, ln]


def matmul_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    """Tangents of every lane: tA @ B + A @ tB, as lane-blocked products."""
    nb, mm, kk, nn, su, sq, tq, tv = matmul_layout(ipool, p)
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = 0.0
    for t in range(nb):
        a0 = pa + t * mm * kk
        b0 = pb + t * kk * nn
        c0 = lo + t * mm * nn
        if flag[ra] != 0:
            lane_matmul(val, b0, tq, tv, tvals, a0, su, sq, tvals, c0, nn, 1, mm, kk, nn, True)
        if flag[rb] != 0:
            lane_matmul(val, a0, su, sq, tvals, b0, tq, tv, tvals, c0, nn, 1, mm, kk, nn, False)


def matmul_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    """Tangents of the operand adjoints for every lane: tG @ B^T + G @ tB^T for a and
    A^T @ tG + tA^T @ G for b."""
    nb, mm, kk, nn, su, sq, tq, tv = matmul_layout(ipool, p)
    for t in range(nb):
        a0 = pa + t * mm * kk
        b0 = pb + t * kk * nn
        g0 = lo + t * mm * nn
        if rg[ra] != 0:
            lane_matmul(val, b0, tv, tq, tadjs, g0, nn, 1, tadjs, a0, su, sq, mm, nn, kk, True)
            if flag[rb] != 0:
                lane_matmul(adj, g0, nn, 1, tvals, b0, tv, tq, tadjs, a0, su, sq, mm, nn, kk, False)
        if rg[rb] != 0:
            lane_matmul(val, a0, sq, su, tadjs, g0, nn, 1, tadjs, b0, tq, tv, kk, mm, nn, False)
            if flag[ra] != 0:
                lane_matmul(adj, g0, nn, 1, tvals, a0, sq, su, tadjs, b0, tq, tv, kk, mm, nn, True)


def _matmul_operands(rows, r, a, b):
    """Operands as (batch, m, k) and (batch, k, n) Tensors, however they are stored."""
    O = rows.ops
    nb, m, k, n, ta, tb = rows.ints(r, 0, 6)
    A = O.swapaxes(O.reshape(a, (nb, k, m)), -1, -2) if ta else O.reshape(a, (nb, m, k))
    B = O.swapaxes(O.reshape(b, (nb, n, k)), -1, -2) if tb else O.reshape(b, (nb, k, n))
    return A, B


def _stored(rows, r, x, transposed, shape):
    """A (batch, p, q) gradient back in its operand's storage layout."""
    O = rows.ops
    return O.reshape(O.swapaxes(x, -1, -2) if transposed else x, shape)


def matmul_vjp(rows, r, g):
    O = rows.ops
    ra, rb = rows.operands(r)
    nb, m, k, n, ta, tb = rows.ints(r, 0, 6)
    A, B = _matmul_operands(rows, r, rows.tensor(ra), rows.tensor(rb))
    G = O.reshape(g, (nb, m, n))
    out = []
    if rows.rg(ra):
        out.append((ra, _stored(rows, r, O.matmul(G, O.swapaxes(B, -1, -2)), ta, rows.shape(ra))))
    if rows.rg(rb):
        out.append((rb, _stored(rows, r, O.matmul(O.swapaxes(A, -1, -2), G), tb, rows.shape(rb))))
    return out


def matmul_jvp(rows, r, tangent):
    O = rows.ops
    ra, rb = rows.operands(r)
    ta, tb = tangent(ra), tangent(rb)
    A, B = _matmul_operands(rows, r, rows.tensor(ra), rows.tensor(rb))
    out = None
    if ta is not None:
        out = O.matmul(_matmul_operands(rows, r, ta, rows.tensor(rb))[0], B)
    if tb is not None:
        term = O.matmul(A, _matmul_operands(rows, r, rows.tensor(ra), tb)[1])
        out = term if out is None else out + term
    return None if out is None else O.reshape(out, rows.shape(r))


S = Structural

# ---- trace files: the parameters a row may hold --------------------------------------------
# Each check reads a row's parameters (ipool from p on) as a trace file gives them and raises
# BadParams unless they fit the sizes of the row (n) and of its operands (na, nb); ``size``
# holds every row's size.  A replay then never reads outside its arrays.

MAX_NDIM = 64


def _ints(ipool, p, count):
    if p < 1 or count < 0 or p + count > ipool.size:
        raise BadParams(f"points at ipool[{p}:{p + count}], outside the pool of {ipool.size}")
    return [int(v) for v in ipool[p : p + count]]


def where_check(r, p, ipool, fpool, size, na, nb, n):
    (c,) = _ints(ipool, p, 1)
    if not 0 <= c < r or size[c] != n:
        raise BadParams(f"names condition row {c}; it must be an earlier row of size {n}")


def _strided_check(view):
    def check(r, p, ipool, fpool, size, na, nb, n):
        (nd,) = _ints(ipool, p, 1)
        if not 0 <= nd <= MAX_NDIM:
            raise BadParams(f"has ndim {nd} (at most {MAX_NDIM})")
        vals = _ints(ipool, p + 1, 2 * nd + view)
        shape, strides = vals[:nd], vals[nd : 2 * nd]
        base = vals[2 * nd] if view else 0
        if any(s < 0 for s in shape):
            raise BadParams(f"has a negative shape {shape}")
        count = math.prod(shape)
        if count != (n if view else na):
            raise BadParams(f"shape {shape} holds {count} values, not {n if view else na}")
        if count:
            lo = base + sum(min(0, (s - 1) * st) for s, st in zip(shape, strides))
            hi = base + sum(max(0, (s - 1) * st) for s, st in zip(shape, strides))
            limit = na if view else n
            if lo < 0 or hi >= limit:
                raise BadParams(f"reaches offsets {lo}..{hi} of an array of {limit}")

    return check


view_check, reduce_check = _strided_check(True), _strided_check(False)


def matmul_check(r, p, ipool, fpool, size, na, nb, n):
    nb_, m, k, nn, ta, tb = _ints(ipool, p, 6)
    if (
        min(nb_, m, k, nn) < 0
        or na != nb_ * m * k
        or nb != nb_ * k * nn
        or n != nb_ * m * nn
        or ta not in (0, 1)
        or tb not in (0, 1)
    ):
        raise BadParams(
            f"matmul sizes {nb_}x{m}x{k}x{nn} (transposed {ta}, {tb}) disagree with the operands"
        )


def _scan_check(flagged):
    def check(r, p, ipool, fpool, size, na, nb, n):
        outer, m, inner = _ints(ipool, p, 3)
        if (
            min(outer, m, inner) < 0
            or n != outer * m * inner
            or na != n
            or (flagged and _ints(ipool, p + 3, 1)[0] not in (0, 1))
        ):
            raise BadParams(f"scan sizes {outer}x{m}x{inner} disagree with the operand")

    return check


cumsum_check, cumprod_check = _scan_check(True), _scan_check(False)


def concat_check(r, p, ipool, fpool, size, na, nb, n):
    outer, inner, k = _ints(ipool, p, 3)
    if min(outer, inner, k) < 0:
        raise BadParams("has a negative count")
    rows_lens = _ints(ipool, p + 3, 2 * k)
    parts, lens = rows_lens[:k], rows_lens[k:]
    if (
        any(not 0 <= q < r for q in parts)
        or any(x < 0 for x in lens)
        or any(size[q] != outer * x * inner for q, x in zip(parts, lens))
        or n != outer * inner * sum(lens)
    ):
        raise BadParams("concatenates rows or sizes that do not fit the row")


def _index_check(name):
    def check(r, p, ipool, fpool, size, na, nb, n):
        (m,) = _ints(ipool, p, 1)
        if m < 0:
            raise BadParams(f"has a negative count {m}")
        idx = np.asarray(_ints(ipool, p + 1, m), np.int64)
        if name == "gather":
            ok = m == n and (not m or (idx.min() >= 0 and idx.max() < na))
        elif name == "scatter":
            ok = na == m and (not m or (idx.min() >= 0 and idx.max() < n))
        else:
            ok = na == n and nb == m and (not m or (idx.min() >= 0 and idx.max() < n))
        if not ok:
            raise BadParams(f"{name} indices or sizes are out of range")

    return check


gather_check, scatter_check, setitem_check = map(_index_check, ("gather", "scatter", "setitem"))


def no_params_check(r, p, ipool, fpool, size, na, nb, n):
    """An op without parameters to check (its operand sizes are checked as elementwise)."""


OPS = (
    S(
        "WHERE",
        where_forward,
        where_backward,
        where_vjp,
        where_jvp,
        numpy=("where",),
        operand_adjoints_only=True,
        arity=2,
        same_size=True,
        check=where_check,
    ),
    S(
        "VIEW",
        view_forward,
        view_backward,
        view_vjp,
        view_jvp,
        tangent_lanes=view_tangent_lanes,
        backward_tangent_lanes=view_backward_tangent_lanes,
        helpers=(strided_offsets,),
        numpy=("broadcast_to", "transpose", "__getitem__"),
        operand_adjoints_only=True,
        check=view_check,
    ),
    S(
        "RESHAPE",
        reshape_forward,
        reshape_backward,
        reshape_vjp,
        reshape_jvp,
        tangent_lanes=reshape_tangent_lanes,
        backward_tangent_lanes=reshape_backward_tangent_lanes,
        numpy=("reshape", "ravel", "squeeze", "expand_dims"),
        operand_adjoints_only=True,
        same_size=True,
        check=no_params_check,
    ),
    S(
        "SUM",
        sum_forward,
        sum_backward,
        sum_vjp,
        sum_jvp,
        tangent_lanes=sum_tangent_lanes,
        backward_tangent_lanes=sum_backward_tangent_lanes,
        helpers=(pairwise_sum,),
        numpy=("sum",),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "PROD",
        prod_forward,
        prod_backward,
        prod_vjp,
        prod_jvp,
        tangent=prod_tangent,
        backward_tangent=prod_backward_tangent,
        helpers=(reduce_groups,),
        numpy=("prod",),
        domain=(0.3, 2.0),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "AMAX",
        amax_forward,
        extreme_backward,
        extreme_vjp,
        extreme_jvp,
        tangent=extreme_tangent,
        tangent_lanes=extreme_tangent_lanes,
        backward_tangent_lanes=extreme_backward_tangent_lanes,
        helpers=(extreme_weights,),
        numpy=("max", "amax"),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "AMIN",
        amin_forward,
        extreme_backward,
        extreme_vjp,
        extreme_jvp,
        tangent=extreme_tangent,
        tangent_lanes=extreme_tangent_lanes,
        backward_tangent_lanes=extreme_backward_tangent_lanes,
        numpy=("min", "amin"),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "MATMUL",
        matmul_forward,
        matmul_backward,
        matmul_vjp,
        matmul_jvp,
        tangent="bilinear",
        backward_tangent="bilinear",
        tangent_lanes=matmul_tangent_lanes,
        backward_tangent_lanes=matmul_backward_tangent_lanes,
        helpers=(matmul_layout, lane_matmul),
        graph="MmBackward0",
        numpy=("matmul", "dot", "__matmul__"),
        operand_adjoints_only=True,
        arity=2,
        check=matmul_check,
    ),
    S(
        "CONCAT",
        concat_forward,
        concat_backward,
        concat_vjp,
        concat_jvp,
        graph="CatBackward0",
        operands=concat_operands,
        numpy=("concatenate", "stack"),
        arity=0,
        check=concat_check,
    ),
    S(
        "GATHER",
        gather_forward,
        gather_backward,
        gather_vjp,
        gather_jvp,
        graph="IndexBackward0",
        numpy=("__getitem__",),
        operand_adjoints_only=True,
        check=gather_check,
    ),
    S(
        "SETITEM",
        setitem_forward,
        setitem_backward,
        setitem_vjp,
        setitem_jvp,
        graph="IndexPutBackward0",
        numpy=("__setitem__",),
        operand_adjoints_only=True,
        arity=2,
        check=setitem_check,
    ),
    S(
        "SCATTER",
        scatter_forward,
        scatter_backward,
        scatter_vjp,
        scatter_jvp,
        operand_adjoints_only=True,
        check=scatter_check,
    ),
    S(
        "CUMSUM",
        cumsum_forward,
        cumsum_backward,
        cumsum_vjp,
        cumsum_jvp,
        helpers=(scan_offsets,),
        numpy=("cumsum",),
        operand_adjoints_only=True,
        check=cumsum_check,
    ),
    S(
        "CUMPROD",
        cumprod_forward,
        cumprod_backward,
        cumprod_vjp,
        cumprod_jvp,
        tangent=cumprod_tangent,
        backward_tangent=cumprod_backward_tangent,
        numpy=("cumprod",),
        operand_adjoints_only=True,
        check=cumprod_check,
    ),
)
