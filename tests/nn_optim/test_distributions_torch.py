"""``tapegrad.distributions`` against ``torch.distributions`` (float64, PyTorch CPU).

Every case builds one distribution in both libraries on the same parameter values (leaves
that require grad, plain floats, NumPy arrays, broadcast shapes) and compares a quantity
(log_prob, cdf, icdf, entropy, mean, mode, variance, stddev, KL divergence...) to 1e-12,
its gradient with respect to every leaf and a second derivative (create_graph) of a fixed
random weighting.  Draws cannot be PyTorch's numbers: ``rsample`` is checked by its
structure (the standardized draw, d sum(x) / d parameter) and draws by loose moment checks
with a fixed seed.  Bad input must raise PyTorch's errors (ValueError with its wording for
invalid parameters and out-of-support values).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
TD = torch.distributions

import tapegrad as tg  # noqa: E402
import tapegrad.distributions as D  # noqa: E402

RTOL = 1e-12


def _leaf(lib, v, rg):
    a = np.asarray(v)
    if a.dtype.kind in "iu":
        return tg.tensor(a) if lib == "tg" else torch.tensor(a)
    if lib == "tg":
        return tg.tensor(a.astype(float), requires_grad=rg)
    return torch.tensor(a.astype(float), dtype=torch.float64, requires_grad=rg)


def _run(lib, params, fn):
    """``fn(D, P)``'s value, the gradients of a weighted sum of it with respect to the leaves
    that require grad, and the gradients of a weighted sum of those (second order)."""
    M = D if lib == "tg" else TD
    ag = tg.autograd if lib == "tg" else torch.autograd
    P, leaves = {}, []
    for k, spec in params.items():
        v, rg = spec if isinstance(spec, tuple) else (spec, True)
        if rg == "plain":  # a plain float / NumPy array (torch takes a float or a Tensor)
            P[k] = v if lib == "tg" or not isinstance(v, np.ndarray) else torch.tensor(v)
            continue
        P[k] = _leaf(lib, v, rg)
        if rg and np.asarray(v).dtype.kind == "f":
            leaves.append(P[k])
    out = fn(M, P)
    val = out.detach().numpy() if lib == "tg" else out.detach().numpy()
    if not leaves or not out.requires_grad:
        return val, [], []
    w = np.random.default_rng(1).standard_normal(val.shape)
    wt = tg.tensor(w) if lib == "tg" else torch.tensor(w)
    g = ag.grad((out * wt).sum(), leaves, create_graph=True, allow_unused=True)
    g = [x if x is not None else 0 * leaf for x, leaf in zip(g, leaves, strict=True)]
    s = sum((x * x).sum() for x in g)
    if not s.requires_grad:
        return val, [x.detach().numpy() for x in g], []
    h = ag.grad(s, leaves, allow_unused=True)
    h = [
        np.zeros(leaf.shape) if x is None else x.detach().numpy()
        for x, leaf in zip(h, leaves, strict=True)
    ]
    return val, [x.detach().numpy() for x in g], h


def _same(params, fn, rtol=RTOL, deriv_rtol=None, values_only=False):
    a, b = _run("tg", params, fn), _run("torch", params, fn)
    if values_only:
        a, b = a[:1], b[:1]
    for what, x, y in zip(("value", "grad", "second"), a, b, strict=False):
        if what != "value" and deriv_rtol:
            rtol = deriv_rtol
        xs, ys = (x, y) if isinstance(x, list) else ([x], [y])
        assert len(xs) == len(ys), what
        for xi, yi in zip(xs, ys, strict=True):
            np.testing.assert_allclose(xi, yi, rtol=rtol, atol=rtol, err_msg=what)
            assert np.shape(xi) == np.shape(yi), what


# ------------------------------------------------------------------------------------------
# parameters and values
NORMAL = {"loc": [0.3, -1.2], "scale": [0.7, 2.0], "x": [0.5, 1.5]}
NORMAL_B = {"loc": [[0.3], [-1.2]], "scale": [0.7, 2.0, 1.1], "x": [0.5, 1.5, -0.2]}
UNIFORM = {"low": [-1.0, 0.5], "high": [2.0, 3.0], "x": [0.2, 2.9]}
EXPO = {"rate": [0.5, 2.0], "x": [0.3, 1.7]}
LAPLACE = {"loc": [0.3, -1.2], "scale": [0.7, 2.0], "x": [0.5, -2.5]}
LOGNORMAL = {"loc": [0.3, -1.2], "scale": [0.7, 1.3], "x": [0.5, 1.5]}
GAMMA = {"a": [0.7, 3.2], "rate": [1.5, 0.4], "x": [0.4, 2.2]}
BETA = {"a": [0.7, 3.2], "b": [1.5, 0.4], "x": [0.4, 0.9]}
DIRICHLET = {"c": [[0.8, 2.0, 3.0], [1.5, 0.5, 4.0]], "x": [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]}
P01 = {"p": ([0.0, 1.0], False)}
U01 = {"u": ([0.2, 0.9], False)}

CASES = {
    # Normal
    "normal.log_prob": (NORMAL, lambda M, P: M.Normal(P["loc"], P["scale"]).log_prob(P["x"])),
    "normal.log_prob.broadcast": (
        NORMAL_B,
        lambda M, P: M.Normal(P["loc"], P["scale"]).log_prob(P["x"]),
    ),
    "normal.log_prob.plain_params": (
        {"loc": (0.3, "plain"), "scale": (np.array([0.7, 2.0]), "plain"), "x": [0.5, 1.5]},
        lambda M, P: M.Normal(P["loc"], P["scale"]).log_prob(P["x"]),
    ),
    "normal.cdf": (NORMAL, lambda M, P: M.Normal(P["loc"], P["scale"]).cdf(P["x"])),
    "normal.icdf": (
        {**NORMAL, **U01},
        lambda M, P: M.Normal(P["loc"], P["scale"]).icdf(P["u"]),
    ),
    "normal.icdf.grad_p": (
        {"loc": [0.3, -1.2], "scale": [0.7, 2.0], "u": [0.2, 0.9]},
        lambda M, P: M.Normal(P["loc"], P["scale"]).icdf(P["u"]),
    ),
    "normal.entropy": (NORMAL, lambda M, P: M.Normal(P["loc"], P["scale"]).entropy()),
    "normal.moments": (
        NORMAL,
        lambda M, P: _stack(
            M, _moments(M.Normal(P["loc"], P["scale"]), "mean mode stddev variance")
        ),
    ),
    # Uniform
    "uniform.log_prob": (UNIFORM, lambda M, P: M.Uniform(P["low"], P["high"]).log_prob(P["x"])),
    "uniform.cdf": (UNIFORM, lambda M, P: M.Uniform(P["low"], P["high"]).cdf(P["x"])),
    "uniform.icdf": (
        {"low": [-1.0, 0.5], "high": [2.0, 3.0], "u": [0.2, 0.9]},
        lambda M, P: M.Uniform(P["low"], P["high"]).icdf(P["u"]),
    ),
    "uniform.entropy": (UNIFORM, lambda M, P: M.Uniform(P["low"], P["high"]).entropy()),
    "uniform.moments": (
        UNIFORM,
        lambda M, P: _stack(M, _moments(M.Uniform(P["low"], P["high"]), "mean stddev variance")),
    ),
    "uniform.mode": (UNIFORM, lambda M, P: M.Uniform(P["low"], P["high"]).mode),
    # Exponential
    "exponential.log_prob": (EXPO, lambda M, P: M.Exponential(P["rate"]).log_prob(P["x"])),
    "exponential.cdf": (EXPO, lambda M, P: M.Exponential(P["rate"]).cdf(P["x"])),
    "exponential.icdf": (
        {"rate": [0.5, 2.0], "u": [0.2, 0.9]},
        lambda M, P: M.Exponential(P["rate"]).icdf(P["u"]),
    ),
    "exponential.entropy": (EXPO, lambda M, P: M.Exponential(P["rate"]).entropy()),
    "exponential.moments": (
        EXPO,
        lambda M, P: _stack(M, _moments(M.Exponential(P["rate"]), "mean mode stddev variance")),
    ),
    # Laplace
    "laplace.log_prob": (LAPLACE, lambda M, P: M.Laplace(P["loc"], P["scale"]).log_prob(P["x"])),
    "laplace.cdf": (LAPLACE, lambda M, P: M.Laplace(P["loc"], P["scale"]).cdf(P["x"])),
    "laplace.icdf": (
        {"loc": [0.3, -1.2], "scale": [0.7, 2.0], "u": [0.2, 0.9]},
        lambda M, P: M.Laplace(P["loc"], P["scale"]).icdf(P["u"]),
    ),
    "laplace.entropy": (LAPLACE, lambda M, P: M.Laplace(P["loc"], P["scale"]).entropy()),
    "laplace.moments": (
        LAPLACE,
        lambda M, P: _stack(
            M, _moments(M.Laplace(P["loc"], P["scale"]), "mean mode stddev variance")
        ),
    ),
    # LogNormal
    "lognormal.log_prob": (
        LOGNORMAL,
        lambda M, P: M.LogNormal(P["loc"], P["scale"]).log_prob(P["x"]),
    ),
    "lognormal.cdf": (LOGNORMAL, lambda M, P: M.LogNormal(P["loc"], P["scale"]).cdf(P["x"])),
    "lognormal.icdf": (
        {"loc": [0.3, -1.2], "scale": [0.7, 1.3], "u": [0.2, 0.9]},
        lambda M, P: M.LogNormal(P["loc"], P["scale"]).icdf(P["u"]),
    ),
    "lognormal.entropy": (LOGNORMAL, lambda M, P: M.LogNormal(P["loc"], P["scale"]).entropy()),
    "lognormal.moments": (
        LOGNORMAL,
        lambda M, P: _stack(
            M, _moments(M.LogNormal(P["loc"], P["scale"]), "mean mode stddev variance")
        ),
    ),
    # Gamma
    "gamma.log_prob": (GAMMA, lambda M, P: M.Gamma(P["a"], P["rate"]).log_prob(P["x"])),
    "gamma.log_prob.at_zero": (
        {"a": [1.0, 2.5], "rate": [1.5, 0.4], "x": ([0.0, 0.0], False)},
        lambda M, P: M.Gamma(P["a"], P["rate"]).log_prob(P["x"]),
    ),
    "gamma.cdf": (
        {"a": ([0.7, 3.2], False), "rate": [1.5, 0.4], "x": [0.4, 2.2]},
        lambda M, P: M.Gamma(P["a"], P["rate"]).cdf(P["x"]),
    ),
    "gamma.entropy": (GAMMA, lambda M, P: M.Gamma(P["a"], P["rate"]).entropy()),
    "gamma.moments": (
        GAMMA,
        lambda M, P: _stack(M, _moments(M.Gamma(P["a"], P["rate"]), "mean mode stddev variance")),
    ),
    # Beta
    "beta.log_prob": (BETA, lambda M, P: M.Beta(P["a"], P["b"]).log_prob(P["x"])),
    "beta.entropy": (BETA, lambda M, P: M.Beta(P["a"], P["b"]).entropy()),
    "beta.moments": (
        BETA,
        lambda M, P: _stack(M, _moments(M.Beta(P["a"], P["b"]), "mean stddev variance")),
    ),
    "beta.mode": (
        {"a": [2.0, 3.2, 0.5], "b": [1.5, 1.4, 0.7]},
        lambda M, P: M.Beta(P["a"], P["b"]).mode,
    ),
    # Dirichlet
    "dirichlet.log_prob": (DIRICHLET, lambda M, P: M.Dirichlet(P["c"]).log_prob(P["x"])),
    "dirichlet.entropy": (DIRICHLET, lambda M, P: M.Dirichlet(P["c"]).entropy()),
    "dirichlet.moments": (
        DIRICHLET,
        lambda M, P: _stack(M, _moments(M.Dirichlet(P["c"]), "mean stddev variance")),
    ),
    "dirichlet.mode": (
        {"c": [[1.8, 2.0, 3.0], [0.5, 0.3, 0.9]]},
        lambda M, P: M.Dirichlet(P["c"]).mode,
    ),
    # Bernoulli
    "bernoulli.probs.log_prob": (
        {"p": [0.2, 0.7, 0.5], "x": ([0.0, 1.0, 1.0], False)},
        lambda M, P: M.Bernoulli(probs=P["p"]).log_prob(P["x"]),
    ),
    "bernoulli.logits.log_prob": (
        {"l": [0.0, -1.3, 2.0], "x": ([0.0, 1.0, 1.0], False)},
        lambda M, P: M.Bernoulli(logits=P["l"]).log_prob(P["x"]),
    ),
    "bernoulli.logits.entropy": (
        {"l": [0.0, -1.3, 2.0]},
        lambda M, P: M.Bernoulli(logits=P["l"]).entropy(),
    ),
    "bernoulli.probs.entropy": (
        {"p": [0.2, 0.7, 0.5]},
        lambda M, P: M.Bernoulli(probs=P["p"]).entropy(),
    ),
    "bernoulli.moments": (
        {"l": [0.0, -1.3, 2.0]},
        lambda M, P: _stack(M, _moments(M.Bernoulli(logits=P["l"]), "mean stddev variance")),
    ),
    "bernoulli.probs": ({"l": [0.0, -1.3, 2.0]}, lambda M, P: M.Bernoulli(logits=P["l"]).probs),
    "bernoulli.logits": ({"p": [0.2, 0.7]}, lambda M, P: M.Bernoulli(probs=P["p"]).logits),
    "bernoulli.mode": ({"p": [0.2, 0.7, 0.5]}, lambda M, P: M.Bernoulli(probs=P["p"]).mode),
    # Categorical
    "categorical.probs.log_prob": (
        {"p": [[0.2, 0.5, 0.3], [1.0, 2.0, 3.0]], "k": ([[0, 2], [1, 1], [2, 0]], False)},
        lambda M, P: M.Categorical(probs=P["p"]).log_prob(P["k"]),
    ),
    "categorical.logits.log_prob": (
        {"l": [[0.2, -0.5, 1.3], [1.0, 2.0, -3.0]], "k": ([1, 2], False)},
        lambda M, P: M.Categorical(logits=P["l"]).log_prob(P["k"]),
    ),
    "categorical.logits.entropy": (
        {"l": [[0.2, -0.5, 1.3], [1.0, 2.0, -3.0]]},
        lambda M, P: M.Categorical(logits=P["l"]).entropy(),
    ),
    "categorical.probs.entropy": (
        {"p": [[0.2, 0.5, 0.3], [1.0, 2.0, 3.0]]},
        lambda M, P: M.Categorical(probs=P["p"]).entropy(),
    ),
    "categorical.probs.entropy.zero_prob": (
        {"p": [[0.0, 0.5, 0.5]]},
        lambda M, P: M.Categorical(probs=P["p"]).entropy(),
    ),
    "categorical.logits.normalized": (
        {"l": [[0.2, -0.5, 1.3]]},
        lambda M, P: M.Categorical(logits=P["l"]).logits,
    ),
    "categorical.probs.normalized": (
        {"p": [[1.0, 2.0, 3.0]]},
        lambda M, P: M.Categorical(probs=P["p"]).probs,
    ),
    "categorical.mode": (
        {"p": ([[0.2, 0.5, 0.3], [3.0, 2.0, 1.0]], False)},
        lambda M, P: M.Categorical(probs=P["p"]).mode,
    ),
    "categorical.enumerate_support": (
        {"p": ([[0.2, 0.5, 0.3], [3.0, 2.0, 1.0]], False)},
        lambda M, P: M.Categorical(probs=P["p"]).enumerate_support(),
    ),
    "categorical.enumerate_support.unexpanded": (
        {"p": ([[0.2, 0.5, 0.3], [3.0, 2.0, 1.0]], False)},
        lambda M, P: M.Categorical(probs=P["p"]).enumerate_support(expand=False),
    ),
    "onehot.log_prob": (
        {"l": [[0.2, -0.5, 1.3], [1.0, 2.0, -3.0]], "x": ([[0.0, 0.0, 1.0], [1.0, 0, 0]], False)},
        lambda M, P: M.OneHotCategorical(logits=P["l"]).log_prob(P["x"]),
    ),
    "onehot.entropy": (
        {"l": [[0.2, -0.5, 1.3], [1.0, 2.0, -3.0]]},
        lambda M, P: M.OneHotCategorical(logits=P["l"]).entropy(),
    ),
    "onehot.moments": (
        {"p": [[0.2, 0.5, 0.3]]},
        lambda M, P: _stack(M, _moments(M.OneHotCategorical(probs=P["p"]), "mean variance")),
    ),
    # Poisson, Binomial
    "poisson.log_prob": (
        {"r": [0.5, 3.0, 2.0], "k": ([0.0, 3.0, 7.0], False)},
        lambda M, P: M.Poisson(P["r"]).log_prob(P["k"]),
    ),
    "poisson.moments": (
        {"r": [0.5, 3.0, 2.0]},
        lambda M, P: _stack(M, _moments(M.Poisson(P["r"]), "mean mode variance")),
    ),
    "binomial.probs.log_prob": (
        {"n": ([10.0, 4.0, 6.0], False), "p": [0.3, 0.6, 0.9], "k": ([3.0, 4.0, 0.0], False)},
        lambda M, P: M.Binomial(P["n"], probs=P["p"]).log_prob(P["k"]),
    ),
    "binomial.logits.log_prob": (
        {"p": [0.3, -1.5, 2.0], "k": ([3.0, 4.0, 0.0], False)},
        lambda M, P: M.Binomial(10, logits=P["p"]).log_prob(P["k"]),
    ),
    "binomial.moments": (
        {"p": [0.3, 0.5, 0.95]},
        lambda M, P: _stack(M, _moments(M.Binomial(10, probs=P["p"]), "mean mode variance")),
    ),
    # Cauchy, HalfNormal, StudentT, Chi2, Geometric
    "cauchy.log_prob": (LAPLACE, lambda M, P: M.Cauchy(P["loc"], P["scale"]).log_prob(P["x"])),
    "cauchy.cdf": (LAPLACE, lambda M, P: M.Cauchy(P["loc"], P["scale"]).cdf(P["x"])),
    "cauchy.icdf": (
        {"loc": [0.3, -1.2], "scale": [0.7, 2.0], "u": [0.2, 0.9]},
        lambda M, P: M.Cauchy(P["loc"], P["scale"]).icdf(P["u"]),
    ),
    "cauchy.entropy": (LAPLACE, lambda M, P: M.Cauchy(P["loc"], P["scale"]).entropy()),
    "cauchy.moments": (
        LAPLACE,
        lambda M, P: _stack(M, _moments(M.Cauchy(P["loc"], P["scale"]), "mean mode variance")),
    ),
    "halfnormal.log_prob": (
        {"s": [0.7, 2.0], "x": [0.5, 1.5]},
        lambda M, P: M.HalfNormal(P["s"]).log_prob(P["x"]),
    ),
    "halfnormal.cdf": (
        {"s": [0.7, 2.0], "x": [0.5, 1.5]},
        lambda M, P: M.HalfNormal(P["s"]).cdf(P["x"]),
    ),
    "halfnormal.icdf": (
        {"s": [0.7, 2.0], "u": [0.2, 0.9]},
        lambda M, P: M.HalfNormal(P["s"]).icdf(P["u"]),
    ),
    "halfnormal.entropy": ({"s": [0.7, 2.0]}, lambda M, P: M.HalfNormal(P["s"]).entropy()),
    "halfnormal.moments": (
        {"s": [0.7, 2.0]},
        lambda M, P: _stack(M, _moments(M.HalfNormal(P["s"]), "mean mode stddev variance")),
    ),
    "studentt.log_prob": (
        {"df": [0.7, 3.5], "loc": [0.3, -1.2], "scale": [0.7, 2.0], "x": [0.5, 1.5]},
        lambda M, P: M.StudentT(P["df"], P["loc"], P["scale"]).log_prob(P["x"]),
    ),
    "studentt.entropy": (
        {"df": [0.7, 3.5], "scale": [0.7, 2.0]},
        lambda M, P: M.StudentT(P["df"], 0.0, P["scale"]).entropy(),
    ),
    "studentt.moments": (
        {"df": [0.7, 1.5, 3.5], "loc": [0.3, -1.2, 0.4], "scale": [0.7, 2.0, 1.1]},
        lambda M, P: _stack(
            M, _moments(M.StudentT(P["df"], P["loc"], P["scale"]), "mean mode variance")
        ),
    ),
    "chi2.log_prob": (
        {"df": [0.7, 3.5], "x": [0.5, 1.5]},
        lambda M, P: M.Chi2(P["df"]).log_prob(P["x"]),
    ),
    "chi2.entropy": ({"df": [0.7, 3.5]}, lambda M, P: M.Chi2(P["df"]).entropy()),
    "geometric.probs.log_prob": (
        {"p": [0.3, 0.9, 1.0], "k": ([0.0, 3.0, 0.0], False)},
        lambda M, P: M.Geometric(probs=P["p"]).log_prob(P["k"]),
    ),
    "geometric.logits.log_prob": (
        {"l": [0.0, -1.3, 2.0], "k": ([0.0, 3.0, 5.0], False)},
        lambda M, P: M.Geometric(logits=P["l"]).log_prob(P["k"]),
    ),
    "geometric.entropy": (
        {"l": [0.0, -1.3, 2.0]},
        lambda M, P: M.Geometric(logits=P["l"]).entropy(),
    ),
    "geometric.moments": (
        {"p": [0.3, 0.9]},
        lambda M, P: _stack(M, _moments(M.Geometric(probs=P["p"]), "mean mode variance")),
    ),
    # Independent
    "independent.log_prob": (
        {"loc": [[0.3, -1.2], [0.1, 0.2]], "scale": [0.7, 2.0], "x": [0.5, 1.5]},
        lambda M, P: M.Independent(M.Normal(P["loc"], P["scale"]), 1).log_prob(P["x"]),
    ),
    "independent.entropy": (
        {"loc": [[0.3, -1.2], [0.1, 0.2]], "scale": [0.7, 2.0]},
        lambda M, P: M.Independent(M.Normal(P["loc"], P["scale"]), 2).entropy(),
    ),
}


def _moments(d, names):
    return [getattr(d, n) for n in names.split()]


def _stack(M, ts):
    return tg.stack(ts) if M is D else torch.stack(ts)


# PyTorch's trigamma (the derivative of its digamma) is good to ~5e-10 only (tapegrad's to
# 1e-15 against mpmath, checked below): derivatives through digamma compare to 1e-8
TRIGAMMA = ("beta.", "dirichlet.", "gamma.", "poisson.", "binomial.", "studentt.", "chi2.")
# PyTorch's mode of a Uniform is nan * high, so its gradient is nan: values only
VALUES_ONLY = ("uniform.mode",)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_derivatives_match_torch(name):
    params, fn = CASES[name]
    deriv = 1e-8 if name.startswith(TRIGAMMA) else None
    _same(params, fn, deriv_rtol=deriv, values_only=name in VALUES_ONLY)


def test_trigamma_behind_second_derivatives_matches_mpmath():
    mpmath = pytest.importorskip("mpmath")
    a = tg.tensor([0.4, 0.7, 1.5, 3.2], requires_grad=True)
    (g,) = tg.autograd.grad(
        D.Gamma(a, 1.0).log_prob(tg.tensor([1.0] * 4)).sum(), a, create_graph=True
    )
    (h,) = tg.autograd.grad(g.sum(), a)
    ref = [-float(mpmath.polygamma(1, v)) for v in (0.4, 0.7, 1.5, 3.2)]
    np.testing.assert_allclose(h.numpy(), ref, rtol=1e-14)


# ------------------------------------------------------------------------------------------
# MultivariateNormal

A = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.0]])
B = np.array([[1.0, -0.2, 0.1], [-0.2, 0.8, 0.0], [0.1, 0.0, 2.5]])
L = np.linalg.cholesky(A)
MVN_X = np.array([[[0.3, -0.2, 1.0]], [[1.1, 0.5, -0.7]]])  # (2, 1, 3): broadcasts over batch


def _mvn(M, P, kind):
    return M.MultivariateNormal(P["loc"], **{kind: P["m"]})


MVN_CASES = {
    "log_prob": lambda d, P: d.log_prob(P["x"]),
    "entropy": lambda d, P: d.entropy(),
    "variance": lambda d, P: d.variance,
    "covariance_matrix": lambda d, P: d.covariance_matrix,
    "scale_tril": lambda d, P: d.scale_tril,
    "precision_matrix": lambda d, P: d.precision_matrix,
}


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("what", sorted(MVN_CASES))
def test_multivariate_normal_matches_torch(kind, what):
    m = {"covariance_matrix": A, "precision_matrix": np.linalg.inv(A), "scale_tril": L}[kind]
    params = {"loc": [[0.1, -0.3, 0.5], [1.0, 0.0, -1.0]], "m": m, "x": MVN_X}
    fn = MVN_CASES[what]
    _same(params, lambda M, P: fn(_mvn(M, P, kind), P), rtol=1e-10)


def test_multivariate_normal_batched_matrices():
    params = {"loc": [0.1, -0.3, 0.5], "m": np.stack([A, B]), "x": MVN_X[0, 0]}
    _same(params, lambda M, P: _mvn(M, P, "covariance_matrix").log_prob(P["x"]), rtol=1e-10)


# ------------------------------------------------------------------------------------------
# KL divergences

KL_CASES = {
    "normal": (NORMAL, lambda M, P: (M.Normal(P["loc"], 1.3), M.Normal(0.2, P["scale"]))),
    "bernoulli": (
        {"p": [0.2, 0.7, 0.5], "l": [0.0, -1.3, 2.0]},
        lambda M, P: (M.Bernoulli(probs=P["p"]), M.Bernoulli(logits=P["l"])),
    ),
    "categorical": (
        {"p": [[0.2, 0.5, 0.3], [1.0, 2.0, 3.0]], "l": [0.2, -0.5, 1.3]},
        lambda M, P: (M.Categorical(probs=P["p"]), M.Categorical(logits=P["l"])),
    ),
    "beta": (BETA, lambda M, P: (M.Beta(P["a"], P["b"]), M.Beta(P["b"], 2.0))),
    "gamma": (GAMMA, lambda M, P: (M.Gamma(P["a"], P["rate"]), M.Gamma(P["rate"], P["a"]))),
    "chi2_gamma": (GAMMA, lambda M, P: (M.Chi2(P["a"]), M.Gamma(P["rate"], P["a"]))),
    "dirichlet": (DIRICHLET, lambda M, P: (M.Dirichlet(P["c"]), M.Dirichlet(P["c"].flip(-1)))),
    "exponential": (EXPO, lambda M, P: (M.Exponential(P["rate"]), M.Exponential(P["x"]))),
    "uniform": (
        {"low": [-1.0, 0.5], "high": [2.0, 3.0]},
        lambda M, P: (M.Uniform(P["low"], P["high"]), M.Uniform(P["low"] - 1, P["high"] + 0.5)),
    ),
    "uniform.infinite": (
        {"low": [-1.0, 0.5], "high": [2.0, 3.0]},
        lambda M, P: (M.Uniform(P["low"], P["high"]), M.Uniform(P["low"] + 0.1, P["high"] + 1)),
    ),
    "laplace": (
        LAPLACE,
        lambda M, P: (M.Laplace(P["loc"], P["scale"]), M.Laplace(P["x"], P["scale"] * 1.5)),
    ),
    "laplace.equal_locs": (
        {"loc": [0.3, -1.2], "scale": [0.7, 2.0]},
        lambda M, P: (M.Laplace(P["loc"], P["scale"]), M.Laplace(P["loc"], 1.0)),
    ),
    "mvn": (
        {"loc": [[0.1, -0.3, 0.5], [1.0, 0.0, -1.0]], "m": A, "n": np.stack([B, A])},
        lambda M, P: (
            M.MultivariateNormal(P["loc"], covariance_matrix=P["m"]),
            M.MultivariateNormal(P["loc"][0], scale_tril=_chol(M, P["n"])),
        ),
    ),
    "independent": (
        {"loc": [[0.3, -1.2], [0.1, 0.2]], "scale": [0.7, 2.0]},
        lambda M, P: (
            M.Independent(M.Normal(P["loc"], P["scale"]), 1),
            M.Independent(M.Normal(P["scale"], 1.5), 1),
        ),
    ),
}


def _chol(M, m):
    return tg.linalg.cholesky(m) if M is D else torch.linalg.cholesky(m)


@pytest.mark.parametrize("name", sorted(KL_CASES))
def test_kl_divergence_matches_torch(name):
    params, pair = KL_CASES[name]
    deriv = 1e-8 if name in ("beta", "dirichlet", "gamma", "chi2_gamma") else None
    _same(params, lambda M, P: M.kl_divergence(*pair(M, P)), rtol=1e-10, deriv_rtol=deriv)


def test_binomial_second_derivative_at_even_odds_is_the_closed_form():
    """At probs 1/2 (logits 0) PyTorch's Binomial log_prob has second derivative 0 in the
    logits (its |logits| form): tapegrad's is the closed form -n sigmoid'(0) = -n / 4."""
    lg = tg.tensor([0.0, 0.0], requires_grad=True)
    lp = D.Binomial(tg.tensor([4.0, 10.0]), logits=lg).log_prob(tg.tensor([4.0, 3.0]))
    (g,) = tg.autograd.grad(lp.sum(), lg, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), lg)
    np.testing.assert_allclose(g.numpy(), [4 - 4 / 2, 3 - 10 / 2], rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), [-4 / 4, -10 / 4], rtol=1e-14)


# ------------------------------------------------------------------------------------------
# rsample: the structure of the reparameterized draw and its gradients


def _leaves(*vals):
    return [tg.tensor(np.asarray(v, float), requires_grad=True) for v in vals]


def test_normal_rsample_structure():
    tg.manual_seed(0)
    loc, scale = _leaves([0.3, -1.2], [0.7, 2.0])
    x = D.Normal(loc, scale).rsample((4000,))
    assert x.shape == (4000, 2) and x.requires_grad
    z = ((x - loc) / scale).detach().numpy()
    np.testing.assert_allclose(z.mean(0), 0, atol=0.06)
    np.testing.assert_allclose(z.std(0), 1, atol=0.05)
    gl, gs = tg.autograd.grad(x.sum(), [loc, scale])
    np.testing.assert_allclose(gl.numpy(), [4000, 4000], rtol=1e-14)
    np.testing.assert_allclose(gs.numpy(), z.sum(0), rtol=1e-10)


@pytest.mark.parametrize(
    "make, standard",
    [
        (lambda a, b: D.Uniform(a, a + b), lambda x, a, b: (x - a) / b),
        (lambda a, b: D.Exponential(b), lambda x, a, b: x * b),
        (lambda a, b: D.Laplace(a, b), lambda x, a, b: (x - a) / b),
        (lambda a, b: D.LogNormal(a, b), lambda x, a, b: (x.log() - a) / b),
    ],
    ids=["uniform", "exponential", "laplace", "lognormal"],
)
def test_rsample_is_a_parameter_free_draw_moved_by_the_parameters(make, standard):
    """The standardized draw does not depend on the parameters: its derivative is zero."""
    tg.manual_seed(1)
    a, b = _leaves([0.3, -1.2], [0.7, 2.0])
    x = make(a, b).rsample((50,))
    assert x.shape == (50, 2)
    z = standard(x, a, b)
    ga, gb = tg.autograd.grad(z.sum(), [a, b], allow_unused=True)
    for g in (ga, gb):
        assert g is None or np.allclose(g.numpy(), 0, atol=1e-9)


def test_multivariate_normal_rsample_structure():
    tg.manual_seed(2)
    loc = _leaves([0.1, -0.3, 0.5])[0]
    lower = tg.tensor(L, requires_grad=True)
    x = D.MultivariateNormal(loc, scale_tril=lower).rsample((3000,))
    assert x.shape == (3000, 3)
    eps = tg.linalg.solve_triangular(lower, (x - loc).unsqueeze(-1), upper=False).squeeze(-1)
    e = eps.detach().numpy()
    np.testing.assert_allclose(np.cov(e.T), np.eye(3), atol=0.08)
    gl, gL = tg.autograd.grad(x.sum(), [loc, lower])
    np.testing.assert_allclose(gl.numpy(), [3000] * 3, rtol=1e-14)
    # (as PyTorch: L @ eps reads the whole matrix, so the upper triangle gets eps too)
    np.testing.assert_allclose(gL.numpy(), np.outer(np.ones(3), e.sum(0)), rtol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda: D.Beta(tg.tensor([1.5], requires_grad=True), 2.0),
        lambda: D.Dirichlet(tg.tensor([1.5, 2.0], requires_grad=True)),
    ],
    ids=["Beta", "Dirichlet"],
)
def test_rsample_without_implicit_reparameterization_refuses(make):
    d = make()
    name = type(d).__name__
    assert not d.has_rsample
    with pytest.raises(NotImplementedError, match=rf"{name}\.rsample.*sample\(\).*score-function"):
        d.rsample((3,))
    s = d.sample((3,))
    assert not s.requires_grad and s.shape == (3,) + d.batch_shape + d.event_shape


GAMMA_A = np.array([0.3, 0.7, 2.5, 10.0, 50.0])
GAMMA_X = np.array([0.05, 0.9, 2.0, 14.0, 40.0])


def test_gamma_implicit_reparameterization_gradient():
    """d x / d a at a fixed draw x is -(dP/da) / (dP/dx): against mpmath to 1e-12 and
    PyTorch's _standard_gamma_grad (an approximation good to ~5e-5) to 1e-4."""
    from tapegrad.distributions.univariate import implicit_standard_gamma

    mpmath = pytest.importorskip("mpmath")
    a = tg.tensor(GAMMA_A, requires_grad=True)
    x = implicit_standard_gamma(a, GAMMA_X)
    np.testing.assert_array_equal(x.detach().numpy(), GAMMA_X)
    (g,) = tg.autograd.grad(x.sum(), a)
    ref = []
    for ai, xi in zip(GAMMA_A, GAMMA_X, strict=True):
        dp = mpmath.diff(lambda s, xi=xi: mpmath.gammainc(s, 0, xi, regularized=True), ai)
        density = xi ** (ai - 1) * mpmath.exp(-xi) / mpmath.gamma(ai)
        ref.append(float(-dp / density))
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-12)
    theirs = torch._standard_gamma_grad(torch.tensor(GAMMA_A), torch.tensor(GAMMA_X))
    np.testing.assert_allclose(g.numpy(), theirs.numpy(), rtol=1e-4)


