"""Operators and methods of Tensor, each a thin call into ``functions``.

``TensorMethods`` is one of the base classes the public ``Tensor`` is assembled from (see
``tapegrad/tensor_class.py``); the handle itself (``core/tensor.py``) stays small.
"""

import functools
import inspect
import operator
import threading
import weakref

import numpy as np

from ..ops.spec import C
from . import functions as O
from . import torch_methods as P
from .tensor import (
    STATE,
    _guard_hook,
    new_tensor,
    record_binary,
    record_unary,
    tape_of,
    value_of,
)
from .tensor import (
    TensorBase as Tensor,
)
from .ufuncs import ElementwiseMethods

_ADD, _ADDS, _MUL, _MULS = C.ADD, C.ADDS, C.MUL, C.MULS  # the operator hot path


def _add(self, other):
    oc = other.__class__
    if oc is self.__class__:
        if self._v.__class__ is float and other._v.__class__ is float:
            return record_binary(self, other, _ADD, self._v + other._v)
    elif not self._rg and self._v.__class__ is not float and self._v.dtype.kind in "iub":
        pass  # an integer Tensor: NumPy's arithmetic (functions.numpy_exact)
    elif oc is float:  # hot path for scalar chains
        return record_unary(self, _ADDS, self._v + other, other)
    elif oc is int:
        c = float(other)
        return record_unary(self, _ADDS, self._v + c, c)
    return O.add(self, other)


def _mul(self, other):
    oc = other.__class__
    if oc is self.__class__:
        if self._v.__class__ is float and other._v.__class__ is float:
            return record_binary(self, other, _MUL, self._v * other._v)
    elif not self._rg and self._v.__class__ is not float and self._v.dtype.kind in "iub":
        pass
    elif oc is float:
        return record_unary(self, _MULS, self._v * other, other)
    elif oc is int:
        c = float(other)
        return record_unary(self, _MULS, self._v * c, c)
    return O.mul(self, other)


def _axis(axis, dim):
    if dim is not None:
        if axis is not None:
            raise TypeError("give axis= or dim=, not both")
        return dim
    return axis


def _reduction(fn):
    name = fn.__name__

    def method(self, axis=None, keepdims=False, *, dim=None, keepdim=None, dtype=None):
        if keepdim is not None:
            keepdims = keepdim
        if dtype is not None:  # PyTorch's dtype=: the input cast first
            self = P.convert(self, dtype)
        axes = P.torch_axes(_axis(axis, dim), self.shape, f"Tensor.{name}")
        if name in ("amax", "amin"):
            P.nonempty_lanes(self, axes, f"Tensor.{name}")
        out = fn(self, axes, keepdims)
        if dtype is not None and not out._rg and out.dtype != P._np_dtype(dtype):
            out = P.convert(out, dtype)  # NumPy sums int32 as int64; PyTorch gives dtype
        return out

    method.__name__ = fn.__name__
    usage = f"``x.{fn.__name__}(dim)`` is ``tg.{fn.__name__}(x, dim)``."
    method.__doc__ = f"{usage}\n\n{inspect.cleandoc(fn.__doc__)}"
    return method


def _transpose(self, *axes, dim0=None, dim1=None):
    """``x.transpose(*axes)``: the axes permuted (reversed when none are given); two axes of a
    tensor swap them, as in PyTorch (``x.transpose(dim0=0, dim1=2)`` too).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3, 4)
        >>> x.transpose().shape, x.transpose(0, 2).shape, tg.zeros(2, 3).T.shape
        ((4, 3, 2), (4, 3, 2), (3, 2))
    """
    if dim0 is not None or dim1 is not None:  # PyTorch's keywords: the two dims swapped
        axes = (*axes, *(d for d in (dim0, dim1) if d is not None))
        if len(axes) != 2:
            raise TypeError(f"Tensor.transpose: give two dims, dim0 and dim1 (got {axes})")
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not axes:
        return O.transpose(self)
    if len(axes) == 2 and self.ndim == 0:  # PyTorch's dims 0 / -1 of a 0-d tensor: itself
        for a in axes:
            P.wrap_dim(a, (), "Tensor.transpose")
        return O.transpose(self)
    if len(axes) == 2 and self.ndim >= 1:
        # PyTorch's two dims (checked first: ``a % 2`` made dim 5 of a matrix its dim 1);
        # the same dim twice is the tensor itself, as a view
        for a in axes:
            P.wrap_dim(a, self.shape, "Tensor.transpose")
        if self.ndim == 2 and axes[0] % 2 != axes[1] % 2:
            return O.transpose(self)
        return O.swapaxes(self, *axes)
    return O.transpose(self, axes)


def _check_inplace(self, opname):
    if STATE.transforms and self._rg and (self._leaf or not STATE.enabled):
        what = "a differentiated input" if self._leaf else "a traced value under no_grad"
        raise RuntimeError(
            f"{opname}: in-place change of {what} (shape {self.shape}) inside a tapegrad "
            "transform or tg.trace recording; the derivative would be that of the value "
            "before the change, not of what f computes. Change a copy, with gradient on: "
            "x = x.copy() (or tnp.array(x)); x[i] = ..."
        )
    if self._leaf and self._rg and STATE.enabled:
        raise RuntimeError(
            f"a leaf Variable that requires grad is being used in an in-place operation "
            f"({opname} on shape {self.shape}); wrap the update in `with tg.no_grad():`"
        )
    _refuse_overlapping_write(self, opname)
    base = _base_of(self)
    if base is not None:
        if base._leaf and base._rg and STATE.enabled:
            raise RuntimeError(
                f"a view of a leaf Variable that requires grad is being used in an in-place "
                f"operation ({opname} on shape {self.shape}); wrap the update in "
                "`with tg.no_grad():`"
            )
        _check_inplace(base, opname)


# ---- views -------------------------------------------------------------------------------------
# NumPy's basic indexing returns a view: ``v = y[1:]; v[0] = 0`` changes y, and a write into y
# shows in v.  A tapegrad result has its own value and row, so the link is kept here instead:
# the view notes (weakref to its base, key) in its meta and the base lists its live views.
# After an in-place change of a view the change is written into its base (``base[key] = v``,
# a recorded setitem), and after an in-place change of a base its live views are derived
# again (``v = base[key]``), so values and gradients are those NumPy's aliasing implies.


def _basic_key(key):
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if not (
            k is None
            or k is Ellipsis
            or isinstance(k, slice)
            or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        ):
            return False
    return True


def _index_ints(key):
    """PyTorch's ``y[i]`` with a 0-d integer Tensor (or array) ``i`` is ``y[int(i)]``, a view
    (``y[i].mul_(2)`` changes y); NumPy's, inside transforms, is a fancy index and a copy."""
    if key.__class__ is tuple:
        for k in key:
            if isinstance(k, _ARRAYS):
                return tuple([_int_index(k) for k in key])
        return key
    return _int_index(key)


_ARRAYS = (Tensor, np.ndarray)


def _int_index(k):
    """``k`` as an int when it is a 0-d integer Tensor or array, else ``k`` (a uint8 array,
    whose meaning PyTorch and NumPy disagree on, is refused)."""
    if isinstance(k, _ARRAYS):
        a = np.asarray(k._v if isinstance(k, Tensor) else k)
        if a.dtype == np.uint8:  # PyTorch reads it as a (deprecated) mask, NumPy as indices
            raise IndexError(
                "indexing a Tensor with a uint8 index: PyTorch reads it as a mask, NumPy as "
                "integer indices; say which with index.bool() (a mask) or index.long()"
            )
        if a.ndim == 0 and a.dtype.kind in "iu":
            return int(a)
    return k


def _torch_split(key):
    """PyTorch's reading of a key that mixes integers with index arrays: the integers select
    first (``x[1, :, [0, 1]]`` is ``x[1][:, [0, 1]]``), and NumPy's rule for where the
    indexed dimensions go applies to the rest only (NumPy counts an integer as an index
    array: ``x[1, :, [0, 1]]`` of a (2, 2, 2) array is the transpose of PyTorch's).  Returns
    (basic key, advanced key) to apply in turn, or None when the two readings agree."""
    if key.__class__ is not tuple:
        return None
    ints = arrays = False
    for k in key:
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            ints = True
        elif isinstance(k, (bool, np.bool_)):
            return None
        elif isinstance(k, (list, *_ARRAYS)):
            arrays = True
    if not (ints and arrays):
        return None
    first, rest = [], []
    for k in key:
        if isinstance(k, (int, np.integer)):
            first.append(k)
        elif isinstance(k, (list, *_ARRAYS)):
            a = k._v if isinstance(k, Tensor) else np.asarray(k)
            mask = getattr(a, "dtype", None) == np.bool_
            first.extend([slice(None)] * (np.ndim(a) if mask else 1))
            rest.append(k)
        else:  # a slice, None (a new dimension, which exists in the selected view) or Ellipsis
            first.append(k)
            rest.append(slice(None) if k is None or isinstance(k, slice) else k)
    return tuple(first), tuple(rest)


def _getitem(self, key):
    if not STATE.transforms and key.__class__ is not int and key.__class__ is not slice:
        key = _index_ints(key)
        split = _torch_split(key)
        if split is not None:
            return _getitem(_getitem(self, split[0]), split[1])
    out = O.getitem(self, key)
    if _basic_key(key) and _aliases(self, out, key):  # NumPy returns a view
        _note_view(self, out, key)
    return out


def _aliases(base, out, key=Ellipsis):
    """Is ``out``, a basic index (``key``) or rearrangement of array ``base``, a view of it?
    A 0-d result is one in the Tensor API (PyTorch's ``y[0]`` and ``y.select(0, 1)`` are
    views: ``y[0].mul_(2)`` changes y); inside a transform NumPy's meaning holds: ``a[0]`` of
    a 1-d array is a scalar copy (``s = a[0]; s += 1`` leaves ``a`` as it was), while
    ``a[0, ...]``, a reshape or a squeeze is a 0-d view (and a 0-d base is an array only
    when it is such a view: ``a[0]`` is a NumPy scalar, which no view shares)."""
    if not STATE.transforms:
        return True
    if base._v.__class__ is float and _base_of(base) is None:
        return False
    if out._v.__class__ is not float:
        return True
    return key is Ellipsis or (isinstance(key, tuple) and any(k is Ellipsis for k in key))


class Rearranged:
    """The key of a view that holds every element of its base once, rearranged (reshape,
    ravel, view, transpose, swapaxes, squeeze, expand_dims...): ``read(base)`` derives the
    view again, ``write(base, view)`` puts the view's elements back into the base (a
    recorded setitem of the whole base, so gradients flow from the view's new values)."""

    __slots__ = ("fn", "shape", "_inverse")

    def __init__(self, fn, shape):
        self.fn = fn
        self.shape = shape
        self._inverse = None

    def read(self, base):
        return self.fn(base)

    def write(self, base, view):
        if self._inverse is None:  # where each base element went: fn applied to indices
            size = int(np.prod(self.shape, dtype=np.int64))
            pos = np.arange(size, dtype=np.float64).reshape(self.shape)
            self._inverse = np.argsort(np.asarray(self.fn(Tensor._const(pos))._v).reshape(-1))
        flat = O.reshape(view, (-1,))
        _setitem(base, Ellipsis, O.reshape(O.getitem(flat, self._inverse), self.shape))


def viewing(fn, reshapes=False, ravels=False):
    """``fn`` (a reshape/transpose-like function of a Tensor) whose result is a view of its
    argument, as NumPy's and PyTorch's are: writes into either show in the other.  A reshape
    (``reshapes``) whose elements no strides can lay out in the new shape (a transposed or
    strided view raveled, a reshape in Fortran order) is a copy, as NumPy's and PyTorch's
    reshape are; a ravel (``ravels``) is a view only when its elements are consecutive in
    memory (NumPy's and PyTorch's ravel copy a strided view, ``y[::2].ravel()``)."""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if (
            out is not self
            and isinstance(out, Tensor)
            and isinstance(self, Tensor)
            and _aliases(self, out)
            and np.size(out._v) == np.size(self._v)
            and not (
                (reshapes or ravels)
                and _copied_by_reshape(
                    self, lambda b: fn(b, *args, **kwargs), ravels, _fortran(args, kwargs)
                )
            )
        ):
            _note_view(self, out, Rearranged(lambda b: fn(b, *args, **kwargs), self.shape))
        return out

    return method


def _fortran(args, kwargs):
    order = kwargs.get("order", next((a for a in args if isinstance(a, str)), "C"))
    return isinstance(order, str) and order.upper() == "F"


def _copied_by_reshape(x, fn, contiguous=False, fortran=False):
    """Would NumPy copy when reshaping ``x`` by ``fn``?  The elements' places in the root's
    memory, in the new shape, must be an offset plus one stride per axis (and be consecutive
    for a ravel, when ``contiguous``).  Only a view of a view, or a Fortran-order reshape,
    can need a copy: a C-order reshape of a root reads its memory in order."""
    lay = _layout(x)
    if lay is None:
        if not fortran:
            return False
        pos = Tensor._const(np.arange(np.size(x._v), dtype=np.float64).reshape(x.shape))
    else:
        root_shape, key = lay
        size = int(np.prod(root_shape, dtype=np.int64))
        pos = read_view(key, Tensor._const(np.arange(size, dtype=np.float64).reshape(root_shape)))
    at = np.asarray(fn(pos)._v, dtype=np.int64)
    if at.size <= 1:
        return False
    if contiguous:
        return not np.array_equal(at.reshape(-1), at.flat[0] + np.arange(at.size))
    shape = at.shape
    lin = np.full(shape, at.flat[0], np.int64)
    for ax, n in enumerate(shape):
        if n > 1:
            step = at[(0,) * ax + (1,)].flat[0] - at.flat[0]
            lin += step * np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(shape) - ax - 1))
    return not np.array_equal(lin, at)


