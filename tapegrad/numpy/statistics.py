"""NumPy's statistics and order functions on Tensors (np.ptp, np.average, np.diff, np.sort,
np.partition, np.median, np.quantile, np.percentile), composed from the differentiable
primitives of ``tapegrad.core.functions`` (sorting gathers by the order of the values)."""

import math

import numpy as np

from ..core.functions import (
    Axis,
    TensorLike,
    add,
    amax,
    amin,
    broadcast_to,
    concatenate,
    div,
    gather_along,
    getitem,
    mean,
    mul,
    normalize_axes,
    order_guard,
    ravel,
    reshape,
    sub,
    sum,
    tensor_of,
    transpose,
    truth,
    where,
)
from ..core.tensor import STATE, result, value_of
from ..core.tensor import TensorBase as Tensor


def ptp(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """np.ptp: max - min (composite; ties split the gradient evenly, as max and min do).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 4.0, 2.0], requires_grad=True)
        >>> y = tg.ptp(x); y
        tensor(3., grad_fn=<SubBackward0>)
        >>> y.backward(); x.grad
        tensor([-1.,  1.,  0.])
    """
    top = amax(x, axis, keepdims)
    out = sub(top, amin(x, axis, keepdims))
    nan = truth(out != out)  # noqa: PLR0124 - (guarded in a trace, as every mask)
    if nan.any():  # a lane holding NaN: max's NaN entry itself, so its gradient is not 0 - 0
        out = where(nan, top, out)
    return out


def average(a: TensorLike, axis: Axis = None, weights=None, returned=False, keepdims: bool = False):
    """np.average: sum(a * w) / sum(w) along ``axis`` (composite; differentiable in a and in
    the weights).  1-D weights along ``axis`` broadcast as NumPy's do.

    Examples:
        >>> import tapegrad as tg
        >>> a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> y = tg.average(a, weights=[3.0, 1.0, 0.0]); y        # (3 * 1 + 1 * 2) / 4
        tensor(1.2500, grad_fn=<DivBackward0>)
        >>> y.backward(); a.grad                                  # weights / sum(weights)
        tensor([0.7500, 0.2500, 0.0000])
    """
    a = tensor_of(a)
    if weights is None:
        avg = mean(a, axis, keepdims)
        if not returned:
            return avg
        count = a.size // max(avg.size, 1) if a.size else 0
        return avg, Tensor._const(
            result(np.full(avg.shape, float(count))) if avg.ndim else float(count)
        )
    w = tensor_of(weights)
    if w.shape != a.shape:
        if axis is None:
            raise TypeError(
                "average: axis must be specified when the shapes of a and weights differ"
            )
        if w.ndim != 1:
            raise TypeError("average: 1D weights expected when the shapes of a and weights differ")
        ax = normalize_axes(axis, a.ndim, "average")
        if len(ax) != 1 or w.shape[0] != a.shape[ax[0]]:
            raise ValueError("average: length of weights differs from the length of the axis")
        shape = [1] * a.ndim
        shape[ax[0]] = w.shape[0]
        w = reshape(w, shape)
    scl = sum(
        broadcast_to(w, np.broadcast_shapes(w.shape, a.shape)) if w.shape != a.shape else w,
        axis,
        keepdims,
    )
    if np.any(np.asarray(scl._v) == 0.0):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = div(sum(mul(a, w), axis, keepdims), scl)
    if not returned:
        return avg
    return avg, (scl if scl.shape == avg.shape else broadcast_to(scl, avg.shape))


def diff(a: TensorLike, n=1, axis: Axis = -1, prepend=None, append=None) -> Tensor:
    """np.diff: n-th differences along ``axis`` (composite of slices and SUB rows).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 4.0, 9.0], requires_grad=True)
        >>> y = tg.diff(x); y
        tensor([3., 5.], grad_fn=<SubBackward0>)
        >>> y.sum().backward(); x.grad          # the sum telescopes to x[-1] - x[0]
        tensor([-1.,  0.,  1.])
    """
    a = tensor_of(a)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = normalize_axes(axis, a.ndim, "diff")[0]
    ends = []
    for end in (prepend, append):
        if end is None:
            ends.append(None)
            continue
        e = tensor_of(end)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[ax] = 1
            e = broadcast_to(e, tuple(shape))
        ends.append(e)
    if ends[0] is not None or ends[1] is not None:
        a = concatenate([e for e in (ends[0], a, ends[1]) if e is not None], axis=ax)
    for _ in range(n):
        hi = [slice(None)] * a.ndim
        lo = [slice(None)] * a.ndim
        hi[ax], lo[ax] = slice(1, None), slice(None, -1)
        a = sub(getitem(a, tuple(hi)), getitem(a, tuple(lo)))
    return a


def _arranged(name, x, axis, order, arg):
    """x gathered along ``axis`` by ``arg(values, axis)`` (argsort / argpartition)."""
    if order is not None:
        raise TypeError(f"{name}: order= (structured arrays) is not supported on Tensors")
    x = tensor_of(x)
    if axis is None:
        x, axis = ravel(x), -1
    v = np.asarray(x._v)
    out = gather_along(x, arg(v, axis), axis)
    return out, axis % v.ndim, v.shape


def sort(x: TensorLike, axis: Axis = -1, kind=None, order=None) -> Tensor:
    """np.sort: the values gathered in argsort order (one GATHER row); the gradient flows to
    the element each output came from (at ties, to one of them).  In a trace, a guard keeps
    the recorded order honest.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
        >>> import tapegrad.numpy as tnp
        >>> y = tnp.sort(x); y
        tensor([1., 2., 3.], grad_fn=<IndexBackward0>)
        >>> (y * tg.tensor([1.0, 2.0, 3.0])).sum().backward(); x.grad
        tensor([3., 1., 2.])
    """
    # stable whatever ``kind`` says (the values are NumPy's for every kind): ties then go
    # in index order, which the guard's pattern of ties makes a replay repeat
    out, ax, _ = _arranged(
        "sort", x, axis, order, lambda v, axis: np.argsort(v, axis=axis, kind="stable")
    )
    order_guard(out, ax, [(slice(0, -1), slice(1, None))])
    return out


def partition(x: TensorLike, kth, axis: Axis = -1, kind="introselect", order=None) -> Tensor:
    """np.partition: the values gathered in argpartition order (one GATHER row).  Only the
    ``kth`` positions are defined by NumPy (the rest is any order, as NumPy's own).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
        >>> y = tg.partition(x, 0)[0]; y        # the smallest value
        tensor(1., grad_fn=<ViewBackward0>)
        >>> y.backward(); x.grad
        tensor([0., 1., 0.])
    """
    out, _, _ = _arranged(
        "partition", x, axis, order, lambda v, axis: np.argpartition(v, kth, axis=axis, kind=kind)
    )
    # NumPy's arrangement of the entries away from ``kth`` follows from every comparison
    # its introselect made: a replay repeats it only where the whole order of x (ties
    # included) is the recorded one, which a stable sort's guards pin while a trace records
    if STATE.guard is not None:
        sort(x, axis)
    return out


def _to_last(x, axis, name):
    """x with the reduced axes moved last and flattened into one; and the shape keepdims
    gives."""
    shape = x.shape
    if axis is None:
        return ravel(x), (1,) * len(shape)
    axes = normalize_axes(axis, len(shape), name)
    others = [d for d in range(len(shape)) if d not in axes]
    y = transpose(x, others + list(axes)) if others + list(axes) != list(range(len(shape))) else x
    m = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    kept = tuple(1 if d in axes else s for d, s in enumerate(shape))
    return reshape(y, tuple(shape[d] for d in others) + (m,)), kept


def _nan_lanes(s, out):
    """NaN where a lane holds a NaN (sorted last), as NumPy's median and quantile give: that
    NaN entry itself, so the gradient goes to it (as PyTorch's median sends it; a constant NaN
    left every gradient 0, which looks like an answer).  Read through a guarded comparison,
    so a trace replay with NaN in other lanes retraces."""
    last = getitem(s, (Ellipsis, -1))
    nan = truth(last != last)  # noqa: PLR0124
    if not nan.any():
        return out
    if out.shape != last.shape:  # quantiles, (..., nq): the NaN as a column (..., 1)
        last = getitem(s, (Ellipsis, slice(-1, None)))
        nan = nan[..., None]
    mask = np.broadcast_to(nan, np.shape(out._v))
    return where(mask, last, out)


def _sorted_lanes(a, axis, name):
    """The values sorted along the reduced axes (moved last and flattened), the keepdims
    shape and the lane length."""
    y, kept = _to_last(tensor_of(a), axis, name)
    n = y.shape[-1]
    if n == 0:
        raise ValueError(f"{name} of an empty axis")
    return sort(y, -1), kept, n


def median(a: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """np.median: the middle of the sorted values (mean of the two middle ones for an even
    count); composite of sort (argsort + GATHER) and arithmetic.

    Examples:
        >>> import tapegrad as tg, tapegrad.numpy as tnp
        >>> x = tg.tensor([3.0, 1.0, 2.0, 10.0], requires_grad=True)
        >>> y = tnp.median(x); y
        tensor(2.5000, grad_fn=<MulBackward0>)
        >>> y.backward(); x.grad
        tensor([0.5000, 0.0000, 0.5000, 0.0000])
    """
    s, kept, n = _sorted_lanes(a, axis, "median")
    mid = getitem(s, (Ellipsis, n // 2))
    if n % 2 == 0:
        mid = mul(add(getitem(s, (Ellipsis, n // 2 - 1)), mid), 0.5)
    mid = _nan_lanes(s, mid)
    return reshape(mid, kept) if keepdims else mid


_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def nanmedian(a: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """np.nanmedian: the median of each lane's numbers, NaN entries left out (the mean of
    the two middle numbers, (lo + hi) / 2 as NumPy rounds it, not the quantile's lerp); NaN
    for a lane of NaN only."""
    s, kept, n = _sorted_lanes(a, axis, "nanmedian")
    out = reshape(_nan_skipping_quantile(s, n, np.array([0.5]), "median"), s.shape[:-1])
    return reshape(out, kept) if keepdims else out


def _nan_skipping_quantile(s, n, q, method):
    """np.nanquantile on lanes sorted with NaN last: each lane's own count k of numbers
    (whether an entry is NaN is read through a guarded comparison), its quantiles among the
    first k; NaN for a lane of NaN only, as NumPy."""
    nan = truth(s != s)
    lanes = int(np.prod(s.shape[:-1], dtype=np.int64))
    k = (n - nan.sum(-1)).reshape(lanes, 1)
    virtual = np.maximum(k - 1, 0) * q.reshape(1, -1)  # (lanes, nq)
    flat = reshape(s, (lanes, n))
    rows = np.arange(lanes).reshape(lanes, 1) + np.zeros_like(virtual, dtype=np.int64)
    if method in ("lower", "higher", "nearest"):
        pick = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]
        out = getitem(flat, (rows, pick(virtual).astype(np.int64)))
    else:
        prev = np.floor(virtual).astype(np.int64)
        nxt = np.minimum(prev + 1, np.maximum(k - 1, 0))
        t = virtual - prev
        if method == "midpoint":
            t = np.where(t == 0.0, 0.0, 0.5)
        lo, hi = getitem(flat, (rows, prev)), getitem(flat, (rows, nxt))
        d = sub(hi, lo)
        out = where(t >= 0.5, sub(hi, mul(d, result(1.0 - t))), add(lo, mul(d, result(t))))
        if method == "median":  # np.nanmedian's mean of the two middle numbers, as it rounds
            out = where(t == 0.0, lo, mul(add(lo, hi), 0.5))
    if np.any(k == 0):
        out = where(np.broadcast_to(k == 0, virtual.shape), math.nan, out)
    return reshape(out, s.shape[:-1] + (q.shape[0],))


def quantile(
    a: TensorLike,
    q,
    axis: Axis = None,
    method="linear",
    keepdims: bool = False,
    *,
    interpolation=None,
    skip_nan: bool = False,
) -> Tensor:
    """np.quantile with NumPy's methods linear (the default: NumPy's formula a + (b - a) * t
    between the sorted neighbours), midpoint, lower, higher and nearest (one order
    statistic): sort (argsort + GATHER), then pick.  The gradient flows to
    the selected elements, (1 - t) and t; q itself is not differentiated.

    Examples:
        >>> import tapegrad as tg
        >>> a = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        >>> y = tg.quantile(a, 0.25); y         # 1 + 0.75 * (2 - 1)
        tensor(1.7500, grad_fn=<ReshapeBackward0>)
        >>> y.backward(); a.grad
        tensor([0.2500, 0.7500, 0.0000, 0.0000])
    """
    if interpolation is not None:
        method = interpolation
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(
            f"quantile: method={method!r} is not supported on Tensors; only "
            f"{', '.join(map(repr, _QUANTILE_METHODS))} (NumPy's default is 'linear')"
        )
    if isinstance(q, Tensor) and q._rg:
        raise TypeError(
            "quantile: q requires grad; tapegrad differentiates quantiles in the "
            "data only (pass q as a number or array)"
        )
    qv = np.asarray(value_of(q), dtype=np.float64)
    if not (np.all(qv >= 0.0) and np.all(qv <= 1.0)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    s, kept, n = _sorted_lanes(a, axis, "quantile")
    if skip_nan:
        out = _nan_skipping_quantile(s, n, qv.reshape(-1), method)
        rest = kept if keepdims else s.shape[:-1]
        out = transpose(out, (out.ndim - 1,) + tuple(range(out.ndim - 1)))
        return reshape(out, qv.shape + tuple(rest))
    virtual = (n - 1) * qv.reshape(-1)
    if method in ("lower", "higher", "nearest"):  # one order statistic, as NumPy picks it
        pick = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]
        out = getitem(s, (Ellipsis, pick(virtual).astype(np.int64)))
    else:  # linear, or midpoint: halfway between the neighbours unless on one
        prev = np.floor(virtual).astype(np.int64)
        nxt = np.minimum(prev + 1, n - 1)
        t = virtual - prev
        if method == "midpoint":
            t = np.where(t == 0.0, 0.0, 0.5)
        lo = getitem(s, (Ellipsis, prev))
        hi = getitem(s, (Ellipsis, nxt))
        d = sub(hi, lo)
        out = where(t >= 0.5, sub(hi, mul(d, result(1.0 - t))), add(lo, mul(d, result(t))))
    out = _nan_lanes(s, out)  # (..., nq)
    rest = kept if keepdims else s.shape[:-1]
    out = transpose(out, (out.ndim - 1,) + tuple(range(out.ndim - 1)))
    return reshape(out, qv.shape + tuple(rest))


def percentile(
    a: TensorLike,
    q,
    axis: Axis = None,
    method="linear",
    keepdims: bool = False,
    *,
    interpolation=None,
    skip_nan: bool = False,
) -> Tensor:
    """np.percentile: ``quantile(a, q / 100)``.

    Examples:
        >>> import tapegrad as tg
        >>> a = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        >>> y = tg.percentile(a, 25.0); y
        tensor(1.7500, grad_fn=<ReshapeBackward0>)
        >>> y.backward(); a.grad
        tensor([0.2500, 0.7500, 0.0000, 0.0000])
    """
    if isinstance(q, Tensor) and q._rg:
        raise TypeError(
            "percentile: q requires grad; tapegrad differentiates percentiles in "
            "the data only (pass q as a number or array)"
        )
    return quantile(
        a,
        np.true_divide(value_of(q), 100),
        axis,
        method,
        keepdims,
        interpolation=interpolation,
        skip_nan=skip_nan,
    )
