"""``scipy.special`` with SciPy's names and signatures, differentiable on Tensors.

``import tapegrad.scipy.special as tsp``.  On plain numbers and arrays every function is
SciPy's own call.  With a Tensor argument:

- native tape ops (compiled sweeps; a ``tg.trace`` replays them without Python): gamma,
  gammaln, digamma/psi, polygamma, erf, erfc, erfinv, erfcinv, expit; composites of native
  ops: logit, rgamma, gammasgn, beta, betaln, multigammaln, xlogy and xlog1py (in y),
  logsumexp, softmax, log_softmax, ndtr, log_ndtr, ndtri;
- Python-side ops (a custom ``tg.Function`` whose forward calls SciPy and whose backward is a
  Tensor expression of the next derivative, so every order and forward mode work; not
  replayable by ``tg.trace``): the Bessel functions j0, j1, jn, jv, y0, y1, yn, yv, i0, i1,
  iv, ive (in x; the order is not differentiable), k0, k1, k0e, k1e, erfcx, zeta (in q),
  betainc (in x), gammainc and gammaincc (in x), and xlogy / xlog1py when x needs a
  gradient.

Arguments that cannot be differentiated (a Bessel order, the shape parameters of betainc and
gammainc) raise NotImplementedError naming them when given a Tensor that requires grad.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.function import Function
from ..core import functions as O
from ..core import gaussian as _gaussian
from ..core.tensor import refuse_non_real, value_of
from ..tensor_class import Tensor
from . import require_scipy

_sp = require_scipy("scipy.special")
_si = require_scipy("scipy.integrate")

__all__ = [
    "logsumexp",
    "expit",
    "logit",
    "erf",
    "erfc",
    "erfinv",
    "erfcinv",
    "gamma",
    "gammaln",
    "gammasgn",
    "rgamma",
    "digamma",
    "psi",
    "polygamma",
    "multigammaln",
    "beta",
    "betaln",
    "betainc",
    "gammainc",
    "gammaincc",
    "xlogy",
    "xlog1py",
    "entr",
    "rel_entr",
    "kl_div",
    "softmax",
    "log_softmax",
    "j0",
    "j1",
    "jn",
    "jv",
    "y0",
    "y1",
    "yn",
    "yv",
    "i0",
    "i1",
    "iv",
    "ive",
    "i0e",
    "i1e",
    "ndtr",
    "log_ndtr",
    "ndtri",
    "erfcx",
    "k0",
    "k1",
    "k0e",
    "k1e",
    "zeta",
]


def _tensor_in(*args) -> bool:
    return any(isinstance(a, Tensor) for a in args)


def _value(a):
    return a.data if isinstance(a, Tensor) else a


def _constant(fn: str, name: str, a):
    """The value of argument ``name`` of ``fn`` taken as a constant; a complex or non-number
    one is refused (a float64 cast would drop the imaginary part, read None as NaN)."""
    v = _value(a)
    refuse_non_real(v, np.asarray(v).dtype, f"tapegrad.scipy.special.{fn}: {name}")
    return v


def _no_grad_arg(fn: str, name: str, a, hint: str = "") -> Any:
    """The value of an argument ``fn`` cannot differentiate in; NotImplementedError when it is
    a Tensor that requires grad (dropping that gradient would be silently wrong)."""
    if isinstance(a, Tensor):
        if a.requires_grad:
            raise NotImplementedError(
                f"tapegrad.scipy.special.{fn}: the derivative in {name} is not implemented; "
                f"pass {name} as a number, an array or a Tensor that does not require grad"
                f"{hint}"
            )
        return a.data
    return _constant(fn, name, a)


def _no_kwargs(fn: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(
            f"tapegrad.scipy.special.{fn}: ufunc keywords {sorted(kwargs)} are not "
            "supported on Tensors"
        )


def _unary(name: str, tensor_fn, example: str):
    sp_fn = getattr(_sp, name)

    def f(x, **kwargs):
        if isinstance(x, Tensor):
            _no_kwargs(name, kwargs)
            return tensor_fn(x)
        return sp_fn(x, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"SciPy's ``{name}``, differentiable at any order on Tensors.\n\n"
        f"    >>> import tapegrad as tg\n    >>> import tapegrad.scipy.special as tsp\n"
        f"{example}"
    )
    return f


erf = _unary(
    "erf", O.erf, "    >>> round(tg.grad(tsp.erf)(0.0), 12)  # 2 / sqrt(pi)\n    1.128379167096\n"
)
erfc = _unary("erfc", O.erfc, "    >>> round(tg.grad(tsp.erfc)(0.0), 12)\n    -1.128379167096\n")
erfinv = _unary(
    "erfinv",
    O.erfinv,
    "    >>> round(tg.grad(tsp.erfinv)(0.0), 12)  # sqrt(pi) / 2\n    0.886226925453\n",
)
erfcinv = _unary(
    "erfcinv", O.erfcinv, "    >>> round(tg.grad(tsp.erfcinv)(1.0), 12)\n    -0.886226925453\n"
)
gamma = _unary(
    "gamma",
    O.gamma,
    "    >>> round(tg.grad(tsp.gamma)(1.0), 12)  # -Euler's gamma\n    -0.577215664902\n",
)
gammaln = _unary(
    "gammaln", O.gammaln, "    >>> round(tg.grad(tsp.gammaln)(1.0), 12)\n    -0.577215664902\n"
)
digamma = _unary(
    "digamma",
    O.digamma,
    "    >>> round(tg.grad(tsp.digamma)(1.0), 12)  # pi^2 / 6\n    1.644934066848\n",
)
psi = _unary("psi", O.digamma, "    >>> round(tg.grad(tsp.psi)(1.0), 12)\n    1.644934066848\n")
expit = _unary("expit", O.sigmoid, "    >>> tg.grad(tsp.expit)(0.0)\n    0.25\n")


def _logit(x):
    return O.sub(O.log(x), O.log1p(O.neg(x)))


logit = _unary("logit", _logit, "    >>> tg.grad(tsp.logit)(0.5)\n    4.0\n")


def _gammasgn(x):
    # sign of Gamma from floor(x): 1 for x >= 0, (-1)^floor(x) below; NaN at the negative
    # integers and the sign of the zero at 0 (SciPy's values).  Derivative 0 (it is constant
    # between the poles); every step is a tape op, so a trace replays it.
    s = 1.0 - 2.0 * O.remainder(O.minimum(O.floor(x), 0.0), 2.0)
    zero = x == 0.0
    pole = O.where(x < 0.0, O.where(O.floor(x) == x, np.nan, s), s)
    with np.errstate(divide="ignore"):  # 1 / +-0: the sign of the zero
        return O.where(zero, O.sign(O.reciprocal(O.where(zero, x, 1.0))), pole)


gammasgn = _unary(
    "gammasgn", _gammasgn, "    >>> tsp.gammasgn(tg.tensor([-0.5, 1.5]))\n    tensor([-1.,  1.])\n"
)


def _rgamma(x):
    # 1 / Gamma: 0 at the poles of Gamma, where the derivatives (-1)^n n! ... of this entire
    # function cannot come from 1 / Gamma: refused there rather than returned wrong (below
    # -_RGAMMA_FAR; nearer the origin they come from the product below)
    v = np.asarray(value_of(x))  # not a pinned read: a replay at a pole gives NaN
    if x.requires_grad and np.any((v <= -_RGAMMA_FAR) & (v == np.floor(v))):
        raise ValueError(
            "tapegrad.scipy.special.rgamma: the derivative at the nonpositive "
            f"integers below {-_RGAMMA_FAR} (the zeros of 1/Gamma) is not implemented"
        )
    # 0 at the poles and at -inf, as SciPy (1 / Gamma there would be 1 / nan); the masks
    # come from comparisons of x, so a trace guards them
    zero = O.truth((O.floor(x) == x) & (x <= 0.0)) | (v == -np.inf)
    # far from 0 the derivatives of 1 / Gamma divide by powers of Gamma, which overflow
    # (from x = 100 the first is 0 instead of -psi / Gamma, from 172 NaN): there it is
    # gammasgn(x) exp(-gammaln(x)), whose derivatives stay in range
    far = O.truth(O.abs_(x) > _RGAMMA_FAR) & ~zero
    # below 1/2 (to -_RGAMMA_FAR), near the poles of Gamma, its n-th derivative is a
    # difference of terms of 1 / x^(n+1) that cancel (the third at 1e-8 came out 5.6 or 12
    # by the mode, for -3.9; the second at -1e-8 3.3, for 1.15; the first at 1e-300 NaN):
    # there it is x (x + 1) ... (x + k - 1) / Gamma(x + k) with x + k in [1/2, 3/2), a
    # product of smooth factors, exact at the poles too
    near = O.truth(x < 0.5) & ~far & (v != -np.inf)
    zero = zero & ~near
    if not (zero.any() or far.any() or near.any()):
        return O.reciprocal(O.gamma(x))
    out = O.reciprocal(O.gamma(O.where(zero | far | near, 1.0, x)))
    if near.any():
        xn = O.where(near, x, 1.0)
        k = O.ceil(0.5 - xn)  # 0 where x is not near; piecewise constant, derivative 0
        prod = O.reciprocal(O.gamma(xn + k))
        for j in range(int(_RGAMMA_FAR) + 1):  # k <= 21 for x > -20
            prod = prod * O.where(k > j, xn + float(j), 1.0)
        out = O.where(near, prod, out)
    if far.any():
        xf = O.where(far, x, 2.0 * _RGAMMA_FAR)
        out = O.where(far, _gammasgn(xf) * O.exp(O.neg(O.gammaln(xf))), out)
    return O.where(zero, 0.0, out) if zero.any() else out


_RGAMMA_FAR = 20.0  # |x| above which rgamma is gammasgn * exp(-gammaln): Gamma(20) ~ 1e17


rgamma = _unary(
    "rgamma",
    _rgamma,
    "    >>> round(tg.grad(tsp.rgamma)(1.0), 12)  # Euler's gamma\n    0.577215664902\n",
)


def polygamma(n, x):
    """SciPy's ``polygamma(n, x)``: the n-th derivative of digamma; differentiable in x at
    any order (the order n is a whole number, not differentiable).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(lambda x: tsp.polygamma(1, x))(1.0), 10)   # -2 zeta(3)
    -2.4041138063
    """
    if not isinstance(x, Tensor):
        return _sp.polygamma(_no_grad_arg("polygamma", "n", n), x)
    n = np.asarray(_no_grad_arg("polygamma", "n", n))
    if np.any(n != np.floor(n)) or np.any(n < 0):  # SciPy: nan for an order that is not
        whole = (n == np.floor(n)) & (n >= 0)  # a nonnegative whole number
        kept = polygamma(np.where(whole, n, 0), x)
        return O.where(np.broadcast_to(whole, kept.shape), kept, np.nan)
    if n.ndim == 0:
        return O.polygamma(int(n), x)
    shape = np.broadcast_shapes(n.shape, x.shape)
    out = None
    for k in np.unique(n):  # one op per distinct order, chosen elementwise
        term = O.polygamma(int(k), O.broadcast_to(x, shape))
        out = term if out is None else O.where(np.broadcast_to(n == k, shape), term, out)
    return out


def multigammaln(a, d: int):
    """SciPy's ``multigammaln(a, d)``: log of the multivariate gamma function of dimension d,
    differentiable in a (composite of gammaln).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(lambda a: tsp.multigammaln(a, 1))(1.0), 12)
    -0.577215664902
    """
    if not isinstance(a, Tensor):
        return _sp.multigammaln(a, d)
    if not np.isscalar(d) or d != int(d) or d <= 0:
        raise ValueError("d should be a positive integer (dimension)")
    d = int(d)
    if np.any(np.asarray(a.data) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a ({a.data}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    out = O.gammaln(a)
    for j in range(2, d + 1):
        out = out + O.gammaln(a + (1.0 - j) / 2.0)
    return out + 0.25 * d * (d - 1) * np.log(np.pi)


def betaln(a, b):
    """SciPy's ``betaln(a, b)`` = log |B(a, b)|, differentiable in a and b.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(lambda a: tsp.betaln(a, 1.0))(1.0), 12)   # d/da -log(a)
    -1.0
    """
    if not _tensor_in(a, b):
        return _sp.betaln(a, b)
    return _betaln(a, b)


# Stirling's series lgamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + sum c_k / z^(2k-1); from
# z = 10 the first term left out (the ninth) is below 2e-18
_STIRLING = (
    1 / 12,
    -1 / 360,
    1 / 1260,
    -1 / 1680,
    1 / 1188,
    -691 / 360360,
    1 / 156,
    -3617 / 122400,
)
_STIRLING_FROM = 10.0


def _broadcast(x, y):
    x, y = O.tensor_of(x), O.tensor_of(y)
    shape = np.broadcast_shapes(x.shape, y.shape)
    return O.broadcast_to(x, shape), O.broadcast_to(y, shape)


def _stirling_tail(z):
    r = O.reciprocal(O.square(z))
    acc = _STIRLING[-1]
    for c in _STIRLING[-2::-1]:
        acc = c + r * acc
    return acc / z


def _gammaln_diff(x, y):
    """gammaln(x) - gammaln(x + y) without the cancellation of the two logarithms when x is
    large (gammaln(1e15) - gammaln(1e15 + 2) is -69.08; the difference of the two rounds to
    -64, and its derivatives to 0): by Stirling's series where x and x + y are at least 10,
    -(x - 1/2) log1p(y / x) - y log(x + y) + y + tail(x) - tail(x + y); the plain
    difference elsewhere.  Each branch sees only the points it is taken at."""
    x, y = _broadcast(x, y)
    s = O.add(x, y)
    small = O.truth((x > 0.0) & (O.abs_(y) <= _TAYLOR_BELOW * x))  # (a guard in a trace)
    series = (x >= _STIRLING_FROM) & (s >= _STIRLING_FROM) & ~small
    plain = O.gammaln(x) - O.gammaln(s)
    if small.any():
        plain = O.where(
            small, _gammaln_taylor(O.where(small, x, 1.0), O.where(small, y, 0.0)), plain
        )
    if not np.asarray(value_of(series)).any():  # (a guard in a trace)
        return plain
    xs, ys = O.where(series, x, _STIRLING_FROM), O.where(series, y, 1.0)
    ss = O.add(xs, ys)
    stirling = (
        O.neg(O.mul(O.sub(xs, 0.5), O.log1p(O.div(ys, xs))))
        - O.mul(ys, O.log(ss))
        + ys
        + _stirling_tail(xs)
        - _stirling_tail(ss)
    )
    return O.where(series, stirling, plain)


# |y| / x below which gammaln(x) - gammaln(x + y) is its Taylor series in y (five terms: the
# sixth is below 1e-20 of the first)
_TAYLOR_BELOW, _TAYLOR_TERMS = 1e-4, 5


def _gammaln_taylor(x, y):
    """gammaln(x) - gammaln(x + y) = -sum_k y^k psi^(k-1)(x) / k! for |y| small beside x > 0:
    the difference itself loses the digits of its derivatives (d/dx is psi(x) - psi(x + y),
    7e-7 off for x = 0.5, y = 1e-10), and Stirling's series at huge x divides y by x^2,
    which underflows (d/dx at x = 1e300, y = 2.5 came out twice the right -2.5e-300)."""
    out, power = None, y
    for k in range(1, _TAYLOR_TERMS + 1):
        term = power * O.polygamma(k - 1, x) * (-1.0 / math.factorial(k))
        out = term if out is None else out + term
        power = power * y
    return out


def _betaln(a, b):
    """log |B(a, b)| = gammaln(small) + gammaln(big) - gammaln(big + small), the last two
    by ``_gammaln_diff`` (accurate when big is large, where the three-term sum loses every
    digit of betaln and of its derivatives)."""
    a, b = _broadcast(a, b)
    first = a >= b
    big, small = O.where(first, a, b), O.where(first, b, a)
    return O.gammaln(small) + _gammaln_diff(big, small)


def beta(a, b):
    """SciPy's ``beta(a, b)`` = Gamma(a) Gamma(b) / Gamma(a + b), differentiable in a and b.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(lambda b: tsp.beta(1.0, b))(2.0), 12)     # d/db 1/b
    -0.25
    """
    if not _tensor_in(a, b):
        return _sp.beta(a, b)
    a, b = _broadcast(a, b)
    s = O.add(a, b)

    def pole(z):  # a nonpositive integer: a pole of Gamma (a comparison: a guard in a trace)
        return O.truth((O.floor(z) == z) & (z <= 0.0))

    # a zero of B: a + b a pole of Gamma, a and b not (B(-0.5, -1.5) = 0, d/da -16.76).  The
    # sign and log |B| are NaN and -inf there (and their product's derivatives NaN), so B is
    # Gamma(a) Gamma(b) rgamma(a + b), whose last factor is exact at and near its zeros
    zero = pole(s) & ~pole(a) & ~pole(b)
    if zero.any():
        az, bz = O.where(zero, a, 1.0), O.where(zero, b, 1.0)
        at_zero = O.gamma(az) * O.gamma(bz) * _rgamma(az + bz)
        a, b = O.where(zero, 1.0, a), O.where(zero, 1.0, b)  # the other branch: no NaN
        s = O.add(a, b)
    sign = _gammasgn(a) * _gammasgn(b) * _gammasgn(s)
    out = sign * O.exp(_betaln(a, b))
    return O.where(zero, at_zero, out) if zero.any() else out


# ---- xlogy, xlog1py ---------------------------------------------------------------------------


class _XLogY(Function):
    """x log(y + shift), 0 where x == 0; d/dx = log(y + shift) (also at x == 0: -inf when
    y + shift == 0), d/dy = x / (y + shift) (0 where x == 0)."""

    @staticmethod
    def forward(ctx, x, y, shift):
        ctx.shift = shift
        # where x == 0 (a mask, not a value: d/dx does not depend on x)
        ctx.x_zero = x.data == 0.0
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, y)
        fn = _sp.xlogy if shift == 0.0 else _sp.xlog1py
        return fn(x.data, y.data)

    @staticmethod
    def partials(ctx):
        x, y = ctx.saved_tensors
        log_arg = _log_shifted(y, ctx.shift)  # log1p(y), not log(1 + y): exact for tiny y
        if x is None:
            return log_arg, None
        # x / (y + shift), its divisor replaced only where it is 0 at x == 0 (0 / 0; the
        # partial is 0 there): replacing it wherever x == 0 dropped its dependence on y, so
        # the mixed second derivative at x == 0 was 1 instead of 1 / (y + shift)
        shifted = y + ctx.shift if ctx.shift else y
        zero = ctx.x_zero & (np.asarray(value_of(shifted)) == 0.0)
        safe = O.where(zero, 1.0, shifted) if np.any(zero) else shifted
        return log_arg, x / safe

    @staticmethod
    def backward(ctx, g):
        dx, dy = _XLogY.partials(ctx)
        return g * dx, None if dy is None else g * dy, None

    @staticmethod
    def jvp(ctx, tx, ty, _):
        dx, dy = _XLogY.partials(ctx)
        return tx * dx if dy is None else tx * dx + ty * dy


def _xlogy_impl(x, y, shift: float):
    if isinstance(x, Tensor) and x.requires_grad:
        shape = np.broadcast_shapes(x.shape, np.shape(y))
        return _XLogY.apply(O.broadcast_to(x, shape), O.broadcast_to(y, shape), shift)
    xv = np.asarray(_constant("xlogy", "x", x), dtype=np.float64)
    y = O.tensor_of(y)
    # x is a constant here: x log(y + shift) with y replaced where x == 0 (the value and
    # both derivatives are 0 there; the log itself may be -inf or NaN)
    zero = np.broadcast_to(xv == 0.0, np.broadcast_shapes(xv.shape, y.shape))
    return O.mul(x, _log_shifted(O.where(zero, 1.0 - shift, y), shift))


def _log_shifted(y, shift: float):
    """log(y + shift) for shift 0 (xlogy) or 1 (xlog1py, as log1p(y))."""
    return O.log1p(y) if shift else O.log(y)


def xlogy(x, y, **kwargs):
    """SciPy's ``xlogy(x, y)`` = x log(y), 0 where x == 0; differentiable in x and y.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda y: tsp.xlogy(2.0, y))(4.0)
    0.5
    >>> tsp.xlogy(0.0, tg.tensor(0.0))
    tensor(0.)
    """
    if not _tensor_in(x, y):
        return _sp.xlogy(x, y, **kwargs)
    _no_kwargs("xlogy", kwargs)
    return _xlogy_impl(x, y, 0.0)


def xlog1py(x, y, **kwargs):
    """SciPy's ``xlog1py(x, y)`` = x log(1 + y), 0 where x == 0; differentiable in x and y.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda y: tsp.xlog1py(2.0, y))(3.0)
    0.5
    """
    if not _tensor_in(x, y):
        return _sp.xlog1py(x, y, **kwargs)
    _no_kwargs("xlog1py", kwargs)
    return _xlogy_impl(x, y, 1.0)


# ---- entr, rel_entr, kl_div ---------------------------------------------------------------------


def _entr_partial(x):
    """d/dx entr = -(log x + 1) for x >= 0 (+inf at 0, the limit from the right) and at NaN;
    0 below 0 (the value is the constant -inf there).  Finite at denormal x (log x + 1,
    with no 1 / x), and differentiable again (-1 / x)."""
    v = np.asarray(value_of(x))
    inside = (v >= 0.0) | (v != v)
    with np.errstate(divide="ignore"):  # log(0) = -inf: the derivative +inf at 0
        d = O.neg(O.add(O.log(O.where(inside, x, 1.0)), 1.0))
    return O.where(inside, d, 0.0)


def _rel_entr_partials(x, y, kl: bool):
    """d/dx, d/dy of x log(x / y) (rel_entr) or x log(x / y) - x + y (kl_div) for x >= 0,
    y > 0 (and at NaN): log(x / y) + 1 (kl: log(x / y)) and -x / y (kl: 1 - x / y), from
    the ratio x / y, so they are finite where x and y are tiny (d/dx is -inf at x == 0, the
    limit from the right); at x == y == 0, where the value jumps to inf for x > 0, d/dx is
    +inf and d/dy the limit from y > 0; 0 where the value is the constant inf."""
    xv, yv = np.asarray(value_of(x)), np.asarray(value_of(y))
    inside = ((xv >= 0.0) & (yv > 0.0)) | (xv != xv) | (yv != yv)
    corner = (xv == 0.0) & (yv == 0.0)
    xi, yi = O.where(inside, x, 1.0), O.where(inside, y, 1.0)
    r = O.div(xi, yi)
    # far from 1 the ratio's square under- or overflows in the derivatives of log(r) (the
    # third in x of rel_entr(x, 1e-300) at x = 1 came out 0, not -1): there it is
    # log x - log y, which has no cancellation when |log r| is that large (each branch
    # evaluated only where it is taken)
    far = O.truth((r > _RATIO_FAR) | (r < 1.0 / _RATIO_FAR))  # (a guard in a trace)
    with np.errstate(divide="ignore"):  # log(0) = -inf at x == 0
        if far.any():
            log_r = O.where(
                far,
                O.sub(O.log(O.where(far, xi, 1.0)), O.log(O.where(far, yi, 1.0))),
                O.log(O.div(O.where(far, 1.0, xi), O.where(far, 1.0, yi))),
            )
        else:
            log_r = O.log(r)
        dx = log_r if kl else O.add(log_r, 1.0)
    dy = O.sub(1.0, r) if kl else O.neg(r)
    fill_x = np.where(corner, np.inf, 0.0)
    fill_y = np.where(corner, 1.0 if kl else 0.0, 0.0)
    return O.where(inside, dx, fill_x), O.where(inside, dy, fill_y)


_RATIO_FAR = 1e100  # x / y beyond which rel_entr's log(x / y) is differentiated as log x - log y


class _Entr(Function):
    """SciPy's entr (its value), with ``_entr_partial`` as the derivative."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.asarray(_sp.entr(x.data), dtype=np.float64)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _entr_partial(x)

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return tx * _entr_partial(x)


