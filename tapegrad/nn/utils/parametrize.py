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


class _CacheScope:
    """How deep we are in ``with cached():`` blocks, and the values computed in them."""

    def __init__(self):
        self.depth = 0
        self.values = {}

    def enter(self):
        self.depth += 1

    def leave(self):
        self.depth -= 1
        if not self.depth:
            self.values = {}


_CACHE = _CacheScope()


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
    _CACHE.enter()
    try:
        yield
    finally:
        _CACHE.leave()


def _keep(owner, name, tensor):
    """Register ``tensor`` on ``owner`` as a parameter when it is one, else as a buffer."""
    register = owner.register_parameter if _is_param(tensor) else owner.register_buffer
    register(name, tensor)


def _overwrite(target, source):
    """Give ``target`` (same Tensor object) the values of ``source``, recording nothing."""
    raw = source._v if isinstance(source, Tensor) else source
    values = np.array(raw, dtype=target.dtype)
    _methods._set_value(target, values if values.ndim else float(values))


def _require_same_layout(before, after, labels=("unparametrized", "parametrized")):
    """Refuse (as PyTorch) a parametrization that changes the dtype or the shape."""
    for what, a, b in (
        ("dtype", before.dtype, after.dtype),
        ("shape", tuple(before.shape), tuple(after.shape)),
    ):
        if a != b:
            raise ValueError(
                f"Registering a parametrization may not change the {what} of the tensor, "
                f"unless `unsafe` flag is enabled.\n{labels[0]} {what}: {a}\n"
                f"{labels[1]} {what}: {b}"
            )


def _must_be_tensor(value, what):
    if isinstance(value, Tensor):
        return value
    raise ValueError(f"{what} must return a tensor. Got {type(value).__name__}.")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the original tensor(s)
    (``original``, or ``original0``, ``original1``, ... when the first parametrization's
    ``right_inverse`` returns a sequence): PyTorch's ``parametrize.ParametrizationList``,
    found at ``module.parametrizations[name]``.  Calling it computes the parametrized tensor;
    ``right_inverse(value)`` sets the originals so that it computes ``value``.
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if not len(modules):
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        object.__setattr__(self, "unsafe", unsafe)
        reference = Tensor(np.zeros(tuple(original.shape), original.dtype))
        with no_grad():
            stored = self._pull_back(original, optional=True)
        single = isinstance(stored, Tensor)
        object.__setattr__(self, "is_tensor", single)
        object.__setattr__(self, "ntensors", 1 if single else len(stored))
        if single:
            if stored.dtype != original.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {stored.dtype}"
                )
            if stored is not original:  # the original Tensor object is kept, as PyTorch's
                with no_grad():
                    _overwrite(original, stored)
            _keep(self, "original", original)
        else:
            trainable = _is_param(original)
            for k, piece in enumerate(stored):
                if not isinstance(piece, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {k} of the sequence with type "
                        f"{type(piece).__name__}."
                    )
                if trainable:
                    piece = Parameter(piece.detach(), original.requires_grad)
                _keep(self, f"original{k}", piece)
        if not unsafe:
            _require_same_layout(reference, _must_be_tensor(self(), "A parametrization"))

    def _pull_back(self, value, optional=False):
        """``value`` through every parametrization's ``right_inverse``, the last one first; one
        without it (or raising NotImplementedError, when ``optional``) is skipped only when
        ``optional``."""
        for step in reversed(list(self)):
            invert = getattr(step, "right_inverse", None)
            if invert is None:
                if optional:
                    continue
                raise RuntimeError(
                    f"parametrization {type(step).__name__} does not implement right_inverse."
                )
            try:
                value = invert(value)
            except NotImplementedError:
                if not optional:
                    raise
        return value

    def _originals(self) -> list:
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{k}") for k in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrization computes ``value`` (calls each
        parametrization's ``right_inverse``, last first, without recording gradients)."""
        with no_grad():
            value = self._pull_back(value)
            targets = self._originals()
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                (target,) = targets
                if value.dtype != target.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                        f"`original` has dtype {target.dtype}"
                    )
                if tuple(value.shape) != tuple(target.shape):
                    raise ValueError(
                        f"right_inverse: the tensor has shape {tuple(value.shape)} while "
                        f"`original` has shape {tuple(target.shape)}"
                    )
                value = [value]
            elif len(value) != len(targets):
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors of length "
                    f"{len(targets)}. Got a sequence of length {len(value)}."
                )
            else:
                for k, (target, new) in enumerate(zip(targets, value, strict=True)):
                    layout = (getattr(new, "dtype", None), tuple(getattr(new, "shape", ())))
                    if layout != (target.dtype, tuple(target.shape)):
                        raise ValueError(
                            f"ParametrizationList.right_inverse: tensor {k} returned by "
                            f"`right_inverse` has dtype {layout[0]} and shape {layout[1]} while "
                            f"`original{k}` has dtype {target.dtype} and shape "
                            f"{tuple(target.shape)} (the originals are updated in place: "
                            "return tensors of their dtypes and shapes)"
                        )
            for target, new in zip(targets, value, strict=True):
                _overwrite(target, new)

    def forward(self) -> Tensor:
        first, *others = list(self)
        out = first(*self._originals())
        for step in others:
            out = step(out)
        return out


