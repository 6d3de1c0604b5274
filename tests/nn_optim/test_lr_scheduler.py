"""LambdaLR, MultiStepLR and ReduceLROnPlateau on worked examples, without PyTorch."""

import pytest

import tapegrad as tg
from tapegrad.optim import lr_scheduler


def _opt(lr=1.0):
    return tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=lr)


def _rates(sched, n):
    out = []
    for _ in range(n):
        out.append(sched.get_last_lr()[0])
        sched.step()
    return out


def test_lambda_and_multistep_worked_examples():
    assert _rates(lr_scheduler.LambdaLR(_opt(2.0), lambda e: e + 1), 3) == [2.0, 4.0, 6.0]
    sched = lr_scheduler.MultiStepLR(_opt(), milestones=[2, 2, 4], gamma=0.5)
    assert _rates(sched, 6) == [1.0, 1.0, 0.25, 0.25, 0.125, 0.125]
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(_opt(), [lambda e: 1.0, lambda e: 1.0])
    assert "lr_lambdas" not in lr_scheduler.LambdaLR(_opt(), lambda e: 1.0).state_dict()


def test_reduce_lr_on_plateau_worked_example():
    opt = _opt()
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1, min_lr=0.2)
    lrs = []
    for loss in [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5]:
        sched.step(loss)
        lrs.append(opt.param_groups[0]["lr"])
    # bad steps 1, 2 -> halve; a cooldown step; bad 1, 2 -> halve; cooldown; bad 1, 2 -> min_lr
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25]
    assert sched.best == 0.5 and sched.num_bad_epochs == 0
    with pytest.raises(TypeError, match="epoch"):
        sched.step(1.0, epoch=3)
    state = sched.state_dict()
    again = lr_scheduler.ReduceLROnPlateau(opt)
    again.load_state_dict(state)
    assert again.patience == 1 and again.best == 0.5


def test_lr_scheduler_is_a_module_of_optim():
    import importlib

    mod = importlib.import_module("tapegrad.optim.lr_scheduler")
    assert mod is tg.optim.lr_scheduler
    for name in ("LambdaLR", "MultiStepLR", "ReduceLROnPlateau", "StepLR"):
        assert name in mod.__all__
