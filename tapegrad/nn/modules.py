"""``Module`` and the layers built on it (PyTorch-style attribute registration).

A parameter is a leaf Tensor with ``requires_grad=True`` assigned as a module attribute (make one
with ``nn.Parameter(data)``; one made with ``requires_grad=False`` is a frozen parameter, as in
PyTorch); a Module attribute is a submodule.  Tensors that do not require grad can be kept in
the state dict with ``register_buffer`` (``persistent=False`` keeps them out of it).

``Linear`` follows PyTorch: its weight has shape ``(out_features, in_features)`` and it computes
``x @ weight.T + bias``, so weights and state dicts port between the two as they are.  (Until the
op set has a matmul with a transposed operand, ``weight.T`` is a copy in the forward pass and a
scatter in the backward pass on every step.)  Its initialisation matches PyTorch's
(U(-1/sqrt(in), 1/sqrt(in)) for weight and bias) and draws from ``tg.manual_seed``'s generator.

``state_dict()`` is an ordered dict of dotted names (``0.weight`` in a ``Sequential``) to NumPy
copies of the parameters and buffers; ``load_state_dict`` copies values back in place.
"""

import copy
import math
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core import methods as _methods
from ..core.tensor import refuse_non_real
from ..tensor_class import Tensor
from . import functional as F
from . import hooks as _hooks
from . import init as _init


