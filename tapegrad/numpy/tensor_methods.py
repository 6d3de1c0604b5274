"""Tensor methods with PyTorch's names built on ``tapegrad.numpy``'s functions: ``x.det()``,
``x.slogdet()``, ``x.inverse()``, ``x.cholesky()``, ``x.i0()`` ...

``LinalgMethods`` is one of the base classes the public ``Tensor`` is assembled from (see
``tapegrad/tensor_class.py``); the methods mean what PyTorch's do (``torch.logdet`` is NaN for
a negative determinant, ``torch.cholesky``'s gradient is symmetric).
"""

from collections import namedtuple

import numpy as np

from ..core import functions as O
from ..core.torch_functions import _method_function as method_function
from . import composites
from . import linalg_ops as la

SlogdetResult = namedtuple("slogdet", ("sign", "logabsdet"))


def symmetric_gradient(A, lower):
    """A symmetric matrix whose value is ``A``'s ``lower`` (else upper) triangle mirrored and
    whose gradient is PyTorch's: ``(A + A^T) / 2`` carries it, the triangle's difference from
    that (zero for a symmetric ``A``) is added as a constant."""
    n = A.shape[-1]
    below = np.tri(n, n, -1, dtype=bool)
    tri = below if lower else below.T
    At = O.swapaxes(A, -1, -2)
    mirrored = O.where(tri, A, O.where(tri.T, At, A))
    sym = O.mul(O.add(A, At), 0.5)
    return O.add(sym, O.sub(mirrored, sym).detach())


def _det(self):
    """``x.det()``: the determinant of a square matrix (or of each in a batch).

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
        >>> d = A.det(); round(d.item(), 12)
        5.0
        >>> d.backward(); A.grad.numpy().round(12).tolist()  # the adjugate's transpose
        [[3.0, -1.0], [-1.0, 2.0]]
    """
    return la.det(self)


def _slogdet(self):
    """``x.slogdet()``: the named tuple ``(sign, logabsdet)`` of the determinant.

    >>> import tapegrad as tg
    >>> tg.tensor([[0.0, 2.0], [1.0, 0.0]]).slogdet()
    slogdet(sign=tensor(-1.), logabsdet=tensor(0.6931))
    """
    sign, logabsdet = la.slogdet(self)
    return SlogdetResult(sign.detach(), logabsdet)  # the sign is piecewise constant


def _logdet(self):
    """``x.logdet()``: ``log(det(x))``, computed as ``slogdet``: NaN where the determinant is
    negative and -inf where it is 0, as PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[2.0, 0.0], [0.0, 3.0]], requires_grad=True)
        >>> y = A.logdet(); y.item() == float(tg.tensor(6.0).log())
        True
        >>> y.backward(); A.grad                 # the inverse's transpose
        tensor([[0.5000, 0.0000],
                [0.0000, 0.3333]])
        >>> tg.tensor([[0.0, 1.0], [1.0, 0.0]]).logdet()
        tensor(nan)
    """
    sign, logabsdet = la.slogdet(self)
    positive = (sign > 0.0).numpy()  # (comparisons a trace guards)
    if positive.all():
        return logabsdet
    other = np.where((sign == 0.0).numpy(), -np.inf, np.nan)
    return O.where(positive, logabsdet, other)


def _inverse(self):
    """``x.inverse()``: the inverse of a square matrix (or of each in a batch).

    >>> import tapegrad as tg
    >>> tg.tensor([[2.0, 0.0], [0.0, 4.0]]).inverse()
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    return la.inv(self)


def _pinverse(self, rcond=1e-15):
    """``x.pinverse(rcond=1e-15)``: the pseudo-inverse, singular values below ``rcond`` times
    the largest counted as zero (PyTorch's ``torch.pinverse``).

    >>> import tapegrad as tg
    >>> tg.tensor([[2.0, 0.0], [0.0, 0.0]]).pinverse()
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    return la.pinv(self, rcond=rcond)


def _cholesky(self, upper=False):
    """``x.cholesky(upper=False)``: the Cholesky factor of a symmetric positive-definite matrix
    (lower, or upper with ``upper=True``), reading one triangle for the value and with
    PyTorch's symmetric gradient (as ``tg.linalg.cholesky``).

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[4.0, 2.0], [2.0, 5.0]], requires_grad=True)
        >>> L = A.cholesky(); L
        tensor([[2., 0.],
                [1., 2.]], grad_fn=<LinalgCholeskyBackward>)
        >>> A.cholesky(upper=True)
        tensor([[2., 1.],
                [0., 2.]], grad_fn=<ViewBackward0>)
    """
    return la.cholesky(symmetric_gradient(self, not upper), upper=upper)


def _i0(self):
    """``x.i0()``: the modified Bessel function of the first kind of order 0 (derivative
    ``i1``, every order).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([0.0, 1.0], requires_grad=True)
        >>> y = x.i0(); y.detach()
        tensor([1.0000, 1.2661])
        >>> y.sum().backward(); x.grad           # i1(0), i1(1)
        tensor([0.0000, 0.5652])
    """
    return composites.i0(self)


QRResult = namedtuple("qr", ("Q", "R"))
SVDResult = namedtuple("svd", ("U", "S", "V"))
TriangularSolveResult = namedtuple("triangular_solve", ("solution", "cloned_coefficient"))


def _matrices(name, A, what="A", square=True):
    """Refuse, as PyTorch, a ``what`` of fewer than 2 dims or (``square``) not square."""
    if A.ndim < 2:
        raise RuntimeError(
            f"{name}: {what} must have at least 2 dimensions, but it has {A.ndim} (shape "
            f"{tuple(A.shape)}); give a matrix or a batch of matrices"
        )
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: {what} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )


