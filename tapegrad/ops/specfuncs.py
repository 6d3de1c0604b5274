"""Scalar special functions for the formula language (gammaln, digamma, polygamma, erfinv ...).

Plain Python on floats, written in the subset Numba compiles: the generator copies their
source into the generated kernels (``@njit``), and ``formula`` calls the same functions on
Python floats and, vectorized, on arrays.  One source, so eager values, compiled sweeps and
replayed traces agree.  Values follow SciPy's conventions at poles and infinities.
"""

import math

import numpy as np


def sf_whole(x):
    """Is x a whole number?  Every float of magnitude 2^52 or more is; ``math.floor`` of one
    beyond 2^63 would overflow the integer Numba makes of it (no overflow in Python)."""
    return abs(x) >= 4503599627370496.0 or x == math.floor(x)


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


def sf_gammaln(x):
    """log |Gamma(x)|: +inf at the poles, as SciPy (and -inf at -inf)."""
    if x != x or x == math.inf or x == -math.inf:
        return x
    if x <= 0.0 and sf_whole(x):
        return math.inf
    if x > 1e305:  # Stirling's leading terms; overflow to inf as IEEE
        return x * (math.log(x) - 1.0)
    return math.lgamma(x)


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


def sf_erf_newton(x, y):
    """y refined so that erf(y) = x (Halley steps; |x| <= 1/2)."""
    for _ in range(6):
        step = (math.erf(y) - x) / (1.1283791670955126 * math.exp(-y * y))
        step = step / (1.0 + y * step)
        y -= step
        if abs(step) <= 1e-17 + 1e-16 * abs(y):
            break
    return y


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


HELPERS = (
    sf_whole,
    sf_pow,
    sf_gamma,
    sf_gammaln,
    sf_digamma,
    sf_hurwitz_zeta,
    sf_pi_cot_derivative,
    sf_polygamma,
    sf_erf_newton,
    sf_erfcinv_small,
    sf_erfinv,
    sf_erfcinv,
)
