"""One differentiable case for every NumPy / SciPy name docs/COVERAGE.md lists as supported.

``CASES[qualified name] = (function of arrays or Tensors, input arrays)``; a distribution's
function returns a dict of its methods' results.  The coverage test checks each against finite
differences (gradient and tangent), and tools/coverage_table.py traces each (each method of a
distribution) to tell whether ``tg.trace`` replays it in compiled code.  A name newly supported
needs a case here (the coverage test says which are missing)."""

import importlib

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.scipy import signal

rng = np.random.default_rng(3)


def _u(lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape)


# away from integers, half-integers and 0: floor, round, sign, cbrt... are smooth there
S = np.array([[0.31, -1.27, 2.44], [-0.62, 1.83, -2.16]])
P = np.array([[0.45, 1.35, 2.2], [0.7, 1.9, 0.35]])  # positive
U = np.array([[0.31, -0.27, 0.64], [-0.62, 0.13, -0.46]])  # inside (-1, 1)
T = S * 1.1 + 0.05  # a second operand, no ties
V3 = _u(-1.5, 1.5, 3)
X34 = _u(-1.5, 1.5, 3, 4)

# the same call on one sample: (sample, NumPy names)
UNARY = [
    (
        S,
        [
            "negative",
            "positive",
            "abs",
            "absolute",
            "fabs",
            "exp",
            "expm1",
            "sin",
            "cos",
            "tanh",
            "sinh",
            "cosh",
            "arctan",
            "atan",
            "arcsinh",
            "asinh",
            "cbrt",
            "square",
            "exp2",
            "deg2rad",
            "degrees",
            "rad2deg",
            "radians",
            "conj",
            "conjugate",
            "real",
            "imag",
            "real_if_close",
            "nan_to_num",
            "sinc",
            "floor",
            "ceil",
            "rint",
            "round",
            "around",
            "trunc",
            "fix",
            "sign",
            "angle",
            "copy",
            "ravel",
            "transpose",
            "permute_dims",
            "atleast_1d",
            "atleast_2d",
            "atleast_3d",
            "flip",
            "flipud",
            "fliplr",
            "rot90",
            "diagonal",
            "trace",
            "tril",
            "triu",
            "diag",
            "gradient",
            "cumsum",
            "cumprod",
            "diff",
            "sort",
            "sum",
            "mean",
            "prod",
            "max",
            "min",
            "amax",
            "amin",
            "var",
            "std",
            "ptp",
            "median",
            "average",
            "squeeze",
            "diagflat",
            "ediff1d",
            "matrix_transpose",
            "trapezoid",
            "unstack",
        ],
    ),
    (P, ["log", "log10", "log2", "sqrt", "reciprocal", "log1p"]),
    (U, ["arcsin", "asin", "arccos", "acos", "arctanh", "atanh", "tan"]),
    (P + 1.0, ["arccosh", "acosh"]),
]
BINARY = (
    S,
    T,
    [
        "add",
        "subtract",
        "multiply",
        "divide",
        "true_divide",
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "arctan2",
        "atan2",
        "hypot",
        "logaddexp",
        "logaddexp2",
        "remainder",
        "mod",
        "fmod",
        "floor_divide",
        "divmod",
        "kron",
        "append",
        "outer",
        "vdot",
        "cross",
    ],
)

CASES = {}
for _x, _names in UNARY:
    for _n in _names:
        CASES[f"numpy.{_n}"] = (getattr(np, _n), [_x])
for _n in BINARY[2]:
    CASES[f"numpy.{_n}"] = (getattr(np, _n), [BINARY[0], BINARY[1]])