def triangle(A, lower):
    """``A``'s lower (else upper) triangle, the other zero (not read: a NaN there stays out)."""
    n, m = A.shape[-2:]
    return O.where(np.tri(n, m, dtype=bool) if lower else ~np.tri(n, m, -1, dtype=bool), A, 0.0)


def _qr(self, some=True):
    """``x.qr(some=True)``: PyTorch's ``torch.qr``, the named tuple ``(Q, R)`` of the QR
    decomposition (``some=False``: the complete one, differentiable when the matrix is not
    tall), as ``tg.linalg.qr(x, "reduced" / "complete")``.

    Examples:
        >>> import tapegrad as tg
        >>> Q, R = tg.tensor([[3.0, 0.0], [4.0, 5.0]]).qr()
        >>> abs(R[0, 0].item())
        5.0
    """
    _matrices("Tensor.qr", self, "the input", square=False)
    m, n = self.shape[-2:]
    if not some and m > n:  # the extra columns of Q are not unique
        if self.requires_grad:
            raise TypeError(
                f"Tensor.qr: some=False on a tall matrix ({m} x {n}) adds columns of Q that "
                "are not unique, so it has no derivative (PyTorch raises in backward); use "
                "some=True, or x.detach().qr(some=False) for the values"
            )
        q, r = np.linalg.qr(self.numpy(), mode="complete")
        return QRResult(O.tensor_of(q), O.tensor_of(r))
    Q, R = la.qr(self, mode="reduced" if some else "complete")
    return QRResult(Q, R)


def _svd(self, some=True, compute_uv=True):
    """``x.svd(some=True, compute_uv=True)``: PyTorch's ``torch.svd``, the named tuple
    ``(U, S, V)`` with ``x = U diag(S) V^T`` (``V``, not ``Vh`` as ``tg.linalg.svd``);
    ``some=False`` gives square ``U`` and ``V``; ``compute_uv=False`` gives ``S`` and
    zero-filled ``U`` (m x m) and ``V`` (n x n), as PyTorch.  Differentiable at distinct
    singular values (a loss must not depend on the signs of the singular vectors).

    Examples:
        >>> import tapegrad as tg
        >>> U, S, V = tg.tensor([[3.0, 0.0], [0.0, -4.0]]).svd()
        >>> S
        tensor([4., 3.])
    """
    _matrices("Tensor.svd", self, "the input", square=False)
    if not compute_uv:
        m, n = self.shape[-2:]
        batch = tuple(self.shape[:-2])
        S = la.svd(self, compute_uv=False)
        return SVDResult(_zeros(batch + (m, m)), S, _zeros(batch + (n, n)))
    U, S, Vh = la.svd(self, full_matrices=not some)
    return SVDResult(U, S, O.swapaxes(Vh, -1, -2))


def _zeros(shape):
    return O.tensor_of(np.zeros(shape))


