"""``create_graph=True`` and nested forward mode: the spec's rules evaluated on Tensors.

The compiled sweeps only produce numbers.  Here the same reverse walk (``backward_graph``)
runs in Python, row by row, and each row's vector-Jacobian product is the op spec's own
declaration evaluated with differentiable tapegrad ops (``vjp``), so the gradients are
themselves recorded on the tape and can be differentiated again, to any order; ``jvp`` does
the same for tangents.  Every order therefore agrees with the compiled sweeps by
construction: both come from the one declaration.
"""

import ast
import copy
import functools
import types

import numpy as np

from ..core import functions as O
from ..core import tape as T
from ..core.tape_inspect import operand_rows, row_shape
from ..core.tensor import STATE, handle_of, new_handle, result
from ..core.tensor import TensorBase as Tensor
from ..ops import formula
from ..ops.decl import Elementwise
from ..ops.spec import OPS
from ..ops.structural.reductions import reduce_index


def _const(v):
    return Tensor._const(result(np.asarray(v, dtype=np.float64)))


def row_tensor(t, r, shape=None):
    """A handle on row ``r`` as it is on the tape (so new ops reference that very row)."""
    h = t.entered(r)
    if h is not None and h._tape is t and h._row == r:
        return h
    if t.op(r) > T.CONST:
        x = handle_of(t, r)
        if shape is not None and x.shape != tuple(shape):
            x._v = result(np.reshape(x._v, shape))
        return x
    if shape is None:
        shape = row_shape(t, r)
    x = new_handle()
    x._v = result(t.value(r).copy().reshape(shape))
    x._rg = bool(t.rg[r])
    x._leaf = True
    x._row = r
    x._tape = t
    return x


class Rows:
    """A view of tape ``t`` for the spec's Tensor-level rules: row values as Tensors, row
    parameters, and the differentiable ops (``rows.ops``) to build derivatives with."""

    ops = O

    def __init__(self, t):
        self.t = t

    def operands(self, r):
        return self.t.operands(r)

    def shape(self, r):
        return row_shape(self.t, r)

    def tensor(self, r, shape=None):
        return row_tensor(self.t, r, shape)

    def value(self, r):
        return self.t.value(r)

    def rg(self, r):
        return bool(self.t.rg[r])

    def guard_extremes(self, ra, r, offs, in_shape):
        """While a trace is recorded: guards on which entries of row ``ra`` equal their
        group's extreme (row ``r``, entry ``offs``) and which are NaN, the choice the
        derivative of a max / min reads from the values; a replay where another entry wins
        then re-records (or refuses) instead of reusing the recorded weights."""
        guard = T.STATE.guard
        if guard is None:
            return
        x = self.tensor(ra, in_shape)
        e = O.gather_flat(self.tensor(r), offs, in_shape)
        guard(x, "__eq__", e, np.asarray(x._v == e._v))
        guard(x, "__ne__", x, np.asarray(x._v != x._v))

    def ints(self, r, start, count):
        p = int(self.t.ip[r]) + start
        return [int(v) for v in self.t.ipool[p : p + count]]

    def params(self, r):
        """(ipool, p): the tape's integer pool and where row r's parameters start."""
        return self.t.ipool, int(self.t.ip[r])

    def reduce_offsets(self, r):
        """A reduction row's operand shape and the output entry of each operand entry."""
        ipool, p = self.params(r)
        nd = int(ipool[p])
        return tuple(int(s) for s in ipool[p + 1 : p + 1 + nd]), reduce_index(ipool, p)

    @staticmethod
    def const(v):
        return Tensor._const(result(np.asarray(v, dtype=np.float64)))

    @staticmethod
    def zeros(shape):
        return Tensor._const(result(np.zeros(shape)))


def _value(x):
    """A ``where`` condition's operand: its value, but the Tensor itself while a trace is
    recorded, so the comparison is one (a guard row): a replay at inputs on the other side of
    a kink then re-records (or refuses) instead of reusing the recorded choice."""
    if isinstance(x, Tensor):
        return x if T.STATE.guard is not None else x._v
    return x


