import operator

import numpy as np
import pytest

import tapegrad as tg


def test_inplace_ops_on_non_leaf():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y += 2.0
    y.mul_(x)
    y -= 1.0
    y.div_(2.0)
    y.clamp_(0.0, 100.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (2 * np.array([1, 2, 3]) + 2) / 2)
    assert y._version == 5


def test_indexed_assignment_in_a_loop():
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = tg.tensor(3.0, requires_grad=True)
    a = x * 1.0
    for i in range(3):
        a[i] = a[i + 1] * w  # value requires grad; the overwritten part gets none
    a.sum().backward()
    # a = [x1 w, x2 w, x3 w, x3]
    np.testing.assert_allclose(x.grad.numpy(), [0, 3, 3, 3 + 1])
    assert w.grad.item() == pytest.approx(2 + 3 + 4)


def test_setitem_gradcheck():
    def f(x, v):
        a = x * 2.0
        a[1:3] = v * v
        return (a * a).sum()

    assert tg.gradcheck(f, [np.array([0.5, 1.0, -1.5, 2.0]), np.array([0.3, -0.2])])


def test_version_counter_error_names_op_shape_version():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 2.0
    b = a * a
    a.mul_(3.0)
    a.add_(1.0)
    with pytest.raises(
        RuntimeError,
        match=r"\[float64 \[3\]\], which is output 0 of "
        r"MulBackward0, is at version 2; expected version 0",
    ):
        b.sum().backward()


def test_leaf_modified_under_no_grad_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.sin(x).sum()
    with tg.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="leaf tensor, is at version 1; expected version 0"):
        y.backward()


def test_modification_not_needed_by_backward_is_fine():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    b = a * 2.0 + a.exp()  # MULS needs no value; EXP keeps its output, not a
    a.add_(5.0)
    (b.sum() + a.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 + np.exp([1.0, 2.0]) + 1)


def test_in_place_on_leaf_requiring_grad_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.add_(1.0)


def test_untracked_in_place_update_keeps_graph_tensor_in_graph():
    # PyTorch: autograd does not see an update made under no_grad; the gradient of the
    # graph tensor passes straight through it
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with tg.no_grad():
        y.add_(1.0)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * (2 * np.array([1.0, 2.0]) + 1))


def test_untracked_indexed_assignment_keeps_graph_tensor_in_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with tg.no_grad():
        y[0] = 10.0
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [40.0, 16.0])


@pytest.mark.parametrize(
    "op, c, want",
    [
        (operator.isub, 0.5, 1.5),
        (operator.iadd, 0.5, 2.5),
        (operator.imul, 0.5, 1.0),
        (operator.itruediv, 0.5, 4.0),
        (operator.itruediv, 0.0, float("inf")),
    ],
)
def test_a_scalar_leaf_updated_in_place_under_no_grad(op, c, want):
    """``w -= lr * w.grad`` on a scalar parameter (its float updated directly, a division by
    the general path): the new value, a version error for a graph that needs the old one,
    and a fresh graph's gradient."""
    w = tg.tensor(2.0, requires_grad=True)
    y = w * w  # its backward reads w's old value
    with tg.no_grad(), np.errstate(divide="ignore"):
        assert op(w, tg.tensor(c)) is w
    assert w.item() == want and w._version == 1 and w.is_leaf and w.requires_grad
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    (w * 3.0).backward()
    assert w.grad.item() == 3.0


def test_in_place_on_a_view_of_a_callers_large_array_names_the_fix():
    """tapegrad's functions see a caller's NumPy array of 4,096+ entries through a read-only
    view (the tape then copies what it would otherwise hold by reference): a Tensor made
    from one without a copy cannot be changed in place, with an error saying what to do,
    and the caller's array is left as it was."""
    X = np.ones(5000)
    r = tg.transpose(X)
    with pytest.raises(ValueError, match=r"read-only.*x = tg.tensor\(x\)"):
        r += 1.0
    assert X[0] == 1.0
    c = tg.tensor(r)
    c += 1.0
    assert c.numpy()[0] == 2.0 and X[0] == 1.0


