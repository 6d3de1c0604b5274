"""NumPy dispatch: ``np.sin(t)``, ``np.sum(t)``, ``arr * t`` ... run tapegrad ops on Tensors.

``NumpyProtocol`` (a base class of the public Tensor) gives Tensor ``__array_ufunc__`` and
``__array_function__``, so existing NumPy code differentiates when handed Tensors.  Each
supported NumPy callable maps to a tapegrad op or a composite of ops (the tables below);
rounding and sign (``np.floor``, ``np.round``...) are ops with derivative 0; functions whose
result carries no gradient (``np.shape``, ``np.argmax``, ``np.isnan``...) run on the values.
Anything else raises a TypeError naming the function: a gradient is never dropped silently.
"""

import copy
import warnings

import numpy as np

from ..core import creation, ufuncs
from ..core import functions as O
from ..core.methods import broadcasting, viewing
from ..core.tensor import STATE, refuse_complex, unsupported_type
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import _stands_in as stands_for_value
from ..core.torch_methods import ravel_order, reshape_order
from . import complex_parts as parts
from . import composites, linalg_ops, registry, shape_functions
from . import contractions as contract
from . import statistics as stats_


def _plain(x):
    """Tensors (also inside lists/tuples/dicts) replaced by their numpy values."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x) if type(x) in (list, tuple) else x
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _is_complex(x):
    """Is ``x`` a complex number, a complex array or a complex (integer-born) Tensor?"""
    c = x.__class__
    if c is float or c is int or c is bool:  # (the common operands first: a hot path)
        return False
    if isinstance(x, Tensor):
        v = x._v
        return v.__class__ is not float and v.dtype.kind == "c"
    if isinstance(x, (complex, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind == "c"


def _refuse_complex_operands(name, args, kwargs):
    """Refuse a complex operand of a NumPy function on Tensors, naming the function.

    Without this a complex fill value, bound or operand reached a float64 conversion and
    NumPy dropped its imaginary part with only a ComplexWarning (``np.full_like(x, 1j)``,
    ``np.fmax(x, z)``, a complex Tensor made by integer arithmetic in ``np.abs``,
    ``np.sort``...), or failed with a bare ``float()`` error.  Operands inside a list or
    tuple (``np.concatenate([x, z])``) are looked at too."""
    for x in args:
        if x.__class__ is not float and _complex_in(x):
            _refuse_complex(name, _operand(x))
    if kwargs:
        for x in kwargs.values():
            if _complex_in(x):
                _refuse_complex(name, _operand(x))


def _complex_in(x):
    """Is ``x``, or an item of a list or tuple ``x``, complex?"""
    if x.__class__ is list or x.__class__ is tuple:
        for e in x:
            if _is_complex(e):
                return True
        return False
    return _is_complex(x)


def _operand(x):
    """How a refusal names the complex operand ``x`` (or the complex item of ``x``)."""
    if x.__class__ is list or x.__class__ is tuple:
        x = next(e for e in x if _is_complex(e))
    return f"an operand ({f'dtype {x.dtype}' if hasattr(x, 'shape') else repr(x)})"


def _refuse_complex(name, what):
    if callable(name):  # a NumPy function: its public name (looked up only to refuse)
        name = _numpy_name(name).removeprefix("numpy.")
    refuse_complex(f"numpy.{name}: {what}")


def _refuse(name, what):
    raise TypeError(
        f"numpy.{name}: {what} is not supported on tapegrad Tensors "
        "(it would drop the gradient; docs/COVERAGE.md lists what is)"
    )


_HARMLESS = {
    "dtype": (np.float64, float, "float64"),
    "order": ("C", "K", "A"),
    "casting": ("same_kind", "unsafe", "safe"),
    "optimize": (True, False, "greedy", "optimal"),
}


def _no_extras(name, out=None, **kw):
    """Reject out= (a Tensor result cannot be written into an array) and options that change
    the result (a float64 dtype, memory order, casting and einsum's optimize are harmless)."""
    if out is not None:
        _refuse(name, "out=")
    for k, v in kw.items():
        if v is not None and v not in _HARMLESS.get(k, ()):
            _refuse(name, f"{k}={v!r}")


# ---- ufuncs --------------------------------------------------------------------------------------


def _nan_mask(a):
    """Where ``a`` is NaN, read through a guarded comparison (``a != a``) when ``a`` is a
    Tensor: a trace replay with NaN elsewhere retraces instead of reusing the recorded mask."""
    if isinstance(a, Tensor):
        return O.truth(a != a)
    return np.isnan(np.asarray(a, np.float64))


def _nan_ignoring(choose, a, b):
    """np.fmax / np.fmin: ``choose`` (np.maximum / np.minimum, ties as theirs) where neither
    operand is NaN, the other operand where one is, NaN where both are; the gradient goes to
    the operand taken.  (Mapping them to maximum / minimum returned NaN where NumPy does not.)"""
    a_nan, b_nan = _nan_mask(a), _nan_mask(b)
    out = choose(a, b)
    if not (a_nan.any() or b_nan.any()):
        return out
    return O.where(b_nan, a, O.where(a_nan, b, out))


UFUNCS = {
    np.positive: lambda x: O.mul(x, 1.0),
    np.fabs: O.abs_,
    np.square: O.square,
    np.reciprocal: O.reciprocal,
    np.deg2rad: O.deg2rad,
    np.radians: O.deg2rad,
    np.rad2deg: O.rad2deg,
    np.degrees: O.rad2deg,
    np.conjugate: parts.conj,
    np.add: O.add,
    np.subtract: O.sub,
    np.multiply: O.mul,
    np.divide: O.div,
    np.power: O.power,
    np.float_power: O.power,
    np.fmax: lambda a, b: _nan_ignoring(O.maximum, a, b),
    np.fmin: lambda a, b: _nan_ignoring(O.minimum, a, b),
    np.matmul: O.matmul,
    np.floor_divide: O.floor_divide,
    np.divmod: O.divmod_,
}
UFUNCS.update(ufuncs.UFUNCS)  # the declared elementwise ops
UFUNCS.update(composites.UFUNCS)


def _vecdot(x1, x2, /, *, axis=-1, **kwargs):
    """np.vecdot, a ufunc with a keyword of its own: the products summed along ``axis``."""
    _no_extras("vecdot", **kwargs)
    return O.sum(O.mul(x1, x2), axis)


# ufuncs that take keywords of their own (others refuse every keyword but harmless ones)
KEYWORD_UFUNCS = {np.vecdot: _vecdot} if hasattr(np, "vecdot") else {}

COMPARE = {
    np.less: ("__lt__", "__gt__"),
    np.less_equal: ("__le__", "__ge__"),
    np.greater: ("__gt__", "__lt__"),
    np.greater_equal: ("__ge__", "__le__"),
    np.equal: ("__eq__", "__eq__"),
    np.not_equal: ("__ne__", "__ne__"),
}

# results carry no gradient (boolean, or piecewise constant with zero derivative)
VALUE_UFUNCS = {
    np.isnan,
    np.isinf,
    np.isfinite,
    np.signbit,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.logical_not,
}

REDUCE = {np.add: O.sum, np.multiply: O.prod, np.maximum: O.amax, np.minimum: O.amin}
ACCUMULATE = ufuncs.ACCUMULATE  # the declared scans


def _compare(ufunc, a, b):
    mine, swapped = COMPARE[ufunc]
    if isinstance(a, Tensor):
        return getattr(a, mine)(b)  # the Tensor method also notes trace guards
    return getattr(b, swapped)(a)


def _ufunc_outer(fn, a, b):
    a, b = O.tensor_of(a), O.tensor_of(b)
    return fn(O.reshape(a, a.shape + (1,) * b.ndim), b)


def array_ufunc(ufunc, method, inputs, kwargs):
    """Run ``ufunc.method(*inputs, **kwargs)`` with tapegrad ops (also used by tapegrad.numpy)."""
    name = ufunc.__name__
    _refuse_complex_operands(name, inputs, kwargs)
    if O.exact_operands(*inputs):  # integer / boolean Tensors: NumPy's own arithmetic
        return O.numpy_exact(
            ufunc if method == "__call__" else getattr(ufunc, method), *inputs, **kwargs
        )
    if method == "__call__":
        if ufunc in KEYWORD_UFUNCS:
            return KEYWORD_UFUNCS[ufunc](*inputs, **kwargs)
        if kwargs:
            _no_extras(name, **kwargs)
        fn = UFUNCS.get(ufunc)
        if fn is not None:
            return fn(*inputs)
        if ufunc in COMPARE:
            return _compare(ufunc, *inputs)
        if ufunc in VALUE_UFUNCS:
            return ufunc(*_plain(inputs))
    elif method == "reduce" and ufunc in REDUCE:
        axis, keepdims = kwargs.pop("axis", 0), kwargs.pop("keepdims", False)
        _no_extras(f"{name}.reduce", **kwargs)
        return REDUCE[ufunc](inputs[0], axis, keepdims)
    elif method == "accumulate" and ufunc in ACCUMULATE:
        axis = kwargs.pop("axis", 0)
        _no_extras(f"{name}.accumulate", **kwargs)
        return ACCUMULATE[ufunc](inputs[0], axis)
    elif method == "outer" and ufunc in UFUNCS and ufunc.nin == 2:
        _no_extras(f"{name}.outer", **kwargs)
        return _ufunc_outer(UFUNCS[ufunc], *inputs)
    if getattr(np, name, None) is not ufunc:  # a SciPy ufunc (scipy.special.gammaln ...)
        raise TypeError(
            f"{name} (a ufunc from outside NumPy, e.g. scipy.special) is not "
            f"supported on tapegrad Tensors (it would drop the gradient); {_special_hint(name)}"
        )
    _refuse(name if method == "__call__" else f"{name}.{method}", "this ufunc")


_SPECIAL_INSTEAD = {  # SciPy ufuncs tapegrad.scipy.special lacks, and what computes them
    "ndtr": "tapegrad.scipy.stats.norm.cdf",
    "log_ndtr": "tapegrad.scipy.stats.norm.logcdf",
    "i0e": "tapegrad.scipy.special.ive(0, x)",
    "i1e": "tapegrad.scipy.special.ive(1, x)",
}


def _special_hint(name: str) -> str:
    """Where a differentiable version of the SciPy ufunc ``name`` may be (this layer cannot
    import tapegrad.scipy to look)."""
    if name in _SPECIAL_INSTEAD:
        return f"use {_SPECIAL_INSTEAD[name]}"
    return (
        f"use tapegrad.scipy.special.{name} (import tapegrad.scipy.special as tsp) if "
        "tapegrad has it: docs/COVERAGE.md lists what tapegrad.scipy.special has"
    )


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs:  # hot path: np.sin(t), arr * t
        fn = UFUNCS.get(ufunc)
        if fn is not None and not _integer_tensor_in(inputs):
            return fn(*inputs)
    return array_ufunc(ufunc, method, inputs, kwargs)


def _integer_tensor_in(inputs):
    """Is an input an integer or boolean Tensor?  NumPy's own arithmetic then applies
    (``array_ufunc``): np.reciprocal of ints is an int, np.positive of int64 exact.  Also
    True for a complex input, which ``array_ufunc`` refuses naming the ufunc."""
    for x in inputs:
        if isinstance(x, Tensor):
            v = x._v
            if v.__class__ is not float and v.dtype.kind in "iubc":
                return True
        elif x.__class__ is not float and _is_complex(x):
            return True
    return False


# ---- functions --------------------------------------------------------------------------------


def _reduction(fn, name):
    def impl(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None, initial=None, **kw):
        _no_extras(name, out, dtype=dtype, **kw)
        if where is not None or initial is not None:  # entries left out, a starting value
            kind = {"amax": "max", "amin": "min"}.get(name, name)
            return composites.masked_reduction(kind, a, axis, keepdims, where, initial)
        return fn(a, axis, keepdims)

    return impl


def _var(name, take_sqrt):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None, **kw):
        _no_extras(name, out, dtype=dtype, **kw)
        if correction is not None:  # NumPy 2's name for ddof
            if ddof != 0:
                raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
            ddof = correction
        return (O.std if take_sqrt else O.var)(a, axis, keepdims, ddof)

    return impl


