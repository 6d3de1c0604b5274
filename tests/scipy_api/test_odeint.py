"""tapegrad.scipy.integrate.odeint: SciPy's values, gradients in y0, t and args against
central differences of SciPy's odeint, forward mode and second order, plain arrays in ->
SciPy's result out, and the step limit."""

import numpy as np
import pytest

si = pytest.importorskip("scipy.integrate")

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
from tapegrad.scipy.integrate import odeint  # noqa: E402

TOL = dict(rtol=1e-10, atol=1e-10)
REF_TOL = dict(rtol=1e-12, atol=1e-12)
EPS = 1e-6


def damped(y, t, a, b):
    """A damped oscillator with a time-dependent damping (NumPy code: works on Tensors)."""
    return tnp.stack([y[1], -a * y[0] - b * t * y[1]])


def damped_np(y, t, a, b):
    return np.array([y[1], -a * y[0] - b * t * y[1]])


Y0 = np.array([1.0, 0.5])
T = np.array([0.0, 0.4, 1.1, 2.0])


def _loss(y0, t, a):
    return tnp.sum(odeint(damped, y0, t, a, 0.3, **TOL) ** 2)


def _ref_loss(y0, t, a):
    return np.sum(si.odeint(damped_np, y0, t, args=(a, 0.3), **REF_TOL) ** 2)


def test_values_match_scipy():
    ours = odeint(damped, tg.tensor(Y0), T, 2.0, 0.3, **TOL)
    assert ours.shape == (4, 2)
    np.testing.assert_allclose(
        ours.numpy(), si.odeint(damped_np, Y0, T, args=(2.0, 0.3), **REF_TOL), rtol=1e-8, atol=1e-9
    )
    # SciPy's args tuple and tfirst
    np.testing.assert_allclose(
        odeint(damped, tg.tensor(Y0), T, (2.0, 0.3), **TOL).numpy(), ours.numpy(), rtol=1e-14
    )
    flipped = odeint(
        lambda t, y, a, b: damped(y, t, a, b), tg.tensor(Y0), T, args=(2.0, 0.3), tfirst=True, **TOL
    )
    np.testing.assert_allclose(flipped.numpy(), ours.numpy(), rtol=1e-14)


def test_gradients_in_y0_t_and_args():
    gy, gt, ga = tg.grad(_loss, argnums=(0, 1, 2))(Y0, T, 2.0)
    h = EPS
    fd_y = [
        (_ref_loss(Y0 + h * e, T, 2.0) - _ref_loss(Y0 - h * e, T, 2.0)) / (2 * h) for e in np.eye(2)
    ]
    fd_t = [
        (_ref_loss(Y0, T + h * e, 2.0) - _ref_loss(Y0, T - h * e, 2.0)) / (2 * h) for e in np.eye(4)
    ]
    fd_a = (_ref_loss(Y0, T, 2.0 + h) - _ref_loss(Y0, T, 2.0 - h)) / (2 * h)
    np.testing.assert_allclose(gy, fd_y, rtol=1e-6)
    np.testing.assert_allclose(gt, fd_t, rtol=1e-6, atol=1e-8)
    assert ga == pytest.approx(fd_a, rel=1e-6)


def test_exponential_decay_exactly():
    # y' = -k y: y(t) = y0 exp(-k t); d/dk = -t y; d2/dk2 = t^2 y; d/dt_end = -k y
    f = lambda k: odeint(lambda y, t, k: -k * y, 1.5, np.array([0.0, 2.0]), k, **TOL)[1, 0]  # noqa: E731
    assert f(0.7) == pytest.approx(1.5 * np.exp(-1.4), rel=1e-9)
    assert tg.grad(f)(0.7) == pytest.approx(-2.0 * 1.5 * np.exp(-1.4), rel=1e-8)
    assert tg.grad(tg.grad(f))(0.7) == pytest.approx(4.0 * 1.5 * np.exp(-1.4), rel=1e-7)
    _, tangent = tg.jvp(f, (0.7,), (1.0,))
    assert tangent == pytest.approx(-2.0 * 1.5 * np.exp(-1.4), rel=1e-8)
    g_end = tg.grad(lambda t: odeint(lambda y, t: -0.7 * y, 1.5, t, **TOL)[1, 0])(
        np.array([0.0, 2.0])
    )
    np.testing.assert_allclose(
        g_end, [0.7 * 1.5 * np.exp(-1.4), -0.7 * 1.5 * np.exp(-1.4)], rtol=1e-8
    )


def test_backwards_in_time():
    t = np.array([1.0, 0.2])
    ours = odeint(damped, tg.tensor(Y0), t, 2.0, 0.3, **TOL).numpy()
    np.testing.assert_allclose(
        ours, si.odeint(damped_np, Y0, t, args=(2.0, 0.3), **REF_TOL), rtol=1e-8
    )


def test_plain_arrays_return_scipys_result():
    got = odeint(damped_np, Y0, T, 2.0, 0.3)
    assert not isinstance(got, tg.Tensor)
    np.testing.assert_array_equal(got, si.odeint(damped_np, Y0, T, args=(2.0, 0.3)))


def test_too_many_steps_raise():
    with pytest.raises(RuntimeError, match="mxstep=5"):
        odeint(damped, tg.tensor(Y0), np.array([0.0, 50.0]), 2.0, 0.3, mxstep=5)
    with pytest.raises(TypeError, match="LSODA"):
        odeint(damped, tg.tensor(Y0), T, 2.0, 0.3, ml=1)


def test_trace_refuses_odeint_naming_it():
    def f(k):
        return odeint(lambda y, t, a: -a * y, np.array([1.0]), np.array([0.0, 1.0]), k)[1, 0]

    with pytest.raises(TypeError, match="cannot replay tapegrad.scipy.integrate.odeint"):
        tg.trace(f, 0.5)
    assert tg.grad(f)(0.5) == pytest.approx(-np.exp(-0.5), rel=1e-6)
