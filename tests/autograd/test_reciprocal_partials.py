"""Derivatives taken on Tensors (create_graph, nested transforms, nested forward mode) apply a
partial of the form 1 / d as a division, g / d, not as g times 1 / d: where g is tiny and
1 / d overflows (d below 2**-1024), the product was inf and the quotient is the finite number
it stands for; the second derivative of x log x at 1e-305, 1 / x = 1e305, was -inf through
1 / x**2 overflowing."""

import math

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize("x", [1e-305, 1e-250, 1e-200, 0.5])
def test_second_derivative_of_x_log_x(x):
    f = lambda v: v * np.log(v)  # noqa: E731
    assert tg.grad(tg.grad(f))(x) == pytest.approx(1.0 / x, rel=1e-14)
    assert tg.grad(tg.grad(lambda v: tg.xlogy(v, v)))(x) == pytest.approx(1.0 / x, rel=1e-14)
    assert tg.grad(tg.grad(lambda v: v * np.log2(v)))(x) == pytest.approx(
        1.0 / (x * math.log(2.0)), rel=1e-14
    )


@pytest.mark.parametrize("x", [1e-320, 5e-324, 1e-310])
def test_create_graph_gradient_of_x_log_x_at_denormals(x):
    t = tg.tensor(x, requires_grad=True)
    (g,) = tg.autograd.grad(t * t.log(), t, create_graph=True)
    assert g.item() == pytest.approx(math.log(x) + 1.0, rel=1e-15)


def test_ordinary_points_unchanged():
    x = np.array([0.3, 1.7, 4.0])
    H = tg.hessian(lambda v: np.sum(np.log(v) * v**2 + v / (1.0 + v)))(x)
    want = np.diag(2 * np.log(x) + 3 - 2 / (1 + x) ** 3)
    np.testing.assert_allclose(H, want, rtol=1e-13)
    t = tg.tensor(x, requires_grad=True)
    (g,) = tg.autograd.grad((t.log() * t).sum(), t, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), t)
    np.testing.assert_allclose(h.numpy(), 1 / x, rtol=1e-15)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for v in (1e-305, 1e-200):
        x = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(x * torch.log(x), x, create_graph=True)
        (h,) = torch.autograd.grad(g, x)
        assert tg.grad(tg.grad(lambda u: u * np.log(u)))(v) == pytest.approx(h.item(), rel=1e-14)


def test_a_quotient_partial_inside_a_where_branch_is_masked_off_its_branch():
    # formula.scaled writes a partial c / x as g / x * c; on Tensors both branches of a
    # where are recorded, so off its branch the denominator must be 1 (else 0 * inf = NaN
    # reaches the derivative in g and x through the branch not taken)
    from tapegrad.autograd import higher
    from tapegrad.ops import formula

    g = formula.SCALE
    masked = higher._masked_scale(formula.scaled("where(a > 0.0, 0.5 / a, 0.0)"))
    assert masked == f"where(a > 0.0, {g} / where(a > 0.0, a, 1.0) * 0.5, 0.0)"
    masked = higher._masked_scale(formula.scaled("where(a > 0.0, 0.0, -(1.0 / a) / a)"))
    assert (
        masked == f"where(a > 0.0, 0.0, -({g} / where(a > 0.0, 1.0, a)) / where(a > 0.0, 1.0, a))"
    )