_flatten_view = viewing(P._flatten, reshapes=True)
_view_of = viewing(P._view, reshapes=True)


def _view(self, *shape):
    """``x.view(*shape)``: PyTorch's view, the same elements in another shape sharing x's
    memory (a write into either shows in the other).  As in PyTorch, a shape the elements'
    places in memory cannot be laid out in by strides (a transposed or strided view
    flattened) raises a RuntimeError rather than copy: ``x.reshape(...)`` copies where it
    must, ``x.contiguous().view(...)`` copies first.  ``x.view()`` / ``x.view(x.dtype)``
    (NumPy's ``ndarray.view`` inside NumPy code) is x's elements in x's shape.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> v = x.view(6); v[1] = 5.0; x
        tensor([[0., 5., 0.],
                [0., 0., 0.]])
        >>> try:
        ...     x.t().view(6)
        ... except RuntimeError as e:
        ...     print(str(e)[:74])
        Tensor.view((6,)) of a tensor of shape (3, 2): view size is not compatible
        >>> x.t().reshape(6)
        tensor([0., 0., 5., 0., 0., 0.])
    """
    sizes = P._sizes(shape)
    if (
        sizes
        and all(isinstance(n, (int, np.integer)) for n in sizes)
        and _copied_by_reshape(self, lambda b: O.reshape(b, sizes))
    ):
        raise RuntimeError(
            f"Tensor.view({tuple(int(n) for n in sizes)}) of a tensor of shape {self.shape}: view "
            "size is not compatible with input tensor's size and stride (at least one dimension "
            "spans across two contiguous subspaces: the tensor is a transposed, permuted or "
            "strided view whose elements no strides can lay out in the new shape). Use "
            ".reshape(...) instead (it copies where it must), or .contiguous().view(...)"
        )
    return _view_of(self, *shape)


def _in_order(self):
    """Are x's elements consecutive in its root's memory, in C order (a value of its own, or
    a view of one that PyTorch would call contiguous)?"""
    return not _copied_by_reshape(self, lambda b: O.reshape(b, (-1,)), contiguous=True)


def _contiguous(self, memory_format=None):
    """``x.contiguous()``: x itself when its elements are laid out in C order in memory, else
    a copy in that order (a transposed, permuted, strided or expanded view), as PyTorch's:
    a write into the copy does not reach x's base.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.contiguous() is x, x.t().contiguous() is x.t()
        (True, False)
        >>> y = x.t().contiguous(); y[0, 1] = 5.0; x.sum().item()
        0.0
        >>> x.t().contiguous().view(6).shape
        (6,)
    """
    return self if _in_order(self) else self.clone()


def _is_contiguous(self, memory_format=None):
    """``x.is_contiguous()``: are x's elements laid out in C order in memory (False for a
    transposed, permuted, strided or expanded view of another tensor), as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.is_contiguous(), x.t().is_contiguous(), x[:, 1:].is_contiguous()
        (True, False, False)
        >>> x[1:].is_contiguous()
        True
    """
    return _in_order(self)


def _flatten(self, *args, **kwargs):
    if STATE.transforms or any(isinstance(a, str) for a in args) or "order" in kwargs:
        return P._flatten(self, *args, **kwargs)  # NumPy's ndarray.flatten: a copy
    return _flatten_view(self, *args, **kwargs)  # PyTorch's: a view where strides allow


_flatten.__doc__ = (
    P._flatten.__doc__
    + """
    In the Tensor API the result is a view, as PyTorch's (a write into it reaches x, where
    strides can lay its elements out, as for reshape); inside a transform (``tg.grad``...)
    and with an ``order`` it is NumPy's ``ndarray.flatten``, a copy.
    """
)


def _diagonal(self, *args, **kwargs):
    """``x.diagonal(offset=0, dim1=0, dim2=1)``: a view of the diagonal of a 2-D tensor, as
    PyTorch's (NumPy's is a read-only one): a write into it reaches x.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.diagonal(), x.diagonal(1)
        (tensor([1., 4.]), tensor([2.]))
        >>> x.diagonal().mul_(10.0); x
        tensor([10., 40.])
        tensor([[10.,  2.],
                [ 3., 40.]])
    """
    if self.ndim != 2 and _numpy_code():  # NumPy's diagonal of stacked matrices (a copy)
        return np.diagonal(self, *args, **kwargs)
    out, key = P._diagonal(self, *args, **kwargs)
    if out._v.__class__ is not float and self._v.__class__ is not float:
        _note_view(self, out, key)
    return out


class Broadcast:
    """The key of ``base.expand(shape)`` / ``broadcast_to`` (PyTorch's, and NumPy's read-only
    one): a view that repeats base elements along new or size-1 axes, so a write into the
    base shows in it.  As in PyTorch only a fill of the whole view can be written through it
    (every copy of an element then holds the same value: the first is written back); other
    writes are refused before they happen (``_refuse_overlapping_write``), as are all writes
    into NumPy's (``read_only``)."""

    __slots__ = ("shape", "read_only")

    def __init__(self, shape, read_only=False):
        self.shape = tuple(shape)
        self.read_only = read_only

    def read(self, base):
        return O.broadcast_to(base, self.shape)

    def write(self, base, view):
        lead = len(self.shape) - base.ndim
        key = (0,) * lead + tuple(
            slice(0, 1) if b == 1 and n != 1 else slice(None)
            for b, n in zip(base.shape, self.shape[lead:], strict=True)
        )
        _setitem(base, Ellipsis, O.reshape(O.getitem(view, key), base.shape))


def broadcasting(fn, read_only=False):
    """``fn`` (expand / broadcast_to) whose result is a view of its argument: a later write
    into the argument shows in it, as in PyTorch and NumPy."""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if (
            isinstance(out, Tensor)
            and isinstance(self, Tensor)
            and out is not self
            and _aliases(self, out)
        ):
            if np.size(out._v) == np.size(self._v):  # no element repeated: a reshape
                shape = out.shape
                _note_view(self, out, Rearranged(lambda b: O.reshape(b, shape), self.shape))
            else:
                _note_view(self, out, Broadcast(out.shape, read_only))
        return out

    return method


class Windows:
    """The key of ``x.unfold(dimension, size, step)`` when its windows overlap (``step <
    size``) or x is 0-d: a view that reads x's elements (a write into x shows in it), into
    which no write is allowed (an element would be written through several windows; the
    write is refused before it happens, by ``_refuse_overlapping_write``).  Windows that do
    not overlap are a plain key of distinct places, written back as any view."""

    __slots__ = ("key", "zero_d")

    def __init__(self, key, zero_d):
        self.key, self.zero_d = key, zero_d

    def read(self, base):
        return O.getitem(O.reshape(base, (1,)) if self.zero_d else base, self.key)

    def write(self, base, view):  # (refused before any write: _refuse_overlapping_write)
        raise RuntimeError("Tensor.unfold: a write into overlapping windows")


def _has_broadcast(key):
    if isinstance(key, Composed):
        return _has_broadcast(key.outer) or _has_broadcast(key.inner)
    return isinstance(key, Broadcast)


def _has_windows(key):
    if isinstance(key, Composed):
        return _has_windows(key.outer) or _has_windows(key.inner)
    return isinstance(key, Windows)


def _refuse_overlapping_write(self, opname):
    """An in-place change of a view whose elements share places (``y.expand(3, 4)``, and
    views of it) is refused, as PyTorch refuses it; a fill of the whole expanded view
    (``zero_``, ``fill_``), which PyTorch allows, writes the value into the base."""
    m = self._meta
    b = m.get("base") if m else None
    if b is not None and _has_windows(b[1]):
        raise RuntimeError(
            f"unsupported operation: more than one element of the written-to tensor refers to "
            f"a single memory location ({opname} on a view made by x.unfold with overlapping "
            f"windows, step < size, or of a 0-d x; shape {self.shape}); clone() the windows "
            "before changing them, or write into x itself"
        )
    if b is None or not _has_broadcast(b[1]):
        return
    key = b[1]
    last, earlier = (key.inner, key.outer) if isinstance(key, Composed) else (key, None)
    if isinstance(last, Broadcast) and last.read_only:
        raise ValueError(
            f"{opname}: assignment destination is read-only (a broadcast_to view, read-only "
            "in NumPy); write into a copy: b = b.copy()"
        )
    if (
        opname in ("zero_", "fill_")
        and isinstance(last, Broadcast)
        and not (earlier is not None and _has_broadcast(earlier))
    ):
        return
    raise RuntimeError(
        f"unsupported operation: more than one element of the written-to tensor refers to a "
        f"single memory location ({opname} on a view made by expand or broadcast_to, of "
        f"shape {self.shape}); clone() the tensor before performing the operation"
    )


class Composed:
    """The key of a view of a view: ``inner`` applied to the view ``outer`` makes of the
    root.  Views of views are noted against the root, as NumPy's ``base`` is, so a write
    reaches it even when the view in between is gone."""

    __slots__ = ("outer", "inner")

    def __init__(self, outer, inner):
        self.outer, self.inner = outer, inner

    def read(self, base):
        return read_view(self.inner, read_view(self.outer, base))

    def write(self, base, view):
        mid = read_view(self.outer, base)
        write_view(self.inner, mid, view)
        write_view(self.outer, base, mid)


def read_view(key, base):
    """The view ``key`` makes of ``base`` (a basic index, or a Rearranged/Broadcast/Composed
    key)."""
    if isinstance(key, (Rearranged, Composed, Broadcast, Windows)):
        return key.read(base)
    return O.getitem(base, key)


def write_view(key, base, view):
    """Write the view's values back into ``base`` (a recorded setitem)."""
    if isinstance(key, (Rearranged, Composed, Broadcast, Windows)):
        key.write(base, view)
    else:
        _setitem(base, key, view)


def _note_view(base, view, key):
    bm = base._meta
    outer = bm.get("base") if bm else None
    root = None if outer is None else outer[0]()
    if root is not None:  # a view of a view: noted against the root
        base, key = root, Composed(outer[1], key)
    # a ``base`` that is still a view here is one whose own root is gone: the view is
    # noted against ``base``, and where its elements lie in the first memory kept apart
    lay = _layout(base)
    layout = None if lay is None else (lay[0], Composed(lay[1], key))
    vm = view._meta
    if vm is None:
        vm = view._meta = {}
    vm["base"] = (weakref.ref(base), key, base.shape)
    if base._meta and "detached_from" in base._meta:  # a view of ``y.detach()``, which
        vm["alias"] = base  # may be a temporary (``y.detach().T[0].zero_()``): kept alive,
        # so that a write through the view reaches y
    if layout is not None:
        vm["layout"] = layout
    elif "layout" in vm:
        del vm["layout"]
    bm = base._meta
    if bm is None:
        bm = base._meta = {}
    views = bm.get("views")
    if views is None:
        views = bm["views"] = []
    elif len(views) >= bm.get("prune_at", 8):  # dead entries dropped (twice as many live
        views[:] = [w for w in views if w[0]() is not None]  # ones: pruned half as often)
        bm["prune_at"] = max(8, 2 * len(views))
    views.append((weakref.ref(view), key))


def link_view(base, view, key):
    """Note ``view`` as ``base[key]`` (a fancy key of distinct places: a NumPy function's view,
    np.flip or np.split): a write into either shows in the other."""
    _note_view(base, view, key)


def _layout(self):
    """``(root shape, key)``: where a view's elements lie in the memory of the tensor it
    was first made from, as strides would say (kept after that tensor is gone, so
    ``x.view`` and ``x.contiguous`` judge a view's layout as PyTorch does); None for a
    tensor that is no view (its value is its own memory, in C order)."""
    m = self._meta
    if not m:
        return None
    lay = m.get("layout")
    if lay is not None:
        return lay
    b = m.get("base")
    return None if b is None else (b[2], b[1])


def _base_of(self):
    m = self._meta
    if not m:
        return None
    b = m.get("base")
    return None if b is None else b[0]()


def _linked(self):
    m = self._meta
    return m is not None and ("base" in m or "views" in m)


_WRITING = threading.local()  # .view: the view whose change is being written into its base


def _after_write(self):
    """Carry an in-place change of ``self`` to its base (or to its views)."""
    m = self._meta
    b = m.get("base")
    base = None if b is None else b[0]()
    if base is not None:
        outer = getattr(_WRITING, "view", None)
        _WRITING.view = self
        try:
            write_view(b[1], base, self)  # writes the view's values into the base, then
        finally:  # re-derives the base's other views
            _WRITING.view = outer
        return
    _refresh_views(self)


