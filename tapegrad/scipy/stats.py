"""``scipy.stats`` distributions with SciPy's names and signatures, differentiable on Tensors.

``tapegrad.scipy.stats.norm.logpdf(x, loc, scale)`` as in SciPy: with a Tensor among the
arguments the result is a Tensor differentiable in x, loc, scale and the shape parameters
wherever a closed form exists (log-densities everywhere; cdfs in x, loc and scale, and in
the Poisson mean; the gamma and chi-squared cdfs in their shape, once); a derivative with
no closed form here (another cdf in a shape parameter, a discrete k) raises
NotImplementedError naming the argument.  On plain arrays every method is SciPy's own call.
Outside the support the log-density is -inf with derivative 0, and a nonpositive scale
gives NaN, as SciPy.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ..core import functions as O
from ..core.tensor import value_of
from ..numpy import linalg_ops as _linalg
from ..tensor_class import Tensor
from . import require_scipy
from . import special as S

_st = require_scipy("scipy.stats")
_sc = require_scipy("scipy.special")

__all__ = [
    "norm",
    "multivariate_normal",
    "t",
    "gamma",
    "beta",
    "chi2",
    "poisson",
    "dirichlet",
    "expon",
    "laplace",
    "uniform",
    "lognorm",
    "cauchy",
    "logistic",
    "weibull_min",
    "halfnorm",
    "truncnorm",
    "binom",
    "nbinom",
    "geom",
    "bernoulli",
]

_LOG_2PI = math.log(2.0 * math.pi)


def _tensor_in(*args) -> bool:
    return any(isinstance(a, Tensor) for a in args)


def _refuse(dist: str, method: str, name: str, a) -> None:
    if isinstance(a, Tensor) and a.requires_grad:
        raise NotImplementedError(
            f"tapegrad.scipy.stats.{dist}.{method}: the derivative in {name} has no closed form "
            f"here; pass {name} as a number, an array or a Tensor that does not require grad"
        )


def _nan_unless_positive(scale):
    """0 where scale > 0 (+inf included: SciPy's norm.cdf(0.5, 0, inf) is 0.5), NaN
    elsewhere (SciPy's value for an invalid scale); adds nothing to any derivative."""
    return 0.0 * O.log(O.minimum(O.tensor_of(scale), 1.0))


def _nan_unless_valid_shape(v):
    """0 where a shape parameter that must be positive is > 0 (+inf included: t's df), NaN
    elsewhere, as SciPy returns for an invalid shape; adds nothing to any derivative."""
    return 0.0 * O.log(O.minimum(O.tensor_of(v), 1.0))


def _standardize(x, loc, scale):
    return O.div(O.sub(x, loc), scale)


def _select(cond, inside, outside):
    """``inside`` where ``cond``, else the constant ``outside``; the condition is a tape guard
    when it comes from Tensors (a trace replays it or asks to retrace)."""
    return O.where(cond, inside, outside)


def _safe(z, cond, fill):
    """z where ``cond``, ``fill`` elsewhere: a branch never evaluated at points it would turn
    into NaN (a NaN in the unselected branch would still poison the derivatives)."""
    return O.where(cond, z, fill)


class _Distribution:
    """A SciPy distribution: methods dispatch to SciPy on plain arrays."""

    name = ""
    positive = ()  # the shape parameters SciPy requires to be > 0

    def __init__(self):
        self._scipy = getattr(_st, self.name)

    def __repr__(self) -> str:
        return f"<tapegrad.scipy.stats.{self.name}>"

    def rvs(self, *args, **kwargs):
        """Random samples, SciPy's ``rvs`` (same arguments, ``size`` and ``random_state``
        included), on plain parameters: a draw has no derivative in the parameters here."""
        if _tensor_in(*args, *kwargs.values()):
            raise TypeError(
                f"tapegrad.scipy.stats.{self.name}.rvs: sampling is not differentiable in its "
                "parameters; pass plain numbers or arrays (p.detach().numpy()), or write the "
                "draw as a differentiable transform of standard noise (for the normal: "
                "loc + scale * np.random.randn(n))"
            )
        return self._scipy.rvs(*args, **kwargs)


# ---- normal ------------------------------------------------------------------------------------


def _keep_nan(z, out):
    """NaN where z is NaN: a support mask or a branch condition would otherwise turn a NaN
    input into a number (the comparison is a guard in a trace)."""
    isnan = O.truth(z != z)
    if not isnan.any():
        return out
    return O.where(np.broadcast_to(isnan, np.shape(value_of(out))), np.nan, out)


_FAR, _UPPER = -10.0, 0.0  # log Phi's three regimes (see _log_ndtr)
_TAIL_TERMS = 30


def _log_ndtr(z):
    """log Phi(z) in three regimes, each accurate to a few ulp with its derivatives:
    z > 0: log1p(-Phi(-z)) (log(1 - tiny) would round to 0: log Phi(10) is -7.6e-24);
    -10 <= z <= 0: log(erfc(-z / sqrt 2) / 2); z < -10: the asymptotic series
    -z^2/2 - log(-z sqrt(2 pi)) + log(1 - 1/z^2 + 3/z^4 - ...) to 30 terms (the last below
    1e-19 from z = -10).  The derivatives of log erfc lose about z^(2n-2) ulp at order n
    (3.7e-7 of the third at z = -19.5), and erfc's square, which second derivatives need,
    underflows from about z = -26: the series takes over from -10.  Each branch is
    evaluated at a safe point outside its regime, so no NaN or inf reaches the
    derivatives."""
    far, upper = z < _FAR, z > _UPPER
    mid = _safe(_safe(z, z >= _FAR, 0.0), z <= _UPPER, 0.0)
    near = O.log(0.5 * O.erfc(-mid / math.sqrt(2.0)))
    up = _safe(z, upper, 10.0)
    high = O.log1p(-0.5 * O.erfc(up / math.sqrt(2.0)))
    w = _safe(z, far, -40.0)
    r = 1.0 / (w * w)
    series = 1.0
    for k in range(_TAIL_TERMS, 0, -1):  # 1 - r (1 - 3 r (1 - 5 r (...))): (2k - 1)!! r^k
        series = 1.0 - (2 * k - 1) * r * series
    tail = -0.5 * w * w - O.log(-w) - 0.5 * _LOG_2PI + O.log(series)
    return _keep_nan(z, O.where(far, tail, O.where(upper, high, near)))


class _Norm(_Distribution):
    """The normal distribution, ``scipy.stats.norm``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda m: stats.norm.logpdf(1.0, m, 2.0))(0.0)     # (x - m) / s^2
    0.25
    >>> round(float(stats.norm.cdf(0.0)), 12)
    0.5
    """

    name = "norm"

    def logpdf(self, x, loc=0.0, scale=1.0):
        """log density at x."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.logpdf(x, loc, scale)
        z = _standardize(x, loc, scale)
        return -0.5 * z * z - O.log(O.tensor_of(scale)) - 0.5 * _LOG_2PI

    def pdf(self, x, loc=0.0, scale=1.0):
        """density at x."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.pdf(x, loc, scale)
        return O.exp(self.logpdf(x, loc, scale))

    def cdf(self, x, loc=0.0, scale=1.0):
        """P(X <= x)."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.cdf(x, loc, scale)
        z = _standardize(x, loc, scale)
        return 0.5 * O.erfc(-z / math.sqrt(2.0)) + _nan_unless_positive(scale)

    def logcdf(self, x, loc=0.0, scale=1.0):
        """log P(X <= x), accurate far in the lower tail."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.logcdf(x, loc, scale)
        return _log_ndtr(_standardize(x, loc, scale)) + _nan_unless_positive(scale)

    def sf(self, x, loc=0.0, scale=1.0):
        """P(X > x)."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.sf(x, loc, scale)
        z = _standardize(x, loc, scale)
        return 0.5 * O.erfc(z / math.sqrt(2.0)) + _nan_unless_positive(scale)

    def logsf(self, x, loc=0.0, scale=1.0):
        """log P(X > x), accurate far in the upper tail."""
        if not _tensor_in(x, loc, scale):
            return self._scipy.logsf(x, loc, scale)
        return _log_ndtr(-_standardize(x, loc, scale)) + _nan_unless_positive(scale)

    def ppf(self, q, loc=0.0, scale=1.0):
        """The quantile: the x with P(X <= x) = q (SciPy's ``norm.ppf``, -sqrt 2 erfcinv(2 q)
        standardized); accurate in both tails, -inf / inf at q = 0 / 1, NaN outside [0, 1]."""
        if not _tensor_in(q, loc, scale):
            return self._scipy.ppf(q, loc, scale)
        return _from_std(_ndtri(q), loc, scale)

    def isf(self, q, loc=0.0, scale=1.0):
        """The inverse survival function: the x with P(X > x) = q (SciPy's ``norm.isf``)."""
        if not _tensor_in(q, loc, scale):
            return self._scipy.isf(q, loc, scale)
        return _from_std(O.neg(_ndtri(q)), loc, scale)


def _ndtri(q):
    """The standard normal quantile, -sqrt 2 erfcinv(2 q): accurate to a few ulp from q =
    1e-300 to 1 - 1e-16 (erfcinv of the tiny 2 q, not erfinv of 2 q - 1, which loses q's
    digits), NaN outside [0, 1]; every derivative a native op."""
    return _nan_outside_unit(q, -math.sqrt(2.0) * O.erfcinv(2.0 * O.tensor_of(q)))


def _nan_outside_unit(q, out):
    """``out`` where 0 <= q <= 1, NaN elsewhere (SciPy's quantile of a probability that is
    not one); a NaN q stays NaN."""
    q = O.tensor_of(q)
    bad = O.truth(~((q >= 0.0) & (q <= 1.0)))  # (a guard in a trace)
    if not bad.any():
        return out
    # times NaN, not replaced by it: the derivatives there are NaN too, not 0
    return O.mul(out, O.where(bad, np.nan, 1.0))


def _from_std(z, loc, scale):
    """loc + scale z: a standardized quantile moved and scaled, NaN for a scale that is
    not positive (as SciPy)."""
    return O.add(loc, O.mul(scale, z)) + _nan_unless_positive(scale)


norm = _Norm()


# ---- location-scale families with shape parameters ----------------------------------------------


class _LocScale(_Distribution):
    """``method(x, *shapes, loc=0, scale=1)`` from a standardized log-density of
    z = (x - loc) / scale (a Tensor expression, differentiable in z and the shapes).  The
    cdf-like methods take SciPy's values and, as derivative in z, the density (itself a
    Tensor expression, so every order works); in the shape parameters they are refused."""

    shapes: tuple = ()
    lower, upper = -math.inf, math.inf  # support of z
    lower_open = False  # the density is 0 at z = lower (lognorm)

    def _logpdf_std(self, z, *shapes):
        raise NotImplementedError

    def _parse(self, args, kwds, method):
        names = self.shapes + ("loc", "scale")
        if len(args) > len(names):
            raise TypeError(f"{self.name}.{method}() takes at most {len(names) + 1} arguments")
        values = dict(zip(names, args, strict=False))
        for k, v in kwds.items():
            if k not in names or k in values:
                raise TypeError(
                    f"{self.name}.{method}() got an unexpected or repeated argument {k!r}"
                )
            values[k] = v
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise TypeError(f"{self.name}.{method}() missing shape argument(s) {missing}")
        return ([values[n] for n in self.shapes], values.get("loc", 0.0), values.get("scale", 1.0))

    def _logpdf_z(self, z, shapes):
        """The standardized log-density, -inf outside the support (derivative 0 there)."""
        above = (z > self.lower) if self.lower_open else (z >= self.lower)
        conds = ([above] if self.lower > -math.inf else []) + (
            [z <= self.upper] if self.upper < math.inf else []
        )
        mid = 0.5 if self.upper < math.inf else self.lower + 1.0
        z0 = z
        for cond in conds:  # never evaluated outside: no NaN to poison derivatives
            z = O.where(cond, z, mid)
        out = self._logpdf_std(z, *shapes)
        for cond in conds:
            out = O.where(cond, out, -np.inf)
        return _keep_nan(z0, out)

    def logpdf(self, x, *args, **kwds):
        """log density at x (SciPy's signature: x, shape parameters, loc, scale)."""
        shapes, loc, scale = self._parse(args, kwds, "logpdf")
        if not _tensor_in(x, loc, scale, *shapes):
            return self._scipy.logpdf(x, *args, **kwds)
        z = _standardize(x, loc, scale)
        return self._logpdf_z(z, shapes) - O.log(O.tensor_of(scale)) + self._shape_nan(shapes)

    def _shape_nan(self, shapes):
        """NaN where a positive shape (``positive``: their names) is not, as SciPy gives."""
        out = 0.0
        for name, v in zip(self.shapes, shapes, strict=True):
            if name in self.positive:
                out = out + _nan_unless_valid_shape(v)
        return out

    def pdf(self, x, *args, **kwds):
        """density at x."""
        if not _tensor_in(x, *args, *kwds.values()):
            return self._scipy.pdf(x, *args, **kwds)
        return O.exp(self.logpdf(x, *args, **kwds))

    def _cdf_in_shapes(self, z, shapes, upper):
        """The cdf (``upper``: the survival function) of the standardized z as a Tensor
        differentiable in the shapes too, for families that have one (None: the derivative
        in a shape is refused)."""
        return None

    def _cdf_like(self, method, x, args, kwds):
        shapes, loc, scale = self._parse(args, kwds, method)
        if not _tensor_in(x, loc, scale, *shapes):
            return getattr(self._scipy, method)(x, *args, **kwds)
        if any(isinstance(v, Tensor) and v.requires_grad for v in shapes):
            z = _standardize(x, loc, scale)
            upper = method.endswith("sf")
            out = self._cdf_in_shapes(z, shapes, upper)
            if out is not None:
                if method.startswith("log"):
                    out = _log_probability(out, lambda: self._cdf_in_shapes(z, shapes, not upper))
                return out + _nan_unless_positive(scale) + self._shape_nan(shapes)
        for name, v in zip(self.shapes, shapes, strict=True):
            _refuse(self.name, method, name, v)
        sv = [v.data if isinstance(v, Tensor) else v for v in shapes]
        fn = getattr(self._scipy, method)
        log_pdf = lambda z: self._logpdf_z(z, sv)  # noqa: E731

        def hazard(z):
            """exp(logpdf - log-probability), refused where SciPy's log-probability has
            underflowed to -inf beside a finite log-density (the gamma logsf at x = 1000,
            a = 2): the quotient would be inf, the derivative is finite (-0.999 there)."""
            lp, lc = log_pdf(z), op(z)
            lost = (np.asarray(value_of(lc)) == -np.inf) & np.isfinite(np.asarray(value_of(lp)))
            if np.any(lost):
                raise ValueError(
                    f"tapegrad.scipy.stats.{self.name}.{method}: SciPy's value is -inf at "
                    f"{np.asarray(value_of(z))[lost].ravel()[:3]} (standardized; the "
                    "probability underflows) where the density is not 0, so its derivative, "
                    f"exp(logpdf - {method}), cannot be computed from it; use points less far "
                    "in the tail"
                )
            if outside is not None:  # log P is the constant -inf there: derivative 0
                out = outside(z)
                if O.truth(out).any():
                    lc = O.where(out, 0.0, lc)  # exp(-inf - 0), not exp(-inf + inf) = NaN
            return O.exp(lp - lc)

        # beyond the support's end where the log-probability is -inf (below it for logcdf,
        # above it for logsf)
        outside = None
        if method == "logcdf" and self.lower > -math.inf:
            outside = lambda z: z < self.lower  # noqa: E731
        elif method == "logsf" and self.upper < math.inf:
            outside = lambda z: z > self.upper  # noqa: E731

        derivative = {
            "cdf": lambda z: O.exp(log_pdf(z)),
            "sf": lambda z: -O.exp(log_pdf(z)),
            "logcdf": hazard,
            "logsf": lambda z: -hazard(z),
        }[method]

        def op(z):
            return S._scipy_op(z, lambda v: fn(v, *sv), derivative)

        return op(_standardize(x, loc, scale)) + _nan_unless_positive(scale)

    def cdf(self, x, *args, **kwds):
        """P(X <= x); differentiable in x, loc, scale."""
        return self._cdf_like("cdf", x, args, kwds)

    def logcdf(self, x, *args, **kwds):
        """log P(X <= x); differentiable in x, loc, scale."""
        return self._cdf_like("logcdf", x, args, kwds)

    def sf(self, x, *args, **kwds):
        """P(X > x); differentiable in x, loc, scale."""
        return self._cdf_like("sf", x, args, kwds)

    def logsf(self, x, *args, **kwds):
        """log P(X > x); differentiable in x, loc, scale."""
        return self._cdf_like("logsf", x, args, kwds)

    def ppf(self, q, *args, **kwds):
        """The quantile, the x with P(X <= x) = q (SciPy's ``ppf``): the support's ends at
        q = 0 and 1, NaN outside [0, 1]; d/dq = 1 / pdf(x), and in a shape parameter
        -(d cdf / d shape) / pdf at x (where the cdf has that derivative here)."""
        return self._quantile("ppf", q, args, kwds)

    def isf(self, q, *args, **kwds):
        """The inverse survival function, the x with P(X > x) = q (SciPy's ``isf``):
        accurate for tiny q (the upper tail); d/dq = -1 / pdf(x)."""
        return self._quantile("isf", q, args, kwds)

    def _quantile(self, method, q, args, kwds):
        shapes, loc, scale = self._parse(args, kwds, method)
        if not _tensor_in(q, loc, scale, *shapes):
            return getattr(self._scipy, method)(q, *args, **kwds)
        z = self._quantile_std(method == "isf", O.tensor_of(q), shapes, method)
        return _from_std(z, loc, scale) + self._shape_nan(shapes)

    def _quantile_std(self, upper, q, shapes, method):
        """The standardized quantile (``upper``: of the survival function): SciPy's value,
        differentiable through ``_Quantile``; a family with a closed form overrides it."""
        for i, (name, v) in enumerate(zip(self.shapes, shapes, strict=True)):
            if isinstance(v, Tensor) and v.requires_grad and not self._has_dcdf(i):
                _refuse(self.name, method, name, v)
        parts = [q, *(O.tensor_of(v) for v in shapes)]
        shape = np.broadcast_shapes(*(p.shape for p in parts))
        parts = [p if p.shape == shape else O.broadcast_to(p, shape) for p in parts]
        return _Quantile.apply(parts[0], (self, upper), *parts[1:])

    def _closed_quantile(self, upper, q, shapes, formula, ends):
        """``formula(q)``, a closed-form standardized quantile, except at the q in ``ends``
        (0 or 1), where its slopes would be 0 * inf = NaN: there SciPy's value through
        ``_Quantile`` with the shapes held fixed (the quantile is the support's end for
        every shape: slope 0 in them, 1 / pdf in q).  The formula never sees those q."""
        end = np.zeros(q.shape, dtype=bool)
        for e in ends:
            end = end | O.truth(q == e)  # (a guard in a trace)
        if not end.any():
            return formula(q)
        out = formula(O.where(end, 0.5, q))
        fixed = [O.tensor_of(v.detach() if isinstance(v, Tensor) else v) for v in shapes]
        parts = [O.where(end, q, 0.5), *fixed]
        shape = np.broadcast_shapes(*(v.shape for v in parts))
        parts = [O.broadcast_to(v, shape) for v in parts]
        return O.where(end, _Quantile.apply(parts[0], (self, upper), *parts[1:]), out)

    _fixed_ends = True  # the support's ends do not move with the shape parameters

    def _into_support(self, z, *shapes):
        """SciPy's standardized quantile ``z`` moved into the support where it rounded out
        of it (a family whose support depends on its shapes overrides it)."""
        return z

    def _has_dcdf(self, i):
        """Whether ``_dcdf`` gives the derivative of the cdf in shape parameter i."""
        return False

    def _dcdf(self, z, shapes, i):
        """d cdf(z; shapes) / d shapes[i] as a Tensor expression (where ``_has_dcdf``)."""
        raise NotImplementedError


class _Quantile(Function):
    """z = ppf(q; shapes) (or isf) of a standardized distribution, SciPy's value.  By the
    implicit function theorem applied to cdf(z; shapes) = q: dz/dq = 1 / pdf(z) (-1 / pdf(z)
    for isf) and dz/d shape = -(d cdf / d shape) / pdf(z), both Tensor expressions of this op
    again, so every order and forward mode work (as far as d cdf / d shape does)."""

    @staticmethod
    def forward(ctx, q, spec, *shapes):
        dist, upper = spec
        ctx.spec = spec
        ctx.save_for_backward(q, *shapes)
        fn = dist._scipy.isf if upper else dist._scipy.ppf
        with np.errstate(all="ignore"):
            out = np.asarray(fn(q.data, *(v.data for v in shapes)), dtype=np.float64)
            return dist._into_support(out, *(v.data for v in shapes))

    @staticmethod
    def _partials(ctx, needs):
        dist, upper = ctx.spec
        q, *shapes = ctx.saved_tensors
        z = _Quantile.apply(q, ctx.spec, *shapes)
        far = O.truth(O.abs_(z) == np.inf)  # an infinite end (q = 0 or 1): the density is 0
        if far.any():  # there (as log(inf) - inf = NaN could come from logpdf); at the median
            mid = dist._scipy.ppf(0.5, *(v.data for v in shapes))  # elsewhere, no NaN
            inv_pdf = O.where(
                far, np.inf, O.exp(O.neg(dist._logpdf_z(O.where(far, mid, z), shapes)))
            )
        else:
            inv_pdf = O.exp(O.neg(dist._logpdf_z(z, shapes)))  # 1 / pdf: inf where pdf is 0
        dq = (O.neg(inv_pdf) if upper else inv_pdf) if needs[0] else None
        if not any(needs[1:]):
            return [dq] + [None] * len(shapes)
        zs = z
        if dist._fixed_ends:  # q = 0 or 1: the support's end whatever the shapes, slope 0
            end = O.truth((q == 0.0) | (q == 1.0))  # (d cdf / d a times 1 / pdf(0) was
            if end.any():  # 0 * inf = NaN: gamma.ppf(0, a)'s derivative in a)
                mid = dist._scipy.ppf(0.5, *(v.data for v in shapes))
                zs = O.where(end, mid, z)
                inv_pdf = O.where(end, 0.0, O.exp(O.neg(dist._logpdf_z(zs, shapes))))
        return [dq] + [
            O.neg(dist._dcdf(zs, shapes, i) * inv_pdf) if need else None
            for i, need in enumerate(needs[1:])
        ]

    @staticmethod
    def backward(ctx, g):
        needs = (ctx.needs_input_grad[0],) + tuple(ctx.needs_input_grad[2:])
        parts = _Quantile._partials(ctx, needs)
        grads = [None if d is None else g * d for d in parts]
        return (grads[0], None, *grads[1:])

    @staticmethod
    def jvp(ctx, tq, _spec, *tshapes):
        tangents = (tq, *tshapes)
        parts = _Quantile._partials(ctx, [t is not None for t in tangents])
        out = None
        for t, d in zip(tangents, parts, strict=True):
            if t is not None:
                out = t * d if out is None else out + t * d
        return out


def _log_probability(p, complement):
    """log p for a probability p, as log1p(-(1 - p)) where p > 1/2 (``complement()`` gives
    1 - p): log p itself rounds to 0 there once 1 - p is below 1e-16 (the gamma logcdf at
    x = 500, a = 2 is -3.6e-215)."""
    near_one = O.truth(p > 0.5)
    if not near_one.any():
        return O.log(p)
    q = O.where(near_one, complement(), 0.0)
    return O.where(near_one, O.log1p(O.neg(q)), O.log(O.where(near_one, 1.0, p)))


class _T(_LocScale):
    """Student's t, ``scipy.stats.t(df)``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.t.logpdf(x, 3.0))(0.0)
    0.0
    """

    name, shapes = "t", ("df",)
    positive = ("df",)  # SciPy: NaN where it is not > 0

    def _logpdf_std(self, z, df):
        infinite = O.truth(df == np.inf)  # the normal limit
        if infinite.any():
            df = O.where(infinite, 1.0, df)
        half = O.mul(O.add(df, 1.0), 0.5)
        out = (  # gammaln(half) - gammaln(df / 2) without their cancellation at large df
            O.neg(S._gammaln_diff(O.mul(df, 0.5), 0.5))
            - 0.5 * O.log(O.mul(df, math.pi))
            - half * _log1p_square_ratio(z, df)
        )
        if not infinite.any():
            return out
        return O.where(np.broadcast_to(infinite, out.shape), -0.5 * z * z - 0.5 * _LOG_2PI, out)


def _log1p_square_ratio(z, df):
    """log(1 + z^2 / df), as 2 log|z| - log(df) + log1p(df / z^2) where z^2 > df: the
    derivatives of log1p(w) hold 1 / (1 + w)^2, which underflows for huge w (the second
    derivative of t.logpdf at x = 1e150 came out -4e-300, not 4e-300).  Each form is
    evaluated only where it is taken."""
    big = O.truth(z * z > df)  # (a guard in a trace)
    if not big.any():
        return O.log1p(z * z / df)
    zb, zs = O.where(big, z, 1.0), O.where(big, 0.0, z)
    far = 2.0 * O.log(O.abs_(zb)) - O.log(df) + O.log1p(df / (zb * zb))
    return O.where(big, far, O.log1p(zs * zs / df))


def _gamma_cdf(a, z, upper):
    """P(a, z) (``upper``: Q(a, z)) for z > 0, 0 (1) below: the gamma cdf (sf),
    differentiable in the shape a once (``special.gammainc``); z is masked where it is not
    positive (no NaN in the branch not taken)."""
    inside = z > 0.0
    fn = S.gammaincc if upper else S.gammainc
    return _select(inside, fn(a, O.where(inside, z, 1.0)), 1.0 if upper else 0.0)


def _dgamma_cdf(a, z):
    """dP(a, z)/da (0 for z <= 0): first order only (a second derivative in a raises
    NotImplementedError, as ``special.gammainc``'s does)."""
    inside = z > 0.0
    return _select(inside, S._GammaincDa.apply(O.tensor_of(a), O.where(inside, z, 1.0)), 0.0)


class _Gamma(_LocScale):
    """The gamma distribution, ``scipy.stats.gamma(a)``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.gamma.logpdf(x, 1.0))(2.0)      # exponential: -1
    -1.0
    """

    name, shapes, lower = "gamma", ("a",), 0.0
    positive = ("a",)  # SciPy: NaN where it is not > 0

    def _logpdf_std(self, z, a):
        return S.xlogy(O.sub(a, 1.0), z) - z - S.gammaln(a)

    def _cdf_in_shapes(self, z, shapes, upper):
        return _gamma_cdf(shapes[0], z, upper)

    def _has_dcdf(self, i):
        return True

    def _dcdf(self, z, shapes, i):
        return _dgamma_cdf(shapes[0], z)


class _Chi2(_LocScale):
    """The chi-squared distribution, ``scipy.stats.chi2(df)``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.chi2.logpdf(x, 2.0))(1.0)       # exponential of mean 2
    -0.5
    """

    name, shapes, lower = "chi2", ("df",), 0.0
    positive = ("df",)  # SciPy: NaN where it is not > 0

    def _logpdf_std(self, z, df):
        k = O.mul(df, 0.5)
        return S.xlogy(O.sub(k, 1.0), z) - 0.5 * z - S.gammaln(k) - k * math.log(2.0)

    def _cdf_in_shapes(self, z, shapes, upper):
        return _gamma_cdf(O.mul(shapes[0], 0.5), O.mul(z, 0.5), upper)

    def _has_dcdf(self, i):
        return True

    def _dcdf(self, z, shapes, i):
        return 0.5 * _dgamma_cdf(O.mul(shapes[0], 0.5), O.mul(z, 0.5))


class _Beta(_LocScale):
    """The beta distribution, ``scipy.stats.beta(a, b)``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.beta.logpdf(x, 2.0, 1.0))(0.5)  # d/dx log(2 x)
    2.0
    """

    name, shapes, lower, upper = "beta", ("a", "b"), 0.0, 1.0
    positive = ("a", "b")  # SciPy: NaN where one is not > 0

    def _logpdf_std(self, z, a, b):
        return S.xlogy(O.sub(a, 1.0), z) + S.xlog1py(O.sub(b, 1.0), -z) - S.betaln(a, b)


class _Expon(_LocScale):
    """The exponential distribution, ``scipy.stats.expon``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda s: stats.expon.logpdf(2.0, scale=s))(1.0)   # -1/s + x/s^2
    1.0
    """

    name, lower = "expon", 0.0

    def _logpdf_std(self, z):
        return -z

    def _quantile_std(self, upper, q, shapes, method):
        """-log1p(-q) (isf: -log q): accurate in both tails."""
        return _nan_outside_unit(q, O.neg(O.log(q) if upper else O.log1p(O.neg(q))))


class _Laplace(_LocScale):
    """The Laplace distribution, ``scipy.stats.laplace``; logcdf and logsf in closed form
    (SciPy's are -inf beyond 745 scales into the tail).

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda m: stats.laplace.logpdf(2.0, m))(0.0)
    1.0
    """

    name = "laplace"

    def _logpdf_std(self, z):
        return -O.abs_(z) - math.log(2.0)

    @staticmethod
    def _logcdf_std(z):
        """log P(Z <= z) in closed form, z - log 2 below 0 and log1p(-exp(-z) / 2) above:
        SciPy's log of its cdf is -inf from z = -745 on, which would make the derivative
        (exp(logpdf - logcdf), 1 there) infinite."""
        neg = z < 0.0
        lower = O.where(neg, z, 0.0) - math.log(2.0)
        upper = O.log1p(-0.5 * O.exp(O.neg(O.where(neg, 0.0, z))))
        return _keep_nan(z, O.where(neg, lower, upper))

    def _quantile_std(self, upper, q, shapes, method):
        """log(2 q) below 1/2, -log(2 - 2 q) above (isf: the negative): both tails accurate."""
        low = q <= 0.5
        out = O.where(
            low, O.log(2.0 * O.where(low, q, 0.25)), O.neg(O.log(2.0 - 2.0 * O.where(low, 0.75, q)))
        )
        return _nan_outside_unit(q, O.neg(out) if upper else out)

    def _closed(self, method, x, args, kwds, sign):
        _, loc, scale = self._parse(args, kwds, method)
        if not _tensor_in(x, loc, scale):
            return getattr(self._scipy, method)(x, *args, **kwds)
        z = _standardize(x, loc, scale)
        return self._logcdf_std(z if sign > 0 else O.neg(z)) + _nan_unless_positive(scale)

    def logcdf(self, x, *args, **kwds):
        """log P(X <= x), accurate in both tails; differentiable in x, loc, scale."""
        return self._closed("logcdf", x, args, kwds, 1.0)

    def logsf(self, x, *args, **kwds):
        """log P(X > x), accurate in both tails; differentiable in x, loc, scale."""
        return self._closed("logsf", x, args, kwds, -1.0)


t = _T()
gamma = _Gamma()
chi2 = _Chi2()
beta = _Beta()
expon = _Expon()
laplace = _Laplace()


# ---- closed-form families: cdf, sf, their logs and the quantiles are Tensor expressions -------


def _log1mexp(d):
    """log(1 - exp(d)) for d <= 0, accurate at both ends (log(-expm1(d)) near 0, log1p(-exp(d))
    far below); each form sees only its own points."""
    near = d > -math.log(2.0)
    return O.where(
        near,
        O.log(O.neg(O.expm1(O.where(near, d, -1.0)))),
        O.log1p(O.neg(O.exp(O.where(near, -1.0, d)))),
    )


class _ClosedForm(_LocScale):
    """A family whose standardized log-cdf and log-sf (``_logcdf_std``) and cdf and sf
    (``_cdf_std``) are Tensor expressions of z and the shape parameters: differentiable in
    every argument at any order.  Moments (``_moments_std``: mean, variance and entropy of
    the standardized variable) give mean, var, std and entropy."""

    def _logcdf_std(self, z, shapes, upper):
        raise NotImplementedError

    def _cdf_std(self, z, shapes, upper):
        return O.exp(self._logcdf_std(z, shapes, upper))

    def _cdf_like(self, method, x, args, kwds):
        shapes, loc, scale = self._parse(args, kwds, method)
        if not _tensor_in(x, loc, scale, *shapes):
            return getattr(self._scipy, method)(x, *args, **kwds)
        z = _standardize(x, loc, scale)
        upper = method.endswith("sf")
        fn = self._logcdf_std if method.startswith("log") else self._cdf_std
        out = _keep_nan(z, fn(z, [O.tensor_of(v) for v in shapes], upper))
        return out + _nan_unless_positive(scale) + self._shape_nan(shapes)

    def _moments_std(self, shapes):
        raise NotImplementedError

    def _moment(self, which, args, kwds):
        shapes, loc, scale = self._parse(args, kwds, which)
        if not _tensor_in(loc, scale, *shapes):
            return getattr(self._scipy, which)(*args, **kwds)
        mean, var, entropy = self._moments_std([O.tensor_of(v) for v in shapes])
        bad = _nan_unless_positive(scale) + self._shape_nan(shapes)
        if which == "mean":
            return O.add(loc, O.mul(scale, mean)) + bad
        if which == "entropy":
            return entropy + O.log(O.tensor_of(scale)) + bad
        var = O.mul(O.square(O.tensor_of(scale)), var)
        return (var if which == "var" else O.sqrt(var)) + bad

    def mean(self, *args, **kwds):
        """The mean (SciPy's signature: shape parameters, loc, scale)."""
        return self._moment("mean", args, kwds)

    def var(self, *args, **kwds):
        """The variance."""
        return self._moment("var", args, kwds)

    def std(self, *args, **kwds):
        """The standard deviation."""
        return self._moment("std", args, kwds)

    def entropy(self, *args, **kwds):
        """The differential entropy (nats)."""
        return self._moment("entropy", args, kwds)


def _outside(z, inside, fill):
    """``fill`` where not ``inside``; the expressions are evaluated at 1/2 there (no NaN)."""
    return O.where(inside, z, 0.5), lambda out: O.where(inside, out, fill)


class _Uniform(_ClosedForm):
    """The uniform distribution on [loc, loc + scale], ``scipy.stats.uniform``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda s: stats.uniform.cdf(1.0, 0.0, s))(2.0)      # d/ds 1 / s
    -0.25
    """

    name, lower, upper = "uniform", 0.0, 1.0

    def _logpdf_std(self, z):
        return O.mul(z, 0.0)

    def _cdf_std(self, z, shapes, upper):
        return O.clip(O.sub(1.0, z) if upper else z, 0.0, 1.0)

    def _logcdf_std(self, z, shapes, upper):
        # log z (logcdf) or log1p(-z) (logsf: log(1 - z) rounded 1 - 1e-20 to 1 and the tie
        # of minimum(1, 1) halved the slope) inside; 0 beyond the far end, -inf past the near
        if upper:
            inside, full = z < 1.0, z < 0.0
            zs = O.where(inside & ~full, z, 0.5)
            return O.where(full, 0.0, O.where(inside, O.log1p(O.neg(zs)), -np.inf))
        inside, full = z > 0.0, z > 1.0
        zs = O.where(inside & ~full, z, 0.5)
        return O.where(full, 0.0, O.where(inside, O.log(zs), -np.inf))

    def _quantile_std(self, upper, q, shapes, method):
        return _nan_outside_unit(q, O.sub(1.0, q) if upper else O.mul(q, 1.0))

    def _moments_std(self, shapes):
        return O.tensor_of(0.5), O.tensor_of(1.0 / 12.0), O.tensor_of(0.0)


class _Lognorm(_ClosedForm):
    """The log-normal distribution, ``scipy.stats.lognorm(s)``: log((x - loc) / scale) is
    normal with standard deviation s.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> round(float(stats.lognorm.cdf(tg.tensor(1.0), 0.5)), 12)
    0.5
    """

    name, shapes, lower, lower_open = "lognorm", ("s",), 0.0, True
    positive = ("s",)

    def _logpdf_std(self, z, s):
        w = O.log(z)
        return -0.5 * O.square(w / s) - w - O.log(O.tensor_of(s)) - 0.5 * _LOG_2PI

    def _logcdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z > 0.0, 0.0 if upper else -np.inf)
        w = O.log(zs) / shapes[0]
        return fill(_log_ndtr(O.neg(w) if upper else w))

    def _cdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z > 0.0, 1.0 if upper else 0.0)
        w = O.log(zs) / (shapes[0] * math.sqrt(2.0))
        return fill(0.5 * O.erfc(w if upper else O.neg(w)))

    def _quantile_std(self, upper, q, shapes, method):
        s = shapes[0]

        def formula(q):
            n = _ndtri(q)
            return O.exp(O.mul(s, O.neg(n) if upper else n))

        # at q = 0 (isf: 1), exp(s n) has the slope 0 * inf = NaN; 1 / pdf(0) is inf
        return self._closed_quantile(upper, q, shapes, formula, (1.0 if upper else 0.0,))

    def _moments_std(self, shapes):
        s2 = O.square(shapes[0])
        return (
            O.exp(0.5 * s2),
            O.exp(s2) * O.expm1(s2),
            0.5 * (1.0 + _LOG_2PI) + O.log(shapes[0]),
        )


class _Cauchy(_ClosedForm):
    """The Cauchy distribution, ``scipy.stats.cauchy``; its quantiles accurate in both tails
    (-1 / tan(pi q) below 1/4: SciPy's tan(pi (q - 1/2)) loses q's digits there).

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.cauchy.logpdf(x))(1.0)      # -2 x / (1 + x^2)
    -1.0
    """

    name = "cauchy"

    def _logpdf_std(self, z):
        return O.neg(_log1p_square_ratio(z, O.tensor_of(1.0))) - math.log(math.pi)

    def _cdf_std(self, z, shapes, upper):
        return O.arctan2(1.0, z if upper else O.neg(z)) / math.pi

    def _logcdf_std(self, z, shapes, upper):
        # P = arctan2(1, w) / pi; above 1/2 (w < 0) it rounds near 1 and log P lost its
        # digits (logcdf(1e10) was off by 2e-7, logcdf(1e17) gave 0): log1p(-(1 - P)) there
        w = z if upper else O.neg(z)
        near_one = w < 0.0
        far = O.log(O.arctan2(1.0, O.where(near_one, 1.0, w))) - math.log(math.pi)
        near = O.log1p(O.arctan2(1.0, O.neg(O.where(near_one, w, -1.0))) / -math.pi)
        return O.where(near_one, near, far)

    def _quantile_std(self, upper, q, shapes, method):
        lo, hi = q < 0.25, q > 0.75
        mid = O.tan(math.pi * (O.where(lo | hi, 0.5, q) - 0.5))
        low = O.neg(O.reciprocal(O.tan(math.pi * O.where(lo, q, 0.5))))
        high = O.reciprocal(O.tan(math.pi * (1.0 - O.where(hi, q, 0.5))))
        out = O.where(lo, low, O.where(hi, high, mid))
        return _nan_outside_unit(q, O.neg(out) if upper else out)

    def _moments_std(self, shapes):
        return O.tensor_of(np.nan), O.tensor_of(np.nan), O.tensor_of(math.log(4.0 * math.pi))


class _Logistic(_ClosedForm):
    """The logistic distribution, ``scipy.stats.logistic``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.logistic.cdf(x))(0.0)
    0.25
    """

    name = "logistic"

    def _logpdf_std(self, z):
        return O.neg(z) - 2.0 * O.logaddexp(0.0, O.neg(z))

    def _cdf_std(self, z, shapes, upper):
        return O.sigmoid(O.neg(z) if upper else z)

    def _logcdf_std(self, z, shapes, upper):
        return O.neg(O.logaddexp(0.0, z if upper else O.neg(z)))

    def _quantile_std(self, upper, q, shapes, method):
        out = O.sub(O.log(q), O.log1p(O.neg(q)))
        return _nan_outside_unit(q, O.neg(out) if upper else out)

    def _moments_std(self, shapes):
        return O.tensor_of(0.0), O.tensor_of(math.pi**2 / 3.0), O.tensor_of(2.0)


class _WeibullMin(_ClosedForm):
    """The Weibull minimum distribution, ``scipy.stats.weibull_min(c)``.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.weibull_min.logsf(x, 2.0))(1.5)    # -c x^(c - 1)
    -3.0
    """

    name, shapes, lower = "weibull_min", ("c",), 0.0
    positive = ("c",)

    def _logpdf_std(self, z, c):
        return S.xlogy(O.sub(c, 1.0), z) - O.power(z, c) + O.log(O.tensor_of(c))

    def _logcdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z >= 0.0, 0.0 if upper else -np.inf)
        t = O.neg(O.power(zs, shapes[0]))
        return fill(t if upper else _log1mexp(t))

    def _cdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z >= 0.0, 1.0 if upper else 0.0)
        t = O.neg(O.power(zs, shapes[0]))
        return fill(O.exp(t) if upper else O.neg(O.expm1(t)))

    def _quantile_std(self, upper, q, shapes, method):
        def formula(q):
            t = O.neg(O.log(q) if upper else O.log1p(O.neg(q)))  # the exponential quantile
            return O.power(t, O.reciprocal(shapes[0]))

        # at q = 0 and 1 t^(1/c) has the slopes 0 * inf = NaN (in q at the infinite end, in
        # c at 0): there 1 / pdf (0, 1 or inf by c at 0; inf at inf) and 0 in c
        return _nan_outside_unit(q, self._closed_quantile(upper, q, shapes, formula, (0.0, 1.0)))

    def _moments_std(self, shapes):
        c = shapes[0]
        g1, g2 = O.gamma(1.0 + O.reciprocal(c)), O.gamma(1.0 + 2.0 / c)
        return g1, g2 - O.square(g1), 1.0 - O.log(c) + np.euler_gamma * (1.0 - O.reciprocal(c))


