"""Values and derivatives at the edges: tails, singular points, symbolic zeros.

Every order agrees: the compiled forward-over-reverse Hessian (``tg.hessian``) and reverse
over reverse on Tensors (``tg.grad(tg.grad(f))``) give the same IEEE value (the same
infinity, or both finite and close), and both agree with the limit or with mpmath."""

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn

try:  # the floor run installs no extras: the tests that need SciPy say so
    import tapegrad.scipy.special as tsp
except ImportError:
    tsp = None
needs_scipy = pytest.mark.skipif(tsp is None, reason="tapegrad.scipy needs the scipy extra")


def _same_ieee(a, b, rtol=1e-12):
    a, b = float(a), float(b)
    if math.isnan(b):
        return math.isnan(a)
    if math.isinf(b):
        return a == b
    return a == pytest.approx(b, rel=rtol, abs=1e-300)


@needs_scipy
@pytest.mark.parametrize("x", [-800.0, -50.0, -40.0, -1.0, 0.0, 1.0, 40.0, 50.0, 800.0])
def test_sigmoid_keeps_both_tails(x):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    want = float(1 / (1 + mp.exp(-x)))
    dwant = float(mp.exp(-x) / (1 + mp.exp(-x)) ** 2)
    assert _same_ieee(tsp.expit(tg.tensor(x)).item(), want, 1e-15)
    assert _same_ieee(tg.grad(tsp.expit)(x), dwant, 1e-14)
    assert _same_ieee(tg.grad(tg.sigmoid)(x), dwant, 1e-14)
    if abs(x) <= 50:  # log(expit(x)) and its derivative 1 - expit(x), far into the tails
        exact = 1 / (1 + mp.exp(-x))
        if x <= 1:  # above, expit(x) rounds to 1 in float64 (log_expit would be needed)
            got = np.log(tsp.expit(tg.tensor(x))).item()
            assert _same_ieee(got, float(mp.log(exact)), 1e-14)
        assert _same_ieee(tg.grad(lambda v: np.log(tsp.expit(v)))(x), float(1 - exact), 1e-14)


def test_sigmoid_then_bce_loss_far_in_the_tail():
    x = tg.tensor([-40.0, -50.0, -30.0], requires_grad=True)
    loss = nn.BCELoss()(nn.Sigmoid()(x), tg.tensor([1.0, 1.0, 1.0]))
    assert loss.item() == pytest.approx(40.0, rel=1e-12)  # (40 + 50 + 30) / 3, not 100
    loss.backward()
    s = 1 / (1 + np.exp(-x.numpy()))
    np.testing.assert_allclose(x.grad.numpy(), (s - 1.0) / 3, rtol=1e-12)


