"""``fixed_point(f, a, x0, distance, tol)``, differentiated implicitly in ``a`` (HIPS autograd).

The forward iteration runs on constants and records nothing; the result is one custom op
whose inputs are the Tensors in ``a``.  Its backward solves the adjoint fixed-point equation
``w = g + (df(a)/dx)^T w`` at ``x*`` by the same kind of iteration (one recording of
``f(a)(x*)``, one compiled sweep per step on a scratch tape), then returns
``(df(a)/da)^T w``; the tape never grows with the number of iterations.  Under create_graph
the adjoint equation is itself a ``fixed_point`` on Tensors, so higher derivatives are
implicit too.  Forward mode (``tg.jvp``, ``tg.jacfwd``) iterates the tangent equation the same
way; nested forward mode raises ``ForwardModeError``.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd import engine
from ..autograd.forward import tangent_values
from ..autograd.function import CustomNode, fit_graph_grad
from ..autograd.higher import row_tensor
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import result, value_of
from ..errors import ForwardModeError
from ..tree import tree_flatten, tree_unflatten
from .custom import (
    check_no_graph,
    constant,
    fresh_leaf,
    graph_inputs,
    needs_grad,
    scratch_tape,
    zeros_like,
)

__all__ = ["fixed_point"]


def _above(d, tol):
    """``distance > tol`` for a distance given as a number, array or constant Tensor."""
    return (d._v if isinstance(d, Tensor) else d) > tol


def _iterate(step, x0, distance, tol, max_iter=None, what="the fixed point"):
    """``x = step(x)`` from ``x0`` while ``distance(x, x_prev) > tol``, at most ``max_iter``
    steps (None: no cap)."""
    x, x_prev = step(x0), x0
    n = 1
    while _above(distance(x, x_prev), tol):
        if max_iter is not None and n >= max_iter:
            d = distance(x, x_prev)
            d = d._v if isinstance(d, Tensor) else d
            raise RuntimeError(
                f"fixed_point: {what} did not converge in max_iter={max_iter} iterations "
                f"(the last distance was {np.max(d):.3g}, above tol={tol:g}); f(a) must be a "
                "contraction near the fixed point: check f and a, start x0 closer, loosen "
                "tol, or raise max_iter"
            )
        x, x_prev = step(x), x
        n += 1
    return x


def _sweep(y, seed, inputs, create_graph):
    """Cotangents of ``inputs`` (zeros where unreached) for ``y`` seeded with ``seed``."""
    if not (isinstance(y, Tensor) and y._rg):
        grads = [None] * len(inputs)
    else:
        grads = engine.run_backward(
            [y], [seed], inputs, True, create_graph, accumulate=False, allow_unused=True
        )
    zero = (lambda x: constant(zeros_like(x))) if create_graph else zeros_like
    return [zero(x) if g is None else g for g, x in zip(grads, inputs, strict=True)]


def _vjp_x(f, a, x, w):
    """``(df(a)/dx)^T w`` at ``x``: on Tensors (differentiable) when anything carries a
    graph, else numerically on a scratch tape."""
    if any(needs_grad(leaf) for leaf in tree_flatten((a, x, w))[0]):
        xc = x.clone() if needs_grad(x) else fresh_leaf(x)
        return _sweep(f(a)(xc), w, [xc], True)[0]
    with scratch_tape():
        xl = fresh_leaf(x)
        with engine.enable_grad():
            y = f(a)(xl)
        return _sweep(y, value_of(w), [xl], False)[0]


def _adjoint(f):
    """The map whose fixed point is the adjoint: ``params=(a, x*, g)`` gives
    ``w -> (df(a)/dx)^T w + g`` at ``x*``."""

    def rev(params):
        a, x_star, g = params
        return lambda w: _vjp_x(f, a, x_star, w) + g

    return rev


class _FixedPointNode(CustomNode):
    """Payload of a differentiated ``fixed_point`` call."""

    name = "FixedPointBackward"

    def __init__(self, f, leaves, treedef, slots, distance, tol, max_iter):
        self.f, self.leaves, self.treedef, self.slots = f, leaves, treedef, slots
        self.distance, self.tol, self.max_iter = distance, tol, max_iter

    def a_tree(self, xs):
        leaves = list(self.leaves)
        for j, x in zip(self.slots, xs, strict=True):
            leaves[j] = x
        return tree_unflatten(self.treedef, leaves)

    def backward_values(self, t, grads, a_values=None, x_star=None):
        """Cotangents of a from the adjoint fixed point (at the recorded a and x*, or at
        ``a_values`` and ``x_star`` for a trace's replay)."""
        g = grads[0]
        if g is None:
            return [None] * len(self.slots)
        a_values = [self.leaves[j] for j in self.slots] if a_values is None else a_values
        x_star = self.x_star if x_star is None else x_star
        with scratch_tape():
            a_l = [fresh_leaf(v) for v in a_values]
            x_l = fresh_leaf(x_star)
            with engine.enable_grad():
                y = self.f(self.a_tree(a_l))(x_l)
            inputs = a_l + [x_l]
            w = _iterate(
                lambda w: _sweep(y, w, inputs, False)[-1] + g,
                zeros_like(g),
                self.distance,
                self.tol,
                self.max_iter,
                "the adjoint (gradient) iteration",
            )
            return _sweep(y, w, inputs, False)[:-1]

    def jvp_values(self, tangents, a_values=None, x_star=None):
        """Forward mode: the tangent of x* solves ``t = (df/dx) t + (df/da) da``, iterated
        like the forward pass (one recording, one tangent sweep per step on a scratch tape)."""
        a_values = [self.leaves[j] for j in self.slots] if a_values is None else a_values
        x_star = self.x_star if x_star is None else x_star
        shape = np.shape(x_star)
        with scratch_tape() as s:
            a_l = [fresh_leaf(v) for v in a_values]
            x_l = fresh_leaf(x_star)
            with engine.enable_grad():
                y = self.f(self.a_tree(a_l))(x_l)
            if not (isinstance(y, Tensor) and y._rg and y._tape is s):
                return [None]
            seeds = [
                (h._row, np.ravel(v))
                for h, v in zip(a_l, tangents, strict=True)
                if v is not None and h._tape is s
            ]
            x_row = [x_l._row] if x_l._tape is s else []

            def step(t):
                vals = [v for _, v in seeds] + [np.ravel(t)] * len(x_row)
                (out,) = tangent_values(s, [r for r, _ in seeds] + x_row, vals, [y._row])
                return np.zeros(shape) if out is None else out.reshape(shape)

            t_star = _iterate(
                step,
                np.zeros(shape),
                self.distance,
                self.tol,
                self.max_iter,
                "the tangent (jvp) iteration",
            )
            return [np.ravel(t_star)]

    # ---- replay by tg.trace: the iteration runs again from x0 at the replay's a ----------
    replayable = True

    def solve(self, a_values):
        """x* at the values ``a_values`` of the differentiated leaves, iterated from x0."""
        a = self.a_tree([constant(v) for v in a_values])
        with engine.enable_grad():  # a graph-carrying result would mean a closure: refused
            x = _iterate(self.f(a), self.x0, self.distance, self.tol, self.max_iter)
        check_no_graph(x, "fixed_point", "the fixed point")
        return result(value_of(x))

    def replay_forward(self, xs):
        x_star = self.solve(xs)
        return [x_star], (xs, x_star)

    def replay_backward(self, saved, grads):
        return self.backward_values(None, grads, *saved)

    def replay_tangent(self, saved, tangents):
        return self.jvp_values(tangents, *saved)

    def jvp_graph(self, tangents):
        raise ForwardModeError(
            "fixed_point: nested forward mode (a tg.jvp inside another transform, or on "
            "Tensors that carry a graph) is not supported through a fixed point; take that "
            "derivative in reverse mode (tg.grad, tg.vjp); tg.grad, tg.hessian, tg.hvp and a "
            "tg.jvp of a gradient work at any order"
        )

    def vjp_graph(self, grads):
        g = grads[0]
        if g is None:
            return [None] * len(self.slots)
        a_h = graph_inputs(self)
        x_h = row_tensor(self.live_tape(), self.output_rows[0], self.out_shapes[0])
        with engine.enable_grad():
            w = fixed_point(
                _adjoint(self.f),
                (self.a_tree(a_h), x_h, g),
                zeros_like(self.x_star),
                self.distance,
                self.tol,
                max_iter=self.max_iter,
            )
            a_c = [x.clone() for x in a_h]
            res = _sweep(self.f(self.a_tree(a_c))(x_h), w, a_c, True)
        return [
            fit_graph_grad(r, s, self.name, k)
            for k, (r, s) in enumerate(zip(res, self.in_shapes, strict=True))
        ]


def fixed_point(
    f: Callable[[Any], Callable[[Any], Any]],
    a: Any,
    x0: Any,
    distance: Callable[[Any, Any], Any],
    tol: float,
    max_iter: int | None = None,
) -> Any:
    """The fixed point of ``f(a)``: ``x = f(a)(x)`` iterated from ``x0`` while
    ``distance(x, x_prev) > tol`` (HIPS autograd's ``fixed_point``).

    Differentiable in ``a`` (any pytree) by implicit differentiation, to any order: the
    gradient solves the adjoint fixed-point equation instead of unrolling the loop.  Like
    HIPS autograd it does not differentiate with respect to ``x0`` (a converged fixed point
    does not depend on it).  ``f(a)`` must contract; with ``max_iter`` an iteration (the
    forward one, or the adjoint or tangent one of a derivative) that has not converged
    after ``max_iter`` steps raises a RuntimeError instead of running on.

    >>> import tapegrad as tg
    >>> def newton_sqrt(a):
    ...     return lambda x: 0.5 * (x + a / x)
    >>> def sqrt(a):
    ...     return tg.fixed_point(newton_sqrt, a, 1.0, lambda x, y: abs(x - y), 1e-12)
    >>> round(sqrt(2.0), 12)
    1.414213562373
    >>> round(tg.grad(sqrt)(4.0), 12)           # 1 / (2 sqrt(4))
    0.25
    >>> tg.fixed_point(lambda a: lambda x: a * x + 1.0, 2.0, 0.0, lambda x, y: abs(x - y),
    ...                1e-12, max_iter=50)
    Traceback (most recent call last):
    ...
    RuntimeError: fixed_point: the fixed point did not converge in max_iter=50 iterations ...
    """
    for leaf in tree_flatten(x0)[0]:
        if needs_grad(leaf):
            raise TypeError(
                "fixed_point does not differentiate with respect to x0 (the fixed "
                "point does not depend on where the iteration starts); pass "
                "x0.detach(), or differentiate with respect to a"
            )
    leaves, treedef = tree_flatten(a)
    slots = [j for j, leaf in enumerate(leaves) if needs_grad(leaf)]
    if not slots:
        return _iterate(f(a), x0, distance, tol, max_iter)
    if isinstance(x0, (list, tuple, dict)):
        raise TypeError(
            "fixed_point differentiates a fixed point x that is one float or array, got x0 "
            f"as a {type(x0).__name__}; iterate on one vector (flat, unravel = "
            "tapegrad.tree.ravel(x0), and f(a) = lambda v: ravel(g(unravel(v)))[0])"
        )
    node = _FixedPointNode(f, leaves, treedef, slots, distance, tol, max_iter)
    node.x0 = x0
    node.x_star = node.solve([leaves[j] for j in slots])
    (out,) = node.record([leaves[j] for j in slots], [node.x_star], [True])
    return out
