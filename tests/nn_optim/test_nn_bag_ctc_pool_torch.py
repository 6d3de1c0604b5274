"""``F.embedding_bag`` / ``nn.EmbeddingBag``, ``F.ctc_loss`` / ``nn.CTCLoss``,
``nn.AdaptiveLogSoftmaxWithLoss``, the average and LP pools with ``ceil_mode=True`` and the max
pools' pick among several NaNs, side by side with PyTorch (float64).

Hunted: values, shapes, dtype kinds, first derivatives of a fixed weighting (``_compare`` of
``tests/torch_programs.py``), second derivatives (``create_graph``, the derivative of the
squared gradients), the parameter names and ``state_dict`` keys, and that bad input raises
where PyTorch raises (the message naming the function).  ``ceil_mode=True`` windows include
the last, partial window, whose ``count_include_pad`` divisor is PyTorch's (the window clipped
to the input padded on both sides).  PyTorch's CTC kernel has no double backward and returns
the gradient with respect to ``log_probs`` plus ``exp(log_probs)`` (cancelled by
``log_softmax``'s backward): CTC is compared with torch through ``log_softmax`` and its
derivatives with respect to ``log_probs`` against central finite differences
(``tg.gradcheck`` / ``tg.gradgradcheck``).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tests.torch_programs import _compare, _raises  # noqa: E402


def _rng(k):
    return np.random.default_rng(7100 + k)


def _second(out, leaves, L):
    """(out, grads of a fixed weighting (create_graph), grads of their summed squares)."""
    w = _rng(99).standard_normal(tuple(out.shape))
    s = (out * L.T(w, rg=False)).sum()
    gs = L.m.autograd.grad(s, leaves, create_graph=True)
    tot = sum((g * g).sum() for g in gs)
    return out, gs, L.m.autograd.grad(tot, leaves, retain_graph=True)


# ---- average / LP / max pools with ceil_mode=True ------------------------------------------------

X1 = _rng(1).standard_normal((2, 3, 7))
X2 = _rng(2).standard_normal((2, 2, 7, 6))
X3 = _rng(3).standard_normal((1, 2, 5, 4, 6))
XPOS = np.abs(X2) + 0.3

CEIL = {
    "avg1d-s2": lambda L: L.F.avg_pool1d(L.T(X1), 3, 2, ceil_mode=True),
    "avg1d-pad-include": lambda L: L.F.avg_pool1d(L.T(X1), 4, 3, 1, ceil_mode=True),
    "avg1d-pad-exclude": lambda L: L.F.avg_pool1d(
        L.T(X1), 4, 3, 1, ceil_mode=True, count_include_pad=False
    ),
    "avg1d-unbatched": lambda L: L.F.avg_pool1d(L.T(X1[0]), 2, 2, 1, ceil_mode=True),
    "avg2d-s2": lambda L: L.F.avg_pool2d(L.T(X2), 3, 2, ceil_mode=True),
    "avg2d-pad-include": lambda L: L.F.avg_pool2d(L.T(X2), (3, 2), (2, 3), (1, 1), True, True),
    "avg2d-pad-exclude": lambda L: L.F.avg_pool2d(L.T(X2), (3, 4), 2, (1, 2), True, False),
    "avg2d-divisor": lambda L: L.F.avg_pool2d(L.T(X2), 3, 2, 1, ceil_mode=True, divisor_override=4),
    "avg2d-stride-beyond-kernel": lambda L: L.F.avg_pool2d(L.T(X2), 2, 3, ceil_mode=True),
    "avg3d-pad-include": lambda L: L.F.avg_pool3d(L.T(X3), 3, 2, 1, ceil_mode=True),
    "avg3d-pad-exclude": lambda L: L.F.avg_pool3d(
        L.T(X3), (2, 3, 4), (2, 2, 3), (1, 0, 2), ceil_mode=True, count_include_pad=False
    ),
    "AvgPool2d-layer": lambda L: L.m.nn.AvgPool2d(3, 2, 1, ceil_mode=True)(L.T(X2)),
    "AvgPool1d-layer": lambda L: L.m.nn.AvgPool1d(2, 3, ceil_mode=True)(L.T(X1)),
    "AvgPool3d-layer": lambda L: L.m.nn.AvgPool3d(2, ceil_mode=True, count_include_pad=False)(
        L.T(X3)
    ),
    "lp1d-p2": lambda L: L.F.lp_pool1d(L.T(np.abs(X1) + 0.3), 2, 3, 2, ceil_mode=True),
    "lp2d-p1.5": lambda L: L.F.lp_pool2d(L.T(XPOS), 1.5, 3, 2, ceil_mode=True),
    "lp3d-p3": lambda L: L.F.lp_pool3d(L.T(np.abs(X3) + 0.3), 3, 2, ceil_mode=True),
    "LPPool2d-layer": lambda L: L.m.nn.LPPool2d(2, (3, 2), 2, ceil_mode=True)(L.T(XPOS)),
    "max2d-ceil-pad": lambda L: L.F.max_pool2d(L.T(X2), 3, 2, 1, ceil_mode=True),
    "max3d-ceil-indices": lambda L: L.F.max_pool3d(
        L.T(X3), 2, 2, ceil_mode=True, return_indices=True
    ),
}


@pytest.mark.parametrize("name", list(CEIL))
def test_ceil_mode_pools_agree_with_torch(name):
    _compare(CEIL[name])


@pytest.mark.parametrize(
    "fn,args",
    [
        ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        ("avg_pool1d", dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
        ("avg_pool3d", dict(kernel_size=2, stride=2, ceil_mode=True, count_include_pad=False)),
    ],
)
def test_ceil_mode_pools_to_second_order(fn, args):
    """The pool of x ** 3 (its second derivative is not zero) to second order."""
    x = {"avg_pool2d": XPOS, "avg_pool1d": X1, "avg_pool3d": X3}[fn]

    def prog(L):
        xt = L.T(x)
        return _second(getattr(L.F, fn)(xt**3, **args), [xt], L)

    _compare(prog)


def test_lp_pool_ceil_mode_derivatives_against_finite_differences():
    """(PyTorch's double backward of lp_pool2d takes seconds.)"""

    def f(x):
        return tg.nn.functional.lp_pool2d(x, 1.5, (3, 2), 2, ceil_mode=True)

    x = tg.tensor(XPOS[0, :1, :5, :3], requires_grad=True)
    assert tg.gradcheck(f, (x,)) and tg.gradgradcheck(f, (x,))


def test_avg_pool3d_smaller_input_than_kernel_raises_as_torch():
    prog = lambda L: L.F.avg_pool3d(L.T(np.ones((1, 1, 1, 4, 4))), 2, 1, 1, ceil_mode=True)  # noqa: E731
    assert _raises(prog, "torch") is not None
    err = _raises(prog, "tg")
    assert isinstance(err, ValueError) and "avg_pool3d" in str(err)


# ---- max pools: several NaNs in a window -> the last NaN (PyTorch's CPU kernels) -----------------

XN = np.round(_rng(4).standard_normal((1, 2, 4, 5)))
XN[0, 0, 0, 0] = XN[0, 0, 1, 1] = XN[0, 1, 2, 3] = XN[0, 1, 3, 4] = XN[0, 0, 3, 0] = np.nan
XN[0, 1, 0, 1] = -np.inf

NANS = {
    "max_pool1d": lambda L: L.F.max_pool1d(L.T(XN[:, :, 1]), 3, 1, 1, return_indices=True),
    "max_pool2d": lambda L: L.F.max_pool2d(L.T(XN), 2, 1, return_indices=True),
    "max_pool2d-ceil-pad": lambda L: L.F.max_pool2d(L.T(XN), 3, 2, 1, ceil_mode=True),
    "max_pool3d": lambda L: L.F.max_pool3d(L.T(XN[None]), (2, 2, 2), 1, return_indices=True),
    "max_pool2d_with_indices": lambda L: L.F.max_pool2d_with_indices(L.T(XN), 2),
    "adaptive_max_pool1d": lambda L: L.F.adaptive_max_pool1d(L.T(XN[:, :, 0]), 2, True),
    "adaptive_max_pool2d": lambda L: L.F.adaptive_max_pool2d(L.T(XN), (2, 3), True),
    "adaptive_max_pool3d": lambda L: L.F.adaptive_max_pool3d(L.T(XN[None]), 1, True),
    "MaxPool2d-layer": lambda L: L.m.nn.MaxPool2d(2, 1, return_indices=True)(L.T(XN)),
}


@pytest.mark.parametrize("name", list(NANS))
def test_max_pools_pick_the_last_nan_as_torch(name):
    _compare(NANS[name])


# ---- embedding_bag / EmbeddingBag ----------------------------------------------------------------

W = _rng(5).standard_normal((7, 3))
WT = np.round(W * 2)  # ties for max
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 0, 6])
OFF = np.array([0, 2, 2, 5])
IDX2 = np.array([[1, 3, 3, 0], [6, 6, 2, 5], [4, 1, 0, 2]])
PSW = _rng(6).standard_normal(9)
PSW2 = _rng(7).standard_normal((3, 4))


