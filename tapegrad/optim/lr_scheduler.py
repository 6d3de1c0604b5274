"""Learning-rate schedules (``tg.optim.lr_scheduler``), PyTorch's names and arguments.

A scheduler sets ``group["lr"]`` of each of its optimizer's parameter groups: call
``scheduler.step()`` after ``optimizer.step()``, once per epoch.  The schedules come in two
kinds:

- *recurrences* (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, ConstantLR, LinearLR,
  PolynomialLR): each step maps the group's *current* lr to the next one, as PyTorch's
  chainable rules do, so schedulers stacked on one optimizer, or an lr changed by hand,
  compose as in PyTorch.  Their closed form of the epoch (``lr_at``) serves where a schedule
  starts afresh (a SequentialLR milestone) and as ``_get_closed_form_lr()``;
- *closed forms* (LambdaLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR and subclasses
  giving ``lr_at`` or ``get_lr``): each step sets the lr a function of the epoch and the
  group's ``base_lrs`` gives.

Every group's new lr is computed before any is set (a Tensor lr shared by groups is moved
once).  ReduceLROnPlateau follows a metric; SequentialLR and ChainedScheduler combine others.

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
import numbers
import types
import warnings
from collections import Counter

from ..tensor_class import Tensor
from .stateful import Optimizer, _number

__all__ = [
    "LRScheduler",
    "StepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "LambdaLR",
    "MultiplicativeLR",
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

_EARLY_STEP = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`: call optimizer.step() "
    "first, then scheduler.step() (else the first value of the learning rate schedule is "
    "skipped), as in PyTorch"
)
_GET_LR_OUTSIDE = (
    "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."
)
_TRANSIENT = ("optimizer", "_in_step")  # attributes a state dict never carries


# ---- small shared pieces ---------------------------------------------------------------------


def _read(group, key="lr"):
    """A group's entry ``key`` as a Python number (a one-element Tensor is read)."""
    return _number(group[key], f"lr_scheduler: the parameter group's {key!r}")


def _write(group, value, key="lr"):
    """Store ``value`` as the group's ``key``: a Tensor already there is filled in place (so
    the Tensor a user gave stays the group's, as PyTorch's schedulers keep it)."""
    held = group.get(key)
    if isinstance(held, Tensor):
        held.fill_(value)
    else:
        group[key] = value


def _ensure_optimizer(optimizer):
    if isinstance(optimizer, Optimizer):
        return
    raise TypeError(f"{type(optimizer).__name__} is not a tg.optim Optimizer")


def _per_group(name, optimizer, value):
    """``value`` once per parameter group: a list / tuple of exactly that many, or one value
    repeated."""
    count = len(optimizer.param_groups)
    if not isinstance(value, (list, tuple)):
        return [value] * count
    if len(value) != count:
        raise ValueError(
            f"{name} must have the same length as optimizer.param_groups. {name} has "
            f"{len(value)} values, param_groups has {count}."
        )
    return list(value)


def _real(owner, name, value):
    """A hyper-parameter that must be a real number (bool refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r}")
    return value


def _whole(owner, name, value, smallest):
    """A count given as an int or an integral float, at least ``smallest``, as an int."""
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real)
    if ok and value == int(value) and value >= smallest:
        return int(value)
    kind = "a positive integer" if smallest == 1 else f"an integer >= {smallest}"
    raise ValueError(f"{owner}: {name} must be {kind}, got {value!r}")


def _regrouped(scheduler, made_for):
    """The error for an optimizer whose parameter groups changed after the scheduler was made
    where the schedule needs each group's starting value (PyTorch's fails with a bare zip()
    ValueError or KeyError)."""
    return ValueError(
        f"{type(scheduler).__name__}.step: the optimizer has "
        f"{len(scheduler.optimizer.param_groups)} parameter groups, the scheduler was made for "
        f"{made_for} (a group added or removed after the scheduler was made); make the "
        "scheduler after the optimizer has all its groups"
    )


def _put_momentum(group, value, in_betas):
    """Set a group's momentum, or the first of its ``betas`` (Adam-like optimizers)."""
    if in_betas:
        rest = tuple(group["betas"])[1:]
        group["betas"] = (value, *rest)
    else:
        _write(group, value, "momentum")


