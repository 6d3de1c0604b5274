"""The NumPy names tapegrad differentiates: values against NumPy's, gradients and tangents
against central finite differences, broadcasting, axis/keepdims, plain arrays in and out, and
the special points (sinc at 0, cumprod with zeros, remainder of negatives, arctan2 in every
quadrant, logaddexp at ties)."""

import math

import numpy as np
import pytest
from finite_differences import check_derivatives

import tapegrad as tg
import tapegrad.numpy as tnp

RNG = np.random.default_rng(2024)


def _u(lo, hi, *shape):
    return RNG.uniform(lo, hi, size=shape)


def _away(points, lo, hi, *shape, gap=0.1):
    """Uniform samples kept ``gap`` away from ``points`` (jumps and kinks)."""
    v = _u(lo, hi, *shape)
    for p in points:
        v = np.where(np.abs(v - p) < gap, p + np.where(v >= p, gap, -gap), v)
    return v


def close(got, want, ulps=4):
    """Equal within a few ulp (never bit identity: NumPy and Numba may round differently)."""
    got = np.asarray(got.numpy() if isinstance(got, tg.Tensor) else got, dtype=float)
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape
    np.testing.assert_allclose(
        got, want, rtol=ulps * np.finfo(float).eps, atol=ulps * np.finfo(float).tiny
    )


