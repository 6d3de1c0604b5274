"""A hunt for silent escapes at the boundary of the transforms.

Plain NumPy / Python programs are differentiated with ``tg.grad`` & co., ``tg.trace`` and the
Tensor API at the places where a derivative could silently go wrong: conversions to plain
arrays or Python numbers, stores into plain arrays, ``out=``, Python built-ins, complex values,
dtypes other than float64, NumPy and SciPy functions tapegrad does not differentiate, array
subclasses (masked arrays, ``np.matrix``), pickling, and trace replays where a value decided a
branch, an index or a shape at recording.  Each case asserts EITHER the right derivative
(against central differences of the same program run by NumPy, or PyTorch float64) OR an
error whose message names the function or conversion.  The disagreements found are kept as
strict xfails that assert the correct behaviour.
"""

import copy
import functools
import math
import operator
import pickle
import struct
import warnings

import numpy as np
import pytest
from finite_differences import central_gradient

import tapegrad as tg
from tapegrad.trace import ArgumentsChanged

X = np.array([0.3, -0.7, 1.1])  # away from every kink and discontinuity used below
X0 = X  # where traces are recorded
X1 = np.array([-0.4, 0.9, 2.6])  # where they are replayed: most decisions go the other way
COMPLEX = "tapegrad does not support complex numbers"


def _fd(f, x, eps=1e-6):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return central_gradient(lambda a: float(f(a)), x, eps)


def assert_grad(f, x=X, rtol=1e-5, atol=1e-6):
    """tapegrad's gradient of the plain NumPy program ``f`` against central differences of f."""
    x = np.asarray(x, dtype=float)
    got = tg.grad(f)(x)
    np.testing.assert_allclose(got, _fd(f, x), rtol=rtol, atol=atol)


def assert_refused(call, fragment, exc=TypeError):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value), str(info.value)
    return info.value


