"""Compiled forward replay of a recorded tape (``tg.trace``): every ``@njit`` function of replay.

``forward_sweep`` recomputes every row of a recorded tape from new LEAF values, in the row
order of the recording, and checks every GUARD row (a branch Python took on a traced value).
``grad_into`` is one forward sweep plus ``_kernels.backward_sweep`` from the output row, so a
``tr.grad`` call is a single compiled call; ``grad_batch`` runs it over a batch with ``prange``
(each worker with its own value/adjoint/state buffers; the tape loop itself stays serial).

As in ``_kernels.py``, op codes are written here as literals (``if o == 27:  # MUL``) and
``_ops.kernel_branches`` checks them against ``KERNEL_OPS`` at import.  The forward of each op
follows its NumPy recording path operation for operation so a replay at the recorded inputs
reproduces the recorded values bit for bit (sums use NumPy's pairwise order).

GUARD rows (op 43): operand a (and b, or the scalar ``fp`` when b = -1), ``ipool[ip]`` = kind
(0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=, 6 pin: the value must not change at all).  The row's own
value holds the recorded outcome (0/1 per element) or, for a pin, the recorded value; the
replay reads it and never writes it.
"""
import hashlib

import numpy as np
from numba import njit, prange

from . import _kernels as K
from ._kernels import backward_sweep, strided_offsets

DONE = 0
BAD_OP = 3
GUARD_FAILED = 4   # a guard saw a different outcome: (GUARD_FAILED, guard row)