def test_gamma_rsample_structure():
    tg.manual_seed(4)
    a, rate = _leaves([0.7, 3.0], [1.5, 0.5])
    d = D.Gamma(a, rate)
    assert d.has_rsample
    x = d.rsample((200,))
    assert x.shape == (200, 2) and np.all(x.detach().numpy() > 0)
    ga, gr = tg.autograd.grad(x.sum(), [a, rate], create_graph=True)
    xv = x.detach().numpy()
    np.testing.assert_allclose(gr.detach().numpy(), -xv.sum(0) / [1.5, 0.5], rtol=1e-12)
    # the concentration's gradient: the implicit slope at the standardized draws
    from tapegrad.distributions.univariate import implicit_standard_gamma

    a2 = tg.tensor([0.7, 3.0], requires_grad=True)
    std = implicit_standard_gamma(a2.expand((200, 2)), xv * [1.5, 0.5])
    (slope,) = tg.autograd.grad(std.sum(), a2)
    np.testing.assert_allclose(ga.detach().numpy(), slope.numpy() / [1.5, 0.5], rtol=1e-12)
    # the mixed second derivative (rate, then anything) is exact; a second derivative in
    # the concentration is refused, never a silent zero
    (grr,) = tg.autograd.grad(gr.sum(), rate, retain_graph=True)
    np.testing.assert_allclose(grr.numpy(), 2 * xv.sum(0) / np.array([1.5, 0.5]) ** 2, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="second order in a"):
        tg.autograd.grad(ga.sum(), a)


