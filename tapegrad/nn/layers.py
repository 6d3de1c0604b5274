"""Convolution, pooling, padding and reshaping layers, with PyTorch's arguments, parameter
names, shapes and initialisation (a torch ``state_dict`` converted with ``{k: v.numpy()}``
loads as it is)."""

import math
from collections import namedtuple

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core.tensor import scalar_argument
from ..tensor_class import Tensor
from . import convolution as _conv
from . import functional as _F
from .modules import Linear, Module, ModuleList, Parameter, Sequential


def _no_device(name, device, dtype):
    if device not in (None, "cpu") or dtype not in (None, np.float64, "float64"):
        raise TypeError(
            f"{name}: device={device!r} and dtype={dtype!r} are not supported (tapegrad "
            f"computes in float64 on the CPU); leave them out"
        )


def _conv_geometry(
    layer, name, in_channels, out_channels, kernel_size, stride, dilation, groups, device, dtype
):
    """A convolution layer's (plain or transposed) channels, groups, kernel size, stride and
    dilation, read and checked as PyTorch's."""
    _no_device(name, device, dtype)
    layer.in_channels, layer.out_channels, layer.groups = (
        int(in_channels),
        int(out_channels),
        int(groups),
    )
    if layer.groups < 1 or layer.in_channels % layer.groups or layer.out_channels % layer.groups:
        raise ValueError(f"{name}: groups must divide in_channels and out_channels")
    layer.kernel_size = _conv._tuple(name, "kernel_size", kernel_size, layer.n)
    layer.stride = _conv._tuple(name, "stride", stride, layer.n)
    layer.dilation = _conv._tuple(name, "dilation", dilation, layer.n)


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
        _conv_geometry(
            self, name, in_channels, out_channels, kernel_size, stride, dilation, groups,
            device, dtype,
        )  # fmt: skip
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
            s += f", padding={self.padding}"
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


class Conv3d(_ConvNd):
    """3-D convolution layer (PyTorch's ``nn.Conv3d``; see ``F.conv3d``): weight
    (out_channels, in_channels / groups, kD, kH, kW) and bias (out_channels,), both
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch.  Only ``padding_mode='zeros'``.

    Examples:
        >>> import tapegrad as tg
        >>> conv = tg.nn.Conv3d(2, 4, 3, padding=1)
        >>> conv.weight.shape, conv(tg.zeros(1, 2, 5, 6, 7)).shape
        ((4, 2, 3, 3, 3), (1, 4, 5, 6, 7))
    """

    n = 3
    fn = staticmethod(_conv.conv3d)


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
        _conv_geometry(
            self, name, in_channels, out_channels, kernel_size, stride, dilation, groups,
            device, dtype,
        )  # fmt: skip
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


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution layer (PyTorch's ``nn.ConvTranspose3d``; see
    ``F.conv_transpose3d``): weight (in_channels, out_channels / groups, kD, kH, kW) and bias
    (out_channels,), initialised as PyTorch's.  ``forward(input, output_size=None)``.

    Examples:
        >>> import tapegrad as tg
        >>> up = tg.nn.ConvTranspose3d(4, 2, 2, stride=2)
        >>> up.weight.shape, up(tg.zeros(1, 4, 3, 3, 3)).shape
        ((4, 2, 2, 2, 2), (1, 2, 6, 6, 6))
    """

    n = 3
    fn = staticmethod(_conv.conv_transpose3d)


def _given(args):
    """A constructor's arguments (its ``locals()``) as keyword arguments."""
    return {k: v for k, v in args.items() if k not in ("self", "__class__")}


class _Pool(Module):
    """A layer applying ``fn(input, **hyper)`` with the hyper-parameters given at construction."""

    fn = None

    def __init__(self, **hyper):
        super().__init__()
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


class MaxPool3d(_MaxPoolNd):
    """Max-pooling layer over the last three axes (PyTorch's ``nn.MaxPool3d``; see
    ``F.max_pool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.MaxPool3d(2)(tg.zeros(1, 3, 4, 6, 8)).shape
        (1, 3, 2, 3, 4)
    """

    fn = staticmethod(_conv.max_pool3d)


