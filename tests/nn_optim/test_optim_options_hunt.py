"""Every tg.optim optimizer and scheduler option, over many steps, side by side with PyTorch.

Hunted: silent differences from ``torch.optim`` (float64) in the parameters and in every
per-parameter state buffer, compared after every one of 12-20 steps (rtol 1e-12; schedules
over 40 epochs).  The same deterministic loss is written once against the Tensor API
(``_loss``) and run in both libraries; the parameters have several shapes (a 0-d one
included), some of them get no gradient in some steps (``p.grad = None``) and gradients are
cleared with ``zero_grad(set_to_none=...)`` both ways (a kept zero gradient still steps, and
decays).

Covered: SGD (momentum, dampening, nesterov, weight_decay, maximize), Adam / AdamW (amsgrad,
betas, eps, weight_decay, maximize, decoupled_weight_decay), RMSprop (alpha, eps, centered,
momentum, weight_decay, maximize), Adagrad (lr_decay, initial_accumulator_value, eps,
weight_decay, maximize); parameter groups with different options, ``add_param_group`` mid-run,
hyper-parameters changed in ``param_groups`` between steps, a one-element Tensor lr (changed in
place too, as PyTorch keeps the Tensor), ``state_dict`` / ``load_state_dict`` round trips
mid-run (tapegrad's own and PyTorch's state dict) continuing as PyTorch continues,
``step(closure)``; the schedulers tapegrad has (StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LambdaLR, ReduceLROnPlateau in every mode, threshold mode, cooldown and
min_lr), chained, resumed with ``last_epoch``, round-tripped through ``state_dict``, stepped
before the optimizer (PyTorch's warning); ``named_parameters()`` given as params.  What
tapegrad does not take (``fused=True``, ``capturable=True``, ``differentiable=True``, unknown
keywords, the optimizers and schedulers it lacks) must be refused by name.

The ``test_regression_*`` tests keep what the hunt found (each docstring gives the program and
the wrong value or error it gave).
"""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-12, 1e-14
STEPS = 20
SHAPES = [(3,), (2, 2), (), (4,), (2, 3)]
P0 = [np.random.default_rng(11 + i).standard_normal(s) for i, s in enumerate(SHAPES)]
TARGETS = [np.random.default_rng(50 + i).standard_normal(s) for i, s in enumerate(SHAPES)]
OPTIMIZERS = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad")


# ---- the two libraries -----------------------------------------------------------------------
def _tensor(lib, a, rg=False):
    a = np.array(a, dtype=np.float64)
    if lib is torch:
        return torch.tensor(a, dtype=torch.float64, requires_grad=rg)
    return tg.tensor(a, requires_grad=rg)


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t, dtype=np.float64)


def _params(lib):
    return [_tensor(lib, p, rg=True) for p in P0]


def _loss(lib, ps, t):
    """A smooth loss of the parameters, different in every step ``t`` (the Tensor API of both
    libraries)."""
    total = None
    for i, (p, c) in enumerate(zip(ps, TARGETS, strict=True)):
        w = 0.5 + 0.25 * ((t + i) % 3)
        term = (((p - _tensor(lib, c)) ** 2) * w).sum() + (p * (0.1 * (t % 5) - 0.2)).sin().sum()
        total = term if total is None else total + term
    return total


def _no_grad_at(t, i):
    """Parameter ``i`` gets no gradient in step ``t`` (its .grad set to None)."""
    return (t + 2 * i) % 5 == 3


def _backward(lib, opt, ps, t, skip=_no_grad_at):
    """Step ``t``'s gradients: cleared to None or to zeros (alternating), a backward of the
    loss, then ``p.grad = None`` for the parameters that get none this step."""
    opt.zero_grad(set_to_none=(t % 3 != 1))
    _loss(lib, ps, t).backward()
    for i, p in enumerate(ps):
        if skip(t, i):
            p.grad = None


def _groups(ps, spec):
    """Parameter groups from ``spec``: a list of (indices, overrides)."""
    return [dict({"params": [ps[i] for i in idx]}, **over) for idx, over in spec]


def _state_of(lib, opt, p):
    return opt.state.get(p, {}) if lib is torch else opt.state.get(id(p), {})


def _compare(topt, gopt, tps, gps, what):
    """Parameters and every state buffer (PyTorch's names) agree."""
    for j, (tp, gp) in enumerate(zip(tps, gps, strict=True)):
        np.testing.assert_allclose(
            _np(gp), _np(tp), rtol=RTOL, atol=ATOL, err_msg=f"{what}: parameter {j}"
        )
        ts, gs = _state_of(torch, topt, tp), _state_of(tg, gopt, gp)
        ts = {k: v for k, v in ts.items() if v is not None}
        if not gs and int(ts.get("step", 0)) == 0:  # PyTorch's Adagrad makes it eagerly
            continue
        assert set(gs) == set(ts), f"{what}: state of parameter {j}: {set(gs)} vs {set(ts)}"
        for k, v in ts.items():
            if k == "step":
                assert int(gs[k]) == int(v), f"{what}: step of parameter {j}"
            else:
                np.testing.assert_allclose(
                    _np(gs[k]), _np(v), rtol=RTOL, atol=ATOL, err_msg=f"{what}: {k} of {j}"
                )


