"""A correctness hunt over linear-algebra gradients.

Linear-algebra programs are differentiated by tapegrad, written both ways users write them:
plain NumPy code (``np.linalg.*``, ``tapegrad.scipy.linalg``) under ``tg.grad``, ``tg.jvp``,
``tg.hessian`` and ``tg.hvp``, and the PyTorch-style ``tg.linalg`` with ``backward()``.  Each is
compared with an independent reference: PyTorch (``torch.func``, float64) where it has the same
function, central finite differences of NumPy / SciPy's own function otherwise (the exact
reference where only one triangle of the input is read), or a closed form.  The families are the
edge cases: batched and broadcast stacks, 1x1 and 0-size matrices, singular, rank-deficient and
nearly singular matrices, repeated eigen- and singular values (gauge-invariant quantities must be
right there, gauge-dependent ones must raise), negative determinants, non-symmetric input to the
symmetric factorizations, second and third order, forward against reverse mode, and inf / NaN.
Disagreements are kept as strict xfails that assert the correct value.
"""

import numpy as np
import pytest
from finite_differences import central_gradient

import tapegrad as tg

torch = pytest.importorskip("torch")
scipy_linalg = pytest.importorskip("scipy.linalg")

import tapegrad.scipy.linalg as tsl  # noqa: E402 (needs SciPy)

LinAlgError = np.linalg.LinAlgError
T = torch.linalg


def _u(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _well(*batch, n=3, seed):
    """Well-conditioned general matrices."""
    return _u(*batch, n, n, seed=seed) + 3.0 * np.eye(n)


def _spd(*batch, n=3, seed):
    x = _u(*batch, n, n, seed=seed)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sym_with(w, seed):
    """A symmetric matrix with eigenvalues ``w`` (any multiplicities)."""
    q, _ = np.linalg.qr(_u(len(w), len(w), seed=seed))
    return (q * np.asarray(w, dtype=float)) @ q.T


def _with_singular_values(s, m, n, seed):
    u, _ = np.linalg.qr(_u(m, m, seed=seed))
    v, _ = np.linalg.qr(_u(n, n, seed=seed + 1))
    k = len(s)
    return (u[:, :k] * np.asarray(s, dtype=float)) @ v[:, :k].T


A3 = _u(3, 3, seed=1)
A_WELL = _well(seed=2)
A_NEG = A_WELL * np.where(np.linalg.det(A_WELL) > 0, -1.0, 1.0)  # a negative determinant
B233 = _well(2, seed=3)
B2233 = _well(2, 2, seed=4)
A43 = _u(4, 3, seed=5)
A34 = _u(3, 4, seed=6)
B243 = _u(2, 4, 3, seed=7)
SPD3 = _spd(seed=8)
SPD233 = _spd(2, seed=9)
NONSYM = SPD3 + 0.4 * _u(3, 3, seed=10)  # the symmetric factorizations read one triangle
A44 = _u(4, 4, seed=11)


def _rel(got, want, rtol=1e-8, atol=1e-10):
    np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=rtol, atol=atol)


# ---- the reference: PyTorch, side by side --------------------------------------------------------


def _to_t(x):
    return torch.tensor(np.asarray(x, dtype=float))


def check_vs_torch(f_np, f_t, xs, *, second=False, jvp=True, rtol=1e-8, atol=1e-10, seed=0):
    """Value, reverse-mode gradient in every argument, forward-mode tangent and (``second``)
    the Hessian in the first argument of ``sum(f(*xs) * w)``, against torch.func on ``f_t``."""
    xs = [np.asarray(x, dtype=float) for x in xs]
    rng = np.random.default_rng(seed)
    ts = [_to_t(x) for x in xs]
    want_out = f_t(*ts).detach().numpy()
    w = rng.standard_normal(want_out.shape)
    wt = torch.tensor(w)
    argnums = tuple(range(len(xs)))

    def s_np(*a):
        return (f_np(*a) * w).sum()

    def s_t(*t):
        return (f_t(*t) * wt).sum()

    value, grads = tg.value_and_grad(s_np, argnums=argnums)(*xs)
    _rel(value, s_t(*ts).item(), rtol=1e-10, atol=1e-12)
    want_grads = torch.func.grad(s_t, argnums=argnums)(*ts)
    for g, wg in zip(grads, want_grads, strict=True):
        _rel(g, wg.numpy(), rtol=rtol, atol=atol)
    if jvp:
        vs = [rng.standard_normal(x.shape) for x in xs]
        out, tangent = tg.jvp(f_np, tuple(xs), tuple(vs))
        want_o, want_tan = torch.func.jvp(f_t, tuple(ts), tuple(_to_t(v) for v in vs))
        _rel(out, want_o.numpy(), rtol=1e-10, atol=1e-12)
        _rel(tangent, want_tan.numpy(), rtol=rtol, atol=atol)
    if second:
        h = tg.hessian(s_np)(*xs)
        want_h = torch.func.hessian(lambda t0: s_t(t0, *ts[1:]))(ts[0])
        _rel(h, want_h.numpy(), rtol=rtol * 10, atol=atol * 10)


# ---- the reference: finite differences of NumPy / SciPy's own function ---------------------------

EPS = 1e-6


