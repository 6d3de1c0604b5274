# GENERATED FILE: do not edit. Regenerate with `python tapegrad/kernels/generate.py` (from tapegrad/ops).
"""Compiled tape sweeps: every ``@njit`` function of tapegrad, generated from the op spec.

Tape layout (one row per value, row index == slot):
  code[i]  int64   op | (a + 1) << 8 | (b + 1) << 36: op code and operand rows (-1: none)
  ip[i]    int64   start of the op's integer parameters in ``ipool``
  fp[i]    float64 scalar parameter c (constant, exponent, slope, clip low)
  voff[i]  int64   offset of the value in ``val``/``adj``; size is voff[i+1] - voff[i]
  rg[i]    int8    1 when the row needs a gradient
  state[i] int8    bit 1: reached by the current sweep; bit 2: freed by an earlier backward
Tangent sweeps keep ``tvals`` (one row of tangents per direction, a "lane", each laid out
like ``val``) and ``flag[i]`` (1 when row i carries a tangent, the same for every lane).
"""
import math
import threading

import numpy as np
from numba import njit, prange

_PLAIN = globals().get("PLAIN_PYTHON")  # set when kernels/loader.py runs this as plain Python
if _PLAIN is not None:
    njit, prange, math = _PLAIN.njit, _PLAIN.prange, _PLAIN.math

FINGERPRINT = "059cc035a1815601"
# compiled into every function that reads it: code cached by a user's own @njit(cache=True)
# function from an older tapegrad carries the old number, and replay_grad refuses to run
KERNELS_ID = 25275587695744352
OP_NAMES = ('LEAF', 'CONST', 'FREED', 'CUSTOM', 'GUARD', 'NEG', 'EXP', 'LOG', 'LOG1P', 'EXPM1', 'SQRT', 'SIN', 'COS', 'TAN', 'TANH', 'SIGMOID', 'RELU', 'ABS', 'ARCSIN', 'ARCCOS', 'ARCTAN', 'ARCSINH', 'ARCCOSH', 'ARCTANH', 'SINH', 'COSH', 'LOG2', 'LOG10', 'EXP2', 'CBRT', 'SINC', 'SIGN', 'FLOOR', 'CEIL', 'RINT', 'TRUNC', 'LEAKY_RELU', 'ADDS', 'MULS', 'RSUBS', 'RDIVS', 'POWS', 'RPOWS', 'CLIP', 'GAMMA', 'GAMMALN', 'DIGAMMA', 'POLYGAMMA', 'ERF', 'ERFC', 'ERFINV', 'ERFCINV', 'ADD', 'SUB', 'MUL', 'DIV', 'POW', 'MAXIMUM', 'MINIMUM', 'ARCTAN2', 'HYPOT', 'LOGADDEXP', 'LOGADDEXP2', 'REMAINDER', 'FMOD', 'WHERE', 'VIEW', 'RESHAPE', 'SUM', 'PROD', 'AMAX', 'AMIN', 'MATMUL', 'CONCAT', 'GATHER', 'SETITEM', 'SCATTER', 'LINREC', 'CUMSUM', 'CUMPROD', 'LOGCUMSUMEXP')

# sweep results: (status, row)
DONE = 0          # swept everything
HIT_FREED = 1     # reached a row whose graph was freed by an earlier backward
HIT_CUSTOM = 2    # reached a custom Function: Python runs it, then resumes
BAD_OP = 3        # unknown op code (never silently skipped)
HIT_MATMUL = 4    # a large matmul: Python does it with NumPy's BLAS, then resumes
GUARD_FAILED = 5  # a replayed guard saw another outcome than the recorded one
HIT_RARE = 6      # backward_sweep met an op outside its common set: backward_sweep_all goes on
SMALL_MATMUL = 65536
# flags and counts one kernel passes another: a literal (True, 0) would make Numba compile the
# callee again for that literal; these are the bool / int64 every other caller passes
TRUE, FALSE, ZERO, ONE = np.bool_(True), np.bool_(False), np.int64(0), np.int64(1)


class RetraceRequired(RuntimeError):
    """A replayed trace met inputs that take another branch than the one recorded."""


# ---- dispatchers made on first use ---------------------------------------------------------
# Numba makes a dispatcher per @njit function at ~0.5 ms each: for ~110 kernels, most of
# importing tapegrad.  So each kernel is noted here (``@_kernel``) and removed from the module
# at its end; the first ``sweeps.NAME`` (module __getattr__) makes NAME's dispatcher, after
# those of every kernel it calls (found in its code's global names), since Numba looks them up
# when it compiles NAME.  A first gradient so makes the dozens it needs, not all of them.
_LAZY = {}  # name -> (plain function, parallel?)
_LAZY_LOCK = threading.Lock()


def _kernel(fn):
    _LAZY[fn.__name__] = (fn, False)
    return fn


def _kernel_parallel(fn):
    _LAZY[fn.__name__] = (fn, True)
    return fn


@_kernel
def sf_whole(x):
    """Is x a whole number?  Every float of magnitude 2^52 or more is; ``math.floor`` of one
    beyond 2^63 would overflow the integer Numba makes of it (no overflow in Python)."""
    return abs(x) >= 4503599627370496.0 or x == math.floor(x)


@_kernel
def sf_pow(x, y):
    """``x ** y`` as NumPy's power computes it for arrays: the exponents 2, 1 and 0.5 are a
    multiply, the identity and a square root (so ``(-inf) ** 0.5`` is NaN and ``(-0.0) **
    0.5`` is -0.0, as in NumPy, where libm's pow gives inf and 0.0), any other one libm's
    pow, which costs ~20 ns an element."""
    if y == 2.0:
        return x * x
    if y == 1.0:
        return x
    if y == 0.5:
        return np.sqrt(x)
    return x**y


@_kernel
def sf_gamma(x):
    """Gamma; poles: +-inf at zero (by its sign), NaN at the negative integers (SciPy)."""
    if x != x or x == math.inf:
        return x
    if x == -math.inf:  # SciPy's nan (math.floor(-inf) would raise in Python)
        return math.nan
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0 and sf_whole(x):
        return math.nan
    if x > 171.62437695630272:  # Gamma overflows the largest double
        return math.inf
    if x < -190.0:  # |Gamma| underflows: a zero with Gamma's sign there
        return 0.0 if math.floor(x) % 2.0 == 0.0 else -0.0
    if -1e-300 < x < 1e-300:  # Gamma(x) = 1/x - 0.577... + O(x): 1/x to the last bit here,
        return 1.0 / x  # and +-inf by x's sign at denormal x (where Python's math.gamma raises)
    return math.gamma(x)


@_kernel
def sf_gammaln(x):
    """log |Gamma(x)|: +inf at the poles, as SciPy (and -inf at -inf)."""
    if x != x or x == math.inf or x == -math.inf:
        return x
    if x <= 0.0 and sf_whole(x):
        return math.inf
    if x > 1e305:  # Stirling's leading terms; overflow to inf as IEEE
        return x * (math.log(x) - 1.0)
    return math.lgamma(x)


@_kernel
def sf_digamma(x):
    """psi(x) = d log Gamma(x) / dx: reflection below 0, recurrence up to 10, then the
    asymptotic series (Bernoulli numbers).  -inf at +0, +inf at -0, NaN at negative integers."""
    if x != x or x == math.inf:
        return x
    if x == 0.0:
        return -math.copysign(math.inf, x)
    if x == -math.inf or (x < 0.0 and sf_whole(x)):
        return math.nan
    r = 0.0
    if x < 0.0:  # psi(x) = psi(1 - x) - pi / tan(pi x), the angle reduced first: to x less
        # its nearest integer, which is exact (x less the integer below it rounds near 0:
        # psi(-1e-300) came out 2.6e16 for 1e300)
        r = -math.pi / math.tan(math.pi * (x - math.floor(x + 0.5)))
        x = 1.0 - x
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    tail = z * (
        1.0 / 12.0
        - z
        * (
            1.0 / 120.0
            - z
            * (
                1.0 / 252.0
                - z * (1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z / 12.0)))
            )
        )
    )
    return r + math.log(x) - 0.5 / x - tail


@_kernel
def sf_hurwitz_zeta(s, q):
    """zeta(s, q) = sum_k (k + q)^-s for s > 1, q > 0 (Euler-Maclaurin, as Cephes)."""
    coef = (
        12.0,
        -720.0,
        30240.0,
        -1209600.0,
        47900160.0,
        -1.8924375803183791606e9,
        7.47242496e10,
        -2.950130727918164224e12,
        1.1646782814350067249e14,
        -4.5979787224074726105e15,
        1.8152105401943546773e17,
        -7.1661652561756670113e18,
    )
    if -s * math.log(q) > 709.0:  # q ** -s overflows (Python's pow would raise)
        return math.inf
    if q > 1e15:  # the sum is its integral and first Euler-Maclaurin term to double precision
        return q ** (1.0 - s) / (s - 1.0) + 0.5 * q**-s
    total = q**-s
    a = q
    b = 0.0
    i = 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a**-s
        total += b
        if abs(b / total) < 1.1102230246251565e-16:
            return total
    w = a
    total += b * w / (s - 1.0)
    total -= 0.5 * b
    fac = 1.0
    k = 0.0
    for j in range(12):
        fac *= s + k
        b /= w
        term = fac * b / coef[j]
        total += term
        if abs(term / total) < 1.1102230246251565e-16:
            return total
        k += 1.0
        fac *= s + k
        b /= w
        k += 1.0
    return total


@_kernel
def sf_pi_cot_derivative(n, r):
    """d^n/dx^n [pi cot(pi x)] at x = k + r (k whole, |r| <= 1/2, r exact).

    The n-th derivative of cot is P_n(cot), P_0(c) = c, P_(m+1)(c) = -(1 + c^2) P_m'(c):
    its terms all have one sign for a given c (one parity of powers), so the sum does not
    cancel.  Where |cot| > 1 the sum is taken in powers of 1/cot and scaled after, so it
    overflows only where the derivative does."""
    if abs(r) < 0.25:
        c = 1.0 / math.tan(math.pi * r)
    else:  # cot(pi r) = tan(pi (1/2 - |r|)), exact argument here: 0 at r = +-1/2 exactly
        c = math.copysign(math.tan(math.pi * (0.5 - abs(r))), r)
    m = int(n)
    a = np.zeros(m + 3)  # a[k]: coefficient of c^k in P_j, updated in place for j = 1 .. n
    a[1] = 1.0
    for j in range(m):
        prev = 0.0  # a[k - 1] of P_j (a[k - 1] is overwritten before a[k] is computed)
        for k in range(j + 3):
            cur = a[k]
            a[k] = -((k + 1.0) * a[k + 1] + (k - 1.0) * prev)
            prev = cur
    if abs(c) <= 1.0:
        total = 0.0
        for k in range(m + 1, -1, -1):
            total = total * c + a[k]
        return math.pi ** (m + 1.0) * total
    inv = 1.0 / c
    total = 0.0  # P_n(c) / c^(n + 1) = sum_k a[k] inv^(n + 1 - k)
    for k in range(m + 2):
        total = total * inv + a[k]
    if total == 0.0:
        return 0.0
    size = (m + 1.0) * math.log(math.pi * abs(c)) + math.log(abs(total))
    sign = math.copysign(1.0, total) * (math.copysign(1.0, c) if m % 2 == 0 else 1.0)
    if size > 709.78:
        return sign * math.inf
    return sign * (math.pi * abs(c)) ** (m + 1.0) * abs(total)


@_kernel
def sf_polygamma(n, x):
    """The n-th derivative of digamma (n a whole number >= 0): (-1)^(n+1) n! zeta(n+1, x),
    by the reflection psi^(n)(x) = (-1)^n psi^(n)(1 - x) - d^n/dx^n [pi cot(pi x)] below 0
    (SciPy's way: the recurrence up from x adds terms far larger than the result, which
    cancel); signed infinity at the poles, as SciPy."""
    if n == 0.0:
        return sf_digamma(x)
    if n < 0.0 or not sf_whole(n) or x != x:
        return math.nan
    sign = 1.0 if n % 2.0 == 1.0 else -1.0
    if x == math.inf:
        return sign * 0.0
    if x == -math.inf:  # SciPy's signed infinity (math.floor(-inf) would raise in Python)
        return sign * math.inf
    if x <= 0.0 and sf_whole(x):
        return sign * math.inf
    if x < 0.0:
        cot = sf_pi_cot_derivative(n, x - math.floor(x + 0.5))
        mirrored = sign * math.exp(math.lgamma(n + 1.0)) * sf_hurwitz_zeta(n + 1.0, 1.0 - x)
        return (-mirrored if n % 2.0 == 1.0 else mirrored) - cot
    return sign * math.exp(math.lgamma(n + 1.0)) * sf_hurwitz_zeta(n + 1.0, x)


@_kernel
def sf_erf_newton(x, y):
    """y refined so that erf(y) = x (Halley steps; |x| <= 1/2)."""
    for _ in range(6):
        step = (math.erf(y) - x) / (1.1283791670955126 * math.exp(-y * y))
        step = step / (1.0 + y * step)
        y -= step
        if abs(step) <= 1e-17 + 1e-16 * abs(y):
            break
    return y


