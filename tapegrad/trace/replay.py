"""The replay of a recorded trace: ``Trace`` (compiled sweeps, with Python at custom ops), its
cache of traces by input structure (``traced``), and ``trace`` / ``load_trace``."""

import functools
import json
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np

from .. import pytree as _pytree
from ..autograd import forward as _forward
from ..autograd.forward import push_custom_tangents
from ..core import tape as T
from ..core.tensor import (
    holds_tensor,
    new_tensor,
    raise_unwrapped,
    refuse_complex,
    refuse_non_real,
    refuse_unsupported,
    row_of,
    stand_in,
    STATE,
)
from ..core.tensor import (
    TensorBase as Tensor,
)
from ..kernels import run
from ..kernels import sweeps as R
from ..kernels.sweeps import RetraceRequired
from ..ops.spec import NAMES
from ..transforms.functional import output_dtype
from ..transforms.functional import value_and_grad as _value_and_grad
from .fileformat import (
    _ARRAYS,
    _bad,
    _check_stamp,
    _checksum,
    _validate,
    _version,
    op_table_fingerprint,
)
from .record import (
    ArgumentsChanged,
    _Recorder,
    _TraceTape,
    _begin,
    _build,
    _collect,
    refuse_differentiated,
    _end,
    _leaf_tensors,
    _out_spec,
    _out_value,
    _reachable_tensors,
    _rng_states,
    _spec,
)


def _same_value(v, seen):
    """Whether a closure Tensor's value ``v`` is still, bit for bit, the recorded ``seen``."""
    a, b = np.asarray(v), np.asarray(seen)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    bits = lambda c: np.ascontiguousarray(c).reshape(-1).view(np.uint8)  # noqa: E731
    return bool(np.array_equal(bits(a), bits(b)))


def _cores():
    """Threads for one batch: one per core this process may run on (its CPU affinity, which a
    container or ``taskset`` narrows), at most Numba's thread count."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cores = os.cpu_count() or 1
    return max(1, min(cores, numba.get_num_threads()))


# what a trace says when, recorded again at these inputs, it refuses them too
_OWN_INPUTS = (
    "the trace, recorded again at these inputs, cannot replay them: at {site}{src} Python saw "
    "{what} when recording, and the compiled replay computes that value in other last bits "
    "than NumPy did, so its guard fails at the recording's own inputs. Differentiate f with "
    "tg.grad / tg.value_and_grad (which run f at every call), or keep that value on the tape "
    "(compute with the Tensor instead of reading its number)"
)


# ---- the trace ---------------------------------------------------------------------------------


class _Work:
    """One thread's replay buffers of a trace."""

    __slots__ = ("val", "adj", "state", "fwd", "bwd", "saved")

    def __init__(self, val, adj, state, fwd, bwd):
        self.val, self.adj, self.state, self.fwd, self.bwd = val, adj, state, fwd, bwd
        self.saved = {}  # first row of a Python op -> what its replay_forward kept


def _row_value(val, voff, r, shape):
    lo, hi = int(voff[r]), int(voff[r + 1])
    return float(val[lo]) if shape == () else val[lo:hi].reshape(shape).copy()


class _PythonOp:
    """A custom op of a trace (a NumPy/SciPy-backed function, a custom_jvp/custom_vjp rule, a
    tg.Function): the Python payload recorded with it runs again on each replay's values,
    between the compiled sweeps, as a plain backward would run it."""

    def __init__(self, node, rows):
        self.node = node
        self.name = node.name
        self.first, self.stop = min(rows), max(rows) + 1
        self.ins = list(zip(node.input_rows, node.in_shapes))
        outs = dict(zip(node.out_pos, node.output_rows))
        outs.update(dict(node.const_outputs))
        self.outs = sorted(outs.items())  # (forward output index, row)
        self.diff = list(zip(node.output_rows, node.out_shapes))

    def forward(self, val, voff):
        xs = [_row_value(val, voff, r, shape) for r, shape in self.ins]
        outs, saved = self.node.replay_forward(xs)
        for k, r in self.outs:
            v = np.asarray(outs[k])
            if v.dtype.kind == "c":
                refuse_complex(f"tg.trace: {self.name} at replay (dtype {v.dtype})")
            lo, hi = int(voff[r]), int(voff[r + 1])
            if v.size != hi - lo:
                raise RuntimeError(
                    f"tg.trace: {self.name} returned {v.size} values for its output {k} at "
                    f"this replay; it returned {hi - lo} when recorded"
                )
            val[lo:hi] = v.reshape(-1)
        return saved

    def backward(self, saved, val, adj, state, voff, rg):
        grads = [
            adj[voff[r] : voff[r + 1]].reshape(shape).copy() if state[r] & 1 else None
            for r, shape in self.diff
        ]
        if all(g is None for g in grads):
            return
        self.node.add_input_grads(self.node.replay_backward(saved, grads), adj, state, voff, rg)

    def tangent(self, saved, tvals, flag, voff):
        """Tangents of the op's outputs, unless none of its inputs carries one (zero then)."""
        if any(flag[r] for r, _ in self.ins):
            node = self.node
            push_custom_tangents(
                node, lambda ts: node.replay_tangent(saved, ts), tvals[0], voff, flag
            )


def _python_ops(t, rows):
    """The custom ops among ``rows`` of the recorded tape ``t``, each once, in row order;
    raises for one whose Python code a replay cannot run again."""
    by_node = {}
    for r in rows:
        node = t.side.payloads.get(int(r))
        if node is None or not getattr(node, "replayable", False):
            name = getattr(node, "name", "a custom op")
            raise TypeError(
                f"tg.trace cannot replay {name} (tape row {int(r)}): its Python code was not "
                "kept for replays (a tg.checkpoint recomputes at backward). Call the function "
                "without it inside f, or use tg.grad, which records every call"
            )
        by_node.setdefault(id(node), (node, []))[1].append(int(r))
    ops = [_PythonOp(node, rs) for node, rs in by_node.values()]
    ops.sort(key=lambda op: op.first)
    return ops


def _non_float(out):
    """How an output leaf of ``f`` is not a float ("dtype bool"...), or None: its derivative
    is not defined, as tg.grad refuses it."""
    for leaf in _pytree.leaves(out) if isinstance(out, (list, tuple, dict)) else [out]:
        dt = output_dtype(leaf)
        if dt is not None and dt.kind in "biu":
            return f"dtype {dt}"
    return None


