"""x log(y) at tiny and denormal x and y: the derivative in y, x / y, and so that of xlogy(x, x),
log(x) + 1, are finite there; 1 / y alone overflows below 2**-1024, and x times it was inf.
Checked against the closed forms (and PyTorch's, which divides)."""

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

TINY = [1e-320, 5e-324, 1e-310, 2.0**-1010, 1e-300]


@pytest.mark.parametrize("x", TINY)
def test_xlogy_of_x_and_x_at_tiny_x(x):
    g = tg.grad(lambda v: tg.xlogy(v, v))(x)
    assert g == pytest.approx(math.log(x) + 1.0, rel=1e-15)
    assert tg.xlogy(tg.tensor(x), tg.tensor(x)).item() == pytest.approx(x * math.log(x), rel=1e-15)
    t = tg.tensor(x, requires_grad=True)
    t.xlogy(t).backward()
    assert t.grad.item() == pytest.approx(math.log(x) + 1.0, rel=1e-15)


@pytest.mark.parametrize(
    "x, y",
    [(5e-324, 2.0**-1001), (1e-320, 1e-160), (1e-320, 0.5), (1e-320, 3e-320), (2.0, 1e-300)],
)
def test_xlogy_partials_at_tiny_operands(x, y):
    gx, gy = tg.grad(lambda a, b: tg.xlogy(a, b), argnums=(0, 1))(x, y)
    assert gx == pytest.approx(math.log(y), rel=1e-15)
    assert gy == pytest.approx(x / y, rel=1e-15)


def test_xlogy_where_the_derivative_overflows_is_inf():
    assert tg.grad(lambda b: tg.xlogy(1.0, b))(1e-310) == math.inf  # 1 / y: no double
    assert tg.grad(lambda b: tg.xlogy(2.0, b))(1e-320) == math.inf


def test_kl_div_target_gradient_at_denormal_targets():
    for t, want in ((1e-320, math.log(1e-320) + 1.0 + 0.2), (5e-324, math.log(5e-324) + 1.2)):
        target = tg.tensor([t], requires_grad=True)
        F.kl_div(tg.tensor([-0.2]), target, reduction="sum").backward()
        assert target.grad.item() == pytest.approx(want, rel=1e-15)


def test_xlogy_and_kl_div_match_torch_at_denormals():
    torch = pytest.importorskip("torch")
    x = np.array([1e-320, 5e-324, 1e-310, 3e-300, 0.5])
    a = tg.tensor(x, requires_grad=True)
    a.xlogy(a).sum().backward()
    ta = torch.tensor(x, requires_grad=True)
    torch.xlogy(ta, ta).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-15)
    inp = np.full(5, -0.3)
    t = tg.tensor(x, requires_grad=True)
    F.kl_div(tg.tensor(inp), t, reduction="sum").backward()
    tt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.kl_div(torch.tensor(inp), tt, reduction="sum").backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-15)
