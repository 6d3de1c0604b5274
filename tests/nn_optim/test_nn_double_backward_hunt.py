"""Second and third derivatives through tg.nn against PyTorch (float64).

Hunted: wrong numbers where a demanding user differentiates twice or three times through a
network: WGAN-GP gradient penalties (the gradient of the output with respect to the input,
squared and summed, differentiated into the input AND every parameter), Hessian-vector
products of a loss with respect to inputs and parameters, third derivatives (the gradient of
a weighted Hessian-vector product) of the smooth ops, MAML (the outer gradient through an
inner gradient step), double backward through activations at their kinks (relu at 0,
hardtanh at its bounds, huber at ``|d| = delta``, max-pool ties), and ``tg.hessian`` /
``tg.hvp`` of NumPy-style code calling tg.nn.functional against ``torch.func.hessian``.

Each program is written once against the adapter of ``nn_programs`` (modules built through
``L.M`` get PyTorch's float64 weights) and run in both libraries; the derivatives compared
are all taken with ``autograd.grad(..., create_graph=True)`` in both.  Compared to rtol 1e-8
(PyTorch's double-backward formulas lose up to ~1e-10), third derivatives to rtol 1e-7.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nn_programs import _flat, _is_tensor, _Lib, _np, _rng  # noqa: E402

import tapegrad as tg  # noqa: E402
import tapegrad.nn.functional as tgF  # noqa: E402

RTOL2, RTOL3, ATOL = 1e-8, 1e-7, 1e-10


def _close(a, b, what, rtol):
    a, b = _np(a), _np(b)
    assert np.shape(a) == np.shape(b), f"{what}: shape {np.shape(a)} != {np.shape(b)}"
    np.testing.assert_allclose(
        np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol, ATOL, err_msg=what
    )


def _weighted(lib, ts, seed):
    rng = _rng(seed)
    total = None
    for x in ts:
        w = rng.standard_normal(tuple(x.shape))
        term = (x * lib.wrap(w)).sum()
        total = term if total is None else total + term
    return total


def _grad(lib, out, wrt, create):
    """autograd.grad with zeros for unused inputs (a list)."""
    if out is None or not out.requires_grad:
        return [lib.m.zeros(tuple(w.shape), dtype=lib.m.float64) for w in wrt]
    gs = lib.m.autograd.grad(out, wrt, retain_graph=True, create_graph=create, allow_unused=True)
    return [
        lib.m.zeros(tuple(w.shape), dtype=lib.m.float64) if g is None else g
        for g, w in zip(gs, wrt, strict=True)
    ]


def _run(prog, lib, order):
    """The outputs, the gradient penalty's gradient, an HVP and (order 3) a third derivative."""
    flat = [x for x in _flat(prog(lib)) if _is_tensor(x) and x.requires_grad]
    x = lib.leaves[0]  # the "input" of the program
    wrt = lib.leaves + lib.params()
    loss = _weighted(lib, flat, 99)
    # WGAN-GP: the squared gradient norm with respect to the input, into input and parameters
    (gx,) = _grad(lib, loss, [x], True)
    penalty = (gx * gx).sum() if gx.requires_grad else None
    gp = _grad(lib, penalty, wrt, False)
    # Hessian-vector product of the loss with respect to everything
    g = _grad(lib, loss, wrt, True)
    # (a gradient that is a constant weighs in too: the random weights stay in step)
    hv = _grad(lib, _weighted(lib, g, 98), wrt, order >= 3)
    res = {"out": flat, "grad": g, "penalty": gp, "hvp": hv}
    if order >= 3:
        res["third"] = _grad(lib, _weighted(lib, hv, 97), wrt, False)
    return res


def _compare(prog, order, manual=False):
    theirs_lib = _Lib("torch")
    theirs_lib.manual = False
    torch.manual_seed(0)
    theirs = _run(prog, theirs_lib, order)
    if manual and order >= 3:  # PyTorch's third derivative of its fused op is not the derivative
        manual_lib = _Lib("torch")
        manual_lib.manual = True
        torch.manual_seed(0)  # the same initial weights
        theirs["third"] = _run(prog, manual_lib, order)["third"]
    ours = _run(prog, _Lib("tg", theirs_lib.states), order)
    for key, rtol in (("out", 1e-10), ("grad", 1e-10), ("penalty", RTOL2), ("hvp", RTOL2)):
        assert len(ours[key]) == len(theirs[key]), key
        for i, (a, b) in enumerate(zip(ours[key], theirs[key], strict=True)):
            _close(a, b, f"{key} {i}", rtol)
    if order >= 3:
        for i, (a, b) in enumerate(zip(ours["third"], theirs["third"], strict=True)):
            _close(a, b, f"third {i}", RTOL3)


CASES = {}
XFAIL = {}
MANUAL = set()  # PyTorch's third derivative from the program written out (``L.manual``)


def _add(name, prog, order=2, xfail=None, manual=False):
    assert name not in CASES, name
    CASES[name] = (prog, order)
    if xfail:
        XFAIL[name] = xfail
    if manual:
        MANUAL.add(name)


# ---- activations inside a two-layer network, and at their kinks ---------------------------------

X53 = _rng(1).standard_normal((5, 3))

ACTS = {
    # name: (kwargs, smooth: third order compared, kink points)
    "relu": ({}, False, [0.0]),
    "leaky_relu": ({"negative_slope": 0.2}, False, [0.0]),
    # (the kinks of the elu family and of softplus's threshold are jumps of the second
    # derivative, where PyTorch's double backward takes the other side than its first
    # derivative: checked against the closed form below)
    "elu": ({"alpha": 0.7}, True, []),
    "selu": ({}, True, []),
    "celu": ({"alpha": 1.5}, True, []),
    "gelu": ({}, True, [0.0]),
    "gelu-tanh": ({"approximate": "tanh"}, True, [0.0]),
    "silu": ({}, True, [0.0]),
    "mish": ({}, True, [0.0]),
    "softplus": ({}, True, [0.0]),
    "softplus-beta": ({"beta": 2.5, "threshold": 3.0}, True, [1.3]),
    "hardtanh": ({}, False, [-1.0, 1.0]),
    "hardtanh-bounds": ({"min_val": -0.5, "max_val": 2.0}, False, [-0.5, 2.0]),
    "hardswish": ({}, False, [-3.0, 3.0, 0.0]),
    "hardsigmoid": ({}, False, [-3.0, 3.0]),  # PyTorch: relu6(x + 3) / 6
    "relu6": ({}, False, [0.0, 6.0]),
    "logsigmoid": ({}, True, [0.0]),
    "softsign": ({}, False, [0.0]),
    "tanhshrink": ({}, True, [0.0]),
    "sigmoid": ({}, True, [0.0]),
    "tanh": ({}, True, [0.0]),
}


