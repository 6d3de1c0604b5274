"""The plain-Python twin of the compiled sweeps (``tapegrad.kernels.loader``) gives the
compiled kernels' numbers, statuses and errors; the default mode hands it out while a compile
runs in the background, and a process may exit mid-compile.

The rest of the suite runs with ``TAPEGRAD_EAGER_COMPILE=1`` (``conftest.py``), so its results do
not depend on how far a background compile has got; here every case runs twice, once with
``loader.mode("python")`` (every sweep in Python) and once with ``loader.mode("eager")``."""

import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.kernels import loader, sweeps
from tapegrad.ops.spec import OPS

from op_cases import CASES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# NumPy's and libm's sin, exp, ... may differ in the last bit; polygamma's second order (a
# Hurwitz zeta sum times exp(lgamma)) spreads that to ~10 ulp, everything else stays within 4
ULPS = 16


def _close(py, comp, what):
    py, comp = np.asarray(py, float), np.asarray(comp, float)
    assert py.shape == comp.shape, what
    assert np.array_equal(np.isnan(py), np.isnan(comp)), what
    assert np.array_equal(np.isinf(py), np.isinf(comp)), what
    fin = np.isfinite(comp)
    assert np.array_equal(py[~fin & ~np.isnan(comp)], comp[~fin & ~np.isnan(comp)]), what
    scale = np.max(np.abs(comp[fin]), initial=1e-300)
    np.testing.assert_allclose(
        py[fin], comp[fin], rtol=ULPS * 2.2e-16, atol=ULPS * 2.2e-16 * scale, err_msg=what
    )


def _flat(tree):
    if isinstance(tree, (list, tuple)):
        return np.concatenate([_flat(x) for x in tree]) if tree else np.zeros(0)
    return np.ravel(np.asarray(tree, float))


def _in_both(run, python="python"):
    with loader.mode(python):
        py = run()
    with loader.mode("eager"):
        comp = run()
    return py, comp


def _everything(fn, inputs):
    """Reverse, forward, second order, Jacobian and traced replay of one case."""

    def f(*xs):
        return fn(*xs).sum()

    rng = np.random.default_rng(1)
    tangents = [rng.standard_normal(np.shape(x)) for x in inputs]
    argnums = tuple(range(len(inputs)))
    out = {"grad": tg.grad(f, argnums=argnums)(*inputs)}
    w = [tg.tensor(x, requires_grad=True) for x in inputs]
    f(*w).backward()
    out["backward"] = [x.grad.numpy() for x in w]
    out["jvp"] = tg.jvp(fn, inputs, tangents)
    out["hessian"] = tg.hessian(f)(*inputs)
    out["jacobian"] = tg.jacobian(fn, argnums=argnums)(*inputs)
    tr = tg.trace(f, *inputs)
    out["replay"] = tr(*inputs)
    out["replay grad"] = tr.grad(*inputs)
    out["replay jvp"] = tr.jvp(*inputs, tangents[0])
    out["replay hvp"] = tr.hvp(*inputs, tangents[0])
    out["replay batch"] = tr.grad_many(np.stack([inputs[0], inputs[0] * 0.5]), *inputs[1:])
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_twin_gives_the_compiled_numbers(name):
    fn, inputs = CASES[name]
    py, comp = _in_both(lambda: _everything(fn, inputs))
    for key in comp:
        _close(_flat(py[key]), _flat(comp[key]), f"{name}: {key}")


def _backward_all_cases():
    """Tensor.backward of every op case, the output weighted (so no seed is all ones)."""
    out = {}
    for name, (fn, inputs) in sorted(CASES.items()):
        w = [tg.tensor(x, requires_grad=True) for x in inputs]
        y = fn(*w)
        (y * np.linspace(0.5, 1.5, np.size(y)).reshape(np.shape(y))).sum().backward()
        out[name] = [x.grad.numpy() if x.grad is not None else np.zeros(0) for x in w]
    return out


def test_whole_array_numpy_sweep_gives_the_compiled_numbers():
    from tapegrad.kernels import vectorised

    with loader.mode("numpy"):
        k = loader.kernel("backward_sweep", (1,) * 13, 1)
        assert k.__wrapped__.func is vectorised.backward_sweep
    py, comp = _in_both(lambda: _backward_all_cases(), python="numpy")
    for name in comp:
        _close(_flat(py[name]), _flat(comp[name]), f"{name}: backward (numpy sweep)")