def test_nested_derivatives_of_powers_at_zero():
    def poly(x):
        return 1 + 2 * x + 3 * x**2 + 4 * x**3

    assert tg.hessian(poly)(0.0) == 6.0
    assert tg.grad(tg.grad(poly))(0.0) == 6.0
    assert tg.grad(tg.grad(lambda y: 0.0**y))(0.3) == 0.0  # 0 ** y is 0 for y > 0
    assert tg.hessian(lambda y: 0.0**y)(0.3) == 0.0
    assert tg.grad(lambda y: 0.0**y)(0.0) == -np.inf  # the one-sided limit at 0


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0), branch not taken
def test_derivatives_in_the_tangent_and_cotangent_of_powers_of_zero():
    # d(0 ** y)/dy is 0 for y > 0, so a JVP is 0 * v and a VJP 0 * w: their derivatives in
    # v and w are 0, not the NaN that log(0) = -inf in the branch not taken gave (0 * -inf)
    y = np.array([0.3, 0.4])
    v = np.array([0.5, -1.5])
    x = np.array([0.0, 2.0])  # an array base: the zero entry alone is the edge
    d_x = np.log(x[1]) * x[1] ** y  # d(x ** y)/dy away from the zero base

    def jvp_of(f):
        return lambda v: tg.jvp(f, (y,), (v,))[1].sum()

    assert np.array_equal(tg.grad(jvp_of(lambda y: 0.0**y))(v), [0.0, 0.0])
    assert np.array_equal(tg.grad(jvp_of(lambda y: np.power(0.0, y)))(v), [0.0, 0.0])
    g = tg.grad(jvp_of(lambda y: np.power(x, y)))(v)
    assert g[0] == 0.0
    np.testing.assert_allclose(g[1], d_x[1], rtol=1e-14)
    assert tg.grad(lambda v: tg.jvp(lambda s: 0.0**s, (0.3,), (v,))[1])(0.5) == 0.0

    def vjp_of(f, at):
        return lambda w: tg.vjp(f, at)[1](w)[0].sum()

    assert tg.grad(vjp_of(lambda s: 0.0**s, 0.3))(1.0) == 0.0
    g = tg.grad(vjp_of(lambda s: np.power(x, s), 0.3))(np.ones(2))
    assert g[0] == 0.0
    np.testing.assert_allclose(g[1], np.log(2.0) * 2.0**0.3, rtol=1e-14)
    # the derivative in the primal is unchanged, and finite differences agree in v
    h = 1e-6
    fd = tg.jvp(lambda s: x**s, (y,), (v + h,))[1] - tg.jvp(lambda s: x**s, (y,), (v - h,))[1]
    np.testing.assert_allclose(fd / (2 * h), [0.0, d_x[1]], atol=1e-8)
    assert tg.grad(tg.grad(lambda s: np.power(x, s).sum()))(0.3) == pytest.approx(
        np.log(2.0) ** 2 * 2.0**0.3, rel=1e-14
    )