# ---- elementwise, one operand ------------------------------------------------------------------
# name -> (NumPy callable, sample)
UNARY = {
    "arcsin": (np.arcsin, _u(-0.8, 0.8, 2, 3)),
    "arccos": (np.arccos, _u(-0.8, 0.8, 2, 3)),
    "arctan": (np.arctan, _u(-2, 2, 2, 3)),
    "arcsinh": (np.arcsinh, _u(-2, 2, 2, 3)),
    "arccosh": (np.arccosh, _u(1.2, 3, 2, 3)),
    "arctanh": (np.arctanh, _u(-0.8, 0.8, 2, 3)),
    "sinh": (np.sinh, _u(-2, 2, 2, 3)),
    "cosh": (np.cosh, _u(-2, 2, 2, 3)),
    "log2": (np.log2, _u(0.2, 3, 2, 3)),
    "log10": (np.log10, _u(0.2, 3, 2, 3)),
    "exp2": (np.exp2, _u(-2, 2, 2, 3)),
    "cbrt": (np.cbrt, _away([0.0], -2, 2, 2, 3)),
    "sinc": (np.sinc, np.array([[0.0, 0.02, -0.09], [0.1, -0.5, 1.7]])),
    "square": (np.square, _u(-2, 2, 2, 3)),
    "reciprocal": (np.reciprocal, _u(0.3, 2, 2, 3)),
    "deg2rad": (np.deg2rad, _u(-200, 200, 2, 3)),
    "radians": (np.radians, _u(-200, 200, 2, 3)),
    "rad2deg": (np.rad2deg, _u(-3, 3, 2, 3)),
    "degrees": (np.degrees, _u(-3, 3, 2, 3)),
    "floor": (np.floor, _away(range(-2, 3), -2, 2, 2, 3)),
    "ceil": (np.ceil, _away(range(-2, 3), -2, 2, 2, 3)),
    "rint": (np.rint, _away([-1.5, -0.5, 0.5, 1.5], -2, 2, 2, 3)),
    "round": (np.round, _away([-1.5, -0.5, 0.5, 1.5], -2, 2, 2, 3)),
    "around": (np.around, _away([-1.5, -0.5, 0.5, 1.5], -2, 2, 2, 3)),
    "round2": (lambda x: np.round(x, 2), _u(-2, 2, 2, 3)),
    "trunc": (np.trunc, _away(range(-2, 3), -2, 2, 2, 3)),
    "fix": (np.fix, _away(range(-2, 3), -2, 2, 2, 3)),
    "sign": (np.sign, _away([0.0], -2, 2, 2, 3)),
    "nan_to_num": (np.nan_to_num, _u(-2, 2, 2, 3)),
    "real": (np.real, _u(-2, 2, 2, 3)),
    "imag": (np.imag, _u(-2, 2, 2, 3)),
    "conj": (np.conj, _u(-2, 2, 2, 3)),
    "conjugate": (np.conjugate, _u(-2, 2, 2, 3)),
    "angle": (np.angle, _away([0.0], -2, 2, 2, 3)),
    "angle_deg": (lambda x: np.angle(x, deg=True), _away([0.0], -2, 2, 2, 3)),
    "real_if_close": (np.real_if_close, _u(-2, 2, 2, 3)),
}
ZERO_DERIVATIVE = {
    "floor",
    "ceil",
    "rint",
    "round",
    "around",
    "trunc",
    "fix",
    "sign",
    "imag",
    "angle",
    "angle_deg",
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_value_matches_numpy(name):
    fn, x = UNARY[name]
    want = fn(x)
    close(fn(tg.tensor(x, requires_grad=True)), want)  # NumPy dispatch on a Tensor
    close(fn(tg.tensor(x)), want)
    base = name.rstrip("2") if name == "round2" else name.replace("_deg", "")
    tnp_fn = getattr(tnp, base)
    plain = (
        tnp_fn(x, 2)
        if name == "round2"
        else (tnp_fn(x, deg=True) if name == "angle_deg" else tnp_fn(x))
    )
    assert not isinstance(plain, tg.Tensor) and isinstance(plain, np.ndarray)
    close(plain, want)
    for v in (float(x.flat[1]), x[0]):  # Python floats and 1-D arrays
        close(fn(tg.tensor(v, requires_grad=True)), fn(v))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_derivatives_match_finite_differences(name):
    fn, x = UNARY[name]
    check_derivatives(fn, [x])
    if name in ZERO_DERIVATIVE:
        assert not np.any(tg.grad(lambda t: fn(t).sum())(x))
        assert not np.any(tg.hessian(lambda t: fn(t).sum())(x.ravel()))


@pytest.mark.parametrize(
    "name",
    [
        "arcsin",
        "arccos",
        "arctan",
        "arcsinh",
        "arccosh",
        "arctanh",
        "sinh",
        "cosh",
        "log2",
        "log10",
        "exp2",
        "cbrt",
        "sinc",
        "floor",
        "ceil",
        "rint",
        "trunc",
        "sign",
        "reciprocal",
        "deg2rad",
        "rad2deg",
        "square",
        "nan_to_num",
    ],
)
def test_tensor_methods_and_top_level_names(name):
    fn, x = UNARY[name]
    t = tg.tensor(x, requires_grad=True)
    close(getattr(t, name)(), fn(x))
    close(getattr(tg, name)(t), fn(x))


def test_zero_derivative_functions_at_every_order_and_in_traces():
    x = np.array([-1.7, -0.4, 0.3, 1.6])
    for fn in (np.floor, np.ceil, np.rint, np.trunc, np.sign, np.round, np.fix):

        def f(v, fn=fn):
            return (fn(v) * v).sum()

        np.testing.assert_array_equal(tg.grad(f)(x), fn(x))
        np.testing.assert_array_equal(tg.hessian(f)(x), np.zeros((4, 4)))
        _, t = tg.jvp(lambda v, fn=fn: fn(v), (x,), (np.ones(4),))
        np.testing.assert_array_equal(t, np.zeros(4))
        tr = tg.trace(f, x)  # the value is recomputed on replay, not baked in
        y = -x[::-1] * 1.3
        v, g = tr.value_and_grad(y)
        assert v == pytest.approx(float((fn(y) * y).sum()), rel=1e-14)
        np.testing.assert_array_equal(g, fn(y))


def test_nan_to_num_derivative_is_one_where_finite_and_zero_where_replaced():
    x = np.array([1.5, np.nan, np.inf, -np.inf, -2.0])
    t = tg.tensor(x, requires_grad=True)
    out = np.nan_to_num(t, nan=0.5, posinf=9.0, neginf=-9.0)
    close(out, np.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0))
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1, 0, 0, 0, 1])
    close(np.nan_to_num(tg.tensor(x)), np.nan_to_num(x))


