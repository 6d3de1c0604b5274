"""A hunt for wrong higher-order and forward-mode derivatives and replays.

Third and fourth derivatives by nested grad, nested jvp, jvp of grad, hessian and the Tensor
API's create_graph chain; Hessians and third derivatives of vector functions (reductions,
indexing, scans, sorting, linalg) in every mode; mixed modes, argnums and pytrees; custom rules
at higher order; traces replayed far from their recording.  References are PyTorch's
``torch.func`` in float64, closed forms, and finite differences of a lower derivative where
PyTorch itself is wrong (its pow with a variable exponent and its third derivatives of
solve / det / slogdet).  Tests that once disagreed say what was wrong in their docstrings.
"""

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
tsp = pytest.importorskip("tapegrad.scipy.special")
tf = torch.func


@pytest.fixture(autouse=True)
def _float64_torch():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
    torch.set_default_dtype(old)


def _t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def _d_fwd(h):
    return lambda y: tg.jvp(h, (y,), (1.0,))[1]


def _scalar_modes(f, x, order, create_graph=True):
    """The order-th derivative of a scalar function of one float, in each mode."""
    rev, fwd = f, f
    for _ in range(order):
        rev, fwd = tg.grad(rev), _d_fwd(fwd)
    out = {"grad": rev(x), "jvp": fwd(x)}
    if order >= 2:
        m = f
        for _ in range(order - 1):
            m = tg.grad(m)
        out["jvp of grad"] = _d_fwd(m)(x)
        h = f
        for _ in range(order - 2):
            h = tg.grad(h)
        out["hessian"] = tg.hessian(h)(x)
    if not create_graph:
        return out
    xt = tg.tensor(x, requires_grad=True)
    y = f(xt)
    for _ in range(order):
        (y,) = tg.autograd.grad(y, xt, create_graph=True)
    out["create_graph"] = y.item()
    return out


def _torch_derivative(ft, x, order):
    g = ft
    for _ in range(order):
        g = tf.grad(g)
    return g(_t(x)).item()


# ---------------------------------------------------------------------------------------------
# scalar functions: orders 1-4 against PyTorch's nested torch.func.grad

SCALARS = {
    "tanh*log1p": (
        lambda x: np.tanh(x) * np.log1p(x * x),
        lambda x: torch.tanh(x) * torch.log1p(x * x),
    ),
    "expm1*exp": (lambda x: np.expm1(x) * np.exp(-x), lambda x: torch.expm1(x) * torch.exp(-x)),
    "erf^2": (lambda x: tsp.erf(x) ** 2, lambda x: torch.special.erf(x) ** 2),
    "softplus": (
        lambda x: np.logaddexp(0, x),
        lambda x: torch.logaddexp(torch.tensor(0.0), x),
    ),
    "maximum^3": (
        lambda x: np.maximum(x, 0.5) ** 3,
        lambda x: torch.maximum(x, torch.tensor(0.5)) ** 3,
    ),
    "abs^3": (lambda x: np.abs(x) ** 3, lambda x: torch.abs(x) ** 3),
    "where": (
        lambda x: np.where(x > 0, x**3, np.sin(x)),
        lambda x: torch.where(x > 0, x**3, torch.sin(x)),
    ),
    "arctan2": (lambda x: np.arctan2(x, 1 + x * x), lambda x: torch.atan2(x, 1 + x * x)),
    "hypot": (lambda x: np.hypot(x, 2 * x + 1), lambda x: torch.hypot(x, 2 * x + 1)),
    "quotient": (lambda x: np.sin(x) / (1 + x * x), lambda x: torch.sin(x) / (1 + x * x)),
    "sqrt": (lambda x: np.sqrt(1 + x * x) * x, lambda x: torch.sqrt(1 + x * x) * x),
    "arcsinh^2": (lambda x: np.arcsinh(x) ** 2, lambda x: torch.asinh(x) ** 2),
    "fmod^2": (lambda x: np.fmod(x, 0.7) ** 2, lambda x: torch.fmod(x, 0.7) ** 2),
    "exp2*log2": (
        lambda x: np.exp2(x) * np.log2(x * x + 1),
        lambda x: torch.exp2(x) * torch.log2(x * x + 1),
    ),
    "(x^2+1)^-1.5": (lambda x: (x * x + 1) ** -1.5, lambda x: (x * x + 1) ** -1.5),
    "expit": (lambda x: tsp.expit(x), lambda x: torch.sigmoid(x)),
    "digamma": (lambda x: tsp.digamma(x), lambda x: torch.digamma(x)),
    "sinh*cosh": (
        lambda x: np.sinh(x) * np.cosh(2 * x),
        lambda x: torch.sinh(x) * torch.cosh(2 * x),
    ),
    "logsumexp": (
        lambda x: tsp.logsumexp(tg.numpy.stack([x, 2 * x, -x])),
        lambda x: torch.logsumexp(torch.stack([x, 2 * x, -x]), 0),
    ),
}
SCALAR_POINTS = [1.0, -0.3, 2.0]
# a derivative that is constant in x (piecewise polynomials): the create_graph chain refuses
# to go past it (see test_create_graph_past_a_constant_derivative_gives_zero_as_torch)
CREATE_GRAPH_UP_TO = {"abs^3": 3, "maximum^3": 3, "fmod^2": 2}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_scalar_derivatives_up_to_fourth_order_match_torch(name):
    f, ft = SCALARS[name]
    for x in SCALAR_POINTS:
        for order in (2, 3, 4):
            want = _torch_derivative(ft, x, order)
            cg = order <= CREATE_GRAPH_UP_TO.get(name, 4)
            for mode, got in _scalar_modes(f, x, order, cg).items():
                np.testing.assert_allclose(
                    got, want, rtol=1e-8, atol=1e-10, err_msg=f"{name} x={x} order={order} {mode}"
                )


# closed forms at points where PyTorch itself is wrong (or NaN) and tapegrad is right
def _xx_d3(x):  # d3/dx3 x ** x
    lg = 1 + math.log(x)
    return x**x * (lg**3 + 3 * lg / x - 1 / x**2)


