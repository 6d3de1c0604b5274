"""tg.trace: record once, replay many (compiled forward + backward, guards, batches, files)."""

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from numba import njit

import tapegrad as tg
from tapegrad.core import functions as O
from tapegrad.trace import replay_grad


def chain(x, n=200):
    for _ in range(n):
        x = tg.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def eager_grad(f, *args, argnum=0):
    ts = [tg.tensor(a, requires_grad=(i == argnum)) for i, a in enumerate(args)]
    y = f(*ts)
    y.backward()
    return y.item(), ts[argnum].grad.numpy()


def test_scalar_chain_matches_eager_exactly():
    tr = tg.trace(chain, 0.3)
    for x in (0.3, -0.7, 1.1):
        v, g = tr.value_and_grad(x)
        ev, eg = eager_grad(chain, x)
        assert isinstance(g, float) and isinstance(v, float)
        assert v == ev and g == float(eg)
    assert tr(0.5) == eager_grad(chain, 0.5)[0]


def many_ops(a, b):
    """Every replayable op kind but MATMUL (BLAS order), division by a scalar (recorded as a
    multiplication by 1/c) and array tanh/sigmoid (NumPy's SIMD tanh, see the next test)."""
    u = tg.exp(a * 0.3) + tg.log(b) + tg.log1p(b) + tg.expm1(a * 0.1) + tg.sqrt(b)
    u = u + tg.sin(a) * tg.cos(b) + tg.tan(a * 0.2)
    u = u + tg.relu(a) + abs(a) + tg.leaky_relu(a, 0.1) + (2.0 - a) + 3.0 / b + b**1.5
    u = u + 1.3**a + tg.clip(a, -0.5, 0.5) + a / b + b**a + tg.maximum(a, b)
    u = u + tg.minimum(a, -b) + tg.where(np.arange(12).reshape(3, 4) % 2 == 0, a, b) - b
    u = (
        u
        + a.T.T
        + a[:, ::-1]
        + a[1:2]
        + b.reshape(4, 3).reshape(3, 4)
        + a.sum(0)
        - b.sum(1, keepdims=True)
    )
    s = u.sum() + u.prod(axis=1).sum() + u.amax(axis=0).sum() + u.min() + tg.mean(u, axis=(0, 1))
    c = tg.concatenate([u, a], axis=1)
    g = c[[0, 2, 2], [1, 5, 5]]
    d = c * 1.0
    d[0, 1:3] = g[:2]
    sc = O.scatter_add(g, [3, 0, 3], (5,))
    big = tg.sum(tg.sin(tg.reshape(tg.concatenate([u] * 30, 0), (-1,))))  # pairwise sums
    return s + d.sum() + sc.sum() + big


def test_replay_at_example_is_bit_identical():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (3, 4))
    b = rng.uniform(0.5, 2, (3, 4))
    tr = tg.trace(many_ops, a, b)
    recorded = tr.val.copy()
    assert tr(a, b) == many_ops(tg.tensor(a), tg.tensor(b)).item()
    np.testing.assert_array_equal(tr.val, recorded)
    a2 = rng.uniform(-1, 1, (3, 4))
    v, g = tr.value_and_grad(a2, b)
    ev, eg = eager_grad(many_ops, a2, b)
    assert v == pytest.approx(ev, rel=1e-13)
    np.testing.assert_allclose(g, eg, rtol=1e-10, atol=1e-12)


def test_tanh_sigmoid_exact_on_scalars_within_an_ulp_on_arrays():
    def f(x):
        return tg.tanh(x) + tg.sigmoid(x * 2.0)

    tr = tg.trace(f, 0.3)
    assert tr(0.7) == f(tg.tensor(0.7)).item()
    x = np.linspace(-3, 3, 50)
    tra = tg.trace(f, x)
    np.testing.assert_allclose(tra(x), f(tg.tensor(x)).numpy(), rtol=1e-15, atol=0)


