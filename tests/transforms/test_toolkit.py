"""The functional toolkit: tapegrad.tree, tapegrad.optimizers, custom_jvp / custom_vjp and
fixed_point, checked against central differences, closed forms and hand-written loops."""

import collections

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.optimizers
import tapegrad.tree
from tapegrad.tree import ravel, tree_flatten, tree_map, tree_unflatten

rng = np.random.default_rng(11)
EPS = 1e-6


def fd_grad(f, x):
    """Central differences of scalar f at array x (float64)."""
    x = np.asarray(x, dtype=np.float64)
    steps = EPS * np.eye(x.size).reshape((x.size,) + x.shape)
    return np.array([(f(x + e) - f(x - e)) / (2 * EPS) for e in steps]).reshape(x.shape)


def close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=atol)


Pair = collections.namedtuple("Pair", "left right")


# ---- tree ------------------------------------------------------------------------------------


def nested():
    return {
        "w": rng.standard_normal((2, 3)),
        "b": [1.5, np.float32(2.5)],
        "p": Pair(np.arange(3.0), (None, np.array(4.0))),
        "n": None,
    }


def test_ravel_round_trip_keeps_structure_shapes_and_dtypes():
    tree = nested()
    flat, unravel = ravel(tree)
    assert flat.shape == (6 + 2 + 3 + 1,)
    close(flat[:6], tree["w"].ravel())
    back = unravel(flat)
    assert back.keys() == tree.keys() and back["n"] is None
    assert isinstance(back["p"], Pair) and back["p"].right[0] is None
    close(back["w"], tree["w"])
    assert isinstance(back["b"][0], float) and back["b"][0] == 1.5
    assert back["b"][1].dtype == np.float32 and back["b"][1] == np.float32(2.5)
    assert back["p"].right[1].shape == ()
    new = unravel(np.arange(12.0))
    close(new["w"], np.arange(6.0).reshape(2, 3))
    assert new["b"] == [6.0, np.float32(7.0)]


def test_ravel_integer_leaf_comes_back_as_float_and_bad_sizes_raise():
    flat, unravel = ravel([np.array([1, 2]), 3])
    assert flat.tolist() == [1, 2, 3]
    back = unravel(np.array([0.5, 1.5, 2.5]))
    close(back[0], [0.5, 1.5])
    assert back[1] == 2.5  # not truncated to an int
    with pytest.raises(ValueError, match="unravel: expected a 1-D vector of size 3"):
        unravel(np.zeros(4))
    assert ravel({})[0].shape == (0,)


def test_ravel_inside_grad_keeps_the_graph():
    W = rng.standard_normal((2, 2))

    def f(params):
        flat, unravel = ravel(params)
        back = unravel(flat * 2.0)
        return tnp.sum(flat**3) + tnp.sum(back["a"] * W) + back["b"][0] ** 2

    params = {"a": rng.standard_normal((2, 2)), "b": (0.7,)}
    g = tg.grad(f)(params)
    close(g["a"], 3 * params["a"] ** 2 + 2 * W)
    close(g["b"][0], 3 * 0.7**2 + 8 * 0.7)
    # and the raveled vector itself, differentiated against central differences
    flat0, unravel = ravel(params)

    def h(v):
        return f(unravel(v))

    close(tg.grad(h)(flat0), fd_grad(h, flat0), rtol=1e-6)


def test_tree_map_flatten_unflatten():
    a = {"x": [1.0, 2.0], "y": None}
    b = {"x": [10.0, 20.0], "y": None}
    assert tree_map(lambda u, v: u + v, a, b) == {"x": [11.0, 22.0], "y": None}
    leaves, treedef = tree_flatten(Pair(1.0, [2.0]))
    assert leaves == [1.0, 2.0]
    assert tree_unflatten(treedef, [3.0, 4.0]) == Pair(3.0, [4.0])
    with pytest.raises(ValueError, match="same structure"):
        tree_map(lambda u, v: u, a, {"x": [1.0], "y": None})
    assert tg.tree is tapegrad.tree and tg.optimizers is tapegrad.optimizers


# ---- optimizers ----------------------------------------------------------------------------

