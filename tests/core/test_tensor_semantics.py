"""PyTorch-style Tensor semantics (tensors and autograd controls), and bad input."""

import math
import threading

import numpy as np
import pytest

import tapegrad as tg


def leaf(v):
    return tg.tensor(v, requires_grad=True)


# ---- the contract's worked examples --------------------------------------------------------------


def test_contract_example_square_sum():
    x = tg.tensor([2.0, 3.0], requires_grad=True)
    (x**2).sum().backward()
    assert x.grad.tolist() == [4.0, 6.0]


def test_contract_example_repr():
    x = tg.tensor([2.0, 3.0], requires_grad=True)
    assert repr(x * 2) == "tensor([4., 6.], grad_fn=<MulBackward0>)"
    assert repr(x) == "tensor([2., 3.], requires_grad=True)"
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr((x * x).sum()) == "tensor(13., grad_fn=<SumBackward0>)"
    assert repr(x + x) == "tensor([4., 6.], grad_fn=<AddBackward0>)"
    assert repr(x.exp()).endswith("grad_fn=<ExpBackward0>)")


def test_repr_of_fractions_uses_fixed_decimals_like_pytorch():
    assert repr(tg.tensor([0.5, 0.25])) == "tensor([0.5000, 0.2500])"


@pytest.mark.skipif(not hasattr(tg, "Function"), reason="tg.Function not added yet")
def test_contract_example_custom_square():
    class Square(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 2 * x

    x = leaf([1.5, -2.0])
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, -4.0]


@pytest.mark.skipif(not hasattr(tg, "grad"), reason="functional tg.grad not added yet")
def test_contract_example_nested_grad_of_numpy_sin():
    assert tg.grad(tg.grad(tg.grad(np.sin)))(0.0) == -1.0


# ---- creation helpers ----------------------------------------------------------------------------


def test_tensor_dtypes_and_copy():
    data = np.array([1.0, 2.0])
    t = tg.tensor(data)
    data[0] = 99.0
    assert t.tolist() == [1.0, 2.0]  # a copy
    assert t.dtype == np.float64
    assert tg.tensor([1, 2]).dtype.kind == "i"  # integer data stays integer
    assert tg.tensor([1, 2], dtype=float).dtype == np.float64
    assert tg.tensor(np.float32(1.5)).dtype == np.float64
    assert tg.tensor(3.0).shape == () and tg.tensor(3.0).ndim == 0
    assert tg.tensor([[1.0, 2.0, 3.0]]).shape == (1, 3)
    assert tg.tensor([[1.0, 2.0, 3.0]]).size == 3
    t = tg.tensor([1, 2], dtype=float, requires_grad=True)
    assert t.requires_grad and t.dtype == np.float64


@pytest.mark.parametrize(
    "make, shape, value",
    [
        (lambda **k: tg.zeros(2, 3, **k), (2, 3), 0.0),
        (lambda **k: tg.zeros((2, 3), **k), (2, 3), 0.0),
        (lambda **k: tg.ones(4, **k), (4,), 1.0),
        (lambda **k: tg.ones((2, 2), **k), (2, 2), 1.0),
        (lambda **k: tg.full((3,), 2.5, **k), (3,), 2.5),
        (lambda **k: tg.full((2, 1), -1.0, **k), (2, 1), -1.0),  # (an int fill: int64)
    ],
)
@pytest.mark.parametrize("rg", [False, True])
def test_constant_creation_helpers(make, shape, value, rg):
    t = make(requires_grad=rg)
    assert t.shape == shape and t.dtype == np.float64
    assert np.all(t.numpy() == value)
    assert t.requires_grad is rg and t.is_leaf


