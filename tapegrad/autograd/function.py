"""Custom differentiable operations: ``tg.Function`` (PyTorch's ``torch.autograd.Function``).

``MyFn.apply(*args)`` runs ``MyFn.forward(ctx, ...)`` with recording off, on aliases of the
inputs (their values, requiring grad where the inputs do, as PyTorch's forward sees them), and
records one CUSTOM row per differentiable output.  The rows are pushed consecutively and share
one payload, a ``CustomNode`` stored at ``t.side.payloads[row]`` for each of them.  The compiled
sweep stops at the highest reached CUSTOM row (every output adjoint is complete then) and calls
``node.run_backward(t, row)``, which runs the Python backward, adds into the inputs' adjoint
slices and returns the row below the outputs where the compiled sweep resumes.

``CustomNode`` is also the base of ``tg.checkpoint``'s payload (checkpoint.py).  Payload protocol:
``name``, ``input_rows``, ``output_rows``, ``run_backward(t, row)``, ``vjp_graph(grads)`` (for
``create_graph=True``: gradients of the inputs as graph-carrying Tensors, see higher.py).

Under create_graph a Function's backward runs on graph handles: its saved tensors and the
Tensors it keeps as ctx attributes resolve to the rows of the inputs and outputs they stand
for, so a backward written with tapegrad ops is differentiated like any code.  What it takes
off the graph is noted (``FUNCTION_STATE.escapes``: ``.numpy()``, ``.detach()``, ``.item()``,
``.data``, ``.tolist()`` of a Tensor that requires grad, and reads of float Tensors forward
computed and kept, which carry no graph); only then are its gradients rows that raise when
differentiated again, since the next derivative would miss the terms through those values.

The payload keeps no strong reference to the handles of its rows (the tape keeps none either):
it holds weakrefs to them, for the in-place checks, and makes a handle of a row when it needs one
whose handle is gone (``row_tensor``).
"""

import functools
import weakref

import numpy as np

from ..core import tape as T
from ..core.tensor import (
    FUNCTION_STATE,
    STATE,
    TensorBase as Tensor,
    new_handle,
    result,
    row_of,
    tape_for,
    tape_of,
    value_of,
)
from ..core import functions as O
from ..core import methods as M
from .checks import user_code, version_error
from .engine import FREED_MSG, enable_grad, no_grad, recording_paused
from .higher import row_tensor
from ..errors import ForwardModeError