class RetraceRequired(RuntimeError):
    """A replayed trace met inputs that take another branch than the one recorded."""


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
def forward_sweep(code, ip, fp, voff, ipool, fpool, val, nrows):
    """Recompute rows 0..nrows-1 in place in ``val`` (LEAF/CONST rows are inputs).

    Returns (DONE, -1), (GUARD_FAILED, row) at the first guard whose outcome changed, or
    (BAD_OP, row) for a row that cannot be replayed (custom Python op)."""
    for i in range(nrows):
        w = code[i]
        o = w & 255
        if o <= 2:  # LEAF, CONST, FREED: values are inputs or constants
            continue
        if o == 3:  # CUSTOM: Python code, not replayable
            return BAD_OP, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        if o <= 24:
            # ---- unary elementwise ----
            pa = voff[ra]
            c = fp[i]
            if o == 4:  # NEG
                for j in range(n):
                    val[lo + j] = -val[pa + j]
            elif o == 5:  # EXP
                for j in range(n):
                    val[lo + j] = np.exp(val[pa + j])
            elif o == 6:  # LOG
                for j in range(n):
                    val[lo + j] = np.log(val[pa + j])
            elif o == 7:  # LOG1P
                for j in range(n):
                    val[lo + j] = np.log1p(val[pa + j])
            elif o == 8:  # EXPM1
                for j in range(n):
                    val[lo + j] = np.expm1(val[pa + j])
            elif o == 9:  # SQRT
                for j in range(n):
                    val[lo + j] = np.sqrt(val[pa + j])
            elif o == 10:  # SIN
                for j in range(n):
                    val[lo + j] = np.sin(val[pa + j])
            elif o == 11:  # COS
                for j in range(n):
                    val[lo + j] = np.cos(val[pa + j])
            elif o == 12:  # TAN
                for j in range(n):
                    val[lo + j] = np.tan(val[pa + j])
            elif o == 13:  # TANH
                for j in range(n):
                    val[lo + j] = np.tanh(val[pa + j])
            elif o == 14:  # SIGMOID
                for j in range(n):
                    val[lo + j] = 0.5 * (np.tanh(0.5 * val[pa + j]) + 1.0)
            elif o == 15:  # RELU
                for j in range(n):
                    x = val[pa + j]
                    val[lo + j] = x if (x > 0.0 or x != x) else 0.0
            elif o == 16:  # ABS
                for j in range(n):
                    val[lo + j] = abs(val[pa + j])
            elif o == 17:  # LEAKY_RELU
                for j in range(n):
                    x = val[pa + j]
                    val[lo + j] = x if x > 0.0 else x * c
            elif o == 18:  # ADDS
                for j in range(n):
                    val[lo + j] = val[pa + j] + c
            elif o == 19:  # MULS
                for j in range(n):
                    val[lo + j] = val[pa + j] * c
            elif o == 20:  # RSUBS
                for j in range(n):
                    val[lo + j] = c - val[pa + j]
            elif o == 21:  # RDIVS
                for j in range(n):
                    val[lo + j] = c / val[pa + j]
            elif o == 22:  # POWS
                for j in range(n):
                    val[lo + j] = val[pa + j] ** c
            elif o == 23:  # RPOWS
                for j in range(n):
                    val[lo + j] = c ** val[pa + j]
            elif o == 24:  # CLIP
                hi = fpool[ip[i]]
                for j in range(n):
                    x = val[pa + j]
                    if x < c:
                        x = c
                    if x > hi:
                        x = hi
                    val[lo + j] = x
            else:
                return BAD_OP, i
        elif o <= 32:
            # ---- binary elementwise on equal shapes ----
            pa = voff[ra]
            pb = voff[rb]
            if o == 25:  # ADD
                for j in range(n):
                    val[lo + j] = val[pa + j] + val[pb + j]
            elif o == 26:  # SUB
                for j in range(n):
                    val[lo + j] = val[pa + j] - val[pb + j]
            elif o == 27:  # MUL
                for j in range(n):
                    val[lo + j] = val[pa + j] * val[pb + j]
            elif o == 28:  # DIV
                for j in range(n):
                    val[lo + j] = val[pa + j] / val[pb + j]
            elif o == 29:  # POW
                for j in range(n):
                    val[lo + j] = val[pa + j] ** val[pb + j]
            elif o == 30:  # MAXIMUM (NaN propagates, like np.maximum)
                for j in range(n):
                    x = val[pa + j]
                    y = val[pb + j]
                    val[lo + j] = x if (x >= y or x != x) else y
            elif o == 31:  # MINIMUM
                for j in range(n):
                    x = val[pa + j]
                    y = val[pb + j]
                    val[lo + j] = x if (x <= y or x != x) else y
            elif o == 32:  # WHERE: ipool[ip] is the row of the 0/1 condition
                pc = voff[ipool[ip[i]]]
                for j in range(n):
                    val[lo + j] = val[pa + j] if val[pc + j] != 0.0 else val[pb + j]
            else:
                return BAD_OP, i
        else:
            # ---- structural ops ----
            p = ip[i]
            if o == 43:  # GUARD: kind in ipool[p]; recorded outcome in this row's value
                kind = ipool[p]
                pa = voff[ra]
                pb = voff[rb] if rb >= 0 else 0
                c = fp[i]
                for j in range(n):
                    x = val[pa + j]
                    r = val[lo + j]
                    if kind == 6:
                        same = x == r or (x != x and r != r)
                    else:
                        y = val[pb + j] if rb >= 0 else c
                        if kind == 0:
                            hit = x < y
                        elif kind == 1:
                            hit = x <= y
                        elif kind == 2:
                            hit = x > y
                        elif kind == 3:
                            hit = x >= y
                        elif kind == 4:
                            hit = x == y
                        else:
                            hit = x != y
                        same = hit == (r != 0.0)
                    if not same:
                        return GUARD_FAILED, i
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
                    pr = voff[ipool[p + 3 + t]]
                    wd = ipool[p + 3 + k + t] * inner
                    for u in range(outer):
                        for v in range(wd):
                            val[lo + u * width + start + v] = val[pr + u * wd + v]
                    start += wd
                continue
            pa = voff[ra]
            if o == 33:  # VIEW: ndim, shape[ndim], strides[ndim], base
                nd = ipool[p]
                offs = strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])
                for j in range(n):
                    val[lo + j] = val[pa + offs[j]]
            elif o == 34:  # RESHAPE
                for j in range(n):
                    val[lo + j] = val[pa + j]
            elif o >= 35 and o <= 38:  # SUM PROD AMAX AMIN: ndim, in-shape, out-strides
                nd = ipool[p]
                offs = strided_offsets(ipool, p + 1, nd, 0)
                m = offs.shape[0]
                if o == 35:  # SUM: NumPy adds pairwise over the innermost reduced run
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
                        val[lo + j] = 0.0
                    if run > 0:
                        for j in range(0, m, run):
                            val[lo + offs[j]] += pairwise_sum(val, pa + j, run)
                elif o == 36:  # PROD
                    for j in range(n):
                        val[lo + j] = 1.0
                    for j in range(m):
                        val[lo + offs[j]] *= val[pa + j]
                else:  # NaN propagates
                    is_max = o == 37  # AMAX
                    is_min = o == 38  # AMIN
                    seen = np.zeros(n, np.bool_)
                    for j in range(m):
                        q = offs[j]
                        x = val[pa + j]
                        if not seen[q]:
                            seen[q] = True
                            val[lo + q] = x
                            continue
                        cur = val[lo + q]
                        if cur != cur:
                            continue
                        if x != x or (is_max and x > cur) or (is_min and x < cur):
                            val[lo + q] = x
            elif o == 39:  # MATMUL: batch, m, k, n (loops: the kernels never call BLAS)
                nb = ipool[p]
                mm = ipool[p + 1]
                kk = ipool[p + 2]
                nn = ipool[p + 3]
                pb = voff[rb]
                for j in range(n):
                    val[lo + j] = 0.0
                for t in range(nb):
                    a0 = pa + t * mm * kk
                    b0 = pb + t * kk * nn
                    c0 = lo + t * mm * nn
                    for u in range(mm):
                        for q in range(kk):
                            x = val[a0 + u * kk + q]
                            for v in range(nn):
                                val[c0 + u * nn + v] += x * val[b0 + q * nn + v]
            elif o == 41:  # GATHER: m, idx[m]
                for j in range(n):
                    val[lo + j] = val[pa + ipool[p + 1 + j]]
            elif o == 44:  # SCATTER: out = zeros; out[idx[j]] += a[j].  m, idx[m]
                m = ipool[p]
                for j in range(n):
                    val[lo + j] = 0.0
                for j in range(m):
                    val[lo + ipool[p + 1 + j]] += val[pa + j]
            elif o == 42:  # SETITEM: out = a; out[idx] = b.  m, idx[m]
                m = ipool[p]
                pb = voff[rb]
                for j in range(n):
                    val[lo + j] = val[pa + j]
                for j in range(m):
                    val[lo + ipool[p + 1 + j]] = val[pb + j]
            else:
                return BAD_OP, i
    return DONE, -1


