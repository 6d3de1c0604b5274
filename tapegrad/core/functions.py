"""The differentiable functions: each records one op row of the spec (``tapegrad/ops``), or
is composed from functions that do.

An op's derivatives are not written here: the spec declares them once, and the generated
kernels, create_graph and forward mode all read that declaration.  Elementwise functions
take their forward from the spec's formula; structural ones (reductions, views, matmul,
concatenate, indexing) prepare the integer parameters their kernels read.
"""

import functools
import math
import numbers
import warnings

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..ops import formula
from ..ops.spec import C
from .tensor import (
    STATE,
    TensorBase as Tensor,
    needs_grad,
    record,
    record_binary,
    record_unary,
    result,
    row_of,
    scalar_argument,
    tape_for,
    value_of,
)

# type hints of the public functions: a Tensor or anything NumPy turns into an array
TensorLike = Tensor | ArrayLike
Axis = int | tuple[int, ...] | None


# ---- elementwise ---------------------------------------------------------------------------


from .elementwise import (  # noqa: E402, F401
    as_shape,
    _binary,
    _broadcast_params,
    _ieee,
    _shape,
    contiguous_strides,
    exact_operands,
    numpy_exact,
    refuse_integer_zero,
    same_or_scalar,
)
from .ufuncs import *  # noqa: E402, F403 (the elementwise functions and scans, generated from the spec)
from .scans import scan  # noqa: E402, F401  (the scans' Tensor-level rules record with it)
from .ufuncs import (  # noqa: E402
    abs_,
    exp,
    floor,
    log,
    maximum,
    minimum,
    remainder,
    rint,
    sqrt,
)

# Special functions (SciPy's values; derivatives closed under differentiation: gammaln' =
# digamma, digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .)).
_polygamma_math = formula.python_function("polygamma(c, a)", ("a", "c"), "math")
_polygamma_numpy = formula.python_function("polygamma(c, a)", ("a", "c"), "numpy")


def polygamma(n, x):
    """The n-th derivative of digamma (n a whole number >= 0, not differentiated).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5, 3.0], requires_grad=True)
        >>> y = tg.polygamma(1, x); y                  # pi**2 / 2 at 0.5
        tensor([4.9348, 0.3949], grad_fn=<PolygammaBackward0>)
        >>> y.sum().backward(); x.grad                 # polygamma(2, x)
        tensor([-16.8288, -0.1541])
    """
    if isinstance(n, Tensor) or np.ndim(n) or float(n) != int(n) or n < 0:
        raise ValueError(
            f"polygamma: the order n must be one whole number >= 0 (got {n!r}); "
            "loop over orders for several"
        )
    return _scalar_op(tensor_of(x), C.POLYGAMMA, _polygamma_math, _polygamma_numpy, float(n))


def _scalar_op(x, code, out_float, out_array, c):
    v = x._v
    if v.__class__ is float:
        try:
            out = out_float(v, c)
        except (ZeroDivisionError, OverflowError, ValueError):
            with np.errstate(all="ignore"):
                out = float(out_array(np.float64(v), c))
    else:
        out = out_array(v if v.dtype == np.float64 else v.astype(np.float64), c)
    return record_unary(x, code, out, c)


def leaky_relu(x: TensorLike, negative_slope: float = 0.01) -> Tensor:
    """ReLU that keeps a small slope for x < 0, so negative inputs still get a gradient.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-2.0, 3.0], requires_grad=True)
        >>> y = tg.leaky_relu(x, 0.1); y
        tensor([-0.2000, 3.0000], grad_fn=<LeakyReluBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0.1000, 1.0000])
    """
    x = tensor_of(x)
    c = scalar_argument(negative_slope, "leaky_relu: negative_slope")
    return _scalar_op(
        x,
        C.LEAKY_RELU,
        lambda v, c: v if v > 0.0 else v * c,
        lambda v, c: np.where(v > 0.0, v, v * c),
        c,
    )


def clip(
    x: TensorLike, lo: float | ArrayLike | None = None, hi: float | ArrayLike | None = None
) -> Tensor:
    """Limit values to [lo, hi] (np.clip); the gradient is 1 inside and 0 where a bound holds.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-2.0, 0.5, 3.0], requires_grad=True)
        >>> y = tg.clip(x, -1.0, 1.0); y
        tensor([-1.0000, 0.5000, 1.0000], grad_fn=<ClampBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0., 1., 0.])
    """
    x = tensor_of(x)
    if isinstance(lo, Tensor) or isinstance(hi, Tensor) or np.ndim(lo) or np.ndim(hi):
        out = x
        if lo is not None:
            out = maximum(out, lo)
        if hi is not None:
            out = minimum(out, hi)
        return out
    lo = -math.inf if lo is None else scalar_argument(lo, "clip: the lower bound")
    hi = math.inf if hi is None else scalar_argument(hi, "clip: the upper bound")
    if lo > hi:
        raise ValueError(f"clip: lower bound {lo} is above upper bound {hi}")
    v = x._v
    out = min(max(v, lo), hi) if v.__class__ is float else np.clip(v, lo, hi)
    if not needs_grad(x):
        return Tensor._const(out)
    t = tape_for(x)
    ra = row_of(t, x)
    return record(t, C.CLIP, ra, -1, out, lo, t.add_float(hi))


# ---- binary with broadcasting -----------------------------------------------------------------


def tensor_of(x):
    return x if isinstance(x, Tensor) else Tensor._const(value_of(x))


def _is_scalar(y):
    c = y.__class__
    if c is float or c is int or c is np.float64:
        return True
    if isinstance(y, (Tensor, np.ndarray)):  # before the ABC check below, which is slow
        return False
    if isinstance(y, np.floating) and y.dtype.itemsize > 8:
        return False  # extended precision: value_of refuses it (float() would round it)
    return isinstance(y, (numbers.Real, np.floating, np.integer)) and not isinstance(y, bool)


