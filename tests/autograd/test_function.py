import numpy as np
import pytest

import tapegrad as tg


class Square(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class MulAdd(tg.Function):
    """(x * y * k, x + y) with a non-Tensor argument k."""

    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k, x + y

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        x, y = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, True, False)
        return g_prod * y * ctx.k + g_sum, g_prod * x * ctx.k + g_sum, None


def test_contract_example_and_grad_fn():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Square.apply(x)
    np.testing.assert_allclose(y.numpy(), [1, 4, 9])
    assert y.grad_fn.name() == "SquareBackward"
    assert isinstance(y.grad_fn.next_functions[0][0], tg._graph.AccumulateGrad)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])


def test_custom_op_inside_larger_graph():
    xv = np.array([0.3, -1.2, 2.0])
    x = tg.tensor(xv, requires_grad=True)
    h = tg.sin(x) * 3.0
    y = Square.apply(h)
    loss = (tg.exp(y * 0.1) * x).sum()
    loss.backward()
    hv = 3 * np.sin(xv)
    e = np.exp(0.1 * hv**2)
    expect = e + xv * e * 0.1 * 2 * hv * 3 * np.cos(xv)
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)


def test_two_outputs_and_non_tensor_argument():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0, 5.0], requires_grad=True)
    p, s = MulAdd.apply(x, y, 2.0)
    np.testing.assert_allclose(p.numpy(), [6, 20])
    np.testing.assert_allclose(s.numpy(), [4, 7])
    (p.sum() * 2 + (s * s).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.array([3, 5]) + 2 * np.array([4, 7]))
    np.testing.assert_allclose(y.grad.numpy(), 2 * 2 * np.array([1, 2]) + 2 * np.array([4, 7]))


def test_only_one_output_used_gets_zero_for_the_other():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0, 5.0], requires_grad=True)
    p, s = MulAdd.apply(x, y, 1.0)
    s.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 1])


def test_gradcheck_through_custom_op():
    assert tg.gradcheck(
        lambda a, b: MulAdd.apply(tg.tanh(a), b, 3.0)[0].sum() + Square.apply(b).sum(),
        [np.array([0.2, -0.4]), np.array([1.1, 0.7])],
    )


def test_wrong_number_of_gradients_names_the_function():
    class Bad(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadBackward.*incorrect number of gradients"):
        Bad.apply(x, x).sum().backward()


def test_wrong_shape_names_the_function():
    class BadShape(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return tg.ones(5)

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadShapeBackward.*invalid gradient at index 0"):
        BadShape.apply(x).sum().backward()


def test_no_grad_and_no_requires_grad_give_plain_tensors():
    x = tg.tensor([1.0, 2.0])
    y = Square.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    z = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        assert Square.apply(z).grad_fn is None


def test_double_backward_through_custom_op():
    x = tg.tensor(1.5, requires_grad=True)
    y = Square.apply(x) * x  # x^3
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    assert g.item() == pytest.approx(3 * 1.5**2)
    (g2,) = tg.autograd.grad(g, x)
    assert g2.item() == pytest.approx(6 * 1.5)


def test_saved_output_modified_in_place_raises():
    class Exp(tg.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = tg.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"ExpBackward.*version 1; expected version 0"):
        y.sum().backward()


class NumpySquare(tg.Function):
    """A backward written with plain numpy on .data: right once, not twice."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tg.tensor(x.data**2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return tg.tensor(g.data * 2 * x.data)


def test_numpy_backward_differentiated_twice_raises_instead_of_dropping_a_term():
    x = tg.tensor(3.0, requires_grad=True)
    z = NumpySquare.apply(x) + x**3  # d2z = 2 + 6x: the 2 must not vanish
    (g,) = tg.autograd.grad(z, x, create_graph=True)
    assert g.item() == 6.0 + 27.0
    with pytest.raises(RuntimeError, match="NumpySquareBackward.*cannot be differentiated"):
        tg.autograd.grad(g, x)


class SavedInputRelu(tg.Function):
    """A ReLU that saves its input although its gradient needs only the mask."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * (x > 0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0)


class MaskRelu(tg.Function):
    """The same, saving the mask as the refusal's message advises."""

    @staticmethod
    def forward(ctx, x):
        ctx.mask = x > 0
        return x * ctx.mask

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mask


def test_a_constant_gradient_from_saved_graph_values_differentiates_as_pytorch():
    # g * (x > 0) on the saved input stays on the graph (a comparison is a constant of x):
    # the second derivative is g's own, as PyTorch's; saving the mask gives the same
    x = tg.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    for relu in (SavedInputRelu, MaskRelu):
        (g,) = tg.autograd.grad(relu.apply(x).sum(), x, create_graph=True)
        np.testing.assert_allclose(g.numpy(), [0.0, 1.0, 1.0])
        (h,) = tg.autograd.grad((g * x).sum(), x)  # g + x * dg/dx, dg/dx = 0
        np.testing.assert_allclose(h.numpy(), [0.0, 1.0, 1.0])
    for relu in (SavedInputRelu, MaskRelu):  # a graph-carrying incoming gradient
        (g,) = tg.autograd.grad((relu.apply(x) * x).sum(), x, create_graph=True)  # x^2, x > 0
        np.testing.assert_allclose(g.numpy(), [0.0, 4.0, 6.0])
        (h,) = tg.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), [0.0, 2.0, 2.0])


