"""The making of tapegrad's elementwise functions (``tg.exp``, ``tg.hypot`` ...) from their
declarations, NumPy broadcasting of two operands, and the NumPy arithmetic of integer and
boolean Tensors they fall back to.

``tapegrad/core/ufuncs.py`` (generated from ``tapegrad/ops/elementwise.py``) calls
``make_unary`` / ``make_binary`` once per declared function."""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from ..ops import formula
from ..ops.spec import OPS, C
from ..ops.spec import op as spec_op
from . import tape as T
from .tensor import (
    STATE,
    needs_grad,
    record,
    record_binary,
    record_unary,
    refuse_complex,
    result,
    row_of,
    tape_for,
    value_of,
)
from .tensor import TensorBase as Tensor

TensorLike = Tensor | ArrayLike


def _ieee(np_fwd, v):
    """numpy's IEEE result (inf/nan) for a float where ``math`` raises instead."""
    with np.errstate(all="ignore"):
        return float(np_fwd(np.float64(v)))


# ---- integer and boolean Tensors -------------------------------------------------------------
# Only float Tensors can require grad, so integer and boolean Tensors are never differentiated:
# they compute with NumPy itself, with NumPy's integer arithmetic and dtypes (uint8 250 + 10
# wraps to 4, int64 stays exact above 2**53), as PyTorch's integer tensors do.


def exact_operands(*xs) -> bool:
    """True when no operand requires grad and one is an integer or boolean Tensor (also
    inside a list or tuple of operands): the op then runs as NumPy's own (``numpy_exact``)."""
    found = False
    for x in xs:
        if isinstance(x, Tensor):
            if x._rg:
                return False
            v = x._v
            if v.__class__ is not float and v.dtype.kind in "iub":
                found = True
        elif x.__class__ in (list, tuple) and any(isinstance(e, Tensor) for e in x):
            if any(isinstance(e, Tensor) and e._rg for e in x):
                return False
            found = found or exact_operands(*x)
    return found


def _exact_value(x):
    if isinstance(x, Tensor):
        if STATE.guard is not None:
            STATE.guard(x, "integer")  # a trace pins the values it computes with
        return x._v
    if x.__class__ in (list, tuple) and any(isinstance(e, Tensor) for e in x):
        return type(x)(_exact_value(e) for e in x)
    return x


def _exact_result(out):
    if isinstance(out, tuple):
        return tuple(_exact_result(o) for o in out)
    if isinstance(out, (np.ndarray, np.generic)):
        if out.dtype == np.float64 and out.ndim == 0:
            return Tensor._const(float(out))
        return Tensor._const(np.array(out))
    return out


def numpy_exact(fn, *args, **kwargs):
    """``fn`` (a NumPy function) on the operands' values, its result as Tensors of NumPy's
    dtype: the arithmetic of integer and boolean Tensors (NumPy's own warnings apply).  A
    float result of integer and boolean operands alone is computed in float64, as PyTorch's
    default dtype: NumPy computes exp of a bool or int8 in float16 (2.71875 for e)."""
    args = [_exact_value(a) for a in args]
    kwargs = {k: _exact_value(v) for k, v in kwargs.items()}
    out = fn(*args, **kwargs)
    if _narrow_float(out) and not any(map(_narrow_float, (*args, *kwargs.values()))):
        out = fn(*map(_widened, args), **{k: _widened(v) for k, v in kwargs.items()})
    for o in out if isinstance(out, tuple) else (out,):
        kind = getattr(getattr(o, "dtype", None), "kind", "f")
        if kind == "c":  # (i * 1j: a complex Tensor, whose float ops would drop the
            name = getattr(fn, "__name__", "this operation")  # imaginary part later)
            refuse_complex(f"the result of {name} on integer or boolean Tensors (dtype {o.dtype})")
        if kind not in "fiub":
            raise TypeError(
                f"{getattr(fn, '__name__', 'this operation')} on integer or boolean Tensors: "
                f"the result has dtype {o.dtype}, not numbers tapegrad computes with"
            )
    return _exact_result(out)


