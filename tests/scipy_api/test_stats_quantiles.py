"""tapegrad.scipy.stats quantiles (ppf, isf) and the distributions added with them (uniform,
lognorm, cauchy, logistic, weibull_min, halfnorm, truncnorm; binom, nbinom, geom, bernoulli).

Hunted: values against SciPy (mpmath where SciPy loses digits: halfnorm's ppf of a tiny q,
truncnorm far in a tail), derivatives against torch.distributions (icdf, log_prob, cdf,
entropy, differentiated by torch.autograd, to second order), central finite differences of
SciPy's values (first and second order, in q or x, loc, scale and every shape parameter) and
the closed form d ppf / dq = 1 / pdf(ppf(q)); the tails and ends of [0, 1] (q = 0 and 1 give
the support's ends; the derivatives there are inf, never a silent number); NaN outside [0, 1];
and the refusals (a shape parameter whose cdf has no derivative here, binom's n, a count k).
"""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy")
torch = pytest.importorskip("torch")
mp = pytest.importorskip("mpmath")

import scipy.stats as st  # noqa: E402

import tapegrad as tg  # noqa: E402
from tapegrad.scipy import stats as ts  # noqa: E402

D = torch.distributions


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# every continuous distribution with a standardized example point's shape parameters
CONTINUOUS = {
    "norm": (),
    "t": (3.5,),
    "gamma": (2.5,),
    "chi2": (3.5,),
    "beta": (2.0, 3.0),
    "expon": (),
    "laplace": (),
    "uniform": (),
    "lognorm": (0.7,),
    "cauchy": (),
    "logistic": (),
    "weibull_min": (1.7,),
    "halfnorm": (),
    "truncnorm": (-1.0, 2.0),
}
NEW = ["uniform", "lognorm", "cauchy", "logistic", "weibull_min", "halfnorm", "truncnorm"]
LOC, SCALE = 0.1, 1.3
QS = np.array([0.0, 1e-300, 1e-30, 1e-8, 0.2, 0.5, 0.9, 1 - 1e-10, 1.0, -0.1, 1.2, np.nan])


def _fd(f, v, h=1e-6):
    return (f(v + h) - f(v - h)) / (2 * h)


def _fd2(f, v, h=1e-4):
    return (f(v + h) - 2 * f(v) + f(v - h)) / h**2