CLOSED_FORMS = [
    # x ** x: f''' = x^x ((1 + ln x)^3 + 3 (1 + ln x) / x - 1 / x^2): 3 at 1 (torch: 2), and
    # f'''' = 8 at 1 (torch: 7)
    ("x**x", lambda x: np.power(x, x), 1.0, 3, 3.0),
    ("x**x", lambda x: np.power(x, x), 1.0, 4, 8.0),
    ("x**x", lambda x: np.power(x, x), 2.0, 3, _xx_d3(2.0)),
    # (x^2 + 1) ** sin(x) = 1 + x^3 + ...: f'''(0) = 6 (torch: 2)
    ("(x^2+1)**sin x", lambda x: np.power(x * x + 1, np.sin(x)), 0.0, 3, 6.0),
    # sinc(x) = 1 - (pi x)^2 / 6 + (pi x)^4 / 120: -pi^2 / 3 and pi^4 / 5 at 0 (torch: NaN)
    ("sinc", np.sinc, 0.0, 2, -(math.pi**2) / 3),
    ("sinc", np.sinc, 0.0, 3, 0.0),
    ("sinc", np.sinc, 0.0, 4, math.pi**4 / 5),
    ("sinc", np.sinc, 1e-8, 2, -(math.pi**2) / 3),
    ("x sinc x", lambda x: x * np.sinc(x), 0.0, 3, -(math.pi**2)),
    # I0(x) = 1 + x^2 / 4 + x^4 / 64: the fourth derivative at 0 is 3/8 (torch: 0)
    ("i0", tsp.i0, 0.0, 4, 0.375),
    ("i0", tsp.i0, 1e-8, 4, 0.375),
    # softplus far in its tail: derivatives ~ e^-800, 0 (torch: NaN)
    ("softplus", lambda x: np.logaddexp(0, x), -800.0, 2, 0.0),
    ("softplus", lambda x: np.logaddexp(0, x), -800.0, 3, 0.0),
    ("logaddexp(x, 2x)", lambda x: np.logaddexp(x, 2 * x), 800.0, 2, 0.0),
    # polynomials in disguise
    ("x^3.5", lambda x: x**3.5, 2.0, 3, 3.5 * 2.5 * 1.5 * 2.0**0.5),
    ("x sqrt x", lambda x: x * np.sqrt(x), 4.0, 2, 0.75 / 2.0),
    ("tan", np.tan, 0.3, 3, 2 * (1 + math.tan(0.3) ** 2) * (1 + 3 * math.tan(0.3) ** 2)),
]


@pytest.mark.parametrize(
    "name, f, x, order, want",
    CLOSED_FORMS,
    ids=[f"{c[0]}-x={c[2]}-d{c[3]}" for c in CLOSED_FORMS],
)
def test_scalar_derivatives_match_closed_forms(name, f, x, order, want):
    for mode, got in _scalar_modes(f, x, order).items():
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=f"{name} {mode}")


