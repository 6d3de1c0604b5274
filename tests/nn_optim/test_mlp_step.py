"""An MLP training step's values: large matmuls (run with NumPy's BLAS, writing into the adjoint
buffer), adjoints left uncleared for rows only matmuls add into, and the in-place optimizer
update computed into the parameter's array."""

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg
from tapegrad.core.tensor import record, row_of
from tapegrad.ops.spec import C
from tapegrad.ops.structural import SMALL_MATMUL

RNG = np.random.default_rng(7)
# 32 x 96 x 64 and 32 x 64 x 64 matmuls are past SMALL_MATMUL: they take the BLAS path
SHAPES = [(96, 64), (64,), (64, 64), (64,), (64, 5), (5,)]
assert 32 * 64 * 64 > SMALL_MATMUL


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((32, 96))
    y = rng.integers(0, 5, 32)
    P = [rng.standard_normal(s) * 0.3 for s in SHAPES]
    return X, y, P


def _loss(X, y, P):
    W1, b1, W2, b2, W3, b3 = P
    a1 = tg.relu(X @ W1 + b1)
    a2 = tg.relu(a1 @ W2 + b2)
    z = a2 @ W3 + b3
    return -tg.log_softmax(z, axis=1)[np.arange(X.shape[0]), y].mean()


def _numpy_grads(X, y, P):
    """The hand-written backward of _loss, layer by layer."""
    Ws, bs = P[0::2], P[1::2]
    ins, pre = [X], []
    for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        pre.append(ins[-1] @ W + b)
        ins.append(np.maximum(pre[-1], 0) if k < 2 else pre[-1])
    z = ins[-1]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    n = X.shape[0]
    d = p.copy()
    d[np.arange(n), y] -= 1
    d /= n
    grads = [None] * 6
    for k in (2, 1, 0):
        grads[2 * k], grads[2 * k + 1] = ins[k].T @ d, d.sum(0)
        if k:
            d = (d @ Ws[k].T) * (pre[k - 1] > 0)
    return grads


def test_mlp_gradients_match_the_hand_written_backward():
    X, y, P = _data()
    Pt = [tg.tensor(p, requires_grad=True) for p in P]
    _loss(tg.tensor(X), y, Pt).backward()
    for p, g in zip(Pt, _numpy_grads(X, y, P), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-10, atol=1e-13)


def test_mlp_gradients_match_finite_differences():
    X, y, P = _data(1)
    Pt = [tg.tensor(p, requires_grad=True) for p in P]
    _loss(tg.tensor(X), y, Pt).backward()
    rng = np.random.default_rng(3)
    eps = 1e-6
    for k, p in enumerate(P):
        for _ in range(3):
            idx = tuple(int(rng.integers(0, d)) for d in p.shape)
            up = [q.copy() for q in P]
            dn = [q.copy() for q in P]
            up[k][idx] += eps
            dn[k][idx] -= eps
            with tg.no_grad():
                fd = (_loss(X, y, up).item() - _loss(X, y, dn).item()) / (2 * eps)
            assert Pt[k].grad.numpy()[idx] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_sgd_steps_match_numpy_and_handed_out_grads_stay_put():
    X, y, P = _data(2)
    Pn = [p.copy() for p in P]
    Pt = [tg.tensor(p, requires_grad=True) for p in P]
    Xt = tg.tensor(X)
    kept = None
    for _ in range(3):
        _loss(Xt, y, Pt).backward()
        grads = [p.grad for p in Pt]
        snapshot = [g.numpy().copy() for g in grads]
        if kept is not None:  # the previous step's .grad tensors were not written over
            for g, s in zip(*kept, strict=True):
                np.testing.assert_array_equal(g.numpy(), s)
        kept = (grads, snapshot)
        with tg.no_grad():
            for p in Pt:
                p -= 0.1 * p.grad
                p.grad = None
        for p, g in zip(Pn, _numpy_grads(X, y, Pn), strict=True):
            p -= 0.1 * g
        for p, q in zip(Pt, Pn, strict=True):
            np.testing.assert_allclose(p.numpy(), q, rtol=1e-10, atol=1e-12)
        assert all(p.grad is None for p in Pt)


def test_grads_accumulate_over_two_backwards_of_a_retained_graph():
    X, y, P = _data(3)
    Pt = [tg.tensor(p, requires_grad=True) for p in P]
    loss = _loss(tg.tensor(X), y, Pt)
    loss.backward(retain_graph=True)
    loss.backward()
    for p, g in zip(Pt, _numpy_grads(X, y, P), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g, rtol=1e-10, atol=1e-13)