def sum_to_shape(g, shape, who):
    """``g`` (an array) summed down to ``shape`` as PyTorch does for expandable gradients."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    if g.size == int(np.prod(shape, dtype=np.int64)) and g.size == 1:
        return g.reshape(shape)
    try:
        ok = np.broadcast_shapes(g.shape, shape) == g.shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"{who} - got {list(g.shape)} but expected shape compatible with {list(shape)}"
        )
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


class OffGraphDerivativeError(RuntimeError):
    """A higher derivative reached the gradient of a custom backward that took values off
    the graph: the terms through those values would be missing, so it is refused."""


class CustomNode:
    """Payload of a custom op's CUSTOM rows (one object for all of its outputs)."""

    name = "CustomBackward"

    # ---- recording --------------------------------------------------------------------------
    def record(self, inputs, outs, differentiable):
        """Put ``inputs`` (Tensors needing grad) on the tape and push one CUSTOM row per
        differentiable output value; returns the output Tensors."""
        t = tape_for(*inputs)
        self.tape = weakref.ref(t)
        self.input_rows = tuple(row_of(t, x) for x in inputs)
        self.input_refs = tuple(weakref.ref(x) for x in inputs)
        self.in_shapes = tuple(x.shape for x in inputs)
        self.in_versions = tuple(x._version for x in inputs)
        shared = {id(x._v) for x in inputs if x._v.__class__ is not float}
        rows, pos, shapes, handles = [], [], [], []
        self.const_outputs = ()  # (output index, row) of non-differentiable outputs (replays)
        for k, (v, diff) in enumerate(zip(outs, differentiable)):
            if v.__class__ is not float and (id(v) in shared or id(v.base) in shared):
                v = v.copy()  # an output that is an input's array gets a value of its own
            if not diff and not (t.REPLAYS and _numeric(v)):
                handles.append(Tensor._const(v))
                continue
            h = new_handle()
            h._v = v
            h._rg = True
            h._leaf = False
            h._tape = None  # complete before push gives it its token (interrupt safety)
            h._row = -1
            r = t.push(T.CUSTOM, -1, -1, v if diff else np.asarray(v, dtype=np.float64), h, 1)
            t.side.payloads[r] = self
            h._row = r
            h._tape = t
            handles.append(h)
            if not diff:
                # a non-differentiable output (a sign, a rank, an index) on a tape a trace
                # replays: a row the replay recomputes instead of keeping the recorded value,
                # traced so that what f computes from it is recorded too; the op's backward
                # ignores its adjoint and its tangent is zero, as for a piecewise constant
                self.const_outputs += ((k, r),)
                continue
            rows.append(r)
            pos.append(k)
            shapes.append(h.shape)
        self.output_rows = tuple(rows)
        self.rows_end = max(rows + [r for _, r in self.const_outputs], default=-1) + 1
        self.output_refs = tuple(weakref.ref(handles[k]) for k in pos)  # for in-place checks
        self.out_pos = tuple(pos)  # forward output index of each output row
        self.out_shapes = tuple(shapes)
        self.n_out = len(outs)
        return handles

    # ---- replay by tg.trace: the op's Python code runs again on the replay's values ---------
    replayable = False  # an op that keeps what replay_forward needs sets this when recorded

    def replay_forward(self, xs):
        """``(outputs, saved)`` at the operand values ``xs`` (one array per input row, shaped as
        recorded): one array per forward output, and what ``replay_backward`` and
        ``replay_tangent`` need."""
        raise NotImplementedError

    def replay_backward(self, saved, grads):
        """Gradients (arrays or None, one per input row) from ``grads`` (one array or None per
        output row)."""
        raise NotImplementedError

    def replay_tangent(self, saved, tangents):
        """Tangents (arrays or None, one per output row) from ``tangents`` (one array or None
        per input row)."""
        raise NotImplementedError

    def refuse_in_trace(self, t, mode):
        """A derivative taken inside a traced ``f`` through this op would be recorded from its
        rules' Python, whose decisions and NumPy values a replay cannot repeat: refuse it."""
        if t.REPLAYS:
            raise TypeError(
                f"tg.trace: f takes a derivative ({mode}) through {self.name}, whose "
                "derivative rules run Python on the recorded values: the trace would freeze "
                "them. Differentiate the trace instead (tr.grad, tr.jvp), or use tg.grad / "
                "tg.hessian on f, which record every call"
            )

    def checked_vjp_graph(self, t, grads):
        """``vjp_graph`` for create_graph, where a gradient computed from graph-carrying
        values with non-differentiable operations raises if differentiated again."""
        self.refuse_in_trace(t, "a backward with create_graph, or tg.grad inside f")
        # graph-carrying values the backward could see: incoming gradients and saved tensors
        deps = [x for x in grads if x is not None and x._rg]
        ctx = getattr(self, "ctx", None)  # checkpoints recompute instead of saving
        if ctx is not None:
            deps += [
                h
                for h in (self.row_handle(t, row, ref) for row, _, ref in ctx._owner.values())
                if h._rg
            ]
        results = self.vjp_graph(grads)
        if deps:
            results = [_once_differentiable(x, deps, self.name) for x in results]
        return results

    @staticmethod
    def row_handle(t, row, ref):
        """The handle of ``row``: the recorded one (``ref``) if still there, else a new one."""
        h = ref()
        if h is not None and tape_of(h) is t and h._row == row:
            return h
        return row_tensor(t, row)

    def input_handles(self, t):
        return [self.row_handle(t, r, ref) for r, ref in zip(self.input_rows, self.input_refs)]

    def output_handles(self, t):
        return [self.row_handle(t, r, ref) for r, ref in zip(self.output_rows, self.output_refs)]

    def live_tape(self):
        t = self.tape()
        if t is None or not t.alive:
            raise RuntimeError(FREED_MSG)
        return t

    def check_inputs(self, t):
        """Raise the in-place error when an input changed since it was recorded.  Only its
        version counts: a handle also leaves its row when it is merely read (``x.data``
        hands out a leaf's array and drops its row), which changes nothing."""
        for r, v in zip(self.input_rows, self.in_versions):
            if t.op(r) == T.FREED:
                raise RuntimeError(FREED_MSG)
        for r, v, ref in zip(self.input_rows, self.in_versions, self.input_refs):
            h = ref()
            if h is not None and h._version != v:
                raise version_error(t, r, h, v, self.name)

    # ---- backward ---------------------------------------------------------------------------
    def output_grads(self, t, row):
        """Adjoints of the output rows (arrays shaped like the outputs; None when unreached)."""
        out = []
        for r, shape in zip(self.output_rows, self.out_shapes):
            if r <= row and t.state[r] & 1:
                out.append(t.gradient(r).reshape(shape).copy())
            else:
                out.append(None)
        return out

    def run_backward(self, t, row):
        grads = self.output_grads(t, row)
        with user_code():  # (a backward it starts leaves this sweep's rows as they were)
            grads = self.backward_values(t, grads)
        self.add_input_grads(grads, t.adj, t.state, t.voff, t.rg)
        return self.output_rows[0] - 1

    def add_input_grads(self, grads, adj, state, voff, rg):
        """Add ``grads`` (one per input row, or None), each summed down to its input's shape,
        into the adjoints ``adj`` of the input rows that need one (state bit 1 set)."""
        for k, (r, g) in enumerate(zip(self.input_rows, grads)):
            if g is None or not rg[r]:
                continue
            g = sum_to_shape(
                np.asarray(g, dtype=np.float64),
                self.in_shapes[k],
                f"Function {self.name} returned an invalid gradient at index {k}",
            )
            T.add_adjoint(adj, state, voff, r, g.reshape(-1))

    def backward_values(self, t, grads):
        """Gradients of the inputs (aligned with input_rows) from the output adjoints."""
        raise NotImplementedError


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors, ``needs_input_grad``, free attributes.

    Examples:
        >>> import tapegrad as tg
        >>> class Scale(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x, k):
        ...         ctx.k = k                       # any attribute: kept for backward
        ...         return x * k
        ...
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad * ctx.k, None       # no gradient for the number k
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> Scale.apply(x, 3.0).sum().backward()
        >>> x.grad
        tensor([3., 3.])
    """

    def __init__(self):
        self._saved = ()
        self._owner = {}  # id(forward-side tensor) -> tape row it stands for
        self._graph = None  # during vjp_graph: id(forward-side tensor) -> graph handle
        self._node = None
        self._non_diff = ()
        self._dirty = ()
        self._inputs = frozenset()  # ids of the Tensors forward got
        self._derived = ()  # names of attributes forward computed off the graph (see apply)
        self._converted = False  # forward read an input that requires grad as NumPy / floats
        self._watched = None  # during vjp_graph: those attributes, read through __getattr__
        self.needs_input_grad = ()
        self.materialize_grads = True

    def __getattr__(self, name):
        # (called only for an attribute not found: during a create_graph backward, a value
        # forward computed off the graph, whose read is noted; see FunctionNode.vjp_graph)
        watched = self.__dict__.get("_watched")
        if watched is not None and name in watched:
            value = watched[name]
            escapes = FUNCTION_STATE.escapes
            if escapes is not None:
                escapes.append((value, f"ctx.{name}, computed by forward off the graph"))
            return value
        raise AttributeError(f"'FunctionCtx' object has no attribute '{name}'")

    def save_for_backward(self, *tensors):
        """Keep Tensors (or None) for backward, read back through ``saved_tensors``; an
        in-place change of a saved tensor before backward raises there."""
        for x in tensors:
            if x is not None and not isinstance(x, Tensor):
                raise TypeError(
                    f"save_for_backward can only save Tensors (or None), got "
                    f"{type(x).__name__}; keep other values as ctx attributes"
                )
        self._saved = tensors

    @property
    def saved_tensors(self):
        """The tuple given to ``save_for_backward`` (checked against in-place changes)."""
        node = self._node
        if node is not None:
            node.check_saved(self._saved)
        if self._graph is not None:
            graph = self._graph
            escapes = FUNCTION_STATE.escapes
            if escapes is not None:
                escapes.extend(
                    (x, "a saved tensor forward computed")
                    for x in self._saved
                    if _derived(x) and id(x) not in graph and id(x) not in self._inputs
                )
            return tuple(None if x is None else graph.get(id(x), x) for x in self._saved)
        return tuple(self._saved)

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *outputs):
        """Declare forward outputs (indices, masks ...) that get no gradient."""
        self._non_diff = outputs

    def set_materialize_grads(self, value):
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """Declare the inputs forward changed in place (and returns): ``apply`` then gives back
        the input itself, now the op's output, as PyTorch does."""
        self._dirty = tensors


