"""PyTorch's ``torch.special``, differentiable: ``tg.special.erfcx(x)``, ``tg.special.ndtri(p)``.

Every function of ``torch.special`` with PyTorch's signature (``input``, ``other``, a
keyword-only ``out=`` that is refused: tapegrad returns a new Tensor).  Each is composed of
tapegrad's differentiable pieces (the native ops, ``Tensor`` methods and
``tapegrad.scipy.special``), so first, second and higher derivatives and forward mode work:

- native (replayable by ``tg.trace``): erf, erfc, erfinv, expit, exp2, expm1, log1p, logit,
  digamma / psi, polygamma, gammaln, multigammaln, ndtr, log_ndtr, ndtri, sinc, round,
  spherical_bessel_j0, xlogy (in other), softmax, log_softmax, logsumexp and the orthogonal
  polynomials (Chebyshev T U V W and their shifted forms, Hermite H and He, Laguerre L,
  Legendre P: their recurrence in x, differentiable in x where PyTorch gives no derivative);
- through SciPy (its values; the derivative a Tensor expression of further such functions,
  so every order works; SciPy is needed): erfcx, entr, xlog1py, i0, i0e, i1, i1e, the
  Bessel functions bessel_j0 / j1 / y0 / y1, modified_bessel_i0 / i1 / k0 / k1,
  scaled_modified_bessel_k0 / k1, airy_ai, gammainc / gammaincc (in other at every order,
  once in input, where PyTorch raises) and zeta (in other; the derivative in input raises
  NotImplementedError, as PyTorch's).
"""

from __future__ import annotations

import math

import numpy as np

from . import scipy as _scipy
from .core import functions as O
from .core import gaussian as _gaussian
from .tensor_class import Tensor

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _no_out(name: str, out) -> None:
    if out is not None:
        raise TypeError(f"tg.special.{name}: out= is not supported; use the returned Tensor")


def _tensor(name: str, x, what: str = "input") -> Tensor:
    """``x`` as a floating Tensor (numbers and arrays taken as constants; integers and
    booleans promoted to float64, as PyTorch promotes them to its default float)."""
    if not isinstance(x, Tensor):
        try:
            x = O.tensor_of(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"tg.special.{name}: {what} must be a Tensor or a real number, got "
                f"{type(x).__name__}"
            ) from exc
    kind = x.dtype.kind
    if kind == "c":
        raise TypeError(f"tg.special.{name}: {what} of a complex dtype is not supported")
    return x if kind == "f" else O.mul(x, 1.0)


def _sp():
    """tapegrad.scipy.special, imported on first use (SciPy is optional)."""
    return _scipy.special


# ---- native compositions ---------------------------------------------------------------------