def _refresh_views(self):
    m = self._meta
    views = m.get("views") if m else None
    if not views:
        return
    writer = getattr(_WRITING, "view", None)
    for ref, key in list(views):
        v = ref()
        if v is None:
            continue
        if v is writer:  # it holds the values just written: derived again, it would count
            _refresh_views(v)  # as a second change, and a backward that saved its new
            continue  # value (``v.exp_()``) would refuse it
        new = read_view(key, self)
        if STATE.enabled and new._rg:
            _swap_in(v, new)
        else:
            _untracked_update(v, new._v)
        _refresh_views(v)


def _dedupe_last(self, key, value):
    """``x[[0, 0]] = v``: NumPy keeps the last write to a repeated position.  The recorded
    setitem would send the gradient to every written element, so the key is reduced to the
    last write of each position (and the value to those elements) first."""
    items = key if isinstance(key, tuple) else (key,)
    if all(not isinstance(k, (list, np.ndarray, Tensor)) for k in items):
        return key, value  # basic indexing cannot repeat a position
    shape = self.shape
    pos = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[O.index_key(key)[0]]
    flat = np.asarray(pos).ravel()
    uniq, first_rev = np.unique(flat[::-1], return_index=True)
    if uniq.size == flat.size:
        return key, value
    last = flat.size - 1 - first_rev  # the last write of each position
    sub = np.unravel_index(uniq, shape)
    if isinstance(value, Tensor):
        full = O.reshape(O.broadcast_to(value, np.shape(pos)), (-1,))
        return sub, O.getitem(full, last)
    vv = np.broadcast_to(np.asarray(value, dtype=np.float64), np.shape(pos)).reshape(-1)
    return sub, vv[last]


def _inplace(fn, opname):
    """In-place update: a leaf under no_grad changes its value; a graph tensor takes the new row."""

    ufunc = _INPLACE_UFUNCS.get(opname)

    def method(self, other):
        _check_inplace(self, opname)
        if not STATE.enabled or not (self._rg or (isinstance(other, Tensor) and other._rg)):
            if ufunc is None or not _update_leaf_in_place(self, ufunc, other):
                new = fn(self.detach(), other.detach() if isinstance(other, Tensor) else other)
                _same_kind(self, new._v, opname)
                _untracked_update(self, _keep_dtype(self, new._v))
        else:
            t = tape_of(self)
            start = None if t is None else t.n  # the rows fn records read x's old value
            _swap_in(self, fn(self, other), start)  # (a composite's first ones too)
        if self._meta is not None and _linked(self):
            _after_write(self)
        return self

    method.__name__ = opname
    return method


def _numpy_sort(self, axis=-1, kind=None, order=None):
    """NumPy's ``a.sort(axis=-1)`` inside NumPy code: sorts ``a`` in place, returns None."""
    if order is not None:
        raise TypeError("ndarray.sort: order= (fields of a structured array) has no meaning here")
    _inplace(lambda s, d: P._sort(s, d).values, "sort")(self, axis)


def _same_kind(self, v, opname):
    """An in-place op keeps the Tensor's dtype, as NumPy's ``a += b`` and PyTorch's do: an
    integer or boolean Tensor cannot take a float result (it is refused, not promoted)."""
    old = self._v
    if old.__class__ is float or old.dtype.kind == "f":
        return
    if not np.can_cast(np.result_type(v), old.dtype, "same_kind"):
        raise TypeError(
            f"{opname}: the result (dtype {np.result_type(v)}) cannot be written into a Tensor "
            f"of dtype {old.dtype} in place (NumPy's same_kind rule; PyTorch refuses it too); "
            "write x = x.double() first, or use the out-of-place op"
        )


def _keep_dtype(self, v):
    """``v``, the new value of an in-place op on ``self``, in ``self``'s dtype: an int32
    Tensor plus an int64 one stays int32 (wrapping, as PyTorch's and NumPy's ``a += b``),
    a float32 Tensor stays float32."""
    old = self._v
    if old.__class__ is float or old.dtype == np.float64:
        return v
    if np.result_type(v) != old.dtype:
        return np.asarray(v).astype(old.dtype)
    return v


# the value of ``y.op_(2.0)`` for y = [1, 2], and its gradient, worked out by hand
_INPLACE_EXAMPLES = {
    "add_": ("tensor([3., 4.], grad_fn=<AddBackward0>)", "tensor([1., 1.])"),
    "sub_": ("tensor([-1.,  0.], grad_fn=<AddBackward0>)", "tensor([1., 1.])"),
    "mul_": ("tensor([2., 4.], grad_fn=<MulBackward0>)", "tensor([2., 2.])"),
    "div_": ("tensor([0.5000, 1.0000], grad_fn=<MulBackward0>)", "tensor([0.5000, 0.5000])"),
}


def _inplace_doc(opname, fname):
    """The docstring of in-place method ``opname`` (a checked example from the table)."""
    value, grad = _INPLACE_EXAMPLES[opname]
    return f"""``x.{opname}(other)``: {fname}(x, other) written into x, which stays
    in the graph (if a backward needs the old value, it raises an error, never a wrong number).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 1.0
        >>> y.{opname}(2.0)
        {value}
        >>> y.sum().backward(); x.grad
        {grad}
    """


def _untracked_update(self, v):
    """An in-place change autograd does not see (under no_grad, or of a constant).

    A graph tensor keeps its place in the graph, as in PyTorch: the new value becomes an
    identity row of the old one, so gradients pass straight through the update."""
    t = tape_of(self)  # (a handle of a row kept by a cut moves to the live tape first)
    if not self._leaf and self._rg and t is STATE.tape:
        _swap_in(self, O.record(t, C.RESHAPE, self._row, -1, v))
    else:
        _set_value(self, v)


# in-place methods a leaf's array takes directly (``p -= lr * p.grad`` in an optimizer step)
_INPLACE_UFUNCS = {
    "add_": np.add,
    "sub_": np.subtract,
    "mul_": np.multiply,
    "div_": np.true_divide,
}


# the same for a scalar leaf, on floats (Python's float arithmetic, as the general path's)
_FLOAT_OPS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul}


def _update_leaf_in_place(self, ufunc, other):
    """An untracked ``x op= other`` on a leaf computed straight into its array (one pass, no
    new array, no copy back), as NumPy's ``a -= b``, or on a scalar leaf's float (``w -= lr *
    w.grad``); returns False when the general path must run (a 0-d or non-float64 value, a
    read-only array, an ``other`` that would broadcast x to a larger shape, a division, or a
    trace recording watching the reads)."""
    old = self._v
    if old.__class__ is float:
        op = _FLOAT_OPS.get(ufunc)
        ov = other._v if isinstance(other, Tensor) else other
        if op is None or not self._leaf or ov.__class__ is not float or STATE.guard is not None:
            return False
        self._v = op(old, ov)  # (a float row on a tape holds its own value: nothing to copy)
        bump_version(self)
        self._invalidate()
        return True
    if (
        not self._leaf
        or old.__class__ is not np.ndarray
        or old.dtype != np.float64
        or not old.flags.writeable
        or STATE.guard is not None
    ):
        return False
    ov = value_of(other)
    if (
        ov.__class__ is not float
        and ov.shape != old.shape
        and np.broadcast_shapes(old.shape, ov.shape) != old.shape
    ):
        return False
    _before_overwrite(self)
    ufunc(old, ov, out=old)  # (NumPy's own warnings, as for ``a -= b`` and the general path)
    bump_version(self)
    self._invalidate()
    return True


def _before_overwrite(self):
    """Let the tape copy this tensor's array before it changes (a graph may still read it)."""
    t = tape_of(self)
    if t is not None:
        if t.pc:
            t.sync()  # pending rows may hold this very array
        if self._row in t.lazy:
            t.materialize(self._row)  # the tape holds this very array: copy it first
    old = self._v
    if old.__class__ is np.ndarray:  # rows of other handles of the same memory (a
        cur = STATE.tape  # detached copy, an array the user passed twice) are copied too
        if cur.pc:
            cur.sync()
        for r in [r for r, a in cur.lazy.items() if np.may_share_memory(a, old)]:
            cur.materialize(r)


def _set_value(self, v):
    _before_overwrite(self)
    old = self._v
    if (
        old.__class__ is not float
        and v.__class__ is not float
        and old.shape == v.shape
        and old.dtype == v.dtype
    ):
        if not old.flags.writeable:
            raise ValueError(
                f"in-place update of a Tensor of shape {old.shape} whose values are read-only "
                "(for instance a view of a caller's NumPy array of 4,096+ entries, which "
                "tapegrad's functions do not write into); update a copy: x = tg.tensor(x) "
                "(or x.clone()), then change x"
            )
        old[...] = v
    else:
        if old.__class__ is not float and np.shape(v) != old.shape:
            raise RuntimeError(
                f"in-place update changes shape {old.shape} to {np.shape(v)}; "
                "in-place ops cannot broadcast the destination"
            )
        self._v = (
            v
            if old.__class__ is float or v.__class__ is not float
            else np.asarray(v, dtype=old.dtype)
        )
    bump_version(self)
    self._invalidate()


def bump_version(self, at=None):
    """Count an in-place change of ``self``; its current tape row now holds a stale value.

    The overwrite is noted in ``t.side.dirty`` (row, at, weakref, version before): a
    backward that reaches a row recorded before row ``at`` that needs the old value raises
    (``_checks.check_versions``).  Nothing is noted for tensors that were never modified."""
    meta = self._meta
    if meta is None:
        meta = self._meta = {}
    v = meta.get("version", 0)
    meta["version"] = v + 1
    t = tape_of(self)
    if t is not None and self._row >= 0:
        t.side.dirty.append((self._row, t.n if at is None else at, weakref.ref(self), v))
    src = meta.get("detached_from")
    if src is not None and (src := src()) is not None and src._v is self._v:
        bump_version(src)  # a detached Tensor shares its source's array and version
        _written_through_alias(src)
        if src._meta is not None and _linked(src):
            with _untracked():  # and the memory of its base, or of its views: a change
                _after_write(src)  # autograd does not see, allowed into a leaf (x.data)
    elif src is None and "detached_view" in meta:
        with _untracked():
            _written_through_detached_view(self, *meta["detached_view"])


class _untracked:
    """``with _untracked():`` grad mode off (the write of a detached alias into its source's
    base is a change of storage, not an op: the base's gradient passes straight through)."""

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = False

    def __exit__(self, *exc):
        STATE.enabled = self.prev


def _written_through_detached_view(self, base_ref, key):
    """A write into ``v.detach()`` where the view ``v`` is gone (``y[1].detach().mul_(2)``):
    the view is read from its base again, takes the written values, and is written back
    (grad mode off), so the base changes as PyTorch's shared storage makes it, its gradient
    passing straight through the update."""
    base = base_ref()
    if base is None:
        return
    view = read_view(key, base)
    _untracked_update(view, np.array(self._v, dtype=np.float64))
    write_view(key, base, view)


def _written_through_alias(src):
    """A write into a detached alias (``b.detach().mul_(0)``) changed graph tensor ``src``'s
    array: ``src`` takes a new row holding the new value, an identity of its old row (so the
    gradient still reaches what it was computed from), and later ops read the new value in
    their backward too, as PyTorch's shared storage makes them."""
    t = tape_of(src)
    if src._leaf or not src._rg or t is None or t is not STATE.tape or src._row < 0:
        return
    _swap_in(src, O.record(t, C.RESHAPE, src._row, -1, src._v))


def _version(self):
    meta = self._meta
    return meta.get("version", 0) if meta else 0


def _swap_in(self, new, at=None):
    """Make ``self`` the handle of ``new``'s row (in-place op on a graph tensor); the rows
    from ``at`` on (``new``'s row by default) were computed from the old value."""
    if new.shape != self.shape:
        raise RuntimeError(
            f"in-place update changes shape {self.shape} to {new.shape}; "
            "in-place ops cannot broadcast the destination"
        )
    bump_version(self, new._row if at is None or new._tape is not tape_of(self) else at)
    t = self._tape
    if t is not None and t.alive and self._row >= 0 and not self._leaf:
        retained = t.side.retain
        if retained and self._row in retained and new._tape is t:
            retained[new._row] = retained.pop(self._row)  # .grad follows the new version
    k = getattr(new, "_k", None)
    if k is not None:
        self._k = k  # the new row's range is held by this handle now
    old = self._v
    self._v = new._v
    self._tape = new._tape
    self._row = new._row
    self._rg = new._rg
    self._leaf = new._leaf
    m = self._meta
    if m is not None and m.get("aliases"):
        _refresh_aliases(self, old, m["aliases"])


def _refresh_aliases(self, old, aliases):
    """Show ``self``'s new values in its detached aliases (``d = y.detach()`` shares y's old
    array, ``d = y[1].detach()`` holds y[1]'s values), as PyTorch's shared storage does: the
    new values are written into their memory, and y takes the old array back (holding the
    new values), so a later write into d reaches y again.  The old row's value may change
    with it; its version was bumped, so a backward that needs it raises, as PyTorch's."""
    live = []
    for ref, key in aliases:
        d = ref()
        if d is None:
            continue
        live.append((ref, key))
        dv = d._v
        if dv.__class__ is float or not dv.flags.writeable:
            continue
        if key is None:
            if dv is not old or old is self._v or old.shape != np.shape(self._v):
                continue
            old[...] = self._v
            self._v = old
        else:
            with _untracked():
                vals = read_view(key, self)._v
            if np.shape(vals) != dv.shape:
                continue
            dv[...] = vals
        if _linked(d):  # d's own views (``y.detach().T``) hold copies: derived again
            with _untracked():
                _refresh_views(d)
    aliases[:] = live