def test_sinc_at_zero_value_and_derivatives_at_every_order():
    d = [np.sinc]
    for _ in range(4):
        d.append(tg.grad(d[-1]))
    got = [float(f(0.0)) for f in d]
    want = [1.0, 0.0, -(math.pi**2) / 3, 0.0, math.pi**4 / 5]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    # forward mode and the compiled Hessian agree at 0 and on both sides of the series switch
    x = np.array([0.0, 0.0999, 0.1001, -0.3])
    H = tg.hessian(lambda v: np.sinc(v).sum())(x)
    eps = 1e-5
    g = tg.grad(lambda v: np.sinc(v).sum())
    fd = (g(x + eps) - g(x - eps)) / (2 * eps)
    np.testing.assert_allclose(np.diag(H), fd, rtol=1e-6, atol=1e-8)
    _, t = tg.jvp(np.sinc, (x,), (np.ones(4),))
    np.testing.assert_allclose(t, g(x), rtol=1e-15)


# ---- elementwise, two operands ---------------------------------------------------------------
BINARY = {
    "arctan2": (np.arctan2, _u(-2, 2, 2, 3), _away([0.0], -2, 2, 3)),
    "hypot": (np.hypot, _u(-2, 2, 2, 3), _away([0.0], -2, 2, 3)),
    "logaddexp": (np.logaddexp, _u(-2, 2, 2, 3), _u(-2, 2, 3)),
    "logaddexp2": (np.logaddexp2, _u(-2, 2, 2, 3), _u(-2, 2, 3)),
    "remainder": (
        np.remainder,
        np.array([[2.3, -2.3, 0.45], [-1.1, 3.3, -0.2]]),
        np.array([0.7, -0.7, 0.4]),
    ),
    "mod": (np.mod, np.array([[2.3, -2.3, 0.45], [-1.1, 3.3, -0.2]]), np.array([0.7, -0.7, 0.4])),
    "fmod": (np.fmod, np.array([[2.3, -2.3, 0.45], [-1.1, 3.3, -0.2]]), np.array([0.7, -0.7, 0.4])),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_value_matches_numpy_with_broadcasting(name):
    fn, a, b = BINARY[name]
    want = fn(a, b)
    close(fn(tg.tensor(a, requires_grad=True), b), want)
    close(fn(a, tg.tensor(b, requires_grad=True)), want)
    close(fn(tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)), want)
    close(fn(tg.tensor(a, requires_grad=True), 1.3), fn(a, 1.3))  # a Python scalar
    close(fn(tg.tensor(b[:, None], requires_grad=True), a[0]), fn(b[:, None], a[0]))  # outer
    plain = getattr(tnp, name)(a, b)
    assert isinstance(plain, np.ndarray) and not isinstance(plain, tg.Tensor)
    close(plain, want)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_derivatives_match_finite_differences(name):
    fn, a, b = BINARY[name]
    check_derivatives(fn, [a, b])


def test_arctan2_in_all_four_quadrants():
    y = np.array([0.5, 0.5, -0.5, -0.5, 0.0, 0.0])
    x = np.array([1.5, -1.5, -1.5, 1.5, 2.0, -2.0])
    close(np.arctan2(tg.tensor(y, requires_grad=True), x), np.arctan2(y, x))
    gy, gx = tg.grad(lambda a, b: np.arctan2(a, b).sum(), argnums=(0, 1))(y, x)
    r2 = x * x + y * y
    close(gy, x / r2)
    close(gx, -y / r2)
    # the origin: arctan2 jumps there; the partials are taken as 0, never NaN
    g0 = tg.grad(lambda a, b: np.arctan2(a, b), argnums=(0, 1))(0.0, 0.0)
    assert g0 == (0.0, 0.0)
    close(
        np.angle(tg.tensor(np.array([-1.0, 2.0, -0.0]), requires_grad=True)),
        np.angle(np.array([-1.0, 2.0, -0.0])),
    )


