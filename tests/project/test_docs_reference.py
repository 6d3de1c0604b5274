"""The built documentation site is complete: every public name of ``tapegrad``, every public
attribute of ``Tensor`` and ``nn.Module``, every function of ``tg.nn.functional`` and every
distribution of ``tapegrad.scipy.stats`` has an entry (an element with the id
``tapegrad.PATH``) in the API reference; notebook pages' tables of contents link to headings
that exist.  The site is built once, as mkdocs.yml says, except that the notebooks are not run
(``tests/project/test_notebooks.py`` runs them)."""

import glob
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mkdocs", reason="building the docs needs the docs extra")
pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra: mkdocstrings[python]")
pytest.importorskip("mkdocs_jupyter", reason="the docs extra: mkdocs-jupyter")

import tapegrad as tg  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BUILD = textwrap.dedent(
    """
    import sys
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(config_file=sys.argv[1], site_dir=sys.argv[2], strict=True)
    config.plugins["mkdocs-jupyter"].config["execute"] = False
    build(config)
    """
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, PYTHONPATH=ROOT, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-c", BUILD, os.path.join(ROOT, "mkdocs.yml"), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    return str(out)


def _ids(paths):
    ids = set()
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            ids.update(re.findall(r'\bid="([^"]+)"', fh.read()))
    return ids


@pytest.fixture(scope="module")
def reference_ids(site):
    return _ids(glob.glob(os.path.join(site, "reference", "**", "*.html"), recursive=True))


def _missing(prefix, names, ids):
    return sorted(n for n in names if f"{prefix}.{n}" not in ids)


def _public(cls):
    return [n for n in dir(cls) if not n.startswith("_")]


def test_every_tensor_method_and_attribute_is_in_the_reference(reference_ids):
    names = _public(tg.Tensor)
    assert {"exp", "sum", "backward", "reshape", "float", "T"} <= set(names)
    assert _missing("tapegrad.Tensor", names, reference_ids) == []


def test_module_and_functional_are_in_the_reference(reference_ids):
    assert _missing("tapegrad.nn.Module", _public(tg.nn.Module), reference_ids) == []
    functional = tg.nn.functional.__all__
    assert {"relu", "sigmoid", "tanh", "linear"} <= set(functional)
    assert _missing("tapegrad.nn.functional", functional, reference_ids) == []
    assert _missing("tapegrad.nn", tg.nn.__all__, reference_ids) == []
    assert "tapegrad.nn.progress.ProgressBar" in reference_ids
    assert _missing("tapegrad.nn.progress.ProgressBar", ["update", "close"], reference_ids) == []


def _documented(name, obj, ids):
    """``tg.NAME`` has an entry under its own name or under the path where it is defined."""
    if f"tapegrad.{name}" in ids:
        return True
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    return bool(qualname and module) and f"{module}.{qualname}" in ids


def test_every_public_name_of_tapegrad_is_in_the_reference(reference_ids):
    missing = []
    for name in tg.__all__:
        obj = getattr(tg, name)
        if type(obj) is type(tg):  # a submodule: its own page, or each of its names
            if obj.__name__ in reference_ids:
                continue
            inner = getattr(obj, "__all__", _public(obj))
            missing += [
                f"{name}.{n}"
                for n in inner
                if type(getattr(obj, n)) is not type(tg)
                and f"{obj.__name__}.{n}" not in reference_ids
                and not _documented(n, getattr(obj, n), reference_ids)
            ]
        elif not _documented(name, obj, reference_ids):
            missing.append(name)
    assert missing == []
    assert "tapegrad.ConversionError" in reference_ids


def test_scipy_stats_distributions_are_in_the_reference(reference_ids):
    stats = pytest.importorskip("tapegrad.scipy.stats", exc_type=ImportError)
    assert _missing("tapegrad.scipy.stats", stats.__all__, reference_ids) == []


def test_notebook_contents_link_to_their_headings(site):
    pages = glob.glob(os.path.join(site, "notebooks", "*", "index.html"))
    assert len(pages) >= 3
    for page in pages:
        with open(page, encoding="utf-8") as fh:
            text = fh.read()
        links = set(re.findall(r'<a href="#([^"]+)" class="md-nav__link"', text))
        headings = set(re.findall(r'<h[1-6][^>]*\bid="([^"]+)"', text))
        assert links, f"{page}: no table of contents"
        assert links <= headings, f"{page}: contents links without a heading: {links - headings}"


def test_the_docs_build_runs_the_notebooks():
    """The notebooks are stored without outputs; the site shows them because the build runs
    them (a failing cell fails the build)."""
    from mkdocs.config import load_config

    config = load_config(config_file=os.path.join(ROOT, "mkdocs.yml"))
    jupyter = config.plugins["mkdocs-jupyter"].config
    assert jupyter["execute"] is True and jupyter["allow_errors"] is False
