"""Optimizers, in one package with two faces.

- ``tg.optim.SGD`` / ``Adam`` / ``AdamW`` / ``RMSprop`` / ``Adagrad`` / ``Adamax`` / ``NAdam``
  / ``RAdam`` / ``Adadelta`` / ``ASGD`` / ``LBFGS`` (``stateful.py``): PyTorch's optimizer objects,
  stepping Tensors in place from their ``.grad`` (parameter groups, ``state_dict``), and
  ``tg.optim.lr_scheduler`` (StepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, MultiStepLR,
  ReduceLROnPlateau, ConstantLR, LinearLR, PolynomialLR, CosineAnnealingWarmRestarts,
  CyclicLR, OneCycleLR, SequentialLR, ChainedScheduler).
- ``tapegrad.optimizers.sgd`` / ``adam`` / ``rmsprop`` (``functional.py``, also importable as
  ``tapegrad.optim.sgd`` ...): HIPS autograd's optimizer functions, ``x = adam(grad_fn, x0)``
  over any pytree of arrays.

Examples:
    >>> import numpy as np
    >>> import tapegrad as tg
    >>> x = tg.optim.sgd(lambda x, i: 2.0 * x, np.array([1.0, -2.0]), step_size=0.25,
    ...                  num_iters=1, mass=0.0)
    >>> x                                     # one step of x - 0.25 * 2 x
    array([ 0.5, -1. ])
"""

from . import lr_scheduler
from .functional import adam, rmsprop, sgd
from .stateful import (
    ASGD,
    LBFGS,
    SGD,
    Adadelta,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    NAdam,
    Optimizer,
    RAdam,
    RMSprop,
)

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adamax",
    "NAdam",
    "RAdam",
    "Adadelta",
    "ASGD",
    "LBFGS",
    "adam",
    "lr_scheduler",
    "rmsprop",
    "sgd",
]
