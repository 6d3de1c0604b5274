"""Distances and similarities with PyTorch's values and gradients: ``cosine_similarity``,
``pairwise_distance`` (``tg.nn.functional``) and ``cdist`` (``tg.cdist``).

The p-norms inside follow PyTorch's derivative conventions where the formula is singular: the
gradient of a norm that is 0 is 0 (not nan), a zero entry of a p < 1 norm gets 0, the infinity
norm of ``pairwise_distance`` shares the gradient among tied maxima, and ``cdist``'s gives
each tied maximum the whole gradient (as PyTorch's cdist backward does).  The masks are
comparisons of the Tensors, which a ``tg.trace`` recording guards.
"""

import math

import numpy as np

from ..core import functions as _ops
from ..core import torch_methods as _torch_methods
from ..core.tensor import scalar_argument
from ..tensor_class import Tensor

__all__ = ["cdist", "cosine_similarity", "pairwise_distance"]


def _detached(t):
    return t.detach() if isinstance(t, Tensor) else t


def _straight(value, surrogate):
    """``value``'s number with ``surrogate``'s derivative: value + (s - s), both detached
    but one."""
    return _ops.add(_detached(value), _ops.sub(surrogate, _detached(surrogate)))


def _pnorm(d, p, axis, keepdim=False, inf_ties="share"):
    """The p-norm of ``d`` along ``axis`` with PyTorch's derivative at its singular points."""
    absd = _ops.abs_(d)
    if p == 0:
        nz = _ops.truth(d != 0.0)
        count = np.sum(nz, axis=axis, keepdims=keepdim).astype(np.float64)
        zero = _ops.sum(_ops.where(np.zeros(nz.shape, bool), d, 0.0), axis, keepdim)
        return _ops.add(zero, count)
    if p == 1:
        return _ops.sum(absd, axis, keepdim)
    if math.isinf(p):
        if p < 0:
            return _ops.amin(absd, axis, keepdim)
        m = _ops.amax(absd, axis, keepdim)
        if inf_ties == "share":
            return m
        mask = _ops.truth(absd == _ops.amax(absd, axis, True))
        return _straight(m, _ops.sum(_ops.mul(absd, mask.astype(np.float64)), axis, keepdim))
    # ||d|| = c ||d / c|| with c a power of two at the largest |d| of each slice: exact, a
    # constant (the norm is homogeneous, so its derivative is unchanged), and the squares (or
    # p-th powers) of huge or tiny entries neither overflow to inf nor underflow to 0
    c, c_out = _pow2_scale(d, axis, keepdim)
    d = _ops.div(d, c)
    if p == 2:
        s = _ops.sum(_ops.mul(d, d), axis, keepdim)
    else:
        absd = _ops.abs_(d)
        nz = _ops.truth(d != 0.0)
        s = _ops.sum(_ops.where(nz, _ops.power(_ops.where(nz, absd, 1.0), p), 0.0), axis, keepdim)
    pos = _ops.truth(s > 0.0)
    root = _ops.sqrt if p == 2 else (lambda v: _ops.power(v, 1.0 / p))
    return _ops.mul(_ops.where(pos, root(_ops.where(pos, s, 1.0)), 0.0), c_out)


def _pow2_scale(d, axis, keepdim):
    """(c, c without the reduced axes unless keepdim): per slice along ``axis`` the power of
    two 2**e with max |d| in [2**(e-1), 2**e), 1 for a slice of zeros or non-finite values."""
    v = np.abs(np.asarray(d._v, dtype=np.float64))
    if v.ndim == 0:  # a 0-d input reduces to itself (axis 0, as PyTorch's dim=0 / -1)
        m = v
    else:
        with np.errstate(invalid="ignore"):
            m = np.max(v, axis=axis, keepdims=True, initial=0.0)
    m = np.where(np.isfinite(m) & (m > 0), m, 1.0)
    c = np.ldexp(1.0, np.frexp(m)[1])
    return c, (c if keepdim or v.ndim == 0 else np.squeeze(c, axis=axis))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim`` (the inputs broadcast
    first), PyTorch's ``F.cosine_similarity``: like PyTorch, the clamp at ``eps`` changes the
    value only; the derivative is that of the unclamped norm (0 at a zero vector).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.cosine_similarity(tg.tensor([[1.0, 0.0], [1.0, 1.0]]), tg.tensor([[2.0, 0.0]]))
        tensor([1.0000, 0.7071])
    """
    x1, x2 = _ops.tensor_of(x1), _ops.tensor_of(x2)
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if tuple(x1.shape) != shape:
        x1 = _ops.broadcast_to(x1, shape)
    if tuple(x2.shape) != shape:
        x2 = _ops.broadcast_to(x2, shape)
    if isinstance(dim, (int, np.integer)):  # out of range: PyTorch's IndexError (an AxisError)
        _torch_methods.wrap_dim(dim, shape, "cosine_similarity")
    axis = _ops.normalize_axes(dim, max(len(shape), 1), "cosine_similarity")

    def unit(x):
        n = _pnorm(x, 2, axis, True)
        return _ops.div(x, _straight(_ops.clip(n, eps), n))

    return _ops.sum(_ops.mul(unit(x1), unit(x2)), axis)


def _check_p(name, p):
    p = scalar_argument(p, f"{name}: p")
    if p < 0 or math.isnan(p):
        raise ValueError(
            f"{name}: p must be non-negative (PyTorch's p < 0 is not supported), got {p}"
        )
    return p


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """||x1 - x2 + eps||_p along the last dimension (of the input with more dimensions), as
    PyTorch's ``F.pairwise_distance``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.pairwise_distance(tg.tensor([[3.0, 4.0]]), tg.tensor([[0.0, 0.0]]), eps=0.0)
        tensor([5.])
    """
    p = _check_p("pairwise_distance", p)
    x1, x2 = _ops.tensor_of(x1), _ops.tensor_of(x2)
    ndim = max(x1.ndim, x2.ndim)
    if ndim == 0:
        raise RuntimeError("pairwise_distance: the inputs must have at least one dimension")
    return _pnorm(_ops.add(_ops.sub(x1, x2), eps), p, ndim - 1, keepdim)


_CDIST_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = _CDIST_MODES[0]) -> Tensor:
    """The p-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): a (..., P, R) Tensor, as PyTorch's ``torch.cdist`` (batch dimensions
    broadcast).  The distances are always computed from the differences, PyTorch's
    ``donot_use_mm_for_euclid_dist`` (its matrix-product shortcut for p = 2, which it takes for
    more than 25 rows, loses accuracy for close points and is not used; the other modes are
    accepted and give the same numbers to rounding).  At coincident points the gradient is 0,
    as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> tg.cdist(tg.tensor([[0.0, 0.0], [1.0, 1.0]]), tg.tensor([[3.0, 4.0]]))
        tensor([[5.0000],
                [3.6056]])
    """
    p = _check_p("cdist", p)
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    x1, x2 = _ops.tensor_of(x1), _ops.tensor_of(x2)
    if x1.ndim < 2 or x2.ndim < 2:
        bad = "X1" if x1.ndim < 2 else "X2"
        got = x1.ndim if x1.ndim < 2 else x2.ndim
        raise RuntimeError(f"cdist only supports at least 2D tensors, {bad} got: {got}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    d = _ops.sub(_ops.expand_dims(x1, -2), _ops.expand_dims(x2, -3))
    return _pnorm(d, p, d.ndim - 1, inf_ties="all")
