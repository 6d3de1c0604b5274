"""The njit helpers structural kernels call, and the status a large matmul returns."""

import numpy as np

HIT_MATMUL = 4  # status: a large matmul for NumPy's BLAS (kept equal in the sweeps)
SMALL_MATMUL = 1 << 16
# The flags and counts one kernel passes another (the same in the sweeps): a literal True or 0
# in a call from compiled code makes Numba compile the callee again for that literal (a second
# copy of a whole sweep), where these are the plain bool / int64 every other caller passes.
TRUE, FALSE, ZERO, ONE = np.bool_(True), np.bool_(False), np.int64(0), np.int64(1)


# ---- helpers the kernels call ----------------------------------------------------------------------


def strided_offsets(ipool, p, ndim, base):
    """Flat offsets base + sum(idx[d] * stride[d]) for every multi-index idx (C order) of the
    shape ipool[p:p+ndim] with strides ipool[p+ndim:p+2*ndim]."""
    n = 1
    for d in range(ndim):
        n *= ipool[p + d]
    out = np.empty(n, np.int64)
    if n == 0:
        return out
    idx = np.zeros(max(ndim, 1), np.int64)
    cur = base
    for j in range(n):
        out[j] = cur
        d = ndim - 1
        while d >= 0:
            idx[d] += 1
            cur += ipool[p + ndim + d]
            if idx[d] < ipool[p + d]:
                break
            cur -= ipool[p + ndim + d] * idx[d]
            idx[d] = 0
            d -= 1
    return out


def pairwise_sum(val, s, n):
    """NumPy's pairwise summation of val[s:s+n] (same blocking, same order)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += val[s + i]
        return res
    if n <= 128:
        r0 = val[s]
        r1 = val[s + 1]
        r2 = val[s + 2]
        r3 = val[s + 3]
        r4 = val[s + 4]
        r5 = val[s + 5]
        r6 = val[s + 6]
        r7 = val[s + 7]
        i = 8
        while i < n - (n % 8):
            r0 += val[s + i]
            r1 += val[s + i + 1]
            r2 += val[s + i + 2]
            r3 += val[s + i + 3]
            r4 += val[s + i + 4]
            r5 += val[s + i + 5]
            r6 += val[s + i + 6]
            r7 += val[s + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += val[s + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(val, s, n2) + pairwise_sum(val, s + n2, n - n2)


def reduce_groups(V, pa, lo, n, offs, m):
    """Per output q of a product reduction: zero count, product of the non-zeros, first and
    second zero position, sum of t/x over non-zeros is left to the caller."""
    zc = np.zeros(n, np.int64)
    pnz = np.ones(n)
    z1 = np.full(n, -1, np.int64)
    z2 = np.full(n, -1, np.int64)
    for j in range(m):
        q = offs[j]
        x = V[pa + j]
        if x == 0.0:
            if zc[q] == 0:
                z1[q] = j
            elif zc[q] == 1:
                z2[q] = j
            zc[q] += 1
        else:
            pnz[q] *= x
    return zc, pnz, z1, z2


# ---- kernels written as source text -------------------------------------------------------------


def kernel_from_source(source: str, name: str, namespace: dict):
    """The kernel ``name`` defined by ``source`` as a Python function (the Python twin runs
    it) that carries its ``source`` (the generator copies that into the generated module, and
    ``spec.source`` reads it for READS and the fingerprint)."""
    ns = dict(namespace)
    exec(compile(source, f"<kernel {name}>", "exec"), ns)  # noqa: S102 - our own kernels
    fn = ns[name]
    fn.source = source
    return fn
