"""Replays of randomly generated NumPy programs far from the recording, against eager evaluation.

A seeded generator builds expression trees over a vector x of 4 entries from NumPy ops, the
data-dependent ones included (np.where, maximum / minimum / clip, abs, sign, floor / ceil /
round, comparisons used as floats, boolean masks whose count changes, sort / argsort / argmax
indexing, max / min, median / percentile / quantile, cumsum / cumprod, integer powers, sqrt /
log of negatives, division by zero, a Python ``if`` on a value, ``int(x.item())`` as an index
or a slice bound, norms of every order, logsumexp, ``sum(where=)``, reshape / concatenate /
stack).  Each program is recorded once with ``tg.trace`` at one point (ordinary, with a zero,
a tie, a NaN / inf / -0.0, or half-integers) and replayed at others: near, far, other signs,
special values.  Each replay (``tr(x)``, ``tr.value_and_grad``, ``tr.jvp``, ``tr.hvp``,
``tr.grad_many``, ``retrace=True`` and ``tg.traced``) must equal eager evaluation at that point
(``f(x)``, ``tg.value_and_grad``, ``tg.jvp``, ``tg.hvp``; NaN where eager has NaN, finite values
to rtol 1e-9 with atol 1e-12 for the rounding of cancellations near 0) or raise
``tg.RetraceRequired``; where eager raises, the replay raises too.

Disagreements found are kept as explicit cases below the sweep (a sort replayed at a tie the
recording did not have, np.partition's arrangement: both refuse now), and the eager refusals
the generated programs meet in the REFUSED table with the message asserted.
"""

import random
import warnings

import numpy as np
import pytest

import tapegrad as tg

N = 4

# ---- the generator --------------------------------------------------------------------------


def _if_pos(a, b):
    return a * 2.0 if a[0] > 0 else b - 1.0  # a Python branch on a value: a guard


def _mask_sum(a, b):
    return np.sum(a[a > 0]) + b  # the mask's count changes between replays


def _mask_mean(a, b):
    m = a[b > 0]
    return b * (np.sum(m) / (len(m) + 1.0))


def _index(a, b):
    return b * a[int(abs(a[0].item())) % N]  # a read value as an index (pinned)


def _rotate(a, b):
    k = int(abs(a[1].item())) % (N - 1) + 1  # a computed slice bound
    return np.concatenate([b[k:], b[:k]])


def _bounds(a, b):
    k = int(np.floor(a[0]).item() % 3)
    return np.concatenate([b[k:], b[:k] * 2.0])


def _set_at_argmax(a, b):
    c = a * 1.0
    c[np.argmax(b)] = b[0]
    return c


def _mask_assign(a, b):
    c = a * 1.0
    c[b < 0] = 0.0
    return c


def _lse(a):
    m = np.max(a)
    return np.log(np.sum(np.exp(a - m))) + m