Q = np.array([[3.0, 0.5], [0.5, 1.0]])
C = np.array([1.0, -2.0])


def quad_grad(x, i):
    return Q @ x - C + 0.01 * i


def test_sgd_matches_hand_written_loop_and_calls_back():
    seen = []
    x = tg.optimizers.sgd(
        quad_grad,
        np.zeros(2),
        callback=lambda x, i, g: seen.append((x.copy(), i, g.copy())),
        num_iters=7,
        step_size=0.2,
        mass=0.8,
    )
    xh, v = np.zeros(2), np.zeros(2)
    for i in range(7):
        g = quad_grad(xh, i)
        close(seen[i][0], xh)
        close(seen[i][2], g)
        assert seen[i][1] == i
        v = 0.8 * v - 0.2 * g
        xh = xh + 0.2 * v
    close(x, xh, rtol=1e-14)
    # defaults: 200 iterations, step 0.1, mass 0.9
    x = tg.optimizers.sgd(quad_grad, np.zeros(2))
    xh, v = np.zeros(2), np.zeros(2)
    for i in range(200):
        v = 0.9 * v - 0.1 * quad_grad(xh, i)
        xh = xh + 0.1 * v
    close(x, xh, rtol=1e-13)


def test_adam_and_rmsprop_match_hand_written_loops():
    x = tg.optimizers.adam(quad_grad, np.ones(2))  # defaults: 100 its, 1e-3, .9, .999
    xh, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    for i in range(100):
        g = quad_grad(xh, i)
        m = 0.1 * g + 0.9 * m
        v = 0.001 * g**2 + 0.999 * v
        xh = xh - 0.001 * (m / (1 - 0.9 ** (i + 1))) / (np.sqrt(v / (1 - 0.999 ** (i + 1))) + 1e-8)
    close(x, xh, rtol=1e-13)
    x = tg.optimizers.rmsprop(quad_grad, np.ones(2))  # defaults: 100 its, 0.1, gamma .9
    xh, avg = np.ones(2), np.ones(2)
    for i in range(100):
        g = quad_grad(xh, i)
        avg = avg * 0.9 + g**2 * (1 - 0.9)  # (1 - 0.9), as the rule: the path is chaotic
        xh = xh - 0.1 * g / (np.sqrt(avg) + 1e-8)
    close(x, xh, rtol=1e-13)


def test_optimizers_over_pytrees_with_tg_grad():
    target = {"w": rng.standard_normal((2, 2)), "b": (rng.standard_normal(3),)}

    def loss(p):
        return tnp.sum((p["w"] - target["w"]) ** 2) + tnp.sum((p["b"][0] - target["b"][0]) ** 2)

    grad = tg.grad(loss)
    x0 = {"w": np.zeros((2, 2)), "b": (np.zeros(3),)}
    calls = []
    out = tg.optimizers.adam(
        lambda p, i: grad(p),
        x0,
        step_size=0.05,
        num_iters=20,
        callback=lambda p, i, g: calls.append((isinstance(p, dict), isinstance(g["b"], tuple))),
    )
    assert calls == [(True, True)] * 20
    assert isinstance(out["b"], tuple) and out["w"].shape == (2, 2)
    flat_t = ravel(target)[0]
    xh, m, v = np.zeros(7), np.zeros(7), np.zeros(7)
    for i in range(20):
        g = 2 * (xh - flat_t)
        m = 0.1 * g + 0.9 * m
        v = 0.001 * g**2 + 0.999 * v
        xh = xh - 0.05 * (m / (1 - 0.9 ** (i + 1))) / (np.sqrt(v / (1 - 0.999 ** (i + 1))) + 1e-8)
    close(ravel(out)[0], xh, rtol=1e-12)
    sol = tg.optimizers.sgd(lambda p, i: grad(p), x0, num_iters=300, step_size=0.5)
    close(sol["w"], target["w"], rtol=1e-6)


# ---- custom_jvp -------------------------------------------------------------------------------


@tg.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,) = primals
    (dx,) = tangents
    return softplus(x), dx * tg.sigmoid(x)


def _softplus(x):
    return np.log1p(np.exp(x))