def test_mixed_partial_of_power_at_zero_exponent_is_symmetric():
    # d2/db dy b ** y at y = 0 is b^(y-1) (1 + y log b) = 1 / b; torch.func.hessian gives an
    # asymmetric Hessian there (0 in one corner)
    def f(v):
        return np.power(v[0], v[1])

    v = np.array([1.5, 0.0])
    want = np.array([[0.0, 1 / 1.5], [1 / 1.5, math.log(1.5) ** 2]])
    np.testing.assert_allclose(tg.hessian(f)(v), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tg.jacfwd(tg.jacfwd(f))(v), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tg.jacobian(tg.grad(f))(v), want, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# vector functions: Hessians and third derivatives against torch.func

_R = np.random.default_rng(0)
_A = _R.standard_normal((4, 4))
_M = _A @ _A.T + 4 * np.eye(4)
_IDX = np.array([3, 0, 0, 2, 5])
_MASK = np.array([True, False, True, True, False, True])


def _setitem_np(x):
    y = x * 1.0
    y[1:4] = y[1:4] * x[0]
    y[[0, 5]] = np.sin(x[2:4])
    return np.sum(y**3)


def _setitem_torch(x):
    y = x * 1.0
    y[1:4] = y[1:4].clone() * x[0]
    y[[0, 5]] = torch.sin(x[2:4])
    return (y**3).sum()


VECTORS = {
    "sum*prod": (lambda x: np.sum(x) * np.prod(x), lambda x: x.sum() * x.prod()),
    "max": (lambda x: np.max(x * x), lambda x: (x * x).max()),
    "mean^2+var": (
        lambda x: np.mean(x) ** 2 + np.var(x),
        lambda x: x.mean() ** 2 + x.var(unbiased=False),
    ),
    "std": (lambda x: np.std(x), lambda x: x.std(unbiased=False)),
    "logsumexp": (lambda x: tsp.logsumexp(x), lambda x: torch.logsumexp(x, 0)),
    "entropy": (
        lambda x: -np.sum(tsp.softmax(x) * tsp.log_softmax(x)),
        lambda x: -(torch.softmax(x, 0) * torch.log_softmax(x, 0)).sum(),
    ),
    "norm^3": (lambda x: np.linalg.norm(x) ** 3, lambda x: torch.linalg.norm(x) ** 3),
    "norm3": (lambda x: np.linalg.norm(x, 3), lambda x: torch.linalg.norm(x, 3)),
    "fancy+step": (
        lambda x: np.sum(x[_IDX] ** 3 * x[::-2].sum()),
        lambda x: (x[_IDX] ** 3 * x.flip(0)[::2].sum()).sum(),
    ),
    "boolean": (
        lambda x: np.sum(np.sin(x[_MASK]) ** 2 * x[1:5:3].prod()),
        lambda x: (torch.sin(x[torch.tensor(_MASK)]) ** 2 * x[1:5:3].prod()).sum(),
    ),
    "concat+stack": (
        lambda x: (
            np.sum(np.concatenate([x, x[:2] ** 2]) ** 3) + np.sum(np.stack([x, x**2]).prod(0))
        ),
        lambda x: (torch.cat([x, x[:2] ** 2]) ** 3).sum() + torch.stack([x, x**2]).prod(0).sum(),
    ),
    "reshape+T": (
        lambda x: np.sum((x.reshape(2, 3).T @ x.reshape(2, 3)) ** 2),
        lambda x: ((x.reshape(2, 3).T @ x.reshape(2, 3)) ** 2).sum(),
    ),
    "cumsum": (lambda x: np.sum(np.cumsum(x) ** 3), lambda x: (torch.cumsum(x, 0) ** 3).sum()),
    "cumprod": (lambda x: np.sum(np.cumprod(x) ** 2), lambda x: (torch.cumprod(x, 0) ** 2).sum()),
    "sort": (
        lambda x: np.sum(np.sort(x) * np.arange(6.0) ** 2 * x),
        lambda x: (torch.sort(x)[0] * torch.arange(6.0) ** 2 * x).sum(),
    ),
    "solve": (
        lambda x: np.sum(np.linalg.solve(_M + np.diag(x[:4]), x[2:]) ** 2),
        lambda x: (torch.linalg.solve(_t(_M) + torch.diag(x[:4]), x[2:]) ** 2).sum(),
    ),
    "inv": (
        lambda x: np.sum(np.linalg.inv(_M + np.outer(x[:4], x[2:]))),
        lambda x: torch.linalg.inv(_t(_M) + torch.outer(x[:4], x[2:])).sum(),
    ),
    "det": (
        lambda x: np.linalg.det(_M + np.outer(x[:4], x[2:])),
        lambda x: torch.linalg.det(_t(_M) + torch.outer(x[:4], x[2:])),
    ),
    "slogdet": (
        lambda x: np.linalg.slogdet(_M + np.diag(x[:4]) * x[5])[1],
        lambda x: torch.linalg.slogdet(_t(_M) + torch.diag(x[:4]) * x[5])[1],
    ),
    "cholesky": (
        lambda x: np.sum(np.linalg.cholesky(_M + np.diag(x[:4] ** 2)) ** 3),
        lambda x: (torch.linalg.cholesky(_t(_M) + torch.diag(x[:4] ** 2)) ** 3).sum(),
    ),
    "eigh values": (
        lambda x: np.sum(np.linalg.eigh(_M + np.outer(x[:4], x[:4]))[0] ** 3),
        lambda x: (torch.linalg.eigh(_t(_M) + torch.outer(x[:4], x[:4]))[0] ** 3).sum(),
    ),
    "eigh vectors": (
        lambda x: np.sum(
            np.linalg.eigh(_M + np.outer(x[:4], x[2:]) + np.outer(x[2:], x[:4]))[1][:, 0] ** 2
            * np.arange(4.0)
        ),
        lambda x: (
            torch.linalg.eigh(_t(_M) + torch.outer(x[:4], x[2:]) + torch.outer(x[2:], x[:4]))[1][
                :, 0
            ]
            ** 2
            * torch.arange(4.0)
        ).sum(),
    ),
    "svd values": (
        lambda x: np.sum(np.linalg.svd(_M + np.outer(x[:4], x[2:]), compute_uv=False) ** 3),
        lambda x: (torch.linalg.svdvals(_t(_M) + torch.outer(x[:4], x[2:])) ** 3).sum(),
    ),
    "qr": (
        lambda x: np.sum(np.linalg.qr(_M + np.outer(x[:4], x[2:]))[1] ** 2 * _A),
        lambda x: (torch.linalg.qr(_t(_M) + torch.outer(x[:4], x[2:]))[1] ** 2 * _t(_A)).sum(),
    ),
    "matmul+tanh": (
        lambda x: np.sum(np.tanh(_A @ x[:4]) @ _A * x[2:]),
        lambda x: (torch.tanh(_t(_A) @ x[:4]) @ _t(_A) * x[2:]).sum(),
    ),
    "max axis": (
        lambda x: np.sum(np.max(x.reshape(2, 3), axis=1) ** 3),
        lambda x: (x.reshape(2, 3).max(1)[0] ** 3).sum(),
    ),
    "einsum": (
        lambda x: np.einsum("i,j,ij->", x, x**2, np.outer(x, x)),
        lambda x: torch.einsum("i,j,ij->", x, x**2, torch.outer(x, x)),
    ),
    "diff+roll": (
        lambda x: np.sum(np.diff(x) ** 3 * np.roll(x, 2)[1:]),
        lambda x: (torch.diff(x) ** 3 * torch.roll(x, 2)[1:]).sum(),
    ),
    "where": (
        lambda x: np.sum(np.where(x > 0, x**3, -(x**2)) * x[::-1]),
        lambda x: (torch.where(x > 0, x**3, -(x**2)) * x.flip(0)).sum(),
    ),
    "abs": (lambda x: np.sum(np.abs(x) ** 3 * x[0]), lambda x: (torch.abs(x) ** 3 * x[0]).sum()),
    "median": (lambda x: np.median(x**3) * x[0], lambda x: torch.quantile(x**3, 0.5) * x[0]),
    "percentile": (
        lambda x: np.percentile(x**3, 30) * x[0],
        lambda x: torch.quantile(x**3, 0.3) * x[0],
    ),
    "triu+tril": (
        lambda x: np.sum(np.triu(np.outer(x, x), 1) ** 2) + np.sum(np.tril(np.outer(x, x**2))),
        lambda x: (
            (torch.triu(torch.outer(x, x), 1) ** 2).sum() + torch.tril(torch.outer(x, x**2)).sum()
        ),
    ),
    "setitem": (_setitem_np, _setitem_torch),
    "arctan2*hypot": (
        lambda x: np.sum(np.arctan2(x[:3], x[3:]) * np.hypot(x[3:], x[:3])),
        lambda x: (torch.atan2(x[:3], x[3:]) * torch.hypot(x[3:], x[:3])).sum(),
    ),
}
VECTOR_POINTS = {
    "random": _R.standard_normal(6),
    "a zero entry": np.array([0.5, 0.0, -1.2, 2.0, 0.7, -0.4]),
}
_LINALG_THIRD = {"solve", "det", "slogdet"}  # torch's third derivatives of these are wrong


@pytest.mark.parametrize("point", sorted(VECTOR_POINTS))
@pytest.mark.parametrize("name", sorted(VECTORS))
def test_hessian_of_vector_function_matches_torch(name, point):
    f, ft = VECTORS[name]
    x = VECTOR_POINTS[point]
    want = tf.hessian(ft)(_t(x)).numpy()
    for mode, h in [
        ("hessian", tg.hessian(f)),
        ("jacfwd(grad)", tg.jacfwd(tg.grad(f))),
        ("jacobian(grad)", tg.jacobian(tg.grad(f))),
        ("jacfwd(jacfwd)", tg.jacfwd(tg.jacfwd(f))),
    ]:
        np.testing.assert_allclose(h(x), want, rtol=1e-7, atol=1e-9, err_msg=mode)
    v = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(tg.hvp(f, (x,), (v,)), want @ v, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(set(VECTORS) - {"percentile", "median"}))
def test_third_derivative_of_vector_function(name):
    f, ft = VECTORS[name]
    x = VECTOR_POINTS["random"]
    got = {
        "jacfwd^3": tg.jacfwd(tg.jacfwd(tg.jacfwd(f)))(x),
        "jacfwd(hessian)": tg.jacfwd(tg.hessian(f))(x),
        "jacobian(jacobian(grad))": tg.jacobian(tg.jacobian(tg.grad(f)))(x),
    }
    if name in _LINALG_THIRD:
        # central differences of the Hessian (torch's jacfwd over its hessian is off here)
        h = 1e-5
        hess = tg.hessian(f)
        want = np.stack([(hess(x + h * e) - hess(x - h * e)) / (2 * h) for e in np.eye(6)], -1)
        rtol, atol = 1e-6, 1e-6
    else:
        want = tf.jacfwd(tf.jacrev(tf.jacrev(ft)))(_t(x)).numpy()
        rtol, atol = 1e-7, 1e-9
    for mode, g in got.items():
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg=mode)


