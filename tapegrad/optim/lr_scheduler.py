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
import types
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
    "ConstantLR",
    "LinearLR",
    "PolynomialLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "OneCycleLR",
    "SequentialLR",
    "ChainedScheduler",
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

    # does _next_lr use only the current lr (so a group added after the scheduler was made
    # follows the rule too, as PyTorch's recursive schedulers)?
    _base_free = False

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
        self._check_order()
        self._advance(initial=False)

    def _check_order(self):
        """Warn, as PyTorch, when the first ``step()`` comes before any optimizer step."""
        if self._step_count == 1 and not getattr(self.optimizer, "_step_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`: call "
                "optimizer.step() first, then scheduler.step() (else the first value of the "
                "learning rate schedule is skipped), as in PyTorch",
                UserWarning,
                stacklevel=3,
            )

    def _advance(self, initial):
        self._step_count = getattr(self, "_step_count", 0) + 1
        self.last_epoch += 1
        groups = self.optimizer.param_groups
        bases = list(self.base_lrs)
        if len(groups) != len(bases):
            if len(groups) < len(bases) or not self._base_free:
                raise _groups_changed(self)
            bases += [None] * (len(groups) - len(bases))  # (PyTorch's recursive rules go on)
        # every new lr computed before any is set, as PyTorch's: groups may share one Tensor
        # lr (a Tensor given as the optimizer's default lr), which is filled in place
        lrs = [
            self._next_lr(i, _lr(group, "lr"), base, self.last_epoch, initial)
            for i, (group, base) in enumerate(zip(groups, bases, strict=True))
        ]
        for group, lr in zip(groups, lrs, strict=True):
            _set_lr(group, lr)
        self._last_lr = [_lr(group, "lr") for group in self.optimizer.param_groups]

    def get_last_lr(self):
        """The learning rates set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def _restart(self):
        """Go back to epoch 0 and set every group's lr by the closed form there (what
        SequentialLR does at a milestone to the scheduler that starts, as PyTorch's)."""
        self.last_epoch = 0
        groups = self.optimizer.param_groups
        lrs = [self._group_lr(i, base, 0) for i, base in enumerate(self.base_lrs)]
        for group, lr in zip(groups, lrs, strict=True):
            _set_lr(group, lr)
        self._last_lr = [_lr(group, "lr") for group in groups]

    def state_dict(self):
        """Everything but the optimizer (which has its own state dict)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


def _groups_changed(scheduler):
    """The error for an optimizer whose parameter groups are not those the scheduler was
    made for (PyTorch's fails with a bare zip() ValueError)."""
    n, m = len(scheduler.optimizer.param_groups), len(scheduler.base_lrs)
    return ValueError(
        f"{type(scheduler).__name__}.step: the optimizer has {n} parameter groups, the "
        f"scheduler was made for {m} (a group added or removed after the scheduler was made); "
        "make the scheduler after the optimizer has all its groups"
    )


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

    _base_free = True

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

    _base_free = True

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

    _base_free = True  # (but at the bottom of each cosine)

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
            if base_lr is None:  # (a group added after the scheduler was made)
                raise _groups_changed(self)
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

    _base_free = True

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


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until epoch ``total_iters``, then initial_lr (PyTorch's
    ``ConstantLR``; recursive, as PyTorch's: the current lr times ``factor`` at epoch 0 and
    divided by it at ``total_iters``).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
        >>> rates = []
        >>> for epoch in range(4):
        ...     rates.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.5, 0.5, 1.0, 1.0]
    """

    _base_free = True

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * (self.factor + (epoch >= self.total_iters) * (1 - self.factor))

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        if epoch == 0:
            return lr * self.factor
        if epoch != self.total_iters:
            return lr
        if self.factor == 0:  # (PyTorch's fails here with a bare ZeroDivisionError)
            raise ValueError(
                f"ConstantLR: factor 0 made the lr 0, which cannot be scaled back at epoch "
                f"total_iters={self.total_iters}; give a positive factor, or use LambdaLR("
                "optimizer, lambda epoch: 0.0 if epoch < total_iters else 1.0)"
            )
        return lr * (1.0 / self.factor)


class LinearLR(LRScheduler):
    """lr = initial_lr * f, f going linearly from ``start_factor`` at epoch 0 to
    ``end_factor`` at epoch ``total_iters`` and staying there (PyTorch's ``LinearLR``, with its
    recursive rule on the current lr).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
        >>> rates = []
        >>> for epoch in range(5):
        ...     rates.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    _base_free = True

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * (
            self.start_factor
            + (self.end_factor - self.start_factor)
            * min(self.total_iters, epoch)
            / self.total_iters
        )

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        if epoch == 0:
            return lr * self.start_factor
        if initial or epoch > self.total_iters:
            return lr
        change = self.end_factor - self.start_factor
        return lr * (1.0 + change / (self.total_iters * self.start_factor + (epoch - 1) * change))


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power (PyTorch's
    ``PolynomialLR``, with its recursive rule on the current lr).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    _base_free = True

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return base_lr * (1.0 - min(self.total_iters, epoch) / self.total_iters) ** self.power

    def _next_lr(self, index, lr, base_lr, epoch, initial):
        if initial or epoch > self.total_iters:
            return lr
        t = self.total_iters
        return lr * ((1.0 - epoch / t) / (1.0 - (epoch - 1) / t)) ** self.power


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: lr = eta_min + (initial_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, where
    T_cur counts the epochs since the last restart and the period T_i starts at ``T_0`` and
    is multiplied by ``T_mult`` at each restart (PyTorch's ``CosineAnnealingWarmRestarts``).
    ``step(epoch)`` with a (fractional) epoch is taken, as PyTorch's, to step within epochs.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        >>> rates = []
        >>> for epoch in range(4):
        ...     rates.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803 - PyTorch's names
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        """The lr at the current ``T_cur`` and ``T_i`` (``epoch`` is not used: they are)."""
        return (
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        )

    def step(self, epoch=None):
        """Advance one epoch, or go to ``epoch`` (a number, fractional to step within an
        epoch, as PyTorch's), and set every group's lr."""
        self._check_order()
        self._step_count += 1
        self._to_epoch(epoch)

    def _advance(self, initial):
        self._step_count = getattr(self, "_step_count", 0) + 1
        self._to_epoch(None)

    def _to_epoch(self, epoch):
        """PyTorch's rule for T_cur and T_i, then the lrs."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        groups = self.optimizer.param_groups
        if len(groups) != len(self.base_lrs):
            raise _groups_changed(self)
        for group, base in zip(groups, self.base_lrs, strict=True):
            _set_lr(group, self.lr_at(base, self.last_epoch))
        self._last_lr = [_lr(group, "lr") for group in groups]


def _per_group(name, optimizer, value):
    """One value per parameter group: a list or tuple of as many, or one value for all
    (PyTorch's check and message)."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has {n}."
            )
        return list(value)
    return [value] * n


def _momentum_groups(scheduler, optimizer, base_momentum, max_momentum, fresh):
    """Set up momentum cycling (CyclicLR, OneCycleLR): the groups' momentum, or beta1 of
    their ``betas``, starts at ``max_momentum`` (when ``fresh``); returns the two lists."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled "
            f"({type(scheduler).__name__}: {type(optimizer).__name__} has neither; pass "
            "cycle_momentum=False)"
        )
    scheduler.use_beta1 = "betas" in optimizer.defaults
    maxes = _per_group("max_momentum", optimizer, max_momentum)
    bases = _per_group("base_momentum", optimizer, base_momentum)
    if fresh:
        for top, bottom, group in zip(maxes, bases, optimizer.param_groups, strict=True):
            _set_momentum(scheduler, group, top)
            group["max_momentum"] = top
            group["base_momentum"] = bottom
    return bases, maxes


def _set_momentum(scheduler, group, value):
    """A group's momentum, or the first of its ``betas`` (Adam-like optimizers)."""
    if scheduler.use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (PyTorch's ``CyclicLR``): the lr goes from
    ``base_lr`` up to ``max_lr`` in ``step_size_up`` steps and back in ``step_size_down``
    (default: as many), the amplitude scaled by ``mode``: "triangular" (constant),
    "triangular2" (halved every cycle), "exp_range" (``gamma ** iteration``), or by
    ``scale_fn(cycle or iteration)`` (``scale_mode``).  With ``cycle_momentum`` the groups'
    momentum (or beta1 of their ``betas``) cycles inversely between ``max_momentum`` and
    ``base_momentum``.  Step it after every batch.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0, momentum=0.9)
        >>> sched = tg.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.5,
        ...                                        step_size_up=2)
        >>> rates = []
        >>> for batch in range(5):
        ...     rates.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.1, 0.3, 0.5, 0.3, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr,
        max_lr,
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn=None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")
        # (PyTorch's fails with a bare ZeroDivisionError on step_size_up 0, and steps a
        # negative one)
        if not step_size_up > 0:
            raise ValueError(f"CyclicLR: step_size_up must be positive, got {step_size_up}")
        if step_size_down is not None and not step_size_down >= 0:
            raise ValueError(
                f"CyclicLR: step_size_down must be nonnegative (or None), got {step_size_down}"
            )
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set_lr(group, lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        if scale_fn is None:  # (the modes fix their scale_mode, as PyTorch's)
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _momentum_groups(
                self, optimizer, base_momentum, max_momentum, last_epoch == -1
            )
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x):
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def _scale_factor(self, epoch):
        """(position in the cycle as a fraction of the way up or down, the scale)."""
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        if x <= self.step_ratio:
            factor = x / self.step_ratio
        else:
            factor = (x - 1) / (self.step_ratio - 1)
        return factor, self.scale_fn(cycle if self.scale_mode == "cycle" else epoch)

    def _group_lr(self, index, base_lr, epoch):
        factor, scale = self._scale_factor(epoch)
        if self.cycle_momentum:
            top, bottom = self.max_momentums[index], self.base_momentums[index]
            group = self.optimizer.param_groups[index]
            _set_momentum(self, group, top - (top - bottom) * factor * scale)
        return base_lr + (self.max_lrs[index] - base_lr) * factor * scale

    def state_dict(self):
        """Everything but the optimizer; a custom ``scale_fn`` is kept only as the
        ``__dict__`` of a callable object (a function is not saved), as PyTorch's."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = dict(fn.__dict__)
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom", None)
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (PyTorch's ``OneCycleLR``): over ``total_steps`` (or ``epochs *
    steps_per_epoch``) steps the lr anneals (``anneal_strategy`` "cos" or "linear") from
    ``max_lr / div_factor`` up to ``max_lr`` in the first ``pct_start`` of them, then down to
    ``max_lr / div_factor / final_div_factor``; with ``three_phase`` it comes back to the
    initial lr symmetrically before the final anneal.  With ``cycle_momentum`` the momentum
    (or beta1 of ``betas``) anneals inversely between ``max_momentum`` and ``base_momentum``.
    Step it after every batch; stepping past ``total_steps`` raises ValueError.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0, momentum=0.9)
        >>> sched = tg.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5,
        ...                                          anneal_strategy="linear", pct_start=0.4)
        >>> rates = []
        >>> for batch in range(5):
        ...     rates.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.04, 1.0, 0.666668, 0.333336, 4e-06]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        # phases: (end step, start lr, end lr, start momentum, end momentum), group keys
        up = (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
        if three_phase:
            back = (float(2 * pct_start * n) - 2, "max_lr", "initial_lr")
            self._schedule_phases = [
                up,
                (*back, "base_momentum", "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            down = (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")
            self._schedule_phases = [up, down]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        self._pct_start = pct_start
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _momentum_groups(self, optimizer, base_momentum, max_momentum, last_epoch == -1)
        super().__init__(optimizer, last_epoch)

    def load_state_dict(self, state_dict):
        """Restores a state dict of this class, or of PyTorch's ``OneCycleLR`` (whose phases
        are dicts: read into this class's tuples; stepping after loading one failed with a
        bare TypeError)."""
        state = dict(state_dict)
        phases = state.get("_schedule_phases")
        if phases and isinstance(phases[0], dict):
            keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
            state["_schedule_phases"] = [tuple(p[k] for k in keys) for p in phases]
        super().load_state_dict(state)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _group_lr(self, index, base_lr, epoch):
        if epoch > self.total_steps:
            raise ValueError(
                f"Tried to step {epoch} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        group = self.optimizer.param_groups[index]
        start_step = 0.0
        last = len(self._schedule_phases) - 1
        for i, (end_step, start_lr, end_lr, start_mom, end_mom) in enumerate(self._schedule_phases):
            if epoch <= end_step or i == last:
                if end_step == start_step:  # (PyTorch's: a bare ZeroDivisionError)
                    raise ValueError(
                        f"OneCycleLR: step {epoch} falls in phase {i + 1} of the schedule, "
                        f"which has no steps (pct_start={self._pct_start}, total_steps="
                        f"{self.total_steps}); give a pct_start below 1, or step at most "
                        f"{self.total_steps - 1} times"
                    )
                pct = (epoch - start_step) / (end_step - start_step)
                lr = self._anneal(_lr(group, start_lr), _lr(group, end_lr), pct)
                if self.cycle_momentum:
                    momentum = self._anneal(group[start_mom], group[end_mom], pct)
                    _set_momentum(self, group, momentum)
                return lr
            start_step = end_step


def _check_schedulers(kind, optimizer, schedulers):
    """The sub-schedulers of SequentialLR / ChainedScheduler: at least one, none a
    ReduceLROnPlateau, all on ``optimizer`` (PyTorch's checks and messages)."""
    if len(schedulers) < 1:
        raise ValueError(f"{kind} expects at least one scheduler, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{kind} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{kind} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{i} in the given schedulers sequence."
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{kind} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(scheduler).__name__} at index {i} has "
                f"{type(scheduler.optimizer).__name__} {id(scheduler.optimizer):#x}, which is "
                f"different from {type(optimizer).__name__} {id(optimizer):#x}."
            )


