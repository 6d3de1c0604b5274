"""Module hooks (PyTorch's ``nn.Module`` hooks): the handle that removes one, and the call of a
module with hooks (``call_with_hooks``, what ``Module.__call__`` runs when a hook is set).

Forward pre-hooks and forward hooks are plain Python around ``forward``.  Backward hooks are
built as PyTorch's ``BackwardHook``: an identity ``tg.Function`` over the Tensor inputs that
require grad (before ``forward``) and one over the Tensor outputs (after the forward hooks).
The reverse sweep reaches the output identity first, with every output's gradient complete:
its backward runs the backward pre-hooks on ``grad_output`` (what they return flows into the
module); it reaches the input identity after the module's own rows, where the full backward
hooks get ``grad_input`` and ``grad_output`` (what they return flows on to the inputs).  Under
``create_graph`` the hooks receive and may return graph-carrying Tensors, so higher derivatives
go through them.
"""

import itertools
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from ..autograd.function import Function
from ..core.tensor import STATE, TensorBase, result
from ..tensor_class import Tensor

_IDS = itertools.count()  # the ids of hooks, in registration order


class RemovableHandle:
    """What ``Module.register_*_hook`` returns: ``remove()`` unregisters the hook (removing
    twice does nothing); as a context manager it removes the hook on exit.

    Examples:
        >>> import tapegrad as tg
        >>> lin = tg.nn.Linear(2, 1)
        >>> seen = []
        >>> with lin.register_forward_hook(lambda m, args, out: seen.append(out.shape)):
        ...     _ = lin(tg.ones((3, 2)))
        >>> _ = lin(tg.ones((3, 2))); seen           # removed on leaving the block
        [(3, 1)]
    """

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        if isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        extra_dict = list(extra_dict or ())
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        self.id = next(_IDS)
        # (a module unpickled from another process holds ids this one has not drawn yet)
        while any(self.id in d for d in (hooks_dict, *extra_dict)):
            self.id = next(_IDS)

    def remove(self):
        """Unregister the hook (from the module it was registered on, not from copies)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks = state[0] if state[0] is not None else OrderedDict()
        self.hooks_dict_ref = weakref.ref(hooks)
        self.id = state[1]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2] if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
)


def hook_dict(module, name):
    """The module's hook table ``name`` (made if missing: a module unpickled from a version
    without hooks, or one whose ``__init__`` never called ``Module.__init__``)."""
    d = module.__dict__.get(name)
    if d is None:
        d = OrderedDict()
        object.__setattr__(module, name, d)
    return d


def register(module, method, table, hook, prepend=False, extra=(), flags=()):
    """Put ``hook`` in ``module``'s hook table ``table`` (first with ``prepend``); the tables
    named in ``extra`` lose its id when it is removed, those in ``flags`` mark it now.
    Returns its handle."""
    if not callable(hook):
        raise TypeError(
            f"{type(module).__name__}.{method}: the hook must be callable, got "
            f"{type(hook).__name__}"
        )
    hooks = hook_dict(module, table)
    handle = RemovableHandle(hooks, extra_dict=[hook_dict(module, name) for name in extra])
    hooks[handle.id] = hook
    for name in flags:
        hook_dict(module, name)[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _hook_name(hook):
    return getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or repr(hook)


# ---- the call ------------------------------------------------------------------------------------
def call_with_hooks(module, args, kwargs):
    """``module(*args, **kwargs)`` with its hooks, as PyTorch's ``Module._call_impl``."""
    d = module.__dict__
    st = {"args": args, "kwargs": kwargs, "result": None, "called": set()}
    try:
        return _run(module, d, st)
    except Exception:
        # forward hooks registered with always_call run even when forward (or a hook) raised,
        # with the arguments and the output as far as they got; an error they raise
        # themselves is reported as a warning, and the first error propagates
        fwd = d.get("_forward_hooks") or {}
        with_kwargs = d.get("_forward_hooks_with_kwargs") or {}
        always = d.get("_forward_hooks_always_called") or {}
        args, kwargs = st["args"], st["kwargs"]
        for hook_id, hook in list(fwd.items()):
            if hook_id in always and hook_id not in st["called"]:
                try:
                    if hook_id in with_kwargs:
                        out = hook(module, args, kwargs, st["result"])
                    else:
                        out = hook(module, args, st["result"])
                    if out is not None:
                        st["result"] = out
                except Exception as e:
                    warnings.warn(
                        "module forward hook with ``always_call=True`` raised an exception "
                        f"that was silenced as another error was raised in forward: {e}",
                        stacklevel=2,
                    )
        raise


