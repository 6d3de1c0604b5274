"""The compiled Hessian carries every direction as a lane of one tangent sweep and one
forward-over-reverse sweep.  Checked against central differences of the (reverse-mode)
gradient, against analytic Hessians and against ``jacobian(grad(f))`` (the Tensor-level
rules), on programs that exercise each kind of row: matmul, reductions, broadcasting, ties,
structural ops with constant operands, rows that need a gradient but carry no tangent, and
custom ops (which fall back)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import forward as F
from tapegrad.core.tensor import STATE

rng = np.random.default_rng(11)
C = rng.standard_normal((4, 3))
W = tg.tensor(rng.uniform(0.5, 1.5, 6), requires_grad=True)  # needs a gradient, no tangent


def fd_hessian(f, x, h=1e-6):
    """Central differences of the reverse-mode gradient, column by column."""
    g = tg.grad(f)
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append(np.ravel(g(x + e) - g(x - e)) / (2 * h))
    return np.array(cols).T.reshape(x.shape + x.shape)


def check(f, x, atol=1e-6):
    with tg.no_grad():  # (arrays: with recording on, a Hessian reading W is a Tensor of it)
        H = tg.hessian(f)(x)
        np.testing.assert_allclose(H, fd_hessian(f, x), rtol=1e-6, atol=atol)
        np.testing.assert_allclose(H, tg.jacobian(tg.grad(f))(x), rtol=1e-10, atol=1e-10)
    return H


def matmul_both_sides(x):
    X = x.reshape(3, 4)
    return np.sum((X @ X.T) ** 2) + np.sum(np.sin(X.T @ C.T))


def reductions(x):
    X = x.reshape(3, 4)
    return (
        np.sum(np.exp(X).sum(axis=0) ** 2)
        + np.prod(np.cos(X), axis=1).sum()
        + np.mean(X**3)
        + np.max(X, axis=1) @ np.min(X * X, axis=0)[:3]
    )


def broadcasting(x):
    d = x[:, None] - x[None, :]
    return np.sum(np.tanh(d) ** 2 * x[None, :]) + np.sum(x[::2] * x[1::2].T)


def constant_operands(x):
    s = np.concatenate([C[0], x, C[1]])
    w = np.where(x > 0.0, x**3, C[2, 0])
    return np.sum(s**3 * np.cumsum(s)) + np.sum(w * x) + np.sum(np.cumprod(x[:4] * 0.5))


def closure_needing_gradient(x):
    # W requires a gradient but is not differentiated here: its rows are reached by the
    # reverse sweep without a tangent (prod's own second-order rule reads that tangent)
    return np.sum(np.exp(W * x)) + np.prod(W * W) * np.sum(x**2) + np.prod(W + x)


@pytest.mark.parametrize(
    "f, n",
    [
        (matmul_both_sides, 12),
        (reductions, 12),
        (broadcasting, 6),
        (constant_operands, 6),
        (closure_needing_gradient, 6),
    ],
)
def test_hessian_matches_differences_and_tensor_rules(f, n):
    x = rng.uniform(0.3, 1.2, n) * rng.choice([-1.0, 1.0], n)
    check(f, x)


def test_hessian_of_logsumexp_matches_analytic():
    A = rng.standard_normal((64, 32))
    x = rng.standard_normal(32) * 0.2
    z = A @ x
    p = np.exp(z) / np.sum(np.exp(z))
    expected = A.T @ (np.diag(p) - np.outer(p, p)) @ A + 2 * np.eye(x.size)
    H = tg.hessian(lambda x: np.log(np.sum(np.exp(A @ x))) + x @ x)(x)
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-12)


def test_ties_split_like_the_tensor_rules():
    x = np.array([1.0, 3.0, 3.0, -2.0, -2.0, 0.5])

    def f(x):
        return np.max(x) ** 2 * np.sum(x) + np.min(x * x) * np.max(x**3) + np.sum(x**2)

    H = tg.hessian(f)(x)
    np.testing.assert_allclose(H, tg.jacobian(tg.grad(f))(x), rtol=1e-12, atol=1e-12)
    # the two maxima share d max / dx: max**2 * sum contributes 2 * (1/2)(1/2) * sum to H[1, 2]
    assert H[1, 2] == pytest.approx(2 * 0.25 * np.sum(x) + 2 * 3.0 * 0.5 * 2 + 0.0 + 0.0)


def test_two_arguments_and_matrix_argument():
    def f(a, B):
        return np.sum(np.tanh(B @ a) ** 2) + np.sum(a**3) * np.sum(B)

    a = rng.standard_normal(3)
    B = rng.standard_normal((2, 3))
    H = tg.hessian(f, argnums=(0, 1))(a, B)
    flat = np.concatenate([a, B.ravel()])

    def g(v):
        return f(v[:3], v[3:].reshape(2, 3))

    Hf = fd_hessian(g, flat)
    np.testing.assert_allclose(H[0][0], Hf[:3, :3], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H[0][1].reshape(3, 6), Hf[:3, 3:], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H[1][0].reshape(6, 3), Hf[3:, :3], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H[1][1].reshape(6, 6), Hf[3:, 3:], rtol=1e-6, atol=1e-6)


def test_directions_split_into_blocks_give_the_same_hessian():
    # a large constant makes the tape wide: the directions go in several lane blocks
    n = 120
    M = rng.standard_normal((160, n)) / np.sqrt(n)
    x = rng.standard_normal(n) * 0.3
    size = M.size + 10 * n
    assert F.LANE_BUDGET // size < n  # more than one block

    def f(x):
        return np.sum(np.log(np.cosh(M @ x))) + np.sum(x**4)

    z = M @ x
    expected = (M.T * (1 - np.tanh(z) ** 2)) @ M + np.diag(12 * x**2)
    np.testing.assert_allclose(tg.hessian(f)(x), expected, rtol=1e-10, atol=1e-10)


def test_hvp_matches_hessian_columns():
    x = rng.uniform(0.3, 1.2, 12)
    v = rng.standard_normal(12)
    H = tg.hessian(matmul_both_sides)(x)
    np.testing.assert_allclose(tg.hvp(matmul_both_sides, (x,), (v,)), H @ v, rtol=1e-10, atol=1e-10)


class Softplus(tg.Function):
    """A custom row with a forward-mode rule: the compiled sweeps still hand it back."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log1p(np.exp(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1 + np.exp(-x))

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t / (1 + np.exp(-x))


