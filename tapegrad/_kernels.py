"""Compiled tape interpreters: every ``@njit`` function of tapegrad lives here.

Numba's on-disk cache is keyed on *this file's* content only, so op codes are written here as
literals (``if o == 27:  # MUL``) rather than imported.  ``KERNEL_OPS`` lists the op names by
code; ``_ops.py`` checks at import that its table agrees with it and that every op has a
branch below (see ``kernel_branches``), so the Python side and the kernels cannot drift apart.

Tape layout (one row per value, row index == slot):
  code[i]  int64   op | (a + 1) << 8 | (b + 1) << 36: the op code (position in KERNEL_OPS) and
                   the operand rows a, b (-1 when unused), packed so recording writes one word
  ip[i]    int64   start of this op's integer parameters in ``ipool``
  fp[i]    float64 scalar parameter (constant, exponent, slope, clip low)
  voff[i]  int64   offset of the value in ``val``/``adj``; size is voff[i+1] - voff[i]
  rg[i]    int8    1 when the row needs a gradient
  state[i] int8    bit 1: reached by the current sweep; bit 2: freed by an earlier backward
"""
import numpy as np
from numba import njit

KERNEL_OPS = (
    "LEAF", "CONST", "FREED", "CUSTOM",
    "NEG", "EXP", "LOG", "LOG1P", "EXPM1", "SQRT", "SIN", "COS", "TAN", "TANH",
    "SIGMOID", "RELU", "ABS", "LEAKY_RELU",
    "ADDS", "MULS", "RSUBS", "RDIVS", "POWS", "RPOWS", "CLIP",
    "ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "MINIMUM", "WHERE",
    "VIEW", "RESHAPE", "SUM", "PROD", "AMAX", "AMIN", "MATMUL", "CONCAT", "GATHER",
    "SETITEM", "GUARD", "SCATTER",
)

# Sweep results: (status, row)
DONE = 0          # swept everything
HIT_FREED = 1     # reached a row whose graph was freed by an earlier backward
HIT_CUSTOM = 2    # reached a custom Function: Python runs it, then resumes below it
BAD_OP = 3        # unknown op code (never silently skipped)
HIT_MATMUL = 4    # a large matmul: Python does it with numpy's BLAS, then resumes below it

# Matmuls up to this many multiply-adds run as loops in the kernel; larger ones go to numpy.
# The kernel never calls BLAS: Numba's np.dot uses scipy's OpenBLAS, whose thread pool spins
# against numpy's when forward (numpy) and backward alternate (8x slower on 2 cores).
SMALL_MATMUL = 1 << 16


@njit(cache=True, error_model="numpy")  # IEEE inf/nan, never ZeroDivisionError
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