def right_or_refused(call, want, fragment, exc=TypeError):
    """EITHER the right value OR an error naming ``fragment`` (used by the xfails)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            got = call()
    except exc as e:
        assert fragment in str(e), str(e)
        return
    np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-9, atol=1e-12)


# ---- 1. conversions to plain arrays and Python numbers raise -------------------------------------
def _store(x):
    a = np.zeros(3)
    a[0] = x[0]
    return np.sum(a**2)


def _store_fancy(x):
    a = np.zeros(3)
    a[[0, 1]] = x[:2]
    return np.sum(a)


def _store_mask(x):
    a = np.zeros(3)
    a[np.array([True, False, True])] = x[:2]
    return np.sum(a)


def _store_ellipsis(x):
    a = np.zeros(3)
    a[...] = x
    return np.sum(a)


def _store_row(x):
    a = np.zeros((1, 3))
    a[0] = x
    return np.sum(a)


def _store_list(x):
    a = np.zeros(3)
    a[:] = list(x)
    return np.sum(a)


def _fill(x):
    a = np.zeros(3)
    a.fill(x[0])
    return np.sum(a**2)


def _iadd(x):
    a = np.zeros(3)
    a += x
    return np.sum(a**2)


def _imul(x):
    a = np.ones(3)
    a *= x
    return np.sum(a)


def _add_out_plain(x):
    a = np.zeros(3)
    np.add(a, x, out=a)
    return np.sum(a**2)


def _put(x):
    a = np.zeros(3)
    np.put(a, [0, 1], x[:2])
    return np.sum(a**2)


def _put_method(x):
    a = np.zeros(3)
    a.put([0], x[0])
    return np.sum(a)


def _place(x):
    a = np.zeros(3)
    np.place(a, [True, False, True], x[:2])
    return np.sum(a**2)


def _putmask(x):
    a = np.zeros(3)
    np.putmask(a, [True, False, True], x)
    return np.sum(a)


def _copyto(x):
    a = np.zeros(3)
    np.copyto(a, x)
    return np.sum(a**2)


def _copyto_scalar(x):
    a = np.zeros(3)
    np.copyto(a, x[0])
    return np.sum(a)


def _fill_diagonal(x):
    a = np.zeros((3, 3))
    np.fill_diagonal(a, x)
    return np.sum(a**2)


def _add_at(x):
    a = np.zeros(3)
    np.add.at(a, [0, 0], x[1])
    return np.sum(a)


def _put_along_axis(x):
    a = np.zeros(3)
    np.put_along_axis(a, np.array([0]), x[:1], axis=0)
    return np.sum(a)


def _setfield(x):
    a = np.zeros(3)
    a.setfield(x, np.float64)
    return np.sum(a)


def _flat_assign(x):
    a = np.zeros(3)
    a.flat = x
    return np.sum(a)


def _real_assign(x):
    a = np.zeros(3)
    a.real = x
    return np.sum(a)


ARRAY = "__array__"
FLOAT = "__float__"
CONVERSIONS = {
    "np.asarray": (lambda x: np.sum(np.asarray(x) ** 2), ARRAY),
    "np.asarray dtype float": (lambda x: np.sum(np.asarray(x, dtype=float) ** 2), ARRAY),
    "np.array": (lambda x: np.sum(np.array(x) ** 2), ARRAY),
    "np.array copy=None": (lambda x: np.sum(np.array(x, copy=None) ** 2), ARRAY),
    "np.array dtype object": (lambda x: np.sum(np.array(x, dtype=object)), ARRAY),
    "np.array of a list of items": (lambda x: np.sum(np.array([x[0], x[1]]) ** 2), ARRAY),
    "np.array nested with a constant": (lambda x: np.sum(np.array([[x[0], 1.0]]) ** 2), ARRAY),
    "np.asarray list dtype object": (lambda x: np.sum(np.asarray([x], dtype=object)), ARRAY),
    "np.asanyarray": (lambda x: np.sum(np.asanyarray(x) ** 2), ARRAY),
    "np.ascontiguousarray": (lambda x: np.sum(np.ascontiguousarray(x) ** 2), ARRAY),
    "np.asfortranarray": (lambda x: np.sum(np.asfortranarray(x) ** 2), ARRAY),
    "np.require": (lambda x: np.sum(np.require(x) ** 2), ARRAY),
    "x.__array__()": (lambda x: np.sum(x.__array__() ** 2), ARRAY),
    "np.float64 of an array": (lambda x: np.sum(np.float64(x)), ARRAY),
    "np.float64 of an item": (lambda x: np.float64(x[0]) * x[1], ARRAY),
    "np.complex128 of an item": (lambda x: np.complex128(x[0]).real * x[1], ARRAY),
    "concatenate lists of items": (
        lambda x: np.sum(np.concatenate([[x[0]], [x[1]]]) ** 2),
        ARRAY,
    ),
    "np.append a list holding an item": (lambda x: np.sum(np.append(x, [1.0, x[0]]) ** 2), ARRAY),
    "maximum.reduce of a list": (lambda x: np.maximum.reduce([x[0], x[1]]), ARRAY),
    "np.full traced fill": (lambda x: np.sum(np.full(3, x[0])), ARRAY),
    "np.arange traced step": (lambda x: np.sum(np.arange(0.0, 3.0, x[2]) * x[0]), ARRAY),
    "np.arange traced start": (lambda x: np.sum(np.arange(x[0], 3.0)), ARRAY),
    "np.kaiser traced beta": (lambda x: np.sum(np.kaiser(4, x[2])), ARRAY),
    "as_strided": (
        lambda x: np.sum(np.lib.stride_tricks.as_strided(x, (2, 2), (8, 8)) ** 2),
        ARRAY,
    ),
    "np.vectorize": (lambda x: np.sum(np.vectorize(lambda t: t * t)(x)), ARRAY),
    "np.vectorize otypes": (
        lambda x: np.sum(np.vectorize(lambda t: t * 2, otypes=[float])(x)),
        ARRAY,
    ),
    "np.vectorize signature": (
        lambda x: np.sum(np.vectorize(lambda t: t * 2, signature="(n)->(n)")(x)),
        ARRAY,
    ),
    "np.ma.masked_array of a traced value": (
        lambda x: np.sum(np.ma.masked_array(x, mask=[0, 1, 0])),
        ARRAY,
    ),
    "np.ma.masked_where": (lambda x: np.sum(np.ma.masked_where(x > 1, x)), ARRAY),
    "np.ma.sum": (lambda x: np.ma.sum(x), ARRAY),
    "rng.normal(loc=x)": (lambda x: np.sum(np.random.default_rng(0).normal(loc=x)), ARRAY),
    "rng.normal(scale=x)": (
        lambda x: np.sum(np.random.default_rng(0).normal(0.0, x**2)),
        ARRAY,
    ),
    "np.random.normal(x)": (lambda x: np.sum(np.random.normal(x)), ARRAY),
    "rng.uniform(x, x + 1)": (
        lambda x: np.sum(np.random.default_rng(0).uniform(x, x + 1)),
        ARRAY,
    ),
    "rng.exponential(x)": (
        lambda x: np.sum(np.random.default_rng(0).exponential(x**2)),
        ARRAY,
    ),
    "rng.choice(p=x)": (
        lambda x: np.random.default_rng(0).choice(3, p=x**2 / np.sum(x**2)) * x[0],
        ARRAY,
    ),
    "rng.permutation(x)": (
        lambda x: np.sum(np.random.default_rng(0).permutation(x) * np.arange(3.0)),
        ARRAY,
    ),
    "np.polynomial polyval coefficients": (
        lambda x: np.polynomial.polynomial.polyval(2.0, x),
        ARRAY,
    ),
    "np.polynomial.Polynomial": (lambda x: np.polynomial.Polynomial(x)(2.0), ARRAY),
    "np.polynomial legval coefficients": (lambda x: np.polynomial.legendre.legval(0.5, x), ARRAY),
    "float()": (lambda x: float(x[0]) * x[1], FLOAT),
    "math.sin": (lambda x: math.sin(x[0]) + x[1], FLOAT),
    "math.exp": (lambda x: math.exp(x[0]) + x[1], FLOAT),
    "math.floor": (lambda x: math.floor(x[2]) * x[0], FLOAT),
    "math.fsum": (lambda x: math.fsum(x) * 1.0, FLOAT),
    "math.hypot": (lambda x: math.hypot(x[0], x[1]), FLOAT),
    "math.dist": (lambda x: math.dist(x[:2], [0.0, 0.0]), FLOAT),
    "math.isclose": (lambda x: x[0] * (2.0 if math.isclose(x[1], -0.7) else 1.0), FLOAT),
    "math.copysign": (lambda x: math.copysign(x[0], -1.0), FLOAT),
    "round() to an int": (lambda x: round(x[0]) * x[1], FLOAT),
    "complex()": (lambda x: complex(x[0]).real * x[1], FLOAT),
    "list(map(float, x))": (lambda x: sum(map(float, x)) * x[0], FLOAT),
    "np.fromiter": (lambda x: np.sum(np.fromiter(x, float)), FLOAT),
    "statistics.fmean": (lambda x: __import__("statistics").fmean(x), FLOAT),
    "int()": (lambda x: x[int(x[2])] * 1.0, "__int__"),
    "store an item into a plain array": (_store, FLOAT),
    "fill a plain array": (_fill, FLOAT),
    "store through fancy indices": (_store_fancy, ARRAY),
    "store through a mask": (_store_mask, ARRAY),
    "store into a[...]": (_store_ellipsis, ARRAY),
    "store a row": (_store_row, ARRAY),
    "store list(x)": (_store_list, ARRAY),
    "a += x on a plain array": (_iadd, "numpy.add: out="),
    "a *= x on a plain array": (_imul, "numpy.multiply: out="),
    "np.add(a, x, out=a)": (_add_out_plain, "numpy.add: out="),
    "np.put": (_put, "numpy.put"),
    "a.put": (_put_method, ARRAY),
    "np.place": (_place, "numpy.place"),
    "np.putmask": (_putmask, "numpy.putmask"),
    "np.copyto": (_copyto, "numpy.copyto"),
    "np.copyto a scalar": (_copyto_scalar, "numpy.copyto"),
    "np.fill_diagonal": (_fill_diagonal, ARRAY),
    "np.add.at": (_add_at, "numpy.add.at"),
    "np.put_along_axis": (_put_along_axis, "numpy.put_along_axis"),
    "a.setfield": (_setfield, ARRAY),
    "a.flat = x": (_flat_assign, ARRAY),
    "a.real = x": (_real_assign, ARRAY),
    "np.add out=": (lambda x: np.sum(np.add(x, 1.0, out=np.zeros(3))), "numpy.add: out="),
    "np.dot out=": (lambda x: np.dot(x, x, out=np.zeros(())), "numpy.dot: out="),
    "np.sin out= a Tensor": (
        lambda x: (lambda y: (np.sin(x, out=y), np.sum(y))[1])(x * 1.0),
        "numpy.sin: out=",
    ),
    "np.cumsum out= a Tensor": (
        lambda x: (lambda y: (np.cumsum(x, out=y), np.sum(y * y))[1])(x * 1.0),
        "numpy.cumsum: out=",
    ),
    "np.maximum out= a Tensor": (
        lambda x: (lambda y: (np.maximum(x, 0.0, out=y), np.sum(y * y))[1])(x * 1.0),
        "numpy.maximum: out=",
    ),
    "np.clip out= a Tensor": (
        lambda x: (lambda y: (np.clip(x, 0.0, 1.0, out=y), np.sum(y))[1])(x * 1.0),
        "numpy.clip: out=",
    ),
    "np.cumsum dtype int": (lambda x: np.sum(np.cumsum(x, dtype=int) * x), "dtype="),
    "np.sum dtype int": (lambda x: np.sum(x, dtype=int) * x[0], "dtype="),
    "x.astype(float32)": (lambda x: np.sum(x.astype(np.float32) ** 2), "float32"),
    "x.astype(float16)": (lambda x: np.sum(x.astype(np.float16)), "float16"),
    "x.astype(longdouble)": (lambda x: np.sum(x.astype(np.longdouble) ** 2), "float128"),
    "x.astype(complex)": (lambda x: np.sum(np.abs(x.astype(complex))), "complex128"),
    "x.view(int64)": (lambda x: np.sum(x.view(np.int64) * x), "reinterpreting the bytes"),
    "x.view(np.ndarray)": (lambda x: np.sum(x.view(np.ndarray) ** 2), "view"),
    "x.tobytes": (lambda x: np.sum(np.frombuffer(x.tobytes()) ** 2), "tobytes"),
    "x.resize in place": (
        lambda x: (lambda y: (y.resize(4), np.sum(y))[1])(x * 1.0),
        "resize",
    ),
}


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_conversion_inside_grad_raises_naming_it(name):
    f, fragment = CONVERSIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert_refused(lambda: tg.grad(f)(X), fragment, exc=(TypeError, AttributeError))


# Python's own conversions: they raise, with Python's or NumPy's message
PYTHON_REFUSALS = {
    "memoryview": (lambda x: np.sum(np.asarray(memoryview(x)) ** 2), "bytes-like"),
    "np.frombuffer": (lambda x: np.sum(np.frombuffer(x) ** 2), "bytes-like"),
    "operator.index": (lambda x: x[operator.index(x[0])], "integer tensors"),
    "math.trunc": (lambda x: math.trunc(x[2]) * x[0], "__trunc__"),
    "decimal.Decimal": (
        lambda x: float(__import__("decimal").Decimal(x[0])) * x[1],
        "Decimal",
    ),
    "fractions.Fraction": (
        lambda x: float(__import__("fractions").Fraction(x[0])) * x[1],
        "Rational",
    ),
    "statistics.mean(list(x))": (lambda x: __import__("statistics").mean(list(x)), "convert"),
}


@pytest.mark.parametrize("name", sorted(PYTHON_REFUSALS))
def test_python_conversions_raise(name):
    f, fragment = PYTHON_REFUSALS[name]
    assert_refused(lambda: tg.grad(f)(X), fragment)


def test_struct_pack_raises():
    f = lambda x: struct.unpack("d", struct.pack("d", x[0]))[0] * x[1]  # noqa: E731
    assert_refused(lambda: tg.grad(f)(X), "not a float", exc=struct.error)


def test_nditer_raises():
    assert_refused(lambda: tg.grad(lambda x: sum(v for v in np.nditer(x)))(X), "Iterator")


def test_the_store_error_is_tapegrads_own_message():
    err = assert_refused(lambda: tg.grad(_store)(X), FLOAT)
    assert "sequence" not in str(err) and "tapegrad.numpy" in str(err)


# ---- 2. every transform and a trace recording refuse the same conversions ----------------------
TRANSFORMS = {
    "grad": lambda f: tg.grad(f)(X),
    "value_and_grad": lambda f: tg.value_and_grad(f)(X),
    "jacobian": lambda f: tg.jacobian(f)(X),
    "hessian": lambda f: tg.hessian(f)(X),
    "vjp": lambda f: tg.vjp(f, X)[1](1.0),
    "jvp": lambda f: tg.jvp(f, (X,), (np.ones(3),)),
    "hvp": lambda f: tg.hvp(f, (X,), (np.ones(3),)),
    "trace": lambda f: tg.trace(f, X),
}
PROGRAMS = {
    "asarray": (lambda x: np.sum(np.asarray(x) ** 2), ARRAY),
    "list of items": (lambda x: np.sum(np.array([x[0], x[1]]) ** 2), ARRAY),
    "math.sin": (lambda x: math.sin(x[0]) + x[1], FLOAT),
    "store": (_store, FLOAT),
    "out=": (lambda x: np.sum(np.add(x, 1.0, out=np.zeros(3))), "out="),
    "fft": (lambda x: np.sum(np.abs(np.fft.fft(x))), "numpy.fft.fft"),
    "scipy ufunc": (
        lambda x: np.sum(pytest.importorskip("scipy.special").erf(x)),
        "tapegrad.scipy.special.erf",
    ),
}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_every_transform_refuses(transform, program):
    f, fragment = PROGRAMS[program]
    assert_refused(lambda: TRANSFORMS[transform](f), fragment)


# ---- 3. NumPy / SciPy functions tapegrad does not differentiate raise, naming them -------------
def _scipy(name):
    return pytest.importorskip(name)


AM = lambda x: np.outer(x, x[::-1]) + np.diag([2.0, 3.0, 4.0])  # noqa: E731
UNSUPPORTED = {
    "np.fft.fft": (lambda x: np.sum(np.abs(np.fft.fft(x))), "numpy.fft.fft"),
    "np.fft.fft real part": (lambda x: np.sum(np.fft.fft(x).real), "numpy.fft.fft"),
    "np.fft.rfft": (lambda x: np.sum(np.abs(np.fft.rfft(x))), "numpy.fft.rfft"),
    "np.fft.irfft": (lambda x: np.sum(np.fft.irfft(x)), "numpy.fft.irfft"),
    "np.fft.hfft": (lambda x: np.sum(np.fft.hfft(x)), "numpy.fft.hfft"),
    "np.fft.fftn": (lambda x: np.sum(np.fft.fftn(x).real), "numpy.fft.fftn"),
    "np.linalg.eig": (lambda x: np.sum(np.linalg.eig(AM(x))[0].real), "numpy.linalg.eig"),
    "np.linalg.eigvals": (
        lambda x: np.sum(np.linalg.eigvals(AM(x)).real),
        "numpy.linalg.eigvals",
    ),
    "np.linalg.cond": (lambda x: np.linalg.cond(AM(x)), "numpy.linalg.cond"),
    "np.linalg.matrix_rank": (
        lambda x: x[0] * np.linalg.matrix_rank(AM(x)),
        "numpy.linalg.matrix_rank",
    ),
    "np.linalg.tensorsolve": (
        lambda x: np.sum(np.linalg.tensorsolve(AM(x), x)),
        "numpy.linalg.tensorsolve",
    ),
    "np.linalg.tensorinv": (
        lambda x: np.sum(np.linalg.tensorinv(AM(x), ind=1)),
        "numpy.linalg.tensorinv",
    ),
    "np.roots": (lambda x: np.sum(np.roots(x).real), "numpy.roots"),
    "np.poly": (lambda x: np.sum(np.poly(x) ** 2), "numpy.poly"),
    "np.poly1d of traced coefficients": (lambda x: np.poly1d(x)(2.0), "numpy.trim_zeros"),
    "np.polyder": (lambda x: np.sum(np.polyder(x) ** 2), "numpy.polyder"),
    "np.polyint": (lambda x: np.sum(np.polyint(x) ** 2), "numpy.polyint"),
    "np.polymul": (lambda x: np.sum(np.polymul(x, [1.0, 2.0]) ** 2), "numpy.polymul"),
    "np.polyadd": (lambda x: np.sum(np.polyadd(x, [1.0, 2.0]) ** 2), "numpy.polyadd"),
    "np.polydiv": (lambda x: np.sum(np.polydiv(x, [1.0, 2.0])[0] ** 2), "numpy.polydiv"),
    "np.polyfit in y": (lambda x: np.sum(np.polyfit([0.0, 1.0, 2.0], x, 1) ** 2), "numpy.polyfit"),
    "np.polyfit in x": (lambda x: np.sum(np.polyfit(x, [0.0, 1.0, 2.0], 1) ** 2), "numpy.polyfit"),
    "np.emath.sqrt": (lambda x: np.sum(np.emath.sqrt(x).real), "numpy.emath.sqrt"),
    "np.emath.sqrt of positives": (lambda x: np.sum(np.emath.sqrt(x**2)), "numpy.emath.sqrt"),
    "np.emath.log": (lambda x: np.sum(np.emath.log(x).real), "numpy.emath.log"),
    "np.emath.arcsin": (lambda x: np.sum(np.emath.arcsin(x).real), "numpy.emath.arcsin"),
    "np.emath.power": (lambda x: np.sum(np.emath.power(x, 0.5).real), "numpy.emath.power"),
    "np.sort_complex": (lambda x: np.sum(np.sort_complex(x).real), "numpy.sort_complex"),
    "np.histogram weights": (
        lambda x: np.sum(np.histogram([0.1, 0.5], bins=2, weights=x[:2])[0]),
        "numpy.histogram",
    ),
    "np.histogram traced bins": (
        lambda x: np.sum(np.histogram([0.1, 0.5], bins=np.sort(x))[0]) * x[0],
        "numpy.histogram",
    ),
    "np.histogram_bin_edges": (
        lambda x: np.sum(np.histogram_bin_edges(x, bins=3)),
        "numpy.histogram_bin_edges",
    ),
    "np.unique": (lambda x: np.sum(np.unique(x) ** 2), "numpy.unique"),
    "np.unique return_counts": (
        lambda x: np.sum(np.unique(x, return_counts=True)[0] ** 2),
        "numpy.unique",
    ),
    "np.interp traced xp": (
        lambda x: np.sum(np.interp([0.5], np.sort(x), [0.0, 1.0, 2.0])),
        "xp",
    ),
    "np.apply_over_axes": (
        lambda x: np.sum(np.apply_over_axes(np.sum, x.reshape(1, 3), [1]) ** 2),
        "numpy.apply_over_axes",
    ),
    "np.frompyfunc": (
        lambda x: np.sum(np.frompyfunc(lambda t: t * t, 1, 1)(x)),
        "not supported on tapegrad Tensors",
    ),
    "np.spacing": (lambda x: np.sum(np.spacing(x) * 1e15 + x), "numpy.spacing"),
    "np.nextafter": (lambda x: np.sum(np.nextafter(x, 10.0)), "numpy.nextafter"),
    "np.frexp": (lambda x: np.sum(np.frexp(x)[0]), "numpy.frexp"),
    "np.modf": (lambda x: np.sum(np.modf(x)[0]), "numpy.modf"),
    "np.matvec": (lambda x: np.sum(np.matvec(AM(x), x)), "numpy.matvec"),
    "np.vecmat": (lambda x: np.sum(np.vecmat(x, AM(x))), "numpy.vecmat"),
    "np.maximum.accumulate": (
        lambda x: np.sum(np.maximum.accumulate(x)),
        "numpy.maximum.accumulate",
    ),
    "np.trim_zeros": (lambda x: np.sum(np.trim_zeros(np.maximum(x, 0))), "numpy.trim_zeros"),
    "np.nanargmax": (lambda x: x[np.nanargmax(x)] * 2.0, "numpy.nanargmax"),
    "np.save": (
        lambda x: np.save(__import__("io").BytesIO(), x) or np.sum(x),
        "numpy.save",
    ),
    "np.lib sliding_window_view": (
        lambda x: np.sum(np.lib.stride_tricks.sliding_window_view(x, 2)),
        "sliding_window_view",
    ),
    "scipy.special.gamma": (
        lambda x: np.sum(_scipy("scipy.special").gamma(x + 2)),
        "tapegrad.scipy.special.gamma",
    ),
    "scipy.special.jv": (
        lambda x: np.sum(_scipy("scipy.special").jv(1.0, x)),
        "tapegrad.scipy.special.jv",
    ),
    "scipy.special.digamma": (
        lambda x: np.sum(_scipy("scipy.special").digamma(x + 2)),
        "tapegrad.scipy.special.psi",
    ),
    "scipy.special.logsumexp": (lambda x: _scipy("scipy.special").logsumexp(x), ARRAY),
    "scipy.special.comb": (lambda x: np.sum(_scipy("scipy.special").comb(5, x)), ARRAY),
    "scipy.ndimage.gaussian_filter1d": (
        lambda x: np.sum(_scipy("scipy.ndimage").gaussian_filter1d(x, 1.0) ** 2),
        ARRAY,
    ),
    "scipy.integrate.simpson": (lambda x: _scipy("scipy.integrate").simpson(x**2), ARRAY),
    "scipy.stats.norm.logpdf loc": (
        lambda x: np.sum(_scipy("scipy.stats").norm.logpdf(1.0, loc=x)),
        ARRAY,
    ),
    "scipy.stats.zscore": (lambda x: np.sum(_scipy("scipy.stats").zscore(x) ** 3), ARRAY),
    "scipy.linalg.expm": (
        lambda x: np.sum(_scipy("scipy.linalg").expm(np.outer(x, x))),
        ARRAY,
    ),
    "scipy.fft.dct": (lambda x: np.sum(_scipy("scipy.fft").dct(x)), ARRAY),
    "scipy.optimize.rosen": (lambda x: _scipy("scipy.optimize").rosen(x), ARRAY),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_function_raises_naming_it(name):
    f, fragment = UNSUPPORTED[name]
    if fragment.startswith("numpy.") and not _in_numpy(fragment):
        pytest.skip(f"{fragment} is not in NumPy {np.__version__}")
    assert_refused(lambda: tg.grad(f)(X), fragment)


def _in_numpy(dotted):
    """Does this NumPy have the function ``dotted`` ("numpy.linalg.eig") names?"""
    obj = np
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj is not None


# ---- 4. programs tapegrad differentiates: against central differences ---------------------------
def _sum_inplace_copy(x):
    y = x * 1.0
    y[1:] *= x[:2]
    return np.sum(y)


def _fill_a_copy(x):
    y = x * 1.0
    y.fill(x[1])
    return np.sum(y)


def _sort_a_copy(x):
    y = x * 1.0
    y.sort()
    return np.sum(y * np.arange(3.0))


def _object_array_holding_an_item(x):
    a = np.empty(3, dtype=object)
    a[0] = x[0]
    return a[0] * 2.0 + x[1] * 0.0


RIGHT = {
    # Python built-ins over traced values
    "list(x)": lambda x: sum(v * v for v in list(x)),
    "sum(x)": lambda x: sum(x * x),
    "max(x)": lambda x: max(x) * 2.0,
    "min(x)": lambda x: min(x) * 2.0,
    "max key": lambda x: max(x, key=lambda v: v**2) * 2.0,
    "max of two": lambda x: max(x[0], x[1]) * 2.0,
    "abs(x)": lambda x: np.sum(abs(x) ** 3),
    "round(x, 1)": lambda x: round(x[0], 1) * x[1] + x[0],
    "sorted": lambda x: sorted(x)[0] * 3.0 + sorted(x)[2],
    "sorted key abs": lambda x: sorted(x, key=abs)[0] * 3.0 + sorted(x, key=abs)[2],
    "pow": lambda x: pow(x[0], 2) + pow(2.0, x[1]),
    "divmod": lambda x: divmod(x[2], 0.7)[0] * x[0] + divmod(x[2], 0.7)[1],
    "x // 1": lambda x: np.sum((x // 1) * x + x),
    "x % 1": lambda x: np.sum(x % 1),
    "chained comparison": lambda x: (x[0] if 0 < x[0] < 1 else 2 * x[0]) * x[1],
    "if on a 0-d value": lambda x: x[0] * 2.0 if x[0] else x[0],
    "functools.reduce": lambda x: functools.reduce(lambda a, b: a * b, x),
    "map": lambda x: sum(map(lambda v: v**2, x)),
    "enumerate": lambda x: sum(i * v for i, v in enumerate(x)),
    "zip": lambda x: sum(a * b for a, b in zip(x, x[::-1], strict=True)),
    "reversed": lambda x: sum(v * i for i, v in enumerate(reversed(x))),
    "any over a comparison": lambda x: np.sum(x) * (2.0 if any(x > 1) else 1.0),
    "all over a comparison": lambda x: np.sum(x) * (2.0 if all(x > -1) else 1.0),
    "math.prod": lambda x: math.prod(x),
    "len": lambda x: np.sum(x) / len(x),
    "np.ndim np.shape np.size": lambda x: np.sum(x) * np.ndim(x) * np.shape(x)[0] / np.size(x),
    "x.dtype branch": lambda x: np.sum(x) * (2.0 if x.dtype == np.float64 else 3.0),
    "copy.copy": lambda x: np.sum(copy.copy(x) ** 2),
    "copy.deepcopy": lambda x: np.sum(copy.deepcopy(x) ** 2),
    "x.copy()": lambda x: np.sum(x.copy() ** 2),
    "np.copy": lambda x: np.sum(np.copy(x) ** 2),
    "x.astype(float)": lambda x: np.sum(x.astype(float) ** 2),
    "x.astype(float64, copy=False)": lambda x: np.sum(x.astype(np.float64, copy=False) ** 2),
    "x.astype(int) as a constant": lambda x: np.sum(x.astype(int) * x),
    "x.view(float64)": lambda x: np.sum(x.view(np.float64) ** 2),
    "in-place on a copy": _sum_inplace_copy,
    "fill a copy": _fill_a_copy,
    "sort a copy in place": _sort_a_copy,
    "object array holding an item": _object_array_holding_an_item,
    # constants of other kinds meeting a traced value
    "list + x": lambda x: np.sum(([1.0, 2.0, 3.0] + x) ** 2),
    "tuple * x": lambda x: np.sum((1.0, 2.0, 3.0) * x),
    "range * x": lambda x: np.sum(range(3) * x),
    "np.int8 * x": lambda x: np.sum(np.int8(3) * x),
    "True * x": lambda x: np.sum(True * x),
    "x ** int array": lambda x: np.sum(x ** np.array([1, 2, 3])),
    "int array ** x": lambda x: np.sum(np.array([1, 2, 3]) ** x),
    "x @ list": lambda x: x @ [1.0, 2.0, 3.0],
    "list @ x": lambda x: [1.0, 2.0, 3.0] @ x,
    "np.dot list": lambda x: np.dot(x, [1.0, 2.0, 3.0]),
    "np.einsum list": lambda x: np.einsum("i,i->", x, [1.0, 2.0, 3.0]),
    "np.clip list bounds": lambda x: np.sum(np.clip(x, [0.0, -0.5, 0.0], [1.0, 1.0, 1.0])),
    "np.stack a list of items": lambda x: np.sum(np.stack([x[0], x[1]]) ** 2),
    "np.stack an item and a constant": lambda x: np.sum(np.stack([x[0], 1.0]) ** 2),
    "np.concatenate with a list": lambda x: np.sum(np.concatenate([x, [1.0]]) ** 2),
    "np.hstack with a list": lambda x: np.sum(np.hstack([x, [1.0, 2.0]]) ** 2),
    "np.vstack with an array": lambda x: np.sum(np.vstack([x, np.ones(3)]) ** 2),
    "np.block": lambda x: np.sum(np.block([[x, x], [x, x]]) ** 2),
    "np.block with a constant": lambda x: np.sum(np.block([x, 1.0]) ** 2),
    "np.column_stack": lambda x: np.sum(np.column_stack([x, x**2])),
    "np.append an item": lambda x: np.sum(np.append(x, x[0]) ** 2),
    "np.insert an item": lambda x: np.sum(np.insert(x, 1, x[0] * 2) ** 2),
    "np.delete": lambda x: np.sum(np.delete(x, 1) ** 2),
    "np.resize": lambda x: np.sum(np.resize(x, 5) * np.arange(5.0)),
    "np.tile": lambda x: np.sum(np.tile(x, 2) * np.arange(6.0)),
    "np.meshgrid": lambda x: np.sum(np.meshgrid(x, x[:2])[0] * np.meshgrid(x, x[:2])[1]),
    "np.atleast_3d": lambda x: np.sum(np.atleast_3d(x) ** 2),
    "np.broadcast_arrays": lambda x: np.sum(np.broadcast_arrays(x, np.ones((2, 3)))[0] ** 2),
    "np.fromfunction indexing x": lambda x: np.sum(
        np.fromfunction(lambda i: x[i.astype(int)] ** 2, (3,))
    ),
    # array functions written with Python callables
    "np.apply_along_axis": lambda x: np.sum(np.apply_along_axis(lambda r: r**2, 0, x)),
    "np.apply_along_axis 2-d": lambda x: np.sum(
        np.apply_along_axis(np.sum, 1, x.reshape(1, 3)) ** 2
    ),
    "np.piecewise functions": lambda x: np.sum(
        np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t**2])
    ),
    "np.piecewise constants": lambda x: np.sum(np.piecewise(x, [x < 0, x >= 0], [-1.0, 1.0]) * x),
    "np.select": lambda x: np.sum(np.select([x < 0, x >= 0], [x**2, x**3])),
    "np.select traced default": lambda x: np.sum(np.select([x < 0], [x**2], default=x[0])),
    "np.where one argument": lambda x: np.sum(x[np.where(x > 0)] ** 2),
    "np.einsum optimize=True": lambda x: np.einsum("i,i,i->", x, x, x, optimize=True),
    "np.einsum optimize optimal": lambda x: np.einsum("i,j,j->", x, x, x, optimize="optimal"),
    # complex-free parts of the complex API
    "np.real": lambda x: np.sum(np.real(x) ** 2),
    "np.imag": lambda x: np.sum(np.imag(x) + x),
    "np.conj": lambda x: np.sum(np.conj(x) ** 2),
    "np.angle": lambda x: np.sum(np.angle(x) + x),
    "np.angle deg": lambda x: np.sum(np.angle(x, deg=True) * x),
    "np.iscomplex": lambda x: np.sum(np.iscomplex(x) + x),
    "np.isreal": lambda x: np.sum(np.isreal(x) * x),
    "np.iscomplexobj": lambda x: x[0] * (2.0 if np.iscomplexobj(x) else 1.0),
    "np.isrealobj": lambda x: x[0] * (2.0 if np.isrealobj(x) else 1.0),
    "np.real_if_close": lambda x: np.sum(np.real_if_close(x) ** 3),
    "np.vdot": lambda x: np.vdot(x, x),
    "np.abs of a complex constant": lambda x: np.sum(x * np.abs(np.array([1j, 2, 3]))),
    "np.fft.fftshift": lambda x: np.sum(np.fft.fftshift(x) * np.arange(3.0)),
    "np.fft.ifftshift": lambda x: np.sum(np.fft.ifftshift(x) * np.arange(3.0)),
    "np.fft.fftfreq traced d": lambda x: np.sum(np.fft.fftfreq(4, d=x[0])),
    "np.fft.rfftfreq traced d": lambda x: np.sum(np.fft.rfftfreq(4, d=x[0])),
    # piecewise-constant functions: the derivative 0 is the right answer
    "np.floor": lambda x: np.sum(np.floor(x) * x),
    "np.ceil": lambda x: np.sum(np.ceil(x) * x),
    "np.trunc": lambda x: np.sum(np.trunc(x) + x),
    "np.rint": lambda x: np.sum(np.rint(x) + x),
    "np.fix": lambda x: np.sum(np.fix(x) + x),
    "np.round": lambda x: np.sum(np.round(x, 1) * x),
    "np.around": lambda x: np.sum(np.around(x) + x),
    "np.sign": lambda x: np.sum(np.sign(x) * x),
    "np.heaviside": lambda x: np.sum(np.heaviside(x, 0.5) * x),
    "np.heaviside traced h0": lambda x: np.sum(np.heaviside(np.array([0.0, 1.0]), x[:2])),
    "np.copysign traced sign": lambda x: np.sum(np.copysign(2.0, x) + x),
    "np.searchsorted": lambda x: np.searchsorted(np.sort(x), 0.0) * x[0],
    "np.digitize": lambda x: np.sum(np.digitize(x, [0.0, 1.0]) * x),
    "np.isclose": lambda x: np.sum(np.isclose(x, [0.3, 0.0, 0.0]) * x),
    # NumPy functions with derivatives
    "np.bincount traced weights": lambda x: np.sum(np.bincount([0, 1, 1], weights=x) ** 2),
    "np.interp in x": lambda x: np.sum(np.interp(x, [-1.0, 0.0, 2.0], [1.0, 3.0, 0.0])),
    "np.interp in fp": lambda x: np.sum(np.interp([0.5, 1.5], [0.0, 1.0, 2.0], x) ** 2),
    "np.convolve": lambda x: np.sum(np.convolve(x, [1.0, 2.0]) ** 2),
    "np.convolve both": lambda x: np.sum(np.convolve(x, x) ** 2),
    "np.convolve same": lambda x: np.sum(np.convolve(x, [1.0, 2.0, 0.5], mode="same") ** 2),
    "np.correlate": lambda x: np.sum(np.correlate(x, [1.0, 2.0], mode="full") ** 2),
    "np.correlate both": lambda x: np.sum(np.correlate(x, x[::-1] * 2, mode="valid") ** 2),
    "np.gradient": lambda x: np.sum(np.gradient(x) ** 2),
    "np.gradient spacing": lambda x: np.sum(np.gradient(x, 0.5) ** 2),
    "np.gradient traced spacing": lambda x: np.sum(
        np.gradient(np.array([1.0, 4.0, 9.0]), x[0] ** 2 + 1)
    ),
    "np.gradient traced coordinates": lambda x: np.sum(
        np.gradient(np.array([1.0, 4.0, 9.0]), np.cumsum(x**2) + np.arange(3.0))
    ),
    "np.trapezoid": lambda x: np.trapezoid(x**2),
    "np.trapezoid traced x": lambda x: np.trapezoid([1.0, 4.0, 2.0], x=np.cumsum(x**2)),
    "np.trapezoid traced dx": lambda x: np.trapezoid(x**2, dx=x[0]),
    "np.diff prepend": lambda x: np.sum(np.diff(x, prepend=0.5) ** 2),
    "np.diff traced prepend": lambda x: np.sum(np.diff(x[1:], prepend=x[0] * 2) ** 2),
    "np.diff traced append": lambda x: np.sum(np.diff(x, append=x[:1]) ** 2),
    "np.diff n=2": lambda x: np.sum(np.diff(x, n=2) ** 2),
    "np.ediff1d traced to_begin": lambda x: np.sum(np.ediff1d(x, to_begin=x[0]) ** 2),
    "np.nan_to_num of log": lambda x: np.sum(np.nan_to_num(np.log(x))),
    "np.clip traced lower": lambda x: np.sum(np.clip(x, x[0], 1.0)),
    "np.clip traced upper": lambda x: np.sum(np.clip(np.array([0.0, 5.0, -5.0]), -1.0, x[2])),
    "np.clip traced array bound": lambda x: np.sum(np.clip(np.zeros(3), x - 1.0, None)),
    "np.polyval": lambda x: np.sum(np.polyval([1.0, 2.0, 3.0], x)),
    "np.polyval traced coefficients": lambda x: np.polyval(x, 2.0),
    "np.poly1d call": lambda x: np.sum(np.poly1d([1.0, 2.0, 3.0])(x)),
    "np.polynomial polyval in x": lambda x: np.sum(
        np.polynomial.polynomial.polyval(x, [1.0, 2.0, 3.0])
    ),
    "np.polynomial chebval in x": lambda x: np.sum(
        np.polynomial.chebyshev.chebval(x, [1.0, 2.0, 3.0])
    ),
    "np.vander": lambda x: np.sum(np.vander(x, 3)),
    "np.kron": lambda x: np.sum(np.kron(x, x[:2]) ** 2),
    "np.cross": lambda x: np.sum(np.cross(x, [1.0, 2.0, 3.0]) ** 2),
    "np.linalg.matrix_power": lambda x: np.sum(np.linalg.matrix_power(AM(x), 3)),
    "np.linalg.matrix_power negative": lambda x: np.sum(np.linalg.matrix_power(AM(x), -2)),
    "np.linalg.multi_dot": lambda x: np.sum(np.linalg.multi_dot([AM(x), AM(x), x])),
    "np.linalg.pinv": lambda x: np.sum(np.linalg.pinv(AM(x))),
    "np.linalg.svd values": lambda x: np.sum(np.linalg.svd(AM(x), compute_uv=False)),
    "np.linspace traced ends": lambda x: np.sum(np.linspace(x[0], x[2], 4) ** 2),
    "np.logspace traced ends": lambda x: np.sum(np.logspace(x[0], x[2], 3)),
    "np.geomspace traced start": lambda x: np.sum(np.geomspace(x[2], 4.0, 3)),
    "np.full_like": lambda x: np.sum(np.full_like(x, 2.0) * x),
    "np.ones_like dtype int": lambda x: np.sum(np.ones_like(x, dtype=int) * x),
    "np.sinc": lambda x: np.sum(np.sinc(x)),
    "np.i0": lambda x: np.sum(np.i0(x)),
    "np.fmod": lambda x: np.sum(np.fmod(x, 0.5)),
    "np.remainder": lambda x: np.sum(np.remainder(x, 0.5)),
    "np.divmod remainder": lambda x: np.sum(np.divmod(x, 0.5)[1]),
    "np.float_power": lambda x: np.sum(np.float_power(np.abs(x), 1.5)),
    "np.hypot": lambda x: np.hypot(x[0], x[1]),
    "np.arctan2": lambda x: np.arctan2(x[0], x[1]),
    "np.logaddexp": lambda x: np.logaddexp(x[0], x[1]),
    "np.fmax": lambda x: np.sum(np.fmax(x, 0.5)),
    "np.linalg.vecdot": lambda x: np.linalg.vecdot(x, x**2),
    "np.unstack": lambda x: np.sum(np.unstack(AM(x))[1] ** 2),
    "np.cumulative_sum": lambda x: np.sum(np.cumulative_sum(x) ** 2),
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_program_gradient_matches_central_differences(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_grad(RIGHT[name])


def test_nan_to_num_where_the_replaced_entry_has_no_derivative_is_nan_as_in_pytorch():
    """x / (x - x[0]) is inf at entry 0 and nan_to_num replaces it by a constant: the chain rule
    meets 0 * inf there and gives NaN for x[0], as PyTorch's torch.nan_to_num does (documented:
    tapegrad returns what the chain rule gives); the other entries are exact."""

    def f(x):
        return np.sum(np.nan_to_num(x / (x - x[0]), posinf=3.0, neginf=-3.0))

    with np.errstate(divide="ignore", invalid="ignore"):
        got = tg.grad(f)(X)
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], -X[0] / (X[1:] - X[0]) ** 2, rtol=1e-12)


def test_explicit_reads_are_documented_values_without_gradient():
    """.item(), .tolist(), .numpy(), .detach() are explicit reads (docs/REFUSALS.md)."""
    assert tg.grad(lambda x: x[0] * x[1].item())(X).tolist() == [-0.7, 0.0, 0.0]
    assert tg.grad(lambda x: x[0] * x.tolist()[1])(X).tolist() == [-0.7, 0.0, 0.0]
    assert tg.grad(lambda x: np.sum(x * x.numpy()))(X).tolist() == X.tolist()
    assert tg.grad(lambda x: np.sum(x * x.detach()))(X).tolist() == X.tolist()


def test_perturbations_of_nested_transforms_are_not_confused():
    assert tg.grad(lambda x: x * tg.grad(lambda y: x + y)(1.0))(2.0) == 1.0
    assert tg.grad(lambda x: tg.grad(lambda y: x * y)(3.0))(2.0) == 1.0
    assert tg.jvp(lambda x: x * tg.jvp(lambda y: x + y, (1.0,), (1.0,))[1], (2.0,), (1.0,)) == (
        2.0,
        1.0,
    )
    # the outer value read inside the inner transform
    assert tg.grad(lambda x: tg.grad(lambda y: y * x.item())(1.0) + x)(2.0) == 1.0
    assert_refused(lambda: tg.grad(lambda x: tg.grad(lambda y: y * float(x))(1.0))(2.0), FLOAT)


@pytest.mark.parametrize("n", [3, 100, 5000])
def test_a_plain_operand_changed_after_its_op_was_recorded(n):
    """The backward of y = x * a uses the a of the forward, however large a is."""

    def f(x):
        a = np.arange(n) + 1.0
        y = np.resize(x, n) * a
        a *= 3
        return np.sum(y * y)

    a = np.arange(n) + 1.0
    want = np.bincount(np.arange(n) % 3, 2 * np.resize(X, n) * a * a)
    np.testing.assert_allclose(tg.grad(f)(X), want, rtol=1e-12)


def test_index_and_mask_arrays_changed_after_use():
    def by_index(x):
        idx = np.array([0, 1, 2, 0])
        y = x[idx]
        idx[:] = 2
        return np.sum(y * np.arange(4.0))

    def by_mask(x):
        m = np.array([True, False, True])
        y = np.sum(x[m] ** 2)
        m[:] = True
        return y

    np.testing.assert_allclose(tg.grad(by_index)(X), [3.0, 1.0, 2.0])
    np.testing.assert_allclose(tg.grad(by_mask)(X), [0.6, 0.0, 2.2])


INPUT_WRITES = {
    "x.sort()": lambda x: (x.sort(), np.sum(x * np.arange(3.0)))[1],
    "x.fill": lambda x: (x.fill(0.0), np.sum(x))[1],
    "x.put": lambda x: (x.put([0], 5.0), np.sum(x))[1],
    "x.partition": lambda x: (x.partition(1), x[1] * 2.0)[1],
    "x += 1": lambda x: (x.__iadd__(1.0), np.sum(x**2))[1],
    "x[...] = 0": lambda x: (x.__setitem__(Ellipsis, 0.0), np.sum(x))[1],
    "x.real[:] = 0": lambda x: (x.real.__setitem__(slice(None), 0.0), np.sum(x))[1],
    "x.flat[0] = 0": lambda x: (x.flat.__setitem__(0, 0.0), np.sum(x))[1],
    "x.T[0] = 0": lambda x: (x.T.__setitem__(0, 0.0), np.sum(x))[1],
    "x.reshape(3, 1)[0] = 0": lambda x: (x.reshape(3, 1).__setitem__(0, 0.0), np.sum(x))[1],
    "np.flip(x)[0] = 0": lambda x: (np.flip(x).__setitem__(0, 0.0), np.sum(x))[1],
    "x[::2][0] = 0": lambda x: (x[::2].__setitem__(0, 0.0), np.sum(x))[1],
    "x[:][0] = 0": lambda x: (x[:].__setitem__(0, 0.0), np.sum(x))[1],
    "np.ravel(x)[0] = 0": lambda x: (np.ravel(x).__setitem__(0, 0.0), np.sum(x))[1],
    "rng.shuffle(x)": lambda x: (
        np.random.default_rng(0).shuffle(x),
        np.sum(x * np.arange(3.0)),
    )[1],
}


@pytest.mark.parametrize("name", sorted(INPUT_WRITES))
def test_in_place_changes_of_the_differentiated_input_raise(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # shuffle warns about a non-Sequence
        assert_refused(lambda: tg.grad(INPUT_WRITES[name])(X.copy()), "in-place", RuntimeError)


def test_writes_into_copies_and_detached_aliases_are_derivatives_of_what_f_computes():
    # a fancy-index result is a copy: x is unchanged
    f = lambda x: (x[[0, 1]].__setitem__(0, 0.0), np.sum(x**2))[1]  # noqa: E731
    np.testing.assert_allclose(tg.grad(f)(X.copy()), 2 * X)
    # a detached alias shares x's values: x[0] is 0 from then on, so f does not depend on it
    g = lambda x: (x.detach().__setitem__(0, 0.0), np.sum(x**2))[1]  # noqa: E731
    value, grad = tg.value_and_grad(g)(X.copy())
    assert value == pytest.approx(0.49 + 1.21)
    np.testing.assert_allclose(grad, [0.0, -1.4, 2.2])


SECOND_ORDER = {
    "sorted": lambda x: sorted(x)[0] ** 3 + sorted(x)[2] ** 2,
    "max(x)": lambda x: max(x) ** 3,
    "sum(x)": lambda x: sum(x**3),
    "abs(x)": lambda x: np.sum(abs(x) ** 3),
    "divmod remainder": lambda x: divmod(x[2], 0.7)[1] ** 3,
    "x % 1": lambda x: np.sum((x % 1) ** 3),
    "np.piecewise": lambda x: np.sum(
        np.piecewise(x, [x < 0, x >= 0], [lambda t: -(t**3), lambda t: t**4])
    ),
    "np.select": lambda x: np.sum(np.select([x < 0, x >= 0], [x**3, x**4])),
    "np.apply_along_axis": lambda x: np.sum(np.apply_along_axis(lambda r: r**3, 0, x)),
    "copy.deepcopy": lambda x: np.sum(copy.deepcopy(x) ** 3),
    "np.interp in fp": lambda x: np.sum(np.interp([0.5, 1.5], [0.0, 1.0, 2.0], x) ** 3),
    "np.convolve": lambda x: np.sum(np.convolve(x, x) ** 2),
    "np.gradient": lambda x: np.sum(np.gradient(x**2) ** 2),
    "np.trapezoid traced x": lambda x: np.trapezoid(x**2, x=np.cumsum(x**2)),
    "np.clip traced bound": lambda x: np.sum(np.clip(x**2, x[0], 1.0) ** 2),
    "np.polyval coefficients": lambda x: np.polyval(x, 2.0) ** 2,
    "np.linspace traced ends": lambda x: np.sum(np.linspace(x[0], x[2], 4) ** 3),
    "np.vander": lambda x: np.sum(np.vander(x, 4)),
    "np.linalg.matrix_power": lambda x: np.sum(
        np.linalg.matrix_power(np.outer(x, x) + np.eye(3), 2)
    ),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_and_trace_hessian_of_python_level_code(name):
    """tg.hessian against differences of tg.grad (checked above); tg.hvp, tg.jvp and a trace's
    Hessian against it."""
    f = SECOND_ORDER[name]
    g = tg.grad(f)
    h_fd = np.stack([(g(X + 1e-5 * e) - g(X - 1e-5 * e)) / 2e-5 for e in np.eye(3)])
    h = tg.hessian(f)(X)
    np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-5)
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tg.hvp(f, (X,), (v,)), h @ v, rtol=1e-9, atol=1e-12)
    assert tg.jvp(f, (X,), (v,))[1] == pytest.approx(g(X) @ v, rel=1e-12)
    np.testing.assert_allclose(tg.trace(f, X).hessian(X), h, rtol=1e-10, atol=1e-12)


def test_pickling_inside_a_trace_recording_raises():
    f = lambda x: np.sum(pickle.loads(pickle.dumps(x)) ** 2)  # noqa: E731
    assert_refused(lambda: tg.trace(f, X0), "pickle")


# ---- 5. complex values ---------------------------------------------------------------------------
COMPLEX_CASES = {
    "x * 1j": lambda: tg.grad(lambda x: np.sum((x * 1j).imag))(X),
    "np.exp(1j * x)": lambda: tg.grad(lambda x: np.sum(np.exp(1j * x).real))(X),
    "complex argument": lambda: tg.grad(lambda x: np.sum(x * 2))(X + 1j),
    "complex jvp tangent": lambda: tg.jvp(lambda x: np.sum(x**2), (X,), (np.array([1j, 0, 0]),)),
    "complex vjp cotangent": lambda: tg.vjp(lambda x: x * 2.0, X)[1](np.array([1j, 0, 0])),
    "complex hvp direction": lambda: tg.hvp(lambda x: np.sum(x**3), (X,), (X * 1j,)),
    "complex trace replay": lambda: tg.trace(lambda x: np.sum(x**2), X)(X + 1j),
    "complex trace jvp tangent": lambda: tg.trace(lambda x: np.sum(x**2), X).jvp(X, X * 1j),
    "complex trace hvp direction": lambda: tg.trace(lambda x: np.sum(x**3), X).hvp(X, X * 1j),
    "Tensor API t * 1j": lambda: tg.tensor(X, requires_grad=True) * 1j,
    "Tensor API t.data = complex": lambda: setattr(
        tg.tensor(X, requires_grad=True), "data", X * 1j
    ),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_values_are_refused(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        with pytest.raises((TypeError, ValueError), match=COMPLEX):
            COMPLEX_CASES[name]()


# ---- 6. dtypes -----------------------------------------------------------------------------------
def _sin_x(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_float_inputs_get_the_float64_gradient_rounded_to_their_dtype(dtype):
    """As JAX: the gradient has the argument's dtype; it is the float64 gradient at the
    argument's (exactly representable) values, rounded once."""
    x = np.array([0.1, 0.2, 0.3], dtype=dtype)
    exact = tg.grad(_sin_x)(x.astype(np.float64))
    g = tg.grad(_sin_x)(x)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g, exact.astype(dtype))
    value, g2 = tg.value_and_grad(_sin_x)(x)
    assert value == pytest.approx(_sin_x(x.astype(np.float64)), rel=1e-15)
    np.testing.assert_array_equal(g2, g)


