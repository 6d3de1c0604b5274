"""hessian, hvp, jvp and nested transforms, checked against analytic values."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.transforms.second_order import hessian, hvp, jvp

rng = np.random.default_rng(3)
A = rng.standard_normal((8, 5))


def lse_objective(x):
    z = A @ x
    m = np.max(z)
    return np.log(np.sum(np.exp(z - m))) + m + 0.5 * np.sum(x**2)


def lse_hessian(x):
    z = A @ x
    p = np.exp(z - z.max())
    p /= p.sum()
    return A.T @ (np.diag(p) - np.outer(p, p)) @ A + np.eye(x.size)


def test_hessian_matches_analytic():
    x = rng.standard_normal(5)
    np.testing.assert_allclose(hessian(lse_objective)(x), lse_hessian(x), atol=1e-12)


def test_hessian_of_matrix_argument_has_shape_s_plus_s():
    W = rng.standard_normal((2, 3))
    H = hessian(lambda w: np.sum(w**3))(W)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H.reshape(6, 6), np.diag(6 * W.reshape(-1)))


def test_hvp_equals_hessian_times_vector():
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    np.testing.assert_allclose(hvp(lse_objective, (x,), (v,)), lse_hessian(x) @ v, atol=1e-12)


def test_hvp_with_two_primals():
    def f(a, b):
        return np.sum(a**2 * b) + np.sum(np.sin(b))

    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    va, vb = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    ha, hb = hvp(f, (a, b), (va, vb))
    # H = [[diag(2b), diag(2a)], [diag(2a), diag(-sin b)]]
    np.testing.assert_allclose(ha, 2 * b * va + 2 * a * vb)
    np.testing.assert_allclose(hb, 2 * a * va - np.sin(b) * vb)


def test_hvp_on_pytree_primal():
    def f(p):
        return np.sum(p["w"] ** 3) * p["s"]

    p = {"w": np.array([1.0, 2.0]), "s": 3.0}
    v = {"w": np.array([1.0, 1.0]), "s": 0.0}
    out = hvp(f, (p,), (v,))
    np.testing.assert_allclose(out["w"], 6 * p["w"] * 3.0)
    assert out["s"] == pytest.approx(np.sum(3 * p["w"] ** 2))


def test_jvp_matches_jacobian_times_tangent():
    def f(x):
        return np.tanh(A @ x) * x[0]

    x, v = rng.standard_normal(5), rng.standard_normal(5)
    out, t = jvp(f, (x,), (v,))
    np.testing.assert_allclose(out, f(x))
    np.testing.assert_allclose(t, tg.jacobian(f)(x) @ v, atol=1e-12)


def test_jvp_scalar_and_pytree_output():
    out, t = jvp(lambda x: {"s": np.sin(x), "c": np.cos(x)}, (0.3,), (2.0,))
    assert out["s"] == pytest.approx(np.sin(0.3))
    assert t["s"] == pytest.approx(2 * np.cos(0.3))
    assert t["c"] == pytest.approx(-2 * np.sin(0.3))


def test_jvp_of_output_not_depending_on_input_is_zero():
    out, t = jvp(lambda x: np.ones(3) * 2.0, (1.0,), (1.0,))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_third_derivative_of_sin_via_nested_grad():
    assert tg.grad(tg.grad(tg.grad(np.sin)))(0.0) == -1.0
    assert tg.grad(tg.grad(tg.grad(tg.grad(np.sin))))(0.5) == pytest.approx(np.sin(0.5))


def test_no_perturbation_confusion():
    assert tg.grad(lambda x: x * tg.grad(lambda y: x + y)(1.0))(2.0) == 1.0
    # the inner derivative depends on x: d/dx [x * d/dy (x*y)] = d/dx x^2 = 2x
    assert tg.grad(lambda x: x * tg.grad(lambda y: x * y)(1.0))(3.0) == 6.0


def test_grad_of_value_and_grad():
    def f(x):
        v, g = tg.value_and_grad(lambda y: y**3)(x)
        return v + g  # x^3 + 3x^2

    assert tg.grad(f)(2.0) == pytest.approx(3 * 4 + 6 * 2)


def test_derivative_of_path_independent_of_input_is_zero():
    assert tg.grad(tg.grad(lambda x: 3.0 * x))(1.0) == 0.0
    np.testing.assert_array_equal(hessian(lambda x: np.sum(2.0 * x))(np.ones(3)), np.zeros((3, 3)))


def test_newton_step_with_hessian_solves_quadratic():
    Q = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -1.0])

    def f(x):
        return 0.5 * x @ Q @ x - b @ x

    x = np.zeros(2)
    x = x - np.linalg.solve(hessian(f)(x), tg.grad(f)(x))
    np.testing.assert_allclose(x, np.linalg.solve(Q, b))


def test_bad_tangents_are_reported():
    with pytest.raises(ValueError, match="shape"):
        hvp(lambda x: np.sum(x**2), (np.ones(3),), (np.ones(2),))
    with pytest.raises(TypeError, match="tuples"):
        jvp(np.sin, 1.0, 1.0)


def test_tangent_dicts_are_matched_by_key_not_by_order():
    def f(d):
        return 2.0 * d["a"] + 3.0 * d["b"]

    x = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    v = {"b": np.ones(2), "a": np.zeros(2)}  # another key order, the same shapes
    _, tangent = jvp(f, (x,), (v,))
    np.testing.assert_allclose(tangent, [3.0, 3.0])
    hv = hvp(lambda d: np.sum(d["a"] ** 2 + 3.0 * d["b"] ** 2), (x,), (v,))
    np.testing.assert_allclose(hv["a"], [0.0, 0.0])
    np.testing.assert_allclose(hv["b"], [6.0, 6.0])
    with pytest.raises(ValueError, match=r"structure of primal 0.*keys \['a', 'b'\]"):
        jvp(f, (x,), ({"a": np.ones(2), "c": np.ones(2)},))
    with pytest.raises(ValueError, match="structure of primal 0"):
        jvp(lambda a: a * 2.0, (np.ones(3),), ((np.ones(3),),))


def test_complex_tangents_are_refused():
    with pytest.raises(TypeError, match="jvp: tangent 0 is complex"):
        jvp(np.sin, (np.ones(2),), (np.ones(2) * 1j,))
    with pytest.raises(TypeError, match="hvp: tangent 0 is complex"):
        hvp(lambda x: np.sum(x**3), (np.ones(2),), (np.array([1.0, 1j]),))
