"""``tg.checkpoint(fn, *args)``: keep fn's inputs and outputs on the tape, not its insides.

The call records ``fn`` on a scratch tape (so the Tensors it reads, arguments or captured in
a closure, such as module parameters, are found), keeps only the output values, and records a
custom op on the real tape: its inputs are those Tensors, its outputs one CUSTOM row each
(payload ``CheckpointNode``).  At backward the payload runs ``fn`` again on a fresh scratch
tape, where each input enters as a leaf, sweeps that tape from the output adjoints and adds
the inputs' gradients into the real tape.  The random generator of ``tg.randn``/``tg.rand`` and
NumPy's global one (``np.random.*``) are restored for the recomputation, so dropout-style
randomness repeats; the recomputed outputs are compared with the recorded ones, and a
difference raises (the gradient would be that of other values).
"""

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import creation as _creation
from ..core import methods as M
from ..core import tape as T
from ..core.tensor import STATE, holds_tensor, new_handle, row_of
from ..core.tensor import TensorBase as Tensor
from .engine import partial_grads, sweep
from .forward import tangent_graph, tangent_values
from .function import CustomNode, fit_graph_grad


def _run_on_scratch(fn, args, kwargs, inputs):
    """Run ``fn`` recording on a scratch tape where ``inputs`` enter as leaves.

    Returns (scratch tape, outputs tuple, single, output rows on scratch (or None), input rows
    on scratch).  The input handles get their own tape and row back afterwards."""
    main = STATE.tape
    s = T.ScratchTape(rows=256, values=1024)
    saved = [(h, h._tape, h._row, h._leaf) for h in inputs]
    STATE.tape = s
    try:
        in_rows = []
        for h in inputs:
            h._tape = None
            h._leaf = True  # enters the scratch tape as a LEAF row
            in_rows.append(row_of(s, h))
        raw = fn(*args, **kwargs)
        s = STATE.tape  # (the scratch tape object, unless it reset itself)
        single = not isinstance(raw, tuple)
        outs = (raw,) if single else tuple(raw)
        out_rows = [
            o._row if isinstance(o, Tensor) and o._rg and o._tape is s else None for o in outs
        ]
    finally:
        STATE.tape = main
        for h, tape, row, leaf in saved:
            h._tape, h._row, h._leaf = tape, row, leaf
    return s, outs, single, out_rows, in_rows


def _captured(main, s, known):
    """Grad-requiring Tensors ``fn`` read that are not in ``known``: captured leaves (put back
    on their row of ``main``) and captured graph tensors (FREED placeholders on ``s``)."""
    found = []
    for r in s.leaf_rows:
        h = s.entered(r)
        if h is not None and h._rg and id(h) not in known:
            known.add(id(h))
            _restore_leaf(main, h, s)
            found.append(h)
    for r in np.flatnonzero(s.ops() == T.FREED):
        h = s.entered(int(r))
        if h is not None and id(h) not in known:
            known.add(id(h))
            found.append(h)
    return found


def _restore_leaf(main, h, s):
    """A leaf that entered the scratch tape gets back its latest row on ``main`` (if its value
    is still the one recorded there); otherwise it re-enters ``main`` when used next."""
    if h._tape is not s:
        return
    h._tape, h._row = None, -1
    if not main.alive:
        return
    for r in reversed(main.leaf_rows):
        if main.entered(r) is h:
            if np.array_equal(main.value(r), np.ravel(h._v)):
                h._tape, h._row = main, r
            return


def _unpinned(x):
    """``x``, or for a graph handle a twin of it (same value, tape and row) holding no range
    token: the payload lives on the tape, and a token it held would keep its own rows, and
    so itself, for ever (see tape.py)."""
    if not isinstance(x, Tensor) or x._leaf or x._tape is None:
        return x
    h = new_handle()
    h._v, h._rg, h._leaf, h._row, h._tape = x._v, x._rg, False, x._row, x._tape
    if x._meta is not None:
        h._m = x._meta  # the version counter is shared
    return h


def _same_values(new, old):
    """Equal up to the last bits (NaN where NaN is): the same code on the same values."""
    finite = np.abs(old[np.isfinite(old)])
    scale = float(finite.max()) if finite.size else 0.0
    return bool(np.allclose(new, old, rtol=1e-12, atol=1e-300 + 1e-12 * scale, equal_nan=True))


