"""A hunt through ``tapegrad.distributions`` as a demanding PyTorch user: edge values against
``torch.distributions`` 2.13 (float64, through ``tests/torch_programs.py``: values, shapes and
first derivatives of every float output), second derivatives (create_graph) and the
functional transforms (``tg.grad``, ``tg.hessian``, ``tg.jvp``) against ``torch.func``.

Hunted: values on the support's boundary (0 for Exponential / Gamma / Poisson, 0 and 1 for
Beta / Bernoulli, +-inf), probs exactly 0 or 1, logits +-inf and +-1e3, Categorical with
-inf logits, batched and broadcast parameters, ``expand``, ``Independent`` over several dims,
MultivariateNormal batch broadcasting and near-singular covariances, int values of discrete
distributions, validation errors and messages, ``enumerate_support(expand=False)``, sample
shapes, KL divergence for every pair PyTorch registers (equal distributions give 0,
broadcasting, Independent-Independent), pickling / deepcopy / repr, subclassing with
``register_kl``, and ``tg.trace`` replays at far-away parameters (the right number or
RetraceRequired, never a stale one).

Where PyTorch is wrong the reference is a closed form, SciPy or mpmath (said at each test):
its lgamma of int64 values is float32 (Poisson / Binomial log_prob of int counts off by
1e-8), its trigamma is good to ~4e-10 only (gradients of digamma-based entropies and KLs),
its Normal / Cauchy / HalfNormal / Exponential tails lose their relative precision, its
Geometric entropy in the logits is off for |logits| >= 30, its Laplace cdf / icdf have a zero
derivative at the median (sign(0)), its Poisson gradient at rate 0 is nan, its Categorical
KL gradient with -inf logits is nan, its Bernoulli KL fails to broadcast a (3, 1) batch
against (2,) and its always-infinite KLs ignore q's batch shape.
"""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
TD = torch.distributions

import tapegrad as tg  # noqa: E402
import tapegrad.distributions as D  # noqa: E402
from tests.torch_programs import _compare  # noqa: E402

INF = math.inf


def _M(L):
    return L.m.distributions


def _t(x):
    return tg.tensor(np.asarray(x, dtype=float))


def _tt(x):
    return torch.tensor(np.asarray(x, dtype=float), dtype=torch.float64)


# ---- values and first derivatives against torch ------------------------------------------------

S2 = [[2.0, 0.5], [0.5, 1.0]]
TRIL = [[[1.0, 0.0], [0.5, 2.0]], [[3.0, 0.0], [0.1, 0.2]]]