def test_leaf_read_by_matmuls_and_by_other_ops():
    A = RNG.standard_normal((64, 64))
    B = RNG.standard_normal((64, 64))
    a = tg.tensor(A, requires_grad=True)
    b = tg.tensor(B, requires_grad=True)
    # a is the left operand twice and also feeds a sum; b both operands of one matmul
    y = ((a @ b) * 2.0).sum() + (a @ a).sum() + (a * a).sum() + (b @ b).sum()
    y.backward()
    one = np.ones((64, 64))
    ga = 2 * one @ B.T + one @ A.T + A.T @ one + 2 * A
    gb = 2 * A.T @ one + one @ B.T + B.T @ one
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-10)


def test_grad_of_an_activation_only_a_matmul_reads():
    x = tg.tensor(RNG.standard_normal((64, 64)), requires_grad=True)
    W = RNG.standard_normal((64, 64))
    h = tg.tanh(x)
    loss = (h @ W).sum()
    (gh, gx) = tg.autograd.grad(loss, [h, x])
    np.testing.assert_allclose(gh.numpy(), np.ones((64, 64)) @ W.T, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gh.numpy() * (1 - np.tanh(x.numpy()) ** 2), rtol=1e-12)


def test_matmul_output_as_seeded_root():
    A = RNG.standard_normal((64, 64))
    a = tg.tensor(A, requires_grad=True)
    W = tg.tensor(RNG.standard_normal((64, 64)), requires_grad=True)
    h = a @ W
    z = h @ W  # h is a root below and read by a matmul
    G = RNG.standard_normal((64, 64))
    tg.autograd.backward([z, h], [G, G])
    dh = G @ W.numpy().T + G
    np.testing.assert_allclose(a.grad.numpy(), dh @ W.numpy().T, rtol=1e-10)
    np.testing.assert_allclose(W.grad.numpy(), A.T @ dh + (A @ W.numpy()).T @ G, rtol=1e-10)


def test_linear_and_batched_matmuls_on_the_blas_path():
    x = tg.tensor(RNG.standard_normal((2, 32, 48)), requires_grad=True)
    w = tg.tensor(RNG.standard_normal((40, 48)), requires_grad=True)  # read transposed
    v = tg.tensor(RNG.standard_normal((40, 64)), requires_grad=True)  # broadcast over batch
    y = tg.nn.functional.linear(x, w) @ v
    G = RNG.standard_normal(y.shape)
    y.backward(G)
    X, Wv, V = x.numpy(), w.numpy(), v.numpy()
    dh = G @ V.T
    np.testing.assert_allclose(x.grad.numpy(), dh @ Wv, rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), np.einsum("bmo,bmi->oi", dh, X), rtol=1e-10)
    np.testing.assert_allclose(v.grad.numpy(), np.einsum("bmo,bmn->on", X @ Wv.T, G), rtol=1e-10)


def test_matmul_row_with_a_transposed_left_operand():
    # a matmul row may read its left operand transposed (stored (k, m)); its gradient is
    # written in that layout
    At = RNG.standard_normal((48, 64))  # stored (k, m): the operand is At.T, (64, 48)
    B = RNG.standard_normal((48, 40))
    a = tg.tensor(At, requires_grad=True)
    b = tg.tensor(B, requires_grad=True)
    t = tg.current_tape()
    ra, rb = row_of(t, a), row_of(t, b)
    y = record(t, C.MATMUL, ra, rb, At.T @ B, ip=t.add_ints([1, 64, 48, 40, 1, 0]))
    G = RNG.standard_normal((64, 40))
    y.backward(G)
    np.testing.assert_allclose(a.grad.numpy(), (G @ B.T).T, rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), At @ G, rtol=1e-10)


def test_inplace_update_under_a_recorded_graph():
    P0 = RNG.standard_normal((64, 80))  # large: the tape holds the array itself (lazily)
    W = RNG.standard_normal((80, 70))
    p = tg.tensor(P0, requires_grad=True)
    y = (p * 3.0).sum() + (p @ W).sum()  # neither backward reads p
    with tg.no_grad():
        p -= 1.0
        p *= tg.tensor(np.full(80, 2.0))
    np.testing.assert_allclose(p.numpy(), (P0 - 1.0) * 2.0)
    assert p._version == 2
    y.backward()
    np.testing.assert_allclose(p.grad.numpy(), 3.0 + np.ones((64, 70)) @ W.T)
    # when a backward needs the old value, it raises (as PyTorch), never a wrong number
    p = tg.tensor(P0, requires_grad=True)
    w = tg.tensor(W, requires_grad=True)
    y = (p @ w).sum()
    with tg.no_grad():
        p -= 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_inplace_update_edge_cases():
    with tg.no_grad():
        p = tg.tensor(np.ones(3), requires_grad=True)
        with pytest.raises(RuntimeError, match="in-place update changes shape"):
            p += np.ones((2, 3))
        np.testing.assert_array_equal(p.numpy(), np.ones(3))
        s = tg.tensor(2.0, requires_grad=True)
        s -= 0.5
        assert s.item() == 1.5
        with pytest.warns(RuntimeWarning, match="divide by zero"):  # as x / 0.0 and NumPy's
            p /= 0.0
        assert np.isinf(p.numpy()).all()
        p.data = np.arange(3.0)
        p -= p  # the other operand is the array being written
        np.testing.assert_array_equal(p.numpy(), np.zeros(3))
        q = tg.tensor(np.arange(3))  # integer values take the general path
        q += 1
        assert q.tolist() == [1, 2, 3]


