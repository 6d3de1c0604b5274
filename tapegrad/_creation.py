"""Tensor constructors (``tg.tensor``, ``tg.zeros`` ...) and the global random seed."""
import numpy as np

from ._tensor import Tensor

_rng = [np.random.default_rng()]


def manual_seed(seed):
    """Seed tapegrad's random generator (used by randn/rand and nn initialisers)."""
    _rng[0] = np.random.default_rng(seed)
    return _rng[0]


def rng():
    return _rng[0]


def tensor(data, requires_grad=False, dtype=None):
    """A new leaf tensor holding a copy of ``data``; float data becomes float64."""
    if requires_grad and dtype is None:
        arr = np.asarray(data._v if isinstance(data, Tensor) else data)
        if arr.dtype.kind in "iub":
            raise RuntimeError(
                f"Only Tensors of floating point dtype can require gradients; got integer data "
                f"(dtype {arr.dtype}). Use float data, e.g. tg.tensor({arr.tolist()!r}, "
                "dtype=float), to differentiate with respect to it.")
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _make(arr, requires_grad):
    return Tensor(np.asarray(arr, dtype=np.float64), requires_grad=requires_grad)


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def zeros(*shape, requires_grad=False):
    return _make(np.zeros(_shape(shape)), requires_grad)


def ones(*shape, requires_grad=False):
    return _make(np.ones(_shape(shape)), requires_grad)


def full(shape, fill_value, requires_grad=False):
    return _make(np.full(shape, fill_value, dtype=np.float64), requires_grad)


def zeros_like(x, requires_grad=False):
    return _make(np.zeros(np.shape(x._v if isinstance(x, Tensor) else x)), requires_grad)


def ones_like(x, requires_grad=False):
    return _make(np.ones(np.shape(x._v if isinstance(x, Tensor) else x)), requires_grad)


def arange(start, stop=None, step=1, requires_grad=False):
    a = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if requires_grad or a.dtype.kind == "f":
        a = a.astype(np.float64)
    return Tensor(a, requires_grad=requires_grad)


def linspace(start, stop, num=50, requires_grad=False):
    return _make(np.linspace(start, stop, num), requires_grad)


def eye(n, m=None, requires_grad=False):
    return _make(np.eye(n, m), requires_grad)


def randn(*shape, requires_grad=False):
    return _make(rng().standard_normal(_shape(shape)), requires_grad)


def rand(*shape, requires_grad=False):
    return _make(rng().random(_shape(shape)), requires_grad)