def test_custom_jvp_on_plain_arrays_returns_fs_result():
    x = np.array([0.5, -1.0])
    out = softplus(x)
    assert type(out) is np.ndarray
    close(out, _softplus(x), rtol=1e-15)


def test_custom_jvp_gradient_forward_mode_and_second_order():
    x = rng.standard_normal(4)

    def f(x):
        return tnp.sum(softplus(x) * np.arange(1.0, 5.0))

    def f_np(x):
        return np.sum(_softplus(x) * np.arange(1.0, 5.0))

    close(tg.grad(f)(x), fd_grad(f_np, x))
    v = rng.standard_normal(4)
    out, tan = tg.jvp(lambda x: softplus(x), (x,), (v,))
    close(out, _softplus(x))
    close(tan, (_softplus(x + EPS * v) - _softplus(x - EPS * v)) / (2 * EPS))
    s = 1 / (1 + np.exp(-x))
    close(tg.hessian(f)(x), np.diag(np.arange(1.0, 5.0) * s * (1 - s)), atol=1e-12)
    # grad of grad, jvp of grad (forward over reverse) and grad of jvp (reverse over forward)
    g2 = tg.grad(lambda x: tg.grad(lambda y: softplus(y))(x))(0.3)
    close(g2, 1 / (1 + np.exp(-0.3)) * (1 - 1 / (1 + np.exp(-0.3))))
    _, hv = tg.jvp(tg.grad(f), (x,), (v,))
    close(hv, np.arange(1.0, 5.0) * s * (1 - s) * v)
    gj = tg.grad(lambda x: tnp.sum(tg.jvp(softplus, (x,), (v,))[1]))(x)
    close(gj, s * (1 - s) * v)
    _, jj = tg.jvp(lambda x: tg.jvp(softplus, (x,), (1.0,))[1], (0.3,), (1.0,))
    close(jj, 1 / (1 + np.exp(-0.3)) * (1 - 1 / (1 + np.exp(-0.3))))
    # the Tensor API: create_graph, then a compiled backward through the rule's transpose
    xt = tg.tensor(x, requires_grad=True)
    (gt,) = tg.autograd.grad(softplus(xt).sum(), xt, create_graph=True)
    gt.sum().backward()
    close(xt.grad.numpy(), s * (1 - s))
    # third order through the rule (the rule's own derivative, differentiated twice)
    g3 = tg.grad(tg.grad(tg.grad(lambda y: softplus(y))))(0.3)
    s3 = 1 / (1 + np.exp(-0.3))
    close(g3, s3 * (1 - s3) * (1 - 2 * s3))


def test_custom_jvp_rule_is_used_not_fs_derivative():
    @tg.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        return f(x), 3.0 * tangents[0]  # deliberately not cos(x)

    assert tg.grad(f)(0.4) == 3.0
    assert tg.jvp(f, (0.4,), (2.0,))[1] == 6.0
    x = tg.tensor([0.4, 0.5], requires_grad=True)
    f(x).sum().backward()  # the Tensor API (compiled sweep) too
    close(x.grad.numpy(), [3.0, 3.0])


def test_custom_jvp_tuple_inputs_outputs_and_nondiff_argnums():
    def g(n, xy):
        x, y = xy
        return x * y, x**n

    gj = tg.custom_jvp(g, nondiff_argnums=(0,))

    @gj.defjvp
    def g_jvp(n, primals, tangents):
        ((x, y),) = primals
        ((dx, dy),) = tangents
        return gj(n, (x, y)), (dx * y + x * dy, n * x ** (n - 1) * dx)

    x, y = rng.standard_normal(3), rng.standard_normal(3)

    def loss(x, y):
        a, b = gj(3, (x, y))
        return tnp.sum(a * np.arange(3.0)) + tnp.sum(b)

    gx, gy = tg.grad(loss, argnums=(0, 1))(x, y)
    close(gx, fd_grad(lambda x: loss(x, y), x))
    close(gy, fd_grad(lambda y: loss(x, y), y))
    # second order: Hessian block d2/dx2 = diag(6 x)
    close(tg.hessian(loss)(x, y), np.diag(6 * x), atol=1e-12)
    (a, b), (ta, tb) = tg.jvp(lambda x, y: gj(3, (x, y)), (x, y), (np.ones(3), np.zeros(3)))
    close(a, x * y)
    close(ta, y)
    close(tb, 3 * x**2)