def _act(L, name, kw, x):
    fn = name.split("-")[0]
    if fn == "hardsigmoid" and not L.is_tg:  # PyTorch has no double backward for it
        return L.F.relu6(x + 3.0) / 6.0
    return getattr(L.F, fn)(x, **kw)


for _n, (_kw, _smooth, _kinks) in ACTS.items():
    _add(
        f"mlp-{_n}",
        lambda L, n=_n, kw=_kw: L.M(L.nn.Linear(4, 2))(
            _act(L, n, kw, L.M(L.nn.Linear(3, 4))(L.T(X53)))
        ),
        3 if _smooth else 2,
    )
    # the kink reached exactly by the product of an input and a scale that is differentiated too
    _pts = [-2.5, -0.7, 0.4, 1.9, *_kinks]
    _add(
        f"kink-{_n}",
        lambda L, n=_n, kw=_kw, p=_pts: _act(L, n, kw, L.T(p) * L.T(np.ones(len(p)))),
        3 if _smooth else 2,
    )

# softmax family composed with a linear layer, along every dim
X234 = _rng(2).standard_normal((2, 3, 4))
for _d in (0, 1, 2, -1):
    for _f in ("softmax", "log_softmax"):
        _add(
            f"{_f}-lin-dim{_d}",
            lambda L, f=_f, d=_d: getattr(L.F, f)(L.M(L.nn.Linear(4, 4))(L.T(X234)), dim=d),
            3,
        )
    _add(
        f"normalize-p2-dim{_d}",
        lambda L, d=_d: L.F.normalize(L.M(L.nn.Linear(4, 4))(L.T(X234)), dim=d),
        3,
    )
for _p in (1.0, 3.0, 1.5):
    _add(f"normalize-p{_p}", lambda L, p=_p: L.F.normalize(L.T(X234), p=p, dim=1), 3)
_add("glu-lin", lambda L: L.F.glu(L.M(L.nn.Linear(3, 4))(L.T(X53)), dim=-1), 3)
_add("logsumexp-lin", lambda L: L.m.logsumexp(L.M(L.nn.Linear(3, 4))(L.T(X53)), dim=1), 3)

# ---- losses of a linear model --------------------------------------------------------------------

Y52 = _rng(3).standard_normal((5, 2))
P52 = _rng(4).uniform(0.05, 0.95, (5, 2))
T5 = [0, 3, 1, 1, 2]
P54 = _rng(5).dirichlet(np.ones(4), size=5)
W4 = [0.5, 2.0, 1.5, 0.25]


def _lin(L, out=2):
    return L.M(L.nn.Linear(3, out))(L.T(X53))


RED = ("mean", "sum")
for _r in RED:
    _add(f"mse-{_r}", lambda L, r=_r: L.F.mse_loss(_lin(L), L.T(Y52), reduction=r), 3)
    _add(f"l1-{_r}", lambda L, r=_r: L.F.l1_loss(_lin(L), L.T(Y52), reduction=r))
    for _b in (1.0, 0.3):
        _add(
            f"smooth_l1-b{_b}-{_r}",
            lambda L, r=_r, b=_b: L.F.smooth_l1_loss(_lin(L), L.T(Y52), beta=b, reduction=r),
        )
        _add(
            f"huber-d{_b}-{_r}",
            lambda L, r=_r, b=_b: L.F.huber_loss(_lin(L), L.T(Y52), delta=b, reduction=r),
        )
    _add(
        f"bce-sigmoid-{_r}",
        lambda L, r=_r: L.F.binary_cross_entropy(
            L.m.sigmoid(_lin(L)), L.T(P52), weight=L.T([1.5, 0.5], rg=False), reduction=r
        ),
        3,
    )
    _add(
        f"bce-logits-{_r}",
        lambda L, r=_r: L.F.binary_cross_entropy_with_logits(
            _lin(L),
            L.T(P52),
            weight=L.T([1.5, 0.5], rg=False),
            pos_weight=L.T([2.0, 0.3], rg=False),
            reduction=r,
        ),
        3,
    )
    _add(
        f"ce-{_r}",
        lambda L, r=_r: L.F.cross_entropy(_lin(L, 4), L.I(T5), reduction=r),
        3,
    )
    _add(
        f"ce-weight-smooth-ignore-{_r}",
        lambda L, r=_r: L.F.cross_entropy(
            _lin(L, 4),
            L.I(T5),
            weight=L.T(W4, rg=False),
            label_smoothing=0.2,
            ignore_index=1,
            reduction=r,
        ),
        3,
    )
    _add(
        f"ce-probs-{_r}",
        lambda L, r=_r: L.F.cross_entropy(
            _lin(L, 4), L.T(P54), weight=L.T(W4, rg=False), label_smoothing=0.1, reduction=r
        ),
        3,
    )
    _add(
        f"nll-{_r}",
        lambda L, r=_r: L.F.nll_loss(
            L.F.log_softmax(_lin(L, 4), dim=1), L.I(T5), weight=L.T(W4, rg=False), reduction=r
        ),
        3,
    )
for _r in ("batchmean", "sum"):
    _add(
        f"kl-{_r}",
        lambda L, r=_r: L.F.kl_div(L.F.log_softmax(_lin(L, 4), dim=1), L.T(P54), reduction=r),
        3,
    )
    _add(
        f"kl-log-target-{_r}",
        lambda L, r=_r: L.F.kl_div(
            L.F.log_softmax(_lin(L, 4), dim=1), L.T(np.log(P54)), reduction=r, log_target=True
        ),
        3,
    )

# regression losses exactly at their kinks (d = x - y at 0 and at +-delta / +-beta)
XK = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 0.25, -3.0]
YK = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -1.5]
for _f, _kw in (
    ("mse_loss", {}),
    ("l1_loss", {}),
    ("smooth_l1_loss", {}),
    ("smooth_l1_loss", {"beta": 0.5}),
    ("huber_loss", {}),
    ("huber_loss", {"delta": 0.5}),
):
    _tag = "".join(f"-{k}{v}" for k, v in _kw.items())
    _add(
        f"kink-{_f}{_tag}",
        lambda L, f=_f, kw=_kw: getattr(L.F, f)(
            L.T(XK) * L.T(np.ones(8)), L.T(YK), reduction="sum", **kw
        ),
        3,
    )

# ---- layers --------------------------------------------------------------------------------------

