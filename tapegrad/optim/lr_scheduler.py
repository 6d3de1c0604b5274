"""Learning-rate schedules (``tg.optim.lr_scheduler``), PyTorch's names and arguments.

A scheduler sets ``group["lr"]`` of each of its optimizer's parameter groups: call
``scheduler.step()`` after ``optimizer.step()``, once per epoch.  StepLR, MultiStepLR,
ExponentialLR and CosineAnnealingLR update the group's current lr by PyTorch's recursive rules
(so schedulers chained on one optimizer, or an lr changed by hand, compose as in PyTorch;
a closed form of the epoch would override them); LambdaLR and subclasses giving ``lr_at`` set
a closed form of the group's ``initial_lr`` (its lr when the first scheduler was made) and
the epoch, as PyTorch's LambdaLR.

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
import warnings
from bisect import bisect_right
from collections import Counter

from .stateful import Optimizer, _number

__all__ = [
    "LRScheduler",
    "StepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "LambdaLR",
    "MultiStepLR",
    "ReduceLROnPlateau",
]


class LRScheduler:
    """Base class: subclasses give ``lr_at(base_lr, epoch)``.

    Examples:
        >>> import tapegrad as tg
        >>> class Halving(tg.optim.lr_scheduler.LRScheduler):
        ...     def lr_at(self, base_lr, epoch):
        ...         return base_lr / 2**epoch
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = Halving(opt)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:  # (a copy of a Tensor lr, as PyTorch's clone)
                group.setdefault("initial_lr", _lr(group, "lr"))
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                    "an optimizer (last_epoch != -1)"
                )
        self.base_lrs = [_lr(group, "initial_lr") for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._advance(initial=True)

    def lr_at(self, base_lr, epoch):
        raise NotImplementedError

    def _group_lr(self, index, base_lr, epoch):
        """The lr of parameter group ``index`` (schedules with per-group rules override it)."""
        return self.lr_at(base_lr, epoch)

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        """Group ``index``'s lr for ``epoch`` given its current ``lr``; ``initial`` in the
        constructor's step.  A closed form here; recursive schedules override it."""
        return self._group_lr(index, base_lr, epoch)

    def step(self, epoch=None):
        """Advance one epoch and set every group's lr."""
        if epoch is not None:
            raise TypeError(
                f"{type(self).__name__}.step: the epoch argument (deprecated in PyTorch) is not "
                "supported; call step() once per epoch"
            )
        if self._step_count == 1 and not getattr(self.optimizer, "_step_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`: call "
                "optimizer.step() first, then scheduler.step() (else the first value of the "
                "learning rate schedule is skipped), as in PyTorch",
                UserWarning,
                stacklevel=2,
            )
        self._advance(initial=False)

    def _advance(self, initial):
        self._step_count = getattr(self, "_step_count", 0) + 1
        self.last_epoch += 1
        groups = self.optimizer.param_groups
        for i, (group, base) in enumerate(zip(groups, self.base_lrs, strict=True)):
            _set_lr(group, self._next_lr(i, _lr(group, "lr"), base, self.last_epoch, initial))
        self._last_lr = [_lr(group, "lr") for group in self.optimizer.param_groups]

    def get_last_lr(self):
        """The learning rates set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """Everything but the optimizer (which has its own state dict)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


def _lr(group, key):
    """A group's ``key`` ("lr", "initial_lr") as a number (a one-element Tensor lr read)."""
    return _number(group[key], f"param_groups[...][{key!r}]")


def _set_lr(group, lr):
    """Set a group's lr: a Tensor lr is filled in place (the Tensor the user gave stays the
    group's, as PyTorch's schedulers keep it), a number replaced."""
    old = group["lr"]
    if not isinstance(old, (int, float)) and hasattr(old, "fill_"):
        old.fill_(lr)
    else:
        group["lr"] = lr


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.010000000000000002]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        # (a fractional step_size is refused, not truncated: PyTorch's decays where the epoch
        # is a multiple of it, 2.5 at epochs 5, 10, ...)
        if isinstance(step_size, bool) or not float(step_size).is_integer() or step_size < 1:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma ** (epoch // self.step_size)

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        """PyTorch's rule: the current lr times gamma at each nonzero multiple of step_size."""
        return lr * self.gamma if epoch and epoch % self.step_size == 0 else lr


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma**epoch

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        """PyTorch's rule: the current lr times gamma (kept in the constructor's step)."""
        return lr if initial else lr * self.gamma


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 - PyTorch's name
        if T_max == 0:  # (PyTorch's fails in its first step with a bare ZeroDivisionError)
            raise ValueError(
                "CosineAnnealingLR: T_max must be nonzero (the number of epochs of a half "
                "cosine period), got 0"
            )
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return (
            self.eta_min
            + (base_lr - self.eta_min) * (1.0 + math.cos(math.pi * epoch / self.T_max)) / 2.0
        )

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        """PyTorch's recursive rule, from the current lr (kept in the constructor's step)."""
        if initial:
            return lr
        t_max, eta_min = self.T_max, self.eta_min
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            return lr + (base_lr - eta_min) * (1.0 - math.cos(math.pi / t_max)) / 2.0
        return (1.0 + math.cos(math.pi * epoch / t_max)) / (
            1.0 + math.cos(math.pi * (epoch - 1) / t_max)
        ) * (lr - eta_min) + eta_min


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), with one function for every group or a list of
    them, one per group.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.3333333333333333]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = getattr(optimizer, "param_groups", [])
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(groups):
                raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(groups)
        super().__init__(optimizer, last_epoch)

    def _group_lr(self, index, base_lr, epoch):
        return base_lr * self.lr_lambdas[index](epoch)

    def state_dict(self):
        """Everything but the optimizer and the functions (which the caller recreates)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class MultiStepLR(LRScheduler):
    """lr = initial_lr * gamma ** (the number of milestones <= epoch); a milestone given
    twice counts twice, as in PyTorch.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> rates = []
        >>> for epoch in range(4):
        ...     rates.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma ** bisect_right(sorted(self.milestones.elements()), epoch)

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        """PyTorch's rule: the current lr times gamma per milestone at this epoch."""
        count = self.milestones.get(epoch, 0)
        return lr * self.gamma**count if count else lr


