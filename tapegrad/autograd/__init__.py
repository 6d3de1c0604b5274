"""The reverse-mode engine (``tg.autograd``): backward and ``autograd.grad``, create_graph,
forward mode on the tape, hooks and version checks, custom Functions, checkpointing, anomaly
mode and graph views."""

from .anomaly import detect_anomaly
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

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "set_grad_enabled",
    "sweep",
]