def _bag(L, w=W, idx=IDX, off=OFF, **kw):
    return L.F.embedding_bag(L.I(idx), L.T(w), None if off is None else L.I(off), **kw)


BAGS = {}
for _mode in ("sum", "mean", "max"):
    BAGS[f"{_mode}-offsets"] = lambda L, m=_mode: _bag(L, mode=m)
    BAGS[f"{_mode}-ties"] = lambda L, m=_mode: _bag(L, WT, mode=m)
    BAGS[f"{_mode}-2d"] = lambda L, m=_mode: _bag(L, idx=IDX2, off=None, mode=m)
    BAGS[f"{_mode}-include_last_offset"] = lambda L, m=_mode: _bag(
        L, off=[0, 2, 2, 5, 9], mode=m, include_last_offset=True
    )
    BAGS[f"{_mode}-padding_idx"] = lambda L, m=_mode: _bag(L, mode=m, padding_idx=4)
    BAGS[f"{_mode}-padding_idx-negative-2d"] = lambda L, m=_mode: _bag(
        L, WT, IDX2, None, mode=m, padding_idx=-1
    )
    BAGS[f"{_mode}-all-padding-bag"] = lambda L, m=_mode: _bag(
        L, idx=[3, 3, 1], off=[0, 2], mode=m, padding_idx=3
    )
    BAGS[f"{_mode}-empty-input"] = lambda L, m=_mode: _bag(L, idx=np.zeros(0, int), off=[0, 0])
