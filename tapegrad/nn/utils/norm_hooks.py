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
from .parametrizations import _matrix, _norm_except_dim, _normalize, _transposed_conv, _weight_norm
from .parametrize import _install_table, _uninstall_table

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


def _hooks_of(module, kind, name):
    return [
        (k, hook)
        for k, hook in module._forward_pre_hooks.items()
        if isinstance(hook, kind) and hook.name == name
    ]


def _remove_hook(module, key):
    del module._forward_pre_hooks[key]
    module.__dict__.get("_forward_pre_hooks_with_kwargs", {}).pop(key, None)


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


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
    if _hooks_of(module, _WeightNormHook, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    if name not in module._parameters or module._parameters[name] is None:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter {name!r}")
    fn = _WeightNormHook(name, dim)
    weight = module._parameters.pop(name)
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    _install_table(module, name)
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
    found = _hooks_of(module, _WeightNormHook, name)
    if not found:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    key, fn = found[0]
    weight = fn.compute_weight(module)
    delattr(module, name)
    del module._parameters[name + "_g"]
    del module._parameters[name + "_v"]
    setattr(module, name, Parameter(weight.detach()))
    _remove_hook(module, key)
    _uninstall_table(module, name)
    return module


class _SpectralNormHook:
    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.n_power_iterations = n_power_iterations
        self.dim = dim
        self.eps = eps

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = _matrix(weight, self.dim % weight.ndim)
        if do_power_iteration:
            w = np.asarray(weight_mat.detach()._v)
            un, vn = np.asarray(u._v), np.asarray(v._v)
            for _ in range(self.n_power_iterations):
                vn = _normalize(w.T @ un, self.eps)
                un = _normalize(w @ vn, self.eps)
            _methods._set_value(u, np.array(un, dtype=u.dtype))
            _methods._set_value(v, np.array(vn, dtype=v.dtype))
        sigma = (u.clone() * (weight_mat @ v.clone())).sum()
        return weight / sigma

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))


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
    if _hooks_of(module, _SpectralNormHook, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    fn = _SpectralNormHook(name, n_power_iterations, dim, eps)
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter {name!r}")
    with no_grad():
        w = _matrix(np.asarray(weight._v), dim % weight.ndim)
        rng = _creation.rng()
        u = _normalize(rng.standard_normal(w.shape[0]), eps).astype(weight.dtype)
        v = _normalize(rng.standard_normal(w.shape[1]), eps).astype(weight.dtype)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", Tensor(u))
    module.register_buffer(name + "_v", Tensor(v))
    module.register_forward_pre_hook(fn)
    _install_table(module, name)
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
    found = _hooks_of(module, _SpectralNormHook, name)
    if not found:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    key, fn = found[0]
    with no_grad():
        weight = fn.compute_weight(module, do_power_iteration=False)
    delattr(module, name)
    for suffix in ("_u", "_v", "_orig"):
        delattr(module, name + suffix)
    module.register_parameter(name, Parameter(weight.detach()))
    _remove_hook(module, key)
    _uninstall_table(module, name)
    return module
