"""Forward mode and forward-over-reverse on a recorded tape.

``tangent_values`` runs the generated ``tangent_sweep`` (compiled, numbers only): cost about
one forward pass.  ``tangent_graph`` walks the same rows in Python and evaluates each op's
JVP from the spec on Tensors, so the tangents are recorded on the tape and can be
differentiated again (nested transforms).  ``hessian_values`` runs the generated tangent and
``hvp_sweep`` sweeps once, with every direction as a lane (a row of the tangent buffers).

Rows the spec does not know: a custom ``Function`` row needs a ``jvp`` staticmethod (as
PyTorch's forward AD does); otherwise forward mode raises naming it.
"""

import numpy as np

from ..core import tape as T
from ..errors import ForwardModeError
from ..kernels import run as R
from ..kernels import sweeps as K
from . import higher as _higher


def _custom_error(t, row):
    payload = t.side.payloads.get(row)
    name = getattr(payload, "name", "a custom op")
    return ForwardModeError(
        f"forward mode (tg.jvp / tg.hvp / tg.hessian / tg.jacfwd) reached {name}, which "
        "declares no forward-mode rule: give the Function a `jvp(ctx, *tangents)` "
        "staticmethod (as in PyTorch's forward AD), or use reverse mode (tg.vjp, tg.jacrev)"
    )


def _custom_tangents(t, row, tval, flag):
    """Push tangents through a custom op's rows; returns the row the sweep resumes at."""
    payload = t.side.payloads.get(row)
    fn = getattr(payload, "jvp_values", None)
    if fn is None:
        raise _custom_error(t, row)
    return push_custom_tangents(payload, fn, tval, t.voff, flag)


def push_custom_tangents(payload, jvp, tval, voff, flag):
    """The tangents of a custom op's output rows from ``jvp`` (one flat tangent or None per
    input row in, one per output row out), written into ``tval`` with their ``flag``; returns
    the row past the op's rows (a trace's replay calls this too)."""
    ins = [tval[voff[r] : voff[r + 1]] if flag[r] else None for r in payload.input_rows]
    outs = jvp(ins)
    for r, v in zip(payload.output_rows, outs):
        if v is not None and r < flag.shape[0]:  # outputs above the sweep's top: unused
            tval[voff[r] : voff[r + 1]] = np.ravel(v)
            flag[r] = 1
    return payload.rows_end


def tangent_values(t, in_rows, tangents, out_rows):
    """Tangents of ``out_rows`` (flat arrays, or None for an output no input reaches) for
    tangents laid over ``in_rows`` (one flat array each)."""
    top = max(out_rows)
    val = t.val
    tvals = np.zeros((1, int(t.voff[top + 1])))
    tval = tvals[0]
    flag = np.zeros(top + 1, np.int8)
    voff = t.voff
    for r, v in zip(in_rows, tangents):
        if r <= top:
            tval[voff[r] : voff[r + 1]] += v
            flag[r] = 1
    start = min([r for r in in_rows if r <= top], default=top + 1)
    while start <= top:
        status, row = R.tangent(t, val, tvals, flag, start, top + 1)
        if status == K.DONE:
            break
        if status != K.HIT_CUSTOM:
            raise RuntimeError(
                f"tapegrad internal error: tangent sweep stopped with status "
                f"{status} at tape row {row}"
            )
        start = _custom_tangents(t, row, tval, flag)
    return [tval[voff[r] : voff[r + 1]].copy() if flag[r] else None for r in out_rows]


def tangent_graph(t, tangents, out_rows, start=0):
    """Tangents of ``out_rows`` as Tensors on the tape (differentiable in the primals and in
    the tangents); ``tangents`` maps input rows to tangent Tensors.  Rows below ``start`` are
    not visited (beyond the seeded ones)."""
    tan = dict(tangents)
    top = max(out_rows)
    start = max(start, min(tan, default=top + 1))
    for r in range(start, top + 1):
        code = t.op(r)
        if code <= T.FREED or code == T.GUARD or r in tangents:
            continue
        if code == T.CUSTOM:
            payload = t.side.payloads.get(r)
            fn = getattr(payload, "jvp_graph", None)
            if fn is None:
                raise _custom_error(t, r)
            payload.refuse_in_trace(t, "nested forward mode")
            if r == min(payload.output_rows):
                for row, v in zip(
                    payload.output_rows, fn([tan.get(q) for q in payload.input_rows])
                ):
                    if v is not None:
                        tan[row] = v
            continue
        v = _higher.jvp(t, r, tan.get)
        if v is not None:
            tan[r] = v
    return [tan.get(r) for r in out_rows]