def _run(module, d, st):
    args, kwargs = st["args"], st["kwargs"]
    pre = d.get("_forward_pre_hooks")
    if pre:
        pre_kwargs = d.get("_forward_pre_hooks_with_kwargs") or {}
        for hook_id, hook in list(pre.items()):
            if hook_id in pre_kwargs:
                res = hook(module, args, kwargs)
                if res is not None:
                    if isinstance(res, tuple) and len(res) == 2:
                        args, kwargs = res
                    else:
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {res!r}."
                        )
            else:
                res = hook(module, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
            st["args"], st["kwargs"] = args, kwargs
    bw_pre = list((d.get("_backward_pre_hooks") or {}).values())
    bw_full = list((d.get("_backward_hooks") or {}).values())
    bw = None
    if bw_pre or bw_full:
        bw = BackwardHook(module, bw_full, bw_pre)
        args = bw.setup_input_hook(args)
    st["args"] = args
    output = st["result"] = module.forward(*args, **kwargs)
    fwd = d.get("_forward_hooks")
    if fwd:
        fwd_kwargs = d.get("_forward_hooks_with_kwargs") or {}
        for hook_id, hook in list(fwd.items()):
            st["called"].add(hook_id)
            if hook_id in fwd_kwargs:
                res = hook(module, args, kwargs, output)
            else:
                res = hook(module, args, output)
            if res is not None:
                output = st["result"] = res
    if bw is not None:
        bw.check_inputs_unchanged()
        if not isinstance(output, (TensorBase, tuple)):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple "
                f"of Tensors but received {type(output)}",
                stacklevel=3,
            )
        output = bw.setup_output_hook(output)
    return output


def _linked(values, incoming):
    """``values`` (what the hooks returned) for a backward under ``create_graph``, where the
    ``incoming`` gradients carry a graph: a constant a hook returned (``torch.zeros_like(g)``)
    is a constant of the graph, with a zero derivative as in PyTorch.  It is given a graph of
    its own (plus a zero leaf that nothing reads), since a constant among graph-carrying
    gradients would else be taken for one computed outside the graph, which a further
    derivative refuses.  (Not a zero term on the incoming gradients: that would lead the next
    backward through this module's hooks again.)"""
    if not any(isinstance(g, TensorBase) and g.requires_grad for g in incoming):
        return values
    out = []
    for v in values:
        if isinstance(v, TensorBase) and not v.requires_grad:
            v = v + Tensor(0.0, requires_grad=True)
        out.append(v)
    return out


# ---- backward hooks ------------------------------------------------------------------------------
class _BackwardHookFunction(Function):
    """The identity whose backward runs a module's backward hooks (``side``: "input" for the
    module's inputs, "output" for its outputs)."""

    @staticmethod
    def forward(ctx, hook, side, *tensors):
        ctx.hook = hook
        ctx.side = side
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        if ctx.side == "output":
            return (None, None, *ctx.hook.on_output_grads(grads))
        return (None, None, *ctx.hook.on_input_grads(grads))

    @staticmethod
    def jvp(ctx, hook, side, *tangents):
        return tangents  # (hooks change gradients only: forward mode goes through)


