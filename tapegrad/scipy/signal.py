"""``scipy.signal.convolve`` on Tensors: n-dimensional, modes full / same / valid, with the
``axes`` and ``dot_axes`` of HIPS autograd's version.

On Tensors the convolution is a composite (one window GATHER and one matmul, see
``tapegrad.numpy.shape_functions.convolve_nd``), so it is differentiable at any order, in
forward mode, and replayed by ``tg.trace``.  On plain arrays SciPy computes it (imported only
then, so SciPy stays an optional extra).
"""

import numpy as np

from ..core import functions as O
from ..numpy.shape_functions import convolve_nd
from ..tensor_class import Tensor

__all__ = ["convolve"]

_METHODS = ("auto", "direct", "fft")


def convolve(
    in1, in2, mode: str = "full", axes=None, *, dot_axes=((), ()), method: str = "auto"
) -> "Tensor | np.ndarray":
    """Convolve ``in1`` with ``in2`` along ``axes`` (pairs of axis lists, default all axes).

    ``dot_axes`` pairs axes that are summed over; the result's axes are in1's other axes,
    in2's other axes, then the convolved ones (as HIPS autograd).  ``mode`` as SciPy:
    'full', 'same' (the size of ``in1``, centred) or 'valid'.  ``method`` is accepted for
    SciPy's signature; the value does not depend on it.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> convolve(x, [[0.0, 1.0], [1.0, 0.0]], mode="valid")
    tensor([[5.]], grad_fn=<...>)
    >>> convolve([[1.0, 2.0]], [1.0, 1.0], axes=([1], [0]))    # rows of in1 with in2
    array([[1., 3., 2.]])
    """
    if isinstance(axes, str):  # SciPy's positional order: (in1, in2, mode, method)
        axes, method = None, axes
    if method not in _METHODS:
        raise ValueError(f"convolve: method must be one of {_METHODS}, got {method!r}")
    if isinstance(in1, Tensor) or isinstance(in2, Tensor):
        a, b = O.tensor_of(in1), O.tensor_of(in2)
        if axes is None and a.ndim == b.ndim == 0 and not any(len(d) for d in dot_axes):
            if mode not in ("full", "same", "valid"):
                raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
            return O.mul(a, b)  # SciPy: two scalars convolve to their product, in any mode
        return convolve_nd(a, b, axes, dot_axes, mode)
    if axes is None and not any(len(d) for d in dot_axes):
        import scipy.signal  # optional extra, needed for plain arrays only

        return scipy.signal.convolve(in1, in2, mode=mode, method=method)
    return np.asarray(
        convolve_nd(
            np.asarray(in1, dtype=np.float64),
            np.asarray(in2, dtype=np.float64),
            axes,
            dot_axes,
            mode,
        )._v
    )


def __dir__():
    """The public names only (what SciPy's module of the same name offers, differentiable)."""
    return list(__all__)
