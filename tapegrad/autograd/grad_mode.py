"""``tg.inference_mode``: PyTorch's name for turning gradient recording off.

tapegrad has no separate inference tensors: ``inference_mode()`` is ``no_grad()`` (results do
not require grad and are not recorded), and ``inference_mode(False)`` turns recording on, as
PyTorch's does inside an inference-mode block.
"""

from .engine import _GradMode, _with_mode


class inference_mode(_GradMode):
    """Turn off gradient recording inside ``with`` or a decorated function (``mode=False``
    turns it on); usable as ``@tg.inference_mode`` or ``@tg.inference_mode()``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> with tg.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> @tg.inference_mode
        ... def double(t):
        ...     return t * 2
        >>> double(x).requires_grad
        False
    """

    def __new__(cls, mode=True):
        if callable(mode):  # @tg.inference_mode without parentheses
            return _with_mode(mode, False)
        return object.__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = not bool(mode)  # the gradient mode inside

    def clone(self) -> "inference_mode":
        """A new context manager with the same mode (PyTorch's)."""
        return type(self)(not self.mode)
