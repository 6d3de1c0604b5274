"""Tape lifetime: deep chains without recursion, bounded tapes in long loops, readable values.

``tg.current_tape()`` is a new Tape object after each reset, so it is re-read every time."""

import math

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg


@on_fresh_tape
def test_million_op_chain_forward_and_backward():
    x = tg.tensor(1.0, requires_grad=True)
    y = x
    n = 500_000
    for _ in range(n):  # two ops per iteration: 10^6 rows
        y = y * 1.0000001 + 0.0
    tape = tg.current_tape()
    assert len(tape) >= 2 * n
    expect = 1.0000001**n
    assert y.item() == pytest.approx(expect, rel=1e-12)
    y.backward()  # no recursion: a RecursionError would surface here
    assert x.grad.item() == pytest.approx(expect, rel=1e-12)
    assert y.item() == pytest.approx(expect, rel=1e-12)  # still readable
    assert len(tg.current_tape()) == 0  # nothing held: the tape reset


def test_deep_array_chain_with_mixed_ops():
    x = tg.tensor([0.5, -0.25], requires_grad=True)
    y = x
    for _ in range(20_000):
        y = tg.sin(y) * 0.5 + y * 0.5
    y.sum().backward()
    # reference by forward-mode on floats
    g = np.ones(2)
    v = np.array([0.5, -0.25])
    for _ in range(20_000):
        g = g * (0.5 * np.cos(v) + 0.5)
        v = np.sin(v) * 0.5 + v * 0.5
    np.testing.assert_allclose(y.numpy(), v, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-10)


