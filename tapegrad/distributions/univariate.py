"""Distributions of scalar values: Normal, Uniform, Exponential, Laplace, LogNormal, Gamma,
Beta, Bernoulli, Poisson and Binomial (PyTorch's ``torch.distributions`` names, signatures
and formulas' values), composed from tapegrad's Tensor operations."""

from __future__ import annotations

import math

import numpy as np

from .. import scipy as _scipy  # (its submodules load on first use: SciPy stays optional)
from ..autograd.engine import is_grad_enabled
from ..core import creation as _creation
from ..core.creation import tensor
from ..core.functions import stack, where
from ..core.torch_functions import xlogy
from ..core.ufuncs import digamma, erfc, erfcinv, expm1, log1p, logaddexp
from ..core.ufuncs import gammaln as lgamma
from ..tensor_class import Tensor
from . import constraints
from .distribution import _EPS, _LOG_2PI, Distribution, as_param, broadcast_all

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Exponential",
    "Gamma",
    "Laplace",
    "LogNormal",
    "Normal",
    "Poisson",
    "Uniform",
]


def _noise(values: np.ndarray) -> Tensor:
    """A draw as a constant float64 Tensor."""
    return tensor(np.asarray(values, dtype=np.float64))


def softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))``, smooth everywhere (its derivative at 0 is 1/2)."""
    return logaddexp(x.new_zeros(()), x)


class _LocationScale(Distribution):
    """A family with a real ``loc`` and a positive ``scale``, broadcast together (Normal,
    Laplace, LogNormal, Cauchy)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    _tensors = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(type(self).__name__, loc=loc, scale=scale)
        super().__init__(self.loc.shape, (), validate_args)


class Normal(_LocationScale):
    """PyTorch's ``torch.distributions.Normal(loc, scale)``: the Gaussian with mean ``loc``
    and standard deviation ``scale``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> loc = tg.tensor([0.0, 1.0], requires_grad=True)
        >>> D.Normal(loc, 2.0).log_prob(tg.tensor([0.0, 0.0])).sum().backward()
        >>> loc.grad
        tensor([0.0000, -0.2500])
    """

    support = constraints.real
    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        from_rng = _rng_normal(shape)
        return self.loc + from_rng * self.scale

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        z = (x - self.loc) / self.scale
        return -0.5 * z * z - self.scale.log() - 0.5 * _LOG_2PI

    def cdf(self, value) -> Tensor:
        x = self._value(value)
        # (erfc of the negated argument: the lower tail keeps its relative precision)
        return 0.5 * erfc((self.loc - x) / (self.scale * math.sqrt(2)))

    def icdf(self, value) -> Tensor:
        p = as_param(value, "Normal.icdf", "value")
        return self.loc - self.scale * erfcinv(2 * p) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * _LOG_2PI + self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)


def _rng_normal(shape) -> Tensor:
    return _noise(_rng().standard_normal(shape))


def _rng() -> np.random.Generator:
    return _creation.rng()


