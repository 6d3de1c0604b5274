"""The drivers of the compiled sweeps: plain functions whose source ``generate.py`` copies into
``sweeps.py`` under ``@njit`` (``grad_batch`` with ``parallel=True``), beside the sweeps they
call.  They are ordinary Python here, so they are linted, read and reviewed as code; their
source is part of the kernels' fingerprint (``fingerprint``), so a ``sweeps.py`` generated
from other drivers is refused at import like one from another op spec.

- ``guard_holds``: a GUARD row's check during a replay;
- ``jacobian_sweeps``, ``jvp_sweeps``: reverse- and forward-mode Jacobians in one call;
- ``gather_rows``, ``gather_lanes``: the results, row by row and lane by lane;
- ``zero_lanes``, ``seed_tangents``: the lane buffers of the second-order sweeps;
- ``hessian_sweeps``: Hessian-vector products for many directions at once;
- ``grad_into``, ``grad_batch``: one replayed gradient, and a parallel batch of them;
- ``replay_grad``: a trace's gradient, callable from a user's own ``@njit`` code.

The names they call (the sweeps, the status codes, ``KERNELS_ID``, the typed constants
``ZERO``/``ONE``) are those of the generated module they are copied into.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the generated module's names, for readers and linters
    from numba import prange

    from .sweeps import (
        DONE,
        GUARD_FAILED,
        KERNELS_ID,
        ONE,
        ZERO,
        RetraceRequired,
        backward_sweep_all,
        forward_sweep,
        hvp_sweep,
        tangent_sweep,
    )


def guard_holds(ip, fp, voff, ipool, val, i, lo, n, ra, rb):
    """A GUARD row: ``ipool[ip[i]]`` is the kind (0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=, 6 pin: the
    value must not change); the row's own value holds the recorded outcome (0/1) or, for a
    pin, the recorded value.  True when the current values give the recorded outcome."""
    kind = ipool[ip[i]]
    pa = voff[ra]
    pb = voff[rb] if rb >= 0 else 0
    c = fp[i]
    for j in range(n):
        x = val[pa + j]
        r = val[lo + j]
        if kind == 6:
            same = x == r or (x != x and r != r)
        else:
            y = val[pb + j] if rb >= 0 else c
            if kind == 0:
                hit = x < y
            elif kind == 1:
                hit = x <= y
            elif kind == 2:
                hit = x > y
            elif kind == 3:
                hit = x >= y
            elif kind == 4:
                hit = x == y
            else:
                hit = x != y
            same = hit == (r != 0.0)
        if not same:
            return False
    return True


def jacobian_sweeps(
    code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, out_rows, seeds, in_rows, result
):
    """One reverse sweep per cotangent, all inside one compiled call (reverse-mode Jacobian).

    seeds[r] is a cotangent laid out over the concatenated values of ``out_rows``; the
    gradient for each of ``in_rows`` (concatenated) goes to result[r].  Returns (status, row)
    of the first sweep that could not finish (a custom op or freed row) or (DONE, -1)."""
    end = voff[top + 1]
    for r in range(seeds.shape[0]):
        for j in range(end):
            adj[j] = 0.0
        for j in range(top + 1):
            state[j] &= 2
        k = 0
        for q in range(out_rows.shape[0]):
            ro = out_rows[q]
            lo = voff[ro]
            for j in range(voff[ro + 1] - lo):
                adj[lo + j] += seeds[r, k]
                k += 1
            state[ro] |= 1
        status, row = backward_sweep_all(
            code, ip, fp, voff, rg, state, ipool, fpool, val, adj, top, ZERO, ONE
        )
        if status != DONE:
            return status, row
        gather_rows(adj, voff, in_rows, state, result[r])
    return DONE, -1


def zero_lanes(buf, voff, r):
    """Zero row r's values in every lane of ``buf``."""
    lo = voff[r]
    hi = voff[r + 1]
    for ln in range(buf.shape[0]):
        for j in range(lo, hi):
            buf[ln, j] = 0.0


def gather_rows(buf, voff, rows, marks, out):
    """out = the values of ``rows`` in ``buf`` (concatenated), 0 for a row whose mark lacks
    bit 1 (no tangent, or not reached by the sweep)."""
    k = 0
    for q in range(rows.shape[0]):
        r = rows[q]
        lo = voff[r]
        has = (marks[r] & 1) != 0
        for j in range(voff[r + 1] - lo):
            out[k] = buf[lo + j] if has else 0.0
            k += 1


def gather_lanes(buf, voff, rows, marks, result):
    """gather_rows for every lane: result[l] from lane l of ``buf``."""
    for ln in range(result.shape[0]):
        gather_rows(buf[ln], voff, rows, marks, result[ln])


def seed_tangents(voff, tvals, flag, in_rows, v):
    """Lay lane l's direction v[l] over the input rows (an input given twice gets the sum).
    Only these rows of ``tvals`` are cleared: the sweeps write or clear every other row they
    read."""
    for q in range(in_rows.shape[0]):
        zero_lanes(tvals, voff, in_rows[q])
        flag[in_rows[q]] = 1
    for ln in range(v.shape[0]):
        k = 0
        for q in range(in_rows.shape[0]):
            ri = in_rows[q]
            lo = voff[ri]
            for j in range(voff[ri + 1] - lo):
                tvals[ln, lo + j] += v[ln, k]
                k += 1


