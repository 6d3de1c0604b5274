"""NumPy's shape, indexing and convolution functions on Tensors, as composites of tapegrad ops.

Functions that only rearrange elements (flip, roll, repeat, tile, pad, split, diagonal...) are
run by NumPy itself on the array of flat element indices; the result says which input element
lands where, and becomes one VIEW row (when NumPy returned a view: flip, rot90, diagonal,
split...) or one GATHER row (a copy: roll, repeat, tile, pad).  The rest are built from
where, concatenate, matmul and the arithmetic ops.  Every function here is therefore
differentiable at any order, in forward mode, and replayed by ``tg.trace`` in compiled code.
A Tensor that needs no gradient gets NumPy's own result, wrapped as a constant Tensor.
"""

import functools
import operator
import warnings

import numpy as np

from ..core import functions as O
from ..core.methods import link_view
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import needs_grad, result
from . import contractions as contract
from . import linalg_ops
from . import statistics as stats_
from .registry import FUNCTIONS, implements


def _tensors(obj):
    """Every Tensor in ``obj`` (also inside lists and tuples)."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def _fill_values(obj, name, ndim):
    """np.pad's ``constant_values`` / ``end_values`` as one (ndim, 2) Tensor, a value per
    (axis, side): a (nested) pair holding Tensors is stacked, so each keeps its gradient."""
    t = _stacked_fill(obj)
    try:
        np.broadcast_shapes(t.shape, (ndim, 2))
    except ValueError:
        raise ValueError(f"numpy.pad: {name} of shape {t.shape} do not fit {ndim} axes") from None
    return O.broadcast_to(t, (ndim, 2))


def _stacked_fill(obj):
    if isinstance(obj, (list, tuple)) and any(True for _ in _tensors(obj)):
        return O.stack([_stacked_fill(v) for v in obj])
    return O.tensor_of(obj)


def _plain(obj):
    if isinstance(obj, Tensor):
        return obj._v
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v) for v in obj)
    return obj


def _const(v):
    """NumPy's result as constant Tensors (lists and tuples of them kept as they are)."""
    if isinstance(v, (list, tuple)):
        return type(v)(_const(x) for x in v)
    if isinstance(v, (np.ndarray, np.generic)) and v.dtype != np.float64:
        return Tensor._const(np.asarray(v))  # (a NumPy int scalar stays an int: np.trace)
    return Tensor._const(result(np.asarray(v, dtype=np.float64)))


def _values_if_constant(np_fn):
    """Decorator: when no argument needs a gradient, the answer is NumPy's, as constants."""

    def wrap(impl):
        @functools.wraps(impl)
        def f(*args, **kwargs):
            if not needs_grad(*_tensors(list(args) + list(kwargs.values()))):
                return _const(np_fn(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}))
            return impl(*args, **kwargs)

        return f

    return wrap


def _take(a, idx, base=None):
    """``a.flat[idx]`` for an index array that NumPy built from ``base``, the array
    ``O.flat_index(a.shape)``: a VIEW row when ``idx`` is a view of ``base`` (its strides
    carry over), else a GATHER row."""
    idx = np.asarray(idx)
    out = result(np.asarray(a._v, dtype=np.float64).reshape(-1)[idx])
    view = base is not None and idx.size and np.may_share_memory(idx, base)
    if not needs_grad(a):
        res = Tensor._const(out)
    elif view:
        res = O._view(a, idx, out)
    else:
        return O.gather_flat(a, idx, idx.shape)
    if view and idx.ndim and a._v.__class__ is not float:  # NumPy's result is a view (flip,
        link_view(a, res, np.unravel_index(idx, a.shape))  # split...): writes show in a
    return res


# the docstring example of each function made by a factory below: (arguments, what it shows)
_EXAMPLES = {
    "repeat": ("x, [1, 0, 2], axis=1", "[[1.0, 3.0, 3.0], [4.0, 6.0, 6.0]]"),
    "tile": ("x[0], 2", "[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]"),
    "roll": ("x, 1", "[[6.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"),
    "flip": ("x, 1", "[[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]"),
    "flipud": ("x", "[[4.0, 5.0, 6.0], [1.0, 2.0, 3.0]]"),
    "fliplr": ("x", "[[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]"),
    "rot90": ("x", "[[3.0, 6.0], [2.0, 5.0], [1.0, 4.0]]"),
    "rollaxis": ("x, 1", "[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]"),
    "diagonal": ("x, 1", "[2.0, 6.0]"),
    "split": ("x[0], [1]", "[[1.0], [2.0, 3.0]]"),
    "array_split": ("x[0], 2", "[[1.0, 2.0], [3.0]]"),
    "hsplit": ("x, [2]", "[[[1.0, 2.0], [4.0, 5.0]], [[3.0], [6.0]]]"),
    "vsplit": ("x, 2", "[[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]]"),
    "dsplit": ("x[None], [1]", "[[[[1.0], [4.0]]], [[[2.0, 3.0], [5.0, 6.0]]]]"),
    "delete": ("x, 0, axis=1", "[[2.0, 3.0], [5.0, 6.0]]"),
    "resize": ("x[0], 4", "[1.0, 2.0, 3.0, 1.0]"),
    "matrix_transpose": ("x", "[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]"),
    "unstack": ("x", "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"),
    "atleast_1d": ("x[0, 0]", "[1.0]"),
    "atleast_2d": ("x[0]", "[[1.0, 2.0, 3.0]]"),
    "atleast_3d": ("x", "(2, 3, 1)"),
    "tril": ("x", "[[1.0, 0.0, 0.0], [4.0, 5.0, 0.0]]"),
    "triu": ("x, 1", "[[0.0, 2.0, 3.0], [0.0, 0.0, 6.0]]"),
    "cumulative_sum": ("x[0], include_initial=True", "[0.0, 1.0, 3.0, 6.0]"),
    "cumulative_prod": ("x, axis=1", "[[1.0, 2.0, 6.0], [4.0, 20.0, 120.0]]"),
    "fftshift": ("x[0]", "[3.0, 1.0, 2.0]"),
    "ifftshift": ("x[0]", "[2.0, 3.0, 1.0]"),
}
_LISTS = ("split", "array_split", "hsplit", "vsplit", "dsplit", "unstack")


def _named(f, name, summary):
    """Give a factory-made function its name and a docstring with its example."""
    args, shown = _EXAMPLES[name]
    call = f"{name}({args})"
    call = (
        f"[p.tolist() for p in {call}]"
        if name in _LISTS
        else f"{call}.shape"
        if name == "atleast_3d"
        else f"{call}.tolist()"
    )
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"{summary}\n\n    >>> import tapegrad as tg\n"
        "    >>> x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "
        f"requires_grad=True)\n    >>> {call}\n    {shown}\n    "
    )
    return f


