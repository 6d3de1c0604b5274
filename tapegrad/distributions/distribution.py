"""The ``Distribution`` base class (PyTorch's ``torch.distributions.Distribution``) and the
helpers the distributions share: parameters as float64 Tensors broadcast together, argument
and sample validation with PyTorch's messages, shapes of draws."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..autograd.engine import no_grad
from ..core import creation
from ..core.creation import tensor
from ..core.torch_extra_functions import broadcast_shapes, broadcast_tensors
from ..tensor_class import Tensor
from . import constraints

__all__ = ["Distribution"]

_EPS = float(np.finfo(np.float64).eps)
_DEFAULTS = {"validate_args": True}  # Distribution.set_default_validate_args
_LOG_2PI = math.log(2 * math.pi)


def as_param(x, cls: str, name: str) -> Tensor:
    """``x`` (a float, int, array or Tensor) as a float64 Tensor, keeping its graph."""
    if isinstance(x, Tensor):
        if x.dtype != np.float64:
            if x.dtype.kind not in "biuf":
                raise TypeError(f"{cls}: {name} must be real, got dtype {x.dtype}")
            return x.double()
        return x
    if isinstance(x, bool | int | float | np.number | np.ndarray | list | tuple):
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{cls}: {name} must be a real number, array or Tensor, got {x!r}")
        return tensor(a.astype(np.float64))
    raise TypeError(
        f"{cls}: {name} must be a float, a NumPy array or a Tensor, got {type(x).__name__}"
    )


def broadcast_all(cls: str, **params) -> list[Tensor]:
    """The named parameters as float64 Tensors broadcast to one shape (PyTorch's
    ``broadcast_all``), or a ValueError naming the shapes."""
    ts = [as_param(v, cls, k) for k, v in params.items()]
    try:
        return list(broadcast_tensors(*ts))
    except (ValueError, RuntimeError):
        shapes = ", ".join(f"{k} {tuple(t.shape)}" for k, t in zip(params, ts, strict=True))
        msg = f"{cls}: the shapes of the parameters do not broadcast: {shapes}"
        raise RuntimeError(msg) from None


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.ndim - dim]) + (-1,)).sum(-1)


def _shape_arg(sample_shape, fn: str) -> tuple[int, ...]:
    if isinstance(sample_shape, Sequence) and not isinstance(sample_shape, str):
        if all(isinstance(n, int | np.integer) and n >= 0 for n in sample_shape):
            return tuple(int(n) for n in sample_shape)
    raise TypeError(
        f"{fn}: sample_shape must be a tuple of non-negative ints such as (3,) (PyTorch's "
        f"torch.Size), got {sample_shape!r}"
    )


def _show_param(v) -> str:
    if isinstance(v, Tensor) and v.ndim == 0:
        return repr(float(v.detach().numpy()))
    if isinstance(v, Tensor) and v.size == 1:
        return repr(v.detach())
    if isinstance(v, Tensor):
        return f"torch.Size({list(v.shape)})"
    return repr(v)


class Distribution:
    """PyTorch's ``torch.distributions.Distribution``: the base class of probability
    distributions, with ``batch_shape`` / ``event_shape``, ``sample`` / ``rsample``,
    ``log_prob``, ``entropy``, moments and ``expand``.

    Parameters are float64 Tensors (floats and arrays are converted); everything
    differentiable is built from tapegrad's Tensor operations, so derivatives of every
    order flow to the parameters.  Draws come from tapegrad's generator
    (``tg.manual_seed``), not PyTorch's stream of numbers.

    Examples:
        >>> import tapegrad.distributions as D
        >>> D.Normal(0.0, 1.0).batch_shape
        ()
    """

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    _given: tuple[str, ...] = ()  # the parameters given (the ones validated)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions validate their arguments by default (True, as PyTorch)."""
        if value not in (True, False):
            raise ValueError("Distribution.set_default_validate_args: value must be True or False")
        _DEFAULTS["validate_args"] = value

    def __init__(
        self,
        batch_shape: Sequence[int] = (),
        event_shape: Sequence[int] = (),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            self._check_params()

    @property
    def _validate_args(self) -> bool:
        return self.__dict__.get("_validate_flag", _DEFAULTS["validate_args"])

    @_validate_args.setter
    def _validate_args(self, flag: bool) -> None:
        self.__dict__["_validate_flag"] = flag

    def _check_params(self) -> None:
        names = self._given or tuple(self.arg_constraints)
        for name in names:
            constraint = self.arg_constraints.get(name)
            if constraint is None or isinstance(constraint, constraints._ParamDependent):
                continue
            value = getattr(self, name)
            ok = constraint.check(value).detach().numpy()
            if not np.all(ok):
                raise ValueError(
                    f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                    f"invalid values:\n{value!r}"
                )

    # shapes ---------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple[int, ...]:
        shape = _shape_arg(sample_shape, f"{type(self).__name__}.sample")
        return shape + self._batch_shape + self._event_shape

    @property
    def support(self) -> constraints.Constraint | None:
        """The set the values of the distribution lie in."""
        return None

    # draws ----------------------------------------------------------------------------------
    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        shape = _shape_arg(sample_shape, f"{type(self).__name__}.sample")
        with no_grad():
            if self.has_rsample:
                return self.rsample(shape).detach()
            return tensor(self._draw(shape, creation.rng()))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A reparameterized draw: differentiable in the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__}.rsample: the distribution is not reparameterizable here; "
            "use sample() (no gradient) with a score-function estimator "
            "(log_prob(sample) times the reward)"
        )

    def _draw(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")

    def sample_n(self, n: int) -> Tensor:
        """``n`` draws (PyTorch's deprecated ``sample_n``): ``sample((n,))``."""
        return self.sample((n,))

    # densities ------------------------------------------------------------------------------
    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.cdf is not implemented")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.icdf is not implemented")

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All the values of a discrete distribution, along a new leading dimension."""
        raise NotImplementedError(
            f"{type(self).__name__}.enumerate_support: not a finite discrete distribution"
        )

    # moments --------------------------------------------------------------------------------
    @property
    def mean(self) -> Tensor:
        """The mean."""
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def mode(self) -> Tensor:
        """The mode."""
        raise NotImplementedError(f"{type(self).__name__}.mode is not implemented")

    @property
    def variance(self) -> Tensor:
        """The variance."""
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: ``variance.sqrt()``."""
        return self.variance.sqrt()

    # expand ---------------------------------------------------------------------------------
    _tensors: tuple[str, ...] = ()  # the Tensor attributes, shaped batch_shape + (...)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Distribution:
        """The distribution with its parameters expanded to ``batch_shape`` (no copy)."""
        batch = _shape_arg(batch_shape, f"{type(self).__name__}.expand")
        try:
            fits = tuple(broadcast_shapes(self._batch_shape, batch)) == batch
        except (ValueError, RuntimeError):
            fits = False
        if not fits:
            raise RuntimeError(
                f"{type(self).__name__}.expand: the batch shape {self._batch_shape} cannot be "
                f"expanded to {batch} (each size must match or be 1)"
            )
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        nb = len(self._batch_shape)
        for name in self._tensors:
            t = self.__dict__.get(name)
            if isinstance(t, Tensor):
                new.__dict__[name] = t.expand(batch + tuple(t.shape[nb:]))
        new._batch_shape = batch
        return new

    # validation -----------------------------------------------------------------------------
    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim = len(self._event_shape)
        shape = tuple(value.shape)
        if shape[len(shape) - event_dim :] != self._event_shape or len(shape) < event_dim:
            raise ValueError(
                f"The right-most size of value must match event_shape: torch.Size({list(shape)}) "
                f"vs torch.Size({list(self._event_shape)})."
            )
        actual = shape[: len(shape) - event_dim]
        expected = self._batch_shape
        for i, j in zip(reversed(actual), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"torch.Size({list(shape)}) vs "
                    f"torch.Size({list(self._batch_shape + self._event_shape)})."
                )
        support = self.support
        if support is None:
            return
        if not np.all(support.check(value).detach().numpy()):
            raise ValueError(
                f"Expected value argument (Tensor of shape {shape}) to be within the support "
                f"({support!r}) of the distribution {self!r}, but found invalid values:\n"
                f"{value!r}"
            )

    def _value(self, value) -> Tensor:
        """``value`` validated (when validating) and as a float64 Tensor."""
        if self._validate_args:
            self._validate_sample(value)
        return as_param(value, f"{type(self).__name__}.log_prob", "value")

    def __repr__(self) -> str:
        names = [k for k in (self._given or tuple(self.arg_constraints)) if k in self.__dict__]
        body = ", ".join(f"{k}: {_show_param(self.__dict__[k])}" for k in names)
        return f"{type(self).__name__}({body})"
