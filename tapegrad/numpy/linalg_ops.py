"""The functions behind ``np.linalg`` on Tensors (and ``tnp.linalg``): differentiable at any
order, in reverse and forward mode, batched over leading dimensions as NumPy is.

Forward values are NumPy's (LAPACK, called at record time); derivatives are Tensor expressions
(see ``rules.py``), so ``create_graph``, ``tg.hessian`` and ``tg.jvp`` all work.  Conventions:

- ``cholesky``, ``eigh`` and ``eigvalsh`` read one triangle of ``a`` (``UPLO`` / ``upper``), as
  LAPACK does, and so does their gradient: it lands in that triangle (off-diagonal entries count
  twice, once for each mirror position).  Symmetrize ``(a + a.T) / 2`` first to spread it.
- Derivatives that do not exist raise instead of returning a number: eigenvectors of repeated
  eigenvalues, singular vectors of repeated (or, for non-square input, zero) singular values,
  and the extra columns of ``svd(..., full_matrices=True)`` / ``qr(..., mode='complete')``
  that NumPy picks arbitrarily.  ``pinv``/``lstsq`` of rank-deficient matrices are
  differentiated at constant rank, as in JAX.
  ``slogdet``/``inv``/``solve`` of singular matrices raise ``LinAlgError`` (from the forward or
  from the derivative, which needs the inverse); ``det``'s derivative is the adjugate, which
  exists everywhere (as in JAX).
"""

import operator
from collections.abc import Sequence

import numpy as np

from ..core import functions as O
from ..core.tensor import TensorBase as Tensor
from . import contractions as contract
from .rules import apply

LinAlgError = np.linalg.LinAlgError
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))
_EighResult = type(np.linalg.eigh(np.eye(1)))
_SVDResult = type(np.linalg.svd(np.eye(1)))
_QRResult = type(np.linalg.qr(np.eye(1)))

# ---- Tensor helpers (batched over leading axes) ----------------------------------------------


def _val(x):
    return np.asarray(x._v if isinstance(x, Tensor) else x, dtype=np.float64)


def _mT(x):
    return O.swapaxes(x, -1, -2)


def _diag(x):
    return contract.einsum("...ii->...i", x)


def _diag_embed(v):
    n = v.shape[-1]
    return O.mul(O.expand_dims(v, -1), np.eye(n))


def _trace(x):
    return contract.einsum("...ii->...", x)


def _sym(x):
    return O.mul(O.add(x, _mT(x)), 0.5)


def _scalar_to_matrix(s):
    return O.reshape(s, tuple(s.shape) + (1, 1))


def _square(a, name):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"numpy.linalg.{name}: last 2 dimensions of the array must be square "
            f"(got shape {a.shape})"
        )


def _from_triangle(a, lower):
    """The symmetric matrix LAPACK sees when it reads one triangle of ``a``.  The other
    triangle is dropped by ``where``, not multiplied by zero: a NaN or inf there, which
    LAPACK never reads, would otherwise make the value and the gradient NaN."""
    n = a.shape[-1]
    ones = np.ones((n, n), bool)
    strict = O.where(np.tril(ones, -1) if lower else np.triu(ones, 1), a, 0.0)
    return O.add(O.add(strict, _mT(strict)), O.where(np.eye(n, dtype=bool), a, 0.0))


def _check_gaps(w, name, what, squared=False):
    """Raise when two eigen/singular values coincide (to working precision): the derivative
    of the vectors is undefined there."""
    w = _val(w)
    v = w * w if squared else w
    d = np.abs(v[..., :, None] - v[..., None, :])
    n = w.shape[-1]
    scale = np.max(np.abs(v), axis=-1, keepdims=True, initial=0.0)[..., None]
    bad = (d <= 1e-12 * scale) & ~np.eye(n, dtype=bool)
    if np.any(bad):
        raise LinAlgError(
            f"numpy.linalg.{name}: the derivative of the {what} is undefined at repeated "
            f"values ({_val(w).tolist()}); differentiate a quantity that depends on the "
            "values only (e.g. eigvalsh / svd(compute_uv=False)) or perturb the input"
        )


