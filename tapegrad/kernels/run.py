"""The compiled sweeps called on a tape: the one place that lays a tape's columns out as a
kernel's arguments, and hands them to ``loader.run`` (the compiled kernel, or its Python
stand-in while it compiles).

``t`` is a tape (``core.tape.Tape``) or anything with its columns: ``code``, ``ip``, ``fp``,
``voff``, ``rg``, ``state``, ``ipool``, ``fpool``, ``val``, ``adj`` (a trace has them too, with
its own value buffers).  Each function returns the sweep's ``(status, row)``; the callers act on
it (custom ops, freed graphs).  A trace replays many times on the same columns: it lays them
out once per thread (``replay_columns``) and passes those tuples on each call.
"""

from __future__ import annotations

import numpy as np

from . import loader


def backward(t, values, top: int, bottom: int = 0):
    """Adjoints from row ``top`` down to ``bottom`` (``values``: the tape's value buffer the
    sweep reads, as recorded)."""
    return loader.run(
        "backward_sweep",
        int(t.voff[top + 1] - t.voff[bottom]),
        *(t.code, t.ip, t.fp, t.voff, t.rg, t.state, t.ipool, t.fpool, values, t.adj),
        top,
        bottom,
        0,
    )


def replay_columns(t, val, adj, state):
    """The argument tuples of a trace's forward replay and of its reverse sweep / gradient
    (``val``, ``adj``, ``state``: one thread's buffers), laid out once and reused per call."""
    forward = (t.code, t.ip, t.fp, t.voff, t.ipool, t.fpool, val)
    reverse = (t.code, t.ip, t.fp, t.voff, t.rg, state, t.ipool, t.fpool, val, adj)
    return forward, reverse


def replay_forward(forward: tuple, start: int, stop: int):
    """Forward replay of rows ``start`` .. ``stop - 1`` on a trace's laid-out columns."""
    return loader.run("forward_sweep", forward[-1].shape[0], *forward, start, stop)


def replay_backward(reverse: tuple, top: int):
    """Reverse sweep from ``top`` on a trace's laid-out columns (every op in the sweep)."""
    return loader.run("backward_sweep_all", int(reverse[3][top + 1]), *reverse, top, 0, 1)


def replay_grad(reverse: tuple, nrows: int, out_row: int, x, g):
    """Forward replay at ``x`` and the gradient of scalar ``out_row`` into ``g``."""
    return loader.run("grad_into", reverse[8].shape[0], *reverse, nrows, out_row, x, g)


def hvp(t, values, tvals, flag, adj, tadjs, state, top: int):
    """Forward-over-reverse from ``top`` after ``tangent``: ``tadjs[l]`` of the inputs is
    H v_l (``state``, ``adj``: the reverse sweep's, seeded by the caller)."""
    return loader.run(
        "hvp_sweep",
        values.shape[0],
        *(t.code, t.ip, t.fp, t.voff, t.rg, state, t.ipool, t.fpool, values, tvals, flag),
        adj,
        tadjs,
        top,
        0,
    )


def grad_batch(t, values, nrows: int, out_row: int, X, G, out_values, fails, threads: int):
    """Gradients at each row of ``X`` into ``G`` (threads over the batch, each with buffers
    of its own; ``values``: the trace's value template)."""
    return loader.run(
        "grad_batch",
        X.shape[0] * values.shape[0],
        *(t.code, t.ip, t.fp, t.voff, t.rg, t.ipool, t.fpool, values),
        nrows,
        out_row,
        X,
        G,
        out_values,
        fails,
        threads,
    )


def tangent(t, values, tvals, flag, start: int, stop: int):
    """Tangents of rows ``start`` .. ``stop - 1`` in every lane of ``tvals``."""
    return loader.run(
        "tangent_sweep",
        tvals.size,
        *(t.code, t.ip, t.fp, t.voff, t.ipool, t.fpool, values, tvals, flag),
        start,
        stop,
    )


def jacobian(t, top: int, out_rows, seeds, in_rows, result):
    """One reverse sweep per row of ``seeds`` (reverse-mode Jacobian rows into ``result``)."""
    return loader.run(
        "jacobian_sweeps",
        int(t.voff[top + 1]) * seeds.shape[0],
        *(t.code, t.ip, t.fp, t.voff, t.rg, t.state, t.ipool, t.fpool, t.val, t.adj),
        top,
        out_rows,
        seeds,
        in_rows,
        result,
    )


def jvp_lanes(t, top: int, in_rows, directions, out_rows, result):
    """One tangent sweep with a lane per row of ``directions`` (forward-mode Jacobian)."""
    size = int(t.voff[top + 1])
    nl = directions.shape[0]
    return loader.run(
        "jvp_sweeps",
        size * nl,
        *(t.code, t.ip, t.fp, t.voff, t.ipool, t.fpool, t.val),
        np.empty((nl, size)),  # the sweep clears the rows it uses
        np.zeros(top + 1, np.int8),
        top,
        in_rows,
        directions,
        out_rows,
        result,
    )


def hessian_lanes(arrays, top: int, out_row: int, in_rows, directions, result):
    """Hessian-vector products of ``out_row`` along each row of ``directions``, over the
    columns ``arrays`` = (code, ip, fp, voff, rg, state, ipool, fpool, val) of a tape or a
    trace."""
    size = int(arrays[3][top + 1])
    nl = directions.shape[0]
    return loader.run(
        "hessian_sweeps",
        size * nl,
        *arrays,
        np.empty((nl, size)),  # the sweeps clear the rows they use
        np.zeros(top + 1, np.int8),
        np.zeros(size),
        np.empty((nl, size)),
        top,
        out_row,
        in_rows,
        directions,
        result,
    )
