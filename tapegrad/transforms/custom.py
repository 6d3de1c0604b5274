"""``custom_jvp`` and ``custom_vjp``: a function's derivative declared by a rule (JAX style).

A decorated function called with Tensors that require grad runs the function (or ``fwd``)
once on constants and records one custom op (``autograd.function.CustomNode``) whose rows the
sweeps hand to the payload here:

- ``custom_jvp``: forward mode evaluates the JVP rule on the tangents (on numbers, or on
  Tensors when nested, so jvp of jvp and grad of jvp work); reverse mode transposes the rule:
  the rule runs on fresh zero tangent leaves and is swept backwards from the cotangents (the
  rule is linear in the tangents, so this is its exact transpose).  Under ``create_graph`` the
  rule is evaluated on the primals' graph handles, so every order is available.
- ``custom_vjp``: reverse mode calls ``bwd(residuals, g)``; under ``create_graph`` ``fwd`` is
  run again on the primals' graph handles (so it should be free of side effects), so
  residuals and cotangents carry a graph and ``bwd`` can be differentiated again.  Forward
  mode raises ``ForwardModeError`` (as JAX does).

Numeric backward passes record on a scratch tape (``scratch_tape``): a sweep of the real tape
is running then, and its adjoint buffer must not be touched.
"""

import contextlib
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import pytree as _pytree
from ..autograd import engine
from ..autograd.function import CustomNode, fit_graph_grad
from ..autograd.higher import row_tensor
from ..core import functions as O
from ..core import tape as T
from ..core.tensor import STATE, result, stand_in, value_of
from ..core.tensor import TensorBase as Tensor
from ..errors import ForwardModeError
from ..tree import tree_flatten, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp"]


# ---- helpers shared with fixed_point ---------------------------------------------------------


@contextlib.contextmanager
def scratch_tape():
    """Record on a fresh tape (retired afterwards); the thread's tape is restored."""
    main = STATE.tape
    s = T.ScratchTape(rows=256, values=1024)
    STATE.tape = s
    try:
        yield s
    finally:
        STATE.tape = main
        s.alive = False


def fresh_leaf(value) -> Tensor:
    """A new leaf Tensor requiring grad, holding a float64 copy of ``value``."""
    v = value_of(value)
    x = Tensor._const(v if v.__class__ is float else np.array(v, dtype=np.float64))
    x._rg = True
    return stand_in(x)


def constant(value) -> Tensor:
    """A Tensor constant (no tape, no grad) holding ``value``."""
    return Tensor._const(value._v if isinstance(value, Tensor) else result(value_of(value)))


def zeros_like(x) -> Any:
    """A zero of the shape of ``x`` (a float for a scalar)."""
    shape = np.shape(x._v if isinstance(x, Tensor) else x)
    return 0.0 if shape == () else np.zeros(shape)


def needs_grad(x) -> bool:
    return isinstance(x, Tensor) and x._rg and STATE.enabled


def fit_shape(v, shape, who):
    """``v`` (Tensor or array-like) of ``shape``, or a single number spread over it; any other
    shape raises naming ``who`` (as JAX's exact-shape rule: a (1,) tangent for a (2,) output is
    a rule's mistake, which broadcasting would hide)."""
    vshape = v.shape if isinstance(v, Tensor) else np.shape(v)
    if tuple(vshape) == tuple(shape):
        return v
    if tuple(vshape) != ():
        raise ValueError(
            f"{who} has shape {tuple(vshape)}, but the output it belongs to has "
            f"shape {tuple(shape)}"
        )
    if isinstance(v, Tensor):
        return O.broadcast_to(v, shape)
    return np.broadcast_to(np.asarray(v, dtype=np.float64), shape)


def check_no_graph(tree, who, what):
    """Refuse graph-carrying results of a call made on constants: ``f`` read a Tensor that
    requires grad from its closure, whose derivative the rule cannot know."""
    for leaf in tree_flatten(tree)[0]:
        if isinstance(leaf, Tensor) and leaf._rg:
            raise TypeError(
                f"{who}: {what} depends on a Tensor that requires grad and is not "
                "an argument (read from a closure or a global); pass it as an "
                "argument so its derivative is covered by the rule"
            )


def graph_inputs(node):
    """A custom op's inputs as graph handles on the live tape (for create_graph and nested
    forward mode: rules evaluated on them are differentiable again)."""
    t = node.live_tape()
    node.check_inputs(t)
    return [
        row_tensor(t, r, shape) for r, shape in zip(node.input_rows, node.in_shapes, strict=True)
    ]