def _gap_matrix(w, squared=False):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (as a Tensor of w)."""
    n = w.shape[-1]
    if squared:
        w = O.mul(w, w)
    d = O.sub(O.expand_dims(w, -2), O.expand_dims(w, -1))
    eye = np.eye(n)
    return O.div(1.0 - eye, O.add(d, eye))


# ---- inv, solve, det, slogdet ------------------------------------------------------------------


def _inv_vjp(x, y, g):
    yt = _mT(y[0])
    return [O.neg(O.matmul(O.matmul(yt, g[0]), yt))]


def _inv_jvp(x, y, dx):
    return [O.neg(O.matmul(O.matmul(y[0], dx[0]), y[0]))]


def inv(a) -> Tensor:
    """Inverse of a (stack of) square matrices; derivative ``-A^-1 dA A^-1``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.inv(a).sum())(np.array([[2.0]]))
    array([[-0.25]])
    """
    a = O.tensor_of(a)
    _square(a, "inv")
    return apply("LinalgInvBackward", [a], _inv_forward, _inv_vjp, _inv_jvp)[0]


def _inv_forward(av):
    return [np.linalg.inv(av)]


def _solve_vjp(x, y, g):
    gb = _solve(_mT(x[0]), g[0])
    return [O.neg(O.matmul(gb, _mT(y[0]))), gb]


def _solve_jvp(x, y, dx):
    da, db = dx
    rhs = db
    if da is not None:
        t = O.neg(O.matmul(da, y[0]))
        rhs = t if rhs is None else O.add(rhs, t)
    return [_solve(x[0], rhs)]


def _solve(a, b):
    """Solve a X = b for matrix right-hand sides ``b`` (..., M, K) (batch dims broadcast)."""
    return apply("LinalgSolveBackward", [a, b], _solve_forward, _solve_vjp, _solve_jvp)[0]


def _solve_forward(av, bv):
    return [np.linalg.solve(av, bv)]


def solve(a, b) -> Tensor:
    """Solution of ``a x = b`` with NumPy 2 semantics: ``b`` is a vector only when 1-D.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda b: np.linalg.solve(np.diag([2.0, 4.0]), b).sum())(np.ones(2))
    array([0.5 , 0.25])
    """
    a, b = O.tensor_of(a), O.tensor_of(b)
    _square(a, "solve")
    if b.ndim == 1:
        x = _solve(a, O.reshape(b, (b.shape[0], 1)))
        return O.reshape(x, x.shape[:-1])
    return _solve(a, b)


# past this condition number det(A) A^-1 loses every digit: the adjugate comes from the SVD
_DET_COND = 1e8
_FADDEEV_MAX = 8  # nested derivatives at singular A: the characteristic-polynomial adjugate
_FADDEEV_RTOL = 1e-8  # ... used where its value is this accurate (its derivatives more so)


def _adjugate_T_svd(av):
    """adj(A)^T = det(U) det(V) U diag(prod of the other singular values) V^T, exact at
    singular A too (a rank n-1 matrix has a rank-one adjugate, lower ranks a zero one)."""
    finite = np.isfinite(av).all(axis=(-2, -1))
    if not finite.all():  # LAPACK's SVD may never return on inf: those adjugates are NaN
        out = np.full(av.shape, np.nan)
        if finite.any():
            out[finite] = _adjugate_T_svd(av[finite])
        return out
    u, sv, vh = np.linalg.svd(av)
    left = np.concatenate([np.ones(sv.shape[:-1] + (1,)), np.cumprod(sv, -1)[..., :-1]], -1)
    right = np.flip(
        np.concatenate(
            [np.ones(sv.shape[:-1] + (1,)), np.cumprod(np.flip(sv, -1), -1)[..., :-1]], -1
        ),
        -1,
    )
    sign = np.linalg.det(u) * np.linalg.det(vh)
    others = left * right  # prod over j != i of s_j
    out = np.einsum("...ij,...j,...jk->...ik", u, others, vh) * sign[..., None, None]
    return out


def _adjugate_faddeev(a):
    """adj(A) as a polynomial in A (Faddeev-LeVerrier), on Tensors: differentiable at every
    order, singular A included; fine for small n (its rounding grows with n)."""
    n = a.shape[-1]
    eye = np.eye(n)
    m = Tensor._const(np.broadcast_to(eye, a.shape).copy())  # M_1 = I
    for k in range(1, n):
        am = O.matmul(a, m)
        c = O.mul(_trace(am), -1.0 / k)
        m = O.add(am, O.mul(_scalar_to_matrix(c), eye))
    return O.mul(m, (-1.0) ** (n + 1))


def _det_grad(a):
    """d det / dA = adj(A)^T, as a Tensor: det(A) A^-T where A is well conditioned; at
    (numerically) singular A the adjugate itself, as JAX does."""
    av = _val(a)
    finite = np.isfinite(av).all(axis=(-2, -1))
    cond = np.ones(finite.shape)
    if av.size and finite.any():  # (LAPACK's SVD fails on NaN: those adjugates are NaN)
        cond[finite] = np.linalg.cond(av[finite])
    if np.all(finite) and np.all(cond < _DET_COND):
        return O.mul(_scalar_to_matrix(det(a)), _mT(inv(a)))
    if not a._rg:  # a plain backward or tangent: the value alone
        return Tensor._const(_adjugate_T_svd(av))
    if a.shape[-1] > _FADDEEV_MAX:
        raise LinAlgError(
            f"numpy.linalg.det: a derivative of the gradient of det at a singular "
            f"{a.shape[-1]}x{a.shape[-1]} matrix is supported up to "
            f"{_FADDEEV_MAX}x{_FADDEEV_MAX} (the adjugate as a polynomial in A); "
            "differentiate once, or perturb the matrix"
        )
    f = _mT(_adjugate_faddeev(a))
    exact = _adjugate_T_svd(av)
    _check_faddeev(_val(f), exact, av)
    return O.add(f, exact - _val(f))  # the SVD's exact value, the polynomial's derivatives


def _check_faddeev(f, exact, av):
    """Refuse the polynomial adjugate where its rounding shows: it is unstable for matrices
    whose singular values spread widely (an 8x8 one spread over 1e-3 .. 1e3 loses every digit,
    its derivatives with it).  Its error in the value, against the SVD's adjugate, is measured
    on the scale of the entries of adj(A) and of its derivative (products of the n-1 and n-2
    largest singular values); the derivatives lose fewer digits than the value."""
    n = av.shape[-1]
    finite = np.isfinite(av).all(axis=(-2, -1))
    if n < 2 or not finite.any():
        return
    s = np.linalg.svd(av[finite], compute_uv=False)
    eps = np.finfo(np.float64).eps
    scale = np.maximum(
        np.maximum(np.prod(s[..., :-1], -1), np.prod(s[..., :-2], -1)),
        n * eps * s[..., 0] ** (n - 1),
    )
    err = np.max(np.abs(f[finite] - exact[finite]), axis=(-2, -1))
    if np.any(err > _FADDEEV_RTOL * scale):
        raise LinAlgError(
            f"numpy.linalg.det: a derivative of the gradient of det at this ill-conditioned "
            f"{n}x{n} matrix cannot be computed accurately (the adjugate as a polynomial in A "
            "loses its digits when the singular values spread widely); differentiate once, "
            "or rescale or perturb the matrix"
        )


def _det_vjp(x, y, g):
    return [O.mul(_scalar_to_matrix(g[0]), _det_grad(x[0]))]


def _det_jvp(x, y, dx):
    return [O.sum(O.mul(_det_grad(x[0]), dx[0]), (-2, -1))]


def det(a) -> Tensor:
    """Determinant; derivative ``adj(A)^T`` (``det(A) A^-T`` where A is invertible; at singular
    A the adjugate, as JAX).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(np.linalg.det)(np.array([[2.0, 0.0], [0.0, 3.0]]))
    array([[3., 0.],
           [0., 2.]])
    >>> tg.grad(np.linalg.det)(np.array([[1.0, 2.0], [2.0, 4.0]]))  # singular: adj(A)^T
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    a = O.tensor_of(a)
    _square(a, "det")
    return apply("LinalgDetBackward", [a], lambda av: [np.linalg.det(av)], _det_vjp, _det_jvp)[0]


