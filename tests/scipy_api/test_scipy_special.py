"""tapegrad.scipy.special: SciPy's values, derivatives (first, second, forward mode) against
central differences of SciPy's own functions, plain arrays in -> SciPy's result out, traced
replay of the native ops, and the refusals."""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
import tapegrad.scipy.special as tsp  # noqa: E402

EPS = 1e-6
X_POS = np.array([0.35, 0.9, 2.7, 5.3, 11.5])  # away from the roots of gammaln, digamma
X_ANY = np.array([-1.3, -0.4, 0.25, 1.1, 2.2])
X_UNIT = np.array([-0.93, -0.4, 0.05, 0.6, 0.97])
X_TWO = np.array([0.03, 0.6, 1.0, 1.45, 1.98])

# name -> (tapegrad function of x, SciPy function of x, points)
UNARY = {
    "gamma": (tsp.gamma, sp.gamma, np.array([-2.5, -0.7, 0.35, 2.7, 11.5])),
    "gammaln": (tsp.gammaln, sp.gammaln, np.array([-2.5, -0.7, 0.35, 2.7, 11.5])),
    "digamma": (tsp.digamma, sp.digamma, np.array([-2.3, -0.3, 0.35, 2.7, 30.0])),
    "psi": (tsp.psi, sp.psi, X_POS),
    "polygamma1": (
        lambda x: tsp.polygamma(1, x),
        lambda x: sp.polygamma(1, x),
        np.array([-1.5, 0.35, 2.7, 50.0]),
    ),
    "polygamma3": (lambda x: tsp.polygamma(3, x), lambda x: sp.polygamma(3, x), X_POS),
    "erf": (tsp.erf, sp.erf, X_ANY),
    "erfc": (tsp.erfc, sp.erfc, X_ANY),
    "erfinv": (tsp.erfinv, sp.erfinv, X_UNIT),
    "erfcinv": (tsp.erfcinv, sp.erfcinv, X_TWO),
    "expit": (tsp.expit, sp.expit, X_ANY),
    "logit": (tsp.logit, sp.logit, np.array([0.02, 0.3, 0.5, 0.8, 0.99])),
    "rgamma": (tsp.rgamma, sp.rgamma, np.array([-2.5, -0.7, 0.35, 2.7, 7.5])),
    "multigammaln": (
        lambda x: tsp.multigammaln(x, 3),
        lambda x: sp.multigammaln(x, 3),
        np.array([1.2, 2.7, 6.0]),
    ),
    "j0": (tsp.j0, sp.j0, X_POS),
    "j1": (tsp.j1, sp.j1, X_POS),
    "jn": (lambda x: tsp.jn(3, x), lambda x: sp.jn(3, x), X_POS),
    "jv": (lambda x: tsp.jv(1.5, x), lambda x: sp.jv(1.5, x), X_POS),
    "y0": (tsp.y0, sp.y0, X_POS),
    "y1": (tsp.y1, sp.y1, X_POS),
    "yn": (lambda x: tsp.yn(2, x), lambda x: sp.yn(2, x), X_POS),
    "i0": (tsp.i0, sp.i0, X_ANY),
    "i1": (tsp.i1, sp.i1, X_ANY),
    "iv": (lambda x: tsp.iv(2.5, x), lambda x: sp.iv(2.5, x), X_POS),
    "ive": (lambda x: tsp.ive(1.0, x), lambda x: sp.ive(1.0, x), X_ANY),
    "betainc": (
        lambda x: tsp.betainc(2.5, 1.5, x),
        lambda x: sp.betainc(2.5, 1.5, x),
        np.array([0.05, 0.3, 0.7, 0.95]),
    ),
    "gammainc": (lambda x: tsp.gammainc(2.5, x), lambda x: sp.gammainc(2.5, x), X_POS),
    "gammaincc": (lambda x: tsp.gammaincc(0.7, x), lambda x: sp.gammaincc(0.7, x), X_POS),
    "xlogy_y": (
        lambda y: tsp.xlogy(np.array([0.0, 1.5, -2.0]), y),
        lambda y: sp.xlogy(np.array([0.0, 1.5, -2.0]), y),
        np.array([0.7, 2.0, 3.0]),
    ),
    "xlog1py_x": (lambda x: tsp.xlog1py(x, 0.5), lambda x: sp.xlog1py(x, 0.5), X_ANY),
    "beta_a": (lambda a: tsp.beta(a, 2.5), lambda a: sp.beta(a, 2.5), np.array([0.4, 1.3, 4.2])),
    "betaln_b": (lambda b: tsp.betaln(1.5, b), lambda b: sp.betaln(1.5, b), X_POS),
}
NATIVE = [
    "gamma",
    "gammaln",
    "digamma",
    "polygamma1",
    "erf",
    "erfc",
    "erfinv",
    "erfcinv",
    "expit",
    "logit",
    "rgamma",
    "xlogy_y",
    "beta_a",
    "betaln_b",
]


