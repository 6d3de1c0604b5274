"""Tensor constructors (``tg.tensor``, ``tg.zeros`` ...) and the global random seed."""

import copy
import math
import numbers
import operator
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .tensor import (
    STATE,
    _stands_in,
    new_tensor,
    refuse_complex,
    refuse_not_numbers,
    refuse_unsupported,
    scalar_argument,
)
from .tensor import TensorBase as Tensor

_rng = [np.random.default_rng()]


def manual_seed(seed: int) -> np.random.Generator:
    """Seed tapegrad's random generator (used by randn/rand and nn initialisers).

    Returns the new ``numpy.random.Generator``.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> a = tg.randn(3)
        >>> _ = tg.manual_seed(0)
        >>> np.array_equal(a.numpy(), tg.randn(3).numpy())
        True
    """
    n = _int_arg("manual_seed", "seed", seed)
    _rng[0] = np.random.default_rng(n % 2**64)  # a negative seed as PyTorch reads it
    return _rng[0]


def rng():
    """tapegrad's ``numpy.random.Generator`` (the one ``manual_seed`` replaces)."""
    return _rng[0]


def tensor(
    data: ArrayLike,
    requires_grad: bool = False,
    dtype=None,
    *,
    device=None,
    pin_memory: bool = False,
) -> Tensor:
    """A new leaf tensor holding a copy of ``data``; float data becomes float64.

    Only floating point tensors can require gradients.  PyTorch's ``device=`` (the CPU) and
    ``pin_memory=False`` are accepted; another device or pinned memory is refused.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([2.0, 3.0], requires_grad=True)
        >>> x
        tensor([2., 3.], requires_grad=True)
        >>> (x ** 2).sum().backward()
        >>> x.grad
        tensor([4., 6.])
        >>> tg.tensor([1, 2])
        tensor([1, 2])
    """
    if device is not None or pin_memory:
        _options("tensor", device=device, pin_memory=pin_memory)
    if requires_grad and dtype is None:
        arr = np.asarray(data._v if isinstance(data, Tensor) else data)
        if arr.dtype.kind in "iub":
            raise RuntimeError(
                f"Only Tensors of floating point dtype can require gradients; got integer data "
                f"(dtype {arr.dtype}). Use float data, e.g. tg.tensor({arr.tolist()!r}, "
                "dtype=float), to differentiate with respect to it."
            )
    if dtype is None and isinstance(data, (int, list, tuple)) and not isinstance(data, bool):
        _refuse_big_ints(data)
    return new_tensor(data, requires_grad=requires_grad, dtype=dtype)


def _refuse_big_ints(data):
    """A Python int outside int64 (PyTorch's "Overflow when unpacking long long"): NumPy
    would make the data uint64, or float64 beside other ints, rounding it silently."""
    kind = np.asarray(data).dtype if isinstance(data, (list, tuple)) else None
    if kind is not None and kind != np.uint64 and kind.kind != "f":
        return
    stack, big = [data], None
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        elif isinstance(d, (float, np.floating)):
            return  # float data: the ints become floats, as PyTorch's
        elif big is None and isinstance(d, int) and not -(2**63) <= d < 2**63:
            big = d
    if big is not None:
        raise OverflowError(
            f"tg.tensor: the Python int {big} does not fit in int64 (PyTorch raises too); "
            "pass it as a float (float(n)) or give dtype= explicitly"
        )


def _make(arr, requires_grad, dtype=None, what="cannot make a tensor: the data"):
    """``arr`` as a new Tensor of ``dtype`` (float64 by default); complex or extended
    precision values are refused (a cast to float64 would drop the imaginary part or round,
    with at most a warning)."""
    arr = np.asarray(arr)
    if arr.dtype.kind == "c":
        refuse_complex(f"{what} (dtype {arr.dtype})")
    refuse_unsupported(arr, what)
    dt = np.dtype(dtype or np.float64)
    return new_tensor(np.asarray(arr, dtype=dt), requires_grad=requires_grad, dtype=dt)


def _dtype_of(x, requires_grad):
    """PyTorch's default dtype of a ``*_like`` result: a Tensor's or array's own (a float32
    one's float32 too), else float64 (tapegrad's float; also that of a result that requires
    grad of an integer or bool one)."""
    v = x._v if isinstance(x, Tensor) else x
    if not isinstance(v, np.ndarray) or v.dtype.kind not in "fiub":
        return np.float64
    if requires_grad and v.dtype.kind != "f":
        return np.float64
    return v.dtype


# ---- PyTorch's keyword arguments of the factories ----------------------------------------------


def _as_dtype(name, dtype):
    """``dtype`` as a NumPy dtype (None stays None); a dtype that is not one of numbers is
    refused, naming ``tg.<name>``."""
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"tg.{name}: dtype={dtype!r} is not a dtype tapegrad knows; tapegrad's dtypes are "
            "NumPy's: give tg.float64, tg.float32, tg.int64, tg.int32, bool, float or int"
        ) from None
    if dt.kind == "c":
        refuse_complex(f"tg.{name}: dtype={dt}")
    if dt.kind not in "fiub":
        raise TypeError(
            f"tg.{name}: dtype {dt} is not a number dtype; give tg.float64, tg.int64..."
        )
    refuse_unsupported(np.empty(0, dt), f"tg.{name}: dtype")  # float128
    return dt