PROGRAMS = {
    "bernoulli_logits_inf": lambda L: (
        _M(L)
        .Bernoulli(logits=L.T([INF, -INF, 1e3, -1e3]))
        .log_prob(L.T([1.0, 0.0, 1.0, 0.0], rg=False))
    ),
    "bernoulli_logits_1e3_wrong_value": lambda L: (
        _M(L).Bernoulli(logits=L.T([1e3, -1e3])).log_prob(L.T([0.0, 1.0], rg=False))
    ),
    "bernoulli_entropy_extremes": lambda L: (
        _M(L).Bernoulli(logits=L.T([INF, -INF, 1e3, -1e3, 0.0])).entropy()
    ),
    "bernoulli_probs_0_1": lambda L: (
        _M(L)
        .Bernoulli(probs=L.T([0.0, 1.0, 0.0, 1.0]))
        .log_prob(L.T([0.0, 1.0, 1.0, 0.0], rg=False))
    ),
    "bernoulli_probs_0_1_entropy": lambda L: _M(L).Bernoulli(probs=L.T([0.0, 1.0, 0.3])).entropy(),
    "bernoulli_mode_perplexity": lambda L: [
        _M(L).Bernoulli(probs=L.T([0.2, 0.5, 0.7])).mode,
        _M(L).Bernoulli(probs=L.T([0.2, 0.5, 0.7])).perplexity(),
    ],
    "bernoulli_enumerate": lambda L: (
        _M(L).Bernoulli(probs=L.T([[0.2, 0.5, 0.7]])).enumerate_support(expand=False)
    ),
    "poisson_huge": lambda L: _M(L).Poisson(L.T([1e10])).log_prob(L.T([1e10], rg=False)),
    "exponential_edges": lambda L: (
        _M(L).Exponential(L.T([1.0, 2.0])).log_prob(L.T([0.0, INF], rg=False))
    ),
    "exponential_icdf": lambda L: _M(L).Exponential(L.T([1.0, 2.0])).icdf(L.T([0.0, 0.5])),
    "gamma_at_zero": lambda L: (
        _M(L)
        .Gamma(L.T([1.0, 2.0, 0.5]), L.T([1.0, 3.0, 2.0]))
        .log_prob(L.T([0.0, 0.0, 0.0], rg=False))
    ),
    "gamma_entropy_extreme": lambda L: _M(L).Gamma(L.T([1e-3, 1e6]), L.T([1.0, 1e-3])).entropy(),
    "beta_at_0_1": lambda L: (
        _M(L)
        .Beta(L.T([1.0, 2.0, 1.0, 3.0, 0.5, 2.0]), L.T([1.0, 1.0, 2.0, 2.0, 1.0, 0.5]))
        .log_prob(L.T([0.0, 1.0, 1.0, 0.0, 0.0, 1.0], rg=False))
    ),
    "beta_mode": lambda L: (
        _M(L).Beta(L.T([0.5, 2.0, 1.0, 0.5, 1.0, 3.0]), L.T([0.5, 0.5, 1.0, 2.0, 3.0, 1.0])).mode
    ),
    "beta_variance": lambda L: (
        _M(L).Beta(L.T([0.5, 2.0, 1e-3, 1e4]), L.T([0.5, 0.5, 1.0, 1e4])).variance
    ),
    "normal_inf_values": lambda L: (
        _M(L).Normal(L.T([0.0]), L.T([1.0])).log_prob(L.T([INF, -INF], rg=False))
    ),
    "laplace_off_loc": lambda L: [
        _M(L).Laplace(L.T([0.0, 1.0]), L.T([1.0, 2.0])).cdf(L.T([-3.0, 4.0])),
        _M(L).Laplace(L.T([0.0, 1.0]), L.T([1.0, 2.0])).icdf(L.T([0.75, 0.25])),
        _M(L).Laplace(L.T([0.0, 1.0]), L.T([1.0, 2.0])).log_prob(L.T([0.0, 1.0])),
    ],
    "lognormal_edges_novalidate": lambda L: [
        _M(L)
        .LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0]), validate_args=False)
        .log_prob(L.T([0.0, INF], rg=False)),
        _M(L)
        .LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0]), validate_args=False)
        .cdf(L.T([0.0, INF], rg=False)),
    ],
    "lognormal_moments": lambda L: [
        _M(L).LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0])).mean,
        _M(L).LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0])).mode,
        _M(L).LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0])).variance,
        _M(L).LogNormal(L.T([0.0, 1.0]), L.T([1.0, 2.0])).entropy(),
    ],
    "uniform_edges_novalidate": lambda L: [
        _M(L)
        .Uniform(L.T([0.0, 1.0]), L.T([1.0, 2.0]), validate_args=False)
        .log_prob(L.T([0.0, 2.0])),
        _M(L).Uniform(L.T([0.0, 1.0]), L.T([1.0, 2.0]), validate_args=False).cdf(L.T([-1.0, 1.5])),
    ],
    "uniform_mode_attached": lambda L: _M(L).Uniform(L.T([0.0, 1.0]), L.T([1.0, 2.0])).mode,
    "binomial_probs_0_1": lambda L: (
        _M(L)
        .Binomial(L.T([5.0, 5.0, 5.0, 0.0], rg=False), probs=L.T([0.0, 1.0, 0.3, 0.5]))
        .log_prob(L.T([0.0, 5.0, 2.0, 0.0], rg=False))
    ),
    "binomial_logits_inf": lambda L: (
        _M(L)
        .Binomial(5, logits=L.T([-INF, INF, 1e3, -1e3]))
        .log_prob(L.T([0.0, 5.0, 5.0, 0.0], rg=False))
    ),
    "binomial_entropy": lambda L: _M(L).Binomial(5, probs=L.T([[0.2, 0.5], [0.0, 1.0]])).entropy(),
    "binomial_entropy_logits": lambda L: _M(L).Binomial(4, logits=L.T([1e3, -1e3, 0.0])).entropy(),
    "binomial_mode_enumerate": lambda L: [
        _M(L).Binomial(5, probs=L.T([0.0, 1.0, 0.5, 0.99])).mode,
        _M(L).Binomial(3, probs=L.T([0.2, 0.5])).enumerate_support(expand=False),
    ],
    "geometric_probs_1": lambda L: [
        _M(L).Geometric(probs=L.T([1.0, 0.5, 1.0])).log_prob(L.T([0.0, 3.0, 2.0], rg=False)),
        _M(L).Geometric(probs=L.T([1.0, 0.5])).entropy(),
    ],
    "cauchy_infinities": lambda L: [
        _M(L).Cauchy(L.T([0.0, 1.0]), L.T([1.0, 2.0])).cdf(L.T([-INF, 1e300])),
        _M(L).Cauchy(L.T([0.0, 1.0]), L.T([1.0, 2.0])).icdf(L.T([0.0, 1.0])),
    ],
    "halfnormal_all": lambda L: [
        _M(L).HalfNormal(L.T([1.0, 2.0])).log_prob(L.T([0.0, 1.0])),
        _M(L).HalfNormal(L.T([1.0, 2.0])).cdf(L.T([0.0, 1.0])),
        _M(L).HalfNormal(L.T([1.0, 2.0])).icdf(L.T([0.0, 0.3])),
        _M(L).HalfNormal(L.T([1.0, 2.0])).entropy(),
        _M(L).HalfNormal(L.T([1.0, 2.0]), validate_args=False).log_prob(L.T([-1.0, 1.0])),
    ],
    "studentt_variance_df_1_2": lambda L: [
        _M(L).StudentT(L.T([1.0, 2.0, 0.5])).variance,
        _M(L).StudentT(L.T([1.0, 2.0, 0.5])).mean,
    ],
    "categorical_neginf_logits": lambda L: [
        _M(L).Categorical(logits=L.T([[0.0, -INF, 1.0], [2.0, 1.0, -INF]])).log_prob(L.I([0, 1])),
        _M(L).Categorical(logits=L.T([[0.0, -INF, 1.0], [2.0, 1.0, -INF]])).entropy(),
    ],
    "categorical_probs_zero": lambda L: (
        _M(L).Categorical(probs=L.T([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])).entropy()
    ),
    "categorical_unnormalized": lambda L: [
        _M(L).Categorical(probs=L.T([[1.0, 2.0, 3.0]])).log_prob(L.I([[2]])),
        _M(L).Categorical(probs=L.T([[1.0, 2.0, 3.0]])).probs,
        _M(L).Categorical(probs=L.T([[1.0, 2.0, 3.0]])).logits,
        _M(L).Categorical(logits=L.T([[1.0, 2.0, 3.0]])).probs,
    ],
    "categorical_broadcast_values": lambda L: (
        _M(L)
        .Categorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]))
        .log_prob(L.I([[0], [2], [1]]))
    ),
    "categorical_float_values_mode_enumerate": lambda L: [
        _M(L)
        .Categorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]))
        .log_prob(L.T([0.0, 2.0], rg=False)),
        _M(L).Categorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])).mode,
        _M(L)
        .Categorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]))
        .enumerate_support(expand=False),
        _M(L).Categorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])).enumerate_support(),
    ],
    "onehot": lambda L: [
        _M(L)
        .OneHotCategorical(logits=L.T([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]))
        .log_prob(L.T([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], rg=False)),
        _M(L).OneHotCategorical(logits=L.T([[1.0, 2.0, 3.0]])).enumerate_support(expand=False),
        _M(L).OneHotCategorical(logits=L.T([[1.0, 2.0, 3.0]])).mode,
        _M(L).OneHotCategorical(logits=L.T([[1.0, 2.0, 3.0]])).variance,
    ],
    "dirichlet_boundary": lambda L: (
        _M(L)
        .Dirichlet(L.T([[1.0, 2.0, 3.0], [0.5, 0.5, 1.0]]))
        .log_prob(L.T([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]], rg=False))
    ),
    "mvn_precision_attrs": lambda L: [
        _M(L)
        .MultivariateNormal(L.T([1.0, 2.0]), precision_matrix=L.T(S2))
        .log_prob(L.T([[0.0, 0.0], [1.0, 3.0]], rg=False)),
        _M(L).MultivariateNormal(L.T([1.0, 2.0]), precision_matrix=L.T(S2)).covariance_matrix,
        _M(L).MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2)).precision_matrix,
        _M(L).MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2)).scale_tril,
    ],
    "mvn_broadcast_loc_tril": lambda L: [
        _M(L)
        .MultivariateNormal(L.T([[1.0, 2.0], [0.0, 0.0], [3.0, 1.0]]), scale_tril=L.T(TRIL[:1]))
        .log_prob(L.T([[0.0, 0.0]], rg=False)),
        _M(L)
        .MultivariateNormal(L.T([1.0, 2.0]), scale_tril=L.T(TRIL))
        .log_prob(L.T([[[0.0, 0.0]], [[1.0, 1.0]]], rg=False)),
        _M(L).MultivariateNormal(L.T([1.0, 2.0]), scale_tril=L.T(TRIL)).entropy(),
        _M(L).MultivariateNormal(L.T([1.0, 2.0]), scale_tril=L.T(TRIL)).variance,
    ],
    "independent_two_dims": lambda L: [
        _M(L)
        .Independent(_M(L).Normal(L.T(np.zeros((2, 3, 4))), L.T(np.ones((3, 4)))), 2)
        .log_prob(L.T(np.arange(24.0).reshape(2, 3, 4) / 10, rg=False)),
        _M(L)
        .Independent(_M(L).Normal(L.T(np.zeros((2, 3, 4))), L.T(np.ones((3, 4)))), 2)
        .entropy(),
        _M(L).Independent(_M(L).Normal(L.T(np.zeros((2, 3, 4))), 1.0), 2).event_shape,
    ],
    "independent_of_mvn": lambda L: (
        _M(L)
        .Independent(_M(L).MultivariateNormal(L.T(np.zeros((3, 2))), scale_tril=L.T(np.eye(2))), 1)
        .log_prob(L.T(np.ones((3, 2)), rg=False))
    ),
    "expand_all": lambda L: [
        _M(L)
        .Normal(L.T([0.0, 1.0]), L.T([1.0, 2.0]))
        .expand((3, 2))
        .log_prob(L.T([[0.5, 1.0]] * 3, rg=False)),
        _M(L).Normal(L.T([0.0, 1.0]), L.T([1.0, 2.0])).expand((3, 2)).entropy(),
        _M(L).Categorical(logits=L.T([0.0, 1.0, 2.0])).expand((4,)).log_prob(L.I([0, 1, 2, 0])),
        _M(L)
        .MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2))
        .expand((2, 3))
        .log_prob(L.T([[0.0, 0.0]], rg=False)),
        _M(L)
        .Independent(_M(L).Normal(L.T([0.0, 1.0]), 1.0), 1)
        .expand((3,))
        .log_prob(L.T([[0.0, 0.0]] * 3, rg=False)),
        _M(L).Independent(_M(L).Normal(L.T([0.0, 1.0]), 1.0), 1).expand((3,)).batch_shape,
        _M(L).Binomial(4, probs=L.T([0.3])).expand((3,)).log_prob(L.T([0.0, 1.0, 4.0], rg=False)),
        _M(L)
        .OneHotCategorical(logits=L.T([0.0, 1.0, 2.0]))
        .expand((2,))
        .log_prob(L.T([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], rg=False)),
    ],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_torch(name):
    _compare(PROGRAMS[name])


