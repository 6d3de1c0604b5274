"""``tg.elementwise_grad`` (HIPS autograd's name): the VJP with ones, nested to third order,
against closed forms and the Jacobian's column sums."""

import numpy as np
import pytest

import tapegrad as tg

X = np.linspace(-1.5, 1.5, 7)


@pytest.mark.parametrize(
    "f, derivatives",
    [
        (np.tanh, [lambda t: 1 - t**2, lambda t: -2 * t * (1 - t**2)]),
        (np.sin, [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)]),
        (lambda x: np.exp(-(x**2)), [lambda x: -2 * x * np.exp(-(x**2))]),
    ],
    ids=["tanh", "sin", "gauss"],
)
def test_nested_elementwise_derivatives_match_closed_forms(f, derivatives):
    d = f
    for k, closed in enumerate(derivatives):
        d = tg.elementwise_grad(d)
        arg = np.tanh(X) if f is np.tanh else X
        np.testing.assert_allclose(d(X), closed(arg), rtol=1e-12, atol=1e-14, err_msg=f"order {k}")


def test_a_non_elementwise_function_gives_the_jacobians_column_sums():
    A = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])

    def f(x):
        return np.sin(A @ x)

    J = tg.jacobian(f)(X[:3])
    np.testing.assert_allclose(tg.elementwise_grad(f)(X[:3]), J.sum(axis=0), rtol=1e-13)


def test_argnums_and_scalars():
    a, b = tg.elementwise_grad(lambda a, b: a * b**2, argnums=(0, 1))(X, 2 * X)
    np.testing.assert_allclose(a, (2 * X) ** 2)
    np.testing.assert_allclose(b, 2 * X * 2 * X)
    assert tg.elementwise_grad(np.sin)(0.5) == pytest.approx(np.cos(0.5), rel=1e-15)