BAGS["sum-per_sample_weights"] = lambda L: _bag(L, mode="sum", per_sample_weights=L.T(PSW))
BAGS["sum-per_sample_weights-2d-padding"] = lambda L: _bag(
    L, idx=IDX2, off=None, mode="sum", per_sample_weights=L.T(PSW2), padding_idx=6
)
BAGS["EmbeddingBag-default-mean"] = lambda L: L.m.nn.EmbeddingBag.from_pretrained(
    L.T(W), freeze=False
)(L.I(IDX), L.I(OFF))
BAGS["EmbeddingBag-max-padding-last-offset"] = lambda L: L.m.nn.EmbeddingBag.from_pretrained(
    L.T(WT), freeze=False, mode="max", padding_idx=2, include_last_offset=True
)(L.I(IDX), L.I([0, 3, 9]))
BAGS["EmbeddingBag-psw"] = lambda L: L.m.nn.EmbeddingBag.from_pretrained(
    L.T(W), freeze=False, mode="sum"
)(L.I(IDX2), per_sample_weights=L.T(PSW2))


@pytest.mark.parametrize("name", list(BAGS))
def test_embedding_bag_agrees_with_torch(name):
    _compare(BAGS[name])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_to_second_order(mode):
    """Through the table (PyTorch has no double backward for per_sample_weights: those
    against finite differences)."""

    def prog(L):
        w = L.T(W)
        p = L.T(PSW, rg=False) if mode == "sum" else None
        out = L.F.embedding_bag(
            L.I(IDX), w * w, L.I(OFF), mode=mode, per_sample_weights=p, padding_idx=5
        )
        return _second(out, [w], L)

    _compare(prog)
    if mode == "sum":

        def f(w, p):
            return tg.nn.functional.embedding_bag(
                tg.tensor(IDX), w * w, tg.tensor(OFF), mode="sum", per_sample_weights=p * p
            )

        args = (tg.tensor(W, requires_grad=True), tg.tensor(PSW, requires_grad=True))
        assert tg.gradcheck(f, args) and tg.gradgradcheck(f, args)


