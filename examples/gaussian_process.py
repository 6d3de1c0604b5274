"""Fit a Gaussian process's kernel hyperparameters by maximising the marginal likelihood.

The negative log marginal likelihood is plain NumPy code (a Cholesky factor, two triangular
solves, a log-determinant); ``tg.value_and_grad`` gives SciPy's L-BFGS-B the exact gradient
with respect to the log length-scale, log signal variance and log noise variance.  The data
are noisy samples of a sine; the fit should find a length-scale near 1 and the noise level
the data were made with.

    python examples/gaussian_process.py

Needs SciPy, in the ``examples`` extra: ``pip install -e ".[examples]"``.
"""

import sys

import numpy as np

import tapegrad as tg

try:
    from scipy.optimize import minimize
except ImportError as error:
    sys.exit(
        f'{error}: this example needs SciPy, in the examples extra: pip install -e ".[examples]"'
    )


def make_data(n=40, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    y = np.sin(x) + noise * rng.standard_normal(n)
    return x, y


def neg_log_marginal_likelihood(params, x, y):
    """-log p(y | x, params) of a GP with a squared-exponential kernel plus white noise."""
    log_length, log_signal, log_noise = params[0], params[1], params[2]
    d2 = (x[:, None] - x[None, :]) ** 2
    K = np.exp(log_signal) * np.exp(-0.5 * d2 / np.exp(2.0 * log_length))
    K = K + np.exp(log_noise) * np.eye(x.size)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))  # K^-1 y through the factor
    return 0.5 * y @ alpha + np.sum(np.log(np.diagonal(L))) + 0.5 * x.size * np.log(2 * np.pi)


def finite_difference_gradient(f, p, eps=1e-6):
    g = np.zeros_like(p)
    for i in range(p.size):
        e = np.zeros_like(p)
        e[i] = eps
        g[i] = (f(p + e) - f(p - e)) / (2 * eps)
    return g


def main(verbose=True):
    x, y = make_data()
    objective = tg.value_and_grad(neg_log_marginal_likelihood)
    p0 = np.array([0.5, 0.0, -1.0])  # log length-scale, log variance, log noise

    # the gradient, checked once against central differences
    _, g = objective(p0, x, y)
    g_fd = finite_difference_gradient(lambda p: neg_log_marginal_likelihood(p, x, y), p0)
    err = float(np.max(np.abs(g - g_fd)) / np.max(np.abs(g_fd)))
    assert err < 1e-6, f"gradient disagrees with finite differences: {err:.2e}"

    res = minimize(objective, p0, args=(x, y), jac=True, method="L-BFGS-B")
    length, signal, noise = np.exp(res.x[0]), np.exp(res.x[1]), np.exp(0.5 * res.x[2])
    if verbose:
        print(f"gradient vs finite differences: relative error {err:.1e} (ok)")
        print(f"{res.message} after {res.nit} iterations; -log likelihood {res.fun:.4f}")
        print(
            f"length-scale {length:.3f}, signal variance {signal:.3f}, "
            f"noise std {noise:.3f} (data made with 0.1)"
        )
    return res, err


if __name__ == "__main__":
    main()