class _Halfnorm(_ClosedForm):
    """The half-normal distribution, ``scipy.stats.halfnorm``: |Z| for a standard normal Z.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda x: stats.halfnorm.logpdf(x))(1.5)     # -x
    -1.5
    """

    name, lower = "halfnorm", 0.0

    def _logpdf_std(self, z):
        return -0.5 * z * z + 0.5 * math.log(2.0 / math.pi)

    def _cdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z >= 0.0, 1.0 if upper else 0.0)
        w = zs / math.sqrt(2.0)
        return fill(O.erfc(w) if upper else O.erf(w))

    def _logcdf_std(self, z, shapes, upper):
        zs, fill = _outside(z, z >= 0.0, 0.0 if upper else -np.inf)
        if upper:  # log1p(-erf) near 0 (log 2 + log Phi(-z) rounds: logsf(1e-300) gave 0)
            small = zs < 1.0
            return fill(
                O.where(
                    small,
                    O.log1p(O.neg(O.erf(O.where(small, zs, 0.5) / math.sqrt(2.0)))),
                    math.log(2.0) + _log_ndtr(O.neg(O.where(small, 1.0, zs))),
                )
            )
        small = zs < 1.0  # log erf near 0; log1p(-erfc) in the upper tail
        w = zs / math.sqrt(2.0)
        out = O.where(
            small,
            O.log(O.erf(O.where(small, w, 0.5))),
            O.log1p(O.neg(O.erfc(O.where(small, 1.0, w)))),
        )
        return fill(out)

    def _quantile_std(self, upper, q, shapes, method):
        q = O.tensor_of(q)
        return _nan_outside_unit(q, math.sqrt(2.0) * (O.erfcinv(q) if upper else O.erfinv(q)))

    def _moments_std(self, shapes):
        return (
            O.tensor_of(math.sqrt(2.0 / math.pi)),
            O.tensor_of(1.0 - 2.0 / math.pi),
            O.tensor_of(0.5 * math.log(math.pi / 2.0) + 0.5),
        )