def test_remainder_and_fmod_at_negative_operands():
    a = np.array([2.3, -2.3, 2.3, -2.3, 4.0, -4.0])
    b = np.array([0.7, 0.7, -0.7, -0.7, 2.0, 2.0])
    for fn in (np.remainder, np.fmod):
        ta = tg.tensor(a, requires_grad=True)
        tb = tg.tensor(b, requires_grad=True)
        close(fn(ta, tb), fn(a, b))
    ga, gb = tg.grad(lambda x, y: np.remainder(x, y).sum(), argnums=(0, 1))(a[:4], b[:4])
    np.testing.assert_array_equal(ga, np.ones(4))
    np.testing.assert_array_equal(gb, -np.floor(a[:4] / b[:4]))
    ga, gb = tg.grad(lambda x, y: np.fmod(x, y).sum(), argnums=(0, 1))(a[:4], b[:4])
    np.testing.assert_array_equal(gb, -np.trunc(a[:4] / b[:4]))
    t = tg.tensor(a, requires_grad=True)
    close(t % 0.7, a % 0.7)
    close(5.0 % tg.tensor(b, requires_grad=True), 5.0 % b)


def test_logaddexp_is_stable_and_splits_ties():
    for f, base in ((np.logaddexp, math.e), (np.logaddexp2, 2.0)):
        g = tg.grad(f, argnums=(0, 1))
        assert g(1.0, 1.0) == (0.5, 0.5)
        assert g(1000.0, 1000.0) == (0.5, 0.5)
        ga, gb = g(1000.0, -1000.0)
        assert (ga, gb) == (1.0, 0.0)
        close(f(tg.tensor(1000.0, requires_grad=True), 1000.0), f(1000.0, 1000.0))
        H = tg.hessian(lambda v, f=f: f(v[0], v[1]))(np.array([0.3, 0.3]))
        k = math.log(base) * 0.25
        np.testing.assert_allclose(H, [[k, -k], [-k, k]], rtol=1e-14)


def test_hypot_gradient_at_the_origin_is_zero_not_nan():
    assert tg.grad(lambda a, b: np.hypot(a, b), argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)
    assert tg.grad(lambda a, b: np.hypot(a, b), argnums=(0, 1))(3.0, -4.0) == (0.6, -0.8)


def test_out_is_refused_clearly():
    t = tg.tensor([0.1, 0.2], requires_grad=True)
    for call in (
        lambda: np.arcsin(t, out=np.empty(2)),
        lambda: np.hypot(t, t, out=np.empty(2)),
        lambda: np.cumsum(t, out=np.empty(2)),
        lambda: np.median(t, out=np.empty(())),
        lambda: np.round(t, out=np.empty(2)),
    ):
        with pytest.raises(TypeError, match="out="):
            call()


# ---- reductions and scans ---------------------------------------------------------------------
X = _u(-2, 2, 3, 4)
Xd = np.arange(12.0).reshape(3, 4) * 0.37 - 1.9 + _u(-0.01, 0.01, 3, 4)  # no ties
REDUCTIONS = {
    "var": lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=keepdims),
    "var_ddof1": lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=keepdims, ddof=1),
    "std_ddof1": lambda a, axis, keepdims: np.std(a, axis=axis, keepdims=keepdims, ddof=1),
    "std": lambda a, axis, keepdims: np.std(a, axis=axis, keepdims=keepdims),
    "ptp": lambda a, axis, keepdims: np.ptp(a, axis=axis, keepdims=keepdims),
    "median": lambda a, axis, keepdims: np.median(a, axis=axis, keepdims=keepdims),
    "average": lambda a, axis, keepdims: np.average(
        a,
        axis=axis,
        keepdims=keepdims,
        weights=np.linspace(0.5, 1.5, a.shape[axis]) if axis is not None else a * 0 + 0.7,
    ),
    "quantile": lambda a, axis, keepdims: np.quantile(
        a, [0.1, 0.5, 0.77], axis=axis, keepdims=keepdims
    ),
    "quantile_scalar": lambda a, axis, keepdims: np.quantile(a, 0.3, axis=axis, keepdims=keepdims),
    "percentile": lambda a, axis, keepdims: np.percentile(
        a, [25.0, 90.0], axis=axis, keepdims=keepdims
    ),
}
AXES = [None, 0, 1, -1]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_value_axis_keepdims_and_derivatives(name, axis, keepdims):
    fn = REDUCTIONS[name]
    want = fn(Xd, axis, keepdims)
    close(fn(tg.tensor(Xd, requires_grad=True), axis, keepdims), want, ulps=8)
    base = name.split("_")[0]
    if base in ("var", "std", "median", "ptp", "average"):
        plain = fn(Xd, axis, keepdims)
    else:
        plain = getattr(tnp, base)(
            Xd, [0.5] if base == "quantile" else [50.0], axis=axis, keepdims=keepdims
        )
    assert not isinstance(plain, tg.Tensor)
    check_derivatives(lambda a: fn(a, axis, keepdims), [Xd])


