"""Ready-made parametrizations (``tg.nn.utils.parametrizations``): ``weight_norm``,
``spectral_norm`` and ``orthogonal``, PyTorch's meanings, defaults and parameter / buffer names
(``parametrizations.weight.original0`` / ``original1`` for the weight norm's g and v,
``parametrizations.weight.original`` and ``parametrizations.weight.0._u`` / ``._v`` for the
spectral norm), so state dicts port between the two libraries.

Examples:
    >>> import tapegrad as tg
    >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(3, 2))
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

import numpy as np

from ...autograd.engine import no_grad
from ...core import creation as _creation
from ...core import methods as _methods
from ...core import torch_functions as _tf
from ...numpy import linalg_ops as _linalg
from ...tensor_class import Tensor
from ..layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """PyTorch's ``norm_except_dim(v, 2, dim)``: the 2-norm over every dimension but ``dim``
    (kept, of size 1), or of the whole tensor (0-d) when ``dim`` is -1."""
    if dim == -1 or v.ndim == 0:
        return (v * v).sum().sqrt()
    d = dim % v.ndim
    axes = tuple(i for i in range(v.ndim) if i != d)
    return (v * v).sum(axes, keepdim=True).sqrt() if axes else (v * v).sqrt()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """PyTorch's ``torch._weight_norm(v, g, dim)``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dimension but
    ``dim``; over all of them when ``dim`` is None), PyTorch's
    ``torch.nn.utils.parametrizations.weight_norm``: g is ``parametrizations.<name>.original0``,
    v ``original1``.  Returns ``module``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(3, 2))
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        ((2, 1), (2, 3))
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


def _normalize(a: np.ndarray, eps: float) -> np.ndarray:
    return a / max(float(np.sqrt(np.sum(a * a))), eps)


def _matrix(weight, dim):
    """The weight as a matrix, dimension ``dim`` first (PyTorch's
    ``_reshape_weight_to_matrix``)."""
    if dim != 0:
        order = (dim, *(d for d in range(weight.ndim) if d != dim))
        weight = weight.permute(*order) if isinstance(weight, Tensor) else weight.transpose(order)
    shape = (weight.shape[0], -1)
    return weight.reshape(*shape) if isinstance(weight, Tensor) else weight.reshape(shape)


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but "
                f"got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            w = _matrix(np.asarray(weight._v, dtype=np.float64), self.dim)
            rng = _creation.rng()
            u = _normalize(rng.standard_normal(w.shape[0]), eps)
            v = _normalize(rng.standard_normal(w.shape[1]), eps)
            self.register_buffer("_u", Tensor(u.astype(weight.dtype)))
            self.register_buffer("_v", Tensor(v.astype(weight.dtype)))
            self._power_method(w, 15)

    def _power_method(self, w: np.ndarray, n_power_iterations: int) -> None:
        """``n_power_iterations`` steps of the power method on the matrix ``w`` (values, no
        gradient), updating the buffers ``_u`` and ``_v`` in place."""
        u, v = np.asarray(self._u._v), np.asarray(self._v._v)
        for _ in range(n_power_iterations):
            u = _normalize(w @ v, self.eps)
            v = _normalize(w.conj().T @ u, self.eps)
        _methods._set_value(self._u, np.array(u, dtype=self._u.dtype))
        _methods._set_value(self._v, np.array(v, dtype=self._v.dtype))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return weight / weight.norm().clamp(min=self.eps)
        weight_mat = _matrix(weight, self.dim)
        if self.training:
            self._power_method(np.asarray(weight_mat.detach()._v), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _transposed_conv(module):
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Parametrize ``module.<name>`` as ``W / sigma(W)``, sigma the largest singular value of
    ``W`` seen as a matrix (dimension ``dim`` first: 1 for transposed convolutions, else 0)
    estimated by the power method, PyTorch's ``torch.nn.utils.parametrizations.spectral_norm``:
    ``n_power_iterations`` steps on every access in training mode (none in eval mode), from
    the vectors kept in the buffers ``parametrizations.<name>.0._u`` / ``._v`` (15 steps from
    random vectors at registration).  No gradient flows through u and v.  Returns ``module``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(4, 3)).eval()
        >>> round(float(tg.linalg.matrix_norm(m.weight, 2)), 4)
        1.0
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    with no_grad():
        norm = _SpectralNorm(weight, n_power_iterations, dim, eps)
    register_parametrization(module, name, norm)
    return module


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """PyTorch's ``torch.linalg.householder_product(A, tau)`` composed from Tensor operations:
    the first k columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T, v_i the i-th
    column of ``A`` below the diagonal with a 1 on it."""
    n, k = A.shape[-2], A.shape[-1]
    rows = np.arange(n)
    Q = Tensor(np.broadcast_to(np.eye(n), (*A.shape[:-2], n, n)).copy())
    for i in range(k):
        v = A[..., :, i] * Tensor((rows > i).astype(np.float64)) + Tensor(
            (rows == i).astype(np.float64)
        )
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        Q = Q - (Q @ v.unsqueeze(-1)) @ (t * v.unsqueeze(-2))
    return Q[..., :, :k]


