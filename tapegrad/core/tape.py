"""The Wengert tape: flat numpy columns, one row per recorded value, grown by doubling.

Recording a row on a float or a small array of its own (an elementwise op, a reduction, a
small matmul, an operand entered as a LEAF or CONST row) only appends to three Python lists
(``pending``: packed code, value, float parameter; a row with integer parameters also notes
(row, ip) in ``pip``); an append costs ~20 ns where a store into a numpy column costs ~65 ns.
Every read of a column (``t.code``, ``t.val``, ``t.voff``, ``t.fp``, ``t.ip``, and everything
built on them: the kernels, inspection, replay) goes through a property that first flushes
the pending rows, so nothing can see a stale tape; the columns a flush does not write (``rg``,
``sh`` of a 1-D row, ``state``, ``ip`` of a row without parameters) hold a new row's defaults,
restored whenever rows are dropped (a constant's ``rg`` 0 is written by the flush).  Views
(their value may change with its base before a flush) and large arrays are pushed directly.

Lazy rows: an array of LAZY_MIN or more elements is not copied when its row is pushed; the
row reserves its place in the buffers and ``lazy[row]`` holds the array itself.  It is written
when an op whose backward reads it is recorded (the op table's ``reads``), when the array is
about to change in place, or when anything reads ``t.val``.  So parameters, input batches and
broadcast biases that only feed matmuls and additions are never copied.

Lifetime: a backward without ``retain_graph`` marks the rows it swept as freed.  No Python
object is kept per row: a row's value, adjoint, shape (``sh``: 0 for a float or a 1-D array,
else an offset into ``spool``) and metadata are columns.  Which rows the user still holds is
known through tokens: every graph handle keeps a reference (``_k``) to the token of the row range
it was recorded in (a new token every TOKEN_ROWS rows and after every reclaim), and the tape
keeps only weak references to the tokens.  A range whose token is alive holds a handle; the rows
it needs are its unfreed op rows.  So ``last_held_row`` is a search over the live ranges and
the freed-state column, and no reference count is read.  Python objects are kept by row only
where a row truly needs one: entered handles (leaves, constants, FREED placeholders) in
``objs`` (weakly: a leaf whose ``.grad`` carries a graph must not pin that graph through the
tape), custom-op payloads, hooks and the like in ``side`` (``SideTables``), lazy arrays in
``lazy``.

Reclaims run after a backward, when a transformed function raises (``discard_from``), and
before an op is recorded once the tape is 3/4 full or its values grew by RECLAIM_VALUES
elements (``reclaim``): an evaluation loop that never calls backward stays flat.  Scratch
tapes (checkpoint, custom rules, traces) are never cut while their recording runs.

When nothing held needs a row, the tape is reset to empty: its arrays move to a fresh Tape
object and the old one is retired (``alive = False``), so "is this handle's row still valid" is
the single test ``x._tape is tape``.  When a held graph needs the first ``keep`` rows, the rows
after it are cut: in place when no handle is alive on them, else the tape is retired in favour
of a successor that keeps rows [0, keep).  The tapes retired by cuts share a ``Lineage`` (the
live successor, and for each retired tape the rows still valid on it); ``live`` maps a handle
of a kept row to the successor (``row_of`` repoints the handle), while handles of the cut rows
are stale.  Retired tapes never reference each other, so a held handle keeps only its own.
Handles keep their own value, so they stay readable, and a retired handle that is used again
enters the new tape as a constant (a leaf) or as a FREED placeholder that raises if a backward
tries to pass through it.
"""

import bisect
import functools
import math
import mmap
import threading
import types
import weakref

import numpy as np

from ..ops.spec import C, NAMES, READS
from ..ops.structural import SMALL_MATMUL
from . import compaction
from .tape_inspect import TapeInspection

_OP_NAMES = NAMES
LEAF, CONST, FREED, CUSTOM, GUARD = C.LEAF, C.CONST, C.FREED, C.CUSTOM, C.GUARD
MATMUL = C.MATMUL
CLIP = C.CLIP
VECTOR_FLUSH_MIN = 16  # pending array rows written by one concatenate (see Tape._write_arrays)
MAX_ROWS = 1 << 27  # operand rows are packed into 28 bits of the code column
LAZY_MIN = 4096  # arrays this large enter the tape lazily (see above)
TOKEN_ROWS = 2048  # rows per handle token range (also bounds the pending rows)
# ...and value elements per range (1 MB): a held handle pins at most its range's values (and
# the rows its graph reads); the small arrays pending in the lists are bounded likewise
RANGE_VALUES = 1 << 17
# Reclaim attempts (see ``Tape.reclaim``): after this many more value elements (8 MB)...
RECLAIM_VALUES = 1 << 20
# ...and, while something recorded is still held, at each of this many following ops
RECLAIM_RETRIES = 64
MAX_VALUES = 1 << 62
ENTERED = (LEAF, CONST, FREED)


_NO_ROWS = types.MappingProxyType({})


class SideTables:
    """The Python data a tape keeps beside its rows, one typed table each (no Python object per
    row: only rows that need one appear here).

    - ``payloads``: row -> the payload of a custom op or guard (``CustomNode`` ...);
    - ``hooks``: row -> tensor hooks registered on that non-leaf row;
    - ``retain``: row -> weakref of a non-leaf that asked for ``retain_grad``;
    - ``lines``: row -> (file, line) of the user code that recorded it (anomaly mode);
    - ``shared``: id(leaf) -> row, for leaves another thread's tape caches;
    - ``dirty``: in-place overwrites (row, at, weakref, version before) for the version check.

    True when any table holds something: the backward then takes the checked path."""

    __slots__ = ("payloads", "hooks", "retain", "lines", "shared", "dirty")

    def __init__(self):
        self.payloads, self.hooks, self.retain, self.lines, self.shared = {}, {}, {}, {}, {}
        self.dirty = []

    def __bool__(self):
        return bool(
            self.payloads or self.hooks or self.retain or self.lines or self.shared or self.dirty
        )

    def holds_rows(self) -> bool:
        """Does a table other than ``dirty`` and ``shared`` hold anything (their entries keep
        rows in Python objects a compaction does not renumber, so it leaves such a tape as it
        is)?"""
        return bool(self.payloads or self.hooks or self.retain or self.lines)

    def copy(self) -> "SideTables":
        new = SideTables()
        for name in ("payloads", "hooks", "retain", "lines", "shared"):
            setattr(new, name, dict(getattr(self, name)))
        new.dirty = list(self.dirty)
        return new

    def truncate(self, keep: int) -> None:
        """Forget what belongs to rows ``keep`` and above (empty tables, the common case on a
        tape reset every step, are left as they are)."""
        if not self:
            return
        for name in ("payloads", "hooks", "retain", "lines"):
            table = getattr(self, name)
            if table:
                setattr(self, name, {r: v for r, v in table.items() if r < keep})
        if self.shared:
            self.shared = {k: r for k, r in self.shared.items() if r < keep}
        if self.dirty:
            self.dirty = [d for d in self.dirty if d[0] < keep and d[1] <= keep]


