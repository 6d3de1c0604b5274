"""Scans along one axis: cumsum and cumprod."""

import numpy as np

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
