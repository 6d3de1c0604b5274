"""tapegrad benchmarks: every figure is a median measured side by side in this one run.

    python benchmarks/run.py            # print the table
    python benchmarks/run.py --write    # also refresh the table in benchmarks/README.md
    python benchmarks/run.py --quick    # fewer repeats (a smoke run)
    python benchmarks/run.py --profile  # cProfile of the small call -> profile_small_call.txt

Each benchmark returns rows (figure, measured, budget, ok); budgets are the project's
performance targets.
"""

import argparse
import cProfile
import gc
import glob
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

# One BLAS / OpenMP thread for NumPy and PyTorch alike (set before they load; the environment
# overrides): the machine is shared, and two BLAS threads on two busy cores made a 128x784 @
# 784x256 matmul ~8x slower than one thread, which would measure the neighbours, not the code.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# What a user's process sees, for the start-up rows; every other figure measures compiled
# kernels only (no plain-Python sweeps while a compile or cache load runs in the background).
# Python's bytecode cache on, as a user has it (pip compiles a wheel's at install, and an
# editable install writes them at its first import): with PYTHONDONTWRITEBYTECODE set, every
# start compiles tapegrad's ~25k lines from source again, while numba's installed bytecode is
# read, so the start-up ratio would compare unequal imports
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
os.environ.setdefault("TAPEGRAD_EAGER_COMPILE", "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tapegrad as tg  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import python_floor  # noqa: E402

try:  # every PyTorch row is optional
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:
    torch = None

REPEATS = 15
BENCHMARKS = []


def benchmark(fn):
    BENCHMARKS.append(fn)
    return fn


def median_time(fn, repeats=None, setup=None):
    """Median wall time of fn() over repeats (setup() runs untimed before each)."""
    times = []
    for _ in range(repeats or REPEATS):
        arg = setup() if setup else None
        gc.collect()
        t0 = time.perf_counter()
        fn(arg) if setup else fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved(*fns, repeats=None):
    """Medians of each fn() timed in turn, so all see the same machine state."""
    times = [[] for _ in fns]
    for _ in range(repeats or REPEATS):
        for t, fn in zip(times, fns, strict=True):
            t.append(median_time(fn, 1))
    return [statistics.median(t) for t in times]


def no_torch(what):
    return [row(f"{what}: PyTorch not installed, no peer figure", 0, "")]


def row(figure, value, unit, budget=None, lower_is_better=True):
    if budget is None:
        return (figure, f"{value:.4g} {unit}", "report", "")
    ok = value <= budget if lower_is_better else value >= budget
    cmp = "<=" if lower_is_better else ">="
    return (figure, f"{value:.4g} {unit}", f"{cmp} {budget:g} {unit}", "yes" if ok else "NO")


# ---- scalar chain -----------------------------------------------------------------------------
CHAIN_STEPS = 2000
CHAIN_OPS = 6 * CHAIN_STEPS  # sin, *0.9, *, *0.01, +, +0.1


def chain(x, steps=CHAIN_STEPS):
    for _ in range(steps):
        x = tg.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def chain_np(x):
    """The same chain as plain NumPy code, for the functional transforms and tg.trace."""
    for _ in range(CHAIN_STEPS):
        x = np.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def floor_chain(x, steps=CHAIN_STEPS):
    sin = python_floor.sin
    for _ in range(steps):
        x = sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def torch_chain(x, steps=CHAIN_STEPS):
    for _ in range(steps):
        x = torch.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def _record_floor():
    tape = python_floor.Tape()
    x = tape.leaf(0.5)
    gc.collect()
    t0 = time.perf_counter()
    floor_chain(x)
    return (time.perf_counter() - t0) / CHAIN_OPS


def _record_torch():
    x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    gc.collect()
    t0 = time.perf_counter()
    y = torch_chain(x)
    t1 = time.perf_counter()
    y.backward()
    return (t1 - t0) / CHAIN_OPS


@benchmark
def scalar_chain():
    rec, bwd, sweep, floor, peer = [], [], [], [], []
    tape = python_floor.Tape()
    x = tape.leaf(0.5)
    g_floor = tape.backward(floor_chain(x))[x.row]
    for _ in range(REPEATS):
        floor.append(_record_floor())  # the floor, timed next to each tapegrad recording
        if torch is not None:
            peer.append(_record_torch())
        x0 = tg.tensor(0.5, requires_grad=True)
        gc.collect()
        t0 = time.perf_counter()
        y = chain(x0)
        tg.current_tape().sync()  # deferred part of recording: pending rows into the columns
        t1 = time.perf_counter()
        y.backward(retain_graph=True)
        t2 = time.perf_counter()
        assert abs(x0.grad.item() - g_floor) < 1e-9 * abs(g_floor), (x0.grad, g_floor)
        # the compiled sweep alone (what the interpreter costs per op)
        t = tg.current_tape()
        top = y._row
        t.adj[: t.voff[top + 1]] = 0.0
        t.state[: top + 1] &= 2
        t.adj[t.voff[top]] = 1.0
        t.state[top] |= 1
        t3 = time.perf_counter()
        tg.autograd.sweep(t, top)
        t4 = time.perf_counter()
        rec.append((t1 - t0) / CHAIN_OPS)
        bwd.append((t2 - t1) / CHAIN_OPS)
        sweep.append((t4 - t3) / CHAIN_OPS)
        del y
        x0.grad = None
        tg.current_tape().maybe_reset()
    med = statistics.median
    rows = [
        row(
            "scalar chain: Python floor, recording per op (python_floor.py)", med(floor) * 1e9, "ns"
        ),
        row("scalar chain: recording per op", med(rec) * 1e9, "ns"),
        row("scalar chain: recording / Python floor", med(rec) / med(floor), "x", 1.2),
    ]
    if torch is not None:
        rows.append(row("scalar chain: PyTorch recording per op", med(peer) * 1e9, "ns"))
    return rows + [
        row("scalar chain: backward sweep per op", med(sweep) * 1e9, "ns", 30),
        row("scalar chain: whole backward() per op", med(bwd) * 1e9, "ns"),
    ]


# ---- linear regression (the classic tutorial) -------------------------------------------------
LR_EPOCHS, LR_RATE = 100, 0.1


def _linreg_data():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, 100)
    return x, 3.0 * x + 2.0 + 0.1 * rng.standard_normal(100)


