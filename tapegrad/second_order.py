"""Second-order transforms: ``hessian``, ``hvp`` and ``jvp``, composed from the first-order ones.

All three differentiate a gradient, so they rely on ``create_graph``: the inner gradient is
recorded on the tape by ``_higher.py`` (one Python pass over the rows of ``f``) and the outer
derivative is then taken by the compiled sweep.  ``hessian`` is ``jacobian(grad(f))``: its n
rows come from one compiled call that sweeps n cotangents (``_kernels.jacobian_sweeps``), not
n Python backward passes.
"""
import numpy as np

from . import autograd
from ._tensor import Tensor
from .functional import _DEPTH, _Call, _leaves, _unflatten, _value, grad, jacobian

__all__ = ["hessian", "hvp", "jvp"]


def hessian(f, argnums=0):
    """The matrix of second derivatives of scalar ``f`` with respect to ``args[argnums]``.

    For an argument of shape S the result has shape S + S (nested like ``jacobian``)."""
    return jacobian(grad(f, argnums), argnums)


def _pairs(primals, tangents, what):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{what} takes primals and tangents as tuples, e.g. "
                        f"tg.{what}(f, (x,), (v,))")
    if len(primals) != len(tangents):
        raise ValueError(f"{what}: {len(primals)} primals but {len(tangents)} tangents")
    return tuple(primals), tuple(tangents)


def _tangent_leaves(primals, tangents, what):
    """Tangent arrays matched leaf by leaf to the primals (same structure and shapes)."""
    out = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        pl, tl = _leaves(p), _leaves(t)
        if len(pl) != len(tl):
            raise ValueError(f"{what}: tangent {i} has {len(tl)} leaves but primal {i} has "
                             f"{len(pl)}; give tangents in the primals' structure")
        for a, b in zip(pl, tl):
            if a is None or isinstance(a, (bool, int, np.integer)):
                continue
            bv = np.asarray(b._v if isinstance(b, Tensor) else b, dtype=np.float64)
            if bv.shape != np.shape(a._v if isinstance(a, Tensor) else a):
                raise ValueError(f"{what}: tangent {i} has shape {bv.shape}, but its primal "
                                 f"has shape {np.shape(a._v if isinstance(a, Tensor) else a)}")
            out.append(bv)
    return out


def _vdot(gs, vs):
    total = None
    for g, v in zip(gs, vs):
        if g is None:
            continue
        term = (g * v).sum() if isinstance(g, Tensor) else float(np.sum(g * v))
        total = term if total is None else total + term
    return 0.0 if total is None else total


def hvp(f, primals, tangents):
    """Hessian-vector product of scalar ``f`` at ``primals`` along ``tangents``.

    Returns ``H @ v`` in the structure of the primals (a single primal gives a single result).
    Costs one forward, one create_graph backward and one compiled backward: no Hessian is
    formed."""
    primals, tangents = _pairs(primals, tangents, "hvp")
    vs = _tangent_leaves(primals, tangents, "hvp")
    argnums = tuple(range(len(primals)))
    g = grad(f, argnums)

    def directional(*xs):
        grads = [d for d in _leaves(g(*xs)) if d is not None]   # None: pass-through leaves
        return _vdot(grads, vs)
    out = grad(directional, argnums)(*primals)
    return out[0] if len(primals) == 1 else out


def jvp(f, primals, tangents):
    """``(f(*primals), J @ tangents)``: a forward-mode product by the double-vjp trick.

    ``J^T u`` is linear in a dummy cotangent ``u``; differentiating ``<J^T u, v>`` with respect
    to ``u`` gives ``J v``.  Outputs come in the structure ``f`` returns."""
    primals, tangents = _pairs(primals, tangents, "jvp")
    vs = _tangent_leaves(primals, tangents, "jvp")
    c = _Call(f, primals, {}, tuple(range(len(primals))))
    nested = c.nested or _DEPTH.n > 0
    ys = _leaves(c.out)
    tracked = [y for y in ys if isinstance(y, Tensor) and y._rg]
    us = [Tensor(np.zeros(y.shape), requires_grad=True) for y in tracked]
    ins = c.used_inputs()
    if tracked:
        gs = autograd.grad(tracked, ins, grad_outputs=us, retain_graph=True,
                           create_graph=True, allow_unused=True)
        s = _vdot(gs, vs)
    else:
        s = 0.0
    if isinstance(s, Tensor) and s._rg:
        jv = autograd.grad(s, us, create_graph=nested, allow_unused=True)
    else:
        jv = [None] * len(us)
    it = iter(jv)
    tangent_out = []
    for y in ys:
        if isinstance(y, Tensor) and y._rg:
            d = next(it)
            if d is None:
                d = Tensor._const(np.zeros(y.shape)) if nested else np.zeros(y.shape)
            elif not nested:
                d = d._v
            tangent_out.append(d)
        else:
            tangent_out.append(np.zeros(np.shape(_value(y))))
    values = [y if nested else _value(y) for y in ys]
    fix = (lambda a: float(a) if np.ndim(a) == 0 and not isinstance(a, Tensor) else a)
    return (_unflatten(c.out, [fix(v) for v in values]),
            _unflatten(c.out, [fix(d) for d in tangent_out]))