@_kernel
def sf_erfcinv_small(q):
    """y > 0 with erfc(y) = q for 0 < q <= 1/2: Newton on log erfc (well scaled down to the
    smallest subnormal q), from the asymptotic start y ~ sqrt(-log(q sqrt(pi) y))."""
    y = math.sqrt(-math.log(q))
    for _ in range(3):
        y = math.sqrt(max(-math.log(q * 1.7724538509055159 * y), 0.25))
    lq = math.log(q)
    for _ in range(40):
        e = math.erfc(y)
        step = (math.log(e) - lq) / (-1.1283791670955126 * math.exp(-y * y) / e)
        y -= step
        if abs(step) <= 1e-16 * y:
            break
    return y


@_kernel
def sf_erfinv(x):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside)."""
    if x != x or x < -1.0 or x > 1.0:
        return math.nan
    if x == 1.0 or x == -1.0:
        return math.copysign(math.inf, x)
    if abs(x) <= 0.5:
        return sf_erf_newton(x, 0.886226925452758 * x)
    if x > 0.0:  # 1 - x is exact here: erfinv(x) = erfcinv(1 - x)
        return sf_erfcinv_small(1.0 - x)
    return -sf_erfcinv_small(1.0 + x)


@_kernel
def sf_erfcinv(q):
    """The inverse of erfc on [0, 2] (+inf at 0, -inf at 2, NaN outside)."""
    if q != q or q < 0.0 or q > 2.0:
        return math.nan
    if q == 0.0:
        return math.inf
    if q == 2.0:
        return -math.inf
    if q <= 0.5:
        return sf_erfcinv_small(q)
    if q >= 1.5:
        return -sf_erfcinv_small(2.0 - q)
    return sf_erf_newton(1.0 - q, 0.886226925452758 * (1.0 - q))


@_kernel
def where_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    cond = voff[ipool[p]]
    for j in range(n):
        D[lo + j] = A[pa + j] if V[cond + j] != 0.0 else B[pb + j]


@_kernel
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


@_kernel
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


@_kernel
def strided_move(S, s0, D, d0, ipool, p, nd, base, take, add):
    """A move along the strided map of the shape ``ipool[p:p+nd]`` (strides
    ``ipool[p+nd:p+2*nd]``, from ``base``), without an offset array: one run along the
    innermost axes per step of an odometer over the outer ones.

    A scatter (``take`` False) adds ``S[s0 + flat(idx)]`` into ``D[d0 + base + sum(idx *
    stride)]`` for every multi-index idx (C order); an innermost run of stride-0 axes (a
    reduction) is added pairwise first, in NumPy's order for a sum, so a replayed sum matches
    NumPy's.  A gather (``take`` True) writes ``D[d0 + flat(idx)] = S[s0 + base + sum(idx *
    stride)]`` (``add``: adds it), a broadcast scalar being one run of stride 0."""
    if nd == 0:
        if not take:
            D[d0 + base] += S[s0]
        elif add:
            D[d0] += S[s0 + base]
        else:
            D[d0] = S[s0 + base]
        return
    run = 1
    inner = nd  # the innermost axes from here on are stride 0 (or of size 1)
    while inner > 0 and not take:
        size = ipool[p + inner - 1]
        if size != 1 and ipool[p + nd + inner - 1] != 0:
            break
        run *= size
        inner -= 1
    pairwise = run > 1
    step = 0
    if not pairwise:
        inner = nd - 1
        run = ipool[p + nd - 1]
        step = ipool[p + 2 * nd - 1]
    outer = 1
    for d in range(inner):
        outer *= ipool[p + d]
    if run == 0 or outer == 0:
        return
    if inner == 0:  # one run (a full reduction, a 1-D move): no odometer to allocate
        if pairwise:
            D[d0 + base] += pairwise_sum(S, s0, run)
        elif not take:
            for v in range(run):
                D[d0 + base + v * step] += S[s0 + v]
        elif add:
            for v in range(run):
                D[d0 + v] += S[s0 + base + v * step]
        else:
            for v in range(run):
                D[d0 + v] = S[s0 + base + v * step]
        return
    idx = np.zeros(inner, np.int64)
    cur = base
    for u in range(outer):
        flat = u * run
        if pairwise:
            D[d0 + cur] += pairwise_sum(S, s0 + flat, run)
        elif not take:
            for v in range(run):
                D[d0 + cur + v * step] += S[s0 + flat + v]
        elif add:
            for v in range(run):
                D[d0 + flat + v] += S[s0 + cur + v * step]
        else:
            for v in range(run):
                D[d0 + flat + v] = S[s0 + cur + v * step]
        # the odometer step, inline as in strided_offsets: a helper called once per element
        # costs ~30 ns in Numba (measured; the index array is reference-counted per call)
        d = inner - 1
        while d >= 0:
            idx[d] += 1
            cur += ipool[p + nd + d]
            if idx[d] < ipool[p + d]:
                break
            cur -= ipool[p + nd + d] * idx[d]
            idx[d] = 0
            d -= 1


@_kernel
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


@_kernel
def view_offsets(ipool, p):
    nd = ipool[p]
    return strided_offsets(ipool, p + 1, nd, ipool[p + 1 + 2 * nd])


@_kernel
def view_scatter(S, s0, D, d0, ipool, p):
    nd = ipool[p]
    strided_move(S, s0, D, d0, ipool, p + 1, nd, ipool[p + 1 + 2 * nd], FALSE, TRUE)


@_kernel
def view_take(S, s0, D, d0, ipool, p, add):
    nd = ipool[p]
    strided_move(S, s0, D, d0, ipool, p + 1, nd, ipool[p + 1 + 2 * nd], TRUE, add)


@_kernel
def view_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    if acc:
        view_take(A, pa, D, lo, ipool, p, TRUE)
    else:
        view_take(A, pa, D, lo, ipool, p, FALSE)


@_kernel
def view_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    state[ra] |= 1
    view_scatter(G, lo, D, pa, ipool, p)
    return 0


@_kernel
def view_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    offs = view_offsets(ipool, p)
    for ln in range(tvals.shape[0]):
        for j in range(offs.shape[0]):
            tvals[ln, lo + j] = tvals[ln, pa + offs[j]]


@_kernel
def view_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool):
    for ln in range(tadjs.shape[0]):
        view_scatter(tadjs[ln], lo, tadjs[ln], pa, ipool, p)


@_kernel
def reshape_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    if acc:
        for j in range(n):
            D[lo + j] += A[pa + j]
    else:
        for j in range(n):
            D[lo + j] = A[pa + j]


@_kernel
def reshape_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    state[ra] |= 1
    for j in range(n):
        D[pa + j] += G[lo + j]
    return 0


@_kernel
def reshape_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = tvals[ln, pa + j]


@_kernel
def reshape_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool):
    for ln in range(tadjs.shape[0]):
        for j in range(n):
            tadjs[ln, pa + j] += tadjs[ln, lo + j]


@_kernel
def reduce_offsets(ipool, p):
    return strided_offsets(ipool, p + 1, ipool[p], ZERO)


@_kernel
def sum_scatter(S, s0, D, d0, ipool, p):
    strided_move(S, s0, D, d0, ipool, p + 1, ipool[p], ZERO, FALSE, TRUE)


@_kernel
def sum_take(S, s0, D, d0, ipool, p, add):
    strided_move(S, s0, D, d0, ipool, p + 1, ipool[p], ZERO, TRUE, add)


@_kernel
def sum_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    if not acc:
        for j in range(n):
            D[lo + j] = 0.0
    sum_scatter(A, pa, D, lo, ipool, p)


@_kernel
def sum_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    state[ra] |= 1
    sum_take(G, lo, D, pa, ipool, p, TRUE)
    return 0


@_kernel
def sum_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    if n == 1:
        m = voff[ra + 1] - voff[ra]
        for ln in range(tvals.shape[0]):
            tvals[ln, lo] = 0.0 + pairwise_sum(tvals[ln], pa, m)
        return
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = 0.0
        sum_scatter(tvals[ln], pa, tvals[ln], lo, ipool, p)


@_kernel
def sum_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]]


@_kernel
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


@_kernel
def prod_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    for j in range(n):
        D[lo + j] = 1.0
    for j in range(offs.shape[0]):
        D[lo + offs[j]] *= A[pa + j]


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
def amax_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    extreme_into(A, D, lo, n, pa, p, ipool, TRUE)


@_kernel
def extreme_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(V, pa, lo, n, offs)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + j] += G[lo + offs[j]] * w[j]
    return 0


@_kernel
def extreme_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(val, pa, lo, n, offs)
    for q in range(n):
        tval[lo + q] = 0.0
    for j in range(offs.shape[0]):
        tval[lo + offs[j]] += tval[pa + j] * w[j]


@_kernel
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


@_kernel
def extreme_backward_tangent_lanes(
    adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = reduce_offsets(ipool, p)
    w = extreme_weights(val, pa, lo, n, offs)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]] * w[j]


@_kernel
def amin_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    extreme_into(A, D, lo, n, pa, p, ipool, FALSE)


@_kernel
def matmul_layout(ipool, p):
    """(batch, m, k, n, a's strides over (row, inner), b's over (inner, column))."""
    mm = ipool[p + 1]
    kk = ipool[p + 2]
    nn = ipool[p + 3]
    su, sq = (1, mm) if ipool[p + 4] else (kk, 1)
    tq, tv = (1, kk) if ipool[p + 5] else (nn, 1)
    return ipool[p], mm, kk, nn, su, sq, tq, tv


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
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


@_kernel
def concat_operands(ipool, p):
    """The rows CONCAT reads (listed in its parameters)."""
    k = ipool[p + 2]
    return ipool[p + 3 : p + 3 + k]


@_kernel
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


@_kernel
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


@_kernel
def index_offsets(ipool, p):
    return ipool[p + 1 : p + 1 + ipool[p]]


@_kernel
def gather_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = index_offsets(ipool, p)
    if acc:
        for j in range(offs.shape[0]):
            D[lo + j] += A[pa + offs[j]]
    else:
        for j in range(offs.shape[0]):
            D[lo + j] = A[pa + offs[j]]


@_kernel
def gather_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = index_offsets(ipool, p)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + offs[j]] += G[lo + j]
    return 0


@_kernel
def gather_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    offs = index_offsets(ipool, p)
    for ln in range(tvals.shape[0]):
        for j in range(offs.shape[0]):
            tvals[ln, lo + j] = tvals[ln, pa + offs[j]]


@_kernel
def gather_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool):
    offs = index_offsets(ipool, p)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + offs[j]] += tadjs[ln, lo + j]


@_kernel
def setitem_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    m = ipool[p]
    for j in range(n):
        D[lo + j] = A[pa + j]
    for j in range(m):
        D[lo + ipool[p + 1 + j]] = B[pb + j]


@_kernel
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


@_kernel
def scatter_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = index_offsets(ipool, p)
    if not acc:
        for j in range(n):
            D[lo + j] = 0.0
    for j in range(offs.shape[0]):
        D[lo + offs[j]] += A[pa + j]


@_kernel
def scatter_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = index_offsets(ipool, p)
    state[ra] |= 1
    for j in range(offs.shape[0]):
        D[pa + j] += G[lo + offs[j]]
    return 0


@_kernel
def scatter_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool):
    if n == 1:
        m = voff[ra + 1] - voff[ra]
        for ln in range(tvals.shape[0]):
            tvals[ln, lo] = 0.0 + pairwise_sum(tvals[ln], pa, m)
        return
    offs = index_offsets(ipool, p)
    for ln in range(tvals.shape[0]):
        for j in range(n):
            tvals[ln, lo + j] = 0.0
        for j in range(offs.shape[0]):
            tvals[ln, lo + offs[j]] += tvals[ln, pa + j]


@_kernel
def scatter_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool):
    offs = index_offsets(ipool, p)
    for ln in range(tadjs.shape[0]):
        for j in range(offs.shape[0]):
            tadjs[ln, pa + j] += tadjs[ln, lo + offs[j]]


@_kernel
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


@_kernel
def linrec_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 0.0
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            b = B[pb + q]
            s = a * s + b
            D[lo + q] = s


@_kernel
def linrec_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    gb = rg[rb] != 0
    if gb:
        state[rb] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0  # p_(k+1) R_(k+1)
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = V[lo + (offs[r, m - k] if rev else offs[r, k - 1])] if k > 0 else 0.0
            R = G[lo + q] + carry
            if ga:
                D[pa + q] += R * (s)
            if gb:
                D[pb + q] += R * (1.0)
            carry = R * (a)
    return 0


@_kernel
def linrec_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 0.0
        ts = 0.0
        for k in range(m):
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ts = ts * (a) + tval[pa + q] * (s) + tval[pb + q] * (1.0)
            s = val[lo + q]
            tval[lo + q] = ts


@_kernel
def linrec_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    gb = rg[rb] != 0
    if gb:
        state[rb] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0
        tcarry = 0.0
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ta = tval[pa + q]
            if k > 0:
                before = offs[r, m - k] if rev else offs[r, k - 1]
                s = val[lo + before]
                ts = tval[lo + before]
            else:
                s = 0.0
                ts = 0.0
            R = adj[lo + q] + carry
            tR = tadj[lo + q] + tcarry
            if ga:
                tadj[pa + q] += tR * (s) + R * ((1.0) * ts)
            if gb:
                tadj[pb + q] += tR * (1.0) + R * (0.0)
            carry = R * (a)
            tcarry = tR * (a) + R * ((1.0) * ta)


@_kernel
def cumsum_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 0.0
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = s + a
            D[lo + q] = s


@_kernel
def cumsum_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0  # p_(k+1) R_(k+1)
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            R = G[lo + q] + carry
            if ga:
                D[pa + q] += R * (1.0)
            carry = R * (1.0)
    return 0


@_kernel
def cumsum_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        ts = 0.0
        for k in range(m):
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            ts = ts * (1.0) + tval[pa + q] * (1.0)
            tval[lo + q] = ts


@_kernel
def cumsum_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0
        tcarry = 0.0
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            R = adj[lo + q] + carry
            tR = tadj[lo + q] + tcarry
            if ga:
                tadj[pa + q] += tR * (1.0) + R * (0.0)
            carry = R * (1.0)
            tcarry = tR * (1.0) + R * (0.0)


@_kernel
def cumprod_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 1.0
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = s * a
            D[lo + q] = s


@_kernel
def cumprod_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0  # p_(k+1) R_(k+1)
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = V[lo + (offs[r, m - k] if rev else offs[r, k - 1])] if k > 0 else 1.0
            R = G[lo + q] + carry
            if ga:
                D[pa + q] += R * (s)
            carry = R * (a)
    return 0


@_kernel
def cumprod_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = 1.0
        ts = 0.0
        for k in range(m):
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ts = ts * (a) + tval[pa + q] * (s)
            s = val[lo + q]
            tval[lo + q] = ts


@_kernel
def cumprod_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0
        tcarry = 0.0
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ta = tval[pa + q]
            if k > 0:
                before = offs[r, m - k] if rev else offs[r, k - 1]
                s = val[lo + before]
                ts = tval[lo + before]
            else:
                s = 1.0
                ts = 0.0
            R = adj[lo + q] + carry
            tR = tadj[lo + q] + tcarry
            if ga:
                tadj[pa + q] += tR * (s) + R * ((1.0) * ts)
            carry = R * (a)
            tcarry = tR * (a) + R * ((1.0) * ta)


@_kernel
def logcumsumexp_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = -np.inf
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = np.logaddexp(s, a)
            D[lo + q] = s


@_kernel
def logcumsumexp_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0  # p_(k+1) R_(k+1)
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = A[pa + q]
            s = V[lo + (offs[r, m - k] if rev else offs[r, k - 1])] if k > 0 else -np.inf
            R = G[lo + q] + carry
            if ga:
                D[pa + q] += R * (np.exp(-np.logaddexp(0.0, s - a)))
            carry = R * (np.exp(-np.logaddexp(0.0, -(s - a))))
    return 0


@_kernel
def logcumsumexp_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    for r in range(offs.shape[0]):
        s = -np.inf
        ts = 0.0
        for k in range(m):
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ts = ts * (np.exp(-np.logaddexp(0.0, -(s - a)))) + tval[pa + q] * (np.exp(-np.logaddexp(0.0, s - a)))
            s = val[lo + q]
            tval[lo + q] = ts


@_kernel
def logcumsumexp_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]
    ga = rg[ra] != 0
    if ga:
        state[ra] |= 1
    for r in range(offs.shape[0]):
        carry = 0.0
        tcarry = 0.0
        for j in range(m):
            k = m - 1 - j
            q = offs[r, m - 1 - k] if rev else offs[r, k]
            a = val[pa + q]
            ta = tval[pa + q]
            if k > 0:
                before = offs[r, m - k] if rev else offs[r, k - 1]
                s = val[lo + before]
                ts = tval[lo + before]
            else:
                s = -np.inf
                ts = 0.0
            R = adj[lo + q] + carry
            tR = tadj[lo + q] + tcarry
            if ga:
                tadj[pa + q] += tR * (np.exp(-np.logaddexp(0.0, s - a))) + R * ((-np.exp(-np.logaddexp(0.0, 0.0 - (s - a))) * np.exp(-np.logaddexp(0.0, s - a))) * ts + (-(-1.0 * np.exp(-np.logaddexp(0.0, 0.0 - (s - a)))) * np.exp(-np.logaddexp(0.0, s - a))) * ta)
            carry = R * (np.exp(-np.logaddexp(0.0, -(s - a))))
            tcarry = tR * (np.exp(-np.logaddexp(0.0, -(s - a)))) + R * ((-(-1.0 * np.exp(-np.logaddexp(0.0, 0.0 - -(s - a)))) * np.exp(-np.logaddexp(0.0, -(s - a)))) * ts + (-np.exp(-np.logaddexp(0.0, 0.0 - -(s - a))) * np.exp(-np.logaddexp(0.0, -(s - a)))) * ta)


@_kernel
def backward_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, bottom, kind):
    """Reverse sweep over rows top..bottom, accumulating adjoints of reached rows.

    Stops (returning the row) at a custom op, a freed row or, when ``kind`` is 0, a large
    matmul, so Python can act; ``kind`` 1 does every matmul here.
    Only the ops of COMMON_BACKWARD: (HIT_RARE, row) at any other op, from which
    ``backward_sweep_all`` goes on."""
    i = top
    while i >= bottom:
        s = state[i]
        if (s & 1) == 0:
            i -= 1
            continue
        w = code[i]
        o = w & 255
        if o == 0 or o == 1 or o == 4:
            i -= 1
            continue
        if (s & 2) != 0 or o == 2:
            return HIT_FREED, i
        if o == 3:
            return HIT_CUSTOM, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)
        ulo = np.uint64(lo)
        un = np.uint64(n)

        if o <= 51:
            if rg[ra] == 0:
                i -= 1
                continue
            if (state[ra] & 1) == 0:
                for zj in range(voff[ra], voff[ra + 1]):
                    adj[zj] = 0.0
            state[ra] |= 1
            upa = np.uint64(voff[ra])
            if o == 5:  # NEG
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] -= g
            elif o == 6:  # EXP
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out)
            elif o == 7:  # LOG
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / a)
            elif o == 8:  # LOG1P
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / (1.0 + a))
            elif o == 9:  # EXPM1
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.exp(a))
            elif o == 10:  # SQRT
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += (g / out * 0.5)
            elif o == 11:  # SIN
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.cos(a))
            elif o == 12:  # COS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (-np.sin(a))
            elif o == 13:  # TAN
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (1.0 + out * out)
            elif o == 14:  # TANH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += (g * (1.0 - out * out) if a * a < 1.0 else g * (4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0))
            elif o == 15:  # SIGMOID
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out * np.exp(-np.logaddexp(0.0, a)))
            elif o == 16:  # RELU
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if a > 0.0 else 0.0)
            elif o == 17:  # ABS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (1.0 if a > 0.0 else -1.0 if a < 0.0 else a * 0.0)
            elif o == 36:  # LEAKY_RELU
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if a > 0.0 else g * c)
            elif o == 37:  # ADDS
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] += g
            elif o == 38:  # MULS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] += g * (c)
            elif o == 39:  # RSUBS
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] -= g
            elif o == 40:  # RDIVS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (-out / a)
            elif o == 41:  # POWS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (0.0 if c == 0.0 else g * (c * sf_pow(a, c - 1.0)))
            elif o == 42:  # RPOWS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += ((0.0 if a > 0.0 else g * np.log(c)) if c == 0.0 else g * (out * np.log(1.0 if c == 0.0 else c)))
            elif o == 43:  # CLIP
                c = fp[i]
                c2 = fpool[ip[i]]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if (a >= c) & (a <= c2) else 0.0)
            else:
                return HIT_RARE, i
        elif o <= 64:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
            sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)
            sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)
            ga = rg[ra] != 0
            gb = rg[rb] != 0
            if ga:
                if (state[ra] & 1) == 0:
                    for zj in range(voff[ra], voff[ra + 1]):
                        adj[zj] = 0.0
                state[ra] |= 1
            if gb:
                if (state[rb] & 1) == 0:
                    for zj in range(voff[rb], voff[rb + 1]):
                        adj[zj] = 0.0
                state[rb] |= 1
            if o == 52:  # ADD
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] += g
            elif o == 53:  # SUB
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] -= g
            elif o == 54:  # MUL
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += g * (b)
                    if gb:
                        adj[upb + j * sb] += g * (a)
            elif o == 55:  # DIV
                for j in range(un):
                    g = adj[ulo + j]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += (g / b)
                    if gb:
                        adj[upb + j * sb] += g * (-out / b)
            elif o == 56:  # POW
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g * (b * sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0))
                    if gb:
                        adj[upb + j * sb] += ((0.0 if b > 0.0 else g * np.log(1.0 if b > 0.0 else a)) if a == 0.0 else g * (out * np.log(1.0 if a == 0.0 else a)))
            elif o == 57:  # MAXIMUM
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b > a else g)
                    if gb:
                        adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a > b else g)
            elif o == 58:  # MINIMUM
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b < a else g)
                    if gb:
                        adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a < b else g)
            elif o == 61:  # LOGADDEXP
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += g * (np.exp(-np.logaddexp(0.0, -(a - b))))
                    if gb:
                        adj[upb + j * sb] += g * (np.exp(-np.logaddexp(0.0, a - b)))
            else:
                return HIT_RARE, i
        else:
            p = ip[i]
            if ra >= 0 and rg[ra] == 0 and (rb < 0 or rg[rb] == 0):
                i -= 1
                continue
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            status = 0
            if o != 72 and o != 73:
                for r in (ra, rb):
                    if r >= 0 and rg[r] != 0 and (state[r] & 1) == 0:
                        for zj in range(voff[r], voff[r + 1]):
                            adj[zj] = 0.0
            if o == 65:  # WHERE
                status = where_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 66:  # VIEW
                status = view_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 67:  # RESHAPE
                status = reshape_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 68:  # SUM
                status = sum_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 70:  # AMAX
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 71:  # AMIN
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 72:  # MATMUL
                status = matmul_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 73:  # CONCAT
                for r in concat_operands(ipool, p):
                    if rg[r] != 0 and (state[r] & 1) == 0:
                        for zj in range(voff[r], voff[r + 1]):
                            adj[zj] = 0.0
                status = concat_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 74:  # GATHER
                status = gather_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 75:  # SETITEM
                status = setitem_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            else:
                return HIT_RARE, i
            if status != 0:
                return status, i
        i -= 1
    return DONE, -1


@_kernel
def backward_sweep_all(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, bottom, kind):
    """Reverse sweep over rows top..bottom, accumulating adjoints of reached rows.

    Stops (returning the row) at a custom op, a freed row or, when ``kind`` is 0, a large
    matmul, so Python can act; ``kind`` 1 does every matmul here. Every op."""
    i = top
    while i >= bottom:
        s = state[i]
        if (s & 1) == 0:
            i -= 1
            continue
        w = code[i]
        o = w & 255
        if o == 0 or o == 1 or o == 4:
            i -= 1
            continue
        if (s & 2) != 0 or o == 2:
            return HIT_FREED, i
        if o == 3:
            return HIT_CUSTOM, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)
        ulo = np.uint64(lo)
        un = np.uint64(n)

        if o <= 51:
            if rg[ra] == 0:
                i -= 1
                continue
            if (state[ra] & 1) == 0:
                for zj in range(voff[ra], voff[ra + 1]):
                    adj[zj] = 0.0
            state[ra] |= 1
            upa = np.uint64(voff[ra])
            if o == 5:  # NEG
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] -= g
            elif o == 6:  # EXP
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out)
            elif o == 7:  # LOG
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / a)
            elif o == 8:  # LOG1P
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / (1.0 + a))
            elif o == 9:  # EXPM1
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.exp(a))
            elif o == 10:  # SQRT
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += (g / out * 0.5)
            elif o == 11:  # SIN
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.cos(a))
            elif o == 12:  # COS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (-np.sin(a))
            elif o == 13:  # TAN
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (1.0 + out * out)
            elif o == 14:  # TANH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += (g * (1.0 - out * out) if a * a < 1.0 else g * (4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0))
            elif o == 15:  # SIGMOID
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out * np.exp(-np.logaddexp(0.0, a)))
            elif o == 16:  # RELU
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if a > 0.0 else 0.0)
            elif o == 17:  # ABS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (1.0 if a > 0.0 else -1.0 if a < 0.0 else a * 0.0)
            elif o == 18:  # ARCSIN
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / np.sqrt(1.0 - a * a))
            elif o == 19:  # ARCCOS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (-(g / np.sqrt(1.0 - a * a)))
            elif o == 20:  # ARCTAN
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / (1.0 + a * a))
            elif o == 21:  # ARCSINH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / np.sqrt(a * a + 1.0))
            elif o == 22:  # ARCCOSH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * ((a - 1.0) ** (-0.5) * (a + 1.0) ** (-0.5))
            elif o == 23:  # ARCTANH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / (1.0 - a * a))
            elif o == 24:  # SINH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.cosh(a))
            elif o == 25:  # COSH
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (np.sinh(a))
            elif o == 26:  # LOG2
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / a * 1.4426950408889634)
            elif o == 27:  # LOG10
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g / a * 0.43429448190325176)
            elif o == 28:  # EXP2
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out * 0.6931471805599453)
            elif o == 29:  # CBRT
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out ** (-2.0) / 3.0)
            elif o == 30:  # SINC
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += (g * ((a if np.abs(a) < 0.1 else 0.0) * (-3.289868133696453 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))))))) if np.abs(a) < 0.1 else g * ((np.cos(3.141592653589793 * a) - out) / (1.0 if np.abs(a) < 0.1 else a)))
            elif o == 31:  # SIGN
                for j in range(un):
                    g = adj[ulo + j]
                    pass
            elif o == 32:  # FLOOR
                for j in range(un):
                    g = adj[ulo + j]
                    pass
            elif o == 33:  # CEIL
                for j in range(un):
                    g = adj[ulo + j]
                    pass
            elif o == 34:  # RINT
                for j in range(un):
                    g = adj[ulo + j]
                    pass
            elif o == 35:  # TRUNC
                for j in range(un):
                    g = adj[ulo + j]
                    pass
            elif o == 36:  # LEAKY_RELU
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if a > 0.0 else g * c)
            elif o == 37:  # ADDS
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] += g
            elif o == 38:  # MULS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] += g * (c)
            elif o == 39:  # RSUBS
                for j in range(un):
                    g = adj[ulo + j]
                    adj[upa + j] -= g
            elif o == 40:  # RDIVS
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (-out / a)
            elif o == 41:  # POWS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (0.0 if c == 0.0 else g * (c * sf_pow(a, c - 1.0)))
            elif o == 42:  # RPOWS
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += ((0.0 if a > 0.0 else g * np.log(c)) if c == 0.0 else g * (out * np.log(1.0 if c == 0.0 else c)))
            elif o == 43:  # CLIP
                c = fp[i]
                c2 = fpool[ip[i]]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += (g if (a >= c) & (a <= c2) else 0.0)
            elif o == 44:  # GAMMA
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (out * sf_digamma(a))
            elif o == 45:  # GAMMALN
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (sf_digamma(a))
            elif o == 46:  # DIGAMMA
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (sf_polygamma(1.0, a))
            elif o == 47:  # POLYGAMMA
                c = fp[i]
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (sf_polygamma(c + 1.0, a))
            elif o == 48:  # ERF
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (1.1283791670955126 * np.exp(-(a * a)))
            elif o == 49:  # ERFC
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j]
                    adj[upa + j] += g * (-1.1283791670955126 * np.exp(-(a * a)))
            elif o == 50:  # ERFINV
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (0.8862269254527579 * np.exp(out * out))
            elif o == 51:  # ERFCINV
                for j in range(un):
                    g = adj[ulo + j]
                    out = val[ulo + j]
                    adj[upa + j] += g * (-0.8862269254527579 * np.exp(out * out))
            else:
                return BAD_OP, i
        elif o <= 64:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
            sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)
            sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)
            ga = rg[ra] != 0
            gb = rg[rb] != 0
            if ga:
                if (state[ra] & 1) == 0:
                    for zj in range(voff[ra], voff[ra + 1]):
                        adj[zj] = 0.0
                state[ra] |= 1
            if gb:
                if (state[rb] & 1) == 0:
                    for zj in range(voff[rb], voff[rb + 1]):
                        adj[zj] = 0.0
                state[rb] |= 1
            if o == 52:  # ADD
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] += g
            elif o == 53:  # SUB
                for j in range(un):
                    g = adj[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] -= g
            elif o == 54:  # MUL
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += g * (b)
                    if gb:
                        adj[upb + j * sb] += g * (a)
            elif o == 55:  # DIV
                for j in range(un):
                    g = adj[ulo + j]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += (g / b)
                    if gb:
                        adj[upb + j * sb] += g * (-out / b)
            elif o == 56:  # POW
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g * (b * sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0))
                    if gb:
                        adj[upb + j * sb] += ((0.0 if b > 0.0 else g * np.log(1.0 if b > 0.0 else a)) if a == 0.0 else g * (out * np.log(1.0 if a == 0.0 else a)))
            elif o == 57:  # MAXIMUM
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b > a else g)
                    if gb:
                        adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a > b else g)
            elif o == 58:  # MINIMUM
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b < a else g)
                    if gb:
                        adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a < b else g)
            elif o == 59:  # ARCTAN2
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += (g * ((0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))))
                    if gb:
                        adj[upb + j * sb] += g * (-(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))
            elif o == 60:  # HYPOT
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += (g * ((0.0 if out == 0.0 else a) / (1.0 if out == 0.0 else out)))
                    if gb:
                        adj[upb + j * sb] += (g * ((0.0 if out == 0.0 else b) / (1.0 if out == 0.0 else out)))
            elif o == 61:  # LOGADDEXP
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += g * (np.exp(-np.logaddexp(0.0, -(a - b))))
                    if gb:
                        adj[upb + j * sb] += g * (np.exp(-np.logaddexp(0.0, a - b)))
            elif o == 62:  # LOGADDEXP2
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    if ga:
                        adj[upa + j * sa] += g * (np.exp(-np.logaddexp(0.0, -(0.6931471805599453 * (a - b)))))
                    if gb:
                        adj[upb + j * sb] += g * (np.exp(-np.logaddexp(0.0, 0.6931471805599453 * (a - b))))
            elif o == 63:  # REMAINDER
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] += g * (-np.floor((a - out) / b + 0.5))
            elif o == 64:  # FMOD
                for j in range(un):
                    g = adj[ulo + j]
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    out = val[ulo + j]
                    if ga:
                        adj[upa + j * sa] += g
                    if gb:
                        adj[upb + j * sb] += g * (-np.floor((a - out) / b + 0.5))
            else:
                return BAD_OP, i
        else:
            p = ip[i]
            if ra >= 0 and rg[ra] == 0 and (rb < 0 or rg[rb] == 0):
                i -= 1
                continue
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            status = 0
            if o != 72 and o != 73:
                for r in (ra, rb):
                    if r >= 0 and rg[r] != 0 and (state[r] & 1) == 0:
                        for zj in range(voff[r], voff[r + 1]):
                            adj[zj] = 0.0
            if o == 65:  # WHERE
                status = where_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 66:  # VIEW
                status = view_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 67:  # RESHAPE
                status = reshape_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 68:  # SUM
                status = sum_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 69:  # PROD
                status = prod_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 70:  # AMAX
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 71:  # AMIN
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 72:  # MATMUL
                status = matmul_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 73:  # CONCAT
                for r in concat_operands(ipool, p):
                    if rg[r] != 0 and (state[r] & 1) == 0:
                        for zj in range(voff[r], voff[r + 1]):
                            adj[zj] = 0.0
                status = concat_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 74:  # GATHER
                status = gather_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 75:  # SETITEM
                status = setitem_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 76:  # SCATTER
                status = scatter_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 77:  # LINREC
                status = linrec_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 78:  # CUMSUM
                status = cumsum_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 79:  # CUMPROD
                status = cumprod_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            elif o == 80:  # LOGCUMSUMEXP
                status = logcumsumexp_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)
            else:
                return BAD_OP, i
            if status != 0:
                return status, i
        i -= 1
    return DONE, -1


@_kernel
def forward_sweep(code, ip, fp, voff, ipool, fpool, val, start, stop):
    """Recompute rows start..stop-1 in place in ``val`` (LEAF/CONST rows are inputs).

    Returns (DONE, -1), (GUARD_FAILED, row) at the first guard whose outcome changed, or
    (BAD_OP, row) at a custom op (Python computes its outputs, then the replay goes on)."""
    for i in range(start, stop):
        w = code[i]
        o = w & 255
        if o == 0 or o == 1 or o == 2:
            continue
        if o == 3:
            return BAD_OP, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)
        ulo = np.uint64(lo)
        un = np.uint64(n)
        if o == 4:
            if not guard_holds(ip, fp, voff, ipool, val, i, lo, n, ra, rb):
                return GUARD_FAILED, i
        elif o <= 51:
            upa = np.uint64(voff[ra])
            if o == 5:  # NEG
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = -a
            elif o == 6:  # EXP
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.exp(a)
            elif o == 7:  # LOG
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.log(a)
            elif o == 8:  # LOG1P
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.log1p(a)
            elif o == 9:  # EXPM1
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.expm1(a)
            elif o == 10:  # SQRT
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.sqrt(a)
            elif o == 11:  # SIN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.sin(a)
            elif o == 12:  # COS
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.cos(a)
            elif o == 13:  # TAN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.tan(a)
            elif o == 14:  # TANH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.tanh(a)
            elif o == 15:  # SIGMOID
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.exp(-np.logaddexp(0.0, -a))
            elif o == 16:  # RELU
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = a if a >= 0.0 or a != a else 0.0
            elif o == 17:  # ABS
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.abs(a)
            elif o == 18:  # ARCSIN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arcsin(a)
            elif o == 19:  # ARCCOS
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arccos(a)
            elif o == 20:  # ARCTAN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arctan(a)
            elif o == 21:  # ARCSINH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arcsinh(a)
            elif o == 22:  # ARCCOSH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arccosh(a)
            elif o == 23:  # ARCTANH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.arctanh(a)
            elif o == 24:  # SINH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.sinh(a)
            elif o == 25:  # COSH
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.cosh(a)
            elif o == 26:  # LOG2
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.log2(a)
            elif o == 27:  # LOG10
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.log10(a)
            elif o == 28:  # EXP2
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.exp2(a)
            elif o == 29:  # CBRT
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.cbrt(a)
            elif o == 30:  # SINC
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.sinc(a)
            elif o == 31:  # SIGN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = 1.0 if a > 0.0 else -1.0 if a < 0.0 else a * 0.0
            elif o == 32:  # FLOOR
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.floor(a)
            elif o == 33:  # CEIL
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.ceil(a)
            elif o == 34:  # RINT
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.rint(a)
            elif o == 35:  # TRUNC
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = np.trunc(a)
            elif o == 36:  # LEAKY_RELU
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = a if a > 0.0 else a * c
            elif o == 37:  # ADDS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = a + c
            elif o == 38:  # MULS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = a * c
            elif o == 39:  # RSUBS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = c - a
            elif o == 40:  # RDIVS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = c / a
            elif o == 41:  # POWS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_pow(a, c)
            elif o == 42:  # RPOWS
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_pow(c, a)
            elif o == 43:  # CLIP
                c = fp[i]
                c2 = fpool[ip[i]]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = (a if a >= c or a != a else c) if (a if a >= c or a != a else c) <= c2 or (a if a >= c or a != a else c) != (a if a >= c or a != a else c) else c2
            elif o == 44:  # GAMMA
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_gamma(a)
            elif o == 45:  # GAMMALN
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_gammaln(a)
            elif o == 46:  # DIGAMMA
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_digamma(a)
            elif o == 47:  # POLYGAMMA
                c = fp[i]
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_polygamma(c, a)
            elif o == 48:  # ERF
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = math.erf(a)
            elif o == 49:  # ERFC
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = math.erfc(a)
            elif o == 50:  # ERFINV
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_erfinv(a)
            elif o == 51:  # ERFCINV
                for j in range(un):
                    a = val[upa + j]
                    val[ulo + j] = sf_erfcinv(a)
            else:
                return BAD_OP, i
        elif o <= 64:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
            sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)
            sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)
            if o == 52:  # ADD
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a + b
            elif o == 53:  # SUB
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a - b
            elif o == 54:  # MUL
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a * b
            elif o == 55:  # DIV
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a / b
            elif o == 56:  # POW
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = sf_pow(a, b)
            elif o == 57:  # MAXIMUM
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a if a >= b or a != a else b
            elif o == 58:  # MINIMUM
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = a if a <= b or a != a else b
            elif o == 59:  # ARCTAN2
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.arctan2(a, b)
            elif o == 60:  # HYPOT
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.hypot(a, b)
            elif o == 61:  # LOGADDEXP
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.logaddexp(a, b)
            elif o == 62:  # LOGADDEXP2
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.logaddexp2(a, b)
            elif o == 63:  # REMAINDER
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.remainder(a, b)
            elif o == 64:  # FMOD
                for j in range(un):
                    a = val[upa + j * sa]
                    b = val[upb + j * sb]
                    val[ulo + j] = np.fmod(a, b)
            else:
                return BAD_OP, i
        else:
            p = ip[i]
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            if o == 65:  # WHERE
                where_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 66:  # VIEW
                view_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 67:  # RESHAPE
                reshape_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 68:  # SUM
                sum_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 69:  # PROD
                prod_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 70:  # AMAX
                amax_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 71:  # AMIN
                amin_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 72:  # MATMUL
                matmul_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 73:  # CONCAT
                concat_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 74:  # GATHER
                gather_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 75:  # SETITEM
                setitem_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 76:  # SCATTER
                scatter_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 77:  # LINREC
                linrec_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 78:  # CUMSUM
                cumsum_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 79:  # CUMPROD
                cumprod_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 80:  # LOGCUMSUMEXP
                logcumsumexp_forward(val, val, val, val, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            else:
                return BAD_OP, i
    return DONE, -1


@_kernel
def tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, stop):
    """Forward mode over rows start..stop-1: each row's tangents (one per lane, i.e. per row
    of ``tvals``) from its operands' tangents, the row dispatched once for all lanes.

    The caller zeroes ``tvals``/``flag`` and seeds the input rows; rows none of whose operands
    carries a tangent are skipped.  Stops at a custom op (Python runs its jvp)."""
    nl = tvals.shape[0]
    for i in range(start, stop):
        w = code[i]
        o = w & 255
        if o <= 4:
            if o == 3:
                return HIT_CUSTOM, i
            continue
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)
        ulo = np.uint64(lo)
        un = np.uint64(n)
        if o <= 64:
            ha = flag[ra] != 0
            hb = rb >= 0 and flag[rb] != 0
            if not ha and not hb:
                continue
            flag[i] = 1
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb]) if rb >= 0 else np.uint64(0)
            if o <= 51:
                if o <= 16:
                    known = tangent_sweep_unary_0(o, val, tvals, ulo, un, upa, ha, nl)
                elif o <= 28:
                    known = tangent_sweep_unary_1(o, val, tvals, ulo, un, upa, ha, nl)
                elif o <= 42:
                    known = tangent_sweep_unary_2(o, i, fp, val, tvals, ulo, un, upa, ha, nl)
                else:
                    known = tangent_sweep_unary_3(o, i, fp, ip, fpool, val, tvals, ulo, un, upa, ha, nl)
                if not known:
                    return BAD_OP, i
            else:
                sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)
                sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)
                if o <= 59:
                    known = tangent_sweep_binary_0(o, val, tvals, ulo, un, upa, upb, sa, sb, ha, hb, nl)
                else:
                    known = tangent_sweep_binary_1(o, val, tvals, ulo, un, upa, upb, sa, sb, ha, hb, nl)
                if not known:
                    return BAD_OP, i
        else:
            p = ip[i]
            if o == 73:  # CONCAT
                rows = concat_operands(ipool, p)
                has = False
                for q in range(rows.shape[0]):
                    if flag[rows[q]] != 0:
                        has = True
            else:
                has = (ra >= 0 and flag[ra] != 0) or (rb >= 0 and flag[rb] != 0)
            if not has:
                continue
            flag[i] = 1
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            if o == 65:  # WHERE
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    where_forward(tval, tval, val, tval, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 66:  # VIEW
                view_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 67:  # RESHAPE
                reshape_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 68:  # SUM
                sum_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 69:  # PROD
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    prod_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 70:  # AMAX
                extreme_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 71:  # AMIN
                extreme_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 72:  # MATMUL
                matmul_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 73:  # CONCAT
                for r in concat_operands(ipool, p):
                    if flag[r] == 0:
                        zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    concat_forward(tval, tval, val, tval, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 74:  # GATHER
                gather_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 75:  # SETITEM
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    setitem_forward(tval, tval, val, tval, FALSE, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 76:  # SCATTER
                scatter_tangent_lanes(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)
            elif o == 77:  # LINREC
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    linrec_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 78:  # CUMSUM
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    cumsum_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 79:  # CUMPROD
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    cumprod_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool)
            elif o == 80:  # LOGCUMSUMEXP
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    logcumsumexp_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool)
            else:
                return BAD_OP, i
    return DONE, -1


@_kernel
def hvp_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, tvals, flag, adj, tadjs, top, bottom):
    """Reverse sweep carrying the adjoints and, per lane, their tangents over a tape whose
    tangents ``tangent_sweep`` computed: forward-over-reverse, so ``tadjs[ln]`` of the inputs
    is H v_l.  Each row is dispatched once for all lanes."""
    i = top
    while i >= bottom:
        s = state[i]
        if (s & 1) == 0:
            i -= 1
            continue
        w = code[i]
        o = w & 255
        if o == 0 or o == 1 or o == 4:
            i -= 1
            continue
        if (s & 2) != 0 or o == 2:
            return HIT_FREED, i
        if o == 3:
            return HIT_CUSTOM, i
        lo = voff[i]
        n = voff[i + 1] - lo
        ra = ((w >> 8) & 0xFFFFFFF) - 1
        rb = (w >> 36) - 1
        # unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)
        ulo = np.uint64(lo)
        un = np.uint64(n)
        ha = ra >= 0 and flag[ra] != 0
        hb = rb >= 0 and flag[rb] != 0
        hout = flag[i] != 0
        nl = tvals.shape[0]
        if o <= 51:
            if rg[ra] == 0:
                i -= 1
                continue
            if (state[ra] & 1) == 0:
                for zj in range(voff[ra], voff[ra + 1]):
                    adj[zj] = 0.0
                zero_lanes(tadjs, voff, ra)
            state[ra] |= 1
            upa = np.uint64(voff[ra])
            if o <= 12:
                known = hvp_sweep_unary_0(o, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl)
            elif o <= 19:
                known = hvp_sweep_unary_1(o, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl)
            elif o <= 27:
                known = hvp_sweep_unary_2(o, val, adj, tvals, tadjs, ulo, un, upa, ha, nl)
            elif o <= 39:
                known = hvp_sweep_unary_3(o, i, fp, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl)
            elif o <= 46:
                known = hvp_sweep_unary_4(o, i, fp, ip, fpool, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl)
            else:
                known = hvp_sweep_unary_5(o, i, fp, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl)
            if not known:
                return BAD_OP, i
        elif o <= 64:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
            sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)
            sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)
            ga = rg[ra] != 0
            gb = rg[rb] != 0
            if ga:
                if (state[ra] & 1) == 0:
                    for zj in range(voff[ra], voff[ra + 1]):
                        adj[zj] = 0.0
                    zero_lanes(tadjs, voff, ra)
                state[ra] |= 1
            if gb:
                if (state[rb] & 1) == 0:
                    for zj in range(voff[rb], voff[rb + 1]):
                        adj[zj] = 0.0
                    zero_lanes(tadjs, voff, rb)
                state[rb] |= 1
            if o <= 55:
                known = hvp_sweep_binary_0(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl)
            elif o <= 59:
                known = hvp_sweep_binary_1(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl)
            elif o <= 62:
                known = hvp_sweep_binary_2(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl)
            else:
                known = hvp_sweep_binary_3(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl)
            if not known:
                return BAD_OP, i
        else:
            p = ip[i]
            if ra >= 0 and rg[ra] == 0 and (rb < 0 or rg[rb] == 0):
                i -= 1
                continue
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            status = 0

            if o == 65:  # WHERE
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = where_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    where_backward(tadj, val, val, val, tadj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
            elif o == 66:  # VIEW
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = view_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                view_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 67:  # RESHAPE
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = reshape_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                reshape_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 68:  # SUM
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = sum_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                sum_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 69:  # PROD
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = prod_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    prod_backward_tangent(adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 70:  # AMAX
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                extreme_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 71:  # AMIN
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = extreme_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                extreme_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 72:  # MATMUL
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = matmul_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                matmul_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 73:  # CONCAT
                for r in concat_operands(ipool, p):
                    if rg[r] != 0 and (state[r] & 1) == 0:
                        for zj in range(voff[r], voff[r + 1]):
                            adj[zj] = 0.0
                        zero_lanes(tadjs, voff, r)
                status = concat_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    concat_backward(tadj, val, val, val, tadj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
            elif o == 74:  # GATHER
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = gather_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                gather_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 75:  # SETITEM
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = setitem_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    setitem_backward(tadj, val, val, val, tadj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
            elif o == 76:  # SCATTER
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = scatter_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                scatter_backward_tangent_lanes(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 77:  # LINREC
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = linrec_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    linrec_backward_tangent(adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 78:  # CUMSUM
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = cumsum_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    cumsum_backward_tangent(adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 79:  # CUMPROD
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = cumprod_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    cumprod_backward_tangent(adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            elif o == 80:  # LOGCUMSUMEXP
                for r in (ra, rb):
                    if r >= 0:
                        if rg[r] != 0 and (state[r] & 1) == 0:
                            for zj in range(voff[r], voff[r + 1]):
                                adj[zj] = 0.0
                            zero_lanes(tadjs, voff, r)
                status = logcumsumexp_backward(adj, val, val, val, adj, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, ONE)
                for r in (ra, rb):
                    if r >= 0:
                        if flag[r] == 0:
                            zero_lanes(tvals, voff, r)
                for ln in range(nl):
                    tval = tvals[ln]
                    tadj = tadjs[ln]
                    logcumsumexp_backward_tangent(adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)
            else:
                return BAD_OP, i
            if status != 0:
                return status, i
        i -= 1
    return DONE, -1


@_kernel
def tangent_sweep_unary_0(o, val, tvals, ulo, un, upa, ha, nl):
    """tangent_sweep: the rows of NEG, EXP, LOG, LOG1P, EXPM1, SQRT, SIN, COS, TAN, TANH, SIGMOID, RELU (False for any other op)."""
    if o == 5:  # NEG
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                if ha:
                    t -= tvals[ln, upa + j]
                tvals[ln, ulo + j] = t
    elif o == 6:  # EXP
        for j in range(un):
            out = val[ulo + j]
            d0 = out
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 7:  # LOG
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / a) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 8:  # LOG1P
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / (1.0 + a)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 9:  # EXPM1
        for j in range(un):
            a = val[upa + j]
            d0 = np.exp(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 10:  # SQRT
        for j in range(un):
            out = val[ulo + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / out * 0.5) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 11:  # SIN
        for j in range(un):
            a = val[upa + j]
            d0 = np.cos(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 12:  # COS
        for j in range(un):
            a = val[upa + j]
            d0 = -np.sin(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 13:  # TAN
        for j in range(un):
            out = val[ulo + j]
            d0 = 1.0 + out * out
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 14:  # TANH
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] * (1.0 - out * out) if a * a < 1.0 else tvals[ln, upa + j] * (4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 15:  # SIGMOID
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            d0 = out * np.exp(-np.logaddexp(0.0, a))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 16:  # RELU
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] if a > 0.0 else 0.0) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def tangent_sweep_unary_1(o, val, tvals, ulo, un, upa, ha, nl):
    """tangent_sweep: the rows of ABS, ARCSIN, ARCCOS, ARCTAN, ARCSINH, ARCCOSH, ARCTANH, SINH, COSH, LOG2, LOG10, EXP2 (False for any other op)."""
    if o == 17:  # ABS
        for j in range(un):
            a = val[upa + j]
            d0 = 1.0 if a > 0.0 else -1.0 if a < 0.0 else a * 0.0
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 18:  # ARCSIN
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / np.sqrt(1.0 - a * a)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 19:  # ARCCOS
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (-(tvals[ln, upa + j] / np.sqrt(1.0 - a * a))) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 20:  # ARCTAN
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / (1.0 + a * a)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 21:  # ARCSINH
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / np.sqrt(a * a + 1.0)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 22:  # ARCCOSH
        for j in range(un):
            a = val[upa + j]
            d0 = (a - 1.0) ** (-0.5) * (a + 1.0) ** (-0.5)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 23:  # ARCTANH
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / (1.0 - a * a)) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 24:  # SINH
        for j in range(un):
            a = val[upa + j]
            d0 = np.cosh(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 25:  # COSH
        for j in range(un):
            a = val[upa + j]
            d0 = np.sinh(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 26:  # LOG2
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / a * 1.4426950408889634) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 27:  # LOG10
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] / a * 0.43429448190325176) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 28:  # EXP2
        for j in range(un):
            out = val[ulo + j]
            d0 = out * 0.6931471805599453
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def tangent_sweep_unary_2(o, i, fp, val, tvals, ulo, un, upa, ha, nl):
    """tangent_sweep: the rows of CBRT, SINC, SIGN, FLOOR, CEIL, RINT, TRUNC, LEAKY_RELU, ADDS, MULS, RSUBS, RDIVS, POWS, RPOWS (False for any other op)."""
    if o == 29:  # CBRT
        for j in range(un):
            out = val[ulo + j]
            d0 = out ** (-2.0) / 3.0
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 30:  # SINC
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] * ((a if np.abs(a) < 0.1 else 0.0) * (-3.289868133696453 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))))))) if np.abs(a) < 0.1 else tvals[ln, upa + j] * ((np.cos(3.141592653589793 * a) - out) / (1.0 if np.abs(a) < 0.1 else a))) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 31:  # SIGN
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                tvals[ln, ulo + j] = t
    elif o == 32:  # FLOOR
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                tvals[ln, ulo + j] = t
    elif o == 33:  # CEIL
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                tvals[ln, ulo + j] = t
    elif o == 34:  # RINT
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                tvals[ln, ulo + j] = t
    elif o == 35:  # TRUNC
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                tvals[ln, ulo + j] = t
    elif o == 36:  # LEAKY_RELU
        c = fp[i]
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] if a > 0.0 else tvals[ln, upa + j] * c) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 37:  # ADDS
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j]
                tvals[ln, ulo + j] = t
    elif o == 38:  # MULS
        c = fp[i]
        for j in range(un):
            d0 = c
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 39:  # RSUBS
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                if ha:
                    t -= tvals[ln, upa + j]
                tvals[ln, ulo + j] = t
    elif o == 40:  # RDIVS
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            d0 = -out / a
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 41:  # POWS
        c = fp[i]
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (0.0 if c == 0.0 else tvals[ln, upa + j] * (c * sf_pow(a, c - 1.0))) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 42:  # RPOWS
        c = fp[i]
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += ((0.0 if a > 0.0 else tvals[ln, upa + j] * np.log(c)) if c == 0.0 else tvals[ln, upa + j] * (out * np.log(1.0 if c == 0.0 else c))) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def tangent_sweep_unary_3(o, i, fp, ip, fpool, val, tvals, ulo, un, upa, ha, nl):
    """tangent_sweep: the rows of CLIP, GAMMA, GAMMALN, DIGAMMA, POLYGAMMA, ERF, ERFC, ERFINV, ERFCINV (False for any other op)."""
    if o == 43:  # CLIP
        c = fp[i]
        c2 = fpool[ip[i]]
        for j in range(un):
            a = val[upa + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j] if (a >= c) & (a <= c2) else 0.0) if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 44:  # GAMMA
        for j in range(un):
            a = val[upa + j]
            out = val[ulo + j]
            d0 = out * sf_digamma(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 45:  # GAMMALN
        for j in range(un):
            a = val[upa + j]
            d0 = sf_digamma(a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 46:  # DIGAMMA
        for j in range(un):
            a = val[upa + j]
            d0 = sf_polygamma(1.0, a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 47:  # POLYGAMMA
        c = fp[i]
        for j in range(un):
            a = val[upa + j]
            d0 = sf_polygamma(c + 1.0, a)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 48:  # ERF
        for j in range(un):
            a = val[upa + j]
            d0 = 1.1283791670955126 * np.exp(-(a * a))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 49:  # ERFC
        for j in range(un):
            a = val[upa + j]
            d0 = -1.1283791670955126 * np.exp(-(a * a))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 50:  # ERFINV
        for j in range(un):
            out = val[ulo + j]
            d0 = 0.8862269254527579 * np.exp(out * out)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 51:  # ERFCINV
        for j in range(un):
            out = val[ulo + j]
            d0 = -0.8862269254527579 * np.exp(out * out)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j] * d0 if tvals[ln, upa + j] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def tangent_sweep_binary_0(o, val, tvals, ulo, un, upa, upb, sa, sb, ha, hb, nl):
    """tangent_sweep: the rows of ADD, SUB, MUL, DIV, POW, MAXIMUM, MINIMUM, ARCTAN2 (False for any other op)."""
    if o == 52:  # ADD
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa]
                if hb:
                    t += tvals[ln, upb + j * sb]
                tvals[ln, ulo + j] = t
    elif o == 53:  # SUB
        for j in range(un):
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa]
                if hb:
                    t -= tvals[ln, upb + j * sb]
                tvals[ln, ulo + j] = t
    elif o == 54:  # MUL
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            d0 = b
            d1 = a
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa] * d0 if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 55:  # DIV
        for j in range(un):
            b = val[upb + j * sb]
            out = val[ulo + j]
            d1 = -out / b
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j * sa] / b) if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 56:  # POW
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            d0 = b * sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa] * d0 if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += ((0.0 if b > 0.0 else tvals[ln, upb + j * sb] * np.log(1.0 if b > 0.0 else a)) if a == 0.0 else tvals[ln, upb + j * sb] * (out * np.log(1.0 if a == 0.0 else a))) if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 57:  # MAXIMUM
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j * sa] * 0.5 if a == b else 0.0 if b > a else tvals[ln, upa + j * sa]) if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += (tvals[ln, upb + j * sb] * 0.5 if a == b else 0.0 if a > b else tvals[ln, upb + j * sb]) if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 58:  # MINIMUM
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j * sa] * 0.5 if a == b else 0.0 if b < a else tvals[ln, upa + j * sa]) if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += (tvals[ln, upb + j * sb] * 0.5 if a == b else 0.0 if a < b else tvals[ln, upb + j * sb]) if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 59:  # ARCTAN2
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            d1 = -(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j * sa] * ((0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def tangent_sweep_binary_1(o, val, tvals, ulo, un, upa, upb, sa, sb, ha, hb, nl):
    """tangent_sweep: the rows of HYPOT, LOGADDEXP, LOGADDEXP2, REMAINDER, FMOD (False for any other op)."""
    if o == 60:  # HYPOT
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += (tvals[ln, upa + j * sa] * ((0.0 if out == 0.0 else a) / (1.0 if out == 0.0 else out))) if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += (tvals[ln, upb + j * sb] * ((0.0 if out == 0.0 else b) / (1.0 if out == 0.0 else out))) if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 61:  # LOGADDEXP
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            d0 = np.exp(-np.logaddexp(0.0, -(a - b)))
            d1 = np.exp(-np.logaddexp(0.0, a - b))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa] * d0 if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 62:  # LOGADDEXP2
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            d0 = np.exp(-np.logaddexp(0.0, -(0.6931471805599453 * (a - b))))
            d1 = np.exp(-np.logaddexp(0.0, 0.6931471805599453 * (a - b)))
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa] * d0 if tvals[ln, upa + j * sa] != 0.0 else 0.0
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 63:  # REMAINDER
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            d1 = -np.floor((a - out) / b + 0.5)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa]
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    elif o == 64:  # FMOD
        for j in range(un):
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            d1 = -np.floor((a - out) / b + 0.5)
            for ln in range(nl):
                t = 0.0
                if ha:
                    t += tvals[ln, upa + j * sa]
                if hb:
                    t += tvals[ln, upb + j * sb] * d1 if tvals[ln, upb + j * sb] != 0.0 else 0.0
                tvals[ln, ulo + j] = t
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_0(o, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl):
    """hvp_sweep: the rows of NEG, EXP, LOG, LOG1P, EXPM1, SQRT, SIN, COS (False for any other op)."""
    if o == 5:  # NEG
        for j in range(un):
            g = adj[ulo + j]
            d = -1.0
            adj[upa + j] += g * d
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 6:  # EXP
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = out
            adj[upa + j] += g * d
            e0 = g * (1.0) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 7:  # LOG
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / a)
            e0 = (-(g / a) / a) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / a) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 8:  # LOG1P
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / (1.0 + a))
            e0 = (-(g / (1.0 + a)) / (1.0 + a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / (1.0 + a)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 9:  # EXPM1
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = np.exp(a)
            adj[upa + j] += g * d
            e0 = g * (np.exp(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 10:  # SQRT
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            adj[upa + j] += (g / out * 0.5)
            e0 = (-(g / out * 0.5) / out) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / out * 0.5) if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 11:  # SIN
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = np.cos(a)
            adj[upa + j] += g * d
            e0 = g * (-np.sin(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 12:  # COS
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = -np.sin(a)
            adj[upa + j] += g * d
            e0 = g * (-np.cos(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_1(o, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl):
    """hvp_sweep: the rows of TAN, TANH, SIGMOID, RELU, ABS, ARCSIN, ARCCOS (False for any other op)."""
    if o == 13:  # TAN
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = 1.0 + out * out
            adj[upa + j] += g * d
            e0 = g * (out + out) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 14:  # TANH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            adj[upa + j] += (g * (1.0 - out * out) if a * a < 1.0 else g * (4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0))
            e0 = (0.0 if a * a < 1.0 else g * ((4.0 * (-2.0 * (1.0 if a > 0.0 else -1.0) * np.exp(-2.0 * (a if a > 0.0 else -a))) - 4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0 * (2.0 * (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** (2.0 - 1.0) * (-2.0 * (1.0 if a > 0.0 else -1.0) * np.exp(-2.0 * (a if a > 0.0 else -a))))) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0)) if g != 0.0 else 0.0
            e1 = (g * -(out + out) if a * a < 1.0 else 0.0) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s * (1.0 - out * out) if a * a < 1.0 else s * (4.0 * np.exp(-2.0 * (a if a > 0.0 else -a)) / (1.0 + np.exp(-2.0 * (a if a > 0.0 else -a))) ** 2.0)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e1
                tadjs[ln, upa + j] += s
    elif o == 15:  # SIGMOID
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            d = out * np.exp(-np.logaddexp(0.0, a))
            adj[upa + j] += g * d
            e0 = g * (out * (-np.exp(-np.logaddexp(0.0, 0.0 - a)) * np.exp(-np.logaddexp(0.0, a)))) if g != 0.0 else 0.0
            e1 = g * (np.exp(-np.logaddexp(0.0, a))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e1
                tadjs[ln, upa + j] += s
    elif o == 16:  # RELU
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g if a > 0.0 else 0.0)
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s if a > 0.0 else 0.0) if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 17:  # ABS
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = 1.0 if a > 0.0 else -1.0 if a < 0.0 else a * 0.0
            adj[upa + j] += g * d
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 18:  # ARCSIN
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / np.sqrt(1.0 - a * a))
            e0 = g * (-(1.0 / np.sqrt(1.0 - a * a) * (-(a + a) * (0.5 / np.sqrt(1.0 - a * a)))) / np.sqrt(1.0 - a * a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / np.sqrt(1.0 - a * a)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 19:  # ARCCOS
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (-(g / np.sqrt(1.0 - a * a)))
            e0 = g * (-(-1.0 / np.sqrt(1.0 - a * a) * (-(a + a) * (0.5 / np.sqrt(1.0 - a * a)))) / np.sqrt(1.0 - a * a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (-(s / np.sqrt(1.0 - a * a))) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_2(o, val, adj, tvals, tadjs, ulo, un, upa, ha, nl):
    """hvp_sweep: the rows of ARCTAN, ARCSINH, ARCCOSH, ARCTANH, SINH, COSH, LOG2, LOG10 (False for any other op)."""
    if o == 20:  # ARCTAN
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / (1.0 + a * a))
            e0 = g * (-(1.0 / (1.0 + a * a) * (a + a)) / (1.0 + a * a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / (1.0 + a * a)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 21:  # ARCSINH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / np.sqrt(a * a + 1.0))
            e0 = g * (-(1.0 / np.sqrt(a * a + 1.0) * ((a + a) * (0.5 / np.sqrt(a * a + 1.0)))) / np.sqrt(a * a + 1.0)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / np.sqrt(a * a + 1.0)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 22:  # ARCCOSH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = (a - 1.0) ** (-0.5) * (a + 1.0) ** (-0.5)
            adj[upa + j] += g * d
            e0 = (g * ((0.0 if -0.5 == 0.0 else -0.5 * (a - 1.0) ** (-0.5 - 1.0)) * (a + 1.0) ** (-0.5) + (a - 1.0) ** (-0.5) * (0.0 if -0.5 == 0.0 else -0.5 * (a + 1.0) ** (-0.5 - 1.0)))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 23:  # ARCTANH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / (1.0 - a * a))
            e0 = g * (-(1.0 / (1.0 - a * a) * -(a + a)) / (1.0 - a * a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / (1.0 - a * a)) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 24:  # SINH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = np.cosh(a)
            adj[upa + j] += g * d
            e0 = g * (np.sinh(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 25:  # COSH
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = np.sinh(a)
            adj[upa + j] += g * d
            e0 = g * (np.cosh(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 26:  # LOG2
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / a * 1.4426950408889634)
            e0 = (-(g / a * 1.4426950408889634) / a) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / a * 1.4426950408889634) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 27:  # LOG10
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g / a * 0.43429448190325176)
            e0 = (-(g / a * 0.43429448190325176) / a) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s / a * 0.43429448190325176) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_3(o, i, fp, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl):
    """hvp_sweep: the rows of EXP2, CBRT, SINC, SIGN, FLOOR, CEIL, RINT, TRUNC, LEAKY_RELU, ADDS, MULS, RSUBS (False for any other op)."""
    if o == 28:  # EXP2
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = out * 0.6931471805599453
            adj[upa + j] += g * d
            e0 = g * (0.6931471805599453) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 29:  # CBRT
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = out ** (-2.0) / 3.0
            adj[upa + j] += g * d
            e0 = (g * ((0.0 if -2.0 == 0.0 else -2.0 * out ** (-2.0 - 1.0)) / 3.0)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 30:  # SINC
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            adj[upa + j] += (g * ((a if np.abs(a) < 0.1 else 0.0) * (-3.289868133696453 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))))))) if np.abs(a) < 0.1 else g * ((np.cos(3.141592653589793 * a) - out) / (1.0 if np.abs(a) < 0.1 else a)))
            e0 = (g * ((1.0 if np.abs(a) < 0.1 else 0.0) * (-3.289868133696453 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05)))))) + (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))))) + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05)))) + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))) + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05)) + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05) + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (((1.0 if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) + (a if np.abs(a) < 0.1 else 0.0) * (1.0 if np.abs(a) < 0.1 else 0.0)) * -9.766223126318928e-05))))))) if np.abs(a) < 0.1 else g * ((3.141592653589793 * -np.sin(3.141592653589793 * a) - (np.cos(3.141592653589793 * a) - out) / (1.0 if np.abs(a) < 0.1 else a) * (0.0 if np.abs(a) < 0.1 else 1.0)) / (1.0 if np.abs(a) < 0.1 else a))) if g != 0.0 else 0.0
            e1 = (0.0 if np.abs(a) < 0.1 else -(g / (1.0 if np.abs(a) < 0.1 else a))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s * ((a if np.abs(a) < 0.1 else 0.0) * (-3.289868133696453 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (3.246969701133414 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-1.144510944732505 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.20918278254123832 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (-0.023460810354558225 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * (0.001781145516372851 + (a if np.abs(a) < 0.1 else 0.0) * (a if np.abs(a) < 0.1 else 0.0) * -9.766223126318928e-05))))))) if np.abs(a) < 0.1 else s * ((np.cos(3.141592653589793 * a) - out) / (1.0 if np.abs(a) < 0.1 else a))) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e1
                tadjs[ln, upa + j] += s
    elif o == 31:  # SIGN
        for j in range(un):
            g = adj[ulo + j]
    elif o == 32:  # FLOOR
        for j in range(un):
            g = adj[ulo + j]
    elif o == 33:  # CEIL
        for j in range(un):
            g = adj[ulo + j]
    elif o == 34:  # RINT
        for j in range(un):
            g = adj[ulo + j]
    elif o == 35:  # TRUNC
        for j in range(un):
            g = adj[ulo + j]
    elif o == 36:  # LEAKY_RELU
        c = fp[i]
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g if a > 0.0 else g * c)
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s if a > 0.0 else s * c) if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 37:  # ADDS
        for j in range(un):
            g = adj[ulo + j]
            d = 1.0
            adj[upa + j] += g * d
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 38:  # MULS
        c = fp[i]
        for j in range(un):
            g = adj[ulo + j]
            d = c
            adj[upa + j] += g * d
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 39:  # RSUBS
        for j in range(un):
            g = adj[ulo + j]
            d = -1.0
            adj[upa + j] += g * d
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_4(o, i, fp, ip, fpool, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl):
    """hvp_sweep: the rows of RDIVS, POWS, RPOWS, CLIP, GAMMA, GAMMALN, DIGAMMA (False for any other op)."""
    if o == 40:  # RDIVS
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            d = -out / a
            adj[upa + j] += g * d
            e0 = g * (-(-out / a) / a) if g != 0.0 else 0.0
            e1 = (-(g / a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e1
                tadjs[ln, upa + j] += s
    elif o == 41:  # POWS
        c = fp[i]
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (0.0 if c == 0.0 else g * (c * sf_pow(a, c - 1.0)))
            e0 = (0.0 if c == 0.0 else g * (c * (0.0 if c - 1.0 == 0.0 else (c - 1.0) * sf_pow(a, c - 1.0 - 1.0)))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (0.0 if c == 0.0 else s * (c * sf_pow(a, c - 1.0))) if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 42:  # RPOWS
        c = fp[i]
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            adj[upa + j] += ((0.0 if a > 0.0 else g * np.log(c)) if c == 0.0 else g * (out * np.log(1.0 if c == 0.0 else c)))
            e0 = (0.0 if c == 0.0 else g * np.log(1.0 if c == 0.0 else c)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = ((0.0 if a > 0.0 else s * np.log(c)) if c == 0.0 else s * (out * np.log(1.0 if c == 0.0 else c))) if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 43:  # CLIP
        c = fp[i]
        c2 = fpool[ip[i]]
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            adj[upa + j] += (g if (a >= c) & (a <= c2) else 0.0)
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = (s if (a >= c) & (a <= c2) else 0.0) if s != 0.0 else 0.0
                tadjs[ln, upa + j] += s
    elif o == 44:  # GAMMA
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            out = val[ulo + j]
            d = out * sf_digamma(a)
            adj[upa + j] += g * d
            e0 = g * (out * sf_polygamma(1.0, a)) if g != 0.0 else 0.0
            e1 = g * (sf_digamma(a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e1
                tadjs[ln, upa + j] += s
    elif o == 45:  # GAMMALN
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = sf_digamma(a)
            adj[upa + j] += g * d
            e0 = g * (sf_polygamma(1.0, a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 46:  # DIGAMMA
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = sf_polygamma(1.0, a)
            adj[upa + j] += g * d
            e0 = g * (sf_polygamma(1.0 + 1.0, a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_unary_5(o, i, fp, val, adj, tvals, tadjs, ulo, un, upa, ha, hout, nl):
    """hvp_sweep: the rows of POLYGAMMA, ERF, ERFC, ERFINV, ERFCINV (False for any other op)."""
    if o == 47:  # POLYGAMMA
        c = fp[i]
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = sf_polygamma(c + 1.0, a)
            adj[upa + j] += g * d
            e0 = g * (sf_polygamma(c + 1.0 + 1.0, a)) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 48:  # ERF
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = 1.1283791670955126 * np.exp(-(a * a))
            adj[upa + j] += g * d
            e0 = g * (1.1283791670955126 * (-(a + a) * np.exp(-(a * a)))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 49:  # ERFC
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j]
            d = -1.1283791670955126 * np.exp(-(a * a))
            adj[upa + j] += g * d
            e0 = g * (-1.1283791670955126 * (-(a + a) * np.exp(-(a * a)))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if ha and tvals[ln, upa + j] != 0.0:
                    s += tvals[ln, upa + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 50:  # ERFINV
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = 0.8862269254527579 * np.exp(out * out)
            adj[upa + j] += g * d
            e0 = g * (0.8862269254527579 * ((out + out) * np.exp(out * out))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    elif o == 51:  # ERFCINV
        for j in range(un):
            g = adj[ulo + j]
            out = val[ulo + j]
            d = -0.8862269254527579 * np.exp(out * out)
            adj[upa + j] += g * d
            e0 = g * (-0.8862269254527579 * ((out + out) * np.exp(out * out))) if g != 0.0 else 0.0
            for ln in range(nl):
                s = tadjs[ln, ulo + j]
                s = s * d if s != 0.0 else 0.0
                if hout and tvals[ln, ulo + j] != 0.0:
                    s += tvals[ln, ulo + j] * e0
                tadjs[ln, upa + j] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_binary_0(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl):
    """hvp_sweep: the rows of ADD, SUB, MUL, DIV (False for any other op)."""
    if o == 52:  # ADD
        for j in range(un):
            g = adj[ulo + j]
            if ga:
                d = 1.0
                adj[upa + j * sa] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = 1.0
                adj[upb + j * sb] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upb + j * sb] += s
    elif o == 53:  # SUB
        for j in range(un):
            g = adj[ulo + j]
            if ga:
                d = 1.0
                adj[upa + j * sa] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = -1.0
                adj[upb + j * sb] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upb + j * sb] += s
    elif o == 54:  # MUL
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                d = b
                adj[upa + j * sa] += g * d
                e0 = g * (1.0) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = a
                adj[upb + j * sb] += g * d
                e0 = g * (1.0) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    tadjs[ln, upb + j * sb] += s
    elif o == 55:  # DIV
        for j in range(un):
            g = adj[ulo + j]
            b = val[upb + j * sb]
            out = val[ulo + j]
            if ga:
                adj[upa + j * sa] += (g / b)
                e0 = (-(g / b) / b) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s / b) if s != 0.0 else 0.0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = -out / b
                adj[upb + j * sb] += g * d
                e0 = g * (-(-out / b) / b) if g != 0.0 else 0.0
                e1 = (-(g / b)) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e0
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e1
                    tadjs[ln, upb + j * sb] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_binary_1(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl):
    """hvp_sweep: the rows of POW, MAXIMUM, MINIMUM, ARCTAN2 (False for any other op)."""
    if o == 56:  # POW
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            if ga:
                d = b * sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0)
                adj[upa + j * sa] += g * d
                e0 = g * (b * ((0.0 if b - 1.0 == 0.0 else (b - 1.0) * sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0 - 1.0)) * (0.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else 1.0))) if g != 0.0 else 0.0
                e1 = (g * (sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0) + b * (sf_pow(1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a, b - 1.0) * np.log(1.0 if ((1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a) == 0.0) & (b - 1.0 > 0.0) else 1.0 if (b == 0.0) & ((a == 0.0) | (a != a)) else a)))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upa + j * sa] += s
            if gb:
                adj[upb + j * sb] += ((0.0 if b > 0.0 else g * np.log(1.0 if b > 0.0 else a)) if a == 0.0 else g * (out * np.log(1.0 if a == 0.0 else a)))
                e0 = ((0.0 if b > 0.0 else g * ((0.0 if b > 0.0 else 1.0) * (1.0 / (1.0 if b > 0.0 else a)))) if a == 0.0 else g * (out * ((0.0 if a == 0.0 else 1.0) * (1.0 / (1.0 if a == 0.0 else a))))) if g != 0.0 else 0.0
                e1 = (0.0 if a == 0.0 else g * np.log(1.0 if a == 0.0 else a)) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = ((0.0 if b > 0.0 else s * np.log(1.0 if b > 0.0 else a)) if a == 0.0 else s * (out * np.log(1.0 if a == 0.0 else a))) if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e1
                    tadjs[ln, upb + j * sb] += s
    elif o == 57:  # MAXIMUM
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b > a else g)
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * 0.5 if a == b else 0.0 if b > a else s) if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a > b else g)
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * 0.5 if a == b else 0.0 if a > b else s) if s != 0.0 else 0.0
                    tadjs[ln, upb + j * sb] += s
    elif o == 58:  # MINIMUM
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                adj[upa + j * sa] += (g * 0.5 if a == b else 0.0 if b < a else g)
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * 0.5 if a == b else 0.0 if b < a else s) if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                adj[upb + j * sb] += (g * 0.5 if a == b else 0.0 if a < b else g)
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * 0.5 if a == b else 0.0 if a < b else s) if s != 0.0 else 0.0
                    tadjs[ln, upb + j * sb] += s
    elif o == 59:  # ARCTAN2
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                adj[upa + j * sa] += (g * ((0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))))
                e0 = g * ((-((0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else a / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) - (0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else a / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))) if g != 0.0 else 0.0
                e1 = g * ((((0.0 if np.hypot(a, b) == 0.0 else 1.0) - (0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else b / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) - (0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else b / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * ((0.0 if np.hypot(a, b) == 0.0 else b) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = -(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))
                adj[upb + j * sb] += g * d
                e0 = g * (((-(0.0 if np.hypot(a, b) == 0.0 else 1.0) - -(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else a / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) - -(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else a / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))) if g != 0.0 else 0.0
                e1 = g * ((-(-(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else b / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) - -(0.0 if np.hypot(a, b) == 0.0 else a) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)) * (0.0 if np.hypot(a, b) == 0.0 else b / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b)))) / (1.0 if np.hypot(a, b) == 0.0 else np.hypot(a, b))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upb + j * sb] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_binary_2(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl):
    """hvp_sweep: the rows of HYPOT, LOGADDEXP, LOGADDEXP2 (False for any other op)."""
    if o == 60:  # HYPOT
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            if ga:
                adj[upa + j * sa] += (g * ((0.0 if out == 0.0 else a) / (1.0 if out == 0.0 else out)))
                e0 = (g * ((0.0 if out == 0.0 else 1.0) / (1.0 if out == 0.0 else out))) if g != 0.0 else 0.0
                e1 = g * (-((0.0 if out == 0.0 else a) / (1.0 if out == 0.0 else out) * (0.0 if out == 0.0 else 1.0)) / (1.0 if out == 0.0 else out)) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * ((0.0 if out == 0.0 else a) / (1.0 if out == 0.0 else out))) if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e1
                    tadjs[ln, upa + j * sa] += s
            if gb:
                adj[upb + j * sb] += (g * ((0.0 if out == 0.0 else b) / (1.0 if out == 0.0 else out)))
                e0 = (g * ((0.0 if out == 0.0 else 1.0) / (1.0 if out == 0.0 else out))) if g != 0.0 else 0.0
                e1 = g * (-((0.0 if out == 0.0 else b) / (1.0 if out == 0.0 else out) * (0.0 if out == 0.0 else 1.0)) / (1.0 if out == 0.0 else out)) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = (s * ((0.0 if out == 0.0 else b) / (1.0 if out == 0.0 else out))) if s != 0.0 else 0.0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e0
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e1
                    tadjs[ln, upb + j * sb] += s
    elif o == 61:  # LOGADDEXP
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                d = np.exp(-np.logaddexp(0.0, -(a - b)))
                adj[upa + j * sa] += g * d
                e0 = g * (-(-1.0 * np.exp(-np.logaddexp(0.0, 0.0 - -(a - b)))) * np.exp(-np.logaddexp(0.0, -(a - b)))) if g != 0.0 else 0.0
                e1 = g * (-np.exp(-np.logaddexp(0.0, 0.0 - -(a - b))) * np.exp(-np.logaddexp(0.0, -(a - b)))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = np.exp(-np.logaddexp(0.0, a - b))
                adj[upb + j * sb] += g * d
                e0 = g * (-np.exp(-np.logaddexp(0.0, 0.0 - (a - b))) * np.exp(-np.logaddexp(0.0, a - b))) if g != 0.0 else 0.0
                e1 = g * (-(-1.0 * np.exp(-np.logaddexp(0.0, 0.0 - (a - b)))) * np.exp(-np.logaddexp(0.0, a - b))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upb + j * sb] += s
    elif o == 62:  # LOGADDEXP2
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            if ga:
                d = np.exp(-np.logaddexp(0.0, -(0.6931471805599453 * (a - b))))
                adj[upa + j * sa] += g * d
                e0 = g * (-(-0.6931471805599453 * np.exp(-np.logaddexp(0.0, 0.0 - -(0.6931471805599453 * (a - b))))) * np.exp(-np.logaddexp(0.0, -(0.6931471805599453 * (a - b))))) if g != 0.0 else 0.0
                e1 = g * (-(-(0.6931471805599453 * -1.0) * np.exp(-np.logaddexp(0.0, 0.0 - -(0.6931471805599453 * (a - b))))) * np.exp(-np.logaddexp(0.0, -(0.6931471805599453 * (a - b))))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = np.exp(-np.logaddexp(0.0, 0.6931471805599453 * (a - b)))
                adj[upb + j * sb] += g * d
                e0 = g * (-(0.6931471805599453 * np.exp(-np.logaddexp(0.0, 0.0 - 0.6931471805599453 * (a - b)))) * np.exp(-np.logaddexp(0.0, 0.6931471805599453 * (a - b)))) if g != 0.0 else 0.0
                e1 = g * (-(0.6931471805599453 * -1.0 * np.exp(-np.logaddexp(0.0, 0.0 - 0.6931471805599453 * (a - b)))) * np.exp(-np.logaddexp(0.0, 0.6931471805599453 * (a - b)))) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    tadjs[ln, upb + j * sb] += s
    else:
        return False
    return True


@_kernel
def hvp_sweep_binary_3(o, val, adj, tvals, tadjs, ulo, un, upa, upb, sa, sb, ga, gb, ha, hb, hout, nl):
    """hvp_sweep: the rows of REMAINDER, FMOD (False for any other op)."""
    if o == 63:  # REMAINDER
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            if ga:
                d = 1.0
                adj[upa + j * sa] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = -np.floor((a - out) / b + 0.5)
                adj[upb + j * sb] += g * d
                e0 = g * (-0.0) if g != 0.0 else 0.0
                e1 = g * (-0.0) if g != 0.0 else 0.0
                e2 = g * (-0.0) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e2
                    tadjs[ln, upb + j * sb] += s
    elif o == 64:  # FMOD
        for j in range(un):
            g = adj[ulo + j]
            a = val[upa + j * sa]
            b = val[upb + j * sb]
            out = val[ulo + j]
            if ga:
                d = 1.0
                adj[upa + j * sa] += g * d
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    tadjs[ln, upa + j * sa] += s
            if gb:
                d = -np.floor((a - out) / b + 0.5)
                adj[upb + j * sb] += g * d
                e0 = g * (-0.0) if g != 0.0 else 0.0
                e1 = g * (-0.0) if g != 0.0 else 0.0
                e2 = g * (-0.0) if g != 0.0 else 0.0
                for ln in range(nl):
                    s = tadjs[ln, ulo + j]
                    s = s * d if s != 0.0 else 0.0
                    if ha and tvals[ln, upa + j * sa] != 0.0:
                        s += tvals[ln, upa + j * sa] * e0
                    if hb and tvals[ln, upb + j * sb] != 0.0:
                        s += tvals[ln, upb + j * sb] * e1
                    if hout and tvals[ln, ulo + j] != 0.0:
                        s += tvals[ln, ulo + j] * e2
                    tadjs[ln, upb + j * sb] += s
    else:
        return False
    return True


@_kernel
def guard_holds(ip, fp, voff, ipool, val, i, lo, n, ra, rb):
    """A GUARD row: ``ipool[ip[i]]`` is the kind (0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=, 6 pin: the
    value must not change); the row's own value holds the recorded outcome (0/1) or, for a
    pin, the recorded value.  True when the current values give the recorded outcome."""
    kind = ipool[ip[i]]
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
            return False
    return True


@_kernel
def gather_rows(buf, voff, rows, marks, out):
    """out = the values of ``rows`` in ``buf`` (concatenated), 0 for a row whose mark lacks
    bit 1 (no tangent, or not reached by the sweep)."""
    k = 0
    for q in range(rows.shape[0]):
        r = rows[q]
        lo = voff[r]
        has = (marks[r] & 1) != 0
        for j in range(voff[r + 1] - lo):
            out[k] = buf[lo + j] if has else 0.0
            k += 1


@_kernel
def jacobian_sweeps(
    code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, out_rows, seeds, in_rows, result
):
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
        status, row = backward_sweep_all(
            code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, ZERO, ONE
        )
        if status != DONE:
            return status, row
        gather_rows(adj, voff, in_rows, state, result[r])
    return DONE, -1


@_kernel
def zero_lanes(buf, voff, r):
    """Zero row r's values in every lane of ``buf``."""
    lo = voff[r]
    hi = voff[r + 1]
    for ln in range(buf.shape[0]):
        for j in range(lo, hi):
            buf[ln, j] = 0.0