def _lrs(opt):
    return [float(g["lr"]) for g in opt.param_groups]


# ---- every option, 30 steps, three groups ----------------------------------------------------
CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.5)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=1.0, weight_decay=0.2)),
    ("SGD", dict(lr=0.05, momentum=0.5, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.99, dampening=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, foreach=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, foreach=False)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.5, 0.6))),
    ("Adam", dict(lr=0.05, betas=(0.0, 0.0))),
    ("Adam", dict(lr=0.05, betas=(0.99, 0.9999), eps=1e-3)),
    ("Adam", dict(lr=0.05, eps=0.0)),
    ("Adam", dict(lr=0.05, weight_decay=0.3)),
    ("Adam", dict(lr=0.05, weight_decay=0.3, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, amsgrad=True, decoupled_weight_decay=True, weight_decay=0.5)),
    ("Adam", dict(lr=0.05, foreach=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.0)),
    ("AdamW", dict(lr=0.05, weight_decay=0.5, amsgrad=True)),
    ("AdamW", dict(lr=0.05, betas=(0.3, 0.95), eps=1e-4, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=2.0, maximize=True, amsgrad=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.5)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.0)),
    ("RMSprop", dict(lr=0.01, eps=1e-3, weight_decay=0.2)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.7, weight_decay=0.05)),
    ("RMSprop", dict(lr=0.01, maximize=True, momentum=0.2)),
    ("RMSprop", dict(lr=0.01, maximize=True, centered=True, alpha=0.8)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.7)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.3, eps=1e-3)),
    ("Adagrad", dict(lr=0.1, maximize=True, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, foreach=True)),
]

# per-group overrides: the 0-d parameter alone with another lr, then two groups with options
GROUP_SPECS = {
    "SGD": [
        ([2], {"lr": 0.02}),
        ([0, 1], {}),
        ([3, 4], {"weight_decay": 0.3, "momentum": 0.5, "nesterov": False, "dampening": 0.2}),
    ],
    "Adam": [([2], {"lr": 0.02}), ([0, 1], {}), ([3, 4], {"betas": (0.7, 0.8), "amsgrad": True})],
    "AdamW": [([2], {"lr": 0.02}), ([0, 1], {}), ([3, 4], {"weight_decay": 0.7})],
    "RMSprop": [([2], {"lr": 0.02}), ([0, 1], {}), ([3, 4], {"centered": True, "alpha": 0.7})],
    "Adagrad": [([2], {"lr": 0.02}), ([0, 1], {}), ([3, 4], {"lr_decay": 0.2, "eps": 1e-5})],
}


def _ids(cases):
    return [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for n, kw in cases]


def _make(lib, name, kw, spec=None, ps=None):
    ps = _params(lib) if ps is None else ps
    params = ps if spec is None else _groups(ps, spec)
    return ps, getattr(lib.optim, name)(params, **kw)


def _train(name, kw, spec=None, steps=STEPS, hook=None, skip=_no_grad_at):
    """Both libraries, step by step; ``hook(lib, t, opt, ps)`` may return a new optimizer."""
    tps, topt = _make(torch, name, kw, spec)
    gps, gopt = _make(tg, name, kw, spec)
    for t in range(steps):
        for lib, ps, opt in ((torch, tps, topt), (tg, gps, gopt)):
            _backward(lib, opt, ps, t, skip)
        topt.step()
        gopt.step()
        _compare(topt, gopt, tps, gps, f"step {t}")
        if hook is not None:
            topt = hook(torch, t, topt, tps) or topt
            gopt = hook(tg, t, gopt, gps) or gopt
            assert _lrs(gopt) == pytest.approx(_lrs(topt), rel=RTOL)
    return (tps, topt), (gps, gopt)


@pytest.mark.parametrize("name, kw", CASES, ids=_ids(CASES))
def test_every_option_one_group(name, kw):
    _train(name, kw)


@pytest.mark.parametrize("name, kw", CASES[::2], ids=_ids(CASES[::2]))
def test_every_option_three_groups(name, kw):
    (_, topt), (_, gopt) = _train(name, kw, GROUP_SPECS[name])
    tsd, gsd = topt.state_dict(), gopt.state_dict()
    for tgroup, ggroup in zip(tsd["param_groups"], gsd["param_groups"], strict=True):
        assert ggroup["params"] == tgroup["params"]
        for k, v in ggroup.items():
            assert k in tgroup, k
            assert v == tgroup[k] or tuple(v) == tuple(tgroup[k]), k


