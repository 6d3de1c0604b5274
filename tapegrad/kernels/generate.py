"""Writes ``sweeps.py``, the one module of compiled tape sweeps, from the op spec (and
``tapegrad/core/ufuncs.py``, the public elementwise functions).

Run ``python tapegrad/kernels/generate.py`` after changing anything in ``tapegrad/ops``;
``tests/ops/test_spec_generated.py`` fails while the checked-in module is out of date, and the module
refuses to load when its fingerprint differs from the spec's.

Every sweep is an if/elif interpreter over the tape rows, dispatching on op codes assigned
here (an op's code is its position in the spec).  Elementwise ops become loops written from
their formulas, in groups of functions the sweeps call (``RowGroups``: Numba compiles many
small functions much faster than one large one); structural ops call their kernels, whose
source is copied into the generated file, so Numba's on-disk cache (keyed on that one file)
always sees everything the sweeps run.  The sweeps:

- ``backward_sweep``: reverse (adjoints);
- ``forward_sweep``: forward replay of a recorded tape, with guard checks (``tg.trace``);
- ``tangent_sweep``: forward mode (tangents);
- ``hvp_sweep``: reverse over tangents (adjoints and their tangents: Hessian-vector products);
- the drivers of ``drivers.py`` (Jacobians, Hessian-vector products, replayed gradients,
  ``replay_grad`` for user ``@njit`` code), copied in under ``@njit`` like the kernels.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import textwrap
from pathlib import Path

import numpy as np

if __package__:  # imported as tapegrad.kernels.generate (the tests do)
    from ..ops import decl, formula, memo, spec, specfuncs, structural
    from . import drivers
else:  # run as a script: load tapegrad/ops on its own, because the tapegrad
    #                      package refuses to import while its kernels are stale
    _OPS_DIR = Path(__file__).resolve().parent.parent / "ops"
    _found = importlib.util.spec_from_file_location(
        "tapegrad_ops_alone", _OPS_DIR / "__init__.py", submodule_search_locations=[str(_OPS_DIR)]
    )
    sys.modules[_found.name] = importlib.util.module_from_spec(_found)
    _found.loader.exec_module(sys.modules[_found.name])
    from tapegrad_ops_alone import decl, formula, memo, spec, specfuncs, structural

    _found = importlib.util.spec_from_file_location(
        "tapegrad_drivers_alone", Path(__file__).with_name("drivers.py")
    )
    drivers = sys.modules[_found.name] = importlib.util.module_from_spec(_found)
    _found.loader.exec_module(drivers)

CODE, NAMES, OPS = spec.CODE, spec.NAMES, spec.OPS
FINGERPRINT = drivers.fingerprint(spec.FINGERPRINT)  # the spec's and the drivers' together
Elementwise, Structural = decl.Elementwise, decl.Structural

TARGET = Path(__file__).with_name("sweeps.py")
# every kernel is noted by one of these (see LAZY): made a Numba dispatcher on first use
NJIT = "@_kernel"
NJIT_PARALLEL = "@_kernel_parallel"

_UNARY = [o for o in OPS if isinstance(o, Elementwise) and o.arity == 1]
_BINARY = [o for o in OPS if isinstance(o, Elementwise) and o.arity == 2]
_STRUCT = [o for o in OPS if isinstance(o, Structural)]
LAST_INTERNAL = max(CODE[n] for n in ("LEAF", "CONST", "FREED", "CUSTOM", "GUARD"))


def _last(ops):
    return max(CODE[o.name] for o in ops)


def _branch(first, o):
    return f"{'if' if first else 'elif'} o == {CODE[o.name]}:  # {o.name}"


def _indent(text, n):
    return textwrap.indent(text, " " * n)


def _loads(used, arrays):
    """Loads of the symbols a formula uses: ``a = val[upa + j]`` ..."""
    lines = []
    for sym, expr in arrays:
        if sym in used:
            lines.append(f"{sym} = {expr}")
    return lines


def _params(o, body_syms):
    lines = []
    if "c" in body_syms:
        lines.append("c = fp[i]")
    if "c2" in body_syms:
        lines.append("c2 = fpool[ip[i]]")
    return lines


def _syms(*texts):
    out = set()
    for t in texts:
        out |= formula.symbols(t)
    return out


def _code(text):
    return formula.numba_code(text, {})


# ---- elementwise branches, one generator per sweep ------------------------------------------------

_VALUE_LOADS = [("a", "val[upa + j]"), ("b", "val[upb + j]"), ("out", "val[ulo + j]")]

# A two-operand row's operand of one value broadcasts over the row (a scalar weight times an
# array: no VIEW row): ``sa`` / ``sb`` are its step, 0 for one value, 1 for a full operand.
_STEPPED = {"upa + j": "upa + j * sa", "upb + j": "upb + j * sb"}
_BROADCAST_STEPS = [
    "sa = np.uint64(0) if voff[ra + 1] - voff[ra] == 1 else np.uint64(1)",
    "sb = np.uint64(0) if voff[rb + 1] - voff[rb] == 1 else np.uint64(1)",
]


def _per_element(o, used, body):
    """The loop of op ``o`` over its row's elements around ``body`` (after the parameters
    the symbols ``used`` need), a two-operand op's operand reads and writes stepped."""
    code = "\n".join(_params(o, used) + ["for j in range(un):"] + ["    " + b for b in body])
    if o.arity == 2:
        for plain, stepped in _STEPPED.items():
            code = code.replace(plain, stepped)
    return code