# ---- quantiles: values in the tails, at the ends and outside [0, 1] -----------------------------


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_quantile_values_against_scipy(name, method):
    shapes = CONTINUOUS[name]
    got = np.asarray(getattr(getattr(ts, name), method)(tg.tensor(QS), *shapes, LOC, SCALE))
    want = getattr(getattr(st, name), method)(QS, *shapes, LOC, SCALE)
    if name == "halfnorm" and method == "ppf":  # SciPy's ndtri((1 + q) / 2) loses tiny q
        want[1:4] = [LOC + SCALE * float(mp.sqrt(2) * mp.erfinv(q)) for q in QS[1:4]]
    # lognorm: exp(s ndtri(q)) carries ndtri's last bit times s |ndtri| (26 at q = 1e-300)
    np.testing.assert_allclose(got, want, rtol=1e-13 if name == "lognorm" else 4e-15)


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_quantile_derivative_in_q_is_one_over_the_density(name, method):
    """d ppf / dq = 1 / pdf(ppf(q)) (isf: -1 / pdf) at every q, inf at the ends where the
    density is 0, NaN outside [0, 1] (as the value)."""
    shapes = CONTINUOUS[name]
    dist, ref = getattr(ts, name), getattr(st, name)
    got = tg.grad(lambda q: getattr(dist, method)(q, *shapes, LOC, SCALE).sum())(QS)
    # standardized: loc + scale z would round z's digits away near the lower end
    z = getattr(ref, method)(QS, *shapes)
    if name == "truncnorm":  # (SciPy's quantile can land an ulp outside [a, b])
        z = np.clip(z, *shapes)
    want = (SCALE if method == "ppf" else -SCALE) / ref.pdf(z, *shapes)
    if name == "uniform":  # the density is 1/scale up to and at the ends
        want = np.where(np.isnan(z), np.nan, want)
    # at an infinite end the density is 0 (SciPy's gamma.pdf(inf) is NaN)
    want = np.where(np.isinf(z), np.inf if method == "ppf" else -np.inf, want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_quantile_first_and_second_derivatives_in_every_argument(name, method):
    """First and second derivatives (mixed ones included) in q, the shapes, loc and scale
    against central differences of SciPy's quantile; derivatives the library cannot take (a
    cdf with no derivative in that shape here) are refused, checked in REFUSED below."""
    dist, ref = getattr(ts, name), getattr(st, name)
    point = [0.3, *CONTINUOUS[name], LOC, SCALE]
    refused = {("t", 1), ("beta", 1), ("beta", 2)}
    # d/da of the incomplete gamma exists once: d^2/da^2 and d^2/da dq are refused
    second_refused = {("gamma", 1), ("chi2", 1)}
    for i in range(len(point)):
        if (name, i) in refused:
            continue

        def along(v, i=i, f=dist):
            p = list(point)
            p[i] = v
            return getattr(f, method)(*p)

        g = tg.grad(along)(point[i])
        np.testing.assert_allclose(g, _fd(lambda v: along(v, f=ref), point[i]), rtol=1e-6)
        for j in range(i, len(point)):
            if (name, j) in refused or ((name, j) in second_refused and i in (0, j)):
                continue

            def both(a, b, i=i, j=j, f=dist):
                p = list(point)
                p[i] = a
                p[j] = b
                return getattr(f, method)(*p)

            if j == i:  # the inner derivative at the outer point
                h = tg.grad(lambda a, along=along: tg.grad(along)(a))(point[i])
            else:
                h = tg.grad(lambda a, j=j, both=both: tg.grad(lambda b: both(a, b))(point[j]))(
                    point[i]
                )
            sv = lambda a, b, both=both: both(a, b, f=ref)  # noqa: E731
            e = 1e-4
            if j == i:
                want = _fd2(lambda v, along=along: along(v, f=ref), point[i])
            else:
                want = (
                    sv(point[i] + e, point[j] + e)
                    - sv(point[i] + e, point[j] - e)
                    - sv(point[i] - e, point[j] + e)
                    + sv(point[i] - e, point[j] - e)
                ) / (4 * e * e)
            np.testing.assert_allclose(h, want, rtol=2e-5, atol=1e-6)


def test_quantile_tangents_and_gradcheck():
    """Forward mode and tg.gradcheck through the SciPy-valued quantile (gamma's, in q and a)
    and a closed form (truncnorm's via the implicit function theorem in a and b)."""
    f = lambda q, a: ts.gamma.ppf(q, a, 0.2, 1.5)  # noqa: E731
    q0, a0 = np.array([0.05, 0.5, 0.97]), np.array([0.7, 2.5, 9.0])
    _, tan = tg.jvp(f, (q0, a0), (np.ones(3), np.ones(3)))
    want = _fd(lambda e: st.gamma.ppf(q0 + e, a0 + e, 0.2, 1.5), 0.0, 1e-7)
    np.testing.assert_allclose(tan, want, rtol=1e-6)
    q = tg.tensor([0.1, 0.6], requires_grad=True)
    ab = tg.tensor([-0.5, 1.5], requires_grad=True)
    assert tg.gradcheck(lambda q, ab: ts.truncnorm.ppf(q, ab[0], ab[1]), (q, ab))


def test_the_ends_of_the_unit_interval():
    """q = 0 and 1: the support's ends (finite for bounded supports) with the derivative
    the limit says; the scale's derivative is the (infinite) standardized quantile."""
    q = tg.tensor([0.0, 1.0], requires_grad=True)
    x = ts.norm.ppf(q, 1.0, 2.0)
    np.testing.assert_array_equal(x.detach().numpy(), [-np.inf, np.inf])
    (g,) = tg.autograd.grad(x.sum(), q)
    np.testing.assert_array_equal(g.numpy(), [np.inf, np.inf])
    for name, shapes, want in [
        ("expon", (), [1.0, np.inf]),  # pdf(0) = 1
        ("gamma", (0.5,), [0.0, np.inf]),  # pdf(0) is infinite for a < 1
        ("gamma", (3.0,), [np.inf, np.inf]),
        ("beta", (2.0, 0.5), [np.inf, 0.0]),
        ("uniform", (), [1.0, 1.0]),
        ("lognorm", (0.7,), [np.inf, np.inf]),
        ("weibull_min", (0.5,), [0.0, np.inf]),
        ("weibull_min", (1.0,), [1.0, np.inf]),
        ("weibull_min", (3.0,), [np.inf, np.inf]),
        ("halfnorm", (), [math.sqrt(math.pi / 2), np.inf]),
    ]:
        dist = getattr(ts, name)
        g = tg.grad(lambda q, d=dist, s=shapes: d.ppf(q, *s).sum())(np.array([0.0, 1.0]))
        np.testing.assert_allclose(g, want, rtol=1e-14, err_msg=name)
    # weibull's quantile is 0 at q = 0 for every c: its derivative in c there is 0, not NaN
    assert tg.grad(lambda c: ts.weibull_min.ppf(0.0, c))(1.7) == 0.0
    assert tg.grad(lambda s: ts.lognorm.ppf(0.0, s))(0.7) == 0.0


# ---- against torch.distributions ----------------------------------------------------------------


def _tt(v):
    return torch.tensor(v, dtype=torch.float64, requires_grad=True)


def _torch_grads(fn, values, order2=True):
    """torch's value, gradient and (diagonal) second derivatives of fn at ``values``."""
    args = [_tt(v) for v in values]
    out = fn(*args)
    g = torch.autograd.grad(out, args, create_graph=True, allow_unused=True)
    hess = []
    if order2:
        for a, gi in zip(args, g, strict=True):
            if gi is None or not gi.requires_grad:
                hess.append(0.0)
                continue
            (h,) = torch.autograd.grad(gi, a, allow_unused=True, retain_graph=True)
            hess.append(0.0 if h is None else h.item())
    return out.item(), [0.0 if x is None else x.item() for x in g], hess


def _tg_grads(fn, values):
    n = len(values)
    val = float(fn(*[tg.tensor(v) for v in values]))
    g = tg.grad(fn, argnums=tuple(range(n)))(*values)
    hess = [
        tg.grad(
            lambda v, i=i: tg.grad(fn, argnums=i)(*values[:i], v, *values[i + 1 :]),
        )(values[i])
        for i in range(n)
    ]
    return val, list(g), hess


TORCH = [
    # (name, tapegrad fn, torch fn, point)
    (
        "norm.ppf",
        lambda q, m, s: ts.norm.ppf(q, m, s),
        lambda q, m, s: D.Normal(m, s).icdf(q),
        (0.03, 0.4, 1.7),
    ),
    (
        "norm.isf",
        lambda q, m, s: ts.norm.isf(q, m, s),
        lambda q, m, s: D.Normal(m, s).icdf(1 - q),
        (0.2, 0.4, 1.7),
    ),
    (
        "cauchy.ppf",
        lambda q, m, s: ts.cauchy.ppf(q, m, s),
        lambda q, m, s: D.Cauchy(m, s).icdf(q),
        (0.35, -0.4, 0.8),
    ),
    (
        "cauchy.logpdf",
        lambda x, m, s: ts.cauchy.logpdf(x, m, s),
        lambda x, m, s: D.Cauchy(m, s).log_prob(x),
        (2.5, -0.4, 0.8),
    ),
    (
        "cauchy.cdf",
        lambda x, m, s: ts.cauchy.cdf(x, m, s),
        lambda x, m, s: D.Cauchy(m, s).cdf(x),
        (2.5, -0.4, 0.8),
    ),
    (
        "halfnorm.ppf",
        lambda q, s: ts.halfnorm.ppf(q, 0.0, s),
        lambda q, s: D.HalfNormal(s).icdf(q),
        (0.7, 1.4),
    ),
    (
        "halfnorm.logpdf",
        lambda x, s: ts.halfnorm.logpdf(x, 0.0, s),
        lambda x, s: D.HalfNormal(s).log_prob(x),
        (0.9, 1.4),
    ),
    (
        "halfnorm.cdf",
        lambda x, s: ts.halfnorm.cdf(x, 0.0, s),
        lambda x, s: D.HalfNormal(s).cdf(x),
        (0.9, 1.4),
    ),
    (
        "uniform.ppf",
        lambda q, lo, w: ts.uniform.ppf(q, lo, w),
        lambda q, lo, w: D.Uniform(lo, lo + w).icdf(q),
        (0.3, -1.0, 2.5),
    ),
    (
        "uniform.logpdf",
        lambda x, lo, w: ts.uniform.logpdf(x, lo, w),
        lambda x, lo, w: D.Uniform(lo, lo + w).log_prob(x),
        (0.3, -1.0, 2.5),
    ),
    (
        "uniform.cdf",
        lambda x, lo, w: ts.uniform.cdf(x, lo, w),
        lambda x, lo, w: D.Uniform(lo, lo + w).cdf(x),
        (0.3, -1.0, 2.5),
    ),
    (
        "lognorm.logpdf",
        lambda x, s, sc: ts.lognorm.logpdf(x, s, 0.0, sc),
        lambda x, s, sc: D.LogNormal(torch.log(sc), s).log_prob(x),
        (1.7, 0.6, 1.3),
    ),
    (
        "lognorm.cdf",
        lambda x, s, sc: ts.lognorm.cdf(x, s, 0.0, sc),
        lambda x, s, sc: D.LogNormal(torch.log(sc), s).cdf(x),
        (1.7, 0.6, 1.3),
    ),
    (
        "weibull_min.logpdf",
        lambda x, c, s: ts.weibull_min.logpdf(x, c, 0.0, s),
        lambda x, c, s: D.Weibull(s, c).log_prob(x),
        (1.7, 1.6, 1.3),
    ),
    (
        "weibull_min.cdf",
        lambda x, c, s: ts.weibull_min.cdf(x, c, 0.0, s),
        lambda x, c, s: D.Weibull(s, c).cdf(x),
        (1.7, 1.6, 1.3),
    ),
    (
        "weibull_min.ppf",
        lambda q, c, s: ts.weibull_min.ppf(q, c, 0.0, s),
        lambda q, c, s: D.Weibull(s, c).icdf(q),
        (0.4, 1.6, 1.3),
    ),
    (
        "binom.logpmf",
        lambda p: ts.binom.logpmf(3, 10, p),
        lambda p: D.Binomial(10, probs=p).log_prob(torch.tensor(3.0, dtype=torch.float64)),
        (0.35,),
    ),
    (
        "nbinom.logpmf",
        lambda n, p: ts.nbinom.logpmf(4, n, p),
        lambda n, p: D.NegativeBinomial(n, probs=1 - p).log_prob(
            torch.tensor(4.0, dtype=torch.float64)
        ),
        (2.5, 0.35),
    ),
    (
        "geom.logpmf",
        lambda p: ts.geom.logpmf(4, p),
        lambda p: D.Geometric(probs=p).log_prob(torch.tensor(3.0, dtype=torch.float64)),
        (0.35,),
    ),
    (
        "bernoulli.logpmf",
        lambda p: ts.bernoulli.logpmf(1, p),
        lambda p: D.Bernoulli(probs=p).log_prob(torch.tensor(1.0, dtype=torch.float64)),
        (0.35,),
    ),
]


@pytest.mark.parametrize("case", TORCH, ids=[c[0] for c in TORCH])
def test_against_torch_distributions(case):
    _, ours, theirs, point = case
    val, g, h = _tg_grads(ours, point)
    tval, tgr, th = _torch_grads(theirs, point)
    np.testing.assert_allclose(val, tval, rtol=1e-13)
    np.testing.assert_allclose(g, tgr, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(h, th, rtol=1e-9, atol=1e-12)


TORCH_MOMENTS = [  # (name, point, tapegrad's arguments from it, torch's distribution)
    ("uniform", (-1.0, 2.5), lambda lo, w: (lo, w), lambda lo, w: D.Uniform(lo, lo + w)),
    ("halfnorm", (1.4,), lambda s: (0.0, s), lambda s: D.HalfNormal(s)),
    ("weibull_min", (1.6, 1.3), lambda c, s: (c, 0.0, s), lambda c, s: D.Weibull(s, c)),
    (
        "lognorm",
        (0.6, 1.3),
        lambda s, sc: (s, 0.0, sc),
        lambda s, sc: D.LogNormal(torch.log(sc), s),
    ),
]


@pytest.mark.parametrize("case", TORCH_MOMENTS, ids=[c[0] for c in TORCH_MOMENTS])
@pytest.mark.parametrize("which", ["mean", "var", "entropy"])
def test_moments_against_torch(case, which):
    name, point, args, make = case
    if name == "lognorm" and which == "entropy":  # torch's LogNormal has no entropy
        return
    attr = {"var": "variance"}.get(which, which)
    ours = lambda *a: getattr(getattr(ts, name), which)(*args(*a))  # noqa: E731
    theirs = lambda *a: getattr(make(*a), attr)  # noqa: E731
    theirs_call = (lambda *a: theirs(*a)()) if which == "entropy" else theirs
    val, g, _ = _tg_grads(ours, point)
    tval, tgr, _ = _torch_grads(theirs_call, point, order2=False)
    np.testing.assert_allclose(val, tval, rtol=1e-13)
    np.testing.assert_allclose(g, tgr, rtol=1e-10, atol=1e-14)


# ---- the new continuous distributions against SciPy ---------------------------------------------

POINTS = {  # standardized points inside the support (and one beyond it where there is an end)
    "uniform": [0.3, 0.9, 1.5],
    "lognorm": [0.3, 1.1, 4.0],
    "cauchy": [-30.0, 0.3, 25.0],
    "logistic": [-30.0, 0.3, 25.0],
    "weibull_min": [0.3, 1.1, 2.5],
    "halfnorm": [0.3, 1.1, 6.0],
    "truncnorm": [-0.5, 0.3, 1.5],
}
METHODS = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]


@pytest.mark.parametrize("name", NEW)
def test_new_distribution_values_and_gradients_against_scipy(name):
    """Every method's value at points in the body and the tails, and its gradient in x,
    every shape, loc and scale against central differences of SciPy's."""
    dist, ref, shapes = getattr(ts, name), getattr(st, name), CONTINUOUS[name]
    for method in METHODS:
        for z in POINTS[name]:
            point = [LOC + SCALE * z, *shapes, LOC, SCALE]
            got = float(getattr(dist, method)(tg.tensor(point[0]), *point[1:]))
            want = getattr(ref, method)(*point)
            np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=f"{method} at {z}")
            if not np.isfinite(want):
                continue
            for i in range(len(point)):

                def along(v, i=i, f=dist, method=method, point=point):
                    p = list(point)
                    p[i] = v
                    return getattr(f, method)(*p)

                g = tg.grad(along)(point[i])
                np.testing.assert_allclose(
                    g,
                    _fd(lambda v: along(v, f=ref), point[i]),
                    rtol=1e-5,
                    atol=1e-9,
                    err_msg=f"{method} at {z}, argument {i}",
                )