def add(x: TensorLike, y: TensorLike) -> Tensor:
    """x + y with NumPy broadcasting; a broadcast operand's gradient is summed back to its shape.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.tensor(3.0, requires_grad=True)
        >>> z = tg.add(x, y); z
        tensor([4., 5.], grad_fn=<AddBackward0>)
        >>> z.sum().backward(); x.grad, y.grad
        (tensor([1., 1.]), tensor(2.))
    """
    if isinstance(x, Tensor) and isinstance(y, Tensor) and same_or_scalar(x._v, y._v):
        return record_binary(x, y, C.ADD, x._v + y._v)
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        return numpy_exact(np.add, x, y)
    if isinstance(x, Tensor) and _is_scalar(y) and not 0.0 < abs(float(y)) < _TINY:
        # recorded as x * (1 / c), which replays to a few ulp of x / c; not for a subnormal c,
        # whose reciprocal overflows (1e-300 / -1e-320 would replay as -inf, not -1e20)
        c = float(y)
        v = x._v
        return record_unary(x, C.ADDS, v + c, c)
    if isinstance(y, Tensor) and _is_scalar(x):
        return add(y, x)
    return _binary("add", C.ADD, x, y)


def sub(x: TensorLike, y: TensorLike) -> Tensor:
    """x - y with NumPy broadcasting (differentiable in both).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.tensor(3.0, requires_grad=True)
        >>> z = tg.sub(x, y); z
        tensor([-2., -1.], grad_fn=<SubBackward0>)
        >>> z.sum().backward(); x.grad, y.grad
        (tensor([1., 1.]), tensor(-2.))
    """
    if isinstance(x, Tensor) and isinstance(y, Tensor) and same_or_scalar(x._v, y._v):
        return record_binary(x, y, C.SUB, x._v - y._v)
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        return numpy_exact(np.subtract, x, y)
    if isinstance(x, Tensor) and _is_scalar(y):
        c = float(y)
        return record_unary(x, C.ADDS, x._v - c, -c)
    if isinstance(y, Tensor) and _is_scalar(x):
        c = float(x)
        return record_unary(y, C.RSUBS, c - y._v, c)
    return _binary("sub", C.SUB, x, y)


def mul(x: TensorLike, y: TensorLike) -> Tensor:
    """x * y with NumPy broadcasting (differentiable in both).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.tensor(3.0, requires_grad=True)
        >>> z = tg.mul(x, y); z
        tensor([3., 6.], grad_fn=<MulBackward0>)
        >>> z.sum().backward(); x.grad, y.grad
        (tensor([3., 3.]), tensor(3.))
    """
    if isinstance(x, Tensor) and isinstance(y, Tensor) and same_or_scalar(x._v, y._v):
        return record_binary(x, y, C.MUL, x._v * y._v)
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        return numpy_exact(np.multiply, x, y)
    if isinstance(x, Tensor) and _is_scalar(y):
        c = float(y)
        return record_unary(x, C.MULS, x._v * c, c)
    if isinstance(y, Tensor) and _is_scalar(x):
        return mul(y, x)
    return _binary("mul", C.MUL, x, y)


_TINY = float(np.finfo(np.float64).tiny)  # the smallest normal float64


def div(x: TensorLike, y: TensorLike) -> Tensor:
    """x / y with NumPy broadcasting; d/dy = -x / y**2.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.tensor(4.0, requires_grad=True)
        >>> z = tg.div(x, y); z
        tensor([0.2500, 0.5000], grad_fn=<DivBackward0>)
        >>> z.sum().backward(); x.grad, y.grad
        (tensor([0.2500, 0.2500]), tensor(-0.1875))
    """
    if (
        isinstance(x, Tensor)
        and isinstance(y, Tensor)
        and x._v.__class__ is float
        and y._v.__class__ is float
        and y._v != 0.0
    ):
        return record_binary(x, y, C.DIV, x._v / y._v)
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        return numpy_exact(np.true_divide, x, y)
    if isinstance(x, Tensor) and _is_scalar(y) and not 0.0 < abs(float(y)) < _TINY:
        # recorded as x * (1 / c), which replays to a few ulp of x / c; not for a subnormal c,
        # whose reciprocal overflows (1e-300 / -1e-320 would replay as -inf, not -1e20)
        c = float(y)
        v = x._v
        if v.__class__ is float:
            out = v / c if c != 0.0 else _ieee(lambda a: a / np.float64(c), v)
        else:
            out = v / c
        inv = 1.0 / c if c != 0.0 else math.copysign(math.inf, c)
        return record_unary(x, C.MULS, out, inv)
    if isinstance(y, Tensor) and _is_scalar(x):
        c = float(x)
        return _scalar_op(y, C.RDIVS, lambda v, c: c / v, lambda v, c: c / v, c)
    return _binary("div", C.DIV, x, y)


def power(x: TensorLike, y: TensorLike) -> Tensor:
    """x ** y elementwise (NumPy's value), differentiable in the base and the exponent.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.power(x, 3.0); y
        tensor([1., 8.], grad_fn=<PowBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([ 3., 12.])
    """
    tracked = isinstance(x, Tensor) and x._rg or isinstance(y, Tensor) and y._rg
    if not tracked and exact_operands(x, y):
        return numpy_exact(np.power, x, y)
    if isinstance(x, Tensor) and _is_scalar(y):
        c = float(y)
        return _scalar_op(
            x, C.POWS, lambda v, c: v**c if v >= 0.0 or c == int(c) else math.nan, np.power, c
        )
    if isinstance(y, Tensor) and _is_scalar(x) and float(x) != 0.0:
        c = float(x)  # (a zero base goes to POW, whose backward masks 0 ** y for y >= 0)
        return _scalar_op(
            y,  # (Python's float ** gives a complex number where NumPy gives NaN)
            C.RPOWS,
            lambda v, c: c**v if c > 0.0 or v == int(v) else math.nan,
            lambda v, c: np.power(c, v),
            c,
        )
    return _binary("pow", C.POW, x, y)


mod = remainder


