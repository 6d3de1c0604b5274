"""``tg.linalg`` means what ``torch.linalg`` means: each function runs side by side with torch
(float64) on the same inputs; values and gradients (of a fixed random weighting of every
output) must agree, for single and batched inputs.  Every public name of ``tg.linalg`` is a
case, so a new one cannot slip in with another meaning."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def _spd(*batch, n=3):
    m = RNG.standard_normal((*batch, n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _nonsym(*batch, n=3):
    # a non-symmetric matrix: eigh / cholesky read one triangle of it for their value
    return _spd(*batch, n=n) + 0.3 * RNG.standard_normal((*batch, n, n))


SQ = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
BSQ = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
RECT = RNG.standard_normal((4, 3))
V3 = RNG.standard_normal(3)
BV3 = RNG.standard_normal((2, 3))
M32 = RNG.standard_normal((3, 2))
A3 = RNG.standard_normal((4, 3))
B3 = RNG.standard_normal((4, 3))

# name -> (call on the library's linalg namespace, inputs); outputs compared up to sign where
# a factorization's columns are defined up to sign (eigh / svd / qr vectors enter through
# sign-invariant expressions)
CASES = {
    "inv": (lambda L, a: L.inv(a), [SQ]),
    "inv batched": (lambda L, a: L.inv(a), [BSQ]),
    "det": (lambda L, a: L.det(a), [SQ]),
    "det batched": (lambda L, a: L.det(a), [BSQ]),
    "slogdet": (lambda L, a: L.slogdet(a).logabsdet, [SQ]),
    "solve matrix": (lambda L, a, b: L.solve(a, b), [SQ, M32]),
    "solve vector": (lambda L, a, b: L.solve(a, b), [SQ, V3]),
    "solve batch of vectors": (lambda L, a, b: L.solve(a, b), [BSQ, BV3]),
    "solve left=False": (lambda L, a, b: L.solve(a, b, left=False), [SQ, M32.T]),
    "cholesky": (lambda L, a: L.cholesky(a), [_spd()]),
    "cholesky upper": (lambda L, a: L.cholesky(a, upper=True), [_spd()]),
    "cholesky batched": (lambda L, a: L.cholesky(a), [_spd(2)]),
    "cholesky of a non-symmetric input": (lambda L, a: L.cholesky(a), [_nonsym()]),
    "eigh values": (lambda L, a: L.eigh(a).eigenvalues, [_spd()]),
    "eigh vectors": (lambda L, a: L.eigh(a).eigenvectors ** 2, [_spd()]),
    "eigh UPLO=U": (lambda L, a: L.eigh(a, UPLO="U").eigenvalues, [_nonsym()]),
    "eigh of a non-symmetric input": (lambda L, a: L.eigh(a).eigenvalues, [_nonsym()]),
    "eigvalsh": (lambda L, a: L.eigvalsh(a), [_spd(2)]),
    "eigvalsh UPLO=U": (lambda L, a: L.eigvalsh(a, UPLO="U"), [_nonsym()]),
    "svd values": (lambda L, a: L.svd(a, full_matrices=False).S, [RECT]),
    "svd vectors": (lambda L, a: L.svd(a, full_matrices=False).U ** 2, [RECT]),
    "svdvals": (lambda L, a: L.svdvals(a), [RECT]),
    "qr": (lambda L, a: abs(L.qr(a).R), [RECT]),
    "pinv": (lambda L, a: L.pinv(a), [RECT]),
    "matrix_power": (lambda L, a: L.matrix_power(a, 3), [SQ]),
    "matrix_power negative": (lambda L, a: L.matrix_power(a, -2), [SQ]),
    "multi_dot": (lambda L, a, b, c: L.multi_dot([a, b, c]), [RECT, SQ, M32]),
    "matmul": (lambda L, a, b: L.matmul(a, b), [BSQ, M32]),
    "norm": (lambda L, a: L.norm(a), [RECT]),
    "norm ord=2 matrix": (lambda L, a: L.norm(a, ord=2), [RECT]),
    "norm nuc": (lambda L, a: L.norm(a, ord="nuc"), [RECT]),
    "norm dim": (lambda L, a: L.norm(a, ord=3, dim=1, keepdim=True), [RECT]),
    "vector_norm": (lambda L, a: L.vector_norm(a), [RECT]),
    "vector_norm dim": (lambda L, a: L.vector_norm(a, ord=1.5, dim=0), [RECT]),
    "matrix_norm": (lambda L, a: L.matrix_norm(a), [BSQ]),
    "matrix_norm ord=1 dim": (lambda L, a: L.matrix_norm(a, ord=1, dim=(0, 2)), [BSQ]),
    "cross": (lambda L, a, b: L.cross(a, b), [A3, B3]),
    "cross dim": (lambda L, a, b: L.cross(a, b, dim=0), [A3.T, B3.T]),
    "vecdot": (lambda L, a, b: L.vecdot(a, b), [A3, B3]),
    "vecdot dim": (lambda L, a, b: L.vecdot(a, b, dim=0), [A3, B3]),
    "diagonal": (lambda L, a: L.diagonal(a, offset=1), [BSQ]),
    "diagonal dims": (lambda L, a: L.diagonal(a, dim1=0, dim2=2), [BSQ]),
    "solve_triangular": (lambda L, a, b: L.solve_triangular(a, b, upper=True), [SQ, M32]),
    "solve_triangular lower left=False": (
        lambda L, a, b: L.solve_triangular(a, b, upper=False, left=False),
        [SQ, M32.T],
    ),
    "matrix_exp": (lambda L, a: L.matrix_exp(0.3 * a), [BSQ]),
    "matrix_rank": (lambda L, a: a * L.matrix_rank(a), [RECT]),  # (an int64 rank)
    "cond": (lambda L, a: L.cond(a), [RECT]),
    "tensorinv": (lambda L, a: L.tensorinv(a.reshape(3, 3, 3, 3)), [np.kron(SQ, SQ)]),
    "tensorsolve": (lambda L, a, b: L.tensorsolve(a.reshape(3, 3, 9), b), [np.kron(SQ, SQ), SQ]),
}


def _run(lib, fn, arrays):
    if lib is torch:
        xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
        out = fn(torch.linalg, *xs)
    else:
        xs = [tg.tensor(a, requires_grad=True) for a in arrays]
        out = fn(tg.linalg, *xs)
    w = np.random.default_rng(3).standard_normal(tuple(out.shape))
    weight = torch.tensor(w) if lib is torch else tg.tensor(w)
    (out * weight).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("case", CASES)
def test_value_and_gradient_agree_with_torch(case):
    fn, arrays = CASES[case]
    want, want_grads = _run(torch, fn, arrays)
    got, grads = _run(tg, fn, arrays)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


def test_every_public_name_is_a_case():
    covered = {case.split()[0] for case in CASES} | {"LinAlgError"}
    assert set(tg.linalg.__all__) <= covered
    assert tg.linalg.LinAlgError is np.linalg.LinAlgError


def test_eigh_gradient_is_symmetric_where_tnp_puts_it_in_one_triangle():
    a = _spd()
    sym = tg.grad(lambda x: tg.linalg.eigvalsh(x)[-1])(a)
    tri = tg.grad(lambda x: tg.numpy.linalg.eigvalsh(x)[-1])(a)
    np.testing.assert_allclose(sym, sym.T, rtol=1e-14)
    np.testing.assert_allclose(np.tril(tri, -1), 2 * np.tril(sym, -1), rtol=1e-12)


def test_second_order_through_the_symmetrized_factorizations():
    a = _spd()

    def f(x):
        return tg.linalg.cholesky(x).sum() + tg.linalg.eigvalsh(x)[0]

    h = tg.hessian(f)(a)
    g0 = tg.grad(f)  # the Hessian against finite differences of the gradient
    eps = 1e-6
    for i, j in [(0, 0), (1, 0), (2, 1)]:
        # along a symmetric direction: the value reads one triangle, the gradient is
        # PyTorch's symmetric one, so only symmetric changes are comparable entry by entry
        d = np.zeros_like(a)
        d[i, j] = d[j, i] = eps
        fd = (g0(a + d) - g0(a - d)) / (2 * eps)
        hd = h[:, :, i, j] + (h[:, :, j, i] if i != j else 0.0)
        np.testing.assert_allclose(hd, fd, rtol=1e-5, atol=1e-7)


def test_refusals_name_the_argument():
    with pytest.raises(TypeError, match="atol"):
        tg.linalg.pinv(tg.tensor(RECT), atol=1e-3)
    with pytest.raises(ValueError, match="UPLO"):
        tg.linalg.eigh(tg.tensor(SQ), UPLO="X")
    with pytest.raises(ValueError, match="mode"):
        tg.linalg.qr(tg.tensor(RECT), mode="economic")
    with pytest.raises(ValueError, match="pair of axes"):
        tg.linalg.matrix_norm(tg.tensor(BSQ), dim=0)


def test_qr_mode_r_gives_r_and_an_empty_q_and_differentiates():
    # PyTorch's R of mode="r" cannot be differentiated; tapegrad's can (R's derivative needs
    # Q, which it computes): against the reduced mode's R
    a = tg.tensor(RECT, requires_grad=True)
    q, r = tg.linalg.qr(a, mode="r")
    assert q.shape == (0,)
    (r * r).sum().backward()
    b = tg.tensor(RECT, requires_grad=True)
    r2 = tg.linalg.qr(b).R
    (r2 * r2).sum().backward()
    np.testing.assert_allclose(r.numpy(), r2.numpy(), rtol=1e-14)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    want = torch.linalg.qr(torch.tensor(RECT), mode="r").R.numpy()
    np.testing.assert_allclose(np.abs(r.numpy()), np.abs(want), rtol=1e-12)


@pytest.mark.parametrize(
    "name, ord",
    [("norm", None), ("norm", "fro"), ("norm", 1), ("norm", 2), ("norm", "nuc")]
    + [("vector_norm", p) for p in (2, 1, 3, 0.5, float("inf"))]
    + [("matrix_norm", p) for p in ("fro", "nuc", 2, 1)],
)
def test_norms_at_zero_have_pytorchs_gradient(name, ord):
    # the 2-norm's slope is infinite at 0: PyTorch's gradient there is 0 (tnp's, NumPy's
    # derivative, is nan), and a matrix norm of a zero matrix gives its subgradient
    kw = {} if ord is None else {"ord": ord}
    xt = torch.zeros((2, 3), dtype=torch.float64, requires_grad=True)
    getattr(torch.linalg, name)(xt, **kw).backward()
    x = tg.zeros((2, 3), requires_grad=True)
    y = getattr(tg.linalg, name)(x, **kw)
    y.backward()
    assert y.item() == 0.0
    np.testing.assert_array_equal(np.abs(x.grad.numpy()), np.abs(xt.grad.numpy()))
