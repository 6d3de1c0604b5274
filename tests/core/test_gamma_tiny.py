"""Gamma at tiny and denormal x: Gamma(x) ~ 1 / x and its n-th derivative ~ (-1)^n n! / x^(n+1)
overflow the largest double, so value and derivatives are +-inf by x's sign, as IEEE says
(and as the compiled kernels compute them), never Python's OverflowError."""

import math

import numpy as np
import pytest

import tapegrad as tg

TINY = [1e-320, 1e-310, 5e-324, -1e-320, -5e-324]


def _want(x, n):
    """The sign of (-1)^n n! / x^(n+1): every one overflows at these x."""
    return math.copysign(math.inf, (-1.0) ** n * math.copysign(1.0, x) ** (n + 1))


@pytest.mark.parametrize("x", TINY)
def test_gamma_value_and_derivatives_at_tiny_x(x):
    assert tg.gamma(tg.tensor(x)).item() == _want(x, 0)
    f = tg.gamma
    for n in (1, 2, 3):
        f = tg.grad(f)
        assert f(x) == _want(x, n), (x, n)
    t = tg.tensor(x, requires_grad=True)
    (g1,) = tg.autograd.grad(tg.gamma(t), t, create_graph=True)
    (g2,) = tg.autograd.grad(g1, t, create_graph=True)
    (g3,) = tg.autograd.grad(g2, t)
    assert [g1.item(), g2.item(), g3.item()] == [_want(x, n) for n in (1, 2, 3)]
    assert tg.jvp(tg.gamma, (x,), (1.0,)) == (_want(x, 0), _want(x, 1))
    assert tg.hessian(tg.gamma)(x) == _want(x, 2)


def test_gamma_on_arrays_with_tiny_entries():
    x = np.array([1e-320, -1e-320, 0.5, 0.0, -0.0, -2.0, 200.0])
    out = tg.gamma(tg.tensor(x)).numpy()
    want = [np.inf, -np.inf, math.gamma(0.5), np.inf, -np.inf, np.nan, np.inf]
    np.testing.assert_array_equal(out, want)
    g = tg.grad(lambda v: tg.gamma(v).sum())(x[:3])
    assert g[0] == -np.inf and g[1] == -np.inf and g[2] == pytest.approx(-3.4802309069132606)


def test_gamma_tiny_matches_mpmath():
    mpmath = pytest.importorskip("mpmath")
    for x in (1e-200, 1e-300):  # the value is finite, the derivatives overflow
        assert tg.gamma(tg.tensor(x)).item() == pytest.approx(float(mpmath.gamma(x)), rel=1e-14)
        g, psi = mpmath.gamma(x), mpmath.digamma(x)
        # Gamma' = Gamma psi and Gamma'' = Gamma (psi^2 + psi_1), rounded to doubles: +-inf
        assert tg.grad(tg.gamma)(x) == float(g * psi) == -math.inf
        assert tg.grad(tg.grad(tg.gamma))(x) == float(g * (psi**2 + mpmath.psi(1, x))) == math.inf