def _rearrange(np_fn, name):
    """A NumPy function that only moves elements, run on the element indices of its input."""

    def impl(a, *args, **kwargs):
        a = O.tensor_of(a)
        base = O.flat_index(np.shape(a._v))
        picked = np_fn(base, *_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
        if isinstance(picked, (list, tuple)):
            return type(picked)(_take(a, p, base) for p in picked)
        return _take(a, picked, base)

    return implements(np_fn)(
        _named(
            _values_if_constant(np_fn)(impl),
            name,
            f"np.{name} on Tensors: one VIEW or GATHER row (see the module docstring).",
        )
    )


repeat = _rearrange(np.repeat, "repeat")
tile = _rearrange(np.tile, "tile")
roll = _rearrange(np.roll, "roll")
flip = _rearrange(np.flip, "flip")
flipud = _rearrange(np.flipud, "flipud")
fliplr = _rearrange(np.fliplr, "fliplr")
rot90 = _rearrange(np.rot90, "rot90")
rollaxis = _rearrange(np.rollaxis, "rollaxis")
diagonal = _rearrange(np.diagonal, "diagonal")
split = _rearrange(np.split, "split")
array_split = _rearrange(np.array_split, "array_split")
hsplit = _rearrange(np.hsplit, "hsplit")
vsplit = _rearrange(np.vsplit, "vsplit")
dsplit = _rearrange(np.dsplit, "dsplit")


def _atleast(np_fn, name):
    one = _rearrange(np_fn, name)

    def impl(*arys):
        out = tuple(one(a) for a in arys)
        return out[0] if len(out) == 1 else out

    return implements(np_fn)(
        _named(impl, name, f"np.{name} on Tensors (a reshaping view of each argument).")
    )


atleast_1d = _atleast(np.atleast_1d, "atleast_1d")
atleast_2d = _atleast(np.atleast_2d, "atleast_2d")
atleast_3d = _atleast(np.atleast_3d, "atleast_3d")


@implements(np.kron)
@_values_if_constant(np.kron)
def kron(a, b) -> Tensor:
    """np.kron as one broadcast product: a and b get interleaved unit axes.

    >>> import tapegrad as tg
    >>> kron(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 10.0], requires_grad=True))
    tensor([ 1., 10.,  2., 20.], grad_fn=<...>)
    """
    a, b = O.tensor_of(a), O.tensor_of(b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    if nd == 0:
        return O.mul(a, b)
    pa = O.reshape(a, tuple(d for s in sa for d in (s, 1)))
    pb = O.reshape(b, tuple(d for s in sb for d in (1, s)))
    return O.reshape(O.mul(pa, pb), tuple(x * y for x, y in zip(sa, sb, strict=True)))


@implements(np.diag)
@_values_if_constant(np.diag)
def diag(v, k=0) -> Tensor:
    """np.diag: a 1-D input is scattered onto the k-th diagonal, a 2-D one gives its diagonal.

    >>> import tapegrad as tg
    >>> diag(tg.tensor([1.0, 2.0], requires_grad=True), 1).shape
    (3, 3)
    """
    v = O.tensor_of(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {v.shape}")
    n = v.shape[0] + abs(k)
    i = np.arange(v.shape[0])
    return O.scatter_add(v, (i + max(-k, 0)) * n + i + max(k, 0), (n, n))


@implements(np.trace)
@_values_if_constant(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> Tensor:
    """np.trace with any offset and axes: the sum of a diagonal view.

    >>> import tapegrad as tg
    >>> trace(tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), 1)
    tensor(2., grad_fn=<...>)
    """
    _no_out("trace", out, dtype)
    return O.sum(diagonal(a, offset, axis1, axis2), -1)


def _no_out(name, out=None, dtype=None):
    if out is not None:
        raise TypeError(
            f"numpy.{name}: out= is not supported on tapegrad Tensors (a Tensor "
            "result cannot be written into an array)"
        )
    if dtype is not None and np.dtype(dtype) != np.float64:
        raise TypeError(
            f"numpy.{name}: dtype={np.dtype(dtype)} is not supported on tapegrad "
            "Tensors (they differentiate float64); leave dtype out"
        )


def _triangle(np_fn, name, lower):
    @_values_if_constant(np_fn)
    def impl(m, k=0):
        m = O.tensor_of(m)
        rows, cols = m.shape[-2:] if m.ndim >= 2 else m.shape * 2
        keep = np.tri(rows, cols, k if lower else k - 1, dtype=bool)
        return O.where(keep if lower else ~keep, m, 0.0)

    return implements(np_fn)(
        _named(impl, name, f"np.{name}: the other triangle is zeroed by one where row.")
    )


tril = _triangle(np.tril, "tril", True)
triu = _triangle(np.triu, "triu", False)


@implements(np.column_stack)
@_values_if_constant(np.column_stack)
def column_stack(tup) -> Tensor:
    """np.column_stack: 0-d and 1-D inputs become columns, then one concatenate.

    >>> import tapegrad as tg
    >>> column_stack([tg.tensor([1.0, 2.0], requires_grad=True), tg.tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    cols = []
    for a in tup:
        a = O.tensor_of(a)
        cols.append(O.reshape(a, (-1, 1)) if a.ndim < 2 else a)
    return O.concatenate(cols, 1)


@implements(np.dstack)
@_values_if_constant(np.dstack)
def dstack(tup) -> Tensor:
    """np.dstack: stack along the third axis (inputs made at least 3-D first).

    >>> import tapegrad as tg
    >>> dstack([tg.tensor([1.0, 2.0], requires_grad=True), tg.tensor([3.0, 4.0])]).shape
    (1, 2, 2)
    """
    return O.concatenate([atleast_3d(a) for a in tup], 2)


@_values_if_constant(getattr(np, "row_stack", np.vstack))
def row_stack(tup) -> Tensor:
    """np.row_stack (NumPy's deprecated alias of vstack).

    >>> import tapegrad as tg
    >>> row_stack([tg.tensor([1.0, 2.0], requires_grad=True), tg.tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    return O.concatenate([atleast_2d(a) for a in tup], 0)


@implements(np.append)
@_values_if_constant(np.append)
def append(arr, values, axis=None) -> Tensor:
    """np.append: both flattened when axis is None, else one concatenate along ``axis``.

    >>> import tapegrad as tg
    >>> append(tg.tensor([1.0, 2.0], requires_grad=True), [[3.0]])
    tensor([1., 2., 3.], grad_fn=<...>)
    """
    arr, values = O.tensor_of(arr), O.tensor_of(values)
    if axis is None:
        return O.concatenate([O.ravel(arr), O.ravel(values)], 0)
    return O.concatenate([arr, values], axis)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@implements(np.pad)
@_values_if_constant(np.pad)
def pad(array, pad_width, mode="constant", **kwargs) -> Tensor:
    """np.pad with modes constant (constant_values may be Tensors), edge, reflect, symmetric and
    wrap: one GATHER row from the input (and the constants) placed by NumPy's own padding.

    >>> import tapegrad as tg
    >>> pad(tg.tensor([1.0, 2.0], requires_grad=True), (1, 2), "reflect")
    tensor([2., 1., 2., 1., 2.], grad_fn=<...>)
    """
    a = O.tensor_of(array)
    if mode in _PAD_STAT_MODES:
        return _pad_by_axis(a, pad_width, mode, kwargs)
    if mode not in _PAD_MODES:
        raise TypeError(
            f"numpy.pad: mode={mode!r} is not supported on tapegrad Tensors "
            f"(supported: {', '.join(_PAD_MODES)}); see docs/COVERAGE.md"
        )
    extra = set(kwargs) - {"constant_values", "reflect_type"}
    if extra or kwargs.get("reflect_type", "even") != "even":
        raise TypeError(
            f"numpy.pad: {sorted(kwargs)} with mode={mode!r} is not supported on "
            "tapegrad Tensors (only constant_values, and reflect_type='even')"
        )
    idx = O.flat_index(a.shape)
    if mode != "constant":
        return _take(a, np.pad(idx, _plain(pad_width), mode), idx)
    cv = kwargs.get("constant_values", 0)
    codes = -1 - np.arange(2 * a.ndim).reshape(a.ndim, 2)  # one code per (axis, side)
    placed = np.pad(idx, _plain(pad_width), "constant", constant_values=codes)
    consts = O.ravel(_fill_values(cv, "constant_values", a.ndim))
    both = O.concatenate([O.ravel(a), consts], 0)
    placed = np.where(placed < 0, a.size - 1 - placed, placed)
    return O.gather_flat(both, placed, placed.shape)


_PAD_STAT_MODES = ("maximum", "minimum", "mean", "median", "linear_ramp")


def _pad_side(out, ax, width, edge, end, outer_first, stat):
    """One side's padding along axis ``ax``: the statistic broadcast, or a ramp from ``end``
    (outermost) to the ``edge`` value (excluded)."""
    shape = list(out.shape)
    shape[ax] = width
    if stat is not None:
        return O.broadcast_to(stat(out, ax, True), tuple(shape))
    j = np.arange(width)
    frac = j / width if outer_first else (width - 1 - j) / width
    along = [1] * out.ndim
    along[ax] = width
    return O.add(end, O.mul(O.sub(edge, end), frac.reshape(along)))


def _pad_by_axis(a, pad_width, mode, kwargs):
    """np.pad's statistic modes (over the whole axis) and linear_ramp: one axis after the
    other, as NumPy pads, each side a broadcast statistic or a ramp to the edge value."""
    allowed = {"end_values"} if mode == "linear_ramp" else {"stat_length"}
    if set(kwargs) - allowed or kwargs.get("stat_length") is not None:
        raise TypeError(
            f"numpy.pad: {sorted(kwargs)} with mode={mode!r} is not supported on tapegrad "
            "Tensors (statistics over the whole axis; linear_ramp with end_values)"
        )
    widths = np.broadcast_to(np.asarray(_plain(pad_width), dtype=np.int64), (a.ndim, 2))
    # end_values may be Tensors (differentiated, as constant_values are)
    evt = _fill_values(kwargs.get("end_values", 0.0), "end_values", a.ndim)
    ends = [[O.getitem(evt, (ax, side)) for side in (0, 1)] for ax in range(a.ndim)]
    stat = {"maximum": O.amax, "minimum": O.amin, "mean": O.mean, "median": stats_.median}.get(mode)
    out = a
    for ax in range(a.ndim):
        before, after = (int(w) for w in widths[ax])
        if before == after == 0:
            continue
        if out.shape[ax] == 0:
            raise ValueError(f"numpy.pad: can't extend empty axis {ax} using mode={mode!r}")

        n = out.shape[ax]
        first = O.getitem(out, _slice(out.ndim, ax, slice(0, 1)))
        last = O.getitem(out, _slice(out.ndim, ax, slice(n - 1, n)))
        parts = [_pad_side(out, ax, before, first, ends[ax][0], True, stat)] if before else []
        parts.append(out)
        parts += [_pad_side(out, ax, after, last, ends[ax][1], False, stat)] if after else []
        out = O.concatenate(parts, ax)
    return out


@implements(np.select)
def select(condlist, choicelist, default=0) -> Tensor:
    """np.select: a chain of where rows, the first true condition winning.

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    >>> select([x.data < 0, x.data > 1], [-x, x * 10], default=x)
    tensor([1.0000, 0.5000, 20.0000], grad_fn=<...>)
    """
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    conds = []
    for i, c in enumerate(condlist):
        c = np.asarray(c._v if isinstance(c, Tensor) else c)
        if c.dtype != bool:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
        conds.append(c)
    if not needs_grad(*_tensors(list(choicelist) + [default])):
        return _const(np.select(conds, [_plain(c) for c in choicelist], _plain(default)))
    shape = np.broadcast_shapes(
        *(c.shape for c in conds),
        *(np.shape(_plain(c)) for c in choicelist),
        np.shape(_plain(default)),
    )
    out = O.broadcast_to(O.tensor_of(default), shape)
    for c, ch in zip(conds[::-1], choicelist[::-1], strict=True):
        out = O.where(c, ch, out)
    return out


def _slice(nd, axis, s):
    key = [slice(None)] * nd
    key[axis] = s
    return tuple(key)


def _gradient_axis(f, axis, dx, edge_order):
    """np.gradient along one axis; ``dx`` is a scalar spacing or a Tensor of differences."""
    nd = f.ndim

    def at(s):
        return O.getitem(f, _slice(nd, axis, s))

    shape = [1] * nd
    shape[axis] = -1
    if np.ndim(dx) == 0:  # uniform spacing: a number or a 0-d Tensor
        mid = O.div(O.sub(at(slice(2, None)), at(slice(None, -2))), O.mul(dx, 2.0))
        if edge_order == 1:
            first = O.div(O.sub(at(slice(1, 2)), at(slice(0, 1))), dx)
            last = O.div(O.sub(at(slice(-1, None)), at(slice(-2, -1))), dx)
        else:
            first = O.div(
                O.add(
                    O.add(O.mul(at(slice(0, 1)), -1.5), O.mul(at(slice(1, 2)), 2.0)),
                    O.mul(at(slice(2, 3)), -0.5),
                ),
                dx,
            )
            last = O.div(
                O.add(
                    O.add(O.mul(at(slice(-3, -2)), 0.5), O.mul(at(slice(-2, -1)), -2.0)),
                    O.mul(at(slice(-1, None)), 1.5),
                ),
                dx,
            )
        return O.concatenate([first, mid, last], axis)

    def lincomb(coefs, slices):
        acc = None
        for c, s in zip(coefs, slices, strict=True):
            term = O.mul(O.reshape(c, tuple(shape)) if c.ndim else c, at(s))
            acc = term if acc is None else O.add(acc, term)
        return acc

    d1, d2 = O.getitem(dx, slice(None, -1)), O.getitem(dx, slice(1, None))
    s12 = O.add(d1, d2)
    mid = lincomb(
        [
            O.div(O.neg(d2), O.mul(d1, s12)),
            O.div(O.sub(d2, d1), O.mul(d1, d2)),
            O.div(d1, O.mul(d2, s12)),
        ],
        [slice(None, -2), slice(1, -1), slice(2, None)],
    )
    if edge_order == 1:
        first = O.div(O.sub(at(slice(1, 2)), at(slice(0, 1))), O.getitem(dx, 0))
        last = O.div(O.sub(at(slice(-1, None)), at(slice(-2, -1))), O.getitem(dx, -1))
    else:
        a, b = O.getitem(dx, 0), O.getitem(dx, 1)
        ab = O.add(a, b)
        first = lincomb(
            [
                O.div(O.neg(O.add(O.mul(a, 2.0), b)), O.mul(a, ab)),
                O.div(ab, O.mul(a, b)),
                O.div(O.neg(a), O.mul(b, ab)),
            ],
            [slice(0, 1), slice(1, 2), slice(2, 3)],
        )
        a, b = O.getitem(dx, -2), O.getitem(dx, -1)
        ab = O.add(a, b)
        last = lincomb(
            [
                O.div(b, O.mul(a, ab)),
                O.div(O.neg(ab), O.mul(a, b)),
                O.div(O.add(O.mul(b, 2.0), a), O.mul(b, ab)),
            ],
            [slice(-3, -2), slice(-2, -1), slice(-1, None)],
        )
    return O.concatenate([first, mid, last], axis)


@implements(np.gradient)
@_values_if_constant(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1) -> "Tensor | tuple[Tensor, ...]":
    """np.gradient: central differences inside, one-sided (edge_order 1 or 2) at the edges;
    spacings may be scalars or coordinate arrays, as in NumPy.

    >>> import tapegrad as tg
    >>> gradient(tg.tensor([1.0, 4.0, 9.0, 16.0], requires_grad=True), 0.5)
    tensor([ 6.,  8., 12., 14.], grad_fn=<...>)
    """
    f = O.tensor_of(f)
    if axis is None:
        axes = tuple(range(f.ndim))
    else:
        O.normalize_axes(axis, f.ndim, "gradient")  # range and repeats
        axes = tuple(
            int(a) % f.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(_plain(varargs[0])) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    outs = []
    for ax, h in zip(axes, spacing, strict=True):
        if f.shape[ax] < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, "
                "at least (edge_order + 1) elements are required."
            )
        if np.ndim(_plain(h)) == 0:
            dx = h if isinstance(h, Tensor) else float(h)
        else:
            if np.ndim(_plain(h)) != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(_plain(h)) != f.shape[ax]:
                raise ValueError(
                    "when 1d, distances must match the length of the corresponding dimension"
                )
            dx = stats_.diff(O.tensor_of(h))
            if not needs_grad(dx):
                dv = np.asarray(dx._v)
                if (dv == dv[0]).all():  # NumPy uses the uniform formulas then
                    dx = float(dv[0])
        outs.append(_gradient_axis(f, ax, dx, edge_order))
    return outs[0] if len(outs) == 1 else tuple(outs)


@implements(np.cross)
@_values_if_constant(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> Tensor:
    """np.cross of 2- and 3-vectors, from products of the components (NumPy's formulas).

    >>> import tapegrad as tg
    >>> cross(tg.tensor([1.0, 0.0, 0.0], requires_grad=True), [0.0, 1.0, 0.0])
    tensor([0., 0., 1.], grad_fn=<...>)
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = O.tensor_of(a), O.tensor_of(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("cross: the operands must be at least 1-D")
    a = _moveaxis(a, axisa, -1)
    b = _moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of "
            "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=3,
        )
    ca = [O.getitem(a, (Ellipsis, i)) for i in range(a.shape[-1])]
    cb = [O.getitem(b, (Ellipsis, i)) for i in range(b.shape[-1])]
    mul, sub = O.mul, O.sub
    if len(ca) == 2 and len(cb) == 2:
        return sub(mul(ca[0], cb[1]), mul(ca[1], cb[0]))
    if len(ca) == 2:
        comps = [
            mul(ca[1], cb[2]),
            O.neg(mul(ca[0], cb[2])),
            sub(mul(ca[0], cb[1]), mul(ca[1], cb[0])),
        ]
    elif len(cb) == 2:
        comps = [
            O.neg(mul(ca[2], cb[1])),
            mul(ca[2], cb[0]),
            sub(mul(ca[0], cb[1]), mul(ca[1], cb[0])),
        ]
    else:
        comps = [
            sub(mul(ca[1], cb[2]), mul(ca[2], cb[1])),
            sub(mul(ca[2], cb[0]), mul(ca[0], cb[2])),
            sub(mul(ca[0], cb[1]), mul(ca[1], cb[0])),
        ]
    shape = np.broadcast_shapes(*(c.shape for c in comps))
    out = O.stack([O.broadcast_to(c, shape) for c in comps], -1)
    return _moveaxis(out, -1, axisc)


def _moveaxis(a, source, destination):
    base = O.flat_index(a.shape)
    return _take(a, np.moveaxis(base, source, destination), base)


@implements(np.linspace)
def linspace(
    start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None
) -> "Tensor | tuple[Tensor, Tensor | float]":
    """np.linspace differentiable in start and stop (NumPy's arithmetic, step by step).

    >>> import tapegrad as tg
    >>> linspace(tg.tensor(0.0, requires_grad=True), 1.0, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000], grad_fn=<...>)
    """
    if not needs_grad(*_tensors([start, stop])):
        return _const(
            np.linspace(
                _plain(start), _plain(stop), num, endpoint, retstep, dtype, axis, device=device
            )
        )
    _no_out("linspace", None, dtype)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = O.tensor_of(start), O.tensor_of(stop)
    delta = O.sub(stop, start)
    y = np.arange(0, num, dtype=np.float64).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = O.div(delta, float(div))
        # NumPy's order of operations for tiny steps; a guarded comparison (a trace replay
        # whose step is 0 where the recording's was not retraces)
        if np.any(O.truth(step == 0)):
            y = O.mul(y / div, delta)
        else:
            y = O.mul(y, step)
    else:
        step = float("nan")
        y = O.mul(y, delta)
    y = O.add(y, start)
    if endpoint and num > 1:
        last = O.reshape(O.broadcast_to(stop, y.shape[1:]), (1,) + y.shape[1:])
        y = O.concatenate([O.getitem(y, slice(None, -1)), last], 0)
    if axis != 0:
        y = _moveaxis(y, 0, axis)
    return (y, step) if retstep else y


# ---- convolution ------------------------------------------------------------------------------


def _norm(axes, ndim):
    return [int(a) % ndim for a in axes]


def convolve_nd(a, b, axes=None, dot_axes=((), ()), mode="full") -> Tensor:
    """n-dimensional convolution (HIPS autograd's ``scipy.signal.convolve`` signature).

    ``axes`` pairs the convolved axes of ``a`` and ``b`` (default: all axes of both),
    ``dot_axes`` pairs axes that are summed over; the result's axes are a's other axes, then
    b's, then the convolved ones.  The windows of ``a`` are one GATHER row and the sum over
    ``b`` one matmul, so memory grows with (output size x kernel size).

    >>> import tapegrad as tg
    >>> convolve_nd(tg.tensor([1.0, 2.0, 3.0], requires_grad=True), tg.tensor([0.0, 1.0, 0.5]))
    tensor([0.0000, 1.0000, 2.5000, 4.0000, 1.5000], grad_fn=<...>)
    """
    a, b = O.tensor_of(a), O.tensor_of(b)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if axes is None:
        if a.ndim != b.ndim:
            raise ValueError(
                f"convolve: in1 and in2 should have the same dimensionality "
                f"(shapes {a.shape} and {b.shape}); or pass axes"
            )
        axes = (range(a.ndim), range(b.ndim))
    ca, cb = _norm(axes[0], a.ndim), _norm(axes[1], b.ndim)
    da, db = _norm(dot_axes[0], a.ndim), _norm(dot_axes[1], b.ndim)
    if len(ca) != len(cb) or len(da) != len(db):
        raise ValueError(f"convolve: axes {axes} and dot_axes {dot_axes} must pair up")
    n = [a.shape[i] for i in ca]
    m = [b.shape[j] for j in cb]
    if any(s == 0 for s in n + m):
        raise ValueError("convolve: inputs cannot be empty along the convolved axes")
    if mode == "valid" and not (
        all(x >= y for x, y in zip(n, m, strict=True))
        or all(x <= y for x, y in zip(n, m, strict=True))
    ):
        raise ValueError(
            "convolve: for 'valid' mode, one must be at least as large as the "
            "other in every convolved dimension"
        )
    if mode == "full":
        start, length = [0] * len(n), [x + y - 1 for x, y in zip(n, m, strict=True)]
    elif mode == "same":
        start, length = [(y - 1) // 2 for y in m], list(n)
    else:
        start = [min(x, y) - 1 for x, y in zip(n, m, strict=True)]
        length = [abs(x - y) + 1 for x, y in zip(n, m, strict=True)]
    return _windows_dot(a, b, ca, cb, da, db, start, length)


def _windows_dot(a, b, ca, cb, da, db, start, length):
    """out[..., f] = sum_j a[..., start + f - j] * b[..., j] (zero outside a), then the
    HIPS axis order: a's free axes, b's free axes, convolved axes."""
    c = len(ca)
    rest = [i for i in range(a.ndim) if i not in ca]
    last = tuple(range(a.ndim - c, a.ndim))
    m = [b.shape[j] for j in cb]
    # a's element indices, convolved axes last, padded with a.size (the zero appended below);
    # window f' of the padded axis holds a[f' - (m-1) + j'], so the reversed window f = f'
    # - start holds a[start + f - j] for j = 0..m-1
    idx = np.moveaxis(O.flat_index(a.shape), ca, list(last))
    idx = np.pad(idx, [(0, 0)] * len(rest) + [(y - 1, y - 1) for y in m], constant_values=a.size)
    win = np.lib.stride_tricks.sliding_window_view(idx, m, axis=last)
    win = win[
        (
            Ellipsis,
            *(slice(s, s + n) for s, n in zip(start, length, strict=True)),
            *([slice(None, None, -1)] * c),
        )
    ]
    padded = O.concatenate([O.ravel(a), np.zeros(1)], 0)
    w = O.gather_flat(padded, win, win.shape)
    nr = len(rest)
    w_sum = [rest.index(i) for i in da] + [nr + c + k for k in range(c)]
    b_sum = list(db) + list(cb)
    out = contract.tensordot(w, b, (w_sum, b_sum))
    # tensordot: w's free axes (a's free rest..., lengths...), then b's free axes
    na_free = nr - len(da)
    nb_free = b.ndim - len(db) - c
    order = (
        list(range(na_free))
        + list(range(na_free + c, na_free + c + nb_free))
        + list(range(na_free, na_free + c))
    )
    return out if order == list(range(len(order))) else O.transpose(out, order)


def _conv1d(name, a, v, mode, correlate):
    a, v = O.tensor_of(a), O.tensor_of(v)
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError(f"{name}: object too deep for desired array (1-D inputs only)")
    a, v = O.reshape(a, (-1,)), O.reshape(v, (-1,))
    n, m = a.shape[0], v.shape[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{name}: mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if correlate:
        v = flip(v)
    if mode == "full":
        start, length = 0, n + m - 1
    elif mode == "same":
        length = max(n, m)
        start = ((m - 1) // 2 if n >= m else n // 2) if correlate else (min(n, m) - 1) // 2
    else:
        start, length = min(n, m) - 1, abs(n - m) + 1
    return _windows_dot(a, v, [0], [0], [], [], [start], [length])


@implements(np.convolve)
@_values_if_constant(np.convolve)
def convolve(a, v, mode="full") -> Tensor:
    """np.convolve (modes full, same, valid) as one window GATHER and one matmul.

    >>> import tapegrad as tg
    >>> convolve(tg.tensor([1.0, 2.0, 3.0], requires_grad=True), [0.0, 1.0, 0.5], "same")
    tensor([1.0000, 2.5000, 4.0000], grad_fn=<...>)
    """
    return _conv1d("convolve", a, v, mode, False)


@implements(np.correlate)
@_values_if_constant(np.correlate)
def correlate(a, v, mode="valid") -> Tensor:
    """np.correlate (modes valid, same, full): convolve with the reversed ``v`` (real data).

    >>> import tapegrad as tg
    >>> correlate(tg.tensor([1.0, 2.0, 3.0], requires_grad=True), [0.0, 1.0, 0.5])
    tensor([3.5000], grad_fn=<...>)
    """
    return _conv1d("correlate", a, v, mode, True)


# ---- einsum: every form ---------------------------------------------------------------------


def _sublist_letters(sub):
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            s = operator.index(s)
            if not 0 <= s < len(letters):
                raise ValueError(f"einsum: subscript {s} is not within the valid range [0, 52)")
            out.append(letters[s])
    return "".join(out)


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs) -> Tensor:
    """np.einsum in both forms (subscripts string, or interleaved operands and sublists),
    with '...', repeated labels, implicit output and size-1 broadcasting.

    >>> import tapegrad as tg
    >>> einsum(tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), [0, 0])
    tensor(5., grad_fn=<...>)
    """
    _no_out("einsum", out, kwargs.pop("dtype", None))
    for k, v in kwargs.items():
        if k not in ("order", "casting"):
            raise TypeError(f"numpy.einsum: {k}={v!r} is not supported on tapegrad Tensors")
    if isinstance(operands[0], str):
        return contract.einsum(operands[0], *operands[1:])
    pairs = len(operands) // 2
    ops = operands[0 : 2 * pairs : 2]
    spec = ",".join(_sublist_letters(s) for s in operands[1 : 2 * pairs : 2])
    if len(operands) % 2:  # a trailing output sublist
        spec += "->" + _sublist_letters(operands[-1])
    return contract.einsum(spec, *ops)


# ---- more indexing: take, compress, delete, insert, block... ------------------------------------


def _moved(a, place):
    """``a`` rearranged by ``place(flat element indices of a)`` (a NumPy call)."""
    a = O.tensor_of(a)
    base = O.flat_index(a.shape)
    picked = place(base)
    if isinstance(picked, (list, tuple)):
        return type(picked)(_take(a, p, base) for p in picked)
    return _take(a, picked, base)


@implements(np.take)
@_values_if_constant(np.take)
def take(a, indices, axis=None, out=None, mode="raise") -> Tensor:
    """np.take: one GATHER row (indices, axis and mode as NumPy).

    >>> import tapegrad as tg
    >>> take(tg.tensor([1.0, 2.0, 3.0], requires_grad=True), [2, 0, 2])
    tensor([3., 1., 3.], grad_fn=<...>)
    """
    _no_out("take", out)
    return _moved(a, lambda b: np.take(b, _plain(indices), axis, mode=mode))


@implements(np.take_along_axis)
@_values_if_constant(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1) -> Tensor:
    """np.take_along_axis: one GATHER row.

    >>> import numpy as np, tapegrad as tg
    >>> take_along_axis(tg.tensor([[1.0, 2.0]], requires_grad=True), np.array([[1, 1, 0]]), 1)
    tensor([[2., 2., 1.]], grad_fn=<...>)
    """
    return _moved(arr, lambda b: np.take_along_axis(b, _plain(indices), axis))


@implements(np.compress)
@_values_if_constant(np.compress)
def compress(condition, a, axis=None, out=None) -> Tensor:
    """np.compress: the slices where ``condition`` holds (one GATHER row).

    >>> import tapegrad as tg
    >>> compress([True, False, True], tg.tensor([1.0, 2.0, 3.0], requires_grad=True))
    tensor([1., 3.], grad_fn=<...>)
    """
    _no_out("compress", out)
    return _moved(a, lambda b: np.compress(_plain(condition), b, axis))


@implements(np.extract)
@_values_if_constant(np.extract)
def extract(condition, arr) -> Tensor:
    """np.extract: the elements where ``condition`` holds, flattened (one GATHER row).

    >>> import tapegrad as tg
    >>> extract([[True, False]], tg.tensor([[1.0, 2.0]], requires_grad=True))
    tensor([1.], grad_fn=<...>)
    """
    return _moved(arr, lambda b: np.extract(_plain(condition), b))


delete = _rearrange(np.delete, "delete")
resize = _rearrange(np.resize, "resize")
matrix_transpose = _rearrange(np.matrix_transpose, "matrix_transpose")
if hasattr(np, "unstack"):
    unstack = _rearrange(np.unstack, "unstack")


@implements(np.insert)
@_values_if_constant(np.insert)
def insert(arr, obj, values, axis=None) -> Tensor:
    """np.insert: NumPy inserts a code for every value; one GATHER row then reads the input
    and the values (which may be Tensors) where the codes say.

    >>> import tapegrad as tg
    >>> insert(tg.tensor([1.0, 2.0], requires_grad=True), 1, tg.tensor([7.0, 8.0]))
    tensor([1., 7., 8., 2.], grad_fn=<...>)
    """
    a, v = O.tensor_of(arr), O.tensor_of(values)
    codes = -1 - np.arange(v.size).reshape(v.shape)
    placed = np.insert(O.flat_index(a.shape), _plain(obj), codes, axis)
    placed = np.where(placed < 0, a.size - 1 - placed, placed)
    return O.gather_flat(O.concatenate([O.ravel(a), O.ravel(v)], 0), placed, placed.shape)


@implements(np.diagflat)
@_values_if_constant(np.diagflat)
def diagflat(v, k=0) -> Tensor:
    """np.diagflat: the flattened input on the k-th diagonal.

    >>> import tapegrad as tg
    >>> diagflat(tg.tensor([[1.0, 2.0]], requires_grad=True)).shape
    (2, 2)
    """
    return diag(O.ravel(O.tensor_of(v)), k)


@implements(np.ediff1d)
@_values_if_constant(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None) -> Tensor:
    """np.ediff1d: differences of the flattened input, with optional ends.

    >>> import tapegrad as tg
    >>> ediff1d(tg.tensor([1.0, 4.0, 9.0], requires_grad=True), to_begin=0.0)
    tensor([0., 3., 5.], grad_fn=<...>)
    """
    d = stats_.diff(O.ravel(O.tensor_of(ary)))
    parts = [O.ravel(O.tensor_of(to_begin))] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(O.ravel(O.tensor_of(to_end)))
    return O.concatenate(parts, 0) if len(parts) > 1 else d


def _block_depth(x, where="arrays"):
    if isinstance(x, tuple):
        raise TypeError(
            f"{where} is a tuple. Only lists can be used to arrange blocks, and "
            "np.block does not allow implicit conversion from tuple to ndarray."
        )
    if not isinstance(x, list):
        return 0
    if not x:
        raise ValueError(f"List at {where} cannot be empty")
    depths = {_block_depth(y, f"{where}[{i}]") for i, y in enumerate(x)}
    if len(depths) != 1:
        raise ValueError(
            "List depths are mismatched in np.block (all blocks must be nested equally deep)"
        )
    return depths.pop() + 1


@implements(np.block)
@_values_if_constant(np.block)
def block(arrays) -> Tensor:
    """np.block: nested lists of blocks joined by concatenates, innermost along the last axis.

    >>> import tapegrad as tg
    >>> a = tg.tensor([[1.0]], requires_grad=True)
    >>> block([[a, a * 2], [a * 3, a * 4]])
    tensor([[1., 2.],
            [3., 4.]], grad_fn=<...>)
    """
    depth = _block_depth(arrays)

    def leaves(x):
        return [v for y in x for v in leaves(y)] if isinstance(x, list) else [O.tensor_of(x)]

    ndim = max([depth] + [v.ndim for v in leaves(arrays)])

    def join(x, d):
        if d == depth:
            x = O.tensor_of(x)
            return O.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
        return O.concatenate([join(y, d + 1) for y in x], d - depth)

    return join(arrays, 0)


def _cumulative(np_fn, scan, name, identity):
    @_values_if_constant(np_fn)
    def impl(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        _no_out(name, out, dtype)
        x = O.tensor_of(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError(f"{name}: axis must be specified for multi-dimensional arrays.")
            axis = 0
        out = scan(x, axis)
        if include_initial:
            shape = list(x.shape)
            shape[axis % max(x.ndim, 1)] = 1
            out = O.concatenate([np.full(shape, identity), out], axis)
        return out

    return _named(impl, name, f"np.{name} (NumPy 2's array-API scan), include_initial as NumPy.")


if hasattr(np, "cumulative_sum"):
    cumulative_sum = _cumulative(np.cumulative_sum, O.cumsum, "cumulative_sum", 0.0)
    cumulative_prod = _cumulative(np.cumulative_prod, O.cumprod, "cumulative_prod", 1.0)


@implements(np.trapezoid)
@_values_if_constant(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1) -> Tensor:
    """np.trapezoid: the trapezoidal rule along ``axis`` (samples and coordinates may be
    Tensors).

    >>> import tapegrad as tg
    >>> trapezoid(tg.tensor([1.0, 2.0, 3.0], requires_grad=True), dx=0.5)
    tensor(2., grad_fn=<...>)
    """
    y = O.tensor_of(y)
    ax = O.normalize_axes(axis, y.ndim, "trapezoid")[0]
    if x is None:
        d = dx
    else:
        x = O.tensor_of(x)
        d = stats_.diff(x, axis=-1 if x.ndim == 1 else ax)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[ax] = d.shape[0]
            d = O.reshape(d, tuple(shape))
    hi, lo = _slice(y.ndim, ax, slice(1, None)), _slice(y.ndim, ax, slice(None, -1))
    avg = O.div(O.add(O.getitem(y, hi), O.getitem(y, lo)), 2.0)
    return O.sum(O.mul(d, avg), ax)


@implements(np.broadcast_arrays)
@_values_if_constant(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False) -> tuple:
    """np.broadcast_arrays: each argument as a broadcasting view (a tuple, as NumPy 2).

    >>> import tapegrad as tg
    >>> [b.shape for b in broadcast_arrays(tg.tensor([1.0, 2.0], requires_grad=True), [[0.0]])]
    [(1, 2), (1, 2)]
    """
    shape = np.broadcast_shapes(*(np.shape(_plain(a)) for a in args))
    return tuple(_moved(a, lambda b: np.broadcast_to(b, shape)) for a in args)


@implements(np.meshgrid)
@_values_if_constant(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> tuple:
    """np.meshgrid: NumPy builds the grids of element indices; each grid is a view of its
    input (copy does not matter: Tensors are never written through).

    >>> import tapegrad as tg
    >>> [g.shape for g in meshgrid(tg.tensor([1.0, 2.0], requires_grad=True), [0.0, 1.0, 2.0])]
    [(3, 2), (3, 2)]
    """
    xs = [O.tensor_of(x) for x in xi]
    bases = [O.flat_index(x.shape) for x in xs]
    grids = np.meshgrid(*bases, copy=False, sparse=sparse, indexing=indexing)
    return tuple(_take(x, g, b) for x, g, b in zip(xs, grids, bases, strict=True))


@implements(np.choose)
@_values_if_constant(np.choose)
def choose(a, choices, out=None, mode="raise") -> Tensor:
    """np.choose: one GATHER row from the (broadcast) choices, picked by the integers ``a``.

    >>> import tapegrad as tg
    >>> choose([1, 0, 1], [tg.tensor([1.0, 2.0, 3.0], requires_grad=True), [10.0, 20.0, 30.0]])
    tensor([10.,  2., 30.], grad_fn=<...>)
    """
    _no_out("choose", out)
    a = np.asarray(_plain(a))
    cs = [O.tensor_of(c) for c in choices]
    shape = np.broadcast_shapes(a.shape, *(c.shape for c in cs))
    size = int(np.prod(shape, dtype=np.int64))
    codes = [k * size + O.flat_index(shape) for k in range(len(cs))]
    picked = np.choose(a, codes, mode=mode)
    stacked = O.concatenate([O.ravel(O.broadcast_to(c, shape)) for c in cs], 0)
    return O.gather_flat(stacked, picked, picked.shape)


@implements(np.bincount)
@_values_if_constant(np.bincount)
def bincount(x, /, weights=None, minlength=0) -> Tensor:
    """np.bincount with Tensor weights: one SCATTER row adds each weight into its bin (the
    integer ``x`` carries no gradient).

    >>> import tapegrad as tg
    >>> bincount([0, 2, 2], tg.tensor([1.0, 2.0, 3.0], requires_grad=True))
    tensor([1., 0., 5.], grad_fn=<...>)
    """
    x = np.asarray(_plain(x))
    if weights is None:
        return _const(np.bincount(x, minlength=minlength))
    w = O.tensor_of(weights)
    n = np.bincount(x, minlength=minlength).size  # NumPy's checks and length
    if w.shape != x.shape:
        raise ValueError("The weights and list don't have the same length.")
    return O.scatter_add(w, x, (n,))


@implements(np.vander)
@_values_if_constant(np.vander)
def vander(x, N=None, increasing=False) -> Tensor:  # noqa: N803 - NumPy's name
    """np.vander: the powers as a running product (NumPy's own order of multiplication).

    >>> import tapegrad as tg
    >>> vander(tg.tensor([2.0, 3.0], requires_grad=True), 3)
    tensor([[4., 2., 1.],
            [9., 3., 1.]], grad_fn=<...>)
    """
    x = O.tensor_of(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else operator.index(N)
    cols = [np.ones((x.shape[0], min(n, 1)))]
    if n > 1:
        cols.append(O.cumprod(O.broadcast_to(O.reshape(x, (-1, 1)), (x.shape[0], n - 1)), 1))
    v = O.concatenate(cols, 1) if len(cols) > 1 else O.tensor_of(cols[0])
    return v if increasing else flip(v, 1)


@implements(np.logspace)
@_values_if_constant(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0) -> Tensor:
    """np.logspace: ``base ** linspace(start, stop)`` (start, stop and base may be traced).

    >>> import tapegrad as tg
    >>> logspace(tg.tensor(0.0, requires_grad=True), 2.0, 3)
    tensor([  1.,  10., 100.], grad_fn=<...>)
    """
    _no_out("logspace", None, dtype)
    nd = len(np.broadcast_shapes(*(np.shape(_plain(v)) for v in (start, stop, base))))
    if nd > 0:
        start, stop, base = (
            O.reshape(O.tensor_of(v), (1,) * (nd - np.ndim(_plain(v))) + np.shape(_plain(v)))
            for v in (start, stop, base)
        )
        base = O.expand_dims(base, axis)
    return O.power(base, linspace(start, stop, num, endpoint, axis=axis))


@implements(np.geomspace)
@_values_if_constant(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0) -> Tensor:
    """np.geomspace for real start and stop (NumPy's steps: through logspace, ends exact).

    >>> import tapegrad as tg
    >>> geomspace(tg.tensor(1.0, requires_grad=True), 1000.0, 4)
    tensor([   1.,   10.,  100., 1000.], grad_fn=<...>)
    """
    _no_out("geomspace", None, dtype)
    start, stop = O.tensor_of(start), O.tensor_of(stop)
    # the zeros and the sign of start are read through guarded comparisons: a trace replay
    # at a start of another sign retraces (its recorded sign gave NaN where NumPy does not)
    if np.any(O.truth(start == 0)) or np.any(O.truth(stop == 0)):
        raise ValueError("Geometric sequence cannot include zero")
    shape = np.broadcast_shapes(start.shape, stop.shape)
    negative, nan = O.truth(start < 0), O.truth(start != start)  # noqa: PLR0124
    sign = np.broadcast_to(np.where(nan, np.nan, np.where(negative, -1.0, 1.0)), shape)
    start = O.div(O.broadcast_to(start, shape), sign)
    stop = O.div(O.broadcast_to(stop, shape), sign)
    num = operator.index(num)
    out = logspace(O.log10(start), O.log10(stop), num, endpoint)
    if num > 0:  # the ends are start and stop themselves
        parts = [O.reshape(start, (1,) + shape)]
        if num > 1:
            inner = slice(1, -1) if endpoint else slice(1, None)
            parts.append(O.getitem(out, inner))
            if endpoint:
                parts.append(O.reshape(stop, (1,) + shape))
        out = O.concatenate(parts, 0)
    out = O.mul(out, sign)
    return _moveaxis(out, 0, axis) if axis != 0 else out


# ---- numpy.linalg's array-API names ---------------------------------------------------------


def _linalg_diagonal(x, /, *, offset=0):
    return diagonal(x, offset, -2, -1)


def _linalg_trace(x, /, *, offset=0, dtype=None):
    _no_out("linalg.trace", None, dtype)
    return O.sum(diagonal(x, offset, -2, -1), -1)


def _linalg_cross(x1, x2, /, *, axis=-1):
    x1, x2 = O.tensor_of(x1), O.tensor_of(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
            f"they are {x1.shape[axis]} and {x2.shape[axis]} dimensional instead."
        )
    return cross(x1, x2, axis=axis)


def _linalg_outer(x1, x2, /):
    x1, x2 = O.tensor_of(x1), O.tensor_of(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"Input arrays must be one-dimensional, but they are x1.ndim="
            f"{x1.ndim} and x2.ndim={x2.ndim}."
        )
    return contract.outer(x1, x2)


def _linalg_vecdot(x1, x2, /, *, axis=-1):
    return O.sum(O.mul(x1, x2), axis)


def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 - NumPy's name
    x = O.tensor_of(x)
    axes = O.normalize_axes(axis, x.ndim, "vector_norm")
    rest = [d for d in range(x.ndim) if d not in axes]
    lanes = _moveaxis(x, axes, list(range(len(rest), x.ndim))) if axes else x
    lanes = O.reshape(lanes, tuple(x.shape[d] for d in rest) + (-1,))
    out = contract.norm(lanes, ord, -1)
    if keepdims:
        out = O.reshape(out, tuple(1 if d in axes else s for d, s in enumerate(x.shape)))
    return out


def _matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 - NumPy's name
    return linalg_ops.norm(x, ord, (-2, -1), keepdims)  # (2, -2, 'nuc' too, through the SVD)


LINALG = {
    np.linalg.diagonal: _linalg_diagonal,
    np.linalg.trace: _linalg_trace,
    np.linalg.cross: _linalg_cross,
    np.linalg.outer: _linalg_outer,
    np.linalg.matmul: lambda x1, x2, /: O.matmul(x1, x2),
    np.linalg.tensordot: lambda x1, x2, /, *, axes=2: contract.tensordot(x1, x2, axes),
    np.linalg.vecdot: _linalg_vecdot,
    np.linalg.matrix_transpose: matrix_transpose,
    np.linalg.vector_norm: _vector_norm,
    np.linalg.matrix_norm: _matrix_norm,
}


FUNCTIONS.update(LINALG)
if hasattr(np, "row_stack"):
    FUNCTIONS[np.row_stack] = row_stack

# indexing helpers whose results are integers or booleans: they run on the values
VALUE_FUNCTIONS = {
    np.argwhere,
    np.argpartition,
    np.searchsorted,
    np.digitize,
    np.lexsort,
    np.diag_indices_from,
    np.tril_indices_from,
    np.triu_indices_from,
    np.ravel_multi_index,
    np.unravel_index,
    np.ix_,
    np.isin,
    np.isneginf,
    np.isposinf,
    np.iscomplex,
    np.isreal,
}
if hasattr(np, "unstack"):
    FUNCTIONS.update(
        {
            np.unstack: unstack,
            np.cumulative_sum: cumulative_sum,
            np.cumulative_prod: cumulative_prod,
        }
    )


# the public functions: those registered above, and the n-d convolution SciPy's signal uses
__all__ = sorted(
    {
        f.__name__
        for f in FUNCTIONS.values()
        if getattr(f, "__module__", None) == __name__ and not f.__name__.startswith(("_", "<"))
    }
    | {"convolve_nd"}
)
