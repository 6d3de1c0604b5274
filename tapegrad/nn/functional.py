"""Activations and losses (``tg.nn.functional``), composed from tapegrad's differentiable ops.

Being compositions, they get their backward, higher derivatives and trace replay from the ops.
Arguments follow PyTorch (``dim=``, ``keepdim=``, ``reduction=``); ``axis=`` is accepted too.
Losses are numerically stable: the softmax family shifts by the row maximum, and
``binary_cross_entropy`` clamps its logs at -100 like PyTorch (where a log is clamped its
gradient is zero).
"""

import numpy as np

from ..core import functions as _ops
from ..core.tensor import value_of
from ..tensor_class import Tensor

__all__ = [
    "relu",
    "sigmoid",
    "tanh",
    "linear",
    "leaky_relu",
    "softmax",
    "log_softmax",
    "logsumexp",
    "cross_entropy",
    "mse_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
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


def softmax(input, dim=None, *, axis=None):
    """Softmax along ``dim`` (default: the last axis).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> y = F.softmax(x); y
        tensor([0.2500, 0.2500, 0.2500, 0.2500], grad_fn=<DivBackward0>)
        >>> y[0].backward(); x.grad             # s0 (1 - s0), -s0 sj
        tensor([0.1875, -0.0625, -0.0625, -0.0625])
    """
    return _ops.softmax(input, _dim(dim, axis, -1))


def log_softmax(input, dim=None, *, axis=None):
    """Log-softmax along ``dim`` (default: the last axis), computed as x - logsumexp(x).

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> y = F.log_softmax(x); y             # -log 4
        tensor([-1.3863, -1.3863, -1.3863, -1.3863], grad_fn=<SubBackward0>)
        >>> y[0].backward(); x.grad             # 1 - s0, -sj
        tensor([0.7500, -0.2500, -0.2500, -0.2500])
    """
    return _ops.log_softmax(input, _dim(dim, axis, -1))


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


def _class_targets(target, n, classes):
    t = np.asarray(target._v if isinstance(target, Tensor) else target)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy: target must hold integer class indices, got dtype "
            f"{t.dtype} (class probabilities are not supported)"
        )
    if t.shape != (n,):
        raise ValueError(
            f"cross_entropy: expected target of shape ({n},) for input of {n} rows, got {t.shape}"
        )
    if t.size and (t.min() < 0 or t.max() >= classes):
        bad = t[(t < 0) | (t >= classes)][0]
        raise IndexError(f"cross_entropy: target {bad} is out of bounds for {classes} classes")
    return t


def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy of logits ``input`` (N, C) (or (C,)) against integer classes
    ``target`` (N,) (or a scalar).

    Per row: logsumexp(x) - x[target], computed on x - max(x): one shifted copy, its
    logsumexp, and one gather of the N target entries.

    Examples:
        >>> import tapegrad as tg
        >>> import tapegrad.nn.functional as F
        >>> x = tg.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
        >>> loss = F.cross_entropy(x, 2); loss  # log 4
        tensor(1.3863, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # softmax(x) - onehot(2)
        tensor([0.2500, 0.2500, -0.7500, 0.2500])
    """
    x = _ops.tensor_of(input)
    if x.ndim == 1:
        t = np.asarray(target._v if isinstance(target, Tensor) else target).reshape(1)
        return _reduce(
            _ops.reshape(cross_entropy(_ops.reshape(x, (1, -1)), t, "none"), ()), reduction
        )
    if x.ndim != 2:
        raise ValueError(f"cross_entropy: expected input of shape (N, C) or (C,), got {x.shape}")
    n, classes = x.shape
    t = _class_targets(target, n, classes)
    s = _ops.sub(x, _ops.stable_shift(x, (1,)))
    lse = _ops.log(_ops.sum(_ops.exp(s), 1))
    return _reduce(_ops.sub(lse, _ops.getitem(s, (np.arange(n), t))), reduction)


def mse_loss(input, target, reduction="mean"):
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
    d = _ops.sub(input, target)
    return _reduce(_ops.mul(d, d), reduction)


def _clamped_log(p, positive):
    """log(p) clamped below at -100; entries where ``positive`` is False give -100."""
    if not positive.all():
        p = _ops.where(positive, p, 1e-300)
    return _ops.clip(_ops.log(p), -100.0)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
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
    p = _ops.tensor_of(input)
    pv = np.asarray(p._v)
    # comparisons of the Tensor, not of its value: a trace guards them, so a replay whose
    # probabilities leave (0, 1) or reach an end is re-recorded, never computed with stale masks
    positive = np.asarray(value_of(p > 0.0)).astype(bool)
    below_one = np.asarray(value_of(p < 1.0)).astype(bool)
    if np.any(~positive & (pv != 0.0)) or np.any(~below_one & (pv != 1.0)):
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    tv = target if isinstance(target, Tensor) else np.asarray(target, dtype=np.float64)
    if np.shape(tv._v if isinstance(tv, Tensor) else tv) != pv.shape:
        raise ValueError(
            f"binary_cross_entropy: target shape "
            f"{np.shape(tv._v if isinstance(tv, Tensor) else tv)} differs from "
            f"input shape {pv.shape}"
        )
    log_p = _clamped_log(p, positive)
    log_q = _clamped_log(_ops.sub(1.0, p), below_one)
    # -(t log p + (1 - t) log q) = -(log q + t (log p - log q))
    losses = _ops.neg(_ops.add(log_q, _ops.mul(tv, _ops.sub(log_p, log_q))))
    if weight is not None:
        losses = _ops.mul(losses, weight)
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    """Sigmoid + binary cross-entropy on logits, stably: softplus(x) - x t, with softplus(x)
    = logaddexp(0, x), whose derivative is sigmoid(x) everywhere (the form max(x, 0) - x t +
    log1p(exp(-|x|)) has the same value but loses the derivative at x = 0, where models that
    start from zero weights begin).

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
    x = _ops.tensor_of(input)
    losses = _ops.sub(_ops.logaddexp(0.0, x), _ops.mul(x, target))
    return _reduce(losses, reduction)