def test_matmul_and_division_replay_close():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((4, 3))

    def f(x, w):
        h = tg.tanh(x @ w) / 3.0
        return (h @ w.T).sum() + tg.matmul(x[0], w).sum()

    x = rng.standard_normal((5, 4))
    tr = tg.trace(f, x, W, argnums=(0, 1))
    x2 = rng.standard_normal((5, 4))
    v, (gx, gw) = tr.value_and_grad(x2, W)
    xt, wt = tg.tensor(x2, requires_grad=True), tg.tensor(W, requires_grad=True)
    y = f(xt, wt)
    y.backward()
    assert v == pytest.approx(y.item(), rel=1e-12)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw, wt.grad.numpy(), rtol=1e-12)


def test_large_matmul_backward_in_replay():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((60, 50))
    B = rng.standard_normal((50, 40))  # 120k multiply-adds: past the kernel's small limit
    tr = tg.trace(lambda a, b: ((a @ b) ** 2).sum(), A, B, argnums=(0, 1))
    ga, gb = tr.grad(A, B)
    np.testing.assert_allclose(ga, 2 * (A @ B) @ B.T, rtol=1e-10)
    np.testing.assert_allclose(gb, A.T @ (2 * (A @ B)), rtol=1e-10)


# ---- guards ------------------------------------------------------------------------------------


def branchy(x):
    if x > 0:
        return x * x
    return -x * 3.0


def test_if_guard_raises_with_source_line():
    tr = tg.trace(branchy, 2.0)
    assert tr.grad(5.0) == 10.0
    with pytest.raises(tg.RetraceRequired) as e:
        tr.grad(-1.0)
    msg = str(e.value)
    assert "test_trace.py" in msg and "if x > 0" in msg and "True" in msg
    with pytest.raises(tg.RetraceRequired):
        tr(-1.0)


def test_retrace_true_answers_other_branch():
    tr = tg.trace(branchy, 2.0, retrace=True)
    assert tr.grad(-1.0) == -3.0
    assert tr.retraces == 1
    assert tr.grad(-2.0) == -3.0 and tr.retraces == 1
    assert tr.grad(3.0) == 6.0 and tr.retraces == 2


def test_while_loop_on_value():
    def f(x):
        y = x
        while y < 10.0:
            y = y * 2.0
        return y

    tr = tg.trace(f, 1.5)  # 1.5 -> 12 after 3 doublings
    assert tr.grad(1.6) == 8.0
    with pytest.raises(tg.RetraceRequired):
        tr.grad(1.0)  # needs 4 doublings
    with pytest.raises(tg.RetraceRequired):
        tr.grad(3.0)  # needs 2
    tr2 = tg.trace(f, 1.5, retrace=True)
    assert tr2.grad(1.0) == 16.0 and tr2.grad(3.0) == 4.0


def test_python_max_min_abs_on_traced_scalars():
    def f(x, y):
        return max(x, y) * 2.0 + min(x, y) + abs(x)

    tr = tg.trace(f, 1.0, 2.0, argnums=(0, 1))
    assert tr.grad(0.5, 3.0) == (1.0 + 1.0, 2.0)
    assert tr.grad(-0.5, 3.0) == (1.0 - 1.0, 2.0)  # abs is an op: no guard needed
    with pytest.raises(tg.RetraceRequired):
        tr.grad(3.0, 2.0)


def test_float_pins_value():
    def f(x):
        k = x.item()  # Python now knows x: any change must retrace
        return x * k

    tr = tg.trace(f, 2.0)
    assert tr.grad(2.0) == 2.0
    with pytest.raises(tg.RetraceRequired, match="read the value"):
        tr.grad(2.5)
    tr2 = tg.trace(f, 2.0, retrace=True)
    assert tr2.grad(3.0) == 3.0


@pytest.mark.parametrize(
    "leak",
    [
        lambda x: x.detach() * 1.0,
        lambda x: np.sign(x).item(),  # an explicit read of a value derived from x
        lambda x: tg.tensor(x) + 0.0,
        lambda x: x.numpy() * 2.0,
    ],
)
def test_values_leaving_the_tape_are_pinned(leak):
    tr = tg.trace(lambda x: x * leak(x), 2.0)
    assert tr.grad(2.0) == pytest.approx(float(eager_grad(lambda x: x * leak(x), 2.0)[1]))
    with pytest.raises(tg.RetraceRequired, match="read the value"):
        tr.grad(-2.0)
    from tapegrad.core.tape import STATE

    assert STATE.guard is None


