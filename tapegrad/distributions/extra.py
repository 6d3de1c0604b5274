"""More distributions with PyTorch's names: Cauchy, HalfNormal, StudentT, Chi2 and Geometric,
composed from tapegrad's Tensor operations (and the implicit Gamma draw for Chi2 / StudentT)."""

from __future__ import annotations

import math

import numpy as np

from ..core.creation import tensor
from ..core.functions import where
from ..core.ufuncs import arctan2, digamma, erf, erfinv, log1p
from ..core.ufuncs import gammaln as lgamma
from ..tensor_class import Tensor
from . import constraints
from .distribution import Distribution, as_param, broadcast_all
from .univariate import (
    Gamma,
    Normal,
    _binary_logits,
    _LocationScale,
    _noise,
    _rng,
    implicit_standard_gamma,
    probs_or_logits,
    softplus,
)

__all__ = ["Cauchy", "Chi2", "Geometric", "HalfNormal", "StudentT"]

_LOG_PI = math.log(math.pi)


def _filled(shape, value: float) -> Tensor:
    return tensor(np.full(shape, value))


class Cauchy(_LocationScale):
    """PyTorch's ``torch.distributions.Cauchy(loc, scale)``: density
    ``1 / (pi scale (1 + ((x - loc) / scale)^2))``; no mean, infinite variance.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Cauchy(0.0, 1.0).cdf(tg.tensor([1.0]))
        tensor([0.7500])
    """

    support = constraints.real
    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        c = _noise(_rng().standard_cauchy(self._extended_shape(sample_shape)))
        return self.loc + c * self.scale

    def log_prob(self, value) -> Tensor:
        z = (self._value(value) - self.loc) / self.scale
        return -_LOG_PI - self.scale.log() - log1p(z * z)

    def cdf(self, value) -> Tensor:
        z = (self._value(value) - self.loc) / self.scale
        return arctan2(1.0, -z) / math.pi  # (= atan(z) / pi + 1/2, precise in the lower tail)

    def icdf(self, value) -> Tensor:
        p = as_param(value, "Cauchy.icdf", "value")
        return (math.pi * (p - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()

    @property
    def mean(self) -> Tensor:
        return _filled(self._batch_shape, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return _filled(self._batch_shape, math.inf)


class HalfNormal(Distribution):
    """PyTorch's ``torch.distributions.HalfNormal(scale)``: ``|X|`` for ``X ~ Normal(0,
    scale)``.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.HalfNormal(1.0).mean
        tensor(0.7979)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _tensors = ("scale",)

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        (self.scale,) = broadcast_all("HalfNormal", scale=scale)
        super().__init__(self.scale.shape, (), validate_args)

    @property
    def base_dist(self) -> Normal:
        """The Normal distribution whose absolute value this is."""
        return Normal(0.0 * self.scale, self.scale, validate_args=False)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        lp = self.base_dist.log_prob(x) + math.log(2)
        return where(x.detach().numpy() >= 0, lp, -math.inf + 0 * lp)

    def cdf(self, value) -> Tensor:
        return erf(self._value(value) / (self.scale * math.sqrt(2)))

    def icdf(self, value) -> Tensor:
        p = as_param(value, "HalfNormal.icdf", "value")
        return self.scale * math.sqrt(2) * erfinv(p)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return 0 * self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def __repr__(self) -> str:
        return "HalfNormal()"


class Chi2(Gamma):
    """PyTorch's ``torch.distributions.Chi2(df)``: ``Gamma(df / 2, 1 / 2)``.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.Chi2(4.0).mean
        tensor(4.)
    """

    arg_constraints = {"df": constraints.positive}
    _tensors = ("concentration", "rate")

    def __init__(self, df, validate_args: bool | None = None) -> None:
        (d,) = broadcast_all("Chi2", df=df)
        super().__init__(0.5 * d, 0.5 + 0 * d.detach(), validate_args)

    @property
    def df(self) -> Tensor:
        """The degrees of freedom."""
        return self.concentration * 2

    def __repr__(self) -> str:
        return "Chi2()"


class StudentT(Distribution):
    """PyTorch's ``torch.distributions.StudentT(df, loc=0.0, scale=1.0)``: Student's t with
    ``df`` degrees of freedom, shifted and scaled.  ``rsample`` uses the implicit Gamma
    draw (first order in ``df``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.StudentT(3.0).variance
        tensor(3.)
    """

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True
    _tensors = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all("StudentT", df=df, loc=loc, scale=scale)
        super().__init__(self.df.shape, (), validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        half = 0.5 * self.df.expand(shape)
        g = _rng().standard_gamma(np.broadcast_to(half.detach().numpy(), shape))
        chi2 = 2 * implicit_standard_gamma(half, np.maximum(g, np.finfo(np.float64).tiny))
        z = _noise(_rng().standard_normal(shape))
        return self.loc + self.scale * z * (chi2 / self.df).rsqrt()

    def log_prob(self, value) -> Tensor:
        y = (self._value(value) - self.loc) / self.scale
        df = self.df
        norm = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * _LOG_PI
            + lgamma(0.5 * df)
            - lgamma(0.5 * (df + 1))
        )
        return -0.5 * (df + 1) * log1p(y * y / df) - norm

    def entropy(self) -> Tensor:
        df = self.df
        log_beta = lgamma(0.5 * df) + 0.5 * _LOG_PI - lgamma(0.5 * (df + 1))
        return (
            self.scale.log()
            + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
            + 0.5 * df.log()
            + log_beta
        )

    @property
    def mean(self) -> Tensor:
        return where(self.df.detach().numpy() > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        d = self.df.detach().numpy()
        finite = self.scale.pow(2) * self.df / where(d > 2, self.df - 2, 1.0)
        return where(d > 2, finite, np.where(d > 1, math.inf, math.nan))


class Geometric(Distribution):
    """PyTorch's ``torch.distributions.Geometric(probs=None, logits=None)``: the number of
    failures before the first success of Bernoulli(probs) trials.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Geometric(probs=tg.tensor([0.5])).log_prob(tg.tensor([1.0]))
        tensor([-1.3863])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _tensors = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        p, lg, given = probs_or_logits("Geometric", probs, logits, True)
        self._given = (given,)
        if p is not None:
            self.probs, self.logits = p, _binary_logits(p)
        else:
            self.logits, self.probs = lg, lg.sigmoid()
        super().__init__(self.probs.shape, (), validate_args)
        if self._validate_args and given == "probs" and np.any(p.detach().numpy() <= 0):
            bad = p.detach()[p.detach().numpy() <= 0]
            raise ValueError(
                f"Expected parameter probs (Tensor of shape {tuple(p.shape)}) of distribution "
                f"{self!r} to be positive but found invalid values:\n{bad!r}"
            )

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        u = 1.0 - rng.random(full)  # in (0, 1]
        with np.errstate(divide="ignore"):
            return np.floor(np.log(u) / np.log1p(-self.probs.detach().numpy()))

    def log_prob(self, value) -> Tensor:
        k = self._value(value)
        if self._given == ("logits",):
            # log p = -softplus(-l), log(1 - p) = -softplus(l): exact where sigmoid(l) rounds
            return -k * softplus(self.logits) - softplus(-self.logits)
        p = self.probs
        # k log(1 - p) + log p, with 0 * log(0) = 0 where p is one and k zero
        certain = (np.broadcast_to(p.detach().numpy(), k.shape) == 1) & (k.detach().numpy() == 0)
        q = where(certain, 0 * p, p) if certain.any() else p
        return k * log1p(-q) + p.log()

    def entropy(self) -> Tensor:
        if self._given == ("probs",):
            return (softplus(self.logits) - self.probs * self.logits) / self.probs
        # -log p - (1 - p) log(1 - p) / p = softplus(-t) + e^-t softplus(t) in the logits t;
        # for t < -20 the second term is log1p(e) / e with e = e^t below 2e-9: its series
        t = self.logits
        small = t < -20
        safe = where(small, 0.0, t)
        e = where(small, t, 0.0).exp()
        tail = where(small, 1 - e / 2 + e * e / 3, (-safe).exp() * softplus(safe))
        return softplus(-t) + tail

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return 0 * self.probs.detach()

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs
