"""The reverse-mode engine (``tg.autograd``): backward and ``autograd.grad``, create_graph,
forward mode on the tape, hooks and version checks, custom Functions, checkpointing, anomaly
mode and graph views."""

from . import functional
from .anomaly import _Checker, _set, detect_anomaly
from .engine import (
    backward,
    enable_grad,
    grad,
    is_grad_enabled,
    no_grad,
    run_backward,
    set_grad_enabled,
    sweep,
)
from .function import Function, FunctionCtx


class set_detect_anomaly:
    """PyTorch's ``torch.autograd.set_detect_anomaly(mode, check_nan=True)``: anomaly mode
    (``tg.detect_anomaly``) on or off, at once when called and until the end of a ``with``
    block used as a context manager (the previous mode is restored at its exit).

    Examples:
        >>> import tapegrad as tg
        >>> with tg.autograd.set_detect_anomaly(True):
        ...     tg.is_anomaly_enabled()
        True
        >>> tg.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _set(_Checker(True) if mode and check_nan else None)
        self.mode = bool(mode)

    def __enter__(self) -> "set_detect_anomaly":
        return self

    def __exit__(self, *exc) -> bool:
        _set(self.prev)
        return False


__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "set_detect_anomaly",
    "set_grad_enabled",
    "sweep",
]