def _drop_leading_ones(self, key, value):
    """``x[1:3, :2] = v`` with v of shape (1, 1, 2): NumPy and PyTorch drop a value's leading
    size-1 dims beyond those of ``x[key]`` (broadcasting alone cannot take them)."""
    if not isinstance(value, (Tensor, np.ndarray)):
        return value
    shape = np.shape(value._v if isinstance(value, Tensor) else value)
    if not shape or shape[0] != 1:
        return value
    try:  # the indexed shape, from a broadcast view (no memory of x's size)
        target = np.broadcast_to(np.False_, self.shape)[O.index_key(key)[0]]
    except (IndexError, TypeError, ValueError):
        return value  # (the assignment raises its own error)
    extra = len(shape) - np.ndim(target)
    if extra <= 0 or any(d != 1 for d in shape[:extra]):
        return value
    if isinstance(value, Tensor):
        return O.reshape(value, shape[extra:])
    return value.reshape(shape[extra:])


def _setitem(self, key, value, opname="__setitem__"):
    if not STATE.transforms and key.__class__ is not int and key.__class__ is not slice:
        key = _index_ints(key)
        split = _torch_split(key)
        if split is not None:  # PyTorch's reading (see _torch_split): a write through a view
            return _setitem(_getitem(self, split[0]), split[1], value, opname)
    _check_inplace(self, opname)
    value = _drop_leading_ones(self, key, value)
    v = self._v
    if _assign_exactly(self, key, value, opname):
        if self._meta is not None and _linked(self):
            _after_write(self)
        return
    key, value = _dedupe_last(self, key, value)
    exact = v.__class__ is not float and v.dtype.kind != "f"
    if exact and isinstance(value, Tensor) and value._rg and STATE.enabled:
        raise TypeError(
            f"__setitem__: a value that requires grad written into a Tensor of dtype {v.dtype} "
            "(integers and booleans have no gradient); write it into a float Tensor "
            "(x = x.double())"
        )
    if not STATE.enabled or not (self._rg or (isinstance(value, Tensor) and value._rg)):
        new = O.setitem(self.detach(), key, value.detach() if isinstance(value, Tensor) else value)
        # an integer Tensor keeps its dtype: the written values cast as NumPy casts them
        _untracked_update(self, new._v.astype(v.dtype) if exact else new._v)
    else:
        _swap_in(self, O.setitem(self, key, value))
    if self._meta is not None and _linked(self):
        _after_write(self)


def _assign_exactly(self, key, value, opname):
    """``x[key] = value`` for an integer, boolean or float32 ``x`` and a value without grad:
    NumPy's own assignment into a copy of x's values, in x's dtype (exact for int64 beyond
    2**53, an int64 value cast into int32 as PyTorch casts it); False when it does not apply."""
    v = self._v
    if v.__class__ is float or v.dtype == np.float64:
        return False
    if isinstance(value, Tensor) and value._rg and STATE.enabled:
        return False
    P.check_fits(value, v.dtype, opname)
    new = O.numpy_exact(lambda a, val: _assigned(a, O.index_key(key)[0], val), self, value)
    _untracked_update(self, new._v)
    return True


def _assigned(a, key, value):
    out = np.array(a, copy=True)
    with np.errstate(invalid="ignore", over="ignore"):  # a float Tensor cast as PyTorch's
        out[key] = np.asarray(value).astype(out.dtype)
    return out


def _square(self):
    """``x.square()``: ``x * x``; a boolean x squares as int64 (PyTorch's ``x ** 2``).

    >>> import tapegrad as tg
    >>> tg.tensor([True, False]).square()
    tensor([1, 0])
    """
    if not self._rg and self._v.__class__ is not float and self._v.dtype == np.bool_:
        self = P.convert(self, np.int64)
    return O.square(self)


def _numpy_scan(fn):
    """NumPy's ``a.cumsum(axis=None, dtype=None, out=None)`` inside NumPy code: ``fn``
    (np.cumsum) as dispatched, so an integer Tensor's scan is NumPy's exact integer one."""

    def method(self, axis=None, dtype=None, out=None):
        return fn(self, axis=axis, dtype=dtype, out=out)

    method.__name__ = fn.__name__
    return method


def _fill_(self, value):
    _setitem(self, Ellipsis, value, "fill_")
    return self


_fill_.__doc__ = P._fill.__doc__


def _compare(ufunc, name):
    def method(self, other):
        ov = other._v if isinstance(other, Tensor) else other
        out = ufunc(np.asarray(self._v), np.asarray(ov) if not np.isscalar(ov) else ov)
        res = Tensor._const(np.asarray(out))
        hook = STATE.guard
        if hook is not None:
            hook(self, name, other, res)
        return res

    method.__name__ = name
    return method


# x.NAME(other), PyTorch's names of the comparison operators: (operator, x [1, 2, 3] NAME 2)
_COMPARISONS = {
    "eq": ("==", "tensor([False,  True, False])"),
    "ne": ("!=", "tensor([ True, False,  True])"),
    "lt": ("<", "tensor([ True, False, False])"),
    "le": ("<=", "tensor([ True,  True, False])"),
    "gt": (">", "tensor([False, False,  True])"),
    "ge": (">=", "tensor([False,  True,  True])"),
}


def _named_comparison(name, op):
    """``x.<name>(other)``: ``x <op> other`` (PyTorch's method name)."""
    symbol, result = _COMPARISONS[op.__name__ if op.__name__ in _COMPARISONS else name]

    def method(self, other):
        return op(self, other)

    method.__name__ = name
    method.__doc__ = f"""``x.{name}(other)``: ``x {symbol} other``, a boolean Tensor (no
    derivative).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0]).{name}(2.0)
    {result}
    """
    return method


def _zero_(self):
    """``x.zero_()``: set every element to 0 in place (e.g. a gradient buffer); returns x.

    Examples:
        >>> import tapegrad as tg
        >>> g = tg.tensor([1.0, 2.0])
        >>> g.zero_()
        tensor([0., 0.])
    """
    rg = self._rg  # (a .grad buffer does not: no grad-mode reads for it)
    with_grad = rg and self._leaf and STATE.enabled
    if with_grad or STATE.transforms or _base_of(self) is not None:
        _check_inplace(self, "zero_")
    if rg and not self._leaf and STATE.enabled:  # a graph result: zeros, gradient 0
        _setitem(self, Ellipsis, 0.0, "zero_")
        return self
    v = self._v
    zeros = 0.0 if v.__class__ is float else np.zeros_like(v)
    if rg and not self._leaf:  # under no_grad: a graph result keeps its place, as PyTorch's
        _untracked_update(self, zeros)
    else:
        _set_value(self, zeros)
    if self._meta is not None and _linked(self):
        _after_write(self)
    return self


def _bitwise(ufunc, symbol, reflected=False):
    """``&``, ``|``, ``^``, ``<<``, ``>>`` of integer or boolean Tensors (masks from
    comparisons, indices), computed by NumPy; they have no derivative, so a float Tensor is
    refused."""

    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        if not O.exact_operands(a, b):
            raise TypeError(
                f"x {symbol} y: bitwise operators take integer or boolean Tensors (got dtype "
                f"{self.dtype}); combine comparisons as (x > 0) {symbol} (y < 1), or convert "
                "with x.long() / x.bool()"
            )
        return O.numpy_exact(ufunc, a, b)

    method.__name__ = f"__{'r' if reflected else ''}{ufunc.__name__}__"
    return method


def _invert(self):
    """``~x``: logical not of a boolean Tensor, bitwise not of an integer one."""
    if not O.exact_operands(self):
        raise TypeError(
            f"~x: takes an integer or boolean Tensor (got dtype {self.dtype}); for a mask "
            "write ~(x > 0)"
        )
    return O.numpy_exact(np.invert, self)


def _rpow(self, other):
    return O.power(other, self)


def _normalized(fn, x, axis, dtype):
    """``fn`` (softmax or log_softmax) along ``axis`` of x cast to ``dtype`` (PyTorch's
    ``dtype=``); a 0-d x is one element along dim 0 or -1, as PyTorch's (softmax 1)."""
    x = O.tensor_of(x) if dtype is None else P.convert(O.tensor_of(x), dtype)
    axis = P.wrap_dim(axis, x.shape, fn.__name__)
    if x.ndim == 0:
        return O.reshape(fn(O.reshape(x, (1,)), 0), ())
    return fn(x, axis)


def _softmax(self, axis=None, *, dim=None, dtype=None):
    """``x.softmax(dim, dtype=None)``: softmax along ``dim`` (default the last axis).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0, 0.0], requires_grad=True)
        >>> x.softmax(dim=0)[1].backward(); x.grad     # -s0 s1, s1 (1 - s1)
        tensor([-0.2500, 0.2500])
    """
    axis = _axis(axis, dim)
    return _normalized(O.softmax, self, -1 if axis is None else axis, dtype)


def _log_softmax(self, axis=None, *, dim=None, dtype=None):
    """``x.log_softmax(dim, dtype=None)``: log-softmax along ``dim`` (default the last axis).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0, 0.0], requires_grad=True)
        >>> y = x.log_softmax(dim=0); y
        tensor([-0.6931, -0.6931], grad_fn=<SubBackward0>)
        >>> y[1].backward(); x.grad             # -s0, 1 - s1
        tensor([-0.5000, 0.5000])
    """
    axis = _axis(axis, dim)
    return _normalized(O.log_softmax, self, -1 if axis is None else axis, dtype)


