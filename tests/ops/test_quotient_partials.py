"""Partials of the form c / x (log's 1 / a, division's 1 / b) are applied as quotients,
(c * g) / x, in every sweep generated from the spec and on Tensors: as g * (1 / x) the
reciprocal overflows at tiny x and the product is inf where the quotient is finite (the
derivative of x log x at 1e-320 is log(x) + 1 = -735.8, its second derivative at 1e-305 is
1 / x = 1e305).  Forward mode is another matter: there the tangent of log x itself, dx / x,
is the overflowing number, as in every forward-mode system."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.kernels import loader

TINY = 1e-320  # a denormal: 1 / TINY overflows


def _xlogx(v):
    return (v * np.log(v)).sum()


def _xlog2x(v):
    return (v * np.log2(v)).sum()


def _xlog10x(v):
    return (v * np.log10(v)).sum()


CASES = [
    (_xlogx, lambda x: math.log(x) + 1.0),
    (_xlog2x, lambda x: math.log2(x) + 1.0 / math.log(2.0)),
    (_xlog10x, lambda x: math.log10(x) + 1.0 / math.log(10.0)),
]


@pytest.mark.parametrize("mode", ["eager", "python"])
@pytest.mark.parametrize("f, want", CASES, ids=["log", "log2", "log10"])
def test_gradient_of_x_log_x_at_a_denormal(f, want, mode):
    x = np.array([TINY, 0.5])
    expect = [want(TINY), want(0.5)]
    with loader.mode(mode):  # the compiled sweeps, and the plain-Python twin of them
        np.testing.assert_allclose(tg.grad(f)(x), expect, rtol=1e-13)
        tr = tg.trace(f, np.array([0.3, 0.7]))
        np.testing.assert_allclose(tr.grad(x), expect, rtol=1e-13)


def test_second_derivative_of_x_log_x_is_one_over_x_at_tiny_x():
    for x in (1e-305, 1e-300):
        h = tg.hessian(_xlogx)(np.array([x]))
        assert h[0, 0] == pytest.approx(1.0 / x, rel=1e-13)
        hv = tg.hvp(_xlogx, (np.array([x]),), (np.array([1.0]),))
        assert hv[0] == pytest.approx(1.0 / x, rel=1e-13)
        assert tg.grad(tg.grad(lambda s: s * tg.log(s)))(x) == pytest.approx(1.0 / x, rel=1e-13)


def test_gradient_through_a_division_by_a_tiny_constant():
    # the adjoint of a / b is b (tiny), times the partial 1 / b (inf) was inf
    def f(a):
        b = np.full(2, TINY)
        return ((a / b) * b).sum()

    np.testing.assert_allclose(tg.grad(f)(np.array([1.5, -2.0])), [1.0, 1.0], rtol=1e-13)
    x = tg.tensor([1.5, -2.0], requires_grad=True)
    b = tg.tensor([TINY, TINY])
    ((x / b) * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0], rtol=1e-13)