def _float_only(name, dt, requires_grad):
    """PyTorch's refusal of ``requires_grad=True`` with an integer or bool ``dtype``."""
    if requires_grad and dt is not None and dt.kind != "f":
        raise RuntimeError(
            f"tg.{name}: only Tensors of floating point dtype can require gradients; got "
            f"dtype={dt} (PyTorch raises too); give dtype=tg.float64"
        )


def _checked_dtype(name, dtype, requires_grad, *options, **more):
    """A factory's prologue: its PyTorch options checked (``_options``), ``dtype`` as a NumPy
    dtype or None (``_as_dtype``), and ``requires_grad`` refused with a non-float dtype."""
    _options(name, *options, **more)
    dt = _as_dtype(name, dtype)
    _float_only(name, dt, requires_grad)
    return dt


def _options(name, out=None, layout=None, device=None, pin_memory=False, memory_format=None):
    """PyTorch's ``out=``, ``layout=``, ``device=``, ``pin_memory=`` and ``memory_format=`` of
    a factory: their defaults (CPU, strided, unpinned, contiguous) are accepted, anything else
    is refused naming ``tg.<name>``."""
    if out is not None:
        raise TypeError(
            f"tg.{name}: out= is not supported (tapegrad does not write results into an "
            f"existing Tensor); assign the result instead: y = tg.{name}(...)"
        )
    if layout is not None and str(layout) not in ("torch.strided", "strided"):
        raise RuntimeError(
            f"tg.{name}: layout={layout!r}: tapegrad has dense (strided) Tensors only; leave "
            "layout out"
        )
    if device is not None:
        dev = str(getattr(device, "type", device))
        if dev.split(":")[0] != "cpu":
            raise RuntimeError(
                f"tg.{name}: device={device!r}: tapegrad computes on the CPU only; leave device "
                "out or give device='cpu'"
            )
    if pin_memory:
        raise RuntimeError(
            f"tg.{name}: pin_memory=True: tapegrad computes on the CPU only and has no pinned "
            "memory (PyTorch raises too without an accelerator); leave pin_memory out"
        )
    if memory_format is not None and str(memory_format) not in (
        "torch.preserve_format",
        "torch.contiguous_format",
    ):
        raise RuntimeError(
            f"tg.{name}: memory_format={memory_format!r}: tapegrad's Tensors are contiguous "
            "(row-major); leave memory_format out"
        )


def _int_arg(name, what, v, minimum=None):
    """``v`` as a Python int (an int, NumPy integer or integer 0-d Tensor; not a bool or a
    float), at least ``minimum``."""
    if isinstance(v, (bool, np.bool_)) or isinstance(v, (float, np.floating)):
        n = None
    else:
        try:
            n = operator.index(v)
        except TypeError:
            n = None
    if n is None:
        raise TypeError(
            f"tg.{name}: {what} must be an int, got {type(v).__name__} {v!r} (PyTorch raises too)"
        )
    if minimum is not None and n < minimum:
        raise RuntimeError(f"tg.{name}: {what} must be at least {minimum}, got {n}")
    return n


def _size(name, shape, size=None):
    """A factory's size, given as integers, one tuple / list / torch.Size, or ``size=``."""
    if size is not None:
        if shape:
            raise TypeError(f"tg.{name}: give the size as integers or as size=, not both")
        shape = (size,)
    if len(shape) == 1 and (
        isinstance(shape[0], (tuple, list)) or type(shape[0]).__name__ == "Size"
    ):  # one tuple, list or torch.Size
        shape = tuple(shape[0])
    out = []
    for s in shape:
        try:
            n = _int_arg(name, "size", s)
        except TypeError:
            raise TypeError(
                f"tg.{name}: size must be integers or a tuple of ints, got {shape!r} (PyTorch "
                f"raises too); e.g. tg.{name}(2, 3) or tg.{name}((2, 3))"
            ) from None
        if n < 0:
            raise RuntimeError(
                f"tg.{name}: negative dimension {n} in size {tuple(shape)} (PyTorch raises too)"
            )
        out.append(n)
    return tuple(out)


