"""``tapegrad.optimizers``: HIPS autograd's optimizer functions over pytrees, by the name its
users import (they live in ``tapegrad.optim.functional``, beside PyTorch's optimizer objects)."""

from .optim.functional import adam, rmsprop, sgd

__all__ = ["adam", "rmsprop", "sgd"]
