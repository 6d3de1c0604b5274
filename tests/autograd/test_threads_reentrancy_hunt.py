"""Threads and reentrancy: tapegrad used from several threads at once, and re-entered from
inside its own callbacks (hooks, a Function's backward, a custom_vjp rule, weakref callbacks,
generators).

What is compared: every gradient computed in a thread pool (2-8 threads started together on a
Barrier, switching every 10 us) against the same computation run single-threaded beforehand
(rtol 1e-12) and against closed forms; every gradient computed by a backward that a hook or a
custom rule started inside another backward against the closed form of both.  After an
exception (or a KeyboardInterrupt) raised inside ``f``, a hook or a Function's backward, the
next gradients must be right and the grad mode as it was.  Cases where tapegrad raises as
PyTorch does are in REFUSED with the message fragment asserted.  No torch or mpmath: the file
runs in the no-extras CI; every future is waited with ``.result(timeout=60)``.
"""

import gc
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

RTOL = 1e-12
TIMEOUT = 60


def close(got, want, rtol=RTOL, atol=0.0):
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol, atol)


@pytest.fixture
def fast_switching():
    """A 10 us switch interval: threads interleave inside recording, sweeps and replays."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def in_threads(n, work):
    """``work(k)`` on n threads that start together; the list of their results."""
    barrier = threading.Barrier(n)

    def run(k):
        barrier.wait(timeout=TIMEOUT)
        return work(k)

    with ThreadPoolExecutor(n) as ex:
        futures = [ex.submit(run, k) for k in range(n)]
        return [f.result(timeout=TIMEOUT) for f in futures]


# ---- a function with closed-form derivatives -----------------------------------------------------


def f_np(x):
    return tnp.sum(tnp.sin(x) * tnp.exp(x / 3) + x**3)


def df(x):
    e = np.exp(x / 3)
    return np.cos(x) * e + np.sin(x) * e / 3 + 3 * x**2


def d2f(x):
    e = np.exp(x / 3)
    return -np.sin(x) * e + 2 * np.cos(x) * e / 3 + np.sin(x) * e / 9 + 6 * x


def point(k, i):
    return np.linspace(-1.0, 1.0, 4) + 0.1 * k + 0.01 * i


# ---- 1. many threads, each its own graphs --------------------------------------------------------

TRACE = tg.trace(f_np, point(0, 0))


def one_round(x):
    """Every way of differentiating f at x, as a dict of arrays."""
    out = {}
    out["grad"] = tg.grad(f_np)(x)
    v, g = tg.value_and_grad(f_np)(x)
    out["vag"] = np.r_[v, g]
    out["hessian"] = tg.hessian(f_np)(x)
    t = tg.tensor(x, requires_grad=True)
    f_np(t).backward()
    out["backward"] = t.grad.numpy()
    t2 = tg.tensor(x, requires_grad=True)
    out["autograd.grad"] = tg.autograd.grad(f_np(t2), t2)[0].numpy()
    out["jvp"] = np.r_[tg.jvp(f_np, (x,), (np.ones_like(x),))]
    out["trace"] = np.r_[TRACE(x), TRACE.grad(x)]
    tv, tj = TRACE.jvp(x, np.ones_like(x))
    out["trace.jvp"] = np.r_[tv, tj]
    out["trace.hvp"] = TRACE.hvp(x, np.ones_like(x))
    out["trace.grad_many"] = TRACE.grad_many(np.stack([x, x + 0.5]))
    return out


@pytest.mark.parametrize("n", [2, 4, 8])
def test_threads_agree_with_the_single_threaded_run(n, fast_switching):
    iters = 24 // n
    single = {(k, i): one_round(point(k, i)) for k in range(n) for i in range(iters)}

    def work(k):
        return {(k, i): one_round(point(k, i)) for i in range(iters)}

    for res in in_threads(n, work):
        for key, got in res.items():
            for name, v in got.items():
                close(v, single[key][name])
    for (k, i), got in single.items():  # and the single-threaded run against closed forms
        x = point(k, i)
        close(got["grad"], df(x))
        close(got["hessian"], np.diag(d2f(x)), atol=1e-14)
        close(got["trace.hvp"], d2f(x))
        close(got["jvp"][1], df(x).sum())


# ---- 2. grad mode is per thread ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled", "inference_mode", "decorator"])
def test_grad_mode_off_in_one_thread_leaves_the_other_recording(mode, fast_switching):
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    @tg.no_grad()
    def off(t):
        return (t * 2).requires_grad, tg.is_grad_enabled()

    def quiet(k):
        seen = []
        for _ in range(200):
            if mode == "decorator":
                seen.append(off(w))
                continue
            ctx = {
                "no_grad": tg.no_grad,
                "set_grad_enabled": lambda: tg.set_grad_enabled(False),
                "inference_mode": tg.inference_mode,
            }[mode]()
            with ctx:
                seen.append(((w * 2).requires_grad, tg.is_grad_enabled()))
        return seen

    def recording(k):
        seen = []
        for i in range(200):
            y = (w * (i + 1.0)).sum()
            seen.append((y.requires_grad, tg.is_grad_enabled()))
            (g,) = tg.autograd.grad(y, w)
            close(g.numpy(), [i + 1.0, i + 1.0])
        return seen

    res = in_threads(2, lambda k: quiet(k) if k == 0 else recording(k))
    assert set(res[0]) == {(False, False)}
    assert set(res[1]) == {(True, True)}
    assert tg.is_grad_enabled()


def test_set_grad_enabled_called_as_a_function_stays_in_its_thread():
    with ThreadPoolExecutor(1) as ex:

        def switch_off():
            tg.set_grad_enabled(False)
            return tg.is_grad_enabled()

        assert ex.submit(switch_off).result(timeout=TIMEOUT) is False
        assert tg.is_grad_enabled()
        # as in PyTorch, the pool's thread keeps its own mode for its next task
        assert ex.submit(tg.is_grad_enabled).result(timeout=TIMEOUT) is False
        ex.submit(tg.set_grad_enabled, True).result(timeout=TIMEOUT)
    w = tg.tensor(1.0, requires_grad=True)
    assert (w * 2).requires_grad


# ---- 3. leaves shared between threads ------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 8])
def test_backward_into_a_shared_leaf_accumulates_the_sum(n, fast_switching):
    w = tg.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    b = tg.tensor(1.5, requires_grad=True)
    reps = 96 // n

    def work(k):
        for _ in range(reps):
            ((tg.sin(w) * b).sum() * (k + 1)).backward()
        return True

    in_threads(n, work)
    total = reps * n * (n + 1) / 2
    close(w.grad.numpy(), total * 1.5 * np.cos([0.5, -1.0, 2.0]))
    close(b.grad.item(), total * np.sin([0.5, -1.0, 2.0]).sum())


def test_shared_leaf_read_by_threads_each_gets_its_own_gradient(fast_switching):
    w = tg.tensor(np.array([0.5, -1.0]), requires_grad=True)

    def work(k):
        out = []
        for i in range(30):
            c = k + 1.0 + 0.1 * i
            g = tg.grad(lambda x: tnp.sum(tnp.sin(x * w) * w))(np.full(2, c))
            g = g.detach().numpy()  # (a Tensor of w: f reads w, which requires grad)
            (gw,) = tg.autograd.grad((w**2 * c).sum(), w)
            out.append((c, g, gw.numpy()))
        return out

    for res in in_threads(4, work):
        for c, g, gw in res:
            close(g, np.cos(c * w.numpy()) * w.numpy() ** 2)
            close(gw, 2 * c * w.numpy())
    assert w.grad is None  # nothing accumulated: only autograd.grad and tg.grad ran


def test_graph_tensor_from_another_thread_raises():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2.0
    with ThreadPoolExecutor(1) as ex:

        def use():
            with pytest.raises(RuntimeError, match="another thread's tape"):
                (h * 3.0).sum().backward()
            with pytest.raises(RuntimeError, match="another thread's tape"):
                tg.autograd.grad(h.sum(), w)
            with pytest.raises(RuntimeError, match="thread"):
                h.sum().backward()
            return True

        assert ex.submit(use).result(timeout=TIMEOUT)
    h.sum().backward()  # still fine on its own thread
    close(w.grad.numpy(), [2.0, 2.0])


def test_leaf_made_in_a_finished_thread_works_here():
    with ThreadPoolExecutor(1) as ex:

        def make():
            p = tg.tensor([0.25, 0.75], requires_grad=True)
            (p * 3).sum().backward()  # entered on that thread's tape
            return p

        p = ex.submit(make).result(timeout=TIMEOUT)
    gc.collect()
    (p**2).sum().backward()
    close(p.grad.numpy(), [3.5, 4.5])


def test_leaf_made_here_used_by_a_thread_while_this_thread_records(fast_switching):
    p = tg.tensor([0.3, 0.6], requires_grad=True)
    here = (p.exp() * p).sum()  # p entered on this tape, graph held

    def work(k):
        out = []
        for i in range(50):
            (g,) = tg.autograd.grad((tg.sin(p) * (i + k)).sum(), p)
            out.append((i + k, g.numpy()))
        return out

    for res in in_threads(3, work):
        for c, g in res:
            close(g, c * np.cos([0.3, 0.6]))
    (g,) = tg.autograd.grad(here, p)
    close(g.numpy(), np.exp([0.3, 0.6]) * (1 + np.array([0.3, 0.6])))


# ---- 4. one trace replayed from several threads --------------------------------------------------


def _branchy(x):
    if x[0] > 0:
        return tnp.sum(x**2)
    y = tnp.sin(x)
    for _ in range(10):
        y = tnp.cos(y) * 0.5 + x
    return tnp.sum(y)


def _branchy_np(x):
    if x[0] > 0:
        return np.sum(x**2)
    y = np.sin(x)
    for _ in range(10):
        y = np.cos(y) * 0.5 + x
    return np.sum(y)


def _branchy_point(k, i):
    return np.array([(1 if (i + k) % 2 else -1) * (0.5 + 0.01 * i), 0.3 * k])


def test_a_retracing_trace_shared_by_threads_taking_other_branches(fast_switching):
    """A retrace=True trace records again when a thread's inputs take another branch: the
    calls of other threads must not replay half of the old and half of the new recording
    (the compiled replay crashed, or read the value at the other recording's offset)."""
    tr = tg.trace(_branchy, np.array([1.0, 2.0]), retrace=True)
    ref = {}
    for k in range(4):
        for i in range(24):
            x = _branchy_point(k, i)
            ref[k, i] = tg.value_and_grad(_branchy)(x)

    def work(k):
        out = []
        for i in range(24):
            x = _branchy_point(k, i)
            out.append((i, tr(x), tr.value_and_grad(x)))
        return out

    for k, res in enumerate(in_threads(4, work)):
        for i, v, (v2, g) in res:
            x = _branchy_point(k, i)
            close(v, _branchy_np(x))
            close(v2, ref[k, i][0])
            close(g, ref[k, i][1])
    assert tr.retraces > 0


def test_traced_cache_shared_by_threads(fast_switching):
    """tg.traced from several threads: several branches and structures, a small cache (the
    bookkeeping of the cache raised IndexError when threads moved its traces at once)."""
    tf = tg.traced(_branchy, max_branches=1, max_structures=1)

    def work(k):
        out = []
        for i in range(24):
            x = _branchy_point(k, i)
            if i % 4 == 0:
                x = x[:1]
            out.append((x, tf.value_and_grad(x)))
        return out

    for res in in_threads(4, work):
        for x, (v, g) in res:
            vr, gr = tg.value_and_grad(_branchy)(x)
            close(v, vr)
            close(g, gr)
    assert tf.replays == 96


def test_a_trace_is_replayed_in_each_thread_s_own_buffers(fast_switching):
    w = tg.tensor(np.array([0.5, 2.0]), requires_grad=True)  # read from the closure at replay
    tr = tg.trace(lambda x: tnp.sum(tnp.exp(x * w) / (1 + x**2)), np.zeros(2))

    def expected(x):
        wv = w.numpy()
        e = np.exp(x * wv)
        return wv * e / (1 + x**2) - 2 * x * e / (1 + x**2) ** 2

    def work(k):
        return [(x, tr.grad(x)) for x in (np.array([0.1 * k, -0.2 * i]) for i in range(60))]

    for res in in_threads(6, work):
        for x, g in res:
            close(g, expected(x))


# ---- 5. reentrancy: a backward started inside a running backward ---------------------------------


def hook_backward_later_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    u = tg.tensor([3.0], requires_grad=True)

    def hook(g):
        (u**2).sum().backward()
        return g

    y = x * x
    y.register_hook(hook)
    (y * 3).sum().backward()
    return [x.grad, u.grad], [[6.0, 12.0], [6.0]]


def hook_backward_earlier_graph():
    u = tg.tensor([3.0], requires_grad=True)
    uu = (u**2).sum()
    x = tg.tensor([1.0, 2.0], requires_grad=True)

    def hook(g):
        uu.backward()
        return g

    y = x * x
    y.register_hook(hook)
    (y * 3).sum().backward()
    return [x.grad, u.grad], [[6.0, 12.0], [6.0]]


def hook_calls_tg_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(tg.grad(lambda t: tnp.sum(tnp.sin(t)))(np.array([0.5, 1.0])))
        return g * 2

    y = x * x
    y.register_hook(hook)
    (y * 3).sum().backward()
    return [x.grad, seen[0]], [[12.0, 24.0], np.cos([0.5, 1.0])]


def hook_calls_jacobian_and_hessian():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    s = np.array([0.5, 1.5])

    def hook(g):
        seen.append(tg.jacobian(lambda t: tnp.sin(t) * t[0])(s))
        seen.append(tg.hessian(lambda t: tnp.sum(t**3))(s))
        return g

    y = tnp.exp(x)
    y.register_hook(hook)
    (y * y).sum().backward()
    J = np.diag(np.cos(s) * s[0])
    J[:, 0] += np.sin(s)
    return [x.grad, seen[0], seen[1]], [2 * np.exp([2.0, 4.0]), J, np.diag(6 * s)]


def hook_autograd_grad_with_inputs():
    v = tg.tensor([0.5, 0.25], requires_grad=True)
    q = (v**3).sum()
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(tg.autograd.grad(q, v)[0])
        return g

    y = x * x
    y.register_hook(hook)
    gx, gv = tg.autograd.grad((y * v).sum(), [x, v])
    return [gx, gv, seen[0]], [[1.0, 1.0], [1.0, 4.0], [0.75, 0.1875]]


def leaf_hook_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([0.5, 0.5], requires_grad=True)
    v = tg.tensor(2.0, requires_grad=True)

    def hook(g):
        z = v**3
        (d,) = tg.autograd.grad(z, v, create_graph=True)
        d.backward()  # d2/dv2 v**3 = 6 v into v.grad
        return g

    x.register_hook(hook)
    (x**2 * w).sum().backward()  # w's gradient is accumulated after x's hook
    return [x.grad, w.grad, v.grad], [[1.0, 2.0], [1.0, 4.0], 12.0]


def leaf_output_with_hook_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    u = tg.tensor(3.0, requires_grad=True)

    def hook(g):
        (u**2).backward()
        return g * 2

    x.register_hook(hook)
    x.backward(tg.tensor([1.0, 1.0]))
    return [x.grad, u.grad], [[2.0, 2.0], 6.0]


def three_levels():
    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    c = tg.tensor(5.0, requires_grad=True)

    def hook_b(g):
        (c**2).backward()
        return g

    def hook_a(g):
        yb = b**3
        yb.register_hook(hook_b)
        (yb * 1.0).backward()
        return g

    ya = a**2
    ya.register_hook(hook_a)
    (ya * ya).backward()
    return [a.grad, b.grad, c.grad], [32.0, 27.0, 10.0]


def shared_graph_retained_in_hook():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    s = h.sum()

    def hook(g):
        s.backward(retain_graph=True)
        return g

    y = h * 3
    y.register_hook(hook)
    y.sum().backward()
    return [x.grad], [4 * np.exp([1.0, 2.0])]


def retain_grad_and_hook_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    u = tg.tensor(1.5, requires_grad=True)
    y = x * x
    y.retain_grad()
    z = y * 2
    z.register_hook(lambda g: ((u * u).backward(), g)[1])
    z.sum().backward()
    return [y.grad, x.grad, u.grad], [[2.0, 2.0], [4.0, 8.0], 3.0]


class _SinByGrad(tg.Function):
    """sin, whose backward asks tg.grad for the cosine."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tg.tensor(np.sin(x.data))

    @staticmethod
    def backward(ctx, go):
        (x,) = ctx.saved_tensors
        return go * tg.tensor(tg.grad(lambda t: tnp.sum(tnp.sin(t)))(x.data))


def function_backward_calls_tg_grad():
    x = tg.tensor([0.3, 0.7], requires_grad=True)
    (_SinByGrad.apply(x) ** 2).sum().backward()
    g = tg.grad(lambda t: tnp.sum(_SinByGrad.apply(t) ** 2))(np.array([0.3, 0.7]))
    want = 2 * np.sin([0.3, 0.7]) * np.cos([0.3, 0.7])
    return [x.grad, g], [want, want]


@tg.custom_vjp
def _sin_vjp(x):
    return tnp.sin(x)


_sin_vjp.defvjp(
    lambda x: (tnp.sin(x), x),
    lambda x, g: (g * tg.grad(lambda s: tnp.sum(tnp.sin(s)))(np.asarray(x)),),
)


def custom_vjp_rule_calls_tg_grad():
    xv = np.array([0.3, 0.9])
    g = tg.grad(lambda x: tnp.sum(_sin_vjp(x) * x))(xv)
    return [g], [np.cos(xv) * xv + np.sin(xv)]


def hook_in_f_calls_tg_grad():
    def f(t):
        y = t * t

        def hook(g):
            return g * tg.grad(lambda s: tnp.sum(s**3))(np.array([2.0]))[0]  # * 12

        y.register_hook(hook)
        return tnp.sum(y)

    return [tg.grad(f)(np.array([1.0, 2.0]))], [[24.0, 48.0]]


def checkpoint_hook_calls_tg_grad():
    def block(t):
        y = t.sin()
        y.register_hook(lambda g: g * tg.grad(lambda s: s * s)(3.0))  # * 6
        return y * t

    x = tg.tensor([0.3, 0.6], requires_grad=True)
    tg.checkpoint(block, x).sum().backward()
    xv = np.array([0.3, 0.6])
    return [x.grad], [6 * np.cos(xv) * xv + np.sin(xv)]


def weakref_callback_backward_during_backward():
    """Objects collected mid-backward: their weakref callbacks run a backward of their own."""
    calls = []

    def callback(_):
        calls.append(1)
        (tg.tensor(2.0, requires_grad=True) ** 2).backward()

    class Box:
        pass

    refs = []
    x = tg.tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    y = x
    for _ in range(20):
        o = Box()
        o.me = o  # a cycle: only the collector frees it
        refs.append(weakref.ref(o, callback))
        del o
        y = tnp.sin(y) + x

    def hook(g):
        gc.collect()
        return g

    y.register_hook(hook)
    y.sum().backward()
    assert len(calls) == 20
    # reference: the same chain's gradient by forward mode (a dual number per input)
    xv = np.linspace(0.0, 1.0, 5)
    v, d = xv.copy(), np.ones(5)
    for _ in range(20):
        v, d = np.sin(v) + xv, np.cos(v) * d + 1
    return [x.grad], [d]


REENTRANT = {
    "hook: backward of a later graph": hook_backward_later_graph,
    "hook: backward of an earlier graph": hook_backward_earlier_graph,
    "hook: tg.grad": hook_calls_tg_grad,
    "hook: tg.jacobian and tg.hessian": hook_calls_jacobian_and_hessian,
    "hook: autograd.grad, outer with inputs": hook_autograd_grad_with_inputs,
    "leaf hook: create_graph grad and backward": leaf_hook_backward,
    "leaf output, leaf hook: backward": leaf_output_with_hook_backward,
    "three nested backwards": three_levels,
    "hook: retained backward through a shared graph": shared_graph_retained_in_hook,
    "retain_grad beside a hook's backward": retain_grad_and_hook_backward,
    "Function.backward: tg.grad": function_backward_calls_tg_grad,
    "custom_vjp rule: tg.grad": custom_vjp_rule_calls_tg_grad,
    "hook registered in f: tg.grad inside tg.grad": hook_in_f_calls_tg_grad,
    "checkpoint: hook calls tg.grad": checkpoint_hook_calls_tg_grad,
    "gc.collect in a hook, weakref callbacks: backward": weakref_callback_backward_during_backward,
}


@pytest.mark.parametrize("name", list(REENTRANT))
def test_backward_started_inside_a_backward(name):
    got, want = REENTRANT[name]()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g is not None, name
        close(g.numpy() if isinstance(g, tg.Tensor) else g, w)
    # and the session goes on
    close(tg.grad(lambda s: tnp.sum(s**3))(np.array([1.0, 2.0])), [3.0, 12.0])


def test_reentrant_backwards_in_threads(fast_switching):
    names = list(REENTRANT)

    def work(k):
        out = []
        for i in range(2):
            name = names[(k * 5 + i) % len(names)]
            out.append((name, *REENTRANT[name]()))
        return out

    for res in in_threads(4, work):
        for _name, got, want in res:
            for g, w in zip(got, want, strict=True):
                close(g.numpy() if isinstance(g, tg.Tensor) else g, w)


def _shared_graph_freed_in_hook():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    s = h.sum()

    def hook(g):
        s.backward()  # frees h's graph, which the outer backward still needs
        return g

    y = h * 3
    y.register_hook(hook)
    y.sum().backward()


def _function_backward_calls_backward():
    w = tg.tensor(1.5, requires_grad=True)

    class Twice(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, go):
            (w**2).backward()  # grad mode is off in a Function's backward, as in PyTorch
            return go * 2

    x = tg.tensor([1.0], requires_grad=True)
    Twice.apply(x).sum().backward()


# (case, error type, message fragment): PyTorch raises in both
REFUSED = {
    "hook frees a graph the outer backward needs": (
        _shared_graph_freed_in_hook,
        RuntimeError,
        "retain_graph=True",
    ),
    "Function.backward records without enable_grad": (
        _function_backward_calls_backward,
        RuntimeError,
        "does not require grad",
    ),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused(name):
    fn, exc, fragment = REFUSED[name]
    with pytest.raises(exc, match=fragment):
        fn()
    close(tg.grad(lambda s: s**3)(2.0), 12.0)


# ---- 6. generators -------------------------------------------------------------------------------


def test_generator_records_between_yields_with_other_recording_between():
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    def steps(x):
        y = x * 2
        yield y
        y = y * 3
        yield y

    gen = steps(w)
    next(gen)
    z = (w**2).sum()  # recorded between the generator's steps
    y2 = next(gen)
    (g,) = tg.autograd.grad(y2.sum() + z, w)
    close(g.numpy(), 6 + 2 * w.numpy())


def test_no_grad_generator_resumed_between_recordings():
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    @tg.no_grad()
    def gen(x):
        for i in range(3):
            yield (x * i).requires_grad, tg.is_grad_enabled()

    g = gen(w)
    assert next(g) == (False, False)
    y = (w * 5).sum()  # the caller's mode is back between resumptions
    assert y.requires_grad and tg.is_grad_enabled()
    assert next(g) == (False, False)
    (gw,) = tg.autograd.grad(y, w)
    close(gw.numpy(), [5.0, 5.0])


def test_generators_in_threads_interleaved(fast_switching):
    def work(k):
        w = tg.tensor([1.0 + k, 2.0], requires_grad=True)

        def steps():
            h = w
            for _ in range(5):
                h = tg.sin(h) + w
                yield h

        gens = [steps(), steps()]
        last = [None, None]
        for _ in range(5):
            for j in (0, 1):
                last[j] = next(gens[j])
        (g,) = tg.autograd.grad((last[0] + last[1]).sum(), w)
        return w.numpy(), g.numpy()

    for wv, g in in_threads(3, work):
        v, d = wv.copy(), np.ones(2)
        for _ in range(5):
            v, d = np.sin(v) + wv, np.cos(v) * d + 1
        close(g, 2 * d)


# ---- 7. exceptions: the session is reused afterwards ---------------------------------------------


def _check_session():
    assert tg.is_grad_enabled()
    close(tg.grad(lambda s: tnp.sum(tnp.exp(s)))(np.array([0.1, 0.2])), np.exp([0.1, 0.2]))
    close(tg.value_and_grad(lambda s: s**3)(2.0), (8.0, 12.0))
    close(tg.grad(tg.grad(lambda s: s**4))(2.0), 48.0)
    x = tg.tensor([1.0, 3.0], requires_grad=True)
    (x**2).sum().backward()
    close(x.grad.numpy(), [2.0, 6.0])


class _Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [_Boom, KeyboardInterrupt])
@pytest.mark.parametrize("where", ["f", "f under no_grad", "nested f", "hook", "Function"])
def test_raise_then_reuse(exc, where):
    def raising(*_):
        raise exc("raised on purpose")

    rows = tg.core.tape.current_tape().n
    with pytest.raises(exc):
        if where == "f":
            tg.grad(lambda s: raising(tnp.sin(s).sum()))(np.array([1.0, 2.0]))
        elif where == "f under no_grad":

            def f(s):
                t = tnp.sin(s) * 2
                with tg.no_grad():
                    raising(t)

            tg.grad(f)(np.array([1.0, 2.0]))
        elif where == "nested f":
            tg.hessian(lambda s: raising(tnp.sum(s**2)))(np.array([1.0, 2.0]))
        elif where == "hook":
            x = tg.tensor([1.0, 2.0], requires_grad=True)
            y = x.exp()
            y.register_hook(raising)
            (y * y).sum().backward()
        else:

            class F(tg.Function):
                @staticmethod
                def forward(ctx, a):
                    return a * 2

                @staticmethod
                def backward(ctx, g):
                    raising()

            F.apply(tg.tensor([1.0], requires_grad=True)).sum().backward()
    if "f" in where.split():  # a transform's f: its rows are discarded, interrupt or not
        assert tg.core.tape.current_tape().n == rows
    _check_session()


def test_hook_raises_after_its_own_backward_then_reuse():
    u = tg.tensor(2.0, requires_grad=True)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x

    def hook(g):
        (u**3).backward()
        raise _Boom("after a nested backward")

    y.register_hook(hook)
    with pytest.raises(_Boom):
        (y * 3).sum().backward()
    close(u.grad.item(), 12.0)
    assert x.grad is None
    _check_session()


def _raises_midway(s):
    t = tnp.sum(tnp.sin(s) * s)
    if t is not None:
        raise _Boom("raised on purpose")


def test_exceptions_in_threads_leave_other_threads_right(fast_switching):
    def work(k):
        out = []
        for i in range(30):
            x = point(k, i)
            if (i + k) % 3 == 0:
                with pytest.raises(_Boom):
                    tg.grad(_raises_midway)(x)
                continue
            out.append((x, tg.grad(f_np)(x)))
        assert tg.is_grad_enabled()
        return out

    for res in in_threads(4, work):
        for x, g in res:
            close(g, df(x))


# ---- 8. locks: a leaf hook waiting for another thread --------------------------------------------


def test_leaf_hook_waiting_for_another_thread_s_backward():
    """A leaf hook that waits for another thread's backward into a shared leaf: the hooks
    run outside the lock that guards the accumulation into .grad (under it, the two
    threads waited for each other)."""
    shared = tg.tensor([1.0, 2.0], requires_grad=True)
    mine = tg.tensor([3.0], requires_grad=True)
    in_hook, other_done = threading.Event(), threading.Event()
    waited = []

    def hook(g):
        in_hook.set()
        waited.append(other_done.wait(timeout=5))
        return g

    mine.register_hook(hook)

    def first():
        ((shared * 2).sum() + (mine**2).sum()).backward()
        return True

    def second():
        assert in_hook.wait(timeout=TIMEOUT)  # first is inside its backward, in the hook
        (shared * 5).sum().backward()
        other_done.set()
        return True

    with ThreadPoolExecutor(2) as ex:
        f1 = ex.submit(first)
        f2 = ex.submit(second)
        assert f1.result(timeout=TIMEOUT) and f2.result(timeout=TIMEOUT)
    assert waited == [True]
    close(shared.grad.numpy(), [7.0, 7.0])
    close(mine.grad.numpy(), [6.0])


# ---- 9. long chains in threads -------------------------------------------------------------------


def test_long_chain_in_a_thread():
    n = 100_000

    def work(k):
        x = tg.tensor(1.0 + k, requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 0.99999 + 0.00001
        y.backward()
        return x.grad.item()

    with ThreadPoolExecutor(1) as ex:
        got = ex.submit(work, 0).result(timeout=TIMEOUT)
    close(got, 0.99999**n, rtol=1e-10)