@njit(cache=True, error_model="numpy")  # IEEE inf/nan, never ZeroDivisionError
def backward_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, bottom):
    """Reverse sweep over rows top..bottom, accumulating adjoints of reached rows.

    Stops early (returning the row) at a custom op or a freed row so Python can act."""
    i = top
    while i >= bottom:
        s = state[i]
        if (s & 1) == 0:
            i -= 1
            continue
        w = code[i]
        o = w & 255
        if o <= 1:  # LEAF, CONST: nothing below them
            i -= 1
            continue
        if (s & 2) != 0 or o == 2:  # freed row, FREED placeholder
            return HIT_FREED, i
        if o == 3:  # CUSTOM
            return HIT_CUSTOM, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # elementwise loops index with unsigned offsets: Numba then drops the negative-index
        # wraparound checks, which made these loops ~3x slower on arrays
        ulo = np.uint64(lo)
        un = np.uint64(n)
        if o <= 24:
            # ---- unary elementwise: adj[a] += adj[out] * d out / d a ----
            if rg[ra] == 0:
                i -= 1
                continue
            state[ra] |= 1
            upa = np.uint64(voff[ra])
            c = fp[i]
            if o == 4:  # NEG
                for j in range(un):
                    adj[upa + j] -= adj[ulo + j]
            elif o == 5:  # EXP
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * val[ulo + j]
            elif o == 6:  # LOG
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] / val[upa + j]
            elif o == 7:  # LOG1P
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] / (1.0 + val[upa + j])
            elif o == 8:  # EXPM1
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * (val[ulo + j] + 1.0)
            elif o == 9:  # SQRT
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * 0.5 / val[ulo + j]
            elif o == 10:  # SIN
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * np.cos(val[upa + j])
            elif o == 11:  # COS
                for j in range(un):
                    adj[upa + j] -= adj[ulo + j] * np.sin(val[upa + j])
            elif o == 12:  # TAN
                for j in range(un):
                    t = val[ulo + j]
                    adj[upa + j] += adj[ulo + j] * (1.0 + t * t)
            elif o == 13:  # TANH
                for j in range(un):
                    t = val[ulo + j]
                    adj[upa + j] += adj[ulo + j] * (1.0 - t * t)
            elif o == 14:  # SIGMOID
                for j in range(un):
                    t = val[ulo + j]
                    adj[upa + j] += adj[ulo + j] * t * (1.0 - t)
            elif o == 15:  # RELU (a select, not a branch: signs are unpredictable)
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] if val[upa + j] > 0.0 else 0.0
            elif o == 16:  # ABS
                for j in range(un):
                    x = val[upa + j]
                    if x > 0.0:
                        adj[upa + j] += adj[ulo + j]
                    elif x < 0.0:
                        adj[upa + j] -= adj[ulo + j]
                    elif x != x:
                        adj[upa + j] += x
            elif o == 17:  # LEAKY_RELU
                for j in range(un):
                    if val[upa + j] > 0.0:
                        adj[upa + j] += adj[ulo + j]
                    else:
                        adj[upa + j] += adj[ulo + j] * c
            elif o == 18:  # ADDS
                for j in range(un):
                    adj[upa + j] += adj[ulo + j]
            elif o == 19:  # MULS
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * c
            elif o == 20:  # RSUBS
                for j in range(un):
                    adj[upa + j] -= adj[ulo + j]
            elif o == 21:  # RDIVS
                for j in range(un):
                    x = val[upa + j]
                    adj[upa + j] -= adj[ulo + j] * c / (x * x)
            elif o == 22:  # POWS
                if c != 0.0:
                    for j in range(un):
                        adj[upa + j] += adj[ulo + j] * c * val[upa + j] ** (c - 1.0)
            elif o == 23:  # RPOWS
                lc = np.log(c)
                for j in range(un):
                    adj[upa + j] += adj[ulo + j] * val[ulo + j] * lc
            elif o == 24:  # CLIP
                hi = fpool[ip[i]]
                for j in range(un):
                    x = val[upa + j]
                    if x >= c and x <= hi:
                        adj[upa + j] += adj[ulo + j]
            else:
                return BAD_OP, i
        elif o <= 32:
            # ---- binary elementwise on equal shapes (broadcasting is an explicit VIEW row) ----
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
            ga = rg[ra] != 0
            gb = rg[rb] != 0
            if ga:
                state[ra] |= 1
            if gb:
                state[rb] |= 1
            if o == 25:  # ADD
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j] += g
                    if gb:
                        adj[upb + j] += g
            elif o == 26:  # SUB
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j] += g
                    if gb:
                        adj[upb + j] -= g
            elif o == 27:  # MUL
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j] += g * val[upb + j]
                    if gb:
                        adj[upb + j] += g * val[upa + j]
            elif o == 28:  # DIV
                for j in range(un):
                    g = adj[ulo + j] / val[upb + j]
                    if ga:
                        adj[upa + j] += g
                    if gb:
                        adj[upb + j] -= g * val[ulo + j]
            elif o == 29:  # POW
                for j in range(un):
                    g = adj[ulo + j]
                    x = val[upa + j]
                    y = val[upb + j]
                    if ga and y != 0.0:
                        adj[upa + j] += g * y * x ** (y - 1.0)
                    if gb and not (x == 0.0 and y >= 0.0):
                        adj[upb + j] += g * val[ulo + j] * np.log(x)
            elif o == 30 or o == 31:  # MAXIMUM, MINIMUM: ties split the gradient evenly
                for j in range(un):
                    g = adj[ulo + j]
                    x = val[upa + j]
                    y = val[upb + j]
                    if x == y:
                        wa = 0.5
                    elif (x > y) == (o == 30):
                        wa = 1.0
                    else:
                        wa = 0.0
                    if ga:
                        adj[upa + j] += g * wa
                    if gb:
                        adj[upb + j] += g * (1.0 - wa)
            elif o == 32:  # WHERE: ipool[ip] is the row of the 0/1 condition
                upc = np.uint64(voff[ipool[ip[i]]])
                for j in range(un):
                    g = adj[ulo + j]
                    if val[upc + j] != 0.0:
                        if ga:
                            adj[upa + j] += g
                    elif gb:
                        adj[upb + j] += g
            else:
                return BAD_OP, i
        else:
            # ---- structural ops: hand-written backward each ----
            p = ip[i]
            if o == 43:  # GUARD: records a branch decision; no gradient
                i -= 1
                continue
            if o == 40:  # CONCAT: outer, inner, k, rows[k], lens[k]
                outer = ipool[p]
                inner = ipool[p + 1]
                k = ipool[p + 2]
                width = 0
                for t in range(k):
                    width += ipool[p + 3 + k + t] * inner
                start = 0
                for t in range(k):
                    r = ipool[p + 3 + t]
                    w = ipool[p + 3 + k + t] * inner
                    if rg[r] != 0:
                        state[r] |= 1
                        pr = voff[r]
                        for u in range(outer):
                            for v in range(w):
                                adj[pr + u * w + v] += adj[lo + u * width + start + v]
                    start += w
                i -= 1
                continue
            if rg[ra] == 0 and (rb < 0 or rg[rb] == 0):
                i -= 1
                continue
            pa = voff[ra]
            if o == 33:  # VIEW: ndim, shape[ndim], strides[ndim], base (over the output)
                nd = ipool[p]
                offs = strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])
                state[ra] |= 1
                for j in range(n):
                    adj[pa + offs[j]] += adj[lo + j]
            elif o == 34:  # RESHAPE
                state[ra] |= 1
                for j in range(n):
                    adj[pa + j] += adj[lo + j]
            elif o >= 35 and o <= 38:  # SUM PROD AMAX AMIN: ndim, in-shape, out-strides
                nd = ipool[p]
                offs = strided_offsets(ipool, p + 1, nd, 0)
                m = offs.shape[0]
                state[ra] |= 1
                if o == 35:  # SUM
                    for j in range(m):
                        adj[pa + j] += adj[lo + offs[j]]
                elif o == 36:  # PROD: exact with zeros
                    zc = np.zeros(n, np.int64)
                    pnz = np.ones(n)
                    for j in range(m):
                        x = val[pa + j]
                        if x == 0.0:
                            zc[offs[j]] += 1
                        else:
                            pnz[offs[j]] *= x
                    for j in range(m):
                        q = offs[j]
                        x = val[pa + j]
                        if zc[q] == 0:
                            adj[pa + j] += adj[lo + q] * pnz[q] / x
                        elif zc[q] == 1 and x == 0.0:
                            adj[pa + j] += adj[lo + q] * pnz[q]
                else:  # AMAX / AMIN: ties share the gradient evenly
                    cnt = np.zeros(n)
                    for j in range(m):
                        if val[pa + j] == val[lo + offs[j]]:
                            cnt[offs[j]] += 1.0
                    for j in range(m):
                        q = offs[j]
                        if val[pa + j] == val[lo + q]:
                            adj[pa + j] += adj[lo + q] / cnt[q]
            elif o == 39:  # MATMUL: batch, m, k, n
                nb = ipool[p]
                mm = ipool[p + 1]
                kk = ipool[p + 2]
                nn = ipool[p + 3]
                if nb * mm * kk * nn > SMALL_MATMUL:
                    return HIT_MATMUL, i
                pb = voff[rb]
                for t in range(nb):
                    ga0 = pa + t * mm * kk
                    gb0 = pb + t * kk * nn
                    g0 = lo + t * mm * nn
                    if rg[ra] != 0:  # dA = G @ B^T
                        for u in range(mm):
                            for q in range(kk):
                                acc = 0.0
                                for v in range(nn):
                                    acc += adj[g0 + u * nn + v] * val[gb0 + q * nn + v]
                                adj[ga0 + u * kk + q] += acc
                    if rg[rb] != 0:  # dB = A^T @ G
                        for u in range(mm):
                            for q in range(kk):
                                x = val[ga0 + u * kk + q]
                                for v in range(nn):
                                    adj[gb0 + q * nn + v] += x * adj[g0 + u * nn + v]
                if rg[ra] != 0:
                    state[ra] |= 1
                if rg[rb] != 0:
                    state[rb] |= 1
            elif o == 41:  # GATHER: m, idx[m]; repeated indices accumulate
                state[ra] |= 1
                for j in range(n):
                    adj[pa + ipool[p + 1 + j]] += adj[lo + j]
            elif o == 44:  # SCATTER: out = zeros; out[idx[j]] += a[j].  m, idx[m]
                m = ipool[p]
                state[ra] |= 1
                for j in range(m):
                    adj[pa + j] += adj[lo + ipool[p + 1 + j]]
            elif o == 42:  # SETITEM: out = a; out[idx] = b.  m, idx[m]
                m = ipool[p]
                if rg[ra] != 0:
                    state[ra] |= 1
                    keep = np.ones(n)
                    for j in range(m):
                        keep[ipool[p + 1 + j]] = 0.0
                    for j in range(n):
                        adj[pa + j] += adj[lo + j] * keep[j]
                if rg[rb] != 0:
                    state[rb] |= 1
                    pb = voff[rb]
                    for j in range(m):
                        adj[pb + j] += adj[lo + ipool[p + 1 + j]]
            else:
                return BAD_OP, i
        i -= 1
    return DONE, -1