def _slogdet_check(a, y, d):
    """log|det A| is -inf at a singular A (sign 0): its derivative A^-T does not exist.  Only
    the matrices ``d`` (logabsdet's cotangent, or A's tangent) reaches are refused: the rest
    of a batch, or a sign alone, differentiates.  Returns ``a`` with the singular matrices
    (which ``d`` does not reach) replaced by the identity, so their inverse exists."""
    singular = _val(y[0]) == 0.0
    if not np.any(singular) or d is None:
        return a
    reached = _val(d) != 0.0
    if reached.ndim > singular.ndim:  # a tangent of the matrices: reached where any entry is
        reached = reached.any(axis=(-2, -1))
    if np.any(singular & reached):
        raise LinAlgError(
            "numpy.linalg.slogdet: the derivative of logabsdet is undefined at a singular "
            "matrix (logabsdet = -inf, sign = 0); differentiate det instead (its derivative, "
            "the adjugate, exists there) or regularize the matrix"
        )
    return O.where(singular[..., None, None], np.eye(_val(a).shape[-1]), a)


def _nan_where_nan(t, ld):
    """``t`` with the matrices whose logabsdet is NaN (a NaN entry) all NaN, as IEEE
    arithmetic would make A^-T there (LAPACK's pivoting leaves some entries finite)."""
    bad = np.isnan(_val(ld))
    if not np.any(bad):
        return t
    return O.mul(t, np.where(bad, np.nan, 1.0)[..., None, None])


def _slogdet_vjp(x, y, g):
    a = _slogdet_check(x[0], y, g[1])
    return [_nan_where_nan(O.mul(_scalar_to_matrix(g[1]), _mT(inv(a))), y[1])]


def _slogdet_jvp(x, y, dx):
    a = _slogdet_check(x[0], y, dx[0])
    return [None, _trace(_solve(a, dx[0]))]


def slogdet(a):
    """``(sign, logabsdet)`` like NumPy; ``sign`` carries no gradient, ``logabsdet`` has the
    derivative ``A^-T``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.slogdet(a).logabsdet)(np.array([[-2.0]]))
    array([[-0.5]])
    """
    a = O.tensor_of(a)
    _square(a, "slogdet")
    s, ld = apply(
        "LinalgSlogdetBackward",
        [a],
        lambda av: list(np.linalg.slogdet(av)),
        _slogdet_vjp,
        _slogdet_jvp,
        nondiff=(0,),
    )
    return _SlogdetResult(s, ld)


# ---- cholesky ----------------------------------------------------------------------------------


def _phi(x):
    """Lower triangle with the diagonal halved."""
    n = x.shape[-1]
    return O.mul(x, np.tril(np.ones((n, n))) - 0.5 * np.eye(n))


def _cholesky_vjp(x, y, g):
    low = y[0]
    li = inv(low)
    p = _phi(O.matmul(_mT(low), g[0]))
    return [_sym(O.matmul(O.matmul(_mT(li), p), li))]


def _cholesky_jvp(x, y, dx):
    low = y[0]
    li = inv(low)
    return [O.matmul(low, _phi(O.matmul(O.matmul(li, dx[0]), _mT(li))))]


