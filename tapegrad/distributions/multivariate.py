"""Distributions of vector values and wrappers: Categorical, OneHotCategorical, Dirichlet,
MultivariateNormal and Independent (PyTorch's ``torch.distributions`` names and
signatures), composed from tapegrad's Tensor operations."""

from __future__ import annotations

import numpy as np

from .. import linalg
from ..core import creation as _creation
from ..core.creation import tensor
from ..core.torch_extra_functions import broadcast_shapes
from ..core.torch_functions import xlogy
from ..core.ufuncs import digamma
from ..core.ufuncs import gammaln as lgamma
from ..tensor_class import Tensor
from . import constraints
from .distribution import _LOG_2PI, Distribution, as_param, sum_rightmost
from .univariate import dirichlet_mode, probs_or_logits

__all__ = ["Categorical", "Dirichlet", "Independent", "MultivariateNormal", "OneHotCategorical"]

_FLOAT_MIN = float(np.finfo(np.float64).min)
_EPS = float(np.finfo(np.float64).eps)


class Categorical(Distribution):
    """PyTorch's ``torch.distributions.Categorical(probs=None, logits=None)``: integer labels
    ``0 .. K-1`` with the (unnormalized) probabilities ``probs`` or log-odds ``logits`` along
    the last dimension.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> d = D.Categorical(probs=tg.tensor([0.25, 0.75]))
        >>> d.log_prob(tg.tensor([1]))
        tensor([-0.2877])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _tensors = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        p, lg, given = probs_or_logits(type(self).__name__, probs, logits, False)
        self._given = (given,)
        t = p if p is not None else lg
        if t.ndim < 1:
            raise ValueError(f"`{given}` parameter must be at least one-dimensional.")
        if p is not None:
            self.probs = p / p.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(_EPS, 1 - _EPS).log()
        else:
            self.logits = lg - lg.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._num_events = int(t.shape[-1])
        batch = tuple(t.shape[:-1])
        super().__init__(batch, (), validate_args)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self.probs.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def _draw(self, shape, rng):
        full = tuple(shape) + self._batch_shape
        cum = np.cumsum(self.probs.detach().numpy(), axis=-1)
        u = rng.random(full + (1,)) * cum[..., -1:]
        idx = (u >= cum).sum(-1)
        return np.minimum(idx, self._num_events - 1).astype(np.int64)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        v = np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value)
        if v.dtype.kind == "f" and np.any(v % 1 != 0):
            raise ValueError(f"{type(self).__name__}.log_prob: value must hold integer labels")
        v = v.astype(np.int64)
        batch = broadcast_shapes(v.shape, self._batch_shape)
        logits = self.logits.expand(tuple(batch) + (self._num_events,))
        idx = tensor(np.broadcast_to(v, batch)[..., None].copy())
        return logits.gather(-1, idx).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=_FLOAT_MIN)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = np.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        out = tensor(values.astype(np.int64))
        if expand:
            out = out.expand((self._num_events,) + self._batch_shape)
        return out

    @property
    def mean(self) -> Tensor:
        return tensor(np.full(self._batch_shape, np.nan))

    @property
    def mode(self) -> Tensor:
        return tensor(np.argmax(self.probs.detach().numpy(), axis=-1).astype(np.int64))

    @property
    def variance(self) -> Tensor:
        return tensor(np.full(self._batch_shape, np.nan))


class OneHotCategorical(Distribution):
    """PyTorch's ``torch.distributions.OneHotCategorical(probs=None, logits=None)``: a
    Categorical label as a one-hot vector of length K.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.OneHotCategorical(probs=tg.tensor([0.25, 0.75])).sample().shape
        (2,)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True
    _tensors = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self._given = self._categorical._given
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        k = self._categorical._num_events
        super().__init__(self._categorical.batch_shape, (k,), validate_args)

    def expand(self, batch_shape, _instance=None) -> OneHotCategorical:
        new = super().expand(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        return new

    def _draw(self, shape, rng):
        idx = self._categorical._draw(shape, rng)
        return (np.arange(self.event_shape[0]) == idx[..., None]).astype(np.float64)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        labels = np.argmax(
            np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value), -1
        )
        return self._categorical.log_prob(tensor(labels))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        k = self.event_shape[0]
        values = np.eye(k).reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        out = tensor(values)
        if expand:
            out = out.expand((k,) + self._batch_shape + (k,))
        return out

    @property
    def mean(self) -> Tensor:
        return self.probs

    def __repr__(self) -> str:
        return "OneHotCategorical()"  # (PyTorch's: its parameters live on the Categorical)

    @property
    def mode(self) -> Tensor:
        idx = np.argmax(self.probs.detach().numpy(), axis=-1)
        return tensor((np.arange(self.event_shape[0]) == idx[..., None]).astype(np.float64))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)


class Dirichlet(Distribution):
    """PyTorch's ``torch.distributions.Dirichlet(concentration)``: on the simplex, density
    proportional to ``prod x_i^(a_i - 1)``.  ``rsample`` is not reparameterized here.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> D.Dirichlet(tg.tensor([1.0, 3.0])).mean
        tensor([0.2500, 0.7500])
    """

    arg_constraints = {"concentration": constraints._Reinterpreted(constraints.positive, 1)}
    support = constraints.simplex
    _tensors = ("concentration",)

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        c = as_param(concentration, "Dirichlet", "concentration")
        if c.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = c
        super().__init__(tuple(c.shape[:-1]), tuple(c.shape[-1:]), validate_args)

    def _draw(self, shape, rng):
        full = self._extended_shape(shape)
        g = rng.standard_gamma(np.broadcast_to(self.concentration.detach().numpy(), full))
        return g / g.sum(-1, keepdims=True)

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        c = self.concentration
        return xlogy(c - 1, x).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (
            lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((c - 1) * digamma(c)).sum(-1)
        )

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        return dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))