# ---- hyper-parameters edited between steps, groups added mid-run ------------------------------
def _set(t_at, **values):
    def hook(lib, t, opt, ps):
        if t == t_at:
            for g in opt.param_groups:
                g.update(values)

    return hook


def _scale_lr(lib, t, opt, ps):
    for g in opt.param_groups:
        g["lr"] *= 0.7 if t % 2 else 1.3


EDITS = [
    ("SGD", dict(lr=0.05, momentum=0.9), _scale_lr),
    ("SGD", dict(lr=0.05), _set(5, momentum=0.8)),
    ("SGD", dict(lr=0.05, momentum=0.8), _set(5, momentum=0.0)),
    ("SGD", dict(lr=0.05, momentum=0.8), _set(8, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8), _set(4, dampening=0.5, weight_decay=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.8), _set(7, maximize=True)),
    ("Adam", dict(lr=0.05), _scale_lr),
    ("Adam", dict(lr=0.05), _set(6, betas=(0.5, 0.7), eps=1e-4)),
    ("Adam", dict(lr=0.05, amsgrad=True), _set(6, amsgrad=False)),
    ("Adam", dict(lr=0.05), _set(3, weight_decay=0.2, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.2), _set(9, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05), _set(5, weight_decay=0.9)),
    ("RMSprop", dict(lr=0.01), _scale_lr),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True), _set(6, momentum=0.0, alpha=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True), _set(6, centered=False, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1), _scale_lr),
    ("Adagrad", dict(lr=0.1), _set(4, lr_decay=0.3, eps=1e-2)),
    ("Adagrad", dict(lr=0.1), _set(4, initial_accumulator_value=5.0, maximize=True)),
]


@pytest.mark.parametrize(
    "name, kw, hook", EDITS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(EDITS)]
)
def test_param_groups_edited_between_steps(name, kw, hook):
    _train(name, kw, hook=hook)


ADD_LATER = [
    ("SGD", dict(lr=0.05, momentum=0.9), {"lr": 0.01, "momentum": 0.3, "nesterov": True}),
    ("SGD", dict(lr=0.05), {"weight_decay": 0.5, "maximize": True}),
    ("Adam", dict(lr=0.05), {"amsgrad": True, "betas": (0.6, 0.7)}),
    ("Adam", dict(lr=0.05, amsgrad=True), {"lr": 0.2, "weight_decay": 0.1}),
    ("AdamW", dict(lr=0.05), {"weight_decay": 0.0}),
    ("RMSprop", dict(lr=0.01), {"centered": True, "momentum": 0.4}),
    ("RMSprop", dict(lr=0.01, momentum=0.4), {"alpha": 0.6}),
    ("Adagrad", dict(lr=0.1), {"lr_decay": 0.1, "eps": 1e-3}),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2), {}),
]


@pytest.mark.parametrize("at", [0, 7])
@pytest.mark.parametrize(
    "name, kw, extra", ADD_LATER, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(ADD_LATER)]
)
def test_add_param_group_mid_run(name, kw, extra, at):
    def only_first_three_until(t, i):
        return (i >= 3 and t <= at) or _no_grad_at(t, i)

    def hook(lib, t, opt, ps):
        if t == at:
            opt.add_param_group(dict({"params": ps[3:]}, **extra))

    tps, gps = _params(torch), _params(tg)
    topt = getattr(torch.optim, name)(tps[:3], **kw)
    gopt = getattr(tg.optim, name)(gps[:3], **kw)
    for t in range(STEPS):
        for lib, ps, opt in ((torch, tps, topt), (tg, gps, gopt)):
            _backward(lib, opt, ps, t, only_first_three_until)
            if t <= at:  # the parameters not yet given to the optimizer keep no gradient
                for p in ps[3:]:
                    p.grad = None
        topt.step()
        gopt.step()
        _compare(topt, gopt, tps, gps, f"step {t}")
        hook(torch, t, topt, tps)
        hook(tg, t, gopt, gps)
    assert len(gopt.param_groups) == len(topt.param_groups) == 2


# ---- state_dict round trips mid-run ------------------------------------------------------------
def _reload(at, how, name, kw, spec):
    """At step ``at``: a fresh optimizer (other hyper-parameters) over the same parameters loads
    the state dict (``how``: tapegrad's own, pickled, or PyTorch's for tapegrad), as in
    resuming from a checkpoint; PyTorch does the same with its own."""

    def hook(lib, t, opt, ps):
        if t != at:
            return None
        if lib is tg and how == "torch":
            sd = copy.deepcopy(hook.torch_sd)
        else:
            sd = opt.state_dict()
            if lib is torch:
                hook.torch_sd = copy.deepcopy(sd)
            if how == "pickle":
                sd = pickle.loads(pickle.dumps(sd))
        fresh_kw = dict(kw, lr=123.0)
        fresh = getattr(lib.optim, name)(_groups(ps, spec) if spec else ps, **fresh_kw)
        fresh.load_state_dict(sd)
        return fresh

    return hook


