"""What a reverse sweep checks and runs in Python besides the compiled sweep (the engine's
``ReverseSweep.run`` calls these when the tape has side tables or anomaly mode is on):

- hooks on non-leaf rows (``t.side.hooks[row]``, ``run_hooks``): the sweep stops just above
  each hooked row, so that row's adjoint is complete; the hooks run in registration order and
  what they return replaces the adjoint that flows on.
- versions (``t.side.dirty``, written by ``_methods.bump_version``): after the sweep, a
  reached row recorded before an in-place overwrite that needs the overwritten value for its
  backward (PyTorch's saved tensors, ``SAVES`` below) raises the in-place RuntimeError.
- anomaly mode: the tape's checker (``t.anomaly``) scans the adjoints of reached rows.
"""

import threading

import numpy as np

from ..ops.spec import SAVES
from ..core import tape as T
from .graph import Node
from ..core.tape_inspect import row_shape
from ..core.tensor import TensorBase as Tensor, result

# Values an op's backward needs (PyTorch's saved tensors), derived from the op spec: per
# operand a, operand b and the output: 1 always, 2 only when the *other* operand needs a gradient.
_NEED = np.array(SAVES, np.int8)


# ---- user code run by a sweep ------------------------------------------------------------------


class _Reentry(threading.local):
    """The backward sweeps running on this thread (``spans``: (tape, bottom, top), innermost
    last) and the user code they are running (``calls``: ``user_code`` frames)."""

    def __init__(self):
        self.spans = []
        self.calls = []


REENTRY = _Reentry()


class user_code:
    """``with user_code():`` around user code that a backward sweep runs (a hook, a custom
    Function's backward).  That code may start a backward of its own on the same tape (a hook
    calling ``backward``, ``autograd.grad``, ``tg.grad``, ``tg.jacobian``): it would clear the
    reached marks and overwrite the adjoints of the rows the running sweep has yet to finish,
    which would then hand out wrong or missing gradients.  So the first such backward saves
    them (``save_running_sweeps``) and they are put back here when the user code returns; the
    rows that backward freed stay freed (a graph both share was freed by it, as in PyTorch).
    Without a backward inside, it costs nothing more."""

    __slots__ = ("t", "bottom", "top", "saved")

    def __enter__(self):
        spans = REENTRY.spans
        self.t, self.bottom, self.top = spans[-1] if spans else (None, 0, -1)
        self.saved = None
        REENTRY.calls.append(self)
        return self

    def __exit__(self, *exc):
        calls = REENTRY.calls
        if calls and calls[-1] is self:
            calls.pop()
        elif self in calls:  # (a frame an interrupt left behind)
            del calls[calls.index(self) :]
        if self.saved is not None:
            self._restore()
        return False

    def save(self):
        t, b, top = self.t, self.bottom, self.top
        voff = t.voff
        state = t.state
        self.saved = (state[b : top + 1].copy(), t.adj[voff[b] : voff[top + 1]].copy())
        state[b : top + 1] &= 2  # the new backward starts from a clean slate

    def _restore(self):
        t, b, top = self.t, self.bottom, self.top
        states, adjs = self.saved
        self.saved = None
        if not t.alive:
            raise RuntimeError(
                "backward: the tape of the running backward was released while a hook or a "
                "Function's backward started another backward on it; keep the outputs of "
                "that backward alive, or call it after the running backward returns"
            )
        voff, state = t.voff, t.state
        state[b : top + 1] = states | (state[b : top + 1] & 2)
        t.adj[voff[b] : voff[top + 1]] = adjs


def save_running_sweeps(t):
    """A backward starts on tape ``t`` inside user code a sweep of ``t`` runs: save that
    sweep's reached marks and adjoints (once per frame) before they are overwritten."""
    for frame in REENTRY.calls:
        if frame.t is t and frame.saved is None and frame.top >= frame.bottom:
            frame.save()