def test_hooks_and_held_grads_on_the_matmul_path():
    X, y, P = _data(4)
    Pt = [tg.tensor(p, requires_grad=True) for p in P]
    seen = []
    Pt[0].register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
    _loss(tg.tensor(X), y, Pt).backward()
    want = _numpy_grads(X, y, P)
    np.testing.assert_allclose(seen[0], want[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(Pt[0].grad.numpy(), 2 * want[0], rtol=1e-10, atol=1e-13)
    held = Pt[2].grad  # accumulated into by the next backward, as in PyTorch
    _loss(tg.tensor(X), y, Pt).backward()
    np.testing.assert_allclose(held.numpy(), 2 * want[2], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(Pt[0].grad.numpy(), 4 * want[0], rtol=1e-10, atol=1e-13)
    g = tg.autograd.grad(_loss(tg.tensor(X), y, Pt), Pt[2])[0]  # .grad is left alone
    np.testing.assert_allclose(g.numpy(), want[2], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(held.numpy(), 2 * want[2], rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize(
    "src, dst",
    [
        ((256,), (8, 256)),
        ((3, 1), (3, 5)),
        ((1, 4, 1), (2, 4, 3)),
        ((), (3, 4)),
        ((2, 1, 3), (2, 5, 3)),
    ],
)
def test_broadcast_view_backward(src, dst):
    x0 = RNG.standard_normal(src)
    w = RNG.standard_normal(dst)
    x = tg.tensor(x0, requires_grad=True)
    (tg.broadcast_to(x, dst) * w).sum().backward()
    lead = len(dst) - len(src)
    axes = tuple(range(lead)) + tuple(
        lead + d for d, s in enumerate(src) if s == 1 and dst[lead + d] != 1
    )
    np.testing.assert_allclose(np.asarray(x.grad.numpy()), w.sum(axis=axes).reshape(src))
    assert tg.gradcheck(lambda a: (tg.broadcast_to(a, dst) * w).sum(), [x0])


def test_strided_view_backward():
    x0 = RNG.standard_normal((5, 6, 7))
    w = RNG.standard_normal((3, 2, 7))

    def f(a):
        return (a[::2, 4:0:-2, ::-1] * w).sum() + a[1, 2, 3] * 3.0 + (a.T[2] ** 2).sum()

    assert tg.gradcheck(f, [x0])
    x = tg.tensor(x0, requires_grad=True)
    f(x).backward()
    want = np.zeros_like(x0)
    want[::2, 4:0:-2, ::-1] += w
    want[1, 2, 3] += 3.0
    want[:, :, 2] += 2 * x0[:, :, 2]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("layers", [1, 12])  # a short tape, and one past the Python analysis
@on_fresh_tape
def test_the_short_and_the_vectorised_handoff_analyses_agree(layers):
    """Which large rows only large matmuls add into (a leaf among them gets its gradient in an
    array of its own) is decided row by row on lists for a short tape and with NumPy for a
    long one: both give the same rows on an MLP's graph (with a transposed weight, a retained
    leaf read elementwise and a seeded matmul output)."""
    from tapegrad.autograd import engine as E

    X, y, P = _data(3)
    Ps = [tg.tensor(p, requires_grad=True) for p in P]
    W1, b1, W2, b2, W3, b3 = Ps
    h = tg.relu(tg.tensor(X) @ W1 + b1)
    for _ in range(layers):
        h = tg.relu(h @ W2 + b2) + 0.1 * (h @ W2.T)
    loss = (h @ W3 + b3).sum() + (W2 * W2).sum()
    t = tg.current_tape()
    top = loss._row
    assert (top < E._SHORT_TAPE) == (layers == 1)
    short = E._large_short(t, top, [top])
    assert short == E._large(t, top, [top])
    assert W1._row in short and tg.tensor(X)._row not in short  # (X entered again: a new row)
    assert W2._row not in short  # W2 * W2 adds into W2's adjoint