class Args:
    """A call's positional arguments: the differentiated leaves (Tensors requiring grad) of
    the arguments not in ``nondiff_argnums``, and how to rebuild the arguments around them."""

    def __init__(self, who, args, nondiff_argnums):
        self.who = who
        self.args = tuple(args)
        n = len(self.args)
        nums = set()
        for i in nondiff_argnums:
            if not -n <= i < n:
                raise ValueError(
                    f"{who}: nondiff_argnums {i} is out of range for a call with "
                    f"{n} positional arguments"
                )
            nums.add(i % n)
        self.nondiff_pos = sorted(nums)
        self.diff_pos = [i for i in range(n) if i not in nums]
        for i in self.nondiff_pos:
            for leaf in tree_flatten(self.args[i])[0]:
                if needs_grad(leaf):
                    raise TypeError(
                        f"{who}: argument {i} is in nondiff_argnums but holds a "
                        "Tensor that requires grad; remove it from nondiff_argnums "
                        "or pass it detached (x.detach())"
                    )
        self.flat = [tree_flatten(self.args[i]) for i in self.diff_pos]
        self.inputs, self.slots = [], []
        for k, (leaves, _) in enumerate(self.flat):
            for j, leaf in enumerate(leaves):
                if needs_grad(leaf):
                    self.inputs.append(leaf)
                    self.slots.append((k, j))

    @property
    def nondiff(self):
        return tuple(self.args[i] for i in self.nondiff_pos)

    def primals(self, xs, others=None):
        """The differentiated arguments (a tuple) with the input leaves replaced by ``xs``
        and, with ``others`` (a function of a leaf), every other leaf mapped by it."""
        trees = []
        by_slot = dict(zip(self.slots, xs, strict=True))
        for k, (leaves, treedef) in enumerate(self.flat):
            new = [
                by_slot[(k, j)] if (k, j) in by_slot else (leaf if others is None else others(leaf))
                for j, leaf in enumerate(leaves)
            ]
            trees.append(tree_unflatten(treedef, new))
        return tuple(trees)

    def tangents(self, ts):
        """Tangents in the structure of ``primals``: ``ts`` at the input leaves, zeros at the
        other float leaves and None at integer / boolean ones."""

        def zero(leaf):
            kind = leaf.dtype.kind if isinstance(leaf, Tensor) else np.asarray(leaf).dtype.kind
            return zeros_like(leaf) if kind in "fc" else None

        return self.primals(ts, zero)

    def full(self, primals):
        """All positional arguments, the nondiff ones put back at their places."""
        out = list(self.args)
        for i, p in zip(self.diff_pos, primals, strict=True):
            out[i] = p
        return tuple(out)

    def consts(self):
        return [constant(x) for x in self.inputs]

    def input_cotangents(self, cts):
        """The cotangent of each input leaf from per-argument cotangent trees (None: zero)."""
        if not isinstance(cts, (tuple, list)) or len(cts) != len(self.diff_pos):
            raise TypeError(
                f"{self.who}: the backward rule must return a tuple with one "
                f"cotangent per differentiable argument ({len(self.diff_pos)}), "
                f"got {type(cts).__name__}"
                + (f" of length {len(cts)}" if isinstance(cts, (tuple, list)) else "")
            )
        per_arg = []
        for k, ct in enumerate(cts):
            if ct is None:
                per_arg.append(None)
                continue
            try:  # dicts by key: a cotangent dict in another key order is not shuffled
                leaves = _pytree.matched_leaves(self.args[self.diff_pos[k]], ct, True)
            except ValueError as e:
                raise TypeError(
                    f"{self.who}: the cotangent for argument {self.diff_pos[k]} does not "
                    f"have the argument's structure ({e}); return it in the argument's "
                    "structure"
                ) from None
            per_arg.append(leaves)
        return [None if per_arg[k] is None else per_arg[k][j] for k, j in self.slots]


def _signature(fun):
    """``fun``'s signature, or None for a callable without one (a builtin)."""
    try:
        return inspect.signature(fun)
    except ValueError:
        return None


def _bind(signature, fun, who, args, kwargs):
    """Positional arguments for a call (the rules take positional ones), with the defaults
    of parameters the call leaves out filled in, as JAX does: the rules see every argument
    of the function's signature, whether or not the call spelled it out.  ``signature`` is
    ``_signature(fun)``, read once per custom function (not at every call)."""
    if signature is None:  # (a builtin): the call's own arguments
        if not kwargs:
            return args
        raise TypeError(f"{who}: cannot bind keyword arguments to {_name(fun)}")
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{who}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"{who}: keyword-only arguments {sorted(bound.kwargs)} are not "
            "supported; pass them positionally or close over them"
        )
    return bound.args


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


