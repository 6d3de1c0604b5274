"""tapegrad.scipy.special's entr, rel_entr and kl_div: SciPy's values everywhere (edges,
infinities, NaN), derivatives against central differences inside the domain and against the
closed forms where x and y are tiny or denormal, where they are finite (log(x / y) + 1, not
x times an overflowing 1 / y)."""

import math

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import tapegrad as tg  # noqa: E402
import tapegrad.scipy.special as tsp  # noqa: E402

EDGES = [0.3, 1.5, 0.0, -1.0, np.inf, np.nan, 1e-320, 5e-324]


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_values_are_scipys(name):
    x, y = np.meshgrid(EDGES, EDGES)
    got = getattr(tsp, name)(tg.tensor(x), tg.tensor(y)).numpy()
    np.testing.assert_array_equal(got, getattr(sp, name)(x, y))
    v = np.array(EDGES)
    np.testing.assert_array_equal(tsp.entr(tg.tensor(v)).numpy(), sp.entr(v))
    assert tsp.rel_entr(0.5, 0.25) == sp.rel_entr(0.5, 0.25)  # plain numbers: SciPy's own


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_gradients_inside_against_central_differences(name):
    f, ref = getattr(tsp, name), getattr(sp, name)
    x, y = np.array([0.3, 1.5, 2.0]), np.array([0.7, 0.2, 2.0])
    gx, gy = tg.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    h = 1e-6
    fd_x = (ref(x + h, y) - ref(x - h, y)) / (2 * h)
    fd_y = (ref(x, y + h) - ref(x, y - h)) / (2 * h)
    np.testing.assert_allclose(gx, fd_x, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gy, fd_y, rtol=1e-7, atol=1e-9)
    H = tg.hessian(lambda v: f(v[0], v[1]))(np.array([0.3, 0.7]))
    np.testing.assert_allclose(H, [[1 / 0.3, -1 / 0.7], [-1 / 0.7, 0.3 / 0.49]], rtol=1e-14)
    g = tg.grad(tsp.entr)(0.3)
    assert g == pytest.approx(-(math.log(0.3) + 1.0), rel=1e-15)
    assert tg.grad(tg.grad(tsp.entr))(0.3) == pytest.approx(-1 / 0.3, rel=1e-15)


@pytest.mark.parametrize("x", [1e-320, 5e-324, 1e-310])
def test_derivatives_at_denormals_are_finite(x):
    assert tg.grad(tsp.entr)(x) == pytest.approx(-(math.log(x) + 1.0), rel=1e-15)
    for y in (x, 3 * x, 1e-300, 0.5):
        gx, gy = tg.grad(lambda a, b: tsp.rel_entr(a, b), argnums=(0, 1))(x, y)
        assert gx == pytest.approx(math.log(x / y) + 1.0, rel=1e-14)
        assert gy == pytest.approx(-x / y, rel=1e-14)
        gx, gy = tg.grad(lambda a, b: tsp.kl_div(a, b), argnums=(0, 1))(x, y)
        assert gx == pytest.approx(math.log(x / y), rel=1e-14, abs=1e-15)
        assert gy == pytest.approx(1.0 - x / y, rel=1e-14, abs=1e-15)


def test_edges_and_forward_mode():
    # x == 0: the limits from x > 0; outside the domain (the value inf) 0; NaN propagates
    assert tg.grad(lambda a, b: tsp.rel_entr(a, b), argnums=(0, 1))(0.0, 0.5) == (-math.inf, 0.0)
    assert tg.grad(lambda a, b: tsp.kl_div(a, b), argnums=(0, 1))(0.0, 0.5) == (-math.inf, 1.0)
    assert tg.grad(lambda a, b: tsp.rel_entr(a, b), argnums=(0, 1))(-1.0, 0.5) == (0.0, 0.0)
    assert tg.grad(tsp.entr)(0.0) == math.inf and tg.grad(tsp.entr)(-2.0) == 0.0
    assert all(np.isnan(tg.grad(lambda a, b: tsp.kl_div(a, b), argnums=(0, 1))(np.nan, 1.0)))
    _, t = tg.jvp(lambda a, b: tsp.kl_div(a, b), (0.3, 0.7), (1.0, -2.0))
    assert t == pytest.approx(math.log(0.3 / 0.7) - 2.0 * (1.0 - 0.3 / 0.7), rel=1e-14)


def test_match_torch_at_denormals():
    torch = pytest.importorskip("torch")
    x = np.array([1e-320, 5e-324, 1e-310, 0.3, 2.0])
    a = tg.tensor(x, requires_grad=True)
    tsp.entr(a).sum().backward()
    ta = torch.tensor(x, requires_grad=True)
    torch.special.entr(ta).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-15)