@pytest.mark.parametrize(
    "arg, fragment",
    [
        (np.array([1, 2]), "dtype int64"),
        (3, "int 3"),
        (np.int64(3), "int64"),
        (np.array([True, False]), "dtype bool"),
        (True, "bool True"),
        (np.array([0.1, 0.2], dtype=object), "dtype object"),
        (2**53 + 1, "int 9007199254740993"),
        ([2.0, 2**60], "argument 0[1] is int"),
        (np.array((1.0, 2.0), dtype=[("a", float), ("b", float)]), "only float arrays"),
    ],
    ids=[
        "int array",
        "int",
        "np.int64",
        "bool array",
        "bool",
        "object",
        "int > 2**53",
        "int in a list",
        "structured",
    ],
)
def test_non_float_arguments_are_refused(arg, fragment):
    assert_refused(lambda: tg.grad(lambda t: np.sum(t * t))(arg), fragment)


def test_constants_of_other_dtypes_meeting_a_traced_value():
    assert tg.grad(lambda t: t * (2**53 + 1))(1.0) == 2.0**53
    assert tg.grad(lambda t: np.sum(t * np.array([2**63 - 1])))(1.0) == 2.0**63
    assert tg.grad(lambda t: np.sum(t * np.float32(0.1)))(1.0) == float(np.float32(0.1))
    assert tg.grad(lambda t: np.sum(t * np.array([0.1], np.float16)))(1.0) == float(np.float16(0.1))
    assert tg.grad(lambda t: t * __import__("fractions").Fraction(1, 3))(1.0) == 1 / 3
    assert tg.grad(lambda t: np.sum(t * np.array([100], np.int8) * np.int8(100)))(1.0) == 1e4
    np.testing.assert_array_equal(
        tg.grad(lambda t: np.sum(t * (t > 0)))(np.array([0.5, -0.5])), [1.0, 0.0]
    )
    with pytest.raises(OverflowError):
        tg.grad(lambda t: t * 2**1100)(1.0)


