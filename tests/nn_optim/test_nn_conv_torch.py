"""Convolution, pooling, padding and recurrent layers against PyTorch (float64): values and
gradients with respect to the input and every parameter, parameter names and shapes, and torch
state dicts loading as they are."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(23)


def close(actual, expect, rtol=1e-12, atol=1e-13):
    expect = expect.detach().numpy() if isinstance(expect, torch.Tensor) else expect
    actual = actual.detach().numpy() if isinstance(actual, tg.Tensor) else actual
    assert np.shape(actual) == np.shape(expect)
    np.testing.assert_allclose(actual, expect, rtol=rtol, atol=atol)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [leaf for part in out for leaf in _flat(part)]
    return [out]


def agree(f, g, *arrays):
    """f (tapegrad) and g (torch) on the same arrays: values, and the gradients of a random
    weighting of every output with respect to every input."""
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    _backward_both(f(*ours), g(*theirs))
    for a, b in zip(ours, theirs, strict=True):
        close(a.grad, b.grad)


def _backward_both(out, ref):
    out, ref = _flat(out), _flat(ref)
    assert len(out) == len(ref)
    loss, loss_ref = 0.0, 0.0
    for a, b in zip(out, ref, strict=True):
        close(a, b)
        w = RNG.standard_normal(tuple(b.shape))
        loss = loss + (a * tg.tensor(w)).sum()
        loss_ref = loss_ref + (b * torch.tensor(w)).sum()
    loss.backward()
    loss_ref.backward()


def module_agree(ours, theirs, x, *extra):
    """Loads torch's state dict into ``ours`` (``{k: v.numpy()}``), then compares outputs and
    the gradients with respect to the input and every parameter."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert ours.state_dict()[k].shape == tuple(v.shape), k
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    xa, xb = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args_a = [_tg_tree(e) for e in extra]
    args_b = [_torch_tree(e) for e in extra]
    _backward_both(ours(xa, *args_a), theirs(xb, *args_b))
    close(xa.grad, xb.grad)
    theirs_params = dict(theirs.named_parameters())
    assert len(theirs_params) == len(list(ours.parameters()))
    for name, p in ours.named_parameters():
        close(p.grad, theirs_params[name].grad)


def _tg_tree(e):
    return tuple(map(tg.tensor, e)) if isinstance(e, tuple) else tg.tensor(e)


def _torch_tree(e):
    return tuple(map(torch.tensor, e)) if isinstance(e, tuple) else torch.tensor(e)


CONV2D = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    (
        (1, 4, 9, 8),
        (6, 2, 3, 2),
        {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
    ),
    ((2, 3, 7, 7), (5, 3, 3, 3), {"padding": "same"}),
    ((2, 3, 7, 7), (5, 3, 2, 4), {"padding": "same", "dilation": (2, 1)}),
    ((2, 3, 7, 7), (5, 3, 3, 3), {"padding": "valid"}),
    ((3, 7, 7), (5, 3, 3, 3), {"padding": 1}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"padding": 1, "groups": 4}),
]


@pytest.mark.parametrize("xs,ws,kwargs", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_agrees_with_torch(xs, ws, kwargs, bias):
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    if bias:
        agree(lambda *a: F.conv2d(*a, **kwargs), lambda *a: TF.conv2d(*a, **kwargs), x, w, b)
    else:
        agree(lambda *a: F.conv2d(*a, **kwargs), lambda *a: TF.conv2d(*a, **kwargs), x, w)


@pytest.mark.parametrize(
    "xs,ws,kwargs",
    [
        ((2, 3, 11), (4, 3, 3), {}),
        ((2, 4, 11), (6, 2, 2), {"stride": 3, "padding": 2, "dilation": 2, "groups": 2}),
        ((2, 3, 10), (4, 3, 4), {"padding": "same"}),
        ((3, 10), (4, 3, 3), {"padding": (1,)}),
    ],
)
def test_conv1d_agrees_with_torch(xs, ws, kwargs):
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    agree(lambda *a: F.conv1d(*a, **kwargs), lambda *a: TF.conv1d(*a, **kwargs), x, w, b)


def test_conv2d_second_derivatives_and_forward_mode_agree_with_torch():
    x0, w0 = RNG.standard_normal((1, 2, 4, 4)), RNG.standard_normal((3, 2, 2, 2))
    c = RNG.standard_normal((1, 3, 3, 3))

    def loss(x, w):
        return (F.conv2d(x, w, padding=1, stride=2).tanh() * tg.tensor(c)).sum()

    def loss_t(x, w):
        return (TF.conv2d(x, w, padding=1, stride=2).tanh() * torch.tensor(c)).sum()

    h = tg.hessian(loss, argnums=1)(x0, w0)
    h_t = torch.autograd.functional.hessian(lambda w: loss_t(torch.tensor(x0), w), torch.tensor(w0))
    close(np.asarray(h), h_t, rtol=1e-10, atol=1e-11)
    v = RNG.standard_normal(x0.shape)
    _, dv = tg.jvp(lambda x: loss(x, w0), (x0,), (v,))
    xt = torch.tensor(x0, requires_grad=True)
    loss_t(xt, torch.tensor(w0)).backward()
    assert float(dv) == pytest.approx(float((xt.grad.numpy() * v).sum()), rel=1e-11)


POOLS = [
    ("max2", F.max_pool2d, TF.max_pool2d, {"kernel_size": 2}),
    ("max2_pad", F.max_pool2d, TF.max_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1}),
    (
        "max2_dil",
        F.max_pool2d,
        TF.max_pool2d,
        {"kernel_size": (3, 2), "stride": (1, 2), "padding": (1, 1), "dilation": (2, 1)},
    ),
    ("avg2", F.avg_pool2d, TF.avg_pool2d, {"kernel_size": 2}),
    ("avg2_pad", F.avg_pool2d, TF.avg_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1}),
    (
        "avg2_nopad",
        F.avg_pool2d,
        TF.avg_pool2d,
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    ),
    (
        "avg2_div",
        F.avg_pool2d,
        TF.avg_pool2d,
        {"kernel_size": (3, 2), "padding": (1, 1), "divisor_override": 5},
    ),
]


