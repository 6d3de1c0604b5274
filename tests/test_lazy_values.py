"""Lazy rows (large arrays enter the tape uncopied) must never change a gradient."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.core import tape as T

from op_cases import CASES


def _grads(f, inputs):
    xs = [tg.tensor(v, requires_grad=True) for v in inputs]
    out = f(*xs)
    w = np.random.default_rng(5).standard_normal(out.shape)
    out.backward(w)
    return [
        np.zeros_like(v) if x.grad is None else x.grad.numpy()
        for x, v in zip(xs, inputs, strict=True)
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_op_same_gradient_with_every_row_lazy(name, monkeypatch):
    f, inputs = CASES[name]
    eager = _grads(f, inputs)
    monkeypatch.setattr(T, "LAZY_MIN", 1)
    lazy = _grads(f, inputs)
    for a, b in zip(eager, lazy, strict=True):
        np.testing.assert_array_equal(a, b)
    assert tg.gradcheck(f, inputs)


def test_large_parameter_is_not_copied_until_needed():
    rng = np.random.default_rng(0)
    X = tg.tensor(rng.standard_normal((64, 100)))
    W = tg.tensor(rng.standard_normal((100, 80)), requires_grad=True)
    y = (X @ W).sum()
    t = tg.current_tape()
    assert W._row in t.lazy and X._row in t.lazy  # matmul via numpy reads them directly
    y.backward()
    np.testing.assert_allclose(W.grad.numpy(), X.numpy().sum(0)[:, None] * np.ones((1, 80)))


def test_in_place_change_copies_the_old_value_first():
    rng = np.random.default_rng(1)
    W0 = rng.standard_normal((100, 80))
    X = tg.tensor(rng.standard_normal((64, 100)), requires_grad=True)
    W = tg.tensor(W0.copy(), requires_grad=True)
    y = (X @ W).sum()  # noqa: F841  (held: its graph keeps W's row on the tape)
    t = tg.current_tape()
    row = W._row
    with tg.no_grad():
        W -= 1.0
    assert row not in t.lazy
    np.testing.assert_array_equal(t.value(row), W0.reshape(-1))
