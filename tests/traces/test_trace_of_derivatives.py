"""A trace of a function that itself differentiates (``tg.trace(tg.grad(f))``,
``tg.hessian``, ``tg.jacobian``, ``tg.jvp`` inside the traced function) replayed at inputs
on the other side of a kink.  The derivative rules that run on Tensors there read choices
from the values: which side of a kink (the ``where`` conditions of relu's, clip's, maximum's
partials) and which entry is a max's (the tie weights of max / min).  Those choices are
guards of the trace, so a replay never reuses the recorded ones: with ``retrace=True`` it
records again and gives the eager derivative, without it raises ``RetraceRequired``.  (The
choices were baked in: ``tg.trace(tg.grad(sum relu), [-1, 2])([2, -1])`` gave [0, 1].)
The reference is the same transform called eagerly."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

A = np.array([3.0, -1.0, 2.0, 0.5])
B = np.array([-2.0, 4.0, 1.0, 0.7])  # every kink crossed, another entry the max

PROGRAMS = {
    "relu": lambda u: tg.relu(u).sum(),
    "maximum with a number": lambda u: np.maximum(u, 0.6).sum(),
    "clip": lambda u: np.clip(u, 0.0, 1.0).sum(),
    "relu times u": lambda u: (np.maximum(u, 0.0) * u).sum(),
    "max": lambda u: np.max(u),
    "min": lambda u: np.min(u),
    "max along an axis": lambda u: np.max(u.reshape(2, 2), axis=1).sum(),
    "inf norm": lambda u: np.linalg.norm(u, np.inf),
    "ptp": lambda u: np.ptp(u),
    "max times u": lambda u: np.max(u) * (u * u).sum(),
    "stable logsumexp": lambda u: np.max(u) + np.log(np.sum(np.exp(u - np.max(u)))),
    "abs": lambda u: np.abs(u).sum(),
}
TRANSFORMS = {
    "grad": tg.grad,
    "hessian": tg.hessian,
    "jacobian": tg.jacobian,
    "jvp": lambda f: lambda u: tg.jvp(f, (u,), (np.arange(1.0, 5.0),))[1],
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_a_replay_across_a_kink_records_again(name, transform):
    g = TRANSFORMS[transform](PROGRAMS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tr = tg.trace(g, A, retrace=True)
        for x in (B, A, B * 2.0, -A):
            np.testing.assert_allclose(np.asarray(tr(x)), np.asarray(g(x)), rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "name", ["relu", "clip", "max", "max along an axis", "inf norm", "ptp", "relu times u"]
)
def test_without_retrace_a_replay_across_a_kink_refuses(name):
    tr = tg.trace(tg.grad(PROGRAMS[name]), A)
    np.testing.assert_allclose(np.asarray(tr(A * 1.5)), tg.grad(PROGRAMS[name])(A * 1.5))
    with pytest.raises(tg.RetraceRequired, match="another branch"):
        tr(B)


def test_the_reported_relu_case():
    g = tg.trace(tg.grad(lambda u: tg.relu(u).sum()), np.array([-1.0, 2.0]), retrace=True)
    np.testing.assert_array_equal(np.asarray(g(np.array([2.0, -1.0]))), [1.0, 0.0])
    h = tg.trace(tg.hessian(lambda u: (tg.relu(u) * u).sum()), np.array([-1.0, 2.0]), retrace=True)
    np.testing.assert_array_equal(np.asarray(h(np.array([2.0, -1.0]))), [[2.0, 0.0], [0.0, 0.0]])