def test_embedding_bag_layer_matches_torch_state_dict_repr_and_init():
    torch.manual_seed(0)
    ref = torch.nn.EmbeddingBag(7, 3, mode="max", padding_idx=-2)
    tg.manual_seed(0)
    mine = tg.nn.EmbeddingBag(7, 3, mode="max", padding_idx=-2)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["weight"]
    assert repr(mine) == repr(ref)
    assert mine.padding_idx == ref.padding_idx == 5
    w = mine.weight.numpy()
    assert w.shape == (7, 3) and not w[5].any() and w[:5].any()
    mine.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    x, off = np.array([1, 5, 4, 0, 0]), np.array([0, 3])
    np.testing.assert_allclose(
        mine(tg.tensor(x), tg.tensor(off)).numpy(),
        ref(torch.tensor(x), torch.tensor(off)).detach().numpy(),
        rtol=1e-7,  # float32 table
    )
    assert repr(tg.nn.EmbeddingBag(4, 2)) == repr(torch.nn.EmbeddingBag(4, 2))
    frozen = tg.nn.EmbeddingBag.from_pretrained(tg.tensor(W))
    assert not frozen.weight.requires_grad and frozen.mode == "mean"


BAG_ERRORS = {
    "mode": (lambda L: _bag(L, mode="min"), "mode"),
    "1d-no-offsets": (lambda L: _bag(L, off=None), "offsets"),
    "2d-with-offsets": (lambda L: _bag(L, idx=IDX2, off=[0, 1, 2]), "offsets"),
    "3d-input": (lambda L: _bag(L, idx=IDX2[None], off=None), "1D or 2D"),
    "offsets-2d": (lambda L: _bag(L, off=[[0, 2]]), "offsets"),
    "offsets-not-from-0": (lambda L: _bag(L, off=[1, 2]), "offsets[0]"),
    "offsets-past-end": (lambda L: _bag(L, off=[0, 10]), "offsets[-1]"),
    "float-indices": (
        lambda L: L.F.embedding_bag(L.T(IDX, rg=False), L.T(W), L.I(OFF)),
        "input",
    ),
    "index-out-of-range": (lambda L: _bag(L, idx=IDX + 1), "out of range"),
    "padding_idx-out-of-range": (lambda L: _bag(L, padding_idx=7), "padding_idx"),
    "psw-with-mean": (lambda L: _bag(L, per_sample_weights=L.T(PSW)), "per_sample_weights"),
    "psw-with-max": (
        lambda L: _bag(L, mode="max", per_sample_weights=L.T(PSW)),
        "per_sample_weights",
    ),
    "psw-shape": (
        lambda L: _bag(L, mode="sum", per_sample_weights=L.T(PSW[:-1])),
        "per_sample_weights",
    ),
    "weight-1d": (lambda L: _bag(L, w=W[0]), "weight"),
    "scale_grad_by_freq-max": (lambda L: _bag(L, mode="max", scale_grad_by_freq=True), "max"),
    "2d-empty-bags": (lambda L: _bag(L, idx=np.zeros((2, 0), int), off=None), "embedding_bag"),
    "layer-padding_idx": (lambda L: L.m.nn.EmbeddingBag(4, 2, padding_idx=4), "padding_idx"),
    "layer-mode": (lambda L: L.m.nn.EmbeddingBag(4, 2, mode="prod")(L.I([[0, 1]])), "mode"),
}


@pytest.mark.parametrize("name", list(BAG_ERRORS))
def test_embedding_bag_bad_input_raises_as_torch(name):
    prog, fragment = BAG_ERRORS[name]
    assert _raises(prog, "torch") is not None, "torch computes this"
    err = _raises(prog, "tg")
    assert err is not None, "tapegrad gives a value where PyTorch raises"
    assert fragment in str(err), f"{type(err).__name__}: {err}"


def test_embedding_bag_refusals_and_undefined_last_offset():
    """Refused: what tapegrad does not implement, and PyTorch's undefined case of a last
    offset short of the input's length with include_last_offset=True (its three modes then
    disagree with their own bags)."""
    w = tg.tensor(W, requires_grad=True)
    with pytest.raises(ValueError, match="include_last_offset=True the last offset"):
        tg.nn.functional.embedding_bag(
            tg.tensor(IDX), w, tg.tensor([0, 2, 5]), include_last_offset=True
        )
    with pytest.raises(ValueError, match="non-decreasing"):
        tg.nn.functional.embedding_bag(tg.tensor(IDX), w, tg.tensor([0, 5, 2]))
    for option in (dict(max_norm=1.0), dict(sparse=True), dict(scale_grad_by_freq=True)):
        with pytest.raises(TypeError, match="embedding_bag: "):
            tg.nn.functional.embedding_bag(tg.tensor(IDX), w, tg.tensor(OFF), **option)
    with pytest.raises(TypeError, match="EmbeddingBag: max_norm"):
        tg.nn.EmbeddingBag(3, 2, max_norm=1.0)


