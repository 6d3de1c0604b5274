"""np.linalg on Tensors: values against NumPy, gradients, JVPs and second derivatives against
central finite differences, batching, plain arrays in and out, and the refusals (singular
matrices, repeated eigen/singular values, non-unique factor columns)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

RNG = np.random.default_rng(7)
EPS = 1e-6


def _rand(*shape):
    return RNG.standard_normal(shape)


def _well(n, batch=()):
    """Well-conditioned general matrices."""
    return _rand(*batch, n, n) + 3.0 * np.eye(n)


def _spd(n, batch=()):
    x = _rand(*batch, n, n)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sym_sep(n, batch=()):
    """Symmetric with well-separated eigenvalues."""
    q, _ = np.linalg.qr(_rand(*batch, n, n))
    w = np.arange(1, n + 1) * 1.5 - 2.0
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def _flat(out):
    """Outputs (Tensor, array or tuple of them) as one flat float array."""
    if isinstance(out, tuple):
        return np.concatenate([_flat(o) for o in out])
    v = out.numpy() if isinstance(out, tg.Tensor) else out
    return np.ravel(np.asarray(v, dtype=float))


def _scalarize(f, args):
    """f(*args) made scalar with fixed random weights (each output counts)."""
    w = _rand(_flat(f(*args)).size)

    def s(*a):
        out = f(*a)
        outs = out if isinstance(out, tuple) else (out,)
        total, k = 0.0, 0
        for o in outs:
            n = int(np.size(o.data if isinstance(o, tg.Tensor) else o))
            total = total + (o * w[k : k + n].reshape(np.shape(o))).sum()
            k += n
        return total

    return s


def _fd(fun, x, v):
    return (fun(x + EPS * v) - fun(x - EPS * v)) / (2 * EPS)


def _close(got, want, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check(f, *args, second=False):
    """Reverse mode (grad), forward mode (jvp) and, with ``second``, grad-of-grad and
    forward-over-reverse against central differences, for every argument."""
    s = _scalarize(f, args)
    n = len(args)
    grads = tg.grad(s, argnums=tuple(range(n)))(*args)
    vs = [_rand(*np.shape(x)) for x in args]
    for k in range(n):

        def along(t, k=k):
            a = list(args)
            a[k] = args[k] + t * vs[k]
            return float(s(*a))

        _close(np.sum(grads[k] * vs[k]), _fd(along, 0.0, 1.0))
    # forward mode: all arguments moved at once
    out, tan = tg.jvp(f, tuple(args), tuple(vs))

    def moved(t):
        return _flat(f(*[x + t * v for x, v in zip(args, vs, strict=True)]))

    _close(_flat(tan), _fd(moved, 0.0, 1.0))
    _close(_flat(out), _flat(f(*args)))
    if second:
        # grad of grad (reverse over reverse, create_graph) along v against FD of the gradient
        hv = tg.hvp(s, tuple(args), tuple(vs))
        hv = hv if n > 1 else (hv,)

        def g_along(t):
            gs = tg.grad(s, argnums=tuple(range(n)))(
                *[x + t * v for x, v in zip(args, vs, strict=True)]
            )
            return np.concatenate([np.ravel(g) for g in gs])

        _close(
            np.concatenate([np.ravel(h) for h in hv]), _fd(g_along, 0.0, 1.0), rtol=1e-5, atol=1e-6
        )

        # forward over reverse on Tensors: jvp of grad inside grad (nested forward mode)
        def dir_jvp(*a):
            _, t = tg.jvp(lambda *b: s(*b), tuple(a), tuple(vs))
            return t

        gg = tg.grad(dir_jvp, argnums=tuple(range(n)))(*args)
        _close(
            np.concatenate([np.ravel(g) for g in gg]),
            np.concatenate([np.ravel(h) for h in hv]),
            rtol=1e-7,
            atol=1e-9,
        )


# ---- derivatives ------------------------------------------------------------------------------


def test_inv():
    check(np.linalg.inv, _well(3), second=True)
    check(np.linalg.inv, _well(2, (2,)))


def test_det_slogdet():
    check(np.linalg.det, _well(3), second=True)
    check(np.linalg.det, _well(2, (3,)))
    check(lambda a: np.linalg.slogdet(a).logabsdet, _well(3), second=True)
    a = _well(3) - 6.0 * np.eye(3)
    sign, logdet = np.linalg.slogdet(tg.tensor(a, requires_grad=True))
    ref = np.linalg.slogdet(a)
    assert not sign.requires_grad and sign.item() == ref.sign
    _close(logdet.item(), ref.logabsdet)
    check(lambda a: np.linalg.slogdet(a)[1], _well(2, (2,)))


def test_solve():
    a, b, bm = _well(3), _rand(3), _rand(3, 2)
    check(np.linalg.solve, a, b, second=True)
    check(np.linalg.solve, a, bm, second=True)
    check(np.linalg.solve, _well(3, (2,)), _rand(2, 3, 2))
    check(np.linalg.solve, _well(3, (2,)), b)  # NumPy 2: 1-D b broadcasts
    check(lambda b: tnp.linalg.solve(a, b), bm)  # a constant


def test_cholesky():
    check(np.linalg.cholesky, _spd(3), second=True)
    check(np.linalg.cholesky, _spd(2, (2,)))
    check(lambda a: np.linalg.cholesky(a, upper=True), _spd(3))
    # only the triangle LAPACK reads matters, and only it gets a gradient
    a = _spd(3)
    g = tg.grad(lambda a: np.linalg.cholesky(a).sum())(a)
    assert np.all(np.triu(g, 1) == 0)


def test_eigh_eigvalsh():
    a = _sym_sep(3)
    check(lambda a: np.linalg.eigh(a).eigenvalues, a, second=True)
    # eigenvectors up to sign: fix the sign convention through a sign-invariant quantity
    check(lambda a: np.linalg.eigh(a).eigenvectors ** 2, a, second=True)
    check(lambda a: np.linalg.eigh(a, UPLO="U")[1] ** 2, a)
    check(lambda a: np.linalg.eigh(a)[1] ** 2, _sym_sep(3, (2,)))
    check(np.linalg.eigvalsh, a, second=True)
    check(lambda a: np.linalg.eigvalsh(a, "U"), _sym_sep(3, (2,)))
    g = tg.grad(lambda a: np.linalg.eigvalsh(a)[0])(_rand(3, 3))
    assert np.all(np.triu(g, 1) == 0)


@pytest.mark.parametrize("uplo", ["L", "U", "u"])
def test_eigh_eigenvectors_have_numpys_signs_for_either_triangle(uplo):
    # LAPACK's eigenvector signs depend on the triangle it reads: eigh(a, "U") on a Tensor
    # used to read the lower triangle of the mirrored matrix, so its eigenvectors could have
    # other signs than NumPy's on the same array, and their derivatives were those of another
    # function than f's. The raw (signed) eigenvectors are checked here, not a square.
    # well-separated eigenvalues in the triangle read, noise in the other one
    unread = np.triu(_rand(2, 4, 4), 1) if uplo == "L" else np.tril(_rand(2, 4, 4), -1)
    a = _sym_sep(4, (2,)) + unread
    t = tg.tensor(a, requires_grad=True)
    w, v = np.linalg.eigh(t, uplo)
    _close(w.data, np.linalg.eigh(a, uplo)[0])
    _close(v.data, np.linalg.eigh(a, uplo)[1])
    _close(np.linalg.eigvalsh(t, uplo).data, np.linalg.eigvalsh(a, uplo))
    check(lambda a: np.linalg.eigh(a, uplo)[1], a)
    check(lambda a: np.linalg.eigh(a, UPLO=uplo).eigenvectors, a[0], second=True)


def test_svd():
    for shape in [(3, 3), (4, 2), (2, 4)]:
        a = _rand(*shape)
        check(lambda a: np.linalg.svd(a, compute_uv=False), a, second=shape == (3, 3))
        check(
            lambda a: tuple(
                x**2
                for x in (
                    np.linalg.svd(a, full_matrices=False)[0],
                    np.linalg.svd(a, full_matrices=False)[2],
                )
            ),
            a,
            second=shape == (4, 2),
        )
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        # U diag(s) Vh reconstructs a: sign conventions cancel
        check(
            lambda a: (lambda r: (r.U * r.S[..., None, :]) @ r.Vh)(
                np.linalg.svd(a, full_matrices=False)
            ),
            a,
        )
    check(lambda a: np.linalg.svd(a, compute_uv=False), _rand(2, 3, 2))


def test_svd_full_matrices():
    a = _rand(4, 2)
    t = tg.tensor(a, requires_grad=True)
    u, s, vh = np.linalg.svd(t)
    ref = np.linalg.svd(a)
    _close(u.data, ref.U, rtol=0, atol=1e-12)
    _close(s.data, ref.S, rtol=0, atol=1e-12)
    # gradient through the unique part works ...
    g = tg.grad(lambda a: (np.linalg.svd(a)[0][:, :2] ** 2).sum() + np.linalg.svd(a)[1].sum())(a)
    g_red = tg.grad(
        lambda a: (
            (np.linalg.svd(a, full_matrices=False)[0] ** 2).sum()
            + np.linalg.svd(a, full_matrices=False)[1].sum()
        )
    )(a)
    _close(g, g_red, rtol=1e-12, atol=1e-12)
    # ... through the arbitrary extra columns it raises
    with pytest.raises(np.linalg.LinAlgError, match="full_matrices=False"):
        tg.grad(lambda a: np.linalg.svd(a)[0].sum())(a)
    check(lambda a: np.linalg.svd(a)[1], _rand(3, 3))  # square: full == reduced


def test_qr():
    for shape in [(3, 3), (4, 2), (2, 4)]:
        check(
            lambda a: tuple(np.linalg.qr(a)), _rand(*shape) + np.eye(*shape), second=shape == (4, 2)
        )
    check(lambda a: np.linalg.qr(a, mode="r"), _rand(2, 3, 2))
    check(lambda a: tuple(np.linalg.qr(a, mode="complete")), _rand(2, 3))
    with pytest.raises(TypeError, match="mode='complete'"):
        np.linalg.qr(tg.tensor(_rand(3, 2), requires_grad=True), mode="complete")
    with pytest.raises(TypeError, match="mode='raw'"):
        np.linalg.qr(tg.tensor(_rand(3, 2), requires_grad=True), mode="raw")


def test_pinv_lstsq():
    check(np.linalg.pinv, _rand(4, 2), second=True)
    check(np.linalg.pinv, _rand(2, 4))
    check(np.linalg.pinv, _rand(2, 3, 2))
    a, b = _rand(5, 3), _rand(5)
    check(lambda a, b: np.linalg.lstsq(a, b)[0], a, b, second=True)
    check(lambda a, b: np.linalg.lstsq(a, b)[1], a, _rand(5, 2))
    check(lambda a, b: np.linalg.lstsq(a, b)[0], _rand(2, 4), _rand(2))
    check(lambda a: np.linalg.lstsq(a, b)[3], a)
    x, res, rank, s = np.linalg.lstsq(tg.tensor(a, requires_grad=True), b)
    ref = np.linalg.lstsq(a, b)
    _close(x.data, ref[0], rtol=1e-12)
    _close(res.data, ref[1], rtol=1e-10)
    assert rank == ref[2]
    _close(s.data, ref[3], rtol=1e-12)
    # a cutoff that drops a singular value that is not zero: NumPy's value, no derivative
    d = np.diag([1.0, 0.5])
    p = np.linalg.pinv(tg.tensor(d, requires_grad=True), rcond=0.9)
    np.testing.assert_array_equal(p.data, np.linalg.pinv(d, rcond=0.9))
    with pytest.raises(np.linalg.LinAlgError, match="working precision"):
        tg.jvp(lambda a: np.linalg.pinv(a, rtol=0.9), (d,), (d,))
    with pytest.raises(np.linalg.LinAlgError, match="working precision"):
        tg.grad(lambda a: np.linalg.lstsq(a, np.ones(2), rcond=0.9)[0].sum())(d)


def _rank_two(t, dirs):
    """A 5x4 matrix of rank two along a curve t -> U(t) diag(s(t)) V(t)^T (rank kept)."""
    rng_ = np.random.default_rng(3)
    U, s, V = rng_.normal(size=(5, 2)), np.array([2.0, 0.7]), rng_.normal(size=(4, 2))
    dU, ds, dV = dirs
    return (U + t * dU) @ np.diag(s + t * ds) @ (V + t * dV).T


@pytest.mark.parametrize("which", ["pinv", "lstsq x", "lstsq residual-free second order"])
def test_pinv_and_lstsq_are_differentiated_at_constant_rank(which):
    """As JAX: at a rank-deficient matrix, the derivative along matrices of the same rank
    (checked against differences along a rank-two curve, reverse and forward mode)."""
    rng_ = np.random.default_rng(4)
    dirs = (rng_.normal(size=(5, 2)), rng_.normal(size=2), rng_.normal(size=(4, 2)))
    W, b = rng_.normal(size=(4, 5)), rng_.normal(size=5)
    if which == "pinv":
        f = lambda a: np.sum(W * np.linalg.pinv(a))  # noqa: E731
    elif which == "lstsq x":
        f = lambda a: np.sum(np.linalg.lstsq(a, b)[0] * W[:, 0])  # noqa: E731
    else:
        f = lambda a: np.sum(np.linalg.pinv(a) ** 2)  # noqa: E731
    a0 = _rank_two(0.0, dirs)
    assert np.linalg.matrix_rank(a0) == 2
    da = (_rank_two(1e-6, dirs) - _rank_two(-1e-6, dirs)) / 2e-6  # the curve's tangent
    num = (f(_rank_two(1e-6, dirs)) - f(_rank_two(-1e-6, dirs))) / 2e-6
    assert np.sum(tg.grad(f)(a0) * da) == pytest.approx(num, rel=1e-6)
    assert tg.jvp(f, (a0,), (da,))[1] == pytest.approx(num, rel=1e-6)
    if which.endswith("second order"):  # d/dt <grad f(A(t)), da>: the Hessian along da
        g = lambda t: np.sum(tg.grad(f)(_rank_two(t, dirs)) * da)  # noqa: E731
        h = lambda a: np.sum(tg.grad(f)(a) * da)  # noqa: E731
        want = (g(1e-5) - g(-1e-5)) / 2e-5
        assert np.sum(tg.grad(h)(a0) * da) == pytest.approx(want, rel=1e-5)
        assert np.sum(tg.hvp(f, (a0,), (da,)) * da) == pytest.approx(want, rel=1e-5)


def test_norm():
    a = _rand(3, 4)
    for ord_ in [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]:
        check(lambda a, o=ord_: np.linalg.norm(a, o), a)
        _close(tnp.linalg.norm(tg.tensor(a), ord_).item(), np.linalg.norm(a, ord_), rtol=1e-13)
    b = _rand(2, 3, 4)
    for ord_ in ["nuc", 2, -2]:
        for axis in [(1, 2), (2, 0)]:
            got = np.linalg.norm(tg.tensor(b), ord_, axis, keepdims=True)
            _close(got.data, np.linalg.norm(b, ord_, axis, keepdims=True), rtol=1e-13)
            check(lambda b, o=ord_, ax=axis: np.linalg.norm(b, o, ax), b)
    v = _rand(5)
    for ord_ in [None, 1, 2, 3, 0.5, np.inf, -np.inf]:
        check(lambda v, o=ord_: np.linalg.norm(v, o), v)
    check(lambda b: np.linalg.norm(b, axis=1, keepdims=True), b)
    check(lambda a: np.linalg.norm(a, "nuc"), _rand(3, 3), second=True)
    with pytest.raises(ValueError, match="Invalid norm order"):
        np.linalg.norm(tg.tensor(a, requires_grad=True), 3)


def test_matrix_power_multi_dot():
    a = _well(3)
    for n in [0, 1, 2, 3, 5, -1, -3]:
        check(lambda a, n=n: np.linalg.matrix_power(a, n), a)
        _close(
            np.linalg.matrix_power(tg.tensor(a), n).data,
            np.linalg.matrix_power(a, n),
            rtol=1e-12,
            atol=1e-14,
        )
    check(lambda a: np.linalg.matrix_power(a, 3), _well(2, (2,)), second=True)
    x, y, z = _rand(3), _rand(3, 4), _rand(4)
    check(lambda x, y, z: np.linalg.multi_dot([x, y, z]), x, y, z)
    check(lambda y: np.linalg.multi_dot([y.T, y, y.T]), y)


# ---- values, plain arrays, refusals, trace -----------------------------------------------------


def test_plain_arrays_return_numpy_results():
    a, s = _well(3), _spd(3)
    for name, args in [
        ("inv", (a,)),
        ("det", (a,)),
        ("solve", (a, _rand(3))),
        ("cholesky", (s,)),
        ("eigvalsh", (s,)),
        ("pinv", (a,)),
        ("matrix_power", (a, -2)),
        ("norm", (a, "nuc")),
    ]:
        got = getattr(tnp.linalg, name)(*args)
        want = getattr(np.linalg, name)(*args)
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)
    for name in ["slogdet", "eigh", "svd", "qr"]:
        got, want = getattr(tnp.linalg, name)(a), getattr(np.linalg, name)(a)
        assert type(got) is type(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_tensor_values_match_numpy():
    a, s = _well(3, (2,)), _spd(3)
    t = tg.tensor(a, requires_grad=True)
    _close(np.linalg.inv(t).data, np.linalg.inv(a), rtol=0, atol=0)
    _close(np.linalg.det(t).data, np.linalg.det(a), rtol=0, atol=0)
    _close(
        np.linalg.cholesky(tg.tensor(s, requires_grad=True)).data,
        np.linalg.cholesky(s),
        rtol=0,
        atol=0,
    )
    w, v = np.linalg.eigh(tg.tensor(s, requires_grad=True))
    _close(w.data, np.linalg.eigh(s)[0], rtol=0, atol=0)
    _close(v.data, np.linalg.eigh(s)[1], rtol=0, atol=0)
    assert isinstance(np.linalg.slogdet(t), type(np.linalg.slogdet(a)))


def test_singular_raises_linalgerror():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    t = tg.tensor(sing, requires_grad=True)
    for fn in [np.linalg.inv, lambda a: np.linalg.solve(a, np.ones(2))]:
        with pytest.raises(np.linalg.LinAlgError):
            fn(t)
    # slogdet has a value there, but its derivative is unbounded (det's is the adjugate)
    with pytest.raises(np.linalg.LinAlgError):
        tg.grad(lambda a: np.linalg.slogdet(a)[1])(sing)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(tg.tensor(-np.eye(2), requires_grad=True))


def test_repeated_values_documented():
    # eigenvectors at a repeated eigenvalue: no derivative, a clear error (never a number)
    eye = np.eye(3)
    with pytest.raises(np.linalg.LinAlgError, match="repeated"):
        tg.grad(lambda a: (np.linalg.eigh(a)[1] ** 2).sum())(eye)
    with pytest.raises(np.linalg.LinAlgError, match="repeated"):
        tg.jvp(lambda a: np.linalg.eigh(a)[1], (eye,), (_rand(3, 3),))
    # eigenvalue-only quantities stay differentiable at first order
    _close(tg.grad(lambda a: np.linalg.eigvalsh(a).sum())(eye), eye)
    _close(tg.grad(lambda a: np.linalg.eigh(a)[0].sum())(eye), eye)
    with pytest.raises(np.linalg.LinAlgError, match="repeated"):
        tg.grad(lambda a: (np.linalg.svd(a)[0] ** 2).sum())(np.diag([2.0, 2.0, 1.0]))
    _close(
        tg.grad(lambda a: np.linalg.svd(a, compute_uv=False).sum())(np.diag([2.0, 2.0])), np.eye(2)
    )


def test_create_graph_backward():
    a = tg.tensor(_well(3), requires_grad=True)
    y = np.linalg.det(a)
    (g,) = tg.autograd.grad(y, a, create_graph=True)
    (h,) = tg.autograd.grad((g * g).sum(), a)

    def gg(x):
        gx = tg.grad(np.linalg.det)(x)
        return float((gx * gx).sum())

    v = _rand(3, 3)
    _close(np.sum(h.data * v), _fd(lambda t: gg(a.data + t * v), 0.0, 1.0), rtol=1e-5)


def test_hessian_of_logdet():
    a = _spd(2)
    h = tg.hessian(lambda a: np.linalg.slogdet(a)[1])(a)
    ai = np.linalg.inv(a)
    _close(h, -np.einsum("li,jk->ijkl", ai, ai), rtol=1e-10, atol=1e-12)


def test_trace_replays_linalg_by_calling_lapack_again():
    f = lambda a: np.linalg.inv(a).sum()  # noqa: E731
    tr = tg.trace(f, _well(2))
    other = _well(2) + np.array([[3.0, -1.0], [0.5, 2.0]])
    v, g = tr.value_and_grad(other)
    _close(v, np.linalg.inv(other).sum(), rtol=1e-13, atol=0)
    _close(g, tg.grad(f)(other), rtol=1e-13, atol=0)


# ---- tapegrad.scipy.linalg ---------------------------------------------------------------------

sl = pytest.importorskip("scipy.linalg")
tsl = pytest.importorskip("tapegrad.scipy.linalg")


def test_solve_triangular():
    a, b = _well(3), _rand(3, 2)
    for lower in (True, False):
        for trans in (0, 1, "T"):
            for unit in (False, True):
                check(
                    lambda a, b, lo=lower, tr=trans, u=unit: tsl.solve_triangular(a, b, tr, lo, u),
                    a,
                    b,
                    second=lower and trans == 0 and not unit,
                )
    check(lambda a, b: tsl.solve_triangular(a, b, lower=True), a, _rand(3))
    # the triangle SciPy ignores gets no gradient
    g = tg.grad(lambda a: tsl.solve_triangular(a, b, lower=True).sum())(a)
    assert np.all(np.triu(g, 1) == 0)
    with pytest.raises(np.linalg.LinAlgError):
        tsl.solve_triangular(tg.tensor(np.zeros((2, 2)), requires_grad=True), np.ones(2))
    # the value is SciPy's own, computed once (every trans, triangle and unit diagonal)
    for lower in (True, False):
        for trans in (0, 1):
            for unit in (False, True):
                got = tsl.solve_triangular(tg.tensor(a, requires_grad=True), b, trans, lower, unit)
                want = sl.solve_triangular(a, b, trans, lower, unit)
                np.testing.assert_array_equal(got.data, want)
    # SciPy's finiteness check covers the triangle it ignores, as SciPy's does
    bad = a.copy()
    bad[0, 2] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        tsl.solve_triangular(tg.tensor(bad, requires_grad=True), b, lower=True)
    assert np.all(np.isfinite(tsl.solve_triangular(bad, b, lower=True, check_finite=False)))


def test_cho_factor_cho_solve():
    a, b = _spd(3), _rand(3)
    for lower in (True, False):
        c, low = tsl.cho_factor(tg.tensor(a, requires_grad=True), lower=lower)
        ref = sl.cho_factor(a, lower=lower)
        assert low == ref[1]
        _close(c.data, ref[0], rtol=1e-13, atol=1e-14)
        check(lambda a, b, lo=lower: tsl.cho_solve(tsl.cho_factor(a, lo), b), a, b, second=lower)
        got = tsl.cho_solve((tg.tensor(ref[0], requires_grad=True), lower), b)
        np.testing.assert_array_equal(got.data, sl.cho_solve(ref, b))  # SciPy's own value
        check(lambda a, lo=lower: tsl.cho_factor(a, lo)[0], a)


def test_solve_banded():
    m, nl, nu = 4, 1, 2
    ab = _rand(nl + nu + 1, m)
    ab[nu] += 4.0  # a strong diagonal
    b = _rand(m, 2)
    x = tsl.solve_banded((nl, nu), tg.tensor(ab), b)
    # SciPy's own routine computes the value, on the band read back from the recorded matrix
    np.testing.assert_array_equal(x.data, sl.solve_banded((nl, nu), ab, b))
    tr = tg.trace(lambda ab, b: tsl.solve_banded((nl, nu), ab, b), ab, b)
    ab2 = ab + 0.1  # a replay runs SciPy's routine again, on its own values
    np.testing.assert_array_equal(tr(ab2, b), sl.solve_banded((nl, nu), ab2, b))
    check(lambda ab, b: tsl.solve_banded((nl, nu), ab, b), ab, b, second=True)
    check(lambda ab, b: tsl.solve_banded((nl, nu), ab, b), ab, _rand(m))


def test_solve_sylvester():
    a, b, q = _well(3), _well(2), _rand(3, 2)
    check(tsl.solve_sylvester, a, b, q, second=True)


def test_sqrtm_expm():
    check(tsl.sqrtm, _spd(3), second=True)
    check(tsl.sqrtm, _well(2))
    with pytest.raises(ValueError, match="complex"):
        tsl.sqrtm(tg.tensor(np.diag([-1.0, 1.0]), requires_grad=True))
    a = 0.5 * _rand(3, 3)
    check(tsl.expm, a, second=True)
    check(tsl.expm, 0.5 * _rand(2, 2, 2))
    _close(tsl.expm(tg.tensor(a, requires_grad=True)).data, sl.expm(a), rtol=0, atol=0)


def test_scipy_plain_arrays_return_scipy_results():
    a, s, b = _well(3), _spd(3), _rand(3)
    np.testing.assert_array_equal(tsl.solve_triangular(a, b), sl.solve_triangular(a, b))
    c = tsl.cho_factor(s)
    np.testing.assert_array_equal(c[0], sl.cho_factor(s)[0])
    np.testing.assert_array_equal(tsl.cho_solve(c, b), sl.cho_solve(c, b))
    np.testing.assert_array_equal(tsl.expm(a), sl.expm(a))
    np.testing.assert_array_equal(tsl.sqrtm(s), sl.sqrtm(s))
    np.testing.assert_array_equal(tsl.solve_sylvester(a, s, a), sl.solve_sylvester(a, s, a))
    ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
    np.testing.assert_array_equal(tsl.solve_banded((0, 1), ab, b), sl.solve_banded((0, 1), ab, b))
    assert type(tsl.expm(a)) is np.ndarray


def test_in_place_change_after_record_raises_and_checkpoint_works():
    a = _well(3)
    x = tg.tensor(a, requires_grad=True)
    y = np.linalg.inv(x * 1.0)
    y.add_(1.0)  # the rule reads y: the backward must refuse
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()
    x = tg.tensor(a, requires_grad=True)
    b = x * 1.0
    d = np.linalg.det(b)
    b.mul_(2.0)  # the rule reads b
    with pytest.raises(RuntimeError, match="inplace"):
        d.backward()
    _close(
        tg.grad(lambda a: tg.checkpoint(np.linalg.det, a))(a), tg.grad(np.linalg.det)(a), rtol=1e-13
    )
    x = tg.tensor(a, requires_grad=True)
    np.linalg.slogdet(x).logabsdet.backward()
    _close(x.grad.data, np.linalg.inv(a).T, rtol=1e-12)


# ---- det at singular matrices: the adjugate --------------------------------------------------
def _cofactor(m):
    """adj(M)^T by cofactors (the definition)."""
    n = m.shape[0]
    c = np.zeros_like(m)
    for i in range(n):
        for j in range(n):
            c[i, j] = (-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))
    return c


@pytest.mark.parametrize(
    "a",
    [
        np.array([[1.0, 2.0], [2.0, 4.0]]),  # rank 1
        np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]]),  # rank 2: rank-one adjugate
        np.array([[1.0, 2, 3], [2, 4, 6], [3, 6, 9]]),  # rank 1: zero adjugate
        np.array([[1.0, 2, 3, 4], [2, 1, 0, 1], [3, 3, 3, 5], [0, 1, 1, 1]]),  # rank 3
    ],
)
def test_det_gradient_at_singular_matrices_is_the_adjugate(a):
    np.testing.assert_allclose(tg.grad(np.linalg.det)(a), _cofactor(a), atol=1e-12)
    _, t = tg.jvp(np.linalg.det, (a,), (np.ones_like(a),))
    assert t == pytest.approx(np.sum(_cofactor(a)), abs=1e-12)


def test_det_hessian_at_a_singular_matrix_matches_differences_of_the_adjugate():
    a = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]])
    h = tg.hessian(np.linalg.det)(a)
    num = np.zeros((3, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = 1e-6
            num[:, :, i, j] = (_cofactor(a + e) - _cofactor(a - e)) / 2e-6
    np.testing.assert_allclose(h, num, atol=1e-7)


def test_det_gradient_of_a_batch_mixing_singular_and_regular_matrices():
    a = np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])])
    g = tg.grad(lambda m: np.sum(np.linalg.det(m)))(a)
    np.testing.assert_allclose(g, np.stack([_cofactor(m) for m in a]), atol=1e-12)


def test_matrix_power_zero_is_the_identity_whatever_the_entries():
    a = np.array([[1.0, np.inf], [np.nan, 2.0]])
    out = np.linalg.matrix_power(tg.tensor(a, requires_grad=True), 0)
    np.testing.assert_array_equal(out.numpy(), np.linalg.matrix_power(a, 0))
    np.testing.assert_array_equal(
        tg.grad(lambda m: np.sum(np.linalg.matrix_power(m, 0)))(a), np.zeros((2, 2))
    )


def test_pinv_hermitian_reads_the_lower_triangle_as_numpy():
    s = np.array([[2.0, 1.0], [5.0, 3.0]])  # not symmetric: the lower triangle counts
    w = np.array([[1.0, 2.0], [3.0, 4.0]])

    def f(a):
        return np.sum(np.linalg.pinv(a, hermitian=True) * w)

    value, g = tg.value_and_grad(f)(s)
    assert value == pytest.approx(f(s), rel=1e-13)
    num = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            e = np.zeros((2, 2))
            e[i, j] = 1e-6
            num[i, j] = (f(s + e) - f(s - e)) / 2e-6
    np.testing.assert_allclose(g, num, atol=1e-8)
    assert g[0, 1] == 0.0  # the upper triangle is never read


@pytest.mark.parametrize("ord_", [None, "fro", 1, -1, 2, -2, np.inf, -np.inf, "nuc"])
@pytest.mark.parametrize("shape,axis", [((3, 4), (1, 0)), ((3, 4), (0, 1)), ((2, 3, 4), (2, 0))])
def test_matrix_norm_follows_the_order_of_axis(ord_, shape, axis):
    rng = np.random.default_rng(sum(shape))
    m = rng.standard_normal(shape)
    want = np.linalg.norm(m, ord_, axis=axis)
    np.testing.assert_allclose(np.linalg.norm(tg.tensor(m), ord_, axis=axis).numpy(), want)
    w = np.arange(1.0, np.size(want) + 1).reshape(np.shape(want))

    def f(a):
        return np.sum(np.linalg.norm(a, ord_, axis=axis) * w)

    u = rng.standard_normal(shape)  # a directional derivative against differences
    num = (f(m + 1e-6 * u) - f(m - 1e-6 * u)) / 2e-6
    assert np.sum(tg.grad(f)(m) * u) == pytest.approx(num, rel=1e-6, abs=1e-8)


def test_qr_and_svd_refuse_numerically_rank_deficient_matrices():
    a = np.array([[1.0, 2.0], [2.0, 4.0 + 1e-15], [3.0, 6.0]])  # rank one to working precision
    with pytest.raises(np.linalg.LinAlgError, match="rank-deficient"):
        tg.grad(lambda m: np.sum(np.linalg.qr(m)[0]))(a)
    with pytest.raises(np.linalg.LinAlgError, match="rank-deficient"):
        tg.jvp(lambda m: np.linalg.qr(m)[0], (a,), (np.ones_like(a),))
    with pytest.raises(np.linalg.LinAlgError, match="zero singular value"):
        tg.grad(lambda m: np.sum(np.linalg.svd(m, full_matrices=False)[0]))(a)


def test_det_gradient_of_a_matrix_holding_inf_is_nan_not_a_hang():
    """The adjugate's SVD never returns on some matrices holding inf (LAPACK's loop): those
    gradients are NaN, the others in the batch exact."""
    x = np.array([800.0, -800.0, 1e300])
    with np.errstate(all="ignore"):
        g = tg.grad(lambda v: np.linalg.det(np.outer(v, v[::-1])))(x)
        a = np.stack([np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([[np.inf, 1.0], [1.0, 1.0]])])
        ga = tg.grad(lambda m: np.linalg.det(m).sum())(a)
    assert np.isnan(g).all()
    np.testing.assert_allclose(ga[0], [[3.0, -1.0], [-1.0, 2.0]], rtol=1e-12)  # the cofactors
    assert np.isnan(ga[1]).all()