# ------------------------------------------------------------------------------------------
# draws: shapes and moments (fixed seed, loose tolerances)

MOMENT_CASES = {
    "normal": lambda: D.Normal(tg.tensor([0.3, -1.2]), tg.tensor([0.7, 2.0])),
    "uniform": lambda: D.Uniform(tg.tensor([-1.0, 0.5]), tg.tensor([2.0, 3.0])),
    "exponential": lambda: D.Exponential(tg.tensor([0.5, 2.0])),
    "laplace": lambda: D.Laplace(tg.tensor([0.3, -1.2]), tg.tensor([0.7, 2.0])),
    "lognormal": lambda: D.LogNormal(tg.tensor([0.3, -1.2]), tg.tensor([0.3, 0.5])),
    "gamma": lambda: D.Gamma(tg.tensor([0.7, 3.2]), tg.tensor([1.5, 0.4])),
    "beta": lambda: D.Beta(tg.tensor([0.7, 3.2]), tg.tensor([1.5, 0.4])),
    "bernoulli": lambda: D.Bernoulli(logits=tg.tensor([0.0, -1.3, 2.0])),
    "poisson": lambda: D.Poisson(tg.tensor([0.5, 3.0])),
    "binomial": lambda: D.Binomial(10, probs=tg.tensor([0.3, 0.9])),
    "categorical": lambda: D.Categorical(probs=tg.tensor([[0.2, 0.5, 0.3], [1.0, 2.0, 3.0]])),
    "onehot": lambda: D.OneHotCategorical(probs=tg.tensor([[0.2, 0.5, 0.3]])),
    "dirichlet": lambda: D.Dirichlet(tg.tensor([[0.8, 2.0, 3.0]])),
    "mvn": lambda: D.MultivariateNormal(tg.tensor([0.1, -0.3, 0.5]), tg.tensor(A)),
    "independent": lambda: D.Independent(D.Normal(tg.tensor([[0.3, -1.2]]), 0.5), 1),
    "halfnormal": lambda: D.HalfNormal(tg.tensor([0.7, 2.0])),
    "studentt": lambda: D.StudentT(tg.tensor([30.0]), 0.5, 2.0),
    "chi2": lambda: D.Chi2(tg.tensor([0.7, 3.5])),
    "geometric": lambda: D.Geometric(probs=tg.tensor([0.3, 0.9])),
}