class Generator:
    """PyTorch's ``torch.Generator``: a random generator of its own for the ``generator=``
    argument of tapegrad's draws (``tg.randn``, ``tg.rand``, ``tg.randint``, ``tg.randperm``,
    the ``*_like`` draws), seeded with ``manual_seed``.  The draws are NumPy's (a
    ``numpy.random.Generator``), not PyTorch's stream of numbers.  A ``numpy.random.Generator``
    (what ``tg.manual_seed`` returns) is accepted as ``generator=`` too.

    Examples:
        >>> import tapegrad as tg
        >>> g = tg.Generator().manual_seed(0)
        >>> a = tg.randn(3, generator=g)
        >>> bool((a == tg.randn(3, generator=tg.Generator().manual_seed(0))).all())
        True
    """

    def __init__(self, device: str = "cpu") -> None:
        _options("Generator", device=device)
        self.device = "cpu"
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2**63)

    def manual_seed(self, seed: int) -> "Generator":
        """Seed the generator (any int; a negative one is read modulo 2**64, as PyTorch's);
        returns the generator."""
        n = _int_arg("Generator.manual_seed", "seed", seed)
        self._seed = n % 2**64
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def seed(self) -> int:
        """Seed the generator with a fresh non-deterministic seed and return it."""
        n = int(np.random.SeedSequence().entropy) % 2**63
        self.manual_seed(n)
        return n


def _generator(name, generator):
    """The ``numpy.random.Generator`` a draw uses: ``generator``'s, or tapegrad's."""
    if generator is None:
        return rng()
    if isinstance(generator, Generator):
        return generator._rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(
        f"tg.{name}: generator= must be a tg.Generator or a numpy.random.Generator, got "
        f"{type(generator).__name__} (a torch.Generator cannot drive tapegrad's draws); use "
        "g = tg.Generator().manual_seed(seed)"
    )


def _random_dtype(name, dtype):
    """The dtype of a float draw: float64, or ``dtype`` if a float one."""
    dt = _as_dtype(name, dtype)
    if dt is not None and dt.kind != "f":
        raise NotImplementedError(
            f"tg.{name}: draws floats, but dtype={dt} (PyTorch refuses it too); give a float "
            "dtype such as tg.float64"
        )
    return dt or np.dtype(np.float64)


