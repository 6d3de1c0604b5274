"""Backward passes: seed adjoints, run the compiled sweep, hand gradients to leaves.

``backward``/``grad`` here drive the generated ``backward_sweep``; with ``create_graph=True`` the
sweep is instead replayed in Python through differentiable ops (``_higher.py``), so its
results are on the tape and can be differentiated again.
"""

import functools
import inspect

import numpy as np

from ..kernels import run as R
from ..kernels import sweeps as K
from ..core import functions as _functions
from ..core import tape as T
from ..core.tape_inspect import operand_rows
from ..ops.decl import Elementwise
from ..ops.spec import C, OPS
from . import checks as _checks
from .checks import REENTRY, save_running_sweeps, user_code
from . import higher as _higher
from ..core.tensor import (
    FUNCTION_STATE,
    refuse_non_real,
    refuse_unsupported,
    result,
    row_of,
    STATE,
    tape_of,
)
from ..core.tensor import TensorBase as Tensor

# ---- grad mode ----------------------------------------------------------------------------------


def _off(mode):
    """Note recording switched off inside a custom Function's create_graph backward: what it
    computes there carries no graph, so a higher derivative would miss its terms (see
    ``FUNCTION_STATE``)."""
    if not mode and FUNCTION_STATE.escapes is not None:
        FUNCTION_STATE.escapes.append((None, "no_grad"))


class set_grad_enabled:
    """Context manager and decorator that sets gradient recording on or off (per thread).

    Examples:
        >>> import tapegrad as tg
        >>> with tg.set_grad_enabled(False):
        ...     tg.is_grad_enabled()
        False
        >>> tg.is_grad_enabled()
        True
    """

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.prev = STATE.enabled
        STATE.enabled = self.mode  # like PyTorch, calling it as a function takes effect at once
        _off(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False

    def __call__(self, fn):
        STATE.enabled = self.prev  # used as a decorator: undo the eager switch
        return _with_mode(fn, self.mode)


def _with_mode(fn, mode):
    """``fn`` run with gradient recording set to ``mode``.  A generator function's body runs
    with it at each resumption, and the caller's mode is back between them (PyTorch's
    decorators do the same), not only while the generator object is created."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            gen = _call_with_mode(fn, mode, args, kwargs)
            send, value = gen.send, None
            while True:
                try:
                    out = _call_with_mode(send, mode, (value,), {})
                except StopIteration as stop:
                    return stop.value
                try:
                    value = yield out
                    send = gen.send
                except GeneratorExit:
                    _call_with_mode(gen.close, mode, (), {})
                    raise
                except BaseException as exc:
                    send, value = gen.throw, exc

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _call_with_mode(fn, mode, args, kwargs)

    return wrapper


def _call_with_mode(fn, mode, args, kwargs):
    prev = STATE.enabled
    STATE.enabled = mode
    _off(mode)
    try:
        return fn(*args, **kwargs)
    finally:
        STATE.enabled = prev


class _GradMode:
    mode = True

    def __new__(cls, fn=None):
        """``@tg.no_grad`` without parentheses decorates ``fn`` directly, as in PyTorch."""
        self = super().__new__(cls)
        return self if fn is None else _with_mode(fn, cls.mode)

    def __init__(self, fn=None):
        pass

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = self.mode
        _off(self.mode)
        return self

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False

    def __call__(self, fn):
        return _with_mode(fn, self.mode)


class no_grad(_GradMode):
    """Turn off gradient recording inside ``with`` or a decorated function.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> with tg.no_grad():
        ...     y = x * 2
        >>> y.requires_grad, (x * 2).requires_grad
        (False, True)
    """

    mode = False


class enable_grad(_GradMode):
    """Turn gradient recording back on (e.g. inside ``no_grad``).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> with tg.no_grad():
        ...     with tg.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    mode = True


class recording_paused:
    """Recording off while tapegrad runs a custom op's own Python forward (``Function.apply``):
    like ``no_grad``, except that a trace recording does not take it for f switching gradients
    off, since that forward runs again at each replay."""

    def __enter__(self):
        self.prev = STATE.tape.enabled
        STATE.tape.pause(False)
        return self

    def __exit__(self, *exc):
        STATE.tape.pause(self.prev)
        return False


def is_grad_enabled() -> bool:
    """Whether operations on this thread are recorded for differentiation now.

    Examples:
        >>> import tapegrad as tg
        >>> tg.is_grad_enabled()
        True
        >>> with tg.no_grad():
        ...     tg.is_grad_enabled()
        False
    """
    return STATE.enabled


# ---- backward -------------------------------------------------------------------------------------

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time."
)


def _as_list(x):
    """A Tensor, array or number is one item; a list or tuple is several."""
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def check_root(t, y, i):
    """Refuse output ``y`` (position ``i``) of a backward unless it is a Tensor with a graph.
    Every backward on a tape starts here: one started by user code that a sweep of the same
    tape is running (a hook, a Function's backward) first saves that sweep's state."""
    if REENTRY.calls:
        save_running_sweeps(t)
    if not isinstance(y, Tensor):
        raise TypeError(f"outputs[{i}] is a {type(y).__name__}, not a Tensor")
    if not y._rg:
        raise RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )
    if y._leaf:
        return
    if tape_of(y) is not t:
        if y._tape is not None and y._tape.owner != t.owner:
            raise RuntimeError("this Tensor was recorded on another thread's tape")
        raise RuntimeError(FREED_MSG)