def _log_gauss_mass(a, b):
    """log(Phi(b) - Phi(a)) for a <= b, accurate in both tails and in between (as SciPy's
    truncnorm): from the log-cdfs below 0, the log-sfs above, 1 - Phi(a) - Phi(-b) across."""
    left, right = b <= 0.0, a > 0.0
    mid = ~(left | right)
    la, lb = _log_ndtr(O.where(left, a, -1.0)), _log_ndtr(O.where(left, b, 0.0))
    out_left = lb + _log1mexp(O.minimum(la - lb, 0.0))
    ra, rb = _log_ndtr(O.neg(O.where(right, a, 0.0))), _log_ndtr(O.neg(O.where(right, b, 1.0)))
    out_right = ra + _log1mexp(O.minimum(rb - ra, 0.0))
    am, bm = O.where(mid, a, -1.0), O.where(mid, b, 1.0)
    tails = 0.5 * O.erfc(O.neg(am) / math.sqrt(2.0)) + 0.5 * O.erfc(bm / math.sqrt(2.0))
    # a short interval about 0: 1 - tails cancels (log Z of [-1e-9, 1e-9] lost 8 digits);
    # (erf(b) - erf(a)) / 2 adds two numbers of opposite signs instead
    short = tails > 0.5
    erf_diff = O.erf(O.where(short, bm, 1.0) / math.sqrt(2.0)) - O.erf(
        O.where(short, am, -1.0) / math.sqrt(2.0)
    )
    out_mid = O.where(short, O.log(0.5 * erf_diff), O.log1p(O.neg(O.where(short, 0.0, tails))))
    return O.where(left, out_left, O.where(right, out_right, out_mid))


