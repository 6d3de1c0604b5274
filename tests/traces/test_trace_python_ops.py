"""tg.trace replays ops whose forward is Python (NumPy's LAPACK, SciPy, custom rules, tg.Function,
fixed_point): each replay runs their Python code again on its own values, between the compiled
sweeps.  Every case here compares replays far from the recording with eager evaluation."""

import pickle

import numpy as np
import pytest

import tapegrad as tg

try:
    import tapegrad.scipy.linalg as tsl
    import tapegrad.scipy.special as tsp
    import tapegrad.scipy.stats as tss
except ModuleNotFoundError:  # the scipy extra is not installed
    tsl = tsp = tss = None

needs_scipy = pytest.mark.skipif(tsp is None, reason="tapegrad.scipy needs the scipy extra")

RNG = np.random.default_rng(20261126)


def _spd(a):
    return a @ a.T + 3.0 * np.eye(a.shape[0])


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _agree(f, x0, points, jvp=True):
    """Replays of a trace of f recorded at x0 equal eager evaluation at every point: value,
    gradient, a jvp and grad_many."""
    tr = tg.trace(f, x0)
    for x in points:
        v, g = tr.value_and_grad(x)
        ve, ge = tg.value_and_grad(f)(x)
        _close(v, ve)
        _close(g, ge)
        _close(tr(x), ve)
        if jvp:
            d = RNG.normal(size=np.shape(x))
            _close(tr.jvp(x, d)[1], tg.jvp(f, (x,), (d,))[1])
    _close(tr.grad_many(np.stack(points)), np.stack([tg.grad(f)(x) for x in points]))
    return tr


A0 = RNG.normal(size=(3, 3))
POINTS = [RNG.normal(size=(3, 3)) * 4.0 for _ in range(2)] + [-A0]

NUMPY_LINALG = {
    "inv": lambda a: np.sum(np.linalg.inv(a) ** 2),
    "solve": lambda a: np.sum(np.linalg.solve(a, np.arange(3.0))),
    "solve_matrix": lambda a: np.sum(np.linalg.solve(a, a.T @ a)),
    "det": lambda a: np.linalg.det(a),
    "slogdet": lambda a: np.linalg.slogdet(a)[0] * np.linalg.slogdet(a)[1],
    "cholesky": lambda a: np.sum(np.linalg.cholesky(_spd(a))),
    "cholesky_upper": lambda a: np.sum(np.linalg.cholesky(_spd(a), upper=True) ** 2),
    "eigh": lambda a: (
        np.sum(np.linalg.eigh(_spd(a))[0] ** 2) + np.linalg.eigh(_spd(a))[1][0, 2] ** 2
    ),
    "eigvalsh": lambda a: np.sum(np.linalg.eigvalsh(a + a.T, UPLO="U") ** 3),
    "svd": lambda a: np.linalg.svd(a)[1][0] + np.linalg.svd(a)[0][1, 1] * np.linalg.svd(a)[2][0, 1],
    "svdvals": lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 2),
    "qr": lambda a: np.linalg.qr(a)[0][0, 1] * np.linalg.qr(a)[1][1, 2],
    "pinv": lambda a: np.sum(np.linalg.pinv(a) ** 2),
    "lstsq": lambda a: np.sum(np.linalg.lstsq(a, np.arange(3.0))[0]),
    "norm_nuc": lambda a: np.linalg.norm(a, "nuc") + np.linalg.norm(a, 2),
    "matrix_power": lambda a: np.sum(np.linalg.matrix_power(a, -2)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_LINALG))
def test_numpy_linalg_replays(name):
    tr = _agree(NUMPY_LINALG[name], A0, POINTS)
    assert "CUSTOM" in tr.tape.stats()["by_op"]


def test_wide_and_tall_decompositions_replay():
    wide = RNG.normal(size=(2, 4))
    pts = [RNG.normal(size=(2, 4)) * 3.0 for _ in range(3)]
    _agree(lambda a: np.linalg.qr(a)[1][1, 3] + np.sum(np.linalg.pinv(a)), wide, pts)
    tall = RNG.normal(size=(5, 2))
    pts = [RNG.normal(size=(5, 2)) for _ in range(3)]
    _agree(
        lambda a: np.sum(np.linalg.svd(a, full_matrices=True)[0][:, :2] ** 3), tall, pts, jvp=False
    )
    _agree(lambda a: np.sum(np.linalg.lstsq(a, np.arange(5.0))[1]), tall, pts, jvp=False)


