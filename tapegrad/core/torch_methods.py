"""Tensor methods whose names are PyTorch's, with PyTorch's meaning.

The rule: a Tensor method that has a PyTorch name behaves as PyTorch's (``x.max(dim=1)``
returns ``(values, indices)``, ``x.std()`` is unbiased, ``x.repeat`` tiles, ``x.size()`` is the
shape); the functions of ``tapegrad.numpy`` keep NumPy's meanings.  Values and gradients
follow PyTorch: ``x.max(dim)`` and ``x.sort()`` send the gradient to the element each value
came from (one element at ties), ``x.max()`` shares it between tied maxima.

One exception keeps NumPy code right: inside a transform or trace recording called with NumPy
values (``tg.grad(f)(array)``: ``f`` is NumPy code, and its traced values stand for arrays),
the methods whose NumPy and PyTorch meanings differ (``std``, ``var``, ``max``, ``min``,
``repeat``, ``sort``, ``nonzero``, ``sum``, ``mean`` and ``prod``'s argument order, ``argsort``)
follow NumPy, so ``f`` computes under the transform what it computes on arrays, as under JAX
and HIPS autograd (NumPy's ``put`` and ``device`` exist there only).  A PyTorch-only keyword
(``dim=``, ``keepdim=``, ``unbiased=``, ``descending=``, ``as_tuple=`` ...) still asks for
PyTorch's meaning, and a transform called with Tensors runs PyTorch code (``STATE.torch_code``).
"""

import math
from collections import namedtuple
from itertools import pairwise

import numpy as np

from . import functions as O
from .creation import _rng
from .tensor import STATE, _guard_hook, new_tensor, scalar_argument
from .tensor import TensorBase as Tensor

# PyTorch's named tuples (``torch.return_types.max`` ...): unpack, index or read by name
MaxResult = namedtuple("max", ("values", "indices"))
MinResult = namedtuple("min", ("values", "indices"))
SortResult = namedtuple("sort", ("values", "indices"))
MedianResult = namedtuple("median", ("values", "indices"))


def _dim(dim, axis, name):
    """PyTorch's ``dim=`` or NumPy's ``axis=`` (one of them)."""
    if axis is not None:
        if dim is not None:
            raise TypeError(f"Tensor.{name}: give dim= or axis=, not both")
        return axis
    return dim


def _keep(keepdim, keepdims):
    return bool(keepdim if keepdims is None else keepdims)


def reduction_dims(dim):
    """PyTorch's dims of a reduction: a list as a tuple, and no dims (``dim=()`` or ``[]``)
    as None, every dim, as PyTorch reads it (NumPy's ``axis=()`` reduces over none: NumPy
    code keeps that meaning, through NumPy's methods)."""
    if isinstance(dim, (tuple, list)):
        return tuple(dim) or None
    return dim


def wrap_dim(dim, shape, name, new=0):
    """PyTorch's ``dim`` of a tensor of ``shape`` as a NumPy axis, ``dim % ndim`` (a 0-d
    tensor takes dim 0 or -1, as PyTorch's, given as 0; ``new`` dims the op adds widen the
    range, as unsqueeze's); out of range an IndexError naming ``name``, the dim and the
    shape, as PyTorch raises (NumPy's AxisError, an IndexError and a ValueError)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{name}: dim must be an int, got {type(dim).__name__} {dim!r}")
    n = max(len(shape) + new, 1)
    if not -n <= dim < n:  # (NumPy's AxisError: an IndexError as PyTorch's, a ValueError too)
        raise np.exceptions.AxisError(
            f"{name}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
            f"got {dim}): a tensor of shape {tuple(shape)} has no dim (axis) {dim}"
        )
    return int(dim) % n


def torch_axes(dim, shape, name):
    """PyTorch's dims of a reduction as NumPy's ``axis``: None for every dim (no dims given,
    ``()`` or ``[]``, or a 0-d tensor's dim 0 / -1, its one element), else the int or tuple
    of wrapped dims, each checked (``wrap_dim``) and none repeated, as PyTorch's."""
    dim = reduction_dims(dim)
    if dim is None:
        return None
    dims = dim if isinstance(dim, tuple) else (dim,)
    axes = tuple(wrap_dim(d, shape, name) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{name}: dim {dim} repeats a dim of shape {tuple(shape)}")
    if not shape:
        return None
    return axes if isinstance(dim, tuple) else axes[0]


class EmptyReductionError(IndexError, ValueError):
    """A reduction without identity (max, argmax ...) of an empty tensor or along an empty
    dim: PyTorch's IndexError, and NumPy's ValueError (``np.argmax`` of an empty array) for
    NumPy code, which catches that."""


def nonempty_lanes(self, axes, name):
    """PyTorch's IndexError for a reduction without identity (max, min, argmax ...) along an
    empty dim of ``self`` (``axes`` from ``torch_axes``; None, every dim, is left to the
    reduction, which raises its own error for an empty tensor)."""
    if axes is None or not self.ndim:
        return
    for a in axes if isinstance(axes, tuple) else (axes,):
        if self.shape[a] == 0:
            raise EmptyReductionError(
                f"{name}(): Expected reduction dim {a} to have non-zero size (shape "
                f"{self.shape}): the reduction has no identity, an empty dim no value; "
                "reduce over a non-empty dim"
            )


def _int_tensor(a):
    return new_tensor(np.asarray(a, dtype=np.int64))


def _guard_extreme(self, values_kept, op):
    """While a trace records: guard that each chosen element is still the extreme of its
    lane, so a replay whose maximum moves raises RetraceRequired instead of reusing the
    recorded index."""
    if STATE.guard is not None and self._rg:
        if op == "max":
            self <= values_kept  # noqa: B015 - records the guard
        else:
            self >= values_kept  # noqa: B015


def _gather(self, v, idx, d):
    """``self`` at ``idx`` along dim ``d`` (one GATHER row; an integer Tensor keeps its dtype)."""
    if O.exact_operands(self):
        return O.numpy_exact(np.take_along_axis, self, idx, d)
    return O.gather_along(self, idx, d)


def _lane_pick(self, dim, keepdim, op):
    v = np.asarray(self._v)
    d = wrap_dim(dim, v.shape, f"Tensor.{op}")
    if v.ndim == 0:
        return O.reshape(self, ()), _int_tensor(0)
    if v.shape[d] == 0:
        raise IndexError(
            f"Tensor.{op}(dim={dim}): the dimension is empty (shape {v.shape}); "
            "there is no element to pick"
        )
    idx = (np.argmax if op == "max" else np.argmin)(v, axis=d, keepdims=True)
    kept = _gather(self, v, idx, d)
    _guard_extreme(self, kept, op)
    if keepdim:
        return kept, _int_tensor(idx)
    return O.squeeze(kept, d), _int_tensor(np.squeeze(idx, d))


def _extreme(op, result_type, elementwise, full):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None):
        if out is not None:
            raise TypeError(f"Tensor.{op}: out= is not supported (results are new Tensors)")
        if isinstance(dim, Tensor) or isinstance(dim, np.ndarray):
            return elementwise(self, dim)  # x.max(other): the elementwise maximum
        dim = _dim(dim, axis, op)
        if dim is None:
            return full(self, None, False)
        if isinstance(dim, (tuple, list)):
            raise TypeError(
                f"Tensor.{op}(dim={dim}): one dim only, as in PyTorch (use x.a{op}(dim) "
                "for several dims, which returns the values alone)"
            )
        values, indices = _lane_pick(self, int(dim), _keep(keepdim, keepdims), op)
        return result_type(values, indices)

    method.__name__ = op
    return method


_max = _extreme("max", MaxResult, O.maximum, O.amax)
_max.__doc__ = """``x.max()``: the largest element (tied maxima share the gradient);
    ``x.max(dim, keepdim=False)``: PyTorch's named tuple ``(values, indices)`` along ``dim``,
    the gradient going to the element picked; ``x.max(other)``: the elementwise maximum.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 0.0]], requires_grad=True)
        >>> values, indices = x.max(dim=1); values, indices
        (tensor([5., 4.], grad_fn=<ReshapeBackward0>), tensor([1, 0]))
        >>> values.sum().backward(); x.grad
        tensor([[0., 1., 0.],
                [1., 0., 0.]])
        >>> x.max().item(), x.max(dim=0).values.tolist()
        (5.0, [4.0, 5.0, 3.0])
    """
_min = _extreme("min", MinResult, O.minimum, O.amin)
_min.__doc__ = """``x.min()``: the smallest element; ``x.min(dim)``: ``(values, indices)``
    along ``dim`` as PyTorch's; ``x.min(other)``: the elementwise minimum.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[4.0, 2.0, 3.0]], requires_grad=True)
        >>> x.min(dim=1)
        min(values=tensor([2.], grad_fn=<ReshapeBackward0>), indices=tensor([1]))
        >>> x.min().backward(); x.grad
        tensor([[0., 1., 0.]])
    """


def _correction(name, unbiased, correction, ddof):
    """PyTorch's Bessel correction (1 unless told otherwise), from ``unbiased=``,
    ``correction=`` or NumPy's ``ddof=`` (one of them)."""
    named = (("unbiased", unbiased), ("correction", correction), ("ddof", ddof))
    given = [k for k, v in named if v is not None]
    if len(given) > 1:
        raise TypeError(f"Tensor.{name}: give one of unbiased=, correction= or ddof=, not {given}")
    if unbiased is not None:
        return 1 if unbiased else 0
    if correction is not None:
        return correction
    if ddof is not None:
        return ddof
    return 1


def _spread(name, fn):
    def method(
        self,
        dim=None,
        unbiased=None,
        keepdim=False,
        *,
        correction=None,
        ddof=None,
        axis=None,
        keepdims=None,
    ):
        if isinstance(dim, bool):  # PyTorch's x.std(unbiased) overload
            dim, unbiased = None, dim if unbiased is None else unbiased
        dim = torch_axes(_dim(dim, axis, name), self.shape, f"Tensor.{name}")
        c = _correction(name, unbiased, correction, ddof)
        return fn(self, dim, _keep(keepdim, keepdims), c)

    method.__name__ = name
    return method


_std = _spread("std", O.std)
_std.__doc__ = """``x.std(dim=None, unbiased=True, keepdim=False, *, correction=1)``:
    PyTorch's standard deviation, unbiased by default (divides by n - 1; ``correction=0`` or
    ``unbiased=False`` for the population version, NumPy's ``ddof=`` is accepted too).
    ``tnp.std`` keeps NumPy's default (ddof=0).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0], requires_grad=True)
        >>> x.std().item(), x.std(correction=0).item()
        (1.4142135623730951, 1.0)
        >>> x.std().backward(); x.grad          # (x - mean) / ((n - 1) std)
        tensor([-0.7071, 0.7071])
    """
_var = _spread("var", O.var)
_var.__doc__ = """``x.var(dim=None, unbiased=True, keepdim=False, *, correction=1)``:
    PyTorch's variance, unbiased by default (``tnp.var`` keeps NumPy's ddof=0).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0], requires_grad=True)
        >>> y = x.var(); y.item()
        2.0
        >>> y.backward(); x.grad                # 2 (x - mean) / (n - 1)
        tensor([-2.,  2.])
        >>> x.var(unbiased=False).item()
        1.0
    """


# ---- NumPy's meanings inside NumPy code (see the module docstring) ----------------------------
_NO_VALUE = object()


def numpy_or_torch(torch_method, numpy_method, torch_keywords):
    """The method that is ``numpy_method`` inside a transform of NumPy code (unless called
    with one of the PyTorch-only ``torch_keywords``) and ``torch_method`` everywhere else."""
    torch_keywords = frozenset(torch_keywords)

    def method(self, *args, **kwargs):
        if STATE.transforms and not STATE.torch_code and torch_keywords.isdisjoint(kwargs):
            return numpy_method(self, *args, **kwargs)
        return torch_method(self, *args, **kwargs)

    method.__name__ = torch_method.__name__
    method.__doc__ = (  # (after a blank line: not part of the last example's output)
        f"{(torch_method.__doc__ or '').rstrip()}\n\n"
        f"    Inside ``tg.grad`` & co. of NumPy code it is NumPy's ``ndarray.{method.__name__}``\n"
        "    (``tapegrad.core.torch_methods``).\n"
    )
    return method


def _numpy_extreme(op, full):
    def method(self, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=_NO_VALUE):
        if isinstance(axis, (Tensor, np.ndarray)):  # x.max(other): no NumPy meaning to keep
            return (_max if op == "max" else _min)(self, axis)
        if out is not None:
            raise TypeError(f"ndarray.{op}: out= is not supported (results are new values)")
        if initial is not _NO_VALUE or where is not _NO_VALUE:
            raise TypeError(
                f"ndarray.{op}: initial= and where= are taken by np.{op}(a, ...), not by the "
                f"method; write np.{op}(a, axis, initial=..., where=...)"
            )
        return full(self, tuple(axis) if isinstance(axis, list) else axis, bool(keepdims))

    return method


def _numpy_spread(name, fn):
    def method(
        self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None, **kw
    ):
        if out is not None or kw or (dtype is not None and np.dtype(dtype) != np.float64):
            raise TypeError(
                f"ndarray.{name}: only axis=, ddof= / correction= and keepdims= are supported "
                f"on traced values (got out={out!r}, dtype={dtype!r}, {sorted(kw)})"
            )
        if correction is not None:
            if ddof != 0:
                raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
            ddof = correction
        return fn(self, tuple(axis) if isinstance(axis, list) else axis, bool(keepdims), ddof)

    return method


def _numpy_repeat(self, repeats, axis=None):
    """NumPy's ``a.repeat(repeats, axis=None)``: each element ``repeats`` times."""
    return _repeat_interleave(self, repeats, axis)


def _numpy_nonzero(self):
    """NumPy's ``a.nonzero()``: one integer index array per dim."""
    return _nonzero(self, as_tuple=True)


_numpy_max = _numpy_extreme("max", O.amax)
_numpy_min = _numpy_extreme("min", O.amin)
_numpy_std = _numpy_spread("std", O.std)
_numpy_var = _numpy_spread("var", O.var)


def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _repeat(self, *sizes, axis=None):
    """``x.repeat(*sizes)``: PyTorch's repeat, the tensor tiled ``sizes[i]`` times along each
    dim (``np.tile``); the copies' gradients add up.  NumPy's element-wise repeat is
    ``x.repeat_interleave(repeats, dim)`` or ``tnp.repeat``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x.repeat(2); y
        tensor([1., 2., 1., 2.], grad_fn=<ReshapeBackward0>)
        >>> x.repeat(2, 1).shape
        (2, 2)
        >>> y.sum().backward(); x.grad
        tensor([2., 2.])
    """
    if axis is not None:
        raise TypeError(
            "Tensor.repeat tiles the whole tensor, as PyTorch's (it takes no axis=); for "
            "NumPy's element-wise repeat use x.repeat_interleave(repeats, dim) or "
            "tnp.repeat(x, repeats, axis)"
        )
    sizes = _sizes(sizes)
    shape = self.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"Tensor.repeat: {len(sizes)} repeat sizes for a tensor of {len(shape)} dims; "
            "give at least one size per dim"
        )
    if any(int(r) < 0 for r in sizes):
        raise RuntimeError(f"Tensor.repeat: negative repeat size in {sizes}")
    full = (1,) * (len(sizes) - len(shape)) + tuple(shape)
    interleaved = tuple(d for s in full for d in (1, s))
    tiled = tuple(d for r, s in zip(sizes, full, strict=True) for d in (int(r), s))
    x = O.broadcast_to(O.reshape(self, interleaved), tiled)
    return O.reshape(x, tuple(int(r) * s for r, s in zip(sizes, full, strict=True)))


def _repeat_interleave(self, repeats, dim=None, *, output_size=None):
    """``x.repeat_interleave(repeats, dim=None)``: each element ``repeats`` times (NumPy's
    ``repeat``), of the flattened tensor when ``dim`` is None; the copies' gradients add up.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x.repeat_interleave(2); y
        tensor([1., 1., 2., 2.], grad_fn=<IndexBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([2., 2.])
    """
    reps = np.asarray(repeats._v if isinstance(repeats, Tensor) else repeats)
    if reps.ndim > 1:
        raise RuntimeError(
            f"Tensor.repeat_interleave: repeats must be 0-d or 1-D, got shape {reps.shape}"
        )
    if dim is None:
        idx = np.repeat(np.arange(self.numel()), reps)
        _check_output_size(idx, output_size)
        return O.getitem(O.reshape(self, (-1,)), idx)
    dim = wrap_dim(dim, self.shape, "Tensor.repeat_interleave")
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.repeat_interleave: dim {dim} of a 0-d tensor (as PyTorch refuses); leave "
            "dim out (x.repeat_interleave(repeats)) for a 1-D result"
        )
    idx = np.repeat(np.arange(self.shape[dim]), reps)
    _check_output_size(idx, output_size)
    return O.getitem(self, (slice(None),) * dim + (idx,))


def _check_output_size(idx, output_size):
    """PyTorch's ``output_size=`` is the promised length of the result: a wrong one raises
    (it is not a length to cut or pad to)."""
    if output_size is not None and output_size != len(idx):
        raise RuntimeError(
            f"Tensor.repeat_interleave: output_size={output_size}, but the repeats give "
            f"{len(idx)} elements"
        )


def _order(self, dim, descending, stable, name, pin):
    """argsort of the values along ``dim`` as PyTorch orders them (NaN largest; a stable
    descending sort keeps tied elements in their order).  ``pin``: a trace pins the values
    read (when no order guard is recorded instead)."""
    v = np.asarray(self._v)
    d = wrap_dim(dim, v.shape, f"Tensor.{name}")
    if v.ndim == 0:
        return np.zeros((), np.int64), 0
    if pin:
        _guard_hook(self, name)
    if not descending:
        return np.argsort(v, axis=d, kind="stable"), d
    n = v.shape[d]
    rev = np.argsort(np.flip(v, d), axis=d, kind="stable")
    return np.flip(n - 1 - rev, d), d


def _sort(self, dim=None, descending=False, stable=False, *, axis=None):
    """``x.sort(dim=-1, descending=False)``: PyTorch's named tuple ``(values, indices)``; the
    gradient goes to the element each value came from.  (``tnp.sort`` returns NumPy's
    sorted values alone.)

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
        >>> values, indices = x.sort(); values, indices
        (tensor([1., 2., 3.], grad_fn=<IndexBackward0>), tensor([1, 2, 0]))
        >>> (values * tg.tensor([1.0, 2.0, 3.0])).sum().backward(); x.grad
        tensor([3., 1., 2.])
        >>> x.sort(descending=True).values
        tensor([3., 2., 1.], grad_fn=<IndexBackward0>)
    """
    if isinstance(dim, bool):
        raise TypeError(
            "Tensor.sort(dim=-1, descending=False, stable=False): dim must be an int (give "
            "descending= and stable= by name)"
        )
    dim = -1 if (axis is None and dim is None) else _dim(dim, axis, "sort")
    idx, d = _order(self, dim, descending, stable, "sort", pin=self.ndim == 0)
    if self.ndim == 0:
        return SortResult(O.reshape(self, ()), _int_tensor(idx))
    values = _gather(self, np.asarray(self._v), idx, d)
    if descending:
        O.order_guard(values, d, [(slice(1, None), slice(0, -1))])
    else:
        O.order_guard(values, d, [(slice(0, -1), slice(1, None))])
    return SortResult(values, _int_tensor(idx))


def _median_of_empty(self, name):
    """PyTorch's median of an empty float tensor: NaN (its gradient, of shape x.shape, is
    empty); an empty integer or boolean tensor has no value to give (PyTorch's is arbitrary:
    INT64_MIN, True), so that raises."""
    if self.dtype.kind != "f":
        raise RuntimeError(
            f"{name}() of an empty {self.dtype} tensor of shape {self.shape}: it has no value "
            "(a float tensor's is NaN, as PyTorch's); check x.numel() first, or x.double()"
        )
    return O.add(O.sum(self), float("nan"))