_TRUNC_FAR = 40.0  # an infinite end is read as this many units beyond the other (Phi ~ 1e-350)


def _finite_ends(a, b):
    """a and b with an infinite end replaced by a finite one far enough that its normal mass
    is 0 in floating point (so no inf * 0 reaches the derivatives)."""
    a, b = O.tensor_of(a), O.tensor_of(b)
    a_inf, b_inf = a == -np.inf, b == np.inf
    af = O.where(a_inf, O.minimum(O.where(b_inf, 0.0, b), 0.0) - _TRUNC_FAR, a)
    bf = O.where(b_inf, O.maximum(O.where(a_inf, 0.0, a), 0.0) + _TRUNC_FAR, b)
    return af, bf


def _norm_logpdf(z):
    return -0.5 * z * z - 0.5 * _LOG_2PI


class _Truncnorm(_ClosedForm):
    """The normal distribution truncated to [a, b] (standardized units),
    ``scipy.stats.truncnorm(a, b)``: differentiable in x, a, b, loc and scale (the
    quantiles in a and b through the implicit function theorem).

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> round(float(stats.truncnorm.cdf(tg.tensor(0.0), -1.0, 1.0)), 12)
    0.5
    """

    name, shapes = "truncnorm", ("a", "b")

    def _shape_nan(self, shapes):
        a, b = (O.tensor_of(v) for v in shapes)
        return O.where(a < b, 0.0, np.nan)  # SciPy: NaN unless a < b

    def _logpdf_z(self, z, shapes):
        a, b = _finite_ends(*shapes)
        inside = (z >= O.tensor_of(shapes[0])) & (z <= O.tensor_of(shapes[1]))
        zs = O.where(inside, z, 0.5 * (a + b))
        out = O.where(inside, _norm_logpdf(zs) - _log_gauss_mass(a, b), -np.inf)
        return _keep_nan(z, out)

    def _logcdf_std(self, z, shapes, upper):
        a, b = _finite_ends(*shapes)
        below, above = z <= O.tensor_of(shapes[0]), z >= O.tensor_of(shapes[1])
        inside = ~(below | above)
        zs = O.where(inside, z, 0.5 * (a + b))
        log_z = _log_gauss_mass(a, b)
        # an infinite end stands in _TRUNC_FAR beyond z too: the logsf of [0, inf) at 45
        # was the log mass of [45, 40], -inf
        a_inf, b_inf = O.tensor_of(shapes[0]) == -np.inf, O.tensor_of(shapes[1]) == np.inf
        az = O.where(a_inf, O.minimum(a, zs - _TRUNC_FAR), a)
        bz = O.where(b_inf, O.maximum(b, zs + _TRUNC_FAR), b)
        out = (_log_gauss_mass(zs, bz) if upper else _log_gauss_mass(az, zs)) - log_z
        # near 0 (a probability near 1) the difference of two logs cancels (the logsf of
        # [-30, -29] at -29.5 lost 8 digits): log1p(-the other probability) there
        other = (_log_gauss_mass(az, zs) if upper else _log_gauss_mass(zs, bz)) - log_z
        near_one = out > -math.log(2.0)
        out = O.where(near_one, _log1mexp(O.where(near_one, other, -1.0)), out)
        lo, hi = (0.0, -np.inf) if upper else (-np.inf, 0.0)
        return O.where(below, lo, O.where(above, hi, out))

    _fixed_ends = False  # the support is [a, b]: ppf(0) = a moves with a

    def _into_support(self, z, a, b):
        # SciPy's ppf(1e-300, -2, 1) is -2.0000000000000004, outside [a, b], where the
        # density and so d/dq = 1 / pdf are 0 and inf
        return np.where(np.isnan(z), z, np.clip(z, a, np.maximum(a, b)))

    def _has_dcdf(self, i):
        return True

    def _dcdf(self, z, shapes, i):
        """d cdf / da = -phi(a) sf(z) / Z, d cdf / db = -phi(b) cdf(z) / Z."""
        a, b = _finite_ends(*shapes)
        end = a if i == 0 else b
        log_p = self._logcdf_std(z, shapes, upper=(i == 0))
        return O.neg(O.exp(_norm_logpdf(end) + log_p - _log_gauss_mass(a, b)))

    def _quantile_std(self, upper, q, shapes, method):
        a, b = (O.tensor_of(v) for v in shapes)
        if upper:  # the mirror's ppf: SciPy's isf loses the upper tail (isf(1e-20, 0, inf)
            # gave 8.28, not 9.34; isf(1e-8, 29, 30) was off by 1e-7)
            return O.neg(super()._quantile_std(False, q, [O.neg(b), O.neg(a)], method))
        return super()._quantile_std(False, q, [a, b], method)

    def _moments_std(self, shapes):
        a, b = _finite_ends(*shapes)
        log_z = _log_gauss_mass(a, b)
        pa, pb = O.exp(_norm_logpdf(a) - log_z), O.exp(_norm_logpdf(b) - log_z)
        mean = pa - pb
        skew = a * pa - b * pb
        return mean, 1.0 + skew - O.square(mean), 0.5 * (1.0 + _LOG_2PI) + log_z + 0.5 * skew


