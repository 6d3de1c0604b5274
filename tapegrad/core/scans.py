"""Recording scans (one row each) and the making of the public scan functions (``tg.cumsum``,
``tg.cumprod``, ``tg.logcumsumexp``) from their declarations in
``tapegrad/ops/structural/__init__.py``; ``tapegrad/core/ufuncs.py`` (generated) calls
``make_scan`` once per declared function."""

from __future__ import annotations

import functools
import operator

import numpy as np
from numpy.typing import ArrayLike

from ..ops import formula
from ..ops.spec import C
from ..ops.spec import op as spec_op
from .elementwise import docstring_example
from .tensor import TensorBase as Tensor
from .tensor import needs_grad, record, result, row_of, tape_for, value_of

TensorLike = Tensor | ArrayLike


@functools.cache
def _step(name, arity):
    """The combine formula of scan ``name`` on NumPy arrays (made once)."""
    return formula.python_function(spec_op(name).combine, ("s", "a", "b")[: arity + 1], "numpy")


def _value(spec, values, reverse):
    """The scan of ``values`` (each (outer, m, inner)) over the middle axis, in the order the
    kernels run it: NumPy's ``ufunc.accumulate`` when the declaration names one, else the
    combine formula applied along the axis with NumPy."""
    if reverse:
        values = [v[:, ::-1] for v in values]
    if spec.ufunc:
        out = getattr(np, spec.ufunc).accumulate(values[0], axis=1)
    else:
        step = _step(spec.name, len(values))
        out = np.empty(values[0].shape)
        s = np.full(values[0][:, 0].shape, spec.init) if values[0].shape[1] else None
        for k in range(values[0].shape[1]):
            s = step(s, *(v[:, k] for v in values))
            out[:, k] = s
    return out[:, ::-1] if reverse else out


def scan(name: str, operands: tuple, lanes: tuple, reverse: int = 0, shape=None) -> Tensor:
    """Record the scan ``name`` (``"CUMSUM"``) of ``operands`` seen as ``lanes`` = (outer, m,
    inner), over m (backwards when ``reverse``); the result has ``shape`` (the first
    operand's when None)."""
    spec = spec_op(name)
    xs = [x if isinstance(x, Tensor) else Tensor._const(value_of(x)) for x in operands]
    vals = [np.asarray(x._v, dtype=np.float64).reshape(lanes) for x in xs]
    out = np.ascontiguousarray(_value(spec, vals, reverse))
    out = result(out.reshape(np.shape(xs[0]._v) if shape is None else shape))
    if not needs_grad(*xs):
        return Tensor._const(out)
    t = tape_for(*xs)
    rows = [row_of(t, x) for x in xs] + [-1]
    ip = t.add_ints([*lanes, int(reverse)])
    return record(t, C.__dict__[name], rows[0], rows[1], out, ip=ip)


def _lanes(x: Tensor, axis, name, torch_dim=False):
    """(outer, m, inner) of a scan of x along ``axis`` and the result's shape; ``axis=None``
    scans the flattened array (NumPy's rule), as does any axis of a 0-d value.  A PyTorch
    ``torch_dim`` is checked as PyTorch's (a 0-d value's dim 0 or -1 keeps its shape ())."""
    shape = np.shape(x._v)
    n = int(np.prod(shape, dtype=np.int64))
    if axis is None or (not shape and not torch_dim):
        return (1, n, 1), (n,)
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer or None, not {axis!r}") from None
    if torch_dim and not -max(len(shape), 1) <= ax < max(len(shape), 1):
        k = max(len(shape), 1)
        raise np.exceptions.AxisError(
            f"{name}: Dimension out of range (expected to be in range of [{-k}, {k - 1}], but "
            f"got {ax}): a tensor of shape {shape} has no dim (axis) {ax}"
        )
    if not shape:
        return (1, 1, 1), ()
    if not -len(shape) <= ax < len(shape):
        raise np.exceptions.AxisError(ax, len(shape), name)
    ax %= len(shape)
    outer = int(np.prod(shape[:ax], dtype=np.int64))
    inner = int(np.prod(shape[ax + 1 :], dtype=np.int64))
    return (outer, shape[ax], inner), shape


def make_scan(name: str):
    """The public function of the scan ``name``: ``f(x, axis=None, *, dim=None)`` (NumPy's
    axis, PyTorch's dim), with a docstring from the declaration's checked example."""
    spec = spec_op(name)
    fname = spec.function or name.lower()

    def f(x: TensorLike, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        torch_dim = dim is not None or fname == "logcumsumexp"  # (NumPy has no logcumsumexp)
        if dim is not None:
            if axis is not None:
                raise TypeError(f"{fname}: give axis= or dim=, not both")
            axis = dim
        x = x if isinstance(x, Tensor) else Tensor._const(value_of(x))
        lanes, shape = _lanes(x, axis, fname, torch_dim)
        return scan(name, (x,), lanes, 0, shape)

    f.__name__ = f.__qualname__ = fname
    f.__module__ = "tapegrad.core.ufuncs"
    summary = spec.doc or f"Running {fname} along an axis (differentiable)."
    f.__doc__ = f"{summary}\n\n{docstring_example(fname, spec.example)}"
    return f