SINGULAR = {
    "exp at 1000": (np.exp, 1000.0),
    "sqrt at 0": (np.sqrt, 0.0),
    "log at 0": (np.log, 0.0),
    "1/x at 0": (lambda x: 1.0 / x, 0.0),
    "x**0.5 at 0": (lambda x: x**0.5, 0.0),
    "x**-1 at 0": (lambda x: x**-1.0, 0.0),
    "cbrt at 0": (np.cbrt, 0.0),
    "arcsin at 1": (np.arcsin, 1.0),
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_forward_over_reverse_agrees_with_reverse_over_reverse_at_singular_points(name):
    f, x = SINGULAR[name]
    with np.errstate(all="ignore"):
        h = tg.hessian(f)(x)
        gg = tg.grad(tg.grad(f))(x)
    assert np.isinf(gg) or np.isnan(gg)  # these second derivatives are infinite there
    assert _same_ieee(h, gg)


def test_hypot_at_the_origin_and_away_from_it():
    def f(v):
        return np.hypot(v[0], v[1])

    assert tg.grad(f)(np.zeros(2)).tolist() == [0.0, 0.0]  # the kink picks 0, as abs
    np.testing.assert_array_equal(tg.hessian(f)(np.zeros(2)), np.zeros((2, 2)))
    np.testing.assert_array_equal(tg.jacobian(tg.grad(f))(np.zeros(2)), np.zeros((2, 2)))
    p = np.array([3.0, 4.0])
    np.testing.assert_allclose(tg.hessian(f)(p), (np.eye(2) * 25 - np.outer(p, p)) / 125)


def test_x_to_the_x_at_zero_is_the_one_sided_limit():
    assert tg.grad(lambda x: x**x)(0.0) == -np.inf
    assert tg.grad(lambda x: x**x)(0.5) == pytest.approx(0.5**0.5 * (np.log(0.5) + 1))


def test_zero_derivative_ops_contribute_a_symbolic_zero():
    """round has derivative 0: (-2) ** round(x) has gradient 0, not 0 * nan."""
    assert tg.grad(lambda x: (-2.0) ** np.round(x))(1.3) == 0.0
    np.testing.assert_array_equal(
        tg.grad(lambda x: np.sum((-2.0) ** np.round(x)))(np.array([1.3, 2.6])), [0.0, 0.0]
    )
    assert tg.grad(tg.grad(lambda x: (-2.0) ** np.floor(x) * x))(1.5) == 0.0


# ---- tapegrad.scipy: tails and NaN ---------------------------------------------------------------
@needs_scipy
def test_norm_logcdf_is_accurate_in_both_tails_with_finite_second_derivatives():
    st = pytest.importorskip("scipy.stats")
    from tapegrad.scipy import stats

    z = np.array([-45.0, -37.0, -30.0, -26.5, -20.5, -19.5, -5.0, -1e-3, 0.0, 1e-3, 4.9, 10.0])
    np.testing.assert_allclose(
        stats.norm.logcdf(tg.tensor(z)).numpy(), st.norm.logcdf(z), rtol=1e-13
    )
    assert stats.norm.logcdf(tg.tensor(10.0)).item() == pytest.approx(-7.61985302416047e-24)
    lam = np.exp(st.norm.logpdf(z) - st.norm.logcdf(z))  # d/dz log Phi
    g = tg.grad(lambda v: np.sum(stats.norm.logcdf(v)))(z)
    np.testing.assert_allclose(g, lam, rtol=1e-12)
    h = tg.hessian(lambda v: np.sum(stats.norm.logcdf(v)))(z)
    assert np.all(np.isfinite(h)) and np.all(h[~np.eye(z.size, dtype=bool)] == 0.0)
    np.testing.assert_allclose(np.diag(h), -lam * (z + lam), rtol=1e-8, atol=1e-300)  # d2


@needs_scipy
def test_nan_inputs_give_nan():
    pytest.importorskip("scipy")
    from tapegrad.scipy import stats

    nan = tg.tensor(np.nan)
    assert np.isnan(stats.norm.logcdf(nan).item()) and np.isnan(stats.norm.logsf(nan).item())
    for dist, args in [("gamma", (2.0,)), ("beta", (2.0, 3.0)), ("expon", ()), ("chi2", (3.0,))]:
        assert np.isnan(getattr(stats, dist).logpdf(nan, *args).item()), dist


@needs_scipy
def test_special_function_edges_match_scipy():
    ss = pytest.importorskip("scipy.special")
    from tapegrad.scipy import stats

    x = np.array([0.0, -1.0, -2.5, np.inf, -np.inf, 1.0])
    np.testing.assert_allclose(tsp.rgamma(tg.tensor(x)).numpy(), ss.rgamma(x), rtol=1e-14)
    assert np.isnan(tsp.polygamma(1.5, tg.tensor(2.0)).item())  # SciPy: a non-whole order
    got = tsp.polygamma(np.array([1.0, 1.5, -1.0]), tg.tensor(2.0)).numpy()
    np.testing.assert_array_equal(np.isnan(got), [False, True, True])
    assert got[0] == pytest.approx(ss.polygamma(1, 2.0), rel=1e-14)
    v, g = tg.value_and_grad(lambda z: stats.t.logpdf(z, np.inf))(0.3)  # the normal limit
    assert v == pytest.approx(-0.5 * 0.09 - 0.5 * np.log(2 * np.pi), rel=1e-15)
    assert g == pytest.approx(-0.3, rel=1e-15)
    assert np.isnan(tg.gamma(tg.tensor(-np.inf)).item())  # as SciPy, not an OverflowError


def test_piecewise_partials_select_at_infinite_adjoints():
    # d/dx [clip(x) x] = clip'(x) x + clip(x): at +-inf clip' is 0 and the adjoint x infinite;
    # the partial selects (JAX's select, PyTorch's mask) instead of giving 0 * inf = NaN
    for f, want in (
        (lambda x: tg.clip(x, -0.5, 0.5) * x, {np.inf: 0.5, -np.inf: -0.5}),
        (lambda x: tg.relu(x) * x, {np.inf: np.inf, -np.inf: 0.0}),
    ):
        for x, w in want.items():
            assert tg.grad(f)(x) == w
            assert tg.jvp(f, (x,), (1.0,))[1] == w
            assert tg.grad(tg.grad(f))(x) == tg.hessian(f)(x)
    xs = np.array([np.inf, -np.inf, 0.2])
    with np.errstate(over="ignore"):
        g = tg.grad(lambda v: np.sum(np.maximum(v, 0.0) * 1e308 * 10.0))(xs)  # adjoint inf
    assert g.tolist() == [np.inf, 0.0, np.inf]


@pytest.mark.parametrize("ddof", [0, 1])
def test_std_of_a_constant_lane_has_gradient_zero(ddof):
    """std is 0 on a constant lane, where its least subgradient is 0 (as abs'(0) = 0, and
    PyTorch's): sqrt's infinite slope times the variance's zero slope gave NaN, which poisons
    the whole backward (the other lane's gradient too).  The other lane is exact; the second
    order stays finite."""
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])

    def f(a):
        return np.std(a, axis=1, ddof=ddof).sum()

    g = tg.grad(f)(x)
    row = x[1]
    s = np.std(row, ddof=ddof)
    np.testing.assert_array_equal(g[0], 0.0)
    np.testing.assert_allclose(g[1], (row - row.mean()) / ((row.size - ddof) * s), rtol=1e-13)
    assert np.isfinite(tg.hessian(f)(x)).all()
    t = tg.tensor(x, requires_grad=True)
    t.std(1).sum().backward()  # PyTorch's std (ddof 1)
    np.testing.assert_array_equal(t.grad.numpy()[0], 0.0)
    assert np.isnan(tg.grad(f)(np.array([[np.nan, 1.0, 2.0], [1.0, 2.0, 4.0]]))[0]).all()


