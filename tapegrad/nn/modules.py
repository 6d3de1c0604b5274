"""``Module`` and the layers built on it (PyTorch-style attribute registration).

A parameter is a leaf Tensor with ``requires_grad=True`` assigned as a module attribute (make one
with ``nn.Parameter(data)``); a Module attribute is a submodule.  Tensors that do not require
grad can be kept in the state dict with ``register_buffer``.

``Linear`` follows PyTorch: its weight has shape ``(out_features, in_features)`` and it computes
``x @ weight.T + bias``, so weights and state dicts port between the two as they are.  (Until the
op set has a matmul with a transposed operand, ``weight.T`` is a copy in the forward pass and a
scatter in the backward pass on every step.)  Its initialisation matches PyTorch's
(U(-1/sqrt(in), 1/sqrt(in)) for weight and bias) and draws from ``tg.manual_seed``'s generator.

``state_dict()`` is an ordered dict of dotted names (``0.weight`` in a ``Sequential``) to NumPy
copies of the parameters and buffers; ``load_state_dict`` copies values back in place.
"""

import math
from collections import OrderedDict

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core import methods as _methods
from ..tensor_class import Tensor
from . import functional as F


def Parameter(data, requires_grad=True):
    """A new float64 leaf tensor (a copy of ``data``) that a Module registers as a parameter.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Parameter([1.0, 2.0])
        tensor([1., 2.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        data = data._v
    return Tensor(np.array(data, dtype=np.float64), requires_grad=requires_grad)


def _is_param(value):
    return isinstance(value, Tensor) and value._leaf and value._rg


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
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Module):
            self._modules[name] = value
        elif _is_param(value):
            self._parameters[name] = value
        else:
            object.__setattr__(self, name, value)
            return
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

    def register_parameter(self, name, param):
        """Register ``param`` (a leaf tensor that requires grad, or None for an absent one)."""
        if param is not None and not _is_param(param):
            raise TypeError(
                f"parameter '{name}' must be a leaf Tensor with requires_grad=True "
                f"(use nn.Parameter(data)), got {param!r}"
            )
        self._parameters[name] = param
        self.__dict__.pop(name, None)

    def register_buffer(self, name, tensor):
        """Keep ``tensor`` (no gradient) in the module's state dict under ``name``."""
        if tensor is not None and not isinstance(tensor, Tensor):
            tensor = Tensor(np.asarray(tensor))
        self._buffers[name] = tensor
        self.__dict__.pop(name, None)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module
        self.__dict__.pop(name, None)

    # ---- traversal -------------------------------------------------------------------------------
    def named_modules(self, prefix="", _seen=None):
        """(dotted name, module) for this module and its descendants, depth first."""
        seen = set() if _seen is None else _seen
        if id(self) in seen:
            return
        seen.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name, seen)

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

    def _named_tensors(self, table, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_name, m in mods:
            for name, t in getattr(m, table).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mod_name}.{name}" if mod_name else name), t

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules appears once."""
        return self._named_tensors("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_tensors("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- training helpers -------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Clear the gradients of all parameters (to None by default, like PyTorch)."""
        _zero_grads(self.parameters(), set_to_none)

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ---- state ---------------------------------------------------------------------------------------
    def _named_state(self):
        """(dotted name, owning module, attribute name, Tensor) for every parameter and buffer
        that is not None, in state-dict order (a tensor shared by two modules under each name)."""
        for mod_name, m in self.named_modules():
            for table in (m._parameters, m._buffers):
                for name, t in table.items():
                    if t is not None:
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
        (missing_keys, unexpected_keys)."""
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
            v = state_dict[k]
            v = np.array(v._v if isinstance(v, Tensor) else v, dtype=t.dtype)
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
        return missing, unexpected

    # ---- calling --------------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

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


def _zero_grads(params, set_to_none=True):
    for p in params:
        if set_to_none:
            p.grad = None
        elif p.grad is not None:
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
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]


class _Activation(Module):
    fn = None

    def forward(self, x):
        return type(self).fn(x)


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


class LeakyReLU(Module):
    """x for x > 0, else ``negative_slope`` * x, as a layer.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.LeakyReLU(0.1)(tg.tensor([-2.0, 3.0]))
        tensor([-0.2000, 3.0000])
    """

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class Softmax(Module):
    """Softmax along ``dim``, as a layer: scores to probabilities.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.Softmax(dim=-1)(tg.tensor([[1.0, 1.0]]))
        tensor([[0.5000, 0.5000]])
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

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


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits against integer classes, as a loss module
    (``reduction`` 'mean', 'sum' or 'none').

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> x = tg.tensor([[0.0, 0.0]], requires_grad=True)
        >>> loss = tg.nn.CrossEntropyLoss()(x, np.array([1])); loss   # log 2
        tensor(0.6931, grad_fn=<MulBackward0>)
        >>> loss.backward(); x.grad             # softmax(x) - onehot(target)
        tensor([[0.5000, -0.5000]])
    """

    def forward(self, input, target):
        return F.cross_entropy(input, target, reduction=self.reduction)


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


class BCELoss(_Loss):
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
        return F.binary_cross_entropy(input, target, reduction=self.reduction)
