"""Hypothesis property tests: random small programs differentiated by tapegrad agree with
central finite differences through the dot-product test ``<u, J v> == <J^T u, v>``."""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tapegrad as tg

N = 3  # length of every input vector
_M = np.array([[0.5, -1.0, 0.25], [1.5, 0.5, -0.75], [-0.5, 0.25, 1.0]])

# Smooth ops that keep values moderate; each works on Tensors and on numpy arrays alike.
UNARY = [
    ("sin", lambda x: tg.sin(x), np.sin),
    ("cos", lambda x: x.cos(), np.cos),
    ("tanh", tg.tanh, np.tanh),
    ("sigmoid", tg.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    ("exp(tanh)", lambda x: tg.exp(tg.tanh(x)), lambda x: np.exp(np.tanh(x))),
    ("log1p(x^2)", lambda x: tg.log1p(x * x), lambda x: np.log1p(x * x)),
    ("sqrt(x^2+1)", lambda x: tg.sqrt(x**2 + 1.0), lambda x: np.sqrt(x**2 + 1.0)),
    ("affine", lambda x: 1.5 - x * 0.75, lambda x: 1.5 - x * 0.75),
    ("square", lambda x: x**2, lambda x: x**2),
    ("cube/3", lambda x: x**3 / 3.0, lambda x: x**3 / 3.0),
    ("reverse", lambda x: x[::-1], lambda x: x[::-1]),
    ("roll", lambda x: tg.concatenate([x[1:], x[:1]]), lambda x: np.concatenate([x[1:], x[:1]])),
    ("matvec", lambda x: _M @ x, lambda x: _M @ x),
    ("softmax", tg.softmax, lambda x: np.exp(x) / np.exp(x).sum()),
    ("centre", lambda x: x - x.mean(), lambda x: x - x.mean()),
    ("gather", lambda x: x[[2, 0, 2]], lambda x: x[[2, 0, 2]]),
    ("2**x/4", lambda x: 2.0**x / 4.0, lambda x: 2.0**x / 4.0),
    ("lse+x", lambda x: x + tg.logsumexp(x), lambda x: x + np.log(np.exp(x).sum())),
]
BINARY = [
    ("add", lambda x, y: x + y, None),
    ("sub", lambda x, y: x - y, None),
    ("mul", lambda x, y: x * y, None),
    ("div", lambda x, y: x / (1.0 + y * y), None),
    ("pow", lambda x, y: (1.0 + x * x) ** tg.tanh(y), lambda x, y: (1.0 + x * x) ** np.tanh(y)),
    (
        "outer-sum",
        lambda x, y: (x.reshape(N, 1) * y).sum(axis=0),
        lambda x, y: (x.reshape(N, 1) * y).sum(axis=0),
    ),
    (
        "where",
        lambda x, y: tg.where(np.array([True, False, True]), x, y),
        lambda x, y: np.where(np.array([True, False, True]), x, y),
    ),
    (
        "stack-max",
        lambda x, y: tg.stack([x, y * 0.5 + 3.0]).amax(axis=0),
        lambda x, y: np.stack([x, y * 0.5 + 3.0]).max(axis=0),
    ),
    ("dot", lambda x, y: x * tg.dot(x, y) * 0.1, lambda x, y: x * np.dot(x, y) * 0.1),
]

step = st.one_of(
    st.tuples(st.just("u"), st.integers(0, len(UNARY) - 1), st.integers(0, 99)),
    st.tuples(
        st.just("b"), st.integers(0, len(BINARY) - 1), st.integers(0, 99), st.integers(0, 99)
    ),
)
program = st.lists(step, min_size=1, max_size=8)


def run_program(prog, inputs, backend):
    """Evaluate ``prog`` on ``inputs``; backend 0 = tapegrad, 1 = numpy reference."""
    pool = list(inputs)
    for s in prog:
        if s[0] == "u":
            _, k, i = s
            f = UNARY[k][1 + backend]
            pool.append(f(pool[i % len(pool)]))
        else:
            _, k, i, j = s
            f = BINARY[k][1] if backend == 0 or BINARY[k][2] is None else BINARY[k][2]
            pool.append(f(pool[i % len(pool)], pool[j % len(pool)]))
    # the output: the last value, plus the others weighted (so every value can matter)
    out = pool[-1]
    for w, v in enumerate(pool[len(inputs) : -1]):
        out = out + v * (0.5 / (w + 1))
    return out


def _as_array(v):
    return np.asarray(v.numpy() if isinstance(v, tg.Tensor) else v, dtype=np.float64)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=program, n_inputs=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_random_program_dot_product_test(prog, n_inputs, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1.0, 1.0, N) for _ in range(n_inputs)]
    leaves = [tg.tensor(x, requires_grad=True) for x in xs]
    out = run_program(prog, leaves, 0)
    with np.errstate(all="ignore"):
        ref = _as_array(run_program(prog, [x.copy() for x in xs], 1))
    assume(np.all(np.isfinite(ref)) and np.abs(ref).max() < 1e6)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)

    u = rng.standard_normal(ref.shape)
    vs = [rng.standard_normal(N) for _ in xs]
    if not out.requires_grad:  # the output ignores every input
        grads = [np.zeros(N) for _ in xs]
    else:
        gs = tg.autograd.grad(out, leaves, grad_outputs=u, allow_unused=True)
        grads = [np.zeros(N) if g is None else g.numpy() for g in gs]
    lhs = sum(float(np.dot(g, v)) for g, v in zip(grads, vs, strict=True))  # <J^T u, v>

    h = 1e-5
    with np.errstate(all="ignore"):
        plus = _as_array(run_program(prog, [x + h * v for x, v in zip(xs, vs, strict=True)], 1))
        minus = _as_array(run_program(prog, [x - h * v for x, v in zip(xs, vs, strict=True)], 1))
    rhs = float(np.sum(u * (plus - minus))) / (2 * h)  # <u, J v>
    # truncation error ~h^2, rounding error ~1e-16 * <|u|, |f|> / h
    tol = 1e-6 * (1.0 + abs(lhs) + abs(rhs)) + 1e-9 * float(np.sum(np.abs(u) * np.abs(ref)))
    assert abs(lhs - rhs) <= tol, (lhs, rhs)