def test_zero_of_a_graph_result_under_no_grad_keeps_it_in_the_graph():
    """As PyTorch: b = 2a zeroed under no_grad is 0 in later ops, and the gradient still
    reaches a through b (d/da sum(b * a) = b + 2a with b = 0), without a spurious error."""
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2.0
    with tg.no_grad():
        b.zero_()
    (b * a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    s = tg.tensor(1.5, requires_grad=True)
    c = s * 2.0
    with tg.no_grad():
        c.zero_()
    (c * s).backward()
    assert s.grad.item() == 3.0


def test_integer_tensors_keep_their_dtype_in_place_as_numpy_and_pytorch():
    i = tg.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="add_.*float64.*int64"):  # NumPy and PyTorch refuse
        i += 0.5
    i += 1
    i *= 2
    assert i.dtype == np.int64 and i.tolist() == [4, 6, 8]
    i[0] = 2.7  # cast as NumPy casts (toward zero)
    i[1] = -2.7
    assert i.dtype == np.int64 and i.tolist() == [2, -2, 8]
    with pytest.raises(TypeError, match="requires grad.*int64"):
        i[2] = tg.tensor(1.0, requires_grad=True) * 2.0
    m = tg.tensor([True, False])
    m[1] = True
    assert m.dtype == np.bool_ and m.tolist() == [True, True]


def _chain(x, in_place):
    """b = ((2x + 1) x / (x^2 + 1) - x), by chained in-place ops or out of place."""
    b = x * 2
    if in_place:
        b += 1
        b *= x
        b /= x * x + 1
        b -= x
    else:
        b = (b + 1) * x / (x * x + 1) - x
    return (b**2).sum()


def test_chained_in_place_ops_differentiate_to_every_order():
    # a division's output changed in place afterwards (b /= c; b -= x) is what PyTorch's
    # division does not keep: no version error, at any order, as in PyTorch
    x0 = np.array([0.5, 1.5, -2.0])
    grads = []
    for in_place in (True, False):
        x = tg.tensor(x0, requires_grad=True)
        (g,) = tg.autograd.grad(_chain(x, in_place), x, create_graph=True)
        (h,) = tg.autograd.grad(g.sum(), x)
        y = _chain(tg.tensor(x0, requires_grad=True), in_place)
        y.backward()
        grads.append((g.detach().numpy(), h.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-13)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-13)
    np.testing.assert_allclose(grads[0][0], [0.456, -0.38097406, -9.216], rtol=1e-7)  # torch's


@pytest.mark.parametrize(
    "op, changed",
    [
        ("tanh", "a"),
        ("sigmoid", "a"),
        ("relu", "a"),
        ("expm1", "a"),
        ("reciprocal", "a"),
        ("rdiv", "a"),
        ("rdiv", "out"),
        ("div", "out"),
    ],
)
def test_in_place_change_of_a_value_pytorch_does_not_keep_is_no_error(op, changed):
    # tanh, sigmoid, relu, expm1 keep their output in PyTorch, 3 / a and a / c their operands;
    # tapegrad's rows hold their values, so the gradient is the one computed without the change
    fns = {
        "tanh": lambda a: a.tanh(),
        "sigmoid": lambda a: a.sigmoid(),
        "relu": lambda a: a.relu(),
        "expm1": lambda a: a.expm1(),
        "reciprocal": lambda a: a.reciprocal(),
        "rdiv": lambda a: 3.0 / a,
        "div": lambda a: a / (a * a + 1),
    }
    x0 = np.array([0.3, -0.6, 1.2])
    x = tg.tensor(x0, requires_grad=True)
    a = x * 1
    y = fns[op](a)
    (a if changed == "a" else y).add_(5.0)
    (y * y).sum().backward() if changed == "a" else (y * 1.0).sum().backward()
    ref = tg.tensor(x0, requires_grad=True)
    r = fns[op](ref * 1)
    (r * r).sum().backward() if changed == "a" else r.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-13)