def _native(name: str, fn, what: str):
    def f(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        return fn(_tensor(name, input))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"PyTorch's ``torch.special.{name}(input)``: {what}; differentiable."
    return f


erf = _native("erf", O.erf, "the error function")
erfc = _native("erfc", O.erfc, "the complementary error function 1 - erf(x)")
erfinv = _native("erfinv", O.erfinv, "the inverse error function")
expit = _native("expit", O.sigmoid, "the logistic sigmoid 1 / (1 + exp(-x))")
exp2 = _native("exp2", O.exp2, "2 ** x")
expm1 = _native("expm1", O.expm1, "exp(x) - 1, exact for small x")
log1p = _native("log1p", O.log1p, "log(1 + x), exact for small x")
digamma = _native("digamma", O.digamma, "the logarithmic derivative of the gamma function")
psi = _native("psi", O.digamma, "digamma (its other name)")


def gammaln(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.gammaln(input)``: log |Gamma(x)| (+inf at -inf, as
    PyTorch's; SciPy's is -inf there); differentiable (digamma)."""
    _no_out("gammaln", out)
    x = _tensor("gammaln", input)
    at = O.truth(x == -np.inf)
    return O.where(at, np.inf, O.gammaln(x)) if at.any() else O.gammaln(x)


sinc = _native("sinc", O.sinc, "the normalized sinc sin(pi x) / (pi x), 1 at 0")


def round(input: Tensor, *, decimals: int = 0, out: None = None) -> Tensor:  # noqa: A001, A002
    """PyTorch's ``torch.special.round(input, *, decimals=0)``: round half to even
    (``Tensor.round``); its derivative is 0."""
    _no_out("round", out)
    return _tensor("round", input).round(decimals=decimals)


def logit(input: Tensor, eps: float | None = None, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.logit(input, eps=None)``: log(x / (1 - x)), of x clamped to
    [eps, 1 - eps] when eps is given (``Tensor.logit``)."""
    _no_out("logit", out)
    return _tensor("logit", input).logit(eps)


def polygamma(n: int, input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.polygamma(n, input)``: the n-th derivative of digamma;
    differentiable in input (n is a nonnegative whole number)."""
    _no_out("polygamma", out)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(
            f"tg.special.polygamma: n must be a nonnegative integer (polygamma(n) is only "
            f"defined for n >= 0), got {n!r}"
        )
    return O.polygamma(int(n), _tensor("polygamma", input))


def multigammaln(input: Tensor, p: int, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.multigammaln(input, p)``: the log of the multivariate gamma
    function of dimension p (``Tensor.mvlgamma``)."""
    _no_out("multigammaln", out)
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise RuntimeError(
            f"tg.special.multigammaln: p has to be greater than or equal to 1 (a whole "
            f"number), got {p!r}"
        )
    return _tensor("multigammaln", input).mvlgamma(int(p))


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.softmax(input, dim, *, dtype=None)`` (``Tensor.softmax``)."""
    return _tensor("softmax", input).softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.log_softmax(input, dim, *, dtype=None)``
    (``Tensor.log_softmax``)."""
    return _tensor("log_softmax", input).log_softmax(dim, dtype=dtype)


def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.logsumexp(input, dim, keepdim=False)``
    (``Tensor.logsumexp``)."""
    _no_out("logsumexp", out)
    return _tensor("logsumexp", input).logsumexp(dim, keepdim)


def xlogy(input, other, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.xlogy(input, other)``: input * log(other), 0 where input is
    0 (NaN where other is); differentiable in both (``Tensor.xlogy``)."""
    _no_out("xlogy", out)
    return _tensor("xlogy", input).xlogy(_tensor("xlogy", other, "other"))


def xlog1py(input, other, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.xlog1py(input, other)``: input * log1p(other), 0 where input
    is 0 (NaN where other is); differentiable in both (d/dinput 0 where input is 0 and
    other <= -1, as PyTorch's)."""
    _no_out("xlog1py", out)
    x, y = _tensor("xlog1py", input), _tensor("xlog1py", other, "other")
    # where input is 0 and other <= -1 (log1p -inf or NaN) the value 0 and d/dinput 0, as
    # PyTorch's (SciPy's d/dx there is log1p(other))
    off = O.truth((x == 0.0) & (y <= -1.0))
    if off.any():
        y = O.where(off, 0.0, y)
    out_ = _sp().xlog1py(x, y)
    nan = O.truth(y != y)
    return O.where(nan, np.nan, out_) if nan.any() else out_


def ndtr(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.ndtr(input)``: the standard normal distribution function
    Phi(x) = erfc(-x / sqrt 2) / 2; differentiable (the normal density)."""
    _no_out("ndtr", out)
    return _gaussian.ndtr(_tensor("ndtr", input))


def log_ndtr(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.log_ndtr(input)``: log Phi(x), accurate in both tails (an
    asymptotic series below -10); differentiable."""
    _no_out("log_ndtr", out)
    return _gaussian.log_ndtr(_tensor("log_ndtr", input))


def ndtri(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.ndtri(input)``: the inverse of ndtr, -sqrt 2 erfcinv(2 p);
    -inf at 0, inf at 1, NaN outside [0, 1]; differentiable."""
    _no_out("ndtri", out)
    return _gaussian.ndtri(_tensor("ndtri", input))


_J0_SERIES = 0.5  # |x| below which sin(x) / x is its Taylor series (no cancellation)


def spherical_bessel_j0(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.spherical_bessel_j0(input)``: sin(x) / x, 1 at 0;
    differentiable at every order (its Taylor series near 0, where the derivatives of the
    quotient cancel)."""
    _no_out("spherical_bessel_j0", out)
    x = _tensor("spherical_bessel_j0", input)
    near = O.truth(O.abs_(x) < _J0_SERIES)
    xs = O.where(near, x, 0.0)
    z = O.square(xs)  # sum_k (-1)^k z^k / (2k + 1)!
    acc = 0.0
    for k in range(10, -1, -1):
        acc = (-1) ** k / math.factorial(2 * k + 1) + z * acc
    # sin(inf) is NaN: the limits (0, and derivatives 0) at +-inf, where the quotient sees 1
    inf = O.truth(O.abs_(x) == np.inf)
    xf = O.where(near | inf, 1.0, x)
    far = O.sin(xf) / xf
    far = O.where(inf, 0.0, far) if inf.any() else far
    return O.where(near, acc, far)


# ---- orthogonal polynomials: their recurrences in x --------------------------------------------


def _start(kind: str, x):
    """(P_0, P_1) of polynomial family ``kind``."""
    one = O.add(O.mul(x, 0.0), 1.0)
    first = {
        "t": lambda: x,
        "u": lambda: 2.0 * x,
        "v": lambda: 2.0 * x - 1.0,
        "w": lambda: 2.0 * x + 1.0,
        "h": lambda: 2.0 * x,
        "he": lambda: x,
        "l": lambda: 1.0 - x,
        "p": lambda: x,
    }[kind]()
    return one, first


def _step(kind: str, k: int, x, prev, cur):
    """P_{k+1} from P_{k-1} = prev and P_k = cur."""
    if kind in ("t", "u", "v", "w"):
        return 2.0 * x * cur - prev
    if kind == "h":
        return 2.0 * x * cur - (2.0 * k) * prev
    if kind == "he":
        return x * cur - float(k) * prev
    if kind == "l":
        return ((2.0 * k + 1.0 - x) * cur - float(k) * prev) / (k + 1.0)
    return ((2.0 * k + 1.0) * x * cur - float(k) * prev) / (k + 1.0)  # Legendre


def _orders(name: str, n):
    """The whole orders of ``n`` (PyTorch truncates a fractional n; not differentiable)."""
    v = np.asarray(n.detach().numpy() if isinstance(n, Tensor) else n)
    if v.dtype.kind not in "biuf":
        raise TypeError(
            f"tg.special.{name}: n must be a whole number or a Tensor of them, got {n!r}"
        )
    if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
        raise ValueError(f"tg.special.{name}: n must be finite, got {n!r}")
    return np.trunc(v).astype(np.int64)


def _polynomial(name: str, kind: str, shifted: bool, input, n):
    x = _tensor(name, input)
    orders = _orders(name, n)
    if shifted:
        x = 2.0 * x - 1.0
    shape = np.broadcast_shapes(x.shape, orders.shape)
    if x.shape != shape:
        x = O.broadcast_to(x, shape)
    orders = np.broadcast_to(orders, shape)
    top = int(orders.max()) if orders.size else 0
    prev, cur = _start(kind, x)
    out = O.where(orders == 0, prev, O.mul(prev, 0.0))  # 0 for negative n, as PyTorch
    if top >= 1:
        out = O.where(orders == 1, cur, out)
    for k in range(1, top):
        prev, cur = cur, _step(kind, k, x, prev, cur)
        out = O.where(orders == k + 1, cur, out)
    return out


def _polynomial_fn(name: str, kind: str, shifted: bool, what: str):
    def f(input: Tensor, n, *, out: None = None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        return _polynomial(name, kind, shifted, input, n)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"PyTorch's ``torch.special.{name}(input, n)``: {what} of degree n (0 for n < 0; a "
        "fractional n truncated), by its three-term recurrence in x, so it is differentiable "
        "in x at every order (PyTorch's is not differentiable); n is not."
    )
    return f


_CHEB = "the Chebyshev polynomial of the {} kind"
chebyshev_polynomial_t = _polynomial_fn("chebyshev_polynomial_t", "t", False, _CHEB.format("first"))
chebyshev_polynomial_u = _polynomial_fn(
    "chebyshev_polynomial_u", "u", False, _CHEB.format("second")
)
chebyshev_polynomial_v = _polynomial_fn("chebyshev_polynomial_v", "v", False, _CHEB.format("third"))
chebyshev_polynomial_w = _polynomial_fn(
    "chebyshev_polynomial_w", "w", False, _CHEB.format("fourth")
)
_SHIFTED = "the shifted Chebyshev polynomial of the {} kind (of 2x - 1)"
shifted_chebyshev_polynomial_t = _polynomial_fn(
    "shifted_chebyshev_polynomial_t", "t", True, _SHIFTED.format("first")
)
shifted_chebyshev_polynomial_u = _polynomial_fn(
    "shifted_chebyshev_polynomial_u", "u", True, _SHIFTED.format("second")
)
shifted_chebyshev_polynomial_v = _polynomial_fn(
    "shifted_chebyshev_polynomial_v", "v", True, _SHIFTED.format("third")
)
shifted_chebyshev_polynomial_w = _polynomial_fn(
    "shifted_chebyshev_polynomial_w", "w", True, _SHIFTED.format("fourth")
)
hermite_polynomial_h = _polynomial_fn(
    "hermite_polynomial_h", "h", False, "the physicists' Hermite polynomial H"
)
hermite_polynomial_he = _polynomial_fn(
    "hermite_polynomial_he", "he", False, "the probabilists' Hermite polynomial He"
)
laguerre_polynomial_l = _polynomial_fn(
    "laguerre_polynomial_l", "l", False, "the Laguerre polynomial L"
)
legendre_polynomial_p = _polynomial_fn(
    "legendre_polynomial_p", "p", False, "the Legendre polynomial P"
)


# ---- through SciPy -------------------------------------------------------------------------------


def _scipy_fn(name: str, scipy_name: str, what: str):
    def f(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
        _no_out(name, out)
        return getattr(_sp(), scipy_name)(_tensor(name, input))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"PyTorch's ``torch.special.{name}(input)``: {what} (SciPy's ``{scipy_name}``); "
        "differentiable at every order."
    )
    return f


erfcx = _scipy_fn("erfcx", "erfcx", "the scaled complementary error function exp(x^2) erfc(x)")
entr = _scipy_fn("entr", "entr", "-x log(x), 0 at 0, -inf below")
i0 = _scipy_fn("i0", "i0", "the modified Bessel function of the first kind of order 0")
i1 = _scipy_fn("i1", "i1", "the modified Bessel function of the first kind of order 1")
i0e = _scipy_fn("i0e", "i0e", "exp(-|x|) i0(x)")
i1e = _scipy_fn("i1e", "i1e", "exp(-|x|) i1(x)")
bessel_j0 = _scipy_fn("bessel_j0", "j0", "the Bessel function of the first kind of order 0")
bessel_j1 = _scipy_fn("bessel_j1", "j1", "the Bessel function of the first kind of order 1")
bessel_y0 = _scipy_fn("bessel_y0", "y0", "the Bessel function of the second kind of order 0")
bessel_y1 = _scipy_fn("bessel_y1", "y1", "the Bessel function of the second kind of order 1")
modified_bessel_i0 = _scipy_fn("modified_bessel_i0", "i0", "the modified Bessel function I_0")
modified_bessel_i1 = _scipy_fn("modified_bessel_i1", "i1", "the modified Bessel function I_1")
modified_bessel_k0 = _scipy_fn("modified_bessel_k0", "k0", "the modified Bessel function K_0")
modified_bessel_k1 = _scipy_fn("modified_bessel_k1", "k1", "the modified Bessel function K_1")
scaled_modified_bessel_k0 = _scipy_fn("scaled_modified_bessel_k0", "k0e", "exp(x) K_0(x)")
scaled_modified_bessel_k1 = _scipy_fn("scaled_modified_bessel_k1", "k1e", "exp(x) K_1(x)")


def airy_ai(input: Tensor, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.airy_ai(input)``: the Airy function Ai (SciPy's values);
    differentiable at every order (Ai'' = x Ai)."""
    _no_out("airy_ai", out)
    return _airy(_tensor("airy_ai", input), 0)


def _airy(x, which: int):
    """Ai (which 0) or Ai' (which 1) as an op whose derivative is Ai' or x Ai."""
    sp = _sp()

    def value(z):
        return sp._sp.airy(z)[which]

    def derivative(z):
        return _airy(z, 1) if which == 0 else z * _airy(z, 0)

    return sp._scipy_op(x, value, derivative)


def gammainc(input, other, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.gammainc(input, other)``: the regularized lower incomplete
    gamma function P(a = input, x = other); differentiable in other at every order and once
    in input (PyTorch raises for input)."""
    _no_out("gammainc", out)
    return _sp().gammainc(_tensor("gammainc", input), _tensor("gammainc", other, "other"))


def gammaincc(input, other, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.gammaincc(input, other)``: the regularized upper incomplete
    gamma function Q(a = input, x = other) = 1 - P; differentiable as ``gammainc``."""
    _no_out("gammaincc", out)
    return _sp().gammaincc(_tensor("gammaincc", input), _tensor("gammaincc", other, "other"))


def zeta(input, other, *, out: None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.special.zeta(input, other)``: the Hurwitz zeta function
    sum_k (k + other)^-input; differentiable in other at every order; the derivative in input
    is not implemented (NotImplementedError, as PyTorch's)."""
    _no_out("zeta", out)
    x, q = _tensor("zeta", input), _tensor("zeta", other, "other")
    if x.requires_grad:
        raise NotImplementedError(
            "tg.special.zeta: the derivative for 'zeta' in input (the exponent) is not "
            "implemented; pass input.detach() (the derivative in other is)"
        )
    return _sp().zeta(x.detach(), q)


# an example of each (in its docstring)
_EXAMPLES = {
    "airy_ai": ("ts.airy_ai(tg.tensor([0.0, 1.0]))", "tensor([0.3550, 0.1353])"),
    "bessel_j0": ("ts.bessel_j0(tg.tensor([0.0, 1.0]))", "tensor([1.0000, 0.7652])"),
    "bessel_j1": ("ts.bessel_j1(tg.tensor([0.0, 1.0]))", "tensor([0.0000, 0.4401])"),
    "bessel_y0": ("ts.bessel_y0(tg.tensor([1.0, 2.0]))", "tensor([0.0883, 0.5104])"),
    "bessel_y1": ("ts.bessel_y1(tg.tensor([1.0, 2.0]))", "tensor([-0.7812, -0.1070])"),
    "chebyshev_polynomial_t": (
        "ts.chebyshev_polynomial_t(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-1., 26.])",
    ),
    "chebyshev_polynomial_u": (
        "ts.chebyshev_polynomial_u(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-1., 56.])",
    ),
    "chebyshev_polynomial_v": (
        "ts.chebyshev_polynomial_v(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-1., 41.])",
    ),
    "chebyshev_polynomial_w": (
        "ts.chebyshev_polynomial_w(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-1., 71.])",
    ),
    "digamma": ("ts.digamma(tg.tensor([1.0, 0.5]))", "tensor([-0.5772, -1.9635])"),
    "entr": ("ts.entr(tg.tensor([0.0, 0.5, -1.0]))", "tensor([0.0000, 0.3466, -inf])"),
    "erf": ("ts.erf(tg.tensor([0.0, 1.0]))", "tensor([0.0000, 0.8427])"),
    "erfc": ("ts.erfc(tg.tensor([0.0, 1.0]))", "tensor([1.0000, 0.1573])"),
    "erfcx": ("ts.erfcx(tg.tensor([0.0, 30.0]))", "tensor([1.0000, 0.0188])"),
    "erfinv": ("ts.erfinv(tg.tensor([0.0, 0.5]))", "tensor([0.0000, 0.4769])"),
    "exp2": ("ts.exp2(tg.tensor([0.0, 3.0]))", "tensor([1., 8.])"),
    "expit": ("ts.expit(tg.tensor([0.0, 2.0]))", "tensor([0.5000, 0.8808])"),
    "expm1": ("ts.expm1(tg.tensor([0.0, 1e-10]))", "tensor([0.0000e+00, 1.0000e-10])"),
    "gammainc": (
        "ts.gammainc(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))",
        "tensor([0.6321, 0.2642])",
    ),
    "gammaincc": (
        "ts.gammaincc(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))",
        "tensor([0.3679, 0.7358])",
    ),
    "gammaln": ("ts.gammaln(tg.tensor([0.5, 3.0]))", "tensor([0.5724, 0.6931])"),
    "hermite_polynomial_h": (
        "ts.hermite_polynomial_h(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-5., 40.])",
    ),
    "hermite_polynomial_he": (
        "ts.hermite_polynomial_he(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-1.3750, 2.0000])",
    ),
    "i0": ("ts.i0(tg.tensor([0.0, 1.0]))", "tensor([1.0000, 1.2661])"),
    "i0e": ("ts.i0e(tg.tensor([0.0, 1.0]))", "tensor([1.0000, 0.4658])"),
    "i1": ("ts.i1(tg.tensor([0.0, 1.0]))", "tensor([0.0000, 0.5652])"),
    "i1e": ("ts.i1e(tg.tensor([0.0, 1.0]))", "tensor([0.0000, 0.2079])"),
    "laguerre_polynomial_l": (
        "ts.laguerre_polynomial_l(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-0.1458, -0.3333])",
    ),
    "legendre_polynomial_p": (
        "ts.legendre_polynomial_p(tg.tensor([0.5, 2.0]), 3)",
        "tensor([-0.4375, 17.0000])",
    ),
    "log1p": ("ts.log1p(tg.tensor([0.0, 1e-10]))", "tensor([0.0000e+00, 1.0000e-10])"),
    "log_ndtr": ("ts.log_ndtr(tg.tensor([0.0, -40.0]))", "tensor([-6.9315e-01, -8.0461e+02])"),
    "log_softmax": ("ts.log_softmax(tg.tensor([1.0, 1.0]), 0)", "tensor([-0.6931, -0.6931])"),
    "logit": ("ts.logit(tg.tensor([0.5, 0.0]), eps=0.25)", "tensor([0.0000, -1.0986])"),
    "logsumexp": ("ts.logsumexp(tg.tensor([[0.0, 0.0]]), 1)", "tensor([0.6931])"),
    "modified_bessel_i0": (
        "ts.modified_bessel_i0(tg.tensor([0.0, 1.0]))",
        "tensor([1.0000, 1.2661])",
    ),
    "modified_bessel_i1": (
        "ts.modified_bessel_i1(tg.tensor([0.0, 1.0]))",
        "tensor([0.0000, 0.5652])",
    ),
    "modified_bessel_k0": (
        "ts.modified_bessel_k0(tg.tensor([1.0, 2.0]))",
        "tensor([0.4210, 0.1139])",
    ),
    "modified_bessel_k1": (
        "ts.modified_bessel_k1(tg.tensor([1.0, 2.0]))",
        "tensor([0.6019, 0.1399])",
    ),
    "multigammaln": ("ts.multigammaln(tg.tensor([2.5]), 2)", "tensor([0.8570])"),
    "ndtr": ("ts.ndtr(tg.tensor([0.0, -20.0]))", "tensor([5.0000e-01, 2.7536e-89])"),
    "ndtri": ("ts.ndtri(tg.tensor([0.5, 0.975]))", "tensor([0.0000, 1.9600])"),
    "polygamma": ("ts.polygamma(1, tg.tensor([1.0, 0.5]))", "tensor([1.6449, 4.9348])"),
    "psi": ("ts.psi(tg.tensor([1.0, 0.5]))", "tensor([-0.5772, -1.9635])"),
    "round": ("ts.round(tg.tensor([0.5, 1.5, 2.25]))", "tensor([0., 2., 2.])"),
    "scaled_modified_bessel_k0": (
        "ts.scaled_modified_bessel_k0(tg.tensor([1.0, 100.0]))",
        "tensor([1.1445, 0.1252])",
    ),
    "scaled_modified_bessel_k1": (
        "ts.scaled_modified_bessel_k1(tg.tensor([1.0, 100.0]))",
        "tensor([1.6362, 0.1258])",
    ),
    "shifted_chebyshev_polynomial_t": (
        "ts.shifted_chebyshev_polynomial_t(tg.tensor([0.25, 1.0]), 3)",
        "tensor([1., 1.])",
    ),
    "shifted_chebyshev_polynomial_u": (
        "ts.shifted_chebyshev_polynomial_u(tg.tensor([0.25, 1.0]), 3)",
        "tensor([1., 4.])",
    ),
    "shifted_chebyshev_polynomial_v": (
        "ts.shifted_chebyshev_polynomial_v(tg.tensor([0.25, 1.0]), 3)",
        "tensor([1., 1.])",
    ),
    "shifted_chebyshev_polynomial_w": (
        "ts.shifted_chebyshev_polynomial_w(tg.tensor([0.25, 1.0]), 3)",
        "tensor([1., 7.])",
    ),
    "sinc": ("ts.sinc(tg.tensor([0.0, 0.5]))", "tensor([1.0000, 0.6366])"),
    "softmax": ("ts.softmax(tg.tensor([1.0, 1.0]), 0)", "tensor([0.5000, 0.5000])"),
    "spherical_bessel_j0": (
        "ts.spherical_bessel_j0(tg.tensor([0.0, 1.0]))",
        "tensor([1.0000, 0.8415])",
    ),
    "xlog1py": (
        "ts.xlog1py(tg.tensor([0.0, 2.0]), tg.tensor([-1.0, 1.0]))",
        "tensor([0.0000, 1.3863])",
    ),
    "xlogy": ("ts.xlogy(tg.tensor([0.0, 2.0]), tg.tensor([0.0, 3.0]))", "tensor([0.0000, 2.1972])"),
    "zeta": ("ts.zeta(tg.tensor([2.0, 4.0]), tg.tensor([1.0, 1.0]))", "tensor([1.6449, 1.0823])"),
}


for _name, (_call, _shown) in _EXAMPLES.items():
    globals()[_name].__doc__ += (
        "\n\n    >>> import tapegrad as tg\n    >>> import tapegrad.special as ts\n"
        f"    >>> {_call}\n    {_shown}\n"
    )
del _name, _call, _shown


def __dir__():
    """The public names only."""
    return list(__all__)