class AvgPool3d(_Pool):
    """Average-pooling layer over the last three axes (PyTorch's ``nn.AvgPool3d``; see
    ``F.avg_pool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AvgPool3d(2)(tg.ones(1, 1, 2, 2, 2))
        tensor([[[[[1.]]]]])
    """

    fn = staticmethod(_conv.avg_pool3d)

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


class AdaptiveAvgPool1d(_Pool):
    """Average pooling to a fixed ``output_size`` along the last axis (PyTorch's
    ``nn.AdaptiveAvgPool1d``; see ``F.adaptive_avg_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveAvgPool1d(2)(tg.tensor([[[1.0, 2.0, 3.0, 4.0]]]))
        tensor([[[1.5000, 3.5000]]])
    """

    fn = staticmethod(_conv.adaptive_avg_pool1d)

    def __init__(self, output_size):
        super().__init__(output_size=output_size)


class AdaptiveAvgPool3d(_Pool):
    """Average pooling to a fixed ``output_size`` (PyTorch's ``nn.AdaptiveAvgPool3d``; see
    ``F.adaptive_avg_pool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveAvgPool3d(1)(tg.ones(2, 5, 3, 4, 5)).shape
        (2, 5, 1, 1, 1)
    """

    fn = staticmethod(_conv.adaptive_avg_pool3d)

    def __init__(self, output_size):
        super().__init__(output_size=output_size)