def test_arange_linspace_eye():
    assert tg.arange(4).tolist() == [0, 1, 2, 3]
    assert tg.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert tg.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    a = tg.arange(3, requires_grad=True)
    assert a.requires_grad and a.dtype == np.float64 and a.tolist() == [0.0, 1.0, 2.0]
    assert tg.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert tg.linspace(0, 1, 3, requires_grad=True).requires_grad
    np.testing.assert_array_equal(tg.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(tg.eye(2, 3).numpy(), np.eye(2, 3))
    assert tg.eye(2, requires_grad=True).requires_grad


def test_random_helpers_and_manual_seed():
    tg.manual_seed(123)
    a, b = tg.randn(3, 4), tg.rand(2, 2)
    tg.manual_seed(123)
    a2, b2 = tg.randn((3, 4)), tg.rand(2, 2)
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    np.testing.assert_array_equal(b.numpy(), b2.numpy())
    assert a.shape == (3, 4) and a.dtype == np.float64
    assert np.all((b.numpy() >= 0) & (b.numpy() < 1))
    tg.manual_seed(124)
    assert not np.array_equal(tg.randn(3, 4).numpy(), a.numpy())
    assert tg.randn(2, requires_grad=True).requires_grad
    assert tg.rand(2, requires_grad=True).requires_grad
    big = tg.randn(20000).numpy()
    assert abs(big.mean()) < 0.05 and abs(big.std() - 1) < 0.05


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        tg.tensor([1, 2], requires_grad=True)
    t = tg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad = True
    assert not t.requires_grad


# ---- requires_grad, is_leaf, grad_fn -------------------------------------------------------------


def test_requires_grad_propagates():
    a = leaf([1.0, 2.0])
    c = tg.tensor([3.0, 4.0])
    assert (a * c).requires_grad and (c * a).requires_grad and (a + 1.0).requires_grad
    assert not (c * c).requires_grad and not (c + 1.0).requires_grad
    assert (c * 2.0 + a.sum()).requires_grad
    assert tg.exp(a).requires_grad and a[0].requires_grad and a.reshape(2, 1).requires_grad
    with tg.no_grad():
        assert not (a * c).requires_grad
    assert not a.detach().requires_grad


def test_is_leaf_and_grad_fn():
    a = leaf([1.0, 2.0])
    assert a.is_leaf and a.grad_fn is None
    y = a * 2.0
    assert not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    assert (y + a).grad_fn.name() == "AddBackward0"
    c = tg.tensor([1.0]) * 2.0  # no grad: a leaf, as in PyTorch
    assert c.is_leaf and c.grad_fn is None and not c.requires_grad
    d = y.detach()
    assert d.is_leaf and d.grad_fn is None and not d.requires_grad
    np.testing.assert_array_equal(d.numpy(), [2.0, 4.0])


def test_requires_grad_of_non_leaf_cannot_be_switched_off():
    y = leaf([1.0]) * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)


def test_requires_grad_switched_on_later():
    a = tg.tensor([1.0, 2.0])
    a.requires_grad_()
    (a * a).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0]


# ---- .grad accumulation, zero_, detach -----------------------------------------------------------