def test_array_comparison_mask_and_bool():
    def f(x):
        m = x > 0.0
        y = tg.where(m, x, 0.1 * x)
        if x.sum() > 1.0:
            y = y * 2.0
        return y.sum()

    x = np.array([1.0, -1.0, 2.0])
    tr = tg.trace(f, x)
    np.testing.assert_array_equal(tr.grad(np.array([2.0, -3.0, 2.5])), [2.0, 0.2, 2.0])
    with pytest.raises(tg.RetraceRequired, match="mask"):
        tr.grad(np.array([-1.0, -1.0, 5.0]))


def test_ops_with_both_sides_need_no_guard():
    def f(x):
        return (tg.relu(x) + tg.clip(x, -1, 1) + tg.maximum(x, 0.5 * x)).sum() + abs(x).sum()

    tr = tg.trace(f, np.array([1.0, -2.0, 3.0]))
    assert not tr.sites
    x2 = np.array([-1.0, 2.0, 0.5])
    np.testing.assert_allclose(tr.grad(x2), eager_grad(f, x2)[1])


# ---- arguments -----------------------------------------------------------------------------------


def test_pytree_arguments_and_mismatch_errors():
    def f(p, data):
        return (p["w"] * data).sum() + p["b"][0] * p["b"][1]

    p = {"w": np.ones(3), "b": [2.0, 3.0]}
    data = np.array([1.0, 2.0, 3.0])
    tr = tg.trace(f, p, data)
    g = tr.grad({"w": np.zeros(3), "b": [1.0, 5.0]}, data)
    np.testing.assert_array_equal(g["w"], data)
    assert g["b"] == [5.0, 1.0] and isinstance(g["b"][0], float)
    # the non-differentiated float argument is an input too, not a frozen constant
    assert tr({"w": np.ones(3), "b": [0.0, 0.0]}, data * 2) == 12.0
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        tr.grad({"w": np.ones(4), "b": [1.0, 2.0]}, data)
    with pytest.raises(ValueError, match="dict of keys"):
        tr.grad({"w": np.ones(3)}, data)
    with pytest.raises(ValueError, match="list of 2 items"):
        tr.grad({"w": np.ones(3), "b": [1.0]}, data)


def test_static_int_argument_change_requires_retrace():
    tr = tg.trace(chain, 0.3, 5)
    assert tr.grad(0.4, 5) == float(eager_grad(lambda x: chain(x, 5), 0.4)[1])
    with pytest.raises(tg.RetraceRequired, match="non-float value 5"):
        tr.grad(0.4, 6)
    tr2 = tg.trace(chain, 0.3, 5, retrace=True)
    assert tr2.grad(0.4, 6) == float(eager_grad(lambda x: chain(x, 6), 0.4)[1])


