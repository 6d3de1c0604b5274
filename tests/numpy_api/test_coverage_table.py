"""docs/COVERAGE.md is current, every name it lists as differentiable has a gradient and tangent
check (tests/coverage_cases.py), and every name it lists as refused raises the TypeError that
names it and points at the table."""

import inspect
import io
import pathlib
import re
import sys
import warnings

import numpy as np
import pytest
from finite_differences import check_derivatives

import tapegrad as tg
import tapegrad.numpy as tnp

from coverage_cases import CASES

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import coverage_table  # noqa: E402

ROWS = coverage_table.numpy_names()
SCIPY = coverage_table.scipy_modules()
SUPPORTED = sorted(
    {n for n, s in ROWS if s.startswith(coverage_table.GRADIENT)}
    | {f"scipy.{m}.{n}" for m, (names, _) in SCIPY.items() for n in names}
)
REFUSED = [n for n, s in ROWS if s == coverage_table.REFUSED]


def test_the_checked_in_table_is_current():
    got = (ROOT / "docs" / "COVERAGE.md").read_text()
    if coverage_table.versions() not in got:
        pytest.skip(
            "docs/COVERAGE.md lists the names of other NumPy / SciPy versions than "
            f"these ({coverage_table.versions()})"
        )
    want = coverage_table.table()
    assert got == want, (
        "docs/COVERAGE.md is stale: run python tools/coverage_table.py > docs/COVERAGE.md"
    )


def _table_versions_differ():
    """docs/COVERAGE.md lists the names of one NumPy / SciPy release; under others (the CI run
    against the oldest allowed versions) NumPy's set of names differs."""
    return coverage_table.versions() not in (ROOT / "docs" / "COVERAGE.md").read_text()


def test_every_supported_name_has_a_gradient_case():
    if _table_versions_differ():
        pytest.skip(
            f"the table lists other NumPy / SciPy versions' names than these "
            f"({coverage_table.versions()})"
        )
    missing = [n for n in SUPPORTED if n not in CASES]
    assert not missing, f"add a case to tests/coverage_cases.py for {missing}"
    extra = [n for n in CASES if n not in SUPPORTED and _available(n)]
    assert not extra, f"cases for names the table does not list as supported: {extra}"


def _available(name):
    """numpy names always; scipy names when their tapegrad.scipy module imported (SciPy)."""
    return name.startswith("numpy.") or name.split(".")[1] in SCIPY


def _flat(out):
    parts = list(out.values()) if isinstance(out, dict) else out
    parts = parts if isinstance(parts, (list, tuple)) else [parts]
    return tnp.concatenate([tnp.ravel(p) for p in parts])


@pytest.mark.parametrize("name", sorted(CASES))
def test_supported_name_value_gradient_and_tangent(name):
    if not _available(name):
        pytest.skip(f"{name} needs SciPy, an optional extra")
    fn, xs = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.asarray(_flat(fn(*xs)))
        got = _flat(fn(*[tg.tensor(x, requires_grad=True) for x in xs]))
        assert isinstance(got, tg.Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
        check_derivatives(lambda *a: _flat(fn(*a)), list(xs))


def _call_with_tensors(fn, t, n_unknown=1):
    """Call fn with Tensors for its required arguments (``n_unknown`` of them when NumPy
    gives the function no signature, as older releases do for some builtins)."""
    if isinstance(fn, np.ufunc):
        return fn(*[t] * fn.nin)
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except ValueError:
        return fn(*[t] * n_unknown)
    args = [t] * max(len(params), 1)
    if params and params[0].name in ("file", "fname"):  # np.save, np.savez(file, *args)
        args = [io.BytesIO()] + args[1:] + ([t] if len(args) == 1 else [])
    return fn(*args)


@pytest.mark.parametrize("name", REFUSED)
def test_refused_name_raises_naming_itself_and_the_table(name):
    mod, _, attr = name.rpartition(".")
    fn = getattr({"numpy.linalg": np.linalg, "numpy.fft": np.fft}.get(mod, np), attr)
    t = tg.tensor([[0.5, 0.25], [0.125, 0.75]], requires_grad=True)
    shown = fn.__name__ if isinstance(fn, np.ufunc) else attr  # aliases show the ufunc
    pattern = rf"numpy\.(linalg\.|fft\.)?{shown}\b.*docs/COVERAGE\.md"
    for n in (1, 2, 3):  # without a signature: as many arguments as NumPy's dispatch needs
        try:
            _call_with_tensors(fn, t, n)
        except TypeError as e:
            if re.search(pattern, str(e)):
                return
            error = e
        else:
            error = None
    pytest.fail(f"{name} on a Tensor did not raise the refusal naming it: {error!r}")


@pytest.mark.parametrize("name", ["sqrt", "log", "arcsin", "power"])
def test_emath_refusal_names_emath_not_the_ufunc(name):
    # np.emath.sqrt and np.sqrt differ (complex results for negative input): naming the
    # ufunc would send the user to a function tapegrad supports with another meaning.
    fn = getattr(np.emath, name)
    args = (np.array([0.5, 0.25]),) * (2 if name == "power" else 1)
    with pytest.raises(TypeError, match=rf"^numpy\.emath\.{name} is not supported"):
        tg.grad(lambda x: np.sum(fn(x, *args[1:])))(args[0])