def test_grad_accumulates_until_zeroed():
    x = leaf([1.0, 2.0])
    for k in range(1, 4):
        (x * x).sum().backward()
        assert x.grad.tolist() == [2.0 * k, 4.0 * k]
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0]
    (x * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    (x * 5.0).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_scalar_leaf_grad_accumulates():
    x = leaf(2.0)
    (x * x).backward()
    (x * x * x).backward()
    assert x.grad.item() == 4.0 + 12.0
    assert x.grad.shape == ()


def test_grad_is_not_tracked_and_not_aliased_to_next_grad():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    g = x.grad
    assert not g.requires_grad
    kept = g.numpy().copy()
    x.grad = None
    (x * 10.0).sum().backward()
    np.testing.assert_array_equal(g.numpy(), kept)


def test_detach_cuts_the_graph():
    x = leaf([1.0, 2.0])
    y = x * x.detach()  # d/dx = x (the detached factor is a constant)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0]


def test_value_readable_after_backward():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    loss = y.sum()
    loss.backward()
    assert loss.item() == 9.0 and y.tolist() == [3.0, 6.0]
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(np.asarray(y.detach()), [3.0, 6.0])


# ---- grad mode -----------------------------------------------------------------------------------


def test_no_grad_enable_grad_nest():
    x = leaf(1.0)
    assert tg.is_grad_enabled()
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        assert not (x * 2.0).requires_grad
        with tg.enable_grad():
            assert tg.is_grad_enabled()
            assert (x * 2.0).requires_grad
            with tg.no_grad():
                assert not tg.is_grad_enabled()
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_context_function_and_decorator():
    x = leaf(1.0)
    with tg.set_grad_enabled(False):
        assert not tg.is_grad_enabled()
        with tg.set_grad_enabled(True):
            assert (x * 2.0).requires_grad
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()
    tg.set_grad_enabled(False)  # as a plain call, like PyTorch
    try:
        assert not tg.is_grad_enabled()
    finally:
        tg.set_grad_enabled(True)
    assert tg.is_grad_enabled()

    @tg.set_grad_enabled(False)
    def f():
        return tg.is_grad_enabled(), (x * 2.0).requires_grad

    assert tg.is_grad_enabled()
    assert f() == (False, False)
    assert tg.is_grad_enabled()


def test_no_grad_and_enable_grad_as_decorators():
    x = leaf(1.0)

    @tg.no_grad()
    def off():
        return (x * 2.0).requires_grad

    @tg.enable_grad()
    def on():
        return (x * 2.0).requires_grad

    assert off() is False
    assert tg.is_grad_enabled()
    with tg.no_grad():
        assert on() is True
        assert not tg.is_grad_enabled()
    assert off.__name__ == "off"


def test_grad_mode_decorators_without_parentheses():
    x = leaf(1.0)

    @tg.no_grad
    def off():
        return (x * 2.0).requires_grad

    @tg.enable_grad
    def on():
        return (x * 2.0).requires_grad

    assert off() is False
    with tg.no_grad():
        assert on() is True
    assert tg.is_grad_enabled()


@pytest.mark.parametrize("make", [tg.no_grad, lambda: tg.set_grad_enabled(False)])
def test_grad_mode_decorator_on_a_generator_covers_its_body(make):
    """The body runs with recording off at each resumption, the caller's mode is back between
    them, and what is sent or thrown in reaches the body (PyTorch's decorators likewise): the
    generator's x * 2 gives no gradient, as in PyTorch, where it used to give 2."""
    x = leaf(3.0)

    @make()
    def gen():
        got = yield x * 2.0
        try:
            yield got, tg.is_grad_enabled()
        except ValueError:
            yield "caught", tg.is_grad_enabled()
        return "done"

    it = gen()
    y = next(it)
    assert not y.requires_grad
    assert tg.is_grad_enabled() and (x * 2.0).requires_grad
    assert it.send(5) == (5, False)
    assert it.throw(ValueError("v")) == ("caught", False)
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done"
    assert tg.is_grad_enabled()


def test_enable_grad_decorator_on_a_generator_inside_no_grad():
    x = leaf(3.0)

    @tg.enable_grad()
    def gen():
        yield x * 2.0

    with tg.no_grad():
        (y,) = list(gen())
        assert not tg.is_grad_enabled()
    y.backward()
    assert x.grad.item() == 2.0


def test_grad_mode_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with tg.no_grad():
            1 / 0  # noqa: B018  (the division is what raises)
    assert tg.is_grad_enabled()

    @tg.no_grad()
    def boom():
        raise ValueError("x")

    with pytest.raises(ValueError):
        boom()
    assert tg.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    with tg.no_grad():
        th = threading.Thread(target=lambda: seen.append(tg.is_grad_enabled()))
        th.start()
        th.join()
        assert not tg.is_grad_enabled()
    assert seen == [True]


# ---- backward(gradient=...), retain_graph -------------------------------------------------------


def test_backward_with_gradient_argument():
    x = leaf([1.0, 2.0])
    (x * x).backward(gradient=np.array([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 40.0]
    x.grad = None
    (x * 3.0).backward(gradient=tg.tensor([2.0, -1.0]))
    assert x.grad.tolist() == [6.0, -3.0]
    x.grad = None
    (x * 3.0).backward(tg.tensor([1.0, 1.0]))  # positional, like PyTorch
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_gradient_shape_mismatch():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"shape"):
        (x * 2.0).backward(gradient=np.ones(3))


def test_second_backward_needs_retain_graph():
    x = leaf(2.0)
    y = x * x * x
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 2 * 12.0
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        y.backward()


def test_second_backward_through_shared_subgraph_raises():
    x = leaf([1.0, 2.0])
    h = x.exp()
    h.sum().backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        (h * 2.0).sum().backward()


def test_retain_graph_through_autograd_grad():
    x = leaf(3.0)
    y = x * x
    (g1,) = tg.autograd.grad(y, x, retain_graph=True)
    (g2,) = tg.autograd.grad(y, x)
    assert g1.item() == g2.item() == 6.0
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        tg.autograd.grad(y, x)


def test_backward_on_leaf_itself():
    x = leaf(2.0)
    x.backward()
    assert x.grad.item() == 1.0


# ---- autograd.grad / autograd.backward -----------------------------------------------------------


def test_autograd_grad_several_outputs_inputs_and_grad_outputs():
    a, b = leaf(2.0), leaf([1.0, -1.0])
    y1 = a * b  # shape (2,)
    y2 = (a * a).sum()  # scalar
    ga, gb = tg.autograd.grad([y1, y2], [a, b], grad_outputs=[np.array([1.0, 3.0]), 2.0])
    assert ga.item() == (1.0 * 1.0 + 3.0 * -1.0) + 2.0 * 2 * 2.0
    assert gb.tolist() == [2.0, 6.0]
    assert a.grad is None and b.grad is None  # grad() does not accumulate
    assert not ga.requires_grad


def test_autograd_grad_single_tensor_forms_return_tuples():
    x = leaf([1.0, 2.0])
    res = tg.autograd.grad((x * x).sum(), x)
    assert isinstance(res, tuple) and len(res) == 1
    assert res[0].tolist() == [2.0, 4.0]
    res = tg.autograd.grad((x * 2.0).sum(), [x], grad_outputs=tg.tensor(3.0))
    assert res[0].tolist() == [6.0, 6.0]


def test_autograd_grad_allow_unused():
    a, b, c = leaf(2.0), leaf(3.0), leaf(4.0)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        tg.autograd.grad(a * b, [a, c])
    ga, gc = tg.autograd.grad(a * b, [a, c], allow_unused=True)
    assert ga.item() == 3.0 and gc is None


def test_autograd_grad_materialize_grads():
    """Zeros of the input's shape for an unused input (PyTorch's materialize_grads), also
    with create_graph; asking for it with allow_unused=False is a contradiction."""
    a, c = leaf(2.0), leaf([4.0, 5.0])
    for create_graph in (False, True):
        ga, gc = tg.autograd.grad(a * a, [a, c], create_graph=create_graph, materialize_grads=True)
        assert ga.item() == 4.0 and gc.tolist() == [0.0, 0.0] and not gc.requires_grad
    with pytest.raises(ValueError, match="allow_unused=True"):
        tg.autograd.grad(a * a, [a, c], allow_unused=False, materialize_grads=True)


def test_autograd_grad_is_grads_batched():
    """One gradient per row of the batched cotangents: the rows of the Jacobian for an
    identity batch, stacked; a graph through them with create_graph."""
    x = leaf([0.5, 2.0])
    w = leaf(3.0)
    y = x**2 * w
    gx, gw = tg.autograd.grad(y, [x, w], tg.eye(2), is_grads_batched=True)
    np.testing.assert_allclose(gx.numpy(), np.diag([3.0, 12.0]))  # 2 x w on the diagonal
    np.testing.assert_allclose(gw.numpy(), [0.25, 4.0])  # x**2
    y = x**3
    (gx,) = tg.autograd.grad(
        y, x, tg.tensor([[1.0, 1.0], [2.0, 0.0]]), is_grads_batched=True, create_graph=True
    )
    np.testing.assert_allclose(gx.detach().numpy(), [[0.75, 12.0], [1.5, 0.0]])  # 3 x^2 * ct
    gx.sum().backward()  # d/dx sum over items of 3 x^2 ct = 6 x (ct summed over items)
    np.testing.assert_allclose(x.grad.numpy(), [6 * 0.5 * 3.0, 6 * 2.0 * 1.0])
    for create_graph in (False, True):  # an empty batch: (0, *x.shape), a Tensor either way
        (g0,) = tg.autograd.grad(
            x * 2.0, x, tg.zeros(0, 2), is_grads_batched=True, create_graph=create_graph
        )
        assert isinstance(g0, tg.Tensor) and g0.shape == (0, 2)
    with pytest.raises(ValueError, match="needs grad_outputs"):
        tg.autograd.grad((x * x).sum(), x, is_grads_batched=True)
    with pytest.raises(ValueError, match="first \\(batch\\) dimension"):
        tg.autograd.grad(
            [x * 1.0, x * 2.0], x, [tg.ones((2, 2)), tg.ones((3, 2))], is_grads_batched=True
        )


def test_autograd_grad_of_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    y = (h * h).sum()
    gh, gx = tg.autograd.grad(y, [h, x])
    assert gh.tolist() == [6.0, 12.0] and gx.tolist() == [18.0, 36.0]


def test_autograd_backward_several_tensors():
    a, b = leaf(2.0), leaf(3.0)
    tg.autograd.backward([a * b, a + b], [tg.tensor(1.0), tg.tensor(2.0)])
    assert a.grad.item() == 3.0 + 2.0 and b.grad.item() == 2.0 + 2.0
    tg.autograd.backward((a * a).sum())
    assert a.grad.item() == 5.0 + 4.0


def test_autograd_grad_of_non_grad_output_raises():
    x = tg.tensor(1.0)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(x * 2.0, [leaf(1.0)])


# ---- in-place updates ----------------------------------------------------------------------------


def test_sgd_step_in_place_under_no_grad():
    w = leaf([1.0, -2.0])
    ident = id(w)
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with tg.no_grad():
            w -= 0.25 * w.grad
        w.grad.zero_()
    assert id(w) == ident and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * 0.5**3)
    (w * 2.0).sum().backward()  # still usable as a leaf afterwards
    assert w.grad.tolist() == [2.0, 2.0]


def test_in_place_methods_under_no_grad():
    w = leaf([1.0, 2.0])
    with tg.no_grad():
        w.add_(1.0)
        w.mul_(tg.tensor([2.0, 3.0]))
        w.sub_(np.array([1.0, 1.0]))
        w.div_(2.0)
        w += 1.0
        w *= 2.0
        w /= 4.0
    np.testing.assert_allclose(
        w.numpy(), ((np.array([1.0, 2.0]) + 1) * [2, 3] - 1) / 2 * 2 / 4 + 0.5
    )
    assert w.requires_grad and w.is_leaf


def test_scalar_leaf_in_place_update():
    w = leaf(3.0)
    (w * w).backward()
    with tg.no_grad():
        w -= 0.5 * w.grad
    assert w.item() == 0.0 and w.requires_grad


def test_in_place_on_leaf_requiring_grad_raises_outside_no_grad():
    w = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="in-place"):
        w += 1.0
    assert w.tolist() == [1.0, 2.0]


