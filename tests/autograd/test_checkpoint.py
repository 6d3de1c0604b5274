import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)
W0 = rng.standard_normal((4, 4)) * 0.5
X0 = rng.standard_normal((3, 4))


def _run(use_checkpoint):
    W = tg.tensor(W0, requires_grad=True)  # read by the block through its closure

    def block(h):
        for _ in range(4):
            h = tg.tanh(h @ W) + h * 0.5
        return h

    x = tg.tensor(X0, requires_grad=True)
    h = x * 2.0
    start = tg.current_tape().nbytes
    for _ in range(2):  # the same block checkpointed twice
        h = tg.checkpoint(block, h) if use_checkpoint else block(h)
    nbytes = tg.current_tape().nbytes - start
    (h**2).sum().backward()
    return x.grad.numpy(), W.grad.numpy(), nbytes


def test_gradients_equal_and_tape_is_smaller():
    gx, gw, plain_bytes = _run(False)
    cx, cw, ck_bytes = _run(True)
    np.testing.assert_allclose(cx, gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cw, gw, rtol=1e-12, atol=1e-12)
    assert ck_bytes < plain_bytes / 3


def test_checkpoint_grad_fn_and_autograd_grad():
    x = tg.tensor([0.3, -0.7], requires_grad=True)
    y = tg.checkpoint(lambda v: tg.sin(v) * v, x)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    (g,) = tg.autograd.grad(y.sum(), x)
    xv = np.array([0.3, -0.7])
    np.testing.assert_allclose(g.numpy(), np.cos(xv) * xv + np.sin(xv))


def test_checkpoint_two_outputs_and_gradcheck():
    def f(a, b):
        return tg.exp(a) * b, a - b

    assert tg.gradcheck(
        lambda a, b: (lambda p, q: (p * q).sum())(*tg.checkpoint(f, a, b)),
        [np.array([0.1, 0.4]), np.array([-0.3, 0.9])],
    )


def test_checkpoint_double_backward():
    x = tg.tensor(0.7, requires_grad=True)
    y = tg.checkpoint(lambda v: tg.sin(v) * v, x)
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    (g2,) = tg.autograd.grad(g, x)
    assert g2.item() == pytest.approx(-np.sin(0.7) * 0.7 + 2 * np.cos(0.7))


def test_checkpoint_repeats_randomness():
    tg.manual_seed(3)
    x = tg.tensor(np.ones(5), requires_grad=True)
    y = tg.checkpoint(lambda v: v * tg.rand(5), x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy())


def test_checkpoint_under_no_grad_just_calls():
    x = tg.tensor([1.0], requires_grad=True)
    with tg.no_grad():
        y = tg.checkpoint(lambda v: v * 2, x)
    assert y.grad_fn is None and y.numpy()[0] == 2.0


def test_forward_mode_through_checkpoint_recomputes():
    W = tg.tensor(np.array([[0.5, -1.0], [2.0, 0.3]]), requires_grad=True)

    def block(x):
        return tg.tanh(x @ W) * x

    def f(x):
        return (tg.checkpoint(block, x) ** 2).sum()

    def g(x):
        return (block(x) ** 2).sum()

    x, v = np.array([0.3, -0.8]), np.array([1.0, 0.5])
    with tg.no_grad():  # (arrays: with recording on, results reading W are Tensors of it)
        assert tg.jvp(f, (x,), (v,))[1] == pytest.approx(tg.jvp(g, (x,), (v,))[1], rel=1e-12)
        np.testing.assert_allclose(tg.hvp(f, (x,), (v,)), tg.hvp(g, (x,), (v,)), rtol=1e-12)
        jj = tg.jvp(lambda y: tg.jvp(f, (y,), (v,))[1], (x,), (v,))[1]  # nested: Tensor rules
        assert jj == pytest.approx(tg.jvp(lambda y: tg.jvp(g, (y,), (v,))[1], (x,), (v,))[1])
        np.testing.assert_allclose(tg.hessian(f)(x), tg.hessian(g)(x), rtol=1e-12)


_DEPENDENT_INPUTS = {
    "an argument made from another": lambda x, cp: cp(lambda a, c: a * c, x, x * 3.0),
    "an argument made from a closure leaf": lambda x, cp: cp(lambda a: a * x, x * 2.0),
    "exp of the other argument": lambda x, cp: cp(lambda a, c: a * c * c, x, tg.exp(x)),
    "two chained checkpoints": lambda x, cp: cp(lambda b: b * x, cp(lambda a: a * 1.5, x)),
}


@pytest.mark.parametrize("case", list(_DEPENDENT_INPUTS))
def test_create_graph_through_a_checkpoint_whose_inputs_depend_on_each_other(case):
    """The recomputed block hands each input its partial gradient; the outer sweep carries a
    derived input's share through its own history once (the block's total derivative,
    through that history too, counted it twice: 18 for 12 in the first case)."""
    make = _DEPENDENT_INPUTS[case]
    got, want = [], []
    for cp, out in ((tg.checkpoint, got), (lambda f, *a: f(*a), want)):
        x = tg.tensor([2.0, -0.5], requires_grad=True)
        (g,) = tg.autograd.grad(make(x, cp).sum(), x, create_graph=True)
        g.sum().backward()
        out += [g.detach().numpy(), x.grad.numpy()]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    h = tg.hessian(lambda v: make(v, tg.checkpoint).sum())(np.array([2.0, -0.5]))
    np.testing.assert_allclose(
        h, tg.hessian(lambda v: make(v, lambda f, *a: f(*a)).sum())(np.array([2.0, -0.5]))
    )


