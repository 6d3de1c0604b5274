"""Convolution, pooling and padding (``tg.nn.functional``), with PyTorch's arguments and layouts.

Every window of every output position is read with ONE integer-array gather (its index array is
computed once per shape and cached), so a convolution is a gather and a matrix product, a
max-pool a gather and ``amax``, an average pool a gather and a sum: compositions of tapegrad
ops, whose gradients, higher derivatives, forward mode and trace replay come from the ops.
``tg.nn.functional`` exports the public functions.
Padded positions point at one extra element holding the fill value (0, or -inf for max-pool).
"""

import functools
import math
import warnings

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core.tensor import STATE, TensorBase, scalar_argument


def _tuple(name, arg, value, n):
    """``value`` (an int or a sequence of n ints) as a tuple of n ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(
            f"{name}: {arg} must be an int or a tuple of {n} ints, got {value!r}"
        ) from None
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise ValueError(f"{name}: {arg} must be an int or a tuple of {n} ints, got {value!r}")
    return out


def _batched(name, x, n):
    """x as (N, C, *spatial) with n spatial dims, and whether a batch axis was added (PyTorch
    also takes an unbatched (C, *spatial) input)."""
    x = _ops.tensor_of(x)
    if x.ndim == n + 1:
        return _ops.reshape(x, (1,) + x.shape), True
    if x.ndim != n + 2:
        raise ValueError(
            f"{name}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got "
            f"shape {x.shape}"
        )
    return x, False


@functools.lru_cache(maxsize=64)
def _windows(batch, channels, spatial, kernel, stride, pads, dilation, name="convolution"):
    """Flat indices (N, C, P, K) of every window into the (N, C * S + 1) array of the input
    rows, each followed by one fill element (index C * S of its row), where a window reads
    padding; the output's spatial shape; and the (P, K) mask of real (unpadded) elements."""
    out = []
    coords = []
    for d, (n, k, s, (lo, hi), dil) in enumerate(
        zip(spatial, kernel, stride, pads, dilation, strict=True)
    ):
        o = (n + lo + hi - dil * (k - 1) - 1) // s + 1
        if o < 1:
            raise ValueError(
                f"{name}: spatial size {n} (dimension {d}) padded by {lo + hi} is smaller than "
                f"the kernel size {k} with dilation {dil}: the output would be empty"
            )
        out.append(o)
        coords.append(np.arange(o)[:, None] * s - lo + np.arange(k)[None, :] * dil)
    return _window_index(batch, channels, spatial, tuple(out), coords)


def _window_index(batch, channels, spatial, out, coords):
    """``_windows``' arrays from the coordinates (o, k) along each spatial dim of the k
    elements each of the o windows reads (outside 0 .. size - 1: the fill element)."""
    size = math.prod(spatial)
    kernel = tuple(c.shape[1] for c in coords)
    nd = len(spatial)
    flat = np.zeros((1,) * (2 * nd), dtype=np.int64)
    valid = np.ones((1,) * (2 * nd), dtype=bool)
    step = size
    for d, c in enumerate(coords):
        step //= spatial[d]
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = c.shape
        c = c.reshape(shape)
        flat = flat + c * step
        valid = valid & (c >= 0) & (c < spatial[d])
    p, k = math.prod(out), math.prod(kernel)
    flat = flat.reshape(p, k)
    valid = np.broadcast_to(valid, tuple(out) + tuple(kernel)).reshape(p, k)
    row = channels * size + 1
    chan = np.arange(channels)[:, None, None] * size
    idx = np.where(valid, chan + flat, channels * size)
    idx = np.arange(batch)[:, None, None, None] * row + idx
    idx.setflags(write=False)
    valid.setflags(write=False)
    return idx, tuple(out), valid


def _gather_windows(x, idx, fill):
    """The windows of x (N, C, *spatial) read at ``idx`` (from ``_windows``): x's rows with
    the fill element appended, gathered in one op into idx's shape."""
    n = x.shape[0]
    rows = _ops.reshape(x, (n, math.prod(x.shape[1:])))  # (not -1: a batch of 0 is ambiguous)
    rows = _ops.concatenate([rows, np.full((n, 1), fill)], axis=1)
    return _ops.gather_flat(rows, idx, idx.shape)


def _conv_padding(name, padding, kernel, dilation, stride):
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(
                    f"{name}: padding='same' is not supported for strided convolutions "
                    f"(stride={stride}); give the padding as numbers"
                )
            total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueError(f"{name}: padding={padding!r} is not 'valid', 'same' or a number")
    p = _tuple(name, "padding", padding, n)
    if any(v < 0 for v in p):
        raise ValueError(f"{name}: negative padding {padding!r} is not supported")
    return tuple((v, v) for v in p)


@functools.lru_cache(maxsize=64)
def _conv_index(batch, channels, spatial, kernel, stride, pads, dilation, groups, name):
    """The window indices in the order the product reads them: (groups, N * P, C/groups * K)."""
    idx, out, _ = _windows(batch, channels, spatial, kernel, stride, pads, dilation, name)
    p, k = idx.shape[2:]
    cg = channels // groups
    idx = idx.reshape(batch, groups, cg, p, k).transpose(1, 0, 3, 2, 4)
    idx = np.ascontiguousarray(idx).reshape(groups, batch * p, cg * k)
    idx.setflags(write=False)
    return idx, out


