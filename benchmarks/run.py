"""tapegrad benchmarks: every figure is a median measured side by side in this one run.

    python benchmarks/run.py            # print the table
    python benchmarks/run.py --write    # also refresh the table in benchmarks/README.md
    python benchmarks/run.py --quick    # fewer repeats (a smoke run)

Each benchmark returns rows (figure, measured, budget, ok); budgets are the project's
performance targets.
"""
import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tapegrad as tg  # noqa: E402

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


def interleaved(fa, fb):
    """Medians of fa() and fb() timed alternately, so both see the same machine state."""
    ta, tb = [], []
    for _ in range(REPEATS):
        ta.append(median_time(fa, 1))
        tb.append(median_time(fb, 1))
    return statistics.median(ta), statistics.median(tb)


def row(figure, value, unit, budget=None, lower_is_better=True):
    if budget is None:
        return (figure, f"{value:.4g} {unit}", "report", "")
    ok = value <= budget if lower_is_better else value >= budget
    cmp = "<=" if lower_is_better else ">="
    return (figure, f"{value:.4g} {unit}", f"{cmp} {budget:g} {unit}", "yes" if ok else "NO")


# ---- scalar chain -----------------------------------------------------------------------------
CHAIN_STEPS = 2000
CHAIN_OPS = 6 * CHAIN_STEPS   # sin, *0.9, *, *0.01, +, +0.1


def chain(x, steps=CHAIN_STEPS):
    for _ in range(steps):
        x = tg.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


def chain_np(x):
    """The same chain as plain NumPy code, for the functional transforms and tg.trace."""
    for _ in range(CHAIN_STEPS):
        x = np.sin(x) * 0.9 + x * x * 0.01 + 0.1
    return x


@benchmark
def scalar_chain():
    rec, bwd, sweep = [], [], []
    for _ in range(REPEATS):
        x0 = tg.tensor(0.5, requires_grad=True)
        gc.collect()
        t0 = time.perf_counter()
        y = chain(x0)
        tg.current_tape().sync()   # deferred part of recording: pending rows into the columns
        t1 = time.perf_counter()
        y.backward(retain_graph=True)
        t2 = time.perf_counter()
        # the compiled sweep alone (what the interpreter costs per op)
        t = tg.current_tape()
        top = y._row
        t.adj[:t.voff[top + 1]] = 0.0
        t.state[:top + 1] &= 2
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
    return [
        row("scalar chain: recording per op", statistics.median(rec) * 1e9, "ns", 1000),
        row("scalar chain: backward sweep per op", statistics.median(sweep) * 1e9, "ns", 30),
        row("scalar chain: whole backward() per op", statistics.median(bwd) * 1e9, "ns"),
    ]


# peak resident memory a 1.2M-op scalar chain adds, recorded and swept, in a fresh process:
# the peak (VmHWM, reset by writing 5 to clear_refs) minus the resident size before
RSS_PER_OP = """
import gc, tapegrad as tg
def field(name):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(name))
def chain(y, steps):
    for _ in range(steps):
        y = tg.sin(y) * 0.9 + y * y * 0.01 + 0.1
    return y
x = tg.tensor(0.5, requires_grad=True)
chain(x, 100).backward()
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = field("VmRSS")
chain(x, 200_000).backward()
print((field("VmHWM") - before) / 1_200_000)
"""


