"""Learning-rate schedules (``tg.optim.lr_scheduler``), PyTorch's names and arguments.

A scheduler sets ``group["lr"]`` of each of its optimizer's parameter groups from the group's
``initial_lr`` (its lr when the first scheduler was made) and the epoch count: call
``scheduler.step()`` after ``optimizer.step()``, once per epoch.  The rates are PyTorch's
closed forms of the epoch number (PyTorch's ``step()`` updates them recursively from the
current rate: the same numbers to rounding, unless something else changes ``group["lr"]`` in
between, which a closed form overrides).

Examples:
    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> rates = []
    >>> for epoch in range(5):
    ...     rates.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> rates
    [1.0, 1.0, 0.5, 0.5, 0.25]
"""

import math

from .stateful import Optimizer

__all__ = ["LRScheduler", "StepLR", "ExponentialLR", "CosineAnnealingLR"]


class LRScheduler:
    """Base class: subclasses give ``lr_at(base_lr, epoch)``.

    Examples:
        >>> import tapegrad as tg
        >>> class Halving(tg.optim.lr_scheduler.LRScheduler):
        ...     def lr_at(self, base_lr, epoch):
        ...         return base_lr / 2**epoch
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = Halving(opt)
        >>> sched.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                    "an optimizer (last_epoch != -1)"
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr, epoch):
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance one epoch and set every group's lr."""
        if epoch is not None:
            raise TypeError(
                f"{type(self).__name__}.step: the epoch argument (deprecated in PyTorch) is not "
                "supported; call step() once per epoch"
            )
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
            group["lr"] = self.lr_at(base, self.last_epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        """The learning rates set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """Everything but the optimizer (which has its own state dict)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
        >>> sched.step(); sched.get_last_lr()
        [0.010000000000000002]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = int(step_size)
        if self.step_size < 1:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size}")
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma ** (epoch // self.step_size)


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sched.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 - PyTorch's name
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return (
            self.eta_min
            + (base_lr - self.eta_min) * (1.0 + math.cos(math.pi * epoch / self.T_max)) / 2.0
        )