@pytest.mark.parametrize("name,f,g,kwargs", POOLS, ids=[p[0] for p in POOLS])
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 6, 7)])
def test_pool2d_agrees_with_torch(name, f, g, kwargs, shape):
    # continuous random values: no ties, where the max-pool gradient would be split
    x = RNG.standard_normal(shape)
    agree(lambda a: f(a, **kwargs), lambda a: g(a, **kwargs), x)


@pytest.mark.parametrize(
    "f,g,kwargs",
    [
        (F.max_pool1d, TF.max_pool1d, {"kernel_size": 3, "stride": 2, "padding": 1}),
        (F.max_pool1d, TF.max_pool1d, {"kernel_size": 2, "dilation": 3}),
        (F.avg_pool1d, TF.avg_pool1d, {"kernel_size": 3}),
        (F.avg_pool1d, TF.avg_pool1d, {"kernel_size": 3, "padding": 1, "count_include_pad": False}),
    ],
)
def test_pool1d_agrees_with_torch(f, g, kwargs):
    agree(lambda a: f(a, **kwargs), lambda a: g(a, **kwargs), RNG.standard_normal((2, 3, 11)))


@pytest.mark.parametrize("size", [1, 3, (4, None), (5, 3), (2, 7), (9, 8)])
def test_adaptive_avg_pool2d_agrees_with_torch(size):
    x = RNG.standard_normal((2, 3, 9, 8))
    agree(lambda a: F.adaptive_avg_pool2d(a, size), lambda a: TF.adaptive_avg_pool2d(a, size), x)


@pytest.mark.parametrize(
    "pad", [(1, 2), (1, 0, 2, 3), (-1, 2, 0, 0, 1, 1), (0, 0, 0, 0, 0, 0, 1, 0)]
)
@pytest.mark.parametrize("value", [None, 1.5])
def test_pad_agrees_with_torch(pad, value):
    x = RNG.standard_normal((2, 3, 4, 5))
    agree(lambda a: F.pad(a, pad, value=value), lambda a: TF.pad(a, pad, value=value), x)


@pytest.mark.parametrize(
    "make,shape",
    [
        (lambda m: m.Conv2d(3, 4, 3), (2, 3, 6, 6)),
        (lambda m: m.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, bias=False), (2, 4, 7, 6)),
        (lambda m: m.Conv2d(3, 4, 3, padding="same", dilation=2), (2, 3, 7, 7)),
        (lambda m: m.Conv1d(3, 4, 3, padding=1), (2, 3, 8)),
        (lambda m: m.MaxPool2d(2), (2, 3, 6, 6)),
        (lambda m: m.MaxPool2d(3, stride=1, padding=1), (2, 3, 5, 5)),
        (lambda m: m.MaxPool1d(2, stride=1), (2, 3, 5)),
        (lambda m: m.AvgPool2d(3, padding=1, count_include_pad=False), (2, 3, 5, 5)),
        (lambda m: m.AvgPool1d(2), (2, 3, 6)),
        (lambda m: m.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 5)),
        (lambda m: m.AdaptiveAvgPool2d((3, None)), (2, 3, 5, 4)),
        (lambda m: m.ZeroPad2d((1, 2, 0, 3)), (2, 3, 4, 4)),
        (lambda m: m.ZeroPad2d(1), (2, 3, 4, 4)),
        (lambda m: m.Unflatten(1, (3, 4)), (2, 12, 5)),
        (lambda m: m.Unflatten(-1, (2, -1)), (2, 3, 6)),
    ],
)
def test_layer_modules_agree_with_torch(make, shape):
    module_agree(make(nn), make(torch.nn).double(), RNG.standard_normal(shape))


