"""Central differences, the reference several gradient tests compare against."""

import numpy as np

import tapegrad as tg

RNG = np.random.default_rng(2024)  # the weights and directions of check_derivatives


def central_gradient(f, x, eps=1e-6):
    """The gradient of scalar ``f`` (plain NumPy) at ``x`` by central differences."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def check_derivatives(f, xs):
    """tg.grad and tg.jvp of a scalarized f against central finite differences, per argument."""
    out = np.asarray(f(*xs))
    w = RNG.standard_normal(out.shape)

    def s(*a):
        return (f(*a) * w).sum()

    grads = tg.grad(s, argnums=tuple(range(len(xs))))(*xs)
    for k, (x, g) in enumerate(zip(xs, grads, strict=True)):

        def along(v, k=k):
            args = list(xs)
            args[k] = v
            return float(np.sum(np.asarray(f(*args)) * w))

        np.testing.assert_allclose(g, central_gradient(along, x), rtol=1e-6, atol=1e-7)
    vs = tuple(RNG.standard_normal(np.shape(x)) for x in xs)
    _, t = tg.jvp(f, tuple(xs), vs)
    eps = 1e-6
    fd = (
        np.asarray(f(*[x + eps * v for x, v in zip(xs, vs, strict=True)]))
        - np.asarray(f(*[x - eps * v for x, v in zip(xs, vs, strict=True)]))
    ) / (2 * eps)
    np.testing.assert_allclose(t, fd, rtol=1e-6, atol=1e-7)
