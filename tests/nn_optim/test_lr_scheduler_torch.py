"""LambdaLR, MultiStepLR and ReduceLROnPlateau against PyTorch's, step by step, on two
parameter groups."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _opt(lib):
    params = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
    return lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=0.1)


SCHEDULERS = [
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95**e)),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.5 * e + 1])),
    ("MultiStepLR", dict(milestones=[2, 5, 9])),
    ("MultiStepLR", dict(milestones=[3, 3, 7, 1], gamma=0.5)),
]


@pytest.mark.parametrize(
    "name,kw", SCHEDULERS, ids=[s[0] + str(i) for i, s in enumerate(SCHEDULERS)]
)
def test_schedulers_agree_with_torch(name, kw):
    rates = []
    for lib in (tg, torch):
        opt = _opt(lib)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        seen = []
        for _ in range(12):
            seen.append(sched.get_last_lr() + [g["lr"] for g in opt.param_groups])
            opt.step()
            sched.step()
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)


METRICS = [5.0, 4.0, 4.0, 3.9999, 4.1, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.9999, 2.1, 2.1, 2.1]
METRICS += [2.1, 2.1, 2.1, 2.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]

PLATEAU = [
    dict(),
    dict(patience=2),
    dict(patience=1, factor=0.5, cooldown=2),
    dict(patience=0, factor=0.5, threshold=0.1, threshold_mode="abs"),
    dict(patience=1, factor=0.3, min_lr=0.01),
    dict(patience=1, factor=0.3, min_lr=[0.02, 0.05]),
    dict(mode="max", patience=1, factor=0.5),
    dict(mode="max", patience=0, threshold=0.5, threshold_mode="abs", cooldown=1),
    dict(patience=0, factor=0.9999999, eps=1e-6),
]


@pytest.mark.parametrize("kw", PLATEAU)
def test_reduce_lr_on_plateau_agrees_with_torch(kw):
    rates, states = [], []
    for lib in (tg, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        seen, state = [], []
        for m in METRICS:
            opt.step()
            sched.step(m if lib is tg else torch.tensor(m))
            seen.append(sched.get_last_lr() + [g["lr"] for g in opt.param_groups])
            state.append((sched.best, sched.num_bad_epochs, sched.cooldown_counter))
        rates.append(seen)
        states.append(state)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)
    assert states[0] == states[1]


@pytest.mark.parametrize(
    "kw", [dict(factor=1.0), dict(mode="avg"), dict(threshold_mode="x"), dict(min_lr=[0.1])]
)
def test_reduce_lr_on_plateau_refuses_what_torch_refuses(kw):
    with pytest.raises(ValueError) as torch_err:
        torch.optim.lr_scheduler.ReduceLROnPlateau(_opt(torch), **kw)
    with pytest.raises(ValueError) as tg_err:
        tg.optim.lr_scheduler.ReduceLROnPlateau(_opt(tg), **kw)
    assert str(tg_err.value) == str(torch_err.value)