def test_custom_function_runs_again_at_each_replay():
    class Sq(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    tr = tg.trace(lambda x: Sq.apply(x) + 1.0, 2.0)
    assert tr.value_and_grad(-3.0) == (10.0, -6.0)


def test_no_grad_inside_f_refused():
    def f(x):
        with tg.no_grad():
            c = x * 2.0
        return x * c

    with pytest.raises(RuntimeError, match="gradient recording off"):
        tg.trace(f, 1.0)


def test_trace_leaves_thread_tape_alone():
    before = tg.current_tape()
    x = tg.tensor(1.0, requires_grad=True)
    y = x * 3.0
    tr = tg.trace(chain, 0.3)
    assert tg.current_tape() is before
    y.backward()
    assert x.grad.item() == 3.0
    assert tr.grad(0.3) == float(eager_grad(chain, 0.3)[1])


# ---- batches, numba, files -----------------------------------------------------------------------


def test_grad_many_matches_single_replays():
    def f(x):
        return (tg.sin(x) * x).sum() + tg.exp(x[0])

    tr = tg.trace(f, np.zeros(4))
    X = np.random.default_rng(3).standard_normal((37, 4))
    G = tr.grad_many(X)
    assert G.shape == X.shape
    np.testing.assert_array_equal(G, np.stack([tr.grad(x) for x in X]))
    trs = tg.trace(chain, 0.3)
    xs = np.linspace(-1, 1, 9)
    np.testing.assert_array_equal(trs.grad_many(xs), [trs.grad(float(x)) for x in xs])


def test_grad_many_guard_names_first_failing_item():
    tr = tg.trace(branchy, 1.0)
    X = np.array([1.0, 2.0, -3.0, 4.0, -5.0])
    with pytest.raises(tg.RetraceRequired, match="item 2"):
        tr.grad_many(X)
    tr2 = tg.trace(branchy, 1.0, retrace=True)
    np.testing.assert_array_equal(tr2.grad_many(X), [2.0, 4.0, -3.0, 8.0, -3.0])


@njit  # not cached: a cache would go stale (and refuse) whenever the kernels are regenerated
def _descend(arrays, x, lr, steps):
    for _ in range(steps):
        x = x - lr * replay_grad(arrays, x)
    return x


def test_njit_grad_inside_user_loop():
    tr = tg.trace(lambda x: (x * x * x).sum(), np.ones(3))
    fn, arrays = tr.njit_grad
    assert fn is replay_grad
    x = _descend(arrays, np.array([1.0, 2.0, 0.5]), 0.01, 50)
    ref = np.array([1.0, 2.0, 0.5])
    for _ in range(50):
        ref = ref - 0.01 * tr.grad(ref)
    np.testing.assert_allclose(x, ref, rtol=1e-14)
    np.testing.assert_array_equal(tr.flat_input(ref), ref)


def test_pickle_in_another_process(tmp_path):
    tr = tg.trace(branchy, 2.0)
    path = tmp_path / "tr.pkl"
    path.write_bytes(pickle.dumps(tr))
    tr.save(tmp_path / "tr.npz")
    code = (
        f"import pickle, tapegrad as tg\n"
        f"tr = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        f"tl = tg.load_trace({str(tmp_path / 'tr.npz')!r})\n"
        "print(tr.grad(3.0), tl.grad(4.0))\n"
        "try:\n    tl.grad(-1.0)\nexcept tg.RetraceRequired as e:\n    print('guard', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("6.0 8.0\nguard") and "if x > 0" in out


def test_save_load_roundtrip_pytree(tmp_path):
    def f(p, k):
        return (p["w"] ** 2).sum() * k[0] + p["s"]

    tr = tg.trace(f, {"w": np.arange(3.0), "s": 1.0}, [2.0, "tag"])
    tr.save(tmp_path / "t.npz")
    tl = tg.load_trace(tmp_path / "t.npz")
    args = ({"w": np.array([1.0, -2.0, 0.5]), "s": 0.0}, [3.0, "tag"])
    ga, gl = tr.grad(*args), tl.grad(*args)
    np.testing.assert_array_equal(ga["w"], gl["w"])
    assert gl["s"] == 1.0 and tl(*args) == tr(*args)


def test_example_fit_improves():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import trace_speed

    res = trace_speed.main(steps=60, iters=15, compare=False, verbose=False)
    assert res["loss_end"] < 0.5 * res["loss_start"]


def test_trace_tape_is_inspectable():
    tr = tg.trace(branchy, 2.0)
    t = tr.tape
    assert len(t) == len(tr) and t.nbytes > 0
    text = t.dump()
    assert "GUARD" in text and "MUL" in text
    assert t.stats()["rows"] == len(tr)


def test_division_by_zero_gives_ieee_values_like_recording():
    def f(x, y):
        return 1.0 / x + x / y + tg.log(x * 0.0 + 1.0)

    tr = tg.trace(f, 1.0, 2.0)
    with np.errstate(all="ignore"):
        v = tr(0.0, 0.0)
    assert np.isnan(v) or np.isinf(v)
    with np.errstate(all="ignore"):
        assert tr(2.0, 0.0) == f(tg.tensor(2.0), tg.tensor(0.0)).item() == np.inf


def test_replay_grad_refuses_code_compiled_for_other_kernels():
    """A user's cached @njit function embeds replay_grad's code; after tapegrad's kernels
    change, the arrays carry another kernels id and the old code refuses instead of reading
    op codes that now mean something else."""
    tr = tg.trace(lambda x: np.sum(x**2), np.array([1.0, 2.0]))
    fn, arrays = tr.njit_grad
    meta = arrays[-1].copy()
    meta[3] += 1
    with pytest.raises(RuntimeError, match="another tapegrad version"):
        fn(arrays[:-1] + (meta,), np.array([1.0, 2.0]))
    np.testing.assert_allclose(fn(arrays, np.array([1.0, 2.0])), [2.0, 4.0])


def test_threads_sharing_a_trace_get_their_own_gradients():
    # each thread replays in its own buffers: no thread sees another's values or adjoints
    def f(x):
        h = x
        for _ in range(50):
            h = np.sin(h) * 1.1 + h * 0.3
        return np.sum(h * h)

    tr = tg.trace(f, np.ones(4))
    xs = [np.linspace(-1.0, 1.0, 4) * (k + 1) for k in range(4)]
    want = [tg.grad(f)(x) for x in xs]
    errors = []

    def work(k):
        for _ in range(200):
            v, g = tr.value_and_grad(xs[k])
            if not (np.allclose(g, want[k], rtol=1e-12) and np.isclose(v, f(xs[k]))):
                errors.append(k)
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_pickling_a_trace_while_it_replays_is_consistent():
    # the pickled arrays are the recorded template, which replays never write
    tr = tg.trace(lambda x: np.sum(np.exp(x) * x), np.ones(3))
    before = pickle.dumps(tr)
    tr.grad(np.array([0.1, 2.0, -3.0]))
    assert pickle.dumps(tr) == before
    back = pickle.loads(before)
    np.testing.assert_allclose(
        back.grad(np.array([0.5, 0.5, 0.5])), tr.grad(np.array([0.5, 0.5, 0.5])), rtol=1e-15
    )


def test_a_recording_guards_only_its_own_thread():
    """The recorder's guard is thread-local state: another thread reading Tensors while a
    trace records adds no guard row to that trace, and its own reads stay unguarded."""
    import threading

    from tapegrad.core.tape import STATE

    started, release = threading.Event(), threading.Event()
    seen = {}

    def f(x):
        started.set()
        release.wait(10)
        return x * 2.0 if x > 0 else -x

    def other():
        started.wait(10)
        seen["guard"] = STATE.guard
        t = tg.tensor(3.0)
        seen["value"] = float(t) + t.item()  # plain reads, not a recording's
        release.set()

    th = threading.Thread(target=other)
    th.start()
    tr = tg.trace(f, 1.0)
    th.join()
    assert seen == {"guard": None, "value": 6.0}
    # the guards of f's `x > 0` (the comparison and its bool), none from the other thread
    assert tr.sites and all(
        text == "return x * 2.0 if x > 0 else -x" for _, text, _ in tr.sites.values()
    )
    assert tr(4.0) == 8.0
    with pytest.raises(tg.RetraceRequired):
        tr(-4.0)
    assert STATE.guard is None


@pytest.mark.parametrize("f", [lambda x: np.sum(x > 0), lambda x: np.sum(x) > 0.0])
def test_a_count_or_a_comparison_is_not_differentiated_after_save_and_load(f, tmp_path):
    """A trace of f returning a count or a comparison replays its value, and refuses the
    derivatives (zeros would look like an answer), also once saved and loaded."""
    x = np.array([0.5, -1.0, 2.0])
    tr = tg.trace(f, x)
    tr.save(tmp_path / "t.npz")
    for t in (tr, tg.load_trace(tmp_path / "t.npz")):
        x2 = np.array([1.0, -2.0, 3.0])  # (the recorded branch: the same mask)
        assert t(x2) == f(x2)
        with pytest.raises(TypeError, match="a comparison or a count"):
            t.grad(x)
        with pytest.raises(TypeError, match="a comparison or a count"):
            t.hvp(x, np.ones(3))
