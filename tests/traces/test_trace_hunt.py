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


_W0 = [1.0, -2.0, 0.5, 3.0]
W = tg.tensor(_W0)  # read from f's closure, no requires_grad (data, a mask, a buffer)
CLOSURE = {
    "branch": lambda x: np.sum(x) if W.sum() > 0 else np.sum(x * x),
    "sort": lambda x: np.sum(np.sort(W) * x),
    "median": lambda x: np.median(W) * np.sum(x),
    "clip": lambda x: np.sum(np.clip(x, W - 1, W + 1)),
    "abs": lambda x: np.sum(np.abs(W) * x),
    "item": lambda x: np.sum(x) * W[0].item(),
    "solve": lambda x: np.sum(np.linalg.solve(np.diag(W), x)),
    "direct": lambda x: np.sum(x * W),
}


NEW_W = [[-1.0, 2.0, -0.5, -3.0], [3.0, 0.5, -2.0, 1.2], [0.25, 0.25, 4.0, -1.0]]


@pytest.mark.parametrize("name", sorted(CLOSURE))
@pytest.mark.parametrize("new", NEW_W)
def test_closure_tensor_without_grad_changed_in_place_is_never_replayed_stale(name, new):
    f = CLOSURE[name]
    x = np.array([0.39, -1.56, 2.73, 0.91])
    try:
        W[:] = np.array(_W0)
        tr = tg.trace(f, x)
        tr_re = tg.trace(f, x, retrace=True)
        traced = tg.traced(f)
        traced.value_and_grad(x)
        W[:] = np.array(new)  # what a data loader or a buffer update does between calls
        if name == "direct":  # W is an operand of a recorded op: read at every replay
            assert _agree_or_refuse(tr, f, x)
        else:
            with pytest.raises(tg.RetraceRequired, match="closure"):
                tr.value_and_grad(x)  # (np.sort(W) was [-2, .5, 1, 3] at the recording)
        want = tg.value_and_grad(f)(x)
        for got in (tr_re.value_and_grad(x), traced.value_and_grad(x)):
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
            np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
        W[:] = np.array(_W0)  # back to the recorded value: the first trace replays again
        assert _agree_or_refuse(tr, f, x * 2.0)
    finally:
        W[:] = np.array(_W0)


def test_closure_tensors_are_found_through_objects_partials_and_called_functions():
    import functools

    class Scaler:
        def __init__(self):
            self.b = tg.tensor([2.0, -1.0])

        def __call__(self, x):
            return x * np.sort(self.b)

    s = Scaler()
    box = {"w": tg.tensor([1.0, 3.0])}

    def helper(x):
        return x * np.max(box["w"])

    fs = [
        lambda x: np.sum(s(x)),
        functools.partial(lambda x, k: np.sum(x * np.sort(k)), k=s.b),
        lambda x: np.sum(helper(x)),
    ]
    for f, changed in zip(fs, [s.b, s.b, box["w"]], strict=True):
        tr = tg.trace(f, np.array([1.0, 2.0]))
        old = changed.numpy().copy()
        changed[:] = -old
        try:
            with pytest.raises(tg.RetraceRequired):
                tr(np.array([1.0, 2.0]))
        finally:
            changed[:] = old
        assert tr(np.array([1.0, 2.0])) == pytest.approx(f(np.array([1.0, 2.0])))