def test_mvn_near_singular_covariance():
    cov = [[1.0, 1 - 1e-9], [1 - 1e-9, 1.0]]
    _compare(
        lambda L: (
            _M(L)
            .MultivariateNormal(L.T([0.0, 0.0]), covariance_matrix=L.T(cov))
            .log_prob(L.T([[1.0, 1.0], [1e-5, -1e-5]], rg=False))
        ),
        rtol=1e-6,
    )


# ---- KL divergence ----------------------------------------------------------------------------


def _pair(p_make, q_make):
    return lambda L: _M(L).kl_divergence(p_make(L), q_make(L))


KL_PROGRAMS = {
    "normal_broadcast": _pair(
        lambda L: _M(L).Normal(L.T([0.0, 1.0]), L.T([1.0, 2.0])),
        lambda L: _M(L).Normal(L.T([[0.0], [3.0]]), L.T([[1.0], [0.5]])),
    ),
    "normal_equal": _pair(
        lambda L: _M(L).Normal(L.T([0.0, 1.0]), L.T([1.0, 2.0])),
        lambda L: _M(L).Normal(L.T([0.0, 1.0]), L.T([1.0, 2.0])),
    ),
    # was nan where p = q = 0 or p = q = 1 (0 * inf)
    "bernoulli_probs_0_1": _pair(
        lambda L: _M(L).Bernoulli(probs=L.T([0.0, 1.0, 0.3, 0.3, 0.0, 1.0])),
        lambda L: _M(L).Bernoulli(probs=L.T([0.5, 0.5, 0.0, 1.0, 0.0, 1.0])),
    ),
    "bernoulli_logits_1e3": _pair(
        lambda L: _M(L).Bernoulli(logits=L.T([1e3, -1e3, 0.3, 50.0])),
        lambda L: _M(L).Bernoulli(logits=L.T([-1e3, 1e3, 2.0, -50.0])),
    ),
    "categorical": _pair(
        lambda L: _M(L).Categorical(probs=L.T([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])),
        lambda L: _M(L).Categorical(probs=L.T([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])),
    ),
    "categorical_broadcast": _pair(
        lambda L: _M(L).Categorical(logits=L.T([[0.0, 0.0, 1.0]])),
        lambda L: _M(L).Categorical(logits=L.T([[0.0, 5.0, 1.0], [1.0, 2.0, 3.0]])),
    ),
    "onehot_onehot": _pair(
        lambda L: _M(L).OneHotCategorical(logits=L.T([[0.0, 0.0, 1.0]])),
        lambda L: _M(L).OneHotCategorical(logits=L.T([[0.0, 5.0, 1.0], [1.0, 2.0, 3.0]])),
    ),
    "exponential": _pair(
        lambda L: _M(L).Exponential(L.T([1.0, 2.0])),
        lambda L: _M(L).Exponential(L.T([[1.0], [0.5]])),
    ),
    "uniform": _pair(
        lambda L: _M(L).Uniform(L.T([0.0, 0.0, 1.0]), L.T([1.0, 2.0, 2.0])),
        lambda L: _M(L).Uniform(L.T([-1.0, 0.5, 1.0]), L.T([3.0, 2.0, 2.0])),
    ),
    "laplace": _pair(
        lambda L: _M(L).Laplace(L.T([0.0, 1.0, 1.0]), L.T([1.0, 2.0, 2.0])),
        lambda L: _M(L).Laplace(L.T([-1.0, 0.5, 1.0]), L.T([3.0, 2.0, 2.0])),
    ),
    "mvn_broadcast": _pair(
        lambda L: _M(L).MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2)),
        lambda L: _M(L).MultivariateNormal(
            L.T([[0.0, 2.0], [1.0, 1.0]]), scale_tril=L.T([[1.0, 0.0], [0.3, 2.0]])
        ),
    ),
    "mvn_equal": _pair(
        lambda L: _M(L).MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2)),
        lambda L: _M(L).MultivariateNormal(L.T([1.0, 2.0]), covariance_matrix=L.T(S2)),
    ),
    "independent_1": _pair(
        lambda L: _M(L).Independent(_M(L).Normal(L.T([[1.0, 2.0]]), L.T([1.0, 3.0])), 1),
        lambda L: _M(L).Independent(_M(L).Normal(L.T([[0.0, 2.0], [1.0, 1.0]]), 2.0), 1),
    ),
    "independent_2": _pair(
        lambda L: _M(L).Independent(_M(L).Normal(L.T(np.zeros((2, 3))), L.T([1.0, 3.0, 2.0])), 2),
        lambda L: _M(L).Independent(_M(L).Normal(L.T(np.ones((2, 3))), 2.0), 2),
    ),
    "independent_mvn": _pair(
        lambda L: _M(L).Independent(
            _M(L).MultivariateNormal(L.T(np.zeros((3, 2))), scale_tril=L.T(np.eye(2))), 1
        ),
        lambda L: _M(L).Independent(
            _M(L).MultivariateNormal(L.T(np.ones((3, 2))), scale_tril=L.T(2 * np.eye(2))), 1
        ),
    ),
    "poisson": _pair(
        lambda L: _M(L).Poisson(L.T([2.0, 0.5, 3.0])), lambda L: _M(L).Poisson(L.T([0.5, 0.5, 1.0]))
    ),
    "binomial": _pair(
        lambda L: _M(L).Binomial(5, probs=L.T([0.3, 0.05, 0.9])),
        lambda L: _M(L).Binomial(5, probs=L.T([0.6, 0.5, 0.9])),
    ),
    "geometric": _pair(
        lambda L: _M(L).Geometric(probs=L.T([0.3, 0.9])),
        lambda L: _M(L).Geometric(probs=L.T([0.8, 0.2])),
    ),
    "halfnormal": _pair(
        lambda L: _M(L).HalfNormal(L.T([1.0, 3.0])), lambda L: _M(L).HalfNormal(L.T([2.0, 3.0]))
    ),
    "lognormal": _pair(
        lambda L: _M(L).LogNormal(L.T([0.0, 1.0]), L.T([1.0, 0.5])),
        lambda L: _M(L).LogNormal(L.T([1.0, 1.0]), L.T([0.3, 0.5])),
    ),
    "cauchy": _pair(
        lambda L: _M(L).Cauchy(L.T([0.0, 1.0]), L.T([1.0, 2.0])),
        lambda L: _M(L).Cauchy(L.T([1.0, 1.0]), L.T([3.0, 2.0])),
    ),
    "exponential_gamma": _pair(
        lambda L: _M(L).Exponential(L.T([1.3, 0.2])),
        lambda L: _M(L).Gamma(L.T([3.0, 0.5]), L.T([0.3, 2.0])),
    ),
    "gamma_exponential": _pair(
        lambda L: _M(L).Gamma(L.T([3.0, 0.5]), L.T([0.3, 2.0])),
        lambda L: _M(L).Exponential(L.T([1.3, 0.2])),
    ),
    "chi2_gamma": _pair(
        lambda L: _M(L).Chi2(L.T([3.0, 0.5])),
        lambda L: _M(L).Gamma(L.T([3.0, 0.5]), L.T([0.3, 2.0])),
    ),
    "laplace_normal": _pair(
        lambda L: _M(L).Laplace(L.T([0.3, -1.0]), L.T([1.2, 0.1])),
        lambda L: _M(L).Normal(L.T([-0.5, 2.0]), L.T([0.7, 3.0])),
    ),
    "normal_laplace": _pair(
        lambda L: _M(L).Normal(L.T([0.3, -1.0, 1.3]), L.T([1.2, 0.1, 0.5])),
        lambda L: _M(L).Laplace(L.T([1.3, 2.0, 1.3]), L.T([0.2, 3.0, 1.0])),
    ),
    "exponential_normal": _pair(
        lambda L: _M(L).Exponential(L.T([1.3, 0.2])),
        lambda L: _M(L).Normal(L.T([-0.5, 2.0]), L.T([0.7, 3.0])),
    ),
    "gamma_normal": _pair(
        lambda L: _M(L).Gamma(L.T([2.0, 0.5]), L.T([1.3, 4.0])),
        lambda L: _M(L).Normal(L.T([-0.5, 2.0]), L.T([0.7, 3.0])),
    ),
    "beta_normal_exponential_gamma": lambda L: [
        _M(L).kl_divergence(_M(L).Beta(L.T([2.0, 0.5]), L.T([3.0, 0.7])), q)
        for q in (
            _M(L).Normal(L.T([-0.5, 2.0]), L.T([0.7, 3.0])),
            _M(L).Exponential(L.T([0.3, 2.0])),
            _M(L).Gamma(L.T([3.0, 0.5]), L.T([0.3, 2.0])),
            _M(L).Chi2(L.T([1.5, 4.0])),
        )
    ],
    "beta_uniform": _pair(
        lambda L: _M(L).Beta(L.T([2.0, 0.5, 2.0]), L.T([3.0, 0.7, 1.0])),
        lambda L: _M(L).Uniform(L.T([0.0, -1.0, 0.2]), L.T([1.0, 2.0, 0.9])),
    ),
    "uniform_normal": _pair(
        lambda L: _M(L).Uniform(L.T([0.2, -3.0]), L.T([0.9, 1.0])),
        lambda L: _M(L).Normal(L.T([-0.5, 2.0]), L.T([0.7, 3.0])),
    ),
    "uniform_exponential_gamma": lambda L: [
        _M(L).kl_divergence(_M(L).Uniform(L.T([0.2, 0.0, -1.0]), L.T([0.9, 2.0, 1.0])), q)
        for q in (
            _M(L).Exponential(L.T([0.3, 2.0, 1.0])),
            _M(L).Gamma(L.T([3.0, 0.5, 1.0]), L.T([0.3, 2.0, 1.0])),
        )
    ],
    "uniform_beta": _pair(
        lambda L: _M(L).Uniform(L.T([0.2, 0.0, -1.0, 0.5]), L.T([0.9, 1.0, 0.5, 2.0])),
        lambda L: _M(L).Beta(L.T([2.5, 0.5, 2.0, 1.0]), L.T([1.0, 3.0, 2.0, 1.0])),
    ),
    "bernoulli_poisson": _pair(
        lambda L: _M(L).Bernoulli(probs=L.T([0.3, 0.0, 1.0])),
        lambda L: _M(L).Poisson(L.T([0.5, 2.0, 1.0])),
    ),
    "infinite_pairs": lambda L: (
        [
            _M(L).kl_divergence(p, q)
            for p in (
                _M(L).Normal(L.T([0.3, 1.0]), 1.2),
                _M(L).Laplace(L.T([0.3, 1.0]), 1.2),
                _M(L).Exponential(L.T([1.3])),
                _M(L).Gamma(L.T([2.0]), 1.3),
            )
            for q in (
                _M(L).Beta(L.T([2.0]), 3.0),
                _M(L).Uniform(L.T([0.0]), L.T([0.9])),
            )
        ]
        + [
            _M(L).kl_divergence(_M(L).Normal(L.T([0.3, 1.0]), 1.2), _M(L).Exponential(1.0)),
            _M(L).kl_divergence(_M(L).Laplace(L.T([0.3]), 1.2), _M(L).Gamma(2.0, 1.0)),
            _M(L).kl_divergence(_M(L).Poisson(L.T([2.0, 3.0])), _M(L).Bernoulli(0.3)),
            _M(L).kl_divergence(_M(L).Poisson(L.T([2.0])), _M(L).Binomial(4, 0.3)),
        ]
    ),
}


