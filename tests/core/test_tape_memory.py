"""Tape memory: no Python object per tape row; long loops hold memory flat.

Each test runs on a tape of its own (a new thread), so handles other tests still hold cannot
pin what it measures."""

import gc
import math
import weakref

import numpy as np
import pytest
from test_tape_lifetime import on_fresh_tape

import tapegrad as tg
from tapegrad import nn
from tapegrad.core import tape as T


def _chain_grad(x0, steps):
    """Value and derivative of steps x (y = sin(y) * 0.999), by hand."""
    y, g = x0, 1.0
    for _ in range(steps):
        g *= math.cos(y) * 0.999
        y = math.sin(y) * 0.999
    return y, g


@on_fresh_tape
def test_no_tape_row_keeps_a_python_object_alive():
    steps = 50_000  # 10^5 recorded ops
    x = tg.tensor(0.7, requires_grad=True)
    y = x
    refs = []
    for k in range(steps):
        y = tg.sin(y) * 0.999
        if k % 997 == 0:
            refs.append(weakref.ref(y))
    gc.collect()
    t = tg.current_tape()
    assert len(t) >= 2 * steps
    alive = [r for r in refs if r() is not None]
    assert alive == [] or (len(alive) == 1 and alive[0]() is y)
    assert set(t.objs) == {0} and t.entered(0) is x  # the leaf is the only object by row
    # one weakly held token per range of rows; each reclaim attempt (one per doubling while
    # everything is held) closes a range at each of its retries
    attempts = math.ceil(math.log2(2 * steps))
    assert len(t.starts) <= 2 * steps // 2000 + 20 + attempts * T.RECLAIM_RETRIES
    want_y, want_g = _chain_grad(0.7, steps)
    y.backward()
    assert y.item() == pytest.approx(want_y, rel=1e-12)
    assert x.grad.item() == pytest.approx(want_g, rel=1e-9)
    assert len(tg.current_tape()) == 0  # nothing held: the tape was reset


@on_fresh_tape
def test_a_held_intermediate_stays_differentiable_while_later_rows_are_reclaimed():
    x = tg.tensor(0.4, requires_grad=True)
    mid = x
    for _ in range(10):
        mid = tg.sin(mid) * 0.999
    _, g_mid = _chain_grad(0.4, 10)
    rows_at_mid = len(tg.current_tape())
    w = tg.tensor(1.5, requires_grad=True)
    losses = []
    for _ in range(3_000):  # fills the tape many times over
        loss = (w * w - 2.0) ** 2
        loss.backward()
        w.grad = None
        losses.append(loss)  # kept after backward: their rows are cut
    # (a cut under the live losses waits until it drops half the rows: a successor tape
    # costs more than sweeping past a few freed rows)
    assert len(tg.current_tape()) <= 2 * rows_at_mid + 8
    assert losses[0].item() == pytest.approx(0.0625)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        losses[-1].backward()  # a stale handle never aliases a new row
    z = losses[7] * 2.0  # reused: a constant-like FREED placeholder
    assert z.item() == pytest.approx(2 * 0.0625)
    mid.backward()
    assert x.grad.item() == pytest.approx(g_mid, rel=1e-12)


@on_fresh_tape
def test_stale_handles_of_cut_rows_never_alias_new_rows():
    x = tg.tensor(2.0, requires_grad=True)
    keep = x * 5.0  # held, unfreed: the cut sits after it
    y = tg.exp(x)
    y.backward()  # y's rows are cut while y is still held
    t = tg.current_tape()
    filler = [x * float(k) for k in range(20)]  # new rows where y's used to be
    assert len(t) > 3
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        (y * 2.0).backward()
    x.grad = None
    (keep + filler[3]).backward()
    assert x.grad.item() == pytest.approx(8.0)


def _small_model_step(model, opt, X, Y):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


@on_fresh_tape
def test_three_thousand_training_steps_hold_memory_flat():
    rng = np.random.default_rng(0)
    X = tg.tensor(rng.standard_normal((16, 4)))
    Y = tg.tensor(rng.standard_normal((16, 1)))
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = tg.optim.SGD(model.parameters(), lr=0.05)
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    held = (tg.sin(a) * 3.0).sum()  # an unrelated graph a notebook keeps
    first = None
    for _ in range(500):  # warm up: caches, pools, numba
        loss = _small_model_step(model, opt, X, Y)
        first = loss.item() if first is None else first
    rows, nbytes, objects = [], [], []
    for k in range(2_500):
        loss = _small_model_step(model, opt, X, Y)
        if k % 250 == 249:
            gc.collect()
            t = tg.current_tape()
            rows.append(len(t))
            nbytes.append(t.nbytes)
            objects.append(len(gc.get_objects()))
    assert loss.item() < first
    assert max(rows) == min(rows) and max(nbytes) == min(nbytes)  # the same rows every step
    assert max(objects) - objects[0] < 200, objects  # no Python object per step piles up
    held.backward()  # and the held graph still works
    np.testing.assert_allclose(a.grad.numpy(), 3.0 * np.cos([1.0, 2.0]), rtol=1e-12)


@on_fresh_tape
def test_a_handle_kept_through_a_cut_follows_its_row_to_the_live_tape():
    x = tg.tensor(np.arange(5000.0), requires_grad=True)  # large: its row is lazy
    h = x * 2.0  # held, unfreed
    w = tg.tensor(1.5, requires_grad=True)
    loss = w * w
    loss.backward()  # loss is held: the cut retires the tape
    assert h._tape is not tg.current_tape() and not h._tape.alive
    assert h.grad_fn is not None and h.grad_fn.name() == "MulBackward0"
    with tg.no_grad():
        h += 1.0  # untracked in-place: an identity row
    assert h._tape is tg.current_tape()
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * (2.0 * np.arange(5000.0) + 1.0))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        (loss * 1.0).backward()


@on_fresh_tape
def test_kept_losses_do_not_pin_a_dropped_metric_graph_beside_them():
    # losses kept after their backward (for a plot) and a metric logged with .item() without
    # no_grad: the kept losses used to hold their row ranges, and with them every metric
    # graph recorded beside them, so the tape grew by every step's rows for good
    rng = np.random.default_rng(3)
    W = tg.tensor(rng.standard_normal((16, 4)) * 0.1, requires_grad=True)
    losses, sizes = [], []
    for _ in range(600):
        x = tg.tensor(rng.standard_normal((8, 16)))
        logits = x @ W
        loss = (logits**2).mean()
        confidence = logits.softmax(-1).amax(-1).mean().item()  # its graph is dropped
        assert 0.0 < confidence <= 1.0
        losses.append(loss)
        loss.backward()
        with tg.no_grad():
            W -= 0.01 * W.grad
        W.grad = None
        sizes.append(len(tg.current_tape()))
    # a sawtooth within about two row ranges (2,048 rows each), not ~15 rows more a step
    assert max(sizes) <= 2 * T.TOKEN_ROWS + 64
    assert losses[0].item() > losses[-1].item()
    with pytest.raises(RuntimeError, match="second time"):
        losses[-1].backward()  # a kept loss's graph is freed: it still says so
    with pytest.raises(RuntimeError, match="second time"):
        (losses[3] * 2.0).backward()
