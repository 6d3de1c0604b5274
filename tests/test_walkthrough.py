"""docs/ARCHITECTURE.md's walkthrough, done for real in a temporary copy of the package: an
elementwise op is one declaration plus ``python tapegrad/kernels/generate.py``.

The copy loses its ARCSINH declaration (and with it tg.arcsinh, np.arcsinh on Tensors and
x.asinh()), then gets it back as the one declaration the docs show; the copy runs the Python
twin of its regenerated kernels (no Numba compile of the copy)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DECLARATION = """    E(
        "ARCSINH",
        "arcsinh(a)",
        numpy=("arcsinh",),
        example=("[0.5, 2.0]", "[0.4812, 1.4436]", "[0.8944, 0.4472]", "1 / sqrt(x**2 + 1)"),
        methods=("asinh",),
    ),
"""

PROBE = """
import numpy as np
import tapegrad as tg
from tapegrad.kernels import loader

with loader.mode("python"):
    print("exported", hasattr(tg, "arcsinh"))
    print("method", hasattr(tg.tensor(1.0), "asinh"))
    try:
        np.arcsinh(tg.tensor([0.5], requires_grad=True))
        print("dispatch", True)
    except TypeError:
        print("dispatch", False)
    if hasattr(tg, "arcsinh"):
        x = np.array([0.5, 2.0, -3.0])
        g = tg.grad(lambda v: np.sum(np.arcsinh(v)))(x)
        h = tg.hessian(lambda v: np.sum(tg.arcsinh(v)))(x)
        print("grad", np.allclose(g, 1 / np.sqrt(x**2 + 1), rtol=1e-14))
        print("hessian", np.allclose(np.diag(h), -x / (x**2 + 1) ** 1.5, rtol=1e-13))
        print("method value", float(tg.tensor(0.5).asinh()) == float(np.arcsinh(0.5)))
"""


def _run(copy, *args):
    return subprocess.run(
        [sys.executable, *args],
        cwd=copy,
        env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": str(copy / "nc")},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _probe(copy):
    res = _run(copy, "-c", PROBE)
    assert res.returncode == 0, res.stderr[-3000:]
    return dict(line.rsplit(" ", 1) for line in res.stdout.strip().splitlines())


def test_an_elementwise_op_is_one_declaration(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(
        ROOT / "tapegrad", copy / "tapegrad", ignore=shutil.ignore_patterns("__pycache__")
    )
    spec = copy / "tapegrad" / "ops" / "elementwise.py"
    text = spec.read_text()
    assert text.count(DECLARATION) == 1, "the walkthrough's declaration changed: update it here"

    spec.write_text(text.replace(DECLARATION, ""))
    assert _run(copy, "tapegrad/kernels/generate.py").returncode == 0
    assert _probe(copy) == {"exported": "False", "method": "False", "dispatch": "False"}

    # the one declaration, at the end of the elementwise ops, then regenerate
    body = spec.read_text()
    end = re.search(r"\n\)\n", body[body.index("OPS = (") :]).start() + body.index("OPS = (")
    spec.write_text(body[:end] + "\n" + DECLARATION.rstrip("\n") + body[end:])
    res = _run(copy, "tapegrad/kernels/generate.py")
    assert res.returncode == 0, res.stderr
    got = _probe(copy)
    assert got == {
        "exported": "True",
        "method": "True",
        "dispatch": "True",
        "grad": "True",
        "hessian": "True",
        "method value": "True",
    }, got


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