def check_vs_fd(f, x, *, rtol=1e-6, atol=1e-7, seed=0, forward=True, second=False):
    """tapegrad's value and gradient of ``sum(f(x) * w)`` against ``f`` on plain arrays and its
    central differences; ``forward``: tg.jvp against a central difference of f; ``second``:
    tg.hvp and tg.hessian against differences of tg.grad."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(np.shape(f(x)))

    def s(a):
        return (f(a) * w).sum()

    def s_np(a):
        return float((np.asarray(f(a), dtype=float) * w).sum())

    value, grad = tg.value_and_grad(s)(x)
    _rel(value, s_np(x), rtol=1e-10, atol=1e-12)
    _rel(grad, central_gradient(s_np, x, EPS), rtol=rtol, atol=atol)
    v = rng.standard_normal(x.shape)
    if forward:
        out, tangent = tg.jvp(f, (x,), (v,))
        _rel(out, f(x), rtol=1e-10, atol=1e-12)
        want = (np.asarray(f(x + EPS * v)) - np.asarray(f(x - EPS * v))) / (2 * EPS)
        _rel(tangent, want, rtol=rtol, atol=atol)
    if second:
        g = tg.grad(s)
        hv_fd = (g(x + 1e-5 * v) - g(x - 1e-5 * v)) / 2e-5
        hv = tg.hvp(s, (x,), (v,))
        hv = hv[0] if isinstance(hv, tuple) else hv
        _rel(hv, hv_fd, rtol=1e-5, atol=1e-6)
        h = tg.hessian(s)(x).reshape(x.size, x.size)
        _rel(h @ v.ravel(), hv_fd.ravel(), rtol=1e-5, atol=1e-6)


def _xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


# ---- NumPy code against torch.func -----------------------------------------------------------


def _nsym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


def _tsym(t):
    return (t + t.mT) / 2


def _nspd(a):
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(a.shape[-1])


def _tspd(t):
    return t @ t.mT + 3 * torch.eye(t.shape[-1], dtype=t.dtype)


def _nproj(v, c):
    """sum_i c_i v_i v_i^T: a projector combination, invariant to eigenvector signs."""
    return (v * c) @ np.swapaxes(v, -1, -2)


def _tproj(v, c):
    return (v * torch.tensor(c)) @ v.mT


C3 = np.array([0.3, -1.2, 2.0])
C4 = np.array([0.3, -1.2, 2.0, 0.7])
E3 = _sym_with([-1.0, 0.5, 2.5], seed=12)  # well-separated eigenvalues

# name -> (NumPy code, the same in torch, inputs, options)
TORCH = {
    # determinants
    "det 1x1 negative": (np.linalg.det, T.det, [[[-2.5]]], {}),
    "det negative": (np.linalg.det, T.det, [A_NEG], {"second": True}),
    "det batch of batches": (np.linalg.det, T.det, [B2233], {}),
    "det 4x4": (np.linalg.det, T.det, [A44], {"second": True}),
    "slogdet logabsdet negative": (
        lambda a: np.linalg.slogdet(a)[1],
        lambda t: T.slogdet(t)[1],
        [A_NEG],
        {"second": True},
    ),
    "slogdet sign times logabsdet, batch of mixed signs": (
        lambda a: np.linalg.slogdet(a)[0] * np.linalg.slogdet(a)[1],
        lambda t: T.slogdet(t)[0] * T.slogdet(t)[1],
        [np.stack([A_NEG, -A_NEG])],
        {},
    ),
    "slogdet 1x1": (
        lambda a: np.linalg.slogdet(a).logabsdet,
        lambda t: T.slogdet(t)[1],
        [[[-0.7]]],
        {"second": True},
    ),
    "slogdet sign carries no gradient": (
        lambda a: np.linalg.slogdet(a)[0] * a.sum(),
        lambda t: T.slogdet(t)[0] * t.sum(),
        [A_NEG],
        {},
    ),
    "logdet of an spd product": (
        lambda a: np.log(np.linalg.det(_nspd(a))),
        lambda t: torch.logdet(_tspd(t)),
        [A3],
        {"second": True},
    ),
    # inverse, solve, powers
    "inv 1x1": (np.linalg.inv, T.inv, [[[4.0]]], {"second": True}),
    "inv": (np.linalg.inv, T.inv, [A_WELL], {"second": True}),
    "inv batch of batches": (np.linalg.inv, T.inv, [B2233], {}),
    "inv of the transpose": (lambda a: np.linalg.inv(a.T), lambda t: T.inv(t.T), [A_WELL], {}),
    "inv inv": (
        lambda a: np.linalg.inv(np.linalg.inv(a)),
        lambda t: T.inv(T.inv(t)),
        [A_WELL],
        {},
    ),
    "solve both arguments": (np.linalg.solve, T.solve, [A_WELL, _u(3, 2, seed=20)], {}),
    "solve batched A, shared matrix b": (
        np.linalg.solve,
        T.solve,
        [B233, _u(3, 2, seed=21)],
        {},
    ),
    "solve batched A, 1-d b": (np.linalg.solve, T.solve, [B233, _u(3, seed=22)], {}),
    "solve broadcast batches": (
        np.linalg.solve,
        T.solve,
        [_well(2, 1, seed=23), _u(3, 3, 1, seed=24)],
        {},
    ),
    "solve 1x1": (np.linalg.solve, T.solve, [[[2.0]], [[3.0, -1.0]]], {"second": True}),
    "solve second order in A": (
        lambda a: np.linalg.solve(a, np.arange(3.0)),
        lambda t: T.solve(t, torch.arange(3.0, dtype=t.dtype)),
        [A_WELL],
        {"second": True},
    ),
    "matrix_power -3 batched": (
        lambda a: np.linalg.matrix_power(a, -3),
        lambda t: T.matrix_power(t, -3),
        [B233],
        {},
    ),
    "matrix_power 1": (
        lambda a: np.linalg.matrix_power(a, 1),
        lambda t: T.matrix_power(t, 1),
        [A3],
        {},
    ),
    "matrix_power 6": (
        lambda a: np.linalg.matrix_power(a, 6),
        lambda t: T.matrix_power(t, 6),
        [A3 / 2],
        {"second": True},
    ),
    "matrix_power -1 is inv": (
        lambda a: np.linalg.matrix_power(a, -1),
        lambda t: T.inv(t),
        [A_WELL],
        {},
    ),
    "multi_dot four": (
        lambda a, b: np.linalg.multi_dot([a, b, a, b]),
        lambda a, b: T.multi_dot([a, b, a, b]),
        [A43, _u(3, 4, seed=25)],
        {},
    ),
    "multi_dot vector ends": (
        lambda a: np.linalg.multi_dot([a[:, 0], a, a.T, a[:, 1]]),
        lambda t: T.multi_dot([t[:, 0], t, t.T, t[:, 1]]),
        [A44],
        {},
    ),
    # cholesky of a symmetric input built inside (the gradient conventions then agree)
    "cholesky of x x^T + 3I": (
        lambda a: np.linalg.cholesky(_nspd(a)),
        lambda t: T.cholesky(_tspd(t)),
        [A3],
        {"second": True},
    ),
    "cholesky upper of x x^T + 3I, batched": (
        lambda a: np.linalg.cholesky(_nspd(a), upper=True),
        lambda t: T.cholesky(_tspd(t), upper=True),
        [B233],
        {},
    ),
    "cholesky 1x1": (np.linalg.cholesky, T.cholesky, [[[2.25]]], {"second": True}),
    "cholesky solve": (
        lambda a: np.linalg.solve(np.linalg.cholesky(_nspd(a)), np.ones(3)),
        lambda t: T.solve(T.cholesky(_tspd(t)), torch.ones(3, dtype=t.dtype)),
        [A3],
        {},
    ),
    # eigh / eigvalsh of a symmetrized input
    "eigvalsh": (
        lambda a: np.linalg.eigvalsh(_nsym(a)),
        lambda t: T.eigvalsh(_tsym(t)),
        [E3 + 0.1 * A3],
        {"second": True},
    ),
    "eigvalsh batched": (
        lambda a: np.linalg.eigvalsh(_nsym(a)),
        lambda t: T.eigvalsh(_tsym(t)),
        [_u(2, 4, 4, seed=26)],
        {},
    ),
    "eigh values UPLO=U": (
        lambda a: np.linalg.eigh(_nsym(a), UPLO="U")[0],
        lambda t: T.eigh(_tsym(t), UPLO="U")[0],
        [A3],
        {},
    ),
    "eigh projectors": (
        lambda a: _nproj(np.linalg.eigh(_nsym(a))[1], C3),
        lambda t: _tproj(T.eigh(_tsym(t))[1], C3),
        [E3 + 0.1 * A3],
        {"second": True},
    ),
    "eigh squared vectors batched": (
        lambda a: np.linalg.eigh(_nsym(a))[1] ** 2,
        lambda t: T.eigh(_tsym(t))[1] ** 2,
        [_u(2, 4, 4, seed=27)],
        {},
    ),
    "eigh reconstruction": (
        lambda a: (lambda w, v: (v * w) @ v.T)(*np.linalg.eigh(_nsym(a))),
        lambda t: (lambda w, v: (v * w) @ v.T)(*T.eigh(_tsym(t))),
        [A44],
        {},
    ),
    "eigh largest eigenvalue 1x1": (
        lambda a: np.linalg.eigh(a)[0],
        lambda t: T.eigh(t)[0],
        [[[3.0]]],
        {"second": True},
    ),
    # svd
    "svdvals tall": (
        lambda a: np.linalg.svd(a, compute_uv=False),
        T.svdvals,
        [A43],
        {"second": True},
    ),
    "svdvals wide batched": (
        lambda a: np.linalg.svd(a, compute_uv=False),
        T.svdvals,
        [np.swapaxes(B243, -1, -2)],
        {},
    ),
    "svd reduced U squared tall": (
        lambda a: np.linalg.svd(a, full_matrices=False)[0] ** 2,
        lambda t: T.svd(t, full_matrices=False)[0] ** 2,
        [A43],
        {},
    ),
    "svd reduced Vh squared wide": (
        lambda a: np.linalg.svd(a, full_matrices=False)[2] ** 2,
        lambda t: T.svd(t, full_matrices=False)[2] ** 2,
        [A34],
        {},
    ),
    "svd U Vh^T product square": (
        lambda a: (lambda u, s, vh: u @ vh)(*np.linalg.svd(a)),
        lambda t: (lambda u, s, vh: u @ vh)(*T.svd(t)),
        [A_WELL],
        {"second": True},
    ),
    "svd reconstruction batched wide": (
        lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
            *np.linalg.svd(a, full_matrices=False)
        ),
        lambda t: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*T.svd(t, full_matrices=False)),
        [np.swapaxes(B243, -1, -2)],
        {},
    ),
    "svd of a square rank-deficient matrix, vectors": (
        lambda a: np.linalg.svd(a)[0] ** 2,
        lambda t: T.svd(t)[0] ** 2,
        [_with_singular_values([3.0, 1.0], 3, 3, seed=28)],
        {},
    ),
    "svd 1x1": (
        lambda a: np.linalg.svd(a)[1] * np.linalg.svd(a)[0][0, 0],
        lambda t: T.svd(t)[1] * T.svd(t)[0][0, 0],
        [[[-2.0]]],
        {},
    ),
    # qr (LAPACK's Householder signs in both)
    "qr Q and R square": (
        lambda a: np.linalg.qr(a)[0] @ np.diag([1.0, 2.0, 3.0]) + np.linalg.qr(a)[1],
        lambda t: (
            T.qr(t)[0] @ torch.diag(torch.tensor([1.0, 2.0, 3.0], dtype=t.dtype)) + T.qr(t)[1]
        ),
        [A_WELL],
        {"second": True},
    ),
    "qr Q tall batched": (lambda a: np.linalg.qr(a)[0], lambda t: T.qr(t)[0], [B243], {}),
    "qr R tall batched": (lambda a: np.linalg.qr(a)[1], lambda t: T.qr(t)[1], [B243], {}),
    "qr wide Q": (lambda a: np.linalg.qr(a)[0], lambda t: T.qr(t)[0], [A34], {}),
    "qr wide R": (lambda a: np.linalg.qr(a)[1], lambda t: T.qr(t)[1], [A34], {}),
    "qr complete of a wide matrix": (
        lambda a: np.linalg.qr(a, mode="complete")[1],
        lambda t: T.qr(t, mode="complete")[1],
        [A34],
        {},
    ),
    "qr mode r": (lambda a: np.linalg.qr(a, mode="r"), lambda t: T.qr(t)[1], [A43], {}),
    "qr 1x1": (lambda a: np.linalg.qr(a)[1], lambda t: T.qr(t)[1], [[[-3.0]]], {}),
    # pinv, lstsq
    "pinv tall": (np.linalg.pinv, T.pinv, [A43], {"second": True}),
    "pinv wide batched": (np.linalg.pinv, T.pinv, [np.swapaxes(B243, -1, -2)], {}),
    "pinv square": (np.linalg.pinv, T.pinv, [A_WELL], {}),
    "pinv 1x1": (np.linalg.pinv, T.pinv, [[[-4.0]]], {}),
    "pinv hermitian of a symmetric input": (
        lambda a: np.linalg.pinv(_nsym(a), hermitian=True),
        lambda t: T.pinv(_tsym(t), hermitian=True),
        [E3 + 0.1 * A3],
        {},
    ),
    "lstsq x tall, both arguments": (
        lambda a, b: np.linalg.lstsq(a, b)[0],
        lambda a, b: T.pinv(a) @ b,
        [A43, _u(4, 2, seed=29)],
        {},
    ),
    "lstsq x wide (minimum norm), both arguments": (
        lambda a, b: np.linalg.lstsq(a, b)[0],
        lambda a, b: T.pinv(a) @ b,
        [A34, _u(3, seed=30)],
        {},
    ),
    "lstsq residuals": (
        lambda a: np.linalg.lstsq(a, np.arange(4.0))[1],
        lambda t: (
            ((t @ (T.pinv(t) @ torch.arange(4.0, dtype=t.dtype)) - torch.arange(4.0)) ** 2)
            .sum()
            .reshape(1)
        ),
        [A43],
        {},
    ),
    "lstsq singular values": (
        lambda a: np.linalg.lstsq(a, np.ones(4))[3],
        T.svdvals,
        [A43],
        {},
    ),
    # products
    "matmul broadcast batches": (
        np.matmul,
        torch.matmul,
        [_u(2, 1, 3, 4, seed=31), _u(5, 4, 2, seed=32)],
        {},
    ),
    "matmul vector @ batch": (np.matmul, torch.matmul, [_u(3, seed=33), B233], {}),
    "matmul batch @ vector": (np.matmul, torch.matmul, [B233, _u(3, seed=34)], {}),
    "matmul operator vector @ vector": (
        lambda a, b: a @ b,
        lambda a, b: a @ b,
        [_u(3, seed=35), _u(3, seed=36)],
        {},
    ),
    "einsum batched broadcast": (
        lambda a, b: np.einsum("...ij,...jk->...ik", a, b),
        lambda a, b: torch.einsum("...ij,...jk->...ik", a, b),
        [_u(2, 1, 3, 4, seed=37), _u(5, 4, 2, seed=38)],
        {},
    ),
    "einsum trace": (
        lambda a: np.einsum("ii", a),
        lambda t: torch.einsum("ii", t),
        [A3],
        {},
    ),
    "einsum bilinear repeated operand": (
        lambda a: np.einsum("i,ij,j->", a[0], a, a[1]),
        lambda t: torch.einsum("i,ij,j->", t[0], t, t[1]),
        [A3],
        {"second": True},
    ),
    "einsum batch diagonal": (
        lambda a: np.einsum("bii->bi", a),
        lambda t: torch.einsum("bii->bi", t),
        [B233],
        {},
    ),
    "einsum outer with sum": (
        lambda a, b: np.einsum("ij,k->ijk", a, b),
        lambda a, b: torch.einsum("ij,k->ijk", a, b),
        [A43, _u(2, seed=39)],
        {},
    ),
    "trace offset axes": (
        lambda a: np.trace(a, offset=1, axis1=1, axis2=2),
        lambda t: torch.diagonal(t, offset=1, dim1=1, dim2=2).sum(-1),
        [B243],
        {},
    ),
    "outer": (np.outer, torch.outer, [_u(3, seed=40), _u(4, seed=41)], {}),
    "kron": (np.kron, torch.kron, [A3, _u(2, 2, seed=42)], {}),
    "kron batched": (np.kron, torch.kron, [B233, _u(2, 2, seed=43)], {}),
    "cross broadcast": (
        np.cross,
        lambda a, b: T.cross(*torch.broadcast_tensors(a, b)),
        [_u(2, 3, seed=44), _u(3, seed=45)],
        {},
    ),
    "linalg.cross": (np.linalg.cross, T.cross, [A43, _u(4, 3, seed=46)], {}),
    "tensordot axes pairs": (
        lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0])),
        lambda a, b: torch.tensordot(a, b, dims=([0, 2], [2, 0])),
        [B243, _u(3, 5, 2, seed=47)],
        {},
    ),
    "vecdot": (np.linalg.vecdot, T.vecdot, [B243, _u(4, 3, seed=48)], {}),
    "matrix_transpose": (
        lambda a: np.linalg.matrix_transpose(a) @ a,
        lambda t: t.mT @ t,
        [B243],
        {},
    ),
    "dot 2-d": (np.dot, torch.matmul, [A43, A34], {}),
    "inner": (np.inner, torch.inner, [A43, _u(2, 3, seed=49)], {}),
    "vdot": (np.vdot, lambda a, b: (a * b).sum(), [A43, _u(4, 3, seed=50)], {}),
}


@pytest.mark.parametrize("name", list(TORCH))
def test_numpy_code_against_torch(name):
    f_np, f_t, xs, opts = TORCH[name]
    check_vs_torch(f_np, f_t, xs, **opts)


# ---- NumPy / SciPy's own function, by central differences ----------------------------------------
# (NumPy's eigh / cholesky and SciPy's triangular solvers read one triangle of the input: the
# differences of the very function called are the reference for where the gradient lands)

AB_BAND = np.array([[0.0, 1.0, -0.5, 0.3], [4.0, 5.0, 4.5, 6.0], [0.7, -0.2, 0.4, 0.0]])
FD = {
    "cholesky reads the lower triangle of a non-symmetric input": (np.linalg.cholesky, NONSYM),
    "cholesky upper reads the upper triangle": (
        lambda a: np.linalg.cholesky(a, upper=True),
        NONSYM,
    ),
    "eigh UPLO=U values of a non-symmetric input": (
        lambda a: np.linalg.eigh(a, UPLO="U")[0],
        E3 + 0.3 * A3,
    ),
    "eigh UPLO=L projectors of a non-symmetric input": (
        lambda a: _nproj(np.linalg.eigh(a)[1], C3),
        E3 + 0.3 * A3,
    ),
    "eigh UPLO=u lower case": (lambda a: np.linalg.eigh(a, UPLO="u")[0], E3 + 0.3 * A3),
    "eigvalsh UPLO=U batched": (
        lambda a: np.linalg.eigvalsh(a, UPLO="U"),
        np.stack([E3 + 0.3 * A3, E3 - 0.2 * A3.T]),
    ),
    "pinv hermitian of a non-symmetric input": (
        lambda a: np.linalg.pinv(a, hermitian=True),
        E3 + 0.3 * A3,
    ),
    "pinv rcond keeping every value": (lambda a: np.linalg.pinv(a, rcond=1e-3), A43),
    "pinv rtol keeping every value": (lambda a: np.linalg.pinv(a, rtol=1e-3), A34),
    "lstsq residuals of a 2-d b": (
        lambda a: np.linalg.lstsq(a, _u(4, 2, seed=60))[1],
        A43,
    ),
    "lstsq rcond given": (lambda a: np.linalg.lstsq(a, np.ones(4), rcond=1e-6)[0], A43),
    "norm fro axis pair keepdims": (
        lambda a: np.linalg.norm(a, axis=(0, 2), keepdims=True),
        B243,
    ),
    "norm nuc axis (2, 1) batched": (lambda a: np.linalg.norm(a, "nuc", axis=(2, 1)), B243),
    "norm -2 axis (1, 2)": (lambda a: np.linalg.norm(a, -2, axis=(1, 2)), B243),
    "norm 2 axis (-1, -2) keepdims": (
        lambda a: np.linalg.norm(a, 2, axis=(-1, -2), keepdims=True),
        B243,
    ),
    "norm inf matrix": (lambda a: np.linalg.norm(a, np.inf), A43),
    "norm -1 matrix axis (0, 2)": (lambda a: np.linalg.norm(a, -1, axis=(0, 2)), B243),
    "norm vector ord 3 axis 1 keepdims": (
        lambda a: np.linalg.norm(a, 3, axis=1, keepdims=True),
        B243,
    ),
    "norm vector ord -1.5 axis -1": (lambda a: np.linalg.norm(a, -1.5, axis=-1), B243),
    "norm vector ord 1 axis 0": (lambda a: np.linalg.norm(a, 1, axis=0), B243),
    "matrix_norm nuc": (lambda a: np.linalg.matrix_norm(a, ord="nuc"), B243),
    "matrix_norm -2 keepdims": (lambda a: np.linalg.matrix_norm(a, ord=-2, keepdims=True), B243),
    "vector_norm axis tuple 0.5": (lambda a: np.linalg.vector_norm(a, ord=0.5, axis=(0, 2)), B243),
    "cond-like ratio of extreme singular values": (
        lambda a: np.linalg.norm(a, 2) / np.linalg.norm(a, -2),
        A_WELL,
    ),
    "solve_triangular lower": (
        lambda a: tsl.solve_triangular(a, np.arange(1.0, 4.0), lower=True),
        A_WELL,
    ),
    "solve_triangular upper trans=1": (
        lambda a: tsl.solve_triangular(a, np.arange(1.0, 4.0), trans=1),
        A_WELL,
    ),
    "solve_triangular trans='T' lower unit_diagonal": (
        lambda a: tsl.solve_triangular(
            a, np.ones((3, 2)), trans="T", lower=True, unit_diagonal=True
        ),
        A_WELL,
    ),
    "solve_triangular in b": (
        lambda b: tsl.solve_triangular(A_WELL, b, lower=True, trans=2),
        _u(3, 2, seed=61),
    ),
    "cho_factor lower": (lambda a: tsl.cho_factor(a, lower=True)[0], NONSYM),
    "cho_factor upper": (lambda a: tsl.cho_factor(a)[0], NONSYM),
    "cho_solve from a factor in a": (
        lambda a: tsl.cho_solve(tsl.cho_factor(a), np.arange(3.0)),
        NONSYM,
    ),
    "cho_solve lower from a factor, in c": (
        lambda c: tsl.cho_solve((c, True), np.ones((3, 2))),
        np.linalg.cholesky(SPD3) + np.triu(_u(3, 3, seed=62), 1),
    ),
    "solve_banded in ab": (
        lambda ab: tsl.solve_banded((1, 1), ab, np.arange(4.0)),
        AB_BAND,
    ),
    "solve_banded (0, 2)": (
        lambda ab: tsl.solve_banded((0, 2), ab, np.ones((4, 2))),
        AB_BAND[::-1] + np.array([[0.0], [0.0], [3.0]]),
    ),
    "solve_sylvester in a": (
        lambda a: tsl.solve_sylvester(a, A_WELL.T, np.ones((3, 3))),
        A_WELL,
    ),
    "sqrtm": (tsl.sqrtm, SPD3),
    "sqrtm of a non-symmetric input": (tsl.sqrtm, SPD3 + 0.3 * A3),
    "expm": (tsl.expm, A3),
    "expm batched": (tsl.expm, _u(2, 2, 2, seed=63)),
    "expm 1x1": (tsl.expm, [[0.7]]),
    "expm of a nilpotent matrix": (tsl.expm, np.triu(A3, 1)),
}
SECOND = {
    "expm",
    "sqrtm",
    "cholesky reads the lower triangle of a non-symmetric input",
    "norm nuc axis (2, 1) batched",
}


@pytest.mark.parametrize("name", list(FD))
def test_against_finite_differences(name):
    f, x = FD[name]
    check_vs_fd(f, x, second=name in SECOND)


def test_expm_against_torch_matrix_exp_to_second_order():
    check_vs_torch(tsl.expm, torch.linalg.matrix_exp, [_u(2, 3, 3, seed=64)], second=True)


def test_solve_triangular_against_torch():
    for lower, trans, unit in [
        (True, 0, False),
        (False, 0, True),
        (True, 1, False),
        (False, "T", True),
    ]:

        def f_np(a, b, lower=lower, trans=trans, unit=unit):
            return tsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

        def f_t(a, b, lower=lower, trans=trans, unit=unit):
            tri = a.tril() if lower else a.triu()
            if unit:
                tri = tri - torch.diag(torch.diagonal(tri)) + torch.eye(3, dtype=a.dtype)
            if trans:
                return T.solve_triangular(tri.mT, b, upper=lower)
            return T.solve_triangular(tri, b, upper=not lower)

        check_vs_torch(f_np, f_t, [A_WELL, _u(3, 2, seed=65)])


# ---- third order: against central differences of torch's Hessian ---------------------------------
# (torch.func's own third derivative, jacfwd of hessian, is off for slogdet, det and solve: the
# differences of its second derivative, which agrees with tapegrad's, are the reference)

THIRD = {
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], lambda t: T.slogdet(t)[1], A_WELL),
    "det": (np.linalg.det, T.det, A_WELL),
    "inv entry": (lambda a: np.linalg.inv(a)[0, 1], lambda t: T.inv(t)[0, 1], A_WELL),
    "solve entry": (
        lambda a: np.linalg.solve(a, np.ones(3))[0],
        lambda t: T.solve(t, torch.ones(3, dtype=t.dtype))[0],
        A_WELL,
    ),
    "frobenius norm": (np.linalg.norm, T.matrix_norm, A3),
    "spectral norm": (lambda a: np.linalg.norm(a, 2), lambda t: T.matrix_norm(t, 2), A3),
    "nuclear norm": (lambda a: np.linalg.norm(a, "nuc"), lambda t: T.matrix_norm(t, "nuc"), A43),
    "largest eigenvalue": (
        lambda a: np.linalg.eigvalsh(_nsym(a))[-1],
        lambda t: T.eigvalsh(_tsym(t))[-1],
        E3,
    ),
    "cholesky sum": (
        lambda a: np.linalg.cholesky(_nspd(a)).sum(),
        lambda t: T.cholesky(_tspd(t)).sum(),
        A3,
    ),
    "expm squares": (
        lambda a: (tsl.expm(a) ** 2).sum(),
        lambda t: (T.matrix_exp(t) ** 2).sum(),
        A3 / 3,
    ),
    "pinv squares": (
        lambda a: (np.linalg.pinv(a) ** 2).sum(),
        lambda t: (T.pinv(t) ** 2).sum(),
        A43,
    ),
    "qr R cubes": (
        lambda a: (np.linalg.qr(a)[1] ** 3).sum(),
        lambda t: (T.qr(t)[1] ** 3).sum(),
        A43,
    ),
}


@pytest.mark.parametrize(
    "name, mode",
    [(n, m) for n in THIRD for m in ("jacfwd", "jvp")] + [("slogdet", "jacrev"), ("det", "jacrev")],
)
def test_third_order_against_differences_of_torchs_hessian(name, mode):
    f, ft, x = THIRD[name]
    v = _u(*x.shape, seed=70)

    def hess_t(a):
        return torch.func.hessian(ft)(_to_t(a)).numpy()

    want = (hess_t(x + 1e-5 * v) - hess_t(x - 1e-5 * v)) / 2e-5
    if mode == "jvp":
        got = tg.jvp(tg.hessian(f), (x,), (v,))[1]
    else:
        got = np.tensordot(getattr(tg, mode)(tg.hessian(f))(x), v, axes=v.ndim)
    _rel(got, want, rtol=1e-5, atol=1e-7)


# ---- singular, rank-deficient and nearly singular matrices ---------------------------------------


def _cofactor_t(a):
    """adj(A)^T by cofactors (the definition)."""
    n = a.shape[0]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


RANK2_33 = _with_singular_values([3.0, 1.5], 3, 3, seed=80)
RANK1_33 = _with_singular_values([2.0], 3, 3, seed=81)
NEAR_SINGULAR = RANK2_33 + 1e-11 * _u(3, 3, seed=82)


@pytest.mark.parametrize(
    "a", [RANK2_33, RANK1_33, NEAR_SINGULAR, np.ones((2, 2)), np.zeros((3, 3))], ids=str
)
def test_det_gradient_and_tangent_at_singular_matrices_are_the_adjugate(a):
    want = _cofactor_t(a)
    _rel(tg.grad(np.linalg.det)(a), want, rtol=1e-6, atol=1e-9)
    v = _u(*a.shape, seed=83)
    _rel(tg.jvp(np.linalg.det, (a,), (v,))[1], (want * v).sum(), rtol=1e-6, atol=1e-9)


def test_det_hessian_at_a_rank_one_matrix_against_differences_of_the_adjugate():
    v = _u(3, 3, seed=84)
    want = (_cofactor_t(RANK1_33 + 1e-6 * v) - _cofactor_t(RANK1_33 - 1e-6 * v)) / 2e-6
    _rel(tg.hvp(np.linalg.det, (RANK1_33,), (v,)), want, rtol=1e-6, atol=1e-8)


EXACTLY_SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])


def test_slogdet_sign_alone_has_a_zero_gradient_even_at_a_singular_matrix():
    assert np.linalg.slogdet(EXACTLY_SINGULAR)[0] == 0.0
    _rel(tg.grad(lambda a: np.linalg.slogdet(a)[0] * a.sum())(EXACTLY_SINGULAR), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.linalg.slogdet(a)[1],
        lambda a: np.linalg.slogdet(np.stack([np.eye(3), a]))[1].sum(),
    ],
    ids=["single", "in a batch"],
)
def test_slogdet_gradient_at_a_singular_matrix_raises_naming_slogdet(f):
    # log|det| is -inf there: its gradient A^-T does not exist
    with pytest.raises(LinAlgError, match="slogdet"):
        tg.grad(f)(EXACTLY_SINGULAR)
    with pytest.raises(LinAlgError, match="slogdet"):
        tg.jvp(f, (EXACTLY_SINGULAR,), (np.ones((3, 3)),))


@pytest.mark.parametrize(
    "f, a",
    [
        (lambda a: np.linalg.inv(a).sum(), EXACTLY_SINGULAR),
        (lambda a: np.linalg.solve(a, np.ones(3)).sum(), EXACTLY_SINGULAR),
        (lambda a: np.linalg.cholesky(a).sum(), np.diag([1.0, -1.0, 2.0])),
        (lambda a: np.linalg.cholesky(a).sum(), np.diag([1.0, 0.0, 2.0])),
        (lambda a: tsl.sqrtm(a).sum(), np.diag([1.0, -1.0, 2.0])),
        (lambda a: tsl.solve_triangular(a, np.ones(3)).sum(), np.triu(A_WELL) * [1.0, 0.0, 1.0]),
    ],
    ids=["inv", "solve", "cholesky indefinite", "cholesky semidefinite", "sqrtm", "triangular"],
)
def test_singular_or_indefinite_input_raises(f, a):
    with pytest.raises((LinAlgError, ValueError)):
        tg.grad(f)(a)


def test_inverse_of_a_nearly_singular_matrix_is_large_not_refused():
    a = np.array([[1.0, 2.0], [2.0, 4.0 + 1e-9]])
    got = tg.grad(lambda x: np.linalg.inv(x).sum())(a)
    want = torch.func.grad(lambda t: T.inv(t).sum())(_to_t(a)).numpy()
    _rel(got, want, rtol=1e-6)


RANK2_43 = _with_singular_values([3.0, 1.5], 4, 3, seed=85)


def _constant_rank_direction(a, seed):
    """A tangent of the rank-r matrices at ``a``: U dS V^T + dU S V^T + U S dV^T."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    r = int((s > 1e-10 * s[0]).sum())
    u, s, vh = u[:, :r], s[:r], vh[:r]
    x = _u(a.shape[0], r, seed=seed)
    y = _u(r, a.shape[1], seed=seed + 1)
    return x @ np.diag(s) @ vh + u @ np.diag(s) @ y