@_kernel
def gather_lanes(buf, voff, rows, marks, result):
    """gather_rows for every lane: result[l] from lane l of ``buf``."""
    for ln in range(result.shape[0]):
        gather_rows(buf[ln], voff, rows, marks, result[ln])


@_kernel
def seed_tangents(voff, tvals, flag, in_rows, v):
    """Lay lane l's direction v[l] over the input rows (an input given twice gets the sum).
    Only these rows of ``tvals`` are cleared: the sweeps write or clear every other row they
    read."""
    for q in range(in_rows.shape[0]):
        zero_lanes(tvals, voff, in_rows[q])
        flag[in_rows[q]] = 1
    for ln in range(v.shape[0]):
        k = 0
        for q in range(in_rows.shape[0]):
            ri = in_rows[q]
            lo = voff[ri]
            for j in range(voff[ri + 1] - lo):
                tvals[ln, lo + j] += v[ln, k]
                k += 1


@_kernel
def jvp_sweeps(
    code, ip, fp, voff, ipool, fpool, val, tvals, flag, top, in_rows, tangents, out_rows, result
):
    """One tangent sweep with a lane per row of ``tangents`` (laid over the concatenated
    values of ``in_rows``; ``flag`` zeroed, ``tvals`` need not be); result[l] gets the
    tangents of ``out_rows`` (forward-mode Jacobian)."""
    start = in_rows.min() if in_rows.shape[0] else top + 1
    seed_tangents(voff, tvals, flag, in_rows, tangents)
    status, row = tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, top + 1)
    if status != DONE:
        return status, row
    gather_lanes(tvals, voff, out_rows, flag, result)  # (flag is 0 or 1 per row)
    return DONE, -1


