"""tapegrad.scipy.stats: SciPy's values, gradients in x, loc, scale and shape parameters
against central differences of SciPy's own methods, second order and forward mode, plain
arrays in -> SciPy's result out, supports, traced replay, and the refusals."""

import numpy as np
import pytest

st = pytest.importorskip("scipy.stats")

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
from tapegrad.scipy import stats as ts  # noqa: E402

EPS = 1e-6
X = np.array([0.3, 1.2, 2.5])
# name -> (points x, parameters after x; each differentiable in logpdf)
CONTINUOUS = {
    "norm": (np.array([-1.7, 0.3, 2.5]), (0.2, 1.3)),
    "t": (np.array([-1.7, 0.3, 2.5]), (3.5, 0.1, 1.2)),
    "gamma": (X, (2.5, 0.1, 1.5)),
    "chi2": (X, (3.0, 0.0, 1.2)),
    "beta": (np.array([0.1, 0.45, 0.8]), (2.0, 3.0, 0.0, 1.1)),
    "expon": (X, (0.1, 2.0)),
    "laplace": (np.array([-1.7, 0.3, 2.5]), (0.5, 1.5)),
}
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
CASES = [(d, m) for d in CONTINUOUS for m in METHODS]


def _fd(fn, x):
    x = np.asarray(x, dtype=float)
    return np.array(
        [
            (fn(x + EPS * e) - fn(x - EPS * e)) / (2 * EPS)
            for e in np.eye(x.size).reshape((x.size,) + x.shape)
        ]
    )


@pytest.mark.parametrize("dist, method", CASES)
def test_values_and_gradient_in_x(dist, method):
    x, params = CONTINUOUS[dist]
    ours, theirs = getattr(getattr(ts, dist), method), getattr(getattr(st, dist), method)
    out = ours(tg.tensor(x), *params)
    np.testing.assert_allclose(out.numpy(), theirs(x, *params), rtol=1e-12)
    g = tg.grad(lambda x: tnp.sum(ours(x, *params)))(x)
    np.testing.assert_allclose(g, _fd(lambda x: np.sum(theirs(x, *params)), x), rtol=1e-6)