def floor_divide(x1, x2):
    """NumPy's ``x1 // x2``: (x1 - x1 % x2) / x2 rounded to the integer it is, as NumPy's
    divmod computes it (composite); derivative 0 at every order."""
    if exact_operands(x1, x2):
        refuse_integer_zero("floor_divide", x1, x2)
        return numpy_exact(np.floor_divide, x1, x2)

    def masks(v, test):  # a comparison of v, guarded in a trace when v is a Tensor
        if isinstance(v, Tensor):
            return truth(test(v))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(test(np.asarray(v, dtype=np.float64)))

    zero = masks(x2, lambda v: v == 0.0)
    infinite = masks(x2, lambda v: abs(v) == np.inf)
    if not (zero.any() or infinite.any()):
        return _quotient(x1, x2)
    # by 0 or +-inf, NumPy's quotient follows from the signs alone: x // 0 is +-inf (nan for
    # 0 // 0 and NaN), a finite x // +-inf is -1 where their signs differ, else 0 (nan for
    # an infinite or NaN x); derivative 0.  Read from guarded comparisons (a replay with
    # other signs retraces), not divided, so no 0 / 0 or inf / inf reaches a derivative;
    # the rest divides by a safe 1 there
    pos, neg = masks(x1, lambda v: v > 0.0), masks(x1, lambda v: v < 0.0)
    finite = masks(x1, lambda v: abs(v) < np.inf)
    below = masks(x2, lambda v: v < 0.0) | masks(x2, lambda v: 1.0 / v < 0.0)  # -0.0 too
    at_zero = np.where(pos | neg, np.where(pos ^ below, np.inf, -np.inf), np.nan)
    opposite = (pos & below) | (neg & ~below)
    signed = neg | masks(x1, lambda v: 1.0 / v < 0.0)  # -0.0 too: NumPy's -0.0 // inf is -0.0
    at_inf = np.where(finite, np.where(opposite, -1.0, np.where(signed ^ below, -0.0, 0.0)), np.nan)
    safe = where(zero | infinite, 1.0, x2)
    return where(zero, at_zero, where(infinite, at_inf, _quotient(x1, safe)))


def _quotient(x1, x2):
    """floor(x1 / x2) for a finite non-zero x2, as NumPy's divmod: (x1 - x1 % x2) / x2 rounded
    to the integer it is, plus (x1 * 0) / x2, the zero with the sign of x1 / x2, which NumPy
    gives a zero quotient (the difference alone has a sign of its own: -0.5 // -0.75 gave
    -0.0); it changes no other value."""
    return add(rint(div(sub(x1, remainder(x1, x2)), x2)), div(mul(x1, 0.0), x2))


def divmod_(x1, x2):
    """np.divmod: (floor_divide, remainder)."""
    return floor_divide(x1, x2), remainder(x1, x2)


def truth(comparison) -> np.ndarray:
    """A comparison's outcome (a Tensor of 0.0 / 1.0, or a boolean array) as booleans: how a
    composite reads a mask from a comparison of Tensors, which a trace recording guards (a
    replay whose mask differs retraces instead of reusing the recorded one)."""
    return np.asarray(value_of(comparison)) != 0


def where(cond: ArrayLike, x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise choice; both branches are recorded, so it is safe to replay.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([-1.0, 2.0], requires_grad=True)
        >>> y = tg.where(x.numpy() > 0, x ** 2, 0.0); y
        tensor([0., 4.], grad_fn=<WhereBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0., 4.])
    """
    c = np.asarray(value_of(cond) if isinstance(cond, Tensor) else cond).astype(bool)
    xv, yv = value_of(x), value_of(y)
    out = result(np.where(c, xv, yv))
    if not needs_grad(x, y):
        return Tensor._const(out)
    t = tape_for(x, y)
    shape = _shape(out)
    ra = as_shape(t, tensor_of(x), shape)
    rb = as_shape(t, tensor_of(y), shape)
    rc = as_shape(t, Tensor._const(result(c.astype(np.float64))), shape)
    return record(t, C.WHERE, ra, rb, out, ip=t.add_ints([rc]))


# ---- shape ops --------------------------------------------------------------------------------


def normalize_axes(axis, ndim, op):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < max(ndim, 1):
            raise ValueError(f"{op}: axis {ax} is out of range for a tensor of {ndim} dims")
        out.append(ax % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def _reduce(name, code, x, axis, keepdims, np_fn):
    x = tensor_of(x)
    v = x._v
    shape = _shape(v)
    axes = normalize_axes(axis, len(shape), name)
    if not x._rg and exact_operands(x):  # (a Tensor needing grad is never exact: no call)
        return numpy_exact(_EXACT_REDUCE[code], x, axis=axes, keepdims=keepdims)
    if v.__class__ is float:
        out = v
    else:
        if v.size == 0 and code in (C.AMAX, C.AMIN) and any(shape[a] == 0 for a in axes):
            raise ValueError(
                f"{name}: zero-size reduction over axis {axis} of shape {shape} has no identity"
            )
        out = result(np_fn(v, axis=axes, keepdims=keepdims))
    if not needs_grad(x):
        return Tensor._const(out)
    t = tape_for(x)
    ra = row_of(t, x)
    return record(t, code, ra, -1, out, ip=t.add_ints(_reduce_params(shape, axes)))


@functools.lru_cache(maxsize=1024)
def _reduce_params(shape, axes):
    """A reduction row's parameters: ndim, the shape, and the output's strides over it (0 on
    the reduced axes); a tuple of ints, cached (a training loop asks for the same few)."""
    kept = [1 if d in axes else s for d, s in enumerate(shape)]
    cs = contiguous_strides(kept)
    ostr = [0 if d in axes else cs[d] for d in range(len(shape))]
    return (len(shape), *map(int, shape), *map(int, ostr))


_EXACT_REDUCE = {C.SUM: np.sum, C.PROD: np.prod, C.AMAX: np.max, C.AMIN: np.min}


def sum(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Sum of the elements (np.sum), over all axes or along ``axis``; its gradient is ones.

    Examples:
        >>> import tapegrad as tg
        >>> tg.sum(tg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0)
        tensor([4., 6.])
        >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> tg.sum(x).backward(); x.grad
        tensor([1., 1., 1.])
    """
    return _reduce("sum", C.SUM, x, axis, keepdims, np.add.reduce)