uniform = _Uniform()
lognorm = _Lognorm()
cauchy = _Cauchy()
logistic = _Logistic()
weibull_min = _WeibullMin()
halfnorm = _Halfnorm()
truncnorm = _Truncnorm()


# ---- Poisson -------------------------------------------------------------------------------------


class _Poisson(_Distribution):
    """The Poisson distribution, ``scipy.stats.poisson(mu)``: differentiable in mu.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda mu: stats.poisson.logpmf(3, mu))(2.0)    # k / mu - 1
    0.5
    """

    name = "poisson"

    def _k(self, method, k, loc):
        _refuse("poisson", method, "k", k)
        _refuse("poisson", method, "loc", loc)
        return np.asarray(S._value(k), dtype=np.float64) - np.asarray(S._value(loc))

    def logpmf(self, k, mu, loc=0):
        """log P(K = k); differentiable in mu."""
        if not _tensor_in(k, mu, loc):
            return self._scipy.logpmf(k, mu, loc)
        return self._logpmf(self._k("logpmf", k, loc), mu)

    @staticmethod
    def _logpmf(kv, mu):
        ok = (kv >= 0) & (kv == np.floor(kv))
        kk = np.where(ok, kv, 0.0)
        inside = S.xlogy(kk, mu) - mu - S.gammaln(kk + 1.0)
        out = O.where(np.broadcast_to(ok, inside.shape), inside, -np.inf)
        if np.isnan(kv).any():  # a NaN k: NaN, as SciPy (not the -inf of a non-integer k)
            out = O.where(np.broadcast_to(np.isnan(kv), inside.shape), np.nan, out)
        return O.where(O.tensor_of(mu) >= 0.0, out, np.nan)  # a negative mean: NaN, as SciPy

    def pmf(self, k, mu, loc=0):
        """P(K = k); differentiable in mu."""
        if not _tensor_in(k, mu, loc):
            return self._scipy.pmf(k, mu, loc)
        return O.exp(self.logpmf(k, mu, loc))

    def cdf(self, k, mu, loc=0):
        """P(K <= k); differentiable in mu (d/dmu = -pmf(floor(k), mu))."""
        if not _tensor_in(k, mu, loc):
            return self._scipy.cdf(k, mu, loc)
        kv = np.floor(self._k("cdf", k, loc))
        return S._scipy_op(
            mu, lambda m: self._scipy.cdf(kv, m), lambda m: -O.exp(self._logpmf(kv, m))
        )