def linreg_numpy(x, y):
    """Gradient descent with the analytic gradient of the mean squared error."""
    w = b = 0.0
    for _ in range(LR_EPOCHS):
        r = w * x + b - y
        loss = np.mean(r * r)
        w -= LR_RATE * 2.0 * np.mean(r * x)
        b -= LR_RATE * 2.0 * np.mean(r)
    return w, b, float(loss)


def linreg_loop(w, b, x, y, no_grad):
    """The PyTorch tutorial's loop; tapegrad and PyTorch run this same code."""
    for _ in range(LR_EPOCHS):
        loss = ((w * x + b - y) ** 2).mean()
        loss.backward()
        with no_grad():
            w -= LR_RATE * w.grad
            b -= LR_RATE * b.grad
        w.grad.zero_()
        b.grad.zero_()
    return w.item(), b.item(), loss.item()


def linreg_tensor(x, y):
    return linreg_loop(
        tg.tensor(0.0, requires_grad=True), tg.tensor(0.0, requires_grad=True), x, y, tg.no_grad
    )


def linreg_torch(x, y):
    def leaf():
        return torch.tensor(0.0, dtype=torch.float64, requires_grad=True)

    return linreg_loop(leaf(), leaf(), x, y, torch.no_grad)


def _mse(params, x, y):
    w, b = params
    return np.mean((w * x + b - y) ** 2)


_mse_value_and_grad = tg.value_and_grad(_mse)


def linreg_value_and_grad(x, y):
    """The same loop on NumPy code, differentiated by tg.value_and_grad."""
    w = b = 0.0
    for _ in range(LR_EPOCHS):
        loss, (gw, gb) = _mse_value_and_grad((w, b), x, y)
        w -= LR_RATE * gw
        b -= LR_RATE * gb
    return w, b, float(loss)


_mse_traced = tg.traced(_mse)


def linreg_traced(x, y):
    """The same loop with tg.traced: recorded at the first call, replayed compiled after."""
    w = b = 0.0
    for _ in range(LR_EPOCHS):
        loss, (gw, gb) = _mse_traced.value_and_grad((w, b), x, y)
        w -= LR_RATE * gw
        b -= LR_RATE * gb
    return w, b, float(loss)


@benchmark
def linear_regression():
    x, y = _linreg_data()
    xt, yt = tg.tensor(x), tg.tensor(y)
    ref = linreg_numpy(x, y)
    fns = [
        lambda: linreg_numpy(x, y),
        lambda: linreg_tensor(xt, yt),
        lambda: linreg_value_and_grad(x, y),
        lambda: linreg_traced(x, y),
    ]
    if torch is not None:
        xp, yp = torch.from_numpy(x), torch.from_numpy(y)
        fns.append(lambda: linreg_torch(xp, yp))
    for fn in fns[1:]:
        assert np.allclose(fn(), ref, rtol=1e-12, atol=0), (fn(), ref)
    t = interleaved(*fns)
    label = "linear regression, 100 points, 100 epochs"
    rows = [
        row(f"{label}: hand-written NumPy", t[0] * 1e3, "ms"),
        row(f"{label}: Tensor API (backward, update under no_grad)", t[1] * 1e3, "ms"),
        row(f"{label}: tg.value_and_grad of NumPy code", t[2] * 1e3, "ms"),
        row("linear regression: Tensor API / NumPy", t[1] / t[0], "x", 3),
        row("linear regression: value_and_grad / NumPy", t[2] / t[0], "x", 3),
        row(f"{label}: tg.traced (trace cache)", t[3] * 1e3, "ms"),
    ]
    if torch is None:
        return rows + no_torch("linear regression")
    return rows + [
        row(f"{label}: PyTorch", t[4] * 1e3, "ms"),
        row("linear regression: Tensor API / PyTorch", t[1] / t[4], "x", 1),
        row("linear regression: value_and_grad / PyTorch", t[2] / t[4], "x", 1),
        row("linear regression: tg.traced / PyTorch", t[3] / t[4], "x", 0.2),
    ]