X1 = _rng(10).standard_normal((2, 4, 9))
X2 = _rng(11).standard_normal((2, 4, 7, 6))
for _kw in (
    {},
    {"stride": 2},
    {"padding": 2},
    {"dilation": 2},
    {"groups": 2},
    {"stride": 2, "padding": 1, "dilation": 2, "groups": 4},
):
    _tag = "".join(f"-{k}{v}" for k, v in _kw.items())
    _add(
        f"conv1d-tanh{_tag}",
        lambda L, kw=_kw: L.m.tanh(L.M(L.nn.Conv1d(4, 4, 3, **kw))(L.T(X1))),
        3,
    )
    _add(
        f"conv2d-softplus{_tag}",
        lambda L, kw=_kw: L.F.softplus(L.M(L.nn.Conv2d(4, 4, (3, 2), **kw))(L.T(X2))),
        3,
    )
    _add(
        f"conv2d-relu-conv{_tag}",
        lambda L, kw=_kw: L.M(L.nn.Conv2d(4, 2, 1))(
            L.F.relu(L.M(L.nn.Conv2d(4, 4, 3, **kw))(L.T(X2)))
        ),
    )
_add(
    "conv2d-square-functional",
    lambda L: L.F.conv2d(L.T(X2), L.T(_rng(12).standard_normal((2, 4, 2, 2))) ** 2, padding=1),
    3,
)

# pooling after a smooth layer, and max pooling at ties
XT = np.array([[[[1.0, 1.0, 0.5, 2.0], [1.0, 0.0, 2.0, 2.0], [3.0, 3.0, 0.0, 0.0]]]])
for _kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}):
    _tag = "".join(f"-{k}{v}" for k, v in _kw.items())
    _add(
        f"max_pool2d-conv{_tag}",
        lambda L, kw=_kw: L.F.max_pool2d(L.m.tanh(L.M(L.nn.Conv2d(4, 3, 2))(L.T(X2))), **kw),
        3,
    )
    _add(
        f"avg_pool2d-conv{_tag}",
        lambda L, kw=_kw: L.F.avg_pool2d(L.m.tanh(L.M(L.nn.Conv2d(4, 3, 2))(L.T(X2))), **kw),
        3,
    )
    _add(
        f"max_pool2d-ties{_tag}",
        lambda L, kw=_kw: L.F.max_pool2d(L.T(XT) * L.T(np.ones((1, 1, 1, 4))), **kw) ** 2,
        3,
    )
_add(
    "max_pool1d-conv",
    lambda L: L.F.max_pool1d(L.m.tanh(L.M(L.nn.Conv1d(4, 3, 2))(L.T(X1))), 3, stride=2),
    3,
)
_add(
    "avg_pool1d-conv",
    lambda L: L.F.avg_pool1d(L.m.tanh(L.M(L.nn.Conv1d(4, 3, 2))(L.T(X1))), 3, stride=2, padding=1),
    3,
)
_add(
    "adaptive_avg_pool2d-conv",
    lambda L: L.F.adaptive_avg_pool2d(L.m.tanh(L.M(L.nn.Conv2d(4, 3, 2))(L.T(X2))), (4, 3)),
    3,
)
_add(
    "max_pool1d-ties",
    lambda L: (
        L.F.max_pool1d(L.T([[[2.0, 2.0, 1.0, 2.0, 0.0, 0.0]]]) * L.T([1.0]), 2, stride=1) ** 3
    ),
    3,
)

# normalisation layers (train mode: the batch statistics are differentiated).  PyTorch's third
# derivatives of its fused batch_norm / layer_norm are wrong (its double-backward formula is not
# differentiated correctly: off by up to 50 against central differences of its own second
# derivative), so its third derivative comes from the same normalisation written out.
X64 = _rng(20).standard_normal((6, 4))


def _written_out(L, x, dims, weight, bias, eps, shape):
    mu = x.mean(dims, keepdim=True)
    d = x - mu
    y = d / ((d * d).mean(dims, keepdim=True) + eps) ** 0.5
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _bn(L, mod, x):
    if L.is_tg or not L.manual:
        return mod(x)
    dims = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return _written_out(L, x, dims, mod.weight, mod.bias, mod.eps, shape)


def _ln(L, mod, x):
    if L.is_tg or not L.manual:
        return mod(x)
    k = len(mod.normalized_shape)
    dims = tuple(range(x.ndim - k, x.ndim))
    return _written_out(L, x, dims, mod.weight, mod.bias, mod.eps, tuple(mod.normalized_shape))


for _aff in (True, False):
    _add(
        f"batchnorm1d-train-affine{_aff}",
        lambda L, a=_aff: L.m.tanh(_bn(L, L.M(L.nn.BatchNorm1d(4, affine=a)), _lin(L, 4))),
        3,
        manual=True,
    )
    _add(
        f"batchnorm2d-train-affine{_aff}",
        lambda L, a=_aff: _bn(L, L.M(L.nn.BatchNorm2d(4, affine=a)), L.T(X2)) ** 2,
        3,
        manual=True,
    )
    _add(
        f"layernorm-affine{_aff}",
        lambda L, a=_aff: L.m.tanh(
            _ln(L, L.M(L.nn.LayerNorm((4,), elementwise_affine=a)), _lin(L, 4))
        ),
        3,
        manual=True,
    )
    _add(
        f"layernorm-2d-affine{_aff}",
        lambda L, a=_aff: _ln(L, L.M(L.nn.LayerNorm((7, 6), elementwise_affine=a)), L.T(X2)) ** 3,
        3,
        manual=True,
    )
    _add(
        f"groupnorm-affine{_aff}",
        lambda L, a=_aff: L.M(L.nn.GroupNorm(2, 4, affine=a))(L.T(X2)) ** 2,
        3,
    )
_add(
    "batchnorm1d-3d-train",
    lambda L: _bn(L, L.M(L.nn.BatchNorm1d(4)), L.T(X1)) ** 2,
    3,
    manual=True,
)
_add(
    "batchnorm1d-eval",
    lambda L: L.M(L.nn.BatchNorm1d(4)).eval()(_lin(L, 4)) ** 2,
    3,
)


def _bn_f(L, x, w, b):
    if L.is_tg or not L.manual:
        return L.F.batch_norm(x, None, None, w, b, training=True)
    return _written_out(L, x, (0,), w, b, 1e-5, (1, -1))


def _ln_f(L, x, w, b):
    if L.is_tg or not L.manual:
        return L.F.layer_norm(x, (4,), w, b)
    return _written_out(L, x, (-1,), w, b, 1e-5, (-1,))


