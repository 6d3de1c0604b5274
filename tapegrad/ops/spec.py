"""What an op declaration is, and the facts derived from the declarations.

An op is declared once, in ``elementwise.py`` or ``structural/__init__.py``.  Its code is its position
in ``OPS`` (assigned here, written into the generated kernels by the generator); nothing else
in tapegrad spells an op code.  Derived here, never written by hand:

- ``reads``: which values the backward needs (operands a, b, output o, WHERE's condition c),
  from the derivative formulas (elementwise) or the backward kernel's source (structural);
  it decides which lazily held arrays must be copied onto the tape;
- ``saves``: PyTorch's saved tensors for the in-place version check;
- ``FINGERPRINT``: a hash of every declaration, stamped into the generated kernels so a stale
  kernel module is refused at import.

Each is derived once per version of the declarations (``memo.py``: an import reads them from
the generated ``derived.py`` when the sources are the ones it was generated from).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import re
from types import SimpleNamespace

from . import elementwise, formula, memo, specfuncs, structural
from .decl import Elementwise, Internal, Op, Structural

# ---- the table --------------------------------------------------------------------------------------


def _collect():
    internal = [
        Internal("LEAF"),
        Internal("CONST"),
        Internal("FREED", "FreedBackward0"),
        Internal("CUSTOM", operand_adjoints_only=False),  # reaches rows through its payload
        Internal("GUARD"),
    ]
    unary = [op for op in elementwise.OPS if op.arity == 1]
    binary = [op for op in elementwise.OPS if op.arity == 2]
    return tuple(internal + unary + binary + list(structural.OPS))


OPS: tuple = _collect()
CODE: dict = {op.name: i for i, op in enumerate(OPS)}
NAMES: tuple = tuple(op.name for op in OPS)
C = SimpleNamespace(**CODE)  # op codes by name: C.MUL
OPS_STRUCTURAL = tuple(o for o in OPS if isinstance(o, Structural))

if len(OPS) > 255:
    raise ImportError("tapegrad: more than 255 ops do not fit the 8-bit op field of a tape row")


def op(name: str) -> Op:
    return OPS[CODE[name]]


# ---- derived facts ----------------------------------------------------------------------------------


@functools.cache
def _top_level_sources(path: str) -> dict:
    """name -> (first line, source) of each top-level function of file ``path``, decorators
    included, from one parse of the file (``inspect.getsource`` tokenizes the file at each
    call: for every kernel, that cost each import ~40 ms)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()  # split as linecache splits (inspect's lines), not splitlines
    out = {}
    for node in ast.parse("".join(lines)).body:
        if isinstance(node, ast.FunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[node.name] = (first, "".join(lines[first - 1 : node.end_lineno]))
    return out


@functools.cache
def source(fn) -> str:
    """A kernel's source: written by the declaration (a scan's kernels carry it as
    ``fn.source``), else the function's lines in its file (what ``inspect.getsource`` gives:
    a test checks they agree), once per function."""
    written = getattr(fn, "source", None)
    if isinstance(written, str):
        return written
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_filename.endswith(".py"):
        found = _top_level_sources(code.co_filename).get(fn.__name__)
        if found is not None and found[0] == code.co_firstlineno:
            return found[1]
    return inspect.getsource(fn)


_CALLED = re.compile(r"\b(\w+)\(")


def _kernel_source(fn, helpers) -> str:
    """A kernel's source with the source of every helper it calls (transitively)."""
    by_name = {h.__name__: h for h in helpers}
    src, seen, todo = "", set(), [fn]
    while todo:
        f = todo.pop()
        if f.__name__ in seen:
            continue
        seen.add(f.__name__)
        text = source(f)
        src += text
        called = set(_CALLED.findall(text))
        todo += [h for name, h in by_name.items() if name in called]
    return src


def _structural_reads(o: Structural) -> str:
    """Values a structural backward reads, from its kernels' source (helpers included):
    ``A[pa`` / ``V[pa`` -> a, ``B[pb`` / ``V[pb`` -> b, ``V[lo`` -> o, a condition row -> c."""
    helpers = [h for s in OPS_STRUCTURAL for h in s.helpers]
    src = _kernel_source(o.backward, helpers)
    if callable(o.backward_tangent):
        src += _kernel_source(o.backward_tangent, helpers)
    reads = ""
    if re.search(r"\b(A|V|val)\[\s*(pa|a0)\b", src):
        reads += "a"
    if re.search(r"\b(B|V|val)\[\s*(pb|b0)\b", src):
        reads += "b"
    if re.search(r"\b(V|val)\[\s*lo\b", src):
        reads += "o"
    if re.search(r"\bV\[\s*cond\b", src):
        reads += "c"
    return reads


def reads_of(o: Op) -> str:
    if isinstance(o, Elementwise):
        used = set().union(*(formula.symbols(d) for d in o.d))
        return "".join(k for k, s in (("a", "a"), ("b", "b"), ("o", "out")) if s in used)
    if isinstance(o, Structural):
        return _structural_reads(o)
    return ""


def saves_of(o: Op) -> tuple:
    """(a, b, out): 1 when the backward always needs the value, 2 when only the other
    operand's gradient needs it, 0 never (PyTorch's saved tensors)."""
    if isinstance(o, Elementwise):
        flags = []
        for sym, own in (("a", 0), ("b", 1), ("out", None)):
            users = {k for k, d in enumerate(o.d) if sym in formula.symbols(d)}
            if not users or (o.saved is not None and sym not in o.saved):
                flags.append(0)
            elif own is not None and users == {1 - own}:
                flags.append(2)
            else:
                flags.append(1)
        return tuple(flags)
    r = reads_of(o)
    if o.name == "MATMUL":
        return (2, 2, 0)
    return (1 if "a" in r else 0, 1 if "b" in r else 0, 1 if "o" in r else 0)


memo.rule("reads")(lambda name: reads_of(op(name)))
memo.rule("saves")(lambda name: saves_of(op(name)))
READS: tuple = tuple(memo.derived("reads", o.name) for o in OPS)
SAVES: tuple = tuple(memo.derived("saves", o.name) for o in OPS)


def graph_name(code: int) -> str:
    o = OPS[code]
    return o.graph or o.name.title().replace("_", "") + "Backward0"


def _fingerprint() -> str:
    h = hashlib.sha256()
    h.update(inspect.getsource(specfuncs).encode())
    for o in OPS:
        h.update(repr((type(o).__name__, o.name)).encode())
        if isinstance(o, Elementwise):
            h.update(repr((o.fwd, o.d, o.params)).encode())
        elif isinstance(o, Structural):
            lanes = [f for f in (o.tangent_lanes, o.backward_tangent_lanes) if f is not None]
            for fn in (o.forward, o.backward, o.tangent, o.backward_tangent, *lanes, *o.helpers):
                h.update(source(fn).encode() if callable(fn) else fn.encode())
    return h.hexdigest()[:16]


memo.rule("fingerprint")(lambda _: _fingerprint())
FINGERPRINT: str = memo.derived("fingerprint", "")
DERIVED: dict = memo.snapshot()  # what the generator writes into derived.py

__all__ = [
    "OPS",
    "CODE",
    "C",
    "NAMES",
    "READS",
    "SAVES",
    "FINGERPRINT",
    "Elementwise",
    "Structural",
    "Internal",
    "op",
    "graph_name",
]
