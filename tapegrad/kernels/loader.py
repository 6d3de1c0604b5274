"""The kernel to call now: the compiled sweep, or its plain-Python twin while it compiles.

Compiling the sweeps takes seconds to minutes (an empty Numba cache: a fresh install, every CI
run), and even loading them from Numba's cache costs a few tenths of a second.  A first
gradient on a small tape needs neither: ``sweeps.py`` is written in the subset of Python that
Numba compiles, so the same source runs as plain Python (the *twin*: that file executed once
more under another module name, with ``njit`` a no-op, ``prange`` = ``range`` and an IEEE
``math``, see ``PLAIN_PYTHON``).  Same source, same formulas: the values agree with the
compiled kernel within a few ulp (NumPy's and libm's transcendental functions may differ in
the last bit).

``kernel(name, args, work)`` hands out the callable:

- the compiled dispatcher once its compile (or cache load) for these argument types is done,
  and always with ``TAPEGRAD_EAGER_COMPILE=1`` (compile in the caller, as Numba does);
- otherwise it starts that compile in a background thread (Numba releases the GIL in LLVM's
  optimiser and code generator, so the caller keeps most of a core) and returns the twin when
  ``work`` (the number of values the call sweeps) is at most ``PYTHON_WORK``, else waits for
  the compile.

Python errors (division by zero, ``math`` domain errors) would differ from Numba's
``error_model="numpy"``: the twin runs under ``np.errstate(all="ignore")`` on NumPy scalars,
and its ``math`` returns IEEE results where Python's raises.  The background thread is a
daemon: a process may exit mid-compile (Numba writes each cache file to a temporary name and
renames it, so no torn file is left; the next process compiles again), and ``os.fork``
waits for the compiles under way.
"""

import functools
import importlib.util
import math
import os
import threading
import types

import numpy as np

from . import sweeps

EAGER = os.environ.get("TAPEGRAD_EAGER_COMPILE", "").strip() not in ("", "0")

# The twin costs ~1 us per value per op (a compiled sweep: ~2-10 ns), so a first gradient on a
# few thousand values takes milliseconds in Python, while an empty-cache compile takes seconds:
# up to this many values the twin runs while the compile is under way; larger calls wait.
PYTHON_WORK = 20_000


def _ieee(f, fallback):
    """``math.f`` (libm, as Numba calls it), with NumPy's IEEE result where Python raises."""

    @functools.wraps(f)
    def call(*args):
        try:
            return f(*args)
        except (ValueError, OverflowError, ZeroDivisionError):
            return fallback(*args)

    return call


def _gamma(x):
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0 and x == np.floor(x):
        return math.nan
    return math.inf if x > 0.0 else 0.0


def _lgamma(x):
    return math.inf if x == np.floor(x) or abs(x) > 1e300 else math.nan


