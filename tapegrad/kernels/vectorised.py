"""The reverse sweep as whole-array NumPy calls: what the kernel loader runs on array rows
while the compiled sweep is still compiling.

The element-by-element twin (``loader.twin``) costs ~1 us per value; here a row costs a few
NumPy calls on its whole slice (microseconds per row, nanoseconds per value), so a gradient of
a few thousand values runs within a small factor of the compiled sweep.  The elementwise
branches are built from the same op spec as the compiled ones: each partial derivative ``d``
of ``tapegrad/ops`` becomes a NumPy function of the row's operand, output and parameter
slices (``formula.python_function``), and ``adj[a] += g * d`` (``formula.scaled``) is applied
to the slice, which is what the compiled loop does per element (values agree within a few
ulp: NumPy's and libm's transcendental functions may differ in the last bit).  The linear
ops (sums, reshapes, strided views, indexing) run their declarations' whole-slice backward,
written from their index maps; matrix products go back to the caller (``HIT_MATMUL``: NumPy's
BLAS, as for large ones in the compiled sweep), and every other row is handed, one row at a
time, to the twin's sweep, which runs the spec's own kernel for it.
"""

import functools

import numpy as np

from ..ops import formula
from ..ops.decl import Elementwise, Linear
from ..ops.spec import CODE, OPS
from . import sweeps

_SKIP = (CODE["LEAF"], CODE["CONST"], CODE["GUARD"])


def _partial(d):
    """("add" | "sub" | "mul", used symbols, f): ``adj += g``, ``adj -= g`` or
    ``adj += f(..., g)``, the partial times g as the compiled sweep takes it (``scaled``)."""
    text = d.strip()
    if text == "1.0":
        return "add", (), None
    if text == "-1.0":
        return "sub", (), None
    used = tuple(s for s in formula.SYMBOLS if s in formula.symbols(text))
    return "mul", used, formula.python_function(formula.scaled(text), (*used, formula.SCALE))


@functools.cache
def _partials(op):
    """Op code -> one (kind, symbols, function) per operand, from the spec's partial
    derivatives (None for an op that is not elementwise); built on first use: the stand-in
    runs only while a kernel compiles, and building every op's cost each import ~40 ms."""
    o = OPS[op]
    return tuple(map(_partial, o.d)) if isinstance(o, Elementwise) else None


# the linear ops' backward on whole slices, written by their declarations from their maps
STRUCTURAL = {CODE[o.name]: o.vectorised_backward for o in OPS if isinstance(o, Linear)}


def _apply(adj, where, g, kind, f, env):
    if kind == "add":
        adj[where] += g
    elif kind == "sub":
        adj[where] -= g
    else:
        adj[where] += f(*env, g)


def _reach(state, adj, r, start, end):
    """Mark row ``r`` reached, zeroing its adjoint at the sweep's first contribution (the
    buffer is not cleared up front, as in the compiled sweeps)."""
    if not state[r] & 1:
        adj[start:end] = 0.0
        state[r] |= 1


def _elementwise(partials, operands, i, lo, n, fp, ip, fpool, voff, rg, state, val, adj):
    """``adj[operand] += g * d`` for each operand that needs a gradient, on whole slices; an
    operand of one value (broadcast over the row by the kernels) gets the sum."""
    values = {"out": val[lo : lo + n], "c": fp[i]}
    if 0 <= ip[i] < len(fpool):
        values["c2"] = fpool[ip[i]]
    sizes = {}
    for sym, r in zip("ab"[: len(partials)], operands, strict=False):
        sizes[r] = int(voff[r + 1]) - int(voff[r])
        values[sym] = val[int(voff[r]) : int(voff[r]) + sizes[r]]
    g = adj[lo : lo + n]
    for r, (how, used, f) in zip(operands, partials, strict=False):
        if rg[r] != 0:
            start = int(voff[r])
            _reach(state, adj, r, start, start + sizes[r])
            if sizes[r] == n:
                _apply(adj, slice(start, start + n), g, how, f, [values[s] for s in used])
            else:  # one value broadcast over the row
                part = np.zeros(n)
                _apply(part, slice(0, n), g, how, f, [values[s] for s in used])
                adj[start] += part.sum()


def backward_sweep(
    row_sweep, code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, bottom, kind
):
    """``sweeps.backward_sweep_all`` (the same arguments after ``row_sweep``, the same
    statuses and stops) on whole rows; ``row_sweep`` (the twin's ``backward_sweep_all``)
    runs, one row at a time, the rows without a vectorised branch here."""
    for i in range(top, bottom - 1, -1):
        if not state[i] & 1:
            continue  # not reached
        word = int(code[i])
        op = word & 255
        if op in _SKIP:
            continue
        if state[i] & 2 or op == CODE["FREED"]:
            return sweeps.HIT_FREED, i
        if op == CODE["CUSTOM"]:
            return sweeps.HIT_CUSTOM, i
        lo = int(voff[i])
        n = int(voff[i + 1]) - lo
        operands = (((word >> 8) & 0xFFFFFFF) - 1, (word >> 36) - 1)
        partials = _partials(op)
        if partials is not None:
            _elementwise(partials, operands, i, lo, n, fp, ip, fpool, voff, rg, state, val, adj)
            continue
        if op == CODE["MATMUL"] and kind == 0:
            return sweeps.HIT_MATMUL, i  # the caller runs it with NumPy's BLAS, then resumes
        ra = operands[0]
        vectorised = STRUCTURAL.get(op)
        if vectorised is not None and rg[ra] != 0:
            _reach(state, adj, ra, int(voff[ra]), int(voff[ra + 1]))
            vectorised(adj, lo, n, int(voff[ra]), int(ip[i]), ipool)
            continue
        status, row = row_sweep(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, i, i, kind)
        if status != sweeps.DONE:
            return status, row
    return sweeps.DONE, -1


# rows of at least this many values on average are run here rather than by the twin
MIN_MEAN_ROW = 8
