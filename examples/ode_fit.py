"""Fit the parameters of an ODE to noisy observations through ``tapegrad.scipy.integrate.odeint``.

A damped oscillator y'' = -k y - c y' is observed (position only) at 30 times with noise; the
least-squares loss runs the solver on Tensors, so ``tg.value_and_grad`` differentiates through
it with respect to the stiffness k, the damping c and the initial velocity, and SciPy's L-BFGS-B
fits them.

    python examples/ode_fit.py

Needs SciPy, in the ``examples`` extra: ``pip install -e ".[examples]"``.
"""

import sys

import numpy as np

import tapegrad as tg

try:
    from scipy.optimize import minimize

    from tapegrad.scipy.integrate import odeint
except ImportError as error:
    sys.exit(
        f'{error}: this example needs SciPy, in the examples extra: pip install -e ".[examples]"'
    )

TIMES = np.linspace(0.0, 6.0, 30)


def oscillator(y, t, k, c):
    return np.stack([y[1], -k * y[0] - c * y[1]])


def simulate(theta):
    k, c, v0 = theta[0], theta[1], theta[2]
    y0 = np.stack([1.0 + 0.0 * v0, v0])
    return odeint(oscillator, y0, TIMES, k, c, rtol=1e-8, atol=1e-8)[:, 0]


def make_data(seed=0, noise=0.02):
    rng = np.random.default_rng(seed)
    truth = np.array([2.0, 0.3, -0.5])
    return truth, simulate(truth) + noise * rng.standard_normal(TIMES.size)


def loss(theta, observed):
    return np.mean((simulate(theta) - observed) ** 2)


def main(verbose=True):
    truth, observed = make_data()
    theta0 = np.array([1.0, 0.1, 0.0])
    value_and_grad = tg.value_and_grad(loss)
    _, g = value_and_grad(theta0, observed)
    eps = 1e-6
    fd = np.array(
        [
            (loss(theta0 + eps * e, observed) - loss(theta0 - eps * e, observed)) / (2 * eps)
            for e in np.eye(3)
        ]
    )
    err = float(np.max(np.abs(g - fd)) / np.max(np.abs(fd)))
    assert err < 1e-5, f"gradient disagrees with finite differences: {err:.2e}"
    res = minimize(value_and_grad, theta0, args=(observed,), jac=True, method="L-BFGS-B")
    if verbose:
        print(f"gradient vs finite differences: relative error {err:.1e} (ok)")
        print(f"{res.message} after {res.nit} iterations; mean squared error {res.fun:.2e}")
        print(
            f"fitted k = {res.x[0]:.3f}, c = {res.x[1]:.3f}, v0 = {res.x[2]:+.3f} "
            f"(data made with {truth[0]}, {truth[1]}, {truth[2]:+})"
        )
    return res, truth, err


if __name__ == "__main__":
    main()