@njit(cache=True, error_model="numpy")  # IEEE inf/nan, never ZeroDivisionError
def jacobian_sweeps(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top,
                    out_rows, seeds, in_rows, result):
    """One reverse sweep per cotangent, all inside one compiled call (reverse-mode Jacobian).

    seeds[r] is a cotangent laid out over the concatenated values of ``out_rows``; the
    gradient for each of ``in_rows`` (concatenated) goes to result[r].  Returns (status, row)
    of the first sweep that could not finish (a custom op or freed row) or (DONE, -1)."""
    end = voff[top + 1]
    for r in range(seeds.shape[0]):
        for j in range(end):
            adj[j] = 0.0
        for j in range(top + 1):
            state[j] &= 2
        k = 0
        for q in range(out_rows.shape[0]):
            ro = out_rows[q]
            lo = voff[ro]
            for j in range(voff[ro + 1] - lo):
                adj[lo + j] += seeds[r, k]
                k += 1
            state[ro] |= 1
        status, row = backward_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, adj,
                                     top, 0)
        if status != DONE:
            return status, row
        k = 0
        for q in range(in_rows.shape[0]):
            ri = in_rows[q]
            lo = voff[ri]
            reached = (state[ri] & 1) != 0
            for j in range(voff[ri + 1] - lo):
                result[r, k] = adj[lo + j] if reached else 0.0
                k += 1
    return DONE, -1
