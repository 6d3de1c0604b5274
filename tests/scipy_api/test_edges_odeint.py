"""odeint derivatives through a kink in the vector field, against the closed form."""

import numpy as np
import pytest

pytest.importorskip("scipy.integrate")

import tapegrad as tg  # noqa: E402
from tapegrad.scipy.integrate import odeint  # noqa: E402


def test_odeint_gradient_through_a_kink_is_as_accurate_as_the_solution():
    # y' = -k max(y, 1/2), y(0) = a: y = a exp(-k t) until it reaches 1/2 at t* = log(2a)/k,
    # then 1/2 - k (t - t*) / 2; at t = 2: 1/2 - k + log(2a) / 2, so dy/da = 1/(2a), dy/dk = -1
    def field(y, t, k):
        return -k * np.maximum(y, 0.5)

    times = np.array([0.0, 2.0])

    def end(a, k):
        return odeint(field, a, times, k, rtol=1e-10, atol=1e-10)[1, 0]

    value, (da, dk) = tg.value_and_grad(end, argnums=(0, 1))(1.0, 1.0)
    np.testing.assert_allclose(value, 0.5 - 1.0 + 0.5 * np.log(2.0), atol=1e-8)
    np.testing.assert_allclose([da, dk], [0.5, -1.0], atol=1e-7)
    # tfirst and a Tensor argument that is not differentiated
    g = tg.grad(
        lambda a: odeint(
            lambda t, y, k: field(y, t, k),
            a,
            times,
            tg.tensor(1.0),
            tfirst=True,
            rtol=1e-10,
            atol=1e-10,
        )[1, 0]
    )(1.0)
    np.testing.assert_allclose(g, 0.5, atol=1e-7)