# ---------------------------------------------------------------------------------------------
# mixed modes, argnums, pytrees, has_aux

_a = _R.standard_normal(3)
_b = _R.standard_normal((2, 3))
_c = 0.7
_va, _vb, _vc = _R.standard_normal(3), _R.standard_normal((2, 3)), 0.3


def _f3(a, b, c):
    return np.sum(np.tanh(b @ a) * c**2) + np.sum(a**3) * c + np.prod(b[:, 0]) * np.sum(a)


def _f3t(a, b, c):
    return (torch.tanh(b @ a) * c**2).sum() + (a**3).sum() * c + b[:, 0].prod() * a.sum()


def _args():
    return _a, _b, _c


def _targs():
    return _t(_a), _t(_b), _t(_c)


def _assert_tree(got, want, rtol=1e-10, atol=1e-12):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_tree(g, w, rtol, atol)
    elif isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _assert_tree(got[k], want[k], rtol, atol)
    else:
        w = want.detach().numpy() if hasattr(want, "detach") else want
        np.testing.assert_allclose(np.asarray(got, dtype=float), w, rtol=rtol, atol=atol)


def _grad_of_jvp(a, b, c):
    return tg.jvp(lambda a_: _f3(a_, b, c), (a,), (_va,))[1] ** 2


def _grad_of_jvp_t(a, b, c):
    return tf.jvp(lambda a_: _f3t(a_, b, c), (a,), (_t(_va),))[1] ** 2


def _grad_of_vjp(a, b, c):
    _, vf = tg.vjp(lambda a_, b_: np.tanh(b_ @ a_) * c, a, b)
    ga, gb = vf(np.array([1.0, -2.0]))
    return np.sum(ga**2) + np.sum(gb * b)


def _grad_of_vjp_t(a, b, c):
    _, vf = tf.vjp(lambda a_, b_: torch.tanh(b_ @ a_) * c, a, b)
    ga, gb = vf(torch.tensor([1.0, -2.0]))
    return (ga**2).sum() + (gb * b).sum()


