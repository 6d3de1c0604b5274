"""The kernel to call now: the compiled sweep, or a Python stand-in while it compiles.

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
- on the first call, when Numba's cache holds the kernel for these types: it is loaded here
  and then (~0.3 s), so a script's second run is compiled from its first gradient;
- otherwise it starts that compile in a detached process (``python -m tapegrad warmup
  --kernels``: it outlives this one, so a script that exits at once still fills the cache; a
  lock file in the cache directory makes processes that want the same kernel compile it
  once), whose end a background thread waits for before loading the kernel from the cache;
  meanwhile it returns a Python stand-in: the whole-array NumPy reverse sweep
  (``vectorised``) for array rows, else the twin when ``work`` (the number of values the call
  sweeps) is at most ``PYTHON_WORK``; a larger call waits for the compile.

Python errors (division by zero, ``math`` domain errors) would differ from Numba's
``error_model="numpy"``: the stand-ins run under ``np.errstate(all="ignore")`` on NumPy
scalars, and the twin's ``math`` returns IEEE results where Python's raises.  The background
thread is a daemon: a process may exit mid-compile (the detached process goes on; Numba writes
each cache file to a temporary name and renames it, so no torn file is left), and ``os.fork``
waits for the compiles under way.
"""

import base64
import functools
import importlib.util
import math
import os
import pickle
import subprocess
import sys
import threading
import types

import numpy as np

from . import sweeps, vectorised

try:
    import fcntl
except ImportError:  # Windows: no shared lock, each process compiles what it needs
    fcntl = None

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
    """One background compile (or cache load) of a dispatcher for one signature.

    The compile itself runs in a detached process (``python -m tapegrad warmup --kernels``)
    that outlives this one, so a script that exits at once still leaves the kernel in Numba's
    cache; this thread waits for that process, then loads the kernel from the cache (compiling
    here only if the process could not run or failed)."""

    def __init__(self, dispatcher, sig):
        self.dispatcher, self.sig = dispatcher, sig
        self.done = threading.Event()
        self.error = None
        # started here, not in the thread: a script may exit before a new thread runs
        self.process = None
        if DETACHED[0]:
            try:
                self.process = start_detached({dispatcher.__name__: sig})
            except OSError:
                self.process = None  # no subprocess here: the thread compiles
        self.thread = threading.Thread(
            target=self._run, name=f"tapegrad-compile-{dispatcher.__name__}", daemon=True
        )
        self.thread.start()

    def _run(self):
        try:
            if self.process is not None:
                self.process.wait()
            if is_cached(self.dispatcher, self.sig):  # a load: no lock needed
                self.dispatcher.compile(self.sig)
            else:  # the detached compile failed or could not start: compile here
                compile_now(self.dispatcher.__name__, self.sig)
        except BaseException as e:  # noqa: BLE001 - reported when the kernel is called
            self.error = e
        finally:
            self.done.set()


# ---- the compile shared between processes ---------------------------------------------------

# compile in a detached process (False: in this process's thread, as a fallback and for tests)
DETACHED = [os.environ.get("TAPEGRAD_DETACHED_COMPILE", "1").strip() not in ("", "0")]


def encode_signature(sig) -> str:
    """A signature (a tuple of Numba types) as text for the command line."""
    return base64.urlsafe_b64encode(pickle.dumps(tuple(sig))).decode("ascii")


def decode_signature(text: str):
    return pickle.loads(base64.urlsafe_b64decode(text.encode("ascii")))  # noqa: S301 - ours