ROUND_TRIPS = [c for c in CASES if "foreach" not in c[1]][::3]


@pytest.mark.parametrize("how", ["own", "pickle", "torch"])
@pytest.mark.parametrize("name, kw", ROUND_TRIPS, ids=_ids(ROUND_TRIPS))
def test_state_dict_round_trip_mid_run_continues_as_torch(name, kw, how):
    spec = GROUP_SPECS[name] if how != "own" else None
    _train(name, kw, spec, steps=12, hook=_reload(5, how, name, kw, spec))


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_state_dict_is_a_snapshot_and_loading_copies(name):
    """tapegrad's state dict is a copy (documented: PyTorch's shares its tensors); loading it
    copies too, so two optimizers loaded from one dict never share buffers."""
    ps, opt = _make(tg, name, dict(lr=0.05, momentum=0.5) if name in ("SGD", "RMSprop") else {})
    _backward(tg, opt, ps, 0, skip=lambda t, i: False)
    opt.step()
    sd = opt.state_dict()
    saved = copy.deepcopy(sd)
    opt.step()
    for k, entry in sd["state"].items():
        for n, v in entry.items():
            np.testing.assert_array_equal(np.asarray(v), np.asarray(saved["state"][k][n]))
    a, b = _make(tg, name, {}, ps=ps)[1], _make(tg, name, {}, ps=ps)[1]
    a.load_state_dict(sd)
    b.load_state_dict(sd)
    a.step()
    for p in ps:
        for n, v in a.state[id(p)].items():
            if isinstance(v, np.ndarray):
                assert not np.shares_memory(v, b.state[id(p)][n]), n


