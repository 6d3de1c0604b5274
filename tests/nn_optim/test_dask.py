"""Scaling out: a trace pickled in one process replays in another, and the Dask example's summed
per-shard gradients equal the single-machine gradient on a LocalCluster of worker processes."""

import importlib.util
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "dask_data_parallel.py")


def load_example():
    spec = importlib.util.spec_from_file_location("example_dask_data_parallel", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def env_with_this_tapegrad():
    """The environment with the tapegrad this process imported first on the path, for child
    processes (a checkout run with PYTHONPATH, an editable or a regular install alike)."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_pickled_trace_replays_in_another_process(tmp_path):
    ex = load_example()
    X, y = ex.make_data(n=300, d=5, seed=1)
    theta = np.linspace(-0.5, 0.5, 6)
    tr = tg.trace(ex.shard_loss, theta, X[:100], y[:100])
    (tmp_path / "trace.pkl").write_bytes(pickle.dumps(tr))
    # other arguments than the recording's, same shapes
    args = (theta[::-1].copy(), X[100:200], y[100:200])
    np.save(tmp_path / "args.npy", np.array(args, dtype=object), allow_pickle=True)
    code = (
        "import pickle, sys, numpy as np\n"
        "import tapegrad\n"
        "tr = pickle.loads(open('trace.pkl', 'rb').read())\n"
        "args = tuple(np.load('args.npy', allow_pickle=True))\n"
        "value, grad = tr.value_and_grad(*args)\n"
        "pickle.dump((value, grad, tapegrad.__file__), open('out.pkl', 'wb'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env_with_this_tapegrad(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    value, grad, where = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert os.path.abspath(where) == os.path.abspath(tg.__file__)  # not another copy
    assert value == tr(*args)
    np.testing.assert_array_equal(grad, tr.grad(*args))
    # and both equal a fresh differentiation of the NumPy code
    assert value == pytest.approx(ex.shard_loss(*args), rel=1e-13)
    np.testing.assert_allclose(grad, tg.grad(ex.shard_loss)(*args), rtol=1e-12, atol=1e-12)


def test_dask_summed_shard_gradients_equal_single_machine(capsys):
    pytest.importorskip("distributed", reason="the Dask test needs dask[distributed]")
    from distributed import Client, LocalCluster

    ex = load_example()
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_with_this_tapegrad()["PYTHONPATH"]  # inherited by workers
    try:
        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            Client(cluster) as client,
        ):
            pids = client.run(os.getpid)
            assert len(pids) == 2 and os.getpid() not in pids.values()
            files = client.run(lambda: __import__("tapegrad").__file__)
            assert {os.path.abspath(f) for f in files.values()} == {os.path.abspath(tg.__file__)}
            # 5 shards of 1201 and 1200 rows: two shapes, so two traces
            res = ex.train(client, n_shards=5, steps=3, n=6001, d=8, seed=2)
            assert res["ok"] and res["diff"] <= 1e-10
            assert res["losses"][-1] < res["losses"][0]
            out = capsys.readouterr().out
            assert "shapes [(1200, 8), (1201, 8)]" in out and "step 2: loss" in out
            # the script itself, joining this cluster instead of starting one
            done = subprocess.run(
                [
                    sys.executable,
                    EXAMPLE,
                    "--scheduler",
                    cluster.scheduler_address,
                    "--steps",
                    "2",
                    "--samples",
                    "2000",
                ],
                env=env_with_this_tapegrad(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert "(ok, tolerance 1e-10)" in done.stdout and "final loss" in done.stdout
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
