"""``scipy.linalg`` on Tensors: SciPy's names and signatures, differentiable at any order and in
forward mode.  On plain arrays every function is SciPy's own call.

Forward values are SciPy's; derivatives are Tensor expressions (``tapegrad.numpy.rules``):
triangular and banded solves through the dense solve rule (the gradient lands only on the
entries SciPy reads), ``solve_sylvester`` and ``sqrtm`` through Sylvester equations, ``expm``
through the block-triangular identity ``expm([[A, E], [0, A]])[:n, n:] = L(A, E)`` (the
Frechet derivative), so higher derivatives are more of the same ops.

On Tensors the matrix arguments are 2-D (``expm``: batched too); SciPy's batching of the
others is refused with a clear error.
"""

import operator

import numpy as np

from ..core import functions as O
from ..numpy import linalg_ops as _L
from ..numpy.rules import apply
from ..tensor_class import Tensor
from . import require_scipy

_sl = require_scipy("scipy.linalg")

LinAlgError = np.linalg.LinAlgError


def _has_tensor(*xs):
    return any(isinstance(x, Tensor) for x in xs)


def _matrix(a, name, square=True):
    a = O.tensor_of(a)
    if a.ndim != 2 or (square and a.shape[0] != a.shape[1]):
        raise ValueError(
            f"scipy.linalg.{name}: on tapegrad Tensors the matrix must be 2-D"
            f"{' and square' if square else ''}, got shape {a.shape}"
        )
    return a


def _rhs(b, m, name):
    """``b`` as an (M, K) Tensor, and whether it was a vector."""
    b = O.tensor_of(b)
    if b.ndim not in (1, 2) or b.shape[0] != m:
        raise ValueError(
            f"scipy.linalg.{name}: on tapegrad Tensors b must be (M,) or (M, K) "
            f"with M = {m}, got shape {b.shape}"
        )
    return (O.reshape(b, (m, 1)), True) if b.ndim == 1 else (b, False)


def _solved(a_eff, b, name, routine, vjp=None, jvp=None):
    """x = a^-1 b for vector or matrix b, recorded as one op on (``a_eff``, b): its value is
    ``routine(a_eff's values, b's values)``, SciPy's own solver (which raises SciPy's errors),
    run once per call and again at each replay of a trace; its derivatives are a dense
    solve's (or ``vjp`` / ``jvp`` when ``a_eff`` is not the matrix itself)."""
    b2, vec = _rhs(b, a_eff.shape[0], name)
    x = apply(
        f"Scipy{name.title().replace('_', '')}Backward",
        [a_eff, b2],
        lambda av, bv: [routine(av, bv)],
        vjp or _L._solve_vjp,
        jvp or _L._solve_jvp,
    )[0]
    return O.reshape(x, (x.shape[0],)) if vec else x


def _finite(name, *arrays):
    """SciPy's ``check_finite`` on the arrays as given (the recorded op sees only the parts
    SciPy reads)."""
    for v in arrays:
        if not np.all(np.isfinite(v)):
            raise ValueError(f"scipy.linalg.{name}: array must not contain infs or NaNs")


# ---- triangular, Cholesky and banded solves -----------------------------------------------------


def _keep(a, mask):
    """``a`` where ``mask``, zero elsewhere: the entries SciPy does not read are dropped, not
    multiplied by zero (a NaN or inf there, allowed with check_finite=False, would otherwise
    turn the value or the gradient into NaN)."""
    return O.where(mask, a, 0.0)


def _triangle(a, lower, unit_diagonal):
    n = a.shape[-1]
    mask = (
        np.tril(np.ones((n, n), bool), -1 if unit_diagonal else 0)
        if lower
        else np.triu(np.ones((n, n), bool), 1 if unit_diagonal else 0)
    )
    t = _keep(a, mask)
    return O.add(t, np.eye(n)) if unit_diagonal else t