def test_custom_jvp_errors():
    @tg.custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f"):
        f(1.0)
    f.defjvp(lambda p, t: (f(*p), 2.0 + 0.0 * t[0]))  # affine in the tangent: no transpose
    with pytest.raises(
        ValueError,
        match="custom_jvp function f: the jvp rule's tangent_out "
        r"\(output leaf 0\) is not linear in the tangents",
    ):
        tg.grad(f)(1.0)
    f.defjvp(lambda p, t: (f(*p), np.ones(3) * tnp.sum(t[0])))
    with pytest.raises(ValueError, match="tangent_out leaf 0 has shape"):
        tg.grad(lambda x: tnp.sum(f(x)))(np.ones(2))
    # a (1,) tangent for a (2,) output would broadcast to a wrong derivative: refused (a
    # single number is still spread over the output)
    f.defjvp(lambda p, t: (f(*p), t[0][:1]))
    with pytest.raises(ValueError, match=r"tangent_out leaf 0 has shape \(1,\)"):
        tg.jvp(f, (np.ones(2),), (np.ones(2),))
    f.defjvp(lambda p, t: (f(*p), tnp.sum(t[0]) * 0.5))
    np.testing.assert_allclose(tg.jvp(f, (np.ones(2),), (np.array([1.0, 3.0]),))[1], [2.0, 2.0])
    w = tg.tensor(2.0, requires_grad=True)

    @tg.custom_jvp
    def h(x):
        return x * w  # a differentiable closure: the rule can't know it

    h.defjvp(lambda p, t: (h(*p), t[0] * 2.0))
    with pytest.raises(
        TypeError, match="custom_jvp function h: its output depends on a Tensor that requires grad"
    ):
        tg.grad(h)(1.0)


# ---- custom_vjp ---------------------------------------------------------------------------------


@tg.custom_vjp
def sin_vjp(x):
    return np.sin(x)


def _sin_fwd(x):
    return np.sin(x), np.cos(x)


def _sin_bwd(cos_x, g):
    return (g * cos_x,)


sin_vjp.defvjp(_sin_fwd, _sin_bwd)


def test_custom_vjp_values_gradient_and_grad_of_grad():
    x = rng.standard_normal(3)
    assert type(sin_vjp(x)) is np.ndarray
    close(sin_vjp(x), np.sin(x), rtol=1e-15)

    def f(x):
        return tnp.sum(sin_vjp(x) ** 2)

    close(tg.grad(f)(x), fd_grad(lambda x: np.sum(np.sin(x) ** 2), x))
    close(tg.grad(tg.grad(sin_vjp))(0.7), -np.sin(0.7))
    close(tg.grad(tg.grad(tg.grad(sin_vjp)))(0.7), -np.cos(0.7))
    close(tg.hessian(f)(x), np.diag(2 * np.cos(2 * x)), atol=1e-12)
    v = rng.standard_normal(3)
    close(tg.hvp(f, (x,), (v,)), 2 * np.cos(2 * x) * v, atol=1e-12)


def test_custom_vjp_forward_mode_raises_naming_the_function():
    with pytest.raises(tg.ForwardModeError, match="custom_vjp function sin_vjp"):
        tg.jvp(sin_vjp, (0.3,), (1.0,))


def test_custom_vjp_tuples_none_cotangent_and_nondiff_argnums():
    def scaled(k, x, y):
        return (k * x * y, x + y)

    f = tg.custom_vjp(scaled, nondiff_argnums=(0,))

    def fwd(k, x, y):
        return scaled(k, x, y), (x, y)

    def bwd(k, res, g):
        x, y = res
        g1, g2 = g
        return (k * y * g1 + g2, None)  # None: no gradient for y (declared zero)

    f.defvjp(fwd, bwd)
    x, y = rng.standard_normal(2), rng.standard_normal(2)

    def loss(x, y):
        a, b = f(2.0, x, y)
        return tnp.sum(a) + tnp.sum(b * b)

    gx, gy = tg.grad(loss, argnums=(0, 1))(x, y)
    close(gx, 2.0 * y + 2 * (x + y))
    close(gy, np.zeros(2))
    # only the first output used: the second gets a zero cotangent in bwd
    close(tg.grad(lambda x: tnp.sum(f(2.0, x, y)[0]))(x), 2.0 * y)