def Parameter(data, requires_grad=True):
    """A new float64 leaf tensor (a copy of ``data``) that a Module registers as a parameter.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Parameter([1.0, 2.0])
        tensor([1., 2.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        data = data._v
    t = Tensor(np.array(_ops.value_of(data), dtype=np.float64), requires_grad=requires_grad)
    t._nn_parameter = True  # a parameter even while frozen (requires_grad=False), as PyTorch's
    return t


def _is_param(value):
    """A leaf that requires grad, or one made by ``Parameter`` (frozen ones too: they stay
    parameters, in ``parameters()`` and the state dict, as PyTorch's)."""
    return (
        isinstance(value, Tensor)
        and value._leaf
        and (value._rg or getattr(value, "_nn_parameter", False))
    )


_NOT_FLOAT64 = (
    "Module.{}(): tapegrad differentiates float64 values only; module.double() keeps the "
    "parameters float64"
)


class Module:
    """Base class of layers and models: subclasses set attributes in ``__init__`` and define
    ``forward``; calling the module calls ``forward``.

    Examples:
        >>> import tapegrad as tg
        >>> class Scale(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = tg.nn.Parameter([2.0])
        ...     def forward(self, x):
        ...         return self.w * x
        >>> m = Scale(); [name for name, _ in m.named_parameters()]
        ['w']
        >>> m(tg.tensor([3.0])).sum().backward(); m.w.grad
        tensor([3.])
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)
        for name in _hooks.HOOK_DICTS:
            object.__setattr__(self, name, OrderedDict())

    # ---- attribute registration ----------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                "cannot assign attributes before Module.__init__() call; "
                "call super().__init__() first in your Module's __init__"
            )
        if (
            name in self._buffers
            and (value is None or isinstance(value, Tensor))
            and not _is_param(value)
        ):
            self._buffers[name] = value
            return
        if isinstance(value, Module):
            table = self._modules
        elif _is_param(value) or (value is None and name in self._parameters):
            table = self._parameters
        elif name in self._parameters:
            # PyTorch's refusal: a plain or non-leaf Tensor would silently leave the
            # parameters (and the state dict and every optimizer)
            raise TypeError(
                f"cannot assign {type(value).__name__} (requires_grad="
                f"{getattr(value, 'requires_grad', None)}) as parameter '{name}' (a leaf "
                f"Tensor with requires_grad=True, nn.Parameter(...) or None expected)"
            )
        elif value is None and name in self._modules:
            table = self._modules
        else:
            for other in (self._parameters, self._buffers, self._modules):
                other.pop(name, None)
            object.__setattr__(self, name, value)
            return
        for other in (self._parameters, self._buffers, self._modules):
            if other is not table:
                other.pop(name, None)
        table[name] = value  # an existing name keeps its place (state-dict order), as PyTorch
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        # only called when normal lookup fails: look in the registries
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def _check_new_name(self, kind, name, table):
        """PyTorch's checks of a name given to ``register_parameter`` / ``register_buffer`` /
        ``add_module``: a name already used by another kind of attribute would make the state
        dict hold two entries under one key (one value silently lost)."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name not in table and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Register ``param`` (a leaf tensor that requires grad, or None for an absent one)."""
        self._check_new_name("parameter", name, self._parameters)
        if param is not None and not _is_param(param):
            raise TypeError(
                f"parameter '{name}' must be a leaf Tensor with requires_grad=True "
                f"(use nn.Parameter(data)), got {param!r}"
            )
        self._parameters[name] = param
        self.__dict__.pop(name, None)

    def register_buffer(self, name, tensor, persistent=True):
        """Keep ``tensor`` (no gradient) as buffer ``name``: in ``buffers()`` and, unless
        ``persistent`` is False, in the module's state dict."""
        self._check_new_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            tensor = Tensor(np.asarray(tensor))
        self._buffers[name] = tensor
        non_persistent = self.__dict__.setdefault("_non_persistent", set())
        if persistent:
            non_persistent.discard(name)
        else:
            non_persistent.add(name)
        self.__dict__.pop(name, None)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name("module", name, self._modules)
        self._modules[name] = module
        self.__dict__.pop(name, None)

    # ---- traversal -------------------------------------------------------------------------------
    def named_modules(self, prefix="", _seen=None, remove_duplicate=True):
        """(dotted name, module) for this module and its descendants, depth first; a module
        reached twice is given once unless ``remove_duplicate`` is False (as PyTorch's)."""
        seen = set() if _seen is None else _seen
        if id(self) in seen:
            return
        seen.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(
                    f"{prefix}.{name}" if prefix else name, seen, remove_duplicate
                )
        if not remove_duplicate:
            # only the modules on the current path stay seen (a cycle would never end)
            seen.discard(id(self))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_tensors(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        if recurse:
            mods = self.named_modules(prefix, remove_duplicate=remove_duplicate)
        else:
            mods = [(prefix, self)]
        for mod_name, m in mods:
            for name, t in getattr(m, table).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mod_name}.{name}" if mod_name else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules appears once
        (under every name with ``remove_duplicate=False``, as PyTorch's)."""
        return self._named_tensors("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_tensors("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- training helpers -------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Clear the gradients of all parameters (to None by default, like PyTorch)."""
        _zero_grads(self.parameters(), set_to_none)

    def train(self, mode=True):
        """Set training mode (``mode`` a bool: a string such as ``"False"`` would be true)
        on this module and every submodule; returns the module."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: training mode is expected to be boolean, got {mode!r}")
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first, depth first) and then on this
        module, as PyTorch's (e.g. to initialise weights); returns this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ---- dtype and device: tapegrad computes in float64 on the CPU ------------------------------
    def double(self):
        """PyTorch's ``module.double()``: floating parameters and buffers as float64, which
        tapegrad's are already (a float32 buffer registered by hand is converted); returns
        the module."""
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None and b.dtype.kind == "f" and b.dtype != np.float64:
                    m._buffers[name] = b.double()
        return self

    def float(self):
        """``module.float()``: the same as ``double()``, as ``x.float()`` of a Tensor that
        requires grad is float64 (tapegrad differentiates float64 values only)."""
        return self.double()

    def cpu(self):
        """``module.cpu()``: the module itself (tapegrad computes on the CPU)."""
        return self

    def to(self, *args, device=None, dtype=None, non_blocking=False, memory_format=None):
        """``module.to(device)``, ``.to(dtype)``, ``.to(device, dtype)``, ``.to(tensor)``, as
        PyTorch's: returns the module.  The device must be the CPU and the dtype float64
        (tapegrad differentiates float64 values only: float32 parameters are refused).

        Examples:
            >>> import tapegrad as tg
            >>> m = tg.nn.Linear(2, 1)
            >>> m.to("cpu") is m, m.to(tg.float64) is m
            (True, True)
        """
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str) or type(a).__name__ == "device":
                device = a
            else:
                dtype = a
        if device is not None and str(getattr(device, "type", device)).split(":")[0] != "cpu":
            raise RuntimeError(
                f"Module.to({device!r}): tapegrad computes on the CPU only (device 'cpu')"
            )
        if dtype is None:
            return self
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"Module.to: {dtype!r} is not a dtype tapegrad knows") from None
        if dt.kind != "f":
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dt}"
            )
        if dt != np.float64:
            raise TypeError(
                f"Module.to({dt}): tapegrad differentiates float64 values only, so parameters "
                "cannot become float32 or float16; module.float() and module.double() keep "
                "them float64"
            )
        return self.double()

    def cuda(self, device=None):
        """Refused: tapegrad computes on the CPU."""
        raise RuntimeError("Module.cuda(): tapegrad computes on the CPU only; use module.cpu()")

    def half(self):
        """Refused: tapegrad differentiates float64 values only."""
        raise TypeError(_NOT_FLOAT64.format("half"))

    def bfloat16(self):
        """Refused: tapegrad differentiates float64 values only."""
        raise TypeError(_NOT_FLOAT64.format("bfloat16"))

    # ---- state ---------------------------------------------------------------------------------------
    def _named_state(self):
        """(dotted name, owning module, attribute name, Tensor) for every parameter and buffer
        that is not None, in state-dict order (a tensor shared by two modules under each name,
        and a submodule reached by two paths under both, as PyTorch's state dict)."""
        for mod_name, m in self.named_modules(remove_duplicate=False):
            skip = m.__dict__.get("_non_persistent", ())
            for table in (m._parameters, m._buffers):
                for name, t in table.items():
                    if t is not None and not (table is m._buffers and name in skip):
                        yield (f"{mod_name}.{name}" if mod_name else name), m, name, t

    def state_dict(self):
        """An ordered dict of dotted name -> NumPy copy of every parameter and buffer."""
        return OrderedDict(
            (key, np.array(t._v, dtype=t.dtype)) for key, _, _, t in self._named_state()
        )

    def _shape_mismatch(self, key, name, loaded_shape, shape):
        """The message for a state-dict value of the wrong shape (modules may explain more)."""
        return (
            f"size mismatch for {key}: copying a param with shape {loaded_shape} from "
            f"checkpoint, the shape in current model is {shape}"
        )

    def load_state_dict(self, state_dict, strict=True):
        """Copy values (NumPy arrays, Tensors or numbers) into the parameters and buffers in
        place: their Tensors stay the same objects, so optimizers keep working.  With
        ``strict`` (the default), missing or unexpected keys raise RuntimeError naming them; a
        shape mismatch always raises.  Nothing is copied when anything raises.  Returns
        ``(missing_keys, unexpected_keys)``, a named tuple with those fields as PyTorch's."""
        own = OrderedDict((key, (m, name, t)) for key, m, name, t in self._named_state())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(map(repr, missing)))
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(map(repr, unexpected)))
        values = {}
        for k, (m, name, t) in own.items():
            if k not in state_dict:
                continue
            v = np.asarray(state_dict[k]._v if isinstance(state_dict[k], Tensor) else state_dict[k])
            # (the cast would drop an imaginary part, read a date or a string as a number)
            refuse_non_real(state_dict[k], v.dtype, f"load_state_dict: state_dict[{k!r}]")
            v = np.array(v, dtype=t.dtype)
            if v.shape != t.shape:
                errors.append(m._shape_mismatch(k, name, v.shape, t.shape))
            values[k] = v
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        for k, v in values.items():
            _methods._set_value(own[k][2], float(v) if v.ndim == 0 else v)
        return _IncompatibleKeys(missing, unexpected)

    # ---- copying ------------------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        """A copy whose parameters and buffers are fresh leaves holding copies of the values
        (``requires_grad`` and the parameter mark kept, no graph and no ``.grad``, as PyTorch's
        ``Parameter.__deepcopy__``); a tensor or module shared inside stays shared in the copy.
        (Copying a tensor's handle would copy the tape it was recorded on.)"""
        for m in self.modules():
            for table in (m._parameters, m._buffers):
                for t in table.values():
                    if t is not None:
                        _creation.leaf_copy(t, memo)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    # ---- calling --------------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if (
            d.get("_forward_pre_hooks")
            or d.get("_forward_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
        ):
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- hooks -----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` before every ``forward``, as PyTorch's.

        ``args`` is the tuple of positional arguments (keywords go to ``forward`` unseen).
        The hook may return new arguments: a tuple, or a single value (wrapped in a tuple).
        With ``with_kwargs=True`` it is called as ``hook(module, args, kwargs)`` and may
        return a pair ``(new_args, new_kwargs)``.  Hooks run in registration order
        (``prepend=True`` puts this one first).  Returns a ``RemovableHandle``:
        ``handle.remove()`` unregisters the hook, and ``with handle:`` does on exit.

        Hooks are Python run when the module is called: inside ``tg.trace`` they run once, at
        recording (a replay does not call them again; what they change in the computation is
        recorded, their side effects are not repeated).  ``copy.deepcopy`` copies them with
        the module (a handle removes the hook from the module it came from only); pickling
        pickles them (a lambda cannot be pickled), as PyTorch's.

        Examples:
            >>> import tapegrad as tg
            >>> relu = tg.nn.ReLU()
            >>> h = relu.register_forward_pre_hook(lambda m, args: args[0] - 1.0)
            >>> relu(tg.tensor([0.5, 3.0]))
            tensor([0., 2.])
            >>> h.remove(); relu(tg.tensor([0.5, 3.0]))
            tensor([0.5000, 3.0000])
        """
        extra = ("_forward_pre_hooks_with_kwargs",)
        return _hooks.register(
            self,
            "register_forward_pre_hook",
            "_forward_pre_hooks",
            hook,
            prepend,
            extra,
            extra if with_kwargs else (),
        )

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Call ``hook(module, args, output)`` after every ``forward``, as PyTorch's.

        ``args`` are the positional arguments ``forward`` received (after the forward
        pre-hooks); a hook returning a value other than None replaces the output (the next
        hook and the caller see it).  With ``with_kwargs=True`` it is called as
        ``hook(module, args, kwargs, output)``.  With ``always_call=True`` it also runs when
        ``forward`` (or an earlier hook) raised, with ``output`` None: an error it raises then
        becomes a warning and the first error propagates.  ``prepend=True`` puts it before the
        hooks registered earlier.  Returns a ``RemovableHandle``.

        Typical uses are feature extraction and activation statistics; in a ``Sequential``,
        the hooks of a child run inside the parent's call.  Inside ``tg.trace`` a hook runs at
        recording only (see ``register_forward_pre_hook``).

        Examples:
            >>> import tapegrad as tg
            >>> net = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
            >>> features = {}
            >>> h = net[1].register_forward_hook(
            ...     lambda m, args, out: features.__setitem__("relu", out.detach()))
            >>> _ = net(tg.ones((2, 3))); features["relu"].shape
            (2, 4)
            >>> h.remove()
        """
        extra = ("_forward_hooks_with_kwargs", "_forward_hooks_always_called")
        flags = extra[:1] * bool(with_kwargs) + extra[1:] * bool(always_call)
        return _hooks.register(
            self, "register_forward_hook", "_forward_hooks", hook, prepend, extra, flags
        )

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are
        complete in a backward pass, before they flow into the module, as PyTorch's.

        ``grad_output`` has one entry per output (a Tensor output counts as one): the
        gradient, or None for an output that is not a Tensor, does not require grad or
        received no gradient.  The hook may return a replacement: a tuple of the same length
        ; it flows into the module.  Under
        ``create_graph=True`` the gradients are graph-carrying Tensors and a replacement
        computed from them is differentiated further.  Returns a ``RemovableHandle``.

        Only the outputs the module returns, a Tensor or a tuple of Tensors, are watched (a
        warning says so for other outputs, as PyTorch's).  With backward hooks, the module's
        ``forward`` receives a new Tensor (same value) for each input that requires grad, and
        the caller one for each output, as PyTorch's views; modifying an input in place inside
        ``forward`` raises.  Refused inside ``tg.trace`` (as tensor hooks are: Python in
        backward cannot be replayed).

        Examples:
            >>> import tapegrad as tg
            >>> lin = tg.nn.Linear(2, 1)
            >>> h = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0.0,))
            >>> lin(tg.ones((1, 2))).sum().backward(); lin.weight.grad
            tensor([[0., 0.]])
        """
        return _hooks.register(
            self, "register_full_backward_pre_hook", "_backward_pre_hooks", hook, prepend
        )

    def register_full_backward_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's
        inputs have been computed in a backward pass, as PyTorch's.

        ``grad_input`` has one entry per positional argument of the call (keywords are
        ignored): the gradient of a Tensor argument (zeros for one that does not require grad
        or received none), None for other arguments; ``grad_output`` is as in
        ``register_full_backward_pre_hook``.  The hook may return a tuple of the same length
        that replaces ``grad_input``: what flows on to the inputs (a None entry stops the
        gradient there).  When no input requires grad (a first layer called on data), the
        hook fires as soon as the outputs' gradients are known, with ``grad_input`` all None,
        and must return None (with a warning, as PyTorch's).  Under ``create_graph=True`` it
        receives graph-carrying Tensors.  Returns a ``RemovableHandle``.

        See ``register_full_backward_pre_hook`` for the outputs watched, the inputs passed to
        ``forward`` and ``tg.trace``.

        Examples:
            >>> import tapegrad as tg
            >>> tanh = tg.nn.Tanh()
            >>> h = tanh.register_full_backward_hook(
            ...     lambda m, gi, go: tuple(g.clamp(-0.1, 0.1) for g in gi))  # clip per layer
            >>> x = tg.tensor([0.0, 3.0], requires_grad=True)
            >>> tanh(x).sum().backward(); x.grad
            tensor([0.1000, 0.0099])
        """
        return _hooks.register(
            self, "register_full_backward_hook", "_backward_hooks", hook, prepend
        )

    def extra_repr(self):
        return ""

    def __repr__(self):
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not self._modules:
            return head + ")"
        lines = [head]
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


_IncompatibleKeys = namedtuple("_IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _zero_grads(params, set_to_none=True):
    for p in params:
        if set_to_none:
            p.grad = None
        elif p.grad is not None:
            if p.grad.requires_grad:  # (a backward with create_graph: cut from its graph
                p.grad.detach_()  # first, as PyTorch's, not zeroed on it)
            p.grad.zero_()


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight of shape (out_features, in_features), as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> lin = tg.nn.Linear(2, 1)
        >>> lin.weight = tg.nn.Parameter([[1.0, 2.0]]); lin.bias = tg.nn.Parameter([0.5])
        >>> y = lin(tg.tensor([[3.0, 4.0]])); y
        tensor([[11.5000]], grad_fn=<AddBackward0>)
        >>> y.sum().backward(); lin.weight.grad, lin.bias.grad
        (tensor([[3., 4.]]), tensor([1.]))
    """

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
        rng = _creation.rng()
        self.weight = Parameter(rng.uniform(-bound, bound, (self.out_features, self.in_features)))
        if bias:
            self.bias = Parameter(rng.uniform(-bound, bound, self.out_features))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        params = self._parameters
        return _ops.linear(x, params["weight"], params["bias"])

    def _shape_mismatch(self, key, name, loaded_shape, shape):
        msg = super()._shape_mismatch(key, name, loaded_shape, shape)
        if name == "weight" and len(shape) == 2 and tuple(loaded_shape) == tuple(shape)[::-1]:
            msg += (
                f". nn.Linear's weight layout changed to PyTorch's (out_features, "
                f"in_features) = {shape}; this checkpoint has the old (in_features, "
                f"out_features) layout {loaded_shape}: transpose it "
                f"(state_dict[{key!r}] = state_dict[{key!r}].T) before loading"
            )
        return msg

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self._parameters['bias'] is not None}"
        )


class Sequential(Module):
    """Modules applied in order; indexable, iterable and appendable.

    Examples:
        >>> import tapegrad as tg
        >>> seq = tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh())
        >>> len(seq), seq(tg.tensor([-1.0, 0.5]))
        (2, tensor([0.0000, 0.4621]))
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, i):
        if isinstance(i, slice):
            # the slice keeps the modules' names, so its state dict keys are the original's
            # ("1.weight" in seq[1:]), as PyTorch's
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[_index(i, len(self), "Sequential")]

    def __setitem__(self, i, module):
        """Replace the module at position ``i`` (keeping its name)."""
        key = list(self._modules)[_index(i, len(self), "Sequential")]
        self.add_module(key, module)

    def _renumber(self, mods):
        """Register ``mods`` as ``"0"``, ``"1"``, ... (PyTorch renumbers after a deletion or
        an insertion, so names stay positions)."""
        self._modules.clear()
        for j, m in enumerate(mods):
            self.add_module(str(j), m)

    def __delitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            del mods[i]
        else:
            del mods[_index(i, len(mods), "Sequential")]
        self._renumber(mods)

    def insert(self, index, module):
        """Insert ``module`` before position ``index``; returns the Sequential."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.insert: {type(module).__name__} is not a Module")
        n = len(self)
        if not -n <= int(index) <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {n}")
        mods = list(self._modules.values())
        mods.insert(int(index), module)
        self._renumber(mods)
        return self

    def extend(self, modules):
        """Append every module of the iterable ``modules``; returns the Sequential."""
        for m in modules:
            self.append(m)
        return self

    def pop(self, i):
        """Remove and return the module at position ``i``."""
        m = self[i]
        del self[i]
        return m


def _index(i, n, what):
    """``i`` as a position in 0..n-1 (negative counts from the end), as PyTorch's lists."""
    i = int(i.__index__())
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for a {what} of length {n}")
    return i % n


class ModuleList(Module):
    """A list of modules registered as submodules named ``"0"``, ``"1"``, ... (so their
    parameters are ``"0.weight"`` ..., ``"layers.0.weight"`` under an attribute ``layers``).
    Unlike ``Sequential`` it has no ``forward``: the owner decides how to call them.

    Examples:
        >>> import tapegrad as tg
        >>> class Net(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layers = tg.nn.ModuleList([tg.nn.Linear(2, 2) for _ in range(2)])
        >>> [name for name, _ in Net().named_parameters()]
        ['layers.0.weight', 'layers.0.bias', 'layers.1.weight', 'layers.1.bias']
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            del mods[idx]
        else:
            del mods[_index(idx, len(mods), "ModuleList")]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return type(self)([*self, *other])

    def append(self, module):
        """Add ``module`` at the end; returns the list."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append every module of the iterable ``modules``; returns the list."""
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        mods = list(self._modules.values())
        mods.insert(int(index), module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def pop(self, idx=-1):
        """Remove and return the module at ``idx``."""
        m = self[idx]
        del self[idx]
        return m

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "ModuleList has no forward(): iterate over it and call its modules"
        )


class ModuleDict(Module):
    """An ordered dict of modules registered under their keys (``"blocks.enc.weight"`` ...).

    Examples:
        >>> import tapegrad as tg
        >>> d = tg.nn.ModuleDict({"enc": tg.nn.Linear(2, 1), "act": tg.nn.ReLU()})
        >>> list(d.keys()), [name for name, _ in d.named_parameters()]
        (['enc', 'act'], ['enc.weight', 'enc.bias'])
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def add_module(self, name, module):
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string, got {type(name).__name__}")
        super().add_module(name, module)

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove the module under ``key`` and return it."""
        return self._modules.pop(key)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add the (key, module) pairs of a mapping or an iterable of pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for j, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{j} should be a (key, module) pair"
                )
            self[pair[0]] = pair[1]

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): call its modules by key")


def _as_param(value):
    """A parameter for a ParameterList/Dict: a leaf that requires grad as it is, any other
    Tensor or array wrapped in ``Parameter`` (a copy)."""
    if value is None or _is_param(value):
        return value
    return Parameter(value)


class ParameterList(Module):
    """A list of parameters registered under ``"0"``, ``"1"``, ...; a Tensor that is not
    already a parameter (a leaf that requires grad) is made one with ``Parameter``.

    Examples:
        >>> import tapegrad as tg
        >>> class Net(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.ws = tg.nn.ParameterList([tg.zeros(2), tg.ones(1)])
        >>> [name for name, _ in Net().named_parameters()]
        ['ws.0', 'ws.1']
    """

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx, param):
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), _as_param(param))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        """Add ``value`` (made a parameter if it is not one) at the end; returns the list."""
        self.register_parameter(str(len(self)), _as_param(value))
        return self

    def extend(self, values):
        """Append every value of the iterable ``values``; returns the list."""
        if isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got Tensor"
            )
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return ", ".join(f"({k}): shape {tuple(p.shape)}" for k, p in self._parameters.items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward()")


class ParameterDict(Module):
    """An ordered dict of parameters registered under their keys (``"params.scale"`` ...);
    a Tensor that is not already a parameter is made one with ``Parameter``.

    Examples:
        >>> import tapegrad as tg
        >>> d = tg.nn.ParameterDict({"scale": tg.ones(2), "shift": tg.zeros(2)})
        >>> list(d.keys()), d["scale"]
        (['scale', 'shift'], tensor([1., 1.], requires_grad=True))
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"parameter name should be a string, got {type(key).__name__}")
        self.register_parameter(key, _as_param(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def clear(self):
        """Remove every parameter."""
        self._parameters.clear()

    def pop(self, key):
        """Remove the parameter under ``key`` and return it."""
        return self._parameters.pop(key)

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        """Add the (key, value) pairs of a mapping or an iterable of pairs.  As PyTorch's, a
        plain dict is added in sorted key order (an OrderedDict, ParameterDict or sequence of
        pairs in its own order), so ``parameters()`` and the optimizer's numbering agree."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = parameters.items()
        elif hasattr(parameters, "items"):
            pairs = sorted(parameters.items())
        else:
            pairs = parameters
        for j, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(
                    f"ParameterDict update sequence element #{j} should be a (key, value) pair"
                )
            self[pair[0]] = pair[1]

    def extra_repr(self):
        return ", ".join(f"({k}): shape {tuple(p.shape)}" for k, p in self._parameters.items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict has no forward()")


class _Activation(Module):
    """A layer applying ``fn(input, **hyper)``, with the hyper-parameters given at construction
    (``inplace=True`` is refused there, as the functions refuse it)."""

    fn = None

    def __init__(self, **hyper):
        super().__init__()
        if hyper.pop("inplace", False):
            raise TypeError(
                f"{type(self).__name__}: inplace=True is not supported (tapegrad records a new "
                "value instead of overwriting the input); leave inplace=False"
            )
        for name, value in hyper.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_hyper", tuple(hyper))

    def forward(self, input):
        return type(self).fn(input, **{k: getattr(self, k) for k in self._hyper})

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in self._hyper)


class ReLU(_Activation):
    """max(x, 0) elementwise, as a layer (for ``Sequential``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReLU()(tg.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """

    fn = staticmethod(F.relu)


class Tanh(_Activation):
    """tanh elementwise, as a layer (for ``Sequential``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.5], requires_grad=True)
        >>> y = tg.nn.Tanh()(x); y
        tensor([0.4621], grad_fn=<TanhBackward0>)
        >>> y.sum().backward(); x.grad          # 1 - tanh(x)**2
        tensor([0.7864])
    """

    fn = staticmethod(F.tanh)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x)) elementwise, as a layer (for ``Sequential``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0], requires_grad=True)
        >>> y = tg.nn.Sigmoid()(x); y
        tensor([0.5000], grad_fn=<SigmoidBackward0>)
        >>> y.sum().backward(); x.grad          # sigmoid(x) (1 - sigmoid(x))
        tensor([0.2500])
    """

    fn = staticmethod(F.sigmoid)


class GELU(_Activation):
    """Gaussian error linear unit, as a layer (``approximate`` 'none' or 'tanh').

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.GELU()(tg.tensor([-1.0, 2.0]))
        tensor([-0.1587, 1.9545])
    """

    fn = staticmethod(F.gelu)

    def __init__(self, approximate="none"):
        super().__init__(approximate=approximate)


class ELU(_Activation):
    """x for x > 0, else alpha (exp(x) - 1), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ELU()(tg.tensor([-1.0, 2.0]))
        tensor([-0.6321, 2.0000])
    """

    fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class SELU(_Activation):
    """Scaled ELU with the self-normalising constants, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.SELU()(tg.tensor([-1.0, 2.0]))
        tensor([-1.1113, 2.1014])
    """

    fn = staticmethod(F.selu)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class CELU(_Activation):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CELU(2.0)(tg.tensor([-1.0, 2.0]))
        tensor([-0.7869, 2.0000])
    """

    fn = staticmethod(F.celu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class Softplus(_Activation):
    """log(1 + exp(beta x)) / beta (x above ``threshold``), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softplus()(tg.tensor([-1.0, 2.0]))
        tensor([0.3133, 2.1269])
    """

    fn = staticmethod(F.softplus)

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(beta=beta, threshold=threshold)


class SiLU(_Activation):
    """x * sigmoid(x), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.SiLU()(tg.tensor([-1.0, 2.0]))
        tensor([-0.2689, 1.7616])
    """

    fn = staticmethod(F.silu)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Mish(_Activation):
    """x * tanh(softplus(x)), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Mish()(tg.tensor([-1.0, 2.0]))
        tensor([-0.3034, 1.9440])
    """

    fn = staticmethod(F.mish)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Hardtanh(_Activation):
    """x clamped to [min_val, max_val], as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Hardtanh()(tg.tensor([-2.0, 0.5]))
        tensor([-1.0000, 0.5000])
    """

    fn = staticmethod(F.hardtanh)

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class ReLU6(_Activation):
    """min(max(x, 0), 6), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.ReLU6()(tg.tensor([-1.0, 8.0]))
        tensor([0., 6.])
    """

    fn = staticmethod(F.relu6)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Hardsigmoid(_Activation):
    """min(max(x + 3, 0), 6) / 6, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Hardsigmoid()(tg.tensor([-4.0, 1.5]))
        tensor([0.0000, 0.7500])
    """

    fn = staticmethod(F.hardsigmoid)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Hardswish(_Activation):
    """x min(max(x + 3, 0), 6) / 6, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Hardswish()(tg.tensor([1.0, 4.0]))
        tensor([0.6667, 4.0000])
    """

    fn = staticmethod(F.hardswish)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Softsign(_Activation):
    """x / (1 + |x|), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softsign()(tg.tensor([-1.0, 3.0]))
        tensor([-0.5000, 0.7500])
    """

    fn = staticmethod(F.softsign)


class Tanhshrink(_Activation):
    """x - tanh(x), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Tanhshrink()(tg.tensor([-1.0, 2.0]))
        tensor([-0.2384, 1.0360])
    """

    fn = staticmethod(F.tanhshrink)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LogSigmoid()(tg.tensor([-1.0, 2.0]))
        tensor([-1.3133, -0.1269])
    """

    fn = staticmethod(F.logsigmoid)


class GLU(_Activation):
    """a * sigmoid(b) for the halves a, b of the input along ``dim``, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.GLU()(tg.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """

    fn = staticmethod(F.glu)

    def __init__(self, dim=-1):
        super().__init__(dim=dim)


class LeakyReLU(_Activation):
    """x for x > 0, else ``negative_slope`` * x, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LeakyReLU(0.1)(tg.tensor([-2.0, 3.0]))
        tensor([-0.2000, 3.0000])
    """

    fn = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(negative_slope=negative_slope, inplace=inplace)


class Softmax(Module):
    """Softmax along ``dim``, as a layer: scores to probabilities.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softmax(dim=-1)(tg.tensor([[1.0, 1.0]]))
        tensor([[0.5000, 0.5000]])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim  # None: as F.softmax (the last axis up to 2-D; required beyond)

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    """Log-softmax along ``dim``, as a layer (pairs with a negative log-likelihood).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LogSoftmax(dim=-1)(tg.tensor([[1.0, 1.0]]))
        tensor([[-0.6931, -0.6931]])
    """

    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Identity(Module):
    """Returns its input (a placeholder layer); constructor arguments are ignored, as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Identity()(tg.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Flattens the axes ``start_dim`` .. ``end_dim`` (inclusive) into one.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Flatten()(tg.zeros(2, 3, 4)).shape
        (2, 12)
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        x = _ops.tensor_of(input)
        if x.ndim == 0:
            return _ops.reshape(x, (1,))
        start, end = (
            _ops.normalize_axes(d, x.ndim, "Flatten")[0] for d in (self.start_dim, self.end_dim)
        )
        if start > end:
            raise ValueError(
                f"Flatten: start_dim {self.start_dim} comes after end_dim {self.end_dim} for "
                f"an input of {x.ndim} dims"
            )
        shape = x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :]
        return _ops.reshape(x, shape)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """Zeroes each element with probability ``p`` and scales the rest by 1 / (1 - p) while the
    module is training; the identity after ``eval()``.  (A ``tg.trace`` recording refuses a
    training-mode dropout.)

    Examples:
        >>> import tapegrad as tg
        >>> drop = tg.nn.Dropout(0.5)
        >>> _ = tg.manual_seed(0)
        >>> drop(tg.ones(4))
        tensor([0., 2., 2., 2.])
        >>> drop.eval()(tg.ones(4))
        tensor([1., 1., 1., 1.])
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F._check_p("Dropout", p)
        F._no_inplace("dropout", inplace)
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class LayerNorm(Module):
    """Layer normalisation over the trailing ``normalized_shape`` axes, with a learnable
    ``weight`` (ones) and ``bias`` (zeros) of that shape when ``elementwise_affine``.

    Examples:
        >>> import tapegrad as tg
        >>> ln = tg.nn.LayerNorm(2)
        >>> ln(tg.tensor([[1.0, 3.0]]))
        tensor([[-1.0000,  1.0000]], grad_fn=<AddBackward0>)
        >>> [name for name, _ in ln.named_parameters()]
        ['weight', 'bias']
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        params = self._parameters
        return F.layer_norm(
            input, self.normalized_shape, params["weight"], params["bias"], self.eps
        )

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Group normalisation of (N, C, ...) inputs (``F.group_norm``) with a learnable
    per-channel ``weight`` (ones) and ``bias`` (zeros) when ``affine``.

    Examples:
        >>> import tapegrad as tg
        >>> gn = tg.nn.GroupNorm(2, 4)
        >>> gn(tg.tensor([[1.0, 3.0, 0.0, 4.0]]))
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]], grad_fn=<AddBackward0>)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if device not in (None, "cpu") or dtype not in (None, "float64", np.float64):
            raise TypeError(
                "GroupNorm: only device=None/'cpu' and dtype=None/float64 are supported, got "
                f"device={device!r}, dtype={dtype!r}"
            )
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = int(num_groups)
        self.num_channels = int(num_channels)
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(np.ones(self.num_channels))
            self.bias = Parameter(np.zeros(self.num_channels))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        params = self._parameters
        return F.group_norm(input, self.num_groups, params["weight"], params["bias"], self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class CosineSimilarity(Module):
    """``F.cosine_similarity(x1, x2, dim, eps)`` as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CosineSimilarity(dim=0)(tg.tensor([1.0, 0.0]), tg.tensor([1.0, 1.0]))
        tensor(0.7071)
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self):
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """``F.pairwise_distance(x1, x2, p, eps, keepdim)`` as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.PairwiseDistance(p=1.0, eps=0.0)(tg.tensor([[1.0, 2.0]]), tg.tensor([[0.0, 0.0]]))
        tensor([3.])
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self):
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"


class _BatchNorm(Module):
    dims = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features = int(num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(np.ones(self.num_features))
            if bias:
                self.bias = Parameter(np.zeros(self.num_features))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(self.num_features))
            self.register_buffer("running_var", np.ones(self.num_features))
            self.register_buffer("num_batches_tracked", np.asarray(0, dtype=np.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            for name, value in (("running_mean", 0.0), ("running_var", 1.0)):
                F._assign(self._buffers[name], np.full(self.num_features, value))
            F._assign(self._buffers["num_batches_tracked"], 0)

    def forward(self, input):
        x = _ops.tensor_of(input)
        if x.ndim not in self.dims:
            raise ValueError(
                f"{type(self).__name__}: expected "
                + " or ".join(f"{d}D" for d in self.dims)
                + f" input (got {x.ndim}D input)"
            )
        buffers, params = self._buffers, self._parameters
        tracked = buffers["num_batches_tracked"]
        update = self.training and self.track_running_stats and tracked is not None
        momentum = 0.0 if self.momentum is None else self.momentum
        if update and self.momentum is None:  # a cumulative moving average
            momentum = 1.0 / (int(tracked._v) + 1)
        use_batch = self.training or buffers["running_mean"] is None
        keep = not self.training or self.track_running_stats
        out = F.batch_norm(
            x,
            buffers["running_mean"] if keep else None,
            buffers["running_var"] if keep else None,
            params["weight"],
            params["bias"],
            use_batch,
            momentum,
            self.eps,
        )
        if update:
            F._assign(tracked, int(tracked._v) + 1)
        return out

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs per channel C, as PyTorch: batch
    statistics (biased variance) while training, which also update the ``running_mean`` /
    ``running_var`` buffers (unbiased variance, ``momentum``; None for a cumulative average);
    the running statistics after ``eval()``.  The buffers are in ``state_dict()``.

    Examples:
        >>> import tapegrad as tg
        >>> bn = tg.nn.BatchNorm1d(2)
        >>> bn(tg.tensor([[1.0, 0.0], [3.0, 4.0]]))
        tensor([[-1.0000, -1.0000],
                [1.0000, 1.0000]], grad_fn=<AddBackward0>)
        >>> bn.running_mean, bn.running_var
        (tensor([0.2000, 0.2000]), tensor([1.1000, 1.7000]))
        >>> list(bn.state_dict())
        ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs per channel C (see ``BatchNorm1d``).

    Examples:
        >>> import tapegrad as tg
        >>> bn = tg.nn.BatchNorm2d(1)
        >>> bn(tg.tensor([[[[1.0, 3.0]]]])).detach()
        tensor([[[[-1.0000,  1.0000]]]])
    """

    dims = (4,)


class _InstanceNorm(_BatchNorm):
    dims = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        name = type(self).__name__
        if device not in (None, "cpu") or dtype not in (None, "float64", np.float64):
            raise TypeError(
                f"{name}: only device=None/'cpu' and dtype=None/float64 are supported, got "
                f"device={device!r}, dtype={dtype!r}"
            )
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias)

    def forward(self, input):
        x = _ops.tensor_of(input)
        name = type(self).__name__
        if x.ndim not in self.dims:
            raise ValueError(
                f"{name}: expected {self.dims[0]}D (unbatched) or {self.dims[1]}D (batched) "
                f"input, got {x.ndim}D input of shape {x.shape}"
            )
        unbatched = x.ndim == self.dims[0]
        channels = x.shape[0 if unbatched else 1]
        if channels != self.num_features:
            if self.affine or self.track_running_stats:
                raise ValueError(
                    f"{name}: expected input's size at dim={0 if unbatched else 1} to match "
                    f"num_features ({self.num_features}), but got: {channels}."
                )
            warnings.warn(
                f"{name}: input's size at dim={0 if unbatched else 1} ({channels}) does not "
                f"match num_features ({self.num_features}); the layer has no parameters or "
                f"statistics of that size, so it normalises anyway (as PyTorch)",
                stacklevel=2,
            )
        if unbatched:
            x = _ops.reshape(x, (1,) + x.shape)
        buffers, params = self._buffers, self._parameters
        out = F.instance_norm(
            x,
            buffers["running_mean"],
            buffers["running_var"],
            params["weight"],
            params["bias"],
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return _ops.reshape(out, out.shape[1:]) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) inputs (PyTorch's
    ``nn.InstanceNorm1d``; see ``F.instance_norm``): each sample's channel is normalised over
    L.  ``affine=True`` adds a per-channel ``weight`` (ones) and ``bias`` (zeros);
    ``track_running_stats=True`` keeps ``running_mean`` / ``running_var`` buffers, updated
    while training and used after ``eval()``.  Both default to False, as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.InstanceNorm1d(2)(tg.tensor([[[1.0, 3.0], [0.0, 4.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
        >>> list(tg.nn.InstanceNorm1d(2, affine=True, track_running_stats=True).state_dict())
        ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) inputs (PyTorch's
    ``nn.InstanceNorm2d``; see ``InstanceNorm1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.InstanceNorm2d(1)(tg.tensor([[[[1.0, 3.0]]]]))
        tensor([[[[-1.0000,  1.0000]]]])
    """

    dims = (3, 4)


class Bilinear(Module):
    """``y = x1 @ weight[k] @ x2 + bias[k]`` (PyTorch's ``nn.Bilinear``; see
    ``F.bilinear``): weight (out_features, in1_features, in2_features) and bias
    (out_features,), both U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> bl = tg.nn.Bilinear(3, 4, 2)
        >>> bl.weight.shape, bl(tg.zeros(5, 3), tg.zeros(5, 4)).shape
        ((2, 3, 4), (5, 2))
    """

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None
    ):
        super().__init__()
        if device not in (None, "cpu") or dtype not in (None, "float64", np.float64):
            raise TypeError(
                "Bilinear: only device=None/'cpu' and dtype=None/float64 are supported, got "
                f"device={device!r}, dtype={dtype!r}"
            )
        self.in1_features = int(in1_features)
        self.in2_features = int(in2_features)
        self.out_features = int(out_features)
        if self.in1_features <= 0:
            raise ValueError(f"Bilinear: in1_features must be > 0, but got {self.in1_features}")
        bound = 1.0 / math.sqrt(self.in1_features)
        rng = _creation.rng()
        shape = (self.out_features, self.in1_features, self.in2_features)
        self.weight = Parameter(rng.uniform(-bound, bound, shape))
        if bias:
            self.bias = Parameter(rng.uniform(-bound, bound, self.out_features))
        else:
            self.register_parameter("bias", None)

    def forward(self, input1, input2):
        params = self._parameters
        return F.bilinear(input1, input2, params["weight"], params["bias"])

    def extra_repr(self):
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self._parameters['bias'] is not None}"
        )


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim`` (drawn from
    N(0, 1), as PyTorch; the ``padding_idx`` row zero, and it gets no gradient).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> emb = tg.nn.Embedding(10, 3, padding_idx=0)
        >>> emb(np.array([[0, 2], [4, 0]])).shape
        (2, 2, 3)
        >>> emb.weight[0]
        tensor([0., 0., 0.], grad_fn=<ViewBackward0>)
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        _weight=None,
        _freeze=False,
    ):
        super().__init__()
        if _freeze:
            raise TypeError(
                "Embedding: _freeze=True is not supported; call emb.weight.requires_grad_(False)"
            )
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError("Embedding: padding_idx must be within num_embeddings")
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        F._embedding_options("Embedding", max_norm, scale_grad_by_freq, sparse)
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            w = _creation.rng().standard_normal(shape)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = np.asarray(_weight._v if isinstance(_weight, Tensor) else _weight)
            if w.shape != shape:
                raise ValueError(f"Embedding: _weight has shape {w.shape}, expected {shape}")
        self.weight = Parameter(w)

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        """An Embedding whose weight is a copy of the 2-D ``embeddings`` (its ``padding_idx``
        row kept as given), frozen unless ``freeze`` is False, as PyTorch's."""
        w = np.array(embeddings._v if isinstance(embeddings, Tensor) else embeddings)
        if w.ndim != 2:
            raise ValueError(
                f"Embedding.from_pretrained: embeddings must be 2-dimensional, got shape {w.shape}"
            )
        emb = cls(
            w.shape[0],
            w.shape[1],
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            _weight=w,
        )
        emb.weight.requires_grad_(not freeze)
        return emb

    def _options(self):
        return self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse

    def forward(self, input):
        return F.embedding(input, self._parameters["weight"], self.padding_idx, *self._options())

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


# ---- losses ---------------------------------------------------------------------------------------


class _Loss(Module):
    reductions = F._REDUCTIONS

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        F._check_reduction(type(self).__name__, reduction, size_average, reduce, self.reductions)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        if isinstance(weight, str):
            raise TypeError(
                f"{type(self).__name__}: weight={weight!r}: the first argument is the weight "
                f"(as in PyTorch); pass reduction={weight!r} by keyword"
            )
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of logits against integer classes or class probabilities, as a
    loss module (see ``F.cross_entropy``: ``weight``, ``ignore_index``, ``label_smoothing``;
    ``reduction`` 'mean', 'sum' or 'none').

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> x = tg.tensor([[0.0, 0.0]], requires_grad=True)
        >>> loss = tg.nn.CrossEntropyLoss()(x, np.array([1])); loss   # log 2
        tensor(0.6931, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # softmax(x) - onehot(target)
        tensor([[0.5000, -0.5000]])
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index=-100,
        reduce=None,
        reduction="mean",
        label_smoothing=0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            self._buffers["weight"],
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at integer classes, as a loss module
    (see ``F.nll_loss``).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.nn.NLLLoss()(tg.tensor([[-0.5, -1.0], [-2.0, -0.1]]), np.array([0, 1]))
        tensor(0.3000)
    """

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(
            input,
            target,
            self._buffers["weight"],
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class MSELoss(_Loss):
    """Mean squared error, as a loss module (``reduction`` 'mean', 'sum' or 'none').

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 3.0], requires_grad=True)
        >>> loss = tg.nn.MSELoss()(x, tg.tensor([0.0, 0.0])); loss
        tensor(5., grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # 2 (x - target) / n
        tensor([1., 3.])
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, as a loss module (``reduction`` 'mean', 'sum' or 'none').

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.L1Loss()(tg.tensor([1.0, 3.0]), tg.tensor([0.0, 0.0]))
        tensor(2.)
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold ``beta``, as a loss module (see ``F.smooth_l1_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.SmoothL1Loss()(tg.tensor([0.5, 3.0]), tg.tensor([0.0, 0.0]))
        tensor(1.3125)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``, as a loss module (see ``F.huber_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.HuberLoss(delta=2.0)(tg.tensor([0.5, 3.0]), tg.tensor([0.0, 0.0]))
        tensor(2.0625)
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target, as a loss module (``reduction``
    'mean', 'batchmean', 'sum' or 'none'; see ``F.kl_div``).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> loss = tg.nn.KLDivLoss(reduction="batchmean")
        >>> loss(tg.tensor([[np.log(0.5), np.log(0.5)]]), tg.tensor([[0.25, 0.75]]))
        tensor(0.1308)
    """

    reductions = ("mean", "batchmean", "sum", "none")

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities, as a loss module (``reduction`` 'mean', 'sum'
    or 'none').

    Examples:
        >>> import tapegrad as tg
        >>> p = tg.tensor([0.5], requires_grad=True)
        >>> loss = tg.nn.BCELoss()(p, tg.tensor([1.0])); loss           # -log(0.5)
        tensor(0.6931, grad_fn=<MulBackward0>)
        >>> loss.backward(); p.grad             # -1 / p
        tensor([-2.])
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(
            input, target, self._buffers["weight"], reduction=self.reduction
        )


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid + binary cross-entropy on logits, as a loss module (``weight``, ``pos_weight``,
    ``reduction``; see ``F.binary_cross_entropy_with_logits``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.BCEWithLogitsLoss()(tg.tensor([1.0, -1.0]), tg.tensor([1.0, 0.0]))
        tensor(0.3133)
    """

    def __init__(
        self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input,
            target,
            self._buffers["weight"],
            reduction=self.reduction,
            pos_weight=self._buffers["pos_weight"],
        )


class MarginRankingLoss(_Loss):
    """max(0, -target (x1 - x2) + margin), as a loss module (PyTorch's
    ``nn.MarginRankingLoss``; see ``F.margin_ranking_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.MarginRankingLoss(margin=0.5)(tg.tensor([1.0, 0.0]), tg.tensor([0.0, 0.5]),
        ...                                     tg.tensor([1.0, 1.0]))
        tensor(0.5000)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1, as a loss module (PyTorch's
    ``nn.HingeEmbeddingLoss``; see ``F.hinge_embedding_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.HingeEmbeddingLoss()(tg.tensor([0.3, 0.3]), tg.tensor([1.0, -1.0]))
        tensor(0.5000)
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)), as a loss module (PyTorch's ``nn.SoftMarginLoss``; see
    ``F.soft_margin_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.SoftMarginLoss()(tg.tensor([0.0]), tg.tensor([1.0]))
        tensor(0.6931)
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1, as a loss
    module (PyTorch's ``nn.CosineEmbeddingLoss``; see ``F.cosine_embedding_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.CosineEmbeddingLoss()(tg.tensor([[1.0, 0.0]]), tg.tensor([[0.0, 1.0]]),
        ...                             tg.tensor([1.0]))
        tensor(1.)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss, as a loss module (PyTorch's ``nn.MultiMarginLoss``: ``p`` 1 or
    2, ``margin``, per-class ``weight``; see ``F.multi_margin_loss``).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.nn.MultiMarginLoss()(tg.tensor([[0.1, 0.2, 0.4, 0.8]]), np.array([3]))
        tensor(0.3250)
    """

    def __init__(
        self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"
    ):
        if p not in (1, 2) or isinstance(p, bool):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p!r}")
        if weight is not None and np.ndim(_ops.value_of(weight)) != 1:
            raise ValueError("MultiMarginLoss: weight must be a 1D tensor (one per class)")
        super().__init__(weight, size_average, reduce, reduction)
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(
            input,
            target,
            p=self.p,
            margin=self.margin,
            weight=self._buffers["weight"],
            reduction=self.reduction,
        )


class TripletMarginLoss(_Loss):
    """max(0, d(a, p) - d(a, n) + margin) with the p-norm distance, as a loss module
    (PyTorch's ``nn.TripletMarginLoss``; see ``F.triplet_margin_loss``).

    Examples:
        >>> import tapegrad as tg
        >>> loss = tg.nn.TripletMarginLoss(eps=0.0)
        >>> loss(tg.tensor([[0.0, 0.0]]), tg.tensor([[3.0, 4.0]]), tg.tensor([[1.0, 0.0]]))
        tensor(5.)
    """

    def __init__(
        self,
        margin=1.0,
        p=2.0,
        eps=1e-6,
        swap=False,
        size_average=None,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


# ---- more activations ----------------------------------------------------------------------------


class Softmin(Module):
    """Softmin along ``dim`` (softmax of -x), as a layer (PyTorch's ``nn.Softmin``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softmin(dim=-1)(tg.tensor([[0.0, 1.0]]))
        tensor([[0.7311, 0.2689]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softshrink(_Activation):
    """x -+ lambd outside [-lambd, lambd], 0 inside, as a layer (PyTorch's ``nn.Softshrink``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softshrink(1.0)(tg.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.,  0.,  2.])
    """

    fn = staticmethod(F.softshrink)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__(lambd=lambd)


class Hardshrink(_Activation):
    """x where |x| > lambd, else 0, as a layer (PyTorch's ``nn.Hardshrink``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Hardshrink(1.0)(tg.tensor([-2.0, 0.5, 3.0]))
        tensor([-2.,  0.,  3.])
    """

    fn = staticmethod(F.hardshrink)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__(lambd=lambd)


class Threshold(_Activation):
    """x where x > threshold, else value, as a layer (PyTorch's ``nn.Threshold``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Threshold(0.0, -1.0)(tg.tensor([-2.0, 3.0]))
        tensor([-1.,  3.])
    """

    fn = staticmethod(F.threshold)

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(threshold=threshold, value=value, inplace=inplace)


class RReLU(Module):
    """Randomized leaky ReLU (PyTorch's ``nn.RReLU``): random slopes in U(lower, upper) on the
    negative side while training, the mean slope (lower + upper) / 2 after ``eval()``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.RReLU(0.1, 0.3).eval()(tg.tensor([-3.0, 2.0]))
        tensor([-0.6000, 2.0000])
    """

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        F._no_inplace("rrelu", inplace)
        self.lower = lower
        self.upper = upper

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}"


class PReLU(Module):
    """Leaky ReLU with a learnable negative slope (PyTorch's ``nn.PReLU``): ``num_parameters``
    slopes (1, or one per channel of dim 1), initialised to ``init``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.PReLU()
        >>> m(tg.tensor([-2.0, 3.0]))
        tensor([-0.5000, 3.0000], grad_fn=<AddBackward0>)
        >>> list(m.state_dict())
        ['weight']
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        _check_device_dtype("PReLU", device, dtype)
        self.num_parameters = int(num_parameters)
        self.init = init
        self.weight = Parameter(np.full(self.num_parameters, float(init)))

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self._parameters["weight"])

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` axes with a
    learnable ``weight`` (ones) when ``elementwise_affine`` (PyTorch's ``nn.RMSNorm``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.RMSNorm(2, eps=0.0)(tg.tensor([[3.0, 4.0]]))
        tensor([[0.8485, 1.1314]], grad_fn=<MulBackward0>)
    """

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device_dtype("RMSNorm", device, dtype)
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self._parameters["weight"], self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class PixelShuffle(Module):
    """(*, C r**2, H, W) -> (*, C, H r, W r), as a layer (PyTorch's ``nn.PixelShuffle``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.PixelShuffle(2)(tg.zeros(1, 8, 3, 3)).shape
        (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r**2, H, W), as a layer (PyTorch's ``nn.PixelUnshuffle``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.PixelUnshuffle(2)(tg.zeros(1, 2, 6, 6)).shape
        (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


def _check_device_dtype(name, device, dtype):
    if device not in (None, "cpu") or dtype not in (None, "float64", np.float64):
        raise TypeError(
            f"{name}: only device=None/'cpu' and dtype=None/float64 are supported, got "
            f"device={device!r}, dtype={dtype!r}"
        )


# ---- attention and transformers ------------------------------------------------------------------


class MultiheadAttention(Module):
    """Multi-head attention (PyTorch's ``nn.MultiheadAttention``): ``forward(query, key, value)``
    projects the inputs, attends with ``num_heads`` heads of ``embed_dim // num_heads`` features
    and projects back, returning ``(output, weights)``.  Parameters and state-dict keys are
    PyTorch's (``in_proj_weight`` (3E, E), or ``q/k/v_proj_weight`` when ``kdim`` / ``vdim``
    differ from ``embed_dim``; ``in_proj_bias``; ``bias_k`` / ``bias_v`` with ``add_bias_kv``;
    ``out_proj``), initialised as PyTorch's (Glorot-uniform projections, zero biases).
    Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched (L, E).

    Examples:
        >>> import tapegrad as tg
        >>> mha = tg.nn.MultiheadAttention(4, 2, batch_first=True)
        >>> out, w = mha(tg.ones(3, 5, 4), tg.ones(3, 6, 4), tg.ones(3, 6, 4))
        >>> out.shape, w.shape
        ((3, 5, 4), (3, 5, 6))
        >>> [k for k in mha.state_dict()]
        ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device_dtype("MultiheadAttention", device, dtype)
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        F._check_p("MultiheadAttention", dropout)
        self.embed_dim = int(embed_dim)
        self.kdim = int(kdim) if kdim is not None else self.embed_dim
        self.vdim = int(vdim) if vdim is not None else self.embed_dim
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        self.num_heads = int(num_heads)
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"MultiheadAttention: embed_dim must be divisible by num_heads, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}"
            )
        e = self.embed_dim
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(np.zeros((e, e)))
            self.k_proj_weight = Parameter(np.zeros((e, self.kdim)))
            self.v_proj_weight = Parameter(np.zeros((e, self.vdim)))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(np.zeros((3 * e, e)))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * e))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(e, e, bias=bias)
        if add_bias_kv:
            self.bias_k = Parameter(np.zeros((1, 1, e)))
            self.bias_v = Parameter(np.zeros((1, 1, e)))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        p = self._parameters
        if self._qkv_same_embed_dim:
            _init.xavier_uniform_(p["in_proj_weight"])
        else:
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                _init.xavier_uniform_(p[name])
        if p["in_proj_bias"] is not None:
            _init.zeros_(p["in_proj_bias"])
            _init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            _init.xavier_normal_(self.bias_k)
            _init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        batched = np.ndim(_ops.value_of(query)) == 3
        if self.batch_first and batched:
            query, key, value = (
                _ops.swapaxes(_ops.tensor_of(t), 0, 1) for t in (query, key, value)
            )
        p = self._parameters
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            p["in_proj_weight"],
            p["in_proj_bias"],
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=p["q_proj_weight"],
            k_proj_weight=p["k_proj_weight"],
            v_proj_weight=p["v_proj_weight"],
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = _ops.swapaxes(out, 0, 1)
        return out, weights


def _activation_fn(name, activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"{name}: activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"{name}: activation should be 'relu', 'gelu' or a callable")
    return activation


def _square_subsequent_mask(sz):
    return Tensor(np.triu(np.full((int(sz), int(sz)), -np.inf), 1))


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a layer
    norm (after, or before with ``norm_first``), as PyTorch's ``nn.TransformerEncoderLayer``
    (same submodules and state-dict keys: ``self_attn``, ``linear1``, ``linear2``, ``norm1``,
    ``norm2``; dropouts ``dropout``, ``dropout1``, ``dropout2``).

    Examples:
        >>> import tapegrad as tg
        >>> layer = tg.nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8)
        >>> layer.eval()(tg.ones(5, 3, 4)).shape
        (5, 3, 4)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device_dtype("TransformerEncoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation_fn("TransformerEncoderLayer", activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's ``memory`` and a feed-forward block, each
    with a residual connection and a layer norm (after, or before with ``norm_first``), as
    PyTorch's ``nn.TransformerDecoderLayer`` (submodules ``self_attn``, ``multihead_attn``,
    ``linear1``, ``linear2``, ``norm1``-``norm3``, ``dropout``, ``dropout1``-``dropout3``).

    Examples:
        >>> import tapegrad as tg
        >>> layer = tg.nn.TransformerDecoderLayer(d_model=4, nhead=2, dim_feedforward=8)
        >>> layer.eval()(tg.ones(5, 3, 4), tg.ones(7, 3, 4)).shape
        (5, 3, 4)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device_dtype("TransformerDecoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn("TransformerDecoderLayer", activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(int(n))])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given
    (PyTorch's ``nn.TransformerEncoder``; state-dict keys ``layers.0. ...``, ``norm. ...``).

    Examples:
        >>> import tapegrad as tg
        >>> layer = tg.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, batch_first=True)
        >>> enc = tg.nn.TransformerEncoder(layer, num_layers=2).eval()
        >>> enc(tg.ones(3, 5, 4)).shape
        (3, 5, 4)
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = int(num_layers)
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        out = src
        for mod in self.layers:
            out = mod(
                out,
                src_mask=mask,
                is_causal=bool(is_causal),
                src_key_padding_mask=src_key_padding_mask,
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn to the target, each attending
    over ``memory``, then ``norm`` if given (PyTorch's ``nn.TransformerDecoder``).

    Examples:
        >>> import tapegrad as tg
        >>> layer = tg.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8)
        >>> dec = tg.nn.TransformerDecoder(layer, num_layers=2).eval()
        >>> dec(tg.ones(5, 3, 4), tg.ones(7, 3, 4)).shape
        (5, 3, 4)
    """

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        out = tgt
        for mod in self.layers:
            out = mod(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """An encoder-decoder transformer (PyTorch's ``nn.Transformer``): ``num_encoder_layers``
    encoder layers and ``num_decoder_layers`` decoder layers, each stack followed by a layer
    norm; every parameter of more than one dimension is Glorot-uniform initialised, as
    PyTorch's.  ``forward(src, tgt)`` returns the decoder's output, of ``tgt``'s shape.

    Examples:
        >>> import tapegrad as tg
        >>> model = tg.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1,
        ...                           num_decoder_layers=1, dim_feedforward=8).eval()
        >>> model(tg.ones(6, 2, 4), tg.ones(5, 2, 4)).shape
        (5, 2, 4)
        >>> tg.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[  0., -inf, -inf],
                [  0.,   0., -inf],
                [  0.,   0.,   0.]])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device_dtype("Transformer", device, dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        flags = dict(batch_first=batch_first, norm_first=norm_first, bias=bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **flags),
                num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **flags),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias),
            )
        for p in self.parameters():
            if p.ndim > 1:
                _init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        s, t = np.shape(_ops.value_of(src)), np.shape(_ops.value_of(tgt))
        b = 0 if self.batch_first else 1
        if len(s) == 3 and (len(t) != 3 or s[b] != t[b]):
            raise RuntimeError(
                f"Transformer: the batch number of src and tgt must be equal, got shapes {s} "
                f"and {t} (batch_first={self.batch_first})"
            )
        if s[-1:] != (self.d_model,) or t[-1:] != (self.d_model,):
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model "
                f"{self.d_model}, got shapes {s} and {t}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The float (sz, sz) causal mask: -inf above the diagonal, 0 on and below it.

        Examples:
            >>> import tapegrad as tg
            >>> tg.nn.Transformer.generate_square_subsequent_mask(2)
            tensor([[  0., -inf],
                    [  0.,   0.]])
        """
        _check_device_dtype("generate_square_subsequent_mask", device, dtype)
        return _square_subsequent_mask(sz)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs per channel C (PyTorch's
    ``nn.BatchNorm3d``; see ``BatchNorm1d``).

    Examples:
        >>> import tapegrad as tg
        >>> bn = tg.nn.BatchNorm3d(1)
        >>> bn(tg.tensor([[[[[1.0, 3.0]]]]])).detach()
        tensor([[[[[-1.0000,  1.0000]]]]])
    """

    dims = (5,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs (PyTorch's
    ``nn.InstanceNorm3d``; see ``InstanceNorm1d``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.InstanceNorm3d(1)(tg.tensor([[[[[1.0, 3.0]]]]]))
        tensor([[[[[-1.0000,  1.0000]]]]])
    """

    dims = (4, 5)