def test_slogdet_sign_is_recomputed_not_frozen():
    f = NUMPY_LINALG["slogdet"]
    a = np.diag([1.0, 2.0, 3.0])
    tr = tg.trace(f, a)
    flipped = np.diag([-1.0, 2.0, 3.0])
    assert tr(flipped) == pytest.approx(-np.log(6.0))
    _close(tr.grad(flipped), tg.grad(f)(flipped))


def test_a_decision_from_the_values_is_a_guard():
    """lstsq's rank decides the residuals' shape: a replay at another rank raises (or, with
    retrace=True, records again) instead of reusing the recorded branch."""

    def f(a):
        x, res, rank, s = np.linalg.lstsq(a, np.arange(4.0))
        return np.sum(x) + np.sum(res) + s[0]

    b = RNG.normal(size=(4, 3))
    low = b.copy()
    low[:, 2] = low[:, 1]
    tr = tg.trace(f, b)
    _close(tr.grad(2.0 * b), tg.grad(f)(2.0 * b))
    with pytest.raises(tg.RetraceRequired, match="lstsq"):
        tr.grad(low)
    tr = tg.trace(f, b, retrace=True)
    _close(tr(low), tg.value_and_grad(f)(low)[0])


def test_errors_at_replay_are_those_of_eager_calls():
    f = NUMPY_LINALG["inv"]
    tr = tg.trace(f, A0)
    with pytest.raises(np.linalg.LinAlgError):
        tr.grad(np.zeros((3, 3)))
    chol = tg.trace(lambda a: np.sum(np.linalg.cholesky(a)), _spd(A0))
    with pytest.raises(np.linalg.LinAlgError):
        chol.grad(-np.eye(3))
    # pinv's derivative at constant rank: a cut-off singular value that is not zero refuses
    g = tg.trace(lambda a: np.sum(np.linalg.pinv(a, rcond=0.5)), np.diag([1.0, 2.0, 3.0]))
    with pytest.raises(np.linalg.LinAlgError, match="rcond"):
        g.grad(np.diag([1.0, 2.0, 0.3]))


@needs_scipy
@pytest.mark.parametrize(
    "name,f",
    [
        ("expm", lambda a: np.sum(tsl.expm(a))),
        ("sqrtm", lambda a: np.sum(tsl.sqrtm(_spd(a)))),
        ("solve_triangular", lambda a: np.sum(tsl.solve_triangular(a, np.ones(3), lower=True))),
        ("cho_factor", lambda a: np.sum(tsl.cho_solve(tsl.cho_factor(_spd(a)), np.ones(3)))),
        ("solve_sylvester", lambda a: np.sum(tsl.solve_sylvester(_spd(a), np.eye(3), a))),
    ],
)
def test_scipy_linalg_replays(name, f):
    pts = POINTS[:2] if name != "solve_triangular" else [p + 6 * np.eye(3) for p in POINTS[:2]]
    x0 = A0 + 6 * np.eye(3) if name == "solve_triangular" else A0
    _agree(f, x0, pts)


@needs_scipy
def test_scipy_special_and_stats_replay():
    def f(x):
        return (
            np.sum(tsp.gammainc(x[0] ** 2 + 1.0, x**2 + 0.1))
            + np.sum(tsp.jv(1.5, x))
            + np.sum(tsp.ive(0.5, x))
            + tsp.xlogy(x[0], x[1] ** 2)
            + np.sum(tsp.gammaincc(2.5, x**2))
        )

    pts = [np.array([1.0, 2.0, 0.5]), np.array([3.0, 0.1, 7.0])]
    _agree(f, np.array([0.1, 0.2, 0.3]), pts)

    def mvn(m):
        c = np.array([[2.0, 0.3], [0.3, 1.0]]) + np.outer(m, m)
        return tss.multivariate_normal.logpdf(np.array([0.5, 0.1]), m, c)

    _agree(mvn, np.array([0.1, 0.2]), [np.array([1.0, -2.0]), np.array([5.0, 3.0])])


