"""Trace files and pickles: the version and op-table stamps, the checksum, and the validation
of every field before compiled code reads a loaded trace (the trust model: ``load_trace``)."""

import hashlib
import math

import numpy as np

from .._version import __version__
from ..ops.decl import BadParams, Elementwise, Structural
from ..ops.spec import CODE, FINGERPRINT, NAMES, OPS
from ..ops.structural.file_checks import MAX_NDIM

_ARRAYS = ("code", "ip", "fp", "voff", "rg", "ipool", "fpool", "val")


# ---- files: checksum, versions, validation -------------------------------------------------------
# Trust model: ``tr.save``/``tg.load_trace`` files are plain arrays plus JSON (np.load with
# allow_pickle=False): loading one never runs code, and every field is checked against bounds
# before compiled code reads it, so a corrupted or crafted file raises ValueError instead of
# reading or writing out of bounds.  A pickled trace is plain pickle: unpickling runs whatever
# the pickle says, so unpickle only traces you trust (its fields are validated all the same).

_DTYPES = {
    "code": np.int64,
    "ip": np.int64,
    "fp": np.float64,
    "voff": np.int64,
    "rg": np.int8,
    "ipool": np.int64,
    "fpool": np.float64,
    "val": np.float64,
}


def op_table_fingerprint():
    """The op spec's fingerprint: traces only replay on kernels generated from the same spec."""
    return FINGERPRINT


def _version():
    return __version__


def _checksum(arrays, meta_json):
    h = hashlib.sha256()
    for k in _ARRAYS:
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    h.update(meta_json.encode())
    return h.hexdigest()


def _check_stamp(version, table, what):
    mine, table_now = _version(), op_table_fingerprint()
    if table != table_now:
        raise ValueError(
            f"{what} was written by tapegrad {version} with op table {table}; this "
            f"is tapegrad {mine} with op table {table_now}. The op codes differ, "
            "so it cannot be replayed here: record the trace again"
        )
    if version != mine:
        raise ValueError(
            f"{what} was written by tapegrad {version}; this is tapegrad {mine}. "
            "Record the trace again with this version"
        )


def _bad(field, why):
    raise ValueError(
        f"trace file: field {field} {why}; the file is corrupted or was not written by Trace.save"
    )


def _validate(arrays, meta):
    """Check every field a replay reads against bounds (see the trust model above)."""
    for k, dt in _DTYPES.items():
        a = arrays.get(k)
        if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype != dt:
            _bad(k, f"must be a 1-D {np.dtype(dt).name} array")
    code, ip, voff, rg = arrays["code"], arrays["ip"], arrays["voff"], arrays["rg"]
    ipool, fpool, val = arrays["ipool"], arrays["fpool"], arrays["val"]
    n = code.size
    if n < 1 or ip.size != n or arrays["fp"].size != n or rg.size != n or voff.size != n + 1:
        _bad("code/ip/fp/rg/voff", f"lengths disagree ({n} rows; voff needs {n + 1} entries)")
    if ipool.size < 1 or fpool.size < 1:
        _bad("ipool/fpool", "must not be empty")
    if voff[0] != 0 or np.any(np.diff(voff) < 0) or voff[-1] > val.size:
        _bad("voff", f"must rise from 0 to at most the {val.size} values")
    if np.any((rg != 0) & (rg != 1)):
        _bad("rg", "must be 0 or 1")
    if np.any(code < 0):
        _bad("code", "has a negative entry")
    ops = code & 255
    ra = ((code >> 8) & 0xFFFFFFF) - 1
    rb = (code >> 36) - 1
    names = NAMES
    if np.any(ops >= len(names)):
        r = int(np.flatnonzero(ops >= len(names))[0])
        _bad("code", f"has op code {int(ops[r])} at row {r}, beyond the op table")
    rows = np.arange(n)
    size = np.diff(voff)
    code_of = {name: i for i, name in enumerate(names)}
    # operand layouts from the op spec: elementwise ops by arity, structural ones as declared
    # (their arity, whether operands are the row's size, and a check of their parameters)
    held = {i: o for i, o in enumerate(OPS) if isinstance(o, Structural) and o.check}
    elementwise2 = [i for i, o in enumerate(OPS) if isinstance(o, Elementwise) and o.arity == 2]
    unary = [i for i, o in enumerate(OPS) if isinstance(o, Elementwise) and o.arity == 1]
    unary += [i for i, o in held.items() if o.arity == 1 and o.same_size]
    binary = elementwise2 + [i for i, o in held.items() if o.arity == 2]
    same_size = unary + elementwise2 + [i for i, o in held.items() if o.arity == 2 and o.same_size]
    no_operands = [code_of["LEAF"], code_of["CONST"]] + [i for i, o in held.items() if not o.arity]
    known = set(unary) | set(binary) | set(no_operands) | set(held) | {code_of["GUARD"]}
    two_params = [i for i, o in enumerate(OPS) if isinstance(o, Elementwise) and o.params == 2]
    for r in np.flatnonzero(~np.isin(ops, list(known))):
        _bad("code", f"has op {names[ops[r]]} at row {r}, which a trace cannot hold")
    uses_a = ~np.isin(ops, no_operands)
    uses_b = np.isin(ops, binary)
    for field, used, rr in (("operand a", uses_a, ra), ("operand b", uses_b, rb)):
        bad = np.flatnonzero(np.where(used, (rr < 0) | (rr >= rows), rr != -1))
        guard_b = (
            bad[(ops[bad] == code_of["GUARD"]) & (rr[bad] >= -1) & (rr[bad] < bad)]
            if field == "operand b"
            else bad[:0]
        )
        bad = np.setdiff1d(bad, guard_b)
        if bad.size:
            r = int(bad[0])
            _bad(
                f"code (row {r}, {names[ops[r]]})",
                f"{field} is row {int(rr[r])}; it must "
                "be an earlier row" + (" or -1" if not used[r] else ""),
            )
    a_size = np.where(uses_a, size[np.clip(ra, 0, n - 1)], 0)
    b_size = np.where(rb >= 0, size[np.clip(rb, 0, n - 1)], 0)
    elementwise = np.isin(ops, same_size)
    # a two-operand elementwise op broadcasts an operand of one value over its row
    one_ok = np.isin(ops, elementwise2)
    a_off = (a_size != size) & ~(one_ok & (a_size == 1))
    b_off = (b_size != size) & ~(one_ok & (b_size == 1))
    bad = np.flatnonzero((elementwise & a_off) | (uses_b & elementwise & b_off))
    if bad.size:
        r = int(bad[0])
        _bad(
            f"voff (row {r}, {names[ops[r]]})",
            "gives an operand a size other than the row's own (or 1, for a two-operand "
            "elementwise op)",
        )
    for r in np.flatnonzero(np.isin(ops, [*held, code_of["GUARD"], *two_params])):
        _check_params(
            names[ops[r]],
            int(r),
            int(ip[r]),
            ipool,
            fpool,
            size,
            int(a_size[r]),
            int(b_size[r]),
            int(size[r]),
            int(rb[r]) >= 0,
        )
    _check_meta(meta, n, voff, size)


