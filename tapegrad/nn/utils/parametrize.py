"""Parametrizations of a module's tensors (``tg.nn.utils.parametrize``), PyTorch's names,
meanings, parameter names and errors.

``register_parametrization(module, "weight", P())`` makes ``module.weight`` the value of
``P()(original)`` computed on every access, where ``original`` is the tensor ``weight`` was (the
same Tensor object, now ``module.parametrizations.weight.original``; ``original0``,
``original1``, ... when ``P.right_inverse`` returns several tensors).  As in PyTorch the module
becomes an instance of a new class ``Parametrized<Class>`` holding a property per parametrized
name; assigning to the name calls the parametrizations' ``right_inverse``.  Gradients reach the
originals through the parametrizations' Tensor operations (every order).

Examples:
    >>> import tapegrad as tg
    >>> class Symmetric(tg.nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).T
    >>> m = tg.nn.Linear(3, 3)
    >>> _ = tg.nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
    >>> bool((m.weight == m.weight.T).all()), type(m).__name__
    (True, 'ParametrizedLinear')
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original']
"""

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ...autograd.engine import no_grad
from ...core import methods as _methods
from ...tensor_class import Tensor
from ..modules import Module, ModuleDict, ModuleList, Parameter, _is_param

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict = {}
# values given to functional_call for a parametrized name: (id(module), name) -> Tensor
_overrides: dict = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside ``with cached():`` each parametrized tensor is computed once, on its first access,
    and the same Tensor is returned afterwards (PyTorch's ``parametrize.cached``); the cache is
    emptied on leaving the outermost ``with``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 2))
        >>> with tg.nn.utils.parametrize.cached():
        ...     same = m.weight is m.weight
        >>> same, m.weight is m.weight
        (True, False)
    """
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, value):
    if _is_param(value):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(tensor, value):
    """Overwrite ``tensor``'s values with ``value``'s (the Tensor object stays), PyTorch's
    ``set_`` under ``no_grad``."""
    v = np.array(value._v if isinstance(value, Tensor) else value, dtype=tensor.dtype)
    _methods._set_value(tensor, float(v) if v.ndim == 0 else v)


def _check_same(what, a, b):
    if a.dtype != b.dtype:
        raise ValueError(
            f"Registering a parametrization may not change the dtype of the tensor, unless "
            f"`unsafe` flag is enabled.\n{what[0]} dtype: {a.dtype}\n{what[1]} dtype: {b.dtype}"
        )
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"Registering a parametrization may not change the shape of the tensor, unless "
            f"`unsafe` flag is enabled.\n{what[0]} shape: {tuple(a.shape)}\n"
            f"{what[1]} shape: {tuple(b.shape)}"
        )


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the original tensor(s)
    (``original``, or ``original0``, ``original1``, ... when the first parametrization's
    ``right_inverse`` returns a sequence): PyTorch's ``parametrize.ParametrizationList``,
    found at ``module.parametrizations[name]``.  Calling it computes the parametrized tensor;
    ``right_inverse(value)`` sets the originals so that it computes ``value``.
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        object.__setattr__(self, "unsafe", unsafe)
        shape, dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # (as PyTorch: the original is kept as it is)
        object.__setattr__(self, "is_tensor", isinstance(new, Tensor))
        object.__setattr__(self, "ntensors", 1 if self.is_tensor else len(new))
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: "
                    f"{new.dtype}"
                )
            if new is not original:
                with no_grad():
                    _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(originali).__name__}."
                    )
                if _is_param(original):
                    originali = Parameter(originali.detach(), original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            _check_same(("unparametrized", "parametrized"), Tensor(np.zeros(shape, dtype)), z)

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrization computes ``value`` (calls each
        parametrization's ``right_inverse``, last first, without recording gradients)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                        f"`original` has dtype {self.original.dtype}"
                    )
                if tuple(value.shape) != tuple(self.original.shape):
                    raise ValueError(
                        f"right_inverse: the tensor has shape {tuple(value.shape)} while "
                        f"`original` has shape {tuple(self.original.shape)}"
                    )
                _set_in_place(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    _set_in_place(getattr(self, f"original{i}"), tensor)

    def forward(self) -> Tensor:
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in mods[1:]:
            x = module(x)
        return x


class _ParametrizedTable(OrderedDict):
    """The parameter (or buffer) table of a parametrized module: a parametrized name is not in
    it (not in ``named_parameters`` or the state dict), but ``table[name]``, which the layers'
    ``forward`` use, gives the parametrized value, as ``module.<name>`` does."""

    def __missing__(self, key):
        owner = self.__dict__.get("owner")
        if owner is not None and (
            is_parametrized(owner, key) or key in owner.__dict__.get("_computed_parameters", ())
        ):
            return getattr(owner, key)
        raise KeyError(key)


def _install_table(module, computed=None):
    """Give ``module`` a parameter table that answers for its parametrized names (and for
    ``computed``, a name kept as a plain attribute by a weight or spectral norm hook)."""
    if computed is not None:
        module.__dict__.setdefault("_computed_parameters", set()).add(computed)
    for name in ("_parameters", "_buffers"):
        if not isinstance(module.__dict__[name], _ParametrizedTable):
            table = _ParametrizedTable(module.__dict__[name])
            table.owner = module
            object.__setattr__(module, name, table)


def _uninstall_table(module, computed=None):
    """Undo ``_install_table`` once nothing computed is left."""
    names = module.__dict__.get("_computed_parameters", set())
    names.discard(computed)
    if not names:
        module.__dict__.pop("_computed_parameters", None)
    if not names and not is_parametrized(module):
        for name in ("_parameters", "_buffers"):
            object.__setattr__(module, name, OrderedDict(module.__dict__[name]))


def _getstate(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict() "
        "(pickle the state dict, or remove the parametrizations first)"
    )


def _parametrized_setattr(self, name, value):
    prop = getattr(type(self), name, None)
    if isinstance(prop, property) and is_parametrized(self, name):
        if _is_param(value):
            raise KeyError(f"attribute '{name}' already exists")
        object.__setattr__(self, name, value)  # the property's setter: right_inverse
        return
    Module.__setattr__(self, name, value)


def _parametrized_deepcopy(self, memo):
    """A deep copy with a class of its own (PyTorch's copies share the class, so removing a
    parametrization from one removes the property from the other)."""
    new = Module.__deepcopy__(self, memo)
    object.__setattr__(new, "__class__", _new_class(type(self).__bases__[0]))
    for name in new.parametrizations:
        _inject_property(new, name)
    return new


def _new_class(cls):
    return type(
        f"Parametrized{cls.__name__}",
        (cls,),
        {
            "__getstate__": _getstate,
            "__setattr__": _parametrized_setattr,
            "__deepcopy__": _parametrized_deepcopy,
        },
    )


def _inject_new_class(module):
    object.__setattr__(module, "__class__", _new_class(module.__class__))
    _install_table(module)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        key = (id(self), tensor_name)
        if key in _overrides:
            return _overrides[key]
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Parametrize ``module.<tensor_name>`` (a parameter, a buffer, or an already parametrized
    name, whose parametrizations are chained) by the module ``parametrization``: PyTorch's
    ``torch.nn.utils.parametrize.register_parametrization``.  Unless ``unsafe``, the
    parametrization may change neither the shape nor the dtype.  Returns ``module``.

    Examples:
        >>> import tapegrad as tg
        >>> class Positive(tg.nn.Module):
        ...     def forward(self, X):
        ...         return X.exp()
        ...     def right_inverse(self, Y):
        ...         return Y.log()
        >>> m = tg.nn.Linear(2, 1)
        >>> _ = tg.nn.init.ones_(m.bias)
        >>> _ = tg.nn.utils.parametrize.register_parametrization(m, "bias", Positive())
        >>> m.bias = tg.tensor([2.0]); m.bias, m.parametrizations.bias.original
        (tensor([2.], grad_fn=<ExpBackward0>), tensor([0.6931], requires_grad=True))
    """
    if not isinstance(parametrization, Module):
        raise TypeError(
            "register_parametrization: the parametrization must be a tg.nn.Module, got "
            f"{type(parametrization).__name__}"
        )
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            _check_same(("unparametrized", "parametrized"), y, x)
            if hasattr(parametrization, "right_inverse"):
                z = parametrization.right_inverse(x)
                if not isinstance(z, Tensor):
                    raise ValueError(
                        f"parametrization.right_inverse must return a tensor. Got: "
                        f"{type(z).__name__}"
                    )
                _check_same(("parametrization", "right_inverse"), y, z)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        object.__setattr__(plist, "unsafe", plist.unsafe or unsafe)
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name`` when given), PyTorch's
    ``parametrize.is_parametrized``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 2))
        >>> P = tg.nn.utils.parametrize
        >>> P.is_parametrized(m), P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias")
        (True, True, False)
    """
    parametrizations = module._modules.get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before it was parametrized (its class when it is not).

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 2))
        >>> tg.nn.utils.parametrize.type_before_parametrizations(m).__name__
        'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Remove the parametrizations of ``module.<tensor_name>``: it becomes a parameter (or
    buffer) again, holding the parametrized value (``leave_parametrized=True``, the original
    Tensor object overwritten when there is one original) or the original's
    (``leave_parametrized=False``); PyTorch's ``parametrize.remove_parametrizations``.  The
    module gets its class back when nothing else is parametrized.  Returns ``module``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 2))
        >>> m = tg.nn.utils.parametrize.remove_parametrizations(m, "weight")
        >>> type(m).__name__, [n for n, _ in m.named_parameters()]
        ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_in_place(original, t)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), True) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", module.__class__.__bases__[0])
        _uninstall_table(module)
    return module