class ReduceLROnPlateau(LRScheduler):
    """Multiply every group's lr by ``factor`` when the metric given to ``step(metric)`` has
    not improved for more than ``patience`` steps, as PyTorch: an improvement is a metric below
    ``best * (1 - threshold)`` (``mode="min"``, ``threshold_mode="rel"``), below ``best -
    threshold`` (``"abs"``), or above ``best * (1 + threshold)`` / ``best + threshold`` with
    ``mode="max"``; after a reduction ``cooldown`` steps pass before bad steps count again; no
    lr goes below ``min_lr`` (a number or one per group), and a reduction smaller than ``eps``
    is skipped.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
        >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0]:
        ...     sched.step(loss)
        >>> sched.get_last_lr()                # 2 bad steps after the best: halved once
        [0.5]
    """

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        eps=1e-8,
    ):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")
        self.optimizer, self.mode, self.factor = optimizer, mode, factor
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        n = len(optimizer.param_groups)
        per_group = isinstance(min_lr, (list, tuple))
        if per_group and len(min_lr) != n:
            raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
        self.min_lrs = list(min_lr) if per_group else [min_lr] * n
        self._one_min_lr = None if per_group else min_lr  # (for groups added later)
        self.last_epoch = 0
        self._last_lr = [_lr(g, "lr") for g in optimizer.param_groups]
        self.best = math.inf if mode == "min" else -math.inf  # the worst metric there is
        self.cooldown_counter = self.num_bad_epochs = 0

    def _improves(self, metric):
        """Is ``metric`` better than the best so far by more than the threshold (relative:
        a factor 1 -/+ threshold of the best, as PyTorch, whatever the best's sign)?"""
        lower = self.mode == "min"
        if self.threshold_mode == "rel":
            target = self.best * (1.0 - self.threshold if lower else 1.0 + self.threshold)
        else:
            target = self.best - self.threshold if lower else self.best + self.threshold
        return metric < target if lower else metric > target

    def step(self, metrics, epoch=None):
        """Record this epoch's metric (a number or a one-element Tensor) and reduce the lr
        after a plateau."""
        if epoch is not None:
            raise TypeError(
                "ReduceLROnPlateau.step: the epoch argument (deprecated in PyTorch) is not "
                "supported; call step(metric) once per epoch"
            )
        try:
            metric = float(metrics)
        except (TypeError, ValueError) as err:
            raise type(err)(
                "ReduceLROnPlateau.step: the metric must be a number or a one-element Tensor "
                f"(the epoch's validation loss, say), got {metrics!r}: {err}"
            ) from None
        self.last_epoch += 1
        if self._improves(metric):
            self.best, self.num_bad_epochs = metric, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:  # bad epochs in a cooldown do not count
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._lower_lrs()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [_lr(g, "lr") for g in self.optimizer.param_groups]

    def _lower_lrs(self):
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            if self._one_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups, but "
                    f"min_lr gave {len(self.min_lrs)} when the scheduler was made; set "
                    "sched.min_lrs to one value per group"
                )
            self.min_lrs = [self._one_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs, strict=True):
            lr = _lr(group, "lr")
            lowered = max(lr * self.factor, floor)
            if lr - lowered > self.eps:  # (changes below eps are skipped)
                _set_lr(group, lowered)