def _prepare_momentum(owner, optimizer, low, high, fresh):
    """Momentum cycling of CyclicLR / OneCycleLR: returns whether it acts on beta1; on a
    fresh start each group records its ``base_momentum`` / ``max_momentum`` and starts at
    the latter."""
    keys = optimizer.defaults
    if "momentum" not in keys and "betas" not in keys:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled "
            f"({owner}: {type(optimizer).__name__} has neither; pass cycle_momentum=False)"
        )
    in_betas = "betas" in keys
    lows = _per_group("base_momentum", optimizer, low)
    highs = _per_group("max_momentum", optimizer, high)
    if fresh:
        for group, lo, hi in zip(optimizer.param_groups, lows, highs, strict=True):
            _put_momentum(group, hi, in_betas)
            group["base_momentum"] = lo
            group["max_momentum"] = hi
    return in_betas


# ---- the base class --------------------------------------------------------------------------


class LRScheduler:
    """Base class: subclasses give ``lr_at(base_lr, epoch)``.

    (Or, as PyTorch's, ``get_lr()``: every group's lr at ``self.last_epoch``.)

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
        _ensure_optimizer(optimizer)
        self.optimizer = optimizer
        self.base_lrs = self._starting_lrs(last_epoch)
        self.last_epoch = last_epoch
        self._step_count = 0
        self._advance(None)

    # -- what subclasses give
    def lr_at(self, base_lr, epoch):
        """The lr of a group that started at ``base_lr``, at ``epoch``."""
        raise NotImplementedError(
            f"{type(self).__name__}: a scheduler subclass must define lr_at(base_lr, epoch) "
            "(a group's lr at an epoch) or get_lr() (every group's lr at self.last_epoch)"
        )

    def _schedule(self):
        """Every group's lr at ``self.last_epoch`` (a closed form of the epoch)."""
        return [self.lr_at(base, self.last_epoch) for base in self._bases()]

    # -- the stepping machinery
    def _starting_lrs(self, last_epoch):
        """Record (fresh start) or check (resuming) every group's ``initial_lr``; they are
        the schedule's ``base_lrs``."""
        groups = self.optimizer.param_groups
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", _read(group))
        else:
            for index, group in enumerate(groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{index}] when "
                        f"resuming an optimizer (last_epoch={last_epoch}): load the "
                        "optimizer's state dict, which holds it, before making the scheduler"
                    )
        return [_read(group, "initial_lr") for group in groups]

    def _bases(self):
        """``base_lrs``, one per current group (a closed form needs every group's)."""
        if len(self.base_lrs) != len(self.optimizer.param_groups):
            raise _regrouped(self, len(self.base_lrs))
        return self.base_lrs

    def _move_epoch(self, epoch):
        """Where the schedule goes: the next epoch (``None``) or ``epoch``."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch

    def _restart_values(self):
        """The lrs a schedule started afresh (at epoch 0) sets."""
        return self.get_lr()

    def _advance(self, epoch, restart=False):
        """One step: move the epoch, compute every group's lr, then set them all."""
        self._step_count += 1
        self._move_epoch(0 if restart else epoch)
        self._in_step = True
        try:
            values = self._restart_values() if restart else self.get_lr()
        finally:
            self._in_step = False
        groups = self.optimizer.param_groups
        values = list(values)
        if len(values) != len(groups):
            raise ValueError(
                f"{type(self).__name__}.step: get_lr() gave {len(values)} lrs for the "
                f"optimizer's {len(groups)} parameter groups; give one lr per group"
            )
        for group, value in zip(groups, values, strict=True):
            _write(group, value)
        self._last_lr = [_read(group) for group in groups]
        self._after_lrs_set()

    def _after_lrs_set(self):
        """Hook: what else a step sets (cycled momenta)."""

    def _start_again(self):
        """Start the schedule again at epoch 0 (a SequentialLR milestone)."""
        self._advance(None, restart=True)

    def _refuse_epoch(self, epoch):
        if epoch is not None:
            raise TypeError(
                f"{type(self).__name__}.step: the epoch argument (deprecated in PyTorch) is not "
                "supported; call step() once per epoch"
            )

    def _warn_if_early(self):
        if self._step_count == 1 and not getattr(self.optimizer, "_step_called", False):
            warnings.warn(_EARLY_STEP, UserWarning, stacklevel=3)

    # -- the public surface
    def get_lr(self):
        """Every group's lr at ``self.last_epoch``, as the step computes it (outside a step,
        read ``get_last_lr()`` instead: PyTorch's warning)."""
        if not self.__dict__.get("_in_step", False):
            warnings.warn(_GET_LR_OUTSIDE, UserWarning, stacklevel=2)
        return self._schedule()

    def step(self, epoch=None):
        """Move to the next epoch and set every group's lr (call after ``optimizer.step()``)."""
        self._refuse_epoch(epoch)
        self._warn_if_early()
        self._advance(None)

    def get_last_lr(self):
        """The lrs the last step set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """The scheduler's attributes but its optimizer (PyTorch's keys)."""
        return {k: v for k, v in self.__dict__.items() if k not in _TRANSIENT}

    def load_state_dict(self, state_dict):
        """Take the attributes of ``state_dict`` (tapegrad's or PyTorch's)."""
        self.__dict__.update({k: v for k, v in state_dict.items() if k not in _TRANSIENT})


# ---- recurrences: the next lr from the current one -------------------------------------------


class _Recurrence(LRScheduler):
    """A schedule stepping each group's current lr: by default ``lr * _multiplier(epoch)``
    (subclasses give ``_multiplier`` and the closed form ``lr_at``).  Those with
    ``_resumed_as_is`` leave the lr as it is at the first step of a scheduler made with
    ``last_epoch`` >= 0, as PyTorch's ExponentialLR, CosineAnnealingLR, LinearLR and
    PolynomialLR do."""

    _resumed_as_is = False

    def _multiplier(self, epoch):
        raise NotImplementedError

    def _next(self, lr, base, epoch):
        return lr * self._multiplier(epoch)

    def _schedule(self):
        bases, epoch = self.base_lrs, self.last_epoch
        current = [_read(g) for g in self.optimizer.param_groups]
        if self._resumed_as_is and epoch > 0 and self._step_count == 1:
            return current
        padded = bases + [None] * (len(current) - len(bases))
        return [self._next(lr, base, epoch) for lr, base in zip(current, padded, strict=False)]

    def _get_closed_form_lr(self):
        """Every group's lr at ``last_epoch`` from its base lr (not from its current lr)."""
        return [self.lr_at(base, self.last_epoch) for base in self._bases()]

    def _restart_values(self):
        return self._get_closed_form_lr()

    def _base_of(self, base):
        """A base lr a rule needs: missing for a group added after the scheduler was made."""
        if base is None:
            raise _regrouped(self, len(self.base_lrs))
        return base