class _AdaptiveMaxPoolNd(_Pool):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size=output_size, return_indices=return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size!r}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed ``output_size`` along the last axis (PyTorch's
    ``nn.AdaptiveMaxPool1d``; see ``F.adaptive_max_pool1d``); ``return_indices=True`` also
    returns the indices of the maxima.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveMaxPool1d(2)(tg.tensor([[[1.0, 5.0, 3.0, 4.0]]]))
        tensor([[[5., 4.]]])
    """

    fn = staticmethod(_conv.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed ``output_size`` (PyTorch's ``nn.AdaptiveMaxPool2d``; see
    ``F.adaptive_max_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveMaxPool2d((1, None))(tg.zeros(2, 3, 5, 7)).shape
        (2, 3, 1, 7)
    """

    fn = staticmethod(_conv.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed ``output_size`` (PyTorch's ``nn.AdaptiveMaxPool3d``; see
    ``F.adaptive_max_pool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.AdaptiveMaxPool3d(1)(tg.zeros(2, 3, 4, 5, 6)).shape
        (2, 3, 1, 1, 1)
    """

    fn = staticmethod(_conv.adaptive_max_pool3d)


class _LPPoolNd(_Pool):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__(**_given(locals()))
        self.stride = stride  # (PyTorch's attribute: None means kernel_size)


class LPPool1d(_LPPoolNd):
    """Power-average pooling layer (PyTorch's ``nn.LPPool1d``; see ``F.lp_pool1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LPPool1d(2, 2)(tg.tensor([[[3.0, 4.0, 1.0, 0.0]]]))
        tensor([[[5., 1.]]])
    """

    fn = staticmethod(_conv.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling layer over the last two axes (PyTorch's ``nn.LPPool2d``; see
    ``F.lp_pool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LPPool2d(1, 2)(tg.ones(1, 1, 4, 4)).shape
        (1, 1, 2, 2)
    """

    fn = staticmethod(_conv.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling layer over the last three axes (PyTorch's ``nn.LPPool3d``; see
    ``F.lp_pool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LPPool3d(2, 2)(tg.ones(1, 1, 2, 4, 4)).shape
        (1, 1, 1, 2, 2)
    """

    fn = staticmethod(_conv.lp_pool3d)


class _MaxUnpoolNd(Module):
    n = 0
    fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        name, n = type(self).__name__, self.n
        self.kernel_size = _conv._tuple(name, "kernel_size", kernel_size, n)
        self.stride = _conv._tuple(name, "stride", kernel_size if stride is None else stride, n)
        self.padding = _conv._tuple(name, "padding", padding, n)

    def forward(self, input, indices, output_size=None):
        return type(self).fn(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d`` (PyTorch's ``nn.MaxUnpool1d``; see
    ``F.max_unpool1d``): ``forward(input, indices, output_size=None)``.

    Examples:
        >>> import tapegrad as tg
        >>> y, i = tg.nn.MaxPool1d(2, return_indices=True)(tg.tensor([[[1.0, 3.0, 4.0, 2.0]]]))
        >>> tg.nn.MaxUnpool1d(2)(y, i)
        tensor([[[0., 3., 4., 0.]]])
    """

    n = 1
    fn = staticmethod(_conv.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d`` (PyTorch's ``nn.MaxUnpool2d``; see
    ``F.max_unpool2d``).

    Examples:
        >>> import tapegrad as tg
        >>> y, i = tg.nn.MaxPool2d(2, return_indices=True)(tg.ones(1, 1, 4, 4))
        >>> tg.nn.MaxUnpool2d(2)(y, i).shape
        (1, 1, 4, 4)
    """

    n = 2
    fn = staticmethod(_conv.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d`` (PyTorch's ``nn.MaxUnpool3d``; see
    ``F.max_unpool3d``).

    Examples:
        >>> import tapegrad as tg
        >>> y, i = tg.nn.MaxPool3d(2, return_indices=True)(tg.ones(1, 1, 2, 4, 4))
        >>> tg.nn.MaxUnpool3d(2)(y, i).shape
        (1, 1, 2, 4, 4)
    """

    n = 3
    fn = staticmethod(_conv.max_unpool3d)


# ---- padding layers -----------------------------------------------------------------------------


class _PadNd(Module):
    """``F.pad(input, padding, mode)`` with ``padding`` an int (every side of the last n
    axes) or a sequence of (before, after) amounts from the last axis, as PyTorch's."""

    n = 0
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        name = type(self).__name__
        if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool):
            self.padding = (int(padding),) * (2 * self.n)
        else:
            try:
                self.padding = tuple(int(p) for p in padding)
            except TypeError:
                raise TypeError(
                    f"{name}: padding must be an int or a tuple of {2 * self.n} ints, got "
                    f"{padding!r}"
                ) from None

    def _check(self, x):
        pass

    def forward(self, input):
        x = _ops.tensor_of(input)
        self._check(x)
        return _conv.pad(x, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def _check(self, x):  # (PyTorch's circular padding layers check the input's dims)
        n, name = self.n, type(self).__name__
        if x.ndim not in (n + 1, n + 2):
            raise ValueError(
                f"{name}: expected {n + 1}D or {n + 2}D input, got {x.ndim}D input of shape "
                f"{x.shape}"
            )


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = float(value)

    def forward(self, input):
        return _conv.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last axis with ``value`` (PyTorch's ``nn.ConstantPad1d``): ``padding`` an
    int or (left, right); negative amounts crop (see ``F.pad``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ConstantPad1d((1, 2), 3.5)(tg.ones(1, 2))
        tensor([[3.5000, 1.0000, 1.0000, 3.5000, 3.5000]])
    """

    n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two axes with ``value`` (PyTorch's ``nn.ConstantPad2d``): ``padding`` an
    int or (left, right, top, bottom).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ConstantPad2d(1, -1.0)(tg.ones(1, 1, 1)).shape
        (1, 3, 3)
    """

    n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three axes with ``value`` (PyTorch's ``nn.ConstantPad3d``): ``padding``
    an int or (left, right, top, bottom, front, back).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ConstantPad3d((1, 0, 0, 1, 2, 0), 0.0)(tg.ones(1, 1, 1, 1)).shape
        (1, 3, 2, 2)
    """

    n = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last axis with zeros (PyTorch's ``nn.ZeroPad1d``): ``padding`` an int or
    (left, right); negative amounts crop.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ZeroPad1d((1, 0))(tg.ones(1, 2))
        tensor([[0., 1., 1.]])
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two axes with zeros: ``padding`` an int (all four sides) or (left, right,
    top, bottom); negative amounts crop (see ``F.pad``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ZeroPad2d((1, 0, 0, 1))(tg.ones(1, 1, 1, 2))
        tensor([[[[0., 1., 1.],
                  [0., 0., 0.]]]])
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last three axes with zeros (PyTorch's ``nn.ZeroPad3d``): ``padding`` an int
    or (left, right, top, bottom, front, back).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ZeroPad3d(1)(tg.ones(1, 1, 1, 1)).shape
        (1, 3, 3, 3)
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last axis of (C, W) or (N, C, W) with its reflection about the end elements
    (PyTorch's ``nn.ReflectionPad1d``; ``F.pad(mode='reflect')``); each amount less than the
    size.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReflectionPad1d(2)(tg.tensor([[0.0, 1.0, 2.0]]))
        tensor([[2., 1., 0., 1., 2., 1., 0.]])
    """

    n = 1
    mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of the last two axes of (C, H, W) or (N, C, H, W) (PyTorch's
    ``nn.ReflectionPad2d``; see ``ReflectionPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReflectionPad2d((1, 1, 2, 0))(tg.zeros(1, 3, 3)).shape
        (1, 5, 5)
    """

    n = 2
    mode = "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last three axes of (C, D, H, W) or (N, C, D, H, W)
    (PyTorch's ``nn.ReflectionPad3d``; see ``ReflectionPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReflectionPad3d(1)(tg.zeros(1, 2, 2, 2)).shape
        (1, 4, 4, 4)
    """

    n = 3
    mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last axis of (C, W) or (N, C, W) by repeating its end elements (PyTorch's
    ``nn.ReplicationPad1d``; ``F.pad(mode='replicate')``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReplicationPad1d((2, 1))(tg.tensor([[0.0, 1.0]]))
        tensor([[0., 0., 0., 1., 1.]])
    """

    n = 1
    mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Replication padding of the last two axes of (C, H, W) or (N, C, H, W) (PyTorch's
    ``nn.ReplicationPad2d``; see ``ReplicationPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReplicationPad2d(1)(tg.zeros(1, 1, 2, 2)).shape
        (1, 1, 4, 4)
    """

    n = 2
    mode = "replicate"


class ReplicationPad3d(_PadNd):
    """Replication padding of the last three axes of (C, D, H, W) or (N, C, D, H, W)
    (PyTorch's ``nn.ReplicationPad3d``; see ``ReplicationPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReplicationPad3d(1)(tg.zeros(1, 1, 2, 2, 2)).shape
        (1, 1, 4, 4, 4)
    """

    n = 3
    mode = "replicate"


class CircularPad1d(_CircularPadNd):
    """Pads the last axis of (C, W) or (N, C, W) circularly (wrapping around; PyTorch's
    ``nn.CircularPad1d``; ``F.pad(mode='circular')``); each amount at most the size.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CircularPad1d((2, 1))(tg.tensor([[0.0, 1.0, 2.0]]))
        tensor([[1., 2., 0., 1., 2., 0.]])
    """

    n = 1


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last two axes of (C, H, W) or (N, C, H, W) (PyTorch's
    ``nn.CircularPad2d``; see ``CircularPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CircularPad2d(1)(tg.zeros(1, 2, 2)).shape
        (1, 4, 4)
    """

    n = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last three axes of (C, D, H, W) or (N, C, D, H, W) (PyTorch's
    ``nn.CircularPad3d``; see ``CircularPad1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CircularPad3d(1)(tg.zeros(1, 2, 2, 2)).shape
        (1, 4, 4, 4)
    """

    n = 3


# ---- im2col, channel dropout --------------------------------------------------------------------


class Unfold(Module):
    """Extracts sliding blocks (im2col; PyTorch's ``nn.Unfold``; see ``F.unfold``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Unfold(kernel_size=(2, 3))(tg.zeros(2, 5, 3, 4)).shape
        (2, 30, 4)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return _conv.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Combines sliding blocks into an image, adding overlaps (col2im; PyTorch's
    ``nn.Fold``; see ``F.fold``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(tg.zeros(1, 3 * 2 * 2, 12)).shape
        (1, 3, 4, 5)
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return _conv.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class _DropoutNd(Module):
    fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        name = type(self).__name__
        p = scalar_argument(p, f"{name}: p")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")
        if inplace:
            raise TypeError(
                f"{name}: inplace=True is not supported (tapegrad records a new value instead "
                f"of overwriting the input); leave it False"
            )
        self.p, self.inplace = p, False

    def forward(self, input):
        return type(self).fn(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Channel-wise dropout layer (PyTorch's ``nn.Dropout1d``; see ``F.dropout1d``): each
    channel of (N, C, L) or (C, L) is zeroed whole with probability ``p`` while training,
    the others scaled by 1 / (1 - p); the identity after ``eval()``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Dropout1d(0.5).eval()(tg.ones(2, 3))
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """

    fn = staticmethod(_conv.dropout1d)


class Dropout2d(_DropoutNd):
    """Channel-wise dropout layer for (N, C, H, W) or (C, H, W) (PyTorch's
    ``nn.Dropout2d``; see ``F.dropout2d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Dropout2d(0.2)(tg.ones(1, 3, 2, 2)).shape
        (1, 3, 2, 2)
    """

    fn = staticmethod(_conv.dropout2d)


class Dropout3d(_DropoutNd):
    """Channel-wise dropout layer for (N, C, D, H, W) or (C, D, H, W) (PyTorch's
    ``nn.Dropout3d``; see ``F.dropout3d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Dropout3d(0.2)(tg.ones(1, 3, 1, 2, 2)).shape
        (1, 3, 1, 2, 2)
    """

    fn = staticmethod(_conv.dropout3d)


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


# ---- bags of embeddings, CTC and the adaptive softmax --------------------------------------------


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (PyTorch's ``nn.EmbeddingBag``; see
    ``F.embedding_bag``): a table of ``num_embeddings`` vectors of size ``embedding_dim``
    drawn from N(0, 1), its ``padding_idx`` row zero (and left out of every bag).
    ``forward(input, offsets=None, per_sample_weights=None)`` returns (B, embedding_dim).

    Examples:
        >>> import tapegrad as tg
        >>> bag = tg.nn.EmbeddingBag.from_pretrained(tg.eye(3), mode="sum")
        >>> bag(tg.tensor([0, 2, 2, 1]), tg.tensor([0, 3]))
        tensor([[1., 0., 2.],
                [0., 1., 0.]])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight=None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        _no_device("EmbeddingBag", device, dtype)
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(
                    f"EmbeddingBag: padding_idx must be within num_embeddings "
                    f"({self.num_embeddings}), got {padding_idx}"
                )
            padding_idx %= self.num_embeddings
        _F._embedding_options("EmbeddingBag", max_norm, scale_grad_by_freq, sparse)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = padding_idx
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            w = _creation.rng().standard_normal(shape)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = np.array(getattr(_weight, "_v", _weight), dtype=np.float64)
            if w.shape != shape:
                raise ValueError(f"EmbeddingBag: _weight has shape {w.shape}, expected {shape}")
        self.weight = Parameter(w)

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> "EmbeddingBag":
        """An EmbeddingBag whose table is a copy of the 2-D ``embeddings``, frozen unless
        ``freeze`` is False (PyTorch's ``nn.EmbeddingBag.from_pretrained``)."""
        w = np.array(getattr(embeddings, "_v", embeddings), dtype=np.float64)
        if w.ndim != 2:
            raise ValueError(
                f"EmbeddingBag.from_pretrained: embeddings must be 2-dimensional, got shape "
                f"{w.shape}"
            )
        bag = cls(
            w.shape[0], w.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
            w, include_last_offset, padding_idx,
        )  # fmt: skip
        bag.weight.requires_grad_(not freeze)
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return _F.embedding_bag(
            input,
            self._parameters["weight"],
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class CTCLoss(Module):
    """The Connectionist Temporal Classification loss (PyTorch's ``nn.CTCLoss``; see
    ``F.ctc_loss``): ``forward(log_probs, targets, input_lengths, target_lengths)``.

    Examples:
        >>> import tapegrad as tg
        >>> lp = tg.full((2, 1, 2), 0.5).log()
        >>> tg.nn.CTCLoss(reduction="sum")(lp, tg.tensor([[1]]), [2], [1])
        tensor(0.2877)
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__()
        _F._check_reduction("CTCLoss", reduction)
        self.blank = blank
        self.reduction = reduction
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return _F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )


# the (output, loss) pair; the type keeps PyTorch's name, which reprs and checks show
_OutputAndLoss = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax over many classes (PyTorch's ``nn.AdaptiveLogSoftmaxWithLoss``,
    Grave et al.): the classes below ``cutoffs[0]`` and one entry per cluster form the head
    (``head``: a Linear to ``cutoffs[0] + len(cutoffs)`` outputs); each cluster i has a tail
    ``Sequential(Linear(in_features, in_features // div_value ** (i + 1), bias=False),
    Linear(..., cluster size, bias=False))``.  PyTorch's parameter names and shapes.

    ``forward(input, target)`` returns the named tuple ``(output, loss)``: each row's
    log-probability of its target and the mean of their negatives; ``log_prob(input)`` the
    (N, n_classes) log-probabilities; ``predict(input)`` the most likely classes.

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> asm = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
        >>> out, loss = asm(tg.randn(3, 8), tg.tensor([0, 5, 9]))
        >>> out.shape, asm.log_prob(tg.randn(3, 8)).exp().sum(1).detach().round(decimals=6)
        ((3,), tensor([1., 1., 1.]))
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs,
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        _no_device("AdaptiveLogSoftmaxWithLoss", device, dtype)
        bounds = list(cutoffs)
        if not bounds:
            raise ValueError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0"
            )
        increasing = all(lo < hi for lo, hi in zip(bounds[:-1], bounds[1:], strict=True))
        inside = all(0 < c < n_classes for c in bounds)
        if not (increasing and inside and all(c == int(c) for c in bounds)):
            raise ValueError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive "
                "integers sorted in an increasing order, where each value is between 1 and "
                f"n_classes-1 ({n_classes - 1}), got {bounds}"
            )
        self.in_features, self.n_classes = in_features, n_classes
        self.div_value, self.head_bias = div_value, head_bias
        # the class boundaries: the shortlist is [0, cutoffs[0]), cluster i [cutoffs[i],
        # cutoffs[i + 1]), the last one ending at n_classes
        self.cutoffs = [int(c) for c in bounds] + [n_classes]
        self.shortlist_size, self.n_clusters = self.cutoffs[0], len(bounds)
        self.head_size = self.cutoffs[0] + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias)
        self.tail = ModuleList([self._cluster_projection(i) for i in range(self.n_clusters)])

    def _cluster_projection(self, i):
        """Cluster ``i``'s two bias-free Linears, through a width divided by div_value**(i+1)."""
        width = int(self.in_features // self.div_value ** (i + 1))
        size = self.cutoffs[i + 1] - self.cutoffs[i]
        return Sequential(
            Linear(self.in_features, width, bias=False), Linear(width, size, bias=False)
        )

    def _batched(self, name, input, unbatched_too=False):
        x = _ops.tensor_of(input)
        ranks = (1, 2) if unbatched_too else (2,)
        if x.ndim not in ranks or x.shape[-1] != self.in_features:
            also = f" or ({self.in_features},)" if unbatched_too else " (a minibatch, as PyTorch)"
            raise ValueError(
                f"AdaptiveLogSoftmaxWithLoss.{name}: input must be (N, {self.in_features})"
                f"{also}, got shape {x.shape}"
            )
        if x.ndim == 2:
            return x, True
        return _ops.reshape(x, (1, *x.shape)), False

    def _classes(self, x, target):
        """The target classes as a 1-D int64 array, after PyTorch's checks against ``x``."""
        where = "AdaptiveLogSoftmaxWithLoss"
        t = np.asarray(getattr(target, "_v", target))
        if t.dtype.kind not in "iu":
            raise TypeError(f"{where}: target must hold integer classes, got dtype {t.dtype}")
        if t.ndim > 1:
            raise ValueError(
                f"{where}: 0D or 1D target tensor expected, multi-target not supported "
                f"(got shape {t.shape})"
            )
        if x.ndim != t.ndim + 1:
            raise ValueError(
                f"{where}: {t.ndim}D target tensor expects {t.ndim + 1}D input tensors, but "
                f"found inputs with size {x.shape}"
            )
        if t.ndim == 1 and x.shape[0] != t.shape[0]:
            raise ValueError(
                f"{where}: Input and target should have the same size in the batch dimension "
                f"({x.shape[0]} and {t.shape[0]})"
            )
        t = t.reshape(-1).astype(np.int64)
        if t.size and not (0 <= t.min() and t.max() < self.n_classes):
            raise ValueError(
                f"{where}: Target values should be in [0, {self.n_classes - 1}], but values in "
                f"range [{t.min()}, {t.max()}] were found"
            )
        return t

    def forward(self, input_, target_):
        x = _ops.tensor_of(input_)
        classes = self._classes(x, target_)
        x, batched = self._batched("forward", x, unbatched_too=True)
        # 0 for a shortlist class, i + 1 for one of cluster i
        group = np.searchsorted(self.cutoffs, classes, side="right")
        head_column = np.where(group == 0, classes, self.shortlist_size + group - 1)
        # each row's log-probability within its cluster (0 in the shortlist), gathered per
        # cluster and put back in row order
        rows, values = [np.flatnonzero(group == 0)], [np.zeros(int(np.sum(group == 0)))]
        for i in np.unique(group[group > 0]) - 1:
            members = np.flatnonzero(group == i + 1)
            inner = _F.log_softmax(self.tail[i](_ops.getitem(x, members)), dim=1)
            offsets = classes[members] - self.cutoffs[i]
            values.append(_ops.getitem(inner, (np.arange(members.size), offsets)))
            rows.append(members)
        within = _ops.getitem(_ops.concatenate(values), np.argsort(np.concatenate(rows)))
        head = _F.log_softmax(self.head(x), dim=1)
        output = _ops.add(_ops.getitem(head, (np.arange(classes.size), head_column)), within)
        loss = _ops.mean(_ops.neg(output))
        return _OutputAndLoss(output if batched else _ops.reshape(output, ()), loss)

    def _every_class(self, x, head_logits):
        """The (N, n_classes) log-probabilities: the head's for the shortlist, then each
        cluster's own plus the head's log-probability of the cluster."""
        head = _F.log_softmax(head_logits, dim=1)
        columns = [_ops.getitem(head, (slice(None), slice(0, self.shortlist_size)))]
        for i, projection in enumerate(self.tail):
            column = self.shortlist_size + i
            cluster = _ops.getitem(head, (slice(None), slice(column, column + 1)))
            columns.append(_ops.add(_F.log_softmax(projection(x), dim=1), cluster))
        return _ops.concatenate(columns, axis=1)

    def log_prob(self, input) -> Tensor:
        """The (N, n_classes) log-probabilities of every class of an (N, in_features) input."""
        x, _ = self._batched("log_prob", input)
        return self._every_class(x, self.head(x))

    def predict(self, input) -> Tensor:
        """The most likely class of each row (as PyTorch's: the head's argmax when it is a
        shortlist class, else the argmax of the full log-probabilities)."""
        x, _ = self._batched("predict", input)
        logits = self.head(x)
        best = np.array(logits.argmax(dim=1).numpy(), dtype=np.int64)  # (.numpy(): a trace's pin)
        clustered = np.flatnonzero(best >= self.shortlist_size)
        if clustered.size:
            full = self._every_class(_ops.getitem(x, clustered), _ops.getitem(logits, clustered))
            best[clustered] = full.argmax(dim=1).numpy()
        return _creation.tensor(best)
