"""Do forward mode, reverse mode, higher orders and finite differences agree?

A seeded generator writes programs of plain NumPy code over a (3, 4) input: chains of
elementwise ufuncs (the special ones included: log1p, expm1, arctan2, hypot, logaddexp, sinc,
cbrt, fractional and negative powers, maximum / minimum / fmax / fmin, clip, where, abs,
sign, copysign), ``tapegrad.scipy.special`` (gammaln, digamma, polygamma, erf, erfc, erfinv,
expit, logit, xlogy, xlog1py, entr, ive, iv, logsumexp, softmax), reductions with axis and
keepdims (sum, mean, prod, max, min, std, var, cumsum, cumprod, norm), broadcasting (3, 1) x
(1, 4), matmul / einsum / dot / outer / tensordot, reshape / transpose / concatenate / stack /
slicing / repeat, and np.linalg (inv, det, slogdet, solve, cholesky, eigh, eigvalsh, svd
values, pinv, matrix_power, norms of every order).  Each program is checked at a random
point away from kinks.

Points are generic (no ties, no rank deficiency); ``NOT_SMOOTH`` lists the seed left out.

- first order: ``tg.jacobian`` = ``tg.jacrev`` = ``tg.jacfwd`` = J from ``tg.jvp`` along
  random directions = ``tg.vjp`` pullbacks (<u, J v> both ways), against central finite
  differences of the values;
- second order of the weighted sum s: ``tg.hessian`` = ``tg.jacobian(tg.grad(s))`` (symmetric)
  and, along random directions, ``tg.hvp`` = ``tg.jvp(tg.grad(s))`` = ``tg.grad(<grad s, v>)``
  = the Tensor API's ``tg.autograd.grad(..., create_graph=True)`` twice, against central
  differences of ``tg.grad``;
- third order (every third seed): ``tg.jvp`` of ``tg.hvp``, ``tg.grad`` of <hvp, v2>, ``tg.jvp``
  of ``tg.jvp`` of ``tg.grad`` and ``tg.autograd.grad`` three times, against central
  differences of ``tg.hvp``.

Besides: every unary and binary op of the generator at scalar points through 16 compositions
of grad / jvp / hessian / hvp up to third order (against central differences of the second
derivative), pytree inputs and outputs, float32 and 0-d inputs, non-finite points where the
derivatives are defined (exp at -inf ...), the Tensor API's ``backward(create_graph=True)``
against PyTorch, ``torch.func`` (jacfwd, jacrev, hessian, jvp) on direct translations, and
argnums orders, differentiation in the tangents and ``tg.custom_jvp`` against closed forms.
PyTorch, SciPy and JAX were the references of the hunt; JAX is not needed here.

Findings are kept at the end as strict xfails (what is wrong is in their reasons).
"""

import random
import warnings

import numpy as np
import pytest

ssp = pytest.importorskip("scipy.special")  # (the programs use tapegrad.scipy.special)

import tapegrad as tg  # noqa: E402
import tapegrad.scipy.special as tsp  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _ive(sp, v, a):
    return sp.ive(v, a)


# ---- the generator: each op written once over a module of special functions `sp` ------------

UNARY = {
    "sin": lambda sp, a: np.sin(a),
    "cos": lambda sp, a: np.cos(a),
    "tan": lambda sp, a: np.tan(0.5 * np.tanh(a)),
    "tanh": lambda sp, a: np.tanh(a),
    "exp": lambda sp, a: np.exp(0.5 * a),
    "expm1": lambda sp, a: np.expm1(a),
    "exp2": lambda sp, a: np.exp2(a),
    "log": lambda sp, a: np.log(1.5 + np.sin(a)),
    "log1p": lambda sp, a: np.log1p(a * a),
    "log2": lambda sp, a: np.log2(a * a + 0.3),
    "log10": lambda sp, a: np.log10(a * a + 0.3),
    "sqrt": lambda sp, a: np.sqrt(a * a + 0.2),
    "cbrt": lambda sp, a: np.cbrt(a + 3.0),
    "arctan": lambda sp, a: np.arctan(a),
    "arcsin": lambda sp, a: np.arcsin(0.7 * np.tanh(a)),
    "arccos": lambda sp, a: np.arccos(0.7 * np.tanh(a)),
    "arcsinh": lambda sp, a: np.arcsinh(a),
    "arccosh": lambda sp, a: np.arccosh(a * a + 1.3),
    "arctanh": lambda sp, a: np.arctanh(0.7 * np.tanh(a)),
    "sinh": lambda sp, a: np.sinh(a),
    "cosh": lambda sp, a: np.cosh(a),
    "sinc": lambda sp, a: np.sinc(a),
    "pow_frac": lambda sp, a: (a * a + 0.5) ** 1.7,
    "pow_neg": lambda sp, a: (a * a + 0.5) ** -1.5,
    "pow_int": lambda sp, a: a**3,
    "pow_negint": lambda sp, a: (a * a + 1.0) ** -2,
    "power": lambda sp, a: np.power(a * a + 0.4, 0.3),
    "rpow": lambda sp, a: 1.7**a,
    "square": lambda sp, a: np.square(a),
    "reciprocal": lambda sp, a: np.reciprocal(a * a + 0.5),
    "abs": lambda sp, a: np.abs(a) * a,
    "sign": lambda sp, a: np.sign(a) * a * a,
    "deg2rad": lambda sp, a: np.deg2rad(a),
    "expit": lambda sp, a: sp.expit(a),
    "logit": lambda sp, a: sp.logit(sp.expit(a) * 0.8 + 0.1),
    "erf": lambda sp, a: sp.erf(a),
    "erfc": lambda sp, a: sp.erfc(a),
    "erfinv": lambda sp, a: sp.erfinv(0.8 * np.tanh(a)),
    "gammaln": lambda sp, a: sp.gammaln(a * a + 0.5),
    "digamma": lambda sp, a: sp.digamma(a * a + 0.5),
    "polygamma1": lambda sp, a: sp.polygamma(1, a * a + 0.5),
    "gamma": lambda sp, a: sp.gamma(a * a + 0.5),
    "i0e": lambda sp, a: _ive(sp, 0, a),
    "i1e": lambda sp, a: _ive(sp, 1, a),
    "i0": lambda sp, a: sp.i0(a),
    "i1": lambda sp, a: sp.i1(a),
    "xlogy": lambda sp, a: sp.xlogy(a, a * a + 0.5),
    "xlog1py": lambda sp, a: sp.xlog1py(a, a * a),
    "entr": lambda sp, a: sp.entr(a * a + 0.2),
}
BINARY = {
    "add": lambda sp, a, b: a + b,
    "sub": lambda sp, a, b: a - b,
    "mul": lambda sp, a, b: a * b,
    "div": lambda sp, a, b: a / (b * b + 0.5),
    "arctan2": lambda sp, a, b: np.arctan2(a, b * b + 0.3),
    "arctan2_b": lambda sp, a, b: np.arctan2(a + 2.0, b),
    "hypot": lambda sp, a, b: np.hypot(a, b),
    "logaddexp": lambda sp, a, b: np.logaddexp(a, b),
    "logaddexp2": lambda sp, a, b: np.logaddexp2(a, b),
    "maximum": lambda sp, a, b: np.maximum(a, b + 0.31),
    "minimum": lambda sp, a, b: np.minimum(a, b - 0.27),
    "fmax": lambda sp, a, b: np.fmax(a, b + 0.13),
    "fmin": lambda sp, a, b: np.fmin(a, b),
    "where": lambda sp, a, b: np.where(a > b + 0.05, a * b, a - b),
    "pow_ab": lambda sp, a, b: (a * a + 0.5) ** np.tanh(b),
    "power_exp": lambda sp, a, b: np.power(np.exp(a), b),
    "float_power": lambda sp, a, b: np.float_power(a * a + 0.3, b),
    "xlogy_ab": lambda sp, a, b: sp.xlogy(a, b * b + 0.1),
    "copysign": lambda sp, a, b: np.copysign(a, b) * a,
    "clip": lambda sp, a, b: np.clip(a, -0.91, 0.93) + b,
}