def test_jacobian_and_hessian_of_float32_inputs_keep_their_dtype():
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    assert tg.jacobian(np.sin)(x).dtype == np.float32
    assert tg.hessian(_sin_x)(x).dtype == np.float32
    out, tangent = tg.jvp(_sin_x, (x,), (np.ones(3, np.float32),))
    assert tangent == pytest.approx(tg.jvp(_sin_x, (x.astype(float),), (np.ones(3),))[1])


# ---- 7. trace replays: the right derivative or a re-record / RetraceRequired ---------------------
TRACED = {
    "if on a value": lambda x: np.sum(x**2) if x[0] > 0 else np.sum(x**3),
    "bool() in an if": lambda x: x[0] * 2.0 if bool(x[0] > 0) else x[0],
    "chained comparison": lambda x: (x[0] if -0.5 < x[0] < 0.5 else 2 * x[0]) * x[1],
    "item as a scale": lambda x: x[0] * x[1].item(),
    "item in a branch": lambda x: x[0] * (2.0 if x[2].item() > 2 else 3.0),
    "tolist value": lambda x: x[0] * x.tolist()[1],
    "tolist branch": lambda x: x[0] * (2.0 if x.tolist()[2] > 2 else 3.0),
    "numpy() value": lambda x: np.sum(x * x.numpy()),
    "numpy() sum": lambda x: x[0] * x.numpy().sum(),
    "detach value": lambda x: np.sum(x * x.detach()),
    "detach().numpy() branch": lambda x: x[0] if x.detach().numpy()[2] > 2 else x[1],
    ".data read": lambda x: x[0] * x.data[2],
    "float() of a detached value": lambda x: x[0] * float(x[2].detach()),
    "np.float64 of an item": lambda x: x[0] * np.float64(x[2].item()),
    "str of an item": lambda x: x[0] * len(str(x[2].item())),
    "f-string read back": lambda x: float(f"{x[0].item():.1f}") * x[1],
    "dict lookup of an item": lambda x: {0.3: 2.0}.get(x[0].item(), 5.0) * x[1],
    "int index from an item": lambda x: x[int(x[2].item()) % 3] * 2.0,
    "round index from an item": lambda x: x[round(x[2].item()) % 3],
    "math.floor of an item": lambda x: x[0] * math.floor(x[2].item()),
    "np.floor item": lambda x: x[0] * np.floor(x[2]).item(),
    "floor astype int index": lambda x: x[np.floor(np.abs(x[2])).astype(int) % 3] * 1.0,
    "x // 1 as an index": lambda x: x[(x[2] // 1).astype(int) % 3] * 2.0,
    "round as a range bound": lambda x: sum(x[i] for i in range(np.round(x[2]).astype(int))),
    "view of the detached bits": lambda x: x[(x.detach().numpy().view(np.int64)[2] & 1)] * 1.0,
    "astype int index via numpy": lambda x: x[x.numpy().astype(int)[2] % 3] * 1.0,
    "argmax": lambda x: x[np.argmax(x)] * 2.0,
    "argmin": lambda x: x[np.argmin(x)] * 2.0,
    "take argmax": lambda x: np.take(x, np.argmax(x)) * 2.0,
    "max(x)": lambda x: max(x) * 2.0,
    "max of two": lambda x: max(x[0], x[1]) * 2.0,
    "min with a constant": lambda x: min(x[0], 0.0) * 2.0,
    "sorted": lambda x: sorted(x)[0] * 3.0 + sorted(x)[2],
    "np.sort": lambda x: np.sort(x) @ np.arange(3.0),
    "np.sort stable": lambda x: np.sort(x, kind="stable") @ np.arange(3.0),
    "argsort index": lambda x: x[np.argsort(x)] @ np.arange(3.0),
    "take_along_axis argsort": lambda x: np.sum(
        np.take_along_axis(x, np.argsort(x), 0) * np.arange(3.0)
    ),
    "lexsort": lambda x: np.sum(x[np.lexsort((x,))] * np.arange(3.0)),
    "np.partition": lambda x: np.partition(x, 1)[1] * 2.0,
    "np.median": lambda x: np.median(x) * 2.0,
    "np.percentile": lambda x: np.percentile(x, 30.0),
    "np.where mask": lambda x: np.sum(np.where(x > 0, x, x**2)),
    "np.where one argument": lambda x: np.sum(x[np.where(x > 0)] ** 2),
    "nonzero": lambda x: np.sum(x[np.nonzero(x > 0)]),
    "argwhere": lambda x: np.sum(x[np.argwhere(x > 0).ravel()]),
    "flatnonzero": lambda x: np.sum(x[np.flatnonzero(x > 0)]),
    "extract": lambda x: np.sum(np.extract(x > 0, x)),
    "compress": lambda x: np.sum(np.compress(x > 0, x)),
    "boolean index shape": lambda x: np.sum(x) * x[x > 0].shape[0],
    "boolean index size": lambda x: np.sum(x) * x[x > 0].size,
    "len of where": lambda x: np.sum(x) * len(np.where(x > 0)[0]),
    "choose": lambda x: np.sum(np.choose((x > 0).astype(int), [x, x**2])),
    "isin": lambda x: np.sum(x * np.isin(np.round(x), [0.0, 1.0])),
    "searchsorted": lambda x: np.searchsorted(np.sort(x), 0.0) * x[0],
    "digitize": lambda x: np.sum(np.digitize(x, [0.0, 1.0]) * x),
    "heaviside": lambda x: np.sum(np.heaviside(x, 0.5) * x),
    "astype int": lambda x: np.sum(x.astype(int) * x),
    "astype bool": lambda x: np.sum(x.astype(bool) * x),
    "floor astype int": lambda x: np.sum(np.floor(x).astype(int) * x),
    "int of a count": lambda x: np.sum(x) * int(np.sum(x > 0)),
    "sum of a comparison": lambda x: np.sum(x) * np.sum(x > 0),
    "count_nonzero": lambda x: np.sum(x) * np.count_nonzero(x > 0.5),
    "np.any": lambda x: np.sum(x) * (2.0 if np.any(x < 0) else 1.0),
    "np.all": lambda x: np.sum(x) * (2.0 if np.all(x > 0) else 1.0),
    "isclose": lambda x: np.sum(x) * np.sum(np.isclose(x, 0.3)),
    "ptp as a guard": lambda x: x[0] if np.ptp(x) > 2.5 else x[1],
    "mean as a guard": lambda x: np.sum(x**2) if np.mean(x) > 0.3 else np.sum(x),
    "bincount of values": lambda x: np.sum(
        np.bincount((np.abs(x) * 2).astype(int), weights=x) ** 2
    ),
    "unique of read values": lambda x: np.sum(x) * len(np.unique(np.round(x.numpy()))),
    "repeat counts from values": lambda x: np.sum(np.repeat(x, (np.abs(x) * 2).astype(int))),
    "ones of a read length": lambda x: np.sum(np.ones(int(np.abs(x[2].item()) * 2))) * x[0],
    "arange sliced by a count": lambda x: np.sum(np.arange(3.0)[: int(np.sum(x > 0))] * x[0]),
    "slice by a count": lambda x: np.sum(x[: int(np.sum(x > 0))]),
    "np.interp": lambda x: np.sum(np.interp(x, [-1.0, 0.0, 1.0], [0.0, 2.0, 1.0])),
    "np.select": lambda x: np.sum(np.select([x < 0, x >= 0], [x**2, x**3])),
    "np.piecewise": lambda x: np.sum(
        np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t**2])
    ),
    "isnan mask": lambda x: np.sum(np.where(np.isnan(np.log(x)), 0.0, x)),
    "isfinite item": lambda x: x[0] * (1.0 if np.isfinite(np.log(x[0])).item() else 2.0),
    "nan_to_num": lambda x: np.sum(np.nan_to_num(np.log(x))),
    "nanmax": lambda x: np.nanmax(np.log(x)),
    "nansum": lambda x: np.nansum(np.log(x)),
    # no decision, or decisions made by ops that are replayed
    "abs": lambda x: np.sum(abs(x)),
    "clip": lambda x: np.sum(np.clip(x, 0.0, 1.0)),
    "clip traced bound": lambda x: np.sum(np.clip(x, x[0], 1.0)),
    "floor times x": lambda x: np.sum(np.floor(x) * x),
    "x // 0.5 times x": lambda x: np.sum((x // 0.5) * x),
    "x % 0.5": lambda x: np.sum(x % 0.5),
    "x % 1 times x": lambda x: (x[2] % 1) * x[0],
    "round times x": lambda x: np.sum(np.round(x) * x),
    "round(x, 0) builtin": lambda x: round(x[2], 0) * x[0],
    "divmod quotient": lambda x: divmod(x[2], 0.7)[0] * x[0],
    "sign": lambda x: np.sum(np.sign(x) * x**2),
    "maximum": lambda x: np.sum(np.maximum(x, 0.5)),
    "fmax": lambda x: np.sum(np.fmax(x, 0.5)),
    "minimum.reduce": lambda x: np.minimum.reduce(x) * 2.0,
    "ptp": lambda x: np.ptp(x),
    "shifted logsumexp": lambda x: np.log(np.sum(np.exp(x - np.max(x)))) + np.max(x),
    "sum(x)": lambda x: sum(x),
    "len and shape": lambda x: np.sum(x) * x.shape[0] / len(x),
    "apply_along_axis": lambda x: np.sum(np.apply_along_axis(lambda r: r**2, 0, x)),
    "copy.deepcopy": lambda x: np.sum(copy.deepcopy(x) ** 2),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_trace_replay_is_right_or_guarded(name):
    f = TRACED[name]
    with np.errstate(invalid="ignore", divide="ignore"):
        tr = tg.trace(f, X0)
        np.testing.assert_allclose(tr.grad(X0), tg.grad(f)(X0), rtol=1e-12, atol=1e-15)
        try:
            got = tr.grad(X1)
        except tg.RetraceRequired:
            return
        np.testing.assert_allclose(got, _fd(f, X1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tr(X1), f(X1), rtol=1e-12)


def _branch(x):
    return np.sum(x**2) if x[0] > 0 else np.sum(x**3)


REPLAY_METHODS = {
    "call": (lambda tr: tr(X1), lambda: _branch(X1)),
    "grad": (lambda tr: tr.grad(X1), lambda: tg.grad(_branch)(X1)),
    "value_and_grad": (lambda tr: tr.value_and_grad(X1)[1], lambda: tg.grad(_branch)(X1)),
    "jvp": (lambda tr: tr.jvp(X1, np.ones(3))[1], lambda: tg.jvp(_branch, (X1,), (np.ones(3),))[1]),
    "hvp": (lambda tr: tr.hvp(X1, np.ones(3)), lambda: tg.hvp(_branch, (X1,), (np.ones(3),))),
    "hessian": (lambda tr: tr.hessian(X1), lambda: tg.hessian(_branch)(X1)),
    "grad_many": (
        lambda tr: tr.grad_many(np.stack([X0, X1])),
        lambda: np.stack([tg.grad(_branch)(X0), tg.grad(_branch)(X1)]),
    ),
}


@pytest.mark.parametrize("name", sorted(REPLAY_METHODS))
def test_every_replay_method_guards_a_branch_and_retraces_right(name):
    method, want = REPLAY_METHODS[name]
    with pytest.raises(tg.RetraceRequired, match="another branch"):
        method(tg.trace(_branch, X0))
    got = method(tg.trace(_branch, X0, retrace=True))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want()), rtol=1e-12)


def test_traced_decorator_records_each_branch():
    @tg.traced
    def f(x):
        return _branch(x)

    np.testing.assert_allclose(f.grad(X0), 2 * X0)
    np.testing.assert_allclose(f.grad(X1), 3 * X1**2)
    assert f(X1) == pytest.approx(_branch(X1))


@pytest.mark.parametrize(
    "args0, args1",
    [
        ((X0, 2), (X1, 3)),
        ((X0, np.array([0, 1])), (X1, np.array([2, 2]))),
        ((X0, True), (X1, False)),
        ((X0, "sq"), (X1, "cube")),
        ((X0, None), (X1, np.ones(3))),
    ],
    ids=["int", "index array", "bool", "str", "None to an array"],
)
def test_trace_non_float_arguments_changed_at_replay_raise(args0, args1):
    def f(x, k):
        if isinstance(k, str):
            return np.sum(x**2) if k == "sq" else np.sum(x**3)
        if k is None or isinstance(k, bool):
            return np.sum(x**2) if k else np.sum(x)
        return np.sum(x[:k] ** 2) if isinstance(k, int) else np.sum(x[k] ** 2)

    tr = tg.trace(f, *args0)
    assert_refused(lambda: tr.grad(*args1), "non-float value", exc=tg.RetraceRequired)


def test_trace_float_arguments_are_read_at_each_replay():
    tr = tg.trace(lambda x, c: np.sum(x * c), X0, np.array([1.0, 2.0, 3.0]), argnums=0)
    np.testing.assert_allclose(tr.grad(X1, np.full(3, 5.0)), [5.0, 5.0, 5.0])
    tr = tg.trace(lambda x, c: np.sum(x[: int(c.item())]) * c, X0, 2.0, argnums=0)
    assert_refused(lambda: tr.grad(X1, 3.0), "another branch", exc=tg.RetraceRequired)


def test_trace_shape_changes_raise_or_retrace():
    f = lambda x: np.sum(x**2)  # noqa: E731
    assert_refused(lambda: tg.trace(f, X0).grad(np.ones(4)), "shape", exc=ArgumentsChanged)
    np.testing.assert_allclose(tg.trace(f, X0, retrace=True).grad(np.ones(4)), 2 * np.ones(4))
    assert_refused(lambda: tg.trace(f, X0).grad([1.0, 2.0, 3.0]), "list", exc=ArgumentsChanged)


def test_trace_refuses_random_draws_inside_f():
    rng = np.random.default_rng(0)
    for f in [
        lambda x: np.sum(x * np.random.rand(3)),
        lambda x: np.sum(x * rng.standard_normal(3)),
        lambda x: np.sum(x * __import__("random").random()),
        lambda x: np.sum(x * tg.randn(3)),
    ]:
        assert_refused(functools.partial(tg.trace, f, X0), "drew random numbers", RuntimeError)
    assert_refused(lambda: tg.trace(lambda x: np.sum(rng.normal(loc=x)), X0), ARRAY)


def test_trace_replay_with_nan_takes_the_guard():
    f = lambda x: np.sum(np.where(x > 0, x, 0.0))  # noqa: E731
    x = np.array([np.nan, 1.0, 1.0])
    assert_refused(lambda: tg.trace(f, X0).grad(x), "another branch", exc=tg.RetraceRequired)
    np.testing.assert_array_equal(tg.grad(f)(x), [0.0, 1.0, 1.0])


def test_trace_replay_values_of_other_float_kinds():
    tr = tg.trace(lambda x: x**2, 2.0)
    assert tr.grad(np.array(3.0)) == 6.0
    np.testing.assert_allclose(
        tg.trace(lambda x: np.sum(x**2), X0).grad(X1.astype(np.float32)),
        2 * X1.astype(np.float32).astype(float),
    )


# ---- 8. the Tensor API ---------------------------------------------------------------------------
def _t():
    return tg.tensor(X, requires_grad=True)


TENSOR_API_REFUSED = {
    "np.asarray": (lambda: np.asarray(_t()), ARRAY),
    "__array__": (lambda: _t().__array__(), ARRAY),
    "np.array of a list": (lambda: np.array([_t()[0], 1.0]), ARRAY),
    "np.sum of a list": (lambda: np.sum([_t()[0], _t()[1]]), ARRAY),
    "np.float64 of an array": (lambda: np.float64(_t()), ARRAY),
    "np.float32 of an item": (lambda: np.float32(_t()[0]), ARRAY),
    "rng.normal(loc=t)": (lambda: np.random.default_rng(0).normal(loc=_t()), ARRAY),
    "masked * t": (lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]) * _t(), ARRAY),
    "scipy.special.erf": (
        lambda: pytest.importorskip("scipy.special").erf(_t()),
        "tapegrad.scipy.special.erf",
    ),
    "np.fft.fft": (lambda: np.fft.fft(_t()), "numpy.fft.fft"),
    "t.astype(complex)": (lambda: _t().astype(complex), "complex128"),
    "t.to(complex)": (lambda: _t().to(np.complex128), "complex128"),
    "t.half()": (lambda: _t().half(), "float16"),
    "bool of many": (lambda: bool(_t()), "ambiguous"),
}