# ---- step(closure), zero_grad, foreach --------------------------------------------------------
@pytest.mark.parametrize("name, kw", CASES[::3], ids=_ids(CASES[::3]))
def test_step_with_closure_as_torch(name, kw):
    out = {}
    for lib in (torch, tg):
        ps, opt = _make(lib, name, kw)
        calls = []

        def closure(lib=lib, ps=ps, opt=opt, calls=calls):
            opt.zero_grad()
            loss = _loss(lib, ps, len(calls))
            loss.backward()
            calls.append(float(_np(loss)))
            return loss

        losses = [float(_np(opt.step(closure))) for _ in range(12)]
        assert losses == calls
        out[lib] = (losses, [_np(p) for p in ps])
    np.testing.assert_allclose(out[tg][0], out[torch][0], rtol=RTOL)
    for a, b in zip(out[tg][1], out[torch][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_gradients_accumulate_without_zero_grad_as_torch(name):
    """No zero_grad for three steps (gradients add up), then set_to_none=False (zeros that
    still step: the decay moves the parameters), then set_to_none=True (skipped)."""

    def run(lib):
        ps, opt = _make(lib, name, dict(lr=0.05, weight_decay=0.1))
        for t in range(12):
            if t >= 3:
                opt.zero_grad(set_to_none=t >= 8)
            if t < 6:
                _loss(lib, ps, t).backward()
            opt.step()
        return ps, opt

    tps, topt = run(torch)
    gps, gopt = run(tg)
    _compare(topt, gopt, tps, gps, name)
    assert all(p.grad is None for p in gps)


# ---- a one-element Tensor lr (PyTorch keeps the Tensor: changing it changes the steps) ----------
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_tensor_lr_as_torch(name):
    def hook(lib, t, opt, ps):
        if t == 3:  # in place: PyTorch's group holds this very Tensor
            hook.lr[lib].mul_(0.5)
        if t == 6:  # a new Tensor set by hand
            opt.param_groups[0]["lr"] = _tensor(lib, 0.02)
        if t == 9:  # back to a number
            opt.param_groups[0]["lr"] = 0.04

    hook.lr = {lib: _tensor(lib, 0.05) for lib in (torch, tg)}
    tps, gps = _params(torch), _params(tg)
    topt = getattr(torch.optim, name)(tps, lr=hook.lr[torch])
    gopt = getattr(tg.optim, name)(gps, lr=hook.lr[tg])
    for t in range(12):
        for lib, ps, opt in ((torch, tps, topt), (tg, gps, gopt)):
            _backward(lib, opt, ps, t)
            opt.step()
            hook(lib, t, opt, ps)
        _compare(topt, gopt, tps, gps, f"step {t}")
        assert _lrs(gopt) == pytest.approx(_lrs(topt), rel=1e-7)  # (torch's lr is float32)


# ---- what tapegrad does not take: refused by name ---------------------------------------------
@pytest.mark.parametrize("option", ["fused", "capturable", "differentiable", "foo", "nesterov2"])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_unsupported_options_refused_by_name(name, option):
    if name != "SGD" and option == "nesterov2":
        option = "momentum_decay"
    with pytest.raises(TypeError, match=option):
        getattr(tg.optim, name)(_params(tg), lr=0.1, **{option: True})


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_foreach_changes_no_number(name):
    for foreach in (True, False, None):
        ps, opt = _make(tg, name, dict(lr=0.1, foreach=foreach))
        assert "foreach" not in opt.param_groups[0]


# ---- schedulers ---------------------------------------------------------------------------------
EPOCHS = 40
SCHEDULES = [
    ("StepLR", dict(step_size=1)),
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("StepLR", dict(step_size=7, gamma=1.5)),
    ("StepLR", dict(step_size=4.0, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[0, 1, 2])),
    ("MultiStepLR", dict(milestones=[10, 3, 3, 40], gamma=0.5)),
    ("MultiStepLR", dict(milestones=(5, 60), gamma=2.0)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("ExponentialLR", dict(gamma=1.0)),
    ("ExponentialLR", dict(gamma=0.0)),
    ("CosineAnnealingLR", dict(T_max=1)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01)),
    ("CosineAnnealingLR", dict(T_max=3, eta_min=0.5)),
    ("CosineAnnealingLR", dict(T_max=2.5, eta_min=0.001)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9**e)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (1 + e) if e % 2 else 2.0)),
    ("LambdaLR", dict(lr_lambda=[lambda e: 0.5 ** (e // 4), lambda e: min(1.0, (e + 1) / 5)])),
]
SCHED_IDS = _ids(SCHEDULES)


def _sched_opt(lib, name="SGD"):
    ps = [_tensor(lib, [1.0, -1.0], rg=True), _tensor(lib, 2.0, rg=True)]
    groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.3}]
    return ps, getattr(lib.optim, name)(
        groups, lr=0.1, **({"momentum": 0.5} if name == "SGD" else {})
    )


def _sched_run(lib, build, epochs=EPOCHS, hook=None, opt_name="SGD"):
    """Train ``epochs`` epochs (optimizer step, then scheduler step); the rates every
    scheduler reports and the groups' lrs, each epoch, and the final parameters."""
    ps, opt = _sched_opt(lib, opt_name)
    scheds = build(lib.optim.lr_scheduler, opt)
    seen = []
    for e in range(epochs):
        seen.append([float(lr) for s in scheds for lr in s.get_last_lr()] + _lrs(opt))
        opt.zero_grad()
        sum(((p - 0.5) ** 2).sum() for p in ps).backward()
        opt.step()
        for s in scheds:
            s.step(_metric(e)) if isinstance(
                s, lib.optim.lr_scheduler.ReduceLROnPlateau
            ) else s.step()
        if hook is not None:
            scheds = hook(lib, e, opt, scheds) or scheds
    seen.append([float(lr) for s in scheds for lr in s.get_last_lr()] + _lrs(opt))
    return np.array(seen), [_np(p) for p in ps]


def _metric(e):
    return [3.0, 2.0, 2.0, 2.0, 1.9999, 2.5, 2.5, 1.0, -1.0, -1.0, -1.00001, -0.9][
        e % 12
    ] - e * 1e-3


def _same_schedule(build, **kw):
    ours, ours_p = _sched_run(tg, build, **kw)
    theirs, theirs_p = _sched_run(torch, build, **kw)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=1e-15)
    for a, b in zip(ours_p, theirs_p, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=ATOL)


def _one(name, kw):
    return lambda L, o: [getattr(L, name)(o, **kw)]


@pytest.mark.parametrize("name, kw", SCHEDULES, ids=SCHED_IDS)
def test_scheduler_40_epochs_as_torch(name, kw):
    _same_schedule(_one(name, kw))


@pytest.mark.parametrize("name, kw", SCHEDULES[1::2], ids=SCHED_IDS[1::2])
def test_scheduler_on_adam_with_lr_edited_by_hand(name, kw):
    def hook(lib, e, opt, scheds):
        if e in (6, 17):
            opt.param_groups[1]["lr"] *= 0.25

    _same_schedule(_one(name, kw), hook=hook, opt_name="Adam")


@pytest.mark.parametrize("at", [0, 12])
@pytest.mark.parametrize("name, kw", SCHEDULES, ids=SCHED_IDS)
def test_scheduler_state_dict_round_trip_mid_run(name, kw, at):
    """At epoch ``at`` a new scheduler over the optimizer loads the old one's state dict (a
    pickled copy: PyTorch's keeps its functions out of it, as tapegrad's) and goes on."""

    def hook(lib, e, opt, scheds):
        if e != at:
            return None
        sd = scheds[0].state_dict()
        if name != "LambdaLR":
            sd = pickle.loads(pickle.dumps(sd))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fresh = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        fresh.load_state_dict(sd)
        return [fresh]

    _same_schedule(_one(name, kw), hook=hook)


@pytest.mark.parametrize("resume_at", [0, 4, 11])
@pytest.mark.parametrize("name, kw", SCHEDULES, ids=SCHED_IDS)
def test_scheduler_resumed_with_last_epoch_as_torch(name, kw, resume_at):
    """A checkpoint's optimizer state dict (with initial_lr) loaded into a new optimizer,
    then the scheduler made with last_epoch=the checkpoint's epoch."""
    out = []
    for lib in (tg, torch):
        ps, opt = _sched_opt(lib)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        for _ in range(resume_at + 1):
            opt.step()
            sched.step()
        sd = opt.state_dict()
        ps2, opt2 = _sched_opt(lib)
        opt2.load_state_dict(sd)
        sched2 = getattr(lib.optim.lr_scheduler, name)(opt2, last_epoch=resume_at, **kw)
        seen = [_lrs(opt2) + [float(x) for x in sched2.get_last_lr()]]
        for _ in range(15):
            opt2.step()
            sched2.step()
            seen.append(_lrs(opt2) + [float(x) for x in sched2.get_last_lr()])
        out.append(seen)
    np.testing.assert_allclose(out[0], out[1], rtol=RTOL, atol=1e-15)


CHAINED = {
    "step+exp+cos": lambda L, o: [
        L.StepLR(o, 3, 0.5),
        L.ExponentialLR(o, 0.95),
        L.CosineAnnealingLR(o, 9),
    ],
    "multistep+lambda": lambda L, o: [L.MultiStepLR(o, [4, 9]), L.LambdaLR(o, lambda e: 0.97**e)],
    "plateau+step": lambda L, o: [
        L.ReduceLROnPlateau(o, factor=0.5, patience=1),
        L.StepLR(o, 5, 0.8),
    ],
    "cos+plateau": lambda L, o: [
        L.CosineAnnealingLR(o, 6, 0.001),
        L.ReduceLROnPlateau(o, mode="max", patience=0, cooldown=2, min_lr=0.002),
    ],
}


@pytest.mark.parametrize("name", list(CHAINED))
def test_chained_schedulers_as_torch(name):
    _same_schedule(CHAINED[name])


# ---- ReduceLROnPlateau: every mode, threshold mode, cooldown, min_lr ----------------------------
PLATEAUS = [
    dict(mode=m, threshold_mode=tm, threshold=th, patience=pa, cooldown=cd, min_lr=ml, factor=f)
    for m in ("min", "max")
    for tm in ("rel", "abs")
    for th, pa, cd, ml, f in (
        (1e-4, 0, 0, 0.0, 0.5),
        (0.1, 2, 1, 0.02, 0.3),
        (0.0, 1, 3, [0.05, 0.01], 0.1),
    )
]


@pytest.mark.parametrize("round_trip", [False, True])
@pytest.mark.parametrize("kw", PLATEAUS, ids=[str(i) for i in range(len(PLATEAUS))])
def test_reduce_lr_on_plateau_every_mode_as_torch(kw, round_trip):
    metrics = [_metric(e) for e in range(40)] + [math.nan, math.inf, 0.5, -math.inf, 0.5, 0.5]
    out = []
    for lib in (tg, torch):
        ps, opt = _sched_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        seen = []
        for e, m in enumerate(metrics):
            opt.step()
            sched.step(m if lib is tg else torch.tensor(m, dtype=torch.float64))
            if round_trip and e == 20:
                sd = pickle.loads(pickle.dumps(sched.state_dict()))
                sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
                sched.load_state_dict(sd)
            seen.append(
                [float(x) for x in sched.get_last_lr()]
                + _lrs(opt)
                + [sched.best, sched.num_bad_epochs, sched.cooldown_counter, sched.last_epoch]
            )
        out.append(seen)
    np.testing.assert_allclose(out[0], out[1], rtol=RTOL, atol=1e-15)


@pytest.mark.parametrize("min_lr", [0.001, [0.01, 0.02]])
def test_reduce_lr_on_plateau_after_add_param_group_as_torch(min_lr):
    out = []
    for lib in (tg, torch):
        ps, opt = _sched_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5, min_lr=min_lr)
        seen = []
        for e in range(8):
            if e == 3:
                opt.add_param_group({"params": [_tensor(lib, [3.0], rg=True)], "lr": 0.7})
            opt.step()
            try:
                sched.step(10.0)
            except RuntimeError as err:
                seen.append(type(err).__name__)
                break
            seen.append(_lrs(opt))
        out.append(seen)
    if isinstance(min_lr, float):  # one min_lr serves the groups added later
        for a, b in zip(out[0], out[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=RTOL)
    else:  # one per group given: both raise when a group is added
        assert out[0][-1] == out[1][-1] == "RuntimeError"
        assert len(out[0]) == len(out[1]) == 4


# ---- regressions: one per finding ---------------------------------------------------------------
def test_regression_tensor_lr_changed_in_place_changes_the_steps():
    """lr=tg.tensor(0.1), then lr.fill_(0.5): PyTorch's group holds the Tensor, so the step
    uses 0.5 (p: 1 -> 0.5); tapegrad read the number once and stepped with 0.1 (p -> 0.9)."""
    lr = tg.tensor(0.1)
    p = tg.tensor([1.0], requires_grad=True)
    opt = tg.optim.SGD([p], lr=lr)
    assert opt.param_groups[0]["lr"] is lr
    lr.fill_(0.5)
    p.grad = tg.tensor([1.0])
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.5])
    sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()  # the scheduler fills the same Tensor, as PyTorch's
    assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.25
    assert sched.get_last_lr() == [0.25] and opt.param_groups[0]["initial_lr"] == 0.5


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_regression_tensor_lr_set_by_hand_in_param_groups(name):
    """``opt.param_groups[0]["lr"] = tg.tensor(0.01)`` (PyTorch steps with it) raised numpy's
    'out= is not supported on tapegrad Tensors' from inside the update."""
    ps, opt = _make(tg, name, dict(lr=0.05))
    _, ref = _make(tg, name, dict(lr=0.05))
    qs = ref.param_groups[0]["params"]
    opt.param_groups[0]["lr"] = tg.tensor(0.01)
    ref.param_groups[0]["lr"] = 0.01
    for t in range(3):
        _backward(tg, opt, ps, t)
        _backward(tg, ref, qs, t)
        opt.step()
        ref.step()
    for p, q in zip(ps, qs, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    opt.param_groups[0]["lr"] = tg.tensor([0.01, 0.02])
    with pytest.raises(TypeError, match=f"{name}: lr must be a number or a one-element Tensor"):
        opt.step()


def test_regression_adagrad_group_initial_accumulator_value():
    """PyTorch's Adagrad starts every sum at the constructor's initial_accumulator_value and
    ignores a group's (groups [{"params": [a], "initial_accumulator_value": 5.0}]: torch's
    first step a: 1 -> 0.9, tapegrad's honoured 5.0: 1 -> 0.955); now refused by name, and a
    group added later starts from the constructor's value as in PyTorch."""
    a = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="Adagrad: a parameter group's initial_accumulator"):
        tg.optim.Adagrad([{"params": [a], "initial_accumulator_value": 5.0}], lr=0.1)
    opt = tg.optim.Adagrad([a], lr=0.1, initial_accumulator_value=0.5)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        opt.add_param_group(
            {
                "params": [tg.tensor([1.0], requires_grad=True)],
                "lr": 0.2,
                "initial_accumulator_value": 0.0,
            }
        )
    b = tg.tensor([1.0], requires_grad=True)
    opt.add_param_group({"params": [b], "initial_accumulator_value": 0.5})
    tb = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    topt = torch.optim.Adagrad(
        [torch.tensor([1.0], requires_grad=True)], lr=0.1, initial_accumulator_value=0.5
    )
    topt.add_param_group({"params": [tb]})
    for _ in range(3):
        b.grad, tb.grad = tg.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64)
        opt.step()
        topt.step()
    np.testing.assert_allclose(b.detach().numpy(), tb.detach().numpy(), rtol=RTOL)