def _spd(a):
    s = a[:, :3]
    return s @ s.T + 3.0 * np.eye(3)


STRUCT = {
    "mean0": lambda sp, a: a - np.mean(a, axis=0, keepdims=True),
    "std1": lambda sp, a: a * np.std(a, axis=1, keepdims=True),
    "var0": lambda sp, a: a + np.var(a, axis=0, keepdims=True),
    "sum1": lambda sp, a: a * np.sum(a, axis=1, keepdims=True) * 0.3,
    "prod0": lambda sp, a: a + np.prod(a, axis=0, keepdims=True),
    "max1": lambda sp, a: a - np.max(a, axis=1, keepdims=True),
    "min0": lambda sp, a: a * np.min(a, axis=0, keepdims=True),
    "max_all": lambda sp, a: a * np.max(a),
    "cumsum1": lambda sp, a: np.cumsum(a, axis=1) * 0.5,
    "cumsum0": lambda sp, a: np.cumsum(a, axis=0) * 0.5,
    "cumprod1": lambda sp, a: np.cumprod(np.tanh(a) + 1.2, axis=1),
    "cumprod0": lambda sp, a: np.cumprod(a, axis=0),
    "norm_ax1": lambda sp, a: a / np.linalg.norm(a, axis=1, keepdims=True),
    "norm_ax0": lambda sp, a: a * np.linalg.norm(a, axis=0, keepdims=True),
    "logsumexp": lambda sp, a: a - sp.logsumexp(a, axis=1, keepdims=True),
    "softmax": lambda sp, a: sp.softmax(a, axis=0),
    "outer": lambda sp, a: a + np.outer(a[:, 0], a[0, :]) * 0.3,
    "broadcast": lambda sp, a: a[:, :1] * a[:1, :] + a,
    "matmul": lambda sp, a: a @ (a.T @ a) * 0.1,
    "einsum": lambda sp, a: np.einsum("ij,kj,kl->il", a, a, a) * 0.1,
    "dot": lambda sp, a: np.dot(a[:, :3], a[:3, :]) * 0.5,
    "tensordot": lambda sp, a: np.tensordot(a, a[:, :3], axes=([0], [0])).T * 0.2,
    "reshape_T": lambda sp, a: a.reshape(4, 3).T.reshape(3, 4) + a,
    "transpose": lambda sp, a: np.transpose(a.reshape(3, 2, 2), (0, 2, 1)).reshape(3, 4) * a,
    "concatenate": lambda sp, a: np.concatenate([a[:, 2:], a[:, :2]], axis=1) * a,
    "stack": lambda sp, a: np.stack([a, a * a], axis=0).sum(axis=0),
    "slice_repeat": lambda sp, a: np.repeat(a[::-1, ::2], 2, axis=1) + a,
    "inv": lambda sp, a: np.linalg.inv(_spd(a)) @ a,
    "det": lambda sp, a: a * np.linalg.det(_spd(a)) * 0.01,
    "slogdet": lambda sp, a: a * np.linalg.slogdet(_spd(a))[1],
    "solve": lambda sp, a: np.linalg.solve(_spd(a), a),
    "cholesky": lambda sp, a: np.linalg.cholesky(_spd(a)) @ a * 0.3,
    "eigh": lambda sp, a: a * np.linalg.eigh(_spd(a))[0][:, None] * 0.2,
    "eigvalsh": lambda sp, a: a * np.linalg.eigvalsh(_spd(a))[:, None] * 0.2,
    "svd_values": lambda sp, a: a * np.linalg.svd(a, compute_uv=False)[:, None],
    "norm_fro": lambda sp, a: a * np.linalg.norm(a),
    "norm_nuc": lambda sp, a: a * np.linalg.norm(a, "nuc"),
    "norm_2": lambda sp, a: a * np.linalg.norm(a, 2),
    "norm_m2": lambda sp, a: a * np.linalg.norm(a, -2),
    "norm_1": lambda sp, a: a * np.linalg.norm(a, 1),
    "norm_inf": lambda sp, a: a * np.linalg.norm(a, np.inf),
    "vnorm_3": lambda sp, a: a * np.linalg.norm(a.reshape(-1), 3),
    "vnorm_1": lambda sp, a: a * np.linalg.norm(a.reshape(-1), 1),
    "pinv": lambda sp, a: np.linalg.pinv(a).T * 0.5 + a,
    "matrix_power": lambda sp, a: np.linalg.matrix_power(a[:, :3] * 0.5, 3) @ a,
}