def test_custom_rules_replay():
    @tg.custom_jvp
    def softplus(x):
        return np.log1p(np.exp(x))

    @softplus.defjvp
    def _softplus_jvp(primals, tangents):
        (x,) = primals
        return softplus(x), tangents[0] / (1.0 + np.exp(-x))

    @tg.custom_vjp
    def scaled_clip(x):
        return x

    scaled_clip.defvjp(lambda x: (x, x), lambda r, g: (np.clip(g, -1.0, 1.0) * r,))

    x0, pts = np.array([0.1, 0.2]), [np.array([1.0, -2.0]), np.array([30.0, -4.0])]
    _agree(lambda x: np.sum(softplus(x) ** 2), x0, pts)
    _agree(lambda x: np.sum(softplus(x)) + np.sum(scaled_clip(3.0 * x)), x0, pts, jvp=False)
    tr = tg.trace(lambda x: np.sum(scaled_clip(x)), x0)
    with pytest.raises(tg.ForwardModeError):
        tr.jvp(x0, x0)


def test_fixed_point_replays():
    def root(a):
        return tg.fixed_point(
            lambda a: lambda x: 0.5 * (x + a / x), a, 1.0, lambda x, y: abs(x - y), 1e-13
        )

    tr = _agree(root, 2.0, [5.0, 49.0, 0.25])
    assert tr(16.0) == pytest.approx(4.0)
    assert tr.grad(16.0) == pytest.approx(1.0 / 8.0)


def test_function_replays_and_reads_its_closure_again():
    scale = tg.tensor(2.0)

    class Cube(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return scale * x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return scale * 3.0 * x**2 * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return scale * 3.0 * x**2 * t

    def f(x):
        return np.sum(Cube.apply(x) * x)

    tr = _agree(f, np.array([0.1, 0.2]), [np.array([1.0, -2.0]), np.array([3.0, 0.5])])
    scale.data = 5.0  # forward runs again at each replay: it reads the new value
    _close(tr.grad(np.array([1.0, 2.0])), 5.0 * 4.0 * np.array([1.0, 8.0]))


def test_what_a_python_row_cannot_do_is_refused_by_name():
    tr = tg.trace(lambda a: np.linalg.det(a), A0)
    for call in (
        lambda: tr.hessian(A0),
        lambda: tr.hvp(A0, A0),
        lambda: tr.njit_grad,
        lambda: pickle.dumps(tr),
        lambda: tr.save("unused.npz"),
    ):
        with pytest.raises(TypeError, match="LinalgDetBackward"):
            call()
    with pytest.raises(TypeError, match="tg.checkpoint"):
        tg.trace(lambda x: np.sum(tg.checkpoint(lambda z: np.sin(z) ** 2, x)), np.ones(2))


def test_traced_cache_replays_python_rows():
    f = tg.traced(NUMPY_LINALG["inv"])
    for a in POINTS:
        _close(f.grad(a), tg.grad(NUMPY_LINALG["inv"])(a))


def test_derivatives_taken_inside_f_through_python_rows_are_refused():
    """Their rules would be recorded from Python decisions (a condition number, a rank) that
    a replay cannot repeat."""
    with pytest.raises(TypeError, match="LinalgDetBackward"):
        tg.trace(lambda x: np.sum(tg.grad(np.linalg.det)(x)), 2.0 * np.eye(2))
    with pytest.raises(TypeError, match="nested forward mode"):
        tg.trace(
            lambda x: tg.jvp(lambda y: np.sum(np.linalg.inv(y)), (x,), (np.ones((2, 2)),))[1],
            2.0 * np.eye(2),
        )


def test_a_non_differentiable_output_is_recomputed():
    class ArgmaxScale(tg.Function):
        @staticmethod
        def forward(ctx, x):
            i = np.argmax(x.data)
            ctx.mark_non_differentiable(i)
            ctx.i = i
            return 2.0 * x, i

        @staticmethod
        def backward(ctx, g, _):
            return 2.0 * g

    def f(x):
        y, i = ArgmaxScale.apply(x)
        return np.sum(y) * (i + 1.0)

    _agree(
        f,
        np.array([3.0, 1.0, 2.0]),
        [np.array([0.0, 5.0, 1.0]), np.array([0.0, 1.0, 9.0])],
        jvp=False,
    )

    # a Python read of it (an index) is a guard, as item() is
    def pick(x):
        y, i = ArgmaxScale.apply(x)
        return y[int(i)]

    tr = tg.trace(pick, np.array([3.0, 1.0, 2.0]))
    assert tr.value_and_grad(np.array([5.0, 1.0, 2.0]))[0] == 10.0
    with pytest.raises(tg.RetraceRequired, match="item"):
        tr(np.array([0.0, 1.0, 9.0]))