@pytest.mark.parametrize(
    "name",
    [
        "var",
        "std",
        "median",
        "ptp",
        "average",
        "quantile",
        "percentile",
        "cumsum",
        "cumprod",
        "diff",
        "sort",
        "partition",
    ],
)
def test_functions_on_plain_arrays_return_plain_arrays(name):
    fn = getattr(tnp, name)
    args = {"quantile": (0.5,), "percentile": (50.0,), "partition": (1,)}.get(name, ())
    out = fn(Xd, *args)
    assert not isinstance(out, tg.Tensor)
    close(out, getattr(np, name)(Xd, *args))
    t = fn(tg.tensor(Xd, requires_grad=True), *args)
    assert isinstance(t, tg.Tensor) and t.requires_grad
    if name != "partition":
        close(t, getattr(np, name)(Xd, *args), ulps=8)


SCANS = {
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "diff": np.diff,
    "diff2": lambda a, axis=-1: np.diff(a, 2, axis=axis),
    "diff_prepend": lambda a, axis=-1: np.diff(a, axis=axis, prepend=0.5, append=-1.0),
    "sort": np.sort,
}


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_and_sorts(name, axis):
    fn = SCANS[name]
    if name.startswith("diff") and axis is None:
        axis = 0
    want = fn(Xd, axis=axis)
    close(fn(tg.tensor(Xd, requires_grad=True), axis=axis), want, ulps=8)
    check_derivatives(lambda a: fn(a, axis=axis), [Xd])


def test_scan_methods_and_names():
    t = tg.tensor(X, requires_grad=True)
    close(t.cumsum(axis=1), X.cumsum(axis=1))
    close(t.cumprod(0), X.cumprod(0))
    close(t.cumsum(), X.cumsum())
    close(t.var(ddof=1), X.var(ddof=1), ulps=8)
    close(t.std(axis=0, ddof=1), X.std(axis=0, ddof=1), ulps=8)
    close(t.round(1), X.round(1))
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        close(np.var(t, axis=1, correction=1), np.var(X, axis=1, correction=1), ulps=8)
    for name in ("cumsum", "cumprod", "diff", "ptp", "average"):
        close(getattr(tg, name)(t), getattr(np, name)(X), ulps=8)
    for name in ("sort", "var", "std", "median"):  # tg's are PyTorch's ((values, indices),
        # unbiased, the lower middle value)
        close(getattr(tnp, name)(t), getattr(np, name)(X), ulps=8)
    close(tg.quantile(t, 0.25), np.quantile(X, 0.25))
    close(tg.percentile(t, 75.0, axis=0), np.percentile(X, 75.0, axis=0))
    close(tg.partition(t, 2, axis=1)[:, 2], np.partition(X, 2, axis=1)[:, 2])