@_kernel
def hessian_sweeps(
    code,
    ip,
    fp,
    voff,
    rg,
    state,
    ipool,
    fpool,
    val,
    tvals,
    flag,
    adj,
    tadjs,
    top,
    out_row,
    in_rows,
    tangents,
    result,
):
    """Hessian-vector products of the scalar ``out_row`` for every row of ``tangents``: one
    tangent sweep and one reverse sweep over (adjoint, tangents of the adjoint), each row
    dispatched once for all directions (lanes).  ``flag`` and ``adj`` come zeroed; ``tvals``
    and ``tadjs`` need not be (rows are cleared as the sweeps reach them)."""
    start = in_rows.min() if in_rows.shape[0] else top + 1
    seed_tangents(voff, tvals, flag, in_rows, tangents)
    status, row = tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, top + 1)
    if status != DONE:
        return status, row
    for j in range(top + 1):
        state[j] &= 2
    adj[voff[out_row]] = 1.0
    zero_lanes(tadjs, voff, out_row)
    state[out_row] |= 1
    status, row = hvp_sweep(
        code, ip, fp, voff, rg, state, ipool, fpool, val, tvals, flag, adj, tadjs, top, ZERO
    )
    if status != DONE:
        return status, row
    gather_lanes(tadjs, voff, in_rows, state, result)
    return DONE, -1


