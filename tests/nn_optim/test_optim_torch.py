"""tg.optim against PyTorch (float64): every optimizer and option over several steps, on two
parameter groups, with state_dict round trips; and the learning-rate schedulers."""

import copy
import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

P0 = [np.array([[0.5, -1.0, 2.0], [0.25, 0.0, -3.0]]), np.array([0.3, -0.7])]
GRADS = [
    [np.random.default_rng(i).standard_normal(p.shape) * (i + 1) for p in P0] for i in range(6)
]

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.02, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


def _run(lib, name, kw, steps=GRADS, second_lr=0.03, opt_hook=None):
    make = (
        (lambda a: torch.tensor(a, requires_grad=True))
        if lib is torch
        else (lambda a: tg.tensor(a, requires_grad=True))
    )
    params = [make(p) for p in P0]
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": second_lr}]
    opt = getattr(lib.optim, name)(groups, **kw)
    out = []
    for i, grads in enumerate(steps):
        opt.zero_grad()
        for p, g in zip(params, grads, strict=True):
            p.grad = (torch.tensor if lib is torch else tg.tensor)(g)
        opt.step()
        if opt_hook is not None:
            opt = opt_hook(i, opt, params)
        out.append([np.array(p.detach().numpy()) for p in params])
    return out, opt


def _ids(cases):
    return [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in cases]


@pytest.mark.parametrize("name,kw", CASES, ids=_ids(CASES))
def test_optimizer_steps_agree_with_torch(name, kw):
    ours, opt = _run(tg, name, kw)
    theirs, topt = _run(torch, name, kw)
    for a, b in zip(ours, theirs, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    # the state holds torch's buffers, under torch's names
    tstate = topt.state_dict()["state"]
    state = opt.state_dict()["state"]
    assert sorted(state) == sorted(k for k in tstate if len(tstate[k]))
    for k, entry in state.items():
        assert set(entry) == {n for n, v in tstate[k].items() if v is not None}
        for n, v in entry.items():
            np.testing.assert_allclose(v, np.asarray(tstate[k][n]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kw", CASES[::3], ids=_ids(CASES[::3]))
def test_state_dict_round_trip_continues_identically(name, kw):
    straight, _ = _run(tg, name, kw)

    def reload(i, opt, params):
        if i != 2:
            return opt
        sd = pickle.loads(pickle.dumps(opt.state_dict()))
        fresh_groups = [{"params": [params[0]]}, {"params": [params[1]]}]
        fresh = getattr(tg.optim, name)(fresh_groups, **{**kw, "lr": 123.0})
        fresh.load_state_dict(copy.deepcopy(sd))
        return fresh

    resumed, _ = _run(tg, name, kw, opt_hook=reload)
    for a, b in zip(straight, resumed, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_optimizer_argument_errors():
    p = [tg.tensor([1.0], requires_grad=True)]
    for make, match in [
        (lambda: tg.optim.RMSprop(p, alpha=-0.1), "alpha"),
        (lambda: tg.optim.RMSprop(p, momentum=-1.0), "momentum"),
        (lambda: tg.optim.Adagrad(p, lr_decay=-1.0), "lr_decay"),
        (lambda: tg.optim.AdamW(p, betas=(0.9, 1.5)), "beta"),
        (lambda: tg.optim.Adagrad(p, eps=-1.0), "epsilon"),
    ]:
        with pytest.raises(ValueError, match=match):
            make()
    with pytest.raises(TypeError):
        tg.optim.RMSprop(p, 0.01, 0.99, 1e-8, 0.0, 0.0, False, False)  # capturable: not taken


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("StepLR", dict(step_size=1)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
]


@pytest.mark.parametrize("name,kw", SCHEDULERS, ids=_ids(SCHEDULERS))
def test_lr_schedulers_agree_with_torch(name, kw):
    rates = []
    for lib in (tg, torch):
        params = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
        opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=0.1)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        seen = []
        for _ in range(12):
            seen.append(sched.get_last_lr() + [g["lr"] for g in opt.param_groups])
            opt.step()
            sched.step()
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)


def test_scheduler_state_dict_and_resume():
    p = [tg.tensor([1.0], requires_grad=True)]
    opt = tg.optim.SGD(p, lr=1.0)
    sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    sched.step()
    sd = sched.state_dict()
    assert sd["last_epoch"] == 1 and "optimizer" not in sd
    again = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5, last_epoch=0)
    again.load_state_dict(sd)
    again.step()
    assert again.get_last_lr() == [0.25] and opt.param_groups[0]["lr"] == 0.25
    with pytest.raises(KeyError, match="initial_lr"):
        tg.optim.lr_scheduler.StepLR(tg.optim.SGD(p, lr=1.0), 2, last_epoch=3)
    with pytest.raises(TypeError, match="epoch"):
        sched.step(5)
