"""Ops whose forward is a NumPy/SciPy call (LAPACK) and whose derivatives are Tensor expressions.

LAPACK cannot run inside the compiled sweeps (Numba's ``np.linalg`` needs SciPy, which is not a
runtime dependency), so such an op records CUSTOM rows (the ``tg.Function`` mechanism): the
forward value comes from NumPy at record time; the VJP and JVP rules are written with tapegrad
ops on Tensors.  The same rule serves every mode: on constant Tensors for a plain backward or a
compiled tangent sweep, on the tape's graph-carrying handles for ``create_graph`` and nested
forward mode, so derivatives of any order follow from the first-order rules.

A rule is ``vjp(x, y, g) -> one gradient (or None) per operand`` and
``jvp(x, y, dx) -> one tangent (or None) per output``: ``x`` the operands and ``y`` the outputs
as Tensors, ``g`` / ``dx`` Tensors or None (no cotangent / zero tangent).

An op given as a forward function of its operands' values (rather than as output values) can
be replayed by ``tg.trace``: each replay calls the forward and the rules again on its own
values, so anything the forward decides from the values (a rank, a refusal) is decided again.
"""

from collections.abc import Callable, Sequence

import numpy as np

from ..autograd.checks import version_error
from ..autograd.engine import enable_grad, no_grad
from ..autograd.function import CustomNode, fit_graph_grad
from ..core.tensor import STATE, result, value_of
from ..core.tensor import TensorBase as Tensor

Rule = Callable[[list, list, list], list]


class RuleNode(CustomNode):
    """Payload of one op recorded by :func:`apply` (shared by its output rows)."""

    def __init__(self, name, vjp, jvp, args, needs, forward=None):
        self.name = name
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.arg_index = tuple(i for i, n in enumerate(needs) if n)
        self.x_const = [Tensor._const(value_of(a)) for a in args]
        self.y_const = []

    # ---- operands and outputs as Tensors: constants, or the tape's handles -----------------
    def _graph_operands(self, t):
        x = list(self.x_const)
        for i, h in zip(self.arg_index, self.input_handles(t), strict=True):
            x[i] = h
        y = list(self.y_const)
        for k, h in zip(self.out_pos, self.output_handles(t), strict=True):
            y[k] = h
        return x, y

    def _per_output(self, vals, shape_fn):
        full = [None] * self.n_out
        for k, v, shape in zip(self.out_pos, vals, self.out_shapes, strict=True):
            if v is not None:
                full[k] = shape_fn(v, shape)
        return full

    def _check_versions(self, t):
        """Raise when an operand or output was changed in place after the op was recorded
        (the rules read their values)."""
        rows = self.input_rows + self.output_rows
        refs = self.input_refs + self.output_refs
        versions = self.in_versions + (0,) * len(self.output_rows)
        for r, ref, v in zip(rows, refs, versions, strict=True):
            h = ref()
            if h is not None and h._version != v:
                raise version_error(t, r, h, v, self.name)

    def _on_values(self, rule, spread, vals, saved=None):
        """``rule`` on constant Tensors (numbers only: a plain backward or tangent sweep), at
        the recorded operands and outputs or at a trace replay's (``saved``: ``(x, y)``)."""
        if saved is None:
            self._check_versions(self.live_tape())
            x, y = self.x_const, self.y_const
        else:
            x, y = saved
        with no_grad():
            return rule(x, y, spread(vals, _const_of))

    def _on_graph(self, rule, spread, vals):
        """``rule`` on the tape's handles, recorded (differentiable again)."""
        t = self.live_tape()
        self._check_versions(t)
        x, y = self._graph_operands(t)
        with enable_grad():
            return rule(x, y, spread(vals, _as_tensor))

    # ---- reverse mode ---------------------------------------------------------------------------
    def backward_values(self, t, grads, saved=None):
        res = self._on_values(self.vjp, self._per_output, grads, saved)
        return [None if res[i] is None else np.asarray(value_of(res[i])) for i in self.arg_index]

    def vjp_graph(self, grads):
        res = self._on_graph(self.vjp, self._per_output, grads)
        return [
            fit_graph_grad(res[i], shape, self.name, k)
            for k, (i, shape) in enumerate(zip(self.arg_index, self.in_shapes, strict=True))
        ]

    # ---- forward mode ---------------------------------------------------------------------------
    def _tangents(self, tangents, make):
        dx = [None] * len(self.x_const)
        for i, v, shape in zip(self.arg_index, tangents, self.in_shapes, strict=True):
            if v is not None:
                dx[i] = make(v, shape)
        return dx

    def jvp_values(self, tangents, saved=None):
        res = self._on_values(self.jvp, self._tangents, tangents, saved)
        return [None if res[k] is None else np.ravel(value_of(res[k])) for k in self.out_pos]

    def jvp_graph(self, tangents):
        res = self._on_graph(self.jvp, self._tangents, tangents)
        return [
            None if res[k] is None else _shaped(res[k], shape)
            for k, shape in zip(self.out_pos, self.out_shapes, strict=True)
        ]

    # ---- replay by tg.trace ------------------------------------------------------------------
    def replay_forward(self, xs):
        vals = [c._v for c in self.x_const]
        for i, v in zip(self.arg_index, xs, strict=True):
            vals[i] = v
        outs = list(self.forward(*vals))
        x = [Tensor._const(result(np.asarray(v, dtype=np.float64))) for v in vals]
        y = [Tensor._const(result(np.asarray(v, dtype=np.float64))) for v in outs]
        return outs, (x, y)

    def replay_backward(self, saved, grads):
        return self.backward_values(None, grads, saved)

    def replay_tangent(self, saved, tangents):
        return self.jvp_values(tangents, saved)


