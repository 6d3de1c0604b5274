"""Reclaiming tape rows: a held graph pins only its own rows, never the rows after it."""

import gc

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg


@on_fresh_tape
def test_held_graph_does_not_pin_later_training_rows():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    kept = (x * 3.0).sum()  # a graph the user keeps, never backwarded
    w = tg.tensor(0.5, requires_grad=True)
    sizes = []
    for _ in range(2000):
        loss = (w * 2.0 - 1.0) ** 2
        loss.backward()
        with tg.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
        sizes.append(len(tg.current_tape()))
    assert max(sizes[100:]) == max(sizes[:100])  # flat: bounded by the held rows
    assert w.item() == pytest.approx(0.5, abs=1e-6)
    kept.backward()  # the held graph still works
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_values_and_freed_errors_survive_truncation():
    x = tg.tensor(2.0, requires_grad=True)
    keep = x * 5.0  # held, unfreed: cut point sits after it
    y = tg.exp(x)
    y.backward()  # frees y's rows, which are then cut away
    assert y.item() == pytest.approx(np.exp(2.0))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        (y * 2.0).backward()
    keep.backward()
    assert x.grad.item() == pytest.approx(np.exp(2.0) + 5.0)


@on_fresh_tape
def test_parameter_pools_are_cut_with_their_rows():
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    held = x.sum(axis=0)  # uses ipool
    t = tg.current_tape()
    np_before = t.np
    for _ in range(50):
        z = (x.T @ x).sum(axis=1).clip(-1e9, 1e9).sum()  # ipool + fpool rows
        z.backward()
    t = tg.current_tape()
    assert t.np <= np_before + 64 and t.nf <= 8
    held.sum().backward()
    assert x.grad is not None
    del held
    gc.collect()
