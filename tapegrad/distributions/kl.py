"""PyTorch's ``torch.distributions.kl``: ``kl_divergence(p, q)`` from a registry of
closed forms filled by ``register_kl(type_p, type_q)``."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import linalg
from ..core.creation import tensor
from ..core.functions import stack, where
from ..core.torch_extra_functions import broadcast_shapes
from ..core.torch_functions import xlogy
from ..core.ufuncs import digamma, erf
from ..core.ufuncs import gammaln as lgamma
from ..tensor_class import Tensor
from .distribution import _LOG_2PI, Distribution, sum_rightmost
from .extra import Cauchy, Geometric, HalfNormal
from .multivariate import (
    Categorical,
    Dirichlet,
    Independent,
    MultivariateNormal,
    OneHotCategorical,
)
from .univariate import (
    Bernoulli,
    Beta,
    Binomial,
    Exponential,
    Gamma,
    Laplace,
    LogNormal,
    Normal,
    Poisson,
    Uniform,
    softplus,
)

_EULER = 0.5772156649015329

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict[tuple[type, type], Callable] = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """A decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from
    ``type_q`` (PyTorch's ``register_kl``); the most specific registered pair is used.

    Examples:
        >>> import tapegrad.distributions as D
        >>> class Wide(D.Normal):
        ...     pass
        >>> @D.register_kl(Wide, D.Normal)
        ... def _kl(p, q):
        ...     return D.kl_divergence(D.Normal(p.loc, p.scale), q) * 0
        >>> D.kl_divergence(Wide(0.0, 1.0), D.Normal(1.0, 1.0))
        tensor(0.)
    """
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"register_kl: expected subclasses of Distribution, got {t!r}")

    def decorator(fn: Callable) -> Callable:
        _REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def _lookup(tp: type, tq: type) -> Callable | None:
    best, rank = None, None
    for (a, b), fn in _REGISTRY.items():
        if issubclass(tp, a) and issubclass(tq, b):
            r = (tp.__mro__.index(a), tq.__mro__.index(b))
            if rank is None or r < rank:
                best, rank = fn, r
    return best


def _categories(d: Distribution) -> tuple[int, ...]:
    n = getattr(d, "_num_events", None)  # (a Categorical's categories are not its event)
    return (n,) if isinstance(n, int) else ()


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """PyTorch's ``torch.distributions.kl_divergence``: ``KL(p || q)``, of the broadcast
    batch shape; NotImplementedError for a pair without a registered closed form.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0))
        tensor(0.5000)
    """
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(
            f"kl_divergence: no KL divergence is registered for {type(p).__name__} and "
            f"{type(q).__name__}; register one with @register_kl({type(p).__name__}, "
            f"{type(q).__name__})"
        )
    names = f"{type(p).__name__} and {type(q).__name__}"
    try:
        broadcast_shapes(p.batch_shape, q.batch_shape)
    except (ValueError, RuntimeError):
        raise RuntimeError(
            f"kl_divergence: the batch shapes {p.batch_shape} and {q.batch_shape} of {names} do "
            "not broadcast; expand one (.expand(shape)) to a shape the other broadcasts to"
        ) from None
    events_p, events_q = (d.event_shape + _categories(d) for d in (p, q))
    if events_p != events_q and not isinstance(p, Independent):
        raise ValueError(
            f"kl_divergence: {names} with different event shapes ({events_p} and {events_q}, "
            "the number of categories included) cannot be compared"
        )
    return fn(p, q)


def _infinite_where(mask, t: Tensor) -> Tensor:
    return where(np.asarray(mask), math.inf, t)


def _zero_where(mask, t: Tensor) -> Tensor:
    # (a constant zero: ``0 * t`` would be nan where ``t`` is already infinite)
    return where(np.asarray(mask), 0.0, t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    gap = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + gap - 1 - ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    return _binary_kl(p, q)


def _binary_kl(p, q) -> Tensor:
    """KL of one binary trial of probability ``p.probs`` from one of ``q.probs``."""
    shape = tuple(broadcast_shapes(p.batch_shape, q.batch_shape))
    pp, qp = (
        np.broadcast_to(p.probs.detach().numpy(), shape),
        np.broadcast_to(q.probs.detach().numpy(), shape),
    )
    # p log(p / q) and (1 - p) log((1 - p) / (1 - q)), with log p = -softplus(-logit)
    ones = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    ones = _zero_where(pp == 0, _infinite_where(qp == 0, ones))
    zeros = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    zeros = _zero_where(pp == 1, _infinite_where(qp == 1, zeros))
    return ones + zeros


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    p_zero = p.probs.detach().numpy() == 0
    q_zero = q.probs.detach().numpy() == 0
    # logits of impossible events (-inf) replaced by zeros before the difference, so that
    # neither the value nor the gradient meets 0 * inf; those terms are set just below
    gap = _zero_where(p_zero, p.logits) - _zero_where(q_zero, q.logits)
    t = p.probs * gap
    shape = tuple(t.shape)
    t = _infinite_where(np.broadcast_to(q_zero, shape), t)
    t = _zero_where(np.broadcast_to(p_zero, shape), t)
    return t.sum(-1)


def _dirichlet_kl(cp: Tensor, cq: Tensor) -> Tensor:
    sp, sq = cp.sum(-1), cq.sum(-1)
    head = lgamma(sp) - lgamma(sq) - (lgamma(cp) - lgamma(cq)).sum(-1)
    return head + ((cp - cq) * (digamma(cp) - digamma(sp).unsqueeze(-1))).sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    return _dirichlet_kl(p.concentration, q.concentration)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    cp = stack([p.concentration1, p.concentration0], -1)
    cq = stack([q.concentration1, q.concentration0], -1)
    return _dirichlet_kl(cp, cq)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    ap, bp, aq, bq = p.concentration, p.rate, q.concentration, q.rate
    return (
        aq * (bp / bq).log()
        + lgamma(aq)
        - lgamma(ap)
        + (ap - aq) * digamma(ap)
        + (bq - bp) * (ap / bp)
    )


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    r = q.rate / p.rate
    return r - r.log() - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    out = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low.detach().numpy() > p.low.detach().numpy()) | (
        q.high.detach().numpy() < p.high.detach().numpy()
    )
    return _infinite_where(np.broadcast_to(outside, tuple(out.shape)), out)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes "
            "cannot be computed"
        )
    n = p.event_shape[0]
    batch = tuple(broadcast_shapes(p.batch_shape, q.batch_shape))
    lp = p._unbroadcasted.expand(batch + (n, n))
    lq = q._unbroadcasted.expand(batch + (n, n))
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|_F^2 and the Mahalanobis term |Lq^-1 (mq - mp)|^2
    m = linalg.solve_triangular(lq, lp, upper=False)
    diff = (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1)
    z = linalg.solve_triangular(lq, diff, upper=False).squeeze(-1)
    log_det = lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lp.diagonal(dim1=-2, dim2=-1).log().sum(
        -1
    )
    return log_det + 0.5 * (m.pow(2).sum((-2, -1)) + z.pow(2).sum(-1) - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "kl_divergence: Independent distributions with different "
            "reinterpreted_batch_ndims are not supported"
        )
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return kl_divergence(p._categorical, q._categorical)  # (the same labels)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    # rp log(rp / rq) - rp + rq, with 0 log 0 = 0 (and infinite where rq = 0 < rp)
    return xlogy(p.rate, p.rate) - xlogy(p.rate, q.rate) - p.rate + q.rate


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    np_, nq = p.total_count.detach().numpy(), q.total_count.detach().numpy()
    if np.any(np_ < nq):
        raise NotImplementedError(
            "kl_divergence: KL between Binomials where q.total_count > p.total_count is not "
            "implemented (no closed form)"
        )
    kl = p.total_count * _binary_kl(p, q)
    return _infinite_where(np.broadcast_to(np_ > nq, tuple(kl.shape)), kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # -H(p) - E_p[k log(1 - q) + log q], E_p[k] = 1 / p - 1; log q = -softplus(-logit)
    mean = p.probs.reciprocal() - 1
    return -p.entropy() + mean * softplus(q.logits) + softplus(-q.logits)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio - 1 - ratio.log())


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p: LogNormal, q: LogNormal) -> Tensor:
    return kl_divergence(p.base_dist, q.base_dist)  # (KL is invariant under exp)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    # -H(p) - E_p[log q(x)], with E_p[x] = 1 / rate and E_p[log x] = -gamma - log(rate)
    a, b, r = q.concentration, q.rate, p.rate
    e_log_q = xlogy(a, b) - lgamma(a) + (a - 1) * (-_EULER - r.log()) - b / r
    return r.log() - 1 - e_log_q


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return q.rate * p.mean - q.rate.log() - p.entropy()


def _kl_infinite(p: Distribution, q: Distribution) -> Tensor:
    """An infinite KL: ``p`` puts mass where ``q`` has none, whatever the parameters."""
    return tensor(np.full(tuple(broadcast_shapes(p.batch_shape, q.batch_shape)), math.inf))


# KL(p || q) = E_p[-log q] - H(p) for p of known moments: the cross entropy to a q of the
# exponential families below needs E[x], Var[x], E[log x] and E[log(1 - x)] under p.


def _xlogx(t: Tensor) -> Tensor:
    """``t log t``, 0 at 0 with a nan derivative there (its one-sided derivative is infinite;
    ``xlogy``'s convention would give a finite, wrong one)."""
    return where(t == 0, 0.0, t * t.log())


def _moments(p: Distribution) -> dict:
    if isinstance(p, Beta):
        a, b = p.concentration1, p.concentration0
        dt = digamma(a + b)
        return {"log": digamma(a) - dt, "log1m": digamma(b) - dt, "low": 0.0, "high": 1.0}
    if isinstance(p, Uniform):
        lo, hi = p.low, p.high
        width = hi - lo
        # the mean of log x (and of log(1 - x)) over [lo, hi], from x log x - x
        e_log = (_xlogx(hi) - _xlogx(lo)) / width - 1
        e_log1m = (_xlogx(1 - lo) - _xlogx(1 - hi)) / width - 1
        return {"log": e_log, "log1m": e_log1m, "low": lo, "high": hi}
    return {"low": 0.0 if isinstance(p, Exponential | Gamma) else -math.inf, "high": math.inf}


def _cross_entropy(p: Distribution, q: Distribution) -> Tensor:
    m = _moments(p)
    mean = p.mean
    if isinstance(q, Normal):
        gap = (mean - q.loc) / q.scale
        return 0.5 * _LOG_2PI + q.scale.log() + 0.5 * (p.variance / q.scale.pow(2) + gap * gap)
    if isinstance(q, Exponential):
        return q.rate * mean - q.rate.log()
    if isinstance(q, Gamma):
        a, b = q.concentration, q.rate
        return lgamma(a) - xlogy(a, b) - (a - 1) * m["log"] + b * mean
    if isinstance(q, Beta):
        a, b = q.concentration1, q.concentration0
        log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
        return log_beta - (a - 1) * m["log"] - (b - 1) * m["log1m"]
    return (q.high - q.low).log()  # Uniform


def _numbers(v) -> np.ndarray:
    return np.asarray(v.detach().numpy() if isinstance(v, Tensor) else v)


def _kl_by_moments(p: Distribution, q: Distribution) -> Tensor:
    kl = _cross_entropy(p, q) - p.entropy()
    m = _moments(p)
    lo, hi = (_numbers(m[k]) for k in ("low", "high"))
    if isinstance(q, Uniform):
        outside = (lo < q.low.detach().numpy()) | (hi > q.high.detach().numpy())
    elif isinstance(q, Beta):
        outside = (lo < 0) | (hi > 1)
    elif isinstance(q, Exponential | Gamma):
        outside = lo < 0
    else:
        outside = np.zeros((), dtype=bool)
    if np.any(outside):
        kl = _infinite_where(np.broadcast_to(outside, tuple(kl.shape)), kl)
    return kl


for _p, _q in (
    (Laplace, Normal),
    (Exponential, Normal),
    (Gamma, Normal),
    (Beta, Normal),
    (Beta, Exponential),
    (Beta, Gamma),
    (Beta, Uniform),
    (Uniform, Normal),
    (Uniform, Exponential),
    (Uniform, Gamma),
    (Uniform, Beta),
):
    register_kl(_p, _q)(_kl_by_moments)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    # E_p[-log q(k)] = rate - p log(rate) (log k! = 0 for k in {0, 1})
    return q.rate - xlogy(p.probs, q.rate) - p.entropy()


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E_p|x - m| for x ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2))
    d = p.loc - q.loc
    z = d / p.scale
    e_abs = p.scale * math.sqrt(2 / math.pi) * (-0.5 * z * z).exp() + d * erf(z / math.sqrt(2))
    return (2 * q.scale).log() + e_abs / q.scale - p.entropy()


for _p, _q in (
    (Normal, Exponential),
    (Normal, Gamma),
    (Normal, Beta),
    (Normal, Uniform),
    (Laplace, Exponential),
    (Laplace, Gamma),
    (Laplace, Beta),
    (Laplace, Uniform),
    (Exponential, Beta),
    (Exponential, Uniform),
    (Gamma, Beta),
    (Gamma, Uniform),
    (Poisson, Bernoulli),
    (Poisson, Binomial),
):
    register_kl(_p, _q)(_kl_infinite)
