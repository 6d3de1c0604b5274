"""A backward into given inputs sweeps only from their lowest row up: rows below cannot depend
on them.  What that must not change: gradients, the graphs held below (neither freed nor
cleared), and the large-row adjoint shortcuts above."""

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg

rng = np.random.default_rng(11)


@on_fresh_tape
def test_a_transform_above_a_held_graph_gives_its_gradient_and_leaves_the_graph_intact():
    W = tg.tensor(rng.standard_normal((30, 20)), requires_grad=True)
    X = tg.tensor(rng.standard_normal((40, 30)))
    held = tg.tanh(X @ W).sum()  # recorded below every call, never swept by them
    v0 = np.linspace(0.1, 1.0, 50)
    for _ in range(5):
        g = tg.grad(lambda v: np.sum(np.sin(v) * v))(v0)
        np.testing.assert_allclose(g, np.cos(v0) * v0 + np.sin(v0), rtol=1e-14)
    held.backward()
    T = np.tanh(X.numpy() @ W.numpy())
    np.testing.assert_allclose(W.grad.numpy(), X.numpy().T @ (1 - T * T), rtol=1e-12)


@on_fresh_tape
def test_autograd_grad_into_a_mid_graph_tensor_and_large_rows_above_it():
    # large matmuls above the input (their first contribution written by BLAS, their
    # adjoints left uncleared) and a large held graph below it
    A = tg.tensor(rng.standard_normal((80, 60)), requires_grad=True)
    below = (A @ tg.tensor(rng.standard_normal((60, 70)))).sum()  # held, 5,600 values
    h = tg.tanh(A * 0.5)  # the input: a non-leaf row above `below`
    B = tg.tensor(rng.standard_normal((60, 90)))
    out = (tg.relu(h @ B) ** 2).sum()
    (gh,) = tg.autograd.grad(out, [h])
    hv = np.tanh(A.numpy() * 0.5)
    P = hv @ B.numpy()
    np.testing.assert_allclose(gh.numpy(), (2 * np.maximum(P, 0)) @ B.numpy().T, rtol=1e-12)
    below.backward()  # not freed by the sweep above it
    assert A.grad is not None


@on_fresh_tape
def test_state_left_below_the_bottom_by_an_earlier_sweep_frees_nothing():
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    y1 = (tg.exp(x) * 2.0).sum()
    y1.backward(retain_graph=True)  # reached bits set on y1's rows, rows kept
    x.grad = None
    v = tg.tensor([2.0, 3.0], requires_grad=True)
    z = (v * v * y1.detach()).sum()
    (gv,) = tg.autograd.grad(z, [v])  # stops at v's row, above y1's
    np.testing.assert_allclose(gv.numpy(), 2 * np.array([2.0, 3.0]) * y1.item(), rtol=1e-14)
    y1.backward()  # y1's graph was not marked freed by the later, shorter sweep
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.5]), rtol=1e-14)
    with pytest.raises(RuntimeError, match="second time|freed"):
        y1.backward()


@on_fresh_tape
def test_an_input_entered_below_other_rows_still_gets_every_contribution():
    w = tg.tensor([1.0, -2.0], requires_grad=True)
    early = w * 3.0  # w's row is low; the other input is entered later
    u = tg.tensor([0.5, 0.25], requires_grad=True)
    out = (early * u).sum() + (w * w * u).sum()
    gw, gu = tg.autograd.grad(out, [w, u])
    np.testing.assert_allclose(gw.numpy(), 3 * u.numpy() + 2 * w.numpy() * u.numpy())
    np.testing.assert_allclose(gu.numpy(), 3 * w.numpy() + w.numpy() ** 2)


@on_fresh_tape
def test_a_transform_above_a_held_graph_cuts_its_rows_in_place():
    # its rows are cut once its handles are gone, so the tape neither grows nor is retired for
    # a successor on every call (each call retired it while the held graph was below)
    net = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.ReLU(), tg.nn.Linear(16, 3))
    out = net(tg.tensor(rng.standard_normal((5, 8))))
    t, n = tg.current_tape(), len(tg.current_tape())
    v0 = np.array([0.3, 0.6, 0.9])
    for _ in range(20):
        value, g = tg.value_and_grad(lambda v: np.sum(np.exp(v) * v))(v0)
        np.testing.assert_allclose(g, np.exp(v0) * (1 + v0), rtol=1e-14)
    assert tg.current_tape() is t and len(t) == n
    leak = []
    tg.grad(lambda v: leak.append(v * 2.0) or np.sum(leak[-1]))(v0)  # f's handle lives on
    assert len(tg.current_tape()) > n  # its rows stay (the next reclaim sees the handle)
    out.sum().backward()
    assert net[2].bias.grad.tolist() == [5.0, 5.0, 5.0]


def _mid_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    mid = tg.exp(x * 3.0)
    return x, mid, (mid**2).sum()


@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "side-tables"])
@on_fresh_tape
def test_grad_into_a_mid_tensor_leaves_its_own_graph_usable(hooked):
    # as in PyTorch: autograd.grad(out, [mid]) needs no backward of mid itself, so it frees
    # only what lies above mid; a later backward through mid still works (a hook makes the
    # sweep run from row 0: the rows it reached below mid must not be freed either)
    x, mid, out = _mid_graph()
    if hooked:
        x.register_hook(lambda g: g * 1.0)
    (g,) = tg.autograd.grad(out, [mid])
    np.testing.assert_allclose(g.numpy(), 2 * np.exp([3.0, 6.0]), rtol=1e-14)
    mid.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp([3.0, 6.0]), rtol=1e-14)
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()  # the part above mid was freed


@on_fresh_tape
def test_grad_into_a_mid_tensor_and_a_leaf_below_it_frees_mids_graph():
    # mid's own backward was needed for x's gradient: freed, as PyTorch frees it
    x, mid, out = _mid_graph()
    gm, gx = tg.autograd.grad(out, [mid, x])
    np.testing.assert_allclose(gx.numpy(), 6 * np.exp([6.0, 12.0]), rtol=1e-14)
    np.testing.assert_allclose(gm.numpy(), 2 * np.exp([3.0, 6.0]), rtol=1e-14)
    with pytest.raises(RuntimeError, match="second time"):
        mid.sum().backward()