# ---- ctc_loss / CTCLoss --------------------------------------------------------------------------

TN, NN, CN = 6, 3, 5
LOGITS = _rng(8).standard_normal((TN, NN, CN))
TGT = np.array([[1, 2, 2, 4], [3, 1, 0, 0], [2, 4, 1, 3]])  # padded with zeros
ILEN, TLEN = [6, 4, 5], [3, 2, 4]
TGT_B = np.array([[1, 0, 0, 4], [3, 2, 3, 3], [2, 4, 2, 3]])  # blank 0 -> classes 1..4; blank 2
CAT = np.concatenate([TGT[b, : TLEN[b]] for b in range(NN)])


def _ctc(L, tgt=TGT, il=ILEN, tl=TLEN, logits=LOGITS, **kw):
    lp = L.F.log_softmax(L.T(logits), -1)
    return L.F.ctc_loss(lp, L.I(tgt), L.I(il), L.I(tl), **kw)


CTC = {}
for _red in ("none", "sum", "mean"):
    CTC[f"padded-{_red}"] = lambda L, r=_red: _ctc(L, reduction=r)
    CTC[f"concatenated-{_red}"] = lambda L, r=_red: _ctc(L, CAT, reduction=r)
    CTC[f"zero_infinity-{_red}"] = lambda L, r=_red: _ctc(
        L, il=[6, 1, 5], reduction=r, zero_infinity=True
    )
CTC["blank-2"] = lambda L: _ctc(L, np.where(TGT_B == 2, 1, TGT_B), blank=2, reduction="none")
CTC["blank-last"] = lambda L: _ctc(L, np.where(TGT == 4, 3, TGT), blank=4)
CTC["repeats-need-blanks"] = lambda L: _ctc(L, [[2, 2, 2], [3, 3, 1], [1, 1, 1]], tl=[3, 3, 3])
CTC["empty-target"] = lambda L: _ctc(L, tl=[3, 0, 4], reduction="none")
CTC["empty-input-and-target"] = lambda L: _ctc(L, il=[6, 0, 5], tl=[3, 0, 4], reduction="none")
CTC["tight-input"] = lambda L: _ctc(
    L, [[1, 2, 1], [2, 2, 1], [3, 3, 3]], il=[3, 4, 5], tl=[3, 3, 3]
)
CTC["infinite-loss-value"] = lambda L: _ctc(L, il=[6, 1, 5], reduction="none").detach()
CTC["unbatched"] = lambda L: L.F.ctc_loss(
    L.F.log_softmax(L.T(LOGITS[:, 0]), -1), L.I(TGT[0, :3]), L.I(6), L.I(3)
)
CTC["CTCLoss-layer"] = lambda L: L.m.nn.CTCLoss(blank=4, zero_infinity=True)(
    L.F.log_softmax(L.T(LOGITS), -1), L.I(np.where(TGT == 4, 3, TGT)), L.I(ILEN), L.I(TLEN)
)


@pytest.mark.parametrize("name", list(CTC))
def test_ctc_loss_agrees_with_torch_through_log_softmax(name):
    _compare(CTC[name])


def test_ctc_loss_derivatives_against_finite_differences():
    """First and second derivatives with respect to log_probs (unnormalised: the true
    derivative, which PyTorch's kernel does not return) and through log_softmax."""
    lp0 = LOGITS[:4, :2, :3] * 0.5
    tgt, il, tl = tg.tensor([[1, 1], [2, 0]]), tg.tensor([4, 2]), tg.tensor([2, 1])

    def raw(lp):
        return tg.nn.functional.ctc_loss(lp, tgt, il, tl, reduction="sum")

    def soft(x):  # (three steps)
        lp = tg.nn.functional.log_softmax(x, -1)
        return tg.nn.functional.ctc_loss(lp, tgt, tg.tensor([3, 2]), tl)

    assert tg.gradcheck(raw, (tg.tensor(lp0, requires_grad=True),))
    assert tg.gradgradcheck(soft, (tg.tensor(lp0[:3], requires_grad=True),))