class CheckpointNode(CustomNode):
    """Payload of ``checkpoint``: recomputes ``fn`` at backward."""

    name = "CheckpointFunctionBackward"

    def input_handles(self, t):
        return list(self.inputs)  # the very objects ``args`` holds (twins of graph ones)

    def __init__(self, fn, args, kwargs, rng_state):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state

    def _recompute(self, runner):
        gen = _creation.rng().bit_generator
        now = gen.state, np.random.get_state()
        if self.rng_state is not None:
            gen.state = self.rng_state[0]
            np.random.set_state(self.rng_state[1])
        try:
            return runner()
        finally:
            gen.state = now[0]
            np.random.set_state(now[1])

    def _check_recomputed(self, t, outs):
        """Raise unless the recomputation gave the outputs of the forward pass (kept in the
        output rows): else fn read something that changed since (a non-Tensor argument, an
        attribute, a global) or drew other random numbers, and the gradients would be those
        of other values, silently."""
        for j, k in enumerate(self.out_pos):
            old = t.value(self.output_rows[j])
            o = outs[k] if k < len(outs) else None
            same_shape = isinstance(o, Tensor) and o.shape == self.out_shapes[j]
            new = np.ravel(o._v) if same_shape else None
            if same_shape and _same_values(new, old):
                continue
            name = getattr(self.fn, "__name__", "fn")
            if same_shape:
                what = f"values up to {np.nanmax(np.abs(new - old)):.3g} apart"
            else:
                what = f"shape {np.shape(getattr(o, '_v', o))}, not {self.out_shapes[j]}"
            raise RuntimeError(
                f"checkpoint: recomputing {name} for the backward gave output {k} other "
                f"values than the forward pass ({what}), so its gradient would be that of "
                "other values. A checkpointed function must compute the same thing again: "
                "pass what changes between the forward and the backward (an argument, an "
                "attribute, a global) as a Tensor argument or leave it unchanged until the "
                "backward; random draws repeat only with preserve_rng_state=True and "
                "tapegrad's or NumPy's global generator"
            )

    def jvp_values(self, tangents):
        """Forward mode: recompute ``fn`` on a scratch tape and push the tangents through it
        (``tangents``: one flat array or None per input row)."""
        t = self.live_tape()
        self.check_inputs(t)
        inputs = self.input_handles(t)
        s, outs, _, out_rows, in_rows = self._recompute(
            lambda: _run_on_scratch(self.fn, self.args, self.kwargs, inputs)
        )
        try:
            self._check_recomputed(t, outs)
            seeds = [(r, np.ravel(v)) for r, v in zip(in_rows, tangents) if v is not None]
            rows = [r for r in out_rows if r is not None]
            res = (
                tangent_values(s, [r for r, _ in seeds], [v for _, v in seeds], rows)
                if rows and seeds
                else []
            )
            by_row = dict(zip(rows, res))
            return [None if out_rows[k] is None else by_row.get(out_rows[k]) for k in self.out_pos]
        finally:
            _captured(t, s, {id(h) for h in inputs})
            s.alive = False

    def jvp_graph(self, tangents):
        """Nested forward mode: recompute ``fn`` on the live tape and push the tangent Tensors
        through it with the spec's rules on Tensors (so they can be differentiated again)."""
        t = self.live_tape()
        self.check_inputs(t)
        first = t.n  # the recomputed rows start here; the walk visits only them
        raw = self._recompute(lambda: self.fn(*self.args, **self.kwargs))
        outs = raw if isinstance(raw, tuple) else (raw,)
        self._check_recomputed(t, outs)
        rows = [o._row if isinstance(o, Tensor) and o._rg and o._tape is t else None for o in outs]
        seeds = {r: v for r, v in zip(self.input_rows, tangents) if v is not None}
        live = [r for r in rows if r is not None]
        by_row = dict(zip(live, tangent_graph(t, seeds, live, first))) if live and seeds else {}
        return [None if rows[k] is None else by_row.get(rows[k]) for k in self.out_pos]

    def backward_values(self, t, grads):
        self.check_inputs(t)
        inputs = self.input_handles(t)
        s, outs, _, out_rows, in_rows = self._recompute(
            lambda: _run_on_scratch(self.fn, self.args, self.kwargs, inputs)
        )
        try:
            self._check_recomputed(t, outs)
            top = -1
            for k, g in zip(self.out_pos, grads):
                r = out_rows[k] if k < len(out_rows) else None
                if g is None or r is None:
                    continue
                voff = s.voff  # (first: reading it writes pending rows, which may grow adj)
                T.add_adjoint(s.adj, s.state, voff, r, np.ravel(g))
                top = max(top, r)
            if top < 0:
                return [None] * len(in_rows)
            sweep(s, top)
            return [
                s.gradient(r).reshape(shape).copy() if s.state[r] & 1 else None
                for r, shape in zip(in_rows, self.in_shapes)
            ]
        finally:
            _captured(t, s, {id(h) for h in inputs})
            s.alive = False

    def vjp_graph(self, grads):
        """create_graph=True: recompute on the live tape and differentiate with create_graph,
        so the input gradients carry a graph."""
        t = self.live_tape()
        self.check_inputs(t)
        inputs = self.input_handles(t)
        raw = self._recompute(lambda: self.fn(*self.args, **self.kwargs))
        outs = raw if isinstance(raw, tuple) else (raw,)
        self._check_recomputed(t, outs)
        ys, gs = [], []
        for k, g in zip(self.out_pos, grads):
            if g is not None and isinstance(outs[k], Tensor) and outs[k]._rg:
                ys.append(outs[k])
                gs.append(g)
        if not ys:
            return [None] * len(inputs)
        # partial gradients: an input computed from another one (checkpoint(f, x, x * 3))
        # gets its share through its own history from the outer sweep, not here as well
        res = partial_grads(ys, inputs, gs)
        return [
            fit_graph_grad(g, shape, self.name, k)
            for k, (g, shape) in enumerate(zip(res, self.in_shapes))
        ]