def _no_restart(scheduler):
    """The error for a SequentialLR / ChainedScheduler that a SequentialLR would start at one
    of its milestones: it has no lr of its own at epoch 0 (PyTorch's raises a bare
    NotImplementedError there)."""
    return NotImplementedError(
        f"SequentialLR: a {type(scheduler).__name__} cannot be started at a milestone of a "
        "SequentialLR (it has no closed form for epoch 0 of its own, PyTorch's fails here "
        "too); give it first in the SequentialLR, or list its schedulers in the SequentialLR "
        "itself"
    )


def _nested_state(scheduler):
    """The state dict of SequentialLR / ChainedScheduler: theirs and their schedulers'."""
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in scheduler._schedulers]
    return state


def _load_nested_state(scheduler, state_dict):
    state_dict = dict(state_dict)
    nested = state_dict.pop("_schedulers")
    scheduler.__dict__.update(state_dict)
    for s, state in zip(scheduler._schedulers, nested, strict=True):
        s.load_state_dict(state)


class _OfSchedulers(LRScheduler):
    """A scheduler made of others (SequentialLR, ChainedScheduler): stepped as a whole when
    nested in a SequentialLR, never restarted, its state holding its schedulers' states."""

    def _advance(self, initial):
        self.step()

    def _restart(self):
        raise _no_restart(self)

    def state_dict(self):
        """Its state and its schedulers' (each's ``state_dict()``)."""
        return _nested_state(self)

    def load_state_dict(self, state_dict):
        _load_nested_state(self, state_dict)