def cholesky(a, /, *, upper: bool = False) -> Tensor:
    """Cholesky factor of a symmetric positive definite matrix (the lower triangle of ``a``
    is read, or the upper one with ``upper=True``, and the gradient flows there).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.cholesky(a).sum())(np.array([[4.0]]))
    array([[0.25]])
    """
    a = O.tensor_of(a)
    _square(a, "cholesky")
    sym = _from_triangle(a, not upper)
    low = _cholesky_sym(sym)
    return _mT(low) if upper else low


def _cholesky_sym(sym):
    """The lower Cholesky factor of the symmetric Tensor ``sym``."""
    return apply(
        "LinalgCholeskyBackward",
        [sym],
        lambda sv: [np.linalg.cholesky(sv)],
        _cholesky_vjp,
        _cholesky_jvp,
    )[0]


# ---- eigh, eigvalsh ----------------------------------------------------------------------------


def _eigh_vjp(x, y, g):
    w, v = y
    gw, gv = g
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:
        _check_gaps(w, "eigh", "eigenvectors")
        t = O.mul(_gap_matrix(w), O.matmul(_mT(v), gv))
        inner = t if inner is None else O.add(inner, t)
    return [_sym(O.matmul(O.matmul(v, inner), _mT(v)))]


def _eigh_jvp(x, y, dx):
    w, v = y
    _check_gaps(w, "eigh", "eigenvectors")
    m = O.matmul(O.matmul(_mT(v), dx[0]), v)
    return [_diag(m), O.matmul(v, O.mul(_gap_matrix(w), m))]


def _eigh_sym(sym, uplo="L"):
    """Eigenvalues and eigenvectors of the symmetric Tensor ``sym``, computed by LAPACK from
    its triangle ``uplo``: the one NumPy reads on the caller's array, so the eigenvectors
    (whose signs depend on the triangle read) are NumPy's own."""
    w, v = apply(
        "LinalgEighBackward",
        [sym],
        lambda sv: list(np.linalg.eigh(sv, uplo)),
        _eigh_vjp,
        _eigh_jvp,
    )
    return w, v