@pytest.mark.parametrize(
    "name, kw, option",
    [
        ("Adam", dict(lr=0.1), "amsgrad"),
        ("AdamW", dict(lr=0.1), "amsgrad"),
        ("RMSprop", dict(lr=0.1), "momentum"),
        ("RMSprop", dict(lr=0.1), "centered"),
    ],
)
def test_regression_option_turned_on_mid_run_raises_naming_it(name, kw, option):
    """Turning amsgrad / momentum / centered on after steps without it: PyTorch and tapegrad
    raised a bare KeyError ('max_exp_avg_sq'); now an error naming the option and the fix."""
    ps, opt = _make(tg, name, kw)
    _backward(tg, opt, ps, 0)
    opt.step()
    opt.param_groups[0][option] = 0.5 if option == "momentum" else True
    _backward(tg, opt, ps, 1)
    with pytest.raises(ValueError, match=f"{name}.step: {option} was turned on"):
        opt.step()


@pytest.mark.parametrize("lib", ["torch", "tg"])
def test_regression_scheduler_stepped_before_optimizer_warns(lib):
    """PyTorch warns when the first scheduler.step() comes before any optimizer.step() (the
    first lr of the schedule is skipped); tapegrad said nothing."""
    L = torch if lib == "torch" else tg
    ps, opt = _sched_opt(L)
    sched = L.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    ps, opt = _sched_opt(L)
    sched = L.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        sched.step()

    class Plain(L.optim.Optimizer):  # a user's optimizer: its step counts too
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

        def step(self, closure=None):
            return None

    opt = Plain([_tensor(L, [1.0], rg=True)])
    sched = L.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_regression_fractional_step_size_is_refused():
    """StepLR(opt, step_size=2.5): PyTorch decays at epochs 5, 10, ... (lr 0.1 for 4 epochs);
    tapegrad truncated it to 2 and decayed at 2, 4, ... (0.05 after 1 epoch)."""
    ps, opt = _sched_opt(tg)
    with pytest.raises(ValueError, match="StepLR: step_size must be a positive integer, got 2.5"):
        tg.optim.lr_scheduler.StepLR(opt, step_size=2.5)
    assert tg.optim.lr_scheduler.StepLR(opt, step_size=3.0).step_size == 3