# lanes per compiled call: bounds the (lanes x tape values) tangent buffers (~16 MB each)
LANE_BUDGET = 1 << 21


def _lane_blocks(ndir, size):
    step = max(1, min(ndir, LANE_BUDGET // max(size, 1)))
    return range(0, ndir, step), step


def hessian_values(t, out_row, in_rows, directions):
    """Rows of H @ directions.T for the scalar ``out_row`` of tape ``t``, or None when the
    tape holds rows the compiled sweeps hand back to Python (custom ops): the caller falls
    back."""
    state = t.state
    res = hessian_lanes(
        (t.code, t.ip, t.fp, t.voff, t.rg, state, t.ipool, t.fpool, t.val),
        out_row,
        in_rows,
        directions,
    )
    state[: out_row + 1] &= 2
    return res


def hessian_lanes(arrays, out_row, in_rows, directions):
    """Rows of H @ directions.T over the tape ``arrays`` (code, ip, fp, voff, rg, state, ipool,
    fpool, val): one compiled call per block of directions, each a tangent sweep and a
    forward-over-reverse sweep carrying every direction of the block as a lane.  None when a
    row needs Python (custom op, freed graph)."""
    voff = arrays[3]
    top = out_row
    ins = np.array(in_rows, np.int64)
    size = int(voff[top + 1])
    directions = np.ascontiguousarray(directions, dtype=np.float64)
    ndir = directions.shape[0]
    result = np.empty((ndir, directions.shape[1]))
    blocks, step = _lane_blocks(ndir, size)
    for r0 in blocks:
        block = directions[r0 : r0 + step]
        status, row = R.hessian_lanes(arrays, top, out_row, ins, block, result[r0 : r0 + step])
        if status in (K.HIT_CUSTOM, K.HIT_FREED):
            return None
        if status != K.DONE:
            raise RuntimeError(
                f"tapegrad internal error: hessian sweep stopped with status {status} at "
                f"tape row {row}"
            )
    return result


def jacobian_forward(t, in_rows, in_sizes, out_rows, out_sizes):
    """The (sum(out_sizes), sum(in_sizes)) Jacobian by forward mode: one tangent sweep per
    input element, all in one compiled call (custom ops: one Python-driven sweep each)."""
    n, m = int(sum(in_sizes)), int(sum(out_sizes))
    J = np.zeros((m, n))
    top = max(out_rows)
    cols = np.concatenate([[0], np.cumsum(in_sizes)]).astype(int)
    used = [k for k, r in enumerate(in_rows) if 0 <= r <= top]
    if not used or not n:
        return J
    ucols = np.concatenate([np.arange(cols[k], cols[k + 1]) for k in used])
    rows = np.array([in_rows[k] for k in used], np.int64)
    res = np.zeros((ucols.size, m))
    size = int(t.voff[top + 1])
    eye = np.eye(ucols.size)
    blocks, step = _lane_blocks(ucols.size, size)
    for r0 in blocks:
        block = eye[r0 : r0 + step]
        status, row = R.jvp_lanes(
            t, top, rows, block, np.array(out_rows, np.int64), res[r0 : r0 + step]
        )
        if status != K.DONE:
            break
    if status == K.DONE:
        J[:, ucols] = res.T
        return J
    if status != K.HIT_CUSTOM:
        raise RuntimeError(
            f"tapegrad internal error: tangent sweeps stopped with status "
            f"{status} at tape row {row}"
        )
    starts = np.concatenate([[0], np.cumsum(out_sizes)]).astype(int)
    for j, col in enumerate(ucols):
        seeds = [
            np.eye(ucols.size)[j][k0 : k0 + in_sizes[k]]
            for k, k0 in zip(used, np.concatenate([[0], np.cumsum([in_sizes[k] for k in used])]))
        ]
        outs = tangent_values(t, [in_rows[k] for k in used], seeds, out_rows)
        for q, v in enumerate(outs):
            if v is not None:
                J[starts[q] : starts[q + 1], col] = v
    return J