_DIGAMMA = {
    "beta_normal_exponential_gamma",
    "beta_uniform",
    "uniform_beta",
    "uniform_exponential_gamma",
    "chi2_gamma",
    "gamma_exponential",
    "gamma_normal",
    "kl_beta_gamma",
}


@pytest.mark.parametrize("name", sorted(KL_PROGRAMS))
def test_kl_against_torch(name):
    # (the gradients of digamma-based forms meet torch's trigamma, good to ~4e-10 only)
    _compare(KL_PROGRAMS[name], rtol=2e-8 if name in _DIGAMMA else 1e-10)


def test_kl_dirichlet_beta_gamma_values():
    _compare(
        lambda L: [
            _M(L).kl_divergence(
                _M(L).Dirichlet(L.T([[1.0, 2.0, 3.0]])),
                _M(L).Dirichlet(L.T([[0.5, 2.0, 1.0], [1.0, 2.0, 3.0]])),
            ),
            _M(L).kl_divergence(
                _M(L).Beta(L.T([1.0, 2.0]), L.T([3.0, 1.0])),
                _M(L).Beta(L.T([1.0, 0.5]), L.T([3.0, 4.0])),
            ),
            _M(L).kl_divergence(
                _M(L).Gamma(L.T([1.0, 2.0]), L.T([3.0, 1.0])),
                _M(L).Gamma(L.T([1.0, 0.5]), L.T([3.0, 4.0])),
            ),
        ],
        rtol=5e-9,
    )


def test_kl_categorical_neginf_logits():
    """Values as torch (inf where p has mass q lacks; a finite KL where only p has -inf
    logits, torch's too); was nan.  The gradient where the KL is finite is the central
    difference's (torch gives nan)."""
    _compare(
        lambda L: _M(L).kl_divergence(
            _M(L).Categorical(
                logits=L.T([[-INF, 0.0, 1.0], [0.0, 1.0, 2.0], [-INF, 0.0, 1.0]], rg=False)
            ),
            _M(L).Categorical(
                logits=L.T([[0.0, -INF, 1.0], [0.0, 1.0, 2.0], [0.0, 5.0, 1.0]], rg=False)
            ),
        )
    )

    def kl(a):
        p = D.Categorical(logits=_t([-INF, a[0], a[1]]))
        return float(D.kl_divergence(p, D.Categorical(logits=_t([0.0, 5.0, 1.0]))).numpy())

    lg = tg.tensor([-INF, 0.0, 1.0], requires_grad=True)
    p = D.Categorical(logits=lg)
    (g,) = tg.autograd.grad(D.kl_divergence(p, D.Categorical(logits=_t([0.0, 5.0, 1.0]))), lg)
    a, h = np.array([0.0, 1.0]), 1e-6
    fd = [(kl(a + h * e) - kl(a - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g.numpy(), [0.0, *fd], rtol=1e-7)


def test_kl_bernoulli_broadcast_closed_form():
    """torch raises an IndexError broadcasting (2,) against (3, 1); the closed form."""
    p = np.array([0.2, 0.3])
    q = np.array([[0.5], [0.1], [0.9]])
    ref = p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))
    got = D.kl_divergence(D.Bernoulli(probs=_t(p)), D.Bernoulli(probs=_t(q)))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)


def test_kl_infinite_pairs_broadcast():
    """The infinite KLs take the broadcast batch shape (torch's takes p's only)."""
    kl = D.kl_divergence(D.Normal(_t([0.3, 1.0]), 1.2), D.Uniform(0.0, _t([[0.9], [2.0]])))
    assert kl.shape == (2, 2) and np.isinf(kl.numpy()).all()
    kl = D.kl_divergence(D.Poisson(_t(2.0)), D.Bernoulli(_t([0.3, 0.4])))
    assert kl.shape == (2,) and np.isinf(kl.numpy()).all()


def test_kl_binomial_counts():
    n = D.kl_divergence(D.Binomial(5, probs=_t([0.3])), D.Binomial(4, probs=_t([0.3])))
    assert np.isinf(n.numpy()).all()
    with pytest.raises(NotImplementedError, match="total_count"):
        D.kl_divergence(D.Binomial(3, probs=_t([0.3])), D.Binomial(4, probs=_t([0.3])))