@njit(cache=True, error_model="numpy")
def matmul_backward(ip, voff, rg, state, ipool, val, adj, w, i):
    """Adjoints of a large MATMUL row (the sweep hands those back to its caller)."""
    ra = ((w >> 8) & 0xFFFFFFF) - 1
    rb = (w >> 36) - 1
    p = ip[i]
    nb = ipool[p]
    mm = ipool[p + 1]
    kk = ipool[p + 2]
    nn = ipool[p + 3]
    pa = voff[ra]
    pb = voff[rb]
    lo = voff[i]
    for t in range(nb):
        a0 = pa + t * mm * kk
        b0 = pb + t * kk * nn
        g0 = lo + t * mm * nn
        for u in range(mm):
            for q in range(kk):
                x = val[a0 + u * kk + q]
                acc = 0.0
                for v in range(nn):
                    g = adj[g0 + u * nn + v]
                    acc += g * val[b0 + q * nn + v]
                    if rg[rb] != 0:
                        adj[b0 + q * nn + v] += x * g
                if rg[ra] != 0:
                    adj[a0 + u * kk + q] += acc
    if rg[ra] != 0:
        state[ra] |= 1
    if rg[rb] != 0:
        state[rb] |= 1


@njit(cache=True, error_model="numpy")
def grad_into(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, nrows, out_row, x, g):
    """One replay: x -> val[:x.size] (the input LEAF rows), forward sweep, backward sweep from
    the scalar ``out_row``; the gradient of the first g.size input values goes to g."""
    for j in range(x.shape[0]):
        val[j] = x[j]
    status, row = forward_sweep(code, ip, fp, voff, ipool, fpool, val, nrows)
    if status != DONE:
        return status, row
    end = max(voff[out_row + 1], g.shape[0])
    for j in range(end):
        adj[j] = 0.0
    for j in range(out_row + 1):
        state[j] = 0
    adj[voff[out_row]] = 1.0
    state[out_row] = 1
    top = out_row
    while True:
        status, row = backward_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, adj,
                                     top, 0)
        if status != K.HIT_MATMUL:
            break
        matmul_backward(ip, voff, rg, state, ipool, val, adj, code[row], row)
        top = row - 1
    if status != DONE:
        return status, row
    for j in range(g.shape[0]):
        g[j] = adj[j]
    return DONE, -1