@_kernel
def grad_into(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, nrows, out_row, x, g):
    """One replay: x -> val[:x.size] (the input LEAF rows), forward sweep, backward sweep from
    the scalar ``out_row``; the gradient of the first g.size input values goes to g."""
    for j in range(x.shape[0]):
        val[j] = x[j]
    status, row = forward_sweep(code, ip, fp, voff, ipool, fpool, val, ZERO, nrows)
    if status != DONE:
        return status, row
    end = max(voff[out_row + 1], g.shape[0])
    for j in range(end):
        adj[j] = 0.0
    for j in range(out_row + 1):
        state[j] = 0
    adj[voff[out_row]] = 1.0
    state[out_row] = 1
    status, row = backward_sweep_all(
        code, ip, fp, voff, rg, state, ipool, fpool, val, adj, out_row, ZERO, ONE
    )
    if status != DONE:
        return status, row
    for j in range(g.shape[0]):
        g[j] = adj[j]
    return DONE, -1


@_kernel_parallel
def grad_batch(
    code, ip, fp, voff, rg, ipool, fpool, val0, nrows, out_row, X, G, values, fails, nthreads
):
    """grad_into for every row of X, in parallel over the batch (never over the tape): one
    contiguous chunk per thread, each with its own value/adjoint/state buffer, and the GIL
    released for the whole call (like every sweep here: other Python threads run meanwhile).
    fails[b] is -1 or the row that stopped item b."""
    nb = X.shape[0]
    nt = max(1, min(nb, nthreads))
    for c in prange(nt):
        b0 = c * nb // nt
        b1 = (c + 1) * nb // nt
        val = val0.copy()
        adj = np.zeros(val0.shape[0])
        state = np.zeros(code.shape[0], np.int8)
        for b in range(b0, b1):
            status, row = grad_into(
                code, ip, fp, voff, rg, state, ipool, fpool, val, adj, nrows, out_row, X[b], G[b]
            )
            fails[b] = -1 if status == DONE else row
            values[b] = val[voff[out_row]]