@pytest.mark.parametrize("name", sorted(MOMENT_CASES))
def test_sample_shapes_and_moments(name):
    tg.manual_seed(3)
    d = MOMENT_CASES[name]()
    n = 20000
    s = d.sample((n,))
    assert s.shape == (n,) + d.batch_shape + d.event_shape
    assert not s.requires_grad
    x = s.numpy().astype(float)
    assert np.all(d.support.check(s).numpy())
    if name == "categorical":
        p = d.probs.numpy()
        freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, p, atol=0.02)
        assert s.dtype == np.int64
        return
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    np.testing.assert_allclose(x.mean(0), mean, atol=0.05 * np.sqrt(var).max() + 1e-3)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-3)


def test_heavy_tailed_draws_and_their_gradients():
    tg.manual_seed(5)
    loc, scale = _leaves([0.3, -1.2], [0.7, 2.0])
    x = D.Cauchy(loc, scale).rsample((2000,))
    med = np.median(x.detach().numpy(), axis=0)
    np.testing.assert_allclose(med, [0.3, -1.2], atol=0.15)
    gl, gs = tg.autograd.grad(x.sum(), [loc, scale])
    np.testing.assert_allclose(gl.numpy(), [2000, 2000])
    z = ((x - loc) / scale).detach().numpy()
    np.testing.assert_allclose(gs.numpy(), z.sum(0), rtol=1e-10)
    df = tg.tensor([4.0], requires_grad=True)
    t = D.StudentT(df, 0.0, 1.0).rsample((500,))
    (g,) = tg.autograd.grad(t.abs().sum(), df)  # (implicit Gamma gradient in df)
    assert np.isfinite(g.numpy()).all() and t.shape == (500, 1)


