"""Functional transforms on plain NumPy code: grad, value_and_grad, vjp, jacobian."""

import collections
import math
import pathlib
import sys

import numpy as np
import pytest
from custom_functions import Cube

import tapegrad as tg
import tapegrad.numpy as tnp

RNG = np.random.default_rng(0)


# ---- grad / value_and_grad -------------------------------------------------------------------


def test_grad_of_numpy_function_matches_analytic():
    f = lambda x: np.sin(x) * np.exp(x) + x**3  # noqa: E731
    g = tg.grad(f)(0.7)
    assert type(g) is float
    assert g == pytest.approx(
        np.cos(0.7) * np.exp(0.7) + np.sin(0.7) * np.exp(0.7) + 3 * 0.49, rel=1e-13
    )


def test_grad_of_array_function_returns_array_of_same_shape():
    x = RNG.standard_normal((3, 2))
    g = tg.grad(lambda a: np.sum(np.tanh(a) ** 2))(x)
    assert isinstance(g, np.ndarray) and g.shape == (3, 2)
    np.testing.assert_allclose(g, 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-12)


def test_grad_keeps_float32_dtype_and_does_not_touch_the_input():
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = tg.grad(lambda a: np.sum(a * a))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [2.0, 4.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_value_and_grad_logistic_loss():
    X = RNG.standard_normal((5, 3))
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    w0 = RNG.standard_normal(3)

    def loss(w, X, y):
        p = 1 / (1 + np.exp(-(X @ w)))
        return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))

    v, g = tg.value_and_grad(loss)(w0, X, y)
    p = 1 / (1 + np.exp(-(X @ w0)))
    assert v == pytest.approx(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)), rel=1e-12)
    np.testing.assert_allclose(g, X.T @ (p - y) / 5, rtol=1e-10)


def test_argnums_tuple_and_negative():
    f = lambda a, b, c: a * b**2 + c  # noqa: E731
    assert tg.grad(f, argnums=(0, 1))(2.0, 3.0, 1.0) == (9.0, 12.0)
    assert tg.grad(f, argnums=-1)(2.0, 3.0, 1.0) == 1.0
    assert tg.grad(f, argnums=(2,))(2.0, 3.0, 1.0) == (1.0,)


def test_pytree_arguments_with_none_and_passthrough_leaves():
    params = {"w": [np.array([1.0, 2.0]), 3.0], "b": (0.5, None)}

    def f(p, cfg):
        assert cfg["n"] == 2 and cfg["on"] is True and p["b"][1] is None  # untouched
        return np.sum(p["w"][0] ** cfg["n"]) * p["w"][1] + p["b"][0]

    v, g = tg.value_and_grad(f)(params, {"n": 2, "on": True})
    assert v == pytest.approx(5 * 3.0 + 0.5)
    np.testing.assert_allclose(g["w"][0], [6.0, 12.0])
    assert g["w"][1] == 5.0 and type(g["w"][1]) is float
    assert g["b"] == (1.0, None) and isinstance(g["b"], tuple)
    assert list(g) == ["w", "b"]
    # an int or bool leaf of a differentiated argument is refused (as JAX): its gradient
    # would be a silent None
    with pytest.raises(TypeError, match=r"argument 0\['n'\] is int 2"):
        tg.value_and_grad(lambda p: f(p, p))({**params, "n": 2, "on": True})


def test_namedtuple_argument_keeps_its_type():
    P = collections.namedtuple("P", "a b")
    g = tg.grad(lambda p: p.a * p.b)(P(2.0, 5.0))
    assert isinstance(g, P) and g == P(5.0, 2.0)


def test_tensor_argument_without_grad_is_differentiated_as_data():
    g = tg.grad(lambda x: (x * x).sum())(tg.tensor([1.0, -2.0]))
    np.testing.assert_allclose(g, [2.0, -4.0])


def test_unused_argument_gets_zero_gradient():
    g = tg.grad(lambda a, b: a * 2.0, argnums=(0, 1))(1.0, np.ones(3))
    assert g[0] == 2.0
    np.testing.assert_array_equal(g[1], np.zeros(3))


def test_constant_function_has_zero_gradient():
    assert tg.grad(lambda x: 4.0)(1.0) == 0.0
    np.testing.assert_array_equal(tg.grad(lambda x: np.float64(1.0))(np.ones(2)), [0.0, 0.0])