def _grad(f):
    return tg.grad(lambda x: tnp.sum(f(x)))


def _fd(fn, x):
    return (fn(x + EPS) - fn(x - EPS)) / (2 * EPS)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_and_first_derivative(name):
    f, ref, x = UNARY[name]
    out = f(tg.tensor(x))
    assert isinstance(out, tg.Tensor)
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(_grad(f)(x), _fd(ref, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_second_derivative_and_forward_mode(name):
    f, _, x = UNARY[name]
    first = _grad(f)
    second = tg.grad(lambda x: tnp.sum(first(x)))(x)
    np.testing.assert_allclose(second, _fd(first, x), rtol=1e-5, atol=1e-7)
    _, tangent = tg.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, first(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", NATIVE)
def test_native_ops_replay_in_a_trace(name):
    f, ref, x = UNARY[name]
    tr = tg.trace(lambda x: tnp.sum(f(x) * x), x)
    x2 = x * 0.97
    np.testing.assert_allclose(tr(x2), np.sum(ref(x2) * x2), rtol=1e-12)
    np.testing.assert_allclose(tr.grad(x2), tg.grad(lambda x: tnp.sum(f(x) * x))(x2), rtol=1e-12)


def test_third_order_of_a_native_chain():
    d3 = tg.grad(tg.grad(tg.grad(tsp.gammaln)))
    assert d3(2.5) == pytest.approx(sp.polygamma(2, 2.5), rel=1e-12)


def test_hessian_through_a_python_side_op():
    h = tg.hessian(lambda x: tnp.sum(tsp.j0(x) * x))(np.array([0.7, 1.9]))
    # d2/dx2 (x j0) = 2 j0' + x j0'' = -2 j1 - x (j0 - j1 / x)
    x = np.array([0.7, 1.9])
    np.testing.assert_allclose(
        np.diag(h), -2 * sp.j1(x) - x * (sp.j0(x) - sp.j1(x) / x), rtol=1e-10
    )
    assert h[0, 1] == 0.0


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_xlogy_in_both_arguments():
    x, y = np.array([0.0, 1.5, 2.0]), np.array([0.0, 2.0, 0.5])
    gx, gy = tg.grad(lambda x, y: tnp.sum(tsp.xlogy(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [-np.inf, np.log(2.0), np.log(0.5)])  # log y, also at 0
    np.testing.assert_allclose(gy, [0.0, 0.75, 4.0])  # x / y, 0 at x = 0
    assert tsp.xlogy(tg.tensor(0.0, requires_grad=True), tg.tensor(0.0)).item() == 0.0


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(axis=1),
        dict(axis=0, keepdims=True),
        dict(b=np.array([1.0, 0.5, 2.0])),
        dict(axis=1, b=np.array([1.0, -0.5, 2.0]), return_sign=True),
    ],
)
def test_logsumexp(kw):
    a = np.array([[0.3, -1.2, 2.0], [800.0, 799.0, -np.inf]])
    got = tsp.logsumexp(tg.tensor(a), **kw)
    want = sp.logsumexp(a, **kw)
    if kw.get("return_sign"):
        np.testing.assert_array_equal(got[1], want[1])
        got, want = got[0], want[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    fa = a[:1]
    g = tg.grad(
        lambda a: tnp.sum(
            tsp.logsumexp(a, **kw)[0] if kw.get("return_sign") else tsp.logsumexp(a, **kw)
        )
    )(fa)
    ref = lambda a: np.sum(  # noqa: E731
        sp.logsumexp(a, **kw)[0] if kw.get("return_sign") else sp.logsumexp(a, **kw)
    )
    fd = [
        (ref(fa + EPS * e.reshape(fa.shape)) - ref(fa - EPS * e.reshape(fa.shape))) / (2 * EPS)
        for e in np.eye(fa.size)
    ]
    np.testing.assert_allclose(g.ravel(), fd, rtol=1e-6)


def test_logsumexp_gradient_in_b_and_softmax():
    a, b = np.array([0.1, 0.7, -0.4]), np.array([1.0, 2.0, 0.5])
    gb = tg.grad(lambda b: tsp.logsumexp(a, b=b))(b)
    np.testing.assert_allclose(gb, np.exp(a) / np.sum(b * np.exp(a)), rtol=1e-13)
    m = np.array([[0.1, 0.7], [-0.4, 2.0]])
    np.testing.assert_allclose(tsp.softmax(tg.tensor(m)).numpy(), sp.softmax(m), rtol=1e-13)
    np.testing.assert_allclose(
        tsp.log_softmax(tg.tensor(m), axis=1).numpy(), sp.log_softmax(m, axis=1), rtol=1e-13
    )
    j = tg.jacobian(lambda x: tsp.softmax(x))(a)
    s = sp.softmax(a)
    np.testing.assert_allclose(j, np.diag(s) - np.outer(s, s), atol=1e-15)


def test_gammasgn_values_and_no_gradient():
    x = np.array([-2.5, -1.0, -0.5, -0.0, 0.0, 1.5, -200.5])
    np.testing.assert_array_equal(tsp.gammasgn(tg.tensor(x)).numpy(), sp.gammasgn(x))
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(tsp.gammasgn(x)))(x[[0, 2, 5]]), 0)


def test_plain_arrays_return_scipys_result():
    x = np.array([0.2, 0.5, 0.9])
    for name in (
        "gamma",
        "gammaln",
        "digamma",
        "erf",
        "erfinv",
        "expit",
        "logit",
        "rgamma",
        "gammasgn",
        "j0",
        "y1",
        "i0",
        "softmax",
        "log_softmax",
        "logsumexp",
    ):
        got = getattr(tsp, name)(x)
        assert not isinstance(got, tg.Tensor)
        np.testing.assert_array_equal(got, getattr(sp, name)(x))
    assert tsp.logsumexp(x, b=x, return_sign=True)[1] == sp.logsumexp(x, b=x, return_sign=True)[1]
    for got, want in (
        (tsp.polygamma(2, x), sp.polygamma(2, x)),
        (tsp.jv(0.5, x), sp.jv(0.5, x)),
        (tsp.betainc(1.5, 2.0, x), sp.betainc(1.5, 2.0, x)),
        (tsp.gammaincc(1.5, x), sp.gammaincc(1.5, x)),
        (tsp.xlogy(x, x), sp.xlogy(x, x)),
        (tsp.beta(x, x), sp.beta(x, x)),
        (tsp.multigammaln(3.0, 2), sp.multigammaln(3.0, 2)),
    ):
        assert not isinstance(got, tg.Tensor)
        np.testing.assert_array_equal(got, want)


def test_polygamma_orders_per_element():
    x = np.array([0.5, 1.5, 2.5])
    n = np.array([0, 1, 3])
    np.testing.assert_allclose(
        tsp.polygamma(n, tg.tensor(x)).numpy(), sp.polygamma(n, x), rtol=1e-12
    )
    np.testing.assert_allclose(
        tg.grad(lambda x: tnp.sum(tsp.polygamma(n, x)))(x), sp.polygamma(n + 1, x), rtol=1e-12
    )


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda a: tsp.betainc(a, 2.0, 0.3), "in a"),
        (lambda b: tsp.betainc(2.0, b, 0.3), "in b"),
        (lambda a: tg.grad(lambda b: tsp.gammainc(b, 0.3))(a), "second order in a"),
        (lambda v: tsp.jv(v, 1.3), "the order v"),
        (lambda v: tsp.iv(v, 1.3), "the order v"),
        (lambda n: tsp.polygamma(n, 1.3), "in n"),
    ],
)
def test_undifferentiable_arguments_raise(call, arg):
    with pytest.raises(NotImplementedError, match=arg):
        tg.grad(call)(1.0)