@pytest.mark.parametrize("dist, method", CASES)
def test_gradient_in_every_parameter(dist, method):
    x, params = CONTINUOUS[dist]
    ours, theirs = getattr(getattr(ts, dist), method), getattr(getattr(st, dist), method)
    n_shapes = len(params) - 2
    for k in range(len(params)):
        if method not in ("logpdf", "pdf") and k < n_shapes:
            continue  # cdfs in shape parameters: refused (test below)

        def ref(p, k=k):
            return np.sum(theirs(x, *params[:k], p, *params[k + 1 :]))

        g = tg.grad(lambda p, k=k: tnp.sum(ours(x, *params[:k], p, *params[k + 1 :])))(params[k])
        assert g == pytest.approx(float(_fd(ref, params[k])[0]), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("dist", sorted(CONTINUOUS))
def test_second_order_and_forward_mode(dist):
    x, params = CONTINUOUS[dist]
    d = getattr(ts, dist)
    for method in ("logpdf", "cdf"):
        f = getattr(d, method)
        first = tg.grad(lambda x, f=f: tnp.sum(f(x, *params)))
        h = tg.hessian(lambda x, f=f: tnp.sum(f(x, *params)))(x)
        np.testing.assert_allclose(np.diag(h), np.diag(_fd(first, x)), rtol=1e-5, atol=1e-8)
        _, tangent = tg.jvp(lambda x, f=f: f(x, *params), (x,), (np.ones_like(x),))
        np.testing.assert_allclose(tangent, first(x), rtol=1e-12)


def test_outside_the_support():
    x = np.array([-0.5, 0.5, 1.5])
    np.testing.assert_array_equal(
        ts.beta.logpdf(tg.tensor(x), 2.0, 3.0).numpy(), st.beta.logpdf(x, 2.0, 3.0)
    )
    g = tg.grad(lambda x: tnp.sum(ts.gamma.logpdf(x, 2.0)))(np.array([-1.0, 0.5]))
    np.testing.assert_allclose(g, [0.0, 1.0])  # (a - 1) / x - 1
    np.testing.assert_array_equal(ts.expon.cdf(tg.tensor([-1.0, 0.0]), 0.0).numpy(), [0.0, 0.0])
    assert np.isnan(ts.norm.cdf(tg.tensor(0.3), 0.0, -1.0).item())  # as SciPy


def test_norm_log_tails():
    z = np.array([-45.0, -38.0, -30.0, -3.0, 0.0, 4.0, 40.0])
    np.testing.assert_allclose(ts.norm.logcdf(tg.tensor(z)).numpy(), st.norm.logcdf(z), rtol=1e-12)
    np.testing.assert_allclose(ts.norm.logsf(tg.tensor(-z)).numpy(), st.norm.logsf(-z), rtol=1e-12)
    g = tg.grad(lambda z: tnp.sum(ts.norm.logcdf(z)))(z)
    np.testing.assert_allclose(g, np.exp(st.norm.logpdf(z) - st.norm.logcdf(z)), rtol=1e-9)


def test_norm_replays_in_a_trace():
    f = lambda x, m, s: tnp.sum(ts.norm.logpdf(x, m, s) + ts.norm.logcdf(x, m, s))  # noqa: E731
    x = np.array([-0.4, 0.9, 2.0])
    tr = tg.trace(f, x, 0.1, 1.3)
    x2 = x * 1.1
    np.testing.assert_allclose(tr(x2, 0.1, 1.3), f(tg.tensor(x2), 0.1, 1.3).item(), rtol=1e-12)
    np.testing.assert_allclose(tr.grad(x2, 0.1, 1.3), tg.grad(f)(x2, 0.1, 1.3), rtol=1e-12)


def test_poisson():
    k, mu = np.array([0, 1, 3, 7, -1, 2.5]), 2.3
    for m in ("logpmf", "pmf", "cdf"):
        ours, theirs = getattr(ts.poisson, m), getattr(st.poisson, m)
        np.testing.assert_allclose(ours(k, tg.tensor(mu)).numpy(), theirs(k, mu), rtol=1e-12)
        g = tg.grad(lambda mu, f=ours: tnp.sum(f(k[:4], mu)))(mu)
        assert g == pytest.approx(
            float(_fd(lambda p, f=theirs: np.sum(f(k[:4], p)), mu)[0]), rel=1e-6
        )
    d2 = tg.grad(tg.grad(lambda mu: tnp.sum(ts.poisson.cdf(k[:4], mu))))(mu)
    first = tg.grad(lambda mu: tnp.sum(ts.poisson.cdf(k[:4], mu)))
    assert d2 == pytest.approx((first(mu + EPS) - first(mu - EPS)) / (2 * EPS), rel=1e-5)
    with pytest.raises(NotImplementedError, match="in k"):
        tg.grad(lambda k: ts.poisson.logpmf(k, 2.0))(1.0)


def test_dirichlet():
    x = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
    alpha = np.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(
        ts.dirichlet.logpdf(tg.tensor(x), alpha).numpy(), st.dirichlet.logpdf(x, alpha), rtol=1e-12
    )
    np.testing.assert_allclose(
        ts.dirichlet.pdf(x[:2, 0], tg.tensor(alpha)).numpy(),
        st.dirichlet.pdf(x[:2, 0], alpha),
        rtol=1e-12,
    )
    g = tg.grad(lambda a: tnp.sum(ts.dirichlet.logpdf(x, a)))(alpha)
    np.testing.assert_allclose(
        g, _fd(lambda a: np.sum(st.dirichlet.logpdf(x, a)), alpha), rtol=1e-6
    )
    gx = tg.grad(lambda x: ts.dirichlet.logpdf(x, alpha))(x[:, 0])
    np.testing.assert_allclose(gx, (alpha - 1) / x[:, 0])
    with pytest.raises(ValueError, match="simplex"):
        ts.dirichlet.logpdf(tg.tensor([0.2, 0.2, 0.2]), alpha)


def _spd(rng, d):
    a = rng.standard_normal((d, d))
    return a @ a.T + d * np.eye(d)


def test_multivariate_normal():
    rng = np.random.default_rng(3)
    cov, mean, x = _spd(rng, 3), rng.standard_normal(3), rng.standard_normal((4, 3))
    mvn, ref = ts.multivariate_normal, st.multivariate_normal
    np.testing.assert_allclose(
        mvn.logpdf(tg.tensor(x), mean, cov).numpy(), ref.logpdf(x, mean, cov), rtol=1e-12
    )
    np.testing.assert_allclose(
        mvn.pdf(x[0], tg.tensor(mean), cov).numpy(), ref.pdf(x[0], mean, cov), rtol=1e-12
    )
    np.testing.assert_allclose(
        mvn.entropy(None, tg.tensor(cov)).numpy(), ref.entropy(None, cov), rtol=1e-12
    )
    gm = tg.grad(lambda m: tnp.sum(mvn.logpdf(x, m, cov)))(mean)
    np.testing.assert_allclose(gm, _fd(lambda m: np.sum(ref.logpdf(x, m, cov)), mean), rtol=1e-6)
    # the covariance: a symmetric derivative, so compare along symmetric directions
    gc = tg.grad(lambda c: tnp.sum(mvn.logpdf(x, mean, c)))(cov)
    np.testing.assert_allclose(gc, gc.T, rtol=1e-12)
    for i, j in ((0, 0), (0, 2), (1, 2)):
        e = np.zeros((3, 3))
        e[i, j] = e[j, i] = 1.0
        fd = (
            np.sum(ref.logpdf(x, mean, cov + EPS * e)) - np.sum(ref.logpdf(x, mean, cov - EPS * e))
        ) / (2 * EPS)
        assert np.sum(gc * e) == pytest.approx(fd, rel=1e-6)
    h = tg.hessian(lambda m: tnp.sum(mvn.logpdf(x, m, cov)))(mean)
    np.testing.assert_allclose(h, -4 * np.linalg.inv(cov), rtol=1e-10)
    ge = tg.grad(lambda c: mvn.entropy(None, c))(cov)
    np.testing.assert_allclose(ge, 0.5 * np.linalg.inv(cov), rtol=1e-10)
    # diagonal and scalar covariances, as SciPy
    v = np.array([0.5, 2.0, 1.5])
    np.testing.assert_allclose(
        mvn.logpdf(x, tg.tensor(mean), v).numpy(), ref.logpdf(x, mean, v), rtol=1e-12
    )
    np.testing.assert_allclose(
        mvn.logpdf(tg.tensor(x), mean, 2.0).numpy(), ref.logpdf(x, mean, 2.0), rtol=1e-12
    )
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        mvn.logpdf(tg.tensor(x), mean, -np.eye(3))


def test_plain_arrays_return_scipys_result():
    for dist, (x, params) in CONTINUOUS.items():
        for m in METHODS:
            got = getattr(getattr(ts, dist), m)(x, *params)
            assert not isinstance(got, tg.Tensor)
            np.testing.assert_array_equal(got, getattr(getattr(st, dist), m)(x, *params))
    assert np.array_equal(ts.poisson.pmf([1, 2], 2.0), st.poisson.pmf([1, 2], 2.0))
    assert ts.dirichlet.logpdf([0.2, 0.8], [1.0, 2.0]) == st.dirichlet.logpdf(
        [0.2, 0.8], [1.0, 2.0]
    )
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    assert ts.multivariate_normal.logpdf([0.1, 0.2], None, cov) == st.multivariate_normal.logpdf(
        [0.1, 0.2], None, cov
    )


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda p: ts.t.cdf(0.3, p), "in df"),
        (lambda p: ts.beta.logcdf(0.3, 2.0, p), "in b"),
        (lambda p: tg.grad(lambda q: ts.gamma.sf(0.3, q))(p), "second order in a"),
    ],
)
def test_cdf_in_a_shape_parameter_is_refused(call, arg):
    with pytest.raises(NotImplementedError, match=arg):
        tg.grad(call)(2.0)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda p, x: ts.gamma.cdf(x, p, scale=1.5), lambda p, x: st.gamma.cdf(x, p, scale=1.5)),
        (lambda p, x: ts.gamma.sf(x, p), lambda p, x: st.gamma.sf(x, p)),
        (lambda p, x: ts.gamma.logcdf(x, p), lambda p, x: st.gamma.logcdf(x, p)),
        (lambda p, x: ts.gamma.logsf(x, p), lambda p, x: st.gamma.logsf(x, p)),
        (lambda p, x: ts.chi2.cdf(x, p), lambda p, x: st.chi2.cdf(x, p)),
        (lambda p, x: ts.chi2.logsf(x, p, loc=0.2), lambda p, x: st.chi2.logsf(x, p, loc=0.2)),
    ],
)
def test_gamma_and_chi2_cdfs_are_differentiable_in_their_shape(ours, theirs):
    for p, x in ((2.5, 1.7), (0.7, 0.2), (4.0, 9.0), (3.0, -1.0)):
        v = ours(tg.tensor(p, requires_grad=True), x)
        assert float(v.data) == pytest.approx(theirs(p, x), rel=1e-13, abs=1e-300)
        h = 1e-6
        fd = (theirs(p + h, x) - theirs(p - h, x)) / (2 * h)
        if not np.isfinite(fd):  # log of 0 below the support: -inf at every p
            fd = 0.0
        f = lambda q, x=x: ours(q, x)  # noqa: E731
        assert tg.grad(f)(p) == pytest.approx(fd, rel=1e-6, abs=1e-9)
        assert tg.jvp(f, (p,), (1.0,))[1] == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    "x, mean, cov",
    [
        ([0.1, 0.2, 0.3], 0.0, 1.5),  # points of dimension 1, as SciPy reads them
        (0.3, None, 2.0),
        ([0.1, 0.2], None, np.eye(2)),
        (np.ones((4, 2)), np.zeros(2), [1.0, 2.0]),
    ],
)
def test_multivariate_normal_shapes_as_scipy(x, mean, cov):
    x = np.asarray(x, dtype=float)
    got = ts.multivariate_normal.logpdf(tg.tensor(x), mean, cov).numpy()
    want = st.multivariate_normal.logpdf(x, mean, cov)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_poisson_negative_mean_is_nan():
    with np.errstate(invalid="ignore"):
        assert np.isnan(ts.poisson.logpmf([0, 1], tg.tensor(-1.0)).numpy()).all()


