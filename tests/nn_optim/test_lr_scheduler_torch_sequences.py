"""Every tg.optim.lr_scheduler scheduler against PyTorch's, as sequences.

For each scheduler, a few configurations (resumed with ``last_epoch`` among them, chained and
sequential combinations, ReduceLROnPlateau's modes, threshold modes, cooldown, min_lr and eps,
CyclicLR's modes with and without momentum cycling, OneCycleLR's two anneal strategies and
three_phase) run 30 steps on two parameter groups in both libraries: ``get_last_lr()``, the
groups' lrs and their momenta (SGD's ``momentum`` or Adam's ``betas``) must agree to rtol
1e-12 before every step.  Half way through, both runs are rebuilt from state dicts (a fresh
optimizer and scheduler loading them): tapegrad from its own pickled state dict, or from
PyTorch's scheduler state dict.  The deprecated ``step(epoch)`` is refused by name but for
CosineAnnealingWarmRestarts, whose fractional epochs are compared too.

Two places where tapegrad gives the schedule's number and PyTorch 2.13 does not are kept as
comparisons with PyTorch's own closed forms: CosineAnnealingWarmRestarts made with a
``last_epoch`` past its second restart, and CyclicLR made after another scheduler of the
optimizer (whose first lr in PyTorch is the other one's ``initial_lr``, not ``base_lr``).
"""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

STEPS, HALF = 30, 13
RTOL, ATOL = 1e-12, 1e-15


def _optimizer(lib, kind="SGD", lr=None, resumed=False):
    """Two parameter groups (lrs 0.1 and 0.3); ``resumed``: the groups carry the
    ``initial_lr`` a checkpoint would (0.2 and 0.6) at half of it."""
    ps = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
    extra = {"momentum": 0.9} if kind == "SGD" else {}
    groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.3}]
    opt = getattr(lib.optim, kind)(groups, lr=0.1 if lr is None else lr(lib), **extra)
    if resumed:
        for g in opt.param_groups:
            g["initial_lr"] = 2 * float(g["lr"])
    return opt


def _momenta(opt):
    out = []
    for g in opt.param_groups:
        if "betas" in g:
            out += [float(b) for b in g["betas"]]
        elif "momentum" in g:
            out.append(float(g["momentum"]))
    return out


def _snapshot(sched, opt):
    return (
        [float(x) for x in sched.get_last_lr()]
        + [float(g["lr"]) for g in opt.param_groups]
        + _momenta(opt)
    )