_add(
    "batch_norm-functional-train",
    lambda L: _bn_f(L, L.T(X64) ** 2, L.T(np.linspace(0.5, 2, 4)), L.T(np.linspace(-1, 1, 4))) ** 2,
    3,
    manual=True,
)
_add(
    "layer_norm-functional",
    lambda L: _ln_f(L, L.T(X64) ** 2, L.T(np.linspace(0.5, 2, 4)), L.T(np.ones(4))) ** 2,
    3,
    manual=True,
)
_add(
    "group_norm-functional",
    lambda L: L.F.group_norm(L.T(X2), 4, L.T(np.linspace(0.5, 2, 4)), L.T(np.ones(4))) ** 2,
    3,
)

# embedding, bilinear forms, dropout in eval, distances
IDX = [[1, 4, 4], [0, 1, 2]]
_add(
    "embedding-linear-tanh",
    lambda L: L.m.tanh(
        L.M(L.nn.Linear(3, 2))(L.T(np.linspace(0.5, 2, 3)) * L.M(L.nn.Embedding(5, 3))(L.I(IDX)))
    ),
    3,
)
_add(
    "embedding-functional-square",
    lambda L: L.F.embedding(L.I(IDX), L.T(_rng(21).standard_normal((5, 3))), padding_idx=4) ** 3,
    3,
)
_add(
    "dropout-eval",
    lambda L: L.M(L.nn.Dropout(0.5)).eval()(L.m.tanh(_lin(L, 4))),
    3,
)
_add(
    "dropout-functional-off",
    lambda L: L.F.dropout(L.m.tanh(_lin(L, 4)), 0.3, training=False),
    3,
)
Y53 = _rng(22).standard_normal((5, 3))


def _cdist(L, a, b, p):
    if L.is_tg:
        return L.m.cdist(a, b, p=p)
    d = (a[:, None, :] - b[None, :, :]).abs()  # PyTorch has no double backward for cdist
    return (d**p).sum(-1) ** (1.0 / p)


for _p in (2.0, 1.0, 3.0):
    _add(
        f"pairwise_distance-p{_p}",
        lambda L, p=_p: L.F.pairwise_distance(L.T(X53), L.T(Y53), p=p),
        3 if _p != 1.0 else 2,
    )
    _add(
        f"cdist-p{_p}",
        lambda L, p=_p: _cdist(L, L.T(X53), L.T(Y53[:4]), p),
        3 if _p != 1.0 else 2,
    )
_add(
    "pairwise_distance-keepdim-lin",
    lambda L: L.F.pairwise_distance(_lin(L, 3), L.T(Y53), keepdim=True),
    3,
)
_add("cosine_similarity", lambda L: L.F.cosine_similarity(L.T(X53), L.T(Y53)), 3)
_add(
    "cosine_similarity-dim0-lin",
    lambda L: L.F.cosine_similarity(_lin(L, 3), L.T(Y53), dim=0),
    3,
)

# recurrent layers
XS = _rng(30).standard_normal((3, 2, 3))
for _cls in ("RNN", "GRU", "LSTM"):
    _add(f"{_cls}-seq", lambda L, c=_cls: L.M(getattr(L.nn, c)(3, 2))(L.T(XS))[0], 3)
    _add(
        f"{_cls}-2layer-bi",
        lambda L, c=_cls: L.M(getattr(L.nn, c)(3, 2, num_layers=2, bidirectional=True))(L.T(XS))[0],
        2,
    )
for _cls in ("RNNCell", "GRUCell", "LSTMCell"):
    _add(f"{_cls}", lambda L, c=_cls: L.M(getattr(L.nn, c)(3, 2))(L.T(XS[0])), 3)
_add("RNN-relu", lambda L: L.M(L.nn.RNN(3, 2, nonlinearity="relu"))(L.T(XS))[0])


# ---- more layers and options ---------------------------------------------------------------------

for _pm in ("zeros",):  # (the other modes are refused: F.pad first)
    _add(
        f"conv2d-padding_mode-{_pm}",
        lambda L, pm=_pm: L.F.softplus(
            L.M(L.nn.Conv2d(4, 3, 3, padding=1, padding_mode=pm))(L.T(X2))
        ),
        3,
    )
for _pd in ("same", "valid"):
    _add(
        f"conv1d-padding-{_pd}",
        lambda L, pd=_pd: L.m.tanh(L.M(L.nn.Conv1d(4, 2, 4, padding=pd, dilation=2))(L.T(X1))),
        3,
    )
for _kw in (
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "dilation": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)},
):
    _tag = "".join(f"-{k}{v}" for k, v in _kw.items()).replace(" ", "")
    _add(
        f"max_pool2d{_tag}",
        lambda L, kw=_kw: L.F.max_pool2d(L.m.sin(L.T(X2)), **kw) ** 2,
        3,
    )
for _kw in (
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
):
    _tag = "".join(f"-{k}{v}" for k, v in _kw.items())
    _add(
        f"avg_pool2d{_tag}",
        lambda L, kw=_kw: L.F.avg_pool2d(L.m.sin(L.T(X2)), **kw) ** 2,
        3,
    )
_add(
    "max_pool2d-return-indices",
    lambda L: L.F.max_pool2d(L.m.sin(L.T(X2)), 2, return_indices=True)[0] ** 2,
    3,
)
_add("MaxPool1d-module", lambda L: L.M(L.nn.MaxPool1d(3, 2, 1))(L.T(X1)) ** 3, 3)
_add("AvgPool1d-module", lambda L: L.M(L.nn.AvgPool1d(3, 2, 1))(L.T(X1)) ** 3, 3)
_add("AdaptiveAvgPool2d-None", lambda L: L.M(L.nn.AdaptiveAvgPool2d((None, 4)))(L.T(X2)) ** 3, 3)
for _g in (1, 4):
    _add(
        f"groupnorm-groups{_g}",
        lambda L, g=_g: L.m.tanh(L.M(L.nn.GroupNorm(g, 4))(L.T(X2))),
        3,
    )
_add(
    "batchnorm1d-no-running-stats-eval",
    lambda L: _bn(L, L.M(L.nn.BatchNorm1d(4, track_running_stats=False)).eval(), _lin(L, 4)) ** 2,
    3,
    manual=True,
)
_add(
    "batchnorm1d-momentum-none",
    lambda L: L.M(L.nn.BatchNorm1d(4, momentum=None))(_lin(L, 4)) ** 2,
    2,
)
for _p in (float("inf"), 0.0, 0.5):
    _add(
        f"pairwise_distance-p{_p}",
        lambda L, p=_p: L.F.pairwise_distance(L.T(X53), L.T(Y53), p=p) ** 2,
        2,
    )
