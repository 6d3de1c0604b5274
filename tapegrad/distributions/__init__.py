"""PyTorch's ``torch.distributions`` on tapegrad Tensors: ``import tapegrad.distributions as
D``.

Each distribution takes its parameters as floats, NumPy arrays or Tensors (float64),
broadcast together as PyTorch broadcasts them; ``log_prob``, ``entropy``, ``cdf`` /
``icdf``, the moments, ``rsample`` and ``kl_divergence`` are compositions of tapegrad's
Tensor operations, so gradients of every order reach the parameters.  Draws use tapegrad's
generator (``tg.manual_seed``), so samples are not PyTorch's numbers.  Arguments are
validated by default, with PyTorch's messages (``Distribution.set_default_validate_args``).

Gamma's ``rsample`` is reparameterized implicitly (first order in the concentration); Beta
and Dirichlet have no reparameterized ``rsample`` here (NotImplementedError: use
``sample()`` with a score-function estimator).  Validation reads parameter values: inside
``tg.trace`` give ``validate_args=False``.
"""

from . import constraints
from .distribution import Distribution
from .extra import Cauchy, Chi2, Geometric, HalfNormal, StudentT
from .kl import kl_divergence, register_kl
from .multivariate import (
    Categorical,
    Dirichlet,
    Independent,
    MultivariateNormal,
    OneHotCategorical,
)
from .univariate import (
    Bernoulli,
    Beta,
    Binomial,
    Exponential,
    Gamma,
    Laplace,
    LogNormal,
    Normal,
    Poisson,
    Uniform,
)

__all__ = [
    "StudentT",
    "HalfNormal",
    "Geometric",
    "Chi2",
    "Cauchy",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "Gamma",
    "Independent",
    "Laplace",
    "LogNormal",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Poisson",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
