"""PyTorch's ``torch.autograd.functional`` on tapegrad Tensors (``tg.autograd.functional``):
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp`` and ``vhp``.

The functions follow PyTorch's: ``inputs`` is a Tensor or a tuple of Tensors, and so is what
``func`` returns; each result is a Tensor or a tuple as the inputs / outputs were given
(``jacobian`` nests a tuple of outputs over a tuple of inputs).

How it is built.  ``func`` runs once, under grad mode, on *stand-ins* for the inputs: a
fresh leaf cut from the input's history, or, with ``create_graph=True`` and an input that
requires grad, a differentiable alias of it (so the results stay connected to the caller's
graph).  Every derivative is then one pull-back through tapegrad's engine
(``autograd.grad``):

* ``vjp``: one pull-back of the outputs with cotangent ``v``;
* ``jacobian`` (reverse mode): one pull-back per output element, seeded with that element's
  one-hot cotangent, the rows stacked;
* ``jvp`` and ``hvp``: the pull-back ``u -> J^T u`` is linear in a placeholder cotangent
  ``u``; pulling *that* back with ``v`` gives ``J v`` (the double-backward trick PyTorch
  documents), and likewise ``H v`` from the gradient;
* ``vhp``: the gradient taken with a graph, pulled back with ``v``;
* ``hessian``: the Jacobian of the gradient (taken with a graph).

``create_graph=True`` keeps each pull-back on the tape, so its results can be differentiated
to any order; otherwise results are detached.  ``strict=True`` raises PyTorch's
RuntimeError where an output does not depend on an input (without it those blocks are
zeros).  ``vectorize=True`` gives the same values.  ``strategy="forward-mode"`` (which
PyTorch allows only with ``vectorize=True``) takes the Jacobian by tapegrad's forward mode:
the tangent sweeps of ``autograd.forward`` over the recorded tape, all input directions in
one compiled call.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..core import functions as _ops
from ..core.tensor import STATE
from ..core.tensor import TensorBase as Tensor
from . import forward as _forward
from .engine import enable_grad, row_for
from .engine import grad as _grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

TensorOrTensors = Any  # a Tensor or a tuple of Tensors

_RESULTS = "outputs of the user-provided function"
_MODES = ("forward-mode", "reverse-mode")

# ---- what strict mode says (PyTorch's wording: users match on it) -------------------------------

_NO_PATH = (
    "The output of the user-provided function is independent of input {k}. This is not "
    "allowed in strict mode."
)
# a Tensor that exists but carries no graph, by what it is
_NO_GRAPH = {
    "outputs": "Output {k} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in "
    "strict mode.",
    "grad_inputs": "The gradient with respect to input {k} is independent of the inputs of "
    "the user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {k} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for "
    "example).",
}
# a derivative that came out None, by the function that took it
_UNREACHED = {
    "vjp": _NO_PATH,
    "jvp": "The gradient with respect to the input is independent of entry {k} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "vhp": "The jacobian of the user-provided function is independent of input {k}. This is "
    "not allowed in strict mode.",
    "hvp": "The hessian of the user-provided function is independent of entry {k} in the "
    "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
    "backward trick to replace forward mode AD.",
}
_CONSTANT_WITH_GRAPH = (
    "The {what} of the user-provided function is independent of input {k}. This is not "
    "allowed in strict mode when create_graph=True."
)


def _demand_graph(tensors, kind):
    """strict mode: every one of ``tensors`` exists and requires grad."""
    for k, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_NO_PATH.format(k=k))
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAPH[kind].format(k=k))


# ---- arguments: a Tensor or a tuple of Tensors ---------------------------------------------------


class _Group(NamedTuple):
    """Tensors given as one Tensor or as a tuple of them, remembering which."""

    items: tuple
    tupled: bool

    def give_back(self, values):
        """``values`` (one per item) in the form the group came in."""
        return tuple(values) if self.tupled else values[0]


def _group(value, what, fn):
    tupled = isinstance(value, tuple)
    items = value if tupled else (value,)
    bad = next((k for k, t in enumerate(items) if not isinstance(t, Tensor)), None)
    if bad is not None:
        where = f"the value at index {bad}" if tupled else f"the given {what}"
        raise TypeError(
            f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but "
            f"{where} has type {type(items[bad])}."
        )
    return _Group(items, tupled)


def _inputs(inputs, fn):
    ins = _group(inputs, "inputs", fn)
    for k, x in enumerate(ins.items):
        if x.dtype.kind != "f":
            raise RuntimeError(
                f"{fn}: input {k} has dtype {x.dtype}; only floating point Tensors can "
                "be differentiated (as PyTorch: an integer Tensor cannot require grad); "
                "pass x.double() or x.float()"
            )
    return ins


def _stand_ins(xs, keep_graph):
    """What ``func`` is called on: an alias of an input that requires grad when the caller's
    graph is kept (``create_graph``), otherwise a fresh leaf that requires grad."""
    return tuple(
        x.view_as(x) if keep_graph and x.requires_grad else x.detach().requires_grad_() for x in xs
    )


def _cotangents(v, refs, fn, create_graph, who):
    """``v`` checked against ``refs`` (a _Group): a tuple of cotangents, one per item, or
    (None,) for a left-out ``v`` (allowed for one single-element item: ones)."""
    if v is None:
        if len(refs.items) != 1 or refs.items[0].numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if the {who} a single Tensor with a single element."
            )
        return (None,)
    vs = _group(v, "v", fn).items
    want = len(refs.items)
    if len(vs) != want:
        if refs.tupled:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {want} but got {len(vs)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for k, (a, ref) in enumerate(zip(vs, refs.items, strict=True)):
        if tuple(a.shape) != tuple(ref.shape):
            entry = f"Entry {k} in " if refs.tupled else ""
            raise RuntimeError(
                f"{entry}v has invalid size: should be {ref.size()} but got {a.size()}."
            )
    return vs if create_graph else tuple(a.detach() for a in vs)


def _single_scalar(out, fn, strict):
    """The one-element Tensor ``func`` returned for ``fn`` (hessian, hvp, vhp)."""
    outs = _group(out, _RESULTS, fn)
    if strict:
        _demand_graph(outs.items, "outputs")
    if outs.tupled:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn} should contain a single element"
        )
    return out


# ---- constants and the engine --------------------------------------------------------------------


def _constant(a, dtype):
    """Array ``a`` as a constant Tensor of float ``dtype`` (float64 for any other dtype)."""
    a = np.asarray(a, dtype=dtype if np.dtype(dtype).kind == "f" else np.float64)
    return Tensor._const(a[()] if a.ndim == 0 else a)


def _filled(shape, dtype, value=0.0):
    return _constant(np.full(tuple(shape), value), dtype)


def _zeros(t):
    return _filled(t.shape, t.dtype)


def _pullback(outs, xs, cots, create_graph, keep=None):
    """The cotangent-weighted gradient of ``outs`` with respect to ``xs``: a tuple over
    ``xs``, None where nothing reaches an input.  Outputs that are None or carry no graph
    add nothing; a None cotangent stands for ones (one-element outputs)."""
    live = [(y, c) for y, c in zip(outs, cots, strict=True) if y is not None and y.requires_grad]
    if not live:
        return (None,) * len(xs)
    return _grad(
        [y for y, _ in live],
        list(xs),
        [_filled(y.shape, y.dtype, 1.0) if c is None else c for y, c in live],
        retain_graph=keep,
        create_graph=create_graph,
        allow_unused=True,
    )


def _settle(grads, refs, strict, create_graph, fn, what):
    """``grads`` with zeros (shaped as ``refs``) for None; strict mode raises for None, and
    with create_graph for a derivative that carries no graph."""
    out = []
    for k, (g, ref) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(_UNREACHED[fn].format(k=k))
            g = _zeros(ref)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_CONSTANT_WITH_GRAPH.format(what=what, k=k))
        out.append(g)
    return tuple(out)


def _handed_out(ts, create_graph):
    return tuple(ts) if create_graph else tuple(t.detach() for t in ts)


# ---- vjp, jvp ------------------------------------------------------------------------------------


def vjp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[TensorOrTensors, TensorOrTensors]:
    """``(func(*inputs), v @ J)``: PyTorch's ``torch.autograd.functional.vjp``.

    ``v`` has the structure of ``func``'s output (it may be left out when the output is one
    element); the result has the structure of ``inputs`` (a Tensor for a Tensor, a tuple for a
    tuple).  Results are detached unless ``create_graph=True``; ``strict=True`` raises where an
    input is unused instead of returning zeros.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0])
        >>> tg.autograd.functional.vjp(lambda x: x ** 2, x, tg.tensor([1.0, 1.0]))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        ins = _inputs(inputs, "vjp")
        xs = _stand_ins(ins.items, create_graph)
        outs = _group(func(*xs), _RESULTS, "vjp")
        if strict:
            _demand_graph(outs.items, "outputs")
        cots = _cotangents(v, outs, "vjp", create_graph, "user-provided function returns")
        pulled = _pullback(outs.items, xs, cots, create_graph)
        vj = _settle(pulled, xs, strict, create_graph, "vjp", "jacobian")
    return (
        outs.give_back(_handed_out(outs.items, create_graph)),
        ins.give_back(_handed_out(vj, create_graph)),
    )


