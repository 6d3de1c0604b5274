"""The making of tapegrad's one-operand elementwise functions (``tg.exp`` ...) from their
declarations, and the NumPy arithmetic of integer and boolean Tensors they fall back to.

``tapegrad/core/unary.py`` (generated from ``tapegrad/ops/elementwise.py``) calls
``make_unary`` once per declared function."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..ops import formula
from ..ops.spec import C
from ..ops.spec import op as spec_op
from .tensor import STATE, record_unary, value_of
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
    dtype: the arithmetic of integer and boolean Tensors (NumPy's own warnings apply)."""
    args = [_exact_value(a) for a in args]
    return _exact_result(fn(*args, **{k: _exact_value(v) for k, v in kwargs.items()}))


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

    def f(x: TensorLike) -> Tensor:
        if not isinstance(x, Tensor):
            x = x if isinstance(x, Tensor) else Tensor._const(value_of(x))
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
    f.__module__ = "tapegrad.core.unary"  # where it lives (and its doctest is found)
    summary = spec.doc or f"Elementwise {f.__name__} (differentiable)."
    f.__doc__ = f"{summary}\n\n{docstring_example(f.__name__, spec.example)}"
    return f


def docstring_example(name: str, example: tuple) -> str:
    """The ``Examples:`` section of the docstring of ``tg.<name>`` from its declaration's
    ``example``: (input, value, derivative, derivative formula), values computed once with
    NumPy and the closed-form derivative (checked against central differences) and written as
    tapegrad prints them, so the doctests check tapegrad's value and gradient against them.

    >>> ex = ("[0.5, 2.0]", "[-0.6931, 0.6931]", "[2.0000, 0.5000]", "1 / x")
    >>> "tensor([-0.6931, 0.6931], grad_fn=<LogBackward0>)" in docstring_example("log", ex)
    True
    """
    x, value, derivative, rule = example
    return (
        "Examples:\n"
        "    >>> import tapegrad as tg\n"
        f"    >>> x = tg.tensor({x}, requires_grad=True)\n"
        f"    >>> y = tg.{name}(x); y\n"
        f"    tensor({value}, grad_fn=<{name.capitalize()}Backward0>)\n"
        f"    >>> y.sum().backward(); x.grad       # {rule}\n"
        f"    tensor({derivative})\n"
    )
