"""More of ``torch``'s top-level functions under their PyTorch names and meanings: the stacking
family (``hstack``, ``vstack``, ``dstack``, ``column_stack``, ``atleast_1d`` ...), grids and
products (``meshgrid``, ``broadcast_tensors``, ``block_diag``, ``cartesian_prod``,
``combinations``, ``vander``, ``chain_matmul``), integration and differences (``trapezoid``,
``cumulative_trapezoid``, ``gradient``), distances (``pdist``, ``dist``), dtype questions
(``result_type``, ``promote_types``, ``can_cast``), the random draws tied to Tensors of
parameters (``normal``, ``bernoulli``, ``poisson``) and the functions of a few methods
(``clone``, ``take``, ``nonzero``, ``diagonal``, ``isin``).

Each is composed of differentiable Tensor operations, so first, second and higher derivatives
and forward mode come with it; where PyTorch raises, these raise, naming the function.
"""

import itertools
import math
import numbers
from collections.abc import Sequence

import numpy as np

from . import functions as O
from . import torch_methods as P
from .creation import Generator, _generator
from .tensor import TensorBase as Tensor
from .tensor import new_tensor, scalar_argument

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "bernoulli",
    "block_diag",
    "broadcast_shapes",
    "broadcast_tensors",
    "can_cast",
    "cartesian_prod",
    "chain_matmul",
    "clone",
    "column_stack",
    "combinations",
    "concat",
    "cumulative_trapezoid",
    "diagonal",
    "dist",
    "dstack",
    "gradient",
    "hstack",
    "is_tensor",
    "isin",
    "meshgrid",
    "nonzero",
    "normal",
    "pdist",
    "poisson",
    "promote_types",
    "result_type",
    "row_stack",
    "take",
    "trapezoid",
    "vander",
    "vstack",
]


def _t(x):
    return x if isinstance(x, Tensor) else O.tensor_of(x)


def _float(x):
    """``x`` as a float64 Tensor (an integer or bool one converted, as PyTorch's integration
    and differences compute in the default float dtype)."""
    x = _t(x)
    return x if x.dtype == np.float64 else P.convert(x, np.float64)


def _tensor_list(name, tensors):
    """The Tensors of ``tensors`` (a list or tuple), refusing a lone Tensor (iterating it
    would stack its rows) and an empty list, as PyTorch does."""
    if isinstance(tensors, (Tensor, np.ndarray)) or not isinstance(tensors, Sequence):
        raise TypeError(
            f"{name}(): expected a list or tuple of Tensors, got {type(tensors).__name__}; "
            f"write tg.{name}([a, b])"
        )
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return [_t(x) for x in tensors]