def test_custom_vjp_bwd_with_wrong_structure_raises():
    f = tg.custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: g * 2.0)
    with pytest.raises(TypeError, match="must return a tuple with one cotangent"):
        tg.grad(f)(1.0)


# ---- fixed_point --------------------------------------------------------------------------------


def newton_sqrt(a):
    return lambda x: 0.5 * (x + a / x)


def dist(x, y):
    return tnp.max(tnp.abs(x - y))


def test_fixed_point_value_gradient_and_closed_form():
    a = np.array([2.0, 9.0, 0.5])

    def root(a):
        return tg.fixed_point(newton_sqrt, a, np.ones(3), dist, 1e-13)

    assert type(root(a)) is np.ndarray
    close(root(a), np.sqrt(a), rtol=1e-14)

    def loss(a):
        return tnp.sum(root(a) * np.array([1.0, 2.0, 3.0]))

    g = tg.grad(loss)(a)
    close(g, np.array([1.0, 2.0, 3.0]) * 0.5 / np.sqrt(a), rtol=1e-9)
    close(g, fd_grad(lambda a: np.sum(np.sqrt(a) * np.array([1.0, 2.0, 3.0])), a))
    # second and third order are implicit too
    sq = lambda a: tg.fixed_point(newton_sqrt, a, 1.0, dist, 1e-13)  # noqa: E731
    close(tg.grad(tg.grad(sq))(4.0), -0.25 * 4.0**-1.5, rtol=1e-8)
    close(tg.grad(tg.grad(tg.grad(sq)))(4.0), 0.375 * 4.0**-2.5, rtol=1e-7)


def test_fixed_point_forward_mode():
    a, v = np.array([2.0, 3.0]), np.array([1.0, -2.0])

    def root(a):
        return tg.fixed_point(newton_sqrt, a, np.ones(2), dist, 1e-13)

    out, tan = tg.jvp(root, (a,), (v,))
    close(out, np.sqrt(a), rtol=1e-14)
    close(tan, 0.5 / np.sqrt(a) * v, rtol=1e-9)
    close(tg.jacfwd(root)(a), np.diag(0.5 / np.sqrt(a)), rtol=1e-9)
    _, hv = tg.jvp(tg.grad(lambda a: tnp.sum(root(a))), (a,), (v,))  # forward over reverse
    close(hv, -0.25 * a**-1.5 * v, rtol=1e-8)
    with pytest.raises(tg.ForwardModeError, match="fixed_point: nested forward mode"):
        tg.grad(lambda a: tnp.sum(tg.jvp(root, (a,), (v,))[1]))(a)


def test_fixed_point_tape_does_not_grow_with_iterations():
    steps, rows = [], []

    def counted(a):
        inner = newton_sqrt(a)

        def step(x):
            steps[-1] += 1
            return inner(x)

        return step

    def f(a, x0):
        steps.append(0)
        before = len(tg.current_tape())
        x = tg.fixed_point(counted, a, x0, dist, 1e-13)
        rows.append(len(tg.current_tape()) - before)
        return x * 1.0

    g_near = tg.grad(f)(2.0, 1.4)
    g_far = tg.grad(f)(2.0, 300.0)
    assert steps[1] > steps[0] + 5  # many more forward iterations (the adjoint too)
    assert rows[0] == rows[1] <= 2  # ... and the same rows: a's leaf and the result
    close(g_near, 0.5 / np.sqrt(2.0), rtol=1e-10)
    close(g_far, g_near, rtol=1e-10)


