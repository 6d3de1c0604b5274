"""A backward does not clear the adjoint buffer first: a sweep zeroes each row at its first
contribution (the compiled sweeps, the whole-array NumPy sweep and the Python twin alike, and
the Python that writes adjoints: seeds, large matmuls, custom Functions, checkpoints).  So
whatever the buffer held before a backward must never reach a gradient, and rows a backward
does not reach keep what they hold (it costs what it reaches, not the tape below it)."""

import numpy as np
import pytest
from custom_functions import Cube
from fresh_tape import on_fresh_tape

import tapegrad as tg
from tapegrad.kernels import loader

from op_cases import ALL_CASES, CASES

rng = np.random.default_rng(5)


def _weights(shape):
    """Fixed weights for a non-trivial seed of a non-scalar output."""
    return np.linspace(0.5, 1.5, int(np.prod(shape, dtype=int))).reshape(shape)


def _gradients(fn, inputs, poison):
    leaves = [tg.tensor(a, requires_grad=True) for a in inputs]
    out = fn(*leaves)
    loss = (out * _weights(out.shape)).sum() if out.ndim else out
    if poison:  # every adjoint, of every row, holds NaN before the backward
        tg.current_tape().adj[:] = np.nan
    loss.backward()
    return [None if x.grad is None else x.grad.numpy() for x in leaves]


def _same(fn, inputs, label):
    want = _gradients(fn, inputs, poison=False)
    got = _gradients(fn, inputs, poison=True)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        assert (w is None) == (g is None), f"{label}: input {k}"
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-300, err_msg=f"{label}: {k}")


@pytest.mark.parametrize("c", ALL_CASES, ids=[f"{c.op}-{c.label}" for c in ALL_CASES])
def test_no_case_reads_an_adjoint_its_sweep_did_not_write(c):
    with np.errstate(all="ignore"):
        _same(c.fn, c.inputs, f"{c.op} {c.label}")


@pytest.mark.parametrize("mode", ["python", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_python_sweeps_zero_what_they_reach_too(name, mode):
    # the twin (row by row) and the whole-array NumPy sweep that run while kernels compile
    fn, inputs = CASES[name]
    with loader.mode(mode), np.errstate(all="ignore"):
        _same(fn, inputs, f"{name} ({mode})")


@pytest.mark.parametrize("mode", ["eager", "numpy"])
def test_large_matmuls_custom_functions_checkpoints_and_several_roots(mode):
    X = rng.standard_normal((64, 100))  # X @ W: large enough for NumPy's BLAS
    W0 = rng.standard_normal((100, 80)) * 0.1
    v0 = rng.standard_normal(80)

    def run(poison):
        W = tg.tensor(W0, requires_grad=True)
        v = tg.tensor(v0, requires_grad=True)
        h = tg.relu(tg.tensor(X) @ W + v)
        c = Cube.apply(h[:3] * 0.5)
        k = tg.checkpoint(lambda a: tg.sin(a) * a, h[3:6])
        y1 = (c * c).sum() + k.sum()
        y2 = (h * v).sum()  # a second root sharing rows with the first
        if poison:
            tg.current_tape().adj[:] = np.nan
        tg.autograd.backward([y1, y2, y1])  # y1 twice: its seed is added, not written over
        return W.grad.numpy(), v.grad.numpy()

    with loader.mode(mode):
        want, got = run(False), run(True)
    for w, g in zip(want, got, strict=True):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_hooks_retained_gradients_and_a_transform_into_inputs():
    def run(poison):
        x = tg.tensor([0.3, -1.2, 2.0], requires_grad=True)
        y = tg.exp(x) * x
        y.retain_grad()
        y.register_hook(lambda g: g * 2.0)
        z = (y * y).sum()
        if poison:
            tg.current_tape().adj[:] = np.nan
        z.backward()
        g = tg.grad(lambda a: np.sum(np.tanh(a) * a))(np.array([0.1, 0.7]))
        return x.grad.numpy(), y.grad.numpy(), g

    for w, g in zip(run(False), run(True), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13)


@on_fresh_tape
def test_a_backward_leaves_the_adjoints_of_rows_it_does_not_reach_alone():
    # a held graph below (never swept by the loop's backward) keeps what its adjoints hold
    x = tg.tensor(rng.standard_normal(1000), requires_grad=True)
    held = tg.tanh(x) * 2.0
    t = tg.current_tape()
    lo, hi = int(t.voff[held._row]), int(t.voff[held._row + 1])
    t.adj[lo:hi] = 7.0
    w = tg.tensor(0.5, requires_grad=True)
    (w * 3.0).backward(retain_graph=True)  # (kept: the tape stays as it is)
    assert tg.current_tape() is t
    np.testing.assert_array_equal(t.adj[lo:hi], 7.0)
    assert w.grad.item() == 3.0
    held.sum().backward()  # the held graph still gives its gradient
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (1 - np.tanh(x.numpy()) ** 2), rtol=1e-12)