CASES.update(
    {
        "numpy.power": (np.power, [P, S]),
        "numpy.pow": (np.pow, [P, S]),
        "numpy.float_power": (np.float_power, [P, S]),
        "numpy.matmul": (np.matmul, [S, X34]),
        "numpy.dot": (np.dot, [S, _u(-1, 1, 3, 2)]),
        "numpy.inner": (np.inner, [S, T]),
        "numpy.tensordot": (lambda a, b: np.tensordot(a, b, ([1], [0])), [S, _u(-1, 1, 3, 2)]),
        "numpy.einsum": (lambda a, b: np.einsum("ij,kj->ik", a, b), [S, T]),
        "numpy.vecdot": (np.vecdot, [S, T]),
        "numpy.clip": (lambda a: np.clip(a, -1.0, 1.5), [S]),
        "numpy.where": (lambda a, b: np.where(S > 0, a, b), [S, T]),
        "numpy.concatenate": (lambda a, b: np.concatenate([a, b], axis=1), [S, T]),
        "numpy.concat": (lambda a, b: np.concat([a, b]), [S, T]),
        "numpy.stack": (lambda a, b: np.stack([a, b], axis=1), [S, T]),
        "numpy.hstack": (lambda a, b: np.hstack([a, b]), [S, T]),
        "numpy.vstack": (lambda a, b: np.vstack([a, b]), [S, T]),
        "numpy.row_stack": (lambda a, b: np.row_stack([a, b]), [S, T]),  # deprecated alias
        "numpy.column_stack": (lambda a, b: np.column_stack([a, b]), [V3, X34]),
        "numpy.dstack": (lambda a, b: np.dstack([a, b]), [S, T]),
        "numpy.reshape": (lambda a: np.reshape(a, (3, 2)), [S]),
        "numpy.swapaxes": (lambda a: np.swapaxes(a, 0, 1), [S]),
        "numpy.moveaxis": (lambda a: np.moveaxis(a, 0, -1), [_u(-1, 1, 2, 3, 2)]),
        "numpy.rollaxis": (lambda a: np.rollaxis(a, 2), [_u(-1, 1, 2, 3, 2)]),
        "numpy.expand_dims": (lambda a: np.expand_dims(a, 1), [S]),
        "numpy.broadcast_to": (lambda a: np.broadcast_to(a, (4, 2, 3)), [S]),
        "numpy.split": (lambda a: np.split(a, 3, axis=1), [S]),
        "numpy.array_split": (lambda a: np.array_split(a, 2, axis=1), [S]),
        "numpy.hsplit": (lambda a: np.hsplit(a, [1]), [S]),
        "numpy.vsplit": (lambda a: np.vsplit(a, 2), [S]),
        "numpy.dsplit": (lambda a: np.dsplit(a, 2), [_u(-1, 1, 2, 2, 4)]),
        "numpy.repeat": (lambda a: np.repeat(a, [2, 0, 1], axis=1), [S]),
        "numpy.tile": (lambda a: np.tile(a, (2, 1)), [S]),
        "numpy.roll": (lambda a: np.roll(a, (1, -1), axis=(0, 1)), [S]),
        "numpy.pad": (lambda a: np.pad(a, ((1, 0), (2, 3)), "reflect"), [S]),
        "numpy.select": (lambda a, b: np.select([S > 1, S < 0], [a, b], 0.5), [S, T]),
        "numpy.linspace": (lambda a, b: np.linspace(a, b, 4, axis=1), [V3, V3 + 2.0]),
        "numpy.convolve": (lambda a, v: np.convolve(a, v, "same"), [_u(-1, 1, 5), V3]),
        "numpy.correlate": (lambda a, v: np.correlate(a, v, "full"), [_u(-1, 1, 5), V3]),
        "numpy.partition": (lambda a: np.partition(a, 1, axis=1), [S]),
        "numpy.percentile": (lambda a: np.percentile(a, [20.0, 70.0], axis=1), [S]),
        "numpy.quantile": (lambda a: np.quantile(a, 0.4), [S]),
        "numpy.array": (lambda a: tnp.array([a[0], a[1] * 2]), [S]),
        "numpy.asarray": (lambda a: tnp.asarray([a[1], a[0]]), [S]),
        "numpy.asanyarray": (lambda a: tnp.asanyarray(a), [S]),
        "numpy.linalg.norm": (lambda a: np.linalg.norm(a, axis=1), [S]),
        "numpy.take": (lambda a: np.take(a, [4, 0, 4]), [S]),
        "numpy.take_along_axis": (
            lambda a: np.take_along_axis(a, np.array([[2, 0], [1, 1]]), 1),
            [S],
        ),
        "numpy.compress": (lambda a: np.compress([True, False, True], a, axis=1), [S]),
        "numpy.extract": (lambda a: np.extract(S > 0, a), [S]),
        "numpy.delete": (lambda a: np.delete(a, 1, axis=1), [S]),
        "numpy.insert": (lambda a, v: np.insert(a, 1, v, axis=1), [S, V3[:2]]),
        "numpy.resize": (lambda a: np.resize(a, (3, 3)), [S]),
        "numpy.block": (lambda a, b: np.block([[a], [b]]), [S, T]),
        "numpy.cumulative_sum": (lambda a: np.cumulative_sum(a, axis=0), [S]),
        "numpy.cumulative_prod": (lambda a: np.cumulative_prod(a, axis=1), [S]),
        "numpy.broadcast_arrays": (lambda a, b: np.broadcast_arrays(a, b[:1]), [S, T]),
        "numpy.meshgrid": (lambda a, b: np.meshgrid(a, b), [V3, V3 * 2]),
        "numpy.choose": (lambda a, b: np.choose([[0, 1, 0], [1, 1, 0]], [a, b]), [S, T]),
        "numpy.bincount": (lambda w: np.bincount([2, 0, 2], w), [V3]),
        "numpy.vander": (np.vander, [V3]),
        "numpy.logspace": (lambda a, b: np.logspace(a, b, 4), [V3, V3 + 1.0]),
        "numpy.geomspace": (lambda a, b: np.geomspace(a, b, 4), [P[0], P[1]]),
        "numpy.linalg.diagonal": (np.linalg.diagonal, [S]),
        "numpy.linalg.trace": (np.linalg.trace, [S]),
        "numpy.linalg.cross": (np.linalg.cross, [S, T]),
        "numpy.linalg.outer": (np.linalg.outer, [V3, V3 * 2]),
        "numpy.linalg.matmul": (np.linalg.matmul, [S, X34]),
        "numpy.linalg.tensordot": (lambda a, b: np.linalg.tensordot(a, b, axes=1), [S, X34]),
        "numpy.linalg.vecdot": (np.linalg.vecdot, [S, T]),
        "numpy.linalg.matrix_transpose": (np.linalg.matrix_transpose, [S]),
        "numpy.linalg.vector_norm": (lambda a: np.linalg.vector_norm(a, axis=0), [S]),
        "numpy.linalg.matrix_norm": (np.linalg.matrix_norm, [S]),
        "numpy.nansum": (lambda a: np.nansum(np.where(S > 0.5, np.nan, a), axis=1), [S]),
        "numpy.nanprod": (lambda a: np.nanprod(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nanmean": (lambda a: np.nanmean(np.where(S > 0.5, np.nan, a), axis=0), [S]),
        "numpy.nanvar": (lambda a: np.nanvar(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nanstd": (lambda a: np.nanstd(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nanmax": (lambda a: np.nanmax(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nanmin": (lambda a: np.nanmin(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nancumsum": (lambda a: np.nancumsum(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nancumprod": (lambda a: np.nancumprod(np.where(S > 0.5, np.nan, a)), [S]),
        "numpy.nanmedian": (lambda a: np.nanmedian(np.where(S > 0.5, np.nan, a), axis=1), [S]),
        "numpy.nanquantile": (lambda a: np.nanquantile(np.where(S > 0.5, np.nan, a), 0.3), [S]),
        "numpy.nanpercentile": (lambda a: np.nanpercentile(a, [10.0, 80.0], axis=0), [S]),
        "numpy.interp": (lambda a: np.interp(a, [-2.0, 0.0, 1.0, 3.0], [0.0, 1.0, 4.0, 2.0]), [S]),
        "numpy.i0": (np.i0, [S]),
        "numpy.polyval": (lambda a, b: np.polyval(a, b), [V3, S]),
        "numpy.cov": (np.cov, [S]),
        "numpy.corrcoef": (np.corrcoef, [S]),
        "numpy.heaviside": (lambda a, b: np.heaviside(a, b) * a, [S, T]),
        "numpy.copysign": (lambda a, b: np.copysign(a, b), [S, T]),
        "numpy.ldexp": (lambda a: np.ldexp(a, np.array([1, -2, 3])), [S]),
        "numpy.piecewise": (lambda a: np.piecewise(a, [S < 0], [np.negative, np.square]), [S]),
        "numpy.apply_along_axis": (lambda a: np.apply_along_axis(lambda r: r * r[0], 1, a), [S]),
        "numpy.full_like": (lambda a: np.full_like(a, a[0, 1]) * a, [S]),
        "numpy.fft.fftshift": (np.fft.fftshift, [S]),
        "numpy.fft.ifftshift": (lambda a: np.fft.ifftshift(a, axes=1), [S]),
    }
)


def _spd(n):
    x = _u(-1, 1, n, n)
    return x @ x.T + n * np.eye(n)


WELL = _u(-1, 1, 3, 3) + 3.0 * np.eye(3)
SPD = _spd(3)
B3 = _u(-1, 1, 3, 2)
CASES.update(
    {
        "numpy.linalg.inv": (np.linalg.inv, [WELL]),
        "numpy.linalg.pinv": (np.linalg.pinv, [_u(-1, 1, 3, 2) + np.eye(3, 2)]),
        "numpy.linalg.det": (np.linalg.det, [WELL]),
        "numpy.linalg.slogdet": (lambda a: np.linalg.slogdet(a)[1], [WELL]),
        "numpy.linalg.solve": (np.linalg.solve, [WELL, B3]),
        "numpy.linalg.lstsq": (
            lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
            [_u(-1, 1, 4, 2) + np.eye(4, 2), _u(-1, 1, 4)],
        ),
        "numpy.linalg.cholesky": (np.linalg.cholesky, [SPD]),
        "numpy.linalg.qr": (lambda a: np.linalg.qr(a), [WELL]),
        # eigenvectors and singular vectors only up to sign: their squares are well defined
        "numpy.linalg.eigh": (lambda a: [np.linalg.eigh(a)[0], np.linalg.eigh(a)[1] ** 2], [SPD]),
        "numpy.linalg.eigvalsh": (np.linalg.eigvalsh, [SPD]),
        "numpy.linalg.svd": (
            lambda a: [
                np.linalg.svd(a, full_matrices=False)[1],
                np.linalg.svd(a, full_matrices=False)[0] ** 2,
            ],
            [WELL],
        ),
        "numpy.linalg.matrix_power": (lambda a: np.linalg.matrix_power(a, 3), [S[:, :2]]),
        "numpy.linalg.multi_dot": (
            lambda a, b, c: np.linalg.multi_dot([a, b, c]),
            [S, X34, _u(-1, 1, 4, 2)],
        ),
    }
)


def _scipy_linalg():
    return importlib.import_module("tapegrad.scipy.linalg")  # SciPy is an optional extra


_AB = _u(-1, 1, 4, 4)
_AB[2] += 4.0  # banded (1, 2) with a strong diagonal
CASES.update(
    {
        "scipy.linalg.solve_triangular": (
            lambda a, b: _scipy_linalg().solve_triangular(a, b, lower=True),
            [WELL, B3],
        ),
        "scipy.linalg.cho_factor": (lambda a: _scipy_linalg().cho_factor(a)[0], [SPD]),
        "scipy.linalg.cho_solve": (
            lambda a, b: _scipy_linalg().cho_solve(_scipy_linalg().cho_factor(a), b),
            [SPD, B3],
        ),
        "scipy.linalg.solve_banded": (
            lambda ab, b: _scipy_linalg().solve_banded((1, 2), ab, b),
            [_AB, _u(-1, 1, 4)],
        ),
        "scipy.linalg.solve_sylvester": (
            lambda a, b, q: _scipy_linalg().solve_sylvester(a, b, q),
            [WELL, _u(-1, 1, 2, 2) + 3 * np.eye(2), B3],
        ),
        "scipy.linalg.sqrtm": (lambda a: _scipy_linalg().sqrtm(a), [SPD]),
        "scipy.linalg.expm": (lambda a: _scipy_linalg().expm(a), [0.5 * S[:, :2]]),
    }
)


def _signal_convolve(a, b):
    # axes given: plain arrays take tapegrad's path too, so the case needs no SciPy
    return signal.convolve(a, b, "same", ([0, 1], [0, 1]))


CASES["scipy.signal.convolve"] = (_signal_convolve, [X34, _u(-1, 1, 2, 3)])


def _special():
    return importlib.import_module("tapegrad.scipy.special")  # SciPy is an optional extra


def _sp(name, *fixed):
    """special.<name>(x, *fixed), looked up when called (SciPy may be missing)."""
    return lambda x: getattr(_special(), name)(x, *fixed)


def _sp_first(name, first):
    """special.<name>(first, x): differentiable in the second argument only."""
    return lambda x: getattr(_special(), name)(first, x)


_P01 = np.array([[0.15, 0.35, 0.62], [0.81, 0.27, 0.44]])  # inside (0, 1)
for _name, _x in [
    ("expit", S),
    ("logit", _P01),
    ("erf", S),
    ("erfc", S),
    ("erfinv", U),
    ("erfcinv", _P01 + 0.3),
    ("gamma", P),
    ("gammaln", P),
    ("gammasgn", P),
    ("rgamma", P),
    ("digamma", P),
    ("psi", P),
    ("j0", P),
    ("j1", P),
    ("y0", P),
    ("y1", P),
    ("i0", S),
    ("i1", S),
    ("i0e", S),
    ("i1e", S),
    ("erfcx", S),
    ("ndtr", S),
    ("log_ndtr", S),
    ("ndtri", _P01),
    ("k0", P),
    ("k1", P),
    ("k0e", P),
    ("k1e", P),
]:
    CASES[f"scipy.special.{_name}"] = (_sp(_name), [_x])
CASES.update(
    {
        "scipy.special.logsumexp": (lambda x: _special().logsumexp(x, axis=1), [S]),
        "scipy.special.softmax": (lambda x: _special().softmax(x, axis=1), [S]),
        "scipy.special.log_softmax": (lambda x: _special().log_softmax(x, axis=0), [S]),
        "scipy.special.polygamma": (_sp_first("polygamma", 1), [P]),
        "scipy.special.multigammaln": (_sp("multigammaln", 2), [P + 1.0]),
        "scipy.special.beta": (lambda a, b: _special().beta(a, b), [P, P[::-1] + 0.1]),
        "scipy.special.betaln": (lambda a, b: _special().betaln(a, b), [P, P[::-1] + 0.1]),
        "scipy.special.betainc": (lambda x: _special().betainc(2.0, 3.0, x), [_P01]),
        "scipy.special.gammainc": (_sp_first("gammainc", 1.5), [P]),
        "scipy.special.gammaincc": (_sp_first("gammaincc", 1.5), [P]),
        "scipy.special.xlogy": (lambda x, y: _special().xlogy(x, y), [S, P]),
        "scipy.special.xlog1py": (lambda x, y: _special().xlog1py(x, y), [S, P]),
        "scipy.special.entr": (_sp("entr"), [P]),
        "scipy.special.rel_entr": (lambda x, y: _special().rel_entr(x, y), [P, P[::-1] + 0.1]),
        "scipy.special.kl_div": (lambda x, y: _special().kl_div(x, y), [P, P[::-1] + 0.1]),
        "scipy.special.jn": (_sp_first("jn", 2), [P]),
        "scipy.special.jv": (_sp_first("jv", 1.5), [P]),
        "scipy.special.yn": (_sp_first("yn", 2), [P]),
        "scipy.special.yv": (_sp_first("yv", 1.5), [P]),
        "scipy.special.iv": (_sp_first("iv", 1.5), [P]),
        "scipy.special.ive": (_sp_first("ive", 1.5), [P]),
        "scipy.special.zeta": (lambda q: _special().zeta(2.5, q), [P]),
    }
)


def _odeint(y0, k):
    # on plain arrays odeint is SciPy's LSODA, equal to tapegrad's solver only to the
    # tolerance: the case always takes tapegrad's path, so values compare to rounding
    integrate = importlib.import_module("tapegrad.scipy.integrate")
    decay = lambda y, t, k: -k * y * y  # noqa: E731
    return integrate.odeint(
        decay,
        tnp.asarray(tg.tensor(y0) if isinstance(y0, np.ndarray) else y0),
        np.array([0.0, 0.5, 1.0]),
        k,
        rtol=1e-10,
        atol=1e-10,
    )


CASES["scipy.integrate.odeint"] = (_odeint, [P[0], np.array(0.7)])


def _stats():
    return importlib.import_module("tapegrad.scipy.stats")  # SciPy is an optional extra


class Methods:
    """The case of a distribution: ``calls[method](*args)`` for each of its methods; called,
    the dict of all their results."""

    def __init__(self, calls):
        self.calls = calls

    def __call__(self, *args):
        return {method: call(*args) for method, call in self.calls.items()}


def _loc_scale_case(name, shapes):
    """Every method of a location-scale distribution, differentiable in x, loc and scale; the
    densities in the shape parameters too (the cdfs take them as constants: their derivative
    in a shape parameter has no closed form here)."""

    def density(method):
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            x, *shape_args, loc=loc, scale=scale
        )

    def cdf_like(method):
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            x, *shapes, loc=loc, scale=scale
        )

    def quantile(method):  # at q = expit(x) in (0, 1); the shapes constant (t, beta refuse)
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            _special().expit(x), *shapes, loc=loc, scale=scale
        )

    calls = {m: density(m) for m in ("logpdf", "pdf")}
    calls.update({m: cdf_like(m) for m in ("cdf", "sf", "logcdf", "logsf")})
    calls.update({m: quantile(m) for m in ("ppf", "isf")})
    return Methods(calls)


def _special():
    return importlib.import_module("tapegrad.scipy.special")


def _closed_form_case(name, moments=True):
    """Every method of a distribution whose cdfs and quantiles are closed forms (or, for
    truncnorm's quantiles, the implicit function theorem): differentiable in x, loc, scale
    and the shape parameters; the moments too."""

    def at_x(method):
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            x, *shape_args, loc=loc, scale=scale
        )

    def at_q(method):
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            _special().expit(x), *shape_args, loc=loc, scale=scale
        )

    def moment(method):
        return lambda x, loc, scale, *shape_args: getattr(getattr(_stats(), name), method)(
            *shape_args, loc=loc, scale=scale
        )

    calls = {m: at_x(m) for m in ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf")}
    calls.update({m: at_q(m) for m in ("ppf", "isf")})
    if moments:
        calls.update({m: moment(m) for m in ("mean", "var", "std", "entropy")})
    return Methods(calls)


_REAL, _POSITIVE = (S, np.array(0.2), np.array(1.4)), (P, np.array(-0.1), np.array(1.3))
for _name, _xs, _shapes in [
    ("norm", _REAL, ()),
    ("laplace", _REAL, ()),
    ("t", _REAL, (3.5,)),
    ("expon", _POSITIVE, ()),
    ("gamma", _POSITIVE, (2.5,)),
    ("chi2", _POSITIVE, (3.5,)),
    ("beta", (_P01, np.array(-0.05), np.array(1.1)), (2.2, 3.1)),
]:
    CASES[f"scipy.stats.{_name}"] = (
        _loc_scale_case(_name, _shapes),
        [*_xs, *(np.array(a) for a in _shapes)],
    )

for _name, _xs, _shapes, _moments in [
    ("uniform", (_P01, np.array(-0.05), np.array(1.1)), (), True),
    ("lognorm", _POSITIVE, (0.8,), True),
    ("cauchy", _REAL, (), False),  # (its mean and variance are NaN)
    ("logistic", _REAL, (), True),
    ("weibull_min", _POSITIVE, (1.7,), True),
    ("halfnorm", (P, np.array(-0.1), np.array(1.3)), (), True),
    ("truncnorm", _REAL, (-2.0, 2.0), True),
]:
    CASES[f"scipy.stats.{_name}"] = (
        _closed_form_case(_name, _moments),
        [*_xs, *(np.array(a) for a in _shapes)],
    )


def _discrete_case(name, k, fixed, smooth_n=False):
    """pmf, logpmf, cdf, sf, mean and var of a discrete distribution at counts k,
    differentiable in p (and in nbinom's n for its pmf, logpmf and moments)."""

    def call(method):
        def f(*params):
            d = getattr(_stats(), name)
            if method in ("mean", "var"):
                return getattr(d, method)(*fixed, *params)
            if smooth_n and method in ("cdf", "sf"):  # (no derivative in n there)
                return getattr(d, method)(k, 2.5, params[-1])
            return getattr(d, method)(k, *fixed, *params)

        return f

    return Methods({m: call(m) for m in ("pmf", "logpmf", "cdf", "sf", "mean", "var")})


CASES.update(
    {
        "scipy.stats.binom": (
            _discrete_case("binom", np.array([[0, 1, 3], [2, 5, 6]]), (6,)),
            [np.array([[0.3, 0.55, 0.4], [0.62, 0.8, 0.25]])],
        ),
        "scipy.stats.nbinom": (
            _discrete_case("nbinom", np.array([[0, 1, 3], [2, 5, 6]]), (), smooth_n=True),
            [np.array(2.5), np.array([[0.3, 0.55, 0.4], [0.62, 0.8, 0.25]])],
        ),
        "scipy.stats.geom": (
            _discrete_case("geom", np.array([[1, 2, 3], [4, 1, 6]]), ()),
            [np.array([[0.3, 0.55, 0.4], [0.62, 0.8, 0.25]])],
        ),
        "scipy.stats.bernoulli": (
            _discrete_case("bernoulli", np.array([[0, 1, 1], [0, 0, 1]]), ()),
            [np.array([[0.3, 0.55, 0.4], [0.62, 0.8, 0.25]])],
        ),
    }
)

_K = np.array([[0, 1, 3], [2, 5, 1]])  # Poisson counts: discrete, differentiable in mu only
_SIMPLEX = np.array([0.2, 0.5, 0.3])  # a Dirichlet sample: differentiable in alpha


def _spd_of(root):
    """A symmetric positive definite covariance from any square matrix."""
    return tnp.matmul(root, tnp.transpose(root)) + 0.5 * np.eye(len(root))


CASES.update(
    {
        "scipy.stats.poisson": (
            Methods(
                {
                    m: (lambda mu, m=m: getattr(_stats().poisson, m)(_K, mu))
                    for m in ("logpmf", "pmf", "cdf")
                }
            ),
            [P + 0.5],
        ),
        "scipy.stats.dirichlet": (
            Methods(
                {
                    m: (lambda a, m=m: getattr(_stats().dirichlet, m)(_SIMPLEX, a))
                    for m in ("logpdf", "pdf")
                }
            ),
            [np.array([1.5, 2.2, 0.9])],
        ),
        "scipy.stats.multivariate_normal": (
            Methods(
                {
                    m: (
                        lambda x, mean, root, m=m: getattr(_stats().multivariate_normal, m)(
                            x, mean, _spd_of(root)
                        )
                    )
                    for m in ("logpdf", "pdf")
                }
            ),
            [_u(-1, 1, 4, 3), _u(-0.5, 0.5, 3), _u(-1, 1, 3, 3)],
        ),
    }
)