@settings(max_examples=40, deadline=None)
@given(prog=program, seed=st.integers(0, 2**32 - 1))
def test_backward_grad_equals_autograd_grad_and_accumulates(prog, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1.0, 1.0, N) for _ in range(2)]
    a, b = (tg.tensor(x, requires_grad=True) for x in xs)
    out = run_program(prog, [a, b], 0).sum()
    assume(np.isfinite(out.item()))
    assume(out.requires_grad)
    ga, gb = tg.autograd.grad(out, [a, b], retain_graph=True, allow_unused=True)
    out.backward(retain_graph=True)
    out.backward()
    for leaf_, g in ((a, ga), (b, gb)):
        if g is None:
            assert leaf_.grad is None
        else:
            np.testing.assert_allclose(leaf_.grad.numpy(), 2 * g.numpy(), rtol=1e-13, atol=0)


@settings(max_examples=40, deadline=None)
@given(ks=st.lists(st.integers(0, 11), min_size=1, max_size=20))
def test_each_elementwise_op_records_exactly_one_row(ks):
    unary = [
        tg.sin,
        tg.cos,
        tg.tanh,
        tg.sigmoid,
        tg.exp,
        tg.neg,
        lambda x: x * 0.5,
        lambda x: x + 1.0,
        lambda x: 2.0 - x,
        lambda x: x**2,
        lambda x: abs(x),
        lambda x: x.relu(),
    ]
    x = tg.tensor(np.linspace(0.1, 0.9, 4), requires_grad=True)
    y = x * 1.0
    tape = tg.current_tape()
    n0 = len(tape)
    with np.errstate(all="ignore"):
        for k in ks:
            y = unary[k](y)
    assert tg.current_tape() is tape
    assert len(tape) - n0 == len(ks)