@pytest.mark.parametrize(
    "f",
    [
        np.linalg.pinv,
        lambda a: np.linalg.pinv(a.T),
        lambda a: np.linalg.lstsq(a, np.arange(4.0))[0],
    ],
    ids=["pinv tall", "pinv wide", "lstsq"],
)
def test_pinv_and_lstsq_at_a_rank_deficient_matrix_along_the_constant_rank_manifold(f):
    v = _constant_rank_direction(RANK2_43, seed=86)

    def curve(t):
        # the retraction back to rank 2 keeps the direction to first order
        u, s, vh = np.linalg.svd(RANK2_43 + t * v, full_matrices=False)
        return (u[:, :2] * s[:2]) @ vh[:2]

    want = (f(curve(1e-6)) - f(curve(-1e-6))) / 2e-6
    _rel(tg.jvp(f, (RANK2_43,), (v,))[1], want, rtol=1e-5, atol=1e-7)
    w = _u(*np.shape(f(RANK2_43)), seed=87)
    g = tg.grad(lambda a: (f(a) * w).sum())(RANK2_43)
    _rel((g * v).sum(), (want * w).sum(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.linalg.pinv(a, rcond=0.6).sum(),
        lambda a: np.linalg.pinv(a, rtol=0.6).sum(),
        lambda a: np.linalg.lstsq(a, np.ones(3), rcond=0.6)[0].sum(),
    ],
    ids=["pinv rcond", "pinv rtol", "lstsq rcond"],
)
def test_a_cutoff_dropping_a_nonzero_singular_value_raises(f):
    with pytest.raises(LinAlgError, match="rcond"):
        tg.grad(f)(np.diag([1.0, 0.5, 2.0]))