def _factor_inside(d):
    """Is the factor taken into the partial (``formula.scaled``)?  Into the branches of a
    ``where`` (a select), or the numerator of a quotient ``c / x`` (log's ``1 / a``)."""
    return d.strip().startswith("where(") or formula.is_quotient(d)


def _times(factor, d, name=None):
    """``factor * d`` as kernel code: into the branches of a piecewise partial (a zero branch
    selects 0, not factor * 0, which is NaN for an infinite factor) or the numerator of a
    quotient (``factor / x``: ``factor * (1 / x)`` overflows at tiny x where the quotient is
    finite), else ``factor * name`` (a local holding the partial) or ``factor * (d)``."""
    if _factor_inside(d):
        return f"({formula.numba_code(formula.scaled(d), {formula.SCALE: factor})})"
    return f"{factor} * {name}" if name else f"{factor} * ({_code(d)})"


def _accumulate(target, g, d):
    """``target += g * d`` with the common constant partials folded; a partial that is the
    literal 0.0 (floor, sign, round...) adds nothing, not g * 0.0, which is nan for an
    infinite g (a symbolic zero, as JAX's)."""
    if d.strip() == "0.0":
        return "pass"
    if d.strip() == "1.0":
        return f"{target} += {g}"
    if d.strip() == "-1.0":
        return f"{target} -= {g}"
    return f"{target} += {_times(g, d)}"


def backward_unary(o):
    d = o.d[0]
    used = _syms(d)
    body = ["g = adj[ulo + j]"] + _loads(used, _VALUE_LOADS) + [_accumulate("adj[upa + j]", "g", d)]
    return _per_element(o, used, body)


def backward_binary(o):
    used = _syms(*o.d)
    body = ["g = adj[ulo + j]"] + _loads(used, _VALUE_LOADS)
    body += [
        "if ga:",
        "    " + _accumulate("adj[upa + j]", "g", o.d[0]),
        "if gb:",
        "    " + _accumulate("adj[upb + j]", "g", o.d[1]),
    ]
    return _per_element(o, used, body)


def forward_elementwise(o):
    used = _syms(o.fwd)
    body = _loads(used, _VALUE_LOADS[:2]) + [f"val[ulo + j] = {_code(o.fwd)}"]
    return _per_element(o, used, body)


def tangent_elementwise(o):
    """Each partial once per element, then applied to the tangent of every lane."""
    used = _syms(*o.d)
    body = _loads(used, _VALUE_LOADS)
    lane = ["t = 0.0"]
    for k, (d, ta, has) in enumerate(
        zip(o.d, ("tvals[ln, upa + j]", "tvals[ln, upb + j]"), ("ha", "hb"))
    ):
        if d.strip() == "0.0":
            continue
        if d.strip() in ("1.0", "-1.0"):
            term = f"t {'+' if d.strip() == '1.0' else '-'}= {ta}"
        else:  # a zero tangent contributes nothing, even where the partial is infinite
            if not _factor_inside(d):
                body.append(f"d{k} = {_code(d)}")
            term = f"t += {_times(ta, d, f'd{k}')} if {ta} != 0.0 else 0.0"
        lane += [f"if {has}:", "    " + term]
    lane.append("tvals[ln, ulo + j] = t")
    body += ["for ln in range(nl):"] + ["    " + x for x in lane]
    return _per_element(o, used, body)


def _second(d):
    """(gate, tangent, d(partial)/d(symbol)) for each symbol the partial ``d`` depends on."""
    terms = []
    for sym, t, has in (
        ("a", "tvals[ln, upa + j]", "ha"),
        ("b", "tvals[ln, upb + j]", "hb"),
        ("out", "tvals[ln, ulo + j]", "hout"),
    ):
        if sym in formula.symbols(d):
            dd = formula.derivative(d, sym)
            if dd != "0.0":
                terms.append((has, t, dd))
    return terms


def hvp_elementwise(o):
    """Adjoint once per element; the tangent of the adjoint for every lane, with the partial
    and g times its derivatives computed once per element."""
    used = _syms(*o.d)
    for d in o.d:
        for sym in ("a", "b", "out"):
            if sym in formula.symbols(d):
                used |= formula.symbols(formula.derivative(d, sym))
    body = ["g = adj[ulo + j]"] + _loads(used, _VALUE_LOADS)
    for k, (d, dst, gate) in enumerate(zip(o.d, ("upa", "upb"), ("ga", "gb"))):
        if d.strip() == "0.0":
            continue
        # zeros are symbolic here, as JAX's: a zero adjoint, tangent or tangent-adjoint adds
        # nothing even where a partial is infinite (the output's seed, say, at sqrt(0))
        lines = [] if _factor_inside(d) else [f"d = {_code(d)}"]
        lines.append(f"adj[{dst} + j] += {_times('g', d, 'd')}")
        lane = ["s = tadjs[ln, ulo + j]", f"s = {_times('s', d, 'd')} if s != 0.0 else 0.0"]
        for q, (has, t, dd) in enumerate(_second(d)):
            lines.append(f"e{q} = {_times('g', dd)} if g != 0.0 else 0.0")
            lane += [f"if {has} and {t} != 0.0:", f"    s += {t} * e{q}"]
        lane.append(f"tadjs[ln, {dst} + j] += s")
        lines += ["for ln in range(nl):"] + ["    " + x for x in lane]
        if o.arity == 2:
            body += [f"if {gate}:"] + ["    " + x for x in lines]
        else:
            body += lines
    return _per_element(o, used, body)