@benchmark
def tape_memory():
    tg.current_tape().maybe_reset()
    x0 = tg.tensor(0.5, requires_grad=True)
    y = chain(x0)
    t = tg.current_tape()
    per_op = t.nbytes / len(t)
    del y
    t.maybe_reset()
    rss = _python(RSS_PER_OP) if os.path.exists("/proc/self/clear_refs") else float("nan")
    return [row("tape memory per scalar op: peak RSS growth, 1.2M-op chain recorded + swept",
                rss, "B", 64),
            row("tape memory per scalar op: tape.nbytes (values + adjoints incl.)", per_op, "B")]


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
    loss.backward()
    with tg.no_grad():
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
    a, b = interleaved(lambda: numpy_mlp_step(X, y, P_np),
                       lambda: tapegrad_mlp_step(Xt, y, P_tg))
    return [
        row("MLP step 784-256-256-10, batch 128: hand-written NumPy", a * 1e3, "ms"),
        row("MLP step: tapegrad", b * 1e3, "ms"),
        row("MLP step: tapegrad / NumPy", b / a, "x", 1.15),
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

    def rosen(xs):   # 500 variables as a Python list of scalars
        return sum(100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1.0 - xs[i]) ** 2
                   for i in range(len(xs) - 1))
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
    t_replay = median_time(lambda: tr.grad(0.4), REPEATS * 10)
    X = np.linspace(0.1, 0.9, 1000)
    tr.grad_many(X)
    t_single = median_time(lambda: [tr.grad(float(x)) for x in X], 5)
    t_many = median_time(lambda: tr.grad_many(X), 5)
    return [
        row("trace: record + first replayed gradient (2,000-step chain)", t_first * 1e3, "ms"),
        row("trace: replay forward+backward per op", t_replay / CHAIN_OPS * 1e9, "ns", 40),
        row("trace: grad_many(1000) speed-up over 1000 single replays", t_single / t_many, "x",
            1.6, lower_is_better=False),
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
    for label, f, x0, v0 in (("small elementwise (100 elems)", _small_elementwise, x, v),
                             ("2,000-step scalar chain", chain_np, 0.5, 1.0)):
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


@benchmark
def hessian_logsumexp():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((64, 32))
    x = rng.standard_normal(32)

    def f(x):
        z = A @ x
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * np.sum(x ** 2)

    def analytic(x):
        z = A @ x
        p = np.exp(z - z.max())
        p /= p.sum()
        Ap = A.T @ p
        return (A.T * p) @ A - np.outer(Ap, Ap) + np.eye(x.size)

    H = tg.hessian(f)
    assert np.allclose(H(x), analytic(x))
    t_an = median_time(lambda: analytic(x))
    t_tg = median_time(lambda: H(x))
    rows = [
        row("Hessian 32x32 of logsumexp(A x)+|x|^2/2, A 64x32: analytic NumPy", t_an * 1e6, "us"),
        row("Hessian: tapegrad hessian(f)", t_tg * 1e6, "us"),
        row("Hessian: tapegrad / analytic", t_tg / t_an, "x", 5),
    ]
    try:
        import torch
    except ImportError:
        return rows + [row("Hessian: PyTorch not installed, no peer figure", 0, "")]
    torch.set_num_threads(1)
    At = torch.tensor(A)

    def ft(x):
        z = At @ x
        return torch.logsumexp(z, 0) + 0.5 * (x ** 2).sum()
    xt = torch.tensor(x)
    assert np.allclose(torch.autograd.functional.hessian(ft, xt).numpy(), analytic(x))
    t_torch = median_time(lambda: torch.autograd.functional.hessian(ft, xt))
    return rows + [
        row("Hessian: torch.autograd.functional.hessian", t_torch * 1e6, "us"),
        row("Hessian: PyTorch / tapegrad (speed-up)", t_torch / t_tg, "x", 15,
            lower_is_better=False),
    ]


# ---- start-up ---------------------------------------------------------------------------------
FIRST_GRAD = ("import time; t0 = time.perf_counter(); import tapegrad as tg; "
              "x = tg.tensor(0.5, requires_grad=True); (tg.sin(x) * x).backward(); "
              "assert x.grad is not None; print(time.perf_counter() - t0)")


def _python(code, env=None):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


@benchmark
def startup():
    _python(FIRST_GRAD)  # make sure the cache is warm
    warm = statistics.median(_python(FIRST_GRAD) for _ in range(5))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        cold = _python(FIRST_GRAD, env)
    return [
        row("fresh process: import + first gradient (warm cache)", warm, "s", 1.5),
        row("fresh process: import + first gradient (cold cache, compiles)", cold, "s", 30),
    ]


def render(rows):
    lines = ["| figure | measured (median) | budget | within |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def write_readme(table):
    path = os.path.join(ROOT, "benchmarks", "README.md")
    with open(path) as f:
        text = f.read()
    start, end = "<!-- table:start -->", "<!-- table:end -->"
    head, rest = text.split(start)
    _, tail = rest.split(end)
    stamp = time.strftime("%Y-%m-%d")
    with open(path, "w") as f:
        f.write(f"{head}{start}\n_Measured {stamp}, {os.cpu_count()} cores, Python "
                f"{sys.version.split()[0]}, numpy {np.__version__}._\n\n{table}\n{end}{tail}")


def main(argv=None):
    global REPEATS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="refresh benchmarks/README.md")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--only", help="run benchmarks whose name contains this")
    args = ap.parse_args(argv)
    if args.quick:
        REPEATS = 3
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
    return rows


if __name__ == "__main__":
    main()
