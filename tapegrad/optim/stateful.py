"""Optimizers (``tg.optim``): SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam,
Adadelta, ASGD and LBFGS with PyTorch's update rules (and its argument names, ``maximize=``
included), and PyTorch's ``Optimizer`` API around them: ``state`` keyed by parameter,
``add_param_group``, ``zero_grad``, step and state-dict hooks, ``step(closure)``.

Each optimizer declares one parameter's update (``_update``); the shared ``Optimizer.step``
evaluates the closure, reads every group's hyper-parameters as numbers (so edits of
``param_groups`` take effect at the next step), applies ``maximize`` and the weight decay, runs
the update on every parameter that has a gradient, and marks it changed; ``_state_of`` makes a
parameter's state on its first step.

Updates are computed in NumPy on the parameters' own arrays, in place, and each updated
parameter is marked changed (version bump, tape row forgotten) exactly as ``with tg.no_grad():
p -= ...`` would, so a graph that saved the old value refuses to backward.
Parameters whose ``.grad`` is None are skipped (frozen ``nn.Parameter``s may be given, as in
PyTorch's ``model.parameters()`` after ``requires_grad_(False)``).  PyTorch's ``foreach=`` is
accepted and has no effect (its kernels compute the same update rule); ``fused=``,
``capturable=`` and ``differentiable=`` (where PyTorch takes them) are accepted as False or
None and refused as True (TypeError naming the option): tapegrad has no fused kernels, no CUDA
graphs, and its steps are not recorded by autograd.  A hyper-parameter may be a
one-element Tensor (an lr, betas), kept in the group as PyTorch keeps it and read at every step,
so changing it in place (or a scheduler filling it) changes the next steps.  ``params`` is an
iterable of tensors or of dicts (parameter groups) with a ``"params"`` entry and per-group
overrides, as in PyTorch.

``state_dict()`` / ``load_state_dict()`` follow PyTorch's structure: ``{"state": {index: {...}},
"param_groups": [{hyper-parameters..., "params": [index, ...]}]}``, where a parameter's index
is its position counting through the groups in order, and the per-parameter state holds NumPy
copies of the buffers (SGD's ``momentum_buffer``; Adam's ``step``, ``exp_avg``,
``exp_avg_sq`` and with amsgrad ``max_exp_avg_sq``; RMSprop's ``step``, ``square_avg``,
``momentum_buffer``, ``grad_avg``; Adagrad's ``step``, ``sum``; Adamax's ``step``,
``exp_avg``, ``exp_inf``; NAdam's ``step``, ``mu_product``, ``exp_avg``, ``exp_avg_sq``;
RAdam's ``step``, ``exp_avg``, ``exp_avg_sq``; Adadelta's ``step``, ``square_avg``,
``acc_delta``; ASGD's ``step``, ``eta``, ``mu``, ``ax``), scalars as Python numbers.

Examples:
    >>> import tapegrad as tg
    >>> model = tg.nn.Linear(2, 1)
    >>> opt = tg.optim.Adam([{"params": [model.weight]},
    ...                      {"params": [model.bias], "lr": 0.01}], lr=0.1)
    >>> [group["lr"] for group in opt.param_groups]
    [0.1, 0.01]
"""

import copy
import functools
import itertools
import math
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable

import numpy as np

from ..autograd.engine import enable_grad
from ..core import creation as _creation
from ..core import methods as _methods
from ..tensor_class import Tensor

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adamax",
    "NAdam",
    "RAdam",
    "Adadelta",
    "ASGD",
    "LBFGS",
]


def _commit(p, arr):
    """Record that parameter ``p`` now holds ``arr`` (its own array updated in place, or a
    fresh 0-d value)."""
    if p._v is arr:
        _methods.bump_version(p)
        p._invalidate()
    else:
        _methods._set_value(p, float(arr))


def _array(p):
    """The parameter's value as an array updated in place (a 0-d copy for scalar tensors)."""
    v = p._v
    return np.array(v) if v.__class__ is float else v


class _ParamState(dict):
    """``Optimizer.state``: each parameter's state (a dict of buffers), keyed by the parameter
    as PyTorch's (``opt.state[p]["exp_avg"]``, ``for p, s in opt.state.items()``), and, like
    PyTorch's ``defaultdict(dict)``, ``opt.state[p]`` of a parameter without state is a new
    empty dict.  The entries are stored by ``id(p)``, which is taken as a key too."""

    def __init__(self, items=()):
        super().__init__()
        self._params = {}
        for k, v in items:
            self[k] = v

    def _id(self, k):
        if isinstance(k, Tensor):
            self._params[id(k)] = k
            return id(k)
        return k

    def __getitem__(self, k):
        i = id(k) if isinstance(k, Tensor) else k
        if dict.__contains__(self, i):
            return dict.__getitem__(self, i)
        if not isinstance(k, Tensor):
            raise KeyError(k)
        entry = self[k] = {}
        return entry

    def __setitem__(self, k, v):
        dict.__setitem__(self, self._id(k), v)

    def __delitem__(self, k):
        dict.__delitem__(self, id(k) if isinstance(k, Tensor) else k)

    def __contains__(self, k):
        return dict.__contains__(self, id(k) if isinstance(k, Tensor) else k)

    def get(self, k, default=None):
        return dict.get(self, id(k) if isinstance(k, Tensor) else k, default)

    def setdefault(self, k, default=None):
        return dict.setdefault(self, self._id(k), default)

    def pop(self, k, *default):
        return dict.pop(self, id(k) if isinstance(k, Tensor) else k, *default)

    def __iter__(self):
        return iter(self.keys())

    def keys(self):
        return [self._params.get(i, i) for i in dict.keys(self)]

    def items(self):
        return [(self._params.get(i, i), v) for i, v in dict.items(self)]

    def __repr__(self):
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "}"

    def __reduce__(self):  # (copy / pickle as a plain mapping, parameters as keys)
        return (type(self), (self.items(),))


def _accelerators(args):
    """Check PyTorch's implementation switches of an optimizer's ``__init__`` (its
    ``locals()``): ``foreach`` (any value) only chooses PyTorch's kernels for the same update
    rule, so it is accepted and changes nothing; ``fused``, ``capturable`` (CUDA-graph
    capture) and ``differentiable`` (a step recorded by autograd) are accepted as False or
    None and refused when True."""
    name = type(args["self"]).__name__
    if args.get("differentiable"):
        raise TypeError(
            f"{name}(differentiable=True): tapegrad's optimizers update the parameters in place "
            "outside the autograd graph, so a step cannot be differentiated; pass "
            "differentiable=False, or write the update with Tensor operations (new = p - lr * "
            "g, with g from tg.autograd.grad(..., create_graph=True)) to differentiate through it"
        )
    if args.get("capturable"):
        raise TypeError(
            f"{name}(capturable=True) is for CUDA-graph capture (PyTorch refuses it for CPU "
            "parameters too); tapegrad runs on the CPU: pass capturable=False"
        )
    if args.get("fused"):
        raise TypeError(
            f"{name}(fused=True) asks for PyTorch's fused device kernels, which tapegrad does "
            "not have (its update runs in NumPy on the CPU); pass fused=None (the default)"
        )