def _quiet(build, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(*args)


METRICS = [5.0, 4.0, 4.0, 3.9999, 4.1, 4.0, 2.0, 2.0, 2.0, 1.9999, 2.1, 2.1, 2.1, 2.1]
METRICS += [-1.0, -1.0, -1.05, -1.2, -1.2, -1.2, math.inf, math.nan, 0.5, 0.5, 0.5, 0.5]
METRICS += [0.4999, 0.5, 0.5, 0.5, 0.5]


def _run(lib, case, source):
    """The snapshots before each of STEPS steps; at HALF the optimizer and scheduler are
    rebuilt from state dicts (``source``: "own" or, for tapegrad, PyTorch's), and the
    scheduler's state dict taken at HALF (for the other library to load)."""
    build, kind, lr, resumed, plateau = case
    opt = _optimizer(lib, kind, lr, resumed)
    sched = _quiet(build, lib.optim.lr_scheduler, opt)
    seen, saved = [], None
    for k in range(STEPS):
        if k == HALF:
            saved = copy.deepcopy(sched.state_dict())
            opt_state = (
                opt.state_dict() if lib is torch else pickle.loads(pickle.dumps(opt.state_dict()))
            )
            sched_state = source if lib is tg and not isinstance(source, str) else saved
            if lib is tg:
                sched_state = pickle.loads(pickle.dumps(sched_state))
            opt = _optimizer(lib, kind, lr, resumed)
            sched = _quiet(build, lib.optim.lr_scheduler, opt)
            opt.load_state_dict(opt_state)
            sched.load_state_dict(sched_state)
        seen.append(_snapshot(sched, opt))
        opt.step()
        if plateau:
            sched.step(METRICS[k])
        else:
            sched.step()
    return seen, saved


def _one(name, **kw):
    return lambda S, o: getattr(S, name)(o, **kw)


def _tensor_lr(lib):
    return lib.tensor(0.1, dtype=lib.float64)


def C(build, kind="SGD", lr=None, resumed=False, plateau=False):  # noqa: N802
    return (build, kind, lr, resumed, plateau)


CASES = {
    "step": C(_one("StepLR", step_size=3, gamma=0.5)),
    "step-1": C(_one("StepLR", step_size=1, gamma=0.9), "Adam"),
    "step-resumed": C(_one("StepLR", step_size=4, gamma=0.7, last_epoch=5), resumed=True),
    "multistep": C(_one("MultiStepLR", milestones=[3, 7, 7, 20], gamma=0.5)),
    "multistep-0": C(_one("MultiStepLR", milestones=[0, 5])),
    "multistep-resumed": C(_one("MultiStepLR", milestones=[7, 12], last_epoch=6), resumed=True),
    "exp": C(_one("ExponentialLR", gamma=0.9)),
    "exp-tensor-lr": C(_one("ExponentialLR", gamma=0.8), lr=_tensor_lr),
    "exp-resumed": C(_one("ExponentialLR", gamma=0.95, last_epoch=3), resumed=True),
    "cos": C(_one("CosineAnnealingLR", T_max=7, eta_min=0.01)),
    "cos-troughs": C(_one("CosineAnnealingLR", T_max=3), "Adam"),
    "cos-resumed": C(_one("CosineAnnealingLR", T_max=10, last_epoch=4), resumed=True),
    "lambda": C(_one("LambdaLR", lr_lambda=lambda e: 0.9**e)),
    "lambda-per-group": C(
        _one("LambdaLR", lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.5 ** (e // 4)])
    ),
    "lambda-resumed": C(_one("LambdaLR", lr_lambda=lambda e: 0.97**e, last_epoch=8), resumed=True),
    "multiplicative": C(_one("MultiplicativeLR", lr_lambda=lambda e: 0.9 if e % 3 else 1.1)),
    "multiplicative-per-group": C(
        _one("MultiplicativeLR", lr_lambda=[lambda e: 0.95, lambda e: 1.0 / (1.0 + 0.1 * e)])
    ),
    "multiplicative-resumed": C(
        _one("MultiplicativeLR", lr_lambda=lambda e: 0.97, last_epoch=5), resumed=True
    ),
    "const": C(_one("ConstantLR", factor=0.5, total_iters=4)),
    "const-default": C(_one("ConstantLR"), "Adam"),
    "const-resumed": C(_one("ConstantLR", factor=0.25, total_iters=6, last_epoch=2), resumed=True),
    "linear": C(_one("LinearLR", start_factor=0.1, end_factor=0.7, total_iters=7)),
    "linear-down": C(_one("LinearLR", start_factor=1.0, end_factor=0.0, total_iters=10), "Adam"),
    "linear-tensor-lr": C(_one("LinearLR", start_factor=0.5, total_iters=4), lr=_tensor_lr),
    "linear-resumed": C(
        _one("LinearLR", start_factor=0.2, total_iters=9, last_epoch=3), resumed=True
    ),
    "poly": C(_one("PolynomialLR", total_iters=12, power=2.5)),
    "poly-sqrt": C(_one("PolynomialLR", total_iters=20, power=0.5), "Adam"),
    "poly-resumed": C(_one("PolynomialLR", total_iters=25, power=1.5, last_epoch=5), resumed=True),
    "warm-restarts": C(_one("CosineAnnealingWarmRestarts", T_0=5)),
    "warm-restarts-mult": C(_one("CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.01)),
    "warm-restarts-resumed": C(
        _one("CosineAnnealingWarmRestarts", T_0=4, T_mult=2, last_epoch=1), resumed=True
    ),
    "cyclic": C(_one("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4)),
    "cyclic-tri2-betas": C(
        _one(
            "CyclicLR",
            base_lr=[0.01, 0.02],
            max_lr=[0.1, 0.5],
            step_size_up=3,
            step_size_down=5,
            mode="triangular2",
            base_momentum=[0.7, 0.8],
            max_momentum=0.95,
        ),
        "Adam",
    ),
    "cyclic-exp-range": C(
        _one("CyclicLR", base_lr=0.01, max_lr=0.2, step_size_up=2, mode="exp_range", gamma=0.9)
    ),
    "cyclic-no-momentum": C(
        _one("CyclicLR", base_lr=0.01, max_lr=0.2, step_size_up=3, cycle_momentum=False),
        "Adagrad",
    ),
    "cyclic-scale-fn": C(
        _one(
            "CyclicLR",
            base_lr=0.01,
            max_lr=0.2,
            step_size_up=3,
            scale_fn=lambda x: 0.8**x,
            scale_mode="iterations",
        )
    ),
    "one-cycle-cos": C(_one("OneCycleLR", max_lr=1.0, total_steps=31)),
    "one-cycle-linear-betas": C(
        _one(
            "OneCycleLR",
            max_lr=[1.0, 0.5],
            epochs=4,
            steps_per_epoch=8,
            anneal_strategy="linear",
            pct_start=0.25,
        ),
        "Adam",
    ),
    "one-cycle-three-phase": C(
        _one(
            "OneCycleLR",
            max_lr=0.3,
            total_steps=40,
            three_phase=True,
            div_factor=10.0,
            final_div_factor=100.0,
            base_momentum=[0.8, 0.7],
        )
    ),
    "one-cycle-three-phase-linear": C(
        _one(
            "OneCycleLR",
            max_lr=0.3,
            total_steps=35,
            three_phase=True,
            anneal_strategy="linear",
            cycle_momentum=False,
        ),
        "Adagrad",
    ),
    "plateau": C(_one("ReduceLROnPlateau", patience=1, factor=0.5), plateau=True),
    "plateau-max-abs-cooldown": C(
        _one(
            "ReduceLROnPlateau",
            mode="max",
            patience=0,
            threshold=0.05,
            threshold_mode="abs",
            cooldown=2,
        ),
        plateau=True,
    ),
    "plateau-min-lrs": C(
        _one("ReduceLROnPlateau", patience=0, factor=0.3, min_lr=[0.02, 0.05], threshold=0.0),
        plateau=True,
    ),
    "plateau-eps": C(
        _one("ReduceLROnPlateau", patience=0, factor=0.5, eps=0.02, threshold=0.1), plateau=True
    ),
    "sequential-linear-exp": C(
        lambda S, o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=0.2, total_iters=4), S.ExponentialLR(o, 0.9)], [5]
        )
    ),
    "sequential-const-cos-step": C(
        lambda S, o: S.SequentialLR(
            o,
            [
                S.ConstantLR(o, factor=0.5, total_iters=4),
                S.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
                S.StepLR(o, step_size=3, gamma=0.5),
            ],
            [3, 12],
        )
    ),
    "sequential-multiplicative-multistep-poly": C(
        lambda S, o: S.SequentialLR(
            o,
            [
                S.MultiplicativeLR(o, lambda e: 0.9),
                S.MultiStepLR(o, milestones=[0, 2, 5], gamma=0.5),
                S.PolynomialLR(o, total_iters=8, power=2.0),
            ],
            [4, 15],
        )
    ),
    "sequential-warm-restarts-cyclic": C(
        lambda S, o: S.SequentialLR(
            o,
            [
                S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2),
                S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, cycle_momentum=False),
            ],
            [9],
        )
    ),
    "chained-const-exp": C(
        lambda S, o: S.ChainedScheduler(
            [S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, 0.9)]
        )
    ),
    "chained-linear-poly-step": C(
        lambda S, o: S.ChainedScheduler(
            [
                S.LinearLR(o, start_factor=0.3, total_iters=6),
                S.PolynomialLR(o, total_iters=20, power=1.5),
                S.StepLR(o, step_size=4, gamma=0.7),
            ]
        ),
        "Adam",
    ),
    "chained-sequential-cos": C(
        lambda S, o: S.ChainedScheduler(
            [
                S.SequentialLR(
                    o,
                    [S.LinearLR(o, start_factor=0.5, total_iters=3), S.ExponentialLR(o, 0.9)],
                    [4],
                ),
                S.CosineAnnealingLR(o, T_max=8),
            ]
        )
    ),
}
TENSOR_LR = {"exp-tensor-lr", "linear-tensor-lr"}


@pytest.mark.parametrize("source", ["own", "torch"])
@pytest.mark.parametrize("name", list(CASES))
def test_sequence_and_state_dict_round_trip_as_torch(name, source):
    if source == "torch" and name in TENSOR_LR:
        pytest.skip("PyTorch's state dict holds Tensors of its own for a Tensor lr")
    case = CASES[name]
    theirs, saved = _run(torch, case, "own")
    ours, _ = _run(tg, case, "own" if source == "own" else saved)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{name}: step {k}")


def test_plateau_state_as_torch():
    """best, num_bad_epochs, cooldown_counter and last_epoch step by step."""
    out = []
    for lib in (tg, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="max", patience=1, cooldown=1, threshold=0.1, min_lr=0.01
        )
        seen = []
        for m in METRICS:
            sched.step(-m)
            seen.append(
                [sched.best, sched.num_bad_epochs, sched.cooldown_counter, sched.last_epoch]
            )
        out.append(seen)
    np.testing.assert_allclose(out[0], out[1], rtol=RTOL)


def test_warm_restarts_fractional_epochs_as_torch():
    epochs = [0.0, 0.5, 1.25, 2.0, 3.99, 4.0, 7.5, 12.0, 13.2, 2.5, None, None, 29.0, 45.0, None]
    out = []
    for lib in (tg, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
        seen = []
        for e in epochs:
            opt.step()
            sched.step(e)
            seen.append(_snapshot(sched, opt) + [sched.last_epoch, sched.T_cur, sched.T_i])
        out.append(seen)
    np.testing.assert_allclose(out[0], out[1], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("last_epoch", [6, 9, 20])
def test_warm_restarts_resumed_past_a_restart_follows_the_schedule(last_epoch):
    """Made with last_epoch=k, tapegrad's goes on as the schedule at epochs k+1, k+2, ...:
    PyTorch's own step(epoch) there.  (PyTorch's own last_epoch resume takes T_cur =
    (k + 1) mod T_0 in a period of T_0 * T_mult: for T_0=3, T_mult=2, k=6, T_cur 1 of 6
    (lr 0.0933 of 0.1) where the schedule is at T_cur 4 of 6 (0.025).)"""
    opt = _optimizer(tg, resumed=True)
    ours = tg.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, T_0=3, T_mult=2, last_epoch=last_epoch
    )
    topt = _optimizer(torch, resumed=True)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=2)
    for e in range(last_epoch + 1, last_epoch + 12):
        topt.step()
        theirs.step(e)
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=RTOL)
        assert (ours.T_cur, ours.T_i, ours.last_epoch) == (theirs.T_cur, theirs.T_i, e)
        opt.step()
        ours.step()


