"""``import tapegrad.numpy as tnp``: NumPy's namespace, differentiable on Tensors.

Every function tapegrad can differentiate (see ``_dispatch``) is wrapped: with a Tensor among
its arguments it runs tapegrad ops, otherwise it is NumPy's own call and returns what NumPy
returns.  Every other name (constants, dtypes, creation functions...) is NumPy's; a NumPy
function tapegrad cannot differentiate raises a TypeError naming it when given a Tensor.
"""
import functools
import types

import numpy as _np

from . import _dispatch as _D
from . import _ops as _O
from ._tensor import Tensor as _Tensor


def _has_tensor(args):
    for a in args:
        if a.__class__ is _Tensor:
            return True
        if a.__class__ in (list, tuple) and any(v.__class__ is _Tensor for v in a):
            return True
    return False


def _wrap_ufunc(uf):
    @functools.wraps(uf)
    def f(*args, **kwargs):
        if _has_tensor(args):
            return _D.array_ufunc(uf, "__call__", args, kwargs)
        return uf(*args, **kwargs)
    return f


def _wrap_function(fn, impl):
    @functools.wraps(fn)
    def f(*args, **kwargs):
        if _has_tensor(args) or _has_tensor(kwargs.values()):
            return impl(*args, **kwargs)
        return fn(*args, **kwargs)
    return f


def _export():
    names = {}
    for name in dir(_np):
        obj = getattr(_np, name)
        try:
            if obj in _D.UFUNCS or obj in _D.COMPARE:
                names[name] = _wrap_ufunc(obj)
            elif obj in _D.FUNCTIONS:
                names[name] = _wrap_function(obj, _D.FUNCTIONS[obj])
        except TypeError:    # unhashable attribute
            continue
    return names


globals().update(_export())

linalg = types.SimpleNamespace(**{n: getattr(_np.linalg, n) for n in dir(_np.linalg)
                                  if not n.startswith("_")})
linalg.norm = _wrap_function(_np.linalg.norm, _O.norm)


def array(obj, dtype=None, **kwargs):
    """np.array; a (nested) list holding Tensors is stacked into one differentiable Tensor."""
    if isinstance(obj, _Tensor):
        return obj if dtype is None else _Tensor(obj.data, dtype=dtype)
    if isinstance(obj, (list, tuple)) and _contains_tensor(obj):
        return _O.stack([array(v) if isinstance(v, (list, tuple)) else v for v in obj])
    return _np.array(obj, dtype=dtype, **kwargs)


def asarray(obj, dtype=None, **kwargs):
    """np.asarray that keeps Tensors (and stacks lists of them) instead of dropping the graph."""
    if isinstance(obj, _Tensor) or (isinstance(obj, (list, tuple)) and _contains_tensor(obj)):
        return array(obj, dtype)
    return _np.asarray(obj, dtype=dtype, **kwargs)


def _contains_tensor(obj):
    return any(isinstance(v, _Tensor) or (isinstance(v, (list, tuple)) and _contains_tensor(v))
               for v in obj)


def __getattr__(name):
    return getattr(_np, name)