def test_regression_cosine_t_max_zero_is_refused_by_name():
    """CosineAnnealingLR(opt, T_max=0): a bare ZeroDivisionError ('integer modulo by zero')
    from the first step, in PyTorch too; now a ValueError naming T_max."""
    ps, opt = _sched_opt(tg)
    with pytest.raises(ValueError, match="CosineAnnealingLR: T_max must be nonzero"):
        tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=0)


@pytest.mark.parametrize("betas", [(0.9,), (0.9, 0.99, 0.999)])
def test_regression_betas_not_a_pair_refused_by_name(betas):
    """Adam(betas=(0.9,)) raised 'not enough values to unpack' from the first step (PyTorch:
    IndexError 'tuple index out of range'); now a ValueError naming betas when made."""
    with pytest.raises(ValueError, match="Adam: betas must be a pair"):
        tg.optim.Adam(_params(tg), betas=betas)


@pytest.mark.parametrize(
    "where, name",
    [("optim", "Rprop")],
)
def test_what_tapegrad_lacks_is_refused_by_name(where, name):
    mod = tg.optim if where == "optim" else tg.optim.lr_scheduler
    assert hasattr(torch.optim if where == "optim" else torch.optim.lr_scheduler, name)
    with pytest.raises(AttributeError, match=name):
        getattr(mod, name)