def test_has_aux():
    def f(x):
        y = np.sum(x**2)
        return y, {"y": y, "n": 3}

    g, aux = tg.grad(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])
    assert aux == {"y": 5.0, "n": 3} and type(aux["y"]) is float
    (v, aux), g = tg.value_and_grad(f, has_aux=True)(np.array([1.0, 2.0]))
    assert v == 5.0 and aux["y"] == 5.0


def test_gradients_agree_with_gradcheck():
    def f(x):
        return np.sum(np.log1p(x * x) * np.cos(x)) / np.sqrt(np.sum(x * x) + 1)

    x = RNG.standard_normal(4)
    assert tg.gradcheck(f, [x])
    g = tg.grad(f)(x)
    eps = 1e-6
    num = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)


def test_grad_works_under_no_grad():
    with tg.no_grad():
        assert tg.grad(lambda x: x * x)(3.0) == 6.0
        assert not tg.is_grad_enabled()


def test_grad_is_repeatable_and_leaves_no_tape_behind():
    g = tg.grad(lambda x: np.sum(np.exp(x)))
    held = len(tg.current_tape())  # rows of graphs earlier tests may still hold
    for _ in range(3):
        np.testing.assert_allclose(g(np.zeros(2)), [1.0, 1.0])
    assert len(tg.current_tape()) <= held


def test_wraps_keeps_function_name():
    def my_loss(x):
        return x * x

    assert tg.grad(my_loss).__name__ == "my_loss"
    assert tg.value_and_grad(my_loss).__name__ == "my_loss"


# ---- Python control flow -------------------------------------------------------------------------


def test_data_dependent_branches():
    def f(x):
        if x > 0:
            return x**2
        elif x.item() > -1:
            return np.sin(x)
        return -x.item() * x  # item() is a constant factor

    assert tg.grad(f)(3.0) == 6.0
    assert tg.grad(f)(-0.5) == pytest.approx(np.cos(-0.5))
    assert tg.grad(f)(-2.0) == 2.0


def test_while_loop_of_data_dependent_length():
    def f(x):
        steps = 0
        while x < 10.0:  # doubles until it passes 10: 1 -> 16 takes 4 steps
            x = x * 2.0
            steps += 1
        return x * steps

    assert tg.grad(f)(1.0) == 2**4 * 4  # 1 -> 16 in 4 steps
    assert tg.grad(f)(3.0) == 2**2 * 2  # 3 -> 12 in 2 steps


def test_recursion():
    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)

    for n in (1, 4, 7):
        assert tg.grad(power)(1.5, n) == pytest.approx(n * 1.5 ** (n - 1), rel=1e-14)


def test_loop_over_varying_length_inputs():
    def f(xs):
        total = 0.0
        for i, x in enumerate(xs):
            total = total + (i + 1) * x * x
        return total

    for n in (1, 3, 6):
        g = tg.grad(f)([float(k) for k in range(n)])
        assert g == [2.0 * (i + 1) * i for i in range(n)]


def test_argmax_style_selection_and_max():
    def f(x):
        i = int(np.argmax(x))
        return x[i] * np.max(x)

    np.testing.assert_allclose(tg.grad(f)(np.array([1.0, 5.0, 2.0])), [0.0, 10.0, 0.0])


# ---- vjp ---------------------------------------------------------------------------------------


def test_vjp_with_pytree_output_called_twice():
    x = np.array([1.0, 2.0, 3.0])

    def f(x, s):
        return {"y": np.sin(x) * s, "t": np.sum(x)}

    out, vjp_fn = tg.vjp(f, x, 2.0)
    np.testing.assert_allclose(out["y"], np.sin(x) * 2)
    assert out["t"] == 6.0
    u = np.array([1.0, -1.0, 0.5])
    gx, gs = vjp_fn({"y": u, "t": 1.0})
    np.testing.assert_allclose(gx, u * np.cos(x) * 2 + 1)
    assert gs == pytest.approx(np.dot(u, np.sin(x)))
    gx2, gs2 = vjp_fn({"y": np.zeros(3), "t": 2.0})  # second call: graph retained
    np.testing.assert_allclose(gx2, [2.0, 2.0, 2.0])
    assert gs2 == 0.0


