"""Linear ops given by an index map, each declared once (``linear``).

A linear op that moves values without arithmetic is an index map ``offs`` and a direction:

- a *gather* writes output entry ``j`` from operand entry ``offs[j]`` (a strided view, an
  integer index, a reshape when ``offs`` is the identity);
- a *scatter* adds operand entry ``j`` into output entry ``offs[j]`` (a sum over axes,
  the adjoint of an index).

Its transpose is the same map in the other direction, so everything follows from the map:
the forward kernel moves operand -> output, the backward kernel moves the row's adjoint ->
the operand's adjoint the other way, the tangent kernels are the forward on tangents (one
call for every lane), and the Tensor-level rules are ``gather_flat`` / ``scatter_add`` with
the map.  ``linear`` writes the kernels as source text (the generator copies them into the
generated module like any kernel's).

The map is given twice, for the two places it runs: ``offsets(ipool, p)``, an njit helper
returning the int64 offsets (the kernels call it), and ``index(ipool, p)``, the same offsets
as whole-array NumPy (the Tensor-level rules and the vectorised sweep that runs while the
kernels compile); a test checks that they agree for every linear op.  A map may also give
``scatter(S, s0, D, d0, ipool, p)``, adding ``S[s0 + j]`` into ``D[d0 + offs[j]]`` without an
offset array (a strided map: a sum in NumPy's pairwise order, a broadcast bias's gradient
as contiguous runs); every scatter move of the op then uses it.  Likewise ``take(S, s0, D, d0,
ipool, p, add)`` writes (``add``: adds) ``S[s0 + offs[j]]`` into ``D[d0 + j]`` for every gather
move (a broadcast's value, a sum's gradient: one strided run per step of the outer axes,
where an offset array costs an allocation and an odometer step per entry).
"""

from __future__ import annotations

import re

import numpy as np

from ..decl import Linear
from .helpers import FALSE, TRUE, kernel_from_source, pairwise_sum

# ---- maps ---------------------------------------------------------------------------------------


def strided_index(ipool, p, nd, base):
    """``strided_offsets`` as whole-array NumPy: base + sum(idx * stride) over the shape
    ``ipool[p:p+nd]`` (strides ``ipool[p+nd:p+2*nd]``) in C order."""
    shape = tuple(int(s) for s in ipool[p : p + nd])
    offs = np.full(shape, int(base), np.int64)
    for d in range(nd):
        axis = np.arange(shape[d], dtype=np.int64) * int(ipool[p + nd + d])
        offs += axis.reshape((-1,) + (1,) * (nd - 1 - d))
    return offs.reshape(-1)


def strided_move(S, s0, D, d0, ipool, p, nd, base, take, add):
    """A move along the strided map of the shape ``ipool[p:p+nd]`` (strides
    ``ipool[p+nd:p+2*nd]``, from ``base``), without an offset array: one run along the
    innermost axes per step of an odometer over the outer ones.

    A scatter (``take`` False) adds ``S[s0 + flat(idx)]`` into ``D[d0 + base + sum(idx *
    stride)]`` for every multi-index idx (C order); an innermost run of stride-0 axes (a
    reduction) is added pairwise first, in NumPy's order for a sum, so a replayed sum matches
    NumPy's.  A gather (``take`` True) writes ``D[d0 + flat(idx)] = S[s0 + base + sum(idx *
    stride)]`` (``add``: adds it), a broadcast scalar being one run of stride 0."""
    if nd == 0:
        if not take:
            D[d0 + base] += S[s0]
        elif add:
            D[d0] += S[s0 + base]
        else:
            D[d0] = S[s0 + base]
        return
    run = 1
    inner = nd  # the innermost axes from here on are stride 0 (or of size 1)
    while inner > 0 and not take:
        size = ipool[p + inner - 1]
        if size != 1 and ipool[p + nd + inner - 1] != 0:
            break
        run *= size
        inner -= 1
    pairwise = run > 1
    step = 0
    if not pairwise:
        inner = nd - 1
        run = ipool[p + nd - 1]
        step = ipool[p + 2 * nd - 1]
    outer = 1
    for d in range(inner):
        outer *= ipool[p + d]
    if run == 0 or outer == 0:
        return
    if inner == 0:  # one run (a full reduction, a 1-D move): no odometer to allocate
        if pairwise:
            D[d0 + base] += pairwise_sum(S, s0, run)
        elif not take:
            for v in range(run):
                D[d0 + base + v * step] += S[s0 + v]
        elif add:
            for v in range(run):
                D[d0 + v] += S[s0 + base + v * step]
        else:
            for v in range(run):
                D[d0 + v] = S[s0 + base + v * step]
        return
    idx = np.zeros(inner, np.int64)
    cur = base
    for u in range(outer):
        flat = u * run
        if pairwise:
            D[d0 + cur] += pairwise_sum(S, s0 + flat, run)
        elif not take:
            for v in range(run):
                D[d0 + cur + v * step] += S[s0 + flat + v]
        elif add:
            for v in range(run):
                D[d0 + flat + v] += S[s0 + cur + v * step]
        else:
            for v in range(run):
                D[d0 + flat + v] = S[s0 + cur + v * step]
        # the odometer step, inline as in strided_offsets: a helper called once per element
        # costs ~30 ns in Numba (measured; the index array is reference-counted per call)
        d = inner - 1
        while d >= 0:
            idx[d] += 1
            cur += ipool[p + nd + d]
            if idx[d] < ipool[p + d]:
                break
            cur -= ipool[p + nd + d] * idx[d]
            idx[d] = 0
            d -= 1


