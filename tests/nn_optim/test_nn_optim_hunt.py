"""tg.nn and tg.optim against PyTorch (float64) where the other comparison tests do not reach:
schedulers chained on one optimizer, learning rates changed by hand, and resuming."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _schedule(lib, build, hook=None, epochs=14):
    """The rates every scheduler reports and the groups' lrs, epoch by epoch."""
    params = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
    opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=0.1)
    scheds = build(lib.optim.lr_scheduler, opt)
    seen = []
    for epoch in range(epochs):
        seen.append([lr for s in scheds for lr in s.get_last_lr()])
        seen[-1] += [g["lr"] for g in opt.param_groups]
        opt.step()
        if hook is not None:
            hook(epoch, opt)
        for s in scheds:
            if isinstance(s, lib.optim.lr_scheduler.ReduceLROnPlateau):
                s.step(1.0)
            else:
                s.step()
    return seen


CHAINS = {
    "exp+step": lambda L, o: [L.ExponentialLR(o, 0.9), L.StepLR(o, 3, 0.5)],
    "step+multistep": lambda L, o: [L.StepLR(o, 4, 0.5), L.MultiStepLR(o, [2, 5, 5], 0.1)],
    "cosine+exp": lambda L, o: [L.CosineAnnealingLR(o, 6, 0.01), L.ExponentialLR(o, 0.9)],
    "lambda+exp": lambda L, o: [L.LambdaLR(o, lambda e: 1 / (e + 1)), L.ExponentialLR(o, 0.9)],
    "step+plateau": lambda L, o: [L.StepLR(o, 3, 0.5), L.ReduceLROnPlateau(o, patience=1)],
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_chained_schedulers_compose_as_torch(name):
    # each scheduler multiplies the current lr (exp+step at epoch 3: 0.1 * 0.9**3 * 0.5 =
    # 0.03645); a closed form of initial_lr gave the last-stepped scheduler's rate alone (0.05)
    ours = _schedule(tg, CHAINS[name])
    theirs = _schedule(torch, CHAINS[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "build",
    [
        lambda L, o: [L.ExponentialLR(o, 0.9)],
        lambda L, o: [L.StepLR(o, 3, 0.5)],
        lambda L, o: [L.MultiStepLR(o, [3, 7])],
        lambda L, o: [L.CosineAnnealingLR(o, 10, 0.001)],
    ],
)
def test_lr_halved_by_hand_stays_halved_as_in_torch(build):
    def halve(epoch, opt):
        if epoch == 4:
            for g in opt.param_groups:
                g["lr"] *= 0.5

    ours = _schedule(tg, build, halve)
    theirs = _schedule(torch, build, halve)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["ExponentialLR", "StepLR", "CosineAnnealingLR"])
def test_resumed_scheduler_keeps_the_loaded_lr_as_torch(name):
    kw = {"ExponentialLR": {"gamma": 0.5}, "StepLR": {"step_size": 2, "gamma": 0.5}}
    kw = kw.get(name, {"T_max": 6})
    rates = []
    for lib in (tg, torch):
        p = lib.tensor([1.0], requires_grad=True)
        opt = lib.optim.SGD([p], lr=1.0)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        for _ in range(3):
            opt.step()
            sched.step()
        opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
        opt2 = lib.optim.SGD([lib.tensor([1.0], requires_grad=True)], lr=1.0)
        opt2.load_state_dict(opt_sd)
        sched2 = getattr(lib.optim.lr_scheduler, name)(opt2, **kw)
        seen = [opt2.param_groups[0]["lr"]]  # the lr the first resumed epoch trains with
        sched2.load_state_dict(sched_sd)
        for _ in range(4):
            opt2.step()
            sched2.step()
            seen.append(opt2.param_groups[0]["lr"])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)