def test_pinv_with_a_cutoff_per_matrix_of_a_batch():
    a = np.stack([np.diag([1.0, 0.3]), np.diag([1.0, 0.6])])
    rcond = np.array([0.1, 0.5])
    got = tg.grad(lambda x: np.linalg.pinv(x, rcond=rcond).sum())(a)
    # no value is cut: the gradient of the inverse's sum, -A^-T 1 1^T A^-T
    want = np.stack([-np.outer(m, m) for m in (np.array([1.0, 1 / 0.3]), np.array([1.0, 1 / 0.6]))])
    _rel(got, want, rtol=1e-12)


def test_qr_of_a_rank_deficient_matrix_raises():
    with pytest.raises(LinAlgError, match="qr"):
        tg.grad(lambda a: np.linalg.qr(a)[1].sum())(RANK2_43)


def test_lstsq_of_a_rank_deficient_matrix_has_no_residuals_like_numpy():
    x, res, rank, s = np.linalg.lstsq(RANK2_43, np.ones(4))
    value, grad = tg.value_and_grad(lambda a: np.linalg.lstsq(a, np.ones(4))[3].sum())(RANK2_43)
    assert rank == 2 and res.shape == (0,)
    _rel(value, s.sum(), rtol=1e-12)


# ---- repeated eigenvalues and singular values ----------------------------------------------------

DEG = _sym_with([2.0, 2.0, 5.0], seed=90)  # a repeated eigenvalue
Q3 = np.linalg.qr(_u(3, 3, seed=91))[0]  # every singular value 1


def _tgrad(f_t, x):
    return torch.func.grad(f_t)(_to_t(x)).numpy()


