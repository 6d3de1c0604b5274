"""PyTorch meanings of tapegrad's PyTorch-named methods and ``tg.*`` functions, a hunt.

Each program is written once against a small adapter ``L`` and run twice: with tapegrad and
with PyTorch (float64).  Forward results must agree (values to rtol 1e-10, shapes, dtype kind,
``requires_grad`` and the structure: tuples and named fields such as ``.values`` /
``.indices``), and so must the gradients of a fixed random weighting of every float output
with respect to every input.  The programs target what the other torch comparisons leave out:
PyTorch's *positional* argument orders (``x.sum(1, True)`` is keepdim, not NumPy's dtype;
``tg.amax(x, 1, True)`` is keepdim, not NumPy's ``out``), the ``tg.*`` function forms of
methods, PyTorch's conventions of the elementwise ops (rounding modes, signs, clamp with
min > max, half-to-even rounding with decimals), creation and conversion, the index ops and
the matrix products' shape rules, including the calls PyTorch refuses (tapegrad must raise
too: a number where PyTorch raises is a failure unless it is the right number).

Where PyTorch raises and tapegrad gives NumPy's documented number, the number is asserted
(``ACCEPTS``); PyTorch's results tapegrad refuses on purpose are in ``REFUSED`` with a
fragment of the message, asserted.  (``tg.nan_to_num``'s positional order, ``tg.dot`` /
``tg.outer`` / ``x.dot`` of matrices were NumPy's here: PyTorch's now, outside NumPy code.)
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_programs import _compare, _Lib, _raises  # noqa: E402

import tapegrad as tg  # noqa: E402

RNG = np.random.default_rng(20240811)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
C3 = RNG.standard_normal((2, 3, 4))
D3 = RNG.standard_normal((2, 4, 3))
SQ = RNG.standard_normal((4, 4))
V3 = RNG.standard_normal(3)
V4 = RNG.standard_normal(4)
W4 = RNG.standard_normal(4)
POS = np.abs(A) + 0.5
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 5.0, -1.0]])
HALF = np.array([[0.5, 1.5, 2.5, -0.5], [-1.5, -2.5, 3.5, 0.125]])
NEG = np.array([[-7.0, 7.0, -7.5, 7.5], [-3.0, 3.0, -0.5, 0.25], [5.5, -5.5, 2.0, -2.0]])
DEN = np.array([[2.0, 2.0, -2.0, -2.0], [1.5, -1.5, 0.5, -0.5], [4.0, 4.0, -4.0, -4.0]])


# ---- programs ------------------------------------------------------------------------------

P = {}


def progs(**kw):
    for k, f in kw.items():
        assert k not in P, k
        P[k] = f


# reductions: PyTorch's positional argument orders (method and tg.* forms)
progs(
    sum_pos_keep=lambda L: L.T(A).sum(1, True),
    sum_pos_tuple_keep=lambda L: L.T(C3).sum((0, -1), True),
    mean_pos_keep=lambda L: L.T(A).mean(-1, True),
    prod_pos_keep=lambda L: L.T(A).prod(0, True),
    nansum_pos_keep=lambda L: L.T(A).nansum(1, True),
    nanmean_pos_keep=lambda L: L.T(A).nanmean(0, True),
    logsumexp_pos_keep=lambda L: L.T(A).logsumexp(1, True),
    amax_pos_keep=lambda L: L.T(TIES).amax(1, True),
    amin_pos_keep=lambda L: L.T(TIES).amin(0, True),
    std_pos_unbiased=lambda L: L.T(A).std(1, False),
    std_pos_unbiased_keep=lambda L: L.T(A).std(1, False, True),
    var_pos_unbiased_keep=lambda L: L.T(C3).var((0, 2), True, True),
    std_bool_first=lambda L: L.T(A).std(False),
    var_bool_first=lambda L: L.T(A).var(False),
    norm_pos_all=lambda L: L.T(C3).norm(3, (0, 2), True),
    norm_p_inf_neg=lambda L: L.T(A).norm(float("-inf"), 0),
    norm_dtype=lambda L: L.T(A).norm(
        2, 1, dtype=torch.float64 if L.name == "torch" else tg.float64
    ),
    median_pos_keep=lambda L: L.T(TIES).median(0, True),
    nanmedian_pos_keep=lambda L: L.T(TIES).nanmedian(1, True),
    kthvalue_pos=lambda L: L.T(A).kthvalue(2, 0, True),
    topk_pos_smallest=lambda L: L.T(A).topk(2, 0, False),
    sort_pos_desc=lambda L: L.T(A).sort(0, True),
    argsort_pos_desc=lambda L: L.T(A).argsort(0, True),
    argmax_pos_keep=lambda L: L.T(A).argmax(1, True),
    argmin_pos_keep=lambda L: L.T(A).argmin(0, True),
    all_pos_keep=lambda L: L.B(TIES > 1.5).all(0, True),
    any_pos_keep=lambda L: L.B(TIES > 4.5).any(1, True),
    all_tuple=lambda L: L.B(C3 > -1.0).all((0, 2)),
    any_neg_tuple=lambda L: L.B(C3 > 1.0).any((-1, -3)),
    count_nonzero_int=lambda L: L.T(np.round(A), rg=False).count_nonzero(0),
    count_nonzero_neg_tuple=lambda L: L.T(np.round(C3), rg=False).count_nonzero((-1, -2)),
    cumsum_pos_dtype=lambda L: L.I([[1, 2], [3, 4]]).cumsum(1, dtype=L.m.float64),
    cumprod_dim_kw=lambda L: L.T(A).cumprod(dim=0),
    logcumsumexp_dim0=lambda L: L.T(A).logcumsumexp(0),
    cummax_nan=lambda L: L.T([1.0, np.nan, 3.0, 0.5]).cummax(0),
    cummin_ties_neg=lambda L: L.T([[2.0, 1.0, 1.0, 3.0, 1.0]]).cummin(-1),
    max_dim_nan=lambda L: L.T([[1.0, np.nan, 3.0], [2.0, 1.0, 0.0]]).max(1),
    min_dim_ties_first=lambda L: L.T([[1.0, 0.0, 0.0], [4.0, 4.0, 4.0]]).min(1),
    argmin_ties_first=lambda L: L.T([[1.0, 0.0, 0.0], [4.0, 4.0, 4.0]]).argmin(1),
    median_even_lower=lambda L: L.T([4.0, 1.0, 3.0, 2.0]).median(),
    median_even_dim=lambda L: L.T([[4.0, 1.0, 3.0, 2.0], [0.0, -1.0, 7.0, 8.0]]).median(1),
    nanmedian_all_nan_row=lambda L: L.T([[np.nan, np.nan], [1.0, np.nan]]).nanmedian(1),
    nanmedian_all=lambda L: L.T([np.nan, 3.0, 1.0, np.nan, 2.0, 4.0]).nanmedian(),
    std_one=lambda L: L.T([3.0]).std(),
    std_one_dim=lambda L: L.T([[3.0], [1.0]]).std(1),
    var_one_unbiased_false=lambda L: L.T([[3.0], [1.0]]).var(1, unbiased=False),
    std_correction0=lambda L: L.T(A).std(correction=0),
    var_correction_3=lambda L: L.T(A).var(1, correction=3),
    mean_dtype_kw=lambda L: L.T(A).mean(1, dtype=L.m.float64),
    sum_int_dtype_float=lambda L: L.I([[1, -2], [3, 4]]).sum(0, dtype=L.m.float64),
    sum_bool_dtype=lambda L: L.B([[True, False], [True, True]]).sum(1),
    prod_int=lambda L: L.I([[1, -2], [3, 4]]).prod(1),
    max_int_dim=lambda L: L.I([[1, 5, 5], [2, -1, 0]]).max(1),
    amax_int=lambda L: L.I([[1, 5, 5], [2, -1, 0]]).amax(0),
    logsumexp_int=lambda L: L.I([[1, 2], [3, 4]]).logsumexp(1),
    mode_1d=lambda L: L.T([1.0, 2.0, 2.0, 3.0, 3.0, 0.0]).mode(),
)

# the tg.* function forms, with PyTorch's positional orders
progs(
    fn_sum_pos_keep=lambda L: L.m.sum(L.T(A), 1, True),
    fn_mean_pos_keep=lambda L: L.m.mean(L.T(A), 0, True),
    fn_prod_pos_keep=lambda L: L.m.prod(L.T(A), 1, True),
    fn_amax_pos_keep=lambda L: L.m.amax(L.T(A), 1, True),
    fn_amin_pos_keep=lambda L: L.m.amin(L.T(A), 0, True),
    fn_logsumexp_pos_keep=lambda L: L.m.logsumexp(L.T(A), 1, True),
    fn_cumsum_pos=lambda L: L.m.cumsum(L.T(A), 0),
    fn_cumprod_pos=lambda L: L.m.cumprod(L.T(A), 1),
    fn_cumsum_dtype=lambda L: L.m.cumsum(L.I([[1, 2], [3, 4]]), 0, dtype=L.m.float64),
    fn_logcumsumexp=lambda L: L.m.logcumsumexp(L.T(A), 1),
    fn_std_pos_unbiased=lambda L: L.m.std(L.T(A), 1, False),
    fn_std_pos_unbiased_keep=lambda L: L.m.std(L.T(A), 0, False, True),
    fn_var_pos_unbiased_keep=lambda L: L.m.var(L.T(A), 1, True, True),
    fn_var_correction=lambda L: L.m.var(L.T(A), 1, correction=0),
    fn_std_no_dim=lambda L: L.m.std(L.T(A)),
    fn_var_bool=lambda L: L.m.var(L.T(A), False),
    fn_max_pos_keep=lambda L: L.m.max(L.T(TIES), 1, True),
    fn_min_other=lambda L: L.m.min(L.T(A), L.T(B)),
    fn_median_pos_keep=lambda L: L.m.median(L.T(TIES), 1, True),
    fn_nanmedian_dim=lambda L: L.m.nanmedian(L.T(TIES), 0),
    fn_kthvalue_pos=lambda L: L.m.kthvalue(L.T(A), 2, 0, True),
    fn_topk_pos=lambda L: L.m.topk(L.T(A), 2, 0, False),
    fn_sort_pos=lambda L: L.m.sort(L.T(A), 0, True),
    fn_sort_default=lambda L: L.m.sort(L.T(A)),
    fn_argsort_pos=lambda L: L.m.argsort(L.T(A), 0, True),
    fn_argsort_default=lambda L: L.m.argsort(L.T(A)),
    fn_argmax_pos_keep=lambda L: L.m.argmax(L.T(A), 1, True),
    fn_argmin_none=lambda L: L.m.argmin(L.T(A)),
    fn_norm_pos=lambda L: L.m.norm(L.T(A), 1, 0, True),
    fn_norm_default=lambda L: L.m.norm(L.T(C3)),
    fn_count_nonzero_dim=lambda L: L.m.count_nonzero(L.T(np.round(A), rg=False), 1),
    fn_cummax_pos=lambda L: L.m.cummax(L.T(TIES), 1),
    fn_cummin_kw=lambda L: L.m.cummin(L.T(TIES), dim=0),
    fn_nansum_pos_keep=lambda L: L.m.nansum(L.T(A), 1, True),
    fn_nanmean_pos=lambda L: L.m.nanmean(L.T(A), 0),
    fn_aminmax=lambda L: L.m.aminmax(L.T(TIES), dim=0, keepdim=True),
    fn_std_mean_pos=lambda L: L.m.std_mean(L.T(A), 1, False, True),
    fn_var_mean_pos=lambda L: L.m.var_mean(L.T(A), 0, True),
    fn_mean_dtype=lambda L: L.m.mean(L.T(A), dtype=L.m.float64),
    fn_sum_int_dtype=lambda L: L.m.sum(L.I([[1, 2], [3, 4]]), 1, dtype=L.m.float64),
    fn_logsumexp_tuple=lambda L: L.m.logsumexp(L.T(C3), (0, 1)),
)


# shape methods
progs(
    repeat_tile_2=lambda L: L.T(V3).repeat(2),
    repeat_tile_more=lambda L: L.T(A).repeat(2, 1, 2),
    repeat_ones=lambda L: L.T(A).repeat(1, 1),
    repeat_fewer_raises=lambda L: L.T(A).repeat(2),
    ri_int_dim=lambda L: L.T(A).repeat_interleave(2, dim=1),
    ri_int_pos_dim=lambda L: L.T(A).repeat_interleave(3, 0),
    ri_tensor_dim=lambda L: L.T(A).repeat_interleave(L.I([1, 0, 2]), dim=0),
    ri_flat=lambda L: L.T(A).repeat_interleave(2),
    ri_tensor_flat=lambda L: L.T(V3).repeat_interleave(L.I([2, 0, 1])),
    ri_output_size=lambda L: L.T(V3).repeat_interleave(L.I([2, 1, 1]), dim=0, output_size=4),
    ri_fn_tensor_only=lambda L: L.m.repeat_interleave(L.I([2, 0, 3])),
    ri_wrong_len_raises=lambda L: L.T(V3).repeat_interleave(L.I([1, 2]), dim=0),
    ri_neg_raises=lambda L: L.T(V3).repeat_interleave(L.I([1, -1, 2]), dim=0),
    expand_neg1=lambda L: L.T([[1.0], [2.0]]).expand(-1, 3),
    expand_new_lead=lambda L: L.T(V3).expand(2, 3),
    expand_bad_raises=lambda L: L.T(V3).expand(2, 4),
    flip_tuple=lambda L: L.T(C3).flip((0, 2)),
    flip_varargs=lambda L: L.T(C3).flip(0, -1),
    flip_fn=lambda L: L.m.flip(L.T(C3), (1,)),
    roll_neg_shift=lambda L: L.T(A).roll(-1, 1),
    roll_big_shift=lambda L: L.T(A).roll(7, 0),
    roll_two=lambda L: L.T(C3).roll((1, -2), (0, 2)),
    roll_fn_flat=lambda L: L.m.roll(L.T(A), 5),
    rot90_default=lambda L: L.T(A).rot90(),
    rot90_k2=lambda L: L.T(A).rot90(2),
    rot90_k3=lambda L: L.T(A).rot90(3, (0, 1)),
    rot90_neg=lambda L: L.T(A).rot90(-1),
    rot90_dims_rev=lambda L: L.T(A).rot90(1, (1, 0)),
    rot90_3d=lambda L: L.T(C3).rot90(1, (0, 2)),
    rot90_k5=lambda L: L.T(A).rot90(5),
    rot90_fn=lambda L: L.m.rot90(L.T(C3), 1, [1, 2]),
    rot90_same_dims_raises=lambda L: L.T(A).rot90(1, (0, 0)),
    flatten_start=lambda L: L.T(C3).flatten(1),
    flatten_start_end=lambda L: L.T(C3).flatten(0, 1),
    flatten_neg_neg=lambda L: L.T(C3).flatten(-2, -1),
    flatten_fn=lambda L: L.m.flatten(L.T(C3), 1),
    flatten_bad_raises=lambda L: L.T(C3).flatten(2, 1),
    unflatten_neg=lambda L: L.T(A).unflatten(1, (2, -1)),
    unflatten_negdim=lambda L: L.T(A).unflatten(-1, (-1, 2)),
    unflatten_fn=lambda L: L.m.unflatten(L.T(A), 0, (1, 3)),
    unflatten_bad_raises=lambda L: L.T(A).unflatten(1, (3, 2)),
    squeeze_dim_nonone=lambda L: L.T(A).squeeze(0),
    squeeze_dim=lambda L: L.T(np.zeros((1, 3, 1)) + 1.0).squeeze(-1),
    squeeze_tuple_mixed=lambda L: L.T(np.ones((1, 3, 1))).squeeze((0, 1)),
    squeeze_fn_dim=lambda L: L.m.squeeze(L.T(np.ones((1, 3, 1))), 2),
    squeeze_fn_all=lambda L: L.m.squeeze(L.T(np.ones((1, 3, 1)))),
    unsqueeze_end=lambda L: L.T(A).unsqueeze(2),
    unsqueeze_neg1=lambda L: L.T(A).unsqueeze(-1),
    unsqueeze_fn=lambda L: L.m.unsqueeze(L.T(A), 1),
    unsqueeze_out_raises=lambda L: L.T(A).unsqueeze(4),
    movedim_tuple=lambda L: L.T(C3).movedim((0, 1), (2, 0)),
    movedim_neg=lambda L: L.T(C3).movedim(-1, 0),
    movedim_fn=lambda L: L.m.movedim(L.T(C3), 0, -1),
    narrow_neg_start=lambda L: L.T(A).narrow(1, -3, 2),
    narrow_fn=lambda L: L.m.narrow(L.T(A), 0, 1, 2),
    narrow_too_long_raises=lambda L: L.T(A).narrow(1, 2, 3),
    tril_pos=lambda L: L.T(A).tril(1),
    tril_neg=lambda L: L.T(A).tril(-1),
    triu_big=lambda L: L.T(A).triu(5),
    triu_neg_batch=lambda L: L.T(C3).triu(-1),
    tril_fn_kw=lambda L: L.m.tril(L.T(A), diagonal=2),
    triu_fn_pos=lambda L: L.m.triu(L.T(D3), 1),
    tril_1d_raises=lambda L: L.T(V3).tril(),
    diag_vec=lambda L: L.T(V3).diag(),
    diag_vec_neg=lambda L: L.T(V3).diag(-2),
    diag_mat_pos=lambda L: L.T(A).diag(1),
    diag_mat_off_out=lambda L: L.T(A).diag(5),
    diag_3d_raises=lambda L: L.T(C3).diag(),
    diag_fn=lambda L: L.m.diag(L.T(A), -1),
    diagonal_default=lambda L: L.T(A).diagonal(),
    diagonal_dims=lambda L: L.T(C3).diagonal(0, 0, 2),
    diagonal_neg_off=lambda L: L.T(C3).diagonal(-1, 2, 1),
    diagonal_kw=lambda L: L.T(C3).diagonal(offset=1, dim1=-1, dim2=0),
    trace_rect=lambda L: L.T(A).trace(),
    trace_3d_raises=lambda L: L.T(C3).trace(),
    outer_vec=lambda L: L.m.outer(L.T(V3), L.T(V4)),
    outer_method=lambda L: L.T(V3).outer(L.T(V4)),
    outer_2d_raises=lambda L: L.m.outer(L.T(A), L.T(V4)),
    outer_method_2d_raises=lambda L: L.T(A).outer(L.T(V4)),
    ger_fn=lambda L: L.m.ger(L.T(V3), L.T(V4)),
    kron_2d=lambda L: L.m.kron(L.T(A[:2, :2]), L.T(B[:2, :3])),
    kron_mixed_nd=lambda L: L.m.kron(L.T(V3), L.T(A[:2, :2])),
    kron_method=lambda L: L.T(A[:2]).kron(L.T(C3[:, :1, :2])),
    cross_dim=lambda L: L.m.cross(L.T(A[:, :3].T), L.T(B[:, :3].T), dim=0),
    cross_last=lambda L: L.T(C3[..., :3]).cross(L.T(D3[:, :3, :]), dim=-1),
    cross_bcast=lambda L: L.m.cross(L.T(A[:, :3]), L.T(V3), dim=1),
    cross_default_dim=lambda L: L.m.cross(L.T(np.ones((3, 3)) + A[:, :3]), L.T(B[:, :3])),
    cross_bad_dim_raises=lambda L: L.m.cross(L.T(A), L.T(B), dim=1),
    linalg_cross=lambda L: L.linalg.cross(L.T(A[:, :3]), L.T(B[:, :3])),
    cdist_p2=lambda L: L.m.cdist(L.T(A), L.T(B[:2])),
    cdist_p1=lambda L: L.m.cdist(L.T(A), L.T(B), p=1.0),
    cdist_pinf=lambda L: L.m.cdist(L.T(A), L.T(B), p=float("inf")),
    cdist_p0=lambda L: L.m.cdist(L.T(np.round(A)), L.T(np.round(B)), p=0.0),
    cdist_p3=lambda L: L.m.cdist(L.T(A), L.T(B), p=3.0),
    cdist_same_point=lambda L: L.m.cdist(L.T(A), L.T(A)),
    cdist_batch_bcast=lambda L: L.m.cdist(L.T(C3), L.T(B)),
    cdist_1d_raises=lambda L: L.m.cdist(L.T(V4), L.T(W4)),
    einsum_bilinear=lambda L: L.m.einsum("i,ij,j->", L.T(V3), L.T(A), L.T(V4)),
    einsum_transpose=lambda L: L.m.einsum("ij->ji", L.T(A)),
    einsum_spaces=lambda L: L.m.einsum("b i j , b j k -> b i k", L.T(C3), L.T(D3)),
    einsum_ellipsis_bcast=lambda L: L.m.einsum("...ij,jk->...ik", L.T(C3), L.T(D3[0])),
    einsum_sublist=lambda L: L.m.einsum(L.T(A), [0, 1], L.T(B), [0, 1], [1]),
    einsum_implicit=lambda L: L.m.einsum("ij,jk", L.T(A), L.T(D3[0])),
    einsum_diag_out=lambda L: L.m.einsum("ii->i", L.T(SQ)),
)

# elementwise with PyTorch's conventions
progs(
    div_trunc=lambda L: L.T(NEG).div(L.T(DEN), rounding_mode="trunc"),
    div_floor=lambda L: L.T(NEG).div(L.T(DEN), rounding_mode="floor"),
    div_floor_scalar=lambda L: L.T(NEG).div(-2.0, rounding_mode="floor"),
    div_fn_trunc=lambda L: L.m.div(L.T(NEG), 3, rounding_mode="trunc"),
    div_int_true=lambda L: L.I([-7, 7, -8]).div(L.I([2, -2, 3])),
    div_int_trunc=lambda L: L.I([-7, 7, -8]).div(L.I([2, -2, 3]), rounding_mode="trunc"),
    div_int_floor=lambda L: L.I([-7, 7, -8]).div(L.I([2, -2, 3]), rounding_mode="floor"),
    div_bad_mode_raises=lambda L: L.T(A).div(2.0, rounding_mode="round"),
    remainder_signs=lambda L: L.T(NEG).remainder(L.T(DEN)),
    remainder_scalar_neg=lambda L: L.T(NEG).remainder(-3.0),
    remainder_fn=lambda L: L.m.remainder(L.T(NEG), L.T(DEN)),
    remainder_int=lambda L: L.I([-7, 7, -8, 8]).remainder(L.I([3, -3, -3, 3])),
    fmod_signs=lambda L: L.T(NEG).fmod(L.T(DEN)),
    fmod_fn=lambda L: L.m.fmod(L.T(NEG), -3.0),
    fmod_int=lambda L: L.I([-7, 7, -8, 8]).fmod(L.I([3, -3, -3, 3])),
    floor_divide_float=lambda L: L.T(NEG, rg=False).floor_divide(L.T(DEN, rg=False)),
    floor_divide_fn=lambda L: L.m.floor_divide(L.T(NEG, rg=False), 2.0),
    floor_divide_int=lambda L: L.I([-7, 7, -8]).floor_divide(L.I([2, -2, 3])),
    round_half_even=lambda L: L.T(HALF).round(),
    round_dec1=lambda L: L.T([0.25, 0.35, -0.25, 1.45, 2.675]).round(decimals=1),
    round_dec2=lambda L: L.T([1.005, 0.125, 0.375, -0.125]).round(decimals=2),
    round_dec_neg=lambda L: L.T([15.0, 25.0, -35.0, 149.0]).round(decimals=-1),
    round_fn_dec=lambda L: L.m.round(L.T([0.25, 0.35, -0.25]), decimals=1),
    round_fn_plain=lambda L: L.m.round(L.T(HALF)),
    clamp_crossed_scalars=lambda L: L.T(A).clamp(0.5, -0.5),
    clamp_crossed_fn=lambda L: L.m.clamp(L.T(A), min=1.0, max=0.0),
    clamp_min_tensor_crossed=lambda L: L.T(A).clamp(L.T(np.full(4, 0.3)), L.T(np.full(4, -0.3))),
    clamp_none_raises=lambda L: L.T(A).clamp(),
    clip_method=lambda L: L.T(A).clip(-0.5, 0.5),
    clamp_min_method=lambda L: L.T(A).clamp_min(0.2),
    clamp_max_fn=lambda L: L.m.clamp_max(L.T(A), L.T(B)),
    sign_vals=lambda L: L.T([-2.0, -0.0, 0.0, 3.0]).sign(),
    sign_fn=lambda L: L.m.sign(L.T([-2.0, 0.0, 3.0])),
    sgn_vals=lambda L: L.T([-2.0, -0.0, 0.0, 3.0], rg=False).sgn(),
    sign_int=lambda L: L.I([-2, 0, 3]).sign(),
    pow_neg_int=lambda L: L.T([2.0, -2.0, 0.5]).pow(-2),
    pow_neg_int_zero=lambda L: L.T([0.0, -0.0]).pow(-1),
    pow_int_neg_raises=lambda L: L.I([2, 3]).pow(-1),
    pow_int_tensor_neg_raises=lambda L: L.I([2, 3]).pow(L.I([-1, 2])),
    pow_fn=lambda L: L.m.pow(L.T(POS), L.T(B)),
    pow_fn_scalar_base=lambda L: L.m.pow(2.0, L.T(A)),
    pow_neg_base_frac=lambda L: L.T([-8.0, 8.0]).pow(1.0 / 3.0),
    pow_int_float_exp=lambda L: L.I([2, 3]).pow(0.5),
    float_power_int=lambda L: L.I([2, 3]).float_power(-1),
    lerp_scalar=lambda L: L.T(A).lerp(L.T(B), 0.3),
    lerp_tensor_weight=lambda L: L.T(A).lerp(L.T(B), L.T(POS)),
    lerp_fn=lambda L: L.m.lerp(L.T(A), L.T(B), 0.75),
    lerp_bcast=lambda L: L.T(V4).lerp(L.T(A), L.T(V4 * 0 + 0.2)),
    addcmul_value=lambda L: L.T(A).addcmul(L.T(B), L.T(POS), value=-0.5),
    addcdiv_value=lambda L: L.T(A).addcdiv(L.T(B), L.T(POS), value=3),
    addcmul_fn=lambda L: L.m.addcmul(L.T(V4), L.T(A), L.T(B), value=2),
    addcdiv_fn=lambda L: L.m.addcdiv(L.T(A), L.T(B), L.T(POS)),
    hypot=lambda L: L.m.hypot(L.T(A), L.T(B)),
    hypot_method=lambda L: L.T(A).hypot(L.T(V4)),
    logaddexp=lambda L: L.m.logaddexp(L.T(A), L.T(B)),
    logaddexp_inf=lambda L: L.m.logaddexp(L.T([-np.inf, np.inf, 1.0]), L.T([-np.inf, 1.0, 2.0])),
    logaddexp_method=lambda L: L.T(A).logaddexp(L.T(B)),
    logaddexp2=lambda L: L.m.logaddexp2(L.T(A), L.T(B)),
    xlogy_fn=lambda L: L.m.xlogy(L.T(A), L.T(POS)),
    xlogy_scalar_x=lambda L: L.m.xlogy(2.0, L.T(POS)),
    copysign=lambda L: L.m.copysign(L.T(A), L.T(B)),
    copysign_zero=lambda L: L.m.copysign(L.T([1.0, 2.0, -3.0]), L.T([-0.0, 0.0, -0.0])),
    copysign_method=lambda L: L.T(A).copysign(-1.0),
    nextafter=lambda L: L.m.nextafter(
        L.T([1.0, 0.0, -1.0], rg=False), L.T([2.0, -1.0, -1.0], rg=False)
    ),
    frac=lambda L: L.T([-2.5, -0.5, 0.0, 1.75, 3.0]).frac(),
    frac_fn=lambda L: L.m.frac(L.T(NEG)),
    trunc=lambda L: L.T([-2.5, -0.5, 1.75]).trunc(),
    trunc_fn=lambda L: L.m.trunc(L.T(NEG)),
    fix=lambda L: L.T([-2.5, -0.5, 1.75]).fix(),
    fix_fn=lambda L: L.m.fix(L.T(NEG)),
    nan_to_num_all=lambda L: L.T([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(),
    nan_to_num_pos=lambda L: L.T([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(2.0, 3.0, -3.0),
    nan_to_num_fn=lambda L: L.m.nan_to_num(L.T([np.nan, np.inf, -np.inf]), nan=1.0, posinf=9.0),
    nan_to_num_fn_pos=lambda L: L.m.nan_to_num(L.T([np.nan, np.inf, -np.inf]), 1.0, 9.0),
    isclose_default=lambda L: L.T([1.0, 1.0 + 1e-6, np.nan, np.inf]).isclose(
        L.T([1.0, 1.0, np.nan, np.inf])
    ),
    isclose_equal_nan=lambda L: L.m.isclose(L.T([np.nan, 1.0]), L.T([np.nan, 1.1]), equal_nan=True),
    isclose_pos_tol=lambda L: L.T([1.0, 2.0]).isclose(L.T([1.05, 2.5]), 0.1, 0.0),
    isclose_atol_only=lambda L: L.m.isclose(
        L.T([0.0, 1e-9]), L.T([1e-9, 0.0]), rtol=0.0, atol=1e-8
    ),
    where_scalar_scalar=lambda L: L.m.where(L.B([True, False]), 1.0, 0.0),
    where_tensor_scalar=lambda L: L.m.where(L.B([[True, False, True, False]]), L.T(A), 0.5),
    where_scalar_tensor=lambda L: L.m.where(L.B([True, False, True, False]), -1.0, L.T(A)),
    where_int_scalars=lambda L: L.m.where(L.B([True, False]), 1, 0),
    where_method_scalar=lambda L: L.T(A).where(L.B(A > 0), 0.0),
    where_int_float=lambda L: L.m.where(L.B([True, False]), L.I([1, 2]), 0.5),
)


def _dt(L, name):
    return getattr(torch, name) if L.name == "torch" else getattr(tg, name)


# creation and conversion
progs(
    arange_float_step=lambda L: L.m.arange(0, 1, 0.1, dtype=_dt(L, "float64")),
    arange_float_neg_step=lambda L: L.m.arange(1.0, -1.0, -0.3, dtype=_dt(L, "float64")),
    arange_float_ends=lambda L: L.m.arange(1, 2.5, 0.5, dtype=_dt(L, "float64")),
    arange_int_only=lambda L: L.m.arange(5),
    arange_int_step=lambda L: L.m.arange(1, 10, 3),
    arange_float_end_kind=lambda L: L.m.arange(2.5),
    arange_empty=lambda L: L.m.arange(3, 1),
    arange_zero_step_raises=lambda L: L.m.arange(0, 3, 0),
    arange_wrong_sign_raises=lambda L: L.m.arange(0, 3, -1),
    linspace_5=lambda L: L.m.linspace(0, 1, 5, dtype=_dt(L, "float64")),
    linspace_1=lambda L: L.m.linspace(2, 3, 1, dtype=_dt(L, "float64")),
    linspace_0=lambda L: L.m.linspace(2, 3, 0, dtype=_dt(L, "float64")),
    linspace_rev=lambda L: L.m.linspace(3.0, -1.0, 4, dtype=_dt(L, "float64")),
    linspace_int_dtype=lambda L: L.m.linspace(0, 10, 4, dtype=_dt(L, "int64")),
    linspace_kw=lambda L: L.m.linspace(start=-1.0, end=1.0, steps=3, dtype=_dt(L, "float64")),
    full_int=lambda L: L.m.full((2, 3), 7),
    full_bool=lambda L: L.m.full((2,), True),
    full_float=lambda L: L.m.full([2, 2], 1.5, dtype=_dt(L, "float64")),
    full_dtype_int=lambda L: L.m.full((2,), 2.7, dtype=_dt(L, "int64")),
    eye_n=lambda L: L.m.eye(3, dtype=_dt(L, "float64")),
    eye_nm=lambda L: L.m.eye(2, 4, dtype=_dt(L, "float64")),
    eye_int=lambda L: L.m.eye(2, dtype=_dt(L, "int64")),
    zeros_like_int=lambda L: L.m.zeros_like(L.I([1, 2])),
    zeros_like_dtype=lambda L: L.m.zeros_like(L.I([1, 2]), dtype=_dt(L, "float64")),
    ones_like_bool=lambda L: L.m.ones_like(L.B([True, False])),
    ones_like_rg=lambda L: L.m.ones_like(L.T(A)),
    full_like_pos=lambda L: L.m.full_like(L.T(A, rg=False), 2.5),
    zeros_tuple=lambda L: L.m.zeros((2, 3), dtype=_dt(L, "float64")),
    zeros_varargs=lambda L: L.m.zeros(2, 3, dtype=_dt(L, "float64")),
    ones_varargs=lambda L: L.m.ones(3, 1, dtype=_dt(L, "float64")),
    to_int64_neg=lambda L: L.T([-2.7, -0.5, 0.5, 2.7], rg=False).to(_dt(L, "int64")),
    long_neg=lambda L: L.T([-2.7, -0.5, 0.5, 2.7], rg=False).long(),
    int_neg=lambda L: L.T([-2.7, -1.5, 1.5, 2.7], rg=False).int(),
    double_of_int=lambda L: L.I([1, -2]).double(),
    float_of_f64=lambda L: L.T(A, rg=False).float(),
    to_float32=lambda L: L.T(A, rg=False).to(_dt(L, "float32")),
    to_float32_rg=lambda L: L.T(A).to(_dt(L, "float32")).to(_dt(L, "float64")),
    to_other=lambda L: L.T(A, rg=False).to(L.I([1])),
    bool_of_float=lambda L: L.T([0.0, -0.0, 0.5, np.nan], rg=False).bool(),
    item_float=lambda L: L.T([[2.5]]).item(),
    item_int=lambda L: L.I([[-3]]).item(),
    item_bool=lambda L: L.B([True]).item(),
    item_many_raises=lambda L: L.T(A).item(),
    tolist_2d=lambda L: L.T([[1.5, 2.0], [3.0, -1.0]]).tolist(),
    tolist_int=lambda L: L.I([[1, 2], [3, 4]]).tolist(),
    tolist_0d=lambda L: L.T(2.5).tolist(),
    numpy_no_grad=lambda L: L.T(A, rg=False).numpy().tolist(),
    numpy_rg_raises=lambda L: L.T(A).numpy(),
    numpy_rg_force=lambda L: L.T(A).numpy(force=True).tolist(),
    float_of_tensor=lambda L: float(L.T([2.5])),
    int_of_tensor=lambda L: int(L.T([-2.7])),
    float_of_many_raises=lambda L: float(L.T(A)),
)

# gather / scatter / index_select / take / take_along_dim / masked_select / nonzero
GI = [[0, 3, 3], [1, 1, 0], [2, 0, 1]]
progs(
    gather_dim1=lambda L: L.T(A).gather(1, L.I(GI)),
    gather_dim0=lambda L: L.T(A).gather(0, L.I([[2, 0, 1, 1], [0, 0, 2, 1]])),
    gather_neg_idx_raises=lambda L: L.T(A).gather(1, L.I([[-1, 0]])),
    gather_oob_raises=lambda L: L.T(A).gather(1, L.I([[4, 0]])),
    gather_fn=lambda L: L.m.gather(L.T(A), -1, L.I(GI)),
    gather_wrong_ndim_raises=lambda L: L.T(A).gather(1, L.I([0, 1])),
    scatter_src=lambda L: L.T(A).scatter(1, L.I([[0, 2], [3, 1]]), L.T(B[:2, :2])),
    scatter_value=lambda L: L.T(A).scatter(0, L.I([[2, 1, 0, 2]]), -1.5),
    scatter_add_rep=lambda L: L.T(A).scatter_add(1, L.I([[0, 0, 1], [3, 3, 3]]), L.T(B[:2, :3])),
    scatter_reduce_add=lambda L: L.T(A, rg=False).scatter(
        1, L.I([[0, 0, 1]]), L.T(B[:1, :3], rg=False), reduce="add"
    ),
    scatter_reduce_mul=lambda L: L.T(A, rg=False).scatter(
        1, L.I([[0, 0, 1]]), L.T(B[:1, :3], rg=False), reduce="multiply"
    ),
    scatter_fn=lambda L: L.m.scatter(L.T(A), 0, L.I([[1, 2, 0, 1]]), L.T(B[:1])),
    scatter_add_fn=lambda L: L.m.scatter_add(L.T(A), 0, L.I([[1, 1, 1, 1]]), L.T(B[:1])),
    index_select_rep=lambda L: L.T(A).index_select(1, L.I([3, 0, 3])),
    index_select_fn=lambda L: L.m.index_select(L.T(A), 0, L.I([2, 2])),
    index_select_2d_raises=lambda L: L.T(A).index_select(0, L.I([[0, 1]])),
    index_select_oob_raises=lambda L: L.T(A).index_select(0, L.I([3])),
    take_flat=lambda L: L.T(A).take(L.I([[0, 5], [11, 5]])),
    take_neg=lambda L: L.T(A).take(L.I([-1, -12])),
    take_oob_raises=lambda L: L.T(A).take(L.I([12])),
    take_along_dim=lambda L: L.T(A).take_along_dim(L.I(GI), dim=1),
    take_along_dim_flat=lambda L: L.T(A).take_along_dim(L.I([11, 0, 5])),
    take_along_dim_argsort=lambda L: L.m.take_along_dim(L.T(A), L.T(A, rg=False).argsort(0), 0),
    masked_select=lambda L: L.T(A).masked_select(L.B(A > 0)),
    masked_select_bcast=lambda L: L.T(A).masked_select(L.B([True, False, False, True])),
    masked_select_fn=lambda L: L.m.masked_select(L.T(C3), L.B(C3 > 0.5)),
    masked_select_mask_bigger=lambda L: L.T(V4).masked_select(L.B(A > 0)),
    nonzero_2d=lambda L: L.T(np.round(A), rg=False).nonzero(),
    nonzero_as_tuple=lambda L: L.T(np.round(A), rg=False).nonzero(as_tuple=True),
    nonzero_0d=lambda L: L.T(2.0, rg=False).nonzero(),
    nonzero_0d_tuple=lambda L: L.T(2.0, rg=False).nonzero(as_tuple=True),
    nonzero_0d_zero_tuple=lambda L: L.T(0.0, rg=False).nonzero(as_tuple=True),
    nonzero_empty=lambda L: L.T(np.zeros((2, 0)), rg=False).nonzero(),
    nonzero_bool=lambda L: L.B([[True, False], [False, True]]).nonzero(),
    argwhere=lambda L: L.m.argwhere(L.T(np.round(A), rg=False)),
)

E542 = RNG.standard_normal((5, 4, 2))
E342 = RNG.standard_normal((3, 4, 2))

# matrix products: shapes and the calls PyTorch refuses
progs(
    matmul_1d_1d=lambda L: L.m.matmul(L.T(V4), L.T(W4)),
    matmul_1d_3d=lambda L: L.m.matmul(L.T(V3), L.T(np.ones((2, 3, 5)) * 0.5)),
    matmul_3d_1d=lambda L: L.T(C3) @ L.T(V4),
    matmul_bcast_4d=lambda L: L.T(np.ones((2, 1, 3, 4)) + C3[0]) @ L.T(E542),
    matmul_bad_raises=lambda L: L.T(A) @ L.T(B),
    matmul_0d_raises=lambda L: L.m.matmul(L.T(2.0), L.T(V4)),
    mm=lambda L: L.T(A).mm(L.T(D3[0])),
    mm_fn=lambda L: L.m.mm(L.T(A), L.T(B.T)),
    mm_1d_raises=lambda L: L.T(A).mm(L.T(V4)),
    mm_3d_raises=lambda L: L.m.mm(L.T(C3), L.T(D3)),
    bmm=lambda L: L.T(C3).bmm(L.T(D3)),
    bmm_fn=lambda L: L.m.bmm(L.T(C3), L.T(D3)),
    bmm_bcast_raises=lambda L: L.T(C3).bmm(L.T(D3[:1])),
    bmm_2d_raises=lambda L: L.T(A).bmm(L.T(B.T)),
    mv=lambda L: L.T(A).mv(L.T(V4)),
    mv_fn=lambda L: L.m.mv(L.T(A), L.T(V4)),
    mv_2d_raises=lambda L: L.T(A).mv(L.T(B.T)),
    mv_3d_raises=lambda L: L.T(C3).mv(L.T(V4)),
    dot=lambda L: L.T(V4).dot(L.T(W4)),
    dot_fn=lambda L: L.m.dot(L.T(V4), L.T(W4)),
    dot_2d_raises=lambda L: L.m.dot(L.T(A), L.T(B.T)),
    dot_method_2d_raises=lambda L: L.T(A).dot(L.T(V4)),
    dot_len_raises=lambda L: L.m.dot(L.T(V3), L.T(V4)),
    vdot=lambda L: L.m.vdot(L.T(V4), L.T(W4)),
    vdot_2d_raises=lambda L: L.m.vdot(L.T(A), L.T(B)),
    inner_2d=lambda L: L.m.inner(L.T(A), L.T(B)),
    tensordot_dims=lambda L: L.m.tensordot(L.T(C3), L.T(D3), dims=([1, 2], [2, 1])),
    tensordot_int=lambda L: L.m.tensordot(L.T(C3), L.T(E342), dims=2),
    matmul_method_1d_2d=lambda L: L.T(V3).matmul(L.T(A)),
)


# tg.* functions whose NumPy spelling is the same: PyTorch's meaning on Tensors
progs(
    fn_cumsum_no_dim_2d_raises=lambda L: L.m.cumsum(L.T(A)),
    fn_cumprod_no_dim_2d_raises=lambda L: L.m.cumprod(L.T(A)),
    cumsum_method_no_dim_raises=lambda L: L.T(A).cumsum(),
    fn_flip_no_dims_raises=lambda L: L.m.flip(L.T(A)),
    fn_logsumexp_no_dim_raises=lambda L: L.m.logsumexp(L.T(A)),
    fn_softmax_dim=lambda L: L.m.softmax(L.T(A), 0),
    fn_log_softmax_dim=lambda L: L.m.log_softmax(L.T(A), dim=-1),
    fn_max_pos=lambda L: L.m.max(L.T(A), 1),
    fn_max_fields=lambda L: L.m.max(L.T(A), dim=0).indices,
    fn_amax_tuple=lambda L: L.m.amax(L.T(C3), (0, 2)),
    fn_split_size=lambda L: L.m.split(L.T(np.arange(10.0)), 4),
    fn_split_sections=lambda L: L.m.split(L.T(A), [1, 3], 1),
    fn_chunk=lambda L: L.m.chunk(L.T(np.arange(10.0)), 3),
    fn_tensor_split=lambda L: L.m.tensor_split(L.T(np.arange(10.0)), 3),
    fn_stack_dim=lambda L: L.m.stack([L.T(V4), L.T(W4)], 1),
    fn_cat_dim=lambda L: L.m.cat([L.T(A), L.T(B)], -1),
    fn_where_scalar_other=lambda L: L.m.where(L.B(A > 0), L.T(A), 0.0),
    fn_diff=lambda L: L.m.diff(L.T(A), dim=0),
    fn_diff_pos=lambda L: L.m.diff(L.T(A), 2, 1),
    fn_clamp_tensor_max=lambda L: L.m.clamp(L.T(A), max=L.T(B)),
    fn_abs=lambda L: L.m.abs(L.T(A)),
    fn_exp2=lambda L: L.m.exp2(L.T(A)),
    fn_sinc=lambda L: L.m.sinc(L.T([0.0, 0.5, -1.5, 2.25])),
    fn_logit=lambda L: L.m.logit(L.T([0.25, 0.5, 0.9])),
    fn_signbit=lambda L: L.m.signbit(L.T([-0.0, 0.0, -1.0, np.nan])),
    fn_fmax=lambda L: L.m.fmax(L.T([1.0, np.nan, 3.0]), L.T([np.nan, 2.0, 4.0])),
    fn_square_int=lambda L: L.m.square(L.I([-3, 4])),
    fn_prod_dtype=lambda L: L.m.prod(L.I([[1, 2], [3, 4]]), 1, dtype=L.m.float64),
    fn_amin_keep_kw=lambda L: L.m.amin(L.T(A), dim=1, keepdim=True),
    fn_sum_dim_list=lambda L: L.m.sum(L.T(C3), dim=[0, 2]),
    fn_mean_neg_tuple_keep=lambda L: L.m.mean(L.T(C3), (-1, -2), True),
    fn_norm_dim_tuple=lambda L: L.m.norm(L.T(C3), dim=(1, 2)),
    fn_norm_p_inf=lambda L: L.m.norm(L.T(A), float("inf")),
    fn_median_all_even=lambda L: L.m.median(L.T([[4.0, 1.0], [3.0, 2.0]])),
    fn_sort_stable_kw=lambda L: L.m.sort(L.T(TIES), dim=1, descending=True, stable=True),
    fn_argsort_stable=lambda L: L.m.argsort(L.T(TIES), dim=0, stable=True),
    fn_topk_kw=lambda L: L.m.topk(L.T(A), k=3, dim=1, largest=True),
    fn_kthvalue_kw=lambda L: L.m.kthvalue(L.T(A), k=1, dim=0),
    fn_cummax_neg=lambda L: L.m.cummax(L.T([[1.0, 3.0, 2.0], [0.0, 0.0, 5.0]]), -1),
    fn_squeeze_tuple=lambda L: L.m.squeeze(L.T(np.ones((1, 3, 1))), (0, 2)),
    fn_unsqueeze_neg=lambda L: L.m.unsqueeze(L.T(A), -3),
    fn_transpose_dims=lambda L: L.m.transpose(L.T(C3), 0, 2),
    fn_permute=lambda L: L.m.permute(L.T(C3), (2, 0, 1)),
    fn_reshape=lambda L: L.m.reshape(L.T(C3), (4, -1)),
    fn_tile=lambda L: L.m.tile(L.T(A), (2,)),
    fn_broadcast_to=lambda L: L.m.broadcast_to(L.T(V4), (2, 4)),
    fn_tril_neg=lambda L: L.m.tril(L.T(C3), -1),
    fn_searchsorted_right=lambda L: L.m.searchsorted(
        L.T([1.0, 2.0, 2.0, 3.0], rg=False), L.T([2.0, 0.0, 4.0], rg=False), right=True
    ),
)

# more positional / keyword forms of the methods
progs(
    max_pos_keep=lambda L: L.T(A).max(1, True),
    min_pos=lambda L: L.T(A).min(0),
    max_other=lambda L: L.T(A).max(L.T(V4)),
    std_dim_none_kw=lambda L: L.T(A).std(dim=None, correction=0),
    var_dim_neg_list=lambda L: L.T(C3).var([-1, 0]),
    sum_bool_dim_keep=lambda L: L.B(C3 > 0).sum(-1, True),
    prod_dtype_kw=lambda L: L.I([[1, 2], [3, 4]]).prod(1, dtype=L.m.float64),
    cumprod_pos_dtype=lambda L: L.I([[1, 2], [3, 4]]).cumprod(0, dtype=L.m.float64),
    norm_p_str=lambda L: L.T(A).norm("fro", 1, True),
    norm_frac_p=lambda L: L.T(POS).norm(0.5, 1),
    logsumexp_tuple_keep=lambda L: L.T(C3).logsumexp((0, 2), True),
    argmax_no_dim_keep=lambda L: L.T(A).argmax(keepdim=True),
    squeeze_multi_tuple=lambda L: L.T(np.ones((1, 3, 1, 1))).squeeze((0, -1)),
    roll_neg_dim_tuple=lambda L: L.T(C3).roll(shifts=(2,), dims=(-1,)),
    repeat_0=lambda L: L.T(A).repeat(0, 2),
    expand_same=lambda L: L.T(A).expand(3, 4),
    expand_0d_to_empty=lambda L: L.T(2.0).expand(0, 3),
    unflatten_0=lambda L: L.T(A).unflatten(0, (3, 1)),
    movedim_list=lambda L: L.T(C3).movedim([0, 2], [2, 0]),
    diag_embed_default=lambda L: L.T(A).diag_embed(),
    t_1d=lambda L: L.T(V4).t(),
    mT_3d=lambda L: L.T(C3).mT,
    T_3d=lambda L: L.T(C3).permute(2, 1, 0),
    narrow_tensor_start=lambda L: L.T(A).narrow(0, L.I(1), 2),
    select_neg=lambda L: L.T(C3).select(-1, -2),
    unbind_dim1=lambda L: L.T(A).unbind(1),
    chunk_dim1=lambda L: L.T(A).chunk(3, 1),
    split_list_dim=lambda L: L.T(A).split([3, 1], 1),
    flip_no_dims_raises=lambda L: L.T(A).flip(),
    flip_empty_dims=lambda L: L.T(A).flip(()),
)


# ---- classification ------------------------------------------------------------------------

# PyTorch computes these in float32 (its default for integer inputs, or .float()); tapegrad in
# float64 (its only differentiable float): compared to float32's rounding
F32 = {"logsumexp_int", "div_int_true", "pow_int_float_exp", "float_of_f64"}

# (c) PyTorch raises, tapegrad gives NumPy's (documented) number: the number is asserted
ACCEPTS = {
    "trace_3d_raises": lambda: np.trace(C3),  # NumPy's trace of stacked matrices
    "cross_bcast": lambda: np.cross(A[:, :3], V3),  # broadcasts the batch dims
    "arange_empty": lambda: np.arange(3, 1),
    "arange_wrong_sign_raises": lambda: np.arange(0, 3, -1),
    "numpy_rg_raises": lambda: A,  # the value, without gradient
    "fn_cumsum_no_dim_2d_raises": lambda: np.cumsum(A),  # dim=None: flattened, as NumPy's
    "fn_cumprod_no_dim_2d_raises": lambda: np.cumprod(A),
    "cumsum_method_no_dim_raises": lambda: np.cumsum(A),
    "fn_logsumexp_no_dim_raises": lambda: np.log(np.exp(A).sum()),
}

# (d) PyTorch computes, tapegrad refuses with an error naming the function or the fix
REFUSED = {
    "numpy_rg_force": "force",
    "to_float32_rg": "float64 values only",
    "scatter_reduce_mul": "reduce='multiply'",
    "scatter_reduce_add": "scatter_add",
    "pow_int_tensor_neg_raises": "negative integer powers",
}

# (e) both raise (every other program named *_raises)
BOTH_RAISE = [n for n in P if n.endswith("_raises") and n not in ACCEPTS and n not in REFUSED]

AGREE = [n for n in P if n not in ACCEPTS and n not in REFUSED and n not in BOTH_RAISE]


def _compare_briefly(name):
    """_compare, failing with a one-frame traceback."""
    __tracebackhide__ = True
    tol = dict(rtol=1e-6, atol=1e-7) if name in F32 else {}
    try:
        _compare(P[name], **tol)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{type(e).__name__}: {e}") from None


@pytest.mark.parametrize("name", AGREE)
def test_agrees_with_torch(name):
    _compare_briefly(name)


@pytest.mark.parametrize("name", BOTH_RAISE)
def test_raises_where_torch_raises(name):
    assert _raises(P[name], "torch") is not None
    assert _raises(P[name], "tg") is not None


@pytest.mark.parametrize("name", list(ACCEPTS))
def test_numpys_number_where_torch_raises(name):
    assert _raises(P[name], "torch") is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = P[name](_Lib("tg"))
    got = out if isinstance(out, np.ndarray) else out.detach().numpy()
    want = ACCEPTS[name]()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(REFUSED))
def test_refuses_with_a_message(name):
    assert _raises(P[name], "torch") is None
    err = _raises(P[name], "tg")
    assert err is not None, f"{name}: tapegrad computes it now; compare it instead"
    assert REFUSED[name] in str(err)


def test_logcumsumexp_at_plus_inf_has_the_limit_gradient():
    """logcumsumexp([1, inf, 2]): d out_j / d x_i is exp(x_i - out_j) -> 1 at x_i = +inf and
    0 elsewhere in the lanes it dominates (the limit); PyTorch gives NaN (inf - inf) there."""
    x = tg.tensor([1.0, np.inf, 2.0], requires_grad=True)
    y = x.logcumsumexp(0)
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, np.inf, np.inf])
    w = np.array([0.5, -2.0, 3.0])
    (y * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 1.0, 0.0], rtol=1e-12)


def test_einsum_sublist_form_in_numpy_code():
    """The sublist form is NumPy's too: inside tg.grad of NumPy code it differentiates."""
    a = RNG.standard_normal((3, 4))
    g = tg.grad(lambda x: tg.einsum(x, [0, 1], x, [0, 1], []))(a)
    np.testing.assert_allclose(g, 2 * a, rtol=1e-12)


def test_every_program_is_classified():
    for names in (ACCEPTS, REFUSED, F32):
        assert set(names) <= set(P), set(names) - set(P)