def test_multivariate_normal_with_a_singular_covariance_matches_scipy():
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    mean = np.array([0.1, 0.2, 0.3])
    x = np.array([[0.5, 0.6, 1.0], [0.3, 0.4, -1.0], [0.5, 0.9, 0.0]])  # the last off support
    mvn, ours = st.multivariate_normal, ts.multivariate_normal
    np.testing.assert_allclose(
        ours.logpdf(tg.tensor(x), mean, cov, allow_singular=True).numpy(),
        mvn.logpdf(x, mean, cov, allow_singular=True),
        rtol=1e-13,
    )
    assert ours.entropy(mean, cov) == mvn.entropy(mean, cov)  # plain arrays: SciPy's
    np.testing.assert_allclose(float(ours.entropy(tg.tensor(mean), cov)), mvn.entropy(mean, cov))
    # along the support (the plane spanned by (1, 1, 0) and (0, 0, 1)) by finite differences
    g = tg.grad(lambda p: ours.logpdf(p, mean, cov, allow_singular=True))(x[0])
    for d in (np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0), np.array([0.0, 0.0, 1.0])):
        f = lambda t, d=d: mvn.logpdf(x[0] + t * d, mean, cov, allow_singular=True)  # noqa: E731
        np.testing.assert_allclose(g @ d, (f(1e-6) - f(-1e-6)) / 2e-6, rtol=1e-7)
    with pytest.raises(NotImplementedError, match="derivative in cov"):
        tg.grad(lambda c: ours.logpdf(x[0], mean, c, allow_singular=True))(cov)
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular"):
        ours.logpdf(tg.tensor(x[0]), mean, cov)


