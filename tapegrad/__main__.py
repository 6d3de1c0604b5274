"""``python -m tapegrad warmup``: compile every kernel now (before a notebook session, in a
Docker build), so no later process waits for Numba or runs a Python twin meanwhile.

The kernels are compiled by running a small instance of every kind of call (gradient, traced
replay, forward mode, Hessian, Jacobian, batched gradients), so each is compiled for the
argument types real calls give it, and cached by Numba for every later process.
``--kernels name=signature ...`` compiles just those kernels (what the kernel loader asks of
the detached process it starts on a first gradient).  Progress is a tqdm bar when tqdm is
installed, plain lines otherwise; ``--quiet`` prints nothing.
"""

import argparse
import sys
import time

import numpy as np

import tapegrad as tg
from tapegrad.kernels import loader


def _f(x):
    return (tg.sin(x) * x + tg.exp(-x * x)).sum()


def _mlp(x):
    w = tg.reshape(x[:6], (2, 3))
    return tg.tanh(w @ x[6:9]).sum() + (x * x).max()


def _steps():
    """(label, call) pairs; together they call every sweep of the kernel module."""
    x = np.linspace(-1.0, 1.0, 9)
    t = np.ones(9)

    def backward():
        tg.grad(_f)(x)
        tg.grad(_mlp)(x)

    def traced():
        tr = tg.trace(_mlp, x)
        tr(x)
        tr.grad(x)
        tr.grad_many(np.stack([x, 0.5 * x]))
        tr.jvp(x, t)
        tr.hvp(x, t)

    return [
        ("reverse sweep", backward),
        ("forward mode", lambda: tg.jvp(_mlp, (x,), (t,))),
        ("Jacobian", lambda: tg.jacobian(lambda v: tg.sin(v) * v)(x)),
        ("Hessian", lambda: tg.hessian(_mlp)(x)),
        ("traced replay", traced),
    ]


class _Progress:
    """tqdm when installed, else one plain line per step."""

    def __init__(self, total, quiet):
        self.quiet, self.bar = quiet, None
        if not quiet:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, desc="tapegrad warmup", unit="step")
        self.total, self.done = total, 0

    def step(self, label, seconds):
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{label}: {seconds:.1f}s")
            self.bar.update(1)
        elif not self.quiet:
            print(f"[{self.done}/{self.total}] {label}: {seconds:.1f} s", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def warmup(kernels=None, quiet: bool = False) -> float:
    """Compile (or load from Numba's cache) every kernel, or the ``kernels`` given as
    ``{name: signature}``; returns the seconds it took."""
    start = time.perf_counter()
    if kernels:
        progress = _Progress(len(kernels), quiet)
        for name, sig in kernels.items():
            t0 = time.perf_counter()
            loader.compile_now(name, sig)
            progress.step(name, time.perf_counter() - t0)
    else:
        steps = _steps()
        progress = _Progress(len(steps), quiet)
        with loader.mode("eager"):
            for label, call in steps:
                t0 = time.perf_counter()
                call()
                progress.step(label, time.perf_counter() - t0)
    progress.close()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapegrad", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("warmup", help="compile every kernel now (Numba caches them)")
    w.add_argument("--kernels", nargs="+", metavar="NAME=SIGNATURE", help=argparse.SUPPRESS)
    w.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    kernels = None
    if args.kernels:
        kernels = dict(k.split("=", 1) for k in args.kernels)
        kernels = {name: loader.decode_signature(sig) for name, sig in kernels.items()}
    seconds = warmup(kernels, args.quiet)
    if not args.quiet:
        print(f"tapegrad kernels compiled and cached in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