def test_kl_shape_mismatch_messages():
    """torch raises a bare size mismatch from inside; these name kl_divergence."""
    with pytest.raises(RuntimeError, match=r"kl_divergence: the batch shapes \(2,\) and \(3,\)"):
        D.kl_divergence(D.Normal(_t([0.0, 1.0]), 1.0), D.Normal(_t([0.0, 1.0, 2.0]), 1.0))
    with pytest.raises(ValueError, match="kl_divergence: Categorical and Categorical with diff"):
        D.kl_divergence(D.Categorical(logits=_t([0.0, 1.0])), D.Categorical(logits=_t([0, 1, 2.0])))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(D.Dirichlet(_t([1.0, 2.0])), D.Dirichlet(_t([1.0, 2.0, 3.0])))


def test_kl_unregistered_pair_message():
    with pytest.raises(NotImplementedError, match=r"register_kl\(Independent, Normal\)"):
        D.kl_divergence(
            D.Independent(D.Normal(_t([0.0, 1.0]), 1.0), 1), D.Normal(_t([0.0, 1.0]), 1.0)
        )


# ---- where torch is wrong: closed forms, SciPy, mpmath -----------------------------------------


def test_poisson_binomial_int_counts_scipy():
    """torch's lgamma of int64 counts is float32 (log_prob off by 2e-8); SciPy's logpmf."""
    stats = pytest.importorskip("scipy.stats")
    k = np.array([0, 3, 7])
    got = D.Poisson(_t([1.0, 2.0, 5.5])).log_prob(tg.tensor(k)).numpy()
    np.testing.assert_allclose(got, stats.poisson.logpmf(k, [1.0, 2.0, 5.5]), rtol=1e-14)
    got = D.Binomial(9, probs=_t([0.3, 0.5, 0.9])).log_prob(tg.tensor(k)).numpy()
    np.testing.assert_allclose(got, stats.binom.logpmf(k, 9, [0.3, 0.5, 0.9]), rtol=1e-13)
    got = D.Bernoulli(probs=_t([0.2, 0.7])).log_prob(tg.tensor([0, 1])).numpy()
    np.testing.assert_allclose(got, np.log([0.8, 0.7]), rtol=1e-14)


def test_poisson_gradient_at_rate_zero():
    """d/drate log P(k=0) = -1 at rate 0 (torch: nan); -inf for k = 1 as torch."""
    r = tg.tensor([0.0, 0.0], requires_grad=True)
    D.Poisson(r).log_prob(_t([0.0, 1.0])).sum().backward()
    assert r.grad.numpy()[0] == -1.0 and r.grad.numpy()[1] == np.inf


def test_tails_scipy():
    """Lower tails keep their relative precision (torch: 0 for Normal.cdf(-10), -inf for
    Normal.icdf(1e-20), 1e-6 relative error for HalfNormal.cdf(1e-10))."""
    stats = pytest.importorskip("scipy.stats")
    x = np.array([-40.0, -10.0, -5.0, 0.0, 2.0, INF, -INF])
    np.testing.assert_allclose(D.Normal(0.0, 1.0).cdf(_t(x)).numpy(), stats.norm.cdf(x), rtol=1e-13)
    p = np.array([1e-300, 1e-20, 1e-10, 0.3, 0.5, 0.9, 0.0, 1.0])
    np.testing.assert_allclose(
        D.Normal(1.0, 2.0).icdf(_t(p)).numpy(), stats.norm.ppf(p, 1.0, 2.0), rtol=1e-13
    )
    x = np.array([1e-10, 1e-3, 1.0, 30.0])
    np.testing.assert_allclose(
        D.HalfNormal(2.0).cdf(_t(x)).numpy(), stats.halfnorm.cdf(x, scale=2.0), rtol=1e-14
    )
    p = np.array([1e-12, 1e-3, 0.5, 0.99])  # (SciPy's halfnorm.ppf is off by 1e-4 at 1e-12)
    special = pytest.importorskip("scipy.special")
    np.testing.assert_allclose(
        D.HalfNormal(2.0).icdf(_t(p)).numpy(), 2 * np.sqrt(2) * special.erfinv(p), rtol=1e-14
    )
    x = np.array([1e-20, 1e-8, 1.0])
    np.testing.assert_allclose(D.Exponential(3.0).cdf(_t(x)).numpy(), -np.expm1(-3 * x), rtol=1e-15)
    x = np.array([-1e10, -1e3, -1.0, 0.0, 5.0])
    np.testing.assert_allclose(
        D.Cauchy(1.0, 2.0).cdf(_t(x)).numpy(), stats.cauchy.cdf(x, 1.0, 2.0), rtol=1e-14
    )


def test_tail_derivatives_second_order():
    """cdf' is the density and icdf' its reciprocal, to second order, in the tails."""
    stats = pytest.importorskip("scipy.stats")
    x = tg.tensor([-10.0, -3.0, 0.5], requires_grad=True)
    (g,) = tg.autograd.grad(D.Normal(0.0, 1.0).cdf(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), stats.norm.pdf(x.numpy()), rtol=1e-13)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), -x.numpy() * stats.norm.pdf(x.numpy()), rtol=1e-13)
    p = tg.tensor([1e-20, 0.3], requires_grad=True)
    (g,) = tg.autograd.grad(D.Normal(0.0, 1.0).icdf(p).sum(), p)
    np.testing.assert_allclose(g.numpy(), 1 / stats.norm.pdf(stats.norm.ppf(p.numpy())), rtol=1e-12)


def test_laplace_cdf_icdf_derivatives_at_the_median():
    """cdf' at loc is the density 1 / (2 scale) and icdf'(1/2) its reciprocal 2 scale, to
    second order (torch: 0 and 0, through sign(0)); values as torch's everywhere."""
    x = tg.tensor([0.0, 1.0, -3.0, INF, -INF], requires_grad=True)
    loc = tg.tensor([0.0, 1.0, 0.5, 0.0, 0.0], requires_grad=True)
    d = D.Laplace(loc, 2.0)
    c = d.cdf(x)
    ref = TD.Laplace(_tt(loc.detach().numpy()), 2.0).cdf(_tt(x.detach().numpy())).numpy()
    np.testing.assert_allclose(c.detach().numpy(), ref, rtol=1e-15)
    gx, gl = tg.autograd.grad(c.sum(), [x, loc], create_graph=True)
    dens = np.exp(-np.abs(x.detach().numpy() - loc.detach().numpy()) / 2) / 4
    np.testing.assert_allclose(gx.detach().numpy(), dens, rtol=1e-15)
    np.testing.assert_allclose(gl.detach().numpy(), -dens, rtol=1e-15)
    (h,) = tg.autograd.grad(gx[2], x)  # the density's slope left of loc: dens / scale
    np.testing.assert_allclose(h.numpy()[2], dens[2] / 2, rtol=1e-15)
    p = tg.tensor([0.5, 0.1, 0.9, 0.0, 1.0], requires_grad=True)
    q = D.Laplace(1.0, 2.0).icdf(p)
    ref = TD.Laplace(1.0, 2.0).icdf(_tt(p.detach().numpy())).numpy()
    np.testing.assert_allclose(q.detach().numpy(), ref, rtol=1e-15)
    (g,) = tg.autograd.grad(q.sum(), p)
    pv = p.detach().numpy()
    np.testing.assert_allclose(g.numpy(), 2 / np.minimum(pv, 1 - pv), rtol=1e-15)