def test_linear_custom_op_with_tapegrad_backward_differentiates_twice():
    class Double(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x = tg.tensor(3.0, requires_grad=True)
    (g,) = tg.autograd.grad(Double.apply(x) * x, x, create_graph=True)  # 4x
    (h,) = tg.autograd.grad(g, x)
    assert (g.item(), h.item()) == (12.0, 4.0)


def test_multi_output_function_whose_last_output_is_unused_at_higher_order():
    """create_graph and forward mode through a Function whose later output gets no gradient
    (the graph-mode sweep must run its backward at the highest output that was reached)."""

    class SquareCube(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x, x * x * x

        @staticmethod
        def backward(ctx, g2, g3):
            (x,) = ctx.saved_tensors
            return g2 * 2.0 * x + g3 * 3.0 * x * x

        @staticmethod
        def jvp(ctx, dx):
            (x,) = ctx.saved_tensors
            return 2.0 * x * dx, 3.0 * x * x * dx

    x = np.array([0.5, -2.0])
    f = lambda x: SquareCube.apply(x)[0].sum() ** 2  # noqa: E731
    h = tg.hvp(f, (x,), (np.ones(2),))
    # f = (sum x^2)^2: H = 8 x x^T + 4 sum(x^2) I
    np.testing.assert_allclose(h, 8 * x * x.sum() + 4 * (x * x).sum(), rtol=1e-12)
    _, t = tg.jvp(lambda x: SquareCube.apply(x)[0], (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 2 * x, rtol=1e-12)


def test_function_is_exported_under_autograd_as_in_pytorch():
    assert tg.autograd.Function is tg.Function
    assert tg.autograd.detect_anomaly is tg.detect_anomaly


def test_gradient_for_a_non_tensor_argument_raises():
    class Scale(tg.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, g  # a gradient for the number k

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"ScaleBackward.*position 2.*not a Tensor"):
        Scale.apply(x, 2.0).sum().backward()


def _add_one_dirty(L):
    """x += 1 in place, marked dirty, for tapegrad or torch (``L``); a backward of 3 (not the
    true 1) shows which rule ran."""

    class AddOne(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    return AddOne


AddOneDirty = _add_one_dirty(tg)


def test_mark_dirty_input_becomes_the_output_as_in_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for L, F in ((tg, AddOneDirty), (torch, _add_one_dirty(torch))):
        x0 = L.tensor([1.0, 2.0], requires_grad=True, dtype=L.float64)
        x = x0 * 2.0
        y = F.apply(x)
        assert y is x
        (x * x).sum().backward()  # x itself now goes through the op's backward
        results.append(np.asarray(x0.grad.detach().numpy()))
    np.testing.assert_allclose(results[0], results[1])
    np.testing.assert_allclose(results[0], [36.0, 60.0])


def test_mark_dirty_on_a_view_writes_the_base_as_in_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for L, F in ((tg, AddOneDirty), (torch, _add_one_dirty(torch))):
        x0 = L.tensor([1.0, 2.0, 3.0], requires_grad=True, dtype=L.float64)
        b = x0 * 2.0
        F.apply(b[1:])
        (b * b).sum().backward()
        results.append([b.detach().numpy().tolist(), x0.grad.numpy().tolist()])
    assert results[0] == results[1] == [[2.0, 5.0, 7.0], [8.0, 60.0, 84.0]]


def test_mark_dirty_on_a_leaf_requiring_grad_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOneDirty.apply(x)


def test_mark_dirty_after_an_op_saved_the_old_value_raises():
    x0 = tg.tensor([1.0, 2.0], requires_grad=True)
    x = x0 * 2.0
    z = x * x  # saves the value before the op changes x
    AddOneDirty.apply(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_mark_dirty_saved_tensor_is_the_new_value_also_with_create_graph():
    class MulTwo(tg.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2.0)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]  # the value after the change

    x0 = tg.tensor([1.0, 2.0], requires_grad=True)
    MulTwo.apply(x0 * 3.0).sum().backward()
    np.testing.assert_allclose(x0.grad.numpy(), [18.0, 36.0])
    (g,) = tg.autograd.grad(MulTwo.apply(x0 * 3.0).sum(), x0, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [18.0, 36.0])


def test_input_changed_in_forward_without_mark_dirty_is_seen_afterwards():
    class AddOne(tg.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    x0 = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x0 * 1.0
    AddOne.apply(b[1:])
    np.testing.assert_allclose(b.numpy(), [1.0, 3.0, 4.0])  # the base sees the write
    (b * b).sum().backward()
    np.testing.assert_allclose(x0.grad.numpy(), [2.0, 6.0, 8.0])