def test_ctc_loss_infinite_loss_gradient_is_not_finite_and_does_not_leak():
    """An input too short for its target: loss inf and a non-finite gradient (PyTorch: NaN)
    for that sample only; zero_infinity=True zeroes both, as PyTorch's."""
    lt = torch.tensor(LOGITS, requires_grad=True)
    lx = tg.tensor(LOGITS, requires_grad=True)
    args = (TGT, [6, 1, 5], TLEN)
    ref = torch.nn.functional.ctc_loss(
        lt.log_softmax(-1), *(torch.tensor(np.asarray(a)) for a in args), reduction="sum"
    )
    mine = tg.nn.functional.ctc_loss(
        tg.nn.functional.log_softmax(lx, -1), *(tg.tensor(np.asarray(a)) for a in args),
        reduction="sum",
    )  # fmt: skip
    ref.backward()
    mine.backward()
    assert np.isinf(mine.item()) and np.isinf(ref.item())
    g, gt = lx.grad.numpy(), lt.grad.numpy()
    assert not np.isfinite(g[:, 1]).all() and not np.isfinite(gt[:, 1]).all()
    np.testing.assert_allclose(g[:, [0, 2]], gt[:, [0, 2]], rtol=1e-10, atol=1e-12)


CTC_ERRORS = {
    "input-length-past-T": (lambda L: _ctc(L, il=[7, 4, 5]), "input_lengths"),
    "target-length-past-S": (lambda L: _ctc(L, tl=[5, 2, 4]), "target"),
    "blank-out-of-range": (lambda L: _ctc(L, blank=5), "blank"),
    "negative-blank": (lambda L: _ctc(L, blank=-1), "blank"),
    "concatenated-length": (lambda L: _ctc(L, CAT[:-1]), "targets"),
    "lengths-size": (lambda L: _ctc(L, il=[6, 4]), "input_lengths"),
    "negative-target-length": (lambda L: _ctc(L, tl=[3, -1, 4]), "target_lengths"),
    "reduction": (lambda L: _ctc(L, reduction="avg"), "reduction"),
}


@pytest.mark.parametrize("name", list(CTC_ERRORS))
def test_ctc_loss_bad_input_raises_as_torch(name):
    prog, fragment = CTC_ERRORS[name]
    assert _raises(prog, "torch") is not None, "torch computes this"
    err = _raises(prog, "tg")
    assert err is not None, "tapegrad gives a value where PyTorch raises"
    assert fragment in str(err) and "ctc_loss" in str(err), f"{type(err).__name__}: {err}"


@pytest.mark.parametrize(
    "tgt,match",
    [
        ([[1, 0, 2, 4], [3, 1, 0, 0], [2, 4, 1, 3]], "blank"),  # the blank as a label
        ([[1, 5, 2, 4], [3, 1, 0, 0], [2, 4, 1, 3]], "target label 5"),  # past the classes
        ([[1, -1, 2, 4], [3, 1, 0, 0], [2, 4, 1, 3]], "target label -1"),
    ],
)
def test_ctc_loss_refuses_labels_torch_reads_as_garbage(tgt, match):
    """PyTorch returns a number for a target holding the blank or a label outside the
    classes (reading out of bounds); tapegrad raises."""
    with pytest.raises(ValueError, match=match):
        _ctc(_tgL(), tgt)
    with pytest.raises(TypeError, match="ctc_loss: targets must hold integer"):
        tg.nn.functional.ctc_loss(tg.tensor(LOGITS), tg.tensor(TGT.astype(float)), ILEN, TLEN)


class _tgL:
    """The tapegrad half of the adapter, for direct calls."""

    def __init__(self):
        self.F, self.m = tg.nn.functional, tg

    def T(self, data, rg=False):
        return tg.tensor(np.asarray(data, dtype=float), requires_grad=rg)

    def I(self, data):  # noqa: E743 - an integer tensor
        return tg.tensor(np.asarray(data, dtype=np.int64))


# ---- AdaptiveLogSoftmaxWithLoss ------------------------------------------------------------------