def test_every_op_of_the_spec_has_a_case():
    internal = {"LEAF", "CONST", "FREED", "CUSTOM", "GUARD"}
    assert {o.name for o in OPS} - internal <= set(CASES)


NON_FINITE = {  # error_model="numpy": inf and nan, never an exception
    "div by zero": (lambda x: 1.0 / x + x / (x - x), [np.array([0.0, -0.0, 2.0])]),
    "log of 0 and -1": (lambda x: tg.log(x) * x, [np.array([0.0, -1.0, 2.0])]),
    "sqrt of -1": (lambda x: tg.sqrt(x), [np.array([-1.0, 0.0, 4.0])]),
    "exp overflow": (lambda x: tg.exp(x) * x, [np.array([800.0, -800.0, 1.0])]),
    "inf - inf": (lambda x: (x * 1e308 * 10.0 - x * 1e308 * 10.0) * x, [np.array([1.0, -1.0])]),
    "gamma poles": (tg.gamma, [np.array([0.0, -1.0, -2.5, 180.0, -200.5])]),
    "gammaln poles": (tg.gammaln, [np.array([0.0, -1.0, -2.5, 1e306])]),
    "digamma poles": (tg.digamma, [np.array([0.0, -0.0, -3.0, 1e-300])]),
    "erfinv ends": (tg.erfinv, [np.array([1.0, -1.0, 0.5, 1.5])]),
    "erfcinv ends": (tg.erfcinv, [np.array([0.0, 2.0, 1e-300, 0.5])]),
    "pow": (lambda x: x**-1.5 + 0.0**x, [np.array([0.0, -1.0, 2.0])]),
    "nan in": (lambda x: tg.sin(x) * x.max(), [np.array([np.nan, 1.0])]),
    "max of inf": (lambda x: x.max() * x.prod(), [np.array([np.inf, 1.0, 0.0])]),
    "piecewise partials at an infinite adjoint": (
        lambda x: (tg.clip(x, -0.5, 0.5) + tg.relu(x) + tg.leaky_relu(x, 0.2)) * x,
        [np.array([np.inf, -np.inf, 0.3, -0.2])],
    ),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, from the eager forward
@pytest.mark.parametrize("name", sorted(NON_FINITE))
def test_non_finite_values_as_in_the_compiled_kernels(name):
    fn, inputs = NON_FINITE[name]

    def run():
        w = tg.tensor(inputs[0], requires_grad=True)
        y = fn(w)
        y.sum().backward()
        tr = tg.trace(lambda x: fn(x).sum(), inputs[0])
        return [y.numpy(), w.grad.numpy(), tr.grad(inputs[0]), tr(inputs[0])]

    py, comp = _in_both(run)
    assert np.isnan(_flat(comp)).any() or np.isinf(_flat(comp)).any(), "the case is non-finite"
    for k, (a, b) in enumerate(zip(py, comp, strict=True)):
        _close(_flat(a), _flat(b), f"{name}: result {k}")


def test_the_twin_divides_by_zero_as_numba_does():
    # error_model="numpy": inf, with no warning and no FloatingPointError whatever the caller's
    # np.errstate says
    tr = tg.trace(lambda x: (2.0 / x + x / (x - 1.0)).sum(), np.array([3.0, 4.0]))
    x = np.array([0.0, 1.0])
    with loader.mode("python"), np.errstate(all="raise"):
        py = tr.grad(x)
    with loader.mode("eager"):
        comp = tr.grad(x)
    assert np.isinf(comp[0]) and np.isnan(comp[1])
    _close(py, comp, "gradient")


def test_replays_at_poles_and_infinities():
    # recorded at ordinary points, replayed where Python's math would raise (floor(-inf),
    # gamma(0)): the twin's math answers as Numba's does
    tr = tg.trace(lambda x: (tg.gamma(x) + tg.digamma(x) * tg.gammaln(x)).sum(), np.ones(5))
    poles = np.array([-np.inf, -1.0, 0.0, -0.0, np.inf])

    def run():
        with np.errstate(all="raise"):
            return [tr(poles), tr.grad(poles)]

    py, comp = _in_both(run)
    assert np.isnan(comp[0]) and np.isnan(comp[1]).all()
    for k, (a, b) in enumerate(zip(py, comp, strict=True)):
        _close(_flat(a), _flat(b), f"result {k}")


def test_replays_of_gamma_next_to_its_pole_at_zero():
    # gamma overflows at denormal x: Python's math raises, Numba's gives inf with x's sign
    # (the twin gave 0.0 at -1e-320, for a value and a gradient of -inf)
    tr = tg.trace(lambda x: tg.gamma(x).sum(), np.ones(4))
    tiny = np.array([1e-320, -1e-320, 5e-324, -5e-324])

    def run():
        with np.errstate(all="raise"):
            return [tr(tiny), tr.grad(tiny)]

    py, comp = _in_both(run)
    assert np.isnan(comp[0]) and np.array_equal(comp[1], [-np.inf, -np.inf, -np.inf, -np.inf])
    for k, (a, b) in enumerate(zip(py, comp, strict=True)):
        _close(_flat(a), _flat(b), f"result {k}")


class _Cube(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


def test_custom_rows_hooks_checkpoint_and_large_matmuls():
    rng = np.random.default_rng(3)
    a0, b0 = rng.standard_normal((70, 40)), rng.standard_normal((40, 30))  # > SMALL_MATMUL

    def run():
        x = tg.tensor(np.array([0.3, -0.7, 1.1]), requires_grad=True)
        h = tg.sin(x) * 2.0
        h.register_hook(lambda g: g * 3.0)
        y = _Cube.apply(h) + tg.checkpoint(lambda u: tg.exp(u) * u, h)
        a = tg.tensor(a0, requires_grad=True)
        b = tg.tensor(b0, requires_grad=True)
        z = y.sum() + tg.tanh(a @ b).sum()
        z.backward()
        return [x.grad.numpy(), a.grad.numpy(), b.grad.numpy()]

    py, comp = _in_both(run)
    for k, (p, c) in enumerate(zip(py, comp, strict=True)):
        _close(p, c, f"result {k}")


def test_anomaly_mode_and_freed_graphs_raise_the_same_errors():
    def errors():
        out = []
        with tg.detect_anomaly():
            w = tg.tensor(np.array([0.0, 1.0]), requires_grad=True)
            try:
                (tg.sqrt(w) * w).sum().backward()
            except RuntimeError as e:
                out.append(re.sub(r"\d+", "N", str(e).split("\n")[0]))
        w = tg.tensor(2.0, requires_grad=True)
        y = w * w
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            out.append(re.sub(r"\d+", "N", str(e).split("\n")[0]))
        return out

    py, comp = _in_both(errors)
    assert len(comp) == 2 and py == comp


def test_guard_failures_and_statuses_of_the_sweeps():
    tr = tg.trace(lambda x: tg.sin(x) * 2.0 if x > 0 else x * x, 0.5)

    def run():
        out = [tr.grad(0.7)]
        try:
            tr.grad(-0.5)
        except tg.RetraceRequired as e:
            out.append(type(e).__name__)
        return out

    py, comp = _in_both(run)
    assert py[1] == comp[1] == "RetraceRequired"
    _close(py[0], comp[0], "grad")
    # the raw statuses: a custom row stops both sweeps at the same row
    x = tg.tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = (_Cube.apply(tg.sin(x)) * 2.0).sum()
    t = tg.current_tape()
    top = y._row
    res = []
    for fn in (loader.twin().backward_sweep, sweeps.backward_sweep):
        adj, state = np.zeros_like(t.adj), t.state.copy()
        adj[t.voff[top]] = 1.0
        state[top] |= 1
        args = (t.code, t.ip, t.fp, t.voff, t.rg, state, t.ipool, t.fpool, t._val, adj)
        with np.errstate(all="ignore"):
            res.append((tuple(int(v) for v in fn(*args, top, 0, 0)), adj.copy(), state.copy()))
    assert res[0][0] == res[1][0] and res[0][0][0] == sweeps.HIT_CUSTOM
    _close(res[0][1], res[1][1], "adjoints")
    assert np.array_equal(res[0][2], res[1][2])


def test_the_twin_is_plain_python():
    tw = loader.twin()
    assert tw is not sweeps and tw.njit is loader.PLAIN_PYTHON.njit
    assert tw.backward_sweep.__code__ is not sweeps.backward_sweep.py_func.__code__
    assert not hasattr(tw.backward_sweep, "py_func")  # not a Numba dispatcher
    assert tw.prange is range and tw.FINGERPRINT == sweeps.FINGERPRINT


def test_modes():
    with loader.mode("eager"):
        assert loader.kernel("backward_sweep", (1,), 0) is sweeps.backward_sweep
    with loader.mode("python"):
        k = loader.kernel("backward_sweep", (1,), 10**9)
        assert k.__wrapped__ is loader.twin().backward_sweep
    with pytest.raises(ValueError, match="mode must be one of"):
        loader.mode("fast")


_FRESH = """
import sys, threading, numpy as np
import tapegrad as tg
from tapegrad.kernels import loader
x = tg.tensor(np.array([0.5, -1.0]), requires_grad=True)
(tg.sin(x) * x).sum().backward()
ref = np.cos([0.5, -1.0]) * [0.5, -1.0] + np.sin([0.5, -1.0])
assert np.allclose(x.grad.numpy(), ref, rtol=1e-14), x.grad
tr = tg.trace(lambda v: (tg.exp(v) * v).sum(), np.array([0.1, 0.2]))
assert np.allclose(tr.grad(np.array([0.3, 0.4])), np.exp([0.3, 0.4]) * [1.3, 1.4], rtol=1e-14)
busy = [t.name for t in threading.enumerate() if t.name.startswith("tapegrad-compile")]
print("compiling:", busy)
"""


def test_a_fresh_process_with_an_empty_cache_answers_at_once_and_exits_mid_compile():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d, TAPEGRAD_EAGER_COMPILE="0")
        env["TAPEGRAD_DETACHED_COMPILE"] = "0"  # no compile left running once d is gone
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run(
            [sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        # answered from the twin: the compiles (tens of seconds) were still running at exit
        assert "tapegrad-compile-backward_sweep" in out.stdout, out.stdout
        assert "tapegrad-compile-grad_into" in out.stdout, out.stdout
        assert not out.stderr.strip(), out.stderr


_FORK = """
import os, numpy as np
import tapegrad as tg
from tapegrad.kernels import loader
x = tg.tensor(np.array([0.5, -1.0]), requires_grad=True)
(tg.sin(x) * x).sum().backward()  # in the cache the test suite filled: loaded at once
assert loader.status()["backward_sweep"] == "compiled, first: compiled", loader.status()
y = np.linspace(0.0, 1.0, 2 * loader.PYTHON_WORK)
tg.jvp(lambda v: tg.sin(v) * v, (y,), (y,))  # too large for the twin: waits for the kernel
assert loader.wait(0) and all(v.startswith("compiled") for v in loader.status().values())
pid = os.fork()
if pid == 0:  # the compile the parent started is done: the child can compile and wait
    ok = loader.wait(0) and all(not j.thread.is_alive() for j in loader._JOBS.values())
    y = tg.tensor(np.linspace(0.0, 1.0, 3 * loader.PYTHON_WORK), requires_grad=True)
    (tg.cos(y) * y).sum().backward()
    ok = ok and np.allclose(y.grad.numpy(), np.cos(y.numpy()) - np.sin(y.numpy()) * y.numpy())
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


def test_large_calls_and_forks_wait_for_the_compile_under_way():
    env = dict(os.environ, TAPEGRAD_EAGER_COMPILE="0")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", _FORK], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0 and "child 0" in out.stdout, out.stderr


_SHORT = """
import sys, numpy as np
import tapegrad as tg
from tapegrad.kernels import loader
x = np.linspace(-1.0, 1.0, 3000)
g = tg.grad(lambda v: (tg.sin(v) * v).sum())(x)
assert np.allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-13, atol=1e-15)
print(loader.status()["backward_sweep"])
"""


def _wait_for_shared_compile(cache_dir, timeout=900.0):
    """Wait until a compile lock file appears in ``cache_dir`` and nobody holds it."""
    import fcntl
    import glob
    import time

    end = time.monotonic() + timeout
    while not (
        locks := glob.glob(os.path.join(cache_dir, "**", "tapegrad-compile.lock"), recursive=True)
    ):
        assert time.monotonic() < end, "no detached compile started"
        time.sleep(0.2)
    fd = os.open(locks[0], os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


@pytest.mark.skipif(sys.platform == "win32", reason="the shared compile lock needs fcntl")
def test_short_scripts_leave_compiled_kernels_for_the_next_run():
    """Two short scripts start at once on an empty cache and exit after their first gradient
    (run by a Python stand-in); the compile they start outlives them, is done once, and the
    next run gets the compiled sweep from its first gradient."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d, TAPEGRAD_EAGER_COMPILE="0")
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-c", _SHORT]
        first = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
        outs = [p.communicate(timeout=300)[0] for p in first]
        assert all(p.returncode == 0 for p in first), outs
        assert all("first: numpy" in o for o in outs), outs  # whole-array NumPy meanwhile
        _wait_for_shared_compile(d)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        assert "compiled, first: compiled" in second.stdout, second.stdout