class _RelEntr(Function):
    """SciPy's rel_entr or kl_div (its value), with ``_rel_entr_partials``."""

    @staticmethod
    def forward(ctx, x, y, kl):
        ctx.kl = kl
        ctx.save_for_backward(x, y)
        fn = _sp.kl_div if kl else _sp.rel_entr
        return np.asarray(fn(x.data, y.data), dtype=np.float64)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dx, dy = _rel_entr_partials(x, y, ctx.kl)
        return g * dx, g * dy, None

    @staticmethod
    def jvp(ctx, tx, ty, _):
        x, y = ctx.saved_tensors
        dx, dy = _rel_entr_partials(x, y, ctx.kl)
        terms = [t * d for t, d in ((tx, dx), (ty, dy)) if t is not None]
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]


def entr(x, **kwargs):
    """SciPy's ``entr(x)`` = -x log(x) for x > 0, 0 at 0, -inf below; differentiable:
    -(log(x) + 1), finite at denormal x.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(tsp.entr)(1e-320), 4)       # -(log x + 1)
    735.8272
    """
    if not isinstance(x, Tensor):
        return _sp.entr(x, **kwargs)
    _no_kwargs("entr", kwargs)
    return _Entr.apply(x)


def rel_entr(x, y, **kwargs):
    """SciPy's ``rel_entr(x, y)`` = x log(x / y) for x, y > 0, 0 at x == 0 <= y, inf
    elsewhere; differentiable in x (log(x / y) + 1) and y (-x / y), finite where x and y
    are tiny.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda x: tsp.rel_entr(x, 1e-320))(1e-320)
    1.0
    """
    if not _tensor_in(x, y):
        return _sp.rel_entr(x, y, **kwargs)
    _no_kwargs("rel_entr", kwargs)
    return _RelEntr.apply(*_broadcast(x, y), False)


