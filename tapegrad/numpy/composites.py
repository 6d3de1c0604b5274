"""NumPy functions written as composites of tapegrad ops: NaN-aware reductions, masked and
initialised reductions, interpolation, polynomials, covariance, piecewise definitions, FFT
shifts, diagonal embedding and the ``r_`` / ``c_`` index tricks.

Each one is differentiable as far as its ops are, at every order.  Whatever a composite
decides from the values of its arguments (which segment of ``interp``, which entries are
NaN, the sign read by ``copysign``) is read through Tensor comparisons, so a ``tg.trace``
recording guards it: a replay where the decision changes raises ``RetraceRequired`` instead
of reusing the recorded one.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import functions as O
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import refuse_complex, value_of
from .registry import FUNCTIONS, implements
from .shape_functions import _rearrange


def is_nan(a):
    """The NaN entries of Tensor ``a`` as a boolean array, read through a guarded compare."""
    return O.truth(a != a)


def _tensor(a):
    return a if isinstance(a, Tensor) else O.tensor_of(np.asarray(a, dtype=np.float64))


# ---- reductions with where= and initial= ----------------------------------------------------


def masked_reduction(name, a, axis, keepdims, where, initial):
    """``np.sum / prod / mean / max / min`` with NumPy's ``where=`` (entries left out) and
    ``initial=`` (a starting value, folded in once per output)."""
    a = _tensor(a)
    mask = None if where is None or where is True else np.broadcast_to(where, a.shape)
    neutral = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[name]
    x = a if mask is None else O.where(mask, a, neutral)
    if name in ("max", "min"):
        if mask is not None and initial is None and not np.all(np.any(mask, axis=axis)):
            raise ValueError(
                f"numpy.{name}: reduction of an empty selection (where=) needs initial="
            )
        axes = range(a.ndim) if axis is None else O.normalize_axes(axis, a.ndim, name)
        if initial is not None and any(a.shape[d] == 0 for d in axes):
            # an empty axis: initial itself (the empty sum keeps the shape and the graph)
            return O.add(O.mul(O.sum(x, axis, keepdims), 0.0), float(initial))
        out = (O.amax if name == "max" else O.amin)(x, axis, keepdims)
        if initial is not None:
            out = (O.maximum if name == "max" else O.minimum)(out, float(initial))
        return out
    if name == "mean":
        if initial is not None:
            raise TypeError("numpy.mean: initial= is not an argument of mean")
        kept = np.broadcast_to(True, a.shape) if mask is None else mask
        count = np.sum(kept, axis, keepdims=keepdims)
        return O.div(O.sum(x, axis, keepdims), count.astype(np.float64))
    out = (O.sum if name == "sum" else O.prod)(x, axis, keepdims)
    if initial is not None:
        out = O.add(out, float(initial)) if name == "sum" else O.mul(out, float(initial))
    return out


# ---- NaN-aware reductions -------------------------------------------------------------------


def _no_out(name, out=None, dtype=None):
    """Refuse out= (a Tensor result cannot be written into an array: ignoring it left the
    array as it was) and a dtype other than float64 (ignoring it changed the values)."""
    if out is not None:
        what = "out="
    elif dtype is not None and np.dtype(dtype) != np.float64:
        what = f"dtype={dtype!r}"
    else:
        return
    raise TypeError(
        f"numpy.{name}: {what} is not supported on tapegrad Tensors "
        "(it would drop the gradient; docs/COVERAGE.md lists what is)"
    )


def _without_nan(a, fill):
    a = _tensor(a)
    nan = is_nan(a)
    return (a if not nan.any() else O.where(nan, fill, a)), nan


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nansum", out, dtype)
    x, _ = _without_nan(a, 0.0)
    return masked_reduction("sum", x, axis, keepdims, where, initial)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nanprod", out, dtype)
    x, _ = _without_nan(a, 1.0)
    return masked_reduction("prod", x, axis, keepdims, where, initial)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out("nanmean", out, dtype)
    x, nan = _without_nan(a, 0.0)
    keep = ~nan if where is None else (~nan & np.broadcast_to(where, nan.shape))
    return masked_reduction("mean", x, axis, keepdims, keep, None)


def _correction(name, ddof, kw):
    """NumPy's ``correction=`` (another name for ddof); ``mean=`` and anything else is refused
    (ignoring them gave the variance about the actual mean, or with ddof unchanged)."""
    correction = kw.pop("correction", None)
    for k, v in kw.items():
        if v is not None:
            raise TypeError(
                f"numpy.{name}: {k}= is not supported on tapegrad Tensors "
                "(it would drop the gradient; docs/COVERAGE.md lists what is)"
            )
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
    return correction


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, **kw):
    _no_out("nanvar", out, dtype)
    ddof = _correction("nanvar", ddof, kw)
    x, nan = _without_nan(a, 0.0)
    keep = ~nan if where is None else (~nan & np.broadcast_to(where, nan.shape))
    mean = masked_reduction("mean", x, axis, True, keep, None)
    dev = O.where(keep, O.sub(x, mean), 0.0)
    dof = np.sum(keep, axis=axis, keepdims=keepdims).astype(np.float64) - ddof
    # NaN where no degree of freedom is left (NumPy's nanvar; np.var gives inf there): a
    # division by NaN, so the gradient there is NaN too, never a silent 0
    return O.div(O.sum(O.mul(dev, dev), axis, keepdims), np.where(dof > 0, dof, np.nan))


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, **kw):
    _no_out("nanstd", out, dtype)
    ddof = _correction("nanstd", ddof, kw)
    return O.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where))


def _nan_extreme(name):
    def impl(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        _no_out(f"nan{name}", out)
        fill = -np.inf if name == "max" else np.inf
        x, nan = _without_nan(a, fill)
        res = masked_reduction(name, x, axis, keepdims, where, initial)
        if initial is not None:  # NumPy's fmax.reduce: NaNs skipped, initial takes part
            return res
        every = np.all(nan, axis=axis, keepdims=keepdims)  # an all-NaN slice: NaN, as NumPy
        if not np.any(every):
            return res
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        return O.where(every, np.nan, res)

    return impl


def _nan_scan(fn, fill):
    def impl(a, axis=None, dtype=None, out=None):
        _no_out(f"nan{fn.__name__}", out, dtype)
        x, _ = _without_nan(a, fill)
        return fn(x, axis)

    return impl


# ---- elementwise ----------------------------------------------------------------------------


def heaviside(x1, x2):
    """0 below 0, ``x2`` at 0, 1 above (NaN stays NaN): derivative 0 in ``x1``, the
    indicator of ``x1 == 0`` in ``x2``."""
    x1 = _tensor(x1)
    below, above = O.truth(x1 < 0.0), O.truth(x1 > 0.0)
    out = O.where(above, 1.0, O.where(below, 0.0, x2))
    nan = is_nan(x1)
    return O.where(nan, np.nan, out) if nan.any() else out


def copysign(x1, x2):
    """|x1| with the sign of x2 (the sign bit: -0.0 counts as negative), derivative 0 in x2."""
    x2t = _tensor(x2)
    v = np.asarray(value_of(x2t), dtype=np.float64)
    negative = O.truth(x2t < 0.0) | (np.signbit(v) & (v == v))
    return O.mul(O.abs_(x1), np.where(negative, -1.0, 1.0))


def ldexp(x1, x2):
    """x1 * 2 ** x2 for integer exponents x2 (not differentiated: they are integers)."""
    e = np.asarray(value_of(x2))
    if isinstance(x2, Tensor) and x2.requires_grad or not np.all(e == np.round(e)):
        raise TypeError("numpy.ldexp: the exponents x2 must be integers (not differentiated)")
    return O.mul(x1, np.ldexp(1.0, e.astype(np.int64)))


# ---- interpolation, polynomials, statistics -------------------------------------------------


@implements(np.i0)
def i0(x):
    """NumPy's ``i0`` (modified Bessel function of the first kind, order 0) as the trapezoidal
    rule of I0(x) = mean over t of cosh(x cos t), t uniform on [0, pi): for this periodic,
    analytic integrand the rule with N nodes is exact up to terms of order I_2N(x) / I0(x),
    below 1e-19 with 32 nodes for |x| <= 30 and 128 beyond.  Its derivatives at every order
    are the same rule for I1 and its derivatives (odd ones exactly 0 at 0).  Past |x| = 700
    the rule is evaluated as exp(|x|) mean exp(|x| (cos t - 1)) over [0, 2 pi), scaled so that
    it overflows only where I0 does (|x| > 713.98).  It takes N times the memory of x."""
    x = _tensor(x)
    if x.size == 0:
        return O.mul(x, 0.0)
    ax = O.abs_(x)
    many = bool(O.amax(ax) > 30.0)  # (a guard in a trace: compared, never read)
    n = 128 if many else 32
    cos = np.cos(np.pi * np.arange(n) / n)
    if not many:
        return O.mean(O.cosh(O.mul(O.expand_dims(x, -1), cos)), -1)
    large = O.truth(ax > 700.0)
    safe = O.where(large, 0.0, x)  # each branch sees arguments where it is finite
    plain = O.mean(O.cosh(O.mul(O.expand_dims(safe, -1), cos)), -1)
    big = O.where(large, ax, 701.0)
    full = np.cos(np.pi * np.arange(2 * n) / n) - 1.0
    # exp(|x| - 10) * mean exp(|x| (cos t - 1) + 10): no factor, and no adjoint of one,
    # leaves the floats while I0 and I1 stay finite
    terms = O.exp(O.add(O.mul(O.expand_dims(big, -1), full), 10.0))
    scaled = O.mul(O.exp(O.sub(big, 10.0)), O.mean(terms, -1))
    return O.where(large, scaled, plain)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """np.interp: linear in ``x`` within each segment and in ``fp``; the sample points ``xp``
    are constants (increasing, as NumPy requires)."""
    if period is not None:
        raise TypeError("numpy.interp: period= is not supported on tapegrad Tensors")
    if isinstance(xp, Tensor) and xp.requires_grad:
        raise TypeError(
            "numpy.interp: the sample points xp are not differentiated; pass them as an array"
        )
    xp = np.asarray(value_of(xp), dtype=np.float64)
    x, fp = _tensor(x), _tensor(fp)
    n = xp.shape[0]
    xv = np.asarray(value_of(x), dtype=np.float64)
    k = np.clip(np.searchsorted(xp, xv, side="right") - 1, 0, max(n - 2, 0))
    # the segment each x falls in, read through guarded comparisons
    if n > 1:
        value_of(x >= xp[k])
        value_of(x < xp[np.minimum(k + 1, n - 1)])
    lo, hi = O.getitem(fp, k), O.getitem(fp, np.minimum(k + 1, n - 1))
    width = xp[np.minimum(k + 1, n - 1)] - xp[k]
    t = O.div(O.sub(x, xp[k]), np.where(width == 0.0, 1.0, width))
    out = O.add(lo, O.mul(t, O.sub(hi, lo)))
    first, last = O.getitem(fp, 0), O.getitem(fp, -1)
    out = O.where(O.truth(x < xp[0]), first if left is None else left, out)
    out = O.where(O.truth(x > xp[-1]), last if right is None else right, out)
    return O.where(O.truth(x == xp[-1]), last, out)


@implements(np.polyval)
def polyval(p, x):
    """Horner's rule: p[0] x^(n-1) + ... + p[n-1], differentiable in p and x."""
    p = _tensor(p) if isinstance(p, Tensor) else np.asarray(value_of(p), dtype=np.float64)
    y = O.mul(O.add(O.mul(x, 0.0), 1.0), p[0])
    for k in range(1, p.shape[0]):
        y = O.add(O.mul(y, x), p[k])
    return y


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, **kw):
    """np.cov without weights: (X - mean) (X - mean)^T / (N - ddof)."""
    if fweights is not None or aweights is not None:
        raise TypeError("numpy.cov: fweights / aweights are not supported on tapegrad Tensors")
    X = O.tensor_of(m)
    if X.ndim == 1:
        X = O.reshape(X, (1, -1))
    if not rowvar and X.shape[0] != 1:
        X = O.transpose(X)
    if y is not None:
        Y = O.tensor_of(y)
        Y = O.reshape(Y, (1, -1)) if Y.ndim == 1 else (Y if rowvar else O.transpose(Y))
        X = O.concatenate([X, Y], 0)
    n = X.shape[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    Xc = O.sub(X, O.mean(X, 1, True))
    c = O.div(O.matmul(Xc, O.transpose(Xc)), float(n - ddof))
    return O.reshape(c, ()) if c.shape == (1, 1) else c


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, **kw):
    """np.corrcoef: the covariance scaled by the standard deviations (clipped to [-1, 1])."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return O.div(c, c)
    d = O.sqrt(_diag(c))
    c = O.div(O.div(c, O.reshape(d, (-1, 1))), O.reshape(d, (1, -1)))
    return O.clip(c, -1.0, 1.0)


def _diag(c):
    n = c.shape[0]
    return O.getitem(c, (np.arange(n), np.arange(n)))


# ---- functions of functions -----------------------------------------------------------------


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """np.piecewise: each function (or constant) applied where its condition holds."""
    x = _tensor(x)
    if isinstance(condlist, np.ndarray) and condlist.dtype == bool and condlist.ndim == x.ndim:
        condlist = [condlist]
    conds = [O.truth(c) for c in condlist]
    if len(funclist) == len(conds) + 1:  # the last function: where no condition holds
        conds.append(~np.any(conds, axis=0) if conds else np.ones(x.shape, bool))
    elif len(funclist) != len(conds):
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} "
            "functions are expected"
        )
    out = O.mul(x, 0.0)
    for c, f in zip(conds, funclist, strict=True):
        c = np.broadcast_to(c, x.shape)
        if not c.any():
            continue
        vals = f(O.getitem(x, c), *args, **kw) if callable(f) else f
        out = O.setitem(out, c, vals)
    return out


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """np.apply_along_axis: ``func1d`` on every 1-D slice along ``axis``, results stacked."""
    a = _tensor(arr)
    if not -a.ndim <= axis < a.ndim:
        raise np.exceptions.AxisError(axis, a.ndim)
    axis %= a.ndim
    moved = _moveaxis(a, axis)
    outer = moved.shape[:-1]
    outs = [
        O.tensor_of(func1d(O.getitem(moved, idx), *args, **kwargs)) for idx in np.ndindex(*outer)
    ]
    if not outs:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    res = O.stack(outs, 0)
    inner = outs[0].shape
    res = O.reshape(res, tuple(outer) + tuple(inner))
    k = len(inner)
    perm = list(range(axis)) + [len(outer) + j for j in range(k)] + list(range(axis, len(outer)))
    return O.transpose(res, tuple(perm)) if perm != list(range(len(perm))) else res


def _moveaxis(a, axis):
    perm = [d for d in range(a.ndim) if d != axis] + [axis]
    return O.transpose(a, tuple(perm))


# ---- FFT shifts, diagonals, index tricks ----------------------------------------------------

fftshift = _rearrange(np.fft.fftshift, "fftshift")
ifftshift = _rearrange(np.fft.ifftshift, "ifftshift")


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: the last axis of ``x`` on the diagonal ``offset`` of new square
    matrices in axes ``dim1``, ``dim2`` of the result."""
    x = _tensor(x)
    n = x.shape[-1]
    m = n + abs(int(offset))
    place = np.zeros((n, m * m))
    rows = np.arange(n) + max(-offset, 0)
    cols = np.arange(n) + max(offset, 0)
    place[np.arange(n), rows * m + cols] = 1.0
    out = O.reshape(O.matmul(x, place), x.shape[:-1] + (m, m))
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    if (d1, d2) == (nd - 2, nd - 1):
        return out
    rest = iter(range(nd - 2))
    perm = [nd - 2 if d == d1 else nd - 1 if d == d2 else next(rest) for d in range(nd)]
    inverse = np.argsort(perm)
    return O.transpose(out, tuple(int(p) for p in np.argsort(inverse)))


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """HIPS autograd's make_diagonal: the last axis of ``D`` on the diagonal of new square
    matrices in axes ``axis1``, ``axis2``."""
    return diag_embed(D, offset, axis1, axis2)