def test_conv_initialisation_has_torchs_shapes_and_bounds():
    _ = tg.manual_seed(0)
    conv = nn.Conv2d(4, 8, (3, 5), groups=2)
    ref = torch.nn.Conv2d(4, 8, (3, 5), groups=2)
    assert conv.weight.shape == tuple(ref.weight.shape) and conv.bias.shape == (8,)
    bound = 1 / np.sqrt(2 * 3 * 5)
    for p in (conv.weight, conv.bias):
        assert np.abs(p.numpy()).max() <= bound and np.abs(p.numpy()).max() > 0.5 * bound


RECURRENT = [
    ("RNN", {}),
    ("RNN", {"num_layers": 2, "nonlinearity": "relu"}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "batch_first": True}),
    ("GRU", {"bidirectional": True, "bias": False}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 3, "batch_first": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
]


@pytest.mark.parametrize("kind,kwargs", RECURRENT)
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_modules_agree_with_torch(kind, kwargs, with_state):
    ours, theirs = getattr(nn, kind)(3, 4, **kwargs), getattr(torch.nn, kind)(3, 4, **kwargs)
    theirs = theirs.double()
    x = RNG.standard_normal((2, 5, 3))
    extra = ()
    if with_state:
        layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
        h = RNG.standard_normal((layers, 2 if kwargs.get("batch_first") else 5, 4))
        extra = ((h, RNG.standard_normal(h.shape)),) if kind == "LSTM" else (h,)
    module_agree(ours, theirs, x, *extra)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_recurrent_unbatched_input_agrees_with_torch(kind):
    ours, theirs = getattr(nn, kind)(3, 4, 2), getattr(torch.nn, kind)(3, 4, 2).double()
    module_agree(ours, theirs, RNG.standard_normal((6, 3)))


@pytest.mark.parametrize("kind", ["RNNCell", "GRUCell", "LSTMCell"])
@pytest.mark.parametrize("shape", [(2, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_recurrent_cells_agree_with_torch(kind, shape, bias):
    ours, theirs = getattr(nn, kind)(3, 4, bias), getattr(torch.nn, kind)(3, 4, bias).double()
    module_agree(ours, theirs, RNG.standard_normal(shape))
    h = RNG.standard_normal(shape[:-1] + (4,))
    extra = (h, RNG.standard_normal(h.shape)) if kind == "LSTMCell" else h
    module_agree(ours, theirs, RNG.standard_normal(shape), extra)


def test_recurrent_parameter_names_shapes_and_initialisation_are_torchs():
    ours, theirs = (
        nn.LSTM(3, 5, num_layers=2, bidirectional=True),
        torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True),
    )
    shapes = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert {k: v.shape for k, v in ours.state_dict().items()} == shapes
    assert list(ours.state_dict()) == list(shapes)
    bound = 1 / np.sqrt(5)
    for p in ours.parameters():
        assert np.abs(p.numpy()).max() <= bound


def test_small_cnn_and_lstm_train_like_torch():
    """A conv / pool / LSTM model ported from torch by its state dict gives torch's losses and
    parameters after a few SGD steps."""

    def build(m):
        class Net(m.Module):
            def __init__(self):
                super().__init__()
                self.conv = m.Conv2d(1, 3, 3, padding=1)
                self.pool = m.MaxPool2d(2)
                self.flat = m.Flatten(2)
                self.lstm = m.LSTM(3, 4, batch_first=True)
                self.head = m.Linear(4, 2)

            def forward(self, x):
                h = self.flat(self.pool(self.conv(x).tanh()))  # (N, 3, 9)
                h = h.transpose(1, 2) if hasattr(h, "transpose") else h
                out, _ = self.lstm(h)
                return self.head(out[:, -1])

        return Net()

    theirs = build(torch.nn).double()
    ours = build(nn)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    opt, opt_t = tg.optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), 0.1)
    x, y = RNG.standard_normal((4, 1, 6, 6)), np.array([0, 1, 1, 0])
    for _ in range(3):
        opt.zero_grad()
        opt_t.zero_grad()
        loss = F.cross_entropy(ours(tg.tensor(x)), y)
        loss_t = TF.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        loss_t.backward()
        opt.step()
        opt_t.step()
        close(loss, loss_t, rtol=1e-11)
    for k, v in theirs.state_dict().items():
        close(ours.state_dict()[k], v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dims", [1, 2])
def test_max_pool_layers_with_ceil_mode_and_indices_agree_with_torch(dims):
    """The layers pass ceil_mode and return_indices to their function: PyTorch's windows,
    values, indices (of the flattened spatial dims) and the gradient to each window's first
    maximum (ties included: the input is rounded to one decimal)."""
    shape = (2, 3, 7) if dims == 1 else (2, 3, 5, 7)
    a = np.round(RNG.standard_normal(shape), 1)
    mine = getattr(nn, f"MaxPool{dims}d")(3, stride=2, ceil_mode=True, return_indices=True)
    theirs = getattr(torch.nn, f"MaxPool{dims}d")(3, stride=2, ceil_mode=True, return_indices=True)
    x, xt = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (y, i), (yt, it) = mine(x), theirs(xt)
    close(y, yt)
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    w = RNG.standard_normal(yt.shape)
    (y * tg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    close(x.grad, xt.grad)