def test_vjp_none_cotangent_and_shape_errors():
    out, vjp_fn = tg.vjp(lambda x: (x * 2, x * x), np.ones(2))
    (gx,) = vjp_fn((None, np.array([1.0, 1.0])))
    np.testing.assert_allclose(gx, [2.0, 2.0])
    with pytest.raises(ValueError, match="cotangent leaf 0 has shape"):
        vjp_fn((np.ones(3), np.ones(2)))
    with pytest.raises(ValueError, match="expected a tuple of length 2"):
        vjp_fn(np.ones(2))
    # a cotangent dict is matched to the output's by key; other keys or complex values raise
    _, vjp_fn = tg.vjp(lambda x: {"p": x * 2.0, "q": x * 3.0}, np.ones(2))
    np.testing.assert_allclose(vjp_fn({"q": np.ones(2), "p": np.zeros(2)})[0], [3.0, 3.0])
    with pytest.raises(ValueError, match=r"keys \['p', 'q'\], got keys \['r', 'p'\]"):
        vjp_fn({"r": np.ones(2), "p": np.zeros(2)})
    with pytest.raises(TypeError, match="cotangent leaf 1 is complex"):
        vjp_fn({"p": np.ones(2), "q": np.ones(2) * 1j})
    # None stands for zeros of a whole output subtree, inside dicts and nested tuples too
    out, vjp_fn = tg.vjp(lambda x: {"a": x * 2, "b": (x * x, x)}, np.ones(2))
    (gx,) = vjp_fn({"a": np.ones(2), "b": None})
    np.testing.assert_allclose(gx, [2.0, 2.0])
    (gx,) = vjp_fn({"a": None, "b": (None, np.array([1.0, 3.0]))})
    np.testing.assert_allclose(gx, [1.0, 3.0])


# ---- jacobian ----------------------------------------------------------------------------------


def test_jacobian_matches_analytic():
    A = RNG.standard_normal((3, 4))
    x = RNG.standard_normal(4)
    J = tg.jacobian(lambda x: np.tanh(A @ x))(x)
    np.testing.assert_allclose(J, (1 - np.tanh(A @ x) ** 2)[:, None] * A, rtol=1e-12)


def test_jacobian_shapes_pytrees_and_argnums():
    x = RNG.standard_normal((2, 3))
    out = tg.jacobian(lambda x, s: {"sq": x * x * s, "tot": np.sum(x)}, argnums=(0, 1))(x, 2.0)
    Jx, Js = out["sq"]
    assert Jx.shape == (2, 3, 2, 3) and Js.shape == (2, 3)
    np.testing.assert_allclose(Jx.reshape(6, 6), np.diag(4 * x.ravel()))
    np.testing.assert_allclose(Js, x * x)
    np.testing.assert_allclose(out["tot"][0], np.ones((2, 3)))
    assert out["tot"][1] == 0.0
    assert tg.jacobian(lambda t: t**3)(2.0) == 12.0


def test_jacobian_of_identity_and_constant_outputs():
    np.testing.assert_array_equal(tg.jacobian(lambda x: x)(np.ones(3)), np.eye(3))
    J = tg.jacobian(lambda x: (x * 2, np.ones(2)))(np.ones(3))
    np.testing.assert_array_equal(J[0], 2 * np.eye(3))
    np.testing.assert_array_equal(J[1], np.zeros((2, 3)))


def test_jacobian_through_custom_function_uses_the_fallback():
    if not hasattr(tg, "Function"):
        pytest.skip("tg.Function is not in this tree")

    x = np.array([1.0, 2.0])
    J = tg.jacobian(lambda x: Cube.apply(x) * 2.0)(x)
    np.testing.assert_allclose(J, np.diag(6 * x**2))


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arg, path",
    [
        ("abc", "argument 0 has type str"),
        ({"w": [1.0, np.arange(3)]}, r"argument 0\['w'\]\[1\] is an array of dtype int64"),
        ([1.0, 2j], r"argument 0\[1\] has type complex"),
        (tg.tensor([1, 2]), "argument 0 is an integer/boolean Tensor"),
        (3, "argument 0 is int 3; only floats can be differentiated"),
        (None, "argument 0 has no float values"),
    ],
)
def test_non_differentiable_arguments_name_their_path(arg, path):
    with pytest.raises(TypeError, match=path):
        tg.grad(lambda x: 1.0)(arg)