UNARY = {
    "sin": np.sin,
    "tanh": np.tanh,
    "abs": np.abs,
    "pyabs": abs,
    "fabs": np.fabs,
    "sign": lambda a: np.sign(a) * a,
    "floor": lambda a: np.floor(a) + a,
    "ceil": lambda a: np.ceil(a) * a,
    "round": lambda a: np.round(a) + a * a,
    "rint": lambda a: np.rint(a * 2) * a,
    "trunc": lambda a: np.trunc(a) + a,
    "floordiv": lambda a: a // 0.7 + a,
    "mod": lambda a: np.mod(a, 1.5),
    "fmod": lambda a: np.fmod(a, 1.5),
    "sqrt": np.sqrt,
    "log": np.log,
    "log1p": np.log1p,
    "cbrt": np.cbrt,
    "sq": lambda a: a**2,
    "cube": lambda a: a**3,
    "inv": lambda a: a**-1,
    "recip": lambda a: 1.0 / a,
    "pow3f": lambda a: a**3.0,
    "power2": lambda a: np.power(a, 2),
    "exp": lambda a: np.exp(np.tanh(a)),
    "expm1": lambda a: np.expm1(np.tanh(a)),
    "hypot": lambda a: np.hypot(a, 1.0),
    "arctan2": lambda a: np.arctan2(a, 0.5),
    "copysign": lambda a: np.copysign(a, -a + 0.5),
    "sinc": np.sinc,
    "logaddexp": lambda a: np.logaddexp(a, 0.0),
    "heaviside": lambda a: np.heaviside(a, 0.5) * a,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "diff": lambda a: np.concatenate([np.diff(a), a[:1]]),
    "flip": lambda a: a[::-1],
    "roll": lambda a: np.roll(a, 1),
    "sort": np.sort,
    "sort_desc": lambda a: np.sort(a)[::-1] * a,
    "argsort": lambda a: a[np.argsort(a)] * np.arange(1.0, N + 1),
    "argmax": lambda a: a * a[np.argmax(a)],
    "argmin": lambda a: a + a[np.argmin(a)],
    "max": lambda a: a - np.max(a),
    "min": lambda a: a * np.min(a),
    "amax": lambda a: a * np.amax(a),
    "nanmax": lambda a: a * np.nanmax(a),
    "ptp": lambda a: a * np.ptp(a),
    "max_axis": lambda a: a + np.max(a.reshape(2, 2), axis=1).repeat(2),
    "median": lambda a: a * np.median(a),
    "percentile": lambda a: a + np.percentile(a, 30),
    "quantile": lambda a: a * np.quantile(a, 0.75),
    "norm1": lambda a: a * np.linalg.norm(a, 1),
    "norm2": lambda a: a / (1 + np.linalg.norm(a)),
    "norm_inf": lambda a: a * np.linalg.norm(a, np.inf),
    "norm_minf": lambda a: a * np.linalg.norm(a, -np.inf),
    "norm0": lambda a: a * np.linalg.norm(a, 0),
    "norm3": lambda a: a * np.linalg.norm(a, 3),
    "lse": lambda a: a - _lse(a),
    "sum_where": lambda a: a * np.sum(a, where=a > 0.5),
    "cmp_float": lambda a: (a > 0) * a + (a <= 0.5),
    "clip": lambda a: np.clip(a, -1.0, 1.0),
    "relu": lambda a: np.maximum(a, 0.0),
    "min_c": lambda a: np.minimum(a, 0.3),
    "mean": lambda a: a - np.mean(a),
    "std": lambda a: a * np.std(a),
    "var": lambda a: a + np.var(a),
    "prod": lambda a: a * np.prod(a),
    "nansum": lambda a: a + np.nansum(a),
    "isfinite": lambda a: np.where(np.isfinite(a), a, 0.0),
    "any": lambda a: a * np.any(a > 1.0),
    "all": lambda a: a + np.all(a > -1.0),
    "count": lambda a: a * np.count_nonzero(a > 0),
    "nonzero": lambda a: a * np.sum(a[np.nonzero(a > 0.2)]),
    "flatnonzero": lambda a: a * len(np.flatnonzero(a < 0)),
    "searchsorted": lambda a: a * np.searchsorted(np.array([-1.0, 0.0, 1.0]), a[0]),
    "pymax": lambda a: a * max(a[0].item(), 0.5),
}
BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "where": lambda a, b: np.where(a > b, a, b * 2),
    "where0": lambda a, b: np.where(a > 0, b, -a),
    "select": lambda a, b: np.select([a > 1, a < -1], [a, b], default=a * b),
    "piecewise": lambda a, b: np.where(a < -0.5, a * b, np.where(a < 0.5, b, a - b)),
    "nan_to_b": lambda a, b: np.where(np.isnan(a), b, a),
    "cmp": lambda a, b: (a < b) * a - (a == b) * b,
    "mask_mul": lambda a, b: a * (b > 0) + b * (a >= 0),
    "clip_ab": lambda a, b: np.clip(b, -np.abs(a), np.abs(a)),
    "pow": lambda a, b: np.abs(a) ** np.tanh(b),
    "if_pos": _if_pos,
    "mask_sum": _mask_sum,
    "mask_mean": _mask_mean,
    "index": _index,
    "rotate": _rotate,
    "bounds": _bounds,
    "set_at_argmax": _set_at_argmax,
    "mask_assign": _mask_assign,
    "stack_max": lambda a, b: np.stack([a, b]).max(axis=0),
    "matmul": lambda a, b: (a.reshape(2, 2) @ b.reshape(2, 2)).reshape(-1),
    "dot": lambda a, b: a * np.dot(a, b),
    "outer": lambda a, b: np.outer(a, b).sum(axis=0),
    "sort_by": lambda a, b: b[np.argsort(a)],
    "take": lambda a, b: np.take(b, np.argsort(a)),
    "two_smallest": lambda a, b: a * np.sum(b[a.argsort()[:2]]),
    "py_max": lambda a, b: a * max(np.max(b), np.min(a)),
    "py_if": lambda a, b: a * (b[0] if b[1] > a[1] else a[0]),
}
W = np.array([1.0, -2.0, 0.5, 3.0])
REDUCE = {
    "sum": np.sum,
    "sumsq": lambda a: np.sum(a * a),
    "max": np.max,
    "lse": _lse,
    "mean": np.mean,
    "norm": np.linalg.norm,
    "last": lambda a: a[-1],
    "dot": lambda a: a @ W,
}


