"""Scans declared by a combine formula (ops/structural/scans.py): the declaration's rules, the
public functions' axis handling and the NumPy spelling, beyond the spec-generated checks."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops.structural.scans import scan


def test_an_infinite_init_must_be_the_identity_of_the_combine():
    with pytest.raises(ValueError, match="identity"):
        scan("BAD", "s * a", -math.inf)  # s * a at s = -inf is not a
    with pytest.raises(ValueError, match="identity"):
        scan("BAD2", "logaddexp(s, a) + b", -math.inf)  # two operands: not allowed


def test_axis_dim_and_the_flattened_scan():
    x = np.arange(6.0).reshape(2, 3) / 4
    ref = np.logaddexp.accumulate(x, axis=1)
    np.testing.assert_allclose(tg.logcumsumexp(tg.tensor(x), 1).numpy(), ref, rtol=1e-15)
    np.testing.assert_allclose(tg.logcumsumexp(tg.tensor(x), dim=-1).numpy(), ref, rtol=1e-15)
    flat = tg.logcumsumexp(tg.tensor(x))  # NumPy's rule for axis=None: the flattened array
    np.testing.assert_allclose(flat.numpy(), np.logaddexp.accumulate(x.ravel()), rtol=1e-15)
    with pytest.raises(TypeError, match="axis= or dim="):
        tg.cumsum(tg.tensor(x), 1, dim=1)
    with pytest.raises(np.exceptions.AxisError):
        tg.cumprod(tg.tensor(x), 2)


def test_numpy_accumulate_and_the_gradient_are_softmax_weights():
    x = np.array([[0.3, -1.2, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0]])
    w = np.array([1.0, -0.5, 2.0, 0.25])
    g = tg.grad(lambda v: np.sum(w * np.logaddexp.accumulate(v, axis=1)))(x)
    out = np.logaddexp.accumulate(x, axis=1)
    want = np.einsum("k,okj->oj", w, np.exp(x[:, None, :] - out[:, :, None]) * np.tri(4))
    np.testing.assert_allclose(g, want, rtol=1e-13)


def test_cumsum_backward_keeps_no_value():
    """cumsum's backward reads nothing (its generated kernel reads only what its partials use),
    so changing its input in place after it was recorded is allowed, as in PyTorch."""
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    z = tg.cumsum(y)
    y.mul_(2.0)  # cumsum saved nothing
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 2.0, 1.0])
    y = x * 1.0
    z = tg.cumprod(y)
    y.mul_(2.0)  # cumprod saved its input: the in-place error, as PyTorch's
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