def _median(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``x.median()``: PyTorch's median, the lower of the two middle values for an even count
    (NumPy's ``np.median`` averages them: ``tnp.median``); with ``dim``, the named tuple
    ``(values, indices)``.  The gradient goes to the element the median is (with ``dim``: the
    one indexed; without: shared evenly by the elements equal to it, as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([3.0, 1.0, 2.0, 4.0], requires_grad=True)
        >>> m = x.median(); m
        tensor(2., grad_fn=<AddBackward0>)
        >>> m.backward(); x.grad
        tensor([0., 0., 1., 0.])
        >>> tg.tensor([[1.0, 5.0, 3.0], [4.0, 0.0, 2.0]]).median(dim=1)
        median(values=tensor([3., 2.]), indices=tensor([2, 2]))
    """
    keepdim = keepdim if keepdims is None else keepdims
    if dim is None and axis is None:
        if self.numel() == 0:
            return _median_of_empty(self, "median")
        flat = O.reshape(self, (-1,))
        nan = O.truth(flat != flat)  # noqa: PLR0124
        if nan.any():  # NaN, its gradient shared by the NaN elements (as PyTorch's)
            return O.mean(O.getitem(flat, np.flatnonzero(nan)))
        values = _sort(flat).values
        return _shared_by_ties(flat, O.getitem(values, (values.shape[0] - 1) // 2))
    d = _dim(dim, axis, "median")
    if self.ndim and self.numel():
        nan = O.truth(self != self)  # noqa: PLR0124
        if nan.any():
            return _median_of_nan_lanes(self, _dims_of(self, d, "median")[0], nan, keepdim)
    return _sorted_pick(self, d, lambda n: (n - 1) // 2, keepdim, MedianResult, "median")


def _median_of_nan_lanes(self, d, nan, keepdim):
    """``median(dim)`` where lanes hold NaN: their first NaN (value NaN, its index and its
    gradient, as PyTorch's), the lower middle value elsewhere (NaN sorts last)."""
    n = self.shape[d]
    count = np.sum(~nan, axis=d, keepdims=True)  # the numbers in each lane
    return _sorted_lanes_pick(
        self, d, np.where(count < n, count, (n - 1) // 2), keepdim, MedianResult
    )


def _sorted_lanes_pick(self, d, k, keepdim, result_type):
    """``(values, indices)`` of each lane's element at its own position ``k`` of the lane
    sorted ascending along ``d`` (``k`` keeps ``d`` as a dim of size 1); the gradient goes to
    the element picked."""
    values, idx = _sort(self, d)
    # (_gather: an integer tensor's values stay integers, as PyTorch's)
    v, i = _gather(values, None, k, d), np.take_along_axis(np.asarray(idx.numpy()), k, d)
    if not keepdim:
        v, i = O.squeeze(v, d), np.squeeze(i, d)
    return result_type(v, _int_tensor(i))


def _shared_by_ties(flat, picked):
    """``picked`` (the median of ``flat``) with its gradient split evenly among the elements
    of ``flat`` equal to it, as PyTorch's ``median()`` without dim shares it (as ``max()``
    does); a NaN or infinite median keeps its one element's gradient (inf - inf would make
    the value NaN)."""
    if not flat._rg or not O.truth(abs(picked) < np.inf):
        return picked
    ties = O.getitem(flat, np.flatnonzero(O.truth(flat == picked.detach())))
    share = O.mean(ties)
    return O.add(O.sub(share, share.detach()), picked.detach())  # the value stays picked's


def _sorted_pick(self, dim, position, keepdim, result_type, name):
    """``(values, indices)`` of the element at ``position(n)`` of each lane along ``dim``
    sorted ascending (n the lane's length); the gradient goes to the element picked."""
    (d,) = _dims_of(self, dim, name)
    if self.ndim == 0:
        if position(1) != 0:
            raise RuntimeError(
                f"{name}(): k = {position(1) + 1} is out of range for a 0-d tensor's one element"
            )
        return result_type(O.reshape(self, ()), _int_tensor(0))
    n = self.shape[d]
    if n == 0:
        raise IndexError(f"{name}(): dim {d} of shape {self.shape} is empty")
    k = position(n)
    if not 0 <= k < n:
        raise IndexError(f"{name}(): k = {k + 1} is out of range for dim {d} of size {n}")
    values, idx = _sort(self, d)
    key = (slice(None),) * d + (k,)
    v, i = O.getitem(values, key), np.asarray(idx.numpy())[key]
    if keepdim:
        v, i = O.expand_dims(v, d), np.expand_dims(i, d)
    return result_type(v, _int_tensor(i))


def _norm(self, p="fro", dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
    """``x.norm(p="fro", dim=None, keepdim=False)``: PyTorch's norm, a vector p-norm of the
    elements over ``dim`` (all of them by default; ``"fro"`` is the 2-norm), never a matrix
    norm (``tnp.linalg.norm`` has NumPy's matrix norms, the nuclear one too).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[3.0, -4.0], [0.0, 12.0]], requires_grad=True)
        >>> x.norm(), x.norm(1)
        (tensor(13., grad_fn=<SqrtBackward0>), tensor(19., grad_fn=<SumBackward0>))
        >>> x.norm(float("inf"), dim=1)
        tensor([ 4., 12.], grad_fn=<AmaxBackward0>)
    """
    keepdim = keepdim if keepdims is None else keepdims
    if dtype is not None:
        self = self.to(dtype)
    dims = torch_axes(_dim(dim, axis, "norm"), self.shape, "Tensor.norm")
    if isinstance(p, str):
        if p != "fro":
            raise ValueError(
                f"norm: p={p!r} is a matrix norm; tg.norm / x.norm take vector norms (p a "
                'number, or "fro"): use tnp.linalg.norm(x, ord="nuc") for the nuclear norm'
            )
        p = 2.0
    p = scalar_argument(p, "norm: p")
    a = O.abs_(self)
    if p == math.inf:
        return O.amax(a, dims, keepdim)
    if p == -math.inf:
        return O.amin(a, dims, keepdim)
    if p == 0.0:  # the count of non-zero elements: piecewise constant, derivative 0
        return O.sum(O.sign(a), dims, keepdim)
    if p == 1.0:
        return O.sum(a, dims, keepdim)
    if 0.0 < p < 1.0:  # |x| ** p has an infinite slope at 0: there, 0 (PyTorch's gradient)
        az = O.truth(a == 0.0)
        terms = O.where(az, 0.0, O.power(O.where(az, 1.0, a), p)) if az.any() else O.power(a, p)
    elif p < 0.0 and np.any(az := O.truth(a == 0.0)):
        # a zero entry makes its lane's norm 0 (|0| ** p = inf); the chain rule's inf * 0
        # would be NaN there: its gradient is 0, a subgradient (PyTorch's), as at 0 above
        hit = np.any(az, axis=dims, keepdims=keepdim)
        s = O.sum(O.power(O.where(az, 1.0, a), p), dims, keepdim)
        return O.where(hit, 0.0, O.power(s, 1.0 / p))
    else:
        terms = O.mul(self, self) if p == 2.0 else O.power(a, p)
    s = O.sum(terms, dims, keepdim)
    # at 0 the gradient is 0, as PyTorch's (the root's infinite slope times 0 would be nan):
    # the root of a masked 1 there, then 0 selected; the zeros are found by a comparison a
    # trace guards (a replay with other zeros retraces instead of reusing the recorded mask)
    zero = O.truth(s == 0.0)
    if not np.any(zero):
        return O.sqrt(s) if p == 2.0 else O.power(s, 1.0 / p)
    safe = O.where(zero, 1.0, s)
    return O.where(zero, 0.0, O.sqrt(safe) if p == 2.0 else O.power(safe, 1.0 / p))


def _argsort(self, dim=None, descending=False, stable=False, *, axis=None):
    """``x.argsort(dim=-1, descending=False)``: the indices that sort ``x`` along ``dim``, an
    integer Tensor (no derivative; in a trace, the values it reads are pinned).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([3.0, 1.0, 2.0]).argsort()
        tensor([1, 2, 0])
        >>> tg.tensor([3.0, 1.0, 2.0]).argsort(descending=True)
        tensor([0, 2, 1])
    """
    dim = -1 if (axis is None and dim is None) else _dim(dim, axis, "argsort")
    idx, _ = _order(self, dim, descending, stable, "argsort", pin=True)
    return _int_tensor(idx)


def _arg_extreme(op):
    fn = np.argmax if op == "argmax" else np.argmin

    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        dim = _dim(dim, axis, op)
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"Tensor.{op}: dim must be one int, got {dim!r} (as PyTorch's)")
        dim = None if dim is None else torch_axes(dim, self.shape, f"Tensor.{op}")
        nonempty_lanes(self, dim, f"Tensor.{op}")
        _guard_hook(self, op)
        v = np.asarray(self._v)
        keep = _keep(keepdim, keepdims)
        if dim is None and v.size == 0:
            raise EmptyReductionError(
                f"Tensor.{op}(): Expected reduction dim to be specified for an empty tensor "
                f"(shape {v.shape}): it has no {op}; give dim= over a non-empty dim"
            )
        if dim is None:
            i = fn(v)
            return _int_tensor(np.reshape(i, (1,) * v.ndim) if keep else i)
        return _int_tensor(fn(v, axis=dim, keepdims=keep))

    method.__name__ = op
    return method


_argmax = _arg_extreme("argmax")
_argmax.__doc__ = """``x.argmax(dim=None, keepdim=False)``: the index of the largest element
    (of the flattened tensor when ``dim`` is None), an integer Tensor.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([1.0, 5.0, 3.0]).argmax()
        tensor(1)
        >>> tg.tensor([[1.0, 5.0], [7.0, 3.0]]).argmax(dim=1)
        tensor([1, 0])
    """
_argmin = _arg_extreme("argmin")
_argmin.__doc__ = """``x.argmin(dim=None, keepdim=False)``: the index of the smallest element.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([4.0, 2.0, 3.0]).argmin().item()
        1
    """


def _truth(op):
    fn = np.all if op == "all" else np.any

    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        _guard_hook(self, op)
        dim = _dim(dim, axis, op)
        if isinstance(dim, (tuple, list)) and not dim:
            dim = ()  # PyTorch's all / any over no dims: each element's truth, not one
        else:
            dim = torch_axes(dim, self.shape, f"Tensor.{op}")
        out = fn(np.asarray(self._v), axis=dim, keepdims=_keep(keepdim, keepdims))
        return new_tensor(np.asarray(out))

    method.__name__ = op
    return method


_all = _truth("all")
_all.__doc__ = """``x.all(dim=None, keepdim=False)``: whether every element is nonzero, a
    boolean Tensor (as PyTorch's).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 0.0]).all(), bool(tg.tensor([1.0, 2.0]).all())
    (tensor(False), True)
    """
_any = _truth("any")
_any.__doc__ = """``x.any(dim=None, keepdim=False)``: whether some element is nonzero, a
    boolean Tensor (as PyTorch's).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 0.0], [0.0, 0.0]]).any(dim=1)
    tensor([ True, False])
    """


def _nonzero(self, *, as_tuple=False):
    """``x.nonzero()``: PyTorch's (n, ndim) integer Tensor of the nonzero positions;
    ``as_tuple=True`` gives one index Tensor per dim (NumPy's ``nonzero``).

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 2.0], [3.0, 0.0]]).nonzero()
    tensor([[0, 1],
            [1, 0]])
    """
    _guard_hook(self, "nonzero")
    v = np.asarray(self._v)
    if as_tuple:
        return tuple(_int_tensor(i) for i in np.nonzero(np.atleast_1d(v)))
    return _int_tensor(np.argwhere(v))


def _flatten(self, start_dim=0, end_dim=-1, *, order=None):
    """``x.flatten(start_dim=0, end_dim=-1)``: dims ``start_dim``..``end_dim`` merged into one
    (all of them by default); NumPy's ``x.flatten("F")`` (a memory order) works too.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.flatten()
        tensor([1., 2., 3., 4.])
        >>> tg.zeros(2, 3, 4).flatten(1).shape, x.flatten("F")
        ((2, 12), tensor([1., 3., 2., 4.]))
    """
    if isinstance(start_dim, str):
        order, start_dim = start_dim, 0
    if order is not None:
        if (start_dim, end_dim) != (0, -1):
            raise TypeError("Tensor.flatten: give order= or start_dim/end_dim, not both")
        return ravel_order(self, order, "flatten")
    shape = self.shape
    s = wrap_dim(start_dim, shape, "Tensor.flatten")
    e = wrap_dim(end_dim, shape, "Tensor.flatten")
    if not shape:
        return O.reshape(self, (1,))
    if s > e:
        raise IndexError(f"Tensor.flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = int(np.prod(shape[s : e + 1], dtype=np.int64))
    return O.reshape(self, shape[:s] + (merged,) + shape[e + 1 :])


def _layout_order(x, order, name):
    """NumPy's "A" and "K" read the array's memory layout (a transposed view's is column-major),
    which a Tensor's value does not mirror: only where the layout cannot matter (at most one
    axis longer than 1) do they mean "C"; elsewhere they raise rather than guess."""
    if sum(n > 1 for n in x.shape) > 1:
        raise ValueError(
            f"{name}: order={order!r} follows the memory layout of NumPy's array (a transposed "
            f"view is column-major), which tapegrad's Tensor of shape {x.shape} does not "
            "record; pass order='C' (row-major, what 'K' and 'A' mean for a C-contiguous "
            "array) or order='F'"
        )
    return "C"


def ravel_order(x, order, name="ravel"):
    """The elements of ``x`` as one axis, read in memory order ``order`` ("C" row-major, "F"
    column-major; "A" and "K", which follow NumPy's memory layout, only where it cannot
    matter)."""
    if order in ("A", "K"):
        order = _layout_order(x, order, name)
    if order in ("C", None):
        return O.reshape(x, (-1,))
    if order == "F":
        return O.reshape(O.transpose(x), (-1,))
    raise ValueError(f"{name}: order must be one of 'C', 'F', 'A', 'K', got {order!r}")


def reshape_order(x, shape, order, name="reshape"):
    """``x`` reshaped to ``shape`` reading and writing elements in memory order ``order``."""
    if order == "A":
        order = _layout_order(x, order, name)
    if order in ("C", None):
        return O.reshape(x, shape)
    if order == "F":  # column-major: reverse the axes, reshape row-major, reverse back
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        return O.transpose(O.reshape(O.transpose(x), shape[::-1]))
    raise ValueError(f"{name}: order must be one of 'C', 'F', 'A', got {order!r}")


def _ravel(self, order="C"):
    """``x.ravel()``: the elements as one axis (``order="F"`` reads column-major, as NumPy).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.ravel(), x.ravel("F")
        (tensor([1., 2., 3., 4.]), tensor([1., 3., 2., 4.]))
    """
    return ravel_order(self, order)


def _reshape(self, *shape, order="C"):
    """``x.reshape(*shape)``: the same elements in a new shape (NumPy's ``order="F"`` reads and
    writes column-major).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0, 4.0])
        >>> x.reshape(2, 2)
        tensor([[1., 2.],
                [3., 4.]])
        >>> x.reshape((2, 2), order="F")
        tensor([[1., 3.],
                [2., 4.]])
    """
    return reshape_order(self, _sizes(shape), order)


def _same_dtype(self, dtype):
    try:
        return np.dtype(dtype) == self.dtype
    except TypeError:
        return False


def _view(self, *shape):
    """``x.view(*shape)``: PyTorch's reshape of the same elements (a dtype is refused: a
    Tensor's bytes are not reinterpreted).

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).view(-1).shape
    (6,)
    """
    sizes = _sizes(shape)
    if not sizes or (
        len(sizes) == 1
        and not isinstance(sizes[0], (int, np.integer))
        and _same_dtype(self, sizes[0])
    ):  # NumPy's a.view() / a.view(a.dtype): the same elements (PyTorch takes neither)
        return O.reshape(self, self.shape)
    if len(sizes) == 1 and not isinstance(sizes[0], (int, np.integer)):
        raise TypeError(
            f"Tensor.view({sizes[0]!r}): reinterpreting the bytes as another dtype is not "
            "supported; use x.to(dtype) to convert the values"
        )
    return O.reshape(self, sizes)


def _add(self, other, *, alpha=1):
    """``x.add(other, alpha=1)``: x + alpha * other (PyTorch's ``alpha=``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).add(tg.tensor([1.0, 1.0]), alpha=10)
    tensor([11., 12.])
    """
    return O.add(self, other if alpha == 1 else O.mul(other, alpha))


def _sub(self, other, *, alpha=1):
    """``x.sub(other, alpha=1)``: x - alpha * other (PyTorch's ``alpha=``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).sub(1.0, alpha=2)
    tensor([-1.,  0.])
    """
    return O.sub(self, other if alpha == 1 else O.mul(other, alpha))


def _div(self, other, *, rounding_mode=None):
    """``x.div(other, rounding_mode=None)``: x / other; ``rounding_mode="trunc"`` or
    ``"floor"`` rounds the quotient (derivative 0, as PyTorch's).

    >>> import tapegrad as tg
    >>> tg.tensor([7.0, -7.0]).div(2.0, rounding_mode="floor")
    tensor([ 3., -4.])
    """
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(
            f"Tensor.div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
        )
    if rounding_mode is not None and O.exact_operands(self, other):
        return O.numpy_exact(_rounded_quotient, self, other, rounding_mode)
    q = O.div(self, other)
    if rounding_mode is None:
        return q
    return O.trunc(q) if rounding_mode == "trunc" else O.floor(q)


def _rounded_quotient(a, b, mode):
    """``a / b`` rounded toward zero or down, NumPy's values: exact for integers (as
    PyTorch's, which raises where an integer is divided by 0)."""
    if np.result_type(a, b).kind not in "iub":
        q = np.true_divide(a, b)
        return np.trunc(q) if mode == "trunc" else np.floor(q)
    if np.any(np.asarray(b) == 0):
        raise ZeroDivisionError(f"Tensor.div(rounding_mode={mode!r}): integer division by zero")
    q = np.floor_divide(a, b)
    if mode == "trunc":  # floor rounds a negative inexact quotient one below trunc
        q = q + ((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))
    return q


def _nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    """``x.nan_to_num(nan=0.0, posinf=None, neginf=None)``: NaN and infinities replaced
    (derivative 1 where x is finite, 0 where a value was replaced).

    >>> import tapegrad as tg
    >>> tg.tensor([float("nan"), 2.0]).nan_to_num(-1.0)
    tensor([-1.,  2.])
    """
    return O.nan_to_num(self, True, nan, posinf, neginf)


def _diagonal(self, offset=0, dim1=None, dim2=None, *, axis1=None, axis2=None):
    """``x.diagonal(offset=0, dim1=0, dim2=1)``: the diagonal in the plane of ``dim1`` and
    ``dim2`` (``offset`` above the main one), as PyTorch's: those dims dropped and the
    diagonal the last dim; NumPy's ``axis1=``/``axis2=`` are accepted too.  Returns the
    result and its index key.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.diagonal(), x.diagonal(1)
        (tensor([1., 4.]), tensor([2.]))
        >>> tg.zeros(2, 3, 4).diagonal(0, 0, 2).shape
        (3, 2)
    """
    d1 = _dim(dim1, axis1, "diagonal")
    d2 = _dim(dim2, axis2, "diagonal")
    if self.ndim < 2:
        raise RuntimeError(f"Tensor.diagonal: needs at least 2 dims, got shape {self.shape}")
    d1, d2 = _dims_of(self, (0 if d1 is None else d1, 1 if d2 is None else d2), "diagonal")
    if d1 == d2:
        raise RuntimeError(f"Tensor.diagonal: dim1 and dim2 are both {d1}; give two dims")
    offset = int(offset)
    start = max(0, -offset)
    i = np.arange(start, max(start, min(self.shape[d1], self.shape[d2] - offset)))
    # one index array per dim, broadcast to (the other dims..., the diagonal)
    rest = [d for d in range(self.ndim) if d not in (d1, d2)]
    key = [None] * self.ndim
    for p, d in enumerate(rest):
        shape = [1] * (len(rest) + 1)
        shape[p] = self.shape[d]
        key[d] = np.arange(self.shape[d]).reshape(shape)
    key[d1] = i.reshape([1] * len(rest) + [-1])
    key[d2] = key[d1] + offset
    key = tuple(key)
    return O.getitem(self, key), key


# ---- dtype and device conversions (PyTorch's names) -----------------------------------------


def _np_dtype(dtype):
    """A NumPy dtype from a NumPy dtype-like, a string, or a ``torch.dtype`` (by its name)."""
    name = str(dtype)
    if name.startswith("torch."):
        dtype = name[len("torch.") :]
    return np.dtype(dtype)


def convert(self, dtype):
    """``self`` as ``dtype`` (itself when it already is).  float64 keeps the graph; an integer
    or bool cast is piecewise constant, so it carries no derivative; another float dtype on
    a Tensor that requires grad is refused (tapegrad differentiates float64 values)."""
    dt = _np_dtype(dtype)
    if dt == self.dtype:
        return self
    if dt == np.float64:
        return O.reshape(self, self.shape) if self._rg else new_tensor(self._v, dtype=np.float64)
    if dt.kind in "iub" or not self._rg:
        _guard_hook(self, "astype")  # a trace pins the value it reads
        return new_tensor(self._v, dtype=dt)
    raise TypeError(
        f"Tensor.to({dt}): tapegrad differentiates float64 values only; a Tensor that "
        f"requires grad cannot become {dt} (use x.double() or x.float(), both float64)"
    )


def _float(self):
    """``x.float()``: a floating point Tensor.  tapegrad computes in float64, so
    ``x.float()`` and ``x.double()`` both give float64 (PyTorch's ``float()`` is float32).

    >>> import tapegrad as tg
    >>> tg.tensor([1, 2]).float()
    tensor([1., 2.])
    """
    return convert(self, np.float64)


def _double(self):
    """``x.double()``: the values as float64 (itself when they already are).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> x.double() is x, tg.tensor([3]).double()
    (True, tensor([3.]))
    """
    return convert(self, np.float64)


def _long(self):
    """``x.long()``: the values as int64, truncated toward zero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([1.7, -1.7]).long()
    tensor([ 1, -1])
    """
    return convert(self, np.int64)


def _int(self):
    """``x.int()``: the values as int32, truncated toward zero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([2.5]).int()
    tensor([2], dtype=int32)
    """
    return convert(self, np.int32)


def _bool(self):
    """``x.bool()``: True where the value is nonzero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([0.0, 2.0]).bool()
    tensor([False,  True])
    """
    return convert(self, np.bool_)


def _device(name, where):
    dev = str(getattr(where, "type", where))
    if dev.split(":")[0] != "cpu":
        raise RuntimeError(
            f"Tensor.{name}({where!r}): tapegrad computes on the CPU only (device 'cpu')"
        )


def _to(self, *args, dtype=None, device=None, copy=False, non_blocking=False, **kwargs):
    """``x.to(dtype)``, ``x.to(device)``, ``x.to(device, dtype)``, ``x.to(other)``: PyTorch's
    conversion.  The device must be the CPU; the result is ``x`` itself when nothing changes
    (``copy=True`` for a copy).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.5, 2.5])
        >>> x.to(np.int64), x.to("cpu") is x, tg.tensor([1]).to(x)
        (tensor([1, 2]), True, tensor([1.]))
    """
    if kwargs:
        raise TypeError(f"Tensor.to: unexpected arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda", "mps", "meta", "xla"):
            device = a
        elif type(a).__name__ == "device":
            device = a
        else:
            dtype = a
    if device is not None:
        _device("to", device)
    out = self if dtype is None else convert(self, dtype)
    if copy and out is self:
        out = O.reshape(self, self.shape) if self._rg else new_tensor(self._v)
    return out


def _cpu(self):
    """``x.cpu()``: the Tensor itself (tapegrad computes on the CPU).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0]); x.cpu() is x
    True
    """
    return self


def _t(self):
    """``x.t()``: a 2-D tensor transposed (0-D and 1-D tensors as they are), as PyTorch's.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).t()
    tensor([[1.],
            [2.]])
    """
    if self.ndim > 2:
        raise RuntimeError(
            f"Tensor.t() expects a tensor with <= 2 dims, got shape {self.shape}; use "
            "x.transpose(dim0, dim1) or x.permute(...)"
        )
    return O.transpose(self) if self.ndim == 2 else O.reshape(self, self.shape)


def _format(self, spec):
    """``f"{loss:.3f}"``: a 0-d Tensor formats as its number (as PyTorch's); an empty spec
    prints any Tensor.  Formatting reads the value, so a trace recording pins it (a replay
    with another value raises RetraceRequired), as a read by ``item()``."""
    if not spec:
        return str(self)
    _guard_hook(self, "format")
    v = self._v
    if v.__class__ is float:
        return format(v, spec)
    if v.ndim == 0:
        return format(v.item(), spec)
    raise TypeError(
        f"format spec {spec!r} applies to a 0-d Tensor (one number); this Tensor has shape "
        f"{v.shape}: format x.item() of a one-element Tensor, or the items of x.tolist()"
    )


def _round_builtin(self, ndigits=None):
    """``round(x)``: a one-element Tensor's value rounded to a Python int (as ``round`` of a
    float; inside a transform this is an implicit conversion and raises, as ``int(x)``);
    ``round(x, n)``: ``x.round(decimals=n)``, a Tensor (as NumPy's arrays).

    >>> import tapegrad as tg
    >>> round(tg.tensor(2.6)), round(tg.tensor(1.23456), 2)
    (3, tensor(1.2300))
    """
    if ndigits is None:
        return round(self.__float__())
    return O.around(self, ndigits)


def _round(self, decimals=0):
    """``x.round(decimals=0)``: values rounded half to even (PyTorch's and NumPy's rule);
    derivative 0 at every order.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5, 1.5, 2.567], requires_grad=True)
        >>> y = x.round(); y
        tensor([0., 2., 3.], grad_fn=<RintBackward0>)
        >>> x.round(decimals=1).tolist()
        [0.5, 1.5, 2.6]
        >>> y.sum().backward(); x.grad
        tensor([0., 0., 0.])
    """
    return O.around(self, decimals)


def _fill(self, value):
    """``x.fill_(value)``: set every element to ``value`` in place; returns x.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(3).fill_(2.0)
        tensor([2., 2., 2.])
    """
    self[...] = value
    return self


# ---- more of PyTorch's methods, composed of the ops above -----------------------------------


def _dim_of_nd(self, dim, name):
    """The dim ``dim`` of a tensor of at least one dim (PyTorch's ``narrow``, ``split``,
    ``chunk`` ... refuse a 0-d tensor: a RuntimeError naming the op and the fix)."""
    if self.ndim == 0:
        raise RuntimeError(
            f"Tensor.{name}: expects a tensor of at least 1 dim, got a 0-d tensor (as "
            "PyTorch); reshape it first (x.reshape(1))"
        )
    return wrap_dim(dim, self.shape, f"Tensor.{name}")


def _dims_of(self, dims, name):
    """The dims ``dims`` (an int or a sequence) of ``self`` wrapped as PyTorch's (a 0-d
    tensor's dim 0 or -1 is 0: ``wrap_dim``)."""
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    return tuple(wrap_dim(d, self.shape, f"Tensor.{name}") for d in dims)


def _flip(self, *args, dims=None):
    """``x.flip(dims)``: the elements in reverse order along ``dims`` (a copy, as PyTorch's;
    ``dims=`` as a keyword too).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).flip(1)
    tensor([[2., 1.],
            [4., 3.]])
    """
    if dims is not None and args:
        raise TypeError("Tensor.flip: give the dims positionally or as dims=, not both")
    if dims is None and not args:  # no dims is no flip here, every axis in NumPy's np.flip
        raise TypeError(
            "Tensor.flip: give the dims to flip (x.flip(0), x.flip((0, 1)), as PyTorch's); "
            "every dim is x.flip(tuple(range(x.ndim))) or np.flip(x)"
        )
    dims = dims if dims is not None else args[0] if len(args) == 1 else args
    dims = _dims_of(self, dims, "flip")
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"Tensor.flip: dims {dims} repeat a dim (as PyTorch refuses)")
    key = tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(self.ndim))
    return O.getitem(self, key)


def _roll(self, shifts, dims=None):
    """``x.roll(shifts, dims=None)``: elements shifted cyclically along ``dims`` (of the
    flattened tensor when ``dims`` is None).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0]).roll(1)
    tensor([3., 1., 2.])
    """
    if dims is None:
        return O.reshape(_roll(O.reshape(self, (-1,)), shifts, 0), self.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.roll: dims {dims} of a 0-d tensor: it has no dim to roll along (as "
            "PyTorch); roll without dims (x.roll(shifts)) or reshape it first"
        )
    dims = _dims_of(self, dims, "roll")
    if len(shifts) != len(dims):
        raise RuntimeError(f"Tensor.roll: {len(shifts)} shifts for {len(dims)} dims")
    out = self
    for s, d in zip(shifts, dims, strict=True):
        n = self.shape[d]
        idx = (np.arange(n) - s) % n if n else np.arange(0)
        out = O.getitem(out, (slice(None),) * d + (idx,))
    return out


def _triangle(self, diagonal, lower, name):
    if self.ndim < 2:
        raise RuntimeError(f"Tensor.{name}: needs at least 2 dims, got shape {self.shape}")
    n, m = self.shape[-2:]
    keep = (np.tril if lower else np.triu)(np.ones((n, m), bool), diagonal)
    return O.where(keep, self, 0.0)


def _tril(self, diagonal=0):
    """``x.tril(diagonal=0)``: the lower triangle (the rest zero; its gradient zero).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).tril()
    tensor([[1., 0.],
            [3., 4.]])
    """
    return _triangle(self, diagonal, True, "tril")


def _triu(self, diagonal=0):
    """``x.triu(diagonal=0)``: the upper triangle (the rest zero; its gradient zero).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).triu(1)
    tensor([[0., 2.],
            [0., 0.]])
    """
    return _triangle(self, diagonal, False, "triu")


def _narrow(self, dim, start, length):
    """``x.narrow(dim, start, length)``: a view of ``length`` elements from ``start``.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0, 3.0]]).narrow(1, 1, 2)
    tensor([[2., 3.]])
    """
    d = _dim_of_nd(self, dim, "narrow")
    start = start % self.shape[d] if start < 0 else start
    if start + length > self.shape[d] or length < 0:
        raise IndexError(f"Tensor.narrow: {start} + {length} exceeds dim {d} of shape {self.shape}")
    return self[(slice(None),) * d + (slice(start, start + length),)]


def _select(self, dim, index):
    """``x.select(dim, index)``: a view of the slice at ``index`` along ``dim`` (one dim less).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).select(1, 0)
    tensor([1., 3.])
    """
    if self.ndim == 0:
        raise IndexError(
            "Tensor.select: cannot be applied to a 0-d tensor (as PyTorch); it has no dim "
            "to select from: use x itself, or x.reshape(1)"
        )
    (d,) = _dims_of(self, dim, "select")
    return self[(slice(None),) * d + (index,)]


def _index_select(self, dim, index):
    """``x.index_select(dim, index)``: the slices at ``index`` along ``dim`` (a copy;
    repeated indices add their gradients).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).index_select(0, tg.tensor([1, 1]))
    tensor([[3., 4.],
            [3., 4.]])
    """
    (d,) = _dims_of(self, dim, "index_select")
    idx = np.asarray(index.numpy() if isinstance(index, Tensor) else index)
    if self.ndim == 0:  # PyTorch's: one index, 0, of the one element
        if idx.size != 1:
            raise RuntimeError(
                f"Tensor.index_select: the index of a 0-d tensor must hold one value, got "
                f"{idx.size} (as PyTorch)"
            )
        _no_negative(idx.reshape(-1), "index_select", d, 1)
        return O.reshape(O.getitem(O.reshape(self, (1,)), idx.reshape(-1)), ())
    if idx.ndim > 1:  # PyTorch's index is a vector (or 0-d): a matrix is not read flat
        raise IndexError(
            f"Tensor.index_select: index must be 0-d or 1-D, got shape {idx.shape} (as in "
            "PyTorch); for a block of indices use x[index] or x.take_along_dim"
        )
    idx = idx.reshape(-1)
    _no_negative(idx, "index_select", d, self.shape[d])
    return O.getitem(self, (slice(None),) * d + (idx,))


def _masked_fill(self, mask, value):
    """``x.masked_fill(mask, value)``: ``value`` where ``mask`` is True (no gradient to x
    there; a Tensor ``value`` gets the gradient of the filled places).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, -2.0, 3.0])
    >>> x.masked_fill(x.numpy() < 0, 0.0)
    tensor([1., 0., 3.])
    """
    m = np.asarray(mask.numpy() if isinstance(mask, Tensor) else mask)
    if m.dtype != bool:
        raise TypeError(f"Tensor.masked_fill: the mask must be boolean, got dtype {m.dtype}")
    if np.ndim(value._v if isinstance(value, Tensor) else value) != 0:
        # PyTorch refuses it too; a value per element is a where
        raise RuntimeError(
            f"Tensor.masked_fill: the value must be a number or a 0-d Tensor, got shape "
            f"{np.shape(value._v if isinstance(value, Tensor) else value)} (as in PyTorch); "
            "for a value per element use tg.where(mask, value, x)"
        )
    v = self._v
    if v.__class__ is not float and v.dtype != np.float64 and not self._rg:
        # an integer, boolean or float32 x keeps its dtype, the value cast to it (PyTorch's)
        if isinstance(value, Tensor) and value._rg:
            raise TypeError(
                f"Tensor.masked_fill: a value that requires grad cannot fill a Tensor of "
                f"dtype {v.dtype} (it has no gradient); fill x.double()"
            )
        check_fits(value, v.dtype, "Tensor.masked_fill")

        def fill(x, val):
            with np.errstate(invalid="ignore", over="ignore"):
                return np.where(m, np.asarray(val).astype(x.dtype), x)

        return O.numpy_exact(fill, self, value)
    return O.where(m, value, self)


def _gather_along(self, dim, index):
    """``x.gather(dim, index)``: ``out[i][j] = x[i][index[i][j]]`` for ``dim`` 1 (NumPy's
    ``take_along_axis``); repeated indices add their gradients.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).gather(1, tg.tensor([[1, 0], [0, 0]]))
    tensor([[2., 1.],
            [3., 3.]])
    """
    flat, _ = _along(self, dim, index, "gather")
    if O.exact_operands(self):  # an integer Tensor keeps its dtype
        return O.numpy_exact(lambda v: np.asarray(v).reshape(-1)[flat], self)
    return O.gather_flat(self, flat, flat.shape)


def _mm(self, mat2):
    """``x.mm(mat2)``: the product of two 2-D tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).mm(tg.tensor([[3.0], [4.0]]))
    tensor([[11.]])
    """
    if self.ndim != 2 or np.ndim(mat2) != 2:
        raise RuntimeError(f"Tensor.mm: two 2-D tensors, got {self.shape} and {np.shape(mat2)}")
    return O.matmul(self, mat2)


def _mv(self, vec):
    """``x.mv(vec)``: a 2-D tensor times a 1-D one.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).mv(tg.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    if self.ndim != 2 or np.ndim(vec) != 1:
        raise RuntimeError(
            f"Tensor.mv: a 2-D and a 1-D tensor, got {self.shape} and {np.shape(vec)}"
        )
    return O.matmul(self, vec)


def _bmm(self, mat2):
    """``x.bmm(mat2)``: batched products of two 3-D tensors.

    >>> import tapegrad as tg
    >>> tg.ones(2, 1, 3).bmm(tg.ones(2, 3, 1)).shape
    (2, 1, 1)
    """
    if self.ndim != 3 or np.ndim(mat2) != 3:
        raise RuntimeError(f"Tensor.bmm: two 3-D tensors, got {self.shape} and {np.shape(mat2)}")
    if self.shape[0] != np.shape(mat2)[0]:  # PyTorch's bmm does not broadcast the batch
        raise RuntimeError(
            f"Tensor.bmm: batch sizes differ, {self.shape} and {np.shape(mat2)} (bmm does not "
            "broadcast, as in PyTorch); x @ mat2 broadcasts"
        )
    return O.matmul(self, mat2)


def _rsqrt(self):
    """``x.rsqrt()``: ``1 / sqrt(x)``.

    >>> import tapegrad as tg
    >>> tg.tensor([4.0, 0.25]).rsqrt()
    tensor([0.5000, 2.0000])
    """
    if self._v.__class__ is not float and self._v.dtype.kind in "iub":
        self = convert(self, np.float64)  # (NumPy's sqrt of uint8 / int16 is float16 / 32)
    return O.reciprocal(O.sqrt(self))


def _unbind(self, dim=0):
    """``x.unbind(dim=0)``: the slices along ``dim``, as a tuple of views.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).unbind(1)
    (tensor([1., 3.]), tensor([2., 4.]))
    """
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.unbind: dim {dim} of a 0-d tensor: it has no dim to unbind (as "
            "PyTorch); use x.reshape(1).unbind()"
        )
    (d,) = _dims_of(self, dim, "unbind")
    return tuple(_select(self, d, i) for i in range(self.shape[d]))


def _chunk(self, chunks, dim=0):
    """``x.chunk(chunks, dim=0)``: views of ``ceil(n / chunks)`` slices each along ``dim`` (the
    last may be shorter), as PyTorch's.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0]).chunk(2)
    (tensor([1., 2., 3.]), tensor([4., 5.]))
    """
    d = _dim_of_nd(self, dim, "chunk")
    n = self.shape[d]
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise RuntimeError(f"Tensor.chunk: chunks must be a positive int, got {chunks!r}")
    if n == 0:  # PyTorch's: ``chunks`` empty views
        return tuple(_narrow(self, d, 0, 0) for _ in range(chunks))
    step = -(-n // chunks)
    return tuple(_narrow(self, d, s, min(step, n - s)) for s in range(0, n, step))


def _new_full(self, size, fill_value, *, dtype=None, requires_grad=False):
    """``x.new_full(size, fill_value)``: a new Tensor of ``x``'s dtype (no graph).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).new_full((2,), 3.0)
    tensor([3., 3.])
    """
    size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    dt = dtype if dtype is not None else self.dtype
    # the fill value is checked before the cast (np.full casts 1j to 0 and "2" to 2.0)
    fill = scalar_argument(fill_value, "new_full: the fill value")
    dt = np.dtype(dt)
    check_fits(fill, dt, "Tensor.new_full")
    with np.errstate(invalid="ignore", over="ignore"):  # (a float into an int: truncated)
        out = np.full(size, fill, dtype=dt)
    return new_tensor(out, requires_grad=requires_grad, dtype=dt)


def _new_zeros(self, *size, dtype=None, requires_grad=False):
    """``x.new_zeros(size)``: zeros of ``x``'s dtype.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).new_zeros(2, 2)
    tensor([[0., 0.],
            [0., 0.]])
    """
    size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return _new_full(self, size, 0, dtype=dtype, requires_grad=requires_grad)


def _new_ones(self, *size, dtype=None, requires_grad=False):
    """``x.new_ones(size)``: ones of ``x``'s dtype.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).new_ones(3)
    tensor([1., 1., 1.])
    """
    size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return _new_full(self, size, 1, dtype=dtype, requires_grad=requires_grad)


def _expand_as(self, other):
    """``x.expand_as(other)``: ``x.expand(other.shape)`` (a broadcast; gradients sum back).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0], [2.0]]).expand_as(tg.zeros(2, 3))
    tensor([[1., 1., 1.],
            [2., 2., 2.]])
    """
    return self.expand(*np.shape(other))


def _view_as(self, other):
    """``x.view_as(other)``: ``x.view(other.shape)``, a view.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0, 4.0]).view_as(tg.zeros(2, 2))
    tensor([[1., 2.],
            [3., 4.]])
    """
    return self.view(*np.shape(other))


def _reshape_as(self, other):
    """``x.reshape_as(other)``: ``x.reshape(other.shape)``.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0, 4.0]).reshape_as(tg.zeros(4, 1)).shape
    (4, 1)
    """
    return self.reshape(*np.shape(other))


# ---- writes at index positions: scatter, index_add, masked_scatter ... ----------------------
# Each finds the flat positions of x it writes (NumPy, on integer indices, which carry no
# derivative), then makes one differentiable row: SCATTER (added values; the gradient to the
# values is the output's gradient gathered back, repeated positions included) or SETITEM
# (written values; x's gradient is zero where it was overwritten).


def _index_of(index, name):
    idx = np.asarray(index.numpy() if isinstance(index, Tensor) else index)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"Tensor.{name}: index must be an integer tensor, got dtype {idx.dtype}")
    return idx


def _no_negative(idx, name, d, n):
    """PyTorch's gather, scatter and index_* raise on a negative index (x[-1]-style counting
    from the end would give a number where PyTorch code expects an error)."""
    if idx.size and idx.min() < 0:
        raise IndexError(
            f"Tensor.{name}: index {int(idx.min())} is out of bounds for dim {d} of size {n} "
            f"(as in PyTorch, {name} does not count negative indices from the end; add {n} "
            "to them first)"
        )


def _along(self, dim, index, name):
    """Flat positions in ``self`` of ``index`` read along ``dim`` (gather's and scatter's
    rule: ``index[i][j]`` names row ``index[i][j]``, column ``j`` for dim 0), and the dim."""
    idx = _index_of(index, name)
    if self.ndim == 0:  # PyTorch reads a 0-d tensor as one of a single element
        if dim not in (0, -1):
            raise IndexError(f"Tensor.{name}: dim {dim} is out of range for a 0-d tensor")
        _no_negative(idx, name, 0, 1)
        if idx.size and idx.max() >= 1:
            raise IndexError(f"Tensor.{name}: an index is out of range for a 0-d tensor")
        return np.zeros(idx.shape, np.int64), 0
    (d,) = _dims_of(self, dim, name)
    if idx.ndim != self.ndim:
        raise RuntimeError(
            f"Tensor.{name}: index must have as many dims as the tensor ({self.ndim}), got "
            f"shape {idx.shape}"
        )
    n = self.shape[d]
    _no_negative(idx, name, d, n)
    if idx.size and idx.max() >= n:
        raise IndexError(f"Tensor.{name}: an index is out of range for dim {d} of size {n}")
    for k in range(self.ndim):
        if k != d and idx.shape[k] > self.shape[k]:
            raise RuntimeError(
                f"Tensor.{name}: index shape {idx.shape} exceeds the tensor's {self.shape}"
            )
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx % n if n else idx
    return np.ravel_multi_index(tuple(np.broadcast_arrays(*grid)), self.shape), d


def _untracked_narrow(self, values):
    """A float32 (or other non-float64) ``self`` written without gradients: computed as
    NumPy's own in its dtype (PyTorch's result keeps x's dtype), the values cast to it."""
    v = self._v
    if v.__class__ is float or v.dtype == np.float64 or self._rg:
        return False
    return not (isinstance(values, Tensor) and values._rg)


