"""Gradient clipping, parameter flattening, sequences, parametrizations and functional calls
(``tg.nn.utils``), PyTorch's names and meanings.

``clip_grad_norm_`` and ``clip_grad_value_`` rescale or clamp the ``.grad`` of parameters in
place (the gradient Tensors stay the same objects); ``parameters_to_vector`` /
``vector_to_parameters`` flatten parameters into one vector and copy one back.  The
submodules ``rnn`` (padding and packing sequences), ``parametrize`` and ``parametrizations``
(weight and spectral norms as parametrizations) and ``stateless`` (``functional_call``) have
PyTorch's names; ``weight_norm`` / ``spectral_norm`` are PyTorch's older hook-based versions.

Examples:
    >>> import tapegrad as tg
    >>> w = tg.tensor([3.0, 4.0], requires_grad=True)
    >>> w.grad = tg.tensor([3.0, 4.0])
    >>> tg.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(5.)
    >>> w.grad
    tensor([0.6000, 0.8000])
"""

import math
from collections.abc import Iterable

import numpy as np

from ...autograd.engine import no_grad
from ...core import functions as _ops
from ...core import methods as _methods
from ...tensor_class import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]


def _as_list(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _check_foreach(name, foreach):
    if foreach not in (None, True, False):
        raise TypeError(f"{name}: foreach must be None, True or False, got {foreach!r}")


def _vector_norm(arr, p):
    """``torch.linalg.vector_norm(arr, p)`` of a flat float64 array."""
    a = np.abs(np.ravel(np.asarray(arr, dtype=np.float64)))
    if p == math.inf:
        return float(a.max()) if a.size else 0.0
    if p == -math.inf:
        if not a.size:
            raise RuntimeError("linalg.vector_norm cannot compute the -inf norm on an empty tensor")
        return float(a.min())
    if p == 0:
        return float(np.count_nonzero(a))
    if p == 1:
        return float(a.sum())
    if p == 2:
        return float(np.sqrt(np.sum(a * a)))
    return float(np.sum(a**p) ** (1.0 / p))


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type`` norm of the norms of ``tensors`` (as if they were concatenated into one
    vector): PyTorch's ``torch.nn.utils.get_total_norm``.  ``foreach`` only chooses PyTorch's
    implementation; the result is the same.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.utils.get_total_norm([tg.tensor([3.0]), tg.tensor([-4.0])], norm_type="inf")
        tensor(4.)
    """
    _check_foreach("get_total_norm", foreach)
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return Tensor(np.array(0.0))
    norms = [_vector_norm(t._v, norm_type) for t in tensors]
    total = _vector_norm(np.array(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return Tensor(np.array(total))


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of ``parameters`` in place by ``min(max_norm / (total + 1e-6), 1)``,
    where ``total`` is the ``norm_type`` norm of all the gradients seen as one vector
    (``float("inf")`` for the largest magnitude), and return ``total`` as a Tensor.
    Parameters whose ``.grad`` is None are skipped; with ``error_if_nonfinite`` a nan or
    infinite total raises RuntimeError instead of scaling.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> w.grad = tg.tensor([1.0, -2.0])
        >>> tg.nn.utils.clip_grad_norm_(w, max_norm=1.0, norm_type=float("inf"))
        tensor(2.)
        >>> w.grad
        tensor([0.5000, -1.0000])
    """
    _check_foreach("clip_grad_norm_", foreach)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        coef = min(max_norm / (float(total._v) + 1e-6), 1.0)
        with no_grad():
            for g in grads:
                g.mul_(coef)
    return total


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
        >>> w.grad = tg.tensor([0.5, -2.0, 3.0])
        >>> tg.nn.utils.clip_grad_value_([w], clip_value=1.0)
        >>> w.grad
        tensor([0.5000, -1.0000, 1.0000])
    """
    _check_foreach("clip_grad_value_", foreach)
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable, like
    ``torch.cat([p.view(-1) for p in parameters])``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.utils.parameters_to_vector([tg.tensor([[1.0, 2.0]]), tg.tensor([3.0])])
        tensor([1., 2., 3.])
    """
    flat = [_ops.reshape(p, (-1,)) for p in _as_list(parameters)]
    if not flat:
        raise RuntimeError("parameters_to_vector: expected a non-empty list of Tensors")
    return _ops.concatenate(flat, 0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the vector ``vec`` into the parameters, in place (their
    Tensors stay the same objects; nothing is recorded for gradients).

    Examples:
        >>> import tapegrad as tg
        >>> a, b = tg.zeros(2, requires_grad=True), tg.zeros(1, requires_grad=True)
        >>> tg.nn.utils.vector_to_parameters(tg.tensor([1.0, 2.0, 3.0]), [a, b])
        >>> a, b
        (tensor([1., 2.], requires_grad=True), tensor([3.], requires_grad=True))
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tapegrad.Tensor, but got: {type(vec).__name__}")
    params = _as_list(parameters)
    flat = np.ravel(np.asarray(vec._v))
    if vec.ndim != 1:
        raise RuntimeError(f"vector_to_parameters: vec must be 1-D, got shape {tuple(vec.shape)}")
    sizes = [int(np.prod(p.shape)) for p in params]
    if sum(sizes) != flat.size:
        raise RuntimeError(
            f"vector_to_parameters: vec has {flat.size} elements, the parameters {sum(sizes)}"
        )
    start = 0
    for p, n in zip(params, sizes, strict=True):
        piece = np.array(flat[start : start + n], dtype=p.dtype).reshape(p.shape)
        _methods._set_value(p, float(piece) if piece.ndim == 0 else piece)
        start += n


from . import parametrizations, parametrize, rnn, stateless  # noqa: E402
from .norm_hooks import (  # noqa: E402
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,  # noqa: E402
)