@pytest.mark.parametrize("name", NEW)
def test_new_distribution_second_derivatives(name):
    """d^2/dx^2 and d^2/d(shape)^2 of logcdf and logsf against second differences of SciPy."""
    dist, ref, shapes = getattr(ts, name), getattr(st, name), CONTINUOUS[name]
    z = POINTS[name][1]
    point = [LOC + SCALE * z, *shapes, LOC, SCALE]
    for method in ("logcdf", "logsf", "logpdf"):
        for i in range(len(point)):

            def along(v, i=i, f=dist, method=method):
                p = list(point)
                p[i] = v
                return getattr(f, method)(*p)

            h = tg.grad(tg.grad(lambda v, a=along: a(v)))(point[i])
            want = _fd2(lambda v: along(v, f=ref), point[i])
            np.testing.assert_allclose(h, want, rtol=2e-5, atol=1e-6, err_msg=f"{method} {i}")


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("which", ["mean", "var", "std", "entropy"])
def test_new_distribution_moments(name, which):
    dist, ref, shapes = getattr(ts, name), getattr(st, name), CONTINUOUS[name]
    point = [*shapes, LOC, SCALE]
    got = float(getattr(dist, which)(*point[:-1], tg.tensor(point[-1])))
    want = getattr(ref, which)(*point)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if name == "cauchy" and which != "entropy":
        assert np.isnan(got)
        return
    for i in range(len(point)):

        def along(v, i=i, f=dist):
            p = list(point)
            p[i] = v
            return getattr(f, which)(*p)

        g = tg.grad(along)(point[i])
        np.testing.assert_allclose(g, _fd(lambda v: along(v, f=ref), point[i]), rtol=1e-6)


