"""tg.optim: SGD and Adam against their published update rules (written out by hand below)
on a fixed sequence of gradients, to 1e-12."""

import math

import numpy as np
import pytest

import tapegrad as tg

P0 = np.array([[0.5, -1.0, 2.0], [0.25, 0.0, -3.0]])
GRADS = [np.random.default_rng(i).standard_normal(P0.shape) * (i + 1) for i in range(6)]


def run(opt_cls, p0=P0, grads=GRADS, **kw):
    """Apply ``grads`` one step each; returns the parameter values after every step."""
    p = tg.tensor(p0, requires_grad=True)
    opt = opt_cls([p], **kw)
    out = []
    for g in grads:
        opt.zero_grad()
        p.grad = tg.tensor(g)
        opt.step()
        out.append(np.array(p.numpy(), dtype=float))
    return out


def close(actual, expect):
    for a, e in zip(actual, expect, strict=True):
        np.testing.assert_allclose(a, e, rtol=0, atol=1e-12)


def test_sgd_plain():
    p, expect = P0.copy(), []
    for g in GRADS:
        p = p - 0.1 * g
        expect.append(p)
    close(run(tg.optim.SGD, lr=0.1), expect)


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_sgd_momentum_and_weight_decay(wd):
    mu, lr = 0.9, 0.05
    p, b, expect = P0.copy(), None, []
    for g in GRADS:
        g = g + wd * p
        b = g.copy() if b is None else mu * b + g
        p = p - lr * b
        expect.append(p)
    close(run(tg.optim.SGD, lr=lr, momentum=mu, weight_decay=wd), expect)


def test_sgd_dampening_and_nesterov():
    mu, lr, damp = 0.8, 0.1, 0.3
    p, b, expect = P0.copy(), None, []
    for g in GRADS:
        b = g.copy() if b is None else mu * b + (1 - damp) * g
        p = p - lr * b
        expect.append(p)
    close(run(tg.optim.SGD, lr=lr, momentum=mu, dampening=damp), expect)
    p, b, expect = P0.copy(), None, []
    for g in GRADS:
        b = g.copy() if b is None else mu * b + g
        p = p - lr * (g + mu * b)
        expect.append(p)
    close(run(tg.optim.SGD, lr=lr, momentum=mu, nesterov=True), expect)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adam_matches_published_rule(wd):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    p = P0.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    expect = []
    for t, g in enumerate(GRADS, start=1):
        g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        expect.append(p)
    close(run(tg.optim.Adam, lr=lr, weight_decay=wd), expect)


def test_adam_defaults_and_custom_betas():
    opt = tg.optim.Adam([tg.tensor([1.0], requires_grad=True)])
    assert opt.defaults["lr"] == 1e-3 and opt.defaults["betas"] == (0.9, 0.999)
    assert opt.defaults["eps"] == 1e-8
    # first Adam step moves every coordinate by about lr (m_hat / sqrt(v_hat) = sign(g))
    out = run(tg.optim.Adam, grads=GRADS[:1], lr=0.5, betas=(0.5, 0.75), eps=0.0)
    np.testing.assert_allclose(out[0], P0 - 0.5 * np.sign(GRADS[0]), rtol=0, atol=1e-12)


def test_scalar_parameter_and_missing_grad_skipped():
    w = tg.tensor(2.0, requires_grad=True)
    u = tg.tensor([1.0, 1.0], requires_grad=True)
    opt = tg.optim.SGD([w, u], lr=0.25, momentum=0.5)
    for _ in range(2):
        opt.zero_grad()
        (w * w).backward()
        opt.step()
    # b1 = 4, w = 1;  g = 2, b2 = 0.5 * 4 + 2 = 4, w = 0
    assert w.item() == 0.0 and isinstance(w.item(), float)
    np.testing.assert_array_equal(u.numpy(), [1.0, 1.0])
    assert u.grad is None


def test_param_groups_with_own_learning_rates():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([1.0], requires_grad=True)
    opt = tg.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    (a + b).sum().backward()
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.9])
    np.testing.assert_allclose(b.numpy(), [0.5])
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["lr"] == 0.1


def test_step_invalidates_tape_copy_of_parameter():
    p = tg.tensor([1.0, 2.0], requires_grad=True)
    keep = p * 3.0  # keeps p's row on the live tape
    p.grad = tg.tensor([1.0, 1.0])
    tg.optim.SGD([p], lr=0.5).step()
    np.testing.assert_array_equal(p.numpy(), [0.5, 1.5])
    p.grad = None
    (p * p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 3.0])
    del keep


def test_optimizer_argument_errors():
    p = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty"):
        tg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        tg.optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        tg.optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError, match="beta"):
        tg.optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="requires_grad"):
        tg.optim.Adam([tg.tensor([1.0])])
    with pytest.raises(ValueError, match="Nesterov"):
        tg.optim.SGD([p], lr=0.1, nesterov=True)


def test_training_loop_converges_with_module():
    tg.manual_seed(0)
    lin = tg.nn.Linear(3, 1)
    x = np.random.default_rng(0).standard_normal((64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.25
    opt = tg.optim.Adam(lin.parameters(), lr=0.1)
    for _ in range(300):
        opt.zero_grad()
        loss = tg.nn.functional.mse_loss(lin(x), y)
        loss.backward()
        opt.step()
    np.testing.assert_allclose(lin.weight.numpy().ravel(), [1.0, -2.0, 0.5], atol=1e-4)
    assert lin.bias.item() == pytest.approx(0.25, abs=1e-4)
    assert math.isfinite(loss.item()) and loss.item() < 1e-8


def test_a_one_element_tensor_learning_rate_is_its_number():
    """PyTorch takes lr=torch.tensor(0.1): the same steps as lr=0.1 (an error that named
    numpy.subtract's out= before)."""
    for opt in (tg.optim.SGD, tg.optim.Adam):
        a = tg.tensor([1.0, 2.0], requires_grad=True)
        b = tg.tensor([1.0, 2.0], requires_grad=True)
        oa, ob = opt([a], lr=tg.tensor(0.1)), opt([b], lr=0.1)
        for _ in range(3):
            for p, o in ((a, oa), (b, ob)):
                o.zero_grad()
                (p * p).sum().backward()
                o.step()
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with pytest.raises(TypeError, match="lr must be a number"):
        tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=tg.tensor(0.1, requires_grad=True))