class _Custom:
    """Shared call logic: run on constants, record one custom op over the outputs."""

    kind = ""

    def __init__(self, fun, nondiff_argnums):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.signature = _signature(fun)
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.who = f"{self.kind} function {_name(fun)}"

    def evaluate(self, a, primals):
        """The function (or fwd) at the constant input leaves ``primals``: its residuals (None
        for custom_jvp), output structure, output leaf values and which of them are floats."""
        with engine.enable_grad():  # graph-carrying results would mean a closure: refused
            out, extra = self.primal_call(a, a.full(a.primals(primals)))
        check_no_graph((out, extra), self.who, "its output")
        leaves, treedef = tree_flatten(out)
        values, diff = [], []
        for leaf in leaves:
            v = leaf._v if isinstance(leaf, Tensor) else leaf
            kind = np.asarray(v).dtype.kind
            if kind not in "biuf":
                raise TypeError(
                    f"{self.who} returned a leaf of type {type(leaf).__name__}; "
                    "outputs must be numbers, arrays or Tensors"
                )
            diff.append(kind == "f")
            values.append(result(v) if kind == "f" else np.asarray(v))
        return extra, treedef, values, diff

    def __get__(self, obj, objtype=None):  # decorated methods bind like functions
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        self._check_defined()
        args = _bind(self.signature, self.fun, self.who, args, kwargs)
        a = Args(self.who, args, self.nondiff_argnums)
        if not a.inputs:
            return self.fun(*args)
        node = self.node(a)
        extra, treedef, values, diff = self.evaluate(a, a.consts())
        node.extra = extra
        node.out_def = treedef
        node.out_leaf_shapes = [np.shape(v) for v in values]
        node.out_diff = diff
        return tree_unflatten(treedef, node.record(a.inputs, values, diff))


class _Node(CustomNode):
    """Payload of a custom_jvp / custom_vjp call."""

    def __init__(self, owner, a):
        self.owner = owner
        self.args = a
        self.name = owner.who
        self.in_values = a.consts()

    def graph_primals(self):
        return graph_inputs(self)

    def by_row(self, per_leaf):
        """Per-output-leaf values picked for the output rows."""
        return [per_leaf[k] for k in self.out_pos]

    # ---- replay by tg.trace: the function runs again on the replay's values ----------------
    replayable = True

    def replay_forward(self, xs):
        in_values = [constant(x) for x in xs]
        extra, _, values, _ = self.owner.evaluate(self.args, in_values)
        return values, (in_values, extra)


# ---- custom_jvp ---------------------------------------------------------------------------------


