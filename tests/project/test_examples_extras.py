"""The examples that need an optional package (SciPy, scikit-learn, Dask) say so in their
docstring and, run without it, exit with a message naming the extra to install instead of a
traceback."""

import json
import os
import re
import subprocess
import sys
import textwrap

import tapegrad as tg

from example_modules import EXAMPLES

EXAMPLES_EXTRA = 'pip install -e ".[examples]"'
NEEDS_EXTRA = {  # example: (the command its message names, the package it needs)
    "digits_mlp": (EXAMPLES_EXTRA, "scikit-learn"),
    "gaussian_process": (EXAMPLES_EXTRA, "SciPy"),
    "mixture_model": (EXAMPLES_EXTRA, "SciPy"),
    "ode_fit": (EXAMPLES_EXTRA, "SciPy"),
    "scipy_minimize": (EXAMPLES_EXTRA, "SciPy"),
    "dask_data_parallel": ('pip install -e ".[distributed]"', "Dask distributed"),
}

# runs each example as __main__ in one process where SciPy, scikit-learn and Dask cannot be
# imported
WITHOUT_EXTRAS = textwrap.dedent(
    """
    import importlib.abc, json, runpy, sys

    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("scipy", "sklearn", "dask", "distributed"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Missing())
    results = {}
    for path in sys.argv[1:]:
        sys.argv = [path]
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            results[path] = str(exit.code)
        else:
            results[path] = None
    print(json.dumps(results))
    """
)


def test_examples_needing_an_extra_say_so_in_their_docstring():
    for name, (install, package) in NEEDS_EXTRA.items():
        with open(os.path.join(EXAMPLES, f"{name}.py"), encoding="utf-8") as fh:
            docstring = fh.read().split('"""')[1]
        assert install in docstring and package in docstring, name


def test_examples_without_their_extra_exit_naming_it():
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
    paths = {os.path.join(EXAMPLES, f"{name}.py"): name for name in NEEDS_EXTRA}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *paths],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    assert set(results) == set(paths)
    for path, message in results.items():
        install, package = NEEDS_EXTRA[paths[path]]
        assert message is not None and install in message and package in message, (path, message)


def test_the_extras_named_install_what_the_examples_need():
    import tomllib

    with open(os.path.join(os.path.dirname(EXAMPLES), "pyproject.toml"), "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    names = {extra: {re.match(r"[\w-]+", d)[0] for d in deps} for extra, deps in extras.items()}
    assert {"scipy", "scikit-learn"} <= names["examples"]
    assert "dask" in names["distributed"]