def _write(self, flat, values, add):
    """``self`` with ``values`` (one per entry of ``flat``, or one number) added at (``add``)
    or written into its flat positions ``flat``."""
    flat = np.asarray(flat, np.int64).reshape(-1)
    if O.exact_operands(self, values) or _untracked_narrow(self, values):

        def put(v, vals):
            out = np.array(v).reshape(-1)
            vals = np.broadcast_to(vals, flat.shape)
            if add:
                np.add.at(out, flat, vals)
            else:
                out[flat] = vals
            return out.reshape(np.shape(v))

        return O.numpy_exact(put, self, values)
    if add:
        if not isinstance(values, Tensor) or values.shape != flat.shape:
            values = O.broadcast_to(values, flat.shape)
        return O.add(self, O.scatter_add(values, flat, self.shape))
    return O.reshape(O.setitem(O.reshape(self, (-1,)), flat, values), self.shape)


def _source_part(src, shape, name):
    """The leading ``shape`` block of ``src`` (PyTorch reads src where index has entries),
    flattened."""
    if not isinstance(src, Tensor):
        src = O.tensor_of(src)
    if src.ndim != len(shape) or any(a > b for a, b in zip(shape, src.shape, strict=True)):
        raise RuntimeError(
            f"Tensor.{name}: src of shape {src.shape} must have index's dims, each at least "
            f"as long as index's {shape}"
        )
    if src.shape != tuple(shape):
        src = O.getitem(src, tuple(slice(0, n) for n in shape))
    return O.reshape(src, (-1,))


def _scatter_add(self, dim, index, src):
    """``x.scatter_add(dim, index, src)``: x with ``src[i][j]`` added at row ``index[i][j]``
    (dim 0); repeated indices add up, and src's gradient is the output's gathered at index.

    Examples:
        >>> import tapegrad as tg
        >>> src = tg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        >>> y = tg.zeros(2, 3).scatter_add(1, tg.tensor([[0, 0, 2]]), src); y
        tensor([[3., 0., 3.],
                [0., 0., 0.]], grad_fn=<AddBackward0>)
        >>> (y * tg.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])).sum().backward(); src.grad
        tensor([[1., 1., 3.]])
    """
    flat, _ = _along(self, dim, index, "scatter_add")
    return _write(self, flat, _source_part(src, flat.shape, "scatter_add"), add=True)


def _refuse_reduce(name, reduce):
    if reduce is not None:
        raise TypeError(
            f"Tensor.{name}: reduce={reduce!r} is not supported; use x.scatter_add(dim, index, "
            "src) for 'add', or compose the reduction from gather and where"
        )


def _scatter(self, dim, index, src=None, value=None, *, reduce=None):
    """``x.scatter(dim, index, src)`` / ``x.scatter(dim, index, value)``: a copy of x with
    ``src[i][j]`` (or the number ``value``) written at row ``index[i][j]`` (dim 0).  The
    gradient to x is zero where it was overwritten; ``reduce=`` is refused.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.scatter(0, tg.tensor([[1, 0, 1]]), tg.tensor([[1.0, 2.0, 3.0]]))
        tensor([[0., 2., 0.],
                [1., 0., 3.]])
        >>> x.scatter(1, tg.tensor([[2], [0]]), value=5.0)
        tensor([[0., 0., 5.],
                [5., 0., 0.]])
    """
    _refuse_reduce("scatter", reduce)
    if (src is None) == (value is None):
        raise TypeError("Tensor.scatter(dim, index, src) or (dim, index, value=): give one")
    flat, _ = _along(self, dim, index, "scatter")
    if value is not None or not isinstance(src, (Tensor, np.ndarray, list)):
        value = src if value is None else value
        check_fits(value, self.dtype, "Tensor.scatter")
        return _write(self, flat, value, add=False)
    return _write(self, flat, _source_part(src, flat.shape, "scatter"), add=False)


def _slices_at(self, dim, index, name, negatives=False):
    """Flat positions of the slices of ``self`` at ``index`` (a 1-D index) along ``dim``,
    shaped as those slices are (``self.index_select(dim, index)``'s shape), and the dim;
    a negative index counts from the end only with ``negatives`` (PyTorch's index_fill)."""
    idx = _index_of(index, name)
    if idx.ndim > 1:
        raise IndexError(f"Tensor.{name}: index must be 0-D or 1-D, got shape {idx.shape}")
    if self.ndim == 0:
        return np.zeros(idx.reshape(-1).shape[:0], np.int64), 0
    (d,) = _dims_of(self, dim, name)
    n = self.shape[d]
    idx = idx.reshape(-1)
    if not negatives:
        _no_negative(idx, name, d, n)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"Tensor.{name}: an index is out of range for dim {d} of size {n}")
    pos = np.arange(self.numel()).reshape(self.shape)
    return np.take(pos, idx, axis=d), d


def _sources(self, dim, index, source, name):
    pos, _ = _slices_at(self, dim, index, name)
    if tuple(np.shape(source)) != pos.shape and not (self.ndim == 0 and np.ndim(source) == 0):
        raise RuntimeError(
            f"Tensor.{name}: source of shape {np.shape(source)} must be the shape of the "
            f"slices it goes to, {pos.shape}"
        )
    return pos, O.reshape(O.tensor_of(source) if not isinstance(source, Tensor) else source, -1)


def _index_add(self, dim, index, source, *, alpha=1):
    """``x.index_add(dim, index, source, alpha=1)``: x with ``alpha * source[k]`` added to the
    slice ``index[k]`` along ``dim``; repeated indices add up.

    Examples:
        >>> import tapegrad as tg
        >>> src = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = tg.ones(3, 2).index_add(0, tg.tensor([2, 2]), src, alpha=10); y
        tensor([[ 1.,  1.],
                [ 1.,  1.],
                [41., 61.]], grad_fn=<AddBackward0>)
        >>> y.sum().backward(); src.grad
        tensor([[10., 10.],
                [10., 10.]])
    """
    pos, values = _sources(self, dim, index, source, "index_add")
    return _write(self, pos, values if alpha == 1 else O.mul(values, alpha), add=True)


def _index_copy(self, dim, index, source):
    """``x.index_copy(dim, index, source)``: a copy of x with the slice ``index[k]`` along
    ``dim`` replaced by ``source[k]`` (x's gradient is zero there).

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(3, 2).index_copy(0, tg.tensor([2, 0]), tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]])
    """
    pos, values = _sources(self, dim, index, source, "index_copy")
    return _write(self, pos, values, add=False)


def _index_fill(self, dim, index, value):
    """``x.index_fill(dim, index, value)``: a copy of x with the slices at ``index`` along
    ``dim`` set to ``value`` (a number, or a 0-d Tensor that gets their gradient).

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(2, 3).index_fill(1, tg.tensor([0, 2]), -1.0)
        tensor([[-1.,  1., -1.],
                [-1.,  1., -1.]])
    """
    if np.ndim(value) != 0:
        raise RuntimeError(
            f"Tensor.index_fill: value must be a number or a 0-d tensor, got shape "
            f"{np.shape(value)} (x.index_copy writes a tensor of slices)"
        )
    pos, _ = _slices_at(self, dim, index, "index_fill", negatives=True)
    check_fits(value, self.dtype, "Tensor.index_fill")
    return _write(self, pos, value, add=False)


def _mask_of(mask, name):
    m = np.asarray(mask.numpy() if isinstance(mask, Tensor) else mask)
    if m.dtype != bool:
        raise TypeError(f"Tensor.{name}: the mask must be boolean, got dtype {m.dtype}")
    return m


def _masked_select(self, mask):
    """``x.masked_select(mask)``: the elements where ``mask`` (broadcast with x) is True, as a
    1-D tensor.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, -2.0], [-3.0, 4.0]])
        >>> x.masked_select(x > 0)
        tensor([1., 4.])
    """
    m = _mask_of(mask, "masked_select")
    shape = np.broadcast_shapes(self.shape, m.shape)
    x = self if self.shape == shape else O.broadcast_to(self, shape)
    return O.getitem(O.reshape(x, (-1,)), np.flatnonzero(np.broadcast_to(m, shape)))


def _masked_scatter(self, mask, source):
    """``x.masked_scatter(mask, source)``: a copy of x with the places where ``mask`` is True
    taking ``source``'s elements in order (row-major), as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 2)
        >>> x.masked_scatter(tg.tensor([[True, False], [True, True]]), tg.tensor([1.0, 2.0, 3.0]))
        tensor([[1., 0.],
                [2., 3.]])
    """
    m = _mask_of(mask, "masked_scatter")
    shape = np.broadcast_shapes(self.shape, m.shape)
    x = self if self.shape == shape else O.broadcast_to(self, shape)
    pos = np.flatnonzero(np.broadcast_to(m, shape))
    src = O.reshape(source if isinstance(source, Tensor) else O.tensor_of(source), (-1,))
    if src.shape[0] < pos.size:
        raise RuntimeError(
            f"Tensor.masked_scatter: the mask has {pos.size} True places, source only "
            f"{src.shape[0]} elements"
        )
    return _write(x, pos, O.getitem(src, slice(0, pos.size)), add=False)


# ---- selections by order: topk, kthvalue, cummax / cummin, aminmax --------------------------

TopkResult = namedtuple("topk", ("values", "indices"))
KthvalueResult = namedtuple("kthvalue", ("values", "indices"))
CummaxResult = namedtuple("cummax", ("values", "indices"))
CumminResult = namedtuple("cummin", ("values", "indices"))
AminmaxResult = namedtuple("aminmax", ("min", "max"))


def _topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
    """``x.topk(k, dim=-1, largest=True, sorted=True)``: the named tuple ``(values, indices)``
    of the ``k`` largest (``largest=False``: smallest) elements along ``dim``, in sorted
    order; the gradient goes to the elements picked.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 5.0, 3.0, 4.0], requires_grad=True)
        >>> values, indices = x.topk(2); values, indices
        (tensor([5., 4.], grad_fn=<ViewBackward0>), tensor([1, 3]))
        >>> values.sum().backward(); x.grad
        tensor([0., 1., 0., 1.])
        >>> x.topk(1, largest=False).indices
        tensor([0])
    """
    (d,) = _dims_of(self, dim, "topk")
    n = self.shape[d] if self.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"Tensor.topk: k = {k} is out of range for a dim of size {n}")
    values, idx = _sort(self, dim, descending=bool(largest))
    if self.ndim == 0:
        return TopkResult(values, idx)
    key = (slice(None),) * d + (slice(0, k),)
    return TopkResult(O.getitem(values, key), _int_tensor(np.asarray(idx.numpy())[key]))