MIXED = {
    "hessian argnums=(0, 1, 2)": (
        lambda: tg.hessian(_f3, argnums=(0, 1, 2))(*_args()),
        lambda: tf.hessian(_f3t, argnums=(0, 1, 2))(*_targs()),
    ),
    "hessian argnums=(2, 0)": (
        lambda: tg.hessian(_f3, argnums=(2, 0))(*_args()),
        lambda: tf.hessian(_f3t, argnums=(2, 0))(*_targs()),
    ),
    "jacfwd(jacrev) argnums=(0, 1)": (
        lambda: tg.jacfwd(tg.jacrev(_f3, argnums=(0, 1)), argnums=(0, 1))(*_args()),
        lambda: tf.jacfwd(tf.jacrev(_f3t, argnums=(0, 1)), argnums=(0, 1))(*_targs()),
    ),
    "jacrev(jacfwd) argnums=(0, 1)": (
        lambda: tg.jacrev(tg.jacfwd(_f3, argnums=(0, 1)), argnums=(0, 1))(*_args()),
        lambda: tf.jacrev(tf.jacfwd(_f3t, argnums=(0, 1)), argnums=(0, 1))(*_targs()),
    ),
    "jacobian(grad argnums=(0, 2))": (
        lambda: tg.jacobian(tg.grad(_f3, argnums=(0, 2)), argnums=(0, 2))(*_args()),
        lambda: tf.jacrev(tf.grad(_f3t, argnums=(0, 2)), argnums=(0, 2))(*_targs()),
    ),
    "jvp(grad argnums=(0, 1))": (
        lambda: tg.jvp(tg.grad(_f3, argnums=(0, 1)), _args(), (_va, _vb, _vc)),
        lambda: tf.jvp(tf.grad(_f3t, argnums=(0, 1)), _targs(), (_t(_va), _t(_vb), _t(_vc))),
    ),
    "grad of a jvp": (
        lambda: tg.grad(_grad_of_jvp, argnums=(0, 1, 2))(*_args()),
        lambda: tf.grad(_grad_of_jvp_t, argnums=(0, 1, 2))(*_targs()),
    ),
    "hessian of a jvp": (
        lambda: tg.hessian(_grad_of_jvp)(*_args()),
        lambda: tf.hessian(_grad_of_jvp_t)(*_targs()),
    ),
    "grad of a vjp": (
        lambda: tg.grad(_grad_of_vjp, argnums=(0, 1, 2))(*_args()),
        lambda: tf.grad(_grad_of_vjp_t, argnums=(0, 1, 2))(*_targs()),
    ),
    "hessian of a vjp": (
        lambda: tg.hessian(_grad_of_vjp, argnums=1)(*_args()),
        lambda: tf.hessian(_grad_of_vjp_t, argnums=1)(*_targs()),
    ),
    "jvp of a vjp": (
        lambda: tg.jvp(_grad_of_vjp, _args(), (_va, _vb, _vc))[1],
        lambda: tf.jvp(_grad_of_vjp_t, _targs(), (_t(_va), _t(_vb), _t(_vc)))[1],
    ),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_modes_match_torch(name):
    got, want = MIXED[name]
    _assert_tree(got(), want())


def test_hessian_and_hvp_of_a_pytree_argument():
    def fp(p):
        return _f3(p["a"], p["bc"][0], p["bc"][1])

    def fpt(p):
        return _f3t(p["a"], p["bc"][0], p["bc"][1])

    p = {"a": _a, "bc": (_b, _c)}
    pt = {"a": _t(_a), "bc": (_t(_b), _t(_c))}
    v = {"a": _va, "bc": (_vb, _vc)}
    vt = {"a": _t(_va), "bc": (_t(_vb), _t(_vc))}
    _assert_tree(tg.hessian(fp)(p), tf.hessian(fpt)(pt))
    _assert_tree(tg.hvp(fp, (p,), (v,)), tf.jvp(tf.grad(fpt), (pt,), (vt,))[1])


def test_nested_grad_through_has_aux():
    def fa(a, b, c):
        v = _f3(a, b, c)
        return v, {"v": v, "a2": a * 2}

    def outer(c):
        g, aux = tg.grad(fa, has_aux=True)(_a, _b, c)
        return np.sum(g**2) + aux["v"]

    def outer_t(c):
        g = tf.grad(_f3t)(_t(_a), _t(_b), c)
        return (g**2).sum() + _f3t(_t(_a), _t(_b), c)

    c = _t(_c)
    np.testing.assert_allclose(tg.grad(outer)(_c), tf.grad(outer_t)(c).item(), rtol=1e-10)
    np.testing.assert_allclose(
        tg.grad(tg.grad(outer))(_c), tf.grad(tf.grad(outer_t))(c).item(), rtol=1e-10
    )
    np.testing.assert_allclose(
        tg.jvp(outer, (_c,), (1.0,))[1], tf.jvp(outer_t, (c,), (torch.tensor(1.0),))[1].item()
    )
    (value, aux), g = tg.value_and_grad(fa, has_aux=True, argnums=(0, 2))(*_args())
    want = tf.grad(_f3t, argnums=(0, 2))(*_targs())
    _assert_tree(g, want)
    assert aux["v"] == value


# ---------------------------------------------------------------------------------------------
# the Tensor API at higher order, side by side with torch.autograd

_X0 = np.array([0.3, -1.2, 0.8])


def _tensor_chain(m, leaf):
    x = leaf(_X0)
    y = (x.sin() * x.exp()).sum() * (x**3).sum()
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad((g2 * g2).sum(), x, create_graph=True)
    (g4,) = m.autograd.grad(g3[1], x)
    return [g1, g2, g3, g4]


def _tensor_inplace_between(m, leaf):
    x = leaf(_X0)
    z = (x * 2.0).clone()
    z.mul_(x)
    z += x.tanh()
    (g1,) = m.autograd.grad((z**2).sum(), x, create_graph=True)
    w = g1.clone()
    w[0] = (w[0].clone() if m is torch else w[0]) * x[1]
    w.add_(x**2)
    (g2,) = m.autograd.grad(w.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.pow(2).sum(), x)
    return [g1, g2, g3]


def _tensor_backward_accumulates(m, leaf):
    x = leaf(_X0)
    y = (x.exp() * x).sum()
    y.backward(create_graph=True, retain_graph=True)
    y.backward(create_graph=True)
    g2 = x.grad
    x.grad = None
    (g2**2).sum().backward()
    return [g2, x.grad]


def _tensor_custom_function(m, leaf):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x**3 * k

        @staticmethod
        def backward(ctx, go):
            (x,) = ctx.saved_tensors
            return go * 3 * x**2 * ctx.k, None

    x = leaf(_X0)
    y = (Cube.apply(x.sin(), 2.0) * x).sum()
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), x)
    return [g1, g2, g3]


def _tensor_custom_function_two_inputs(m, leaf):
    class Mul(m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, go):
            a, b = ctx.saved_tensors
            return go * b, go * a

    x, w = leaf(_X0), leaf(_X0[::-1].copy())
    gx, gw = m.autograd.grad((Mul.apply(x, w) ** 2).sum(), (x, w), create_graph=True)
    hx, hw = m.autograd.grad((gx * gw).sum(), (x, w), create_graph=True)
    (k,) = m.autograd.grad(hx.sum() + hw[0], w)
    return [gx, gw, hx, hw, k]


def _tensor_checkpoint(m, leaf):
    if m is torch:
        import torch.utils.checkpoint as tc

        def ck(fn, *a):
            return tc.checkpoint(fn, *a, use_reentrant=False)
    else:
        ck = tg.checkpoint
    x = leaf(_X0)
    y = ck(lambda a: (a.sin() * a**2).sum() * a, x).sum()
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), x)
    return [g1, g2, g3]


def _tensor_grad_outputs_with_grad(m, leaf):
    x = leaf(_X0)
    (g,) = m.autograd.grad(x.sum() ** 2, x, grad_outputs=m.tensor(3.0), create_graph=True)
    v = leaf(np.array([1.0, 2.0, 3.0]))
    (g2,) = m.autograd.grad(g, x, grad_outputs=v, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), v)
    return [g, g2, g3]


