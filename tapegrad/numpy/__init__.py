"""``import tapegrad.numpy as tnp``: NumPy's namespace, differentiable on Tensors.

Every function tapegrad can differentiate (see ``_dispatch``) is wrapped: with a Tensor among
its arguments it runs tapegrad ops, otherwise it is NumPy's own call and returns what NumPy
returns.  Every other name (constants, dtypes, creation functions...) is NumPy's; a NumPy
function tapegrad cannot differentiate raises a TypeError naming it when given a Tensor.
"""

import functools
import types

import numpy as _np

from ..core import functions as _O
from ..core.tensor import TensorBase as _Tensor
from . import composites as _composites
from . import dispatch as _D
from . import linalg_ops as _linalg


def _has_tensor(args):
    for a in args:
        if isinstance(a, _Tensor):
            return True
        if isinstance(a, (list, tuple)) and _contains_tensor(a):
            return True
    return False


# functions whose argument is a sequence of arrays (of possibly different shapes), not one
# array-like: their lists of Tensors are passed as they are
_SEQUENCE_FUNCTIONS = {
    getattr(_np, n)
    for n in (
        "concatenate",
        "stack",
        "hstack",
        "vstack",
        "row_stack",
        "dstack",
        "column_stack",
        "block",
        "select",
        "choose",
    )
    if hasattr(_np, n)
} | {_np.linalg.multi_dot}


def _arrays(args):
    """Lists and tuples holding Tensors as one stacked Tensor each (as NumPy reads a list
    of arrays as one array), so ``tnp.sum([x, y])`` keeps the graph."""
    return [
        _stacked(a) if isinstance(a, (list, tuple)) and _contains_tensor(a) else a for a in args
    ]


def _wrap_ufunc(uf):
    @functools.wraps(uf)
    def f(*args, **kwargs):
        if _has_tensor(args):
            return _D.array_ufunc(uf, "__call__", tuple(_arrays(args)), kwargs)
        return uf(*args, **kwargs)

    return f


def _wrap_function(fn, impl):
    sequence = fn in _SEQUENCE_FUNCTIONS

    @functools.wraps(fn)
    def f(*args, **kwargs):
        if _has_tensor(args) or _has_tensor(kwargs.values()):
            _D._refuse_complex_operands(fn, args, kwargs)  # (as np.<name> on Tensors)
            if _O.exact_operands(*args, *kwargs.values()):  # integer / boolean Tensors
                return _O.numpy_exact(fn, *args, **kwargs)
            if not sequence:
                args = _arrays(args)
                kwargs = dict(zip(kwargs, _arrays(kwargs.values()), strict=True))
            return impl(*args, **kwargs)
        return fn(*args, **kwargs)

    return f


def _export():
    names = {}
    # NumPy's loaded namespace only: dir() + getattr would import its lazy submodules
    # (f2py, ma, testing, fft...), a tenth of a second of every `import tapegrad`
    for name, obj in list(vars(_np).items()):
        try:
            if obj in _D.UFUNCS or obj in _D.COMPARE:
                names[name] = _wrap_ufunc(obj)
            elif obj in _D.FUNCTIONS:
                names[name] = _wrap_function(obj, _D.FUNCTIONS[obj])
        except TypeError:  # unhashable attribute
            continue
    return names


globals().update(_export())

linalg = types.SimpleNamespace(
    **{n: getattr(_np.linalg, n) for n in dir(_np.linalg) if not n.startswith("_")}
)
linalg.__dict__.update(
    {f.__name__: _wrap_function(f, impl) for f, impl in _linalg.FUNCTIONS.items()}
)
fft = types.SimpleNamespace(
    **{n: getattr(_np.fft, n) for n in dir(_np.fft) if not n.startswith("_")}
)
fft.fftshift = _wrap_function(_np.fft.fftshift, _D.FUNCTIONS[_np.fft.fftshift])
fft.ifftshift = _wrap_function(_np.fft.ifftshift, _D.FUNCTIONS[_np.fft.ifftshift])
# names NumPy's dispatch cannot reach (r_ and c_ are objects, np.full converts its fill value
# first) or that NumPy lacks (HIPS autograd's make_diagonal, PyTorch's diag_embed)
r_, c_, full = _composites.r_, _composites.c_, _composites.full
diag_embed, make_diagonal = _composites.diag_embed, _composites.make_diagonal