def _seed_value(y, g, i):
    """Output ``y``'s seed: 1.0 for a scalar output without ``g``, else an array of its shape."""
    if g is None and y._v.__class__ is float:
        return 1.0
    shape = y.shape
    if g is None:
        if y._v.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs "
                f"(output {i} has shape {shape}); pass gradient= / grad_outputs="
            )
        return np.ones(shape)
    if not isinstance(g, Tensor):  # (a cast would drop a mask or an imaginary part)
        refuse_unsupported(g, f"grad_output[{i}]")
        # (as float64, a date or the string "1" would be a number)
        refuse_non_real(g, np.asarray(g).dtype, f"grad_output[{i}]")
    gv = np.asarray(g._v if isinstance(g, Tensor) else g, dtype=np.float64)
    if gv.shape != tuple(shape):
        if gv.size == 1 and y.size == 1:  # (a documented extension: PyTorch raises)
            return gv.reshape(shape)
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {gv.shape} and "
            f"output[{i}] has a shape of {tuple(shape)}"
        )
    return gv


@T.holding_rows
def run_backward(
    outputs, grad_outputs, inputs, retain_graph, create_graph, accumulate, allow_unused=False
):
    """Shared engine of Tensor.backward, autograd.backward and autograd.grad.

    Returns the gradients of ``inputs`` (numpy arrays, or None when unreached).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tg.autograd.run_backward([(x ** 3).sum()], None, [x], None, False, False)
        [array([ 3., 12.])]
    """
    outputs = _as_list(outputs)
    grads = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    t = STATE.tape
    for i, y in enumerate(outputs):
        check_root(t, y, i)
    if create_graph:
        return _backward_graph(t, outputs, grads, inputs, accumulate, allow_unused)
    seeds = [_seed_value(y, g, i) for i, (y, g) in enumerate(zip(outputs, grads))]
    # (outputs that are leaves enter the tape here, and seed themselves directly)
    roots = [(row_for(t, y), s) for y, s in zip(outputs, seeds)]
    top = max([r for r, _ in roots])
    voff, state = t.voff, t.state  # (reading voff writes the pending rows first)
    if inputs is None:
        in_rows = None
    else:  # every row of each input (a leaf may have several)
        leaf_rows = _rows_by_leaf(t, inputs)
        in_rows = [_input_rows(t, x, leaf_rows) for x in inputs]
    bottom = 0 if accumulate else _lowest_input_row(t, in_rows)
    # the adjoints are not cleared: the sweep zeroes each row it reaches at its first
    # contribution (state bit 1 clear), so a backward costs what it reaches
    state[bottom : top + 1] &= 2
    adj = t.adj
    for r, s in roots:
        T.add_adjoint(adj, state, voff, r, s if s.__class__ is float else s.ravel())
    spans = REENTRY.spans
    spans.append((t, bottom, top))  # the rows the hooks it runs must not disturb
    try:
        return _sweep_roots(
            t, outputs, roots, top, bottom, inputs, in_rows, retain_graph, accumulate, allow_unused
        )
    finally:
        spans.pop()


def _sweep_roots(
    t, outputs, roots, top, bottom, inputs, in_rows, retain_graph, accumulate, allow_unused
):
    """The sweep of ``run_backward`` from its seeded ``roots``, and what it hands out."""
    voff = t.voff
    handoff = None
    if accumulate and inputs is None and voff[top + 1] - voff[bottom] >= _HANDOFF_MIN:
        handoff = _handoff(t, top, [r for r, _ in roots])
    rs = ReverseSweep(t, handoff)
    if in_rows is not None and not accumulate and t.side and t.side.hooks:
        # PyTorch runs no hook of a tensor whose gradient no requested input needs
        rs.hook_floor = min((r for rows in in_rows for r in rows), default=0)
        rs.hook_skip = _rows_leading_nowhere(t, in_rows, t.side.hooks, rs.hook_floor, top)
        rs.node_skip = _unexecuted_inputs(t, in_rows, t.side.hooks, top)
    rs.run(top, bottom)
    if inputs is not None:
        out = []
        for k, x in enumerate(inputs):
            rows = [r for r in in_rows[k] if r <= top and t.state[r] & 1]
            if not rows:
                if not allow_unused:
                    raise RuntimeError(
                        f"One of the differentiated Tensors (input {k}, shape {x.shape}) appears "
                        "to not have been used in the graph. Set allow_unused=True if this is "
                        "the desired behavior."
                    )
                out.append(None)
            else:  # a leaf may hold several rows (entered again after a change of value)
                got = rs.captured or {}
                g = got.get(rows[0], t.gradient(rows[0])).copy()
                for r in rows[1:]:
                    g += got.get(r, t.gradient(r))
                g = g.reshape(x.shape)
                hooks = _higher.hook_fns(x) if x._leaf else None
                out.append(_apply_hooks(hooks, result(g)) if hooks else g)
    else:
        out = None
    if accumulate:
        rs.accumulate_leaves(top)
    _run_retained(t, top, None if accumulate else in_rows, rs.captured)
    if not retain_graph:
        if not accumulate:
            _spare_unneeded(t, in_rows, top)
        release_swept(t, top, max(bottom, _first_needed_row(t, in_rows)))
        _detach_roots(outputs)
    return out