@pytest.mark.parametrize(
    "f, f_t, x",
    [
        (lambda a: np.linalg.eigvalsh(a).sum(), lambda t: T.eigvalsh(t).sum(), np.eye(3)),
        (lambda a: np.linalg.eigh(a)[0].sum(), lambda t: T.eigh(t)[0].sum(), DEG),
        (lambda a: np.linalg.eigvalsh(a) @ [1.0, 1.0, 3.0], None, DEG),
        (lambda a: (np.linalg.eigvalsh(a) ** 2).sum(), lambda t: (T.eigvalsh(t) ** 2).sum(), DEG),
        (lambda a: np.linalg.eigvalsh(a)[2], None, DEG),
        (lambda a: np.linalg.eigvalsh(a).sum(), lambda t: T.eigvalsh(t).sum(), np.zeros((3, 3))),
        (lambda a: np.linalg.norm(a, "nuc"), lambda t: T.matrix_norm(t, "nuc"), Q3),
        (lambda a: np.linalg.svd(a, compute_uv=False).sum(), lambda t: T.svdvals(t).sum(), Q3),
        (
            lambda a: (np.linalg.svd(a, compute_uv=False) ** 2).sum(),
            lambda t: (T.svdvals(t) ** 2).sum(),
            Q3,
        ),
        (lambda a: np.linalg.norm(a), lambda t: T.matrix_norm(t), Q3),
    ],
    ids=[
        "eigvalsh sum at I",
        "eigh values sum",
        "eigvalsh weighted equally on the repeated pair",
        "eigvalsh sum of squares",
        "eigvalsh simple top eigenvalue",
        "eigvalsh sum at 0",
        "nuclear norm at an orthogonal matrix",
        "sum of singular values at an orthogonal matrix",
        "sum of squared singular values at an orthogonal matrix",
        "frobenius norm at an orthogonal matrix",
    ],
)
def test_gauge_invariant_quantities_at_repeated_values(f, f_t, x):
    """Quantities symmetric in the repeated values are differentiable there: tapegrad gives the
    derivative (symmetrized, since tnp's gradient lands in the lower triangle read), as PyTorch
    (where it has the function) and central differences along symmetric directions."""
    g = tg.grad(f)(x)
    # tnp's eigen gradients are lower triangular (off-diagonal entries count twice): spread
    sym = (g + g.T) / 2 if np.array_equal(g, np.tril(g)) else g
    if f_t is not None:
        _rel(sym, _tgrad(f_t, x), rtol=1e-9, atol=1e-12)
    v = _nsym(_u(3, 3, seed=92))

    def fv(t):
        return float(f(x + t * v))

    _rel((g * v).sum(), (fv(1e-6) - fv(-1e-6)) / 2e-6, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "f",
    [
        lambda a: _nproj(np.linalg.eigh(a)[1], C3),
        lambda a: np.linalg.eigh(a)[1] ** 2,
        lambda a: (lambda w, v: (v * w) @ v.T)(*np.linalg.eigh(a)),  # invariant, but through V
    ],
    ids=["projectors", "squared vectors", "reconstruction"],
)
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_eigenvectors_at_a_repeated_eigenvalue_raise(f, mode):
    # PyTorch returns NaN here, or ~1e16 when rounding splits the pair; tapegrad refuses
    with pytest.raises(LinAlgError, match="eigh"):
        if mode == "grad":
            tg.grad(lambda a: (f(a) * np.arange(9.0).reshape(3, 3)).sum())(DEG)
        else:
            tg.jvp(f, (DEG,), (np.eye(3),))


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.linalg.svd(a)[0] ** 2,
        lambda a: np.linalg.svd(a)[0] @ np.linalg.svd(a)[2],
        lambda a: tg.hessian(lambda b: np.linalg.norm(b, "nuc"))(a),
    ],
    ids=["U squared", "U Vh", "hessian of the nuclear norm"],
)
def test_singular_vectors_at_a_repeated_singular_value_raise(f):
    with pytest.raises(LinAlgError, match="svd"):
        tg.grad(lambda a: (f(a) * _u(*np.shape(f(Q3)), seed=93)).sum())(Q3)


def test_singular_vectors_of_a_non_square_matrix_at_a_zero_singular_value_raise():
    a = _with_singular_values([3.0, 1.0], 4, 3, seed=94)
    with pytest.raises(LinAlgError, match="zero singular value"):
        tg.grad(lambda x: (np.linalg.svd(x, full_matrices=False)[0] ** 2).sum())(a)


def test_nearly_repeated_eigenvalues_give_the_large_true_derivative():
    a = _sym_with([1.0, 1.0 + 1e-7, 3.0], seed=95)

    def f(x):
        return (np.linalg.eigh(_nsym(x))[1] ** 2) @ np.array([1.0, 2.0, 3.0])

    def f_t(t):
        return (T.eigh(_tsym(t))[1] ** 2) @ torch.tensor([1.0, 2.0, 3.0], dtype=t.dtype)

    w = _u(3, 3, seed=96)
    g = tg.grad(lambda x: (f(x) * w).sum())(a)
    want = _tgrad(lambda t: (f_t(t) * torch.tensor(w)).sum(), a)
    _rel(g, want, rtol=1e-5, atol=1e-6)


def test_spectral_norm_at_a_repeated_top_singular_value_splits_as_pytorch():
    # not differentiable there: at exactly tied values both give the mean of the tied
    # subgradients u_i v_i^T
    for x in (np.eye(3), np.diag([2.0, -2.0, 1.0]), np.diag([1.0, -3.0, 3.0])):
        for o in (2, -2):
            got = tg.grad(lambda a, o=o: np.linalg.norm(a, o))(x)
            want = _tgrad(lambda t, o=o: T.matrix_norm(t, o), x)
            _rel(got, want, rtol=1e-9, atol=1e-12)


def test_spectral_norm_at_values_tied_to_rounding_gives_a_subgradient():
    # at an orthogonal matrix the singular values differ by an ulp: the largest one's u v^T is
    # picked (LAPACK's basis, as PyTorch's pick is its own); it is a subgradient of the norm:
    # <G, X> = ||X||_2 and G's nuclear norm is 1
    g = tg.grad(lambda a: np.linalg.norm(a, 2))(Q3)
    _rel((g * Q3).sum(), 1.0, rtol=1e-12)
    _rel(np.linalg.norm(g, "nuc"), 1.0, rtol=1e-12)


# ---- 0-size and 1x1 ------------------------------------------------------------------------------

EMPTY = {
    "det": (np.linalg.det, (0, 0)),
    "det batch": (np.linalg.det, (2, 0, 0)),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], (0, 0)),
    "inv": (np.linalg.inv, (2, 0, 0)),
    "solve": (lambda a: np.linalg.solve(a, np.zeros((0, 2))), (0, 0)),
    "cholesky": (np.linalg.cholesky, (0, 0)),
    "eigvalsh": (np.linalg.eigvalsh, (0, 0)),
    "eigh vectors": (lambda a: np.linalg.eigh(a)[1], (0, 0)),
    "eigh vectors batch": (lambda a: np.linalg.eigh(a)[1], (2, 0, 0)),
    "svd U": (lambda a: np.linalg.svd(a)[0], (0, 0)),
    "svd reduced U of 3x0": (lambda a: np.linalg.svd(a, full_matrices=False)[0], (3, 0)),
    "svd reduced Vh of 0x3": (lambda a: np.linalg.svd(a, full_matrices=False)[2], (0, 3)),
    "svdvals 0x3": (lambda a: np.linalg.svd(a, compute_uv=False), (0, 3)),
    "qr R 0x3": (lambda a: np.linalg.qr(a)[1], (0, 3)),
    "pinv 3x0": (np.linalg.pinv, (3, 0)),
    "matrix_power -2": (lambda a: np.linalg.matrix_power(a, -2), (0, 0)),
    "norm fro": (np.linalg.norm, (0, 0)),
    "norm nuc": (lambda a: np.linalg.norm(a, "nuc"), (0, 3)),
    "norm 2": (lambda a: np.linalg.norm(a, 2), (0, 0)),
    "norm 2 of 3x0": (lambda a: np.linalg.norm(a, 2), (3, 0)),
    "norm 1": (lambda a: np.linalg.norm(a, 1), (0, 0)),
    "norm inf of 0x3": (lambda a: np.linalg.norm(a, np.inf), (0, 3)),
    "norm -1 of 0x3": (lambda a: np.linalg.norm(a, -1), (0, 3)),
    "norm 2 batch axis": (lambda a: np.linalg.norm(a, 2, axis=(1, 2)), (2, 0, 3)),
    "expm": (tsl.expm, (0, 0)),
}


@pytest.mark.parametrize("name", list(EMPTY))
def test_zero_size_matrices_give_numpys_value_and_an_empty_gradient(name):
    f, shape = EMPTY[name]
    x = np.zeros(shape)
    want = f(x)  # NumPy's own value on the plain array
    value, grad = tg.value_and_grad(lambda a: np.sum(f(a)) * 2.0)(x)
    _rel(value, 2.0 * np.sum(want))
    assert grad.shape == shape
    out, tangent = tg.jvp(f, (x,), (x,))
    assert np.shape(out) == np.shape(want) and np.shape(tangent) == np.shape(want)
    _rel(out, want)


@pytest.mark.parametrize(
    "f", [lambda a: np.linalg.norm(a, -2), lambda a: np.linalg.norm(a, -np.inf)], ids=["-2", "-inf"]
)
def test_zero_size_norms_numpy_refuses_are_refused(f):
    with pytest.raises(ValueError):
        f(np.zeros((0, 3)))
    with pytest.raises(ValueError):
        tg.grad(f)(np.zeros((0, 3)))


def test_one_by_one_matrices_against_scalar_calculus():
    x = np.array([[-2.5]])
    cases = [
        (np.linalg.det, 1.0),
        (lambda a: np.linalg.slogdet(a)[1], -0.4),
        (np.linalg.inv, -0.16),
        (np.linalg.pinv, -0.16),
        (lambda a: np.linalg.eigvalsh(a), 1.0),
        (lambda a: np.linalg.svd(a, compute_uv=False), -1.0),
        (lambda a: np.linalg.norm(a, "nuc"), -1.0),
        (lambda a: np.linalg.norm(a, -2), -1.0),
        (lambda a: np.linalg.matrix_power(a, -3), -3 * 2.5**-4),
        (lambda a: np.linalg.qr(a)[1], 1.0),  # R = a, Q = 1 (LAPACK leaves a 1x1 alone)
        (tsl.expm, np.exp(-2.5)),
    ]
    for f, want in cases:
        _rel(tg.grad(lambda a, f=f: f(a).sum())(x), [[want]], rtol=1e-12)
        _rel(tg.jvp(f, (x,), (np.array([[1.0]]),))[1], np.full(np.shape(f(x)), want), rtol=1e-12)


# ---- inf and NaN ---------------------------------------------------------------------------------

NAN_M = np.array([[np.nan, 1.0], [2.0, 3.0]])
INF_M = np.array([[np.inf, 1.0], [2.0, 3.0]])


@pytest.mark.parametrize(
    "f",
    [
        np.linalg.det,
        lambda a: np.linalg.slogdet(a)[1],
        lambda a: np.linalg.inv(a).sum(),
        lambda a: np.linalg.matrix_power(a, 3).sum(),
        lambda a: tsl.expm(a).sum(),
        lambda a: np.linalg.norm(a),
        lambda a: np.linalg.cholesky(a).sum(),
        lambda a: np.linalg.det(np.stack([a, np.eye(2)])).sum(),
    ],
    ids=["det", "slogdet", "inv", "matrix_power", "expm", "norm", "cholesky", "det batch"],
)
def test_a_nan_entry_makes_the_gradient_nan(f, request):
    value, grad = tg.value_and_grad(f)(NAN_M)
    assert np.isnan(value)
    if "cholesky" in request.node.name:  # the upper triangle is never read: its gradient is 0
        assert grad[0, 1] == 0.0 and np.isnan(grad[np.tril_indices(2)]).all()
        return
    assert np.isnan(grad).all()


def test_nan_stays_in_its_own_matrix_of_a_batch():
    g = tg.grad(lambda a: np.linalg.slogdet(a)[1].sum())(np.stack([NAN_M, A_WELL[:2, :2]]))
    assert np.isnan(g[0]).all()
    _rel(g[1], np.linalg.inv(A_WELL[:2, :2]).T, rtol=1e-12)
    g = tg.grad(lambda a: np.linalg.det(a).sum())(np.stack([NAN_M, A_WELL[:2, :2]]))
    assert np.isnan(g[0]).all()
    _rel(g[1], _cofactor_t(A_WELL[:2, :2]), rtol=1e-12)


