"""The nn examples reach their targets (imported and called with small settings; xor also run
as a script)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from example_modules import EXAMPLES, load


def test_linear_regression_fits_least_squares(tmp_path, capsys):
    res = load("linear_regression").main(epochs=300, plot_path=str(tmp_path / "fit.png"))
    assert res["w"] == pytest.approx(res["w_lstsq"], abs=1e-6)
    assert res["b"] == pytest.approx(res["b_lstsq"], abs=1e-5)
    assert abs(res["w"] - 2.0) < 0.1 and abs(res["b"] - 1.0) < 0.5
    assert res["losses"][-1] < res["losses"][0] / 10
    out = capsys.readouterr().out
    assert "fitted:" in out and "300/300" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert res["plot"] is None and "skipping the plot" in out
    else:
        assert os.path.getsize(res["plot"]) > 0


def test_xor_all_four_cases():
    res = load("xor").main(epochs=300)
    assert res["correct"] == 4
    np.testing.assert_array_equal(res["preds"], [0, 1, 1, 0])
    assert res["loss"] < 0.05


def test_xor_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "xor.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "4/4 correct" in done.stdout and "1 xor 1 -> 0" in done.stdout


def test_digits_mlp_reaches_95_percent():
    pytest.importorskip("sklearn")
    res = load("digits_mlp").main(epochs=10)
    assert res["test_accuracy"] >= 0.95
    assert res["losses"][-1] < res["losses"][0]


def test_benchmark_step_agrees_with_numpy_on_small_mlp():
    # the comparison itself, at a tiny size: same loss on the first step, positive timings
    t_tg, t_np, ratio = load("digits_mlp").benchmark_step(sizes=(6, 5, 3), batch=4, repeats=2)
    assert t_tg > 0 and t_np > 0 and ratio > 0
