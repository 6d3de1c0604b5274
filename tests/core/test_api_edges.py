"""Edges of the public API where a wrong number or a misleading error used to come out:
lists of traced values in tapegrad.numpy, memory order, empty argument containers,
optimizers over dicts, non-linear custom_jvp rules, fixed points that do not converge."""

import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.optimizers import adam, sgd


def test_numpy_functions_take_lists_of_traced_values():
    def f(x):
        a, b = x[0], x[1]
        return (
            tnp.sum([a, b**2])
            + tnp.mean([a, b])
            + tnp.linalg.norm([a, b])
            + tnp.concatenate([x, x[:1]]).sum()
            + tnp.add([a, b], 1.0).sum()
            + tnp.prod((a, b))
        )

    x = np.array([3.0, 4.0])
    # d/da: 1 + 1/2 + 3/5 + 2 + 1 + b;  d/db: 2b + 1/2 + 4/5 + 1 + 1 + a
    np.testing.assert_allclose(tg.grad(f)(x), [5.1 + 4.0, 11.3 + 3.0], rtol=1e-14)
    assert tg.grad(f)(x).shape == (2,)


def test_memory_order_of_ravel_and_reshape():
    A = np.arange(6.0).reshape(2, 3)
    W = np.arange(6.0) ** 2

    def f(x):
        return (
            (np.ravel(x, order="F") * W).sum()
            + (x.ravel("F") * W).sum()
            + (np.reshape(x, (3, 2), order="F") * W.reshape(3, 2)).sum()
            + (x.reshape((3, 2), order="F") * W.reshape(3, 2)).sum()
            + (x.flatten("F") * W).sum()
        )

    want = 3 * W.reshape((2, 3), order="F") + 2 * W.reshape(3, 2).reshape((2, 3), order="F")
    np.testing.assert_array_equal(tg.grad(f)(A), want)
    t = tg.tensor(A)
    np.testing.assert_array_equal(np.ravel(t, order="F").numpy(), A.ravel("F"))
    np.testing.assert_array_equal(t.reshape((3, 2), order="F").numpy(), A.reshape(3, 2, order="F"))
    with pytest.raises(ValueError, match="order"):
        t.ravel("Z")


@pytest.mark.parametrize("empty", [[], {}, ()])
def test_gradient_with_respect_to_an_empty_container_is_empty(empty):
    assert tg.grad(lambda p, y: y**2, argnums=0)(empty, 3.0) == empty
    value, (g0, g1) = tg.value_and_grad(lambda p, y: y**2, argnums=(0, 1))(empty, 3.0)
    assert value == 9.0 and g0 == empty and type(g0) is type(empty) and g1 == 6.0
    assert tg.grad(lambda p: p["a"] * 2.0)({"a": 1.0, "b": empty}) == {"a": 2.0, "b": empty}


@pytest.mark.parametrize("opt", [sgd, adam])
def test_optimizers_pair_dict_gradients_by_key(opt):
    x0 = {"a": np.array([1.0, 2.0]), "b": np.array([10.0])}

    def in_order(p, i):
        return {"a": 2 * p["a"], "b": 2 * p["b"]}

    def reversed_order(p, i):
        return {"b": 2 * p["b"], "a": 2 * p["a"]}

    want = opt(in_order, x0, num_iters=3, step_size=0.1)
    got = opt(reversed_order, x0, num_iters=3, step_size=0.1)
    for k in x0:
        np.testing.assert_array_equal(got[k], want[k])
    with pytest.raises(ValueError, match="keys"):
        opt(lambda p, i: {"a": p["a"], "c": p["b"]}, x0, num_iters=1)


def _custom(rule_tangent):
    @tg.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return f(x), rule_tangent(x, x_dot)

    return f


def test_custom_jvp_rule_not_linear_in_the_tangent_is_refused_in_reverse_mode():
    squared = _custom(lambda x, t: t**2 * np.cos(x))
    absolute = _custom(lambda x, t: abs(t) * np.cos(x))
    for f in (squared, absolute):
        with pytest.raises(ValueError, match="not linear in the tangents.*custom_vjp"):
            tg.grad(f)(1.0)
        with pytest.raises(ValueError, match="not linear"):
            tg.grad(lambda v, f=f: f(v).sum())(np.array([1.0, 2.0]))
    linear = _custom(lambda x, t: t * np.cos(x))
    assert tg.grad(linear)(1.0) == pytest.approx(np.cos(1.0), rel=1e-15)
    assert tg.grad(tg.grad(linear))(1.0) == pytest.approx(-np.sin(1.0), rel=1e-15)
    np.testing.assert_allclose(
        tg.grad(lambda v: linear(v).sum())(np.array([1.0, 2.0])), np.cos([1.0, 2.0]), rtol=1e-15
    )
    assert tg.jvp(squared, (1.0,), (2.0,))[1] == pytest.approx(4 * np.cos(1.0))  # forward: as given


def test_fixed_point_max_iter():
    def newton_sqrt(a):
        return lambda x: 0.5 * (x + a / x)

    def dist(x, y):
        return abs(x - y)

    def sqrt(a):
        return tg.fixed_point(newton_sqrt, a, 1.0, dist, 1e-12, max_iter=100)

    assert sqrt(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-15)
    assert tg.grad(sqrt)(4.0) == pytest.approx(0.25, rel=1e-12)
    expanding = lambda a: lambda x: a * x + 1.0  # noqa: E731 - |a| > 1: no fixed point reached
    with pytest.raises(RuntimeError, match="did not converge in max_iter=30"):
        tg.fixed_point(expanding, 2.0, 0.0, dist, 1e-12, max_iter=30)
    with pytest.raises(RuntimeError, match="max_iter=5"):
        tg.grad(lambda a: tg.fixed_point(newton_sqrt, a, 1.0, dist, 1e-12, max_iter=5))(2.0)


@pytest.mark.parametrize("module", ["special", "stats", "integrate", "linalg"])
def test_tapegrad_scipy_without_scipy_names_the_extra(module):
    code = (
        "import sys; sys.modules['scipy'] = None\n"  # as if SciPy were not installed
        "import tapegrad as tg\n"
        "try:\n"
        f"    import tapegrad.scipy.{module}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'tapegrad[scipy]'" in out.stdout


def test_negative_number_to_a_tensor_power_is_nan_as_numpy_not_complex():
    # float ** float in Python is complex for a negative base and a fractional exponent;
    # NumPy (and an array Tensor) give NaN there, and so must a 0-d Tensor
    for e in (0.5, 3.0, -1.5):
        x = tg.tensor(e, requires_grad=True)
        y = (-2.0) ** x
        y.backward()
        want = np.power(-2.0, np.array([e]))[0] if e == int(e) else np.nan
        assert isinstance(y.item(), float)
        np.testing.assert_equal(y.item(), want)
        xa = tg.tensor([e], requires_grad=True)
        ya = ((-2.0) ** xa).sum()
        ya.backward()
        np.testing.assert_equal(y.item(), ya.item())
        np.testing.assert_equal(x.grad.item(), xa.grad.numpy()[0])  # c**x log(c): NaN