def eigh(a, UPLO: str = "L"):  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, from the triangle
    ``UPLO``.  The eigenvectors' derivative is undefined at repeated eigenvalues: it raises
    LinAlgError there (eigenvalue-only results stay differentiable).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.eigh(a).eigenvalues[-1])(np.diag([1.0, 2.0]))
    array([[0., 0.],
           [0., 1.]])
    """
    a = O.tensor_of(a)
    _square(a, "eigh")
    _uplo(UPLO, "eigh")
    uplo = UPLO.upper()
    return _EighResult(*_eigh_sym(_from_triangle(a, uplo == "L"), uplo))


def _uplo(uplo, name):
    if uplo not in ("L", "U", "l", "u"):
        raise ValueError(f"numpy.linalg.{name}: UPLO argument must be 'L' or 'U'")


def _eigvalsh_vjp(x, y, g):
    _, v = _eigh_sym(x[0])
    return [O.matmul(O.mul(v, O.expand_dims(g[0], -2)), _mT(v))]


def _eigvalsh_jvp(x, y, dx):
    _, v = _eigh_sym(x[0])
    return [_diag(O.matmul(O.matmul(_mT(v), dx[0]), v))]


def eigvalsh(a, UPLO: str = "L") -> Tensor:  # noqa: N803 - NumPy's name
    """Eigenvalues of a symmetric matrix, differentiable also at repeated eigenvalues (first
    order; higher orders go through the eigenvectors and need distinct eigenvalues).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.eigvalsh(a).sum())(np.eye(2))
    array([[1., 0.],
           [0., 1.]])
    """
    a = O.tensor_of(a)
    _square(a, "eigvalsh")
    _uplo(UPLO, "eigvalsh")
    sym = _from_triangle(a, UPLO.upper() == "L")
    return apply(
        "LinalgEigvalshBackward",
        [sym],
        lambda sv: [np.linalg.eigvalsh(sv, UPLO.upper())],
        _eigvalsh_vjp,
        _eigvalsh_jvp,
    )[0]


# ---- svd ---------------------------------------------------------------------------------------


def _negligible(d, m, n):
    """Which of the nonnegative values ``d`` (singular values, |diag R|) are zero to working
    precision: at most max(m, n) * eps times the largest (NumPy's matrix_rank rule)."""
    top = np.max(d, axis=-1, keepdims=True, initial=0.0)
    return d <= max(m, n) * np.finfo(np.float64).eps * top


def _svd_checks(s, m, n, name="svd"):
    _check_gaps(s, name, "singular vectors", squared=True)
    if m != n and np.any(_negligible(_val(s), m, n)):
        raise LinAlgError(
            f"numpy.linalg.{name}: the derivative of the singular vectors of a "
            "non-square matrix is undefined at a zero singular value"
        )


def _svd_vjp(x, y, g):
    u, s, vh = y
    gu, gs, gvh = g
    m, n = x[0].shape[-2:]
    v = _mT(vh)
    s_row, s_col = O.expand_dims(s, -2), O.expand_dims(s, -1)
    terms = [] if gs is None else [_diag_embed(gs)]
    if gu is not None or gvh is not None:
        _svd_checks(s, m, n)
        f = _gap_matrix(s, squared=True)
    if gu is not None:
        xu = O.mul(f, O.matmul(_mT(u), gu))
        terms.append(O.mul(O.add(xu, _mT(xu)), s_row))
    if gvh is not None:
        gv = _mT(gvh)
        yv = O.mul(f, O.matmul(_mT(v), gv))
        terms.append(O.mul(s_col, O.add(yv, _mT(yv))))
    if not terms:
        return [None]
    j = terms[0]
    for t in terms[1:]:
        j = O.add(j, t)
    ga = O.matmul(O.matmul(u, j), vh)
    if m > n and gu is not None:
        proj = O.sub(gu, O.matmul(u, O.matmul(_mT(u), gu)))
        ga = O.add(ga, O.matmul(O.div(proj, s_row), vh))
    if n > m and gvh is not None:
        proj = O.sub(gv, O.matmul(v, O.matmul(_mT(v), gv)))
        ga = O.add(ga, O.matmul(u, O.div(_mT(proj), s_col)))
    return [ga]


def _svd_jvp(x, y, dx):
    u, s, vh = y
    da = dx[0]
    m, n = x[0].shape[-2:]
    _svd_checks(s, m, n)
    v = _mT(vh)
    s_row, s_col = O.expand_dims(s, -2), O.expand_dims(s, -1)
    ds_mat = O.matmul(O.matmul(_mT(u), da), v)
    f = _gap_matrix(s, squared=True)
    dss = O.mul(ds_mat, s_row)
    sds = O.mul(s_col, ds_mat)
    du = O.matmul(u, O.mul(f, O.add(dss, _mT(dss))))
    dv = O.matmul(v, O.mul(f, O.add(sds, _mT(sds))))
    if m > n:
        dav = O.matmul(da, v)
        du = O.add(du, O.div(O.sub(dav, O.matmul(u, O.matmul(_mT(u), dav))), s_row))
    if n > m:
        dahu = O.matmul(_mT(da), u)
        dv = O.add(dv, O.div(O.sub(dahu, O.matmul(v, O.matmul(_mT(v), dahu))), s_row))
    return [du, _diag(ds_mat), _mT(dv)]


def _svd_reduced(a):
    """U, s, Vh with k = min(M, N) singular triplets."""
    return apply("LinalgSvdBackward", [a], _svd_reduced_forward, _svd_vjp, _svd_jvp)


def _svd_reduced_forward(av):
    return list(np.linalg.svd(av, full_matrices=False))


def _svd_full(a):
    """U, s, Vh (k = min(M, N) triplets) and the extra columns of U (M > N) or rows of Vh
    (M < N) of LAPACK's full decomposition, all from one SVD; the extra ones are not unique,
    so a derivative reaching them raises."""
    return apply("LinalgSvdBackward", [a], _svd_full_forward, _svd_full_vjp, _svd_full_jvp)


def _svd_full_forward(av):
    m, n = av.shape[-2:]
    k = min(m, n)
    u, s, vh = np.linalg.svd(av, full_matrices=True)
    return [u[..., :, :k], s, vh[..., :k, :], u[..., :, k:] if m > n else vh[..., k:, :]]


def _svd_full_vjp(x, y, g):
    _complement_vjp(x, y[3:], g[3:])  # (the reverse sweep meets the extra vectors first)
    return _svd_vjp(x, y[:3], g[:3])


def _svd_full_jvp(x, y, dx):
    _svd_jvp(x, y[:3], dx)
    return _complement_jvp(x, y[3:], dx)


def _svdvals_vjp(x, y, g):
    u, _, vh = _svd_reduced(x[0])
    return [O.matmul(O.mul(u, O.expand_dims(g[0], -2)), vh)]


def _svdvals_jvp(x, y, dx):
    u, _, vh = _svd_reduced(x[0])
    return [_diag(O.matmul(O.matmul(_mT(u), dx[0]), _mT(vh)))]


def _svdvals(a):
    return apply(
        "LinalgSvdvalsBackward",
        [a],
        lambda av: [np.linalg.svd(av, compute_uv=False)],
        _svdvals_vjp,
        _svdvals_jvp,
    )[0]


def _complement_vjp(x, y, g):
    if g[0] is not None and np.any(_val(g[0])):
        raise LinAlgError(
            "numpy.linalg.svd: full_matrices=True on a non-square matrix returns extra "
            "singular vectors that are not unique, so a gradient through them is undefined; "
            "use full_matrices=False"
        )
    return [None]


def _complement_jvp(x, y, dx):
    raise LinAlgError(
        "numpy.linalg.svd: forward mode through full_matrices=True on a "
        "non-square matrix is undefined (the extra singular vectors are not "
        "unique); use full_matrices=False"
    )


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition like NumPy.  ``compute_uv=False`` and
    ``full_matrices=False`` are differentiable everywhere the derivative exists (distinct,
    and for non-square input nonzero, singular values; otherwise LinAlgError).  With
    ``full_matrices=True`` on a non-square matrix, the extra columns of ``U`` (or rows of
    ``Vh``) are not unique: a gradient reaching them raises.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.svd(a, compute_uv=False)[0])(np.diag([3.0, 1.0]))
    array([[1., 0.],
           [0., 0.]])
    """
    a = O.tensor_of(a)
    if a.ndim < 2:
        raise LinAlgError(
            f"numpy.linalg.svd: {a.ndim}-dimensional array given. Array must "
            "be at least two-dimensional"
        )
    if hermitian:
        raise TypeError(
            "numpy.linalg.svd: hermitian=True is not supported on tapegrad "
            "Tensors; leave it out (the result is the same up to signs)"
        )
    if not compute_uv:
        return _svdvals(a)
    m, n = a.shape[-2:]
    if not full_matrices or m == n:
        return _SVDResult(*_svd_reduced(a))
    ur, sr, vhr, extra = _svd_full(a)
    if m > n:
        return _SVDResult(O.concatenate([ur, extra], -1), sr, vhr)
    return _SVDResult(ur, sr, O.concatenate([vhr, extra], -2))


# ---- qr ----------------------------------------------------------------------------------------


def _rsolve(b, r):
    """b R^-1 for upper triangular R (batched)."""
    return _mT(_solve(_mT(r), _mT(b)))


def _qr_forward(av):
    return list(np.linalg.qr(av, mode="reduced"))


def _check_qr_rank(a, r):
    """The derivative of QR solves with R's leading square block: refuse a numerically
    singular one (an exact test would let 1e14-sized gradients through)."""
    rv = _val(r)
    m, n = a.shape[-2:]
    k = min(rv.shape[-2:])
    d = np.abs(np.diagonal(rv[..., :k, :k], axis1=-2, axis2=-1))
    if np.any(_negligible(d, m, n)):
        raise LinAlgError(
            "numpy.linalg.qr: the derivative needs a full-rank leading block of R, and this "
            f"matrix is rank-deficient to working precision (|diag R| = {d.tolist()}); "
            "perturb the matrix or differentiate a quantity that does not need Q and R"
        )


def _qr_vjp(x, y, g):
    q, r = y
    _check_qr_rank(x[0], r)
    gq, gr = g
    m = None
    if gr is not None:
        m = O.matmul(gr, _mT(r))
    if gq is not None:
        t = O.matmul(_mT(q), gq)
        m = O.neg(t) if m is None else O.sub(m, t)
    n = m.shape[-1]
    upper = np.triu(np.ones((n, n)))
    k = O.add(O.mul(m, upper), _mT(O.mul(m, upper - np.eye(n))))
    lhs = O.matmul(q, k)
    if gq is not None:
        lhs = O.add(gq, lhs)
    return [_mT(_solve(r, _mT(lhs)))]  # lhs R^-T


def _qr_jvp(x, y, dx):
    q, r = y
    _check_qr_rank(x[0], r)
    n = r.shape[-1]
    dar = _rsolve(dx[0], r)
    c = O.matmul(_mT(q), dar)
    low = O.mul(c, np.tril(np.ones((n, n)), -1))
    omega = O.sub(low, _mT(low))
    dq = O.add(O.matmul(q, O.sub(omega, c)), dar)
    dr = O.matmul(O.sub(c, omega), r)
    return [dq, dr]


def qr(a, mode: str = "reduced"):
    """QR decomposition.  Differentiable in modes 'reduced' and 'r' (and 'complete' when it
    equals 'reduced', i.e. M <= N); 'complete' on a tall matrix adds columns of Q that are
    not unique, and 'raw' returns LAPACK's internal form: both are refused on Tensors.  The
    derivative needs a nonsingular leading square block of R (LinAlgError otherwise).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.qr(a).R[0, 0])(np.array([[3.0], [4.0]]))
    array([[-0.6],
           [-0.8]])
    """
    a = O.tensor_of(a)
    if a.ndim < 2:
        raise LinAlgError(
            f"numpy.linalg.qr: {a.ndim}-dimensional array given. Array must be "
            "at least two-dimensional"
        )
    m, n = a.shape[-2:]
    if mode == "raw" or (mode == "complete" and m > n):
        raise TypeError(
            f"numpy.linalg.qr: mode={mode!r} is not differentiable on tapegrad "
            "Tensors ("
            + (
                "LAPACK's raw Householder form"
                if mode == "raw"
                else "the extra columns of Q are not unique"
            )
            + "); use mode='reduced'"
        )
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"numpy.linalg.qr: unrecognized mode {mode!r}")
    if m >= n:
        q, r = apply("LinalgQrBackward", [a], _qr_forward, _qr_vjp, _qr_jvp)
    else:  # Q and R's left block are those of a's left square block
        left = O.getitem(a, (Ellipsis, slice(None), slice(0, m)))
        q, r1 = apply("LinalgQrBackward", [left], _qr_forward, _qr_vjp, _qr_jvp)
        r2 = O.matmul(_mT(q), O.getitem(a, (Ellipsis, slice(None), slice(m, None))))
        r = O.concatenate([r1, r2], -1)
    return r if mode == "r" else _QRResult(q, r)


# ---- pinv, lstsq -------------------------------------------------------------------------------


def _pinv_vjp_terms(a, p, g):
    pt = _mT(p)
    gt = _mT(g)
    t1 = O.neg(O.matmul(O.matmul(pt, g), pt))
    m2 = O.matmul(O.matmul(gt, p), pt)
    t2 = O.sub(m2, O.matmul(a, O.matmul(p, m2)))
    n3 = O.matmul(O.matmul(pt, p), gt)
    t3 = O.sub(n3, O.matmul(O.matmul(n3, p), a))
    return O.add(O.add(t1, t2), t3)


def _pinv_jvp_terms(a, p, da):
    pt = _mT(p)
    dat = _mT(da)
    t1 = O.neg(O.matmul(O.matmul(p, da), p))
    m2 = O.matmul(O.matmul(p, pt), dat)
    t2 = O.sub(m2, O.matmul(O.matmul(m2, a), p))
    n3 = O.matmul(dat, O.matmul(pt, p))
    t3 = O.sub(n3, O.matmul(p, O.matmul(a, n3)))
    return O.add(O.add(t1, t2), t3)


def _cutoff_error(name):
    return LinAlgError(
        f"numpy.linalg.{name}: rcond / rtol cut off a singular value that is not zero to "
        "working precision; the pseudo-inverse of the truncated matrix has no derivative "
        "by this formula (it holds at constant rank); lower rcond, or regularize"
    )


def _pinv_rules(rcond, name):
    """VJP and JVP of pinv at constant rank: they hold where the singular values ``rcond``
    cuts off (if any) are zero to working precision, so the value is the pseudo-inverse of
    ``a`` (checked at the values the rules are called with)."""

    def exact(a):
        av = _val(a)
        if not _cuts_only_zeros(np.linalg.svd(av, compute_uv=False), rcond, *av.shape[-2:]):
            raise _cutoff_error(name)

    def vjp(x, y, g):
        exact(x[0])
        return [_pinv_vjp_terms(x[0], y[0], g[0])]

    def jvp(x, y, dx):
        exact(x[0])
        return [_pinv_jvp_terms(x[0], y[0], dx[0])]

    return vjp, jvp


def _cuts_only_zeros(s, rcond, m, n):
    """Do the singular values ``s`` below rcond times the largest all vanish to working
    precision (NumPy's matrix_rank rule)?"""
    cut = np.asarray(rcond)[..., None] * np.max(s, axis=-1, keepdims=True, initial=0.0)
    return bool(np.all((s > cut) | _negligible(s, m, n)))


_UNSET = object()


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=_UNSET) -> Tensor:
    """Moore-Penrose pseudo-inverse, differentiable at constant rank (Golub and Pereyra's
    formula, as JAX): at a rank-deficient matrix the derivative is the one along matrices of
    the same rank (the singular values NumPy cuts off stay zero); a perturbation that raises
    the rank makes the pseudo-inverse jump, and has no derivative.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.pinv(a).sum())(np.array([[2.0], [0.0]]))
    array([[-0.25],
           [ 0.25]])
    """
    a = O.tensor_of(a)
    if hermitian:  # NumPy's eigh reads the lower triangle: so do the value and the gradient
        _square(a, "pinv")
        a = _from_triangle(a, lower=True)
    kw = {} if rtol is _UNSET else {"rtol": rtol}

    def forward(av):
        return [np.linalg.pinv(av, rcond=rcond, hermitian=hermitian, **kw)]

    cut = rcond
    if cut is None:  # NumPy's cutoff rule
        cut = (
            1e-15
            if rtol is _UNSET
            else (max(a.shape[-2:]) * np.finfo(np.float64).eps if rtol is None else rtol)
        )
    vjp, jvp = _pinv_rules(cut, "pinv")
    return apply("LinalgPinvBackward", [a], forward, vjp, jvp)[0]