def test_second_order_in_the_gammainc_shape_raises_in_forward_mode_too():
    # the forward-mode rule of dP/da took one tangent too few: a TypeError about its
    # arguments instead of the refusal
    first = tg.grad(lambda a: tsp.gammainc(a, 2.0))
    with pytest.raises(NotImplementedError, match="second order in a"):
        tg.jvp(first, (1.5,), (1.0,))
    with pytest.raises(NotImplementedError, match="second order in a"):
        tg.jvp(lambda a: tg.jvp(lambda b: tsp.gammaincc(b, 2.0), (a,), (1.0,))[1], (1.5,), (1.0,))


def test_scipy_on_a_tensor_points_here():
    with pytest.raises(TypeError, match="tapegrad.scipy.special.gammaln"):
        sp.gammaln(tg.tensor([1.5], requires_grad=True))
    with pytest.raises(TypeError, match="tapegrad.scipy.special"):
        tg.grad(lambda x: sp.logsumexp(x))(np.ones(2))
    # a SciPy ufunc tapegrad lacks: the hint names what computes it, not a missing name
    with pytest.raises(TypeError, match=r"use tapegrad\.scipy\.stats\.norm\.logcdf"):
        sp.log_ndtr(tg.tensor([1.5], requires_grad=True))
    with pytest.raises(TypeError, match="if tapegrad has it: docs/COVERAGE.md lists"):
        sp.erfcx(tg.tensor([1.5], requires_grad=True))


