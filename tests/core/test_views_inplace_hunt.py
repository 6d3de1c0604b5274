"""Views and in-place operations of the PyTorch-style Tensor API, side by side with PyTorch.

Every program below is written once against a small adapter ``L`` and run in tapegrad and in
PyTorch (float64): every view kind tapegrad offers (view, reshape, transpose / t / T / mT /
permute / movedim / swapdims, expand / expand_as / broadcast_to, narrow, select, basic
indexing with ints / slices / None / Ellipsis / steps, diagonal, unbind / split / chunk /
tensor_split / hsplit / vsplit, squeeze / unsqueeze, flatten / unflatten, view_as), chains of
views, in-place ops through them (add_, sub_, mul_, div_, pow_, clamp_, copy_, fill_, zero_,
masked_fill_, index_add_, index_copy_, index_fill_, scatter_, scatter_add_, __setitem__ with
ints, slices, advanced indices, masks, broadcast values and values that require grad), leaves
and views of leaves, no_grad, version-counter errors, detached aliases, retain_grad and
grad_fn.  The results compared are the returned values (shape, dtype kind and values to rtol
1e-10) and every leaf's ``.grad``; where PyTorch raises, tapegrad must raise.

How disagreements are kept:
- ``TG_EXTENDS``: PyTorch refuses (a view of a multi-output op used after a change of its
  base, negative steps, overlapping writes, a saved view of a base changed elsewhere, its own
  CopySlices shape bug for a scatter into a view); tapegrad's numbers must equal those of the
  same computation written so that PyTorch runs it (``L.eq``: a clone, a slice, the part of
  the source read).
- ``REFUSED``: tapegrad raises a clear error where PyTorch computes; the message fragment is
  asserted.
Every other program must give PyTorch's values and gradients (the writes through and into
detached aliases included: ``y[1].detach().mul_(2)`` changes y, ``d = y.detach()`` shows a
later tracked change of y, as PyTorch's shared storage).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402


class _Lib:
    """The few names a program needs, for one library; ``eq`` marks the PyTorch run of the
    equivalent program (``L.c`` clones, ``L.part`` takes the part of a source that is read)."""

    def __init__(self, name, eq=False):
        self.name = name
        self.eq = eq
        self.lib = tg if name == "tg" else torch
        self.no_grad = self.lib.no_grad
        self.grad = self.lib.autograd.grad

    def T(self, data, rg=False):
        a = np.array(data, dtype=float)
        if self.name == "tg":
            return tg.tensor(a, requires_grad=rg)
        return torch.tensor(a, dtype=torch.float64, requires_grad=rg)

    def I(self, data):  # noqa: E743 - an integer tensor
        a = np.array(data, dtype=np.int64)
        return tg.tensor(a) if self.name == "tg" else torch.tensor(a)

    def B(self, data):
        a = np.array(data, dtype=bool)
        return tg.tensor(a) if self.name == "tg" else torch.tensor(a)

    def c(self, t):
        return t.clone() if self.eq else t

    def part(self, src, shape):
        return src[tuple(slice(0, n) for n in shape)] if self.eq else src


TG, TO, TO_EQ = _Lib("tg"), _Lib("torch"), _Lib("torch", eq=True)


def _vals(r):
    if r is None or isinstance(r, (bool, int, float, str)):
        return r
    if isinstance(r, (list, tuple)):
        return [_vals(x) for x in r]
    a = np.asarray(r.detach().numpy())
    return (a.copy(), a.dtype.kind)


def _assert_same(a, b, where="result"):
    if isinstance(a, tuple) and isinstance(b, tuple):
        (x, kx), (y, ky) = a, b
        assert x.shape == y.shape, f"{where}: shape {x.shape} vs torch {y.shape}"
        assert kx == ky, f"{where}: dtype kind {kx} vs torch {ky}"
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12, err_msg=where)
        return
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} results vs torch {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{k}]")
        return
    assert type(a) is type(b) and a == b, f"{where}: tapegrad {a!r} vs torch {b!r}"


def _run(prog, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _vals(prog(lib))


def _raised(prog, lib):
    try:
        _run(prog, lib)
    except Exception as e:  # noqa: BLE001 - which one is checked by the caller
        return e
    return None


X23 = np.arange(1.0, 7.0).reshape(2, 3) / 4
X234 = np.arange(1.0, 25.0).reshape(2, 3, 4) / 10
X44 = np.arange(1.0, 17.0).reshape(4, 4) / 8


def fin(L, y, x, *extra):
    """A loss that reads y (weighted) and the views in ``extra``; returns y, the views and
    x's gradient."""
    w = L.T(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)))
    loss = (y * y * w).sum()
    for e in extra:
        loss = loss + (e * e * e).sum()
    loss.backward()
    return [y, *extra, x.grad]


