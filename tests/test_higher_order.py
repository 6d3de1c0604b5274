"""Second and third derivatives of every op: the create_graph gradient is checked against finite
differences of the first derivative (and once more for third order)."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _ops as O

rng = np.random.default_rng(7)


def _u(lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape)


def away_from_zero(*shape):
    x = _u(0.3, 1.5, *shape)
    return x * rng.choice([-1.0, 1.0], size=shape)


# op name -> (function of tensors, list of input arrays)
CASES = {
    "NEG": (lambda x: -x, [_u(-2, 2, 3)]),
    "EXP": (tg.exp, [_u(-2, 2, 3)]),
    "LOG": (tg.log, [_u(0.3, 3, 3)]),
    "LOG1P": (tg.log1p, [_u(-0.5, 2, 3)]),
    "EXPM1": (tg.expm1, [_u(-2, 2, 3)]),
    "SQRT": (tg.sqrt, [_u(0.3, 3, 3)]),
    "SIN": (tg.sin, [_u(-2, 2, 3)]),
    "COS": (tg.cos, [_u(-2, 2, 3)]),
    "TAN": (tg.tan, [_u(-1, 1, 3)]),
    "TANH": (tg.tanh, [_u(-2, 2, 3)]),
    "SIGMOID": (tg.sigmoid, [_u(-2, 2, 3)]),
    "RELU": (lambda x: tg.relu(x) * x, [away_from_zero(4)]),
    "ABS": (lambda x: tg.abs(x) * x, [away_from_zero(4)]),
    "LEAKY_RELU": (lambda x: tg.leaky_relu(x, 0.2) * x, [away_from_zero(4)]),
    "ADDS": (lambda x: (x + 1.5) * x, [_u(-2, 2, 3)]),
    "MULS": (lambda x: (x * 2.5) * x, [_u(-2, 2, 3)]),
    "RSUBS": (lambda x: (1.5 - x) * x, [_u(-2, 2, 3)]),
    "RDIVS": (lambda x: 2.0 / x, [_u(0.5, 2, 3)]),
    "POWS": (lambda x: x ** 3.5, [_u(0.5, 2, 3)]),
    "RPOWS": (lambda x: 2.0 ** x, [_u(-1, 1, 3)]),
    "CLIP": (lambda x: tg.clip(x, -0.5, 0.5) * x, [np.array([-1.0, -0.2, 0.3, 0.9])]),
    "ADD": (lambda x, y: (x + y) * x * y, [_u(-2, 2, 2, 3), _u(-2, 2, 3)]),
    "SUB": (lambda x, y: (x - y) * x * y, [_u(-2, 2, 2, 3), _u(-2, 2, 2, 1)]),
    "MUL": (lambda x, y: x * y * y, [_u(-2, 2, 3), _u(-2, 2, 3)]),
    "DIV": (lambda x, y: x / y, [_u(-2, 2, 3), _u(0.5, 2, 3)]),
    "POW": (lambda x, y: x ** y, [_u(0.5, 2, 3), _u(-1, 2, 3)]),
    "MAXIMUM": (lambda x, y: tg.maximum(x, y) * x, [np.array([0.1, 2.0, -1.0]),
                                                    np.array([1.0, -1.0, 0.5])]),
    "MINIMUM": (lambda x, y: tg.minimum(x, y) * y, [np.array([0.1, 2.0, -1.0]),
                                                    np.array([1.0, -1.0, 0.5])]),
    "WHERE": (lambda x, y: tg.where(np.array([True, False, True]), x * y, y * y),
              [_u(-2, 2, 3), _u(-2, 2, 3)]),
    "VIEW": (lambda x: (x[1:, ::-1][:, :2] * x.T[::2, :2].T).sum() * x, [_u(-2, 2, 3, 3)]),
    "RESHAPE": (lambda x: x.reshape(2, 3) * x.reshape(2, 3), [_u(-2, 2, 6)]),
    "SUM": (lambda x: x.sum(axis=0) ** 2, [_u(-2, 2, 3, 2)]),
    "PROD": (lambda x: x.prod(axis=1), [_u(0.5, 2, 2, 3)]),
    "AMAX": (lambda x: x.max(axis=0) ** 2, [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "AMIN": (lambda x: x.min(axis=1) ** 2, [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "MATMUL": (lambda a, b: tg.tanh(a @ b), [_u(-1, 1, 2, 3), _u(-1, 1, 3, 2)]),
    "CONCAT": (lambda x, y: tg.concatenate([x * y, y], axis=1) ** 2,
               [_u(-2, 2, 2, 2), _u(-2, 2, 2, 2)]),
    "GATHER": (lambda x: x[np.array([0, 2, 0])] ** 3, [_u(-2, 2, 3)]),
    "SETITEM": (lambda x, y: O.setitem(x * x, np.array([1]), y * x[0]),
                [_u(-2, 2, 3), _u(-2, 2, 1)]),
    "SCATTER": (lambda x: O.scatter_add(x * x, [0, 2, 0], (4,)) ** 2, [_u(-2, 2, 3)]),
}
INTERNAL = {"LEAF", "CONST", "FREED", "CUSTOM", "GUARD"}


def test_every_op_has_a_second_order_case():
    assert {op.name for op in O.OPS} - INTERNAL == set(CASES)


def _first_derivative(f, wseed=3):
    """x -> <d f / d x, w>, built with create_graph so it can be differentiated again."""
    def g(*xs):
        out = f(*xs)
        w = np.random.default_rng(wseed).standard_normal(out.shape)
        grads = tg.autograd.grad(out, xs, grad_outputs=w, create_graph=True, allow_unused=True)
        total = None
        for k, gk in enumerate(grads):
            if gk is None:
                continue
            v = np.random.default_rng(wseed + k + 1).standard_normal(gk.shape)
            term = (gk * v).sum()
            total = term if total is None else total + term
        return total
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative(name):
    f, inputs = CASES[name]
    assert tg.gradcheck(_first_derivative(f), inputs, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["EXP", "SIN", "TANH", "MUL", "DIV", "POWS", "MATMUL", "SUM",
                                  "LOG", "SIGMOID", "VIEW"])
def test_third_derivative(name):
    f, inputs = CASES[name]
    assert tg.gradcheck(_first_derivative(_first_derivative(f), wseed=11), inputs,
                        atol=1e-4, rtol=1e-3)


def test_third_derivative_of_sin_at_zero():
    x = tg.tensor(0.0, requires_grad=True)
    g1, = tg.autograd.grad(tg.sin(x), x, create_graph=True)
    g2, = tg.autograd.grad(g1, x, create_graph=True)
    g3, = tg.autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (1.0, -0.0, -1.0)


def test_backward_create_graph_accumulates_differentiable_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    g = x.grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


def test_create_graph_under_no_grad_gives_constant_gradients():
    x = tg.tensor(2.0, requires_grad=True)
    y = x ** 3
    with tg.no_grad():
        g, = tg.autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0
    assert not g.requires_grad


def test_gradient_that_is_constant_does_not_require_grad_as_in_pytorch():
    x = tg.tensor(1.5, requires_grad=True)
    g, = tg.autograd.grad(x * 3.0, x, create_graph=True)   # constant 3: no dependence on x
    assert g.item() == 3.0 and not g.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(g, x)


def test_grad_of_non_requiring_tensor_names_position():
    x = tg.tensor(1.0, requires_grad=True)
    z = tg.tensor(2.0)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(x * z, [x, z])
