"""Scans along one axis, each declared by its combine formula (``scan``).

A scan ``s_k = f(s_{k-1}, a_k[, b_k])`` (from ``s_{-1} = init``) has, per element, the
partials ``p_k = df/ds`` and ``q_k = df/da`` (``df/db``).  Everything follows from them:

- tangent: ``t_k = p_k t_{k-1} + q_k ta_k``, a first-order linear recurrence;
- adjoint: ``R_k = g_k + p_{k+1} R_{k+1}`` (the same recurrence the other way) and
  ``adj a_k = q_k R_k``;
- the second-order sweep differentiates those two loops (the partials' own derivatives from
  ``formula.derivative``).

``scan`` writes the four kernels as source text from the formula (the generator copies it into
the generated module like any kernel's), and the Tensor-level rules use one primitive scan,
``LINREC`` (``s_k = a_k s_{k-1} + b_k``), whose own rules are again LINREC: every order.
Elements are addressed as ``(outer, m, inner)`` with the scan over ``m``; the integer
parameters are ``outer, m, inner, reverse``.
"""

import math

import numpy as np

from .. import formula, memo
from ..decl import Scan
from .file_checks import scan_check
from .helpers import kernel_from_source


def scan_offsets(ipool, p):
    """Offsets of a scan's elements, one row per lane (o, i), in order along the axis."""
    outer = ipool[p]
    m = ipool[p + 1]
    inner = ipool[p + 2]
    offs = np.empty((outer * inner, m), np.int64)
    for o in range(outer):
        for i in range(inner):
            for k in range(m):
                offs[o * inner + i, k] = (o * m + k) * inner + i
    return offs


# ---- the kernels, written from the formula ------------------------------------------------------

_SETUP = """    offs = scan_offsets(ipool, p)
    m = offs.shape[1]
    rev = ipool[p + 3]"""
# position k in scan order and the one before it, as offsets
_AT = "offs[r, m - 1 - k] if rev else offs[r, k]"
_BEFORE = "offs[r, m - k] if rev else offs[r, k - 1]"


def _literal(v: float) -> str:
    if math.isinf(v):
        return "-np.inf" if v < 0 else "np.inf"
    return repr(float(v))


@memo.rule("scan kernels")
def _sources_of(key):
    name, combine, init, arity = key
    return _kernel_sources(name, combine, float(init), arity)