def _where(condition, x=None, y=None):
    if x is None and y is None:
        return np.where(_plain(condition))
    if x is None or y is None:  # (a missing branch would be NaN)
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    return O.where(condition, x, y)


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):  # noqa: A002
    _no_extras("clip", out, **kw)
    return O.clip(a, a_min if min is None else min, a_max if max is None else max)


def _concatenate(arrays, axis=0, out=None, **kw):
    _no_extras("concatenate", out, **kw)
    if axis is None:
        return O.concatenate([O.ravel(O.tensor_of(a)) for a in arrays], 0)
    return O.concatenate(arrays, axis)


def _stack(arrays, axis=0, out=None, **kw):
    _no_extras("stack", out, **kw)
    return O.stack(arrays, axis)


def _atleast(a, nd):
    a = O.tensor_of(a)
    if a.ndim >= nd:
        return a
    return O.reshape(a, (1,) * (nd - a.ndim) + a.shape)


def _hstack(tup, **kw):
    _no_extras("hstack", **kw)
    arrs = [_atleast(a, 1) for a in tup]
    return O.concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def _vstack(tup, **kw):
    _no_extras("vstack", **kw)
    return O.concatenate([_atleast(a, 2) for a in tup], 0)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return reshape_order(O.tensor_of(a), shape if shape is not None else newshape, order)