def _hooked(step):
    """``step`` running the step pre- and post-hooks around it (once, not again in a
    ``super().step()``), and noting that it ran (``_step_called``), so a scheduler stepped
    before its optimizer warns as PyTorch's does."""

    @functools.wraps(step)
    def hooked_step(self, *args, **kwargs):
        self._step_called = True
        if self.__dict__.get("_in_step"):
            return step(self, *args, **kwargs)
        args = (self, *args)  # (PyTorch's hooks see the optimizer as args[0])
        for hook in list(self._hooks("_step_pre_hooks").values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{type(self).__name__}.step: a step pre-hook must return None or a "
                        f"tuple of (new_args, new_kwargs), but got {result!r}"
                    )
                args, kwargs = result
        self._in_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step = False
        for hook in list(self._hooks("_step_post_hooks").values()):
            hook(self, args, kwargs)
        return out

    hooked_step._notes_call = True
    return hooked_step


_HOOK_IDS = itertools.count()


class RemovableHandle:
    """What the optimizer's ``register_*_hook`` methods return (PyTorch's
    ``RemovableHandle``): ``remove()`` unregisters the hook (twice does nothing); as a context
    manager it removes the hook on exit."""

    def __init__(self, hooks: dict):
        self.hooks_dict_ref = weakref.ref(hooks)
        self.id = next(_HOOK_IDS)

    def remove(self) -> None:
        """Unregister the hook."""
        hooks = self.hooks_dict_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_HOOKS = (
    "_step_pre_hooks",
    "_step_post_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_post_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with "params" and hyper-parameters) and the
    per-parameter ``state`` (keyed by parameter, as PyTorch's).  Subclasses implement
    ``step()`` (or, as tapegrad's own optimizers, ``_update(p, value, grad, group)``, one
    parameter's update in place, which the base ``step`` runs for every parameter with a
    gradient after applying ``maximize`` and the weight decay).

    Examples:
        >>> import tapegrad as tg
        >>> class PlainSGD(tg.optim.Optimizer):
        ...     def __init__(self, params, lr):
        ...         super().__init__(params, dict(lr=lr))
        ...
        ...     def step(self):
        ...         with tg.no_grad():
        ...             for group in self.param_groups:
        ...                 for p in group["params"]:
        ...                     if p.grad is not None:
        ...                         p -= group["lr"] * p.grad
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = PlainSGD([w], lr=0.25)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0.5000, -1.0000], requires_grad=True)
    """

    def __init_subclass__(cls, **kwargs):
        """Every optimizer's ``step`` runs the step hooks and notes that it ran."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_notes_call", False):
            cls.step = _hooked(step)

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                "Tensors or dicts, but got a Tensor"
            )
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        self.state = _ParamState()
        for name in _HOOKS:
            setattr(self, name, OrderedDict())
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict) -> None:
        """Add a parameter group (a dict with "params"; missing hyper-parameters take the
        optimizer's defaults), as PyTorch's.  A parameter that is not a leaf, or is already in
        a group, raises ValueError.  Frozen ``nn.Parameter``s (requires_grad False) are kept, as
        PyTorch keeps them: they have no ``.grad``, so steps skip them."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise KeyError(
                f"{type(self).__name__}.add_param_group: the parameter group has no 'params' "
                "entry; give {'params': [tensors...], <hyper-parameters>...}"
            )
        group = dict(self.defaults)
        group.update(param_group)
        for k, v in group.items():  # a one-element Tensor lr (PyTorch takes one): kept, read
            if k != "params" and isinstance(v, Tensor):  # at every step, as PyTorch's
                _number(v, f"{type(self).__name__}: {k}")
        ps = group["params"]
        if isinstance(ps, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        # (name, Tensor) pairs, as model.named_parameters() gives: the names kept in
        # "param_names", as PyTorch's
        names = [
            p[0]
            for p in group["params"]
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
        ]
        if names:
            if len(names) != len(group["params"]):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            group["param_names"] = names
            group["params"] = [p[1] for p in group["params"]]
        for other in self.param_groups:
            if ("param_names" in group) != ("param_names" in other):
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    f"group {'with' if 'param_names' in group else 'without'} names to the "
                    "optimizer"
                )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            # a frozen module parameter (nn.Parameter with requires_grad False) is kept and
            # skipped, as PyTorch; a plain tensor that does not require grad is refused, the
            # usual slip (requires_grad=True forgotten) that would never train
            if (
                not isinstance(p, Tensor)
                or not p.is_leaf
                or not (p.requires_grad or getattr(p, "_nn_parameter", False))
            ):
                raise ValueError(
                    f"can't optimize {p!r}: parameters must be leaf Tensors with "
                    "requires_grad=True (or frozen nn.Parameters)"
                )
            if id(p) in seen:
                if any(q is p for g in self.param_groups for q in g["params"]):
                    raise ValueError("some parameters appear in more than one parameter group")
                raise ValueError(  # (PyTorch warns, then steps the parameter twice)
                    f"optimizer: a parameter of shape {tuple(p.shape)} appears twice in one "
                    "parameter group (it would be stepped twice); give each parameter once"
                )
            seen.add(id(p))
        self.param_groups.append(group)

    def __repr__(self):
        """PyTorch's: the class, then each parameter group's hyper-parameters, sorted."""
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines += [""] * (i > 0) + [f"Parameter Group {i}"]
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        return "\n".join(lines) + "\n)"

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of every parameter (to None by default, like PyTorch).

        Examples:
            >>> import tapegrad as tg
            >>> w = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = tg.optim.SGD([w], lr=0.1)
            >>> (w * w).sum().backward()
            >>> opt.zero_grad()
            >>> w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    if p.grad.requires_grad:  # (a backward with create_graph: cut from its
                        p.grad.detach_()  # graph first, as PyTorch's, not zeroed on it)
                    p.grad.zero_()

    def _with_grads(self, group):
        """(parameter, value array, gradient array) for the group's parameters that have a
        gradient; the gradient array is never aliased to anything the optimizer writes."""
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            yield p, self._writable(p), np.asarray(g._v, dtype=np.float64)

    def _writable(self, p):
        """The parameter's value as an array updated in place (``_array``), refused if
        read-only (else the state would move and the parameter not)."""
        v = _array(p)
        if not v.flags.writeable:
            raise ValueError(
                f"{type(self).__name__}.step: a parameter of shape {tuple(p.shape)} holds a "
                "read-only array (tg.from_numpy of a read-only or broadcast NumPy array?) "
                "and cannot be updated in place; make it with tg.tensor(array), a copy"
            )
        return v

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        if type(self)._update is Optimizer._update:
            raise NotImplementedError(
                f"{type(self).__name__}: an Optimizer subclass must define step() (or "
                "_update(p, value, grad, group), one parameter's update)"
            )
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            for p, v, g in self._with_grads(params):
                self._update(p, v, _decayed(v, g, group), group)
                _commit(p, v)
        return loss

    step = _hooked(step)

    def _update(self, p, v, g, group):
        """Update parameter ``p``'s value array ``v`` in place from its gradient ``g`` (with
        ``maximize`` and the weight decay applied) and the ``group``'s hyper-parameters as
        numbers."""
        raise NotImplementedError

    def _state_of(self, p, v, buffers=(), fill=0.0, **initial):
        """Parameter ``p``'s state, made on its first step: the ``initial`` entries (``step``
        first, as PyTorch's), then the ``buffers`` named, arrays shaped as ``v`` full of
        ``fill``."""
        state = self.state[p]
        if not state:
            state.update(initial)
            for name in buffers:
                state[name] = np.full_like(v, fill)
        return state

    # ---- hooks ---------------------------------------------------------------------------------

    def _hooks(self, name):
        return self.__dict__.setdefault(name, OrderedDict())

    def _register(self, name, hook, prepend=False):
        hooks = self._hooks(name)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before every ``step``, as PyTorch's (``args``
        starts with the optimizer); it may return ``(new_args, new_kwargs)`` for the step.
        Returns a handle whose ``remove()`` unregisters it."""
        return self._register("_step_pre_hooks", hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after every ``step``, as PyTorch's.  Returns
        a handle whose ``remove()`` unregisters it."""
        return self._register("_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` before ``state_dict()`` builds the state dict, as
        PyTorch's (``prepend=True``: before the hooks registered earlier)."""
        return self._register("_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` on the state dict ``state_dict()`` built, as
        PyTorch's; a dict it returns replaces the state dict."""
        return self._register("_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` before ``load_state_dict`` loads (a shallow
        copy of) the state dict, as PyTorch's; a dict it returns is loaded instead."""
        return self._register("_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """Run ``hook(optimizer)`` after ``load_state_dict`` loaded a state dict, as
        PyTorch's."""
        return self._register("_load_state_dict_post_hooks", hook, prepend)

    # ---- state ---------------------------------------------------------------------------------

    @property
    def state(self):
        """Each parameter's state (a dict of buffers), keyed by the parameter as PyTorch's
        ``defaultdict(dict)``: ``opt.state[p]["exp_avg"]``; a mapping assigned to it (e.g.
        ``opt.state = collections.defaultdict(dict)`` to forget every buffer) is taken so."""
        return self._state

    @state.setter
    def state(self, value):
        if not isinstance(value, _ParamState):
            try:
                value = _ParamState(value.items())
            except AttributeError:
                raise TypeError(
                    f"{type(self).__name__}.state must be a mapping from parameters to their "
                    f"state dicts, got {type(value).__name__}"
                ) from None
        self._state = value

    def _indexed_params(self):
        """(index, group number, parameter) in PyTorch's state-dict numbering."""
        i = 0
        for gi, group in enumerate(self.param_groups):
            for p in group["params"]:
                yield i, gi, p
                i += 1

    def state_dict(self):
        """``{"state": {index: {name: copy}}, "param_groups": [{..., "params": [index...]}]}``:
        a copy, so training on does not change it (and it pickles).  The state dict hooks run
        around it, as PyTorch's."""
        for hook in list(self._hooks("_state_dict_pre_hooks").values()):
            hook(self)
        state, groups, start = {}, [], 0
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        for i, _, p in self._indexed_params():
            if self.state.get(p):
                state[i] = copy.deepcopy(self.state[p])
        out = {"state": state, "param_groups": groups}
        for hook in list(self._hooks("_state_dict_post_hooks").values()):
            result = hook(self, out)
            out = out if result is None else result
        return out

    def load_state_dict(self, state_dict):
        """Load hyper-parameters and per-parameter state saved by ``state_dict()`` of an
        optimizer over parameters of the same shapes, grouped the same way (values are copied).
        Raises ValueError, naming what differs, and then changes nothing.  The load state dict
        hooks run around it, as PyTorch's."""
        if isinstance(state_dict, dict):
            state_dict = dict(state_dict)
        for hook in list(self._hooks("_load_state_dict_pre_hooks").values()):
            result = hook(self, state_dict)
            state_dict = state_dict if result is None else result
        try:
            saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        except (TypeError, KeyError):
            raise ValueError(
                "optimizer state_dict must be a dict with 'state' and "
                "'param_groups' entries (from Optimizer.state_dict())"
            ) from None
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, this "
                f"optimizer has {len(self.param_groups)}"
            )
        index = {}
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group ({gi}) of "
                    f"{len(saved['params'])} parameters that doesn't match the size "
                    f"of optimizer's group ({len(group['params'])})"
                )
            index.update(zip(saved["params"], group["params"]))
        unknown = [k for k in saved_state if k not in index]
        if unknown:
            raise ValueError(
                f"loaded state dict has state for parameter(s) {unknown} that no "
                "parameter group lists"
            )
        new_state = _ParamState()
        for k, entry in saved_state.items():
            p = index[k]
            if type(self).step.__module__ != __name__:  # a user's step: its own state types
                entry = {name: _tensor_kept(v) for name, v in dict(entry).items()}
            else:
                entry = {name: _state_value(name, v) for name, v in dict(entry).items()}
            for name, v in entry.items():
                if (
                    isinstance(v, np.ndarray)
                    and v.shape != tuple(p.shape)
                    and name not in self._unshaped_state
                ):
                    raise ValueError(
                        f"loaded state for parameter {k}: {name!r} has shape "
                        f"{v.shape}, the parameter has shape {tuple(p.shape)}"
                    )
            missing = [name for name in self._state_keys if entry and name not in entry]
            if missing:  # (PyTorch's fails in the next step with a bare KeyError)
                raise ValueError(
                    f"{type(self).__name__}.load_state_dict: the state of parameter {k} has no "
                    f"{missing} (it holds {sorted(entry)}: the state of another optimizer?); "
                    f"load a state dict saved by {type(self).__name__}.state_dict()"
                )
            new_state[p] = entry
        for saved, group in zip(saved_groups, self.param_groups):
            hyper = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            group.update(self._normalize_group(hyper))
        self.state = new_state
        for hook in list(self._hooks("_load_state_dict_post_hooks").values()):
            hook(self)

    # the per-parameter state entries every step needs (checked when a state dict is loaded)
    _state_keys = ()
    # state entries not shaped as their parameter (not checked when a state dict is loaded)
    _unshaped_state = ()

    def _normalize_group(self, hyper):
        """Hyper-parameters read back from a state dict, in this optimizer's types (``betas``
        a tuple, as a list after a round trip through JSON)."""
        if isinstance(hyper.get("betas"), list):
            hyper["betas"] = tuple(hyper["betas"])
        return hyper

    # copying or pickling an optimizer keys its state by position, so the copy (with its copied
    # parameters, e.g. ``copy.deepcopy((model, opt))``) continues with the original's state
    # rather than silently restarting from none; the hooks are not copied (PyTorch's neither)
    def __getstate__(self):
        skip = (*_HOOKS, "_in_step", "_state")
        d = {k: v for k, v in self.__dict__.items() if k not in skip}
        d["state"] = [self.state.get(p) for _, _, p in self._indexed_params()]
        return d

    def __deepcopy__(self, memo):
        for _, _, p in self._indexed_params():  # fresh leaves, not copies of their tapes
            _creation.leaf_copy(p, memo)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def __setstate__(self, d):
        d = dict(d)
        positional = d.pop("state")
        self.__dict__.update(d)
        params = [p for _, _, p in self._indexed_params()]
        self.state = _ParamState((p, st) for p, st in zip(params, positional) if st is not None)


def _number(v, what):
    """A hyper-parameter's value now, as a Python number: a one-element Tensor (tapegrad's or
    PyTorch's, kept in the group as PyTorch keeps it, so changing it in place changes the
    next steps) or NumPy value is read; anything else is refused naming ``what``."""
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, Tensor):
        if v.requires_grad or v.numel() != 1:
            raise TypeError(
                f"{what} must be a number or a one-element Tensor without gradient, got shape "
                f"{tuple(v.shape)} (requires_grad={v.requires_grad})"
            )
        return float(v.item())
    try:
        a = np.asarray(v.detach() if hasattr(v, "detach") else v, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    if a is None or a.size != 1:
        raise TypeError(f"{what} must be a number or a one-element Tensor, got {v!r}")
    return float(a.reshape(()))


def _values(opt, group):
    """The group's hyper-parameters as numbers (``betas`` a pair of numbers); other entries
    (flags, None, names a user added) as they are."""
    out = {}
    for k, v in group.items():
        if k == "params" or v is None or isinstance(v, (bool, str)):
            out[k] = v
        elif k == "betas":
            out[k] = tuple(_number(b, f"{type(opt).__name__}: betas") for b in v)
        elif isinstance(v, (int, float, Tensor)) or hasattr(v, "__array__"):
            out[k] = _number(v, f"{type(opt).__name__}: {k}")
        else:
            out[k] = v
    return out


def _missing(opt, option, buffer):
    """The error for a state buffer an option needs that earlier steps did not make."""
    return ValueError(
        f"{type(opt).__name__}.step: {option} was turned on in a parameter group whose "
        f"parameters were already stepped without it, so their state has no {buffer!r} "
        f"(PyTorch raises KeyError); set {option} when making the optimizer or the group "
        "(add_param_group), or clear the state of those parameters"
    )


def _state_value(name, v):
    """A copy of one per-parameter state entry as the update rules use it: arrays as float64
    NumPy arrays and ``step`` as an int, so a PyTorch optimizer's state dict (Tensors, a
    float Tensor step) loads too."""
    if isinstance(v, list):  # (LBFGS's histories)
        return [None if x is None else _state_value(name, x) for x in v]
    if isinstance(v, (bool, int, float, np.ndarray)) or not hasattr(v, "__array__"):
        return copy.deepcopy(v)
    if hasattr(v, "detach"):  # a Tensor (tapegrad's or PyTorch's): its values, read explicitly
        v = v.detach()
        v = v.numpy() if hasattr(v, "numpy") else v
    a = np.array(v, dtype=np.float64)
    if a.ndim == 0 and name == "step":
        return int(a)
    if a.ndim == 0 and name in _SCALAR_STATE:  # (NAdam's and ASGD's 0-d Tensors in PyTorch)
        return float(a)
    return a


def _tensor_kept(v):
    """A copy of a state entry of an optimizer written by the user (its own ``step``, as
    PyTorch's ``Optimizer`` subclasses): tapegrad Tensors stay Tensors (detached copies), as
    PyTorch's ``load_state_dict`` keeps them, so ``state["buf"].mul_(...)`` works after a
    load."""
    if isinstance(v, Tensor):
        return v.detach().clone()
    return copy.deepcopy(v)


# per-parameter state entries that are one number, not an array shaped as the parameter
_SCALAR_STATE = ("mu_product", "eta", "mu", "t", "H_diag", "prev_loss", "ro", "al")


_CHECKED = {
    "lr": "learning rate",
    "eps": "epsilon",
    "momentum": "momentum",
    "weight_decay": "weight_decay",
    "alpha": "alpha",
    "lr_decay": "lr_decay",
    "initial_accumulator_value": "initial_accumulator_value",
    "momentum_decay": "momentum_decay",
}


def _hyper(args, unchecked=()):
    """An optimizer's hyper-parameters from its ``__init__``'s ``locals()``: the ones that
    must not be negative checked (PyTorch's messages), but for the names in ``unchecked``;
    ``betas`` checked (a pair in [0, 1)); PyTorch's implementation switches checked
    (``_accelerators``) and not kept, as they change no number."""
    _accelerators(args)
    skip = ("self", "params", "__class__", "foreach", "fused", "capturable", "differentiable")
    hyper = {k: v for k, v in args.items() if k not in skip}
    for k, name in _CHECKED.items():
        if k in hyper and k not in unchecked and not hyper[k] >= 0.0:
            if k == "lr":  # (PyTorch's words)
                raise ValueError(f"Invalid learning rate: {hyper[k]}")
            raise ValueError(f"Invalid {name} value: {hyper[k]}")
    if "betas" in hyper:
        hyper["betas"] = _checked_betas(args["self"], hyper["betas"])
    return hyper


def _checked_betas(opt, betas):
    """``betas`` as a pair, each in [0, 1) (PyTorch's checks and messages)."""
    betas = tuple(betas)
    if len(betas) != 2:
        raise ValueError(f"{type(opt).__name__}: betas must be a pair (beta1, beta2), got {betas}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return betas


def _lerp_(a, b, w):
    """``a`` moved in place a fraction ``w`` of the way to ``b``, as PyTorch's ``lerp_``
    computes it (from the nearer end)."""
    if w < 0.5:
        a += w * (b - a)
    else:
        a[...] = b - (b - a) * (1.0 - w)
    return a


def _closure_loss(closure):
    """The loss from an optimizer's ``closure`` (None without one), evaluated with gradient
    recording on, as PyTorch's ``step(closure)``."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _decayed(v, g, group):
    """The gradient as the update rules use it: negated with ``maximize``, plus the weight
    decay ``weight_decay * p``, or with ``decoupled_weight_decay`` (AdamW's) the decay applied
    to the parameter instead (``p *= 1 - lr * weight_decay``)."""
    wd = group.get("weight_decay", 0.0)
    if group.get("decoupled_weight_decay"):
        if wd:
            v *= 1.0 - group["lr"] * wd
        wd = 0.0
    if group.get("maximize"):
        g = -g
    return g + wd * v if wd else g


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (PyTorch's rule).

    g = ±grad + weight_decay * p (minus with ``maximize``);  with momentum:
    b = momentum * b + (1 - dampening) * g (b = g on the first step), and g = g + momentum * b
    (nesterov) or g = b;  p -= lr * g.

    ``weight_decay`` may be the fourth positional argument (tapegrad's signature); PyTorch's
    fourth and fifth are ``dampening, weight_decay``, so ``dampening`` and what follows are
    keyword-only: a call with PyTorch's five positional arguments raises, never swaps them.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([0.4600, -0.9200], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        *,  # PyTorch's fourth and fifth are dampening, weight_decay: by keyword only
        dampening: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        hyper = _hyper(locals())
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, hyper)

    def _update(self, p, v, g, group):
        mu = group["momentum"]
        if mu:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(g, dtype=np.float64)
            else:
                buf *= mu
                buf += (1.0 - group["dampening"]) * g
            g = g + mu * buf if group["nesterov"] else buf
        v -= group["lr"] * g


class Adam(Optimizer):
    """Adam (PyTorch's rule, with bias correction).

    g = ±grad + weight_decay * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
    (with ``amsgrad``, v_max = max(v_max, v) is used for v below);
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    With ``decoupled_weight_decay`` (``AdamW``), p *= 1 - lr * weight_decay instead of adding
    the decay to the gradient.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.Adam([w], lr=0.1)
        >>> for _ in range(3):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([0.7016, -1.7006], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ):
        super().__init__(params, _hyper(locals()))

    def _update(self, p, v, g, group):
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        amsgrad = group.get("amsgrad", False)
        extra = ("max_exp_avg_sq",) if amsgrad else ()
        state = self._state_of(p, v, ("exp_avg", "exp_avg_sq") + extra, step=0)
        state["step"] += 1
        t = state["step"]
        m, s = state["exp_avg"], state["exp_avg_sq"]
        m *= b1
        m += (1.0 - b1) * g
        s *= b2
        s += (1.0 - b2) * (g * g)
        if amsgrad:
            if "max_exp_avg_sq" not in state:
                raise _missing(self, "amsgrad", "max_exp_avg_sq")
            np.maximum(state["max_exp_avg_sq"], s, out=state["max_exp_avg_sq"])
            s = state["max_exp_avg_sq"]
        denom = np.sqrt(s)
        denom /= math.sqrt(1.0 - b2**t)
        denom += eps
        v -= (lr / (1.0 - b1**t)) * (m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's AdamW): p *= 1 - lr * weight_decay, then
    the Adam step on the gradient alone.  ``weight_decay`` defaults to 0.01.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> w.grad = tg.tensor([0.0, 0.0])
        >>> opt.step(); w                       # only the decay: w * (1 - 0.1 * 0.5)
        tensor([0.9500, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


class RMSprop(Optimizer):
    """RMSprop (PyTorch's rule): g = ±grad + weight_decay * p;
    s = alpha s + (1 - alpha) g^2;  with ``centered``, a = a + (1 - alpha) (g - a) and the
    denominator is sqrt(s - a^2) + eps, else sqrt(s) + eps;  with momentum,
    b = momentum b + g / denominator and p -= lr b, else p -= lr g / denominator.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.RMSprop([w], lr=0.01)
        >>> (w ** 2).sum().backward(); opt.step(); w   # first step: lr / sqrt(1 - alpha)
        tensor([0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        super().__init__(params, _hyper(locals()))

    def _update(self, p, v, g, group):
        lr, alpha, eps, mu = group["lr"], group["alpha"], group["eps"], group["momentum"]
        centered = group["centered"]
        buffers = ("square_avg",) + ("momentum_buffer",) * (mu > 0) + ("grad_avg",) * centered
        state = self._state_of(p, v, buffers, step=0)
        if mu > 0 and "momentum_buffer" not in state:
            raise _missing(self, "momentum", "momentum_buffer")
        if centered and "grad_avg" not in state:
            raise _missing(self, "centered", "grad_avg")
        state["step"] += 1
        s = state["square_avg"]
        s *= alpha
        s += (1.0 - alpha) * (g * g)
        if centered:
            a = state["grad_avg"]
            a += (1.0 - alpha) * (g - a)  # torch's lerp for weights below 0.5
            avg = np.sqrt(s - a * a)
        else:
            avg = np.sqrt(s)
        avg += eps
        if mu > 0:
            buf = state["momentum_buffer"]
            buf *= mu
            buf += g / avg
            v -= lr * buf
        else:
            v -= lr * (g / avg)


class Adagrad(Optimizer):
    """Adagrad (PyTorch's rule): g = ±grad + weight_decay * p;  s = s + g^2 (s starts at
    ``initial_accumulator_value``);  p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.Adagrad([w], lr=0.5)
        >>> (w ** 2).sum().backward(); opt.step(); w   # first step: lr * sign(grad)
        tensor([0.5000, -1.5000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(params, _hyper(locals()))

    def add_param_group(self, param_group):
        """As ``Optimizer.add_param_group``; ``initial_accumulator_value`` is one value for the
        whole optimizer (PyTorch's Adagrad starts every sum at the value given to
        ``Adagrad(...)`` and ignores a group's), so a group giving another raises."""
        value = None
        if isinstance(param_group, dict):
            value = param_group.get("initial_accumulator_value")
        if value is not None and value != self.defaults["initial_accumulator_value"]:
            raise ValueError(
                f"Adagrad: a parameter group's initial_accumulator_value ({value}) differs from "
                f"the optimizer's ({self.defaults['initial_accumulator_value']}): PyTorch's "
                "Adagrad starts every parameter's sum at the value given to Adagrad(...) and "
                "ignores the group's; give it to Adagrad(...) (or make another optimizer)"
            )
        super().add_param_group(param_group)

    def _update(self, p, v, g, group):
        init = _number(self.defaults["initial_accumulator_value"], "initial_accumulator_value")
        state = self._state_of(p, v, ("sum",), fill=init, step=0)
        state["step"] += 1
        clr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        s = state["sum"]
        s += g * g
        v -= clr * (g / (np.sqrt(s) + group["eps"]))


class Adamax(Optimizer):
    """Adamax, Adam with the infinity norm (PyTorch's ``torch.optim.Adamax`` rule).

    g = ±grad + weight_decay * p;  m = b1 m + (1 - b1) g;  u = max(b2 u, |g| + eps);
    p -= lr / (1 - b1^t) * m / u.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.Adamax([w], lr=0.1)
        >>> (w ** 2).sum().backward(); opt.step(); w   # first step: lr * sign(grad)
        tensor([0.9000, -1.9000], requires_grad=True)
    """

    _state_keys = ("step", "exp_avg", "exp_inf")

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        super().__init__(params, _hyper(locals()))

    def _update(self, p, v, g, group):
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        state = self._state_of(p, v, ("exp_avg", "exp_inf"), step=0)
        state["step"] += 1
        m, u = state["exp_avg"], state["exp_inf"]
        _lerp_(m, g, 1.0 - b1)
        u *= b2
        np.maximum(u, np.abs(g) + eps, out=u)
        v -= (lr / (1.0 - b1 ** state["step"])) * (m / u)


class NAdam(Optimizer):
    """NAdam, Adam with Nesterov momentum (PyTorch's ``torch.optim.NAdam`` rule).

    g = ±grad + weight_decay * p (or, with ``decoupled_weight_decay``, p *= 1 - lr *
    weight_decay);  mu_t = b1 (1 - 0.96^(t momentum_decay) / 2), P_t = mu_1 ... mu_t;
    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  d = sqrt(v / (1 - b2^t)) + eps;
    p -= lr (1 - mu_t) / (1 - P_t) g / d + lr mu_{t+1} / (1 - P_t mu_{t+1}) m / d.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.NAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward(); opt.step(); w
        tensor([0.8944, -1.8944], requires_grad=True)
    """

    _state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        super().__init__(params, _hyper(locals()))

    def _update(self, p, v, g, group):
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        decay = group["momentum_decay"]
        state = self._state_of(p, v, ("exp_avg", "exp_avg_sq"), step=0, mu_product=1.0)
        state["step"] += 1
        t = state["step"]
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
        state["mu_product"] *= mu
        product = state["mu_product"]
        m, s = state["exp_avg"], state["exp_avg_sq"]
        _lerp_(m, g, 1.0 - b1)
        s *= b2
        s += (1.0 - b2) * (g * g)
        denom = np.sqrt(s / (1.0 - b2**t))
        denom += eps
        v += (-lr * (1.0 - mu) / (1.0 - product)) * (g / denom)
        v += (-lr * mu_next / (1.0 - product * mu_next)) * (m / denom)


class RAdam(Optimizer):
    """RAdam, rectified Adam (PyTorch's ``torch.optim.RAdam`` rule).

    g = ±grad + weight_decay * p (or, with ``decoupled_weight_decay``, p *= 1 - lr *
    weight_decay);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  with
    rho_inf = 2 / (1 - b2) - 1 and rho_t = rho_inf - 2 t b2^t / (1 - b2^t):
    if rho_t > 5, p -= lr m / (1 - b1^t) * sqrt(1 - b2^t) / (sqrt(v) + eps) * r_t with
    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
    else p -= lr m / (1 - b1^t).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.RAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward(); opt.step(); w   # first step: lr * grad
        tensor([0.8000, -1.6000], requires_grad=True)
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        super().__init__(params, _hyper(locals()))

    def _update(self, p, v, g, group):
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        state = self._state_of(p, v, ("exp_avg", "exp_avg_sq"), step=0)
        state["step"] += 1
        t = state["step"]
        m, s = state["exp_avg"], state["exp_avg_sq"]
        _lerp_(m, g, 1.0 - b1)
        s *= b2
        s += (1.0 - b2) * (g * g)
        bias2 = 1.0 - b2**t
        corrected = m / (1.0 - b1**t)
        rho_t = rho_inf - 2.0 * t * (b2**t) / bias2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4.0)
                * (rho_t - 2.0)
                * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)
            ) ** 0.5
            adaptive = bias2**0.5 / (np.sqrt(s) + eps)
            v -= corrected * lr * adaptive * rect
        else:
            v -= corrected * lr


class Adadelta(Optimizer):
    """Adadelta (PyTorch's ``torch.optim.Adadelta`` rule).

    g = ±grad + weight_decay * p;  s = rho s + (1 - rho) g^2;
    d = sqrt(a + eps) / sqrt(s + eps) * g;  a = rho a + (1 - rho) d^2;  p -= lr d.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.Adadelta([w], lr=1.0, eps=0.01)
        >>> (w ** 2).sum().backward(); opt.step(); w
        tensor([0.6877, -1.6848], requires_grad=True)
    """

    _state_keys = ("step", "square_avg", "acc_delta")

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        hyper = _hyper(locals())
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, hyper)

    def _update(self, p, v, g, group):
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        state = self._state_of(p, v, ("square_avg", "acc_delta"), step=0)
        state["step"] += 1
        s, a = state["square_avg"], state["acc_delta"]
        s *= rho
        s += (1.0 - rho) * (g * g)
        delta = np.sqrt(a + eps) / np.sqrt(s + eps) * g
        a *= rho
        a += (1.0 - rho) * (delta * delta)
        v -= lr * delta


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (PyTorch's ``torch.optim.ASGD`` rule).

    g = ±grad + weight_decay * p;  p *= 1 - lambd eta;  p -= eta g;  the average ``ax``
    (in the state) moves to p by mu (ax = p while mu is 1);  then, with t the step,
    eta = lr / (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.ASGD([w], lr=0.1, lambd=0.0)
        >>> (w ** 2).sum().backward(); opt.step(); w   # the first step is SGD's
        tensor([0.8000, -1.6000], requires_grad=True)
    """

    _state_keys = ("step", "eta", "mu", "ax")

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        # (PyTorch checks only lr and weight_decay here; its alpha is the eta decay's power)
        super().__init__(params, _hyper(locals(), unchecked=("alpha",)))

    def _update(self, p, v, g, group):
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        state = self._state_of(p, v, ("ax",), step=0, eta=float(lr), mu=1.0)
        state["step"] += 1
        eta, ax = state["eta"], state["ax"]
        v *= 1.0 - lambd * eta
        v -= eta * g
        if state["mu"] != 1:
            ax += (v - ax) * state["mu"]
        else:
            ax[...] = v
        t = state["step"]
        state["eta"] = lr / ((1.0 + lambd * lr * t) ** alpha)
        state["mu"] = 1.0 / max(1.0, t - t0)


# ---- L-BFGS ------------------------------------------------------------------------------------
#
# Written from Nocedal & Wright, "Numerical Optimization" (2nd ed.): the direction is the
# inverse-Hessian estimate of the last ``history_size`` curvature pairs applied to the gradient
# (two-loop recursion, Algorithm 7.4, first estimate H0 = gamma I with gamma = s.y / y.y, eq.
# 7.20); the step length is fixed, or found by a line search for the strong Wolfe conditions
# (bracketing, Algorithm 3.5, then zooming, Algorithm 3.6, with trial steps from cubic
# interpolation, eq. 3.59).  The tuning constants (first step, extrapolation range, the zoom's
# safeguard, the stopping tests) are the ones PyTorch documents or shows in its iterates.


# one evaluation along the search line: the step, the loss and flat gradient there, and the
# slope (gradient . direction)
_Trial = namedtuple("_Trial", "step loss grad slope")


def _lower(a, b):
    """The trial of lower loss, ``a`` on a tie."""
    return a if a.loss <= b.loss else b


def _cubic_step(a: _Trial, b: _Trial, lo: float | None = None, hi: float | None = None) -> float:
    """Where the cubic with the losses and slopes of trials ``a`` and ``b`` has its minimum
    (Nocedal & Wright eq. 3.59), clipped to ``[lo, hi]`` (by default the interval between the
    two steps); the middle of that interval when the cubic has no local minimum."""
    near, far = (a, b) if a.step <= b.step else (b, a)  # (the formula is symmetric; ordered)
    if lo is None:
        lo, hi = near.step, far.step
    d1 = a.slope + b.slope - 3 * (a.loss - b.loss) / (a.step - b.step)
    disc = d1 * d1 - a.slope * b.slope
    if not disc >= 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    width = far.step - near.step
    step = far.step - width * ((far.slope + d2 - d1) / (far.slope - near.slope + 2 * d2))
    return min(max(step, lo), hi)


class _WolfeSearch:
    """A line search from the trial ``origin`` (step 0) along ``direction`` for a step with
    sufficient decrease (constant ``c1``) and a small slope (strong Wolfe, constant ``c2``),
    calling ``probe(step) -> (loss, flat gradient)`` at most ``max_evals`` times."""

    def __init__(self, probe, origin, direction, max_evals, tolerance_change, c1=1e-4, c2=0.9):
        self.probe, self.origin, self.direction = probe, origin, direction
        self.max_evals, self.tolerance_change = max_evals, tolerance_change
        self.c1, self.c2 = c1, c2
        self.reach = float(np.max(np.abs(direction)))  # (largest parameter move per unit step)
        self.evals = 0

    def _at(self, step):
        loss, grad = self.probe(step)
        self.evals += 1
        return _Trial(step, loss, grad, float(grad @ self.direction))

    def _too_high(self, trial):
        """Sufficient decrease fails (the Armijo condition, a NaN loss passes as PyTorch's)."""
        o = self.origin
        return trial.loss > o.loss + self.c1 * trial.step * o.slope

    def _flat(self, trial):
        """The curvature condition: |slope| <= c2 |slope at 0|."""
        return abs(trial.slope) <= -self.c2 * self.origin.slope

    def run(self, step: float) -> _Trial:
        """The accepted trial, starting with ``step`` (evaluated even without budget)."""
        older, newer = self.origin, self._at(step)
        while self.evals < self.max_evals:
            # the bracketing phase: grow the step until the minimum is passed
            # (from the third trial on, a loss not below the previous one also brackets)
            if self._too_high(newer) or (self.evals > 2 and newer.loss >= older.loss):
                return self._zoom(older, newer)
            if self._flat(newer):
                return newer
            if newer.slope >= 0:
                return self._zoom(older, newer)
            span = newer.step - older.step
            guess = _cubic_step(older, newer, newer.step + 0.01 * span, 10 * newer.step)
            older, newer = newer, self._at(guess)
        return _lower(self.origin, newer)  # (out of evaluations)

    def _zoom(self, older, newer):
        """Shrink the interval between ``older`` and ``newer``, which holds an acceptable step,
        keeping ``good`` (lowest loss so far, meeting sufficient decrease) at one end."""
        good = _lower(older, newer)
        other = newer if good is older else older
        near_end = False  # (the last trial fell near an end of the interval)
        while self.evals < self.max_evals:
            if abs(other.step - good.step) * self.reach < self.tolerance_change:
                break
            left, right = min(good.step, other.step), max(good.step, other.step)
            step = _cubic_step(good, other)
            margin = 0.1 * (right - left)
            if min(right - step, step - left) >= margin:
                near_end = False
            elif near_end or step >= right or step <= left:
                # twice near an end, or at it: move a tenth of the width inside
                step = right - margin if abs(step - right) < abs(step - left) else left + margin
                near_end = False
            else:
                near_end = True
            trial = self._at(step)
            if self._too_high(trial) or trial.loss >= good.loss:
                other = trial
                if other.loss < good.loss:
                    good, other = other, good
                continue
            if self._flat(trial):
                return trial
            if trial.slope * (other.step - good.step) >= 0:
                other = good
            good = trial
        return good


def _two_loop(grad, ys, ss, rhos, gamma, alphas):
    """``-H g``, H the L-BFGS inverse-Hessian estimate of the pairs (s_i, y_i), rho_i =
    1 / y_i.s_i, from ``gamma`` times the identity (Nocedal & Wright Algorithm 7.4); the
    first-loop coefficients are written to ``alphas``."""
    q = -grad
    for i in reversed(range(len(ss))):
        alphas[i] = float(ss[i] @ q) * rhos[i]
        q -= alphas[i] * ys[i]
    r = q * gamma
    for i in range(len(ss)):
        beta = float(ys[i] @ r) * rhos[i]
        r += (alphas[i] - beta) * ss[i]
    return r


def _max_abs(v):
    return float(np.max(np.abs(v)))


_ONE_GROUP = "LBFGS doesn't support per-parameter options (parameter groups)"


class LBFGS(Optimizer):
    """Limited-memory BFGS, as PyTorch's ``torch.optim.LBFGS``.  Each ``step(closure)`` makes
    up to ``max_iter`` quasi-Newton moves and returns the loss of the first closure call; the
    closure (required) zeroes the gradients, computes the loss, backwards it and returns it.

    The direction applies the inverse-Hessian estimate of the last ``history_size`` (step,
    gradient change) pairs to the gradient (the two-loop recursion).  The step length is
    ``lr`` (``min(1, 1 / |g|_1) lr`` on the very first move); with
    ``line_search_fn="strong_wolfe"`` it is instead searched for until the strong Wolfe
    conditions hold (c1 = 1e-4, c2 = 0.9).  A step ends early when the largest gradient entry
    is at most ``tolerance_grad``, when the loss or the largest parameter change falls below
    ``tolerance_change``, or after ``max_eval`` closure calls (default ``max_iter * 5 // 4``).
    Only one parameter group is allowed.  The state lives under the first parameter, with
    PyTorch's entries (``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``al``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss``, ``func_evals``, ``n_iter``) as flat NumPy arrays,
    lists and numbers, so state dicts move between the two libraries.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = tg.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - tg.tensor([3.0, 0.5])) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> float(opt.step(closure))                  # the loss before the step
        10.25
        >>> w
        tensor([3.0000, 0.5000], requires_grad=True)
    """

    # flat or list entries, not shaped as the first parameter (the state dict shape check)
    _unshaped_state = ("d", "old_dirs", "old_stps", "ro", "al", "prev_flat_grad")

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError(f"LBFGS: a Tensor lr must hold one element, got shape {lr.shape}")
        if not lr >= 0.0:
            raise ValueError(f"LBFGS: invalid learning rate {lr} (it must be >= 0)")
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise ValueError(  # (PyTorch raises RuntimeError only at the first step)
                f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}"
            )
        if not isinstance(history_size, (int, np.integer)) or not history_size >= 1:
            raise ValueError(  # (PyTorch fails at the second iteration, popping an empty list)
                f"LBFGS: history_size must be a positive int, got {history_size!r}"
            )
        hyper = dict(lr=lr, max_iter=max_iter)
        hyper["max_eval"] = max_iter * 5 // 4 if max_eval is None else max_eval
        hyper.update(tolerance_grad=tolerance_grad, tolerance_change=tolerance_change)
        hyper.update(history_size=history_size, line_search_fn=line_search_fn)
        Optimizer.__init__(self, params, hyper)
        if len(self.param_groups) > 1:
            raise ValueError(_ONE_GROUP)

    def add_param_group(self, param_group: dict) -> None:
        """``Optimizer.add_param_group`` for the only group: a second one is refused (as by
        PyTorch), and so are complex parameters."""
        if self.param_groups:
            raise ValueError(_ONE_GROUP)
        Optimizer.add_param_group(self, param_group)
        if any(np.iscomplexobj(p._v) for p in self.param_groups[0]["params"]):
            raise TypeError(
                "LBFGS: complex parameters are not supported; optimize the real and "
                "imaginary parts as two real parameters"
            )

    # ---- the parameters as one flat float64 vector -------------------------------------------

    def _params(self):
        return self.param_groups[0]["params"]

    def _gradient(self):
        """The gradients of all parameters, flattened and concatenated (zeros where None)."""
        parts = [
            np.zeros(p.numel()) if p.grad is None else np.asarray(p.grad._v, np.float64).ravel()
            for p in self._params()
        ]
        return np.concatenate(parts)

    def _move(self, step, direction):
        """Add ``step * direction`` to the parameters, in place."""
        start = 0
        for p in self._params():
            v = _array(p)
            v += (step * direction[start : start + v.size]).reshape(v.shape)
            start += v.size
            _commit(p, v)

    def _snapshot(self):
        return [_array(p).copy() for p in self._params()]

    def _restore(self, saved):
        for p, a in zip(self._params(), saved, strict=True):
            v = _array(p)
            v[...] = a
            _commit(p, v)

    # ---- the quasi-Newton direction ----------------------------------------------------------

    @staticmethod
    def _remember(state, grad, history_size):
        """Add the pair of the last move (s = t d, y = gradient change) to the memory (oldest
        dropped when full) if its curvature y.s is positive enough; then gamma = y.s / y.y."""
        y = grad - state["prev_flat_grad"]
        s = state["d"] * state["t"]
        ys = float(y @ s)
        if not ys > 1e-10:
            return
        ys_list, ss_list, rhos = state["old_dirs"], state["old_stps"], state["ro"]
        if len(ss_list) >= history_size:
            drop = len(ss_list) - history_size + 1
            del ys_list[:drop], ss_list[:drop], rhos[:drop]
        ys_list.append(y)
        ss_list.append(s)
        rhos.append(1.0 / ys)
        state["H_diag"] = ys / float(y @ y)

    def step(self, closure):
        """Up to ``max_iter`` L-BFGS moves, calling ``closure`` (required: it zeroes the
        gradients, computes the loss, calls ``backward`` and returns the loss) under
        ``enable_grad``; returns the loss of its first call."""
        if closure is None:
            raise TypeError(
                "LBFGS.step needs a closure that clears the gradients, computes the loss, calls "
                "loss.backward() and returns the loss: opt.step(closure)"
            )
        for p in self._params():  # (a read-only parameter is refused before any evaluation)
            self._writable(p)
        hp = _values(self, self.param_groups[0])
        tol_grad, tol_change = hp["tolerance_grad"], hp["tolerance_change"]
        max_iter, max_eval = hp["max_iter"], hp["max_eval"]

        def evaluate():
            with enable_grad():
                loss = closure()
            return loss, float(loss), self._gradient()

        state = self.state[self._params()[0]]  # (kept under the first parameter, as PyTorch)
        for counter in ("func_evals", "n_iter"):  # (PyTorch's running totals)
            state.setdefault(counter, 0)
        first, loss, grad = evaluate()
        evals = 1
        state["func_evals"] += 1
        if _max_abs(grad) <= tol_grad:
            return first
        for move in range(1, max_iter + 1):
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # steepest descent, the memory empty
                direction = -grad
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1.0)
                step = min(1.0, 1.0 / float(np.sum(np.abs(grad)))) * hp["lr"]
            else:
                self._remember(state, grad, hp["history_size"])
                alphas = state.setdefault("al", [None] * hp["history_size"])
                if len(alphas) < len(state["old_stps"]):  # (a larger memory loaded)
                    alphas.extend([None] * (len(state["old_stps"]) - len(alphas)))
                direction = _two_loop(
                    grad, state["old_dirs"], state["old_stps"], state["ro"], state["H_diag"], alphas
                )
                step = hp["lr"]
            state.update(d=direction, t=step, prev_flat_grad=grad.copy(), prev_loss=loss)
            slope = float(grad @ direction)
            if slope > -tol_change:  # (not a descent direction any more)
                break
            last_loss, used, converged = loss, 0, False
            if hp["line_search_fn"] == "strong_wolfe":
                saved = self._snapshot()

                def probe(t, saved=saved, direction=direction):
                    self._move(t, direction)
                    _, value, g = evaluate()
                    self._restore(saved)
                    return value, g

                origin = _Trial(0.0, loss, grad, slope)
                budget = max_eval - evals + 1  # (PyTorch's search may exceed max_eval by one)
                search = _WolfeSearch(probe, origin, direction, budget, tol_change)
                found = search.run(step)
                step, loss, grad, used = found.step, found.loss, found.grad, search.evals
                state["t"] = step
                self._move(step, direction)
                converged = _max_abs(grad) <= tol_grad
            else:
                self._move(step, direction)
                if move < max_iter:  # (no evaluation after the last move, as PyTorch)
                    _, loss, grad = evaluate()
                    used, converged = 1, _max_abs(grad) <= tol_grad
            evals += used
            state["func_evals"] += used
            if converged or move == max_iter or evals >= max_eval:
                break
            if _max_abs(direction * step) <= tol_change or abs(loss - last_loss) < tol_change:
                break
        return first