def _mp_truncnorm(a, b, x):
    a, b, x = mp.mpf(a), mp.mpf(b), mp.mpf(x)
    mass = mp.ncdf(b) - mp.ncdf(a)
    return (mp.ncdf(x) - mp.ncdf(a)) / mass, (mp.ncdf(b) - mp.ncdf(x)) / mass


@pytest.mark.parametrize(
    "a, b, x",
    [(-30.0, -29.0, -29.5), (8.0, 9.0, 8.2), (-np.inf, 1.0, -3.0), (0.5, np.inf, 4.0)],
)
def test_truncnorm_tails_and_infinite_ends(a, b, x):
    """log cdf and log sf of truncnorm far in a tail (SciPy's logsf at -29.5 in [-30, -29]
    is right; a difference of two log masses of 425 would lose 8 digits) and with an
    infinite end (its derivatives in the finite end stay finite)."""
    with mp.workdps(40):
        cdf, sf = _mp_truncnorm(a, b, x)
    got_c = float(ts.truncnorm.logcdf(tg.tensor(x), a, b))
    got_s = float(ts.truncnorm.logsf(tg.tensor(x), a, b))
    np.testing.assert_allclose([got_c, got_s], [float(mp.log(cdf)), float(mp.log(sf))], rtol=1e-12)
    finite = 0 if np.isfinite(a) else 1
    point = [a, b]

    def along(v):
        p = list(point)
        p[finite] = v
        return ts.truncnorm.logcdf(x, *p)

    def exact(v):  # mpmath's log cdf (SciPy's differences lose 4 digits at [-30, -29])
        p = list(point)
        p[finite] = v
        return mp.log(_mp_truncnorm(p[0], p[1], x)[0])

    g = tg.grad(along)(point[finite])
    with mp.workdps(40):
        want = float(mp.diff(exact, mp.mpf(point[finite])))
    np.testing.assert_allclose(g, want, rtol=1e-9)