def _lstsq_rules(rcond):
    def exact(a):
        av = _val(a)
        if not _cuts_only_zeros(np.linalg.svd(av, compute_uv=False), rcond, *av.shape):
            raise _cutoff_error("lstsq")

    def vjp(x, y, g):
        exact(x[0])
        a, b = x
        p = pinv(a)
        gx = g[0]
        return [_pinv_vjp_terms(a, p, O.matmul(gx, _mT(b))), O.matmul(_mT(p), gx)]

    def jvp(x, y, dx):
        exact(x[0])
        a, b = x
        da, db = dx
        p = pinv(a)
        out = None if db is None else O.matmul(p, db)
        if da is not None:
            t = O.matmul(_pinv_jvp_terms(a, p, da), b)
            out = t if out is None else O.add(out, t)
        return [out]

    return vjp, jvp


def lstsq(a, b, rcond=None):
    """Least-squares solution like NumPy: ``(x, residuals, rank, s)``, x the minimum-norm
    solution pinv(a) b.  The gradient flows through ``x``, ``residuals`` and ``s``; at a
    rank-deficient ``a`` it is the derivative at constant rank (see ``pinv``); ``residuals``
    are recomputed from ``x`` (equal to NumPy's up to rounding).

    >>> import numpy as np, tapegrad as tg
    >>> a = np.array([[1.0], [1.0]])
    >>> tg.grad(lambda b: np.linalg.lstsq(a, b)[0][0])(np.array([1.0, 3.0]))
    array([0.5, 0.5])
    """
    a, b = O.tensor_of(a), O.tensor_of(b)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise LinAlgError(
            f"numpy.linalg.lstsq: a must be 2-D and b 1-D or 2-D, got shapes "
            f"{a.shape} and {b.shape}"
        )
    m, n = a.shape
    b2 = O.reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b

    def forward(av, bv):
        x, _, rank, _ = np.linalg.lstsq(av, bv, rcond=rcond)
        return [x.reshape(n, bv.shape[-1]), np.asarray(rank)]

    rc = max(m, n) * np.finfo(np.float64).eps if rcond is None else rcond
    vjp, jvp = _lstsq_rules(rc)
    xt, rank = apply("LinalgLstsqBackward", [a, b2], forward, vjp, jvp, nondiff=(1,))
    rank = int(rank)  # a trace keeps it as a guard: the residuals' shape depends on it
    if rank == n and m > n:
        r = O.sub(b2, O.matmul(a, xt))
        res = O.sum(O.mul(r, r), 0)
    else:
        res = np.empty(0)
    return (O.reshape(xt, (n,)) if b.ndim == 1 else xt), res, rank, _svdvals(a)