poisson = _Poisson()


# ---- binomial family ---------------------------------------------------------------------------


class _Discrete(_Distribution):
    """A discrete distribution with SciPy's ``method(k, *shapes, loc=0)``: pmf, logpmf, cdf
    and sf differentiable in the probability p (and in what ``smooth`` names); k, loc and the
    whole-number shapes are not differentiated (NotImplementedError when they require grad)."""

    shapes: tuple = ()
    smooth: tuple = ("p",)  # the shapes with derivatives

    def _parse(self, method, k, args, kwds):
        names = self.shapes + ("loc",)
        if len(args) > len(names):
            raise TypeError(f"{self.name}.{method}() takes at most {len(names) + 1} arguments")
        values = dict(zip(names, args, strict=False))
        for key, v in kwds.items():
            if key not in names or key in values:
                raise TypeError(
                    f"{self.name}.{method}() got an unexpected or repeated argument {key!r}"
                )
            values[key] = v
        missing = [n for n in self.shapes if n not in values]
        if missing:
            raise TypeError(f"{self.name}.{method}() missing shape argument(s) {missing}")
        loc = values.get("loc", 0)
        _refuse_discrete(self.name, method, "k", k, "k is a count")
        _refuse_discrete(self.name, method, "loc", loc, "loc shifts the integer support")
        shapes = [values[n] for n in self.shapes]
        for n, v in zip(self.shapes, shapes, strict=True):
            if n not in self.smooth:
                _refuse_discrete(self.name, method, n, v, f"{n} is a whole number")
        kv = np.asarray(S._value(k), dtype=np.float64) - np.asarray(S._value(loc))
        kept = zip(self.shapes, shapes, strict=True)
        return kv, [v if n in self.smooth else S._value(v) for n, v in kept]

    def _valid(self, shapes):
        """NaN where SciPy's argument check fails, else 0 (adds nothing to a derivative)."""
        raise NotImplementedError

    def _pmf(self, kv, shapes):
        return O.exp(self._logpmf(kv, shapes))

    def _call(self, method, k, args, kwds):
        if not _tensor_in(k, *args, *kwds.values()):
            return getattr(self._scipy, method)(k, *args, **kwds)
        kv, shapes = self._parse(method, k, args, kwds)
        if method == "pmf":
            out = self._pmf(kv, shapes)
        else:
            out = getattr(self, "_" + method)(kv, shapes)
        return out + self._valid(shapes)

    def logpmf(self, k, *args, **kwds):
        """log P(K = k) (-inf off the support); differentiable in p."""
        return self._call("logpmf", k, args, kwds)

    def pmf(self, k, *args, **kwds):
        """P(K = k); differentiable in p."""
        return self._call("pmf", k, args, kwds)

    def cdf(self, k, *args, **kwds):
        """P(K <= k); differentiable in p."""
        return self._call("cdf", k, args, kwds)

    def sf(self, k, *args, **kwds):
        """P(K > k); differentiable in p."""
        return self._call("sf", k, args, kwds)

    def mean(self, *args, **kwds):
        """The mean."""
        return self._moment("mean", args, kwds)

    def var(self, *args, **kwds):
        """The variance."""
        return self._moment("var", args, kwds)

    def std(self, *args, **kwds):
        """The standard deviation."""
        return self._moment("std", args, kwds)

    def _moment(self, which, args, kwds):
        if not _tensor_in(*args, *kwds.values()):
            return getattr(self._scipy, which)(*args, **kwds)
        _, shapes = self._parse(which, 0, args, kwds)
        loc = kwds.get("loc", args[len(self.shapes)] if len(args) > len(self.shapes) else 0)
        mean, var = self._moments(shapes)
        bad = self._valid(shapes)
        if which == "mean":
            return O.add(mean, S._value(loc)) + bad
        return (var if which == "var" else O.sqrt(var)) + bad


def _refuse_discrete(dist, method, name, a, why):
    if isinstance(a, Tensor) and a.requires_grad:
        raise NotImplementedError(
            f"tapegrad.scipy.stats.{dist}.{method}: no derivative in {name} ({why}); "
            f"pass {name} as a number, an array or a Tensor that does not require grad"
        )


def _on_support(kv, lo, hi=None):
    """Whole numbers in [lo, hi]: a NumPy mask (k is never differentiated)."""
    ok = (kv == np.floor(kv)) & (kv >= lo)
    return ok if hi is None else ok & (kv <= hi)


def _masked_logpmf(ok, kv, inside):
    """``inside`` where k is on the support, -inf off it, NaN at a NaN k."""
    shape = np.shape(value_of(inside))
    out = O.where(np.broadcast_to(ok, shape), inside, -np.inf)
    if np.isnan(kv).any():  # times NaN: the derivatives there are NaN too, as SciPy's
        out = O.mul(out, np.where(np.broadcast_to(np.isnan(kv), shape), np.nan, 1.0))
    return out


def _unit_p(p):
    """0 where 0 <= p <= 1, NaN elsewhere (SciPy's check of a probability)."""
    p = O.tensor_of(p)
    return O.where((p >= 0.0) & (p <= 1.0), 0.0, np.nan)


def _whole_n(n, lo=0.0):
    """0 where n is a whole number >= lo, NaN elsewhere (SciPy's check of binom's n)."""
    n = np.asarray(n, dtype=np.float64)
    return np.where((n >= lo) & (n == np.floor(n)), 0.0, np.nan)


class _Binom(_Discrete):
    """The binomial distribution, ``scipy.stats.binom(n, p)``: differentiable in p (d cdf / dp
    = -n pmf(k; n - 1, p)); n is a whole number, never differentiated.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> round(tg.grad(lambda p: stats.binom.logpmf(3, 10, p))(0.5), 12)   # k/p - (n-k)/(1-p)
    -8.0
    """

    name, shapes = "binom", ("n", "p")

    def _valid(self, shapes):
        return _unit_p(shapes[1]) + _whole_n(shapes[0])

    @staticmethod
    def _logpmf_of(kv, n, p):
        ok = _on_support(kv, 0.0, n)
        kk = np.where(ok, kv, 0.0)
        nn = np.broadcast_to(np.asarray(n, dtype=np.float64), np.shape(kk))
        inside = S.xlogy(kk, p) + S.xlog1py(nn - kk, O.neg(O.tensor_of(p))) + _log_binomial(nn, kk)
        return _masked_logpmf(ok, kv, inside)

    def _logpmf(self, kv, shapes):
        return self._logpmf_of(kv, *shapes)

    def _pmf(self, kv, shapes):
        n, p = self._n_p(shapes)
        ok = _on_support(kv, 0.0, n)
        kk = np.where(ok, kv, 0.0)
        log_c = _log_binomial(n, kk)

        def edge(pv):  # C p^k (1 - p)^(n - k): exact slopes at p = 0 and 1 (exp(log) is NaN)
            out = np.exp(log_c) * O.power(pv, kk) * O.power(O.sub(1.0, pv), n - kk)
            return O.mul(out, np.where(ok, 1.0, 0.0))

        return S._at_edges(
            O.tensor_of(p), (0.0, 1.0), lambda pv: O.exp(self._logpmf_of(kv, n, pv)), edge
        )

    def _n_p(self, shapes):
        return np.asarray(shapes[0], dtype=np.float64), shapes[1]

    def _cdf_or_sf(self, kv, shapes, upper):
        n, p = shapes
        kf = np.floor(kv)
        fn = _st.binom.sf if upper else _st.binom.cdf  # (bernoulli's take no n)
        sign = 1.0 if upper else -1.0
        return S._scipy_op(
            p,
            lambda pv: fn(kf, n, pv),
            lambda pv: (
                sign * np.asarray(n, dtype=np.float64) * O.exp(self._logpmf_of(kf, n - 1.0, pv))
            ),
        )

    def _cdf(self, kv, shapes):
        return self._cdf_or_sf(kv, shapes, False)

    def _sf(self, kv, shapes):
        return self._cdf_or_sf(kv, shapes, True)

    def _moments(self, shapes):
        n, p = shapes
        mean = O.mul(O.tensor_of(p), np.asarray(n, dtype=np.float64))
        return mean, mean * O.sub(1.0, p)