def _float_dtype(dtype):
    """True for dtypes that keep a float64 value as it is (None, float, float64)."""
    return dtype is None or _np.dtype(dtype) == _np.float64


def _cast(t, dtype, name):
    """Tensor ``t`` as ``dtype``: float64 keeps the graph; an integer or bool cast is
    piecewise constant (no derivative, like np.floor); other floats would need a new op."""
    if _float_dtype(dtype):
        return t
    kind = _np.dtype(dtype).kind
    if kind in "iub" or not t.requires_grad:
        return _Tensor(t._v, dtype=dtype) if kind != "f" or not t.requires_grad else t
    raise TypeError(
        f"tapegrad.numpy.{name}: dtype={_np.dtype(dtype)} on a Tensor that "
        "requires grad is not supported (tapegrad differentiates float64 values); "
        "leave dtype out, or use dtype=float"
    )


def _stacked(obj):
    """A (nested) list / tuple holding Tensors as one differentiable Tensor."""
    return _O.stack([_stacked(v) if isinstance(v, (list, tuple)) else v for v in obj])


def array(obj, dtype=None, copy=True, **kwargs):
    """np.array that keeps the graph: a Tensor gives a differentiable copy; a (nested) list
    holding Tensors is stacked into one differentiable Tensor.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.numpy as tnp
        >>> x = tg.tensor(2.0, requires_grad=True)
        >>> a = tnp.array([x, x ** 2]); a
        tensor([2., 4.], grad_fn=<CatBackward0>)
        >>> a.sum().backward(); x.grad          # 1 + 2 x
        tensor(5.)
        >>> tnp.array([1, 2])                   # no Tensor: NumPy's own result
        array([1, 2])
    """
    if isinstance(obj, _Tensor) or isinstance(obj, (list, tuple)) and _contains_tensor(obj):
        ndmin = _layout_only("array", kwargs, ("order", "subok", "ndmin", "like"))
        if isinstance(obj, _Tensor):
            out = _cast(obj.clone() if copy else obj, dtype, "array")
        else:
            out = _cast(_stacked(obj), dtype, "array")
        if out.ndim < ndmin:  # NumPy's ndmin: ones prepended to the shape
            out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
        return out
    return _np.array(obj, dtype=dtype, copy=copy, **kwargs)


def _layout_only(name, kwargs, allowed):
    """``ndmin`` of np.array / np.asarray's keywords for a Tensor (0 if absent).  The others
    (``order``, ``subok``, ``like``, ``device``, ``copy``) change no value of a Tensor; an
    unknown keyword raises as NumPy's does."""
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    return int(kwargs.get("ndmin", 0))


def asarray(obj, dtype=None, **kwargs):
    """np.asarray that keeps Tensors (and stacks lists of them) instead of dropping the graph.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.numpy as tnp
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tnp.asarray(x) is x, tnp.asarray([1.0, 2.0])
        (True, array([1., 2.]))
    """
    if isinstance(obj, _Tensor):
        _layout_only("asarray", kwargs, ("order", "device", "copy", "like"))
        return _cast(obj.clone() if kwargs.get("copy") else obj, dtype, "asarray")
    if isinstance(obj, (list, tuple)) and _contains_tensor(obj):
        _layout_only("asarray", kwargs, ("order", "device", "copy", "like"))
        return _cast(_stacked(obj), dtype, "asarray")
    return _np.asarray(obj, dtype=dtype, **kwargs)


asanyarray = asarray


def _contains_tensor(obj):
    return any(
        isinstance(v, _Tensor) or (isinstance(v, (list, tuple)) and _contains_tensor(v))
        for v in obj
    )


def __getattr__(name):
    return getattr(_np, name)


# NumPy's public names (the wrapped ones resolve here, the others to NumPy through __getattr__)
__all__ = sorted(
    set(getattr(_np, "__all__", ()))
    | {
        n
        for n, v in globals().items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
)