# ---- the kernels, written from the map ----------------------------------------------------------

_SIGNATURES = {
    "forward": "(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool)",
    "backward": "(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)",
    "tangent_lanes": "(val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, ipool, fpool)",
    "backward_tangent_lanes": (
        "(adj, tadjs, val, tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)"
    ),
}


class _Map:
    """Source snippets for moves along one op's map."""

    def __init__(self, gather, offsets, scatter, take):
        self.gather, self.offsets, self.scatter, self.take = gather, offsets, scatter, take
        identity = offsets is None
        self.out_at = "j" if identity or gather else "offs[j]"  # output entry of step j
        self.opd_at = "j" if identity or not gather else "offs[j]"  # operand entry of step j
        self.count = "n" if identity else "offs.shape[0]"

    def setup(self):
        return [] if self.offsets is None else [f"offs = {self.offsets.__name__}(ipool, p)"]

    def move(self, dst, d0, src, s0, forward, assign=False, lanes=False):
        """Lines adding (``assign``: writing) ``src`` into ``dst`` along the map: operand ->
        output (``forward``) or output -> operand (the transpose).  A gather move on every
        lane (``lanes``) reads one offset array made once for all lanes rather than calling
        ``take`` per lane (its odometer set-up, per lane, cost a Hessian ~5%)."""
        to_output_by_offs = forward != self.gather  # a scatter: the destination is offs[j]
        if to_output_by_offs and self.scatter is not None:
            return [f"{self.scatter.__name__}({src}, {s0}, {dst}, {d0}, ipool, p)"]
        if not to_output_by_offs and self.take is not None and not lanes:
            add = "FALSE" if assign else "TRUE"  # typed constants (see helpers.py)
            return [f"{self.take.__name__}({src}, {s0}, {dst}, {d0}, ipool, p, {add})"]
        dst_at, src_at = (self.out_at, self.opd_at) if forward else (self.opd_at, self.out_at)
        op = "=" if assign else "+="
        step = f"{_at(dst, f'{d0} + {dst_at}')} {op} {_at(src, f'{s0} + {src_at}')}"
        return [f"for j in range({self.count}):", "    " + step]

    def scatters(self):
        """A scatter along offsets: operand entries add into output entries."""
        return not self.gather and self.offsets is not None

    def fills_output(self):
        """A forward move writes every output entry once (a gather, the identity)."""
        return self.gather or self.offsets is None


def _at(array, index):
    """``array[index]``; for a lane's buffer ``tvals[ln]``, ``tvals[ln, index]``."""
    return f"{array[:-1]}, {index}]" if array.endswith("]") else f"{array}[{index}]"


def _indent(lines, depth=1):
    return ["    " * depth + ln for ln in lines]