# ---- scalars mixed with vectors: a one-value operand is broadcast by the kernels ----------------
ELEMENTWISE2 = [
    ("add", lambda x, y: x + y, np.add),
    ("sub", lambda x, y: x - y, np.subtract),
    ("mul", lambda x, y: x * y, np.multiply),
    ("div", lambda x, y: x / (1.0 + y * y), lambda x, y: x / (1.0 + y * y)),
    ("hypot", tg.hypot, np.hypot),
    ("arctan2", lambda x, y: tg.arctan2(x, 2.0 + y * y), lambda x, y: np.arctan2(x, 2.0 + y * y)),
    ("logaddexp", tg.logaddexp, np.logaddexp),
    ("maximum", lambda x, y: tg.maximum(x, y + 0.3), lambda x, y: np.maximum(x, y + 0.3)),
]
ELEMENTWISE1 = [
    ("tanh", tg.tanh, np.tanh),
    ("sin", tg.sin, np.sin),
    ("softplus-ish", lambda x: tg.log1p(tg.exp(x)), lambda x: np.log1p(np.exp(x))),
]
mixed_step = st.one_of(
    st.tuples(st.just("u"), st.integers(0, len(ELEMENTWISE1) - 1), st.integers(0, 99)),
    st.tuples(
        st.just("b"),
        st.integers(0, len(ELEMENTWISE2) - 1),
        st.integers(0, 99),
        st.integers(0, 99),
    ),
)


def run_mixed(prog, inputs, backend):
    """Elementwise ops on a pool of vectors, scalars, a plain float and a plain array."""
    pool = list(inputs) + [0.7, np.array([0.3, -0.4, 0.9])]
    for s in prog:
        if s[0] == "u":
            pool.append(ELEMENTWISE1[s[1]][1 + backend](pool[s[2] % len(pool)]))
        else:
            a, b = pool[s[2] % len(pool)], pool[s[3] % len(pool)]
            pool.append(ELEMENTWISE2[s[1]][1 + backend](a, b))
    out = 0.0
    for w, v in enumerate(pool[len(inputs) + 2 :]):
        out = out + v * (0.5 / (w + 1))
    return out * np.ones(N) if np.ndim(_as_array(out)) == 0 else out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=st.lists(mixed_step, min_size=1, max_size=10), seed=st.integers(0, 2**32 - 1))
def test_scalars_and_vectors_mixed_dot_product_test(prog, seed):
    """Random elementwise programs over two vectors and two scalar parameters (and plain
    constants): values against NumPy, and <u, J v> == <J^T u, v> against central
    differences, so a scalar's summed gradient and every kernel's step are checked."""
    rng = np.random.default_rng(seed)
    xs = [
        rng.uniform(-1.0, 1.0, N),
        rng.uniform(-1.0, 1.0, N),
        rng.uniform(-1, 1),
        rng.uniform(-1, 1),
    ]
    leaves = [tg.tensor(x, requires_grad=True) for x in xs]
    out = run_mixed(prog, leaves, 0)
    with np.errstate(all="ignore"):
        ref = _as_array(run_mixed(prog, [np.copy(x) for x in xs], 1))
    assume(np.all(np.isfinite(ref)) and np.abs(ref).max() < 1e6)
    np.testing.assert_allclose(_as_array(out), ref, rtol=1e-12, atol=1e-12)
    assume(isinstance(out, tg.Tensor) and out.requires_grad)
    u = rng.standard_normal(ref.shape)
    vs = [rng.standard_normal(np.shape(x)) for x in xs]
    gs = tg.autograd.grad(out, leaves, grad_outputs=u, allow_unused=True)
    lhs = sum(
        0.0 if g is None else float(np.sum(g.numpy() * v)) for g, v in zip(gs, vs, strict=True)
    )
    h = 1e-5
    with np.errstate(all="ignore"):
        plus = _as_array(run_mixed(prog, [x + h * v for x, v in zip(xs, vs, strict=True)], 1))
        minus = _as_array(run_mixed(prog, [x - h * v for x, v in zip(xs, vs, strict=True)], 1))
    rhs = float(np.sum(u * (plus - minus))) / (2 * h)
    tol = 1e-6 * (1.0 + abs(lhs) + abs(rhs)) + 1e-9 * float(np.sum(np.abs(u) * np.abs(ref)))
    assert abs(lhs - rhs) <= tol, (lhs, rhs)
