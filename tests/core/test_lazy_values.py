"""Lazy rows (large arrays enter the tape uncopied) must never change a gradient."""

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

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


def test_a_broadcast_bias_stays_lazy_and_keeps_its_recorded_value():
    """A bias broadcast over a batch is a view of the bias's own array: its row is not copied
    (nothing its backward reads), yet an in-place change of the bias first copies the old
    broadcast in, so the tape never shows the new value (nor would a reader of that row)."""
    rng = np.random.default_rng(2)
    X = tg.tensor(rng.standard_normal((64, 100)))
    b0 = rng.standard_normal(100)
    b = tg.tensor(b0.copy(), requires_grad=True)
    h = X + b
    t = tg.current_tape()
    view = (int(t.code[h._row]) >> 36) - 1  # the broadcast's row: h's second operand
    assert t.shape(view) == (64, 100) and view in t.lazy
    loss = (h * h).sum()  # (MUL reads h: h's row is written, the broadcast's need not be)
    assert view in t.lazy
    with tg.no_grad():
        b -= 1.0
    assert view not in t.lazy
    np.testing.assert_array_equal(t.value(view), np.broadcast_to(b0, (64, 100)).reshape(-1))
    loss.backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * (X.numpy() + b0).sum(0), rtol=1e-12)


def test_a_broadcast_of_a_read_only_view_is_copied():
    """A Tensor over a read-only view of a caller's array (what tapegrad makes of one it must
    not write into): the caller may still change that memory, so a broadcast of it is copied
    when recorded, and the tape keeps the recorded value."""
    rng = np.random.default_rng(4)
    M = tg.tensor(rng.standard_normal((64, 100)))
    c = rng.standard_normal(100)
    c0 = c.copy()
    ro = c.view()
    ro.flags.writeable = False
    b = tg.as_tensor(ro).requires_grad_()
    h = M + b
    t = tg.current_tape()
    view = (int(t.code[h._row]) >> 36) - 1
    assert t.shape(view) == (64, 100) and view not in t.lazy
    c += 1.0  # behind tapegrad's back
    np.testing.assert_array_equal(t.value(view), np.broadcast_to(c0, (64, 100)).reshape(-1))


def test_a_broadcast_of_a_transformed_input_stays_lazy():
    """A transform's inputs are its own copies of the caller's arrays: their broadcasts stay
    lazy, and the gradient is the same."""
    rng = np.random.default_rng(6)
    M = rng.standard_normal((64, 100))
    c = rng.standard_normal(100)
    lazy = []

    def f(x):
        h = M + x
        t = tg.current_tape()
        w = int(t.code[h._row])
        operands = (((w >> 8) & 0xFFFFFFF) - 1, (w >> 36) - 1)
        lazy.extend(r in t.lazy for r in operands if int(t.code[r]) & 255 == T.C.VIEW)
        return (h * h).sum()

    g = tg.grad(f)(c)
    assert lazy == [True]
    np.testing.assert_allclose(g, 2 * (M + c).sum(0), rtol=1e-12)


def test_small_array_binary_rows_wait_in_the_pending_lists_with_their_shapes():
    """Equal-shape binary ops on small arrays append to the pending lists (no push per op);
    the flush must give every row its value and its 2-D shape back."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = tg.tensor(a, requires_grad=True)
    y = tg.tensor(b, requires_grad=True)
    u = x * y
    v = u + x
    w = v * y
    t = tg.current_tape()
    assert len(t.pc) >= 2  # v and w were recorded without a push
    assert t.shape(w._row) == (3, 4) and t.shape(u._row) == (3, 4)
    np.testing.assert_allclose(t.value(w._row).reshape(3, 4), (a * b + a) * b, rtol=1e-15)
    w.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), b * b + b, rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), 2 * a * b + a, rtol=1e-14)


def test_entered_operands_wait_in_the_pending_lists_as_copies():
    """A constant Tensor and a plain array entered on the fast path are pending rows too (the
    rows before them need no flush): once flushed, a constant's row needs no gradient, and
    each row holds a copy (the caller's array may change before the flush)."""
    rng = np.random.default_rng(5)
    a, c = rng.standard_normal(4), rng.standard_normal(4)
    x = tg.tensor(a, requires_grad=True)
    t = tg.current_tape()
    u = tg.sin(x)
    k = tg.tensor(c + 1.0)
    plain = c.copy()
    v = u * k * plain  # k, then plain, entered as pending rows
    assert t.nsync <= k._row and len(t.pc) >= 4
    plain[:] = 0.0  # changed before the flush: the tape holds what was multiplied
    t.sync()
    row_k, row_plain = k._row, t.operands(v._row)[1]
    assert (t.rg[x._row], t.rg[row_k], t.rg[row_plain], t.rg[u._row]) == (1, 0, 0, 1)
    np.testing.assert_array_equal(t.value(row_plain), c)
    v.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(a) * (c + 1.0) * c, rtol=1e-14)


