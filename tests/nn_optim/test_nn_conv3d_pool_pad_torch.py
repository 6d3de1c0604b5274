"""3-D convolution, pooling, padding, fold and channel dropout of ``tg.nn``, against PyTorch.

Hunted: silent wrong values or gradients, and missing or unhelpful errors, in ``F.conv3d`` /
``nn.Conv3d``, ``F.conv_transpose3d`` / ``nn.ConvTranspose3d``, ``max_pool3d`` (and the
``max_pool{1,2,3}d_with_indices`` functions), ``avg_pool3d``, ``adaptive_avg_pool1d/3d``,
``adaptive_max_pool1d/2d/3d`` (indices too), ``max_unpool1d/2d/3d``, ``lp_pool1d/2d/3d``, the
padding layers (``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad``,
``CircularPad`` 1d/2d/3d and ``F.pad``'s modes with negative amounts), ``F.unfold`` /
``F.fold`` (and their layers), ``BatchNorm3d``, ``InstanceNorm3d`` and
``dropout1d/2d/3d``.  References: PyTorch (float64; values, indices, input and parameter
gradients, one second derivative per family through ``create_graph``, a forward-mode product
through ``torch.func.jvp``), ``tg.gradcheck`` (central differences) on tiny cases, finite
differences where PyTorch's gradient is not the derivative (max_unpool with repeated
indices), and the closed form of channel dropout (whole channels zeroed, the rest scaled).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
import tapegrad.nn.functional as F  # noqa: E402
from tests.torch_programs import _compare, _raises  # noqa: E402

TF = torch.nn.functional
RNG = np.random.default_rng(7)
X5 = RNG.standard_normal((2, 4, 4, 5, 6))  # (N, C, D, H, W)
XT = np.round(RNG.standard_normal((2, 3, 5, 4, 6)) * 2.0)  # integer values: ties in pools
XP = np.abs(RNG.standard_normal((2, 3, 4, 5, 6))) + 0.2  # positive: lp pools of any p
W3 = RNG.standard_normal((6, 2, 2, 3, 2))
B6 = RNG.standard_normal(6)
WT = RNG.standard_normal((4, 3, 2, 2, 3))  # (in, out / groups, *k) of a transposed conv
COLS = [RNG.standard_normal(s) for s in ((2, 12, 20), (2, 18, 9), (8, 9))]  # fold's input


# ---- programs compared value by value and gradient by gradient -----------------------------------

PROGRAMS = {
    "conv3d-groups-stride-pad-dil": lambda L: L.F.conv3d(
        L.T(X5),
        L.T(W3),
        L.T(B6),
        stride=(1, 2, 1),
        padding=(1, 0, 2),
        dilation=(2, 1, 1),
        groups=2,
    ),  # fmt: skip
    "conv3d-same": lambda L: L.F.conv3d(L.T(X5), L.T(W3[:3].repeat(2, 1)), padding="same"),
    "conv3d-unbatched-nobias": lambda L: L.F.conv3d(L.T(X5[0]), L.T(np.tile(W3, (1, 2, 1, 1, 1)))),
    "conv3d-valid-stride": lambda L: L.F.conv3d(L.T(X5), L.T(W3.repeat(2, 1)), None, 2, "valid"),
    "conv_transpose3d": lambda L: L.F.conv_transpose3d(
        L.T(X5[:, :4, :3, :3, :3]),
        L.T(WT),
        L.T(B6),
        stride=(2, 1, 2),
        padding=(1, 0, 1),
        output_padding=(1, 0, 0),
        groups=2,
        dilation=(1, 2, 1),
    ),  # fmt: skip
    "conv_transpose3d-unbatched": lambda L: L.F.conv_transpose3d(
        L.T(X5[0, :4, :2, :3, :2]), L.T(WT), stride=2
    ),
    "max_pool3d-indices": lambda L: L.F.max_pool3d(L.T(XT), 2, return_indices=True),
    "max_pool3d-pad-stride-ceil": lambda L: L.F.max_pool3d(
        L.T(XT), (3, 2, 3), stride=(2, 1, 2), padding=1, ceil_mode=True, return_indices=True
    ),
    "max_pool3d-dilation-unbatched": lambda L: L.F.max_pool3d(
        L.T(XT[0]), 2, stride=1, dilation=(2, 1, 2), return_indices=True
    ),
    "max_pool1d_with_indices": lambda L: L.F.max_pool1d_with_indices(L.T(XT[0, :, 0]), 3, 2, 1),
    "max_pool2d_with_indices": lambda L: L.F.max_pool2d_with_indices(
        L.T(XT[0]), 2, 1, 1, ceil_mode=True
    ),
    "max_pool3d_with_indices": lambda L: L.F.max_pool3d_with_indices(L.T(XT), 2),
    "avg_pool3d": lambda L: L.F.avg_pool3d(L.T(X5), 2),
    "avg_pool3d-pad-exclude": lambda L: L.F.avg_pool3d(
        L.T(X5), 3, stride=(1, 2, 2), padding=1, count_include_pad=False
    ),
    "avg_pool3d-divisor-unbatched": lambda L: L.F.avg_pool3d(
        L.T(X5[0]), (2, 3, 2), stride=(2, 1, 3), divisor_override=5
    ),
    "adaptive_avg_pool1d": lambda L: L.F.adaptive_avg_pool1d(L.T(X5[0, :, 0]), 4),
    "adaptive_avg_pool1d-unbatched": lambda L: L.F.adaptive_avg_pool1d(L.T(X5[0, 0]), 3),
    "adaptive_avg_pool3d": lambda L: L.F.adaptive_avg_pool3d(L.T(X5), (3, None, 4)),
    "adaptive_avg_pool3d-up": lambda L: L.F.adaptive_avg_pool3d(L.T(X5[0]), 7),
    "adaptive_max_pool1d": lambda L: L.F.adaptive_max_pool1d(L.T(XT[0, :, 0]), 3, True),
    "adaptive_max_pool1d-up": lambda L: L.F.adaptive_max_pool1d(L.T(XT[0, :, 0]), 5),
    "adaptive_max_pool2d": lambda L: L.F.adaptive_max_pool2d(L.T(XT[0]), (3, None), True),
    "adaptive_max_pool2d-unbatched": lambda L: L.F.adaptive_max_pool2d(L.T(XT[0, 0]), 4, True),
    "adaptive_max_pool3d": lambda L: L.F.adaptive_max_pool3d(L.T(XT), (2, 3, 4), True),
    "adaptive_max_pool2d_with_indices": lambda L: L.F.adaptive_max_pool2d_with_indices(
        L.T(XT[0]), 3
    ),
    "lp_pool1d-p2": lambda L: L.F.lp_pool1d(L.T(XP[0, :, 0]), 2, 3, 2),
    "lp_pool2d-p1-negative": lambda L: L.F.lp_pool2d(L.T(X5[0]), 1, (2, 3)),
    "lp_pool2d-p3.5": lambda L: L.F.lp_pool2d(L.T(XP[0]), 3.5, 2, stride=1),
    "lp_pool2d-inf": lambda L: L.F.lp_pool2d(L.T(X5[0]), float("inf"), 2),
    "lp_pool3d-p2": lambda L: L.F.lp_pool3d(L.T(XP), 2, (2, 2, 3)),
    "lp_pool2d-ceil_mode": lambda L: L.F.lp_pool2d(L.T(XP[0]), 2, 3, 2, ceil_mode=True),
    "lp_pool2d-zero-window": lambda L: L.F.lp_pool2d(
        L.T(np.where(np.arange(6) < 3, 0.0, XP[0, :, :4])), 2, (2, 3)
    ),
    "unfold": lambda L: L.F.unfold(L.T(X5[:, :3, 0]), 2),
    "unfold-all-args": lambda L: L.F.unfold(
        L.T(X5[:, :3, 0]), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3)
    ),
    "unfold-unbatched": lambda L: L.F.unfold(L.T(X5[0, :3, 0]), 3, padding=1),
    "fold": lambda L: L.F.fold(L.T(COLS[0]), (5, 6), 2),
    "fold-all-args": lambda L: L.F.fold(
        L.T(COLS[1]),
        (5, 6),
        (2, 3),
        dilation=(2, 1),
        padding=(1, 2),
        stride=(2, 3),
    ),  # fmt: skip
    "fold-unbatched": lambda L: L.F.fold(L.T(COLS[2]), (4, 4), 2, stride=1),
    "pad-reflect-negative": lambda L: L.F.pad(L.T(X5[0]), (-1, 2, 2, -1, 0, 1), mode="reflect"),
    "pad-replicate-negative": lambda L: L.F.pad(L.T(X5[0]), (-2, 3, 1, -2), mode="replicate"),
    "pad-circular-negative": lambda L: L.F.pad(L.T(X5[0]), (-1, 3, 2, -1), mode="circular"),
    "pad-circular-3d": lambda L: L.F.pad(L.T(X5), (1, 2, 0, 5, 4, 1), mode="circular"),
    "dropout-eval": lambda L: (
        L.F.dropout1d(L.T(X5[0, :, 0]), 0.5, training=False),
        L.F.dropout2d(L.T(X5[0]), 0.3, False),
        L.F.dropout3d(L.T(X5), 0.9, False),
    ),
    "dropout-p0": lambda L: L.F.dropout3d(L.T(X5[0]), 0.0),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_functional_program_agrees_with_torch(name):
    _compare(PROGRAMS[name], rtol=1e-9, atol=1e-11)


_PAD_CASES = [
    (mode, n, pad, shape)
    for mode in ("Zero", "Constant", "Reflection", "Replication", "Circular")
    for n, pad, shape in (
        (1, 2, (2, 3, 4)),
        (1, (3, -1), (3, 4)),
        (2, (1, 0, 2, 3), (2, 3, 4, 4)),
        (2, (-1, 2, 1, -2), (3, 4, 4)),
        (3, 1, (2, 2, 3, 4, 4)),
        (3, (0, 1, 2, 3, 1, 0), (2, 4, 4, 4)),
    )
]


@pytest.mark.parametrize("mode,n,pad,shape", _PAD_CASES)
def test_padding_layers_agree_with_torch(mode, n, pad, shape):
    x = RNG.standard_normal(shape)

    def prog(L):
        cls = getattr(L.m.nn, f"{mode}Pad{n}d")
        layer = cls(pad, -1.5) if mode == "Constant" else cls(pad)
        assert list(layer.state_dict()) == []
        return layer(L.T(x))

    _compare(prog)


def test_padding_layers_attributes_and_repr_as_torch():
    for name, args in (
        ("ZeroPad1d", (2,)),
        ("ZeroPad2d", ((1, 2, 3, 4),)),
        ("ZeroPad3d", (1,)),
        ("ConstantPad2d", (2, 3.5)),
        ("ReflectionPad3d", (1,)),
        ("ReplicationPad1d", ((1, 2),)),
        ("CircularPad2d", (1,)),
    ):
        mine, theirs = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert tuple(mine.padding) == tuple(theirs.padding), name
        assert getattr(mine, "value", None) == getattr(theirs, "value", None), name
        assert repr(mine) == repr(theirs), name


@pytest.mark.parametrize(
    "name,args",
    [
        ("LPPool2d", (2, 3)),
        ("LPPool1d", (1.5, 2, 1)),
        ("AdaptiveMaxPool2d", ((2, None),)),
        ("AdaptiveAvgPool3d", (2,)),
        ("AdaptiveAvgPool1d", (4,)),
        ("Fold", ((4, 5), 2)),
        ("Unfold", ((2, 3), 1, 1, (1, 2))),
        ("MaxUnpool3d", (2, 1)),
        ("Dropout1d", (0.2,)),
        ("Conv3d", (2, 4, 3, 1, "same")),
        ("ConvTranspose3d", (2, 3, 2, 1, 1, 0, 1, False)),
    ],
)
def test_layer_repr_and_attributes_as_torch(name, args):
    mine, theirs = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mine) == repr(theirs)


# ---- layers: parameters, init, state_dict, values and parameter gradients ------------------------


def _copy_params(mine, theirs):
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _param_grads_agree(mine, theirs, x, w_out=None):
    xt = torch.tensor(x, requires_grad=True)
    xg = tg.tensor(x, requires_grad=True)
    yt, yg = theirs(xt), mine(xg)
    assert tuple(yg.shape) == tuple(yt.shape)
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = RNG.standard_normal(tuple(yt.shape)) if w_out is None else w_out
    (yt * torch.tensor(w)).sum().backward()
    (yg * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (k, pt), (k2, pg) in zip(theirs.named_parameters(), mine.named_parameters(), strict=True):
        assert k == k2
        np.testing.assert_allclose(pg.grad.numpy(), pt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name,args,kwargs,shape",
    [
        ("Conv3d", (4, 6, (2, 3, 2)), dict(stride=(1, 2, 1), padding=1, groups=2), (2, 4, 4, 5, 6)),
        ("Conv3d", (2, 3, 3), dict(padding="same", bias=False, dilation=(1, 2, 1)), (2, 4, 5, 3)),
        (
            "ConvTranspose3d",
            (4, 6, 2),
            dict(stride=2, padding=(0, 1, 0), groups=2),
            (1, 4, 2, 3, 2),
        ),
    ],
)
def test_conv3d_layers_agree_with_torch(name, args, kwargs, shape):
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    mine = getattr(tg.nn, name)(*args, **kwargs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for (k, pt), (_, pg) in zip(theirs.named_parameters(), mine.named_parameters(), strict=True):
        assert tuple(pg.shape) == tuple(pt.shape), k
        # PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with its fan_in
        fan_in = theirs.weight[0].numel()
        assert np.abs(pg.detach().numpy()).max() <= 1.0 / np.sqrt(fan_in) + 1e-12, k
    assert repr(mine) == repr(theirs)
    _copy_params(mine, theirs)
    _param_grads_agree(mine, theirs, RNG.standard_normal(shape))


def test_conv_transpose3d_layer_output_size_as_torch():
    theirs = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    mine = tg.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1)
    _copy_params(mine, theirs)
    x = RNG.standard_normal((1, 2, 3, 2, 3))
    yt = theirs(torch.tensor(x), output_size=(6, 4, 5))
    yg = mine(tg.tensor(x), output_size=(6, 4, 5))
    np.testing.assert_allclose(yg.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name,args,shape",
    [
        ("MaxPool3d", (2,), (2, 3, 4, 4, 6)),
        ("MaxPool3d", ((3, 2, 2), (2, 1, 2), 1, 1, False, True), (1, 2, 5, 4, 5)),
        ("AvgPool3d", (2, 1, 1, False, False), (2, 2, 3, 4, 3)),
        ("AdaptiveAvgPool1d", (3,), (2, 3, 7)),
        ("AdaptiveAvgPool3d", ((2, None, 3),), (2, 2, 3, 4, 5)),
        ("AdaptiveMaxPool1d", (3,), (2, 3, 7)),
        ("AdaptiveMaxPool2d", ((3, 2),), (2, 3, 5, 7)),
        ("AdaptiveMaxPool3d", (2,), (1, 2, 3, 4, 5)),
        ("LPPool1d", (2, 3), (2, 3, 7)),
        ("LPPool2d", (1.5, (2, 3), 1), (2, 3, 5, 7)),
        ("LPPool3d", (2, 2), (1, 2, 4, 4, 4)),
        ("Unfold", ((2, 3), 1, 1, (1, 2)), (2, 3, 4, 5)),
        ("Fold", ((4, 5), 2), (2, 8, 12)),
        ("InstanceNorm3d", (3,), (2, 3, 2, 3, 4)),
        ("InstanceNorm3d", (3, 1e-3, 0.1, True), (3, 2, 3, 4)),
    ],
)
def test_pool_and_shape_layers_agree_with_torch(name, args, shape):
    theirs = getattr(torch.nn, name)(*args).double()
    mine = getattr(tg.nn, name)(*args)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    if list(theirs.parameters()):
        with torch.no_grad():
            for p in theirs.parameters():
                p.copy_(torch.tensor(RNG.standard_normal(tuple(p.shape))))
        _copy_params(mine, theirs)
    x = (
        np.abs(RNG.standard_normal(shape)) + 0.1
        if name.startswith("LP")
        else XT.ravel()[: int(np.prod(shape))].reshape(shape) + RNG.standard_normal(shape) * 1e-3
    )
    _param_grads_agree(mine, theirs, x)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_layers_invert_the_pool_as_torch(dims):
    shape = (2, 3, 4, 6, 4)[: dims + 2]
    x = RNG.standard_normal(shape)
    pt, pg = (
        getattr(torch.nn, f"MaxPool{dims}d")(2, return_indices=True),
        getattr(tg.nn, f"MaxPool{dims}d")(2, return_indices=True),
    )
    ut, ug = getattr(torch.nn, f"MaxUnpool{dims}d")(2), getattr(tg.nn, f"MaxUnpool{dims}d")(2)
    assert repr(ug) == repr(ut)
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    (yt, it), (yg, ig) = pt(xt), pg(xg)
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    size = list(shape[2:])
    size[-1] += 1  # an output_size the default misses by one
    zt, zg = ut(yt, it, output_size=size), ug(yg, ig, output_size=size)
    np.testing.assert_allclose(zg.detach().numpy(), zt.detach().numpy(), rtol=0, atol=0)
    w = RNG.standard_normal(tuple(zt.shape))
    (zt * torch.tensor(w)).sum().backward()
    (zg * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_max_unpool_functional_unbatched_and_default_size_as_torch():
    x = RNG.standard_normal((3, 4, 6))

    def prog(L):
        y, i = L.F.max_pool2d(L.T(x), 2, stride=2, return_indices=True)
        return L.F.max_unpool2d(y, i, 2), L.F.max_unpool2d(y, i, 2, output_size=(5, 7))

    _compare(prog)


def _unpool_last_write(y, idx, size):
    """max_unpool of one (N, C) plane in NumPy: the values written in order (the last of
    repeated indices stays)."""
    out = np.zeros(size)
    for v, i in zip(y.ravel(), idx.ravel(), strict=True):
        out[i] = v
    return out


def test_max_unpool_repeated_indices_take_the_derivative_of_the_last_write():
    """Overlapping windows (kernel 3, stride 2) repeat an index.  With the equal values an
    overlapping max pool gives, the output is PyTorch's; with any values, the last is written
    and the gradient is the derivative of the values written (central differences of the
    NumPy closed form), where PyTorch's backward gives every repeat the output's gradient (so
    its gradient of pool-then-unpool counts a twice-chosen element twice)."""
    x = RNG.standard_normal((1, 1, 7, 7))
    y, idx = TF.max_pool2d(torch.tensor(x), 3, 2, return_indices=True)
    assert len(np.unique(idx.numpy())) < idx.numel()  # some indices repeat
    out_g = F.max_unpool2d(tg.tensor(y.numpy()), tg.tensor(idx.numpy()), 3, 2)
    np.testing.assert_array_equal(out_g.numpy(), TF.max_unpool2d(y, idx, 3, 2).numpy())
    xg = tg.tensor(x, requires_grad=True)
    w = RNG.standard_normal((1, 1, 7, 7))
    yg, ig = F.max_pool2d(xg, 3, 2, return_indices=True)
    (F.max_unpool2d(yg, ig, 3, 2) * tg.tensor(w)).sum().backward()
    chosen = np.unique(idx.numpy())
    expected = np.zeros(49)
    expected[chosen] = w.ravel()[chosen]  # d out[j] / d x[j] = 1 for every chosen j
    np.testing.assert_allclose(xg.grad.numpy().ravel(), expected, rtol=1e-15)

    v = RNG.standard_normal((3, 3))
    at = np.array([[0, 2, 2], [12, 12, 14], [12, 22, 24]])
    vg = tg.tensor(v[None, None], requires_grad=True)
    out = F.max_unpool2d(vg, tg.tensor(at[None, None]), 3, 2)
    np.testing.assert_array_equal(out.detach().numpy().ravel(), _unpool_last_write(v, at, 49))
    (out * tg.tensor(w)).sum().backward()
    h, fd = 1e-6, np.zeros(9)
    for k in range(9):
        e = np.zeros(9)
        e[k] = h
        plus = _unpool_last_write(v + e.reshape(3, 3), at, 49)
        minus = _unpool_last_write(v - e.reshape(3, 3), at, 49)
        fd[k] = ((plus - minus) * w.ravel()).sum() / (2 * h)
    np.testing.assert_allclose(vg.grad.numpy().ravel(), fd, atol=1e-8)


@pytest.mark.parametrize("n", [3])
def test_batchnorm3d_trains_and_evaluates_as_torch(n):
    theirs = torch.nn.BatchNorm3d(3, momentum=0.2).double()
    mine = tg.nn.BatchNorm3d(3, momentum=0.2)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor([0.5, 1.5, -1.0]))
        theirs.bias.copy_(torch.tensor([0.1, 0.0, 2.0]))
    _copy_params(mine, theirs)
    for _ in range(2):
        _param_grads_agree(mine, theirs, RNG.standard_normal((2, 3, 2, 3, 2)))
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(np.asarray(mine.state_dict()[k]), v.numpy(), rtol=1e-12)
    mine.eval(), theirs.eval()
    x = RNG.standard_normal((2, 3, 2, 2, 2))
    np.testing.assert_allclose(
        mine(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-12, atol=1e-12,
    )  # fmt: skip


def test_instancenorm3d_running_stats_as_torch():
    theirs = torch.nn.InstanceNorm3d(2, affine=True, track_running_stats=True).double()
    mine = tg.nn.InstanceNorm3d(2, affine=True, track_running_stats=True)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    _param_grads_agree(mine, theirs, RNG.standard_normal((3, 2, 2, 3, 2)))
    mine.eval(), theirs.eval()
    x = RNG.standard_normal((2, 2, 3, 2))  # unbatched (C, D, H, W)
    np.testing.assert_allclose(
        mine(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-12, atol=1e-12,
    )  # fmt: skip


# ---- channel dropout -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,shape,unit",
    [
        ("dropout1d", (4, 6, 5), 2),
        ("dropout1d", (6, 5), 1),  # unbatched (C, L)
        ("dropout2d", (3, 5, 2, 3), 2),
        ("dropout2d", (5, 4, 3), 2),  # PyTorch's: read as (N, C, L), with a warning
        ("dropout3d", (2, 5, 2, 2, 3), 2),
        ("dropout3d", (5, 2, 2, 3), 1),  # unbatched (C, D, H, W)
    ],
)
def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest(fn, shape, unit):
    x = np.abs(RNG.standard_normal(shape)) + 1.0
    xg = tg.tensor(x, requires_grad=True)
    tg.manual_seed(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = getattr(F, fn)(xg, p=0.4)
    assert bool(caught) == (fn == "dropout2d" and len(shape) == 3)
    ratio = y.detach().numpy() / x
    per_channel = ratio.reshape(shape[:unit] + (-1,))
    np.testing.assert_allclose(per_channel, per_channel[..., :1] + 0 * per_channel, rtol=1e-15)
    scale = np.where(ratio > 0, 1.0 / 0.6, 0.0)
    np.testing.assert_allclose(ratio, scale, rtol=1e-15)
    assert 0 < np.count_nonzero(per_channel[..., 0]) < per_channel[..., 0].size
    y.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), scale, rtol=1e-15)
    assert getattr(F, fn)(xg, p=1.0).detach().numpy().max() == 0.0
    layer = getattr(tg.nn, f"Dropout{fn[-2]}d")(0.4)
    assert repr(layer) == repr(getattr(torch.nn, f"Dropout{fn[-2]}d")(0.4))
    assert layer(xg).shape == shape
    np.testing.assert_array_equal(layer.eval()(xg).detach().numpy(), x)


def test_channel_dropout_refused_in_a_trace():
    def f(x):
        return F.dropout2d(x, 0.5).sum()

    with pytest.raises(RuntimeError, match="dropout2d: a tg.trace recording"):
        tg.trace(f, np.ones((1, 2, 2, 2)))


# ---- max-pool ties: the gradient goes to the first maximum, as PyTorch's -------------------------


def test_max_pool3d_and_adaptive_max_ties_route_to_the_first_maximum():
    x = np.zeros((1, 1, 2, 3, 4))
    x[0, 0, 1, 2, 3] = -1.0

    def prog(L):
        return (
            L.F.max_pool3d(L.T(x), 2, stride=1, return_indices=True),
            L.F.adaptive_max_pool2d(L.T(x[0]), (2, 3), return_indices=True),
            L.F.adaptive_max_pool1d(L.T(x[0, :, 0]), 2, return_indices=True),
        )

    _compare(prog, rtol=0, atol=0)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=2, stride=1, padding=1, dilation=2),
    ],
)
def test_max_pool_of_minus_inf_picks_a_real_element_not_the_padding(dims, kw):
    """A window whose real elements are all -inf ties with its -inf padding: PyTorch's index
    and gradient go to the first real element (tapegrad's went to the padding: index 0 and
    a lost gradient)."""
    x = np.full((1, 2) + (3,) * dims, -np.inf)
    x[0, 0].flat[-1] = 1.0
    x[0, 1].flat[1] = 2.0

    def prog(L):
        return getattr(L.F, f"max_pool{dims}d")(L.T(x), return_indices=True, **kw)

    _compare(prog, rtol=0, atol=0)


def test_empty_batch_shapes_as_torch():
    def prog(L):
        z = L.T(np.zeros((0, 2, 3, 3)))
        return (
            L.F.unfold(z, 2),
            L.F.fold(L.T(np.zeros((0, 8, 4))), (3, 3), 2),
            L.F.conv3d(L.T(np.zeros((0, 2, 3, 3, 3))), L.T(np.ones((1, 2, 2, 2, 2)))),
            L.F.adaptive_max_pool2d(z, 2),
            L.F.max_pool3d(L.T(np.zeros((0, 2, 3, 3, 3))), 2),
        )

    _compare(prog)


def test_trace_replays_with_new_values():
    rng = np.random.default_rng(5)
    x1, x2 = rng.standard_normal((2, 1, 2, 4, 4))

    def f(x):
        return (
            F.lp_pool2d(x * x, 2, 2).sum()
            + (F.fold(F.unfold(x, 2, padding=1), (4, 4), 2, padding=1) ** 2).sum()
            + (F.pad(x, (1, -1, 2, 1), mode="circular") ** 3).sum()
            + (F.adaptive_avg_pool2d(x, 3) ** 2).sum()
            + (F.conv3d(x[None], np.ones((1, 1, 2, 2, 2))) ** 2).sum()
        )

    replay = tg.trace(f, x1)
    np.testing.assert_allclose(float(replay(x2)), float(f(tg.tensor(x2))), rtol=1e-12)


# ---- second derivatives (create_graph), forward mode, gradcheck ----------------------------------


UNPOOL_IDX = TF.max_pool2d(torch.tensor(X5[0, :, :, :4, :3]), 2, return_indices=True)[1].numpy()


def _lib_ints(m, a):
    return torch.tensor(a) if m is TF else tg.tensor(a)


SECOND = {
    "conv3d": (
        lambda m, x, w: m.conv3d(x, w, stride=(1, 2, 1), padding=1, groups=2),
        X5[:1, :, :3, :3, :3],
        W3,
    ),  # fmt: skip
    "conv_transpose3d": (
        lambda m, x, w: m.conv_transpose3d(x, w, stride=2, padding=1, groups=2),
        X5[:1, :4, :2, :2, :3],
        WT,
    ),  # fmt: skip
    "max_pool3d*conv": (
        lambda m, x, w: m.max_pool3d(m.conv3d(x, w[:, :, :1], groups=2), 2) ** 2,
        X5[:1, :, :4, :4, :4],
        W3,
    ),  # fmt: skip
    "lp_pool2d": (lambda m, x, w: m.lp_pool2d(x * w, 3.0, 2), XP[0], XP[1] + 0.5),
    "lp_pool3d": (lambda m, x, w: m.lp_pool3d(x * w, 2.0, (2, 1, 2)), XP, XP[::-1]),
    "avg-adaptive": (
        lambda m, x, w: m.adaptive_avg_pool3d(m.avg_pool3d(x * w, 2, 1, 1), (2, 3, 2)) ** 3,
        X5,
        X5[::-1],
    ),  # fmt: skip
    "adaptive_max": (lambda m, x, w: m.adaptive_max_pool2d(x * w, 3) ** 2, X5[0], X5[1]),
    "fold-unfold": (
        lambda m, x, w: m.fold(m.unfold(x * w, 2, padding=1) ** 2, (5, 6), 2, padding=1),
        X5[:, :3, 0],
        X5[:, 1:, 1],
    ),  # fmt: skip
    "max_unpool2d": (
        lambda m, x, w: m.max_unpool2d(x * w, _lib_ints(m, UNPOOL_IDX), 2, output_size=(4, 3)) ** 3,
        X5[0, :, :, :2, :1],
        X5[1, :, :, :2, :1],
    ),  # fmt: skip
    "pad-circular-negative": (
        lambda m, x, w: m.pad(x * w, (1, -2, 0, 1, -1, 1), mode="circular") ** 3,
        X5,
        X5[::-1],
    ),
    "instance_norm-3d": (lambda m, x, w: m.instance_norm(x * w), X5, X5[::-1]),
    "pad-reflect": (lambda m, x, w: m.pad(x * w, (1, 2, 2, 0, 1, 1), mode="reflect") ** 2, X5, X5),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_derivatives_agree_with_torch(name):
    fn, x, w = SECOND[name]
    out_w = None
    results = []
    for lib, m in ((torch, TF), (tg, F)):
        xs = [lib.tensor(np.array(a), requires_grad=True) for a in (x, w)]
        y = fn(m, *xs)
        if out_w is None:
            out_w = RNG.standard_normal(tuple(y.shape))
            v = [RNG.standard_normal(a.shape) for a in (x, w)]
        gs = lib.autograd.grad((y * lib.tensor(out_w)).sum(), xs, create_graph=True)
        dot = sum((g * lib.tensor(vv)).sum() for g, vv in zip(gs, v, strict=True))
        results.append([g.detach().numpy() for g in lib.autograd.grad(dot, xs)])
    for mine, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-8, atol=1e-10)


def test_conv3d_forward_mode_agrees_with_torch_func_jvp():
    x, w = X5[:1, :, :3, :3, :3], W3
    tx, tw = RNG.standard_normal(x.shape), RNG.standard_normal(w.shape)
    _, theirs = torch.func.jvp(
        lambda a, b: TF.conv3d(a, b, padding=1, groups=2),
        (torch.tensor(x), torch.tensor(w)),
        (torch.tensor(tx), torch.tensor(tw)),
    )
    _, mine = tg.jvp(lambda a, b: F.conv3d(a, b, padding=1, groups=2), (x, w), (tx, tw))
    np.testing.assert_allclose(np.asarray(mine), theirs.numpy(), rtol=1e-10, atol=1e-12)


GRADCHECK = {
    "conv3d": (lambda x, w: F.conv3d(x, w, padding=1), ((1, 1, 2, 2, 2), (2, 1, 2, 1, 2))),
    "conv_transpose3d": (
        lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=(1, 0, 0)),
        ((1, 2, 2, 1, 2), (2, 1, 2, 2, 1)),
    ),
    "lp_pool2d": (lambda x, w: F.lp_pool2d(x * x + w, 2.5, 2), ((1, 2, 4), (1, 2, 4))),
    "fold": (lambda x, w: F.fold(x * w, (3, 3), 2), ((1, 4, 4), (1, 4, 4))),
    "pad-circular": (
        lambda x, w: F.pad(x * w, (-1, 2, 1, 1), mode="circular"),
        ((1, 2, 3), (1, 2, 3)),
    ),
    "adaptive_avg_pool3d": (
        lambda x, w: F.adaptive_avg_pool3d(x * w, (2, 1, 2)),
        ((1, 3, 2, 3), (1, 3, 2, 3)),
    ),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck(name):
    fn, shapes = GRADCHECK[name]
    rng = np.random.default_rng(11)
    args = [tg.tensor(rng.uniform(0.5, 1.5, s), requires_grad=True) for s in shapes]
    assert tg.gradcheck(fn, args)


# ---- errors --------------------------------------------------------------------------------------

ERRORS = {
    "conv3d-weight-4d": (lambda L: L.F.conv3d(L.T(X5), L.T(W3[..., 0])), "conv3d"),
    "conv3d-channels": (lambda L: L.F.conv3d(L.T(X5), L.T(W3)), "conv3d"),
    "conv3d-kernel-too-big": (
        lambda L: L.F.conv3d(L.T(X5[:, :2]), L.T(np.ones((1, 2, 5, 1, 1)))),
        "conv3d",
    ),
    "conv_transpose3d-channels": (
        lambda L: L.F.conv_transpose3d(L.T(X5[:, :3]), L.T(WT)),
        "conv_transpose3d",
    ),
    "max_pool3d-pad": (lambda L: L.F.max_pool3d(L.T(X5), 2, padding=2), "max_pool3d"),
    "avg_pool3d-2d-input": (lambda L: L.F.avg_pool3d(L.T(X5[0, 0, 0]), 2), "avg_pool3d"),
    "adaptive_avg_pool3d-pair": (
        lambda L: L.F.adaptive_avg_pool3d(L.T(X5), (2, 2)),
        "adaptive_avg_pool3d",
    ),
    "adaptive_max_pool1d-zero": (
        lambda L: L.F.adaptive_max_pool1d(L.T(X5[0, :, 0]), 0),
        "adaptive_max_pool1d",
    ),
    "max_unpool2d-indices-shape": (
        lambda L: L.F.max_unpool2d(L.T(X5[0, :, :2]), L.I(np.zeros((4, 2, 4), int)), 2),
        "max_unpool2d",
    ),
    "max_unpool1d-index-range": (
        lambda L: L.F.max_unpool1d(L.T(X5[0, :, 0]), L.I(np.full((4, 5, 6), 100)), 2),
        "max_unpool1d",
    ),
    "max_unpool2d-output-size": (
        lambda L: L.F.max_unpool2d(
            L.T(X5[0, :, :2]), L.I(np.zeros((4, 2, 5, 6), int)), 2, output_size=(7, 12)
        ),
        "max_unpool2d",
    ),
    "unfold-5d": (lambda L: L.F.unfold(L.T(X5), 2), "unfold"),
    "fold-not-divisible": (lambda L: L.F.fold(L.T(np.ones((1, 5, 4))), (3, 3), 2), "fold"),
    "fold-blocks": (lambda L: L.F.fold(L.T(np.ones((1, 4, 5))), (3, 3), 2), "fold"),
    "fold-4d": (lambda L: L.F.fold(L.T(np.ones((1, 1, 4, 4))), (3, 3), 2), "fold"),
    "dropout1d-4d": (lambda L: L.F.dropout1d(L.T(X5[0]), 0.5), "dropout1d"),
    "dropout3d-p": (lambda L: L.F.dropout3d(L.T(X5), 1.5), "dropout3d"),
    "pad-circular-wraps-twice": (
        lambda L: L.F.pad(L.T(X5[0, 0]), (0, 7), mode="circular"),
        "pad",
    ),
    "pad-reflect-too-small": (lambda L: L.F.pad(L.T(X5[0, 0]), (-3, -3), mode="reflect"), "pad"),
    "circular-pad-layer-dims": (lambda L: L.m.nn.CircularPad2d(1)(L.T(X5)), "CircularPad2d"),
    "batchnorm3d-4d": (lambda L: L.m.nn.BatchNorm3d(4)(L.T(X5[0])), "BatchNorm3d"),
    "instancenorm3d-3d": (lambda L: L.m.nn.InstanceNorm3d(4)(L.T(X5[0, 0])), "InstanceNorm3d"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_as_torch_and_names_the_function(name):
    prog, fragment = ERRORS[name]
    assert _raises(prog, "torch") is not None, "torch computes this"
    err = _raises(prog, "tg")
    assert err is not None, "tapegrad gives a value where PyTorch raises"
    assert fragment in str(err), f"{type(err).__name__}: {err}"


def test_refusals_name_the_function_and_the_fix():
    x = tg.tensor(XP[0])
    with pytest.raises(TypeError, match="dropout2d: inplace=True"):
        F.dropout2d(x, inplace=True)
    with pytest.raises(TypeError, match="Dropout3d: inplace=True"):
        tg.nn.Dropout3d(inplace=True)
    with pytest.raises(TypeError, match="max_unpool2d: indices must be an integer"):
        F.max_unpool2d(x, x, 2)