@pytest.mark.parametrize("logit", [-1e3, -40.0, -30.0, -5.0, 0.0, 30.0, 1e3])
def test_geometric_logits_mpmath(logit):
    """Entropy and log_prob in the logits (torch: 30.98 for 31.00 at -30, 0 for 41 at -40,
    nan at -1e3 and log_prob -inf for -1000 at -1e3)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def entropy(t):  # softplus(-t) + e^-t softplus(t), exact in mpmath at any logit
        return mp.log1p(mp.exp(-t)) + mp.exp(-t) * mp.log1p(mp.exp(t))

    t = mp.mpf(logit)
    h_ref = entropy(t)
    lp_ref = -3 * mp.log1p(mp.exp(t)) - mp.log1p(mp.exp(-t))
    lg = tg.tensor(logit, requires_grad=True)
    d = D.Geometric(logits=lg)
    h = d.entropy()
    np.testing.assert_allclose(float(h.numpy()), float(h_ref), rtol=1e-13, atol=1e-300)
    lp = d.log_prob(_t(3.0))
    np.testing.assert_allclose(float(lp.numpy()), float(lp_ref), rtol=1e-13)
    (g,) = tg.autograd.grad(h, lg)
    dh = mp.diff(entropy, t)
    np.testing.assert_allclose(float(g.numpy()), float(dh), rtol=1e-8, atol=1e-300)


def test_trigamma_based_gradients_mpmath():
    """Gradients of Beta / StudentT entropies and the Dirichlet KL go through trigamma:
    exact to ~1e-15 here (torch's polygamma(1) is off by 4e-10)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30

    def beta_h(a, b):
        return (
            mp.loggamma(a)
            + mp.loggamma(b)
            - mp.loggamma(a + b)
            - (a - 1) * mp.digamma(a)
            - (b - 1) * mp.digamma(b)
            + (a + b - 2) * mp.digamma(a + b)
        )

    a = tg.tensor([2.0, 0.5], requires_grad=True)
    b = tg.tensor([0.5, 3.0], requires_grad=True)
    ga, gb = tg.autograd.grad(D.Beta(a, b).entropy().sum(), [a, b])
    for i, (ai, bi) in enumerate([(2.0, 0.5), (0.5, 3.0)]):
        ra = mp.diff(lambda t, bi=bi: beta_h(t, mp.mpf(bi)), mp.mpf(ai))
        rb = mp.diff(lambda t, ai=ai: beta_h(mp.mpf(ai), t), mp.mpf(bi))
        np.testing.assert_allclose(
            [ga.numpy()[i], gb.numpy()[i]], [float(ra), float(rb)], rtol=1e-12
        )

    def t_h(df):
        return (
            (df + 1) / 2 * (mp.digamma((df + 1) / 2) - mp.digamma(df / 2))
            + mp.log(df) / 2
            + mp.log(mp.beta(df / 2, mp.mpf(1) / 2))
        )

    df = tg.tensor([1.5, 3.0], requires_grad=True)
    (g,) = tg.autograd.grad(D.StudentT(df).entropy().sum(), df)
    ref = [float(mp.diff(t_h, mp.mpf(v))) for v in (1.5, 3.0)]
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-12)


