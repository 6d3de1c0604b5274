"""Activations and losses (``tg.nn.functional``), composed from tapegrad's differentiable ops.

Being compositions, they get their backward, higher derivatives and trace replay from the ops.
Arguments follow PyTorch (``dim=``, ``keepdim=``, ``reduction=``); ``axis=`` is accepted too.
Unsupported PyTorch arguments (``inplace=True``, ``size_average=``, ...) raise rather than
being ignored.  Losses are numerically stable: the softmax family shifts by the row maximum, and
``binary_cross_entropy`` clamps its logs at -100 like PyTorch (where a log is clamped its
gradient is zero).
"""

import math
from collections.abc import Sequence

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core import methods as _methods
from ..core import torch_methods as _torch_methods
from ..core.functions import TensorLike
from ..core.tensor import STATE, scalar_argument, value_of
from ..tensor_class import Tensor
from .convolution import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    dropout1d,
    dropout2d,
    dropout3d,
    fold,
    interpolate,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    pad,
    unfold,
)
from .distance import _pnorm, cosine_similarity, pairwise_distance

__all__ = [
    "relu",
    "sigmoid",
    "tanh",
    "linear",
    "leaky_relu",
    "softmax",
    "log_softmax",
    "logsumexp",
    "gelu",
    "elu",
    "selu",
    "celu",
    "softplus",
    "silu",
    "mish",
    "hardtanh",
    "relu6",
    "hardsigmoid",
    "hardswish",
    "softsign",
    "tanhshrink",
    "logsigmoid",
    "glu",
    "normalize",
    "dropout",
    "layer_norm",
    "group_norm",
    "one_hot",
    "cosine_similarity",
    "pairwise_distance",
    "batch_norm",
    "embedding",
    "embedding_bag",
    "ctc_loss",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "pad",
    "conv_transpose1d",
    "conv_transpose2d",
    "interpolate",
    "instance_norm",
    "bilinear",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "cosine_embedding_loss",
    "multi_margin_loss",
    "triplet_margin_loss",
    "softmin",
    "softshrink",
    "hardshrink",
    "threshold",
    "rrelu",
    "prelu",
    "rms_norm",
    "pixel_shuffle",
    "pixel_unshuffle",
    "gumbel_softmax",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "avg_pool3d",
    "conv3d",
    "conv_transpose3d",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "fold",
    "unfold",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]

relu = _ops.relu
sigmoid = _ops.sigmoid
tanh = _ops.tanh
linear = _ops.linear  # input @ weight.T + bias; weight (out_features, in_features)


def leaky_relu(input, negative_slope=0.01):
    """x for x > 0, else ``negative_slope`` * x: a ReLU whose negative side keeps a gradient.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([-1.0, 1.0], requires_grad=True)
        >>> y = F.leaky_relu(x); y
        tensor([-0.0100, 1.0000], grad_fn=<LeakyReluBackward0>)
        >>> y.sum().backward(); x.grad
        tensor([0.0100, 1.0000])
    """
    return _ops.leaky_relu(input, negative_slope)


def _dim(dim, axis, default):
    if axis is not None:
        if dim is not None:
            raise TypeError("give dim= or axis=, not both")
        return axis
    return default if dim is None else dim


def _softmax_dim(input, dim, axis, name):
    """``dim`` (or ``axis``); without either, the last axis of a 0-, 1- or 2-D input, where
    PyTorch's implicit choice is that axis too.  For more dimensions PyTorch's implicit choice
    (dim 0 for 3-D, 1 beyond; deprecated) differs from the last axis: a dim is required."""
    d = _dim(dim, axis, None)
    if d is None:
        ndim = len(getattr(input, "shape", ()))
        if ndim > 2:
            raise TypeError(
                f"{name}: give dim= for a {ndim}-D input (PyTorch's implicit dim, deprecated, "
                f"would be {0 if ndim == 3 else 1}, not the last axis)"
            )
        return -1
    return d


def softmax(input, dim=None, *, axis=None, dtype=None):
    """Softmax along ``dim`` (default: the last axis of an input of up to 2 dimensions; give
    ``dim`` for more, as PyTorch's implicit choice is another axis there), of the input cast
    to ``dtype`` when given.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> y = F.softmax(x); y
        tensor([0.2500, 0.2500, 0.2500, 0.2500], grad_fn=<DivBackward0>)
        >>> y[0].backward(); x.grad             # s0 (1 - s0), -s0 sj
        tensor([0.1875, -0.0625, -0.0625, -0.0625])
    """
    return _methods._softmax(input, _softmax_dim(input, dim, axis, "softmax"), dtype=dtype)


def log_softmax(input, dim=None, *, axis=None, dtype=None):
    """Log-softmax along ``dim`` (default as for ``softmax``), computed as x - logsumexp(x).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> y = F.log_softmax(x); y             # -log 4
        tensor([-1.3863, -1.3863, -1.3863, -1.3863], grad_fn=<SubBackward0>)
        >>> y[0].backward(); x.grad             # 1 - s0, -sj
        tensor([0.7500, -0.2500, -0.2500, -0.2500])
    """
    return _methods._log_softmax(input, _softmax_dim(input, dim, axis, "log_softmax"), dtype=dtype)