def _tensor_kinks_third(m, leaf):
    x = leaf(_X0)
    y = (x.abs() ** 3).sum() + (x.clamp(-1, 1) ** 3).sum() + x.max() ** 3
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), x)
    return [g1, g2, g3]


def _tensor_reductions_third(m, leaf):
    x = leaf(_X0)
    y = x.norm() ** 3 + x.logsumexp(0) ** 2 + x.softmax(0)[0] ** 2
    y = y + x.cumprod(0).sum() + x.cumsum(0).pow(3).sum() + x.prod() ** 2
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), x)
    return [g1, g2, g3]


def _tensor_hooks(m, leaf):
    x = leaf(_X0)
    y = x.sin()
    y.register_hook(lambda gr: gr * y)
    z = x**2
    z.register_hook(lambda gr: gr * 3)
    (g,) = m.autograd.grad(y.sum() + z.sum(), x, create_graph=True)
    (h,) = m.autograd.grad(g.sum(), x)
    return [g, h]


def _tensor_retain_graph_mixed(m, leaf):
    x, w = leaf(_X0), leaf(np.array([1.0, 2.0, 3.0]))
    (gx,) = m.autograd.grad((x * w).sin().sum(), x, create_graph=True)
    (gw,) = m.autograd.grad(gx.sum(), w, retain_graph=True, create_graph=True)
    (gxx,) = m.autograd.grad(gx.sum(), x, retain_graph=True)
    (k,) = m.autograd.grad(gw.sum(), x)
    return [gx, gw, gxx, k]