def _varargs(args):
    """``f(a, b)`` or ``f([a, b])``: the Tensors, and whether one sequence was given."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0]), True
    return list(args), False


def _normalize_dim(dim, ndim, name):
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{name}: dim must be an int, got {type(dim).__name__}")
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if ndim == 0:
        raise IndexError(f"{name}: Dimension specified as {dim} but tensor has no dimensions")
    if not lo <= dim <= hi:
        raise IndexError(
            f"{name}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got "
            f"{dim})"
        )
    return int(dim) % ndim


# ---- the stacking family -------------------------------------------------------------------


def _atleast(nd, name, args):
    tensors, listed = _varargs(args)
    out = []
    for x in tensors:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): expected Tensors, got {type(x).__name__}")
        if x.ndim < nd:
            shape = tuple(x.shape)
            if nd == 1:
                shape = (1,)
            elif nd == 2:
                shape = (1, *shape) if x.ndim == 1 else (1, 1)
            else:
                shape = {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}[x.ndim]
            x = x.reshape(shape)
        out.append(x)
    return tuple(out) if listed or len(out) != 1 else out[0]


def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """PyTorch's ``torch.atleast_1d``: each Tensor with at least one dimension (a 0-d one
    reshaped to ``(1,)``); one Tensor gives a Tensor, several (or a list) a tuple.

    Examples:
        >>> import tapegrad as tg
        >>> tg.atleast_1d(tg.tensor(2.0))
        tensor([2.])
    """
    return _atleast(1, "atleast_1d", tensors)


def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """PyTorch's ``torch.atleast_2d``: a 0-d Tensor as ``(1, 1)``, a 1-d one of n as
    ``(1, n)``; others unchanged.

    Examples:
        >>> import tapegrad as tg
        >>> tg.atleast_2d(tg.tensor([1.0, 2.0])).shape
        (1, 2)
    """
    return _atleast(2, "atleast_2d", tensors)


def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """PyTorch's ``torch.atleast_3d``: a 0-d Tensor as ``(1, 1, 1)``, a 1-d one of n as
    ``(1, n, 1)``, a 2-d one ``(m, n)`` as ``(m, n, 1)``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.atleast_3d(tg.tensor([1.0, 2.0])).shape
        (1, 2, 1)
    """
    return _atleast(3, "atleast_3d", tensors)


def _cat(tensors, dim, name):
    dt = _common_dtype([x.dtype for x in tensors])
    tensors = [x if x.dtype == dt else P.convert(x, dt) for x in tensors]
    shapes = [tuple(x.shape) for x in tensors]
    if len({len(s) for s in shapes}) > 1:
        raise RuntimeError(
            f"{name}: Tensors must have same number of dimensions: got "
            f"{' and '.join(str(x.ndim) for x in tensors)}"
        )
    if len({s[:dim] + s[dim + 1 :] for s in shapes}) > 1:
        raise RuntimeError(
            f"{name}: Sizes of tensors must match except in dimension {dim}: got the shapes "
            f"{shapes} (after making them at least {max(dim, 1)}-d)"
        )
    return O.concatenate(tensors, dim)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """PyTorch's ``torch.hstack``: 1-d Tensors (0-d ones as 1-d) joined end to end, others
    along dim 1.

    Examples:
        >>> import tapegrad as tg
        >>> tg.hstack([tg.tensor([1.0, 2.0]), tg.tensor(3.0)])
        tensor([1., 2., 3.])
    """
    ts = [atleast_1d(x) for x in _tensor_list("hstack", tensors)]
    return _cat(ts, 0 if ts[0].ndim == 1 else 1, "hstack")


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """PyTorch's ``torch.vstack`` (also ``tg.row_stack``): the Tensors made at least 2-d
    (``atleast_2d``) and joined along dim 0.

    Examples:
        >>> import tapegrad as tg
        >>> tg.vstack([tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])]).shape
        (2, 2)
    """
    return _cat([atleast_2d(x) for x in _tensor_list("vstack", tensors)], 0, "vstack")


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """PyTorch's ``torch.row_stack``, an alias of ``tg.vstack``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.row_stack([tg.tensor([1.0]), tg.tensor([2.0])]).shape
        (2, 1)
    """
    return vstack(tensors)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """PyTorch's ``torch.dstack``: the Tensors made at least 3-d (``atleast_3d``) and joined
    along dim 2.

    Examples:
        >>> import tapegrad as tg
        >>> tg.dstack([tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])]).shape
        (1, 2, 2)
    """
    return _cat([atleast_3d(x) for x in _tensor_list("dstack", tensors)], 2, "dstack")


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """PyTorch's ``torch.column_stack``: 0-d and 1-d Tensors as columns ``(n, 1)``, joined
    with the others along dim 1.

    Examples:
        >>> import tapegrad as tg
        >>> tg.column_stack([tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])])
        tensor([[1., 3.],
                [2., 4.]])
    """
    ts = _tensor_list("column_stack", tensors)
    ts = [x.reshape(x.numel(), 1) if x.ndim <= 1 else x for x in ts]
    return _cat(ts, 1, "column_stack")


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """PyTorch's ``torch.concat``, an alias of ``tg.cat``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.concat([tg.tensor([1.0]), tg.tensor([2.0])])
        tensor([1., 2.])
    """
    return O.concatenate(_tensor_list("concat", tensors), dim)


# ---- grids and broadcasting ----------------------------------------------------------------


def broadcast_shapes(*shapes: int | Sequence[int]) -> tuple[int, ...]:
    """PyTorch's ``torch.broadcast_shapes``: the shape the given shapes (tuples, or ints for
    1-d shapes) broadcast to, as a tuple; a mismatch raises.

    Examples:
        >>> import tapegrad as tg
        >>> tg.broadcast_shapes((2, 1), (3,), 1)
        (2, 3)
    """
    listed = []
    for k, s in enumerate(shapes):
        s = (s,) if isinstance(s, (int, np.integer)) else s
        if isinstance(s, (str, bytes)) or not isinstance(s, Sequence):
            raise TypeError(
                f"broadcast_shapes: shape {k} must be an int or a sequence of ints, got {s!r}"
            )
        for d in s:
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
                raise TypeError(f"broadcast_shapes: shape {k} has a non-int size {d!r}")
            if d < 0:
                raise ValueError(
                    f"broadcast_shapes: shape {k} {tuple(s)} has a negative size (PyTorch: "
                    "Attempting to broadcast a dimension with negative length!)"
                )
        listed.append(tuple(int(d) for d in s))
    out = [1] * max((len(s) for s in listed), default=0)
    for k, s in enumerate(listed):
        for i in range(1, len(s) + 1):
            d = s[-i]
            if d == 1:
                continue
            if out[-i] not in (1, d):
                raise RuntimeError(
                    f"broadcast_shapes: shape {k} {s} cannot be broadcast: size {d} at dim "
                    f"{-i} against {out[-i]} (the shapes so far broadcast to {tuple(out)})"
                )
            out[-i] = d
    return tuple(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """PyTorch's ``torch.broadcast_tensors``: the Tensors expanded to their common shape
    (views, as ``x.expand``).

    Examples:
        >>> import tapegrad as tg
        >>> a, b = tg.broadcast_tensors(tg.tensor([1.0, 2.0]), tg.tensor([[0.0], [1.0]]))
        >>> a.shape, b.shape
        ((2, 2), (2, 2))
    """
    ts = []
    for k, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"broadcast_tensors(): expected Tensors, got {type(x).__name__} at {k}")
        ts.append(x)
    shapes = [tuple(x.shape) for x in ts]
    try:
        shape = broadcast_shapes(*shapes)
    except RuntimeError:
        raise RuntimeError(
            f"broadcast_tensors: the shapes {shapes} do not broadcast to a common shape"
        ) from None
    return tuple(x if tuple(x.shape) == shape else x.expand(*shape) for x in ts)


def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """PyTorch's ``torch.meshgrid``: coordinate grids of 0-d or 1-d Tensors; ``indexing='ij'``
    (the default, as PyTorch's) gives the grids the shape (len(t0), len(t1), ...), ``'xy'``
    swaps the first two (NumPy's and MATLAB's convention).  The grids are views of the
    inputs, so their gradients add up.

    Examples:
        >>> import tapegrad as tg
        >>> X, Y = tg.meshgrid(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0, 5.0]), indexing="ij")
        >>> X.shape
        (2, 3)
    """
    ts, _ = _varargs(tensors)
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for k, x in enumerate(ts):
        if not isinstance(x, Tensor):
            raise TypeError(f"meshgrid(): expected Tensors, got {type(x).__name__} at {k}")
        if x.ndim > 1:
            raise RuntimeError(
                f"meshgrid: expected 0D or 1D tensors, got shape {tuple(x.shape)} at {k}"
            )
    if len({x.dtype for x in ts}) > 1:
        raise RuntimeError(
            f"meshgrid expects all tensors to have the same dtype, got "
            f"{[str(x.dtype) for x in ts]}; convert them first (x.double())"
        )
    sizes = [x.numel() for x in ts]
    order = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    out = []
    for k, x in enumerate(ts):
        view = [1] * len(ts)
        view[order.index(k)] = sizes[k]
        out.append(x.reshape(tuple(view)).expand(*shape))
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """PyTorch's ``torch.cartesian_prod``: the rows of every combination of the entries of
    the 1-d Tensors, an (n0 * n1 * ..., k) Tensor (one Tensor is returned as it is).

    Examples:
        >>> import tapegrad as tg
        >>> tg.cartesian_prod(tg.tensor([1, 2]), tg.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    for x in tensors:
        if isinstance(x, Tensor) and x.ndim != 1:
            raise RuntimeError(f"cartesian_prod: Expect a 1D vector, but got shape {list(x.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return O.stack([g.reshape(-1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.combinations``: the r-length combinations of the entries of a 1-d
    Tensor (as ``itertools.combinations``, or ``combinations_with_replacement``), an
    (n_combinations, r) Tensor; ``r=0`` gives an empty 1-d Tensor.

    Examples:
        >>> import tapegrad as tg
        >>> tg.combinations(tg.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    x = _t(input)
    if x.ndim != 1:
        raise RuntimeError(f"combinations: Expect a 1D vector, but got shape {list(x.shape)}")
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
        raise TypeError(f"combinations: r must be an int, got {type(r).__name__}")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return new_tensor(np.zeros(0, dtype=x.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(x.shape[0]), int(r))), dtype=np.int64).reshape(-1, int(r))
    return x[idx]


def block_diag(*tensors: Tensor) -> Tensor:
    """PyTorch's ``torch.block_diag``: the Tensors (0-d as (1, 1), 1-d of n as (1, n), or
    2-d) down the diagonal of a matrix of zeros; the dtype is their promoted one.

    Examples:
        >>> import tapegrad as tg
        >>> tg.block_diag(tg.tensor([[1.0, 2.0]]), tg.tensor(3.0))
        tensor([[1., 2., 0.],
                [0., 0., 3.]])
    """
    blocks = []
    for k, x in enumerate(tensors):
        x = _t(x)
        if x.ndim > 2:
            raise RuntimeError(
                "block_diag: Input tensors must have 2 or fewer dimensions. "
                f"Input {k} has {x.ndim} dimensions"
            )
        blocks.append(x.reshape(1, -1) if x.ndim < 2 else x)
    if not blocks:
        return new_tensor(np.zeros((1, 0)))
    dt = _common_dtype([b.dtype for b in blocks])
    blocks = [b if b.dtype == dt else P.convert(b, dt) for b in blocks]
    cols = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [new_tensor(np.zeros((r, left), dt))] if left else []
        parts.append(b)
        if cols - left - c:
            parts.append(new_tensor(np.zeros((r, cols - left - c), dt)))
        rows.append(O.concatenate(parts, 1) if len(parts) > 1 else b)
        left += c
    return O.concatenate(rows, 0) if len(rows) > 1 else rows[0]


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """PyTorch's ``torch.vander``: the Vandermonde matrix of a 1-d Tensor, columns
    ``x ** (N - 1), ..., x ** 0`` (``increasing=True``: from ``x ** 0``); ``N`` defaults to
    ``len(x)``.  The powers are products (no ``x ** k``), so the derivative at 0 is exact;
    integer and bool input gives int64.

    Examples:
        >>> import tapegrad as tg
        >>> tg.vander(tg.tensor([1.0, 2.0, 3.0]), N=3)
        tensor([[1., 1., 1.],
                [4., 2., 1.],
                [9., 3., 1.]])
    """
    x = _t(x)
    if x.ndim != 1:
        raise RuntimeError(
            f"vander: x must be a one-dimensional tensor, got shape {tuple(x.shape)}"
        )
    n = x.shape[0] if N is None else N
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"vander: N must be an int, got {type(N).__name__}")
    if n < 0:
        raise RuntimeError(f"vander: N must be non-negative, got {n}")
    if x.dtype.kind in "iub" and x.dtype != np.int64:
        x = P.convert(x, np.int64)
    if n == 0:
        return new_tensor(np.zeros((x.shape[0], 0), dtype=x.dtype))
    col = new_tensor(np.ones(x.shape[0], dtype=x.dtype))
    cols = [col]
    for _ in range(int(n) - 1):
        col = O.mul(col, x) if len(cols) > 1 else x
        cols.append(col)
    if not increasing:
        cols.reverse()
    return O.stack(cols, 1)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """PyTorch's ``torch.chain_matmul`` (deprecated there for ``torch.linalg.multi_dot``):
    the product of the 2-d Tensors, left to right.

    Examples:
        >>> import tapegrad as tg
        >>> tg.chain_matmul(tg.ones(2, 3), tg.ones(3, 4), tg.ones(4, 1))
        tensor([[12.],
                [12.]])
    """
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    ms = [_t(m) for m in matrices]
    for k, m in enumerate(ms):
        if m.ndim != 2:
            raise RuntimeError(
                f"chain_matmul(): matrix {k} has {m.ndim} dimensions (shape "
                f"{tuple(m.shape)}), expected 2"
            )
    out = ms[0]
    for k, m in enumerate(ms[1:], 1):
        if out.shape[1] != m.shape[0]:
            raise RuntimeError(
                f"chain_matmul(): matrices {k - 1} and {k} with shapes "
                f"{tuple(ms[k - 1].shape)} and {tuple(m.shape)} cannot be multiplied"
            )
        out = O.matmul(out, m)
    return out if len(ms) > 1 else out.clone()


# ---- integration and differences -----------------------------------------------------------


def _slice(x, dim, start, stop):
    key = [slice(None)] * x.ndim
    key[dim] = slice(start, stop)
    return x[tuple(key)]


def _x_along(x, y, dim, name):
    """The sample points ``x`` shaped to broadcast against ``y`` along ``dim``, as PyTorch's
    trapezoid reads them."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(
                f"{name}: There must be one `x` value for each sample point (x has "
                f"{x.shape[0]}, y has {y.shape[dim]} along dim {dim})"
            )
        view = [1] * y.ndim
        view[dim] = x.shape[0]
        return x.reshape(tuple(view))
    if x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    d = dim - y.ndim
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
        fits = x.shape[d] == y.shape[dim]
    except (ValueError, IndexError):
        fits = False
    if not fits:
        raise RuntimeError(
            f"{name}: the sample points x of shape {tuple(x.shape)} do not fit y of shape "
            f"{tuple(y.shape)} (x must broadcast against y, with y's size along dim {dim}); "
            "give x as a 1-d Tensor along dim, or of y's shape"
        )
    return x


def _trapezoid_args(name, y, x, dx, dim):
    y = _float(y)
    dim = _normalize_dim(dim, y.ndim, name)
    if x is not None and dx is not None:
        raise TypeError(f"{name}: give the sample points x or the spacing dx=, not both")
    if x is not None and not isinstance(x, Tensor):
        if isinstance(x, numbers.Number):
            raise TypeError(
                f"{name}: x must be a Tensor of sample points; give a uniform spacing as "
                f"dx={x!r} (tg.{name}(y, dx={x!r}))"
            )
        x = O.tensor_of(x)
    if x is not None:
        x = _x_along(_float(x), y, dim, name)
    elif dx is not None:
        dx = scalar_argument(dx, f"{name}: dx")
    return y, x, (1.0 if dx is None else dx), dim


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1):
    """PyTorch's ``torch.trapezoid`` (NumPy's ``trapezoid``): the trapezoidal rule along
    ``dim``, with sample points ``x`` (a 1-d Tensor along ``dim``, or one broadcasting
    against ``y``) or a uniform spacing ``dx`` (1 by default).

    Examples:
        >>> import tapegrad as tg
        >>> tg.trapezoid(tg.tensor([1.0, 2.0, 4.0])), tg.trapezoid(tg.tensor([1.0, 2.0]), dx=2)
        (tensor(4.5000), tensor(3.))
    """
    y, x, dx, dim = _trapezoid_args("trapezoid", y, x, dx, dim)
    n = y.shape[dim]
    if n == 0:
        return new_tensor(np.zeros(tuple(s for i, s in enumerate(y.shape) if i != dim)))
    pair = O.add(_slice(y, dim, 0, n - 1), _slice(y, dim, 1, n))
    if x is None:
        return O.mul(O.sum(pair, dim), dx / 2.0)
    dxs = O.sub(_slice(x, dim, 1, None), _slice(x, dim, 0, -1))
    return O.div(O.sum(O.mul(dxs, pair), dim), 2.0)


def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor:
    """PyTorch's ``torch.cumulative_trapezoid`` (SciPy's without ``initial``): the running
    trapezoidal rule along ``dim``, one entry fewer than ``y`` along it.

    Examples:
        >>> import tapegrad as tg
        >>> tg.cumulative_trapezoid(tg.tensor([1.0, 2.0, 4.0]))
        tensor([1.5000, 4.5000])
    """
    y, x, dx, dim = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[dim]
    pair = O.add(_slice(y, dim, 0, max(n - 1, 0)), _slice(y, dim, 1, max(n, 1)))
    if x is None:
        return O.mul(pair, dx / 2.0).cumsum(dim)
    dxs = O.sub(_slice(x, dim, 1, None), _slice(x, dim, 0, -1))
    return O.div(O.mul(dxs, pair), 2.0).cumsum(dim)


def _gradient_dims(x, dim):
    if dim is None:
        return list(range(x.ndim)), False
    listed = isinstance(dim, (list, tuple))
    dims = [_normalize_dim(d, x.ndim, "gradient") for d in (dim if listed else [dim])]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"gradient: dim {dim} repeats a dimension")
    return dims, True


def _gradient_spacing(x, spacing, dims, dim_given):
    """One spacing per dim: a float, or a 1-d float64 Tensor of coordinates."""
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            given = (
                "the dims of dim"
                if dim_given
                else f"'self.dim() = {x.ndim}', since dim argument was not given"
            )
            raise RuntimeError(
                f"gradient: expected spacing to be unspecified, a scalar, or a list of length "
                f"equal to {given}, but got a list of length {len(spacing)}"
            )
        out = []
        for d, s in zip(dims, spacing, strict=True):
            if isinstance(s, Tensor) and s.ndim > 0:
                if s.ndim != 1 or s.shape[0] != x.shape[d]:
                    raise RuntimeError(
                        f"gradient: the coordinates for dim {d} must be a 1-d Tensor of "
                        f"{x.shape[d]} values (the size of the input along it), got shape "
                        f"{tuple(s.shape)}"
                    )
                out.append(_float(s))
            else:
                out.append(scalar_argument(s, "gradient: spacing"))
        return out
    if isinstance(spacing, Tensor) and spacing.ndim > 0:
        raise TypeError(
            "gradient: give coordinates as a list or tuple of 1-d Tensors, one per dim "
            "(spacing=(t,)); a lone Tensor is ambiguous"
        )
    h = scalar_argument(spacing, "gradient: spacing")
    return [h] * len(dims)


def _shaped(c, d, ndim):
    view = [1] * ndim
    view[d] = -1
    return c.reshape(tuple(view))


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]

    def s(a, b):
        return _slice(f, d, a, b)

    if not isinstance(h, Tensor):  # a uniform spacing
        inner = O.div(O.sub(s(2, None), s(0, n - 2)), 2.0 * h)
        if edge_order == 1:
            first = O.div(O.sub(s(1, 2), s(0, 1)), h)
            last = O.div(O.sub(s(n - 1, n), s(n - 2, n - 1)), h)
        else:
            first = O.div(
                O.add(O.add(O.mul(s(0, 1), -1.5), O.mul(s(1, 2), 2.0)), O.mul(s(2, 3), -0.5)), h
            )
            last = O.div(
                O.add(
                    O.add(O.mul(s(n - 3, n - 2), 0.5), O.mul(s(n - 2, n - 1), -2.0)),
                    O.mul(s(n - 1, n), 1.5),
                ),
                h,
            )
        return O.concatenate([first, inner, last], d)
    nd = f.ndim
    dx = O.sub(h[1:], h[:-1])  # the n - 1 steps
    hl, hr = dx[:-1], dx[1:]
    a = O.div(O.mul(-1.0, hr), O.mul(hl, O.add(hl, hr)))
    b = O.div(O.sub(hr, hl), O.mul(hl, hr))
    c = O.div(hl, O.mul(hr, O.add(hl, hr)))
    inner = O.add(
        O.add(O.mul(_shaped(a, d, nd), s(0, n - 2)), O.mul(_shaped(b, d, nd), s(1, n - 1))),
        O.mul(_shaped(c, d, nd), s(2, None)),
    )
    if edge_order == 1:
        first = O.div(O.sub(s(1, 2), s(0, 1)), _shaped(dx[:1], d, nd))
        last = O.div(O.sub(s(n - 1, n), s(n - 2, n - 1)), _shaped(dx[-1:], d, nd))
    else:
        d1, d2 = dx[0:1], dx[1:2]
        ca = O.div(O.mul(-1.0, O.add(O.mul(d1, 2.0), d2)), O.mul(d1, O.add(d1, d2)))
        cb = O.div(O.add(d1, d2), O.mul(d1, d2))
        cc = O.div(O.mul(-1.0, d1), O.mul(d2, O.add(d1, d2)))
        first = O.add(
            O.add(O.mul(_shaped(ca, d, nd), s(0, 1)), O.mul(_shaped(cb, d, nd), s(1, 2))),
            O.mul(_shaped(cc, d, nd), s(2, 3)),
        )
        d1, d2 = dx[-2:-1], dx[-1:]
        ca = O.div(d2, O.mul(d1, O.add(d1, d2)))
        cb = O.div(O.mul(-1.0, O.add(d2, d1)), O.mul(d1, d2))
        cc = O.div(O.add(O.mul(d2, 2.0), d1), O.mul(d2, O.add(d1, d2)))
        last = O.add(
            O.add(
                O.mul(_shaped(ca, d, nd), s(n - 3, n - 2)),
                O.mul(_shaped(cb, d, nd), s(n - 2, n - 1)),
            ),
            O.mul(_shaped(cc, d, nd), s(n - 1, n)),
        )
    return O.concatenate([first, inner, last], d)


def gradient(
    input: Tensor,  # noqa: A002
    *,
    spacing: float | Sequence[float] | Sequence[Tensor] = 1,
    dim: int | Sequence[int] | None = None,
    edge_order: int = 1,
) -> tuple[Tensor, ...]:
    """PyTorch's ``torch.gradient`` (NumPy's ``gradient``): the derivative estimated by
    central differences in the interior and one-sided ones (of order ``edge_order``, 1 or 2)
    at the ends, along each dim of ``dim`` (every dim by default); one Tensor per dim.
    ``spacing`` is a scalar, one scalar per dim, or one 1-d Tensor of coordinates per dim
    (unevenly spaced samples, second-order accurate inside).

    Examples:
        >>> import tapegrad as tg
        >>> tg.gradient(tg.tensor([1.0, 2.0, 4.0, 8.0]))
        (tensor([1.0000, 1.5000, 3.0000, 4.0000]),)
    """
    f = _float(input)
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise RuntimeError(
            f"gradient: only edge_order=1 and edge_order=2 are supported, got {edge_order!r}"
        )
    dims, dim_given = _gradient_dims(f, dim)
    hs = _gradient_spacing(f, spacing, dims, dim_given)
    for d in dims:
        if f.shape[d] < edge_order + 1:
            raise RuntimeError(
                f"gradient: expected each dimension size to be at least edge_order+1 "
                f"(= {edge_order + 1}), got size {f.shape[d]} along dim {d}"
            )
    return tuple(_gradient_along(f, d, h, edge_order) for d, h in zip(dims, hs, strict=True))


# ---- distances ----------------------------------------------------------------------------


def _check_float(x, name):
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"{name}: input dtype should be floating point, got {x.dtype}; convert it first "
            "(x.double())"
        )


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.pdist``: the p-norm distances between the rows of an (N, M) Tensor,
    the upper triangle of ``tg.cdist(x, x, p)`` row by row (N (N - 1) / 2 values), with
    PyTorch's derivatives (0 at coincident rows; for p = inf each tied maximum gets the
    whole gradient).

    Examples:
        >>> import tapegrad as tg
        >>> tg.pdist(tg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
        tensor([5.0000, 1.0000, 4.2426])
    """
    x = _t(input)
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    _check_float(x, "pdist")
    p = scalar_argument(p, "pdist: p")
    if p < 0 or math.isnan(p):
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    i, j = np.triu_indices(x.shape[0], 1)
    d = O.sub(x[i], x[j])
    if math.isinf(p):
        absd = O.abs_(d)
        m = O.amax(absd, 1)
        mask = O.truth(absd == O.amax(absd, 1, True)).astype(np.float64)
        surrogate = O.sum(O.mul(absd, mask), 1)  # each tied maximum gets the whole gradient
        return O.add(m.detach(), O.sub(surrogate, surrogate.detach()))
    return d.norm(p, dim=1)


