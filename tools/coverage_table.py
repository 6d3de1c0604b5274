"""Write the NumPy / SciPy coverage table: ``python tools/coverage_table.py > docs/COVERAGE.md``.

Every public function and ufunc of ``numpy``, ``numpy.linalg`` and ``numpy.fft`` is listed as
*gradient* (differentiable on Tensors), *value only* (runs on the values: the result carries
no gradient), *refused* (raises a TypeError naming it on a Tensor) or *not dispatched* (takes
no array argument NumPy could hand to tapegrad: creation and configuration functions).  For each
``tapegrad.scipy.<module>`` that exists, its ``__all__`` is listed the same way (a distribution
with its methods), then SciPy's other public names of that module.  The tg.trace column comes
from tracing the case of each name in tests/coverage_cases.py: *compiled* when the recorded
tape has no Python callback row.
"""

import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
import tapegrad.scipy  # noqa: E402
from tapegrad.numpy import dispatch as D  # noqa: E402

import coverage_cases  # noqa: E402

GRADIENT, VALUE, REFUSED, NOT_DISPATCHED = "gradient", "value only", "refused", "not dispatched"
TNP_ONLY = "gradient (tapegrad.numpy)"


def _hashable_in(obj, *tables):
    try:
        return any(obj in t for t in tables)
    except TypeError:
        return False


def numpy_names():
    """(qualified name, status) for every public callable of numpy, numpy.linalg, numpy.fft."""
    rows = []
    for mod, prefix in ((np, "numpy"), (np.linalg, "numpy.linalg"), (np.fft, "numpy.fft")):
        for name in sorted(dir(mod)):
            obj = getattr(mod, name)
            if name.startswith("_") or isinstance(obj, type) or not callable(obj):
                continue
            if type(obj).__name__ == "module":
                continue
            own = (
                prefix == "numpy"
                and callable(vars(tnp).get(name))
                and getattr(vars(tnp)[name], "__module__", "") == "tapegrad.numpy"
            )
            if _hashable_in(obj, D.UFUNCS, D.KEYWORD_UFUNCS, D.FUNCTIONS) or (
                prefix in ("numpy.linalg", "numpy.fft")
                and getattr(getattr(tnp, prefix[6:]), name, obj) is not obj
            ):
                status = GRADIENT
            elif own:
                status = TNP_ONLY
            elif _hashable_in(obj, D.COMPARE, D.VALUE_UFUNCS, D.VALUE_FUNCTIONS):
                status = VALUE
            elif isinstance(obj, np.ufunc) or type(obj).__name__ == "_ArrayFunctionDispatcher":
                status = REFUSED
            else:
                status = NOT_DISPATCHED
            rows.append((f"{prefix}.{name}", status))
    return rows