_add(
    "normalize-p1-zeros",
    lambda L: L.F.normalize(L.T([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0]]) * L.T([1.0]), p=1.0) ** 3,
    3,
)
_add("normalize-pinf", lambda L: L.F.normalize(L.T(X53), p=float("inf")) ** 3, 2)
_add(
    "cosine_similarity-broadcast", lambda L: L.F.cosine_similarity(L.T(X53), L.T(Y53[:1]), dim=1), 3
)
_add("linear-1d-input", lambda L: L.m.tanh(L.M(L.nn.Linear(3, 2))(L.T(X53[0]))), 3)
_add(
    "flatten-linear",
    lambda L: L.m.tanh(L.M(L.nn.Linear(6, 2))(L.M(L.nn.Flatten())(L.T(X53[:4].reshape(2, 2, 3))))),
    3,
)
XK4 = _rng(90).standard_normal((2, 4, 3, 2))
TK4 = np.array([[[0, 1], [3, 3], [2, 0]], [[1, 1], [0, 2], [3, 1]]])
_add(
    "ce-kdim-smooth-weight",
    lambda L: L.F.cross_entropy(
        L.m.sin(L.T(XK4)), L.I(TK4), weight=L.T(W4, rg=False), label_smoothing=0.3, ignore_index=2
    ),
    3,
)
_add(
    "ce-kdim-all-ignored-sum",
    lambda L: L.F.cross_entropy(
        L.m.sin(L.T(XK4)), L.I(np.full(TK4.shape, 1)), ignore_index=1, reduction="sum"
    ),
    3,
)
_add(
    "bce-logits-kdim-none",
    lambda L: (
        L.F.binary_cross_entropy_with_logits(
            L.m.sin(L.T(XK4)), L.T(np.abs(np.cos(XK4))), reduction="none"
        )
        ** 2
    ),
    3,
)
_add(
    "huber-beta0-kink",
    lambda L: L.F.smooth_l1_loss(L.T(XK) * L.T(np.ones(8)), L.T(YK), beta=0.0),
    3,
)
_add(
    "kl-target-zeros",
    lambda L: L.F.kl_div(
        L.F.log_softmax(_lin(L, 4), dim=1), L.T(np.where(P54 > 0.3, 0.0, P54)), reduction="sum"
    ),
    3,
)
_add("log_softmax-1d", lambda L: L.F.log_softmax(L.T(X53[0]), dim=0) ** 2, 3)
_add("softmax-dtype", lambda L: L.F.softmax(L.T(X53), dim=1, dtype=L.m.float64) ** 2, 3)
XS_H = _rng(31).standard_normal((1, 2, 2))
for _cls in ("RNN", "GRU", "LSTM"):
    _add(
        f"{_cls}-with-state",
        lambda L, c=_cls: L.M(getattr(L.nn, c)(3, 2))(
            L.T(XS),
            (L.T(XS_H), L.T(XS_H[::-1].copy())) if c == "LSTM" else L.T(XS_H),
        ),
        3,
    )
_add(
    "GRU-batch-first-bias-false",
    lambda L: L.M(L.nn.GRU(3, 2, batch_first=True, bias=False))(L.T(XS.transpose(1, 0, 2)))[1],
    3,
)
_add(
    "LSTM-dropout-eval",
    lambda L: L.M(L.nn.LSTM(3, 2, num_layers=2, dropout=0.5)).eval()(L.T(XS))[0],
    3,
)


# ---- the generic tests ---------------------------------------------------------------------------


def _params():
    out = []
    for name in CASES:
        marks = []
        if name in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[name]))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", _params())
def test_higher_derivatives_agree_with_torch(name):
    prog, order = CASES[name]
    _compare(prog, order, name in MANUAL)


# ---- jumps of the second derivative: tapegrad takes the side of its first derivative -------------

# (PyTorch's double backward of elu / selu / celu at 0 and of softplus where beta x equals the
# threshold takes the other side than its own first derivative; tapegrad's second derivative
# is the one-sided derivative of the branch its first derivative takes: the closed forms)
JUMPS = {
    # name: (fn, kwargs, point, first derivative there, second derivative there)
    "elu": ("elu", {"alpha": 0.7}, 0.0, 0.7, 0.7),
    "selu": ("selu", {}, 0.0, 1.0507009873554805 * 1.6732632423543772, None),
    "celu": ("celu", {"alpha": 1.5}, 0.0, 1.0, 1 / 1.5),
    "softplus": ("softplus", {"beta": 2.5, "threshold": 3.0}, 1.2, None, None),
}