_HELD_SCAN = 1 << 12  # tapes this short: held_rows scans them whole once, not range by range
MAPPED_MIN = 1 << 20  # columns this many bytes or larger live in their own memory maps


def zeros(n, dtype=np.float64):
    """A zeroed column.  A large one is an anonymous memory map: capacity never written costs
    no memory, and a column replaced when the tape grows returns its pages to the system at
    once (the C heap would keep them, so the tape's peak would hold its old columns too).

    >>> from tapegrad.core.tape import zeros
    >>> zeros(3).tolist(), float(zeros(1 << 18).sum())
    ([0.0, 0.0, 0.0], 0.0)
    """
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes < MAPPED_MIN:
        return np.zeros(n, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype, n)


def add_adjoint(adj, state, voff, r, g):
    """Add ``g`` (a float, or flat values) into row ``r``'s adjoint.  A backward does not clear
    the adjoint buffer first: a sweep's first contribution to a row (state bit 1 clear) zeroes
    what the row holds first, as the compiled sweeps do (so a first -0.0 adds up to 0.0 on
    every path, as it did into a cleared buffer)."""
    lo = voff[r]
    if g.__class__ is float:  # a scalar's seed: one value
        adj[lo] = adj[lo] + g if state[r] & 1 else 0.0 + g
        state[r] |= 1
        return
    hi = voff[r + 1]
    if not state[r] & 1:
        adj[lo:hi] = 0.0
        state[r] |= 1
    adj[lo:hi] += g


class Lineage:
    """The tapes one thread retired by cuts.  ``cuts`` is one tuple (so it is replaced in one
    store): generations and keeps, both increasing; a tape retired as generation g keeps
    valid the rows below the keep of the first cut at or after g (later cuts can only lower
    what is valid)."""

    __slots__ = ("tape", "cuts", "count")

    def __init__(self, tape):
        self.tape = tape
        self.cuts = ((), ())
        self.count = 0

    def cut(self, keep):
        """Note that rows ``keep`` and later are gone for every tape retired so far; returns
        the generation of the cut."""
        g = self.count
        gens, keeps = self.cuts
        j = len(keeps)
        while j and keeps[j - 1] >= keep:
            j -= 1
        self.cuts = (gens[:j] + (g,), keeps[:j] + (keep,))
        self.count = g + 1
        return g


class Token:
    """What graph handles of one row range share: the tape sees it only through a weakref."""

    __slots__ = ("__weakref__",)