def dist(input: Tensor, other: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.dist``: the p-norm of ``input - other`` (broadcast) over all
    entries, with the derivative 0 where they coincide, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.dist(tg.tensor([0.0, 0.0]), tg.tensor([3.0, 4.0]))
        tensor(5.)
    """
    a, b = _t(input), _t(other)
    _check_float(a, "dist")
    _check_float(b, "dist")
    p = scalar_argument(p, "dist: p")
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise RuntimeError(
            f"dist: the shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast"
        ) from None
    return O.sub(a, b).norm(p)


# ---- dtypes -------------------------------------------------------------------------------

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _dtype_arg(t, name, arg):
    if isinstance(t, Tensor) or isinstance(t, np.ndarray):
        raise TypeError(
            f"{name}(): argument '{arg}' must be a dtype, not {type(t).__name__} (pass x.dtype)"
        )
    try:
        dt = np.dtype(t)
    except TypeError:
        raise TypeError(f"{name}(): argument '{arg}' must be a dtype, got {t!r}") from None
    if dt.kind not in _CATEGORY:
        raise TypeError(f"{name}(): {dt} is not a numeric dtype")
    return dt


def _promote(a, b):
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca == cb or {a.kind, b.kind} == {"f", "c"}:
        if {a.kind, b.kind} == {"i", "u"} and np.uint64 in (a, b):
            raise TypeError(f"promote_types: promotion of {a} with {b} is not supported")
        return np.promote_types(a, b)
    return a if ca > cb else b


def _common_dtype(dtypes):
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote(out, d)
    return out


def promote_types(type1, type2) -> np.dtype:
    """PyTorch's ``torch.promote_types``: the dtype two dtypes promote to, by PyTorch's rules
    (bool < integer < float < complex; within a category the wider; an integer with a float
    gives the float, so int64 with float32 is float32, where NumPy says float64).

    Examples:
        >>> import tapegrad as tg
        >>> tg.promote_types(tg.int32, tg.float32)
        dtype('float32')
    """
    a = _dtype_arg(type1, "promote_types", "type1")
    b = _dtype_arg(type2, "promote_types", "type2")
    return _promote(a, b)


def can_cast(from_, to) -> bool:
    """PyTorch's ``torch.can_cast``: whether PyTorch's type promotion allows casting ``from_``
    to ``to`` (no float to integer, complex to real, or non-bool to bool; narrowing within a
    category is allowed).

    Examples:
        >>> import tapegrad as tg
        >>> tg.can_cast(tg.float64, tg.int32), tg.can_cast(tg.int64, tg.float32)
        (False, True)
    """
    a = _dtype_arg(from_, "can_cast", "from_")
    b = _dtype_arg(to, "can_cast", "to")
    return _CATEGORY[a.kind] <= _CATEGORY[b.kind]


def _scalar_dtype(v):
    if isinstance(v, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(v, numbers.Integral):
        return np.dtype(np.int64)
    if isinstance(v, numbers.Real):
        return np.dtype(np.float64)
    if isinstance(v, numbers.Complex):
        return np.dtype(np.complex128)
    raise TypeError(f"result_type(): expected Tensors or numbers, got {type(v).__name__}")


def _combine(higher, lower):
    """PyTorch's combination of the dtype of a higher priority class of operands with that
    of a lower one: the lower one counts only if it is of a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.kind == "c":
        return higher
    if lower.kind == "c":
        return np.promote_types(higher, np.complex64) if higher.kind == "f" else lower
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_type(tensor1, tensor2) -> np.dtype:
    """PyTorch's ``torch.result_type``: the dtype of an arithmetic op on the two operands
    (Tensors or numbers), by PyTorch's rules: Tensors with dimensions decide over 0-d ones,
    which decide over Python numbers, unless the latter are of a higher category (a Python
    float is float64, tapegrad's default float).

    Examples:
        >>> import tapegrad as tg
        >>> tg.result_type(tg.tensor([1, 2], dtype=tg.int32), 1)
        dtype('int32')
        >>> tg.result_type(tg.tensor([1, 2]), 1.0)
        dtype('float64')
    """
    groups = [None, None, None]  # dimensioned Tensors, 0-d Tensors, numbers
    for v in (tensor1, tensor2):
        if isinstance(v, Tensor):
            k, dt = (0 if v.ndim else 1), v.dtype
        else:
            k, dt = 2, _scalar_dtype(v)
        groups[k] = dt if groups[k] is None else _promote(groups[k], dt)
    return _combine(groups[0], _combine(groups[1], groups[2]))


def is_tensor(obj) -> bool:
    """PyTorch's ``torch.is_tensor``: whether ``obj`` is a tapegrad Tensor.

    Examples:
        >>> import tapegrad as tg
        >>> tg.is_tensor(tg.tensor([1.0])), tg.is_tensor([1.0])
        (True, False)
    """
    return isinstance(obj, Tensor)


# ---- the functions of a few methods --------------------------------------------------------


def clone(input: Tensor, *, memory_format=None) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.clone``: ``input.clone()``, a differentiable copy
    (``memory_format`` is accepted and ignored: tapegrad has one layout).

    Examples:
        >>> import tapegrad as tg
        >>> tg.clone(tg.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """
    return _t(input).clone()


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.take``: the entries of ``input`` read as a flat 1-d Tensor at the
    integer positions ``index`` (negative ones count from the end), shaped as ``index``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.take(tg.tensor([[1.0, 2.0], [3.0, 4.0]]), tg.tensor([0, 3]))
        tensor([1., 4.])
    """
    x = _t(input)
    idx = index if isinstance(index, Tensor) else new_tensor(np.asarray(index))
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {idx.dtype}")
    n = x.numel()
    iv = np.asarray(idx.numpy(), dtype=np.int64)
    if iv.size and (iv.min() < -n or iv.max() >= n):
        bad = int(iv[(iv < -n) | (iv >= n)].flat[0])
        raise IndexError(f"take(): index {bad} out of range for tensor of size {n}")
    return x.reshape(-1)[iv] if iv.ndim else x.reshape(-1)[int(iv)]


def nonzero(input: Tensor, *, as_tuple: bool = False):  # noqa: A002
    """PyTorch's ``torch.nonzero``: the indices of the nonzero entries, an (n, ndim) int64
    Tensor, or with ``as_tuple=True`` one 1-d Tensor per dim.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nonzero(tg.tensor([0.0, 1.0, 2.0]))
        tensor([[1],
                [2]])
    """
    return _t(input).nonzero(as_tuple=as_tuple)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.diagonal``: ``input.diagonal(offset, dim1, dim2)``, the diagonal of
    the dims ``dim1`` and ``dim2`` as the last dim (a view).

    Examples:
        >>> import tapegrad as tg
        >>> tg.diagonal(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 4.])
    """
    return _t(input).diagonal(offset=offset, dim1=dim1, dim2=dim2)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """PyTorch's ``torch.isin``: a bool Tensor shaped as ``elements``, True where an entry is
    in ``test_elements`` (either may be a number, not both; nan is in nothing);
    ``invert=True`` negates it.

    Examples:
        >>> import tapegrad as tg
        >>> tg.isin(tg.tensor([1, 2, 3]), tg.tensor([2, 5]))
        tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): elements or test_elements must be a Tensor")
    e = np.asarray(_t(elements).numpy())
    t = np.asarray(_t(test_elements).numpy())
    return new_tensor(np.isin(e, t, assume_unique=assume_unique, invert=invert))


