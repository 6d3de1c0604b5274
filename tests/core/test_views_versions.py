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


# ---- views beyond slices: 0-d views, expand, flatten, ravel, in-place operators ------------
def _side_by_side(program):
    """``program(lib, leaf)`` run in tapegrad and in PyTorch: its returned tensors' values
    and the gradients of its loss (the last one) in the leaves, first and second order."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in ("tg", "torch"):

        def leaf(values, lib=lib):
            if lib == "tg":
                return tg.tensor(np.asarray(values, dtype=float), requires_grad=True)
            return torch.tensor(np.asarray(values, dtype=float), requires_grad=True)

        leaves = []

        def make(values, leaf=leaf, leaves=leaves):
            leaves.append(leaf(values))
            return leaves[-1]

        outs = program(lib, make)
        grads = (tg if lib == "tg" else torch).autograd.grad(outs[-1], leaves, create_graph=True)
        total = sum(((g * g).sum() for g in grads), 0.0)
        second = (tg if lib == "tg" else torch).autograd.grad(total, leaves)
        results.append([np.asarray(o.detach().numpy()) for o in (*outs, *grads, *second)])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def _loss(*ts):
    return sum(((t * t * t).sum() for t in ts), 0.0)


ZERO_D_VIEWS = {
    "y[1].mul_": lambda y, z: y[1].mul_(z[0]),
    "y.select(0, -1).zero_": lambda y, z: y.select(0, -1).zero_(),
    "y.select(0, 2).copy_": lambda y, z: y.select(0, 2).copy_(z[1]),
    "y[..., 0].add_ (1-d y)": lambda y, z: y[..., 0].add_(z[0] * z[1]),
    "y.reshape(3)[0].fill_": lambda y, z: y.reshape(3)[0].fill_(5.0),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_VIEWS))
def test_a_0d_view_is_a_view_in_the_tensor_api(name):
    """``y[i]`` of a 1-d tensor (and select, unbind) is a 0-d view in PyTorch: an in-place
    change of it changes y, and a change of y shows in it (it was a copy: y kept its value
    and the gradient missed the write)."""
    write = ZERO_D_VIEWS[name]

    def program(lib, leaf):
        x, z = leaf([0.5, -1.0, 2.0]), leaf([1.5, 0.25])
        y = x * 2.0
        write(y, z)
        v = y[2]
        y.mul_(z[1])  # a write into y, read through the live view v
        return y, v, _loss(y, v)

    _side_by_side(program)


def test_a_0d_index_inside_a_transform_is_numpy_s_scalar_or_0d_view():
    """Inside tg.grad NumPy's meanings hold: ``a[0]`` of a 1-d array is a scalar copy, while
    ``a[0, ...]`` is a 0-d view (and a ravel of it a view of a)."""

    def f(x):
        a = x * 1.0
        s = a[0]
        s += 10.0  # a new scalar: a is unchanged
        v = a[1, ...]
        v *= 3.0  # a 0-d view: a[1] triples
        r = a[2, ...].ravel()
        r[0] = r[0] ** 2  # a view of a 0-d view: a[2] squared
        return np.sum(a * a) + s

    x0 = np.array([0.5, -1.0, 2.0])
    value, grad = tg.value_and_grad(f)(x0)
    assert value == f(x0.copy()) == 0.25 + 9.0 + 16.0 + 10.5
    np.testing.assert_allclose(grad, [2 * 0.5 + 1.0, 18.0 * -1.0, 4 * 2.0**3], rtol=1e-15)


EXPANDS = {
    "expand": lambda y: y[:1].expand(3, 3),
    "expand -1": lambda y: y.unsqueeze(0).expand(2, -1, -1),
    "broadcast_to": lambda y: y.broadcast_to((2, 2, 3)),
    "expand_as": lambda y: y[:, :1].expand_as(y),
    "tg.broadcast_to": lambda y: (tg if isinstance(y, tg.Tensor) else _torch()).broadcast_to(
        y, (4, 2, 3)
    ),
}


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(EXPANDS))
def test_an_expanded_view_shows_a_later_write_into_its_base(name):
    """expand / broadcast_to / expand_as return views in PyTorch: a write into the base
    shows in them, in value and gradient (they were copies holding the old values)."""
    make = EXPANDS[name]

    def program(lib, leaf):
        x, z = leaf(np.arange(6.0).reshape(2, 3) / 4.0), leaf([1.5, -0.5, 2.0])
        y = x * 1.0
        e = make(y)
        y[0] = z * z  # a write into the base
        y.mul_(x)
        return y, e, _loss(y, e)

    _side_by_side(program)


def test_a_fill_of_an_expanded_view_reaches_its_base_and_other_writes_are_refused():
    torch = _torch()
    for lib in (tg, torch):
        dtype = torch.float64 if lib is torch else None
        x = lib.tensor([[1.0, 2.0]], requires_grad=True, dtype=dtype)
        y = x * 1.0
        e = y.expand(3, 2)
        e.fill_(4.0)
        assert y.tolist() == [[4.0, 4.0]]
        e.zero_()
        assert y.tolist() == [[0.0, 0.0]]
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            e.mul_(2.0)
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            e.clamp_(0.0, 1.0)
        assert y.tolist() == [[0.0, 0.0]]


def test_numpy_broadcast_to_inside_grad_is_a_read_only_view():
    def f(x):
        y = x * 1.0
        b = np.broadcast_to(y, (3, 2))
        y[0] = 5.0 * x[1]  # shows in b, as NumPy's view
        return np.sum(b * b)

    x0 = np.array([1.0, 2.0])
    value, grad = tg.value_and_grad(f)(x0)
    assert value == f(x0.copy()) == 3 * (100.0 + 4.0)
    np.testing.assert_allclose(grad, [0.0, 3 * (2 * 5 * 10.0 + 2 * 2.0)], rtol=1e-15)

    def g(x):
        b = np.broadcast_to(x * 1.0, (3, 2))
        b[0, 0] = 1.0  # NumPy: ValueError, the view is read-only
        return np.sum(b)

    with pytest.raises(ValueError, match="read-only"):
        g(x0.copy())
    with pytest.raises(ValueError, match="read-only"):
        tg.grad(g)(x0)


def test_a_write_through_a_view_keeps_the_value_its_op_saved():
    """``v = y.narrow(...); v.exp_()``: exp's backward reads its own result, which the
    write into the base does not change; it differentiates, as PyTorch's (it raised the
    version-counter error: the view was counted as changed a second time)."""

    def program(lib, leaf):
        x = leaf(np.linspace(0.1, 1.2, 12).reshape(4, 3))
        y = x * 1.5
        v = y.narrow(0, 1, 2)
        v.exp_()
        w = y[3]
        return y, v, _loss(y, v, w)

    _side_by_side(program)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    v = y[:1]
    v.exp_()
    y[1:].sigmoid_()  # a change of v's base after exp saved v: PyTorch raises too
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        v.sum().backward()


def test_flatten_is_a_view_in_the_tensor_api_and_a_copy_inside_a_transform():
    def program(lib, leaf):
        x = leaf(np.arange(6.0).reshape(2, 3) / 5.0)
        y = x * 1.0
        f = y.flatten()
        f.mul_(x.flatten())  # PyTorch's flatten is a view: y changes
        g = y.flatten(1)
        y.add_(1.0)  # ... and shows in g
        return y, f, g, _loss(y, g)

    _side_by_side(program)

    def h(x):
        a = x * 1.0
        c = a.flatten()
        c[0] = 100.0  # NumPy's ndarray.flatten is a copy
        return np.sum(a * a)

    x0 = np.array([1.0, 2.0])
    assert tg.value_and_grad(h)(x0)[0] == h(x0.copy()) == 5.0


def test_ravel_of_a_strided_view_is_a_copy():
    """NumPy's and PyTorch's ravel copy when the elements are not consecutive in memory
    (``y[:, ::2].ravel()``, ``y[:, :1].ravel()``), and NumPy's Fortran-order reshape of a
    C-ordered array copies too; a write into the copy must not reach y."""

    def program(lib, leaf):
        x = leaf(np.arange(6.0).reshape(2, 3) / 5.0)
        y = x * 1.0
        y[:, ::2].ravel().zero_()
        y[:, :1].ravel().mul_(5.0)
        y[:1].ravel().mul_(3.0)  # consecutive: a view, y changes
        y.reshape(-1)[::2].ravel().add_(1.0)
        return y, _loss(y)

    _side_by_side(program)

    def f(x):
        a = x * 1.0
        a[:, ::2].ravel()[0] = 100.0
        np.reshape(a, (3, 2), order="F")[0, 1] = 100.0
        np.ravel(a, order="F")[1] = -5.0
        np.ravel(a[:1], order="F")[2] = x[1, 1] ** 2  # one row: a view
        return np.sum(a * a * a)

    x0 = np.arange(6.0).reshape(2, 3) / 4.0
    value, grad = tg.value_and_grad(f)(x0)
    assert value == f(x0.copy())
    assert value == pytest.approx(np.sum(x0[0, :2] ** 3) + x0[1, 1] ** 6 + np.sum(x0[1] ** 3))
    want = 3 * x0**2
    want[0, 2] = 0.0
    want[1, 1] += 6 * x0[1, 1] ** 5
    np.testing.assert_allclose(grad, want, rtol=1e-14)


@pytest.mark.parametrize("op", ["**=", "%=", "//="])
def test_augmented_assignments_change_the_tensor_in_place(op):
    """``v **= 2`` (and ``%=``, ``//=``) is in place in NumPy and PyTorch: through a view it
    changes the base (Python rebound v to a new Tensor, leaving y as it was)."""
    code = f"v {op} c"

    def program(lib, leaf):
        x = leaf([0.5, 1.75, 2.5])
        y = x * 1.0
        v = y[1:]
        ns = {"v": v if op != "//=" else v.detach(), "c": 2}  # (PyTorch has no derivative
        exec(code, ns)  # noqa: S102 - the operator under test    of floor_divide_)
        return y, ns["v"], _loss(y)

    _side_by_side(program)

    def f(x):
        a = x * 1.0
        v = a[1:]
        ns = {"v": v, "c": 2}
        exec(code, ns)  # noqa: S102
        return np.sum(a * a * a)

    x0 = np.array([0.5, 1.75, 2.5])
    value, grad = tg.value_and_grad(f)(x0)
    assert value == f(x0.copy())
    want = {"**=": 6 * x0**5, "%=": 3 * (x0 % 2) ** 2, "//=": 0 * x0}[op]
    want[0] = 3 * 0.5**2
    np.testing.assert_allclose(grad, want, rtol=1e-15)


def test_a_write_through_a_detached_view_or_a_detached_base_reaches_the_other():
    """``v.detach()`` shares v's memory, which is its base's: a write into it changes the
    base (it changed v only); a write into ``y.detach()`` shows in y's views (they kept
    their old values)."""

    def program(lib, leaf):
        x = leaf([0.5, 1.75, 2.5, -1.0])
        y = x * 1.0
        v = y[1:]
        v.detach().mul_(0.5)
        t = y.reshape(2, 2).T
        y.detach()[0] = 3.0
        u = y[::2]
        t.detach().add_(1.0)
        return y, v, t, u, _loss(y * x, v, t, u)

    _side_by_side(program)
