"""``tg.detect_anomaly()``: find the op that first produced a nan/inf, with its source line.

While active (a context manager or decorator, nestable, per thread like PyTorch's), the
thread's tape carries a checker (``t.anomaly``):
- the tape sends every recorded row through ``Tape.push`` (its ``fastcap`` is 0, so the inline
  fast paths of ``record_unary``/``record_binary`` step aside) and ``push`` tells the checker,
  which notes the user's source line of the row (``t.side.lines[row]``, the first frame
  outside tapegrad) and, with ``check_forward``, raises when an op's value is not finite;
- after each backward sweep the checker scans the adjoints of the reached rows: the highest
  row whose adjoint is not finite got it from one of the rows that read it; that row's
  backward (isolated when several rows read it) is named in the RuntimeError with its line.
"""

import functools
import linecache
import os
import sys

import numpy as np

from ..core import tape as T
from ..core.tape_inspect import operand_rows, row_name
from ..core.tensor import STATE
from .engine import ReverseSweep

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tapegrad/


class _Checker:
    """What anomaly mode does on a tape: called by ``Tape.push`` and by the backward."""

    def __init__(self, check_forward):
        self.check_forward = check_forward

    def recorded(self, t, row, code, value):
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename.startswith(_PKG):
            f = f.f_back
        if f is not None:
            t.side.lines[row] = (f.f_code.co_filename, f.f_lineno)
        op = code & 255
        if self.check_forward and op > T.FREED and op != T.GUARD and not np.all(np.isfinite(value)):
            kind = "nan" if np.any(np.isnan(value)) else "inf"
            name = "CustomBackward" if op == T.CUSTOM else _name(t, row)
            raise RuntimeError(
                f"Function '{name}' (tape row {row}) produced {kind} values in "
                f"its forward output{where(t, row)}\n(detect_anomaly("
                "check_forward=False) checks gradients only)"
            )

    @staticmethod
    def check_backward(t, top, bottom):
        check_backward(t, top, bottom)

    @staticmethod
    def locate_division(t, top, bottom):
        locate_division(t, top, bottom)


def _set(checker):
    """Install ``checker`` (or None) on this thread's tape; returns the previous one."""
    t = STATE.tape
    prev = t.anomaly
    t.anomaly = checker
    t.set_fast_path()
    return prev


class detect_anomaly:
    """Context manager / decorator: raise at the first op whose forward value
    (``check_forward=True``) or backward gradient is not finite, naming the op, its tape row
    and the source line that recorded it.  Slows recording; for debugging.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 0.0], requires_grad=True)
        >>> with tg.detect_anomaly():      # d sqrt(x)/dx is inf at 0
        ...     tg.sqrt(x).sum().backward()
        Traceback (most recent call last):
        ...
        RuntimeError: Function 'SqrtBackward0' (tape row ...) returned inf values in its ...
        >>> with tg.detect_anomaly():
        ...     tg.is_anomaly_enabled()
        True
    """

    def __init__(self, check_nan=True, check_forward=True):
        self.check = bool(check_nan)
        self.check_forward = bool(check_forward)

    def __enter__(self):
        if self.check:
            self.prev = _set(_Checker(self.check_forward))
        return self

    def __exit__(self, *exc):
        if self.check:
            _set(self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check, self.check_forward):
                return fn(*args, **kwargs)

        return wrapper


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on for the calling thread (inside ``detect_anomaly()``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.is_anomaly_enabled()
        False
        >>> with tg.detect_anomaly():
        ...     tg.is_anomaly_enabled()
        True
    """
    return STATE.tape.anomaly is not None


def _name(t, row):
    return row_name(t, row) if t.op(row) > T.CONST else T._OP_NAMES[t.op(row)].lower()


def where(t, row):
    """ ", recorded at file:line:\\n    source" for a row noted in anomaly mode (else "")."""
    loc = t.side.lines.get(row)
    if loc is None:
        return ""
    src = linecache.getline(loc[0], loc[1]).strip()
    return f", recorded at {loc[0]}:{loc[1]}" + (f":\n    {src}" if src else "")


def check_backward(t, top, bottom):
    """Raise naming the op whose backward first produced a non-finite adjoint."""
    voff = t.voff
    lo, hi = int(voff[bottom]), int(voff[top + 1])
    bad = np.flatnonzero(~np.isfinite(t.adj[lo:hi]))
    if not bad.size:
        return
    rows = np.searchsorted(voff[: top + 2], bad + lo, side="right") - 1
    rows = rows[(t.state[rows] & 1) != 0]
    if not rows.size:
        return
    h = int(rows.max())
    readers = [c for c in range(top, h, -1) if t.state[c] & 1 and h in operand_rows(t, c)]
    culprit = readers[0] if len(readers) == 1 else _isolate(t, h, readers)
    g = t.gradient(h)
    kind = "nan" if np.any(np.isnan(g)) else "inf"
    if culprit is None:
        raise RuntimeError(
            f"the gradient reaching tape row {h} ({_name(t, h)}) has {kind} "
            f"values and no op above it produced them (a non-finite seed or "
            f"hook){where(t, h)}"
        )
    raise RuntimeError(
        f"Function '{_name(t, culprit)}' (tape row {culprit}) returned {kind} "
        f"values in its gradient for tape row {h} ({_name(t, h)})"
        f"{where(t, culprit)}"
    )


def _alone(t, c):
    """Run row c's backward step on zeroed operand adjoints; returns (operand rows, their
    fresh adjoints, the error it raised or None); the adjoints are put back afterwards."""
    saved = [(r, t.gradient(r).copy()) for r in operand_rows(t, c)]
    try:
        for r, _ in saved:
            t.gradient(r)[:] = 0.0
        try:
            ReverseSweep(t).step(c, c)
            err = None
        except ZeroDivisionError as e:
            err = e
        return {r: t.gradient(r).copy() for r, _ in saved}, err
    finally:
        for r, v in saved:
            t.gradient(r)[:] = v


def locate_division(t, top, bottom):
    """The compiled sweep divided by zero: name the first reached row whose step does."""
    for c in range(top, bottom - 1, -1):
        if t.state[c] & 1 and t.op(c) > T.FREED and t.op(c) != T.CUSTOM:
            if _alone(t, c)[1] is not None:
                raise RuntimeError(
                    f"Function '{_name(t, c)}' (tape row {c}) divided by zero in "
                    f"its backward (its gradient is not finite){where(t, c)}"
                )


def _isolate(t, h, readers):
    """Of several rows reading row h, the first (sweep order) whose own backward step puts a
    non-finite value into h's adjoint: each is re-run alone on zeroed operand adjoints."""
    if not readers:
        return None
    for c in readers:
        if t.op(c) != T.CUSTOM:
            fresh, err = _alone(t, c)
            if err is not None or not np.all(np.isfinite(fresh[h])):
                return c
    customs = [c for c in readers if t.op(c) == T.CUSTOM]
    return customs[0] if customs else readers[0]