class SectionLock:
    """A lock for short sections that never nest, which a thread cannot leak to itself.

    A KeyboardInterrupt can land between a lock's acquisition and the protection of the
    ``with`` block that releases it (signals and tracers run at instruction boundaries), so
    the thread keeps the lock after leaving the block and the next ``with`` deadlocks.  The
    sections guarded by this lock never nest: a thread that finds itself holding it on entry
    leaked it, and lets go before acquiring it again."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        lock = self._lock
        while lock._is_owned():
            lock.release()
        lock.acquire()
        return self

    def __exit__(self, *exc):
        if self._lock._is_owned():  # not when a nested entry already let go of it
            self._lock.release()


class Tape(TapeInspection):
    """Columns of the Wengert list plus the flat value/adjoint buffers.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.sin(x).sum()
        >>> t = tg.current_tape()
        >>> isinstance(t, tg.Tape), t.stats()["by_op"]["SIN"]["count"] >= 1
        (True, True)
    """

    REPLAYS = False  # a trace's tape: custom ops keep what a replay needs to run them again
    __slots__ = (
        "owner",
        "enabled",
        "alive",
        "n",
        "objs",
        "leaf_rows",
        "side",
        "cap",
        "_code",
        "_ip",
        "_fp",
        "rg",
        "state",
        "sh",
        "_voff",
        "_val",
        "adj",
        "vcap",
        "np",
        "ipool",
        "nf",
        "fpool",
        "ns",
        "spool",
        "pc",
        "pv",
        "pf",
        "pip",
        "parr",
        "pconst",
        "nsync",
        "lazy",
        "fastcap",
        "anomaly",
        "tok",
        "tokend",
        "tokval",
        "starts",
        "refs",
        "lin",
        "gen",
        "fwd",
        "preds",
        "mark",
        "vmark",
        "retries",
        "__weakref__",
    )
    ARRAYS = (
        "_code",
        "_ip",
        "_fp",
        "rg",
        "state",
        "sh",
        "_voff",
        "_val",
        "adj",
        "ipool",
        "fpool",
        "spool",
    )
    # what a reset's successor takes over from the tape it replaces (``reset`` sets the rest)
    CARRIED = ("owner", "enabled", "alive", "cap", *ARRAYS, "vcap", "anomaly")
    READS = READS  # per op code, what its backward reads (derived from the op spec)
    RECLAIMS = True  # a ScratchTape is never reset or cut

    def __init__(self, rows=1024, values=4096):
        self.owner = threading.get_ident()
        self.enabled = True  # grad mode of the owning thread
        self.alive = True
        self.n = 0  # rows recorded, pending ones included
        self.nsync = 0  # rows [0, nsync) are in the numpy columns
        self.pc, self.pv, self.pf = [], [], []  # pending rows: code word, value, fp
        self.pip = []  # (row, ip) of the pending rows with integer parameters
        self.parr = 0  # elements (+1 per array) of the pending small arrays: 0 if all are floats
        self.pconst = False  # some pending rows are constants (their rg is 0)
        self.objs = {}  # row -> weakref to the entered handle (LEAF/CONST/FREED rows)
        self.leaf_rows = []  # rows of LEAF entries, for accumulating .grad
        self.side = SideTables()  # payloads of custom ops and guards, hooks, ... (typed)
        self.lazy = {}  # row -> array not yet copied into ``val`` (see module doc)
        self.anomaly = None  # anomaly mode of the owning thread: its checker, or None
        self.tok = None  # token of the current row range (None: push starts one)
        self.tokend = 0  # the fast paths stay below this row (see set_fast_path)
        self.tokval = 0  # ...and the range ends at the first push at this value offset
        self.starts, self.refs = [], []  # token ranges: start rows, weakrefs to the tokens
        self.lin = None  # the Lineage of the tapes this thread retired by cuts
        self.gen = -1  # retired by a cut: its generation in ``lin``
        self.fwd = None  # retired by a compaction: (successor, the rows it kept, ascending)
        self.preds = []  # weakrefs of the tapes whose compaction forwards to this one
        self.cap = 0
        self.mark = MAX_ROWS  # ``tape_for`` attempts a reclaim once n + 8 reaches it
        self.vmark = RECLAIM_VALUES  # ...and once the values reach this many elements
        self.retries = 0
        self._alloc_rows(rows)
        self._alloc_values(values)
        self.np = 1  # used length of ipool (entry 0 unused: ip == 0 means none)
        self.ipool = np.zeros(1024, np.int64)
        self.nf = 1  # likewise for fpool
        self.fpool = np.zeros(64, np.float64)
        self.ns = 1  # likewise for spool (shapes other than () and 1-D)
        self.spool = np.zeros(64, np.int64)

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
            self._val[lo : lo + v.size] = v.reshape(-1)

    def need(self, code, ra, rb, ip=0):
        """Write the lazy operands that op ``code`` reads in its backward."""
        reads = self.READS[code]
        if code == MATMUL and self.blas_matmul(ip):
            return  # large matmuls run in numpy, which reads lazy arrays directly
        if "a" in reads and ra in self.lazy:
            self.materialize(ra)
        if "b" in reads and rb in self.lazy:
            self.materialize(rb)
        if "c" in reads:
            self.materialize(int(self.ipool[ip]))

    def blas_matmul(self, ip):
        """Whether the matmul row with parameters at ``ipool[ip]`` is large enough that its
        backward runs in NumPy's BLAS (``ReverseSweep._matmul``), not in the compiled sweep."""
        return math.prod(self.ipool[ip : ip + 4].tolist()) > SMALL_MATMUL

    def row_value(self, row):
        """Row ``row``'s value, flat, from the buffer or its lazy array."""
        v = self.lazy.get(row)
        if v is not None:
            return v.reshape(-1)
        lo = self.voff[row]
        return self._val[lo : self._voff[row + 1]]

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

    @property
    def ip(self):
        if self.pc:
            self.sync()
        return self._ip

    def sync(self):
        """Move pending rows into the numpy columns (values row by row, the rest one write each).

        Interrupt safety: a row is published by the store of ``n`` (after its pending entries
        are appended), pending rows are retired by the store of ``nsync`` (after the columns
        are written, before the lists are cleared).  So the lists are never shorter than
        ``n - nsync``; anything longer is a torn row (a KeyboardInterrupt between the appends)
        and is dropped here."""
        s = self.nsync
        k = self.n - s
        if len(self.pc) != k or len(self.pv) != k or len(self.pf) != k:
            self.drop_torn()
            s = self.nsync
            k = self.n - s
        if not k:
            return
        while s + k > self.cap:
            self._alloc_rows(self.cap * 2, keep=s)
        off = int(self._voff[s])
        pv = self.pv
        if self.parr:  # arrays among the rows: one concatenate when they allow it
            end = self._write_arrays(off, s, k) if k >= VECTOR_FLUSH_MIN else -1
            if end < 0:
                end = self._write_rows(off, s)
        else:
            if off + k > self.vcap:
                self._reserve(off, k)
            self._val[off : off + k] = pv
            self._voff[s + 1 : s + k + 1] = np.arange(off + 1, off + k + 1)
            end = off + k
        if end > self.vmark:
            self.pressure()
        self._code[s : s + k] = self.pc
        self._fp[s : s + k] = self.pf
        if self.pip:
            ip = self._ip
            for r, p in self.pip:
                ip[r] = p
            self.pip.clear()
        if self.pconst:  # entered constants need no gradient (found by list scans in C)
            rg, pc, j = self.rg, self.pc, -1
            for _ in range(pc.count(CONST)):
                j = pc.index(CONST, j + 1)
                rg[s + j] = 0
        self.nsync = s + k  # publish: from here on the lists hold no pending row
        pv.clear()
        self.pf.clear()
        self.pc.clear()  # last: a non-empty pc is what makes readers call sync
        self.parr = 0
        self.pconst = False

    def _write_rows(self, off, s):
        """Write the pending rows of mixed sizes and shapes one by one, in one pass (a shape
        noted for each n-d or one-element array); returns the end offset."""
        pv = self.pv
        ends, lo, j = [], off, s
        val, vcap, sh = self._val, self.vcap, self.sh
        for v in pv:
            hi = lo + (1 if v.__class__ is float else v.size)
            if hi > vcap:  # keeps the values up to lo: the rows before and those written
                self._reserve(lo, hi - lo)
                val, vcap = self._val, self.vcap
            if v.__class__ is float:
                val[lo] = v
            elif v.ndim == 1 and hi - lo != 1:
                val[lo:hi] = v  # (no reshape: a view costs what the copy does)
            else:
                sh[j] = self.add_shape(v.shape)
                val[lo:hi] = v.reshape(-1)
            ends.append(hi)
            lo = hi
            j += 1
        self._voff[s + 1 : s + len(ends) + 1] = ends
        return lo

    def _write_arrays(self, off, s, k):
        """Write ``k`` pending rows that are 1-D arrays and a few floats (a chain of small-array
        ops ending in a sum) with one ``np.concatenate`` into the value buffer; returns the end
        offset, or -1 when the row-by-row loop must write them (a 0-d, 1-element or n-d array,
        or many floats).  About half the loop's time for a long run of small arrays."""
        pv = self.pv
        nfloat = list(map(type, pv)).count(float)
        if nfloat * 4 > k:
            return -1
        items = pv if not nfloat else [(v,) if v.__class__ is float else v for v in pv]
        try:
            sizes = list(map(len, items))  # TypeError: a 0-d array
        except TypeError:
            return -1
        if sizes.count(1) != nfloat:  # a 1-element array's row notes its shape (else it
            return -1  # would read as a float)
        ends = np.cumsum(sizes)
        ends += off
        end = int(ends[-1])
        if end > self.vcap:
            self._reserve(off, end - off)
        try:  # a 1-D ``out`` takes only 1-D inputs: an n-d row raises before any write
            np.concatenate(items, out=self._val[off:end])
        except ValueError:
            return -1
        self._voff[s + 1 : s + k + 1] = ends
        return end

    def drop_torn(self):
        """Drop what an interrupted append or sync left beyond the published rows."""
        n = self.n
        if self.nsync > n:
            self.nsync = n
        k = n - self.nsync
        # pv/pf first, pc last (a non-empty pc triggers sync and the fast paths check
        # len(pc)): an interrupt in here is caught by the next read
        for r in [r for r in self.objs if r >= n]:
            del self.objs[r]
        self.pip[:] = [e for e in self.pip if e[0] < n]
        del self.pv[k:]
        del self.pf[k:]
        del self.pc[k:]

    # ---- storage -------------------------------------------------------------------------
    def _alloc_rows(self, cap, keep=0):
        if cap > MAX_ROWS:
            raise RuntimeError(
                f"tape is full: {MAX_ROWS} rows is the most one tape holds; "
                "call backward() (or use tg.no_grad()) to free recorded graphs"
            )
        # one column at a time, so the peak holds one old and one new column, not two tapes
        for name, dt in (
            ("_code", np.int64),
            ("_ip", np.int64),
            ("_fp", np.float64),
            ("rg", np.int8),
            ("state", np.int8),
            ("sh", np.int32),
        ):
            arr = zeros(cap, dt)
            if name == "rg":
                arr[keep:] = 1
            if keep:
                arr[:keep] = getattr(self, name)[:keep]
            setattr(self, name, arr)
            del arr
        voff = zeros(cap + 1, np.int64)
        if keep:
            voff[: keep + 1] = self._voff[: keep + 1]
        self._voff = voff
        self.cap = cap
        self.mark = min(self.mark, cap)
        self.set_fast_path()

    def pause(self, flag: bool) -> None:
        """Switch recording on or off for tapegrad's own code (not the user's grad mode: a
        trace's tape tells the two apart)."""
        self.enabled = flag

    def set_fast_path(self):
        """Rows below ``fastcap`` may be recorded by the inline fast paths of
        ``record_unary``/``record_binary``; anomaly mode sets it to 0 so every row goes
        through ``push`` (where its checker sees it) at no cost to the fast path.  The end of
        the current token range is a bound too: ``push`` starts the next range there (and
        flushes the pending rows, so at most TOKEN_ROWS of them are ever pending)."""
        ok = self.anomaly is None and self.tok is not None
        self.fastcap = min(self.mark, self.tokend) if ok else 0

    def new_token(self, row, off):
        """Start a token range at ``row`` (the current one), whose value starts at ``off``."""
        tok = Token()
        if self.starts and self.starts[-1] >= row:  # an empty range (or a cut one): replace
            k = bisect.bisect_left(self.starts, row)
            del self.starts[k:]
            del self.refs[k:]
        self.starts.append(row)
        self.refs.append(weakref.ref(tok))
        self.tok = tok
        self.tokend = row + TOKEN_ROWS
        self.tokval = off + RANGE_VALUES
        self.set_fast_path()
        return tok

    def token_at(self, row):
        """A token covering row ``row``, for a new handle of an already recorded row."""
        k = bisect.bisect_right(self.starts, row) - 1
        tok = self.refs[k]() if k >= 0 else None
        if tok is None:  # that range holds no handle any more: a one-row range for it
            tok = Token()
            self.starts[k + 1 : k + 1] = [row, row + 1]
            self.refs[k + 1 : k + 1] = [weakref.ref(tok), _dead]
        return tok

    def entered(self, row):
        """The handle entered at row ``row`` (a leaf, constant or FREED placeholder), or None
        (a graph row, or a handle the user no longer holds).

        >>> import tapegrad as tg
        >>> x = tg.tensor(1.0, requires_grad=True)
        >>> y = x * 2.0
        >>> t = tg.current_tape()
        >>> t.entered(x._row) is x, t.entered(y._row)
        (True, None)
        """
        ref = self.objs.get(row)
        return None if ref is None else ref()

    def add_shape(self, shape):
        """Store a shape other than () / 1-D in ``spool``; returns its offset (the ``sh``)."""
        start = self.ns
        end = start + 1 + len(shape)
        if end > self.spool.size:
            pool = np.zeros(max(end, 2 * self.spool.size), np.int64)
            pool[:start] = self.spool[:start]
            self.spool = pool
        self.spool[start] = len(shape)
        self.spool[start + 1 : end] = shape
        self.ns = end
        return start

    def shape(self, row):
        """The shape of row ``row``'s value."""
        p = int(self.sh[row]) if row < self.nsync else 0
        if p:
            nd = int(self.spool[p])
            return tuple(int(d) for d in self.spool[p + 1 : p + 1 + nd])
        if row >= self.nsync:
            v = self.pv[row - self.nsync]
            return () if v.__class__ is float else v.shape
        size = int(self._voff[row + 1] - self._voff[row])
        return () if size == 1 else (size,)

    def _alloc_values(self, cap, keep=0):
        val = zeros(cap)
        if keep:
            val[:keep] = self._val[:keep]
        self._val = val
        del val
        self.adj = None  # the old adjoints go first (their values are not kept)
        self.adj = zeros(cap)
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
        if values.__class__ is not list and values.__class__ is not tuple:
            # (a short list or tuple is written as it is: ~1 us less)
            values = np.asarray(values, np.int64).ravel()
        start = self.np
        end = start + len(values)
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
            pool[: self.nf] = self.fpool
            self.fpool = pool
        self.fpool[self.nf] = value
        self.nf += 1
        return self.nf - 1

    # ---- rows ------------------------------------------------------------------------------
    def push(self, code, ra, rb, value, handle, rg=1, fp=0.0, ip=0, own=None):
        """Append one row holding ``value`` (a float or an ndarray); returns the row.

        ``handle`` is the row's Tensor: an entered one (LEAF/CONST/FREED) is noted in ``objs``,
        a graph handle gets the token of its range (``_k``).  ``own``: whether a large value
        may stay lazy, when the caller knows better than ``owns`` (a broadcast view of an
        operand's own array)."""
        if self.pc or self.pv or self.pf:
            self.sync()
        i = self.n
        if i == self.cap:
            self.grow_rows()
        off = int(self._voff[i])
        if self.tok is None or i >= self.tokend - 8 or off >= self.tokval:
            self.new_token(i, off)
        size = 1 if value.__class__ is float else value.size
        if off + size > self.vcap:
            self._reserve(off, size)
        if size == 1 and value.__class__ is float:
            self._val[off] = value
        elif (
            size >= LAZY_MIN
            and "o" not in self.READS[code]
            and (owns(value, handle) if own is None else own)
        ):
            self.lazy[i] = value
        else:
            self._val[off : off + size] = value.reshape(-1)
        if value.__class__ is not float and (value.ndim != 1 or size == 1):
            self.sh[i] = self.add_shape(value.shape)
        self._voff[i + 1] = off + size
        if off + size > self.vmark:
            self.pressure()
        self._code[i] = code | (ra + 1) << 8 | (rb + 1) << 36
        self._fp[i] = fp
        self._ip[i] = ip
        if not rg:
            self.rg[i] = 0
        if handle is not None:
            if code in ENTERED:
                self.objs[i] = weakref.ref(handle)
            else:
                handle._k = self.tok
        self.nsync = i + 1  # an interrupt here leaves nsync > n: drop_torn undoes it
        self.n = i + 1  # publish
        if self.anomaly is not None:
            self.anomaly.recorded(self, i, code, value)
        return i

    def enter(self, code, value, handle, rg):
        """Append an entered row (LEAF / CONST / FREED: an operand recorded before it is used;
        ``handle`` its Tensor, or None for a plain number or array); returns the row.  On the
        fast path it is a pending row, as an op's is there, so entering a parameter or the
        data does not first flush the rows recorded before it; a pending row holds a copy of
        an array (the caller's array may change before the flush).  An array of ``LAZY_MIN``
        values or more is pushed (it may stay lazy there)."""
        i = self.n
        pc = self.pc
        small = value.__class__ is float or (value.size < LAZY_MIN and self.parr < RANGE_VALUES)
        if small and i + 8 < self.fastcap and len(pc) + self.nsync == i:
            if value.__class__ is not float:
                value = value.copy()
                self.parr += value.size + 1
            if not rg:
                self.pconst = True
            if handle is not None:
                self.objs[i] = weakref.ref(handle)
            pc.append(code)  # no operands
            self.pv.append(value)
            self.pf.append(0.0)
            self.n = i + 1  # publish
            return i
        return self.push(code, -1, -1, value, handle, rg)

    # ---- reading rows ---------------------------------------------------------------------
    def op(self, row):
        return int(self.code[row]) & 255

    def operands(self, row):
        w = int(self.code[row])
        return ((w >> 8) & 0xFFFFFFF) - 1, (w >> 36) - 1

    def ops(self, n=None):
        """Op codes of rows [0, n) as an array."""
        return self.code[: self.n if n is None else n] & 255

    def value(self, row):
        if self.pc:
            self.sync()
        self.materialize(row)
        return self._val[self._voff[row] : self._voff[row + 1]]

    def gradient(self, row):
        lo, hi = self.voff[row], self.voff[row + 1]
        return self.adj[lo:hi]

    # ---- lifetime ----------------------------------------------------------------------------
    def _drop_token(self):
        """Drop the tape's own reference to the current range's token: the range is then held
        by handles only, and the next row starts a new range."""
        self.tok = None
        self.set_fast_path()

    def open_range(self):
        """End the current token range unless it starts here: the next row starts a range of
        its own, so handles made from here on never share a token with the ones before (see
        ``drop_from``)."""
        if self.tok is not None and self.starts[-1] < self.n:
            self._drop_token()

    def drop_from(self, start):
        """Cut rows ``start`` and later in place when no handle is alive on them (a transform's
        rows once it returns, its own handles gone; it opened a range at ``start``): no
        search of what held graphs need, no successor.  Returns whether it cut."""
        if not self.alive or self.n <= start:
            return False
        self._drop_token()
        k = bisect.bisect_left(self.starts, start)
        if any(ref() is not None for ref in self.refs[k:]):
            return False
        if start == 0:
            self.reset()  # (the cheaper way to empty it)
        else:
            self.truncate(start)
        return True

    def held_rows(self):
        """(the highest row a handle the user still holds needs for a future backward, the
        highest row a live handle is on), -1 when none.  A live token range holds a handle;
        it needs the range's unfreed op rows."""
        self.sync()
        self._drop_token()
        n = self.n
        starts, refs = self.starts, self.refs
        held = -1
        needed = None  # a short tape: its unfreed op rows found once, for every range
        for k in range(len(starts) - 1, -1, -1):
            lo = starts[k]
            hi = min(starts[k + 1] if k + 1 < len(starts) else n, n)
            if hi <= lo or refs[k]() is None:
                continue
            if held < 0:
                held = hi - 1
            if n <= _HELD_SCAN:
                if needed is None:
                    needed = self._unfreed_op_rows(0, n).tolist()
                j = bisect.bisect_left(needed, hi) - 1
                if j >= 0 and needed[j] >= lo:
                    return needed[j], held
                continue
            need = self._unfreed_op_rows(lo, hi)
            if need.size:
                return lo + int(need[-1]), held
        return -1, held

    def _unfreed_op_rows(self, lo, hi):
        """Rows lo..hi-1 that are op rows not freed by a backward, counted from lo."""
        return np.flatnonzero(((self.state[lo:hi] & 2) == 0) & ((self._code[lo:hi] & 255) > CONST))

    def last_held_row(self):
        """The highest row that a handle the user still holds needs (-1 if none)."""
        return self.held_rows()[0]

    def maybe_reset(self, forward=True):
        """Reclaim the rows nothing can reach any more; returns the live tape.

        Rows only depend on earlier rows, so everything after the last row a held graph
        needs is unreachable: the tape is cut there (or emptied when nothing is held).  A
        graph kept in a notebook variable therefore pins only its own rows, not every row
        recorded after it.  A cut under live handles (a loss kept after its backward) retires
        this tape with a forward to its successor, when it drops at least half the rows or
        half the values (a successor costs more than a sweep over a few freed rows: a loop
        whose backward runs every few steps, below the graphs of the steps between, would
        retire the tape at each one); ``forward=False`` (while recording) leaves such a cut
        for later."""
        if not self.n:
            return self
        need, held = self.held_rows()
        keep = need + 1
        if keep == 0:
            return self.reset()
        n = self.n
        if keep < n:
            if held < keep:
                self.truncate(keep)
            elif forward and (2 * keep <= n or 2 * self._voff[keep] <= self._voff[n]):
                return self.retire_to(keep)
        return self

    def pressure(self):
        """Ask the next ``tape_for`` for a reclaim attempt (the values grew past ``vmark``)."""
        self.mark = 0
        self.set_fast_path()

    def reclaim(self):
        """Reclaim what nothing can reach any more, before an op is recorded; returns the
        live tape, with room for the op.

        ``tape_for`` calls it when the rows reach ``mark``: the tape is full, or the values
        grew by RECLAIM_VALUES elements since the last attempt (an evaluation loop that drops
        its results after ``.item()`` never calls backward, yet must stay flat).  An attempt
        made while the op in progress still holds its graph (mid-iteration) fails; the next
        RECLAIM_RETRIES ops try again, and one of them usually falls between two iterations,
        where nothing is held and the tape empties.  When none does (a loop that holds its
        latest result: cuts then drop only the few rows above it), the tape is compacted."""
        self.sync()
        n = self.n
        if not self.RECLAIMS:
            while self.n + 8 >= self.cap:
                self.grow_rows()
            self.mark, self.vmark = self.cap, MAX_VALUES
            self.set_fast_path()
            return self
        before = int(self._voff[n])
        t = self.maybe_reset(forward=False)
        # a cut of a few rows above a held graph (a loop's latest output) is no reclaim
        shrunk = t is not self or 2 * t.n <= n or 2 * int(t._voff[t.n]) <= before
        if not shrunk and t.retries >= RECLAIM_RETRIES:
            t = t.compact() or t  # a held graph at the top, unreachable rows below it
            shrunk = t is not self
        while t.n + 8 >= t.cap:
            t.grow_rows()
        used = int(t._voff[t.n])
        if shrunk:  # reclaimed: try again when 3/4 full
            t.retries = 0
            t.vmark = used + max(RECLAIM_VALUES, used)  # amortised: farther when more is held
            t.mark = max(t.n + 8, t.cap - t.cap // 4)
        elif t.retries < RECLAIM_RETRIES:
            t.retries += 1
            t.mark = t.n  # the next op tries again (no fast path until then)
        else:  # everything is held: grow when full (amortised doubling)
            t.retries = 0
            t.vmark = used + max(RECLAIM_VALUES, used)
            t.mark = t.cap
        t.set_fast_path()
        return t

    def compact(self):
        """Keep only the rows a held graph can still reach, moved to the bottom; returns the
        successor tape, or None when nothing is gained or compaction does not apply.

        The reclaims above cut the tape only at its top.  A loop that holds its latest result
        (``out = model(x)``, no backward) always holds the top, so the rows of its earlier
        iterations are never cut.  The rows kept are the unfreed op rows of the live token
        ranges and every row they read (``compaction.reachable``); a successor gets them, in
        order, in arrays of its own sized for them (columns, parameter pools, values), and
        this tape retires.  Handles of kept rows follow through ``fwd`` (``follow``), entered
        handles are moved at once, and handles of dropped rows (freed by a backward) go stale.

        Only on the thread's current tape, outside transforms and the code that holds row
        numbers across ops (``holding_rows``), without anomaly mode or side tables other
        than ``dirty`` and ``shared`` (whose entries are renumbered); rows of custom ops,
        guards or a chain longer than ``compaction.MAX_ROUNDS`` below the held ranges leave
        the tape as it is."""
        if not (
            self.RECLAIMS
            and self.alive
            and STATE.transforms == 0
            and STATE.held == 0
            and STATE.__dict__.get("tape") is self
            and not self.side.holds_rows()
            and self.anomaly is None
        ):
            return None
        self.sync()
        self._drop_token()
        n = self.n
        used = int(self._voff[n])
        held = np.zeros(n, bool)
        for k, lo in enumerate(self.starts):
            hi = self.starts[k + 1] if k + 1 < len(self.starts) else n
            if self.refs[k]() is not None:
                held[lo:hi] = True
        code = self._code[:n]
        held &= ((self.state[:n] & 2) == 0) & ((code & 255) > CONST)
        rows = compaction.reachable(code, self._ip, self.ipool, held)
        if rows is None:
            return None
        sizes = self._voff[rows + 1] - self._voff[rows]
        m, kept_values = rows.size, int(sizes.sum())
        if 2 * m > n and 2 * kept_values > used:
            return None  # not worth a move
        new = self._successor()  # (it gets arrays of its own)
        self._move_rows(new, rows, sizes)
        self._move_handles(new, rows)
        new.side = SideTables()
        for row, at, ref, ver in self.side.dirty:  # in-place changes of kept rows
            j = compaction.new_row(rows, row)
            if j >= 0:
                new.side.dirty.append((j, int(np.searchsorted(rows, at)), ref, ver))
        for key, row in self.side.shared.items():  # leaves another thread's tape caches
            j = compaction.new_row(rows, row)
            if j >= 0:
                new.side.shared[key] = j
        preds = [self, *(p for p in (ref() for ref in self.preds) if p is not None)]
        for p in preds[1:]:  # their handles follow straight to the successor
            if p.fwd is not None and p.fwd[0] is self:
                prev = p.fwd[1]
                p.fwd = (new, prev[rows[rows < prev.size]])
        new.preds = [weakref.ref(p) for p in preds]
        new.lin, new.gen, new.fwd = None, -1, None
        new.mark, new.retries = 0, 0  # (reclaim sets them)
        self.fwd = (new, rows)
        self._retire(new)
        return new

    def _move_rows(self, new, rows, sizes):
        """Give ``new`` arrays of its own holding this tape's kept ``rows`` as rows 0..m-1:
        columns (operands renumbered), parameter pools and values.  This tape is left as it
        was, so an interrupt before the successor is published leaves a working tape."""
        n, m = self.n, rows.size
        w = self._code[rows]
        ops = w & 255
        ra = compaction.renumber(rows, ((w >> 8) & compaction.ROW_MASK) - 1)
        rb = compaction.renumber(rows, (w >> 36) - 1)
        cap = 1024
        while cap < 2 * m + 16:
            cap *= 2
        total = int(sizes.sum())
        vcap = 4096
        while vcap < 2 * total:
            vcap *= 2
        new._alloc_rows(cap)
        new._alloc_values(vcap)
        new._code[:m] = ops | (ra + 1) << 8 | (rb + 1) << 36
        new._fp[:m] = self._fp[rows]
        new.rg[:m] = self.rg[rows]
        new.state[:m] = self.state[rows]
        new._voff[1 : m + 1] = np.cumsum(sizes)
        written = np.ones(m, bool)  # a lazy row holds its place in the buffer, empty
        if self.lazy and m:
            lazy = np.fromiter(self.lazy, np.int64, len(self.lazy))
            j = np.searchsorted(rows, lazy)
            j = j[(j < m) & (rows[np.minimum(j, m - 1)] == lazy)]
            written[j] = False
        if total:
            dst, src = compaction.block_moves(
                new._voff[:m][written], self._voff[rows][written], sizes[written]
            )
            new._val[dst] = self._val[src]
        # integer parameters (CLIP's ip names its second float in fpool instead)
        code, ip = self._code[:n], self._ip[:n]
        ips = ip[rows]
        clip = ops == CLIP
        own = (ips > 0) & ~clip
        kept, idx, starts = compaction.pool_blocks(
            ip[(ip > 0) & ((code & 255) != CLIP)], self.np, ips[own]
        )
        new_ip = new._ip
        new_ip[:m][own] = starts[np.searchsorted(kept, ips[own])]
        new.ipool = np.zeros(max(1024, 2 * idx.size + 2), np.int64)
        new.ipool[1 : 1 + idx.size] = self.ipool[idx]
        new.np = 1 + idx.size
        names = own & compaction.NAMES_ROW[ops]
        for p in np.unique(new_ip[:m][names]).tolist():  # a condition row
            new.ipool[p] = np.searchsorted(rows, new.ipool[p])
        for p in np.unique(new_ip[:m][own & (ops == C.CONCAT)]).tolist():  # CONCAT's rows
            k = int(new.ipool[p + 2])
            new.ipool[p + 3 : p + 3 + k] = np.searchsorted(rows, new.ipool[p + 3 : p + 3 + k])
        floats = np.unique(ips[clip])
        new_ip[:m][clip] = 1 + np.searchsorted(floats, ips[clip])
        new.fpool = np.zeros(max(64, 2 * floats.size + 2))
        new.fpool[1 : 1 + floats.size] = self.fpool[floats]
        new.nf = 1 + floats.size
        # shapes: a block is its number of dimensions, then the dimensions
        shs = self.sh[rows]
        blocks = np.unique(shs[shs > 0])
        new.ns = 1
        new.spool = np.zeros(64, np.int64)
        if blocks.size:
            idx, starts = compaction.gather_index(blocks, 1 + self.spool[blocks], 1)
            new.sh[:m][shs > 0] = starts[np.searchsorted(blocks, shs[shs > 0])]
            new.spool = np.zeros(max(64, 2 * idx.size + 2), np.int64)
            new.spool[1 : 1 + idx.size] = self.spool[idx]
            new.ns = 1 + idx.size
        new.n = new.nsync = m
        new.lazy = {}
        for r, v in self.lazy.items():
            j = compaction.new_row(rows, r)
            if j >= 0:
                new.lazy[j] = v

    def _move_handles(self, new, rows):
        """Entered handles, leaf rows and token ranges of kept ``rows`` move to ``new``; entered
        handles of dropped rows are detached (they enter again when used)."""
        m = rows.size
        objs, new.objs = self.objs, {}
        for r, ref in objs.items():
            j = compaction.new_row(rows, r)
            h = ref()
            if j >= 0:
                new.objs[j] = ref
                if h is not None and h._tape is self and h._row == r:
                    h._row = j
                    h._tape = new
            elif h is not None and h._tape is self and h._row == r:
                h._tape = None
                h._row = -1
        new.leaf_rows = [j for j in (compaction.new_row(rows, r) for r in self.leaf_rows) if j >= 0]
        # token ranges: the rows kept of each; a range left empty is dropped
        starts = np.searchsorted(rows, np.asarray(self.starts, np.int64)).tolist()
        new.starts, new.refs = [], []
        for k, s in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else m
            if end > s:
                new.starts.append(s)
                new.refs.append(self.refs[k])
        new.tok = None  # the next row starts a new range
        new.tokend = new.tokval = 0
        new.pc, new.pv, new.pf, new.pip = [], [], [], []
        new.parr = 0
        new.pconst = False

    def discard_from(self, start):
        """Drop rows ``start`` and later: what a transformed function recorded before it
        raised.  Its handles are garbage in a reference cycle with the traceback (alive until
        the cycle collector runs), so they are made stale rather than waited for; returns
        the live tape."""
        self.sync()
        if self.n <= start or not self.alive:
            return self
        if self.held_rows()[1] < start:
            self.truncate(start)
            return self
        return self.retire_to(start)

    def truncate(self, keep):
        """Drop rows ``keep`` and later in place: no graph handle may be alive on them;
        entered handles of dropped rows are detached."""
        self.sync()
        n = self.n
        if self.lin is not None:  # tapes retired before forward to this one: not past keep
            self.lin.cut(keep)
        objs = self.objs
        for r in [r for r in objs if r >= keep]:
            h = objs.pop(r)()
            if h is not None and h._tape is self and h._row == r:
                h._tape = None
                h._row = -1
        k = bisect.bisect_left(self.starts, keep)
        del self.starts[k:]
        del self.refs[k:]
        self.tok = None
        self.set_fast_path()
        self.leaf_rows = [r for r in self.leaf_rows if r < keep]
        for r in [r for r in self.lazy if r >= keep]:
            del self.lazy[r]
        self.side.truncate(keep)
        # parameter pools: rows are pushed in order, so their parameters are too
        ips = self._ip[keep:n]
        ops = self.ops(n)[keep:n]
        clip = ops == CLIP
        pool = ips[(ips > 0) & ~clip]
        if pool.size:
            self.np = int(pool.min())
        fl = ips[(ips > 0) & clip]
        if fl.size:
            self.nf = int(fl.min())
        shp = self.sh[keep:n]
        shp = shp[shp > 0]
        if shp.size:
            self.ns = int(shp.min())
        self._restore_defaults(keep, n)
        self.nsync = keep
        self.n = keep  # publish

    def _restore_defaults(self, lo, hi):
        """Give rows lo..hi-1 the column entries a new row starts from: a pending row writes
        only its code, value and fp when it is flushed (a pushed row writes fp too), so the
        rest must already be right (needing grad, no shape, unreached, and no parameters:
        ``truncate`` finds where the parameter pools end from the ``ip`` of the rows it
        drops)."""
        self.state[lo:hi] = 0
        self.rg[lo:hi] = 1  # constants clear it when pushed
        self.sh[lo:hi] = 0
        self._ip[lo:hi] = 0

    def _successor(self, slots=__slots__[:-1]):
        """A new Tape object holding this one's ``slots`` (its arrays among them)."""
        new = Tape.__new__(Tape)
        for name in slots:
            setattr(new, name, getattr(self, name))
        new.gen = -1
        return new

    def _retire(self, new):
        """Publish ``new`` as the current tape and take this one apart.  Publishing comes
        first: an interrupt past it leaves a working current tape."""
        if STATE.__dict__.get("tape") is self:
            STATE.tape = new
        self.alive = False
        self.owner = new.owner
        self.enabled = True
        try:  # the retired tape drops its arrays; keeps owner/enabled/...
            del self._code, self._ip, self._fp, self.rg, self.state, self.sh
            del self._voff, self._val, self.adj, self.ipool, self.fpool, self.spool
        except AttributeError:  # (a retire interrupted before: the rest may remain)
            for name in Tape.ARRAYS:
                if hasattr(self, name):
                    delattr(self, name)
        # shared read-only empties: a retired tape stays small (a kept stale handle keeps it)
        self.objs = self.lazy = _NO_ROWS
        self.side = SideTables()
        self.leaf_rows = self.starts = self.refs = self.pc = self.pv = self.pf = self.pip = ()
        self.tok = None
        self.n = self.nsync = 0

    def retire_to(self, keep):
        """Cut after row ``keep - 1`` while handles are alive on later rows: a successor keeps
        rows [0, keep) and this tape forwards to it (``live``), so those handles go stale."""
        self.sync()
        new = self._successor()
        new.objs, new.side = dict(self.objs), self.side.copy()
        new.leaf_rows, new.lazy = list(self.leaf_rows), dict(self.lazy)
        new.starts, new.refs = list(self.starts), list(self.refs)
        new.pc, new.pv, new.pf, new.pip = [], [], [], []
        new.preds = []
        new.truncate(keep)
        for r, ref in new.objs.items():  # entered handles of kept rows move along
            h = ref()
            if h is not None and h._tape is self and h._row == r:
                h._tape = new
        for v in new.side.payloads.values():  # and payloads that name their tape
            ref = getattr(v, "tape", None)
            if isinstance(ref, weakref.ref) and ref() is self:
                v.tape = weakref.ref(new)
        lin = self.lin
        if lin is None:
            lin = self.lin = new.lin = Lineage(self)
        # the cut is noted before the successor is named (an interrupt between them leaves
        # fewer valid rows, never more), and both before this tape stops being alive
        self.gen = lin.cut(keep)
        lin.tape = new
        self._retire(new)
        return new

    def reset(self):
        """Empty the tape: a fresh Tape object takes over the arrays; this one is retired.

        Run after every backward of a training loop, so written out rather than looped over
        ``CARRIED`` (a loop of getattr/setattr by name costs ~2 us more a step); a test checks
        that it carries exactly ``CARRIED`` and sets every other slot."""
        new = Tape.__new__(Tape)
        new.owner, new.enabled, new.alive = self.owner, self.enabled, self.alive
        new.anomaly = self.anomaly
        new.cap, new.vcap = self.cap, self.vcap
        new._code, new._ip, new._fp, new.rg = self._code, self._ip, self._fp, self.rg
        new.state, new.sh, new._voff, new._val = self.state, self.sh, self._voff, self._val
        new.adj, new.ipool, new.fpool, new.spool = self.adj, self.ipool, self.fpool, self.spool
        n = self.nsync
        new.pc, new.pv, new.pf, new.pip = [], [], [], []  # pending rows are dropped with the rest
        new.parr = 0
        new.pconst = False
        new.n = new.nsync = 0
        new.np = new.nf = new.ns = 1
        new.objs, new.leaf_rows, new.side, new.lazy = {}, [], SideTables(), {}
        # the first token range starts now, so the first row takes the fast path too
        tok = new.tok = Token()
        new.starts, new.refs, new.tokend = [0], [weakref.ref(tok)], TOKEN_ROWS
        new.tokval = RANGE_VALUES
        new.mark, new.vmark, new.retries = new.cap, RECLAIM_VALUES, 0
        new.gen = -1
        new.fwd, new.preds = None, []
        new.set_fast_path()
        new._restore_defaults(0, n)
        new.lin = None
        self.lin = None  # handles of this tape go stale, whatever cut it came from
        self._retire(new)
        return new

    @property
    def nbytes(self):
        """Bytes of the live part of the tape: columns, pools, values and adjoints."""
        per_row = sum(
            getattr(self, c).itemsize for c in ("_code", "_ip", "_fp", "rg", "state", "sh", "_voff")
        )
        return int(
            self.n * per_row + self.voff[self.n] * 16 + (self.np + self.ns) * 8 + self.nf * 8
        )

    def __len__(self):
        return self.n


class ScratchTape(Tape):
    """A tape that a recording owns from start to end (a checkpointed or custom function's
    scratch tape, a trace): it keeps every row, so the rows the recording holds by number
    (its entered inputs) stay valid whatever the user's code drops meanwhile."""

    __slots__ = ()
    RECLAIMS = False

    def maybe_reset(self, forward=True):
        return self


SHARED = "shares_memory"  # the meta key of a Tensor whose array the caller shares (from_numpy)


def owns(value, handle):
    """May a row hold ``value`` by reference (a lazy row)?  Not a plain array (no handle), a
    read-only view (what ``value_of`` makes of a caller's array, and every view of that) nor
    a Tensor sharing the caller's array: the caller may change it before a backward reads
    it, so it is copied."""
    if handle is None or not (value.flags.writeable or value.base is None):
        return False
    m = getattr(handle, "_m", None)
    return m is None or SHARED not in m


def _dead():
    """Stands for the weakref of a range no token covers."""
    return None


def follow(tape, row):
    """(the live tape that row ``row`` of ``tape`` is on now, its number there), or (None, -1)
    when that row is gone.  A retired tape forwards through a compaction (``fwd``: the rows
    it kept, renumbered in order) or a cut (``lin``: the rows below the cut keep their
    numbers).  Only the owning thread follows (another thread's tapes may be changing).

    >>> import tapegrad as tg
    >>> from tapegrad.core.tape import follow
    >>> y = tg.tensor(1.0, requires_grad=True) * 2.0
    >>> follow(y._tape, y._row) == (tg.current_tape(), y._row)
    True
    """
    while not tape.alive:
        if tape.owner != threading.get_ident():
            return None, -1
        fwd = tape.fwd
        if fwd is not None:
            tape, row = fwd[0], compaction.new_row(fwd[1], row)
            if row < 0:
                return None, -1
            continue
        lin = tape.lin
        if lin is None or lin.tape is tape:
            return None, -1
        gens, keeps = lin.cuts
        k = bisect.bisect_left(gens, tape.gen)
        if k == len(gens) or row >= keeps[k]:
            return None, -1
        tape = lin.tape
    return tape, row


class _ThreadState(threading.local):
    """The one per-thread state: the recording tape (which also carries the grad-mode flag),
    how many transforms (``tg.grad`` & co., a ``tg.trace`` recording) run ``f`` on this thread
    (inside one, a Tensor that requires grad is a traced value and never converts
    implicitly), and the guard of the trace recording on this thread (None outside one: the
    recorder notes there what Python reads of a value a replay may change), and whether the
    outermost transform running was called with Tensors (``torch_code``: PyTorch-style code,
    whose Tensor methods keep PyTorch's meanings) or with NumPy values (NumPy code, where the
    methods whose NumPy and PyTorch meanings differ follow NumPy's: see ``torch_methods``).
    ``vmapping``: how many ``vmap`` calls run their function on this thread (it is called once
    per batch item, so code that updates state, as BatchNorm's running statistics, refuses)."""

    transforms = 0
    vmapping = 0
    held = 0  # code holding row numbers across recorded ops runs (see ``holding_rows``)
    guard = None
    torch_code = False

    def __init__(self):
        self.tape = Tape()

    @property
    def enabled(self):
        return self.tape.enabled

    @enabled.setter
    def enabled(self, flag):
        self.tape.enabled = flag


STATE = _ThreadState()


def holding_rows(fn):
    """Mark ``fn`` as code that keeps row numbers or a tape across the ops it records (a
    backward that records its derivatives, a transform between its function and its sweeps):
    while it runs, a reclaim never compacts the thread's tape (``Tape.compact``)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        held = STATE.held
        STATE.held = held + 1
        try:
            return fn(*args, **kwargs)
        finally:
            STATE.held = held

    return run


def current_tape() -> Tape:
    """The recording tape of the calling thread.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.exp(x).sum()
        >>> "EXP" in tg.current_tape().stats()["by_op"]
        True
    """
    return STATE.tape