def test_var_without_degrees_of_freedom_is_inf_as_numpy():
    """ddof >= n: NumPy divides by max(n - ddof, 0) = 0 (inf, or NaN for 0 / 0)."""
    x = np.array([[1.0, 2.0], [3.0, 3.0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.var(x, axis=1, ddof=2)
        got = tg.value_and_grad(lambda a: np.var(a, axis=1, ddof=2).sum())(x)[0]
    assert np.isinf(want[0]) and np.isnan(want[1])
    assert np.isnan(got)  # inf + nan
    got0 = tg.value_and_grad(lambda a: np.var(a, axis=1, ddof=2)[0])(x)[0]
    assert got0 == np.inf


_SIGNED = [-0.0, 0.0, 0.5, -0.5, 0.75, -0.75, 3.0, -3.0, 1e300, -1e300, 1e-300, -1e-320]
_SIGNED += [np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("b", _SIGNED)
def test_floor_divide_and_divmod_as_numpy_with_the_sign_of_a_zero(b):
    """x // y and divmod as NumPy's, the sign of a zero quotient included (the copysign of 0
    and x / y: -0.5 // -0.75 is +0.0, -0.0 // 3 is -0.0), by 0 and by +-inf; in a trace and
    through np.floor_divide on a traced value too (whose replay divides by a subnormal y:
    its reciprocal overflows)."""
    a = np.array(_SIGNED)
    with np.errstate(all="ignore"):
        want_q, want_r = np.divmod(a, b)
        results = [
            (tg.tensor(a) // b).numpy(),
            tg.floor_divide(tg.tensor(a), tg.tensor(b)).numpy(),
            tg.trace(lambda x: np.floor_divide(x, b), a)(a),
        ]
        quotient, remainder = divmod(tg.tensor(a), b)
    for got in [*results, quotient.numpy()]:
        np.testing.assert_allclose(got, want_q, rtol=4e-16, atol=0)  # a replay: a few ulp
        numbers = ~np.isnan(want_q)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want_q[numbers]))
    np.testing.assert_array_equal(remainder.numpy(), want_r)
