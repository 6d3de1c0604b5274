"""Tensor constructors (``tg.tensor``, ``tg.zeros`` ...) and the global random seed."""

import copy
import math
import numbers

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
    _rng[0] = np.random.default_rng(seed)
    return _rng[0]


def rng():
    """tapegrad's ``numpy.random.Generator`` (the one ``manual_seed`` replaces)."""
    return _rng[0]


def tensor(data: ArrayLike, requires_grad: bool = False, dtype=None) -> Tensor:
    """A new leaf tensor holding a copy of ``data``; float data becomes float64.

    Only floating point tensors can require gradients.

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
    return new_tensor(np.asarray(arr, dtype=dtype or np.float64), requires_grad=requires_grad)


def _dtype_of(x, requires_grad):
    """PyTorch's default dtype of a ``*_like`` result: an integer or bool Tensor's or array's
    own, else float64 (tapegrad's float, and that of a result that requires grad)."""
    v = x._v if isinstance(x, Tensor) else x
    if requires_grad or not isinstance(v, np.ndarray) or v.dtype.kind not in "iub":
        return np.float64
    return v.dtype


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def zeros(*shape: int, requires_grad: bool = False, dtype=None) -> Tensor:
    """A tensor of zeros (float64 unless ``dtype``); ``shape`` as separate integers or one
    tuple.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
        >>> tg.zeros((2,), requires_grad=True)
        tensor([0., 0.], requires_grad=True)
    """
    return _make(np.zeros(_shape(shape)), requires_grad, dtype)


def ones(*shape: int, requires_grad: bool = False, dtype=None) -> Tensor:
    """A tensor of ones (float64 unless ``dtype``); ``shape`` as separate integers or one
    tuple.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones(3), tg.ones(2, dtype=tg.int64)
        (tensor([1., 1., 1.]), tensor([1, 1]))
    """
    return _make(np.ones(_shape(shape)), requires_grad, dtype)


def full(
    shape: int | tuple[int, ...], fill_value: float, requires_grad: bool = False, *, dtype=None
) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``: float64 for a float value, and, as
    PyTorch infers it, int64 for an int and bool for a bool (unless ``dtype`` or
    ``requires_grad``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.full((2,), 7.0), tg.full((2,), 7)
        (tensor([7., 7.]), tensor([7, 7]))
    """
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
    return _make(np.full(shape, fill_value), requires_grad, dtype, what)


def _refuse_big_fill(n):
    raise OverflowError(
        f"tg.full: the integer fill_value {n} does not fit in int64, the dtype inferred for "
        "an integer (PyTorch raises too; NumPy's cast would wrap it around); pass it as a "
        "float (float(n)) or give dtype= explicitly"
    )


def zeros_like(x: ArrayLike, requires_grad: bool = False, *, dtype=None) -> Tensor:
    """A tensor of zeros shaped like ``x`` (a Tensor, array or nested list): float64, or
    integer or bool as an integer or bool Tensor or array ``x`` (as PyTorch's), or ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.zeros_like(tg.ones(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
        >>> tg.zeros_like(tg.tensor([1, 2]))
        tensor([0, 0])
    """
    dtype = dtype or _dtype_of(x, requires_grad)
    return _make(np.zeros(_like_shape(x, "zeros_like")), requires_grad, dtype)


def ones_like(x: ArrayLike, requires_grad: bool = False, *, dtype=None) -> Tensor:
    """A tensor of ones shaped like ``x`` (a Tensor, array or nested list): float64, or
    integer or bool as an integer or bool Tensor or array ``x`` (as PyTorch's), or ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.ones_like([[1, 2, 3]])
        tensor([[1., 1., 1.]])
    """
    dtype = dtype or _dtype_of(x, requires_grad)
    return _make(np.ones(_like_shape(x, "ones_like")), requires_grad, dtype)


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


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    requires_grad: bool = False,
    *,
    dtype=None,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` like ``numpy.arange``.

    Integer arguments give an int64 tensor, unless ``requires_grad`` (then float64).

    Examples:
        >>> import tapegrad as tg
        >>> tg.arange(4)
        tensor([0, 1, 2, 3])
        >>> tg.arange(1, 2, 0.25)
        tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    if not isinstance(step, np.ndarray) and step == 0:  # (NumPy: a bare division by zero)
        raise ValueError("tg.arange: step must be nonzero (PyTorch raises too)")
    a = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if dtype is not None:
        a = a.astype(dtype)
    elif requires_grad or a.dtype.kind == "f":
        a = a.astype(np.float64)
    return new_tensor(a, requires_grad=requires_grad)


def linspace(
    start: float,
    stop: float | None = None,
    num: int | None = None,
    requires_grad: bool = False,
    *,
    end: float | None = None,
    steps: int | None = None,
    dtype=None,
) -> Tensor:
    """``num`` evenly spaced float64 values from ``start`` to ``stop`` inclusive (PyTorch's
    names ``end=`` and ``steps=`` too; 50 values unless told).

    Examples:
        >>> import tapegrad as tg
        >>> tg.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
        >>> tg.linspace(0, 10, steps=3)
        tensor([ 0.,  5., 10.])
    """
    stop = _one_of("stop", stop, "end", end)
    num = _one_of("num", num, "steps", steps)
    if stop is None:
        raise TypeError("linspace: give the end value, e.g. tg.linspace(0, 1, steps=5)")
    values = np.linspace(start, stop, 50 if num is None else num)
    return _make(values, requires_grad, dtype, "tg.linspace: the values")


def _one_of(name, value, torch_name, torch_value):
    """NumPy's argument ``name`` or PyTorch's ``torch_name`` (one of them)."""
    if torch_value is None:
        return value
    if value is not None:
        raise TypeError(f"linspace: give {name} or {torch_name}=, not both")
    return torch_value


def eye(n: int, m: int | None = None, requires_grad: bool = False) -> Tensor:
    """An ``n`` x ``m`` float64 tensor with ones on the diagonal (``m`` defaults to ``n``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _make(np.eye(n, m), requires_grad)


def randn(*shape: int, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from tapegrad's generator (see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> tg.randn(2, 3).shape
        (2, 3)
    """
    return _make(rng().standard_normal(_shape(shape)), requires_grad)


def rand(*shape: int, requires_grad: bool = False) -> Tensor:
    """Uniform samples in ``[0, 1)`` from tapegrad's generator (see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.rand(4)
        >>> 0.0 <= float(x.min()) and float(x.max()) < 1.0
        True
    """
    return _make(rng().random(_shape(shape)), requires_grad)


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
    dtype=None,
    requires_grad: bool = False,
) -> Tensor:
    """PyTorch's ``torch.logspace``: ``steps`` values ``base ** linspace(start, end, steps)``,
    float64 unless ``dtype``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.logspace(0, 2, 3), tg.logspace(0, 2, 3, base=2)
        (tensor([  1.,  10., 100.]), tensor([1., 2., 4.]))
    """
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


def _like(x, name, dtype, requires_grad):
    """The shape and dtype of a ``*_like`` result (``x``'s, tapegrad's float64 for a float
    one, or ``dtype``)."""
    shape = _like_shape(x, name)
    dt = np.dtype(dtype) if dtype is not None else np.dtype(_dtype_of(x, False))
    if requires_grad and dt.kind != "f":
        raise RuntimeError(
            f"tg.{name}: only Tensors of floating point dtype can require gradients; got "
            f"{dt}; give dtype=tg.float64"
        )
    return shape, dt


def full_like(x: ArrayLike, fill_value: float, *, dtype=None, requires_grad: bool = False):
    """PyTorch's ``torch.full_like``: a Tensor shaped like ``x`` filled with ``fill_value``,
    of ``x``'s dtype (float64 for a float one) unless ``dtype``: a float value in an integer
    Tensor is truncated toward zero, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.full_like(tg.zeros(2), 7.0), tg.full_like(tg.tensor([1, 2]), 2.7)
        (tensor([7., 7.]), tensor([2, 2]))
    """
    shape, dt = _like(x, "full_like", dtype, requires_grad)
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
    return new_tensor(np.full(shape, value, dtype=dt), requires_grad=requires_grad)


def empty_like(x: ArrayLike, *, dtype=None, requires_grad: bool = False) -> Tensor:
    """PyTorch's ``torch.empty_like``: a Tensor shaped like ``x`` of its dtype (float64 for a
    float one) or ``dtype``, filled with zeros (tapegrad never hands out uninitialised
    memory).

    Examples:
        >>> import tapegrad as tg
        >>> tg.empty_like(tg.ones(2, 3)).shape
        (2, 3)
    """
    shape, dt = _like(x, "empty_like", dtype, requires_grad)
    return new_tensor(np.zeros(shape, dtype=dt), requires_grad=requires_grad)


def _random_like(x, name, dtype, requires_grad):
    shape, dt = _like(x, name, dtype, requires_grad)
    if dt.kind != "f":
        raise NotImplementedError(
            f"tg.{name}: draws floats, but the result dtype is {dt} (PyTorch refuses it too); "
            "give dtype=tg.float64"
        )
    return shape, dt


def rand_like(x: ArrayLike, *, dtype=None, requires_grad: bool = False) -> Tensor:
    """PyTorch's ``torch.rand_like``: uniform draws in [0, 1) shaped like ``x`` (float64;
    tapegrad's generator, see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.rand_like(tg.zeros(2, 3)).shape
        (2, 3)
    """
    shape, dt = _random_like(x, "rand_like", dtype, requires_grad)
    return new_tensor(rng().random(shape).astype(dt), requires_grad=requires_grad)


def randn_like(x: ArrayLike, *, dtype=None, requires_grad: bool = False) -> Tensor:
    """PyTorch's ``torch.randn_like``: standard normal draws shaped like ``x`` (float64;
    tapegrad's generator, see ``manual_seed``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.randn_like(tg.zeros(4)).shape
        (4,)
    """
    shape, dt = _random_like(x, "randn_like", dtype, requires_grad)
    return new_tensor(rng().standard_normal(shape).astype(dt), requires_grad=requires_grad)


def randint_like(
    x: ArrayLike, low: int = 0, high: int | None = None, *, dtype=None, requires_grad=False
) -> Tensor:
    """PyTorch's ``torch.randint_like``: random integers in [low, high) shaped like ``x``
    (``randint_like(x, high)`` from 0), of ``x``'s dtype (float64 for a float one: integer
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
    shape, dt = _like(x, "randint_like", dtype, requires_grad)
    values = rng().integers(int(low), int(high), size=shape, dtype=np.int64)
    return new_tensor(values.astype(dt), requires_grad=requires_grad)


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


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None) -> Tensor:
    """PyTorch's ``torch.tril_indices``: the (2, N) int64 row and column indices of the lower
    triangle of a ``row`` x ``col`` matrix (and ``offset`` diagonals above it), row by row.

    Examples:
        >>> import tapegrad as tg
        >>> tg.tril_indices(2, 2)
        tensor([[0, 1, 1],
                [0, 0, 1]])
    """
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None) -> Tensor:
    """PyTorch's ``torch.triu_indices``: the (2, N) int64 row and column indices of the upper
    triangle of a ``row`` x ``col`` matrix (from ``offset`` diagonals above the main one).

    Examples:
        >>> import tapegrad as tg
        >>> tg.triu_indices(2, 2)
        tensor([[0, 0, 1],
                [0, 1, 1]])
    """
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


def multinomial(
    input: Tensor,  # noqa: A002
    num_samples: int,
    replacement: bool = False,
    *,
    generator=None,
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
    if generator is not None:
        raise TypeError("tg.multinomial: generator= is not supported; seed with tg.manual_seed")
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
    g = rng()
    out = np.empty((rows.shape[0], int(num_samples)), dtype=np.int64)
    for r, (row, total) in enumerate(zip(rows, totals, strict=True)):
        if replacement:
            out[r] = g.choice(k, size=int(num_samples), p=row / total)
        else:  # the largest weight / Exp(1) keys: a draw without replacement, zeros last
            keys = row / g.exponential(size=k)
            out[r] = np.argsort(-keys, kind="stable")[: int(num_samples)]
    return new_tensor(out if w.ndim == 2 else out[0])