def _chain(ops, make, depth, otherwise="return BAD_OP, i"):
    out = []
    for k, o in enumerate(ops):
        out.append(_branch(k == 0, o))
        out.append(_indent(make(o), 4))
    out += ["else:", "    " + otherwise]
    return _indent("\n".join(out), depth)


# ---- elementwise rows in functions of their own ------------------------------------------------
#
# Numba's front end (SSA reconstruction, liveness, type inference) takes time that grows
# faster than linearly with a function's size: as one if/elif chain inlined in the sweep, the
# ~80 elementwise ops made the Hessian sweep take ~5 minutes to compile, most of it there.
# So its elementwise branches are split into groups of about ROW_GROUP_LINES lines, each
# group a function of its own (``hvp_sweep_unary_2(o, ...)``: the rows of its ops; False for
# an op it does not have), compiled once and called once per row: ~4x less compile time.
# The forward-mode sweep (the largest, ~680 lines inline) is split the same way: its first
# use compiled in 73 s instead of 92 s, and forward mode's time per row is dominated by
# recording.  A call costs ~10 ns a row (Numba passes each array as a struct, and LLVM does
# not inline functions this large), which would double the backward sweep's and a replay's
# time per scalar op; their branches stay inline (they compile in ~20-30 s each).

ROW_GROUP_LINES = 90
# the names an elementwise branch may read from its sweep, in the order they are passed
_ROW_NAMES = ("i fp ip fpool val adj tvals tadjs ulo un upa upb sa sb ga gb ha hb hout nl").split()


class RowGroups:
    """Collects the group functions the sweeps call (rendered after the sweeps)."""

    def __init__(self):
        self.sources = []

    def chain(self, sweep, kind, ops, make, depth, otherwise):
        """The sweep's call of the group whose ops contain ``o`` (``otherwise`` when none
        has it), and the group functions into ``self.sources``."""
        groups, lines = [], 0
        bodies = [(o, make(o)) for o in ops]
        for o, body in bodies:
            if not groups or lines + body.count("\n") > ROW_GROUP_LINES:
                groups.append([])
                lines = 0
            groups[-1].append((o, body))
            lines += body.count("\n") + 1
        calls = []
        for k, group in enumerate(groups):
            name = f"{sweep}_{kind}_{k}"
            text = "\n".join(body for _, body in group)
            if re.search(r"\b(return|continue|break)\b", text):
                raise ValueError(f"{name}: an elementwise branch may not leave the sweep's loop")
            args = ", ".join(n for n in _ROW_NAMES if re.search(rf"\b{n}\b", text))
            names = ", ".join(o.name for o, _ in group)
            branches = []
            for q, (o, body) in enumerate(group):
                branches += [_branch(q == 0, o), _indent(body, 4)]
            branches += ["else:", "    return False", "return True"]
            self.sources.append(
                f"\n\n{NJIT}\ndef {name}(o, {args}):\n"
                f'    """{sweep}: the rows of {names} (False for any other op)."""\n'
                + _indent("\n".join(branches), 4)
                + "\n"
            )
            last = CODE[group[-1][0].name]
            test = "else" if k == len(groups) - 1 else f"{'if' if k == 0 else 'elif'} o <= {last}"
            if test == "else" and k == 0:
                calls.append(f"known = {name}(o, {args})")
            else:
                calls += [f"{test}:", f"    known = {name}(o, {args})"]
        calls += ["if not known:", "    " + otherwise]
        return _indent("\n".join(calls), depth)


# ---- structural branches ---------------------------------------------------------------------------


def _fn(o, which):
    f = getattr(o, which)
    return f.__name__


def _elementwise(rows, sweep, kind, ops, make, otherwise):
    """The branches of a sweep's elementwise rows: inline, or calls of ``rows``' groups."""
    if rows is None:
        return _chain(ops, make, 12, otherwise)
    return rows.chain(sweep, kind, ops, make, 12, otherwise)


def _struct_chain(make, depth, ops=None, otherwise="return BAD_OP, i"):
    return _chain(_STRUCT if ops is None else ops, make, depth, otherwise)


_ARGS_F = "lo, n, pa, pb, p, voff, ipool, fpool"
_ARGS_B = "lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool"


def _zeroed_before_chain(o):
    """Are structural op ``o``'s operands zeroed by the prologue before the op chain (its
    operands are a / b and it does not zero them itself, ``zeroes_operands``)?"""
    return o.operands is None and not o.zeroes_operands