def jvp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[TensorOrTensors, TensorOrTensors]:
    """``(func(*inputs), J @ v)``: PyTorch's ``torch.autograd.functional.jvp``, by the
    double-backward trick as PyTorch's (``tg.func.jvp`` / ``tg.jvp`` use forward mode).

    ``v`` has the structure of ``inputs`` (optional for one single-element input); the result
    has the structure of the output.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0])
        >>> tg.autograd.functional.jvp(lambda x: x ** 2, x, tg.tensor([1.0, 0.0]))
        (tensor([1., 4.]), tensor([2., 0.]))
    """
    with enable_grad():
        ins = _inputs(inputs, "jvp")
        xs = _stand_ins(ins.items, create_graph)
        cots = _cotangents(v, ins, "jvp", create_graph, "input to the user-provided function is")
        outs = _group(func(*xs), _RESULTS, "jvp")
        if strict:
            _demand_graph(outs.items, "outputs")
        for k, y in enumerate(outs.items):
            if y.dtype.kind != "f":
                raise RuntimeError(
                    f"jvp: output {k} of the user-provided function has dtype {y.dtype}; the "
                    "double-backward trick needs floating point outputs (PyTorch raises too): "
                    "return float outputs only, or use tg.func.jvp"
                )
        # u -> J^T u, recorded for a placeholder u (its value is irrelevant: the map is linear)
        us = tuple(_zeros(y).requires_grad_() for y in outs.items)
        jt_u = _pullback(outs.items, xs, us, create_graph=True)
        if strict:
            _demand_graph(jt_u, "grad_inputs")
        # d<J^T u, v>/du = J v
        jv = _settle(
            _pullback(jt_u, us, cots, create_graph),
            outs.items,
            strict,
            create_graph,
            "jvp",
            "jacobian",
        )
    return (
        outs.give_back(_handed_out(outs.items, create_graph)),
        outs.give_back(_handed_out(jv, create_graph)),
    )