def test_custom_rows_fall_back_to_tensor_rules():
    x = rng.uniform(-1.0, 1.0, 5)
    s = 1 / (1 + np.exp(-x))
    expected = np.diag(
        s * (1 - s) * np.sin(x) + 2 * s * np.cos(x) - np.log1p(np.exp(x)) * np.sin(x)
    )
    H = tg.hessian(lambda x: np.sum(Softplus.apply(x) * np.sin(x)))(x)
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-10)


def test_jacfwd_lanes_match_jacrev():
    def f(x):
        X = x.reshape(2, 3)
        return np.concatenate([np.ravel(X @ C.T), np.cumprod(x), np.max(X, axis=0)])

    x = rng.uniform(0.3, 1.2, 6)
    np.testing.assert_allclose(tg.jacfwd(f)(x), tg.jacrev(f)(x), rtol=1e-12, atol=1e-12)


def test_trace_hessian_and_hvp_match():
    x = rng.uniform(0.3, 1.2, 12)
    v = rng.standard_normal(12)
    tr = tg.trace(matmul_both_sides, x)
    H = tg.hessian(matmul_both_sides)(x)
    np.testing.assert_allclose(tr.hessian(x), H, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tr.hvp(x, v), H @ v, rtol=1e-10, atol=1e-10)


def test_repeated_calls_do_not_grow_the_tape():
    x = rng.standard_normal(4)
    h = tg.hessian(lambda x: np.sum(np.exp(x) * x))
    h(x)
    n = STATE.tape.n
    for _ in range(3):
        np.testing.assert_allclose(h(x), np.diag(np.exp(x) * (x + 2)))
    assert STATE.tape.n == n


def test_trace_hessian_of_matrix_argument_and_after_a_branch_change():
    def f(X):
        if X[0, 0] > 0:
            return np.sum(X**3) * np.sum(X)
        return np.sum(np.sin(X))

    X = rng.uniform(0.3, 1.2, (2, 3))
    H = tg.trace(f, X, retrace=True).hessian(X)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H, tg.hessian(f)(X), rtol=1e-10, atol=1e-10)
    tr = tg.trace(f, X, retrace=True)
    np.testing.assert_allclose(tr.hessian(-X).reshape(6, 6), np.diag(np.sin(X).ravel()))
    with pytest.raises(tg.RetraceRequired):
        tg.trace(f, X).hessian(-X)
