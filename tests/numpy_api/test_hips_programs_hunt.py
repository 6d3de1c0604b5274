"""Programs written the way HIPS autograd users write them, run under tapegrad's transforms.

Plain NumPy code under ``tg.grad`` / ``tg.jvp`` / ``tg.vjp`` / ``tg.hessian`` / ``tg.hvp``,
``tapegrad.numpy`` and ``tapegrad.scipy``: a derivative checker of the HIPS kind (a forward
and a reverse product at a random direction, nested to second order in the point *and* the
direction), pytrees (dicts with defaults, lists appended to), broadcasting binary ops at second
order, Hessian-vector and tensor-Jacobian products, custom reverse rules that call other custom
rules, ``fixed_point``, the optimizers over pytrees and SciPy's samplers.  References: central
finite differences, closed forms, NumPy and SciPy.

Findings kept here:
- a transform run with another transform's pullback alive on the tape gave Tensors instead of
  arrays once a nested transform had reclaimed dead rows below the outer call's first row
  (``np.asarray`` of a jvp result then raised ConversionError, intermittently, depending on
  what the tape held): fixed in ``transforms.functional._Call._reads_outer``;
- ``tapegrad.scipy.stats.<dist>.rvs`` was missing (a HIPS program samples with
  ``stats.dirichlet.rvs``): added, SciPy's draws on plain parameters, a clear error on Tensors.
"""

import itertools

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

EPS = 1e-6


def _flat(tree):
    if isinstance(tree, (float, int, np.floating, np.ndarray)):
        return np.ravel(np.asarray(tree, dtype=float))
    return tg.tree.ravel(tree)[0]


def _like(tree, flat):
    if isinstance(tree, (float, np.floating)):
        return float(flat[0])
    if isinstance(tree, np.ndarray):
        return flat.reshape(tree.shape)
    return tg.tree.ravel(tree)[1](flat)


def _probe(f, x, rng, order):
    """Forward and reverse products of f at x along random directions against central
    differences; then the same for (x, u) -> vjp and (x, v) -> jvp, down to ``order``."""
    xf = _flat(x)
    v = rng.standard_normal(xf.size)
    fd = (_flat(f(_like(x, xf + EPS * v))) - _flat(f(_like(x, xf - EPS * v)))) / (2 * EPS)
    y, t = tg.jvp(f, (x,), (_like(x, v),))
    assert not any(isinstance(a, tg.Tensor) for a in tg.tree.tree_leaves((y, t))), type(t)
    np.testing.assert_allclose(_flat(t), fd, rtol=1e-5, atol=1e-6)
    u = _like(y, rng.standard_normal(_flat(y).size))
    _, pull = tg.vjp(f, x)
    g = pull(u)[0]
    np.testing.assert_allclose(_flat(g) @ v, _flat(u) @ fd, rtol=1e-5, atol=1e-6)
    if order > 1:
        _probe(lambda xu: tg.vjp(f, xu[0])[1](xu[1])[0], (x, u), rng, order - 1)
        _probe(lambda xv: tg.jvp(f, (xv[0],), (xv[1],))[1], (x, _like(x, v)), rng, order - 1)


# ---- the finding: a transform's results stay arrays whatever the tape holds -------------------


def test_nested_jvp_stays_arrays_while_a_pullback_is_held():
    """jvp of a jvp of x ** y (x broadcast against y), with the pullback of an earlier vjp kept
    alive and a varying number of finished vjps left on the tape: each result must be a plain
    array with the closed-form value (tapegrad returned graph-carrying Tensors from about the
    30th round on)."""
    x = np.array([[1.5, 2.0]])
    y = np.array([[0.5, -1.0], [2.0, 0.25]])
    v = np.array([[1.0, -0.5]])

    def f(a):
        return a**y

    def df(a):  # the directional derivative along v
        return tg.jvp(f, (a,), (v,))[1]

    # d/dx of y x^(y-1) v along v: y (y - 1) x^(y - 2) v^2
    expected = y * (y - 1) * x ** (y - 2) * v**2
    for k in range(80):
        held = tg.vjp(df, x)[1]  # noqa: F841 - kept alive over the calls below
        for _ in range(k % 7):
            tg.vjp(f, x)[1](np.ones((2, 2)))
        out, t = tg.jvp(df, (x,), (v,))
        assert isinstance(out, np.ndarray) and isinstance(t, np.ndarray), (k, type(t))
        np.testing.assert_allclose(t, expected, rtol=1e-12)