def _moveaxis(a, source, destination):
    a = O.tensor_of(a)
    src = [s % a.ndim for s in np.atleast_1d(source)]
    dst = [d % a.ndim for d in np.atleast_1d(destination)]
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return O.transpose(a, order)


def _dot(a, b, out=None):
    _no_extras("dot", out)
    a, b = O.tensor_of(a), O.tensor_of(b)
    if b.ndim > 2 and a.ndim >= 1:
        return contract.tensordot(a, b, ([a.ndim - 1], [b.ndim - 2]))
    return O.dot(a, b)


def _inner(a, b):
    a, b = O.tensor_of(a), O.tensor_of(b)
    if a.ndim == 0 or b.ndim == 0:
        return O.mul(a, b)
    return contract.tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


def _outer(a, b, out=None):
    _no_extras("outer", out)
    return contract.outer(a, b)


def _scan(fn, name):
    def impl(a, axis=None, dtype=None, out=None):
        _no_extras(name, out, dtype=dtype)
        return fn(a, axis)

    return impl


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_extras("trace", out, dtype=dtype)
    a = O.tensor_of(a)
    if offset or a.ndim != 2:
        _refuse("trace", "offset or a non 2-D input")
    return contract.einsum("ii", a)


def _einsum(subscripts, *operands, out=None, **kw):
    _no_extras("einsum", out, **kw)
    if not isinstance(subscripts, str):
        _refuse("einsum", "the interleaved (operand, sublist) form")
    return contract.einsum(subscripts, *operands)