def make_program(seed, depth=3):
    """A seeded random program f(x) -> float and its text."""
    rng = random.Random(seed)
    un, bn = sorted(UNARY), sorted(BINARY)

    def build(d):
        if d == 0 or rng.random() < 0.2:
            return ("x",) if rng.random() < 0.75 else ("xs", rng.choice([0.5, -1.0, 2.0]))
        if rng.random() < 0.55:
            return ("u", rng.choice(un), build(d - 1))
        return ("b", rng.choice(bn), build(d - 1), build(d - 1))

    tree, red = build(depth), rng.choice(sorted(REDUCE))

    def ev(node, x):
        if node[0] == "x":
            return x
        if node[0] == "xs":
            return x * node[1] + 0.25
        if node[0] == "u":
            return UNARY[node[1]](ev(node[2], x))
        return BINARY[node[1]](ev(node[2], x), ev(node[3], x))

    def show(node):
        if node[0] == "x":
            return "x"
        if node[0] == "xs":
            return f"(x*{node[1]}+0.25)"
        return f"{node[1]}({', '.join(show(n) for n in node[2:])})"

    def f(x):
        return REDUCE[red](ev(tree, x))

    return f, f"{red}({show(tree)})"


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300, 5e-324, 1.0, -1.0, 2.0]


