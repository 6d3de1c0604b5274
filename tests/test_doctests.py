"""The examples in tapegrad's docstrings run and print what they show (one test per module).

Every module of the package is found by walking it, so new modules are covered as they come.
A module whose import needs an optional extra that is not installed is skipped with a reason.
"""
import doctest
import importlib
import io
import pkgutil

import pytest

import tapegrad

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


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
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=out.write)
    failed, _ = runner.summarize(verbose=False)
    assert failed == 0, out.getvalue()