def _around(a, decimals=0, out=None):
    _no_extras("round", out)
    return O.around(a, decimals)


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if copy is False:
        _refuse("nan_to_num", "copy=False (in place)")
    return O.nan_to_num(x, True, nan, posinf, neginf)


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    return stats_.sort(a, axis, "stable" if stable else kind, order)


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_extras("median", out)
    return stats_.median(a, axis, keepdims)


def _nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_extras("nanmedian", out)
    res = stats_.nanmedian(a, axis, keepdims)
    if np.any(np.all(composites.is_nan(O.tensor_of(a)), axis=axis)):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
    return res


def _quantile(fn, name, skip_nan=False):
    """np.quantile / percentile (``skip_nan``: nanquantile / nanpercentile, the NaN entries
    of each lane left out; a lane of NaN only gives NaN and NumPy's warning)."""

    def impl(
        a,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
        interpolation=None,
    ):
        _no_extras(name, out)
        if weights is not None:
            _refuse(name, "weights=")
        res = fn(a, q, axis, method, keepdims, interpolation=interpolation, skip_nan=skip_nan)
        if skip_nan and np.any(np.all(composites.is_nan(O.tensor_of(a)), axis=axis)):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        return res

    return impl


def _ptp(a, axis=None, out=None, keepdims=False):
    _no_extras("ptp", out)
    return stats_.ptp(a, axis, keepdims)


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    return stats_.average(a, axis, weights, returned, keepdims)