@pytest.mark.parametrize("name", ["j0", "iv", "betainc", "gammaincc", "xlog1py_x"])
def test_gradient_of_a_jvp_through_a_python_side_op(name):
    # nested forward mode: the jvp of a custom op is recorded and differentiated again
    f, _, x = UNARY[name]
    first = _grad(f)
    v = np.linspace(0.5, 1.5, x.size)
    g = tg.grad(lambda x: tnp.sum(tg.jvp(f, (x,), (v,))[1]))(x)
    np.testing.assert_allclose(g, _fd(first, x) * v, rtol=1e-5, atol=1e-8)


EDGES = {
    "gamma": [-1.0, 0.0, -0.0, 171.7, -180.5, -200.5, np.inf, np.nan],
    "gammaln": [-1.0, 0.0, -np.inf, np.inf, 1e307, np.nan],
    "digamma": [0.0, -0.0, -1.0, np.inf, np.nan],
    "polygamma1": [0.0, -1.0, np.inf],
    "polygamma3": [0.0, -2.0, np.inf],
    "erfinv": [-1.0, 1.0, 1.5, 0.0, -0.0, 1 - 1e-16],
    "erfcinv": [0.0, 2.0, -1.0, 1e-310, 1.0],
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(EDGES))
def test_poles_and_infinities_as_scipy_eager_and_compiled(name):
    f, ref, _ = UNARY[name]
    x = np.array(EDGES[name])
    want = ref(x)
    eager = f(tg.tensor(x)).numpy()
    if name == "gamma":  # the sign of Gamma in its underflowed zeros
        np.testing.assert_array_equal(np.signbit(eager), np.signbit(want))
    np.testing.assert_allclose(eager, want, rtol=1e-12)
    tr = tg.trace(lambda x: f(x) * 1.0, x)  # replayed by the compiled forward sweep
    np.testing.assert_allclose(np.asarray(tr(x)), want, rtol=1e-12)