@pytest.mark.parametrize("name", sorted(TENSOR_API_REFUSED))
def test_tensor_api_refusals(name):
    call, fragment = TENSOR_API_REFUSED[name]
    assert_refused(call, fragment, exc=(TypeError, RuntimeError))


def test_tensor_api_reads_follow_pytorch():
    t = _t()
    assert float(t[0]) == 0.3 and int(t[2]) == 1 and t[0].item() == 0.3
    assert math.sin(t[0]) == math.sin(0.3) and complex(t[0]) == 0.3
    assert t.tolist() == X.tolist() and t.numpy().tolist() == X.tolist()
    np.testing.assert_array_equal(np.asarray(tg.tensor([1.0, 2.0])), [1.0, 2.0])
    assert t.float().dtype == np.float64


def test_tensor_api_gradients_through_numpy_functions():
    t = _t()
    (h,) = tg.autograd.grad(tg.autograd.grad((t**3).sum(), t, create_graph=True)[0].sum(), t)
    np.testing.assert_allclose(h.numpy(), 6 * X)
    u = _t()
    np.sum(u * np.asarray(u.detach())).backward()
    np.testing.assert_allclose(u.grad.numpy(), X)
    w = tg.tensor(np.array([0.1, 0.2], np.float32), requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.dtype == np.float64


def test_backward_gradient_shape_mismatch_raises():
    t = _t()
    assert_refused(lambda: (t * 2.0).backward(np.ones(1)), "Mismatch in shape", exc=RuntimeError)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: tg.vjp(lambda x: x * 2.0, X)[1](np.ones(1)), "shape (1,)"),
        (lambda: tg.vjp(lambda x: x * 2.0, X)[1](1.0), "shape ()"),
        (lambda: tg.vjp(lambda x: x * 2.0, X)[1](np.ones((3, 1))), "shape (3, 1)"),
        (lambda: tg.jvp(lambda x: np.sum(x**2), (X,), (np.ones(1),)), "shape (1,)"),
        (lambda: tg.jvp(lambda x: np.sum(x**2), (X,), (1.0,)), "shape ()"),
        (lambda: tg.jvp(lambda x: np.sum(x**2), (X,), ([1.0, 0.0, 0.0],)), "structure"),
        (lambda: tg.hvp(lambda x: np.sum(x**3), (X,), (np.ones(1),)), "shape (1,)"),
        (lambda: tg.trace(lambda x: np.sum(x**2), X).jvp(X, np.ones(1)), "shape (1,)"),
        (lambda: tg.trace(lambda x: np.sum(x**3), X).hvp(X, 1.0), "shape ()"),
    ],
    ids=[
        "vjp (1,)",
        "vjp ()",
        "vjp (3, 1)",
        "jvp (1,)",
        "jvp ()",
        "jvp list",
        "hvp (1,)",
        "trace jvp (1,)",
        "trace hvp ()",
    ],
)
def test_directions_of_the_wrong_shape_are_not_broadcast(call, fragment):
    assert_refused(call, fragment, exc=ValueError)