def _detach_roots(outputs):
    """A backward that kept no graph freed its outputs' graphs: their handles need no row any
    more.  Detached (no tape, no range token), a kept output (``losses.append(loss)``) no
    longer pins its row range, and with it the unfreed rows recorded beside it (a metric's
    graph dropped after ``.item()``), which would else stay for good.  Its value stays; a
    backward through it raises as through any freed graph."""
    for y in outputs:
        if not y._leaf:
            y._tape = None
            y._k = None


def _spare_unneeded(t, in_rows, top):
    """Keep the rows a gradient into intermediate inputs swept without needing them.

    The sweep runs every reached row down to the lowest input, so it also passes rows above
    that lead to no input: the op that made a higher input (``fast_b = b - lr * g`` when the
    gradient is taken in ``[fast_w, fast_b]``, as first-order MAML does) or a sibling branch
    read beside an input.  As in PyTorch, a backward does not free what it did not need: such
    rows lose their reached mark, so ``release_swept`` leaves them for a later backward
    through them.  Only when an input is an intermediate result (gradients into leaves alone
    take no Python pass over the rows); keeping a row is always safe."""
    if in_rows is None:
        return
    code = t.code
    rows = {r for rs in in_rows for r in rs}
    if not any(code[r] & 255 > T.CONST for r in rows):
        return
    low = min(rows)
    state = t.state
    reached = np.flatnonzero(state[low + 1 : top + 1] & 1) + (low + 1)
    w = code[reached]
    ops, first, second = w & 255, ((w >> 8) & 0xFFFFFFF) - 1, (w >> 36) - 1
    odd = (ops == C.CONCAT) | (ops == T.CUSTOM)  # their operands are kept elsewhere
    # fast exit: every reached op row reads an input or a reached op row above ``low`` (so,
    # by induction up the rows, every one leads to an input)
    mark = np.zeros(top + 2, bool)  # by row + 1 (-1: no operand)
    mark[reached[ops > T.CONST] + 1] = True  # (a reached leaf leads to no input)
    mark[np.fromiter(rows, np.int64, len(rows)) + 1] = True
    if not ((ops > T.CONST) & (odd | ~(mark[first + 1] | mark[second + 1]))).any():
        return
    ops, first, second = ops.tolist(), first.tolist(), second.tolist()
    leads = set(rows)  # rows from which an input can be reached (inputs included)
    odd = (C.CONCAT, T.CUSTOM)
    for r, o, a, b in zip(reached.tolist(), ops, first, second, strict=True):
        if o <= T.CONST:
            continue
        if o in odd:
            found = any(x in leads for x in operand_rows(t, r))
        else:
            found = a in leads or b in leads
        if found:
            leads.add(r)
        else:  # its backward leads to no input (an input's own too): not needed, not freed
            state[r] &= 2


def _rows_leading_nowhere(t, in_rows, marked, low, top):
    """The rows of ``marked`` (a dict: row -> hooks, or a retained tensor) in (low, top] from
    which no input (rows ``in_rows``) can be reached."""
    hooked = [r for r, v in marked.items() if v and low < r <= top]
    if not hooked:
        return ()
    hi = max(hooked)
    code = t.code
    w = code[low + 1 : hi + 1]
    ops = (w & 255).tolist()
    first, second = (((w >> 8) & 0xFFFFFFF) - 1).tolist(), ((w >> 36) - 1).tolist()
    leads = {r for rows in in_rows for r in rows}
    odd = (C.CONCAT, T.CUSTOM)  # their operands are kept elsewhere
    for k, o in enumerate(ops):
        r = low + 1 + k
        if o <= T.CONST or r in leads:
            continue
        if o in odd:
            if any(x in leads for x in operand_rows(t, r)):
                leads.add(r)
        elif first[k] in leads or second[k] in leads:
            leads.add(r)
    return {r for r in hooked if r not in leads}


def _unexecuted_inputs(t, in_rows, hooks, top):
    """The intermediate input rows with grad_fn pre-hooks whose own backward leads to no
    other input: ``autograd.grad`` takes their gradient and runs no pre-hook of theirs, as
    PyTorch does not execute their node."""
    code = t.code
    rows = {r for rs in in_rows for r in rs}
    out = set()
    for r in rows:
        if r > top or code[r] & 255 <= T.CONST:
            continue
        if not any(getattr(f, "node_prehook", False) for f in hooks.get(r) or ()):
            continue
        others = [[x for x in rows if x < r]]
        if not others[0] or _rows_leading_nowhere(t, others, {r: True}, min(others[0]), top):
            out.add(r)
    return out


def _first_needed_row(t, in_rows):
    """The lowest row whose backward the gradients of inputs with rows ``in_rows`` need: the
    row above the lowest input when that input is an intermediate result (its own backward,
    and those below it, lead to no input), else the lowest input's row (0 without inputs).  A
    backward does not free what it did not need, as in PyTorch: after
    ``autograd.grad(out, [mid])`` a backward through ``mid`` itself still works, and so does
    one through rows below the inputs that a sweep of a tape with side tables (hooks) passed."""
    if in_rows is None:
        return 0
    low = min((r for rows in in_rows for r in rows), default=-1)
    if low < 0:
        return 0
    return low + 1 if t.code[low] & 255 > T.CONST else low


