"""Optimizers (``tg.optim``): SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam,
Adadelta and ASGD with PyTorch's update rules (and its argument names, ``maximize=``
included).

Updates are computed in NumPy on the parameters' own arrays, in place, and each updated
parameter is marked changed (version bump, tape row forgotten) exactly as ``with tg.no_grad():
p -= ...`` would, so a graph that saved the old value refuses to backward.
Parameters whose ``.grad`` is None are skipped (frozen ``nn.Parameter``s may be given, as in
PyTorch's ``model.parameters()`` after ``requires_grad_(False)``).  PyTorch's ``foreach=`` is
accepted and has no effect (its kernels compute the same update rule); ``fused=``,
``capturable=`` and ``differentiable=`` are not taken (TypeError).  A hyper-parameter may be a
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
import math

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


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with "params" and hyper-parameters) and the
    per-parameter ``state``.  Subclasses implement ``step()``.

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
        """Every optimizer's ``step`` notes that it ran (``_step_called``), so a scheduler
        stepped before its optimizer warns as PyTorch's does."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_notes_call", False):

            @functools.wraps(step)
            def noted_step(self, *args, **kwargs):
                self._step_called = True
                return step(self, *args, **kwargs)

            noted_step._notes_call = True
            cls.step = noted_step

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
        self.state = {}
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        """Add a parameter group (a dict with "params"; missing hyper-parameters take the
        optimizer's defaults), as PyTorch's.  A parameter that is not a leaf, or is already in
        a group, raises ValueError.  Frozen ``nn.Parameter``s (requires_grad False) are kept, as
        PyTorch keeps them: they have no ``.grad``, so steps skip them."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
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

    def zero_grad(self, set_to_none=True):
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
            v = _array(p)
            if not v.flags.writeable:  # (else the state would move and the parameter not)
                raise ValueError(
                    f"{type(self).__name__}.step: a parameter of shape {tuple(p.shape)} holds a "
                    "read-only array (tg.from_numpy of a read-only or broadcast NumPy array?) "
                    "and cannot be updated in place; make it with tg.tensor(array), a copy"
                )
            yield p, v, np.asarray(g._v, dtype=np.float64)

    def step(self, closure=None):
        raise NotImplementedError

    # ---- state ---------------------------------------------------------------------------------

    def _indexed_params(self):
        """(index, group number, parameter) in PyTorch's state-dict numbering."""
        i = 0
        for gi, group in enumerate(self.param_groups):
            for p in group["params"]:
                yield i, gi, p
                i += 1

    def state_dict(self):
        """``{"state": {index: {name: copy}}, "param_groups": [{..., "params": [index...]}]}``:
        a copy, so training on does not change it (and it pickles)."""
        state, groups, start = {}, [], 0
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        for i, _, p in self._indexed_params():
            if self.state.get(id(p)):
                state[i] = copy.deepcopy(self.state[id(p)])
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load hyper-parameters and per-parameter state saved by ``state_dict()`` of an
        optimizer over parameters of the same shapes, grouped the same way (values are copied).
        Raises ValueError, naming what differs, and then changes nothing."""
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
        new_state = {}
        for k, entry in saved_state.items():
            p = index[k]
            entry = {name: _state_value(name, v) for name, v in dict(entry).items()}
            for name, v in entry.items():
                if isinstance(v, np.ndarray) and v.shape != tuple(p.shape):
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
            new_state[id(p)] = entry
        for saved, group in zip(saved_groups, self.param_groups):
            hyper = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            group.update(self._normalize_group(hyper))
        self.state = new_state

    # the per-parameter state entries every step needs (checked when a state dict is loaded)
    _state_keys = ()

    def _normalize_group(self, hyper):
        """Hyper-parameters read back from a state dict, in this optimizer's types (``betas``
        a tuple, as a list after a round trip through JSON)."""
        if isinstance(hyper.get("betas"), list):
            hyper["betas"] = tuple(hyper["betas"])
        return hyper

    # ``state`` is keyed by ``id(p)``, which a copy's parameters do not share: copying or
    # pickling an optimizer keys its state by position instead, so the copy (with its copied
    # parameters, e.g. ``copy.deepcopy((model, opt))``) continues with the original's state
    # rather than silently restarting from none.
    def __getstate__(self):
        d = dict(self.__dict__)
        d["state"] = [self.state.get(id(p)) for _, _, p in self._indexed_params()]
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
        self.state = {id(p): st for p, st in zip(params, positional) if st is not None}


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


# per-parameter state entries that are one number, not an array shaped as the parameter
_SCALAR_STATE = ("mu_product", "eta", "mu")


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
    """An optimizer's hyper-parameters from its ``__init__``'s ``locals()``, the ones that
    must not be negative checked (PyTorch's messages), but for the names in ``unchecked``."""
    skip = ("self", "params", "__class__", "foreach")  # foreach changes no number: not kept
    hyper = {k: v for k, v in args.items() if k not in skip}
    for k, name in _CHECKED.items():
        if k in hyper and k not in unchecked and not hyper[k] >= 0.0:
            if k == "lr":  # (PyTorch's words)
                raise ValueError(f"Invalid learning rate: {hyper[k]}")
            raise ValueError(f"Invalid {name} value: {hyper[k]}")
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
        lr=1e-3,
        momentum=0.0,
        weight_decay=0.0,
        *,  # PyTorch's fourth and fifth are dampening, weight_decay: by keyword only
        dampening=0.0,
        nesterov=False,
        maximize=False,
        foreach=None,
    ):
        hyper = _hyper(locals())
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, hyper)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            damp, nesterov = group["dampening"], group["nesterov"]
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, wd, group)
                if mu:
                    state = self.state.setdefault(id(p), {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = np.array(g, dtype=np.float64)
                    else:
                        buf *= mu
                        buf += (1.0 - damp) * g
                    g = g + mu * buf if nesterov else buf
                v -= lr * g
                _commit(p, v)
        return loss


def _closure_loss(closure):
    """The loss from an optimizer's ``closure`` (None without one), evaluated with gradient
    recording on, as PyTorch's ``step(closure)``."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _decayed(g, v, wd, group):
    """The gradient as the update rules use it: negated with ``maximize``, plus the (coupled)
    weight decay ``wd * p``."""
    if group.get("maximize"):
        g = -g
    return g + wd * v if wd else g


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
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        amsgrad=False,
        *,
        maximize=False,
        decoupled_weight_decay=False,
        foreach=None,
    ):
        hyper = _hyper(locals())
        betas = tuple(betas)
        if len(betas) != 2:
            raise ValueError(
                f"{type(self).__name__}: betas must be a pair (beta1, beta2), got {betas}"
            )
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, dict(hyper, betas=betas))

    def _normalize_group(self, hyper):
        if "betas" in hyper:  # a list after a round trip through JSON
            hyper["betas"] = tuple(hyper["betas"])
        return hyper

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            decoupled = group.get("decoupled_weight_decay", False)
            amsgrad = group.get("amsgrad", False)
            for p, v, g in self._with_grads(params):
                if decoupled:
                    g = _decayed(g, v, 0.0, group)
                    if wd:
                        v *= 1.0 - lr * wd
                else:
                    g = _decayed(g, v, wd, group)
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(v)
                    state["exp_avg_sq"] = np.zeros_like(v)
                    if amsgrad:
                        state["max_exp_avg_sq"] = np.zeros_like(v)
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
                _commit(p, v)
        return loss


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
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
            foreach=foreach,
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
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0.0,
        momentum=0.0,
        centered=False,
        *,
        maximize=False,
        foreach=None,
    ):
        super().__init__(params, _hyper(locals()))

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, alpha, eps, mu = group["lr"], group["alpha"], group["eps"], group["momentum"]
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, group["weight_decay"], group)
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["square_avg"] = np.zeros_like(v)
                    if mu > 0:
                        state["momentum_buffer"] = np.zeros_like(v)
                    if group["centered"]:
                        state["grad_avg"] = np.zeros_like(v)
                if mu > 0 and "momentum_buffer" not in state:
                    raise _missing(self, "momentum", "momentum_buffer")
                if group["centered"] and "grad_avg" not in state:
                    raise _missing(self, "centered", "grad_avg")
                state["step"] += 1
                s = state["square_avg"]
                s *= alpha
                s += (1.0 - alpha) * (g * g)
                if group["centered"]:
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
                _commit(p, v)
        return loss


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
        lr=1e-2,
        lr_decay=0.0,
        weight_decay=0.0,
        initial_accumulator_value=0.0,
        eps=1e-10,
        *,
        maximize=False,
        foreach=None,
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

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        init = _number(self.defaults["initial_accumulator_value"], "initial_accumulator_value")
        for params in self.param_groups:
            group = _values(self, params)
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, group["weight_decay"], group)
                state = self.state.setdefault(id(p), {})
                if not state:  # (PyTorch's starts every sum at the optimizer's value)
                    state["step"] = 0
                    state["sum"] = np.full_like(v, init)
                state["step"] += 1
                clr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
                s = state["sum"]
                s += g * g
                v -= clr * (g / (np.sqrt(s) + group["eps"]))
                _commit(p, v)
        return loss


def _decoupled(v, g, lr, wd, decoupled, group):
    """The gradient with ``maximize`` applied and the weight decay: added to it (``wd * p``),
    or with ``decoupled`` applied to the parameter (``p *= 1 - lr * wd``) instead."""
    if decoupled:
        if wd:
            v *= 1.0 - lr * wd
        return _decayed(g, v, 0.0, group)
    return _decayed(g, v, wd, group)


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
    ):
        hyper = _hyper(locals())
        super().__init__(params, dict(hyper, betas=_checked_betas(self, betas)))

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, group["weight_decay"], group)
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(v)
                    state["exp_inf"] = np.zeros_like(v)
                state["step"] += 1
                m, u = state["exp_avg"], state["exp_inf"]
                _lerp_(m, g, 1.0 - b1)
                u *= b2
                np.maximum(u, np.abs(g) + eps, out=u)
                v -= (lr / (1.0 - b1 ** state["step"])) * (m / u)
                _commit(p, v)
        return loss


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
    ):
        hyper = _hyper(locals())
        super().__init__(params, dict(hyper, betas=_checked_betas(self, betas)))

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            decay = group["momentum_decay"]
            for p, v, g in self._with_grads(params):
                g = _decoupled(
                    v, g, lr, group["weight_decay"], group["decoupled_weight_decay"], group
                )
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["mu_product"] = 1.0
                    state["exp_avg"] = np.zeros_like(v)
                    state["exp_avg_sq"] = np.zeros_like(v)
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
                _commit(p, v)
        return loss


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
    ):
        hyper = _hyper(locals())
        super().__init__(params, dict(hyper, betas=_checked_betas(self, betas)))

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            rho_inf = 2.0 / (1.0 - b2) - 1.0
            for p, v, g in self._with_grads(params):
                g = _decoupled(
                    v, g, lr, group["weight_decay"], group["decoupled_weight_decay"], group
                )
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(v)
                    state["exp_avg_sq"] = np.zeros_like(v)
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
                _commit(p, v)
        return loss


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
        maximize: bool = False,
    ):
        hyper = _hyper(locals())
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, hyper)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, group["weight_decay"], group)
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["square_avg"] = np.zeros_like(v)
                    state["acc_delta"] = np.zeros_like(v)
                state["step"] += 1
                s, a = state["square_avg"], state["acc_delta"]
                s *= rho
                s += (1.0 - rho) * (g * g)
                delta = np.sqrt(a + eps) / np.sqrt(s + eps) * g
                a *= rho
                a += (1.0 - rho) * (delta * delta)
                v -= lr * delta
                _commit(p, v)
        return loss


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
    ):
        # (PyTorch checks only lr and weight_decay here; its alpha is the eta decay's power)
        super().__init__(params, _hyper(locals(), unchecked=("alpha",)))

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (optional, as
        PyTorch's) re-evaluates the model and returns the loss, which ``step`` returns."""
        loss = _closure_loss(closure)
        for params in self.param_groups:
            group = _values(self, params)
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p, v, g in self._with_grads(params):
                g = _decayed(g, v, group["weight_decay"], group)
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["eta"] = float(lr)
                    state["mu"] = 1.0
                    state["ax"] = np.zeros_like(v)
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
                _commit(p, v)
        return loss
