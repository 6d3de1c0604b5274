"""Minimise the 100-dimensional Rosenbrock function with SciPy's L-BFGS-B and tapegrad gradients.

The objective is plain NumPy code; ``tg.value_and_grad`` turns it into the ``(value, gradient)``
pair that ``scipy.optimize.minimize(..., jac=True)`` expects.

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


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def main(dim=100, verbose=True):
    fun = tg.value_and_grad(rosenbrock)
    x0 = np.full(dim, -1.2)
    x0[1::2] = 1.0  # the classic starting point (-1.2, 1, -1.2, 1, ...)
    history = []

    def report(xk):
        history.append(rosenbrock(xk))
        if verbose and len(history) % 10 == 0:
            print(f"iteration {len(history):4d}  f = {history[-1]:.6e}")

    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        callback=report,
        options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15},
    )
    if verbose:
        print(f"{res.message} after {res.nit} iterations ({res.nfev} evaluations)")
        print(f"f(x*) = {res.fun:.3e}, max |x* - 1| = {np.max(np.abs(res.x - 1.0)):.2e}")
        print("x* =", np.array2string(res.x, precision=6, max_line_width=100))
    return res


if __name__ == "__main__":
    main()