class BackwardHook:
    """One call's backward hooks (PyTorch's ``torch.utils.hooks.BackwardHook``): links the
    gradients of the outputs, captured when the sweep reaches them, with those of the inputs."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = None  # positions of the Tensor inputs (None: none requires grad)
        self.input_shapes = ()
        self.input_rg = ()  # positions (in input_index) of those that require grad
        self.output_index = None
        self.output_rg = ()
        self.hooked_inputs = ()
        self.hooked_outputs = ()

    def _name(self):
        return type(self.module).__name__

    def _apply(self, side, values):
        """The identity over the Tensors of ``values`` that require grad: (new values, Tensor
        positions or None when none requires grad, positions of the identity's operands)."""
        idx = [i for i, v in enumerate(values) if isinstance(v, TensorBase)]
        rg = [i for i in idx if values[i].requires_grad]
        if not (rg and STATE.enabled):
            return values, None, ()
        if STATE.tape.REPLAYS:
            raise TypeError(
                f"tg.trace: f calls a {self._name()} module with backward hooks "
                "(register_full_backward_hook / register_full_backward_pre_hook); they run "
                "Python code in backward and cannot be replayed. Remove the hooks while "
                "tracing (handle.remove()), or use tg.grad, which runs f at every call"
            )
        new = _BackwardHookFunction.apply(self, side, *(values[i] for i in rg))
        out = list(values)
        for i, v in zip(rg, new, strict=True):
            out[i] = v
        return out, idx, tuple(idx.index(i) for i in rg)

    def setup_input_hook(self, args):
        new, idx, rg = self._apply("input", tuple(args))
        self.n_inputs = len(args)
        self.input_index = idx
        self.input_rg = rg
        if idx is not None:
            self.input_shapes = tuple(args[i].shape for i in idx)
            self.hooked_inputs = tuple(
                (new[idx[k]], new[idx[k]]._version) for k in rg
            )  # (for the in-place check after forward)
        return tuple(new)

    def check_inputs_unchanged(self):
        for x, version in self.hooked_inputs:
            if x._version != version:
                raise RuntimeError(
                    f"{self._name()}: forward (or a forward hook) modified one of its inputs "
                    "in place while the module has backward hooks, which see the gradients "
                    "of the inputs as they were passed; as in PyTorch this is not allowed. "
                    "Use an out-of-place operation (x = x * 2, not x.mul_(2)), or remove the "
                    "backward hooks"
                )
        self.hooked_inputs = ()

    def setup_output_hook(self, output):
        single = not isinstance(output, tuple)
        values = (output,) if single else output
        new, idx, rg = self._apply("output", values)
        self.n_outputs = len(values)
        self.output_index = idx
        self.output_rg = rg
        if idx is not None:
            self.output_shapes = tuple(values[i].shape for i in idx)
            self.hooked_outputs = tuple(
                (weakref.ref(new[idx[k]]), new[idx[k]]._version) for k in rg
            )
        if single:
            return new[0]
        return tuple(new) if type(output) is tuple else type(output)(*new)  # (a namedtuple)

    # ---- in the reverse sweep ----------------------------------------------------------------
    def _pack(self, index, values, size):
        res = [None] * size
        for i, v in zip(index, values, strict=True):
            res[i] = v
        return tuple(res)

    def _check(self, hook, what, returned, expected):
        if isinstance(returned, list):
            returned = tuple(returned)
        if not isinstance(returned, tuple):
            raise TypeError(
                f"{self._name()}: backward hook {_hook_name(hook)} returned a "
                f"{type(returned).__name__}; it must return None or a tuple of {what} "
                f"gradients (one per {'output' if what == 'grad_output' else 'input'})"
            )
        if len(returned) != len(expected):
            kind = "Backward pre hook" if what == "grad_output" else "Backward hook"
            raise RuntimeError(
                f"{kind} returned an invalid number of {what}, got {len(returned)}, but "
                f"expected {len(expected)}"
            )
        return returned

    def _fit(self, hook, g, shape, k, what):
        """A returned gradient as a Tensor, which must have the shape ``shape`` (PyTorch
        refuses any other, broadcastable or not)."""
        if g is None:
            return None
        if not isinstance(g, TensorBase):
            g = Tensor._const(result(np.asarray(g, dtype=np.float64)))
        if tuple(g.shape) != tuple(shape):
            raise RuntimeError(
                f"{self._name()}: backward hook {_hook_name(hook)} returned a gradient of "
                f"shape {tuple(g.shape)} at {what}[{k}], for a tensor of shape "
                f"{tuple(shape)}; return one of the tensor's shape (or None)"
            )
        return g

    def on_output_grads(self, grads):
        """The output identity's backward: ``grads`` (one per output that requires grad, None
        where unreached) -> the gradients that flow into the module."""
        for k, (ref, version) in enumerate(self.hooked_outputs):
            y = ref()
            if y is not None and y._version != version:
                raise RuntimeError(
                    f"{self._name()}: output {self.output_index[self.output_rg[k]]} of a "
                    "module with backward hooks was modified in place after the call; the "
                    "hooks would see the gradient of the modified value, so this is refused, "
                    "as in PyTorch. Use an out-of-place operation (y = y * 2, not y.mul_(2)), "
                    "or clone the output first (y = module(x).clone())"
                )
        idx = self.output_index
        full = [None] * len(idx)
        for k, g in zip(self.output_rg, grads, strict=True):
            full[k] = g
        grad_outputs = self._pack(idx, full, self.n_outputs)
        for hook in self.user_pre_hooks:
            res = hook(self.module, grad_outputs)
            if res is None:
                continue
            res = self._check(hook, "grad_output", res, grad_outputs)
            grad_outputs = tuple(
                None
                if i not in idx
                else self._fit(hook, g, self.output_shapes[idx.index(i)], i, "grad_output")
                for i, g in enumerate(res)
            )
        self.grad_outputs = grad_outputs
        if self.input_index is None:
            # no input requires grad: the full hooks fire now, with grad_input all None
            if self.user_hooks:
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with respect "
                    "to module outputs since no inputs require gradients.",
                    stacklevel=2,
                )
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not (
                    isinstance(res, tuple) and all(el is None for el in res)
                ):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return _linked([grad_outputs[idx[k]] for k in self.output_rg], grads)

    def on_input_grads(self, grads):
        """The input identity's backward: gradients of the inputs that require grad (None
        where unreached) -> what flows on to them, after the full backward hooks."""
        if self.grad_outputs is None or not self.user_hooks:
            # (the gradient reached the inputs without passing through the outputs)
            self.grad_outputs = None
            return list(grads)
        idx = self.input_index
        full = [None] * len(idx)
        for k, g in zip(self.input_rg, grads, strict=True):
            full[k] = g
        for k, shape in enumerate(self.input_shapes):
            if full[k] is None:  # PyTorch's identity materializes them: zeros
                full[k] = Tensor._const(0.0 if shape == () else np.zeros(shape))
        res = self._pack(idx, full, self.n_inputs)
        who = None
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            res = self._check(hook, "grad_input", out, res)
            who = hook
        self.grad_outputs = None
        if who is None:
            return [res[idx[k]] for k in self.input_rg]
        return _linked(
            [
                self._fit(who, res[idx[k]], self.input_shapes[k], idx[k], "grad_input")
                for k in self.input_rg
            ],
            grads,
        )