def test_cumprod_with_zeros_is_exact_at_every_order():
    x = np.array([1.5, 0.0, -2.0, 0.0, 3.0])
    close(np.cumprod(tg.tensor(x, requires_grad=True)), np.cumprod(x))
    J = tg.jacobian(np.cumprod)(x)
    Jf = tg.jacfwd(np.cumprod)(x)
    want = np.zeros((5, 5))
    for k in range(5):
        for j in range(k + 1):
            want[k, j] = np.prod(np.delete(x[: k + 1], j))
    np.testing.assert_array_equal(J, want)
    np.testing.assert_array_equal(Jf, want)
    w = np.array([0.3, -1.1, 0.7, 2.0, -0.4])

    def s(v):
        return (np.cumprod(v) * w).sum()

    H = tg.hessian(s)(x)
    Hr = tg.jacobian(tg.grad(s), mode="rev")(x)
    Hw = np.zeros((5, 5))
    for k in range(5):
        for i in range(k + 1):
            for j in range(k + 1):
                if i != j:
                    Hw[i, j] += w[k] * np.prod(np.delete(x[: k + 1], [i, j]))
    np.testing.assert_allclose(H, Hw, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(Hr, Hw, rtol=1e-14, atol=1e-14)
    tr = tg.trace(s, x)
    y = np.array([0.0, 1.2, 0.0, -0.5, 2.0])
    v, g = tr.value_and_grad(y)
    ev, eg = tg.value_and_grad(s)(y)
    assert v == pytest.approx(ev, rel=1e-14)
    np.testing.assert_allclose(g, eg, rtol=1e-14)


def test_quantile_interpolates_linearly_and_routes_the_gradient():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    g = tg.grad(lambda v: np.quantile(v, 0.4))(x)  # virtual index 1.2 between 2 and 3
    np.testing.assert_allclose(g, [0.0, 0.0, 0.2, 0.8], rtol=1e-14)
    g = tg.grad(lambda v: np.median(v))(x)
    np.testing.assert_allclose(g, [0.0, 0.0, 0.5, 0.5])
    g = tg.grad(lambda v: np.percentile(v, 100.0))(x)
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 0.0])
    close(
        np.median(tg.tensor(np.array([1.0, np.nan, 2.0]), requires_grad=True)),
        np.median(np.array([1.0, np.nan, 2.0])),
    )
    with pytest.raises(NotImplementedError, match="method='weibull'"):
        np.quantile(tg.tensor(x, requires_grad=True), 0.5, method="weibull")
    with pytest.raises(ValueError, match="range"):
        np.quantile(tg.tensor(x, requires_grad=True), 1.5)


def test_sorted_order_is_guarded_in_traces():
    def f(v):
        return (np.sort(v) * np.array([1.0, 2.0, 3.0])).sum() + np.quantile(v, 0.3)

    tr = tg.trace(f, np.array([3.0, 1.0, 2.0]))
    y = np.array([3.5, 1.1, 2.0])
    v, g = tr.value_and_grad(y)
    ev, eg = tg.value_and_grad(f)(y)
    assert v == pytest.approx(ev) and np.allclose(g, eg)
    with pytest.raises(tg.RetraceRequired):
        tr.grad(np.array([1.0, 3.0, 2.0]))
    tr2 = tg.trace(f, np.array([3.0, 1.0, 2.0]), retrace=True)
    np.testing.assert_allclose(
        tr2.grad(np.array([1.0, 3.0, 2.0])), tg.grad(f)(np.array([1.0, 3.0, 2.0]))
    )


def test_partition_puts_kth_in_place_and_differentiates():
    x = np.array([[5.0, 1.0, 4.0, 2.0, 3.0], [0.5, -1.0, 2.0, 1.5, 0.0]])
    t = tg.tensor(x, requires_grad=True)
    p = np.partition(t, 2, axis=1)
    close(p[:, 2], np.partition(x, 2, axis=1)[:, 2])
    g = tg.grad(lambda v: np.partition(v, (1, 3))[:, 3].sum())(x)
    np.testing.assert_array_equal(g, [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0]])


def test_average_returned_and_weights_gradient():
    a = _u(-1, 1, 3, 4)
    w = _u(0.5, 1.5, 4)
    avg, scl = np.average(tg.tensor(a, requires_grad=True), axis=1, weights=w, returned=True)
    wa, ws = np.average(a, axis=1, weights=w, returned=True)
    close(avg, wa, ulps=8)
    close(scl, ws, ulps=8)
    check_derivatives(lambda x, y: np.average(x, axis=1, weights=y), [a, w])
    with pytest.raises(ZeroDivisionError):
        np.average(tg.tensor(a, requires_grad=True), axis=1, weights=np.zeros(4))
    with pytest.raises(TypeError, match="axis must be specified"):
        np.average(tg.tensor(a, requires_grad=True), weights=w)