def checkpoint(
    fn: Callable,
    *args: Any,
    preserve_rng_state: bool = True,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """``fn(*args, **kwargs)`` without keeping its intermediate values on the tape.

    They are recomputed during backward; gradients equal those without checkpointing.  fn may
    read Tensors other than its arguments (e.g. module parameters): they get gradients too.
    ``fn`` must be deterministic apart from tapegrad's own random generator and NumPy's global
    one (``np.random.*``), both restored for the recomputation unless
    ``preserve_rng_state=False``; a ``np.random.Generator`` fn draws from is not restored.
    A recomputation whose outputs differ from the forward pass's (fn read a dict, attribute or
    global changed since, or drew other random numbers) raises instead of differentiating
    other values.
    ``use_reentrant`` is accepted for PyTorch compatibility and ignored.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([0.5, -1.0], requires_grad=True)
        >>> def block(x):                   # its tanh rows are not kept on the tape
        ...     return tg.tanh(tg.tanh(x * w) * 2.0)
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.checkpoint(block, x)
        >>> y.grad_fn.name()
        'CheckpointFunctionBackward'
        >>> y.sum().backward()              # recomputes block, then sweeps it
        >>> x.grad, w.grad
        (tensor([0.3698, -0.0115]), tensor([0.7395, 0.0229]))
    """
    if not STATE.enabled:
        return fn(*args, **kwargs)
    main = STATE.tape
    rng_state = (
        (_creation.rng().bit_generator.state, np.random.get_state()) if preserve_rng_state else None
    )
    given = list(args) + list(kwargs.values())
    args = tuple(_unpinned(a) for a in args)
    kwargs = {k: _unpinned(v) for k, v in kwargs.items()}
    known, arg_inputs = set(), []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and a._rg and id(a) not in known:
            known.add(id(a))
            arg_inputs.append(a)
    s, outs, single, out_rows, _ = _run_on_scratch(fn, args, kwargs, arg_inputs)
    try:
        inputs = arg_inputs + _captured(main, s, known)
    finally:
        s.alive = False
    # outputs other than Tensors (a count, a flag, None) pass through as PyTorch's do; a
    # container of Tensors would hand out the scratch tape's handles, whose graph is gone
    tensor_pos = []
    for k, o in enumerate(outs):
        if isinstance(o, Tensor):
            tensor_pos.append(k)
        elif holds_tensor(o):
            raise TypeError(
                f"checkpoint: {getattr(fn, '__name__', 'fn')} returned a "
                f"{type(o).__name__} holding Tensors; return the Tensors themselves (a "
                "Tensor or a tuple of Tensors and other values)"
            )
    values = [outs[k]._v for k in tensor_pos]
    differentiable = [out_rows[k] is not None for k in tensor_pos]
    if not any(differentiable):
        handles = [Tensor._const(v) for v in values]
    else:
        node = CheckpointNode(fn, args, kwargs, rng_state)
        handles = node.record(inputs, values, differentiable)
        # the node's output positions index fn's whole output (the recomputation's too)
        node.out_pos = tuple(tensor_pos[k] for k in node.out_pos)
        node.const_outputs = tuple((tensor_pos[k], r) for k, r in node.const_outputs)
        node.n_out = len(outs)
        node.inputs = tuple(inputs)
        twins = {id(b): a for a, b in zip(given, list(args) + list(kwargs.values()))}
        # in-place checks look at the user's own handles
        node.input_refs = tuple(weakref.ref(twins.get(id(x), x)) for x in inputs)
    res = list(outs)
    for k, h in zip(tensor_pos, handles):
        res[k] = h
    _keep_aliases(res, outs, tensor_pos, given, args, kwargs, s)
    return res[0] if single else tuple(res)


def _keep_aliases(res, outs, tensor_pos, given, args, kwargs, s):
    """An output of ``fn`` that is one of its arguments, or a view of one (``t[1:]``,
    ``t.reshape(...)``, ``t.T``), shares the argument's memory in the plain call: an in-place
    change of either shows in the other.  The output is therefore the argument itself, or
    that view of it taken again on the caller's tape (nothing to recompute), instead of a
    value of its own that a later in-place change would silently keep apart from the
    argument."""
    twins = {id(b): a for a, b in zip(given, list(args) + list(kwargs.values()))}
    for k in tensor_pos:
        o = outs[k]
        if id(o) in twins and isinstance(twins[id(o)], Tensor):
            res[k] = twins[id(o)]  # fn returned an argument as is
            continue
        base = M._base_of(o)
        if base is None:
            continue
        base = twins.get(id(base), base)
        if base._tape is s:  # a view of one of fn's own intermediates
            continue
        key = o._meta["base"][1]
        view = M.read_view(key, base)  # derived from the argument on the caller's tape
        M._note_view(base, view, key)
        res[k] = view