def test_gamma_rsample_implicit_gradient_mpmath():
    """d draw / d concentration at a fixed draw x is -(dP/da) / (dP/dx) (torch's own
    approximation is off by 5e-5)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    pytest.importorskip("scipy")
    for a0 in (0.1, 2.5, 50.0):
        a = tg.tensor([a0, a0], requires_grad=True)
        tg.manual_seed(3)
        x = D.Gamma(a, 2.0).rsample()
        (g,) = tg.autograd.grad(x.sum(), a)
        for xi, gi in zip(2 * x.detach().numpy(), g.numpy(), strict=True):
            cdf = lambda t, xi=xi: mp.gammainc(t, 0, mp.mpf(xi), regularized=True)  # noqa: E731
            dens = mp.exp((a0 - 1) * mp.log(xi) - xi - mp.loggamma(a0))
            ref = -mp.diff(cdf, mp.mpf(a0)) / dens / 2
            np.testing.assert_allclose(gi, float(ref), rtol=1e-9)


def test_gamma_cdf_gradient_in_concentration():
    """torch has no derivative of igamma in its first argument; central differences."""
    pytest.importorskip("scipy")

    def f(c):
        return D.Gamma(c[0], c[1]).cdf(_t([0.5, 2.0]))

    c = np.array([1.7, 0.8])
    jac = np.asarray(tg.jacobian(f)(c))
    h = 1e-6
    fd = np.stack(
        [(f(c + h * e).numpy() - f(c - h * e).numpy()) / (2 * h) for e in np.eye(2)], axis=-1
    )
    np.testing.assert_allclose(jac, fd, rtol=1e-7)


# ---- second derivatives and transforms against torch.func --------------------------------------

FUNCS = {
    "gamma_log_prob": (
        lambda M, a: M.Gamma(a[0], a[1]).log_prob(a[2:] * 0 + 0.5).sum(),
        [2.0, 3.0, 0.0],
    ),
    "lognormal_entropy_mean": (
        lambda M, a: M.LogNormal(a[0], a[1]).entropy() + M.LogNormal(a[0], a[1]).mean,
        [0.3, 0.7],
    ),
    "kl_mvn": (
        lambda M, a: M.kl_divergence(
            M.MultivariateNormal(a[:2], scale_tril=(a[2:6].reshape(2, 2)).tril()),
            M.MultivariateNormal(a[:2] * 0, scale_tril=(a[2:6].reshape(2, 2) * 2).tril()),
        ),
        [0.5, -1.0, 1.0, 0.0, 0.3, 2.0],
    ),
    "kl_laplace_normal": (
        lambda M, a: M.kl_divergence(M.Laplace(a[0], a[1]), M.Normal(a[2], a[3])),
        [0.3, 1.2, -0.5, 0.7],
    ),
    "kl_normal_laplace": (
        lambda M, a: M.kl_divergence(M.Normal(a[0], a[1]), M.Laplace(a[2], a[3])),
        [0.3, 1.2, -0.5, 0.7],
    ),
    "binomial_entropy": (lambda M, a: M.Binomial(6, logits=a[0]).entropy(), [0.4]),
    "normal_cdf_icdf": (
        lambda M, a: M.Normal(a[0], a[1]).cdf(a[2]) + M.Normal(a[0], a[1]).icdf(a[3]),
        [0.3, 1.5, -2.0, 0.1],
    ),
    "halfnormal_cauchy_exponential_cdf_icdf": (
        lambda M, a: (
            M.HalfNormal(a[0]).cdf(a[1])
            + M.HalfNormal(a[0]).icdf(a[2])
            + M.Cauchy(a[1], a[0]).cdf(a[3])
            + M.Exponential(a[0]).cdf(a[1])
        ),
        [1.3, 0.4, 0.2, -3.0],
    ),
    "geometric_logits_entropy_log_prob": (
        lambda M, a: (
            M.Geometric(logits=a[0]).entropy() + M.Geometric(logits=a[0]).log_prob(a[1] * 0 + 3)
        ),
        [-0.7, 0.0],
    ),
    "kl_uniform_beta": (
        lambda M, a: M.kl_divergence(M.Uniform(a[0], a[1]), M.Beta(a[2], a[3])),
        [0.2, 0.7, 2.5, 0.5],
    ),
    "kl_beta_gamma": (
        lambda M, a: M.kl_divergence(M.Beta(a[0], a[1]), M.Gamma(a[2], a[3])),
        [2.5, 0.5, 1.5, 3.0],
    ),
    "kl_bernoulli_poisson_geometric": (
        lambda M, a: (
            M.kl_divergence(M.Bernoulli(probs=a[0]), M.Poisson(a[1]))
            + M.kl_divergence(M.Geometric(probs=a[0]), M.Geometric(logits=a[1]))
        ),
        [0.3, 1.7],
    ),
    "kl_cauchy_halfnormal_lognormal": (
        lambda M, a: (
            M.kl_divergence(M.Cauchy(a[0], a[1]), M.Cauchy(a[1], a[0]))
            + M.kl_divergence(M.HalfNormal(a[0]), M.HalfNormal(a[1]))
            + M.kl_divergence(M.LogNormal(a[0], a[1]), M.LogNormal(a[1], a[0]))
        ),
        [0.6, 1.7],
    ),
    "kl_exponential_gamma_pairs": (
        lambda M, a: (
            M.kl_divergence(M.Exponential(a[0]), M.Gamma(a[1], a[0]))
            + M.kl_divergence(M.Gamma(a[1], a[0]), M.Exponential(a[1]))
        ),
        [0.6, 1.7],
    ),
    "categorical_entropy": (lambda M, a: M.Categorical(logits=a).entropy(), [0.4, -1.0, 2.0]),
    "geometric_probs_entropy": (lambda M, a: M.Geometric(probs=a[0]).entropy(), [0.3]),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_hessian_and_jvp_against_torch_func(name):
    f, x0 = FUNCS[name]
    x0 = np.asarray(x0)
    rtol = 2e-8 if name in _DIGAMMA else 1e-10  # (torch's polygamma: see _DIGAMMA)
    h = np.asarray(tg.hessian(lambda a: f(D, a))(x0))
    ht = torch.func.hessian(lambda a: f(TD, a))(_tt(x0)).numpy()
    np.testing.assert_allclose(h, ht, rtol=100 * rtol, atol=1e-12)
    v = np.linspace(0.5, -0.5, x0.size)
    out, tan = tg.jvp(lambda a: f(D, a), (x0,), (v,))
    out_t, tan_t = torch.func.jvp(lambda a: f(TD, a), (_tt(x0),), (_tt(v),))
    np.testing.assert_allclose(
        [float(np.asarray(out)), float(np.asarray(tan))], [out_t.item(), tan_t.item()], rtol=rtol
    )
    g = np.asarray(tg.grad(lambda a: f(D, a))(x0))
    np.testing.assert_allclose(g, torch.func.grad(lambda a: f(TD, a))(_tt(x0)).numpy(), rtol=rtol)


# ---- errors, shapes, pickling, repr, subclassing, trace ---------------------------------------

ERRORS = {
    "normal_negative_scale": lambda M, T: M.Normal(0.0, T(-1.0)),
    "exponential_negative_value": lambda M, T: M.Exponential(T(1.0)).log_prob(T([-1.0])),
    "bernoulli_half": lambda M, T: M.Bernoulli(T(0.3)).log_prob(T([0.5])),
    "bernoulli_both": lambda M, T: M.Bernoulli(T(0.5), logits=T(0.0)),
    "categorical_out_of_support": lambda M, T: M.Categorical(logits=T([0.0, 1.0, 2.0])).log_prob(
        T([3.0])
    ),
    "categorical_negative_probs": lambda M, T: M.Categorical(probs=T([0.5, -0.1, 0.6])),
    "value_shape": lambda M, T: M.Normal(T([0.0, 1.0]), 1.0).log_prob(T([0.0, 1.0, 2.0])),
    "independent_ndims": lambda M, T: M.Independent(M.Normal(T([0.0, 1.0]), 1.0), 2),
    "mvn_singular": lambda M, T: M.MultivariateNormal(T([0.0, 1.0]), T([[1.0, 1.0], [1.0, 1.0]])),
    "mvn_bad_tril": lambda M, T: M.MultivariateNormal(
        T([0.0, 1.0]), scale_tril=T([[1.0, 0.5], [0.0, 1.0]])
    ),
    "binomial_noninteger": lambda M, T: M.Binomial(T(2.5), T(0.5)),
    "binomial_above_count": lambda M, T: M.Binomial(3, T(0.5)).log_prob(T([4.0])),
    "binomial_entropy_inhomogeneous": lambda M, T: M.Binomial(T([3.0, 4.0]), T(0.5)).entropy(),
    "poisson_fraction": lambda M, T: M.Poisson(T(1.0)).log_prob(T([1.5])),
    "dirichlet_off_simplex": lambda M, T: M.Dirichlet(T([1.0, 2.0])).log_prob(T([0.5, 0.6])),
    "geometric_probs_zero": lambda M, T: M.Geometric(T(0.0)),
    "uniform_empty": lambda M, T: M.Uniform(T(1.0), T(1.0)),
    "independent_enumerate": lambda M, T: M.Independent(
        M.Bernoulli(T([[0.1, 0.2]])), 1
    ).enumerate_support(),
    "independent_event_shape": lambda M, T: M.Independent(
        M.Normal(T([0.0, 1.0, 2.0]), 1.0), 1
    ).log_prob(T([0.0, 1.0])),
    "independent_support": lambda M, T: M.Independent(M.Exponential(T([1.0, 1.0])), 1).log_prob(
        T([1.0, -1.0])
    ),
    "mvn_value_shape": lambda M, T: M.MultivariateNormal(T([0.0, 1.0]), T(np.eye(2))).log_prob(
        T([0.0, 1.0, 2.0])
    ),
    "mvn_value_nan": lambda M, T: M.MultivariateNormal(T([0.0, 1.0]), T(np.eye(2))).log_prob(
        T([0.0, np.nan])
    ),
    "onehot_not_onehot": lambda M, T: M.OneHotCategorical(logits=T([0.0, 1.0])).log_prob(
        T([1.0, 1.0])
    ),
    "dirichlet_zero_concentration": lambda M, T: M.Dirichlet(T([0.0, 1.0])),
    "lognormal_at_zero": lambda M, T: M.LogNormal(0.0, T(1.0)).log_prob(T([0.0])),
    "poisson_negative_rate": lambda M, T: M.Poisson(T(-1.0)),
    "cauchy_zero_scale": lambda M, T: M.Cauchy(0.0, T(0.0)),
    "kl_independent_ndims": lambda M, T: M.kl_divergence(
        M.Independent(M.Normal(T([[0.0, 1.0]]), 1.0), 1),
        M.Independent(M.Normal(T([[0.0, 1.0]]), 1.0), 2),
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_torch(name):
    errs = []
    for M, T in ((D, _t), (TD, _tt)):
        try:
            ERRORS[name](M, T)
        except Exception as e:  # noqa: BLE001
            errs.append(e)
        else:
            errs.append(None)
    e, et = errs
    assert et is not None and e is not None, (e, et)
    assert type(e) is type(et) or isinstance(e, type(et)), (e, et)
    if isinstance(et, ValueError):  # PyTorch's wording up to the printed values
        assert str(e).split(":")[0].split("(")[0] == str(et).split(":")[0].split("(")[0]


def test_sample_shapes_and_dtypes():
    tg.manual_seed(0)
    n = D.Normal(_t([0.0, 1.0]), 1.0)
    assert n.sample(()).shape == (2,)
    assert n.sample((0,)).shape == (0, 2)
    assert n.rsample((2, 3)).shape == (2, 3, 2)
    assert D.Categorical(logits=_t([[0.0, 1.0, 2.0]])).sample((2, 3)).shape == (2, 3, 1)
    assert D.Categorical(logits=_t([[0.0, 1.0, 2.0]])).sample((2,)).dtype == np.int64
    assert D.MultivariateNormal(_t([0.0, 1.0]), _t(np.eye(2))).sample((2, 3)).shape == (2, 3, 2)
    assert D.Dirichlet(_t([1.0, 1.0])).sample((0,)).shape == (0, 2)
    assert D.Gamma(_t([1.0, 1.0]), 1.0).rsample((0,)).shape == (0, 2)
    assert D.Poisson(_t([0.5])).sample((2,)).dtype == np.float64
    assert D.Binomial(4, _t([[0.5]])).expand((2, 3)).sample((5,)).shape == (5, 2, 3)
    with pytest.raises(TypeError, match=r"Normal.sample: sample_shape must be a tuple"):
        n.sample(2)


def test_pickle_deepcopy_repr():
    dists = [
        (D.Normal(_t([0.0, 1.0]), 1.0), TD.Normal(_tt([0.0, 1.0]), 1.0), _t([0.0, 0.5])),
        (
            D.MultivariateNormal(_t([0.0, 1.0]), _t(S2)),
            TD.MultivariateNormal(_tt([0.0, 1.0]), _tt(S2)),
            _t([0.0, 0.5]),
        ),
        (
            D.Categorical(logits=_t([0.0, 1.0])),
            TD.Categorical(logits=_tt([0.0, 1.0])),
            tg.tensor([1]),
        ),
        (
            D.Independent(D.Normal(_t([0.0, 1.0]), 1.0), 1),
            TD.Independent(TD.Normal(_tt([0.0, 1.0]), 1.0), 1),
            _t([0.0, 0.5]),
        ),
        (
            D.OneHotCategorical(logits=_t([0.0, 1.0])),
            TD.OneHotCategorical(logits=_tt([0.0, 1.0])),
            _t([0.0, 1.0]),
        ),
        (D.Binomial(3, _t([0.1, 0.2])), TD.Binomial(3, _tt([0.1, 0.2])), _t([1.0, 3.0])),
        (D.HalfNormal(_t([1.0, 1.0])), TD.HalfNormal(_tt([1.0, 1.0])), _t([0.3, 1.0])),
        (D.Chi2(_t([1.0, 3.0])), TD.Chi2(_tt([1.0, 3.0])), _t([0.3, 1.0])),
    ]
    for d, dt, v in dists:
        assert repr(d) == repr(dt)
        want = dt.log_prob(torch.tensor(v.numpy())).numpy()
        for e in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d)):
            np.testing.assert_allclose(e.log_prob(v).numpy(), want, rtol=1e-13)
            assert e.batch_shape == tuple(dt.batch_shape)


def test_subclass_and_register_kl():
    """A user's Distribution: validation of its arg_constraints, Independent of it, a
    register_kl for it (and a subclass pair preferred over its parent's)."""

    class Tri(D.Distribution):
        arg_constraints = {"c": D.constraints.positive}
        support = D.constraints.real

        def __init__(self, c, validate_args=None):
            self.c = c
            super().__init__(batch_shape=tuple(c.shape), validate_args=validate_args)

        def log_prob(self, value):
            if self._validate_args:
                self._validate_sample(value)
            return -(value / self.c).abs() - (2 * self.c).log()

    c = tg.tensor([1.0, 2.0], requires_grad=True)
    d = Tri(c)
    assert repr(d) == "Tri(c: torch.Size([2]))"
    with pytest.raises(ValueError, match="Expected parameter c"):
        Tri(_t([-1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="Tri.entropy"):
        d.perplexity()
    lp = D.Independent(d, 1).log_prob(_t([0.5, -1.0]))
    np.testing.assert_allclose(lp.numpy(), -0.5 - np.log(2) - 0.5 - np.log(4), rtol=1e-15)

    @D.register_kl(Tri, Tri)
    def _kl(p, q):
        return (p.c / q.c - 1).pow(2)

    kl = D.kl_divergence(D.Independent(d, 1), D.Independent(Tri(_t([3.0, 2.0])), 1))
    (g,) = tg.autograd.grad(kl, c)
    np.testing.assert_allclose(g.numpy(), [2 * (1 / 3 - 1) / 3, 0.0], rtol=1e-15)
    with pytest.raises(NotImplementedError, match=r"register_kl\(Tri, Normal\)"):
        D.kl_divergence(d, D.Normal(0.0, 1.0))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl2(p, q):
        return p.loc * 0 + 7.0

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0)).numpy()) == 7.0
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(0.0, 1.0)).numpy()) == 0.0
    assert type(MyNormal(_t([0.0]), 1.0).expand((3,))) is MyNormal


