"""docs/ARCHITECTURE.md's walkthrough, done for real in a temporary copy of the package: an op
is one declaration plus ``python tapegrad/kernels/generate.py``.

The copy loses its ARCSINH declaration (and with it tg.arcsinh, np.arcsinh on Tensors and
x.asinh()), then gets it back as the one declaration the docs show; likewise the two-operand
LOGADDEXP2 (tg.logaddexp2 with broadcasting, np.logaddexp2, x.logaddexp2(y)), and the scan
LOGCUMSUMEXP, declared by its combine formula (tg.logcumsumexp, np.logaddexp.accumulate on
Tensors, x.logcumsumexp(dim)). The copy runs the Python twin of its regenerated kernels (no
Numba compile of the copy)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECLARATION = """    E(
        "ARCSINH",
        "arcsinh(a)",
        numpy=("arcsinh",),
        example=("[0.5, 2.0]", "[0.4812, 1.4436]", "[0.8944, 0.4472]", "1 / sqrt(x**2 + 1)"),
        methods=("asinh",),
    ),
"""

LOGADDEXP2 = """    E(
        "LOGADDEXP2",
        "logaddexp2(a, b)",
        logaddexp_partials("a", "b", LN2),
        numpy=("logaddexp2",),
        doc="log2(2**x1 + 2**x2), computed stably (NumPy's value).",
        example=(
            "[1.0, 3.0]",
            "[1.0, 2.0]",
            "[2.0000, 3.5850]",
            "[0.5000, 0.6667]",
            "[0.5000, 0.3333]",
        ),
    ),
"""

PROBE_LOGADDEXP2 = """
import numpy as np
import tapegrad as tg
from tapegrad.kernels import loader

with loader.mode("python"):
    print("exported", hasattr(tg, "logaddexp2"))
    print("method", hasattr(tg.tensor(1.0), "logaddexp2"))
    try:
        np.logaddexp2(tg.tensor([0.5], requires_grad=True), 2.0)
        print("dispatch", True)
    except TypeError:
        print("dispatch", False)
    if hasattr(tg, "logaddexp2"):
        a = np.array([[3.0, -1.0, 0.5]])
        b = np.array([[4.0], [2.0]])  # broadcast against a: (2, 3)
        ga, gb = tg.grad(lambda u, v: np.sum(np.logaddexp2(u, v)), argnums=(0, 1))(a, b)
        s = 1.0 / (1.0 + 2.0 ** (b - a))  # d/da; d/db = 1 - s
        print("grad", np.allclose(ga, s.sum(0, keepdims=True), rtol=1e-14)
              and np.allclose(gb, (1 - s).sum(1, keepdims=True), rtol=1e-14))
        x = np.array([3.0, 0.5])
        h = tg.hessian(lambda v: np.sum(tg.logaddexp2(v, 2.0)))(x)
        s = 1.0 / (1.0 + 2.0 ** (2.0 - x))
        print("hessian", np.allclose(np.diag(h), np.log(2.0) * s * (1 - s), rtol=1e-13))
        print("method value", float(tg.tensor(3.0).logaddexp2(3.0)) == 4.0)
"""

LOGCUMSUMEXP = """    scan(
        "LOGCUMSUMEXP",
        "logaddexp(s, a)",
        -math.inf,
        ufunc="logaddexp",
        doc="log(cumsum(exp(x))) along an axis, computed stably (np.logaddexp.accumulate's "
        "value); the gradient of out_k in x_j is the softmax weight exp(x_j - out_k).",
        example=("[0.0, 0.0, 0.0]", "[0.0000, 0.6931, 1.0986]", "[1.8333, 0.8333, 0.3333]"),
    ),
"""

PROBE_LOGCUMSUMEXP = """
import numpy as np
import tapegrad as tg
from tapegrad.kernels import loader

with loader.mode("python"):
    print("exported", hasattr(tg, "logcumsumexp"))
    print("method", hasattr(tg.tensor(1.0), "logcumsumexp"))
    try:
        np.logaddexp.accumulate(tg.tensor([0.5, 1.0], requires_grad=True))
        print("dispatch", True)
    except TypeError:
        print("dispatch", False)
    if hasattr(tg, "logcumsumexp"):
        x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.0]])
        w = np.array([1.0, -2.0, 0.5])
        f = lambda v: np.sum(w * tg.logcumsumexp(v, axis=1))
        out = np.logaddexp.accumulate(x, axis=1)
        # d out_k / d x_j = exp(x_j - out_k) for j <= k
        jac = np.exp(x[:, None, :] - out[:, :, None]) * np.tri(3)[None]
        print("grad", np.allclose(tg.grad(f)(x), np.einsum("k,okj->oj", w, jac), rtol=1e-13))
        h = tg.hessian(f)(x).reshape(6, 6)
        eps = 1e-5
        fd = np.array([
            ((tg.grad(f)(x + eps * e.reshape(2, 3)) - tg.grad(f)(x - eps * e.reshape(2, 3)))
             / (2 * eps)).ravel()
            for e in np.eye(6)
        ])
        print("hessian", np.allclose(h, fd, atol=1e-8))
        print("method value", np.allclose(tg.tensor(x).logcumsumexp(dim=1).numpy(), out))
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


def _probe(copy, probe):
    res = _run(copy, "-c", probe)
    assert res.returncode == 0, res.stderr[-3000:]
    return dict(line.rsplit(" ", 1) for line in res.stdout.strip().splitlines())


ELEMENTWISE = Path("tapegrad/ops/elementwise.py")
STRUCTURAL = Path("tapegrad/ops/structural/__init__.py")
CASES = {
    "arcsinh": (ELEMENTWISE, DECLARATION, PROBE),
    "logaddexp2": (ELEMENTWISE, LOGADDEXP2, PROBE_LOGADDEXP2),
    "logcumsumexp": (STRUCTURAL, LOGCUMSUMEXP, PROBE_LOGCUMSUMEXP),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_an_op_is_one_declaration(tmp_path, op):
    where, declaration, probe = CASES[op]
    copy = tmp_path / "repo"
    shutil.copytree(
        ROOT / "tapegrad", copy / "tapegrad", ignore=shutil.ignore_patterns("__pycache__")
    )
    spec = copy / where
    text = spec.read_text()
    assert text.count(declaration) == 1, "the walkthrough's declaration changed: update it here"

    spec.write_text(text.replace(declaration, ""))
    assert _run(copy, "tapegrad/kernels/generate.py").returncode == 0
    assert _probe(copy, probe) == {"exported": "False", "method": "False", "dispatch": "False"}

    # the one declaration, at the end of its file's ops, then regenerate
    body = spec.read_text()
    end = re.search(r"\n\)\n", body[body.index("OPS = (") :]).start() + body.index("OPS = (")
    spec.write_text(body[:end] + "\n" + declaration.rstrip("\n") + body[end:])
    res = _run(copy, "tapegrad/kernels/generate.py")
    assert res.returncode == 0, res.stderr
    got = _probe(copy, probe)
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