class FunctionNode(CustomNode):
    """Payload of ``Function.apply``: calls the user's backward."""

    def __init__(self, cls, ctx, n_args, arg_index, tensor_args):
        self.cls = cls
        self.tensor_args = tensor_args  # whether each apply argument is a Tensor
        self.ctx = ctx
        self.name = cls.__name__ + "Backward"
        self.n_args = n_args
        self.arg_index = arg_index  # apply-argument position of each input row
        ctx._node = self

    def check_saved(self, saved):
        t = self.live_tape()
        owner = self.ctx._owner
        for x in saved:
            if x is None or id(x) not in owner:
                continue
            r, v, ref = owner[id(x)]
            h = ref()
            if h is not None and h._version != v:
                raise _version_error(t, r, h, v, self.name)

    def _grads_in(self, grads, make, ctx=None):
        """One gradient per forward output: the given ones, zeros (materialized) or None."""
        full = [None] * self.n_out
        for k, g, shape in zip(self.out_pos, grads, self.out_shapes):
            full[k] = g
        for k in range(self.n_out):
            if full[k] is None and (ctx or self.ctx).materialize_grads:
                full[k] = make(k)
        return full

    def _call_backward(self, grads, ctx=None):
        res = self.cls.backward(ctx or self.ctx, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = self.n_args
        if len(res) != n:
            if len(res) > n and all(g is None for g in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(
                    f"function {self.name} returned an incorrect number of "
                    f"gradients (expected {n}, got {len(res)})"
                )
        for i, (g, is_tensor) in enumerate(zip(res, self.tensor_args)):
            if g is not None and not is_tensor:
                raise RuntimeError(
                    f"function {self.name} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Tensor"
                )
        return [res[i] for i in self.arg_index]

    def _zeros(self, k):
        shape = self.fwd_shapes[k]
        return Tensor._const(0.0 if shape == () else np.zeros(shape))

    def backward_values(self, t, grads, ctx=None):
        grads = [None if g is None else Tensor._const(result(g)) for g in grads]
        FUNCTION_STATE.off_graph += 1  # (its tensors convert freely, as without grad mode)
        try:
            with no_grad():
                res = self._call_backward(self._grads_in(grads, self._zeros, ctx), ctx)
        finally:
            FUNCTION_STATE.off_graph -= 1
        return [
            None if g is None else (g._v if isinstance(g, Tensor) else value_of(g)) for g in res
        ]

    def jvp_values(self, tangents, ctx=None):
        """Output tangents (flat arrays) from the user's ``jvp(ctx, *tangents)`` staticmethod,
        given one flat tangent or None per input row (forward mode)."""
        if getattr(self.cls, "jvp", None) is None:
            raise self.no_jvp_error()
        full = [None] * self.n_args
        for k, (v, shape) in enumerate(zip(tangents, self.in_shapes)):
            full[self.arg_index[k]] = Tensor._const(
                result(np.zeros(shape) if v is None else np.asarray(v).reshape(shape))
            )
        FUNCTION_STATE.off_graph += 1  # (its tensors convert freely, as without grad mode)
        try:
            with no_grad():
                res = self.cls.jvp(ctx or self.ctx, *full)
        finally:
            FUNCTION_STATE.off_graph -= 1
        res = self._jvp_outputs(res)
        return [None if res[k] is None else np.ravel(value_of(res[k])) for k in self.out_pos]

    def _jvp_outputs(self, res):
        """What the user's ``jvp`` returned, as one tangent (or None) per output."""
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) != self.n_out:
            raise RuntimeError(
                f"function {self.name[:-8]}.jvp returned {len(res)} tangents "
                f"for {self.n_out} outputs"
            )
        return res

    def jvp_graph(self, tangents):
        """Output tangents as graph-carrying Tensors (nested forward mode, e.g. a grad of a
        jvp): the user's ``jvp`` under grad mode with ``ctx.saved_tensors`` resolved to the
        handles of the recorded rows, as ``vjp_graph`` does for backward."""
        if getattr(self.cls, "jvp", None) is None:
            raise self.no_jvp_error()
        full = [None] * self.n_args
        for k, (v, shape) in enumerate(zip(tangents, self.in_shapes)):
            full[self.arg_index[k]] = v if v is not None else self._zeros_like(shape)
        graph = self.ctx._graph = self._graph_handles()
        kept = _swap_attributes(self.ctx, graph)
        try:
            with enable_grad():
                res = self.cls.jvp(self.ctx, *full)
        finally:
            _restore_attributes(self.ctx, kept)
            self.ctx._graph = None
        res = self._jvp_outputs(res)
        out = []
        for k, shape in zip(self.out_pos, self.out_shapes):
            g = res[k]
            if g is not None and not isinstance(g, Tensor):
                g = Tensor._const(result(np.asarray(g, dtype=np.float64)))
            if g is not None and g.shape != tuple(shape):
                g = O.reshape(O.broadcast_to(g, shape), shape)
            out.append(g)
        return out

    # ---- replay by tg.trace: forward and backward run again on the replay's values -------
    def replay_forward(self, xs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = self.ctx.needs_input_grad
        args = list(self.fwd_args)
        for i, x in zip(self.arg_index, xs):
            args[i] = Tensor._const(result(x))
        _, outs = _call_forward(self.cls, ctx, args)
        return [_as_output(o, self.cls.__name__) for o in outs], ctx

    def replay_backward(self, ctx, grads):
        return self.backward_values(None, grads, ctx)

    def replay_tangent(self, ctx, tangents):
        return self.jvp_values(tangents, ctx)

    @staticmethod
    def _zeros_like(shape):
        return Tensor._const(0.0 if tuple(shape) == () else np.zeros(shape))

    def no_jvp_error(self):
        return ForwardModeError(
            f"forward mode (tg.jvp / tg.hvp / tg.hessian / tg.jacfwd) reached the custom "
            f"Function {self.cls.__name__}, which has no jvp: define a `jvp(ctx, *tangents)` "
            "staticmethod returning one tangent per output (PyTorch's forward-AD convention), "
            "or use reverse mode (tg.vjp, tg.jacrev)"
        )

    def _graph_handles(self):
        """``ctx.saved_tensors`` resolved to handles of the recorded rows (graph-carrying)."""
        t = self.live_tape()
        return {
            obj_id: self.row_handle(t, r, ref) for obj_id, (r, _, ref) in self.ctx._owner.items()
        }

    def vjp_graph(self, grads):
        """Input gradients as graph-carrying Tensors: the user's backward, called under grad
        mode with ``ctx.saved_tensors`` resolved to the handles of the recorded rows (so a
        backward written with tapegrad ops is itself differentiable)."""
        grads = [
            None
            if g is None
            else (g if isinstance(g, Tensor) else Tensor._const(result(np.asarray(g, float))))
            for g in grads
        ]
        ctx = self.ctx
        graph = ctx._graph = self._graph_handles()
        kept = _swap_attributes(ctx, graph)
        ctx._watched = {k: ctx.__dict__.pop(k) for k in ctx._derived if k in ctx.__dict__}
        escapes, FUNCTION_STATE.escapes = FUNCTION_STATE.escapes, []
        off_graph, FUNCTION_STATE.off_graph = FUNCTION_STATE.off_graph, 0
        try:
            with enable_grad():
                res = self._call_backward(self._grads_in(grads, self._zeros))
        finally:
            self.escapes, FUNCTION_STATE.escapes = FUNCTION_STATE.escapes, escapes
            FUNCTION_STATE.off_graph = off_graph
            for k, v in ctx._watched.items():  # (unless backward set the attribute anew)
                ctx.__dict__.setdefault(k, v)
            ctx._watched = None
            _restore_attributes(ctx, kept)
            ctx._graph = None
        return [
            fit_graph_grad(g, shape, self.name, k)
            for k, (g, shape) in enumerate(zip(res, self.in_shapes))
        ]

    def checked_vjp_graph(self, t, grads):
        """``vjp_graph``, trusted unless the user's backward took a value off the graph (a
        Tensor that requires grad read by ``.numpy()``, ``.detach()``, ``.item()``, ``.data``,
        ``.tolist()``, or a value forward computed without the graph): then each gradient
        is a row that raises if differentiated again, since the next derivative would
        silently miss the term through that value."""
        self.refuse_in_trace(t, "a backward with create_graph, or tg.grad inside f")
        results = self.vjp_graph(grads)
        escapes, self.escapes = self.escapes, None
        if not escapes:
            return results
        deps = {id(x): x for x in grads if x is not None and x._rg}
        deps.update((id(h), h) for h in self._graph_handles().values() if h._rg)
        deps.update((id(x), x) for x, _ in escapes if isinstance(x, Tensor) and x._rg)
        if not deps:  # (a value forward computed, with constant incoming gradients: the
            # gradients still depend on the inputs, through that value)
            deps.update((id(h), h) for h in self.input_handles(t) if h._rg)
        how = sorted({_ESCAPE_TEXT.get(kind, kind) for _, kind in escapes})
        return [_escaped(g, list(deps.values()), self.name, how) for g in results]


def fit_graph_grad(g, shape, name, k):
    """A graph-mode gradient as a Tensor of ``shape`` (summed down like sum_to_shape)."""
    if g is None:
        return None
    if not isinstance(g, Tensor):
        g = Tensor._const(result(np.asarray(g, dtype=np.float64)))
    shape = tuple(shape)
    if g.shape == shape:
        return g
    target = sum_to_shape(
        np.zeros(g.shape), shape, f"Function {name} returned an invalid gradient at index {k}"
    )
    lead = g.ndim - len(shape)
    if lead:
        g = O.sum(g, tuple(range(lead)))
    axes = tuple(d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1)
    if axes:
        g = O.sum(g, axes, keepdims=True)
    return O.reshape(g, target.shape)


_ESCAPE_TEXT = {
    "numpy": ".numpy()",
    "detach": ".detach()",
    "item": ".item() or float()",
    "data": ".data",
    "tolist": ".tolist()",
    "tensor": "tg.tensor(x)",
    "no_grad": "tg.no_grad()",
    "once_differentiable": "it is marked @once_differentiable",
    "a saved tensor forward computed": "a saved tensor forward computed off the graph",
}
_CTX_OWN = frozenset(FunctionCtx().__dict__)  # FunctionCtx's own attributes


def _user_attributes(ctx):
    """The user's ctx attributes: ``(name, value)``."""
    return [(k, v) for k, v in ctx.__dict__.items() if k not in _CTX_OWN]


def _attribute_tensors(v):
    """The Tensors an attribute holds: itself, or those of a tuple or list."""
    if isinstance(v, Tensor):
        return (v,)
    if v.__class__ in (tuple, list):
        return tuple(x for x in v if isinstance(x, Tensor))
    return ()


def _held(v):
    """The values an attribute holds: those of a tuple or list, else itself."""
    return v if v.__class__ in (tuple, list) else (v,)


def _derived(x):
    """A float Tensor that carries no graph: made by forward off the graph when it is neither
    an argument nor an output (an intermediate).  (NumPy values kept on ctx are left alone:
    they serve as masks and decisions, as ``x == 0``, more often than as values.)"""
    return isinstance(x, Tensor) and not x._rg and x.dtype.kind == "f"


def _kept_off_graph(x, converted):
    """An attribute value forward computed off the graph: a float Tensor without a graph
    (``_derived``), or, when forward read an input that requires grad as NumPy or floats, a
    float NumPy array (``ctx.t = a.numpy() * 2``: its derivative would be silently missing).
    Boolean arrays (masks, ``x > 0``) and numbers are decisions, not values: never noted."""
    return _derived(x) or (converted and isinstance(x, np.ndarray) and x.dtype.kind == "f")


def _swap_attributes(ctx, graph):
    """Put the graph handles of ``graph`` (id of a forward-side Tensor -> handle of its row)
    in place of the forward-side Tensors the user's ctx attributes hold (directly or in a
    tuple or list), as ``saved_tensors`` does; returns ``{name: (original, replacement)}``."""
    kept = {}
    for name, v in _user_attributes(ctx):
        if isinstance(v, Tensor):
            new = graph.get(id(v), v)
        elif v.__class__ in (tuple, list) and any(id(x) in graph for x in _attribute_tensors(v)):
            new = v.__class__(graph.get(id(x), x) if isinstance(x, Tensor) else x for x in v)
        else:
            continue
        if new is not v:
            kept[name] = (v, new)
            ctx.__dict__[name] = new
    return kept


def _restore_attributes(ctx, kept):
    for name, (v, new) in kept.items():
        if ctx.__dict__.get(name) is new:  # (unless backward set the attribute anew)
            ctx.__dict__[name] = v


def _forward_arg(a, traced):
    """What forward gets for Tensor argument ``a``: an alias of its value, requiring grad if
    ``a`` does (a constant in a trace recording)."""
    h = Tensor._const(a._v)
    if a._rg and not traced:
        h._rg = True
    return h


def _version_error(t, row, handle, expected, reader):
    return version_error(t, row, handle, expected, reader)


def _call_forward(cls, ctx, args):
    """``cls.forward(ctx, *args)`` with recording off: (whether it returned one output, the
    outputs).  A class that defines ``setup_context`` (PyTorch's functional form) has a
    ``forward(*args)`` without ctx, and ``setup_context(ctx, inputs, output)`` fills ctx."""
    # (the conversions of inputs that require grad are noted: a float NumPy value forward
    # kept on ctx may then stand for one, see apply)
    escapes, FUNCTION_STATE.escapes = FUNCTION_STATE.escapes, []
    FUNCTION_STATE.off_graph += 1  # inputs that require grad convert freely, as in PyTorch
    try:
        with recording_paused():
            if getattr(cls, "setup_context", None) is not None:
                raw = cls.forward(*args)
                cls.setup_context(ctx, tuple(args), raw)
            else:
                raw = cls.forward(ctx, *args)
    finally:
        FUNCTION_STATE.off_graph -= 1
        seen, FUNCTION_STATE.escapes = FUNCTION_STATE.escapes, escapes
    ctx._converted = any(kind != "no_grad" for _, kind in seen)
    single = not isinstance(raw, tuple)
    return single, (raw,) if single else raw


def _dirty_outputs(cls, ctx, args, fwd_args, outs):
    """``{output index: argument index}`` of the inputs forward changed in place and marked
    dirty.  An input changed in place without ``mark_dirty`` has its change counted (a new
    version, carried to its base) without a place in the op's graph, as in PyTorch."""
    marked = {id(x) for x in ctx._dirty}
    dirty = {}
    for i, (a, f) in enumerate(zip(args, fwd_args)):
        if not isinstance(a, Tensor):
            continue
        if id(f) not in marked:
            if f._version:
                _written_in_forward(a, None)
            continue
        k = next((k for k, o in enumerate(outs) if o is f), None)
        if k is None:
            raise RuntimeError(
                f"{cls.__name__}.forward marked an input dirty (ctx.mark_dirty) without "
                "returning it: a Tensor changed in place must be one of the outputs"
            )
        M._check_inplace(a, f"{cls.__name__}.forward (ctx.mark_dirty)")
        dirty[k] = i
    return dirty


def _written_in_forward(x, new):
    """Input ``x``, whose array forward changed in place: with ``new`` (the op's output row)
    it becomes that output; without, the change is an untracked write.  Either way its version
    moves on and a view's base (or a base's views) take the new values."""
    if new is not None:
        M._swap_in(x, new)
    else:
        M._untracked_update(x, x._v)
    if M._linked(x):
        M._after_write(x)
    return x


def _numeric(v):
    """A number or numeric array (what a tape row can hold)."""
    return (
        isinstance(v, (float, int, np.ndarray, np.generic)) and np.asarray(v).dtype.kind in "fiub"
    )


def _as_output(o, name):
    if isinstance(o, Tensor):
        return o._v
    if isinstance(o, (float, int, np.ndarray, np.number)):
        return value_of(o) if np.asarray(o).dtype.kind in "fiub" else o
    raise TypeError(
        f"{name}.forward returned a {type(o).__name__}; outputs must be Tensors, arrays or numbers"
    )


def _once_differentiable(g, deps, name):
    """A constant gradient computed from graph-carrying inputs (the backward used plain numpy
    on ``.data``) is only right to first order: return it as a row that raises when a higher
    derivative reaches it, instead of silently contributing zero (PyTorch's
    ``once_differentiable``).  Zero and graph-carrying gradients pass unchanged."""
    if g is None or g._rg or not np.any(np.asarray(g._v)):
        return g

    class NonDifferentiableBackward(Function):
        @staticmethod
        def forward(ctx, value, *inputs):
            return Tensor._const(value)

        @staticmethod
        def backward(ctx, grad):
            raise OffGraphDerivativeError(
                f"the backward of {name} returned a gradient without a graph although it "
                "read graph-carrying values (its saved tensors or incoming gradients): "
                "computed with non-differentiable operations (e.g. NumPy on .data), it "
                "cannot be differentiated again. Write its backward with tapegrad ops to "
                "take higher derivatives through it; if the gradient does not depend on "
                "the saved tensors (g * 3, or a mask: g * (x > 0)), save only what backward "
                "needs (ctx.mask = x > 0 in forward, not x)"
            )

    return NonDifferentiableBackward.apply(g._v, *deps)


def _escaped(g, deps, name, how):
    """Gradient ``g`` of a backward that took values off the graph (``how``: what it read),
    as a row of the same value that raises when a higher derivative reaches it (PyTorch's
    ``once_differentiable``, applied only where it is needed): its derivative would miss
    the terms through those values.  ``deps``: graph-carrying values the backward saw."""
    if g is None:
        return None
    inputs = deps if not g._rg or any(x is g for x in deps) else [g, *deps]
    return _OffGraphBackward.apply(g._v, name, tuple(how), *inputs)


class Function:
    """Base class of custom differentiable operations, like PyTorch's ``torch.autograd.Function``.

    Subclasses define ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
    methods and are called through ``apply``.  forward runs with grad mode off on the inputs'
    values (an input that requires grad reports it, and converts to NumPy freely there);
    backward gets one gradient per output (zeros for outputs that got none, unless
    ``ctx.set_materialize_grads(False)``) and returns one per ``apply`` argument (None for
    non-Tensor arguments and inputs that need no gradient).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> class Square(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         x, = ctx.saved_tensors
        ...         return 2.0 * x * grad
        >>> x = tg.tensor([1.0, 3.0], requires_grad=True)
        >>> y = Square.apply(x)
        >>> y
        tensor([1., 9.], grad_fn=<SquareBackward>)
        >>> y.sum().backward()
        >>> x.grad
        tensor([2., 6.])
        >>> tg.gradcheck(Square.apply, np.array([0.5, -2.0]))
        True
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a tg.Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a tg.Function subclass must define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes no keyword arguments")
        ctx = FunctionCtx()
        grad_on = STATE.enabled
        needs = tuple(bool(grad_on and isinstance(a, Tensor) and a._rg) for a in args)
        ctx.needs_input_grad = needs
        # forward gets an alias of each Tensor argument (the same value, off the graph) that
        # requires grad if the argument does, as PyTorch's forward gets the input itself with
        # grad mode off (in a trace recording, a constant: replays run forward on constants)
        traced = STATE.guard is not None
        fwd_args = tuple(_forward_arg(a, traced) if isinstance(a, Tensor) else a for a in args)
        single, outs = _call_forward(cls, ctx, fwd_args)
        dirty = _dirty_outputs(cls, ctx, args, fwd_args, outs)
        values = [_as_output(o, cls.__name__) for o in outs]
        if not any(needs):
            res = [
                Tensor._const(result(v)) if v.__class__ is not float else Tensor._const(v)
                for v in values
            ]
            for k, i in dirty.items():
                res[k] = _written_in_forward(args[i], None)
            return res[0] if single else tuple(res)
        non_diff = {id(o) for o in ctx._non_diff}
        differentiable = [
            id(o) not in non_diff and np.asarray(v).dtype.kind == "f" for o, v in zip(outs, values)
        ]
        values = [result(v) if d else v for v, d in zip(values, differentiable)]
        arg_index = tuple(i for i, n in enumerate(needs) if n)
        tensor_args = tuple(isinstance(a, Tensor) for a in args)
        node = FunctionNode(cls, ctx, len(args), arg_index, tensor_args)
        node.fwd_shapes = tuple(np.shape(v) for v in values)
        handles = node.record([args[i] for i in arg_index], values, differentiable)
        if dirty:
            handles = list(handles)
            for k, i in dirty.items():
                handles[k] = _written_in_forward(args[i], handles[k])
            refs = dict(zip(node.out_pos, node.output_refs))
            node.output_refs = tuple(
                weakref.ref(handles[k]) if k in dirty else refs[k] for k in node.out_pos
            )
        if node.tape().REPLAYS:  # a trace runs forward and backward again at every replay
            node.fwd_args = fwd_args
            node.replayable = True
        # saved tensors, and Tensors kept as ctx attributes, resolve to tape rows: the inputs'
        # aliases -> input rows, outputs -> theirs (so a create_graph backward differentiates
        # through them, and reads the values forward saw)
        rows = {}
        for i, r in zip(arg_index, node.input_rows):
            if i not in dirty.values():  # (a dirty one: an output)
                rows[id(fwd_args[i])] = (r, args[i]._version, weakref.ref(args[i]))
        for k, r in zip(node.out_pos, node.output_rows):
            if id(outs[k]) not in rows:
                h = handles[k]
                rows[id(outs[k])] = (r, h._version, weakref.ref(h))
        kept = [x for x in ctx._saved if x is not None]
        attributes = _user_attributes(ctx)
        for _, v in attributes:
            kept.extend(_attribute_tensors(v))
        for x in kept:
            if id(x) in rows:
                ctx._owner[id(x)] = rows[id(x)]
        # what forward computed off the graph and kept (an intermediate Tensor): a
        # create_graph backward that reads it gives gradients that refuse to be
        # differentiated again (FunctionNode.checked_vjp_graph)
        ctx._inputs = frozenset(map(id, args)) | frozenset(map(id, fwd_args))
        ctx._derived = tuple(
            name
            for name, v in attributes
            if id(v) not in ctx._inputs
            and any(_kept_off_graph(x, ctx._converted) and id(x) not in rows for x in _held(v))
        )
        return handles[0] if single else tuple(handles)


def once_differentiable(backward):
    """Decorator of a ``Function.backward`` computed off the graph (NumPy on the values):
    PyTorch's ``torch.autograd.function.once_differentiable``.  The backward runs with grad
    mode off; under ``create_graph=True`` the gradients it returns are rows that raise
    ``OffGraphDerivativeError`` when differentiated again, naming the Function, instead of
    contributing a silent zero.

    Examples:
        >>> import numpy as np, tapegrad as tg
        >>> from tapegrad.autograd.function import once_differentiable
        >>> class Cube(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...
        ...     @staticmethod
        ...     @once_differentiable
        ...     def backward(ctx, grad):
        ...         x, = ctx.saved_tensors
        ...         return tg.tensor(3.0 * x.numpy() ** 2 * grad.numpy())
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> Cube.apply(x).sum().backward(); x.grad
        tensor([ 3., 12.])
    """

    @functools.wraps(backward)
    def off_graph_backward(ctx, *grads):
        if FUNCTION_STATE.escapes is not None:  # (a create_graph backward: noted)
            FUNCTION_STATE.escapes.append((None, "once_differentiable"))
        prev, STATE.enabled = STATE.enabled, False
        try:
            return backward(ctx, *grads)
        finally:
            STATE.enabled = prev

    return off_graph_backward


class _OffGraphBackward(Function):
    """The identity on a gradient's value whose backward raises (see ``_escaped``)."""

    @staticmethod
    def forward(ctx, value, name, how, *inputs):
        ctx.name, ctx.how = name, how
        return Tensor._const(value)

    @staticmethod
    def backward(ctx, grad):
        marked = any("once_differentiable" in how for how in ctx.how)
        raise OffGraphDerivativeError(
            f"the backward of {ctx.name} ran with create_graph=True and took values off the "
            f"graph ({', '.join(ctx.how)}), so the gradient it returned cannot be "
            "differentiated again: the derivative through those values would be silently "
            "missing. To take higher derivatives, "
            + ("remove @once_differentiable and " if marked else "")
            + "write that backward with tapegrad ops on "
            "ctx.saved_tensors and the incoming gradients (no .numpy(), .detach(), .item(), "
            ".data, .tolist(); a mask may be kept: ctx.mask = x > 0), and save the inputs or "
            "outputs it needs (ctx.save_for_backward(x)) rather than values forward computed "
            "from them, or recompute those in backward"
        )