def _ints(ipool, p, count, field):
    if p < 1 or count < 0 or p + count > ipool.size:
        _bad(field, f"points at ipool[{p}:{p + count}], outside the pool of {ipool.size}")
    return [int(v) for v in ipool[p : p + count]]


def _check_params(name, r, p, ipool, fpool, size, na, nb, n, has_b):
    field = f"ipool (row {r}, {name})"
    spec = OPS[CODE[name]]
    if isinstance(spec, Elementwise) and spec.params == 2:  # c2 = fpool[ip[row]]
        if not 0 <= p < fpool.size:
            _bad(f"ip (row {r}, {name})", f"is {p}, outside fpool of {fpool.size}")
        return
    if name == "GUARD":
        (kind,) = _ints(ipool, p, 1, field)
        if not 0 <= kind <= 6 or na < n or (has_b and nb < n):
            _bad(field, f"guard kind {kind} or operand sizes are out of range")
        return
    if spec.check is not None:
        try:
            spec.check(r, p, ipool, fpool, size, na, nb, n)
        except BadParams as e:
            _bad(field, str(e))
        return
    _bad(f"code (row {r})", f"has op {name}, which has no validation rule")


def _check_meta(meta, n, voff, size):
    try:
        m, ng = int(meta["m"]), int(meta["ng"])
        specs, out_spec = meta["specs"], meta["out_spec"]
        argnums = [int(a) for a in meta["argnums"]]
        sites = meta["sites"]
    except (KeyError, TypeError, ValueError):
        _bad("meta", "is missing entries or has entries of the wrong type")
    if not 0 <= ng <= m <= voff[-1] or m not in set(voff.tolist()):
        _bad("meta m/ng", f"({m}, {ng}) do not fit the input rows")
    if (
        not isinstance(specs, list)
        or any(not 0 <= a < len(specs) for a in argnums)
        or len(set(argnums)) != len(argnums)
        or not argnums
    ):
        _bad("meta argnums", f"{argnums} do not fit the {len(specs)} arguments")
    sizes = [_spec_size(s) for s in specs]
    if sum(sizes) != m or sum(sizes[a] for a in argnums) != ng:
        _bad("meta specs", f"hold {sum(sizes)} input values, not {m}")
    _check_out(out_spec, n, size)
    for s in sites:
        if not isinstance(s, list) or len(s) != 4 or not isinstance(s[0], int) or not 0 <= s[0] < n:
            _bad("meta sites", "has an entry that is not [row, site, text, what]")


def _spec_size(spec):
    if not isinstance(spec, list) or not spec or spec[0] not in ("f", "s", "a", "l", "t", "d"):
        _bad("meta specs", f"has a malformed entry {str(spec)[:40]}")
    kind = spec[0]
    if kind == "f":
        if (
            len(spec) < 3
            or not isinstance(spec[1], list)
            or len(spec[1]) > MAX_NDIM
            or any(not isinstance(d, int) or d < 0 for d in spec[1])
        ):
            _bad("meta specs", f"has a malformed shape {str(spec)[:40]}")
        return math.prod(spec[1])
    if kind in "lt":
        return sum(_spec_size(s) for s in spec[1])
    if kind == "d":
        if len(spec[1]) != len(spec[2]):
            _bad("meta specs", "has a dict with mismatched keys")
        return sum(_spec_size(s) for s in spec[2])
    return 0


def _check_out(spec, n, size):
    if not isinstance(spec, list) or not spec:
        _bad("meta out_spec", "is malformed")
    kind = spec[0]
    if kind == "f":
        if (
            len(spec) != 4
            or not isinstance(spec[3], int)
            or not 0 <= spec[3] < n
            or not isinstance(spec[1], list)
            or len(spec[1]) > MAX_NDIM
            or any(not isinstance(d, int) or d < 0 for d in spec[1])
            or math.prod(spec[1]) != size[spec[3]]
        ):
            _bad("meta out_spec", f"names a row or shape that does not fit: {str(spec)[:60]}")
    elif kind in "lt":
        for s in spec[1]:
            _check_out(s, n, size)
    elif kind == "d":
        for s in spec[2]:
            _check_out(s, n, size)
    elif kind != "s":
        _bad("meta out_spec", "is malformed")
