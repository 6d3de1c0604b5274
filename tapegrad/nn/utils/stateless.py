"""Call a module with other parameters and buffers (``tg.nn.utils.stateless``), PyTorch's
``torch.func.functional_call`` (also ``torch.nn.utils.stateless.functional_call``).

Examples:
    >>> import tapegrad as tg
    >>> lin = tg.nn.Linear(2, 1)
    >>> params = {"weight": tg.tensor([[1.0, 2.0]]), "bias": tg.tensor([0.5])}
    >>> tg.nn.utils.stateless.functional_call(lin, params, (tg.tensor([1.0, 1.0]),))
    tensor([3.5000])
"""

from collections.abc import Sequence
from typing import Any

from ...core import functions as _ops
from ...tensor_class import Tensor
from ..modules import Module
from . import parametrize as _parametrize

__all__ = ["functional_call"]


def _merge(dicts):
    if isinstance(dicts, dict):
        return dict(dicts)
    if isinstance(dicts, Sequence) and not isinstance(dicts, str):
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts: dict = {}
        for d in dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        return {k: v for d in dicts for k, v in d.items()}
    raise ValueError(
        "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
        f"{type(dicts)}"
    )


def _owner(module, key):
    """(submodule, attribute name) that the dotted ``key`` names."""
    *path, attr = key.split(".")
    m = module
    for part in path:
        child = m._modules.get(part) if isinstance(m, Module) else None
        if child is None:
            raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
        m = child
    return m, attr


def _tied_names(module):
    """Groups of names (parameters and buffers) that are the same Tensor."""
    groups: dict = {}
    for table in ("_parameters", "_buffers"):
        for name, t in module._named_tensors(table, "", True, remove_duplicate=False):
            groups.setdefault(id(t), []).append(name)
    return [names for names in groups.values() if len(names) > 1], groups


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` computed with the tensors of ``parameter_and_buffer_dicts``
    (one dict, or a sequence of dicts with distinct keys, of dotted names to Tensors) in place
    of the module's parameters and buffers of those names; the module is unchanged afterwards.
    PyTorch's ``torch.func.functional_call``: gradients flow to the given tensors (so
    ``tg.grad`` / ``tg.jacrev`` of a function of the parameters work); with ``tie_weights`` a
    value given for one name of tied tensors is used for all of them; with ``strict`` the keys
    must be exactly the module's parameter and buffer names.  ``args`` that is not a tuple is
    the single positional argument.  A parametrized name (``"weight"`` of a module with a
    parametrization) replaces the parametrized value.

    Examples:
        >>> import tapegrad as tg
        >>> lin = tg.nn.Linear(2, 1, bias=False)
        >>> x = tg.tensor([[1.0, 2.0]])
        >>> loss = lambda w: tg.nn.utils.stateless.functional_call(lin, {"weight": w}, x).sum()
        >>> tg.grad(loss)(tg.zeros(1, 2))
        array([[1., 2.]])
    """
    values = _merge(parameter_and_buffer_dicts)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    ties, groups = _tied_names(module)
    if tie_weights:
        for names in ties:
            given = [n for n in names if n in values]
            if len({id(values[n]) for n in given}) > 1:
                raise ValueError(
                    f"functional_call got multiple values for keys {sorted(given)}, which are "
                    "tied. Consider using tie_weights=False"
                )
            if given:
                for n in names:
                    values.setdefault(n, values[given[0]])
    if strict:
        own = [n for names in groups.values() for n in names]
        missing = [n for n in own if n not in values]
        unexpected = [k for k in values if k not in own]
        if missing or unexpected:
            lines = []
            if unexpected:
                lines.append("Unexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
            if missing:
                lines.append("Missing key(s): " + ", ".join(map(repr, sorted(missing))) + ".")
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(lines)
            )
    swaps = []
    for key, value in values.items():
        m, attr = _owner(module, key)
        value = value if isinstance(value, Tensor) else _ops.tensor_of(value)
        swaps.append((m, attr, value))
    undo = []  # (table, key, whether it held the key, the old value)
    try:
        for m, attr, value in swaps:
            if attr in m._parameters:
                table, key = m._parameters, attr
            elif attr in m._buffers:
                table, key = m._buffers, attr
            elif _parametrize.is_parametrized(m, attr):
                table, key = _parametrize._overrides, (id(m), attr)
            else:
                table, key = m.__dict__, attr
            undo.append((table, key, key in table, table.get(key)))
            table[key] = value
        return module(*args, **kwargs)
    finally:
        for table, key, had, old in reversed(undo):
            if had:
                table[key] = old
            else:
                table.pop(key, None)