def _kthvalue(self, k, dim=-1, keepdim=False):
    """``x.kthvalue(k, dim=-1, keepdim=False)``: the named tuple ``(values, indices)`` of the
    ``k``-th smallest element (k from 1) along ``dim``; the gradient goes to that element.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
        >>> x.kthvalue(2, dim=1)
        kthvalue(values=tensor([2., 4.], grad_fn=<ViewBackward0>), indices=tensor([2, 2]))
    """
    return _sorted_pick(self, dim, lambda n: k - 1, keepdim, KthvalueResult, "kthvalue")


def _running(op, result_type):
    acc = np.fmax if op == "cummax" else np.fmin
    better = np.greater_equal if op == "cummax" else np.less_equal

    def method(self, dim):
        if self.ndim == 0:
            wrap_dim(dim, self.shape, f"Tensor.{op}")
            return result_type(O.reshape(self, ()), _int_tensor(0))
        (d,) = _dims_of(self, dim, op)
        _guard_hook(self, op)  # a trace pins the values the indices come from
        v = np.moveaxis(np.asarray(self._v), d, -1)
        pos = np.arange(v.shape[-1])
        with np.errstate(invalid="ignore"):
            # PyTorch's rule: a later element equal to the running extreme takes its place,
            # a NaN takes it and keeps it (later NaNs move the index on)
            nan = np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)
            seen = np.logical_or.accumulate(nan, axis=-1)
            ext = acc.accumulate(v, axis=-1) if v.size else v
            take = np.where(seen, nan, better(v, ext))
        idx = np.moveaxis(np.maximum.accumulate(np.where(take, pos, 0), axis=-1), -1, d)
        return result_type(_gather(self, None, idx, d), _int_tensor(idx))

    method.__name__ = op
    return method


_cummax = _running("cummax", CummaxResult)
_cummax.__doc__ = """``x.cummax(dim)``: the named tuple ``(values, indices)`` of the running
    maximum along ``dim`` (a later equal element takes the index); the gradient goes to the
    element each value is.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0, 2.0, 5.0], requires_grad=True)
        >>> values, indices = x.cummax(0); values, indices
        (tensor([1., 3., 3., 5.], grad_fn=<IndexBackward0>), tensor([0, 1, 1, 3]))
        >>> values.sum().backward(); x.grad
        tensor([1., 2., 0., 1.])
    """
_cummin = _running("cummin", CumminResult)
_cummin.__doc__ = """``x.cummin(dim)``: the named tuple ``(values, indices)`` of the running
    minimum along ``dim``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([3.0, 1.0, 2.0, 0.0]).cummin(0)
        cummin(values=tensor([3., 1., 1., 0.]), indices=tensor([0, 1, 1, 3]))
    """


def _scan(name, scan, accumulate):
    def method(self, dim=None, *, dtype=None, axis=None):
        dim = _dim(dim, axis, name)
        if dtype is not None and np.dtype(dtype) == np.bool_:
            raise NotImplementedError(
                f"Tensor.{name}: not implemented for dtype=bool (as PyTorch); give an integer "
                "or float dtype"
            )
        x = self if dtype is None else convert(self, dtype)
        if dim is not None:
            dim = wrap_dim(dim, x.shape, f"Tensor.{name}")
        if x.ndim == 0 and dim is not None:  # PyTorch's 0-d result (NumPy's is 1-d)
            return O.reshape(method(O.reshape(x, (1,)), 0), ())
        if O.exact_operands(x):  # integer and bool: exact, in int64 (or dtype) as PyTorch's
            dt = _scan_dtype(x._v) if dtype is None else x.dtype
            return O.numpy_exact(lambda v: accumulate(v, axis=dim, dtype=dt), x)
        return scan(x, dim)

    method.__name__ = name
    return method


def _scan_dtype(v):
    return np.int64 if v.dtype.kind in "ib" else None


_cumsum = _scan("cumsum", O.cumsum, np.cumsum)
_cumsum.__doc__ = """``x.cumsum(dim, *, dtype=None)``: the running sum along ``dim``; integer
    and bool Tensors give exact int64 sums, as PyTorch's (``dim=None`` sums the flattened
    values, as NumPy's).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> x.cumsum(0)
        tensor([1., 3., 6.], grad_fn=<CumsumBackward0>)
        >>> tg.tensor([True, False, True]).cumsum(0)
        tensor([1, 1, 2])
    """
_cumprod = _scan("cumprod", O.cumprod, np.cumprod)
_cumprod.__doc__ = """``x.cumprod(dim, *, dtype=None)``: the running product along ``dim``
    (exact int64 products for integer and bool Tensors, as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([2, 3, 4]).cumprod(0)
        tensor([ 2,  6, 24])
    """


def _aminmax(self, *, dim=None, keepdim=False):
    """``x.aminmax(*, dim=None, keepdim=False)``: the named tuple ``(min, max)`` (of all
    elements, or along ``dim``); tied extremes share the gradient, as ``amin`` / ``amax``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([[1.0, 5.0], [3.0, -2.0]]).aminmax(dim=1)
        aminmax(min=tensor([ 1., -2.]), max=tensor([5., 3.]))
    """
    if dim is not None:
        dim = wrap_dim(dim, self.shape, "Tensor.aminmax")
        dim = dim if self.ndim else None
    nonempty_lanes(self, dim, "Tensor.aminmax")
    return AminmaxResult(O.amin(self, dim, keepdim), O.amax(self, dim, keepdim))


# ---- shapes: movedim, split, tensor_split, tile, unflatten ------------------------------------


def _movedim(self, source, destination):
    """``x.movedim(source, destination)`` (also ``moveaxis``): the dims ``source`` moved to
    the places ``destination``, the others keeping their order.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 3, 4).movedim(0, -1).shape, tg.zeros(2, 3, 4).movedim((0, 1), (2, 0)).shape
        ((3, 4, 2), (3, 4, 2))
    """
    src = _dims_of(self, source, "movedim")
    dst = _dims_of(self, destination, "movedim")
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(
            f"Tensor.movedim: source {source} and destination {destination} must be as many "
            "distinct dims"
        )
    if self.ndim == 0:  # dims 0 / -1 of a 0-d tensor moved: itself, as PyTorch's
        return O.transpose(self)
    order = [None] * self.ndim
    for s, t in zip(src, dst, strict=True):
        order[t] = s
    rest = iter(d for d in range(self.ndim) if d not in src)
    return O.transpose(self, tuple(next(rest) if o is None else o for o in order))


def _split(self, split_size_or_sections, dim=0):
    """``x.split(split_size, dim=0)``: views of ``split_size`` slices each along ``dim`` (the
    last may be shorter); ``x.split([sizes], dim)``: views of those sizes (PyTorch's split;
    NumPy's ``np.split`` takes a number of sections or split points: ``tnp.split``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> x.split(2)
        (tensor([1., 2.]), tensor([3., 4.]), tensor([5.]))
        >>> x.split([1, 4])
        (tensor([1.]), tensor([2., 3., 4., 5.]))
    """
    d = _dim_of_nd(self, dim, "split")
    n = self.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and n:
            raise RuntimeError(f"Tensor.split: split_size must be positive, got {step}")
        sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"Tensor.split: sizes {sizes} must be non-negative and add up to {n}, the "
                f"length of dim {d}"
            )
    starts = np.cumsum([0] + sizes[:-1])
    return tuple(_narrow(self, d, int(s), k) for s, k in zip(starts, sizes, strict=True))


def _tensor_split(self, indices_or_sections, dim=0):
    """``x.tensor_split(sections, dim=0)``: ``sections`` views along ``dim``, the first
    ``n % sections`` one longer (NumPy's ``array_split``); ``x.tensor_split([i, j], dim)``:
    the views before ``i``, from ``i`` to ``j`` and from ``j``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.arange(5.0)
        >>> x.tensor_split(3)
        (tensor([0., 1.]), tensor([2., 3.]), tensor([4.]))
        >>> tg.zeros(2, 5).tensor_split([1, 4], dim=1)[1].shape
        (2, 3)
    """
    d = _dim_of_nd(self, dim, "tensor_split")
    n = self.shape[d]
    arg = indices_or_sections
    arg = np.asarray(arg.numpy()) if isinstance(arg, Tensor) else arg
    if np.ndim(arg) == 0:
        sections = int(arg)
        if sections <= 0:
            raise RuntimeError(f"Tensor.tensor_split: sections must be positive, got {sections}")
        sizes = [n // sections + (i < n % sections) for i in range(sections)]
        cuts = np.cumsum([0] + sizes).tolist()
    else:
        cuts = [0] + [int(i) for i in np.asarray(arg).reshape(-1)] + [n]
    pre = (slice(None),) * d
    return tuple(self[pre + (slice(a, b),)] for a, b in pairwise(cuts))


def _tile(self, *dims):
    """``x.tile(dims)``: x repeated ``dims[i]`` times along each dim, ones prepended to
    ``dims`` when it is shorter than x's dims (PyTorch's and NumPy's tile).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([[1.0, 2.0]]).tile(2)
        tensor([[1., 2., 1., 2.]])
    """
    dims = _sizes(dims)
    return _repeat(self, *((1,) * (self.ndim - len(dims)) + tuple(dims)))


def _unflatten(self, dim, sizes):
    """``x.unflatten(dim, sizes)``: dim ``dim`` split into dims of ``sizes`` (one may be -1).

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 6).unflatten(1, (3, -1)).shape
        (2, 3, 2)
    """
    d = _dim_of_nd(self, dim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    n = self.shape[d]
    if sizes.count(-1) == 1:
        known = int(np.prod([s for s in sizes if s != -1], dtype=np.int64))
        sizes = tuple(n // known if s == -1 and known else s for s in sizes)
    if int(np.prod(sizes, dtype=np.int64)) != n:
        raise RuntimeError(
            f"Tensor.unflatten: sizes {sizes} do not multiply to {n}, the length of dim {d}"
        )
    return O.reshape(self, self.shape[:d] + sizes + self.shape[d + 1 :])


# ---- arithmetic with PyTorch's scale arguments -----------------------------------------------


def _scaled(x, c):
    return x if c == 1 else O.mul(x, c)


def _plus_product(self, product, beta, alpha):
    """``beta * self + alpha * product``; with ``beta`` 0 ``self`` is ignored (NaN and inf in
    it do not reach the result), as PyTorch's addmm / addmv."""
    p = _scaled(product, alpha)
    if beta == 0:
        return O.broadcast_to(p, np.broadcast_shapes(self.shape, p.shape))
    return O.add(_scaled(self, beta), p)


def _addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """``x.addmm(mat1, mat2, *, beta=1, alpha=1)``: ``beta * x + alpha * (mat1 @ mat2)``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(1, 1).addmm(tg.tensor([[1.0, 2.0]]), tg.tensor([[3.0], [4.0]]), alpha=2)
        tensor([[23.]])
    """
    return _plus_product(self, _mm(O.tensor_of(mat1), mat2), beta, alpha)


def _addmv(self, mat, vec, *, beta=1, alpha=1):
    """``x.addmv(mat, vec, *, beta=1, alpha=1)``: ``beta * x + alpha * (mat @ vec)``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(2).addmv(tg.tensor([[1.0, 2.0], [3.0, 4.0]]), tg.tensor([1.0, 1.0]), beta=0.5)
        tensor([3.5000, 7.5000])
    """
    return _plus_product(self, _mv(O.tensor_of(mat), vec), beta, alpha)


def _add_combined(name, op):
    def method(self, tensor1, tensor2, *, value=1):
        return O.add(self, _scaled(op(tensor1, tensor2), value))

    method.__name__ = name
    return method


_addcmul = _add_combined("addcmul", O.mul)
_addcmul.__doc__ = """``x.addcmul(tensor1, tensor2, *, value=1)``: ``x + value * tensor1 *
    tensor2``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(2).addcmul(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]), value=0.5)
        tensor([2.5000, 5.0000])
    """
_addcdiv = _add_combined("addcdiv", O.div)
_addcdiv.__doc__ = """``x.addcdiv(tensor1, tensor2, *, value=1)``: ``x + value * tensor1 /
    tensor2``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(2).addcdiv(tg.tensor([1.0, 2.0]), tg.tensor([4.0, 4.0]), value=2)
        tensor([1.5000, 2.0000])
    """


def _lerp(self, end, weight):
    """``x.lerp(end, weight)``: ``x + weight * (end - x)`` (weight a number or a Tensor).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0, 10.0], requires_grad=True)
        >>> y = x.lerp(tg.tensor([1.0, 20.0]), 0.25); y
        tensor([0.2500, 12.5000], grad_fn=<AddBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0.7500, 0.7500])
    """
    return O.add(self, O.mul(weight, O.sub(end, self)))


def _xlogy(self, other):
    """``x.xlogy(other)``: ``x * log(other)``, 0 where x is 0 (unless other is NaN), as
    PyTorch's, whose gradients it has too: ``log(other)`` to x (0 where other is 0) and
    ``x / other`` to other.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0, 2.0], requires_grad=True)
        >>> y = x.xlogy(tg.tensor([0.0, 3.0])); y
        tensor([0.0000, 2.1972], grad_fn=<WhereBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0.0000, 1.0986])
    """
    # the masks by comparisons, which a trace guards (a replay where they change retraces)
    zero = (self == 0.0).numpy()
    if not np.any(zero):
        return O.mul(self, O.log(other))
    y = other if isinstance(other, Tensor) else O.tensor_of(np.asarray(other, np.float64))
    zero = zero & (y == y).numpy()  # not where other is NaN
    # (and below 0, where log is NaN: xlogy(0, -1) is 0, as PyTorch's, and so is its d/dx)
    bad = (y == 0.0).numpy() | (y == np.inf).numpy() | (y < 0.0).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf is a value here
        # where x is 0: x * (log(other), 0 where other is 0, inf or below 0), which is 0 and
        # gives x the gradient log(other); elsewhere x * log(other), of other replaced by 1
        # where x is 0 (so no 0 * inf reaches a gradient)
        at_zero = O.mul(self, O.where(bad, 0.0, O.log(O.where(bad, 1.0, other))))
        elsewhere = O.mul(self, O.log(O.where(zero, 1.0, other)))
        return O.where(zero, at_zero, elsewhere)


def clamp(self, min=None, max=None):  # noqa: A002 - PyTorch's names
    """``x.clamp(min=None, max=None)``: PyTorch's clamp, ``min(max(x, min), max)``: ``max``
    everywhere when min > max; integer Tensors and bounds stay integer (exact).  The gradient
    is PyTorch's: all of it to x where min <= x <= max (at a bound too), to a Tensor bound
    where it is the value (to ``max`` where min > max), none to a NaN bound.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-2.0, 0.5, 1.0], requires_grad=True)
        >>> x.clamp(-1.0, 1.0).sum().backward(); x.grad
        tensor([0., 1., 1.])
        >>> tg.tensor([1, 5, -3]).clamp(0, 2), x.clamp(0.5, -0.5)
        (tensor([1, 2, 0]), tensor([-0.5000, -0.5000, -0.5000], grad_fn=<WhereBackward0>))
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of min= and max= must be given")
    if O.exact_operands(self, min, max):
        return O.numpy_exact(np.clip, self, min, max)
    if isinstance(min, Tensor) or isinstance(max, Tensor) or np.ndim(min) or np.ndim(max):
        return _clamp_tensors(self, min, max)
    if min is not None and max is not None and float(min) > float(max):
        return O.where(np.ones(self.shape, bool), float(max), self)  # max, no gradient to x
    return O.clip(self, min, max)


def _clamp_tensors(x, lo, hi):
    """``clamp`` with a Tensor bound, with PyTorch's gradient masks (ties go to x; a bound
    gets the gradient only where it is the value; NaN compares false)."""
    value = x.detach()
    with np.errstate(invalid="ignore"):
        if lo is not None:
            value = O.maximum(value, _detached(lo))
        if hi is not None:
            value = O.minimum(value, _detached(hi))
        to_x = O.truth(x >= lo) if lo is not None else True
        to_x = to_x & O.truth(x <= hi) if hi is not None else to_x
        out = value
        if hi is not None:
            to_hi = O.truth(x > hi) | (O.truth(hi < lo) if lo is not None else False)
            out = O.where(to_hi, hi, out)
        if lo is not None:
            to_lo = O.truth(x < lo) & (O.truth(lo < hi) if hi is not None else True)
            out = O.where(to_lo, lo, out)
        return O.where(to_x, x, out)


def _detached(v):
    return v.detach() if isinstance(v, Tensor) else v


def _clamp_min(self, min):  # noqa: A002 - PyTorch's name
    """``x.clamp_min(min)``: ``x.clamp(min=min)``.

    >>> import tapegrad as tg
    >>> tg.tensor([-1.0, 2.0]).clamp_min(0.0)
    tensor([0., 2.])
    """
    return clamp(self, min, None)


def _clamp_max(self, max):  # noqa: A002 - PyTorch's name
    """``x.clamp_max(max)``: ``x.clamp(max=max)``.

    >>> import tapegrad as tg
    >>> tg.tensor([-1.0, 2.0]).clamp_max(0.0)
    tensor([-1.,  0.])
    """
    return clamp(self, None, max)


def _diff(self, n=1, dim=-1, prepend=None, append=None):
    """``x.diff(n=1, dim=-1, prepend=None, append=None)``: the n-th differences along ``dim``
    (``tg.diff``, NumPy's ``diff`` with ``dim`` for ``axis``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([[1.0, 4.0, 9.0]]).diff()
        tensor([[3., 5.]])
    """
    d = _dim_of_nd(self, dim, "diff")
    parts = []
    for part in (prepend, self, append):
        if part is not None:
            part = O.tensor_of(part)
            if part.ndim == 0:  # a number: one slice of it along dim
                part = O.broadcast_to(part, self.shape[:d] + (1,) + self.shape[d + 1 :])
            parts.append(part)
    x = O.concatenate(parts, d) if len(parts) > 1 else self
    pre = (slice(None),) * d
    for _ in range(n):
        x = O.sub(x[pre + (slice(1, None),)], x[pre + (slice(None, -1),)])
    return x


def _where(self, condition, y):
    """``x.where(condition, y)``: x where ``condition`` is True, else ``y`` (``tg.where(condition,
    x, y)``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, -2.0, 3.0])
        >>> x.where(x > 0, 0.0)
        tensor([1., 0., 3.])
    """
    return where_keeping_dtype(O.where, condition, self, y)


def where_keeping_dtype(where, condition, x, y):
    """``where(condition, x, y)``; integer and boolean branches (and float32 ones) without
    grad give NumPy's own ``np.where`` dtype and exact values, as PyTorch's (``where`` of
    int64 values is int64, not float64 rounded above 2**53)."""
    if not (isinstance(x, Tensor) and x._rg) and not (isinstance(y, Tensor) and y._rg):
        dt = np.result_type(_operand(x), _operand(y))
        if dt != np.float64:
            for v in (x, y):  # a number the result dtype cannot hold: PyTorch raises
                check_fits(v, dt, "where")
            return O.numpy_exact(
                lambda c, a, b: np.where(np.asarray(c).astype(bool), a, b), condition, x, y
            )
    return where(condition, x, y)


def _operand(v):
    """A value as ``np.result_type`` reads it (a Python number stays weak, as in NumPy 2)."""
    if isinstance(v, Tensor):
        return np.asarray(v._v)
    return v if isinstance(v, (int, float)) else np.asarray(v)


def _type_as(self, other):
    """``x.type_as(other)``: x as ``other``'s dtype (``x.to(other.dtype)``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.5, 2.5]).type_as(tg.tensor([1]))
    tensor([1, 2])
    """
    return convert(self, other.dtype)


def _new_tensor(self, data, *, dtype=None, requires_grad=False):
    """``x.new_tensor(data)``: a new Tensor of ``data``, of x's dtype unless ``dtype`` says
    otherwise (a copy, out of any graph).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).new_tensor([2, 3])
    tensor([2., 3.])
    """
    v = data.detach().numpy() if isinstance(data, Tensor) else data
    return new_tensor(v, requires_grad, _np_dtype(dtype) if dtype is not None else self.dtype)


def _element_size(self):
    """``x.element_size()``: the bytes of one element (8 for float64).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).element_size(), tg.tensor([True]).element_size()
    (8, 1)
    """
    return self.dtype.itemsize


def _is_floating_point(self):
    """``x.is_floating_point()``: whether x's dtype is a floating point one.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).is_floating_point(), tg.tensor([1]).is_floating_point()
    (True, False)
    """
    return self.dtype.kind == "f"


def _count_nonzero(self, dim=None):
    """``x.count_nonzero(dim=None)``: the number of nonzero elements (along ``dim``), an int64
    Tensor.

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 1.0], [2.0, 3.0]]).count_nonzero(dim=1)
    tensor([1, 2])
    """
    _guard_hook(self, "count_nonzero")
    axes = torch_axes(dim, self.shape, "Tensor.count_nonzero")
    return _int_tensor(np.count_nonzero(np.asarray(self._v), axis=axes))


def _close(self, other, rtol, atol, equal_nan):
    _guard_hook(self, "isclose")
    ov = other._v if isinstance(other, Tensor) else other
    return np.isclose(np.asarray(self._v), ov, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``x.isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)``: elementwise
    ``|x - other| <= atol + rtol * |other|``, a boolean Tensor.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).isclose(tg.tensor([1.0 + 1e-9, 2.1]))
    tensor([ True, False])
    """
    return new_tensor(np.asarray(_close(self, other, rtol, atol, equal_nan)))


