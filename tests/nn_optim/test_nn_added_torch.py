"""The nn layers and losses added after PyTorch's: transposed convolutions
(``ConvTranspose1d/2d``, ``F.conv_transpose1d/2d``), instance normalisation (``InstanceNorm1d/2d``,
``F.instance_norm``), ``Bilinear`` / ``F.bilinear``, ``F.interpolate`` / ``Upsample`` ('nearest',
'linear', 'bilinear') and the margin losses (``margin_ranking_loss``, ``hinge_embedding_loss``,
``soft_margin_loss``, ``cosine_embedding_loss``, ``multi_margin_loss``,
``triplet_margin_loss`` and their modules), hunted against PyTorch (float64): values, the
gradients of a random weighting of the outputs with respect to every input and parameter
(hinge kinks included: PyTorch's one-sided choices), one second derivative per family
(``create_graph``; central differences where PyTorch has none), ``tg.gradcheck``, module
parameter names, shapes, init bounds, state dicts loaded from torch, running statistics, and
the errors for bad shapes and arguments (where PyTorch raises, tapegrad raises naming the
function).
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tapegrad import nn  # noqa: E402
from tapegrad.nn import functional as F  # noqa: E402
from tests.finite_differences import central_gradient  # noqa: E402
from tests.torch_programs import _compare, _raises  # noqa: E402

RNG = np.random.default_rng(7)


def _r(*shape):
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape)


def _close(a, b, rtol=1e-10, atol=1e-12):
    a = a.detach().numpy() if isinstance(a, (tg.Tensor, torch.Tensor)) else a
    b = b.detach().numpy() if isinstance(b, (tg.Tensor, torch.Tensor)) else b
    assert np.shape(a) == np.shape(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _second(prog, arrays, rtol=1e-9):
    """prog(lib, *leaves) -> scalar: its Hessian-vector product (create_graph, a random v) in
    tapegrad and PyTorch."""
    vs = [RNG.standard_normal(np.shape(a)) for a in arrays]
    out = []
    for lib in (tg, torch):
        xs = [lib.tensor(np.array(a, dtype=float), requires_grad=True) for a in arrays]
        g = lib.autograd.grad(prog(lib, *xs), xs, create_graph=True)
        s = sum((gi * lib.tensor(v)).sum() for gi, v in zip(g, vs, strict=True))
        out.append(lib.autograd.grad(s, xs, allow_unused=True))
    for a, b in zip(*out, strict=True):
        _close(a, b, rtol=rtol)


def _both_raise(prog, fragment):
    """PyTorch raises; tapegrad raises a clear error whose message holds ``fragment``."""
    assert _raises(prog, "torch") is not None, "PyTorch accepts this program"
    e = _raises(prog, "tg")
    assert e is not None, "tapegrad gives a number where PyTorch raises"
    assert isinstance(e, (ValueError, TypeError, IndexError, NotImplementedError)), repr(e)
    assert fragment in str(e), f"{fragment!r} not in {e}"


def _load_from_torch(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(ours.state_dict()[k].shape) == tuple(v.shape), k
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})


def _module_agree(ours, theirs, *arrays, **kw):
    """Values and the gradients of the inputs and every parameter of two modules holding the
    same state."""
    xa = [tg.tensor(a, requires_grad=True) for a in arrays]
    xb = [torch.tensor(a, requires_grad=True) for a in arrays]
    ya, yb = ours(*xa, **kw), theirs(*xb, **kw)
    _close(ya, yb)
    w = RNG.standard_normal(tuple(yb.shape))
    (ya * tg.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    for a, b in zip(xa, xb, strict=True):
        _close(a.grad, b.grad)
    theirs_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs_params)
    for name, p in ours.named_parameters():
        _close(p.grad, theirs_params[name].grad)


def _init_bounds(module, bound):
    for name, p in module.named_parameters():
        v = np.abs(p.numpy())
        assert v.max() <= bound, name
        if v.size >= 20:
            assert v.max() > 0.6 * bound, name  # the whole interval, not a narrower one


# ---- transposed convolutions ---------------------------------------------------------------------

CONVT = [
    # (n, x shape, weight shape, keyword arguments)
    (1, (2, 4, 5), (4, 3, 3), {}),
    (1, (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (1, (4, 6), (4, 1, 2), dict(stride=3, padding=2, output_padding=1, dilation=2, groups=2)),
    (1, (1, 2, 3), (2, 2, 4), dict(padding=4, dilation=3)),  # cropping: padding > d (k - 1)
    (1, (1, 2, 4), (2, 2, 3), dict(dilation=2, output_padding=1)),  # output_padding < dilation
    (2, (2, 4, 3, 4), (4, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0))),
    (2, (1, 4, 3, 3), (4, 1, 2, 3), dict(stride=2, dilation=(1, 2), groups=4)),
    (2, (3, 2, 3), (3, 2, 2, 2), dict(stride=(1, 3), output_padding=(0, 2))),  # unbatched
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("n, xs, ws, kw", CONVT)
def test_conv_transpose_values_and_gradients(n, xs, ws, kw, bias):
    groups = kw.get("groups", 1)

    def prog(L):
        b = L.T(_r(ws[1] * groups)) if bias else None
        return getattr(L.F, f"conv_transpose{n}d")(L.T(_r(*xs)), L.T(_r(*ws)), b, **kw)

    _compare(prog)


def test_conv_transpose_empty_batch():
    _compare(
        lambda L: L.F.conv_transpose2d(L.T(np.zeros((0, 2, 3, 2))), L.T(_r(2, 3, 2, 2)), stride=2)
    )


def test_conv_transpose_is_the_adjoint_of_conv():
    x, w, y = _r(2, 3, 9), _r(2, 3, 3), _r(2, 2, 5)
    kw = dict(stride=2, padding=1, dilation=1)
    lhs = (F.conv1d(tg.tensor(x), tg.tensor(w), **kw) * tg.tensor(y)).sum()
    rhs = (F.conv_transpose1d(tg.tensor(y), tg.tensor(w), output_padding=0, **kw) * x).sum()
    assert np.isclose(lhs.item(), rhs.item(), rtol=1e-12)


def test_conv_transpose_second_derivative_and_gradcheck():
    def prog(lib, x, w, b):
        y = lib.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)
        return lib.tanh(y).sum()

    _second(prog, [_r(1, 2, 2, 3), _r(2, 3, 3, 2), _r(3)])
    assert tg.gradcheck(
        lambda x, w: F.conv_transpose1d(x, w, stride=2, groups=2), [_r(1, 2, 3), _r(2, 2, 2)]
    )


@pytest.mark.parametrize("n", [1, 2])
def test_conv_transpose_modules(n):
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    cls = f"ConvTranspose{n}d"
    tg.manual_seed(0)
    ours = getattr(nn, cls)(4, 6, 3, **kw)
    theirs = getattr(torch.nn, cls)(4, 6, 3, **kw).double()
    assert ours.weight.shape == tuple(theirs.weight.shape) == (4, 3) + (3,) * n
    _init_bounds(ours, 1.0 / math.sqrt(3 * 3**n))  # fan_in = out_channels / groups * k
    assert repr(ours) == repr(theirs)
    _load_from_torch(ours, theirs)
    x = _r(2, 4, *(3,) * n)
    _module_agree(ours, theirs, x)
    # output_size picks the output_padding; the unbatched input too
    size = (6,) * n
    _module_agree(ours, theirs, x, output_size=size)
    _module_agree(ours, theirs, x[0], output_size=(6,) + size)
    nobias = getattr(nn, cls)(2, 2, 2, bias=False)
    assert [k for k, _ in nobias.named_parameters()] == ["weight"]
    assert repr(nobias) == repr(getattr(torch.nn, cls)(2, 2, 2, bias=False))


CONVT_ERRORS = [
    ("channels", lambda L: L.F.conv_transpose1d(L.T(_r(1, 3, 4)), L.T(_r(2, 2, 3))), "channels"),
    (
        "output_padding",
        lambda L: L.F.conv_transpose1d(L.T(_r(1, 2, 4)), L.T(_r(2, 2, 3)), output_padding=1),
        "output_padding",
    ),
    (
        "groups",
        lambda L: L.F.conv_transpose1d(L.T(_r(1, 3, 4)), L.T(_r(3, 2, 3)), groups=2),
        "groups",
    ),
    ("weight dims", lambda L: L.F.conv_transpose2d(L.T(_r(1, 2, 4, 4)), L.T(_r(2, 2, 3))), "4D"),
    (
        "bias",
        lambda L: L.F.conv_transpose1d(L.T(_r(1, 2, 4)), L.T(_r(2, 2, 3)), L.T(_r(3))),
        "bias",
    ),
    (
        "empty output",
        lambda L: L.F.conv_transpose1d(L.T(_r(1, 2, 1)), L.T(_r(2, 2, 1)), padding=1),
        "empty",
    ),
    (
        "output_size",
        lambda L: (
            L.m.nn.ConvTranspose1d(2, 2, 3, stride=2).double()(L.T(_r(1, 2, 4)), (12,))
            if L.name == "torch"
            else L.m.nn.ConvTranspose1d(2, 2, 3, stride=2)(L.T(_r(1, 2, 4)), (12,))
        ),
        "valid sizes",
    ),
    (
        "string padding",
        lambda L: L.F.conv_transpose1d(L.T(_r(1, 2, 4)), L.T(_r(2, 2, 3)), padding="same"),
        "padding",
    ),
]


@pytest.mark.parametrize("name, prog, fragment", CONVT_ERRORS, ids=[c[0] for c in CONVT_ERRORS])
def test_conv_transpose_errors(name, prog, fragment):
    _both_raise(prog, fragment)


# ---- instance normalisation ----------------------------------------------------------------------


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(3, 2, 5), (2, 3, 2, 3)])
def test_instance_norm_functional(shape, affine):
    c = shape[1]
    rm, rv = RNG.standard_normal(c), RNG.uniform(0.5, 2.0, c)
    stats = {}

    def prog(L):
        mean, var = L.T(rm, rg=False), L.T(rv, rg=False)
        wb = (L.T(_r(c)), L.T(_r(c) + 1)) if affine else (None, None)
        y = L.F.instance_norm(L.T(_r(*shape) * 3 + 1), mean, var, *wb, momentum=0.3, eps=1e-3)
        stats[L.name] = (mean.detach().numpy().copy(), var.detach().numpy().copy())
        z = L.F.instance_norm(L.T(_r(*shape)), mean, var, *wb, use_input_stats=False)
        return y, z

    _compare(prog)
    _close(stats["tg"][0], stats["torch"][0], rtol=1e-12)
    _close(stats["tg"][1], stats["torch"][1], rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2])
def test_instance_norm_modules(n):
    cls = f"InstanceNorm{n}d"
    shape = (2, 3) + (4, 3)[:n]
    plain = getattr(nn, cls)(3)
    assert list(plain.state_dict()) == [] and "affine=False" in repr(plain)
    _module_agree(plain, getattr(torch.nn, cls)(3).double(), _r(*shape))
    for momentum in (0.1, None):
        ours = getattr(nn, cls)(3, affine=True, track_running_stats=True, momentum=momentum)
        theirs = getattr(torch.nn, cls)(3, affine=True, track_running_stats=True)
        theirs = theirs.double()
        theirs.momentum = momentum
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(_r(3)))
            theirs.bias.copy_(torch.tensor(_r(3) + 2))
        _load_from_torch(ours, theirs)
        for step in range(2):
            _module_agree(ours, theirs, _r(*shape) * (step + 1))
        for k, v in theirs.state_dict().items():
            _close(ours.state_dict()[k], v.numpy(), rtol=1e-12)
        ours.eval()
        theirs.eval()
        _module_agree(ours, theirs, _r(*shape[1:]))  # unbatched, running statistics


def test_instance_norm_second_derivative():
    def prog(lib, x, w, b):
        y = lib.nn.functional.instance_norm(x, weight=w, bias=b)
        return (lib.tanh(y) * lib.tensor(_r(2, 3, 4))).sum()

    _second(prog, [_r(2, 3, 4) * 2, _r(3), _r(3)])


INSTANCE_ERRORS = [
    ("one spatial element", lambda L: L.F.instance_norm(L.T(_r(2, 3, 1))), "spatial"),
    (
        "channels of an affine layer",
        lambda L: (
            L.m.nn.InstanceNorm1d(4, affine=True).double()(L.T(_r(2, 3, 5)))
            if L.name == "torch"
            else L.m.nn.InstanceNorm1d(4, affine=True)(L.T(_r(2, 3, 5)))
        ),
        "num_features",
    ),
    ("input dims", lambda L: L.m.nn.InstanceNorm2d(3)(L.T(_r(2, 3))), "input"),
    (
        "weight shape",
        lambda L: L.F.instance_norm(L.T(_r(2, 3, 5)), weight=L.T(_r(2))),
        "weight",
    ),
]


@pytest.mark.parametrize(
    "name, prog, fragment", INSTANCE_ERRORS, ids=[c[0] for c in INSTANCE_ERRORS]
)
def test_instance_norm_errors(name, prog, fragment):
    e = _raises(prog, "torch")
    assert e is not None
    _both_raise(prog, fragment)


# ---- bilinear ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lead", [(4,), (), (2, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_functional(lead, bias):
    def prog(L):
        b = L.T(_r(2)) if bias else None
        return L.F.bilinear(L.T(_r(*lead, 3)), L.T(_r(*lead, 4)), L.T(_r(2, 3, 4)), b)

    _compare(prog)


def test_bilinear_module_second_derivative_and_errors():
    tg.manual_seed(1)
    ours, theirs = nn.Bilinear(5, 4, 3), torch.nn.Bilinear(5, 4, 3).double()
    _init_bounds(ours, 1.0 / math.sqrt(5))
    assert repr(ours) == repr(theirs)
    _load_from_torch(ours, theirs)
    _module_agree(ours, theirs, _r(2, 5), _r(2, 4))

    def prog(lib, x1, x2, w):
        return lib.tanh(lib.nn.functional.bilinear(x1, x2, w)).sum()

    _second(prog, [_r(2, 3), _r(2, 2), _r(2, 3, 2)])
    assert tg.gradcheck(F.bilinear, [_r(2, 3), _r(2, 2), _r(1, 3, 2), _r(1)])
    for prog, fragment in [
        (lambda L: L.F.bilinear(L.T(_r(2, 3)), L.T(_r(3, 4)), L.T(_r(2, 3, 4))), "same shape"),
        (lambda L: L.F.bilinear(L.T(_r(2, 3)), L.T(_r(2, 4)), L.T(_r(2, 4, 4))), "in1_features"),
        (lambda L: L.F.bilinear(L.T(_r(2, 3)), L.T(_r(2, 4)), L.T(_r(3, 4))), "3D"),
        (lambda L: L.F.bilinear(L.T(_r(3)), L.T(_r(4)), L.T(_r(2, 3, 4)), L.T(_r(3))), "bias"),
    ]:
        _both_raise(prog, fragment)


# ---- interpolate / Upsample ----------------------------------------------------------------------

SIZES = [
    dict(size=7),
    dict(size=2),
    dict(size=1),
    dict(scale_factor=2),
    dict(scale_factor=1.7),
    dict(scale_factor=0.5),
    dict(scale_factor=1.3),  # out == in along one axis of the 2-D input
    dict(scale_factor=2.5, recompute_scale_factor=True),
    dict(scale_factor=0.34),
]
INTERP = [
    ((2, 2, 5), "nearest", None),
    ((2, 2, 5), "linear", False),
    ((2, 2, 5), "linear", True),
    ((1, 2, 4, 3), "nearest", None),
    ((1, 2, 4, 3), "bilinear", False),
    ((1, 2, 4, 3), "bilinear", True),
]


@pytest.mark.parametrize("kw", SIZES, ids=[str(s) for s in SIZES])
@pytest.mark.parametrize("shape, mode, corners", INTERP)
def test_interpolate(shape, mode, corners, kw):
    def prog(L):
        return L.F.interpolate(L.T(_r(*shape)), mode=mode, align_corners=corners, **kw)

    _compare(prog, rtol=1e-12)


def test_interpolate_per_axis_sizes_5d_nearest_and_modules():
    _compare(lambda L: L.F.interpolate(L.T(_r(1, 1, 3, 4)), size=(5, 2), mode="bilinear"))
    _compare(lambda L: L.F.interpolate(L.T(_r(1, 1, 3, 4)), scale_factor=(0.7, 2.2)))
    _compare(lambda L: L.F.interpolate(L.T(_r(1, 1, 2, 3, 2)), size=(3, 5, 4)))
    for args in [
        dict(scale_factor=2),
        dict(size=(3, 5), mode="bilinear"),
        dict(scale_factor=1.5, mode="bilinear", align_corners=True),
    ]:
        ours, theirs = nn.Upsample(**args), torch.nn.Upsample(**args)
        assert repr(ours) == repr(theirs)
        _module_agree(ours, theirs, _r(1, 2, 2, 3))
    for cls, args in [("UpsamplingNearest2d", dict(size=5)), ("UpsamplingBilinear2d", {})]:
        args = args or dict(scale_factor=2)
        _module_agree(getattr(nn, cls)(**args), getattr(torch.nn, cls)(**args), _r(1, 1, 2, 3))

    def prog(lib, x):
        y = lib.nn.functional.interpolate(x, size=(3, 5), mode="bilinear")
        return (y**3).sum()

    _second(prog, [_r(1, 1, 2, 3)])


@pytest.mark.parametrize("shape", [(1, 2, 5), (1, 1, 3, 2, 2)])
@pytest.mark.parametrize("factor", [1.1, 2.1])
def test_interpolate_nearest_1d_3d_scale_gradient(factor, shape):
    """PyTorch's 1-D and 3-D nearest kernels read floor(i / factor) even where the output is
    as long as the input (or twice as long), but their backward then copies (or pairs) the
    positions: its gradient is not the one of its values.  tapegrad's values are PyTorch's,
    its gradient the one of those values (each input counted as often as it is read)."""
    x = _r(*shape)
    _close(
        F.interpolate(tg.tensor(x), scale_factor=factor),
        torch.nn.functional.interpolate(torch.tensor(x), scale_factor=factor),
    )
    expect = np.ones(shape[:2])
    for n in shape[2:]:
        src = torch.nn.functional.interpolate(
            torch.arange(float(n))[None, None], scale_factor=factor
        )
        counts = np.bincount(src.numpy().ravel().astype(int), minlength=n)
        expect = np.multiply.outer(expect, counts)
    xt = tg.tensor(x, requires_grad=True)
    F.interpolate(xt, scale_factor=factor).sum().backward()
    _close(xt.grad, expect)


INTERP_ERRORS = [
    ("nearest corners", dict(size=4, align_corners=True), (1, 1, 3), "align_corners"),
    ("size and scale", dict(size=4, scale_factor=2), (1, 1, 3), "only one"),
    ("neither", dict(), (1, 1, 3), "either size or scale_factor"),
    ("linear on 4D", dict(size=4, mode="linear"), (1, 1, 3, 3), "4D"),
    ("bilinear on 3D", dict(size=4, mode="bilinear"), (1, 1, 3), "3D"),
    ("size length", dict(size=(4, 4)), (1, 1, 3), "spatial dimensions"),
    ("empty output", dict(scale_factor=0.2), (1, 1, 3), "greater than 0"),
    ("recompute with size", dict(size=4, recompute_scale_factor=True), (1, 1, 3), "meaningful"),
    ("bicubic", dict(size=4, mode="bicubic"), (1, 1, 3, 3), "bicubic"),
    ("antialias", dict(size=4, mode="bilinear", antialias=True), (1, 1, 3, 3), "antialias"),
]


@pytest.mark.parametrize(
    "name, kw, shape, fragment", INTERP_ERRORS, ids=[c[0] for c in INTERP_ERRORS]
)
def test_interpolate_errors(name, kw, shape, fragment):
    e = _raises(lambda L: L.F.interpolate(L.T(_r(*shape)), **kw), "tg")
    assert e is not None and fragment in str(e), repr(e)
    assert "interpolate" in str(e)
    if name not in ("bicubic", "antialias"):  # (PyTorch has them)
        assert _raises(lambda L: L.F.interpolate(L.T(_r(*shape)), **kw), "torch") is not None


# ---- margin losses -------------------------------------------------------------------------------

_X = np.array([0.3, 1.0, -0.5, 2.0, 1.0, 0.0])
_X2 = np.array([0.3, 0.2, 1.5, 2.0, -1.0, 0.5])
_T = np.array([1.0, -1.0, -1.0, -1.0, 1.0, -1.0])
_A, _B = _r(4, 3), _r(4, 3) + 0.5
_B[1] = _A[1]  # cos 1
_B[3] = -2 * _A[3]  # cos -1
_MM = np.array([[0.1, 0.2, 0.4, 0.8], [1.0, 0.0, 0.0, 1.0], [0.5, 0.5, -0.5, 0.0]])
_ANCHOR, _POS, _NEG = _r(4, 3), _r(4, 3) * 2, _r(4, 3) + 1

LOSSES = {
    # the kinks: x1 - x2 == 0 with margin 0; margin - x == 0; cos == margin; z == 0 in a
    # multi-margin hinge (margin 0.5); a triplet with d(a, p) + margin == d(a, n)
    "margin_ranking": lambda L, **k: L.F.margin_ranking_loss(
        L.T(_X), L.T(_X2), L.T(_T, rg=False), **k
    ),
    "margin_ranking_m": lambda L, **k: L.F.margin_ranking_loss(
        L.T(_X), L.T(_X2), L.T(_T, rg=False), margin=0.7, **k
    ),
    "hinge_embedding": lambda L, **k: L.F.hinge_embedding_loss(L.T(_X), L.T(_T, rg=False), **k),
    "hinge_other_targets": lambda L, **k: L.F.hinge_embedding_loss(
        L.T(_X), L.T([1.0, -1, 0, 2, 1, -1], rg=False), margin=2.0, **k
    ),
    "soft_margin": lambda L, **k: L.F.soft_margin_loss(
        L.T(_r(3, 4)), L.T(np.sign(_r(4, 3).T), rg=False), **k
    ),
    "cosine_embedding": lambda L, **k: L.F.cosine_embedding_loss(
        L.T(_A), L.T(_B), L.T([1.0, -1, -1, 1], rg=False), **k
    ),
    "cosine_embedding_margin": lambda L, **k: L.F.cosine_embedding_loss(
        L.T(_A), L.T(_B), L.T([1.0, -1, -1, -1], rg=False), margin=-0.5, **k
    ),
    "cosine_embedding_1d": lambda L, **k: L.F.cosine_embedding_loss(
        L.T(_A[0]), L.T(_B[0]), L.T(-1.0, rg=False), **k
    ),
    "multi_margin": lambda L, **k: L.F.multi_margin_loss(L.T(_MM), L.I([3, 0, 1]), **k),
    "multi_margin_p2_kink": lambda L, **k: L.F.multi_margin_loss(
        L.T(_MM), L.I([3, 0, 1]), p=2, margin=0.5, **k
    ),
    "multi_margin_weight": lambda L, **k: L.F.multi_margin_loss(
        L.T(_MM), L.I([3, 0, 1]), margin=0.5, weight=L.T([1.0, 2.0, 3.0, 0.5], rg=False), **k
    ),
    "multi_margin_1d": lambda L, **k: L.F.multi_margin_loss(L.T(_MM[2]), L.I(1), **k),
    "triplet": lambda L, **k: L.F.triplet_margin_loss(L.T(_ANCHOR), L.T(_POS), L.T(_NEG), **k),
    "triplet_p1_swap": lambda L, **k: L.F.triplet_margin_loss(
        L.T(_ANCHOR), L.T(_POS), L.T(_NEG), p=1, swap=True, **k
    ),
    "triplet_kink_and_swap_tie": lambda L, **k: L.F.triplet_margin_loss(
        L.T([[0.0, 0.0], [0.0, 0.0]]),
        L.T([[3.0, 4.0], [2.0, 0.0]]),
        L.T([[6.0, 8.0], [1.0, 0.0]]),
        margin=5.0,
        eps=0.0,
        swap=True,
        **k,
    ),
    "triplet_1d": lambda L, **k: L.F.triplet_margin_loss(
        L.T(_ANCHOR[0]), L.T(_POS[0]), L.T(_NEG[0]), **k
    ),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_margin_losses(name, reduction):
    _compare(lambda L: LOSSES[name](L, reduction=reduction))


MODULES = [
    ("MarginRankingLoss", dict(margin=0.2), (_X, _X2), (_T,)),
    ("HingeEmbeddingLoss", dict(margin=0.5), (_X,), (_T,)),
    ("SoftMarginLoss", {}, (_X,), (_T,)),
    ("CosineEmbeddingLoss", dict(margin=0.1), (_A, _B), ([1.0, -1.0, -1.0, 1.0],)),
    ("MultiMarginLoss", dict(p=2, margin=0.5), (_MM,), (np.array([3, 0, 1]),)),
    ("TripletMarginLoss", dict(margin=0.5, p=1.5, swap=True), (_ANCHOR, _POS, _NEG), ()),
]


@pytest.mark.parametrize("reduction", ["none", "sum"])
@pytest.mark.parametrize("cls, kw, inputs, targets", MODULES, ids=[m[0] for m in MODULES])
def test_margin_loss_modules(cls, kw, inputs, targets, reduction):
    ours = getattr(nn, cls)(reduction=reduction, **kw)
    theirs = getattr(torch.nn, cls)(reduction=reduction, **kw)
    xa = [tg.tensor(x, requires_grad=True) for x in inputs]
    xb = [torch.tensor(x, requires_grad=True) for x in inputs]
    ya = ours(*xa, *(tg.tensor(np.asarray(t)) for t in targets))
    yb = theirs(*xb, *(torch.tensor(np.asarray(t)) for t in targets))
    _close(ya, yb)
    w = RNG.standard_normal(tuple(yb.shape))
    (ya * tg.tensor(w)).sum().backward()
    (yb * torch.tensor(w)).sum().backward()
    for a, b in zip(xa, xb, strict=True):
        _close(a.grad, b.grad)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_margin_loss_second_derivatives():
    def soft(lib, x):
        return lib.nn.functional.soft_margin_loss(x, lib.tensor(np.sign(_r(2, 3))))

    def cosine(lib, a, b):
        return lib.nn.functional.cosine_embedding_loss(
            a, b, lib.tensor([1.0, -1.0, -1.0, 1.0]), margin=-0.9
        )

    def triplet(lib, a, p, n):
        return lib.nn.functional.triplet_margin_loss(a, p, n, margin=3.0, swap=True)

    _second(soft, [_r(2, 3)])
    _second(cosine, [_A + 0.1, _B])
    _second(triplet, [_ANCHOR, _POS, _NEG])
    # PyTorch has no second derivative of multi_margin_loss: central differences of the
    # gradient, away from the kinks
    x0, t = _MM + np.array([0.01, 0.02, 0.03, 0.04]), np.array([3, 0, 1])
    w = tg.tensor([1.0, 2.0, 3.0, 0.5])

    def g(x):
        return tg.grad(lambda z: F.multi_margin_loss(z, t, p=2, weight=w))(x)

    v = _r(3, 4)
    hv = np.asarray(tg.grad(lambda z: (g(z) * v).sum())(x0))
    fd = central_gradient(lambda z: (np.asarray(g(z)) * v).sum(), x0)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)
    # the class weights get a gradient (PyTorch refuses one that requires grad)
    assert tg.gradcheck(
        lambda wt: F.multi_margin_loss(tg.tensor(x0), t, margin=0.5, weight=wt),
        [np.array([1.0, 2.0, 3.0, 0.5])],
    )


MARGIN_ERRORS = [
    (
        "ranking dims",
        lambda L: L.F.margin_ranking_loss(L.T(_r(3)), L.T(_r(3)), L.T(_r(1, 3))),
        "dimensions",
    ),
    ("hinge shapes", lambda L: L.F.hinge_embedding_loss(L.T(_r(3)), L.T(_r(4))), "shape"),
    ("soft shapes", lambda L: L.F.soft_margin_loss(L.T(_r(3)), L.T(_r(4))), "shape"),
    (
        "cosine input shapes",
        lambda L: L.F.cosine_embedding_loss(L.T(_r(2, 3)), L.T(_r(2, 4)), L.T(_r(2))),
        "input1",
    ),
    (
        "cosine target",
        lambda L: L.F.cosine_embedding_loss(L.T(_r(2, 3)), L.T(_r(2, 3)), L.T(_r(3))),
        "target",
    ),
    (
        "cosine 3D",
        lambda L: L.F.cosine_embedding_loss(L.T(_r(2, 2, 3)), L.T(_r(2, 2, 3)), L.T(_r(2, 2))),
        "input1",
    ),
    ("multi p", lambda L: L.F.multi_margin_loss(L.T(_MM), L.I([3, 0, 1]), p=3), "p == 1"),
    ("multi target range", lambda L: L.F.multi_margin_loss(L.T(_MM), L.I([3, 0, 4])), "range"),
    ("multi target size", lambda L: L.F.multi_margin_loss(L.T(_MM), L.I([3, 0])), "target"),
    (
        "multi weight",
        lambda L: L.F.multi_margin_loss(L.T(_MM), L.I([3, 0, 1]), weight=L.T(_r(3), rg=False)),
        "weight",
    ),
    (
        "triplet dims",
        lambda L: L.F.triplet_margin_loss(L.T(_r(2, 3)), L.T(_r(3)), L.T(_r(2, 3))),
        "dimensions",
    ),
    ("reduction", lambda L: L.F.soft_margin_loss(L.T(_r(3)), L.T(_r(3)), reduction="avg"), "avg"),
]


@pytest.mark.parametrize("name, prog, fragment", MARGIN_ERRORS, ids=[c[0] for c in MARGIN_ERRORS])
def test_margin_loss_errors(name, prog, fragment):
    _both_raise(prog, fragment)


def test_margin_loss_module_arguments():
    for lib in (nn, torch.nn):
        with pytest.raises(ValueError, match="margin"):
            lib.TripletMarginLoss(margin=0.0)
        with pytest.raises(ValueError, match="p == 1"):
            lib.MultiMarginLoss(p=3)
    with pytest.raises(TypeError, match="size_average"):
        nn.SoftMarginLoss(size_average=True)
