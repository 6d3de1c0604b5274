"""A function's Tensor methods mean PyTorch's when it is called with Tensors and NumPy's when
called with NumPy values (``x.std()``: unbiased, or NumPy's biased one).  A trace keeps the
meaning it was recorded with: a retrace at NumPy arguments of a trace made with Tensors
recorded NumPy's program (a replay across the branch gave NumPy's std, 1.979 for 2.168), and
``tg.traced`` kept one trace for both kinds of arguments (NumPy values got PyTorch's std)."""

import numpy as np

import tapegrad as tg

A = np.arange(6.0)
B = np.array([1.0, 5.0, 2.0, 7.0, 3.0, 3.0])


def f(u):
    return u.std() if u[0] > 0.5 else 2.0 * u.std()


def test_a_retrace_keeps_the_meaning_of_the_recording():
    tr = tg.trace(f, tg.tensor(A), retrace=True)
    np.testing.assert_allclose(tr(B), f(tg.tensor(B)).item(), rtol=1e-14)  # across the branch
    assert tr.retraces == 1
    tr = tg.trace(f, A, retrace=True)
    np.testing.assert_allclose(tr(tg.tensor(B)), np.std(B), rtol=1e-14)


def test_traced_keeps_one_trace_per_meaning():
    for first in (tg.tensor(A), A):
        t = tg.traced(lambda u: u.std())
        t(first)
        np.testing.assert_allclose(t(A), np.std(A), rtol=1e-14)
        np.testing.assert_allclose(t(tg.tensor(A)), np.std(A, ddof=1), rtol=1e-14)
        np.testing.assert_allclose(t.grad(A), tg.grad(np.std)(A), rtol=1e-14)
