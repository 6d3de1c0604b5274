"""Linear algebra: matmul (operands read in their stored layout, transposed or not)."""

import numpy as np

from .helpers import FALSE, HIT_MATMUL, ONE, SMALL_MATMUL, TRUE

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
    for r in (ra, rb):  # a first contribution: the adjoint is zeroed here (see the sweeps)
        if rg[r] != 0 and (state[r] & 1) == 0:
            for j in range(voff[r], voff[r + 1]):
                D[j] = 0.0
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
    i = 0
    while not left and i + 4 <= m:  # S @ V: four rows of S share each load of V's lanes
        for q in range(k):  # (the same order of additions per entry as one row at a time)
            x0 = S[s0 + i * sr + q * sc]
            x1 = S[s0 + (i + 1) * sr + q * sc]
            x2 = S[s0 + (i + 2) * sr + q * sc]
            x3 = S[s0 + (i + 3) * sr + q * sc]
            for j in range(n):
                for ln in range(nl):
                    w = W[q, j, ln]
                    R[i, j, ln] += x0 * w
                    R[i + 1, j, ln] += x1 * w
                    R[i + 2, j, ln] += x2 * w
                    R[i + 3, j, ln] += x3 * w
        i += 4
    while i < m:
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
        i += 1
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
            lane_matmul(val, b0, tq, tv, tvals, a0, su, sq, tvals, c0, nn, ONE, mm, kk, nn, TRUE)
        if flag[rb] != 0:
            lane_matmul(val, a0, su, sq, tvals, b0, tq, tv, tvals, c0, nn, ONE, mm, kk, nn, FALSE)


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
            lane_matmul(val, b0, tv, tq, tadjs, g0, nn, ONE, tadjs, a0, su, sq, mm, nn, kk, TRUE)
            if flag[rb] != 0:
                lane_matmul(
                    adj, g0, nn, ONE, tvals, b0, tv, tq, tadjs, a0, su, sq, mm, nn, kk, FALSE
                )
        if rg[rb] != 0:
            lane_matmul(val, a0, sq, su, tadjs, g0, nn, ONE, tadjs, b0, tq, tv, kk, mm, nn, FALSE)
            if flag[ra] != 0:
                lane_matmul(
                    adj, g0, nn, ONE, tvals, a0, sq, su, tadjs, b0, tq, tv, kk, mm, nn, TRUE
                )


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