class _JVPNode(_Node):
    def rule_tangents(self, primals, tangents):
        """The rule's tangent outputs, one per output leaf (None: zero), fitted to shapes."""
        a = self.args
        res = self.owner.jvp_rule(*a.nondiff, a.primals(primals), a.tangents(tangents))
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(
                f"{self.name}: the jvp rule must return a pair (primal_out, "
                f"tangent_out), got {type(res).__name__}"
            )
        try:  # dicts by key: a tangent_out dict in another key order is not shuffled
            leaves = _pytree.matched_leaves(self.out_def.skeleton, res[1], True)
        except ValueError as e:
            raise TypeError(
                f"{self.name}: the jvp rule's tangent_out does not have the structure of the "
                f"function's output ({e}); return it in the output's structure"
            ) from None
        return [
            None if v is None or not d else fit_shape(v, s, f"{self.name}: tangent_out leaf {k}")
            for k, (v, s, d) in enumerate(
                zip(leaves, self.out_leaf_shapes, self.out_diff, strict=True)
            )
        ]

    def jvp_values(self, tangents, in_values=None):
        in_values = self.in_values if in_values is None else in_values
        ts = [
            constant(zeros_like(x) if v is None else np.reshape(v, s))
            for x, v, s in zip(in_values, tangents, self.in_shapes, strict=True)
        ]
        with engine.no_grad():
            outs = self.by_row(self.rule_tangents(in_values, ts))
        return [None if v is None else np.ravel(value_of(v)).copy() for v in outs]

    def replay_tangent(self, saved, tangents):
        return self.jvp_values(tangents, saved[0])

    def replay_backward(self, saved, grads):
        return self.backward_values(None, grads, saved[0])

    def jvp_graph(self, tangents):
        prim = self.graph_primals()
        ts = [
            constant(zeros_like(x)) if v is None else v for x, v in zip(prim, tangents, strict=True)
        ]
        with engine.enable_grad():
            outs = self.by_row(self.rule_tangents(prim, ts))
        return [None if v is None else (v if isinstance(v, Tensor) else constant(v)) for v in outs]

    def _transpose(self, primals, grads, create_graph):
        """The rule transposed: sweep ``<grads, tangent_out(t)>`` back to the tangents."""
        leaves = [fresh_leaf(zeros_like(x)) for x in primals]
        with engine.enable_grad():
            outs = self.by_row(self.rule_tangents(primals, leaves))
            self._check_linear(outs)
            pairs = [
                (y, g)
                for y, g in zip(outs, grads, strict=True)
                if g is not None and isinstance(y, Tensor) and y._rg
            ]
            if not pairs:
                return [None] * len(leaves)
            ys, gs = zip(*pairs, strict=True)
            res = engine.run_backward(
                list(ys), list(gs), leaves, True, create_graph, accumulate=False, allow_unused=True
            )
        self._check_transpose(grads, res, primals)
        return res

    def _check_transpose(self, grads, res, primals):
        """The dot-product test ``<g, rule(t)> == <rule^T g, t>`` at a random tangent ``t``.

        Reverse mode transposes the rule at zero tangents; only a rule linear in the tangents
        has that transpose.  A rule that is not (``x_dot ** 2``, ``abs(x_dot)``...) would give
        a wrong gradient without a word, so it is refused here."""
        rng = np.random.default_rng(0)
        ts = [rng.standard_normal(s) if s else float(rng.standard_normal()) for s in self.in_shapes]
        outs = self.jvp_values(ts, [constant(value_of(x)) for x in primals])
        lhs = scale = 0.0
        for g, y in zip(grads, outs, strict=True):
            if g is not None and y is not None:
                gv = np.ravel(value_of(g))
                lhs += float(gv @ y)
                scale += float(np.abs(gv) @ np.abs(y))
        rhs = 0.0
        for r, t in zip(res, ts, strict=True):
            if r is not None:
                rv = np.ravel(value_of(r))
                rhs += float(rv @ np.ravel(t))
                scale += float(np.abs(rv) @ np.abs(np.ravel(t)))
        if not np.isfinite(scale) or abs(lhs - rhs) <= 1e-7 * scale + 1e-300:
            return
        raise ValueError(
            f"{self.name}: the custom_jvp rule's tangent_out is not linear in the tangents "
            f"(the dot-product test <g, jvp(t)> = {lhs:.6g} vs <vjp(g), t> = {rhs:.6g} "
            "fails), so reverse mode cannot transpose it: a gradient from it would be wrong. "
            "Make tangent_out linear in the tangents (e.g. x_dot * df/dx, never x_dot ** 2 or "
            "abs(x_dot)), or declare the reverse rule directly with tg.custom_vjp"
        )

    def _check_linear(self, outs):
        """At zero tangents a linear rule gives zero: anything else (an affine or constant
        tangent_out) has no transpose, and reverse mode would disagree with forward mode."""
        for k, v in enumerate(outs):
            a = np.asarray(value_of(v)) if v is not None else np.zeros(0)
            if np.any(np.isfinite(a) & (a != 0)):
                raise ValueError(
                    f"{self.name}: the jvp rule's tangent_out (output leaf "
                    f"{self.out_pos[k]}) is not linear in the tangents: it is "
                    "nonzero for zero tangents. Return tangent_out as a linear "
                    "function of the tangents (e.g. x_dot * df/dx)"
                )

    def backward_values(self, t, grads, in_values=None):
        with scratch_tape():
            return self._transpose(self.in_values if in_values is None else in_values, grads, False)

    def vjp_graph(self, grads):
        res = self._transpose(self.graph_primals(), grads, True)
        return [
            fit_graph_grad(g, s, self.name, k)
            for k, (g, s) in enumerate(zip(res, self.in_shapes, strict=True))
        ]


