"""The scientific examples (a Gaussian process, a mixture model, an ODE fit) reach their
targets, and each checked its gradient against finite differences."""

import numpy as np
import pytest

from example_modules import load

pytest.importorskip("scipy", reason="the scientific examples use SciPy's optimizer")


def test_gaussian_process_finds_the_noise_level(capsys):
    res, err = load("gaussian_process").main()
    assert res.success and err < 1e-6
    noise_std = np.exp(0.5 * res.x[2])
    assert 0.05 < noise_std < 0.2  # the data were made with 0.1
    assert 0.5 < np.exp(res.x[0]) < 3.0  # a sine: a length-scale of order 1
    assert "(ok)" in capsys.readouterr().out


def test_mixture_model_recovers_the_components(capsys):
    fit, history, err = load("mixture_model").main()
    assert err < 1e-6
    assert history[-1][1] < history[0][1]
    order = np.argsort(fit["loc"])
    np.testing.assert_allclose(fit["loc"][order], [-2.0, 1.5], atol=0.3)
    np.testing.assert_allclose(np.exp(fit["log_scale"][order]), [0.5, 1.0], atol=0.2)
    assert "(ok)" in capsys.readouterr().out


def test_ode_fit_recovers_the_parameters(capsys):
    res, truth, err = load("ode_fit").main()
    assert err < 1e-5
    np.testing.assert_allclose(res.x, truth, atol=0.1)
    assert "(ok)" in capsys.readouterr().out