@pytest.mark.parametrize("name", sorted(JUMPS))
def test_second_derivative_at_a_jump_is_the_side_of_the_first(name):
    fn, kw, x0, d1, d2 = JUMPS[name]
    if name == "selu":
        d2 = d1  # scale * alpha * exp(x) at 0
    if name == "softplus":  # beta x == threshold: the smooth branch, as PyTorch's first derivative
        s = 1 / (1 + np.exp(-3.0))
        d1, d2 = s, 2.5 * s * (1 - s)
    x = tg.tensor([x0], requires_grad=True)
    (g,) = tg.autograd.grad(getattr(tgF, fn)(x, **kw).sum(), [x], create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(_np(g), [d1], rtol=1e-14)
    np.testing.assert_allclose(_np(h), [d2], rtol=1e-14)
    # and PyTorch's first derivative is the same side
    xt = torch.tensor([x0], dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(getattr(torch.nn.functional, fn)(xt, **kw).sum(), [xt])
    np.testing.assert_allclose(_np(g), _np(gt), rtol=1e-14)
    # forward over reverse agrees with reverse over reverse
    hh = tg.hessian(lambda v: getattr(tgF, fn)(v, **kw).sum())(np.array([x0]))
    np.testing.assert_allclose(np.asarray(hh).ravel(), [d2], rtol=1e-14)


# ---- third derivatives of the fused normalisations: central differences --------------------------


@pytest.mark.parametrize("norm", ["layer_norm", "batch_norm", "group_norm"])
def test_third_derivative_of_normalisation_is_the_difference_quotient(norm):
    """PyTorch's third derivative of its fused layer_norm / batch_norm is off by up to ~50
    (its own central differences agree with tapegrad's): tapegrad's against differences of its
    own Hessian-vector products."""
    rng = _rng(40)
    x0, wo, v, u = (rng.standard_normal((3, 4)) for _ in range(4))

    def layer(x):
        if norm == "layer_norm":
            return tgF.layer_norm(x, (4,))
        if norm == "batch_norm":
            return tgF.batch_norm(x, None, None, training=True)
        return tgF.group_norm(x.reshape(1, 3, 4), 3).reshape(3, 4)

    def hvp(x, create=False):
        xt = tg.tensor(x, requires_grad=True)
        (g,) = tg.autograd.grad((layer(xt) * tg.tensor(wo)).sum(), [xt], create_graph=True)
        (h,) = tg.autograd.grad((g * tg.tensor(v)).sum(), [xt], create_graph=create)
        return xt, h

    xt, h = hvp(x0, True)
    (third,) = tg.autograd.grad((h * tg.tensor(u)).sum(), [xt])
    e = 1e-5
    fd = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = e
        fd[i] = (np.sum(_np(hvp(x0 + d)[1]) * u) - np.sum(_np(hvp(x0 - d)[1]) * u)) / (2 * e)
    np.testing.assert_allclose(_np(third), fd, rtol=1e-6, atol=1e-6)


# ---- the user programs: WGAN-GP, backward(create_graph=True), MAML ---------------------------

XR = _rng(50).standard_normal((4, 3))
XF = _rng(51).standard_normal((4, 3))
MIX = _rng(52).uniform(size=(4, 1))


def _critic(L):
    nn = L.nn
    return L.M(
        nn.Sequential(
            nn.Linear(3, 5), nn.LeakyReLU(0.2), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1)
        )
    )


def _wgan_gp(L):
    """The critic's loss with the gradient penalty, backward into the parameters' .grad."""
    c = _critic(L)
    xi = L.T(MIX * XR + (1 - MIX) * XF)
    out = c(xi)
    (g,) = L.m.autograd.grad(
        out, xi, grad_outputs=L.m.ones(tuple(out.shape), dtype=L.m.float64), create_graph=True
    )
    norm = ((g**2).sum(1) + 1e-12) ** 0.5
    loss = c(L.wrap(XF)).mean() - c(L.wrap(XR)).mean() + 10 * ((norm - 1) ** 2).mean()
    loss.backward()
    return [p.grad for p in c.parameters()] + [xi.grad]


def _backward_create_graph(L):
    """backward(create_graph=True), a penalty on the .grad it wrote, a second backward that
    accumulates into the same .grad (PyTorch: grad = grad + new, out of place)."""
    c = _critic(L)
    x = L.T(XR)
    c(x).sum().backward(create_graph=True)
    firsts = [p.grad.detach().clone() for p in c.parameters()]
    pen = sum((p.grad**2).sum() for p in c.parameters()) + (x.grad**3).sum()
    pen.backward()
    return firsts + [p.grad.detach() for p in c.parameters()] + [x.grad.detach()]


def _maml(L):
    """Two inner SGD steps with create_graph, the outer gradient into the initial weights."""
    rng = _rng(53)
    params = [L.T(rng.standard_normal((5, 3))), L.T(np.zeros(5)), L.T(rng.standard_normal((1, 5)))]

    def f(ps, x):
        return L.F.linear(L.F.softplus(L.F.linear(L.wrap(x), ps[0], ps[1])), ps[2])

    fast = params
    for _ in range(2):
        inner = L.F.mse_loss(f(fast, XR), L.wrap(XR[:, :1]))
        gs = L.m.autograd.grad(inner, fast, create_graph=True)
        fast = [p - 0.1 * g for p, g in zip(fast, gs, strict=True)]
    outer = L.F.smooth_l1_loss(f(fast, XF), L.wrap(XF[:, 1:2]), beta=0.5)
    return L.m.autograd.grad(outer, params)


def _maml_ce(L):
    """MAML of a classifier: cross-entropy with label smoothing, the inner step on a LayerNorm
    network's parameters."""
    ln = L.M(L.nn.LayerNorm(4))
    lin = L.M(L.nn.Linear(3, 4))
    params = [lin.weight, lin.bias, ln.weight, ln.bias]
    t = L.I([0, 3, 1, 2])

    def f(ps, x):
        return L.F.layer_norm(L.F.linear(L.wrap(x), ps[0], ps[1]), (4,), ps[2], ps[3])

    inner = L.F.cross_entropy(f(params, XR), t, label_smoothing=0.1)
    gs = L.m.autograd.grad(inner, params, create_graph=True)
    fast = [p - 0.5 * g for p, g in zip(params, gs, strict=True)]
    outer = L.F.cross_entropy(f(fast, XF), t)
    return L.m.autograd.grad(outer, params)


PROGRAMS = {
    "wgan-gp": _wgan_gp,
    "backward-create-graph": _backward_create_graph,
    "maml": _maml,
    "maml-ce-layernorm": _maml_ce,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_user_programs_agree_with_torch(name):
    theirs_lib = _Lib("torch")
    torch.manual_seed(0)
    theirs = PROGRAMS[name](theirs_lib)
    ours = PROGRAMS[name](_Lib("tg", theirs_lib.states))
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        _close(a, b, f"{name} {i}", 1e-9)


# ---- tg.hessian / tg.hvp / traces of NumPy-style code calling tg.nn.functional -------------------

HX = _rng(60).standard_normal((3, 4))
HW = _rng(61).standard_normal((4, 4))
HY = _rng(62).standard_normal((3, 4))
HP = _rng(63).dirichlet(np.ones(4), size=3)
HV = _rng(64).standard_normal((3, 4))
HT = np.array([0, 3, 1])
HCW = np.array([1.0, 2.0, 0.5, 3.0])
HK = _rng(65).standard_normal((2, 3, 2))


def _fprogs(F, m, w, i):
    """Scalar functions of a (3, 4) array, for the library of F (m its module, w wraps a float
    array, i an index array)."""
    return {
        "relu-lin": lambda x: (F.relu(x @ w(HW)) ** 2).sum(),
        "leaky_relu-cube": lambda x: (F.leaky_relu(x, 0.1) ** 3).sum(),
        "elu": lambda x: (F.elu(x @ w(HW), alpha=0.5) * w(HY)).sum(),
        "selu": lambda x: F.selu(x).sum(),
        "celu": lambda x: F.celu(x, alpha=0.5).sum(),
        "gelu": lambda x: F.gelu(x @ w(HW)).sum(),
        "gelu-tanh": lambda x: F.gelu(x, approximate="tanh").sum(),
        "silu": lambda x: F.silu(x).sum(),
        "mish": lambda x: (F.mish(x) * w(HY)).sum(),
        "softplus-beta": lambda x: F.softplus(x, beta=2.0, threshold=1.5).sum(),
        "logsigmoid": lambda x: F.logsigmoid(x).sum(),
        "softsign": lambda x: F.softsign(x).sum(),
        "tanhshrink": lambda x: F.tanhshrink(x).sum(),
        "hardtanh-cube": lambda x: (F.hardtanh(x, -0.5, 0.8) ** 3).sum(),
        "relu6-cube": lambda x: (F.relu6(3 * x) ** 3).sum(),
        "hardswish": lambda x: (F.hardswish(3 * x) * w(HY)).sum(),
        "softmax-dim0": lambda x: (F.softmax(x, dim=0) * w(HY)).sum(),
        "softmax-dim1-sq": lambda x: (F.softmax(x, dim=1) ** 2 * w(HY)).sum(),
        "log_softmax-lin": lambda x: (F.log_softmax(x @ w(HW), dim=1) * w(HY)).sum(),
        "normalize": lambda x: (F.normalize(x, dim=1) * w(HY)).sum(),
        "normalize-p3-dim0": lambda x: (F.normalize(x, p=3, dim=0) * w(HY)).sum(),
        "mse": lambda x: F.mse_loss(x @ w(HW), w(HY)),
        "smooth_l1": lambda x: F.smooth_l1_loss(x @ w(HW), w(HY), beta=0.7),
        "huber": lambda x: F.huber_loss(x @ w(HW), w(HY), delta=0.7),
        "bce": lambda x: F.binary_cross_entropy(m.sigmoid(x), w(HP), weight=w(HCW)),
        "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(
            x, w(HP), pos_weight=w(HCW), reduction="sum"
        ),
        "cross_entropy": lambda x: F.cross_entropy(
            x @ w(HW), i(HT), label_smoothing=0.1, weight=w(HCW)
        ),
        "cross_entropy-ignore": lambda x: F.cross_entropy(x, i(HT), ignore_index=3),
        "cross_entropy-probs": lambda x: F.cross_entropy(x, w(HP), label_smoothing=0.2),
        "nll": lambda x: F.nll_loss(F.log_softmax(x, dim=1), i(HT), weight=w(HCW)),
        "kl_div": lambda x: F.kl_div(F.log_softmax(x, dim=1), w(HP), reduction="batchmean"),
        "kl_div-log-target": lambda x: F.kl_div(
            F.log_softmax(x, dim=1), w(np.log(HP)), reduction="sum", log_target=True
        ),
        "layer_norm": lambda x: (F.layer_norm(x, (4,)) * w(HY)).sum(),
        "group_norm": lambda x: (F.group_norm(x.reshape(1, 3, 4), 3) * w(HY[None])).sum(),
        "batch_norm-train": lambda x: (
            F.batch_norm(x, None, None, training=True) ** 2 * w(HY)
        ).sum(),
        "linear-tanh": lambda x: m.tanh(F.linear(x, w(HW), w(HW[0]))).sum(),
        "pairwise_distance": lambda x: F.pairwise_distance(x, w(HY)).sum(),
        "pairwise_distance-p3": lambda x: F.pairwise_distance(x, w(HY), p=3).sum(),
        "cosine_similarity": lambda x: F.cosine_similarity(x, w(HY)).sum(),
        "conv1d-cube": lambda x: (F.conv1d(x.reshape(1, 3, 4), w(HK), padding=1) ** 3).sum(),
        "conv2d-tanh": lambda x: m.tanh(
            F.conv2d(x.reshape(1, 1, 3, 4), w(HW[None, None, :2, :2]), padding=1, stride=(1, 2))
        ).sum(),
        "max_pool2d-cube": lambda x: (F.max_pool2d(x.reshape(1, 1, 3, 4), 2, stride=1) ** 3).sum(),
        "avg_pool2d-cube": lambda x: (
            F.avg_pool2d(x.reshape(1, 1, 3, 4), 2, stride=1, padding=1) ** 3
        ).sum(),
        "adaptive_avg_pool2d": lambda x: (
            F.adaptive_avg_pool2d(x.reshape(1, 1, 3, 4), (2, 3)) ** 3
        ).sum(),
        "max_pool1d-cube": lambda x: (F.max_pool1d(x.reshape(1, 3, 4), 2) ** 3).sum(),
        "avg_pool1d-cube": lambda x: (
            F.avg_pool1d(x.reshape(1, 3, 4), 3, padding=1, stride=2) ** 3
        ).sum(),
        "glu": lambda x: F.glu(x, dim=1).sum(),
        "logsumexp": lambda x: m.logsumexp(x, dim=1).sum(),
        "embedding-cube": lambda x: (F.embedding(i([0, 2, 2]), x) ** 3).sum(),
        "pad-reflect-cube": lambda x: (
            F.pad(x.reshape(1, 3, 4), (2, 1), mode="reflect") ** 3
        ).sum(),
    }


def _tg_progs():
    return _fprogs(tgF, tg, tg.tensor, lambda a: tg.tensor(np.array(a)))


def _torch_progs():
    return _fprogs(torch.nn.functional, torch, torch.tensor, lambda a: torch.tensor(np.array(a)))


FNAMES = sorted(_tg_progs())


def _torch_hessian(name, x):
    return torch.func.hessian(_torch_progs()[name])(torch.tensor(x)).numpy().reshape(12, 12)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", FNAMES)
def test_hessian_and_hvp_of_numpy_code_agree_with_torch_func(name):
    ref = _torch_hessian(name, HX)
    f = _tg_progs()[name]
    scale = max(1.0, np.max(np.abs(ref)))
    h = np.asarray(tg.hessian(f)(HX)).reshape(12, 12)
    np.testing.assert_allclose(h, ref, rtol=RTOL2, atol=1e-12 * scale)
    hv = np.asarray(tg.hvp(f, (HX,), (HV,))).reshape(12)
    np.testing.assert_allclose(hv, ref @ HV.reshape(12), rtol=RTOL2, atol=1e-12 * scale)


# the ops whose derivatives branch in Python on the input (a trace guards them)
GUARDED = {"cosine_similarity", "max_pool1d-cube", "max_pool2d-cube", "softplus-beta"}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", FNAMES)
def test_trace_hvp_replays_agree_with_torch_func(name):
    f = _tg_progs()[name]
    tr = tg.trace(f, HX)
    x1 = _rng(66).standard_normal((3, 4))
    for x in (HX, x1):
        if x is x1 and name in GUARDED:
            with pytest.raises(tg.RetraceRequired):
                tr.hvp(x, HV)
            continue
        ref = _torch_hessian(name, x)
        scale = max(1.0, np.max(np.abs(ref)))
        hv = np.asarray(tr.hvp(x, HV)).reshape(12)
        np.testing.assert_allclose(hv, ref @ HV.reshape(12), rtol=RTOL2, atol=1e-12 * scale)


# ---- a transform whose f reads a parameter from its closure -------------------------------------


# was a plain ndarray: the WGAN-GP penalty built from it added 0 to W.grad
def test_grad_transform_of_a_closure_over_a_parameter_stays_differentiable():
    w0 = _rng(70).standard_normal((3, 3))
    wt = torch.tensor(w0, requires_grad=True)
    gxt = torch.func.grad(lambda x: torch.tanh(x @ wt).sum())(torch.tensor(XR))
    (torch.tanh(torch.tensor(XR) @ wt).sum() + (gxt**2).sum()).backward()
    w = tg.tensor(w0, requires_grad=True)
    gx = tg.grad(lambda x: tg.tanh(x @ w).sum())(XR)
    assert isinstance(gx, tg.Tensor) and gx.requires_grad  # a Tensor of w, as torch.func's
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy(), rtol=1e-12)
    with tg.no_grad():  # without recording: a plain array
        g0 = tg.grad(lambda x: tg.tanh(x @ w).sum())(XR)
    assert isinstance(g0, np.ndarray)
    np.testing.assert_allclose(g0, gxt.detach().numpy(), rtol=1e-12)
    loss = tg.tanh(tg.tensor(XR) @ w).sum() + (gx**2).sum()
    loss.backward()
    np.testing.assert_allclose(_np(w.grad), wt.grad.numpy(), rtol=1e-10)


