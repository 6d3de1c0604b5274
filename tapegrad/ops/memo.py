"""Facts derived from the op declarations, derived once per version of the declarations.

Deriving them at import (each formula's partial derivative, the values each backward reads,
the scans' kernel sources, the fingerprint) parses formulas and kernel sources: ~45 ms of
every ``import tapegrad``.  The generator writes what an import derived into ``derived.py``
beside a hash of this package's sources; an import whose sources hash the same reads each
fact from there, any other derives it (a test derives every entry again and compares).

A fact is ``derived(kind, key)``: ``key`` (a string or a tuple of literals) is everything the
rule registered for ``kind`` needs, and the value is a literal (strings, tuples).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

try:
    from . import derived
except ImportError:  # not generated yet
    derived = None

_HERE = Path(__file__).resolve().parent
GENERATED = _HERE / "derived.py"


def sources_hash() -> str:
    """A hash of every source file of the ops package but ``derived.py`` (~1 ms)."""
    h = hashlib.sha256()
    for path in sorted(_HERE.rglob("*.py")):
        if path != GENERATED:
            h.update(path.relative_to(_HERE).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _generated_table() -> dict:
    if derived is None or derived.SOURCES != sources_hash():
        return {}
    return derived.TABLE


_TABLE: dict = _generated_table()
_RULES: dict = {}
_DERIVED: dict = {}


def rule(kind: str) -> Callable:
    """Register the function deriving the facts of ``kind`` from their keys."""

    def register(fn):
        _RULES[kind] = fn
        return fn

    return register


def derived(kind: str, key):
    """The fact ``kind`` of ``key``: from the generated table when it is current, else
    derived by the rule of ``kind``."""
    try:
        value = _TABLE[kind, key]
    except KeyError:
        value = _RULES[kind](key)
    _DERIVED[kind, key] = value
    return value


def derive_again(kind: str, key):
    """The fact derived by its rule, whatever the table holds (for the test)."""
    return _RULES[kind](key)


def snapshot() -> dict:
    """Every fact asked for so far ((kind, key) -> value)."""
    return dict(_DERIVED)


def from_table() -> bool:
    """Whether this import read the generated table (its sources hash the same)."""
    return bool(_TABLE)
