"""Convolution, pooling, padding and reshaping layers, with PyTorch's arguments, parameter
names, shapes and initialisation (a torch ``state_dict`` converted with ``{k: v.numpy()}``
loads as it is)."""

import math

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from . import convolution as _conv
from .modules import Module, Parameter


def _no_device(name, device, dtype):
    if device not in (None, "cpu") or dtype not in (None, np.float64, "float64"):
        raise TypeError(
            f"{name}: device={device!r} and dtype={dtype!r} are not supported (tapegrad "
            f"computes in float64 on the CPU); leave them out"
        )


class _ConvNd(Module):
    n = 0
    fn = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f"{name}: padding_mode={padding_mode!r} is not supported; only 'zeros' (pad "
                f"the input with F.pad beforehand for other fills)"
            )
        _no_device(name, device, dtype)
        self.in_channels, self.out_channels, self.groups = (
            int(in_channels),
            int(out_channels),
            int(groups),
        )
        if self.groups < 1 or self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{name}: groups must divide in_channels and out_channels")
        self.kernel_size = _conv._tuple(name, "kernel_size", kernel_size, self.n)
        self.stride = _conv._tuple(name, "stride", stride, self.n)
        self.dilation = _conv._tuple(name, "dilation", dilation, self.n)
        if isinstance(padding, str):
            _conv._conv_padding(name, padding, self.kernel_size, self.dilation, self.stride)
            self.padding = padding
        else:
            self.padding = _conv._tuple(name, "padding", padding, self.n)
        self.padding_mode = padding_mode
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        # PyTorch's kaiming_uniform_(a=sqrt(5)) and bias init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        fan_in = math.prod(shape[1:])
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        rng = _creation.rng()
        self.weight = Parameter(rng.uniform(-bound, bound, shape))
        if bias:
            self.bias = Parameter(rng.uniform(-bound, bound, self.out_channels))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        params = self._parameters
        return type(self).fn(
            input,
            params["weight"],
            params["bias"],
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )

    def extra_repr(self):
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.n:
            s += f", padding={self.padding!r}"
        if self.dilation != (1,) * self.n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._parameters["bias"] is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution layer (see ``F.conv1d``): weight (out_channels, in_channels / groups,
    kernel_size) and bias (out_channels,), both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> conv = tg.nn.Conv1d(2, 4, 3, padding="same")
        >>> conv.weight.shape, conv(tg.zeros(5, 2, 10)).shape
        ((4, 2, 3), (5, 4, 10))
    """

    n = 1
    fn = staticmethod(_conv.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution layer (see ``F.conv2d``): weight (out_channels, in_channels / groups,
    kH, kW) and bias (out_channels,), both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch.
    Only ``padding_mode='zeros'``.

    Examples:
        >>> import tapegrad as tg
        >>> conv = tg.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        >>> conv.weight.shape, conv(tg.zeros(1, 3, 32, 32)).shape
        ((8, 3, 3, 3), (1, 8, 16, 16))
    """

    n = 2
    fn = staticmethod(_conv.conv2d)