class _Concatenator:
    """``tnp.r_[...]`` / ``tnp.c_[...]``: NumPy's index tricks with Tensors among the items
    (numbers, arrays, Tensors and slices, which give ``arange`` / ``linspace`` as NumPy)."""

    def __init__(self, columns):
        self.columns = columns

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for it in items:
            if isinstance(it, str):
                raise TypeError(
                    "tapegrad.numpy.r_ / c_: string directives are not supported; "
                    "use tnp.concatenate or tnp.stack"
                )
            if isinstance(it, slice):
                it = np.r_[it]
            if not isinstance(it, Tensor):
                it = np.asarray(it)
                if it.dtype.kind == "c":  # (np.asarray(z, float64) dropped the imaginary part)
                    refuse_complex(f"tapegrad.numpy.r_ / c_: an item (dtype {it.dtype})")
                it = it.astype(np.float64)
            t = O.reshape(O.tensor_of(it), (-1,)) if np.ndim(it) == 0 else O.tensor_of(it)
            if self.columns and t.ndim == 1:
                t = O.reshape(t, (-1, 1))
            parts.append(t)
        return O.concatenate(parts, 1 if self.columns else 0)


r_ = _Concatenator(False)
c_ = _Concatenator(True)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    """np.full_like with a Tensor fill value: that value broadcast to the shape (its
    gradient is the sum over the copies)."""
    if not isinstance(fill_value, Tensor):  # only a's shape matters: NumPy's own array
        like = np.broadcast_to(np.zeros((), np.result_type(value_of(a))), np.shape(value_of(a)))
        return np.full_like(like, fill_value, dtype, order, subok, shape)
    shape = np.shape(value_of(a)) if shape is None else tuple(np.atleast_1d(shape).astype(int))
    if dtype is not None and np.dtype(dtype) != np.float64 and fill_value.requires_grad:
        raise TypeError("numpy.full_like: a fill value that requires grad stays float64")
    return O.broadcast_to(fill_value, shape).clone()


def full(shape, fill_value, dtype=None, order="C", **kw):
    """np.full with a Tensor fill value (``tnp.full``; ``np.full`` converts its fill value
    to an array before any dispatch, so only this name keeps the graph)."""
    if not isinstance(fill_value, Tensor):
        return np.full(shape, fill_value, dtype, order, **kw)
    return full_like(np.empty(shape), fill_value, dtype)


FUNCTIONS.update(
    {
        np.nanmax: _nan_extreme("max"),
        np.nanmin: _nan_extreme("min"),
        np.nancumsum: _nan_scan(O.cumsum, 0.0),
        np.nancumprod: _nan_scan(O.cumprod, 1.0),
    }
)
UFUNCS = {np.heaviside: heaviside, np.copysign: copysign, np.ldexp: ldexp}