class StepLR(_Recurrence):
    """lr = initial_lr * gamma ** (epoch // step_size).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.010000000000000002]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _whole("StepLR", "step_size", step_size, 1)
        self.gamma = _real("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        return self.gamma if epoch > 0 and epoch % self.step_size == 0 else 1.0

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(_Recurrence):
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
        self.milestones = Counter(list(milestones))
        self.gamma = _real("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        hits = self.milestones.get(epoch, 0)
        return self.gamma**hits if hits else 1.0

    def lr_at(self, base_lr, epoch):
        passed = sum(n for when, n in self.milestones.items() if when <= epoch)
        return base_lr * self.gamma**passed


class ExponentialLR(_Recurrence):
    """lr = initial_lr * gamma ** epoch.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    _resumed_as_is = True

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = _real("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        return self.gamma if epoch > 0 else 1.0

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma**epoch


class ConstantLR(_Recurrence):
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

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 <= _real("ConstantLR", "factor", factor) <= 1:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        if epoch == 0:
            return self.factor
        if epoch != self.total_iters:
            return 1.0
        if self.factor == 0:
            raise ValueError(
                f"ConstantLR: factor 0 made the lr 0, which cannot be scaled back at epoch "
                f"total_iters={self.total_iters}; give a positive factor, or use "
                "LambdaLR(optimizer, lambda epoch: 0.0 if epoch < total_iters else 1.0)"
            )
        return 1.0 / self.factor

    def lr_at(self, base_lr, epoch):
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class LinearLR(_Recurrence):
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

    _resumed_as_is = True

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < _real("LinearLR", "start_factor", start_factor) <= 1:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if not 0 <= _real("LinearLR", "end_factor", end_factor) <= 1:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        if epoch == 0:
            return self.start_factor
        if epoch > self.total_iters:
            return 1.0
        # f(epoch) / f(epoch - 1) with f(k) = start + slope * k, slope = (end - start) / total
        rise = self.end_factor - self.start_factor
        before = self.start_factor * self.total_iters + (epoch - 1) * rise
        return 1.0 + rise / before

    def lr_at(self, base_lr, epoch):
        done = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class PolynomialLR(_Recurrence):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power (PyTorch's
    ``PolynomialLR``, with its recursive rule on the current lr).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    _resumed_as_is = True

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ):
        self.total_iters = total_iters
        self.power = _real("PolynomialLR", "power", power)
        super().__init__(optimizer, last_epoch)

    def _multiplier(self, epoch):
        if epoch == 0 or epoch > self.total_iters:
            return 1.0
        left_now = 1.0 - epoch / self.total_iters
        left_before = 1.0 - (epoch - 1) / self.total_iters
        return (left_now / left_before) ** self.power

    def lr_at(self, base_lr, epoch):
        return base_lr * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power


