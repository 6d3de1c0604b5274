"""Gradient-based optimizers over pytrees, with HIPS autograd's semantics and defaults.

Each takes ``grad_fn(x, i)`` (the gradient at ``x`` in iteration ``i``, in ``x``'s
structure), a starting pytree ``x0`` and an optional ``callback(x, i, g)`` called every
iteration before the update; it returns the final point in ``x0``'s structure.  The update
runs on the raveled vector (``tapegrad.tree.ravel``), so any tree of arrays works.
"""

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tree import ravel

__all__ = ["adam", "rmsprop", "sgd"]


def _over_trees(optimize):
    """Run ``optimize`` (written for flat vectors) on a pytree ``x0``."""

    @functools.wraps(optimize)
    def wrapper(grad_fn, x0, callback=None, *args, **kwargs):
        flat0, unravel = ravel(x0)
        flat0 = np.asarray(flat0, dtype=np.float64)

        def flat_grad(x, i):
            g, _ = ravel(_like(grad_fn(unravel(x), i), x0, optimize.__name__))
            g = np.asarray(g, dtype=np.float64)
            if g.shape != flat0.shape:
                raise ValueError(
                    f"{optimize.__name__}: grad_fn returned {g.size} values "
                    f"for a point with {flat0.size}; it must return a gradient "
                    "in the structure of x"
                )
            return g

        flat_callback = None
        if callback:

            def flat_callback(x, i, g):
                callback(unravel(x), i, unravel(g))

        return unravel(optimize(flat_grad, flat0, flat_callback, *args, **kwargs))

    return wrapper


def _like(g, x, name, path=""):
    """Gradient tree ``g`` in the order of ``x``'s containers: dict entries are paired by key
    (a gradient dict built in another key order is still the gradient of the same
    parameters), lists and tuples by position."""
    if isinstance(x, dict):
        if not isinstance(g, dict) or set(g) != set(x):
            got = sorted(map(str, g)) if isinstance(g, dict) else type(g).__name__
            raise ValueError(
                f"{name}: grad_fn returned {got} at {path or 'the top'} where the parameters "
                f"have the keys {sorted(map(str, x))}; return a gradient in the structure of x"
            )
        return {k: _like(g[k], x[k], name, f"{path}[{k!r}]") for k in x}
    if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)) and len(g) == len(x):
        return [
            _like(gi, xi, name, f"{path}[{i}]") for i, (gi, xi) in enumerate(zip(g, x, strict=True))
        ]
    if x is None and g is None:
        return None
    # leaf against leaf, shape for shape: two gradients of the same total size in the wrong
    # shapes or order would otherwise ravel into the wrong parameters
    if isinstance(x, (list, tuple, dict)) or isinstance(g, (list, tuple, dict)) or x is None:
        raise ValueError(
            f"{name}: grad_fn returned {type(g).__name__} at {path or 'the top'} where the "
            f"parameters have {type(x).__name__}; return a gradient in the structure of x"
        )
    if np.shape(g) != np.shape(x):
        raise ValueError(
            f"{name}: grad_fn returned shape {np.shape(g)} at {path or 'the top'} where the "
            f"parameter has shape {np.shape(x)}; return a gradient in the structure of x"
        )
    if np.asarray(g).dtype.kind == "c":
        raise TypeError(
            f"{name}: grad_fn returned a complex gradient at {path or 'the top'}; the "
            "optimizers work on real parameters (its imaginary part would be dropped)"
        )
    return g


def _run(grad_fn, x, callback, num_iters, update):
    """The loop all three share: gradient, callback, then ``x = update(x, i, g)``."""
    for i in range(num_iters):
        g = grad_fn(x, i)
        if callback:
            callback(x, i, g)
        x = update(x, i, g)
    return x


@_over_trees
def sgd(
    grad_fn: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable | None = None,
    num_iters: int = 200,
    step_size: float = 0.1,
    mass: float = 0.9,
) -> Any:
    """Stochastic gradient descent with momentum:
    ``v = mass * v - (1 - mass) * g``, ``x = x + step_size * v``.

    >>> import numpy as np
    >>> from tapegrad.optimizers import sgd
    >>> x = sgd(lambda x, i: 2 * (x - 3.0), np.zeros(2), num_iters=500)
    >>> np.round(x, 6)
    array([3., 3.])
    """
    velocity = np.zeros(len(x0))

    def update(x, i, g):
        nonlocal velocity
        velocity = mass * velocity - (1.0 - mass) * g
        return x + step_size * velocity

    return _run(grad_fn, x0, callback, num_iters, update)


@_over_trees
def rmsprop(
    grad_fn: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable | None = None,
    num_iters: int = 100,
    step_size: float = 0.1,
    gamma: float = 0.9,
    eps: float = 1e-8,
) -> Any:
    """Root-mean-square propagation; the running mean of squared gradients starts at one.

    >>> from tapegrad.optimizers import rmsprop
    >>> x = rmsprop(lambda x, i: {"a": 2 * (x["a"] - 1.0)}, {"a": 0.0}, step_size=0.01,
    ...             num_iters=300)
    >>> round(x["a"], 3)
    1.0
    """
    avg_sq_grad = np.ones(len(x0))

    def update(x, i, g):
        nonlocal avg_sq_grad
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        return x - step_size * g / (np.sqrt(avg_sq_grad) + eps)

    return _run(grad_fn, x0, callback, num_iters, update)


@_over_trees
def adam(
    grad_fn: Callable[[Any, int], Any],
    x0: Any,
    callback: Callable | None = None,
    num_iters: int = 100,
    step_size: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> Any:
    """Adam (Kingma and Ba): RMSprop with momentum and bias-corrected moment estimates.

    >>> import numpy as np
    >>> from tapegrad.optimizers import adam
    >>> x = adam(lambda x, i: 2 * (x - 1.0), np.zeros(3), step_size=0.1, num_iters=500)
    >>> np.round(x, 3)
    array([1., 1., 1.])
    """
    m = np.zeros(len(x0))
    v = np.zeros(len(x0))

    def update(x, i, g):
        nonlocal m, v
        m = (1 - b1) * g + b1 * m  # first moment estimate
        v = (1 - b2) * (g**2) + b2 * v  # second moment estimate
        mhat = m / (1 - b1 ** (i + 1))  # bias corrections
        vhat = v / (1 - b2 ** (i + 1))
        return x - step_size * mhat / (np.sqrt(vhat) + eps)

    return _run(grad_fn, x0, callback, num_iters, update)