def kl_div(x, y, **kwargs):
    """SciPy's ``kl_div(x, y)`` = x log(x / y) - x + y for x, y > 0, y at x == 0 <= y, inf
    elsewhere; differentiable in x (log(x / y)) and y (1 - x / y), finite where x and y are
    tiny.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda y: tsp.kl_div(2.0, y))(4.0)        # 1 - x / y
    0.5
    """
    if not _tensor_in(x, y):
        return _sp.kl_div(x, y, **kwargs)
    _no_kwargs("kl_div", kwargs)
    return _RelEntr.apply(*_broadcast(x, y), True)


# ---- logsumexp and softmax --------------------------------------------------------------------


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """SciPy's ``logsumexp``: log(sum(b * exp(a))) along ``axis``, computed stably;
    differentiable in a and b.  With ``return_sign`` it returns (log |sum|, sign), the sign a
    plain array (it has no derivative).

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(tsp.logsumexp)(np.zeros(4))
    array([0.25, 0.25, 0.25, 0.25])
    """
    if not _tensor_in(a, b):
        return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    a = O.tensor_of(a)
    if b is not None:
        shape = np.broadcast_shapes(a.shape, np.shape(b))
        a = O.broadcast_to(a, shape)
    axes = O.normalize_axes(axis, a.ndim, "logsumexp")
    if b is None:
        m = O.stable_shift(a, axes)
        s = O.sum(O.exp(O.sub(a, m)), axes, keepdims=True)
    else:  # entries with b == 0 add nothing: they do not set the shift (as in SciPy)
        # (a comparison of a Tensor b: a guard in a trace, whose replays see their own zeros)
        kept = O.truth(b != 0) if isinstance(b, Tensor) else np.asarray(b) != 0
        kept = np.broadcast_to(kept, a.shape)
        if isinstance(b, Tensor) and b.requires_grad:
            s, m = _weights_with_grad(a, b, kept, axes)
        else:
            s, m = _constant_weights(a, b, kept, axes)
    out = O.add(O.log(O.abs_(s) if return_sign else s), m)
    if not keepdims:
        out = O.reshape(out, np.squeeze(np.empty(out.shape), axes).shape)
    if not return_sign:
        return out
    sign = np.sign(np.asarray(s.data))  # a plain array (pinned in a trace)
    sign = sign if keepdims else np.squeeze(sign, axes)
    return out, sign if sign.ndim else sign[()]