def test_truncnorm_entropy_where_scipy_loses_it():
    """SciPy's truncnorm.entropy is NaN with an infinite end and wrong on [8, 9] (-3.195);
    tapegrad's against numerical integration by mpmath."""
    mp.mp.dps = 30

    def entropy(a, b):
        a, b = mp.mpf(a), mp.mpf(b)
        mass = mp.ncdf(b) - mp.ncdf(a)
        return float(-mp.quad(lambda t: mp.npdf(t) / mass * mp.log(mp.npdf(t) / mass), [a, b]))

    for a, b in [(8.0, 9.0), (-1.0, 2.0), (-1e-9, 1e-9)]:
        np.testing.assert_allclose(
            float(ts.truncnorm.entropy(tg.tensor(a), b)), entropy(a, b), rtol=1e-12
        )
    np.testing.assert_allclose(
        float(ts.truncnorm.entropy(tg.tensor(-np.inf), np.inf)), st.norm.entropy(), rtol=1e-15
    )


# ---- discrete distributions ---------------------------------------------------------------------

KS = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 11.0, 2.5])
DISCRETE = {"binom": (10, 0.3), "nbinom": (3.5, 0.4), "geom": (0.3,), "bernoulli": (0.3,)}


@pytest.mark.parametrize("method", ["pmf", "logpmf", "cdf", "sf"])
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_values_and_derivatives_in_p(name, method):
    dist, ref, shapes = getattr(ts, name), getattr(st, name), DISCRETE[name]
    p0, rest = shapes[-1], shapes[:-1]
    f = lambda p: getattr(dist, method)(KS, *rest, p)  # noqa: E731
    r = lambda p: getattr(ref, method)(KS, *rest, p)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(tg.tensor(p0))), r(p0), rtol=1e-13)
    finite = np.isfinite(r(p0))
    jac = np.asarray(tg.jacobian(f)(p0))
    np.testing.assert_allclose(jac[finite], _fd(r, p0)[finite], rtol=1e-6, atol=1e-9)
    hess = np.asarray(tg.jacobian(tg.jacobian(f))(p0))
    np.testing.assert_allclose(hess[finite], _fd2(r, p0)[finite], rtol=1e-5, atol=1e-6)
    # at p = 0 and 1 and beyond (NaN) the values are SciPy's
    for p in (0.0, 1.0, 1.5, -0.1):
        np.testing.assert_allclose(np.asarray(f(tg.tensor(p))), r(p), rtol=1e-13)


