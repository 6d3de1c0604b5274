"""PyTorch's ``torch.distributions.constraints``: the sets a distribution's parameters and
values live in, as small objects with ``check(value)`` (a boolean Tensor, reduced over the
constraint's ``event_dim`` rightmost dimensions) and a PyTorch-style ``repr``.

Checks read values without gradient (``.data``): they decide, they are not differentiated.
"""

from __future__ import annotations

import numpy as np

from ..core.creation import tensor
from ..tensor_class import Tensor

__all__ = [
    "Constraint",
    "boolean",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "less_than",
    "lower_cholesky",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "real",
    "real_vector",
    "simplex",
    "unit_interval",
]


def _values(x) -> np.ndarray:
    """The plain float64 values of a Tensor, array or number (no gradient)."""
    return np.asarray(x.detach().numpy() if isinstance(x, Tensor) else x, dtype=np.float64)


class Constraint:
    """A set of values (PyTorch's ``Constraint``): ``check(value)`` is a boolean Tensor of
    ``value``'s shape without its ``event_dim`` rightmost dimensions."""

    is_discrete = False
    event_dim = 0

    def _ok(self, v: np.ndarray) -> np.ndarray:  # elementwise membership
        raise NotImplementedError(f"{type(self).__name__}: no check is defined")

    def check(self, value) -> Tensor:
        """Whether each (event of) ``value`` lies in the set."""
        ok = np.asarray(self._ok(_values(value)), dtype=bool)
        if self.event_dim:
            ok = ok.all(axis=tuple(range(-self.event_dim, 0)))
        return tensor(ok)

    label = "Constraint"

    def __repr__(self) -> str:
        return self.label + "()"


class _ParamDependent(Constraint):
    """A constraint that depends on other parameters (not checked by itself)."""

    label = "Dependent"

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0):
        if fn is None:
            return _ParamDependent(is_discrete=is_discrete, event_dim=event_dim)
        return _ConstraintProperty(fn, is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


class _ConstraintProperty(property, _ParamDependent):
    """``@constraints.dependent_property``: a property whose value is a constraint."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        property.__init__(self, fn)
        self.is_discrete = is_discrete
        self.event_dim = event_dim


class _ZeroOne(Constraint):
    label = "Boolean"
    is_discrete = True

    def _ok(self, v):
        return (v == 0) | (v == 1)


class _NotNan(Constraint):
    label = "Real"

    def _ok(self, v):
        return v == v  # not nan (infinities are real, as PyTorch's check says)


class _Above(Constraint):
    label = "GreaterThan"

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def _ok(self, v):
        return v > _values(self.lower_bound)

    def __repr__(self) -> str:
        return f"{self.label}(lower_bound={_show(self.lower_bound)})"


class _AtLeast(_Above):
    label = "GreaterThanEq"

    def _ok(self, v):
        return v >= _values(self.lower_bound)


class _Below(Constraint):
    label = "LessThan"

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def _ok(self, v):
        return v < _values(self.upper_bound)

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_show(self.upper_bound)})"


class _Closed(Constraint):
    label = "Interval"

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def _ok(self, v):
        return (_values(self.lower_bound) <= v) & (v <= _values(self.upper_bound))

    def __repr__(self) -> str:
        lo, hi = _show(self.lower_bound), _show(self.upper_bound)
        return f"{self.label}(lower_bound={lo}, upper_bound={hi})"


class _HalfOpen(_Closed):
    label = "HalfOpenInterval"

    def _ok(self, v):
        return (_values(self.lower_bound) <= v) & (v < _values(self.upper_bound))


class _IntegerRange(_Closed):
    label = "IntegerInterval"
    is_discrete = True

    def _ok(self, v):
        return (v % 1 == 0) & super()._ok(v)


class _IntegerAtLeast(_Above):
    label = "IntegerGreaterThan"
    is_discrete = True

    def _ok(self, v):
        return (v % 1 == 0) & (v >= _values(self.lower_bound))


class _OnSimplex(Constraint):
    label = "Simplex"
    event_dim = 1

    def check(self, value) -> Tensor:
        v = _values(value)
        ok = np.all(v >= 0, axis=-1) & (np.abs(v.sum(-1) - 1) < 1e-6)
        return tensor(np.asarray(ok, dtype=bool))


class _OneHotVector(Constraint):
    label = "OneHot"
    is_discrete = True
    event_dim = 1

    def check(self, value) -> Tensor:
        v = _values(value)
        ok = np.all((v == 0) | (v == 1), axis=-1) & (v.sum(-1) == 1)
        return tensor(np.asarray(ok, dtype=bool))


class _CholeskyFactor(Constraint):
    label = "LowerCholesky"
    event_dim = 2

    def check(self, value) -> Tensor:
        v = _values(value)
        lower = np.all(np.triu(v, 1) == 0, axis=(-2, -1))
        positive = np.all(np.diagonal(v, axis1=-2, axis2=-1) > 0, axis=-1)
        return tensor(np.asarray(lower & positive, dtype=bool))


class _SymmetricPositive(Constraint):
    label = "PositiveDefinite"
    event_dim = 2

    def check(self, value) -> Tensor:
        v = _values(value)
        batch = v.shape[:-2]
        flat = v.reshape((-1,) + v.shape[-2:])
        ok = np.empty(len(flat), dtype=bool)
        for i, m in enumerate(flat):
            ok[i] = np.allclose(m, m.T, atol=1e-6) and _cholesky_ok(m)
        return tensor(ok.reshape(batch))


def _cholesky_ok(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return False
    return True


class _Reinterpreted(Constraint):
    label = "IndependentConstraint"

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value) -> Tensor:
        ok = self.base_constraint.check(value).detach().numpy()
        n = self.reinterpreted_batch_ndims
        if n:
            ok = ok.all(axis=tuple(range(-n, 0)))
        return tensor(np.asarray(ok, dtype=bool))

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


def _show(bound) -> str:
    """A bound as PyTorch prints it inside a constraint's repr."""
    if isinstance(bound, Tensor) and bound.ndim == 0:
        return repr(float(bound.detach().numpy()))
    return repr(bound.detach() if isinstance(bound, Tensor) else bound)


dependent = _ParamDependent()
dependent_property = _ConstraintProperty
boolean = _ZeroOne()
real = _NotNan()
real_vector = _Reinterpreted(real, 1)
positive = _Above(0.0)
nonnegative = _AtLeast(0.0)
greater_than = _Above
greater_than_eq = _AtLeast
less_than = _Below
interval = _Closed
half_open_interval = _HalfOpen
integer_interval = _IntegerRange
unit_interval = _Closed(0.0, 1.0)
nonnegative_integer = _IntegerAtLeast(0)
positive_integer = _IntegerAtLeast(1)
simplex = _OnSimplex()
one_hot = _OneHotVector()
lower_cholesky = _CholeskyFactor()
positive_definite = _SymmetricPositive()
independent = _Reinterpreted
