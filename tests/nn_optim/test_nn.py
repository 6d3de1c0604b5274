"""tg.nn: Module registration and state, Linear/Sequential, and every functional's values and
gradients (gradcheck on random shapes)."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

RNG = np.random.default_rng(7)


def rand_shape(ndim, lo=1, hi=5):
    return tuple(int(s) for s in RNG.integers(lo, hi, ndim))


# ---- Linear, Sequential, Module -------------------------------------------------------------


def test_linear_forward_equals_numpy():
    tg.manual_seed(0)
    lin = nn.Linear(5, 3)
    x = RNG.standard_normal((4, 5))
    W, b = lin.weight.numpy(), lin.bias.numpy()
    assert W.shape == (3, 5) and b.shape == (3,)  # PyTorch's (out_features, in_features)
    np.testing.assert_allclose(lin(tg.tensor(x)).numpy(), x @ W.T + b, rtol=1e-14)
    np.testing.assert_allclose(lin(x[0]).numpy(), x[0] @ W.T + b, rtol=1e-14)
    nobias = nn.Linear(5, 3, bias=False)
    assert nobias.bias is None and len(list(nobias.parameters())) == 1
    np.testing.assert_allclose(nobias(x).numpy(), x @ nobias.weight.numpy().T, rtol=1e-14)


def test_linear_init_is_pytorch_uniform_and_seeded():
    tg.manual_seed(3)
    a = nn.Linear(100, 50)
    tg.manual_seed(3)
    b = nn.Linear(100, 50)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    np.testing.assert_array_equal(a.bias.numpy(), b.bias.numpy())
    bound = 1 / math.sqrt(100)
    for p in (a.weight.numpy(), a.bias.numpy()):
        assert np.all(np.abs(p) <= bound)
    assert a.weight.numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert a.weight.requires_grad and a.weight.is_leaf


def test_linear_gradients_match_hand_derivation():
    tg.manual_seed(1)
    lin = nn.Linear(4, 2)
    x = RNG.standard_normal((3, 4))
    g = RNG.standard_normal((3, 2))
    (lin(x) * g).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ x, rtol=1e-12)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-12)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = nn.Parameter(np.ones(3))
        self.register_buffer("count", np.zeros(1))
        self.not_a_param = tg.tensor([1.0, 2.0])

    def forward(self, x):
        return self.fc(x) * self.scale


def test_module_registration_names_and_order():
    tg.manual_seed(0)
    net = nn.Sequential(Block(), nn.Tanh(), nn.Linear(3, 2))
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.scale", "0.fc.weight", "0.fc.bias", "2.weight", "2.bias"]
    assert [n for n, _ in net.named_buffers()] == ["0.count"]
    assert len(net) == 3 and isinstance(net[1], nn.Tanh) and len(net[1:]) == 2
    assert list(net.state_dict()) == ["0.scale", "0.count"] + names[1:]
    assert "(0): Block(" in repr(net) and "Linear(in_features=3, out_features=2" in repr(net)


def test_shared_parameter_counted_once_and_attribute_reassignment():
    lin = nn.Linear(2, 2)
    net = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(net.parameters())) == 2
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    lin.extra = nn.Parameter([1.0])
    assert "extra" in dict(lin.named_parameters())
    del lin.extra
    assert "extra" not in dict(lin.named_parameters())


def test_module_before_init_and_missing_attribute_errors():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter([1.0])

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        nn.Linear(1, 1).nothing  # noqa: B018  (the attribute access is what raises)


def test_train_eval_and_zero_grad():
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert net.training and net[0].training
    net.eval()
    assert not net.training and not net[2].training
    net.train()
    assert net[2].training
    net(np.ones((1, 2))).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_state_dict_round_trip():
    tg.manual_seed(0)
    a = nn.Sequential(Block(), nn.ReLU(), nn.Linear(3, 2))
    tg.manual_seed(1)
    b = nn.Sequential(Block(), nn.ReLU(), nn.Linear(3, 2))
    x = RNG.standard_normal((4, 3))
    sd = a.state_dict()
    sd["0.count"] = np.array([5.0])
    params_before = list(b.parameters())
    assert b.load_state_dict(sd) == ([], [])
    assert list(b.parameters()) == params_before  # same Tensor objects, values copied in
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    np.testing.assert_array_equal(b[0].count.numpy(), [5.0])
    # the state dict holds NumPy copies: training a does not change it
    assert all(type(v) is np.ndarray for v in sd.values())
    first = sd["2.weight"].copy()
    with tg.no_grad():
        a[2].weight += 1.0
    np.testing.assert_array_equal(sd["2.weight"], first)


def test_load_state_dict_invalidates_tape_copy_of_parameter():
    lin = nn.Linear(2, 1)
    x = np.array([[1.0, 2.0]])
    keep = lin(x)  # keeps the tape (and the weight's row on it) alive
    lin.load_state_dict({"weight": np.array([[3.0, 4.0]]), "bias": np.array([0.5])})
    out = lin(x)
    assert out.item() == 11.5
    out.backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), [[1.0, 2.0]])
    del keep


def test_load_state_dict_errors():
    lin = nn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="Missing key.*'bias'"):
        lin.load_state_dict({"weight": np.zeros((3, 2))})
    with pytest.raises(RuntimeError, match="Unexpected key.*'extra'"):
        lin.load_state_dict({"weight": np.zeros((3, 2)), "bias": np.zeros(3), "extra": 1.0})
    with pytest.raises(RuntimeError, match="size mismatch for weight") as info:
        lin.load_state_dict({"weight": np.zeros((4, 2)), "bias": np.zeros(3)})
    assert "layout" not in str(info.value)
    missing, unexpected = lin.load_state_dict({"bias": np.ones(3), "x": 1.0}, strict=False)
    assert missing == ["weight"] and unexpected == ["x"]
    np.testing.assert_array_equal(lin.bias.numpy(), np.ones(3))


def test_activation_modules_match_functionals():
    x = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(nn.ReLU()(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh(x), rtol=1e-15)
    np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_allclose(nn.LeakyReLU(0.2)(x).numpy(), np.where(x > 0, x, 0.2 * x))
    np.testing.assert_allclose(nn.Softmax(0)(x).numpy().sum(0), np.ones(4), rtol=1e-14)


# ---- functional: gradients on random shapes ----------------------------------------------------


def away_from_zero(shape):
    x = RNG.uniform(0.1, 2.0, shape)
    return x * RNG.choice([-1.0, 1.0], shape)


UNARY = [
    ("relu", F.relu, away_from_zero),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), away_from_zero),
    ("sigmoid", F.sigmoid, RNG.standard_normal),
    ("tanh", F.tanh, RNG.standard_normal),
    ("softmax_last", lambda x: F.softmax(x, dim=-1), RNG.standard_normal),
    ("softmax_dim0", lambda x: F.softmax(x, dim=0), RNG.standard_normal),
    ("log_softmax", lambda x: F.log_softmax(x, dim=-1), RNG.standard_normal),
    ("log_softmax_dim0", lambda x: F.log_softmax(x, dim=0), RNG.standard_normal),
    ("logsumexp_all", F.logsumexp, RNG.standard_normal),
    ("logsumexp_dim1_keep", lambda x: F.logsumexp(x, dim=1, keepdim=True), RNG.standard_normal),
]


@pytest.mark.parametrize("name,f,sample", UNARY, ids=[u[0] for u in UNARY])
def test_functional_gradcheck(name, f, sample):
    for ndim in (2, 3):
        assert tg.gradcheck(f, [sample(rand_shape(ndim))])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_gradchecks(reduction):
    n, c = rand_shape(2, 2, 6)
    target = RNG.integers(0, c, n)
    assert tg.gradcheck(
        lambda z: F.cross_entropy(z, target, reduction=reduction), [RNG.standard_normal((n, c)) * 3]
    )
    shape = rand_shape(2)
    assert tg.gradcheck(
        lambda a, b: F.mse_loss(a, b, reduction=reduction),
        [RNG.standard_normal(shape), RNG.standard_normal(shape)],
    )
    p = RNG.uniform(0.05, 0.95, shape)
    t = RNG.uniform(0.0, 1.0, shape)
    assert tg.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), [p, t])
    assert tg.gradcheck(
        lambda a: F.binary_cross_entropy_with_logits(a, t, reduction=reduction),
        [away_from_zero(shape)],
    )


# ---- functional: values -------------------------------------------------------------------------


def test_cross_entropy_hand_computed():
    z = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    target = np.array([2, 0])
    expect = (
        (math.log(math.e + math.e**2 + math.e**3) - 3.0)
        + (math.log(math.e + 1.0 + math.exp(-1.0)) - 1.0)
    ) / 2
    zt = tg.tensor(z, requires_grad=True)
    loss = F.cross_entropy(zt, target)
    assert loss.item() == pytest.approx(expect, rel=1e-14)
    loss.backward()
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p[[0, 1], target] -= 1.0
    np.testing.assert_allclose(zt.grad.numpy(), p / 2, rtol=1e-13)
    assert F.cross_entropy(z, target, reduction="sum").item() == pytest.approx(2 * expect)
    per_row = F.cross_entropy(z, target, reduction="none").numpy()
    assert per_row.shape == (2,) and per_row.mean() == pytest.approx(expect, rel=1e-14)
    assert F.cross_entropy(z[0], 2).item() == pytest.approx(per_row[0], rel=1e-14)
    assert nn.CrossEntropyLoss()(z, target).item() == pytest.approx(expect, rel=1e-14)


def test_cross_entropy_is_stable_for_huge_logits():
    z = np.array([[1000.0, 0.0, -1000.0], [-5000.0, -5000.0, -4990.0]])
    zt = tg.tensor(z, requires_grad=True)
    loss = F.cross_entropy(zt, np.array([1, 2]))
    expect = (1000.0 + math.log1p(math.exp(-1000) * 2) + math.log1p(2 * math.exp(-10))) / 2
    assert loss.item() == pytest.approx(expect, rel=1e-14)
    loss.backward()
    assert np.all(np.isfinite(zt.grad.numpy()))
    np.testing.assert_allclose(zt.grad.numpy()[0], [0.5, -0.5, 0.0], atol=1e-15)


def test_cross_entropy_target_errors():
    z = np.zeros((2, 3))
    with pytest.raises(IndexError, match="target 3 is out of bounds"):
        F.cross_entropy(z, np.array([0, 3]))
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(z, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        F.cross_entropy(z, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(z, np.array([0, 1]), reduction="avg")


def test_mse_and_bce_values():
    a = np.array([1.0, 2.0, 4.0])
    b = np.array([0.0, 2.0, 1.0])
    assert F.mse_loss(a, b).item() == pytest.approx(10.0 / 3, rel=1e-15)
    assert F.mse_loss(a, b, reduction="sum").item() == 10.0
    p = np.array([0.9, 0.2, 0.6])
    t = np.array([1.0, 0.0, 1.0])
    expect = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p))
    assert F.binary_cross_entropy(p, t).item() == pytest.approx(expect, rel=1e-14)
    x = np.array([-3.0, 0.5, 8.0])
    s = 1 / (1 + np.exp(-x))
    expect = -np.mean(t * np.log(s) + (1 - t) * np.log1p(-s))
    assert F.binary_cross_entropy_with_logits(x, t).item() == pytest.approx(expect, rel=1e-12)
    assert F.binary_cross_entropy(
        p, t, weight=np.array([1.0, 0.0, 2.0]), reduction="sum"
    ).item() == pytest.approx(-np.log(0.9) - 2 * np.log(0.6), rel=1e-14)


def test_bce_clamps_log_at_minus_100_like_pytorch():
    p = tg.tensor([0.0, 1.0, 1e-60, 0.5], requires_grad=True)
    t = np.array([1.0, 0.0, 1.0, 1.0])
    losses = F.binary_cross_entropy(p, t, reduction="none")
    np.testing.assert_allclose(losses.numpy(), [100.0, 100.0, 100.0, math.log(2)], rtol=1e-15)
    losses.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [0.0, 0.0, 0.0, -2.0], rtol=1e-15)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(np.array([1.5]), np.array([1.0]))


def test_functional_dim_and_axis_aliases():
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(F.softmax(x, axis=0).numpy(), F.softmax(x, dim=0).numpy())
    np.testing.assert_allclose(
        F.log_softmax(x).numpy(), x - np.log(np.exp(x).sum(1, keepdims=True)), rtol=1e-13
    )
    np.testing.assert_allclose(F.logsumexp(x, dim=1).numpy(), np.log(np.exp(x).sum(1)), rtol=1e-14)
    with pytest.raises(TypeError, match="not both"):
        F.softmax(x, dim=0, axis=1)


def test_mlp_training_step_matches_numpy_gradients():
    tg.manual_seed(5)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    x = RNG.standard_normal((5, 4))
    y = RNG.integers(0, 3, 5)
    F.cross_entropy(net(x), y).backward()
    W1, b1, W2, b2 = (p.numpy() for p in net.parameters())
    z1 = x @ W1.T + b1
    h = np.maximum(z1, 0)
    z2 = h @ W2.T + b2
    p = np.exp(z2 - z2.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    d2 = p.copy()
    d2[np.arange(5), y] -= 1
    d2 /= 5
    d1 = (d2 @ W2) * (z1 > 0)
    expect = [d1.T @ x, d1.sum(0), d2.T @ h, d2.sum(0)]
    for param, e in zip(net.parameters(), expect, strict=True):
        np.testing.assert_allclose(param.grad.numpy(), e, rtol=1e-12, atol=1e-15)


def test_cross_entropy_second_derivative_is_softmax_jacobian():
    # composed from ops, so create_graph works: d/dz (v . dL/dz) = H v, H = diag(p) - p p^T
    z = RNG.standard_normal((1, 4))
    v = RNG.standard_normal((1, 4))
    zt = tg.tensor(z, requires_grad=True)
    (g,) = tg.autograd.grad(F.cross_entropy(zt, np.array([1])), zt, create_graph=True)
    (hv,) = tg.autograd.grad((g * v).sum(), zt)
    p = np.exp(z[0]) / np.exp(z[0]).sum()
    np.testing.assert_allclose(
        hv.numpy()[0], (np.diag(p) - np.outer(p, p)) @ v[0], rtol=1e-12, atol=1e-15
    )


def test_bce_with_logits_derivatives_at_zero_logits():
    # zero logits are where zero-initialised models start: the derivative is sigmoid(x) - t
    # there too (a kink in a relu/abs form of the loss would give -t)
    t = np.array([1.0, 0.0, 0.3])
    f = lambda x: F.binary_cross_entropy_with_logits(x, t, reduction="sum")  # noqa: E731
    x0 = np.zeros(3)
    np.testing.assert_allclose(tg.grad(f)(x0), 0.5 - t, rtol=1e-15)
    _, dv = tg.jvp(f, (x0,), (np.array([1.0, -2.0, 0.5]),))
    assert dv == pytest.approx(np.dot(0.5 - t, [1.0, -2.0, 0.5]), rel=1e-15)
    np.testing.assert_allclose(tg.hessian(f)(x0), 0.25 * np.eye(3), rtol=1e-15)
    # and stable far out: no overflow, the exact limits
    big = np.array([800.0, -800.0, 800.0])
    assert np.isfinite(f(tg.tensor(big)).item())
    np.testing.assert_allclose(tg.grad(f)(big), [0.0, 0.0, 0.7], atol=1e-15)


# ---- the activations, layers and losses after the first ones (torch-free checks) --------------


KINKED = [
    ("elu", F.elu),
    ("celu", lambda x: F.celu(x, 0.5)),
    ("selu", F.selu),
    ("hardtanh", F.hardtanh),
    ("relu6", lambda x: F.relu6(x * 4)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 4)),
    ("hardswish", lambda x: F.hardswish(x * 4)),
    ("softsign", F.softsign),
    ("l1", lambda x: F.l1_loss(x, np.zeros(6), reduction="sum")),
    ("huber", lambda x: F.huber_loss(x, np.zeros(6), delta=0.5)),
    ("smooth_l1", lambda x: F.smooth_l1_loss(x, np.zeros(6), beta=0.5)),
]


@pytest.mark.parametrize("name,f", KINKED, ids=[k[0] for k in KINKED])
def test_kinked_activations_replay_in_a_trace_for_inputs_of_other_signs(name, f):
    """Their kinks are evaluated inside op kernels (relu, clip, abs), not by masks recorded in
    Python: a trace replays them for any input, with the right gradient."""
    loss = lambda x: (f(x) * np.arange(1.0, 7.0)).sum()  # noqa: E731
    tr = tg.trace(loss, away_from_zero(6))
    for _ in range(3):
        x = away_from_zero(6)
        assert tr(x) == pytest.approx(loss(tg.tensor(x)).item(), rel=1e-13)
        np.testing.assert_allclose(tr.grad(x), tg.grad(loss)(x), rtol=1e-13)
    assert tg.gradcheck(loss, [away_from_zero(6)])


NEW_UNARY = [
    ("gelu", F.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    ("softplus", lambda x: F.softplus(x, 2.0)),
    ("silu", F.silu),
    ("mish", F.mish),
    ("tanhshrink", F.tanhshrink),
    ("logsigmoid", F.logsigmoid),
    ("normalize", F.normalize),
    ("normalize_p3", lambda x: F.normalize(x, 3.0, 0)),
    ("layer_norm", lambda x: F.layer_norm(x, x.shape[-1:])),
    ("batch_norm", lambda x: F.batch_norm(x, None, None, training=True)),
]


@pytest.mark.parametrize("name,f", NEW_UNARY, ids=[u[0] for u in NEW_UNARY])
def test_new_functional_gradcheck(name, f):
    assert tg.gradcheck(f, [RNG.standard_normal((3, 4)) * 2])


def test_normalize_zero_rows_have_finite_gradient():
    # x / eps near a zero row: the gradient there is 1 / eps, as PyTorch's (not 0 * inf)
    x = tg.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    y = F.normalize(x)
    np.testing.assert_allclose(y.detach().numpy(), [[0.0, 0.0], [0.6, 0.8]], rtol=1e-15)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[0], [1e12, 1e12], rtol=1e-12)


def test_cross_entropy_weights_ignore_index_and_smoothing_by_hand():
    z = RNG.standard_normal((4, 3))
    t = np.array([0, 2, -100, 1])
    w = np.array([0.5, 1.0, 2.0])
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    kept = t != -100
    nll = -w[t[kept]] * logp[kept, t[kept]]
    assert F.cross_entropy(z, t, w).item() == pytest.approx(nll.sum() / w[t[kept]].sum())
    smooth = -(logp[kept] * w).sum(1)
    expect = 0.8 * nll.sum() / w[t[kept]].sum() + 0.2 / 3 * smooth.sum() / w[t[kept]].sum()
    assert F.cross_entropy(z, t, w, label_smoothing=0.2).item() == pytest.approx(expect)
    none = F.cross_entropy(z, t, w, reduction="none").numpy()
    assert none[2] == 0.0 and none[kept] == pytest.approx(nll)
    p = np.exp(RNG.standard_normal((4, 3)))
    p /= p.sum(1, keepdims=True)
    assert F.cross_entropy(z, p).item() == pytest.approx(-(p * logp).sum(1).mean())
    assert F.nll_loss(logp, t, w).item() == pytest.approx(nll.sum() / w[t[kept]].sum())


def test_batch_norm_module_updates_running_stats_and_buffers_in_state_dict():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [RNG.standard_normal((5, 2)) for _ in range(3)]
    for x in xs:
        bn(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0))
    np.testing.assert_allclose(
        bn.running_var.numpy(), (2 / 3) * 0 + np.mean([x.var(0, ddof=1) for x in xs], 0) / 1
    )
    assert list(bn.state_dict())[2:] == ["running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    bn.eval()
    x = RNG.standard_normal((3, 2))
    expect = (x - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(bn(x).detach().numpy(), expect, rtol=1e-13)


def test_dropout_training_in_a_trace_raises_and_eval_is_identity():
    x = RNG.standard_normal(4)
    with pytest.raises(RuntimeError, match="dropout"):
        tg.trace(lambda x: F.dropout(x, 0.2).sum(), x)
    tr = tg.trace(lambda x: F.dropout(x, 0.2, training=False).sum(), x)
    assert tr(x) == pytest.approx(x.sum())


@pytest.mark.parametrize("ndim", [3, 4])
def test_softmax_without_dim_beyond_2d_asks_for_it(ndim):
    # PyTorch's implicit dim there is 0 (3-D) or 1 (4-D+), not the last axis: refusing is the
    # only answer that cannot be silently another softmax
    x = tg.tensor(np.random.default_rng(0).standard_normal((2,) * ndim))
    for fn in (F.softmax, F.log_softmax, tg.nn.Softmax(), tg.nn.LogSoftmax()):
        with pytest.raises(TypeError, match="give dim="):
            fn(x)
    np.testing.assert_allclose(tg.nn.Softmax(dim=-1)(x).numpy().sum(-1), 1.0, rtol=1e-14)


def test_softmax_without_dim_up_to_2d_is_the_last_axis_as_pytorch():
    x = np.random.default_rng(1).standard_normal((3, 4))
    want = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(F.softmax(tg.tensor(x)).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(tg.nn.Softmax()(tg.tensor(x)).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(F.softmax(tg.tensor(x[0])).numpy(), want[0], rtol=1e-13)


def test_sgd_refuses_pytorchs_five_positional_arguments():
    w = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError):
        tg.optim.SGD([w], 0.1, 0.9, 0.1, 1e-4)  # PyTorch: dampening 0.1, weight_decay 1e-4
    opt = tg.optim.SGD([w], 0.1, 0.9, 1e-4, dampening=0.1)  # the contract's order
    assert opt.param_groups[0]["weight_decay"] == 1e-4
    assert opt.param_groups[0]["dampening"] == 0.1


def test_mse_loss_of_mismatched_shapes_raises():
    # the classic (N, 1) prediction against an (N,) target: broadcasting would average all
    # N * N pairs (PyTorch only warns); every pointwise loss refuses it
    pred, target = tg.tensor(np.ones((4, 1)), requires_grad=True), tg.tensor(np.zeros(4))
    for loss in (F.mse_loss, nn.MSELoss()):
        with pytest.raises(ValueError, match=r"target shape \(4,\) differs from input shape"):
            loss(pred, target)
    assert F.mse_loss(pred, target.reshape(4, 1)).item() == 1.0