def _tensor_inplace_chain(m, leaf):
    x = leaf(_X0)
    y = x.clone()
    y.mul_(x).add_(x.sin()).div_(x.exp())
    y.pow_(2)
    v = y[1:]
    v.mul_(x[:2])
    (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = m.autograd.grad(g.sum(), x, create_graph=True)
    (k,) = m.autograd.grad(h.sum(), x)
    return [g, h, k]


TENSOR_PROGRAMS = {
    "create_graph chain to 4th order": _tensor_chain,
    "in-place ops between gradients": _tensor_inplace_between,
    "backward(create_graph) accumulates": _tensor_backward_accumulates,
    "custom Function differentiated 3 times": _tensor_custom_function,
    "custom Function of two inputs": _tensor_custom_function_two_inputs,
    "checkpoint differentiated 3 times": _tensor_checkpoint,
    "grad_outputs that require grad": _tensor_grad_outputs_with_grad,
    "abs clamp max to 3rd order": _tensor_kinks_third,
    "norm logsumexp softmax cumprod prod to 3rd order": _tensor_reductions_third,
    "hooks under create_graph": _tensor_hooks,
    "retain_graph and mixed partials": _tensor_retain_graph_mixed,
    "in-place chain and view to 3rd order": _tensor_inplace_chain,
}


@pytest.mark.parametrize("name", sorted(TENSOR_PROGRAMS))
def test_tensor_api_higher_order_matches_torch(name):
    prog = TENSOR_PROGRAMS[name]
    got = prog(tg, lambda v: tg.tensor(v, requires_grad=True))
    want = prog(torch, lambda v: torch.tensor(v, requires_grad=True))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(
            g.detach().numpy(), w.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=str(k)
        )


@pytest.mark.parametrize(
    "f, order",
    [(lambda x: x**2, 3), (lambda x: x.abs() ** 3, 4), (lambda x: np.fmod(x, 0.7) ** 2, 3)],
    ids=["x**2", "abs(x)**3", "fmod(x, .7)**2"],
)
def test_create_graph_past_a_constant_derivative_gives_zero_as_torch(f, order):
    """A derivative that is constant in x differentiates to 0 with create_graph too (its
    operands are reached through symbolic zeros), as without it and as in PyTorch."""
    x = tg.tensor(0.3, requires_grad=True)
    y = f(x)
    for _ in range(order - 1):
        (y,) = tg.autograd.grad(y, x, create_graph=True)
    assert y.requires_grad
    assert tg.autograd.grad(y, x, retain_graph=True)[0].item() == 0.0  # this one holds
    (d,) = tg.autograd.grad(y, x, create_graph=True)
    assert d.item() == 0.0


def test_writes_into_a_gradient_graph_torch_refuses_are_differentiated_exactly():
    # torch raises (a value its backward saved was overwritten); tapegrad's rows keep their
    # values, so the derivatives are of what was computed.  Closed forms at x = (.3, -1.2, .8)
    x = tg.tensor(_X0, requires_grad=True)
    (g,) = tg.autograd.grad((x**3).sum(), x, create_graph=True)
    g2 = g * 1.0
    g2[0] = g2[1] * g2[2]  # (9 x1^2 x2^2, 3 x1^2, 3 x2^2)
    (h,) = tg.autograd.grad(g2.sum(), x, create_graph=True)
    (k,) = tg.autograd.grad(h.sum(), x)
    x0, x1, x2 = _X0
    np.testing.assert_allclose(g2.detach().numpy(), [9 * x1**2 * x2**2, 3 * x1**2, 3 * x2**2])
    np.testing.assert_allclose(
        h.detach().numpy(), [0.0, 18 * x1 * x2**2 + 6 * x1, 18 * x1**2 * x2 + 6 * x2]
    )
    np.testing.assert_allclose(
        k.numpy(), [0.0, 18 * x2**2 + 6 + 36 * x1 * x2, 36 * x1 * x2 + 18 * x1**2 + 6]
    )
    # an overlapping slice write: y = (x0, x1 x0, x2 x1)
    x = tg.tensor(_X0, requires_grad=True)
    y = x.clone()
    y[1:] = y[1:] * y[:-1]
    (g,) = tg.autograd.grad((y**2).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad((g * x).sum(), x)
    np.testing.assert_allclose(h.numpy()[0], 4 * x0 + 8 * x0 * x1**2)


# ---------------------------------------------------------------------------------------------
# custom rules and implicit functions at higher order

x_ = 0.7


@tg.custom_vjp
def _mysin(x):
    return np.sin(x)


_mysin.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, g: (g * c,))


@tg.custom_vjp
def _mycube(x, k):
    return k * x**3


_mycube.defvjp(
    lambda x, k: (k * x**3, (x, k)), lambda r, g: (g * 3 * r[1] * r[0] ** 2, g * r[0] ** 3)
)


@tg.custom_jvp
def _sin_times(x, y):
    return np.sin(x) * y


@_sin_times.defjvp
def _sin_times_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    return _sin_times(x, y), np.cos(x) * y * dx + np.sin(x) * dy


class _Cube(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tg.tensor(x.data**3)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2


def _sqrt_fixed_point(a):
    return tg.fixed_point(
        lambda a: lambda x: 0.5 * (x + a / x), a, 1.0, lambda u, v: abs(u - v), 1e-14
    )


def _ode_decay(a):
    from tapegrad.scipy.integrate import odeint

    ys = odeint(
        lambda y, t, a: -a * y, np.array([1.0]), np.array([0.0, 1.0]), a, rtol=1e-12, atol=1e-12
    )
    return ys[-1, 0]


def _grads(f, k):
    for _ in range(k):
        f = tg.grad(f)
    return f


CUSTOM = [
    ("custom_vjp d2", lambda: _grads(_mysin, 2)(x_), -math.sin(x_), 1e-12),
    ("custom_vjp d3", lambda: _grads(_mysin, 3)(x_), -math.cos(x_), 1e-12),
    ("custom_vjp hessian", lambda: tg.hessian(_mysin)(x_), -math.sin(x_), 1e-12),
    ("custom_vjp jacobian(grad)", lambda: tg.jacobian(tg.grad(_mysin))(x_), -math.sin(x_), 1e-12),
    ("custom_vjp residual pair d3", lambda: _grads(_mycube, 3)(x_, 2.0), 12.0, 1e-12),
    (
        "custom_vjp mixed",
        lambda: tg.grad(tg.grad(_mycube), argnums=1)(x_, 2.0),
        3 * x_**2,
        1e-12,
    ),
    ("custom_jvp d3", lambda: _grads(_sin_times, 3)(x_, 1.3), -math.cos(x_) * 1.3, 1e-12),
    (
        "custom_jvp mixed",
        lambda: tg.grad(tg.grad(_sin_times), argnums=1)(x_, 1.3),
        math.cos(x_),
        1e-12,
    ),
    (
        "custom_jvp jvp of jvp",
        lambda: _d_fwd(_d_fwd(lambda b: _sin_times(b, 1.3)))(x_),
        -math.sin(x_) * 1.3,
        1e-12,
    ),
    ("Function on .data d3", lambda: _grads(_Cube.apply, 3)(x_), 6.0, 1e-12),
    ("Function hessian", lambda: tg.hessian(_Cube.apply)(x_), 6 * x_, 1e-12),
    ("fixed_point d2", lambda: _grads(_sqrt_fixed_point, 2)(2.0), -0.25 * 2.0**-1.5, 1e-10),
    ("fixed_point d3", lambda: _grads(_sqrt_fixed_point, 3)(2.0), 0.375 * 2.0**-2.5, 1e-9),
    ("fixed_point hessian", lambda: tg.hessian(_sqrt_fixed_point)(2.0), -0.25 * 2.0**-1.5, 1e-10),
    ("odeint d2", lambda: _grads(_ode_decay, 2)(0.8), math.exp(-0.8), 1e-6),
    ("odeint hessian", lambda: tg.hessian(_ode_decay)(0.8), math.exp(-0.8), 1e-6),
]


@pytest.mark.parametrize("name, got, want, rtol", CUSTOM, ids=[c[0] for c in CUSTOM])
def test_custom_rules_at_higher_order(name, got, want, rtol):
    np.testing.assert_allclose(got(), want, rtol=rtol, atol=1e-12)


def test_checkpoint_closing_over_an_outer_traced_value():
    def outer(y):
        return tg.grad(lambda x: tg.checkpoint(lambda a: np.sin(a * y) * a, x))(x_)

    def outer_ref(y):
        return tg.grad(lambda x: np.sin(x * y) * x)(x_)

    for d in (tg.grad, lambda f: tg.grad(tg.grad(f)), tg.hessian):
        np.testing.assert_allclose(d(outer)(1.3), d(outer_ref)(1.3), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# traces replayed far from their recording

TRACED = {
    "abs^3": lambda x: np.sum(np.abs(x) ** 3),
    "maximum": lambda x: np.sum(np.maximum(x, 0.5) * x**2),
    "where": lambda x: np.sum(np.where(x > 0, x**3, np.sin(x))),
    "python if": lambda x: np.sum(x**2) if x[0] > 0 else np.sum(x**3),
    "python max": lambda x: max(x[0], x[1]) * x[2],
    "x**3.5": lambda x: np.sum(x**3.5),
    "power(x, y)": lambda x: np.power(x[0], x[1]) * x[2],
    "x**x": lambda x: np.sum(np.power(x, x)),
    "x sqrt x": lambda x: np.sum(x * np.sqrt(x)),
    "sinc": lambda x: np.sum(np.sinc(x)),
    "log1p(exp)": lambda x: np.sum(np.log1p(np.exp(x))),
    "naive sigmoid": lambda x: np.sum(np.exp(x) / (1 + np.exp(x))),
    "hypot": lambda x: np.hypot(x[0], x[1]) + x[2],
    "arctan2": lambda x: np.arctan2(x[0], x[1]) * x[2],
    "prod^2": lambda x: np.prod(x) ** 2,
    "cumprod": lambda x: np.sum(np.cumprod(x)),
    "norm": lambda x: np.linalg.norm(x),
    "sort": lambda x: np.sort(x)[0] * 3.0 + np.sort(x)[2],
    "median": lambda x: np.median(x) * x[0],
    "clip": lambda x: np.sum(np.clip(x, -1, 1) ** 3),
    "round": lambda x: np.sum(np.round(x) * x),
    "log in where": lambda x: np.sum(np.where(x > 0, np.log(x), x)),
    "boolean index": lambda x: np.sum(x[x > 0] ** 3),
    "count_nonzero": lambda x: np.sum(x) * np.count_nonzero(x),
    "isclose": lambda x: np.sum(np.where(np.isclose(x, 1.0), 0.0, x**2)),
}
FAR = {
    "negative": np.array([-0.7, -1.3, -2.1]),
    "mixed": np.array([-0.7, 1.3, -2.1]),
    "zeros": np.zeros(3),
    "one zero": np.array([0.0, 1.3, 2.1]),
    "tiny": np.array([1e-8, -1e-8, 1e-300]),
    "big": np.array([1e6, 2e6, 7e5]),
    "huge": np.array([800.0, -800.0, 1e300]),
    "integers": np.array([1.0, 2.0, 3.0]),
    "ties": np.array([1.0, 1.0, 1.0]),
    "nan": np.array([np.nan, 1.0, 2.0]),
    "inf": np.array([np.inf, 1.0, -np.inf]),
}


def _same_ieee(got, want, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-9, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", sorted(TRACED))
def test_trace_replays_far_from_the_recording_as_eager(name):
    f = TRACED[name]
    tr = tg.trace(f, np.array([0.7, 1.3, 2.1]))
    v = np.array([0.3, -0.5, 1.1])
    for where, x in FAR.items():
        for what, replay, eager in [
            ("grad", lambda x: tr.grad(x), lambda x: tg.grad(f)(x)),
            ("hvp", lambda x: tr.hvp(x, v), lambda x: tg.hvp(f, (x,), (v,))),
            ("jvp", lambda x: tr.jvp(x, v)[1], lambda x: tg.jvp(f, (x,), (v,))[1]),
        ]:
            try:
                got = replay(x)
            except tg.RetraceRequired:
                continue  # a guard saw another branch: refusing is right
            _same_ieee(got, eager(x), f"{name} at {where}: {what}")


def test_grad_many_with_retrace_answers_items_on_both_branches():
    def f(x):
        if x[0] > 0:
            return np.sum(x**2)
        return np.sum(np.sin(x)) * x[1]

    xs = np.array([[1.0, 2.0], [-1.0, 2.0], [0.0, 3.0], [2.0, -1.0], [np.nan, 1.0]])
    tr = tg.trace(f, xs[0], retrace=True)
    want = np.stack([tg.grad(f)(x) for x in xs])
    _same_ieee(tr.grad_many(xs), want, "grad_many")
    v = np.array([0.3, -0.7])
    for x in xs:
        _same_ieee(tr.hvp(x, v), tg.hvp(f, (x,), (v,)), f"hvp at {x}")
    with pytest.raises(tg.RetraceRequired):
        tg.trace(f, xs[0]).grad_many(xs)


def test_trace_with_pytree_and_argnums_replays_hvp_and_jvp():
    def g(p, s, w):
        return np.sum(np.tanh(p["a"] * s) * w) + p["b"] ** 2 * s

    p = {"a": np.array([0.5, -1.0]), "b": 0.3}
    w = np.array([2.0, 1.0])
    tr = tg.trace(g, p, 1.5, w, argnums=(0, 1))
    p2 = {"a": np.array([-2.0, 3.0]), "b": -0.1}
    t = ({"a": np.array([1.0, 0.0]), "b": 1.0}, 0.5)
    w2 = np.array([1.0, 5.0])
    _assert_tree(tr.grad(p2, 0.2, w2), tg.grad(g, argnums=(0, 1))(p2, 0.2, w2), rtol=1e-12)
    _assert_tree(tr.hvp(p2, 0.2, w, t), tg.hvp(lambda p, s: g(p, s, w), (p2, 0.2), t), rtol=1e-12)
    _assert_tree(tr.jvp(p2, 0.2, w, t), tg.jvp(lambda p, s: g(p, s, w), (p2, 0.2), t), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# disagreements: outputs that cannot be differentiated give zeros instead of an error

NOT_FLOAT = {
    "a count": lambda x: np.sum(x > 0),
    "argmax": lambda x: np.argmax(x),
    "a comparison": lambda x: np.sum(x) > 0,
    "None": lambda x: None,
}
_XN = np.array([0.5, 1.0, -1.2])


@pytest.mark.parametrize("name", sorted(NOT_FLOAT))
def test_grad_refuses_an_output_that_is_not_a_float(name):
    with pytest.raises(TypeError, match="grad"):
        tg.grad(NOT_FLOAT[name])(_XN)
    with pytest.raises(TypeError, match="grad"):
        tg.jacobian(tg.grad(NOT_FLOAT[name]))(_XN)


@pytest.mark.parametrize("name", sorted(NOT_FLOAT))
def test_hessian_refuses_an_output_that_is_not_a_float(name):
    """tg.hessian refuses a count, a comparison or None, as tg.grad does (it gave zeros)."""
    with pytest.raises(TypeError):
        tg.hessian(NOT_FLOAT[name])(_XN)


@pytest.mark.parametrize("name", sorted(NOT_FLOAT))
def test_hvp_refuses_an_output_that_is_not_a_float(name):
    """tg.hvp refuses a count, a comparison or None, as tg.grad does (it gave zeros)."""
    with pytest.raises(TypeError):
        tg.hvp(NOT_FLOAT[name], (_XN,), (np.ones(3),))


@pytest.mark.parametrize("name", ["a count", "argmax", "a comparison"])
@pytest.mark.parametrize("method", ["grad", "hvp"])
def test_trace_refuses_an_output_that_is_not_a_float(name, method):
    """A trace of f returning a count or a comparison refuses tr.grad and tr.hvp (zeros before)."""
    f = NOT_FLOAT[name]
    with pytest.raises((TypeError, ValueError)):
        tr = tg.trace(f, _XN)
        tr.grad(_XN) if method == "grad" else tr.hvp(_XN, np.ones(3))


def test_trace_of_none_output_is_refused():
    tr = tg.trace(NOT_FLOAT["None"], _XN)
    with pytest.raises(ValueError, match="must return a scalar"):
        tr.grad(_XN)
