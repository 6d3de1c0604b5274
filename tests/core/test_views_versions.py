"""Writes through other handles of the same memory, and reads that change nothing.

A detached Tensor shares its source's array and version counter (as in PyTorch), so a write
into it is an in-place change of the source: a backward that needs the old value raises,
whatever the array's size (small values live on the tape, large ones are held lazily).
Reading ``x.data`` changes nothing, so it never makes a later backward fail."""

import numpy as np
import pytest

import tapegrad as tg

VERSION_ERROR = "modified by an inplace operation"


@pytest.mark.parametrize("n", [3, 5000])  # a value on the tape, and a lazily held array
def test_write_into_detached_tensor_is_a_change_of_its_source(n):
    x = tg.tensor(np.linspace(0.1, 1.0, n), requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()  # its backward reads y
    d = y.detach()
    d[0] = 100.0
    assert y[0].item() == 100.0  # shared memory, as in PyTorch
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        z.backward()


@pytest.mark.parametrize("n", [3, 5000])
def test_write_into_detached_tensor_leaves_gradients_that_do_not_read_it(n):
    x = tg.tensor(np.linspace(0.1, 1.0, n), requires_grad=True)
    y = x * 2.0
    z = (y + 1.0).sum()  # its backward does not read y
    y.detach()[0] = 100.0
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(n, 2.0))


@pytest.mark.parametrize("n", [3, 5000])
def test_detached_copy_used_in_a_graph_keeps_its_recorded_value(n):
    """A graph that read the detached array keeps the value it read when the source
    changes in place later (the tape copies the shared array first)."""
    w = tg.tensor(np.full(n, 3.0), requires_grad=True)
    src = tg.tensor(np.linspace(1.0, 2.0, n))
    d = src.detach()
    loss = (w * d).sum()
    with tg.no_grad():
        src[...] = 0.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.linspace(1.0, 2.0, n))


def _sin_times(v):
    return tg.sin(v) * v


class _Square(tg.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2.0 * a * g


def test_reading_data_after_a_checkpoint_changes_nothing():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.checkpoint(_sin_times, x)
    assert x.data.tolist() == [1.0, 2.0]  # a read
    y.sum().backward()
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-15)


def test_reading_data_after_a_custom_function_changes_nothing():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = _Square.apply(x)
    _ = x.data
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_assigning_data_after_a_checkpoint_is_a_change():
    """The checkpoint recomputes from its inputs at backward: a new value would give the
    derivative at another point, so it raises."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.checkpoint(_sin_times, x)
    x.data = np.array([5.0, 6.0])
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


# ---- writes through views other than slices -------------------------------------------------
W = 1.0 + np.arange(6.0).reshape(2, 3)
VIEWS = {
    "reshape": lambda y: y.reshape(3, 2),
    "view": lambda y: y.view(-1),
    "ravel": lambda y: y.ravel(),
    "T": lambda y: y.T,
    "transpose": lambda y: y.transpose(1, 0),
    "permute": lambda y: y.permute(1, 0),
    "swapaxes": lambda y: y.swapaxes(0, 1),
    "unsqueeze": lambda y: y.unsqueeze(0),
    "squeeze of unsqueeze": lambda y: y.unsqueeze(0).squeeze(0),
    "reshape of T": lambda y: y.T.reshape(-1),
}


def _write_through(lib, make_view):
    if lib == "tg":
        x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        w = W
    else:
        torch = pytest.importorskip("torch")
        x = torch.tensor(np.arange(6.0).reshape(2, 3), dtype=torch.float64, requires_grad=True)
        w = torch.tensor(W)
    y = x * 1.0
    v = make_view(y)
    v[(0,) * (v.ndim - 1) + (1,)] = 100.0  # one element, through the view
    v2 = make_view(y)
    loss = (y * y * w).sum() + (v2 * v2).sum()
    loss.backward()
    return y.detach().numpy(), v2.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_write_through_a_view_matches_torch(name):
    ours = _write_through("tg", VIEWS[name])
    if name == "reshape of T":  # a transpose's elements in no strides: a copy, as NumPy's
        y, _, _ = ours  # and PyTorch's reshape make, so y is unchanged
        np.testing.assert_array_equal(y, np.arange(6.0).reshape(2, 3))
    theirs = _write_through("torch", VIEWS[name])
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-15)


NUMPY_VIEWS = {
    "np.reshape": lambda y: np.reshape(y, (3, 2)),
    "np.transpose": lambda y: np.transpose(y),
    "np.swapaxes": lambda y: np.swapaxes(y, 0, 1),
    "np.moveaxis": lambda y: np.moveaxis(y, 0, 1),
    "np.ravel": lambda y: np.ravel(y),
    "np.expand_dims": lambda y: np.expand_dims(y, 0),
    "np.squeeze": lambda y: np.squeeze(np.expand_dims(y, 0)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_VIEWS))
def test_numpy_views_inside_grad_alias_as_in_numpy(name):
    make = NUMPY_VIEWS[name]

    def f(x):
        y = x * 1.0
        v = make(y)
        idx = (0,) * (v.ndim - 1) + (1,)
        v[idx] = 3.0 * v[idx] ** 2  # reads and writes through the view
        return np.sum(y * y * W)

    x0 = np.arange(6.0).reshape(2, 3) + 1.0
    value, grad = tg.value_and_grad(f)(x0)
    assert value == f(x0.copy())  # plain NumPy, same aliasing
    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = 1e-6
        num[i] = (f(x0 + e) - f(x0 - e)) / 2e-6
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-6)


def test_a_write_through_a_detached_alias_is_read_by_later_ops_and_their_backward():
    """``b.detach()`` shares b's array (PyTorch's shared storage): after a write through it,
    ops on b compute with the new value and their backward reads the new value too, while
    the gradient still flows to what b was computed from (values as PyTorch's)."""
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a.sin()
    b.detach().mul_(0.0)
    out = (b * b).sum()
    out.backward()
    assert out.item() == 0.0
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])  # was sin(2a): a stale b

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a + 0.0
    b.detach()[0] = 10.0
    (b * a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [11.0, 4.0])

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    c = b.detach().requires_grad_()
    with tg.no_grad():
        c.mul_(2.0)
    (b * c).sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), [2.0, 8.0])
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 32.0])


@pytest.mark.parametrize("n", [2, 5000])  # a pending entry, and a size that could stay lazy
def test_a_write_into_a_from_numpy_array_is_seen_by_the_ops_recorded_after_it_only(n):
    """tg.from_numpy shares the caller's array, whose writes tapegrad cannot see: each op
    that uses the Tensor enters its value as it is then, so every op's backward reads what
    its forward computed with (the backward read the first op's copy: a silent mix)."""
    arr = np.ones(n)
    c = tg.from_numpy(arr)
    x = tg.tensor(np.ones(n), requires_grad=True)
    y = (x * c).sum()  # with c = 1
    arr[0] = 100.0
    z = (x * c).sum()  # with c[0] = 100
    assert z.item() == 100.0 + (n - 1)
    (y + z).backward()
    assert x.grad.numpy()[0] == 101.0 and x.grad.numpy()[-1] == 2.0
    mem = np.array([1.0, 2.0])
    leaf = tg.from_numpy(mem).requires_grad_()
    a = (leaf * leaf).sum()
    mem[0] = 10.0
    b = (leaf * leaf).sum()
    (a + b).backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0 + 20.0, 4.0 + 4.0])
