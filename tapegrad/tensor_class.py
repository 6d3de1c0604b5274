"""The public ``Tensor``: the handle of ``core/tensor.py`` plus every layer's methods.

Each layer defines its Tensor methods next to the code they call, as a base class (a mixin):
operators and NumPy/PyTorch-style methods (``core/methods.py``), ``backward``
(``autograd/engine.py``), ``grad_fn`` and hooks (``autograd/graph.py``), graph pictures
(``autograd/inspect.py``), NumPy's dispatch protocols (``numpy/dispatch.py``) and the
methods built on ``tapegrad.numpy`` (``numpy/tensor_methods.py``: ``x.det()`` ...).  They are
joined here, above all of them, and nothing is attached to the class afterwards.  The class
registers itself with the core once, so that the ops below, which cannot import it, make
handles of this class.
"""

from .autograd.engine import BackwardMethod
from .autograd.graph import GraphMethods
from .autograd.inspect import TensorPictures
from .core.methods import TensorMethods
from .core.tensor import TensorBase, use_tensor_class
from .numpy.dispatch import NumpyProtocol
from .numpy.tensor_methods import LinalgMethods

__all__ = ["Tensor"]


class Tensor(
    TensorBase,
    TensorMethods,
    BackwardMethod,
    GraphMethods,
    TensorPictures,
    NumpyProtocol,
    LinalgMethods,
):
    """A value with an optional place on the tape (the public surface is in README.md and the docs).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad
        tensor([2., 4.])
    """

    __slots__ = ()


use_tensor_class(Tensor)
