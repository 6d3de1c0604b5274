"""Second and third derivatives at the special points of their functions (a zero base, the
origin of arctan2, x == 0 in xlogy, the poles of Gamma, the ends of logit), in every mode:
reverse over reverse, forward over reverse, forward over forward and the Tensor API's
create_graph chain.  Each value is a closed form."""

import math

import numpy as np
import pytest

import tapegrad as tg

try:
    import tapegrad.scipy.special as tsp
except ModuleNotFoundError:  # (the floor run installs no extras: no SciPy)
    tsp = None
needs_scipy = pytest.mark.skipif(tsp is None, reason="tapegrad.scipy needs SciPy")

EULER = 0.5772156649015329
_MIXED = 4.0 * (1 + 3 * math.log(2))  # d2/dxdy x ** y at (2, 3)


def _second_derivatives(f, x):
    """The Hessian of f at x by each mode."""
    x = np.asarray(x, dtype=np.float64)
    xt = tg.tensor(x, requires_grad=True)
    (g,) = tg.autograd.grad(f(xt), xt, create_graph=True)
    rows = [tg.autograd.grad(g[i], xt, retain_graph=True)[0] for i in range(x.size)]
    chain = np.array([row.numpy() for row in rows])
    return {
        "jacobian(grad)": tg.jacobian(tg.grad(f))(x),
        "hessian": tg.hessian(f)(x),
        "jacfwd(jacfwd)": tg.jacfwd(tg.jacfwd(f))(x),
        "create_graph": chain,
    }


def _derivatives(f, x, order):
    """The order-th derivative of a scalar function by nested grad, nested jvp, a jvp of
    nested grads and the create_graph chain."""

    def d_fwd(h):
        return lambda y: tg.jvp(h, (y,), (1.0,))[1]

    rev, fwd = f, f
    for _ in range(order):
        rev, fwd = tg.grad(rev), d_fwd(fwd)
    mixed = d_fwd(f) if order == 1 else f
    for _ in range(order - 1):
        mixed = tg.grad(mixed)
    if order > 1:
        mixed = d_fwd(mixed)
    xt = tg.tensor(x, requires_grad=True)
    y = f(xt)
    for _ in range(order):
        (y,) = tg.autograd.grad(y, xt, create_graph=True)
    return {"grad": rev(x), "jvp": fwd(x), "jvp of grad": mixed(x), "create_graph": y.item()}


def _assert_all(results, want, rtol=1e-12, atol=0.0):
    for mode, got in results.items():
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=mode)


@pytest.mark.parametrize(
    "a, b, hessian",
    [
        # x ** y at a zero base, y > 0: d2/dx2 = y (y - 1) x ** (y - 2) (2 at y = 2), and the
        # mixed x ** (y - 1) (1 + y log x) tends to 0 (x log x -> 0); both were NaN in
        # reverse over reverse (the log(0) of the branch not taken times its zero cotangent)
        (0.0, 2.0, [[2.0, 0.0], [0.0, 0.0]]),
        (0.0, 3.0, [[0.0, 0.0], [0.0, 0.0]]),
        (-0.0, 2.0, [[2.0, 0.0], [0.0, 0.0]]),
        # away from 0: x ** y y (y - 1) / x**2, x ** (y - 1) (1 + y log x), x ** y log(x)**2
        (2.0, 3.0, [[12.0, _MIXED], [_MIXED, 8 * math.log(2) ** 2]]),
    ],
)
def test_power_second_derivatives_at_a_zero_base(a, b, hessian):
    _assert_all(_second_derivatives(lambda v: v[0] ** v[1], [a, b]), hessian)


def test_power_second_derivative_in_the_base_with_the_tensor_api():
    x = tg.tensor(0.0, requires_grad=True)
    y = tg.tensor(2.0, requires_grad=True)
    (gy,) = tg.autograd.grad(x**y, y, create_graph=True)  # x ** y log x, 0 at x = 0
    assert gy.item() == 0.0
    assert tg.autograd.grad(gy, x)[0].item() == 0.0


@pytest.mark.parametrize(
    "point, hessian",
    [
        # the partials are taken as 0 at the origin (arctan2 jumps there): so are their
        # derivatives, in every mode (they were [[0, 1], [-1, 0]], not even symmetric)
        ([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]),
        # elsewhere d2/da2 = -2ab / r^4, d2/dadb = (a^2 - b^2) / r^4, d2/db2 = 2ab / r^4
        ([1.0, 2.0], [[-4 / 25, -3 / 25], [-3 / 25, 4 / 25]]),
        ([-3.0, 0.0], [[0.0, 1 / 9], [1 / 9, 0.0]]),
    ],
)
def test_arctan2_second_derivatives(point, hessian):
    _assert_all(_second_derivatives(lambda v: np.arctan2(v[0], v[1]), point), hessian)