def _constant_weights(a, b, kept, axes):
    """(sum of b exp(a - m), m) for constant weights b: the terms are sign(b) exp(a + log|b|
    - m), shifted by the maximum of a + log|b| (a shift by the maximum of a alone underflowed
    the terms a tiny b weights: d/da_1 of logsumexp([800, 1], b=[1e-300, 1]) came out 0 for
    1e-47).  Entries with b == 0 add nothing and get the gradient 0 (their a may be inf or
    NaN, as in SciPy)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_b = O.log(O.abs_(O.where(kept, b, 1.0)))  # (Tensor ops: a replay reads b again)
        shifted = O.where(kept, O.add(O.where(kept, a, 0.0), log_b), -np.inf)
    m = O.stable_shift(shifted, axes)
    return O.sum(O.mul(O.exp(O.sub(shifted, m)), O.sign(b)), axes, keepdims=True), m


def _weights_with_grad(a, b, kept, axes):
    """(sum of b exp(a - m), m) for weights b that require grad.  The shift m is the maximum
    of a + log|b| where b != 0 (log|b| kept above -700, so exp(a - m) stays finite), as for
    constant weights: by the maximum of a alone, a term with a tiny weight underflowed (d/da
    came out 0 for 1e-47) and huge weights overflowed the sum.  The terms stay b exp(a - m),
    so d/db = exp(a - m) is not lost where b exp(a - m) underflows.  Entries with b == 0 keep
    d/db (see ``_zero_weights``)."""
    unseen = None
    with np.errstate(divide="ignore", invalid="ignore"):
        log_b = O.maximum(O.log(O.abs_(O.where(kept, b, 1.0))), -700.0)
    if kept.all():
        m = O.stable_shift(O.add(a, log_b), axes)
    else:
        m = O.stable_shift(O.where(kept, O.add(O.where(kept, a, 0.0), log_b), -np.inf), axes)
        a, unseen = _zero_weights(a, m, kept)
    e = O.mul(O.exp(O.sub(a, m)), b)
    if unseen is not None:  # value 0; d/db = exp(a - m) where that is not finite
        e = O.add(e, _Unseen.apply(O.broadcast_to(b, a.shape), *unseen))
    return O.sum(e, axes, keepdims=True), m


_EXP_FINITE = math.log(np.finfo(np.float64).max)  # exp(d) is finite for d below this


def _zero_weights(a, m, kept):
    """logsumexp's ``a`` where ``b == 0`` and b requires grad: those entries add nothing to
    the value, but d/db there is exp(a - out).  Where exp(a - m) is finite they stay (b * exp
    is 0, and every derivative is the formula's); where it overflows or a is NaN or +inf
    (the mask ``unseen``) they are masked to -inf, as SciPy ignores them, so their a gets
    the gradient 0 and the value is not 0 * inf = NaN: ``_Unseen`` gives their d/db from
    the returned ``(a - m, unseen)``."""
    d = O.sub(a, m)
    unseen = ~kept & ~O.truth(d <= _EXP_FINITE)  # (a guard in a trace)
    if not unseen.any():
        return a, None
    return O.where(unseen, -np.inf, a), (d, unseen)


class _Unseen(Function):
    """b * exp(d) at the entries ``unseen`` (b == 0 there, exp(d) inf or NaN): the value 0,
    d/db = exp(d) (inf, or NaN for a NaN entry, as IEEE says), d/dd = b exp(d) = 0 (the
    entry's a does not change the value).  The second derivatives in b and d are the
    formula's; the mixed one through d/dd (0 instead of exp(d)) is not, at those entries."""

    @staticmethod
    def forward(ctx, b, d, unseen):
        ctx.unseen = unseen
        ctx.save_for_backward(d)
        return np.zeros(np.shape(b.data))

    @staticmethod
    def weight(ctx):
        (d,) = ctx.saved_tensors
        with np.errstate(over="ignore"):  # inf where exp(d) overflows, as IEEE says
            return O.exp(O.where(ctx.unseen, d, -np.inf))

    @staticmethod
    def backward(ctx, g):
        return g * _Unseen.weight(ctx), None, None

    @staticmethod
    def jvp(ctx, tb, _td, _u):
        return tb * _Unseen.weight(ctx)


def softmax(x, axis=None):
    """SciPy's ``softmax`` (over all elements by default, as SciPy), differentiable.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tsp.softmax(tg.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """
    if not isinstance(x, Tensor):
        return _sp.softmax(x, axis=axis)
    return O.exp(O.sub(x, logsumexp(x, axis=axis, keepdims=True)))


def log_softmax(x, axis=None):
    """SciPy's ``log_softmax`` (over all elements by default, as SciPy), differentiable.

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tsp.log_softmax(tg.tensor([1.0, 1.0])).exp()
    tensor([0.5000, 0.5000])
    """
    if not isinstance(x, Tensor):
        return _sp.log_softmax(x, axis=axis)
    return O.sub(x, logsumexp(x, axis=axis, keepdims=True))


# ---- Python-side ops: value by SciPy, derivative a Tensor expression ----------------------------


class _ScipyOp(Function):
    """An elementwise SciPy function of x with fixed non-Tensor parameters: ``value(x)`` is
    SciPy's, ``derivative(x)`` builds d/dx as a Tensor expression (of further such ops), so
    backward under create_graph and the jvp are differentiable again."""

    @staticmethod
    def forward(ctx, x, value, derivative):
        ctx.derivative = derivative
        ctx.save_for_backward(x)
        return np.asarray(value(x.data), dtype=np.float64)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.derivative(x), None, None

    @staticmethod
    def jvp(ctx, tx, _v, _d):
        (x,) = ctx.saved_tensors
        return tx * ctx.derivative(x)


def _scipy_op(x, value, derivative):
    return _ScipyOp.apply(O.tensor_of(x), value, derivative)


_BESSEL = {"j": _sp.jv, "y": _sp.yv, "i": _sp.iv, "ive": _sp.ive}


def _bessel(kind: str, v, x, value=None):
    """Bessel function ``kind`` of order v at x, differentiable in x through the recurrences
    J' = (J_{v-1} - J_{v+1}) / 2 (Y alike), I' = (I_{v-1} + I_{v+1}) / 2 and
    ive' = (ive_{v-1} + ive_{v+1}) / 2 - sign(x) ive_v."""
    fn = _BESSEL[kind]
    if value is None:
        value = lambda z: fn(v, z)  # noqa: E731

    def derivative(z):
        lo, hi = _bessel(kind, v - 1, z), _bessel(kind, v + 1, z)
        if kind in ("j", "y"):
            return 0.5 * (lo - hi)
        d = 0.5 * (lo + hi)
        return _ive_far(v, z, d - O.sign(z) * _bessel(kind, v, z)) if kind == "ive" else d

    return _scipy_op(x, value, derivative)


_IVE_FAR, _IVE_TERMS = 100.0, 25


def _ive_far(v, z, near):
    """ive's derivative ``near`` (by the recurrence), replaced where |z| >= max(100, v^2) by
    the derivative of the asymptotic series ive_v(t) = (2 pi t)^(-1/2) sum_k (-1)^k a_k t^-k,
    a_k = a_(k-1) (4 v^2 - (2k - 1)^2) / (8k): the recurrence subtracts values equal to
    1 / |z| of themselves, and each further derivative loses that factor again (the third
    at x = 1e6 had the wrong sign).  Negative z: ive_v(-t) = (-1)^v ive_v(t), whole v."""
    vv = np.asarray(v, dtype=np.float64)
    whole = vv == np.floor(vv)
    far = (O.abs_(z) >= np.maximum(_IVE_FAR, vv * vv)) & ((z > 0.0) | whole)
    if not np.asarray(value_of(far)).any():  # (a guard in a trace)
        return near
    t = O.where(far, O.abs_(z), np.maximum(_IVE_FAR, vv * vv))
    r = O.reciprocal(t)
    coef, a = [], np.ones_like(vv)
    for k in range(_IVE_TERMS):  # d/dt of t^(-k - 1/2): -(k + 1/2) t^(-k - 3/2)
        if k:
            a = a * (4.0 * vv * vv - (2 * k - 1) ** 2) / (8.0 * k)
        coef.append((-1) ** k * a * (k + 0.5))
    acc = coef[-1]
    for c in coef[-2::-1]:
        acc = c + r * acc
    # t^(-3/2), not r sqrt(r): sqrt's slope at r = 1 / inf = 0 is infinite (0 * inf = NaN)
    slope = -acc * O.power(t, -1.5) / math.sqrt(2.0 * math.pi)
    # d/dz of (-1)^v ive_v(-z) for z < 0: (-1)^(v + 1) times the slope at |z|
    odd = np.where(whole, np.remainder(vv, 2.0), 0.0)
    flip = O.where(z < 0.0, 2.0 * odd - 1.0, 1.0)
    return O.where(far, slope * flip, near)


def _bessel_fn(name: str, kind: str, order, doc_example: str):
    sp_fn = getattr(_sp, name)
    if order is not None:

        def f(x, **kwargs):
            if not isinstance(x, Tensor):
                return sp_fn(x, **kwargs)
            _no_kwargs(name, kwargs)
            return _bessel(kind, order, x, sp_fn)
    else:

        def f(v, x, **kwargs):
            if not isinstance(x, Tensor):
                return sp_fn(_no_grad_arg(name, "the order v", v, _ORDER_HINT), x, **kwargs)
            _no_kwargs(name, kwargs)
            v = _no_grad_arg(name, "the order v", v, _ORDER_HINT)
            return _bessel(kind, np.asarray(v, dtype=np.float64), x, lambda z: sp_fn(v, z))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"SciPy's ``{name}``, differentiable in x at any order (by the derivative "
        "recurrence of its kind).\n\n    >>> import tapegrad as tg\n"
        f"    >>> import tapegrad.scipy.special as tsp\n{doc_example}"
    )
    return f


_ORDER_HINT = " (derivatives in the order of a Bessel function have no closed form here)"
j0 = _bessel_fn("j0", "j", 0.0, "    >>> tg.grad(tsp.j0)(0.0)   # -j1(0)\n    0.0\n")
j1 = _bessel_fn("j1", "j", 1.0, "    >>> tg.grad(tsp.j1)(0.0)\n    0.5\n")
y0 = _bessel_fn(
    "y0", "y", 0.0, "    >>> round(tg.grad(tsp.y0)(1.0), 12)   # -y1(1)\n    0.7812128213\n"
)
y1 = _bessel_fn("y1", "y", 1.0, "    >>> round(tg.grad(tsp.y1)(1.0), 12)\n    0.869469785516\n")
i0 = _bessel_fn("i0", "i", 0.0, "    >>> tg.grad(tsp.i0)(0.0)   # i1(0)\n    0.0\n")
i1 = _bessel_fn("i1", "i", 1.0, "    >>> tg.grad(tsp.i1)(0.0)\n    0.5\n")
jn = _bessel_fn("jn", "j", None, "    >>> tg.grad(lambda x: tsp.jn(1, x))(0.0)\n    0.5\n")
jv = _bessel_fn("jv", "j", None, "    >>> tg.grad(lambda x: tsp.jv(1, x))(0.0)\n    0.5\n")
yn = _bessel_fn(
    "yn", "y", None, "    >>> round(tg.grad(lambda x: tsp.yn(0, x))(1.0), 12)\n    0.7812128213\n"
)
yv = _bessel_fn(
    "yv", "y", None, "    >>> round(tg.grad(lambda x: tsp.yv(0, x))(1.0), 12)\n    0.7812128213\n"
)
iv = _bessel_fn("iv", "i", None, "    >>> tg.grad(lambda x: tsp.iv(1, x))(0.0)\n    0.5\n")
ive = _bessel_fn("ive", "ive", None, "    >>> tg.grad(lambda x: tsp.ive(1, x))(0.0)\n    0.5\n")
i0e = _bessel_fn("i0e", "ive", 0.0, "    >>> tg.grad(tsp.i0e)(0.0)   # its kink\n    0.0\n")
i1e = _bessel_fn("i1e", "ive", 1.0, "    >>> tg.grad(tsp.i1e)(0.0)\n    0.5\n")


# ---- incomplete beta and gamma: differentiable in x ----------------------------------------------


def betainc(a, b, x, **kwargs):
    """SciPy's regularized incomplete beta ``betainc(a, b, x)``; differentiable in x at any
    order (its derivative is the beta density); the derivatives in a and b are not
    implemented (NotImplementedError when they are asked for).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda x: tsp.betainc(1.0, 1.0, x))(0.3)
    1.0
    """
    if not _tensor_in(a, b, x):
        return _sp.betainc(a, b, x, **kwargs)
    _no_kwargs("betainc", kwargs)
    a = np.asarray(_no_grad_arg("betainc", "a", a), dtype=np.float64)
    b = np.asarray(_no_grad_arg("betainc", "b", b), dtype=np.float64)
    log_b = _sp.betaln(a, b)

    def density(z):
        return _at_edges(
            z,
            (0.0, 1.0),
            lambda z: O.exp(xlogy(a - 1.0, z) + xlog1py(b - 1.0, O.neg(z)) - log_b),
            lambda z: O.power(z, a - 1.0) * O.power(1.0 - z, b - 1.0) * np.exp(-log_b),
        )

    return _scipy_op(x, lambda z: _sp.betainc(a, b, z), density)


def _at_edges(z, edges, inside, edge):
    """A density ``inside(z)`` written as exp(log density) (which neither underflows nor
    overflows for large parameters), but ``edge(z)``, its product of powers, where z is one
    of ``edges``: there the log density is -inf and its derivative infinite, so exp(L) L'
    is 0 * inf = NaN where the density's derivative is a number (betainc(1, 2, x)'' = -2
    at x = 1).  Each form sees only its own points (the other's are 1/2), so neither puts a
    NaN into the other's derivatives; whether z is at an edge is a guard in a trace."""
    at = np.zeros(np.shape(z), dtype=bool)
    for e in edges:
        at = at | O.truth(z == e)
    if not at.any():
        return inside(z)
    return O.where(at, edge(O.where(at, z, 0.5)), inside(O.where(at, 0.5, z)))


def _dgammainc_da(a: float, x: float) -> float:
    """d/da of the regularized lower incomplete gamma P(a, x), by its series below a + 1
    (each term x^(a+k) e^-x / Gamma(a+k+1) differentiated: times log x - psi(a+k+1)) and by
    the integral of the upper tail above (dQ/da = int_x^inf t^(a-1) e^-t log t dt / Gamma(a)
    - Q psi(a), dP/da = -dQ/da), so neither side subtracts nearly equal numbers."""
    if not (a > 0.0 and x >= 0.0) or math.isnan(a) or math.isnan(x):
        return math.nan
    if x == 0.0 or math.isinf(x):
        return 0.0
    if x <= a + 1.0:
        log_x = math.log(x)
        term = math.exp(a * log_x - x - math.lgamma(a + 1.0))
        psi = float(_sp.digamma(a + 1.0))
        total, k = term * (log_x - psi), 0
        while True:
            k += 1
            term *= x / (a + k)
            psi += 1.0 / (a + k)
            step = term * (log_x - psi)
            total += step
            if abs(step) <= 1e-17 * abs(total) or k > 100_000:
                return total
    lg = math.lgamma(a)

    def integrand(t):
        return math.exp((a - 1.0) * math.log(t) - t - lg) * math.log(t)

    upper = _si.quad(integrand, x, math.inf, epsabs=0.0, epsrel=1e-13, limit=200)[0]
    return -(upper - float(_sp.gammaincc(a, x)) * float(_sp.digamma(a)))


class _GammaincDa(Function):
    """dP(a, x)/da as an op: its value by ``_dgammainc_da``; its own derivatives (second
    order in a) are not implemented and raise, never a silent zero."""

    @staticmethod
    def forward(ctx, a, x):
        av, xv = np.broadcast_arrays(np.asarray(a.data, float), np.asarray(x.data, float))
        out = np.vectorize(_dgammainc_da, otypes=[float])(av, xv)
        return out if out.ndim else np.float64(out)

    @staticmethod
    def backward(ctx, *_):  # (also the jvp, which gets a tangent per input)
        raise NotImplementedError(
            "tapegrad.scipy.special.gammainc: derivatives of second order in a are not "
            "implemented (the first derivative in a, and every order in x, are)"
        )

    jvp = backward


def _gammainc(name: str, a, x, kwargs, sign: float):
    sp_fn = getattr(_sp, name)
    if not _tensor_in(a, x):
        return sp_fn(a, x, **kwargs)
    _no_kwargs(name, kwargs)
    if not (isinstance(a, Tensor) and a.requires_grad):
        a = np.asarray(_constant(name, "a", a), dtype=np.float64)
        log_g = _sp.gammaln(a)

        def density(z):
            return sign * _at_edges(
                z,
                (0.0,),
                lambda z: O.exp(xlogy(a - 1.0, z) - z - log_g),
                lambda z: O.power(z, a - 1.0) * O.exp(O.neg(z) - log_g),
            )

        return _scipy_op(x, lambda z: sp_fn(a, z), density)
    return _GammaincOp.apply(a, O.tensor_of(x), sign)


class _GammaincOp(Function):
    """P(a, x) (sign 1) or Q(a, x) = 1 - P (sign -1) differentiable in a and x: d/dx is the
    density x^(a-1) e^-x / Gamma(a) (a Tensor expression in both), d/da ``_GammaincDa``."""

    @staticmethod
    def forward(ctx, a, x, sign):
        ctx.sign = sign
        ctx.save_for_backward(a, x)
        fn = _sp.gammainc if sign > 0 else _sp.gammaincc
        return np.asarray(fn(a.data, x.data), dtype=np.float64)

    @staticmethod
    def _partials(ctx):
        a, x = ctx.saved_tensors
        density = _at_edges(
            x,
            (0.0,),
            lambda x: O.exp(xlogy(a - 1.0, x) - x - gammaln(a)),
            lambda x: O.power(x, a - 1.0) * O.exp(O.neg(x) - gammaln(a)),
        )
        return ctx.sign * _GammaincDa.apply(a, x), ctx.sign * density

    @staticmethod
    def backward(ctx, g):
        da, dx = _GammaincOp._partials(ctx)
        return g * da, g * dx, None

    @staticmethod
    def jvp(ctx, ta, tx, _sign):
        da, dx = _GammaincOp._partials(ctx)
        out = None if ta is None else ta * da
        if tx is not None:
            out = tx * dx if out is None else out + tx * dx
        return out


def gammainc(a, x, **kwargs):
    """SciPy's regularized lower incomplete gamma ``gammainc(a, x)``; differentiable in x
    at any order (d/dx = exp(-x) x^(a-1) / Gamma(a)) and once in the shape a (a series or
    an integral of the tail; second order in a raises NotImplementedError).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda x: tsp.gammainc(1.0, x))(0.0)
    1.0
    """
    return _gammainc("gammainc", a, x, kwargs, 1.0)


def gammaincc(a, x, **kwargs):
    """SciPy's regularized upper incomplete gamma ``gammaincc(a, x)``; differentiable in x
    at any order and once in a (see ``gammainc``).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> tg.grad(lambda x: tsp.gammaincc(1.0, x))(0.0)
    -1.0
    """
    return _gammainc("gammaincc", a, x, kwargs, -1.0)


def __dir__():
    """The public names only (what SciPy's module of the same name offers, differentiable)."""
    return list(__all__)


# ---- the normal distribution function, its log and inverse (core.gaussian); erfcx; K Bessel;
# Hurwitz zeta --------------------------------------------------------------------------------

ndtr = _unary(
    "ndtr",
    _gaussian.ndtr,
    "    >>> round(tg.grad(tsp.ndtr)(0.0), 12)  # 1 / sqrt(2 pi)\n    0.398942280401\n",
)
log_ndtr = _unary(
    "log_ndtr",
    _gaussian.log_ndtr,
    "    >>> round(float(tsp.log_ndtr(tg.tensor(-40.0))), 6)\n    -804.608442\n"
    "    >>> round(tg.grad(tsp.log_ndtr)(-40.0), 6)  # ~ -x\n    40.024969\n",
)
ndtri = _unary(
    "ndtri",
    _gaussian.ndtri,
    "    >>> round(tg.grad(tsp.ndtri)(0.5), 12)  # sqrt(2 pi)\n    2.506628274631\n",
)

_ERFCX_FAR, _ERFCX_TERMS = 10.0, 24  # asymptotic series of erfcx' from x = 10


def _erfcx_derivative(z):
    """erfcx'(z) = 2 z erfcx(z) - 2 / sqrt(pi); from z = 10, where the two terms cancel to
    1 / z^2 of themselves (and each further derivative loses that factor again), the
    derivative of erfcx's asymptotic series (1 / sqrt(pi)) sum_k (-1)^k (2k - 1)!! / 2^k
    z^-(2k+1)."""
    near = 2.0 * z * _erfcx_op(z) - 2.0 / math.sqrt(math.pi)
    far = O.truth(z >= _ERFCX_FAR)  # (a guard in a trace)
    if not far.any():
        return near
    t = O.where(far, z, _ERFCX_FAR)
    r = O.reciprocal(O.square(t))
    coef, acc = 1.0, 0.0
    coefs = []
    for k in range(_ERFCX_TERMS):  # d/dt t^-(2k+1) = -(2k + 1) t^-(2k+2)
        if k:
            coef *= -(2 * k - 1) / 2.0
        coefs.append(-coef * (2 * k + 1))
    for c in coefs[::-1]:
        acc = c + r * acc
    return O.where(far, acc * r / math.sqrt(math.pi), near)


def _erfcx_op(x):
    return _scipy_op(x, _sp.erfcx, _erfcx_derivative)


erfcx = _unary(
    "erfcx",
    _erfcx_op,
    "    >>> round(tg.grad(tsp.erfcx)(0.0), 12)  # -2 / sqrt(pi)\n    -1.128379167096\n",
)


def _kv(v, z):
    """SciPy's kv, but kve(v, z) e^-z where kv flushes to 0 while K_v(z) is still a float
    (z from about 697 to 745): the derivatives of k0 and k1 there (d/dx k0 at 700 gave 0.0
    for -4.67e-306)."""
    out = _sp.kv(v, z)
    zero = (out == 0) & np.isfinite(z) & (np.asarray(z) > 0)
    if np.any(zero):
        out = np.where(zero, _sp.kve(v, z) * np.exp(-np.asarray(z, dtype=np.float64)), out)
    return out


_KBESSEL = {"k": _kv, "kve": _sp.kve}


def _kbessel(kind: str, v, x, value=None):
    """K_v(x) (kind "k") or e^x K_v(x) ("kve"), differentiable in x through
    K_v' = -(K_{v-1} + K_{v+1}) / 2 and kve_v' = kve_v - (kve_{v-1} + kve_{v+1}) / 2."""
    fn = _KBESSEL[kind]
    if value is None:
        value = lambda z: fn(v, z)  # noqa: E731

    def derivative(z):
        d = -0.5 * (_kbessel(kind, v - 1, z) + _kbessel(kind, v + 1, z))
        return d + _kbessel(kind, v, z) if kind == "kve" else d

    return _scipy_op(x, value, derivative)


def _kbessel_fn(name: str, kind: str, order: float, example: str):
    sp_fn = getattr(_sp, name)

    def f(x, **kwargs):
        if not isinstance(x, Tensor):
            return sp_fn(x, **kwargs)
        _no_kwargs(name, kwargs)
        return _kbessel(kind, order, x, sp_fn)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"SciPy's ``{name}``, differentiable in x at any order (by the derivative "
        "recurrence of the modified Bessel functions of the second kind).\n\n"
        "    >>> import tapegrad as tg\n    >>> import tapegrad.scipy.special as tsp\n"
        f"{example}"
    )
    return f