def record_point(seed):
    """Where a program is recorded: ordinary, with a 0, a tie, a special value, half-integers."""
    x0 = np.random.default_rng(seed).normal(size=N)
    kind = seed % 5
    if kind == 1:
        x0[seed % N] = 0.0
    elif kind == 2:
        x0[1] = x0[3]
    elif kind == 3:
        x0[seed % N] = [np.nan, np.inf, -np.inf, -0.0][seed // 5 % 4]
    elif kind == 4:
        x0 = np.round(x0 * 2) / 2
    return x0


def replay_points(seed, x0):
    """Points far from the recording, without ties between entries (ties are the cases below)."""
    rng = np.random.default_rng(seed + 7)
    x0 = np.nan_to_num(x0, posinf=3.0, neginf=-3.0) + np.array([0.0, 1e-3, 2e-3, 3e-3])
    out = [x0 * (1 + 1e-12), -x0, x0 * 3.0 + 0.1, x0[::-1] * 1e-3]
    out += [rng.normal(size=N) * s for s in (0.1, 5.0)]
    p = rng.normal(size=N)
    p[rng.integers(N)] = SPECIAL[rng.integers(len(SPECIAL))]
    return [*out, p]


# ---- comparison -----------------------------------------------------------------------------


def _same(got, want):
    """Equal as IEEE values: NaN and infinities where eager has them, else rtol 1e-9."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin], want[~fin])
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-9, atol=1e-12)


def _run(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return "ok", fn(*args)
        except tg.RetraceRequired as e:
            return "retrace", e
        except Exception as e:  # noqa: BLE001 - compared with eager's outcome
            return "error", e


def _check(got, want, what):
    """A replay's outcome against eager's: the same numbers, RetraceRequired, or both raise."""
    if got[0] == "retrace":
        return 0
    if want[0] == "error":
        assert got[0] == "error", f"{what}: eager raises {want[1]!r}, the replay gave {got[1]}"
        return 0
    assert got[0] == "ok", f"{what}: the replay raised {got[1]!r}; eager gave {want[1]}"
    for g, w in zip(
        got[1] if isinstance(got[1], tuple) else [got[1]],
        want[1] if isinstance(want[1], tuple) else [want[1]],
        strict=True,
    ):
        _same(g, w)
    return 1


SEEDS = range(80)
CHUNK = 30
TANGENT = np.array([0.3, -0.7, 1.1, 0.2])


@pytest.mark.parametrize("start", range(0, len(SEEDS), CHUNK))
def test_random_programs_replay_as_eager_or_refuse(start):
    replayed = 0
    for seed in SEEDS[start : start + CHUNK]:
        f, text = make_program(seed)
        x0 = record_point(seed)
        if _run(tg.value_and_grad(f), x0)[0] != "ok":
            continue  # eager refuses at the recording point (see REFUSED)
        tr = tg.trace(f, x0)
        xs = replay_points(seed, x0)
        for i, x in enumerate(xs):
            what = f"{text} recorded at {x0.tolist()}, replayed at {x.tolist()}"
            want = _run(tg.value_and_grad(f), x)
            replayed += _check(_run(tr.value_and_grad, x), want, what)
            _check(_run(tr, x), _run(f, x), what + " (tr(x))")
            if i == 2 + seed % 4 and want[0] == "ok":
                _check(_run(tr.jvp, x, TANGENT), _run(tg.jvp, f, (x,), (TANGENT,)), what + " jvp")
                hv = _run(tr.hvp, x, TANGENT)
                if not (hv[0] == "error" and "Python rows" in str(hv[1])):
                    _check(hv, _run(tg.hvp, f, (x,), (TANGENT,)), what + " hvp")
        if seed % 10 == 0:  # a batch mixing branches: retrace=True answers the others one by one
            G = _run(tg.trace(f, x0, retrace=True).grad_many, np.array(xs))
            if G[0] == "ok":
                for x, g in zip(xs, G[1], strict=True):
                    _check(("ok", g), _run(tg.grad(f), x), f"{text} grad_many at {x.tolist()}")
        if seed % 5 == 2:
            tf = tg.traced(f)
            for x in xs[:4]:
                _check(_run(tf.value_and_grad, x), _run(tg.value_and_grad(f), x), text + " traced")
    assert replayed > 20  # the sweep replays, it does not only refuse


# ---- explicit cases ---------------------------------------------------------------------------


def _replays_as_eager(tr, f, x):
    """tr.value_and_grad(x) equals eager's, or raises RetraceRequired; returns whether it
    replayed."""
    got = _run(tr.value_and_grad, np.array(x))
    assert got[0] != "error", got[1]
    return bool(_check(got, _run(tg.value_and_grad(f), np.array(x)), "replay"))


X0 = [0.3, 0.1, 2.0, 0.5]  # recorded in the sort order [1, 0, 3, 2]

GUARDED = {  # at ties and at other counts these replay as eager or refuse (they pass)
    "argsort": (lambda x: x[np.argsort(x)] @ W, [0.2, 0.2, 2.0, 0.5]),
    "argmax": (lambda x: x[np.argmax(x)] * 1.0, [2.0, 0.1, 2.0, 0.5]),
    "argmin": (lambda x: x[np.argmin(x)] * 1.0, [0.1, 0.1, 2.0, 0.5]),
    "py_max": (lambda x: max(x[0], x[1]) * 1.0, [0.5, 0.5, 2.0, 0.5]),
    "max": (lambda x: np.max(x) * 1.0, [2.0, 0.1, 2.0, 0.5]),
    "mask_count": (lambda x: np.sum(x[x > 0.2]), [0.3, 0.3, 2.0, 0.1]),
    "int_index": (lambda x: x[int(x[2].item())] * x[0], [0.3, 0.1, 3.0, 0.5]),
    "int_slice": (lambda x: np.sum(x[: int(x[2].item())]), [0.3, 0.1, 3.5, 0.5]),
    "sum_where": (lambda x: np.sum(x * x, where=x > 0.2), [0.3, 0.2, 2.0, 0.5]),
    "norm0": (lambda x: np.linalg.norm(x, 0) * np.sum(x), [0.0, 0.1, 2.0, 0.5]),
    "norm_inf": (lambda x: np.linalg.norm(x, np.inf), [0.3, 0.1, -2.0, 0.5]),
    "floor": (lambda x: np.sum(np.floor(x) * x), [0.3, 1.1, 2.0, 0.5]),
    "round_half": (lambda x: np.sum(np.round(x) * x), [0.5, 1.5, 2.5, -0.5]),
    "sqrt_neg": (lambda x: np.sum(np.sqrt(x)), [0.3, -0.1, 2.0, 0.5]),
    "div_zero": (lambda x: np.sum(1.0 / x), [0.3, -0.0, 2.0, 0.5]),
    "log_zero": (lambda x: np.sum(np.log(x)), [0.3, 0.0, 2.0, 0.5]),
    "cumprod_zero": (lambda x: np.sum(np.cumprod(x)), [0.3, 0.0, 2.0, 0.5]),
    "lse_inf": (
        lambda x: np.log(np.sum(np.exp(x - np.max(x)))) + np.max(x),
        [np.inf, 0.1, 2.0, 0.5],
    ),
    "where_nan": (lambda x: np.sum(np.where(x > 0.2, x, 0.0)), [0.3, np.nan, 2.0, 0.5]),
    "clip_tie": (lambda x: np.sum(np.clip(x, 0.1, 0.5) * x), [0.1, 0.1, 0.5, 0.5]),
    "heaviside0": (lambda x: np.sum(np.heaviside(x, 0.5) * x), [-0.0, 0.0, 2.0, 0.5]),
}


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_data_dependent_ops_at_kinks_replay_as_eager_or_refuse(name):
    f, x = GUARDED[name]
    for rec in (X0, x):
        if _run(tg.value_and_grad(f), np.array(rec))[0] != "ok":
            continue
        tr = tg.trace(f, np.array(rec))
        for at in (x, X0, [-0.3, 0.7, 2.5, 1e-300], [1e300, 0.1, -2.0, 0.5]):
            _replays_as_eager(tr, f, at)
        assert _replays_as_eager(tr, f, rec)  # at the recording itself it replays


SORTS = {
    "sort": lambda x: np.sort(x) @ W,
    "median": lambda x: np.median(x) * 1.0,
    "quantile": lambda x: np.quantile(x, 0.75),
    "percentile": lambda x: np.percentile(x, 30),
}


@pytest.mark.parametrize("name", sorted(SORTS))
def test_a_sort_replayed_at_a_tie_gives_eagers_gradient(name):
    # recorded at [0.3, 0.1, 2, 0.5] (order 1, 0, 3, 2); at [0.2, 0.2, 2, 0.5] eager's
    # np.sort @ [1, -2, .5, 3] has the gradient [1, -2, 3, .5]; the replay gave [-2, 1, 3, .5]
    # (the guard accepted the tie and kept the recorded order): the pattern of ties is
    # guarded now, so the replay refuses, and a recording at the tie replays it as eager
    f = SORTS[name]
    tr = tg.trace(f, np.array(X0))
    assert not _replays_as_eager(tr, f, [0.2, 0.2, 2.0, 0.5])
    assert not _replays_as_eager(tr, f, [0.3, 0.3, 0.3, 0.3])
    at_tie = tg.trace(f, np.array([0.2, 0.2, 2.0, 0.5]))
    assert _replays_as_eager(at_tie, f, [0.7, 0.7, 2.5, 0.9])


def test_a_sort_at_a_tie_in_hvp():
    f = lambda x: np.sum(np.sort(x) ** 2 * W)  # noqa: E731
    x, v = np.array([0.2, 0.2, 2.0, 0.5]), np.array([1.0, 0.0, 0.0, 0.0])
    tr = tg.trace(f, np.array(X0))
    with pytest.raises(tg.RetraceRequired):
        tr.hvp(x, v)
    tr = tg.trace(f, np.array([0.1, 0.1, 3.0, 0.4]))
    np.testing.assert_allclose(tr.hvp(x, v), tg.hvp(f, (x,), (v,)), rtol=1e-12)


def test_a_sort_at_a_tie_in_traced():
    f = lambda x: np.sort(x) @ W  # noqa: E731
    tf = tg.traced(f)
    tf.value_and_grad(np.array(X0))
    x = np.array([0.2, 0.2, 2.0, 0.5])
    _same(tf.value_and_grad(x)[1], tg.grad(f)(x))  # eager: [1, -2, 3, .5]


def test_a_sort_in_grad_many_refuses_a_tie_the_recording_did_not_have():
    f = lambda x: np.sort(x) @ W  # noqa: E731
    tr = tg.trace(f, np.array([0.1, 0.3, 0.5, 2.0]))
    X = np.array([[0.1, 0.3, 0.5, 2.0], [0.0, 0.4, 0.6, 2.0]])
    for x, g in zip(X, tr.grad_many(X), strict=True):
        _same(g, tg.grad(f)(x))
    with pytest.raises(tg.RetraceRequired):
        tr.grad_many(np.array([[0.2, 0.2, 0.5, 2.0]]))
    at_tie = tg.trace(f, np.array([0.2, 0.2, 0.5, 2.0]))
    X = np.array([[0.2, 0.2, 0.5, 2.0], [0.7, 0.7, 0.9, 1.0]])
    for x, g in zip(X, at_tie.grad_many(X), strict=True):
        _same(g, tg.grad(f)(x))


def test_partition_replayed_arranges_as_eager():
    # recorded at [0.3, 0.1, 2, 0.5] (arranged [1, 0, 3, 2]); at x eager arranges [1, 0, 2, 3]
    # (introselect's order follows the values); the replay kept the recorded arrangement
    # (-1.707111 for eager's -0.045610): the whole order of x is guarded now
    f = lambda x: np.partition(x, 1) @ W  # noqa: E731
    tr = tg.trace(f, np.array(X0))
    x = [-0.70373524, -1.26542147, -0.62327446, 0.04132598]
    assert not _replays_as_eager(tr, f, x)
    assert _replays_as_eager(tr, f, [0.6, 0.2, 4.0, 0.9])  # the recorded order


def test_partition_order_free_uses_replay_as_eager():
    f = lambda x: np.sum(np.partition(x, 1)[:2]) + np.partition(x, 1)[1] ** 2  # noqa: E731
    tr = tg.trace(f, np.array(X0))
    for x in ([-0.70373524, -1.26542147, -0.62327446, 0.04132598], [5.0, 4.0, 3.0, 2.0]):
        _replays_as_eager(tr, f, x)


def test_a_closure_array_mutated_between_replays_is_a_constant_and_a_tensor_is_read():
    data = np.array([1.0, -2.0, 0.5, 3.0])  # NumPy arrays: constants of the trace (documented)
    w = tg.tensor([1.0, -2.0, 0.5, 3.0])  # a Tensor: read again, or guarded
    f = lambda x: np.sum(np.where(w > 0, x, -x) * data) + np.sum(x * w)  # noqa: E731
    tr = tg.trace(f, np.array(X0))
    w[:] = tg.tensor([-1.0, 2.0, 0.5, 3.0])
    try:
        with pytest.raises(tg.RetraceRequired):
            tr.value_and_grad(np.array(X0))
    finally:
        w[:] = tg.tensor([1.0, -2.0, 0.5, 3.0])
    assert _replays_as_eager(tr, f, [5.0, -4.0, 3.0, 2.0])


REFUSED = {  # eager refuses these (so a recording does too), naming the function
    "float": (lambda x: float(x[0]) * np.sum(x), "float()"),
    "unique": (lambda x: np.sum(np.unique(x)), "numpy.unique"),
    "accumulate": (lambda x: np.sum(np.maximum.accumulate(x)), "numpy.maximum.accumulate"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    f, fragment = REFUSED[name]
    for call in (lambda: tg.grad(f)(np.array(X0)), lambda: tg.trace(f, np.array(X0))):
        with pytest.raises(TypeError) as e:
            call()
        assert fragment in str(e.value)