def test_integer_directions_are_exact():
    assert tg.jvp(lambda x: np.sum(x**2), (X,), (np.array([1, 0, 0]),))[1] == pytest.approx(0.6)
    (g,) = tg.vjp(lambda x: x * 2.0, X)[1](np.array([1, 0, 0]))
    np.testing.assert_array_equal(g, [2.0, 0.0, 0.0])


# ---- 9. silent wrong numbers this hunt found, now refused (masked arrays, np.matrix, complex
#      seeds, extended precision, pickling); and two messages kept as strict xfails ----------
MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
MASK_MSG = "masked"


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.grad(lambda x, w: np.sum(x * w))(np.ones(3), MASKED),
        lambda: tg.grad(lambda x: np.sum(x * MASKED))(np.ones(3)),
        lambda: tg.value_and_grad(lambda x: np.sum(x * MASKED))(np.ones(3))[1],
        lambda: tg.trace(lambda x: np.sum(x * MASKED), np.ones(3)).grad(np.ones(3)),
        lambda: (lambda t: (np.sum(t * MASKED).backward(), t.grad.numpy())[1])(
            tg.tensor(np.ones(3), requires_grad=True)
        ),
    ],
    ids=[
        "non-differentiated argument",
        "closure constant",
        "value_and_grad",
        "trace",
        "Tensor API t * masked",
    ],
)
def test_masked_constants_meeting_a_traced_value(call):
    # NumPy: sum(x * masked) leaves out the masked entry, so the gradient is [1, 0, 3]
    right_or_refused(call, [1.0, 0.0, 3.0], MASK_MSG)