def _make_orthogonal(a: np.ndarray) -> np.ndarray:
    """The Q of the QR decomposition of ``a`` whose R has a positive diagonal."""
    q, r = np.linalg.qr(a)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _is_orthogonal(q: np.ndarray) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(np.swapaxes(q, -1, -2).conj() @ q, np.eye(k), atol=eps))


def _geqrf(a: np.ndarray):
    """LAPACK's geqrf of each matrix of ``a`` (Householder vectors below the diagonal, R on
    and above it) and the reflectors' scales."""
    flat = a.reshape(-1, *a.shape[-2:])
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        hs.append(h.T)
        taus.append(tau)
    return np.stack(hs).reshape(a.shape), np.stack(taus).reshape(*a.shape[:-2], -1)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization=True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                zeros = _creation.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)
                X = _tf.cat([X, zeros], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = _tf.matrix_exp(A)
            else:
                eye = Tensor(np.eye(n, dtype=X.dtype))
                Q = _linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = _householder_product(A, tau)
            signs = np.trunc(np.asarray(X.diagonal(dim1=-2, dim2=-1).detach()._v))
            Q = Q * Tensor(signs[..., None, :])
        if self.use_trivialization:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                f"shape {tuple(Q.shape)}."
            )
        q = np.array(Q.detach()._v, dtype=np.float64)
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q = np.swapaxes(q, -1, -2)
            n, k = k, n
        if not self.use_trivialization:
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False."
                )
            a, tau = _geqrf(q)
            d = np.sign(np.diagonal(a, axis1=-2, axis2=-1)).copy()
            d[tau == 0.0] *= -1
            idx = np.arange(k)
            a[..., idx, idx] = d
            return Tensor(np.swapaxes(a, -1, -2) if transpose else a)
        if n == k:
            q = q.copy() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            extra = _creation.rng().standard_normal((*q.shape[:-2], n, n - k))
            q = _make_orthogonal(np.concatenate([q, extra], axis=-1))
        self.base = Tensor(q)
        neg_id = np.zeros(self.shape)
        idx = np.arange(min(self.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return Tensor(neg_id)


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Parametrize the matrix (or batch of matrices) ``module.<name>`` to be orthogonal
    (orthonormal columns, or rows when it is wide), PyTorch's
    ``torch.nn.utils.parametrizations.orthogonal``: ``orthogonal_map`` ``"matrix_exp"`` or
    ``"cayley"`` of a skew-symmetric matrix (the default for square ones) or ``"householder"``
    (a product of reflectors, the default otherwise).  With ``use_trivialization`` (the
    default) the buffer ``parametrizations.<name>.0.base`` holds the starting orthogonal
    matrix (the weight made orthogonal by QR; random columns complete a non-square one).
    Returns ``module``.

    Examples:
        >>> import tapegrad as tg
        >>> m = tg.nn.utils.parametrizations.orthogonal(tg.nn.Linear(3, 5))
        >>> bool(((m.weight.T @ m.weight - tg.eye(3)).abs() < 1e-12).all())
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