def start_detached(sigs: dict) -> subprocess.Popen:
    """Start compiling ``{name: signature}`` in a detached ``python -m tapegrad warmup``
    process that survives this one (its own session, no inherited output).  (The caller
    loads the kernels from the cache once it ends, whatever its exit code.)"""
    cmd = [sys.executable, "-m", "tapegrad", "warmup", "--quiet", "--kernels"]
    cmd += [f"{name}={encode_signature(sig)}" for name, sig in sigs.items()]
    env = dict(os.environ, TAPEGRAD_EAGER_COMPILE="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")  # this very tapegrad
    return subprocess.Popen(
        cmd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def cache_lock_path(dispatcher) -> str | None:
    """The lock file beside the dispatcher's Numba cache files (None without a cache)."""
    try:
        path = dispatcher._cache._cache_path
    except AttributeError:
        return None
    return os.path.join(path, "tapegrad-compile.lock")


class compile_lock:
    """An exclusive lock on a file in Numba's cache directory, held while kernels compile, so
    processes that want the same kernels compile them once: the others wait, then load the
    kernel from the cache.  (Numba writes each cache file under a temporary name and renames
    it, so readers never see a torn file; the lock only saves the duplicated CPU.)  Without
    ``fcntl`` (Windows) or a writable directory it is a no-op."""

    def __init__(self, path: str | None):
        self.path, self.fd = path, None

    def __enter__(self):
        if self.path is None or fcntl is None:
            return self
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            self.fd = None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
        return False


def is_cached(dispatcher, sig) -> bool:
    """Does Numba's cache hold ``dispatcher`` compiled for ``sig`` (a load, not a compile)?
    (Numba's own index lookup; False when it cannot tell.)"""
    try:
        cache = dispatcher._cache
        key = cache._index_key(tuple(sig), dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - a Numba without these internals: compile as usual
        return False


def compile_now(name: str, sig) -> None:
    """Compile (or load) sweep ``name`` for ``sig`` in this process, under the cache lock."""
    dispatcher = getattr(sweeps, name)
    with compile_lock(cache_lock_path(dispatcher)):
        dispatcher.compile(tuple(sig))


_LOCK = threading.Lock()
_READY = {}  # name -> dispatcher: compiled for the types it was first called with
_FIRST = {}  # name -> what its first call ran: "compiled", "python" or "numpy"
_JOBS = {}  # name -> _Job
_TWIN = []  # the twin module, once loaded
MODES = ("background", "eager", "python", "numpy")
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


def _python_kernel(name: str, args: tuple, work: int, force_numpy: bool = False):
    """The Python stand-in for sweep ``name``: the whole-array NumPy sweep when it has one
    and the call's rows are arrays (``work`` values over ``top - bottom + 1`` rows) or
    ``force_numpy``, else the element-by-element twin."""
    tw = twin()
    if name in ("backward_sweep", "backward_sweep_all") and len(args) == 13:
        rows = int(args[10]) - int(args[11]) + 1
        if force_numpy or work >= vectorised.MIN_MEAN_ROW * max(rows, 1):
            return _python(functools.partial(vectorised.backward_sweep, tw.backward_sweep_all))
    return _python(getattr(tw, name))


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
    if mode == "numpy":
        return _python_kernel(name, args, work, force_numpy=True)
    dispatcher = getattr(sweeps, name)
    if mode == "eager" or not args:
        return dispatcher
    with _LOCK:
        job = _JOBS.get(name)
        if job is None:
            sig = tuple(dispatcher.typeof_pyval(a) for a in args)
            if is_cached(dispatcher, sig):  # a cache load (~0.3 s): compiled from the first call
                dispatcher.compile(sig)  # (files are renamed into place whole: no lock)
                _READY[name] = dispatcher
                _FIRST.setdefault(name, "compiled")
                return dispatcher
            job = _JOBS[name] = _Job(dispatcher, sig)
    if not job.done.is_set():
        python = _python_kernel(name, args, work)
        vector = isinstance(python.__wrapped__, functools.partial)
        if work <= PYTHON_WORK or vector:
            _FIRST.setdefault(name, "numpy" if vector else "python")
            return python
        job.done.wait()
    _FIRST.setdefault(name, "compiled")
    if job.error is None:
        _READY[name] = dispatcher
    return dispatcher  # after a failed compile the call compiles again and raises its error


def status() -> dict[str, str]:
    """Each sweep called so far in this process: ``"compiled"`` (calls run the compiled
    kernel), ``"compiling"`` (calls run a Python twin meanwhile) or ``"failed"``; with what
    its first call ran (``"first: compiled"``, ``"first: numpy"`` (the whole-array sweep) or
    ``"first: python"`` (the twin)).

    >>> from tapegrad.kernels import loader
    >>> isinstance(loader.status(), dict)
    True
    """
    with _LOCK:
        out = {}
        for name, first in _FIRST.items():
            job = _JOBS.get(name)
            if name in _READY:
                state = "compiled"
            elif job is not None and not job.done.is_set():
                state = "compiling"
            elif job is not None and job.error is not None:
                state = "failed"
            else:
                state = "compiled"
            out[name] = f"{state}, first: {first}"
        return out


def run(name: str, work: int, *args):
    """Call sweep ``name`` on ``args`` with the kernel ``kernel`` hands out (for
    ``backward_sweep``, then ``backward_sweep_all`` from the row of an op outside its common
    set, if there is one).

    >>> from tapegrad.kernels import loader
    >>> import numpy as np
    >>> voff, tvals, flag = np.array([0, 2]), np.ones((1, 2)), np.zeros(1, np.int8)
    >>> with loader.mode("python"):  # one lane: the direction [3, 4] laid over row 0
    ...     loader.run("seed_tangents", 2, voff, tvals, flag, np.array([0]), np.array([[3.0, 4.0]]))
    >>> tvals.tolist(), flag.tolist()
    ([[3.0, 4.0]], [1])
    """
    result = kernel(name, args, work)(*args)
    if name == "backward_sweep" and result[0] == sweeps.HIT_RARE:
        # an op outside the common sweep: the full one goes on from that row
        args = (*args[:10], result[1], *args[11:])
        return kernel("backward_sweep_all", args, work)(*args)
    return result


class mode:
    """Context manager: every kernel from ``kernel`` in this mode, process-wide ("eager":
    always the compiled one; "python": always the element-by-element twin; "numpy": the
    whole-array NumPy sweep where there is one, else the twin (both for tests);
    "background").

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

__all__ = [
    "EAGER",
    "MODES",
    "PYTHON_WORK",
    "compile_now",
    "kernel",
    "mode",
    "run",
    "status",
    "twin",
    "wait",
]