def test_in_place_on_graph_tensor_is_differentiable():
    x = leaf([1.0, 2.0])
    y = x * 2.0
    y += x  # y = 3x
    y *= x  # y = 3x^2
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


# ---- dim= alias, comparisons, numpy mixing -------------------------------------------------------


def test_dim_is_an_alias_of_axis():
    v = np.arange(6.0).reshape(2, 3)
    x = leaf(v)
    np.testing.assert_array_equal(x.sum(dim=1).numpy(), v.sum(axis=1))
    np.testing.assert_array_equal(x.mean(dim=0).numpy(), v.mean(axis=0))
    np.testing.assert_array_equal(x.max(dim=1).values.numpy(), v.max(axis=1))
    np.testing.assert_array_equal(x.min(dim=0).values.numpy(), v.min(axis=0))
    np.testing.assert_array_equal(x.prod(dim=1).numpy(), v.prod(axis=1))
    np.testing.assert_allclose(x.softmax(dim=0).numpy(), tg.softmax(x, 0).numpy())
    np.testing.assert_allclose(x.log_softmax(dim=0).numpy(), tg.log_softmax(x, 0).numpy())
    np.testing.assert_allclose(x.logsumexp(dim=1).numpy(), tg.logsumexp(x, 1).numpy())
    np.testing.assert_allclose(x.var(dim=1).numpy(), v.var(axis=1, ddof=1))
    np.testing.assert_allclose(x.std(dim=1).numpy(), v.std(axis=1, ddof=1))
    assert x.sum(dim=1, keepdim=True).shape == (2, 1)
    assert x.squeeze(dim=0).shape == (2, 3)  # PyTorch: a dim not of size one stays
    assert leaf(np.ones((1, 3, 1))).squeeze(dim=-1).shape == (1, 3)
    assert leaf(np.ones((1, 3, 1))).squeeze(0).shape == (3, 1)
    with pytest.raises(TypeError):
        x.sum(axis=0, dim=1)


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparisons_return_bool_tensors_without_grad(op):
    x = leaf([1.0, 2.0, 3.0])  # noqa: F841  (x and other are read by eval)
    for other in (2.0, tg.tensor([3.0, 2.0, 1.0]), np.array([3.0, 2.0, 1.0])):  # noqa: B007
        out = eval(f"x {op} other")
        expect = eval(f"np.array([1.0, 2.0, 3.0]) {op} np.asarray(other)")
        assert out.dtype == np.bool_
        assert not out.requires_grad
        np.testing.assert_array_equal(np.asarray(out), expect)


