"""What a trace file may hold for each structural op: the checks of its parameters."""

import math

import numpy as np

from ..decl import BadParams

# ---- trace files: the parameters a row may hold --------------------------------------------
# Each check reads a row's parameters (ipool from p on) as a trace file gives them and raises
# BadParams unless they fit the sizes of the row (n) and of its operands (na, nb); ``size``
# holds every row's size.  A replay then never reads outside its arrays.

MAX_NDIM = 64


def _ints(ipool, p, count):
    if p < 1 or count < 0 or p + count > ipool.size:
        raise BadParams(f"points at ipool[{p}:{p + count}], outside the pool of {ipool.size}")
    return [int(v) for v in ipool[p : p + count]]


def where_check(r, p, ipool, fpool, size, na, nb, n):
    (c,) = _ints(ipool, p, 1)
    if not 0 <= c < r or size[c] != n:
        raise BadParams(f"names condition row {c}; it must be an earlier row of size {n}")


def _strided_check(view):
    def check(r, p, ipool, fpool, size, na, nb, n):
        (nd,) = _ints(ipool, p, 1)
        if not 0 <= nd <= MAX_NDIM:
            raise BadParams(f"has ndim {nd} (at most {MAX_NDIM})")
        vals = _ints(ipool, p + 1, 2 * nd + view)
        shape, strides = vals[:nd], vals[nd : 2 * nd]
        base = vals[2 * nd] if view else 0
        if any(s < 0 for s in shape):
            raise BadParams(f"has a negative shape {shape}")
        count = math.prod(shape)
        if count != (n if view else na):
            raise BadParams(f"shape {shape} holds {count} values, not {n if view else na}")
        if count:
            lo = base + sum(min(0, (s - 1) * st) for s, st in zip(shape, strides))
            hi = base + sum(max(0, (s - 1) * st) for s, st in zip(shape, strides))
            limit = na if view else n
            if lo < 0 or hi >= limit:
                raise BadParams(f"reaches offsets {lo}..{hi} of an array of {limit}")

    return check


view_check, reduce_check = _strided_check(True), _strided_check(False)


def matmul_check(r, p, ipool, fpool, size, na, nb, n):
    nb_, m, k, nn, ta, tb = _ints(ipool, p, 6)
    if (
        min(nb_, m, k, nn) < 0
        or na != nb_ * m * k
        or nb != nb_ * k * nn
        or n != nb_ * m * nn
        or ta not in (0, 1)
        or tb not in (0, 1)
    ):
        raise BadParams(
            f"matmul sizes {nb_}x{m}x{k}x{nn} (transposed {ta}, {tb}) disagree with the operands"
        )


def scan_check(r, p, ipool, fpool, size, na, nb, n):
    outer, m, inner, rev = _ints(ipool, p, 4)
    if min(outer, m, inner) < 0 or n != outer * m * inner or na != n or rev not in (0, 1):
        raise BadParams(f"scan sizes {outer}x{m}x{inner} disagree with the operands")


def concat_check(r, p, ipool, fpool, size, na, nb, n):
    outer, inner, k = _ints(ipool, p, 3)
    if min(outer, inner, k) < 0:
        raise BadParams("has a negative count")
    rows_lens = _ints(ipool, p + 3, 2 * k)
    parts, lens = rows_lens[:k], rows_lens[k:]
    if (
        any(not 0 <= q < r for q in parts)
        or any(x < 0 for x in lens)
        or any(size[q] != outer * x * inner for q, x in zip(parts, lens))
        or n != outer * inner * sum(lens)
    ):
        raise BadParams("concatenates rows or sizes that do not fit the row")


def _index_check(name):
    def check(r, p, ipool, fpool, size, na, nb, n):
        (m,) = _ints(ipool, p, 1)
        if m < 0:
            raise BadParams(f"has a negative count {m}")
        idx = np.asarray(_ints(ipool, p + 1, m), np.int64)
        if name == "gather":
            ok = m == n and (not m or (idx.min() >= 0 and idx.max() < na))
        elif name == "scatter":
            ok = na == m and (not m or (idx.min() >= 0 and idx.max() < n))
        else:
            ok = na == n and nb == m and (not m or (idx.min() >= 0 and idx.max() < n))
        if not ok:
            raise BadParams(f"{name} indices or sizes are out of range")

    return check


gather_check, scatter_check, setitem_check = map(_index_check, ("gather", "scatter", "setitem"))


def no_params_check(r, p, ipool, fpool, size, na, nb, n):
    """An op without parameters to check (its operand sizes are checked as elementwise)."""
