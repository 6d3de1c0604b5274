"""``gradcheck``: tapegrad's gradients against central finite differences."""

from collections.abc import Callable
from typing import Any

import numpy as np

from .autograd.engine import grad as _grad
from .tensor_class import Tensor

__all__ = ["gradcheck"]


def _as_input(x):
    # C order: the checks perturb entries through a flat view (a Fortran array's reshape
    # would be a copy, and the perturbation would change nothing)
    if isinstance(x, Tensor):
        return np.array(x._v, dtype=np.float64, order="C")
    return np.array(x, dtype=np.float64, order="C")


def _value(out):
    return np.asarray(out._v if isinstance(out, Tensor) else out, dtype=np.float64)


def gradcheck(
    f: Callable, inputs: Any, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3
) -> bool:
    """Check d sum(f(*inputs) * u) / d inputs against central differences, element by element.

    ``u`` is a fixed random cotangent, so non-scalar outputs are checked in full.  Returns True,
    or raises AssertionError naming the input and its worst element.

    Args:
        f: a function of Tensors returning a Tensor (or a number).
        inputs: one array-like or a sequence of them (float64 copies are checked).
        eps: finite difference step.
        atol: absolute tolerance.
        rtol: relative tolerance, of the numeric derivative.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.gradcheck(lambda x, y: tg.sin(x) * y, [np.array([0.5, 1.0]), np.array([2.0, 3.0])])
        True
        >>> def wrong(x):                       # the value without its graph: gradient 1, not 2x
        ...     return tg.tensor(x.numpy() ** 2) + x
        >>> tg.gradcheck(wrong, np.array([1.0]))
        Traceback (most recent call last):
        ...
        AssertionError: gradcheck failed for input 0 (shape (1,)) at element (0,): ...
    """
    if isinstance(inputs, (Tensor, np.ndarray, float, int)):
        inputs = (inputs,)
    values = [_as_input(x) for x in inputs]
    rng = np.random.default_rng(0)

    def run(vals, track):
        # inputs always track: f may itself take gradients (higher-order checks)
        ts = [Tensor(v, requires_grad=track) for v in vals]
        out = f(*ts)
        return ts, out

    ts, out = run(values, True)
    out_v = np.asarray(out._v if isinstance(out, Tensor) else out, dtype=np.float64)
    u = rng.standard_normal(out_v.shape)
    if isinstance(out, Tensor) and out._rg:
        grads = _grad([out], ts, grad_outputs=[u], allow_unused=True)
    else:
        grads = [None] * len(ts)
    for k, v in enumerate(values):
        analytic = np.zeros_like(v) if grads[k] is None else np.asarray(grads[k]._v)
        numeric = np.zeros_like(v)
        flat = v.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            plus = np.sum(_value(run(values, True)[1]) * u)
            flat[j] = old - eps
            minus = np.sum(_value(run(values, True)[1]) * u)
            flat[j] = old
            numeric.reshape(-1)[j] = (plus - minus) / (2 * eps)
        err = np.abs(analytic - numeric)
        tol = atol + rtol * np.abs(numeric)
        if analytic.shape != numeric.shape or np.any(~(err <= tol)):
            j = int(np.nanargmax(np.where(np.isnan(err), np.inf, err - tol)))
            raise AssertionError(
                f"gradcheck failed for input {k} (shape {v.shape}) at element "
                f"{tuple(int(i) for i in np.unravel_index(j, v.shape))}: analytic "
                f"{float(analytic.reshape(-1)[j])!r} vs numeric "
                f"{float(numeric.reshape(-1)[j])!r}"
            )
    return True