def test_numpy_scalars_and_arrays_mix_in():
    # These go through Python operator fallback today; tapegrad._dispatch (__array_ufunc__)
    # must keep them working.
    t = leaf([1.0, 2.0])
    for y in (
        np.float64(2.0) * t,
        t * np.float64(2.0),
        np.ones(2) + t,
        t + np.ones(2),
        np.ones(2) * t * 1.0,
        np.array([3.0, 3.0]) - t,
        np.array(2.0) * t,
    ):
        assert isinstance(y, tg.Tensor) and y.requires_grad
    y = np.float64(2.0) * t + np.ones(2) + t * np.int64(3) - np.array([1.0, 0.0]) / 2.0
    np.testing.assert_allclose(y.numpy(), 5 * np.array([1.0, 2.0]) + 1 - [0.5, 0.0])
    y.sum().backward()
    assert t.grad.tolist() == [5.0, 5.0]


def test_python_ints_and_bools_mix_in():
    t = leaf([1.0, 2.0])
    y = 2 * t + 1 - t / 2 + t**2
    y.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 - 0.5 + 2 * np.array([1.0, 2.0]))


def test_tensor_attributes():
    x = leaf(np.zeros((2, 3)))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float64
    assert x.T.shape == (3, 2) and len(x) == 2
    assert isinstance(x.data, np.ndarray) and not isinstance(x.data, tg.Tensor)
    assert tg.tensor(1.5).item() == 1.5 and isinstance(tg.tensor(1.5).item(), float)
    assert tg.tensor([[1.0, 2.0]]).tolist() == [[1.0, 2.0]]
    assert float(leaf([2.5])) == 2.5
    with pytest.raises((ValueError, TypeError)):
        leaf([1.0, 2.0]).item()