def run_hooks(t, r, fns):
    """Run ``fns`` on row r's adjoint (registration order); write back what they return, or
    their argument when they return None: a hook that changes its argument in place
    (``g.mul_(2)``) changes the gradient, as in PyTorch."""
    lo, hi = t.voff[r], t.voff[r + 1]
    shape = row_shape(t, r)
    g = result(t.adj[lo:hi].reshape(shape).copy())
    for fn in list(fns):
        arg = Tensor._const(g)
        with user_code():  # (a backward it starts leaves this sweep's rows as they were)
            out = fn(arg)
        if out is None:
            out = arg  # as the hook left it
        ov = np.asarray(out._v if isinstance(out, Tensor) else out, dtype=np.float64)
        if ov.shape != tuple(shape) and not (ov.size == 1 and hi - lo == 1):
            raise RuntimeError(
                f"hook {getattr(fn, '__name__', fn)!s} returned a gradient of "
                f"shape {ov.shape} for a tensor of shape {tuple(shape)}"
            )
        g = result(ov.reshape(shape).copy())
    t.adj[lo:hi] = np.ravel(g)


# ---- versions -----------------------------------------------------------------------------------
def check_versions(t, top, bottom):
    """Raise if a reached row needs a value that was overwritten in place after it was read."""
    stale = {}
    for row, at, ref, ver in t.side.dirty:
        if bottom <= row <= top and at > row:
            if row not in stale or at < stale[row][0]:
                stale[row] = (at, ref, ver)
    if not stale:
        return
    lo = min(stale)
    hi = min(top, max(a for a, _, _ in stale.values()) - 1)
    if hi < lo:
        return
    rows = np.arange(lo, hi + 1)
    rows = rows[(t.state[lo : hi + 1] & 1) != 0]
    w = t.code[rows]
    ops = w & 255
    need = _NEED[ops]
    keep = need.any(axis=1)
    rows, w, ops, need = rows[keep], w[keep], ops[keep], need[keep]
    if not rows.size:
        return
    ra = ((w >> 8) & 0xFFFFFFF) - 1
    rb = (w >> 36) - 1
    at = np.full(hi + 1, -1, np.int64)
    for row, (a, _, _) in stale.items():
        if row <= hi:
            at[row] = a
    rga = t.rg[np.maximum(ra, 0)] != 0
    rgb = t.rg[np.maximum(rb, 0)] != 0
    need_a = (need[:, 0] == 1) | ((need[:, 0] == 2) & rgb)
    need_b = (need[:, 1] == 1) | ((need[:, 1] == 2) & rga)
    bad_a = need_a & (ra >= 0) & (at[np.clip(ra, 0, hi)] > rows) & (ra <= hi)
    bad_b = need_b & (rb >= 0) & (at[np.clip(rb, 0, hi)] > rows) & (rb <= hi)
    bad_o = (need[:, 2] != 0) & (at[rows] > rows)
    bad = bad_a | bad_b | bad_o
    if not bad.any():
        return
    j = int(np.flatnonzero(bad)[-1])  # the first one the sweep met
    reader = int(rows[j])
    victim = reader if bad_o[j] else int(ra[j] if bad_a[j] else rb[j])
    _, ref, ver = stale[victim]
    raise version_error(t, victim, ref(), ver, Node(t, reader).name())


def version_error(t, row, handle, expected, reader):
    """The PyTorch-style RuntimeError for a value modified in place after it was saved."""
    code = t.op(row)
    if handle is not None:
        shape, now = tuple(handle.shape), handle._version
    else:
        shape, now = row_shape(t, row), expected + 1
    if code == T.LEAF:
        what = "which is a leaf tensor"
    elif code <= T.FREED:
        what = "which is a constant"
    else:
        what = f"which is output 0 of {Node(t, row).name()}"
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [float64 {list(shape)}], {what}, is at version {now}; expected "
        f"version {expected} instead; the backward of {reader} needs it. "
        "Hint: compute on a copy (x.clone()) instead of modifying x in place, or modify it "
        "only after the backward pass."
    )