def gen(seed):
    """A program: 2 to 4 steps, each an elementwise, binary (with the input, its reverse, a
    broadcast (3, 1) x (1, 4) or a column mean) or structural op."""
    r = random.Random(seed)
    steps = []
    for _ in range(r.randint(2, 4)):
        k = r.random()
        if k < 0.4:
            steps.append(("u", r.choice(sorted(UNARY))))
        elif k < 0.65:
            steps.append(("b", r.choice(sorted(BINARY)), r.choice(["x", "rev", "bc", "mean"])))
        else:
            steps.append(("s", r.choice(sorted(STRUCT))))
    return steps


def build(steps, sp):
    def f(x):
        a = x
        for st in steps:
            if st[0] == "u":
                a = UNARY[st[1]](sp, a)
            elif st[0] == "s":
                a = STRUCT[st[1]](sp, a)
            else:
                fn = BINARY[st[1]]
                if st[2] == "x":
                    a = fn(sp, a, x)
                elif st[2] == "rev":
                    a = fn(sp, x[::-1], a)
                elif st[2] == "bc":
                    a = fn(sp, a[:, 1:2], a[2:3, :])
                else:
                    a = fn(sp, a, np.mean(a, axis=0, keepdims=True))
        return a

    return f


N_PROGRAMS = 100  # (200 ran once: the same findings)
# seeds whose program is badly conditioned at its point: pinv of a matrix of condition 1e4,
# whose Hessian is symmetric to 1e-4 only (JAX's alike).  Up to seed 700 the others left
# out would be 454, 467, 494, 510 (a matrix norm of a rank-deficient matrix: tapegrad raises
# naming svd, rightly) and 654 (pinv again).
NOT_SMOOTH = {84}


def _scale(b):
    b = np.asarray(b, float)
    return max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0


def _close(a, b, rtol, what):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * _scale(b), err_msg=what)


def _fd(f, x, v, eps=1e-6):
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


@pytest.mark.parametrize("seed", [s for s in range(N_PROGRAMS) if s not in NOT_SMOOTH])
def test_random_program_modes_agree(seed):
    steps = gen(seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4)) * 0.7
    f = build(steps, tsp)
    f_ref = build(steps, ssp)  # plain NumPy and SciPy: the finite differences' program
    y = np.asarray(f_ref(x))
    assert np.all(np.isfinite(y)), steps
    W, U = rng.standard_normal(y.shape), rng.standard_normal(y.shape)
    V, V2 = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    # first order: every mode, against central differences of the values
    J = tg.jacobian(f)(x)
    assert J.shape == y.shape + x.shape
    JV = np.tensordot(J, V, 2)
    _close(JV, _fd(f_ref, x, V), 2e-6, f"{steps}: J v vs central differences")
    _close(tg.jacfwd(f)(x), J, 1e-9, f"{steps}: jacfwd vs jacobian")
    _close(tg.jacrev(f)(x), J, 1e-9, f"{steps}: jacrev vs jacobian")
    out, tan = tg.jvp(f, (x,), (V,))
    _close(out, y, 1e-12, f"{steps}: jvp value")
    _close(tan, JV, 1e-9, f"{steps}: jvp vs jacobian")
    out, pull = tg.vjp(f, x)
    (uJ,) = pull(U)
    _close(uJ, np.tensordot(U, J, y.ndim), 1e-9, f"{steps}: vjp vs jacobian")
    _close(np.sum(uJ * V), np.sum(U * tan), 1e-9, f"{steps}: <u J, v> vs <u, J v>")

    # second order of the weighted sum
    def s(z):
        return (f(z) * W).sum()

    g = tg.grad(s)
    H = tg.hessian(s)(x)
    HV = np.tensordot(H, V, 2)
    _close(HV, _fd(g, x, V, 1e-5), 2e-5, f"{steps}: H v vs central differences of grad")
    _close(H, np.swapaxes(H.reshape(12, 12), 0, 1).reshape(H.shape), 1e-9, f"{steps}: H sym")
    _close(tg.jacobian(g)(x), H, 1e-9, f"{steps}: jacobian(grad) vs hessian")
    _close(tg.hvp(s, (x,), (V,)), HV, 1e-9, f"{steps}: hvp vs hessian")
    _close(tg.jvp(g, (x,), (V,))[1], HV, 1e-9, f"{steps}: jvp(grad) vs hessian")
    gv = tg.grad(lambda z: (g(z) * V).sum())(x)
    _close(gv, HV, 1e-9, f"{steps}: grad(<grad, v>) vs hessian")
    third = seed % 3 == 0
    if not np.any(J):  # an output that does not depend on x: nothing to differentiate
        assert not np.any(H)
        return
    xt = tg.tensor(x, requires_grad=True)
    (g1,) = tg.autograd.grad(s(xt), xt, create_graph=True)
    _close(g1.detach().numpy(), g(x), 1e-9, f"{steps}: autograd.grad vs tg.grad")
    if not g1.requires_grad:  # piecewise linear: a constant gradient, as PyTorch's
        assert not np.any(H)
        return
    (h1,) = tg.autograd.grad((g1 * tg.tensor(V)).sum(), xt, create_graph=third)
    _close(h1.detach().numpy(), HV, 1e-9, f"{steps}: autograd.grad twice vs hessian")
    if not third:
        return

    # third order: d/dt H(x + t v2) v, four ways, against central differences of hvp
    def hv(z):
        return tg.hvp(s, (z,), (V,))

    T3 = tg.jvp(hv, (x,), (V2,))[1]
    _close(T3, _fd(hv, x, V2, 1e-5), 5e-5, f"{steps}: jvp(hvp) vs central differences")
    _close(tg.grad(lambda z: (hv(z) * V2).sum())(x), T3, 1e-8, f"{steps}: grad <hvp, v2>")
    jjg = tg.jvp(lambda z: tg.jvp(g, (z,), (V,))[1], (x,), (V2,))[1]
    _close(jjg, T3, 1e-8, f"{steps}: jvp(jvp(grad))")
    if not h1.requires_grad:  # a constant Hessian, as PyTorch's: no graph to go on with
        assert not np.any(T3)
        return
    (t1,) = tg.autograd.grad((h1 * tg.tensor(V2)).sum(), xt, allow_unused=True)
    t1 = np.zeros_like(x) if t1 is None else t1.numpy()
    _close(t1, T3, 1e-8, f"{steps}: autograd.grad three times")