def test_integer_tensors_keep_their_dtype_when_indexed():
    labels = tg.tensor([0, 2, 1])
    assert labels[1].dtype.kind == "i" and labels[1].item() == 2
    assert labels[1:].dtype.kind == "i" and labels[[2, 0]].tolist() == [1, 0]
    assert tg.tensor([True, False])[0].dtype == np.bool_
    logits = leaf(np.arange(9.0).reshape(3, 3))
    picked = tg.stack([logits[i, labels[i]] for i in range(3)])  # a label used as an index
    assert picked.tolist() == [0.0, 5.0, 7.0]
    picked.sum().backward()
    np.testing.assert_array_equal(logits.grad.numpy(), np.eye(3)[[0, 2, 1]])
    np.testing.assert_array_equal(logits[tg.arange(3), labels].numpy(), [0.0, 5.0, 7.0])


# ---- bad input -----------------------------------------------------------------------------------


def test_backward_on_non_scalar_without_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2.0).backward()


def test_backward_on_size_one_non_scalar_is_allowed():
    x = leaf([3.0])
    (x * x).backward()
    assert x.grad.tolist() == [6.0]


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"),
        (lambda a, b: a**b, "pow"),
        (tg.maximum, "maximum"),
        (tg.minimum, "minimum"),
    ],
)
def test_shapes_that_do_not_broadcast(op, name):
    a = leaf(np.ones((2, 3)))
    b = tg.tensor(np.ones(4))
    with pytest.raises(ValueError, match=rf"{name}.*\(2, 3\).*\(4,\)"):
        op(a, b)
    with pytest.raises(ValueError, match=rf"{name}.*\(2, 3\).*\(4,\)"):
        op(a.detach(), b)  # the no-grad path names them too


