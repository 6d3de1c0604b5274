"""Forward mode and second order: ``jvp``, ``jacfwd``, ``jacrev``, ``hvp`` and ``hessian``.

Forward mode is native: ``f`` is recorded once and the generated tangent sweep pushes the
tangents through the tape (about the cost of a gradient).  ``hvp`` and ``hessian`` are
forward-over-reverse: one compiled call runs a tangent sweep and a reverse sweep over
(adjoint, tangent) pairs per direction, with each op's second-order rule derived from its
spec formulas by the kernel generator.

Inside another transform, or when primals or tangents carry a graph, the same rules are
evaluated on Tensors (``forward.tangent_graph``), so results can be differentiated again in
primals and tangents alike (jvp of jvp, grad of jvp in the tangent, jvp of grad).
"""

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import pytree as _pytree
from ..autograd import engine as autograd
from ..autograd import forward as F
from ..core.tape import holding_rows
from ..core.tensor import STATE
from ..core.tensor import TensorBase as Tensor
from .functional import (
    _DEPTH,
    _Call,
    _check_real,
    _check_scalar,
    _leaves,
    _like,
    _unflatten,
    _value,
    _zeros,
    grad,
    jacobian,
)

__all__ = ["hessian", "hvp", "jvp", "jacfwd", "jacrev"]


def _pairs(primals, tangents, what):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"{what} takes primals and tangents as tuples, e.g. tg.{what}(f, (x,), (v,))"
        )
    if len(primals) != len(tangents):
        raise ValueError(f"{what}: {len(primals)} primals but {len(tangents)} tangents")
    return tuple(primals), tuple(tangents)


def _tangent_leaves(primals, tangents, what):
    """Tangent leaves matched to the primals' float leaves (same structure and shapes): arrays,
    or Tensors when a tangent carries a graph."""
    out = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        pl = _leaves(p)
        try:  # dicts by key: a tangent dict in another key order is matched, not shuffled
            tl = _pytree.matched_leaves(p, t)
        except ValueError as e:
            raise ValueError(
                f"{what}: tangent {i} does not have the structure of primal {i} ({e}); "
                "give tangents in the primals' structure"
            ) from None
        for a, b in zip(pl, tl):
            if isinstance(a, (bool, int, np.integer)):
                continue
            _check_real(b, f"{what}: tangent {i}")
            shape = np.shape(a._v if isinstance(a, Tensor) else a)
            if isinstance(b, Tensor) and b._rg:
                bv = b
            else:
                bv = np.asarray(b._v if isinstance(b, Tensor) else b, dtype=np.float64)
            if np.shape(bv._v if isinstance(bv, Tensor) else bv) != shape:
                raise ValueError(
                    f"{what}: tangent {i} has shape {np.shape(_value(b))}, but its "
                    f"primal has shape {shape}"
                )
            out.append(bv)
    return out


def _graph_carrying(tree):
    return any(isinstance(x, Tensor) and x._rg for x in _leaves(tree))


def _fix(a):
    """A 0-d output as a Python number: a float, or NumPy's integer / boolean scalar (an
    argmax stays an integer)."""
    if np.ndim(a) == 0 and not isinstance(a, Tensor):
        a = np.asarray(a)
        return float(a) if a.dtype.kind == "f" else a[()]
    return a