@pytest.mark.parametrize(
    "f, f_t",
    [
        (lambda a: np.linalg.inv(a).sum(), lambda t: T.inv(t).sum()),
        (lambda a: np.linalg.slogdet(a)[1], lambda t: T.slogdet(t)[1]),
        (
            lambda a: np.linalg.solve(a, np.ones(2)).sum(),
            lambda t: T.solve(t, torch.ones(2, dtype=t.dtype)).sum(),
        ),
        (lambda a: np.linalg.norm(a, 1), lambda t: T.matrix_norm(t, 1)),
        (lambda a: np.linalg.matrix_power(a, 2).sum(), lambda t: T.matrix_power(t, 2).sum()),
    ],
    ids=["inv", "slogdet", "solve", "norm 1", "matrix_power"],
)
def test_an_inf_entry_against_torch(f, f_t):
    # inv([[inf, 1], [2, 3]]) = [[0, 0], [0, 1/3]]: the limits, in both
    value, grad = tg.value_and_grad(f)(INF_M)
    want = _tgrad(f_t, INF_M)
    _rel(value, f_t(_to_t(INF_M)).item(), rtol=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-15)


def test_det_of_a_matrix_holding_inf_has_a_nan_gradient():
    value, grad = tg.value_and_grad(np.linalg.det)(INF_M)
    assert value == np.inf
    assert np.isnan(grad).all()


# ---- refusals: what tapegrad does not differentiate must raise, naming the function --------------


@pytest.mark.parametrize(
    "f, name",
    [
        (lambda a: np.linalg.eig(a)[0].real.sum(), "eig"),
        (lambda a: np.linalg.eig(_nsym(a))[0].sum(), "eig"),  # real eigenvalues, still refused
        (lambda a: np.linalg.eigvals(a).real.sum(), "eigvals"),
        (
            lambda a: np.linalg.eigvals(np.array([[0.0, 1.0], [-1.0, 0.0]]) * a[0, 0]).real.sum(),
            "eigvals",
        ),
        (lambda a: np.linalg.tensorsolve(a, np.ones(3)).sum(), "tensorsolve"),
        (lambda a: np.linalg.tensorinv(a, ind=1).sum(), "tensorinv"),
        (lambda a: a.sum() * np.linalg.matrix_rank(a), "matrix_rank"),
        (lambda a: np.linalg.cond(a), "cond"),
        (lambda a: np.linalg.svdvals(a).sum(), "svdvals"),
        (lambda a: np.linalg.svd(a, hermitian=True)[1].sum(), "svd"),
        (lambda a: np.linalg.qr(a, mode="raw")[1].sum(), "qr"),
        (lambda a: np.linalg.qr(np.vstack([a, a]), mode="complete")[1].sum(), "qr"),
        (lambda a: np.linalg.svd(np.vstack([a, a]))[0][:, 4].sum(), "svd"),
        (lambda a: np.linalg.multi_dot([a, a], out=np.empty((3, 3))).sum(), "multi_dot"),
        (lambda a: np.linalg.eigh(a, UPLO="X")[0].sum(), "eigh"),
        (lambda a: np.linalg.matrix_power(a, 1.5).sum(), "integer"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_refusals_name_the_function(f, name):
    with pytest.raises((TypeError, ValueError, LinAlgError), match=name):
        tg.grad(f)(A_WELL)


def test_eig_of_a_tensor_never_truncates_complex_eigenvalues():
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert np.iscomplexobj(np.linalg.eigvals(rot))
    with pytest.raises(TypeError, match="eigvals"):
        tg.grad(lambda a: np.linalg.eigvals(a).real.sum())(rot)
    with pytest.raises(TypeError, match="eig"):
        tg.jvp(lambda a: np.linalg.eig(a)[0].real, (rot,), (np.eye(2),))


def test_svd_full_matrices_extra_vectors_raise_in_both_modes():
    a = _u(4, 3, seed=100)
    with pytest.raises(LinAlgError, match="full_matrices"):
        tg.grad(lambda x: np.linalg.svd(x)[0][:, 3].sum())(a)
    with pytest.raises(LinAlgError, match="full_matrices"):
        tg.jvp(lambda x: np.linalg.svd(x)[1], (a,), (np.ones((4, 3)),))
    # the reduced part of a full SVD is differentiable
    check_vs_torch(
        lambda x: np.abs(np.linalg.svd(x)[0][:, :3]),
        lambda t: torch.abs(T.svd(t)[0][:, :3]),
        [a],
        jvp=False,
    )


# ---- the PyTorch-style Tensor API, tg.linalg with backward() -------------------------------------


def _backward(lib, fn, arrays, seed=1):
    if lib == "torch":
        xs = [torch.tensor(np.asarray(a, dtype=float), requires_grad=True) for a in arrays]
        out = fn(torch.linalg, *xs)
        w = torch.tensor(np.random.default_rng(seed).standard_normal(tuple(out.shape)))
    else:
        xs = [tg.tensor(np.asarray(a, dtype=float), requires_grad=True) for a in arrays]
        out = fn(tg.linalg, *xs)
        w = tg.tensor(np.random.default_rng(seed).standard_normal(tuple(out.shape)))
    (out * w).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


NS2 = np.stack([NONSYM, NONSYM.T])
TENSOR_API = {
    "cholesky upper of a non-symmetric input": (lambda L, a: L.cholesky(a, upper=True), [NONSYM]),
    "cholesky batch of non-symmetric inputs": (lambda L, a: L.cholesky(a), [NS2]),
    "cholesky 1x1 batch": (lambda L, a: L.cholesky(a), [[[[4.0]], [[0.25]]]]),
    "eigh UPLO=U vectors of a non-symmetric input": (
        lambda L, a: L.eigh(a, UPLO="U")[1] ** 2,
        [NONSYM],
    ),
    "eigh values batch of non-symmetric inputs": (lambda L, a: L.eigh(a)[0], [NS2]),
    "eigvalsh at a repeated eigenvalue": (lambda L, a: L.eigvalsh(a).sum(), [DEG]),
    "eigh values at a repeated eigenvalue": (lambda L, a: L.eigh(a)[0] ** 2, [np.eye(3)]),
    "solve left=False batch": (
        lambda L, a, b: L.solve(a, b, left=False),
        [B233, _u(2, 4, 3, seed=101)],
    ),
    "solve batch of vectors": (lambda L, a, b: L.solve(a, b), [B233, _u(2, 3, seed=102)]),
    "solve one vector, batched A": (lambda L, a, b: L.solve(a, b), [B233, _u(3, seed=103)]),
    "solve broadcast matrices": (lambda L, a, b: L.solve(a, b), [B233, _u(1, 3, 2, seed=104)]),
    "norm of a 3-d tensor": (lambda L, a: L.norm(a), [B243]),
    "norm dim pair ord inf": (lambda L, a: L.norm(a, ord=float("inf"), dim=(0, 2)), [B243]),
    "norm dim pair ord -2 keepdim": (
        lambda L, a: L.norm(a, ord=-2, dim=(2, 0), keepdim=True),
        [B243],
    ),
    "norm dim int ord 3": (lambda L, a: L.norm(a, ord=3, dim=1), [B243]),
    "vector_norm dim tuple keepdim": (
        lambda L, a: L.vector_norm(a, ord=3, dim=(0, 2), keepdim=True),
        [B243],
    ),
    "vector_norm -inf ties": (lambda L, a: L.vector_norm(a, ord=-float("inf")), [[2.0, -1.0, 1.0]]),
    "vector_norm inf ties": (lambda L, a: L.vector_norm(a, ord=float("inf")), [[2.0, -2.0, 1.0]]),
    "vector_norm 0.5 with a zero": (lambda L, a: L.vector_norm(a, ord=0.5), [[1.0, 0.0, 3.0]]),
    "vector_norm 1 with a zero": (lambda L, a: L.vector_norm(a, ord=1), [[1.0, 0.0, -3.0]]),
    "vector_norm 2 of zeros": (lambda L, a: L.vector_norm(a), [np.zeros(3)]),
    "vector_norm -1 with a zero": (lambda L, a: L.vector_norm(a, ord=-1), [[1.0, 0.0, 3.0]]),
    "vector_norm -2 with a zero": (lambda L, a: L.vector_norm(a, ord=-2), [[1.0, 0.0, 3.0]]),
    "matrix_norm nuc keepdim": (lambda L, a: L.matrix_norm(a, ord="nuc", keepdim=True), [B243]),
    "matrix_norm -1 dim (2, 1)": (lambda L, a: L.matrix_norm(a, ord=-1, dim=(2, 1)), [B243]),
    "matrix_norm inf ties": (
        lambda L, a: L.matrix_norm(a, ord=float("inf")),
        [[[1.0, 2.0], [-2.0, 1.0]]],
    ),
    "matrix_norm 2 at I": (lambda L, a: L.matrix_norm(a, ord=2), [np.eye(3)]),
    "matrix_norm -2 of a batch": (lambda L, a: L.matrix_norm(a, ord=-2), [B243]),
    "svdvals batch": (lambda L, a: L.svdvals(a), [B243]),
    "svdvals at zero": (lambda L, a: L.svdvals(a), [np.zeros((2, 3))]),
    "svd full wide, reduced rows": (lambda L, a: L.svd(a)[2][:3] ** 2, [A34]),
    "qr complete of a wide matrix": (lambda L, a: L.qr(a, mode="complete")[0], [A34]),
    "qr batch": (lambda L, a: L.qr(a)[1], [B243]),
    "det 1x1 batch": (lambda L, a: L.det(a), [_u(3, 1, 1, seed=105)]),
    "det at a singular matrix": (lambda L, a: L.det(a), [np.ones((3, 3))]),
    "det batch mixing singular and regular": (
        lambda L, a: L.det(a),
        [np.stack([np.ones((3, 3)), A_WELL])],
    ),
    "slogdet batch": (lambda L, a: L.slogdet(a)[1], [np.stack([A_NEG, A_WELL])]),
    "inv batch": (lambda L, a: L.inv(a), [B2233]),
    "matrix_power 0": (lambda L, a: L.matrix_power(a, 0), [A3]),
    "matrix_power -2 batch": (lambda L, a: L.matrix_power(a, -2), [B233]),
    "multi_dot vector ends": (lambda L, a, b: L.multi_dot([a, b, a]), [_u(3, seed=106), A3]),
    "pinv rtol": (lambda L, a: L.pinv(a, rtol=1e-3), [A43]),
    "pinv hermitian of a symmetric input": (lambda L, a: L.pinv(a, hermitian=True), [SPD3]),
    "pinv batch": (lambda L, a: L.pinv(a), [B243]),
    "cross broadcast": (lambda L, a, b: L.cross(a, b), [_u(2, 3, seed=107), _u(1, 3, seed=108)]),
    "vecdot broadcast": (lambda L, a, b: L.vecdot(a, b), [_u(2, 3, seed=109), _u(3, seed=110)]),
    "diagonal offset -1": (lambda L, a: L.diagonal(a, offset=-1), [B243]),
    "matmul 1-d @ 1-d": (lambda L, a, b: L.matmul(a, b), [_u(3, seed=111), _u(3, seed=112)]),
    "matmul broadcast": (
        lambda L, a, b: L.matmul(a, b),
        [_u(2, 1, 3, 4, seed=113), _u(5, 4, 2, seed=114)],
    ),
}


TENSOR_API_XFAIL: dict = {}  # (the disagreements found here are fixed)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=_xfail(TENSOR_API_XFAIL[n])) if n in TENSOR_API_XFAIL else n
        for n in TENSOR_API
    ],
)
def test_tensor_api_backward_against_torch(name):
    fn, arrays = TENSOR_API[name]
    want, want_grads = _backward("torch", fn, arrays)
    got, grads = _backward("tg", fn, arrays)
    _rel(got, want, rtol=1e-10, atol=1e-12)
    for g, w in zip(grads, want_grads, strict=True):
        _rel(g, w, rtol=1e-8, atol=1e-10)


def test_tensor_api_pinv_hermitian_of_a_non_symmetric_input_is_right_along_symmetric_directions():
    """PyTorch evaluates the pseudo-inverse's derivative with the non-symmetric A it was given
    (not the symmetric matrix it inverted): the derivative of nothing, off along symmetric
    directions too.  tapegrad's is the gradient at the matrix inverted, exact along them."""
    w = _u(3, 3, seed=115)
    x = tg.tensor(NONSYM, requires_grad=True)
    (tg.linalg.pinv(x, hermitian=True) * tg.tensor(w)).sum().backward()
    xt = torch.tensor(NONSYM, requires_grad=True)
    (T.pinv(xt, hermitian=True) * torch.tensor(w)).sum().backward()
    for seed in (116, 117):
        v = _nsym(_u(3, 3, seed=seed))

        def f(t, v=v):
            return (np.linalg.pinv(NONSYM + t * v, hermitian=True) * w).sum()

        want = (f(1e-6) - f(-1e-6)) / 2e-6
        _rel((x.grad.numpy() * v).sum(), want, rtol=1e-6, atol=1e-8)
        assert abs((xt.grad.numpy() * v).sum() - want) > 1e-3  # PyTorch's is not


def test_tensor_api_second_order_through_backward_create_graph():
    x = tg.tensor(A_WELL, requires_grad=True)
    (g,) = tg.autograd.grad(tg.linalg.slogdet(x)[1], [x], create_graph=True)
    (g * tg.tensor(A3)).sum().backward()
    xt = torch.tensor(A_WELL, requires_grad=True)
    (gt,) = torch.autograd.grad(T.slogdet(xt)[1], [xt], create_graph=True)
    (gt * torch.tensor(A3)).sum().backward()
    _rel(g.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    _rel(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda L, a: L.eigh(a)[1], "eigh"),
        (lambda L, a: L.svd(a)[0], "svd"),
        (lambda L, a: L.slogdet(a - a)[1], "slogdet"),  # a zero matrix: singular
        (lambda L, a: L.pinv(a, atol=0.1), "atol"),
    ],
    ids=[
        "eigh vectors at a repeated eigenvalue",
        "svd at repeated values",
        "slogdet singular",
        "atol",
    ],
)
def test_tensor_api_refusals(call, match):
    x = tg.tensor(np.eye(3), requires_grad=True)
    with pytest.raises((LinAlgError, TypeError, ValueError), match=match):
        (
            call(tg.linalg, x)
            * tg.tensor(
                np.arange(9.0).reshape(3, 3)
                if call(tg.linalg, tg.tensor(np.eye(3))).ndim == 2
                else 1.0
            )
        ).sum().backward()