def test_argnums_errors():
    with pytest.raises(ValueError, match="argnums 2 is out of range"):
        tg.grad(lambda a, b: a, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int"):
        tg.grad(lambda a: a, argnums="0")(1.0)


def test_non_scalar_output_points_to_jacobian_and_vjp():
    with pytest.raises(TypeError, match=r"shape \(3,\).*jacobian.*vjp"):
        tg.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(TypeError, match="has_aux=True requires f to return a pair"):
        tg.grad(lambda x: x, has_aux=True)(1.0)


# ---- speed and the scipy example -----------------------------------------------------------------


def test_transform_records_the_same_rows_as_the_tensor_api():
    """No per-op work is added by tg.grad: f records exactly the rows it records with Tensors."""

    def f(x):
        for _ in range(50):
            x = np.sin(x) * 0.9 + x * x * 0.01 + 0.1
        return x

    x = tg.tensor(0.3, requires_grad=True)
    start = len(tg.current_tape())
    y = f(x)
    rows = len(tg.current_tape()) - start
    y.backward()
    seen = []

    def counted(x):
        start = len(tg.current_tape())
        y = f(x)
        seen.append(len(tg.current_tape()) - start)
        return y

    assert tg.grad(counted)(0.3) == pytest.approx(x.grad.item(), rel=1e-14)
    assert seen == [rows]


def test_scipy_minimize_example_converges_to_ones():
    pytest.importorskip("scipy")
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "examples"))
    try:
        import scipy_minimize
    finally:
        sys.path.pop(0)
    try:  # BLAS threads fighting over a busy machine make L-BFGS-B's own steps slow
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        threadpool_limits = contextlib.nullcontext
    with threadpool_limits(1):
        res = scipy_minimize.main(dim=100, verbose=False)
    assert res.success
    np.testing.assert_allclose(res.x, np.ones(100), atol=1e-4)
    assert math.isclose(res.fun, 0.0, abs_tol=1e-8)


def test_integer_outputs_are_refused_with_a_fix_that_exists():
    with pytest.raises(TypeError, match="or use has_aux=True"):
        tg.grad(lambda x: (x > 0).sum())(np.ones(2))
    with pytest.raises(TypeError, match=r"jacobian requires real-valued .*jacobian has no has_aux"):
        tg.jacobian(lambda x: (x * 2.0, x > 1.0))(np.ones(2))


# ---- f reading a Tensor that requires grad from outside (a parameter in its closure) ----------


def _penalty_grads(read):
    """d/dw of tanh(X w).sum() + |d/dX tanh(X w).sum()|^2, the inner gradient by tg.grad with
    f reading w as ``read(w)`` (the parameter itself, a result computed from it, a
    concatenation of it), against the closed form."""
    rng = np.random.default_rng(5)
    X, w0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    w = tg.tensor(w0, requires_grad=True)
    gx = tg.grad(lambda x: np.sum(np.tanh(x @ read(w))))(X)
    assert isinstance(gx, tg.Tensor) and gx.requires_grad
    (np.sum(np.tanh(tg.tensor(X) @ read(w))) + (gx**2).sum()).backward()
    # closed form: gx = (1 - t^2) w^T with t = tanh(X w); d/dw of sum(gx^2)
    t = np.tanh(X @ w0)
    s = 1 - t**2
    want = X.T @ s + 2 * (s**2).sum() * w0 + X.T @ (-4 * t * s**2) * (w0 @ w0)
    return w.grad.numpy(), want


@pytest.mark.parametrize(
    "read",
    [lambda w: w, lambda w: (w * 2.0) * 0.5, lambda w: tnp.concatenate([w[:1], w[1:]])],
    ids=["leaf", "computed before", "concatenated"],
)
def test_a_closure_parameter_makes_the_results_tensors_of_it(read):
    got, want = _penalty_grads(read)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_closure_parameter_under_no_grad_gives_arrays_and_value_and_grad_tensors():
    w = tg.tensor(np.array([0.5, -1.0]), requires_grad=True)
    x = np.array([0.3, 0.7])
    v, g = tg.value_and_grad(lambda x: np.sum(np.sin(x * w)))(x)
    assert isinstance(v, tg.Tensor) and isinstance(g, tg.Tensor)  # both depend on w
    v.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos(x * w.numpy()) * x, rtol=1e-14)
    with tg.no_grad():
        v, g = tg.value_and_grad(lambda x: np.sum(np.sin(x * w)))(x)
    assert isinstance(g, np.ndarray) and not isinstance(v, tg.Tensor)
    np.testing.assert_allclose(g, np.cos(x * w.numpy()) * w.numpy(), rtol=1e-14)
    c = tg.tensor(np.array([0.5, -1.0]))  # no grad: plain arrays, as before
    assert isinstance(tg.grad(lambda x: np.sum(np.sin(x * c)))(x), np.ndarray)