def test_cyclic_made_after_another_scheduler_starts_at_base_lr():
    """PyTorch's first lr here is the StepLR's initial_lr (0.1), its next ones are from
    base_lr; tapegrad's is base_lr from the first step, as a CyclicLR made alone."""
    opt = _optimizer(tg)
    tg.optim.lr_scheduler.StepLR(opt, step_size=2)
    ours = tg.optim.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.2, step_size_up=3)
    topt = _optimizer(torch)
    theirs = torch.optim.lr_scheduler.CyclicLR(topt, base_lr=0.01, max_lr=0.2, step_size_up=3)
    for _ in range(10):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=RTOL)
        np.testing.assert_allclose(_momenta(opt), _momenta(topt), rtol=RTOL)
        opt.step()
        ours.step()
        topt.step()
        theirs.step()


@pytest.mark.parametrize(
    "name, kw",
    [
        ("StepLR", dict(step_size=2)),
        ("LinearLR", dict()),
        ("OneCycleLR", dict(max_lr=1.0, total_steps=10)),
    ],
)
def test_step_with_an_epoch_is_refused_by_name(name, kw):
    opt = _optimizer(tg)
    sched = getattr(tg.optim.lr_scheduler, name)(opt, **kw)
    opt.step()
    with pytest.raises(TypeError, match=f"{name}.step: the epoch argument"):
        sched.step(3)


