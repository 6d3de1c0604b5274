"""Neural-network helpers (PyTorch-style): ``Module``, layers, activations and losses.

``tg.nn.functional`` holds the differentiable functions the layers call; every one of them is a
composition of tapegrad ops, so gradients, higher derivatives and trace replay come for free.
"""

from . import functional
from .modules import (
    BCELoss,
    CrossEntropyLoss,
    LeakyReLU,
    Linear,
    LogSoftmax,
    Module,
    MSELoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)

__all__ = [
    "BCELoss",
    "CrossEntropyLoss",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "Module",
    "MSELoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
]