# ---- kl_div at a zero target: no finite derivative in any mode ---------------------------------

KX = np.array([[-1.0, -2.0, -0.5, -1.0]])
KT = np.array([[0.0, 0.3, 0.7, 0.0]])


def _kl_t(t):
    return tgF.kl_div(tg.tensor(KX), t, reduction="sum")


def test_kl_div_forward_mode_at_a_zero_target_is_nan_as_reverse_mode():
    """t log t has derivative -inf at t = 0: reverse mode gave nan there (as PyTorch) but
    forward mode gave the finite 1 (= -x, as if t log t were flat at 0)."""
    ref = torch.func.jacrev(
        lambda t: torch.nn.functional.kl_div(torch.tensor(KX), t, reduction="sum")
    )(torch.tensor(KT)).numpy()
    rev = np.asarray(tg.jacrev(_kl_t)(KT))
    fwd = np.asarray(tg.jacfwd(_kl_t)(KT))
    np.testing.assert_allclose(rev, ref, rtol=1e-14)  # nan at the zero targets
    np.testing.assert_allclose(fwd, ref, rtol=1e-14)
    (_, tangent) = tg.jvp(_kl_t, (KT,), (np.array([[1.0, 0.0, 0.0, 0.0]]),))
    assert np.isnan(tangent)
    h = np.asarray(tg.hessian(_kl_t)(KT)).reshape(4, 4)
    assert np.isnan(h[0, 0]) and np.isnan(h[3, 3])
    np.testing.assert_allclose(np.diag(h)[1:3], 1 / KT[0, 1:3], rtol=1e-14)
    # the value and the input's derivatives are unchanged
    np.testing.assert_allclose(
        _np(_kl_t(tg.tensor(KT))),
        torch.nn.functional.kl_div(torch.tensor(KX), torch.tensor(KT), reduction="sum").item(),
        rtol=1e-14,
    )
    gx = tg.grad(lambda x: tgF.kl_div(x, tg.tensor(KT), reduction="sum"))(KX)
    np.testing.assert_allclose(gx, -KT, rtol=1e-14)