def test_broadcast_to_and_where_shape_errors():
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 4\)"):
        tg.broadcast_to(leaf([1.0, 2.0, 3.0]), (2, 4))
    with pytest.raises(ValueError):
        tg.where(np.array([True, False, True]), leaf([1.0, 2.0]), 0.0)


@pytest.mark.parametrize(
    "sa, sb",
    [((2, 3), (4, 2)), ((3,), (4,)), ((2, 3), (2,)), ((5, 2, 3), (4, 3, 2)), ((3,), (2, 4))],
)
def test_matmul_shape_mismatch_names_shapes(sa, sb):
    a, b = leaf(np.ones(sa)), tg.tensor(np.ones(sb))
    with pytest.raises(ValueError, match=r"matmul.*" + re_shape(sa) + r".*" + re_shape(sb)):
        a @ b


def re_shape(s):
    return "\\(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + "\\)"


def test_matmul_of_scalar_raises():
    with pytest.raises(ValueError, match="matmul"):
        leaf(2.0) @ leaf([1.0])


def test_reshape_and_index_errors_name_shapes():
    x = leaf(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        x.reshape(4, 2)
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        x[5]
    with pytest.raises(ValueError, match="axis"):
        x.sum(axis=2)


def test_op_on_tensor_from_another_thread_raises():
    x = leaf([1.0, 2.0])
    box = {}

    def worker():
        box["y"] = x * 2.0  # recorded on the worker's tape

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    y = box["y"]
    with pytest.raises(RuntimeError, match="thread"):
        y + 1.0
    with pytest.raises(RuntimeError, match="thread"):
        y * leaf([1.0, 1.0])
    with pytest.raises(RuntimeError, match="thread"):
        y.sum()
    with pytest.raises(RuntimeError, match="thread"):
        tg.concatenate([y, leaf([1.0])])


def test_each_thread_differentiates_on_its_own_tape():
    results = {}

    def worker(k):
        x = leaf([float(k), 1.0])
        for _ in range(50):
            (x * x * float(k)).sum().backward()
        results[k] = x.grad.tolist()

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2, 3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == {k: [100.0 * k * k, 100.0 * k] for k in (1, 2, 3)}


def test_shared_leaf_usable_from_two_threads():
    w = leaf([1.0, 2.0])
    box = {}

    def worker():
        box["y"] = (w * 2.0).sum()  # kept alive: the worker's graph uses w

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    (w * 3.0).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


# ---- IEEE special values -------------------------------------------------------------------------


def test_nan_inf_forward_values_follow_ieee():
    with np.errstate(all="ignore"):
        assert tg.log(leaf(0.0)).item() == -math.inf
        assert math.isnan(tg.log(leaf(-1.0)).item())
        assert (leaf(0.0) * leaf(math.inf)).item() != (leaf(0.0) * leaf(math.inf)).item()
        assert tg.exp(leaf(1000.0)).item() == math.inf
        assert (leaf(1.0) / 0.0).item() == math.inf
        assert (1.0 / leaf(0.0)).item() == math.inf
        np.testing.assert_array_equal(tg.log(leaf([0.0, 1.0])).numpy(), [-np.inf, 0.0])
        assert math.isnan(tg.sqrt(leaf(-1.0)).item())


def test_nan_and_inf_gradients_propagate():
    a, b = leaf(0.0), leaf(math.inf)
    y = a * b
    y.backward()
    assert math.isnan(y.item())
    assert a.grad.item() == math.inf and b.grad.item() == 0.0
    x = leaf([math.nan, 1.0])
    (x * 2.0).sin().sum().backward()
    assert math.isnan(x.grad.tolist()[0]) and x.grad.tolist()[1] == pytest.approx(2 * math.cos(2))
    with np.errstate(all="ignore"):
        x = leaf([1000.0])
        x.exp().sum().backward()
    assert x.grad.tolist() == [math.inf]
    x = leaf([1.0])
    (x / 0.0).sum().backward()
    assert x.grad.tolist() == [math.inf]


def test_log_at_zero_has_infinite_gradient():
    x = leaf(0.0)
    with np.errstate(all="ignore"):
        y = tg.log(x)
    assert y.item() == -math.inf
    y.backward()
    assert x.grad.item() == math.inf


@pytest.mark.parametrize(
    "f, x0, expect",
    [
        (lambda x: tg.sqrt(x), [0.0], [math.inf]),
        (lambda x: 1.0 / x, [0.0], [-math.inf]),
        (lambda x: x / tg.tensor([0.0]), [1.0], [math.inf]),
        (lambda x: tg.log(x), [0.0, 1.0], [math.inf, 1.0]),
        (lambda x: tg.logsumexp(x), [-math.inf, -math.inf], [math.nan, math.nan]),
    ],
)
def test_division_by_zero_in_backward_gives_ieee_values(f, x0, expect):
    x = leaf(x0)
    with np.errstate(all="ignore"):
        f(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_interpreter_survives_a_nan_backward():
    x = leaf([math.nan, math.inf, -math.inf])
    with np.errstate(all="ignore"):
        y = (x * x).exp().sum() + tg.tanh(x).prod()
        y.backward()
    assert x.grad.shape == (3,)
    z = leaf([1.0, 2.0])
    (z * z).sum().backward()  # and the next backward is fine
    assert z.grad.tolist() == [2.0, 4.0]


def test_assigning_a_grad_of_another_shape_raises():
    """As in PyTorch; it was kept, and the next backward broadcast into it (a (3, 2) .grad
    for a (2,) leaf)."""
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"gradient of shape \(3, 1\) to a tensor of shape"):
        x.grad = tg.tensor([[1.0], [2.0], [3.0]])
    with pytest.raises(RuntimeError, match="same shape"):
        x.grad = tg.tensor(5.0)
    x.grad = tg.tensor([1.0, 1.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])