# ---- every op at a scalar point, through compositions of the transforms up to third order ---


def _d(f):  # the derivative by forward mode
    return lambda z: tg.jvp(f, (z,), (1.0,))[1]


COMPOSITIONS = {  # name: (order, derivative of f)
    "grad": (1, lambda f: tg.grad(f)),
    "jvp": (1, _d),
    "jacfwd": (1, lambda f: tg.jacfwd(f)),
    "grad grad": (2, lambda f: tg.grad(tg.grad(f))),
    "jvp jvp": (2, lambda f: _d(_d(f))),
    "jvp grad": (2, lambda f: _d(tg.grad(f))),
    "grad jvp": (2, lambda f: tg.grad(_d(f))),
    "hessian": (2, lambda f: tg.hessian(f)),
    "hvp": (2, lambda f: lambda z: tg.hvp(f, (z,), (1.0,))),
    "grad grad grad": (3, lambda f: tg.grad(tg.grad(tg.grad(f)))),
    "jvp jvp jvp": (3, lambda f: _d(_d(_d(f)))),
    "jvp grad grad": (3, lambda f: _d(tg.grad(tg.grad(f)))),
    "grad jvp grad": (3, lambda f: tg.grad(_d(tg.grad(f)))),
    "jvp hessian": (3, lambda f: _d(tg.hessian(f))),
    "grad hvp": (3, lambda f: tg.grad(lambda z: tg.hvp(f, (z,), (1.0,)))),
    "hessian grad": (3, lambda f: tg.hessian(tg.grad(f))),
}
SCALAR_OPS = [("u", k) for k in UNARY] + [("b", k) for k in BINARY]


def _scalar(kind, name, sp):
    if kind == "u":
        return lambda z: UNARY[name](sp, z)
    return lambda z: BINARY[name](sp, z, 0.8 * z + 0.3)


@pytest.mark.parametrize("kind,name", SCALAR_OPS, ids=[k for _, k in SCALAR_OPS])
def test_scalar_op_every_composition(kind, name):
    x0 = [0.37, -0.81, 1.3][len(name) % 3]
    f = _scalar(kind, name, tsp)
    ref = [None, tg.grad(f)(x0), tg.hessian(f)(x0), None]
    # independent references: central differences of the values, of grad, of hessian
    f_np = _scalar(kind, name, ssp)
    np.testing.assert_allclose(ref[1], _fd(f_np, x0, 1.0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ref[2], _fd(tg.grad(f), x0, 1.0, 1e-5), rtol=1e-6, atol=1e-7)
    ref[3] = _fd(tg.hessian(f), x0, 1.0, 1e-4)
    bad = {}
    for what, (order, make) in COMPOSITIONS.items():
        v = float(np.asarray(make(f)(x0)))
        tol = 1e-6 if order == 3 else 1e-10
        if not np.isclose(v, ref[order], rtol=tol, atol=tol):
            bad[what] = (v, float(ref[order]))
    assert not bad, f"{name} at {x0}: {bad}"


# ---- pytrees, float32, 0-d ---------------------------------------------------------------------


def _tree_program(p, q):
    h = np.tanh(q[0] @ p["w"].T + q[1][0]) * p["s"]
    return {"out": np.sin(h) * q[1][1], "aux": (np.exp(p["b"]) * p["s"] ** 2, np.sum(h * h))}


def _tree_point(seed):
    rng = np.random.default_rng(seed)
    p = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(3), "s": 0.7}
    q = (rng.standard_normal(3), [rng.standard_normal(2), 1.3])
    return p, q


def _flat(tree):
    return np.concatenate([np.ravel(a) for a in tg.tree.ravel(tree)[:1]])