class SequentialLR(_OfSchedulers):
    """Run ``schedulers`` one after the other (PyTorch's ``SequentialLR``): the first until
    epoch ``milestones[0]``, where the second starts at its epoch 0, and so on.

    Examples:
        >>> import tapegrad as tg
        >>> sched_mod = tg.optim.lr_scheduler
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> warmup = sched_mod.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> decay = sched_mod.ExponentialLR(opt, gamma=0.5)
        >>> sched = sched_mod.SequentialLR(opt, [warmup, decay], milestones=[2])
        >>> rates = []
        >>> for epoch in range(5):
        ...     rates.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        milestones = list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # back to the initial lrs
            _set_lr(group, _lr(group, "initial_lr"))
        self.recursive_undo()  # (undo the steps the schedulers' constructors made)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._step_count = 0
        first._advance(initial=True)
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None):
        """Take back one epoch from every scheduler (nested ones too)."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self):
        """Advance one epoch: the scheduler of this epoch steps, or starts at a milestone."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_OfSchedulers):
    """Step several schedulers of one optimizer together (PyTorch's ``ChainedScheduler``):
    each ``step()`` steps every one of ``schedulers`` in order, so their changes compose.

    Examples:
        >>> import tapegrad as tg
        >>> sched_mod = tg.optim.lr_scheduler
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = sched_mod.ChainedScheduler([
        ...     sched_mod.ConstantLR(opt, factor=0.5, total_iters=2),
        ...     sched_mod.ExponentialLR(opt, gamma=0.5)])
        >>> rates = []
        >>> for epoch in range(4):
        ...     rates.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> rates
        [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got "
                "no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [_lr(g, "lr") for g in self._schedulers[-1].optimizer.param_groups]

    def step(self):
        """Step every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [_lr(g, "lr") for g in self._schedulers[-1].optimizer.param_groups]
