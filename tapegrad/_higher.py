"""``create_graph=True``: the backward sweep written with differentiable tapegrad ops.

The compiled sweep in ``_kernels.py`` only produces numbers.  Here the same reverse walk runs
in Python, row by row, and each row's vector-Jacobian product is computed with tapegrad ops,
so the gradients are themselves recorded on the tape (appended after the rows being swept)
and can be differentiated again, to any order.  ``VJP[code]`` is the rule table: one entry per
op, returning ``[(operand_row, gradient), ...]``.
"""
import numpy as np

from . import _ops as O
from . import _tape as T
from ._tensor import Tensor, result

def row_shape(t, r):
    h = t.handles[r]
    if h is not None:
        return h.shape
    size = int(t.voff[r + 1] - t.voff[r])
    return () if size == 1 else (size,)


def row_tensor(t, r, shape=None):
    """A handle on row ``r`` as it is on the tape (so new ops reference that very row)."""
    if shape is None:
        shape = row_shape(t, r)
    h = t.handles[r]
    if h is not None and h._tape is t and h._row == r:
        return h
    v = t.value(r).copy().reshape(shape)
    x = object.__new__(Tensor)
    x._v = result(v)
    x._tape = t
    x._row = r
    x._rg = bool(t.rg[r])
    x._leaf = t.op(r) <= T.CONST
    return x


def _ints(t, r, start, count):
    p = int(t.ip[r]) + start
    return [int(v) for v in t.ipool[p:p + count]]


