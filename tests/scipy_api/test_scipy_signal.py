"""tapegrad.scipy.signal.convolve: values against SciPy (and a per-slice SciPy reference for
HIPS-style axes / dot_axes), derivatives against finite differences, plain arrays in and out."""

import subprocess
import sys

import numpy as np
import pytest
from finite_differences import check_derivatives

import tapegrad as tg
from tapegrad.scipy import signal

sps = pytest.importorskip("scipy.signal")
RNG = np.random.default_rng(5)


def _r(*shape):
    return RNG.uniform(-1.5, 1.5, size=shape)


def reference(a, b, axes, dot_axes, mode):
    """HIPS semantics from SciPy: out[ia, ib, conv...] = sum_d convolve(a[ia, d], b[ib, d])."""
    ca, cb = axes
    da, db = dot_axes
    ia = [i for i in range(a.ndim) if i not in ca and i not in da]
    ib = [i for i in range(b.ndim) if i not in cb and i not in db]
    A = np.transpose(a, ia + list(da) + list(ca))
    B = np.transpose(b, ib + list(db) + list(cb))
    sa, sb = A.shape[: len(ia)], B.shape[: len(ib)]
    sd = A.shape[len(ia) : len(ia) + len(da)]
    out = None
    for i in np.ndindex(sa):
        for j in np.ndindex(sb):
            acc = sum(sps.convolve(A[i + d], B[j + d], mode) for d in np.ndindex(sd))
            if out is None:
                out = np.zeros(sa + sb + acc.shape)
            out[i + j] = acc
    return out


CASES = {
    "1d_full": (_r(5), _r(3), None, ((), ()), "full"),
    "1d_same_short_first": (_r(2), _r(5), None, ((), ()), "same"),
    "1d_valid_long_second": (_r(3), _r(6), None, ((), ()), "valid"),
    "2d_full": (_r(4, 3), _r(2, 2), None, ((), ()), "full"),
    "2d_same": (_r(4, 5), _r(3, 2), None, ((), ()), "same"),
    "2d_valid": (_r(4, 5), _r(3, 2), None, ((), ()), "valid"),
    "3d_same": (_r(3, 2, 4), _r(2, 2, 3), None, ((), ()), "same"),
    "axes_batch": (_r(2, 5), _r(3), ([1], [0]), ((), ()), "full"),
    "axes_both_free": (_r(2, 5), _r(3, 2), ([1], [0]), ((), ()), "valid"),
    "dot_axes_channels": (_r(3, 6, 5), _r(3, 2, 2), ([1, 2], [1, 2]), ([0], [0]), "valid"),
    "dot_and_free": (_r(2, 3, 5), _r(3, 4, 2), ([2], [2]), ([1], [0]), "same"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_convolve_matches_scipy_and_differentiates(name):
    a, b, axes, dot_axes, mode = CASES[name]
    want = sps.convolve(a, b, mode) if axes is None else reference(a, b, axes, dot_axes, mode)
    got = signal.convolve(tg.tensor(a, requires_grad=True), b, mode, axes, dot_axes=dot_axes)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    plain = signal.convolve(a, b, mode, axes, dot_axes=dot_axes)
    assert type(plain) is np.ndarray
    np.testing.assert_allclose(plain, want, rtol=1e-12, atol=1e-12)
    check_derivatives(lambda x, y: signal.convolve(x, y, mode, axes, dot_axes=dot_axes), [a, b])


def test_plain_arrays_are_scipys_result():
    a, b = _r(6, 4), _r(3, 3)
    for mode in ("full", "same", "valid"):
        got = signal.convolve(a, b, mode)
        want = sps.convolve(a, b, mode)
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        signal.convolve(a, b, "full", "direct"), sps.convolve(a, b, "full", "direct")
    )


def test_second_order_and_trace_replay():
    a, b = _r(4, 3), _r(2, 2)

    def f(x, k):
        y = signal.convolve(x, k, "same")
        return tg.numpy.sum(y * y * y)

    H = tg.hessian(f)(a, b)
    g = tg.grad(f)
    fd = np.stack(
        [
            (g(a + 1e-6 * e.reshape(a.shape), b) - g(a - 1e-6 * e.reshape(a.shape), b)) / 2e-6
            for e in np.eye(a.size)
        ],
        -1,
    )
    np.testing.assert_allclose(
        H.reshape(a.size, a.size), fd.reshape(a.size, a.size), rtol=1e-5, atol=1e-6
    )
    tr = tg.trace(f, a, b)
    a2, b2 = _r(4, 3), _r(2, 2)
    v, gr = tr.value_and_grad(a2, b2)
    np.testing.assert_allclose(v, f(a2, b2), rtol=1e-12)
    np.testing.assert_allclose(gr, g(a2, b2), rtol=1e-12, atol=1e-14)


def test_bad_arguments_raise():
    x = tg.tensor(_r(3, 3), requires_grad=True)
    with pytest.raises(ValueError, match="same dimensionality"):
        signal.convolve(x, _r(2))
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(x, _r(2, 2), "circular")
    with pytest.raises(ValueError, match="at least as large"):
        signal.convolve(tg.tensor(_r(4, 2), requires_grad=True), _r(2, 4), "valid")
    with pytest.raises(ValueError, match="method"):
        signal.convolve(x, _r(2, 2), method="winograd")


def test_tensors_need_no_scipy():
    """SciPy is an optional extra: without it, the module imports and Tensors convolve."""
    code = (
        "import sys; sys.modules['scipy'] = None; import tapegrad as tg; "
        "from tapegrad.scipy import signal; "
        "y = signal.convolve(tg.tensor([1.0, 2.0], requires_grad=True), [1.0, 1.0]); "
        "assert y.tolist() == [1.0, 3.0, 2.0], y"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