def struct_backward(o):
    call = f"status = {_fn(o, 'backward')}(adj, val, val, val, adj, {_ARGS_B}, kind)"
    if _zeroed_before_chain(o) or o.zeroes_operands:
        return call
    return "\n".join(_each_operand(o, _ZERO_UNREACHED) + [call])


def _zero_operands_a_b():
    """Before a reverse sweep's chain of structural ops: zero the adjoints of operands a / b
    the op is the first to reach, for the ops ``_zeroed_before_chain``."""
    own = [CODE[o.name] for o in _STRUCT if not _zeroed_before_chain(o)]
    cond = " and ".join(f"o != {c}" for c in own) or "True"
    return "\n".join(
        [
            f"if {cond}:",
            "    for r in (ra, rb):",
            "        if r >= 0 and rg[r] != 0 and (state[r] & 1) == 0:",
            _indent(_ZERO_ROW.format(r="r"), 12),
        ]
    )


def struct_forward(o):
    return f"{_fn(o, 'forward')}(val, val, val, val, FALSE, {_ARGS_F})"


def _per_lane(lines, bufs=("tval",)):
    """Run structural kernels on every lane's 1-D tangent (and tangent-adjoint) buffer."""
    views = [f"    {b} = {b}s[ln]" for b in bufs]
    return "\n".join(["for ln in range(nl):"] + views + ["    " + x for x in lines])


_ZERO_UNFLAGGED = "if flag[r] == 0:\n    zero_lanes(tvals, voff, r)"


def _each_operand(o, action):
    """Lines running ``action`` (code using ``r``) for each operand row of ``o``."""
    body = ["    " + x for x in action.splitlines()]
    if o.operands is not None:
        return [f"for r in {o.operands.__name__}(ipool, p):"] + body
    return ["for r in (ra, rb):", "    if r >= 0:"] + ["    " + x for x in body]


def struct_tangent(o):
    if o.tangent_lanes is not None:
        return f"{o.tangent_lanes.__name__}(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)"
    if o.tangent == "linear":
        lines = [f"{_fn(o, 'forward')}(tval, tval, val, tval, FALSE, {_ARGS_F})"]
    elif o.tangent == "bilinear":
        f = _fn(o, "forward")
        lines = [
            "for j in range(n):",
            "    tval[lo + j] = 0.0",
            "if ra >= 0 and flag[ra] != 0:",
            f"    {f}(tval, val, val, tval, TRUE, {_ARGS_F})",
            "if rb >= 0 and flag[rb] != 0:",
            f"    {f}(val, tval, val, tval, TRUE, {_ARGS_F})",
        ]
    else:
        lines = [f"{o.tangent.__name__}(val, tval, {_ARGS_F})"]
    # the kernels may read every operand's tangent: one without a tangent reads as 0
    return "\n".join(_each_operand(o, _ZERO_UNFLAGGED) + [_per_lane(lines)])


def struct_hvp(o):
    """The adjoint once; the tangent of the adjoint per lane."""
    b = _fn(o, "backward")
    first = "\n".join(
        _each_operand(o, _ZERO_UNREACHED + "\n    zero_lanes(tadjs, voff, r)")
        + [f"status = {b}(adj, val, val, val, adj, {_ARGS_B}, ONE)"]
    )
    if o.backward_tangent_lanes is not None:
        lanes = o.backward_tangent_lanes.__name__
        return f"{first}\n{lanes}(adj, tadjs, val, tvals, flag, {_ARGS_B})"
    if o.backward_tangent != "linear":  # these read the operands' tangents
        first += "\n" + "\n".join(_each_operand(o, _ZERO_UNFLAGGED))
    lines = []
    if o.backward_tangent in ("linear", "bilinear"):
        lines.append(f"{b}(tadj, val, val, val, tadj, {_ARGS_B}, ONE)")
        if o.backward_tangent == "bilinear":
            lines += [
                "if (ra >= 0 and flag[ra] != 0) or (rb >= 0 and flag[rb] != 0):",
                f"    {b}(adj, tval, tval, val, tadj, {_ARGS_B}, ONE)",
            ]
    else:
        lines.append(f"{o.backward_tangent.__name__}(adj, tadj, val, tval, {_ARGS_B})")
    return "\n".join([first, _per_lane(lines, ("tval", "tadj"))])


def struct_has_tangent(o):
    if o.operands is not None:
        return "\n".join(
            [
                f"rows = {o.operands.__name__}(ipool, p)",
                "has = False",
                "for q in range(rows.shape[0]):",
                "    if flag[rows[q]] != 0:",
                "        has = True",
            ]
        )
    return "has = (ra >= 0 and flag[ra] != 0) or (rb >= 0 and flag[rb] != 0)"


# ---- the module --------------------------------------------------------------------------------------