@_kernel
def replay_grad(arrays, x):
    """Gradient of a trace at the flat input ``x``, callable from user ``@njit`` code.

    ``arrays`` is ``tr.njit_grad[1]``; raises RetraceRequired when a guard fails (the trace's
    Python side names the source line: call ``tr.grad`` there)."""
    code, ip, fp, voff, rg, state, ipool, fpool, val, adj, meta = arrays
    if meta[3] != KERNELS_ID:
        raise RuntimeError(
            "tapegrad replay_grad: this compiled code comes from another tapegrad "
            "version (a stale Numba cache of your @njit function): delete the "
            "__pycache__ folder next to your code and run again"
        )
    g = np.empty(meta[2])
    status, row = grad_into(
        code, ip, fp, voff, rg, state, ipool, fpool, val, adj, meta[0], meta[1], x, g
    )
    if status == GUARD_FAILED:
        raise RetraceRequired(
            "tapegrad replay_grad: the input takes another branch than the "
            "recorded one; call tr.grad(x) from Python to see where"
        )
    if status != DONE:
        raise RuntimeError("tapegrad replay_grad: the trace holds a row that cannot be replayed")
    return g


def _global_names(code):
    """The global names a function's code (and the code nested in it) reads."""
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    return names


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _LAZY_LOCK:
        made = globals()
        order, todo, seen = [], [name], set()
        while todo:  # name and every kernel it calls, not made yet
            n = todo.pop()
            if n in seen or n in made:
                continue
            seen.add(n)
            order.append(n)
            todo.extend(k for k in _global_names(_LAZY[n][0].__code__) if k in _LAZY)
        new = {}
        for n in order:
            fn, parallel = _LAZY[n]
            new[n] = njit(cache=True, nogil=True, error_model="numpy", parallel=parallel)(fn)
        # every kernel name calls first, together (one dict update), then name itself
        made.update({n: d for n, d in new.items() if n != name})
        if name in new:
            made[name] = new[name]
    return made[name]


if _PLAIN is None:  # (the plain-Python twin keeps its functions as they are)
    for _name in _LAZY:
        del globals()[_name]
    del _name
