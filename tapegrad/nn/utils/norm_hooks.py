"""The older weight and spectral normalisations, kept by forward pre-hooks (PyTorch's
``torch.nn.utils.weight_norm`` / ``remove_weight_norm`` / ``spectral_norm`` /
``remove_spectral_norm``), with PyTorch's parameter and buffer names: ``weight_g`` and
``weight_v``; ``weight_orig``, ``weight_u`` and ``weight_v``.  ``module.weight`` is recomputed
before every call of the module (a plain attribute, not a parameter).  New code should use
``tg.nn.utils.parametrizations``.

Examples:
    >>> import tapegrad as tg
    >>> m = tg.nn.utils.spectral_norm(tg.nn.Linear(3, 2))
    >>> list(m.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
"""

import warnings

import numpy as np

from ...autograd.engine import no_grad
from ...core import creation as _creation
from ...core import methods as _methods
from ...tensor_class import Tensor
from ..modules import Module, Parameter
from .parametrizations import (
    _as_matrix,
    _norms_over_others,
    _refuse_in_trace,
    _transposed_conv,
    _unit,
    _weight_norm,
)
from .parametrize import _unwatch_computed, _watch_computed

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


class _RecomputeHook:
    """A forward pre-hook that sets the plain attribute ``module.<name>`` from the module's
    own parameters before each call."""

    def __init__(self, name):
        self.name = name

    def part(self, module, suffix):
        return getattr(module, self.name + suffix)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.value(module, module.training))

    @classmethod
    def find(cls, module, name):
        """(key, hook) of the hook of this kind for ``name`` on ``module``, or None."""
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, cls) and hook.name == name:
                return key, hook
        return None

    @staticmethod
    def detach_from(module, key):
        del module._forward_pre_hooks[key]
        module.__dict__.get("_forward_pre_hooks_with_kwargs", {}).pop(key, None)


class _WeightNormHook(_RecomputeHook):
    def __init__(self, name, dim):
        super().__init__(name)
        self.dim = -1 if dim is None else dim

    def value(self, module, training=True):
        return _weight_norm(self.part(module, "_v"), self.part(module, "_g"), self.dim)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dimension but
    ``dim``; over all when ``dim`` is None) with the parameters ``<name>_g`` and ``<name>_v``,
    recomputed before each call: PyTorch's deprecated ``torch.nn.utils.weight_norm`` (it warns
    as PyTorch does; ``tg.nn.utils.parametrizations.weight_norm`` is its replacement).

    Examples:
        >>> import tapegrad as tg, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = tg.nn.utils.weight_norm(tg.nn.Linear(3, 2))
        >>> [n for n, _ in m.named_parameters()], m.weight_g.shape
        (['bias', 'weight_g', 'weight_v'], (2, 1))
    """
    warnings.warn(
        "`tg.nn.utils.weight_norm` is deprecated in favor of "
        "`tg.nn.utils.parametrizations.weight_norm` (as in PyTorch).",
        FutureWarning,
        stacklevel=2,
    )
    if _WeightNormHook.find(module, name) is not None:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    if module._parameters.get(name) is None:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter {name!r}")
    hook = _WeightNormHook(name, dim)
    weight = module._parameters.pop(name).detach()
    module.register_parameter(f"{name}_g", Parameter(_norms_over_others(weight, hook.dim)))
    module.register_parameter(f"{name}_v", Parameter(weight))
    setattr(module, name, hook.value(module))
    module.register_forward_pre_hook(hook)
    _watch_computed(module, name)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``weight_norm``: ``module.<name>`` becomes a parameter holding the current
    ``g * v / ||v||`` again (PyTorch's ``torch.nn.utils.remove_weight_norm``).

    Examples:
        >>> import tapegrad as tg, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = tg.nn.utils.weight_norm(tg.nn.Linear(3, 2))
        >>> m = tg.nn.utils.remove_weight_norm(m)
        >>> [n for n, _ in m.named_parameters()]
        ['bias', 'weight']
    """
    found = _WeightNormHook.find(module, name)
    if found is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    key, hook = found
    final = hook.value(module).detach()
    delattr(module, name)
    for suffix in ("_g", "_v"):
        del module._parameters[name + suffix]
    setattr(module, name, Parameter(final))
    _RecomputeHook.detach_from(module, key)
    _unwatch_computed(module, name)
    return module