def scipy_modules():
    """{module name: (tapegrad's names, SciPy's other public names)} for tapegrad.scipy.*."""
    out = {}
    for info in sorted(pkgutil.iter_modules(tapegrad.scipy.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module(f"tapegrad.scipy.{info.name}")
        except ImportError:  # needs SciPy, an optional extra: not listed without it
            continue
        names = sorted(
            n
            for n in getattr(
                mod,
                "__all__",
                [n for n, v in vars(mod).items() if getattr(v, "__module__", None) == mod.__name__],
            )
            if not n.startswith("_")
            and (callable(getattr(mod, n)) or methods(getattr(mod, n)))
            and not isinstance(getattr(mod, n), type)
        )  # functions and distributions, not classes / exceptions
        try:
            theirs = importlib.import_module(f"scipy.{info.name}")
            others = sorted(
                n
                for n in getattr(theirs, "__all__", dir(theirs))
                if not n.startswith("_") and n not in names
            )
        except ImportError:
            others = []
        out[info.name] = (names, others)
    return out


def methods(obj):
    """The public methods of an object that is not a function (a distribution: norm.logpdf)."""
    if callable(obj) or isinstance(obj, type) or type(obj).__module__ == "builtins":
        return []
    return sorted(
        n
        for n in dir(type(obj))
        if not n.startswith("_") and n != "rvs" and callable(getattr(obj, n))
    )


def _scipy_row(mod, module, name):
    """A table row of ``scipy.<mod>.<name>``, a function or a distribution with its methods."""
    listed = ", ".join(f"`{m}`" for m in methods(getattr(module, name)))
    shown = f"`scipy.{mod}.{name}`" + (f" ({listed})" if listed else "")
    return f"| {shown} | {GRADIENT} | {trace_status(f'scipy.{mod}.{name}')} |"


def trace_status(qualname):
    """How tg.trace replays the name's case: compiled, Python callback, or not checked; for a
    distribution (its case returns a dict of methods) each method's status."""
    case = coverage_cases.CASES.get(qualname)
    if case is None:
        return "no case"
    fn, xs = case
    if not isinstance(fn, coverage_cases.Methods):
        return _trace_status(fn, xs)
    by_status = {}
    for method, call in sorted(fn.calls.items()):
        by_status.setdefault(_trace_status(call, xs), []).append(f"`{method}`")
    if len(by_status) == 1:
        return next(iter(by_status))
    return "; ".join(f"{status}: {', '.join(names)}" for status, names in by_status.items())


def _trace_status(fn, xs):
    def f(*args):
        out = fn(*args)
        parts = out if isinstance(out, (list, tuple)) else [out]
        return sum(tnp.sum(tnp.ravel(p) * 1.0) for p in parts)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            tr = tg.trace(f, *xs, argnums=tuple(range(len(xs))))
            # against the same code on Tensors (on plain arrays some functions, odeint for
            # one, are SciPy's own algorithm, equal only to their tolerance)
            eager = f(*[tg.tensor(x) for x in xs]).item()
            ok = np.allclose(tr(*xs), eager, rtol=1e-12, atol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported in the table
            return f"refused ({type(e).__name__})"
    if not ok:
        return "no (replay differs)"
    return "Python callback" if "CUSTOM" in tr.tape.stats()["by_op"] else "compiled"


def versions():
    """The line naming the NumPy and SciPy versions the table was generated with."""
    try:
        import scipy

        sp = f"SciPy {scipy.__version__}"
    except ImportError:
        sp = "no SciPy"
    return f"Generated with NumPy {np.__version__} and {sp}."


def table():
    """The Markdown text of docs/COVERAGE.md."""
    rows = numpy_names()
    scipy_mods = scipy_modules()
    counts = {
        s: sum(1 for _, st in rows if st == s)
        for s in (GRADIENT, TNP_ONLY, VALUE, REFUSED, NOT_DISPATCHED)
    }
    lines = [
        "# NumPy and SciPy coverage",
        "",
        "<!-- generated by tools/coverage_table.py; do not edit (a test checks it is current) -->",
        "",
        versions(),
        "",
        "What each public NumPy function and ufunc does when handed a tapegrad Tensor "
        "(`np.X(t)` and `tapegrad.numpy.X`), and the same for the `tapegrad.scipy` modules.",
        "",
        f"- **{GRADIENT}**: differentiable (reverse and forward mode, any order); the tg.trace "
        "column says whether a recorded trace replays it in compiled code (*compiled*), calls "
        "back into Python for it (*Python callback*), or refuses to record it (*refused*: "
        "use `tg.grad` and friends, which do not record a trace).",
        f"- **{TNP_ONLY}**: `np.X(t)` converts `t` (refused when it needs a gradient), "
        "`tapegrad.numpy.X(t)` differentiates.",
        f"- **{VALUE}**: runs on the values; the result carries no gradient (indices, "
        "predicates, shapes, fresh arrays).",
        f"- **{REFUSED}**: raises `TypeError: numpy.X is not supported on tapegrad Tensors` "
        "rather than drop the gradient; call it on `t.detach().numpy()` if no gradient is "
        "needed.",
        f"- **{NOT_DISPATCHED}**: takes no array argument NumPy could hand to tapegrad "
        "(creation, I/O, configuration); `np.asarray(t)` and friends convert a Tensor only "
        "when it needs no gradient (see [What tapegrad refuses](REFUSALS.md)).",
        "",
        "Ufunc methods: `np.add.reduce`, `np.multiply.reduce`, `np.maximum.reduce`, "
        "`np.minimum.reduce`, `np.add.accumulate`, `np.multiply.accumulate` and `.outer` of "
        "the differentiable binary ufuncs are differentiable; other methods are refused.",
        "",
        "NumPy: " + ", ".join(f"{counts[s]} {s}" for s in counts) + ".",
        "",
        "| name | status | tg.trace |",
        "|---|---|---|",
    ]
    for name, status in rows:
        lines.append(
            f"| `{name}` | {status} | {trace_status(name) if status.startswith(GRADIENT) else ''} |"
        )
    for mod, (names, others) in scipy_mods.items():
        module = importlib.import_module(f"tapegrad.scipy.{mod}")
        lines += ["", f"## scipy.{mod} (`tapegrad.scipy.{mod}`)", ""]
        if any(methods(getattr(module, n)) for n in names):
            lines += [
                "A distribution is listed with its methods; which arguments each method "
                "differentiates in is in its [reference entry](reference/scipy.md#distributions). "
                "Each also has SciPy's `rvs`: draws on plain parameters (a draw has no "
                "derivative in them; refused on Tensors).",
                "",
            ]
        lines += ["| name | status | tg.trace |", "|---|---|---|"]
        lines += [_scipy_row(mod, module, n) for n in names]
        if others:
            lines += [
                "",
                f"SciPy's other names in `scipy.{mod}` are not provided by "
                f"`tapegrad.scipy.{mod}`: " + ", ".join(f"`{n}`" for n in others) + ".",
            ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table())