def _half_cosine(high, low, t, period):
    """The cosine annealing from ``high`` (t = 0) to ``low`` (t = period)."""
    return low + (high - low) * (1.0 + math.cos(math.pi * t / period)) / 2.0


class CosineAnnealingLR(_Recurrence):
    """lr = eta_min + (initial_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2.

    Stepped by PyTorch's recursive form (the ratio of consecutive cosine terms applied to
    the current lr; at the troughs, epoch = (2k + 1) T_max + 1, the rise of one step).

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    _resumed_as_is = True

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if T_max == 0:
            raise ValueError(
                "CosineAnnealingLR: T_max must be nonzero (the number of epochs of a half "
                "cosine period), got 0"
            )
        self.T_max = T_max
        self.eta_min = _real("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch):
        return _half_cosine(base_lr, self.eta_min, epoch, self.T_max)

    def _next(self, lr, base, epoch):
        if epoch == 0:
            return lr
        period, low = self.T_max, self.eta_min
        if (epoch - 1 - period) % (2 * period) == 0:  # leaving a trough: the ratio is 0 / 0
            return lr + (self._base_of(base) - low) * (1.0 - math.cos(math.pi / period)) / 2.0
        now = 1.0 + math.cos(math.pi * epoch / period)
        before = 1.0 + math.cos(math.pi * (epoch - 1) / period)
        return low + (lr - low) * now / before


# ---- closed forms of the epoch ---------------------------------------------------------------


def _lr_lambdas(name, optimizer, lr_lambda):
    """The one function per parameter group of a LambdaLR / MultiplicativeLR (one for all, or
    a list of them), checked."""
    _ensure_optimizer(optimizer)
    count = len(optimizer.param_groups)
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != count:
            raise ValueError(f"Expected {count} lr_lambdas, but got {len(lr_lambda)}")
        fns = list(lr_lambda)
    else:
        fns = [lr_lambda] * count
    for fn in fns:
        if not callable(fn):
            raise TypeError(
                f"{name}: lr_lambda must be a function of the epoch (or a list of them, one "
                f"per parameter group), got {fn!r}"
            )
    return fns


class _WithLambdas:
    """The state dict of a scheduler driven by ``lr_lambdas``: without the functions; a
    callable object's attributes are kept (under ``lr_lambdas``, as PyTorch keeps them) and
    given back to it on loading."""

    def state_dict(self):
        state = super().state_dict()
        del state["lr_lambdas"]
        kept = [_object_attributes(fn) for fn in self.lr_lambdas]
        if any(k is not None for k in kept):
            state["lr_lambdas"] = kept
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", None) or []
        super().load_state_dict(state)
        for fn, attrs in zip(self.lr_lambdas, saved, strict=False):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_WithLambdas, LRScheduler):
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
        self.lr_lambdas = _lr_lambdas(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def _schedule(self):
        epoch = self.last_epoch
        return [base * fn(epoch) for base, fn in zip(self._bases(), self.lr_lambdas, strict=True)]


class MultiplicativeLR(_WithLambdas, _Recurrence):
    """lr = (the group's current lr) * lr_lambda(epoch) at every step but the scheduler's first
    (made afresh or resumed with ``last_epoch``), with one function for every group or a list
    of them, one per group.

    Examples:
        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
        >>> opt.step(); sched.step(); opt.step(); sched.step(); sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambdas = _lr_lambdas(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def _schedule(self):
        current = [_read(g) for g in self.optimizer.param_groups]
        if self._step_count == 1:  # the scheduler's first step (fresh or resumed) keeps them
            return current
        return self._times(current, self.last_epoch)

    def _times(self, current, epoch):
        return [lr * fn(epoch) for lr, fn in zip(current, self.lr_lambdas, strict=True)]

    def _restart_values(self):
        """Started again (a SequentialLR milestone): the current lrs times the factors of
        epoch 0, as PyTorch's."""
        return self._times([_read(g) for g in self.optimizer.param_groups], 0)

    def lr_at(self, base_lr, epoch, fn=None):
        """``base_lr`` times the factors of epochs 1..epoch (by default the first group's)."""
        fn = self.lr_lambdas[0] if fn is None else fn
        for e in range(1, epoch + 1):
            base_lr = base_lr * fn(e)
        return base_lr

    def _get_closed_form_lr(self):
        bases, epoch = self._bases(), self.last_epoch
        return [self.lr_at(b, epoch, fn) for b, fn in zip(bases, self.lr_lambdas, strict=True)]


def _object_attributes(fn):
    """A callable object's attributes (what a state dict keeps of it); None for a function."""
    if fn is None or isinstance(fn, types.FunctionType):
        return None
    return dict(getattr(fn, "__dict__", {}))


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: lr = eta_min + (initial_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, where
    T_cur counts the epochs since the last restart and the period T_i starts at ``T_0`` and
    is multiplied by ``T_mult`` at each restart (PyTorch's ``CosineAnnealingWarmRestarts``).
    ``step(epoch)`` with a (fractional) epoch is taken, as PyTorch's, to step within epochs.

    Made with ``last_epoch=k`` it resumes where the uninterrupted schedule is at epoch
    ``k + 1`` (PyTorch 2.13's takes T_cur = (k + 1) mod T_0 in a period of T_0 * T_mult
    there: another lr once ``k + 1`` is past the second restart).

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
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ):
        if not isinstance(T_0, int) or isinstance(T_0, bool) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or isinstance(T_mult, bool) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, numbers.Real):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_i = T_0
        self.T_cur = None  # (no position yet: the first step finds it from last_epoch)
        super().__init__(optimizer, last_epoch)

    def _cycle_at(self, epoch):
        """(epochs since the last restart, the current period) at an absolute ``epoch``."""
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        begun, period = 0, self.T_0
        while epoch >= begun + period:
            begun += period
            period *= self.T_mult
        return epoch - begun, period

    def _move_epoch(self, epoch):
        if epoch is None and (self.T_cur is None or self.last_epoch < 0):
            epoch = self.last_epoch + 1  # a first step: find the position afresh
        if epoch is None:  # one epoch on from where the schedule is (fractional T_cur kept)
            self.last_epoch += 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur - self.T_i, self.T_i * self.T_mult
            return
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Real):
            raise TypeError(
                f"CosineAnnealingWarmRestarts.step: epoch must be a number, got {epoch!r}"
            )
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        (self.T_cur, self.T_i), self.last_epoch = self._cycle_at(epoch), math.floor(epoch)

    def _schedule(self):
        return [_half_cosine(b, self.eta_min, self.T_cur, self.T_i) for b in self._bases()]

    def step(self, epoch=None):
        """The next epoch, or ``epoch`` (a float steps within an epoch, as PyTorch's)."""
        self._warn_if_early()
        self._advance(epoch)


_CYCLIC_MODES = {  # mode: (the amplitude's scale of x, what x counts)
    "triangular": (lambda self, x: 1.0, "cycle"),
    "triangular2": (lambda self, x: 1 / (2.0 ** (x - 1)), "cycle"),
    "exp_range": (lambda self, x: self.gamma**x, "iterations"),
}


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (PyTorch's ``CyclicLR``): the lr goes from
    ``base_lr`` up to ``max_lr`` in ``step_size_up`` steps and back in ``step_size_down``
    (default: as many), the amplitude scaled by ``mode``: "triangular" (constant),
    "triangular2" (halved every cycle), "exp_range" (``gamma ** iteration``), or by
    ``scale_fn(cycle or iteration)`` (``scale_mode``).  With ``cycle_momentum`` the groups'
    momentum (or beta1 of their ``betas``) cycles inversely between ``max_momentum`` and
    ``base_momentum``.  Step it after every batch.

    Made after another scheduler of the optimizer, or resumed with ``last_epoch``, its first
    lr is from ``base_lr`` too (PyTorch's first one is then from the groups' ``initial_lr``).

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
        _ensure_optimizer(optimizer)
        lows = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, low in zip(optimizer.param_groups, lows, strict=True):
                _write(group, low)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        if step_size_up <= 0:
            raise ValueError(f"CyclicLR: step_size_up must be positive, got {step_size_up}")
        if step_size_down is not None and step_size_down < 0:
            raise ValueError(
                f"CyclicLR: step_size_down must be nonnegative (or None), got {step_size_down}"
            )
        up = float(step_size_up)
        down = up if step_size_down is None else float(step_size_down)
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in _CYCLIC_MODES:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else _CYCLIC_MODES[mode][1]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _prepare_momentum(
                "CyclicLR", optimizer, base_momentum, max_momentum, last_epoch == -1
            )
            self.base_momentums = [g["base_momentum"] for g in optimizer.param_groups]
            self.max_momentums = [g["max_momentum"] for g in optimizer.param_groups]
        self.base_lrs = lows
        super().__init__(optimizer, last_epoch)

    def _starting_lrs(self, last_epoch):
        super()._starting_lrs(last_epoch)  # (initial_lr recorded or checked)
        return self.base_lrs  # base_lr, also after another scheduler set initial_lr

    def scale_fn(self, x):
        """The amplitude's scale at ``x`` (the cycle number, or the iteration)."""
        custom = self._scale_fn_custom
        return _CYCLIC_MODES[self.mode][0](self, x) if custom is None else custom(x)

    def _wave(self):
        """(how far up the triangle the iteration is, 0..1) * the amplitude's scale."""
        it = self.last_epoch
        cycle = math.floor(1 + it / self.total_size)
        x = 1.0 + it / self.total_size - cycle  # the position in the cycle, 0..1
        ratio = self.step_ratio
        height = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        return height * self.scale_fn(cycle if self.scale_mode == "cycle" else it)

    def _schedule(self):
        wave = self._wave()
        return [
            low + (high - low) * wave for low, high in zip(self._bases(), self.max_lrs, strict=True)
        ]

    def _after_lrs_set(self):
        if not self.cycle_momentum:
            return
        wave = self._wave()
        pairs = zip(
            self.optimizer.param_groups, self.base_momentums, self.max_momentums, strict=True
        )
        for group, low, high in pairs:
            _put_momentum(group, high - (high - low) * wave, self.use_beta1)

    def state_dict(self):
        """As the base's; a custom ``scale_fn`` is saved as None (a function) or as its
        attributes (a callable object), as PyTorch saves it."""
        state = super().state_dict()
        state["_scale_fn_custom"] = _object_attributes(self._scale_fn_custom)
        return state

    def load_state_dict(self, state_dict):
        """As the base's; saved attributes of a custom ``scale_fn`` go back to this one's."""
        state = dict(state_dict)
        attrs = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if attrs is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(attrs)


def _one_cycle_length(total_steps, epochs, steps_per_epoch):
    def positive(name, value):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"Expected positive integer {name}, but got {value}")
        return value

    if total_steps is not None:
        return positive("total_steps", total_steps)
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    return positive("epochs", epochs) * positive("steps_per_epoch", steps_per_epoch)


def _one_cycle_phases(total, pct_start, three_phase):
    """The phases (PyTorch's state-dict entries): where each ends and the group entries its
    lr and momentum go between."""
    rise_end = float(pct_start * total) - 1
    if three_phase:
        plan = [
            (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            (float(2 * pct_start * total) - 2, "max_lr", "initial_lr", "base_momentum",
             "max_momentum"),
            (total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
        ]  # fmt: skip
    else:
        plan = [
            (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            (total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
        ]
    keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
    return [dict(zip(keys, row, strict=True)) for row in plan]


_ANNEALS = {
    "cos": lambda start, end, pct: end + (start - end) * (1.0 + math.cos(math.pi * pct)) / 2.0,
    "linear": lambda start, end, pct: start + (end - start) * pct,
}


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
        _ensure_optimizer(optimizer)
        self.total_steps = _one_cycle_length(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in _ANNEALS:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        self._anneal_func_type = anneal_strategy
        peaks = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, peaks, strict=True):
                start = peak / div_factor
                group["initial_lr"] = start
                group["max_lr"] = peak
                group["min_lr"] = start / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _prepare_momentum(
                "OneCycleLR", optimizer, base_momentum, max_momentum, last_epoch == -1
            )
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        return _ANNEALS[self._anneal_func_type](start, end, pct)

    def _phase(self):
        """The phase the current step is in and how far through it (0..1)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        self._bases()  # (every group must hold the entries the phases name)
        phases = self._schedule_phases
        number, begun = 0, 0
        while step > phases[number]["end_step"] and number + 1 < len(phases):
            begun = phases[number]["end_step"]
            number += 1
        end = phases[number]["end_step"]
        if end == begun:
            raise ValueError(
                f"OneCycleLR: step {step} falls in phase {number + 1}, which has no steps "
                f"(it ends at step {end}, where the one before ends); make pct_start "
                "leave every phase at least one step of total_steps"
            )
        return phases[number], (step - begun) / (end - begun)

    def _between(self, group, phase, kind, pct):
        start = _read(group, phase[f"start_{kind}"])
        return self._anneal(start, _read(group, phase[f"end_{kind}"]), pct)

    def _schedule(self):
        phase, pct = self._phase()
        return [self._between(g, phase, "lr", pct) for g in self.optimizer.param_groups]

    def _after_lrs_set(self):
        if not self.cycle_momentum:
            return
        phase, pct = self._phase()
        for g in self.optimizer.param_groups:
            _put_momentum(g, self._between(g, phase, "momentum", pct), self.use_beta1)


# ---- following a metric ----------------------------------------------------------------------


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
        self.factor = factor
        _ensure_optimizer(optimizer)
        self.optimizer = optimizer
        groups = optimizer.param_groups
        one_each = isinstance(min_lr, (list, tuple))
        if one_each:
            if len(min_lr) != len(groups):
                raise ValueError(f"expected {len(groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [_read(g) for g in groups]
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self._check_modes()
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _check_modes(self):
        if self.mode not in ("min", "max"):
            raise ValueError(f"mode {self.mode} is unknown!")
        if self.threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {self.threshold_mode} is unknown!")
        self.mode_worse = math.inf if self.mode == "min" else -math.inf

    def _bar(self):
        """The value a metric must beat to count as an improvement on ``best``."""
        best, th = self.best, self.threshold
        sign = 1.0 if self.mode == "max" else -1.0
        return best * (1.0 + sign * th) if self.threshold_mode == "rel" else best + sign * th

    def _improves(self, metric):
        bar = self._bar()
        return metric > bar if self.mode == "max" else metric < bar

    def get_lr(self):
        """ReduceLROnPlateau has no schedule of the epoch (its lr follows the metrics)."""
        raise NotImplementedError(
            "ReduceLROnPlateau.get_lr: the lr follows the metrics given to step(metric), not "
            "a schedule of the epoch; read get_last_lr()"
        )

    def step(self, metrics, epoch=None):
        """Count the epoch's ``metrics`` (a number or a one-element Tensor): lower the lrs
        after more than ``patience`` epochs without an improvement."""
        if epoch is not None:
            raise TypeError(
                "ReduceLROnPlateau.step: the epoch argument (deprecated in PyTorch) is not "
                "supported; call step(metric) once per epoch"
            )
        try:
            metric = float(metrics)
        except (TypeError, ValueError) as err:
            raise TypeError(
                "ReduceLROnPlateau.step: the metric must be a number or a one-element Tensor "
                f"(the epoch's validation loss, say), got {metrics!r}: {err}"
            ) from err
        self.last_epoch += 1
        if self._improves(metric):
            self.best, self.num_bad_epochs = metric, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:  # bad epochs in a cooldown do not count
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        patience_spent = self.num_bad_epochs > self.patience
        if patience_spent:
            self._lower()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [_read(g) for g in self.optimizer.param_groups]

    def _floors(self):
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            one = self.default_min_lr
            if one is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups, but "
                    f"min_lr gave {len(self.min_lrs)} when the scheduler was made; set "
                    "sched.min_lrs to one value per group"
                )
            self.min_lrs = [one] * len(groups)
        return self.min_lrs

    def _lower(self):
        groups = self.optimizer.param_groups
        now = [_read(g) for g in groups]
        lowered = [
            max(lr * self.factor, floor) for lr, floor in zip(now, self._floors(), strict=True)
        ]
        for group, lr, new in zip(groups, now, lowered, strict=True):
            if lr - new > self.eps:
                _write(group, new)

    def load_state_dict(self, state_dict):
        """As the base's (an older tapegrad's ``_one_min_lr`` read as ``default_min_lr``);
        the modes are checked again."""
        state = dict(state_dict)
        if "_one_min_lr" in state:
            state.setdefault("default_min_lr", state.pop("_one_min_lr"))
        super().load_state_dict(state)
        self._check_modes()


# ---- schedulers made of schedulers -----------------------------------------------------------


def _check_parts(kind, optimizer, schedulers):
    """The schedulers of a SequentialLR / ChainedScheduler: at least one, none a
    ReduceLROnPlateau, all on ``optimizer`` (PyTorch's checks and messages)."""
    if not schedulers:
        chained = " to be chained" if kind == "ChainedScheduler" else ""
        raise ValueError(f"{kind} expects at least one scheduler{chained}, but got no scheduler.")
    for index, part in enumerate(schedulers):
        if isinstance(part, ReduceLROnPlateau):
            raise ValueError(
                f"{kind} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{index} in the given schedulers sequence."
            )
        if part.optimizer is not optimizer:
            raise ValueError(
                f"{kind} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(part).__name__} at index {index} has {part.optimizer}, "
                f"which is different from {type(optimizer).__name__}."
            )


class _Composite(LRScheduler):
    """A scheduler made of others: its state holds theirs; it cannot start over at a
    milestone of a SequentialLR (it has no epoch 0 of its own)."""

    def _start_again(self):
        raise NotImplementedError(
            f"SequentialLR: a {type(self).__name__} cannot be started at a milestone of a "
            "SequentialLR (it has no closed form for epoch 0 of its own, PyTorch's fails here "
            "too); give it first in the SequentialLR, or list its schedulers in the "
            "SequentialLR itself"
        )

    def _advance(self, epoch, restart=False):
        if restart:
            self._start_again()
        self.step()

    def state_dict(self):
        """Its own attributes, and its schedulers' state dicts under ``_schedulers``."""
        state = {k: v for k, v in self.__dict__.items() if k not in (*_TRANSIENT, "_schedulers")}
        state["_schedulers"] = [part.state_dict() for part in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Its own attributes, and each of its schedulers' from ``_schedulers``."""
        state = dict(state_dict)
        parts = state.pop("_schedulers")
        self.__dict__.update({k: v for k, v in state.items() if k not in _TRANSIENT})
        for part, part_state in zip(self._schedulers, parts, strict=False):
            part.load_state_dict(part_state)


class SequentialLR(_Composite):
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

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers,
        milestones,
        last_epoch: int = -1,
    ):
        schedulers = list(schedulers)
        _check_parts("SequentialLR", optimizer, schedulers)
        milestones = list(milestones)
        if len(schedulers) != len(milestones) + 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = 1 + last_epoch
        # making the schedulers stepped each once: take the lrs and epochs back, then let the
        # first one make its first step alone
        for g in optimizer.param_groups:
            _write(g, _read(g, "initial_lr"))
        self.recursive_undo()
        first = schedulers[0]
        if hasattr(first, "_step_count"):
            first._step_count = 0
        first._advance(None)
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None):
        """Take back the first step of every scheduler inside ``sched`` (default: this one),
        nested ones included: their ``last_epoch`` goes back by one."""
        for part in (self if sched is None else sched)._schedulers:
            if hasattr(part, "_schedulers"):
                self.recursive_undo(part)
            elif hasattr(part, "last_epoch"):
                part.last_epoch -= 1

    def step(self):
        """The next epoch: the scheduler whose stretch it is steps (or, at its milestone,
        starts at its epoch 0)."""
        self.last_epoch += 1
        index = sum(1 for m in self._milestones if m <= self.last_epoch)
        current = self._schedulers[index]
        if index and self._milestones[index - 1] == self.last_epoch:
            current._start_again()
        else:
            current.step()
        self._last_lr = current.get_last_lr()


class ChainedScheduler(_Composite):
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
        if optimizer is None and schedulers:
            optimizer = schedulers[0].optimizer
        _check_parts("ChainedScheduler", optimizer, schedulers)
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._last_lr = [_read(g) for g in schedulers[-1].optimizer.param_groups]

    def step(self):
        """Step every scheduler, in order."""
        for part in self._schedulers:
            part.step()
        self._last_lr = [_read(g) for g in self._schedulers[-1].optimizer.param_groups]