def test_sample_is_reproducible_with_manual_seed():
    d = D.Gamma(tg.tensor([0.7, 3.2]), 1.0)
    tg.manual_seed(7)
    a = d.sample((5,)).numpy()
    tg.manual_seed(7)
    np.testing.assert_array_equal(a, d.sample((5,)).numpy())


def test_expand_shapes_match_torch():
    for make in (
        lambda M, t: M.Normal(t([0.0, 1.0]), 1.0).expand((4, 2)),
        lambda M, t: M.Categorical(logits=t([[0.0, 1.0, 2.0]])).expand((4, 1)),
        lambda M, t: M.Dirichlet(t([[1.0, 1.0, 2.0]])).expand((4, 1)),
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0]), t(np.eye(2))).expand((3,)),
        lambda M, t: M.Independent(M.Normal(t([[0.0, 1.0]]), 1.0), 1).expand((3,)),
        lambda M, t: M.Bernoulli(logits=t([0.3, 1.2])).expand((5, 2)),
    ):
        a = make(D, lambda v: tg.tensor(np.asarray(v, float)))
        b = make(TD, lambda v: torch.tensor(np.asarray(v, float)))
        assert a.batch_shape == tuple(b.batch_shape)
        assert a.event_shape == tuple(b.event_shape)
        assert a.sample((2,)).shape == tuple(b.sample((2,)).shape)
    with pytest.raises(RuntimeError, match="expand"):
        D.Normal(tg.tensor([0.0, 1.0]), 1.0).expand((4, 3))