class custom_jvp(_Custom):
    """A function whose derivative is given by a JVP rule (``jax.custom_jvp``).

    ``f.defjvp(rule)`` with ``rule(primals, tangents) -> (primal_out, tangent_out)``, linear
    in the tangents; arguments in ``nondiff_argnums`` come first, before ``primals``, and get
    no tangent.  The rule serves forward mode directly and reverse mode by transposition, at
    every order.  On plain arrays the function runs unchanged.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> @tg.custom_jvp
    ... def log1pexp(x):
    ...     return np.log1p(np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     x, = primals
    ...     x_dot, = tangents
    ...     return log1pexp(x), x_dot * (1 - 1 / (1 + np.exp(x)))
    >>> tg.grad(log1pexp)(1000.0)
    1.0
    >>> tg.jvp(log1pexp, (0.0,), (2.0,))
    (0.6931471805599453, 1.0)
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp_rule = None

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the JVP rule (usable as a decorator); returns ``jvp``."""
        self.jvp_rule = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: ``jvps[i](tangent_i, primal_out, *primals)`` gives argument
        i's contribution to the output tangent (None: the output does not depend on it)."""
        if self.nondiff_argnums:
            raise TypeError(f"{self.who}: defjvps does not support nondiff_argnums; use defjvp")

        def rule(primals, tangents):
            out = self.fun(*primals)
            total = None
            for fn, t in zip(jvps, tangents, strict=True):
                if fn is None:
                    continue
                term = fn(t, out, *primals)
                total = term if total is None else total + term
            return out, total

        self.jvp_rule = rule

    def _check_defined(self):
        if self.jvp_rule is None:
            raise AttributeError(
                f"No JVP defined for {self.who}: call "
                f"{_name(self.fun)}.defjvp(rule) before calling it"
            )

    def node(self, a):
        return _JVPNode(self, a)

    def primal_call(self, a, args):
        return self.fun(*args), None


# ---- custom_vjp ---------------------------------------------------------------------------------


class _VJPNode(_Node):
    def _cotangents(self, grads, make):
        """The output cotangent tree for bwd: ``grads`` at the output rows, zeros elsewhere."""
        leaves = [None] * len(self.out_leaf_shapes)
        for k, g in zip(self.out_pos, grads, strict=True):
            leaves[k] = g
        shapes = self.out_leaf_shapes
        return tree_unflatten(
            self.out_def,
            [
                make(0.0 if s == () else np.zeros(s)) if g is None else g
                for g, s in zip(leaves, shapes, strict=True)
            ],
        )

    def _bwd(self, residuals, cts):
        a = self.args
        return a.input_cotangents(self.owner.bwd(*a.nondiff, residuals, cts))

    def backward_values(self, t, grads, saved=None):
        """The bwd rule at the recorded residuals, or at a replay's (``saved``)."""
        residuals = self.extra if saved is None else saved[1]
        cts = self._cotangents([None if g is None else constant(g) for g in grads], constant)
        with engine.no_grad():
            res = self._bwd(residuals, cts)
        return [None if g is None else value_of(g) for g in res]

    def vjp_graph(self, grads):
        prim = self.graph_primals()
        a = self.args
        cts = self._cotangents(grads, constant)
        with engine.enable_grad():
            _, residuals = self.owner.split_fwd(self.owner.fwd(*a.full(a.primals(prim))))
            res = self._bwd(residuals, cts)
        return [
            fit_graph_grad(g, s, self.name, k)
            for k, (g, s) in enumerate(zip(res, self.in_shapes, strict=True))
        ]

    def replay_backward(self, saved, grads):
        return self.backward_values(None, grads, saved)

    def replay_tangent(self, saved, tangents):
        raise self._no_forward()

    def _no_forward(self):
        return ForwardModeError(
            f"can't apply forward-mode autodiff (tg.jvp, tg.jacfwd) to the {self.name}: it "
            "declares only a reverse-mode rule (defvjp). Use reverse mode (tg.grad, tg.vjp, "
            "tg.jacrev), or define the function with tg.custom_jvp"
        )

    def jvp_values(self, tangents):
        raise self._no_forward()

    def jvp_graph(self, tangents):
        raise self._no_forward()


class custom_vjp(_Custom):
    """A function whose reverse-mode derivative is given by ``fwd`` and ``bwd`` (JAX's
    ``jax.custom_vjp``).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` and ``bwd(residuals, g)``
    returns a tuple with one cotangent per argument (None: zero); arguments in
    ``nondiff_argnums`` are passed to ``bwd`` first.  Reverse mode works at every order (bwd
    is evaluated on Tensors under create_graph); forward mode raises ``tg.ForwardModeError``.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> @tg.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(_, g):
    ...     return (np.clip(g, -1.0, 1.0),)
    >>> clip_gradient.defvjp(fwd, bwd)
    >>> tg.grad(lambda x: 5.0 * clip_gradient(x))(2.0)
    1.0
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the rules: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g)``."""
        self.fwd, self.bwd = fwd, bwd

    def _check_defined(self):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for {self.who}: call "
                f"{_name(self.fun)}.defvjp(fwd, bwd) before calling it"
            )

    def split_fwd(self, res):
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(
                f"{self.who}: fwd must return a pair (output, residuals), got {type(res).__name__}"
            )
        return res[0], res[1]

    def node(self, a):
        return _VJPNode(self, a)

    def primal_call(self, a, args):
        return self.split_fwd(self.fwd(*args))