@pytest.mark.parametrize(
    "call",
    [
        lambda L, a: L.norm(a, ord=2),
        lambda L, a: L.norm(a, ord=1),
        lambda L, a: L.norm(a[0, 0], ord="fro"),
        lambda L, a: L.norm(a[0, 0], ord="nuc"),
        lambda L, a: L.norm(a, ord=0.5, dim=(0, 1)),
        lambda L, a: L.norm(a[0], ord=3),
    ],
    ids=[
        "ord 2 of 3-d",
        "ord 1 of 3-d",
        "fro of 1-d",
        "nuc of 1-d",
        "ord 0.5 of a pair",
        "ord 3 of 2-d",
    ],
)
def test_tensor_api_norm_refuses_what_torch_refuses(call):
    with pytest.raises(Exception):  # noqa: B017 - torch's own error type
        call(torch.linalg, torch.tensor(B243))
    with pytest.raises(ValueError):
        call(tg.linalg, tg.tensor(B243))


# ---- np.linalg.norm: every ord, axis and keepdims against NumPy and differences ------------------

NORM_INPUTS = [_u(5, seed=120), _u(3, 4, seed=121), _u(2, 3, 4, seed=122)]
NORM_AXES = [None, 0, -1, 1, (0,), (0, 1), (1, 0), (-1, 0), (0, -1), (2, 0), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize(
    "ord_", [None, "fro", "nuc", 0, 1, -1, 2, -2, 3, 0.5, -1.5, np.inf, -np.inf], ids=str
)
def test_norm_every_ord_axis_and_keepdims(ord_):
    """Where NumPy answers, tapegrad's value, shape and gradient agree with it; where NumPy
    refuses (a vector 'fro', an axis out of range, three axes), tapegrad refuses too."""
    for x in NORM_INPUTS:
        for axis in NORM_AXES:
            for keepdims in (False, True):

                def f(a, axis=axis, keepdims=keepdims):
                    return np.linalg.norm(a, ord_, axis, keepdims)

                try:
                    want = f(x)
                except (ValueError, TypeError):
                    with pytest.raises((ValueError, TypeError)):
                        tg.grad(lambda a, f=f: np.sum(f(a)))(x)
                    continue
                w = np.random.default_rng(3).standard_normal(np.shape(want))
                value, g = tg.value_and_grad(lambda a, f=f, w=w: np.sum(f(a) * w))(x)
                out = tg.jvp(f, (x,), (x,))[0]
                assert np.shape(out) == np.shape(want)
                _rel(out, want, rtol=1e-12, atol=0)
                fd = central_gradient(lambda a, f=f, w=w: float(np.sum(f(a) * w)), x, EPS)
                _rel(g, fd, rtol=1e-5, atol=1e-6)


# ---- tg.linalg's symmetric convention in forward mode and at second order ------------------------


def test_tensor_api_cholesky_and_eigh_forward_mode_is_the_derivative_along_the_symmetric_part():
    """tg.linalg's gradient of eigh / cholesky is symmetric (PyTorch's convention): the linear
    map it is the adjoint of takes a direction v to the derivative along (v + v^T) / 2, so
    tg.jvp along a non-symmetric v is that derivative, and equals <grad, v>.  PyTorch's own
    forward mode uses v as given there: it disagrees with its gradient (a torch issue)."""
    w = _u(3, 3, seed=130)
    v = _u(3, 3, seed=131)
    sym_v = _nsym(v)
    m = _nspd(A3) + 0.1 * A3  # a non-symmetric input: only its lower triangle is read
    for fn, ft in [
        (tg.linalg.cholesky, T.cholesky),
        (lambda a: tg.linalg.eigh(a)[1] ** 2, lambda t: T.eigh(t)[1] ** 2),
        (tg.linalg.eigvalsh, T.eigvalsh),
    ]:
        x = m if fn is tg.linalg.cholesky else E3 + 0.1 * A3
        tangent = tg.jvp(fn, (x,), (v,))[1]
        _rel(tangent, tg.jvp(fn, (x,), (sym_v,))[1], rtol=1e-12, atol=1e-14)
        want = (ft(_to_t(x + 1e-6 * sym_v)) - ft(_to_t(x - 1e-6 * sym_v))).numpy() / 2e-6
        _rel(tangent, want, rtol=1e-6, atol=1e-8)
        g = tg.grad(lambda a, fn=fn: (fn(a) * w).sum())(x)
        _rel((g * v).sum(), (tangent * w).sum(), rtol=1e-10, atol=1e-12)


def test_tensor_api_eigh_hessian_is_a_symmetric_form_agreeing_with_torch_on_symmetric_directions():
    w = _u(3, 3, seed=132)
    x = E3 + 0.1 * _nsym(A3)

    def f(a):
        return (tg.linalg.eigh(a)[1] ** 2 * w).sum()

    def f_t(t):
        return (T.eigh(t)[1] ** 2 * torch.tensor(w)).sum()

    h = tg.hessian(f)(x).reshape(9, 9)
    _rel(h, h.T, rtol=1e-10, atol=1e-12)  # PyTorch's is not symmetric here
    h_t = torch.func.hessian(f_t)(_to_t(x)).numpy().reshape(9, 9)
    for seed in (133, 134):
        v, u = _nsym(_u(3, 3, seed=seed)).ravel(), _nsym(_u(3, 3, seed=seed + 10)).ravel()
        _rel(u @ h @ v, u @ h_t @ v, rtol=1e-8, atol=1e-10)


def test_nuclear_norm_at_a_rank_deficient_matrix_gives_a_subgradient():
    # not differentiable there (a zero singular value is a kink): tapegrad and PyTorch add
    # u v^T of their own LAPACK basis for the null space; any such is a subgradient:
    # <G, X> = ||X||_* and ||G||_2 = 1, and G agrees with U_r V_r^T on the range
    a = _with_singular_values([3.0, 1.5], 4, 3, seed=135)
    g = tg.grad(lambda x: np.linalg.norm(x, "nuc"))(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    _rel((g * a).sum(), s.sum(), rtol=1e-12)
    _rel(np.linalg.norm(g, 2), 1.0, rtol=1e-12)
    _rel(g @ vh[:2].T, u[:, :2], rtol=1e-10, atol=1e-12)


# ---- traces replay LAPACK and the refusals -------------------------------------------------------

S3 = _sym_with([1.0, 2.0, 3.0], seed=140)


@pytest.mark.parametrize(
    "f, record, replay, raises",
    [
        (
            lambda a: (np.linalg.eigh(a)[1] ** 2 * np.arange(9.0).reshape(3, 3)).sum(),
            S3,
            DEG,
            "eigh",
        ),
        (lambda a: (np.linalg.svd(a)[0] ** 2 * np.arange(9.0).reshape(3, 3)).sum(), S3, Q3, "svd"),
        (lambda a: np.linalg.slogdet(a)[1], 2 * np.eye(3), EXACTLY_SINGULAR, "slogdet"),
        (lambda a: np.linalg.qr(a)[1].sum(), A43, RANK2_43, "qr"),
        (
            lambda a: np.linalg.pinv(a, rcond=0.5).sum(),
            np.diag([1.0, 0.9]),
            np.diag([1.0, 0.3]),
            "rcond",
        ),
        (np.linalg.det, 2 * np.eye(3), EXACTLY_SINGULAR, None),
        (np.linalg.det, 2 * np.eye(3), NEAR_SINGULAR, None),
        (lambda a: np.linalg.norm(a, 2), np.diag([3.0, 1.0]), np.eye(2), None),
    ],
    ids=["eigh", "svd", "slogdet", "qr", "pinv", "det singular", "det near-singular", "norm 2"],
)
def test_a_trace_replay_refuses_or_agrees_as_a_fresh_call(f, record, replay, raises):
    tr = tg.trace(f, record)
    if raises is not None:
        with pytest.raises(LinAlgError, match=raises):
            tr.value_and_grad(replay)
        return
    value, grad = tr.value_and_grad(replay)
    want_value, want_grad = tg.value_and_grad(f)(replay)
    _rel(value, want_value, rtol=1e-12, atol=1e-14)
    _rel(grad, want_grad, rtol=1e-9, atol=1e-12)


# ---- jacobians in every mode, vjp of several outputs, lstsq of empty matrices --------------------


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
@pytest.mark.parametrize(
    "f, f_t, x",
    [
        (lambda a: np.linalg.eigvalsh(_nsym(a)), lambda t: T.eigvalsh(_tsym(t)), E3 + 0.1 * A3),
        (lambda a: np.linalg.svd(a, compute_uv=False), T.svdvals, B243),
        (lambda a: np.linalg.qr(np.swapaxes(a, -1, -2))[0], lambda t: T.qr(t.mT)[0], B243),
        (lambda a: np.linalg.qr(np.swapaxes(a, -1, -2))[1], lambda t: T.qr(t.mT)[1], B243),
    ],
    ids=["eigvalsh", "svdvals batch", "qr Q wide batch", "qr R wide batch"],
)
def test_jacobian_against_torch(f, f_t, x, mode):
    _rel(
        tg.jacobian(f, mode=mode)(x),
        torch.func.jacrev(f_t)(_to_t(x)).numpy(),
        rtol=1e-9,
        atol=1e-12,
    )


def test_vjp_of_every_output_of_eigh_and_svd():
    rng = np.random.default_rng(150)
    x = E3 + 0.1 * A3
    out, pull = tg.vjp(lambda a: tuple(np.linalg.eigh(_nsym(a))), x)
    t_out, t_pull = torch.func.vjp(lambda t: tuple(T.eigh(_tsym(t))), _to_t(x))
    cw, cv = rng.standard_normal(3), rng.standard_normal((3, 3))
    # a cotangent proportional to V itself makes the pairing independent of the signs
    got = pull((cw, cv * np.asarray(out[1])))
    want = t_pull((_to_t(cw), _to_t(cv * t_out[1].numpy())))[0].numpy()
    _rel(got[0] if isinstance(got, tuple) else got, want, rtol=1e-9, atol=1e-12)
    out, pull = tg.vjp(lambda a: tuple(np.linalg.svd(a, full_matrices=False)), A43)
    t_out, t_pull = torch.func.vjp(lambda t: tuple(T.svd(t, full_matrices=False)), _to_t(A43))
    cu, cs, cvh = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((3, 3))
    got = pull((cu * np.asarray(out[0]), cs, cvh * np.asarray(out[2])))
    want = t_pull((_to_t(cu * t_out[0].numpy()), _to_t(cs), _to_t(cvh * t_out[2].numpy())))
    _rel(got[0] if isinstance(got, tuple) else got, want[0].numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "shape, b", [((3, 0), np.ones(3)), ((0, 3), np.ones(0)), ((3, 0), np.ones((3, 2)))], ids=str
)
def test_lstsq_of_an_empty_matrix_as_numpy(shape, b):
    a = np.zeros(shape)
    want = np.linalg.lstsq(a, b)
    for k in (0, 1, 3):
        value, grad = tg.value_and_grad(lambda x, k=k: np.sum(np.linalg.lstsq(x, b)[k]))(a)
        _rel(value, np.sum(want[k]))
        assert grad.shape == shape
    # the residuals are |b|^2 when there are no unknowns: gradient 2 b
    grad_b = tg.grad(lambda c: np.sum(np.linalg.lstsq(a, c)[1]))(b)
    _rel(grad_b, 2 * b if shape[1] == 0 and shape[0] > 0 else np.zeros_like(b))


# ---- nested derivatives of det at ill-conditioned matrices ---------------------------------------


def _graded_singular(n, seed):
    """A singular n x n matrix whose other singular values spread over 1e-3 .. 1e3."""
    q = np.linalg.qr(_u(n, n, seed=seed))[0]
    return (q * np.concatenate([[0.0], np.logspace(-3, 3, n - 1)])) @ q.T


@pytest.mark.parametrize("n", [6, 8])
def test_det_nested_derivative_where_the_polynomial_adjugate_loses_its_digits_raises(n):
    # was: the Hessian-vector product 121 % off (n = 8) or 3e-7 off (n = 6) silently, and the
    # first-order gradient of a create_graph backward (the polynomial's value) off by 1e4
    a = _graded_singular(n, seed=160)
    with pytest.raises(LinAlgError, match="det"):
        tg.hvp(np.linalg.det, (a,), (_u(n, n, seed=161),))
    x = tg.tensor(a, requires_grad=True)
    with pytest.raises(LinAlgError, match="det"):
        tg.autograd.grad(tg.linalg.det(x), [x], create_graph=True)
    # a single derivative stays exact (the SVD's adjugate)
    _rel(tg.grad(np.linalg.det)(a), _cofactor_t(a), rtol=1e-9, atol=1e-9)


def test_det_nested_derivative_at_a_mildly_graded_singular_matrix_is_accurate():
    a = _graded_singular(4, seed=162)
    v = _u(4, 4, seed=163)
    want = (_cofactor_t(a + 1e-5 * v) - _cofactor_t(a - 1e-5 * v)) / 2e-5
    _rel(tg.hvp(np.linalg.det, (a,), (v,)), want, rtol=1e-7, atol=1e-7)
    x = tg.tensor(a, requires_grad=True)
    (g,) = tg.autograd.grad(tg.linalg.det(x), [x], create_graph=True)
    _rel(g.detach().numpy(), _cofactor_t(a), rtol=1e-8, atol=1e-9)


def test_det_third_derivative_of_a_3x3_is_the_same_constant_at_singular_and_regular_matrices():
    # det of a 3x3 is a cubic: its third derivative is the Levi-Civita form, everywhere
    third = tg.jacfwd(tg.hessian(np.linalg.det))
    want = third(A_WELL)
    eps3 = np.zeros((3, 3, 3))
    eps3[0, 1, 2] = eps3[1, 2, 0] = eps3[2, 0, 1] = 1.0
    eps3[0, 2, 1] = eps3[2, 1, 0] = eps3[1, 0, 2] = -1.0
    levi = np.einsum("ace,bdf->abcdef", eps3, eps3)  # d^3 det / dA_ab dA_cd dA_ef
    _rel(want, levi, rtol=1e-9, atol=1e-9)
    for a in (EXACTLY_SINGULAR, RANK1_33, np.zeros((3, 3))):
        _rel(third(a), levi, rtol=1e-9, atol=1e-9)


# ---- sqrtm and solve_sylvester where the Sylvester operator is singular --------------------------


@pytest.mark.parametrize(
    "f, x, match",
    [
        (lambda a: tsl.sqrtm(a).sum(), np.diag([1.0, 0.0]), "sqrtm"),
        (lambda a: tsl.sqrtm(a).sum(), np.zeros((2, 2)), "sqrtm"),
        (lambda a: tsl.sqrtm(a).sum(), np.array([[0.0, 1.0], [0.0, 0.0]]), "sqrtm"),
        (lambda a: tsl.sqrtm(a).sum(), np.diag([2.0, 0.0, 3.0]), "sqrtm"),
        (
            lambda a: tsl.solve_sylvester(a, -a, np.ones((2, 2))).sum(),
            np.diag([1.0, 2.0]),
            "solve_sylvester",
        ),
    ],
    ids=["sqrtm diag(1, 0)", "sqrtm of 0", "sqrtm nilpotent", "sqrtm diag(2, 0, 3)", "sylvester"],
)
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_derivative_through_a_singular_sylvester_operator_raises(f, x, match, mode):
    # was: sqrtm's gradient at diag(1, 0) had 4.5e15 where the derivative is infinite, and
    # 2.5e291 everywhere at 0; solve_sylvester's was 0 (LAPACK's answers to singular systems)
    with pytest.raises(LinAlgError, match=match):
        if mode == "grad":
            tg.grad(f)(x)
        else:
            tg.jvp(f, (x,), (np.ones_like(x),))


def test_sqrtm_near_a_singular_matrix_has_the_large_true_derivative():
    # d sqrt(x) / dx = 1 / (2 sqrt(x)): 5e9 at 1e-20
    g = tg.grad(lambda a: tsl.sqrtm(a).sum())(np.diag([4.0, 1e-20]))
    _rel(g, [[0.25, 1 / 2.00000000001], [1 / 2.00000000001, 5e9]], rtol=1e-9)


def test_slogdet_refuses_only_the_singular_matrices_its_derivative_reaches():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    batch = np.stack([singular, 2.0 * np.eye(2)])
    # the second matrix alone: log det(2 I) has the gradient (2 I)^-T, the singular one 0
    g = tg.grad(lambda a: np.sum(np.linalg.slogdet(a)[1][1:]))(batch)
    np.testing.assert_allclose(g, [np.zeros((2, 2)), 0.5 * np.eye(2)], rtol=1e-15)
    h = tg.hessian(lambda a: np.sum(np.linalg.slogdet(a)[1][1:]))(batch)[1, :, :, 1]
    np.testing.assert_allclose(h, -0.25 * np.einsum("li,jk->ijkl", np.eye(2), np.eye(2)))
    tangent = np.zeros_like(batch)
    tangent[1] = 1.0
    np.testing.assert_allclose(
        tg.jvp(lambda a: np.linalg.slogdet(a)[1], (batch,), (tangent,))[1], [0.0, 1.0]
    )
    # the sign alone is piecewise constant: gradient 0, at the singular matrix too
    np.testing.assert_array_equal(tg.grad(lambda a: np.linalg.slogdet(a)[0] * 1.0)(singular), 0)
    with pytest.raises(LinAlgError, match="slogdet"):
        tg.grad(lambda a: np.sum(np.linalg.slogdet(a)[1]))(batch)
    with pytest.raises(LinAlgError, match="slogdet"):
        tg.jvp(lambda a: np.linalg.slogdet(a)[1], (batch,), (np.ones_like(batch),))
