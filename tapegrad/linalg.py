"""``tg.linalg``: PyTorch's ``torch.linalg`` names, signatures and meanings on Tensors.

Each function is ``tapegrad.numpy.linalg``'s (differentiable at any order, batched over leading
axes) with PyTorch's arguments (``dim=`` / ``keepdim=``) and its conventions where they differ
from NumPy's:

- ``eigh``, ``eigvalsh`` and ``cholesky`` read one triangle of ``A`` for their value (LAPACK's,
  as both libraries do), and give PyTorch's symmetric gradient: an off-diagonal entry gets half
  of what the pair receives (``tnp.linalg`` puts it all in the triangle read, the derivative of
  what was computed); the same chain rule through a symmetric ``A`` built from parameters.
- ``solve(A, B)`` takes ``B`` of shape ``(*, n)`` as a batch of vectors when ``A`` is
  ``(*, n, n)`` (NumPy 2 reads it as a matrix); ``left=False`` solves ``X A = B``.
- ``qr(A, mode="r")`` returns ``(Q, R)`` with an empty ``Q``, as PyTorch does (and ``R`` is
  differentiable, where PyTorch raises).

Names PyTorch has and tapegrad has not (``eig``, ``lstsq``, ...) are absent, not approximated:
``eig`` is complex, and ``lstsq``'s extra outputs depend on PyTorch's LAPACK driver.

Examples:
    >>> import tapegrad as tg
    >>> A = tg.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> tg.linalg.det(A).backward()
    >>> A.grad.numpy().round(12).tolist()  # the adjugate's transpose
    [[3.0, -1.0], [-1.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import numpy as tnp
from .core import functions as O
from .core.creation import tensor
from .numpy.linalg_ops import _QRResult
from .numpy.tensor_methods import symmetric_gradient, triangle
from .tensor_class import Tensor

_la = tnp.linalg
LinAlgError = np.linalg.LinAlgError

inv = _la.inv
det = _la.det
slogdet = _la.slogdet
svd = _la.svd
multi_dot = _la.multi_dot
matmul = _la.matmul

__all__ = [
    "LinAlgError",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "cond",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vecdot",
    "vector_norm",
]


def _tensor(x):
    return x if isinstance(x, Tensor) else tensor(np.asarray(x, dtype=np.float64))


def _symmetric(A, lower: bool):
    """A symmetric matrix of ``A``'s ``lower`` (else upper) triangle with PyTorch's symmetric
    gradient (``tapegrad.numpy.tensor_methods.symmetric_gradient``)."""
    return symmetric_gradient(_tensor(A), lower)


def _uplo(UPLO: str) -> bool:  # noqa: N803 - PyTorch's name
    if UPLO not in ("L", "U"):
        raise ValueError(f"tg.linalg: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


def eigh(A, UPLO: str = "L"):  # noqa: N803 - PyTorch's name
    """``(eigenvalues, eigenvectors)`` of symmetric ``A`` (ascending), as ``torch.linalg.eigh``.

    Examples:
        >>> import tapegrad as tg
        >>> w, V = tg.linalg.eigh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> w
        tensor([1., 3.])
    """
    return _la.eigh(_symmetric(A, _uplo(UPLO)), UPLO="L")


def eigvalsh(A, UPLO: str = "L"):  # noqa: N803 - PyTorch's name
    """The eigenvalues of symmetric ``A`` (ascending), as ``torch.linalg.eigvalsh``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.eigvalsh(tg.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1., 3.])
    """
    return _la.eigvalsh(_symmetric(A, _uplo(UPLO)), UPLO="L")


def cholesky(A, *, upper: bool = False):
    """The Cholesky factor of symmetric positive-definite ``A`` (lower, or upper with
    ``upper=True``), as ``torch.linalg.cholesky``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.cholesky(tg.tensor([[4.0, 2.0], [2.0, 5.0]]))
        tensor([[2., 0.],
                [1., 2.]])
    """
    return _la.cholesky(_symmetric(A, not upper), upper=upper)


def solve(A, B, *, left: bool = True):
    """``X`` with ``A @ X = B`` (``X @ A = B`` with ``left=False``), as ``torch.linalg.solve``:
    ``B`` of shape ``(*, n)`` with ``A`` of shape ``(*, n, n)`` is a batch of vectors.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]])
        >>> tg.linalg.solve(A, tg.tensor([[2.0, 4.0], [3.0, 4.0]]))
        tensor([[1., 1.],
                [3., 2.]])
    """
    A, B = _tensor(A), _tensor(B)
    if not left:
        return solve(A.mT, B.mT).mT
    if B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1])):
        return _la.solve(A, B[..., None])[..., 0]
    return _la.solve(A, B)


def matrix_power(A, n: int):
    """``A`` to the integer power ``n`` (``n < 0``: of the inverse), as
    ``torch.linalg.matrix_power``: ``n == 0`` gives the identity, which requires grad (its
    gradient zero) when ``A`` does, so a later backward runs.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[2.0, 0.0], [0.0, 3.0]], requires_grad=True)
        >>> tg.linalg.matrix_power(A, 2)
        tensor([[4., 0.],
                [0., 9.]], grad_fn=<MmBackward0>)
        >>> tg.linalg.matrix_power(A, 0).sum().backward(); A.grad
        tensor([[0., 0.],
                [0., 0.]])
    """
    out = _la.matrix_power(A, n)
    if n == 0 and isinstance(A, Tensor) and A.requires_grad and not out.requires_grad:
        return O.where(np.zeros(out.shape, bool), A, out)  # the identity, in A's graph
    return out


def svdvals(A):
    """The singular values of ``A`` (descending), as ``torch.linalg.svdvals``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.svdvals(tg.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor([4., 3.])
    """
    return _la.svd(A, compute_uv=False)


def qr(A, mode: str = "reduced"):
    """``(Q, R)`` of ``A``, as ``torch.linalg.qr`` (``mode`` "reduced", "complete" or "r", where
    ``Q`` is empty).

    Examples:
        >>> import tapegrad as tg
        >>> Q, R = tg.linalg.qr(tg.tensor([[3.0, 0.0], [4.0, 5.0]]))
        >>> abs(R[0, 0].item())
        5.0
    """
    if mode == "r":
        R = _la.qr(A, mode="r")
        return _QRResult(tensor(np.zeros(0)), R)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"tg.linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    return _la.qr(A, mode=mode)


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False):
    """The pseudo-inverse of ``A``, as ``torch.linalg.pinv`` (``rtol`` defaults to
    ``max(m, n) * eps`` of the largest singular value); ``hermitian=True`` reads the lower
    triangle, and the gradient is PyTorch's: the pseudo-inverse's of the whole symmetric
    matrix, each entry its own.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.pinv(tg.tensor([[2.0, 0.0], [0.0, 0.0]])).numpy().round(12).tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    if atol is not None:
        raise TypeError(
            "tg.linalg.pinv: atol= is not supported; give the cut-off relative to the "
            "largest singular value with rtol="
        )
    if hermitian:  # the lower triangle mirrored, each entry of A getting its own gradient
        A = _tensor(A)
        A = O.add(A, O.sub(symmetric_gradient(A, True), A).detach())
    if rtol is None:
        return _la.pinv(A)
    return _la.pinv(A, rtol=rtol)


def norm(A, ord=None, dim=None, keepdim: bool = False):  # noqa: A002 - PyTorch's name
    """A vector or matrix norm, as ``torch.linalg.norm`` (``dim`` an int: a vector norm; a pair:
    a matrix norm; None with ``ord``: of a 1-D or 2-D ``A``; None without: of all elements).

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.norm(tg.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5.)
    """
    A = _tensor(A)
    if ord is not None and dim is None and A.ndim not in (1, 2):
        raise ValueError(
            "tg.linalg.norm: with ord= and no dim=, A must be 1-D or 2-D (as torch.linalg.norm), "
            f"got shape {tuple(A.shape)}; give dim=, or use vector_norm / matrix_norm"
        )
    matrix = isinstance(dim, Sequence) and len(dim) == 2 or dim is None and A.ndim == 2
    if isinstance(ord, str) and not matrix:
        raise ValueError(
            f"tg.linalg.norm: ord={ord!r} is a matrix norm and needs a 2-D A or a pair of "
            f"dims (as torch.linalg.norm), got shape {tuple(A.shape)} and dim={dim!r}"
        )
    if ord is None or not matrix:  # a vector 2-norm (of the elements), or a vector ord-norm
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim)
    return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False):  # noqa: A002 - PyTorch's name
    """The ``ord``-norm of ``x`` over ``dim`` (every element when None), as
    ``torch.linalg.vector_norm``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.vector_norm(tg.tensor([[3.0], [4.0]]))
        tensor(5.)
    """
    return _tensor(x).norm(ord, dim, keepdim)  # PyTorch's: gradient 0 where the norm is 0


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False):  # noqa: A002
    """The ``ord`` matrix norm over the two axes ``dim``, as ``torch.linalg.matrix_norm``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.matrix_norm(tg.tensor([[3.0, 0.0], [0.0, 4.0]]), ord=2)
        tensor(4.)
    """
    if not (isinstance(dim, Sequence) and len(dim) == 2):
        raise ValueError(f"tg.linalg.matrix_norm: dim must be a pair of axes, got {dim!r}")
    if ord == "fro":  # the elements' 2-norm, with PyTorch's gradient 0 at 0
        return _tensor(A).norm(2, tuple(dim), keepdim)
    return _la.norm(A, ord=ord, axis=tuple(dim), keepdims=keepdim)


