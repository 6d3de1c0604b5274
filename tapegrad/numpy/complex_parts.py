"""np.real, np.imag, np.conj, np.angle and np.real_if_close on (real) Tensors."""

import numpy as np

from ..core.functions import (
    TensorLike,
    arctan2,
    rad2deg,
    reshape,
    tensor_of,
)
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import result


def _identity(x):
    """A new row equal to x (a RESHAPE to its own shape): functions return a result of their
    own, never their argument itself."""
    x = tensor_of(x)
    return reshape(x, x.shape)


def real(x: TensorLike) -> Tensor:
    """The real part of a real Tensor: its value (derivative 1).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> tg.real(x).sum().backward(); x.grad
        tensor([1., 1.])
    """
    return _identity(x)


def imag(x: TensorLike) -> Tensor:
    """The imaginary part of a real Tensor: zeros, constant (derivative 0).

    Examples:
        >>> import tapegrad as tg
        >>> tg.imag(tg.tensor([1.0, -2.0]))
        tensor([0., 0.])
    """
    x = tensor_of(x)
    v = x._v
    return Tensor._const(0.0 if v.__class__ is float else np.zeros(v.shape))


def conj(x: TensorLike) -> Tensor:
    """The complex conjugate of a real Tensor: its value (derivative 1).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> tg.conj(x).sum().backward(); x.grad
        tensor([1., 1.])
    """
    return _identity(x)


def angle(x: TensorLike, deg=False) -> Tensor:
    """np.angle of a real Tensor: 0 for x >= +0, pi for x < 0 (and -0.0), NaN for NaN, as
    ``arctan2(0, x)``; derivative 0 at every order.

    Examples:
        >>> import tapegrad as tg
        >>> tg.angle(tg.tensor([-1.0, 2.0]))
        tensor([3.1416, 0.0000])
    """
    x = tensor_of(x)
    zero = 0.0 if x._v.__class__ is float else result(np.zeros(x.shape))
    out = arctan2(zero, x)
    return rad2deg(out) if deg else out


def real_if_close(x, tol=100):
    """A real Tensor is already real: its value (derivative 1)."""
    return _identity(x)
