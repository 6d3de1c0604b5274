"""PyTorch's ``torch.distributions.kl``: ``kl_divergence(p, q)`` from a registry of
closed forms filled by ``register_kl(type_p, type_q)``."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import linalg
from ..core.functions import stack, where
from ..core.torch_extra_functions import broadcast_shapes
from ..core.ufuncs import digamma
from ..core.ufuncs import gammaln as lgamma
from ..tensor_class import Tensor
from .distribution import Distribution, sum_rightmost
from .multivariate import Categorical, Dirichlet, Independent, MultivariateNormal
from .univariate import Bernoulli, Beta, Exponential, Gamma, Laplace, Normal, Uniform, softplus

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
    return fn(p, q)


def _infinite_where(mask, t: Tensor) -> Tensor:
    return where(np.asarray(mask), math.inf + 0 * t, t)


def _zero_where(mask, t: Tensor) -> Tensor:
    return where(np.asarray(mask), 0 * t, t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    gap = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + gap - 1 - ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
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
    t = p.probs * (p.logits - q.logits)
    shape = tuple(t.shape)
    t = _infinite_where(np.broadcast_to(q.probs.detach().numpy() == 0, shape), t)
    t = _zero_where(np.broadcast_to(p.probs.detach().numpy() == 0, shape), t)
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