class Uniform(Distribution):
    """PyTorch's ``torch.distributions.Uniform(low, high)``: uniform on ``[low, high)``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Uniform(0.0, 4.0).log_prob(tg.tensor([1.0]))
        tensor([-1.3863])
    """

    arg_constraints = {
        "low": constraints.dependent(is_discrete=False, event_dim=0),
        "high": constraints.dependent(is_discrete=False, event_dim=0),
    }
    has_rsample = True
    _tensors = ("low", "high")

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all("Uniform", low=low, high=high)
        super().__init__(self.low.shape, (), validate_args)

    def _check_params(self) -> None:
        bad = ~(self.low.detach().numpy() < self.high.detach().numpy())
        if np.any(bad):
            raise ValueError(
                f"Expected parameter low (Tensor of shape {tuple(self.low.shape)}) of "
                f"distribution {self!r} to satisfy the constraint "
                f"LessThan(upper_bound={self.high!r}), but found invalid values:\n{self.low!r}"
            )

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=()) -> Tensor:
        u = _noise(_rng().random(self._extended_shape(sample_shape)))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        inside = (self.low.detach().numpy() <= x.detach().numpy()) & (
            x.detach().numpy() < self.high.detach().numpy()
        )
        with np.errstate(divide="ignore"):
            outside = tensor(np.log(inside.astype(np.float64)))  # -inf outside, else 0
        return outside - (self.high - self.low).log()

    def cdf(self, value) -> Tensor:
        x = self._value(value)
        return ((x - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value) -> Tensor:
        p = as_param(value, "Uniform.icdf", "value")
        return p * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.high * math.nan  # (PyTorch's: nan, attached to the parameters)

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12


class Exponential(Distribution):
    """PyTorch's ``torch.distributions.Exponential(rate)``: density ``rate * exp(-rate x)``
    on ``x >= 0``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Exponential(2.0).cdf(tg.tensor([0.5]))
        tensor([0.6321])
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _tensors = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all("Exponential", rate=rate)
        super().__init__(self.rate.shape, (), validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        e = _noise(_rng().standard_exponential(self._extended_shape(sample_shape)))
        return e / self.rate

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        return self.rate.log() - self.rate * x

    def cdf(self, value) -> Tensor:
        x = self._value(value)
        return -expm1(-self.rate * x)

    def icdf(self, value) -> Tensor:
        p = as_param(value, "Exponential.icdf", "value")
        return -log1p(-p) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return 0 * self.rate

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)


class Laplace(_LocationScale):
    """PyTorch's ``torch.distributions.Laplace(loc, scale)``: density
    ``exp(-|x - loc| / scale) / (2 scale)``.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.Laplace(0.0, 1.0).variance
        tensor(2.)
    """

    support = constraints.real
    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        u = _rng().uniform(_EPS - 1, 1, self._extended_shape(sample_shape))
        return self.loc - self.scale * _noise(np.sign(u) * np.log1p(-np.abs(u)))

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        return -(2 * self.scale).log() - (x - self.loc).abs() / self.scale

    def cdf(self, value) -> Tensor:
        x = self._value(value)
        d = x - self.loc
        # one exponential per side (sign(d) would make the derivative at d = 0 zero, not the
        # density 1 / (2 scale)); each side's argument kept finite where it is not taken
        below = d < 0  # (a mask a trace guards: replays on the same sides run)
        lower = 0.5 * (where(below, d, 0.0) / self.scale).exp()
        upper = 1 - 0.5 * (-where(below, 0.0, d) / self.scale).exp()
        return where(below, lower, upper)

    def icdf(self, value) -> Tensor:
        p = as_param(value, "Laplace.icdf", "value")
        below = p < 0.5
        lower = self.loc + self.scale * (2 * where(below, p, 0.25)).log()
        upper = self.loc - self.scale * (2 * (1 - where(below, 0.75, p))).log()
        return where(below, lower, upper)

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return 2**0.5 * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)


class LogNormal(_LocationScale):
    """PyTorch's ``torch.distributions.LogNormal(loc, scale)``: ``exp`` of a
    ``Normal(loc, scale)`` variable.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.LogNormal(0.0, 1.0).mode
        tensor(0.3679)
    """

    support = constraints.positive
    has_rsample = True

    @property
    def base_dist(self) -> Normal:
        """The Normal distribution of ``log`` of the variable."""
        return Normal(self.loc, self.scale, validate_args=False)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value) -> Tensor:
        y = self._value(value).log()
        return self.base_dist.log_prob(y) - y

    def cdf(self, value) -> Tensor:
        return self.base_dist.cdf(self._value(value).log())

    def icdf(self, value) -> Tensor:
        return self.base_dist.icdf(value).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return expm1(s2) * (2 * self.loc + s2).exp()


class Gamma(Distribution):
    """PyTorch's ``torch.distributions.Gamma(concentration, rate)``: density
    ``rate^a x^(a-1) exp(-rate x) / Gamma(a)`` on ``x >= 0``.  ``rsample`` is
    reparameterized implicitly: at a fixed draw ``x`` (fixed uniform noise u = P(a, x)),
    ``dx/da = -(dP/da) / (dP/dx)`` with P the regularized incomplete gamma function
    (first order; a second derivative in the concentration raises NotImplementedError, as
    PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> a = tg.tensor([2.0], requires_grad=True)
        >>> D.Gamma(a, 1.0).rsample((3,)).shape
        (3, 1)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    _tensors = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(
            "Gamma", concentration=concentration, rate=rate
        )
        super().__init__(self.rate.shape, (), validate_args)

    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        a = self.concentration.expand(shape)
        x = _rng().standard_gamma(np.broadcast_to(a.detach().numpy(), shape))
        return implicit_standard_gamma(a, np.maximum(x, _TINY)) / self.rate

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1, x) - b * x - lgamma(a)

    def cdf(self, value) -> Tensor:
        x = self._value(value)
        return _scipy.special.gammainc(self.concentration, self.rate * x)  # (needs SciPy)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)


class Beta(Distribution):
    """PyTorch's ``torch.distributions.Beta(concentration1, concentration0)``: density
    ``x^(a-1) (1-x)^(b-1) / B(a, b)`` on ``[0, 1]`` with ``a = concentration1``.
    ``rsample`` is not reparameterized here (NotImplementedError).

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.Beta(2.0, 2.0).mean
        tensor(0.5000)
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    _tensors = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(
            "Beta", concentration1=concentration1, concentration0=concentration0
        )
        super().__init__(self.concentration1.shape, (), validate_args)

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        a = np.broadcast_to(self.concentration1.detach().numpy(), full)
        return rng.beta(a, np.broadcast_to(self.concentration0.detach().numpy(), full))

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        a, b = self.concentration1, self.concentration0
        return xlogy(a - 1, x) + xlogy(b - 1, 1 - x) + lgamma(a + b) - lgamma(a) - lgamma(b)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (
            lgamma(a)
            + lgamma(b)
            - lgamma(total)
            - (a - 1) * digamma(a)
            - (b - 1) * digamma(b)
            + (total - 2) * digamma(total)
        )

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return dirichlet_mode(stack([self.concentration1, self.concentration0], -1))[..., 0]

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total.pow(2) * (total + 1))


_TINY = float(np.finfo(np.float64).tiny)


def implicit_standard_gamma(a: Tensor, x: np.ndarray) -> Tensor:
    """The standard Gamma(a) draws ``x`` as a Tensor whose derivative in ``a`` is the implicit
    one, ``-(dP/da) / (dP/dx)`` at fixed ``P(a, x)`` (the regularized incomplete gamma): the
    value is ``x``; the correction ``(P - P.detach()) / density`` is zero but carries it."""
    xt = tensor(np.asarray(x, dtype=np.float64))
    if not (a.requires_grad and is_grad_enabled()):
        return xt
    p = _scipy.special.gammainc(a, xt)  # (needs SciPy)
    density = ((a - 1) * xt.log() - xt - lgamma(a)).exp().detach()
    return xt - (p - p.detach()) / density


def dirichlet_mode(concentration: Tensor) -> Tensor:
    """The mode of a Dirichlet (where every concentration is below one, a vertex)."""
    c = concentration.detach().numpy()
    above = (concentration - 1).clamp(min=0)
    m = above / above.sum(-1, keepdim=True)
    below = np.all(c < 1, axis=-1, keepdims=True)
    # (PyTorch's: the vertex of the largest clamped concentration minus one, so the first)
    first = np.argmax(np.maximum(c - 1, 0), axis=-1)
    vertex = (np.arange(c.shape[-1]) == first[..., None]).astype(np.float64)
    return where(below, tensor(vertex), m)


def probs_or_logits(cls: str, probs, logits, binary: bool):
    """``(probs, logits, given)`` from exactly one of them, as PyTorch's conversions."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        p = as_param(probs, cls, "probs")
        return p, None, "probs"
    return None, as_param(logits, cls, "logits"), "logits"


def _binary_logits(p: Tensor) -> Tensor:
    q = p.clamp(_EPS, 1 - _EPS)
    return q.log() - log1p(-q)


class Bernoulli(Distribution):
    """PyTorch's ``torch.distributions.Bernoulli(probs=None, logits=None)``: 1 with
    probability ``probs`` (or ``sigmoid(logits)``), else 0.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Bernoulli(logits=tg.tensor([0.0])).log_prob(tg.tensor([1.0]))
        tensor([-0.6931])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _tensors = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        p, lg, given = probs_or_logits("Bernoulli", probs, logits, True)
        self._given = (given,)
        if p is not None:
            self.probs = p
            self.logits = _binary_logits(p)
        else:
            self.logits = lg
            self.probs = lg.sigmoid()
        super().__init__(self.probs.shape, (), validate_args)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self.probs.shape)

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        return (rng.random(full) < self.probs.detach().numpy()).astype(np.float64)

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        return x * self.logits - softplus(self.logits)

    def entropy(self) -> Tensor:
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = tensor(np.arange(2.0).reshape((2,) + (1,) * len(self._batch_shape)))
        if expand:
            values = values.expand((2,) + self._batch_shape)
        return values

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        p = self.probs.detach().numpy()
        return tensor(np.where(p == 0.5, np.nan, (p >= 0.5).astype(np.float64)))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)


class Poisson(Distribution):
    """PyTorch's ``torch.distributions.Poisson(rate)``: counts with mean ``rate``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Poisson(2.0).log_prob(tg.tensor([0.0]))
        tensor([-2.])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _tensors = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all("Poisson", rate=rate)
        super().__init__(self.rate.shape, (), validate_args)

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        return rng.poisson(np.broadcast_to(self.rate.detach().numpy(), full)).astype(np.float64)

    def log_prob(self, value) -> Tensor:
        k = self._value(value)
        return xlogy(k, self.rate) - self.rate - lgamma(k + 1)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate


class Binomial(Distribution):
    """PyTorch's ``torch.distributions.Binomial(total_count=1, probs=None, logits=None)``:
    the number of successes in ``total_count`` Bernoulli trials.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.Binomial(10, probs=0.3).mean
        tensor(3.)
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True
    _tensors = ("total_count", "probs", "logits")

    def __init__(
        self, total_count=1, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        p, lg, given = probs_or_logits("Binomial", probs, logits, True)
        self._given = ("total_count", given)
        if p is not None:
            self.total_count, p = broadcast_all("Binomial", total_count=total_count, probs=p)
            self.probs, self.logits = p, _binary_logits(p)
        else:
            self.total_count, lg = broadcast_all("Binomial", total_count=total_count, logits=lg)
            self.logits, self.probs = lg, lg.sigmoid()
        self.total_count = self.total_count.detach()
        super().__init__(self.probs.shape, (), validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        n = np.broadcast_to(self.total_count.detach().numpy(), full).astype(np.int64)
        return rng.binomial(n, np.broadcast_to(self.probs.detach().numpy(), full)).astype(
            np.float64
        )

    def log_prob(self, value) -> Tensor:
        k = self._value(value)
        n, lg = self.total_count, self.logits
        log_choose = lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
        return log_choose + k * lg - n * softplus(lg)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.total_count.detach().numpy()
        if not np.all(n == n.flat[0] if n.size else True):
            raise NotImplementedError(
                "Binomial.enumerate_support: inhomogeneous total_count is not supported"
            )
        k = int(n.flat[0]) if n.size else 0
        values = tensor(np.arange(k + 1.0).reshape((-1,) + (1,) * len(self._batch_shape)))
        if expand:
            values = values.expand((k + 1,) + self._batch_shape)
        return values

    def entropy(self) -> Tensor:
        n = self.total_count.detach().numpy()
        if n.size and not np.all(n == n.flat[0]):
            raise NotImplementedError(
                "Binomial.entropy: inhomogeneous total_count is not supported (the sum over "
                "the support needs one total_count); compute it per total_count"
            )
        lp = self.log_prob(self.enumerate_support(expand=False))
        return -(lp.exp() * lp).sum(0)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)