def _kernel_sources(name, m: _Map):
    low = name.lower()

    if m.fills_output():
        fwd = [
            "if acc:",
            *_indent(m.move("D", "lo", "A", "pa", True)),
            "else:",
            *_indent(m.move("D", "lo", "A", "pa", True, assign=True)),
        ]
    else:
        fwd = ["if not acc:", "    for j in range(n):", "        D[lo + j] = 0.0"]
        fwd += m.move("D", "lo", "A", "pa", True)
    bwd = ["state[ra] |= 1", *m.move("D", "pa", "G", "lo", False), "return 0"]
    lanes_fwd = m.move(
        "tvals[ln]", "lo", "tvals[ln]", "pa", True, assign=m.fills_output(), lanes=True
    )
    if not m.fills_output():
        lanes_fwd = ["for j in range(n):", "    tvals[ln, lo + j] = 0.0", *lanes_fwd]
    lanes = ["for ln in range(tvals.shape[0]):", *_indent(lanes_fwd)]
    lanes_bwd = [
        "for ln in range(tadjs.shape[0]):",
        *_indent(m.move("tadjs[ln]", "pa", "tadjs[ln]", "lo", False, lanes=True)),
    ]
    first = {}  # lines run before the map's offsets are made
    if m.scatters():  # one output entry takes every operand entry: a full sum, per lane in
        # registers (a move per lane, or a store per entry into the one output, costs ~10x)
        first["tangent_lanes"] = [
            "if n == 1:",
            "    m = voff[ra + 1] - voff[ra]",
            "    for ln in range(tvals.shape[0]):",
            "        tvals[ln, lo] = 0.0 + pairwise_sum(tvals[ln], pa, m)",
            "    return",
        ]
    out = {}
    for kind, body in (
        ("forward", fwd),
        ("backward", bwd),
        ("tangent_lanes", lanes),
        ("backward_tangent_lanes", lanes_bwd),
    ):
        needs_offs = any(re.search(r"\boffs\b", ln) for ln in body)  # a helper finds its own
        lines = first.get(kind, []) + (m.setup() if needs_offs else []) + body
        out[kind] = f"def {low}_{kind}{_SIGNATURES[kind]}:\n" + "\n".join(_indent(lines)) + "\n"
    return out


# ---- the Tensor-level rules ---------------------------------------------------------------------


def _rules(gather, index):
    def flat(rows, r):
        ipool, p = rows.params(r)
        return index(ipool, p)

    def move(rows, x, r, shape, forward):
        O = rows.ops
        if index is None:
            return O.reshape(x, shape)
        if forward == gather:  # a gather along the map
            return O.gather_flat(x, flat(rows, r), shape)
        return O.scatter_add(x, flat(rows, r), shape)

    def vjp(rows, r, g):
        ra, _ = rows.operands(r)
        return [(ra, move(rows, g, r, rows.shape(ra), False))]

    def jvp(rows, r, tangent):
        ra, _ = rows.operands(r)
        ta = tangent(ra)
        return None if ta is None else move(rows, ta, r, rows.shape(r), True)

    return vjp, jvp


def _vectorised_backward(gather, index):
    """The backward on whole slices, for the vectorised sweep (``kernels/vectorised.py``)."""

    def backward(adj, lo, n, pa, p, ipool):
        if index is None:
            adj[pa : pa + n] += adj[lo : lo + n]
        elif gather:  # entries may repeat (a broadcast): add.at accumulates them
            np.add.at(adj, pa + index(ipool, p), adj[lo : lo + n])
        else:
            offs = index(ipool, p)
            adj[pa : pa + offs.shape[0]] += adj[lo + offs]

    return backward


def linear(
    name: str,
    *,
    gather: bool = True,
    offsets=None,
    index=None,
    scatter=None,
    take=None,
    helpers=(),
    **kw,
) -> Linear:
    """The declaration of the linear op ``name`` moving values along a map (module docstring);
    ``offsets`` and ``index`` None: the identity (a reshape).  ``kw``: as for ``Structural``."""
    if (offsets is None) != (index is None):
        raise ValueError(f"linear {name}: give the map both as offsets and as index, or neither")
    if (scatter is not None or take is not None) and offsets is None:
        raise ValueError(f"linear {name}: a scatter or take helper moves along a map; give it")
    m = _Map(gather, offsets, scatter, take)
    namespace = {"np": np, "TRUE": TRUE, "FALSE": FALSE}
    used = [h for h in (offsets, scatter, take) if h is not None]
    if m.scatters() and pairwise_sum not in helpers:  # the lane kernels' full sum
        used.append(pairwise_sum)
    for h in (*used, *helpers):
        namespace[h.__name__] = h
    kernels = {
        kind: kernel_from_source(src, f"{name.lower()}_{kind}", namespace)
        for kind, src in _kernel_sources(name, m).items()
    }
    vjp, jvp = _rules(gather, index)
    return Linear(
        name,
        kernels["forward"],
        kernels["backward"],
        vjp,
        jvp,
        tangent_lanes=kernels["tangent_lanes"],
        backward_tangent_lanes=kernels["backward_tangent_lanes"],
        helpers=(*helpers, *used),
        operand_adjoints_only=True,
        gather=gather,
        offsets=offsets,
        index=index,
        vectorised_backward=_vectorised_backward(gather, index),
        **kw,
    )
