"""The Python floor for recording a scalar op: the least a tape written in Python can do.

Each value is a ``__slots__`` object holding its row; each operator appends one row to four
plain lists (code, operand a, operand b, value) and computes the value with ``math``.  A
recorder that allocates a handle per op and keeps a Wengert list cannot be cheaper than this
in CPython, so tapegrad's recording is budgeted as a ratio of it.  ``backward`` is a plain
reverse sweep, there only to show the rows are a complete tape (its gradient is checked).

>>> tape = Tape()
>>> x = tape.leaf(0.5)
>>> y = sin(x) * 0.9 + x * x * 0.01 + 0.1
>>> round(tape.backward(y)[x.row], 6)
0.799824
"""

import math

LEAF, ADD, ADDC, MUL, MULC, SIN = range(6)


class Tape:
    """Four columns: op code, operand a (a row), operand b (a row or a constant), value."""

    __slots__ = ("code", "a", "b", "val")

    def __init__(self):
        self.code, self.a, self.b, self.val = [], [], [], []

    def leaf(self, value: float) -> "Var":
        """A new input row."""
        self.code.append(LEAF)
        self.a.append(-1)
        self.b.append(0.0)
        self.val.append(value)
        return Var(self, len(self.code) - 1)

    def backward(self, y: "Var") -> list:
        """Adjoints of every row for the output y (a reverse sweep over the columns)."""
        code, a, b, val = self.code, self.a, self.b, self.val
        adj = [0.0] * len(code)
        adj[y.row] = 1.0
        for i in range(y.row, -1, -1):
            g, c = adj[i], code[i]
            if c == ADD:
                adj[a[i]] += g
                adj[b[i]] += g
            elif c == ADDC:
                adj[a[i]] += g
            elif c == MUL:
                adj[a[i]] += g * val[b[i]]
                adj[b[i]] += g * val[a[i]]
            elif c == MULC:
                adj[a[i]] += g * b[i]
            elif c == SIN:
                adj[a[i]] += g * math.cos(val[a[i]])
        return adj


class Var:
    """A handle: the tape and the row its value sits in.  Rows are appended inline (no helper
    call), since this is the floor."""

    __slots__ = ("tape", "row")

    def __init__(self, tape, row):
        self.tape = tape
        self.row = row

    def __add__(self, other):
        t = self.tape
        row = len(t.code)
        val = t.val
        if other.__class__ is Var:
            t.code.append(ADD)
            t.b.append(other.row)
            val.append(val[self.row] + val[other.row])
        else:
            t.code.append(ADDC)
            t.b.append(other)
            val.append(val[self.row] + other)
        t.a.append(self.row)
        return Var(t, row)

    __radd__ = __add__

    def __mul__(self, other):
        t = self.tape
        row = len(t.code)
        val = t.val
        if other.__class__ is Var:
            t.code.append(MUL)
            t.b.append(other.row)
            val.append(val[self.row] * val[other.row])
        else:
            t.code.append(MULC)
            t.b.append(other)
            val.append(val[self.row] * other)
        t.a.append(self.row)
        return Var(t, row)

    __rmul__ = __mul__


def sin(x: Var) -> Var:
    """sin recorded as one row."""
    t = x.tape
    row = len(t.code)
    t.code.append(SIN)
    t.a.append(x.row)
    t.b.append(0.0)
    t.val.append(math.sin(t.val[x.row]))
    return Var(t, row)