def test_discrete_slopes_at_p_zero_and_one():
    """pmf = C p^k (1 - p)^(n - k) at p = 0 and 1: its slope there is a number (n for k = 1
    at p = 0), not the 0 * inf = NaN of exp(log pmf)."""
    ks = np.array([0.0, 1.0, 2.0, 10.0])
    np.testing.assert_allclose(
        tg.jacobian(lambda p: ts.binom.pmf(ks, 10, p))(0.0), [-10.0, 10.0, 0.0, 0.0], rtol=1e-14
    )
    np.testing.assert_allclose(
        tg.jacobian(lambda p: ts.binom.pmf(ks, 10, p))(1.0), [0.0, 0.0, 0.0, 10.0], rtol=1e-14
    )
    k = np.array([1.0, 2.0, 3.0])
    for method, want in [("pmf", [1.0, -1.0, 0.0]), ("cdf", [1.0, 0.0, 0.0])]:
        got = tg.jacobian(lambda p, m=method: getattr(ts.geom, m)(k, p))(1.0)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        tg.jacobian(lambda p: ts.bernoulli.cdf(np.array([0.0, 1.0]), p))(0.0), [-1.0, 0.0]
    )


def test_nbinom_derivative_in_n_and_discrete_moments():
    g = tg.jacobian(lambda n: ts.nbinom.logpmf(KS[:6], n, 0.4))(3.5)
    want = _fd(lambda n: st.nbinom.logpmf(KS[:6], n, 0.4), 3.5)
    np.testing.assert_allclose(g[1:], want[1:], rtol=1e-7)
    assert g[0] == 0.0  # k = -1: log pmf is the constant -inf
    for name, shapes in DISCRETE.items():
        for which in ("mean", "var", "std") + (("entropy",) if name == "bernoulli" else ()):
            dist, ref = getattr(ts, name), getattr(st, name)
            got = float(getattr(dist, which)(*shapes[:-1], tg.tensor(shapes[-1])))
            np.testing.assert_allclose(got, getattr(ref, which)(*shapes), rtol=1e-13)
            g = tg.grad(lambda p, d=dist, w=which, s=shapes: getattr(d, w)(*s[:-1], p))(shapes[-1])
            want = _fd(lambda p, r=ref, w=which, s=shapes: getattr(r, w)(*s[:-1], p), shapes[-1])
            np.testing.assert_allclose(g, want, rtol=1e-6)