def test_expanded_log_prob_and_gradient_match_torch():
    _same(
        {"loc": [0.3, -1.2], "x": [[0.5, 1.0], [0.1, 0.2], [1.0, 2.0]]},
        lambda M, P: M.Normal(P["loc"], 0.7).expand((3, 2)).log_prob(P["x"]),
    )


def test_enumerate_support_matches_torch():
    for make in (
        lambda M, t: M.Bernoulli(probs=t([0.3, 0.2])),
        lambda M, t: M.Binomial(3, probs=t([0.3, 0.2])),
        lambda M, t: M.Categorical(probs=t([[0.3, 0.2, 0.5]])),
        lambda M, t: M.OneHotCategorical(probs=t([[0.3, 0.2, 0.5]])),
    ):
        for expand in (True, False):
            a = make(D, lambda v: tg.tensor(np.asarray(v, float))).enumerate_support(expand)
            b = make(TD, lambda v: torch.tensor(np.asarray(v, float))).enumerate_support(expand)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert a.shape == tuple(b.shape)


# ------------------------------------------------------------------------------------------
# bad input: PyTorch's errors and messages


def _both_raise(make, exc, match):
    with pytest.raises(exc, match=match):
        make(D, lambda v: tg.tensor(np.asarray(v, float)))
    with pytest.raises(exc, match=match):
        make(TD, lambda v: torch.tensor(np.asarray(v, float)))


