"""examples/quickstart.py runs as a script and prints the values its comments promise."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "examples",
    "quickstart.py",
)


@pytest.fixture(scope="module")
def out():
    done = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def numbers(line):
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", line)]


def line_after(out, prefix):
    for line in out.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :]
    raise AssertionError(f"no line starting with {prefix!r} in:\n{out}")


def test_every_section_runs(out):
    for title in [
        "Tensors and backward",
        "grad_fn is a view of the tape",
        "Accumulation and no_grad updates",
        "autograd.grad with retain_graph",
        "Matrix calculus",
        "Functional API: grad of plain NumPy code",
        "Hessian",
        "Custom Function",
        "tg.trace: record once, replay many",
    ]:
        assert f"== {title} ==" in out


def test_tensor_api_values(out):
    assert "x.grad = tensor([4., 6.])" in out
    assert "tensor([2., 6.], grad_fn=<MulBackward0>)" in out
    assert "step 2: loss=0.8125 w=[2.75  1.625]" in out
    twice = numbers(line_after(out, "dy/dx twice:"))
    assert twice[0] == pytest.approx(twice[2]) and twice[1] == pytest.approx(twice[2])
    assert numbers(line_after(out, "d logsumexp(A v)/dv =")) == pytest.approx([1.5, 2.5, 3.5])


def test_functional_values(out):
    x0 = np.array([0.0, 0.5])
    expected = np.cos(x0) + np.cos(2 * x0) + np.cos(3 * x0)
    assert numbers(line_after(out, "tg.grad(f)(x0) =")) == pytest.approx(expected)
    assert "value_and_grad on a dict: 10.0 {'w': array([2., 2.]), 'b': 12.0}" in out
    hessian = out.split("H =\n", 1)[1].split("third", 1)[0]
    assert numbers(hessian) == pytest.approx([0.0, 2.0, 2.0, 1.0])
    assert "third derivative of sin at 0: -1.0" in out


def test_custom_function_values(out):
    assert "grad_fn=<SoftplusBackward>" in out
    grads = numbers(line_after(out, "y =").split("dy/dx =")[1])
    assert grads == pytest.approx([0.0, 0.5, 1 / (1 + np.exp(-2.0))])
    assert "gradcheck: True" in out


def test_trace_values(out):
    replayed = numbers(line_after(out, "replayed:"))
    rerecorded = numbers(line_after(out, "re-recorded:"))
    assert len(replayed) == 3 and replayed == pytest.approx(rerecorded, rel=1e-12)
    assert "RetraceRequired: the inputs take another branch" in out