def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``x.allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)``: whether every element
    is close (``isclose``), a Python bool.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).allclose(tg.tensor([1.0, 2.0 + 1e-9]))
    True
    """
    return bool(np.all(_close(self, other, rtol, atol, equal_nan)))


def _equal(self, other):
    """``x.equal(other)``: whether x and ``other`` have the same shape and elements, a Python
    bool.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).equal(tg.tensor([1.0, 2.0])), tg.tensor([1.0]).equal(tg.zeros(2))
    (True, False)
    """
    _guard_hook(self, "equal")
    ov = np.asarray(other._v if isinstance(other, Tensor) else other)
    return np.shape(self._v) == ov.shape and bool(np.array_equal(np.asarray(self._v), ov))


# ---- more of PyTorch's names: elementwise, predicates, NaN-aware reductions, quantiles ------


def _frac(self):
    """``x.frac()``: the fractional part ``x - x.trunc()`` (with x's sign); derivative 1.

    >>> import tapegrad as tg
    >>> tg.tensor([1.25, -2.75]).frac()
    tensor([0.2500, -0.7500])
    """
    return O.sub(self, O.trunc(self))


def _positive(self):
    """``x.positive()``: x itself, as PyTorch's.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, -2.0]); x.positive() is x
    True
    """
    if self.dtype == np.bool_:
        raise TypeError("Tensor.positive: not defined for a boolean tensor (as PyTorch)")
    return self


# name: (NumPy's function, what is True, an input, the result)
_PREDICATES = {
    "isnan": (np.isnan, "x is NaN", '[1.0, float("nan")]', "tensor([False,  True])"),
    "isinf": (np.isinf, "x is +inf or -inf", '[1.0, float("-inf")]', "tensor([False,  True])"),
    "isfinite": (
        np.isfinite,
        "x is neither NaN nor infinite",
        '[1.0, float("inf"), float("nan")]',
        "tensor([ True, False, False])",
    ),
    "isposinf": (np.isposinf, "x is +inf", '[float("inf"), -1.0]', "tensor([ True, False])"),
    "isneginf": (
        np.isneginf,
        "x is -inf",
        '[float("inf"), float("-inf")]',
        "tensor([False,  True])",
    ),
    "signbit": (
        np.signbit,
        "x's sign bit is set (-0.0 included)",
        "[-1.0, -0.0, 2.0]",
        "tensor([ True,  True, False])",
    ),
    "logical_not": (np.logical_not, "x is zero", "[0.0, 2.0]", "tensor([ True, False])"),
}

# name: (NumPy's function, what is True, the result for x [0, 1, 2] and other [1, 0, 3])
_LOGICAL = {
    "logical_and": (np.logical_and, "both are nonzero", "tensor([False, False,  True])"),
    "logical_or": (np.logical_or, "either is nonzero", "tensor([ True,  True,  True])"),
    "logical_xor": (np.logical_xor, "exactly one is nonzero", "tensor([ True,  True, False])"),
}


def _predicate(name):
    ufunc, what, value, result = _PREDICATES[name]

    def method(self):
        _guard_hook(self, name)  # a trace pins the values it reads
        return new_tensor(np.asarray(ufunc(np.asarray(self._v))))

    method.__name__ = name
    method.__doc__ = f"""``x.{name}()``: True where {what}, a boolean Tensor (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor({value}).{name}()
    {result}
    """
    return method


def _logical(name):
    ufunc, what, result = _LOGICAL[name]

    def method(self, other):
        _guard_hook(self, name)
        if isinstance(other, Tensor):
            _guard_hook(other, name)
        ov = np.asarray(other._v if isinstance(other, Tensor) else other)
        return new_tensor(np.asarray(ufunc(np.asarray(self._v), ov)))

    method.__name__ = name
    method.__doc__ = f"""``x.{name}(other)``: True where {what}, a boolean Tensor.

    >>> import tapegrad as tg
    >>> tg.tensor([0.0, 1.0, 2.0]).{name}(tg.tensor([1.0, 0.0, 3.0]))
    {result}
    """
    return method


_isnan, _isinf, _isfinite, _isposinf, _isneginf, _signbit, _logical_not = map(
    _predicate, _PREDICATES
)
_logical_and, _logical_or, _logical_xor = map(_logical, _LOGICAL)


def _true_divide(self, other):
    """``x.true_divide(other)``: ``x / other`` (a float result, integers too).

    >>> import tapegrad as tg
    >>> tg.tensor([1, 3]).true_divide(2)
    tensor([0.5000, 1.5000])
    """
    return O.div(self, other)


def check_fits(value, dtype, opname):
    """A Python number written into a Tensor of integer or float ``dtype`` must fit, as
    PyTorch requires: into an integer dtype NaN, inf or a value outside the dtype's range
    raises (NumPy would wrap or give INT64_MIN without a word); into a float dtype a finite
    value beyond its largest (1e300 into float32: NumPy gives inf).  A Tensor's values are
    cast, as PyTorch casts them."""
    if dtype.kind not in "iuf" or isinstance(value, Tensor):
        return
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        return
    if dtype.kind == "f":  # a finite number beyond the float's range (NaN and inf are kept)
        big = int(np.finfo(dtype).max)
        if isinstance(value, (int, np.integer)):
            over = abs(int(value)) > big
        else:
            over = math.isfinite(value) and abs(float(value)) > big
        if over:
            raise RuntimeError(
                f"{opname}: the value {value!r} cannot be converted to {dtype} without "
                f"overflow (as in PyTorch); the dtype holds finite values up to {float(big)!r}"
            )
        return
    info = np.iinfo(dtype)
    if value != value or not info.min <= value <= info.max:
        raise RuntimeError(
            f"{opname}: the value {value!r} cannot be converted to {dtype} without overflow "
            f"(as in PyTorch); the dtype holds [{info.min}, {info.max}]"
        )


def _floor_divide(self, other):
    """``x.floor_divide(other)``: the quotient rounded down (PyTorch's since 1.13, NumPy's
    ``//``); piecewise constant, so its derivative is 0.

    >>> import tapegrad as tg
    >>> tg.tensor([7.0, -7.0]).floor_divide(2.0)
    tensor([ 3., -4.])
    """
    return O.floor_divide(self, other)


def _float_power(self, exponent):
    """``x.float_power(exponent)``: ``x ** exponent`` in float64 (integers converted first).

    >>> import tapegrad as tg
    >>> tg.tensor([2, 3]).float_power(2)
    tensor([4., 9.])
    """
    if isinstance(exponent, Tensor):
        exponent = convert(exponent, np.float64)
    return O.power(convert(self, np.float64), exponent)


def _logit(self, eps=None):
    """``x.logit(eps=None)``: ``log(x / (1 - x))``; with ``eps``, of x clamped to
    [eps, 1 - eps] (derivative 0 outside, as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5, 0.75], requires_grad=True)
        >>> y = x.logit(); y
        tensor([0.0000, 1.0986], grad_fn=<SubBackward0>)
        >>> y.sum().backward(); x.grad                   # 1 / (x (1 - x))
        tensor([4.0000, 5.3333])
        >>> tg.tensor([0.0, 1.0]).logit(eps=0.25)
        tensor([-1.0986,  1.0986])
    """
    x = self if eps is None else O.clip(self, eps, 1.0 - eps)
    # log(x) - log1p(-x), not log(x / (1 - x)): at x = 0 and 1 the quotient's reverse-mode
    # chain multiplies an infinite partial by a zero one (NaN); here the derivative is
    # 1 / x + 1 / (1 - x), +inf at both ends, as PyTorch's
    return O.sub(O.log(x), O.log1p(O.neg(x)))


def _nan_ignoring(name):
    def method(self, other):
        o = other if isinstance(other, Tensor) else O.tensor_of(other)
        _guard_hook(self, name)  # a trace pins the values the choice is read from
        _guard_hook(o, name)
        a, b = np.asarray(self._v), np.asarray(o._v)
        with np.errstate(invalid="ignore"):
            # PyTorch's rule: x where it wins or ties, or where other is NaN
            keep = (a >= b if name == "fmax" else a <= b) | np.isnan(b)
        return O.where(keep, self, o)

    method.__name__ = name
    return method


_fmax = _nan_ignoring("fmax")
_fmax.__doc__ = """``x.fmax(other)``: the elementwise maximum ignoring NaN (NaN only where both
    are); the gradient goes to the value taken, to x at ties (as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, float("nan"), 3.0], requires_grad=True)
        >>> y = x.fmax(tg.tensor([2.0, 2.0, float("nan")])); y
        tensor([2., 2., 3.], grad_fn=<WhereBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0., 0., 1.])
    """
_fmin = _nan_ignoring("fmin")
_fmin.__doc__ = """``x.fmin(other)``: the elementwise minimum ignoring NaN (NaN only where both
    are); the gradient goes to the value taken, to x at ties.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, float("nan"), 3.0]).fmin(tg.tensor([2.0, 2.0, float("nan")]))
    tensor([1., 2., 3.])
    """


def _nan_mask(self, name):
    _guard_hook(self, name)  # a trace pins where the NaNs are
    v = np.asarray(self._v)
    return np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)


def _nansum(self, dim=None, keepdim=False, *, dtype=None):
    """``x.nansum(dim=None, keepdim=False)``: the sum with NaN counted as 0 (their gradient 0).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, float("nan")], [2.0, 3.0]]).nansum(dim=1)
    tensor([1., 5.])
    """
    x = self if dtype is None else convert(self, dtype)
    nan = _nan_mask(x, "nansum")
    dim = torch_axes(dim, x.shape, "Tensor.nansum")
    return O.sum(O.where(nan, 0.0, x) if nan.any() else x, dim, keepdim)


def _nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """``x.nanmean(dim=None, keepdim=False)``: the mean of the values that are not NaN (NaN
    where all are).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, float("nan")], [2.0, 3.0]]).nanmean(dim=1)
    tensor([1.0000, 2.5000])
    """
    x = self if dtype is None else convert(self, dtype)
    nan = _nan_mask(x, "nanmean")
    dim = torch_axes(dim, x.shape, "Tensor.nanmean")
    count = np.sum(~nan, axis=dim, keepdims=keepdim).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # all NaN: 0 / 0, NaN as PyTorch's
        return O.div(_nansum(x, dim, keepdim), count)


NanmedianResult = namedtuple("nanmedian", ("values", "indices"))


def _nanmedian(self, dim=None, keepdim=False):
    """``x.nanmedian()``: PyTorch's lower median of the values that are not NaN (NaN where all
    are); with ``dim``, the named tuple ``(values, indices)``.  The gradient goes to the
    element the median is (shared by equal ones without ``dim``, as ``median()``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([3.0, float("nan"), 1.0, 2.0, 4.0], requires_grad=True)
        >>> m = x.nanmedian(); m
        tensor(2., grad_fn=<AddBackward0>)
        >>> m.backward(); x.grad
        tensor([0., 0., 0., 1., 0.])
        >>> tg.tensor([[1.0, float("nan"), 0.0]]).nanmedian(dim=1)
        nanmedian(values=tensor([0.]), indices=tensor([2]))
    """
    nan = _nan_mask(self, "nanmedian")
    if dim is None:
        if self.numel() == 0:
            return _median_of_empty(self, "nanmedian")
        flat = O.reshape(self, (-1,))
        values = _sort(flat).values  # NaN sorted last
        return _shared_by_ties(flat, O.getitem(values, max((int((~nan).sum()) - 1) // 2, 0)))
    (d,) = _dims_of(self, dim, "nanmedian")
    if self.ndim == 0:
        return NanmedianResult(O.reshape(self, ()), _int_tensor(0))
    if self.shape[d] == 0:
        raise IndexError(f"nanmedian(): dim {d} of shape {self.shape} is empty")
    k = np.maximum((np.sum(~nan, axis=d, keepdims=True) - 1) // 2, 0)
    return _sorted_lanes_pick(self, d, k, keepdim, NanmedianResult)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_of(self, q, dim, keepdim, interpolation, name):
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"Tensor.{name}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}"
        )
    qs = np.asarray(q.numpy() if isinstance(q, Tensor) else q, dtype=np.float64)
    if qs.ndim > 1:
        raise RuntimeError(f"Tensor.{name}: q must be a number or a 1-D tensor, got {qs.shape}")
    if np.any((qs < 0) | (qs > 1)) or np.any(np.isnan(qs)):
        raise RuntimeError(f"Tensor.{name}: q values must be in the range [0, 1], got {qs}")
    if dim is not None:
        _dims_of(self, dim, name)  # checked on the input (a 0-d one takes dim 0 or -1)
    if 0 in self.shape:  # PyTorch refuses any empty input, whichever dim is reduced
        raise RuntimeError(
            f"Tensor.{name}: the input of shape {self.shape} is empty; a quantile needs at "
            "least one value (select a non-empty part first)"
        )
    x = O.reshape(self, (-1,)) if dim is None else self
    if x.ndim == 0:
        x = O.reshape(x, (1,))
    (d,) = (0,) if dim is None else _dims_of(x, dim, name)
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(f"Tensor.{name}: dim {d} of shape {x.shape} is empty")
    nan = _nan_mask(x, name)
    values = _sort(x, d).values  # NaN sorted last
    last = np.sum(~nan, axis=d, keepdims=True) - 1 if name == "nanquantile" else n - 1
    out = []
    for qk in qs.reshape(-1):
        # PyTorch's ranks: a lane with a NaN (quantile) reads its last element, NaN
        rank = np.maximum(qk * np.broadcast_to(last, nan.any(d, keepdims=True).shape), 0.0)
        if name == "quantile":
            rank = np.where(nan.any(d, keepdims=True), n - 1, rank)
        if interpolation in ("lower", "higher", "nearest"):
            rounded = {"lower": np.floor, "higher": np.ceil, "nearest": np.rint}[interpolation]
            out.append(O.gather_along(values, rounded(rank).astype(np.int64), d))
            continue
        below = np.trunc(rank).astype(np.int64)
        weight = np.full(rank.shape, 0.5) if interpolation == "midpoint" else rank - below
        lo = O.gather_along(values, below, d)
        hi = O.gather_along(values, np.ceil(rank).astype(np.int64), d)
        # PyTorch's lerp, from the nearer end: lo + w (hi - lo) below w = 0.5, hi - (1 - w)
        # (hi - lo) from there (so [-inf, 1] at w = 0.75 is -inf and [1, inf] at 0.5 is NaN)
        span = O.sub(hi, lo)
        near = weight >= 0.5
        out.append(
            O.where(
                near,
                O.sub(hi, O.mul(np.where(near, 1.0 - weight, 0.0), span)),
                O.add(lo, O.mul(np.where(near, 0.0, weight), span)),
            )
        )
    if keepdim:
        shape = (1,) * self.ndim if dim is None or self.ndim == 0 else out[0].shape
        out = [O.reshape(o, shape) for o in out]
    else:
        out = [O.squeeze(o, d) for o in out]
    return out[0] if qs.ndim == 0 else O.stack(out, 0)


def _quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``x.quantile(q, dim=None, keepdim=False, *, interpolation="linear")``: the ``q``-th
    quantiles (q a number or a 1-D tensor, whose dim comes first) of all elements or along
    ``dim``, as PyTorch's (NaN where a lane has a NaN); the gradient goes to the elements
    interpolated.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([4.0, 1.0, 3.0, 2.0], requires_grad=True)
        >>> y = x.quantile(0.5); y
        tensor(2.5000, grad_fn=<ReshapeBackward0>)
        >>> y.backward(); x.grad
        tensor([0.0000, 0.0000, 0.5000, 0.5000])
        >>> x.quantile(tg.tensor([0.25, 1.0]), interpolation="lower")
        tensor([1., 4.], grad_fn=<CatBackward0>)
    """
    return _quantile_of(self, q, dim, keepdim, interpolation, "quantile")


def _nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``x.nanquantile(q, dim=None, keepdim=False, *, interpolation="linear")``: the
    quantiles of the values that are not NaN (NaN where all are), as PyTorch's.

    >>> import tapegrad as tg
    >>> tg.tensor([4.0, float("nan"), 1.0, 3.0, 2.0]).nanquantile(0.5)
    tensor(2.5000)
    """
    return _quantile_of(self, q, dim, keepdim, interpolation, "nanquantile")


# ---- diagonals, products and matrix shapes -----------------------------------------------------


def _embedded(self, offset):
    """``self`` (..., n) on the ``offset`` diagonal of (..., m, m) zero matrices."""
    n, k = self.shape[-1], abs(offset)
    m = n + k
    batch = int(np.prod(self.shape[:-1], dtype=np.int64))
    rows = np.arange(n) + (k if offset < 0 else 0)
    at = (np.arange(batch)[:, None] * m * m + rows * m + rows + offset).reshape(-1)
    flat = O.scatter_add(O.reshape(self, (-1,)), at, (batch * m * m,))
    return O.reshape(flat, self.shape[:-1] + (m, m))


def _diag(self, diagonal=0):
    """``x.diag(diagonal=0)``: of a 1-D tensor, the square matrix with x on that diagonal
    (above the main one for ``diagonal`` > 0); of a 2-D tensor, a copy of that diagonal.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([1.0, 2.0]).diag(1)
        tensor([[0., 1., 0.],
                [0., 0., 2.],
                [0., 0., 0.]])
        >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).diag(-1)
        tensor([3.])
    """
    if self.ndim == 1:
        return _embedded(self, int(diagonal))
    if self.ndim == 2:
        return _diagonal(self, int(diagonal))[0]
    raise RuntimeError(f"Tensor.diag: a 1-D or 2-D tensor, got shape {self.shape}")


def _diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """``x.diag_embed(offset=0, dim1=-2, dim2=-1)``: each vector of x's last dim on the
    ``offset`` diagonal of a matrix over the new dims ``dim1``, ``dim2`` (zeros elsewhere).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).diag_embed()
        tensor([[[1., 0.],
                 [0., 2.]],
        <BLANKLINE>
                [[3., 0.],
                 [0., 4.]]])
    """
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.diag_embed: dim1 {dim1} and dim2 {dim2} are out of range for the 1-D "
            "result of a 0-d tensor (as PyTorch); reshape it to (1,) first"
        )
    out = _embedded(self, int(offset))
    d1, d2 = (d % out.ndim for d in (dim1, dim2))
    if not (-out.ndim <= dim1 < out.ndim and -out.ndim <= dim2 < out.ndim) or d1 == d2:
        raise IndexError(
            f"Tensor.diag_embed: dim1 {dim1} and dim2 {dim2} must be two distinct dims of "
            f"the {out.ndim}-D result"
        )
    return out if (d1, d2) == (out.ndim - 2, out.ndim - 1) else _movedim(out, (-2, -1), (d1, d2))


def _diagflat(self, offset=0):
    """``x.diagflat(offset=0)``: the flattened x on the ``offset`` diagonal of a matrix.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).diagflat()
    tensor([[1., 0.],
            [0., 2.]])
    """
    return _embedded(O.reshape(self, (-1,)), int(offset))


def _outer(self, vec2):
    """``x.outer(vec2)`` (also ``ger``): the outer product of two 1-D tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).outer(tg.tensor([1.0, 10.0]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    v = vec2 if isinstance(vec2, Tensor) else O.tensor_of(vec2)
    if self.ndim != 1 or v.ndim != 1:
        raise RuntimeError(f"Tensor.outer: two 1-D tensors, got {self.shape} and {v.shape}")
    return O.mul(O.reshape(self, (-1, 1)), O.reshape(v, (1, -1)))


def _inner(self, other):
    """``x.inner(other)``: sums of products over the last dims (the dot product of 1-D
    tensors), of shape ``x.shape[:-1] + other.shape[:-1]``.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).inner(tg.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    o = other if isinstance(other, Tensor) else O.tensor_of(other)
    if self.ndim == 0 or o.ndim == 0:
        return O.mul(self, o)
    n = self.shape[-1]
    if o.shape[-1] != n:
        raise RuntimeError(f"Tensor.inner: last dims differ, shapes {self.shape} and {o.shape}")
    a, b = O.reshape(self, (-1, n)), O.reshape(o, (-1, n))
    return O.reshape(O.matmul(a, O.transpose(b)), self.shape[:-1] + o.shape[:-1])


def _kron(self, other):
    """``x.kron(other)``: the Kronecker product (blocks ``x[i, j] * other``).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).kron(tg.tensor([[1.0], [10.0]]))
    tensor([[ 1.,  2.],
            [10., 20.]])
    """
    o = other if isinstance(other, Tensor) else O.tensor_of(other)
    nd = max(self.ndim, o.ndim)
    a_shape = (1,) * (nd - self.ndim) + self.shape
    b_shape = (1,) * (nd - o.ndim) + o.shape
    a = O.reshape(self, tuple(d for s in a_shape for d in (s, 1)))
    b = O.reshape(o, tuple(d for s in b_shape for d in (1, s)))
    return O.reshape(O.mul(a, b), tuple(p * q for p, q in zip(a_shape, b_shape, strict=True)))


def _cross(self, other, dim=None):
    """``x.cross(other, dim=None)``: the cross product of 3-vectors along ``dim`` (PyTorch's
    default: the first dim of size 3).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 0.0, 0.0]).cross(tg.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    """
    o = other if isinstance(other, Tensor) else O.tensor_of(other)
    shape = np.broadcast_shapes(self.shape, o.shape)
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"Tensor.cross: no dim of size 3 in shape {shape}")
    a = self if self.shape == shape else O.broadcast_to(self, shape)
    b = o if o.shape == shape else O.broadcast_to(o, shape)
    (d,) = _dims_of(a, dim, "cross")
    if shape[d] != 3:
        raise RuntimeError(f"Tensor.cross: dim {dim} of shape {shape} has size {shape[d]}, not 3")
    pre = (slice(None),) * d
    a0, a1, a2 = (O.getitem(a, pre + (i,)) for i in range(3))
    b0, b1, b2 = (O.getitem(b, pre + (i,)) for i in range(3))
    parts = [
        O.sub(O.mul(a1, b2), O.mul(a2, b1)),
        O.sub(O.mul(a2, b0), O.mul(a0, b2)),
        O.sub(O.mul(a0, b1), O.mul(a1, b0)),
    ]
    return O.stack(parts, d)


def _mT(self):
    """``x.mT``: the last two dims swapped (a batch of matrices transposed), a view.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3, 4).mT.shape
    (2, 4, 3)
    """
    if self.ndim < 2:
        raise RuntimeError(
            f"Tensor.mT: a matrix or a batch of matrices, got a {self.ndim}-D tensor"
        )
    return O.swapaxes(self, -2, -1)


def _H(self):  # noqa: N802 - PyTorch's name
    """``x.H``: a 2-D tensor transposed (conjugation does nothing to real values), a view.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).H
    tensor([[1.],
            [2.]])
    """
    if self.ndim == 0:
        return self
    if self.ndim != 2:
        raise RuntimeError(f"Tensor.H: a matrix (2-D tensor), got a {self.ndim}-D tensor")
    return O.transpose(self)


def _rot90(self, k=1, dims=(0, 1)):
    """``x.rot90(k=1, dims=(0, 1))``: x rotated by 90 degrees ``k`` times, from the first of
    ``dims`` towards the second (NumPy's and PyTorch's rot90).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).rot90()
    tensor([[2., 4.],
            [1., 3.]])
    """
    if len(dims) != 2 or self.ndim < 2:
        raise RuntimeError(f"Tensor.rot90: two dims of a tensor of 2+ dims, got {dims}")
    d0, d1 = _dims_of(self, dims, "rot90")
    if d0 == d1:
        raise RuntimeError(f"Tensor.rot90: the two dims must differ, got {dims}")
    k %= 4
    if k == 0:
        return O.reshape(self, self.shape)  # a copy, as PyTorch's
    if k == 2:
        return _flip(self, (d0, d1))
    if k == 1:
        return O.swapaxes(_flip(self, d1), d0, d1)
    return _flip(O.swapaxes(self, d0, d1), d1)


def _fliplr(self):
    """``x.fliplr()``: the columns (dim 1) in reverse order.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0]]).fliplr()
    tensor([[2., 1.]])
    """
    if self.ndim < 2:
        raise RuntimeError(f"Tensor.fliplr: needs at least 2 dims, got shape {self.shape}")
    return _flip(self, 1)


def _flipud(self):
    """``x.flipud()``: the rows (dim 0) in reverse order.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).flipud()
    tensor([2., 1.])
    """
    if self.ndim < 1:
        raise RuntimeError("Tensor.flipud: needs at least 1 dim, got a 0-d tensor")
    return _flip(self, 0)


def _msort(self):
    """``x.msort()``: the values sorted along dim 0 (``x.sort(dim=0).values``).

    >>> import tapegrad as tg
    >>> tg.tensor([[3.0, 1.0], [2.0, 4.0]]).msort()
    tensor([[2., 1.],
            [3., 4.]])
    """
    return _sort(self, 0).values


def _argwhere(self):
    """``x.argwhere()``: the (n, ndim) integer Tensor of the nonzero positions.

    >>> import tapegrad as tg
    >>> tg.tensor([0.0, 2.0, 3.0]).argwhere()
    tensor([[1],
            [2]])
    """
    return _nonzero(self)


def _searchsorted(self, values, *, out_int32=False, right=False, side=None, sorter=None):
    """``x.searchsorted(values, *, right=False, side=None, sorter=None)``: where ``values``
    would go in the sorted last dim of x (PyTorch's ``torch.searchsorted(x, values)``), an
    integer Tensor; ``right=True`` / ``side="right"`` after equal elements.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 3.0, 5.0]).searchsorted(tg.tensor([3.0, 6.0]))
    tensor([1, 3])
    >>> tg.tensor([1.0, 3.0, 5.0]).searchsorted(tg.tensor([3.0]), right=True)
    tensor([2])
    """
    if side is not None and side not in ("left", "right"):
        raise ValueError(f"Tensor.searchsorted: side must be 'left' or 'right', got {side!r}")
    if side is not None and right and side == "left":
        raise RuntimeError("Tensor.searchsorted: side='left' and right=True contradict")
    side = side or ("right" if right else "left")
    _guard_hook(self, "searchsorted")  # a trace pins the values the positions come from
    if isinstance(values, Tensor):
        _guard_hook(values, "searchsorted")
    seq = np.asarray(self._v)
    vals = np.asarray(values._v if isinstance(values, Tensor) else values)
    if sorter is not None:
        order = _index_of(sorter, "searchsorted")
        if order.shape != seq.shape:
            raise RuntimeError(
                f"Tensor.searchsorted: sorter of shape {order.shape} must have the sorted "
                f"sequence's shape {seq.shape} (as in PyTorch)"
            )
        if order.size and (order.min() < 0 or order.max() >= seq.shape[-1]):
            raise RuntimeError(
                f"Tensor.searchsorted: sorter index out of range: its values must be in "
                f"[0, {seq.shape[-1]}) (as in PyTorch; negative ones do not count from the end)"
            )
        seq = np.take_along_axis(seq, order, -1)
    if seq.ndim == 0:
        raise RuntimeError("Tensor.searchsorted: the sorted sequence must have at least 1 dim")
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=side)
    elif vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]:
        raise RuntimeError(
            f"Tensor.searchsorted: values of shape {vals.shape} must have the sorted "
            f"sequence's leading dims {seq.shape[:-1]}"
        )
    else:
        out = np.empty(vals.shape, np.int64)
        for lead in np.ndindex(seq.shape[:-1]):
            out[lead] = np.searchsorted(seq[lead], vals[lead], side=side)
    return new_tensor(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def _take_along_dim(self, indices, dim=None):
    """``x.take_along_dim(indices, dim=None)``: x's elements at ``indices`` along ``dim``
    (x and indices broadcast over the other dims), of the flattened x when ``dim`` is None.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    >>> x.take_along_dim(x.argmax(dim=1, keepdim=True), dim=1)
    tensor([[30.],
            [60.]])
    """
    idx = _index_of(indices, "take_along_dim")
    if dim is None:
        n = self.numel()
        return O.getitem(O.reshape(self, (-1,)), idx.reshape(-1) % n if n else idx.reshape(-1))
    (d,) = _dims_of(self, dim, "take_along_dim")
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.take_along_dim: dim {dim} of a 0-d tensor: it has no dim to take along "
            "(as PyTorch); leave dim out (x.take_along_dim(indices)) or reshape it first"
        )
    if idx.ndim != self.ndim:
        raise RuntimeError(
            f"Tensor.take_along_dim: indices of {idx.ndim} dims for a tensor of {self.ndim}"
        )
    n = self.shape[d]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"Tensor.take_along_dim: an index is out of range for dim {d}")
    one = tuple(1 if k == d else s for k, s in enumerate(self.shape))
    lead = np.broadcast_shapes(one, tuple(1 if k == d else s for k, s in enumerate(idx.shape)))
    x_shape = lead[:d] + (n,) + lead[d + 1 :]
    x = self if self.shape == x_shape else O.broadcast_to(self, x_shape)
    idx = np.broadcast_to(idx % n if n else idx, lead[:d] + (idx.shape[d],) + lead[d + 1 :])
    return _gather(x, None, idx, d)


def _new_empty(self, *size, dtype=None, requires_grad=False):
    """``x.new_empty(size)``: a new Tensor of x's dtype, filled with zeros (tapegrad never
    hands out uninitialised memory).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).new_empty(2)
    tensor([0., 0.])
    """
    return _new_zeros(self, *size, dtype=dtype, requires_grad=requires_grad)


def _ndimension(self):
    """``x.ndimension()``: the number of dims (``x.dim()``).

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).ndimension()
    2
    """
    return self.ndim


def _nbytes(self):
    """``x.nbytes``: the bytes of the elements (8 each for float64).

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).nbytes
    48
    """
    return self.numel() * self.dtype.itemsize


def _itemsize(self):
    """``x.itemsize``: the bytes of one element (8 for float64).

    >>> import tapegrad as tg
    >>> tg.zeros(2).itemsize
    8
    """
    return self.dtype.itemsize


def _split_at(name, dim_of, min_dims):
    def method(self, indices_or_sections):
        if self.ndim < min_dims:
            raise RuntimeError(
                f"Tensor.{name}: needs at least {min_dims} dims, got shape {self.shape}"
            )
        d = dim_of(self.ndim)
        arg = indices_or_sections
        if np.ndim(arg.numpy() if isinstance(arg, Tensor) else arg) == 0:
            if int(arg) <= 0 or self.shape[d] % int(arg):
                raise RuntimeError(
                    f"Tensor.{name}: {int(arg)} sections do not divide dim {d} of size "
                    f"{self.shape[d]} evenly (x.tensor_split allows unequal ones)"
                )
        return _tensor_split(self, arg, d)

    method.__name__ = name
    return method


_hsplit = _split_at("hsplit", lambda nd: 0 if nd == 1 else 1, 1)
_hsplit.__doc__ = """``x.hsplit(sections_or_indices)``: x split along dim 1 (dim 0 of a 1-D
    tensor) into equal sections or at indices, as views (PyTorch's and NumPy's hsplit).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0, 3.0, 4.0]]).hsplit(2)
    (tensor([[1., 2.]]), tensor([[3., 4.]]))
    """
_vsplit = _split_at("vsplit", lambda nd: 0, 2)
_vsplit.__doc__ = """``x.vsplit(sections_or_indices)``: x split along dim 0 (2+ dims).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0], [2.0], [3.0]]).vsplit([1])
    (tensor([[1.]]), tensor([[2.],
            [3.]]))
    """
_dsplit = _split_at("dsplit", lambda nd: 2, 3)
_dsplit.__doc__ = """``x.dsplit(sections_or_indices)``: x split along dim 2 (3+ dims).

    >>> import tapegrad as tg
    >>> tuple(p.shape for p in tg.zeros(1, 2, 4).dsplit(2))
    ((1, 2, 2), (1, 2, 2))
    """


def _baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """``x.baddbmm(batch1, batch2, *, beta=1, alpha=1)``: ``beta * x + alpha * (batch1 @
    batch2)`` for 3-D batches of matrices.

    >>> import tapegrad as tg
    >>> tg.ones(1, 1, 1).baddbmm(tg.ones(2, 1, 3), tg.ones(2, 3, 1), alpha=2).flatten()
    tensor([7., 7.])
    """
    return _plus_product(self, _bmm(O.tensor_of(batch1), batch2), beta, alpha)


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """``x.addbmm(batch1, batch2, *, beta=1, alpha=1)``: ``beta * x + alpha`` times the sum
    over the batch of ``batch1[i] @ batch2[i]``.

    >>> import tapegrad as tg
    >>> tg.zeros(1, 1).addbmm(tg.ones(2, 1, 3), tg.ones(2, 3, 1))
    tensor([[6.]])
    """
    return _plus_product(self, O.sum(_bmm(O.tensor_of(batch1), batch2), 0), beta, alpha)


def _addr(self, vec1, vec2, *, beta=1, alpha=1):
    """``x.addr(vec1, vec2, *, beta=1, alpha=1)``: ``beta * x + alpha * outer(vec1, vec2)``.

    >>> import tapegrad as tg
    >>> tg.ones(2, 2).addr(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 10.0]), beta=0.5)
    tensor([[1.5000, 10.5000],
            [2.5000, 20.5000]])
    """
    return _plus_product(self, _outer(O.tensor_of(vec1), vec2), beta, alpha)


_std_mean = _spread("std_mean", lambda x, d, k, c: (O.std(x, d, k, c), O.mean(x, d, k)))
_std_mean.__doc__ = """``x.std_mean(dim=None, unbiased=True, keepdim=False, *, correction=1)``:
    the tuple ``(x.std(...), x.mean(...))`` (PyTorch's ``torch.std_mean``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 3.0]).std_mean(correction=0)
    (tensor(1.), tensor(2.))
    """
_var_mean = _spread("var_mean", lambda x, d, k, c: (O.var(x, d, k, c), O.mean(x, d, k)))
_var_mean.__doc__ = """``x.var_mean(dim=None, unbiased=True, keepdim=False, *, correction=1)``:
    the tuple ``(x.var(...), x.mean(...))`` (PyTorch's ``torch.var_mean``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 3.0]).var_mean()
    (tensor(2.), tensor(2.))
    """


def _converter(name, dt):
    def method(self):
        return convert(self, dt)

    method.__name__ = name
    return method


_half = _converter("half", np.float16)
_half.__doc__ = """``x.half()``: the values as float16, for a Tensor that does not require grad
    (tapegrad differentiates float64 values only: one that requires grad is refused, as
    ``x.to(float16)``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 1.0 / 3.0]).half().dtype
    dtype('float16')
    """


def _bfloat16(self):
    """``x.bfloat16()``: refused: NumPy has no bfloat16 dtype (use ``x.double()``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).bfloat16()
    Traceback (most recent call last):
        ...
    TypeError: Tensor.bfloat16: NumPy, and so tapegrad, has no bfloat16 dtype; ...
    """
    raise TypeError(
        "Tensor.bfloat16: NumPy, and so tapegrad, has no bfloat16 dtype; tapegrad computes "
        "in float64 (x.double()), x.half() gives float16 values without a gradient"
    )


_short = _converter("short", np.int16)
_short.__doc__ = """``x.short()``: the values as int16, truncated toward zero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([2.7, -2.7]).short()
    tensor([ 2, -2], dtype=int16)
    """
_byte = _converter("byte", np.uint8)
_byte.__doc__ = """``x.byte()``: the values as uint8, truncated toward zero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([2.7, 200.0]).byte()
    tensor([  2, 200], dtype=uint8)
    """
_char = _converter("char", np.int8)
_char.__doc__ = """``x.char()``: the values as int8, truncated toward zero (no derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([2.7, -2.7]).char()
    tensor([ 2, -2], dtype=int8)
    """


# ---- reductions into index positions, index writes, windows, counting -----------------------

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_ROW_REDUCTION = {"sum": O.sum, "prod": O.prod, "mean": O.mean, "amax": O.amax, "amin": O.amin}


def _dtype_matches(self, other, name, what):
    """PyTorch's refusal of a source of another dtype; floats that take part in a gradient
    are all float64 once recorded (float32 ``x * 2`` of a float32 x that requires grad), so
    float sources are accepted there."""
    if not isinstance(other, Tensor) or other.dtype == self.dtype:
        return
    if (self._rg or other._rg) and self.dtype.kind == other.dtype.kind == "f":
        return
    raise RuntimeError(
        f"Tensor.{name}: {what} of dtype {other.dtype} into a tensor of dtype "
        f"{self.dtype}; the dtypes must match, as in PyTorch (cast with {what}.to(x.dtype))"
    )


def _scatter_reduce_values(v, flat, s, reduce, include_self):
    """NumPy's scatter_reduce of the flat positions ``flat`` (integer and float32 tensors,
    which carry no gradient): PyTorch's values, a floor division for an integer mean."""
    out = np.array(v).reshape(-1)
    s = np.asarray(s).reshape(-1)
    count = np.bincount(flat, minlength=out.size) if flat.size else np.zeros(out.size, int)
    hit = count > 0
    if not include_self:
        kind = out.dtype.kind
        if reduce in ("sum", "mean"):
            start = 0
        elif reduce == "prod":
            start = 1
        elif kind == "f":
            start = -np.inf if reduce == "amax" else np.inf
        elif kind == "b":
            start = reduce == "amin"
        else:
            info = np.iinfo(out.dtype)
            start = info.min if reduce == "amax" else info.max
        out[hit] = start
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply}
    ufunc = ufunc.get(reduce, np.maximum if reduce == "amax" else np.minimum)
    with np.errstate(over="ignore", invalid="ignore"):
        ufunc.at(out, flat, s.astype(out.dtype, copy=False))
        if reduce == "mean":
            n = (count + include_self)[hit]
            if out.dtype.kind in "iu":
                out[hit] = np.floor_divide(out[hit], n)
            else:
                out[hit] = out[hit] / n
    return out.reshape(np.shape(v))