# ---- programs --------------------------------------------------------------------------------
def p_view_chain(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.view(3, 2).t().narrow(1, 1, 2)
    v.mul_(L.T([[2.0, 3.0], [4.0, 5.0]]))
    return fin(L, y, x, v)


def p_movedim(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.movedim(0, 2)
    v[1, 2].add_(x[0, 0, :2] ** 2)
    return fin(L, y, x, v)


def p_movedim_tuple(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.movedim((0, 1), (2, 0))
    v.mul_(L.T(np.arange(24.0).reshape(tuple(v.shape))))
    return fin(L, y, x, v)


def p_mT(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.mT
    v[:, 0].sub_(x[:, :, 1] * 2)
    return fin(L, y, x, v)


def p_mT_2d(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.mT
    v[2] = L.T([7.0, 8.0])
    return fin(L, y, x, v)


def p_swapdims(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.swapdims(0, 2)
    v[0, 0, 1] = x[0, 0, 0] * 3
    return fin(L, y, x, v)


def p_T_then_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.T
    y[1].mul_(x[0])
    return fin(L, y, x, v)


def p_transpose_neg(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.transpose(-1, -3)
    v.add_(1.0)
    v[0].mul_(2)
    return fin(L, y, x, v)


def p_permute_neg(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.permute(-1, 0, 1)
    v[3].pow_(2)
    return fin(L, y, x, v)


def p_expand_base_write(L):
    x = L.T([[1.0], [2.0]], True)
    y = x * 1.0
    e = y.expand(2, 3)
    y.mul_(x)
    return fin(L, y, x, e)


def p_expand_mul_refused(L):
    x = L.T([[1.0], [2.0]], True)
    y = x * 1.0
    e = y.expand(2, 3)
    e.mul_(2)
    return fin(L, y, x, e)


def p_expand_setitem_refused(L):
    x = L.T([[1.0], [2.0]], True)
    y = x * 1.0
    e = y.expand(2, 3)
    e[0, 1] = 5.0
    return fin(L, y, x, e)


def p_expand_slice_then_write(L):
    x = L.T([[1.0], [2.0]], True)
    y = x * 1.0
    e = y.expand(2, 3)[:, 1:2]
    e.mul_(2)
    return fin(L, y, x, e)


def p_expand_as_write_base(L):
    x = L.T([1.0, 2.0, 3.0], True)
    y = x * 1.0
    e = y.expand_as(L.T(np.zeros((2, 3))))
    y[1] = x[2] * 5
    return fin(L, y, x, e)


def p_narrow_neg(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y.narrow(-1, -3, 2)
    v.div_(L.T([2.0, 4.0]))
    return fin(L, y, x, v)


def p_narrow_tensor_start(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y.narrow(0, 1, 2)
    v.clamp_(0.5, 1.0)
    return fin(L, y, x, v)


def p_select_neg(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.select(-2, -1)
    v.mul_(x[1, 0])
    return fin(L, y, x, v)


def p_index_mixed_basic(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y[None, 1, ..., ::2]
    v.mul_(3.0)
    return fin(L, y, x, v)


def p_index_steps(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[1::2, ::3]
    v.add_(x[:2, :2] * 10)
    return fin(L, y, x, v)


def p_index_neg_step(L):
    x = L.T(X44, True)
    y = x * 1.0
    if L.eq:  # PyTorch has no negative steps: the flip, written after the change
        y[0].mul_(3.0)
        v = y.flip(0)
    else:  # NumPy's reversed view: a write through it reaches y
        v = y[::-1]
        v[3].mul_(3.0)
    return fin(L, y, x, v)


def p_index_empty_slice(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[3:1]
    v.mul_(2)
    return fin(L, y, x, v)


def p_index_ellipsis_none(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y[..., None, 2]
    v.zero_()
    return fin(L, y, x, v)


def p_index_oob_slice(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[2:100, -100:1]
    v.fill_(7.0)
    return fin(L, y, x, v)


def p_diag_offset(L):
    x = L.T(X44, True)
    y = x * 1.0
    d = y.diagonal(1)
    d.mul_(x[0, :3])
    return fin(L, y, x, d)


def p_diag_neg_offset_dims(L):
    x = L.T(X234, True)
    y = x * 1.0
    d = y.diagonal(offset=-1, dim1=2, dim2=1)
    d.add_(5.0)
    return fin(L, y, x, d)


def p_diag_base_write(L):
    x = L.T(X44, True)
    y = x * 1.0
    d = y.diagonal()
    y.mul_(2.0)
    y[0, 0] = x[1, 1] ** 2
    return fin(L, y, x, d)


def p_diag_setitem(L):
    x = L.T(X44, True)
    y = x * 1.0
    d = y.diagonal()
    d[1:3] = x[0, :2]
    return fin(L, y, x, d)


def p_diag_of_T(L):
    x = L.T(X44, True)
    y = x * 1.0
    d = y.T[1:].diagonal()
    d.mul_(4)
    return fin(L, y, x, d)


def p_tensor_split_write(L):
    x = L.T(X44, True)
    y = x * 1.0
    a, b, c = y.tensor_split(3, dim=1)
    y.mul_(2)
    return fin(L, y, x, a, b, c)


def p_split_base_write(L):
    x = L.T(X44, True)
    y = x * 1.0
    a, b = (y[:1], y[1:]) if L.eq else y.split([1, 3])
    y[0, 0] = 100.0
    y[3].mul_(x[0])
    return fin(L, y, x, a, b)


def p_chunk_base_write(L):
    x = L.T(X44, True)
    y = x * 1.0
    a, b = (y[:, :2], y[:, 2:]) if L.eq else y.chunk(2, dim=-1)
    y.add_(x)
    return fin(L, y, x, a, b)


def p_unbind_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    a, b = (y[0], y[1]) if L.eq else y.unbind()
    y[0, 1] = x[1, 1] * 9
    return fin(L, y, x, a, b)


def p_squeeze_dim_write(L):
    x = L.T(X23[:1], True)
    y = x * 1.0
    v = y.squeeze(0)
    v.mul_(x[0])
    return fin(L, y, x, v)


def p_squeeze_noop(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.squeeze(0)
    v.mul_(x)
    return fin(L, y, x, v)


def p_squeeze_tuple(L):
    x = L.T(np.arange(6.0).reshape(1, 2, 1, 3), True)
    y = x * 1.0
    v = y.squeeze((0, 2))
    v[1].add_(2.0)
    return fin(L, y, x, v)


def p_unsqueeze_neg(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.unsqueeze(-1)
    v[..., 0].mul_(3.0)
    return fin(L, y, x, v)


def p_flatten_range(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.flatten(1, 2)
    v[:, 5].mul_(-1.0)
    return fin(L, y, x, v)


def p_flatten_of_T(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.T.flatten()
    v.mul_(2)
    return fin(L, y, x, v)


def p_unflatten(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.unflatten(2, (2, 2))
    v[:, :, 1].mul_(x[:, :, :2])
    return fin(L, y, x, v)


def p_unflatten_neg(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.unflatten(-1, (-1, 2))
    v.add_(1.0)
    return fin(L, y, x, v)


def p_view_as(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.view_as(L.T(np.zeros((3, 2))))
    v[2].mul_(5.0)
    return fin(L, y, x, v)


def p_reshape_contig_write(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.reshape(6, 4)
    v[1:3].mul_(x[0, :2])
    return fin(L, y, x, v)


def p_reshape_noncontig_copy(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.transpose(0, 1).reshape(6, 4)
    v.mul_(0.0)
    return fin(L, y, x, v)


def p_view_noncontig_raises(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.transpose(0, 1).view(6, 4)
    return fin(L, y, x, v)


def p_view_minus1_compat(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.transpose(1, 2).view(2, 4, 3, 1)
    v.mul_(2)
    return fin(L, y, x, v)


def p_view_split_dim_noncontig(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y.permute(2, 0, 1).view(2, 2, 2, 3)
    v[1].mul_(3)
    return fin(L, y, x, v)


def p_chain_select_T_narrow(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y[1].T.narrow(0, 1, 2)[:, 1]
    v.mul_(x[0, 0, :2])
    y2 = y[1]
    return fin(L, y, x, v, y2)


def p_two_views_overlap(L):
    x = L.T(X44, True)
    y = x * 1.0
    a = y[:, 1:3]
    b = y[1:3]
    a.mul_(2)
    b.add_(x[:2])
    return fin(L, y, x, a, b)


def p_view_of_view_gone(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[1:][:, 2:]  # the view in between is gone
    v.mul_(3)
    return fin(L, y, x, v)


def p_old_view_after_view_write(L):
    x = L.T(X44, True)
    y = x * 1.0
    a = y.T
    b = y[1]
    b.mul_(x[2])
    return fin(L, y, x, a, b)


def p_add_alpha_view(L):
    x = L.T(X44, True)
    z = L.T([1.0, -2.0, 3.0, 0.5], True)
    y = x * 1.0
    y[1:3].add_(z, alpha=-2.5)
    return fin(L, y, x) + [z.grad]


def p_sub_alpha_view(L):
    x = L.T(X44, True)
    z = L.T([[1.0, -2.0]], True)
    y = x * 1.0
    y[:, ::2].T.sub_(z.T, alpha=0.5)
    return fin(L, y, x) + [z.grad]


def p_mul_bcast_view(L):
    x = L.T(X234, True)
    z = L.T([1.0, -2.0, 3.0, 0.5], True)
    y = x * 1.0
    y[1].mul_(z)
    return fin(L, y, x) + [z.grad]


def p_div_view_grad(L):
    x = L.T(X234, True)
    z = L.T([[1.5], [-2.0], [3.0]], True)
    y = x * 1.0
    y.select(2, 1).div_(z.squeeze(1))
    return fin(L, y, x) + [z.grad]


def p_div_self(L):
    x = L.T(X23 + 1, True)
    y = x * 1.0
    y[0].div_(y[1])
    return fin(L, y, x)


def p_pow_scalar_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[:, 1:].pow_(3)
    return fin(L, y, x)


def p_pow_tensor_view(L):
    x = L.T(X23 + 0.5, True)
    z = L.T([1.5, 2.5], True)
    y = x * 1.0
    y[1, 1:].pow_(z)
    return fin(L, y, x) + [z.grad]


def p_pow_zero_exp(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[0].pow_(0)
    return fin(L, y, x)


def p_clamp_tensor_bounds(L):
    x = L.T(X44, True)
    lo = L.T([0.3, 0.6, 0.9, 1.2], True)
    y = x * 1.0
    y[1:].clamp_(min=lo)
    return fin(L, y, x) + [lo.grad]


def p_clamp_min_max_tensors(L):
    x = L.T(X44, True)
    lo = L.T([0.3, 0.6, 0.9, 1.2], True)
    hi = L.T([1.0], True)
    y = x * 1.0
    y.T[1:3].clamp_(lo, hi)
    return fin(L, y, x) + [lo.grad, hi.grad]


def p_clamp_min_(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[::2].clamp_min_(0.5)
    y[1::2].clamp_max_(1.2)
    return fin(L, y, x)


def p_copy_bcast(L):
    x = L.T(X234, True)
    s = L.T([9.0, 8.0, 7.0, 6.0], True)
    y = x * 1.0
    y[:, 1:].copy_(s)
    return fin(L, y, x) + [s.grad]


def p_copy_bcast_T(L):
    x = L.T(X234, True)
    s = L.T([[9.0], [8.0]], True)
    y = x * 1.0
    y[:, 0].T.copy_(s.T.expand(4, 2) * 2)
    return fin(L, y, x) + [s.grad]


def p_copy_int_src(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[1].copy_(L.I([1, 2, 3]))
    return fin(L, y, x)


def p_copy_self_overlap(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[1:].copy_(y[:-1].clone())
    return fin(L, y, x)


def p_fill_tensor_value(L):
    x = L.T(X23, True)
    v = L.T(2.5, True)
    y = x * 1.0
    y[:, 1].fill_(v)
    return fin(L, y, x) + [v.grad]


def p_fill_1elem_tensor(L):
    x = L.T(X23, True)
    v = L.T([2.5], True)
    y = x * 1.0
    y[:, 1].fill_(v[0])
    return fin(L, y, x) + [v.grad]


def p_zero_diag(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.diagonal().zero_()
    return fin(L, y, x)


def p_masked_fill_view(L):
    x = L.T(X44, True)
    y = x * 1.0
    m = L.B([[True, False, True, False]])
    y[1:3].masked_fill_(m, -1.0)
    return fin(L, y, x)


def p_masked_fill_tensor_value(L):
    x = L.T(X44, True)
    v = L.T(3.0, True)
    y = x * 1.0
    m = L.B([True, False, False, True])
    y.T.masked_fill_(m, v)
    return fin(L, y, x) + [v.grad]


def p_masked_fill_bcast_mask_bigger(L):
    x = L.T(X23, True)
    y = x * 1.0
    m = L.B(np.ones((2, 2, 3), bool))
    y.masked_fill_(m, 0.0)
    return fin(L, y, x)


def p_index_add_view(L):
    x = L.T(X44, True)
    s = L.T(np.arange(8.0).reshape(2, 4) / 3, True)
    y = x * 1.0
    y[1:].index_add_(0, L.I([2, 0]), s, alpha=2.0)
    return fin(L, y, x) + [s.grad]


def p_index_add_dup(L):
    x = L.T(X44, True)
    s = L.T(np.arange(12.0).reshape(4, 3) / 3, True)
    y = x * 1.0
    y[:, 1:].index_add_(1, L.I([2, 2, 0]), s)
    return fin(L, y, x) + [s.grad]


def p_index_copy_view(L):
    x = L.T(X44, True)
    s = L.T(np.arange(8.0).reshape(4, 2) / 3, True)
    y = x * 1.0
    y.T.index_copy_(1, L.I([3, 0]), s)
    return fin(L, y, x) + [s.grad]


def p_index_copy_self_src(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.index_copy_(0, L.I([0, 1]), y[2:].clone() * x[:2])
    return fin(L, y, x)


def p_index_fill_view(L):
    x = L.T(X234, True)
    y = x * 1.0
    y[1].index_fill_(1, L.I([0, 3]), -2.0)
    return fin(L, y, x)


def p_index_fill_tensor_value(L):
    x = L.T(X234, True)
    v = L.T(1.5, True)
    y = x * 1.0
    y[:, 1:].index_fill_(-1, L.I([1]), v)
    return fin(L, y, x) + [v.grad]


def p_scatter_src_view(L):
    x = L.T(X44, True)
    s = L.T(np.arange(8.0).reshape(2, 4) / 3, True)
    y = x * 1.0
    y[1:3].scatter_(1, L.I([[1, 0, 3, 2], [0, 1, 2, 3]]), s)
    return fin(L, y, x) + [s.grad]


def p_scatter_value(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.T.scatter_(0, L.I([[1, 0], [3, 2]]), 9.0)
    return fin(L, y, x)


def p_scatter_partial_index(L):
    x = L.T(X44, True)
    s = L.T(np.arange(16.0).reshape(4, 4) / 3, True)
    y = x * 1.0
    y[:, 1:].scatter_(0, L.I([[2, 1], [0, 3]]), L.part(s, (2, 2)))
    return fin(L, y, x) + [s.grad]


def p_scatter_add_view(L):
    x = L.T(X44, True)
    s = L.T(np.arange(16.0).reshape(4, 4) / 3, True)
    y = x * 1.0
    y[1:].scatter_add_(1, L.I([[0, 0, 2], [1, 1, 1]]), L.part(s, (2, 3)))
    return fin(L, y, x) + [s.grad]


def p_scatter_add_dim0(L):
    x = L.T(X44, True)
    s = L.T(np.arange(16.0).reshape(4, 4) / 3, True)
    y = x * 1.0
    y.T.scatter_add_(0, L.I([[3, 3, 0, 1], [3, 0, 0, 2]]), L.part(s, (2, 4)))
    return fin(L, y, x) + [s.grad]


def p_set_int(L):
    x = L.T(X44, True)
    v = L.T(3.0, True)
    y = x * 1.0
    y[1, -1] = v * v
    return fin(L, y, x) + [v.grad]


def p_set_row_bcast(L):
    x = L.T(X44, True)
    v = L.T([1.0, 2.0, 3.0, 4.0], True)
    y = x * 1.0
    y[1:3] = v
    return fin(L, y, x) + [v.grad]


def p_set_col_bcast_0d(L):
    x = L.T(X44, True)
    v = L.T(2.0, True)
    y = x * 1.0
    y[:, 2] = v
    return fin(L, y, x) + [v.grad]


def p_set_bcast_leading1(L):
    x = L.T(X44, True)
    v = L.T([[[1.0, 2.0]]], True)
    y = x * 1.0
    y[1:3, :2] = v
    return fin(L, y, x) + [v.grad]


def p_set_adv_list(L):
    x = L.T(X44, True)
    v = L.T([[1.0, 2.0, 3.0, 4.0], [5, 6, 7, 8]], True)
    y = x * 1.0
    y[[3, 0]] = v
    return fin(L, y, x) + [v.grad]


def p_set_adv_tensor_idx(L):
    x = L.T(X44, True)
    v = L.T([1.0, 2.0], True)
    y = x * 1.0
    y[L.I([0, 2]), L.I([3, 1])] = v
    return fin(L, y, x) + [v.grad]


def p_set_adv_bcast_value(L):
    x = L.T(X44, True)
    v = L.T([1.0, 2.0, 3.0], True)
    y = x * 1.0
    y[L.I([[0], [2]]), L.I([1, 2, 3])] = v
    return fin(L, y, x) + [v.grad]


def p_set_adv_mixed_slice(L):
    x = L.T(X234, True)
    v = L.T(np.arange(8.0).reshape(2, 4), True)
    y = x * 1.0
    y[:, L.I([2, 0])] = v.unsqueeze(0).expand(2, 2, 4) * 1.0
    return fin(L, y, x) + [v.grad]


def p_set_adv_separated(L):
    x = L.T(X234, True)
    v = L.T([1.0, 2.0, 3.0], True)
    y = x * 1.0
    y[L.I([1, 0]), :, L.I([3, 3])] = v
    return fin(L, y, x) + [v.grad]


def p_set_adv_neg(L):
    x = L.T(X44, True)
    v = L.T([5.0, 6.0], True)
    y = x * 1.0
    y[L.I([-1, -4]), 0] = v
    return fin(L, y, x) + [v.grad]


def p_set_bool_mask(L):
    x = L.T(X44, True)
    v = L.T(-1.0, True)
    y = x * 1.0
    y[y > 1.0] = v
    return fin(L, y, x) + [v.grad]


def p_set_bool_mask_values(L):
    x = L.T(X23, True)
    v = L.T([7.0, 8.0, 9.0], True)
    y = x * 1.0
    y[L.B([[True, False, True], [False, True, False]])] = v
    return fin(L, y, x) + [v.grad]


def p_set_bool_row_mask(L):
    x = L.T(X44, True)
    v = L.T([1.0, 2.0, 3.0, 4.0], True)
    y = x * 1.0
    y[L.B([True, False, False, True])] = v
    return fin(L, y, x) + [v.grad]


def p_set_bool_mask_on_view(L):
    x = L.T(X44, True)
    v = L.T(-1.0, True)
    y = x * 1.0
    t = y.T[1:]
    t[t > 1.0] = v * 2
    return fin(L, y, x, t) + [v.grad]


def p_set_bool_0d_true(L):
    x = L.T(X23, True)
    v = L.T(4.0, True)
    y = x * 1.0
    y[True] = v
    return fin(L, y, x) + [v.grad]


def p_set_view_self_overlap(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[1:] = L.c(y[:-1])
    return fin(L, y, x)


def p_set_self_T(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[...] = L.c(y.T)
    return fin(L, y, x)


def p_set_ellipsis_value_view(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[0]
    y[...] = 0.0
    return fin(L, y, x, v)


def p_set_via_view_then_base_saved(L):
    x = L.T(X44, True)
    y = x * 1.0
    z = y.sin()
    v = y[2]
    v[1] = 10.0
    loss = (z * z).sum() + (y * y).sum()
    loss.backward()
    return [y, x.grad]


def p_set_int_tensor(L):
    y = L.I([[1, 2, 3], [4, 5, 6]])
    y[0, 1:] = L.T([2.7, -3.9])
    return [y]


def p_set_int_tensor_view(L):
    y = L.I([[1, 2, 3], [4, 5, 6]])
    v = y.T
    v[1] = L.I([10, 20])
    v.mul_(3)
    return [y, v]


def p_set_bool_tensor(L):
    y = L.B([[True, False], [False, False]])
    y[1] = True
    v = y.T
    v[0, 1].fill_(False)
    return [y.long(), v.long()]


def p_set_requires_grad_into_nograd(L):
    y = L.T(X23)
    v = L.T([1.0, 2.0, 3.0], True)
    y[1] = v * 2
    (y * y).sum().backward()
    return [y, v.grad, y.requires_grad]


def p_set_requires_grad_into_nograd_view(L):
    y = L.T(X23)
    w = y.T
    v = L.T([1.0, 2.0], True)
    w[0] = v * 2
    (y * y).sum().backward()
    return [y, w, v.grad, y.requires_grad, w.requires_grad]


def p_inplace_grad_into_nograd_base_view_used(L):
    y = L.T(X44)
    a = y[1]
    v = L.T([1.0, 2.0, 3.0, 4.0], True)
    y[1:3].mul_(v)
    (a * a * a).sum().backward()
    return [a, v.grad, a.requires_grad]


def p_leaf_add_(L):
    x = L.T(X23, True)
    x.add_(1.0)
    return [x]


def p_leaf_setitem(L):
    x = L.T(X23, True)
    x[0, 0] = 1.0
    return [x]


def p_leaf_view_mul_(L):
    x = L.T(X23, True)
    x[0].mul_(2.0)
    return [x]


def p_leaf_T_view_setitem(L):
    x = L.T(X23, True)
    x.T[0] = 2.0
    return [x]


def p_leaf_diag_view_zero(L):
    x = L.T(X44, True)
    x.diagonal().zero_()
    return [x]


def p_leaf_view_view(L):
    x = L.T(X44, True)
    x.view(16)[2:].view(2, 7).fill_(1.0)
    return [x]


def p_leaf_unsqueeze_copy_(L):
    x = L.T(X23, True)
    x.unsqueeze(0).copy_(L.T(np.ones((1, 2, 3))))
    return [x]


def p_leaf_expand_fill(L):
    x = L.T([[1.0], [2.0]], True)
    x.expand(2, 3).fill_(1.0)
    return [x]


def p_leaf_index_add(L):
    x = L.T(X44, True)
    x.index_add_(0, L.I([1]), L.T(np.ones((1, 4))))
    return [x]


def p_leaf_masked_fill(L):
    x = L.T(X44, True)
    x.masked_fill_(L.B(np.eye(4, dtype=bool)), 0.0)
    return [x]


def p_leaf_scatter(L):
    x = L.T(X44, True)
    x.scatter_(0, L.I([[1]]), 0.0)
    return [x]


def p_leaf_detach_view_ok(L):
    x = L.T(X23, True)
    x.detach()[0, 1] = 10.0
    (x * x).sum().backward()
    return [x, x.grad]


def p_leaf_nograd_view(L):
    x = L.T(X44, True)
    with L.no_grad():
        x[1:3].T[0].mul_(2.0)
        x.diagonal().add_(1.0)
        v = x.view(2, 8)
        v[0, 3] = -1.0
    (x * x * x).sum().backward()
    return [x, x.grad, v]


def p_leaf_nograd_view_then_view_used(L):
    x = L.T(X44, True)
    v = x[1:3]
    with L.no_grad():
        x.mul_(2.0)
    (v * v).sum().backward()
    return [x, v, x.grad]


def p_leaf_nograd_view_made_inside(L):
    x = L.T(X44, True)
    with L.no_grad():
        v = x[1:3]
    v2 = x[1:3]
    with L.no_grad():
        v.mul_(2.0)
    (v2 * v2).sum().backward()
    return [x, v, v2, x.grad]


def p_leaf_nograd_saved_then_backward(L):
    x = L.T(X23, True)
    y = (x * x).sum()
    with L.no_grad():
        x[0].add_(1.0)
    y.backward()
    return [x.grad]


def p_leaf_nograd_not_saved(L):
    x = L.T(X23, True)
    y = (x * 3.0).sum()
    with L.no_grad():
        x.T[0].add_(1.0)
    y.backward()
    return [x, x.grad]


def p_nograd_view_of_leaf_then_setitem_grad_value(L):
    x = L.T(X23, True)
    v = L.T(2.0, True)
    with L.no_grad():
        w = x[0]
    w[1] = v * 3
    return [x, w]


def p_view_of_leaf_grad_mode_setitem_nograd_value(L):
    x = L.T(X23, True)
    w = x[0]
    w[1] = 3.0
    return [x, w]


def p_ver_exp(L):
    x = L.T(X23, True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()
    return [x.grad]


def p_ver_exp_view(L):
    x = L.T(X23, True)
    y = x.exp()
    y[0].add_(1)
    y.sum().backward()
    return [x.grad]


def p_ver_exp_T_view(L):
    x = L.T(X23, True)
    y = x.exp()
    y.T[1, 0] = 1.0
    y.sum().backward()
    return [x.grad]


def p_ver_sigmoid_view(L):
    x = L.T(X23, True)
    y = x.sigmoid()
    y[:, 1].zero_()
    y.sum().backward()
    return [x.grad]


def p_ver_tanh_detach(L):
    x = L.T(X23, True)
    y = x.tanh()
    y.detach().T[0].mul_(2)
    y.sum().backward()
    return [x.grad]


def p_ver_sqrt_data(L):
    x = L.T(X23, True)
    y = x.sqrt()
    y.data[0, 0] = 5.0
    y.sum().backward()
    return [x.grad]


def p_ver_pow_input_view(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = L.c(h[0]) ** 3
    h[1].mul_(2)
    y.sum().backward()
    return [x.grad, h]


def p_ver_mul_input_base(L):
    x = L.T(X23, True)
    h = x * 1.0
    v = h[0]
    y = v * v
    h.add_(1)
    y.sum().backward()
    return [x.grad]


def p_ver_mul_input_other_view(L):
    x = L.T(X44, True)
    h = x * 1.0
    y = L.c(h[0]) * L.c(h[0])
    h[3].mul_(2)
    y.sum().backward()
    return [x.grad]


def p_ver_matmul_T(L):
    x = L.T(X44, True)
    h = x * 1.0
    y = h @ h.T
    h.T[0].mul_(2)
    y.sum().backward()
    return [x.grad]


def p_ver_div_denominator(L):
    x = L.T(X23 + 1, True)
    h = x * 1.0
    y = 1.0 / h
    h[0, 0] = 2.0
    y.sum().backward()
    return [x.grad]


def p_ver_div_by_view(L):
    x = L.T(X23 + 1, True)
    c = L.T(X23 + 2, True)
    h = x * 1.0
    y = c / L.c(h[1])
    h.diagonal().mul_(3)
    y.sum().backward()
    return [x.grad, c.grad]


def p_ver_log_input(L):
    x = L.T(X23 + 1, True)
    h = x * 1.0
    y = L.c(h.T).log()
    h.mul_(2)
    y.sum().backward()
    return [x.grad]


def p_ver_sum_nosave(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = (h[0] * 2).sum()
    h.mul_(2)
    y.backward()
    return [x.grad, h]


def p_ver_twice_backward_after_write(L):
    x = L.T(X23, True)
    y = x.exp()
    s = y.sum() * 1.0
    s.backward(retain_graph=True)
    g1 = x.grad.clone()
    y.mul_(2)
    (y.sum()).backward()
    return [g1, x.grad]


def p_ver_relu_view(L):
    x = L.T(X23 - 0.8, True)
    y = L.c(x.relu())
    y[0].add_(1)
    y.sum().backward()
    return [x.grad]


def p_ver_clamp_view_nosave(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = h.clamp(0.3, 1.0)
    h.add_(1)
    y.sum().backward()
    return [x.grad, y]


def p_ver_getitem_adv(L):
    x = L.T(X44, True)
    h = x * 1.0
    y = h[[0, 2]] ** 2
    h[0, 0] = 9.0
    y.sum().backward()
    return [x.grad]


def p_ver_norm_view(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = L.c(h[0]).norm()
    h[0, 1] = 9.0
    y.backward()
    return [x.grad]


def p_ver_softmax_out(L):
    x = L.T(X23, True)
    y = L.c(x.softmax(1))
    y[0, 0] = 0.5
    y.sum().backward()
    return [x.grad]


def p_ver_cumsum_nosave(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = h.cumsum(1)
    h.mul_(2)
    (y * y).sum().backward()
    return [x.grad, y]


def p_ver_cumprod_save(L):
    x = L.T(X23, True)
    h = x * 1.0
    y = h.cumprod(1)
    h[0, 0] = 3.0
    y.sum().backward()
    return [x.grad]


def p_ver_inplace_own_result_saved(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.exp_()
    y[0].mul_(2)
    y.sum().backward()
    return [x.grad]


def p_ver_after_inplace_fine(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.exp_()
    z = y * y
    z.sum().backward()
    return [x.grad, y]


def p_rg_view_T(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y.T
    v.retain_grad()
    (v * v * v).sum().backward()
    return [v.grad, x.grad]


def p_rg_view_chain(L):
    x = L.T(X234, True)
    y = x * 1.0
    v = y[1].T[1:]
    v.retain_grad()
    y.retain_grad()
    (v.exp() + y.sum()).sum().backward()
    return [v.grad, y.grad, x.grad]


def p_rg_base_after_view_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.retain_grad()
    y[0].mul_(3.0)
    (y * y).sum().backward()
    return [y.grad, x.grad]


def p_rg_view_written_then_used(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[1]
    v.retain_grad()
    v.mul_(2.0)
    (v * v).sum().backward()
    return [v.grad, x.grad]


def p_rg_view_before_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[1]
    v.retain_grad()
    y.mul_(2.0)
    (v * v).sum().backward()
    return [v.grad, x.grad]


def p_gradfn_view_not_none(L):
    x = L.T(X23, True)
    y = x * 1.0
    vs = [
        y[0],
        y.T,
        y.view(6),
        y.narrow(1, 0, 2),
        y.diagonal(),
        y.unsqueeze(0),
        y.expand(2, 2, 3),
        y.select(1, 1),
        y.movedim(0, 1),
        y.unflatten(1, (3, 1)),
    ]
    return (
        [v.grad_fn is not None for v in vs]
        + [v.is_leaf for v in vs]
        + [v.requires_grad for v in vs]
    )


def p_gradfn_view_of_leaf(L):
    x = L.T(X23, True)
    vs = [x[0], x.T, x.view(6), x.narrow(1, 0, 2), x.diagonal(), x.unsqueeze(0)]
    return [v.grad_fn is not None for v in vs] + [v.is_leaf for v in vs]


def p_gradfn_after_inplace(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[0]
    v.add_(1.0)
    return [y.grad_fn is not None, v.grad_fn is not None, y.is_leaf, v.is_leaf]


def p_view_of_nograd_tensor_write_grad(L):
    y = L.T(X23)
    v = y.T
    z = L.T([1.0, 2.0], True)
    v[1].mul_(z)
    return [y.requires_grad, v.requires_grad, y.is_leaf, v.is_leaf]


def p_detach_shares(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach()
    d[0, 0] = 5.0
    d.T[2].mul_(2)
    (y * 3.0).sum().backward()
    return [y, d, x.grad, d.requires_grad]


def p_detach_view_shares(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[1]
    d = v.detach()
    d.add_(10.0)
    (y * x).sum().backward()
    return [y, v, d, x.grad]


def p_detach_then_view_of_detached(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach().T
    d[0].zero_()
    loss = (y * x).sum()
    loss.backward()
    return [y, d, x.grad]


def p_detach_inplace_then_saved_other(L):
    x = L.T(X23, True)
    y = x * 1.0
    z = y.exp()
    d = y.detach()
    d.mul_(2)
    z.sum().backward()
    return [x.grad, y, z]


def p_detach_leaf_grad_after(L):
    x = L.T(X23, True)
    d = x.detach()
    y = (x * x).sum()
    d[0, 0] = 3.0
    y.backward()
    return [x.grad]


def p_detach_leaf_nosave(L):
    x = L.T(X23, True)
    d = x.detach()
    y = (x * 2).sum()
    d[0, 0] = 3.0
    y.backward()
    return [x, x.grad]


def p_detach__on_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[0]
    v.detach_()
    return [v.requires_grad]


def p_detach_base_then_view_grad(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[:, 1]
    y.detach().mul_(0.5)
    (v * x[:, 0]).sum().backward()
    return [v, x.grad]


def p_requires_grad_view_write(L):
    y = L.T(X23)
    v = y[0]
    y.requires_grad_()
    with L.no_grad():
        v.mul_(2)
    (y * y).sum().backward()
    return [y, v, y.grad]


def p_data_assign_leaf(L):
    x = L.T(X23, True)
    y = (x * 2).sum()
    v = x.T
    x.data = L.T(np.ones((2, 3))).detach() if L.name == "torch" else np.ones((2, 3))
    y.backward()
    return [x, x.grad, v]


def p_clone_then_view_write(L):
    x = L.T(X23, True)
    y = x.clone()
    v = y.T
    v[0, 1] = x[0, 0] * 3
    (y * y).sum().backward()
    return [y, x.grad]


def p_contig_of_T_is_copy(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.T.contiguous()
    c.mul_(2)
    return fin(L, y, x, c)


def p_contig_of_contig_is_self(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.contiguous()
    c.mul_(2)
    return fin(L, y, x, c)


def p_reshape_same_shape(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.reshape(2, 3)
    c.mul_(2)
    return fin(L, y, x, c)


def p_view_same_shape(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.view(2, 3)
    c[0].mul_(2)
    return fin(L, y, x, c)


def p_expand_same_shape(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.expand(2, 3)
    c[0].mul_(2)
    return fin(L, y, x, c)


def p_t_1d(L):
    x = L.T([1.0, 2.0], True)
    y = x * 1.0
    c = y.t()
    c.mul_(2)
    return fin(L, y, x, c)


def p_T_0d(L):
    x = L.T(2.0, True)
    y = x * 1.0
    c = y.T
    c.mul_(2)
    return fin(L, y, x, c)


def p_squeeze_0d(L):
    x = L.T(2.0, True)
    y = x * 1.0
    c = y.squeeze()
    c.mul_(2)
    d = y.unsqueeze(0)
    d.add_(1)
    return fin(L, y, x, c, d)


def p_view_0d_to_1(L):
    x = L.T(2.0, True)
    y = x * 1.0
    c = y.view(1, 1)
    c[0, 0] = 5.0 * x
    return fin(L, y, x, c)


def p_flatten_0d(L):
    x = L.T(2.0, True)
    y = x * 1.0
    c = y.flatten()
    c.mul_(x)
    return fin(L, y, x, c)


def p_permute_identity(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.permute(0, 1)
    c.mul_(2)
    return fin(L, y, x, c)


def p_movedim_same(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.movedim(0, 0)
    c[1].mul_(2)
    return fin(L, y, x, c)


def p_transpose_same(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.transpose(1, 1)
    c[1].mul_(2)
    return fin(L, y, x, c)


def p_swapaxes_same(L):
    x = L.T(X234, True)
    y = x * 1.0
    c = y.swapaxes(-1, 2)
    c[1].mul_(2)
    return fin(L, y, x, c)


def p_narrow_full(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.narrow(0, 0, 2)
    c.mul_(2)
    return fin(L, y, x, c)


def p_split_single(L):
    x = L.T(X23, True)
    y = x * 1.0
    (c,) = (y[:, :],) if L.eq else y.split(5, dim=1)
    y.mul_(2)
    return fin(L, y, x, c)


def p_empty_view_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[:, 3:]
    c.mul_(2)
    y[1:1] = 7.0
    return fin(L, y, x, c)


def p_index_list_is_copy(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[[0, 1]]
    c.mul_(2)
    return fin(L, y, x, c)


def p_index_bool_is_copy(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[y > 0.5]
    c.mul_(2)
    return fin(L, y, x, c)


def p_index_tensor_int_0d(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[L.I(1)]
    c.mul_(2)
    return fin(L, y, x, c)


def p_index_npint(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[np.int64(1), np.int32(2)]
    c.mul_(2)
    return fin(L, y, x, c)


def p_index_tuple_with_list(L):
    x = L.T(X234, True)
    y = x * 1.0
    c = y[1, [0, 2]]
    c.mul_(2)
    return fin(L, y, x, c)


def p_det_view_temp(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[1].detach().mul_(2.0)
    return fin(L, y, x)


def p_det_view_temp_setitem(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.T.detach()
    d[0, 1] = 7.0
    return fin(L, y, x)


def p_det_of_T_temp(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach().T
    d[0].zero_()
    return fin(L, y, x)


def p_det_leaf_view(L):
    x = L.T(X23, True)
    x.detach()[0].fill_(2.0)
    x.detach().T[1, 1] = 5.0
    (x * x).sum().backward()
    return [x, x.grad]


def p_det_leaf_view_T_temp(L):
    x = L.T(X23, True)
    x[1].detach().mul_(3.0)
    (x * x).sum().backward()
    return [x, x.grad]


def p_det_nograd_tensor(L):
    y = L.T(X23)
    y[1].detach().mul_(3.0)
    y.detach().T[0].zero_()
    return [y]


def p_det_twice(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.detach().detach()[0, 0] = 9.0
    return fin(L, y, x)


def p_det_view_of_view(L):
    x = L.T(X234, True)
    y = x * 1.0
    y[1].T.detach()[2].mul_(10.0)
    return fin(L, y, x)


def p_nograd_view_temp(L):
    x = L.T(X23, True)
    y = x * 1.0
    with L.no_grad():
        y.T[1].mul_(5.0)
        y[0].detach().add_(1.0)
    return fin(L, y, x)


def p_view_of_detached_then_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach().T
    y.mul_(2.0)
    return fin(L, y, x, d)


def p_detached_view_sees_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y[1].detach()
    y.mul_(2.0)
    return fin(L, y, x) + [d]


def p_detached_sees_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach()
    y[1].mul_(2.0)
    return fin(L, y, x) + [d]


def p_detached_T_sees_base_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    d = y.detach().T
    y[1] = 0.0
    return fin(L, y, x) + [d]


def p_returns_self(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[0]
    r = [
        v.mul_(2) is v,
        v.add_(1) is v,
        v.clamp_(0, 2) is v,
        v.copy_(x[1]) is v,
        v.fill_(1.0) is v,
        v.zero_() is v,
        v.pow_(2) is v,
        v.div_(3) is v,
        v.sub_(1) is v,
        y.masked_fill_(y > 0.5, 0.0) is y,
        y.index_fill_(0, L.I([0]), 1.0) is y,
        y.scatter_(0, L.I([[1]]), 2.0) is y,
        y.index_add_(0, L.I([0]), x[:1]) is y,
        y.index_copy_(0, L.I([1]), x[:1]) is y,
        y.scatter_add_(1, L.I([[0]]), x[:1, :1]) is y,
    ]
    return r + fin(L, y, x)


def p_chained_inplace(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[0].mul_(x[1]).add_(1.0).pow_(2)
    y.T[2].clamp_(max=1.0).neg_()
    return fin(L, y, x)


def p_iadd_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[:, 1:]
    v += x[:, :2]
    v *= 2
    v -= 1
    v /= x[:, 2:]
    return fin(L, y, x, v)


def p_iadd_on_index_expr(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[1:3, ::2] += x[:2, :2] * 3
    y[0] *= 2
    y[[1, 2]] -= 1.0
    y[y < 0.5] /= 2
    return fin(L, y, x)


def p_iadd_adv_dup(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[[0, 1] if L.eq else [0, 0, 1]] += 1.0
    return fin(L, y, x)


def p_select_oob(L):
    x = L.T(X23, True)
    return [x.select(0, 2)]


def p_narrow_oob(L):
    x = L.T(X23, True)
    return [x.narrow(1, 2, 2)]


def p_narrow_neg_len(L):
    x = L.T(X23, True)
    return [x.narrow(1, 0, -1)]


def p_view_bad(L):
    x = L.T(X23, True)
    return [x.view(4, -1)]


def p_view_two_neg(L):
    x = L.T(X23, True)
    return [x.view(-1, -1)]


def p_expand_bad(L):
    x = L.T(X23, True)
    return [x.expand(3, 3)]


def p_expand_fewer_dims(L):
    x = L.T(X23, True)
    return [x.expand(3)]


def p_expand_neg_new_dim(L):
    x = L.T(X23, True)
    return [x.expand(-1, 2, 3)]


def p_int_view_add_float(L):
    y = L.I([[1, 2], [3, 4]])
    y[0].add_(0.5)
    return [y]


def p_int_view_mul_int(L):
    y = L.I([[1, 2], [3, 4]])
    y.T[0].mul_(3)
    return [y]


def p_int_view_div_(L):
    y = L.I([[1, 2], [3, 4]])
    y[0].div_(2)
    return [y]


def p_bool_mask_bad_shape(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[L.B([True, False, True])] = 0.0
    return [y]


def p_masked_fill_nonbool(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.masked_fill_(L.I([[1, 0, 1], [0, 0, 0]]), 0.0)
    return [y]


def p_masked_fill_value_1d(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.masked_fill_(y > 0.5, L.T([1.0, 2.0]))
    return [y]


def p_index_add_float_idx(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_add_(0, L.T([0.0]), x[:1])
    return [y]


def p_index_add_bad_src(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_add_(0, L.I([0, 1]), x[:1])
    return [y]


def p_index_copy_oob(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_copy_(0, L.I([2]), x[:1])
    return [y]


def p_scatter_oob(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.scatter_(1, L.I([[3]]), 1.0)
    return [y]


def p_index_fill_oob(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_fill_(1, L.I([-4]), 1.0)
    return [y]


def p_index_fill_neg(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_fill_(1, L.I([-1]), 1.0)
    return fin(L, y, x)


def p_index_copy_dup(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.index_copy_(1, L.I([1, 1]), x[:, :2] * 5)
    return [y]


def p_scatter_dup_src(L):
    x = L.T(X23, True)
    s = L.T([[5.0, 6.0]], True)
    y = x * 1.0
    y.scatter_(1, L.I([[2, 2]]), s)
    return [y]


def p_copy_bad_shape(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[0].copy_(x)
    return [y]


def p_copy_from_leaf_rg_into_nograd_view(L):
    y = L.T(X23)
    x = L.T([1.0, 2.0, 3.0], True)
    v = y[1]
    v.copy_(x * x)
    (y**3).sum().backward()
    return [y, v, x.grad, y.requires_grad]


def p_setitem_0d_int_tensor_key(L):
    x = L.T(X23, True)
    v = L.T([9.0, 8.0, 7.0], True)
    y = x * 1.0
    y[L.I(1)] = v
    return fin(L, y, x) + [v.grad]


def p_getitem_slice_tensor_bounds(L):
    x = L.T(X44, True)
    y = x * 1.0
    v = y[L.I(1) : L.I(3)]
    v.mul_(2)
    return fin(L, y, x, v)


def p_setitem_list_of_slices_like(L):
    x = L.T(X234, True)
    y = x * 1.0
    y[1, ..., L.I([0, 2])] = 0.5
    return fin(L, y, x)


def p_ellipsis_only_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[...]
    v.mul_(2)
    return fin(L, y, x, v)


def p_none_only_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[None]
    v[0, 1].mul_(2)
    return fin(L, y, x, v)


def p_colon_view(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[:]
    v[1].mul_(2)
    return fin(L, y, x, v)


def p_two_none(L):
    x = L.T(X23, True)
    y = x * 1.0
    v = y[:, None, :, None]
    v[1, 0, 2, 0] = 9.0
    return fin(L, y, x, v)


def p_view_unsqueezed_then_expand_slice(L):
    x = L.T([1.0, 2.0], True)
    y = x * 1.0
    e = y.unsqueeze(0).expand(3, 2)
    z = e[1]
    y[0] = 5.0
    return fin(L, y, x, e, z)


def p_adv_set_on_T_view(L):
    x = L.T(X44, True)
    v = L.T([[1.0, 2, 3, 4], [5, 6, 7, 8]], True)
    y = x * 1.0
    y.T[[0, 2]] = v
    return fin(L, y, x) + [v.grad]


def p_bool_set_on_slice_view(L):
    x = L.T(X44, True)
    v = L.T(0.5, True)
    y = x * 1.0
    s = y[1:]
    s[s > 1.0] = v * v
    return fin(L, y, x, s) + [v.grad]


def p_diag_adv_iadd(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.diagonal()[[0, 2]] += x[3, :2]
    return fin(L, y, x)


def p_index_put_on_narrow(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.narrow(1, 1, 2)[L.I([0, 3]), L.I([1, 0])] = x[0, 0] * 4
    return fin(L, y, x)


def p_index_add_on_T(L):
    x = L.T(X44, True)
    s = L.T(np.arange(8.0).reshape(4, 2), True)
    y = x * 1.0
    y.T.index_add_(1, L.I([1, 3]), s)
    return fin(L, y, x) + [s.grad]


def p_index_fill_on_diag(L):
    x = L.T(X44, True)
    y = x * 1.0
    y.diagonal().index_fill_(0, L.I([1, 2]), -3.0)
    return fin(L, y, x)


def p_scatter_on_movedim(L):
    x = L.T(X234, True)
    s = L.T(np.arange(24.0).reshape(4, 2, 3) / 7, True)
    y = x * 1.0
    y.movedim(2, 0).scatter_(0, L.I(np.array([[[0, 1, 2], [3, 2, 1]]])), L.part(s, (1, 2, 3)))
    return fin(L, y, x) + [s.grad]


def p_masked_fill_on_unsqueeze(L):
    x = L.T(X23, True)
    y = x * 1.0
    y.unsqueeze(1).masked_fill_(L.B([[[True, False, True]]]), 0.0)
    return fin(L, y, x)


def p_copy_into_flatten(L):
    x = L.T(X234, True)
    s = L.T(np.arange(24.0) / 5, True)
    y = x * 1.0
    y.flatten().copy_(s * s)
    return fin(L, y, x) + [s.grad]


def p_copy_into_unflatten(L):
    x = L.T(X234, True)
    s = L.T(np.arange(2.0) / 5, True)
    y = x * 1.0
    y.unflatten(-1, (2, 2)).copy_(s)
    return fin(L, y, x) + [s.grad]


def p_fill_on_view_as(L):
    x = L.T(X23, True)
    v = L.T(1.5, True)
    y = x * 1.0
    y.view_as(L.T(np.zeros(6)))[2:4].fill_(v)
    return fin(L, y, x) + [v.grad]


def p_double_backward_through_view_write(L):
    x = L.T(X23, True)
    y = x * 1.0
    y[0].mul_(x[1])
    y.T[2].pow_(2)
    loss = (y**3).sum()
    (g,) = L.grad(loss, x, create_graph=True)
    (gg,) = L.grad((g * g).sum(), x)
    return [g, gg]


def p_double_backward_setitem(L):
    x = L.T(X23, True)
    v = L.T(1.5, True)
    y = x * 1.0
    y[1, 1:] = x[0, :2] * v
    loss = (y**3).sum()
    g = L.grad(loss, (x, v), create_graph=True)
    gg = L.grad(sum((t * t).sum() for t in g), (x, v))
    return [*g, *gg]


def p_double_backward_index_ops(L):
    x = L.T(X44, True)
    s = L.T(np.arange(8.0).reshape(2, 4) / 3, True)
    y = x * 1.0
    y.index_add_(0, L.I([2, 0]), s * x[1:3])
    y.T.scatter_(0, L.I([[1, 0]]), s[:1, :2] ** 2)
    y[1:].masked_fill_(y[1:] > 1.5, 0.0)
    loss = (y**3).sum()
    g = L.grad(loss, (x, s), create_graph=True)
    gg = L.grad(sum((t * t).sum() for t in g), (x, s))
    return [*g, *gg]


def p_unbind_equiv_inplace(L):
    x = L.T(X23, True)
    y = x * 1.0
    a, b = (y[0], y[1]) if L.eq else y.unbind()
    a.mul_(b)
    return fin(L, y, x, a, b)


def p_split_equiv_inplace(L):
    x = L.T(X44, True)
    y = x * 1.0
    a, b = (y[:, :1], y[:, 1:]) if L.eq else y.split([1, 3], 1)
    b.add_(a)
    return fin(L, y, x, a, b)


def p_tensor_split_inplace(L):
    x = L.T(X44, True)
    y = x * 1.0
    a, b = (y[:3], y[3:]) if L.eq else y.tensor_split([3])
    a.T[1].mul_(b[0, :3])
    return fin(L, y, x, a, b)


def p_chunk_uneven(L):
    x = L.T(np.arange(1.0, 11.0) / 4, True)
    y = x * 1.0
    cs = (y[0:4], y[4:8], y[8:10]) if L.eq else y.chunk(3)
    y.mul_(2)
    return fin(L, y, x, *cs) + [len(cs)]


def p_hsplit_vsplit(L):
    x = L.T(X44, True)
    y = x * 1.0
    if L.eq:
        a, b, c, d = y[:, :2], y[:, 2:], y[:1], y[1:]
    else:
        (a, b), (c, d) = y.hsplit(2), y.vsplit([1])
    y.add_(1.0)
    return fin(L, y, x, a, b, c, d)


def p_leaf_data_write(L):
    x = L.T(X23, True)
    x.data[0, 1] = 10.0
    (x * x).sum().backward()
    return [x, x.grad]


def p_leaf_data_write_after_graph(L):
    x = L.T(X23, True)
    y = (x * 3.0).sum()
    x.data[0, 1] = 10.0
    y.backward()
    return [x, x.grad]


def p_leaf_nograd_setitem_view_seen(L):
    x = L.T(X23, True)
    v = x.T
    with L.no_grad():
        x[0, 1] = 10.0
    (v * v).sum().backward()
    return [x, v, x.grad]


def p_leaf_nograd_setitem_view_seen_bigger(L):
    x = L.T(np.linspace(0, 1, 5000).reshape(50, 100), True)
    v = x[3:5].T
    with L.no_grad():
        x[3, 1] = 10.0
        x.mul_(2)
    (v * v).sum().backward()
    return [v, x.grad]


def p_nograd_view_write_large(L):
    x = L.T(np.linspace(0, 1, 5000).reshape(50, 100), True)
    y = x * 1.0
    y[2:4].T[5].mul_(3.0)
    z = y.T
    y[0, 0] = 7.0
    return fin(L, y, x, z)


def p_ver_view_exp_large(L):
    x = L.T(np.linspace(0, 1, 5000), True)
    y = x.exp()
    y[10:20].add_(1)
    y.sum().backward()
    return [x.grad]


def p_ver_detach_large(L):
    x = L.T(np.linspace(0, 1, 5000), True)
    y = x * 2.0
    z = (y * y).sum()
    y.detach()[3:5].zero_()
    z.backward()
    return [x.grad]


def p_transpose_oob(L):
    x = L.T(X23, True)
    return [x.transpose(0, 5)]


def p_transpose_oob_neg(L):
    x = L.T(X23, True)
    return [x.transpose(-3, 0)]


def p_transpose_oob_3d(L):
    x = L.T(X234, True)
    return [x.transpose(1, 3)]


def p_transpose_same_neg(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y.transpose(-1, 1)
    c[0].mul_(3)
    return fin(L, y, x, c)


def p_index_np0d(L):
    x = L.T(X23, True)
    y = x * 1.0
    c = y[np.array(1)]
    c.mul_(2)
    return fin(L, y, x, c)


def p_index_0d_int_in_tuple(L):
    x = L.T(X234, True)
    y = x * 1.0
    c = y[L.I(1), 1:, L.I(-1)]
    c.mul_(x[0, :2, 0])
    return fin(L, y, x, c)


def p_set_bcast_leading1_int(L):
    y = L.I([[1, 2, 3], [4, 5, 6]])
    y[1] = L.I([[[7, 8, 9]]])
    return [y]


def p_set_bcast_leading1_adv(L):
    x = L.T(X44, True)
    v = L.T([[[1.0, 2.0, 3.0, 4.0]]], True)
    y = x * 1.0
    y[[0, 3]] = v * v
    return fin(L, y, x) + [v.grad]


def p_set_bcast_leading_non1(L):
    x = L.T(X44, True)
    y = x * 1.0
    y[0] = L.T(np.ones((2, 4)))
    return [y]


def p_expand_neg_new_dim_middle(L):
    x = L.T([1.0, 2.0], True)
    return [x.expand(3, -1, 2)]


# ---- classification ----------------------------------------------------------------------------
_ALL = {k: v for k, v in list(globals().items()) if k.startswith("p_")}

# PyTorch refuses; tapegrad computes, and must give the numbers of the equivalent program
TG_EXTENDS = [
    "p_index_neg_step",
    "p_split_base_write",
    "p_chunk_base_write",
    "p_unbind_base_write",
    "p_split_single",
    "p_chunk_uneven",
    "p_split_equiv_inplace",
    "p_scatter_partial_index",
    "p_scatter_add_view",
    "p_scatter_add_dim0",
    "p_scatter_on_movedim",
    "p_set_view_self_overlap",
    "p_set_self_T",
    "p_ver_pow_input_view",
    "p_ver_mul_input_other_view",
    "p_ver_div_by_view",
    "p_ver_log_input",
    "p_ver_relu_view",
    "p_ver_norm_view",
    "p_ver_softmax_out",
]

# PyTorch computes a wrong gradient (it sends the gradient of a position written twice to
# both writes): tapegrad's numbers are those of the assignment without the repeat
TORCH_WRONG = ["p_iadd_adv_dup"]

# tapegrad refuses, with a message naming the operation, where PyTorch computes
REFUSED = {
    # a write into part of an expanded view whose elements are distinct places (PyTorch
    # writes it; tapegrad refuses every write through an expand but a whole fill_ / zero_)
    "p_expand_setitem_refused": "__setitem__ on a view made by expand",
    "p_expand_slice_then_write": "mul_ on a view made by expand",
    # y.data[0, 0] = 5 on a graph result: PyTorch's backward then reads 5 (a wrong
    # derivative of sqrt); tapegrad's .data of a graph result is a read-only array
    "p_ver_sqrt_data": "read-only",
}

BOTH_RAISE = [
    "p_expand_mul_refused",
    "p_view_noncontig_raises",
    "p_div_self",
    "p_masked_fill_bcast_mask_bigger",
    "p_set_via_view_then_base_saved",
    "p_leaf_add_",
    "p_leaf_setitem",
    "p_leaf_view_mul_",
    "p_leaf_T_view_setitem",
    "p_leaf_diag_view_zero",
    "p_leaf_view_view",
    "p_leaf_unsqueeze_copy_",
    "p_leaf_expand_fill",
    "p_leaf_index_add",
    "p_leaf_masked_fill",
    "p_leaf_scatter",
    "p_leaf_nograd_saved_then_backward",
    "p_nograd_view_of_leaf_then_setitem_grad_value",
    "p_view_of_leaf_grad_mode_setitem_nograd_value",
    "p_ver_exp",
    "p_ver_exp_view",
    "p_ver_exp_T_view",
    "p_ver_sigmoid_view",
    "p_ver_tanh_detach",
    "p_ver_mul_input_base",
    "p_ver_matmul_T",
    "p_ver_twice_backward_after_write",
    "p_ver_clamp_view_nosave",
    "p_ver_cumprod_save",
    "p_ver_inplace_own_result_saved",
    "p_ver_view_exp_large",
    "p_ver_detach_large",
    "p_detach_leaf_grad_after",
    "p_detach__on_view",
    "p_unbind_equiv_inplace",
    "p_tensor_split_inplace",
    "p_select_oob",
    "p_narrow_oob",
    "p_narrow_neg_len",
    "p_view_bad",
    "p_view_two_neg",
    "p_expand_bad",
    "p_expand_fewer_dims",
    "p_expand_neg_new_dim",
    "p_expand_neg_new_dim_middle",
    "p_transpose_oob",
    "p_transpose_oob_neg",
    "p_transpose_oob_3d",
    "p_set_bcast_leading_non1",
    "p_int_view_add_float",
    "p_int_view_div_",
    "p_bool_mask_bad_shape",
    "p_masked_fill_nonbool",
    "p_masked_fill_value_1d",
    "p_index_add_float_idx",
    "p_index_add_bad_src",
    "p_index_copy_oob",
    "p_scatter_oob",
    "p_index_fill_oob",
    "p_copy_bad_shape",
]

_LISTED = {*TG_EXTENDS, *TORCH_WRONG, *REFUSED, *BOTH_RAISE}
AGREE = [k for k in _ALL if k not in _LISTED]


def test_every_program_is_classified_once():
    listed = [*TG_EXTENDS, *TORCH_WRONG, *REFUSED, *BOTH_RAISE]
    assert len(listed) == len(set(listed)) and set(listed) <= set(_ALL)


@pytest.mark.parametrize("name", AGREE)
def test_same_values_and_gradients_as_torch(name):
    prog = _ALL[name]
    _assert_same(_run(prog, TG), _run(prog, TO))


@pytest.mark.parametrize("name", BOTH_RAISE)
def test_raises_where_torch_raises(name):
    prog = _ALL[name]
    assert _raised(prog, TO) is not None, "torch was expected to raise"
    e = _raised(prog, TG)
    assert isinstance(e, (RuntimeError, ValueError, IndexError, TypeError)), repr(e)


@pytest.mark.parametrize("name", TG_EXTENDS + TORCH_WRONG)
def test_where_torch_refuses_the_numbers_are_those_of_the_equivalent(name):
    prog = _ALL[name]
    if name in TG_EXTENDS:
        assert _raised(prog, TO) is not None, "torch was expected to refuse"
    _assert_same(_run(prog, TG), _run(prog, TO_EQ))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_message_naming_the_operation(name):
    prog = _ALL[name]
    assert _raised(prog, TO) is None  # PyTorch computes it
    with pytest.raises((RuntimeError, ValueError), match=REFUSED[name]):
        _run(prog, TG)


def test_iadd_with_a_repeated_index_keeps_the_last_write_and_its_gradient():
    """``y[[0, 0, 1]] += 1``: y[0] gains 1 once (both libraries), and its gradient is that of
    ``y[0] = x[0] + 1``, once (PyTorch's is twice that)."""
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y[[0, 0, 1]] += 1.0
    (y * y).sum().backward()
    assert y.tolist() == [2.0, 3.0, 3.0]
    assert x.grad.tolist() == [4.0, 6.0, 6.0]


def test_a_0d_integer_index_inside_a_transform_keeps_numpys_copy():
    """Outside transforms ``y[i]`` with a 0-d integer Tensor or array is PyTorch's view; inside
    a transform NumPy's meaning holds: ``a[np.array(0)]`` is a fancy index, a copy."""

    def f(x):
        a = x * 1.0
        s = a[np.array(0)]
        s *= 3.0  # changes the copy only
        return np.sum(a * a) + np.sum(s)

    x0 = np.arange(1.0, 7.0).reshape(2, 3)
    value, grad = tg.value_and_grad(f)(x0)
    assert value == pytest.approx(f(x0.copy()), rel=1e-15)
    want = 2 * x0
    want[0] += 3.0
    np.testing.assert_allclose(grad, want, rtol=1e-15)