# ---- the module side: its class, its attribute, its parameter table ------------------------------


class _TableWithComputed(OrderedDict):
    """The parameter (or buffer) table of a parametrized module: a parametrized name is not in
    it (not in ``named_parameters`` or the state dict), but ``table[name]``, which the layers'
    ``forward`` use, gives the parametrized value, as ``module.<name>`` does.  ``owner`` is the
    module."""

    def __missing__(self, key):
        module = self.__dict__.get("owner")
        if module is not None and (
            is_parametrized(module, key) or key in module.__dict__.get("_hook_computed", ())
        ):
            return getattr(module, key)
        raise KeyError(key)


def _watch_computed(module, hooked=None):
    """Give ``module`` parameter and buffer tables that answer for its parametrized names (and
    for ``hooked``, a name a weight or spectral norm hook keeps as a plain attribute)."""
    if hooked is not None:
        module.__dict__.setdefault("_hook_computed", set()).add(hooked)
    for slot in ("_parameters", "_buffers"):
        table = module.__dict__[slot]
        if type(table) is not _TableWithComputed:
            table = _TableWithComputed(table)
            table.owner = module
            object.__setattr__(module, slot, table)


def _unwatch_computed(module, hooked=None):
    """Undo ``_watch_computed`` once nothing computed is left on ``module``."""
    names = module.__dict__.get("_hook_computed", set())
    names.discard(hooked)
    if names:
        return
    module.__dict__.pop("_hook_computed", None)
    if is_parametrized(module):
        return
    for slot in ("_parameters", "_buffers"):
        object.__setattr__(module, slot, OrderedDict(module.__dict__[slot]))


class _Parametrized:
    """The class attribute standing for one parametrized name: reading computes the value (or
    gives the cached / ``functional_call`` one), assigning calls ``right_inverse``."""

    def __init__(self, name):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        key = (id(module), self.name)
        if key in _overrides:
            return _overrides[key]
        compute = module.parametrizations[self.name]
        if not _CACHE.depth:
            return compute()
        if key not in _CACHE.values:
            _CACHE.values[key] = compute()
        return _CACHE.values[key]

    def __set__(self, module, value):
        module.parametrizations[self.name].right_inverse(value)


def _no_pickle(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict() "
        "(pickle the state dict, or remove the parametrizations first)"
    )


def _assign(self, name, value):
    if is_parametrized(self, name) and isinstance(type(self).__dict__.get(name), _Parametrized):
        if _is_param(value):  # PyTorch's refusal: it would hide the parametrization
            raise KeyError(f"attribute '{name}' already exists")
        object.__setattr__(self, name, value)  # the descriptor: right_inverse
    else:
        Module.__setattr__(self, name, value)


def _copy(self, memo):
    """A deep copy with a class of its own (PyTorch's copies share the class, so removing a
    parametrization from one removes the attribute from the other)."""
    twin = Module.__deepcopy__(self, memo)
    object.__setattr__(twin, "__class__", _subclass_for(type(self)._unparametrized_class))
    for name in twin.parametrizations:
        setattr(type(twin), name, _Parametrized(name))
    return twin


def _subclass_for(base):
    """A fresh ``Parametrized<Base>`` class (one per module: the attributes go on it)."""
    namespace = {
        "_unparametrized_class": base,
        "__getstate__": _no_pickle,
        "__setattr__": _assign,
        "__deepcopy__": _copy,
    }
    return type("Parametrized" + base.__name__, (base,), namespace)


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
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            image = _must_be_tensor(parametrization(current), "A parametrization")
            _require_same_layout(current, image)
            invert = getattr(parametrization, "right_inverse", None)
            if invert is not None:
                back = invert(image)
                _must_be_tensor(back, "parametrization.right_inverse")
                _require_same_layout(current, back, ("parametrization", "right_inverse"))
        chain.append(parametrization)
        object.__setattr__(chain, "unsafe", chain.unsafe or unsafe)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not isinstance(module._modules.get("parametrizations"), ModuleDict):  # the first one
        object.__setattr__(module, "__class__", _subclass_for(type(module)))
        _watch_computed(module)
        module.add_module("parametrizations", ModuleDict())
    setattr(type(module), tensor_name, _Parametrized(tensor_name))
    module.parametrizations[tensor_name] = chain
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
    table = module._modules.get("parametrizations")
    if not isinstance(table, ModuleDict):
        return False
    return bool(len(table)) if tensor_name is None else tensor_name in table


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before it was parametrized (its class when it is not).

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 2))
        >>> tg.nn.utils.parametrize.type_before_parametrizations(m).__name__
        'Linear'
    """
    cls = type(module)
    return cls.__dict__.get("_unparametrized_class", cls)


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
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        kept = chain.original
        if leave_parametrized:
            with no_grad():
                _overwrite(kept, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        kept = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
            "parametrized in terms of a sequence of tensors."
        )
    cls, chains = type(module), module.parametrizations
    delattr(cls, tensor_name)
    del chains[tensor_name]
    _keep(module, tensor_name, kept)
    if not len(chains):  # nothing parametrized is left: the module's own class again
        del module._modules["parametrizations"]
        object.__setattr__(module, "__class__", cls._unparametrized_class)
        _unwatch_computed(module)
    return module
