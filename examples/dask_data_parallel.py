"""Data-parallel gradients on Dask: record a loss once, ship the trace, sum per-shard gradients.

    python examples/dask_data_parallel.py                      # 2 local worker processes
    python examples/dask_data_parallel.py --workers 4 --steps 10
    python examples/dask_data_parallel.py --scheduler tcp://127.0.0.1:8786   # an existing cluster

Logistic regression on a synthetic dataset split into shards.  ``tg.trace`` records the loss of
one shard; the trace is plain arrays, so it pickles and is sent to every worker once
(``client.scatter(tr, broadcast=True)``).  Each step maps ``Trace.value_and_grad`` over the
shards (which stay on the workers) and sums the losses and gradients on the client.  Before
training, the summed gradient is checked against the single-machine gradient of the whole
dataset (to 1e-10); the script exits with status 1 when they differ.

A trace replays only the shapes it was recorded with, so shards are grouped by shape and one
trace is recorded (and scattered) per distinct shard shape: with ``np.array_split`` that is at
most two.  The workers must run the same tapegrad version as the client (the trace's arrays
are replayed by the workers' own interpreter), and with ``--scheduler`` they must also be able
to import tapegrad; nothing else of this script is sent to them.

Needs Dask distributed, in the ``distributed`` extra: ``pip install -e ".[distributed]"``.
"""

import argparse
import sys
import time

import numpy as np

import tapegrad as tg
from tapegrad.trace import Trace


def shard_loss(theta, X, y):
    """Sum (not mean) of the logistic losses of one shard: sums of shards add up."""
    z = X @ theta[:-1] + theta[-1]
    return np.sum(np.logaddexp(0.0, z) - y * z)


def make_data(n=6000, d=20, seed=0):
    """A synthetic binary classification problem with a known separating direction."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true + 0.5)))
    y = (rng.random(n) < p).astype(np.float64)
    return X, y


def split(X, y, n_shards):
    """Shards as equal as possible (``np.array_split``): (X_shard, y_shard) pairs."""
    return list(zip(np.array_split(X, n_shards), np.array_split(y, n_shards), strict=True))


def record_traces(shards, theta):
    """One trace of ``shard_loss`` per distinct shard shape: {shape: trace}."""
    traces = {}
    for Xs, ys in shards:
        if Xs.shape not in traces:
            traces[Xs.shape] = tg.trace(shard_loss, theta, Xs, ys)
    return traces


class DistributedGradient:
    """The gradient of the whole-dataset loss, computed shard by shard on a Dask cluster.

    The traces are broadcast to every worker and the shards scattered across them once, in
    the constructor; each call only sends ``theta`` and gathers one gradient per shard.
    """

    def __init__(self, client, shards, theta):
        self.client = client
        traces = record_traces(shards, theta)
        remote = {shape: client.scatter(tr, broadcast=True) for shape, tr in traces.items()}
        self.traces = [remote[Xs.shape] for Xs, _ in shards]
        # here the shards come from the client; data that does not fit it would rather be
        # loaded where it lives, one future per shard (client.submit(load_shard, i)), and the
        # traces recorded from one shard of each shape
        self.X = client.scatter([Xs for Xs, _ in shards])
        self.y = client.scatter([ys for _, ys in shards])
        self.n = sum(len(ys) for _, ys in shards)

    def _map(self, method, theta):
        futures = self.client.map(
            method, self.traces, [theta] * len(self.X), self.X, self.y, pure=False
        )
        return self.client.gather(futures)

    def grad(self, theta):
        """Mean loss gradient: the sum of the shards' gradients divided by the sample count."""
        return sum(self._map(Trace.grad, theta)) / self.n

    def value_and_grad(self, theta):
        """(mean loss, its gradient) in one round trip."""
        parts = self._map(Trace.value_and_grad, theta)
        return sum(v for v, _ in parts) / self.n, sum(g for _, g in parts) / self.n


def train(client, n_shards=4, steps=5, lr=0.5, n=6000, d=20, seed=0, tol=1e-10):
    """Check the distributed gradient against one machine, then run ``steps`` of gradient
    descent with it.  Returns a dict with the losses, the gradient difference and ``ok``."""
    X, y = make_data(n, d, seed)
    shards = split(X, y, n_shards)
    theta = np.zeros(d + 1)
    t0 = time.perf_counter()
    dist = DistributedGradient(client, shards, theta)
    setup = time.perf_counter() - t0

    g_dist = dist.grad(theta)
    g_local = tg.grad(shard_loss)(theta, X, y) / n  # the whole dataset, in this process
    diff = float(np.max(np.abs(g_dist - g_local)))
    ok = diff <= tol
    shapes = sorted({Xs.shape for Xs, _ in shards})
    print(
        f"{n} samples in {n_shards} shards of shapes {shapes} on "
        f"{len(client.scheduler_info()['workers'])} workers (setup {setup:.2f} s)"
    )
    print(
        f"max |distributed - single-machine gradient| = {diff:.3g} "
        f"({'ok' if ok else 'MISMATCH'}, tolerance {tol:g})"
    )

    losses = []
    for step in range(steps):
        t0 = time.perf_counter()
        value, g = dist.value_and_grad(theta)
        losses.append(value)
        theta = theta - lr * g
        print(f"step {step}: loss {losses[-1]:.6f}  ({(time.perf_counter() - t0) * 1e3:.0f} ms)")
    losses.append(dist.value_and_grad(theta)[0])
    print(f"final loss {losses[-1]:.6f}")
    return dict(losses=losses, diff=diff, ok=ok, theta=theta)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="join this Dask scheduler instead of starting a LocalCluster",
    )
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--samples", type=int, default=6000)
    args = parser.parse_args(argv)

    try:
        from distributed import Client, LocalCluster
    except ImportError as error:
        sys.exit(
            f"{error}: this example needs Dask distributed, in the distributed extra: "
            'pip install -e ".[distributed]"'
        )

    if args.scheduler:
        with Client(args.scheduler) as client:
            res = train(client, args.shards, args.steps, n=args.samples)
    else:
        with (
            LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            Client(cluster) as client,
        ):
            res = train(client, args.shards, args.steps, n=args.samples)
    return 0 if res["ok"] and res["losses"][-1] < res["losses"][0] else 1


if __name__ == "__main__":
    sys.exit(main())
