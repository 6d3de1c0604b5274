"""tg.autograd.functional and tg.inference_mode on worked examples, without PyTorch."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as AF


def test_jacobian_and_hessian_worked_example():
    # f(x, y) = (x0 y, x1^2): J_x = [[y, 0], [0, 2 x1]], J_y = [[x0], [0]]
    x, y = tg.tensor([2.0, 3.0]), tg.tensor(5.0)
    jx, jy = AF.jacobian(lambda x, y: tg.stack([x[0] * y, x[1] ** 2]), (x, y))
    np.testing.assert_array_equal(jx.numpy(), [[5.0, 0.0], [0.0, 6.0]])
    assert jy.shape == (2,) and jy.numpy().tolist() == [2.0, 0.0]
    assert not jx.requires_grad and x.grad is None
    # h(x) = x0^2 x1: H = [[2 x1, 2 x0], [2 x0, 0]]
    h = AF.hessian(lambda x: x[0] ** 2 * x[1], x)
    np.testing.assert_array_equal(h.numpy(), [[6.0, 4.0], [4.0, 0.0]])
    ((hxx, hxy), (hyx, hyy)) = AF.hessian(lambda x, y: (x**2).sum() * y, (x, y))
    assert hxy.shape == (2,) and hyx.shape == (2,) and hyy.shape == ()
    np.testing.assert_array_equal(hxy.numpy(), [4.0, 6.0])


def test_products_worked_example():
    f = lambda x: x[0] ** 2 * x[1]  # noqa: E731
    x, v = tg.tensor([1.0, 3.0]), tg.tensor([1.0, -1.0])
    out, hv = AF.hvp(f, x, v)
    assert float(out) == 3.0
    np.testing.assert_array_equal(hv.numpy(), [6.0 - 2.0, 2.0])  # H v
    np.testing.assert_array_equal(AF.vhp(f, x, v)[1].numpy(), [4.0, 2.0])
    np.testing.assert_array_equal(AF.jvp(lambda t: t**2, x, v)[1].numpy(), [2.0, -6.0])
    np.testing.assert_array_equal(AF.vjp(lambda t: t**2, x, v)[1].numpy(), [2.0, -6.0])


def test_create_graph_keeps_the_graph_to_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    _, g = AF.vjp(lambda t: (t**3).sum(), x, create_graph=True)  # 3 x^2
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 12.0])


def test_argument_errors():
    with pytest.raises(TypeError, match="Tensor or a tuple of Tensors"):
        AF.jacobian(lambda t: t, [tg.tensor([1.0])])
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(lambda t: t, tg.tensor([1.0]), strategy="forward-mode")
    with pytest.raises(ValueError, match="strategy"):
        AF.jacobian(lambda t: t, tg.tensor([1.0]), strategy="both")


def test_inference_mode():
    x = tg.tensor([1.0], requires_grad=True)
    with tg.inference_mode():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    assert not tg.inference_mode()(lambda t: t * 2)(x).requires_grad
