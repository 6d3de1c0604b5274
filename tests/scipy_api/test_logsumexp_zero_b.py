"""logsumexp(a, b=b) with zeros in b: those entries add nothing (SciPy ignores them, so
the value is finite even where a is huge, +inf or NaN there), their a gets the gradient 0,
and, when b is a Tensor that requires grad, their b gets d/db = exp(a - out) (inf where that
overflows, NaN where a is NaN, as IEEE says), whether b is an array, a Tensor or a
differentiated argument."""

import warnings

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import tapegrad as tg  # noqa: E402
import tapegrad.scipy.special as tsp  # noqa: E402

B = np.array([1.0, 0.0, 2.0, 0.0])
# the entries 1 and 3 have b == 0; the others' value is what a at 0 and 2 make
POINTS = [
    [1.0, 2.0, 3.0, -0.5],
    [1.0, 800.0, 3.0, 2.0],
    [1.0, np.inf, 3.0, 0.5],
    [1.0, -np.inf, 3.0, -np.inf],
    [1.0, np.nan, 3.0, 710.0],
]
A_GRAD = np.array([np.exp(1.0), 0.0, 2 * np.exp(3.0), 0.0]) / (np.exp(1.0) + 2 * np.exp(3.0))


def _b_grad(a):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(np.asarray(a) - np.log(np.exp(1.0) + 2 * np.exp(3.0)))


@pytest.mark.parametrize("a", POINTS)
def test_value_and_gradients_with_zero_weights(a):
    a = np.array(a)
    want = sp.logsumexp(a, b=B)
    assert np.isfinite(want)
    for b in (B, tg.tensor(B), tg.tensor(B, requires_grad=True)):
        x = tg.tensor(a, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no 0 * inf on the way
            out = tsp.logsumexp(x, b=b)
            assert out.item() == pytest.approx(want, rel=1e-14)
            grads = tg.autograd.grad(
                out, [x] + ([b] if isinstance(b, tg.Tensor) and b.requires_grad else [])
            )
        np.testing.assert_allclose(grads[0].numpy(), A_GRAD, rtol=1e-14)
        if len(grads) == 2:
            np.testing.assert_allclose(grads[1].numpy(), _b_grad(a), rtol=1e-12)
    # the functional API, b an array or a differentiated argument
    np.testing.assert_allclose(tg.grad(lambda x: tsp.logsumexp(x, b=B))(a), A_GRAD, rtol=1e-14)
    ga, gb = tg.grad(lambda x, b: tsp.logsumexp(x, b=b), argnums=(0, 1))(a, B)
    np.testing.assert_allclose(ga, A_GRAD, rtol=1e-14)
    np.testing.assert_allclose(gb, _b_grad(a), rtol=1e-12)


def test_gradient_in_b_against_finite_differences():
    a, b = np.array([0.3, 5.0, -1.2, 2.0]), np.array([1.5, 0.0, 0.7, 0.0])
    ga, gb = tg.grad(lambda x, b: tsp.logsumexp(x, b=b), argnums=(0, 1))(a, b)
    eps = 1e-6
    for i in range(4):
        e = np.eye(4)[i] * eps
        fd_a = (sp.logsumexp(a + e, b=b) - sp.logsumexp(a - e, b=b)) / (2 * eps)
        fd_b = (sp.logsumexp(a, b=b + e) - sp.logsumexp(a, b=b - e)) / (2 * eps)
        assert ga[i] == pytest.approx(fd_a, abs=1e-8)
        assert gb[i] == pytest.approx(fd_b, rel=1e-7)


def test_second_order_and_forward_mode_with_zero_weights_match_torch():
    torch = pytest.importorskip("torch")
    a, b = np.array([0.3, 5.0, -1.2, 2.0]), np.array([1.5, 0.0, 0.7, 0.0])

    def f(ab):
        return tsp.logsumexp(ab[:4], b=ab[4:])

    ab = np.concatenate([a, b])
    h = tg.hessian(f)(ab)
    th = torch.func.hessian(lambda v: torch.log(torch.sum(v[4:] * torch.exp(v[:4]))))(
        torch.tensor(ab)
    )
    np.testing.assert_allclose(h, th.numpy(), rtol=1e-12, atol=1e-15)
    v = np.linspace(-1.0, 1.0, 8)
    _, t = tg.jvp(f, (ab,), (v,))
    assert t == pytest.approx(float(np.dot(tg.grad(f)(ab), v)), rel=1e-13)


def test_trace_replays_see_their_own_zeros():
    f = lambda x, b: tsp.logsumexp(x, b=b)  # noqa: E731
    tr = tg.trace(f, np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0]))
    x, b = np.array([1.0, 800.0, 3.0]), np.array([1.0, 0.0, 2.0])
    with pytest.raises(tg.RetraceRequired):
        tr(x, b)  # recorded without zeros in b: a replay with one retraces, not -inf
    tr = tg.trace(f, x, b, argnums=(0, 1))
    ga, gb = tr.grad(np.array([1.0, 900.0, 3.0]), b)
    np.testing.assert_allclose(ga, A_GRAD[:3], rtol=1e-14)
    assert gb[1] == np.inf and gb[0] == pytest.approx(_b_grad(1.0), rel=1e-13)
