"""The compiled sweeps called on a tape: the one place that lays a tape's columns out as a
kernel's arguments, and hands them to ``loader.run`` (the compiled kernel, or its Python
stand-in while it compiles).

``t`` is a tape (``core.tape.Tape``) or anything with its columns: ``code``, ``ip``, ``fp``,
``voff``, ``rg``, ``state``, ``ipool``, ``fpool``, ``val``, ``adj``.  Each function returns
the sweep's ``(status, row)``; the callers act on it (custom ops, freed graphs).
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