# the functions of the formula language as the differentiable tapegrad functions of those names
# (``abs`` is ``abs_`` there; a language function no op declares yet has none, and a formula
# calling it on Tensors raises), and ``value_of`` for the conditions of a ``where``
_TENSOR_FUNCS = {
    name: getattr(O, "abs_" if name == "abs" else name, None) for name in formula.FUNCS
}
_FormulaOps = types.SimpleNamespace(
    value_of=_value, **{name: fn for name, fn in _TENSOR_FUNCS.items() if fn is not None}
)


def _masked(node, masks=()):
    """``node`` (a scaled partial) with the partial of each ``g * partial`` product inside a
    ``where`` branch next to a zero branch masked to that branch's entries (``masks``: the
    conditions on the way down, each with the side its branch is on), and the denominators
    of each quotient ``g / x * c`` there masked to 1."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and masks:
        if isinstance(node.left, ast.Name) and node.left.id == formula.SCALE:
            partial = node.right
            for cond, side in masks:
                zero = ast.Constant(0.0)
                partial = _where(cond, partial, zero) if side else _where(cond, zero, partial)
            return ast.BinOp(node.left, ast.Mult(), partial)
    q = _masked_quotient(node, masks) if masks else None
    if q is not None:
        return q
    if isinstance(node, ast.Call) and node.func.id == "where":
        cond, x, y = node.args
        if _is_zero(x) and not _is_zero(y):
            y = _masked(y, (*masks, (cond, False)))
        elif _is_zero(y) and not _is_zero(x):
            x = _masked(x, (*masks, (cond, True)))
        else:
            x, y = _masked(x, masks), _masked(y, masks)
        return ast.Call(node.func, [cond, x, y], [])
    return node


def _masked_quotient(node, masks):
    """A quotient ``g / x * c`` (``formula.scaled``'s form of a partial c / x, negated or
    divided again) with each denominator 1 off its branch; None for any other node."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _masked_quotient(node.operand, masks)
        return None if inner is None else ast.UnaryOp(ast.USub(), inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        if not isinstance(node.right, ast.Constant):
            return None
        inner = _masked_quotient(node.left, masks)
        return None if inner is None else ast.BinOp(inner, ast.Mult(), node.right)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return None
    top = node.left
    if not (isinstance(top, ast.Name) and top.id == formula.SCALE):
        top = _masked_quotient(top, masks)
        if top is None:
            return None
    den = node.right
    for cond, side in masks:
        one = ast.Constant(1.0)
        den = _where(cond, den, one) if side else _where(cond, one, den)
    return ast.BinOp(top, ast.Div(), den)


def _is_zero(node):
    return isinstance(node, ast.Constant) and node.value == 0.0


def _where(cond, x, y):
    return ast.Call(ast.Name("where", ast.Load()), [copy.deepcopy(cond), x, y], [])


def _masked_scale(text: str) -> str:
    """A scaled partial whose ``where`` branches next to a zero branch have their partial
    masked to their own entries (JAX's double where): ``where(a > 0, 0.0, g * log(c))``
    becomes ``where(a > 0, 0.0, g * where(a > 0, 0.0, log(c)))``.  On Tensors both branches
    are recorded, and the backward of the branch not taken gets zeros, which its product
    with an infinite partial (``log(0)`` of ``0 ** a`` for ``a > 0``) turned into NaN for
    the derivative in ``g`` (the tangent or cotangent) and in the operands.  Values are
    unchanged where a branch is taken."""
    tree = _masked(copy.deepcopy(ast.parse(text, mode="eval").body))
    return ast.unparse(ast.fix_missing_locations(tree))


class _Partials:
    """An elementwise op's partial derivatives as functions on Tensors of the operands and
    the factor they multiply (``formula.scaled``: a piecewise partial selects), and what
    they read."""

    def __init__(self, spec):
        consts = {"1.0": 1.0, "-1.0": -1.0, "0.0": 0.0}  # 0.0: a symbolic zero (floor...)
        args = f"a, b, out, c, c2, {formula.SCALE}"
        self.fns = [
            None
            if d.strip() in consts
            else formula.tensor_function(_masked_scale(formula.scaled(d)), _FormulaOps, args)
            for d in spec.d
        ]
        self.signs = [consts.get(d.strip()) for d in spec.d]
        used = set().union(*(formula.symbols(d) for d in spec.d))
        self.used = used

    def evaluate(self, t, r, factors):
        """The partials at row ``r`` times ``factors`` (one per operand, None where there
        is none): Tensors, or the floats 1.0 / -1.0 / 0.0 for the constant partials."""
        ra, rb = t.operands(r)
        shape = row_shape(t, r)
        u = self.used
        a = row_tensor(t, ra, _operand_shape(t, ra, r, shape)) if "a" in u else None
        b = row_tensor(t, rb, _operand_shape(t, rb, r, shape)) if "b" in u and rb >= 0 else None
        out = row_tensor(t, r, shape) if "out" in u else None
        c = float(t.fp[r])
        c2 = float(t.fpool[t.ip[r]]) if "c2" in u else 0.0
        return [
            s if f is None or x is None else f(a, b, out, c, c2, x)
            for f, s, x in zip(self.fns, self.signs, factors)
        ]


def _size(t, r):
    return int(t.voff[r + 1] - t.voff[r])


def _operand_shape(t, operand, r, shape):
    """The shape an operand of row ``r`` is read in: the row's own, or (an operand of one
    value, which the kernels broadcast over the row) its own."""
    return shape if _size(t, operand) == _size(t, r) else None


def _unbroadcast(t, operand, r, term):
    """An operand's share of row ``r``'s gradient: summed for an operand of one value."""
    if _size(t, operand) == _size(t, r):
        return term
    return O.reshape(O.sum(term), row_shape(t, operand))


def _product(x, d):
    """x times a partial: ``d`` is that product already (a Tensor), or a constant partial
    1, -1 or 0 (a symbolic zero: None, nothing to add)."""
    if d.__class__ is not float:
        return d
    if d == 1.0:
        return x
    if d == -1.0:
        return -x
    return None


@functools.cache
def _partials(code):
    """The partials of op ``code`` when it is elementwise (else None), built on first use:
    each is a function compiled from the spec's formulas, and building all of them cost
    every import ~60 ms."""
    return _Partials(OPS[code]) if isinstance(OPS[code], Elementwise) else None


def vjp(t, r, g):
    """The spec's VJP of row ``r`` on Tensors: ``[(operand_row, gradient), ...]``."""
    code = t.op(r)
    part = _partials(code)
    if part is not None:
        rows = [row if row >= 0 and t.rg[row] else -1 for row in t.operands(r)]
        terms = part.evaluate(t, r, [g if row >= 0 else None for row in rows])
        return [
            (row, _unbroadcast(t, row, r, term))
            for row, d in zip(rows, terms)
            if row >= 0 and (term := _product(g, d)) is not None
        ]
    return OPS[code].vjp(Rows(t), r, g)


def jvp(t, r, tangent):
    """The spec's JVP of row ``r`` on Tensors; ``tangent(row)`` gives an operand's tangent
    (or None); returns None when no operand carries one."""
    code = t.op(r)
    part = _partials(code)
    if part is None:
        return OPS[code].jvp(Rows(t), r, tangent)
    out = None
    ts = [tangent(row) if row >= 0 else None for row in t.operands(r)]
    if all(x is None for x in ts):
        return None
    for tx, d in zip(ts, part.evaluate(t, r, ts)):
        term = None if tx is None else _product(tx, d)
        if term is not None:
            out = term if out is None else out + term
    shape = row_shape(t, r)
    if out is not None and out.shape != shape:  # an operand of one value's tangent alone
        out = O.broadcast_to(out, shape)
    return out


def _custom(t, r, g, adj, reached, hook_skip=()):
    """A custom Function: its user-written backward, called with graph-carrying gradients
    (those of its other outputs after their tensors' hooks, as row r's)."""
    payload = t.side.payloads[r]
    outs = list(payload.output_rows)
    if any(o > r and o in reached for o in outs):
        return []  # handled when the sweep met the Function's highest reached output
    hooks = t.side.hooks
    grads = []
    for o in outs:
        go = g if o == r else adj.pop(o, None)
        if go is not None and o != r and hooks and hooks.get(o) and o not in hook_skip:
            go = tensor_hooks(hooks[o], go)
        if go is not None and o not in reached:  # (row r's: before its node's pre-hooks)
            reached[o] = go
        grads.append(go)
    return list(zip(payload.input_rows, payload.checked_vjp_graph(t, grads)))


def tensor_hooks(fns, g):
    """Run tensor hooks on a differentiable gradient ``g`` (registration order): what a hook
    returns replaces it, as in the first-order sweep (a returned array becomes a constant)."""
    for fn in list(fns):
        out = fn(g)
        if out is None:
            continue
        if not isinstance(out, Tensor):
            out = _const(np.asarray(out, dtype=np.float64))
        if out.shape != g.shape:
            raise RuntimeError(
                f"hook {getattr(fn, '__name__', fn)!s} returned a gradient of shape "
                f"{out.shape} for a tensor of shape {g.shape}"
            )
        g = out
    return g


def split_hooks(fns):
    """A row's hooks as (tensor hooks, node pre-hooks), each in registration order: a tensor's
    hooks run first, its gradient is captured (an input's, a retained one), then its grad_fn's
    pre-hooks run on what goes down, as in PyTorch."""
    node = [f for f in fns if getattr(f, "node_prehook", False)]
    if not node:
        return fns, ()
    return [f for f in fns if not getattr(f, "node_prehook", False)], node


def hook_fns(leaf):
    """The hooks registered on leaf Tensor ``leaf`` (None when it has none)."""
    meta = leaf._meta
    return meta.get("hooks") if meta else None


def run_post_accumulate_hooks(leaves, create_graph=False):
    """Call ``hook(leaf)`` for each hook registered with ``register_post_accumulate_grad_hook``
    on ``leaves`` (their ``.grad`` just updated), in registration order, recording only under
    ``create_graph``, as PyTorch does: where an optimizer step can run parameter by parameter."""
    for leaf in leaves:
        meta = leaf._meta
        fns = meta.get("post_accumulate_hooks") if meta else None
        if not fns:
            continue
        prev, STATE.enabled = STATE.enabled, create_graph
        try:
            for fn in list(fns):
                if fn(leaf) is not None:
                    raise RuntimeError(
                        f"post accumulate grad hook {getattr(fn, '__name__', fn)!s} returned a "
                        "value: Tensor post accumulate grad hooks should return None (change "
                        "tensor.grad in place or assign it instead)"
                    )
        finally:
            STATE.enabled = prev


def leaf_hooks(leaf, g):
    """``g`` after the hooks registered on leaf Tensor ``leaf`` (none: ``g`` itself)."""
    fns = hook_fns(leaf)
    return tensor_hooks(fns, g) if fns else g


def _check_versions(t, ran, check):
    """Raise, as the first-order sweep does, if the backward of a row in ``ran`` (descending)
    needed a value that was changed in place after it was read: the rows it ran are marked
    reached for ``check_versions``, then the marks are put back as they were."""
    hi = ran[0]  # (a changed value may be an operand below the lowest row run)
    state = t.state
    kept = state[: hi + 1].copy()
    try:
        state[: hi + 1] &= 2  # (bit 1: reached; bit 2: freed)
        state[np.asarray(ran, np.int64)] |= 1
        check(t, hi, 0)
    finally:
        state[: hi + 1] = kept


def backward_graph(
    t,
    roots,
    inputs,
    in_rows,
    accumulate,
    allow_unused,
    freed_msg,
    stop=False,
    retained=None,
    skips=None,
    check_versions=None,
):
    """Reverse sweep with differentiable ops; returns input gradients as Tensors.

    ``roots``: (row, seed) pairs, a seed being a Tensor or an array of the output's shape;
    ``in_rows``: the rows of each of ``inputs`` (a leaf entered again after a change of its
    value has several; none for one not on this tape); an input's gradient is the sum over
    its rows.  With ``stop`` the
    sweep does not go on below an input's row: each input's gradient is a partial one, as
    if the inputs were independent (one computed from another gets none of its share).
    ``skips``: (rows whose hooks do not run, rows whose grad_fn pre-hooks do not run), as the
    first-order sweep's (hooks of tensors no input needs; inputs whose node does not run).
    ``check_versions(t, top, bottom)``: the engine's in-place check (``checks.check_versions``,
    a layer above this module), run over the rows whose backward ran."""
    stops = {r for rows in in_rows for r in rows} if stop else ()
    adj = {}
    for r, seed in roots:
        if not isinstance(seed, Tensor):
            seed = _const(seed)
        shape = row_shape(t, r)
        if seed.shape != shape:
            seed = O.reshape(seed, shape)
        adj[r] = adj[r] + seed if r in adj else seed
    top = max(adj)
    if inputs is not None:
        bottom = min((r for rows in in_rows for r in rows), default=top + 1)
    else:
        bottom = 0
    reached = {}
    # rows reached only through symbolic zeros (a constant derivative's operands): an input
    # among them gets a zero gradient, as the compiled sweep gives it, not "unused"
    zero_reached = set()
    hooks = t.side.hooks
    ran = []  # the op rows whose backward ran (for the in-place version check)
    hook_skip, node_skip = skips or ((), ())
    for r in range(top, bottom - 1, -1):
        g = adj.pop(r, None)
        if g is None:
            if r in zero_reached and t.op(r) > T.CONST and r not in stops:
                zero_reached.update(a for a in operand_rows(t, r) if a >= 0 and t.rg[a])
            continue
        if hooks and hooks.get(r) and r not in hook_skip:  # its gradient is complete
            own, node = split_hooks(hooks[r])
            node = () if r in node_skip else node
            g = tensor_hooks(own, g)
            reached[r] = g  # (what an input or a retained tensor gets)
            if node:
                g = tensor_hooks(node, g)
        else:
            reached[r] = g
        code = t.op(r)
        if code <= T.CONST or code == T.GUARD or r in stops:
            continue
        if code == T.FREED or t.state[r] & 2:
            raise RuntimeError(freed_msg)
        ran.append(r)
        if code == T.CUSTOM:
            contributions = _custom(t, r, g, adj, reached, hook_skip)
        else:
            contributions = vjp(t, r, g)
        zero_reached.update(a for a in operand_rows(t, r) if a >= 0 and t.rg[a])
        for ra, ga in contributions:
            if ra < 0 or not t.rg[ra] or ga is None:
                continue
            adj[ra] = adj[ra] + ga if ra in adj else ga
    if check_versions is not None and t.side.dirty and ran:
        _check_versions(t, ran, check_versions)
    reached.update(adj)
    if accumulate:
        summed = {}  # id(leaf) -> [leaf, the sum over its rows]: a leaf entered again
        for r in t.leaf_rows:  # (after a change of value) holds several rows
            g = reached.get(r)
            leaf = t.entered(r)
            if g is None or leaf is None or not leaf._rg:
                continue
            g = O.reshape(g, leaf.shape) if g.shape != leaf.shape else g
            got = summed.get(id(leaf))
            if got is None:
                summed[id(leaf)] = [leaf, g]
            else:
                got[1] = got[1] + g
        for leaf, g in summed.values():  # its hooks run once, on the whole gradient
            g = leaf_hooks(leaf, g)
            leaf.grad = g if leaf.grad is None else leaf.grad + g
        run_post_accumulate_hooks([leaf for leaf, _ in summed.values()], create_graph=True)
        for r, ref in t.side.retain.items():
            g = reached.get(r)
            h = ref()
            if g is not None and h is not None:
                h.grad = g if h.grad is None else h.grad + g
    for r in retained or ():  # (rows of retain_grad() tensors the inputs' gradients need)
        g, h = reached.get(r), t.side.retain[r]()
        if g is not None and h is not None:
            h.grad = g if h.grad is None else h.grad + g
    if in_rows is None:
        return None
    out = []
    for k, (x, rows) in enumerate(zip(inputs, in_rows)):
        g = None
        for r in rows:
            gr = reached.get(r)
            if gr is not None:
                gr = O.reshape(gr, x.shape) if gr.shape != x.shape else gr
                g = gr if g is None else g + gr
        if g is None and any(r in zero_reached for r in rows):  # (kept on x's graph, to
            # differentiate again)
            g = O.where(np.zeros(x.shape, bool), x, 0.0)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {k}, shape {x.shape}) appears to "
                    "not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior."
                )
            out.append(None)
        else:
            g = O.reshape(g, x.shape) if g.shape != x.shape else g
            out.append(leaf_hooks(x, g) if x._leaf else g)
    return out