@on_fresh_tape
def test_scalar_chain_uses_at_most_64_bytes_per_op():
    x = tg.tensor(0.3, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.01 + 0.5
        y = tg.sin(y)
    tape = tg.current_tape()
    assert len(tape) >= 60_000
    assert tape.nbytes / len(tape) <= 64
    y.backward()


def _train_linear(steps, keep_losses=None, zero_with_none=True):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    Y = X @ np.array([1.0, -2.0, 0.5]) + 0.3
    Xt = tg.tensor(X)
    w = tg.zeros(3, requires_grad=True)
    b = tg.tensor(0.0, requires_grad=True)
    rows_before, rows_after, bytes_after = [], [], []
    for _ in range(steps):
        loss = ((Xt @ w + b - Y) ** 2).mean()
        rows_before.append(len(tg.current_tape()))
        loss.backward()
        with tg.no_grad():
            w -= 0.05 * w.grad
            b -= 0.05 * b.grad
        if zero_with_none:
            w.grad = b.grad = None
        else:
            w.grad.zero_()
            b.grad.zero_()
        if keep_losses is not None:
            keep_losses.append(loss)
        tape = tg.current_tape()
        rows_after.append(len(tape))
        bytes_after.append(tape.nbytes)
    return w, b, rows_before, rows_after, bytes_after


@on_fresh_tape
def test_training_loop_keeps_the_tape_flat_even_with_every_loss_kept():
    losses = []  # the user keeps every loss handle
    w, b, before, after, nbytes = _train_linear(10_000, keep_losses=losses, zero_with_none=False)
    np.testing.assert_allclose(w.numpy(), [1.0, -2.0, 0.5], atol=1e-8)
    assert b.item() == pytest.approx(0.3, abs=1e-8)
    assert max(before) == before[0] <= 16  # the same few rows every step
    assert max(after) <= before[0] and max(nbytes) <= 4096
    vals = [loss.item() for loss in losses]  # every kept value is still readable
    assert vals[0] > 1.0 and vals[-1] < 1e-12
    assert all(math.isfinite(v) for v in vals)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        losses[5].backward()  # its graph was freed long ago


@on_fresh_tape
def test_short_training_loop_zeroing_grads_with_none():
    w, b, before, after, nbytes = _train_linear(300)
    assert max(before) == before[0] <= 16
    assert max(after) <= before[0]


def test_first_kept_loss_value_is_exact():
    losses = []
    _train_linear(50, keep_losses=losses)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    Y = X @ np.array([1.0, -2.0, 0.5]) + 0.3
    assert losses[0].item() == pytest.approx(np.mean(Y**2), rel=1e-14)


def test_values_and_grads_stay_readable_across_resets():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    kept = []
    for k in range(200):
        h = x * float(k)
        out = (h * x).sum()
        out.backward()
        kept.append((h, out))
    for k, (h, out) in enumerate(kept):
        assert h.tolist() == [float(k), 2.0 * k]
        assert out.item() == 5.0 * k
        assert h.requires_grad and not h.is_leaf
    assert x.grad.tolist() == [2.0 * sum(range(200)), 4.0 * sum(range(200))]


def test_retired_non_leaf_reused_in_new_graph():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2.0
    h.sum().backward()
    z = h * 3.0  # forward still works on the old value
    assert z.tolist() == [6.0, 12.0] and z.requires_grad
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        z.sum().backward()
    w.grad = None
    (h.detach() * w).sum().backward()  # detached, it is a plain constant
    assert w.grad.tolist() == [2.0, 4.0]


@on_fresh_tape
def test_retain_graph_keeps_rows_until_the_last_backward():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    assert len(tg.current_tape()) > 0
    y.backward()
    assert w.grad.tolist() == [4.0, 8.0]
    del y
    (w * 1.0).sum().backward()
    assert len(tg.current_tape()) == 0


@on_fresh_tape
def test_no_grad_loop_records_nothing():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    s = tg.tensor(0.5, requires_grad=True)
    tape = tg.current_tape()
    n0 = len(tape)
    with tg.no_grad():
        for _ in range(5_000):
            y = (w * 2.0).sum() + s * 3.0
    assert tg.current_tape() is tape and len(tape) == n0
    assert not y.requires_grad


@on_fresh_tape
def test_forward_only_loop_holding_latest_result_stays_bounded():
    # the held result pins its own graph only: the earlier iterations' rows below it are
    # dropped by compaction (75,000 rows if nothing were)
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    s = tg.tensor(0.5, requires_grad=True)
    most = 0
    for _ in range(15_000):
        y = (w * 2.0).sum() + s * 3.0  # e.g. an evaluation metric, never backwarded
        most = max(most, len(tg.current_tape()))
    assert y.item() == 7.5
    assert most <= 5_000
    y.backward()  # the held graph moved with its rows
    assert w.grad.tolist() == [2.0, 2.0] and s.grad.item() == 3.0


@on_fresh_tape
def test_unrelated_held_handle_does_not_make_a_training_loop_leak():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    stale = x * 2.0  # held (a notebook variable, a traceback), never backwarded
    losses = []
    _, _, before, after, _ = _train_linear(3_000, keep_losses=losses)
    assert max(before) == before[0] and max(after) <= before[0]
    assert stale.tolist() == [2.0, 4.0]
    stale.sum().backward()  # and the held graph still works
    assert x.grad.tolist() == [2.0, 2.0]


@on_fresh_tape
def test_a_backward_empties_the_tape_only_when_it_freed_every_op_row():
    """A backward through the whole tape (its root is the last row and it reaches every op
    row) empties the tape at once; a graph recorded after the root, or one the backward did
    not reach, keeps its rows and still differentiates correctly."""
    from tapegrad.autograd.engine import release_swept

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    assert len(tg.current_tape()) == 0 and loss.item() == 5.0
    assert x.grad.tolist() == [2.0, 4.0]

    x.grad = None
    loss = (x * 3.0).sum()
    later = (x * x * x).sum()  # recorded after the root: rows above it
    loss.backward()
    assert len(tg.current_tape()) > 0
    later.backward()
    assert x.grad.tolist() == [3.0 + 3.0, 3.0 + 12.0]

    x.grad = None
    earlier = (tg.sin(x)).sum()  # not reached by the next backward
    loss = (x * 2.0).sum()
    loss.backward()
    assert len(tg.current_tape()) > 0
    earlier.backward()
    assert np.allclose(x.grad.numpy(), 2.0 + np.cos([1.0, 2.0]))

    # release_swept itself: it empties the tape only when the sweep began at the last row and
    # reached every op row; otherwise it marks the swept rows freed and keeps the rest
    x.grad = None
    earlier = (tg.sin(x)).sum()
    loss = (x * 2.0).sum()
    loss.backward(retain_graph=True)
    assert len(release_swept(tg.current_tape(), loss._row)) > 0  # earlier was not reached
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    earlier.backward()
    assert np.allclose(x.grad.numpy(), 2.0 + np.cos([1.0, 2.0]))
    loss = (x * 2.0).sum()
    later = (x * 3.0).sum()
    loss.backward(retain_graph=True)
    assert len(release_swept(tg.current_tape(), loss._row)) > 0  # not from the last row
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    later.backward(retain_graph=True)
    assert len(release_swept(tg.current_tape(), later._row)) == 0  # all freed: emptied


@on_fresh_tape
def test_the_tape_a_reset_makes_has_every_slot_set():
    """A reset copies only the slots it keeps (``Tape.CARRIED``) and sets the others."""
    from tapegrad.core.tape import Tape

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    old = tg.current_tape()
    carried = {name: getattr(old, name) for name in Tape.CARRIED}
    loss.backward()  # from the last row, reaching every row: a reset
    t = tg.current_tape()
    assert t is not old and len(t) == 0 and not old.alive
    assert [n for n in Tape.__slots__ if n != "__weakref__" and not hasattr(t, n)] == []
    assert [n for n in Tape.CARRIED if getattr(t, n) is not carried[n]] == []
    assert [n for n in Tape.ARRAYS if hasattr(old, n)] == []  # the retired tape keeps none
    y = (x * 3.0).sum()
    y.backward()
    assert x.grad.tolist() == [2.0 + 3.0, 4.0 + 3.0]


@on_fresh_tape
def test_the_first_rows_after_a_reset_are_pending_rows():
    """A reset starts the first token range, so the next step's first rows (entering a
    parameter, its first op) are pending rows like the rest, not flushes through ``push``;
    the op's handle holds that range and the gradient is right."""
    w = tg.tensor(2.0, requires_grad=True)
    (w * 3.0).backward()
    t = tg.current_tape()
    assert len(t) == 0 and t.tok is not None and t.starts == [0]
    y = w * 5.0
    assert t.nsync == 0 and len(t.pc) == 2  # w entered and the product: both pending
    assert y._k is t.tok
    y.backward()
    assert w.grad.item() == 3.0 + 5.0


def _a_new_sum_leaves_the_kept_sums_parameters(s, x):
    """``s = x.sum(axis=0)`` of a 2x3 ``x`` is kept after a cut: a new SUM's parameters go
    after its own in the pool (not over them), so ``s``'s gradient is still right."""
    z = tg.tensor(np.ones((4, 5)), requires_grad=True)
    z.sum(axis=1)
    (s * np.array([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.numpy().tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]


@on_fresh_tape
def test_rows_dropped_by_a_cut_free_their_parameters_and_nothing_more():
    """A cut finds where the parameter pool ends from the ``ip`` of the rows it drops.  A
    pending row (one flushed later) never writes ``ip``, so a slot must not keep the ``ip``
    of a row an earlier reset dropped: it once lowered the pool's end below a kept SUM's
    parameters, the next SUM overwrote them, and the kept graph's gradient came out wrong."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    ((x * 2.0) * 1.0).sum(axis=1).sum().backward()  # rows 1-2 pending, row 3 a SUM
    x.grad = None
    s = x.sum(axis=0)  # row 1: a SUM, its parameters at the start of the pool
    t = tg.current_tape().maybe_reset()  # (the next row starts a new handle range)
    tmp = (s * 3.0) * 2.0  # row 3 pending, in the slot of the dropped SUM
    del tmp
    t = t.maybe_reset()  # cuts rows 2-3
    assert len(t) == 2 and t.ip[2:8].tolist() == [0] * 6
    _a_new_sum_leaves_the_kept_sums_parameters(s, x)


@on_fresh_tape
def test_a_torn_row_leaves_no_parameters_behind():
    """An interrupt between a reduction's appends and the store that publishes its row leaves
    a torn pending row and its (row, ip) note; the flush drops both, so the row recorded in
    that slot later has no parameters (a cut reads them to find where the pool ends)."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    s = x.sum(axis=0)  # its parameters at the start of the pool
    t = tg.current_tape().maybe_reset()  # (the next row starts a new handle range)
    i, word, p = t.n, int(t.code[s._row]), int(t.ip[s._row])
    t.pc.append(word)  # the torn state: appended, noted, never published
    t.pv.append(np.ones(3))
    t.pf.append(0.0)
    t.pip.append((i, p))
    _ = t.code  # a read flushes: the torn row and its note go
    assert t.n == i and not t.pc and not t.pip
    tmp = s * 3.0  # a pending row in the torn row's slot
    assert tmp._row == i and t.ip[i] == 0
    del tmp
    t = t.maybe_reset()  # cuts that row: the pool still ends after the SUM's parameters
    _a_new_sum_leaves_the_kept_sums_parameters(s, x)


@on_fresh_tape
def test_rows_with_parameters_stay_pending_until_a_column_is_read():
    """A concatenation and a reduction are pending rows (their parameters noted, not yet in
    the ``ip`` column); reading the graph flushes them first, so it names the right rows."""
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0], requires_grad=True)
    c = tg.concatenate([a * 1.0, b * 2.0])
    s = (c * c).sum(axis=0)
    t = tg.current_tape()
    assert [r for r, _ in t.pip] == [c._row, s._row] and len(t.pc) == t.n - t.nsync
    parts = [f for f, _ in c.grad_fn.next_functions]  # reads CONCAT's parameters
    assert not t.pc and not t.pip
    assert [f.name() for f in parts] == ["MulBackward0", "MulBackward0"]
    assert parts[0].row == c._row - 3 and parts[1].row == c._row - 1
    s.backward()
    assert a.grad.tolist() == [2.0, 4.0] and b.grad.tolist() == [24.0]