def _lowest_input_row(t, in_rows):
    """The row a backward into the inputs with rows ``in_rows`` alone may stop at: the lowest
    of them (a row only reads earlier rows, so nothing below it depends on an input).  0 (the
    whole tape) without inputs, or when the tape has side tables (hooks, retained gradients,
    custom ops and version checks reach rows anywhere) or runs in anomaly mode."""
    if in_rows is None or t.side or t.anomaly is not None:
        return 0
    return min((r for rows in in_rows for r in rows), default=0)


# ---- leaf gradients made outside the buffer ---------------------------------------------------
# Ops whose backward adds only into the adjoints of their operand rows ``ra`` / ``rb``, as
# their declarations say (``operand_adjoints_only``; CUSTOM and CONCAT reach rows through
# their payload or parameters); with any other op on the tape ``_handoff`` hands off nothing.
_PLAIN_OPS = np.zeros(256, bool)
_PLAIN_OPS[
    [i for i, o in enumerate(OPS) if isinstance(o, Elementwise) or o.operand_adjoints_only]
] = True
_HANDOFF_MIN = 4096  # rows this large are worth a gradient array of their own
_PLAIN_LIST = _PLAIN_OPS.tolist()


def _handoff(t, top, roots):
    """The large leaf rows whose only consumers are large matmuls, as a dict (row -> None),
    or None.  Their gradients (``ReverseSweep._write_product``) are made by BLAS in arrays
    of their own, which become ``.grad`` as they are: an MLP's weight gradients are neither
    written into the adjoint buffer nor copied out of it.  Only on a plain tape (no side
    tables, no anomaly mode)."""
    if t.side or t.anomaly is not None:
        return None
    keep = (_large_short if top < _SHORT_TAPE else _large)(t, top, roots)
    code, rg = t.code, t.rg
    leaves = [r for r in keep if code[r] & 255 == T.LEAF and rg[r]]
    return dict.fromkeys(leaves) if leaves else None


_SHORT_TAPE = 64  # rows up to this many are analysed in Python (a dozen NumPy calls cost more)


def _large(t, top, roots):
    """The large rows (ascending) no op but a large matmul adds into (nor a seed)."""
    voff = t.voff
    sizes = voff[1 : top + 2] - voff[: top + 1]
    big = np.flatnonzero(sizes >= _HANDOFF_MIN)
    if not big.size:
        return []
    w = t.code[: top + 1]
    ops = w & 255
    if not _PLAIN_OPS[ops].all():
        return []
    blas = ops == C.MATMUL  # matmuls whose backward runs in ReverseSweep._matmul
    for r in np.flatnonzero(blas):
        blas[r] = t.blas_matmul(int(t.ip[r]))
    adders = ~blas  # the other rows add into their operands' adjoints
    added = np.zeros(top + 2, bool)  # by row + 1 (-1: no operand)
    added[((w[adders] >> 8) & 0xFFFFFFF)] = True
    added[w[adders] >> 36] = True
    added[np.asarray(roots, np.int64) + 1] = True  # seeds are added in
    return big[~added[big + 1]].tolist()


def _large_short(t, top, roots):
    """``_large`` for a short tape (an MLP's two dozen rows), row by row on lists."""
    offs = t.voff[: top + 2].tolist()
    big = [r for r in range(top + 1) if offs[r + 1] - offs[r] >= _HANDOFF_MIN]
    if not big:
        return []
    added = set(roots)  # seeds are added in
    ip = t.ip
    for r, w in enumerate(t.code[: top + 1].tolist()):
        o = w & 255
        if not _PLAIN_LIST[o]:
            return []
        if o == C.MATMUL and t.blas_matmul(int(ip[r])):
            continue  # its backward writes its operands' first contributions
        added.add(((w >> 8) & 0xFFFFFFF) - 1)
        added.add((w >> 36) - 1)
    return [r for r in big if r not in added]


def row_for(t, y):
    """The row of backward output ``y`` on ``t`` (a leaf output enters the tape)."""
    if y._leaf:
        return row_of(t, y)
    return y._row


def _rows_by_leaf(t, inputs):
    """id(leaf) -> its LEAF rows on ``t``, for the leaves among ``inputs`` (else None)."""
    if not any(isinstance(x, Tensor) and x._leaf for x in inputs):
        return None
    out = {}
    for r in t.leaf_rows:
        leaf = t.entered(r)
        if leaf is not None:
            out.setdefault(id(leaf), []).append(r)
    return out


