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
from ...core.tensor import STATE
from ...numpy import linalg_ops as _linalg
from ...tensor_class import Tensor
from ..layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- weight norm ---------------------------------------------------------------------------------


def _norms_over_others(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dimension but ``dim`` (kept, of size 1), or over all of
    them (a 0-d result) when ``dim`` is -1: PyTorch's ``norm_except_dim(v, 2, dim)``."""
    squares = v * v
    if dim == -1 or v.ndim == 0:
        return squares.sum().sqrt()
    keep = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != keep)
    return (squares.sum(others, keepdim=True) if others else squares).sqrt()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``g * v / ||v||``, the norm taken by ``_norms_over_others`` (PyTorch's
    ``torch._weight_norm(v, g, dim)``, the tests' name)."""
    return v * (g / _norms_over_others(v, dim))


class _MagnitudeAndDirection(Module):
    """The weight norm as a parametrization of two originals: the magnitude g (``original0``)
    and the direction v (``original1``)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norms_over_others(weight, self.dim), weight


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
    return register_parametrization(module, name, _MagnitudeAndDirection(dim), unsafe=True)


# ---- spectral norm -------------------------------------------------------------------------------


def _refuse_in_trace(name: str) -> None:
    """Raise inside a ``tg.trace`` recording: the power method updates ``u`` / ``v`` from
    values outside the tape, which a replay would not repeat (its numbers would differ from
    eager's)."""
    if STATE.guard is not None:
        raise RuntimeError(
            f"{name}: a tg.trace recording cannot run the power method of a module in training "
            "mode (a replay would not update u and v, so its numbers would differ from an "
            "eager call). Call model.eval() before tracing, or run the training step eagerly"
        )


def _unit(a: np.ndarray, eps: float) -> np.ndarray:
    """``a`` divided by its 2-norm, the norm taken at least ``eps``."""
    return a / max(float(np.linalg.norm(a)), eps)


def _as_matrix(weight, dim):
    """The weight (a Tensor or an array) as a matrix whose rows run along dimension ``dim``
    (the other dimensions flattened into the columns)."""
    if isinstance(weight, Tensor):
        front = weight.movedim(dim, 0) if dim else weight
        return front.reshape(front.shape[0], -1)
    front = np.moveaxis(weight, dim, 0)
    return front.reshape(front.shape[0], -1)


def _power_steps(w: np.ndarray, u: np.ndarray, v: np.ndarray, steps: int, eps: float):
    """``steps`` rounds of the power method for the top singular pair of ``w``."""
    for _ in range(steps):
        u = _unit(w @ v, eps)
        v = _unit(w.conj().T @ u, eps)
    return u, v


def _check_spectral_arguments(weight, n_power_iterations, dim):
    rank = weight.ndim
    if not -rank <= dim < rank:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [-{rank}, {rank - 1}] but "
            f"got {dim})"
        )
    if n_power_iterations <= 0:
        raise ValueError(
            "Expected n_power_iterations to be positive, but got "
            f"n_power_iterations={n_power_iterations}"
        )


class _DivideBySigma(Module):
    """The spectral norm as a parametrization: the weight over its largest singular value,
    estimated by the power method from the buffers ``_u`` / ``_v`` (a vector is divided by
    its 2-norm)."""

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        _check_spectral_arguments(weight, n_power_iterations, dim)
        self.dim = dim % weight.ndim
        self.eps = eps
        if weight.ndim < 2:
            return
        self.n_power_iterations = n_power_iterations
        w = _as_matrix(np.asarray(weight._v, dtype=np.float64), self.dim)
        draw = _creation.rng().standard_normal
        start_u, start_v = _unit(draw(w.shape[0]), eps), _unit(draw(w.shape[1]), eps)
        self.register_buffer("_u", Tensor(start_u.astype(weight.dtype)))
        self.register_buffer("_v", Tensor(start_v.astype(weight.dtype)))
        self._refine(w, 15)  # a good estimate from the start, as PyTorch's

    def _refine(self, w: np.ndarray, steps: int) -> None:
        """Update the buffers ``_u`` and ``_v`` in place by ``steps`` power-method rounds on
        the values ``w`` (nothing recorded)."""
        u, v = _power_steps(w, np.asarray(self._u._v), np.asarray(self._v._v), steps, self.eps)
        for buffer, value in ((self._u, u), (self._v, v)):
            _methods._set_value(buffer, np.array(value, dtype=buffer.dtype))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim < 2:
            return weight / weight.norm().clamp(min=self.eps)
        matrix = _as_matrix(weight, self.dim)
        if self.training:
            _refuse_in_trace("spectral_norm")
            self._refine(np.asarray(matrix.detach()._v), self.n_power_iterations)
        # u and v are constants for the gradient: copies, so later updates do not reach it
        sigma = ((matrix @ self._v.clone()) * self._u.clone()).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _transposed_conv(module):
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def _tensor_named(module, name):
    found = getattr(module, name, None)
    if not isinstance(found, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return found


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
        >>> _ = tg.manual_seed(0)  # (the power method starts from random vectors)
        >>> m = tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(4, 3)).eval()
        >>> round(float(tg.linalg.matrix_norm(m.weight, 2)), 4)
        1.0
    """
    weight = _tensor_named(module, name)
    if dim is None:
        dim = int(_transposed_conv(module))
    with no_grad():
        parametrization = _DivideBySigma(weight, n_power_iterations, dim, eps)
    return register_parametrization(module, name, parametrization)


# ---- orthogonal ----------------------------------------------------------------------------------


def _reflectors_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 ... H_k, H_j = I - tau_j w_j w_j^T with w_j the j-th column
    of ``A`` with zeros above the diagonal and a 1 on it (PyTorch's
    ``torch.linalg.householder_product``), from Tensor operations so it differentiates."""
    n, k = A.shape[-2], A.shape[-1]
    index = np.arange(n)
    product = Tensor(np.broadcast_to(np.eye(n), (*A.shape[:-2], n, n)).copy())
    for j in range(k):
        below, on = (index > j).astype(np.float64), (index == j).astype(np.float64)
        w = (A[..., :, j] * Tensor(below) + Tensor(on)).unsqueeze(-1)
        scale = tau[..., j].reshape(*tau.shape[:-1], 1, 1)
        product = product - (product @ w) @ (scale * w.mT)
    return product[..., :, :k]


def _qr_positive(a: np.ndarray) -> np.ndarray:
    """The orthonormal factor of the QR decomposition of ``a`` whose R has a positive
    diagonal (the one closest to ``a`` in that sense)."""
    q, r = np.linalg.qr(a)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _has_orthonormal_columns(q: np.ndarray) -> bool:
    k = q.shape[-1]
    gram = np.swapaxes(q, -1, -2).conj() @ q
    return bool(np.allclose(gram, np.eye(k), atol=10 * q.shape[-2] * np.finfo(q.dtype).eps))


def _raw_qr(a: np.ndarray):
    """LAPACK's geqrf of each matrix of ``a``: the Householder vectors below the diagonal and
    R on and above it, and the reflectors' scales tau."""
    pairs = [np.linalg.qr(m, mode="raw") for m in a.reshape(-1, *a.shape[-2:])]
    packed = np.stack([h.T for h, _ in pairs]).reshape(a.shape)
    return packed, np.stack([t for _, t in pairs]).reshape(*a.shape[:-2], -1)


class _OrthogonalMap(Module):
    """A tall (n >= k) matrix made orthonormal from an unconstrained one by ``orthogonal_map``
    (a wide matrix is handled through its transpose), times the buffer ``base`` when
    ``use_trivialization``."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization=True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def _tall(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        if self.orthogonal_map == "householder":
            A = X.tril(-1)
            Q = _reflectors_product(A, 2.0 / (1.0 + (A * A).sum(-2)))
            diagonal = X.diagonal(dim1=-2, dim2=-1).detach()
            return Q * Tensor(np.trunc(np.asarray(diagonal._v))[..., None, :])
        lower = X.tril()
        if n > k:  # a square skew-symmetric matrix from the lower triangle, zeros on the right
            pad = _creation.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)
            lower = _tf.cat([lower, pad], dim=-1)
        skew = lower - lower.mT
        if self.orthogonal_map == "matrix_exp":
            Q = _tf.matrix_exp(skew)
        else:  # the Cayley map (I - A/2)^-1 (I + A/2)
            eye = Tensor(np.eye(n, dtype=X.dtype))
            Q = _linalg.solve(eye - 0.5 * skew, eye + 0.5 * skew)
        return Q[..., :k] if n > k else Q

    def forward(self, X: Tensor) -> Tensor:
        wide = X.shape[-2] < X.shape[-1]
        Q = self._tall(X.mT if wide else X)
        if self.use_trivialization:
            Q = self.base @ Q
        return Q.mT if wide else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                f"shape {tuple(Q.shape)}."
            )
        q = np.array(Q.detach()._v, dtype=np.float64)
        wide = q.shape[-2] < q.shape[-1]
        if wide:
            q = np.swapaxes(q, -1, -2)
        if self.use_trivialization:
            self.base = Tensor(self._completed_base(q))
            # the unconstrained matrix mapped to the identity's columns, as PyTorch's
            start = np.zeros(self.shape)
            diag = np.arange(min(self.shape[-2:]))
            start[..., diag, diag] = -1.0
            return Tensor(start)
        if self.orthogonal_map != "householder":
            raise NotImplementedError(
                "It is not possible to assign to the matrix exponential or the Cayley "
                "parametrizations when use_trivialization=False."
            )
        packed, tau = _raw_qr(q)
        signs = np.sign(np.diagonal(packed, axis1=-2, axis2=-1)).copy()
        signs[tau == 0.0] *= -1
        diag = np.arange(q.shape[-1])
        packed[..., diag, diag] = signs
        return Tensor(np.swapaxes(packed, -1, -2) if wide else packed)

    @staticmethod
    def _completed_base(q: np.ndarray) -> np.ndarray:
        """An n x n orthogonal matrix whose first k columns come from the tall ``q`` (made
        orthonormal by QR when they are not; random columns complete it)."""
        n, k = q.shape[-2], q.shape[-1]
        if n == k:
            return q.copy() if _has_orthonormal_columns(q) else _qr_positive(q)
        filler = _creation.rng().standard_normal((*q.shape[:-2], n, n - k))
        return _qr_positive(np.concatenate([q, filler], axis=-1))


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


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
    weight = _tensor_named(module, name)
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    square = weight.shape[-2] == weight.shape[-1]
    chosen = orthogonal_map
    if chosen is None:
        chosen = "matrix_exp" if square else "householder"
    if chosen not in _ORTHOGONAL_MAPS:
        raise ValueError(
            "orthogonal_map has to be one of "
            + ", ".join(f'"{m}"' for m in _ORTHOGONAL_MAPS)
            + f". Got: {orthogonal_map}"
        )
    parametrization = _OrthogonalMap(weight, chosen, use_trivialization=use_trivialization)
    return register_parametrization(module, name, parametrization, unsafe=True)
