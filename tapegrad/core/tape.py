"""The Wengert tape: flat numpy columns, one row per recorded value, grown by doubling.

Recording an elementwise op on a float or a small array only appends to three Python lists
(``pending``: packed code, value, float parameter); an append costs ~20 ns where a store into
a numpy column costs ~65 ns.  Every read
of a column (``t.code``, ``t.val``, ``t.voff``, ``t.fp``, and everything built on them: the
kernels, inspection, replay) goes through a property that first flushes the pending rows in
one vectorised step, so nothing can see a stale tape.  Array ops write their rows directly.

Lazy rows: an array of LAZY_MIN or more elements is not copied when its row is pushed; the
row reserves its place in the buffers and ``lazy[row]`` holds the array itself.  It is written
when an op whose backward reads it is recorded (the op table's ``reads``), when the array is
about to change in place, or when anything reads ``t.val``.  So parameters, input batches and
broadcast biases that only feed matmuls and additions are never copied.

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

from ..ops.spec import C, NAMES, READS
from ..ops.structural import SMALL_MATMUL

_OP_NAMES = NAMES
LEAF, CONST, FREED, CUSTOM, GUARD = C.LEAF, C.CONST, C.FREED, C.CUSTOM, C.GUARD
MATMUL = C.MATMUL
CLIP = C.CLIP
MAX_ROWS = 1 << 27   # operand rows are packed into 28 bits of the code column
LAZY_MIN = 4096      # arrays this large enter the tape lazily (see above)


class Tape:
    """Columns of the Wengert list plus the flat value/adjoint buffers.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.sin(x).sum()
        >>> t = tg.current_tape()
        >>> isinstance(t, tg.Tape), t.stats()["by_op"]["SIN"]["count"] >= 1
        (True, True)
    """

    __slots__ = ("owner", "enabled", "alive", "n", "handles", "leaf_rows", "extras", "cap",
                 "_code", "ip", "_fp", "rg", "state", "_voff", "_val", "adj", "vcap", "np",
                 "ipool", "nf", "fpool", "pc", "pv", "pf", "parr", "nsync", "lazy", "fastcap",
                 "anomaly", "__weakref__")
    ARRAYS = ("_code", "ip", "_fp", "rg", "state", "_voff", "_val", "adj", "ipool", "fpool")
    READS = READS   # per op code, what its backward reads (derived from the op spec)

    def __init__(self, rows=1024, values=4096):
        self.owner = threading.get_ident()
        self.enabled = True      # grad mode of the owning thread
        self.alive = True
        self.n = 0               # rows recorded, pending ones included
        self.nsync = 0           # rows [0, nsync) are in the numpy columns
        self.pc, self.pv, self.pf = [], [], []   # pending rows: code word, value, fp
        self.parr = False        # some pending values are (small) arrays, not floats
        self.handles = []        # handles[i]: the Tensor of row i (values, leaves, custom ops)
        self.leaf_rows = []      # rows of LEAF entries, for accumulating .grad
        self.extras = {}         # row -> Python payload (custom Function ctx, guard info)
        self.lazy = {}           # row -> array not yet copied into ``val`` (see module doc)
        self.anomaly = None      # anomaly mode of the owning thread: its checker, or None
        self.cap = 0
        self._alloc_rows(rows)
        self._alloc_values(values)
        self.np = 1              # used length of ipool (entry 0 unused: ip == 0 means none)
        self.ipool = np.zeros(1024, np.int64)
        self.nf = 1              # likewise for fpool
        self.fpool = np.zeros(64, np.float64)

    # ---- columns (reading one flushes pending rows first) -----------------------------------
    @property
    def code(self):
        if self.pc:
            self.sync()
        return self._code

    @property
    def val(self):
        """The value buffer with every row written (lazy rows are copied in first)."""
        if self.pc:
            self.sync()
        if self.lazy:
            for r in list(self.lazy):
                self.materialize(r)
        return self._val

    def materialize(self, row):
        """Copy lazy row ``row`` into the value buffer (no-op when it is already there)."""
        v = self.lazy.pop(row, None)
        if v is not None:
            lo = self._voff[row]
            self._val[lo:lo + v.size] = v.reshape(-1)

    def need(self, code, ra, rb, ip=0):
        """Write the lazy operands that op ``code`` reads in its backward."""
        reads = self.READS[code]
        if code == MATMUL and int(np.prod(self.ipool[ip:ip + 4])) > SMALL_MATMUL:
            return  # large matmuls run in numpy, which reads lazy arrays directly
        if "a" in reads and ra in self.lazy:
            self.materialize(ra)
        if "b" in reads and rb in self.lazy:
            self.materialize(rb)
        if "c" in reads:
            self.materialize(int(self.ipool[ip]))

    def row_value(self, row):
        """Row ``row``'s value, flat, from the buffer or its lazy array."""
        v = self.lazy.get(row)
        if v is not None:
            return v.reshape(-1)
        lo = self.voff[row]
        return self._val[lo:self._voff[row + 1]]

    @property
    def voff(self):
        if self.pc:
            self.sync()
        return self._voff

    @property
    def fp(self):
        if self.pc:
            self.sync()
        return self._fp

    def sync(self):
        """Move pending rows into the numpy columns (one vectorised write per column).

        Interrupt safety: a row is published by the store of ``n`` (after its handle and
        pending entries are appended), pending rows are retired by the store of ``nsync``
        (after the columns are written, before the lists are cleared).  So the lists are
        never shorter than ``n - nsync``; anything longer is a torn row (a KeyboardInterrupt
        between the appends) and is dropped here."""
        s = self.nsync
        k = self.n - s
        if len(self.pc) != k or len(self.pv) != k or len(self.pf) != k \
                or len(self.handles) != self.n:
            self.drop_torn()
            s = self.nsync
            k = self.n - s
        if not k:
            return
        while s + k > self.cap:
            self._alloc_rows(self.cap * 2, keep=s)
        off = int(self._voff[s])
        pv = self.pv
        if self.parr:   # mixed sizes: offsets from the sizes, values concatenated
            sizes = np.fromiter((1 if v.__class__ is float else v.size for v in pv),
                                np.int64, k)
            ends = off + np.cumsum(sizes)
            end = int(ends[-1])
            if end > self.vcap:
                self._reserve(off, end - off)
            self._val[off:end] = np.concatenate([np.ravel(v) for v in pv])
            self._voff[s + 1:s + k + 1] = ends
        else:
            if off + k > self.vcap:
                self._reserve(off, k)
            self._val[off:off + k] = pv
            self._voff[s + 1:s + k + 1] = np.arange(off + 1, off + k + 1)
        self._code[s:s + k] = self.pc
        self._fp[s:s + k] = self.pf
        self.nsync = s + k    # publish: from here on the lists hold no pending row
        pv.clear()
        self.pf.clear()
        self.pc.clear()       # last: a non-empty pc is what makes readers call sync
        self.parr = False

    def drop_torn(self):
        """Drop what an interrupted append or sync left beyond the published rows."""
        n = self.n
        if self.nsync > n:
            self.nsync = n
        k = n - self.nsync
        # pc after pv/pf (a non-empty pc triggers sync), handles last (the record fast path
        # checks len(handles) == n): an interrupt in here is caught by the next read
        del self.pv[k:]
        del self.pf[k:]
        del self.pc[k:]
        del self.handles[n:]

    # ---- storage -------------------------------------------------------------------------
    def _alloc_rows(self, cap, keep=0):
        if cap > MAX_ROWS:
            raise RuntimeError(f"tape is full: {MAX_ROWS} rows is the most one tape holds; "
                               "call backward() (or use tg.no_grad()) to free recorded graphs")
        for name, dt in (("_code", np.int64), ("ip", np.int64), ("_fp", np.float64),
                         ("rg", np.int8), ("state", np.int8)):
            arr = np.ones(cap, dt) if name == "rg" else np.zeros(cap, dt)
            if keep:
                arr[:keep] = getattr(self, name)[:keep]
            setattr(self, name, arr)
        voff = np.zeros(cap + 1, np.int64)
        if keep:
            voff[:keep + 1] = self._voff[:keep + 1]
        self._voff = voff
        self.cap = cap
        self.set_fast_path()

    def set_fast_path(self):
        """Rows below ``fastcap`` may be recorded by the inline fast paths of
        ``record_unary``/``record_binary``; anomaly mode sets it to 0 so every row goes
        through ``push`` (where its checker sees it) at no cost to the fast path."""
        self.fastcap = self.cap if self.anomaly is None else 0

    def _alloc_values(self, cap, keep=0):
        val = np.zeros(cap)
        if keep:
            val[:keep] = self._val[:keep]
        self._val = val
        self.adj = np.zeros(cap)
        self.vcap = cap

    def grow_rows(self):
        self.sync()
        self._alloc_rows(self.cap * 2, keep=self.n)

    def _reserve(self, end, size):
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
        if self.pc or len(self.handles) != self.n:
            self.sync()
        i = self.n
        if i == self.cap:
            self.grow_rows()
        off = int(self._voff[i])
        size = 1 if value.__class__ is float else value.size
        if off + size > self.vcap:
            self._reserve(off, size)
        if size == 1 and value.__class__ is float:
            self._val[off] = value
        elif size >= LAZY_MIN and "o" not in self.READS[code]:
            self.lazy[i] = value
        else:
            self._val[off:off + size] = value.reshape(-1)
        self._voff[i + 1] = off + size
        self._code[i] = code | (ra + 1) << 8 | (rb + 1) << 36
        self._fp[i] = fp
        self.ip[i] = ip
        if not rg:
            self.rg[i] = 0
        self.handles.append(handle)
        self.nsync = i + 1    # an interrupt here leaves nsync > n: drop_torn undoes it
        self.n = i + 1        # publish
        if self.anomaly is not None:
            self.anomaly.recorded(self, i, code, value)
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
        if self.pc:
            self.sync()
        self.materialize(row)
        return self._val[self._voff[row]:self._voff[row + 1]]

    def gradient(self, row):
        lo, hi = self.voff[row], self.voff[row + 1]
        return self.adj[lo:hi]

    # ---- lifetime ----------------------------------------------------------------------------
    def last_held_row(self):
        """The highest row that a handle the user still holds needs for a future backward:
        an unfreed op row whose handle is referenced from outside the tape (-1 if none)."""
        n = self.n
        candidates = np.flatnonzero(((self.state[:n] & 2) == 0) & (self.ops(n) > CONST))
        handles = self.handles
        # one reference from ``handles`` and one from getrefcount's own argument
        for i in candidates[::-1]:
            if sys.getrefcount(handles[i]) > 2:
                return int(i)
        return -1

    def maybe_reset(self):
        """Reclaim the rows nothing can reach any more; returns the live tape.

        Rows only depend on earlier rows, so everything after the last row a held graph
        needs is unreachable: the tape is cut there (or emptied when nothing is held).  A
        graph kept in a notebook variable therefore pins only its own rows, not every row
        recorded after it."""
        if not self.n:
            return self
        keep = self.last_held_row() + 1
        if keep == 0:
            return self.reset()
        if keep < self.n:
            self.truncate(keep)
        return self

    def truncate(self, keep):
        """Drop rows ``keep`` and later; held handles of dropped rows are detached first."""
        self.sync()
        n = self.n
        for h in self.handles[keep:]:
            # the list, the loop variable and getrefcount's argument: 3 references
            if h is not None and sys.getrefcount(h) > 3 and h._tape is self and h._row >= keep:
                h._tape = None
                h._row = -1
        self.leaf_rows = [r for r in self.leaf_rows if r < keep]
        for r in [r for r in self.lazy if r >= keep]:
            del self.lazy[r]
        ex = self.extras
        for k in [k for k in ex if isinstance(k, (int, np.integer)) and k >= keep]:
            del ex[k]
        if "retain" in ex:
            ex["retain"] = [r for r in ex["retain"] if r < keep]
        if "shared" in ex:
            ex["shared"] = {k: r for k, r in ex["shared"].items() if r < keep}
        for key in ("hooks", "lines"):
            if key in ex:
                ex[key] = {r: v for r, v in ex[key].items() if r < keep}
        if "dirty" in ex:
            ex["dirty"] = [d for d in ex["dirty"] if d[0] < keep and d[1] <= keep]
        # parameter pools: rows are pushed in order, so their parameters are too
        ips = self.ip[keep:n]
        ops = self.ops(n)[keep:n]
        clip = ops == CLIP
        pool = ips[(ips > 0) & ~clip]
        if pool.size:
            self.np = int(pool.min())
        fl = ips[(ips > 0) & clip]
        if fl.size:
            self.nf = int(fl.min())
        self.state[keep:n] = 0
        self.rg[keep:n] = 1
        self._fp[keep:n] = 0.0
        self.nsync = keep
        self.n = keep                 # publish; an interrupt before the next line leaves
        del self.handles[keep:]       # handles longer than n, which drop_torn trims

    def reset(self):
        """Empty the tape: a fresh Tape object takes over the arrays; this one is retired."""
        new = Tape.__new__(Tape)
        for name in Tape.__slots__[:-1]:
            setattr(new, name, getattr(self, name))
        n = self.nsync
        new.pc, new.pv, new.pf = [], [], []   # pending rows are dropped with the rest
        new.parr = False
        new.n = new.nsync = 0
        new.np = 1
        new.nf = 1
        new.handles = []
        new.leaf_rows = []
        new.extras = {}
        new.lazy = {}
        new.state[:n] = 0
        new.rg[:n] = 1      # rows default to needing grad; constants clear it when pushed
        new._fp[:n] = 0.0
        # publish the new tape before taking the old one apart: an interrupt past this point
        # leaves a working current tape (the old rows were unreachable anyway)
        if STATE.__dict__.get("tape") is self:
            STATE.tape = new
        self.alive = False
        self.owner = new.owner
        self.enabled = True
        for name in Tape.ARRAYS:   # the retired tape drops its arrays; keeps owner/enabled/...
            if hasattr(self, name):
                delattr(self, name)
        self.handles = []
        self.n = 0
        return new

    @property
    def nbytes(self):
        """Bytes of the live part of the tape: columns, pools, values and adjoints."""
        per_row = sum(getattr(self, c).itemsize for c in ("_code", "ip", "_fp", "rg", "state",
                                                          "_voff"))
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
    """The recording tape of the calling thread.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.exp(x).sum()
        >>> "EXP" in tg.current_tape().stats()["by_op"]
        True
    """
    return STATE.tape