class _SpectralNormHook(_RecomputeHook):
    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        super().__init__(name)
        self.n_power_iterations, self.dim, self.eps = n_power_iterations, dim, eps

    def _iterate(self, w, u, v):
        """The power-method rounds of PyTorch's hook version (v updated before u), writing
        the buffers ``u`` and ``v`` in place."""
        left, right = np.asarray(u._v), np.asarray(v._v)
        for _ in range(self.n_power_iterations):
            right = _unit(w.T @ left, self.eps)
            left = _unit(w @ right, self.eps)
        for buffer, values in ((u, left), (v, right)):
            _methods._set_value(buffer, np.array(values, dtype=buffer.dtype))

    def value(self, module, training=True):
        weight = self.part(module, "_orig")
        u, v = self.part(module, "_u"), self.part(module, "_v")
        matrix = _as_matrix(weight, self.dim % weight.ndim)
        if training:
            _refuse_in_trace("spectral_norm")
            self._iterate(np.asarray(matrix.detach()._v), u, v)
        sigma = ((matrix @ v.clone()) * u.clone()).sum()  # no gradient through u and v
        return weight / sigma


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its largest singular value (``W`` seen as a matrix,
    dimension ``dim`` first: 1 for transposed convolutions, else 0), estimated by
    ``n_power_iterations`` steps of the power method before each call in training mode (none in
    eval mode): PyTorch's ``torch.nn.utils.spectral_norm``, with the parameter ``<name>_orig``
    and the buffers ``<name>_u`` / ``<name>_v`` (random unit vectors at first).  Until the
    first call ``module.<name>`` is the unnormalised weight, as in PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.spectral_norm(tg.nn.Linear(3, 2))
        >>> [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]
        (['bias', 'weight_orig'], ['weight_u', 'weight_v'])
    """
    if _SpectralNormHook.find(module, name) is not None:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    hook = _SpectralNormHook(name, n_power_iterations, int(_transposed_conv(module)), eps)
    if dim is not None:
        hook.dim = dim
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter {name!r}")
    rows, cols = _as_matrix(np.asarray(weight._v), hook.dim % weight.ndim).shape
    draw = _creation.rng().standard_normal
    start = [_unit(draw(size), eps).astype(weight.dtype) for size in (rows, cols)]
    del module._parameters[name]
    module.register_parameter(f"{name}_orig", weight)
    setattr(module, name, weight.detach())  # the unnormalised weight until the first call
    for suffix, values in zip(("_u", "_v"), start, strict=True):
        module.register_buffer(name + suffix, Tensor(values))
    module.register_forward_pre_hook(hook)
    _watch_computed(module, name)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``spectral_norm``: ``module.<name>`` becomes a parameter holding the normalised
    weight (with the kept u and v, no power step), PyTorch's
    ``torch.nn.utils.remove_spectral_norm``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.remove_spectral_norm(tg.nn.utils.spectral_norm(tg.nn.Linear(3, 2)))
        >>> [n for n, _ in m.named_parameters()], list(m.named_buffers())
        (['bias', 'weight'], [])
    """
    found = _SpectralNormHook.find(module, name)
    if found is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    key, hook = found
    with no_grad():
        final = hook.value(module, training=False)
    delattr(module, name)
    for suffix in ("_u", "_v", "_orig"):
        delattr(module, name + suffix)
    module.register_parameter(name, Parameter(final.detach()))
    _RecomputeHook.detach_from(module, key)
    _unwatch_computed(module, name)
    return module