def _cholesky_inverse(self, upper=False):
    """``x.cholesky_inverse(upper=False)``: PyTorch's ``torch.cholesky_inverse``, the
    inverse of ``A = L L^T`` from its Cholesky factor ``x = L`` (lower; ``upper=True``:
    ``A = U^T U``).  Only that triangle of ``x`` is read, so the other gets a zero gradient
    (the derivative of the value; PyTorch's gradient there is that of ``inv(L L^T)`` for
    the whole matrix, which its own gradcheck refuses; the two agree for an ``L`` built as
    a triangle, by ``tril`` or ``cholesky``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.tensor([[2.0, 0.0], [1.0, 1.0]]).cholesky_inverse()  # inv([[4, 2], [2, 2]])
        tensor([[0.5000, -0.5000],
                [-0.5000, 1.0000]])
    """
    _matrices("Tensor.cholesky_inverse", self, "the input")
    Linv = la.inv(triangle(self, not upper))
    LinvT = O.swapaxes(Linv, -1, -2)
    return O.matmul(LinvT, Linv) if not upper else O.matmul(Linv, LinvT)


def _solve_shapes(name, b, A, label, short):
    """The checks of a solve of ``A X = b`` by a square (batch of) ``A``: both matrices, and
    ``b``'s rows as many as ``A``'s columns (``label`` / ``short`` name ``A`` in messages)."""
    _matrices(name, b, "b (the input)", square=False)
    _matrices(name, A, label)
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"{name}: incompatible shapes: b {tuple(b.shape)} has {b.shape[-2]} rows, "
            f"{short} {tuple(A.shape)} is {A.shape[-1]} by {A.shape[-1]}"
        )


def _cholesky_solve(self, input2, upper=False):
    """``B.cholesky_solve(L, upper=False)``: PyTorch's ``torch.cholesky_solve``, ``X`` with
    ``A X = B`` where ``A = L L^T`` (``upper=True``: ``A = U^T U``) is given by its Cholesky
    factor ``L``; batch dims broadcast.  Only that triangle of ``L`` is read (the other gets
    a zero gradient, see ``cholesky_inverse``).

    Examples:
        >>> import tapegrad as tg
        >>> L = tg.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> tg.tensor([[4.0], [2.0]]).cholesky_solve(L)             # [[4, 2], [2, 2]] X = B
        tensor([[1.],
                [0.]])
    """
    L = O.tensor_of(input2)
    _solve_shapes("Tensor.cholesky_solve", self, L, "the Cholesky factor", "the factor")
    T = triangle(L, not upper)
    TT = O.swapaxes(T, -1, -2)
    first, second = (T, TT) if not upper else (TT, T)
    return la.solve(second, la.solve(first, self))


def _triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    """``b.triangular_solve(A, upper=True, transpose=False, unitriangular=False)``:
    PyTorch's ``torch.triangular_solve``, the named tuple ``(solution, cloned_coefficient)``
    with ``A X = b`` (``A^T X = b`` with ``transpose``), reading only the upper (or lower)
    triangle of ``A`` and, with ``unitriangular``, ones on its diagonal; batch dims broadcast.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> tg.tensor([[4.0], [8.0]]).triangular_solve(A).solution
        tensor([[1.],
                [2.]])
    """
    A = O.tensor_of(A)
    _solve_shapes("Tensor.triangular_solve", self, A, "A", "A")
    T = triangle(A, not upper)
    if unitriangular:
        T = O.where(np.eye(A.shape[-1], dtype=bool), 1.0, T)
    if transpose:
        T = O.swapaxes(T, -1, -2)
    X = la.solve(T, self)
    batch = tuple(X.shape[:-2])
    if tuple(A.shape[:-2]) != batch:  # PyTorch's copy of A has the broadcast batch dims
        A = O.broadcast_to(A, batch + tuple(A.shape[-2:]))
    return TriangularSolveResult(X, A.clone())


class LinalgMethods:
    """Tensor methods built on ``tapegrad.numpy`` (a base class of the public ``Tensor``)."""

    __slots__ = ()
    det = _det
    slogdet = _slogdet
    logdet = _logdet
    inverse = _inverse
    pinverse = _pinverse
    cholesky = _cholesky
    cholesky_inverse = _cholesky_inverse
    cholesky_solve = _cholesky_solve
    qr = _qr
    svd = _svd
    triangular_solve = _triangular_solve
    i0 = _i0


# tg.NAME(input, ...): input.NAME(...), PyTorch's torch.NAME
det = method_function("det", _det)
slogdet = method_function("slogdet", _slogdet)
logdet = method_function("logdet", _logdet)
inverse = method_function("inverse", _inverse)
pinverse = method_function("pinverse", _pinverse)
cholesky = method_function("cholesky", _cholesky)
i0 = method_function("i0", _i0)
cholesky_inverse = method_function("cholesky_inverse", _cholesky_inverse)
cholesky_solve = method_function("cholesky_solve", _cholesky_solve)
qr = method_function("qr", _qr)
svd = method_function("svd", _svd)
triangular_solve = method_function("triangular_solve", _triangular_solve)