BAD = {
    "normal.scale": (
        lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, -1.0])),
        r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution Normal\(loc: "
        r"torch.Size\(\[2\]\), scale: torch.Size\(\[2\]\)\) to satisfy the constraint "
        r"GreaterThan\(lower_bound=0.0\), but found invalid values",
    ),
    "uniform.order": (
        lambda M, t: M.Uniform(1.0, 0.0),
        r"Expected parameter low .* LessThan\(upper_bound=",
    ),
    "bernoulli.probs": (
        lambda M, t: M.Bernoulli(probs=t([0.3, 1.2])),
        r"Expected parameter probs .*Interval\(lower_bound=0.0, upper_bound=1.0\)",
    ),
    "bernoulli.both": (
        lambda M, t: M.Bernoulli(probs=0.3, logits=0.0),
        r"Either `probs` or `logits` must be specified, but not both\.",
    ),
    "categorical.negative": (
        lambda M, t: M.Categorical(probs=t([-0.1, 1.1])),
        r"Expected parameter probs .*Simplex\(\)",
    ),
    "categorical.scalar": (
        lambda M, t: M.Categorical(probs=t(1.0)),
        r"`probs` parameter must be at least one-dimensional\.",
    ),
    "dirichlet.scalar": (
        lambda M, t: M.Dirichlet(t(1.0)),
        r"`concentration` parameter must be at least one-dimensional\.",
    ),
    "gamma.concentration": (
        lambda M, t: M.Gamma(t([0.0]), 1.0),
        r"Expected parameter concentration .*GreaterThan\(lower_bound=0.0\)",
    ),
    "mvn.none": (
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0])),
        r"Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified",
    ),
    "mvn.not_pd": (
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0]), t([[1.0, 1.0], [1.0, 1.0]])),
        r"Expected parameter covariance_matrix .*PositiveDefinite\(\)",
    ),
    "mvn.not_lower": (
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0]), scale_tril=t([[1.0, 1.0], [0, 1]])),
        r"Expected parameter scale_tril .*LowerCholesky\(\)",
    ),
    "independent.ndims": (
        lambda M, t: M.Independent(M.Normal(0.0, 1.0), 1),
        r"Expected reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\), "
        r"actual 1 vs 0",
    ),
    "binomial.count": (
        lambda M, t: M.Binomial(t([3.5]), probs=t([0.5])),
        r"Expected parameter total_count .*IntegerGreaterThan\(lower_bound=0\)",
    ),
    # values outside the support, or of the wrong shape
    "exponential.value": (
        lambda M, t: M.Exponential(t([1.0])).log_prob(t([-1.0])),
        r"Expected value argument \(Tensor of shape \(1,\)\) to be within the support "
        r"\(GreaterThanEq\(lower_bound=0.0\)\) of the distribution Exponential",
    ),
    "normal.nan_value": (
        lambda M, t: M.Normal(0.0, 1.0).log_prob(t([np.nan])),
        r"to be within the support \(Real\(\)\)",
    ),
    "categorical.label": (
        lambda M, t: M.Categorical(probs=t([0.2, 0.8])).log_prob(torch_or_tg_int(M, 2)),
        r"support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)",
    ),
    "poisson.value": (
        lambda M, t: M.Poisson(t(2.0)).log_prob(t(1.5)),
        r"support \(IntegerGreaterThan\(lower_bound=0\)\)",
    ),
    "bernoulli.value": (
        lambda M, t: M.Bernoulli(logits=t([0.3])).log_prob(t([0.5])),
        r"support \(Boolean\(\)\)",
    ),
    "dirichlet.value": (
        lambda M, t: M.Dirichlet(t([1.0, 1.0])).log_prob(t([0.5, 0.6])),
        r"support \(Simplex\(\)\)",
    ),
    "beta.value": (
        lambda M, t: M.Beta(t([1.0]), 2.0).log_prob(t([1.5])),
        r"support \(Interval\(lower_bound=0.0, upper_bound=1.0\)\)",
    ),
    "onehot.value": (
        lambda M, t: M.OneHotCategorical(logits=t([0.0, 1.0])).log_prob(t([0.5, 0.5])),
        r"support \(OneHot\(\)\)",
    ),
    "geometric.probs": (
        lambda M, t: M.Geometric(probs=t([0.0, 0.5])),
        r"Expected parameter probs \(Tensor of shape \(2,\)\) of distribution "
        r"Geometric\(probs: torch.Size\(\[2\]\)\) to be positive but found invalid values",
    ),
    "studentt.df": (
        lambda M, t: M.StudentT(t([-1.0])),
        r"Expected parameter df .*GreaterThan\(lower_bound=0.0\)",
    ),
    "halfnormal.value": (
        lambda M, t: M.HalfNormal(t([1.0])).log_prob(t([-1.0])),
        r"support \(GreaterThanEq\(lower_bound=0.0\)\)",
    ),
    "value.not_tensor": (
        lambda M, t: M.Normal(0.0, 1.0).log_prob(0.5),
        r"The value argument to log_prob must be a Tensor",
    ),
    "value.event_shape": (
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0]), t(np.eye(2))).log_prob(t([0.0, 1, 2])),
        r"The right-most size of value must match event_shape: torch.Size\(\[3\]\) vs "
        r"torch.Size\(\[2\]\)\.",
    ),
    "value.batch_shape": (
        lambda M, t: M.Normal(t([0.0, 1.0]), 1.0).log_prob(t([0.0, 1.0, 2.0])),
        r"Value is not broadcastable with batch_shape\+event_shape: torch.Size\(\[3\]\) vs "
        r"torch.Size\(\[2\]\)\.",
    ),
}


def torch_or_tg_int(M, v):
    return tg.tensor(v) if M is D else torch.tensor(v)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_as_torch(name):
    make, match = BAD[name]
    _both_raise(make, ValueError, match)