# ---- random draws tied to Tensors of parameters --------------------------------------------


def _zero_gradient(sample, *params):
    """``sample`` (an array) as a Tensor that depends on the parameter Tensors with derivative
    0, as PyTorch's NormalBackward / BernoulliBackward / PoissonBackward (the draw is not
    reparameterized)."""
    out = new_tensor(sample)
    never = np.zeros(sample.shape, dtype=bool)
    for q in params:
        if isinstance(q, Tensor) and q.requires_grad:
            q = q if tuple(q.shape) == sample.shape else O.broadcast_to(q, sample.shape)
            out = O.where(never, q, out)
    return out


def _float_param(x, name, what):
    if x.dtype.kind != "f":
        raise NotImplementedError(
            f"{name}: the {what} must be a floating point Tensor, got {x.dtype} (PyTorch "
            "refuses it too); convert it first (x.double())"
        )
    return np.asarray(x.numpy(), dtype=np.float64)


def normal(
    mean,
    std=1.0,
    size=None,
    *,
    generator: Generator | np.random.Generator | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """PyTorch's ``torch.normal``, four ways: ``normal(mean_tensor, std_tensor)`` (broadcast),
    ``normal(mean_tensor, std=1.0)``, ``normal(mean, std_tensor)`` and
    ``normal(mean, std, size)`` with two numbers; drawn from tapegrad's generator
    (``tg.manual_seed``) or ``generator``.  As in PyTorch, the draw depends on Tensors
    ``mean`` and ``std`` with derivative 0 (it is not reparameterized: write
    ``mean + std * tg.randn(...)`` for that).

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> tg.normal(2.0, 3.0, (2, 3)).shape, tg.normal(tg.zeros(4), 1.0).shape
        ((2, 3), (4,))
    """
    gen = _generator("normal", generator)
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        if size is None:
            raise TypeError(
                "normal(): with a number mean and std give the size, e.g. "
                "tg.normal(0.0, 1.0, (2, 3)), or pass Tensors of means or stds"
            )
        m = scalar_argument(mean, "normal: mean")
        s = scalar_argument(std, "normal: std")
        if not s >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
        shape = P._sizes((size,)) if not isinstance(size, (int, np.integer)) else (int(size),)
        return new_tensor(gen.normal(m, s, shape), requires_grad=requires_grad)
    if size is not None:
        raise TypeError("normal(): size= is taken only with a number mean and std")
    m = _float_param(mean, "normal", "mean") if m_t else scalar_argument(mean, "normal: mean")
    s = _float_param(std, "normal", "std") if s_t else scalar_argument(std, "normal: std")
    if not np.all(np.asarray(s) >= 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    try:
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    except ValueError:
        raise RuntimeError(
            f"normal: the shapes of mean {np.shape(m)} and std {np.shape(s)} do not broadcast"
        ) from None
    sample = m + s * gen.standard_normal(shape)
    return _zero_gradient(np.asarray(sample, dtype=np.float64), mean, std)


def bernoulli(
    input: Tensor,  # noqa: A002
    p: float | None = None,
    *,
    generator: Generator | np.random.Generator | None = None,
) -> Tensor:
    """PyTorch's ``torch.bernoulli``: 0 / 1 draws with the probabilities ``input`` (in
    [0, 1]), or with the one probability ``p`` in ``input``'s shape; float64 (tapegrad's
    generator).  The draw depends on ``input`` with derivative 0, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.bernoulli(tg.tensor([0.0, 1.0]))
        tensor([0., 1.])
    """
    gen = _generator("bernoulli", generator)
    x = _t(input)
    if p is None:
        probs = _float_param(x, "bernoulli", "input (the probabilities)")
        params = (x,)
    else:
        probs = scalar_argument(p, "bernoulli: p")
        params = ()
    if not np.all((np.asarray(probs) >= 0) & (np.asarray(probs) <= 1)):
        raise RuntimeError("bernoulli: the probabilities must be in [0, 1] (and not nan)")
    sample = (gen.random(tuple(x.shape)) < probs).astype(np.float64)
    out = _zero_gradient(sample, *params)
    return out if x.dtype == np.float64 or p is None else P.convert(out, x.dtype)


def poisson(
    input: Tensor,  # noqa: A002
    generator: Generator | np.random.Generator | None = None,
) -> Tensor:
    """PyTorch's ``torch.poisson``: Poisson draws with the rates ``input`` (non-negative),
    float64 (tapegrad's generator); the draw depends on ``input`` with derivative 0, as
    PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.poisson(tg.zeros(3))
        tensor([0., 0., 0.])
    """
    gen = _generator("poisson", generator)
    x = _t(input)
    rates = _float_param(x, "poisson", "input (the rates)")
    if not np.all(rates >= 0):
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    if not np.all(np.isfinite(rates)):
        raise RuntimeError("poisson: the rates must be finite")
    return _zero_gradient(gen.poisson(rates).astype(np.float64), x)