@njit(parallel=True, cache=True, error_model="numpy")
def grad_batch(code, ip, fp, voff, rg, ipool, fpool, val0, nrows, out_row, X, G, values,
               fails, nthreads):
    """grad_into for every row of X, in parallel over the batch (never over the tape): each
    worker owns a value/adjoint/state buffer.  fails[b] is -1 or the row that stopped item b."""
    nb = X.shape[0]
    nt = max(1, min(nb, nthreads))
    for c in prange(nt):
        b0 = c * nb // nt
        b1 = (c + 1) * nb // nt
        val = val0.copy()
        adj = np.zeros(val0.shape[0])
        state = np.zeros(code.shape[0], np.int8)
        for b in range(b0, b1):
            status, row = grad_into(code, ip, fp, voff, rg, state, ipool, fpool, val, adj,
                                    nrows, out_row, X[b], G[b])
            fails[b] = -1 if status == DONE else row
            values[b] = val[voff[out_row]]


@njit(cache=True, error_model="numpy")
def replay_grad(arrays, x):
    """Gradient of a trace at the flat input ``x``, callable from user ``@njit`` code.

    ``arrays`` is ``tr.njit_grad[1]``; raises RetraceRequired when a guard fails (the trace's
    Python side names the source line: call ``tr.grad`` there)."""
    code, ip, fp, voff, rg, state, ipool, fpool, val, adj, meta = arrays
    g = np.empty(meta[2])
    status, row = grad_into(code, ip, fp, voff, rg, state, ipool, fpool, val, adj,
                            meta[0], meta[1], x, g)
    if status == GUARD_FAILED:
        raise RetraceRequired("tapegrad replay_grad: the input takes another branch than the "
                              "recorded one; call tr.grad(x) from Python to see where")
    if status != DONE:
        raise RuntimeError("tapegrad replay_grad: the trace holds a row that cannot be replayed")
    return g


def _key_cache_on_kernels(*dispatchers):
    """These functions link _kernels.py's sweeps into their machine code, so their on-disk
    cache must also go stale when _kernels.py changes (Numba only stamps this file)."""
    with open(K.__file__, "rb") as f:
        digest = hashlib.sha1(f.read()).hexdigest()
    for d in dispatchers:
        try:
            cf = d._cache._cache_file
            cf._source_stamp = (cf._source_stamp, digest)
        except AttributeError:  # a Numba without this internal layout: plain caching
            pass


_key_cache_on_kernels(forward_sweep, grad_into, grad_batch, replay_grad)