def test_validation_can_be_switched_off():
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    lp = D.Exponential(tg.tensor([1.0]), validate_args=False).log_prob(tg.tensor([-1.0]))
    assert lp.item() == 1.0  # PyTorch's value too: log(rate) - rate * x
    D.Distribution.set_default_validate_args(False)
    try:
        D.Bernoulli(probs=tg.tensor([1.5]))
        d = D.Uniform(0.0, 1.0)
        np.testing.assert_array_equal(
            d.log_prob(tg.tensor([1.0, 0.5, -1.0])).numpy(), [-np.inf, 0.0, -np.inf]
        )
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Bernoulli(probs=tg.tensor([1.5]))
    with pytest.raises(ValueError, match="set_default_validate_args"):
        D.Distribution.set_default_validate_args(2)


def test_other_errors():
    with pytest.raises(TypeError, match=r"sample_shape must be a tuple"):
        D.Normal(0.0, 1.0).rsample(3)
    with pytest.raises(RuntimeError, match=r"Normal: the shapes .* loc \(2,\), scale \(3,\)"):
        D.Normal(tg.tensor([0.0, 1.0]), tg.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="Normal: loc must be"):
        D.Normal("a", 1.0)
    with pytest.raises(ValueError, match="covariance_matrix of shape \\(3, 3\\) does not match"):
        D.MultivariateNormal(tg.zeros(2), tg.eye(3))
    with pytest.raises(NotImplementedError, match="Gamma.icdf"):
        D.Gamma(1.0, 1.0).icdf(tg.tensor(0.5))


def test_kl_unregistered_pair_and_register_kl():
    with pytest.raises(NotImplementedError, match=r"kl_divergence: .*Cauchy and Normal"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))  # (unregistered in torch too)
    with pytest.raises(NotImplementedError, match="reinterpreted_batch_ndims"):
        base = D.Normal(tg.tensor([[0.0, 1.0]]), 1.0)
        D.kl_divergence(D.Independent(base, 1), D.Independent(base, 2))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(
            D.MultivariateNormal(tg.zeros(2), tg.eye(2)),
            D.MultivariateNormal(tg.zeros(3), tg.eye(3)),
        )

    class MyNormal(D.Normal):
        pass

    # a subclass pair falls back on the registered parent pair
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    np.testing.assert_allclose(
        D.kl_divergence(p, q).item(), D.kl_divergence(D.Normal(0.0, 1.0), q).item()
    )

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return tg.tensor(42.0)

    assert D.kl_divergence(p, q).item() == 42.0
    with pytest.raises(TypeError, match="register_kl"):
        D.register_kl(int, D.Normal)


def test_repr_and_constraints_match_torch():
    cases = [
        lambda M, t: M.Normal(t(1.0), 2.0),
        lambda M, t: M.Exponential(t([1.0, 2.0])),
        lambda M, t: M.Bernoulli(logits=t([1.0, 2.0])),
        lambda M, t: M.Categorical(logits=t([1.0, 2.0])),
        lambda M, t: M.MultivariateNormal(t([0.0, 1.0]), t(np.eye(2))),
        lambda M, t: M.Independent(M.Normal(t([0.0, 1.0]), 1.0), 1),
        lambda M, t: M.StudentT(t(3.0)),
        lambda M, t: M.Chi2(t(3.0)),
        lambda M, t: M.HalfNormal(t(3.0)),
        lambda M, t: M.Cauchy(t(3.0), 1.0),
        lambda M, t: M.Gamma(t(3.0), 1.0),
        lambda M, t: M.Geometric(logits=t(3.0)),
    ]
    for make in cases:
        a = make(D, lambda v: tg.tensor(np.asarray(v, float)))
        b = make(TD, lambda v: torch.tensor(np.asarray(v, float)))
        assert repr(a) == repr(b)
        assert repr(a.support) == repr(b.support)
        assert a.has_rsample == b.has_rsample
        assert a.has_enumerate_support == b.has_enumerate_support
    for name in ("positive", "real", "simplex", "unit_interval", "nonnegative_integer"):
        c, tc = getattr(D.constraints, name), getattr(TD.constraints, name)
        assert repr(c) == repr(tc)
        v = np.array([[0.2, 0.8], [-1.0, 2.0], [0.0, 1.0]])
        np.testing.assert_array_equal(c.check(tg.tensor(v)).numpy(), tc.check(torch.tensor(v)))


def test_icdf_outside_unit_interval_is_nan_as_torch():
    a = D.Normal(0.0, 1.0).icdf(tg.tensor([1.5, -0.5]))
    b = TD.Normal(0.0, 1.0).icdf(torch.tensor([1.5, -0.5], dtype=torch.float64))
    np.testing.assert_array_equal(np.isnan(a.numpy()), np.isnan(b.numpy()))


def test_gradcheck_and_transforms_on_plain_arrays():
    conc = tg.tensor([0.8, 2.0, 3.0], requires_grad=True)
    x = tg.tensor([0.2, 0.3, 0.5])
    assert tg.gradcheck(lambda c: D.Dirichlet(c).log_prob(x), (conc,))

    def f(loc, scale):
        return D.Normal(loc, scale).log_prob(tg.tensor([0.5, 1.5])).sum()

    gl, gs = tg.grad(f, argnums=(0, 1))(np.array([0.3, -1.2]), np.array([0.7, 2.0]))
    lt = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    st = torch.tensor([0.7, 2.0], dtype=torch.float64, requires_grad=True)
    TD.Normal(lt, st).log_prob(torch.tensor([0.5, 1.5], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(gl, lt.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(gs, st.grad.numpy(), rtol=1e-13)
    h = tg.hessian(lambda a: D.Gamma(a, 1.0).log_prob(tg.tensor([0.5, 1.5])).sum())(
        np.array([0.7, 2.0])
    )
    mpmath = pytest.importorskip("mpmath")
    ref = np.diag([-float(mpmath.polygamma(1, v)) for v in (0.7, 2.0)])
    np.testing.assert_allclose(h, ref, rtol=1e-14)


def test_forward_mode_and_trace():
    """jvp agrees with grad; a trace replays log_prob with validate_args=False (validation
    reads parameter values, which a trace records as guards)."""

    def f(logits):
        return D.Categorical(logits=logits).entropy().sum()

    x = np.array([0.3, -1.2, 0.1])
    _, t = tg.jvp(f, (x,), (np.array([1.0, 0.0, 0.0]),))
    np.testing.assert_allclose(t, tg.grad(f)(x)[0], rtol=1e-13)

    def g(loc):
        lp = D.Normal(loc, 2.0, validate_args=False).log_prob(tg.tensor([0.5, 1.5]))
        return lp.sum()

    tr = tg.trace(g, np.array([0.3, -1.2]))
    y = np.array([1.0, 2.0])
    np.testing.assert_allclose(tr(y), g(tg.tensor(y)).item(), rtol=1e-14)
    np.testing.assert_allclose(tr.grad(y), (np.array([0.5, 1.5]) - y) / 4, rtol=1e-14)
