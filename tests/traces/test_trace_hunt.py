"""Replays of functions of several arguments, of closures and of tapegrad.scipy at inputs far
from the recording: each gives eager evaluation's value and gradient there, or refuses
(RetraceRequired); none reuses a count, mask or value the recording read."""

import numpy as np
import pytest

import tapegrad as tg


def _agree_or_refuse(tr, f, *args, argnums=0):
    """The replay equals eager value_and_grad at ``args``, or raises RetraceRequired;
    returns whether it replayed."""
    try:
        got = tr.value_and_grad(*args)
    except tg.RetraceRequired:
        return False
    want = tg.value_and_grad(f, argnums=argnums)(*args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=0)
    for g, w in zip(
        got[1] if isinstance(argnums, tuple) else [got[1]],
        want[1] if isinstance(argnums, tuple) else [want[1]],
        strict=True,
    ):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
    return True


def test_norm_of_order_zero_counts_the_replayed_nonzero_entries():
    f = lambda u, v: np.linalg.norm(u - v, 0) * np.sum(u)  # noqa: E731
    u0, v0 = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    tr = tg.trace(f, u0, v0, argnums=(0, 1))
    assert _agree_or_refuse(tr, f, np.array([-1.0, 2.0, 5.0]), v0, argnums=(0, 1))
    u = np.array([0.0, 2.0, 3.0])  # one entry becomes 0: the count is 2, not the recorded 3
    with pytest.raises(tg.RetraceRequired):
        tr.value_and_grad(u, v0)
    tr = tg.trace(f, u0, v0, argnums=(0, 1), retrace=True)
    v, (gu, gv) = tr.value_and_grad(u, v0)
    assert v == 10.0 and gu.tolist() == [2.0, 2.0, 2.0] and gv.tolist() == [0.0, 0.0, 0.0]
    # along an axis, and with NaN (NaN != 0 counts, as NumPy)
    g = lambda a: np.sum(np.linalg.norm(a, ord=0, axis=1) * a[:, 0])  # noqa: E731
    tr = tg.trace(g, np.array([[1.0, 2.0], [3.0, 4.0]]))
    for a in ([[1.0, 0.0], [3.0, 4.0]], [[np.nan, 2.0], [0.0, 0.0]]):
        with pytest.raises(tg.RetraceRequired):
            tr(np.array(a))
    assert _agree_or_refuse(tr, g, np.array([[-1.0, 5.0], [2.0, -7.0]]))