def _sc_gammaln(v):
    return _sc.gammaln(v)


def _log_binomial(n, k):
    """log C(n, k) for whole 0 <= k <= n (arrays): -log(n + 1) - betaln(n - k + 1, k + 1),
    without the cancellation of gammaln(n + 1) - gammaln(n - k + 1) (at n = 1e12, k = 3 it
    made binom's pmf 2.6e-4 too large)."""
    n, k = np.asarray(n, dtype=np.float64), np.asarray(k, dtype=np.float64)
    return -np.log1p(n) - _sc.betaln(n - k + 1.0, k + 1.0)


class _Bernoulli(_Binom):
    """The Bernoulli distribution, ``scipy.stats.bernoulli(p)``: binom with n = 1.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda p: stats.bernoulli.pmf(1, p))(0.3)
    1.0
    """

    name, shapes = "bernoulli", ("p",)

    def _valid(self, shapes):
        return _unit_p(shapes[0])

    def _logpmf(self, kv, shapes):
        return self._logpmf_of(kv, 1.0, shapes[0])

    def _n_p(self, shapes):
        return np.float64(1.0), shapes[0]

    def _cdf_or_sf(self, kv, shapes, upper):
        return super()._cdf_or_sf(kv, [1.0, shapes[0]], upper)

    def _moments(self, shapes):
        return super()._moments([1.0, shapes[0]])

    def entropy(self, p, loc=0):
        """The entropy -p log p - (1 - p) log(1 - p) (nats)."""
        if not _tensor_in(p, loc):
            return self._scipy.entropy(p, loc)
        _refuse_discrete(self.name, "entropy", "loc", loc, "loc shifts the integer support")
        p = O.tensor_of(p)
        return O.neg(S.xlogy(p, p) + S.xlog1py(O.sub(1.0, p), O.neg(p))) + _unit_p(p)


class _Nbinom(_Discrete):
    """The negative binomial distribution, ``scipy.stats.nbinom(n, p)``: failures before the
    n-th success; pmf and logpmf differentiable in n and p, cdf and sf in p (d cdf / dp is
    the beta(n, k + 1) density at p); their derivative in n is refused.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> round(tg.grad(lambda p: stats.nbinom.logpmf(2, 3, p))(0.5), 12)   # n/p - k/(1-p)
    2.0
    """

    name, shapes, smooth = "nbinom", ("n", "p"), ("n", "p")

    def _valid(self, shapes):
        n, p = (O.tensor_of(v) for v in shapes)
        return O.where((n > 0.0) & (p > 0.0) & (p <= 1.0), 0.0, np.nan)

    def _logpmf(self, kv, shapes):
        n, p = shapes
        ok = _on_support(kv, 0.0)
        kk = np.where(ok, kv, 0.0)
        # log C(n + k - 1, k) without the cancellation of the two large log-gammas: as
        # gammaln(n + k) - gammaln(n) for n >= k, as gammaln(n + k) - gammaln(k + 1) for k > n
        # (the logpmf at k = 1e9, n = 3 was off by 3e-6)
        nt = O.tensor_of(n)
        big_k = nt < kk
        log_c = O.where(
            big_k,
            O.neg(S._gammaln_diff(kk + 1.0, O.where(big_k, nt, 1.0) - 1.0))
            - O.gammaln(O.where(big_k, nt, 1.0)),
            O.neg(S._gammaln_diff(O.where(big_k, 1.0, nt), kk)) - _sc_gammaln(kk + 1.0),
        )
        inside = log_c + S.xlogy(n, p) + S.xlog1py(kk, O.neg(O.tensor_of(p)))
        return _masked_logpmf(ok, kv, inside)

    def _cdf_or_sf(self, method, kv, shapes, upper):
        n, p = shapes
        _refuse_discrete(self.name, method, "n", n, "no closed form here")
        nv = np.asarray(S._value(n), dtype=np.float64)
        kf = np.floor(kv)
        fn = self._scipy.sf if upper else self._scipy.cdf
        sign = -1.0 if upper else 1.0
        ok = kf >= 0.0
        kk = np.where(ok, kf, 0.0)
        log_b = _sc.betaln(nv, kk + 1.0)

        def density(pv):  # the beta(n, k + 1) density at p, 0 where k < 0
            d = O.exp(S.xlogy(nv - 1.0, pv) + S.xlog1py(kk, O.neg(pv)) - log_b)
            return sign * O.where(np.broadcast_to(ok, np.shape(value_of(d))), d, 0.0)

        return S._scipy_op(p, lambda pv: fn(kf, nv, pv), density)

    def _cdf(self, kv, shapes):
        return self._cdf_or_sf("cdf", kv, shapes, False)

    def _sf(self, kv, shapes):
        return self._cdf_or_sf("sf", kv, shapes, True)

    def _moments(self, shapes):
        n, p = (O.tensor_of(v) for v in shapes)
        mean = n * O.sub(1.0, p) / p
        return mean, mean / p


class _Geom(_Discrete):
    """The geometric distribution, ``scipy.stats.geom(p)``: the trial of the first success
    (k >= 1); every method a closed form in p.

    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda p: stats.geom.sf(2, p))(0.5)     # d/dp (1 - p)^2
    -1.0
    """

    name, shapes = "geom", ("p",)

    def _valid(self, shapes):
        p = O.tensor_of(shapes[0])
        return O.where((p > 0.0) & (p <= 1.0), 0.0, np.nan)

    def _logpmf(self, kv, shapes):
        p = O.tensor_of(shapes[0])
        ok = _on_support(kv, 1.0)
        kk = np.where(ok, kv, 1.0)
        return _masked_logpmf(ok, kv, S.xlog1py(kk - 1.0, O.neg(p)) + O.log(p))

    def _log_sf(self, kv, p):
        kf = np.maximum(np.floor(kv), 0.0)  # sf is 1 below the support
        return S.xlog1py(kf, O.neg(O.tensor_of(p)))

    def _sf(self, kv, shapes):
        kf = np.maximum(np.floor(kv), 0.0)
        # (1 - p)^k at p = 1, where exp(k log1p(-p)) has the slope NaN (exact: -k 0^(k-1))
        return S._at_edges(
            O.tensor_of(shapes[0]),
            (1.0,),
            lambda p: O.exp(self._log_sf(kv, p)),
            lambda p: O.power(O.sub(1.0, p), kf),
        )

    def _cdf(self, kv, shapes):
        p = O.tensor_of(shapes[0])
        at_one = O.truth(p == 1.0)
        if not at_one.any():
            return O.neg(O.expm1(self._log_sf(kv, p)))
        return O.sub(1.0, self._sf(kv, shapes))

    def _pmf(self, kv, shapes):
        ok = _on_support(kv, 1.0)
        kk = np.where(ok, kv, 1.0)
        return S._at_edges(
            O.tensor_of(shapes[0]),
            (0.0, 1.0),
            lambda p: O.exp(self._logpmf(kv, [p])),
            lambda p: O.mul(O.power(O.sub(1.0, p), kk - 1.0) * p, np.where(ok, 1.0, 0.0)),
        )

    def _moments(self, shapes):
        p = O.tensor_of(shapes[0])
        return O.reciprocal(p), O.sub(1.0, p) / O.square(p)


binom = _Binom()
bernoulli = _Bernoulli()
nbinom = _Nbinom()
geom = _Geom()


# ---- Dirichlet -----------------------------------------------------------------------------------


class _Dirichlet(_Distribution):
    """The Dirichlet distribution, ``scipy.stats.dirichlet(alpha)``: differentiable in x and
    alpha.  x holds the components along its first axis (K or K - 1 of them, as SciPy).

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda a: stats.dirichlet.logpdf(np.array([0.5, 0.5]), a))(np.ones(2))
    array([0.30685282, 0.30685282])
    """

    name = "dirichlet"

    def logpdf(self, x, alpha):
        """log density at x (components along the first axis)."""
        if not _tensor_in(x, alpha):
            return self._scipy.logpdf(x, alpha)
        av = np.asarray(S._value(alpha), dtype=np.float64)
        if av.ndim != 1 or av.size < 2 or np.any(av <= 0):
            raise ValueError(
                "alpha must be a one-dimensional array of at least two positive "
                "entries (SciPy's condition)"
            )
        x = O.tensor_of(x)
        if x.shape[0] == av.size - 1:
            x = O.concatenate([x, O.expand_dims(1.0 - O.sum(x, 0), 0)], 0)
        xv = np.asarray(x.data)
        if xv.shape[0] != av.size:
            raise ValueError(
                f"dirichlet: x has {xv.shape[0]} components along its first axis; "
                f"alpha has {av.size}"
            )
        if np.any(xv < 0) or np.any(xv > 1):
            raise ValueError("Each entry in 'x' must be greater than zero and smaller than one.")
        if np.any((xv == 0) & (av.reshape((av.size,) + (1,) * (xv.ndim - 1)) < 1)):
            # the density is infinite there (x^(alpha - 1) with alpha < 1): SciPy raises
            raise ValueError(
                "Each entry in 'x' must be greater than zero if its alpha is less than one."
            )
        if np.any(np.abs(xv.sum(axis=0) - 1.0) > 10e-10):
            raise ValueError(
                "The input vector 'x' must lie within the normal simplex. but "
                "np.sum(x, 0) - 1.0 = {}.".format(xv.sum(axis=0) - 1.0)
            )
        a = O.tensor_of(alpha)
        col = O.reshape(a, (av.size,) + (1,) * (xv.ndim - 1))
        log_b = O.sum(S.gammaln(a)) - S.gammaln(O.sum(a))
        return O.sum(S.xlogy(O.sub(col, 1.0), x), 0) - log_b

    def pdf(self, x, alpha):
        """density at x."""
        if not _tensor_in(x, alpha):
            return self._scipy.pdf(x, alpha)
        return O.exp(self.logpdf(x, alpha))


