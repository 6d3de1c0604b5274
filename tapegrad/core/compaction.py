"""Which rows a tape keeps when it is compacted, and where their parameters move.

A Wengert tape can only be cut at its top (``Tape.truncate``, ``Tape.reset``).  A loop that
holds its latest result and never calls backward (``out = model(x)`` in an evaluation loop)
always holds a graph at the top, and the rows of every earlier iteration sit below it where
nothing can reach them.  Compaction keeps the rows a held graph can still reach and moves them
to the bottom of the same arrays, in their order (a row only reads earlier rows, so the order
is a valid tape), renumbering the rows their operands name.  This module computes the rows and
the gathers; ``Tape.compact`` applies them.  Only arrays are handled here: no Python object
per row.
"""

import numpy as np

from ..ops.spec import OPS, READS, C

ROW_MASK = 0xFFFFFFF  # an operand row is packed into 28 bits of the code word
# ops whose parameters name a row: WHERE's condition row at ipool[ip], CONCAT's operands
NAMES_ROW = np.array(["c" in r for r in READS])
# ops that reach rows through Python payloads (a custom op, a trace guard): never moved
_UNMOVABLE = np.zeros(256, bool)
_UNMOVABLE[[C.CUSTOM, C.GUARD]] = True
_UNMOVABLE[len(OPS) :] = True
MAX_ROUNDS = 16  # levels of rows outside the held ranges followed before giving up


def operands(code, ip, ipool, rows):
    """Every row that ``rows`` read: operands, condition rows, CONCAT's listed rows (-1:
    none)."""
    w = code[rows]
    ops = w & 255
    found = [((w >> 8) & ROW_MASK) - 1, (w >> 36) - 1]
    cond = rows[NAMES_ROW[ops]]
    if cond.size:
        found.append(ipool[ip[cond]])
    for r in rows[ops == C.CONCAT].tolist():
        p = int(ip[r])
        found.append(ipool[p + 3 : p + 3 + int(ipool[p + 2])])
    return np.concatenate(found)


def reachable(code, ip, ipool, held, rounds=MAX_ROUNDS):
    """The rows (ascending) marked in ``held`` and every row they read, directly or through
    other rows; None when a row's op reaches rows through a Python payload, or when more than
    ``rounds`` levels of rows outside ``held`` are read (a long chain below the held graph,
    which a compaction would keep whole anyway)."""
    keep = held.copy()
    front = np.flatnonzero(held)
    for _ in range(rounds + 1):
        if not front.size:
            return np.flatnonzero(keep)
        if _UNMOVABLE[code[front] & 255].any():
            return None
        r = operands(code, ip, ipool, front)
        r = r[r >= 0]
        r = np.unique(r[~keep[r]])
        keep[r] = True
        front = r
    return None


def new_row(rows, r):
    """Row ``r``'s number among the kept ``rows`` (ascending), or -1 when it was dropped."""
    j = int(np.searchsorted(rows, r))
    return j if j < rows.size and rows[j] == r else -1


def renumber(rows, r):
    """The new numbers of rows ``r`` (all among the kept ``rows``; -1 stays -1)."""
    return np.where(r >= 0, np.searchsorted(rows, r), -1)


def gather_index(starts, lengths, first):
    """The source positions of blocks ``[starts[i], starts[i] + lengths[i])`` written one after
    another from position ``first``, and each block's new start."""
    ends = np.cumsum(lengths)
    new = first + ends - lengths
    idx = np.repeat(starts - new, lengths) + np.arange(first, first + int(ends[-1]))
    return idx, new


def block_moves(dst_starts, src_starts, lengths):
    """(destination, source) positions that move blocks ``[src, src + length)`` to
    ``[dst, dst + length)``."""
    total = int(lengths.sum())
    block = np.repeat(np.arange(lengths.size), lengths)
    within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return dst_starts[block] + within, src_starts[block] + within


def pool_blocks(all_starts, used, kept_starts):
    """Blocks of a parameter pool: each starts where a row's parameters start and ends where the
    next row's start (rows append their parameters in order), the last one at ``used``.
    Returns (the kept blocks' unique starts, their gather index into new positions from 1,
    their new starts)."""
    kept = np.unique(kept_starts)
    if not kept.size:
        return kept, np.zeros(0, np.int64), kept
    starts = np.unique(all_starts)
    ends = np.append(starts[1:], used)
    lengths = ends[np.searchsorted(starts, kept)] - kept
    idx, new = gather_index(kept, lengths, 1)
    return kept, idx, new
