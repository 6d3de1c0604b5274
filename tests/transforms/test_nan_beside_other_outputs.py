"""A NaN output next to finite ones (sqrt of a negative entry beside x1 ** 2).  Reverse mode
multiplies the finite outputs' zero cotangents by the NaN output's partials, and 0 * NaN is
NaN, so jacrev (and jacrev of jacrev) have NaN where the finite outputs do not depend on the
NaN's input, exactly as PyTorch's torch.func.jacrev (and JAX) give: left as IEEE says.
Forward mode seeds only the inputs, so its zeros stay zeros: tg.jacfwd inside another
transform is forward mode too (it was reverse mode there, so jacfwd(jacfwd) had NaN where
torch.func's jacfwd(jacfwd) and the true second derivative are 0)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = np.array([-1.0, 3.0])


def f(x):
    return tnp.stack([np.sqrt(x[0]) * x[1], x[1] ** 2 * x[0]])


def g(x):
    return tnp.stack([np.sqrt(x[0]), x[1] ** 2])


def test_forward_over_forward_keeps_the_zeros():
    with np.errstate(invalid="ignore"):
        H = tg.jacfwd(tg.jacfwd(f))(X)
        np.testing.assert_array_equal(H[1], [[0.0, 6.0], [6.0, -2.0]])
        assert np.isnan(H[0]).all()
        H = tg.jacfwd(tg.jacfwd(g))(X)
        np.testing.assert_array_equal(H[1], [[0.0, 0.0], [0.0, 2.0]])
        J = tg.jacfwd(g)(X)
        np.testing.assert_array_equal(J[1], [0.0, 6.0])


def test_nested_jacfwd_is_differentiable_and_exact():
    h = lambda x: tnp.stack([x[0] ** 3 * x[1], np.sin(x[0]) + x[1] ** 2])  # noqa: E731
    x = np.array([0.7, -1.3])
    H = tg.jacfwd(tg.jacfwd(h))(x)
    Hr = tg.jacrev(tg.jacrev(h))(x)
    np.testing.assert_allclose(H, Hr, rtol=1e-14)
    np.testing.assert_allclose(tg.jacrev(tg.jacfwd(h))(x), Hr, rtol=1e-14)
    np.testing.assert_allclose(H[0], [[6 * 0.7 * -1.3, 3 * 0.7**2], [3 * 0.7**2, 0.0]])
    third = tg.jacfwd(tg.jacfwd(tg.jacfwd(h)))(x)
    assert third[0, 0, 0, 0] == pytest.approx(6 * -1.3)


def test_nan_patterns_match_torch_func():
    torch = pytest.importorskip("torch")
    from torch.func import jacfwd, jacrev

    def tf(x):
        return torch.stack([torch.sqrt(x[0]) * x[1], x[1] ** 2 * x[0]])

    T = torch.tensor(X)
    with np.errstate(invalid="ignore"):
        for ours, theirs in (
            (tg.jacrev(tg.jacrev(f)), jacrev(jacrev(tf))),
            (tg.jacfwd(tg.jacfwd(f)), jacfwd(jacfwd(tf))),
            (tg.jacrev(f), jacrev(tf)),
        ):
            np.testing.assert_array_equal(ours(X), theirs(T).numpy())