def test_pytree_in_and_out_every_mode():
    p, q = _tree_point(0)
    tp, tq = _tree_point(1)
    flat, unravel = tg.tree.ravel((p, q))
    tflat = tg.tree.ravel((tp, tq))[0]

    def ff(z):  # the program on one flat vector, its outputs flattened
        return tg.tree.ravel(_tree_program(*unravel(z)))[0]

    def ff_np(z):  # on plain arrays (dicts in insertion order, as tg.tree.ravel's)
        return tg.tree.ravel(_tree_program(*unravel(z)))[0]

    J = tg.jacobian(ff)(flat)
    _close(J @ tflat, _fd(ff_np, flat, tflat), 1e-6, "J v vs central differences")
    _close(tg.jacfwd(ff)(flat), J, 1e-10, "jacfwd vs jacobian on the flat program")
    out, tan = tg.jvp(_tree_program, (p, q), (tp, tq))
    assert sorted(tan) == ["aux", "out"] and isinstance(tan["aux"], tuple)
    _close(_flat(tan), J @ tflat, 1e-10, "jvp on trees vs jacobian")
    _, pull = tg.vjp(_tree_program, p, q)
    ct = {"out": np.ones(2) * 0.5, "aux": (np.arange(3.0), -2.0)}
    gp, gq = pull(ct)
    assert sorted(gp) == ["b", "s", "w"] and isinstance(gq, tuple) and isinstance(gq[1], list)
    _close(_flat((gp, gq)), _flat(ct) @ J, 1e-10, "vjp on trees vs jacobian")
    jr = tg.jacobian(_tree_program, argnums=(0, 1))(p, q)
    _close(jr["out"][0]["w"], J[:2, :6].reshape(2, 2, 3), 1e-10, "jacobian tree block")
    jf = tg.jacfwd(_tree_program, argnums=(0, 1))(p, q)
    for a, b in zip(_leaves_np(jf), _leaves_np(jr), strict=True):
        _close(a, b, 1e-10, "jacfwd vs jacrev on trees")

    def s(p, q):
        o = _tree_program(p, q)
        return np.sum(o["out"] ** 2) + o["aux"][1] * np.sum(o["aux"][0])

    def s_flat(z):
        return s(*unravel(z))

    H = tg.hessian(s_flat)(flat)
    _close(H, H.T, 1e-10, "Hessian symmetric")
    _close(H @ tflat, _fd(tg.grad(s_flat), flat, tflat, 1e-5), 1e-5, "H v vs differences")
    for what, r in {
        "hvp": tg.hvp(s, (p, q), (tp, tq)),
        "jvp(grad)": tg.jvp(tg.grad(s, argnums=(0, 1)), (p, q), (tp, tq))[1],
    }.items():
        _close(_flat(r), H @ tflat, 1e-10, f"{what} on trees vs hessian")
    Ht = tg.hessian(s, argnums=(0, 1))(p, q)
    _close(Ht[0]["w"][0]["w"], H[:6, :6].reshape(2, 3, 2, 3), 1e-10, "hessian tree block")
    _close(Ht[1][1][0][0]["s"], H[-3:-1, 9], 1e-10, "hessian tree block (list, float)")