@pytest.mark.parametrize(
    "method, want",
    [
        (lambda tr: tr(MASKED), 10.0),
        (lambda tr: tr.value_and_grad(MASKED)[0], 10.0),
        (lambda tr: tr.grad(MASKED), [2.0, 0.0, 6.0]),
        (lambda tr: tr.jvp(MASKED, np.ones(3))[1], 8.0),
        (
            lambda tr: tr.grad_many(np.ma.masked_array([[1.0, 2.0, 3.0]], mask=[[0, 1, 0]])),
            [[2.0, 0.0, 6.0]],
        ),
    ],
    ids=["call", "value", "grad", "jvp", "grad_many"],
)
def test_masked_array_at_a_trace_replay(method, want):
    tr = tg.trace(lambda x: np.sum(x**2), np.ones(3))
    right_or_refused(lambda: method(tr), want, MASK_MSG)


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.jvp(lambda x: np.sum(x**2), (np.ones(3),), (MASKED,)),
        lambda: tg.vjp(lambda x: x * 2.0, np.ones(3))[1](MASKED),
        lambda: tg.hvp(lambda x: np.sum(x**2), (np.ones(3),), (MASKED,)),
        lambda: tg.trace(lambda x: np.sum(x**3), np.ones(3)).hvp(np.ones(3), MASKED),
        lambda: (tg.tensor(np.ones(3), requires_grad=True) * 2.0).backward(MASKED),
    ],
    ids=[
        "jvp tangent",
        "vjp cotangent",
        "hvp direction",
        "trace hvp direction",
        "backward gradient",
    ],
)
def test_masked_directions_are_refused(call):
    with pytest.raises(TypeError, match=MASK_MSG):
        call()