def cross(input, other, *, dim: int = -1):  # noqa: A002 - PyTorch's name
    """The cross product of 3-vectors along ``dim``, as ``torch.linalg.cross``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.cross(tg.tensor([1.0, 0.0, 0.0]), tg.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.])
    """
    return _la.cross(input, other, axis=dim)


def vecdot(x, y, *, dim: int = -1):
    """The dot product of ``x`` and ``y`` along ``dim``, as ``torch.linalg.vecdot``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.vecdot(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
        tensor(11.)
    """
    return _la.vecdot(x, y, axis=dim)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """The diagonal of ``A`` over ``dim1`` and ``dim2`` (a view), as ``torch.linalg.diagonal``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.diagonal(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 4.])
    """
    return tnp.diagonal(A, offset=offset, axis1=dim1, axis2=dim2)


def solve_triangular(
    A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None
) -> Tensor:
    """``X`` with ``A @ X = B`` (``X @ A = B`` with ``left=False``) for triangular ``A``, as
    ``torch.linalg.solve_triangular``: only the upper (or lower) triangle of ``A`` is read
    (the other gets no gradient), its diagonal taken as ones with ``unitriangular``; batch
    dims broadcast.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> tg.linalg.solve_triangular(A, tg.tensor([[4.0], [8.0]]), upper=True)
        tensor([[1.],
                [2.]])
    """
    if out is not None:
        raise TypeError("tg.linalg.solve_triangular: out= is not supported; assign the result")
    A, B = _tensor(A), _tensor(B)
    for what, M in (("A", A), ("B", B)):
        if M.ndim < 2:
            raise RuntimeError(
                f"tg.linalg.solve_triangular: {what} must have at least 2 dimensions, got "
                f"shape {tuple(M.shape)}"
            )
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"tg.linalg.solve_triangular: A must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )
    k = B.shape[-2] if left else B.shape[-1]
    if k != A.shape[-1]:
        raise RuntimeError(
            f"tg.linalg.solve_triangular: incompatible shapes of A {tuple(A.shape)} and B "
            f"{tuple(B.shape)} (left={left})"
        )
    T = triangle(A, not upper)
    if unitriangular:
        T = O.where(np.eye(A.shape[-1], dtype=bool), 1.0, T)
    if left:
        return _la.solve(T, B)
    return O.swapaxes(_la.solve(O.swapaxes(T, -1, -2), O.swapaxes(B, -1, -2)), -1, -2)