# ---- norm, matrix_power, multi_dot -------------------------------------------------------------


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002 - NumPy's name
    """np.linalg.norm: every vector and matrix norm (``2``, ``-2`` and ``'nuc'`` through the
    singular values; their derivative needs distinct extreme singular values only through
    those values themselves).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.norm(a, 'nuc'))(np.diag([3.0, -1.0]))
    array([[ 1.,  0.],
           [ 0., -1.]])
    """
    x = O.tensor_of(x)
    if axis is not None and not isinstance(axis, tuple):
        axis = operator.index(axis)  # NumPy's: None, an integer or a tuple of integers
    if isinstance(axis, tuple) and len(axis) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")  # NumPy's refusal
    matrix = (axis is None and ord is not None and x.ndim == 2) or (
        axis is not None and not isinstance(axis, int) and len(axis) == 2
    )
    if matrix and ord not in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        raise ValueError("Invalid norm order for matrices.")
    if isinstance(ord, str) and not matrix and (axis is not None or x.ndim == 1):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    axes = (0, 1) if axis is None or not matrix else _norm_axes(axis, x.ndim)
    if matrix and x.size == 0 and ord in (1, -1, 2, -2, np.inf, -np.inf):
        # NumPy's value (zeros; or its error, for a minimum over nothing); the gradient is
        # empty as the matrices are
        np.linalg.norm(np.zeros(x.shape), ord, axis, keepdims)
        return O.sum(x, axes, keepdims)
    if not (matrix and ord in (2, -2, "nuc")):
        return contract.norm(x, ord, axis, keepdims)
    if axes[0] == axes[1]:
        raise ValueError("Duplicate axes given.")
    rest = [d for d in range(x.ndim) if d not in axes]
    s = _svdvals(O.transpose(x, rest + list(axes)))
    r = O.sum(s, -1) if ord == "nuc" else (O.amax if ord == 2 else O.amin)(s, -1)
    if keepdims:
        shape = list(x.shape)
        for d in axes:
            shape[d] = 1
        r = O.reshape(r, tuple(shape))
    return r