class _ConvTransposeNd(Module):
    n = 0
    fn = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f"{name}: padding_mode={padding_mode!r} is not supported; only 'zeros' (as "
                f"PyTorch's transposed convolutions)"
            )
        _no_device(name, device, dtype)
        self.in_channels, self.out_channels, self.groups = (
            int(in_channels),
            int(out_channels),
            int(groups),
        )
        if self.groups < 1 or self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{name}: groups must divide in_channels and out_channels")
        self.kernel_size = _conv._tuple(name, "kernel_size", kernel_size, self.n)
        self.stride = _conv._tuple(name, "stride", stride, self.n)
        self.dilation = _conv._tuple(name, "dilation", dilation, self.n)
        if isinstance(padding, str):
            raise ValueError(
                f"{name}: padding={padding!r}: a transposed convolution takes numeric padding only"
            )
        self.padding = _conv._tuple(name, "padding", padding, self.n)
        self.output_padding = _conv._tuple(name, "output_padding", output_padding, self.n)
        self.padding_mode = padding_mode
        shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        # PyTorch's kaiming_uniform_(a=sqrt(5)) and bias init, whose fan_in is the weight's
        # size(1) * prod(kernel): U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        fan_in = math.prod(shape[1:])
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        rng = _creation.rng()
        self.weight = Parameter(rng.uniform(-bound, bound, shape))
        if bias:
            self.bias = Parameter(rng.uniform(-bound, bound, self.out_channels))
        else:
            self.register_parameter("bias", None)

    def _output_padding(self, x, output_size):
        """PyTorch's output_padding for a requested ``output_size`` (with or without the
        batch and channel sizes)."""
        if output_size is None:
            return self.output_padding
        name, n = type(self).__name__, self.n
        lead = 2 if x.ndim == n + 2 else 1
        size = [int(s) for s in output_size]
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(
                f"{name}: for {x.ndim}D input, output_size must have {n} or {lead + n} "
                f"elements (got {len(size)})"
            )
        lows = [
            (x.shape[lead + d] - 1) * self.stride[d]
            - 2 * self.padding[d]
            + self.dilation[d] * (self.kernel_size[d] - 1)
            + 1
            for d in range(n)
        ]
        highs = [lo + s - 1 for lo, s in zip(lows, self.stride, strict=True)]
        if any(not lo <= s <= hi for s, lo, hi in zip(size, lows, highs, strict=True)):
            raise ValueError(
                f"{name}: requested an output size of {size}, but valid sizes range from "
                f"{lows} to {highs} (for an input of {list(x.shape[lead:])})"
            )
        return tuple(s - lo for s, lo in zip(size, lows, strict=True))

    def forward(self, input, output_size=None):
        params = self._parameters
        x = _ops.tensor_of(input)
        return type(self).fn(
            x,
            params["weight"],
            params["bias"],
            self.stride,
            self.padding,
            self._output_padding(x, output_size),
            self.groups,
            self.dilation,
        )

    def extra_repr(self):
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._parameters["bias"] is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution layer (PyTorch's ``nn.ConvTranspose1d``; see
    ``F.conv_transpose1d``): weight (in_channels, out_channels / groups, kernel_size) and bias
    (out_channels,), both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = out_channels /
    groups * kernel_size, as PyTorch.  ``forward(input, output_size=None)``: an
    ``output_size`` picks the output_padding that gives it.

    Examples:
        >>> import tapegrad as tg
        >>> up = tg.nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1)
        >>> up.weight.shape, up(tg.zeros(5, 4, 10)).shape
        ((4, 2, 3), (5, 2, 20))
    """

    n = 1
    fn = staticmethod(_conv.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution layer (PyTorch's ``nn.ConvTranspose2d``; see
    ``F.conv_transpose2d``): weight (in_channels, out_channels / groups, kH, kW) and bias
    (out_channels,), initialised as PyTorch's.  Only ``padding_mode='zeros'``.

    Examples:
        >>> import tapegrad as tg
        >>> up = tg.nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1)
        >>> x = tg.zeros(1, 8, 16, 16)
        >>> up(x).shape, up(x, output_size=(32, 32)).shape
        ((1, 3, 31, 31), (1, 3, 32, 32))
    """

    n = 2
    fn = staticmethod(_conv.conv_transpose2d)


def _given(args):
    """A constructor's arguments (its ``locals()``) as keyword arguments."""
    return {k: v for k, v in args.items() if k not in ("self", "__class__")}


class _Pool(Module):
    """A layer applying ``fn(input, **hyper)`` with the hyper-parameters given at construction
    (an average pool refuses ceil_mode=True there, as its function does)."""

    fn = None

    def __init__(self, **hyper):
        super().__init__()
        name = type(self).__name__
        if not name.startswith("MaxPool"):  # (max pools take ceil_mode and return_indices)
            _conv._no_ceil(name, hyper.get("ceil_mode", False))
        if "stride" in hyper and hyper["stride"] is None:
            hyper["stride"] = hyper["kernel_size"]
        for key, value in hyper.items():
            setattr(self, key, value)
        self._hyper = tuple(hyper)

    def forward(self, input):
        return type(self).fn(input, **{k: getattr(self, k) for k in self._hyper})

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in self._hyper)


class _MaxPoolNd(_Pool):
    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__(**_given(locals()))


