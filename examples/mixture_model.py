"""Fit a two-component Gaussian mixture by maximum likelihood with ``tapegrad.optimizers.adam``.

The log-likelihood is NumPy-style code on ``tapegrad.scipy``: ``stats.norm.logpdf`` for each
component and ``special.logsumexp`` to mix them, over a dict of parameters (a pytree).
Unconstrained parameters: the weights through a log-softmax, the scales through their logs.

    python examples/mixture_model.py

Needs SciPy (``tapegrad.scipy`` calls it), in the ``examples`` extra:
``pip install -e ".[examples]"``.
"""

import sys

import numpy as np

import tapegrad as tg
from tapegrad.optimizers import adam

try:
    from tapegrad.scipy import special, stats
except ImportError as error:
    sys.exit(
        f'{error}: this example needs SciPy, in the examples extra: pip install -e ".[examples]"'
    )


def make_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    k = rng.random(n) < 0.3
    return np.where(k, rng.normal(-2.0, 0.5, n), rng.normal(1.5, 1.0, n))


def log_likelihood(params, x):
    log_w = special.log_softmax(params["logits"])
    scale = np.exp(params["log_scale"])
    comp = stats.norm.logpdf(x[:, None], params["loc"][None, :], scale[None, :])
    return np.sum(special.logsumexp(comp + log_w[None, :], axis=1))


def finite_difference_check(f, params, eps=1e-6):
    """Largest relative error of tg.grad(f) against central differences, over all leaves."""
    g = tg.grad(f)(params)
    worst = 0.0
    for key, value in params.items():
        for i in range(value.size):
            hi = {k: v.copy() for k, v in params.items()}
            lo = {k: v.copy() for k, v in params.items()}
            hi[key].flat[i] += eps
            lo[key].flat[i] -= eps
            fd = (f(hi) - f(lo)) / (2 * eps)
            worst = max(worst, abs(g[key].flat[i] - fd) / max(1.0, abs(fd)))
    return worst


def main(steps=300, verbose=True):
    x = make_data()
    params = {"logits": np.zeros(2), "loc": np.array([-1.0, 1.0]), "log_scale": np.zeros(2)}
    nll = lambda p: -log_likelihood(p, x) / x.size  # noqa: E731
    err = finite_difference_check(nll, params)
    assert err < 1e-6, f"gradient disagrees with finite differences: {err:.2e}"
    grad = tg.grad(nll)
    history = []

    def callback(p, i, g):
        if i % 100 == 0 or i == steps - 1:
            history.append((i, float(nll(p))))
            if verbose:
                print(f"step {i:4d}  mean -log p = {history[-1][1]:.4f}")

    fit = adam(lambda p, i: grad(p), params, callback=callback, num_iters=steps, step_size=0.05)
    w = np.exp(special.log_softmax(fit["logits"]))
    if verbose:
        print(f"gradient vs finite differences: relative error {err:.1e} (ok)")
        for j in np.argsort(fit["loc"]):
            print(
                f"component: weight {w[j]:.2f}, mean {fit['loc'][j]:+.2f}, "
                f"std {np.exp(fit['log_scale'][j]):.2f}"
            )
        print("data made with weights 0.30 / 0.70, means -2.00 / +1.50, stds 0.50 / 1.00")
    return fit, history, err


if __name__ == "__main__":
    main()