def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """log(sum(exp(x))) over ``dim`` (default: all axes), shifted by the maximum.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[0.0, 0.0], [1.0, 1.0]], requires_grad=True)
        >>> y = F.logsumexp(x, dim=1); y        # log 2, 1 + log 2
        tensor([0.6931, 1.6931], grad_fn=<ReshapeBackward0>)
        >>> y.sum().backward(); x.grad          # softmax of each row
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    return _ops.logsumexp(input, _dim(dim, axis, None), keepdim if keepdims is None else keepdims)


# ---- activations ---------------------------------------------------------------------------------
# Each is a composition of ops whose kinks are evaluated inside their kernels (relu, clip,
# abs), so a trace replays them for any input; where PyTorch switches formula at a threshold
# (softplus), the switch is a comparison, which a trace guards.

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_GELU_TANH = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _no_inplace(name, inplace):
    if inplace:
        raise TypeError(
            f"{name}: inplace=True is not supported (tapegrad records a new value instead of "
            f"overwriting the input); write x = F.{name}(x)"
        )


def _neg_part(x):
    """min(x, 0), with derivative 1 at 0 too (PyTorch's elu family takes the x <= 0 branch)."""
    return _ops.clip(x, None, 0.0)


def gelu(input, approximate="none"):
    """Gaussian error linear unit: x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, or with
    ``approximate='tanh'`` PyTorch's x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x**3))) / 2.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
        >>> F.gelu(x)
        tensor([-0.1587, 0.0000, 1.9545], grad_fn=<MulBackward0>)
        >>> F.gelu(x, approximate="tanh")
        tensor([-0.1588, 0.0000, 1.9546], grad_fn=<MulBackward0>)
    """
    x = _ops.tensor_of(input)
    if approximate == "none":
        return _ops.mul(_ops.mul(x, 0.5), _ops.add(1.0, _ops.erf(_ops.mul(x, _SQRT1_2))))
    if approximate == "tanh":
        cube = _ops.mul(_ops.mul(x, x), x)
        inner = _ops.mul(_GELU_TANH, _ops.add(x, _ops.mul(0.044715, cube)))
        return _ops.mul(_ops.mul(0.5, x), _ops.add(1.0, _ops.tanh(inner)))
    raise ValueError(f"gelu: approximate={approximate!r} is not one of 'none', 'tanh'")


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, else alpha (exp(x) - 1).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.elu(tg.tensor([-1.0, 2.0]))
        tensor([-0.6321, 2.0000])
    """
    _no_inplace("elu", inplace)
    x = _ops.tensor_of(input)
    return _ops.add(_ops.relu(x), _ops.mul(alpha, _ops.expm1(_neg_part(x))))


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants alpha = 1.6733, scale = 1.0507.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.selu(tg.tensor([-1.0, 2.0]))
        tensor([-1.1113, 2.1014])
    """
    _no_inplace("selu", inplace)
    return _ops.mul(_SELU_SCALE, elu(input, _SELU_ALPHA))


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.celu(tg.tensor([-1.0, 2.0]), alpha=2.0)
        tensor([-0.7869, 2.0000])
    """
    _no_inplace("celu", inplace)
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides x)")
    x = _ops.tensor_of(input)
    return _ops.add(_ops.relu(x), _ops.mul(alpha, _ops.expm1(_ops.div(_neg_part(x), alpha))))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > ``threshold`` (as PyTorch).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.softplus(tg.tensor([-1.0, 0.0, 30.0]))
        tensor([0.3133, 0.6931, 30.0000])
    """
    x = _ops.tensor_of(input)
    z = x if beta == 1 else _ops.mul(x, beta)
    smooth = _ops.logaddexp(0.0, z)
    if beta != 1:
        smooth = _ops.div(smooth, beta)
    return _ops.where(z > threshold, x, smooth)


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.silu(tg.tensor([-1.0, 2.0]))
        tensor([-0.2689, 1.7616])
    """
    _no_inplace("silu", inplace)
    x = _ops.tensor_of(input)
    return _ops.mul(x, _ops.sigmoid(x))


def mish(input, inplace=False):
    """x * tanh(softplus(x)).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.mish(tg.tensor([-1.0, 2.0]))
        tensor([-0.3034, 1.9440])
    """
    _no_inplace("mish", inplace)
    x = _ops.tensor_of(input)
    return _ops.mul(x, _ops.tanh(_ops.logaddexp(0.0, x)))


def _no_slope_at(x, b):
    """Exactly 0, with slope -1 where x == b and 0 elsewhere (relu's slope at 0 is 0): added
    to a clamp, whose slope at its bound b is 1, it makes that slope 0.  Op kernels, not a
    mask read in Python, so a trace replays it for any x."""
    a = _ops.clip(_ops.sub(x, b), -1.0, 1.0)  # finite; 0 exactly where x == b
    return _ops.sub(_ops.sub(_ops.relu(a), _ops.relu(_ops.neg(a))), a)


def _kinked_clamp(x, lo, hi):
    """``min(max(x, lo), hi)`` with the gradient of PyTorch's hardtanh, relu6 and
    hardsigmoid: 1 strictly between the bounds, 0 at them (where ``clamp``'s is 1) and
    beyond."""
    x = _ops.tensor_of(x)
    out = _ops.add(_ops.clip(x, lo, hi), _no_slope_at(x, lo))
    return out if hi == lo else _ops.add(out, _no_slope_at(x, hi))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]; the gradient is 1 strictly inside, 0 at the bounds
    themselves (as PyTorch's, where ``clamp``'s is 1).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.hardtanh(tg.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000, 0.5000, 1.0000])
    """
    _no_inplace("hardtanh", inplace)
    min_val = scalar_argument(min_val, "hardtanh: min_val")
    max_val = scalar_argument(max_val, "hardtanh: max_val")
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} is above max_val {max_val}")
    return _kinked_clamp(input, min_val, max_val)


def relu6(input, inplace=False):
    """min(max(x, 0), 6); the gradient is 0 at 0 and 6, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.relu6(tg.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    _no_inplace("relu6", inplace)
    return _kinked_clamp(input, 0.0, 6.0)


def hardsigmoid(input, inplace=False):
    """min(max(x + 3, 0), 6) / 6: a piecewise-linear sigmoid (gradient 0 at -3 and 3, as
    PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.hardsigmoid(tg.tensor([-4.0, 0.0, 1.5]))
        tensor([0.0000, 0.5000, 0.7500])
    """
    _no_inplace("hardsigmoid", inplace)
    return _ops.div(_kinked_clamp(_ops.add(input, 3.0), 0.0, 6.0), 6.0)


def hardswish(input, inplace=False):
    """x min(max(x + 3, 0), 6) / 6 (gradient 0 at -3 and 1 at 3, as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.hardswish(tg.tensor([-4.0, 1.0, 4.0]))
        tensor([-0.0000, 0.6667, 4.0000])
    """
    _no_inplace("hardswish", inplace)
    x = _ops.tensor_of(input)
    return _ops.div(_ops.mul(x, _kinked_clamp(_ops.add(x, 3.0), 0.0, 6.0)), 6.0)


def softsign(input):
    """x / (1 + |x|).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.softsign(tg.tensor([-1.0, 3.0]))
        tensor([-0.5000, 0.7500])
    """
    x = _ops.tensor_of(input)
    return _ops.div(x, _ops.add(1.0, _ops.abs_(x)))


def tanhshrink(input):
    """x - tanh(x).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.tanhshrink(tg.tensor([-1.0, 2.0]))
        tensor([-0.2384, 1.0360])
    """
    x = _ops.tensor_of(input)
    return _ops.sub(x, _ops.tanh(x))


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.logsigmoid(tg.tensor([-800.0, 0.0, 2.0]))
        tensor([-8.0000e+02, -6.9315e-01, -1.2693e-01])
    """
    return _ops.neg(_ops.logaddexp(0.0, _ops.neg(input)))


def glu(input, dim=-1):
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of ``input`` along
    ``dim`` (whose size must be even).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.glu(tg.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    x = _ops.tensor_of(input)
    if x.ndim == 0:
        raise ValueError("glu: input must have at least one dimension, got a 0-d tensor")
    axis = _ops.normalize_axes(dim, x.ndim, "glu")[0]
    size = x.shape[axis]
    if size % 2:
        raise ValueError(
            f"glu: halving dimension must be even, but dimension {axis} is size {size}"
        )
    lead = (slice(None),) * axis
    a = _ops.getitem(x, (*lead, slice(0, size // 2)))
    b = _ops.getitem(x, (*lead, slice(size // 2, size)))
    return _ops.mul(a, _ops.sigmoid(b))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps) along ``dim`` (PyTorch's ``F.normalize``).

    An all-zero slice gets PyTorch's gradient (1 / eps: the clamped norm is a constant), a
    zero entry of a p < 1 norm the derivative 0, as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.normalize(tg.tensor([[3.0, 4.0], [0.0, 0.0]]))
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]])
    """
    if out is not None:
        raise TypeError("normalize: out= is not supported; use the returned Tensor")
    x = _ops.tensor_of(input)
    if isinstance(dim, (int, np.integer)):  # out of range: PyTorch's IndexError (an AxisError)
        _torch_methods.wrap_dim(dim, x.shape, "normalize")
    axis = _ops.normalize_axes(dim, max(x.ndim, 1), "normalize")
    p = scalar_argument(p, "normalize: p")
    if p == 1.0:
        denom = _ops.clip(_ops.sum(_ops.abs_(x), axis, True), eps)
    elif math.isinf(p) and p > 0:
        denom = _ops.clip(_ops.amax(_ops.abs_(x), axis, True), eps)
    elif p >= 0 or p == -math.inf:
        # PyTorch's norm (0 for p = 0 counts the nonzero entries, -inf takes the least |x|),
        # with its derivative conventions: a zero entry of a p < 1 norm, or a zero norm, gets 0
        # (x**p's infinite slope at 0 times the clamp's zero was nan); the norm is computed
        # scaled, so huge entries do not overflow (PyTorch's squares do: it returns 0 there)
        denom = _ops.clip(_pnorm(x, p, axis, keepdim=True), eps)
    else:
        raise ValueError(f"normalize: p must be non-negative (or -inf), got {p}")
    return _ops.div(x, denom)


# ---- dropout, normalisation, embedding ----------------------------------------------------------


def _check_p(name, p):
    p = scalar_argument(p, f"{name}: p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (training);
    the input itself when ``training`` is False.  The mask is drawn from tapegrad's generator
    (``tg.manual_seed``); a ``tg.trace`` recording refuses it, since a replay would reuse the
    recorded mask.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> _ = tg.manual_seed(0)
        >>> F.dropout(tg.ones(6), p=0.5)
        tensor([0., 2., 2., 2., 0., 0.])
        >>> F.dropout(tg.ones(2), p=0.5, training=False)
        tensor([1., 1.])
    """
    _check_p("dropout", p)
    _no_inplace("dropout", inplace)
    x = _ops.tensor_of(input)
    if not training or p == 0:
        return x
    if STATE.guard is not None:
        raise RuntimeError(
            "dropout: a tg.trace recording cannot draw the dropout mask (every replay would "
            "reuse the recorded one). Call model.eval() (or training=False) inside the trace, "
            "or differentiate the training step with tg.grad / backward, which draw at each call"
        )
    keep = _creation.rng().random(np.shape(x._v)) < 1.0 - p
    scale = np.zeros(keep.shape) if p == 1 else keep / (1.0 - p)
    return _ops.mul(x, scale)


def _affine(y, weight, bias, shape=None):
    if weight is not None:
        y = _ops.mul(y, weight if shape is None else _ops.reshape(weight, shape))
    if bias is not None:
        y = _ops.add(y, bias if shape is None else _ops.reshape(bias, shape))
    return y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last ``len(normalized_shape)`` axes: (x - mean) / sqrt(var + eps),
    with the biased variance, then ``* weight + bias`` (of shape ``normalized_shape``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.layer_norm(tg.tensor([[1.0, 3.0], [0.0, 4.0]]), (2,))
        tensor([[-1.0000,  1.0000],
                [-1.0000,  1.0000]])
    """
    x = _ops.tensor_of(input)
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, (int, np.integer))
        else tuple(int(s) for s in normalized_shape)
    )
    k = len(shape)
    if not k or x.ndim < k or tuple(x.shape[x.ndim - k :]) != shape:
        raise ValueError(
            f"layer_norm: normalized_shape {shape} must be the trailing dimensions of the "
            f"input, whose shape is {tuple(x.shape)}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(np.shape(value_of(p))) != shape:
            raise ValueError(
                f"layer_norm: {name} has shape {tuple(np.shape(value_of(p)))}, "
                f"expected normalized_shape {shape}"
            )
    axes = tuple(range(x.ndim - k, x.ndim))
    d = _ops.sub(x, _ops.mean(x, axes, True))
    var = _ops.mean(_ops.mul(d, d), axes, True)
    return _affine(_ops.div(d, _ops.sqrt(_ops.add(var, eps))), weight, bias)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation of ``input`` (N, C, ...): the C channels are split into
    ``num_groups`` groups, each normalised over its channels and the trailing axes with the
    biased variance, then ``* weight + bias`` per channel (shape (C,)), as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.group_norm(tg.tensor([[1.0, 3.0, 0.0, 4.0]]), 2)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """
    x = _ops.tensor_of(input)
    if x.ndim < 2:
        raise RuntimeError(
            f"group_norm: expected an input of at least 2 dimensions (N, C, ...), got shape "
            f"{tuple(x.shape)}"
        )
    n, c = int(x.shape[0]), int(x.shape[1])
    g = int(num_groups)
    if g <= 0 or c % g:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(x.shape)} and num_groups={num_groups}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(np.shape(value_of(p))) != (c,):
            raise RuntimeError(
                f"group_norm: expected {name} of shape ({c},), got {tuple(np.shape(value_of(p)))}"
            )
    grouped = _ops.reshape(x, (n, g, x.size // max(n * g, 1)))  # (-1 is ambiguous for n = 0)
    d = _ops.sub(grouped, _ops.mean(grouped, 2, True))
    var = _ops.mean(_ops.mul(d, d), 2, True)
    y = _ops.reshape(_ops.div(d, _ops.sqrt(_ops.add(var, eps))), tuple(x.shape))
    return _affine(y, weight, bias, (c,) + (1,) * (x.ndim - 2))


def one_hot(tensor, num_classes=-1):
    """The integer tensor of shape (*tensor.shape, num_classes) with a 1 at each value of the
    index ``tensor`` and 0 elsewhere (int64, no gradient), as PyTorch's ``F.one_hot``;
    ``num_classes=-1`` takes the largest value + 1.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.one_hot(tg.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    v = np.asarray(tensor._v if isinstance(tensor, Tensor) else tensor)
    if v.dtype.kind not in "iu":
        raise RuntimeError(
            f"one_hot is only applicable to index tensor (an integer dtype), got {v.dtype}"
        )
    num_classes = int(num_classes)
    if v.size == 0 and num_classes <= 0:  # PyTorch refuses 0 classes too
        raise RuntimeError(
            "one_hot: can not infer the number of classes from an empty tensor; give "
            "num_classes > 0"
        )
    if num_classes == -1:
        num_classes = int(v.max()) + 1
    elif num_classes < -1:
        raise RuntimeError(f"one_hot: num_classes should be -1 or non-negative, got {num_classes}")
    if v.size and v.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if v.size and v.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (v[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor(out)


def _assign(t, value):
    """Overwrite buffer ``t``'s value in place (its Tensor stays the same object)."""
    v = np.asarray(value, dtype=t.dtype)
    _methods._set_value(t, float(v) if v.ndim == 0 else v)


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """Batch normalisation of ``input`` (N, C, ...) per channel C.

    Training: normalise with the batch mean and biased variance over every axis but 1, and
    update ``running_mean`` / ``running_var`` (when given) in place:
    running = (1 - momentum) running + momentum * batch statistic, with the unbiased variance.
    Otherwise: normalise with the running statistics.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[1.0, 0.0], [3.0, 4.0]])
        >>> rm, rv = tg.zeros(2), tg.ones(2)
        >>> F.batch_norm(x, rm, rv, training=True)
        tensor([[-1.0000, -1.0000],
                [1.0000, 1.0000]])
        >>> rm, rv                              # 0.1 * mean, 0.9 + 0.1 * unbiased var
        (tensor([0.2000, 0.2000]), tensor([1.1000, 1.7000]))
    """
    x = _ops.tensor_of(input)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, ...), got {x.shape}")
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    axes = (0, *range(2, x.ndim))
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and tuple(np.shape(value_of(t))) != (c,):
            raise ValueError(
                f"batch_norm: {name} has shape {tuple(np.shape(value_of(t)))}, expected ({c},) "
                f"for input of shape {tuple(x.shape)}"
            )
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError(
                "batch_norm: running_mean and running_var must be given when training=False"
            )
        mean = _ops.reshape(running_mean, shape)
        var = _ops.reshape(running_var, shape)
        y = _ops.div(_ops.sub(x, mean), _ops.sqrt(_ops.add(var, eps)))
        return _affine(y, weight, bias, shape)
    n = x.size // c if c else 0
    if n <= 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when training, got input "
            f"of shape {tuple(x.shape)}"
        )
    track = running_mean is not None or running_var is not None
    if track and STATE.vmapping:
        raise RuntimeError(
            "batch_norm: inside vmap the function runs once per batch item, so the running "
            "statistics (running_mean/running_var, not batched) would be updated once per item "
            "(PyTorch's vmap refuses too). Call the module in eval mode (model.eval()), or "
            "without running statistics (track_running_stats=False)"
        )
    if track and STATE.guard is not None:
        raise RuntimeError(
            "batch_norm: a tg.trace recording cannot update running_mean/running_var (a "
            "replay would not update them). Call model.eval() (or training=False) inside the "
            "trace, or differentiate the training step with tg.grad / backward"
        )
    mean = _ops.mean(x, axes, True)
    d = _ops.sub(x, mean)
    var = _ops.mean(_ops.mul(d, d), axes, True)
    if track:
        batch_mean = np.asarray(value_of(mean)).reshape(c)
        batch_var = np.asarray(value_of(var)).reshape(c) * (n / (n - 1))
        for t, stat in ((running_mean, batch_mean), (running_var, batch_var)):
            if t is not None:
                _assign(t, momentum * stat + (1.0 - momentum) * np.asarray(value_of(t)))
    return _affine(_ops.div(d, _ops.sqrt(_ops.add(var, eps))), weight, bias, shape)


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Instance normalisation (PyTorch's ``F.instance_norm``) of ``input`` (N, C, ...): each
    (sample, channel) slice is normalised over its spatial axes with its own mean and biased
    variance, then ``* weight + bias`` per channel (shape (C,)).

    With ``use_input_stats`` (the default) the given ``running_mean`` / ``running_var`` are
    updated in place, as PyTorch: running = (1 - momentum) running + momentum * the batch
    average of the per-instance mean (unbiased variance).  Otherwise the running statistics
    normalise.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.instance_norm(tg.tensor([[[1.0, 3.0], [0.0, 4.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    x = _ops.tensor_of(input)
    if x.ndim < 2:
        raise ValueError(f"instance_norm: expected input of shape (N, C, ...), got {x.shape}")
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and tuple(np.shape(value_of(t))) != (c,):
            raise ValueError(
                f"instance_norm: {name} has shape {tuple(np.shape(value_of(t)))}, expected "
                f"({c},) for input of shape {tuple(x.shape)}"
            )
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError(
                "instance_norm: running_mean and running_var must be given when "
                "use_input_stats=False"
            )
        mean = _ops.reshape(running_mean, shape)
        var = _ops.reshape(running_var, shape)
        y = _ops.div(_ops.sub(x, mean), _ops.sqrt(_ops.add(var, eps)))
        return _affine(y, weight, bias, shape)
    n = math.prod(x.shape[2:])
    if n <= 1:
        raise ValueError(
            f"instance_norm: expected more than 1 spatial element when training, got input "
            f"of shape {tuple(x.shape)}"
        )
    track = running_mean is not None or running_var is not None
    if track and STATE.guard is not None:
        raise RuntimeError(
            "instance_norm: a tg.trace recording cannot update running_mean/running_var (a "
            "replay would not update them). Call model.eval() (or use_input_stats=False) "
            "inside the trace, or differentiate the training step with tg.grad / backward"
        )
    axes = tuple(range(2, x.ndim))
    mean = _ops.mean(x, axes, True)
    d = _ops.sub(x, mean)
    var = _ops.mean(_ops.mul(d, d), axes, True)
    if track:
        inst_mean = np.asarray(value_of(mean)).reshape(-1, c).mean(axis=0)
        inst_var = np.asarray(value_of(var)).reshape(-1, c).mean(axis=0) * (n / (n - 1))
        for t, stat in ((running_mean, inst_mean), (running_var, inst_var)):
            if t is not None:
                _assign(t, momentum * stat + (1.0 - momentum) * np.asarray(value_of(t)))
    return _affine(_ops.div(d, _ops.sqrt(_ops.add(var, eps))), weight, bias, shape)


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = input1 @ weight[k] @ input2 + bias[k] (PyTorch's ``F.bilinear``):
    ``input1`` (*, in1), ``input2`` (*, in2) with the same leading shape, ``weight``
    (out, in1, in2), ``bias`` (out,).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> w = tg.tensor([[[1.0, 0.0], [0.0, 2.0]]])
        >>> F.bilinear(tg.tensor([[1.0, 1.0]]), tg.tensor([[3.0, 4.0]]), w, tg.tensor([0.5]))
        tensor([[11.5000]])
    """
    x1, x2, w = _ops.tensor_of(input1), _ops.tensor_of(input2), _ops.tensor_of(weight)
    if w.ndim != 3:
        raise ValueError(
            f"bilinear: weight must be 3D (out_features, in1_features, in2_features), got "
            f"shape {w.shape}"
        )
    if x1.ndim < 1 or x1.shape[:-1] != x2.shape[:-1] or x2.ndim != x1.ndim:
        raise ValueError(
            f"bilinear: input1 {x1.shape} and input2 {x2.shape} must have the same shape but "
            f"for the last dimension"
        )
    out, in1, in2 = w.shape
    if x1.shape[-1] != in1 or x2.shape[-1] != in2:
        raise ValueError(
            f"bilinear: the last dimensions of input1 {x1.shape} and input2 {x2.shape} must be "
            f"the weight's in1_features {in1} and in2_features {in2} (weight {w.shape})"
        )
    if bias is not None and tuple(np.shape(value_of(bias))) != (out,):
        raise ValueError(
            f"bilinear: bias must have shape ({out},), got {tuple(np.shape(value_of(bias)))}"
        )
    lead = x1.shape[:-1]
    a = _ops.reshape(x1, (-1, in1)) if x1.ndim != 2 else x1
    # (M, in1) @ (in1, out * in2) -> (M, out, in2), times input2 and summed over in2
    wt = _ops.reshape(_ops.transpose(w, (1, 0, 2)), (in1, out * in2))
    t = _ops.reshape(_ops.matmul(a, wt), (-1, out, in2))
    b = _ops.reshape(x2, (-1, 1, in2))
    y = _ops.sum(_ops.mul(t, b), -1)
    if bias is not None:
        y = _ops.add(y, bias)
    return _ops.reshape(y, lead + (out,))


def _embedding_options(name, max_norm, scale_grad_by_freq, sparse):
    for option, value, default in (
        ("max_norm", max_norm, None),
        ("scale_grad_by_freq", scale_grad_by_freq, False),
        ("sparse", sparse, False),
    ):
        if value != default:
            raise TypeError(
                f"{name}: {option}={value!r} is not supported; leave it at its default "
                f"({default!r})"
            )


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by the integer indices
    ``input``; the result has shape ``input.shape + (embedding_dim,)``.  Rows picked by
    ``padding_idx`` keep their value but get no gradient.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> w = tg.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], requires_grad=True)
        >>> y = F.embedding(tg.tensor([2, 0, 2]), w, padding_idx=0); y
        tensor([[4., 5.],
                [0., 1.],
                [4., 5.]], grad_fn=<WhereBackward0>)
        >>> y.sum().backward(); w.grad
        tensor([[0., 0.],
                [0., 0.],
                [2., 2.]])
    """
    _embedding_options("embedding", max_norm, scale_grad_by_freq, sparse)
    w = _ops.tensor_of(weight)
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D, got shape {w.shape}")
    idx = np.asarray(input._v if isinstance(input, Tensor) else input)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"embedding: input must hold integer indices, got dtype {idx.dtype}")
    num = w.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = idx[(idx < 0) | (idx >= num)].flat[0]
        raise IndexError(f"embedding: index {bad} is out of range for {num} embeddings")
    out = _ops.getitem(w, idx)
    if padding_idx is None:
        return out
    pad = int(padding_idx)
    if not -num <= pad < num:
        raise ValueError(f"embedding: padding_idx {pad} must be within num_embeddings ({num})")
    pad %= num
    mask = idx == pad
    if not mask.any():
        return out
    return _ops.where(mask[..., None], _ops.getitem(w, pad).detach(), out)


def _int_indices(name, what, value):
    """``value`` (a Tensor or array of integers) as an int64 NumPy array."""
    v = np.asarray(value._v if isinstance(value, Tensor) else value)
    if v.dtype.kind not in "iu":
        raise TypeError(f"{name}: {what} must hold integer indices, got dtype {v.dtype}")
    return v.astype(np.int64)


def _bags(name, idx, offsets, include_last_offset):
    """The (B, L) matrix of positions into the flat indices of each bag's elements (padded
    with -1) for PyTorch's 2-D input (fixed-length bags) or 1-D input with ``offsets``."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                f"{name}: if input is 2D, then offsets has to be None, as input is treated as "
                f"a mini-batch of fixed length sequences; pass a 1-D input with offsets"
            )
        b, n = idx.shape
        if n == 0 and b:
            raise ValueError(
                f"{name}: a 2-D input of shape {idx.shape} holds bags of no index (PyTorch "
                f"raises too); pass a 1-D input with offsets for empty bags"
            )
        return np.arange(b * n).reshape(b, n)
    if idx.ndim != 1:
        raise ValueError(f"{name}: input has to be 1D or 2D, but got shape {idx.shape}")
    if offsets is None:
        raise ValueError(f"{name}: offsets has to be a 1D Tensor but got None (a 1-D input)")
    off = _int_indices(name, "offsets", offsets)
    if off.ndim != 1:
        raise ValueError(f"{name}: offsets has to be a 1D Tensor, got shape {off.shape}")
    n = idx.shape[0]
    if off.size and off[0] != 0:
        raise ValueError(
            f"{name}: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
            f"start from position 0. However, got {off[0]}"
        )
    if off.size and off[-1] > n:
        raise ValueError(
            f"{name}: offsets[-1] can not be greater than input's length {n} but got "
            f"offsets[-1] of {off[-1]}"
        )
    if np.any(np.diff(off) < 0):
        raise ValueError(f"{name}: offsets must be non-decreasing, got {off.tolist()}")
    if include_last_offset:
        if off.size == 0 or off[-1] != n:
            raise ValueError(
                f"{name}: with include_last_offset=True the last offset must be the input's "
                f"length {n} (PyTorch's result is undefined otherwise), got offsets "
                f"{off.tolist()}"
            )
        starts, ends = off[:-1], off[1:]
    else:
        starts, ends = off, np.append(off[1:], n)
    count = ends - starts
    width = int(count.max()) if count.size else 0
    pos = starts[:, None] + np.arange(width)[None, :]
    return np.where(np.arange(width)[None, :] < count[:, None], pos, -1)


def embedding_bag(
    input: TensorLike,
    weight: TensorLike,
    offsets: TensorLike | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: TensorLike | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of rows of ``weight`` (PyTorch's ``F.embedding_bag``),
    without building the intermediate embeddings' tensor in the user's code.

    ``input`` is a 2-D (B, N) integer tensor of B bags of N indices, or a 1-D tensor cut into
    bags at ``offsets`` (bag i is ``input[offsets[i]:offsets[i + 1]]``; with
    ``include_last_offset=True`` offsets has B + 1 entries, its last the input's length).
    ``mode`` is ``"sum"``, ``"mean"`` or ``"max"`` (per feature; its gradient goes to the first
    maximum); ``per_sample_weights`` (the input's shape, ``mode="sum"`` only) scale each row
    before the sum.  Indices equal to ``padding_idx`` are left out of their bag (a mean divides
    by the other indices' count); an empty bag gives zeros.  Returns (B, embedding_dim).
    ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are refused.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> w = tg.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], requires_grad=True)
        >>> F.embedding_bag(tg.tensor([0, 2, 1, 1]), w, tg.tensor([0, 2]), mode="sum")
        tensor([[4., 6.],
                [4., 6.]], grad_fn=<SumBackward0>)
    """
    name = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{name}: mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError(f"{name}: max mode does not support scaling the gradient by the frequency")
    _embedding_options(name, max_norm, scale_grad_by_freq, sparse)
    w = _ops.tensor_of(weight)
    if w.ndim != 2:
        raise ValueError(f"{name}: weight has to be a 2D Tensor, but got shape {w.shape}")
    idx = _int_indices(name, "input", input)
    bags = _bags(name, idx, offsets, include_last_offset)
    flat = idx.reshape(-1)
    num, dim = w.shape
    if flat.size and (flat.min() < 0 or flat.max() >= num):
        bad = flat[(flat < 0) | (flat >= num)][0]
        raise IndexError(f"{name}: index {bad} is out of range for {num} embeddings")
    keep = bags >= 0
    if padding_idx is not None:
        pad = int(padding_idx)
        if not -num <= pad < num:
            raise ValueError(
                f"{name}: padding_idx must be within the number of embeddings, {-num} through "
                f"{num - 1}, but got {pad}"
            )
    looked = flat[np.maximum(bags, 0)] if flat.size else np.zeros(bags.shape, np.int64)
    if padding_idx is not None:
        keep &= looked != pad % num
    rows = np.where(keep, looked, num)  # num: the fill row
    fill = -np.inf if mode == "max" else 0.0
    table = _ops.concatenate([w, np.full((1, dim), fill)], axis=0)
    picked = _ops.getitem(table, rows)  # (B, L, D)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"{name}: per_sample_weights is only supported for mode='sum' (got "
                f"mode={mode!r}); scale the rows yourself with F.embedding and sum"
            )
        psw = _ops.tensor_of(per_sample_weights)
        if psw.shape != idx.shape:
            raise ValueError(
                f"{name}: per_sample_weights (shape {psw.shape}) must have the same shape as "
                f"the input ({idx.shape})"
            )
        psw = _ops.concatenate([_ops.reshape(psw, (idx.size,)), np.zeros(1)])
        scale = _ops.gather_flat(psw, np.where(keep, bags, idx.size), bags.shape)
        picked = _ops.mul(picked, _ops.reshape(scale, bags.shape + (1,)))
    count = keep.sum(axis=1)
    if mode == "max" and bags.shape[1]:
        v = np.asarray(picked._v)
        k = np.argmax(v, axis=1)[:, None, :]  # the first maximum of each feature
        kept = _ops.gather_along(picked, k, 1)
        if STATE.guard is not None and picked._rg:  # a replay whose maxima move records again
            picked <= kept  # noqa: B015 - records the guard
        out = _ops.reshape(kept, (bags.shape[0], dim))
        return _ops.where((count == 0)[:, None], 0.0, out) if (count == 0).any() else out
    out = _ops.sum(picked, axis=1)
    if mode == "mean":
        out = _ops.div(out, np.maximum(count, 1).astype(np.float64)[:, None])
    return out


# ---- losses --------------------------------------------------------------------------------------

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(losses, reduction):
    if reduction == "mean":
        return _ops.mean(losses)
    if reduction == "sum":
        return _ops.sum(losses)
    if reduction == "none":
        return losses
    raise ValueError(
        f"{reduction!r} is not a valid value for reduction: use 'mean', 'sum' or 'none'"
    )


def _check_reduction(name, reduction, size_average=None, reduce=None, allowed=_REDUCTIONS):
    """Refuse PyTorch's deprecated size_average= / reduce= (their old meanings would be a silent
    change of scale) and reductions the loss does not have."""
    if size_average is not None or reduce is not None:
        raise TypeError(
            f"{name}: size_average= and reduce= (deprecated in PyTorch) are not supported; "
            f"use reduction='mean', 'sum' or 'none'"
        )
    if reduction not in allowed:
        raise ValueError(
            f"{name}: {reduction!r} is not a valid value for reduction: use "
            + ", ".join(repr(r) for r in allowed[:-1])
            + f" or {allowed[-1]!r}"
        )


def _shape_of(x):
    return tuple(np.shape(x._v if isinstance(x, Tensor) else x))


def _same_shape(name, input, target):
    """The target tensor; its shape must be the input's (broadcasting them would average the
    wrong pairs, where PyTorch only warns)."""
    if _shape_of(target) != _shape_of(input):
        raise ValueError(
            f"{name}: target shape {_shape_of(target)} differs from input shape "
            f"{_shape_of(input)}; reshape one of them (broadcasting would pair the wrong "
            f"elements)"
        )
    # (value_of refuses complex and other non-number targets: a cast dropped the imaginary part)
    return target if isinstance(target, Tensor) else np.asarray(value_of(target), np.float64)


def _no_weight(name, weight):
    if weight is not None:
        raise TypeError(f"{name}: weight= is not supported; multiply the reduction='none' losses")


def _classes_last(name, x):
    """``x`` (C,), (N, C) or (N, C, d1, ...) as an (M, C) tensor with the classes last, and
    the target shape (the input's shape without the class axis)."""
    if x.ndim == 0:
        raise ValueError(f"{name}: expected input of shape (C,), (N, C) or (N, C, d1, ...)")
    if x.ndim == 1:
        return _ops.reshape(x, (1, x.shape[0])), ()
    if x.ndim == 2:  # (N, C) as it is: no reshape row
        return x, (x.shape[0],)
    c = x.shape[1]
    tshape = (x.shape[0], *x.shape[2:])
    if x.ndim > 2:
        x = _ops.transpose(x, (0, *range(2, x.ndim), 1))
    return _ops.reshape(x, (-1, c)), tshape


def _class_weight(name, weight, classes):
    if weight is None:
        return None
    if isinstance(weight, str):
        raise TypeError(
            f"{name}: weight={weight!r}: the third argument is the class weight (as in "
            f"PyTorch); pass reduction={weight!r} by keyword"
        )
    # (value_of refuses complex and other non-number weights, which a cast would misread)
    w = weight if isinstance(weight, Tensor) else np.asarray(value_of(weight), np.float64)
    if _shape_of(w) != (classes,):
        raise ValueError(
            f"{name}: weight must have one entry per class ({classes},), got {_shape_of(w)}"
        )
    return w


def _class_targets(name, target, tshape, classes, ignore_index):
    """Flat class indices (ignored entries replaced by 0) and the flat mask of the kept ones
    (None when every target is kept)."""
    t = np.asarray(target._v if isinstance(target, Tensor) else target)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"{name}: target must hold integer class indices (or, for cross_entropy, class "
            f"probabilities of the input's shape), got dtype {t.dtype} and shape {t.shape}"
        )
    if t.shape != tshape:
        raise ValueError(
            f"{name}: expected target of shape {tshape} for input of {classes} classes, got "
            f"{t.shape}"
        )
    t = t.reshape(-1)
    kept = t != ignore_index
    bad = kept & ((t < 0) | (t >= classes))
    if bad.any():
        raise IndexError(f"{name}: target {t[bad][0]} is out of bounds for {classes} classes")
    if kept.all():
        return t, None
    return np.where(kept, t, 0), kept


def _picked(scores, t, kept, weight):
    """-weight[t] * scores[m, t] per row (0 where the target is ignored), the 'mean'
    denominator (the summed weights of the kept targets, their count without weights) and
    weight[t] (None without weights)."""
    losses = _ops.neg(_ops.getitem(scores, (np.arange(t.size), t)))
    wt = None
    if weight is not None:
        wt = _ops.getitem(weight, t) if isinstance(weight, Tensor) else weight[t]
        losses = _ops.mul(losses, wt)
        denom = _ops.sum(wt if kept is None else _ops.where(kept, wt, 0.0))
    else:
        denom = float(t.size if kept is None else kept.sum())
    if kept is not None:
        losses = _ops.where(kept, losses, 0.0)
    return losses, denom, wt


def _class_reduce(losses, denom, tshape, reduction):
    if reduction == "none":
        return _ops.reshape(losses, tshape)
    total = _ops.sum(losses)
    return total if reduction == "sum" else _ops.div(total, denom)


def nll_loss(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
):
    """Negative log-likelihood of log-probabilities ``input`` (N, C), (C,) or (N, C, d1, ...)
    at the integer classes ``target``: -weight[t] * input[n, t].  Targets equal to
    ``ignore_index`` count for nothing; 'mean' divides by the summed weights of the others.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> logp = tg.tensor([[-0.5, -1.0], [-2.0, -0.1]], requires_grad=True)
        >>> loss = F.nll_loss(logp, np.array([0, 1])); loss
        tensor(0.3000, grad_fn=<MulBackward0>)
        >>> loss.backward(); logp.grad
        tensor([[-0.5000, 0.0000],
                [0.0000, -0.5000]])
    """
    _check_reduction("nll_loss", reduction, size_average, reduce)
    x2, tshape = _classes_last("nll_loss", _ops.tensor_of(input))
    classes = x2.shape[1]
    w = _class_weight("nll_loss", weight, classes)
    t, kept = _class_targets("nll_loss", target, tshape, classes, ignore_index)
    losses, denom, _ = _picked(x2, t, kept, w)
    return _class_reduce(losses, denom, tshape, reduction)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Softmax cross-entropy of logits ``input`` (N, C), (C,) or (N, C, d1, ...) against
    integer classes ``target`` (N,) (or (), or (N, d1, ...)), or against class probabilities
    of the input's shape, with PyTorch's ``weight``, ``ignore_index`` and ``label_smoothing``.

    With class indices, 'mean' divides by the summed ``weight`` of the targets that are not
    ``ignore_index`` (their count without weights); with probabilities, by the number of rows.
    Per row the log-softmax is x - max(x) - logsumexp(x - max(x)).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> loss = F.cross_entropy(x, 2); loss  # log 4
        tensor(1.3863, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # softmax(x) - onehot(2)
        tensor([0.2500, 0.2500, -0.7500, 0.2500])
        >>> F.cross_entropy(tg.tensor([[0.0, 0.0]]), tg.tensor([[0.25, 0.75]]))
        tensor(0.6931)
    """
    _check_reduction("cross_entropy", reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}"
        )
    x = _ops.tensor_of(input)
    x2, tshape = _classes_last("cross_entropy", x)
    classes = x2.shape[1]
    w = _class_weight("cross_entropy", weight, classes)
    s = _ops.sub(x2, _ops.stable_shift(x2, (1,)))
    lse = _ops.log(_ops.sum(_ops.exp(s), 1))
    tv = target._v if isinstance(target, Tensor) else np.asarray(target)
    probabilities = np.asarray(tv).dtype.kind == "f" and np.shape(tv) == tuple(x.shape)
    if probabilities:
        if ignore_index != -100:
            raise ValueError(
                "cross_entropy: ignore_index applies to class-index targets only; the target "
                "holds class probabilities"
            )
        p2, _ = _classes_last("cross_entropy", _ops.tensor_of(target))
        if label_smoothing:
            p2 = _ops.add(_ops.mul(p2, 1.0 - label_smoothing), label_smoothing / classes)
        if w is not None:
            p2 = _ops.mul(p2, w)
        logp = _ops.sub(s, _ops.reshape(lse, (-1, 1)))
        losses = _ops.neg(_ops.sum(_ops.mul(logp, p2), 1))
        return _class_reduce(losses, float(losses.shape[0]), tshape, reduction)
    t, kept = _class_targets("cross_entropy", target, tshape, classes, ignore_index)
    if w is None and kept is None and not label_smoothing:  # the common case: lse - s[t]
        losses = _ops.sub(lse, _ops.getitem(s, (np.arange(t.size), t)))
        return _class_reduce(losses, float(t.size), tshape, reduction)
    picked, denom, wt = _picked(s, t, kept, w)
    # -w[t] log p[t] = w[t] (lse - s[t]); lse enters with the same weights and mask
    lse_w = lse if wt is None else _ops.mul(lse, wt)
    losses = _ops.add(picked, lse_w if kept is None else _ops.where(kept, lse_w, 0.0))
    if not label_smoothing:
        return _class_reduce(losses, denom, tshape, reduction)
    # PyTorch's smoothing term: -sum_c w_c log p_c per row, reduced like the main term
    logp = _ops.sub(s, _ops.reshape(lse, (-1, 1)))
    smooth = _ops.neg(_ops.sum(logp if w is None else _ops.mul(logp, w), 1))
    if kept is not None:
        smooth = _ops.where(kept, smooth, 0.0)
    return _ops.add(
        _ops.mul(1.0 - label_smoothing, _class_reduce(losses, denom, tshape, reduction)),
        _ops.mul(label_smoothing / classes, _class_reduce(smooth, denom, tshape, reduction)),
    )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or summed) squared difference.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = F.mse_loss(x, tg.tensor([1.0, 0.0])); loss
        tensor(2., grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # 2 (x - target) / n
        tensor([0., 2.])
    """
    _check_reduction("mse_loss", reduction, size_average, reduce)
    _no_weight("mse_loss", weight)
    d = _ops.sub(input, _same_shape("mse_loss", input, target))
    return _reduce(_ops.mul(d, d), reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or summed) absolute difference; the gradient at a zero difference is 0.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = F.l1_loss(x, tg.tensor([0.0, 4.0])); loss
        tensor(1.5000, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # sign(x - target) / n
        tensor([0.5000, -0.5000])
    """
    _check_reduction("l1_loss", reduction, size_average, reduce)
    _no_weight("l1_loss", weight)
    target = _same_shape("l1_loss", input, target)
    return _reduce(_ops.abs_(_ops.sub(input, target)), reduction)


def _huber(name, input, target, delta):
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta), as 0.5 m**2 + delta (|d| - |m|)
    with m = d clamped to [-delta, delta]: no branch on values, so traces replay it for any
    input.  The clamp is of d, not of |d|: m * m is then smooth at d = 0, so the second
    derivative there is 1 (m = min(|d|, delta) made it 0, |d|'s slope at 0 being 0); its slope
    at +-delta is 0, as PyTorch's second derivative there (the first is delta either way)."""
    if not delta > 0:
        raise ValueError(f"{name}: {'beta' if 'l1' in name else 'delta'} must be positive")
    d = _ops.sub(input, _same_shape(name, input, target))
    m = _kinked_clamp(d, -delta, delta)
    excess = _ops.sub(_ops.abs_(d), _ops.abs_(m))
    return _ops.add(_ops.mul(0.5, _ops.mul(m, m)), _ops.mul(delta, excess))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss: 0.5 d**2 for |d| < delta, else delta (|d| - 0.5 delta), d = input - target.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.huber_loss(tg.tensor([0.5, 3.0]), tg.tensor([0.0, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _check_reduction("huber_loss", reduction)
    _no_weight("huber_loss", weight)
    return _reduce(_huber("huber_loss", input, target, delta), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1: 0.5 d**2 / beta for |d| < beta, else |d| - 0.5 beta (the L1 loss for
    beta = 0); huber_loss / beta.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.smooth_l1_loss(tg.tensor([0.5, 3.0]), tg.tensor([0.0, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _check_reduction("smooth_l1_loss", reduction, size_average, reduce)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must not be negative, got {beta}")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    losses = _huber("smooth_l1_loss", input, target, beta)
    return _reduce(losses if beta == 1 else _ops.div(losses, beta), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence of log-probabilities ``input`` from ``target``:
    target (log target - input), or with ``log_target`` exp(target) (target - input).
    'batchmean' divides the sum by the batch size (the true KL divergence); 'mean' divides by
    the number of elements (as PyTorch).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> logq = tg.tensor([[np.log(0.5), np.log(0.5)]])
        >>> F.kl_div(logq, tg.tensor([[0.25, 0.75]]), reduction="batchmean")
        tensor(0.1308)
    """
    _check_reduction(
        "kl_div", reduction, size_average, reduce, ("mean", "batchmean", "sum", "none")
    )
    t = _same_shape("kl_div", input, target)
    if log_target:
        losses = _ops.mul(_ops.exp(t), _ops.sub(t, input))
    else:
        # xlogy(t, t): 0 where t is 0 (nan for t < 0), as PyTorch; the unselected branch
        # t log t makes the gradient with respect to a zero target nan, as PyTorch's (the
        # derivative there is -inf: no finite number is right).  The value 0 there is
        # sqrt(t) * sqrt(t), whose derivative is 0 * inf = nan in forward mode and in every
        # derivative of the gradient too (a constant 0 would give a finite tangent, as if
        # t log t were flat at 0; PyTorch's forward mode gives nan there as well)
        with np.errstate(divide="ignore", invalid="ignore"):
            root = _ops.sqrt(t)
            tlogt = _ops.where(t == 0, _ops.mul(root, root), _ops.mul(t, _ops.log(t)))
        losses = _ops.sub(tlogt, _ops.mul(t, input))
    if reduction == "batchmean":
        total = _ops.sum(losses)
        return total if losses.ndim == 0 else _ops.div(total, float(losses.shape[0]))
    return _reduce(losses, reduction)


def _clamped_log(p, positive):
    """log(p) clamped below at -100; entries where ``positive`` is False give -100."""
    if not positive.all():
        p = _ops.where(positive, p, 1e-300)
    return _ops.clip(_ops.log(p), -100.0)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-(t log p + (1 - t) log(1 - p)) for probabilities ``input``, logs clamped at -100.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> p = tg.tensor([0.5, 0.5], requires_grad=True)
        >>> loss = F.binary_cross_entropy(p, tg.tensor([1.0, 0.0])); loss
        tensor(0.6931, grad_fn=<MulBackward0>)
        >>> loss.backward(); p.grad             # (-t / p + (1 - t) / (1 - p)) / n
        tensor([-1.,  1.])
    """
    _check_reduction("binary_cross_entropy", reduction, size_average, reduce)
    p = _ops.tensor_of(input)
    pv = np.asarray(p._v)
    # comparisons of the Tensor, not of its value: a trace guards them, so a replay whose
    # probabilities leave (0, 1) or reach an end is re-recorded, never computed with stale masks
    positive = _ops.truth(p > 0.0)
    below_one = _ops.truth(p < 1.0)
    if np.any(~positive & (pv != 0.0)) or np.any(~below_one & (pv != 1.0)):
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    tv = _same_shape("binary_cross_entropy", p, target)
    # as PyTorch: a target outside [0, 1] (or NaN) is refused, not turned into a loss that
    # rewards p -> 0 or 1 without bound (guarded comparisons, as for p above)
    t = _ops.tensor_of(tv)
    if not (_ops.truth(t >= 0.0) & _ops.truth(t <= 1.0)).all():
        raise RuntimeError("binary_cross_entropy: all elements of target should be between 0 and 1")
    log_p = _clamped_log(p, positive)
    log_q = _clamped_log(_ops.sub(1.0, p), below_one)
    # -(t log p + (1 - t) log q) = -(log q + t (log p - log q))
    losses = _ops.neg(_ops.add(log_q, _ops.mul(tv, _ops.sub(log_p, log_q))))
    if weight is not None:
        losses = _ops.mul(losses, weight)
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(
    input,
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
    pos_weight=None,
):
    """Sigmoid + binary cross-entropy on logits, stably: softplus(x) - x t, with softplus(x)
    = logaddexp(0, x), whose derivative is sigmoid(x) everywhere (the form max(x, 0) - x t +
    log1p(exp(-|x|)) has the same value but loses the derivative at x = 0, where models that
    start from zero weights begin).  ``pos_weight`` (broadcast along the last axis, one per
    class) weighs the positive term: (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([1.0, -1.0], requires_grad=True)
        >>> t = tg.tensor([1.0, 0.0])
        >>> loss = F.binary_cross_entropy_with_logits(x, t); loss   # log(1 + e**-1)
        tensor(0.3133, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # (sigmoid(x) - t) / n
        tensor([-0.1345, 0.1345])
    """
    _check_reduction("binary_cross_entropy_with_logits", reduction, size_average, reduce)
    x = _ops.tensor_of(input)
    t = _same_shape("binary_cross_entropy_with_logits", x, target)
    if pos_weight is None:
        losses = _ops.sub(_ops.logaddexp(0.0, x), _ops.mul(x, t))
    else:
        log_weight = _ops.add(_ops.mul(_ops.sub(pos_weight, 1.0), t), 1.0)
        losses = _ops.add(
            _ops.mul(_ops.sub(1.0, t), x),
            _ops.mul(log_weight, _ops.logaddexp(0.0, _ops.neg(x))),
        )
    if weight is not None:
        losses = _ops.mul(losses, weight)
    return _reduce(losses, reduction)


# ---- margin losses -------------------------------------------------------------------------------


_CTC_NONE = -1e300  # log(0) inside the recursion: finite, so every gradient stays finite


def _lengths(name, what, value, n):
    """``value`` (an int, a sequence or an integer Tensor) as n int64 lengths."""
    v = np.asarray(value._v if isinstance(value, Tensor) else value)
    if v.dtype.kind not in "iu":
        raise TypeError(f"{name}: {what} must hold integers, got dtype {v.dtype}")
    v = v.astype(np.int64).reshape(-1)
    if v.shape != (n,):
        raise ValueError(f"{name}: {what} must be of size batch_size ({n}), got {v.size} values")
    if (v < 0).any():
        raise ValueError(f"{name}: {what} must be non-negative, got {v.tolist()}")
    return v


def _ctc_targets(name, targets, lengths, n, classes, blank):
    """The (N, S) label matrix from PyTorch's padded (N, S) or concatenated 1-D targets."""
    t = np.asarray(targets._v if isinstance(targets, Tensor) else targets)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{name}: targets must hold integer class indices, got dtype {t.dtype}")
    t = t.astype(np.int64)
    width = int(lengths.max()) if n else 0
    if t.ndim == 2 and n == t.shape[0]:
        if t.shape[1] < width:
            raise ValueError(
                f"{name}: targets of shape {t.shape} are shorter than the longest target "
                f"length {width}"
            )
        labels = t[:, :width]
    elif t.ndim == 1:
        if t.size != lengths.sum():
            raise ValueError(
                f"{name}: concatenated 1-D targets must hold sum(target_lengths) = "
                f"{lengths.sum()} labels, got {t.size}"
            )
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        pos = starts[:, None] + np.arange(width)[None, :]
        labels = t[np.minimum(pos, max(t.size - 1, 0))] if t.size else np.zeros((n, width), int)
    else:
        raise ValueError(
            f"{name}: targets must be (N, S) padded or 1-D concatenated for a batch of {n}, "
            f"got shape {t.shape}"
        )
    used = np.arange(width)[None, :] < lengths[:, None]
    real = labels[used]
    if real.size and ((real < 0).any() or (real >= classes).any() or (real == blank).any()):
        bad = real[(real < 0) | (real >= classes) | (real == blank)][0]
        raise ValueError(
            f"{name}: target label {bad} is not a class other than the blank ({blank}) among "
            f"the {classes} classes of log_probs"
        )
    return np.where(used, labels, blank)


def ctc_loss(
    log_probs: TensorLike,
    targets: TensorLike,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist Temporal Classification loss (PyTorch's ``F.ctc_loss``): minus the log of
    the total probability of every alignment of each target to its input.

    ``log_probs`` is (T, N, C) (or (T, C) unbatched) log-probabilities (``log_softmax`` of the
    logits over C), ``targets`` the (N, S) padded or 1-D concatenated labels (never the
    ``blank``), ``input_lengths`` and ``target_lengths`` the N lengths.  ``reduction="mean"``
    divides each loss by its target length (at least 1) and averages over the batch;
    an input too short for its target has an infinite loss with a non-finite gradient (NaN
    in PyTorch); ``zero_infinity=True`` zeroes both.  Computed as the log-space forward
    recursion over time in tapegrad ops (``logsumexp`` of the three predecessors), so higher
    derivatives and forward mode come with it.  The gradient with respect to ``log_probs`` is
    the derivative itself; PyTorch's kernel returns it plus ``exp(log_probs)``, which the
    backward of ``log_softmax`` cancels, so gradients with respect to the logits agree with
    PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> lp = tg.full((2, 1, 2), 0.5).log()  # two steps, a blank and one class
        >>> F.ctc_loss(lp, tg.tensor([[1]]), [2], [1], reduction="sum")  # -log(3 / 4)
        tensor(0.2877)
    """
    name = "ctc_loss"
    _check_reduction(name, reduction)
    lp = _ops.tensor_of(log_probs)
    unbatched = lp.ndim == 2
    if unbatched:
        lp = _ops.reshape(lp, (lp.shape[0], 1, lp.shape[1]))
        targets = np.asarray(targets._v if isinstance(targets, Tensor) else targets)[None]
    if lp.ndim != 3:
        raise ValueError(f"{name}: log_probs must be (T, N, C) or (T, C), got shape {lp.shape}")
    steps, n, classes = lp.shape
    if not isinstance(blank, (int, np.integer)) or not 0 <= blank < classes:
        raise ValueError(f"{name}: blank must be in label range 0 .. {classes - 1}, got {blank}")
    in_len = _lengths(name, "input_lengths", input_lengths, n)
    tgt_len = _lengths(name, "target_lengths", target_lengths, n)
    if (in_len > steps).any():
        raise ValueError(
            f"{name}: input_lengths must be at most T = {steps}, got {in_len.tolist()}"
        )
    labels = _ctc_targets(name, targets, tgt_len, n, classes, blank)
    width = 2 * labels.shape[1] + 1  # the targets with blanks around and between their labels
    ext = np.full((n, width), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    live = np.arange(width)[None, :] < 2 * tgt_len[:, None] + 1
    skip = np.zeros((n, width), dtype=bool)  # s - 2 -> s: a label other than the one before
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    # emissions e[t, b, s] = log_probs[t, b, ext[b, s]], dead states log 0
    at = (np.arange(steps)[:, None, None] * n + np.arange(n)[None, :, None]) * classes + ext
    e = _ops.gather_flat(lp, at, at.shape)
    e = _ops.where(live[None], _ops.maximum(e, _CTC_NONE), _CTC_NONE)
    none1 = np.full((n, 1), _CTC_NONE)

    def shifted(a, k):  # a[:, s - k] at s (log 0 where s < k)
        k = min(k, width)
        return _ops.concatenate(
            [np.full((n, k), _CTC_NONE), _ops.getitem(a, (slice(None), slice(0, width - k)))], 1
        )

    start = np.arange(width)[None, :] < 2
    alpha = _ops.where(start, _ops.getitem(e, 0), _CTC_NONE) if steps else None
    for t in range(1, int(in_len.max()) if n else 0):
        prev2 = _ops.where(skip, shifted(alpha, 2), _CTC_NONE)
        new = _ops.logsumexp(_ops.stack([alpha, shifted(alpha, 1), prev2]), axis=0)
        new = _ops.add(new, _ops.getitem(e, t))
        alpha = _ops.where((t < in_len)[:, None], new, alpha)  # a finished input keeps its end
    if alpha is None:  # T = 0
        alpha = _ops.tensor_of(np.full((n, width), _CTC_NONE))
    # the path ends on the last label or the blank after it; an empty input reads nothing
    ends = np.stack([2 * tgt_len, 2 * tgt_len - 1], axis=1)
    ends = np.where((ends >= 0) & (in_len > 0)[:, None], ends, width)  # width: log 0
    pick = np.arange(n)[:, None] * (width + 1) + ends
    ends = _ops.gather_flat(_ops.concatenate([alpha, none1], 1), pick, pick.shape)
    total = _ops.logsumexp(ends, axis=1)
    empty = (in_len == 0) & (tgt_len == 0)  # the empty alignment, probability 1
    total = _ops.where(empty, 0.0, total)
    impossible = np.asarray(value_of(total < _CTC_NONE / 2))  # (a guard while tracing)
    loss = _ops.neg(total)
    if impossible.any() and zero_infinity:
        loss = _ops.where(impossible, 0.0, loss)
    elif impossible.any():  # an infinite loss, whose gradient is NaN (as PyTorch's): inf * the
        # soft loss plus 0 * its emissions (so that every emission read gets inf * 0)
        read = (np.arange(steps)[:, None] < in_len[None, :])[..., None] & live[None]
        zero = _ops.mul(_ops.sum(_ops.where(read, e, 0.0), axis=(0, 2)), 0.0)
        lost = _ops.where(impossible, _ops.add(loss, zero), 1.0)
        loss = _ops.where(impossible, _ops.mul(lost, np.inf), loss)
    if unbatched:
        loss = _ops.reshape(loss, ())
    if reduction == "mean":
        per = np.maximum(tgt_len, 1).astype(np.float64).reshape(loss.shape)
        return _ops.mean(_ops.div(loss, per))
    return _reduce(loss, reduction)


def _same_ndim(name, *tensors):
    """PyTorch's check of the margin losses: every input has the same number of dims."""
    shapes = [_shape_of(t) for t in tensors]
    if len({len(sh) for sh in shapes}) != 1:
        raise ValueError(
            f"{name}: all input tensors should have the same number of dimensions, got shapes "
            + ", ".join(str(sh) for sh in shapes)
        )


def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """max(0, -target (input1 - input2) + margin) (PyTorch's ``F.margin_ranking_loss``;
    target is 1 where input1 should rank higher, -1 where input2 should).  At the kink the
    gradient is the one of the linear side, as PyTorch's ``clamp_min``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.margin_ranking_loss(tg.tensor([1.0, 0.0]), tg.tensor([0.0, 0.5]),
        ...                       tg.tensor([1.0, 1.0]), margin=0.5, reduction="none")
        tensor([0., 1.])
    """
    _check_reduction("margin_ranking_loss", reduction, size_average, reduce)
    _same_ndim("margin_ranking_loss", input1, input2, target)
    margin = scalar_argument(margin, "margin_ranking_loss: margin")
    d = _ops.sub(input1, input2)
    losses = _ops.clip(_ops.add(_ops.mul(_ops.neg(target), d), margin), 0.0)
    return _reduce(losses, reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """x where target is 1, max(0, margin - x) where target is -1 (PyTorch's
    ``F.hinge_embedding_loss``, with its sum of both terms for other target values).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.hinge_embedding_loss(tg.tensor([0.3, 0.3, 2.0]), tg.tensor([1.0, -1.0, -1.0]),
        ...                        reduction="none")
        tensor([0.3000, 0.7000, 0.0000])
    """
    _check_reduction("hinge_embedding_loss", reduction, size_average, reduce)
    margin = scalar_argument(margin, "hinge_embedding_loss: margin")
    x = _ops.tensor_of(input)
    t = _ops.tensor_of(_same_shape("hinge_embedding_loss", x, target))
    hinge = _ops.clip(_ops.sub(margin, x), 0.0)
    losses = _ops.add(_ops.where(t != 1, hinge, 0.0), _ops.where(t != -1, x, 0.0))
    return _reduce(losses, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)) (PyTorch's ``F.soft_margin_loss``, the two-class
    logistic loss for targets +-1), computed as logaddexp(0, -target * input).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.soft_margin_loss(tg.tensor([0.0, 2.0]), tg.tensor([1.0, -1.0]), reduction="none")
        tensor([0.6931, 2.1269])
    """
    _check_reduction("soft_margin_loss", reduction, size_average, reduce)
    x = _ops.tensor_of(input)
    t = _same_shape("soft_margin_loss", x, target)
    return _reduce(_ops.logaddexp(0.0, _ops.neg(_ops.mul(x, t))), reduction)


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1
    (PyTorch's ``F.cosine_embedding_loss``; 0 for other targets): inputs (N, D) with target
    (N,), or (D,) with a 0-D target.  cos = x1.x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)),
    as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x1, x2 = tg.tensor([[1.0, 0.0], [1.0, 1.0]]), tg.tensor([[0.0, 1.0], [1.0, 1.0]])
        >>> F.cosine_embedding_loss(x1, x2, tg.tensor([1.0, -1.0]), reduction="none")
        tensor([1.0000, 1.0000])
    """
    name = "cosine_embedding_loss"
    _check_reduction(name, reduction, size_average, reduce)
    margin = scalar_argument(margin, f"{name}: margin")
    x1, x2 = _ops.tensor_of(input1), _ops.tensor_of(input2)
    t = _ops.tensor_of(target)
    if x1.shape != x2.shape or x1.ndim not in (1, 2):
        raise ValueError(
            f"{name}: expected input1 and input2 of the same shape (N, D) or (D,), got "
            f"{x1.shape} and {x2.shape}"
        )
    if t.ndim != x1.ndim - 1 or (t.ndim and t.shape[0] != x1.shape[0]):
        raise ValueError(
            f"{name}: expected a target of shape {x1.shape[:1]} for inputs of shape "
            f"{x1.shape}, got {t.shape}"
        )
    axis = x1.ndim - 1
    prod = _ops.sum(_ops.mul(x1, x2), axis)
    m1 = _ops.add(_ops.sum(_ops.mul(x1, x1), axis), 1e-12)
    m2 = _ops.add(_ops.sum(_ops.mul(x2, x2), axis), 1e-12)
    cos = _ops.div(prod, _ops.sqrt(_ops.mul(m1, m2)))
    pos = _ops.where(t == 1, _ops.sub(1.0, cos), 0.0)
    neg = _ops.where(t == -1, _ops.clip(_ops.sub(cos, margin), 0.0), 0.0)
    return _reduce(_ops.add(pos, neg), reduction)


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Multi-class hinge loss (PyTorch's ``F.multi_margin_loss``): for scores ``input``
    (N, C) or (C,) and integer classes ``target`` (N,) or (), the sum over the classes
    i != y of max(0, margin - x[y] + x[i]) ** p, divided by C and times weight[y].  ``p`` is
    1 or 2; at the kink (a zero hinge) the gradient is 0, as PyTorch's.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.multi_margin_loss(tg.tensor([[0.1, 0.2, 0.4, 0.8]]), np.array([3]))
        tensor(0.3250)
    """
    name = "multi_margin_loss"
    _check_reduction(name, reduction, size_average, reduce)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError(f"{name}: only p == 1 and p == 2 are supported, got p={p!r}")
    margin = scalar_argument(margin, f"{name}: margin")
    x = _ops.tensor_of(input)
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise ValueError(
            f"{name}: expected a non-empty input of shape (C,) or (N, C), got {x.shape}"
        )
    x2 = _ops.reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
    rows, classes = x2.shape
    tv = np.asarray(target._v if isinstance(target, Tensor) else target)
    if tv.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must hold integer class indices, got dtype {tv.dtype}")
    if tv.shape != x.shape[:-1] and not (x.ndim == 1 and tv.shape == (1,)):
        raise ValueError(
            f"{name}: inconsistent target size: expected {x.shape[:-1]} for input of shape "
            f"{x.shape}, got {tv.shape}"
        )
    t = tv.reshape(rows).astype(np.int64)
    if t.size and (t.min() < 0 or t.max() >= classes):
        raise IndexError(f"{name}: target {t.tolist()} is out of range for {classes} classes")
    picked = _ops.getitem(x2, (np.arange(rows), t))
    z = _ops.add(_ops.sub(x2, _ops.reshape(picked, (rows, 1))), margin)
    h = _ops.relu(z)  # relu's slope at 0 is 0, as PyTorch's (it adds only where z > 0)
    if p == 2:
        h = _ops.mul(h, h)
    others = np.arange(classes)[None, :] != t[:, None]
    h = _ops.where(others, h, 0.0)
    if weight is not None:
        w = _ops.tensor_of(weight)
        if w.shape != (classes,):
            raise ValueError(f"{name}: weight must have shape ({classes},), got {w.shape}")
        h = _ops.mul(h, _ops.reshape(_ops.getitem(w, t), (rows, 1)))
    losses = _ops.div(_ops.sum(h, 1), float(classes))
    if x.ndim == 1:
        losses = _ops.reshape(losses, tv.shape)
    return _reduce(losses, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """max(0, d(a, p) - d(a, n) + margin) with d the ``pairwise_distance`` of norm ``p``
    (PyTorch's ``F.triplet_margin_loss``); ``swap`` uses min(d(a, n), d(p, n)) for the
    negative distance.  Inputs (N, D) or (D,).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> a, pos, neg = tg.tensor([[0.0, 0.0]]), tg.tensor([[3.0, 4.0]]), tg.tensor([[1.0, 0.0]])
        >>> F.triplet_margin_loss(a, pos, neg, eps=0.0)
        tensor(5.)
    """
    name = "triplet_margin_loss"
    _check_reduction(name, reduction, size_average, reduce)
    a, pos, neg = (_ops.tensor_of(t) for t in (anchor, positive, negative))
    if not a.ndim == pos.ndim == neg.ndim:
        raise ValueError(
            f"{name}: the anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and "
            f"negative {neg.ndim}D inputs"
        )
    margin = scalar_argument(margin, f"{name}: margin")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    losses = _ops.clip(_ops.add(_ops.sub(d_pos, d_neg), margin), 0.0)
    return _reduce(losses, reduction)


# ---- more activations ----------------------------------------------------------------------------


def softmin(input: TensorLike, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmin along ``dim``: softmax(-x) (PyTorch's ``F.softmin``); ``dim`` defaults as for
    ``softmax``.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.softmin(tg.tensor([0.0, 1.0]), dim=0)
        tensor([0.7311, 0.2689])
    """
    d = _softmax_dim(input, dim, None, "softmin")
    return _methods._softmax(_ops.neg(_ops.tensor_of(input)), d, dtype=dtype)


def softshrink(input: TensorLike, lambd: float = 0.5) -> Tensor:
    """x - lambd above ``lambd``, x + lambd below -``lambd``, 0 between (PyTorch's
    ``F.softshrink``; the gradient is 0 at +-lambd, as PyTorch's).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.softshrink(tg.tensor([-2.0, 0.3, 1.0]))
        tensor([-1.5000, 0.0000, 0.5000])
    """
    lambd = scalar_argument(lambd, "softshrink: lambd")
    if not lambd >= 0:
        raise RuntimeError(f"softshrink: lambd must be >= 0, but found {lambd}")
    x = _ops.tensor_of(input)
    return _ops.sub(_ops.relu(_ops.sub(x, lambd)), _ops.relu(_ops.sub(_ops.neg(x), lambd)))


def hardshrink(input: TensorLike, lambd: float = 0.5) -> Tensor:
    """x where |x| > ``lambd``, else 0 (PyTorch's ``F.hardshrink``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.hardshrink(tg.tensor([-2.0, 0.3, 1.0]))
        tensor([-2.,  0.,  1.])
    """
    lambd = scalar_argument(lambd, "hardshrink: lambd")
    x = _ops.tensor_of(input)
    return _ops.mul(x, _step_above(_ops.abs_(x), lambd))


def _step_above(x, b):
    """Exactly 1 where x > b, 0 where x <= b, with slope 0 (sign(relu(x - b))): op kernels,
    not a comparison read in Python, so a trace replays it for any x."""
    return _ops.sign(_ops.relu(_ops.sub(x, b)))


def threshold(input: TensorLike, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > ``threshold``, else ``value`` (PyTorch's ``F.threshold``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.threshold(tg.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0)
        tensor([-9., -9.,  2.])
    """
    _no_inplace("threshold", inplace)
    th = scalar_argument(threshold, "threshold: threshold")
    value = scalar_argument(value, "threshold: value")
    x = _ops.tensor_of(input)
    if not (math.isfinite(th) and math.isfinite(value)):
        return _ops.where(x > th, x, value)
    keep = _step_above(x, th)
    # clip: -inf times 0 would be nan; where x > th it is x itself, with slope 1
    return _ops.add(_ops.mul(_ops.clip(x, th, None), keep), _ops.mul(value, _ops.sub(1.0, keep)))


def rrelu(
    input: TensorLike,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomized leaky ReLU (PyTorch's ``F.rrelu``): x for x >= 0, else a x with the slope
    a drawn from U(lower, upper) for each element while ``training`` (from ``tg.manual_seed``'s
    generator; refused inside a ``tg.trace`` recording), and (lower + upper) / 2 otherwise.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.rrelu(tg.tensor([-3.0, 2.0]), 0.1, 0.3)
        tensor([-0.6000, 2.0000])
    """
    _no_inplace("rrelu", inplace)
    lower = scalar_argument(lower, "rrelu: lower")
    upper = scalar_argument(upper, "rrelu: upper")
    if lower > upper:
        raise RuntimeError(
            f"rrelu: lower bound {lower} should be less than or equal to the upper bound {upper}"
        )
    x = _ops.tensor_of(input)
    if not training:
        return _ops.leaky_relu(x, (lower + upper) / 2.0)
    if STATE.guard is not None:
        raise RuntimeError(
            "rrelu: a tg.trace recording cannot draw the random slopes (every replay would reuse "
            "the recorded ones). Use training=False (model.eval()) inside the trace, or "
            "differentiate the training step with tg.grad / backward, which draw at each call"
        )
    slopes = _creation.rng().uniform(lower, upper, np.shape(x._v))
    return _ops.add(_ops.relu(x), _ops.mul(_neg_part(x), slopes))


def prelu(input: TensorLike, weight: TensorLike) -> Tensor:
    """x for x > 0, else ``weight`` * x with a learnable slope per channel (dim 1) or one shared
    slope (PyTorch's ``F.prelu``; ``weight`` is a scalar or 1-D of 1 or C elements).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.prelu(tg.tensor([[-1.0, -1.0], [2.0, -4.0]]), tg.tensor([0.1, 0.5]))
        tensor([[-0.1000, -0.5000],
                [2.0000, -2.0000]])
    """
    x = _ops.tensor_of(input)
    w = _ops.tensor_of(weight)
    if w.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}"
        )
    channels = int(x.shape[1]) if x.ndim >= 2 else 1
    if w.size != 1 and w.size != channels:
        raise RuntimeError(
            "prelu: Mismatch of parameter numbers and input channel size. Found parameter "
            f"numbers = {w.size} and channel size = {channels}."
        )
    if w.size == 1 or x.ndim < 2:
        w = _ops.reshape(w, ())
    else:
        w = _ops.reshape(w, (channels,) + (1,) * (x.ndim - 2))
    return _ops.add(_ops.relu(x), _ops.mul(w, _neg_part(x)))


def rms_norm(
    input: TensorLike,
    normalized_shape: int | Sequence[int],
    weight: TensorLike | None = None,
    eps: float | None = None,
) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` axes:
    x / sqrt(mean(x**2) + eps) * weight (PyTorch's ``F.rms_norm``; ``eps=None`` is the float64
    machine epsilon, as PyTorch's for a float64 input).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.rms_norm(tg.tensor([[3.0, 4.0]]), (2,), eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    x = _ops.tensor_of(input)
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, (int, np.integer))
        else tuple(int(s) for s in normalized_shape)
    )
    k = len(shape)
    if not k or x.ndim < k or tuple(x.shape[x.ndim - k :]) != shape:
        raise RuntimeError(
            f"rms_norm: Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}"
        )
    if weight is not None and tuple(np.shape(value_of(weight))) != shape:
        raise RuntimeError(
            "rms_norm: Expected weight to be of same shape as normalized_shape, but got weight "
            f"of shape {list(np.shape(value_of(weight)))} and normalized_shape = {list(shape)}"
        )
    eps = float(np.finfo(np.float64).eps) if eps is None else scalar_argument(eps, "rms_norm: eps")
    axes = tuple(range(x.ndim - k, x.ndim))
    ms = _ops.mean(_ops.mul(x, x), axes, True)
    return _affine(_ops.div(x, _ops.sqrt(_ops.add(ms, eps))), weight, None)


def _check_factor(name, factor, what):
    f = int(factor)
    if f != factor or f <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")
    return f


def pixel_shuffle(input: TensorLike, upscale_factor: int) -> Tensor:
    """(*, C r**2, H, W) -> (*, C, H r, W r): each group of r**2 channels becomes an r x r
    block of pixels (PyTorch's ``F.pixel_shuffle``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.pixel_shuffle(tg.arange(4.0).reshape(4, 1, 1), 2)
        tensor([[[0., 1.],
                 [2., 3.]]])
    """
    x = _ops.tensor_of(input)
    r = _check_factor("pixel_shuffle", upscale_factor, "upscale_factor")
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    *batch, c, h, w = (int(s) for s in x.shape)
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    nb = len(batch)
    y = _ops.reshape(x, (*batch, c // (r * r), r, r, h, w))
    y = _ops.transpose(y, (*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return _ops.reshape(y, (*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: TensorLike, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r**2, H, W), the inverse of ``pixel_shuffle`` (PyTorch's
    ``F.pixel_unshuffle``).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> F.pixel_unshuffle(tg.arange(4.0).reshape(1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    x = _ops.tensor_of(input)
    r = _check_factor("pixel_unshuffle", downscale_factor, "downscale_factor")
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    *batch, c, h, w = (int(s) for s in x.shape)
    for what, n, d in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                f"input.size({d})={n} is not divisible by {r}"
            )
    nb = len(batch)
    y = _ops.reshape(x, (*batch, c, h // r, r, w // r, r))
    y = _ops.transpose(y, (*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return _ops.reshape(y, (*batch, c * r * r, h // r, w // r))


def gumbel_softmax(
    logits: TensorLike, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau)
    along ``dim`` with g standard Gumbel noise from ``tg.manual_seed``'s generator (PyTorch's
    ``F.gumbel_softmax``).  ``hard=True`` returns the one-hot of the sample's argmax with the
    soft sample's gradient (straight-through).  A ``tg.trace`` recording refuses the draw.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> _ = tg.manual_seed(0)
        >>> y = F.gumbel_softmax(tg.zeros(2, 3), hard=True)
        >>> y.sum(dim=-1)
        tensor([1., 1.])
    """
    tau = scalar_argument(tau, "gumbel_softmax: tau")
    if not tau > 0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau}")
    if STATE.guard is not None:
        raise RuntimeError(
            "gumbel_softmax: a tg.trace recording cannot draw the Gumbel noise (every replay "
            "would reuse the recorded draw). Draw outside the trace, or differentiate with "
            "tg.grad / backward, which draw at each call"
        )
    x = _ops.tensor_of(logits)
    d = _ops.normalize_axes(dim, x.ndim, "gumbel_softmax")[0] if x.ndim else 0
    gumbels = -np.log(_creation.rng().exponential(1.0, np.shape(x._v)))
    y = _ops.softmax(_ops.div(_ops.add(x, gumbels), tau), d)
    if not hard:
        return y
    yv = np.asarray(y._v)
    one_hot = np.zeros(yv.shape)
    np.put_along_axis(one_hot, np.expand_dims(np.argmax(yv, d), d), 1.0, d)
    return _ops.add(_ops.sub(one_hot, y.detach()), y)


# ---- attention -----------------------------------------------------------------------------------


def _float_mask(name, mask, masked_when):
    """``mask`` as an additive bias: a bool mask gives -inf where it equals ``masked_when`` (and
    0 elsewhere), a float mask is added as it is (a Tensor keeps its gradient)."""
    if mask is None:
        return None
    raw = np.asarray(mask._v if isinstance(mask, Tensor) else mask)
    dt = raw.dtype
    if dt == np.bool_:
        return np.where(raw == masked_when, -np.inf, 0.0)
    if dt.kind != "f":
        raise RuntimeError(
            f"{name}: only bool and floating masks are supported, got dtype {dt}; pass a bool "
            "mask or an additive float mask"
        )
    return mask


def _attend(q, k, v, bias, dropout_p, safe, name):
    """softmax(q k^T + bias) v over the last two axes (``q`` already scaled) and the weights.
    ``safe``: a row whose scores are all -inf gives zero weights (PyTorch's scaled dot-product
    attention) instead of NaN (its ``need_weights`` path of multi-head attention)."""
    scores = _ops.matmul(q, _ops.swapaxes(k, -1, -2))
    if bias is not None:
        bshape = np.shape(value_of(bias))
        try:
            ok = np.broadcast_shapes(bshape, scores.shape) == tuple(scores.shape)
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"{name}: the attention mask of shape {tuple(bshape)} does not broadcast to the "
                f"attention scores' shape {tuple(scores.shape)} (..., L, S)"
            )
        scores = _ops.add(scores, bias)
    if safe and bias is not None:
        dead = (scores == -np.inf).all(dim=-1, keepdim=True)
        weights = _ops.where(dead, 0.0, _ops.softmax(_ops.where(dead, 0.0, scores), -1))
    else:
        weights = _ops.softmax(scores, -1)
    if dropout_p > 0:
        if STATE.guard is not None:
            raise RuntimeError(
                f"{name}: a tg.trace recording cannot draw the attention dropout mask (every "
                "replay would reuse the recorded one). Use dropout_p=0 (or model.eval()) inside "
                "the trace, or differentiate with tg.grad / backward, which draw at each call"
            )
        weights = dropout(weights, dropout_p)
    return _ops.matmul(weights, v), weights


def scaled_dot_product_attention(
    query: TensorLike,
    key: TensorLike,
    value: TensorLike,
    attn_mask: TensorLike | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(query key^T * scale + mask) value (PyTorch's ``F.scaled_dot_product_attention``):
    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); ``scale`` defaults
    to 1 / sqrt(E).  A bool ``attn_mask`` marks with True the positions that take part, a float
    one is added to the scores; ``is_causal`` masks the upper triangle; a query whose positions
    are all masked gets zeros, as PyTorch's.  ``dropout_p`` > 0 drops attention weights at random
    (always: there is no training flag), which a ``tg.trace`` recording refuses.
    ``enable_gqa`` repeats each key / value head (dim -3) for its group of query heads.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> q = tg.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> v = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> F.scaled_dot_product_attention(q, q, v, is_causal=True)
        tensor([[1.0000, 2.0000],
                [2.3395, 3.3395]])
    """
    name = "scaled_dot_product_attention"
    q, k, v = (_ops.tensor_of(t) for t in (query, key, value))
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise RuntimeError(
            f"{name}: expected query, key, and value to all be at least 2 dimensional, but got "
            f"query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead"
        )
    L, E = (int(s) for s in q.shape[-2:])
    S = int(k.shape[-2])
    if int(k.shape[-1]) != E or int(v.shape[-2]) != S:
        raise RuntimeError(
            f"{name}: expected query (..., L, E), key (..., S, E) and value (..., S, Ev), got "
            f"shapes {tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}"
        )
    _check_p(name, dropout_p)
    if is_causal and attn_mask is not None:
        raise ValueError(
            f"{name}: give either attn_mask or is_causal=True, not both (fold the causal mask "
            "into attn_mask)"
        )
    if enable_gqa:
        if min(q.ndim, k.ndim, v.ndim) < 3:
            raise RuntimeError(f"{name}: enable_gqa needs a heads axis (dim -3) in q, k and v")
        hq = int(q.shape[-3])
        kv = []
        for t in (k, v):
            hk = int(t.shape[-3])
            if hk == 0 or hq % hk:
                raise RuntimeError(
                    f"{name}: the number of heads in key and value ({hk}) must divide the "
                    f"number of heads in query ({hq}) with enable_gqa=True"
                )
            g = hq // hk
            if g > 1:
                lead, tail = tuple(t.shape[:-3]), tuple(t.shape[-2:])
                t = _ops.reshape(t, (*lead, hk, 1, *tail))
                t = _ops.reshape(_ops.broadcast_to(t, (*lead, hk, g, *tail)), (*lead, hq, *tail))
            kv.append(t)
        k, v = kv
    scale = 1.0 / math.sqrt(E) if scale is None else scalar_argument(scale, f"{name}: scale")
    bias = _float_mask(name, attn_mask, False)
    if is_causal:
        bias = np.where(np.tril(np.ones((L, S), dtype=bool)), 0.0, -np.inf)
    out, _ = _attend(_ops.mul(q, scale), k, v, bias, dropout_p, True, name)
    return out


def _mha_check(name, query, key, value, key_padding_mask, attn_mask, num_heads):
    nd = lambda t: np.ndim(value_of(t))  # noqa: E731
    if nd(query) == 3:
        if nd(key) != 3 or nd(value) != 3:
            raise RuntimeError(
                f"{name}: for batched (3-D) `query`, expected `key` and `value` to be 3-D but "
                f"found {nd(key)}-D and {nd(value)}-D tensors respectively"
            )
        if key_padding_mask is not None and nd(key_padding_mask) != 2:
            raise RuntimeError(
                f"{name}: for batched (3-D) `query`, expected `key_padding_mask` to be `None` "
                f"or 2-D but found {nd(key_padding_mask)}-D tensor instead"
            )
        batched = True
    elif nd(query) == 2:
        if nd(key) != 2 or nd(value) != 2:
            raise RuntimeError(
                f"{name}: for unbatched (2-D) `query`, expected `key` and `value` to be 2-D but "
                f"found {nd(key)}-D and {nd(value)}-D tensors respectively"
            )
        if key_padding_mask is not None and nd(key_padding_mask) != 1:
            raise RuntimeError(
                f"{name}: for unbatched (2-D) `query`, expected `key_padding_mask` to be `None` "
                f"or 1-D but found {nd(key_padding_mask)}-D tensor instead"
            )
        batched = False
    else:
        raise RuntimeError(
            f"{name}: query should be unbatched 2D or batched 3D tensor but received "
            f"{nd(query)}-D query tensor"
        )
    if attn_mask is not None and nd(attn_mask) not in (2, 3):
        raise RuntimeError(
            f"{name}: expected `attn_mask` to be `None`, 2-D or 3-D but found "
            f"{nd(attn_mask)}-D tensor instead"
        )
    return batched


def multi_head_attention_forward(
    query: TensorLike,
    key: TensorLike,
    value: TensorLike,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: TensorLike | None,
    in_proj_bias: TensorLike | None,
    bias_k: TensorLike | None,
    bias_v: TensorLike | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: TensorLike,
    out_proj_bias: TensorLike | None,
    training: bool = True,
    key_padding_mask: TensorLike | None = None,
    need_weights: bool = True,
    attn_mask: TensorLike | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: TensorLike | None = None,
    k_proj_weight: TensorLike | None = None,
    v_proj_weight: TensorLike | None = None,
    static_k: TensorLike | None = None,
    static_v: TensorLike | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention with explicit weights (PyTorch's ``F.multi_head_attention_forward``,
    which ``nn.MultiheadAttention`` calls): sequence-first inputs query (L, N, E), key / value
    (S, N, Ek / Ev) or unbatched (L, E); returns ``(output, weights)`` with the weights averaged
    over heads (N, L, S), per head (N, num_heads, L, S), or None when ``need_weights`` is False.
    Bool masks mark with True the positions that are masked out; float masks are added.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> eye3 = tg.tensor([[1.0, 0.0], [0.0, 1.0]] * 3)
        >>> out, w = F.multi_head_attention_forward(
        ...     x, x, x, 2, 1, eye3, None, None, None, False, 0.0, tg.eye(2), None)
        >>> w
        tensor([[0.6698, 0.3302],
                [0.3302, 0.6698]])
    """
    name = "multi_head_attention_forward"
    batched = _mha_check(name, query, key, value, key_padding_mask, attn_mask, num_heads)
    query, key, value = (_ops.tensor_of(t) for t in (query, key, value))
    if not batched:
        query, key, value = (_ops.expand_dims(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _ops.expand_dims(_ops.tensor_of(key_padding_mask), 0)
    tgt_len, bsz, embed_dim = (int(s) for s in query.shape)
    key_padding_mask = _float_mask(name, key_padding_mask, True)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            f"{name}: need attn_mask if specifying the is_causal hint; you may use "
            "nn.Transformer.generate_square_subsequent_mask to create this mask"
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _float_mask(name, attn_mask, True)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise RuntimeError(
            f"{name}: was expecting embedding dimension of {embed_dim_to_check}, but got "
            f"{embed_dim}"
        )
    head_dim = embed_dim // num_heads if num_heads > 0 else 0
    if num_heads <= 0 or head_dim * num_heads != embed_dim:
        raise RuntimeError(f"{name}: embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise RuntimeError(
                f"{name}: key's sequence and batch dims {tuple(key.shape[:2])} do not match "
                f"value's {tuple(value.shape[:2])}"
            )
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
        for wn, w in zip(("q_proj_weight", "k_proj_weight", "v_proj_weight"), ws, strict=True):
            if w is None:
                raise RuntimeError(f"{name}: use_separate_proj_weight is True but {wn} is None")
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise RuntimeError(
                f"{name}: key shape {tuple(key.shape)} does not match value shape "
                f"{tuple(value.shape)}"
            )
        if in_proj_weight is None:
            raise RuntimeError(
                f"{name}: use_separate_proj_weight is False but in_proj_weight is None"
            )
        w = _ops.tensor_of(in_proj_weight)
        ws = (w[:embed_dim], w[embed_dim : 2 * embed_dim], w[2 * embed_dim :])
    if in_proj_bias is None:
        bs = (None, None, None)
    else:
        b = _ops.tensor_of(in_proj_bias)
        bs = (b[:embed_dim], b[embed_dim : 2 * embed_dim], b[2 * embed_dim :])
    try:
        q, k, v = (
            _ops.linear(t, w, bb) for t, w, bb in zip((query, key, value), ws, bs, strict=True)
        )
    except (ValueError, RuntimeError) as e:
        raise RuntimeError(
            f"{name}: the input projections do not fit query {tuple(query.shape)}, key "
            f"{tuple(key.shape)}, value {tuple(value.shape)}: {e}"
        ) from e
    src_len = int(key.shape[0])
    if attn_mask is not None:
        ashape = tuple(np.shape(value_of(attn_mask)))
        want = (tgt_len, src_len) if len(ashape) == 2 else (bsz * num_heads, tgt_len, src_len)
        if ashape != want:
            raise RuntimeError(
                f"{name}: the shape of the {len(ashape)}D attn_mask is {ashape}, but should be "
                f"{want}"
            )
        if len(ashape) == 2:
            attn_mask = _ops.expand_dims(_ops.tensor_of(attn_mask), 0)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise RuntimeError(f"{name}: bias cannot be added to static key or value")
        k = _ops.concatenate([k, _ops.broadcast_to(bias_k, (1, bsz, embed_dim))], 0)
        v = _ops.concatenate([v, _ops.broadcast_to(bias_v, (1, bsz, embed_dim))], 0)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise RuntimeError(f"{name}: give both bias_k and bias_v, or neither")
    q = _ops.swapaxes(_ops.reshape(q, (tgt_len, bsz * num_heads, head_dim)), 0, 1)
    kv = []
    for t, static, sname in ((k, static_k, "static_k"), (v, static_v, "static_v")):
        if static is None:
            t = _ops.swapaxes(_ops.reshape(t, (int(t.shape[0]), bsz * num_heads, head_dim)), 0, 1)
        else:
            t = _ops.tensor_of(static)
            if t.ndim != 3 or int(t.shape[0]) != bsz * num_heads or int(t.shape[2]) != head_dim:
                raise RuntimeError(
                    f"{name}: expecting {sname} of shape ({bsz * num_heads}, S, {head_dim}), "
                    f"got {tuple(t.shape)}"
                )
        kv.append(t)
    k, v = kv
    if add_zero_attn:
        zeros = np.zeros((bsz * num_heads, 1, head_dim))
        k = _ops.concatenate([k, zeros], 1)
        v = _ops.concatenate([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = int(k.shape[1])
    if key_padding_mask is not None:
        kshape = tuple(np.shape(value_of(key_padding_mask)))
        if kshape != (bsz, src_len):
            raise RuntimeError(
                f"{name}: expected key_padding_mask of shape {(bsz, src_len)}, got {kshape}"
            )
        kpm = _ops.reshape(_ops.tensor_of(key_padding_mask), (bsz, 1, 1, src_len))
        kpm = _ops.reshape(
            _ops.broadcast_to(kpm, (bsz, num_heads, 1, src_len)), (bsz * num_heads, 1, src_len)
        )
        attn_mask = kpm if attn_mask is None else _ops.add(attn_mask, kpm)
    if not training:
        dropout_p = 0.0
    _check_p(name, dropout_p)
    if need_weights:
        q = _ops.mul(q, math.sqrt(1.0 / head_dim))
        out, weights = _attend(q, k, v, attn_mask, dropout_p, False, name)
    else:
        if is_causal:
            attn_mask = np.where(np.tril(np.ones((tgt_len, src_len), dtype=bool)), 0.0, -np.inf)
        q = _ops.mul(q, 1.0 / math.sqrt(head_dim))
        out, weights = _attend(q, k, v, attn_mask, dropout_p, True, name)
    out = _ops.reshape(_ops.swapaxes(out, 0, 1), (tgt_len * bsz, embed_dim))
    out = _ops.reshape(_ops.linear(out, out_proj_weight, out_proj_bias), (tgt_len, bsz, -1))
    if need_weights:
        weights = _ops.reshape(weights, (bsz, num_heads, tgt_len, src_len))
        if average_attn_weights:
            weights = _ops.mean(weights, 1)
        if not batched:
            weights = _ops.squeeze(weights, 0)
    else:
        weights = None
    if not batched:
        out = _ops.squeeze(out, 1)
    return out, weights