def _input_rows(t, x, leaf_rows):
    """Every row of input ``x`` on ``t``: a leaf has one per entry (its handle caches only one,
    and none for a leaf another thread's tape caches)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"inputs must be Tensors, got {type(x).__name__}")
    if not x._rg:
        raise RuntimeError(
            f"One of the differentiated Tensors (shape {x.shape}) does not require grad"
        )
    if x._leaf:
        return leaf_rows.get(id(x), [])
    return [x._row] if tape_of(x) is t else []


class ReverseSweep:
    """One reverse sweep over a tape's adjoint buffer (the compiled ``backward_sweep``) and the
    Python it hands rows to: custom ops, large matmuls (NumPy's BLAS), hooked rows, the
    in-place version check and anomaly mode's checks.

    ``run(top, bottom)`` sweeps rows top..bottom; ``step(top, bottom)`` is the compiled sweep
    alone, with only the rows it hands back run in Python (anomaly mode re-runs single rows
    with it); ``accumulate_leaves(top)`` gives the reached leaves their ``.grad``.
    ``handoff`` (from ``_handoff``): leaf rows whose gradients large matmuls write into
    arrays of their own, which become ``.grad`` as they are."""

    hook_floor = 0  # hooks of rows below it do not run (they lead to no requested input)
    hook_skip = ()  # nor those of these rows
    node_skip = ()  # nor the grad_fn pre-hooks of these (inputs whose node does not run)
    captured = None  # row -> its gradient before its node's pre-hooks (rows that have some)

    def __init__(self, t, handoff=None):
        self.t = t
        self.handoff = handoff

    def run(self, top, bottom=0):
        """Sweep rows top..bottom.  A plain tape goes straight to the compiled sweep; a tape
        with side tables (custom ops, hooks, in-place overwrites) or in anomaly mode runs it in
        segments between hooked rows, then checks versions and (anomaly mode) finiteness."""
        t = self.t
        if not t.side and t.anomaly is None:
            self.step(top, bottom)
            return
        try:
            if t.side.hooks:
                self._hooked(top, bottom, t.side.hooks)
            else:
                self.step(top, bottom)
        except ZeroDivisionError:
            if t.anomaly is not None:
                t.anomaly.locate_division(t, top, bottom)
            raise
        if t.side.dirty:
            _checks.check_versions(t, top, bottom)
        if t.anomaly is not None:
            t.anomaly.check_backward(t, top, bottom)

    def _hooked(self, top, bottom, hooks):
        """Stop just above each hooked row (a custom op's: above its last output), so that
        row's adjoint is complete, and run its hooks before the sweep goes on."""
        t = self.t
        stops = {}
        for r, fns in hooks.items():
            if fns and max(bottom, self.hook_floor) <= r <= top and r not in self.hook_skip:
                b = max(t.side.payloads[r].output_rows) if t.op(r) == T.CUSTOM else r
                stops.setdefault(min(b, top), []).append(r)
        for b in sorted(stops, reverse=True):
            self.step(top, b + 1)
            top = b
            for r in sorted(stops[b], reverse=True):
                if t.state[r] & 1:
                    own, node = _higher.split_hooks(hooks[r])
                    _checks.run_hooks(t, r, own)
                    if node and r not in self.node_skip:  # an input or a retained tensor
                        # gets the gradient before them
                        if self.captured is None:
                            self.captured = {}
                        self.captured[r] = t.gradient(r).copy()
                        _checks.run_hooks(t, r, node)
        self.step(top, bottom)

    def step(self, top, bottom=0):
        """The compiled sweep from ``top`` to ``bottom``, the rows it hands back run here."""
        t = self.t
        while True:
            # t.code flushes pending rows; the kernel reads only values provided at record
            # time (lazy rows it never reads stay uncopied), hence the raw _val buffer
            status, row = R.backward(t, t._val, top, bottom)
            if status == K.DONE:
                return
            if status == K.HIT_FREED:
                raise RuntimeError(FREED_MSG)
            if status == K.HIT_MATMUL:
                self._matmul(row)
                top = row - 1
                continue
            if status == K.HIT_CUSTOM:
                # the payload runs its Python backward, adds into operand adjoints (setting
                # their state bit 1) and says where the compiled sweep resumes
                top = t.side.payloads[row].run_backward(t, row)
                continue
            raise RuntimeError(
                f"tapegrad internal error: unknown op code {t.op(row)} at tape row "
                f"{row}; the op table and kernels are out of sync"
            )

    def _matmul(self, row):
        """Backward of a large matmul row with numpy's BLAS (the kernel hands these over).

        Each operand gradient is computed in its stored layout (a transposed operand's as the
        transposed product), so BLAS writes it straight into the adjoint buffer when this is
        the row's first contribution of the sweep (state bit 1 clear), and adds a product
        otherwise; operands are read through views, never copied."""
        t = self.t
        ra, rb = t.operands(row)
        p = int(t.ip[row])
        nb, m, k, n, ta, tb = (int(v) for v in t.ipool[p : p + 6])
        voff, adj, rg = t.voff, t.adj, t.rg
        lo = voff[row]
        G = adj[lo : lo + nb * m * n].reshape(nb, m, n)
        if rg[ra]:
            B = _logical(t.row_value(rb), nb, k, n, tb)
            if ta:  # stored (k, m): dA^T = B G^T
                self._write_product(ra, (nb, k, m), B, G.transpose(0, 2, 1))
            else:  # dA = G B^T
                self._write_product(ra, (nb, m, k), G, B.transpose(0, 2, 1))
        if rg[rb]:
            A = _logical(t.row_value(ra), nb, m, k, ta)
            if tb:  # stored (n, k): dB^T = G^T A
                self._write_product(rb, (nb, n, k), G.transpose(0, 2, 1), A)
            else:  # dB = A^T G
                self._write_product(rb, (nb, k, n), A.transpose(0, 2, 1), G)

    def _write_product(self, r, shape, x, y):
        """Add x @ y into row r's adjoint (contiguous, of ``shape``): BLAS writes it there
        directly when r has no contribution yet, so no temporary is made, read and added."""
        t = self.t
        own = self.handoff
        if own is not None and r in own:  # a leaf's gradient, made in an array of its own
            if own[r] is None:
                own[r] = np.matmul(x, y)
                t.state[r] |= 1
            else:
                own[r] += np.matmul(x, y)
            return
        lo = t.voff[r]
        dst = t.adj[lo : lo + shape[0] * shape[1] * shape[2]].reshape(shape)
        if t.state[r] & 1:
            dst += np.matmul(x, y)
        else:
            np.matmul(x, y, out=dst)
            t.state[r] |= 1

    def accumulate_leaves(self, top):
        """Add the gradients of the reached leaves (rows up to ``top``) into their ``.grad``
        (threads sharing a leaf take turns).  The leaves' hooks run first, outside the lock:
        a hook may run a backward of its own, or wait for another thread's."""
        t = self.t
        own = self.handoff or {}
        self.handoff = None
        state = t.state
        reached, hooked = [], {}
        first, more = {}, {}  # a leaf entered again after a change of value has several rows
        for r in t.leaf_rows:
            if r > top or not (state[r] & 1):
                continue
            leaf = t.entered(r)
            if leaf is None or not leaf._rg:
                continue
            r0 = first.setdefault(id(leaf), r)
            if r0 != r:
                more.setdefault(r0, []).append(r)
                continue
            reached.append((r, leaf))
        for r, leaf in reached:  # one gradient a leaf (the sum over its rows), hooked once
            g = None
            if r in more:
                g = np.array(self._leaf_grad(r, leaf, own))
                for r2 in more[r]:
                    g = g + self._leaf_grad(r2, leaf, own)
                hooked[r] = result(g)
            hooks = _higher.hook_fns(leaf)
            if hooks:  # (what a hook returns may be kept by it: copied below)
                g = np.array(self._leaf_grad(r, leaf, own)) if g is None else g
                hooked[r] = _apply_hooks(hooks, result(g))
        with _GRAD_LOCK:
            self._accumulate(reached, own, hooked)
        _higher.run_post_accumulate_hooks([leaf for _, leaf in reached])

    def _leaf_grad(self, r, leaf, own):
        """Leaf row ``r``'s gradient: the array of its own the sweep made, or a view of the
        adjoint buffer (a float for a scalar parameter)."""
        g = own.get(r)
        if g is not None:
            return g.reshape(leaf.shape)
        t = self.t
        voff = t.voff
        if leaf._v.__class__ is float:  # a scalar parameter's gradient is a float
            return float(t.adj[voff[r]])
        return t.adj[voff[r] : voff[r + 1]].reshape(leaf.shape)

    def _accumulate(self, reached, own, hooked):
        for r, leaf in reached:
            if r in hooked:
                g, fresh = hooked[r], False
            else:
                g, fresh = self._leaf_grad(r, leaf, own), own.get(r) is not None
            old = leaf.grad
            if old is None:  # a view of the buffer is copied (the next backward reuses it)
                leaf.grad = Tensor._const(g if g.__class__ is float or fresh else result(g.copy()))
            elif old._v.__class__ is float or np.shape(g) != old._v.shape:
                old._v = result(old._v + g)
            else:
                old._v += g


def sweep(t, top, bottom=0):
    """Sweep rows top..bottom of ``t`` (``ReverseSweep(t).run``): for a tape's own backward
    driven from Python (``tg.checkpoint``'s recomputed block)."""
    ReverseSweep(t).run(top, bottom)


def _logical(flat, nb, rows, cols, transposed):
    """The (nb, rows, cols) operand of a matmul row, a view of its stored layout."""
    if transposed:
        return flat.reshape(nb, cols, rows).transpose(0, 2, 1)
    return flat.reshape(nb, rows, cols)


_GRAD_LOCK = T.SectionLock()  # threads sharing a leaf accumulate into its .grad in turn


def _apply_hooks(hooks, g):
    """A leaf's gradient ``g`` after its hooks (registration order); a hook returning another
    shape raises, as for the hooks of other tensors."""
    for h in hooks:
        with user_code():
            r = h(Tensor._const(g))
        if r is not None:
            r = result(np.asarray(r._v if isinstance(r, Tensor) else r, dtype=np.float64))
            if np.shape(r) != np.shape(g):
                raise RuntimeError(
                    f"hook {getattr(h, '__name__', h)!s} returned a gradient of shape "
                    f"{np.shape(r)} for a tensor of shape {np.shape(g)}"
                )
            g = r
    return g


def _run_retained(t, top, in_rows=None, captured=None):
    """Give ``.grad`` to non-leaf tensors that asked for it with retain_grad(); with the rows
    ``in_rows`` of requested inputs, only to those whose gradient an input needs (PyTorch
    computes no other).  ``captured``: row -> its gradient before its node's pre-hooks."""
    retained = t.side.retain
    if not retained:
        return
    floor, skip = 0, ()
    if in_rows is not None:
        floor = min((r for rows in in_rows for r in rows), default=0)
        skip = _rows_leading_nowhere(t, in_rows, retained, floor, top)
    for r, ref in list(retained.items()):
        if r > top or r < floor or r in skip or not (t.state[r] & 1):
            continue
        h = ref()
        if h is None:
            continue
        g = captured.get(r) if captured else None
        g = result((t.gradient(r) if g is None else g).reshape(h.shape).copy())
        if h.grad is None:
            h.grad = Tensor._const(g)
        else:
            h.grad = Tensor._const(result(h.grad._v + g))


def release_swept(t, top, bottom=0, chunk=1 << 16):
    """Free what a non-retained backward swept (rows 0..top reached); returns the live tape.

    A backward from the tape's last row that reached every op row (or found it freed by an
    earlier one) leaves nothing anyone can need: the tape empties at once, without marking
    rows it drops anyway or searching what held handles need.  Otherwise the reached op rows
    are marked freed (a second backward through them raises ``FREED_MSG``) and the tape
    reclaims what nothing can reach any more.  A sweep that stopped at ``bottom`` frees rows
    from there up (the state bits below it are an earlier sweep's)."""
    code, state = t.code, t.state
    nested = REENTRY.calls and any(f.t is t for f in REENTRY.calls)
    if (
        not nested  # (a hook's backward: the sweep that runs the hook still reads this tape)
        and t.RECLAIMS
        and bottom == 0
        and top + 1 == t.n
        and _every_op_row_swept(code, state, top + 1, chunk)
    ):
        return t.reset()
    for lo in range(bottom, top + 1, chunk):  # in chunks: no temporaries the size of the tape
        hi = min(lo + chunk, top + 1)
        st = state[lo:hi]
        st |= ((st & 1) & ((code[lo:hi] & 255) > T.CONST)) << 1  # freed bit of reached op rows
    return t if nested else t.maybe_reset()


def _every_op_row_swept(code, state, n, chunk):
    """Whether each op row of rows [0, n) was reached by this sweep or freed by an earlier
    one (a short tape in Python: a dozen NumPy calls on a few rows cost ~10 us)."""
    if n <= 64:
        for c, s in zip(code[:n].tolist(), state[:n].tolist(), strict=True):
            if not s & 3 and c & 255 > T.CONST:
                return False
        return True
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        if (((code[lo:hi] & 255) > T.CONST) & ((state[lo:hi] & 3) == 0)).any():
            return False
    return True


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of leaves (PyTorch semantics);
    with ``inputs``, only into the ``.grad`` of those tensors.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tg.autograd.backward((x ** 2).sum()); x.grad
        tensor([2., 4.])
    """
    if inputs is not None:
        return _backward_into(tensors, grad_tensors, inputs, retain_graph, create_graph)
    run_backward(tensors, grad_tensors, None, retain_graph, create_graph, accumulate=True)


def _backward_into(outputs, grads, inputs, retain_graph, create_graph):
    """``backward(..., inputs=)``: accumulate into the listed tensors' ``.grad`` only."""
    ins = _as_list(inputs)
    if not ins:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    res = run_backward(
        outputs, grads, ins, retain_graph, create_graph, accumulate=False, allow_unused=True
    )
    for x, g in zip(ins, res):
        if g is None:
            continue
        if not x._leaf and x.retains_grad:
            continue  # (run_backward's retained-gradient pass gave it its .grad)
        if create_graph:
            x.grad = g if x.grad is None else x.grad + g
            continue
        g = result(g)  # (a leaf's hooks ran in run_backward)
        x.grad = Tensor._const(g) if x.grad is None else Tensor._const(result(x.grad._v + g))
    reached = [x for x, g in zip(ins, res) if g is not None and x._leaf]
    _higher.run_post_accumulate_hooks(reached, create_graph)


@T.holding_rows
def partial_grads(outputs, inputs, grad_outputs):
    """Differentiable gradients of ``outputs`` with respect to each of ``inputs`` as if the
    inputs were independent (the sweep stops at their rows), None where one is unused: what
    a recomputed custom op (a checkpoint) hands its inputs in a create_graph backward, whose
    outer sweep then carries each through the input's own history once."""
    t = STATE.tape
    for i, y in enumerate(outputs):
        check_root(t, y, i)
    return _backward_graph(t, outputs, grad_outputs, inputs, False, True, stop=True)


def _backward_graph(t, outputs, grads, inputs, accumulate, allow_unused, stop=False):
    """The create_graph sweep (``_higher.backward_graph``) from checked ``outputs``."""
    roots = [
        (row_for(t, y), g if isinstance(g, Tensor) else _seed_value(y, g, i))
        for i, (y, g) in enumerate(zip(outputs, grads, strict=True))
    ]
    if inputs is None:
        in_rows = None
    else:  # every row of each input (a leaf entered again after a change of value has several)
        leaf_rows = _rows_by_leaf(t, inputs)
        in_rows = [_input_rows(t, x, leaf_rows) for x in inputs]
    retained = None  # the retain_grad() rows whose gradient the inputs need (as PyTorch)
    if in_rows is not None and not accumulate and not stop and t.side.retain:
        rows = [rs for rs in in_rows if rs]
        floor = min((r for rs in rows for r in rs), default=0)
        top = max(r for r, _ in roots)
        skip = _rows_leading_nowhere(t, rows, t.side.retain, floor, top)
        retained = [r for r in t.side.retain if floor <= r <= top and r not in skip]
    skips = None  # the hooks not run: of rows no input needs, and inputs' nodes not executed
    if in_rows is not None and not accumulate and not stop and t.side.hooks:
        rows = [rs for rs in in_rows if rs]
        floor = min((r for rs in rows for r in rs), default=0)
        top = max(r for r, _ in roots)
        skips = (
            _rows_leading_nowhere(t, rows, t.side.hooks, floor, top),
            _unexecuted_inputs(t, rows, t.side.hooks, top),
        )
    return _higher.backward_graph(
        t,
        roots,
        inputs,
        in_rows,
        accumulate,
        allow_unused,
        FREED_MSG,
        stop,
        retained,
        skips,
        _checks.check_versions,
    )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    *,
    only_inputs=True,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Gradients of ``outputs`` with respect to ``inputs``, as a tuple of Tensors.

    As PyTorch's: an input the outputs do not depend on raises unless ``allow_unused``
    (then its gradient is None, or zeros with ``materialize_grads=True``);
    ``is_grads_batched=True`` reads the first dimension of each of ``grad_outputs`` as a batch
    of cotangents and returns one gradient per batch item (stacked along a first dimension);
    ``only_inputs`` is accepted and ignored, as in PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tg.autograd.grad((x ** 2).sum(), x)             # x.grad is left alone
        (tensor([2., 4.]),)
        >>> w = tg.tensor(3.0, requires_grad=True)
        >>> tg.autograd.grad((x ** 2).sum(), [x, w], materialize_grads=True)
        (tensor([2., 4.]), tensor(0.))
        >>> y = x ** 2
        >>> tg.autograd.grad(y, x, tg.eye(2), is_grads_batched=True)   # the rows of dy/dx
        (tensor([[2., 0.],
                [0., 4.]]),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "autograd.grad: materialize_grads=True gives zeros for unused inputs; pass "
            "allow_unused=True or leave it out"
        )
    allow_unused = bool(allow_unused or materialize_grads)
    single = isinstance(inputs, Tensor)
    ins = [inputs] if single else list(inputs)
    if is_grads_batched:
        res = _batched_grads(outputs, grad_outputs, ins, retain_graph, create_graph, allow_unused)
    else:
        res = run_backward(
            outputs,
            grad_outputs,
            ins,
            retain_graph,
            create_graph,
            accumulate=False,
            allow_unused=allow_unused,
        )
    if not create_graph:
        res = [None if g is None else Tensor._const(result(g)) for g in res]
    if materialize_grads:
        lead = _batch_size(grad_outputs) if is_grads_batched else None
        res = [_zeros_like(x, lead) if g is None else g for g, x in zip(res, ins)]
    return tuple(res)


def _batch_size(grad_outputs):
    """The common first dimension of ``grad_outputs`` (``is_grads_batched``)."""
    cots = _as_list(grad_outputs)
    shapes = [np.shape(c._v if isinstance(c, Tensor) else c) for c in cots]
    sizes = {s[0] if s else None for s in shapes}
    if not cots or len(sizes) != 1 or None in sizes:
        raise ValueError(
            "autograd.grad: is_grads_batched=True needs grad_outputs that share a first "
            f"(batch) dimension; got shapes {shapes}"
        )
    return sizes.pop()


def _zeros_like(x, lead):
    shape = x.shape if lead is None else (lead, *x.shape)
    return Tensor._const(result(np.zeros(shape)))


def _batched_grads(outputs, grad_outputs, ins, retain_graph, create_graph, allow_unused):
    """``autograd.grad`` with ``is_grads_batched``: one backward per batch item of the
    cotangents (the graph kept until the last), the gradients stacked along a new first
    dimension (None for an input no item reaches)."""
    nb = _batch_size(grad_outputs)
    outs, cots = _as_list(outputs), _as_list(grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    per_item = [
        run_backward(
            outs,
            [c[b] for c in cots],
            ins,
            retain_graph or b < nb - 1,
            create_graph,
            accumulate=False,
            allow_unused=allow_unused,
        )
        for b in range(nb)
    ]
    res = []
    for k, x in enumerate(ins):
        gs = [item[k] for item in per_item]
        if not nb:  # (a Tensor under create_graph, as every gradient it returns)
            res.append(_zeros_like(x, 0) if create_graph else np.zeros((0, *x.shape)))
        elif any(g is None for g in gs):
            res.append(None)  # (the graph is the same for every item)
        elif create_graph:
            res.append(_functions.stack(gs))
        else:
            res.append(np.stack([np.asarray(g) for g in gs]))
    return res


class BackwardMethod:
    """``Tensor.backward`` (a base class of the public ``Tensor``)."""

    __slots__ = ()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """``y.backward()``: accumulate dy/dx into ``x.grad`` of every leaf x that y depends on
        (``gradient`` seeds a non-scalar y; ``create_graph`` keeps the backward differentiable).

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> y = x ** 2
            >>> y.backward(gradient=tg.tensor([1.0, 10.0])); x.grad     # 2 x * gradient
            tensor([ 2., 40.])
            >>> x.grad = None
            >>> (x ** 3).sum().backward(create_graph=True)
            >>> x.grad.sum().backward(); x.grad.detach()                 # 3 x**2 + 6 x
            tensor([ 9., 24.])
        """
        if inputs is not None:
            return _backward_into(
                [self], None if gradient is None else [gradient], inputs, retain_graph, create_graph
            )
        run_backward(
            [self],
            None if gradient is None else [gradient],
            None,
            retain_graph,
            create_graph,
            accumulate=True,
        )