HEADER = '''\
# GENERATED FILE: do not edit. Regenerate with `python tapegrad/kernels/generate.py` (from tapegrad/ops).
"""Compiled tape sweeps: every ``@njit`` function of tapegrad, generated from the op spec.

Tape layout (one row per value, row index == slot):
  code[i]  int64   op | (a + 1) << 8 | (b + 1) << 36: op code and operand rows (-1: none)
  ip[i]    int64   start of the op's integer parameters in ``ipool``
  fp[i]    float64 scalar parameter c (constant, exponent, slope, clip low)
  voff[i]  int64   offset of the value in ``val``/``adj``; size is voff[i+1] - voff[i]
  rg[i]    int8    1 when the row needs a gradient
  state[i] int8    bit 1: reached by the current sweep; bit 2: freed by an earlier backward
Tangent sweeps keep ``tvals`` (one row of tangents per direction, a "lane", each laid out
like ``val``) and ``flag[i]`` (1 when row i carries a tangent, the same for every lane).
"""
import math
import threading

import numpy as np
from numba import njit, prange

_PLAIN = globals().get("PLAIN_PYTHON")  # set when kernels/loader.py runs this as plain Python
if _PLAIN is not None:
    njit, prange, math = _PLAIN.njit, _PLAIN.prange, _PLAIN.math

FINGERPRINT = "{fingerprint}"
# compiled into every function that reads it: code cached by a user's own @njit(cache=True)
# function from an older tapegrad carries the old number, and replay_grad refuses to run
KERNELS_ID = {kernels_id}
OP_NAMES = {names}

# sweep results: (status, row)
DONE = 0          # swept everything
HIT_FREED = 1     # reached a row whose graph was freed by an earlier backward
HIT_CUSTOM = 2    # reached a custom Function: Python runs it, then resumes
BAD_OP = 3        # unknown op code (never silently skipped)
HIT_MATMUL = {hit_matmul}    # a large matmul: Python does it with NumPy's BLAS, then resumes
GUARD_FAILED = 5  # a replayed guard saw another outcome than the recorded one
HIT_RARE = 6      # backward_sweep met an op outside its common set: backward_sweep_all goes on
SMALL_MATMUL = {small_matmul}
# flags and counts one kernel passes another: a literal (True, 0) would make Numba compile the
# callee again for that literal; these are the bool / int64 every other caller passes
TRUE, FALSE, ZERO, ONE = np.bool_(True), np.bool_(False), np.int64(0), np.int64(1)


class RetraceRequired(RuntimeError):
    """A replayed trace met inputs that take another branch than the one recorded."""
'''


LAZY = """

# ---- dispatchers made on first use ---------------------------------------------------------
# Numba makes a dispatcher per @njit function at ~0.5 ms each: for ~110 kernels, most of
# importing tapegrad.  So each kernel is noted here (``@_kernel``) and removed from the module
# at its end; the first ``sweeps.NAME`` (module __getattr__) makes NAME's dispatcher, after
# those of every kernel it calls (found in its code's global names), since Numba looks them up
# when it compiles NAME.  A first gradient so makes the dozens it needs, not all of them.
_LAZY = {}  # name -> (plain function, parallel?)
_LAZY_LOCK = threading.Lock()


def _kernel(fn):
    _LAZY[fn.__name__] = (fn, False)
    return fn


def _kernel_parallel(fn):
    _LAZY[fn.__name__] = (fn, True)
    return fn
"""

LAZY_END = """

def _global_names(code):
    \"\"\"The global names a function's code (and the code nested in it) reads.\"\"\"
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    return names


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _LAZY_LOCK:
        made = globals()
        order, todo, seen = [], [name], set()
        while todo:  # name and every kernel it calls, not made yet
            n = todo.pop()
            if n in seen or n in made:
                continue
            seen.add(n)
            order.append(n)
            todo.extend(k for k in _global_names(_LAZY[n][0].__code__) if k in _LAZY)
        new = {}
        for n in order:
            fn, parallel = _LAZY[n]
            new[n] = njit(cache=True, nogil=True, error_model="numpy", parallel=parallel)(fn)
        # every kernel name calls first, together (one dict update), then name itself
        made.update({n: d for n, d in new.items() if n != name})
        if name in new:
            made[name] = new[name]
    return made[name]


if _PLAIN is None:  # (the plain-Python twin keeps its functions as they are)
    for _name in _LAZY:
        del globals()[_name]
    del _name
"""


def _row_prologue(depth):
    return _indent(
        "\n".join(
            [
                "lo = voff[i]",
                "n = voff[i + 1] - lo",
                "ra = ((w >> 8) & 0xFFFFFFF) - 1",
                "rb = (w >> 36) - 1",
                "# unsigned offsets: Numba then drops negative-index wraparound checks (~3x faster)",
                "ulo = np.uint64(lo)",
                "un = np.uint64(n)",
            ]
        ),
        depth,
    )


def _reach(r, lanes):
    """Mark row ``r`` reached, zeroing its adjoint first (and, with ``lanes``, its tangent
    adjoints) when this is the sweep's first contribution to it: the buffers are not cleared
    up front, only the rows a sweep reaches are (so a backward costs what it reaches, not
    the size of the tape below it)."""
    zero = _ZERO_ROW.format(r=r) + (f"\nzero_lanes(tadjs, voff, {r})" if lanes else "")
    return f"if (state[{r}] & 1) == 0:\n{_indent(zero, 4)}\nstate[{r}] |= 1"