def test_t_logpdf_at_a_large_df():
    # gammaln((df + 1) / 2) - gammaln(df / 2) lost its digits as a difference: the value at
    # df = 1e12 was -0.96413 (SciPy: -0.96394), its derivative 0 at 1e12, 1.8e-15 at 1e8
    df = np.array([1e4, 1e8, 1e12])
    np.testing.assert_allclose(
        ts.t.logpdf(0.3, tg.tensor(df)).numpy(),
        st.norm.logpdf(0.3) + (0.3**4 - 0.18 - 1) / (4 * df),
        rtol=1e-8,
    )
    np.testing.assert_allclose(
        ts.t.logpdf(0.3, tg.tensor(df[1:])).numpy(), st.t.logpdf(0.3, df[1:]), rtol=1e-14
    )
    # d/ddf = -(z^4 - 2 z^2 - 1) / (4 df^2) + O(df^-3)
    g = tg.grad(lambda d: ts.t.logpdf(0.3, d))(1e8)
    assert g == pytest.approx(-(0.3**4 - 0.18 - 1) / 4e16, rel=1e-6, abs=0)


def test_gamma_log_cdfs_near_one_in_the_shape():
    # log P with P = 1 - 3.6e-215 is log1p(-Q), not log(P) = 0
    for ours, theirs, x, a in (
        (ts.gamma.logcdf, st.gamma.logcdf, 500.0, 2.0),
        (ts.gamma.logsf, st.gamma.logsf, 1e-3, 30.0),
        (ts.chi2.logcdf, st.chi2.logcdf, 500.0, 2.0),
    ):
        v = ours(x, tg.tensor(a, requires_grad=True))
        assert float(v.data) == pytest.approx(theirs(x, a), rel=1e-12, abs=0)
        assert float(v.data) < 0.0


