"""The Wengert tape: flat numpy columns, one row per recorded value, grown by doubling.

Python writes rows through memoryviews of the columns (an element store through a memoryview
costs ~30 ns, half of numpy's ``arr[i] = x``); the compiled kernels read the numpy arrays.

Lifetime: a backward without ``retain_graph`` marks the rows it swept as freed.  When no handle
that the user still holds points at an unfreed row, the tape is reset to empty: its arrays move
to a fresh Tape object and the old one is retired (``alive = False``), so "is this handle's row
still valid" is the single test ``x._tape is tape``.  Handles keep their own value, so they stay
readable, and a retired handle that is used again enters the new tape as a constant (a leaf) or
as a FREED placeholder that raises if a backward tries to pass through it.
"""
import sys
import threading

import numpy as np

from . import _kernels as K

_OP_NAMES = K.KERNEL_OPS
LEAF, CONST, FREED, CUSTOM = 0, 1, 2, 3
GUARD = K.KERNEL_OPS.index("GUARD")
MAX_ROWS = 1 << 27   # operand rows are packed into 28 bits of the code column


class Tape:
    """Columns of the Wengert list plus the flat value/adjoint buffers."""

    __slots__ = ("owner", "enabled", "alive", "n", "handles", "leaf_rows", "extras", "cap",
                 "code", "ip", "fp", "rg", "state", "voff", "val", "adj", "vcap", "np", "ipool",
                 "nf", "fpool", "code_m", "ip_m", "fp_m", "rg_m", "voff_m", "val_m",
                 "__weakref__")

    def __init__(self, rows=1024, values=4096):
        self.owner = threading.get_ident()
        self.enabled = True      # grad mode of the owning thread
        self.alive = True
        self.n = 0
        self.handles = []        # handles[i]: the Tensor of row i (values, leaves, custom ops)
        self.leaf_rows = []      # rows of LEAF entries, for accumulating .grad
        self.extras = {}         # row -> Python payload (custom Function ctx, guard info)
        self._alloc_rows(rows)
        self._alloc_values(values)
        self.np = 0              # used length of ipool
        self.ipool = np.zeros(1024, np.int64)
        self.nf = 0
        self.fpool = np.zeros(64, np.float64)

    # ---- storage -------------------------------------------------------------------------
    def _alloc_rows(self, cap, old=None):
        self.cap = cap
        if cap > MAX_ROWS:
            raise RuntimeError(f"tape is full: {MAX_ROWS} rows is the most one tape holds; "
                               "call backward() (or use tg.no_grad()) to free recorded graphs")
        cols = dict(code=np.int64, ip=np.int64, fp=np.float64, rg=np.int8, state=np.int8)
        for name, dt in cols.items():
            arr = np.ones(cap, dt) if name == "rg" else np.zeros(cap, dt)
            if old is not None:
                arr[:self.n] = getattr(self, name)[:self.n]
            setattr(self, name, arr)
        voff = np.zeros(cap + 1, np.int64)
        if old is not None:
            voff[:self.n + 1] = self.voff[:self.n + 1]
        self.voff = voff
        self._views()

    def _alloc_values(self, cap, keep=0):
        val = np.zeros(cap)
        adj = np.zeros(cap)
        if keep:
            val[:keep] = self.val[:keep]
        self.val = val
        self.adj = adj
        self.vcap = cap
        self._views()

    def _views(self):
        if not hasattr(self, "val") or not hasattr(self, "code"):
            return
        self.code_m = memoryview(self.code)
        self.ip_m = memoryview(self.ip)
        self.fp_m = memoryview(self.fp)
        self.rg_m = memoryview(self.rg)
        self.voff_m = memoryview(self.voff)
        self.val_m = memoryview(self.val)

    def grow_rows(self):
        self._alloc_rows(self.cap * 2, old=True)

    def reserve_values(self, size):
        """Make room for ``size`` more values after the last row."""
        end = self.voff[self.n]
        if end + size > self.vcap:
            cap = self.vcap
            while cap < end + size:
                cap *= 2
            self._alloc_values(cap, keep=end)

    def add_ints(self, values):
        """Append integer parameters to ipool; returns their start."""
        values = np.asarray(values, np.int64).ravel()
        start = self.np
        end = start + values.size
        if end > self.ipool.size:
            cap = self.ipool.size
            while cap < end:
                cap *= 2
            pool = np.zeros(cap, np.int64)
            pool[:start] = self.ipool[:start]
            self.ipool = pool
        self.ipool[start:end] = values
        self.np = end
        return start

    def add_float(self, value):
        if self.nf == self.fpool.size:
            pool = np.zeros(self.nf * 2)
            pool[:self.nf] = self.fpool
            self.fpool = pool
        self.fpool[self.nf] = value
        self.nf += 1
        return self.nf - 1

    # ---- rows ------------------------------------------------------------------------------
    def push(self, code, ra, rb, value, handle, rg=1, fp=0.0, ip=0):
        """Append one row holding ``value`` (a float or an ndarray); returns the row."""
        i = self.n
        if i == self.cap:
            self.grow_rows()
        off = self.voff_m[i]
        if value.__class__ is float:
            if off + 1 > self.vcap:
                self.reserve_values(1)
            self.val_m[off] = value
            self.voff_m[i + 1] = off + 1
        else:
            size = value.size
            if off + size > self.vcap:
                self.reserve_values(size)
            self.val[off:off + size] = value.ravel()
            self.voff_m[i + 1] = off + size
        self.code_m[i] = code | (ra + 1) << 8 | (rb + 1) << 36
        self.fp_m[i] = fp
        self.ip_m[i] = ip
        if not rg:
            self.rg_m[i] = 0
        self.handles.append(handle)
        self.n = i + 1
        return i

    # ---- reading rows ---------------------------------------------------------------------
    def op(self, row):
        return int(self.code[row]) & 255

    def operands(self, row):
        w = int(self.code[row])
        return ((w >> 8) & 0xFFFFFFF) - 1, (w >> 36) - 1

    def ops(self, n=None):
        """Op codes of rows [0, n) as an array."""
        return self.code[:self.n if n is None else n] & 255

    def value(self, row):
        lo, hi = self.voff[row], self.voff[row + 1]
        return self.val[lo:hi]

    def gradient(self, row):
        lo, hi = self.voff[row], self.voff[row + 1]
        return self.adj[lo:hi]

    # ---- lifetime ----------------------------------------------------------------------------
    def held_unfreed_row(self):
        """True when a handle the user still holds points at a row no backward has freed."""
        n = self.n
        candidates = np.flatnonzero(((self.state[:n] & 2) == 0) & (self.ops(n) > CONST))
        handles = self.handles
        # one reference from ``handles`` and one from getrefcount's own argument
        for i in candidates[::-1]:
            if sys.getrefcount(handles[i]) > 2:
                return True
        return False

    def maybe_reset(self):
        """Reset when nothing the user holds can reach a row; returns the live tape."""
        if self.n and not self.held_unfreed_row():
            return self.reset()
        return self

    def reset(self):
        """Empty the tape: a fresh Tape object takes over the arrays; this one is retired."""
        new = Tape.__new__(Tape)
        for name in Tape.__slots__[:-1]:
            setattr(new, name, getattr(self, name))
        n = self.n
        new.n = 0
        new.np = 0
        new.nf = 0
        new.handles = []
        new.leaf_rows = []
        new.extras = {}
        new.state[:n] = 0
        new.rg[:n] = 1      # rows default to needing grad; constants clear it when pushed
        new.fp[:n] = 0.0    # the hot path skips writing a zero parameter
        for name in Tape.__slots__[7:-1]:   # drop the arrays; keep owner/enabled/alive/n...
            delattr(self, name)
        self.handles = []
        self.alive = False
        self.owner = new.owner
        self.enabled = True
        if STATE.__dict__.get("tape") is self:
            STATE.tape = new
        self.n = 0
        return new

    @property
    def nbytes(self):
        """Bytes of the live part of the tape: columns, pools, values and adjoints."""
        per_row = sum(getattr(self, c).itemsize for c in ("code", "ip", "fp", "rg", "state",
                                                          "voff"))
        return int(self.n * per_row + self.voff[self.n] * 16 + self.np * 8 + self.nf * 8)

    def __len__(self):
        return self.n


class _ThreadState(threading.local):
    """Per-thread recording state: the tape (which also carries the grad-mode flag)."""

    def __init__(self):
        self.tape = Tape()

    @property
    def enabled(self):
        return self.tape.enabled

    @enabled.setter
    def enabled(self, flag):
        self.tape.enabled = flag


STATE = _ThreadState()


def current_tape():
    """The recording tape of the calling thread."""
    return STATE.tape