# a structural op's backward adds into the adjoints of its operands that need one (setting
# their state bit): each is zeroed first unless the sweep reached it already
_ZERO_ROW = "for zj in range(voff[{r}], voff[{r} + 1]):\n    adj[zj] = 0.0"  # (inline: no call)
_ZERO_UNREACHED = "if rg[r] != 0 and (state[r] & 1) == 0:\n" + _indent(_ZERO_ROW.format(r="r"), 4)


# The ops of backward_sweep, the reverse sweep of Tensor.backward and tg.grad: what ordinary
# programs use.  Every other op makes it return HIT_RARE, and backward_sweep_all (every op)
# goes on from that row: a first gradient compiles a sweep of about half the size (Numba's
# typing and LLVM's time grow with the function), and programs without rare ops never
# compile the full one.  Traces, Jacobians and second order call the full sweeps.
COMMON_BACKWARD = frozenset(
    "NEG EXP LOG LOG1P EXPM1 SQRT SIN COS TAN TANH SIGMOID RELU ABS LEAKY_RELU ADDS MULS RSUBS "
    "RDIVS POWS RPOWS CLIP ADD SUB MUL DIV POW MAXIMUM MINIMUM LOGADDEXP WHERE VIEW RESHAPE SUM "
    "AMAX AMIN MATMUL CONCAT GATHER SETITEM".split()
)


def _backward_like(
    name, signature, doc, unary, binary, struct, extra_setup="", lanes=False, only=None, rows=None
):
    """A reverse sweep over every op, or over the ops named in ``only`` (the others return
    HIT_RARE); with ``rows`` (a RowGroups) its elementwise branches are functions of their own."""
    lu, lb = _last(_UNARY), _last(_BINARY)
    pick = (lambda ops: ops) if only is None else (lambda ops: [o for o in ops if o.name in only])
    otherwise = "return BAD_OP, i" if only is None else "return HIT_RARE, i"
    return f'''
{NJIT}
def {name}({signature}):
    """{doc}"""
    i = top
    while i >= bottom:
        s = state[i]
        if (s & 1) == 0:
            i -= 1
            continue
        w = code[i]
        o = w & 255
        if o == {CODE["LEAF"]} or o == {CODE["CONST"]} or o == {CODE["GUARD"]}:
            i -= 1
            continue
        if (s & 2) != 0 or o == {CODE["FREED"]}:
            return HIT_FREED, i
        if o == {CODE["CUSTOM"]}:
            return HIT_CUSTOM, i
{_row_prologue(8)}
{extra_setup}
        if o <= {lu}:
            if rg[ra] == 0:
                i -= 1
                continue
{_indent(_reach("ra", lanes), 12)}
            upa = np.uint64(voff[ra])
{_elementwise(rows, name, "unary", pick(_UNARY), unary, otherwise)}
        elif o <= {lb}:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
{_indent(chr(10).join(_BROADCAST_STEPS), 12)}
            ga = rg[ra] != 0
            gb = rg[rb] != 0
            if ga:
{_indent(_reach("ra", lanes), 16)}
            if gb:
{_indent(_reach("rb", lanes), 16)}
{_elementwise(rows, name, "binary", pick(_BINARY), binary, otherwise)}
        else:
            p = ip[i]
            if ra >= 0 and rg[ra] == 0 and (rb < 0 or rg[rb] == 0):
                i -= 1
                continue
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
            status = 0
{_indent(_zero_operands_a_b(), 12) if not lanes else ""}
{_struct_chain(struct, 12, pick(_STRUCT), otherwise)}
            if status != 0:
                return status, i
        i -= 1
    return DONE, -1
'''


def backward_sweep():
    doc = (
        "Reverse sweep over rows top..bottom, accumulating adjoints of reached rows.\n\n"
        "    Stops (returning the row) at a custom op, a freed row or, when ``kind`` is 0, a "
        "large\n    matmul, so Python can act; ``kind`` 1 does every matmul here."
    )
    signature = "code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, bottom, kind"
    common = _backward_like(
        "backward_sweep",
        signature,
        doc + "\n    Only the ops of COMMON_BACKWARD: (HIT_RARE, row) at any other op, from "
        "which\n    ``backward_sweep_all`` goes on.",
        backward_unary,
        backward_binary,
        struct_backward,
        only=COMMON_BACKWARD,
    )
    full = _backward_like(
        "backward_sweep_all",
        signature,
        doc + " Every op.",
        backward_unary,
        backward_binary,
        struct_backward,
    )
    return common + "\n" + full


def hvp_sweep(rows):
    """The second-order sweep, its elementwise rows in ``rows``' groups."""
    return _backward_like(
        "hvp_sweep",
        "code, ip, fp, voff, rg, state, ipool, fpool, val, tvals, flag, adj, tadjs, top, bottom",
        "Reverse sweep carrying the adjoints and, per lane, their tangents over a tape whose\n"
        "    tangents ``tangent_sweep`` computed: forward-over-reverse, so ``tadjs[ln]`` of the "
        "inputs\n    is H v_l.  Each row is dispatched once for all lanes.",
        hvp_elementwise,
        hvp_elementwise,
        struct_hvp,
        extra_setup=_indent(
            "\n".join(
                [
                    "ha = ra >= 0 and flag[ra] != 0",
                    "hb = rb >= 0 and flag[rb] != 0",
                    "hout = flag[i] != 0",
                    "nl = tvals.shape[0]",
                ]
            ),
            8,
        ),
        lanes=True,
        rows=rows,
    )