def _no_jit(*args, **kwargs):
    """``@njit`` and ``@njit(...)`` as no-ops."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


# math functions the kernels call that raise in Python where Numba returns inf or nan
_IEEE = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tan": np.tan}
_IEEE.update(gamma=_gamma, lgamma=_lgamma)
_MATH = types.SimpleNamespace(
    **{
        **{k: getattr(math, k) for k in dir(math) if not k.startswith("_")},
        **{k: _ieee(getattr(math, k), f) for k, f in _IEEE.items()},
        # floats, as in Numba (Python's are ints, and raise at +-inf and nan)
        "floor": np.floor,
        "ceil": np.ceil,
        "trunc": np.trunc,
    }
)

PLAIN_PYTHON = types.SimpleNamespace(njit=_no_jit, prange=range, math=_MATH)


def _load_twin():
    """``sweeps.py`` executed as plain Python (its bytecode is cached like any module's)."""
    spec = importlib.util.spec_from_file_location(sweeps.__name__ + "_python", sweeps.__file__)
    twin = importlib.util.module_from_spec(spec)
    twin.PLAIN_PYTHON = PLAIN_PYTHON
    spec.loader.exec_module(twin)
    return twin


class _Job:
    """One background compile (or cache load) of a dispatcher for one signature."""

    def __init__(self, dispatcher, sig):
        self.dispatcher, self.sig = dispatcher, sig
        self.done = threading.Event()
        self.error = None
        self.thread = threading.Thread(
            target=self._run, name=f"tapegrad-compile-{dispatcher.__name__}", daemon=True
        )
        self.thread.start()

    def _run(self):
        try:
            self.dispatcher.compile(self.sig)
        except BaseException as e:  # noqa: BLE001 - reported when the kernel is called
            self.error = e
        finally:
            self.done.set()


_LOCK = threading.Lock()
_READY = {}  # name -> dispatcher: compiled for the types it was first called with
_JOBS = {}  # name -> _Job
_TWIN = []  # the twin module, once loaded
MODES = ("background", "eager", "python")
_MODE = ["eager" if EAGER else "background"]


def twin():
    """The plain-Python twin of ``sweeps`` (loaded on first use).

    >>> from tapegrad.kernels import loader
    >>> loader.twin().backward_sweep.__module__
    'tapegrad.kernels.sweeps_python'
    """
    with _LOCK:
        if not _TWIN:
            _TWIN.append(_load_twin())
        return _TWIN[0]


def _python(fn):
    @functools.wraps(fn)
    def run(*args):
        with np.errstate(all="ignore"):  # error_model="numpy": inf/nan, no warning, no raise
            return fn(*args)

    return run


def kernel(name: str, args: tuple, work: int):
    """The callable for sweep ``name`` on ``args`` (``work``: values it sweeps) now.

    >>> from tapegrad.kernels import loader
    >>> with loader.mode("python"):
    ...     loader.kernel("guard_holds", (), 0).__module__
    'tapegrad.kernels.sweeps_python'
    """
    ready = _READY.get(name)
    if ready is not None:
        return ready
    mode = _MODE[0]
    if mode == "python":
        return _python(getattr(twin(), name))
    dispatcher = getattr(sweeps, name)
    if mode == "eager" or not args:
        return dispatcher
    with _LOCK:
        job = _JOBS.get(name)
        if job is None:
            sig = tuple(dispatcher.typeof_pyval(a) for a in args)
            job = _JOBS[name] = _Job(dispatcher, sig)
    if not job.done.is_set():
        if work <= PYTHON_WORK:
            return _python(getattr(twin(), name))
        job.done.wait()
    if job.error is None:
        _READY[name] = dispatcher
    return dispatcher  # after a failed compile the call compiles again and raises its error


def run(name: str, work: int, *args):
    """Call sweep ``name`` on ``args`` with the kernel ``kernel`` hands out.

    >>> from tapegrad.kernels import loader
    >>> import numpy as np
    >>> voff, tvals, flag = np.array([0, 2]), np.ones((1, 2)), np.zeros(1, np.int8)
    >>> with loader.mode("python"):  # one lane: the direction [3, 4] laid over row 0
    ...     loader.run("seed_tangents", 2, voff, tvals, flag, np.array([0]), np.array([[3.0, 4.0]]))
    >>> tvals.tolist(), flag.tolist()
    ([[3.0, 4.0]], [1])
    """
    return kernel(name, args, work)(*args)


class mode:
    """Context manager: every kernel from ``kernel`` in this mode, process-wide ("eager":
    always the compiled one; "python": always the twin, for tests; "background").

    >>> from tapegrad.kernels import loader
    >>> with loader.mode("eager"):
    ...     loader.kernel("backward_sweep", (), 0) is loader.sweeps.backward_sweep
    True
    """

    def __init__(self, name: str):
        if name not in MODES:
            raise ValueError(f"tapegrad kernel mode must be one of {MODES}, got {name!r}")
        self.name = name

    def __enter__(self):
        with _LOCK:
            self.prev, self.ready = _MODE[0], dict(_READY)
            _MODE[0] = self.name
            _READY.clear()
        return self

    def __exit__(self, *exc):
        with _LOCK:
            _MODE[0] = self.prev
            _READY.clear()
            _READY.update(self.ready)
        return False


def wait(timeout: float | None = None) -> bool:
    """Wait for the background compiles started so far; True when all are done.

    >>> from tapegrad.kernels import loader
    >>> loader.wait(600.0)
    True
    """
    with _LOCK:
        jobs = list(_JOBS.values())
    return all(j.done.wait(timeout) for j in jobs)


def _before_fork():
    """A fork waits for the compiles under way: a child forked mid-compile would inherit
    Numba's compiler lock held by a thread it does not have, and hang at its first compile.
    (``subprocess`` does not run fork hooks and is not held up.)"""
    wait()


def _after_fork_in_child():
    global _LOCK
    _LOCK = threading.Lock()  # another thread of the parent may have held it


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)

__all__ = ["EAGER", "MODES", "PYTHON_WORK", "kernel", "mode", "run", "twin", "wait"]
