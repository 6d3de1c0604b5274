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