def _norm_axes(axis, ndim):
    """A matrix norm's pair of axes, checked as NumPy does (a wrapped-around axis would
    silently take the norm of another pair)."""
    axes = tuple(operator.index(v) for v in axis)
    for v in axes:
        if not -ndim <= v < ndim:
            raise np.exceptions.AxisError(v, ndim)
    return tuple(v % ndim for v in axes)


def matrix_power(a, n: int) -> Tensor:
    """``a`` to the integer power ``n`` (negative powers through ``inv``), by repeated
    squaring with matmul.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.matrix_power(a, -2).sum())(np.array([[2.0]]))
    array([[-0.25]])
    """
    a = O.tensor_of(a)
    _square(a, "matrix_power")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if n == 0:  # the identity whatever a holds (a * 0 would turn an inf entry into nan)
        return Tensor._const(np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    out, base = None, a
    while True:
        if n & 1:
            out = base if out is None else O.matmul(out, base)
        n >>= 1
        if not n:
            return out
        base = O.matmul(base, base)


def multi_dot(arrays: Sequence, *, out=None) -> Tensor:
    """Chain of matrix products; a 1-D first (last) operand is a row (column) vector.

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda a: np.linalg.multi_dot([a, np.eye(2), np.ones(2)]).sum())(np.eye(2))
    array([[1., 1.],
           [1., 1.]])
    """
    if out is not None:
        raise TypeError(
            "numpy.linalg.multi_dot: out= is not supported on tapegrad Tensors "
            "(it would drop the gradient)"
        )
    ops = [O.tensor_of(x) for x in arrays]
    if len(ops) < 2:
        raise ValueError("Expecting at least two arrays.")
    acc = ops[0]
    for x in ops[1:]:
        acc = O.matmul(acc, x)
    return acc


_NAMES = (
    "inv",
    "pinv",
    "det",
    "slogdet",
    "solve",
    "lstsq",
    "cholesky",
    "qr",
    "eigh",
    "eigvalsh",
    "svd",
    "norm",
    "matrix_power",
    "multi_dot",
)
FUNCTIONS = {getattr(np.linalg, name): globals()[name] for name in _NAMES}
