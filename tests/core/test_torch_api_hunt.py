"""PyTorch-API correctness hunt: small programs run in tapegrad and in PyTorch (float64).

Each program is written once against a small adapter ``L`` and run in both libraries. The
forward results must agree (values to rtol 1e-10, shapes, dtype kind, and the structure of
the result: tuples, and the fields of named tuples such as ``.values`` / ``.indices``), and so
must the gradients of a fixed random weighting of every float output with respect to every
input.  The inputs are chosen to probe edge cases the other torch comparisons do not: ties,
negative and tuple dims, keepdim, defaults, empty and 0-d tensors, non-contiguous views,
in-place writes on views, and ``out=``.

Disagreements are kept at the end as strict xfails that assert PyTorch's result.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_programs import _compare, _raises  # noqa: E402

import tapegrad as tg  # noqa: E402

RNG = np.random.default_rng(20240607)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
C3 = RNG.standard_normal((2, 3, 4))
SQ = RNG.standard_normal((4, 4))
SPD = SQ @ SQ.T + 4.0 * np.eye(4)
V4 = RNG.standard_normal(4)
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 5.0, -1.0]])
TIES1 = np.array([2.0, 1.0, 2.0, 1.0, 2.0])
POS = np.abs(A) + 0.5
NEG = np.array([[-7.0, 7.0, -7.5, 7.5], [-3.0, 3.0, -0.5, 0.25], [5.5, -5.5, 2.0, -2.0]])


# ---- programs ------------------------------------------------------------------------------
# Each entry: (id, program).  A program takes the adapter L and returns its result.

P = {}


def prog(name):
    def deco(f):
        assert name not in P, name
        P[name] = f
        return f

    return deco


def progs(**kw):
    for k, f in kw.items():
        assert k not in P, k
        P[k] = f


# reductions with ties, negative / tuple dims, keepdim, defaults
progs(
    max_dim_ties=lambda L: L.T(TIES).max(1),
    max_dim_neg_keep=lambda L: L.T(TIES).max(-1, keepdim=True),
    max_all_ties=lambda L: L.T(TIES).max(),
    min_dim_ties=lambda L: L.T(TIES).min(dim=-2),
    min_all_ties=lambda L: L.T(TIES).min(),
    amax_ties=lambda L: L.T(TIES).amax(1),
    amax_tuple=lambda L: L.T(TIES).amax((0, 1)),
    amax_default=lambda L: L.T(TIES).amax(),
    amin_ties_keep=lambda L: L.T(TIES).amin(-1, keepdim=True),
    amax_3d_tuple_neg=lambda L: L.T(np.round(C3)).amax((-1, 0)),
    aminmax_ties=lambda L: L.T(TIES).aminmax(dim=1),
    aminmax_all=lambda L: L.T(TIES).aminmax(),
    argmax_ties=lambda L: L.T(TIES).argmax(1),
    argmax_all_ties=lambda L: L.T(TIES).argmax(),
    argmin_ties_keep=lambda L: L.T(TIES).argmin(dim=0, keepdim=True),
    median_ties=lambda L: L.T(TIES).median(1),
    median_all_ties=lambda L: L.T(TIES).median(),
    median_1d_even=lambda L: L.T(TIES1[:4]).median(0),
    median_neg_keep=lambda L: L.T(TIES).median(-2, keepdim=True),
    nanmedian_ties=lambda L: L.T(np.where(TIES == 5.0, np.nan, TIES)).nanmedian(1),
    sort_ties=lambda L: L.T(TIES).sort(dim=1, stable=True),
    sort_ties_default=lambda L: L.T(TIES).sort(0),
    sort_ties_desc=lambda L: L.T(TIES).sort(dim=-1, descending=True, stable=True),
    argsort_ties_stable=lambda L: L.T(TIES).argsort(dim=1, stable=True),
    topk_ties=lambda L: L.T(TIES).topk(2, 1),
    topk_smallest_ties=lambda L: L.T(TIES).topk(3, largest=False),
    topk_dim0=lambda L: L.T(A).topk(2, 0),
    kthvalue_ties=lambda L: L.T(TIES).kthvalue(2, 1),
    kthvalue_neg_keep=lambda L: L.T(A).kthvalue(3, -2, True),
    kthvalue_default=lambda L: L.T(A).kthvalue(1),
    cummax_neg=lambda L: L.T(TIES).cummax(-1),
    cummin_ties=lambda L: L.T(TIES).cummin(0),
    sum_tuple_neg=lambda L: L.T(C3).sum((-1, 0)),
    sum_tuple_keep=lambda L: L.T(C3).sum((0, 2), keepdim=True),
    sum_list_dim=lambda L: L.T(C3).sum([0, 1]),
    mean_tuple_neg=lambda L: L.T(C3).mean((-2, -1), keepdim=True),
    prod_zero=lambda L: L.T([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [1.5, 2.0, -1.0]]).prod(1),
    prod_zero_all=lambda L: L.T([[1.0, 0.0, 2.0], [1.5, 2.0, -1.0]]).prod(),
    prod_keepdim=lambda L: L.T(A).prod(-1, keepdim=True),
    std_tuple=lambda L: L.T(C3).std((0, 2)),
    std_correction2=lambda L: L.T(C3).std(-1, correction=2, keepdim=True),
    var_tuple_unbiased_false=lambda L: L.T(C3).var((1, 2), unbiased=False),
    var_single_element=lambda L: L.T([[1.0], [2.0]]).var(1),
    var_mean_tuple=lambda L: L.m.var_mean(L.T(C3), (0, -1)),
    std_mean_correction=lambda L: L.m.std_mean(L.T(C3), 1, correction=0, keepdim=True),
    var_mean_grad_both=lambda L: tuple(L.m.var_mean(L.T(A), 1)),
    std_mean_fn=lambda L: L.m.std_mean(L.T(A), dim=0),
    logsumexp_tuple=lambda L: L.T(C3).logsumexp((0, 2)),
    logsumexp_neg_keep=lambda L: L.T(C3).logsumexp(-1, keepdim=True),
    logsumexp_inf=lambda L: L.T([[-np.inf, -np.inf], [1.0, -np.inf]]).logsumexp(1),
    cumsum_neg=lambda L: L.T(C3).cumsum(-2),
    cumprod_zero=lambda L: L.T([[1.0, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, 1.5]]).cumprod(1),
    cumprod_neg=lambda L: L.T(A).cumprod(-1),
    logcumsumexp_neg=lambda L: L.T(C3).logcumsumexp(-1),
    all_dim=lambda L: L.B(TIES > 1.5).all(1),
    any_neg_keep=lambda L: L.B(TIES > 4.0).any(-1, keepdim=True),
    all_float=lambda L: L.T(TIES, rg=False).all(),
    count_nonzero_tuple=lambda L: L.T(np.round(C3)).count_nonzero((0, 2)),
    nansum_all_nan=lambda L: L.T([[np.nan, np.nan], [1.0, np.nan]]).nansum(1),
    nanmean_all_nan=lambda L: L.T([[np.nan, np.nan], [1.0, np.nan]]).nanmean(1),
    nanmean_tuple=lambda L: L.T(np.where(C3 > 1, np.nan, C3)).nanmean((0, 2)),
    quantile_tuple_q=lambda L: L.T(A).quantile(L.T([0.1, 0.9], rg=False), dim=-1),
    quantile_ties=lambda L: L.T(TIES).quantile(0.5, dim=1, keepdim=True),
    norm_p1_dim=lambda L: L.T(A).norm(1, dim=-1),
    norm_inf_dim=lambda L: L.T(TIES).norm(float("inf"), dim=1),
    norm_fro_dim_tuple=lambda L: L.T(C3).norm("fro", dim=(1, 2)),
    norm_nuc=lambda L: L.T(A).norm("nuc"),
    norm_p0=lambda L: L.T(np.where(A > 0, A, 0.0)).norm(0, dim=1),
    norm_neg_inf=lambda L: L.T(TIES).norm(-float("inf")),
    norm_fn_fro_3d=lambda L: L.m.norm(L.T(C3), dim=(0, 2)),
)

# empty and 0-d tensors
progs(
    sum_empty=lambda L: L.T(np.zeros((0, 3))).sum(0),
    mean_empty=lambda L: L.T(np.zeros((0, 3))).mean(0),
    prod_empty=lambda L: L.T(np.zeros((0, 3))).prod(0),
    amax_empty_dim=lambda L: L.T(np.zeros((0, 3))).amax(1),
    cumsum_empty=lambda L: L.T(np.zeros((0, 3))).cumsum(0),
    logsumexp_empty=lambda L: L.T(np.zeros((2, 0))).logsumexp(1),
    std_empty=lambda L: L.T(np.zeros((0,))).std(),
    sort_empty=lambda L: L.T(np.zeros((0,))).sort(),
    cat_empty=lambda L: L.m.cat([L.T(np.zeros((0, 3))), L.T(A[:, :3])]),
    sum_0d=lambda L: L.T(2.5).sum(),
    sum_0d_dim=lambda L: L.T(2.5).sum(0),
    max_0d_dim=lambda L: L.T(2.5).max(0),
    cumsum_0d=lambda L: L.T(2.5).cumsum(0),
    softmax_0d=lambda L: L.T(2.5).softmax(0),
    unsqueeze_0d=lambda L: L.T(2.5).unsqueeze(-1),
    expand_0d=lambda L: L.T(2.5).expand(3, 2),
    std_0d=lambda L: L.T(2.5).std(),
    argmax_0d=lambda L: L.T(2.5).argmax(),
    flatten_0d=lambda L: L.T(2.5).flatten(),
    reshape_0d=lambda L: L.T([2.5]).reshape(()),
    item_sum=lambda L: L.T(A).sum().item(),
    view_minus1_0d=lambda L: L.T(2.5).view(-1),
    squeeze_0d=lambda L: L.T(2.5).squeeze(0),
    t_0d=lambda L: L.T(2.5).t(),
    norm_0d=lambda L: L.T(-2.5).norm(),
    topk_0d=lambda L: L.T(2.5).topk(1),
    sort_0d=lambda L: L.T(2.5).sort(),
    median_0d=lambda L: L.T(2.5).median(),
    numel_empty=lambda L: L.T(np.zeros((0, 3))).numel(),
)

# non-contiguous inputs
progs(
    t_cumsum=lambda L: L.T(A).t().cumsum(1),
    t_view_err_reshape=lambda L: L.T(A).t().reshape(-1),
    t_flatten=lambda L: L.T(A).t().flatten(),
    step_slice_sort=lambda L: L.T(A)[:, ::2].sort(0),
    step_slice_max=lambda L: L.T(A)[:: -1 if False else 2, 1::2].max(1),
    permute_sum=lambda L: L.T(C3).permute(2, 0, 1).sum(-1),
    permute_reshape=lambda L: L.T(C3).permute(1, 2, 0).reshape(3, 8),
    permute_gather=lambda L: L.T(C3).permute(2, 1, 0).gather(1, L.I([[[0, 1]], [[2, 0]]])),
    t_matmul=lambda L: L.T(A).t() @ L.T(B),
    t_cummax=lambda L: L.T(TIES).t().cummax(0),
    t_std=lambda L: L.T(A).t().std(0),
    narrow_t=lambda L: L.T(A).t().narrow(0, 1, 2),
    diagonal_t=lambda L: L.T(SQ).t().diagonal(1),
    transpose_contiguous=lambda L: L.T(C3).transpose(0, 2).contiguous().view(4, 6),
)


# in-place writes on views
def _inplace(f):
    def program(L):
        base = L.T(A) * 1.0
        f(L, base)
        return base

    return program


progs(
    ip_add_view=_inplace(lambda L, b: b[1].add_(L.T(V4), alpha=2.0)),
    ip_clamp_view=_inplace(lambda L, b: b[:, 1:3].clamp_(-0.3, 0.3)),
    ip_clamp_tensor_view=_inplace(lambda L, b: b[:, 1:3].clamp_(min=L.T(B[:, :2]))),
    ip_masked_fill_t=_inplace(lambda L, b: b.t().masked_fill_(L.B(A.T > 0), -1.0)),
    ip_index_add_view=_inplace(lambda L, b: b[:, ::2].index_add_(1, L.I([1, 1, 0]), L.T(B[:, :3]))),
    ip_scatter_view=_inplace(lambda L, b: b[1:].scatter_(1, L.I([[2], [0]]), L.T([[9.0], [8.0]]))),
    ip_copy_view=_inplace(lambda L, b: b[:, 0].copy_(L.T([1.0, 2.0, 3.0]))),
    ip_copy_broadcast=_inplace(lambda L, b: b[1:].copy_(L.T(V4))),
    ip_zero_view=_inplace(lambda L, b: b[::2, 1::2].zero_()),
    ip_fill_view=_inplace(lambda L, b: b.t()[1].fill_(7.0)),
    ip_fill_tensor=_inplace(lambda L, b: b[0].fill_(L.T(3.0))),
    ip_mul_diag=_inplace(lambda L, b: b.diagonal().mul_(L.T([2.0, 3.0, 4.0]))),
    ip_transpose_view_add=_inplace(lambda L, b: b.T[2].add_(1.0)),
    ip_chained=_inplace(lambda L, b: b[0].mul_(2.0).add_(L.T(V4)).clamp_(max=0.5)),
    ip_setitem_tensor=_inplace(lambda L, b: b.__setitem__((slice(None), 1), L.T([1.0, 2.0, 3.0]))),
    ip_setitem_mask=_inplace(lambda L, b: b.__setitem__(L.B(A > 0), 0.0)),
    ip_view_of_view=_inplace(lambda L, b: b.view(2, 6)[1, 2:5].mul_(L.T([1.0, 2.0, 3.0]))),
    ip_unsqueeze_view=_inplace(lambda L, b: b.unsqueeze(0)[0, 2].sub_(L.T(V4))),
    ip_div_rounding=_inplace(lambda L, b: b.div_(L.T(POS), rounding_mode=None)),
    ip_pow_view=_inplace(lambda L, b: b[0].pow_(2)),
    ip_lerp_view=_inplace(lambda L, b: b[2].lerp_(L.T(V4), 0.25)),
    ip_masked_fill_tensor_value=_inplace(lambda L, b: b.masked_fill_(L.B(A > 0), L.T(0.5))),
    ip_index_fill_view=_inplace(lambda L, b: b[1:].index_fill_(1, L.I([0, 3]), 2.0)),
    ip_scatter_add_t=_inplace(
        lambda L, b: b.t().scatter_add_(0, L.I([[0, 1, 2]]), L.T([[1.0, 2.0, 3.0]]))
    ),
    ip_expand_read_then_write=_inplace(lambda L, b: b.add_(b[0:1].expand(3, 4).clone())),
)

# shapes, views and index ops
progs(
    view_neg=lambda L: L.T(C3).view(-1, 4),
    reshape_t=lambda L: L.T(A).t().reshape(2, 6),
    flatten_range=lambda L: L.T(C3).flatten(1, 2),
    flatten_neg=lambda L: L.T(C3).flatten(-2),
    flatten_same=lambda L: L.T(C3).flatten(1, 1),
    unflatten_neg=lambda L: L.T(C3).unflatten(-1, (2, -1)),
    squeeze_tuple=lambda L: L.T(np.ones((1, 3, 1))).squeeze((0, 2)),
    squeeze_nonone=lambda L: L.T(A).squeeze(1),
    squeeze_neg=lambda L: L.T(np.ones((3, 1))).squeeze(-1),
    unsqueeze_neg2=lambda L: L.T(A).unsqueeze(-2),
    expand_neg=lambda L: L.T(A[:, :1]).expand(-1, 5),
    expand_new_dims=lambda L: L.T(V4).expand(2, 3, 4),
    expand_as=lambda L: L.T(V4).expand_as(L.T(A, rg=False)),
    repeat_more_dims=lambda L: L.T(V4).repeat(2, 1, 2),
    repeat_t=lambda L: L.T(A).t().repeat(1, 2),
    repeat_interleave_tensor=lambda L: L.T(A).repeat_interleave(L.I([1, 0, 2]), dim=0),
    repeat_interleave_flat=lambda L: L.T(A).repeat_interleave(2),
    repeat_interleave_neg=lambda L: L.T(A).repeat_interleave(2, dim=-1),
    repeat_interleave_fn_int=lambda L: L.m.repeat_interleave(L.I([1, 2, 3]), 2),
    tile_fewer=lambda L: L.T(C3).tile((2,)),
    tile_more=lambda L: L.T(V4).tile((2, 1, 2)),
    roll_flat=lambda L: L.T(A).roll(5),
    roll_neg_dim=lambda L: L.T(A).roll(-1, -1),
    roll_tuple=lambda L: L.T(C3).roll((1, 2), (0, -1)),
    flip_neg=lambda L: L.T(C3).flip(-1),
    flip_list=lambda L: L.T(C3).flip([0, 2]),
    narrow_neg=lambda L: L.T(A).narrow(-1, 1, 3),
    narrow_start_tensor=lambda L: L.T(A).narrow(0, L.I(1), 2),
    chunk_uneven=lambda L: L.T(np.arange(10.0)).chunk(4),
    chunk_neg=lambda L: L.T(C3).chunk(3, -1),
    chunk_more_than_size=lambda L: L.T(A).chunk(5, 0),
    split_size=lambda L: L.T(np.arange(10.0)).split(3),
    split_list_neg=lambda L: L.T(C3).split([1, 3], -1),
    split_fn=lambda L: L.m.split(L.T(np.arange(10.0)), 4),
    split_fn_dim=lambda L: L.m.split(L.T(A), 2, dim=1),
    split_fn_list=lambda L: L.m.split(L.T(A), [1, 2]),
    tensor_split_int=lambda L: L.T(np.arange(7.0)).tensor_split(3),
    tensor_split_idx=lambda L: L.T(A).tensor_split((1, 3), dim=1),
    tensor_split_tensor=lambda L: L.T(A).tensor_split(L.I([1, 3]), dim=1),
    tensor_split_tensor_sections=lambda L: L.T(A).tensor_split(L.I(2), dim=1),
    unbind_neg=lambda L: L.T(C3).unbind(-1),
    movedim_neg=lambda L: L.T(C3).movedim(-1, 0),
    swapaxes_neg=lambda L: L.T(C3).swapaxes(-1, 0),
    transpose_neg=lambda L: L.T(C3).transpose(-1, -3),
    permute_neg=lambda L: L.T(C3).permute(-1, 0, 1),
    diag_matrix_neg=lambda L: L.T(A).diag(-1),
    diag_vector_offset=lambda L: L.T(V4).diag(-2),
    diag_embed_neg_dims=lambda L: L.T(A).diag_embed(0, -2, -1),
    diag_embed_offset=lambda L: L.T(V4).diag_embed(-1),
    diagonal_neg_dims=lambda L: L.T(C3).diagonal(0, -1, -2),
    diagonal_offset_3d=lambda L: L.T(C3).diagonal(1, 0, 2),
    tril_3d=lambda L: L.T(C3).tril(1),
    triu_3d_neg=lambda L: L.T(C3).triu(-1),
    tril_nonsquare=lambda L: L.T(A.T).tril(-1),
    trace_nonsquare=lambda L: L.T(A).trace(),
    gather_neg=lambda L: L.T(A).gather(-1, L.I([[0, 0], [3, 1], [2, 2]])),
    gather_smaller=lambda L: L.T(A).gather(0, L.I([[2, 0, 1]])),
    scatter_value=lambda L: L.T(A).scatter(0, L.I([[2, 0, 1, 1]]), 0.5),
    scatter_reduce_add=lambda L: L.T(A).scatter(
        1, L.I([[0, 0], [1, 1], [3, 3]]), L.T(B[:, :2]), reduce="add"
    ),
    index_select_neg=lambda L: L.T(A).index_select(-1, L.I([3, 3, 0])),
    index_select_0d_idx=lambda L: L.T(A).index_select(0, L.I([2])),
    index_add_alpha_neg=lambda L: L.T(A).index_add(-1, L.I([0, 0]), L.T(B[:, :2]), alpha=-0.5),
    index_copy_neg=lambda L: L.T(A).index_copy(-1, L.I([3, 1]), L.T(B[:, :2])),
    masked_select_broadcast=lambda L: L.T(A).masked_select(L.B([True, False, True, True])),
    masked_fill_broadcast=lambda L: L.T(A).masked_fill(L.B([[True], [False], [True]]), -2.0),
    masked_fill_tensor_value=lambda L: L.T(A).masked_fill(L.B(A > 0), L.T(0.25)),
    masked_scatter_broadcast=lambda L: L.T(A).masked_scatter(
        L.B([True, False, False, True]), L.T(B)
    ),
    take_neg=lambda L: L.T(A).take(L.I([[-1, 0], [5, -12]])),
    take_along_dim_neg=lambda L: L.T(A).take_along_dim(L.I([[3], [0], [1]]), -1),
    take_along_dim_bcast=lambda L: L.T(A).take_along_dim(L.I([[3, 0]]), 1),
    take_along_dim_none=lambda L: L.m.take_along_dim(L.T(A), L.I([11, 0, 5])),
    where_method=lambda L: L.T(A).where(L.B(A > 0), L.T(B)),
    where_fn_scalar=lambda L: L.m.where(L.B(A > 0), L.T(A), 0.0),
    where_fn_bcast=lambda L: L.m.where(L.B([True, False, True, False]), L.T(A), L.T(V4)),
    where_one_arg=lambda L: L.m.where(L.B(A > 0)),
    nonzero_tuple=lambda L: L.T(np.where(A > 0, A, 0.0)).nonzero(as_tuple=True),
    nonzero_1d=lambda L: L.T([0.0, 1.0, 0.0, 2.0]).nonzero(),
    argwhere_3d=lambda L: L.m.argwhere(L.T(np.round(C3), rg=False)),
    select_neg=lambda L: L.T(C3).select(-1, -1),
    getitem_int_tensor=lambda L: L.T(A)[L.I([2, 0, 2])],
    getitem_bool=lambda L: L.T(A)[L.B(A > 0)],
    getitem_two_int=lambda L: L.T(A)[L.I([0, 2]), L.I([1, 3])],
    getitem_ellipsis=lambda L: L.T(C3)[..., 1],
    getitem_none=lambda L: L.T(A)[None, :, None, 1],
    getitem_list=lambda L: L.T(A)[[0, 2]],
    getitem_mixed=lambda L: L.T(C3)[:, L.I([0, 2]), 1:3],
    getitem_sep_adv=lambda L: L.T(C3)[L.I([0, 1]), :, L.I([1, 2])],
    getitem_bool_row=lambda L: L.T(A)[L.B([True, False, True])],
    view_as_reshape=lambda L: L.T(A).reshape_as(L.T(np.zeros((4, 3)), rg=False)),
)

# elementwise
progs(
    clamp_tensor=lambda L: L.T(A).clamp(L.T(B * 0.5), L.T(B * 0.5 + 0.7)),
    clamp_tensor_min_only=lambda L: L.T(A).clamp(min=L.T(B)),
    clamp_crossed=lambda L: L.T(A).clamp(0.5, -0.5),
    clamp_crossed_tensor=lambda L: L.T(A).clamp(
        L.T(np.full((3, 4), 0.5)), L.T(np.full((3, 4), -0.5))
    ),
    clamp_at_bound=lambda L: L.T([[0.5, -0.5, 0.1]]).clamp(-0.5, 0.5),
    clamp_at_tensor_bound=lambda L: L.T([[0.5, -0.5, 0.1]]).clamp(
        L.T([[0.5, -0.6, 0.1]]), L.T([[0.7, -0.5, 0.1]])
    ),
    clamp_fn_tensor=lambda L: L.m.clamp(L.T(A), max=L.T(B)),
    clamp_int=lambda L: L.I([[1, 5, -3]]).clamp(0, 2),
    clamp_int_float_bound=lambda L: L.I([[1, 5, -3]]).clamp(0.5, 2.5),
    lerp_tensor_w=lambda L: L.T(A).lerp(L.T(B), L.T(POS / 3)),
    lerp_0d=lambda L: L.T(A).lerp(L.T(B), L.T(0.3)),
    addcmul_bcast=lambda L: L.T(A).addcmul(L.T(V4), L.T(B[:, :1]), value=-2.0),
    addcdiv_bcast=lambda L: L.T(A).addcdiv(L.T(V4), L.T(POS[:, :1]), value=0.5),
    hypot_zero=lambda L: L.T([0.0, 3.0, -1.0]).hypot(L.T([0.0, 4.0, 0.0])),
    atan2_zero=lambda L: L.T([0.0, 1.0, -1.0, 0.0]).atan2(L.T([1.0, 0.0, -2.0, -1.0])),
    fmod_neg=lambda L: L.T(NEG).fmod(L.T(np.full((3, 4), 2.0))),
    fmod_neg_scalar=lambda L: L.T(NEG).fmod(-2.0),
    remainder_neg=lambda L: L.T(NEG).remainder(L.T(np.full((3, 4), -2.0))),
    remainder_neg_scalar=lambda L: L.T(NEG).remainder(3.0),
    remainder_int=lambda L: L.I([[-7, 7, -8, 8]]).remainder(-3),
    fmod_int=lambda L: L.I([[-7, 7, -8, 8]]).fmod(-3),
    fmod_int_tensor=lambda L: L.I([[-7, 7, -8, 8]]).fmod(L.I([[3, -3, 3, 5]])),
    remainder_fn=lambda L: L.m.remainder(L.T(NEG), 2.5),
    mod_op=lambda L: L.T(NEG) % -2.0,
    floordiv_op=lambda L: L.T(NEG, rg=False) // -2.0,
    floordiv_int=lambda L: L.I([[-7, 7, -8, 8]]) // L.I([[2, -2, 3, 3]]),
    floor_divide_int=lambda L: L.I([[-7, 7, -8, 8]]).floor_divide(2),
    true_divide_int=lambda L: L.I([[-7, 7, -8, 8]]).true_divide(2),
    div_int=lambda L: L.I([[-7, 7, -8, 8]]).div(2),
    div_int_trunc=lambda L: L.I([[-7, 7, -8, 8]]).div(2, rounding_mode="trunc"),
    div_int_floor=lambda L: L.I([[-7, 7, -8, 8]]).div(L.I([2, -2, 3, 3]), rounding_mode="floor"),
    div_float_floor=lambda L: L.T(NEG, rg=False).div(-2.0, rounding_mode="floor"),
    truediv_int=lambda L: L.I([[-7, 7, -8, 8]]) / 2,
    int_times_float=lambda L: L.I([[1, 2]]) * 1.5,
    int_add_float_tensor=lambda L: L.I([1, 2, 3]) + L.T([0.5, 0.5, 0.5]),
    int_pow_neg=lambda L: L.I([1, 2, 3]).pow(2),
    pow_tensor_exp=lambda L: L.T(POS).pow(L.T(B)),
    pow_scalar_base=lambda L: L.m.pow(2.0, L.T(A)),
    rpow=lambda L: 2.0 ** L.T(A),
    pow_zero_base=lambda L: L.T([0.0, 0.0, 2.0]).pow(L.T([2.0, 0.0, 0.5])),
    pow_zero_exp0=lambda L: L.T([0.0, 1.0, -2.0]).pow(0.0),
    pow_neg_int_exp=lambda L: L.T([-2.0, 1.5, -0.5]).pow(3),
    pow_half_at_zero=lambda L: L.T([0.0, 4.0]).pow(0.5),
    xlogy_zero=lambda L: L.T([0.0, 0.0, 2.0]).xlogy(L.T([0.0, 3.0, 3.0])),
    xlogy_scalar_other=lambda L: L.m.xlogy(L.T([0.0, 1.5]), 2.0),
    xlogy_nan=lambda L: L.T([0.0, 0.0]).xlogy(L.T([np.nan, 1.0])),
    sigmoid_big=lambda L: L.T([-800.0, -30.0, 0.0, 30.0, 800.0]).sigmoid(),
    logit_eps=lambda L: L.T([0.0, 0.05, 0.5, 0.99, 1.0]).logit(0.1),
    logit_no_eps_edge=lambda L: L.T([0.0, 0.5, 1.0]).logit(),
    erfinv_edge=lambda L: L.T([-1.0, -0.5, 0.0, 0.999]).erfinv(),
    sign_zero=lambda L: L.T([-2.0, 0.0, -0.0, 3.0, np.nan]).sign(),
    frac_neg=lambda L: L.T([-2.5, -0.25, 1.75, 3.0]).frac(),
    trunc_neg=lambda L: L.T([-2.5, -0.25, 1.75]).trunc(),
    round_half_even=lambda L: L.T([0.5, 1.5, 2.5, -0.5, -1.5]).round(),
    round_decimals=lambda L: L.T([1.2345, -2.675, 0.125, 1234.5]).round(decimals=2),
    round_decimals_neg=lambda L: L.T([1234.5, -2675.0, 150.0]).round(decimals=-2),
    round_fn_decimals=lambda L: L.m.round(L.T([1.2345, -2.675]), decimals=1),
    nan_to_num_default=lambda L: L.T([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(),
    nan_to_num_args=lambda L: L.T([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(0.5, 9.0, -9.0),
    nan_to_num_kw=lambda L: L.T([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(posinf=3.0),
    abs_zero=lambda L: L.T([-1.0, 0.0, 2.0]).abs(),
    relu_zero=lambda L: L.T([-1.0, 0.0, 2.0]).relu(),
    sqrt_zero=lambda L: L.T([0.0, 4.0]).sqrt(),
    maximum_ties=lambda L: L.T([1.0, 2.0, 3.0]).maximum(L.T([1.0, 0.0, 3.0])),
    minimum_ties=lambda L: L.m.minimum(L.T([1.0, 2.0, 3.0]), L.T([1.0, 0.0, 3.0])),
    max_binary_ties=lambda L: L.m.max(L.T([1.0, 2.0, 3.0]), L.T([1.0, 0.0, 3.0])),
    fmax_ties=lambda L: L.T([1.0, np.nan, 3.0]).fmax(L.T([1.0, 0.0, np.nan])),
    max_binary_nan=lambda L: L.T([1.0, np.nan]).maximum(L.T([np.nan, 0.0])),
    max_nan_dim=lambda L: L.T([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]]).max(1),
    max_nan_all=lambda L: L.T([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]]).max(),
    argmax_nan=lambda L: L.T([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]]).argmax(1),
    amax_nan=lambda L: L.T([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]]).amax(1),
    sort_nan=lambda L: L.T([[1.0, np.nan, -3.0, np.nan, 0.0]]).sort(1),
    sort_nan_desc=lambda L: L.T([[1.0, np.nan, -3.0, 0.0]]).sort(1, descending=True),
    topk_nan=lambda L: L.T([1.0, np.nan, -3.0, 0.0]).topk(2),
    median_nan=lambda L: L.T([[1.0, np.nan, -3.0], [0.0, 1.0, 2.0]]).median(1),
    median_nan_all=lambda L: L.T([1.0, np.nan, -3.0]).median(),
    cumsum_int=lambda L: L.I([[1, 2], [3, 4]]).cumsum(0),
    cumsum_dtype=lambda L: L.I([[1, 2], [3, 4]]).cumsum(1, dtype=L.m.float64),
    sum_int=lambda L: L.B([[True, False], [True, True]]).sum(1),
    prod_int=lambda L: L.I([[1, 2], [3, 4]]).prod(1),
    mean_dtype=lambda L: L.I([[1, 2], [3, 4]]).mean(dtype=L.m.float64),
    max_int=lambda L: L.I([[1, 5], [3, 4]]).max(0),
    eq_scalar=lambda L: L.T(A, rg=False).eq(0.0),
    isclose_nan=lambda L: L.T([np.nan, 1.0]).isclose(L.T([np.nan, 1.0]), equal_nan=True),
    sigmoid_fn=lambda L: L.m.sigmoid(L.T(A)),
    softmax_neg=lambda L: L.T(C3).softmax(-2),
    log_softmax_fn=lambda L: L.m.log_softmax(L.T(C3), dim=0),
    softmax_inf=lambda L: L.T([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, 2.0]]).softmax(1),
    log_softmax_inf=lambda L: L.T([[-np.inf, 0.0, 1.0]]).log_softmax(1),
)

M23 = RNG.standard_normal((2, 3))
M34 = RNG.standard_normal((3, 4))
B234 = RNG.standard_normal((2, 3, 4))
B243 = RNG.standard_normal((2, 4, 3))
SYM = SQ + SQ.T
NS = RNG.standard_normal((4, 3))

R42 = RNG.standard_normal((4, 2))
R2134 = RNG.standard_normal((2, 1, 3, 4))
R542 = RNG.standard_normal((5, 4, 2))
R24 = RNG.standard_normal((2, 4))
R332 = RNG.standard_normal((3, 3, 2))
R233 = RNG.standard_normal((2, 3, 3))
R241 = RNG.standard_normal((2, 4, 1))
R43 = RNG.standard_normal((4, 3))
R43B = RNG.standard_normal((4, 3))

# linear algebra
progs(
    mm=lambda L: L.T(M23).mm(L.T(M34)),
    mm_t=lambda L: L.T(M34).t().mm(L.T(M34)),
    bmm_t=lambda L: L.T(B234).bmm(L.T(B234).transpose(1, 2)),
    matmul_bcast=lambda L: L.T(B234) @ L.T(R42),
    matmul_bcast_batch=lambda L: L.T(R2134) @ L.T(R542),
    matmul_vec_mat=lambda L: L.T(V4[:3]) @ L.T(M34),
    matmul_mat_vec=lambda L: L.T(M34).matmul(L.T(V4)),
    matmul_batch_vec=lambda L: L.T(B234).matmul(L.T(V4)),
    matmul_vec_batch=lambda L: L.m.matmul(L.T(V4[:3]), L.T(B234)),
    matmul_vec_vec=lambda L: L.T(V4) @ L.T(V4[::-1].copy()),
    mv=lambda L: L.T(M34).mv(L.T(V4)),
    dot=lambda L: L.m.dot(L.T(V4), L.T(V4 * 2)),
    outer_fn=lambda L: L.m.outer(L.T(V4), L.T(V4[:3])),
    addmm_bcast=lambda L: L.T(V4).addmm(L.T(M23.T), L.T(R24), beta=0.5, alpha=-1.0),
    addmm_fn=lambda L: L.m.addmm(L.T(V4), L.T(M34), L.T(SQ)),
    baddbmm_bcast=lambda L: L.T(np.ones(3)).baddbmm(L.T(B234), L.T(B243), beta=2.0),
    einsum_trace=lambda L: L.m.einsum("ii->", L.T(SQ)),
    einsum_diag=lambda L: L.m.einsum("ii->i", L.T(SQ)),
    einsum_batch=lambda L: L.m.einsum("bij,bjk->bik", L.T(B234), L.T(B243)),
    einsum_list=lambda L: L.m.einsum("ij,jk", [L.T(M23), L.T(M34)]),
    einsum_ellipsis=lambda L: L.m.einsum("...ij->...ji", L.T(B234)),
    einsum_outer_sum=lambda L: L.m.einsum("i,j->", L.T(V4), L.T(V4[:3])),
    einsum_repeated_in=lambda L: L.m.einsum("iij->j", L.T(np.ones((3, 3, 2)) + R332)),
    tensordot_dims_int=lambda L: L.m.tensordot(L.T(B234), L.T(B243.transpose(1, 2, 0)), dims=2),
    tensordot_dims_lists=lambda L: L.m.tensordot(L.T(B234), L.T(B243), dims=([0, 2], [0, 1])),
    det_batch=lambda L: L.linalg.det(L.T(R233)),
    det_singular=lambda L: L.linalg.det(L.T([[1.0, 2.0], [2.0, 4.0]])),
    det_method=lambda L: L.T(SQ).det(),
    slogdet_neg=lambda L: (lambda r: (r.sign.detach(), r.logabsdet))(
        L.linalg.slogdet(L.T(np.diag([1.0, -2.0, 3.0]) + 0.1))
    ),
    slogdet_batch=lambda L: (lambda r: (r.sign.detach(), r.logabsdet))(L.linalg.slogdet(L.T(R233))),
    inv=lambda L: L.linalg.inv(L.T(SQ)),
    inv_batch=lambda L: L.linalg.inv(L.T(R233)),
    solve_vec=lambda L: L.linalg.solve(L.T(SQ), L.T(V4)),
    solve_mat=lambda L: L.linalg.solve(L.T(SQ), L.T(NS)),
    solve_batch_vecs=lambda L: L.linalg.solve(L.T(R233), L.T(M23)),
    solve_bcast=lambda L: L.linalg.solve(L.T(SQ), L.T(R241)),
    solve_left_false=lambda L: L.linalg.solve(L.T(SQ), L.T(NS.T), left=False),
    cholesky=lambda L: L.linalg.cholesky(L.T(SPD)),
    cholesky_upper=lambda L: L.linalg.cholesky(L.T(SPD), upper=True),
    cholesky_batch=lambda L: L.linalg.cholesky(L.T(np.stack([SPD, SPD + np.eye(4)]))),
    cholesky_nonsym=lambda L: L.linalg.cholesky(L.T(SPD + np.triu(np.ones((4, 4)), 1))),
    qr_reduced=lambda L: L.linalg.qr(L.T(NS)),
    qr_complete=lambda L: L.linalg.qr(L.T(NS), mode="complete").R,
    qr_wide=lambda L: L.linalg.qr(L.T(NS.T)),
    eigh_vals=lambda L: L.linalg.eigh(L.T(SYM)).eigenvalues,
    eigh_vecs_sq=lambda L: L.linalg.eigh(L.T(SYM)).eigenvectors ** 2,
    eigh_fields=lambda L: len(L.linalg.eigh(L.T(SYM))),
    eigh_upper=lambda L: L.linalg.eigh(L.T(SQ), UPLO="U")[0],
    eigh_lower_nonsym=lambda L: L.linalg.eigh(L.T(SQ))[0],
    eigvalsh=lambda L: L.linalg.eigvalsh(L.T(SYM)),
    svd_s=lambda L: L.linalg.svd(L.T(NS), full_matrices=False).S,
    svd_default_shapes=lambda L: tuple(t.shape for t in L.linalg.svd(L.T(NS))),
    svd_recon=lambda L: (lambda u, s, vh: (u * s) @ vh)(
        *L.linalg.svd(L.T(NS), full_matrices=False)
    ),
    svdvals=lambda L: L.linalg.svdvals(L.T(B234)),
    pinv=lambda L: L.linalg.pinv(L.T(NS)),
    pinv_rank_def=lambda L: L.linalg.pinv(L.T([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])),
    pinv_hermitian=lambda L: L.linalg.pinv(L.T(SPD), hermitian=True),
    matrix_power_3=lambda L: L.linalg.matrix_power(L.T(SQ), 3),
    matrix_power_0=lambda L: L.linalg.matrix_power(L.T(SQ), 0),
    matrix_power_neg=lambda L: L.linalg.matrix_power(L.T(SQ), -2),
    cross_default=lambda L: L.linalg.cross(L.T(R43), L.T(R43B)),
    cross_dim0=lambda L: L.linalg.cross(L.T(M34[:, :3].T.copy()), L.T(M34[:, 1:].T.copy()), dim=0),
    torch_cross_default_dim=lambda L: L.m.cross(L.T(np.ones((3, 3)) + SQ[:3, :3]), L.T(SQ[1:, 1:])),
    lnorm_vec=lambda L: L.linalg.norm(L.T(V4)),
    lnorm_mat=lambda L: L.linalg.norm(L.T(A)),
    lnorm_3d=lambda L: L.linalg.norm(L.T(C3)),
    lnorm_ord2_mat=lambda L: L.linalg.norm(L.T(A), 2),
    lnorm_ord1_mat=lambda L: L.linalg.norm(L.T(A), 1),
    lnorm_ordinf_mat=lambda L: L.linalg.norm(L.T(A), float("inf")),
    lnorm_nuc=lambda L: L.linalg.norm(L.T(A), "nuc"),
    lnorm_ord_neg2=lambda L: L.linalg.norm(L.T(A), -2),
    lnorm_vec_ord3=lambda L: L.linalg.norm(L.T(V4), 3),
    lnorm_vec_ord0=lambda L: L.linalg.norm(L.T(np.where(V4 > 0, V4, 0.0)), 0),
    lnorm_dim_int=lambda L: L.linalg.norm(L.T(C3), dim=-1),
    lnorm_dim_tuple_ord1=lambda L: L.linalg.norm(L.T(C3), 1, dim=(0, 2)),
    lnorm_dim_keep=lambda L: L.linalg.norm(L.T(C3), dim=(1, 2), keepdim=True),
    vnorm_default=lambda L: L.linalg.vector_norm(L.T(C3)),
    vnorm_mat_inf=lambda L: L.linalg.vector_norm(L.T(A), float("inf")),
    vnorm_dim=lambda L: L.linalg.vector_norm(L.T(C3), 1, dim=(0, -1), keepdim=True),
    vnorm_ord_half=lambda L: L.linalg.vector_norm(L.T(A), 0.5, dim=1),
    vnorm_neg_inf=lambda L: L.linalg.vector_norm(L.T(A), -float("inf")),
    vnorm_zero=lambda L: L.linalg.vector_norm(L.T(np.zeros(3))),
    mnorm_default=lambda L: L.linalg.matrix_norm(L.T(C3)),
    mnorm_ord1=lambda L: L.linalg.matrix_norm(L.T(C3), 1),
    mnorm_ord_inf=lambda L: L.linalg.matrix_norm(L.T(C3), -float("inf")),
    mnorm_nuc=lambda L: L.linalg.matrix_norm(L.T(C3), "nuc"),
    mnorm_2=lambda L: L.linalg.matrix_norm(L.T(C3), 2),
    mnorm_dim=lambda L: L.linalg.matrix_norm(L.T(C3), dim=(0, 2), keepdim=True),
    multi_dot=lambda L: L.linalg.multi_dot([L.T(M23), L.T(M34), L.T(V4)]),
    vecdot=lambda L: L.linalg.vecdot(L.T(A), L.T(B)),
    vecdot_dim=lambda L: L.linalg.vecdot(L.T(A), L.T(B), dim=0),
    linalg_diagonal=lambda L: L.linalg.diagonal(L.T(C3)),
    linalg_diagonal_dims=lambda L: L.linalg.diagonal(L.T(C3), offset=1, dim1=0, dim2=-1),
    linalg_matmul=lambda L: L.linalg.matmul(L.T(B234), L.T(B243)),
    trace_fn=lambda L: L.m.trace(L.T(A)),
    det_fn=lambda L: L.m.det(L.T(SQ)),
)

# defaults, positional forms and argument kinds
progs(
    tg_cumsum_dim=lambda L: L.m.cumsum(L.T(A), 1),
    tg_cumprod_kw=lambda L: L.m.cumprod(L.T(A), dim=-1),
    tg_softmax_dim=lambda L: L.m.softmax(L.T(A), 0),
    tg_logsumexp_pos=lambda L: L.m.logsumexp(L.T(A), 1),
    cummax_no_dim=lambda L: L.T(A).cummax(),
    max_pos_keepdim=lambda L: L.T(A).max(1, True),
    min_kw_only=lambda L: L.T(A).min(dim=0),
    max_other_tensor=lambda L: L.T(A).max(L.T(B)),
    min_other_bcast=lambda L: L.T(A).min(L.T(V4)),
    var_pos_unbiased=lambda L: L.T(A).var(0, False),
    var_pos_keepdim=lambda L: L.T(A).var(1, True, True),
    std_none_dim=lambda L: L.T(A).std(dim=None),
    std_correction_only=lambda L: L.T(A).std(correction=0),
    var_correction_float=lambda L: L.T(A).var(1, correction=0.5),
    std_unbiased_kw_dim=lambda L: L.T(A).std(unbiased=False, dim=1, keepdim=True),
    var_dim_list=lambda L: L.T(C3).var([0, 2]),
    sum_dtype_pos=lambda L: L.T(A).sum(1, dtype=L.m.float64),
    sum_dim_none=lambda L: L.T(A).sum(dim=None),
    mean_dim_empty_tuple=lambda L: L.T(A).mean(()),
    sum_dim_empty_tuple=lambda L: L.T(A).sum(()),
    amax_dim_empty_tuple=lambda L: L.T(A).amax(()),
    std_dim_empty_tuple=lambda L: L.T(A).std(()),
    nansum_dim_empty_list=lambda L: L.T(A).nansum(dim=[]),
    count_nonzero_dim_empty=lambda L: L.T(np.round(A)).count_nonzero(()),
    norm_dim_empty_tuple=lambda L: L.T(A).norm(dim=()),
    fn_sum_dim_empty_tuple=lambda L: L.m.sum(L.T(A), dim=()),
    sum_keepdim_no_dim=lambda L: (
        L.T(A).sum(keepdim=True) if L.name == "tg" else L.T(A).sum((0, 1), keepdim=True)
    ),
    prod_pos=lambda L: L.T(A).prod(0, True),
    norm_pos=lambda L: L.T(C3).norm(2, -1, True),
    norm_dim_kw=lambda L: L.T(C3).norm(dim=1),
    norm_p_str_fro_dim=lambda L: L.T(C3).norm(p="fro", dim=2),
    norm_p_float=lambda L: L.T(A).norm(p=2.5),
    argmax_keepdim_no_dim=lambda L: L.T(A).argmax(keepdim=True),
    argmin_neg=lambda L: L.T(C3).argmin(-2),
    all_no_dim=lambda L: L.B(A > -3).all(),
    any_tuple=lambda L: L.B(C3 > 1.5).any((0, 2)),
    all_keepdim=lambda L: L.B(C3 > -1.5).all(1, True),
    count_nonzero_neg=lambda L: L.T(np.where(A > 0, A, 0.0)).count_nonzero(-1),
    median_kw=lambda L: L.T(A).median(dim=-1, keepdim=True),
    quantile_fn=lambda L: L.m.quantile(L.T(A), 0.25, dim=0),
    quantile_list_q=lambda L: L.T(A).quantile(L.T([0.25, 0.75], rg=False)),
    nanquantile_keep=lambda L: L.T(A).nanquantile(0.5, 0, True),
    sort_kw_desc=lambda L: L.T(A).sort(descending=True),
    sort_pos_desc=lambda L: L.T(A).sort(0, True),
    argsort_pos_desc=lambda L: L.T(A).argsort(0, True),
    topk_pos=lambda L: L.T(A).topk(2, 0, False, True),
    topk_k0=lambda L: L.T(A).topk(0),
    kthvalue_keep_kw=lambda L: L.T(A).kthvalue(2, dim=0, keepdim=True),
    repeat_list=lambda L: L.T(A).repeat([2, 1]),
    repeat_size=lambda L: L.T(A).repeat(L.T(np.zeros((2, 1))).shape),
    expand_size=lambda L: L.T(A[:1]).expand(L.T(A).shape),
    expand_list=lambda L: L.T(A[:1]).expand([3, 4]),
    view_tuple=lambda L: L.T(A).view((2, 6)),
    view_size=lambda L: L.T(A).view(L.T(np.zeros((6, 2))).size()),
    reshape_size=lambda L: L.T(A).reshape(L.T(np.zeros((6, 2))).shape),
    size_neg=lambda L: L.T(C3).size(-2),
    shape_tuple=lambda L: L.T(C3).shape,
    T_3d=lambda L: L.T(C3).T if L.name == "tg" else L.T(C3).permute(2, 1, 0),
    permute_list=lambda L: L.T(C3).permute([2, 0, 1]),
    transpose_kw=lambda L: L.T(C3).transpose(dim0=0, dim1=2),
    unsqueeze_kw=lambda L: L.T(A).unsqueeze(dim=1),
    squeeze_kw=lambda L: L.T(np.ones((3, 1))).squeeze(dim=1),
    flatten_kw=lambda L: L.T(C3).flatten(start_dim=1),
    roll_kw=lambda L: L.T(A).roll(shifts=1, dims=0),
    flip_kw=lambda L: L.T(A).flip(dims=(0,)),
    gather_kw=lambda L: L.T(A).gather(dim=1, index=L.I([[0], [1], [2]])),
    index_select_kw=lambda L: L.T(A).index_select(dim=0, index=L.I([0, 0])),
    clamp_kw_tensor_min=lambda L: L.T(A).clamp(min=L.T(np.zeros(4))),
    pow_kw=lambda L: L.T(POS).pow(exponent=1.5),
    add_scalar_alpha=lambda L: L.T(A).add(2.0, alpha=3.0),
    sub_rsub=lambda L: 1.0 - L.T(A),
    rdiv=lambda L: 1.0 / L.T(POS),
    add_int_tensor=lambda L: L.T(A) + L.I([1, 2, 3, 4]),
    mul_bool=lambda L: L.T(A) * L.B(A > 0),
    add_bool_scalar=lambda L: L.T(A) + True,
    neg_bool_err=lambda L: -L.B(A > 0),
    tolist_0d=lambda L: L.T(2.5).tolist(),
    item_int=lambda L: L.I([7]).item(),
    float_cast_int=lambda L: L.I([[1, 2]]).float() if L.name == "tg" else L.I([[1, 2]]).double(),
    to_dtype_kw=lambda L: L.T(A).to(dtype=L.m.float64),
    to_tensor=lambda L: L.I([1, 2]).to(L.T([1.0], rg=False)),
    type_as_int=lambda L: L.T(A, rg=False).type_as(L.I([1])),
    long_neg=lambda L: L.T([-1.7, 1.7, -0.2]).long(),
    int_trunc=lambda L: L.T([-1.7, 1.7, 2.5]).int(),
    bool_nan=lambda L: L.T([np.nan, 0.0, -0.0, 1.0]).bool(),
    new_zeros_dtype=lambda L: L.T(A).new_zeros((2,), dtype=L.m.int64),
    new_ones_rg=lambda L: L.T(A).new_ones(2, 3, requires_grad=True).sum(),
    new_full_int=lambda L: L.I([1]).new_full((2,), 3.7),
    new_tensor_float=lambda L: L.I([1]).new_tensor([1.5, 2.5]),
    zeros_like_rg=lambda L: L.m.zeros_like(L.T(A)),
    ones_like_dtype=lambda L: L.m.ones_like(L.T(A), dtype=L.m.int64),
    arange_float_dtype=lambda L: L.m.arange(0.0, 1.0, 0.3, dtype=L.m.float64),
    arange_int=lambda L: L.m.arange(5),
    linspace_int_ends=lambda L: L.m.linspace(0, 10, steps=5),  # (exact in float32 too)
    full_int=lambda L: L.m.full((2,), 3),
    full_float=lambda L: L.m.full((2, 2), 1.5),
    eye_rect=lambda L: L.m.eye(2, 3),
    tensor_int_list=lambda L: L.m.tensor([1, 2, 3]),
    tensor_bool_list=lambda L: L.m.tensor([True, False]),
    tensor_mixed=lambda L: L.m.tensor([1, 2.5]),
    stack_neg=lambda L: L.m.stack([L.T(A), L.T(B)], -1),
    cat_neg=lambda L: L.m.cat([L.T(A), L.T(B)], dim=-1),
    cat_tuple=lambda L: L.m.cat((L.T(A), L.T(B))),
)

LOGITS = RNG.standard_normal((5, 4)) * 2
TARGET = np.array([0, 3, 1, 1, 2])
PROBS = RNG.dirichlet(np.ones(4), 5)
CW = np.array([0.5, 2.0, 1.0, 1.5])
P01 = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.7]])
Y01 = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
IMG = RNG.standard_normal((1, 2, 3, 4))

# torch.nn.functional
progs(
    F_softmax_implicit_3d=lambda L: L.F.softmax(L.T(C3)),
    F_log_softmax_implicit_2d=lambda L: L.F.log_softmax(L.T(A)),
    F_softmax_dtype=lambda L: L.F.softmax(L.T(A), dim=0, dtype=L.m.float64),
    F_ce_1d=lambda L: L.F.cross_entropy(L.T(LOGITS[0]), L.I(2)),
    F_ce_1d_probs=lambda L: L.F.cross_entropy(L.T(LOGITS[0]), L.T(PROBS[0])),
    F_ce_all=lambda L: L.F.cross_entropy(
        L.T(LOGITS), L.I([0, 3, -1, 1, 2]), L.T(CW, rg=False), ignore_index=-1, label_smoothing=0.2
    ),
    F_ce_sum_ls=lambda L: L.F.cross_entropy(
        L.T(LOGITS), L.I(TARGET), reduction="sum", label_smoothing=0.1
    ),
    F_ce_none_w=lambda L: L.F.cross_entropy(
        L.T(LOGITS), L.I(TARGET), weight=L.T(CW, rg=False), reduction="none"
    ),
    F_ce_probs_ls_w=lambda L: L.F.cross_entropy(
        L.T(LOGITS), L.T(PROBS), weight=L.T(CW, rg=False), label_smoothing=0.3
    ),
    F_ce_probs_grad_target=lambda L: L.F.cross_entropy(L.T(LOGITS), L.T(PROBS)),
    F_ce_3d=lambda L: L.F.cross_entropy(L.T(C3.transpose(0, 2, 1)), L.I([[0, 1, 2], [2, 2, 0]])),
    F_nll_ignore_w=lambda L: L.F.nll_loss(
        L.T(LOGITS), L.I([0, 3, 2, 1, 2]), L.T(CW, rg=False), ignore_index=2
    ),
    F_nll_1d=lambda L: L.F.nll_loss(L.T(LOGITS[0]), L.I(1)),
    F_mse_bcast=lambda L: L.F.mse_loss(L.T(A), L.T(V4)),
    F_mse_sum=lambda L: L.F.mse_loss(L.T(A), L.T(B), reduction="sum"),
    F_l1_zero_diff=lambda L: L.F.l1_loss(L.T([1.0, 2.0]), L.T([1.0, 3.0])),
    F_smooth_l1_beta_edge=lambda L: L.F.smooth_l1_loss(
        L.T([0.0, 0.5, 2.0]), L.T([0.5, 0.0, 0.0]), beta=0.5, reduction="none"
    ),
    F_huber_edge=lambda L: L.F.huber_loss(
        L.T([0.0, 2.0, -3.0]), L.T([1.0, 0.0, 0.0]), delta=2.0, reduction="none"
    ),
    F_kl_batchmean=lambda L: L.F.kl_div(
        L.T(np.log(PROBS)), L.T(PROBS[::-1].copy()), reduction="batchmean"
    ),
    F_kl_log_target=lambda L: L.F.kl_div(
        L.T(np.log(PROBS)), L.T(np.log(PROBS[::-1])), reduction="sum", log_target=True
    ),
    F_bce_logits_pw=lambda L: L.F.binary_cross_entropy_with_logits(
        L.T(A[:2, :3]), L.T(Y01), pos_weight=L.T([1.0, 2.0, 0.5], rg=False)
    ),
    F_bce_logits_w_none=lambda L: L.F.binary_cross_entropy_with_logits(
        L.T(A[:2, :3]), L.T(Y01), weight=L.T([[1.0], [3.0]], rg=False), reduction="none"
    ),
    F_bce_clamp=lambda L: L.F.binary_cross_entropy(L.T(P01), L.T(Y01), reduction="none"),
    F_bce_w=lambda L: L.F.binary_cross_entropy(
        L.T(np.clip(P01, 0.1, 0.9)), L.T(Y01), weight=L.T([2.0, 1.0, 0.5], rg=False)
    ),
    F_normalize_default=lambda L: L.F.normalize(L.T(A)),
    F_normalize_p1_dim0=lambda L: L.F.normalize(L.T(A), p=1, dim=0),
    F_normalize_zero_row=lambda L: L.F.normalize(L.T([[0.0, 0.0], [3.0, 4.0]]), dim=1),
    F_normalize_inf=lambda L: L.F.normalize(L.T(A), p=float("inf"), dim=-1),
    F_pad_const=lambda L: L.F.pad(L.T(A), (1, 2), value=-1.0),
    F_pad_2d=lambda L: L.F.pad(L.T(A), (1, 0, 0, 2)),
    F_pad_neg=lambda L: L.F.pad(L.T(A), (-1, 1)),
    F_pad_reflect=lambda L: L.F.pad(L.T(IMG), (2, 1, 1, 2), mode="reflect"),
    F_pad_replicate=lambda L: L.F.pad(L.T(IMG), (2, 1, 0, 1), mode="replicate"),
    F_pad_circular=lambda L: L.F.pad(L.T(IMG), (1, 2, 2, 1), mode="circular"),
    F_pad_reflect_1d=lambda L: L.F.pad(L.T(A[None]), (2, 3), mode="reflect"),
    F_one_hot_auto=lambda L: L.F.one_hot(L.I([0, 3, 1])),
    F_one_hot_2d=lambda L: L.F.one_hot(L.I([[0, 2], [1, 1]]), 4),
    F_dropout_eval=lambda L: L.F.dropout(L.T(A), 0.5, training=False),
    F_dropout_p0=lambda L: L.F.dropout(L.T(A), 0.0),
    F_layer_norm_noaffine=lambda L: L.F.layer_norm(L.T(C3), (3, 4)),
    F_layer_norm_affine=lambda L: L.F.layer_norm(L.T(C3), (4,), L.T(V4), L.T(V4 * 0.1), eps=1e-3),
    F_layer_norm_const_row=lambda L: L.F.layer_norm(L.T([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]), (3,)),
    F_gelu_tanh=lambda L: L.F.gelu(L.T(A * 3), approximate="tanh"),
    F_gelu=lambda L: L.F.gelu(L.T(A * 3)),
    F_silu=lambda L: L.F.silu(L.T(A * 3)),
    F_softplus_thresh=lambda L: L.F.softplus(
        L.T([-30.0, 0.0, 4.9, 5.0, 5.1, 40.0]), beta=2.0, threshold=10.0
    ),
    F_elu_alpha=lambda L: L.F.elu(L.T([-2.0, 0.0, 1.0]), alpha=0.5),
    F_leaky_zero=lambda L: L.F.leaky_relu(L.T([-2.0, 0.0, 1.0]), 0.2),
    F_hardtanh_edges=lambda L: L.F.hardtanh(L.T([-2.0, -1.0, 0.0, 1.0, 2.0]), -1.0, 1.0),
    F_relu_zero=lambda L: L.F.relu(L.T([-1.0, 0.0, 1.0])),
    F_relu6_edges=lambda L: L.F.relu6(L.T([-1.0, 0.0, 3.0, 6.0, 7.0])),
    F_logsigmoid_big=lambda L: L.F.logsigmoid(L.T([-800.0, -20.0, 0.0, 40.0])),
    F_cos_bcast=lambda L: L.F.cosine_similarity(L.T(A), L.T(V4), dim=-1),
    F_cos_dim0=lambda L: L.F.cosine_similarity(L.T(A), L.T(B), dim=0),
    F_cos_zero=lambda L: L.F.cosine_similarity(
        L.T([[0.0, 0.0], [1.0, 2.0]]), L.T([[1.0, 1.0], [2.0, 4.0]])
    ),
    F_pdist_p1=lambda L: L.F.pairwise_distance(L.T(A), L.T(B), p=1.0),
    F_pdist_keep=lambda L: L.F.pairwise_distance(L.T(A), L.T(V4), keepdim=True),
    F_pdist_inf=lambda L: L.F.pairwise_distance(L.T(A), L.T(B), p=float("inf")),
    F_pdist_equal=lambda L: L.F.pairwise_distance(L.T(A), L.T(A.copy())),
    F_linear_1d=lambda L: L.F.linear(L.T(V4), L.T(R24), L.T([0.5, -0.5])),
    F_linear_nobias=lambda L: L.F.linear(L.T(C3), L.T(R24)),
    F_glu_neg=lambda L: L.F.glu(L.T(A), -1),
    F_tanh=lambda L: L.F.tanh(L.T(A)),
    F_sigmoid=lambda L: L.F.sigmoid(L.T(A)),
    F_hardsigmoid_edges=lambda L: L.F.hardsigmoid(L.T([-3.0, 3.0, -4.0, 4.0])),
    F_hardswish_edges=lambda L: L.F.hardswish(L.T([-3.0, 0.0, 3.0])),
    F_selu=lambda L: L.F.selu(L.T([-1.0, 0.0, 2.0])),
    F_celu=lambda L: L.F.celu(L.T([-1.0, 0.0, 2.0]), alpha=2.0),
    F_mish=lambda L: L.F.mish(L.T(A)),
    F_softsign=lambda L: L.F.softsign(L.T(A)),
    F_embedding=lambda L: L.F.embedding(L.I([[0, 2], [2, 1]]), L.T(M34.T)),
    F_avg_pool2d_pad=lambda L: L.F.avg_pool2d(L.T(IMG), 2, padding=1, count_include_pad=False),
    F_max_pool2d_ties=lambda L: L.F.max_pool2d(L.T(np.ones((1, 1, 2, 4))), 2),
    F_max_pool2d_indices=lambda L: L.F.max_pool2d(L.T(IMG), 2, return_indices=True),
    F_max_pool1d_ceil=lambda L: L.F.max_pool1d(L.T(A[None]), 3, stride=2, ceil_mode=True),
    F_adaptive_avg=lambda L: L.F.adaptive_avg_pool2d(L.T(IMG), (2, 3)),
)


# writes through views reach the base (and writes to the base reach the views)
def _through(view_fn, write=lambda L, v: v.mul_(L.T(2.0))):
    def program(L):
        base = L.T(C3) * 1.0
        v = view_fn(L, base)
        write(L, v)
        return base, v

    return program


progs(
    vw_view=_through(lambda L, b: b.view(6, 4)),
    vw_view_as=_through(lambda L, b: b.view_as(L.T(np.zeros((4, 6)), rg=False))),
    vw_reshape_contig=_through(lambda L, b: b.reshape(-1)),
    vw_flatten=_through(lambda L, b: b.flatten(1)),
    vw_unflatten=_through(lambda L, b: b.unflatten(2, (2, 2))),
    vw_unsqueeze=_through(lambda L, b: b.unsqueeze(1)),
    vw_squeeze=_through(lambda L, b: b[:, :1].squeeze(1)),
    vw_transpose=_through(lambda L, b: b.transpose(0, 2)),
    vw_permute=_through(lambda L, b: b.permute(1, 2, 0)),
    vw_movedim=_through(lambda L, b: b.movedim(0, -1)),
    vw_swapaxes=_through(lambda L, b: b.swapaxes(1, 2)),
    vw_mT=_through(lambda L, b: b.mT),
    vw_narrow=_through(lambda L, b: b.narrow(2, 1, 2)),
    vw_select=_through(lambda L, b: b.select(1, 2)),
    vw_tensor_split=_through(lambda L, b: b.tensor_split(2, 2)[0], lambda L, v: v.add_(1.0)),
    vw_diagonal=_through(lambda L, b: b.diagonal(0, 1, 2)),
    vw_expand_read=_through(lambda L, b: b[:, :1, :].expand(2, 3, 4), lambda L, v: None),
    vw_slice_step=_through(lambda L, b: b[:, ::2, 1::2]),
    vw_ellipsis=_through(lambda L, b: b[..., 1]),
    vw_none=_through(lambda L, b: b[None, 1]),
    vw_detach_write=_through(lambda L, b: b.detach(), lambda L, v: v.mul_(2.0)),
    vw_t_2d=_through(lambda L, b: b[0].t()),
    vw_T_2d=_through(lambda L, b: b[1].T),
    vw_adv_index_copy=_through(lambda L, b: b[L.I([0, 1])], lambda L, v: v.mul_(2.0)),
    vw_base_write_seen=lambda L: (lambda b: (b[0].view(-1), b.mul_(L.T(3.0)))[0])(L.T(C3) * 1.0),
    vw_real=_through(
        lambda L, b: b.real if L.name == "torch" else b.real, lambda L, v: v.add_(1.0)
    ),
    vw_as_strided_free=_through(lambda L, b: b.view(-1)[2:8].view(2, 3)),
    vw_fill_diag_via_view=_through(lambda L, b: b[0].diagonal(), lambda L, v: v.fill_(0.0)),
    vw_copy_from_overlap=_through(lambda L, b: b[:, 1], lambda L, v: v.copy_(v.clone().flip(0))),
)


# out=: the result is written into out (or the call raises); inputs need no grad, as in torch
def _out(call, shape=(3, 4), kind="f"):
    def program(L):
        if kind == "f":
            o = L.T(np.full(shape, -9.0), rg=False)
        else:
            o = L.I(np.full(shape, -9))
        r = call(L, o)
        return o, r is o

    return program


def _a(L):
    return L.T(A, rg=False)


def _b(L):
    return L.T(B, rg=False)


OUT = dict(
    out_add=_out(lambda L, o: L.m.add(_a(L), _b(L), out=o)),
    out_mul=_out(lambda L, o: L.m.mul(_a(L), 2.0, out=o)),
    out_exp=_out(lambda L, o: L.m.exp(_a(L), out=o)),
    out_sin=_out(lambda L, o: L.m.sin(_a(L), out=o)),
    out_clamp=_out(lambda L, o: L.m.clamp(_a(L), -0.5, 0.5, out=o)),
    out_where=_out(lambda L, o: L.m.where(_a(L) > 0, _a(L), _b(L), out=o)),
    out_sum=_out(lambda L, o: L.m.sum(_a(L), 1, out=o), (3,)),
    out_mean=_out(lambda L, o: L.m.mean(_a(L), 0, out=o), (4,)),
    out_cumsum=_out(lambda L, o: L.m.cumsum(_a(L), 1, out=o)),
    out_matmul=_out(lambda L, o: L.m.matmul(_a(L), _b(L).t(), out=o), (3, 3)),
    out_mm=_out(lambda L, o: L.m.mm(_a(L), _b(L).t(), out=o), (3, 3)),
    out_cat=_out(lambda L, o: L.m.cat([_a(L), _b(L)], 0, out=o), (6, 4)),
    out_stack=_out(lambda L, o: L.m.stack([_a(L), _b(L)], out=o), (2, 3, 4)),
    out_pow=_out(lambda L, o: L.m.pow(_a(L), 2, out=o)),
    out_std=_out(lambda L, o: L.m.std(_a(L), 1, out=o), (3,)),
    out_amax=_out(lambda L, o: L.m.amax(_a(L), 1, out=o), (3,)),
    out_sub=_out(lambda L, o: L.m.sub(_a(L), _b(L), alpha=2.0, out=o)),
    out_div=_out(lambda L, o: L.m.div(_a(L), 2.0, out=o)),
    out_maximum=_out(lambda L, o: L.m.maximum(_a(L), _b(L), out=o)),
    out_logsumexp=_out(lambda L, o: L.m.logsumexp(_a(L), 1, out=o), (3,)),
    out_argmax=_out(lambda L, o: L.m.argmax(_a(L), 1, out=o), (3,), "i"),
    out_prod=_out(lambda L, o: L.m.prod(_a(L), 1, out=o), (3,)),
    out_abs=_out(lambda L, o: L.m.abs(_a(L), out=o)),
    out_sqrt=_out(lambda L, o: L.m.sqrt(L.T(POS, rg=False), out=o)),
    out_max_dim=lambda L: L.m.max(_a(L), 1, out=(L.T(np.zeros(3), rg=False), L.I(np.zeros(3)))),
    out_sort=lambda L: L.m.sort(
        _a(L), 1, out=(L.T(np.zeros((3, 4)), rg=False), L.I(np.zeros((3, 4))))
    ),
)
progs(**OUT)

# tg.<name> functions are torch.<name>
progs(
    fn_add_alpha=lambda L: L.m.add(L.T(A), L.T(B), alpha=2.0),
    fn_sub_alpha=lambda L: L.m.sub(L.T(A), L.T(B), alpha=0.5),
    fn_div_rounding=lambda L: L.m.div(L.T(NEG, rg=False), 2.0, rounding_mode="trunc"),
    fn_mul=lambda L: L.m.mul(L.T(A), L.T(V4)),
    fn_sum_pos_keep=lambda L: L.m.sum(L.T(C3), 1, True),
    fn_sum_list=lambda L: L.m.sum(L.T(C3), [0, 2]),
    fn_sum_dtype=lambda L: L.m.sum(L.I([[1, 2]]), dtype=L.m.float64),
    fn_mean_tuple=lambda L: L.m.mean(L.T(C3), (0, 1)),
    fn_mean_keep=lambda L: L.m.mean(L.T(C3), -1, keepdim=True),
    fn_prod_dim=lambda L: L.m.prod(L.T(A), 1, keepdim=True),
    fn_prod_all=lambda L: L.m.prod(L.T(A)),
    fn_amax_default=lambda L: L.m.amax(L.T(TIES)),
    fn_amin_dim=lambda L: L.m.amin(L.T(TIES), dim=(0, 1)),
    fn_var_pos=lambda L: L.m.var(L.T(A), 0, False),
    fn_std_keep=lambda L: L.m.std(L.T(A), 1, keepdim=True),
    fn_std_correction=lambda L: L.m.std(L.T(A), dim=None, correction=0),
    fn_flatten_range=lambda L: L.m.flatten(L.T(C3), 0, 1),
    fn_reshape=lambda L: L.m.reshape(L.T(C3), (4, -1)),
    fn_roll_flat=lambda L: L.m.roll(L.T(A), 3),
    fn_roll_dims=lambda L: L.m.roll(L.T(A), 1, 0),
    fn_tile=lambda L: L.m.tile(L.T(A), (2,)),
    fn_flip=lambda L: L.m.flip(L.T(A), (0,)),
    fn_diff_prepend=lambda L: L.m.diff(L.T(A), dim=0, prepend=L.T(V4[None])),
    fn_diff_n2=lambda L: L.m.diff(L.T(A), n=2),
    fn_diff_append=lambda L: L.m.diff(L.T(A), 1, -1, append=L.T(A[:, :1])),
    fn_eye_nm=lambda L: L.m.eye(3, 2),
    fn_zeros_tuple=lambda L: L.m.zeros((2, 3)),
    fn_zeros_varargs=lambda L: L.m.zeros(2, 3),
    fn_ones_dtype=lambda L: L.m.ones(2, dtype=L.m.int64),
    fn_randn_shape=lambda L: L.m.randn(2, 3).shape,
    fn_rand_shape_tuple=lambda L: L.m.rand((2, 3)).shape,
    fn_arange_step=lambda L: L.m.arange(1, 10, 3),
    fn_arange_neg=lambda L: L.m.arange(5, 0, -2),
    fn_full_like_value=lambda L: L.m.full((2, 2), 7.5),
    fn_zeros_like_int=lambda L: L.m.zeros_like(L.I([1, 2])),
    fn_logsumexp_tuple=lambda L: L.m.logsumexp(L.T(C3), (0, 2)),
    fn_logsumexp_keep=lambda L: L.m.logsumexp(L.T(C3), 1, keepdim=True),
    fn_cdist_p2=lambda L: L.m.cdist(L.T(A), L.T(B[:2])),
    fn_cdist_p1=lambda L: L.m.cdist(L.T(A), L.T(B), p=1.0),
    fn_cdist_batch=lambda L: L.m.cdist(L.T(C3), L.T(C3[:, :2])),
    fn_sort_desc=lambda L: L.m.sort(L.T(A), descending=True),
    fn_sort_dim0=lambda L: L.m.sort(L.T(A), 0),
    fn_argsort_desc=lambda L: L.m.argsort(L.T(A), dim=0, descending=True),
    fn_argmax_keep=lambda L: L.m.argmax(L.T(A), 1, True),
    fn_argmin_all=lambda L: L.m.argmin(L.T(A)),
    fn_max_dim=lambda L: L.m.max(L.T(TIES), 1),
    fn_min_binary=lambda L: L.m.min(L.T(A), L.T(B)),
    fn_max_all=lambda L: L.m.max(L.T(TIES)),
    fn_median_dim=lambda L: L.m.median(L.T(TIES), 0),
    fn_median_ties_all=lambda L: L.m.median(L.T(TIES1)),
    fn_nanmedian_ties_all=lambda L: L.m.nanmedian(L.T(TIES1)),
    fn_kthvalue=lambda L: L.m.kthvalue(L.T(A), 2, 0),
    fn_topk=lambda L: L.m.topk(L.T(A), 2, dim=0, largest=False),
    fn_count_nonzero=lambda L: L.m.count_nonzero(L.T(np.round(A)), dim=0),
    fn_stack_dim=lambda L: L.m.stack((L.T(A), L.T(B)), dim=1),
    fn_concatenate=lambda L: L.m.concatenate([L.T(A), L.T(B)], 1),
    fn_squeeze=lambda L: L.m.squeeze(L.T(np.ones((1, 3, 1))), 0),
    fn_unsqueeze=lambda L: L.m.unsqueeze(L.T(A), -1),
    fn_chunk=lambda L: L.m.chunk(L.T(A), 2, 1),
    fn_unbind=lambda L: L.m.unbind(L.T(A), 1),
    fn_split_sizes=lambda L: L.m.split(L.T(A), [3, 1], dim=1),
    fn_var_mean_unbiased=lambda L: L.m.var_mean(L.T(A), 1, unbiased=False),
    fn_std_mean_pos=lambda L: L.m.std_mean(L.T(A), 1, True),
    fn_where_scalar_both=lambda L: L.m.where(L.B(A > 0), 1.0, 0.0),
    fn_where_int_float=lambda L: L.m.where(L.B(A > 0), L.I(np.ones((3, 4))), L.T(A)),
    fn_clamp_tensor=lambda L: L.m.clamp(L.T(A), L.T(B), None),
    fn_clip_kw=lambda L: L.m.clip(L.T(A), min=-0.5),
    fn_pow_tensor=lambda L: L.m.pow(L.T(POS), L.T(B)),
    fn_maximum=lambda L: L.m.maximum(L.T(A), L.T(V4)),
    fn_softmax_kw=lambda L: L.m.softmax(L.T(A), dim=-1),
    fn_log_softmax_pos=lambda L: L.m.log_softmax(L.T(A), 0),
    fn_relu=lambda L: L.m.relu(L.T(A)),
    fn_erfinv=lambda L: L.m.erfinv(L.T(np.tanh(A) * 0.9)),
    fn_logit_eps=lambda L: L.m.logit(L.T([0.0, 0.3, 1.0]), eps=0.05),
    fn_sign=lambda L: L.m.sign(L.T(A)),
    fn_abs_int=lambda L: L.m.abs(L.I([-1, 2])),
    fn_einsum_list=lambda L: L.m.einsum("ij,jk->ik", [L.T(M23), L.T(M34)]),
    fn_einsum_noarrow=lambda L: L.m.einsum("ji", L.T(M23)),
    fn_tensordot_int=lambda L: L.m.tensordot(L.T(A), L.T(B), 2),
    fn_tensordot_dims_kw=lambda L: L.m.tensordot(L.T(A), L.T(B.T), dims=1),
    fn_numel=lambda L: L.m.numel(L.T(C3)),
    fn_trace=lambda L: L.m.trace(L.T(SQ)),
    fn_where_one_arg=lambda L: L.m.where(L.B(A > 0)),
    fn_quantile_dim=lambda L: L.m.quantile(L.T(A), 0.25, dim=0),
    fn_quantile_keep=lambda L: L.m.quantile(L.T(A), 0.25, 1, True),
    fn_nanquantile=lambda L: L.m.nanquantile(L.T(A), 0.25, dim=1),
    fn_diag=lambda L: L.m.diag(L.T(A), 1),
    fn_tril=lambda L: L.m.tril(L.T(A), -1),
    fn_outer=lambda L: L.m.outer(L.T(V4), L.T(V4[:2])),
    fn_searchsorted=lambda L: L.m.searchsorted(L.T(np.sort(V4), rg=False), L.T(A, rg=False)),
    fn_round_int=lambda L: L.m.round(L.I([1, 2])),
    fn_cumsum_neg=lambda L: L.m.cumsum(L.T(C3), dim=-1),
    fn_cummax_fn=lambda L: L.m.cummax(L.T(TIES), 1),
    fn_logcumsumexp_fn=lambda L: L.m.logcumsumexp(L.T(A), 0),
    fn_isin_like=lambda L: L.m.isclose(L.T(A, rg=False), L.T(A, rg=False), rtol=0.0, atol=0.0),
)

# more edge values
progs(
    var_correction_gt_n=lambda L: L.T(A).var(1, correction=5),
    std_single=lambda L: L.T([[1.5], [2.0]]).std(1),
    std_pos_keepdim=lambda L: L.T(A).std(1, True, True),
    std_const=lambda L: L.T([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]).std(1),
    std_const_all=lambda L: L.T([2.0, 2.0, 2.0, 2.0]).std(),
    std_mean_const=lambda L: L.m.std_mean(L.T([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]), 1),
    clamp_nan=lambda L: L.T([np.nan, 1.0, -2.0]).clamp(-1.0, 0.5),
    clamp_min_nan_bound=lambda L: L.T([0.0, 1.0]).clamp(min=L.T([np.nan, 0.0])),
    max_signed_zero=lambda L: L.T([[-0.0, 0.0], [0.0, -0.0]]).max(1),
    max_all_neg_inf=lambda L: L.T([[-np.inf, -np.inf], [1.0, -np.inf]]).max(1),
    argmax_inf=lambda L: L.T([[np.inf, np.inf, 1.0]]).argmax(1),
    norm_inf_ties_grad=lambda L: L.T([[3.0, -3.0, 1.0], [2.0, 2.0, -2.0]]).norm(float("inf"), 1),
    vnorm_inf_ties=lambda L: L.linalg.vector_norm(L.T([3.0, -3.0, 1.0]), float("inf")),
    norm_1_at_zero=lambda L: L.T([0.0, 1.0, -2.0]).norm(1),
    abs_grad_zero=lambda L: L.T([0.0, -0.0]).abs(),
    sqrt_grad_zero=lambda L: L.T([0.0, 1.0]).sqrt(),
    cumprod_two_zeros=lambda L: L.T([2.0, 0.0, 3.0, 0.0, 4.0]).cumprod(0),
    prod_two_zeros=lambda L: L.T([2.0, 0.0, 3.0, 0.0]).prod(),
    logsumexp_all_inf=lambda L: L.T([np.inf, 1.0]).logsumexp(0),
    logcumsumexp_neg_inf=lambda L: L.T([-np.inf, 0.0, -np.inf]).logcumsumexp(0),
    softmax_all_neg_inf=lambda L: L.T([-np.inf, -np.inf]).softmax(0),
    median_even_dim=lambda L: L.T(A).median(1),
    nanmedian_even=lambda L: L.T([[1.0, np.nan, 3.0, 2.0]]).nanmedian(1),
    quantile_nan=lambda L: L.T([[1.0, np.nan, 3.0]]).quantile(0.5, dim=1),
    kthvalue_nan=lambda L: L.T([1.0, np.nan, 3.0]).kthvalue(3),
    sum_bool=lambda L: L.B([[True, False], [True, True]]).sum(),
    cumsum_bool=lambda L: L.B([True, False, True]).cumsum(0),
    max_bool=lambda L: L.B([[True, False], [False, False]]).max(1),
    eq_int_float=lambda L: L.I([1, 2]) == L.T([1.0, 2.5], rg=False),
    lerp_big_w=lambda L: L.T(A).lerp(L.T(B), 1.5),
    addcdiv_int=lambda L: L.T(A).addcdiv(L.T(B), L.T(POS), value=2),
    sigmoid_grad_big=lambda L: L.T([-40.0, 40.0, 800.0]).sigmoid(),
    tanh_grad_big=lambda L: L.T([-40.0, 40.0]).tanh(),
    exp_overflow=lambda L: L.T([710.0, -800.0]).exp(),
    log1p_edge=lambda L: L.T([-1.0, 0.0, 1e-20]).log1p(),
    expm1_small=lambda L: L.T([1e-20, -1e-10]).expm1(),
    rsqrt_zero=lambda L: L.T([0.0, 4.0]).rsqrt(),
    reciprocal_zero=lambda L: L.T([0.0, -0.0, 2.0]).reciprocal(),
    atan2_both_zero=lambda L: L.T([0.0, -0.0]).atan2(L.T([0.0, -0.0])),
    div_by_zero=lambda L: L.T([1.0, -1.0, 0.0]) / L.T([0.0, 0.0, 0.0]),
)


# ---- disagreements -------------------------------------------------------------------------
# (a) silently other values, shapes, dtypes or gradients than PyTorch's

DISAGREE = {
    "var_correction_gt_n": "var(correction=5) of 4 values: both give inf (the divisor is clamped "
    "at 0), but PyTorch's backward divides by n - correction = -1, a finite gradient of an "
    "infinite value; tapegrad's is NaN (kept: the value's derivative is not finite)",
    "pow_zero_base": "x.pow(y) at x == 0, y == 0: PyTorch's gradient for y is 0 (masked where "
    "x == 0 and y >= 0), tapegrad's is -inf * w",
    "F_bce_clamp": "binary_cross_entropy with input exactly 0 or 1: PyTorch's gradient is "
    "(x - y) / max(x (1 - x), 1e-12) (e.g. -1e12 * w at x=0, y=1; 0 at x=1, y=1), tapegrad's "
    "0 where the log is clamped at -100 and -w at x=1, y=1",
    "topk_ties": "topk over tied values: PyTorch's indices [[1, 2], [2, 3], [0, 2]], "
    "tapegrad's [[1, 2], [0, 1], [0, 2]] (PyTorch does not document its order at ties)",
    "topk_smallest_ties": "topk(largest=False) over ties: PyTorch indices [[0, 3, 2], [2, 3, "
    "0], [1, 3, 2]], tapegrad [[0, 3, 1], [0, 1, 2], [1, 3, 0]] (and the gradient follows)",
    "kthvalue_ties": "kthvalue(2) of [2, 2, 2, 2]: PyTorch's index 0, tapegrad's 1",
    "nanmean_all_nan": "nanmean of an all-NaN lane: PyTorch's gradient there is nan, tapegrad's 0",
    "amax_nan": "amax over a lane holding NaN: PyTorch's gradient is nan there, tapegrad's 0",
    "hypot_zero": "hypot(0, 0): PyTorch's gradient nan (0/0), tapegrad's 0",
    "xlogy_zero": "xlogy(0, 0): PyTorch's gradient for y is nan (x / y), tapegrad's 0",
    "sign_zero": "sign(nan): PyTorch 0, tapegrad nan (NumPy's)",
}

# (b) refusals of what PyTorch does (each raises in tapegrad)
REFUSED = {
    "norm_nuc": "x.norm('nuc') is refused on purpose (message names tnp.linalg.norm)",
    "trace_fn": "tg.trace(f, *example_args) is the tape recorder (in the contract): a Tensor in "
    "the place of f raises a TypeError naming x.trace() and np.trace (test_trace_of_a_matrix)",
    "fn_trace": "tg.trace(square matrix): the same TypeError",
    "F_softmax_implicit_3d": "F.softmax(x) of a 3-D x (PyTorch's deprecated implicit dim 0) "
    "is refused on purpose, with a clear message",
    "F_mse_bcast": "mse_loss(input (3, 4), target (4,)) (PyTorch broadcasts, with a warning) "
    "is refused on purpose, with a clear message",
}

# programs PyTorch refuses: tapegrad must refuse them too
BOTH_RAISE = [
    "scatter_reduce_add",
    "tensordot_dims_int",
    "qr_complete",
    "cummax_no_dim",
    "neg_bool_err",
]

# PyTorch's own number is wrong: tapegrad's is pinned by test_det_gradient_at_a_singular_matrix
# and test_std_over_no_dims_is_std_over_all
TORCH_WRONG = ["det_singular", "std_dim_empty_tuple"]

AGREE = [
    n
    for n in P
    if n not in DISAGREE
    and n not in REFUSED
    and n not in OUT
    and n not in BOTH_RAISE
    and n not in TORCH_WRONG
]


@pytest.mark.parametrize("name", AGREE)
def test_agrees_with_torch(name):
    _compare(P[name])


@pytest.mark.parametrize("name", list(OUT))
def test_out_writes_into_out_or_raises(name):
    """out= (inputs without grad, as PyTorch requires): the result lands in out, or the call
    raises; never a result silently left out of out."""
    if _raises(P[name], "tg") is None:
        _compare(P[name])


@pytest.mark.parametrize("name", BOTH_RAISE)
def test_raises_where_torch_raises(name):
    assert _raises(P[name], "torch") is not None
    assert _raises(P[name], "tg") is not None


def test_det_gradient_at_a_singular_matrix():
    """d det(A) / dA is the cofactor matrix, [[4, -2], [-2, 1]] at [[1, 2], [2, 4]]: tapegrad
    gives it; PyTorch 2.x returns zeros there."""
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    x = tg.tensor(a, requires_grad=True)
    tg.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], rtol=1e-12)
    xt = torch.tensor(a, requires_grad=True)
    torch.linalg.det(xt).backward()
    assert not np.allclose(xt.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]])


def test_std_over_no_dims_is_std_over_all():
    """x.std(()) is x.std() (PyTorch's value), and so is its gradient: PyTorch's backward
    reads dim=() as no dims there and gives inf."""
    x = tg.tensor(A, requires_grad=True)
    x.std(()).backward()
    y = tg.tensor(A, requires_grad=True)
    y.std().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-14)
    xt = torch.tensor(A, requires_grad=True)
    xt.std(()).backward()
    assert np.isinf(xt.grad.numpy()).all()


def test_trace_of_a_matrix():
    """tg.trace records a function; a matrix in its place is a TypeError naming the trace
    of a matrix (torch.trace's meaning)."""
    with pytest.raises(TypeError, match=r"x\.trace\(\).*np\.trace"):
        tg.trace(tg.tensor(SQ))


def _compare_briefly(name):
    """_compare, failing with a one-frame traceback (pytest renders the source of every
    frame of this large module otherwise, slowly)."""
    __tracebackhide__ = True
    try:
        _compare(P[name])
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{type(e).__name__}: {e}") from None


def _xfail(names, why):
    return [
        pytest.param(n, id=n, marks=pytest.mark.xfail(strict=True, reason=why[n])) for n in names
    ]


@pytest.mark.parametrize("name", _xfail(DISAGREE, DISAGREE))
def test_disagreement_with_torch(name):
    __tracebackhide__ = True
    _compare_briefly(name)


@pytest.mark.parametrize("name", _xfail(REFUSED, REFUSED))
def test_refuses_what_torch_does(name):
    __tracebackhide__ = True
    _compare_briefly(name)


def test_every_program_is_classified():
    for names in (DISAGREE, REFUSED, OUT, BOTH_RAISE, TORCH_WRONG):
        assert set(names) <= set(P), set(names) - set(P)