def _scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """``x.scatter_reduce(dim, index, src, reduce, *, include_self=True)``: x with the
    elements ``src[i][j]`` reduced into row ``index[i][j]`` (dim 0) by ``reduce``: ``"sum"``,
    ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``; x's own element takes part where
    ``include_self`` (else the positions written get the reduction of src alone, the others
    keep x).  PyTorch's ``Tensor.scatter_reduce``.  Gradients flow to x and src as each
    reduction's: tied maxima (minima) share the gradient evenly, a product's with zeros is
    the product of the other factors.  (With ``include_self=False``, PyTorch also counts an
    untouched-by-src x element equal to the maximum among the ties, which gives src less
    than the whole gradient; tapegrad shares it among src's tied elements alone.)  An
    integer mean rounds down, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 5.0, 3.0])
        >>> src = tg.tensor([4.0, 2.0, 6.0, 0.5], requires_grad=True)
        >>> y = x.scatter_reduce(0, tg.tensor([1, 0, 1, 2]), src, "amax"); y
        tensor([2., 6., 3.], grad_fn=<ReshapeBackward0>)
        >>> y.sum().backward(); src.grad
        tensor([0., 1., 1., 0.])
        >>> x.scatter_reduce(0, tg.tensor([0, 0]), tg.tensor([2.0, 4.0]), "mean",
        ...                  include_self=False)
        tensor([3., 5., 3.])
    """
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(
            f"Tensor.scatter_reduce: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', "
            f"got {reduce!r} (PyTorch's names; 'max' is 'amax')"
        )
    if not isinstance(src, Tensor):
        src = O.tensor_of(src)
    _dtype_matches(self, src, "scatter_reduce", "src")
    flat, _ = _along(self, dim, index, "scatter_reduce")
    flat = np.asarray(flat, np.int64).reshape(-1)
    ishape = np.shape(_index_of(index, "scatter_reduce"))
    s = _source_part(src, ishape, "scatter_reduce")
    inc = bool(include_self)
    if self.dtype != np.float64 and not (self._rg or src._rg):
        # integers, float32 without a gradient: NumPy's, in x's dtype (a float32 x or src
        # that requires grad is recorded in float64, as every recorded op)
        _guard_hook(self, "scatter_reduce")
        _guard_hook(src, "scatter_reduce")
        part = np.asarray(src._v)[tuple(slice(0, n) for n in ishape)]
        out = _scatter_reduce_values(self._v, flat, part, reduce, inc)
        return new_tensor(out, dtype=out.dtype)
    x = O.reshape(self, (-1,))
    if flat.size == 0:  # nothing written (src still in the graph, its gradient empty)
        return _write(self, flat, s, add=True)
    uniq, inv, count = np.unique(flat, return_inverse=True, return_counts=True)
    order = np.argsort(inv, kind="stable")  # src's elements, grouped by the position
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    reduce_rows = _ROW_REDUCTION[reduce]
    rows, values = [], []
    for c in np.unique(count):  # one block per group size: no padding value to mix in
        r = np.flatnonzero(count == c)
        block = O.getitem(s, order[start[r][:, None] + np.arange(c)])
        if inc:
            block = O.concatenate([O.reshape(O.getitem(x, uniq[r]), (-1, 1)), block], axis=1)
        rows.append(r)
        values.append(reduce_rows(block, 1))
    r = np.concatenate(rows)
    v = values[0] if len(values) == 1 else O.concatenate(values)
    return O.reshape(O.setitem(x, uniq[r], v), self.shape)


def _refuse_ambiguous_writes(flat, values, name):
    """Positions written twice by a plain write (no accumulate): PyTorch keeps one of the
    writes, which one unspecified, and sends the gradient to every one of them.  Refused
    unless every write of a repeated position carries the same value (then the write is
    done once per position); returns the positions and values to write."""
    uniq, first = np.unique(flat, return_index=True)
    if uniq.size == flat.size:
        return flat, values
    if isinstance(values, Tensor) and values._rg:
        raise RuntimeError(
            f"Tensor.{name}: a position is written more than once with accumulate=False and "
            "values that require grad: which write PyTorch keeps is unspecified (and its "
            "gradient goes to every one of them); write each position once, or pass "
            "accumulate=True to add them"
        )
    if isinstance(values, Tensor):
        _guard_hook(values, name)
    vals = np.broadcast_to(
        np.asarray(values._v if isinstance(values, Tensor) else values), (flat.size,)
    )
    order = np.argsort(flat, kind="stable")
    fs, vs = flat[order], vals[order]
    same = fs[1:] == fs[:-1]
    with np.errstate(invalid="ignore"):
        clash = same & (vs[1:] != vs[:-1]) & ~(np.isnan(vs[1:]) & np.isnan(vs[:-1]))
    if np.any(clash):
        pos = int(fs[1:][clash][0])
        raise RuntimeError(
            f"Tensor.{name}: flat position {pos} is written more than once, with different "
            "values, and accumulate=False: PyTorch's result there is unspecified; write each "
            "position once, or pass accumulate=True to add them"
        )
    if isinstance(values, Tensor) and values.ndim:
        return uniq, O.getitem(values, first)
    return uniq, values


def _written_values(self, values, shape, name):
    """``values`` broadcast to ``shape`` (the positions written), flattened: a Tensor keeps
    its gradient; a number is checked to fit an integer tensor."""
    if isinstance(values, Tensor):
        _dtype_matches(self, values, name, "values")
        if values.shape != tuple(shape):
            try:
                np.broadcast_shapes(values.shape, shape)
                ok = np.broadcast_shapes(values.shape, shape) == tuple(shape)
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(
                    f"Tensor.{name}: shape mismatch: values of shape {values.shape} cannot "
                    f"be broadcast to the indexing result of shape {tuple(shape)}"
                )
            values = O.broadcast_to(values, shape)
        return O.reshape(values, (-1,))
    arr = np.asarray(values)
    if arr.ndim == 0:
        check_fits(values, self.dtype, f"Tensor.{name}")
        return values
    return _written_values(self, new_tensor(arr.astype(self.dtype)), shape, name)


def _index_put(self, indices, values, accumulate=False):
    """``x.index_put(indices, values, accumulate=False)``: a copy of x with ``values``
    (broadcast) written at ``x[indices]`` (``indices`` a tuple of integer or boolean index
    tensors, as NumPy's and PyTorch's advanced indexing; negative indices count from the
    end), or added there with ``accumulate=True`` (repeated positions add up).  PyTorch's
    ``Tensor.index_put``.  A position written twice without ``accumulate`` is refused unless
    the writes agree and carry no gradient (PyTorch's result there is unspecified).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.index_put((tg.tensor([0, 1]), tg.tensor([2, 0])), tg.tensor([5.0, 6.0]))
        tensor([[0., 0., 5.],
                [6., 0., 0.]])
        >>> x.index_put((tg.tensor([1, 1]),), tg.tensor(1.0), accumulate=True)
        tensor([[0., 0., 0.],
                [2., 2., 2.]])
    """
    if not isinstance(indices, (tuple, list)):
        raise TypeError(
            "Tensor.index_put: indices must be a tuple of index tensors, as in PyTorch "
            "(x.index_put((rows,), values), x.index_put((rows, cols), values))"
        )
    keys = []
    for k in indices:
        if k is None:
            raise TypeError(
                "Tensor.index_put: an index of None is not supported (as in PyTorch's "
                "index_put); index the whole dim with torch-style x[:, rows] = values instead"
            )
        a = np.asarray(k.numpy() if isinstance(k, Tensor) else k)
        if a.dtype == np.uint8:  # PyTorch reads a byte tensor as a mask
            a = a.astype(bool)
        if a.dtype.kind not in "iub":
            raise IndexError(
                f"Tensor.index_put: tensors used as indices must be long, int, byte or bool "
                f"tensors, got dtype {a.dtype}"
            )
        keys.append(a)
    used = sum(a.ndim if a.dtype == bool else 1 for a in keys)
    if used > self.ndim:
        raise IndexError(
            f"Tensor.index_put: too many indices for a tensor of dimension {self.ndim} (got {used})"
        )
    grid = np.arange(self.numel()).reshape(self.shape)
    try:
        pos = grid[tuple(keys)]
    except IndexError as e:
        raise IndexError(f"Tensor.index_put: {e} (shape {self.shape})") from None
    vals = _written_values(self, values, pos.shape, "index_put")
    flat = pos.reshape(-1)
    if not accumulate:
        flat, vals = _refuse_ambiguous_writes(flat, vals, "index_put")
    return _write(self, flat, vals, add=bool(accumulate))


def _torch_put(self, index, source, accumulate=False):
    """``x.put(index, source, accumulate=False)``: a copy of x with ``source``'s elements
    written at the flat (row-major) positions ``index`` (negative ones count from the end),
    or added there with ``accumulate=True``; ``source`` has as many elements as ``index``.
    PyTorch's ``Tensor.put``.  A position written twice without ``accumulate`` is refused
    unless the writes agree and carry no gradient (PyTorch's result there is unspecified).

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 3).put(tg.tensor([0, -1]), tg.tensor([1.0, 2.0]))
        tensor([[1., 0., 0.],
                [0., 0., 2.]])
        >>> tg.zeros(2).put(tg.tensor([1, 1]), tg.tensor([1.0, 2.0]), accumulate=True)
        tensor([0., 3.])
    """
    idx = _index_of(index, "put").reshape(-1)
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"Tensor.put: index {bad} is out of range for a tensor of {n} elements")
    if not isinstance(source, Tensor):
        source = O.tensor_of(np.asarray(source, dtype=self.dtype))
    if source.numel() != idx.size:
        raise IndexError(
            f"Tensor.put: source and index must have the same number of elements, got "
            f"{source.numel()} and {idx.size} (as in PyTorch)"
        )
    _dtype_matches(self, source, "put", "source")
    vals = O.reshape(source, (-1,))
    flat = idx % n if n else idx
    if not accumulate:
        flat, vals = _refuse_ambiguous_writes(flat, vals, "put")
    return _write(self, flat, vals, add=bool(accumulate))