def test_get_lr_outside_a_step_warns_as_torch():
    for lib in (tg, torch):
        sched = lib.optim.lr_scheduler.StepLR(_optimizer(lib), step_size=2)
        with pytest.warns(UserWarning, match="get_last_lr"):
            lrs = sched.get_lr()
        np.testing.assert_allclose([float(x) for x in lrs], [0.1, 0.3], rtol=RTOL)


@pytest.mark.parametrize(
    "name, kw",
    [
        ("StepLR", dict(step_size=3, gamma=0.5)),
        ("MultiStepLR", dict(milestones=[2, 2, 5])),
        ("ExponentialLR", dict(gamma=0.8)),
        ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
        ("ConstantLR", dict(factor=0.5, total_iters=3)),
        ("LinearLR", dict(start_factor=0.25, total_iters=4)),
        ("PolynomialLR", dict(total_iters=6, power=2.0)),
    ],
)
def test_closed_forms_as_torch(name, kw):
    """_get_closed_form_lr() at every epoch agrees with PyTorch's and with the recurrence."""
    out = []
    for lib in (tg, torch):
        opt = _optimizer(lib)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        seen = []
        for _ in range(12):
            seen.append([float(x) for x in sched._get_closed_form_lr()] + _snapshot(sched, opt))
            opt.step()
            sched.step()
        out.append(seen)
    np.testing.assert_allclose(out[0], out[1], rtol=RTOL, atol=ATOL)
    closed = np.array(out[0])[:, :2]
    np.testing.assert_allclose(closed, np.array(out[0])[:, 2:4], rtol=1e-12, atol=ATOL)