def _in_turn(method):
    """A public replay method of ``Trace``.  A trace created with ``retrace=True`` may record
    itself again at any call, replacing the columns and sizes that a replay on another thread
    is reading (mixed, they crash the compiled replay or hand out values of the other
    recording): its calls take turns.  Other traces never change after recording, so their
    calls run in parallel, each thread in buffers of its own."""

    @functools.wraps(method)
    def run(self, *args):
        if not self.retrace:
            return method(self, *args)
        with self._turn:
            return method(self, *args)

    return run


class Trace:
    """A recorded tape plus what is needed to replay it.  Create with ``tg.trace``."""

    def __init__(self, f, args, argnums=0, retrace=False):
        self._turn = threading.RLock()  # (see _in_turn)
        self.f = f
        self.single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
        self.argnums = (int(argnums),) if self.single else _argnums_tuple(argnums, "trace")
        for a in self.argnums:
            if not -len(args) <= a < len(args):
                raise ValueError(
                    f"trace: argnums {argnums} is out of range for {len(args)} example arguments"
                )
        self.argnums = tuple(a % len(args) for a in self.argnums)
        self.retrace = bool(retrace)
        self.retraces = 0
        self._record(args)

    # ---- recording ------------------------------------------------------------------------
    def _record(self, args):
        specs, per_arg = [], []
        for i, a in enumerate(args):
            leaves = []
            specs.append(_spec(a, i in self.argnums, leaves))
            per_arg.append(leaves)
        order = list(self.argnums) + [i for i in range(len(args)) if i not in self.argnums]
        t = _TraceTape()
        t.grad_off = False
        tensors = {
            i: [stand_in(new_tensor(v, requires_grad=True)) for v in per_arg[i]] for i in order
        }
        rec = _Recorder(t)
        prev_tape = STATE.tape
        prev, depth, torch_code = STATE.guard, STATE.transforms, STATE.torch_code
        # called with Tensors, f is PyTorch code; with NumPy values, NumPy code (the Tensor
        # methods whose meanings differ follow NumPy's: core.torch_methods).  Decided at the
        # first recording: a retrace at NumPy arguments of a trace made with Tensors records
        # the same program (x.std() stays PyTorch's, not NumPy's biased one)
        if not hasattr(self, "torch_code"):
            self.torch_code = torch_code if depth else holds_tensor(args)
        new_torch_code = self.torch_code
        # Tensors f reaches from its closure that do not require grad: what f computes from
        # them alone (np.sort(w), w.sum() > 0) is not recorded but frozen into the trace, so
        # a replay checks that each still holds the value it had (see _read_closure); and
        # the random generators it reaches, whose draws would be frozen likewise
        generators = []
        watched = [
            (weakref.ref(h), np.array(h._v))
            for h in _reachable_tensors(self.f, generators=generators)
        ]
        rng_before = _rng_states(generators)
        try:  # everything set inside the try and restored absolutely (interrupt safety)
            STATE.tape = t
            _begin(rec)
            STATE.transforms = depth + 1
            STATE.torch_code = new_torch_code
            for i in order:
                for leaf in tensors[i]:
                    row_of(t, leaf)
            k = t.n
            targs = [
                _leaf_tensors(specs[i], per_arg[i], iter(tensors[i])) for i in range(len(args))
            ]
            out = self.f(*targs)
            out_spec = _out_spec(out, t)
            self.non_float = _non_float(out)
        except Exception as e:
            raise_unwrapped(e)
        finally:
            STATE.torch_code = torch_code
            STATE.transforms = depth
            STATE.tape = prev_tape
            _end(prev)
        if _rng_states(generators) != rng_before:
            raise RuntimeError(
                "tg.trace: f drew random numbers (np.random.*, random.*, a Generator from its "
                "closure, or tg.randn/tg.rand) while it was "
                "recorded; the draws would be frozen into the trace and every replay would "
                "reuse them instead of drawing again. Draw outside f and pass the values as an "
                "argument (tr(x, noise)), or use tg.grad, which runs f at every call"
            )
        self._finish(
            t, rec, specs, out_spec, k, sum(np.size(v) for i in self.argnums for v in per_arg[i])
        )
        # (one the trace entered as a row, an operand of a recorded op, is read at every
        # replay instead, as a parameter is)
        direct = {id(ref()) for _, ref, _ in self._closure if ref() is not None}
        self._watched = [(ref, v) for ref, v in watched if id(ref()) not in direct]

    def _finish(self, t, rec, specs, out_spec, k, ng):
        code = t.code[: t.n].copy()  # reading code flushes pending rows
        n = code.shape[0]
        ops = code & 255
        bad = np.flatnonzero(ops >= len(NAMES))
        if bad.size:
            r = int(bad[0])
            raise TypeError(f"tg.trace cannot replay op {ops[r]} (tape row {r})")
        self._py = _python_ops(t, np.flatnonzero(ops == T.CUSTOM))
        if t.side.hooks:
            raise TypeError(
                "tg.trace: f registered tensor hooks (register_hook); they run "
                "Python code in backward and cannot be replayed"
            )
        if t.grad_off:
            raise RuntimeError(
                "tg.trace: f turned gradient recording off (tg.no_grad / "
                "set_grad_enabled(False)) while traced; values computed then "
                "would be frozen into the trace and go stale on replay"
            )
        if (t.state[:n] != 0).any():
            raise RuntimeError(
                "tg.trace: f ran a backward pass (backward / tg.grad / "
                "autograd.grad without create_graph) on traced values; its "
                "results would be frozen into the trace. Trace the outer "
                "function with tg.grad inside it using create_graph=True, or "
                "differentiate the trace with tr.grad"
            )
        rg = t.rg[:n].copy()
        frozen = ((ops == T.LEAF) & (np.arange(n) >= k)) | (ops == T.FREED)
        # Tensors f read from its closure (parameters...): re-read at every replay
        held = (
            (int(r), t.entered(int(r)))
            for r in np.flatnonzero(frozen | ((ops == T.CONST) & (np.arange(n) >= k)))
        )
        self._closure = [(r, weakref.ref(h), np.shape(h._v)) for r, h in held if h is not None]
        code[frozen] = T.CONST  # external leaves and retired values are constants here
        rg[frozen] = 0
        voff = t.voff[: n + 1].copy()
        size = int(voff[n])
        self.code, self.rg, self.voff = code, rg, voff
        self.ip = t.ip[:n].copy()
        self.fp = t.fp[:n].copy()
        self.val = t.val[:size].copy()
        self.ipool = t.ipool[: max(t.np, 1)].copy()
        self.fpool = t.fpool[: max(t.nf, 1)].copy()
        self.specs, self.out_spec = specs, out_spec
        self.m = int(voff[k])
        self.ng = int(ng)
        self.sites = {int(r): s for r, s in rec.sites.items()}
        self._setup()

    def _python_names(self):
        return ", ".join(sorted({op.name for op in self._py}))

    def _setup(self):
        """Sizes and the per-thread work buffers of the compiled calls.

        ``self.val`` is the recorded template (constants included) and is never written by
        a replay: each thread replays in its own copy (``_work``), so threads can share a
        trace and pickling a trace while another thread replays it sees consistent arrays."""
        n = self.code.shape[0]
        self.n = n
        size = max(self.val.shape[0], self.ng)
        if self.val.shape[0] < size:
            self.val = np.concatenate([self.val, np.zeros(size - self.val.size)])
        o = self.out_spec
        self.out_row = o[3] if o[0] == "f" else -1
        self.out_size = int(np.prod(o[1], dtype=np.int64)) if o[0] == "f" else 0
        self._local = threading.local()
        self._tape = None
        self._order = list(self.argnums) + [
            i for i in range(len(self.specs)) if i not in self.argnums
        ]
        self._all_floats = bool(self.specs) and all(sp[0] == "f" and sp[2] for sp in self.specs)
        self._out_off = int(self.voff[self.out_row]) if self.out_row >= 0 else 0
        self._py_at = {r: op for op in self._py for r in range(op.first, op.stop)}

    def _work(self):
        """This thread's replay buffers: values (a copy of the template), adjoints, states
        and the argument tuples of the compiled forward and backward calls."""
        w = getattr(self._local, "w", None)
        if w is None:
            val = self.val.copy()
            adj = np.zeros(val.shape[0])
            state = np.zeros(self.n, np.int8)
            forward, reverse = run.replay_columns(self, val, adj, state)
            w = _Work(val, adj, state, forward, reverse)
            self._local.w = w
        return w

    # ---- arguments --------------------------------------------------------------------------
    def _flat(self, args):
        specs = self.specs
        if len(args) != len(specs):
            raise ArgumentsChanged(
                f"trace: called with {len(args)} arguments; it was recorded with {len(specs)}"
            )
        parts = []
        for i in self._order:
            _collect(specs[i], args[i], parts, i)
        if self._all_floats:
            return np.array(parts)
        if not parts:
            return np.zeros(0)
        return np.concatenate([np.ravel(p) for p in parts])

    def flat_input(self, *args):
        """The flat input vector of ``args`` as the compiled replay reads it (see njit_grad)."""
        return self._flat(args)

    def _prepared(self, args):
        try:
            x = self._flat(args)
            self._read_closure()
            return x
        except (RetraceRequired, ArgumentsChanged):  # a new branch, shape or structure
            if not self._can_retrace():
                raise
        self._retrace(args)
        return self._flat(args)

    def _read_closure(self):
        """Write the current values of the Tensors f read from its closure into their rows."""
        val, voff = self._work().val, self.voff
        for r, ref, shape in self._closure:
            h = ref()
            if h is None:
                raise RetraceRequired(
                    f"trace: a Tensor f read from its closure (tape row {r}) no longer exists "
                    "(the name was rebound and the old Tensor collected), so the trace cannot "
                    "read its current value; record a new trace (or create it with "
                    "retrace=True)"
                )
            v = h._v
            if np.shape(v) != shape:
                raise RetraceRequired(
                    f"trace: a Tensor f reads from its closure (tape row {r}) changed shape "
                    f"from {shape} to {np.shape(v)}; record a new trace (or create it with "
                    "retrace=True)"
                )
            val[voff[r] : voff[r + 1]] = v if v.__class__ is float else np.ravel(v)
        for ref, seen in self._watched:
            h = ref()
            if h is None or not _same_value(h._v, seen):
                raise RetraceRequired(
                    "trace: a Tensor f reads from its closure (without requires_grad) "
                    + ("no longer exists" if h is None else "changed value")
                    + " since the trace was recorded, and f computed from it values the "
                    "trace keeps as they were (a sort, a sum, a branch); record a new trace "
                    "(or create it with retrace=True, or use tg.traced)"
                )

    def _can_retrace(self):
        return self.retrace and self.f is not None

    def _retrace(self, args):
        self.retraces += 1
        self._record(args)

    def _failed(self, status, row, args, again):
        """A replay stopped at ``row``: retrace and run ``again``, or raise."""
        if status == R.GUARD_FAILED:
            if self._can_retrace() and not getattr(self, "_retrying", False):
                self._retrace(args)
                self._retrying = True  # a fresh trace must pass at its own arguments
                try:
                    return again()
                finally:
                    self._retrying = False
            if getattr(self, "_retrying", False):
                site, text, what = self.sites.get(int(row), ["<unknown>", "", "a branch"])
                src = f" `{text}`" if text else ""
                raise RetraceRequired(_OWN_INPUTS.format(site=site, src=src, what=what))
            raise RetraceRequired(self.guard_message(row))
        raise RuntimeError(
            f"tapegrad trace: replay stopped at tape row {row} "
            f"({NAMES[self.code[row] & 255]}, status {status})"
        )

    def guard_message(self, row, prefix=""):
        site, text, what = self.sites.get(int(row), ["<unknown>", "", "a branch"])
        src = f" `{text}`" if text else ""
        hint = "" if self.f is not None else " (this trace was loaded without its function)"
        return (
            f"{prefix}the inputs take another branch than the recorded one: at {site}"
            f"{src} Python saw {what} when the trace was recorded. Record a new trace for "
            f"these inputs, or create it with tg.trace(f, *args, retrace=True){hint}"
        )

    # ---- replay -----------------------------------------------------------------------------
    def _forward(self, w):
        """Forward replay of every row into ``w.val``: compiled, with Python at custom ops."""
        if not self._py:
            return run.replay_forward(w.fwd, 0, self.n)
        start = 0
        while True:
            status, row = run.replay_forward(w.fwd, start, self.n)
            op = self._py_at.get(row) if status == R.BAD_OP else None
            if op is None:
                return status, row
            w.saved[op.first] = op.forward(w.val, self.voff)
            start = op.stop

    def _backward(self, w, top):
        """Reverse sweep from the seeded row ``top`` (compiled, with Python at custom ops)."""
        while True:
            status, row = run.replay_backward(w.bwd, top)
            op = self._py_at.get(row) if status == R.HIT_CUSTOM else None
            if op is None:
                return status, row
            op.backward(w.saved[op.first], w.val, w.adj, w.state, self.voff, self.rg)
            top = op.first - 1

    def _grad_python(self, w, x, g):
        """``grad_into`` for a trace with custom ops (their Python runs between sweeps)."""
        w.val[: self.m] = x
        status, row = self._forward(w)
        if status != R.DONE:
            return status, row
        end = max(int(self.voff[self.out_row + 1]), g.shape[0])
        w.adj[:end] = 0.0
        w.state[: self.out_row + 1] = 0
        w.adj[self._out_off] = 1.0
        w.state[self.out_row] = 1
        status, row = self._backward(w, self.out_row)
        g[:] = w.adj[: g.shape[0]]
        return status, row

    def _no_python(self, what, instead):
        if self._py:
            raise TypeError(
                f"trace.{what}: the trace runs Python for {self._python_names()} at each "
                f"replay, which {what} cannot do; {instead}"
            )

    @_in_turn
    def __call__(self, *args):
        x = self._prepared(args)
        w = self._work()
        w.val[: self.m] = x
        status, row = self._forward(w)
        if status != R.DONE:
            return self._failed(status, row, args, lambda: self(*args))
        return _out_value(self.out_spec, w.val, self.voff)

    @_in_turn
    def value_and_grad(self, *args):
        """(f(*args), gradient in the structure of the ``argnums`` arguments)."""
        if self.out_size != 1 or self.non_float is not None:
            self._need_scalar("grad")
        return self._value_and_grad_at(self._prepared(args), args)

    def _flat_from_leaves(self, leaves):
        """The flat input vector from the float leaves of each argument (``leaves[i]``, in
        ``_collect``'s order), already checked against the specs by the caller."""
        parts = [v for i in self._order for v in leaves[i]]
        if self._all_floats:
            return np.array(parts)
        x = np.empty(self.m)
        pos = 0
        for p in parts:
            if p.__class__ is float:
                x[pos] = p
                pos += 1
            else:
                k = p.size
                x[pos : pos + k] = p.ravel()
                pos += k
        return x

    def _value_and_grad_at(self, x, args):
        g = np.empty(self.ng)
        w = self._work()
        if self._py:
            status, row = self._grad_python(w, x, g)
        else:
            status, row = run.replay_grad(w.bwd, self.n, self.out_row, x, g)
        if status != R.DONE:
            return self._failed(status, row, args, lambda: self.value_and_grad(*args))
        v = float(w.val[self._out_off])
        return (v if self.out_spec[2] else np.array(v).reshape(self.out_spec[1]), self._grads(g))

    def _need_scalar(self, what):
        if self.non_float is not None:
            raise TypeError(
                f"trace.{what}: f returned {self.non_float} (a comparison or a count), whose "
                "derivative is not defined (a zero would look like an answer); return a float"
            )
        if self.out_size != 1:
            o = self.out_spec
            got = f"shape {tuple(o[1])}" if o[0] == "f" else "a pytree of outputs"
            raise ValueError(
                f"trace.{what}: f must return a scalar to be differentiated; it returned {got}"
            )

    def grad(self, *args):
        """Gradient of the scalar f at ``args`` (same structure as the ``argnums`` args)."""
        return self.value_and_grad(*args)[1]

    def _grads(self, g):
        pos = 0
        out = []
        for i in self.argnums:
            o, pos = _build(self.specs[i], g, pos)
            out.append(o)
        return out[0] if self.single else tuple(out)

    def _tangent_flat(self, args, tangents):
        """Tangents for the ``argnums`` arguments, flat in the replay's input order."""
        tangents = tangents if len(self.argnums) > 1 else (tangents,)
        if len(tangents) != len(self.argnums):
            raise ValueError(
                f"trace: {len(tangents)} tangents for {len(self.argnums)} differentiated arguments"
            )
        targs = list(args)
        for i, tv in zip(self.argnums, tangents):
            targs[i] = tv
        try:  # (a TypeError refuses a value, e.g. a masked or complex tangent: it stays one)
            return self._flat(targs)[: self.ng]
        except (RetraceRequired, ValueError) as e:
            raise ValueError(
                "trace: tangents must have the structure and shapes of the "
                f"differentiated arguments ({e})"
            ) from None

    def _tangents_at(self, args, tangents):
        """Forward replay at ``args`` and a compiled tangent sweep; returns (tval, flag), or
        the status and row of a replay that stopped."""
        x = self._prepared(args)
        v = self._tangent_flat(args, tangents)
        w = self._work()
        w.val[: self.m] = x
        status, row = self._forward(w)
        if status != R.DONE:
            return status, row
        tvals = np.zeros((1, w.val.shape[0]))
        flag = np.zeros(self.n, np.int8)
        tvals[0, : self.ng] = v
        flag[: int(np.searchsorted(self.voff, self.ng))] = 1  # the argnums leaf rows
        start = 0
        while True:
            status, row = run.tangent(self, w.val, tvals, flag, start, self.n)
            op = self._py_at.get(row) if status == R.HIT_CUSTOM else None
            if op is None:
                break
            op.tangent(w.saved[op.first], tvals, flag, self.voff)
            start = op.stop
        if status != R.DONE:
            return status, row
        return tvals, flag

    @_in_turn
    def jvp(self, *args_and_tangents):
        """``tr.jvp(*args, tangents)`` -> ``(f(*args), J @ tangents)``, replayed: one forward
        sweep and one tangent sweep, both compiled.  ``tangents`` has the structure of the
        ``argnums`` argument (a tuple of them when several were recorded)."""
        *args, tangents = args_and_tangents
        res = self._tangents_at(args, tangents)
        if not isinstance(res[0], np.ndarray):
            return self._failed(res[0], res[1], tuple(args), lambda: self.jvp(*args_and_tangents))
        tvals, _ = res
        return (
            _out_value(self.out_spec, self._work().val, self.voff),
            _out_value(self.out_spec, tvals[0], self.voff),
        )

    @_in_turn
    def hvp(self, *args_and_v):
        """``tr.hvp(*args, v)`` -> Hessian-vector product of the scalar f, replayed: forward,
        tangent and forward-over-reverse sweeps, all compiled.  In the structure of the
        ``argnums`` arguments."""
        self._need_scalar("hvp")
        self._no_python("hvp", "use tg.hvp(f), which records every call")
        *args, v = args_and_v
        res = self._tangents_at(args, v)
        if not isinstance(res[0], np.ndarray):
            return self._failed(res[0], res[1], tuple(args), lambda: self.hvp(*args_and_v))
        tvals, flag = res
        val = self._work().val
        adj = np.zeros(val.shape[0])
        tadjs = np.zeros((1, val.shape[0]))
        state = np.zeros(self.n, np.int8)
        adj[self._out_off] = 1.0
        state[self.out_row] = 1
        status, row = run.hvp(self, val, tvals, flag, adj, tadjs, state, self.out_row)
        if status != R.DONE:
            return self._failed(status, row, tuple(args), lambda: self.hvp(*args_and_v))
        return self._grads(tadjs[0, : self.ng].copy())

    @_in_turn
    def hessian(self, *args):
        """The Hessian of the scalar f at ``args`` (for one array argument of shape S: an array
        of shape S + S): one forward replay, then one tangent sweep and one forward-over-reverse
        sweep carrying every basis direction as a lane."""
        if len(self.argnums) != 1 or self.specs[self.argnums[0]][0] != "f":
            raise ValueError("trace.hessian: needs a trace of one float or array argument")
        self._need_scalar("hessian")
        self._no_python("hessian", "use tg.hessian(f), which records every call")
        spec = self.specs[self.argnums[0]]
        shape = tuple(spec[1])
        x = self._prepared(args)
        w = self._work()
        w.val[: self.m] = x
        status, row = self._forward(w)
        if status != R.DONE:
            return self._failed(status, row, tuple(args), lambda: self.hessian(*args))
        arrays = (self.code, self.ip, self.fp, self.voff, self.rg, np.zeros(self.n, np.int8))
        H = _forward.hessian_lanes(
            arrays + (self.ipool, self.fpool, w.val),
            self.out_row,
            range(int(np.searchsorted(self.voff, self.ng))),  # the argnums leaf rows
            np.eye(self.ng),
        )
        if H is None:
            raise RuntimeError("tapegrad trace: the Hessian replay met a row it cannot replay")
        H = H.reshape(shape + shape)
        return float(H) if spec[2] else H

    @_in_turn
    def grad_many(self, X, *rest):
        """Gradients at each X[b] (the ``argnums`` argument, an array or float) in parallel.

        ``rest`` are the other arguments, shared by the whole batch.  Returns an array of
        shape X.shape; raises RetraceRequired naming the first batch index whose inputs take
        another branch (with retrace=True those items are answered one by one instead)."""
        if len(self.argnums) != 1:
            raise ValueError("trace.grad_many: needs a trace of a single argnums argument")
        self._need_scalar("grad_many")
        spec = self.specs[self.argnums[0]]
        if spec[0] != "f":
            raise ValueError(
                "trace.grad_many: the differentiated argument must be a float "
                "or an array (stack pytrees yourself)"
            )
        refuse_unsupported(X, "trace.grad_many: X")  # masked, np.matrix, longdouble
        X = np.asarray(X)
        if X.dtype.kind not in "fiub":  # complex, None, strings, dates: not read as numbers
            refuse_non_real(
                None if X.ndim == 0 and X.item() is None else X, X.dtype, "trace.grad_many: X"
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not X.size and X.ndim == 1 and X.shape[0] == 0 and spec[1]:
            X = X.reshape((0, *spec[1]))  # an empty batch: no gradients, shaped as asked
        if list(X.shape[1:]) != spec[1]:
            raise ValueError(
                f"trace.grad_many: X has shape {X.shape}; expected (batch, "
                f"*{tuple(spec[1])}) for the recorded argument shape"
            )
        nb = X.shape[0]
        args = list(rest)
        args.insert(self.argnums[0], X[0] if nb else np.zeros(spec[1]))
        if spec[2] and nb:
            args[self.argnums[0]] = float(X[0])
        x0 = self._prepared(tuple(args))
        if not nb:
            return np.empty(X.shape)
        if self._py:  # Python runs at each item's custom ops: one item after another
            G = np.empty((nb, self.ng))
            values = np.empty(nb)
            for b in range(nb):
                args[self.argnums[0]] = float(X[b]) if spec[2] else X[b]
                v, g = self.value_and_grad(*args)
                values[b] = v
                G[b] = np.ravel(g)
            self.last_values = values
            return G.reshape(X.shape)
        XX = np.empty((nb, self.m))
        XX[:, : self.ng] = X.reshape(nb, -1)
        XX[:, self.ng :] = x0[self.ng :]
        G = np.empty((nb, self.ng))
        values = np.empty(nb)
        fails = np.empty(nb, np.int64)
        if nb:
            run.grad_batch(
                self, self._work().val, self.n, self.out_row, XX, G, values, fails, _cores()
            )
        failed = np.flatnonzero(fails >= 0)
        # every stop is read against this recording's rows before an item is answered
        # again: answering one retraces, and the rows of the new recording are others
        for b in failed:
            row = int(fails[b])
            if not (self._can_retrace() and self.code[row] & 255 == T.GUARD):
                if self.code[row] & 255 == T.GUARD:
                    raise RetraceRequired(self.guard_message(row, f"grad_many item {b}: "))
                raise RuntimeError(f"tapegrad trace: replay of item {b} stopped at row {row}")
        for b in failed:  # items on another branch, one by one (their values too)
            args[self.argnums[0]] = float(X[b]) if spec[2] else X[b]
            v, g = self.value_and_grad(*args)
            values[b] = v
            G[b] = np.ravel(g)
        self.last_values = values
        return G.reshape(X.shape)

    # ---- numba users -----------------------------------------------------------------------
    @property
    def njit_grad(self):
        """``(replay_grad, arrays)``: ``replay_grad(arrays, x)`` is an ``@njit`` function
        returning the flat gradient (w.r.t. the ``argnums`` inputs, in ``flat_input`` order)
        at the flat input ``x = tr.flat_input(*args)``; call it from your own njit code.  It
        uses the calling thread's buffers of the trace (call it from one thread at a time per
        ``arrays``) and raises RetraceRequired when x takes another branch than the recorded
        one."""
        meta = np.array([self.n, self.out_row, self.ng, R.KERNELS_ID], np.int64)
        self._need_scalar("njit_grad")
        self._no_python("njit_grad", "call tr.grad from Python")
        self._read_closure()
        w = self._work()
        return R.replay_grad, (*w.bwd, meta)  # the columns, this thread's buffers

    # ---- data -------------------------------------------------------------------------------
    @property
    def tape(self):
        """The recorded rows as a Tape (for len(), nbytes, inspection); values are those of
        the last replay."""
        if self._tape is None:
            t = T.Tape(rows=max(self.n, 1), values=max(self.val.size, 1))
            t._code[: self.n] = self.code
            t.ip[: self.n] = self.ip
            t._fp[: self.n] = self.fp
            t.rg[: self.n] = self.rg
            t._voff[: self.n + 1] = self.voff
            t.n = t.nsync = self.n
            t.leaf_rows = [r for r in range(self.n) if self.voff[r] < self.m]
            t.side.payloads = dict(self.sites)
            t.ipool = self.ipool.copy()
            t.np = self.ipool.size
            t.fpool = self.fpool.copy()
            t.nf = self.fpool.size
            t.enabled = False
            self._tape = t
        self._tape._val[: self.val.size] = self._work().val
        return self._tape

    def __len__(self):
        return self.n

    def _meta(self):
        return {
            "specs": self.specs,
            "out_spec": self.out_spec,
            "argnums": list(self.argnums),
            "single": self.single,
            "m": self.m,
            "ng": self.ng,
            "sites": [[r, *s] for r, s in sorted(self.sites.items())],
            "non_float": self.non_float,
        }

    def __getstate__(self):
        self._no_python("pickle", "record the trace again in the process that replays it")
        arrays = {k: getattr(self, k) for k in _ARRAYS}
        meta = self._meta()
        return {
            "arrays": arrays,
            "meta": meta,
            "version": _version(),
            "op_table": op_table_fingerprint(),
            "checksum": _checksum(arrays, json.dumps(meta, default=repr)),
        }

    def __setstate__(self, state):
        """Unpickling (trust model: see ``load_trace``): versions, checksum and every field
        are checked before the trace can replay."""
        if not isinstance(state, dict) or "op_table" not in state:
            raise ValueError(
                "pickled trace: it has no tapegrad version stamp (written by an "
                "older tapegrad, or not a trace); record the trace again"
            )
        _check_stamp(state.get("version"), state["op_table"], "this pickled trace")
        arrays, meta = state["arrays"], state["meta"]
        if _checksum(arrays, json.dumps(meta, default=repr)) != state.get("checksum"):
            raise ValueError(
                "pickled trace: the checksum does not match its arrays; the data is corrupted"
            )
        _validate(arrays, meta)
        self._restore(arrays, meta)

    def _restore(self, arrays, meta):
        self._turn = threading.RLock()
        for k in _ARRAYS:
            setattr(self, k, np.ascontiguousarray(arrays[k]))
        self.f = None
        self.retrace = False
        self.retraces = 0
        self.specs, self.out_spec = meta["specs"], meta["out_spec"]
        self.argnums, self.single = tuple(meta["argnums"]), meta["single"]
        self.m, self.ng = meta["m"], meta["ng"]
        self.sites = {int(s[0]): list(s[1:]) for s in meta["sites"]}
        non_float = meta.get("non_float")  # (absent from files saved before it was kept)
        self.non_float = non_float if isinstance(non_float, str) else None
        self._closure = []  # a loaded trace keeps the closure values it was saved with
        self._watched = []
        self._py = []
        self._setup()

    def save(self, path):
        """Write the trace as ``np.savez`` arrays plus JSON metadata (no pickled code)."""
        self._no_python("save", "record the trace again in the process that replays it")
        try:
            meta = json.dumps(self._meta())
        except TypeError as e:
            raise TypeError(
                f"trace.save: a non-float argument or output is not JSON data "
                f"({e}); pickle the trace instead"
            ) from None
        arrays = {k: getattr(self, k) for k in _ARRAYS}
        stamp = json.dumps(
            {
                "version": _version(),
                "op_table": op_table_fingerprint(),
                "checksum": _checksum(arrays, meta),
            }
        )
        with open(path, "wb") as fh:
            np.savez(fh, meta=np.array(meta), stamp=np.array(stamp), **arrays)

    def __repr__(self):
        return (
            f"<tapegrad Trace of {getattr(self.f, '__name__', '?')}: {self.n} rows, "
            f"{len(self.sites)} guards, {self.m} inputs>"
        )


def trace(
    f: Callable, *example_args: Any, argnums: int | Sequence[int] = 0, retrace: bool = False
) -> "Trace":
    """Record ``f(*example_args)`` once; the result replays it compiled (see ``Trace``).

    What a replay reads:

    - the arguments, at every call (same shapes; non-float arguments must be equal);
    - Tensors ``f`` reads from its closure (e.g. parameters a ``tg.optim`` step updates): their
      current value at every replay, so a replay after an optimizer step uses the new
      weights (a change of shape raises RetraceRequired, or retraces).  A value Python looked
      at while recording (``p.item()``, ``if p > 0``) is a guard like any other;
    - Tensors without ``requires_grad`` that ``f`` reaches from its closure (by name, through
      objects, containers, partials and the functions it calls): what ``f`` computes from
      them alone (``np.sort(w)``, ``if w.sum() > 0``) is not recorded, so for each one that
      is never an operand of a recorded op a replay checks that it still holds its recorded
      value, and raises RetraceRequired (or retraces) when it changed (in place, or
      ``w.data = ...``);
    - NumPy arrays and Python numbers from the closure are constants of the trace (as in
      ``jax.jit``): pass values that change as arguments.

    When ``f`` itself differentiates (``tg.trace(tg.grad(g), x)``, ``tg.hessian`` inside),
    the choices its derivative rules make from values (the side of relu's or clip's kink,
    which entry is a max's) are guards too: an input across a kink raises RetraceRequired
    (or retraces), never a replay of the recorded side's derivative.

    Refused: ``f`` drawing random numbers (``np.random.*``, Python's ``random.*``, a NumPy
    ``Generator`` / ``RandomState`` or a ``random.Random`` it reaches from its closure,
    ``tg.randn``/``tg.rand``) while recorded raises RuntimeError, since a replay cannot draw
    again and would silently reuse the recorded draws; draw outside ``f`` and pass the noise
    as an argument.  (A ``np.random.Generator`` created inside ``f`` cannot be noticed: do
    not use one there.)
    Also refused: ``tg.checkpoint``, tensor hooks, ``no_grad`` or a backward inside ``f`` and
    implicit conversions of traced values (``float(x)``, ``np.asarray(x)``...).

    Ops whose forward is Python (``np.linalg``, ``tapegrad.scipy``, ``custom_jvp`` /
    ``custom_vjp``, ``fixed_point``, ``tg.Function``) run their Python again at every replay
    (value, gradient, jvp, ``grad_many`` item by item); ``hessian``, ``hvp``, ``njit_grad``,
    ``save`` and pickling refuse such a trace by name.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tr = tg.trace(lambda x: (x ** 2).sum(), np.array([1.0, 2.0]))
        >>> tr(np.array([3.0, 4.0])), tr.grad(np.array([3.0, 4.0]))      # replayed, not re-run
        (25.0, array([6., 8.]))

        A branch Python took while recording is guarded: other inputs raise ``RetraceRequired``
        (or record again with ``retrace=True``).

        >>> tr = tg.trace(lambda x: x.sum() if x[0] > 0 else -x.sum(), np.array([1.0, 2.0]))
        >>> tr(np.array([-1.0, 2.0]))
        Traceback (most recent call last):
        ...
        tapegrad.kernels.sweeps.RetraceRequired: the inputs take another branch ...
    """
    return Trace(f, example_args, argnums, retrace)


def load_trace(path: str | os.PathLike) -> "Trace":
    """Load a trace written by ``Trace.save``.

    Trust model: the file is arrays plus JSON, read without pickle, so loading runs no code
    from it.  Its tapegrad version and op-table fingerprint must match this installation
    (ValueError naming both otherwise), a sha256 checksum of its arrays and metadata detects
    corruption, and every field a replay reads (op codes, operand rows, value offsets, the
    integer parameters of each op: shapes, strides, counts, indices) is checked against
    bounds before any compiled code runs, so a damaged or crafted file raises ValueError
    naming the field and never reads or writes out of bounds.  Pickled traces (``pickle``,
    Dask) are plain pickle: unpickle only traces you trust.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> import os, tempfile
        >>> tr = tg.trace(lambda x: (x ** 2).sum(), np.array([1.0, 2.0]))
        >>> path = os.path.join(tempfile.mkdtemp(), "square.npz")
        >>> tr.save(path)
        >>> tg.load_trace(path).grad(np.array([3.0, 4.0]))
        array([6., 8.])
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            if "stamp" not in names:
                raise ValueError(
                    f"trace file {path}: it has no tapegrad version stamp "
                    "(written by an older tapegrad, or not a trace file); "
                    "record the trace again"
                )
            missing = [k for k in (*_ARRAYS, "meta") if k not in names]
            if missing:
                _bad(missing[0], "is missing")
            arrays = {k: z[k] for k in _ARRAYS}
            meta_json = str(z["meta"])
            stamp = json.loads(str(z["stamp"]))
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged zip or array header
        raise ValueError(
            f"trace file {path} cannot be read ({type(e).__name__}: {e}); it is "
            "corrupted or not a file written by Trace.save"
        ) from None
    if not isinstance(stamp, dict):
        _bad("stamp", "is malformed")
    _check_stamp(stamp.get("version"), stamp.get("op_table"), f"trace file {path}")
    if _checksum(arrays, meta_json) != stamp.get("checksum"):
        raise ValueError(
            f"trace file {path}: the sha256 checksum does not match its "
            "contents; the file is corrupted"
        )
    try:
        meta = json.loads(meta_json)
    except json.JSONDecodeError:
        _bad("meta", "is not JSON")
    if not isinstance(meta, dict):
        _bad("meta", "is not a JSON object")
    _validate(arrays, meta)
    tr = Trace.__new__(Trace)
    tr._restore(arrays, meta)
    return tr


def _argnums_tuple(argnums, what):
    """``argnums`` given as a sequence, checked: ints only (a bool, a float or a string is
    refused, as tg.grad refuses them)."""
    ok = isinstance(argnums, (tuple, list)) and all(
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in argnums
    )
    if isinstance(argnums, (bool, np.bool_)) or not ok:
        raise TypeError(f"tg.{what}: argnums must be an int or a tuple of ints, got {argnums!r}")
    return tuple(int(i) for i in argnums)


def _shape_key(obj, diff, leaves):
    """A hashable key of an argument's structure: float leaves by shape (appended to
    ``leaves`` in ``_collect``'s order), anything else by value (a trace takes non-float
    arguments as constants), without copying any array."""
    cls = obj.__class__
    if cls is float:
        leaves.append(obj)
        return "f"
    if cls is np.ndarray and obj.dtype.kind == "f" and obj.dtype.itemsize <= 8:
        leaves.append(obj)
        return ("f", obj.shape)
    if isinstance(obj, (list, tuple)):  # (a list comprehension: a generator costs ~1 us more)
        return (cls, tuple([_shape_key(o, diff, leaves) for o in obj]))
    if isinstance(obj, Tensor):
        refuse_differentiated(obj, "")
        obj = obj._v
    if isinstance(obj, dict):
        return ("d", tuple((k, _shape_key(v, diff, leaves)) for k, v in obj.items()))
    # a masked array, an np.matrix, extended precision, complex: refused as tg.trace does
    refuse_unsupported(obj, "tg.traced: an argument")
    if isinstance(obj, (float, np.floating)) or (
        diff and isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_))
    ):
        leaves.append(float(obj))
        return "f"
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f" or (diff and obj.dtype.kind in "iu"):
            leaves.append(obj)
            return ("f", obj.shape)
        if obj.dtype.kind == "c":
            refuse_complex(f"tg.traced: an argument (dtype {obj.dtype})")
        return ("a", obj.dtype.str, obj.shape, obj.tobytes())
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))  # unhashable static value: never equal to another one
    return ("s", type(obj), obj)


_TRACED_LOCK = T.SectionLock()  # the caches of ``Traced`` functions, shared by threads


class Traced:
    """``f`` with a cache of its traces: ``tg.traced(f)``.

    Each call looks up the traces recorded for the structure and shapes of its arguments
    (float leaves by shape, other arguments by value) and replays them compiled, most
    recently used first.  When a replay's guard sees another branch than its recording
    (``RetraceRequired``), the next trace of that structure is tried, and when none fits,
    ``f`` is recorded again at these arguments: one trace per branch taken, at most
    ``max_branches`` per structure and ``max_structures`` structures (least recently used
    ones are dropped).  So a replay never returns what a fresh evaluation would not.

    What a replay does not repeat: ``f``'s Python side effects (printing, appending to a
    list, counters) happen when it is recorded only; values ``f`` reads from its closure
    are as in ``tg.trace`` (Tensors read at every replay, NumPy arrays and numbers frozen).
    Refused as in ``tg.trace``: random draws inside ``f``, custom Functions, hooks.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> loss = tg.traced(lambda w, x: np.sum((w * x - 1.0) ** 2))
        >>> loss.value_and_grad(0.5, np.array([1.0, 2.0]))
        (0.25, -1.0)
        >>> loss.value_and_grad(1.5, np.array([1.0, 2.0]))   # a replay of the same trace
        (4.25, 9.0)
        >>> loss.records, loss.replays
        (1, 2)
    """

    def __init__(self, f, argnums=0, max_branches=8, max_structures=16):
        self.f = f
        self.argnums = argnums
        single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
        self._nums = (int(argnums),) if single else _argnums_tuple(argnums, "traced")
        self.max_branches = max_branches
        self.max_structures = max_structures
        self._cache = {}  # key -> traces, least recently used first
        self.records = 0
        self.replays = 0
        self.evaluations = 0  # calls answered by running f (a trace refusing its own inputs)
        functools.update_wrapper(self, f)

    def _run(self, method, args):
        leaves = [[] for _ in args]
        nums, n = self._nums, len(args)
        # (called with Tensors f is PyTorch code, with NumPy values NumPy code: not one trace)
        torch_code = STATE.torch_code if STATE.transforms else holds_tensor(args)
        key = (torch_code,) + tuple(
            [_shape_key(a, i in nums or i - n in nums, leaves[i]) for i, a in enumerate(args)]
        )
        with _TRACED_LOCK:  # (threads share the cache: the bookkeeping takes turns)
            traces = list(self._traces(key))
        for tr in reversed(traces):  # most recently used first
            try:
                if method == "value_and_grad" and tr.out_size == 1:  # the key checked args
                    tr._read_closure()
                    out = tr._value_and_grad_at(tr._flat_from_leaves(leaves), args)
                else:
                    out = getattr(tr, method)(*args)
            except RetraceRequired:
                continue  # another branch: the next trace, or a new recording
            with _TRACED_LOCK:
                self._keep(key, tr)
                self.replays += 1
            return out
        tr = Trace(self.f, args, self.argnums)
        try:
            out = getattr(tr, method)(*args)
        except RetraceRequired:
            # the fresh trace refuses its own inputs (a value Python read while recording is
            # replayed in other last bits than NumPy computed it): this call is answered by
            # evaluating f, and the trace is not kept
            with _TRACED_LOCK:
                self.records += 1
                self.evaluations += 1
            return self._evaluate(method, args)
        with _TRACED_LOCK:
            self.records += 1
            self._keep(key, tr)
            self.replays += 1
        return out

    def _traces(self, key):
        """The traces of structure ``key`` (least recently used first), now the most recently
        used structure; a new structure may drop the least recently used one."""
        cache = self._cache
        traces = cache.pop(key, None)
        if traces is None:
            traces = []
            while len(cache) >= self.max_structures:
                del cache[next(iter(cache))]
        cache[key] = traces  # most recently used structure last
        return traces

    def _keep(self, key, tr):
        """Make ``tr`` the most recently used trace of structure ``key`` (at most
        ``max_branches`` are kept)."""
        traces = self._traces(key)
        if tr in traces:
            traces.remove(tr)
        traces.append(tr)
        if len(traces) > self.max_branches:
            del traces[0]

    def _evaluate(self, method, args):
        """``f`` run on ``args`` (its value, or tg.value_and_grad), not replayed."""
        if method == "__call__":
            return self.f(*args)
        return _value_and_grad(self.f, self.argnums)(*args)

    def __call__(self, *args):
        """``f(*args)``, replayed."""
        return self._run("__call__", args)

    def value_and_grad(self, *args):
        """``(f(*args), gradient)`` in the structure of the ``argnums`` arguments, replayed."""
        return self._run("value_and_grad", args)

    def grad(self, *args):
        """The gradient of ``f`` at ``args``, replayed."""
        return self._run("value_and_grad", args)[1]

    def __repr__(self):
        n = sum(len(v) for v in self._cache.values())
        return f"<tapegrad traced {getattr(self.f, '__name__', '?')}: {n} traces>"


def traced(
    f: Callable, argnums: int | Sequence[int] = 0, max_branches: int = 8, max_structures: int = 16
) -> Traced:
    """``f`` recorded once per argument structure and branch, then replayed compiled: a
    training loop gets replay speed with no explicit recording step (see ``Traced``).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> f = tg.traced(lambda x: np.sum(np.where(x > 0, x, -x) ** 2))
        >>> f.grad(np.array([1.0, -2.0])), f.grad(np.array([-1.0, 2.0]))  # two branches
        (array([ 2., -4.]), array([-2.,  4.]))
        >>> f.records
        2
    """
    return Traced(f, argnums, max_branches, max_structures)