def test_value_and_grad_stays_a_float_while_a_pullback_is_held():
    """The same history under value_and_grad of a second derivative: a float and an array."""
    y = np.array([0.5, -1.0, 2.0])

    def loss(a):
        return tnp.sum(a**y)

    def slope(a):  # d loss / d a . ones, itself differentiated below
        return tnp.sum(tg.grad(loss)(a))

    x = np.array([1.5, 2.0, 1.25])
    for k in range(40):
        held = tg.vjp(lambda a: tg.grad(loss)(a), x)[1]  # noqa: F841
        for _ in range(k % 5):
            tg.vjp(lambda a: a**y, x)[1](np.ones(3))
        val, g = tg.value_and_grad(slope)(x)
        assert isinstance(val, float) and isinstance(g, np.ndarray), (k, type(val), type(g))
        np.testing.assert_allclose(g, y * (y - 1) * x ** (y - 2), rtol=1e-12)


# ---- broadcasting binary functions at second order, HIPS's checker of products ----------------

_SHAPES = [(), (4,), (3, 4), (1, 4)]


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(5)
    args = [2.0 if s == () else rng.standard_normal(s) for s in _SHAPES]
    return list(itertools.product(args, args))


@pytest.mark.parametrize("name", ["pow", "arctan2", "hypot", "mul", "div"])
def test_binary_functions_at_second_order(name, pairs):
    ops = {
        "arctan2": tnp.arctan2,
        "hypot": tnp.hypot,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / (np.abs(b) + 1.0),
    }
    rng = np.random.default_rng(11)
    for a, b in pairs:
        if name == "pow":
            _probe(lambda s, b=b: s**b, np.abs(a) + 1.1, rng, 2)
        else:
            _probe(lambda s, b=b: ops[name](s, b), a, rng, 2)


# ---- pytrees, NumPy functions and products a HIPS program reaches for -------------------------


def test_dict_get_with_a_differentiated_default():
    def f(tree):
        d, x = tree
        return d.get("w", x) ** 2

    rng = np.random.default_rng(1)
    for d in ({"w": 3.0}, {"v": 4.0}, {}):
        _probe(f, (d, 2.0), rng, 2)
    g = tg.grad(f)(({"v": 4.0}, 2.0))
    assert g == ({"v": 0.0}, 4.0)


@pytest.mark.parametrize("first", [[1.0, 2.0, 3.0], np.array([[1.0, 2.0], [3.0, 4.0]])])
def test_append_list_or_array_and_a_float(first):
    rng = np.random.default_rng(2)
    _probe(lambda ab: tnp.append(ab[0], ab[1]) ** 2, (first, 4.0), rng, 2)
    ga, gb = tg.grad(lambda a, b: tnp.sum(tnp.append(a, b) ** 2), argnums=(0, 1))(first, 4.0)
    np.testing.assert_allclose(_flat(ga), 2 * _flat(first))
    assert gb == 8.0


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_numpy_gradient_of_a_grid(axis):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(tnp.gradient(x, axis=axis), np.gradient(x, axis=axis))
    _probe(lambda a: tnp.gradient(a, axis=axis), x, rng, 1)


def test_pinv_of_a_fixed_rank_gram_matrix():
    rng = np.random.default_rng(4)
    for n, r in [(5, 2), (4, 3)]:
        x = rng.standard_normal((n, r))
        _probe(lambda a: tnp.linalg.pinv(a.T @ a), x, rng, 1)
        _probe(lambda a: tnp.linalg.pinv(a @ a.T), x, rng, 1)  # rank r < n: constant rank


def test_hessian_tensor_and_tensor_jacobian_products():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 2, 2))
    V = rng.standard_normal((3, 2, 2))

    def f(x):
        return tnp.sum(tnp.sin(x) * tnp.cos(2 * x))

    H = tg.hessian(f)(a)
    np.testing.assert_allclose(tg.hvp(f, (a,), (V,)), np.tensordot(H, V, axes=3), rtol=1e-12)
    # the Hessian of a separable sum is diagonal: -sin x cos 2x - 4 cos x sin 2x - 4 sin x cos 2x
    d = -5 * np.sin(a) * np.cos(2 * a) - 4 * np.cos(a) * np.sin(2 * a)
    np.testing.assert_allclose(np.einsum("ijkijk->ijk", H), d, rtol=1e-12)

    def g(x):
        return tnp.roll(tnp.sin(x), 1, axis=0)

    J = tg.jacobian(g)(a)
    W = rng.standard_normal((3, 2))  # contracts the two leading output axes only
    part = np.tensordot(W, J, axes=2)
    expected = np.zeros((2,) + a.shape)
    for i, j, k in np.ndindex(a.shape):  # g[i, j, k] = sin a[i - 1, j, k]
        expected[k, (i - 1) % 3, j, k] += W[i, j] * np.cos(a[(i - 1) % 3, j, k])
    np.testing.assert_allclose(part, expected, rtol=1e-12)


