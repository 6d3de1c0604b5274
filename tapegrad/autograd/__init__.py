"""The reverse-mode engine (``tg.autograd``): backward and ``autograd.grad``, create_graph,
forward mode on the tape, hooks and version checks, custom Functions, checkpointing, anomaly
mode and graph views."""

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

__all__ = [
    "backward",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "set_grad_enabled",
    "sweep",
]
