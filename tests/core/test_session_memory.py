"""Memory stays flat in ordinary loops that never call backward: an evaluation loop, a loop
that keeps only ``.item()`` values, a loop whose transformed function raises.  Each runs in a
subprocess (RSS is per process); the tape length is the deterministic measure, RSS the
user's."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg

_PRELUDE = """
import gc, json, numpy as np, tapegrad as tg

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
"""


def _run(body):
    code = _PRELUDE + textwrap.dedent(body)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@needs_proc
def test_evaluation_loop_without_no_grad_stays_flat():
    res = _run(
        """
        net = tg.nn.Sequential(tg.nn.Linear(64, 128), tg.nn.ReLU(), tg.nn.Linear(128, 10))
        x = tg.tensor(np.random.default_rng(0).random((64, 64)))
        for _ in range(100):
            net(x).sum().item()
        gc.collect()
        r0, rows = rss_mb(), []
        for _ in range(600):
            net(x).sum().item()
            rows.append(len(tg.current_tape()))
        print(json.dumps({"grow": rss_mb() - r0, "rows": max(rows)}))
        """
    )
    assert res["rows"] < 400, res  # 600 iterations of 6 rows would be 3,600
    assert res["grow"] < 40, res


@needs_proc
def test_evaluation_loop_holding_its_latest_output_stays_flat():
    # ``out`` is held until the next pass replaces it, so a graph is always held at the top
    # of the tape and the earlier passes' rows sit below it: compaction drops them (the
    # tape reached 21,000 rows and ~1 GB after 3,000 passes before it did)
    res = _run(
        """
        net = tg.nn.Sequential(tg.nn.Linear(64, 128), tg.nn.ReLU(), tg.nn.Linear(128, 10))
        x = tg.tensor(np.random.default_rng(0).random((64, 64)))
        for _ in range(100):
            out = net(x)
        gc.collect()
        r0, rows = rss_mb(), []
        for _ in range(1500):
            out = net(x)
            acc = float((out.argmax(1).numpy() == 3).mean())
            total = out.sum().item()  # a row above the held graph, dropped: a cut takes it
            rows.append(len(tg.current_tape()))
        grow = rss_mb() - r0  # (before the backward, which loads the compiled kernels)
        out.sum().backward()  # the last pass's graph moved intact
        g = net[2].bias.grad.numpy()
        print(json.dumps({"grow": grow, "rows": max(rows), "grad": g.tolist()}))
        """
    )
    assert res["rows"] < 4_000, res  # 1,500 passes of 7 rows: 10,500 otherwise
    assert res["grow"] < 40, res
    assert res["grad"] == [64.0] * 10, res


@needs_proc
def test_scalar_loop_keeping_only_items_stays_flat():
    res = _run(
        """
        w = tg.tensor(0.5, requires_grad=True)
        vals, rows = [], []
        for i in range(20000):
            vals.append(((w * float(i)).sin() + w * w).item())
            rows.append(len(tg.current_tape()))
        print(json.dumps({"rows": max(rows[1000:]), "first": max(rows[:1000])}))
        """
    )
    assert res["rows"] <= 2 * res["first"], res  # 80,000 rows if nothing were reclaimed


@needs_proc
def test_raising_transform_leaves_nothing_behind():
    res = _run(
        """
        X = np.random.default_rng(1).random((30, 2))
        def nll(p):
            d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
            K = np.exp(-d / p[0]) * p[1] + 1e-6 * np.eye(30)
            return np.sum(np.log(np.diag(np.linalg.cholesky(K))))
        g = tg.value_and_grad(nll)
        good, bad = np.array([0.5, 1.0]), np.array([0.5, -1.0])
        v0, g0 = g(good)
        for _ in range(20):
            try:
                g(bad)
            except np.linalg.LinAlgError:
                pass
        gc.collect()
        r0, rows = rss_mb(), []
        for _ in range(400):
            try:
                g(bad)
            except np.linalg.LinAlgError:
                pass
            rows.append(len(tg.current_tape()))
        v1, g1 = g(good)
        print(json.dumps({"grow": rss_mb() - r0, "rows": max(rows), "same": bool(
            v0 == v1 and np.array_equal(g0, g1))}))
        """
    )
    assert res["rows"] == 0, res  # the rows f recorded before it raised are gone at once
    assert res["grow"] < 20, res
    assert res["same"], res


@on_fresh_tape
def test_result_kept_across_an_evaluation_loop_still_differentiates():
    """Reclaims during the loop cut only what nothing holds: the kept graph is intact."""
    rng = np.random.default_rng(2)
    W = tg.tensor(rng.standard_normal((50, 50)) * 0.1, requires_grad=True)
    x = rng.standard_normal((200, 50))
    kept = tg.tanh(tg.tensor(x) @ W)  # held through the loop, never backwarded in it
    for _ in range(300):  # 300 x 20,000 values: many reclaim attempts
        (tg.tanh(tg.tensor(x) @ W) ** 2).sum().item()
    assert len(tg.current_tape()) < 1000
    (kept**2).sum().backward()
    t = np.tanh(x @ W.numpy())
    np.testing.assert_allclose(W.grad.numpy(), x.T @ (2 * t * (1 - t * t)), rtol=1e-12)


def test_raising_function_inside_a_transform_keeps_the_outer_graph():
    """Only what the failing call recorded is dropped: an outer graph recorded before it
    still gives the right gradient."""
    x = tg.tensor(np.array([0.3, 0.7]), requires_grad=True)
    outer = (tg.exp(x) * 2.0).sum()

    def bad(p):
        y = np.sin(p) * 3.0
        raise ValueError(f"bad point {float(np.sum(y._v if hasattr(y, '_v') else y)):.3f}")

    for _ in range(5):
        with pytest.raises(ValueError, match="bad point"):
            tg.grad(bad)(np.array([1.0, 2.0]))
    outer.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.exp([0.3, 0.7]), rtol=1e-14)


def test_checkpointed_function_survives_reclaims_while_it_records():
    """A checkpointed function records on a scratch tape that is never cut, whatever
    dies while it runs (its inputs enter as numbered rows)."""
    rng = np.random.default_rng(3)
    a = tg.tensor(rng.standard_normal(3000), requires_grad=True)

    def fn(v):
        for _ in range(400):  # 400 x 3,000 values dropped as it goes: past the reclaim mark
            (v * 2.0).sum().item()
        return tg.sin(v) * v

    out = tg.checkpoint(fn, a)
    out.sum().backward()
    av = a.numpy()
    np.testing.assert_allclose(a.grad.numpy(), np.cos(av) * av + np.sin(av), rtol=1e-13)