def test_small_views_and_broadcast_constants_wait_in_the_pending_lists_as_copies():
    """A small broadcast of a parameter (a VIEW row, a view of the parameter's array) and a
    plain array broadcast as a constant are pending rows too, holding copies: an optimizer
    step that changes the parameter in place before the flush leaves the recorded product,
    and its gradient, as they were (PyTorch would refuse the backward; tapegrad gives the
    gradient of what was computed, never one of the changed value)."""
    b = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = tg.tensor(np.ones((4, 3)), requires_grad=True)
    shift = np.array([[1.0], [2.0], [3.0], [4.0]])
    t = tg.current_tape()
    y = x * b - shift  # b broadcast (a VIEW row), shift broadcast (a constant row)
    flushed = t.nsync
    assert len(t.pc) >= 4  # (reading a row's operands would flush them)
    opt = tg.optim.SGD([b], lr=1.0)
    b.grad = tg.tensor(np.full(3, 10.0))
    opt.step()  # b's array changes in place: [-9, -8, -7]
    t.sync()
    assert flushed <= t.operands(t.operands(y._row)[0])[1]  # b's broadcast was pending
    assert t.shape(t.operands(y._row)[1]) == (4, 3)
    recorded = np.ones((4, 3)) * [1.0, 2.0, 3.0] - shift
    np.testing.assert_array_equal(t.value(y._row).reshape(4, 3), recorded)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))


VIEWS = {
    "itself": lambda w: w,
    "transpose": lambda w: w.T,
    "reshape": lambda w: w.reshape(-1).reshape(w.shape),
    "slice": lambda w: w[:, :],
    "broadcast": lambda w: tg.broadcast_to(w[:1], w.shape),
}


@pytest.mark.parametrize("n", [20, 100])  # pending rows, and rows large enough to be lazy
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_an_optimizer_step_before_the_backward_never_gives_a_changed_gradient(view, n):
    """``x @ view(W)``, then an optimizer step changes W in place, then the backward: x's
    gradient needs the recorded view of W.  Reading W's own row raises (as PyTorch does); a
    view's row holds what was recorded, so the gradient is that of what was computed."""
    rng = np.random.default_rng(n)
    w0, x0 = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    w = tg.tensor(w0.copy(), requires_grad=True)
    x = tg.tensor(x0, requires_grad=True)
    y = (x @ VIEWS[view](w)).sum()
    opt = tg.optim.SGD([w], lr=1.0)
    w.grad = tg.tensor(np.ones((n, n)))
    opt.step()
    if view == "itself":
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        return
    y.backward()
    recorded = VIEWS[view](tg.tensor(w0)).numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((n, n)) @ recorded.T, rtol=1e-12)


@pytest.mark.parametrize("rows", [3, 8, 9, 20])
def test_a_flush_of_few_or_many_mixed_rows_writes_every_value_and_shape(rows):
    """The pending lists hold floats, 1-D, 2-D and one-element arrays mixed; a flush writes
    a few rows one by one and many rows in one vectorised write: the same values, offsets
    and shapes either way, and the gradient through all of them."""
    rng = np.random.default_rng(rows)
    leaves = [
        tg.tensor(v, requires_grad=True)
        for v in (0.7, rng.standard_normal(5), rng.standard_normal((2, 3)), np.array([1.3]))
    ]
    t = tg.current_tape()
    for x in leaves:  # entered before the pending rows start
        tg.exp(x * 0.0)
    t.sync()
    outs = [tg.sin(leaves[k % 4]) for k in range(rows)]
    assert len(t.pc) == rows  # all pending
    t.sync()
    for k, y in enumerate(outs):
        expect = np.sin(np.asarray(leaves[k % 4].numpy(), float))
        assert t.shape(y._row) == expect.shape
        np.testing.assert_array_equal(t.value(y._row), expect.reshape(-1))
    total = outs[0].sum()
    for y in outs[1:]:
        total = total + y.sum()
    total.backward()
    for k, x in enumerate(leaves):
        uses = len(range(k, rows, 4))
        if not uses:
            assert x.grad is None
            continue
        np.testing.assert_allclose(x.grad.numpy(), uses * np.cos(np.asarray(x.numpy(), float)))


@pytest.mark.parametrize("odd", [None, "float", "one-element", "2-D", "0-d input", "many floats"])
@on_fresh_tape
def test_a_long_flush_of_1d_rows_writes_them_in_one_pass_and_falls_back_on_any_other(odd):
    """Forty pending 1-D rows of different sizes go into the buffer with one concatenate; a
    few floats among them too; any other row (a one-element or 2-D array, or many floats)
    sends the flush to the row-by-row loop.  Values, shapes and the gradient are the same
    whichever path wrote them."""
    rng = np.random.default_rng(7)
    values = [rng.standard_normal(2 + k % 5) for k in range(40)]
    extra = {
        None: [],
        "float": [0.3, -1.2],
        "one-element": [np.array([0.4])],
        "2-D": [rng.standard_normal((2, 3))],
        "0-d input": [np.array(0.9)],  # (a float row, as a scalar Tensor's value is a float)
        "many floats": [0.1 * k for k in range(20)],
    }[odd]
    values[5:5] = extra
    leaves = [tg.tensor(v, requires_grad=True) for v in values]
    t = tg.current_tape()
    for x in leaves:  # entered before the pending rows start
        tg.exp(x * 0.0)
    t.sync()
    outs = [tg.sin(x) for x in leaves]
    assert len(t.pc) == len(values)  # all pending
    t.sync()
    for x, y in zip(leaves, outs, strict=True):
        expect = np.sin(np.asarray(x.numpy(), float))
        assert t.shape(y._row) == expect.shape
        np.testing.assert_allclose(t.value(y._row), expect.reshape(-1), rtol=1e-15)
    total = outs[0].sum()
    for y in outs[1:]:
        total = total + y.sum()
    total.backward()
    for x in leaves:
        np.testing.assert_allclose(x.grad.numpy(), np.cos(np.asarray(x.numpy(), float)))
