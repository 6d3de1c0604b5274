"""tg.nn against PyTorch (float64): every activation, normalisation layer and loss gives
torch's values and gradients with respect to its inputs and parameters."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(11)


def _pair(a, grad=True):
    a = np.asarray(a)
    grad = grad and a.dtype.kind == "f"
    return tg.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def close(actual, expect, rtol=1e-12, atol=1e-13):
    expect = expect.detach().numpy() if isinstance(expect, torch.Tensor) else expect
    actual = actual.detach().numpy() if isinstance(actual, tg.Tensor) else actual
    assert np.shape(actual) == np.shape(expect)
    np.testing.assert_allclose(actual, expect, rtol=rtol, atol=atol, equal_nan=True)


def agree(f, g, *arrays, rtol=1e-12, atol=1e-13):
    """f (tapegrad) and g (torch) on the same arrays: values, and the gradients of a random
    weighting of the output with respect to every float input."""
    pairs = [_pair(a) for a in arrays]
    out = f(*(p[0] for p in pairs))
    ref = g(*(p[1] for p in pairs))
    close(out, ref, rtol, atol)
    w = RNG.standard_normal(tuple(ref.shape))
    (out * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in pairs:
        if b.requires_grad:
            close(a.grad, b.grad, rtol, atol)


def spread(*shape):
    """Values from -25 to 25, away from the kinks at 0, +-1, +-3, +-6 and 20."""
    x = RNG.uniform(-25, 25, shape)
    kinks = np.array([0.0, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, 20.0, -20.0])
    near = np.abs(x[..., None] - kinks).min(-1) < 1e-3
    return np.where(near, x + 0.01, x)


ACTIVATIONS = [
    ("gelu", F.gelu, TF.gelu),
    (
        "gelu_tanh",
        lambda x: F.gelu(x, approximate="tanh"),
        lambda x: TF.gelu(x, approximate="tanh"),
    ),
    ("elu", F.elu, TF.elu),
    ("elu_alpha", lambda x: F.elu(x, 0.3), lambda x: TF.elu(x, 0.3)),
    ("selu", F.selu, TF.selu),
    # alpha with 1 / alpha exact in float32: torch's celu backward rounds 1 / alpha to float32
    ("celu", lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0)),
    ("celu_alpha", lambda x: F.celu(x, 0.25), lambda x: TF.celu(x, 0.25)),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, 2.0, 15.0), lambda x: TF.softplus(x, 2.0, 15.0)),
    ("softplus_beta_small", lambda x: F.softplus(x, 0.5), lambda x: TF.softplus(x, 0.5)),
    ("silu", F.silu, TF.silu),
    ("mish", F.mish, TF.mish),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_bounds", lambda x: F.hardtanh(x, -3.0, 6.0), lambda x: TF.hardtanh(x, -3.0, 6.0)),
    ("relu6", F.relu6, TF.relu6),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("hardswish", F.hardswish, TF.hardswish),
    ("softsign", F.softsign, TF.softsign),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("glu", F.glu, TF.glu),
    ("glu_dim0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0)),
    ("normalize", F.normalize, TF.normalize),
    ("normalize_p1", lambda x: F.normalize(x, 1.0, 0), lambda x: TF.normalize(x, 1.0, 0)),
    ("normalize_p3", lambda x: F.normalize(x, 3.0, -1), lambda x: TF.normalize(x, 3.0, -1)),
    ("normalize_inf", lambda x: F.normalize(x, np.inf), lambda x: TF.normalize(x, np.inf)),
]


# torch's hardsigmoid backward multiplies by 1/6 rounded to float32
LOOSE = {"hardsigmoid": 1e-7}


@pytest.mark.parametrize("name,f,g", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_agrees_with_torch(name, f, g):
    for x in (spread(6, 8), spread(2, 4, 6) / 10, np.linspace(-4, 4, 16).reshape(4, 4) + 0.013):
        agree(f, g, x, rtol=LOOSE.get(name, 1e-12))


SMALL = [
    ("gelu", F.gelu),
    ("elu", F.elu),
    ("softplus", lambda x: F.softplus(x, 2.0)),
    ("mish", F.mish),
    ("logsigmoid", F.logsigmoid),
    ("glu", F.glu),
    ("normalize", F.normalize),
    ("layer_norm", lambda x: F.layer_norm(x, (4,))),
]


@pytest.mark.parametrize("name,f", SMALL, ids=[a[0] for a in SMALL])
def test_second_derivatives_and_forward_mode(name, f):
    """Compositions of ops: create_graph, the Hessian and jvp come with them."""
    x0 = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((3, 4)) if name != "glu" else RNG.standard_normal((3, 2))
    loss = lambda x: (f(x) * w).sum()  # noqa: E731
    xt = torch.tensor(x0, requires_grad=True)
    g_torch = {
        "gelu": TF.gelu,
        "elu": TF.elu,
        "softplus": lambda x: TF.softplus(x, 2.0),
        "mish": TF.mish,
        "logsigmoid": TF.logsigmoid,
        "glu": TF.glu,
        "normalize": TF.normalize,
        "layer_norm": lambda x: TF.layer_norm(x, (4,)),
    }[name]
    h_torch = torch.autograd.functional.hessian(
        lambda x: (g_torch(x) * torch.tensor(w)).sum(), xt
    ).reshape(12, 12)
    close(tg.hessian(loss)(x0).reshape(12, 12), h_torch, rtol=1e-9, atol=1e-10)
    v = RNG.standard_normal((3, 4))
    _, dv = tg.jvp(loss, (x0,), (v,))
    assert dv == pytest.approx(float((tg.grad(loss)(x0) * v).sum()), rel=1e-11, abs=1e-12)


def test_elu_family_derivative_at_zero_is_torchs():
    x = np.array([0.0, 0.0])
    for f, g in [
        (lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5)),
        (F.selu, TF.selu),
        (lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0)),
        (F.hardswish, TF.hardswish),
        (F.softsign, TF.softsign),
        (F.relu6, TF.relu6),
    ]:
        agree(f, g, x)


def test_activation_modules_agree_with_torch():
    x = spread(5, 6)
    for ours, theirs in [
        (nn.GELU(), torch.nn.GELU()),
        (nn.GELU("tanh"), torch.nn.GELU("tanh")),
        (nn.ELU(0.4), torch.nn.ELU(0.4)),
        (nn.SELU(), torch.nn.SELU()),
        (nn.CELU(0.5), torch.nn.CELU(0.5)),
        (nn.Softplus(3.0, 10.0), torch.nn.Softplus(3.0, 10.0)),
        (nn.SiLU(), torch.nn.SiLU()),
        (nn.Mish(), torch.nn.Mish()),
        (nn.Hardtanh(-2.0, 2.5), torch.nn.Hardtanh(-2.0, 2.5)),
        (nn.ReLU6(), torch.nn.ReLU6()),
        (nn.Hardswish(), torch.nn.Hardswish()),
        (nn.Softsign(), torch.nn.Softsign()),
        (nn.Tanhshrink(), torch.nn.Tanhshrink()),
        (nn.LogSigmoid(), torch.nn.LogSigmoid()),
        (nn.GLU(0), torch.nn.GLU(0)),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.Identity(3, k=1), torch.nn.Identity(3, k=1)),
        (nn.Flatten(0), torch.nn.Flatten(0)),
    ]:
        agree(ours, theirs, x if not isinstance(ours, nn.GLU) else x[:4])
    y = RNG.standard_normal((2, 3, 4, 5))
    for args in [(), (0,), (1, 2), (2, -1), (0, -2)]:
        agree(nn.Flatten(*args), torch.nn.Flatten(*args), y)
    assert "alpha=0.4" in repr(nn.ELU(0.4))


def test_unsupported_arguments_raise():
    x = tg.tensor([1.0, -1.0])
    with pytest.raises(TypeError, match="inplace=True"):
        F.elu(x, inplace=True)
    with pytest.raises(TypeError, match="inplace=True"):
        nn.ReLU6(inplace=True)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match="even"):
        F.glu(tg.ones(3))
    with pytest.raises(TypeError, match="max_norm"):
        F.embedding(np.array([0]), tg.ones(2, 2), max_norm=1.0)
    with pytest.raises(TypeError, match="sparse"):
        nn.Embedding(3, 2, sparse=True)
    with pytest.raises(TypeError, match="size_average"):
        F.mse_loss(x, x, True)
    with pytest.raises(TypeError, match="reduction='sum' by keyword"):
        F.cross_entropy(tg.zeros(2, 3), np.array([0, 1]), "sum")
    with pytest.raises(TypeError, match="by keyword"):
        nn.BCELoss("sum")
    with pytest.raises(ValueError, match="reduction"):
        nn.L1Loss(reduction="batchmean")
    with pytest.raises(ValueError, match="differs from input shape"):
        F.l1_loss(tg.zeros(3, 1), tg.zeros(3))
    with pytest.raises(TypeError, match="weight= is not supported"):
        F.huber_loss(x, x, weight=x)


# ---- dropout ----------------------------------------------------------------------------------


def test_dropout_scales_kept_entries_and_follows_train_eval():
    tg.manual_seed(1)
    x = tg.tensor(RNG.standard_normal((200, 50)), requires_grad=True)
    y = F.dropout(x, 0.3)
    kept = y.detach().numpy() != 0
    assert 0.65 < kept.mean() < 0.75
    close(y, np.where(kept, x.detach().numpy() / 0.7, 0.0), rtol=1e-15, atol=0)
    y.sum().backward()
    close(x.grad, kept / 0.7, rtol=1e-15, atol=0)
    assert F.dropout(x, 0.3, training=False) is x
    assert np.all(F.dropout(x, 1.0).detach().numpy() == 0)
    drop = nn.Dropout(0.5)
    assert not np.array_equal(drop(x).detach().numpy(), x.detach().numpy())
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)


def test_dropout_draws_from_the_seeded_generator():
    tg.manual_seed(5)
    a = F.dropout(tg.ones(100)).numpy()
    tg.manual_seed(5)
    np.testing.assert_array_equal(a, F.dropout(tg.ones(100)).numpy())


def test_dropout_in_a_trace_raises_in_training_and_is_identity_in_eval():
    net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    x = RNG.standard_normal((2, 3))
    with pytest.raises(RuntimeError, match="dropout.*trace"):
        tg.trace(lambda x: net(x).sum(), x)
    net.eval()
    tr = tg.trace(lambda x: net(x).sum(), x)
    x2 = RNG.standard_normal((2, 3))
    assert tr(x2) == pytest.approx(net(x2).sum().item(), rel=1e-14)


def test_dropout_in_grad_transform_draws_each_call():
    f = tg.grad(lambda x: (F.dropout(x, 0.5) * x).sum())
    x = np.ones(64)
    assert not np.array_equal(f(x), f(x))


# ---- layer norm, batch norm, embedding -----------------------------------------------------------


def _copy_params(ours, theirs):
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})


def _module_agree(ours, theirs, x, rtol=1e-12, atol=1e-13):
    """Forward and backward through both modules; compares outputs, input and parameter
    gradients."""
    xa, xb = _pair(x)
    out, ref = ours(xa), theirs(xb)
    close(out, ref, rtol, atol)
    w = RNG.standard_normal(tuple(ref.shape))
    (out * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    close(xa.grad, xb.grad, rtol, atol)
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        close(p.grad, theirs_params[name].grad, rtol, atol)
    assert len(theirs_params) == len(list(ours.parameters()))


@pytest.mark.parametrize(
    "shape,kwargs",
    [
        ((4,), {}),
        ((3, 4), {"eps": 1e-3}),
        ((4,), {"bias": False}),
        ((4,), {"elementwise_affine": False}),
    ],
)
def test_layer_norm_agrees_with_torch(shape, kwargs):
    ours = nn.LayerNorm(shape, **kwargs)
    theirs = torch.nn.LayerNorm(shape, dtype=torch.float64, **kwargs)
    with tg.no_grad():
        for p in ours.parameters():
            p += tg.tensor(RNG.standard_normal(p.shape))
    _copy_params(ours, theirs)
    _module_agree(ours, theirs, RNG.standard_normal((5, 3, 4)) * 3 + 1)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def test_functional_layer_norm_with_tensor_parameters():
    x, w, b = RNG.standard_normal((2, 5)), RNG.standard_normal(5), RNG.standard_normal(5)
    agree(
        lambda x, w, b: F.layer_norm(x, (5,), w, b, 1e-4),
        lambda x, w, b: TF.layer_norm(x, (5,), w, b, 1e-4),
        x,
        w,
        b,
    )
    with pytest.raises(ValueError, match="trailing dimensions"):
        F.layer_norm(tg.zeros(2, 5), (2,))


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
def test_batch_norm_1d_trains_and_evaluates_as_torch(shape, momentum):
    ours = nn.BatchNorm1d(3, momentum=momentum)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum, dtype=torch.float64)
    with tg.no_grad():
        for p in ours.parameters():
            p += tg.tensor(RNG.standard_normal(3))
    _copy_params(ours, theirs)
    for _ in range(3):
        _module_agree(ours, theirs, RNG.standard_normal(shape) * 2 + 0.5)
        for p in ours.parameters():
            p.grad = None
        theirs.zero_grad()
        for name, buf in theirs.named_buffers():
            close(ours.state_dict()[name], buf, rtol=1e-13, atol=1e-14)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.num_batches_tracked.item() == 3 and ours.num_batches_tracked.dtype == np.int64
    ours.eval()
    theirs.eval()
    _module_agree(ours, theirs, RNG.standard_normal(shape))
    assert ours.num_batches_tracked.item() == 3
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert not any(b.requires_grad for b in ours.buffers())


@pytest.mark.parametrize(
    "kwargs", [{"affine": False}, {"track_running_stats": False}, {"bias": False}]
)
def test_batch_norm_options_agree_with_torch(kwargs):
    ours = nn.BatchNorm1d(2, **kwargs)
    theirs = torch.nn.BatchNorm1d(2, dtype=torch.float64, **kwargs)
    _copy_params(ours, theirs)
    _module_agree(ours, theirs, RNG.standard_normal((5, 2)))
    ours.eval()
    theirs.eval()
    _module_agree(ours, theirs, RNG.standard_normal((5, 2)))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_batch_norm_2d_and_state_dict_round_trip():
    ours = nn.BatchNorm2d(3)
    theirs = torch.nn.BatchNorm2d(3, dtype=torch.float64)
    _module_agree(ours, theirs, RNG.standard_normal((2, 3, 4, 5)))
    sd = ours.state_dict()
    fresh = nn.BatchNorm2d(3)
    fresh.load_state_dict(sd)
    close(fresh.running_var, theirs.running_var)
    assert fresh.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="expected 4D input"):
        ours(tg.zeros(2, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(tg.zeros(1, 3))


def test_batch_norm_refuses_a_trace_in_training_and_replays_in_eval():
    bn = nn.BatchNorm1d(2)
    x = RNG.standard_normal((4, 2))
    with pytest.raises(RuntimeError, match="running_mean"):
        tg.trace(lambda x: bn(x).sum(), x)
    assert bn.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(bn.running_mean.numpy(), [0.0, 0.0])
    bn.eval()
    tr = tg.trace(lambda x: (bn(x) ** 2).sum(), x)
    x2 = RNG.standard_normal((4, 2))
    assert tr(x2) == pytest.approx((bn(x2) ** 2).sum().item(), rel=1e-14)


def test_functional_batch_norm_agrees_with_torch():
    x = RNG.standard_normal((5, 3, 2))
    rm, rv = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    ours_rm, ours_rv = tg.tensor(rm), tg.tensor(rv)
    theirs_rm, theirs_rv = torch.tensor(rm), torch.tensor(rv)
    agree(
        lambda x, w, b: F.batch_norm(x, ours_rm, ours_rv, w, b, True, 0.3, 1e-3),
        lambda x, w, b: TF.batch_norm(x, theirs_rm, theirs_rv, w, b, True, 0.3, 1e-3),
        x,
        w,
        b,
    )
    close(ours_rm, theirs_rm, rtol=1e-14)
    close(ours_rv, theirs_rv, rtol=1e-14)
    agree(
        lambda x, w, b: F.batch_norm(x, ours_rm, ours_rv, w, b),
        lambda x, w, b: TF.batch_norm(x, theirs_rm, theirs_rv, w, b),
        x,
        w,
        b,
    )


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_agrees_with_torch(padding_idx):
    tg.manual_seed(0)
    ours = nn.Embedding(6, 3, padding_idx=padding_idx)
    theirs = torch.nn.Embedding(6, 3, padding_idx=padding_idx, dtype=torch.float64)
    _copy_params(ours, theirs)
    if padding_idx is not None:
        np.testing.assert_array_equal(ours.weight.numpy()[padding_idx], 0.0)
        with tg.no_grad():  # a padding row keeps its value (only its gradient is zero)
            ours.weight[padding_idx] = tg.tensor([1.0, 2.0, 3.0])
        _copy_params(ours, theirs)
    idx = np.array([[0, 2, 5, 2], [1, 5, 5, 3]])
    out, ref = ours(idx), theirs(torch.tensor(idx))
    close(out, ref, rtol=0, atol=0)
    w = RNG.standard_normal(tuple(ref.shape))
    (out * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    close(ours.weight.grad, theirs.weight.grad, rtol=1e-14, atol=1e-15)
    with pytest.raises(IndexError, match="out of range"):
        ours(np.array([6]))
    with pytest.raises(TypeError, match="integer"):
        ours(np.array([1.0]))


# ---- losses --------------------------------------------------------------------------------------


REDUCTIONS = ["mean", "sum", "none"]


def _logits(*shape):
    return RNG.standard_normal(shape) * 2


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("shape", [(7, 4), (3, 4, 5), (4,)])
def test_nll_and_cross_entropy_class_targets(reduction, weighted, ignore, shape):
    x = _logits(*shape)
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0], *shape[2:])
    target = RNG.integers(0, c, tshape)
    if ignore and target.ndim:
        target.flat[::3] = 1
    ignore_index = 1 if ignore else -100
    weight = RNG.uniform(0.2, 2.0, c) if weighted else None
    for smoothing in (0.0, 0.2):
        kw = dict(ignore_index=ignore_index, reduction=reduction)
        wt = None if weight is None else torch.tensor(weight)
        agree(
            lambda z, s=smoothing, kw=kw: F.cross_entropy(
                z, target, weight, label_smoothing=s, **kw
            ),
            lambda z, s=smoothing, kw=kw, wt=wt: TF.cross_entropy(
                z, torch.tensor(target), wt, label_smoothing=s, **kw
            ),
            x,
        )
    agree(
        lambda z: F.nll_loss(
            F.log_softmax(z, dim=0 if len(shape) == 1 else 1), target, weight, **kw
        ),
        lambda z: TF.nll_loss(
            TF.log_softmax(z, dim=0 if len(shape) == 1 else 1), torch.tensor(target), wt, **kw
        ),
        x,
    )


def test_cross_entropy_gradient_wrt_class_weights():
    # torch does not differentiate with respect to weight: finite differences do
    x, w = _logits(6, 3), RNG.uniform(0.5, 2.0, 3)
    target = np.array([0, 1, 2, 2, 1, 0])
    for smoothing in (0.0, 0.1):
        assert tg.gradcheck(
            lambda z, w, s=smoothing: F.cross_entropy(
                z, target, w, ignore_index=2, label_smoothing=s
            ),
            [x, w],
        )
        assert tg.gradcheck(lambda z, w: F.nll_loss(z, target, w, ignore_index=0), [x, w])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (3,)])
def test_cross_entropy_probability_targets(reduction, shape):
    x = _logits(*shape)
    p = RNG.uniform(0.0, 1.0, shape)
    p /= p.sum(0 if len(shape) == 1 else 1, keepdims=True)
    weight = RNG.uniform(0.2, 2.0, shape[0] if len(shape) == 1 else shape[1])
    for w, smoothing in ((None, 0.0), (weight, 0.3)):
        wt = None if w is None else torch.tensor(w)
        agree(
            lambda z, t, w=w, s=smoothing: F.cross_entropy(
                z, t, w, reduction=reduction, label_smoothing=s
            ),
            lambda z, t, w=wt, s=smoothing: TF.cross_entropy(
                z, t, w, reduction=reduction, label_smoothing=s
            ),
            x,
            p,
        )
    with pytest.raises(ValueError, match="ignore_index"):
        F.cross_entropy(x, p, ignore_index=0)


def test_cross_entropy_all_ignored_mean_is_nan_like_torch():
    x = _logits(2, 3)
    t = np.array([-100, -100])
    ours = F.cross_entropy(x, t).item()
    assert np.isnan(ours) and np.isnan(TF.cross_entropy(torch.tensor(x), torch.tensor(t)).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, np.array([0, -1]))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, np.array([0, 1]), label_smoothing=1.5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses_agree_with_torch(reduction):
    a, b = RNG.standard_normal((4, 5)) * 2, RNG.standard_normal((4, 5)) * 2
    r = dict(reduction=reduction)
    cases = [
        (lambda a, b: F.l1_loss(a, b, **r), lambda a, b: TF.l1_loss(a, b, **r)),
        (lambda a, b: F.mse_loss(a, b, **r), lambda a, b: TF.mse_loss(a, b, **r)),
        (lambda a, b: F.smooth_l1_loss(a, b, **r), lambda a, b: TF.smooth_l1_loss(a, b, **r)),
        (
            lambda a, b: F.smooth_l1_loss(a, b, beta=0.4, **r),
            lambda a, b: TF.smooth_l1_loss(a, b, beta=0.4, **r),
        ),
        (
            lambda a, b: F.smooth_l1_loss(a, b, beta=0.0, **r),
            lambda a, b: TF.smooth_l1_loss(a, b, beta=0.0, **r),
        ),
        (lambda a, b: F.huber_loss(a, b, **r), lambda a, b: TF.huber_loss(a, b, **r)),
        (
            lambda a, b: F.huber_loss(a, b, delta=2.5, **r),
            lambda a, b: TF.huber_loss(a, b, delta=2.5, **r),
        ),
    ]
    for f, g in cases:
        agree(f, g, a, b)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # torch's note on 'mean'
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_agrees_with_torch(reduction, log_target):
    logq = np.log(RNG.dirichlet(np.ones(4), 3))
    p = RNG.dirichlet(np.ones(4), 3)
    p[0, 1] = 0.0  # torch's gradient with respect to a zero target is nan: so is ours
    target = np.log(RNG.dirichlet(np.ones(4), 3)) if log_target else p
    kw = dict(reduction=reduction, log_target=log_target)
    agree(lambda a, b: F.kl_div(a, b, **kw), lambda a, b: TF.kl_div(a, b, **kw), logq, target)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_weights_agree_with_torch(reduction):
    x = RNG.standard_normal((5, 3)) * 3
    t = RNG.uniform(0, 1, (5, 3))
    w, pw = RNG.uniform(0.5, 2, (5, 3)), RNG.uniform(0.5, 3, 3)
    r = dict(reduction=reduction)
    agree(  # torch does not differentiate with respect to pos_weight
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, **r),
        lambda x, t: TF.binary_cross_entropy_with_logits(x, t, pos_weight=torch.tensor(pw), **r),
        x,
        t,
    )
    assert tg.gradcheck(
        lambda pw: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw, **r), [pw]
    )
    agree(  # nor with respect to weight
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, w, **r),
        lambda x, t: TF.binary_cross_entropy_with_logits(x, t, torch.tensor(w), **r),
        x,
        t,
    )
    p = RNG.uniform(0.05, 0.95, (5, 3))
    agree(
        lambda p, t: F.binary_cross_entropy(p, t, w, **r),
        lambda p, t: TF.binary_cross_entropy(p, t, torch.tensor(w), **r),
        p,
        t,
    )


def test_loss_modules_agree_with_torch():
    x = _logits(6, 4)
    target = np.array([0, 3, 1, 1, 2, 3])
    weight = RNG.uniform(0.5, 2.0, 4)
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    probs = RNG.uniform(0.1, 0.9, (3, 4))
    logq, p = np.log(RNG.dirichlet(np.ones(4), 3)), RNG.dirichlet(np.ones(4), 3)
    cases = [
        (
            nn.CrossEntropyLoss(tg.tensor(weight), ignore_index=3, label_smoothing=0.1),
            torch.nn.CrossEntropyLoss(torch.tensor(weight), ignore_index=3, label_smoothing=0.1),
            x,
            target,
        ),
        (
            nn.NLLLoss(weight, reduction="sum"),
            torch.nn.NLLLoss(torch.tensor(weight), reduction="sum"),
            -np.abs(x),
            target,
        ),
        (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum"), a, b),
        (nn.MSELoss(), torch.nn.MSELoss(), a, b),
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), a, b),
        (nn.HuberLoss("none", 0.7), torch.nn.HuberLoss("none", 0.7), a, b),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), logq, p),
        (
            nn.BCEWithLogitsLoss(pos_weight=tg.tensor(weight)),
            torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(weight)),
            a,
            probs,
        ),
        (nn.BCELoss(tg.tensor(probs)), torch.nn.BCELoss(torch.tensor(probs)), probs, p),
    ]
    for ours, theirs, inp, tgt in cases:
        agree(
            lambda z, f=ours, t=tgt: f(z, t),
            lambda z, f=theirs, t=tgt: f(z, torch.tensor(t)),
            inp,
        )
    assert list(nn.CrossEntropyLoss(tg.tensor(weight)).state_dict()) == ["weight"]


def test_mlp_with_new_layers_matches_torch_after_optimizer_steps():
    tg.manual_seed(2)
    ours = nn.Sequential(
        nn.Linear(5, 8),
        nn.LayerNorm(8),
        nn.GELU(),
        nn.Linear(8, 8),
        nn.BatchNorm1d(8),
        nn.SiLU(),
        nn.Linear(8, 3),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Linear(5, 8),
        torch.nn.LayerNorm(8),
        torch.nn.GELU(),
        torch.nn.Linear(8, 8),
        torch.nn.BatchNorm1d(8),
        torch.nn.SiLU(),
        torch.nn.Linear(8, 3),
    ).double()
    _copy_params(ours, theirs)
    # (SGD: Adam's first steps are lr * sign(grad), which turns rounding in a tiny gradient
    # into a difference of lr)
    opt_a = tg.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    opt_b = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    for _ in range(4):
        x = RNG.standard_normal((10, 5))
        y = RNG.integers(0, 3, 10)
        for model, opt, lib, conv in (
            (ours, opt_a, F, np.asarray),
            (theirs, opt_b, TF, torch.tensor),
        ):
            opt.zero_grad()
            lib.cross_entropy(model(conv(x)), conv(y), label_smoothing=0.05).backward()
            opt.step()
    for name, v in theirs.state_dict().items():
        close(ours.state_dict()[name], v, rtol=1e-10, atol=1e-12)