def solve_triangular(
    a,
    b,
    trans=0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
):
    """Solve ``a x = b`` for triangular ``a`` (only its ``lower``/upper triangle is read, and
    its diagonal is taken as ones with ``unit_diagonal``; the gradient follows).

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> a = np.array([[2.0, 9.0], [1.0, 4.0]])
    >>> tg.grad(lambda a: tsl.solve_triangular(a, np.ones(2), lower=True).sum())(a)
    array([[-0.1875 ,  0.     ],
           [-0.125  , -0.03125]])
    """
    if not _has_tensor(a, b):
        return _sl.solve_triangular(a, b, trans, lower, unit_diagonal, overwrite_b, check_finite)
    a = _matrix(a, "solve_triangular")
    if check_finite:
        _finite("solve_triangular", _L._val(a), _L._val(b))
    eff = _triangle(a, lower, unit_diagonal)  # the matrix SciPy's routine reads
    if trans in (1, 2, "T", "C"):
        eff, lower = O.swapaxes(eff, 0, 1), not lower
    elif trans not in (0, "N"):
        raise ValueError(f"scipy.linalg.solve_triangular: invalid trans {trans!r}")

    def routine(av, bv):
        return _sl.solve_triangular(av, bv, 0, lower, False, check_finite=False)

    return _solved(eff, b, "solve_triangular", routine)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` as SciPy: the Cholesky factor in one triangle of ``c``, the other
    triangle of ``a`` passed through unchanged (and differentiable as such).

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> def corner(a):
    ...     c, lower = tsl.cho_factor(a)
    ...     return c[0, 0]
    >>> tg.grad(corner)(np.array([[4.0, 0.0], [0.0, 1.0]]))
    array([[0.25, 0.  ],
           [0.  , 0.  ]])
    """
    if not _has_tensor(a):
        return _sl.cho_factor(a, lower, overwrite_a, check_finite)
    a = _matrix(a, "cho_factor")
    c, lower = _sl.cho_factor(_L._val(a), lower, check_finite=check_finite)
    ones = np.ones((a.shape[0],) * 2, bool)
    f = _L._cholesky_sym(_L._from_triangle(a, lower))
    if lower:
        rest = _keep(a, np.triu(ones, 1))  # the other triangle, passed through
    else:
        f, rest = _L._mT(f), _keep(a, np.tril(ones, -1))
    return O.add(f, rest), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``A x = b`` from ``cho_factor``'s ``(c, lower)`` (only the factor's triangle of
    ``c`` is read).

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> a = np.array([[4.0, 0.0], [0.0, 1.0]])
    >>> tg.grad(lambda a: tsl.cho_solve(tsl.cho_factor(a), np.ones(2)).sum())(a)
    array([[-0.0625, -0.5   ],
           [ 0.    , -1.    ]])
    """
    c, lower = c_and_lower
    if not _has_tensor(c, b):
        return _sl.cho_solve(c_and_lower, b, overwrite_b, check_finite)
    c = _matrix(c, "cho_solve")
    if check_finite:
        _finite("cho_solve", _L._val(c), _L._val(b))
    f = _triangle(c, lower, False)  # the factor: A = f f^T (lower) or f^T f

    def gram(f):
        return O.matmul(f, _L._mT(f)) if lower else O.matmul(_L._mT(f), f)

    def nonsingular(f):
        if np.any(np.diagonal(_L._val(f)) == 0):
            raise LinAlgError(
                "scipy.linalg.cho_solve: the derivative is undefined: the Cholesky factor has "
                "a zero on its diagonal (the matrix is singular; its solution is inf or NaN)"
            )

    def vjp(x, y, g):
        nonsingular(x[0])
        ga, gb = _L._solve_vjp([gram(x[0]), x[1]], y, g)
        sym = O.add(ga, _L._mT(ga))
        return [O.matmul(sym, x[0]) if lower else O.matmul(x[0], sym), gb]

    def jvp(x, y, dx):
        f, df = x[0], dx[0]
        nonsingular(f)
        da = None
        if df is not None:
            half = O.matmul(df, _L._mT(f)) if lower else O.matmul(_L._mT(df), f)
            da = O.add(half, _L._mT(half))
        return _L._solve_jvp([gram(f), x[1]], y, [da, dx[1]])

    def routine(fv, bv):
        return _sl.cho_solve((fv, lower), bv, check_finite=False)

    return _solved(f, b, "cho_solve", routine, vjp, jvp)


def _band_widths(l_and_u):
    try:
        nl, nu = (operator.index(v) for v in l_and_u)
    except (TypeError, ValueError):
        nl = nu = -1
    if nl < 0 or nu < 0:
        raise ValueError(
            "scipy.linalg.solve_banded: (l, u) must be two non-negative integers, the numbers "
            f"of lower and upper diagonals, got {l_and_u!r}"
        )
    return nl, nu


def solve_banded(
    l_and_u, ab, b, overwrite_ab: bool = False, overwrite_b: bool = False, check_finite: bool = True
):
    """Solve ``a x = b`` for banded ``a`` stored as ``ab[u + i - j, j] == a[i, j]``.

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> ab = np.array([[0.0, 1.0], [2.0, 2.0]])          # upper diagonal, then the diagonal
    >>> tg.grad(lambda ab: tsl.solve_banded((0, 1), ab, np.ones(2)).sum())(ab)
    array([[ 0.   , -0.25 ],
           [-0.125, -0.125]])
    """
    if not _has_tensor(ab, b):
        return _sl.solve_banded(l_and_u, ab, b, overwrite_ab, overwrite_b, check_finite)
    nl, nu = _band_widths(l_and_u)
    ab = _matrix(ab, "solve_banded", square=False)
    m = ab.shape[1]
    if ab.shape[0] != nl + nu + 1:
        raise ValueError(
            f"scipy.linalg.solve_banded: invalid values for the number of lower "
            f"and upper diagonals: l+u+1 ({nl + nu + 1}) does not equal "
            f"ab.shape[0] ({ab.shape[0]})"
        )
    if check_finite:
        _finite("solve_banded", _L._val(ab), _L._val(b))
    i, j = np.indices((m, m))
    k = nu + i - j
    band = (k >= 0) & (k <= nl + nu)
    dense = _keep(O.getitem(ab, (np.where(band, k, nu), j)), band)

    def routine(dv, bv):  # the band read back from the dense matrix: ab[u + i - j, j]
        packed = np.zeros((nl + nu + 1, m))
        packed[k[band], j[band]] = dv[band]
        return _sl.solve_banded((nl, nu), packed, bv, check_finite=False)

    return _solved(dense, b, "solve_banded", routine)


# ---- Sylvester, sqrtm, expm ------------------------------------------------------------------


def _sylvester(a, b, q):
    return apply(
        "ScipySolveSylvesterBackward",
        [a, b, q],
        lambda av, bv, qv: [_sl.solve_sylvester(av, bv, qv)],
        _sylvester_vjp,
        _sylvester_jvp,
    )[0]


def _check_separated(a, b, name, why, what="input"):
    """The derivative of the solution of ``a x + x b = q`` solves the same equation again: it
    exists only where the operator is nonsingular, every eigenvalue of a apart from minus every
    eigenvalue of b.  At a singular one LAPACK returns huge or arbitrary numbers: refuse."""
    av, bv = _L._val(a), _L._val(b)
    if not (np.all(np.isfinite(av)) and np.all(np.isfinite(bv))):
        raise LinAlgError(
            f"scipy.linalg.{name}: the derivative is undefined (the {what} is not finite)"
        )
    la, lb = np.linalg.eigvals(av), np.linalg.eigvals(bv)
    gap = np.min(np.abs(la[:, None] + lb[None, :]), initial=np.inf)
    scale = max(np.max(np.abs(la), initial=0.0), np.max(np.abs(lb), initial=0.0))
    if gap <= 8 * max(av.shape[0], bv.shape[0]) * np.finfo(np.float64).eps * scale:
        raise LinAlgError(
            f"scipy.linalg.{name}: the derivative is undefined (infinite) here: {why} "
            "(the Sylvester operator a x + x b is singular); perturb or regularize the input"
        )


def _sylvester_vjp(x, y, g):
    a, b, _ = x
    _check_separated(a, b, "solve_sylvester", "an eigenvalue of a is minus one of b")
    gq = _sylvester(_L._mT(a), _L._mT(b), g[0])
    return [O.neg(O.matmul(gq, _L._mT(y[0]))), O.neg(O.matmul(_L._mT(y[0]), gq)), gq]


def _sylvester_jvp(x, y, dx):
    a, b, _ = x
    _check_separated(a, b, "solve_sylvester", "an eigenvalue of a is minus one of b")
    da, db, dq = dx
    rhs = [] if dq is None else [dq]
    if da is not None:
        rhs.append(O.neg(O.matmul(da, y[0])))
    if db is not None:
        rhs.append(O.neg(O.matmul(y[0], db)))
    total = rhs[0]
    for r in rhs[1:]:
        total = O.add(total, r)
    return [_sylvester(a, b, total)]


def solve_sylvester(a, b, q):
    """Solve ``a x + x b = q``; the derivative solves Sylvester equations again.

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> one = np.array([[1.0]])
    >>> tg.grad(lambda a: tsl.solve_sylvester(a, one, one)[0, 0])(one)
    array([[-0.25]])
    """
    if not _has_tensor(a, b, q):
        return _sl.solve_sylvester(a, b, q)
    a, b = _matrix(a, "solve_sylvester"), _matrix(b, "solve_sylvester")
    q = _matrix(q, "solve_sylvester", square=False)
    if q.shape != (a.shape[0], b.shape[0]):
        raise ValueError(
            f"scipy.linalg.solve_sylvester: q must have shape (M, N) = {(a.shape[0], b.shape[0])}"
            f" for a of shape {a.shape} and b of shape {b.shape}, got {q.shape}"
        )
    return _sylvester(a, b, q)


_SQRTM_SINGULAR = "the square root has a zero eigenvalue (a singular input)"


def _sqrtm_vjp(x, y, g):
    _check_separated(y[0], y[0], "sqrtm", _SQRTM_SINGULAR, "square root")
    s = _L._mT(y[0])
    return [_sylvester(s, s, g[0])]


def _sqrtm_jvp(x, y, dx):
    _check_separated(y[0], y[0], "sqrtm", _SQRTM_SINGULAR, "square root")
    return [_sylvester(y[0], y[0], dx[0])]


def sqrtm(A, **kwargs):  # noqa: N803 - SciPy's name
    """Principal matrix square root ``X`` (``X @ X == A``); its derivative solves
    ``X dX + dX X = dA``.  A complex root (negative eigenvalues) is refused on Tensors.
    With SciPy's (deprecated) ``disp=False`` it returns ``(X, errest)`` as SciPy, the error
    estimate a plain number.

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> tg.grad(lambda a: tsl.sqrtm(a)[0, 0])(np.array([[4.0]]))
    array([[0.25]])
    """
    if not _has_tensor(A):
        return _sl.sqrtm(A, **kwargs)
    a = _matrix(A, "sqrtm")

    def forward(av):
        value = _sl.sqrtm(av, **kwargs)
        if isinstance(value, tuple):  # disp=False: (root, error estimate)
            value = value[0]
        if np.iscomplexobj(value):
            if np.any(np.imag(value) != 0):
                raise ValueError(
                    "scipy.linalg.sqrtm: the square root of this matrix is complex "
                    "(negative eigenvalues); tapegrad differentiates real values only"
                )
            value = np.real(value)
        return [value]

    root = apply("ScipySqrtmBackward", [a], forward, _sqrtm_vjp, _sqrtm_jvp)[0]
    if kwargs.get("disp", True) is False and a.shape[0] > 1:  # SciPy's (deprecated) error
        # estimate, a plain float (SciPy returns 0x0 and 1x1 roots alone)
        rv, av = _L._val(root), _L._val(a)
        if not (np.all(np.isfinite(rv)) and np.all(np.isfinite(av))):
            return root, np.inf
        with np.errstate(all="ignore"):
            return root, np.linalg.norm(rv @ rv - av, "fro") ** 2 / np.linalg.norm(av, "fro")
    return root


def _frechet(a, e):
    """L(a, e), the derivative of expm at ``a`` along ``e``: a block of a bigger expm."""
    n = a.shape[-1]
    zero = O.mul(a, 0.0)
    big = O.concatenate([O.concatenate([a, e], -1), O.concatenate([zero, a], -1)], -2)
    return O.getitem(expm(big), (Ellipsis, slice(0, n), slice(n, None)))


def expm(A):  # noqa: N803 - SciPy's name
    """Matrix exponential (batched over leading axes); the derivative is the Frechet
    derivative, itself a block of ``expm`` of a block-triangular matrix.

    >>> import numpy as np, tapegrad as tg
    >>> import tapegrad.scipy.linalg as tsl
    >>> tg.grad(lambda a: tsl.expm(a)[0, 0])(np.array([[0.0]]))
    array([[1.]])
    """
    if not _has_tensor(A):
        return _sl.expm(A)
    a = O.tensor_of(A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"scipy.linalg.expm: expected a square matrix (or a stack), got shape {a.shape}"
        )
    return apply(
        "ScipyExpmBackward",
        [a],
        lambda av: [_sl.expm(av)],
        lambda x, y, g: [_frechet(_L._mT(x[0]), g[0])],
        lambda x, y, dx: [_frechet(x[0], dx[0])],
    )[0]


__all__ = [
    "cho_factor",
    "cho_solve",
    "expm",
    "solve_banded",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "LinAlgError",
]


def __dir__():
    """The public names only (what SciPy's module of the same name offers, differentiable)."""
    return list(__all__)