# ---- memory ----------------------------------------------------------------------------------
PEAK_STEPS = 200_000  # 1.2M scalar ops
PEAK_SCRIPT = """
import gc, sys
def status(key):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
if sys.argv[1] == 'tapegrad':
    import tapegrad as tg
    sin = tg.sin
    def leaf():
        return tg.tensor(0.5, requires_grad=True)
else:
    import torch
    sin = torch.sin
    def leaf():
        return torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
def chain(x, steps):
    for _ in range(steps):
        x = sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x
x = leaf()
chain(x, 10).backward()   # kernels loaded before measuring
del x
gc.collect()
before = status('VmRSS')
with open('/proc/self/clear_refs', 'w') as f:
    f.write('5')          # VmHWM := current RSS
x = leaf()
chain(x, STEPS).backward()
assert x.grad is not None
print((status('VmHWM') - before) / (6 * STEPS))
"""


def _peak_per_op(lib):
    code = PEAK_SCRIPT.replace("STEPS", str(PEAK_STEPS))
    out = subprocess.run(
        [sys.executable, "-c", code, lib], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


SESSION_SCRIPT = """
import gc, time, numpy as np, tapegrad as tg
def rss_mb():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096 / 2**20
def small():
    return tg.grad(lambda v: np.sum(np.sin(v) * v))(np.linspace(0.1, 1.0, 50))
def per_call():
    small()
    t0 = time.perf_counter()
    for _ in range(200):
        small()
    return (time.perf_counter() - t0) / 200
net = tg.nn.Sequential(tg.nn.Linear(64, 128), tg.nn.ReLU(), tg.nn.Linear(128, 10))
x = tg.tensor(np.random.default_rng(0).random((64, 64)))
X = np.random.default_rng(1).random((30, 2))
def nll(p):
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-d / p[0]) * p[1] + 1e-6 * np.eye(30)
    return np.sum(np.log(np.diag(np.linalg.cholesky(K))))
vg = tg.value_and_grad(nll)
def raising():
    try:
        vg(np.array([0.5, -1.0]))
    except np.linalg.LinAlgError:
        pass
for _ in range(50):
    net(x).sum().item()
    raising()
before = per_call()
gc.collect()
r0 = rss_mb()
for _ in range(1500):
    net(x).sum().item()
r1 = rss_mb()
for _ in range(1500):
    raising()
r2 = rss_mb()
for _ in range(1500):
    out = net(x)  # held until the next pass replaces it, as in a notebook's loop
    out.sum().item()
r3 = rss_mb()  # (the last output stays held while the small gradient is timed)
print(r1 - r0, r2 - r1, r3 - r2, per_call() / before)
"""


@benchmark
def session_memory():
    """RSS growth of loops that never call backward, and a small gradient after them."""
    out = subprocess.run(
        [sys.executable, "-c", SESSION_SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env=dict(os.environ, TAPEGRAD_EAGER_COMPILE="1"),
    )
    forward, raising, held, slower = map(float, out.stdout.strip().splitlines()[-1].split())
    return [
        row("RSS growth: 1,500 forward passes of a 64-128-10 MLP, no no_grad", forward, "MB", 40),
        row("RSS growth: 1,500 value_and_grad calls that raise LinAlgError", raising, "MB", 20),
        row("RSS growth: 1,500 forward passes, each output held until the next", held, "MB", 40),
        row("small gradient after those loops / before them", slower, "x", 1.2),
    ]


@benchmark
def peak_memory_per_op():
    """Peak RSS growth while a 1.2M-op scalar chain is recorded and swept, per op."""
    if not os.path.exists("/proc/self/clear_refs"):
        return [row("peak memory growth per scalar op: needs Linux's /proc, not measured", 0, "")]
    rows = [
        row(
            "peak memory growth per scalar op, 1.2M-op chain recorded + swept",
            _peak_per_op("tapegrad"),
            "B",
            64,
        )
    ]
    if torch is None:
        return rows + no_torch("peak memory")
    return rows + [row("peak memory growth per scalar op: PyTorch", _peak_per_op("torch"), "B")]


@benchmark
def tape_memory():
    tg.current_tape().maybe_reset()
    x0 = tg.tensor(0.5, requires_grad=True)
    y = chain(x0)
    t = tg.current_tape()
    per_op = t.nbytes / len(t)
    del y
    t.maybe_reset()
    return [row("tape memory per scalar op: tape.nbytes (values + adjoints incl.)", per_op, "B")]


@benchmark
def small_array_chain():
    x0 = tg.tensor(np.linspace(-1, 1, 10), requires_grad=True)

    def run():
        x = x0
        for _ in range(1000):
            x = tg.tanh(x) * 1.01
        x.sum().backward()
        x0.grad = None

    run()
    per_op = median_time(run) / 2000
    return [row("small-array chain (10 elems): fwd+bwd per op", per_op * 1e6, "us", 3)]


# ---- MLP step ---------------------------------------------------------------------------------
def _mlp_data(rng):
    X = rng.standard_normal((128, 784))
    y = rng.integers(0, 10, 128)
    shapes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    params = [rng.standard_normal(s) * (0.05 if len(s) == 2 else 0.0) for s in shapes]
    return X, y, params


def numpy_mlp_step(X, y, P, lr=0.01):
    W1, b1, W2, b2, W3, b3 = P
    h1 = X @ W1 + b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ W2 + b2
    a2 = np.maximum(h2, 0)
    z = a2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = X.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p
    dz[np.arange(n), y] -= 1
    dz /= n
    dW3 = a2.T @ dz
    db3 = dz.sum(0)
    da2 = dz @ W3.T
    dh2 = da2 * (h2 > 0)
    dW2 = a1.T @ dh2
    db2 = dh2.sum(0)
    da1 = dh2 @ W2.T
    dh1 = da1 * (h1 > 0)
    dW1 = X.T @ dh1
    db1 = dh1.sum(0)
    for p_, g in zip(P, (dW1, db1, dW2, db2, dW3, db3), strict=True):
        p_ -= lr * g
    return loss


def tapegrad_mlp_step(X, y, P, lr=0.01):
    W1, b1, W2, b2, W3, b3 = P
    a1 = tg.relu(X @ W1 + b1)
    a2 = tg.relu(a1 @ W2 + b2)
    z = a2 @ W3 + b3
    n = X.shape[0]
    loss = -tg.log_softmax(z, axis=1)[np.arange(n), y].mean()
    return sgd_step(loss, P, lr, tg.no_grad)


def torch_mlp_step(X, y, P, lr=0.01):
    W1, b1, W2, b2, W3, b3 = P
    a1 = torch.relu(X @ W1 + b1)
    a2 = torch.relu(a1 @ W2 + b2)
    loss = torch.nn.functional.cross_entropy(a2 @ W3 + b3, y)
    return sgd_step(loss, P, lr, torch.no_grad)


def sgd_step(loss, P, lr, no_grad):
    """backward and the update, as in PyTorch's tutorials (tapegrad and PyTorch share it)."""
    loss.backward()
    with no_grad():
        for p in P:
            p -= lr * p.grad
            p.grad = None
    return loss.item()


@benchmark
def mlp_step():
    rng = np.random.default_rng(0)
    X, y, params = _mlp_data(rng)
    P_np = [p.copy() for p in params]
    P_tg = [tg.tensor(p, requires_grad=True) for p in params]
    Xt = tg.tensor(X)
    l_np = numpy_mlp_step(X, y, [p.copy() for p in params])
    l_tg = tapegrad_mlp_step(Xt, y, [tg.tensor(p, requires_grad=True) for p in params])
    assert abs(l_np - l_tg) < 1e-9, (l_np, l_tg)
    fns = [lambda: numpy_mlp_step(X, y, P_np), lambda: tapegrad_mlp_step(Xt, y, P_tg)]
    if torch is not None:
        Xp, yp = torch.from_numpy(X), torch.from_numpy(y)
        P_pt = [torch.tensor(p, requires_grad=True) for p in params]
        l_pt = torch_mlp_step(Xp, yp, [torch.tensor(p, requires_grad=True) for p in params])
        assert abs(l_np - l_pt) < 1e-9, (l_np, l_pt)
        fns.append(lambda: torch_mlp_step(Xp, yp, P_pt))
    t = interleaved(*fns)
    rows = [
        row("MLP step 784-256-256-10, batch 128: hand-written NumPy", t[0] * 1e3, "ms"),
        row("MLP step: tapegrad", t[1] * 1e3, "ms"),
        row("MLP step: tapegrad / NumPy", t[1] / t[0], "x", 1.15),
    ]
    if torch is None:
        return rows + no_torch("MLP step")
    return rows + [
        row("MLP step: PyTorch", t[2] * 1e3, "ms"),
        row("MLP step: tapegrad / PyTorch", t[1] / t[2], "x"),
    ]


# ---- functional transforms ------------------------------------------------------------------
@benchmark
def functional_grad():
    def backward_path():
        x = tg.tensor(0.5, requires_grad=True)
        chain(x).backward()
        return x.grad.item()

    g = tg.grad(chain_np)
    assert abs(g(0.5) - backward_path()) < 1e-12
    a, b = interleaved(backward_path, lambda: g(0.5))

    def rosen(xs):  # 500 variables as a Python list of scalars
        return sum(
            100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1.0 - xs[i]) ** 2 for i in range(len(xs) - 1)
        )

    x0 = [0.5] * 500
    gr = tg.grad(rosen)

    def rosen_tensor():
        xs = [tg.tensor(v, requires_grad=True) for v in x0]
        rosen(xs).backward()
        return [x.grad.item() for x in xs]

    assert np.allclose(gr(x0), rosen_tensor())
    t_rt = median_time(rosen_tensor)
    t_rg = median_time(lambda: gr(x0))
    return [
        row("tg.grad of the scalar chain / Tensor backward() path", b / a, "x", 1.1),
        row("Rosenbrock, 500 scalars in a list: Tensor API backward()", t_rt * 1e3, "ms"),
        row("Rosenbrock, 500 scalars in a list: tg.grad", t_rg * 1e3, "ms"),
    ]


# ---- record once, replay many ---------------------------------------------------------------
@benchmark
def trace_replay():
    def first():
        tr = tg.trace(chain_np, 0.5)
        return tr, tr.grad(0.4)

    t_first = median_time(lambda: first(), max(3, REPEATS // 3))
    tr, g = first()
    assert abs(g - tg.grad(chain_np)(0.4)) < 1e-12
    # each sample times REPLAY_CALLS replays in a row (a loop of replays, what a trace is
    # for), as the Hessian's do: a single 0.4 ms replay right after the full gc.collect()
    # before a sample runs on caches that the collection emptied, ~2x slower per op
    t_replay = median_time(_repeat(lambda: tr.grad(0.4), REPLAY_CALLS), REPEATS) / REPLAY_CALLS
    return [
        row("trace: record + first replayed gradient (2,000-step chain)", t_first * 1e3, "ms"),
        row("trace: replay forward+backward per op", t_replay / CHAIN_OPS * 1e9, "ns", 40),
    ]


GRAD_MANY_RUNS = 5
REPLAY_CALLS = 10


@benchmark
def grad_many():
    """tr.grad_many over 1,000 inputs against 1,000 single tr.grad calls, run by run."""
    tr = tg.trace(chain_np, 0.5)
    X = np.linspace(0.1, 0.9, 1000)
    assert np.allclose(tr.grad_many(X), [tr.grad(float(x)) for x in X], rtol=1e-12, atol=0)
    singles, many = [], []
    for _ in range(GRAD_MANY_RUNS):
        a, b = interleaved(
            lambda: [tr.grad(float(x)) for x in X], lambda: tr.grad_many(X), repeats=1
        )
        singles.append(a)
        many.append(b)
    speedups = [a / b for a, b in zip(singles, many, strict=True)]
    med = statistics.median
    return [
        row("trace: 1,000 single tr.grad calls (2,000-step chain)", med(singles) * 1e3, "ms"),
        row("trace: tr.grad_many over the same 1,000 inputs", med(many) * 1e3, "ms"),
        row(
            f"trace: grad_many speed-up, median of {GRAD_MANY_RUNS} runs",
            med(speedups),
            "x",
            1.7,
            lower_is_better=False,
        ),
        row(
            f"trace: grad_many speed-up, worst of {GRAD_MANY_RUNS} runs",
            min(speedups),
            "x",
            1.7,
            lower_is_better=False,
        ),
    ]


# ---- forward mode and second order ------------------------------------------------------------
def _small_elementwise(x):
    return np.sum(np.tanh(x) * np.exp(-x * x) + np.sin(3.0 * x) * x)


@benchmark
def forward_mode():
    """jvp and hvp against a gradient of the same function (same run, interleaved)."""
    rows = []
    x = np.random.default_rng(0).standard_normal(100)
    v = np.ones(100)
    for label, f, x0, v0 in (
        ("small elementwise (100 elems)", _small_elementwise, x, v),
        ("2,000-step scalar chain", chain_np, 0.5, 1.0),
    ):
        g = tg.grad(f)
        # interleaved() calls the lambdas in this iteration, so their loop variables are current
        t_g, t_j = interleaved(lambda: g(x0), lambda: tg.jvp(f, (x0,), (v0,)))  # noqa: B023
        _, t_h = interleaved(lambda: g(x0), lambda: tg.hvp(f, (x0,), (v0,)))  # noqa: B023
        rows += [
            row(f"{label}: tg.grad", t_g * 1e6, "us"),
            row(f"{label}: tg.jvp / tg.grad", t_j / t_g, "x", 2),
            row(f"{label}: tg.hvp / tg.grad", t_h / t_g, "x", 3),
        ]
    return rows


HESSIAN_CALLS = 20


def _repeat(fn, n):
    """fn called n times in a row (one timed sample)."""

    def run():
        for _ in range(n):
            fn()

    return run


@benchmark
def hessian_logsumexp():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((64, 32))
    x = rng.standard_normal(32)

    def f(x):
        z = A @ x
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * np.sum(x**2)

    def analytic(x):
        z = A @ x
        p = np.exp(z - z.max())
        p /= p.sum()
        Ap = A.T @ p
        return (A.T * p) @ A - np.outer(Ap, Ap) + np.eye(x.size)

    H = tg.hessian(f)
    assert np.allclose(H(x), analytic(x))
    # each sample times HESSIAN_CALLS calls in a row (as a loop calling it would), so the
    # full gc.collect() before a sample does not leave a single sub-millisecond call to run
    # on cold caches; PyTorch's is timed in turn with them, as every peer ratio is
    fns = [_repeat(lambda: analytic(x), HESSIAN_CALLS), _repeat(lambda: H(x), HESSIAN_CALLS)]
    if torch is not None:
        At = torch.tensor(A)

        def ft(x):
            z = At @ x
            return torch.logsumexp(z, 0) + 0.5 * (x**2).sum()

        xt = torch.tensor(x)
        hess = torch.autograd.functional.hessian
        assert np.allclose(hess(ft, xt).numpy(), analytic(x))
        fns.append(_repeat(lambda: hess(ft, xt), HESSIAN_CALLS))
    t_an, t_tg, *t_torch = (t / HESSIAN_CALLS for t in interleaved(*fns))
    rows = [
        row("Hessian 32x32 of logsumexp(A x)+|x|^2/2, A 64x32: analytic NumPy", t_an * 1e6, "us"),
        row("Hessian: tapegrad hessian(f)", t_tg * 1e6, "us"),
        row("Hessian: tapegrad / analytic", t_tg / t_an, "x", 5),
    ]
    if torch is None:
        return rows + no_torch("Hessian")
    return rows + [
        row("Hessian: torch.autograd.functional.hessian", t_torch[0] * 1e6, "us"),
        row(
            "Hessian: PyTorch / tapegrad (speed-up)",
            t_torch[0] / t_tg,
            "x",
            15,
            lower_is_better=False,
        ),
    ]


# ---- small call -----------------------------------------------------------------------------
def five_ops(x):
    """tanh, exp, *, +, sum: five ops on a small array."""
    return np.sum(np.tanh(x) * np.exp(x) + x)


_five_value_and_grad = tg.value_and_grad(five_ops)


def torch_five_ops(x):
    """The same five ops in PyTorch, from a NumPy array to a NumPy gradient."""
    xt = torch.from_numpy(x).requires_grad_()
    y = (torch.tanh(xt) * torch.exp(xt) + xt).sum()
    y.backward()
    return y.item(), xt.grad.numpy()


SMALL_X = np.linspace(-1.0, 1.0, 100)
SMALL_CALLS = 50


@benchmark
def small_call():
    x = SMALL_X
    v, g = _five_value_and_grad(x)
    assert np.allclose(g, (1 - np.tanh(x) ** 2) * np.exp(x) + np.tanh(x) * np.exp(x) + 1)
    n = SMALL_CALLS  # each sample times n calls in a row
    fns = [lambda: [_five_value_and_grad(x) for _ in range(n)]]
    if torch is not None:
        vt, gt = torch_five_ops(x)
        assert np.isclose(v, vt) and np.allclose(g, gt)
        fns.append(lambda: [torch_five_ops(x) for _ in range(n)])
    t = [s / n for s in interleaved(*fns)]
    if torch is None:
        return [
            row("small call: tg.value_and_grad, 5 ops on 100 elems", t[0] * 1e6, "us")
        ] + no_torch("small call")
    t_tg, t_pt = t
    return [
        row("small call: tg.value_and_grad, 5 ops on 100 elems", t_tg * 1e6, "us"),
        row("small call: PyTorch, same 5 ops + backward", t_pt * 1e6, "us"),
        row("small call: tapegrad / PyTorch", t_tg / t_pt, "x"),
    ]


def profile_small_call(calls=2000):
    """cProfile of the small call, top 10 by own time, to benchmarks/profile_small_call.txt."""
    x = SMALL_X
    _five_value_and_grad(x)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        _five_value_and_grad(x)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(10)
    text = (
        f"cProfile of {calls} calls of tg.value_and_grad(five_ops)(x), x of 100 elements\n"
        "(benchmarks/run.py --profile); top 10 entries by own time (tottime)\n" + out.getvalue()
    )
    path = os.path.join(ROOT, "benchmarks", "profile_small_call.txt")
    with open(path, "w") as f:
        f.write(text)
    print(text)


# ---- start-up ---------------------------------------------------------------------------------
FIRST_GRAD = (
    "import time; t0 = time.perf_counter(); import tapegrad as tg; "
    "x = tg.tensor(0.5, requires_grad=True); (tg.sin(x) * x).backward(); "
    "assert x.grad is not None; print(time.perf_counter() - t0)"
)
NUMBA_FLOOR = (
    "import time; t0 = time.perf_counter(); import sys, numpy, numba; "
    "sys.path.insert(0, 'benchmarks'); import numba_floor; "
    "assert numba_floor.one(1.0) == 2.0; print(time.perf_counter() - t0)"
)
FIRST_TRACE = (
    "import time; t0 = time.perf_counter(); import numpy as np; import tapegrad as tg; "
    "tr = tg.trace(lambda x: np.sin(x) * x, 0.5); g = tr.grad(0.4); "
    "assert abs(g - (np.cos(0.4) * 0.4 + np.sin(0.4))) < 1e-12; "
    "print(time.perf_counter() - t0)"
)
STARTUP_RUNS = 5


def _python(code, env=None):
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=USER_ENV if env is None else env,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _cold(code):
    with tempfile.TemporaryDirectory() as d:
        took = _python(code, dict(USER_ENV, NUMBA_CACHE_DIR=d))
        _stop_detached(d)  # its compile into a cache about to be deleted
        return took


@benchmark
def startup():
    # make sure both caches are warm: a first gradient compiles in the background and the
    # process may exit before that is done, so this one compiles in the caller
    eager = dict(USER_ENV, TAPEGRAD_EAGER_COMPILE="1")
    _python(FIRST_GRAD, eager)
    _python(NUMBA_FLOOR)
    floor, warm, loaded = [], [], []
    for _ in range(STARTUP_RUNS):
        floor.append(_python(NUMBA_FLOOR))
        warm.append(_python(FIRST_GRAD))
        loaded.append(_python(FIRST_GRAD, eager))
    floor, warm, loaded = (statistics.median(v) for v in (floor, warm, loaded))
    return [
        row("fresh process: Numba floor (import numpy, numba + a cached njit call)", floor, "s"),
        row("fresh process: import + first gradient (warm cache)", warm, "s"),
        row("fresh process: first gradient (warm) / Numba floor", warm / floor, "x", 1.1),
        row(
            "fresh process: import + first gradient, compiled kernel loaded from the cache "
            "(TAPEGRAD_EAGER_COMPILE=1)",
            loaded,
            "s",
        ),
        row("fresh process: Numba floor, empty cache", _cold(NUMBA_FLOOR), "s"),
        row(
            "fresh process: import + first gradient (empty cache, compiles)",
            _cold(FIRST_GRAD),
            "s",
            3,
        ),
        row(
            "fresh process: import + tg.trace + tr.grad (empty cache, compiles)",
            _cold(FIRST_TRACE),
            "s",
            5,
        ),
    ]


COLD_LOOP = """
import sys, time, numpy as np
import tapegrad as tg
from tapegrad.kernels import loader
seconds, short = float(sys.argv[1]), sys.argv[2] == "short"
x = np.linspace(-1.0, 1.0, 3000)
g = tg.grad(lambda v: (tg.sin(v) * v + tg.exp(-v * v)).sum())
t0 = time.perf_counter()
g(x)
first = time.perf_counter() - t0
n = 1
while time.perf_counter() - t0 < seconds or n < 20:
    g(x)
    n += 1
elapsed = time.perf_counter() - t0
mean, rest = elapsed / n, (elapsed - first) / (n - 1)
steady = float("nan")
if not short:  # the compiled gradient, once the compile is done
    loader.wait()
    runs = []
    for _ in range(7):
        t1 = time.perf_counter()
        for _ in range(20):
            g(x)
        runs.append((time.perf_counter() - t1) / 20)
    steady = min(runs)
print(loader.status()["backward_sweep"])
print(first, mean, rest, steady)
"""


def _loop(cache_dir, seconds, short=False):
    """(what the first gradient ran, its time, the mean per gradient over ``seconds``, the
    mean after the first, the steady compiled time: NaN for a ``short`` process, which exits
    without waiting for the compile)."""
    out = subprocess.run(
        [sys.executable, "-c", COLD_LOOP, str(seconds), "short" if short else "full"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(USER_ENV, NUMBA_CACHE_DIR=cache_dir, TAPEGRAD_EAGER_COMPILE="0"),
        check=True,
    )
    status, figures = out.stdout.strip().splitlines()[-2:]
    return (status, *map(float, figures.split()))


def _stop_detached(cache_dir):
    """Stop the detached compiles writing into ``cache_dir`` (a temporary cache about to be
    deleted; found by their environment in Linux's /proc), so none outlives its benchmark and
    competes with the rows measured after it."""
    import signal

    mark = f"NUMBA_CACHE_DIR={cache_dir}".encode()
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(env, "rb") as f:
                if mark in f.read().split(b"\0"):
                    os.kill(int(env.split("/")[2]), signal.SIGTERM)
        except (OSError, ValueError):
            continue


@benchmark
def cold_start():
    """A 3,000-element gradient loop on an empty Numba cache: the first 10 s (whole-array
    NumPy while the detached compile runs), then a short second process after a short first
    one (each runs 0.2 s and exits; the compile the first starts outlives it)."""
    import fcntl

    with tempfile.TemporaryDirectory() as d:
        _, _, mean, _, steady = _loop(d, 10.0)
        _stop_detached(d)
    with tempfile.TemporaryDirectory() as d:
        _, first, _, _, _ = _loop(d, 0.2, short=True)
        t0 = time.perf_counter()
        pattern = os.path.join(d, "**", "tapegrad-compile.lock")
        while not (locks := glob.glob(pattern, recursive=True)):
            time.sleep(0.1)  # the detached compile imports tapegrad, then takes the lock
        fd = os.open(locks[0], os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # the detached compile is done
        os.close(fd)
        waited = time.perf_counter() - t0
        second, sfirst, _, srest, _ = _loop(d, 0.2, short=True)
        _stop_detached(d)
    return [
        row("empty cache: mean gradient over the first 10 s (3,000 elements)", mean * 1e3, "ms"),
        row("empty cache: first 10 s mean / steady compiled gradient", mean / steady, "x", 3),
        row("short first process (0.2 s): its first gradient", first, "s"),
        row("short first process: its detached compile ran on after it exited", waited, "s"),
        row(
            "second short process: first gradient compiled (1 = yes)",
            float(second.endswith("first: compiled")),
            "",
            1,
            lower_is_better=False,
        ),
        row("second short process: first gradient (a cache load)", sfirst, "s"),
        row("second short process: later gradients / steady compiled", srest / steady, "x"),
    ]


def render(rows):
    lines = ["| figure | measured (median) | budget | within |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


# The rows README.md's summary shows (the figure names, as measured rows name them): written by
# the same run as the full table, so the two never disagree; rows that miss their budget show.
SUMMARY = (
    "scalar chain: recording / Python floor",
    "scalar chain: backward sweep per op",
    "peak memory growth per scalar op, 1.2M-op chain recorded + swept",
    "trace: replay forward+backward per op",
    "linear regression: Tensor API / PyTorch",
    "linear regression: value_and_grad / NumPy",
    "linear regression: tg.traced / PyTorch",
    "MLP step: tapegrad / NumPy",
    "Hessian: PyTorch / tapegrad (speed-up)",
    "small call: tapegrad / PyTorch",
    "RSS growth: 1,500 forward passes of a 64-128-10 MLP, no no_grad",
    "RSS growth: 1,500 value_and_grad calls that raise LinAlgError",
    "fresh process: first gradient (warm) / Numba floor",
    "fresh process: import + first gradient (empty cache, compiles)",
    "empty cache: first 10 s mean / steady compiled gradient",
)


def _replace_between(path, start, end, body):
    with open(path) as f:
        text = f.read()
    head, rest = text.split(start)
    _, tail = rest.split(end)
    with open(path, "w") as f:
        f.write(f"{head}{start}\n{body}\n{end}{tail}")


def write_summary(rows, stamp):
    """README.md's short table: the SUMMARY rows of this run, in that order."""
    by_name = {r[0]: r for r in rows}
    picked = [by_name[name] for name in SUMMARY if name in by_name]
    _replace_between(
        os.path.join(ROOT, "README.md"),
        "<!-- summary:start -->",
        "<!-- summary:end -->",
        f"_Measured {stamp} by `python benchmarks/run.py --write` (medians, one run)._\n\n"
        + render(picked),
    )


def write_readme(table):
    path = os.path.join(ROOT, "benchmarks", "README.md")
    with open(path) as f:
        text = f.read()
    start, end = "<!-- table:start -->", "<!-- table:end -->"
    head, rest = text.split(start)
    _, tail = rest.split(end)
    stamp = time.strftime("%Y-%m-%d")
    with open(path, "w") as f:
        f.write(
            f"{head}{start}\n_Measured {stamp}, {os.cpu_count()} cores, Python "
            f"{sys.version.split()[0]}, numpy {np.__version__}._\n\n{table}\n{end}{tail}"
        )


def main(argv=None):
    global REPEATS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="refresh benchmarks/README.md")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--only", help="run benchmarks whose name contains this")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="only write the cProfile of the small call to profile_small_call.txt",
    )
    args = ap.parse_args(argv)
    if args.quick:
        REPEATS = 3
    if args.profile:
        profile_small_call()
        return []
    rows = []
    for fn in BENCHMARKS:
        if args.only and args.only not in fn.__name__:
            continue
        print(f"running {fn.__name__} ...", file=sys.stderr, flush=True)
        rows += fn()
    table = render(rows)
    print(table)
    if args.write:
        write_readme(table)
        if not args.only:
            write_summary(rows, time.strftime("%Y-%m-%d"))
    return rows


if __name__ == "__main__":
    main()