def test_arctan2_second_derivatives_at_the_origin_in_a_trace():
    tr = tg.trace(lambda v: np.arctan2(v[0], v[1]), np.array([1.0, 2.0]))
    for v in (np.array([1.0, 0.0]), np.array([0.0, 1.0])):
        np.testing.assert_array_equal(tr.hvp(np.zeros(2), v), 0.0)


@needs_scipy
@pytest.mark.parametrize("name, y", [("xlogy", 2.0), ("xlog1py", 1.0)])
def test_xlogy_mixed_second_derivative_at_zero_x(name, y):
    fn = getattr(tsp, name)
    # d2/dxdy x log(y + shift) = 1 / (y + shift) also at x == 0 (the divisor of d/dy was
    # replaced by 1 wherever x == 0, which made d/dx of d/dy 1 and the Hessian asymmetric)
    _assert_all(_second_derivatives(lambda v: fn(v[0], v[1]), [0.0, y]), [[0.0, 0.5], [0.5, 0.0]])


@needs_scipy
def test_third_derivative_of_x_log1p_x_at_zero():
    # x log1p(x) = x^2 - x^3 / 2 + ...: the third derivative at 0 is -3 (it was -1)
    _assert_all(_derivatives(lambda x: tsp.xlog1py(x, x), 0.0, 3), -3.0)
    _assert_all(_derivatives(lambda x: tsp.xlogy(x, x), 2.0, 3), -0.25)  # -1 / x^2


@pytest.mark.parametrize(
    "x, order, want",
    [
        # 1 / Gamma(x) = x + g x^2 + (g^2 / 2 - pi^2 / 12) x^3 + ... at 0 (g: Euler's gamma)
        (0.0, 1, 1.0),
        (0.0, 2, 2 * EULER),
        (0.0, 3, 3 * EULER**2 - math.pi**2 / 2),
        (1e-300, 1, 1.0),
        (1e-8, 3, 3 * EULER**2 - math.pi**2 / 2),
        (-1e-8, 2, 2 * EULER),
        # at -1, 1 / Gamma(x) = -u + (1 - g) u^2 + ... in u = x + 1; at -n the slope is
        # (-1)^n n!
        (-1.0, 1, -1.0),
        (-1.0, 2, 2 * (1 - EULER)),
        (-1.0 + 1e-9, 2, 2 * (1 - EULER)),
        (-3.0, 1, -6.0),
    ],
)
@needs_scipy
def test_rgamma_derivatives_at_and_near_the_poles_of_gamma(x, order, want):
    # through 1 / Gamma the n-th derivative near a pole is a difference of terms of size
    # 1 / x^(n+1) that cancel: the third at 1e-8 was 5.6, 12, 1.6 or 4 by the mode, the
    # second at -1e-8 3.3, the first at 1e-300 NaN; at the poles it raised
    _assert_all(_derivatives(tsp.rgamma, x, order), want, rtol=1e-7)


@needs_scipy
def test_rgamma_values_near_the_poles_are_scipys():
    sp = pytest.importorskip("scipy.special")
    x = np.array([0.0, -0.0, 1e-300, 1e-8, -1e-8, -1.0, -0.5, -2.5, -19.5, 0.3, 0.49, 0.5, 2.0])
    np.testing.assert_allclose(tsp.rgamma(tg.tensor(x)).numpy(), sp.rgamma(x), rtol=1e-14)


@pytest.mark.parametrize("x", [0.0, 1.0])
def test_logit_derivative_at_the_ends(x):
    # 1 / x + 1 / (1 - x): +inf at 0 and 1 (as PyTorch's); the reverse mode of
    # log(x / (1 - x)) gave NaN there (inf * 0 in the quotient's chain)
    assert tg.grad(tg.logit)(x) == math.inf
    assert tg.jvp(tg.logit, (x,), (1.0,))[1] == math.inf
    t = tg.tensor(x, requires_grad=True)
    t.logit().backward()
    assert t.grad.item() == math.inf


def test_logit_second_derivative():
    # (2x - 1) / (x (1 - x))^2
    _assert_all(_derivatives(tg.logit, 0.75, 2), 0.5 / 0.1875**2)