def test_gammainc_derivative_in_the_shape_matches_mpmath():
    """dP(a, x)/da by a series (x <= a + 1) or the tail's integral (above), against mpmath's
    numerical derivative at 80 digits; Q = 1 - P has the opposite derivative; the mixed
    second derivative d2/da dx is the a-derivative of the density."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 80
    worst = 0.0
    for a in (0.1, 0.5, 1.0, 2.5, 7.0, 20.0, 50.0):
        for x in (1e-3, 0.05, 0.5, 1.0, 3.0, 10.0, 30.0, 100.0):
            want = float(mp.diff(lambda s, x=x: mp.gammainc(s, 0, x, regularized=True), a))
            got = tg.grad(lambda s, x=x: tsp.gammainc(s, x))(a)
            worst = max(worst, abs(got - want) / abs(want))
            upper = tg.grad(lambda s, x=x: tsp.gammaincc(s, x))(a)
            assert upper == pytest.approx(-got, rel=1e-12)
    assert worst < 1e-10
    a, x = 2.5, 1.7
    mixed = tg.grad(lambda s: tg.grad(lambda y: tsp.gammainc(s, y))(x))(a)
    want = float(mp.diff(lambda s: mp.diff(lambda y: mp.gammainc(s, 0, y, regularized=True), x), a))
    assert mixed == pytest.approx(want, rel=1e-10)
    g = tg.grad(lambda s, y: np.sum(tsp.gammainc(s, y)), argnums=(0, 1))(np.array([1.5, 4.0]), 2.0)
    assert g[0] == pytest.approx(
        [tg.grad(lambda s: tsp.gammainc(s, 2.0))(1.5), tg.grad(lambda s: tsp.gammainc(s, 2.0))(4.0)]
    )


def test_betaln_and_beta_with_one_large_argument():
    # B(a, 1) = 1 / a and B(a, 2) = 1 / (a (a + 1)): gammaln(a) - gammaln(a + b) at a = 1e15
    # cancels every digit when taken as a difference (the value came out as -64, the
    # derivatives as 0)
    a = np.array([1e15, 1e8, 37.0])
    for b, log_b, d_a, d2_a in (
        (1.0, -np.log(a), -1 / a, 1 / a**2),
        (2.0, -np.log(a) - np.log1p(a), -1 / a - 1 / (a + 1), 1 / a**2 + 1 / (a + 1) ** 2),
    ):
        np.testing.assert_allclose(tsp.betaln(tg.tensor(a), b).numpy(), log_b, rtol=1e-14)
        np.testing.assert_allclose(tsp.betaln(tg.tensor(a), b).numpy(), sp.betaln(a, b), rtol=1e-14)
        first = _grad(lambda a, b=b: tsp.betaln(a, b))
        np.testing.assert_allclose(first(a), d_a, rtol=1e-13)
        np.testing.assert_allclose(tg.grad(lambda a, f=first: tnp.sum(f(a)))(a), d2_a, rtol=1e-12)
        np.testing.assert_allclose(  # in the small argument: psi(b) - psi(a + b), symmetric
            tg.grad(lambda b, a=a: tnp.sum(tsp.betaln(b, a)))(np.full(3, b)),
            sp.digamma(b) - sp.digamma(a + b),
            rtol=1e-13,
        )
        np.testing.assert_allclose(tsp.beta(tg.tensor(a), b).numpy(), np.exp(log_b), rtol=1e-13)


@pytest.mark.parametrize("x", [100.0, 150.0, 180.0, -150.5])
def test_rgamma_derivatives_far_from_the_origin(x):
    # d/dx (1 / Gamma) = -psi / Gamma and d2 = (psi^2 - psi') / Gamma: through 1 / Gamma the
    # powers of Gamma overflowed (0 at x = 150, NaN from 172, wrong at 100)
    r, psi = sp.rgamma(x), sp.digamma(x)
    first = tg.grad(tsp.rgamma)
    assert float(tsp.rgamma(tg.tensor(x)).data) == pytest.approx(r, rel=1e-12, abs=0.0)
    assert first(x) == pytest.approx(-psi * r, rel=1e-12, abs=0.0)
    assert tg.grad(first)(x) == pytest.approx((psi**2 - sp.polygamma(1, x)) * r, rel=1e-12, abs=0)


def test_xlog1py_of_a_tiny_y():
    # x log1p(y), not x log(1 + y): 1 + 1e-20 rounds to 1
    assert float(tsp.xlog1py(tg.tensor(2.0), 1e-20).data) == sp.xlog1py(2.0, 1e-20)
    assert float(tsp.xlog1py(2.0, tg.tensor(1e-20)).data) == sp.xlog1py(2.0, 1e-20)
    assert tg.grad(lambda x: tsp.xlog1py(x, 1e-20))(2.0) == 1e-20
    assert tg.jvp(lambda x: tsp.xlog1py(x, 1e-20), (2.0,), (1.0,))[1] == 1e-20


@pytest.mark.parametrize("x", [150.0, 1e4, 1e6])
def test_ive_derivatives_at_large_x(x):
    # ive_{1/2}(x) = (1 - exp(-2x)) / sqrt(2 pi x): its derivatives are those of
    # x^(-1/2) / sqrt(2 pi).  The recurrence (ive_{v-1} + ive_{v+1}) / 2 - ive_v subtracts
    # numbers equal to 1/x of themselves at each order: the third derivative at 1e6 had the
    # wrong sign and 250 times the size
    c = 1 / np.sqrt(2 * np.pi)
    want = [-0.5 * c * x**-1.5, 0.75 * c * x**-2.5, -1.875 * c * x**-3.5]
    f = lambda z: tsp.ive(0.5, z)  # noqa: E731
    for n in range(3):
        f = tg.grad(f)
        assert f(x) == pytest.approx(want[n], rel=1e-12, abs=0)
    assert tg.jvp(lambda z: tsp.ive(0.5, z), (x,), (1.0,))[1] == pytest.approx(
        want[0], rel=1e-12, abs=0
    )


def test_ive_third_derivative_at_large_x_matches_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    d3 = tg.grad(tg.grad(tg.grad(lambda z: tsp.ive(1.0, z))))
    for x in (1e5, -1e6):  # ive_1(-x) = -ive_1(x)
        want = float(mp.diff(lambda t: mp.besseli(1, t) * mp.exp(-abs(t)), x, 3))
        assert d3(x) == pytest.approx(want, rel=1e-9, abs=0)


@pytest.mark.parametrize("name, v", [("i0e", 0), ("i1e", 1)])
def test_i0e_i1e_are_ive_of_order_0_and_1_under_scipys_names(name, v):
    """SciPy's i0e / i1e (PyTorch's torch.special.i0e / i1e): values as SciPy, every
    derivative as ive(v, x)'s, which the Bessel tests check."""
    f = getattr(tsp, name)
    x = np.array([-30.0, -3.0, -0.5, 0.7, 5.0, 150.0, 1e6])
    np.testing.assert_array_equal(f(x), getattr(sp, name)(x))  # plain arrays: SciPy's own
    np.testing.assert_allclose(f(tg.tensor(x)).numpy(), getattr(sp, name)(x), rtol=1e-15)
    for order in (tg.grad, lambda g: tg.grad(tg.grad(g))):
        got = [order(f)(a) for a in x]
        want = [order(lambda z: tsp.ive(v, z))(a) for a in x]
        np.testing.assert_array_equal(got, want)
    h = 1e-6
    fd = (getattr(sp, name)(x[:5] + h) - getattr(sp, name)(x[:5] - h)) / (2 * h)
    np.testing.assert_allclose(tg.grad(lambda a: np.sum(f(a)))(x[:5]), fd, rtol=1e-7)