# ---- a recomputation that differs from the forward pass raises ---------------------------
# (fn reads something changed after the forward, or draws other random numbers: the gradient
# would be that of other values; the recomputed outputs are compared with the recorded ones)


def _block_reading(cfg):
    return lambda a: tg.sin(a * cfg["k"])


def _backward(y, x):
    y.sum().backward()


def _grad_create_graph(y, x):
    tg.autograd.grad(y.sum(), [x], create_graph=True)


@pytest.mark.parametrize("how", [_backward, _grad_create_graph], ids=lambda f: f.__name__[1:])
def test_state_changed_between_forward_and_backward_raises(how):
    cfg = {"k": 2.0}
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    y = tg.checkpoint(_block_reading(cfg), x)
    cfg["k"] = 5.0
    with pytest.raises(RuntimeError, match="checkpoint: recomputing .* other values"):
        how(y, x)
    cfg["k"] = 2.0  # unchanged again: the same graph differentiates
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([1.0, 3.0]), rtol=1e-14)


@pytest.mark.parametrize("nested", [False, True], ids=["jvp", "nested-jvp"])
def test_state_changed_inside_f_raises_in_forward_mode(nested):
    def f(x):
        cfg = {"k": 2.0}
        y = tg.checkpoint(_block_reading(cfg), x)
        cfg["k"] = 5.0  # before forward mode recomputes the block
        return y.sum()

    x, v = np.array([0.5, 1.5]), np.array([1.0, -1.0])
    with pytest.raises(RuntimeError, match="checkpoint: recomputing"):
        if nested:
            tg.jvp(lambda y: tg.jvp(f, (y,), (v,))[1], (x,), (v,))
        else:
            tg.jvp(f, (x,), (v,))


@pytest.mark.parametrize("how", [_backward, _grad_create_graph], ids=lambda f: f.__name__[1:])
def test_recomputed_output_of_another_shape_raises(how):
    # the same values in another shape (the flat values alone would match)
    cfg = {"shape": (2, 3)}
    x = tg.tensor(np.arange(6.0), requires_grad=True)
    y = tg.checkpoint(lambda a: a.reshape(cfg["shape"]) * 2.0, x)
    cfg["shape"] = (3, 2)
    with pytest.raises(RuntimeError, match=r"checkpoint: .*shape \(3, 2\), not \(2, 3\)"):
        how(y, x)


def test_random_draws_not_repeated_raise():
    x = tg.tensor(np.ones(5), requires_grad=True)
    y = tg.checkpoint(lambda v: v * tg.rand(5), x, preserve_rng_state=False)
    with pytest.raises(RuntimeError, match="preserve_rng_state=True"):
        y.sum().backward()


def test_nan_and_inf_outputs_recompute_as_themselves():
    x = tg.tensor([0.0, 1.0, -1.0], requires_grad=True)
    with np.errstate(all="ignore"):
        y = tg.checkpoint(lambda a: tg.log(a) * a, x)  # -inf * 0 = nan, 0, nan
        y.sum().backward()
    assert np.isnan(x.grad.numpy()[[0, 2]]).all() and x.grad.numpy()[1] == 1.0


@pytest.mark.parametrize("order", ["first", "create_graph", "forward_mode"])
def test_non_tensor_outputs_pass_through(order):
    """A count or None beside the Tensors is returned as it is (as PyTorch's checkpoint does);
    the Tensors' derivatives are those without checkpointing, at every position."""
    xv = np.array([0.5, 1.5])

    def block(a):
        return None, tg.sin(a), 3, a * a

    def f(a):
        none, s, three, sq = tg.checkpoint(block, a)
        assert none is None and three == 3
        return (s * sq).sum()

    # d/dx sum(sin(x) x^2) and the second derivative's diagonal
    d1 = np.cos(xv) * xv**2 + 2 * xv * np.sin(xv)
    d2 = -np.sin(xv) * xv**2 + 4 * xv * np.cos(xv) + 2 * np.sin(xv)
    if order == "first":
        x = tg.tensor(xv, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), d1, rtol=1e-13)
    elif order == "create_graph":
        x = tg.tensor(xv, requires_grad=True)
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), d1, rtol=1e-13)
        g.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), d2, rtol=1e-12)
    else:
        _, t = tg.jvp(f, (xv,), (np.array([1.0, 0.0]),))
        np.testing.assert_allclose(t, d1[0], rtol=1e-13)
        np.testing.assert_allclose(np.diag(tg.hessian(f)(xv)), d2, rtol=1e-12)


def test_container_of_tensors_as_output_raises():
    """Tensors inside a list would be the scratch recording's, whose graph is gone."""
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    with pytest.raises(TypeError, match="returned a list holding Tensors"):
        tg.checkpoint(lambda a: [tg.sin(a)], x)