k0 = _kbessel_fn(
    "k0", "k", 0.0, "    >>> round(tg.grad(tsp.k0)(1.0), 12)  # -k1(1)\n    -0.601907230197\n"
)
k1 = _kbessel_fn("k1", "k", 1.0, "    >>> round(tg.grad(tsp.k1)(1.0), 12)\n    -1.022931668438\n")
k0e = _kbessel_fn(
    "k0e", "kve", 0.0, "    >>> round(tg.grad(tsp.k0e)(1.0), 12)\n    -0.491690406456\n"
)
k1e = _kbessel_fn(
    "k1e", "kve", 1.0, "    >>> round(tg.grad(tsp.k1e)(1.0), 12)\n    -1.144463079807\n"
)


def zeta(x, q=None, **kwargs):
    """SciPy's ``zeta(x, q=None)``: the Hurwitz zeta function sum_k (k + q)^-x (Riemann's
    for q = None); differentiable in q at any order (d/dq = -x zeta(x + 1, q)); the
    derivative in x is not implemented (NotImplementedError when it is asked for).

    >>> import tapegrad as tg
    >>> import tapegrad.scipy.special as tsp
    >>> round(tg.grad(lambda q: tsp.zeta(2.0, q))(1.0), 12)   # -2 zeta(3)
    -2.404113806319
    """
    if not _tensor_in(x, q):
        return _sp.zeta(x, q, **kwargs)
    _no_kwargs("zeta", kwargs)
    xv = np.asarray(_no_grad_arg("zeta", "x", x), dtype=np.float64)
    if q is None:
        return O.tensor_of(np.asarray(_sp.zeta(xv), dtype=np.float64))
    qt = O.tensor_of(q)
    shape = np.broadcast_shapes(xv.shape, qt.shape)
    xv = np.broadcast_to(xv, shape)
    return _zeta_op(xv, O.broadcast_to(qt, shape))


def _zeta_op(xv, q):
    return _scipy_op(q, lambda z: _sp.zeta(xv, z), lambda z: _zeta_op(xv + 1.0, z) * -xv)
