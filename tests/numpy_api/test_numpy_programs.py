"""Random compositions of supported NumPy calls agree with finite differences.

Hypothesis writes small NumPy programs (elementwise functions, broadcasting arithmetic,
reductions with axes, transposes, reshapes, slices, concatenation, where, einsum, matmul) and
runs them on plain arrays and inside the transforms.  Whatever the program, tapegrad's gradient
and forward-mode derivative must equal central differences of the same NumPy code: a silent
wrong number anywhere in the dispatch, the broadcasting rules or the sweeps shows up here.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapegrad as tg

UNARY = {
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "arctan": np.arctan,
    "exp_tanh": lambda v: np.exp(np.tanh(v)),
    "log1p_sq": lambda v: np.log1p(v * v),
    "sqrt_shift": lambda v: np.sqrt(v * v + 1.0),
    "square": np.square,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "cumsum": lambda v: np.cumsum(v, axis=-1),
    "transpose": lambda v: np.transpose(v),
    "reverse": lambda v: v[..., ::-1],
    "slice": lambda v: v[..., 1:] if v.shape[-1] > 1 else v,
    "ravel_back": lambda v: np.reshape(np.ravel(v), v.shape),
    "sum_keep": lambda v: np.sum(v, axis=-1, keepdims=True),
    "mean0_keep": lambda v: np.mean(v, axis=0, keepdims=True),
    "max_keep": lambda v: np.max(v, axis=-1, keepdims=True),
    "prod_keep": lambda v: np.prod(np.tanh(v), axis=-1, keepdims=True),
    "norm": lambda v: np.linalg.norm(v) + v * 0.0,
    "std": lambda v: np.std(v) + v,
    "clip": lambda v: np.clip(v, -0.8, 0.9),
}

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": lambda a, b: a / (b * b + 1.0),
    "hypot": lambda a, b: np.hypot(a, b + 2.0),
    "where": lambda a, b: np.where(a > b, a * 2.0, b),
    "maximum": np.maximum,
    "logaddexp": np.logaddexp,
    "arctan2": lambda a, b: np.arctan2(a, b * b + 1.0),
}


def _concat(a, b):
    if a.ndim == b.ndim and a.shape[:-1] == b.shape[:-1]:
        return np.concatenate([a, b], axis=-1)
    return None


def _matmul(a, b):
    if a.ndim == 2 and b.ndim == 2 and a.shape[-1] == b.shape[0]:
        return a @ b
    if a.ndim == 2 and b.ndim == 2 and a.shape[-1] == b.shape[-1]:
        return a @ b.T
    return None


def _einsum(a, b):
    if a.ndim >= 1 and b.ndim >= 1 and a.shape[-1] == b.shape[-1]:
        return np.einsum("...i,...i->...", a, b)[..., None] * np.ones(a.shape[-1])
    return None


SHAPED = {"concat": _concat, "matmul": _matmul, "einsum": _einsum}


@st.composite
def programs(draw):
    shape = draw(st.sampled_from([(3,), (2, 3), (3, 3), (1, 4)]))
    steps = []
    for _ in range(draw(st.integers(2, 6))):
        kind = draw(st.sampled_from(["unary", "binary", "shaped"]))
        table = {"unary": UNARY, "binary": BINARY, "shaped": SHAPED}[kind]
        name = draw(st.sampled_from(sorted(table)))
        i = draw(st.integers(0, 100))
        j = draw(st.integers(0, 100))
        steps.append((kind, name, i, j))
    seed = draw(st.integers(0, 2**31 - 1))
    return shape, steps, seed


# calls with no derivative where their input is degenerate: the norm of a zero vector, the
# standard deviation of equal values (tapegrad gives NaN there, as JAX does)
CONE_POINTS = {"norm": lambda v: not np.any(v), "std": lambda v: np.ptp(v) == 0 and v.size > 1}


def _value(v):
    return v.detach().numpy() if isinstance(v, tg.Tensor) else np.asarray(v)


def build(steps, weights_seed, degenerate=None):
    """The NumPy program of ``steps``: each step applies one call to earlier values.
    ``degenerate`` (a list) collects the names of calls applied at a cone point."""

    def f(x):
        values = [x]
        for kind, name, i, j in steps:
            a = values[i % len(values)]
            b = values[j % len(values)]
            if kind == "unary":
                if degenerate is not None and name in CONE_POINTS and CONE_POINTS[name](_value(a)):
                    degenerate.append(name)
                values.append(UNARY[name](a))
                continue
            if kind == "binary":
                try:
                    np.broadcast_shapes(np.shape(a), np.shape(b))
                except ValueError:
                    continue
                values.append(BINARY[name](a, b))
                continue
            out = SHAPED[name](a, b)
            if out is not None:
                values.append(out)
        out = values[-1]
        w = np.random.default_rng(weights_seed).uniform(-1.0, 1.0, np.shape(out))
        return np.sum(out * w)

    return f


def central_differences(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def smooth_enough(f, x, g_fd):
    """False near a kink (max, where, clip, maximum): one-sided differences disagree there."""
    for eps in (1e-4, 1e-5):
        if not np.allclose(central_differences(f, x, eps), g_fd, rtol=1e-4, atol=1e-6):
            return False
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_numpy_programs_match_finite_differences(program):
    shape, steps, seed = program
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    degenerate = []
    build(steps, seed, degenerate)(x)
    f = build(steps, seed)
    g_fd = central_differences(f, x)
    if degenerate or not smooth_enough(f, x, g_fd):
        return
    value, g = tg.value_and_grad(f)(x)
    assert value == np.float64(f(x)) or np.isclose(value, f(x), rtol=1e-13)
    np.testing.assert_allclose(g, g_fd, rtol=1e-5, atol=1e-7)
    # forward mode along a random direction equals the gradient's projection
    v = np.random.default_rng(seed + 1).standard_normal(shape)
    _, dv = tg.jvp(f, (x,), (v,))
    np.testing.assert_allclose(dv, np.sum(g * v), rtol=1e-9, atol=1e-10)