def _strided(shape, strides, base):
    offs = np.full(shape, base, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[d] = n
        offs += (np.arange(n, dtype=np.int64) * s).reshape(view)
    return offs


def _reduce_offsets(t, r):
    nd = int(t.ipool[t.ip[r]])
    in_shape = tuple(_ints(t, r, 1, nd))
    ostr = _ints(t, r, 1 + nd, nd)
    return in_shape, _strided(in_shape, ostr, 0).reshape(-1)


def _const(v):
    return Tensor._const(result(np.asarray(v, dtype=np.float64)))


# ---- rules: (t, r, g, a, b) -> list of (row, grad) for operands a = row A, b = row B ----------
def _unary(fn):
    def rule(t, r, g):
        ra, _ = t.operands(r)
        shape = row_shape(t, r)
        return [(ra, fn(t, r, g, row_tensor(t, ra, shape), float(t.fp[r])))]
    return rule


def _out(t, r):
    return row_tensor(t, r)


def _mask(cond):
    return _const(np.asarray(cond, dtype=np.float64))


def _pows(t, r, g, a, c):
    if c == 0.0:
        return g * 0.0
    return g * (O.power(a, c - 1.0) * c)


VJP = {
    "NEG": _unary(lambda t, r, g, a, c: -g),
    "EXP": _unary(lambda t, r, g, a, c: g * _out(t, r)),
    "LOG": _unary(lambda t, r, g, a, c: g / a),
    "LOG1P": _unary(lambda t, r, g, a, c: g / (a + 1.0)),
    "EXPM1": _unary(lambda t, r, g, a, c: g * (_out(t, r) + 1.0)),
    "SQRT": _unary(lambda t, r, g, a, c: g * 0.5 / _out(t, r)),
    "SIN": _unary(lambda t, r, g, a, c: g * O.cos(a)),
    "COS": _unary(lambda t, r, g, a, c: -(g * O.sin(a))),
    "TAN": _unary(lambda t, r, g, a, c: g * (_out(t, r) * _out(t, r) + 1.0)),
    "TANH": _unary(lambda t, r, g, a, c: g * (1.0 - _out(t, r) * _out(t, r))),
    "SIGMOID": _unary(lambda t, r, g, a, c: g * (_out(t, r) * (1.0 - _out(t, r)))),
    "RELU": _unary(lambda t, r, g, a, c: g * _mask(np.asarray(a._v) > 0.0)),
    "ABS": _unary(lambda t, r, g, a, c: g * _mask(np.sign(a._v))),
    "LEAKY_RELU": _unary(lambda t, r, g, a, c: g * _mask(np.where(np.asarray(a._v) > 0.0,
                                                                   1.0, c))),
    "ADDS": _unary(lambda t, r, g, a, c: g),
    "MULS": _unary(lambda t, r, g, a, c: g * c),
    "RSUBS": _unary(lambda t, r, g, a, c: -g),
    "RDIVS": _unary(lambda t, r, g, a, c: -(g * c) / (a * a)),
    "POWS": _unary(_pows),
    "RPOWS": _unary(lambda t, r, g, a, c: g * _out(t, r) * float(np.log(c))),
    "CLIP": _unary(lambda t, r, g, a, c: g * _mask(
        (np.asarray(a._v) >= c) & (np.asarray(a._v) <= t.fpool[t.ip[r]]))),
}


def _binary(fn):
    def rule(t, r, g):
        ra, rb = t.operands(r)
        shape = row_shape(t, r)
        a, b = row_tensor(t, ra, shape), row_tensor(t, rb, shape)
        ga, gb = fn(t, r, g, a, b)
        return [(ra, ga), (rb, gb)]
    return rule


def _pow_rule(t, r, g, a, b):
    av, bv = np.asarray(a._v), np.asarray(b._v)
    ga = g * b * O.power(a, b - 1.0)
    safe = _mask(~((av == 0.0) & (bv >= 0.0)))
    gb = g * _out(t, r) * O.log(O.where(np.asarray(av == 0.0), 1.0, a)) * safe
    return ga, gb


def _choose(is_max):
    def fn(t, r, g, a, b):
        av, bv = np.asarray(a._v), np.asarray(b._v)
        w = np.where(av == bv, 0.5, np.where((av > bv) == is_max, 1.0, 0.0))
        return g * _mask(w), g * _mask(1.0 - w)
    return fn


VJP.update({
    "ADD": _binary(lambda t, r, g, a, b: (g, g)),
    "SUB": _binary(lambda t, r, g, a, b: (g, -g)),
    "MUL": _binary(lambda t, r, g, a, b: (g * b, g * a)),
    "DIV": _binary(lambda t, r, g, a, b: (g / b, -(g * _out(t, r)) / b)),
    "POW": _binary(_pow_rule),
    "MAXIMUM": _binary(_choose(True)),
    "MINIMUM": _binary(_choose(False)),
})


def _where(t, r, g):
    ra, rb = t.operands(r)
    cond = t.value(int(t.ipool[t.ip[r]])).reshape(g.shape) != 0.0
    return [(ra, O.where(cond, g, 0.0)), (rb, O.where(cond, 0.0, g))]


def _view(t, r, g):
    ra, _ = t.operands(r)
    nd = int(t.ipool[t.ip[r]])
    shape = _ints(t, r, 1, nd)
    strides = _ints(t, r, 1 + nd, nd)
    base = int(t.ipool[t.ip[r] + 1 + 2 * nd])
    offs = _strided(shape, strides, base)
    return [(ra, O.scatter_add(g, offs, row_shape(t, ra)))]


def _reshape(t, r, g):
    ra, _ = t.operands(r)
    return [(ra, O.reshape(g, row_shape(t, ra)))]


def _sum(t, r, g):
    ra, _ = t.operands(r)
    in_shape, offs = _reduce_offsets(t, r)
    return [(ra, O.gather_flat(g, offs, in_shape))]


def _prod(t, r, g):
    ra, _ = t.operands(r)
    in_shape, offs = _reduce_offsets(t, r)
    a = row_tensor(t, ra, in_shape)
    av = np.asarray(a._v)
    if np.any(av == 0.0):
        # product of the other entries, computed exactly (no division by the zero)
        flat = av.reshape(-1)
        others = np.empty_like(flat)
        for j in range(flat.size):
            grp = offs == offs[j]
            grp[j] = False
            others[j] = np.prod(flat[grp])
        return [(ra, O.gather_flat(g, offs, in_shape) * _const(others.reshape(in_shape)))]
    return [(ra, O.gather_flat(g * _out(t, r), offs, in_shape) / a)]


def _extreme(t, r, g):
    ra, _ = t.operands(r)
    in_shape, offs = _reduce_offsets(t, r)
    av = t.value(ra)
    ov = t.value(r)
    hit = (av == ov[offs]).astype(np.float64)
    count = np.zeros(ov.size)
    np.add.at(count, offs, hit)
    w = hit / np.where(count[offs] > 0, count[offs], 1.0)
    return [(ra, O.gather_flat(g, offs, in_shape) * _const(w.reshape(in_shape)))]


def _matmul(t, r, g):
    ra, rb = t.operands(r)
    nb, m, k, n = _ints(t, r, 0, 4)
    G = O.reshape(g, (nb, m, n))
    out = []
    if t.rg[ra]:
        B = O.reshape(row_tensor(t, rb), (nb, k, n))
        out.append((ra, O.reshape(O.matmul(G, O.swapaxes(B, -1, -2)), row_shape(t, ra))))
    if t.rg[rb]:
        A = O.reshape(row_tensor(t, ra), (nb, m, k))
        out.append((rb, O.reshape(O.matmul(O.swapaxes(A, -1, -2), G), row_shape(t, rb))))
    return out


def _concat(t, r, g):
    outer, inner, k = _ints(t, r, 0, 3)
    rows = _ints(t, r, 3, k)
    lens = _ints(t, r, 3 + k, k)
    width = sum(lens) * inner
    G = O.reshape(g, (outer, width))
    out, start = [], 0
    for row, ln in zip(rows, lens):
        w = ln * inner
        if t.rg[row]:
            out.append((row, O.reshape(O.getitem(G, (slice(None), slice(start, start + w))),
                                       row_shape(t, row))))
        start += w
    return out


def _index_params(t, r):
    m = int(t.ipool[t.ip[r]])
    p = int(t.ip[r]) + 1
    return t.ipool[p:p + m].copy()


def _gather(t, r, g):
    ra, _ = t.operands(r)
    return [(ra, O.scatter_add(g, _index_params(t, r), row_shape(t, ra)))]


def _scatter(t, r, g):
    ra, _ = t.operands(r)
    return [(ra, O.gather_flat(g, _index_params(t, r), row_shape(t, ra)))]


def _setitem(t, r, g):
    ra, rb = t.operands(r)
    idx = _index_params(t, r)
    keep = np.ones(g.size)
    keep[idx] = 0.0
    return [(ra, g * _const(keep.reshape(g.shape))),
            (rb, O.gather_flat(g, idx, row_shape(t, rb)))]


VJP.update({
    "WHERE": _where, "VIEW": _view, "RESHAPE": _reshape, "SUM": _sum, "PROD": _prod,
    "AMAX": _extreme, "AMIN": _extreme, "MATMUL": _matmul, "CONCAT": _concat,
    "GATHER": _gather, "SCATTER": _scatter, "SETITEM": _setitem,
})

_NO_RULE = {"LEAF", "CONST", "FREED", "CUSTOM", "GUARD"}
missing = [op.name for op in O.OPS if op.name not in VJP and op.name not in _NO_RULE]
if missing:
    raise ImportError(f"tapegrad: ops without a create_graph rule in _higher.VJP: {missing}")
RULES = [VJP.get(op.name) for op in O.OPS]


def _custom(t, r, g, adj, reached):
    """A custom Function: its user-written backward, called with graph-carrying gradients."""
    payload = t.extras[r]
    outs = list(payload.output_rows)
    if r != max(outs):
        return []  # handled when the sweep met the Function's last output
    grads = []
    for o in outs:
        go = g if o == r else adj.pop(o, None)
        if go is not None:
            reached[o] = go
        grads.append(go)
    # graph-carrying values the backward could see: incoming gradients and saved tensors
    deps = [x for x in grads if x is not None and x._rg]
    ctx = getattr(payload, "ctx", None)   # checkpoints recompute instead of saving
    if ctx is not None:
        deps += [t.handles[row] for row, _ in ctx._owner.values()
                 if t.handles[row] is not None and t.handles[row]._rg]
    results = payload.vjp_graph(grads)
    if deps:
        results = [_once_differentiable(x, deps, payload.name) for x in results]
    return list(zip(payload.input_rows, results))


def _once_differentiable(g, deps, name):
    """A constant gradient computed from graph-carrying inputs (the backward used plain numpy
    on ``.data``) is only right to first order: return it as a row that raises when a higher
    derivative reaches it, instead of silently contributing zero (PyTorch's
    ``once_differentiable``).  Zero and graph-carrying gradients pass unchanged."""
    if g is None or g._rg or not np.any(np.asarray(g._v)):
        return g
    from .function import Function

    class NonDifferentiableBackward(Function):
        @staticmethod
        def forward(ctx, value, *inputs):
            return Tensor._const(value)

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError(
                f"the backward of {name} was computed with non-differentiable operations "
                "(e.g. NumPy on .data), so it cannot be differentiated again; write its "
                "backward with tapegrad ops to take higher derivatives through it")
    return NonDifferentiableBackward.apply(g._v, *deps)


def backward_graph(t, outputs, grads, inputs, accumulate, allow_unused):
    """Reverse sweep with differentiable ops; returns input gradients as Tensors."""
    from . import autograd as A
    adj = {}
    for i, (y, g) in enumerate(zip(outputs, grads)):
        seed = g if isinstance(g, Tensor) else _const(A._seed_value(y, g, i))
        if seed.shape != y.shape:
            seed = O.reshape(seed, y.shape)
        r = A._row_for(t, y)
        adj[r] = adj[r] + seed if r in adj else seed
    top = max(adj)
    if inputs is not None:
        in_rows = [A._input_row(t, x) for x in inputs]
        known = [r for r in in_rows if r is not None]
        bottom = min(known) if known else top + 1
    else:
        in_rows = None
        bottom = 0
    reached = {}
    for r in range(top, bottom - 1, -1):
        g = adj.pop(r, None)
        if g is None:
            continue
        reached[r] = g
        code = t.op(r)
        if code <= T.CONST or code == T.GUARD:
            continue
        if code == T.FREED or t.state[r] & 2:
            raise RuntimeError(A._FREED_MSG)
        if code == T.CUSTOM:
            contributions = _custom(t, r, g, adj, reached)
        else:
            rule = RULES[code]
            if rule is None:
                continue
            contributions = rule(t, r, g)
        for ra, ga in contributions:
            if ra < 0 or not t.rg[ra] or ga is None:
                continue
            adj[ra] = adj[ra] + ga if ra in adj else ga
    reached.update(adj)
    if accumulate:
        for r in t.leaf_rows:
            g = reached.get(r)
            leaf = t.handles[r]
            if g is None or leaf is None or not leaf._rg:
                continue
            g = O.reshape(g, leaf.shape) if g.shape != leaf.shape else g
            leaf.grad = g if leaf.grad is None else leaf.grad + g
        for r in t.extras.get("retain", ()):
            g = reached.get(r)
            h = t.handles[r]
            if g is not None and h is not None:
                h.grad = g if h.grad is None else h.grad + g
    if in_rows is None:
        return None
    out = []
    for k, (x, r) in enumerate(zip(inputs, in_rows)):
        g = reached.get(r) if r is not None else None
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {k}, shape {x.shape}) appears to "
                    "not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior.")
            out.append(None)
        else:
            out.append(O.reshape(g, x.shape) if g.shape != x.shape else g)
    return out