def forward_sweep():
    lu, lb = _last(_UNARY), _last(_BINARY)
    return f'''
{NJIT}
def forward_sweep(code, ip, fp, voff, ipool, fpool, val, start, stop):
    """Recompute rows start..stop-1 in place in ``val`` (LEAF/CONST rows are inputs).

    Returns (DONE, -1), (GUARD_FAILED, row) at the first guard whose outcome changed, or
    (BAD_OP, row) at a custom op (Python computes its outputs, then the replay goes on)."""
    for i in range(start, stop):
        w = code[i]
        o = w & 255
        if o == {CODE["LEAF"]} or o == {CODE["CONST"]} or o == {CODE["FREED"]}:
            continue
        if o == {CODE["CUSTOM"]}:
            return BAD_OP, i
{_row_prologue(8)}
        if o == {CODE["GUARD"]}:
            if not guard_holds(ip, fp, voff, ipool, val, i, lo, n, ra, rb):
                return GUARD_FAILED, i
        elif o <= {lu}:
            upa = np.uint64(voff[ra])
{_chain(_UNARY, forward_elementwise, 12)}
        elif o <= {lb}:
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb])
{_indent(chr(10).join(_BROADCAST_STEPS), 12)}
{_chain(_BINARY, forward_elementwise, 12)}
        else:
            p = ip[i]
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
{_struct_chain(struct_forward, 12)}
    return DONE, -1
'''


def tangent_sweep(rows):
    """Forward mode, its elementwise rows in ``rows``' groups."""
    lu, lb = _last(_UNARY), _last(_BINARY)
    return f'''
{NJIT}
def tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, stop):
    """Forward mode over rows start..stop-1: each row's tangents (one per lane, i.e. per row
    of ``tvals``) from its operands' tangents, the row dispatched once for all lanes.

    The caller zeroes ``tvals``/``flag`` and seeds the input rows; rows none of whose operands
    carries a tangent are skipped.  Stops at a custom op (Python runs its jvp)."""
    nl = tvals.shape[0]
    for i in range(start, stop):
        w = code[i]
        o = w & 255
        if o <= {LAST_INTERNAL}:
            if o == {CODE["CUSTOM"]}:
                return HIT_CUSTOM, i
            continue
{_row_prologue(8)}
        if o <= {lb}:
            ha = flag[ra] != 0
            hb = rb >= 0 and flag[rb] != 0
            if not ha and not hb:
                continue
            flag[i] = 1
            upa = np.uint64(voff[ra])
            upb = np.uint64(voff[rb]) if rb >= 0 else np.uint64(0)
            if o <= {lu}:
{rows.chain("tangent_sweep", "unary", _UNARY, tangent_elementwise, 16, "return BAD_OP, i")}
            else:
{_indent(chr(10).join(_BROADCAST_STEPS), 16)}
{rows.chain("tangent_sweep", "binary", _BINARY, tangent_elementwise, 16, "return BAD_OP, i")}
        else:
            p = ip[i]
{_indent(_struct_has_tangent_chain(), 12)}
            if not has:
                continue
            flag[i] = 1
            pa = voff[ra] if ra >= 0 else 0
            pb = voff[rb] if rb >= 0 else 0
{_struct_chain(struct_tangent, 12)}
    return DONE, -1
'''


def _struct_has_tangent_chain():
    special = [o for o in _STRUCT if o.operands is not None]
    out = []
    for k, o in enumerate(special):
        out.append(_branch(k == 0, o))
        out.append(_indent(struct_has_tangent(o), 4))
    generic = "has = (ra >= 0 and flag[ra] != 0) or (rb >= 0 and flag[rb] != 0)"
    if out:
        out += ["else:", "    " + generic]
    else:
        out = [generic]
    return "\n".join(out)


def _driver_sources():
    """The drivers (``drivers.py``), each under its ``@njit``."""
    out = []
    for fn in drivers.KERNELS:
        deco = NJIT_PARALLEL if fn.__name__ in drivers.PARALLEL else NJIT
        out.append(f"\n\n{deco}\n{inspect.getsource(fn).rstrip()}\n")
    return "".join(out)


def _kernel_sources():
    seen, out = set(), []
    fns = list(specfuncs.HELPERS)  # the formula language's special functions
    for o in _STRUCT:
        fns += list(o.helpers)
        if o.operands is not None:
            fns.append(o.operands)
        fns += [o.forward, o.backward]
        for extra in (o.tangent, o.backward_tangent, o.tangent_lanes, o.backward_tangent_lanes):
            if callable(extra):
                fns.append(extra)
    for fn in fns:  # each compiled once, shared by every sweep that calls it
        if fn.__name__ in seen:
            continue
        seen.add(fn.__name__)
        out.append(f"\n\n{NJIT}\n{spec.source(fn).rstrip()}\n")
    return "".join(out)


