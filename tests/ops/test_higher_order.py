"""Second and third derivatives of every op: the create_graph gradient is checked against finite
differences of the first derivative (and once more for third order)."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops.spec import OPS

from op_cases import CASES, INTERNAL


def test_every_op_has_a_second_order_case():
    assert {op.name for op in OPS} - INTERNAL == {name.split()[0] for name in CASES}


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


@pytest.mark.parametrize(
    "name", ["EXP", "SIN", "TANH", "MUL", "DIV", "POWS", "MATMUL", "SUM", "LOG", "SIGMOID", "VIEW"]
)
def test_third_derivative(name):
    f, inputs = CASES[name]
    assert tg.gradcheck(
        _first_derivative(_first_derivative(f), wseed=11), inputs, atol=1e-4, rtol=1e-3
    )


def test_third_derivative_of_sin_at_zero():
    x = tg.tensor(0.0, requires_grad=True)
    (g1,) = tg.autograd.grad(tg.sin(x), x, create_graph=True)
    (g2,) = tg.autograd.grad(g1, x, create_graph=True)
    (g3,) = tg.autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (1.0, -0.0, -1.0)


def test_backward_create_graph_accumulates_differentiable_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    g = x.grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


def test_create_graph_under_no_grad_gives_constant_gradients():
    x = tg.tensor(2.0, requires_grad=True)
    y = x**3
    with tg.no_grad():
        (g,) = tg.autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0
    assert not g.requires_grad


def test_gradient_that_is_constant_does_not_require_grad_as_in_pytorch():
    x = tg.tensor(1.5, requires_grad=True)
    (g,) = tg.autograd.grad(x * 3.0, x, create_graph=True)  # constant 3: no dependence on x
    assert g.item() == 3.0 and not g.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(g, x)


def test_grad_of_non_requiring_tensor_names_position():
    x = tg.tensor(1.0, requires_grad=True)
    z = tg.tensor(2.0)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(x * z, [x, z])


@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.0, 1.0, 2.0, 3.0])
def test_every_derivative_of_an_integer_power_at_zero_is_exact(p):
    """d^k x**p at 0 is p! for k = p and 0 otherwise; the derivative of x ** 0 (1, also at 0)
    is exactly 0, not 0 * 0 ** -1 (nan), at every order."""
    d = lambda x: x**p  # noqa: E731
    for k in range(1, 6):
        d = tg.grad(d)
        assert d(0.0) == (math.factorial(int(p)) if k == p else 0.0), (p, k)
        assert d(0.7) == pytest.approx(
            math.perm(int(p), k) * 0.7 ** (p - k) if k <= p else 0.0, rel=1e-12
        )


def test_polynomial_hessian_and_mixed_power_hessian_at_zero():
    f = lambda x: sum(c * x**k for k, c in enumerate([1.0, 2.0, 3.0]))  # noqa: E731
    assert tg.hessian(f)(0.0) == 6.0
    # d2 (a ** b) / da db at a = 0, b = 2: a ** (b - 1) (1 + b log a) -> 0 (PyTorch: 0)
    np.testing.assert_array_equal(
        tg.hessian(lambda x: x[0] ** x[1])(np.array([0.0, 2.0])), [[2.0, 0.0], [0.0, 0.0]]
    )


@pytest.mark.parametrize("x", [0.0, 0.3, -1.2, 20.0, 709.0, 710.0, -800.0, np.inf])
def test_tanh_derivatives_stay_finite_in_its_tails(x):
    """tanh' = sech^2 from exp(-2|x|): no exp(x) to overflow at |x| > 709.78 (inf / inf
    was nan at the second order), the tail kept where 1 - tanh^2 rounds to 0, and the
    third derivative right at 0 (-2), where |x|'s own derivative would be 0."""
    t = math.tanh(x)
    s = 4.0 * math.exp(-2.0 * abs(x)) / (1.0 + math.exp(-2.0 * abs(x))) ** 2
    d1 = tg.grad(np.tanh)
    d2 = tg.grad(d1)
    d3 = tg.grad(d2)
    assert d1(x) == pytest.approx(s, rel=1e-14, abs=0)
    assert d2(x) == pytest.approx(-2.0 * t * s, rel=1e-13, abs=0)
    assert d3(x) == pytest.approx(s * (6.0 * t * t - 2.0), rel=1e-12, abs=0)
    if np.isfinite(x):
        assert tg.hessian(np.tanh)(x) == pytest.approx(-2.0 * t * s, rel=1e-13, abs=0)