def test_laplace_log_cdfs_in_the_far_tails():
    # SciPy's log of its cdf is -inf from z = -745 on, so the derivative
    # exp(logpdf - logcdf) was inf (and the second NaN); the closed form holds everywhere
    x = np.array([-800.0, -1.0, 0.0, 1.0, 800.0])
    lower = np.where(x < 0, x - np.log(2), np.log1p(-0.5 * np.exp(-np.abs(x))))
    np.testing.assert_allclose(ts.laplace.logcdf(tg.tensor(x)).numpy(), lower, rtol=1e-14)
    np.testing.assert_allclose(ts.laplace.logsf(tg.tensor(-x)).numpy(), lower, rtol=1e-14)
    ok = np.isfinite(st.laplace.logcdf(x))
    np.testing.assert_allclose(
        ts.laplace.logcdf(tg.tensor(x[ok])).numpy(), st.laplace.logcdf(x[ok])
    )
    g = tg.grad(lambda x: tnp.sum(ts.laplace.logcdf(x)))(x)
    np.testing.assert_allclose(
        g, np.where(x < 0, 1.0, 0.5 * np.exp(-np.abs(x)) / (1 - 0.5 * np.exp(-np.abs(x))))
    )
    h = tg.grad(lambda s: tnp.sum(ts.laplace.logsf(800.0, 0.0, s)))(2.0)
    assert h == pytest.approx(800.0 / 4.0, rel=1e-14)  # logsf = -x / s - log 2
    g2 = tg.grad(tg.grad(lambda x: ts.laplace.logcdf(x)))(-800.0)
    assert g2 == 0.0


def test_norm_logcdf_third_derivative_in_the_lower_tail():
    # the derivatives of log erfc lose about z^4 ulp at the third order: 3.7e-7 of it at
    # z = -19.5 (the asymptotic series now takes over from z = -10)
    sp = pytest.importorskip("scipy.special")
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 80
    d3 = tg.grad(tg.grad(tg.grad(lambda z: ts.norm.logcdf(z))))
    for z in (-19.5, -15.0, -12.0):
        want = float(mp.diff(lambda t: mp.log(mp.ncdf(t)), z, 3))
        assert d3(z) == pytest.approx(want, rel=1e-12, abs=0)
        assert float(ts.norm.logcdf(tg.tensor(z)).data) == pytest.approx(
            sp.log_ndtr(z), rel=1e-15, abs=0
        )


@pytest.mark.parametrize(
    "dist, shapes, x",
    [
        ("gamma", (0.0,), 2.0),
        ("gamma", (-1.5,), 2.0),
        ("chi2", (0.0,), 2.0),
        ("chi2", (-2.0,), 0.5),
        ("beta", (1.0, -1.0), 0.3),
        ("beta", (0.0, 2.0), 0.3),
        ("t", (0.0,), 1.0),
        ("t", (-3.0,), 1.0),
    ],
)
def test_invalid_shape_parameter_gives_nan_as_scipy(dist, shapes, x):
    # a shape that must be positive and is not: SciPy's NaN, not a number from the formula
    # (the gamma cdf at a = 0 was 1, the logpdfs -inf), whether the shape is a Tensor that
    # requires grad (a transform, a trace) or a plain number beside a Tensor x
    ours, ref = getattr(ts, dist), getattr(st, dist)
    methods = ["logpdf", "pdf"] + (
        ["cdf", "sf", "logcdf", "logsf"] if dist in ("gamma", "chi2") else []
    )
    for m in methods:
        assert np.isnan(getattr(ref, m)(x, *shapes))
        tensors = [tg.tensor(v, requires_grad=True) for v in shapes]
        assert np.isnan(getattr(ours, m)(tg.tensor(x, requires_grad=True), *tensors).item()), m
        if m in ("logpdf", "pdf"):
            assert np.isnan(getattr(ours, m)(tg.tensor(x, requires_grad=True), *shapes).item()), m
    # valid shapes beside them are untouched, derivative in the shape included
    good = [abs(v) + 0.5 for v in shapes]
    got, g = tg.value_and_grad(lambda s: ours.logpdf(x, *s))(good)
    assert got == pytest.approx(ref.logpdf(x, *good), rel=1e-12)
    h = 1e-6
    for k in range(len(good)):
        up, dn = list(good), list(good)
        up[k] += h
        dn[k] -= h
        fd = (ref.logpdf(x, *up) - ref.logpdf(x, *dn)) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-8)