def _narrow_float(v):
    """Is ``v`` (or an entry of a result tuple) a float16 / float32 array or scalar?"""
    if isinstance(v, tuple):
        return any(map(_narrow_float, v))
    dtype = getattr(v, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize < 8


def _widened(v):
    """An integer or boolean array as float64 (other values as they are)."""
    dtype = getattr(v, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        return np.asarray(v, dtype=np.float64)
    return v


# ---- broadcasting and the two-operand functions ------------------------------------------


def _shape(v):
    return () if v.__class__ is float else v.shape


def contiguous_strides(shape):
    strides = [0] * len(shape)
    s = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = s
        s *= shape[d]
    return strides


@functools.lru_cache(maxsize=1024)
def _broadcast_params(in_shape, out_shape):
    """VIEW's parameters for broadcasting ``in_shape`` to ``out_shape`` (a training loop asks
    for the same few pairs at every step)."""
    nd = len(out_shape)
    lead = nd - len(in_shape)
    cs = contiguous_strides(in_shape)
    strides = []
    for d in range(nd):
        if d < lead or in_shape[d - lead] == 1:
            strides.append(0)
        else:
            strides.append(cs[d - lead])
    return (nd, *out_shape, *strides, 0)


def _broadcast_value(v, shape, params):
    """``np.broadcast_to(v, shape)`` (read-only, no copy), made directly from the VIEW's
    strides: np.broadcast_to's own checks cost ~7x this on the small operands of a training
    step (a scalar weight, a bias row)."""
    a = np.asarray(v, np.float64)
    if not a.flags.c_contiguous or a.size == 0 or 0 in shape:
        return np.broadcast_to(a, shape)
    nd = params[0]
    out = np.ndarray(shape, np.float64, a, 0, tuple(8 * s for s in params[1 + nd : 1 + 2 * nd]))
    out.flags.writeable = False
    return out


def as_shape(t, x, shape):
    """Row of ``x`` broadcast to ``shape`` (an explicit VIEW row when shapes differ)."""
    xs = tuple(_shape(x._v) if isinstance(x, Tensor) else np.shape(x))
    shape = tuple(shape)
    if xs == shape:
        return row_of(t, x)
    if not (isinstance(x, Tensor) and x._rg):
        v = result(np.broadcast_to(np.asarray(value_of(x)), shape))  # copied when pushed
        return t.enter(T.CONST, v, None, 0)
    r = row_of(t, x)
    params = _broadcast_params(xs, shape)
    v = _broadcast_value(x._v, shape, params)
    # a large broadcast of x's own array (a bias over a batch) stays lazy, as x's row does:
    # an in-place change of x copies the rows that share its memory first (a float's
    # broadcast is of an array made for it)
    own = x._v.__class__ is float or T.owns(x._v, x)
    return record(t, C.VIEW, r, -1, v, ip=t.add_ints(params), own=own)._row


def same_or_scalar(a, b):
    """Two float64 Tensor values one op row takes as they are: floats, equal-shape arrays, or
    an array and a float (the kernels broadcast a single value): no broadcast row, no cast."""
    if a.__class__ is float:
        return b.__class__ is float or b.dtype == np.float64
    if b.__class__ is float:
        return a.dtype == np.float64
    return a.dtype == np.float64 and b.dtype == np.float64 and a.shape == b.shape


# the NumPy ufunc each two-operand op computes (IEEE results on floats and arrays alike)
_BINARY_FWD = {
    C.__dict__[o.name]: getattr(np, o.numpy[0])
    for o in OPS
    if o.family == "elementwise" and o.arity == 2 and not o.params
}


_INTEGER_DIVISIONS = frozenset((C.REMAINDER, C.FMOD))


def refuse_integer_zero(name, x, y):
    """An integer division (``//``, ``%``, ``fmod``, ``remainder``) by an integer 0 raises
    ZeroDivisionError, as PyTorch's: NumPy's 0 (with a warning) would be a wrong number."""
    if _kind(x) in "iub" and _kind(y) in "iub" and not np.all(_exact_value(y)):
        raise ZeroDivisionError(
            f"{name}: integer division by zero (PyTorch raises ZeroDivisionError; NumPy "
            "would give 0); divide by a float (x.double()) for inf or nan there"
        )


def _kind(v):
    """The dtype kind of an operand's value ("f" for a float, without converting a Tensor's)."""
    v = v._v if isinstance(v, Tensor) else v
    return "f" if v.__class__ is float else np.asarray(v).dtype.kind


def _binary(name, code, x, y):
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        if code in _INTEGER_DIVISIONS:
            refuse_integer_zero(name, x, y)
        return numpy_exact(_BINARY_FWD[code], x, y)
    xv = value_of(x)
    yv = value_of(y)
    try:  # numpy's own warnings apply, as they would to the same numpy code
        out = _BINARY_FWD[code](xv, yv)
    except ValueError:
        raise ValueError(
            f"{name}: operands could not be broadcast together with shapes "
            f"{np.shape(xv)} and {np.shape(yv)}"
        ) from None
    out = result(out)
    # an operand of one value is broadcast by the kernels themselves (no VIEW row): a scalar
    # weight or bias times an array records one row, as equal shapes do
    if isinstance(x, Tensor) and isinstance(y, Tensor) and same_or_scalar(xv, yv):
        return record_binary(x, y, code, out)  # the small-array fast path
    if not needs_grad(x, y):
        return Tensor._const(out)
    t = tape_for(x, y)
    shape = _shape(out)
    ra = row_of(t, x) if xv.__class__ is float else as_shape(t, x, shape)
    rb = row_of(t, y) if yv.__class__ is float else as_shape(t, y, shape)
    return record(t, code, ra, rb, out)


# ---- the functions ----------------------------------------------------------------------------


def make_unary(name: str):
    """The Python function of the one-operand elementwise op ``name`` (``"EXP"``): NumPy's
    exact arithmetic on integer Tensors that need no gradient, ``math`` on floats (NumPy's
    IEEE result where ``math`` raises), NumPy on arrays; a docstring with the declaration's
    checked example."""
    spec = spec_op(name)
    code = C.__dict__[name]
    np_fwd = formula.python_function(spec.fwd, ("a",), "numpy")
    math_fwd = formula.python_function(spec.fwd, ("a",), "math")
    np_ufunc = getattr(np, spec.numpy[0], None) if spec.numpy else None

    def f(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name (tg.exp(input=x))
        x = input if isinstance(input, Tensor) else Tensor._const(value_of(input))
        v = x._v
        if np_ufunc is not None and v.__class__ is not float and v.dtype.kind in "iub":
            if not x._rg:
                return numpy_exact(np_ufunc, x)
        if v.__class__ is float:
            try:
                out = math_fwd(v)
            except (ValueError, OverflowError, ZeroDivisionError):
                out = _ieee(np_fwd, v)  # math raises where IEEE gives inf/nan
        else:  # numpy's own warnings apply, as they would to the same numpy code
            out = np_fwd(v if v.dtype == np.float64 else v.astype(np.float64))
        return record_unary(x, code, out)

    f.__name__ = f.__qualname__ = name.lower()
    f.__module__ = "tapegrad.core.ufuncs"  # where it lives (and its doctest is found)
    summary = spec.doc or f"Elementwise {f.__name__} (differentiable)."
    f.__doc__ = f"{summary}\n\n{docstring_example(f.__name__, spec.example)}"
    return f


def make_binary(name: str):
    """The Python function of the two-operand elementwise op ``name`` (``"HYPOT"``): NumPy's
    broadcasting (a broadcast operand's gradient is summed back to its shape), NumPy's exact
    arithmetic on integer Tensors that need no gradient; a docstring with the declaration's
    checked example."""
    spec = spec_op(name)
    code = C.__dict__[name]
    fname = spec.function or name.lower()

    def f(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's names
        return _binary(fname, code, input, other)

    f.__name__ = f.__qualname__ = fname
    f.__module__ = "tapegrad.core.ufuncs"
    summary = spec.doc or f"Elementwise {fname} (differentiable)."
    f.__doc__ = f"{summary}\n\n{docstring_example(fname, spec.example)}"
    return f


def docstring_example(name: str, example: tuple) -> str:
    """The ``Examples:`` section of the docstring of ``tg.<name>`` from its declaration's
    ``example``: (input, value, derivative[, derivative formula]), values computed once with
    NumPy and the closed-form derivative (checked against central differences) and written as
    tapegrad prints them, so the doctests check tapegrad's value and gradient against them.

    >>> ex = ("[0.5, 2.0]", "[-0.6931, 0.6931]", "[2.0000, 0.5000]", "1 / x")
    >>> "tensor([-0.6931, 0.6931], grad_fn=<LogBackward0>)" in docstring_example("log", ex)
    True
    """
    if len(example) == 5:
        return _binary_example(name, *example)
    x, value, derivative, *rule = example  # a scan's example has no formula
    comment = f"       # {rule[0]}" if rule else ""
    return (
        "Examples:\n"
        "    >>> import tapegrad as tg\n"
        f"    >>> x = tg.tensor({x}, requires_grad=True)\n"
        f"    >>> y = tg.{name}(x); y\n"
        f"    tensor({value}, grad_fn=<{name.capitalize()}Backward0>)\n"
        f"    >>> y.sum().backward(); x.grad{comment}\n"
        f"    tensor({derivative})\n"
    )


def _binary_example(name, x1, x2, value, g1, g2):
    return (
        "Examples:\n"
        "    >>> import tapegrad as tg\n"
        f"    >>> x1 = tg.tensor({x1}, requires_grad=True)\n"
        f"    >>> x2 = tg.tensor({x2}, requires_grad=True)\n"
        f"    >>> y = tg.{name}(x1, x2); y\n"
        f"    tensor({value}, grad_fn=<{name.capitalize()}Backward0>)\n"
        f"    >>> y.sum().backward(); x1.grad, x2.grad\n"
        f"    (tensor({g1}), tensor({g2}))\n"
    )