TRACED = {
    "categorical": (
        lambda lg: D.Categorical(logits=lg, validate_args=False).log_prob(tg.tensor([0, 2])).sum(),
        [0.0, 1.0, 2.0],
        [5.0, 0.0, -3.0],
    ),
    "bernoulli_entropy": (
        lambda lg: D.Bernoulli(logits=lg, validate_args=False).entropy().sum(),
        [0.0, 1.0, 2.0],
        [5.0, 0.0, -3.0],
    ),
    "mvn": (
        lambda tril: D.MultivariateNormal(
            tg.zeros(2), scale_tril=tril, validate_args=False
        ).log_prob(_t([1.0, 2.0])),
        [[1.0, 0.0], [0.5, 2.0]],
        [[3.0, 0.0], [0.1, 0.2]],
    ),
    "uniform": (
        lambda hi: D.Uniform(0.0, hi, validate_args=False).log_prob(_t([0.5, 1.5])).sum(),
        1.0,
        2.0,
    ),
    "geometric_logits_entropy": (
        lambda lg: D.Geometric(logits=lg, validate_args=False).entropy().sum(),
        [0.5],
        [-35.0],
    ),
    "kl_bernoulli": (
        lambda p: D.kl_divergence(
            D.Bernoulli(probs=p, validate_args=False), D.Bernoulli(probs=_t(0.3))
        ),
        0.5,
        0.0,
    ),
    "kl_uniform_beta": (
        lambda lo: D.kl_divergence(D.Uniform(lo, 0.9, validate_args=False), D.Beta(2.0, 3.0)),
        0.2,
        -0.5,
    ),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_trace_replay_far_away(name):
    """A replay at far-away parameters gives the eager value, or raises RetraceRequired."""
    f, x0, x1 = TRACED[name]
    tr = tg.trace(f, np.asarray(x0, dtype=float))
    want = float(f(_t(x1)).numpy())
    try:
        got = float(np.asarray(tr(np.asarray(x1, dtype=float))))
    except tg.RetraceRequired:
        return
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_trace_of_rsample_raises():
    def f(loc):
        return D.Normal(loc, 1.0, validate_args=False).rsample((3,)).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="drew random numbers"):
            tg.trace(f, np.array(0.0))


def test_trace_replays_on_the_same_sides():
    """Laplace cdf / icdf and the Geometric entropy in the logits choose their formula by a
    mask the trace guards: replays with other values on the same sides run (no retrace)."""

    def cdf(x):
        return D.Laplace(0.0, 1.0, validate_args=False).cdf(x).sum()

    def icdf(p):
        return D.Laplace(0.0, 1.0, validate_args=False).icdf(p).sum()

    def ent(t):
        return D.Geometric(logits=t, validate_args=False).entropy().sum()

    for f, x0, x1 in (
        (cdf, [-1.0, 2.0], [-3.0, 2.5]),
        (icdf, [0.2, 0.7], [0.1, 0.6]),
        (ent, [-30.0, 0.7], [-25.0, 3.0]),
    ):
        tr = tg.trace(f, np.array(x0))
        np.testing.assert_allclose(float(tr(np.array(x1))), float(f(_t(x1)).numpy()), rtol=1e-14)


def test_kl_zero_between_equal_laws_of_two_families():
    """Exponential = Gamma(1, rate), Uniform(0, 1) = Beta(1, 1), Chi2(2) = Exponential(1/2):
    the cross-family KLs of equal laws are 0, and agree with the same-family forms."""
    pairs = [
        (D.Exponential(_t([2.0, 0.5])), D.Gamma(1.0, _t([2.0, 0.5]))),
        (D.Gamma(1.0, _t([2.0, 0.5])), D.Exponential(_t([2.0, 0.5]))),
        (D.Uniform(0.0, _t([1.0])), D.Beta(1.0, _t([1.0]))),
        (D.Beta(1.0, _t([1.0])), D.Uniform(0.0, _t([1.0]))),
        (D.Chi2(_t([2.0])), D.Exponential(_t([0.5]))),
    ]
    for p, q in pairs:
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), 0.0, atol=1e-15)
    a = D.kl_divergence(D.Exponential(_t([2.0])), D.Gamma(1.0, _t([3.0])))
    b = D.kl_divergence(D.Exponential(_t([2.0])), D.Exponential(_t([3.0])))
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14)
    a = D.kl_divergence(D.Uniform(0.2, _t([0.7])), D.Beta(1.0, _t([1.0])))
    b = D.kl_divergence(D.Uniform(0.2, _t([0.7])), D.Uniform(0.0, _t([1.0])))
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14)