MATRIX = np.matrix([[1.0, 2.0]])


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda: tg.grad(lambda m: np.sum(m * m.T))(MATRIX), [[2.0, 4.0]]),
        (lambda: tg.value_and_grad(lambda m: np.sum(m * m.T))(MATRIX)[0], 5.0),
        (lambda: tg.trace(lambda m: np.sum(m * m.T), MATRIX)(MATRIX), 5.0),
        (lambda: tg.jvp(lambda m: np.sum(m * m.T), (MATRIX,), (np.matrix([[1.0, 0.0]]),))[1], 2.0),
    ],
    ids=["grad", "value", "trace", "jvp"],
)
def test_np_matrix_arguments(call, want):
    right_or_refused(call, want, "matrix")


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.grad(lambda x: np.sum(np.matrix([[1.0, 2.0, 3.0]]) * x.reshape(3, 1)))(X),
        lambda: (
            lambda t: (
                np.sum(np.matrix([[1.0, 2.0, 3.0]]) * t.reshape(3, 1)).backward(),
                t.grad.numpy(),
            )[1]
        )(tg.tensor(X, requires_grad=True)),
    ],
    ids=["grad", "Tensor API"],
)
def test_np_matrix_constant_times_a_traced_value(call):
    # NumPy: M @ x is 1*x0 + 2*x1 + 3*x2, gradient [1, 2, 3]
    right_or_refused(call, [1.0, 2.0, 3.0], "matrix")


@pytest.mark.parametrize(
    "call",
    [
        lambda t: tg.autograd.grad(t * 2.0, t, grad_outputs=np.array([1j, 1, 1])),
        lambda t: tg.autograd.grad(t * 2.0, t, grad_outputs=np.array([1 + 1j, 1, 1])),
        lambda t: (t * 2.0).backward(np.array([1j, 1, 1])),
        lambda t: tg.autograd.backward(t * 2.0, np.array([1j, 1, 1])),
        lambda t: (t.sum() * 2.0).backward(1j),
    ],
    ids=[
        "autograd.grad",
        "autograd.grad 1+1j",
        "backward",
        "autograd.backward",
        "backward scalar 1j",
    ],
)
def test_complex_seeds_of_backward_are_refused(call):
    t = tg.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        with pytest.raises(TypeError, match=COMPLEX):
            call(t)


def test_polyval_with_complex_coefficients_names_the_complex_refusal():
    with pytest.raises(TypeError, match=COMPLEX):
        tg.grad(lambda x: np.sum(np.polyval([1 + 1j, 2.0], x).real))(X)


@pytest.mark.parametrize("as_array", [False, True], ids=["scalar", "array"])
def test_long_double_arguments(as_array):
    a = np.longdouble(1) + np.longdouble(2) ** -60  # not a float64
    arg = np.array([a]) if as_array else a
    want = 2 * (a - 1)  # 2**-59, exact in long double

    def call():
        return tg.grad(lambda v: np.sum((v - 1.0) ** 2))(arg)

    try:
        got = call()
    except TypeError as e:
        assert "float128" in str(e) or "longdouble" in str(e), str(e)
        return
    assert np.ravel(got)[0] == want


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: tg.grad(f)(X),
        lambda f: tg.jvp(f, (X,), (np.ones(3),))[1],
        lambda f: tg.hessian(f)(X),
    ],
    ids=["grad", "jvp", "hessian"],
)
def test_pickle_round_trip_of_a_traced_value(transform):
    def f(x):
        return np.sum(pickle.loads(pickle.dumps(x)) ** 2)

    want = {0: 2 * X, 1: float(np.sum(2 * X)), 2: 2 * np.eye(3)}
    got = None
    try:
        got = transform(f)
    except TypeError as e:
        assert "pickle" in str(e), str(e)
        return
    g = np.asarray(got, dtype=float)
    assert any(g.shape == np.shape(w) and np.allclose(g, w) for w in want.values()), g


@pytest.mark.xfail(
    strict=True,
    reason="NumPy's .flat[i] = x wraps tapegrad's __float__ refusal in 'Error setting single "
    "item of array.' (the message store wrappers show elsewhere is not restored here)",
)
def test_flat_item_store_shows_tapegrads_message():
    def f(x):
        a = np.zeros(3)
        a.flat[0] = x[0]
        return np.sum(a)

    with pytest.raises(TypeError, match=FLOAT):
        tg.grad(f)(X)


@pytest.mark.xfail(
    strict=True,
    reason="not dispatched: np.isscalar / isinstance(v, float) are False for a 0-d traced "
    "value, while NumPy's x[0] (np.float64) is a scalar and a float, so f silently takes "
    "another branch (JAX tracers do the same; documented in docs/REFUSALS.md, with np.ndim)",
)
@pytest.mark.parametrize(
    "f",
    [
        lambda x: x[0] * (2.0 if np.isscalar(x[0]) else 3.0),
        lambda x: x[0] * (2.0 if isinstance(x[0], float) else 3.0),
    ],
    ids=["np.isscalar", "isinstance float"],
)
def test_scalar_checks_on_a_traced_item(f):
    np.testing.assert_allclose(tg.grad(f)(X), [2.0, 0.0, 0.0])