def _batch_mv(mat: Tensor, vec: Tensor) -> Tensor:
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


class MultivariateNormal(Distribution):
    """PyTorch's ``torch.distributions.MultivariateNormal(loc, covariance_matrix=None,
    precision_matrix=None, scale_tril=None)``: the Gaussian with mean ``loc`` and one of a
    covariance, a precision or a lower Cholesky factor of the covariance.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> d = D.MultivariateNormal(tg.zeros(2), covariance_matrix=tg.eye(2))
        >>> d.entropy()
        tensor(2.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True
    _tensors = ("loc", "covariance_matrix", "precision_matrix", "scale_tril", "_unbroadcasted")

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args: bool | None = None,
    ) -> None:
        given = [
            (k, v)
            for k, v in (
                ("covariance_matrix", covariance_matrix),
                ("precision_matrix", precision_matrix),
                ("scale_tril", scale_tril),
            )
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        loc = as_param(loc, "MultivariateNormal", "loc")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, m = given[0]
        m = as_param(m, "MultivariateNormal", name)
        if m.ndim < 2:
            raise ValueError(
                f"{name} must be at least two-dimensional, with optional leading batch dimensions"
            )
        n = loc.shape[-1]
        if m.shape[-2:] != (n, n):
            raise ValueError(
                f"MultivariateNormal: {name} of shape {tuple(m.shape)} does not match loc of "
                f"shape {tuple(loc.shape)}: it must end in ({n}, {n})"
            )
        batch = tuple(broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1])))
        self._given = ("loc", name)
        self.loc = loc.expand(batch + (n,))
        setattr(self, name, m.expand(batch + (n, n)))
        super().__init__(batch, (n,), validate_args)
        if name == "scale_tril":
            lower = m
        elif name == "covariance_matrix":
            lower = linalg.cholesky(m)
        else:
            lower = linalg.cholesky(linalg.inv(m))
        self._unbroadcasted = lower.expand(batch + (n, n))

    def __getattr__(self, name: str):
        lower = self.__dict__.get("_unbroadcasted")
        if lower is None:
            raise AttributeError(name)
        if name == "scale_tril":
            return lower
        if name == "covariance_matrix":
            return lower @ lower.mT
        if name == "precision_matrix":
            return linalg.inv(lower @ lower.mT)
        raise AttributeError(f"'MultivariateNormal' object has no attribute '{name}'")

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = tensor(_creation.rng().standard_normal(shape))
        return self.loc + _batch_mv(self._unbroadcasted, eps)

    def _mahalanobis(self, diff: Tensor) -> Tensor:
        lower = self._unbroadcasted
        batch = tuple(broadcast_shapes(tuple(diff.shape[:-1]), tuple(lower.shape[:-2])))
        n = self._event_shape[0]
        lower = lower.expand(batch + (n, n))
        diff = diff.expand(batch + (n,))
        z = linalg.solve_triangular(lower, diff.unsqueeze(-1), upper=False).squeeze(-1)
        return z.pow(2).sum(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value) -> Tensor:
        x = self._value(value)
        m = self._mahalanobis(x - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        return 0.5 * n * (1.0 + _LOG_2PI) + self._half_log_det()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted.pow(2).sum(-1)


class Independent(Distribution):
    """PyTorch's ``torch.distributions.Independent(base_distribution,
    reinterpreted_batch_ndims)``: the rightmost batch dimensions of a distribution read as
    event dimensions (log_prob and entropy summed over them).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.distributions as D
        >>> d = D.Independent(D.Normal(tg.zeros(3), 1.0), 1)
        >>> d.batch_shape, d.event_shape
        ((), (3,))
    """

    arg_constraints: dict = {}

    def __init__(
        self,
        base_distribution: Distribution,
        reinterpreted_batch_ndims: int,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(base_distribution, Distribution):
            raise TypeError(
                "Independent: base_distribution must be a tapegrad distribution, got "
                f"{type(base_distribution).__name__}"
            )
        n = reinterpreted_batch_ndims
        shape = base_distribution.batch_shape + base_distribution.event_shape
        if not isinstance(n, int) or n < 0 or n > len(base_distribution.batch_shape):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(base_distribution.batch_shape)}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        event_dim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return False if self.reinterpreted_batch_ndims else self.base_dist.has_enumerate_support

    @property
    def support(self):
        return constraints._Reinterpreted(self.base_dist.support, self.reinterpreted_batch_ndims)

    def expand(self, batch_shape, _instance=None) -> Independent:
        batch = tuple(batch_shape)
        new = object.__new__(Independent)
        new.__dict__.update(self.__dict__)
        new.base_dist = self.base_dist.expand(
            batch + self._event_shape[: self.reinterpreted_batch_ndims]
        )
        new._batch_shape = batch
        return new

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def cdf(self, value) -> Tensor:
        raise NotImplementedError("Independent.cdf is not implemented (as in PyTorch)")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