def test_fixed_point_pytree_parameter_and_x0_refused():
    # x = tanh(W x + b): parameters in a dict; check d sum(x*) / d params by differences
    W = 0.3 * rng.standard_normal((3, 3))
    b = rng.standard_normal(3)

    def layer(p):
        return lambda x: tnp.tanh(p["W"] @ x + p["b"])

    def loss(p):
        return tnp.sum(tg.fixed_point(layer, p, np.zeros(3), dist, 1e-14))

    g = tg.grad(loss)({"W": W, "b": b})
    close(g["b"], fd_grad(lambda b: loss({"W": W, "b": b}), b), rtol=1e-6)
    close(g["W"], fd_grad(lambda W: loss({"W": W, "b": b}), W), rtol=1e-6)
    with pytest.raises(TypeError, match="fixed_point does not differentiate with respect to x0"):
        tg.grad(lambda x0: tg.fixed_point(newton_sqrt, 2.0, x0, dist, 1e-10))(1.0)


def test_optimizers_refuse_gradients_not_in_the_parameters_shapes():
    # the same total size in other shapes or order would ravel into the wrong parameters
    x0 = [np.zeros(2), np.zeros(3)]
    with pytest.raises(ValueError, match=r"sgd: grad_fn returned shape \(3,\) at \[0\]"):
        tg.optimizers.sgd(lambda x, i: [np.ones(3), np.ones(2)], x0, num_iters=1)
    with pytest.raises(ValueError, match=r"adam: grad_fn returned shape \(2, 1\)"):
        tg.optimizers.adam(lambda x, i: np.ones((2, 1)), np.zeros(2), num_iters=1)
    with pytest.raises(TypeError, match="rmsprop: grad_fn returned a complex gradient"):
        tg.optimizers.rmsprop(lambda x, i: {"a": x["a"] * 1j}, {"a": np.ones(2)}, num_iters=1)


def test_fixed_point_with_a_pytree_x_refused_when_differentiated():
    def step(a):
        return lambda x: {"u": 0.5 * x["v"] + a, "v": 0.25 * x["u"] + 1.0}

    def loss(a):
        x = tg.fixed_point(step, a, {"u": 0.0, "v": 0.0}, lambda x, y: abs(x["u"] - y["u"]), 1e-12)
        return x["u"]

    assert loss(0.3) == pytest.approx(0.8 / 0.875)  # undifferentiated: any x works
    with pytest.raises(TypeError, match="fixed_point differentiates a fixed point x that is one"):
        tg.grad(loss)(0.3)


def test_custom_rules_returning_dicts_in_another_key_order_are_matched_by_key():
    x = np.array([1.0, 2.0])

    @tg.custom_vjp
    def mix(d):
        return 2.0 * d["a"] + 3.0 * d["b"]

    mix.defvjp(lambda d: (mix(d), None), lambda _, g: ({"b": 3.0 * g, "a": 2.0 * g},))
    g = tg.grad(lambda d: mix(d).sum())({"a": x, "b": x})
    close(g["a"], [2.0, 2.0])
    close(g["b"], [3.0, 3.0])

    @tg.custom_vjp
    def wrong_keys(d):
        return 2.0 * d["a"] + 3.0 * d["b"]

    wrong_keys.defvjp(lambda d: (wrong_keys(d), None), lambda _, g: ({"c": g, "a": g},))
    with pytest.raises(TypeError, match=r"argument 0 does not have the argument's structure"):
        tg.grad(lambda d: wrong_keys(d).sum())({"a": x, "b": x})

    @tg.custom_jvp
    def split(a):
        return {"p": 2.0 * a, "q": 3.0 * a}

    split.defjvp(lambda p, t: (split(p[0]), {"q": 3.0 * t[0], "p": 2.0 * t[0]}))
    _, tangent = tg.jvp(split, (x,), (np.ones(2),))
    close(tangent["p"], [2.0, 2.0])
    close(tangent["q"], [3.0, 3.0])
    close(tg.grad(lambda a: split(a)["p"].sum())(x), [2.0, 2.0])
    with pytest.raises(TypeError, match="tangent_out does not have the structure"):
        split.defjvp(lambda p, t: (split(p[0]), {"p": t[0], "r": t[0]}))
        tg.jvp(split, (x,), (np.ones(2),))