def _const_of(v, shape):
    return Tensor._const(result(np.reshape(np.asarray(v, dtype=np.float64), shape).copy()))


def _as_tensor(v, shape):
    if isinstance(v, Tensor):
        return v if v.shape == tuple(shape) else v.reshape(shape)
    return Tensor._const(result(np.reshape(np.asarray(v, dtype=np.float64), shape)))


def _shaped(v, shape):
    if not isinstance(v, Tensor):
        return Tensor._const(result(np.broadcast_to(np.asarray(v, np.float64), shape).copy()))
    return v if v.shape == tuple(shape) else v.reshape(shape)


def apply(
    name: str,
    args: Sequence,
    outs: Sequence | Callable,
    vjp: Rule,
    jvp: Rule,
    nondiff: Sequence[int] = (),
) -> tuple:
    """Record one op with operands ``args`` (Tensors, arrays or numbers) and outputs ``outs``:
    the output arrays, or better a function of the operands' values returning them (a trace
    can then replay the op); returns one Tensor per output.

    Outputs listed in ``nondiff`` (signs, ranks) carry no gradient.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> def double(x):
    ...     return apply("double", [x], [2.0 * np.asarray(x.data)],
    ...                  lambda x, y, g: [2.0 * g[0]], lambda x, y, dx: [2.0 * dx[0]])[0]
    >>> tg.grad(lambda x: double(x).sum())(np.ones(2))
    array([2., 2.])
    """
    needs = [bool(STATE.enabled and isinstance(a, Tensor) and a._rg) for a in args]
    forward = outs if callable(outs) else None
    if forward is not None:
        outs = forward(*(value_of(a) for a in args))
    outs = [
        result(np.asarray(v, dtype=np.float64)) if k not in nondiff else v
        for k, v in enumerate(outs)
    ]
    if not any(needs):
        return tuple(Tensor._const(v) for v in outs)
    node = RuleNode(name, vjp, jvp, args, needs, forward)
    differentiable = [k not in nondiff for k in range(len(outs))]
    handles = node.record([args[i] for i in node.arg_index], outs, differentiable)
    node.replayable = forward is not None
    node.y_const = [Tensor._const(h._v) for h in handles]
    return tuple(handles)