def matrix_exp(A) -> Tensor:
    """The matrix exponential of ``A`` (a square matrix or a batch), as
    ``torch.linalg.matrix_exp`` (``x.matrix_exp()``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.matrix_exp(tg.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _tensor(A).matrix_exp()


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """The numerical rank of ``A`` (of each matrix of a batch), an int64 Tensor, as
    ``torch.linalg.matrix_rank``: the number of singular values above
    ``max(atol, rtol * largest)`` (``rtol`` defaults to ``eps * max(m, n)`` when neither is
    given, to 0 when only ``atol`` is); ``hermitian=True`` reads the lower triangle.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.matrix_rank(tg.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1)
    """
    if out is not None:
        raise TypeError("tg.linalg.matrix_rank: out= is not supported; assign the result")
    a = _tensor(A).detach().numpy()
    if a.ndim < 2:
        raise RuntimeError(
            f"tg.linalg.matrix_rank: A must have at least 2 dimensions, got shape {a.shape}"
        )
    if hermitian:
        n = a.shape[-1]
        low = np.tril(np.ones((n, n), dtype=bool))
        a = np.where(low, a, np.swapaxes(a, -1, -2))
        s = np.abs(np.linalg.eigvalsh(a))
    else:
        s = np.linalg.svd(a, compute_uv=False)
    if rtol is None:
        rtol = (
            0.0 if atol is not None and atol > 0 else np.finfo(np.float64).eps * max(a.shape[-2:])
        )
    smax = s.max(axis=-1, initial=0.0)
    tol = np.maximum(0.0 if atol is None else atol, rtol * smax)
    return tensor((s > tol[..., None]).sum(axis=-1).astype(np.int64))


def cond(A, p=None, *, out=None) -> Tensor:
    """The condition number of ``A`` in the matrix norm ``p`` (None or 2: the ratio of the
    largest to the smallest singular value; -2, "fro", "nuc", inf, -inf, 1, -1:
    ``norm(A, p) * norm(inv(A), p)``), as ``torch.linalg.cond``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.cond(tg.tensor([[2.0, 0.0], [0.0, 0.5]]))
        tensor(4.)
    """
    if out is not None:
        raise TypeError("tg.linalg.cond: out= is not supported; assign the result")
    A = _tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"tg.linalg.cond: A must have at least 2 dimensions, got {A.shape}")
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return O.div(big, small) if p != -2 else O.div(small, big)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"tg.linalg.cond: the norm {p!r} needs square matrices, got shape {tuple(A.shape)}"
        )
    return O.mul(matrix_norm(A, p), matrix_norm(inv(A), p))


def tensorinv(A, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of ``A`` for ``tensordot`` over its first ``ind`` dims, as
    ``torch.linalg.tensorinv``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.tensorinv(tg.eye(4).reshape(4, 2, 2), ind=1).shape
        (2, 2, 4)
    """
    if out is not None:
        raise TypeError("tg.linalg.tensorinv: out= is not supported; assign the result")
    A = _tensor(A)
    if isinstance(ind, bool) or not isinstance(ind, (int, np.integer)) or ind <= 0:
        raise ValueError(f"tg.linalg.tensorinv: ind must be a positive int, got {ind!r}")
    front, back = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = int(np.prod(front)), int(np.prod(back))
    if rows != cols:
        raise RuntimeError(
            f"tg.linalg.tensorinv: the product of the first ind={ind} dims of A {tuple(A.shape)}"
            f" ({rows}) must equal that of the rest ({cols})"
        )
    return O.reshape(inv(O.reshape(A, (rows, cols))), back + front)