def _fix(x, out=None):
    _no_extras("fix", out)
    return O.trunc(x)


def _copy(a, order="K", subok=False):
    return O.tensor_of(a).clone()


FUNCTIONS = {
    np.sum: _reduction(O.sum, "sum"),
    np.mean: _reduction(O.mean, "mean"),
    np.prod: _reduction(O.prod, "prod"),
    np.max: _reduction(O.amax, "max"),
    np.min: _reduction(O.amin, "min"),
    np.amax: _reduction(O.amax, "amax"),
    np.amin: _reduction(O.amin, "amin"),
    np.var: _var("var", False),
    np.std: _var("std", True),
    np.where: _where,
    np.clip: _clip,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.hstack: _hstack,
    np.vstack: _vstack,
    # NumPy returns views: writes into them show in the argument (and back)
    np.reshape: viewing(_reshape, reshapes=True),
    np.transpose: viewing(lambda a, axes=None: O.transpose(a, axes)),
    np.swapaxes: viewing(lambda a, axis1, axis2: O.swapaxes(a, axis1, axis2)),
    np.moveaxis: viewing(_moveaxis),
    np.squeeze: viewing(lambda a, axis=None: O.squeeze(a, axis)),
    np.expand_dims: viewing(O.expand_dims),
    np.ravel: viewing(lambda a, order="C": ravel_order(O.tensor_of(a), order), ravels=True),
    np.broadcast_to: broadcasting(
        lambda array, shape, subok=False: O.broadcast_to(array, shape), read_only=True
    ),
    np.atleast_1d: viewing(lambda a: _atleast(a, 1)),
    np.atleast_2d: viewing(lambda a: _atleast(a, 2)),
    np.dot: _dot,
    np.vdot: lambda a, b: O.sum(O.mul(O.ravel(O.tensor_of(a)), O.ravel(O.tensor_of(b)))),
    np.inner: _inner,
    np.outer: _outer,
    np.tensordot: contract.tensordot,
    np.einsum: _einsum,
    np.linalg.norm: contract.norm,
    np.cumsum: _scan(O.cumsum, "cumsum"),
    np.cumprod: _scan(O.cumprod, "cumprod"),
    np.diff: stats_.diff,
    np.trace: _trace,
    np.copy: _copy,
    np.round: _around,
    np.around: _around,
    np.nan_to_num: _nan_to_num,
    np.fix: _fix,
    np.sinc: lambda x: O.sinc(x),
    np.sort: _sort,
    np.partition: lambda a, kth, axis=-1, kind="introselect", order=None: stats_.partition(
        a, kth, axis, kind, order
    ),
    np.median: _median,
    np.quantile: _quantile(stats_.quantile, "quantile"),
    np.percentile: _quantile(stats_.percentile, "percentile"),
    np.nanquantile: _quantile(stats_.quantile, "nanquantile", skip_nan=True),
    np.nanpercentile: _quantile(stats_.percentile, "nanpercentile", skip_nan=True),
    np.nanmedian: _nanmedian,
    np.ptp: _ptp,
    np.average: _average,
    np.real: viewing(parts.real),
    np.imag: parts.imag,
    np.angle: lambda z, deg=False: parts.angle(z, deg),
    np.real_if_close: lambda a, tol=100: parts.real_if_close(a, tol),
}
FUNCTIONS.update(linalg_ops.FUNCTIONS)
FUNCTIONS.update(registry.FUNCTIONS)  # shape_functions, composites: @implements

# results carry no gradient, and only the shape and dtype of a Tensor argument matter: they
# read no value, so a trace recording does not pin one (a replay with new values takes the
# same branch)
SHAPE_FUNCTIONS = {
    np.shape,
    np.ndim,
    np.size,
    np.result_type,
    np.iscomplexobj,
    np.isrealobj,
    np.zeros_like,
    np.ones_like,
    np.empty_like,
}
# results carry no gradient: shapes, indices, predicates, fresh arrays, rounded values
VALUE_FUNCTIONS = SHAPE_FUNCTIONS | {
    np.argmax,
    np.argmin,
    np.argsort,
    np.nonzero,
    np.flatnonzero,
    np.count_nonzero,
    np.allclose,
    np.isclose,
    np.array_equal,
    np.array_equiv,
    np.any,
    np.all,
    np.can_cast,
    np.min_scalar_type,
}
VALUE_FUNCTIONS |= shape_functions.VALUE_FUNCTIONS