# ---- refusals ------------------------------------------------------------------------------------

REFUSED = [
    (lambda a: ts.t.ppf(0.3, a), 3.0, "t.ppf: the derivative in df has no closed form"),
    (lambda a: ts.beta.isf(0.3, a, 2.0), 2.0, "beta.isf: the derivative in a has no closed"),
    (lambda n: ts.binom.pmf(3, n, 0.3), 10.0, "binom.pmf: no derivative in n (n is a whole"),
    (lambda n: ts.binom.cdf(3, n, 0.3), 10.0, "binom.cdf: no derivative in n"),
    (lambda k: ts.geom.logpmf(k, 0.3), 2.0, "geom.logpmf: no derivative in k (k is a count)"),
    (lambda n: ts.nbinom.sf(3, n, 0.3), 2.5, "nbinom.sf: no derivative in n"),
    (lambda k: ts.bernoulli.cdf(k, 0.3), 1.0, "bernoulli.cdf: no derivative in k"),
    (
        lambda a: tg.grad(lambda b: ts.gamma.ppf(0.3, b))(a),
        2.5,
        "derivatives of second order in a are not implemented",
    ),
    (
        lambda q: tg.grad(lambda b: ts.chi2.isf(q, b))(3.0),
        0.3,
        "derivatives of second order in a are not implemented",
    ),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c[2][:24] for c in REFUSED])
def test_refusals_name_the_function(case):
    fn, x, message = case
    with pytest.raises(NotImplementedError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tg.grad(fn)(x)


def test_invalid_parameters_give_nan_as_scipy():
    for got, want in [
        (ts.lognorm.ppf(tg.tensor(0.3), -1.0), st.lognorm.ppf(0.3, -1.0)),
        (ts.truncnorm.cdf(tg.tensor(0.3), 2.0, 1.0), st.truncnorm.cdf(0.3, 2.0, 1.0)),
        (ts.weibull_min.isf(tg.tensor(0.3), 1.5, 0.0, -1.0), np.nan),
        (ts.binom.pmf(3, 10.5, tg.tensor(0.3)), st.binom.pmf(3, 10.5, 0.3)),
        (ts.geom.cdf(3, tg.tensor(0.0)), st.geom.cdf(3, 0.0)),
    ]:
        assert np.isnan(float(got)) and np.isnan(want)