# ---- jacobian ------------------------------------------------------------------------------------


def _jacobian_blocks(i, y, xs, create_graph, strict):
    """dy/dx for every x in ``xs``, each of shape ``y.shape + x.shape``: one pull-back per
    element of ``y`` (``i``: y's place among the outputs, for strict mode's message)."""
    n = y.numel()
    rows = [[] for _ in xs]
    for e in range(n):
        onehot = np.zeros(n)
        onehot[e] = 1.0
        seed = _constant(onehot.reshape(tuple(y.shape)), y.dtype)
        row = _pullback((y,), xs, (seed,), create_graph, keep=True)
        for k, (g, x) in enumerate(zip(row, xs, strict=True)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input "
                        f"{k}. This is not allowed in strict mode."
                    )
                g = _zeros(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(_CONSTANT_WITH_GRAPH.format(what="jacobian", k=k))
            rows[k].append(g)
    blocks = []
    for got, x in zip(rows, xs, strict=True):
        shape = tuple(y.shape) + tuple(x.shape)
        blocks.append(_ops.reshape(_ops.stack(got), shape) if got else _filled(shape, x.dtype))
    return tuple(blocks)


def _forward_jacobian(func, inputs):
    """The Jacobian by forward mode on the tape: all input directions in one compiled tangent
    sweep.  Nested as PyTorch's forward-mode jacobian: lists for a tuple of inputs."""
    ins = _inputs(inputs, "jacobian")
    with enable_grad():
        # an input that requires grad is aliased, so that an outer derivative (the outer
        # Jacobian of hessian(outer_jacobian_strategy="forward-mode")) runs through it
        xs = _stand_ins(ins.items, True)
        outs = _group(func(*xs), "outputs", "jacobian")
    ys = outs.items
    tape = STATE.tape
    in_sizes = [x.numel() for x in xs]
    out_sizes = [y.numel() for y in ys]
    row_at = np.cumsum([0, *out_sizes])
    col_at = np.cumsum([0, *in_sizes])
    J = np.zeros((row_at[-1], col_at[-1]))
    # outputs on this tape, or an input handed back as is (it enters the tape here)
    on_tape = [
        i
        for i, y in enumerate(ys)
        if y.requires_grad and (y._tape is tape or any(y is x for x in xs))
    ]
    if on_tape:
        out_rows = [row_for(tape, ys[i]) for i in on_tape]  # before reading the inputs' rows
        in_rows = [x._row if x._tape is tape else -1 for x in xs]
        J[np.concatenate([np.arange(row_at[i], row_at[i + 1]) for i in on_tape])] = (
            _forward.jacobian_forward(
                tape, in_rows, in_sizes, out_rows, [out_sizes[i] for i in on_tape]
            )
        )

    def block(i, k):
        y, x = ys[i], xs[k]
        part = J[row_at[i] : row_at[i + 1], col_at[k] : col_at[k + 1]]
        return Tensor._const(part.reshape(tuple(y.shape) + tuple(x.shape)).astype(y.dtype))

    per_output = [[block(i, k) for k in range(len(xs))] for i in range(len(ys))]
    if not ins.tupled:
        per_output = tuple(blocks[0] for blocks in per_output)
    return per_output if outs.tupled else per_output[0]


def _as_forward_layout(blocks, inputs):
    """A reverse-mode Jacobian's nesting (tuples) as forward mode's: a list over a tuple of
    inputs (per output)."""
    if not isinstance(inputs, tuple):
        return blocks
    if blocks and isinstance(blocks[0], tuple):  # several outputs: J[i][j]
        return [list(row) for row in blocks]
    return list(blocks)


def jacobian(
    func: Callable,
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: PyTorch's ``torch.autograd.functional.jacobian``.

    One input and one output give one Tensor of shape ``out.shape + in.shape``; a tuple of
    either gives a tuple, both a tuple of tuples ``J[i][j]`` (output i, input j).
    ``strategy="forward-mode"`` (with ``vectorize=True``, as PyTorch requires) takes it by
    forward mode.

    Examples:
        >>> import tapegrad as tg
        >>> tg.autograd.functional.jacobian(lambda x: x ** 2, tg.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if strategy not in _MODES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `strict=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                "implemented for `vectorize=True`."
            )
        if STATE.enabled and any(
            isinstance(x, Tensor) and x.requires_grad
            for x in (inputs if isinstance(inputs, tuple) else (inputs,))
        ):
            # the compiled tangent sweep gives numbers without a graph; an outer derivative
            # needs one, as PyTorch's forward-mode Jacobian has: the same values by reverse
            # mode with a graph, laid out as forward mode's (lists for a tuple of inputs)
            return _as_forward_layout(jacobian(func, inputs, create_graph=True), inputs)
        return _forward_jacobian(func, inputs)
    with enable_grad():
        ins = _inputs(inputs, "jacobian")
        xs = _stand_ins(ins.items, create_graph)
        outs = _group(func(*xs), _RESULTS, "jacobian")
        if strict:
            _demand_graph(outs.items, "outputs")
            if vectorize:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                    "are not supported together. Please either set `strict=False` or "
                    "`vectorize=False`."
                )
        per_output = [
            ins.give_back(
                _handed_out(_jacobian_blocks(i, y, xs, create_graph, strict), create_graph)
            )
            for i, y in enumerate(outs.items)
        ]
    return outs.give_back(per_output)


# ---- second order --------------------------------------------------------------------------------


def hessian(
    func: Callable,
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of scalar ``func``: PyTorch's ``torch.autograd.functional.hessian``, the
    Jacobian of its Jacobian.

    One input gives one Tensor of shape ``in.shape + in.shape``; a tuple of inputs a tuple of
    tuples ``H[i][j]``.  ``func`` must return a Tensor of one element.

    Examples:
        >>> import tapegrad as tg
        >>> tg.autograd.functional.hessian(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    ins = _group(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _MODES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def gradient(*xs):
        # the inner derivative, kept on the tape for the outer Jacobian (zeros where unused)
        out = _single_scalar(func(*xs), "hessian", strict).reshape(())
        g = _pullback((out,), xs, (None,), create_graph=True)
        g = tuple(_zeros(x) if gk is None else gk for gk, x in zip(g, xs, strict=True))
        if strict:
            _demand_graph(g, "jacobian")
        return g

    H = jacobian(gradient, ins.items, create_graph, strict, vectorize, outer_jacobian_strategy)
    return H if ins.tupled else H[0][0]


def _value_and_gradient(func, inputs, v, create_graph, strict, fn):
    """The common start of vhp and hvp: (inputs, stand-ins, cotangents, output, gradient
    taken with a graph)."""
    ins = _inputs(inputs, fn)
    xs = _stand_ins(ins.items, create_graph)
    cots = _cotangents(v, ins, fn, create_graph, "input to the user-provided function is")
    out = _single_scalar(func(*xs), fn, strict)
    g = _pullback((out,), xs, (None,), create_graph=True)
    if strict:
        _demand_graph(g, "jacobian")
    return ins, xs, cots, out, g


def vhp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, TensorOrTensors]:
    """``(func(*inputs), v @ H)`` for scalar ``func``: PyTorch's
    ``torch.autograd.functional.vhp``.  The result has the structure of ``inputs``.

    Examples:
        >>> import tapegrad as tg
        >>> f = lambda x: (x ** 3).sum()
        >>> tg.autograd.functional.vhp(f, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))
        (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        ins, xs, cots, out, g = _value_and_gradient(func, inputs, v, create_graph, strict, "vhp")
        vh = _settle(
            _pullback(g, xs, cots, create_graph), xs, strict, create_graph, "vhp", "hessian"
        )
    return _handed_out((out,), create_graph)[0], ins.give_back(_handed_out(vh, create_graph))


def hvp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, TensorOrTensors]:
    """``(func(*inputs), H @ v)`` for scalar ``func``: PyTorch's
    ``torch.autograd.functional.hvp`` (the double-backward trick, as PyTorch's).  The result
    has the structure of ``inputs``.

    Examples:
        >>> import tapegrad as tg
        >>> f = lambda x: x[0] ** 2 * x[1]
        >>> tg.autograd.functional.hvp(f, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.0]))
        (tensor(2.), tensor([4., 2.]))
    """
    with enable_grad():
        ins, xs, cots, out, g = _value_and_gradient(func, inputs, v, create_graph, strict, "hvp")
        # u -> H^T u recorded for a placeholder u; pulled back with v it gives H v
        us = tuple(_zeros(x).requires_grad_() for x in xs)
        ht_u = _pullback(g, xs, us, create_graph=True)
        hv = _pullback(ht_u, us, cots, create_graph)
        hv = _settle(hv, xs, strict, create_graph, "hvp", "hessian")
    return _handed_out((out,), create_graph)[0], ins.give_back(_handed_out(hv, create_graph))