dirichlet = _Dirichlet()


# ---- multivariate normal -------------------------------------------------------------------------


class _Inverse(Function):
    """A^-1 of a symmetric positive definite A (Cholesky); d(A^-1) = -A^-1 dA A^-1, written
    with this op again, so it is differentiable at any order."""

    @staticmethod
    def forward(ctx, a):
        inv = _cho_inverse(a.data)
        out = Tensor._const(inv)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (inv,) = ctx.saved_tensors
        return -O.matmul(O.matmul(O.transpose(inv), g), O.transpose(inv))

    @staticmethod
    def jvp(ctx, da):
        (inv,) = ctx.saved_tensors
        return -O.matmul(O.matmul(inv, da), inv)


class _LogDet(Function):
    """log det A of a symmetric positive definite A (Cholesky); d = tr(A^-1 dA)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return 2.0 * np.sum(np.log(np.diagonal(_cholesky(a.data), axis1=-2, axis2=-1)))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * O.transpose(_Inverse.apply(a))

    @staticmethod
    def jvp(ctx, da):
        (a,) = ctx.saved_tensors
        return O.sum(O.mul(O.transpose(_Inverse.apply(a)), da))


def _cholesky(a):
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError(
            "tapegrad.scipy.stats.multivariate_normal: the covariance matrix is not "
            "symmetric positive definite (singular covariances are not supported)"
        ) from None


def _cho_inverse(a):
    low = _cholesky(a)
    inv_low = np.linalg.solve(low, np.eye(a.shape[0]))
    return inv_low.T @ inv_low


class _MultivariateNormal(_Distribution):
    """``scipy.stats.multivariate_normal``: logpdf, pdf and entropy, differentiable in x,
    mean and cov (cov symmetric positive definite; given as a matrix, a vector of variances
    or one variance, as SciPy).  A singular cov with ``allow_singular=True`` (and in
    ``entropy``) gives SciPy's values, differentiable in x and mean; its derivative in cov
    is refused.  The derivative in cov is symmetric: the density is read
    as a function of (cov + cov.T) / 2, and a cov that is not symmetric is refused (SciPy
    reads its lower triangle).

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> from tapegrad.scipy import stats
    >>> tg.grad(lambda m: stats.multivariate_normal.logpdf(np.ones(2), m, np.eye(2)))(
    ...     np.zeros(2))
    array([1., 1.])
    """

    name = "multivariate_normal"

    @staticmethod
    def _cov(cov, dim, method):
        """The (dim, dim) covariance SciPy reads from cov.  SciPy reads only the lower
        triangle of a matrix; here it is read as (cov + cov.T) / 2 (a symmetric derivative),
        so a matrix that is not symmetric is refused (the two readings' values differ)."""
        c = O.tensor_of(cov)
        if c.ndim == 0:
            return O.mul(np.eye(dim), c)
        if c.ndim == 1:
            return O.mul(np.eye(dim), O.reshape(c, (1, dim)))
        if dim == 1:
            c = O.reshape(c, (1, 1))
        # decided by comparing Tensors: a trace keeps the decision as a guard
        asymmetry = O.amax(O.abs_(O.sub(c, O.transpose(c))))
        if bool(asymmetry > O.mul(1e-10, O.amax(O.abs_(c)))):
            raise ValueError(
                f"tapegrad.scipy.stats.multivariate_normal.{method}: cov is not symmetric "
                "(SciPy reads only its lower triangle, tapegrad the symmetric part, so the "
                "values would differ); pass a symmetric matrix, e.g. (cov + cov.T) / 2"
            )
        return 0.5 * (c + O.transpose(c))

    @staticmethod
    def _dim(mean, cov, method):
        """SciPy's dimension (from mean's size, else from a matrix cov, else 1), with
        SciPy's checks of the shapes of mean and cov (no value is read)."""
        ms, cs = np.shape(mean) if mean is not None else None, np.shape(cov)
        if ms is not None:
            dim = int(np.prod(ms))
        else:
            dim = cs[0] if len(cs) >= 2 else 1
        where = f"tapegrad.scipy.stats.multivariate_normal.{method}: "
        if dim == 1:
            if int(np.prod(cs)) != 1:
                raise ValueError(
                    f"{where}a cov of shape {cs} for a variable of dimension 1 (mean "
                    f"{'None' if ms is None else ms}), as SciPy refuses"
                )
            return 1
        if ms is not None and len(ms) != 1:
            raise ValueError(f"{where}Array 'mean' must be a vector of length {dim}.")
        if len(cs) > 2 or (len(cs) == 2 and cs != (dim, dim)) or (len(cs) == 1 and cs[0] != dim):
            raise ValueError(
                f"{where}Dimension mismatch: array 'cov' is of shape {cs}, but the variable "
                f"has dimension {dim}."
            )
        return dim

    def _parts(self, x, mean, cov, method):
        x = O.tensor_of(x)
        dim = self._dim(mean, cov, method)
        if mean is not None and np.shape(mean) != (dim,):
            mean = O.reshape(mean, (dim,))  # (a mean of one element, for dimension 1)
        if x.ndim == 0:
            x = O.reshape(x, (1, 1))
        elif x.ndim == 1:  # SciPy: one point of dim coordinates, or points of dim 1
            x = O.reshape(x, (-1, 1) if dim == 1 else (1, -1))
        r = x if mean is None else O.sub(x, mean)
        return r, self._cov(cov, dim, method), dim

    @staticmethod
    def _squeeze(out):
        """SciPy's squeezed output: a scalar for one point."""
        return (
            O.reshape(out, ())
            if out.size == 1
            else (O.reshape(out, (out.shape[0],)) if out.ndim > 1 and out.shape[-1] == 1 else out)
        )

    @staticmethod
    def _singular_parts(c, cov, method, allow_singular):
        """SciPy's reading of a singular covariance (eigenvalues at or below 1e6 eps s_max
        are zero): None when c is positive definite, else (whitening matrix U with
        U U^T = pinv(c), basis of the null space, rank, log pseudo-determinant, support
        tolerance).  Differentiating in cov there is refused: the pseudo-inverse and the
        rank jump with it."""
        if isinstance(c, Tensor) and c.requires_grad:
            # decided by comparing Tensors, so a trace keeps the decision as a guard (not the
            # covariance's value) and replays any positive definite covariance
            w = _linalg.eigvalsh(c)
            if bool(
                O.amax(O.sub(O.mul(1e6 * np.finfo(np.float64).eps, O.amax(O.abs_(w))), w)) < 0.0
            ):
                return None
        s, u = np.linalg.eigh(S._value(c))
        eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))
        if np.min(s) < -eps:
            raise np.linalg.LinAlgError(  # a ValueError, as SciPy raises
                "tapegrad.scipy.stats.multivariate_normal: the covariance matrix must be "
                "symmetric positive semidefinite (it is not even that, let alone positive "
                "definite)"
            )
        kept = s > eps
        if np.all(kept):
            return None
        if not allow_singular:
            raise np.linalg.LinAlgError(
                "When `allow_singular is False`, the input matrix must be symmetric "
                "positive definite."
            )
        if isinstance(cov, Tensor) and cov.requires_grad:
            raise NotImplementedError(
                f"tapegrad.scipy.stats.multivariate_normal.{method}: the derivative in cov "
                "at a singular covariance is not implemented (its pseudo-inverse and rank "
                "jump there); pass cov without requires_grad, or add a small multiple of "
                "the identity to it"
            )
        white = u[:, kept] / np.sqrt(s[kept])
        return white, u[:, ~kept], int(kept.sum()), float(np.sum(np.log(s[kept]))), 1e3 * eps

    def logpdf(self, x, mean=None, cov=1, allow_singular: bool = False):
        """log density at x (the last axis holds the coordinates).  With
        ``allow_singular=True`` and a singular cov, SciPy's density on the support (-inf
        off it), differentiable in x and mean along the support."""
        if not _tensor_in(x, mean, cov):
            return self._scipy.logpdf(x, mean, cov, allow_singular)
        r, c, dim = self._parts(x, mean, cov, "logpdf")
        singular = self._singular_parts(c, cov, "logpdf", allow_singular)
        if singular is not None:
            white, null, rank, log_pdet, tol = singular
            maha = O.sum(O.square(O.matmul(r, white)), -1)
            out = -0.5 * (maha + log_pdet + rank * _LOG_2PI)
            on_support = np.linalg.norm(S._value(r) @ null, axis=-1) < tol
            return self._squeeze(O.where(on_support, out, -np.inf))
        quad = O.sum(O.mul(O.matmul(r, _Inverse.apply(c)), r), -1)
        return self._squeeze(-0.5 * (quad + _LogDet.apply(c) + dim * _LOG_2PI))

    def pdf(self, x, mean=None, cov=1, allow_singular: bool = False):
        """density at x."""
        if not _tensor_in(x, mean, cov):
            return self._scipy.pdf(x, mean, cov, allow_singular)
        return O.exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1, allow_singular: bool = False):
        """differential entropy, 0.5 log det(2 pi e cov)."""
        if not _tensor_in(mean, cov):
            return self._scipy.entropy(mean, cov)  # SciPy's entropy allows singular cov
        dim = self._dim(mean, cov, "entropy")
        c = self._cov(cov, dim, "entropy")
        singular = self._singular_parts(c, cov, "entropy", True)
        if singular is not None:  # SciPy's: the rank and the pseudo-determinant
            _, _, rank, log_pdet, _ = singular
            return O.tensor_of(np.float64(0.5 * (log_pdet + rank * (1.0 + _LOG_2PI))))
        return 0.5 * (_LogDet.apply(c) + dim * (1.0 + _LOG_2PI))


multivariate_normal = _MultivariateNormal()


def __dir__():
    """The public names only (what SciPy's module of the same name offers, differentiable)."""
    return list(__all__)