def _logsumexp(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
    """``x.logsumexp(dim)``: log(sum(exp(x))) over ``dim`` (default all), stably.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[0.0, 0.0]], requires_grad=True)
        >>> y = x.logsumexp(dim=1, keepdim=True); y
        tensor([[0.6931]], grad_fn=<AddBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[0.5000, 0.5000]])
    """
    if keepdim is not None:
        keepdims = keepdim
    axes = P.torch_axes(_axis(axis, dim), self.shape, "Tensor.logsumexp")
    return O.logsumexp(self, axes, keepdims)


def _unsqueeze(self, dim):
    """``x.unsqueeze(dim)``: insert an axis of length 1 at ``dim``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([1.0, 2.0]).unsqueeze(1).shape
        (2, 1)
    """
    if isinstance(dim, (int, np.integer)):  # PyTorch's range: -ndim - 1 .. ndim
        dim = P.wrap_dim(dim, self.shape, "Tensor.unsqueeze", new=1)
    return O.expand_dims(self, dim)


def _squeeze(self, axis=None, *, dim=None):
    """``x.squeeze(dim)``: drop axes of length 1 (a named ``dim`` of another length is left alone,
    as in PyTorch).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.zeros(1, 2)
        >>> x.squeeze().shape, x.squeeze(dim=1).shape
        ((2,), (1, 2))
    """
    axis = _axis(axis, dim)
    if axis is not None:  # PyTorch: a named dim that is not of size one is left alone
        shape = self.shape
        dims = axis if isinstance(axis, (tuple, list)) else (axis,)
        axes = [P.wrap_dim(a, shape, "Tensor.squeeze") for a in dims]
        axis = tuple(a for a in sorted(set(axes)) if a < len(shape) and shape[a] == 1)
    return O.squeeze(self, axis)


def _expand(self, *shape):
    """``x.expand(*shape)``: broadcast to ``shape`` (-1 keeps an axis); its gradient sums the
    copies back.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0], [2.0]], requires_grad=True)
        >>> x.expand(-1, 3).sum().backward(); x.grad
        tensor([[3.],
                [3.]])
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    lead = len(shape) - self.ndim
    for i, s in enumerate(shape[:lead]):  # (``self.shape[i - lead]`` would wrap around and
        if s == -1:  # silently take the size of another dim)
            raise RuntimeError(
                f"Tensor.expand{tuple(shape)}: the size -1 is not allowed in a new leading "
                f"dim ({i}) of a tensor of shape {self.shape}; give its size, as in PyTorch"
            )
    shape = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    return O.broadcast_to(self, shape)


def _permute(self, *dims):
    """``x.permute(*dims)``: the axes in the order ``dims``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 3, 4).permute(2, 0, 1).shape
        (4, 2, 3)
    """
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return O.transpose(self, dims)


def _clip(self, min=None, max=None):  # noqa: A002 - NumPy's names
    """NumPy's ``a.clip(min, max)`` (np.clip) inside NumPy code: limit values to [min, max];
    gradient 1 inside, 0 where a bound holds.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-2.0, 0.5, 3.0], requires_grad=True)
        >>> x.clamp(min=-1.0, max=1.0).sum().backward(); x.grad
        tensor([0., 1., 0.])
    """
    return O.clip(self, min, max)


def _clamp_(self, min=None, max=None):  # noqa: A002
    """``x.clamp_(min, max)``: clamp in place; returns x.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-2.0, 0.5, 3.0])
        >>> x.clamp_(min=0.0)
        tensor([0.0000, 0.5000, 3.0000])
    """
    return _inplace(lambda s, _: P.clamp(s, min, max), "clamp_")(self, None)


def _pos(self):
    return self


def _clone(self):
    """A copy that stays in the graph (an identity row) when self requires grad.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x.clone()
        >>> (y * y).sum().backward(); x.grad
        tensor([2., 4.])
    """
    if self._rg:
        return O.reshape(self, self.shape)
    return Tensor._const(self._v if self._v.__class__ is float else self._v.copy())


# ---- ndarray methods composed from existing ops (so code written for arrays runs) ----------


def _astype(self, dtype, copy=True, **kw):
    """ndarray.astype: float64 keeps the graph (a copy, as NumPy makes); an integer or bool
    cast is piecewise constant, so it carries no derivative (like np.floor).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([1.5, -2.5]).astype(int).tolist()
        [1, -2]
    """
    dt = np.dtype(dtype)
    if dt == np.float64:
        return self.clone() if copy else self
    if dt.kind in "iub" or not self._rg:
        _guard(self, "astype")  # a trace pins the value it reads
        return new_tensor(self._v, dtype=dt)
    raise TypeError(
        f"Tensor.astype({dt}): tapegrad differentiates float64 values only; a "
        f"Tensor that requires grad cannot become {dt} (use astype(float))"
    )


def _guard(self, kind):
    _guard_hook(self, kind)


def _imag(self):
    """The imaginary part of a real Tensor: zeros, which do not depend on it (exactly).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, -2.0], requires_grad=True).imag
    tensor([0., 0.])
    """
    return Tensor._const(0.0 if self._v.__class__ is float else np.zeros(self.shape))


def _polygamma(self, n):
    """``x.polygamma(n)``: the n-th derivative of digamma at x (PyTorch's argument order).

    >>> import tapegrad as tg
    >>> tg.tensor([0.5, 3.0]).polygamma(1)
    tensor([4.9348, 0.3949])
    """
    return O.polygamma(n, self)


def _transposed(self):
    """``x.T``: the axes reversed (NumPy's attribute), differentiable.

    >>> import tapegrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).T
    tensor([[1., 3.],
            [2., 4.]])
    """
    return O.transpose(self)


def _copy(self, order="C"):
    """``x.copy()``: NumPy's name for ``clone``: a differentiable copy.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> (x.copy() * 2.0).sum().backward(); x.grad
    tensor([2., 2.])
    """
    return self.clone()


def _real(self):
    """``x.real``: a real Tensor is its own real part (the same Tensor, differentiable).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, -2.0])
    >>> x.real is x
    True
    """
    return self


def _conj(self):
    """``x.conj()`` / ``x.conjugate()``: of a real Tensor, a differentiable copy.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, -2.0]).conj()
    tensor([ 1., -2.])
    """
    return self.clone()


def _swapaxes(self, axis1, axis2):
    """``x.swapaxes(a, b)``: NumPy's method, differentiable.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).swapaxes(0, 1).shape
    (3, 2)
    """
    for a in (axis1, axis2):
        P.wrap_dim(a, self.shape, "Tensor.swapaxes")
    if self.ndim == 0:  # PyTorch's swapdims of a 0-d tensor's dims 0 / -1: itself
        return O.transpose(self)
    return O.swapaxes(self, axis1, axis2)


def _take(self, indices, axis=None, out=None, mode="raise"):
    """``x.take(indices, axis)``: elements at ``indices`` (of the flattened x when ``axis`` is
    None); the gradient goes back to the positions taken.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = x.take([3, 0]); y
        tensor([4., 1.], grad_fn=<IndexBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[1., 0.],
                [0., 1.]])
    """
    if out is not None:
        raise TypeError("Tensor.take: out= is not supported (results are new values)")
    if mode != "raise":  # NumPy's mode="wrap" / "clip"
        return np.take(self, indices, axis=axis, mode=mode)
    if axis is None:
        return O.getitem(O.reshape(self, (-1,)), indices)
    axis = axis % self.ndim
    return O.getitem(self, (slice(None),) * axis + (indices,))


def _trace_method(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``x.trace()``: the sum of the diagonal of a 2-D tensor; its gradient is the identity.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = x.trace(); y.item()
        5.0
        >>> y.backward(); x.grad
        tensor([[1., 0.],
                [0., 1.]])
    """
    if out is not None:
        raise TypeError("Tensor.trace: out= is not supported (results are new values)")
    if dtype is not None:
        self = P.convert(self, dtype)
    if self.ndim != 2:  # NumPy's trace of stacked matrices (PyTorch's takes 2-D ones only)
        return np.trace(self, offset, axis1, axis2)
    return O.sum(P._diagonal(self, offset, axis1, axis2)[0])


def _dot(self, other):
    """``x.dot(y)``: PyTorch's, of two 1-D Tensors; NumPy's ndarray.dot (a matrix product of
    2-D operands) inside NumPy code, which a number where PyTorch raises would be outside."""
    if not _numpy_code() and (self.ndim != 1 or np.ndim(other) != 1):
        raise RuntimeError(
            f"Tensor.dot: 1-D tensors expected, got shapes {self.shape} and {np.shape(other)} "
            "(as PyTorch's); for a matrix product use x @ y or x.mv(v)"
        )
    return O.dot(self, other)


def _calls(name, f, method):
    """``method`` documented as ``tg.f`` with x first (showing that function's example)."""
    method.__name__ = name
    usage = f"``x.{name}(...)`` is ``tg.{f.__name__}(x, ...)``."
    method.__doc__ = f"{usage}\n\n{inspect.cleandoc(f.__doc__)}"
    return method


def _inplace_method(fn, opname):
    method = _inplace(fn, opname)
    method.__name__ = opname
    method.__doc__ = _inplace_doc(opname, fn.__name__)
    return method


def _alpha_inplace(inplace):
    """``x.add_(other, alpha=1)`` / ``x.sub_(...)``: the in-place op of ``alpha * other``
    (PyTorch's ``alpha=``, as ``p.add_(g, alpha=-lr)`` in an optimizer step)."""

    def method(self, other, *, alpha=1):
        if alpha != 1:
            other = O.mul(other, alpha) if isinstance(other, Tensor) else np.multiply(other, alpha)
        return inplace(self, other)

    method.__name__ = inplace.__name__
    method.__doc__ = (
        inplace.__doc__
        + f"""
        ``alpha=`` scales ``other`` first, as PyTorch's:

        >>> w = tg.tensor([1.0, 2.0])
        >>> w.{inplace.__name__}(tg.tensor([10.0, 10.0]), alpha=0.5)
        tensor([{"6., 7." if inplace.__name__ == "add_" else "-4., -3."}])
    """
    )
    return method