def _shape_only(x):
    """A stand-in for Tensor ``x`` with its shape and dtype and no data of its own."""
    if isinstance(x, Tensor):
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    return _plain(x)


def _numpy_name(func):
    """NumPy's public name of ``func`` (``numpy.linalg.eig``)."""
    mod = getattr(func, "__module__", "numpy") or "numpy"
    subs = {"linalg": "linalg", "fft": "fft", "scimath": "emath"}  # module -> public name
    parts = mod.split(".")  # (NumPy 2.1: numpy.lib._scimath_impl; 2.4: numpy.lib.scimath)
    sub = next((p for m, p in subs.items() if any(m in part for part in parts)), "")
    return f"numpy.{sub + '.' if sub else ''}{func.__name__}"


def _array_function(self, func, types, args, kwargs):
    for t in types:  # a masked array or np.matrix among the arguments (lists included)
        problem = None if t is np.ndarray else unsupported_type(t)
        if problem is not None:
            raise TypeError(f"{_numpy_name(func)}: an argument {problem}")
    impl = FUNCTIONS.get(func)
    if impl is not None:
        _refuse_complex_operands(func, args, kwargs)
        if O.exact_operands(*args, *kwargs.values()):  # integer / boolean Tensors
            return O.numpy_exact(func, *args, **kwargs)
        return impl(*args, **kwargs)
    if func in SHAPE_FUNCTIONS:
        return func(*map(_shape_only, args), **{k: _shape_only(v) for k, v in kwargs.items()})
    if func in VALUE_FUNCTIONS:
        return func(*_plain(args), **_plain(kwargs))
    raise TypeError(
        f"{_numpy_name(func)} is not supported on tapegrad Tensors (it would drop the "
        "gradient); use tapegrad ops, or call it on t.detach().numpy() if no "
        "gradient is needed (docs/COVERAGE.md lists what is supported)"
    )


def _copied(x, memo):
    """``copy.copy(x)`` / ``copy.deepcopy(x)``.  Inside a transform or a trace recording, a
    value being differentiated stands for NumPy code's array, so its copy is a differentiable
    copy (``np.copy``), as under JAX: copying the handle made a second leaf there (tg.grad
    dropped the derivative through the copy) or a trace constant (a replay returned the
    recorded value).  Elsewhere ``deepcopy`` is PyTorch's: a leaf becomes a new leaf with a
    copy of the value (and of ``.grad``, but for a parameter), and a result that requires
    grad is refused (deep-copying the handle copied the whole tape it was recorded on, or
    crashed); ``copy.copy`` copies the handle and its state."""
    if x._rg and STATE.transforms and stands_for_value(x):
        out = x.clone()
    elif memo is None:
        out = copy._reconstruct(x, memo, *object.__reduce_ex__(x, 4))  # (not pickle's)
    elif x._rg and not x._leaf:
        raise RuntimeError(
            "copy.deepcopy: only leaf Tensors (made by the user, or results that do not "
            "require grad) support deepcopy, as in PyTorch; copy x.detach().clone() for the "
            "value, or deep-copy the leaves and compute the result again"
        )
    else:
        out = creation.leaf_copy(x, memo)
        if x.grad is not None and not getattr(x, "_nn_parameter", False):
            out.grad = copy.deepcopy(x.grad, memo)
    if memo is not None:
        memo[id(x)] = out
    return out


class NumpyProtocol:
    """NumPy's dispatch protocols for Tensor (a base class of the public ``Tensor``)."""

    __slots__ = ()
    __array_ufunc__ = _array_ufunc
    __array_function__ = _array_function

    def __copy__(self):
        return _copied(self, None)

    def __deepcopy__(self, memo):
        return _copied(self, memo)
