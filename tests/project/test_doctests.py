"""The examples in tapegrad's docstrings run and print what they show (one test per module).

Every module of the package is found by walking it, so new modules are covered as they come.
A module whose import needs an optional extra that is not installed is skipped with a reason,
and so is a docstring whose example calls a function that needs SciPy when SciPy is absent.
"""

import doctest
import importlib
import importlib.util
import inspect
import io
import pkgutil

import pytest

import tapegrad
import tapegrad.nn.functional
import tapegrad.numpy as tnp

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
NO_SCIPY = importlib.util.find_spec("scipy") is None  # the floor suite runs without extras


def _module_names():
    names = [tapegrad.__name__]
    names += [m.name for m in pkgutil.walk_packages(tapegrad.__path__, prefix="tapegrad.")]
    return sorted(names)


@pytest.mark.parametrize("name", _module_names())
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] != "tapegrad":
            pytest.skip(f"{name} needs {e.name!r}, from an optional extra that is not installed")
        raise
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failed = 0
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        report = io.StringIO()
        result = runner.run(test, out=report.write)
        if result.failed and NO_SCIPY and "needs SciPy" in report.getvalue():
            continue  # (an example of a function that needs the scipy extra, not installed)
        failed += result.failed
        out.write(report.getvalue())
    assert failed == 0, out.getvalue()


# Public names that need no ``>>>`` example of their own, each with the reason.
EXEMPT = {
    "tapegrad.RetraceRequired": "defined in the generated kernels module (a docstring there would "
    "be one more thing to regenerate); tg.trace's example raises it",
    "tapegrad.autograd.sweep": "the engine's inner step over raw tape rows (a Tape and row "
    "numbers); users reach it through backward / autograd.grad, whose "
    "examples run it",
}


def _public(module):
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for n in names:
        obj = getattr(module, n)
        if callable(obj) and not inspect.ismodule(obj):
            yield f"{module.__name__}.{n}", obj


def test_every_public_function_has_an_example():
    """The promise of the docs: every public function and class shows a ``>>>`` example."""
    public = []
    for module in (
        tapegrad,
        tapegrad.autograd,
        tapegrad.nn,
        tapegrad.nn.functional,
        tapegrad.optim,
    ):
        public += _public(module)
    public += [(f"tapegrad.numpy.{n}", getattr(tnp, n)) for n in ("array", "asarray")]
    missing = sorted(
        name for name, obj in public if name not in EXEMPT and ">>>" not in (obj.__doc__ or "")
    )
    assert not missing, f"public names without a >>> example in their docstring: {missing}"
    assert not set(EXEMPT) - {name for name, _ in public}, "stale exemptions"


def test_tensor_method_examples():
    """Tensor methods attached from other modules (closures made by a factory among them) are
    not reached by walking the modules: run the examples of every public Tensor attribute."""
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    parser = doctest.DocTestParser()
    seen = set()
    missing = []
    for name in dir(tapegrad.Tensor):
        attr = inspect.getattr_static(tapegrad.Tensor, name)
        fn = attr.fget if isinstance(attr, property) else attr
        doc = getattr(fn, "__doc__", None) or ""
        if not name.startswith("_") and ">>>" not in doc:
            missing.append(name)
        if name.startswith("_") or ">>>" not in doc or doc in seen:
            continue
        seen.add(doc)
        runner.run(parser.get_doctest(doc, {}, f"Tensor.{name}", None, 0), out=out.write)
    failed, tried = runner.summarize(verbose=False)
    assert tried > 0 and failed == 0, out.getvalue()
    assert not missing, f"public Tensor attributes without a >>> example: {missing}"