@holding_rows
def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(f(*primals), J @ tangents)`` by forward mode; outputs in the structure ``f`` returns.

    Costs one recording of ``f`` plus one compiled tangent sweep.  Differentiable in primals
    and tangents when used inside another transform.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.jvp(lambda x: x ** 2, (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))   # 2 x * v
        (array([1., 4.]), array([2., 4.]))
    """
    primals, tangents = _pairs(primals, tangents, "jvp")
    vs = _tangent_leaves(primals, tangents, "jvp")
    nested = _DEPTH.n > 0 or _graph_carrying(primals) or any(isinstance(v, Tensor) for v in vs)
    c = _Call(f, primals, {}, tuple(range(len(primals))))
    nested = nested or c.nested
    ys = _leaves(c.out)
    t = STATE.tape
    ins = c.inputs
    # an output that is an input itself (f returned its argument) enters the tape as a leaf
    tracked = [
        k
        for k, y in enumerate(ys)
        if isinstance(y, Tensor) and y._rg and (y._tape is t or any(y is x for x in ins))
    ]
    out_rows = [autograd.row_for(t, ys[k]) for k in tracked]
    in_rows = [x._row if x._tape is t else -1 for x in ins]
    if not tracked:
        res = []
    elif nested:
        seeds = {
            r: (v if isinstance(v, Tensor) else Tensor._const(_value_arr(v, x)))
            for r, v, x in zip(in_rows, vs, ins)
            if r >= 0
        }
        res = F.tangent_graph(t, seeds, out_rows)
    else:
        pairs = [(r, np.ravel(v)) for r, v in zip(in_rows, vs) if r >= 0]
        res = F.tangent_values(t, [r for r, _ in pairs], [v for _, v in pairs], out_rows)
    by_k = dict(zip(tracked, res))
    tangent_out, values = [], []
    for k, y in enumerate(ys):
        shape = np.shape(_value(y))
        d = by_k.get(k)
        if d is None:
            d = _zeros(shape, nested)
        elif not nested:
            d = d.reshape(shape)
        tangent_out.append(d)
        values.append(y if nested else _value(y))
    out = (
        _unflatten(c.out, [_fix(v) for v in values]),
        _unflatten(c.out, [_fix(d) for d in tangent_out]),
    )
    if not nested:
        del c, ys, ins
        STATE.tape.maybe_reset()
    return out


def _value_arr(v, x):
    a = np.asarray(v, dtype=np.float64).reshape(x.shape)
    return float(a) if a.ndim == 0 else a


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """Forward-mode Jacobian (one tangent sweep per input element, in one compiled call):
    the cheaper one when inputs are fewer than outputs.  Same layout as ``tg.jacobian``.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.jacfwd(lambda x: x * x[0])(np.array([1.0, 2.0]))          # [[2 x0, 0], [x1, x0]]
        array([[2., 0.],
               [2., 1.]])
    """
    return jacobian(f, argnums, mode="fwd")


def jacrev(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """Reverse-mode Jacobian (one reverse sweep per output element, in one compiled call).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> f = lambda x: x ** 2 * x[1]          # (x0**2 x1, x1**3)
        >>> tg.jacrev(f)(np.array([1.0, 2.0]))     # [[2 x0 x1, x0**2], [0, 3 x1**2]]
        array([[ 4.,  1.],
               [ 0., 12.]])
    """
    return jacobian(f, argnums, mode="rev")


def hessian(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The matrix of second derivatives of scalar ``f`` with respect to ``args[argnums]``.

    For an argument of shape S the result has shape S + S (nested like ``jacobian`` of
    ``grad``).  Forward-over-reverse in one compiled call; inside another transform it is
    ``jacobian(grad(f))`` on Tensors, so it can be differentiated again.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> f = lambda x: x[0] ** 2 * x[1]
        >>> tg.hessian(f)(np.array([1.0, 2.0]))          # [[2 x1, 2 x0], [2 x0, 0]]
        array([[4., 2.],
               [2., 0.]])
    """
    fallback = jacobian(grad(f, argnums), argnums)

    @functools.wraps(f)
    @holding_rows
    def hessian_f(*args, **kwargs):
        if _DEPTH.n > 0 or any(_graph_carrying(a) for a in args):
            return fallback(*args, **kwargs)
        H, c = _compiled_hessian(f, args, kwargs, argnums, None)
        if H is None:
            del c
            return fallback(*args, **kwargs)
        out = _hessian_tree(c, H)
        # no handle may outlive the call, or the tape keeps every call's rows (and each
        # call's sweeps get slower)
        del c
        STATE.tape.maybe_reset()
        return out

    return hessian_f


