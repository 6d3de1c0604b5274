"""A correctness hunt over plain NumPy programs differentiated by tapegrad's transforms.

Each program is written as NumPy code (``np.*`` on the arguments) and compared with an
independent reference: PyTorch (``torch.func``, float64) where it has the same function, central
finite differences otherwise. The families cover less common keyword arguments (``where=``,
``initial=``, axis tuples, ``ord=``, ``mode=``), linear algebra, indexing and shapes, reductions
and statistics at ties and zeros, elementwise edges, and values that parametrise a function
(``constant_values``, ``end_values``). Disagreements are kept as strict xfails that assert the
correct value.
"""

import numpy as np
import pytest
from finite_differences import central_gradient

import tapegrad as tg
import tapegrad.numpy as tnp

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(20240611)
EPS = 1e-6


def _fd(f, x, eps=EPS):
    """Central differences of scalar ``f`` (plain NumPy) at ``x``."""
    return central_gradient(f, x, eps)


def _weights(f, x, seed):
    out = np.asarray(f(np.asarray(x, dtype=float)), dtype=float)
    return np.random.default_rng(seed).standard_normal(out.shape)


def check_value_and_grad(f, x, rtol=1e-6, atol=1e-8, seed=0):
    """tapegrad's value and gradient of ``sum(f(x) * w)`` against NumPy and central differences."""
    x = np.asarray(x, dtype=float)
    w = _weights(f, x, seed)

    def s(a):
        return (f(a) * w).sum()

    def s_np(a):
        return float((np.asarray(f(a), dtype=float) * w).sum())

    value, grad = tg.value_and_grad(s)(x)
    np.testing.assert_allclose(value, s_np(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, _fd(s_np, x), rtol=rtol, atol=atol)


def check_forward_and_second_order(f, x, seed=0):
    """tg.jvp against a central difference of f, tg.hvp and tg.hessian against differences of
    tg.grad (so the second order is checked against tapegrad's own, already checked, gradient)."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    w = _weights(f, x, seed)
    v = rng.standard_normal(x.shape)
    out, tangent = tg.jvp(f, (x,), (v,))
    np.testing.assert_allclose(out, f(x), rtol=1e-10, atol=1e-12)
    want = (np.asarray(f(x + EPS * v)) - np.asarray(f(x - EPS * v))) / (2 * EPS)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-7)

    def s(a):
        return (f(a) * w).sum()

    g = tg.grad(s)
    hv_fd = (g(x + 1e-5 * v) - g(x - 1e-5 * v)) / 2e-5
    hv = tg.hvp(s, (x,), (v,))
    hv = hv[0] if isinstance(hv, tuple) else hv
    np.testing.assert_allclose(hv, hv_fd, rtol=1e-5, atol=1e-6)
    h = tg.hessian(s)(x).reshape(x.size, x.size)
    np.testing.assert_allclose(h @ v.ravel(), hv_fd.ravel(), rtol=1e-5, atol=1e-6)


def _u(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


X34 = _u(3, 4, seed=1)
X45 = _u(4, 5, seed=2)
V6 = _u(6, seed=3)
A33 = _u(3, 3, seed=4)
A43 = _u(4, 3, seed=5)
SPD = A33 @ A33.T + 3 * np.eye(3)
A_NEG = A33 * np.where(np.linalg.det(A33) > 0, -1.0, 1.0)  # a negative determinant
MASK4 = np.array([True, False, True, True])
NAN_AT = 0.5  # entries above this become NaN in the nan-function programs


def _nan(a):
    return np.where(a > NAN_AT, np.nan, a)


# ---- reductions: where=, initial=, axis tuples, empty axis tuples, nan-functions -----------------
REDUCTIONS = {
    "sum where": lambda a: np.sum(a, where=MASK4),
    "sum where axis": lambda a: np.sum(a, axis=0, where=MASK4),
    "sum initial": lambda a: np.sum(a, initial=2.5),
    "max initial axis": lambda a: np.max(a, initial=0.3, axis=1),
    "max where initial": lambda a: np.max(a, where=MASK4, initial=-10.0, axis=1),
    "min where column mask": lambda a: np.min(
        a, where=np.array([[True], [False], [True]]), initial=10.0, axis=0
    ),
    "prod where": lambda a: np.prod(a, where=MASK4, axis=1),
    "prod initial": lambda a: np.prod(a, initial=2.0, axis=0),
    "mean where": lambda a: np.mean(a, where=MASK4, axis=1),
    "mean where all": lambda a: np.mean(a, where=MASK4),
    "sum axis tuple": lambda a: np.sum(a[None], axis=(0, -1)),
    "mean axis tuple keepdims": lambda a: np.mean(a.reshape(3, 2, 2), axis=(-1, 0), keepdims=True),
    "var axis tuple ddof": lambda a: np.var(a.reshape(3, 2, 2), axis=(-1, 0), ddof=2),
    "std axis tuple keepdims": lambda a: np.std(a.reshape(3, 2, 2), axis=(0, 2), keepdims=True),
    "var correction": lambda a: np.var(a, axis=1, correction=1),
    "std correction float": lambda a: np.std(a, correction=1.5),
    "var ddof float": lambda a: np.var(a, axis=1, ddof=0.5),
    "max axis tuple": lambda a: np.max(a.reshape(3, 2, 2), axis=(0, 2)),
    "ptp axis tuple": lambda a: np.ptp(a.reshape(3, 2, 2), axis=(0, 2)),
    "median axis tuple": lambda a: np.median(a.reshape(3, 2, 2), axis=(0, 2)),
    "quantile axis tuple": lambda a: np.quantile(a.reshape(3, 2, 2), 0.3, axis=(0, 2)),
    "sum axis ()": lambda a: np.sum(a, axis=()),
    "mean axis ()": lambda a: np.mean(a, axis=()),
    "var axis () plus a": lambda a: np.var(a, axis=()) + a,
    "max axis ()": lambda a: np.max(a, axis=()),
    "prod axis ()": lambda a: np.prod(a, axis=()),
    "median axis ()": lambda a: np.median(a, axis=()),
    "add.reduce axis ()": lambda a: np.add.reduce(a, axis=()),
    "sum of empty plus sum": lambda a: np.sum(a[:, :0]) + a.sum(),
    "prod of empty rows": lambda a: np.prod(a[:, :0], axis=1) * a[:, 0],
    "sum dtype float64": lambda a: np.sum(a, dtype=np.float64),
    "cumsum dtype float64": lambda a: np.cumsum(a, axis=1, dtype=np.float64),
    "nansum": lambda a: np.nansum(_nan(a)),
    "nanmean axis": lambda a: np.nanmean(_nan(a), axis=1),
    "nanmax axis": lambda a: np.nanmax(_nan(a), axis=0),
    "nanmin axis": lambda a: np.nanmin(_nan(a), axis=1),
    "nanvar ddof": lambda a: np.nanvar(_nan(a), axis=1, ddof=1),
    "nanstd": lambda a: np.nanstd(_nan(a)),
    "nanprod": lambda a: np.nanprod(_nan(a), axis=1),
    "nanmedian": lambda a: np.nanmedian(_nan(a), axis=1),
    "nanquantile": lambda a: np.nanquantile(_nan(a), [0.2, 0.9], axis=1),
    "nancumsum": lambda a: np.nancumsum(_nan(a), axis=1),
    "nancumprod": lambda a: np.nancumprod(_nan(a), axis=1),
    "average weights axis tuple": lambda a: np.average(
        a.reshape(3, 2, 2), axis=(0, 2), weights=np.arange(1.0, 13).reshape(3, 2, 2)
    ),
    "average weights 1-d": lambda a: np.average(a, axis=0, weights=np.array([1.0, 2, 3])),
    "average traced weights": lambda a: np.average(a[0], weights=a[1] ** 2 + 1),
    "average returned sum of weights": lambda a: np.average(a, axis=1, weights=a**2, returned=True)[
        1
    ],
    "cov": np.cov,
    "cov rowvar False": lambda a: np.cov(a, rowvar=False),
    "cov bias": lambda a: np.cov(a, bias=True),
    "cov ddof 0": lambda a: np.cov(a, ddof=0),
    "cov x y": lambda a: np.cov(a[0], a[1]),
    "corrcoef": np.corrcoef,
    "corrcoef x y": lambda a: np.corrcoef(a[0], a[2]),
    "corrcoef rowvar False": lambda a: np.corrcoef(a, rowvar=False),
    "add.accumulate": lambda a: np.add.accumulate(a, axis=1),
    "multiply.accumulate": lambda a: np.multiply.accumulate(a, axis=0),
    "cumulative_sum include_initial": lambda a: np.cumulative_sum(a, axis=1, include_initial=True),
    "cumulative_prod include_initial": lambda a: np.cumulative_prod(
        a, axis=0, include_initial=True
    ),
    "maximum.reduce axis": lambda a: np.maximum.reduce(a, axis=1),
    "minimum.reduce keepdims": lambda a: np.minimum.reduce(a, axis=0, keepdims=True),
    "multiply.outer": lambda a: np.multiply.outer(a[0, :2], a[1]),
    "subtract.outer": lambda a: np.subtract.outer(a[0, :2], a[1]),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_and_statistics(name):
    check_value_and_grad(REDUCTIONS[name], X34)


# ---- linear algebra --------------------------------------------------------------------------
B32 = np.arange(6.0).reshape(3, 2) - 2.0
LINALG = {
    "det negative": (np.linalg.det, A_NEG),
    "slogdet negative": (lambda a: np.linalg.slogdet(a)[1], A_NEG),
    "slogdet sign times logabsdet": (
        lambda a: np.linalg.slogdet(a)[0] * np.linalg.slogdet(a)[1],
        A_NEG,
    ),
    "slogdet batched mixed signs": (
        lambda a: np.linalg.slogdet(a.reshape(2, 2, 2) * np.array([1.0, -1.0])[:, None, None])[1],
        _u(8, seed=6),
    ),
    "det batched": (lambda a: np.linalg.det(a.reshape(2, 2, 2)), _u(8, seed=7)),
    "inv": (np.linalg.inv, A33),
    "inv batched": (lambda a: np.linalg.inv(a.reshape(2, 2, 2)), _u(8, seed=8)),
    "solve 1-d b, in A": (lambda a: np.linalg.solve(a, np.arange(3.0)), A33),
    "solve 1-d b, in b": (lambda b: np.linalg.solve(A33, b), np.arange(3.0) - 1),
    "solve 2-d b, in A": (lambda a: np.linalg.solve(a, B32), A33),
    "solve 2-d b, in b": (lambda b: np.linalg.solve(A33, b), B32),
    "solve batched A, broadcast b": (
        lambda a: np.linalg.solve(a.reshape(2, 3, 3), np.ones((3, 1))),
        _u(18, seed=9),
    ),
    "solve broadcast A, batched b": (lambda b: np.linalg.solve(A33, b), _u(2, 3, 2, seed=10)),
    "lstsq x in A": (lambda a: np.linalg.lstsq(a, np.arange(4.0), rcond=None)[0], A43),
    "lstsq x in b": (lambda b: np.linalg.lstsq(A43, b, rcond=None)[0], np.arange(4.0)),
    "lstsq 2-d b": (lambda b: np.linalg.lstsq(A43, b, rcond=None)[0], _u(4, 2, seed=11)),
    "lstsq residuals": (lambda a: np.linalg.lstsq(a, np.arange(4.0), rcond=None)[1], A43),
    "lstsq singular values": (lambda a: np.linalg.lstsq(a, np.arange(4.0), rcond=None)[3], A43),
    "lstsq underdetermined": (lambda a: np.linalg.lstsq(a, np.arange(3.0), rcond=None)[0], A43.T),
    "pinv tall": (np.linalg.pinv, A43),
    "pinv wide": (np.linalg.pinv, A43.T),
    "pinv batched": (lambda a: np.linalg.pinv(a.reshape(2, 3, 2)), _u(12, seed=12)),
    "matrix_power batched -2": (
        lambda a: np.linalg.matrix_power(a.reshape(2, 2, 2), -2),
        _u(8, seed=13),
    ),
    "eigh values UPLO=U of a non-symmetric input": (
        lambda a: np.linalg.eigh(a, UPLO="U")[0],
        A33,
    ),
    "eigh values UPLO=L of a non-symmetric input": (lambda a: np.linalg.eigh(a)[0], A33),
    "eigh vectors squared UPLO=U": (lambda a: np.linalg.eigh(a, UPLO="U")[1] ** 2, A33),
    "eigvalsh UPLO=U": (lambda a: np.linalg.eigvalsh(a, UPLO="U"), A33),
    "svd compute_uv False": (lambda a: np.linalg.svd(a, compute_uv=False), A43),
    "svd |U| reduced": (lambda a: np.abs(np.linalg.svd(a, full_matrices=False)[0]), A43),
    "svd |Vh| full": (lambda a: np.abs(np.linalg.svd(a)[2]), A43),
    "svd first columns of full U": (lambda a: np.abs(np.linalg.svd(a)[0][:, :3]), A43),
    "svd reconstruction": (
        lambda a: (lambda u, s, vh: (u[:, :3] * s) @ vh)(*np.linalg.svd(a)),
        A43,
    ),
    "svd batched values": (
        lambda a: np.linalg.svd(a.reshape(2, 3, 2), compute_uv=False),
        _u(12, seed=14),
    ),
    "qr Q tall": (lambda a: np.linalg.qr(a)[0], A43),
    "qr R tall": (lambda a: np.linalg.qr(a)[1], A43),
    "qr Q wide": (lambda a: np.linalg.qr(a)[0], A43.T),
    "qr R wide": (lambda a: np.linalg.qr(a)[1], A43.T),
    "qr mode r": (lambda a: np.linalg.qr(a, mode="r"), A43),
    "qr batched R": (lambda a: np.linalg.qr(a.reshape(2, 3, 2)).R, _u(12, seed=15)),
    "cholesky": (np.linalg.cholesky, SPD),
    "cholesky upper": (lambda a: np.linalg.cholesky(a, upper=True), SPD),
    "cholesky reads the lower triangle": (
        np.linalg.cholesky,
        SPD + 0.3 * np.triu(np.ones((3, 3)), 1),
    ),
    "multi_dot": (lambda a: np.linalg.multi_dot([a, a.T, a[:, :1]]), A43),
    "multi_dot 1-d ends": (lambda a: np.linalg.multi_dot([a[:, 0], a, a.T, a[:, 1]]), A43),
    "vector_norm ord 3 axis tuple": (lambda a: np.linalg.vector_norm(a, ord=3, axis=(0, 1)), A43),
    "vector_norm -inf": (lambda a: np.linalg.vector_norm(a, ord=-np.inf), A43),
    "linalg.diagonal offset": (lambda a: np.linalg.diagonal(a.reshape(1, 4, 3), offset=1), A43),
    "linalg.trace offset": (lambda a: np.linalg.trace(a.reshape(1, 4, 3), offset=-1), A43),
    "linalg.vecdot axis": (lambda a: np.linalg.vecdot(_u(2, 4, 3, seed=16), a, axis=-2), A43),
    "linalg.outer": (lambda a: np.linalg.outer(a[0], a[1]), A43),
    "linalg.tensordot": (lambda a: np.linalg.tensordot(a, a.T, axes=1), A43),
}
for _p in (-3, -2, -1, 0, 1, 2, 3, 5):
    LINALG[f"matrix_power {_p}"] = (lambda a, p=_p: np.linalg.matrix_power(a, p), A33)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_programs(name):
    f, x = LINALG[name]
    check_value_and_grad(f, x, rtol=1e-6, atol=1e-7)


VECTOR_ORDS = [None, 0, 1, 2, 3, 0.5, 1.5, -0.5, -1, -2, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _torch_norm(t, ord_, matrix):
    if matrix:
        return torch.linalg.matrix_norm(t, ord="fro" if ord_ is None else ord_, dim=(-2, -1))
    return torch.linalg.vector_norm(t, ord=2 if ord_ is None else ord_)


@pytest.mark.parametrize("ord_", VECTOR_ORDS, ids=str)
def test_vector_norm_every_ord_against_torch(ord_):
    x = V6
    want_v = _torch_norm(torch.tensor(x), ord_, False).item()
    want_g = torch.func.grad(lambda t: _torch_norm(t, ord_, False))(torch.tensor(x)).numpy()
    v, g = tg.value_and_grad(lambda a: np.linalg.norm(a, ord=ord_))(x)
    np.testing.assert_allclose(v, want_v, rtol=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord_", MATRIX_ORDS, ids=str)
def test_matrix_norm_every_ord_against_torch(ord_, keepdims):
    x = X34.reshape(2, 2, 3)  # batched, reduced over axis=(2, 0) as NumPy orders them
    xt = torch.tensor(x)

    def want(t):
        return _torch_norm(t.permute(1, 2, 0), ord_, True)

    want_v = want(xt).numpy()
    want_g = torch.func.grad(lambda t: (want(t) * torch.arange(1.0, 3.0)).sum())(xt).numpy()

    def f(a):
        out = np.linalg.norm(a, ord=ord_, axis=(2, 0), keepdims=keepdims)
        return out.reshape(-1) * np.arange(1.0, 3.0)

    v, g = tg.value_and_grad(lambda a: f(a).sum())(x)
    np.testing.assert_allclose(v, (want_v * np.arange(1.0, 3.0)).sum(), rtol=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-9, atol=1e-12)


def test_linalg_against_torch_func():
    def both(f_np, f_t, x):
        v, g = tg.value_and_grad(f_np)(x)
        want_g = torch.func.grad(f_t)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(v, f_t(torch.tensor(x)).item(), rtol=1e-12)
        np.testing.assert_allclose(g, want_g, rtol=1e-9, atol=1e-12)

    w3 = np.arange(1.0, 10.0).reshape(3, 3)
    wt = torch.tensor(w3)
    w34 = np.arange(12.0).reshape(3, 4)
    both(np.linalg.det, torch.linalg.det, A_NEG)
    both(lambda a: np.linalg.slogdet(a)[1], lambda t: torch.linalg.slogdet(t)[1], A_NEG)
    both(lambda a: (np.linalg.inv(a) * w3).sum(), lambda t: (torch.linalg.inv(t) * wt).sum(), A33)
    both(
        lambda a: (np.linalg.pinv(a) * w34).sum(),
        lambda t: (torch.linalg.pinv(t) * torch.tensor(w34)).sum(),
        A43,
    )
    # NumPy's cholesky reads the lower triangle, so its gradient is lower triangular; PyTorch
    # returns the symmetric gradient: the same derivative along symmetric directions
    g = tg.grad(lambda a: (np.linalg.cholesky(a) * w3).sum())(SPD)
    want = torch.func.grad(lambda t: (torch.linalg.cholesky(t) * wt).sum())(torch.tensor(SPD))
    np.testing.assert_array_equal(g, np.tril(g))
    np.testing.assert_allclose((g + g.T) / 2, want.numpy(), rtol=1e-9, atol=1e-12)
    both(
        lambda a: np.linalg.eigvalsh((a + a.T) / 2) @ np.arange(1.0, 4.0),
        lambda t: torch.linalg.eigvalsh((t + t.T) / 2) @ torch.arange(1.0, 4.0, dtype=t.dtype),
        A33,
    )
    both(
        lambda a: np.linalg.svd(a, compute_uv=False) @ np.arange(1.0, 4.0),
        lambda t: torch.linalg.svdvals(t) @ torch.arange(1.0, 4.0, dtype=t.dtype),
        A43,
    )
    both(
        lambda a: (np.linalg.matrix_power(a, -3) * w3).sum(),
        lambda t: (torch.linalg.matrix_power(t, -3) * wt).sum(),
        A33,
    )
    both(
        lambda a: (np.cov(a) * w3).sum(),
        lambda t: (torch.cov(t) * wt).sum(),
        X34,
    )
    both(
        lambda a: (np.corrcoef(a) * w3).sum(),
        lambda t: (torch.corrcoef(t) * wt).sum(),
        X34,
    )


LINALG_SECOND_ORDER = {
    "det": (np.linalg.det, A_NEG),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], A_NEG),
    "inv": (np.linalg.inv, A33),
    "solve A and b from the same input": (lambda a: np.linalg.solve(a, a.T), A33),
    "lstsq": (lambda a: np.linalg.lstsq(a, np.arange(4.0), rcond=None)[0], A43),
    "pinv": (np.linalg.pinv, A43),
    "matrix_power -2": (lambda a: np.linalg.matrix_power(a, -2), A33),
    "eigh vectors squared": (lambda a: np.linalg.eigh(a, UPLO="U")[1] ** 2, A33),
    "svd values": (lambda a: np.linalg.svd(a, compute_uv=False), A43),
    "svd |U|": (lambda a: np.abs(np.linalg.svd(a, full_matrices=False)[0]), A43),
    "qr wide R": (lambda a: np.linalg.qr(a)[1], A43.T),
    "cholesky upper": (lambda a: np.linalg.cholesky(a, upper=True), SPD),
    "norm nuc": (lambda a: np.linalg.norm(a, "nuc"), A43),
    "norm -2": (lambda a: np.linalg.norm(a, -2), A43),
    "norm inf": (lambda a: np.linalg.norm(a, np.inf), A43),
    "vector norm 0.5": (lambda a: np.linalg.norm(a, 0.5), A43[0]),
    "einsum ii,jj->ij": (lambda a: np.einsum("ii,jj->ij", a, a), A33),
    "tensordot two axes": (lambda a: np.tensordot(a, a, axes=([0, 1], [1, 0])), A33),
}


@pytest.mark.parametrize("name", sorted(LINALG_SECOND_ORDER))
def test_linalg_forward_mode_and_second_order(name):
    f, x = LINALG_SECOND_ORDER[name]
    check_forward_and_second_order(f, x)


# ---- products of arrays: einsum, tensordot, kron, cross, trace, diagonal ---------------------
B34 = _u(3, 4, seed=17)
C234 = _u(2, 3, 4, seed=18)
CONTRACTIONS = {
    "einsum ii": lambda a: np.einsum("ii", a),
    "einsum ii->i": lambda a: np.einsum("ii->i", a),
    "einsum iij->ij": lambda a: np.einsum("iij->ij", np.stack([a, a * 2, a * 3])),
    "einsum iii->i": lambda a: np.einsum("iii->i", a[:, :, None] * a[None]),
    "einsum implicit output": lambda a: np.einsum("ij,jk", a, B34),
    "einsum implicit output reorders": lambda a: np.einsum("ba,cb", a, B34.T),
    "einsum ellipsis": lambda a: np.einsum("...ij,...jk->...ik", C234.transpose(0, 2, 1), a),
    "einsum ellipsis implicit": lambda a: np.einsum("...i,i", C234[..., :3], a[0]),
    "einsum same operand thrice": lambda a: np.einsum("ij,jk,ki->", a, a, a),
    "einsum ii,jj->ij": lambda a: np.einsum("ii,jj->ij", a, a),
    "einsum sublists": lambda a: np.einsum(a, [0, 1], a, [1, 2], [0, 2]),
    "einsum optimize": lambda a: np.einsum("ij,jk,kl->il", a, a, a, optimize=True),
    "einsum size-1 broadcast": lambda a: np.einsum("ij,ij->i", a[:, :1], a),
    "einsum 0-d operand": lambda a: np.einsum(",ij->ij", a[0, 0], a),
    "tensordot 0": lambda a: np.tensordot(a, a, axes=0),
    "tensordot 1": lambda a: np.tensordot(a, B34, axes=1),
    "tensordot 2": lambda a: np.tensordot(a, a, axes=2),
    "tensordot lists": lambda a: np.tensordot(a, a, axes=([1], [0])),
    "tensordot two pairs crossed": lambda a: np.tensordot(a, a, axes=((1, 0), (0, 1))),
    "tensordot negative axis": lambda a: np.tensordot(a, a, axes=([-1], [0])),
    "tensordot 3-d": lambda a: np.tensordot(C234, a, axes=([1], [0])),
    "kron": lambda a: np.kron(a, a[:2, :1]),
    "kron 1-d by 2-d": lambda a: np.kron(a[0], a),
    "kron 3-d": lambda a: np.kron(a[None], a[:, :2]),
    "outer of matrices": lambda a: np.outer(a, a[:2, :2]),
    "inner 2-d": lambda a: np.inner(a, B34.T[:2]),
    "inner 0-d": lambda a: np.inner(a[0, 0], a),
    "cross 3": lambda a: np.cross(a[0], a[1]),
    "cross batched": lambda a: np.cross(a, a[::-1]),
    "cross 2-d vectors": lambda a: np.cross(a[0, :2], a[1, :2]),
    "cross 2 with 3": lambda a: np.cross(a[0, :2], a[1]),
    "cross axis 0": lambda a: np.cross(a, a**2, axis=0),
    "cross axisa axisb axisc": lambda a: np.cross(a, a.T**2, axisa=0, axisb=1, axisc=0),
    "trace axes": lambda a: np.trace(C234 * a[:2, :1, None], axis1=2, axis2=0),
    "trace axes offset": lambda a: np.trace(C234 * a[:2, :1, None], offset=1, axis1=2, axis2=0),
    "diagonal offset": lambda a: np.diagonal(np.hstack([a, a]), offset=-1),
    "diagonal offset axes": lambda a: np.diagonal(
        C234 * a[:2, :1, None], offset=-1, axis1=2, axis2=1
    ),
    "diag k": lambda a: np.diag(a, k=2),
    "diag of a vector k": lambda a: np.diag(a[0], k=-1),
    "diagflat k": lambda a: np.diagflat(a[:2], k=1),
    "vdot": lambda a: np.vdot(a, a.T),
    "matmul 1-d @ 3-d": lambda a: np.matmul(a[0], C234),
    "matmul 3-d @ 1-d": lambda a: np.matmul(C234.transpose(0, 2, 1), a[0]),
    "dot 1-d, 3-d": lambda a: np.dot(a[0], C234),
    "dot 3-d, 2-d": lambda a: np.dot(C234.transpose(0, 2, 1), a),
}
for _off in (-2, -1, 0, 1, 2, 3):
    CONTRACTIONS[f"trace offset {_off}"] = lambda a, o=_off: np.trace(
        np.hstack([a, a[:, :1]]), offset=o
    )


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_contractions(name):
    check_value_and_grad(CONTRACTIONS[name], A33)


# ---- indexing and shapes ----------------------------------------------------------------------
INDEXING = {
    "fancy repeated rows accumulate": lambda a: a[[0, 0, 2, 0]],
    "fancy repeated pairs": lambda a: a[[0, 0, 1], [2, 2, 2]],
    "fancy negative": lambda a: a[[-1, -1, 0], :],
    "fancy after slice": lambda a: a[1:, [3, 3, 0]],
    "fancy broadcast index arrays": lambda a: a[np.array([[0], [0]]), np.array([1, 1, 1])],
    "fancy non-adjacent advanced indices": lambda a: a.reshape(2, 2, 5)[[0, 0], :, [1, 1]],
    "fancy with None and Ellipsis": lambda a: a[None, [1, 1], ..., None],
    "boolean mask from values": lambda a: a[a > 0],
    "boolean row mask": lambda a: a[np.array([True, False, True, True])],
    "boolean row mask and int": lambda a: a[np.array([True, False, True, True]), 2],
    "0-d boolean index": lambda a: a[True],
    "negative steps": lambda a: a[::-2, 3:0:-1],
    "take repeated flat": lambda a: np.take(a, [0, 0, 7, -1]),
    "take axis 2-d indices": lambda a: np.take(a, [[1, 1], [4, 0]], axis=1),
    "take mode wrap": lambda a: np.take(a, [5, 6, -7], axis=1, mode="wrap"),
    "take mode clip": lambda a: np.take(a, [5, 6, -7], axis=1, mode="clip"),
    "take_along_axis repeated": lambda a: np.take_along_axis(a, np.array([[0, 0, 1]] * 4), axis=1),
    "take_along_axis broadcast": lambda a: np.take_along_axis(
        a, np.array([[0, -1, 0, 0, 3]]), axis=0
    ),
    "take_along_axis argsort": lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1),
    "take_along_axis axis None": lambda a: np.take_along_axis(a, np.array([3, 3, 1]), axis=None),
    "flip all": np.flip,
    "flip axis tuple": lambda a: np.flip(a, axis=(0, -1)),
    "roll tuple": lambda a: np.roll(a, (1, -2), axis=(0, 1)),
    "roll the same axis twice": lambda a: np.roll(a, (1, 2), axis=(1, 1)),
    "roll flat": lambda a: np.roll(a, 7),
    "roll more than the length": lambda a: np.roll(a, -13, axis=1),
    "moveaxis lists": lambda a: np.moveaxis(a.reshape(2, 2, 5), [0, 1], [-1, 0]),
    "swapaxes negative": lambda a: np.swapaxes(a.reshape(2, 2, 5), 0, -1),
    "rollaxis": lambda a: np.rollaxis(a.reshape(2, 2, 5), 2, 1),
    "tile 3-d reps": lambda a: np.tile(a, (2, 1, 3)),
    "repeat with array repeats": lambda a: np.repeat(a, [1, 0, 3, 2], axis=0),
    "repeat flat": lambda a: np.repeat(a, 2),
    "array_split uneven piece": lambda a: np.array_split(a, 3, axis=1)[1],
    "array_split uneven weighted": lambda a: np.concatenate(
        [p * (i + 1) for i, p in enumerate(np.array_split(a, 3, axis=1))], axis=1
    ),
    "split repeated points": lambda a: np.split(a, [1, 1, 3], axis=0)[2],
    "split point beyond the end": lambda a: np.split(a, [2, 9], axis=1)[1],
    "fftshift": np.fft.fftshift,
    "fftshift axes": lambda a: np.fft.fftshift(a, axes=1),
    "ifftshift axes": lambda a: np.fft.ifftshift(a, axes=(0,)),
    "meshgrid xy": lambda a: np.stack(np.meshgrid(a[0], a[1, :3])) * np.arange(2.0)[:, None, None],
    "meshgrid ij product": lambda a: np.multiply(*np.meshgrid(a[0], a[1, :3], indexing="ij")),
    "meshgrid sparse": lambda a: sum(np.meshgrid(a[0], a[1, :3], sparse=True)),
    "broadcast_to": lambda a: np.broadcast_to(a[:, :1], (3, 4, 6)),
    "broadcast_arrays product": lambda a: np.multiply(*np.broadcast_arrays(a[:, :1], a[0])),
    "append axis": lambda a: np.append(a, a[:1], axis=0),
    "append flat": lambda a: np.append(a, 3.0),
    "insert row": lambda a: np.insert(a, 2, a[0], axis=0),
    "insert repeated positions": lambda a: np.insert(a, [1, 1, 4], [7.0, 8, 9], axis=1),
    "insert traced column values": lambda a: np.insert(a, [0, 2], a[:, :1], axis=1),
    "delete repeated": lambda a: np.delete(a, [0, 0, 3], axis=1),
    "delete slice": lambda a: np.delete(a, slice(0, None, 2), axis=0),
    "delete boolean": lambda a: np.delete(a, np.array([True, False, False, True, True]), axis=1),
    "compress": lambda a: np.compress([True, False, True], a, axis=1),
    "extract": lambda a: np.extract(a > 0, a * 2),
    "choose": lambda a: np.choose(np.array([0, 1, 0, 1, 1]), [a[0], a[1]]),
    "select": lambda a: np.select([a < 0, a > 1], [a**2, a * 3], default=a),
    "piecewise": lambda a: np.piecewise(a, [a < 0, a >= 0], [lambda t: t**2, np.sin]),
    "resize": lambda a: np.resize(a, (3, 9)),
    "rot90 k=-1 axes reversed": lambda a: np.rot90(a, k=-1, axes=(1, 0)),
    "pad constant pairs": lambda a: np.pad(
        a, ((1, 2), (0, 1)), constant_values=((2.0, 3.0), (4.0, 5.0))
    ),
    "pad reflect wider than the axis": lambda a: np.pad(a[0], 11, mode="reflect"),
    "pad wrap wider than the axis": lambda a: np.pad(a[0], 11, mode="wrap"),
    "pad linear_ramp end_values constants": lambda a: np.pad(
        a, 2, mode="linear_ramp", end_values=(1.0, -2.0)
    ),
    "concatenate axis None": lambda a: np.concatenate([a, a[:1]], axis=None),
    "stack axis -2": lambda a: np.stack([a, a**2, a**3], axis=-2),
    "transpose negative axes": lambda a: np.transpose(a.reshape(1, 4, 5), (-1, 0, -2)),
    "expand_dims tuple": lambda a: np.expand_dims(a, (0, -1, 2)),
    "squeeze tuple": lambda a: np.squeeze(a.reshape(1, 4, 1, 5), axis=(0, 2)),
    "reshape order F": lambda a: np.reshape(a, (5, -1), order="F"),
    "ravel order F": lambda a: np.ravel(a, order="F"),
    "flatten F method": lambda a: a.flatten("F"),
    "flat indexing": lambda a: a.T.flat[[0, 1, 2]],
}
for _m in (
    "edge",
    "reflect",
    "symmetric",
    "wrap",
    "linear_ramp",
    "maximum",
    "minimum",
    "mean",
    "median",
):
    INDEXING[f"pad mode {_m}"] = lambda a, m=_m: np.pad(a, ((2, 3), (1, 4)), mode=m)


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_and_shapes(name):
    check_value_and_grad(INDEXING[name], X45)


def _setitem_programs():
    def repeated_fancy_add(a):
        b = a * 1.0
        b[[0, 0]] += a[1]  # NumPy adds once (buffered): the last write wins
        return b

    def repeated_fancy_assign(a):
        b = a.copy()
        b[[0, 0, 2]] = a[[1, 2, 0]] ** 2
        return b

    def mask_multiply(a):
        b = a * 1.0
        b[b > 0] *= b[b > 0]
        return b

    def negative_step_assign(a):
        b = a * 1.0
        b[:, ::-2] = a[:, :2] * 3
        return b

    def view_written_then_read(a):
        b = a * 1.0
        v = b[1:]
        v *= 2
        v[0, 0] = a[0, 0] ** 3
        return b + v.sum()

    def transpose_view_write(a):
        b = a * 1.0
        b.T[0] = a[:, 2]
        return b

    def ravel_view_write(a):
        b = a * 1.0
        b.ravel()[3] = 7.0 * a[0, 0]
        return b

    def overlapping_shift(a):
        b = a * 1.0
        b[1:] = b[:-1]
        return b

    def overlapping_add(a):
        b = a * 1.0
        b[:, 1:] += b[:, :-1]
        return b

    def broadcast_index_assign(a):
        b = a * 1.0
        b[np.array([[0], [2]]), np.array([1, 1, 3])] = a[0, :3] * 2
        return b

    def divide_row_by_its_element(a):
        b = a * 1.0
        b[1] /= b[1, 0]
        return b

    return {
        f.__name__: f
        for f in (
            repeated_fancy_add,
            repeated_fancy_assign,
            mask_multiply,
            negative_step_assign,
            view_written_then_read,
            transpose_view_write,
            ravel_view_write,
            overlapping_shift,
            overlapping_add,
            broadcast_index_assign,
            divide_row_by_its_element,
        )
    }


SETITEM = _setitem_programs()


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_in_place_numpy_code_on_copies(name):
    check_value_and_grad(SETITEM[name], X34)


# ---- 1-d signal and interpolation functions, with their forward mode and second order ----------
K3 = _u(3, seed=19)
XP = np.array([0.0, 1.0, 2.5, 4.0])
XS = np.array([-0.5, 0.3, 1.01, 2.0, 3.9, 5.0])
SIGNALS = {
    "interp in x": (lambda a: np.interp(a, XP, np.array([0.3, -1.0, 2.0, 0.5])), XS),
    "interp in fp": (lambda a: np.interp(XS, XP, a), _u(4, seed=20)),
    "interp left right": (lambda a: np.interp(XS, XP, a, left=-1.0, right=2.0), _u(4, seed=21)),
    "interp 2-d x": (lambda a: np.interp(a.reshape(2, 3), XP, np.array([0.3, -1, 2, 0.5])), XS),
    "polyval in p": (lambda a: np.polyval(a, XS), _u(4, seed=22)),
    "polyval in x": (lambda a: np.polyval(np.array([0.5, -1.0, 2.0]), a), XS),
    "polyval both": (lambda a: np.polyval(a[:3], a), XS),
    "vander": (lambda a: np.vander(a, 4), XS),
    "vander increasing": (lambda a: np.vander(a, 3, increasing=True), XS),
    "trapezoid traced x": (lambda a: np.trapezoid(a**2, x=a), XS),
    "trapezoid dx axis": (lambda a: np.trapezoid(a.reshape(2, 3), dx=0.3, axis=0), XS),
    "gradient coordinates edge_order 2": (
        lambda a: np.gradient(a, np.array([0, 1, 3, 4, 7, 8.0]), edge_order=2),
        XS,
    ),
    "gradient 2-d axis": (lambda a: np.gradient(a.reshape(3, 2), axis=0), XS),
    "diff n=3": (lambda a: np.diff(a, n=3), XS),
    "ediff1d to_begin to_end": (lambda a: np.ediff1d(a, to_begin=[1.0, 2.0], to_end=3.0), XS),
    "ediff1d traced to_end": (lambda a: np.ediff1d(a, to_end=a[:2]), XS),
    "sort axis None": (lambda a: np.sort(a.reshape(2, 3), axis=None) * np.arange(6), XS),
    "partition list kth": (lambda a: np.partition(a, [1, 4])[[1, 4]], V6),
    "partition negative kth": (lambda a: np.partition(a, -1)[-1], V6),
    "percentile list axis": (lambda a: np.percentile(a.reshape(2, 3), [0, 100, 33], axis=1), V6),
    "quantile 2-d q": (lambda a: np.quantile(a, np.array([[0.1, 0.2], [0.9, 1.0]])), V6),
    "linspace traced arrays axis": (
        lambda a: np.linspace(a[:2], a[2:4], 4, axis=1) * np.arange(4.0),
        V6,
    ),
    "linspace endpoint False": (lambda a: np.linspace(a[0], a[1], 5, endpoint=False) ** 2, V6),
    "logspace base 3": (lambda a: np.logspace(a[0], a[1], 4, base=3.0), V6),
    "geomspace": (lambda a: np.geomspace(np.abs(a[0]) + 1, np.abs(a[1]) + 2, 5), V6),
    "bincount weights minlength": (
        lambda a: np.bincount(np.array([0, 1, 1, 3, 0, 2]), weights=a**2, minlength=6),
        V6,
    ),
    "apply_along_axis": (
        lambda a: np.apply_along_axis(lambda r: np.cumsum(r) * r, 0, a.reshape(2, 3)),
        V6,
    ),
}
for _m in ("full", "same", "valid"):
    SIGNALS[f"convolve {_m} long first"] = (lambda a, m=_m: np.convolve(a, K3, mode=m), V6)
    SIGNALS[f"convolve {_m} short first"] = (lambda a, m=_m: np.convolve(a[:3], a, mode=m), V6)
    SIGNALS[f"correlate {_m} long first"] = (lambda a, m=_m: np.correlate(a, K3, mode=m), V6)
    SIGNALS[f"correlate {_m} short first"] = (lambda a, m=_m: np.correlate(a[:4], a, mode=m), V6)


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_signal_and_interpolation_programs(name):
    f, x = SIGNALS[name]
    check_value_and_grad(f, x)


FORWARD_PROGRAMS = {
    "pad reflect": (lambda a: np.pad(a, ((2, 3), (1, 4)), mode="reflect") ** 2, X45),
    "pad wrap wide": (lambda a: np.pad(a, ((2, 3), (1, 7)), mode="wrap") ** 2, X45),
    "pad median": (lambda a: np.pad(a, 2, mode="median") ** 2, X45),
    "take mode clip": (lambda a: np.take(a, [5, 6, -7], axis=1, mode="clip") ** 2, X45),
    "repeat with array repeats": (lambda a: np.repeat(a, [1, 0, 3, 2], axis=0) ** 2, X45),
    "convolve same": (lambda a: np.convolve(a[:3], a**2, mode="same"), V6),
    "correlate same": (lambda a: np.correlate(a[:4], a**2, mode="same"), V6),
    "interp in x": (lambda a: np.interp(a, [-1.0, 0.0, 1.5], [1.0, -2.0, 3.0]) ** 2, V6 + 0.013),
    "quantile midpoint": (lambda a: np.quantile(a**2, [0.1, 0.7], method="midpoint"), V6),
    "nanquantile": (lambda a: np.nanquantile(np.where(a > 1, np.nan, a**2), 0.4), V6),
    "cumprod": (np.cumprod, V6),
    "gradient edge_order 2": (
        lambda a: np.gradient(a**2, np.array([0, 1, 3, 4, 7, 8.0]), edge_order=2),
        V6,
    ),
    "average traced weights": (
        lambda a: np.average(a.reshape(2, 3), axis=1, weights=a[:3] ** 2 + 1),
        V6,
    ),
    "corrcoef": (lambda a: np.corrcoef(a.reshape(2, 3)), V6),
    "max where initial": (
        lambda a: np.max(
            a.reshape(2, 3) ** 2, axis=1, where=np.array([True, False, True]), initial=-1.0
        ),
        V6,
    ),
    "select": (lambda a: np.select([a < 0, a > 1], [a**2, a * 3], default=np.exp(a)), V6),
    "float_power traced exponent": (lambda a: np.float_power(np.abs(a), a[::-1]), V6),
    "copysign": (lambda a: np.copysign(a**2, a[::-1]), V6),
    "block": (
        lambda a: np.block([[a[:2, None], a[2:4, None] ** 2], [a[4:, None], a[4:, None]]]),
        V6,
    ),
    "einsum three operands": (
        lambda a: np.einsum("i,j,ij->j", a[:2], a[2:4], np.outer(a[:2], a[4:] ** 2)),
        V6,
    ),
    "i0": (np.i0, V6),
    "sinc": (np.sinc, V6),
}


@pytest.mark.parametrize("name", sorted(FORWARD_PROGRAMS))
def test_forward_mode_and_second_order(name):
    f, x = FORWARD_PROGRAMS[name]
    check_forward_and_second_order(f, x)


# ---- values that parametrise a function -------------------------------------------------------
X5 = _u(5, seed=23)
PARAMETERS = {
    "pad constant_values traced": lambda a: np.pad(a, 2, constant_values=a[0]),
    "tnp.pad constant_values traced pair": lambda a: tnp.pad(
        a, 1, constant_values=(a[0], a[1] ** 2)
    ),
    "heaviside traced h": lambda a: np.heaviside(a * np.array([0, 1, 1, 0, 1.0]), a[0]),
    "clip traced scalar bounds": lambda a: np.clip(a, a[0], a[1] + 2),
    "clip method keywords": lambda a: a.clip(min=a[0], max=a[1] + 1),
    "piecewise traced constant": lambda a: np.piecewise(a, [a < 0], [a[0], lambda t: t**2]),
    "interp traced left right": lambda a: np.interp(
        np.array([-5.0, 0.5, 5.0]), [0.0, 1.0], a[:2], left=a[2], right=a[3]
    ),
    "full_like traced fill": lambda a: np.full_like(a, a[1]),
    "where traced scalars": lambda a: np.where(
        np.array([True, False, True, True, False]), a[0], a[1]
    ),
    "insert traced value": lambda a: np.insert(a, 2, a[4] * 3),
    "linspace retstep": lambda a: np.linspace(a[0], a[1], 4, retstep=True)[1] * a,
    "ediff1d traced to_begin": lambda a: np.ediff1d(a, to_begin=a[0]),
    "diff traced prepend append": lambda a: np.diff(a, prepend=a[-1], append=a[:2]),
    "trapezoid traced dx": lambda a: np.trapezoid(a, dx=a[0]),
    "gradient traced spacing": lambda a: np.gradient(a, a[0] ** 2 + 1),
    "gradient traced coordinates": lambda a: np.gradient(a, np.cumsum(np.abs(a)) + np.arange(5.0)),
    "logspace traced base": lambda a: np.logspace(0.0, 2.0, 3, base=a[0] ** 2 + 1),
    "select traced default": lambda a: np.select([a > 0], [a], default=a[0] ** 2),
    "einsum 0-d traced operand": lambda a: np.einsum("i,->i", a, a[0]),
    "kron 0-d traced": lambda a: np.kron(a[0], a),
}


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_traced_values_that_parametrise_a_function(name):
    check_value_and_grad(PARAMETERS[name], X5)


# ---- exact values at zeros, ties and kinks ------------------------------------------------------
def _exact_prod_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


PRODUCTS = {
    "prod": np.prod,
    "prod axis": lambda a: np.prod(a.reshape(1, -1), axis=1)[0],
    "cumprod last": lambda a: np.cumprod(a)[-1],
    "multiply.reduce": np.multiply.reduce,
    "nanprod": np.nanprod,
    "prod initial": lambda a: np.prod(a, initial=1.0),
    "det of diag": lambda a: np.linalg.det(np.diag(a)),
    "cumulative_prod last": lambda a: np.cumulative_prod(a)[-1],
    "multiply.accumulate last": lambda a: np.multiply.accumulate(a)[-1],
}


@pytest.mark.parametrize(
    "x", [[2.0, 0.0, 3.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 2.0, 0.0]]
)
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_with_zeros_exact_gradient_and_hessian(name, x):
    x = np.array(x)
    f = PRODUCTS[name]
    want_g = np.array([np.prod(np.delete(x, i)) for i in range(x.size)])
    np.testing.assert_array_equal(tg.grad(f)(x), want_g)
    np.testing.assert_allclose(tg.hessian(f)(x), _exact_prod_hessian(x), rtol=1e-14, atol=1e-14)


def test_cumprod_with_zeros_gradient_is_exact():
    g = tg.grad(lambda a: np.cumprod(a).sum())(np.array([2.0, 0.0, 3.0, 0.0, 4.0]))
    np.testing.assert_array_equal(g, [1.0, 8.0, 0.0, 0.0, 0.0])


SUBGRADIENTS = {
    # tied extrema share the gradient evenly, as documented (torch.amax's convention)
    "max ties": (np.max, [1.0, 3.0, 3.0, 2.0], [0.0, 0.5, 0.5, 0.0]),
    "max keepdims three-way tie": (
        lambda a: np.max(a, axis=0, keepdims=True).sum(),
        [3.0, 3.0, 3.0],
        [1 / 3, 1 / 3, 1 / 3],
    ),
    "min ties": (np.min, [1.0, 1.0, 3.0], [0.5, 0.5, 0.0]),
    "maximum.reduce ties": (np.maximum.reduce, [2.0, 2.0, 1.0], [0.5, 0.5, 0.0]),
    "maximum of equal operands": (lambda a: np.maximum(a[0], a[1]), [1.0, 1.0], [0.5, 0.5]),
    "minimum of equal operands": (lambda a: np.minimum(a[0], a[1]), [1.0, 1.0], [0.5, 0.5]),
    "ptp ties": (np.ptp, [1.0, 1.0, 3.0, 3.0], [-0.5, -0.5, 0.5, 0.5]),
    "median odd ties": (np.median, [1.0, 2.0, 2.0, 2.0, 5.0], [0.0, 0.0, 1.0, 0.0, 0.0]),
    "median even": (np.median, [4.0, 1.0, 3.0, 2.0], [0.0, 0.0, 0.5, 0.5]),
    "sort ties is stable": (
        lambda a: np.sort(a) @ np.arange(4.0),
        [2.0, 1.0, 2.0, 1.0],
        [2.0, 0.0, 3.0, 1.0],
    ),
    "quantile linear": (
        lambda a: np.quantile(a, 0.35),
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0, 0, 0, 0.6, 0.4],
    ),
    "quantile lower": (
        lambda a: np.quantile(a, 0.35, method="lower"),
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0, 0, 0, 1, 0],
    ),
    "quantile higher": (
        lambda a: np.quantile(a, 0.35, method="higher"),
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0, 0, 0, 0, 1],
    ),
    "quantile nearest": (
        lambda a: np.quantile(a, 0.35, method="nearest"),
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0, 0, 0, 1, 0],
    ),
    "quantile midpoint": (
        lambda a: np.quantile(a, 0.35, method="midpoint"),
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0, 0, 0, 0.5, 0.5],
    ),
    "clip at both bounds passes the gradient (torch.clamp)": (
        lambda a: np.clip(a, 1.0, 2.0).sum(),
        [1.0, 2.0, 1.5, 2.5],
        [1.0, 1.0, 1.0, 0.0],
    ),
    "clip with low above high takes high": (
        lambda a: np.clip(a[0], a[1], a[2]),
        [1.5, 2.0, 1.0],
        [0.0, 0.0, 1.0],
    ),
    "abs at 0": (lambda a: np.abs(a).sum(), [0.0, -2.0], [0.0, -1.0]),
    "sqrt at 0 is the one-sided limit": (lambda a: np.sqrt(a).sum(), [0.0, 4.0], [np.inf, 0.25]),
    "x ** 0.5 at 0 is the one-sided limit": (lambda a: (a**0.5).sum(), [0.0], [np.inf]),
    "power at 0": (
        lambda a: np.power(a[0], 2) + np.power(a[1], 1) + np.power(a[2], 0) + np.power(a[3], 1.5),
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
    ),
    "integer powers of a negative base": (
        lambda a: a[0] ** 3 + np.power(a[1], -2) + np.float_power(a[2], 3),
        [-2.0, -2.0, -2.0],
        [12.0, 0.25, 12.0],
    ),
    "arctan2 at the origin": (lambda a: np.arctan2(a[0], a[1]), [0.0, 0.0], [0.0, 0.0]),
    "hypot at the origin": (lambda a: np.hypot(a[0], a[1]), [0.0, 0.0], [0.0, 0.0]),
    "sinc at 0": (np.sinc, 0.0, 0.0),
    "logaddexp with -inf": (lambda a: np.logaddexp(a[0], a[1]), [-np.inf, 0.0], [0.0, 1.0]),
    "logaddexp2 with -inf": (lambda a: np.logaddexp2(a[0], a[1]), [-np.inf, 1.0], [0.0, 1.0]),
    "expm1 at 0": (np.expm1, 0.0, 1.0),
    "log1p at 0": (np.log1p, 0.0, 1.0),
    "mod of a negative divisor": (lambda a: np.mod(a[0], a[1]), [5.5, -2.0], [1.0, 3.0]),
    "fmod of a negative divisor": (lambda a: np.fmod(a[0], a[1]), [5.5, -2.0], [1.0, 2.0]),
    "fmax ignores nan": (lambda a: np.fmax(a[0], a[1]), [np.nan, 2.0], [0.0, 1.0]),
    "nanmax": (np.nanmax, [1.0, np.nan, 3.0], [0.0, 0.0, 1.0]),
    "nanpercentile": (
        lambda a: np.nanpercentile(a, 30),
        [1.0, np.nan, 3.0, 4.0],
        [0.4, 0.0, 0.6, 0.0],
    ),
    "interp at an inner knot takes the right segment": (
        lambda a: np.interp(a, [0.0, 1.0, 2.0], [0.0, 1.0, 5.0]).sum(),
        [1.0],
        [4.0],
    ),
    "interp outside the knots": (
        lambda a: np.interp(a, [0.0, 1.0, 2.0], [0.0, 1.0, 5.0]).sum(),
        [2.5, -1.0],
        [0.0, 0.0],
    ),
}


@pytest.mark.parametrize("name", sorted(SUBGRADIENTS))
def test_exact_gradients_at_zeros_ties_and_kinks(name):
    f, x, want = SUBGRADIENTS[name]
    x = np.asarray(x, dtype=float)
    np.testing.assert_allclose(tg.grad(f)(x), want, rtol=1e-15, atol=0)


def test_where_with_a_nan_in_the_branch_not_taken_matches_torch_and_jax():
    # mathematically the derivative at x = -1 is 0; tapegrad, PyTorch and JAX all give NaN
    # there (0 times the NaN derivative of the branch not taken), as the docs' IEEE rule says;
    # the selected branch keeps its exact derivative
    x = np.array([-1.0, 4.0])
    g = tg.grad(lambda a: np.where(a > 0, np.sqrt(a), 0.0).sum())(x)
    t = torch.tensor(x, requires_grad=True)
    torch.where(t > 0, torch.sqrt(t), 0.0).sum().backward()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(t.grad.numpy()))
    assert g[1] == 0.25


@pytest.mark.parametrize(
    "x",
    [
        [1e-3, 1e-5, 1e-7, 1e-9, -3e-6, 0.5],
    ],
)
def test_sinc_derivatives_near_zero_keep_full_precision(x):
    x = np.array(x)
    t = np.pi * x
    want1 = (np.cos(t) * t - np.sin(t)) / (t * x)
    series1 = -(np.pi**2) * x / 3 + np.pi**4 * x**3 / 30
    want1 = np.where(np.abs(x) < 1e-2, series1, want1)
    np.testing.assert_allclose(tg.grad(lambda a: np.sinc(a).sum())(x), want1, rtol=1e-12)


@pytest.mark.parametrize("x", [1 - 1e-8, -1 + 1e-9, 0.999])
def test_arcsin_and_arccos_derivatives_near_one(x):
    want = 1 / np.sqrt((1 - x) * (1 + x))
    assert tg.grad(np.arcsin)(x) == pytest.approx(want, rel=1e-8)
    assert tg.grad(np.arccos)(x) == pytest.approx(-want, rel=1e-8)


# ---- refusals: never a silently wrong number ---------------------------------------------------
REFUSED = {
    "ufunc out=": lambda a: np.add(a, 1.0, out=np.zeros(3)),
    "reduction out=": lambda a: np.sum(a, out=np.zeros(())),
    "matmul out=": lambda a: np.matmul(a[:, None], a[None], out=np.zeros((3, 3))),
    "einsum out=": lambda a: np.einsum("i->", a, out=np.zeros(())),
    "concatenate out=": lambda a: np.concatenate([a, a], out=np.zeros(6)),
    "clip out=": lambda a: np.clip(a, 0, 1, out=np.zeros(3)),
    "ufunc where=": lambda a: np.sqrt(a, where=a > 0),
    "ufunc dtype float32": lambda a: np.add(a, 1.0, dtype=np.float32),
    "mean dtype float32": lambda a: np.mean(a, dtype=np.float32),
    "var where=": lambda a: np.var(a, where=np.array([True, False, True])),
    "var mean=": lambda a: np.var(a, mean=np.zeros(())),
    "quantile method hazen": lambda a: np.quantile(a, 0.3, method="hazen"),
    "quantile weights": lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(3)),
    "quantile traced q": lambda a: np.quantile(np.arange(3.0), a[0] ** 2 / 10),
    "qr complete": lambda a: np.linalg.qr(np.outer(a, a[:2]) + np.eye(3, 2), mode="complete")[0],
    "svd full U of a tall matrix": lambda a: np.linalg.svd(np.outer(a, a[:2]) + np.eye(3, 2))[0],
    "eigh vectors at a repeated eigenvalue": lambda a: np.linalg.eigh(a[0] * 0 + np.eye(2))[1],
    "fft": lambda a: np.abs(np.fft.fft(a)),
    "rfft": lambda a: np.abs(np.fft.rfft(a)),
    "complex scalar": lambda a: np.abs(a * 1j),
    "complex array": lambda a: np.abs(a * np.exp(1j * np.arange(3))),
    "astype complex": lambda a: np.abs(a.astype(complex)),
    "emath.sqrt": lambda a: np.real(np.emath.sqrt(a)),
    "linalg.eig": lambda a: np.linalg.eig(np.outer(a, a)).eigenvalues.real,
    "roots": lambda a: np.abs(np.roots(a)),
    "np.array of a traced value": lambda a: np.array(a),
    "np.vectorize": lambda a: np.vectorize(lambda t: t * 2)(a),
    "add.at": lambda a: np.add.at(a.copy(), [0, 0], 1.0),
    "put_along_axis": lambda a: np.put_along_axis(a.copy(), np.array([0]), a[1:2], axis=0),
    "copyto": lambda a: np.copyto(a.copy(), a**2),
    "pad mode empty": lambda a: np.pad(a, 1, mode="empty"),
    "pad reflect_type odd": lambda a: np.pad(a, 2, mode="reflect", reflect_type="odd"),
    "pad stat_length": lambda a: np.pad(a, 2, mode="maximum", stat_length=2),
    "sum traced initial": lambda a: np.sum(a, initial=a[0]),
    "nan_to_num traced nan": lambda a: np.nan_to_num(np.log(a), nan=a[0]),
    "unwrap": lambda a: np.unwrap(a),
    "histogram": lambda a: np.histogram(a)[0] * 1.0,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsupported_numpy_raises_instead_of_a_wrong_number(name):
    f = REFUSED[name]
    with pytest.raises((TypeError, np.linalg.LinAlgError, NotImplementedError)):
        tg.grad(lambda a: np.sum(f(a)))(np.array([0.3, 0.7, 1.1]))


# ---- recorded traces guard every decision read from values ---------------------------------------
TRACED_DECISIONS = {
    "argmax index": lambda a: a[np.argmax(a)] * 2.0,
    "argsort take": lambda a: np.take(a, np.argsort(a)) @ np.arange(6.0),
    "searchsorted index": lambda a: a[np.searchsorted(np.sort(a), 0.1) % 6] * 3.0,
    "digitize index": lambda a: a[np.digitize(a[0], [-1.0, 0.0, 1.0])] ** 2,
    "nonzero": lambda a: a[np.nonzero(a > 0)[0]].sum(),
    "count_nonzero": lambda a: a.sum() * np.count_nonzero(a > 0),
    "boolean mask": lambda a: a[a > 0].sum(),
    "sort": lambda a: np.sort(a) @ np.arange(6.0),
    "median": np.median,
    "interp": lambda a: np.interp(a, [-1.0, 0.0, 1.0], [1.0, 0.0, 3.0]).sum(),
    "isclose mask": lambda a: a[~np.isclose(a, a.max())].sum(),
    "argpartition": lambda a: a[np.argpartition(a, 2)[:2]].sum(),
    "tolist read": lambda a: a.sum() * (2.0 if a.tolist()[0] > 0 else 3.0),
    "int of a count as index": lambda a: a[int(np.sum(a > 0)) % 6] * 1.0,
    "floor as index": lambda a: a[(np.floor(np.abs(a[1]) * 3) % 6).astype(int)] * 1.0,
    "repeat counts from values": lambda a: np.repeat(a, (np.abs(a) * 3).astype(int)).sum(),
    "bincount bins from values": lambda a: (
        np.bincount((np.abs(a) * 2).astype(int) % 3, weights=a, minlength=3) @ np.arange(3.0)
    ),
}


@pytest.mark.parametrize("name", sorted(TRACED_DECISIONS))
def test_trace_replay_is_exact_or_guarded(name):
    f = TRACED_DECISIONS[name]
    x0 = np.random.default_rng(5).standard_normal(6)
    x1 = np.random.default_rng(6).standard_normal(6)
    tr = tg.trace(f, x0)
    np.testing.assert_allclose(tr.grad(x0), tg.grad(f)(x0), rtol=1e-12, atol=1e-15)
    try:
        got = tr.grad(x1)
    except tg.RetraceRequired:
        return
    np.testing.assert_allclose(got, tg.grad(f)(x1), rtol=1e-12, atol=1e-15)


# ---- disagreements ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, a, b",
    [
        ("logaddexp", -40.0, 0.0),
        ("logaddexp", 0.0, 40.0),
        ("logaddexp", -30.0, 5.0),
        ("logaddexp2", -800.0, 0.0),
        ("logaddexp2", -40.7, 0.0),
    ],
)
def test_logaddexp_partial_of_the_smaller_operand_keeps_relative_accuracy(name, a, b):
    """The smaller operand's partial, exp(-40) / (1 + exp(-40)) at (-40, 0), to full precision
    (a 0.5 - 0.5 tanh form cancelled to 0), in reverse and forward mode."""
    x = np.array([a, b])
    g = tg.grad(lambda v: getattr(np, name)(v[0], v[1]))(x)
    t = torch.tensor(x, requires_grad=True)
    getattr(torch, name)(t[0], t[1]).backward()
    want = t.grad.numpy()
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=0)
    _, tangent = tg.jvp(lambda v: getattr(np, name)(v[0], v[1]), (x,), (np.array([1.0, 0.0]),))
    np.testing.assert_allclose(tangent, want[0], rtol=1e-12, atol=0)


def test_logaddexp_accumulate_gradient_keeps_relative_accuracy():
    """np.logaddexp.accumulate's weights exp(x_j - out_k) to full precision, as PyTorch's."""
    x = np.array([-40.0, 0.0, -800.0, -30.3, 3.0])
    g = tg.grad(lambda a: np.logaddexp.accumulate(a)[-1])(x)
    t = torch.tensor(x, requires_grad=True)
    torch.logcumsumexp(t, 0)[-1].backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=0)


ORDER_K_OR_A = {
    "np.ravel(a.T, order='K')": lambda a: np.ravel(a.T, order="K"),
    "np.ravel(a.T, order='A')": lambda a: np.ravel(a.T, order="A"),
    "a.T.flatten('K')": lambda a: a.T.flatten("K"),
    "np.reshape(a.T, 6, order='A')": lambda a: np.reshape(a.T, 6, order="A"),
    "np.copy(a, order='F').ravel(order='K')": lambda a: np.copy(a, order="F").ravel(order="K"),
    "(a.T * 2).ravel('K')": lambda a: (a.T * 2).ravel("K"),
    "np.swapaxes(a, 0, 1).ravel('K')": lambda a: np.ravel(np.swapaxes(a, 0, 1), order="K"),
    "a.T[:, ::-1].ravel('K')": lambda a: a.T[:, ::-1].ravel("K"),
}


@pytest.mark.parametrize("name", sorted(ORDER_K_OR_A))
def test_ravel_order_k_and_a_refuse_where_the_layout_matters(name):
    """order='K' / 'A' read NumPy's memory layout (a transposed view is column-major), which a
    Tensor does not record: on two axes longer than 1 they raise (they were read as 'C', a
    silent permutation of NumPy's value), naming order='C' and 'F'."""
    with pytest.raises(ValueError, match="order='C'"):
        tg.grad(lambda a: (ORDER_K_OR_A[name](a) * np.arange(6.0)).sum())(X34[:2, :3])


@pytest.mark.parametrize("order", ["K", "A"])
def test_ravel_order_k_and_a_where_the_layout_cannot_matter(order):
    """One axis longer than 1: every order reads the same elements."""
    check_value_and_grad(lambda a: np.ravel(a[None, :, None], order=order), X34[0])
    check_value_and_grad(lambda a: np.reshape(a[:, None], (1, 4), order="A"), X34[0])


@pytest.mark.parametrize(
    "name",
    ["np.pad scalar end", "np.pad pair of ends", "tnp.pad scalar end", "jvp", "constant pair"],
)
def test_pad_linear_ramp_differentiates_traced_end_values(name):
    """Traced end_values (and a pair of traced constant_values) keep their gradient (they were
    read as plain values: the gradient through them was dropped)."""
    x = np.array([1.0, 2.0, 3.0])

    def f(a):
        if name == "np.pad pair of ends":
            return np.pad(a[:2], 2, mode="linear_ramp", end_values=(a[2], 0.0)).sum()
        if name == "constant pair":
            return (np.pad(a[:2], (1, 2), constant_values=(a[2], a[0] * 3.0)) ** 2).sum()
        pad = tnp.pad if name.startswith("tnp") else np.pad
        return pad(a[:2], 2, mode="linear_ramp", end_values=a[2]).sum()

    want = _fd(lambda a: float(f(a)), x)
    if name == "jvp":
        _, t = tg.jvp(f, (x,), (np.array([0.0, 0.0, 1.0]),))
        np.testing.assert_allclose(t, want[2], rtol=1e-6)
    else:
        np.testing.assert_allclose(tg.grad(f)(x), want, rtol=1e-6)


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("ddof", [4, 5])
def test_var_with_ddof_at_least_n_is_inf_as_numpy(fn, ddof):
    """No degrees of freedom left: NumPy divides by max(n - ddof, 0) = 0, giving inf."""
    x = X34
    want = getattr(np, fn)(x, axis=1, ddof=ddof)
    with np.errstate(divide="ignore", invalid="ignore"):
        got = tg.value_and_grad(lambda a: getattr(np, fn)(a, axis=1, ddof=ddof)[0])(x)[0]
    np.testing.assert_array_equal(got, want[0])


NAN_REDUCTIONS = {
    "max": np.max,
    "min": np.min,
    "amax axis": lambda a: np.amax(a.reshape(1, 3), axis=1)[0],
    "maximum.reduce": np.maximum.reduce,
    "median": np.median,
    "quantile": lambda a: np.quantile(a, 0.5),
    "percentile 100": lambda a: np.percentile(a, 100),
    "ptp": np.ptp,
}


@pytest.mark.parametrize("name", sorted(NAN_REDUCTIONS))
def test_reduction_of_a_nan_does_not_give_a_zero_gradient(name):
    """A NaN extreme, median or quantile sends the gradient to the NaN entry (as PyTorch's
    max and median do); an all-zero gradient would look like an answer."""
    f = NAN_REDUCTIONS[name]
    x = np.array([1.0, np.nan, 3.0])
    with np.errstate(invalid="ignore"):
        g = tg.grad(f)(x)
    assert np.isnan(g[1]) or g[1] != 0.0


@pytest.mark.parametrize("ord_", ["nuc", 2, -2])
def test_matrix_norm_spectral_and_nuclear_orders(ord_):
    """matrix_norm's 2, -2 and 'nuc' orders, through the singular values, as np.linalg.norm."""
    check_value_and_grad(lambda a: np.linalg.matrix_norm(a, ord=ord_), A43)


@pytest.mark.parametrize("axis", [-1, -2])
def test_np_vecdot_with_axis(axis):
    """np.vecdot (a ufunc) with its own axis= keyword."""
    c = _u(2, 3, 4, seed=24)
    check_value_and_grad(lambda a: np.vecdot(c, a, axis=axis), X34)


@pytest.mark.parametrize("fn", ["max", "min"])
def test_empty_extremum_with_initial(fn):
    """max / min over an empty axis with initial= give initial, as NumPy."""
    check_value_and_grad(lambda a: getattr(np, fn)(a[:, :0], axis=1, initial=1.0) + a[:, 0], X34)


def test_floor_division_by_zero_is_numpys_infinity():
    """x // 0 is NumPy's +-inf (nan for 0 // 0) with derivative 0 in every mode; the
    composite (x - x % y) / y gave nan there, and its derivative 0 / 0."""
    x, y = np.array([5.0, -7.0, 0.0, 3.0]), np.array([0.0, 0.0, 0.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = x // y
        value, grad = tg.value_and_grad(lambda v: np.sum((v // y) * 1.0))(x)
        np.testing.assert_array_equal(tg.jvp(lambda v: v // y, (x,), (np.ones(4),))[0], want)
        np.testing.assert_array_equal(grad, 0.0)
        f = lambda v: np.sum(v // y * v)  # noqa: E731
        tr = tg.trace(f, x)
        np.testing.assert_array_equal(tr.grad(2.0 * x), tg.grad(f)(2.0 * x))  # same signs
        with pytest.raises(tg.RetraceRequired):  # 0 // 0 becomes 1 // 0: another branch
            tr.grad(x + 1.0)
    assert np.isnan(value)  # inf + -inf + nan


def test_floor_division_by_infinity_is_numpys():
    """A finite x // +-inf is -1 where the signs differ, else 0 (an infinite or NaN x: nan),
    as NumPy's; the composite gave nan.  Derivative 0, no nan in it."""
    x = np.array([-1.0, 1.0, 0.0, 2.0, -3.0, 4.0])
    y = np.array([np.inf, np.inf, np.inf, -np.inf, -np.inf, np.inf])
    for ys in (y, tg.tensor(y)):
        out = tg.jvp(lambda v, ys=ys: v // ys, (x,), (np.ones(6),))[0]
        np.testing.assert_array_equal(out, x // y)
    np.testing.assert_array_equal(tg.grad(lambda v: np.sum((v // y) * v))(x), x // y)
    with np.errstate(invalid="ignore"):
        special = np.array([np.inf, np.nan])
        np.testing.assert_array_equal(tg.tensor(special) // np.inf, special // np.inf)
