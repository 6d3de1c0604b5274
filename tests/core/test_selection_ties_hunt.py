"""Selection, sorting and ties: values, returned indices and which entry gets the gradient.

Hunted where several entries tie, and at NaN, +-inf, -0.0 / 0.0 and empty dims:

- the Tensor API against PyTorch (float64, ``tests/torch_programs.py``'s ``_compare``: values,
  indices, structure and the gradient of a random weighting of every float output): max / min
  (full, with dim, keepdim), amax / amin, aminmax, argmax / argmin, maximum / minimum / fmax /
  fmin, clamp at its bounds, sort / argsort (stable, descending), msort, topk, kthvalue,
  median, nanmedian, quantile / nanquantile (every interpolation), cummax / cummin,
  logcumsumexp, searchsorted, where, nan_to_num, abs / sign / relu at 0 and the activations
  with kinks; forward mode (``tg.jvp`` on Tensors against ``torch.func.jvp``) and second
  order (``create_graph``) at ties;
- NumPy code inside ``tg.grad`` / ``tg.jvp`` / ``tg.hessian``: the values against NumPy, the
  derivatives against PyTorch's equivalent program where PyTorch's convention is JAX's (max /
  amax / maximum split the gradient evenly among ties, np.median's even count is the mean of
  the two middle values, np.quantile's five methods are PyTorch's interpolations), and
  NumPy's integer answers (argmax, argsort, partition, searchsorted, digitize...) exactly.

Conventions where the references differ (JAX was used to find them; it is not imported
here), asserted as tapegrad's documented choice in ``test_conventions``:
- topk / kthvalue at ties: PyTorch's indices are whatever its partial sort leaves (all-ones
  ``topk(1)`` gives index 2) and its docs promise none; tapegrad's are the stable sort's
  (first occurrence first), and the values and gradients follow them;
- amax / aminmax over a lane holding NaN: PyTorch's gradient is NaN over the whole lane;
  tapegrad sends it to the NaN entries (shared), as ``max(dim)`` does in both;
- abs at NaN: PyTorch 0, JAX -1, tapegrad NaN; relu at NaN: PyTorch passes the gradient,
  JAX and tapegrad give 0;
- logcumsumexp at +inf: the limit gradient 1 (PyTorch NaN);
- searchsorted in a sequence holding NaN: NumPy's answer (NaN sorts last), PyTorch's differs;
- np.clip at a bound and np.abs at 0: PyTorch's (1 and 0); JAX gives 1/2 and 1;
- np.fmax / np.fmin at a tie: half each, a constant operand too (PyTorch's torch.fmin, and
  tapegrad's tg.fmin / x.fmin, give the first operand all of it; JAX the second).

Findings kept: PyTorch's two-sided lerp in Tensor.quantile at infinite neighbours (fixed),
quantile of an empty input (fixed: raises as PyTorch), nanmedian(dim) of integers (fixed:
int64 values), and maximum / minimum at NaN sending the gradient by operand order (fixed: both
operands get it, as PyTorch's).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_programs import _compare, _raises  # noqa: E402

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402

T4 = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 5.0, -1.0]])
T5 = np.array([[2.0, 1.0, 2.0, 1.0, 2.0], [3.0, 3.0, 1.0, 1.0, 3.0]])
NANS = np.array(
    [[1.0, np.nan, 3.0, np.nan], [2.0, 0.0, np.nan, 0.0], [np.inf, -np.inf, np.inf, 1.0]]
)
FIN = NANS[:2]  # lanes with NaN and no infinity
Z = np.array([[0.0, -0.0, 1.0, -0.0], [-0.0, 0.0, -0.0, 0.0]])
INF = np.array([[np.inf, 1.0, np.inf], [-np.inf, -np.inf, 0.0]])
SS = np.array([0.0, 1.0, 1.0, 2.0, np.inf])
FULL2 = np.full(4, 2.0)


# ---- the Tensor API against PyTorch ---------------------------------------------------------

P = dict(
    # max / min / amax / amin / aminmax / argmax / argmin
    max_all=lambda L: L.T(T4).max(),
    min_all=lambda L: L.T(T4).min(),
    max_d0=lambda L: L.T(T4).max(0),
    max_d1_keep=lambda L: L.T(T4).max(1, keepdim=True),
    min_d0=lambda L: L.T(T4).min(0),
    min_kw=lambda L: L.T(T5).min(dim=-1),
    max_fn=lambda L: L.m.max(L.T(T5), 1),
    max_nan_d1=lambda L: L.T(NANS).max(1),
    min_nan_d1=lambda L: L.T(NANS).min(1),
    max_nan_all=lambda L: L.T(NANS).max(),
    min_nan_d0=lambda L: L.T(NANS).min(0),
    max_inf_d1=lambda L: L.T(INF).max(1),
    min_inf_d1=lambda L: L.T(INF).min(1),
    max_inf_all=lambda L: L.T(INF).max(),
    max_zero_d1=lambda L: L.T(Z).max(1),
    min_zero_d1=lambda L: L.T(Z).min(1),
    max_neg_zero_all=lambda L: L.T([-0.0, 0.0]).max(),
    max_neg_zero_dim=lambda L: L.T([[-0.0, 0.0]]).max(1),
    max_one_nan=lambda L: L.T([[np.nan]]).max(1),
    amax_zero=lambda L: L.T(Z).amax(1),
    amax_neg_zero=lambda L: L.T([-0.0, 0.0]).amax(),
    amax_inf=lambda L: L.T(INF).amax(1),
    amin_inf=lambda L: L.T(INF).amin(1),
    amax_d0=lambda L: L.T(T4).amax(0),
    amin_all=lambda L: L.T(T4).amin(),
    amin_tuple_keep=lambda L: L.T(T4).amin((0, 1), keepdim=True),
    amax_5=lambda L: L.T(T5).amax(-1),
    amax_empty_kept=lambda L: L.T(np.zeros((2, 0))).amax(0),
    aminmax_all=lambda L: L.T(T4).aminmax(),
    aminmax_dim=lambda L: L.T(T5).aminmax(dim=1, keepdim=True),
    argmax_nan=lambda L: L.T(NANS).argmax(1),
    argmin_nan=lambda L: L.T(NANS).argmin(1),
    argmin_nan_all=lambda L: L.T(NANS).argmin(),
    argmax_nan_d0=lambda L: L.T(NANS).argmax(0),
    argmax_all_nan=lambda L: L.T([[np.nan, np.nan], [np.nan, 1.0]]).argmax(1),
    argmin_nan_flat=lambda L: L.T([[1.0, 0.0], [np.nan, 1.0]]).argmin(),
    argmin_zero=lambda L: L.T(Z).argmin(1),
    argmax_zero=lambda L: L.T(Z).argmax(1),
    argmax_neg_zero=lambda L: L.T([-0.0, 0.0]).argmax(),
    argmax_inf=lambda L: L.T(INF).argmax(1),
    argmin_inf=lambda L: L.T(INF).argmin(1),
    argmax_ties_keep=lambda L: L.T(T5).argmax(1, keepdim=True),
    # elementwise extremes
    maximum_eq=lambda L: L.T(T4).maximum(L.T(T4.copy())),
    minimum_eq=lambda L: L.T(T4).minimum(L.T(T4[::-1].copy())),
    maximum_bcast=lambda L: L.T(T4).maximum(L.T([2.0, 2.0, 3.0, 2.0])),
    maximum_same=lambda L: (lambda a: a.maximum(a))(L.T(T4)),
    maximum_zero=lambda L: L.T(Z).maximum(L.T(-Z)),
    minimum_zero=lambda L: L.T(Z).minimum(L.T(-Z)),
    maximum_inf=lambda L: L.T(INF).maximum(L.T(INF.copy())),
    maximum_0d=lambda L: L.T(T4).maximum(L.T(2.0)),
    max_binary=lambda L: L.m.max(L.T(T4), L.T(T4.copy())),
    min_binary=lambda L: L.m.min(L.T(T4), L.T(T4.copy())),
    fmax_eq=lambda L: L.m.fmax(L.T(T4), L.T(T4.copy())),
    fmin_eq=lambda L: L.m.fmin(L.T(T4), L.T(T4.copy())),
    fmax_nan=lambda L: L.m.fmax(L.T(NANS), L.T(T4)),
    fmin_nan=lambda L: L.m.fmin(L.T(T4), L.T(NANS)),
    fmax_nan_both=lambda L: L.m.fmax(L.T(NANS), L.T(NANS.copy())),
    fmin_method=lambda L: L.T(NANS).fmin(L.T(T4)),
    # clamp at its bounds, with NaN and infinities
    clamp_lo=lambda L: L.T(T4).clamp(min=2.0),
    clamp_hi=lambda L: L.T(T4).clamp(max=2.0),
    clamp_both=lambda L: L.T(T4).clamp(2.0, 3.0),
    clamp_eq=lambda L: L.T(T4).clamp(2.0, 2.0),
    clamp_t=lambda L: L.T(T4).clamp(L.T(FULL2), L.T(FULL2 + 1.0)),
    clamp_t_eq=lambda L: L.T(T4).clamp(L.T(FULL2), L.T(FULL2.copy())),
    clamp_t_cross=lambda L: L.T(T4).clamp(L.T(FULL2 + 1.0), L.T(FULL2)),
    clamp_nan=lambda L: L.T(NANS).clamp(0.0, 1.0),
    clamp_nan_bound=lambda L: L.T(T4).clamp(L.T(np.full(4, np.nan))),
    clamp_min_fn=lambda L: L.m.clamp_min(L.T(T4), 2.0),
    clamp_max_fn=lambda L: L.m.clamp_max(L.T(T4), 2.0),
    clamp_min_method=lambda L: L.T(T4).clamp_min(2.0),
    clip_method=lambda L: L.T(T4).clip(2.0, 3.0),
    clamp_inf=lambda L: L.T(INF).clamp(-1.0, 1.0),
    clamp_neg_zero=lambda L: L.T([0.0, -0.0]).clamp(min=0.0),
    clamp_max_neg_zero=lambda L: L.T([0.0, -0.0]).clamp(max=-0.0),
    # kinks at 0
    abs_zero=lambda L: L.T(Z).abs(),
    sign_zero=lambda L: L.T(Z).sign(),
    relu_zero=lambda L: L.T(Z).relu(),
    relu_F_zero=lambda L: L.F.relu(L.T(Z)),
    hardtanh_bounds=lambda L: L.F.hardtanh(L.T([-1.0, 1.0, 0.5, -2.0])),
    relu6_bounds=lambda L: L.F.relu6(L.T([0.0, 6.0, 3.0])),
    leaky_relu_zero=lambda L: L.F.leaky_relu(L.T([0.0, -0.0, -1.0]), 0.1),
    elu_zero=lambda L: L.F.elu(L.T([0.0, -0.0])),
    max_pool_ties=lambda L: L.F.max_pool1d(L.T([[[1.0, 1.0, 2.0, 2.0]]]), 2, stride=1),
    where_nan=lambda L: L.m.where(L.T(NANS, rg=False) > 0, L.T(NANS), L.T(T4)),
    where_nan_scalar=lambda L: L.m.where(L.B(~np.isnan(NANS)), L.T(NANS), 0.0),
    where_inf=lambda L: L.m.where(L.T(NANS, rg=False) > 0, L.T(NANS), -L.T(NANS)),
    nan_to_num=lambda L: L.T(NANS).nan_to_num(),
    nan_to_num_args=lambda L: L.T(NANS).nan_to_num(1.0, 2.0, 3.0),
    nan_to_num_posinf=lambda L: L.T(NANS).nan_to_num(posinf=1e300),
    # sort / argsort / msort
    sort_stable=lambda L: L.T(T5).sort(dim=1, stable=True),
    sort_stable_desc=lambda L: L.T(T5).sort(dim=1, descending=True, stable=True),
    sort_stable_d0=lambda L: L.T(T4).sort(dim=0, stable=True),
    sort_stable_desc_d0=lambda L: L.T(T4).sort(dim=0, descending=True, stable=True),
    sort_nan_stable=lambda L: L.T(NANS).sort(dim=1, stable=True),
    sort_nan_desc_stable=lambda L: L.T(NANS).sort(dim=1, descending=True, stable=True),
    sort_nan_d0=lambda L: L.T(NANS).sort(dim=0, stable=True),
    sort_zero_stable=lambda L: L.T(Z).sort(dim=1, stable=True),
    sort_zero_desc_stable=lambda L: L.T(Z).sort(dim=1, descending=True, stable=True),
    sort_neg_zero=lambda L: L.T([0.0, -0.0, 0.0, -0.0]).sort(stable=True),
    sort_fn=lambda L: L.m.sort(L.T(T5), dim=-1, descending=True, stable=True),
    sort_values_default=lambda L: L.T(NANS).sort(1).values,
    sort_values_desc=lambda L: L.T(NANS).sort(1, True).values,
    sort_empty_dim=lambda L: L.T(np.zeros((2, 0))).sort(dim=1),
    argsort_desc_stable=lambda L: L.T(T5).argsort(dim=1, descending=True, stable=True),
    argsort_nan_stable=lambda L: L.T(NANS).argsort(dim=1, stable=True),
    argsort_nan_desc_stable=lambda L: L.T(NANS).argsort(dim=1, descending=True, stable=True),
    argsort_zero_stable=lambda L: L.T(Z).argsort(dim=1, stable=True),
    argsort_fn=lambda L: L.m.argsort(L.T(T5), dim=1, stable=True),
    msort=lambda L: L.m.msort(L.T(T4)),
    msort_method=lambda L: L.T(T4).msort(),
    msort_nan=lambda L: L.m.msort(L.T(NANS)),
    # topk / kthvalue whose ties PyTorch resolves as tapegrad does (values always compared)
    topk_values_nan=lambda L: L.T(NANS).topk(2, 1).values,
    topk_values_nan_small=lambda L: L.T(NANS).topk(2, 1, largest=False).values,
    topk_values_l=lambda L: L.T(T5).topk(3, 1).values.sum(-1),
    kth_values_nan=lambda L: L.T(NANS).kthvalue(2, 1).values,
    topk_empty=lambda L: L.T(np.zeros((2, 0))).topk(0, dim=1),
    # median / nanmedian: PyTorch's lower median and its index
    median_d1=lambda L: L.T(T5).median(1),
    median_all=lambda L: L.T(T5).median(),
    median_even=lambda L: L.T(T4).median(1),
    median_even_all=lambda L: L.T(T4).median(),
    median_nan=lambda L: L.T(NANS).median(1),
    median_fn=lambda L: L.m.median(L.T(T5), 0),
    median_zero=lambda L: L.T(Z).median(1),
    median_inf=lambda L: L.T(INF).median(1),
    nanmedian_d1=lambda L: L.T(NANS).nanmedian(1),
    nanmedian_all=lambda L: L.T(NANS).nanmedian(),
    nanmedian_d0=lambda L: L.T(NANS).nanmedian(0),
    nanmedian_no_nan=lambda L: L.T(T5).nanmedian(1),
    # quantile / nanquantile
    q_nearest_half=lambda L: L.T(np.arange(8.0)[None] * 1.5).quantile(
        L.T([0.125, 0.375, 0.625, 0.875, 0.5 / 7, 1.5 / 7, 2.5 / 7], rg=False),
        dim=1,
        interpolation="nearest",
    ),
    q_all=lambda L: L.T(T5).quantile(L.T([0.0, 0.25, 1.0], rg=False)),
    q_nan=lambda L: L.T(NANS).quantile(0.5, dim=1),
    q_inf=lambda L: L.T([[np.inf, 1.0, 2.0, -np.inf]]).quantile(0.5, dim=1),
    nq_nan=lambda L: L.T(NANS).nanquantile(0.5, dim=1),
    nq_all=lambda L: L.T(NANS).nanquantile(L.T([0.1, 0.9], rg=False)),
    nq_fn=lambda L: L.m.nanquantile(L.T(NANS), 0.75, dim=0, interpolation="linear"),
    q_fn=lambda L: L.m.quantile(L.T(T5), 0.75, dim=0, keepdim=True, interpolation="higher"),
    # cummax / cummin (PyTorch's index at ties: the last), logcumsumexp
    cummax=lambda L: L.T(T5).cummax(1),
    cummin=lambda L: L.T(T5).cummin(1),
    cummax_nan=lambda L: L.T(NANS).cummax(1),
    cummin_nan=lambda L: L.T(NANS).cummin(1),
    cummax_zero=lambda L: L.T(Z).cummax(1),
    cummin_zero=lambda L: L.T(Z).cummin(1),
    cummax_fn=lambda L: L.m.cummax(L.T(T4), 0),
    cummin_fn=lambda L: L.m.cummin(L.T(T4), dim=0),
    cummax_inf=lambda L: L.T([[-np.inf, -np.inf, np.inf, np.inf, 1.0]]).cummax(1),
    cummax_empty=lambda L: L.T(np.zeros((2, 0))).cummax(1),
    logcumsumexp_neg_inf=lambda L: L.T([[-np.inf, -np.inf, 1.0]]).logcumsumexp(1),
    logcumsumexp_ties=lambda L: L.T(T5).logcumsumexp(1),
    logcumsumexp_empty=lambda L: L.T(np.zeros((2, 0))).logcumsumexp(1),
    # searchsorted
    ss_left=lambda L: L.m.searchsorted(
        L.T(SS, rg=False), L.T([1.0, -1.0, np.inf, 3.0, np.nan], rg=False)
    ),
    ss_right=lambda L: L.m.searchsorted(
        L.T(SS, rg=False), L.T([1.0, -1.0, np.inf, 3.0, np.nan], rg=False), right=True
    ),
    ss_side=lambda L: L.m.searchsorted(
        L.T(SS, rg=False), L.T([1.0, 2.0, np.inf], rg=False), side="right"
    ),
    ss_sorter=lambda L: L.m.searchsorted(
        L.T([2.0, 0.0, 1.0, 1.0], rg=False),
        L.T([1.0, 0.5, 2.0], rg=False),
        sorter=L.I([1, 2, 3, 0]),
    ),
    ss_2d=lambda L: L.m.searchsorted(
        L.T([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], rg=False), L.T([[1.0, 1.5], [1.0, 0.0]], rg=False)
    ),
    ss_scalar=lambda L: L.m.searchsorted(L.T(SS, rg=False), 1.0),
    ss_int32=lambda L: L.m.searchsorted(L.T(SS, rg=False), L.T([1.0], rg=False), out_int32=True),
)

# integer, bool and 0-d inputs: dtypes and indices
INT = np.array([[2, 1, 2, 1, 2], [3, 3, 1, 1, 3]])
P.update(
    sort_int=lambda L: L.I(INT).sort(dim=1, stable=True),
    sort_int_desc=lambda L: L.I(INT).sort(dim=1, descending=True, stable=True),
    argsort_int=lambda L: L.I(INT).argsort(dim=1, stable=True),
    max_int=lambda L: L.I(INT).max(1),
    amax_int=lambda L: L.I(INT).amax(1),
    argmax_int=lambda L: L.I(INT).argmax(1),
    median_int=lambda L: L.I(INT).median(1),
    median_int_all=lambda L: L.I(INT).median(),
    nanmedian_int=lambda L: L.I(INT).nanmedian(1),
    nanmedian_int_keep=lambda L: L.I(INT).nanmedian(0, keepdim=True),
    cummax_int=lambda L: L.I(INT).cummax(1),
    cummin_int=lambda L: L.I(INT).cummin(1),
    topk_int_values=lambda L: L.I(INT).topk(2, 1).values,
    kthvalue_int_values=lambda L: L.I(INT).kthvalue(2, 1).values,
    msort_int=lambda L: L.I(INT).msort(),
    maximum_int=lambda L: L.I(INT).maximum(L.I(INT[:, ::-1].copy())),
    max_bool=lambda L: L.B(INT > 1).max(),
    amax_bool=lambda L: L.B(INT > 1).amax(1),
    sort_bool=lambda L: L.B(INT > 1).sort(dim=1, stable=True),
    clamp_int_tensor=lambda L: L.I(INT).clamp(L.I([2, 2, 2, 2, 2])),
    sign_int=lambda L: L.I(INT - 2).sign(),
    abs_int=lambda L: L.I(INT - 2).abs(),
    aminmax_int=lambda L: L.I(INT).aminmax(dim=1),
    searchsorted_int=lambda L: L.m.searchsorted(L.I([0, 1, 1, 3]), L.I([1, 2, 4])),
    max_0d_keep=lambda L: L.T(2.0).max(0, keepdim=True),
    sort_0d=lambda L: L.T(2.0).sort(dim=0, stable=True),
    cummax_0d=lambda L: L.T(2.0).cummax(0),
    kthvalue_0d=lambda L: L.T(2.0).kthvalue(1),
    quantile_0d=lambda L: L.T(2.0).quantile(0.3),
    amax_0d=lambda L: L.T(2.0).amax(),
    median_signed_zeros=lambda L: L.T([-0.0, 0.0, 0.0, -0.0]).median(0),
)

# each quantile interpolation at each kind of q, along a dim with ties and with NaN / inf
for _m in ("linear", "lower", "higher", "nearest", "midpoint"):
    for _q in (0.0, 0.3, 0.5, 0.75, 1.0):
        P[f"q_{_m}_{_q}"] = lambda L, m=_m, q=_q: L.T(T5).quantile(q, dim=1, interpolation=m)
        P[f"nq_{_m}_{_q}"] = lambda L, m=_m, q=_q: L.T(FIN).nanquantile(q, dim=1, interpolation=m)
    P[f"nq_inf_{_m}"] = lambda L, m=_m: L.T(NANS).nanquantile(0.4, dim=1, interpolation=m)


@pytest.mark.parametrize("name", sorted(P))
def test_tensor_api_matches_torch(name):
    _compare(P[name])


RAISES = dict(
    max_empty_dim=lambda L: L.T(np.zeros((0, 3))).max(0),
    amax_empty_dim=lambda L: L.T(np.zeros((0, 3))).amax(0),
    aminmax_empty_dim=lambda L: L.T(np.zeros((0, 3))).aminmax(dim=0),
    median_empty=lambda L: L.T(np.zeros((0, 3))).median(0),
    nanmedian_empty=lambda L: L.T(np.zeros((0, 3))).nanmedian(0),
    topk_too_many=lambda L: L.T(np.zeros(3)).topk(4),
    kthvalue_too_far=lambda L: L.T(T5).kthvalue(6, 1),
    quantile_out_of_range=lambda L: L.T(T5).quantile(1.5),
)


@pytest.mark.parametrize("name", sorted(RAISES))
def test_raises_where_torch_raises(name):
    assert _raises(RAISES[name], "torch") is not None
    e = _raises(RAISES[name], "tg")
    assert e is not None, f"{name}: tapegrad gives a value where PyTorch raises"


# ---- topk / kthvalue at ties: the stable sort's indices --------------------------------------

TIE_ROWS = np.array(
    [
        [2.0, 1.0, 2.0, 1.0, 2.0],
        [3.0, 3.0, 1.0, 1.0, 3.0],
        [1.0, 1.0, 1.0, 1.0, 1.0],
        [0.0, 5.0, 5.0, 5.0, 0.0],
        [np.inf, -np.inf, np.inf, 1.0, np.nan],
        [1.0, np.nan, np.nan, 0.0, 1.0],
    ]
)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_topk_ties_take_the_stable_order(k, largest):
    """Values as PyTorch's; indices the first occurrences (NaN largest), as a stable sort's;
    the gradient of output j goes to x[indices[j]]."""
    x = tg.tensor(TIE_ROWS, requires_grad=True)
    values, indices = x.topk(k, 1, largest=largest)
    ref = torch.tensor(TIE_ROWS).topk(k, 1, largest=largest).values.numpy()
    np.testing.assert_array_equal(values.detach().numpy(), ref)
    nan = np.isnan(TIE_ROWS)
    # NaN is the largest; ties in index order (np.lexsort is stable, its last key first)
    order = [
        np.lexsort((-r, ~n) if largest else (r, n)) for r, n in zip(TIE_ROWS, nan, strict=True)
    ]
    np.testing.assert_array_equal(indices.numpy(), np.array(order)[:, :k])
    w = np.random.default_rng(k).standard_normal(values.shape)
    (values * tg.tensor(w)).sum().backward()
    expected = np.zeros(TIE_ROWS.shape)
    np.put_along_axis(expected, indices.numpy(), w, 1)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_kthvalue_ties_take_the_stable_order(k):
    x = tg.tensor(TIE_ROWS, requires_grad=True)
    values, indices = x.kthvalue(k, 1)
    ref = torch.tensor(TIE_ROWS).kthvalue(k, 1).values.numpy()
    np.testing.assert_array_equal(values.detach().numpy(), ref)
    key = np.where(np.isnan(TIE_ROWS), np.inf, TIE_ROWS)
    stable = np.argsort(key, 1, kind="stable")[:, k - 1]
    # a NaN-free lane's k-th: the stable order's (with NaN PyTorch sorts them last, too)
    np.testing.assert_array_equal(indices.numpy(), stable)
    values.sum().backward()
    expected = np.zeros(TIE_ROWS.shape)
    expected[np.arange(len(stable)), stable] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)


# ---- forward mode and second order against torch.func / create_graph ------------------------

JVP = dict(
    max_all=(lambda x: x.max(), T4),
    max_dim=(lambda x: x.max(1).values, T4),
    min_dim=(lambda x: x.min(0)[0], T4),
    amax=(lambda x: x.amax(1), T4),
    amin_all=(lambda x: x.amin(), T5),
    maximum=(lambda x: x.maximum(x.flip(0)), T4),
    fmax=(lambda x: x.fmax(x.flip(0)), T4),
    minimum_const=(lambda x: x.minimum(x * 0 + 2.0), T4),
    clamp=(lambda x: x.clamp(1.0, 2.0), T5),
    clamp_tensor=(lambda x: x.clamp(x.flip(0), x.flip(0) + 1), T4),
    abs=(lambda x: x.abs(), Z),
    relu=(lambda x: x.relu(), Z),
    sort=(lambda x: x.sort(1).values, T5),
    sort_desc=(lambda x: x.sort(1, descending=True).values, T5),
    median=(lambda x: x.median(1).values, T5),
    median_all=(lambda x: x.median(), T5),
    nanmedian_all=(lambda x: x.nanmedian(), T4),
    cummax=(lambda x: x.cummax(1).values, T5),
    cummin=(lambda x: x.cummin(0).values, T4),
    quantile=(lambda x: x.quantile(0.4, dim=1), T5),
    quantile_mid=(lambda x: x.quantile(0.4, dim=1, interpolation="midpoint"), T5),
    logcumsumexp=(lambda x: x.logcumsumexp(1), T5),
    msort=(lambda x: x.msort(), T4),
    aminmax=(lambda x: x.aminmax(dim=1).max, T4),
)


def _w(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", sorted(JVP))
def test_jvp_on_tensors_matches_torch_func(name):
    f, x = JVP[name]
    t = _w(x.shape, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v, jv = tg.jvp(f, (tg.tensor(x),), (tg.tensor(t),))
        vt, jvt = torch.func.jvp(f, (torch.tensor(x),), (torch.tensor(t),))
    np.testing.assert_allclose(np.asarray(v), vt.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jv), jvt.numpy(), rtol=1e-12, atol=1e-14)


SECOND = dict(
    amax=(lambda x: x.amax(1) ** 3, T4),
    max_all=(lambda x: x.max() ** 3, T4),
    max_dim=(lambda x: x.max(1)[0] ** 3, T4),
    maximum=(lambda x: x.maximum(x.flip(0)) ** 3, T4),
    clamp=(lambda x: x.clamp(1.0, 2.0) ** 3, T5),
    median=(lambda x: x.median() ** 3, T5),
    median_dim=(lambda x: x.median(1)[0] ** 3, T5),
    sort=(lambda x: x.sort(1)[0] ** 3, T5),
    quantile=(lambda x: x.quantile(0.3, dim=1) ** 3, T5),
    cummax=(lambda x: x.cummax(1)[0] ** 3, T5),
    amin_tuple=(lambda x: x.amin((0, 1)) ** 3, T5),
    nanmedian=(lambda x: x.nanmedian() ** 3, T4),
    logcumsumexp=(lambda x: x.logcumsumexp(1) ** 2, T5),
    abs=(lambda x: (x - 2.0).abs() ** 3, T5),
    fmin=(lambda x: x.fmin(x.flip(1)) ** 3, T5),
)


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_order_matches_torch(name):
    f, x = SECOND[name]
    res = []
    for L in (tg, torch):
        xx = L.tensor(x, dtype=L.float64, requires_grad=True)
        y = f(xx)
        w = L.tensor(_w(tuple(y.shape), 1), dtype=L.float64)
        (g,) = L.autograd.grad((y * w).sum(), xx, create_graph=True)
        (h,) = L.autograd.grad((g * L.tensor(_w(x.shape, 2), dtype=L.float64)).sum(), xx)
        res.append((g.detach().numpy(), h.detach().numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12, atol=1e-14)


# ---- NumPy code inside tg.grad / tg.jvp / tg.hessian ----------------------------------------
# (NumPy program, the PyTorch program whose derivative convention is JAX's, input)


def _unnan(x, fill):
    return torch.where(x.isnan(), fill, x)


NP = dict(
    max_all=(lambda x: np.max(x), lambda x: x.amax(), T4),
    max_axis=(lambda x: np.max(x, axis=1), lambda x: x.amax(1), T4),
    min_axis0=(lambda x: np.min(x, axis=0), lambda x: x.amin(0), T4),
    amax_keep=(lambda x: np.amax(x, axis=1, keepdims=True), lambda x: x.amax(1, True), T5),
    amax_tuple=(lambda x: np.amax(x, axis=(0, 1)), lambda x: x.amax((0, 1)), T5),
    method_max=(lambda x: x.max(axis=0), lambda x: x.amax(0), T5),
    method_min=(lambda x: x.min(), lambda x: x.amin(), T5),
    maximum_flip=(lambda x: np.maximum(x, x[::-1]), lambda x: x.maximum(x.flip(0)), T4),
    minimum_const=(lambda x: np.minimum(x, 2.0), lambda x: x.minimum(x.new_full((), 2.0)), T4),
    maximum_self=(lambda x: np.maximum(x, x), lambda x: x.maximum(x), T4),
    maximum_zero=(lambda x: np.maximum(x, -x), lambda x: x.maximum(-x), Z),
    max_zero=(lambda x: np.max(x, axis=1), lambda x: x.amax(1), Z),
    max_inf=(lambda x: np.max(x, axis=1), lambda x: x.amax(1), INF),
    sort=(lambda x: np.sort(x, axis=1), lambda x: x.sort(dim=1, stable=True)[0], T5),
    sort0=(lambda x: np.sort(x, axis=0), lambda x: x.sort(dim=0, stable=True)[0], T5),
    sort_none=(
        lambda x: np.sort(x, axis=None),
        lambda x: x.reshape(-1).sort(stable=True)[0],
        T5,
    ),
    sort_zero=(lambda x: np.sort(x, axis=1), lambda x: x.sort(dim=1, stable=True)[0], Z),
    median=(lambda x: np.median(x), lambda x: x.reshape(-1).quantile(0.5), T5),
    median_axis=(lambda x: np.median(x, axis=1), lambda x: x.quantile(0.5, dim=1), T4),
    median_axis0=(lambda x: np.median(x, axis=0), lambda x: x.quantile(0.5, dim=0), T5),
    median_keep=(
        lambda x: np.median(x, axis=0, keepdims=True),
        lambda x: x.quantile(0.5, dim=0, keepdim=True),
        T4,
    ),
    ptp=(lambda x: np.ptp(x, axis=1), lambda x: x.amax(1) - x.amin(1), T4),
    ptp_all=(lambda x: np.ptp(x), lambda x: x.amax() - x.amin(), T5),
    clip=(lambda x: np.clip(x, 1.0, 2.0), lambda x: x.clamp(1.0, 2.0), T5),
    clip_lo=(lambda x: np.clip(x, 2.0, None), lambda x: x.clamp(min=2.0), T5),
    clip_eq=(lambda x: np.clip(x, 2.0, 2.0), lambda x: x.clamp(2.0, 2.0), T5),
    abs_zero=(lambda x: np.abs(x), lambda x: x.abs(), Z),
    absolute_zero=(lambda x: np.absolute(x), lambda x: x.abs(), Z),
    fabs_zero=(lambda x: np.fabs(x), lambda x: x.abs(), Z),
    sign_times=(lambda x: np.sign(x) * x, lambda x: x.sign() * x, Z),
    nanmax=(lambda x: np.nanmax(x, axis=1), lambda x: _unnan(x, -np.inf).amax(1), NANS),
    nanmin=(lambda x: np.nanmin(x, axis=0), lambda x: _unnan(x, np.inf).amin(0), NANS),
    nanmax_ties=(lambda x: np.nanmax(x, axis=1), lambda x: x.amax(1), T4),
    nanmedian=(lambda x: np.nanmedian(x, axis=1), lambda x: x.nanquantile(0.5, dim=1), FIN),
    nanquantile=(
        lambda x: np.nanquantile(x, 0.3, axis=1),
        lambda x: x.nanquantile(0.3, dim=1),
        FIN,
    ),
    nanpercentile=(
        lambda x: np.nanpercentile(x, 70.0, axis=0),
        lambda x: x.nanquantile(0.7, dim=0),
        FIN,
    ),
    where=(lambda x: np.where(x > 1.5, x**2, -x), lambda x: torch.where(x > 1.5, x**2, -x), T5),
    max_of_square=(lambda x: np.max(x**2, axis=1), lambda x: (x**2).amax(1), T4),
)
for _m in ("linear", "lower", "higher", "nearest", "midpoint"):
    for _q in (0.0, 0.25, 0.5, 0.6, 1.0):
        NP[f"quantile_{_m}_{_q}"] = (
            lambda x, m=_m, q=_q: np.quantile(x, q, axis=1, method=m),
            lambda x, m=_m, q=_q: x.quantile(q, dim=1, interpolation=m),
            T5,
        )
        NP[f"percentile_{_m}_{_q}"] = (
            lambda x, m=_m, q=_q: np.percentile(x, 100 * q, axis=0, method=m),
            lambda x, m=_m, q=_q: x.quantile(q, dim=0, interpolation=m),
            T4,
        )


def _torch_grad(g, x, w):
    xt = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad((g(xt) * torch.tensor(w)).sum(), xt)
    return gt.numpy()


@pytest.mark.parametrize("name", sorted(NP))
def test_numpy_code_values_and_gradients(name):
    f, g, x = NP[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = f(x)
        w = _w(np.shape(ref), 3)
        value, grad = tg.value_and_grad(lambda y: np.sum(f(y) * w))(x)
        np.testing.assert_allclose(value, np.sum(ref * w), rtol=1e-12)
        np.testing.assert_allclose(grad, _torch_grad(g, x, w), rtol=1e-12, atol=1e-14)


NP_FORWARD = (
    "max_axis",
    "min_axis0",
    "amax_tuple",
    "maximum_flip",
    "minimum_const",
    "maximum_self",
    "sort",
    "median_axis",
    "ptp",
    "quantile_linear_0.25",
    "quantile_midpoint_0.6",
    "nanmax",
    "nanmedian",
    "where",
    "max_of_square",
)


@pytest.mark.parametrize("name", NP_FORWARD)
def test_numpy_code_jvp_and_hessian(name):
    """tg.jvp equals the transpose of the gradient (which matched PyTorch above), and the
    Hessian of a program of order statistics cubed equals PyTorch's."""
    f, g, x = NP[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _w(x.shape, 5)
        v, jv = tg.jvp(f, (x,), (t,))
        np.testing.assert_allclose(v, f(x), rtol=1e-12)
        xt, tt = torch.tensor(x), torch.tensor(t)
        jvt = torch.func.jvp(lambda y: torch.nan_to_num(g(y), 0.0, 0.0, 0.0), (xt,), (tt,))[1]
        mask = np.isfinite(np.asarray(v))
        np.testing.assert_allclose(np.asarray(jv)[mask], jvt.numpy()[mask], rtol=1e-12, atol=1e-14)
        if np.all(np.isfinite(x)):
            w = _w(np.shape(v), 3)
            h = tg.hessian(lambda y: np.sum(f(y) ** 3 * w))(x)
            ht = torch.func.hessian(lambda y: (g(y) ** 3 * torch.tensor(w)).sum())(xt)
            np.testing.assert_allclose(h, ht.numpy(), rtol=1e-12, atol=1e-12)


INTEGER_ANSWERS = dict(
    argmax=lambda y: np.argmax(y),
    argmax_axis=lambda y: np.argmax(y, axis=-1),
    argmin_axis0=lambda y: np.argmin(y, axis=0),
    argsort_stable=lambda y: np.argsort(y, axis=-1, kind="stable"),
    argsort_none=lambda y: np.argsort(y, axis=None, kind="stable"),
    method_argmax=lambda y: y.argmax(axis=0),
    method_argsort=lambda y: y.argsort(kind="stable"),
    argpartition_kth=lambda y: np.argpartition(y, 1, axis=-1)[..., 1],
    partition_kth=lambda y: np.partition(y, 1, axis=-1)[..., 1],
    searchsorted=lambda y: np.searchsorted(np.array([0.0, 1.0, 2.0]), y),
    searchsorted_right=lambda y: np.searchsorted(np.array([0.0, 1.0, 2.0]), y, side="right"),
    digitize=lambda y: np.digitize(y, np.array([0.0, 1.0, 2.0])),
    sign=lambda y: np.sign(y),
    signbit=lambda y: np.signbit(y),
    clip=lambda y: np.clip(y, 0.5, 2.0),
    fmax_const=lambda y: np.fmax(y, 1.0),
    maximum_const=lambda y: np.maximum(y, 1.0),
    nan_to_num=lambda y: np.nan_to_num(y),
    nan_to_num_args=lambda y: np.nan_to_num(y, nan=-1.0, posinf=9.0, neginf=-9.0),
    count_nonzero=lambda y: np.count_nonzero(y),
    median=lambda y: np.median(y),
    nanmedian=lambda y: np.nanmedian(y),
    nanmax=lambda y: np.nanmax(y, axis=-1),
    ptp=lambda y: np.ptp(y, axis=-1),
    sort_desc=lambda y: -np.sort(-y, axis=-1),
    where=lambda y: np.where(y > 1, y, -y),
    percentile_nearest=lambda y: np.percentile(y, [10, 50, 90], axis=-1, method="nearest"),
    maximum_reduce=lambda y: np.maximum.reduce(y, axis=-1),
)


@pytest.mark.parametrize("data", ["T5", "NANS", "Z"])
@pytest.mark.parametrize("name", sorted(INTEGER_ANSWERS))
def test_numpy_code_answers_exactly_numpy(name, data):
    """Inside tg.grad: the same values (and dtype kind) as NumPy, to the bit."""
    x = {"T5": T5, "NANS": NANS, "Z": Z[0]}[data]
    f = INTEGER_ANSWERS[name]
    seen = {}

    def loss(y):
        seen["r"] = f(y)
        return np.sum(y)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.grad(loss)(x)
        ref = f(x)
    r = seen["r"]
    r = np.asarray(r.detach().numpy() if hasattr(r, "detach") else r)
    assert r.dtype.kind == np.asarray(ref).dtype.kind
    np.testing.assert_array_equal(r, ref)
    if np.asarray(ref).dtype.kind == "f" and "median" not in name:
        # (NumPy's median partitions: which of 0.0 / -0.0 lands in the middle is its own)
        num = ~np.isnan(ref)  # (and a NaN's sign bit is nobody's)
        assert np.array_equal(np.signbit(r)[num], np.signbit(ref)[num])


@pytest.mark.parametrize("data", [T5, NANS, INF])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_numpy_quantiles_at_infinities_are_numpys(method, axis, data):
    """np.quantile / nanquantile / median / nanmedian on Tensors: NumPy's values, infinities
    (NumPy's lerp from the nearer end) and NaN lanes included."""
    qs = np.array([0.0, 0.1, 0.3, 0.5, 0.7, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = tg.tensor(data)
        for name in ("quantile", "nanquantile"):
            got = getattr(tnp, name)(t, qs, axis=axis, method=method).numpy()
            ref = getattr(np, name)(data, qs, axis=axis, method=method)
            np.testing.assert_allclose(got, ref, rtol=1e-15, equal_nan=True, err_msg=name)
        for name in ("median", "nanmedian"):
            got = getattr(tnp, name)(t, axis=axis).numpy()
            np.testing.assert_allclose(got, getattr(np, name)(data, axis=axis), equal_nan=True)


# ---- conventions where the references differ -------------------------------------------------


def _tg_grad(f, *xs):
    xs = [tg.tensor(np.asarray(x, dtype=float), requires_grad=True) for x in xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*xs).sum().backward()
    return [x.grad.numpy() for x in xs]


CONVENTIONS = dict(
    # NaN lane of amax: the NaN entries share the gradient (PyTorch: NaN over the lane)
    amax_nan_lane=(lambda x: x.amax(1), [[1.0, np.nan, 3.0, np.nan]], [[0.0, 0.5, 0.0, 0.5]]),
    aminmax_nan_lane=(lambda x: x.aminmax(dim=1).max, [[np.nan, 1.0]], [[1.0, 0.0]]),
    # abs at NaN: NaN (PyTorch 0, JAX -1); relu at NaN: 0 (PyTorch 1, JAX 0)
    abs_nan=(lambda x: x.abs(), [np.nan, 0.0, -0.0], [np.nan, 0.0, 0.0]),
    relu_nan=(lambda x: x.relu(), [np.nan, 0.0, -0.0], [0.0, 0.0, 0.0]),
    # np.clip at a bound: all of it (PyTorch's; JAX 1/2); np.abs at +-0: 0 (JAX 1)
    np_clip_bounds=(lambda x: np.clip(x, 1.0, 2.0), [1.0, 2.0, 1.5], [1.0, 1.0, 1.0]),
    np_clip_equal=(lambda x: np.clip(x, 2.0, 2.0), [2.0, 1.0], [1.0, 0.0]),
    np_abs_zero=(lambda x: np.abs(x), [0.0, -0.0], [0.0, 0.0]),
    # np.fmin with a constant at a tie: half (tg.fmin / x.fmin: PyTorch's 1; JAX 0)
    np_fmin_const=(lambda x: np.fmin(x, 2.0), [2.0, 3.0, np.nan], [0.5, 0.0, 0.0]),
    tg_fmin_const=(lambda x: tg.fmin(x, tg.tensor(2.0)), [2.0, 3.0, np.nan], [1.0, 0.0, 0.0]),
    # logcumsumexp at +inf: the limit gradient (PyTorch NaN)
    logcumsumexp_inf=(lambda x: x.logcumsumexp(0)[-1], [1.0, np.inf, 2.0], [0.0, 1.0, 0.0]),
)


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_conventions(name):
    f, x, expected = CONVENTIONS[name]
    (g,) = _tg_grad(f, x)
    np.testing.assert_array_equal(g, np.array(expected, dtype=float))


def test_np_fmax_tie_of_two_tensors_splits_evenly():
    """np.fmax / np.fmin of two Tensors at a tie: half each (PyTorch gives the first operand
    all, JAX the second); NaN: the number wins and takes all."""
    a, b = np.array([2.0, 1.0, np.nan]), np.array([2.0, np.nan, 0.0])
    for fn in (np.fmax, np.fmin):
        ga, gb = tg.grad(lambda x, y, fn=fn: np.sum(fn(x, y)), argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(ga, [0.5, 1.0, 0.0])
        np.testing.assert_array_equal(gb, [0.5, 0.0, 1.0])


def test_searchsorted_in_a_sequence_with_nan_is_numpys():
    """NaN sorts last as in NumPy (PyTorch answers [3, 3] here)."""
    seq, v = np.array([0.0, 1.0, np.nan]), np.array([np.nan, 2.0])
    got = tg.searchsorted(tg.tensor(seq), tg.tensor(v)).numpy()
    np.testing.assert_array_equal(got, np.searchsorted(seq, v))


# ---- findings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, q, interpolation",
    [
        ([-np.inf, 1.0], 0.75, "linear"),  # was NaN, PyTorch -inf
        ([-np.inf, 1.0], 0.25, "linear"),
        ([1.0, np.inf], 0.5, "linear"),  # was inf, PyTorch NaN
        ([1.0, np.inf], 0.25, "linear"),
        ([1.0, np.inf], 0.25, "midpoint"),  # was inf, PyTorch NaN
        ([-np.inf, 1.0], 0.25, "midpoint"),
        ([1.0, np.inf], 1.0, "linear"),
        ([1.0, np.inf], 0.0, "linear"),
        ([np.inf, np.inf, 1.0], 0.5, "linear"),
        ([-np.inf, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, np.inf, np.inf, np.nan], 0.1, "linear"),
    ],
)
def test_quantile_lerps_from_the_nearer_end_as_torch(data, q, interpolation):
    """Tensor.quantile interpolated lo + w (hi - lo) at every w: at -inf below, NaN where
    PyTorch (hi - (1 - w)(hi - lo) from w = 0.5) gives -inf, and inf where it gives NaN."""
    for name in ("quantile", "nanquantile"):
        got = getattr(tg.tensor(data), name)(q, interpolation=interpolation).item()
        ref = getattr(torch.tensor(data), name)(q, interpolation=interpolation).item()
        np.testing.assert_array_equal(got, ref, err_msg=name)
    x = tg.tensor(np.array(data), requires_grad=True)
    xt = torch.tensor(np.array(data), requires_grad=True)
    x.nanquantile(q, interpolation=interpolation).backward()
    xt.nanquantile(q, interpolation=interpolation).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("shape, dim", [((2, 0), 0), ((2, 0), 1), ((0,), None)])
def test_quantile_of_an_empty_input_raises_as_torch(name, shape, dim):
    """An empty input along another dim gave an empty result; PyTorch refuses every empty
    input (the (2, 0) lanes along dim 0 have no value)."""
    with pytest.raises(RuntimeError, match=f"Tensor.{name}: the input of shape"):
        getattr(tg.zeros(shape), name)(0.5, dim=dim)
    with pytest.raises(RuntimeError):
        getattr(torch.zeros(shape), name)(0.5, dim=dim)


def test_nanmedian_of_integers_keeps_integers():
    """x.nanmedian(dim) of an int64 tensor gave float64 values (PyTorch: int64), as
    nanmedian() and median(dim) keep."""
    values, indices = tg.tensor(INT).nanmedian(1)
    assert values.dtype == np.int64
    np.testing.assert_array_equal(values.numpy(), [2, 3])
    np.testing.assert_array_equal(indices.numpy(), torch.tensor(INT).nanmedian(1).indices)


# was: the second operand got the gradient, NaN or not (maximum(NaN, 0.0) -> (0, 1) and
# maximum(0.0, NaN) -> (0, 1)); now both get it, as PyTorch's (1, 1) (JAX gives (0, 0))
@pytest.mark.parametrize("fn", ["maximum", "minimum"])
@pytest.mark.parametrize("api", ["tensor", "numpy"])
def test_maximum_at_nan_does_not_depend_on_operand_order(fn, api):
    a, b = np.array([np.nan, 1.0, np.nan]), np.array([0.0, np.nan, np.nan])
    if api == "tensor":
        ga, gb = _tg_grad(getattr(tg, fn), a, b)
        gb2, ga2 = _tg_grad(getattr(tg, fn), b, a)
    else:
        ga, gb = tg.grad(lambda x, y: np.sum(getattr(np, fn)(x, y)), argnums=(0, 1))(a, b)
        gb2, ga2 = tg.grad(lambda x, y: np.sum(getattr(np, fn)(x, y)), argnums=(0, 1))(b, a)
    np.testing.assert_array_equal(ga, ga2)
    np.testing.assert_array_equal(gb, gb2)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    getattr(torch, fn)(ta, tb).sum().backward()
    np.testing.assert_array_equal(ga, ta.grad.numpy())
    np.testing.assert_array_equal(gb, tb.grad.numpy())