def _unfold_key(self, dimension, size, step):
    """The advanced-indexing key of ``x.unfold(dimension, size, step)`` (one integer array
    per dim of x, broadcasting to the result's shape), and whether windows overlap."""
    if self.ndim == 0:
        if dimension not in (0, -1):
            raise IndexError(f"Tensor.unfold: dim {dimension} is out of range for a 0-d tensor")
        shape, d = (1,), 0
    else:
        (d,) = _dims_of(self, dimension, "unfold")
        shape = self.shape
    for name, value in (("size", size), ("step", step)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError(f"Tensor.unfold: {name} must be an int, got {value!r}")
    n = shape[d]
    if step <= 0:
        raise RuntimeError(f"Tensor.unfold: step is {step} but must be > 0")
    if not 0 <= size <= n:
        raise RuntimeError(
            f"Tensor.unfold: maximum size for tensor at dimension {d} is {n} but size is {size}"
        )
    count = (n - size) // step + 1
    nd = len(shape) + 1
    key = []
    for k, m in enumerate(shape):
        if k == d:
            win = np.arange(count)[:, None] * step + np.arange(size)
            key.append(win.reshape((1,) * d + (count,) + (1,) * (nd - d - 2) + (size,)))
        else:
            key.append(np.arange(m).reshape((1,) * k + (m,) + (1,) * (nd - k - 1)))
    if self.ndim == 0:  # PyTorch's: x itself as a 1-D tensor of ``size`` (0 or 1) elements
        return (), np.zeros(size, np.int64), True
    return tuple(key), None, step < size and count > 1


def _unfold(self, dimension, size, step):
    """``x.unfold(dimension, size, step)``: the windows of ``size`` elements along
    ``dimension``, ``step`` apart, as a new last dim (PyTorch's ``Tensor.unfold``); the
    gradient of an element is the sum over the windows holding it.  A view of x: a write
    into x shows in it, and a write into it reaches x where the windows do not overlap
    (``step >= size``); with overlapping windows it is refused (clone() it first).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.arange(5.0, requires_grad=True)
        >>> w = x.unfold(0, 3, 1); w
        tensor([[0., 1., 2.],
                [1., 2., 3.],
                [2., 3., 4.]], grad_fn=<IndexBackward0>)
        >>> w.sum().backward(); x.grad
        tensor([1., 2., 3., 2., 1.])
    """
    key, zero_d, _ = _unfold_key(self, dimension, size, step)
    if self.ndim == 0:
        return O.getitem(O.reshape(self, (1,)), zero_d)
    return O.getitem(self, key)


def _bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """``tg.bucketize(input, boundaries, *, out_int32=False, right=False)``: the index of
    the bucket of each element of ``input`` among the sorted 1-D ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x <
    boundaries[i]``), an integer Tensor with no gradient.  PyTorch's ``torch.bucketize``.

    >>> import tapegrad as tg
    >>> tg.bucketize(tg.tensor([0.5, 3.0, 9.0]), tg.tensor([1.0, 3.0, 5.0]))
    tensor([0, 1, 3])
    >>> tg.bucketize(tg.tensor([3.0]), tg.tensor([1.0, 3.0, 5.0]), right=True)
    tensor([2])
    """
    b = boundaries if isinstance(boundaries, Tensor) else O.tensor_of(boundaries)
    if b.ndim != 1:
        raise RuntimeError(
            f"bucketize: boundaries must be a 1-D tensor, got shape {b.shape} (as in "
            "PyTorch); for one sorted sequence per row use tg.searchsorted"
        )
    return _searchsorted(b, input, out_int32=out_int32, right=right)


UniqueResult = namedtuple("unique", ("values", "inverse", "counts"))


def _no_gradient_through(self, out, name):
    """``out`` (values read from ``self``) with a gradient that raises, as PyTorch's: the
    values of unique / unique_consecutive require grad when x does, and a backward through
    them fails ("the derivative ... is not implemented"), rather than giving x nothing."""
    if not (out._rg and hasattr(out, "register_hook")):
        return out

    def refuse(grad):
        raise RuntimeError(
            f"Tensor.{name}: the derivative of {name} is not implemented (nor in PyTorch): "
            f"its values have no gradient; compute them from x.detach(), or gather the "
            f"elements you need from x (x[indices]) to differentiate them"
        )

    out.register_hook(refuse)
    return out


def _unique_result(
    self, values_idx, out_shape, inverse, counts, return_inverse, return_counts, name, d
):
    if d is None:
        values = (
            O.getitem(O.reshape(self, (-1,)), values_idx) if self.numel() else O.reshape(self, (0,))
        )
    else:
        values = O.getitem(self, (slice(None),) * d + (values_idx,))
    if self._rg:  # (float32 too: its recorded values are float64)
        if STATE.transforms:  # a transform's derivative would run through the values
            raise RuntimeError(
                f"Tensor.{name}: the derivative of {name} is not implemented (nor in "
                "PyTorch); inside tg.grad & co. compute it from x.detach()"
            )
        values = _no_gradient_through(self, values, name)
    elif isinstance(values, Tensor) and values._rg:
        values = values.detach()
    out = [values]
    if return_inverse:
        out.append(_int_tensor(inverse.reshape(out_shape)))
    if return_counts:
        out.append(_int_tensor(counts))
    return out[0] if len(out) == 1 else tuple(out)


def _lanes(self, dim, name):
    """x's slices along ``dim`` as rows of a 2-D array (for unique over slices)."""
    (d,) = _dims_of(self, dim, name)
    v = np.moveaxis(np.asarray(self._v), d, 0)
    return d, v.reshape(v.shape[0], int(np.prod(v.shape[1:], dtype=np.int64)))


def _unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """``x.unique(sorted=True, return_inverse=False, return_counts=False, dim=None)``: the
    distinct elements of x, ascending (``dim``: the distinct slices along ``dim``, in
    lexicographic order), with the index of each element's value in them
    (``return_inverse``, x's shape) and how often each occurs (``return_counts``), as
    PyTorch's ``Tensor.unique``.  NaNs are each distinct.  Not differentiable, as in PyTorch:
    a backward through the values raises.

    >>> import tapegrad as tg
    >>> tg.tensor([3, 1, 3, 2]).unique(return_inverse=True, return_counts=True)
    (tensor([1, 2, 3]), tensor([2, 0, 2, 1]), tensor([1, 1, 2]))
    """
    _guard_hook(self, "unique")
    if dim is None:
        v = np.asarray(self._v).reshape(-1)
        _, first, inverse, counts = np.unique(
            v, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
        )
        shape = self.shape
        return _unique_result(
            self, first, shape, inverse, counts, return_inverse, return_counts, "unique", None
        )
    if self.ndim == 0:
        raise IndexError(
            f"Tensor.unique: dim {dim} is given but the tensor has no dimensions (as in "
            "PyTorch); leave dim out"
        )
    d, rows = _lanes(self, dim, "unique")
    if rows.shape[0] and not rows.shape[1]:
        raise RuntimeError(
            f"Tensor.unique(dim={dim}): the tensor of shape {self.shape} has an empty dim other "
            "than dim, so its slices cannot be compared (as in PyTorch)"
        )
    if rows.shape[0] == 0:
        first = inverse = counts = np.zeros(0, np.int64)
    else:
        order = np.lexsort(rows.T[::-1])  # lexicographic, the first slice first among equals
        srt = rows[order]
        new = np.ones(len(order), bool)
        new[1:] = np.any(srt[1:] != srt[:-1], axis=1)
        group = np.cumsum(new) - 1
        first = order[new]
        inverse = np.empty(len(order), np.int64)
        inverse[order] = group
        counts = np.bincount(group)
    return _unique_result(
        self,
        first,
        (rows.shape[0],),
        inverse,
        counts,
        return_inverse,
        return_counts,
        "unique",
        d,
    )


def _unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """``x.unique_consecutive(return_inverse=False, return_counts=False, dim=None)``: x with
    each run of equal consecutive elements (``dim``: slices along ``dim``) kept once, with
    each element's run (``return_inverse``) and the run lengths (``return_counts``), as
    PyTorch's.  Not differentiable, as in PyTorch: a backward through the values raises.

    >>> import tapegrad as tg
    >>> tg.tensor([1, 1, 2, 2, 3, 1]).unique_consecutive(return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 1]))
    """
    _guard_hook(self, "unique_consecutive")
    if dim is None:
        rows, d, shape = np.asarray(self._v).reshape(-1, 1), None, self.shape
    elif self.ndim == 0:
        raise IndexError(
            f"Tensor.unique_consecutive: dim {dim} is given but the tensor has no "
            "dimensions (as in PyTorch); leave dim out"
        )
    else:
        d, rows = _lanes(self, dim, "unique_consecutive")
        shape = (rows.shape[0],)
    n = rows.shape[0]
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = np.any(rows[1:] != rows[:-1], axis=1) if rows.shape[1] else False
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    counts = np.diff(np.append(first, n))
    return _unique_result(
        self,
        first,
        shape,
        group,
        counts,
        return_inverse,
        return_counts,
        "unique_consecutive",
        d,
    )


def _histc(self, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """``x.histc(bins=100, min=0, max=0)``: the counts of x's elements in ``bins`` equal
    bins over ``[min, max]`` (x's own smallest and largest element when min and max are
    equal; elements outside are left out, the last bin holds ``max``), of x's float dtype
    and with no gradient, as PyTorch's ``Tensor.histc``.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 1.0, 4.0]).histc(bins=3, min=1, max=4)
    tensor([2., 1., 1.])
    """
    v = np.asarray(self._v)
    if v.dtype.kind != "f":
        raise RuntimeError(
            f"Tensor.histc: not implemented for dtype {v.dtype} (as in PyTorch); count a "
            "float tensor: x.double().histc(...)"
        )
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or bins <= 0:
        raise RuntimeError(f"Tensor.histc: bins must be an int > 0, got {bins!r}")
    _guard_hook(self, "histc")
    lo, hi = float(min), float(max)
    if lo == hi and v.size:
        lo, hi = float(np.min(v)), float(np.max(v))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(
            f"Tensor.histc: range of [{lo}, {hi}] is not finite (as in PyTorch; x holds NaN or "
            "inf?): give min= and max="
        )
    if not lo < hi:
        raise RuntimeError(f"Tensor.histc: max must be larger than min, got [{lo}, {hi}]")
    x = v.reshape(-1)
    with np.errstate(invalid="ignore"):
        x = x[(x >= lo) & (x <= hi)]
    # PyTorch's arithmetic (in x's dtype): the bin of e is int((e - lo) * bins / (hi - lo))
    lo_t, hi_t = v.dtype.type(lo), v.dtype.type(hi)
    pos = ((x - lo_t) * bins / (hi_t - lo_t)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return new_tensor(np.bincount(pos, minlength=bins).astype(v.dtype), dtype=v.dtype)


ModeResult = namedtuple("mode", ("values", "indices"))


def _mode(self, dim=-1, keepdim=False):
    """``x.mode(dim=-1, keepdim=False)``: the named tuple ``(values, indices)`` of the most
    frequent value along ``dim`` (the smallest of equally frequent ones) and an index of it
    (its last occurrence, as PyTorch's on the CPU for short lanes); the gradient goes to
    the element indexed, as PyTorch's.  A NaN counts as distinct from every value.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[2.0, 1.0, 2.0], [3.0, 1.0, 1.0]], requires_grad=True)
        >>> x.mode(1)
        mode(values=tensor([2., 1.], grad_fn=<ReshapeBackward0>), indices=tensor([2, 2]))
    """
    v = np.asarray(self._v)
    wrap_dim(dim, v.shape, "Tensor.mode")
    if v.ndim == 0:
        return ModeResult(O.reshape(self, ()), _int_tensor(0))
    (d,) = _dims_of(self, dim, "mode")
    if v.shape[d] == 0:
        raise IndexError(
            f"Tensor.mode(dim={dim}): the dimension is empty (shape {v.shape}); there is no "
            "element to pick"
        )
    _guard_hook(self, "mode")
    lanes = np.moveaxis(v, d, -1)
    n = lanes.shape[-1]
    order = np.argsort(lanes, axis=-1, kind="stable")
    srt = np.take_along_axis(lanes, order, -1)
    with np.errstate(invalid="ignore"):
        end = np.ones(srt.shape, bool)  # the last element of each run of equal values
        end[..., :-1] = srt[..., 1:] != srt[..., :-1]
    pos = np.arange(n)
    run_start = np.maximum.accumulate(
        np.where(np.concatenate([np.ones(srt.shape[:-1] + (1,), bool), end[..., :-1]], -1), pos, 0),
        axis=-1,
    )
    length = np.where(end, pos - run_start + 1, 0)
    best = np.argmax(length, axis=-1)[..., None]  # the first longest run: smallest value
    idx = np.take_along_axis(order, best, -1)  # its last element (a stable sort): the last
    idx = np.moveaxis(idx, -1, d)  # occurrence
    values = _gather(self, v, idx, d)
    if keepdim:
        return ModeResult(values, _int_tensor(idx))
    return ModeResult(O.squeeze(values, d), _int_tensor(np.squeeze(idx, d)))


# ---- PyTorch's Tensor methods composed of the differentiable ops above ----------------------


def _value(a):
    return np.asarray(a._v if isinstance(a, Tensor) else a)


def _absolute(self):
    """``x.absolute()``: PyTorch's other name of ``x.abs()`` (``Tensor.absolute``).

    >>> import tapegrad as tg
    >>> tg.tensor([-1.5, 2.0]).absolute()
    tensor([1.5000, 2.0000])
    """
    return O.abs_(self)


def _adjoint(self):
    """``x.adjoint()``: PyTorch's ``Tensor.adjoint``, the conjugate transpose of the last two
    dims (a real Tensor's: its transpose ``x.mT``, a view); 0-D and 1-D tensors are refused.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).adjoint()
    tensor([[1., 3.],
            [2., 4.]])
    """
    if self.ndim < 2:
        raise RuntimeError(
            f"Tensor.adjoint: only supported on matrices or batches of matrices (as in "
            f"PyTorch), got a {self.ndim}-D tensor; use x.unsqueeze(0) or x.conj() instead"
        )
    return O.swapaxes(self, -1, -2)


def _copysign(self, other):
    """``x.copysign(other)``: PyTorch's ``Tensor.copysign``, ``|x|`` with the sign of
    ``other`` (its sign bit: -0.0 is negative); a float result.  The gradient reaches x
    (``copysign(1, x) * copysign(1, other)``, 0 where x is 0, as PyTorch's); ``other`` gets
    a zero gradient, as in PyTorch.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    >>> y = x.copysign(tg.tensor([-1.0, 1.0, -0.0])); y
    tensor([-1.,  2., -3.], grad_fn=<MulBackward0>)
    >>> y.sum().backward(); x.grad
    tensor([-1., -1., -1.])
    """
    o = other if isinstance(other, Tensor) else new_tensor(np.asarray(other, np.float64))
    # the sign read through comparisons, which a trace guards (a replay where other's signs
    # differ records again); a zero or NaN's sign bit only a pin of other's value guards
    negative = _value(o < 0.0).astype(bool)
    v = _value(o)
    odd = _value(o == 0.0).astype(bool) | (v != v)
    if odd.any():
        _guard_hook(o, "copysign")
        negative = negative | (odd & np.signbit(v))
    a = O.abs_(self)
    if a.dtype.kind != "f":
        a = convert(a, np.float64)
    out = O.mul(a, np.where(negative, -1.0, 1.0))
    if o._rg:  # other gets a zero gradient, as PyTorch's (the value is out's, -0.0 kept)
        out = O.where(np.zeros(np.shape(_value(out)), bool), o, out)
    return out


def _heaviside(self, values):
    """``x.heaviside(values)``: PyTorch's ``Tensor.heaviside``, the step function: 0 where
    x < 0, 1 where x > 0, ``values`` where x is 0 (x and ``values`` of one dtype, as
    PyTorch requires).  Piecewise constant: no gradient.

    >>> import tapegrad as tg
    >>> tg.tensor([-1.5, 0.0, 2.0]).heaviside(tg.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    if not isinstance(values, Tensor):
        raise TypeError(
            "Tensor.heaviside: values must be a Tensor (as in PyTorch), got "
            f"{type(values).__name__}; write x.heaviside(tg.tensor(v))"
        )
    if values.dtype != self.dtype:
        raise RuntimeError(
            f"Tensor.heaviside: x and values must have the same dtype (as in PyTorch), got "
            f"{self.dtype} and {values.dtype}; convert one, e.g. values.to(x.dtype)"
        )
    _guard_hook(self, "heaviside")  # (a constant of x's values: a trace pins them)
    _guard_hook(values, "heaviside")
    v, w = _value(self), _value(values)
    out = np.where(v == 0, w, (v > 0).astype(v.dtype))
    out = np.where(np.isnan(v), v, out) if v.dtype.kind == "f" else out
    return new_tensor(np.asarray(out, dtype=v.dtype), dtype=v.dtype)


FrexpResult = namedtuple("frexp", ("mantissa", "exponent"))


def _frexp(self):
    """``x.frexp()``: PyTorch's ``Tensor.frexp``, the named tuple ``(mantissa, exponent)``
    with ``x = mantissa * 2 ** exponent``, ``0.5 <= |mantissa| < 1`` (int32 exponents); the
    gradient reaches x through the mantissa (``2 ** -exponent``).

    >>> import tapegrad as tg
    >>> tg.tensor([8.0, -0.75]).frexp()
    frexp(mantissa=tensor([0.5000, -0.7500]), exponent=tensor([4, 0], dtype=int32))
    """
    if self.dtype.kind != "f":
        raise RuntimeError(
            f"Tensor.frexp: only floating-point dtypes are supported (as in PyTorch), got "
            f"{self.dtype}; write x.double().frexp()"
        )
    _guard_hook(self, "frexp")
    _, e = np.frexp(_value(self))
    e = np.asarray(e, dtype=np.int32)
    return FrexpResult(O.mul(self, np.ldexp(1.0, -e)), new_tensor(e, dtype=np.int32))


def _ldexp(self, other):
    """``x.ldexp(other)``: PyTorch's ``Tensor.ldexp``, ``x * 2 ** other`` (a float result);
    gradients reach x and a float ``other`` that requires grad.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 3.0]).ldexp(tg.tensor([2, -1]))
    tensor([4.0000, 1.5000])
    """
    if not isinstance(other, Tensor):
        raise TypeError(
            "Tensor.ldexp: other must be a Tensor (as in PyTorch), got "
            f"{type(other).__name__}; write x.ldexp(tg.tensor(e))"
        )
    if other.dtype.kind != "f":
        other = convert(other, np.float64)
    x = self if self.dtype.kind == "f" else convert(self, np.float64)
    return O.mul(x, O.power(2.0, other))


def _nextafter(self, other):
    """``x.nextafter(other)``: PyTorch's ``Tensor.nextafter``, the next float after x in the
    direction of ``other`` (x and ``other`` floats of one dtype).  No gradient.

    >>> import tapegrad as tg
    >>> (tg.tensor([1.0]).nextafter(tg.tensor([2.0])) - 1.0).item() == 2.0 ** -52
    True
    """
    _guard_hook(self, "nextafter")  # (a constant of the values: a trace pins them)
    if isinstance(other, Tensor):
        _guard_hook(other, "nextafter")
    w = _value(other)
    if self.dtype.kind != "f" or (isinstance(other, Tensor) and other.dtype != self.dtype):
        raise RuntimeError(
            f"Tensor.nextafter: x and other must be floats of one dtype (as in PyTorch), got "
            f"{self.dtype} and {w.dtype}; convert them with .double()"
        )
    out = np.nextafter(_value(self), w.astype(self.dtype))
    return new_tensor(np.asarray(out, dtype=self.dtype), dtype=self.dtype)


def _integer_op(name, ufunc, bools=True):
    """``x.<name>(other)`` of integer (or boolean) Tensors: NumPy's ``ufunc``, no gradient;
    a float Tensor is refused, as PyTorch refuses it."""

    def method(self, other):
        for a in (self, other):
            kind = _value(a).dtype.kind
            if kind not in ("iub" if bools else "iu") and not (
                not isinstance(a, Tensor) and isinstance(a, (int, np.integer, bool))
            ):
                raise RuntimeError(
                    f"Tensor.{name}: takes integer{' or boolean' if bools else ''} tensors "
                    f"(as in PyTorch), got dtype {_value(a).dtype}; convert with x.long()"
                )
        v = _value(self)
        out = np.asarray(ufunc(v, np.asarray(_value(other)).astype(v.dtype, copy=False)))
        return new_tensor(out.astype(v.dtype, copy=False), dtype=v.dtype)

    method.__name__ = name
    return method


_gcd = _integer_op("gcd", np.gcd, bools=False)
_gcd.__doc__ = """``x.gcd(other)``: PyTorch's ``Tensor.gcd``, the elementwise greatest common
    divisor of integer tensors (non-negative).

    >>> import tapegrad as tg
    >>> tg.tensor([6, 4, -3]).gcd(tg.tensor([4, 6, 2]))
    tensor([2, 2, 1])
    """
_lcm = _integer_op("lcm", np.lcm, bools=False)
_lcm.__doc__ = """``x.lcm(other)``: PyTorch's ``Tensor.lcm``, the elementwise least common
    multiple of integer tensors (non-negative).

    >>> import tapegrad as tg
    >>> tg.tensor([6, 4, -3]).lcm(tg.tensor([4, 6, 2]))
    tensor([12, 12,  6])
    """
_bitwise_and = _integer_op("bitwise_and", np.bitwise_and)
_bitwise_and.__doc__ = """``x.bitwise_and(other)``: PyTorch's ``Tensor.bitwise_and``, ``x & other``
    of integer or boolean tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([12, 10]).bitwise_and(tg.tensor([10, 6]))
    tensor([8, 2])
    """
_bitwise_or = _integer_op("bitwise_or", np.bitwise_or)
_bitwise_or.__doc__ = """``x.bitwise_or(other)``: PyTorch's ``Tensor.bitwise_or``, ``x | other``
    of integer or boolean tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([12, 10]).bitwise_or(tg.tensor([10, 6]))
    tensor([14, 14])
    """
_bitwise_xor = _integer_op("bitwise_xor", np.bitwise_xor)
_bitwise_xor.__doc__ = """``x.bitwise_xor(other)``: PyTorch's ``Tensor.bitwise_xor``, ``x ^ other``
    of integer or boolean tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([12, 10]).bitwise_xor(tg.tensor([10, 6]))
    tensor([ 6, 12])
    """
_bitwise_left_shift = _integer_op("bitwise_left_shift", np.left_shift, bools=False)
_bitwise_left_shift.__doc__ = """``x.bitwise_left_shift(other)``: PyTorch's
    ``Tensor.bitwise_left_shift``, ``x << other`` of integer tensors.

    >>> import tapegrad as tg
    >>> tg.tensor([3, -4]).bitwise_left_shift(tg.tensor([2, 1]))
    tensor([12, -8])
    """
_bitwise_right_shift = _integer_op("bitwise_right_shift", np.right_shift, bools=False)
_bitwise_right_shift.__doc__ = """``x.bitwise_right_shift(other)``: PyTorch's
    ``Tensor.bitwise_right_shift``, ``x >> other`` of integer tensors (arithmetic shift).

    >>> import tapegrad as tg
    >>> tg.tensor([12, -8]).bitwise_right_shift(tg.tensor([2, 1]))
    tensor([ 3, -4])
    """


def _bitwise_not(self):
    """``x.bitwise_not()``: PyTorch's ``Tensor.bitwise_not``, ``~x`` of an integer tensor
    (logical not of a boolean one); a float tensor is refused.

    >>> import tapegrad as tg
    >>> tg.tensor([0, 5]).bitwise_not(), tg.tensor([True, False]).bitwise_not()
    (tensor([-1, -6]), tensor([False,  True]))
    """
    v = _value(self)
    if v.dtype.kind not in "iub":
        raise RuntimeError(
            f"Tensor.bitwise_not: takes integer or boolean tensors (as in PyTorch), got dtype "
            f"{v.dtype}; convert with x.long()"
        )
    return new_tensor(np.asarray(np.invert(v)), dtype=v.dtype)


def _square_matrices(self, name):
    if self.ndim < 2 or self.shape[-1] != self.shape[-2]:
        raise RuntimeError(
            f"Tensor.{name}: expects a batch of square matrices (as in PyTorch), got shape "
            f"{self.shape}"
        )
    if self.dtype.kind != "f":
        raise RuntimeError(
            f"Tensor.{name}: expects a floating-point tensor, got dtype {self.dtype}; write "
            f"x.double().{name}(...)"
        )


def _matrix_power(self, n):
    """``x.matrix_power(n)``: PyTorch's ``Tensor.matrix_power``, the ``n``-th power of a
    square matrix (or of each of a batch) by repeated squaring; ``n = 0`` gives identities,
    a negative ``n`` the power of the inverse.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1.0, 1.0], [0.0, 2.0]], requires_grad=True)
    >>> y = x.matrix_power(3); y
    tensor([[1., 7.],
            [0., 8.]], grad_fn=<MmBackward0>)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"Tensor.matrix_power: n must be an int, got {n!r}")
    if self.ndim < 2 or self.shape[-1] != self.shape[-2]:
        raise RuntimeError(
            f"Tensor.matrix_power: expects a batch of square matrices (as in PyTorch), got "
            f"shape {self.shape}"
        )
    n = int(n)
    if n == 0:  # identities (in the graph when x is, with gradient 0, as PyTorch's)
        eye = np.broadcast_to(np.eye(self.shape[-1], dtype=self.dtype), self.shape)
        if not self._rg:
            return new_tensor(np.array(eye), dtype=self.dtype)
        return O.where(np.ones(self.shape, dtype=bool), eye, self)
    if n < 0:
        self = np.linalg.inv(self)
        n = -n
    result, base = None, self
    while True:
        if n & 1:
            result = base if result is None else O.matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = O.matmul(base, base)


def _matrix_exp(self):
    """``x.matrix_exp()``: PyTorch's ``Tensor.matrix_exp``, the matrix exponential of a
    square matrix (or of each of a batch), by scaling and squaring a degree-18 Taylor
    polynomial, all of differentiable matrix products (derivatives of every order).

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 1.0], [0.0, 0.0]]).matrix_exp()
    tensor([[1., 1.],
            [0., 1.]])
    """
    _square_matrices(self, "matrix_exp")
    n = self.shape[-1]
    v = np.asarray(self._v)
    if v.size == 0:
        return O.reshape(self, self.shape)
    norm = float(np.max(np.sum(np.abs(v), axis=-2))) if np.all(np.isfinite(v)) else 0.0
    _guard_hook(self, "matrix_exp")  # (the number of squarings is read from the value)
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    a = O.mul(self, 2.0**-s) if s else self
    eye = np.broadcast_to(np.eye(n), self.shape)
    term, total = a, O.add(a, eye)
    for k in range(2, 19):
        term = O.mul(O.matmul(term, a), 1.0 / k)
        total = O.add(total, term)
    for _ in range(s):
        total = O.matmul(total, total)
    return total


