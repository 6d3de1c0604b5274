"""Central differences, the reference several gradient tests compare against."""

import numpy as np


def central_gradient(f, x, eps=1e-6):
    """The gradient of scalar ``f`` (plain NumPy) at ``x`` by central differences."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g