def zeros(
    *shape: int,
    size: Sequence[int] | None = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """PyTorch's ``torch.zeros``: a tensor of zeros (float64 unless ``dtype``); the size as
    separate integers, one tuple, or ``size=``.  ``device`` must be the CPU, ``layout``
    strided; ``out=`` is refused.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
        >>> tg.zeros((2,), requires_grad=True)
        tensor([0., 0.], requires_grad=True)
    """
    return _filled("zeros", 0, shape, size, out, dtype, layout, device, requires_grad)


def _filled(name, value, shape, size, out, dtype, layout, device, requires_grad, pin=False):
    _options(name, out, layout, device, pin)
    dt = _as_dtype(name, dtype)
    _float_only(name, dt, requires_grad)
    shape = _size(name, shape, size)
    return _make(np.full(shape, value, dtype=dt or np.float64), requires_grad, dt)


def ones(
    *shape: int,
    size: Sequence[int] | None = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """PyTorch's ``torch.ones``: a tensor of ones (float64 unless ``dtype``); the size as
    separate integers, one tuple, or ``size=``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(3), tg.ones(2, dtype=tg.int64)
        (tensor([1., 1., 1.]), tensor([1, 1]))
    """
    return _filled("ones", 1, shape, size, out, dtype, layout, device, requires_grad)


def empty(
    *shape: int,
    size: Sequence[int] | None = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.empty``: a new Tensor of the size (float64 unless ``dtype``), filled
    with zeros (tapegrad never hands out uninitialised memory).

    Examples:
        >>> import tapegrad as tg
        >>> tg.empty(2, 3).shape
        (2, 3)
    """
    _options("empty", memory_format=memory_format)
    return _filled("empty", 0, shape, size, out, dtype, layout, device, requires_grad, pin_memory)


def full(
    size: int | Sequence[int],
    fill_value: float,
    requires_grad: bool = False,
    *,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
) -> Tensor:
    """PyTorch's ``torch.full``: a tensor of ``size`` filled with ``fill_value``: float64 for
    a float value, and, as PyTorch infers it, int64 for an int and bool for a bool (unless
    ``dtype`` or ``requires_grad``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.full((2,), 7.0), tg.full((2,), 7)
        (tensor([7., 7.]), tensor([7, 7]))
    """
    dtype = _checked_dtype("full", dtype, requires_grad, out, layout, device)
    shape = _size("full", (size,))
    value = np.asarray(fill_value._v if isinstance(fill_value, Tensor) else fill_value)
    infer = dtype is None and not requires_grad
    if value.dtype.kind == "O" and isinstance(fill_value, numbers.Number):
        if infer and isinstance(fill_value, numbers.Integral):  # an int beyond 64 bits
            _refuse_big_fill(fill_value)
        fill_value = value = np.asarray(float(fill_value))  # a Fraction, a Decimal
    what = "tg.full: fill_value"
    if value.dtype.kind == "c":  # (a complex 1j came out as 0 in a float64 tensor)
        refuse_complex(f"{what} {fill_value!r}")
    if value.dtype.kind not in "fiub":
        refuse_not_numbers(fill_value, value.dtype, what)
    refuse_unsupported(value, what)  # extended precision
    if infer:
        if value.dtype.kind == "u" and (value > np.iinfo(np.int64).max).any():
            _refuse_big_fill(int(value.max()))
        dtype = {"i": np.int64, "u": np.int64, "b": bool}.get(value.dtype.kind)
    if value.ndim:
        raise RuntimeError(
            f"tg.full: fill_value must be a number (or a Tensor of one element), got shape "
            f"{value.shape}"
        )
    if dtype is not None:
        _fill_fits("full", value.item(), np.dtype(dtype))
    return _make(np.full(shape, fill_value), requires_grad, dtype, what)


def _fill_fits(name, value, dt):
    """Refuse, as PyTorch, a fill value that ``dt`` cannot hold: NaN, an infinity or an
    integer out of range for an integer dtype (NumPy's cast gave -2**63 or wrapped around),
    a finite float beyond a float32's range (NumPy's cast gave inf)."""
    if dt.kind in "iu" and not isinstance(value, (bool, np.bool_)):
        v = float(value) if isinstance(value, (float, np.floating)) else int(value)
        info = np.iinfo(dt)
        ok = math.isfinite(v) and info.min <= math.trunc(v) <= info.max
    elif dt.kind == "f" and isinstance(value, (float, np.floating, int, np.integer)):
        ok = not math.isfinite(value) or abs(float(value)) <= float(np.finfo(dt).max)
    else:
        ok = True
    if not ok:
        raise RuntimeError(
            f"tg.{name}: the value {value!r} cannot be converted to {dt} without overflow "
            "(PyTorch raises too); give a dtype that holds it, e.g. dtype=tg.float64"
        )


def _refuse_big_fill(n):
    raise OverflowError(
        f"tg.full: the integer fill_value {n} does not fit in int64, the dtype inferred for "
        "an integer (PyTorch raises too; NumPy's cast would wrap it around); pass it as a "
        "float (float(n)) or give dtype= explicitly"
    )


def zeros_like(
    input: ArrayLike,  # noqa: A002
    requires_grad: bool = False,
    *,
    dtype=None,
    layout=None,
    device=None,
    memory_format=None,
) -> Tensor:
    """A tensor of zeros shaped like ``input`` (a Tensor, array or nested list): float64, or
    integer or bool as an integer or bool Tensor or array ``input`` (as PyTorch's), or ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros_like(tg.ones(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
        >>> tg.zeros_like(tg.tensor([1, 2]))
        tensor([0, 0])
    """
    dtype = _checked_dtype(
        "zeros_like", dtype, requires_grad, None, layout, device, memory_format=memory_format
    )
    dtype = dtype or _dtype_of(input, requires_grad)
    return _make(np.zeros(_like_shape(input, "zeros_like")), requires_grad, dtype)


def ones_like(
    input: ArrayLike,  # noqa: A002
    requires_grad: bool = False,
    *,
    dtype=None,
    layout=None,
    device=None,
    memory_format=None,
) -> Tensor:
    """A tensor of ones shaped like ``input`` (a Tensor, array or nested list): float64, or
    integer or bool as an integer or bool Tensor or array ``input`` (as PyTorch's), or ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones_like([[1, 2, 3]])
        tensor([[1., 1., 1.]])
    """
    dtype = _checked_dtype(
        "ones_like", dtype, requires_grad, None, layout, device, memory_format=memory_format
    )
    dtype = dtype or _dtype_of(input, requires_grad)
    return _make(np.ones(_like_shape(input, "ones_like")), requires_grad, dtype)


def _like_shape(x, name):
    """The shape of ``x`` for ``tg.zeros_like`` / ``tg.ones_like``; None, a string or an
    array of strings, dates or complex numbers is refused, as PyTorch refuses what is not a
    tensor (their shape would have given a float tensor silently)."""
    if isinstance(x, Tensor):
        return np.shape(x._v)
    if x is None or isinstance(x, (str, bytes)):
        refuse_not_numbers(x, np.asarray(x).dtype, f"tg.{name}")
    kind = getattr(getattr(x, "dtype", None), "kind", "f")
    if kind == "c" or isinstance(x, complex):
        refuse_complex(f"tg.{name}: the argument")
    if kind in "USMmV":
        refuse_not_numbers(x, x.dtype, f"tg.{name}")
    return np.shape(x)


def _number(name, what, v):
    """A start / end / step argument: a Python or NumPy number, or a 0-d Tensor's value."""
    given = v
    if isinstance(v, Tensor):
        if np.ndim(v._v) != 0:
            raise TypeError(f"tg.{name}: {what} must be a number, got a Tensor of shape {v.shape}")
        v = v._v if v._v.__class__ is float else v._v[()]
    if isinstance(v, (np.generic, np.ndarray)) and np.ndim(v) == 0:
        v = v.item()
    if isinstance(v, complex):
        refuse_complex(f"tg.{name}: {what} {v!r}")
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, numbers.Real)):
        raise TypeError(f"tg.{name}: {what} must be a number, got {type(given).__name__} {given!r}")
    return v


def arange(
    start: float = 0,
    stop: float | None = None,
    step: float = 1,
    requires_grad: bool = False,
    *,
    end: float | None = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
) -> Tensor:
    """PyTorch's ``torch.arange`` (and NumPy's ``arange``): evenly spaced values in
    ``[start, end)`` (``end`` also as NumPy's ``stop``; ``arange(end)`` from 0).

    Integer arguments give an int64 tensor, unless ``requires_grad`` (then float64); with an
    integer ``dtype`` the arguments are truncated to integers first, as PyTorch's.  A step
    whose sign points away from ``end`` gives an empty Tensor (NumPy's; PyTorch raises).

    Examples:
        >>> import tapegrad as tg
        >>> tg.arange(4)
        tensor([0, 1, 2, 3])
        >>> tg.arange(1, 2, 0.25)
        tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    dt = _checked_dtype("arange", dtype, requires_grad, out, layout, device)
    if end is not None:
        if stop is not None:
            raise TypeError("tg.arange: give end (or NumPy's stop), not both")
        stop = end
    if stop is None:
        start, stop = 0, start
    start, stop, step = (
        _number("arange", w, v) for w, v in zip(_ARANGE, (start, stop, step), strict=True)
    )
    ints = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
    if dt is not None and dt.kind == "b":
        raise NotImplementedError("tg.arange: not implemented for dtype bool (as PyTorch)")
    if dt is not None and dt.kind in "iu":  # PyTorch casts the arguments first
        start, stop, step = (math.trunc(v) for v in (start, stop, step))
    if step == 0:  # (NumPy: a bare division by zero)
        raise ValueError("tg.arange: step must be nonzero (PyTorch raises too)")
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise RuntimeError(f"tg.arange: unsupported range {start} -> {stop} (step {step})")
    a = np.arange(start, stop, step)
    if dt is None:
        dt = np.dtype(np.int64 if ints and not requires_grad else np.float64)
    return new_tensor(a.astype(dt), requires_grad=requires_grad, dtype=dt)


_ARANGE = ("start", "end", "step")


def linspace(
    start: float,
    end: float | None = None,
    steps: int | None = None,
    requires_grad: bool = False,
    *,
    stop: float | None = None,
    num: int | None = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
) -> Tensor:
    """PyTorch's ``torch.linspace``: ``steps`` evenly spaced values from ``start`` to ``end``
    inclusive, float64 unless ``dtype`` (NumPy's names ``stop=`` and ``num=`` too; 50 values
    unless told).

    Examples:
        >>> import tapegrad as tg
        >>> tg.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
        >>> tg.linspace(0, 10, steps=3)
        tensor([ 0.,  5., 10.])
    """
    dt = _checked_dtype("linspace", dtype, requires_grad, out, layout, device)
    end = _one_of("end", end, "stop", stop)
    steps = _one_of("steps", steps, "num", num)
    if end is None:
        raise TypeError("tg.linspace: give the end value, e.g. tg.linspace(0, 1, steps=5)")
    start, end = _number("linspace", "start", start), _number("linspace", "end", end)
    n = 50 if steps is None else _int_arg("linspace", "steps", steps)
    if n < 0:
        raise RuntimeError(f"tg.linspace: number of steps must be non-negative, got {n}")
    if dt is not None and dt.kind == "b":
        raise NotImplementedError("tg.linspace: not implemented for dtype bool (as PyTorch)")
    values = np.linspace(start, end, n)
    return _make(values, requires_grad, dt, "tg.linspace: the values")


def _one_of(name, value, other_name, other_value):
    """PyTorch's argument ``name`` or NumPy's ``other_name`` (one of them)."""
    if other_value is None:
        return value
    if value is not None:
        raise TypeError(f"tg.linspace: give {name} or {other_name}=, not both")
    return other_value


def eye(
    n: int,
    m: int | None = None,
    requires_grad: bool = False,
    *,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
) -> Tensor:
    """PyTorch's ``torch.eye``: an ``n`` x ``m`` tensor with ones on the diagonal (``m``
    defaults to ``n``), float64 unless ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    dt = _checked_dtype("eye", dtype, requires_grad, out, layout, device)
    n = _int_arg("eye", "n", n, 0)
    m = n if m is None else _int_arg("eye", "m", m, 0)
    return _make(np.eye(n, m), requires_grad, dt)


def randn(
    *shape: int,
    size: Sequence[int] | None = None,
    generator: "Generator | np.random.Generator | None" = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """PyTorch's ``torch.randn``: standard normal samples (float64 unless ``dtype``) from
    tapegrad's generator (see ``manual_seed``) or ``generator``.

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> tg.randn(2, 3).shape
        (2, 3)
    """
    _options("randn", out, layout, device, pin_memory)
    dt = _random_dtype("randn", dtype)
    shape = _size("randn", shape, size)
    draws = _generator("randn", generator).standard_normal(shape)
    return new_tensor(draws.astype(dt), requires_grad=requires_grad, dtype=dt)


def rand(
    *shape: int,
    size: Sequence[int] | None = None,
    generator: "Generator | np.random.Generator | None" = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """PyTorch's ``torch.rand``: uniform samples in ``[0, 1)`` (float64 unless ``dtype``)
    from tapegrad's generator (see ``manual_seed``) or ``generator``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.rand(4)
        >>> 0.0 <= float(x.min()) and float(x.max()) < 1.0
        True
    """
    _options("rand", out, layout, device, pin_memory)
    dt = _random_dtype("rand", dtype)
    shape = _size("rand", shape, size)
    draws = _generator("rand", generator).random(shape)
    if dt != np.float64:  # (a draw just below 1 rounds up to 1.0 in float32)
        draws = np.minimum(draws.astype(dt), np.nextafter(dt.type(1), dt.type(0)))
    return new_tensor(draws.astype(dt), requires_grad=requires_grad, dtype=dt)


def randint(
    low: int = 0,
    high: int | None = None,
    size: Sequence[int] | None = None,
    *,
    generator: "Generator | np.random.Generator | None" = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """PyTorch's ``torch.randint``: random integers in ``[low, high)`` of ``size``
    (``tg.randint(high, size)`` from 0), an int64 Tensor unless ``dtype``, drawn from
    tapegrad's generator (``tg.manual_seed``) or ``generator``.

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> x = tg.randint(0, 10, (3,)); x.shape, x.dtype, bool(((x >= 0) & (x < 10)).all())
        ((3,), dtype('int64'), True)
    """
    _options("randint", out, layout, device, pin_memory)
    if size is None:
        if not isinstance(high, (tuple, list)) and type(high).__name__ != "Size":
            raise TypeError("tg.randint: give size, e.g. tg.randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if not isinstance(size, (tuple, list)) and type(size).__name__ != "Size":
        raise TypeError(
            f"tg.randint: size must be a tuple of ints, got {size!r} (PyTorch raises too); "
            "e.g. tg.randint(0, 10, (3,))"
        )
    shape = _size("randint", (tuple(size),))
    low, high = _int_arg("randint", "low", low), _int_arg("randint", "high", high)
    if low >= high:
        raise RuntimeError(
            f"tg.randint: expects low to be less than high, but got low={low} >= high={high}"
        )
    dt = _as_dtype("randint", dtype) or np.dtype(np.int64)
    _float_only("randint", dt, requires_grad)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise RuntimeError(f"tg.randint: [{low}, {high}) does not fit in {dt}")
    elif dt.kind == "b" and (low < 0 or high > 2):
        raise RuntimeError(f"tg.randint: [{low}, {high}) does not fit in bool")
    draws = _generator("randint", generator).integers(low, high, size=shape, dtype=np.int64)
    return new_tensor(draws.astype(dt), requires_grad=requires_grad, dtype=dt)


def randperm(
    n: int,
    *,
    generator: "Generator | np.random.Generator | None" = None,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """PyTorch's ``torch.randperm``: a random permutation of ``0 .. n-1``, an int64 Tensor
    unless ``dtype`` (tapegrad's generator, or ``generator``).

    Examples:
        >>> import tapegrad as tg
        >>> sorted(tg.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    _options("randperm", out, layout, device, pin_memory)
    n = _int_arg("randperm", "n", n)
    if n < 0:
        raise RuntimeError(f"tg.randperm: n must be non-negative, got {n} (PyTorch raises too)")
    dt = _as_dtype("randperm", dtype) or np.dtype(np.int64)
    _float_only("randperm", dt, requires_grad)
    if dt.kind in "iu" and n - 1 > np.iinfo(dt).max or dt.kind == "b" and n > 2:
        raise RuntimeError(f"tg.randperm: n = {n} is too large for dtype {dt}")
    out_ = _generator("randperm", generator).permutation(n).astype(dt)
    return new_tensor(out_, requires_grad=requires_grad, dtype=dt)


def leaf_copy(t, memo):
    """``copy.deepcopy(t, memo)`` for a module's or optimizer's tensor: a new leaf with a copy
    of the value, the same ``requires_grad`` and attributes (the parameter mark), as pickling
    makes it.  A tensor that is not a leaf, or that stands for a value being differentiated
    by a transform, is copied as ``copy.deepcopy`` copies any tensor (a differentiable copy
    there)."""
    if id(t) in memo:
        return memo[id(t)]
    if not t.is_leaf or (t._rg and STATE.transforms and _stands_in(t)):
        return copy.deepcopy(t, memo)
    v = t._v
    out = type(t)(v if v.__class__ is float else np.array(v), requires_grad=bool(t._rg))
    state = getattr(t, "__dict__", None)
    if state:
        out.__dict__.update(copy.deepcopy(state, memo))
    memo[id(t)] = out
    return out


# ---- more of PyTorch's constructors and random draws -------------------------------------------


def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    *,
    out: None = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """PyTorch's ``torch.logspace``: ``steps`` values ``base ** linspace(start, end, steps)``,
    float64 unless ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.logspace(0, 2, 3), tg.logspace(0, 2, 3, base=2)
        (tensor([  1.,  10., 100.]), tensor([1., 2., 4.]))
    """
    dtype = _checked_dtype("logspace", dtype, requires_grad, out, layout, device)
    if isinstance(steps, bool) or not isinstance(steps, (numbers.Integral, np.integer)):
        raise TypeError(f"logspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    with np.errstate(over="ignore"):
        values = np.power(float(base), np.linspace(float(start), float(end), int(steps)))
    if dtype is not None and np.dtype(dtype).kind in "iub":
        if not np.all(np.isfinite(values)) or (np.abs(values) >= 2.0**63).any():
            raise RuntimeError(
                f"logspace: the values do not fit in {np.dtype(dtype)} (up to {values.max()})"
            )
    return _make(values, requires_grad, dtype, "tg.logspace: the values")


def _like(x, name, dtype, requires_grad, layout=None, device=None, memory_format=None):
    """The shape and dtype of a ``*_like`` result (``x``'s, tapegrad's float64 for a float
    one, or ``dtype``); PyTorch's ``layout``, ``device`` and ``memory_format`` checked."""
    _options(name, None, layout, device, memory_format=memory_format)
    shape = _like_shape(x, name)
    dt = _as_dtype(name, dtype) if dtype is not None else np.dtype(_dtype_of(x, False))
    if requires_grad and dt.kind != "f":
        raise RuntimeError(
            f"tg.{name}: only Tensors of floating point dtype can require gradients; got "
            f"{dt}; give dtype=tg.float64"
        )
    return shape, dt


def full_like(
    input: ArrayLike,  # noqa: A002
    fill_value: float,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.full_like``: a Tensor shaped like ``input`` filled with ``fill_value``,
    of ``input``'s dtype (float64 for a float one) unless ``dtype``: a float value in an integer
    Tensor is truncated toward zero, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.full_like(tg.zeros(2), 7.0), tg.full_like(tg.tensor([1, 2]), 2.7)
        (tensor([7., 7.]), tensor([2, 2]))
    """
    shape, dt = _like(input, "full_like", dtype, requires_grad, layout, device, memory_format)
    value = (
        scalar_argument(fill_value, "tg.full_like: fill_value")
        if not isinstance(fill_value, (bool, np.bool_, numbers.Integral))
        else fill_value
    )
    if dt.kind in "iu" and isinstance(value, float):
        info = np.iinfo(dt)
        if not (math.isfinite(value) and info.min <= math.trunc(value) <= info.max):
            raise RuntimeError(
                f"tg.full_like: the value {value} cannot be converted to {dt} without "
                "overflow (PyTorch raises too); give dtype=tg.float64"
            )
        value = math.trunc(value)
    if (
        dt.kind in "iu"
        and not isinstance(value, float)
        and not (np.iinfo(dt).min <= int(value) <= np.iinfo(dt).max)
    ):
        raise RuntimeError(
            f"tg.full_like: the value {value} cannot be converted to {dt} without overflow"
        )
    _fill_fits("full_like", value, dt)
    return new_tensor(np.full(shape, value, dtype=dt), requires_grad=requires_grad, dtype=dt)


def empty_like(
    input: ArrayLike,  # noqa: A002
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.empty_like``: a Tensor shaped like ``input`` of its dtype (float64 for a
    float one) or ``dtype``, filled with zeros (tapegrad never hands out uninitialised
    memory).

    Examples:
        >>> import tapegrad as tg
        >>> tg.empty_like(tg.ones(2, 3)).shape
        (2, 3)
    """
    shape, dt = _like(input, "empty_like", dtype, requires_grad, layout, device, memory_format)
    return new_tensor(np.zeros(shape, dtype=dt), requires_grad=requires_grad, dtype=dt)


def _random_like(x, name, dtype, requires_grad, layout, device, memory_format):
    shape, dt = _like(x, name, dtype, requires_grad, layout, device, memory_format)
    if dt.kind != "f":
        raise NotImplementedError(
            f"tg.{name}: draws floats, but the result dtype is {dt} (PyTorch refuses it too); "
            "give dtype=tg.float64"
        )
    return shape, dt


def rand_like(
    input: ArrayLike,  # noqa: A002
    *,
    generator: "Generator | np.random.Generator | None" = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.rand_like``: uniform draws in [0, 1) shaped like ``input`` (float64;
    tapegrad's generator, see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.rand_like(tg.zeros(2, 3)).shape
        (2, 3)
    """
    shape, dt = _random_like(
        input, "rand_like", dtype, requires_grad, layout, device, memory_format
    )
    draws = _generator("rand_like", generator).random(shape)
    return new_tensor(draws.astype(dt), requires_grad=requires_grad, dtype=dt)


def randn_like(
    input: ArrayLike,  # noqa: A002
    *,
    generator: "Generator | np.random.Generator | None" = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.randn_like``: standard normal draws shaped like ``input`` (float64;
    tapegrad's generator, see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.randn_like(tg.zeros(4)).shape
        (4,)
    """
    shape, dt = _random_like(
        input, "randn_like", dtype, requires_grad, layout, device, memory_format
    )
    draws = _generator("randn_like", generator).standard_normal(shape)
    return new_tensor(draws.astype(dt), requires_grad=requires_grad, dtype=dt)


def randint_like(
    input: ArrayLike,  # noqa: A002
    low: int = 0,
    high: int | None = None,
    *,
    generator: "Generator | np.random.Generator | None" = None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """PyTorch's ``torch.randint_like``: random integers in [low, high) shaped like ``input``
    (``randint_like(input, high)`` from 0), of ``input``'s dtype (float64 for a float one: integer
    values) unless ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> v = tg.randint_like(tg.tensor([0, 0, 0]), 3, 5)
        >>> v.dtype, bool(((v >= 3) & (v < 5)).all())
        (dtype('int64'), True)
    """
    if high is None:
        low, high = 0, low
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"tg.randint_like: {name} must be an int, got {v!r}")
    if low >= high:
        raise RuntimeError(
            f"tg.randint_like: expects low to be less than high, but got low={low} >= high={high}"
        )
    shape, dt = _like(input, "randint_like", dtype, requires_grad, layout, device, memory_format)
    gen = _generator("randint_like", generator)
    values = gen.integers(int(low), int(high), size=shape, dtype=np.int64)
    return new_tensor(values.astype(dt), requires_grad=requires_grad, dtype=dt)


def _tri_indices(name, pick, row, col, offset, dtype):
    for what, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"tg.{name}: {what} must be an int, got {v!r}")
    if row < 0 or col < 0:
        raise RuntimeError(f"tg.{name}: {'row' if row < 0 else 'col'} must be non-negative")
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise RuntimeError(f"tg.{name}: dtype must be an integer dtype, got {dt}")
    i, j = pick(int(row), int(offset), int(col))
    return new_tensor(np.stack([i, j]).astype(dt).reshape(2, -1))


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None
) -> Tensor:
    """PyTorch's ``torch.tril_indices``: the (2, N) int64 row and column indices of the lower
    triangle of a ``row`` x ``col`` matrix (and ``offset`` diagonals above it), row by row.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tril_indices(2, 2)
        tensor([[0, 1, 1],
                [0, 0, 1]])
    """
    _options("tril_indices", layout=layout, device=device)
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None
) -> Tensor:
    """PyTorch's ``torch.triu_indices``: the (2, N) int64 row and column indices of the upper
    triangle of a ``row`` x ``col`` matrix (from ``offset`` diagonals above the main one).

    Examples:
        >>> import tapegrad as tg
        >>> tg.triu_indices(2, 2)
        tensor([[0, 0, 1],
                [0, 1, 1]])
    """
    _options("triu_indices", layout=layout, device=device)
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


def multinomial(
    input: Tensor,  # noqa: A002
    num_samples: int,
    replacement: bool = False,
    *,
    generator: "Generator | np.random.Generator | None" = None,
) -> Tensor:
    """PyTorch's ``torch.multinomial``: ``num_samples`` category indices drawn with the
    (unnormalised, non-negative) weights ``input`` of each row of a 1-d or 2-d Tensor, with
    or without replacement; an int64 Tensor (tapegrad's generator, see ``manual_seed``).
    Without replacement, categories of weight 0 come only after all the others.

    Examples:
        >>> import tapegrad as tg
        >>> tg.multinomial(tg.tensor([0.0, 1.0]), 1)
        tensor([1])
    """
    g = _generator("multinomial", generator)
    w = np.asarray(input._v if isinstance(input, Tensor) else input)
    if w.dtype.kind != "f":
        raise RuntimeError(
            f"tg.multinomial only supports floating-point dtypes for input, got {w.dtype}"
        )
    if w.ndim not in (1, 2):
        raise RuntimeError(f"tg.multinomial: prob_dist must be 1 or 2 dim, got {w.ndim}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (numbers.Integral,)):
        raise TypeError(f"tg.multinomial: num_samples must be an int, got {num_samples!r}")
    if num_samples <= 0:
        raise RuntimeError(
            f"tg.multinomial: cannot sample n_sample <= 0 samples (got {num_samples})"
        )
    k = w.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError(
            f"tg.multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
            f"replacement ({num_samples} > {k})"
        )
    rows = np.atleast_2d(w).astype(np.float64)
    if not np.all(np.isfinite(rows)) or (rows < 0).any():
        raise RuntimeError(
            "tg.multinomial: probability tensor contains either `inf`, `nan` or element < 0"
        )
    totals = rows.sum(axis=1)
    if (totals <= 0).any():
        raise RuntimeError(
            "tg.multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    out = np.empty((rows.shape[0], int(num_samples)), dtype=np.int64)
    for r, (row, total) in enumerate(zip(rows, totals, strict=True)):
        if replacement:
            out[r] = g.choice(k, size=int(num_samples), p=row / total)
        else:  # the largest weight / Exp(1) keys: a draw without replacement, zeros last
            keys = row / g.exponential(size=k)
            out[r] = np.argsort(-keys, kind="stable")[: int(num_samples)]
    return new_tensor(out if w.ndim == 2 else out[0])