ADDED = [
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sinh",
    "cosh",
    "log2",
    "log10",
    "exp2",
    "cbrt",
    "sinc",
    "arctan2",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "remainder",
    "mod",
    "fmod",
    "deg2rad",
    "radians",
    "rad2deg",
    "degrees",
    "square",
    "reciprocal",
    "floor",
    "ceil",
    "round",
    "around",
    "rint",
    "trunc",
    "fix",
    "sign",
    "nan_to_num",
    "real",
    "imag",
    "conj",
    "conjugate",
    "angle",
    "real_if_close",
    "cumsum",
    "cumprod",
    "diff",
    "var",
    "std",
    "average",
    "ptp",
    "median",
    "percentile",
    "quantile",
    "sort",
    "partition",
]


@pytest.mark.parametrize("name", ADDED)
def test_tapegrad_numpy_exports_every_added_name(name):
    import tapegrad.numpy.dispatch as D

    fn = getattr(np, name)
    assert fn in D.UFUNCS or fn in D.FUNCTIONS
    assert name in vars(tnp), f"tapegrad.numpy.{name} is NumPy's own, not the wrapped one"


@pytest.mark.parametrize(
    "name",
    [
        "arcsin",
        "arccos",
        "arctan",
        "arcsinh",
        "arccosh",
        "arctanh",
        "sinh",
        "cosh",
        "log2",
        "log10",
        "exp2",
        "cbrt",
        "sinc",
        "arctan2",
        "hypot",
        "logaddexp",
        "logaddexp2",
        "remainder",
        "mod",
        "fmod",
        "floor",
        "ceil",
        "round",
        "rint",
        "trunc",
        "sign",
        "cumsum",
        "cumprod",
        "diff",
        "var",
        "std",
        "average",
        "ptp",
        "median",
        "percentile",
        "quantile",
        "sort",
        "partition",
        "nan_to_num",
        "deg2rad",
        "rad2deg",
        "reciprocal",
    ],
)
def test_top_level_names(name):
    assert callable(getattr(tg, name))


def test_floor_divide_divmod_and_accumulate():
    a = np.array([2.3, -2.3, 2.3, -2.3, 4.0, -4.0, 0.0])
    b = np.array([0.7, 0.7, -0.7, -0.7, 2.0, 2.0, -1.5])
    t = tg.tensor(a, requires_grad=True)
    close(t // b, a // b)
    close(np.floor_divide(t, b), np.floor_divide(a, b))
    close(3.0 // tg.tensor(b, requires_grad=True), 3.0 // b)
    q, r = divmod(t, b)
    close(q, a // b)
    close(r, a % b)
    q, r = np.divmod(t, b)
    close(q, np.floor_divide(a, b))
    assert not np.any(tg.grad(lambda x: (x // 0.7).sum())(a))
    x = _u(-1, 1, 3, 4)
    close(np.add.accumulate(tg.tensor(x, requires_grad=True)), np.add.accumulate(x))
    close(
        np.multiply.accumulate(tg.tensor(x, requires_grad=True), axis=1),
        np.multiply.accumulate(x, axis=1),
    )
    check_derivatives(lambda v: np.multiply.accumulate(v, axis=1), [x])
    assert "floor_divide" in vars(tnp) and "divmod" in vars(tnp)


def test_arctan2_gradient_of_tiny_operands_does_not_underflow():
    y, x = 3e-200, 4e-200
    gy, gx = tg.grad(lambda a, b: np.arctan2(a, b), argnums=(0, 1))(y, x)
    r = 5e-200  # r * r underflows: the partials are (x / r) / r, (-y / r) / r
    np.testing.assert_allclose([gy, gx], [0.8 / r, -0.6 / r], rtol=1e-14)