def test_elementwise_gradient_through_a_vjp_of_ones():
    x = np.linspace(-2.0, 2.0, 7)
    y, pull = tg.vjp(lambda a: tnp.tanh(a) * a, x)
    (g,) = pull(np.ones_like(y))
    np.testing.assert_allclose(g, np.tanh(x) + x / np.cosh(x) ** 2, rtol=1e-12)


def test_nested_elementwise_derivatives_of_tanh():
    """Four nested vjps of ones (HIPS's elementwise_grad) of tanh written with exp, against the
    closed forms in t = tanh x."""

    def egrad(f):
        def g(x):
            y, pull = tg.vjp(f, x)
            return pull(tnp.ones_like(y))[0]

        return g

    def th(x):
        return (1.0 - tnp.exp(-2 * x)) / (1.0 + tnp.exp(-2 * x))

    x = np.linspace(-3.0, 3.0, 13)
    t = np.tanh(x)
    s = 1 - t**2
    d = egrad(th)
    for f, ref in [
        (d, s),
        (egrad(d), -2 * t * s),
        (egrad(egrad(d)), -2 * s * (1 - 3 * t**2)),
        (egrad(egrad(egrad(d))), 8 * t * s * (2 - 3 * t**2)),
    ]:
        np.testing.assert_allclose(f(x), ref, rtol=1e-9, atol=1e-12)


def test_custom_rule_calling_another_custom_rule_second_order():
    """A doubling whose reverse rule calls a custom identity whose own rule scales by 1.001: the
    second derivative in the cotangent must show the inner rule's 1.001 (HIPS's checker
    catches that wrong rule only when it differentiates in the direction too)."""

    @tg.custom_vjp
    def ident(g):
        return g

    ident.defvjp(lambda g: (g, None), lambda _, c: (1.001 * c,))

    @tg.custom_vjp
    def double(x):
        return 2.0 * x

    double.defvjp(lambda x: (2.0 * x, None), lambda _, c: (2.0 * ident(c),))

    def pulled(u):  # d/du of <u, J> where J's rule is 2 ident(u)
        return tg.vjp(double, 1.0)[1](u)[0]

    assert tg.grad(double)(0.3) == 2.0
    assert tg.grad(pulled)(0.7) == pytest.approx(2.002, rel=1e-14)


def test_fixed_point_square_root_derivative():
    def newton(a):
        return lambda x: 0.5 * (x + a / x)

    def dist(x, y):
        return tnp.abs(x - y)

    def root(a):
        return tg.fixed_point(newton, a, 1.0, dist, 1e-12)

    assert root(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-12)
    assert tg.grad(root)(2.0) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-9)


@pytest.mark.parametrize("name", ["adam", "sgd", "rmsprop"])
def test_optimizers_over_a_dict_pytree(name):
    target = {"w": np.array([1.0, -2.0]), "b": 0.5}

    def loss(p, i):
        return tnp.sum((p["w"] - target["w"]) ** 2) + (p["b"] - target["b"]) ** 2

    grad = tg.grad(loss)
    step = {"adam": 0.1, "sgd": 0.05, "rmsprop": 0.05}[name]
    out = getattr(tg.optimizers, name)(
        grad, {"w": np.zeros(2), "b": 0.0}, num_iters=400, step_size=step
    )
    np.testing.assert_allclose(out["w"], target["w"], atol=2e-2)
    assert out["b"] == pytest.approx(0.5, abs=2e-2)


# ---- SciPy's samplers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, args",
    [
        ("norm", (0.5, 2.0)),
        ("t", (3.0,)),
        ("gamma", (2.5,)),
        ("beta", (2.0, 3.0)),
        ("poisson", (4.0,)),
        ("dirichlet", (np.array([1.0, 2.0, 3.0]),)),
        ("multivariate_normal", (np.zeros(2), np.eye(2))),
    ],
)
def test_stats_rvs_is_scipys_draw(name, args):
    st = pytest.importorskip("scipy.stats")
    from tapegrad.scipy import stats

    ours = getattr(stats, name).rvs(*args, size=5, random_state=7)
    ref = getattr(st, name).rvs(*args, size=5, random_state=7)
    np.testing.assert_array_equal(ours, ref)


def test_stats_rvs_refuses_a_differentiated_parameter():
    pytest.importorskip("scipy.stats")
    from tapegrad.scipy import stats

    with pytest.raises(TypeError, match=r"stats\.norm\.rvs: sampling is not differentiable"):
        tg.grad(lambda s: tnp.sum(stats.norm.rvs(0.0, s, size=3)))(1.0)
    with pytest.raises(TypeError, match=r"stats\.dirichlet\.rvs"):
        tg.grad(lambda a: tnp.sum(stats.dirichlet.rvs(a)))(np.ones(3))