ASM_CASES = {
    "two-clusters": (8, 10, [4, 7], 4.0, False),
    "three-clusters-head-bias": (6, 12, [2, 5, 9], 2.0, True),
    "one-cluster-div-1": (5, 4, [1], 1.0, True),
}
XA = _rng(9).standard_normal((7, 8))
YA = np.array([0, 5, 9, 3, 7, 1, 8])


def _asm_pair(case):
    torch.manual_seed(1)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(*case[:3], div_value=case[3], head_bias=case[4])
    ref = ref.double()
    mine = tg.nn.AdaptiveLogSoftmaxWithLoss(*case[:3], div_value=case[3], head_bias=case[4])
    assert list(mine.state_dict()) == list(ref.state_dict())
    for (k, a), b in zip(mine.state_dict().items(), ref.state_dict().values(), strict=True):
        assert tuple(a.shape) == tuple(b.shape), k
    mine.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    return mine, ref


@pytest.mark.parametrize("case", list(ASM_CASES))
def test_adaptive_log_softmax_agrees_with_torch(case):
    n_in, n_cls = ASM_CASES[case][:2]
    mine, ref = _asm_pair(ASM_CASES[case])
    x = XA[:, :n_in]
    y = YA % n_cls

    def prog(L):
        m = mine if L.name == "tg" else ref
        xt = L.T(x)
        out, loss = m(xt, L.I(y))
        one = m(xt[2], L.I(y[2]))
        lp = m.log_prob(xt)
        params = list(m.parameters())
        # second order: the input's gradient (create_graph) and the gradient of its square
        (gx,) = L.m.autograd.grad(loss + (out * out).sum(), [xt], create_graph=True)
        gp = L.m.autograd.grad((gx * gx).sum(), [xt] + params, allow_unused=True, retain_graph=True)
        leaves = [xt] + params
        gp = [g if g is not None else L.m.zeros(p.shape, dtype=xt.dtype)
              for g, p in zip(gp, leaves, strict=True)]  # fmt: skip
        return out, loss, one, lp, m.predict(xt), gx, gp

    _compare(prog)
    assert type(mine(tg.tensor(x), tg.tensor(y))).__name__ == "_ASMoutput"


@pytest.mark.parametrize(
    "prog",
    [
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, []),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 2]),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 10]),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [0, 4]),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 4]),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(L.T(XA), L.I(YA + 1)),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(L.T(XA), L.I(YA[:-1])),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(L.T(XA), L.I(YA[None])),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(L.T(XA), L.I(3)),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(L.T(XA[0]), L.I(YA)),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).log_prob(L.T(XA[0])),
        lambda L: L.m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).predict(L.T(XA[0])),
    ],
)
def test_adaptive_log_softmax_bad_input_raises_as_torch(prog):
    assert _raises(prog, "torch") is not None, "torch computes this"
    err = _raises(prog, "tg")
    assert err is not None, "tapegrad gives a value where PyTorch raises"
    assert "AdaptiveLogSoftmaxWithLoss" in str(err), f"{type(err).__name__}: {err}"


# ---- trace replays: data-dependent picks are guarded -------------------------------------------


@pytest.mark.parametrize(
    "f,x,x2",
    [
        (
            lambda w: tg.nn.functional.embedding_bag(
                tg.tensor([0, 1, 2]), w, tg.tensor([0, 1]), mode="max"
            ).sum(),
            np.eye(3),
            -np.eye(3),
        ),
        (
            lambda lp: tg.nn.functional.ctc_loss(lp, tg.tensor([[1, 2]]), [3], [2]),
            np.log(np.full((3, 1, 3), 1 / 3)),
            np.where(np.arange(3) == 1, -np.inf, np.log(np.full((3, 1, 3), 1 / 3))),
        ),
        (
            lambda x: tg.nn.functional.max_pool2d(x, 2, ceil_mode=True).sum(),
            X2[0, :1],
            np.where(X2[0, :1] > 1, np.nan, -X2[0, :1]),
        ),
    ],
)
def test_trace_replay_of_a_moved_pick_records_again(f, x, x2):
    tr = tg.trace(f, x)
    np.testing.assert_allclose(tr(x), f(tg.tensor(x)).item(), rtol=1e-12)
    with pytest.raises(tg.RetraceRequired):
        tr(x2)