def _conv(name, n, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = _batched(name, input, n)
    w = _ops.tensor_of(weight)
    if w.ndim != n + 2:
        raise ValueError(
            f"{name}: weight must be {n + 2}D (out_channels, in_channels / groups, *kernel), "
            f"got shape {w.shape}"
        )
    groups = int(groups)
    batch, channels = x.shape[:2]
    out_ch, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    if groups < 1 or channels % groups or out_ch % groups:
        raise ValueError(
            f"{name}: groups={groups} must be positive and divide in_channels ({channels}) "
            f"and out_channels ({out_ch})"
        )
    if cg * groups != channels:
        raise ValueError(
            f"{name}: input of shape {x.shape} has {channels} channels, but the weight of shape "
            f"{w.shape} with groups={groups} expects {cg * groups}"
        )
    stride = _tuple(name, "stride", stride, n)
    dilation = _tuple(name, "dilation", dilation, n)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{name}: stride and dilation must be positive")
    pads = _conv_padding(name, padding, kernel, dilation, stride)
    idx, out = _conv_index(
        batch, channels, tuple(x.shape[2:]), kernel, stride, pads, dilation, groups, name
    )
    cols = _gather_windows(x, idx, 0.0)  # (groups, N * P, C/groups * K)
    p = math.prod(out)
    if groups == 1:
        y = _ops.linear(_ops.reshape(cols, idx.shape[1:]), _ops.reshape(w, (out_ch, -1)))
        y = _ops.transpose(_ops.reshape(y, (batch, p, out_ch)), (0, 2, 1))
    else:
        wg = _ops.transpose(_ops.reshape(w, (groups, out_ch // groups, -1)), (0, 2, 1))
        y = _ops.matmul(cols, wg)  # (groups, N * P, out / groups)
        y = _ops.reshape(y, (groups, batch, p, out_ch // groups))
        y = _ops.transpose(y, (1, 0, 3, 2))
    y = _ops.reshape(y, (batch, out_ch) + out)
    if bias is not None:
        b = _ops.tensor_of(bias)
        if b.shape != (out_ch,):
            raise ValueError(f"{name}: bias must have shape ({out_ch},), got {b.shape}")
        y = _ops.add(y, _ops.reshape(b, (out_ch,) + (1,) * n))
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch) of ``input`` (N, C_in, L) or (C_in, L)
    with ``weight`` (C_out, C_in / groups, k) and optional ``bias`` (C_out,).  ``padding`` is
    an int, a 1-tuple, 'valid' (none) or 'same' (output as long as the input; stride 1).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[1.0, 2.0, 3.0, 4.0]]], requires_grad=True)
        >>> y = F.conv1d(x, tg.tensor([[[1.0, -1.0]]])); y
        tensor([[[-1., -1., -1.]]], grad_fn=<ReshapeBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[[ 1.,  0.,  0., -1.]]])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch) of ``input`` (N, C_in, H, W) or
    (C_in, H, W) with ``weight`` (C_out, C_in / groups, kH, kW) and optional ``bias``
    (C_out,).  ``stride``, ``padding`` and ``dilation`` are ints or pairs; ``padding`` may also
    be 'valid' (none) or 'same' (output the input's size, stride 1; an odd total padding puts
    the extra row or column at the end, as PyTorch).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.ones(1, 1, 3, 3)
        >>> F.conv2d(x, tg.ones(1, 1, 2, 2))
        tensor([[[[4., 4.],
                  [4., 4.]]]])
        >>> F.conv2d(x, tg.ones(1, 1, 3, 3), padding=1)[0, 0]
        tensor([[4., 6., 4.],
                [6., 9., 6.],
                [4., 6., 4.]])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (PyTorch's ``F.conv3d``; cross-correlation) of ``input``
    (N, C_in, D, H, W) or (C_in, D, H, W) with ``weight`` (C_out, C_in / groups, kD, kH, kW)
    and optional ``bias`` (C_out,); ``stride``, ``padding`` and ``dilation`` are ints or
    triples, ``padding`` also 'valid' or 'same' (see ``conv2d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.conv3d(tg.ones(1, 1, 3, 3, 3), tg.ones(2, 1, 2, 2, 2)).shape
        (1, 2, 2, 2, 2)
        >>> F.conv3d(tg.ones(1, 2, 2, 2), tg.ones(1, 1, 2, 2, 2))
        tensor([[[[8.]]]])
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


# ---- pooling ------------------------------------------------------------------------------------


def _pool_args(name, n, x, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _tuple(name, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or stride == [] else _tuple(name, "stride", stride, n)
    pads = _tuple(name, "padding", padding, n)
    dilation = _tuple(name, "dilation", dilation, n)
    if any(v < 1 for v in kernel + stride + dilation):
        raise ValueError(f"{name}: kernel_size, stride and dilation must be positive")
    for p, k, d in zip(pads, kernel, dilation, strict=True):
        if p < 0 or 2 * p > (k - 1) * d + 1:
            raise ValueError(
                f"{name}: pad should be at most half of effective kernel size, but got "
                f"pad={p}, kernel_size={k} and dilation={d}"
            )
    ends = tuple(
        _ceil_end(size, k, s, p, d) if ceil_mode else p
        for size, k, s, p, d in zip(x.shape[2:], kernel, stride, pads, dilation, strict=True)
    )
    return (_fill_last if name.startswith("max") else _windows)(
        x.shape[0], x.shape[1], tuple(x.shape[2:]), kernel, stride,
        tuple(zip(pads, ends, strict=True)), dilation, name,
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _fill_last(batch, channels, spatial, kernel, stride, pads, dilation, name):
    """``_windows`` with each window's padding moved after its real elements (their order
    kept): a max-pool's first maximum is then a real element even where every real element
    is -inf, as PyTorch's (the index and gradient go to it, not to the padding)."""
    idx, out, valid = _windows(batch, channels, spatial, kernel, stride, pads, dilation, name)
    if valid.all():
        return idx, out, valid
    order = np.argsort(~valid, axis=-1, kind="stable")
    idx = np.ascontiguousarray(np.take_along_axis(idx, order[None, None], axis=-1))
    idx.setflags(write=False)
    return idx, out, np.take_along_axis(valid, order, axis=-1)


def _ceil_end(size, k, s, p, d):
    """The padding after a dim that gives PyTorch's ``ceil_mode=True`` windows: one more
    window covers the rest of the input, unless it would start in the padding after it."""
    span = d * (k - 1) + 1
    out = -(-(size + 2 * p - span) // s) + 1
    if (out - 1) * s >= size + p:
        out -= 1
    return (out - 1) * s + span - size - p


def _max_pool(name, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(name, input, n)
    idx, out, _ = _pool_args(name, n, x, kernel_size, stride, padding, dilation, ceil_mode)
    return _window_max(x, idx, out, unbatched, return_indices)


def _window_max(x, idx, out, unbatched, return_indices):
    """The maximum of each window of x read at ``idx`` (from ``_windows``), of output spatial
    shape ``out``, and with ``return_indices`` PyTorch's indices (int64) of the maxima."""
    # PyTorch's CPU pick (its gradient all of it): the first maximum of each window, or where
    # a window holds NaNs, its last NaN
    g = _gather_windows(x, idx, -np.inf)
    v = np.asarray(g._v)
    nan = np.isnan(v)
    k = np.argmax(v, axis=-1)
    if nan.any():
        last = v.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        k = np.where(nan.any(axis=-1), last, k)
    y = _ops.gather_along(g, k[..., None], -1)
    if STATE.guard is not None and g._rg:  # a replay whose maxima move must record again
        g <= y  # noqa: B015 - records the guard
    y = _ops.reshape(y, y.shape[:-1])
    y = _ops.reshape(y, x.shape[:2] + out)
    y = _ops.reshape(y, y.shape[1:]) if unbatched else y
    if not return_indices:
        return y
    # PyTorch's indices: of the flattened spatial dims of each (N, C) plane
    size = math.prod(x.shape[2:])
    at = np.take_along_axis(idx, k[..., None], axis=-1)[..., 0] % (x.shape[1] * size + 1)
    at = (at % size).reshape(x.shape[:2] + out)
    return y, _creation.tensor(at[0] if unbatched else at)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Maximum over windows of ``kernel_size`` along the last axis of (N, C, L) or (C, L);
    ``stride`` defaults to ``kernel_size``; padding reads as -inf; ``ceil_mode=True`` adds a
    last window over the rest of the input, as PyTorch's.  The gradient goes to the first
    maximum of each window (PyTorch's), whose flat index in its (N, C) plane
    ``return_indices=True`` returns too.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.max_pool1d(tg.tensor([[[1.0, 3.0, 2.0, 0.0, 5.0]]]), 2)
        tensor([[[3., 2.]]])
    """
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Maximum over ``kernel_size`` windows of the last two axes of (N, C, H, W) or (C, H, W)
    (see ``max_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]], requires_grad=True)
        >>> y = F.max_pool2d(x, 2); y
        tensor([[[[4.]]]], grad_fn=<ReshapeBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[[[0., 0.],
                  [1., 0.]]]])
    """
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def _avg_pool(
    name, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    x, unbatched = _batched(name, input, n)
    kernel = _tuple(name, "kernel_size", kernel_size, n)
    # (PyTorch's avg_pool3d checks the unpadded input, its 1-D/2-D do not)
    if n == 3 and any(size < k for size, k in zip(x.shape[2:], kernel, strict=True)):
        raise ValueError(
            f"{name}: input image of spatial shape {tuple(x.shape[2:])} is smaller than the "
            f"kernel size {kernel_size!r} (padding does not count here, as in PyTorch); use a "
            f"smaller kernel or pad the input with F.pad"
        )
    idx, out, valid = _pool_args(name, n, x, kernel_size, stride, padding, 1, ceil_mode)
    total = _ops.sum(_gather_windows(x, idx, 0.0), axis=-1)  # (N, C, P)
    if divisor_override is not None:
        if not divisor_override or int(divisor_override) != divisor_override:
            raise ValueError(f"{name}: divisor_override must be a nonzero int")
        y = _ops.div(total, float(divisor_override))
    elif count_include_pad:
        y = _ops.div(total, _include_pad_divisor(name, n, x, kernel_size, stride, padding, out))
    else:
        y = _ops.div(total, valid.sum(axis=1).astype(np.float64))
    y = _ops.reshape(y, x.shape[:2] + out)
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def _include_pad_divisor(name, n, x, kernel_size, stride, padding, out):
    """PyTorch's divisor of each window with count_include_pad: its size clipped to the input
    padded on both sides by ``padding`` (the kernel size, but for a ``ceil_mode`` window
    running past that padding), as a (P,) array."""
    kernel = _tuple(name, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or stride == [] else _tuple(name, "stride", stride, n)
    pads = _tuple(name, "padding", padding, n)
    div = np.ones((), dtype=np.float64)
    for size, k, s, p, o in zip(x.shape[2:], kernel, stride, pads, out, strict=True):
        start = np.arange(o) * s - p
        div = np.multiply.outer(div, np.minimum(start + k, size + p) - start)
    return div.reshape(-1).astype(np.float64)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of ``kernel_size`` along the last axis of (N, C, L) or (C, L);
    ``stride`` defaults to ``kernel_size``; padding counts as zeros in the mean unless
    ``count_include_pad=False`` (as PyTorch).  ``ceil_mode=True`` adds a last window over the
    rest of the input; its divisor counts the input and ``padding`` it covers, not the rest of
    the kernel (PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[1.0, 3.0, 2.0, 6.0]]])
        >>> F.avg_pool1d(x, 2)
        tensor([[[2., 4.]]])
        >>> F.avg_pool1d(x, 2, padding=1), F.avg_pool1d(x, 2, padding=1, count_include_pad=False)
        (tensor([[[0.5000, 2.5000, 3.0000]]]), tensor([[[1.0000, 2.5000, 6.0000]]]))
    """
    return _avg_pool(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over ``kernel_size`` windows of the last two axes of (N, C, H, W) or (C, H, W)
    (see ``avg_pool1d``); ``divisor_override`` replaces the window size as the divisor.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[[1.0, 2.0], [4.0, 5.0]]]], requires_grad=True)
        >>> y = F.avg_pool2d(x, 2); y
        tensor([[[[3.]]]], grad_fn=<ReshapeBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[[[0.2500, 0.2500],
                  [0.2500, 0.2500]]]])
    """
    return _avg_pool(
        "avg_pool2d",
        2,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Maximum over ``kernel_size`` windows of the last three axes of (N, C, D, H, W) or
    (C, D, H, W) (PyTorch's ``F.max_pool3d``; see ``max_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.max_pool3d(tg.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        tensor([[[[[7.]]]]])
    """
    return _max_pool(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """``max_pool1d`` returning (values, indices) (PyTorch's name; its ``return_indices`` is
    ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.max_pool1d_with_indices(tg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, True
    )


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """``max_pool2d`` returning (values, indices) (PyTorch's name; its ``return_indices`` is
    ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.max_pool2d_with_indices(tg.arange(4.0).reshape(1, 1, 2, 2), 2)
        (tensor([[[[3.]]]]), tensor([[[[3]]]]))
    """
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, True
    )


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """``max_pool3d`` returning (values, indices) (PyTorch's name; its ``return_indices`` is
    ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.max_pool3d_with_indices(tg.arange(8.0).reshape(1, 1, 2, 2, 2), 2)[1]
        tensor([[[[[7]]]]])
    """
    return _max_pool(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, True
    )


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over ``kernel_size`` windows of the last three axes of (N, C, D, H, W) or
    (C, D, H, W) (PyTorch's ``F.avg_pool3d``; see ``avg_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.avg_pool3d(tg.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        tensor([[[[[3.5000]]]]])
    """
    return _avg_pool(
        "avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override,
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _adaptive_matrix(size, out):
    """(out, size): row i averages PyTorch's adaptive window floor(i size / out) ..
    ceil((i + 1) size / out)."""
    m = np.zeros((out, size))
    for i in range(out):
        lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    m.setflags(write=False)
    return m


def _adaptive_sizes(name, n, x, output_size):
    """``output_size`` (an int, or n ints or Nones: None keeps that size) as n ints."""
    spatial = tuple(x.shape[2:])
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * n
    try:
        sizes = tuple(output_size)
    except TypeError:
        raise TypeError(
            f"{name}: output_size must be an int or a tuple of {n} ints, got {output_size!r}"
        ) from None
    if len(sizes) == 1 and n > 1:
        sizes = sizes * n
    if len(sizes) != n or any(
        o is not None and (isinstance(o, bool) or not isinstance(o, (int, np.integer)))
        for o in sizes
    ):
        raise ValueError(
            f"{name}: output_size must be an int or a tuple of {n} ints, got {output_size!r}"
        )
    out = tuple(s if o is None else int(o) for o, s in zip(sizes, spatial, strict=True))
    if any(o < 1 for o in out) or any(s < 1 for s in spatial):
        raise ValueError(
            f"{name}: output_size {output_size!r} for input of shape {x.shape} is empty; "
            f"every input and output size must be positive"
        )
    return out


def _adaptive_avg(name, n, input, output_size):
    x, unbatched = _batched(name, input, n)
    out = _adaptive_sizes(name, n, x, output_size)
    y = x
    for d in reversed(range(n)):
        size, o = x.shape[2 + d], out[d]
        if o == size:
            continue
        m = _adaptive_matrix(size, o)
        if d == n - 1:
            y = _ops.matmul(y, m.T)
        else:  # (pre, size, post) -> (pre, o, post)
            shape = y.shape
            post = math.prod(shape[3 + d :])
            y = _ops.matmul(m, _ops.reshape(y, (math.prod(shape[: 2 + d]), size, post)))
            y = _ops.reshape(y, shape[: 2 + d] + (o,) + shape[3 + d :])
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def adaptive_avg_pool1d(input, output_size):
    """Mean over the windows that split the last axis of (N, C, L) or (C, L) into
    ``output_size`` windows (PyTorch's ``F.adaptive_avg_pool1d``): output i averages
    floor(i L / oL) .. ceil((i + 1) L / oL) (see ``adaptive_avg_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_avg_pool1d(tg.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
        tensor([[[2.0000, 4.0000]]])
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mean over the windows that split (N, C, H, W) or (C, H, W) into ``output_size`` (an
    int, a pair, or a pair with None to keep that size), PyTorch's windows: row i of the
    output averages rows floor(i H / oH) .. ceil((i + 1) H / oH) (windows overlap when oH
    does not divide H).  Computed as P_H @ x @ P_W.T with the averaging matrices P.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_avg_pool2d(x, 2)
        tensor([[[[2.5000, 4.5000],
                  [10.5000, 12.5000]]]])
        >>> F.adaptive_avg_pool2d(x, 1).shape
        (1, 1, 1, 1)
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Mean over the windows that split (N, C, D, H, W) or (C, D, H, W) into ``output_size``
    (an int, or a triple whose Nones keep that size), as PyTorch's ``F.adaptive_avg_pool3d``
    (see ``adaptive_avg_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_avg_pool3d(tg.ones(2, 3, 4, 5, 6), (1, None, 2)).shape
        (2, 3, 1, 5, 2)
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


@functools.lru_cache(maxsize=64)
def _adaptive_index(batch, channels, spatial, out):
    """``_windows``' arrays for PyTorch's adaptive windows floor(i n / o) .. ceil((i+1) n / o)
    along each dim, each padded with the fill element to the longest window."""
    coords = []
    for n, o in zip(spatial, out, strict=True):
        lo = np.arange(o) * n // o
        hi = -(-(np.arange(1, o + 1) * n) // o)
        k = int((hi - lo).max())
        c = lo[:, None] + np.arange(k)[None, :]
        coords.append(np.where(c < hi[:, None], c, -1))
    return _window_index(batch, channels, spatial, out, coords)


def _adaptive_max(name, n, input, output_size, return_indices):
    x, unbatched = _batched(name, input, n)
    out = _adaptive_sizes(name, n, x, output_size)
    idx, out, _ = _adaptive_index(x.shape[0], x.shape[1], tuple(x.shape[2:]), out)
    return _window_max(x, idx, out, unbatched, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over the windows that split the last axis of (N, C, L) or (C, L) into
    ``output_size`` windows floor(i L / oL) .. ceil((i + 1) L / oL) (PyTorch's
    ``F.adaptive_max_pool1d``); the gradient goes to the first maximum of each window, whose
    index ``return_indices=True`` returns too.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool1d(tg.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0]]]), 2)
        tensor([[[5., 4.]]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) (an int or a
    pair ``output_size``, None keeping that size; see ``adaptive_max_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool2d(tg.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maximum over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) (see
    ``adaptive_max_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool3d(tg.ones(1, 2, 3, 4, 5), 1).shape
        (1, 2, 1, 1, 1)
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` returning (values, indices) (PyTorch's name; its
    ``return_indices`` is ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool1d_with_indices(tg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning (values, indices) (PyTorch's name; its
    ``return_indices`` is ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool2d_with_indices(tg.arange(4.0).reshape(1, 1, 2, 2), 1)
        (tensor([[[[3.]]]]), tensor([[[[3]]]]))
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` returning (values, indices) (PyTorch's name; its
    ``return_indices`` is ignor

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.adaptive_max_pool3d_with_indices(tg.arange(8.0).reshape(1, 1, 2, 2, 2), 1)[1]
        tensor([[[[[7]]]]])
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, True)


def _lp_pool(name, n, input, norm_type, kernel_size, stride, ceil_mode):
    """PyTorch's composition: (sign(a) relu(|a|) * K) ** (1 / p) of the mean a of x ** p over
    each window (so an all-zero window has value 0 and gradient 0); p = inf: the max of |x|."""
    p = float(norm_type)
    x = _ops.tensor_of(input)
    if p == math.inf:
        return _max_pool(name, n, x.abs(), kernel_size, stride, 0, 1, ceil_mode, False)
    if p == -math.inf:
        return -_max_pool(name, n, -x.abs(), kernel_size, stride, 0, 1, ceil_mode, False)
    a = _avg_pool(name, n, _ops.power(x, p), kernel_size, stride, 0, ceil_mode, True, None)
    k = math.prod(_tuple(name, "kernel_size", kernel_size, n))
    a = _ops.mul(_ops.mul(a.sign(), _ops.relu(a.abs())), float(k))
    return _ops.power(a, 1.0 / p)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling (PyTorch's ``F.lp_pool1d``): (sum of x ** p over each window of
    the last axis) ** (1 / p), p = ``norm_type`` (inf: the max of |x|); ``stride`` defaults
    to ``kernel_size``.  As PyTorch's, an all-zero window has gradient 0; ``ceil_mode=True``
    adds a last window over the rest of the input (its mean scaled by the full kernel size).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.lp_pool1d(tg.tensor([[[3.0, 4.0, 1.0, 0.0]]]), 2, 2)
        tensor([[[5., 1.]]])
    """
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over windows of the last two axes (PyTorch's ``F.lp_pool2d``;
    see ``lp_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.lp_pool2d(tg.ones(1, 1, 2, 2), 1, 2)
        tensor([[[[4.]]]])
    """
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over windows of the last three axes (PyTorch's
    ``F.lp_pool3d``; see ``lp_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.lp_pool3d(tg.ones(1, 1, 2, 2, 2), 2, 2)
        tensor([[[[[2.8284]]]]])
    """
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


def _unpool_index(at, out_spatial):
    """Flat indices into x.ravel() followed by one fill element (index x.size) giving the
    (N, C, *out_spatial) unpooled array: each position reads the last input element whose
    index names it."""
    in_shape = at.shape
    planes = math.prod(in_shape[:2])
    size, per = math.prod(out_spatial), math.prod(in_shape[2:])
    src = np.full(planes * size, planes * per, dtype=np.int64)
    dest = (np.arange(planes)[:, None] * size + at.reshape(planes, per)).ravel()
    src[dest] = np.arange(planes * per)  # (the last of repeated indices is written)
    return src.reshape(in_shape[:2] + tuple(out_spatial))


def _max_unpool(name, n, input, indices, kernel_size, stride, padding, output_size):
    x, unbatched = _batched(name, input, n)
    at = np.asarray(indices._v if isinstance(indices, TensorBase) else indices)
    if at.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be an integer tensor, got dtype {at.dtype}")
    at = at.astype(np.int64).reshape((1,) + at.shape if unbatched else at.shape)
    if at.shape != x.shape:
        raise ValueError(
            f"{name}: Expected shape of indices to be same as that of the input tensor "
            f"({x.shape}) but got indices tensor with shape: {at.shape}"
        )
    kernel = _tuple(name, "kernel_size", kernel_size, n)
    stride = kernel if stride is None else _tuple(name, "stride", stride, n)
    pads = _tuple(name, "padding", padding, n)
    default = [
        (size - 1) * s + k - 2 * p
        for size, s, k, p in zip(x.shape[2:], stride, kernel, pads, strict=True)
    ]
    if output_size is None:
        out = default
    else:
        out = [int(v) for v in output_size]
        if len(out) == n + 2:
            out = out[2:]
        if len(out) != n:
            raise ValueError(
                f"{name}: output_size should be a sequence containing {n} or {n + 2} elements, "
                f"but it has a length of '{len(out)}'"
            )
        for d, (o, size, s) in enumerate(zip(out, default, stride, strict=True)):
            if not size - s < o < size + s:
                raise ValueError(
                    f'{name}: invalid output_size "{output_size}" (dim {d} must be between '
                    f"{size - s} and {size + s})"
                )
    if any(o < 1 for o in out):
        raise ValueError(f"{name}: the output size {out} is empty; check kernel_size and padding")
    size = math.prod(out)
    bad = (at < 0) | (at >= size)
    if bad.any():
        raise ValueError(
            f"{name}: Found an invalid max index: {at[bad][0]} (output volumes are of size "
            f"{' x '.join(map(str, out))}); indices must come from the matching max pool"
        )
    src = _unpool_index(at, tuple(out))
    flat = _ops.concatenate([_ops.reshape(x, (-1,)), np.zeros(1)])
    y = _ops.gather_flat(flat, src, src.shape)
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d`` (PyTorch's ``F.max_unpool1d``): zeros of length
    (L - 1) stride - 2 padding + kernel_size (or ``output_size``) with each input value put
    at its index (``max_pool1d(..., return_indices=True)``'s).  Where indices repeat
    (overlapping windows, whose repeats hold the same value) the last is written and only
    it gets a gradient: the derivative of the values written (PyTorch's backward gives
    every repeat the gradient, so its pool-then-unpool gradient counts a twice-chosen
    element twice).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> y, i = F.max_pool1d(tg.tensor([[[1.0, 3.0, 4.0, 2.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(y, i, 2)
        tensor([[[0., 3., 4., 0.]]])
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d`` (PyTorch's ``F.max_unpool2d``; see
    ``max_unpool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])
        >>> y, i = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(y, i, 2)
        tensor([[[[0., 0.],
                  [4., 0.]]]])
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool3d`` (PyTorch's ``F.max_unpool3d``; see
    ``max_unpool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> y, i = F.max_pool3d(tg.ones(1, 1, 2, 2, 2), 2, return_indices=True)
        >>> F.max_unpool3d(y, i, 2).sum()
        tensor(1.)
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# ---- im2col / col2im ----------------------------------------------------------------------------


def _fold_args(name, kernel_size, dilation, padding, stride):
    kernel = _tuple(name, "kernel_size", kernel_size, 2)
    dilation = _tuple(name, "dilation", dilation, 2)
    pads = _tuple(name, "padding", padding, 2)
    stride = _tuple(name, "stride", stride, 2)
    if any(v < 1 for v in kernel + dilation + stride) or any(p < 0 for p in pads):
        raise ValueError(
            f"{name}: kernel_size, dilation and stride must be positive and padding not "
            f"negative, got kernel_size={kernel}, dilation={dilation}, padding={pads}, "
            f"stride={stride}"
        )
    return kernel, dilation, tuple((p, p) for p in pads), stride


@functools.lru_cache(maxsize=64)
def _columns_index(batch, channels, spatial, kernel, stride, pads, dilation, name):
    """``_windows``' indices in im2col's order: (N, C * K, P)."""
    idx, out, _ = _windows(batch, channels, spatial, kernel, stride, pads, dilation, name)
    k = math.prod(kernel)
    idx = np.ascontiguousarray(idx.transpose(0, 1, 3, 2))
    idx = idx.reshape(batch, channels * k, math.prod(out))
    idx.setflags(write=False)
    return idx, out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extracts sliding blocks (im2col; PyTorch's ``F.unfold``): (N, C, H, W) or (C, H, W)
    -> (N, C * kH * kW, L) (or (C * kH * kW, L)), column l holding the block of output
    position l (row-major), rows ordered channel, then kernel row, then kernel column.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.unfold(tg.arange(6.0).reshape(1, 1, 2, 3), 2)
        tensor([[[0., 1.],
                 [1., 2.],
                 [3., 4.],
                 [4., 5.]]])
    """
    name = "unfold"
    x = _ops.tensor_of(input)
    if x.ndim not in (3, 4):
        raise ValueError(
            f"{name}: Input Error: Only 3D or 4D input Tensors are supported (got {x.ndim}D)"
        )
    x, unbatched = _batched(name, x, 2)
    kernel, dilation, pads, stride = _fold_args(name, kernel_size, dilation, padding, stride)
    idx, _ = _columns_index(
        x.shape[0], x.shape[1], tuple(x.shape[2:]), kernel, stride, pads, dilation, name
    )
    y = _gather_windows(x, idx, 0.0)
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combines sliding blocks into an image (col2im; PyTorch's ``F.fold``), the adjoint of
    ``unfold``: (N, C * kH * kW, L) or (C * kH * kW, L) -> (N, C, *output_size) (or
    (C, *output_size)), overlapping values added up.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.fold(tg.ones(1, 4, 2), (2, 3), 2)
        tensor([[[[1., 2., 1.],
                  [1., 2., 1.]]]])
    """
    name = "fold"
    x = _ops.tensor_of(input)
    if x.ndim not in (2, 3):
        raise ValueError(
            f"{name}: Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
            f"supported (got {x.ndim}D)"
        )
    unbatched = x.ndim == 2
    if unbatched:
        x = _ops.reshape(x, (1,) + x.shape)
    spatial = _tuple(name, "output_size", output_size, 2)
    kernel, dilation, pads, stride = _fold_args(name, kernel_size, dilation, padding, stride)
    k = math.prod(kernel)
    batch, rows, blocks = x.shape
    if rows % k:
        raise ValueError(
            f"{name}: Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={rows} and kernel_size={kernel}"
        )
    counts = [
        (o + 2 * p - d * (kk - 1) - 1) // s + 1
        for o, (p, _), d, kk, s in zip(spatial, pads, dilation, kernel, stride, strict=True)
    ]
    if any(c < 1 for c in counts) or blocks != math.prod(counts):
        raise ValueError(
            f"{name}: Given output_size={spatial}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={tuple(p for p, _ in pads)}, stride={stride}, expected size of input's "
            f"dimension 2 to match the calculated number of sliding blocks "
            f"{' * '.join(map(str, counts))} = {math.prod(counts)}, but got "
            f"input.size(2)={blocks}"
        )
    channels = rows // k
    idx, _ = _columns_index(batch, channels, spatial, kernel, stride, pads, dilation, name)
    row = channels * math.prod(spatial) + 1
    y = _ops.scatter_add(x, idx, (batch, row))
    y = _ops.getitem(y, (slice(None), slice(0, row - 1)))
    y = _ops.reshape(y, (batch, channels) + spatial)
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


# ---- padding ------------------------------------------------------------------------------------


def _source(c, n, mode):
    """The element of an axis of size ``n`` each padded position ``c`` (-lo .. n + hi - 1)
    reads in PyTorch's non-constant modes."""
    if mode == "reflect":  # mirrored about the end elements, which are not repeated
        c = np.abs(c)
        return np.where(c >= n, 2 * (n - 1) - c, c)
    if mode == "replicate":
        return np.clip(c, 0, n - 1)
    return c % n  # circular


@functools.lru_cache(maxsize=64)
def _pad_index(shape, pads, mode="constant"):
    """Flat indices into x.ravel() followed by one fill element (index x.size), giving the
    padded (or, for negative pads, cropped) shape; a non-constant ``mode`` reads x's own
    elements instead of the fill."""
    idx = np.zeros((1,) * len(shape), dtype=np.int64)
    valid = np.ones((1,) * len(shape), dtype=bool)
    out = []
    for d, (n, (lo, hi)) in enumerate(zip(shape, pads, strict=True)):
        step = math.prod(shape[d + 1 :])  # (not a running quotient: a dim may be 0)
        size = n + lo + hi
        if size < 0:
            raise ValueError(
                f"pad: padding ({lo}, {hi}) of dimension {d} (size {n}) leaves a negative size"
            )
        out.append(size)
        c = np.arange(size) - lo
        if mode == "circular" and min(lo, hi) < 0:  # PyTorch's: crop, then wrap around that
            off = max(-lo, 0)
            c = (np.arange(size) - max(lo, 0)) % (n - off - max(-hi, 0)) + off
        elif mode != "constant" and (lo or hi):
            c = _source(c, n, mode)
        c = c.reshape([-1 if i == d else 1 for i in range(len(shape))])
        idx = idx + c * step
        valid = valid & (c >= 0) & (c < n)
    idx = np.where(valid, idx, math.prod(shape))
    idx = np.ascontiguousarray(np.broadcast_to(idx, tuple(out)))
    idx.setflags(write=False)
    return idx


def _check_repeating_pad(mode, value, shape, pairs, k):
    """PyTorch's limits of the modes that repeat x's elements (each a ValueError here)."""
    if value is not None:
        raise ValueError(f"pad: mode={mode!r} takes no value= (only mode='constant' fills)")
    if not 1 <= k <= 3 or len(shape) not in (k + 1, k + 2):
        raise ValueError(
            f"pad: mode={mode!r} pads the last 1, 2 or 3 dims of an input with 1 or 2 more "
            f"(got {2 * k} amounts for shape {shape}); use mode='constant' otherwise"
        )
    for n, (lo, hi) in zip(shape, pairs, strict=True):
        if lo == hi == 0:  # an axis left alone may be empty (a batch of 0)
            continue
        if n == 0:
            raise ValueError(
                f"pad: mode={mode!r} cannot pad a dim of size 0 (there is no element to "
                f"repeat); use mode='constant'"
            )
        # (negative amounts crop, as PyTorch's: after reflecting or replicating, before
        # wrapping around)
        if n + lo + hi < 1:
            raise ValueError(
                f"pad: mode={mode!r}: padding ({lo}, {hi}) of a dim of size {n} leaves "
                f"{n + lo + hi} elements; the input is too small"
            )
        if mode == "circular" and max(lo, hi) > n + min(lo, 0) + min(hi, 0):
            raise ValueError(
                f"pad: mode='circular': padding ({lo}, {hi}) of a dim of size {n} wraps around "
                f"more than once (each amount at most the size left after cropping)"
            )
        if (mode == "reflect" and max(lo, hi) >= n) or (mode == "circular" and max(lo, hi) > n):
            limit = "less than" if mode == "reflect" else "at most"
            raise ValueError(
                f"pad: mode={mode!r} needs each amount {limit} the size of its dim; got "
                f"({lo}, {hi}) for a dim of size {n}"
            )


def pad(input, pad, mode="constant", value=None):
    """Pads the last ``len(pad) // 2`` axes, as PyTorch's ``F.pad``: ``pad`` lists (before,
    after) amounts starting from the LAST axis, e.g. (left, right, top, bottom); negative
    amounts crop.  ``mode='constant'`` fills ``value`` (default 0); PyTorch's ``'reflect'``,
    ``'replicate'`` and ``'circular'`` repeat x's own elements (their gradients add up), for
    the last 1 to 3 axes of an input with one or two more.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[1.0, 2.0]], requires_grad=True)
        >>> y = F.pad(x, (1, 0, 0, 1), value=9.0); y
        tensor([[9., 1., 2.],
                [9., 9., 9.]], grad_fn=<IndexBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([[1., 1.]])
        >>> F.pad(tg.tensor([[0.0, 1.0, 2.0]]), (2, 1), mode="reflect")
        tensor([[2., 1., 0., 1., 2., 1.]])
    """
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    x = _ops.tensor_of(input)
    amounts = [int(p) for p in pad]
    if len(amounts) % 2 or len(amounts) // 2 > x.ndim:
        raise ValueError(
            f"pad: the padding length must be even and at most twice the number of dimensions "
            f"({x.ndim}), got {len(amounts)}"
        )
    pairs = [(0, 0)] * x.ndim
    for i in range(len(amounts) // 2):
        pairs[x.ndim - 1 - i] = (amounts[2 * i], amounts[2 * i + 1])
    if mode != "constant":
        _check_repeating_pad(mode, value, x.shape, pairs, len(amounts) // 2)
    if all(p == (0, 0) for p in pairs):
        return x
    idx = _pad_index(tuple(x.shape), tuple(pairs), mode)
    fill = 0.0 if value is None else float(value)
    flat = _ops.concatenate([_ops.reshape(x, (-1,)), np.array([fill])])
    return _ops.gather_flat(flat, idx, idx.shape)


# ---- transposed convolution ---------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _spread_index(shape, stride, pads):
    """Flat indices into x.ravel() followed by one fill element (index x.size) that spread the
    spatial axes of x (N, C, *spatial) ``stride`` apart (stride - 1 zeros between neighbours)
    and pad them by ``pads`` (lo, hi) per axis (negative amounts crop)."""
    nd = len(stride)
    idx = np.zeros((1,) * len(shape), dtype=np.int64)
    valid = np.ones((1,) * len(shape), dtype=bool)
    out = []
    for d, n in enumerate(shape):
        step = math.prod(shape[d + 1 :])
        if d < len(shape) - nd:
            c = np.arange(n)
            size = n
        else:
            s, (lo, hi) = stride[d - len(shape) + nd], pads[d - len(shape) + nd]
            size = (n - 1) * s + 1 + lo + hi
            c = np.arange(size) - lo
            on = (c >= 0) & (c % s == 0) & (c // s < n)
            c = np.where(on, c // s, -1)
        out.append(size)
        c = c.reshape([-1 if i == d else 1 for i in range(len(shape))])
        idx = idx + c * step
        valid = valid & (c >= 0)
    idx = np.where(valid, idx, math.prod(shape))
    idx = np.ascontiguousarray(np.broadcast_to(idx, tuple(out)))
    idx.setflags(write=False)
    return idx


def _conv_transpose(
    name, n, input, weight, bias, stride, padding, output_padding, groups, dilation
):
    """The adjoint of ``_conv``: x spread ``stride`` apart and padded by
    dilation * (k - 1) - padding (+ output_padding after), convolved (stride 1) with the
    flipped kernel whose in / out channel axes are swapped within each group."""
    x, unbatched = _batched(name, input, n)
    w = _ops.tensor_of(weight)
    if w.ndim != n + 2:
        raise ValueError(
            f"{name}: weight must be {n + 2}D (in_channels, out_channels / groups, *kernel), "
            f"got shape {w.shape}"
        )
    if isinstance(padding, str):
        raise ValueError(
            f"{name}: padding={padding!r}: a transposed convolution takes numeric padding only"
        )
    groups = int(groups)
    batch, channels = x.shape[:2]
    in_ch, og = w.shape[:2]
    kernel = tuple(w.shape[2:])
    if groups < 1 or in_ch % groups:
        raise ValueError(
            f"{name}: groups={groups} must be positive and divide in_channels ({in_ch}, the "
            f"weight's first dimension)"
        )
    if channels != in_ch:
        raise ValueError(
            f"{name}: input of shape {x.shape} has {channels} channels, but the weight of shape "
            f"{w.shape} expects {in_ch} (weight is (in_channels, out_channels / groups, *kernel))"
        )
    stride = _tuple(name, "stride", stride, n)
    dilation = _tuple(name, "dilation", dilation, n)
    pads = _tuple(name, "padding", padding, n)
    extra = _tuple(name, "output_padding", output_padding, n)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{name}: stride and dilation must be positive")
    if any(p < 0 for p in pads) or any(e < 0 for e in extra):
        raise ValueError(f"{name}: padding and output_padding must not be negative")
    for e, s, d in zip(extra, stride, dilation, strict=True):
        if e >= s and e >= d:
            raise ValueError(
                f"{name}: output_padding {extra} must be smaller than either stride {stride} "
                f"or dilation {dilation}"
            )
    out_ch = og * groups
    sizes = tuple(
        (size - 1) * s - 2 * p + d * (k - 1) + e + 1
        for size, s, p, d, k, e in zip(
            x.shape[2:], stride, pads, dilation, kernel, extra, strict=True
        )
    )
    if any(size < 1 for size in sizes) or 0 in x.shape[2:]:
        raise ValueError(
            f"{name}: input of shape {x.shape} with weight {w.shape}, stride {stride}, padding "
            f"{pads}, dilation {dilation} and output_padding {extra} gives the empty output size "
            f"{sizes}; reduce the padding"
        )
    if bias is not None and tuple(np.shape(_ops.value_of(bias))) != (out_ch,):
        raise ValueError(
            f"{name}: bias must have shape ({out_ch},), got {tuple(np.shape(_ops.value_of(bias)))}"
        )
    margins = tuple(
        (d * (k - 1) - p, d * (k - 1) - p + e)
        for d, k, p, e in zip(dilation, kernel, pads, extra, strict=True)
    )
    idx = _spread_index(tuple(x.shape), stride, margins)
    flat = _ops.concatenate([_ops.reshape(x, (-1,)), np.zeros(1)])
    spread = _ops.gather_flat(flat, idx, idx.shape)
    # (in, out / g, *k) -> (g, out / g, in / g, *k) -> (out, in / g, *k), kernel flipped
    wg = _ops.reshape(w, (groups, in_ch // groups, og) + kernel)
    wg = _ops.transpose(wg, (0, 2, 1, *range(3, n + 3)))
    wg = _ops.reshape(wg, (out_ch, in_ch // groups) + kernel)
    wg = _ops.getitem(wg, (slice(None), slice(None)) + (slice(None, None, -1),) * n)
    y = _conv(name, n, spread, wg, bias, 1, 0, dilation, groups)
    return _ops.reshape(y, y.shape[1:]) if unbatched else y


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """1-D transposed convolution (PyTorch's ``F.conv_transpose1d``, the adjoint of
    ``conv1d``; sometimes called a deconvolution) of ``input`` (N, C_in, L) or (C_in, L) with
    ``weight`` (C_in, C_out / groups, k) and optional ``bias`` (C_out,).  The output length is
    (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.conv_transpose1d(tg.tensor([[[1.0, 2.0]]]), tg.tensor([[[1.0, 10.0]]]), stride=2)
        tensor([[[ 1., 10.,  2., 20.]]])
    """
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """2-D transposed convolution (PyTorch's ``F.conv_transpose2d``, the adjoint of
    ``conv2d``) of ``input`` (N, C_in, H, W) or (C_in, H, W) with ``weight``
    (C_in, C_out / groups, kH, kW) and optional ``bias`` (C_out,); ``stride``, ``padding``,
    ``output_padding`` and ``dilation`` are ints or pairs.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.conv_transpose2d(tg.ones(1, 1, 2, 2), tg.ones(1, 1, 2, 2))[0, 0]
        tensor([[1., 2., 1.],
                [2., 4., 2.],
                [1., 2., 1.]])
    """
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """3-D transposed convolution (PyTorch's ``F.conv_transpose3d``, the adjoint of
    ``conv3d``) of ``input`` (N, C_in, D, H, W) or (C_in, D, H, W) with ``weight``
    (C_in, C_out / groups, kD, kH, kW) and optional ``bias`` (C_out,); ``stride``,
    ``padding``, ``output_padding`` and ``dilation`` are ints or triples.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.conv_transpose3d(tg.ones(1, 1, 2, 2, 2), tg.ones(1, 3, 2, 2, 2), stride=2).shape
        (1, 3, 4, 4, 4)
    """
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


# ---- channel-wise dropout -----------------------------------------------------------------------


def _feature_dropout(name, input, p, training, inplace, dims):
    """PyTorch's ``feature_dropout`` of dropout1d/2d/3d: one keep / drop draw per (N, C)
    channel of an input with ``dims[1]`` dims (``dims[0]``: unbatched, (C, ...))."""
    p = scalar_argument(p, f"{name}: p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")
    if inplace:
        raise TypeError(
            f"{name}: inplace=True is not supported (tapegrad records a new value instead of "
            f"overwriting the input); write x = F.{name}(x)"
        )
    x = _ops.tensor_of(input)
    n = dims[1] - 2
    if name == "dropout1d":
        if x.ndim not in dims:
            raise RuntimeError(
                f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note "
                f"that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                f"spatial dimension, a channel dimension, and an optional batch dimension "
                f"(i.e. 2D or 3D inputs)."
            )
    elif x.ndim not in dims:
        warnings.warn(
            f"{name}: Received a {x.ndim}-D input to {name}, which is deprecated and will "
            f"result in an error in a future release. To retain the behavior and silence this "
            f"warning, please use dropout instead. Note that {name} exists to provide "
            f"channel-wise dropout on inputs with {n} spatial dimensions, a channel dimension, "
            f"and an optional batch dimension (i.e. {dims[0]}D or {dims[1]}D inputs).",
            stacklevel=3,
        )
    if name == "dropout2d" and x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=3,
        )
    if not training or p == 0:
        return x
    # unbatched: dropout1d and dropout3d add a batch axis; dropout2d (PyTorch's) does not
    unbatched = name != "dropout2d" and x.ndim != dims[1]
    shape = ((1,) if unbatched else ()) + tuple(x.shape)
    if len(shape) < 2:
        raise RuntimeError(
            f"{name}: Feature dropout requires at least 2 dimensions in the input, got shape "
            f"{x.shape}"
        )
    if STATE.guard is not None:
        raise RuntimeError(
            f"{name}: a tg.trace recording cannot draw the dropout mask (every replay would "
            f"reuse the recorded one). Call model.eval() (or training=False) inside the trace, "
            f"or differentiate the training step with tg.grad / backward, which draw at each call"
        )
    keep = _creation.rng().random(shape[:2]) < 1.0 - p
    scale = np.zeros(keep.shape) if p == 1 else keep / (1.0 - p)
    scale = scale.reshape(shape[:2] + (1,) * (len(shape) - 2))
    return _ops.mul(x, scale[0] if unbatched else scale)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout (PyTorch's ``F.dropout1d``) of (N, C, L) or (C, L): each channel
    is zeroed whole with probability ``p`` and the others scaled by 1 / (1 - p) (training);
    the input itself when ``training`` is False.  The mask is drawn from tapegrad's
    generator (``tg.manual_seed``); a ``tg.trace`` recording refuses it.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> _ = tg.manual_seed(0)
        >>> F.dropout1d(tg.ones(3, 2), p=0.5)
        tensor([[0., 0.],
                [2., 2.],
                [2., 2.]])
    """
    return _feature_dropout("dropout1d", input, p, training, inplace, (2, 3))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout (PyTorch's ``F.dropout2d``) of (N, C, H, W) or (C, H, W) (see
    ``dropout1d``).  As PyTorch's (with its warning), a 3-D input is read as (N, C, L).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.dropout2d(tg.ones(1, 4, 2, 2), p=0.5).sum(dim=(2, 3)).shape
        (1, 4)
    """
    return _feature_dropout("dropout2d", input, p, training, inplace, (3, 4))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout (PyTorch's ``F.dropout3d``) of (N, C, D, H, W) or (C, D, H, W)
    (see ``dropout1d``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.dropout3d(tg.ones(2, 3, 1, 2, 2), p=0.5, training=False).sum()
        tensor(24.)
    """
    return _feature_dropout("dropout3d", input, p, training, inplace, (4, 5))


# ---- interpolation ------------------------------------------------------------------------------

_INTERPOLATE_DIMS = {"nearest": (3, 4, 5), "linear": (3,), "bilinear": (4,)}


def _nearest_source(n, out, scale, shortcut):
    """PyTorch's nearest source index of each output position (its float32 scale).  With
    ``shortcut`` (PyTorch's 2-D kernel), an output as long as the input, or twice as long,
    copies or repeats it whatever the scale factor (its 1-D and 3-D kernels scale)."""
    if shortcut and out == n:
        return np.arange(out)
    if shortcut and out == 2 * n:
        return np.arange(out) >> 1
    if scale is not None and scale > 0:
        s = np.float32(1.0 / scale)
    else:
        s = np.float32(n) / np.float32(out)
    src = np.floor(np.arange(out, dtype=np.float32) * s).astype(np.int64)
    return np.minimum(src, n - 1)


def _linear_source(n, out, scale, align_corners):
    """PyTorch's two source indices and weights of each output position of a linear
    interpolation (float64)."""
    dst = np.arange(out, dtype=np.float64)
    if out == n:
        i = np.arange(out)
        return i, i, np.ones(out), np.zeros(out)
    if align_corners:
        ratio = (n - 1) / (out - 1) if out > 1 else 0.0
        src = ratio * dst
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else n / out
        src = np.maximum(ratio * (dst + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam1 = np.clip(src - i0, 0.0, 1.0)
    i1 = i0 + (i0 < n - 1)
    return i0, i1, 1.0 - lam1, lam1


def _interpolate_sizes(name, x, size, scale_factor, recompute_scale_factor):
    """The output's spatial sizes and the scales PyTorch's kernels read (None: from sizes)."""
    dim = x.ndim - 2
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError(f"{name}: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(
                f"{name}: recompute_scale_factor is not meaningful with an explicit size"
            )
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * dim
        if len(sizes) != dim:
            raise ValueError(
                f"{name}: input and output must have the same number of spatial dimensions, "
                f"but got input with spatial dimensions of {spatial} and output size of {size}"
            )
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in sizes):
            raise TypeError(f"{name}: size must be an int or a tuple of ints, got {size!r}")
        out, scales = [int(s) for s in sizes], [None] * dim
    elif scale_factor is not None:
        scales = (
            list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * dim
        )
        if len(scales) != dim:
            raise ValueError(
                f"{name}: input and scale_factor must have the same number of spatial "
                f"dimensions, but got input with spatial dimensions of {spatial} and "
                f"scale_factor {scale_factor}"
            )
        scales = [float(s) for s in scales]
        out = [math.floor(n * s) for n, s in zip(spatial, scales, strict=True)]
        if recompute_scale_factor:
            scales = [None] * dim
    else:
        raise ValueError(f"{name}: either size or scale_factor should be defined")
    if any(n < 1 for n in spatial) or any(o < 1 for o in out):
        raise ValueError(
            f"{name}: input and output sizes should be greater than 0, but got input "
            f"{spatial} and output {out}"
        )
    return out, scales


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resamples the spatial axes of ``input`` (N, C, *spatial) to ``size`` (an int or one per
    spatial axis) or by ``scale_factor`` (output size floor(size * scale_factor)), as
    PyTorch's ``F.interpolate``.  Modes: 'nearest' (3-D, 4-D or 5-D input; source index
    floor(i * in / out)), 'linear' (3-D) and 'bilinear' (4-D), with ``align_corners`` (the
    corner samples of input and output aligned) or not (half-pixel centres, PyTorch's
    default).  A given scale_factor sets the sampling step 1 / scale_factor, as PyTorch's,
    unless ``recompute_scale_factor=True``.  Other modes and ``antialias`` are refused.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[[1.0, 2.0, 4.0]]])
        >>> F.interpolate(x, scale_factor=2)
        tensor([[[1., 1., 2., 2., 4., 4.]]])
        >>> F.interpolate(x, size=5, mode="linear", align_corners=True)
        tensor([[[1.0000, 1.5000, 2.0000, 3.0000, 4.0000]]])
    """
    name = "interpolate"
    if mode not in _INTERPOLATE_DIMS:
        raise NotImplementedError(
            f"{name}: mode={mode!r} is not supported; tapegrad has 'nearest', 'linear' (3-D "
            f"input) and 'bilinear' (4-D input) (for 'area' use adaptive_avg_pool2d)"
        )
    if mode == "nearest":
        if align_corners is not None:
            raise ValueError(
                f"{name}: align_corners option can only be set with the interpolating modes: "
                f"linear | bilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError(f"{name}: antialias=True is not supported; leave it False")
    x = _ops.tensor_of(input)
    if x.ndim not in _INTERPOLATE_DIMS[mode]:
        need = " or ".join(f"{d}D" for d in _INTERPOLATE_DIMS[mode])
        raise ValueError(
            f"{name}: got {x.ndim}D input, but {mode} mode needs {need} input (N, C, *spatial)"
        )
    out, scales = _interpolate_sizes(name, x, size, scale_factor, recompute_scale_factor)
    y = x
    for d, (n, o, s) in enumerate(zip(x.shape[2:], out, scales, strict=True)):
        axis = 2 + d
        tail = (slice(None),) * (x.ndim - axis - 1)
        if mode == "nearest":
            src = _nearest_source(n, o, s, x.ndim == 4)
            if o != n or np.any(src != np.arange(n)):
                y = _ops.getitem(y, (Ellipsis, src) + tail)
            continue
        if o == n:
            continue
        i0, i1, lam0, lam1 = _linear_source(n, o, s, align_corners)
        shape = (o,) + (1,) * len(tail)
        y = _ops.add(
            _ops.mul(_ops.getitem(y, (Ellipsis, i0) + tail), lam0.reshape(shape)),
            _ops.mul(_ops.getitem(y, (Ellipsis, i1) + tail), lam1.reshape(shape)),
        )
    return y