def prod(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Product of the elements (np.prod); exact gradients even with zeros among them.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> y = tg.prod(x); y
        tensor(6., grad_fn=<ProdBackward0>)
        >>> y.backward(); x.grad
        tensor([6., 3., 2.])
    """
    return _reduce("prod", C.PROD, x, axis, keepdims, np.multiply.reduce)


def amax(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Largest element (np.max / tg.max), over all axes or along ``axis``; tied maxima share the
    gradient evenly.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0, 3.0], requires_grad=True)
        >>> y = tg.amax(x); y
        tensor(3., grad_fn=<AmaxBackward0>)
        >>> y.backward(); x.grad
        tensor([0.0000, 0.5000, 0.5000])
    """
    return _reduce("max", C.AMAX, x, axis, keepdims, np.maximum.reduce)


def amin(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Smallest element (np.min / tg.min), over all axes or along ``axis``; tied minima share the
    gradient evenly.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([2.0, 1.0, 3.0], requires_grad=True)
        >>> y = tg.amin(x); y
        tensor(1., grad_fn=<AminBackward0>)
        >>> y.backward(); x.grad
        tensor([0., 1., 0.])
    """
    return _reduce("min", C.AMIN, x, axis, keepdims, np.minimum.reduce)


def mean(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean (np.mean), over all axes or along ``axis``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        >>> y = tg.mean(x); y
        tensor(2.5000, grad_fn=<MulBackward0>)
        >>> y.backward(); x.grad
        tensor([0.2500, 0.2500, 0.2500, 0.2500])
    """
    x = tensor_of(x)
    v = x._v
    if axis is None:
        count = 1 if v.__class__ is float else v.size
    else:
        shape = _shape(v)
        count = 1
        for a in normalize_axes(axis, len(shape), "mean"):
            count *= shape[a]
    if not count and STATE.transforms:  # NumPy's warning (PyTorch's mean gives NaN quietly)
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
    # (the sum times a number: one row, as x.sum() * c records)
    return sum(x, axis, keepdims) * (1.0 / count if count else math.nan)


def var(x: TensorLike, axis: Axis = None, keepdims: bool = False, ddof: float = 0) -> Tensor:
    """Variance (np.var, ``ddof`` as NumPy): the mean of squared deviations; its gradient is
    2 (x - mean) / (n - ddof).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        >>> import tapegrad.numpy as tnp
        >>> y = tnp.var(x); y
        tensor(1.2500, grad_fn=<MulBackward0>)
        >>> y.backward(); x.grad
        tensor([-0.7500, -0.2500, 0.2500, 0.7500])
    """
    x = tensor_of(x)
    m = mean(x, axis, keepdims=True)
    d = sub(x, m)
    axes = normalize_axes(axis, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    # no degrees of freedom left: NumPy divides by max(n - ddof, 0) = 0 (inf; NaN for 0 / 0)
    return mul(sum(mul(d, d), axis, keepdims), 1.0 / (count - ddof) if count > ddof else math.inf)


def std(x: TensorLike, axis: Axis = None, keepdims: bool = False, ddof: float = 0) -> Tensor:
    """np.std: the square root of ``var`` (composite).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0], requires_grad=True)
        >>> import tapegrad.numpy as tnp
        >>> y = tnp.std(x); y
        tensor(1., grad_fn=<SqrtBackward0>)
        >>> y.backward(); x.grad                # (x - mean) / (n std)
        tensor([-0.5000, 0.5000])
    """
    x = tensor_of(x)
    v = var(x, axis, keepdims, ddof)
    if x.size and x.size == v.size and ddof == 0:
        # one element per reduction: std is identically 0, and so is its derivative (the
        # square root's derivative at the zero variance would be 0/0)
        return mul(v, 0.0)
    positive = truth(v > 0.0)
    if positive.all():
        return sqrt(v)
    # a constant lane (variance 0): std is 0 and its gradient 0, the least subgradient (as
    # abs'(0) = 0, and PyTorch's); the square root's inf slope times the zero slope of the
    # variance gave NaN, which poisons a whole backward.  (NaN stays NaN.)
    return where(positive, sqrt(where(positive, v, 1.0)), mul(v, 0.0))


# ---- sorting: argsort / argpartition on the values, then one GATHER row ------------------------


def gather_along(x, idx, axis):
    """x[idx] along ``axis`` (idx as argsort returns it), as one GATHER row."""
    v = np.asarray(x._v)
    flat = np.take_along_axis(flat_index(v.shape), idx, axis)
    return gather_flat(x, flat, idx.shape)


def order_guard(out, axis, pairs):
    """While a trace records: guards that the gathered values are still in order, so a replay
    whose inputs sort differently raises RetraceRequired instead of reusing the recorded
    permutation.  ``pairs`` lists (before, after) slices along ``axis`` that must satisfy
    ``before <= after or after is NaN`` (NumPy sorts NaN last).  Both comparisons are
    guarded: with the first alone, a pair recorded false because ``after`` was NaN accepted
    a replay whose values are in the wrong order there (a sort recorded at [1, 2, nan, 3]
    replayed [1, 2, 3, 4] as [1, 2, 4, 3]).  Which pairs are ties is guarded too: the sorts
    are stable, so the pattern of ties fixes the permutation (a replay at a tie the
    recording did not have sent the gradient to the other tied element)."""
    if STATE.guard is None or not out._rg:
        return
    for before, after in pairs:
        lo = [slice(None)] * out.ndim
        hi = [slice(None)] * out.ndim
        lo[axis], hi[axis] = before, after
        a, b = getitem(out, tuple(lo)), getitem(out, tuple(hi))
        a <= b  # noqa: B015 - records the guard
        a == b  # noqa: B015 - records the guard: the ties
        b != b  # noqa: B015, PLR0124 - records the guard: where NaN sorted last


def reshape(x: TensorLike, *shape: int) -> Tensor:
    """The same elements in a new shape (np.reshape; a shape tuple or separate sizes).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        >>> tg.reshape(x, 2, 3)
        tensor([[1., 2., 3.],
                [4., 5., 6.]], grad_fn=<ReshapeBackward0>)
        >>> tg.reshape(x, (3, 2))[0].sum().backward(); x.grad
        tensor([1., 1., 0., 0., 0., 0.])
    """
    x = tensor_of(x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    v = x._v
    if exact_operands(x):
        return numpy_exact(np.reshape, x, shape)
    try:
        out = np.reshape(np.asarray(v), shape)
    except ValueError:
        raise ValueError(
            f"reshape: cannot reshape tensor of shape {x.shape} into shape {tuple(shape)}"
        ) from None
    out = result(out.copy() if out.ndim else out)
    if not needs_grad(x):
        return Tensor._const(out)
    t = tape_for(x)
    return record(t, C.RESHAPE, row_of(t, x), -1, out)


def _view(x, idx_view, out):
    """Record ``out`` as a strided view of ``x``; ``idx_view`` is np.arange(x.size)[...]."""
    t = tape_for(x)
    ra = row_of(t, x)
    nd = idx_view.ndim
    base = int(idx_view[(0,) * nd]) if idx_view.size else 0  # (.flat stops at 32 dims)
    strides = [s // idx_view.itemsize for s in idx_view.strides]
    return record(t, C.VIEW, ra, -1, out, ip=t.add_ints([nd, *idx_view.shape, *strides, base]))


def flat_index(shape):
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def transpose(x: TensorLike, axes=None) -> Tensor:
    """Permute the axes (np.transpose; reversed when ``axes`` is None).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        >>> tg.transpose(x).shape
        (3, 1)
        >>> (tg.transpose(x) * tg.tensor([[1.0], [2.0], [3.0]])).sum().backward(); x.grad
        tensor([[1., 2., 3.]])
    """
    x = tensor_of(x)
    v = x._v
    if v.__class__ is float:
        return reshape(x, ())
    if axes is None:
        axes = tuple(range(v.ndim))[::-1]
    try:
        out = np.ascontiguousarray(np.transpose(v, axes))
    except ValueError as e:
        raise ValueError(f"transpose: axes {axes} do not fit shape {v.shape}: {e}") from None
    if not needs_grad(x):
        return Tensor._const(out)
    return _view(x, np.transpose(flat_index(v.shape), axes), out)


def swapaxes(x, a1, a2):
    x = tensor_of(x)
    axes = list(range(x.ndim))
    axes[a1], axes[a2] = axes[a2], axes[a1]
    return transpose(x, axes)


def broadcast_to(x: TensorLike, shape) -> Tensor:
    """x repeated to ``shape`` by NumPy's broadcasting; its gradient sums the copies back.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tg.broadcast_to(x, (3, 2)).sum().backward(); x.grad
        tensor([3., 3.])
    """
    x = tensor_of(x)
    shape = tuple(shape)
    if exact_operands(x):
        return numpy_exact(np.broadcast_to, x, shape)
    try:
        out = result(np.array(np.broadcast_to(np.asarray(x._v), shape)))  # 0-d stays 0-d
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}") from None
    if not needs_grad(x):
        return Tensor._const(out)
    if shape == x.shape:
        return reshape(x, shape)
    t = tape_for(x)
    return record(
        t, C.VIEW, row_of(t, x), -1, out, ip=t.add_ints(_broadcast_params(x.shape, shape))
    )


def squeeze(x: TensorLike, axis: Axis = None) -> Tensor:
    """Drop axes of length 1 (np.squeeze), all of them or the given ``axis``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0]], requires_grad=True)
        >>> y = tg.squeeze(x); y.shape
        (2,)
        >>> (y * tg.tensor([3.0, 4.0])).sum().backward(); x.grad
        tensor([[3., 4.]])
    """
    x = tensor_of(x)
    try:
        shape = np.squeeze(np.empty(x.shape, dtype=np.uint8), axis).shape
    except ValueError:
        raise ValueError(
            f"squeeze: cannot select axis {axis} of shape {x.shape}: it is not of size one"
        ) from None
    return reshape(x, shape)


def expand_dims(x: TensorLike, axis: Axis) -> Tensor:
    """Insert an axis of length 1 at ``axis`` (np.expand_dims, tg.unsqueeze).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.expand_dims(x, 0); y.shape
        (1, 2)
        >>> (y * tg.tensor([[3.0, 4.0]])).sum().backward(); x.grad
        tensor([3., 4.])
    """
    x = tensor_of(x)
    return reshape(x, np.expand_dims(np.empty(x.shape, dtype=np.uint8), axis).shape)


def ravel(x):
    return reshape(x, (-1,))


def concatenate(xs: Sequence[TensorLike], axis: Axis = 0) -> Tensor:
    """Join Tensors along an existing axis (np.concatenate); each input gets its slice of the
    gradient.

    Examples:
        >>> import tapegrad as tg
        >>> a = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> b = tg.tensor([3.0], requires_grad=True)
        >>> y = tg.concatenate([a, b]); y
        tensor([1., 2., 3.], grad_fn=<CatBackward0>)
        >>> (y * tg.tensor([1.0, 2.0, 3.0])).sum().backward(); a.grad, b.grad
        (tensor([1., 2.]), tensor([3.]))
    """
    xs = [tensor_of(x) for x in xs]
    if not xs:
        raise ValueError("concatenate: need at least one tensor")
    if exact_operands(xs):
        return numpy_exact(np.concatenate, xs, axis=axis)
    if axis is None:  # numpy: flatten the inputs first
        xs, axis = [reshape(x, (-1,)) for x in xs], 0
    shapes = [x.shape for x in xs]
    nd = len(shapes[0])
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated")
    ax = normalize_axes(axis, nd, "concatenate")[0]
    for s in shapes:
        if len(s) != nd or any(s[d] != shapes[0][d] for d in range(nd) if d != ax):
            raise ValueError(f"concatenate: shapes {shapes} differ outside axis {axis}")
    out = result(np.concatenate([np.asarray(x._v, dtype=np.float64) for x in xs], axis=ax))
    if not needs_grad(*xs):
        return Tensor._const(out)
    t = tape_for(*xs)
    rows = [row_of(t, x) for x in xs]
    outer = int(np.prod(shapes[0][:ax], dtype=np.int64))
    inner = int(np.prod(shapes[0][ax + 1 :], dtype=np.int64))
    lens = [s[ax] for s in shapes]
    return record(t, C.CONCAT, -1, -1, out, ip=t.add_ints([outer, inner, len(xs), *rows, *lens]))


def stack(xs: Sequence[TensorLike], axis: Axis = 0) -> Tensor:
    """Join Tensors along a new axis (np.stack).

    Examples:
        >>> import tapegrad as tg
        >>> a = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> b = tg.tensor([3.0, 4.0], requires_grad=True)
        >>> y = tg.stack([a, b]); y
        tensor([[1., 2.],
                [3., 4.]], grad_fn=<CatBackward0>)
        >>> (y ** 2).sum().backward(); a.grad, b.grad
        (tensor([2., 4.]), tensor([6., 8.]))
    """
    xs = [tensor_of(x) for x in xs]
    if not xs:
        raise ValueError("stack: need at least one tensor")
    shapes = {x.shape for x in xs}
    if len(shapes) != 1:
        raise ValueError(f"stack: all input shapes must be equal, got {[x.shape for x in xs]}")
    nd = xs[0].ndim + 1
    ax = axis % nd if -nd <= axis < nd else None
    if ax is None:
        raise ValueError(f"stack: axis {axis} is out of range for {nd} dims")
    return concatenate([expand_dims(x, ax) for x in xs], axis=ax)


# ---- matmul -----------------------------------------------------------------------------------


def matmul(x: TensorLike, y: TensorLike) -> Tensor:
    """Matrix product with NumPy's rules (np.matmul, ``@``): vectors, matrices and batches.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> v = tg.tensor([1.0, 1.0], requires_grad=True)
        >>> y = tg.matmul(A, v); y
        tensor([3., 7.], grad_fn=<MmBackward0>)
        >>> y.sum().backward(); A.grad, v.grad
        (tensor([[1., 1.],
                [1., 1.]]), tensor([4., 6.]))
    """
    x0, y0 = x, y  # a plain array enters the tape as a value: no handle to note and claim
    x, y = tensor_of(x), tensor_of(y)
    if exact_operands(x, y):
        return numpy_exact(np.matmul, x, y)
    xv, yv = x._v, y._v
    if (
        xv.__class__ is np.ndarray
        and yv.__class__ is np.ndarray
        and 0 < xv.ndim <= 2
        and 0 < yv.ndim <= 2
        and xv.shape[-1] == yv.shape[0]
        and xv.dtype == np.float64
        and yv.dtype == np.float64
    ):  # the common cases (a layer, A @ x): no batch to broadcast; a vector operand is read
        # as one row (on the left) or one column (on the right), as in NumPy
        out = result(np.matmul(xv, yv))
        if not needs_grad(x, y):
            return Tensor._const(out)
        t = tape_for(x, y)
        m = xv.shape[0] if xv.ndim == 2 else 1
        n = yv.shape[1] if yv.ndim == 2 else 1
        ra = row_of(t, x if x0 is x else xv)
        rb = row_of(t, y if y0 is y else yv)
        return record(t, C.MATMUL, ra, rb, out, ip=t.add_ints([1, m, yv.shape[0], n, 0, 0]))
    xs, ys = x.shape, y.shape
    if len(xs) == 0 or len(ys) == 0:
        raise ValueError(
            f"matmul: operands must be at least 1-D, got shapes {xs} and {ys}; use * for scalars"
        )
    xm = xs if len(xs) >= 2 else (1,) + xs
    ym = ys if len(ys) >= 2 else ys + (1,)
    if xm[-1] != ym[-2]:
        raise ValueError(
            f"matmul: shape mismatch {xs} @ {ys}: inner dimensions {xm[-1]} and {ym[-2]} differ"
        )
    if len(xm) == 2 and len(ym) == 2:
        batch = ()  # no batch (np.broadcast_shapes costs ~3 us)
    else:
        try:
            batch = np.broadcast_shapes(xm[:-2], ym[:-2])
        except ValueError:
            raise ValueError(
                f"matmul: batch dimensions of {xs} and {ys} do not broadcast"
            ) from None
    xv = np.asarray(value_of(x))
    yv = np.asarray(value_of(y))
    out = result(np.matmul(xv, yv))
    if not needs_grad(x, y):
        return Tensor._const(out)
    m, k, n = xm[-2], xm[-1], ym[-1]
    # operands that need a batch broadcast are reshaped first: an op may reclaim rows
    # (tape_for), so no other op runs between tape_for and the last row this op writes
    xb = tuple(xm[:-2]) != tuple(batch)
    yb = tuple(ym[:-2]) != tuple(batch)
    if xb:
        x = Tensor._const(xv.reshape(xm)) if not x._rg else reshape(x, xm)
    if yb:
        y = Tensor._const(yv.reshape(ym)) if not y._rg else reshape(y, ym)
    t = tape_for(x, y)
    ra = as_shape(t, x, batch + (m, k)) if xb else row_of(t, x if x0 is x else xv)
    rb = as_shape(t, y, batch + (k, n)) if yb else row_of(t, y if y0 is y else yv)
    nb = math.prod(batch)  # (np.prod of a short tuple costs ~5 us)
    return record(t, C.MATMUL, ra, rb, out, ip=t.add_ints([nb, m, k, n, 0, 0]))


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` (PyTorch's ``F.linear``): weight has shape (out, in) and is read
    transposed by the matmul kernel, never copied.

    Examples:
        >>> import tapegrad as tg
        >>> W = tg.tensor([[1.0, 1.0], [0.0, 1.0]], requires_grad=True)
        >>> y = tg.nn.functional.linear(tg.tensor([[1.0, 2.0]]), W, tg.tensor([0.0, 10.0])); y
        tensor([[ 3., 12.]], grad_fn=<AddBackward0>)
        >>> y.sum().backward(); W.grad          # each row of W gets x
        tensor([[1., 2.],
                [1., 2.]])
    """
    x0, w0 = x, weight  # a plain array enters the tape as a value (see matmul)
    x, w = tensor_of(x), tensor_of(weight)
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise ValueError(
            f"linear: input of shape {x.shape} does not fit a weight of shape "
            f"{w.shape} (out_features, in_features)"
        )
    lead = x.shape[:-1]
    x2 = x if x.ndim == 2 else reshape(x, (-1, x.shape[-1]))
    xv = np.asarray(value_of(x2))
    wv = np.asarray(value_of(w))
    out = result(xv @ wv.T)
    if needs_grad(x2, w):
        t = tape_for(x2, w)
        m, k = xv.shape
        out = record(
            t,
            C.MATMUL,
            row_of(t, x2 if x0 is x else xv),
            row_of(t, w if w0 is w else wv),
            out,
            ip=t.add_ints([1, m, k, wv.shape[0], 0, 1]),
        )
    else:
        out = Tensor._const(out)
    if x.ndim != 2:
        out = reshape(out, lead + (wv.shape[0],))
    return out if bias is None else add(out, bias)


def dot(x: TensorLike, y: TensorLike) -> Tensor:
    """np.dot: the inner product of vectors, else a matrix product.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> y = tg.dot(x, tg.tensor([4.0, 5.0, 6.0])); y
        tensor(32., grad_fn=<MmBackward0>)
        >>> y.backward(); x.grad
        tensor([4., 5., 6.])
    """
    x, y = tensor_of(x), tensor_of(y)
    if x.ndim == 0 or y.ndim == 0:
        return mul(x, y)
    if y.ndim > 2:
        raise ValueError(
            f"dot: only 1-D and 2-D right operands are supported (got {y.shape}); "
            "use matmul or tensordot"
        )
    return matmul(x, y)


# ---- composite ops ------------------------------------------------------------------------------


def stable_shift(x, axes):
    """The shift m (keepdims) that keeps exp(x - m) finite: the maximum over ``axes``, 0 where
    that is not finite (an all -inf slice).  It cancels in every result, so its derivative
    is zero.  Eager evaluation computes it anew at every call and uses it as a constant.
    While a trace records, it is a tape row instead (floor of the maximum, whose derivative
    is zero), so a replay shifts by the maximum of its own inputs, and a guard notes which
    slices had a finite maximum.

    >>> import numpy as np, tapegrad as tg
    >>> stable_shift(tg.tensor([[1.5, 3.0], [-np.inf, -np.inf]]), (1,)).tolist()
    [[3.0], [0.0]]
    """
    v = np.asarray(x._v)
    if not v.size:
        return np.zeros([1] * v.ndim)
    m = np.max(v, axis=axes, keepdims=True)
    finite = np.isfinite(m)
    if STATE.guard is None or not needs_grad(x):
        return np.where(finite, m, 0.0)
    row = floor(amax(x, axes, keepdims=True))
    STATE.guard(abs_(row), "__lt__", math.inf, finite)  # replays check the same pattern
    return row if finite.all() else where(finite, row, 0.0)


def logsumexp(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) computed stably (no overflow); its gradient is softmax(x).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
        >>> y = tg.logsumexp(x); y              # 1 + log(4)
        tensor(2.3863, grad_fn=<ReshapeBackward0>)
        >>> y.backward(); x.grad
        tensor([0.2500, 0.2500, 0.2500, 0.2500])
    """
    x = tensor_of(x)
    axes = normalize_axes(axis, np.ndim(x._v), "logsumexp")
    m = stable_shift(x, axes)
    s = log(sum(exp(sub(x, m)), axes, keepdims=True))
    out = add(s, m)
    if not keepdims:
        out = reshape(out, np.squeeze(np.empty(out.shape), axes).shape)
    return out


def softmax(x: TensorLike, axis: Axis = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``axis``, computed stably: probabilities from scores.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 1.0], requires_grad=True)
        >>> y = tg.softmax(x); y
        tensor([0.5000, 0.5000], grad_fn=<DivBackward0>)
        >>> y[0].backward(); x.grad             # s0 (1 - s0), -s0 s1
        tensor([0.2500, -0.2500])
    """
    x = tensor_of(x)
    m = stable_shift(x, normalize_axes(axis, np.ndim(x._v), "softmax"))
    e = exp(sub(x, m))
    return div(e, sum(e, axis, keepdims=True))


def log_softmax(x: TensorLike, axis: Axis = -1) -> Tensor:
    """x - logsumexp(x) along ``axis``: log-probabilities, stable where log(softmax) is not.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 1.0], requires_grad=True)
        >>> y = tg.log_softmax(x); y
        tensor([-0.6931, -0.6931], grad_fn=<SubBackward0>)
        >>> y[0].backward(); x.grad             # 1 - s0, -s1
        tensor([0.5000, -0.5000])
    """
    x = tensor_of(x)
    axes = normalize_axes(axis, np.ndim(x._v), "log_softmax")
    s = sub(x, stable_shift(x, axes))  # shifted once: (x - m) - log(sum(exp(x - m)))
    return sub(s, log(sum(exp(s), axes, keepdims=True)))


# ---- indexing ---------------------------------------------------------------------------------


def index_key(key):
    """Normalise a __getitem__ key: Tensors become arrays; returns (key, is_basic)."""
    items = key if isinstance(key, tuple) else (key,)
    norm = []
    basic = True
    for k in items:
        if isinstance(k, Tensor):
            k = np.asarray(k._v)
            if k.dtype.kind == "f":
                raise IndexError("tensors used as indices must be integer or boolean")
        if (
            isinstance(k, (list, np.ndarray))
            or (isinstance(k, np.generic) and k.dtype == bool)
            or isinstance(k, bool)
        ):
            basic = False
        norm.append(k)
    return (tuple(norm) if isinstance(key, tuple) else norm[0]), basic


def _counted(flat):
    """Index parameters as the GATHER / SCATTER / SETITEM kernels read them: count, indices
    (one array, never a Python list of a million scalars)."""
    return np.concatenate((np.array([flat.size], np.int64), np.asarray(flat, np.int64)))


def getitem(x, key):
    x = tensor_of(x)
    key, basic = index_key(key)
    v = np.asarray(x._v)
    try:
        picked = v[key]
    except IndexError as e:
        raise IndexError(f"index {key!r} is invalid for a tensor of shape {x.shape}: {e}") from None
    out = result(np.array(picked, dtype=np.float64) if v.dtype == np.float64 else np.array(picked))
    if not needs_grad(x):
        # integer/bool tensors keep their dtype, also for one element (labels[i] is an index)
        return Tensor._const(out if v.dtype == np.float64 else np.array(picked))
    flat = flat_index(v.shape)[key]
    if basic:
        return _view(x, np.asarray(flat), out)
    t = tape_for(x)
    ra = row_of(t, x)
    flat = np.asarray(flat).ravel()
    return record(t, C.GATHER, ra, -1, out, ip=t.add_ints(_counted(flat)))


def setitem(x, key, value):
    """Functional ``x[key] = value``: returns the new tensor (the Tensor method swaps it in)."""
    x = tensor_of(x)
    key, _ = index_key(key)
    xv = np.asarray(x._v)
    flat = flat_index(xv.shape)[key]
    flat = np.asarray(flat).ravel()
    vv = value_of(value)
    try:
        vb = np.broadcast_to(np.asarray(vv), np.asarray(xv[key]).shape)
    except ValueError:
        raise ValueError(
            f"setitem: value of shape {np.shape(vv)} cannot be broadcast to the "
            f"indexed shape {np.asarray(xv[key]).shape}"
        ) from None
    out = xv.astype(np.float64).copy()
    out.reshape(-1)[flat] = vb.reshape(-1)
    out = result(out)
    if not needs_grad(x, value):
        return Tensor._const(out)
    t = tape_for(x, value)
    ra = row_of(t, x)
    vt = value if isinstance(value, Tensor) else Tensor._const(result(np.asarray(vv, float)))
    rb = as_shape(t, vt, np.asarray(xv[key]).shape)
    return record(t, C.SETITEM, ra, rb, out, ip=t.add_ints(_counted(flat)))


def scatter_add(g, flat_idx, shape):
    """``out = zeros(shape); out.flat[flat_idx] += g.flat`` (repeated indices accumulate).

    The adjoint of gather-style indexing; differentiable (its backward is a gather)."""
    g = tensor_of(g)
    flat_idx = np.asarray(flat_idx, dtype=np.int64).ravel()
    if flat_idx.size != g.size:
        raise ValueError(f"scatter_add: {flat_idx.size} indices for {g.size} values")
    out = np.zeros(int(np.prod(shape, dtype=np.int64)))
    np.add.at(out, flat_idx, np.asarray(g._v, dtype=np.float64).ravel())
    out = result(out.reshape(shape))
    if not needs_grad(g):
        return Tensor._const(out)
    t = tape_for(g)
    return record(t, C.SCATTER, row_of(t, g), -1, out, ip=t.add_ints(_counted(flat_idx)))


def gather_flat(x, flat_idx, shape):
    """``x.flat[flat_idx]`` reshaped to ``shape`` (differentiable; repeated indices accumulate)."""
    x = tensor_of(x)
    flat_idx = np.asarray(flat_idx, dtype=np.int64).ravel()
    out = result(np.asarray(x._v, dtype=np.float64).reshape(-1)[flat_idx].reshape(shape))
    if not needs_grad(x):
        return Tensor._const(out)
    t = tape_for(x)
    return record(t, C.GATHER, row_of(t, x), -1, out, ip=t.add_ints(_counted(flat_idx)))


# ---- composites for numpy dispatch and tapegrad.numpy --------------------------------------------
# Written with the differentiable ops above only, so backward, replay and higher order come free.


def square(x: TensorLike) -> Tensor:
    """x * x elementwise (np.square).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, -3.0], requires_grad=True)
        >>> y = tg.square(x); y
        tensor([1., 9.], grad_fn=<MulBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([ 2., -6.])
    """
    x = tensor_of(x)
    return mul(x, x)


def reciprocal(x: TensorLike) -> Tensor:
    """1 / x (composite: one RDIVS row, NumPy's value).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5, 4.0], requires_grad=True)
        >>> y = tg.reciprocal(x); y
        tensor([2.0000, 0.2500], grad_fn=<DivBackward0>)
        >>> y.sum().backward(); x.grad          # -1 / x**2
        tensor([-4.0000, -0.0625])
    """
    return div(1.0, x)


def deg2rad(x: TensorLike) -> Tensor:
    """Degrees to radians (composite: one MULS row by pi / 180, as NumPy computes it).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([180.0, 90.0], requires_grad=True)
        >>> y = tg.deg2rad(x); y
        tensor([3.1416, 1.5708], grad_fn=<MulBackward0>)
        >>> y.sum().backward(); x.grad          # pi / 180
        tensor([0.0175, 0.0175])
    """
    return mul(x, math.pi / 180.0)


def rad2deg(x: TensorLike) -> Tensor:
    """Radians to degrees (composite: one MULS row by 180 / pi, as NumPy computes it).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 0.5], requires_grad=True)
        >>> y = tg.rad2deg(x); y
        tensor([57.2958, 28.6479], grad_fn=<MulBackward0>)
        >>> y.sum().backward(); x.grad          # 180 / pi
        tensor([57.2958, 57.2958])
    """
    return mul(x, 180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def around(x: TensorLike, decimals: int = 0) -> Tensor:
    """np.round: round half to even at ``decimals`` digits, as NumPy does (scale, rint,
    unscale).  Derivative 0 at every order (RINT).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5, 1.5, 2.567], requires_grad=True)
        >>> y = tg.round(x); y                  # half to even
        tensor([0., 2., 3.], grad_fn=<RintBackward0>)
        >>> tg.round(tg.tensor([2.567]), 1)
        tensor([2.6000])
        >>> y.sum().backward(); x.grad
        tensor([0., 0., 0.])
    """
    decimals = int(decimals)
    if exact_operands(x):  # integers stay integers, as NumPy's and PyTorch's
        return numpy_exact(np.round, x, decimals)
    if decimals == 0:
        return rint(x)
    if decimals > 0:  # a true division (a DIV row), as NumPy divides, not a MULS by 1/f
        f = 10.0**decimals
        return div(rint(mul(x, f)), np.array(f))
    f = 10.0**-decimals
    return mul(rint(div(x, f)), f)


def nan_to_num(x: TensorLike, copy=True, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """np.nan_to_num: derivative 1 where x is finite, 0 where a value was replaced (composite:
    a WHERE row choosing between x and the constant replacements).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([float("nan"), 2.0], requires_grad=True)
        >>> y = tg.nan_to_num(x); y
        tensor([0., 2.], grad_fn=<WhereBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0., 1.])
    """
    x = tensor_of(x)
    # which entries are NaN / +inf / -inf, by comparisons a trace guards (a replay with
    # another pattern retraces instead of replacing the recorded entries)
    isnan, ispos, isneg = (truth(c) for c in (x != x, x == math.inf, x == -math.inf))
    big = np.finfo(np.float64).max
    repl = np.where(
        isnan,
        scalar_argument(nan, "nan_to_num: nan="),
        np.where(
            ispos,
            big if posinf is None else scalar_argument(posinf, "nan_to_num: posinf="),
            -big if neginf is None else scalar_argument(neginf, "nan_to_num: neginf="),
        ),
    )
    finite = ~(isnan | ispos | isneg)
    return where(finite, x, result(repl) if repl.ndim else float(repl))