def _leaves_np(tree):
    if isinstance(tree, dict):
        return [a for k in sorted(tree) for a in _leaves_np(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [a for t in tree for a in _leaves_np(t)]
    return [np.asarray(tree, float)]


def test_float32_inputs_every_mode_agrees_with_float64():
    x64 = np.array([0.3, -0.7, 1.1])
    x32 = x64.astype(np.float32)

    def f(x):
        return np.sin(x) * np.exp(x[0]) + np.sum(x**2)

    def s(x):
        return np.sum(f(x) * np.array([1.0, -2.0, 0.5]))

    v = np.array([1.0, 2.0, -1.0], np.float32)
    for what, make in {
        "jacobian": lambda x: tg.jacobian(f)(x),
        "jacfwd": lambda x: tg.jacfwd(f)(x),
        "jvp": lambda x: tg.jvp(f, (x,), (v,))[1],
        "grad": lambda x: tg.grad(s)(x),
        "hessian": lambda x: tg.hessian(s)(x),
        "hvp": lambda x: tg.hvp(s, (x,), (v,)),
        "jvp(grad)": lambda x: tg.jvp(tg.grad(s), (x,), (v,))[1],
        "grad^3": lambda x: tg.jacobian(tg.hessian(s))(x),
    }.items():
        a, b = make(x32), make(x64)
        if not what.startswith("jvp"):  # (jvp's tangents: float64 outputs, float64 here)
            assert a.dtype == np.float32, f"{what}: derivatives in the input's dtype"
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6, err_msg=what)


@pytest.mark.parametrize("x0", [0.4, np.array(0.4), np.float64(0.4)], ids=["float", "0d", "np64"])
def test_zero_d_inputs_every_mode(x0):
    def f(x):
        return np.sin(x) * np.exp(x)

    g1, g2, g3 = (
        np.exp(0.4) * (np.cos(0.4) + np.sin(0.4)),
        2 * np.exp(0.4) * np.cos(0.4),
        2 * np.exp(0.4) * (np.cos(0.4) - np.sin(0.4)),
    )
    vals = {
        1: [tg.grad(f)(x0), tg.jvp(f, (x0,), (1.0,))[1], tg.jacobian(f)(x0), tg.jacfwd(f)(x0)],
        2: [tg.hessian(f)(x0), tg.hvp(f, (x0,), (1.0,)), tg.grad(tg.grad(f))(x0)],
        3: [tg.grad(tg.grad(tg.grad(f)))(x0), tg.jvp(tg.hessian(f), (x0,), (1.0,))[1]],
    }
    for order, vs in vals.items():
        for v in vs:
            assert np.shape(v) == ()
            np.testing.assert_allclose(v, [g1, g2, g3][order - 1], rtol=1e-13)


# ---- non-finite points where the derivatives are defined ---------------------------------------

E2 = 2.0 / np.sqrt(np.pi)
NONFINITE = {  # name: (f, x0, [f', f'', f'''] there (closed forms, limits))
    "exp(-inf)": (np.exp, -np.inf, [0.0, 0.0, 0.0]),
    "expm1(-inf)": (np.expm1, -np.inf, [0.0, 0.0, 0.0]),
    "exp2(-inf)": (np.exp2, -np.inf, [0.0, 0.0, 0.0]),
    "tanh(inf)": (np.tanh, np.inf, [0.0, 0.0, 0.0]),
    "arctan(inf)": (np.arctan, np.inf, [0.0, None, None]),
    "expit(-inf)": (tsp.expit, -np.inf, [0.0, 0.0, 0.0]),
    "expit(inf)": (tsp.expit, np.inf, [0.0, 0.0, 0.0]),
    "logaddexp(-inf, 0)": (lambda x: np.logaddexp(x, 0.0), -np.inf, [0.0, 0.0, 0.0]),
    "logaddexp2(-inf, 1)": (lambda x: np.logaddexp2(x, 1.0), -np.inf, [0.0, 0.0, 0.0]),
    "softplus(inf)": (lambda x: np.logaddexp(0.0, x), np.inf, [1.0, 0.0, 0.0]),
    "log1p(exp(-inf))": (lambda x: np.log1p(np.exp(x)), -np.inf, [0.0, 0.0, 0.0]),
    "sqrt(inf)": (np.sqrt, np.inf, [0.0, 0.0, 0.0]),
    "1/inf": (lambda x: 1.0 / x, np.inf, [0.0, 0.0, 0.0]),
    "inf**-2": (lambda x: x**-2.0, np.inf, [0.0, 0.0, 0.0]),
    "arctan2(1, inf)": (lambda x: np.arctan2(1.0, x), np.inf, [0.0, None, None]),
    "erf(inf)": (tsp.erf, np.inf, [0.0, None, None]),
    "erfc(30)": (tsp.erfc, 30.0, [0.0, 0.0, 0.0]),
    "expit(800)": (tsp.expit, 800.0, [0.0, 0.0, 0.0]),
    "log(expit(inf))": (lambda x: np.log(tsp.expit(x)), np.inf, [0.0, 0.0, 0.0]),
    "gammaln(inf)": (tsp.gammaln, np.inf, [np.inf, 0.0, 0.0]),
    "logsumexp([-inf, 0])": (
        lambda x: tsp.logsumexp(np.stack([x, np.zeros_like(x)])),
        -np.inf,
        [0.0, 0.0, 0.0],
    ),
    "softmax([-inf, 0])[1]": (
        lambda x: tsp.softmax(np.stack([x, np.zeros_like(x)]))[1],
        -np.inf,
        [0.0, 0.0, 0.0],
    ),
    "maximum(-inf, 0)": (lambda x: np.maximum(x, 0.0), -np.inf, [0.0, 0.0, 0.0]),
    "where(-inf > 0)": (lambda x: np.where(x > 0, x, 0.0), -np.inf, [0.0, 0.0, 0.0]),
    "clip(inf)": (lambda x: np.clip(x, -1.0, 1.0), np.inf, [0.0, 0.0, 0.0]),
    "exp(x) tanh(x) at -inf": (lambda x: np.exp(x) * np.tanh(x), -np.inf, [0.0, 0.0, 0.0]),
    "sinc(0)": (np.sinc, 0.0, [0.0, -(np.pi**2) / 3, 0.0]),
    "erf(0)": (tsp.erf, 0.0, [E2, 0.0, -2 * E2]),
}


@pytest.mark.parametrize("name", sorted(NONFINITE))
def test_nonfinite_point_every_mode(name):
    f, x0, ref = NONFINITE[name]
    ways = {k: (o, m) for k, (o, m) in COMPOSITIONS.items()}
    bad = {}
    for what, (order, make) in ways.items():
        want = ref[order - 1]
        if want is None:  # a limit that is not the derivative's value (inf * 0 on the way)
            continue
        v = float(np.asarray(make(f)(x0)))
        if not np.isclose(v, want, rtol=1e-12, atol=1e-12):
            bad[what] = v
    assert not bad, f"{name}: want {ref}, got {bad}"


# ---- against PyTorch: backward(create_graph=True) and torch.func --------------------------------

# (name, program over a module m of np-like names): numpy names for tapegrad, torch's for torch
TORCH_PROGRAMS = {
    "sin_exp": lambda m, x: m.sin(x) * m.exp(0.3 * x),
    "log1p_expm1": lambda m, x: m.log1p(x * x) + m.expm1(0.5 * x),
    "atan2_hypot": lambda m, x: m.atan2(x, x[::-1] * 0 + 1.3) * m.hypot(x, 0.7 + 0 * x),
    "logaddexp": lambda m, x: m.logaddexp(x, 2 * x),
    "pow_frac": lambda m, x: (x * x + 0.5) ** 1.7 + (x * x + 0.2) ** -0.5,
    "pow_var": lambda m, x: (x * x + 0.5) ** m.tanh(x),
    "cumsum_prod": lambda m, x: m.cumsum(x, 0) * m.prod(x),
    "cumprod": lambda m, x: m.cumprod(x, 0),
    "softmax_lse": lambda m, x: m.softmax(x, 0) * m.logsumexp(x, 0),
    "max_min": lambda m, x: x * m.max(x) + m.min(x),
    "norm": lambda m, x: x / m.norm(x),
    "matmul": lambda m, x: m.reshape(x, (2, 3)) @ m.reshape(x, (3, 2)).T.T,
    "outer": lambda m, x: m.outer(x, m.sin(x)).sum(0),
    "erf_digamma": lambda m, x: m.erf(x) + m.digamma(x * x + 0.5) + m.lgamma(x * x + 1.5),
    "inv_det": lambda m, x: m.inv(_msq(m, x)).sum(0) * m.det(_msq(m, x)),
    "solve_slogdet": lambda m, x: m.solve(_msq(m, x), x[:3]) + m.slogdet(_msq(m, x))[1],
    "cholesky": lambda m, x: m.cholesky(_msq(m, x)).sum(1),
    "eigvalsh": lambda m, x: m.eigvalsh(_msq(m, x)) * x[0],
    "svdvals": lambda m, x: m.svdvals(m.reshape(x, (2, 3))),
    "sinc_cbrt": lambda m, x: m.sinc(x) + m.cbrt(x + 3.0),
}


def _msq(m, x):
    a = m.reshape(x[:3] * 0.5, (3, 1)) * m.reshape(x[3:], (1, 3))
    return a @ a.T + m.eye(3) * 2.0 + m.diag(x[:3] * 0.1)


class _NP:
    """numpy names under torch's spelling, for one program text."""

    sin, exp, log1p, expm1, hypot, logaddexp, tanh = (
        np.sin,
        np.exp,
        np.log1p,
        np.expm1,
        np.hypot,
        np.logaddexp,
        np.tanh,
    )
    atan2, reshape, outer, sinc, cbrt, eye, diag = (
        np.arctan2,
        np.reshape,
        np.outer,
        np.sinc,
        np.cbrt,
        np.eye,
        np.diag,
    )
    erf, digamma, lgamma = tsp.erf, tsp.digamma, tsp.gammaln
    inv, det, solve, slogdet, cholesky, eigvalsh, norm = (
        np.linalg.inv,
        np.linalg.det,
        np.linalg.solve,
        np.linalg.slogdet,
        np.linalg.cholesky,
        np.linalg.eigvalsh,
        np.linalg.norm,
    )

    @staticmethod
    def cumsum(x, axis):
        return np.cumsum(x, axis=axis)

    @staticmethod
    def cumprod(x, axis):
        return np.cumprod(x, axis=axis)

    @staticmethod
    def prod(x):
        return np.prod(x)

    @staticmethod
    def max(x):
        return np.max(x)

    @staticmethod
    def min(x):
        return np.min(x)

    @staticmethod
    def softmax(x, axis):
        return tsp.softmax(x, axis=axis)

    @staticmethod
    def logsumexp(x, axis):
        return tsp.logsumexp(x, axis=axis)

    @staticmethod
    def svdvals(a):
        return np.linalg.svd(a, compute_uv=False)


class _Torch:
    def __init__(self, torch):
        self.t = torch

    def __getattr__(self, name):
        t = self.t
        special = {
            "erf": t.special.erf,
            "digamma": t.special.digamma,
            "lgamma": t.lgamma,
            "sinc": t.special.sinc,
            "cbrt": lambda x: t.sign(x) * t.abs(x) ** (1.0 / 3.0),
            "eye": lambda n: t.eye(n, dtype=t.float64),
            "outer": t.outer,
            "reshape": t.reshape,
            "softmax": lambda x, d: t.softmax(x, d),
            "logsumexp": lambda x, d: t.logsumexp(x, d),
            "hypot": t.hypot,
            "inv": t.linalg.inv,
            "det": t.linalg.det,
            "solve": t.linalg.solve,
            "slogdet": t.linalg.slogdet,
            "cholesky": t.linalg.cholesky,
            "eigvalsh": t.linalg.eigvalsh,
            "svdvals": t.linalg.svdvals,
            "norm": t.linalg.norm,
        }
        return special.get(name) or getattr(t, name)


def _torch_fn(torch, name):
    prog, m = TORCH_PROGRAMS[name], _Torch(torch)

    def f(x):
        if name == "atan2_hypot":
            return m.atan2(x, x * 0 + 1.3) * m.hypot(x, 0.7 + 0 * x)
        if name == "matmul":
            return m.reshape(x, (2, 3)) @ m.reshape(x, (3, 2))
        return prog(m, x)

    return f


def _tg_fn(name):
    prog = TORCH_PROGRAMS[name]
    if name == "atan2_hypot":
        return lambda x: np.arctan2(x, x * 0 + 1.3) * np.hypot(x, 0.7 + 0 * x)
    if name == "matmul":
        return lambda x: np.reshape(x, (2, 3)) @ np.reshape(x, (3, 2))
    return lambda x: prog(_NP, x)


X6 = np.array([0.31, -0.52, 0.77, 1.13, -0.24, 0.45])
# torch's trigamma (polygamma(1, .)) is off by 4e-10 relative here (tapegrad's is mpmath's)
TORCH_RTOL = {"erf_digamma": 1e-8}


@pytest.mark.parametrize("name", sorted(TORCH_PROGRAMS))
def test_torch_func_jacfwd_jacrev_hessian_jvp(name):
    torch = pytest.importorskip("torch")
    tf = torch.func
    f, ft = _tg_fn(name), _torch_fn(torch, name)
    rt = TORCH_RTOL.get(name, 1e-10)
    xt = torch.tensor(X6, dtype=torch.float64)
    v = np.linspace(-1.0, 1.0, 6)
    vt = torch.tensor(v, dtype=torch.float64)
    w = np.cos(np.arange(np.size(np.asarray(ft(xt)))) + 0.5).reshape(tuple(ft(xt).shape))
    wt = torch.tensor(w, dtype=torch.float64)
    want_J = tf.jacrev(ft)(xt).numpy()
    for what, got in {
        "jacobian": tg.jacobian(f)(X6),
        "jacfwd": tg.jacfwd(f)(X6),
        "jacrev": tg.jacrev(f)(X6),
    }.items():
        _close(got, want_J, rt, f"{name}: {what} vs torch.func.jacrev")
    _close(tg.jvp(f, (X6,), (v,))[1], tf.jvp(ft, (xt,), (vt,))[1].numpy(), rt, "jvp")

    def s(x):
        return (f(x) * w).sum()

    def st(x):
        return (ft(x) * wt).sum()

    want_H = tf.hessian(st)(xt).numpy()
    _close(tg.hessian(s)(X6), want_H, 10 * rt, f"{name}: hessian vs torch.func.hessian")
    want_Hv = tf.jvp(tf.grad(st), (xt,), (vt,))[1].numpy()
    _close(tg.hvp(s, (X6,), (v,)), want_Hv, 10 * rt, f"{name}: hvp vs torch.func jvp(grad)")
    # the Tensor API: backward(create_graph=True) twice, as PyTorch's
    xg = tg.tensor(X6, requires_grad=True)
    s(xg).backward(create_graph=True)
    g1 = xg.grad
    xg.grad = None
    (g1 * tg.tensor(v)).sum().backward()
    xq = torch.tensor(X6, dtype=torch.float64, requires_grad=True)
    st(xq).backward(create_graph=True)
    q1 = xq.grad
    xq.grad = None
    (q1 * vt).sum().backward()
    _close(g1.detach().numpy(), q1.detach().numpy(), rt, f"{name}: backward(create_graph)")
    _close(xg.grad.numpy(), xq.grad.numpy(), 10 * rt, f"{name}: second backward")


# ---- findings ----------------------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="tg.jvp / tg.jacfwd / tg.hessian of logsumexp(x * [1, 2]) at x = -inf give 0.0, "
    "tg.grad gives nan (torch.func: nan in both modes; the limit of the slope is 1): the "
    "tangent sweep drops the zero tangent of sum(exp(x - 0)) into log's infinite partial",
)
def test_logsumexp_all_minus_inf_forward_agrees_with_reverse():
    def f(x):
        return tsp.logsumexp(x * np.array([1.0, 2.0]))

    assert np.isnan(tg.grad(f)(-np.inf))
    assert np.isnan(tg.jvp(f, (-np.inf,), (1.0,))[1])
    assert np.isnan(tg.jacfwd(f)(-np.inf))


