"""``tg.special.ndtr`` / ``log_ndtr`` / ``ndtri`` (one implementation, ``core.gaussian``, also
behind ``tapegrad.scipy.special``'s names) need no SciPy: checked against ``math`` closed forms,
so the floor suite (no extras) runs them too."""

import math

import numpy as np

import tapegrad as tg


def test_values_and_derivatives_against_math():
    xs = [-40.0, -12.0, -3.0, 0.0, 0.7, 5.0]
    x = tg.tensor(xs, requires_grad=True)
    phi = [0.5 * math.erfc(-v / math.sqrt(2.0)) for v in xs]
    density = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in xs]
    np.testing.assert_allclose(tg.special.ndtr(x).detach().numpy(), phi, rtol=1e-13)
    log_phi = [
        math.log1p(-0.5 * math.erfc(v / math.sqrt(2.0))) if v > 0 else math.log(p)
        for v, p in zip(xs[1:], phi[1:], strict=True)
    ]  # (log1p of the upper tail above 0: no cancellation)
    np.testing.assert_allclose(tg.special.log_ndtr(x[1:]).detach().numpy(), log_phi, rtol=1e-13)
    (g,) = tg.autograd.grad(tg.special.ndtr(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), density, rtol=1e-13, atol=1e-300)
    p = tg.tensor([1e-300, 0.025, 0.5, 0.975], requires_grad=True)
    q = tg.special.ndtri(p)
    # (the round trip amplifies rounding by ~x^2: ~1400 at p = 1e-300)
    np.testing.assert_allclose(tg.special.ndtr(q).detach().numpy(), p.detach().numpy(), rtol=1e-12)
    (gq,) = tg.autograd.grad(q.sum(), p)
    back = [math.sqrt(2 * math.pi) * math.exp(v * v / 2) for v in q.detach().numpy()]
    np.testing.assert_allclose(gq.numpy(), back, rtol=1e-12)