def _kernel_sources(name, combine, init, arity):
    """Source of the forward, backward, tangent and backward_tangent kernels of a scan.  A
    kernel reads only the values its formulas use (what a backward reads decides what the
    tape keeps and which in-place changes it refuses)."""
    syms = ("s", "a", "b")[: arity + 1]
    d = {x: formula.derivative(combine, x) for x in syms}
    local = {x: x for x in syms}

    def c(text):
        return formula.numba_code(text, local)

    # the partials' own partials: the tangent of partial x is the sum of dd[x][y] * t{y}
    dd = {x: {y: formula.derivative(d[x], y) for y in syms} for x in syms}
    dd = {x: {y: v for y, v in row.items() if v != "0.0"} for x, row in dd.items()}
    tangent_of = {
        x: " + ".join(f"({c(v)}) * t{y}" for y, v in dd[x].items()) or "0.0" for x in syms
    }
    used = set().union(*(formula.symbols(d[x]) for x in syms))  # values the partials read
    used_t = {y for row in dd.values() for y in row}  # symbols whose tangents they read
    ini = _literal(init)
    pad = "\n            "

    def reads(values, names, with_tangents=False):
        """Lines reading the operands' elements (and tangents) the formulas use."""
        out = ""
        for x, base in (("a", "pa"), ("b", "pb")):
            if x in syms and x in names:
                out += f"{pad}{x} = {values}[{base} + q]"
            if with_tangents and x in syms and f"t{x}" in names:
                out += f"{pad}t{x} = tval[{base} + q]"
        return out

    grads = "    ga = rg[ra] != 0\n    if ga:\n        state[ra] |= 1"
    if arity == 2:
        grads += "\n    gb = rg[rb] != 0\n    if gb:\n        state[rb] |= 1"

    forward = f"""def {name}_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
{_SETUP}
    for r in range(offs.shape[0]):
        s = {ini}
        for k in range(m):  # in NumPy's order, so a replay matches it
            q = {_AT}{reads("A", {"a"})}{reads("B", {"b"})}
            s = {c(combine)}
            D[lo + q] = s
"""
    s_before = f"{pad}s = V[lo + ({_BEFORE})] if k > 0 else {ini}" if "s" in used else ""
    add_b = f"{pad}if gb:{pad}    D[pb + q] += R * ({c(d['b'])})" if arity == 2 else ""
    backward = f"""def {name}_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
{_SETUP}
{grads}
    for r in range(offs.shape[0]):
        carry = 0.0  # p_(k+1) R_(k+1)
        for j in range(m):
            k = m - 1 - j
            q = {_AT}{reads("A", used & {"a"})}{reads("B", used & {"b"})}{s_before}
            R = G[lo + q] + carry
            if ga:
                D[pa + q] += R * ({c(d["a"])}){add_b}
            carry = R * ({c(d["s"])})
    return 0
"""
    tb_term = f" + tval[pb + q] * ({c(d['b'])})" if arity == 2 else ""
    s_init, s_next = ("", "")
    if "s" in used:  # the running value, for partials that read it
        s_init, s_next = f"\n        s = {ini}", f"{pad}s = val[lo + q]"
    tangent = f"""def {name}_tangent(val, tval, lo, n, pa, pb, p, voff, ipool, fpool):
{_SETUP}
    for r in range(offs.shape[0]):{s_init}
        ts = 0.0
        for k in range(m):
            q = {_AT}{reads("val", used)}
            ts = ts * ({c(d["s"])}) + tval[pa + q] * ({c(d["a"])}){tb_term}{s_next}
            tval[lo + q] = ts
"""
    before = ""  # the running value before this element (and its tangent), where read
    if "s" in used or "s" in used_t:
        before = (
            f"{pad}if k > 0:{pad}    before = {_BEFORE}"
            + (f"{pad}    s = val[lo + before]" if "s" in used else "")
            + (f"{pad}    ts = tval[lo + before]" if "s" in used_t else "")
            + f"{pad}else:"
            + (f"{pad}    s = {ini}" if "s" in used else "")
            + (f"{pad}    ts = 0.0" if "s" in used_t else "")
        )
    names_t = used | {f"t{x}" for x in used_t}
    add_tb = (
        f"{pad}if gb:{pad}    tadj[pb + q] += tR * ({c(d['b'])}) + R * ({tangent_of['b']})"
        if arity == 2
        else ""
    )
    backward_tangent = f"""def {name}_backward_tangent(
    adj, tadj, val, tval, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool
):
{_SETUP}
{grads}
    for r in range(offs.shape[0]):
        carry = 0.0
        tcarry = 0.0
        for j in range(m):
            k = m - 1 - j
            q = {_AT}{reads("val", names_t, with_tangents=True)}{before}
            R = adj[lo + q] + carry
            tR = tadj[lo + q] + tcarry
            if ga:
                tadj[pa + q] += tR * ({c(d["a"])}) + R * ({tangent_of["a"]}){add_tb}
            carry = R * ({c(d["s"])})
            tcarry = tR * ({c(d["s"])}) + R * ({tangent_of["s"]})
"""
    return forward, backward, tangent, backward_tangent


def _compiled(source, fn_name):
    """The kernel as a Python function that carries its source (see ``kernel_from_source``)."""
    ns = {"np": np, "scan_offsets": scan_offsets}
    ns.update({h.__name__: h for h in formula.specfuncs.HELPERS})
    return kernel_from_source(source, fn_name, ns)


# ---- the Tensor-level rules (create_graph, nested forward mode) ----------------------------------


def _shift(O, x, fill, towards_end, outer, m, inner):
    """x (outer, m, inner) moved one place along the scan axis: ``y_k = x_(k-1)`` when
    ``towards_end`` (y_0 = fill), else ``y_k = x_(k+1)`` (y_(m-1) = fill)."""
    if m == 0:
        return x
    pad = np.full((outer, 1, inner), fill)
    if towards_end:
        return O.concatenate([pad, O.getitem(x, (slice(None), slice(0, m - 1)))], axis=1)
    return O.concatenate([O.getitem(x, (slice(None), slice(1, m))), pad], axis=1)