def tensorsolve(A, B, dims=None, *, out=None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) = B``, as ``torch.linalg.tensorsolve`` (``dims``:
    the dims of ``A`` moved to the end first).

    Examples:
        >>> import tapegrad as tg
        >>> tg.linalg.tensorsolve(tg.eye(4).reshape(2, 2, 4), tg.ones(2, 2)).shape
        (4,)
    """
    if out is not None:
        raise TypeError("tg.linalg.tensorsolve: out= is not supported; assign the result")
    A, B = _tensor(A), _tensor(B)
    if dims is not None:
        dims = [d % A.ndim for d in ((dims,) if isinstance(dims, int) else dims)]
        A = O.transpose(A, [d for d in range(A.ndim) if d not in dims] + dims)
    rest = tuple(A.shape[B.ndim :])
    rows, cols = int(np.prod(B.shape)), int(np.prod(rest))
    if tuple(A.shape[: B.ndim]) != tuple(B.shape) or rows != cols:
        raise RuntimeError(
            f"tg.linalg.tensorsolve: A {tuple(A.shape)} must start with B's shape "
            f"{tuple(B.shape)} and the product of the rest must equal its size"
        )
    X = _la.solve(O.reshape(A, (rows, cols)), O.reshape(B, (rows, 1)))
    return O.reshape(X, rest)
