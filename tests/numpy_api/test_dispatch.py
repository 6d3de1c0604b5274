"""NumPy dispatch on Tensors (``np.sin(t)``, ``arr * t``...) and the tapegrad.numpy namespace."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

RNG = np.random.default_rng(3)
X = RNG.uniform(0.5, 2.0, (3, 4))  # positive: log, sqrt, power, division stay smooth
Y = RNG.uniform(0.5, 2.0, (3, 4))
V = RNG.standard_normal(4)
W = RNG.standard_normal(3)
M = RNG.standard_normal((4, 2))
S = RNG.standard_normal((3, 3))
B3 = RNG.standard_normal((2, 3, 4))

# (id, function written against numpy, its float inputs)
CASES = [
    ("sin", np.sin, [X]),
    ("cos", np.cos, [X]),
    ("tan", np.tan, [X * 0.5]),
    ("exp", np.exp, [X]),
    ("expm1", np.expm1, [X]),
    ("log", np.log, [X]),
    ("log1p", np.log1p, [X]),
    ("log2", np.log2, [X]),
    ("log10", np.log10, [X]),
    ("sqrt", np.sqrt, [X]),
    ("tanh", np.tanh, [X - 1]),
    ("square", np.square, [X]),
    ("exp2", np.exp2, [X]),
    ("reciprocal", np.reciprocal, [X]),
    ("sinh", np.sinh, [X]),
    ("cosh", np.cosh, [X]),
    ("negative", np.negative, [X]),
    ("positive", np.positive, [X]),
    ("abs", np.abs, [X - 1.25]),
    ("fabs", np.fabs, [X - 1.25]),
    ("add", np.add, [X, Y]),
    ("subtract", np.subtract, [X, Y]),
    ("multiply", np.multiply, [X, Y]),
    ("divide", np.divide, [X, Y]),
    ("power", np.power, [X, Y]),
    ("float_power", np.float_power, [X, Y]),
    ("maximum", np.maximum, [X, Y]),
    ("minimum", np.minimum, [X, Y]),
    ("fmax", np.fmax, [X, Y]),
    ("hypot", np.hypot, [X, Y]),
    ("logaddexp", np.logaddexp, [X, Y]),
    ("broadcast_add", np.add, [X, V]),
    ("power_scalar", lambda a: np.power(a, 2.5), [X]),
    ("sum", np.sum, [X]),
    ("sum_axis", lambda a: np.sum(a, axis=1, keepdims=True), [X]),
    ("mean", lambda a: np.mean(a, axis=0), [X]),
    ("prod", lambda a: np.prod(a, 1), [X]),
    ("max", np.max, [X]),
    ("min", lambda a: np.min(a, axis=0), [X]),
    ("amax", lambda a: np.amax(a, 1), [X]),
    ("amin", np.amin, [X]),
    ("var", lambda a: np.var(a, axis=1), [X]),
    ("std", lambda a: np.std(a, ddof=1), [X]),
    ("add.reduce", lambda a: np.add.reduce(a), [X]),
    ("multiply.outer", lambda a, b: np.multiply.outer(a, b), [V, W]),
    ("dot_vv", np.dot, [V, V * 2]),
    ("dot_mv", np.dot, [X, V]),
    ("dot_mm", np.dot, [X, M]),
    ("dot_nd", np.dot, [X, RNG.standard_normal((2, 4, 2))]),
    ("vdot", np.vdot, [X, Y]),
    ("inner", np.inner, [X, Y]),
    ("matmul", np.matmul, [X, M]),
    ("matmul_batched", np.matmul, [B3, M]),
    ("where", lambda a, b: np.where(a > 1.2, a, b), [X, Y]),
    ("clip", lambda a: np.clip(a, 0.8, 1.6), [X]),
    ("clip_min_kw", lambda a: np.clip(a, min=1.0), [X]),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), [X, Y]),
    ("concatenate_none", lambda a, b: np.concatenate((a, b), axis=None), [X, Y]),
    ("stack", lambda a, b: np.stack([a, b], axis=1), [X, Y]),
    ("hstack", lambda a, b: np.hstack([a, b]), [X, Y]),
    ("vstack", lambda a, b: np.vstack([a, b]), [X, V.reshape(1, 4)]),
    ("reshape", lambda a: np.reshape(a, (2, 6)), [X]),
    ("transpose", np.transpose, [B3]),
    ("transpose_axes", lambda a: np.transpose(a, (1, 0, 2)), [B3]),
    ("swapaxes", lambda a: np.swapaxes(a, 0, 2), [B3]),
    ("moveaxis", lambda a: np.moveaxis(a, 0, -1), [B3]),
    ("squeeze", np.squeeze, [X.reshape(3, 1, 4)]),
    ("expand_dims", lambda a: np.expand_dims(a, 1), [X]),
    ("ravel", np.ravel, [X]),
    ("broadcast_to", lambda a: np.broadcast_to(a, (2, 3, 4)), [X]),
    ("norm", np.linalg.norm, [X]),
    ("norm_axis", lambda a: np.linalg.norm(a, axis=1), [X]),
    ("norm_ord1", lambda a: np.linalg.norm(a, 1), [V]),
    ("norm_inf", lambda a: np.linalg.norm(a, np.inf), [V]),
    ("norm_p3", lambda a: np.linalg.norm(a, 3), [V]),
    ("norm_fro", lambda a: np.linalg.norm(a, "fro"), [X]),
    ("norm_mat1", lambda a: np.linalg.norm(a, 1), [X]),
    ("outer", np.outer, [V, W]),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=1), [X, M]),
    ("tensordot_pairs", lambda a, b: np.tensordot(a, b, axes=([0, 1], [1, 2])), [X, B3]),
    ("einsum_matmul", lambda a, b: np.einsum("ij,jk->ik", a, b), [X, M]),
    ("einsum_implicit", lambda a, b: np.einsum("ij,jk", a, b), [X, M]),
    ("einsum_batch", lambda a, b: np.einsum("bij,jk->bik", a, b), [B3, M]),
    ("einsum_dot", lambda a, b: np.einsum("i,i->", a, b), [V, V + 1]),
    ("einsum_outer", lambda a, b: np.einsum("i,j->ij", a, b), [V, W]),
    ("einsum_transpose", lambda a: np.einsum("ij->ji", a), [X]),
    ("einsum_trace", lambda a: np.einsum("ii", a), [S]),
    ("einsum_diag", lambda a: np.einsum("ii->i", a), [S]),
    ("einsum_ellipsis", lambda a, b: np.einsum("...j,jk->...k", a, b), [B3, M]),
    ("einsum_three", lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), [X, M, W[:2]]),
    ("cumsum", lambda a: np.cumsum(a, axis=1), [X]),
    ("cumsum_flat", np.cumsum, [X]),
    ("diff", lambda a: np.diff(a, n=2), [X]),
    ("trace", np.trace, [S]),
    ("copy", np.copy, [X]),
    ("getitem_and_ops", lambda a: a[1:, ::2] * np.sin(a[0, 0]), [X]),
]
if hasattr(np, "vecdot"):
    CASES.append(("vecdot", np.vecdot, [X, Y]))


@pytest.mark.parametrize("fn, args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_numpy_function_dispatches_with_correct_gradient(fn, args):
    ts = [tg.tensor(a, requires_grad=True) for a in args]
    out = fn(*ts)
    assert isinstance(out, tg.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.numpy(), fn(*args), rtol=1e-12, atol=1e-14)
    assert tg.gradcheck(fn, args)


def test_ufunc_gradients_match_analytic():
    g = tg.grad(lambda x: np.sum(np.sin(x) * np.exp2(x) + np.sqrt(x)))(X)
    np.testing.assert_allclose(
        g, np.cos(X) * 2**X + np.sin(X) * 2**X * np.log(2) + 0.5 / np.sqrt(X), rtol=1e-12
    )
    g = tg.grad(lambda A: np.einsum("ij,jk->", A, M))(X)
    np.testing.assert_allclose(g, np.tile(M.sum(1), (3, 1)), rtol=1e-12)
    g = tg.grad(np.linalg.norm)(V)
    np.testing.assert_allclose(g, V / np.linalg.norm(V), rtol=1e-12)


def test_arrays_and_numpy_scalars_on_the_left_give_tensors():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    a = np.array([3.0, 4.0])
    for out, expect, grad in [
        (a * x, [3.0, 8.0], a),
        (np.float64(2) * x, [2.0, 4.0], [2.0, 2.0]),
        (a + x, [4.0, 6.0], [1.0, 1.0]),
        (a - x, [2.0, 2.0], [-1.0, -1.0]),
        (a / x, [3.0, 2.0], -a / np.array([1.0, 4.0])),
        (np.float32(2) ** x, [2.0, 4.0], np.log(2) * np.array([2.0, 4.0])),
    ]:
        assert isinstance(out, tg.Tensor)
        np.testing.assert_allclose(out.numpy(), expect)
        (g,) = tg.autograd.grad(out.sum(), x)
        np.testing.assert_allclose(g.numpy(), grad, rtol=1e-12)
    out = np.ones((3, 2)) @ x
    assert isinstance(out, tg.Tensor) and out.shape == (3,)


def test_comparisons_and_predicates_return_values_without_grad():
    x = tg.tensor([-1.0, 2.0], requires_grad=True)
    for out, expect in [
        (np.greater(x, 0), [False, True]),
        (np.zeros(2) < x, [False, True]),
        (np.equal(x, 2.0), [False, True]),
        (np.isnan(x), [False, False]),
        (np.isfinite(x), [True, True]),
    ]:
        assert np.asarray(out).dtype == bool
        np.testing.assert_array_equal(np.asarray(out), expect)
        assert not getattr(out, "requires_grad", False)
    assert np.shape(x) == (2,) and np.ndim(x) == 1 and np.argmax(x) == 1
    np.testing.assert_array_equal(np.floor(x * 1.5).numpy(), [-2.0, 3.0])
    assert np.allclose(x, [-1.0, 2.0])
    # sign/floor have zero derivative: the gradient through them is zero, not dropped
    assert tg.grad(lambda t: np.sum(np.sign(t) * t))(np.array([-1.0, 2.0])).tolist() == [-1, 1]


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda t: np.unwrap(t), "numpy.unwrap"),
        (lambda t: np.unique(t), "numpy.unique"),
        (lambda t: np.linalg.eig(t.reshape(2, 2)), "numpy.linalg.eig"),
        (lambda t: np.maximum.accumulate(t), "numpy.maximum.accumulate"),
        (lambda t: np.sum(t, out=np.zeros(())), "numpy.sum: out="),
        (lambda t: np.linalg.eigvals(t.reshape(2, 2)), "numpy.linalg.eigvals"),
    ],
)
def test_unsupported_numpy_functions_raise_naming_themselves(call, name):
    t = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    with pytest.raises(TypeError, match=name):
        call(t)


def test_in_place_into_an_array_refuses_instead_of_dropping_the_graph():
    a = np.zeros(2)
    with pytest.raises(TypeError, match="out="):
        a += tg.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(a, [0.0, 0.0])


def test_einsum_errors_are_clear():
    with pytest.raises(ValueError, match="2 operand subscripts"):
        tg.einsum("ij,jk->ik", tg.tensor(X))
    with pytest.raises(ValueError, match="label 'j' has sizes"):
        tg.einsum("ij,jk->ik", tg.tensor(X), tg.tensor(X))


# ---- tapegrad.numpy --------------------------------------------------------------------------


def test_tnp_on_plain_arrays_returns_what_numpy_returns():
    for name, args in [
        ("sin", [X]),
        ("sum", [X]),
        ("dot", [V, V]),
        ("einsum", ["ij->", X]),
        ("concatenate", [[X, Y]]),
        ("maximum", [X, Y]),
        ("mean", [V]),
    ]:
        mine, ref = getattr(tnp, name)(*args), getattr(np, name)(*args)
        assert type(mine) is type(ref)
        np.testing.assert_array_equal(mine, ref)
    assert tnp.linalg.norm(V) == np.linalg.norm(V)
    assert tnp.pi == np.pi and tnp.float64 is np.float64 and tnp.newaxis is None
    np.testing.assert_array_equal(tnp.arctan(V), np.arctan(V))  # unsupported: numpy's own


def test_tnp_on_tensors_differentiates():
    def f(x):
        h = tnp.tanh(tnp.dot(x, M))
        return tnp.sum(tnp.concatenate([h, tnp.exp(-h)], axis=0)) + tnp.linalg.norm(x)

    assert tg.gradcheck(f, [V])
    with pytest.raises(TypeError, match="numpy.unwrap"):
        tnp.unwrap(tg.tensor(V))


def test_tnp_array_stacks_tensors_instead_of_dropping_them():
    def f(x):
        return tnp.sum(tnp.array([[x[0], 1.0], [x[1] * x[0], 2.0]]) ** 2)

    g = tg.grad(f)(np.array([2.0, 3.0]))
    np.testing.assert_allclose(g, [2 * 2 + 2 * 3 * 3 * 2, 2 * 2 * 2 * 3])
    assert isinstance(tnp.asarray(tg.tensor(V)), tg.Tensor)
    assert isinstance(tnp.array([1.0, 2.0]), np.ndarray)