def _rules(combine, init, arity):
    syms = ("s", "a", "b")[: arity + 1]
    partial = {x: formula.derivative(combine, x) for x in syms}
    on_tensors = {}  # the partials as functions on Tensors, made at the first use

    def partial_fn(x, O):
        fn = on_tensors.get(x)
        if fn is None:
            fn = on_tensors[x] = formula.tensor_function(partial[x], O, args=", ".join(syms))
        return fn

    def parts(rows, r):
        O = rows.ops
        ra, rb = rows.operands(r)
        outer, m, inner, rev = rows.ints(r, 0, 4)
        lanes = (outer, m, inner)
        a = O.reshape(rows.tensor(ra), lanes)
        b = O.reshape(rows.tensor(rb), lanes) if arity == 2 else None
        out = O.reshape(rows.tensor(r), lanes)
        # s_(k-1), the running value before; an infinite init (the identity of the combine)
        # is not put into the formulas, whose derivatives would meet inf - inf there: the
        # first element's partials are then the identity's, 0 in s and 1 in a
        s = _shift(O, out, 0.0 if math.isinf(init) else init, not rev, *lanes)
        env = {"s": s, "a": a, "b": b}
        d = {}
        for x in syms:
            v = partial_fn(x, O)(*(env[y] for y in syms))
            d[x] = rows.const(np.full(lanes, v)) if isinstance(v, (int, float)) else v
        if math.isinf(init):
            first = np.zeros(lanes, dtype=bool)
            first[:, lanes[1] - 1 if rev else 0] = True
            d["s"] = O.where(first, 0.0, d["s"])
            d["a"] = O.where(first, 1.0, d["a"])
        return O, ra, rb, lanes, rev, d

    def vjp(rows, r, g):
        O, ra, rb, lanes, rev, d = parts(rows, r)
        coef = _shift(O, d["s"], 0.0, bool(rev), *lanes)  # p_(k+1), in scan order
        R = O.scan("LINREC", (coef, O.reshape(g, lanes)), lanes, 1 - rev)
        out = [(ra, O.reshape(O.mul(d["a"], R), rows.shape(ra)))]
        if arity == 2:
            out.append((rb, O.reshape(O.mul(d["b"], R), rows.shape(rb))))
        return out

    def jvp(rows, r, tangent):
        ra, rb = rows.operands(r)
        ts = [tangent(ra)] + ([tangent(rb)] if arity == 2 else [])
        if all(t is None for t in ts):
            return None
        O, ra, rb, lanes, rev, d = parts(rows, r)
        drive = None
        for x, t in zip(("a", "b"), ts):
            if t is not None:
                term = O.mul(d[x], O.reshape(t, lanes))
                drive = term if drive is None else O.add(drive, term)
        return O.reshape(O.scan("LINREC", (d["s"], drive), lanes, rev), rows.shape(r))

    return vjp, jvp


def scan(name: str, combine: str, init: float, **kw) -> Scan:
    """The declaration of a scan from its combine formula (see the module docstring)."""
    arity = 2 if "b" in formula.symbols(combine) else 1
    if math.isinf(init):
        step = formula.python_function(combine, ("s", "a"), "numpy")
        probe = np.array([-3.0, 0.0, 2.5])
        with np.errstate(all="ignore"):
            same = arity == 1 and np.array_equal(step(np.full(3, init), probe), probe)
        if not same:
            raise ValueError(
                f"scan {name}: an infinite init must be the identity of a one-operand "
                f"combine (combine(init, a) == a); {combine!r} with init {init} is not"
            )
    low = name.lower()
    sources = memo.derived("scan kernels", (low, combine, repr(float(init)), arity))
    kernels = [
        _compiled(src, f"{low}_{part}")
        for src, part in zip(sources, ("forward", "backward", "tangent", "backward_tangent"))
    ]
    vjp, jvp = _rules(combine, init, arity)
    return Scan(
        name,
        kernels[0],
        kernels[1],
        vjp,
        jvp,
        tangent=kernels[2],
        backward_tangent=kernels[3],
        helpers=(scan_offsets,),
        operand_adjoints_only=True,
        arity=arity,
        same_size=True,
        check=scan_check,
        combine=combine,
        init=init,
        **kw,
    )