def _renorm(self, p, dim, maxnorm):
    """``x.renorm(p, dim, maxnorm)``: PyTorch's ``Tensor.renorm``: each slice of x along
    ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm`` (by
    ``maxnorm / (norm + 1e-7)``, as PyTorch's), the others kept.

    >>> import tapegrad as tg
    >>> tg.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    if self.dtype.kind != "f":
        raise RuntimeError(f"Tensor.renorm: expects a floating-point tensor, got {self.dtype}")
    p = scalar_argument(p, "renorm: p")
    if p <= 0:
        raise RuntimeError(f"Tensor.renorm: non-positive norm p={p} not supported (PyTorch's)")
    maxnorm = scalar_argument(maxnorm, "renorm: maxnorm")
    if maxnorm < 0:
        raise RuntimeError(f"Tensor.renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if self.ndim <= 1:
        raise RuntimeError(
            f"Tensor.renorm: needs at least 2 dimensions (as in PyTorch), got {self.ndim}"
        )
    (d,) = _dims_of(self, dim, "renorm")
    others = tuple(i for i in range(self.ndim) if i != d)
    norm = _norm(self, p, others, True)
    big = O.truth(norm > maxnorm)
    factor = O.where(big, O.div(maxnorm, O.add(norm, 1e-7)), 1.0)
    return O.mul(self, factor)


def _vdot(self, other):
    """``x.vdot(y)``: PyTorch's ``Tensor.vdot``, the dot product of two 1-D tensors of one
    dtype (the conjugate of x's, which a real tensor is).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).vdot(tg.tensor([3.0, 4.0]))
    tensor(11.)
    """
    w = _value(other)
    if self.ndim != 1 or w.ndim != 1:
        raise RuntimeError(
            f"Tensor.vdot: 1D tensors expected (as in PyTorch), got {self.ndim}D and {w.ndim}D "
            "tensors; flatten them first (x.flatten().vdot(y.flatten()))"
        )
    if self.shape != w.shape:
        raise RuntimeError(
            f"Tensor.vdot: inconsistent tensor size, x has {self.shape[0]} elements and y "
            f"has {w.shape[0]}"
        )
    if w.dtype != self.dtype:
        raise RuntimeError(
            f"Tensor.vdot: expected both vectors to have the same dtype, got {self.dtype} and "
            f"{w.dtype}"
        )
    return O.dot(self, other)


def _dist(self, other, p=2):
    """``x.dist(y, p=2)``: PyTorch's ``Tensor.dist``, the ``p``-norm of ``x - y`` (broadcast),
    gradient 0 where they are equal (as PyTorch's).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).dist(tg.tensor([4.0, 6.0]))
    tensor(5.)
    """
    return _norm(O.sub(self, other), p)


def _cov(self, *, correction=1, fweights=None, aweights=None):
    """``x.cov(correction=1, fweights=None, aweights=None)``: PyTorch's ``Tensor.cov``, the
    covariance matrix of the variables in the rows of x (observations in columns; a 1-D x is
    one variable, a 0-D result), as ``np.cov(x, ddof=correction, ...)``.

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).cov()
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if self.ndim > 2:
        raise RuntimeError(f"Tensor.cov: expected a tensor of at most 2 dims, got {self.ndim}")
    if isinstance(correction, bool) or not isinstance(correction, (int, np.integer)):
        raise TypeError(f"Tensor.cov: correction must be an int, got {correction!r}")
    if fweights is not None:
        fw = _value(fweights)
        if fw.dtype.kind not in "iu":
            raise RuntimeError(f"Tensor.cov: fweights must be integers, got {fw.dtype}")
        if np.any(fw < 0):
            raise RuntimeError("Tensor.cov: fweights cannot be negative")
    if aweights is not None and np.any(_value(aweights) < 0):
        raise RuntimeError("Tensor.cov: aweights cannot be negative")
    x = self if self.dtype.kind == "f" else convert(self, np.float64)
    x = O.reshape(x, (1, -1)) if x.ndim < 2 else x
    n = x.shape[1]
    if fweights is None and aweights is None:
        w, w_sum = None, float(n)
        avg = O.mean(x, 1, True)
    else:
        w = 1.0
        for given in (fweights, aweights):
            if given is not None:
                if _value(given).shape != (n,):
                    raise RuntimeError(
                        f"Tensor.cov: weights must be 1-D with {n} elements (the observations), "
                        f"got shape {_value(given).shape}"
                    )
                g = given if isinstance(given, Tensor) else O.tensor_of(given)
                w = O.mul(w, g if g.dtype.kind == "f" else convert(g, np.float64))
        w_sum = O.sum(w)
        avg = O.div(O.sum(O.mul(x, w), 1, True), w_sum)
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = O.sub(w_sum, correction)
    else:
        norm = O.sub(w_sum, O.div(O.mul(O.sum(O.mul(w, aweights)), correction), w_sum))
    xm = O.sub(x, avg)
    c = O.matmul(xm, O.swapaxes(xm if w is None else O.mul(xm, w), 0, 1))
    c = O.div(c, O.maximum(norm, 0.0) if isinstance(norm, Tensor) else max(norm, 0.0))
    return O.reshape(c, ()) if self.ndim < 2 else c


def _corrcoef(self):
    """``x.corrcoef()``: PyTorch's ``Tensor.corrcoef``, the Pearson correlation matrix of
    the variables in the rows of x (values clipped to [-1, 1], as PyTorch's and NumPy's).

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).corrcoef()
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if self.ndim > 2:
        raise RuntimeError(f"Tensor.corrcoef: expected a tensor of at most 2 dims, got {self.ndim}")
    x = self if self.dtype.kind == "f" else convert(self, np.float64)
    return np.corrcoef(x)


def _bincount(self, weights=None, minlength=0):
    """``x.bincount(weights=None, minlength=0)``: PyTorch's ``Tensor.bincount``, the count of
    each non-negative integer of the 1-D x (the sum of ``weights`` there, with their
    gradient, when given).

    >>> import tapegrad as tg
    >>> tg.tensor([0, 1, 1, 3]).bincount()
    tensor([1, 2, 0, 1])
    """
    v = _value(self)
    if v.ndim != 1 or v.dtype.kind not in "iu":
        raise RuntimeError(
            f"Tensor.bincount: only 1-D non-negative integer tensors are supported (as in "
            f"PyTorch), got shape {v.shape} of dtype {v.dtype}"
        )
    if v.size and v.min() < 0:
        raise RuntimeError("Tensor.bincount: the input must contain non-negative integers")
    if isinstance(minlength, bool) or int(minlength) < 0:
        raise RuntimeError(f"Tensor.bincount: minlength must be >= 0, got {minlength}")
    if weights is not None and _value(weights).shape != v.shape:
        raise RuntimeError(
            f"Tensor.bincount: weights should be 1-D and have the same length as input "
            f"({v.shape[0]}), got shape {_value(weights).shape}"
        )
    if weights is None:
        return new_tensor(np.bincount(v, minlength=int(minlength)).astype(np.int64))
    return np.bincount(self, weights=weights, minlength=int(minlength))


HistogramResult = namedtuple("histogram", ("hist", "bin_edges"))


def _histogram(self, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """``x.histogram(bins=100, *, range=None, weight=None, density=False)``: PyTorch's
    ``Tensor.histogram``, the named tuple ``(hist, bin_edges)`` of x's values (``bins`` a
    number of equal bins, or a 1-D tensor of edges).  Counts have no gradient.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 1.0]).histogram(bins=3, range=(0.0, 3.0))
    histogram(hist=tensor([0., 2., 1.]), bin_edges=tensor([0., 1., 2., 3.]))
    """
    v = _value(self)
    if v.dtype.kind != "f":
        raise RuntimeError(
            f"Tensor.histogram: expects a floating-point tensor (as in PyTorch), got "
            f"{v.dtype}; write x.double().histogram(...)"
        )
    edges = _value(bins) if isinstance(bins, Tensor) else int(bins)
    if isinstance(edges, int) and edges <= 0:
        raise RuntimeError(f"Tensor.histogram: bins must be > 0, got {edges}")
    if range is not None and not range[0] <= range[1]:
        raise RuntimeError(f"Tensor.histogram: min should not exceed max, got range {tuple(range)}")
    w = None if weight is None else _value(weight)
    hist, out_edges = np.histogram(v, bins=edges, range=range, weights=w, density=density)
    return HistogramResult(
        new_tensor(hist.astype(v.dtype), dtype=v.dtype),
        new_tensor(out_edges.astype(v.dtype), dtype=v.dtype),
    )


def _mvlgamma(self, p):
    """``x.mvlgamma(p)``: PyTorch's ``Tensor.mvlgamma``, the log of the multivariate gamma
    function of dimension ``p``: ``p (p - 1) / 4 log(pi) + sum_i lgamma(x - i / 2)``
    (its domain is x > (p - 1) / 2; like PyTorch's, other x are not refused).

    >>> import tapegrad as tg
    >>> round(tg.tensor([2.5]).mvlgamma(2).item(), 6)
    0.857048
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise RuntimeError(f"Tensor.mvlgamma: p has to be greater than or equal to 1, got {p}")
    p = int(p)
    v = _value(self)
    if v.dtype.kind != "f":
        raise RuntimeError(f"Tensor.mvlgamma: expects a floating-point tensor, got {v.dtype}")
    total = O.gammaln(self)
    for i in range(1, p):
        total = O.add(total, O.gammaln(O.sub(self, i / 2)))
    return O.add(total, p * (p - 1) / 4 * math.log(math.pi))


def _probabilities(self, name):
    v = _value(self)
    if v.dtype.kind != "f":
        raise RuntimeError(f"Tensor.{name}: expects floating-point probabilities, got {v.dtype}")
    return v


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    """``x.multinomial(num_samples, replacement=False)``: PyTorch's ``Tensor.multinomial``,
    indices drawn (tapegrad's generator, ``tg.manual_seed``) from the categories of each row
    of x with probabilities proportional to its non-negative weights; int64, no gradient.

    >>> import tapegrad as tg
    >>> _ = tg.manual_seed(0)
    >>> tg.tensor([0.0, 1.0, 0.0]).multinomial(2, replacement=True)
    tensor([1, 1])
    """
    if generator is not None:
        raise TypeError("Tensor.multinomial: generator= is not supported (use tg.manual_seed)")
    w = _probabilities(self, "multinomial")
    if w.ndim not in (1, 2):
        raise RuntimeError(f"Tensor.multinomial: prob_dist must be 1 or 2 dim, got {w.ndim}")
    n = int(num_samples)
    if n <= 0:
        raise RuntimeError(f"Tensor.multinomial: cannot sample n_sample <= 0 samples, got {n}")
    rows = w.reshape(-1, w.shape[-1])
    if not replacement and n > rows.shape[-1]:
        raise RuntimeError(
            f"Tensor.multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
            f"replacement ({n} > {rows.shape[-1]})"
        )
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("Tensor.multinomial: probability tensor contains inf, nan or < 0")
    sums = rows.sum(-1)
    if np.any(sums <= 0):
        raise RuntimeError(
            "Tensor.multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    if not replacement and np.any(np.count_nonzero(rows, -1) < n):
        raise RuntimeError(
            "Tensor.multinomial: invalid multinomial distribution (with replacement=False, "
            "not enough non-negative category to sample)"
        )
    g = _rng[0]
    out = np.stack(
        [g.choice(rows.shape[-1], n, replace=bool(replacement), p=r / r.sum()) for r in rows]
    ).astype(np.int64)
    return new_tensor(out.reshape(w.shape[:-1] + (n,)))


def _draw_bernoulli(p, shape, dtype):
    pv = np.asarray(p, dtype=np.float64)
    if np.any(~((pv >= 0) & (pv <= 1))):
        raise RuntimeError("bernoulli: expects 0 <= p <= 1 (as in PyTorch)")
    return (_rng[0].random(shape) < pv).astype(dtype)


def _bernoulli(self, p=None, *, generator=None):
    """``x.bernoulli()``: PyTorch's ``Tensor.bernoulli``, 0/1 draws (tapegrad's generator,
    ``tg.manual_seed``) with the probabilities in x (or ``p``, a number), in x's dtype; no
    gradient.

    >>> import tapegrad as tg
    >>> tg.tensor([0.0, 1.0, 1.0]).bernoulli()
    tensor([0., 1., 1.])
    """
    if generator is not None:
        raise TypeError("Tensor.bernoulli: generator= is not supported (use tg.manual_seed)")
    v = _probabilities(self, "bernoulli")
    prob = v if p is None else scalar_argument(p, "bernoulli: p")
    return new_tensor(_draw_bernoulli(prob, v.shape, v.dtype), dtype=v.dtype)


def _sum_to_size(self, *size):
    """``x.sum_to_size(*size)``: PyTorch's ``Tensor.sum_to_size``, x summed to ``size`` (a
    shape x broadcasts from: the leading dims and those of size 1 in ``size`` are summed).

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).sum_to_size(1, 2)
    tensor([[4., 6.]])
    """
    size = tuple(int(s) for s in _sizes(size))
    shape = self.shape
    if len(size) > len(shape) or any(
        s not in (1, n) for s, n in zip(size[::-1], shape[::-1], strict=False)
    ):
        raise RuntimeError(
            f"Tensor.sum_to_size: size {list(size)} is not expandable to size {list(shape)}"
        )
    lead = len(shape) - len(size)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1
    )
    out = O.sum(self, dims, True) if dims else self
    return O.reshape(out, size)


def _split_with_sizes(self, split_sizes, dim=0):
    """``x.split_with_sizes(split_sizes, dim=0)``: PyTorch's ``Tensor.split_with_sizes``,
    views of those sizes along ``dim`` (they must add up to its length).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0]).split_with_sizes([1, 2])
    (tensor([1.]), tensor([2., 3.]))
    """
    if isinstance(split_sizes, (int, np.integer)):
        raise TypeError(
            "Tensor.split_with_sizes: split_sizes must be a list of ints; for equal parts "
            "use x.split(size)"
        )
    d = _dim_of_nd(self, dim, "split_with_sizes")
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != self.shape[d] or any(s < 0 for s in sizes):
        raise RuntimeError(
            f"Tensor.split_with_sizes: expects split_sizes to sum exactly to {self.shape[d]} "
            f"(input tensor's size at dimension {d}), but got split_sizes={sizes}"
        )
    return _split(self, sizes, d)


def _scattered(self, key, src, view_shape, name):
    """A copy of ``self`` with ``src`` written at ``key`` (the gradient goes to ``src``
    there, to ``self`` elsewhere); ``src`` must have the shape of that part, as PyTorch's."""
    if tuple(_value(src).shape) != tuple(view_shape):
        raise RuntimeError(
            f"Tensor.{name}: expected src to have a size equal to the slice of self. src size "
            f"= {list(_value(src).shape)}, slice size = {list(view_shape)}"
        )
    out = O.reshape(self, self.shape) if self._rg else new_tensor(np.array(self._v))
    return O.setitem(out, key, src)


def _slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """``x.slice_scatter(src, dim=0, start=None, end=None, step=1)``: PyTorch's
    ``Tensor.slice_scatter``, a copy of x with ``src`` in the slice ``start:end:step`` of
    ``dim``.

    >>> import tapegrad as tg
    >>> tg.zeros(4).slice_scatter(tg.tensor([1.0, 2.0]), start=1, step=2)
    tensor([0., 1., 0., 2.])
    """
    (d,) = _dims_of(self, dim, "slice_scatter")
    if int(step) <= 0:
        raise RuntimeError(f"Tensor.slice_scatter: slice step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, int(step)),)
    shape = np.empty(self.shape, dtype=np.bool_)[key].shape
    return _scattered(self, key, src, shape, "slice_scatter")


def _select_scatter(self, src, dim, index):
    """``x.select_scatter(src, dim, index)``: PyTorch's ``Tensor.select_scatter``, a copy of
    x with ``src`` at position ``index`` of ``dim``.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 2).select_scatter(tg.tensor([1.0, 2.0]), 0, 1)
    tensor([[0., 0.],
            [1., 2.]])
    """
    (d,) = _dims_of(self, dim, "select_scatter")
    n = self.shape[d]
    if not -n <= int(index) < n:
        raise IndexError(
            f"Tensor.select_scatter: index {index} out of range for dimension {d} of size {n}"
        )
    key = (slice(None),) * d + (int(index) % n,)
    return _scattered(self, key, src, self.shape[:d] + self.shape[d + 1 :], "select_scatter")


def _diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """``x.diagonal_scatter(src, offset=0, dim1=0, dim2=1)``: PyTorch's
    ``Tensor.diagonal_scatter``, a copy of x with ``src`` on the diagonal that
    ``x.diagonal(offset, dim1, dim2)`` reads.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).diagonal_scatter(tg.tensor([1.0, 2.0]), 1)
    tensor([[0., 1., 0.],
            [0., 0., 2.]])
    """
    d1, d2 = _dims_of(self, (dim1, dim2), "diagonal_scatter")
    if d1 == d2:
        raise RuntimeError(
            f"Tensor.diagonal_scatter: diagonal dimensions cannot be identical {dim1}, {dim2}"
        )
    offset = int(offset)
    n1, n2 = self.shape[d1], self.shape[d2]
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    rows = np.arange(length) - min(offset, 0)
    cols = np.arange(length) + max(offset, 0)
    # the diagonal's own shape: the other dims, then its length (as x.diagonal's)
    rest = [self.shape[i] for i in range(self.ndim) if i not in (d1, d2)]
    if tuple(_value(src).shape) != (*rest, length):
        raise RuntimeError(
            f"Tensor.diagonal_scatter: expected src to have a size equal to the diagonal of "
            f"self. src size = {list(_value(src).shape)}, diagonal size = {[*rest, length]}"
        )
    moved = O.transpose(self, (*(i for i in range(self.ndim) if i not in (d1, d2)), d1, d2))
    out = O.reshape(moved, moved.shape) if moved._rg else new_tensor(np.array(moved._v))
    out = O.setitem(out, (Ellipsis, rows, cols), src)
    back = np.argsort([*(i for i in range(self.ndim) if i not in (d1, d2)), d1, d2])
    return O.transpose(out, tuple(int(i) for i in back))


def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """``x.index_reduce(dim, index, source, reduce, *, include_self=True)``: PyTorch's
    ``Tensor.index_reduce``: the slices of ``source`` along ``dim`` reduced (``"prod"``,
    ``"mean"``, ``"amax"``, ``"amin"``) into the slices of x that the 1-D ``index`` names
    (x's own values taking part unless ``include_self=False``), as ``x.scatter_reduce``.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0, 3.0])
    >>> x.index_reduce(0, tg.tensor([0, 0, 2]), tg.tensor([4.0, 5.0, 6.0]), "prod")
    tensor([20.,  2., 18.])
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"Tensor.index_reduce: reduce argument must be one of prod, mean, amax or amin "
            f"(as in PyTorch), got {reduce!r}"
        )
    (d,) = _dims_of(self, dim, "index_reduce")
    idx = _value(index)
    if idx.ndim > 1 or idx.dtype.kind not in "iu":
        raise RuntimeError(
            f"Tensor.index_reduce: index must be a 1-D integer tensor, got shape {idx.shape} "
            f"of dtype {idx.dtype}"
        )
    src = source if isinstance(source, Tensor) else O.tensor_of(source)
    idx = idx.reshape(-1)
    want = self.shape[:d] + (idx.size,) + self.shape[d + 1 :]
    if src.ndim != self.ndim or src.shape != (want if self.ndim else ()):
        raise RuntimeError(
            f"Tensor.index_reduce: source of shape {src.shape} must have x's shape "
            f"{self.shape} with dim {d} of the index's length {idx.size}"
        )
    n = self.shape[d] if self.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"Tensor.index_reduce: index out of range for dim {d} of size {n}")
    idx = idx % n
    full = np.broadcast_to(idx.reshape((-1,) + (1,) * (self.ndim - d - 1)), src.shape)
    return _scatter_reduce(
        self, d, new_tensor(np.array(full, dtype=np.int64)), src, reduce, include_self=include_self
    )


def _is_complex(self):
    """``x.is_complex()``: PyTorch's ``Tensor.is_complex``: False (tapegrad's values are
    real).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).is_complex()
    False
    """
    return False


def _is_signed(self):
    """``x.is_signed()``: PyTorch's ``Tensor.is_signed``: whether x's dtype holds negative
    values (floats and signed integers; not bool or uint8).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).is_signed(), tg.tensor([True]).is_signed()
    (True, False)
    """
    return self.dtype.kind in "fic"


def _is_cpu(self):
    """``x.is_cpu``: PyTorch's ``Tensor.is_cpu``: True (tapegrad computes on the CPU).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0]).is_cpu
    True
    """
    return True


def _is_same_size(self, other):
    """``x.is_same_size(other)``: PyTorch's ``Tensor.is_same_size``: whether the shapes are
    equal.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).is_same_size(tg.ones(2, 3)), tg.zeros(2).is_same_size(tg.zeros(3))
    (True, False)
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"Tensor.is_same_size: other must be a Tensor, got {type(other).__name__}")
    return self.shape == other.shape


def _is_nonzero(self):
    """``x.is_nonzero()``: PyTorch's ``Tensor.is_nonzero``: whether the one element of x is
    not zero (a tensor of another size is refused, as in PyTorch).

    >>> import tapegrad as tg
    >>> tg.tensor([0.0]).is_nonzero(), tg.tensor(2).is_nonzero()
    (False, True)
    """
    n = self.numel()
    if n != 1:
        raise RuntimeError(
            f"Tensor.is_nonzero: Boolean value of Tensor with "
            f"{'no values' if n == 0 else 'more than one value'} is ambiguous"
        )
    _guard_hook(self, "is_nonzero")
    return bool(np.asarray(self._v).reshape(-1)[0] != 0)


def _isreal(self):
    """``x.isreal()``: PyTorch's ``Tensor.isreal``: a boolean tensor, True where the element
    has no imaginary part (everywhere, for tapegrad's real values).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).isreal()
    tensor([ True,  True])
    """
    return new_tensor(np.ones(self.shape, dtype=bool))


# PyTorch's random in-place fills: name -> (the draws, from tapegrad's generator, of a given
# shape; the checks of the parameters), each as PyTorch's
def _normal_draws(shape, mean=0.0, std=1.0):
    if std < 0:
        raise RuntimeError(f"normal_: expects std >= 0.0, but found std {std}")
    return _rng[0].normal(mean, std, shape)


def _uniform_draws(shape, from_=0.0, to=1.0):
    if from_ > to:
        raise RuntimeError(
            f"uniform_: expects to return a [from, to) range, but found from={from_} > to={to}"
        )
    return _rng[0].uniform(from_, to, shape)


def _exponential_draws(shape, lambd=1.0):
    if not lambd > 0:
        raise RuntimeError(f"exponential_: expects lambda > 0.0, but found lambda={lambd}")
    return _rng[0].exponential(1.0 / lambd, shape)


def _geometric_draws(shape, p):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_: expects p to be in (0, 1), but got p={p}")
    return _rng[0].geometric(p, shape).astype(np.float64)


def _log_normal_draws(shape, mean=1.0, std=2.0):
    if not std > 0:
        raise RuntimeError(f"log_normal_: expects std > 0.0, but found std={std}")
    return _rng[0].lognormal(mean, std, shape)


def _cauchy_draws(shape, median=0.0, sigma=1.0):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_: expects sigma > 0.0, but found sigma={sigma}")
    return median + sigma * _rng[0].standard_cauchy(shape)


def random_draws(shape, dtype, from_=0, to=None):
    """``x.random_(from, to)``'s integers: ``[from, to)``, ``random_(to)``: ``[0, to)``,
    ``random_()``: ``[0, 2 ** mantissa]`` for floats (PyTorch's), the dtype's range for
    integers."""
    if to is None and from_ != 0:  # random_(to): the one argument is the end
        from_, to = 0, from_
    if to is None:
        if dtype.kind == "f":
            to = 2 ** (np.finfo(dtype).nmant + 1) + 1
        elif dtype.kind == "b":
            to = 2
        else:
            to = int(np.iinfo(dtype).max) + 1
    if from_ >= to:
        raise RuntimeError(
            f"random_: expects 'from' to be less than 'to', but got from={from_} >= to={to}"
        )
    return _rng[0].integers(int(from_), int(to), shape).astype(dtype)


def fill_diagonal_values(self, fill_value, wrap):
    """A copy of ``self`` with ``fill_value`` on its main diagonal (PyTorch's
    ``fill_diagonal_``: all dims of one length, or a 2-D tall matrix, wrapped after every
    ``ncols + 1`` rows when ``wrap``)."""
    if self.ndim < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError(
            f"fill_diagonal_: all dimensions of input must be of equal length, got {self.shape}"
        )
    if isinstance(fill_value, Tensor) or not isinstance(fill_value, (int, float, bool, np.number)):
        raise TypeError(
            f"fill_diagonal_: fill_value must be a number (as in PyTorch), got "
            f"{type(fill_value).__name__}"
        )
    n = self.numel()
    if self.ndim == 2:
        rows, cols = self.shape
        step = cols + 1
        end = n if wrap or rows <= cols else cols * cols
    else:
        step = sum(self.shape[-1] ** k for k in range(self.ndim))
        end = n
    pos = np.arange(0, end, step, dtype=np.int64)
    if self.ndim == 2 and not wrap and rows > cols:
        pos = pos[: min(rows, cols)]
    check_fits(fill_value, self.dtype, "fill_diagonal_")
    with np.errstate(invalid="ignore", over="ignore"):  # (a float into an int: truncated)
        values = np.full(pos.size, fill_value).astype(self.dtype)
    return _torch_put(self, new_tensor(pos), new_tensor(values, dtype=self.dtype))