class MaxPool1d(_MaxPoolNd):
    """Max-pooling layer over the last axis (see ``F.max_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.MaxPool1d(2)(tg.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        tensor([[[3., 2.]]])
    """

    fn = staticmethod(_conv.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max-pooling layer over the last two axes (see ``F.max_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.MaxPool2d(2)(tg.zeros(1, 3, 8, 6)).shape
        (1, 3, 4, 3)
    """

    fn = staticmethod(_conv.max_pool2d)


class AvgPool1d(_Pool):
    """Average-pooling layer over the last axis (see ``F.avg_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AvgPool1d(2)(tg.tensor([[[1.0, 3.0, 2.0, 6.0]]]))
        tensor([[[2., 4.]]])
    """

    fn = staticmethod(_conv.avg_pool1d)

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__(**_given(locals()))


class AvgPool2d(_Pool):
    """Average-pooling layer over the last two axes (see ``F.avg_pool2d``; also
    ``divisor_override``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AvgPool2d(2, padding=1)(tg.ones(1, 1, 2, 2))
        tensor([[[[0.2500, 0.2500],
                  [0.2500, 0.2500]]]])
    """

    fn = staticmethod(_conv.avg_pool2d)

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__(**_given(locals()))


class AdaptiveAvgPool2d(_Pool):
    """Average pooling to a fixed ``output_size`` (see ``F.adaptive_avg_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveAvgPool2d((1, 1))(tg.ones(2, 5, 7, 7)).shape
        (2, 5, 1, 1)
    """

    fn = staticmethod(_conv.adaptive_avg_pool2d)

    def __init__(self, output_size):
        super().__init__(output_size=output_size)


class ZeroPad2d(Module):
    """Pads the last two axes with zeros: ``padding`` an int (all four sides) or (left, right,
    top, bottom); negative amounts crop (see ``F.pad``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ZeroPad2d((1, 0, 0, 1))(tg.ones(1, 1, 1, 2))
        tensor([[[[0., 1., 1.],
                  [0., 0., 0.]]]])
    """

    def __init__(self, padding):
        super().__init__()
        self.padding = _conv._tuple("ZeroPad2d", "padding", padding, 4)

    def forward(self, input):
        return _conv.pad(input, self.padding, "constant", 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class Unflatten(Module):
    """Splits axis ``dim`` into ``unflattened_size`` (one entry may be -1), the inverse of
    ``Flatten``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Unflatten(1, (2, 3))(tg.zeros(4, 6)).shape
        (4, 2, 3)
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dimensions are not supported; give dim as an int")
        self.dim = int(dim)
        self.unflattened_size = tuple(int(s) for s in unflattened_size)

    def forward(self, input):
        x = _ops.tensor_of(input)
        d = _ops.normalize_axes(self.dim, x.ndim, "Unflatten")[0]
        sizes = self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        free = sizes.count(-1)
        if free > 1 or (known != x.shape[d] if not free else not known or x.shape[d] % known):
            raise ValueError(
                f"Unflatten: unflattened_size {sizes} cannot split dimension {self.dim} of "
                f"size {x.shape[d]}"
            )
        return _ops.reshape(x, x.shape[:d] + sizes + x.shape[d + 1 :])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Upsample(Module):
    """Resampling layer (PyTorch's ``nn.Upsample``; see ``F.interpolate``): to ``size`` or by
    ``scale_factor``, ``mode`` 'nearest', 'linear' or 'bilinear', with ``align_corners`` for
    the linear modes.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Upsample(scale_factor=2)(tg.tensor([[[1.0, 2.0]]]))
        tensor([[[1., 1., 2., 2.]]])
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return _conv.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W) inputs (PyTorch's
    ``nn.UpsamplingNearest2d``, ``Upsample(mode='nearest')``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.UpsamplingNearest2d(scale_factor=2)(tg.zeros(1, 3, 4, 5)).shape
        (1, 3, 8, 10)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) inputs with ``align_corners=True`` (PyTorch's
    ``nn.UpsamplingBilinear2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.UpsamplingBilinear2d(size=(2, 3))(tg.tensor([[[[0.0, 2.0]]]]))
        tensor([[[[0., 1., 2.],
                  [0., 1., 2.]]]])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