def render() -> str:
    text = HEADER.format(
        fingerprint=FINGERPRINT,
        kernels_id=int(FINGERPRINT[:15], 16),
        names=repr(NAMES),
        hit_matmul=structural.HIT_MATMUL,
        small_matmul=structural.SMALL_MATMUL,
    )
    text += LAZY + _kernel_sources()
    rows = RowGroups()
    text += "\n" + backward_sweep() + "\n" + forward_sweep() + "\n" + tangent_sweep(rows)
    text += "\n" + hvp_sweep(rows) + "".join(rows.sources) + _driver_sources() + LAZY_END
    lines = [ln.rstrip() for ln in text.splitlines()]
    out, blank = [], 0
    for ln in lines:  # no runs of more than two blank lines, no blank lines in branches
        blank = blank + 1 if not ln else 0
        if blank <= 2:
            out.append(ln)
    return "\n".join(out).rstrip() + "\n"


# ---- tapegrad/core/ufuncs.py: the public elementwise functions -----------------------------

UFUNCS_TARGET = Path(__file__).resolve().parent.parent / "core" / "ufuncs.py"


def render_ufuncs() -> str:
    """The module of the public elementwise functions (every declaration with an
    ``example``): one line per function, the NumPy ufuncs it serves, its Tensor methods.
    Written out (not built in a loop at import) so linters, type checkers and IDEs see
    every name."""
    public = [o for o in spec.OPS if o.family in ("elementwise", "scan") and o.example]
    var = {o.name: o.function or o.name.lower() for o in public}
    maker = {
        o.name: "scan" if o.family == "scan" else ("unary", "binary")[o.arity - 1] for o in public
    }
    lines = [
        '"""The elementwise functions (``tg.exp``, ``tg.hypot`` ...) and the scans (``tg.cumsum`` ...):',
        "generated from the declarations in ``tapegrad/ops/elementwise.py`` and",
        "``tapegrad/ops/structural/__init__.py`` by ``python tapegrad/kernels/generate.py``",
        '(edit those, not this file)."""',
        "",
        "import numpy as np",
        "",
        "from .elementwise import make_binary, make_unary",
        "from .scans import make_scan",
        "",
    ]
    lines += [f'{var[o.name]} = make_{maker[o.name]}("{o.name}")' for o in public]
    ufuncs = [
        (n, var[o.name])
        for o in public
        for n in o.numpy
        if isinstance(getattr(np, n, None), np.ufunc) and getattr(np, n).__name__ == n
    ]
    lines += [
        "",
        "# the NumPy ufuncs each serves on Tensors (tapegrad.numpy dispatch)",
        "UFUNCS = {",
    ]
    lines += [f"    np.{n}: {v}," for n, v in ufuncs]
    lines += [
        "}",
        "",
        "# the ufunc.accumulate each scan is (np.add.accumulate is cumsum)",
        "ACCUMULATE = {",
    ]
    lines += [f"    np.{o.ufunc}: {var[o.name]}," for o in public if getattr(o, "ufunc", "")]
    lines += [
        "}",
        "",
        "",
        "class ElementwiseMethods:",
        '    """``x.exp()``, ``x.hypot(y)``, ``x.cumsum(dim)`` ... (PyTorch\'s spellings too)."""',
        "",
    ]
    lines += [
        f"    {m} = {var[o.name]}"
        for o in public
        for m in dict.fromkeys((o.name.lower(), *o.methods))
    ]
    exported = sorted(v for v in var.values() if not v.endswith("_"))
    lines += ["", "", "__all__ = ["] + [f'    "{v}",' for v in exported] + ["]"]
    return "\n".join(lines) + "\n"


# ---- tapegrad/ops/derived.py: the facts an import derives from the declarations --------------


def render_derived() -> str:
    """The facts the op spec derived at its import (see ops/memo.py), with the hash of the
    sources they were derived from."""
    lines = [
        "# GENERATED FILE: do not edit. Regenerate with `python tapegrad/kernels/generate.py`.",
        '"""The facts derived from the op declarations (see memo.py), read at import when the',
        'ops sources hash to ``SOURCES``."""',
        "",
        f"SOURCES = {memo.sources_hash()!r}",
        "TABLE = {",
    ]
    lines += [f"    {key!r}: {value!r}," for key, value in spec.DERIVED.items()]
    return "\n".join(lines + ["}"]) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outputs = [
        (TARGET, render()),
        (UFUNCS_TARGET, render_ufuncs()),
        (memo.GENERATED, render_derived()),
    ]
    if "--check" in argv:
        stale = [t.name for t, text in outputs if (t.read_text() if t.exists() else "") != text]
        if stale:
            print(f"{', '.join(stale)} out of date: run python tapegrad/kernels/generate.py")
            return 1
        return 0
    for target, text in outputs:
        target.write_text(text)
        print(f"wrote {target} ({len(text.splitlines())} lines)")
    print(f"fingerprint {FINGERPRINT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