def _compiled_hessian(f, args, kwargs, argnums, directions):
    """(H @ directions.T rows, the call) for scalar f, or (None, call) when the tape needs a
    Python-side rule (custom ops)."""
    c = _Call(f, args, kwargs, argnums)
    out = c.out
    _check_scalar(out, "hessian" if directions is None else "hvp")
    ins = c.inputs
    sizes = [x.size for x in ins]
    n = sum(sizes)
    m = n if directions is None else directions.shape[0]
    t = STATE.tape
    if not (isinstance(out, Tensor) and out._rg and out._tape is t):
        return np.zeros((m, n)), c
    autograd.check_root(t, out, 0)
    top = out._row
    used = [k for k, x in enumerate(ins) if x._tape is t and x._row <= top]
    if len(used) == len(ins):
        ucols = np.arange(n)
    else:
        cols = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        ucols = np.concatenate([np.zeros(0, int)] + [np.arange(cols[k], cols[k + 1]) for k in used])
    # the Hessian needs one direction per reached input element only: rows of the others are 0
    if directions is None:
        dirs = np.eye(ucols.size)
    else:
        dirs = directions if ucols.size == n else directions[:, ucols]
    res = F.hessian_values(t, top, [ins[k]._row for k in used], dirs)
    if res is None:
        return None, c
    if ucols.size == n:
        return res, c
    H = np.zeros((m, n))
    H[np.ix_(ucols, ucols) if directions is None else (slice(None), ucols)] = res
    return H, c


def _hessian_tree(c, H):
    ins = c.inputs
    tree = c.trees[0]
    if c.single and len(ins) == 1 and not c.nested and tree.__class__ is np.ndarray:
        # one array argument (the common case): its block, shaped x.shape * 2, in its dtype
        return _like(tree, H.reshape(ins[0].shape * 2))
    cols = [0, *itertools.accumulate(x.size for x in ins)]
    inner = []
    for i, xi in enumerate(ins):
        block = H[cols[i] : cols[i + 1]]
        inner.append(
            c.grads_tree(
                [
                    block[:, cols[j] : cols[j + 1]].reshape(xi.shape + xj.shape)
                    for j, xj in enumerate(ins)
                ],
                xi.shape,
            )
        )
    it = iter(inner)
    trees = [_unflatten(tree, [next(it) for _ in _leaves(tree)]) for tree in c.trees]
    return trees[0] if c.single else tuple(trees)


@holding_rows
def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Hessian-vector product of scalar ``f`` at ``primals`` along ``tangents``.

    Returns ``H @ v`` in the structure of the primals (a single primal gives a single result).
    One recording plus one compiled tangent sweep and one forward-over-reverse sweep; no
    Hessian is formed.  Inside another transform it is ``jvp(grad(f))`` on Tensors.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> f = lambda x: x[0] ** 2 * x[1]
        >>> tg.hvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))  # H[:, 0]
        array([4., 2.])
    """
    primals, tangents = _pairs(primals, tangents, "hvp")
    vs = _tangent_leaves(primals, tangents, "hvp")
    argnums = tuple(range(len(primals)))
    g = grad(f, argnums)
    nested = _DEPTH.n > 0 or _graph_carrying(primals) or any(isinstance(v, Tensor) for v in vs)
    if not nested:
        v = np.concatenate([np.ravel(x) for x in vs]) if vs else np.zeros(0)
        H, c = _compiled_hessian(f, primals, {}, argnums, v[None, :])
        if H is not None:
            leaves = []
            off = 0
            for x in c.inputs:
                leaves.append(H[0, off : off + x.size].reshape(x.shape))
                off += x.size
            trees = c.grads_tree(leaves)
            del c
            STATE.tape.maybe_reset()
            return trees[0] if len(primals) == 1 else trees
        del c

    def directional(*xs):  # <grad f(xs), v>: its gradient is H v (v may carry a graph)
        total = None
        for d, v in zip(_leaves(g(*xs)), vs):
            term = (d * v).sum()
            total = term if total is None else total + term
        return 0.0 if total is None else total

    out = grad(directional, argnums)(*primals)
    return out[0] if len(primals) == 1 else out