def test_kl_div_derivative_of_the_target_gradient_in_its_cotangent_is_nan_at_zero():
    """The double-vjp trick (a jvp from d/dv of a vjp with cotangent v): at a zero target the
    target's gradient is nan, so is its derivative in v (it was 0.5 = -x u)."""
    u = np.array([[0.5, -1.0, 2.0, 1.0]])
    res = []
    for m, F in ((torch, torch.nn.functional), (tg, tgF)):
        x = m.tensor(KX, requires_grad=True)
        t = m.tensor(KT, requires_grad=True)
        v = m.tensor(np.array([[1.0, 2.0, 3.0, 4.0]]), requires_grad=True)
        (gt,) = m.autograd.grad(F.kl_div(x, t, reduction="none"), [t], v, create_graph=True)
        res.append([_np(g) for g in m.autograd.grad((gt * m.tensor(u)).sum(), [v, x, t])])
    for a, b in zip(res[1], res[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_cosine_similarity_second_derivative_at_a_zero_vector():
    """Below eps the norm is clamped: the function is linear in the zero row, so its second
    derivatives there are 0 (PyTorch's double backward gives nan there; elsewhere equal)."""
    a0 = np.array([[0.0, 0.0], [1.0, 2.0]])
    b0 = np.array([[1.0, 1.0], [0.0, 0.5]])
    res = []
    for m, F in ((torch, torch.nn.functional), (tg, tgF)):
        a = m.tensor(a0, requires_grad=True)
        b = m.tensor(b0, requires_grad=True)
        (ga, gb) = m.autograd.grad(F.cosine_similarity(a, b).sum(), [a, b], create_graph=True)
        res.append([_np(g) for g in (ga, gb)])
        res.append([_np(g) for g in m.autograd.grad((ga**2).sum() + (gb**2).sum(), [a, b])])
    for a, b in zip(res[2], res[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    ours, theirs = res[3], res[1]
    assert np.all(np.isnan(theirs[0][0]))  # PyTorch
    np.testing.assert_array_equal(ours[0][0], [0.0, 0.0])
    np.testing.assert_allclose(ours[0][1], theirs[0][1], rtol=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10)


def _torch_third(name, x):
    f = _torch_progs()[name]
    if name == "batch_norm-train":  # PyTorch's forward-mode third derivative of it is wrong

        def f(x):
            d = x - x.mean(0, keepdim=True)
            y = d / ((d * d).mean(0, keepdim=True) + 1e-5) ** 0.5
            return (y**2 * torch.tensor(HY)).sum()

    if name == "glu":  # PyTorch has no third derivative of glu

        def f(x):
            return (x[:, :2] * torch.sigmoid(x[:, 2:])).sum()

    try:
        third = torch.func.jacfwd(torch.func.hessian(f))(torch.tensor(x))
    except NotImplementedError:  # no forward mode for glu's / huber's double backward
        third = torch.func.jacrev(torch.func.hessian(f))(torch.tensor(x))
    return third.numpy().reshape(12, 144)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", FNAMES)
def test_third_derivatives_of_numpy_code_agree_with_torch_func(name):
    """Forward over forward over reverse, and reverse three times, against PyTorch's
    jacfwd(hessian)."""
    f = _tg_progs()[name]
    ref = _torch_third(name, HX)
    scale = max(1.0, np.max(np.abs(ref)))
    fwd = np.asarray(tg.jacfwd(tg.hessian(f))(HX)).reshape(12, 144)
    np.testing.assert_allclose(fwd, ref, rtol=RTOL3, atol=1e-11 * scale)
    if FNAMES.index(name) % 2:  # reverse three times (the costly way) for every other one
        return
    rev = np.asarray(tg.jacrev(tg.jacrev(tg.jacrev(f)))(HX)).reshape(12, 144)
    np.testing.assert_allclose(rev, ref, rtol=RTOL3, atol=1e-11 * scale)