# was NaN at the second and third order (r * sqrt(r) at r = 1 / |x| = 0: 0 * inf)
@pytest.mark.parametrize("v", [0, 1])
@pytest.mark.parametrize("x0", [np.inf, -np.inf])
def test_ive_higher_derivatives_at_infinity(v, x0):
    def f(x):
        return tsp.ive(v, x)

    assert tg.grad(f)(x0) == 0.0
    assert tg.grad(tg.grad(f))(x0) == 0.0
    assert tg.hessian(f)(x0) == 0.0
    assert tg.grad(tg.grad(tg.grad(f)))(x0) == 0.0


# ---- argnums, nesting in tangents, custom rules: closed forms ----------------------------------


def test_argnums_orders_and_nesting_in_tangents_closed_forms():
    x, y = np.array([0.3, -0.5, 0.8]), np.array([1.1, 0.4])

    def f2(x, y):
        return np.sum(np.sin(x)) * np.sum(y**2) + x[0] * y[1]

    hxx = np.diag(-np.sin(x)) * np.sum(y**2)
    hxy = np.outer(np.cos(x), 2 * y)
    hxy[0, 1] += 1.0
    hyy = 2 * np.sum(np.sin(x)) * np.eye(2)
    (Hyy, Hyx), (Hxy, Hxx) = tg.hessian(f2, argnums=(1, 0))(x, y)
    for a, b in ((Hxx, hxx), (Hxy, hxy), (Hyx, hxy.T), (Hyy, hyy)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tg.hessian(f2, argnums=1)(x, y), hyy, rtol=1e-13)
    vx, vy = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7])
    want = (hxx @ vx + hxy @ vy, hxy.T @ vx + hyy @ vy)
    for got in (
        tg.hvp(f2, (x, y), (vx, vy)),
        tg.jvp(tg.grad(f2, argnums=(0, 1)), (x, y), (vx, vy))[1],
    ):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)

    # differentiating in the tangent: f(z) = sin(z) z0, J = diag(cos z) z0 + sin(z) e0^T
    J = np.diag(np.cos(x)) * x[0]
    J[:, 0] += np.sin(x)

    def jv(v):
        return tg.jvp(lambda z: np.sin(z) * z[0], (x,), (v,))[1]

    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(jv(v) ** 2))(vx), 2 * J.T @ J @ vx, rtol=1e-13
    )
    np.testing.assert_allclose(tg.jacobian(jv)(vx), J, rtol=1e-13)
    np.testing.assert_allclose(tg.jacfwd(jv)(vx), J, rtol=1e-13)

    # hvp is linear in its tangent: its jvp in v is H itself
    def s(z):
        return np.sum(np.sin(z) * z[0])

    u = np.full(3, 0.3)
    hv = tg.jvp(lambda v: tg.hvp(s, (x,), (v,)), (vx,), (u,))[1]
    np.testing.assert_allclose(hv, tg.hessian(s)(x) @ u, rtol=1e-13)


def test_custom_jvp_every_order():
    @tg.custom_jvp
    def cube(x):
        return x**3

    @cube.defjvp
    def _cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return x**3, 3 * x**2 * t

    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(tg.jacobian(cube)(x), np.diag(3 * x**2), rtol=1e-14)
    np.testing.assert_allclose(tg.jacfwd(cube)(x), np.diag(3 * x**2), rtol=1e-14)
    np.testing.assert_allclose(tg.hessian(lambda z: np.sum(cube(z)))(x), np.diag(6 * x))
    np.testing.assert_allclose(tg.hvp(lambda z: np.sum(cube(z)), (x,), (x,)), 6 * x * x)
    d3 = [
        tg.grad(tg.grad(tg.grad(cube)))(0.7),
        _d(_d(_d(cube)))(0.7),
        _d(tg.grad(tg.grad(cube)))(0.7),
        _d(tg.hessian(cube))(0.7),
    ]
    np.testing.assert_allclose(d3, 6.0, rtol=1e-14)
