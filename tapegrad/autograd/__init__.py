"""The reverse-mode engine (``tg.autograd``): backward and ``autograd.grad``, create_graph,
forward mode on the tape, hooks and version checks, custom Functions, checkpointing, anomaly
mode and graph views; ``tg.autograd.functional`` has PyTorch's jacobian, hessian, vjp, jvp,
hvp and vhp."""

from . import functional
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
from .grad_mode import inference_mode

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "inference_mode",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "set_grad_enabled",
    "sweep",
]