def test_regression_named_parameters_as_torch():
    """Adam(model.named_parameters()) (PyTorch keeps the names in "param_names"): tapegrad
    raised "can't optimize ('weight', tensor(...))"."""
    out = {}
    for lib in (torch, tg):
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 2).double()
        model = lin if lib is torch else tg.nn.Linear(3, 2)
        if lib is tg:
            model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in lin.state_dict().items()})
        opt = lib.optim.Adam(model.named_parameters(), lr=0.1)
        for t in range(5):
            opt.zero_grad()
            (model(_tensor(lib, np.arange(6.0).reshape(2, 3) / (t + 1))) ** 2).sum().backward()
            opt.step()
        sd = opt.state_dict()
        out[lib] = ([_np(p) for p in model.parameters()], sd["param_groups"][0]["param_names"])
        with pytest.raises(ValueError, match="with/without names"):
            opt.add_param_group({"params": [_tensor(lib, [1.0], rg=True)]})
    assert out[tg][1] == out[torch][1] == ["weight", "bias"]
    for a, b in zip(out[tg][0], out[torch][0], strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_regression_zero_grad_false_detaches_a_create_graph_gradient():
    """After backward(create_graph=True), zero_grad(set_to_none=False) left the gradient on
    the old graph (requires_grad True, grad_fn IndexPutBackward0, later gradients recorded on
    it); PyTorch detaches it first, then zeroes it (the same Tensor)."""
    out = {}
    for lib in (torch, tg):
        p = _tensor(lib, [1.0, 2.0], rg=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.5)
        (p**3).sum().backward(create_graph=True)
        g = p.grad
        opt.step()
        opt.zero_grad(set_to_none=False)
        assert p.grad is g and not g.requires_grad and g.grad_fn is None
        (p**2).sum().backward()
        opt.step()
        assert not p.grad.requires_grad
        out[lib] = (_np(p), _np(p.grad))
    for a, b in zip(out[tg], out[torch], strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL)


# was zeroed on its graph (requires_grad True, grad_fn IndexPutBackward0)
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_module_zero_grad_false_detaches_a_create_graph_gradient():
    m = tg.nn.Linear(2, 1)
    (m(tg.tensor([[1.0, 2.0]])) ** 2).sum().backward(create_graph=True)
    m.zero_grad(set_to_none=False)
    assert not m.weight.grad.requires_grad and m.weight.grad.grad_fn is None


@pytest.mark.parametrize("metric", [tg.tensor([1.0, 2.0]), "abc", None])
def test_regression_plateau_metric_errors_name_the_step(metric):
    """ReduceLROnPlateau.step(None) raised a bare "float() argument must be a string or a real
    number" (PyTorch too); now it names the step and what it takes."""
    ps, opt = _sched_opt(tg)
    sched = tg.optim.lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises((TypeError, ValueError), match="ReduceLROnPlateau.step: the metric"):
        sched.step(metric)


def test_regression_a_parameter_twice_in_one_group():
    """SGD([p, p]): PyTorch warns and steps p twice; tapegrad refused, saying the parameter
    was in 'more than one parameter group'; now the message says what happened."""
    p = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="appears twice in one parameter group"):
        tg.optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        tg.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
