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


class LinalgMethods:
    """Tensor methods built on ``tapegrad.numpy`` (a base class of the public ``Tensor``)."""

    __slots__ = ()
    det = _det
    slogdet = _slogdet
    logdet = _logdet
    inverse = _inverse
    pinverse = _pinverse
    cholesky = _cholesky
    i0 = _i0


# tg.NAME(input, ...): input.NAME(...), PyTorch's torch.NAME
det = method_function("det", _det)
slogdet = method_function("slogdet", _slogdet)
logdet = method_function("logdet", _logdet)
inverse = method_function("inverse", _inverse)
pinverse = method_function("pinverse", _pinverse)
cholesky = method_function("cholesky", _cholesky)
i0 = method_function("i0", _i0)
