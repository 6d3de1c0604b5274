"""Elementwise choice: where."""


# ---- elementwise choice: ipool[p] is the row of the 0/1 condition -----------------------------------


def where_forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool):
    cond = voff[ipool[p]]
    for j in range(n):
        D[lo + j] = A[pa + j] if V[cond + j] != 0.0 else B[pb + j]


def where_backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind):
    cond = voff[ipool[p]]
    ga = rg[ra] != 0
    gb = rg[rb] != 0
    if ga:
        state[ra] |= 1
    if gb:
        state[rb] |= 1
    for j in range(n):
        if V[cond + j] != 0.0:
            if ga:
                D[pa + j] += G[lo + j]
        elif gb:
            D[pb + j] += G[lo + j]
    return 0


def _where_cond(rows, r, shape):
    return rows.value(rows.ints(r, 0, 1)[0]).reshape(shape) != 0.0


def where_vjp(rows, r, g):
    ra, rb = rows.operands(r)
    cond = _where_cond(rows, r, g.shape)
    O = rows.ops
    return [(ra, O.where(cond, g, 0.0)), (rb, O.where(cond, 0.0, g))]


def where_jvp(rows, r, tangent):
    ra, rb = rows.operands(r)
    ta, tb = tangent(ra), tangent(rb)
    if ta is None and tb is None:
        return None
    shape = rows.shape(r)
    return rows.ops.where(
        _where_cond(rows, r, shape), 0.0 if ta is None else ta, 0.0 if tb is None else tb
    )