def jvp_sweeps(
    code, ip, fp, voff, ipool, fpool, val, tvals, flag, top, in_rows, tangents, out_rows, result
):
    """One tangent sweep with a lane per row of ``tangents`` (laid over the concatenated
    values of ``in_rows``; ``flag`` zeroed, ``tvals`` need not be); result[l] gets the
    tangents of ``out_rows`` (forward-mode Jacobian)."""
    start = in_rows.min() if in_rows.shape[0] else top + 1
    seed_tangents(voff, tvals, flag, in_rows, tangents)
    status, row = tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, top + 1)
    if status != DONE:
        return status, row
    gather_lanes(tvals, voff, out_rows, flag, result)  # (flag is 0 or 1 per row)
    return DONE, -1


def hessian_sweeps(
    code,
    ip,
    fp,
    voff,
    rg,
    state,
    ipool,
    fpool,
    val,
    tvals,
    flag,
    adj,
    tadjs,
    top,
    out_row,
    in_rows,
    tangents,
    result,
):
    """Hessian-vector products of the scalar ``out_row`` for every row of ``tangents``: one
    tangent sweep and one reverse sweep over (adjoint, tangents of the adjoint), each row
    dispatched once for all directions (lanes).  ``flag`` and ``adj`` come zeroed; ``tvals``
    and ``tadjs`` need not be (rows are cleared as the sweeps reach them)."""
    start = in_rows.min() if in_rows.shape[0] else top + 1
    seed_tangents(voff, tvals, flag, in_rows, tangents)
    status, row = tangent_sweep(code, ip, fp, voff, ipool, fpool, val, tvals, flag, start, top + 1)
    if status != DONE:
        return status, row
    for j in range(top + 1):
        state[j] &= 2
    adj[voff[out_row]] = 1.0
    zero_lanes(tadjs, voff, out_row)
    state[out_row] |= 1
    status, row = hvp_sweep(
        code, ip, fp, voff, rg, state, ipool, fpool, val, tvals, flag, adj, tadjs, top, ZERO
    )
    if status != DONE:
        return status, row
    gather_lanes(tadjs, voff, in_rows, state, result)
    return DONE, -1


def grad_into(code, ip, fp, voff, rg, state, ipool, fpool, val, adj, nrows, out_row, x, g):
    """One replay: x -> val[:x.size] (the input LEAF rows), forward sweep, backward sweep from
    the scalar ``out_row``; the gradient of the first g.size input values goes to g."""
    for j in range(x.shape[0]):
        val[j] = x[j]
    status, row = forward_sweep(code, ip, fp, voff, ipool, fpool, val, ZERO, nrows)
    if status != DONE:
        return status, row
    end = max(voff[out_row + 1], g.shape[0])
    for j in range(end):
        adj[j] = 0.0
    for j in range(out_row + 1):
        state[j] = 0
    adj[voff[out_row]] = 1.0
    state[out_row] = 1
    status, row = backward_sweep_all(
        code, ip, fp, voff, rg, state, ipool, fpool, val, adj, out_row, ZERO, ONE
    )
    if status != DONE:
        return status, row
    for j in range(g.shape[0]):
        g[j] = adj[j]
    return DONE, -1


def grad_batch(
    code, ip, fp, voff, rg, ipool, fpool, val0, nrows, out_row, X, G, values, fails, nthreads
):
    """grad_into for every row of X, in parallel over the batch (never over the tape): one
    contiguous chunk per thread, each with its own value/adjoint/state buffer, and the GIL
    released for the whole call (like every sweep here: other Python threads run meanwhile).
    fails[b] is -1 or the row that stopped item b."""
    nb = X.shape[0]
    nt = max(1, min(nb, nthreads))
    for c in prange(nt):
        b0 = c * nb // nt
        b1 = (c + 1) * nb // nt
        val = val0.copy()
        adj = np.zeros(val0.shape[0])
        state = np.zeros(code.shape[0], np.int8)
        for b in range(b0, b1):
            status, row = grad_into(
                code, ip, fp, voff, rg, state, ipool, fpool, val, adj, nrows, out_row, X[b], G[b]
            )
            fails[b] = -1 if status == DONE else row
            values[b] = val[voff[out_row]]


def replay_grad(arrays, x):
    """Gradient of a trace at the flat input ``x``, callable from user ``@njit`` code.

    ``arrays`` is ``tr.njit_grad[1]``; raises RetraceRequired when a guard fails (the trace's
    Python side names the source line: call ``tr.grad`` there)."""
    code, ip, fp, voff, rg, state, ipool, fpool, val, adj, meta = arrays
    if meta[3] != KERNELS_ID:
        raise RuntimeError(
            "tapegrad replay_grad: this compiled code comes from another tapegrad "
            "version (a stale Numba cache of your @njit function): delete the "
            "__pycache__ folder next to your code and run again"
        )
    g = np.empty(meta[2])
    status, row = grad_into(
        code, ip, fp, voff, rg, state, ipool, fpool, val, adj, meta[0], meta[1], x, g
    )
    if status == GUARD_FAILED:
        raise RetraceRequired(
            "tapegrad replay_grad: the input takes another branch than the "
            "recorded one; call tr.grad(x) from Python to see where"
        )
    if status != DONE:
        raise RuntimeError("tapegrad replay_grad: the trace holds a row that cannot be replayed")
    return g


# the drivers in the order they are written into sweeps.py, and the ones compiled parallel
KERNELS = (
    guard_holds,
    gather_rows,
    jacobian_sweeps,
    zero_lanes,
    gather_lanes,
    seed_tangents,
    jvp_sweeps,
    hessian_sweeps,
    grad_into,
    grad_batch,
    replay_grad,
)
PARALLEL = frozenset({"grad_batch"})


def fingerprint(spec_fingerprint: str) -> str:
    """The kernels' fingerprint: the op spec's and these drivers' source together."""
    h = hashlib.sha256(spec_fingerprint.encode())
    h.update(inspect.getsource(sys.modules[__name__]).encode())
    return h.hexdigest()[:16]