def _rounding_inplace(inplace):
    """``x.div_(other, rounding_mode=None)``: the in-place division, its quotient rounded as
    PyTorch's ``rounding_mode=`` says (``"trunc"`` or ``"floor"``)."""
    rounded = _inplace_of(P._div, "div")

    def method(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return inplace(self, other)
        return rounded(self, other, rounding_mode=rounding_mode)

    method.__name__ = inplace.__name__
    method.__doc__ = (
        inplace.__doc__
        + """
        ``rounding_mode=`` rounds the quotient, as PyTorch's:

        >>> tg.tensor([7, -7]).div_(2, rounding_mode="trunc")
        tensor([ 3, -3])
    """
    )
    return method


def _inplace_of(fn, name):
    """``x.<name>_(...)``: ``x.<name>(...)`` (``fn``) written into x in place; returns x.  A
    Tensor argument that requires grad (src, source, a fill value) keeps its gradient."""
    opname = f"{name}_"

    def method(self, *args, **kwargs):
        grad_arg = next(
            (a for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a._rg), None
        )
        return _inplace(lambda s, _: fn(s, *args, **kwargs), opname)(self, grad_arg)

    method.__name__ = opname
    usage = f"``x.{opname}(...)``: ``x.{name}(...)`` written into x in place; returns x."
    method.__doc__ = f"{usage}\n\n{inspect.cleandoc(fn.__doc__)}"
    return method


# ``x.NAME_()`` for y = tg.tensor(input): its value, worked out by hand
_UNARY_INPLACE_EXAMPLES = {
    "exp": ("[0.0, 1.0]", "tensor([1.0000, 2.7183])"),
    "abs": ("[-1.5, 2.0]", "tensor([1.5000, 2.0000])"),
    "neg": ("[1.0, -2.0]", "tensor([-1.,  2.])"),
    "sqrt": ("[4.0, 2.25]", "tensor([2.0000, 1.5000])"),
    "sin": ("[0.0, 1.0]", "tensor([0.0000, 0.8415])"),
    "cos": ("[0.0, 1.0]", "tensor([1.0000, 0.5403])"),
    "tanh": ("[0.0, 1.0]", "tensor([0.0000, 0.7616])"),
    "sigmoid": ("[0.0, 2.0]", "tensor([0.5000, 0.8808])"),
    "relu": ("[-1.0, 2.0]", "tensor([0., 2.])"),
    "log": ("[1.0, 4.0]", "tensor([0.0000, 1.3863])"),
    "square": ("[-2.0, 3.0]", "tensor([4., 9.])"),
    "reciprocal": ("[2.0, -4.0]", "tensor([0.5000, -0.2500])"),
}


def _unary_inplace(name, fn):
    """``x.<name>_()``: ``x.<name>()`` written into x in place (in the graph when x is in
    one); returns x."""
    opname = f"{name}_"
    write = _inplace(lambda s, _: fn(s), opname)

    def method(self):
        return write(self, None)

    value, result = _UNARY_INPLACE_EXAMPLES[name]
    method.__name__ = opname
    method.__doc__ = f"""``x.{opname}()``: ``x.{name}()`` written into x in place; returns x
    (a graph tensor stays in the graph; an integer tensor refuses a float result).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor({value})
        >>> x.{opname}() is x, x
        (True, {result})
    """
    return method


def _pow_(self, exponent):
    """``x.pow_(exponent)``: ``x ** exponent`` written into x in place; returns x.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 1.0
        >>> y.pow_(3.0)
        tensor([1., 8.], grad_fn=<PowBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([ 3., 12.])
    """
    return _inplace(lambda s, e: O.power(s, e), "pow_")(self, exponent)


def _t_(self):
    """``x.t_()``: a square matrix transposed in place (0-D and 1-D tensors as they are);
    returns x.  A non-square matrix is refused: its shape would change, which a tapegrad
    Tensor's does not (write ``x = x.t()``).

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x.t_()
    tensor([[1., 3.],
            [2., 4.]])
    """
    if self.ndim == 2 and self.shape[0] != self.shape[1]:
        raise RuntimeError(
            f"Tensor.t_: a tensor's shape does not change in place in tapegrad (shape "
            f"{self.shape} would become {self.shape[::-1]}); write x = x.t()"
        )
    return _inplace(lambda s, _: P._t(s), "t_")(self, None)


def _copy_(self, src, non_blocking=False):
    """``x.copy_(src)``: ``src``'s values (broadcast to x's shape, cast to x's dtype) written
    into x in place; returns x.  The gradient reaches ``src`` (x's old value gets none).

    Examples:
        >>> import tapegrad as tg
        >>> s = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.zeros(2, 2)
        >>> y.copy_(s)
        tensor([[1., 2.],
                [1., 2.]], grad_fn=<IndexPutBackward0>)
        >>> y.sum().backward(); s.grad
        tensor([2., 2.])
    """
    shape = np.shape(src._v if isinstance(src, Tensor) else src)
    if len(shape) > self.ndim or any(
        a not in (1, b) for a, b in zip(shape[::-1], self.shape[::-1], strict=False)
    ):
        raise RuntimeError(
            f"Tensor.copy_: src of shape {shape} does not broadcast to x's shape {self.shape}"
        )
    _setitem(self, Ellipsis, src)
    return self


def _detach_(self):
    """``x.detach_()``: x taken out of the graph in place: it becomes a leaf that does not
    require grad (a leaf that did stops requiring it); returns x.  Gradients already
    recorded through x are unchanged.  A view is refused, as PyTorch refuses it.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 2.0
        >>> y.detach_() is y, y.requires_grad, y.is_leaf
        (True, False, True)
    """
    if _base_of(self) is not None:
        raise RuntimeError(
            "Tensor.detach_: a view cannot be detached in place (as in PyTorch); use "
            "x.detach(), which returns a new Tensor"
        )
    self.detach()  # (a trace recording notes the read, as for detach())
    self._invalidate()
    self._rg = False
    self._leaf = True
    return self


def _numpy_code():
    """Inside a transform or trace recording of NumPy code (``tg.grad(f)(array)``)."""
    return bool(STATE.transforms and not STATE.torch_code)


def _numpy_reduction(torch_method, np_fn, name):
    """``a.sum(axis, dtype, out, keepdims, initial, where)`` & co. with NumPy's positional
    order inside NumPy code (PyTorch's second positional argument is ``keepdim``)."""

    def method(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise TypeError(f"ndarray.{name}: out= is not supported (results are new values)")
        if dtype is not None:
            self = P.convert(self, dtype)
        if kw:  # initial= / where=: np.sum & co. take them
            return np_fn(self, axis, keepdims=bool(keepdims), **kw)
        return torch_method(self, axis, bool(keepdims))

    method.__name__ = name
    return method


def _numpy_argsort(self, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``a.argsort(axis=-1, kind=None)`` inside NumPy code: axis=None sorts the
    flattened array (PyTorch's second positional argument is ``descending``)."""
    if order is not None:
        raise TypeError("ndarray.argsort: order= (fields of a structured array) means nothing here")
    if axis is None or self.ndim == 0:
        self, axis = O.reshape(self, (-1,)), -1
    return P._argsort(self, axis, False, True)


def _argpartition(self, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``a.argpartition(kth, axis=-1)``: indices that put the ``kth`` element(s)
    where a sort would (here a stable argsort, one of the valid answers).

    >>> import tapegrad as tg
    >>> tg.tensor([3.0, 1.0, 2.0]).argpartition(1)
    array([1, 2, 0])
    """
    if order is not None:
        raise TypeError("ndarray.argpartition: order= has no meaning here")
    return np.argpartition(self, kth, axis=axis)


def _partition(self, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``a.partition(kth, axis=-1)``: in place, returns None (here ``a`` is sorted
    along ``axis``, one of the valid partitions).

    >>> import tapegrad as tg
    >>> y = tg.tensor([3.0, 1.0, 2.0])
    >>> y.partition(1); y
    tensor([1., 2., 3.])
    """
    if order is not None:
        raise TypeError("ndarray.partition: order= has no meaning here")
    np.partition(np.asarray(self._v), kth, axis=axis)  # NumPy's checks of kth and axis
    _inplace(lambda s, d: P._sort(s, d).values, "partition")(self, axis)


def _compress(self, condition, axis=None, out=None):
    """NumPy's ``a.compress(condition, axis=None)``: the slices where ``condition`` holds.

    >>> import tapegrad as tg
    >>> tg.tensor([3.0, 1.0, 2.0]).compress([True, False, True])
    tensor([3., 2.])
    """
    if out is not None:
        raise TypeError("ndarray.compress: out= is not supported (results are new values)")
    return np.compress(condition, self, axis=axis)


def _choose(self, choices, out=None, mode="raise"):
    """NumPy's ``a.choose(choices)``: ``a`` holds indices into ``choices``.

    >>> import tapegrad as tg
    >>> tg.tensor([1, 0, 1]).choose([tg.tensor([1.0, 2.0, 3.0]), tg.tensor([10.0, 20.0, 30.0])])
    tensor([10.,  2., 30.])
    """
    if out is not None:
        raise TypeError("ndarray.choose: out= is not supported (results are new values)")
    return np.choose(self, choices, mode=mode)


def _put_values(self, ind, v, mode):
    """``self`` flattened with the elements at ``ind`` set to ``v`` (repeated as needed; the
    last write of a repeated position wins), reshaped back: NumPy's ``put``."""
    n = self.numel()
    idx = np.asarray(ind._v if isinstance(ind, Tensor) else ind).reshape(-1)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"put: indices must be integers, got dtype {idx.dtype}")
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif mode == "raise":
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"put: index out of bounds for a size-{n} array")
        idx = idx % n
    else:
        raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    flat = O.reshape(self, (-1,))
    if idx.size == 0:
        return O.reshape(flat, self.shape)
    uniq, first_rev = np.unique(idx[::-1], return_index=True)
    last = idx.size - 1 - first_rev  # the last write of each position, as NumPy's
    if isinstance(v, Tensor):
        vv = O.getitem(O.reshape(v, (-1,)), (last % max(v.numel(), 1),))
    else:
        vv = np.resize(np.asarray(v, dtype=np.result_type(self._v, np.asarray(v))), idx.size)
        vv = vv[last]
    new = P._index_copy(flat, 0, new_tensor(uniq.astype(np.int64)), vv)
    return O.reshape(new, self.shape)


def _put(self, ind, v, mode="raise"):
    """NumPy's ``a.put(ind, v, mode='raise')``: writes ``v`` at the flat positions ``ind`` of
    ``a`` in place (the gradient goes to ``v`` there, to ``a`` elsewhere), returns None."""
    _inplace(lambda s, args: _put_values(s, *args), "put")(self, (ind, v, mode))


def _put_either(self, *args, **kwargs):
    """PyTorch's ``x.put(index, source, accumulate=False)``: a copy of x with ``source``
    written at the flat positions ``index`` (``tg.put``).  Inside NumPy code
    (``tg.grad(f)(array)``, without ``accumulate=``) NumPy's ``a.put(ind, v, mode='raise')``:
    in place (the gradient goes to ``v`` there, to ``a`` elsewhere), returning None.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.zeros(2, 2).put(tg.tensor([3, 0]), tg.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 1.]])
        >>> def f(a):
        ...     b = a * 1.0
        ...     b.put([0], [5.0])
        ...     return (b * b).sum()
        >>> tg.grad(f)(np.array([1.0, 2.0]))
        array([0., 4.])
    """
    if _numpy_code() and "accumulate" not in kwargs:
        return _put(self, *args, **kwargs)
    return P._torch_put(self, *args, **kwargs)


def _unfold(self, dimension, size, step):
    out = P._unfold(self, dimension, size, step)
    key, zero_d, overlap = P._unfold_key(self, dimension, size, step)
    if isinstance(out, Tensor) and out is not self and out.numel():
        if overlap or self.ndim == 0:
            _note_view(self, out, Windows(zero_d if self.ndim == 0 else key, self.ndim == 0))
        else:
            link_view(self, out, key)
    return out


_unfold.__doc__ = P._unfold.__doc__


class FlatIter:
    """``a.flat``: NumPy's flat iterator over a Tensor (C order); reading gives the
    elements (with their gradient), ``a.flat[i] = v`` writes into ``a``.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[3.0, 1.0], [2.0, 4.0]])
    >>> x.flat[2], len(x.flat)
    (tensor(2.), 4)
    """

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __len__(self):
        return self.base.numel()

    def __iter__(self):
        return iter(O.reshape(self.base, (-1,)))

    def __getitem__(self, key):
        return O.getitem(O.reshape(self.base, (-1,)), key)

    def __setitem__(self, key, value):
        shape = self.base.shape
        pos = np.arange(self.base.numel()).reshape(-1)[key]
        self.base[np.unravel_index(pos, shape)] = value


# ndarray attributes a Tensor has no meaning for (no memory buffer, a fixed shape)
_NDARRAY_ONLY = {
    "strides": "a traced value has no memory layout (use a.shape)",
    "base": "a traced value has no memory buffer",
    "flags": "a traced value has no memory buffer",
    "ctypes": "a traced value has no memory buffer",
    "resize": (
        "a traced value cannot change its shape in place: write a = np.resize(a, shape) "
        "(which repeats a) or a = np.concatenate([a.ravel(), np.zeros(k)]).reshape(shape) "
        "(ndarray.resize's zero fill)"
    ),
    "tobytes": "a traced value has no memory buffer (bytes would drop its gradient)",
    "tofile": "write the value of a.detach().numpy() outside the transform",
    "dump": "write the value of a.detach().numpy() outside the transform",
    "dumps": "pickle the value of a.detach().numpy() outside the transform",
    "byteswap": "a traced value has no memory buffer",
    "getfield": "a traced value has no memory buffer (use a.view() or a.astype(dtype))",
    "setfield": "a traced value has no memory buffer",
    "setflags": "a traced value has no memory buffer",
    "itemset": "write a[i] = v",
}


def _contains(self, value):
    """``value in a``: whether any element of ``a`` equals ``value`` (NumPy's and PyTorch's;
    without it Python would compare ``value`` with the rows of a 2-D ``a``)."""
    return bool((self == value).any())


def _to_device(self, device, /, *, stream=None):
    """NumPy's ``a.to_device("cpu")``: ``a`` itself (tapegrad computes on the CPU).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).to_device("cpu")
    tensor([1., 2.])
    """
    if device != "cpu" or stream is not None:
        raise ValueError(f"to_device: tapegrad computes on the CPU only, got {device!r}")
    return self


def _array_namespace(self, *, api_version=None):
    """NumPy's ``a.__array_namespace__()``: numpy, whose functions take Tensors."""
    return np


_NUMPY_CODE_EXAMPLES = {
    "device": """NumPy's ``a.device`` (``"cpu"``) inside NumPy code.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> tg.grad(lambda a: a.sum() if a.device == "cpu" else 0.0)(np.ones(2))
    array([1., 1.])
    """,
}

# NumPy's, inside NumPy code only (PyTorch's device has another meaning)
_NUMPY_CODE_ONLY = {"device": lambda self: "cpu"}


def _ndarray_only(name, fix):
    """A property that says why ``ndarray.<name>`` is not on Tensors (as an AttributeError,
    so ``hasattr`` is False).  Properties, not ``__getattr__``: every missing attribute read
    (``getattr(h, "_m", None)`` on an op result, many a step) would pay a Python call."""

    def get(self):
        raise AttributeError(f"ndarray.{name} is not supported on tapegrad Tensors: {fix}")

    get.__doc__ = f"""NumPy's ``ndarray.{name}``, which a Tensor cannot have: {fix}.

    >>> import tapegrad as tg
    >>> hasattr(tg.tensor([1.0]), "{name}")
    False
    """
    return property(get)


def _numpy_code_only(name, value):
    """A property that is NumPy's ``ndarray.<name>`` inside NumPy code and missing elsewhere
    (PyTorch's attribute of that name means something else)."""

    def get(self):
        if _numpy_code():
            return value(self)
        raise AttributeError(
            f"Tensor.{name}: PyTorch's Tensor.{name} is not supported (tapegrad computes on the "
            f"CPU); NumPy's ndarray.{name} is, inside tg.grad & co. of NumPy code"
        )

    get.__doc__ = _NUMPY_CODE_EXAMPLES[name]
    return property(get)


# PyTorch's in-place variants ``x.NAME_(...)`` of the methods ``x.NAME(...)``, made from this
# one table: NAME -> (the example's x, the example's arguments)
_INPLACE_VARIANTS = {
    **dict.fromkeys(
        "acos arccos asin arcsin atan arctan atanh arctanh erf erfinv tan".split(),
        ("[0.5, -0.25]", ""),
    ),
    **dict.fromkeys("acosh arccosh".split(), ("[1.5, 2.0]", "")),
    **dict.fromkeys(
        "asinh arcsinh cosh sinh ceil floor round trunc fix frac sign sgn exp2 expm1 erfc sinc "
        "deg2rad rad2deg absolute nan_to_num".split(),
        ("[1.5, -2.25]", ""),
    ),
    **dict.fromkeys("log1p log2 log10 rsqrt digamma lgamma i0 logit".split(), ("[0.5, 0.25]", "")),
    "polygamma": ("[0.5, 2.0]", "1"),
    "mvlgamma": ("[1.5, 2.0]", "2"),
    "clip": ("[1.5, -2.25]", "-1.0, 1.0"),
    "cumsum": ("[1.5, -2.25]", "0"),
    "cumprod": ("[1.5, -2.25]", "0"),
    "tril": ("[[1.0, 2.0], [3.0, 4.0]]", ""),
    "triu": ("[[1.0, 2.0], [3.0, 4.0]]", ""),
    **dict.fromkeys(
        "eq ne not_equal lt less le less_equal gt greater ge greater_equal logical_and "
        "logical_or logical_xor fmod remainder hypot atan2 arctan2 float_power floor_divide "
        "true_divide divide multiply subtract xlogy copysign ldexp nextafter".split(),
        ("[1.5, -2.25]", "tg.tensor([1.0, 2.0])"),
    ),
    "heaviside": ("[1.5, 0.0]", "tg.tensor([0.5, 0.5])"),
    "logical_not": ("[1.5, 0.0]", ""),
    **dict.fromkeys("gcd lcm".split(), ("[6, 4]", "tg.tensor([4, 10])")),
    **dict.fromkeys(
        "bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift".split(),
        ("[12, 10]", "tg.tensor([2, 1])"),
    ),
    "bitwise_not": ("[12, 10]", ""),
    "renorm": ("[[3.0, 4.0], [0.3, 0.4]]", "2, 0, 1.0"),
    "addmm": ("[[1.0, 2.0], [3.0, 4.0]]", "tg.eye(2), tg.ones(2, 2)"),
    "addmv": ("[1.0, 2.0]", "tg.eye(2), tg.ones(2)"),
    "addr": ("[[1.0, 2.0], [3.0, 4.0]]", "tg.ones(2), tg.ones(2)"),
    "baddbmm": ("[[[1.0, 2.0], [3.0, 4.0]]]", "tg.ones(1, 2, 2), tg.ones(1, 2, 2)"),
    "addbmm": ("[[1.0, 2.0], [3.0, 4.0]]", "tg.ones(1, 2, 2), tg.ones(1, 2, 2)"),
    "index_reduce": ("[1.0, 2.0]", '0, tg.tensor([0, 0]), tg.tensor([3.0, 4.0]), "prod"'),
}


def _written_as(self, new, opname):
    """``new`` (the out-of-place result) in ``self``'s dtype, as an in-place op writes it
    (a comparison's booleans into a float x are 1.0 and 0.0; a float result into an integer
    x is refused)."""
    if not isinstance(new, Tensor):
        new = O.tensor_of(new)
    if new.dtype != self.dtype:
        _same_kind(self, new._v, opname)
        new = P.convert(new, self.dtype)
    return new


def _inplace_variant(name, example):
    """``x.<name>_(...)``: PyTorch's in-place variant of ``x.<name>(...)`` (looked up when
    called), written into x; returns x.  A Tensor argument that requires grad keeps its
    gradient; a leaf that requires grad is refused (outside no_grad), versions bump and the
    views of x see the change, as for every in-place op."""
    opname = f"{name}_"

    def compute(s, *args, **kwargs):
        return _written_as(s, getattr(s, name)(*args, **kwargs), opname)

    compute.__doc__ = f"``x.{name}(...)`` in x's dtype."
    method = _inplace_of(compute, name)
    value, args = example
    method.__doc__ = f"""``x.{opname}(...)``: PyTorch's ``Tensor.{opname}``, ``x.{name}(...)``
    written into x in place (in x's dtype); returns x.  Under autograd it is a step of the
    graph (gradients flow through it as through ``x.{name}``); on a leaf that requires grad
    it is refused outside ``tg.no_grad()``, as in PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor({value})
        >>> y = x.{name}({args})
        >>> x.{opname}({args}) is x, x.tolist() == y.tolist(), x.dtype == tg.tensor({value}).dtype
        (True, True, True)
    """
    return method


def _same_shape_inplace(name, doc_example, result):
    """``x.<name>_(...)`` of a view method (squeeze, unsqueeze, transpose, swapaxes): a
    tapegrad Tensor's shape does not change in place, so it is done when the shape stays
    (a square transpose, a squeeze of no dim of length 1) and refused otherwise."""
    opname = f"{name}_"

    def method(self, *args, **kwargs):
        new_shape = getattr(self.detach(), name)(*args, **kwargs).shape
        if new_shape != self.shape:
            raise RuntimeError(
                f"Tensor.{opname}: a tensor's shape does not change in place in tapegrad "
                f"(shape {self.shape} would become {new_shape}); write x = x.{name}(...)"
            )
        return _inplace(lambda s, _: getattr(s, name)(*args, **kwargs), opname)(self, None)

    method.__name__ = opname
    method.__doc__ = f"""``x.{opname}(...)``: PyTorch's ``Tensor.{opname}``, ``x.{name}(...)``
    in place; returns x.  A tapegrad Tensor's shape does not change in place: where it
    would, this raises (write ``x = x.{name}(...)``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.{opname}({doc_example}) is x, x.tolist()
        {result}
    """
    return method


# PyTorch's random fills: name -> (signature, distribution, example arguments, a check of
# the example's draws)
_RANDOM_FILLS = {
    "normal_": ("mean=0, std=1", "normal", "2.0, 0.5", "abs(x.mean().item() - 2.0) < 0.1"),
    "uniform_": ("from_=0, to=1", "uniform on [from, to)", "-1.0, 3.0", "-1.0 <= x.min().item()"),
    "exponential_": ("lambd=1", "exponential", "2.0", "abs(x.mean().item() - 0.5) < 0.1"),
    "geometric_": ("p", "geometric (1, 2, ...)", "0.5", "x.min().item() >= 1.0"),
    "log_normal_": ("mean=1, std=2", "log-normal", "0.0, 0.25", "x.min().item() > 0.0"),
    "cauchy_": ("median=0, sigma=1", "Cauchy", "0.0, 1.0", "abs(x.median().item()) < 0.2"),
}


def _random_fill(name, draws):
    """``x.<name>(...)``: x filled in place with draws from tapegrad's generator
    (``tg.manual_seed``); no gradient history (the draws replace x's value)."""
    signature, what, args, check = _RANDOM_FILLS[name]

    def method(self, *args, generator=None, **kwargs):
        if generator is not None:
            raise TypeError(f"Tensor.{name}: generator= is not supported (use tg.manual_seed)")
        if self.dtype.kind != "f":
            raise RuntimeError(
                f"Tensor.{name}: expects a floating-point tensor (as in PyTorch), got {self.dtype}"
            )
        _check_inplace(self, name)
        v = np.asarray(draws(self.shape, *args, **kwargs), dtype=self.dtype)
        return _inplace(lambda s, _: new_tensor(v, dtype=self.dtype), name)(self, None)

    method.__name__ = name
    method.__doc__ = f"""``x.{name}({signature})``: PyTorch's ``Tensor.{name}``, x filled in
    place with {what} draws from tapegrad's generator (``tg.manual_seed``); returns x.  The
    draws have no gradient history; on a leaf that requires grad it is refused outside
    ``tg.no_grad()``, as in PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> x = tg.zeros(2000)
        >>> x.{name}({args}) is x, {check}
        (True, True)
    """
    return method


def _random_(self, from_=0, to=None, *, generator=None):
    """``x.random_(from=0, to=None)``: PyTorch's ``Tensor.random_``, x filled in place with
    integers drawn uniformly from ``[from, to)`` (``random_(to)``: ``[0, to)``; no bound: up
    to ``2 ** 53`` for float64, the dtype's range for integers), from tapegrad's generator
    (``tg.manual_seed``); no gradient history.

    >>> import tapegrad as tg
    >>> x = tg.zeros(3).random_(2, 5)
    >>> bool(((x >= 2) & (x < 5) & (x == x.round())).all())
    True
    """
    if generator is not None:
        raise TypeError("Tensor.random_: generator= is not supported (use tg.manual_seed)")
    _check_inplace(self, "random_")
    v = P.random_draws(self.shape, self.dtype, from_, to)
    return _inplace(lambda s, _: new_tensor(v, dtype=self.dtype), "random_")(self, None)


def _bernoulli_(self, p=0.5, *, generator=None):
    """``x.bernoulli_(p=0.5)``: PyTorch's ``Tensor.bernoulli_``, x filled in place with 0/1
    draws of probability ``p`` (a number, or a tensor of probabilities broadcast to x), from
    tapegrad's generator (``tg.manual_seed``); no gradient history.

    >>> import tapegrad as tg
    >>> tg.zeros(3).bernoulli_(tg.tensor([0.0, 1.0, 1.0]))
    tensor([0., 1., 1.])
    """
    if generator is not None:
        raise TypeError("Tensor.bernoulli_: generator= is not supported (use tg.manual_seed)")
    _check_inplace(self, "bernoulli_")
    prob = np.broadcast_to(np.asarray(p._v if isinstance(p, Tensor) else p), self.shape)
    v = P._draw_bernoulli(prob, self.shape, self.dtype)
    return _inplace(lambda s, _: new_tensor(v, dtype=self.dtype), "bernoulli_")(self, None)


def _fill_diagonal_(self, fill_value, wrap=False):
    """``x.fill_diagonal_(fill_value, wrap=False)``: PyTorch's ``Tensor.fill_diagonal_``,
    the main diagonal of x (2-D, or all dims of one length) set to ``fill_value`` in place
    (a tall matrix's diagonal restarting after every ``ncols + 1`` rows when ``wrap``);
    returns x.  The gradient of x's other elements passes through.

    >>> import tapegrad as tg
    >>> tg.zeros(3, 2).fill_diagonal_(5.0, wrap=True)
    tensor([[5., 0.],
            [0., 5.],
            [0., 0.]])
    """
    return _inplace(lambda s, _: P.fill_diagonal_values(s, fill_value, wrap), "fill_diagonal_")(
        self, None
    )


def _retains_grad(self):
    """``y.retains_grad``: PyTorch's ``Tensor.retains_grad``: whether ``y.retain_grad()``
    was called on this non-leaf (a leaf keeps its gradient anyway: False).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0], requires_grad=True)
    >>> y = x * 2.0
    >>> y.retains_grad, (y.retain_grad(), y.retains_grad)[1], x.retains_grad
    (False, True, False)
    """
    if self._leaf:
        return False
    t = tape_of(self)
    ref = None if t is None else t.side.retain.get(self._row)
    return ref is not None and ref() is self


_TK = ("dim", "keepdim")  # PyTorch-only keywords of sum, mean, prod


class TensorMethods(ElementwiseMethods):
    """Tensor's operators and NumPy/PyTorch-style methods (a base class of the public
    ``Tensor``), each a thin call into ``functions``."""

    __slots__ = ()
    __hash__ = Tensor.__hash__  # (defining __eq__ would drop the inherited one)

    clone = _clone
    __add__ = __radd__ = _add
    __sub__ = O.sub
    __rsub__ = lambda s, o: O.sub(o, s)  # noqa: E731
    __mul__ = __rmul__ = _mul
    __truediv__ = O.div
    __rtruediv__ = lambda s, o: O.div(o, s)  # noqa: E731
    __pow__ = lambda s, o: O.power(s, o)  # noqa: E731
    __rpow__ = _rpow
    __matmul__ = lambda s, o: O.matmul(s, o)  # noqa: E731
    __rmatmul__ = lambda s, o: O.matmul(o, s)  # noqa: E731
    __neg__ = neg = O.neg
    __pos__ = _pos
    __abs__ = O.abs_
    __getitem__ = _getitem
    __setitem__ = _setitem
    __lt__ = _compare(np.less, "__lt__")
    __le__ = _compare(np.less_equal, "__le__")
    __gt__ = _compare(np.greater, "__gt__")
    __ge__ = _compare(np.greater_equal, "__ge__")
    __eq__ = _compare(np.equal, "__eq__")
    __ne__ = _compare(np.not_equal, "__ne__")
    __iadd__ = _inplace_method(O.add, "add_")
    __isub__ = _inplace_method(O.sub, "sub_")
    add_ = _alpha_inplace(__iadd__)
    sub_ = _alpha_inplace(__isub__)
    __imul__ = mul_ = _inplace_method(O.mul, "mul_")
    __itruediv__ = _inplace_method(O.div, "div_")
    div_ = _rounding_inplace(__itruediv__)
    clamp_ = _clamp_
    clamp_min_ = _inplace_of(P._clamp_min, "clamp_min")
    clamp_max_ = _inplace_of(P._clamp_max, "clamp_max")
    masked_fill_ = _inplace_of(P._masked_fill, "masked_fill")
    masked_scatter_ = _inplace_of(P._masked_scatter, "masked_scatter")
    scatter_ = _inplace_of(P._scatter, "scatter")
    scatter_add_ = _inplace_of(P._scatter_add, "scatter_add")
    scatter_reduce_ = _inplace_of(P._scatter_reduce, "scatter_reduce")
    index_put_ = _inplace_of(P._index_put, "index_put")
    put_ = _inplace_of(P._torch_put, "put")
    index_add_ = _inplace_of(P._index_add, "index_add")
    index_copy_ = _inplace_of(P._index_copy, "index_copy")
    index_fill_ = _inplace_of(P._index_fill, "index_fill")
    lerp_ = _inplace_of(P._lerp, "lerp")
    addcmul_ = _inplace_of(P._addcmul, "addcmul")
    addcdiv_ = _inplace_of(P._addcdiv, "addcdiv")
    zero_ = _zero_
    _version = property(_version)
    exp_ = _unary_inplace("exp", O.exp)
    abs_ = _unary_inplace("abs", O.abs_)
    neg_ = negative_ = _unary_inplace("neg", O.neg)
    sqrt_ = _unary_inplace("sqrt", O.sqrt)
    sin_ = _unary_inplace("sin", O.sin)
    cos_ = _unary_inplace("cos", O.cos)
    tanh_ = _unary_inplace("tanh", O.tanh)
    sigmoid_ = _unary_inplace("sigmoid", O.sigmoid)
    relu_ = _unary_inplace("relu", O.relu)
    log_ = _unary_inplace("log", O.log)
    square_ = _unary_inplace("square", O.square)
    reciprocal_ = _unary_inplace("reciprocal", O.reciprocal)
    pow_ = _pow_
    t_ = _t_
    squeeze_ = _same_shape_inplace("squeeze", "", "(True, [[1.0, 2.0], [3.0, 4.0]])")
    unsqueeze_ = _same_shape_inplace(
        "unsqueeze",
        "0",
        "Traceback (most recent call last):\n        ...\n        RuntimeError: "
        "Tensor.unsqueeze_: a tensor's shape does not change in place in tapegrad ...",
    )
    transpose_ = _same_shape_inplace("transpose", "0, 1", "(True, [[1.0, 3.0], [2.0, 4.0]])")
    swapaxes_ = _same_shape_inplace("swapaxes", "0, 1", "(True, [[1.0, 3.0], [2.0, 4.0]])")
    swapdims_ = _same_shape_inplace("swapdims", "0, 1", "(True, [[1.0, 3.0], [2.0, 4.0]])")
    normal_ = _random_fill("normal_", P._normal_draws)
    uniform_ = _random_fill("uniform_", P._uniform_draws)
    exponential_ = _random_fill("exponential_", P._exponential_draws)
    geometric_ = _random_fill("geometric_", P._geometric_draws)
    log_normal_ = _random_fill("log_normal_", P._log_normal_draws)
    cauchy_ = _random_fill("cauchy_", P._cauchy_draws)
    random_ = _random_
    bernoulli_ = _bernoulli_
    fill_diagonal_ = _fill_diagonal_
    retains_grad = property(_retains_grad)
    copy_ = _copy_
    detach_ = _detach_

    # elementwise functions of x alone beyond the declared ones (ElementwiseMethods)
    leaky_relu = O.leaky_relu
    reciprocal, deg2rad, rad2deg = O.reciprocal, O.deg2rad, O.rad2deg
    square = _square
    nan_to_num = P._nan_to_num
    negative, sgn, fix = O.neg, O.sign, O.trunc  # PyTorch's other names
    polygamma = _polygamma
    __mod__ = O.remainder
    __rmod__ = lambda s, o: O.remainder(o, s)  # noqa: E731
    __floordiv__ = O.floor_divide
    __rfloordiv__ = lambda s, o: O.floor_divide(o, s)  # noqa: E731
    __and__ = _bitwise(np.bitwise_and, "&")
    __rand__ = _bitwise(np.bitwise_and, "&", reflected=True)
    __or__ = _bitwise(np.bitwise_or, "|")
    __ror__ = _bitwise(np.bitwise_or, "|", reflected=True)
    __xor__ = _bitwise(np.bitwise_xor, "^")
    __rxor__ = _bitwise(np.bitwise_xor, "^", reflected=True)
    __lshift__ = _bitwise(np.left_shift, "<<")
    __rlshift__ = _bitwise(np.left_shift, "<<", reflected=True)
    __rshift__ = _bitwise(np.right_shift, ">>")
    __rrshift__ = _bitwise(np.right_shift, ">>", reflected=True)
    __invert__ = _invert
    # ``x op= y`` changes x in place, as NumPy's and PyTorch's (without these Python would
    # rebind x to a new Tensor, and a view's base, or a base's views, would keep old values)
    __ipow__ = _pow_
    __imod__ = _inplace(O.remainder, "remainder_")
    __ifloordiv__ = _inplace(O.floor_divide, "floor_divide_")
    __iand__ = _inplace(__and__, "bitwise_and_")
    __ior__ = _inplace(__or__, "bitwise_or_")
    __ixor__ = _inplace(__xor__, "bitwise_xor_")
    __ilshift__ = _inplace(__lshift__, "bitwise_left_shift_")
    __irshift__ = _inplace(__rshift__, "bitwise_right_shift_")
    __divmod__ = O.divmod_
    __rdivmod__ = lambda s, o: O.divmod_(o, s)  # noqa: E731

    # reductions (axis= or PyTorch's dim=, keepdims= or keepdim=)
    sum = P.numpy_or_torch(_reduction(O.sum), _numpy_reduction(O.sum, np.sum, "sum"), _TK)
    mean = P.numpy_or_torch(_reduction(O.mean), _numpy_reduction(O.mean, np.mean, "mean"), _TK)
    prod = P.numpy_or_torch(_reduction(O.prod), _numpy_reduction(O.prod, np.prod, "prod"), _TK)
    amax = _reduction(O.amax)
    amin = _reduction(O.amin)
    max = P.numpy_or_torch(P._max, P._numpy_max, ("dim", "keepdim"))
    min = P.numpy_or_torch(P._min, P._numpy_min, ("dim", "keepdim"))
    argmax = P._argmax
    argmin = P._argmin
    var = P.numpy_or_torch(P._var, P._numpy_var, ("dim", "keepdim", "unbiased"))
    std = P.numpy_or_torch(P._std, P._numpy_std, ("dim", "keepdim", "unbiased"))
    logsumexp = _logsumexp
    softmax = _softmax
    log_softmax = _log_softmax

    # shape
    reshape = viewing(P._reshape, reshapes=True)
    view = _view
    transpose = viewing(_transpose)
    permute = viewing(_permute)
    T = property(viewing(_transposed))
    squeeze = viewing(_squeeze)
    unsqueeze = expand_dims = viewing(_unsqueeze)
    flatten = _flatten
    ravel = viewing(P._ravel, ravels=True)
    expand = broadcasting(_expand)
    broadcast_to = broadcasting(
        _calls("broadcast_to", O.broadcast_to, lambda s, shape: O.broadcast_to(s, shape))
    )
    swapaxes = viewing(_swapaxes)
    take = _take
    repeat = P.numpy_or_torch(P._repeat, P._numpy_repeat, ())
    repeat_interleave = P._repeat_interleave
    sort = P.numpy_or_torch(P._sort, _numpy_sort, ("dim", "descending", "stable"))
    diagonal = _diagonal
    median = P._median
    norm = P._norm
    flip = P._flip
    roll = P._roll
    tril = P._tril
    triu = P._triu
    narrow = P._narrow
    select = P._select
    index_select = P._index_select
    masked_fill = P._masked_fill
    gather = P._gather_along
    mm = P._mm
    mv = P._mv
    bmm = P._bmm
    rsqrt = P._rsqrt
    unbind = P._unbind
    chunk = P._chunk
    new_full = P._new_full
    new_zeros = P._new_zeros
    new_ones = P._new_ones
    expand_as = P._expand_as
    view_as = P._view_as
    reshape_as = P._reshape_as
    trace = _trace_method
    scatter_add = P._scatter_add
    scatter_reduce = P._scatter_reduce
    index_put = P._index_put
    unfold = _unfold
    unique = P._unique
    unique_consecutive = P._unique_consecutive
    histc = P._histc
    mode = P._mode
    scatter = P._scatter
    index_add = P._index_add
    index_copy = P._index_copy
    index_fill = P._index_fill
    masked_select = P._masked_select
    masked_scatter = P._masked_scatter
    topk = P._topk
    kthvalue = P._kthvalue
    cummax = P._cummax
    cummin = P._cummin
    aminmax = P._aminmax
    movedim = moveaxis = viewing(P._movedim)
    swapdims = viewing(_swapaxes)
    split = P._split
    tensor_split = P._tensor_split
    tile = P._tile
    unflatten = viewing(P._unflatten, reshapes=True)
    diff = P._diff
    where = P._where
    count_nonzero = P._count_nonzero
    isclose = P._isclose
    allclose = P._allclose
    equal = P._equal
    contiguous = _contiguous
    is_contiguous = _is_contiguous
    diag = P._diag
    diag_embed = P._diag_embed
    diagflat = P._diagflat
    mT = mH = property(viewing(P._mT))
    H = property(viewing(P._H))
    rot90 = P._rot90
    fliplr = P._fliplr
    flipud = P._flipud
    msort = P._msort
    argwhere = P._argwhere
    searchsorted = P._searchsorted
    take_along_dim = P._take_along_dim
    hsplit = P._hsplit
    vsplit = P._vsplit
    dsplit = P._dsplit
    nansum = P._nansum
    cumsum = P.numpy_or_torch(P._cumsum, _numpy_scan(np.cumsum), ("dim",))
    cumprod = P.numpy_or_torch(P._cumprod, _numpy_scan(np.cumprod), ("dim",))
    nanmean = P._nanmean
    nanmedian = P._nanmedian
    quantile = P._quantile
    nanquantile = P._nanquantile
    std_mean = P._std_mean
    var_mean = P._var_mean

    # elementwise predicates and comparisons (boolean results, no derivative)
    eq = _named_comparison("eq", __eq__)
    ne = _named_comparison("ne", __ne__)
    not_equal = _named_comparison("not_equal", ne)
    lt = _named_comparison("lt", __lt__)
    less = _named_comparison("less", lt)
    le = _named_comparison("le", __le__)
    less_equal = _named_comparison("less_equal", le)
    gt = _named_comparison("gt", __gt__)
    greater = _named_comparison("greater", gt)
    ge = _named_comparison("ge", __ge__)
    greater_equal = _named_comparison("greater_equal", ge)
    isnan = P._isnan
    isinf = P._isinf
    isfinite = P._isfinite
    isposinf = P._isposinf
    isneginf = P._isneginf
    signbit = P._signbit
    logical_not = P._logical_not
    logical_and = P._logical_and
    logical_or = P._logical_or
    logical_xor = P._logical_xor

    # binary functions with x first
    clamp = P.clamp
    clip = P.numpy_or_torch(P.clamp, _clip, ())
    pow = _calls("pow", O.power, lambda s, exponent: O.power(s, exponent))  # PyTorch's name
    matmul = _calls("matmul", O.matmul, lambda s, o: O.matmul(s, o))
    dot = _calls("dot", O.dot, lambda s, o: _dot(s, o))
    maximum = _calls("maximum", O.maximum, lambda s, o: O.maximum(s, o))
    minimum = _calls("minimum", O.minimum, lambda s, o: O.minimum(s, o))
    add = P._add
    sub = P._sub
    mul = _calls("mul", O.mul, lambda s, o: O.mul(s, o))
    div = P._div
    addmm = P._addmm
    addmv = P._addmv
    addcmul = P._addcmul
    addcdiv = P._addcdiv
    lerp = P._lerp
    xlogy = P._xlogy
    clamp_min = P._clamp_min
    clamp_max = P._clamp_max
    subtract = P._sub
    multiply = mul
    divide = P._div
    true_divide = P._true_divide
    floor_divide = P._floor_divide
    float_power = P._float_power
    fmax = P._fmax
    fmin = P._fmin
    outer = ger = P._outer
    inner = P._inner
    kron = P._kron
    cross = P._cross
    baddbmm = P._baddbmm
    addbmm = P._addbmm
    addr = P._addr
    logit = P._logit
    frac = P._frac
    positive = P._positive
    absolute = P._absolute
    adjoint = viewing(P._adjoint)
    copysign = P._copysign
    heaviside = P._heaviside
    frexp = P._frexp
    ldexp = P._ldexp
    nextafter = P._nextafter
    gcd = P._gcd
    lcm = P._lcm
    bitwise_and = P._bitwise_and
    bitwise_or = P._bitwise_or
    bitwise_xor = P._bitwise_xor
    bitwise_not = P._bitwise_not
    bitwise_left_shift = P._bitwise_left_shift
    bitwise_right_shift = P._bitwise_right_shift
    matrix_power = P._matrix_power
    matrix_exp = P._matrix_exp
    renorm = P._renorm
    vdot = P._vdot
    dist = P._dist
    cov = P._cov
    corrcoef = P._corrcoef
    bincount = P._bincount
    histogram = P._histogram
    mvlgamma = P._mvlgamma
    multinomial = P._multinomial
    bernoulli = P._bernoulli
    sum_to_size = P._sum_to_size
    split_with_sizes = P._split_with_sizes
    slice_scatter = P._slice_scatter
    select_scatter = P._select_scatter
    diagonal_scatter = P._diagonal_scatter
    index_reduce = P._index_reduce
    is_complex = P._is_complex
    is_signed = P._is_signed
    is_cpu = property(P._is_cpu)
    is_same_size = P._is_same_size
    is_nonzero = P._is_nonzero
    isreal = P._isreal

    # values, dtype, complex parts
    copy = _copy
    astype = _astype
    real = property(_real)
    imag = property(_imag)
    conj = conjugate = _conj
    round = P._round
    __round__ = P._round_builtin
    __format__ = P._format
    all = P._all
    any = P._any
    argsort = P.numpy_or_torch(P._argsort, _numpy_argsort, ("dim", "descending"))
    argpartition = _argpartition
    partition = _partition
    compress = _compress
    choose = _choose
    flat = property(FlatIter)
    to_device = _to_device
    __array_namespace__ = _array_namespace
    # ndarray attributes a Tensor cannot have, NumPy's device in NumPy code, and put (NumPy's in
    # NumPy code, PyTorch's elsewhere)
    strides = _ndarray_only("strides", _NDARRAY_ONLY["strides"])
    base = _ndarray_only("base", _NDARRAY_ONLY["base"])
    flags = _ndarray_only("flags", _NDARRAY_ONLY["flags"])
    ctypes = _ndarray_only("ctypes", _NDARRAY_ONLY["ctypes"])
    resize = _ndarray_only("resize", _NDARRAY_ONLY["resize"])
    tobytes = _ndarray_only("tobytes", _NDARRAY_ONLY["tobytes"])
    tofile = _ndarray_only("tofile", _NDARRAY_ONLY["tofile"])
    dump = _ndarray_only("dump", _NDARRAY_ONLY["dump"])
    dumps = _ndarray_only("dumps", _NDARRAY_ONLY["dumps"])
    byteswap = _ndarray_only("byteswap", _NDARRAY_ONLY["byteswap"])
    getfield = _ndarray_only("getfield", _NDARRAY_ONLY["getfield"])
    setfield = _ndarray_only("setfield", _NDARRAY_ONLY["setfield"])
    setflags = _ndarray_only("setflags", _NDARRAY_ONLY["setflags"])
    itemset = _ndarray_only("itemset", _NDARRAY_ONLY["itemset"])
    put = _put_either
    device = _numpy_code_only("device", _NUMPY_CODE_ONLY["device"])
    __contains__ = _contains
    nonzero = P.numpy_or_torch(P._nonzero, P._numpy_nonzero, ("as_tuple",))
    fill = fill_ = _fill_

    # PyTorch's conversions (tapegrad computes on the CPU, in float64)
    to = P._to
    float = P._float
    double = P._double
    long = P._long
    int = P._int
    bool = P._bool
    cpu = P._cpu
    t = viewing(P._t)
    type_as = P._type_as
    new_tensor = P._new_tensor
    element_size = P._element_size
    is_floating_point = P._is_floating_point
    nelement = Tensor.numel
    half = P._half
    bfloat16 = P._bfloat16
    short = P._short
    byte = P._byte
    char = P._char
    new_empty = P._new_empty
    ndimension = P._ndimension
    nbytes = property(P._nbytes)
    itemsize = property(P._itemsize)

    # PyTorch's in-place variants x.NAME_(...) of the methods above (one table)
    vars().update({f"{n}_": _inplace_variant(n, e) for n, e in _INPLACE_VARIANTS.items()})
