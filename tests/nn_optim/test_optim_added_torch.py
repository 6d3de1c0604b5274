"""The optimizers and learning-rate schedulers added after the first set, against PyTorch's.

Hunted: Adamax, NAdam (momentum_decay, decoupled_weight_decay), RAdam (both of its branches,
decoupled_weight_decay), Adadelta and ASGD (averaging on) give PyTorch's parameters after every
step of 8, on two parameter groups, with maximize and weight decay; their state holds PyTorch's
buffers under PyTorch's names; a state dict round trip (tapegrad's, pickled, and PyTorch's
own) continues identically; a training loop with backward and a closure on a quadratic
matches; bad hyper-parameters raise PyTorch's ValueErrors.  The schedulers ConstantLR,
LinearLR, PolynomialLR, CosineAnnealingWarmRestarts (with fractional epochs), CyclicLR (the
three modes, a custom scale_fn, momentum or beta1 cycling), OneCycleLR (cos / linear,
three_phase, momentum or betas), SequentialLR and ChainedScheduler give PyTorch's lr (and
momentum) sequences over 30 steps on two groups, resume from their state dicts, and raise on
bad arguments.  PyTorch runs in float64 with float64 as its default dtype (its NAdam and ASGD
keep scalar state in the default dtype).
"""

import contextlib
import copy
import math
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402

P0 = [np.array([[0.5, -1.0, 2.0], [0.25, 0.1, -3.0]]), np.array([0.3, -0.7])]
GRADS = [
    [np.random.default_rng(10 + i).standard_normal(p.shape) * (i + 1) for p in P0] for i in range(8)
]


@contextlib.contextmanager
def _torch_float64():
    """PyTorch with float64 as its default dtype (the scalar state of its NAdam and ASGD
    is kept in the default dtype)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


OPTIMIZERS = [
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-4, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, betas=(0.3, 0.5), maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.05, betas=(0.8, 0.9), momentum_decay=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True, maximize=True)),
    ("NAdam", dict(lr=0.05, betas=(0.4, 0.95))),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),  # rho_t > 5 from step 6: both branches
    ("RAdam", dict(lr=0.05, betas=(0.7, 0.9), weight_decay=0.1, eps=1e-3)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.2, decoupled_weight_decay=True)),
    ("RAdam", dict(maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.6, eps=1e-3, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, rho=0.3, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2.0, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, lambd=0.01, t0=0.0, maximize=True)),
]


def _ids(cases):
    return [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in cases]


def _run(lib, name, kw, grads=GRADS, hook=None):
    """Parameters after every step of optimizer ``name`` on two groups (the second with its
    own lr) given the gradients ``grads``; ``hook(i, opt, params)`` may swap the optimizer."""
    params = [lib.tensor(p.copy(), requires_grad=True) for p in P0]
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.03}]
    opt = getattr(lib.optim, name)(groups, **kw)
    out = []
    for i, gs in enumerate(grads):
        opt.zero_grad()
        for p, g in zip(params, gs, strict=True):
            p.grad = lib.tensor(g)
        opt.step()
        if hook is not None:
            opt = hook(i, opt, params)
        out.append([np.array(p.detach().numpy()) for p in params])
    return out, opt


@pytest.fixture(scope="module")
def torch_runs():
    with _torch_float64():
        return {i: _run(torch, n, kw) for i, (n, kw) in enumerate(OPTIMIZERS)}


def _close(ours, theirs, rtol=1e-12):
    for a, b in zip(ours, theirs, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-14)


@pytest.mark.parametrize("case", range(len(OPTIMIZERS)), ids=_ids(OPTIMIZERS))
def test_optimizer_steps_and_state_agree_with_torch(case, torch_runs):
    name, kw = OPTIMIZERS[case]
    ours, opt = _run(tg, name, kw)
    theirs, topt = torch_runs[case]
    _close(ours, theirs)
    tsd, sd = topt.state_dict(), opt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for k, entry in sd["state"].items():
        assert set(entry) == set(tsd["state"][k])
        for n, v in entry.items():
            np.testing.assert_allclose(v, np.asarray(tsd["state"][k][n]), rtol=1e-12, atol=1e-14)
    # the hyper-parameters of each group, under PyTorch's names and with its defaults
    for group, tgroup in zip(sd["param_groups"], tsd["param_groups"], strict=True):
        for k, v in group.items():
            assert tgroup[k] == v, k
        assert set(tgroup) - set(group) <= {"foreach", "capturable", "differentiable"}


@pytest.mark.parametrize("case", range(0, len(OPTIMIZERS), 2), ids=_ids(OPTIMIZERS[::2]))
def test_state_dict_round_trip_continues_identically(case, torch_runs):
    name, kw = OPTIMIZERS[case]
    straight, _ = _run(tg, name, kw)

    def reload(i, opt, params):  # a fresh optimizer (another lr) loading a pickled state
        if i != 3:
            return opt
        sd = pickle.loads(pickle.dumps(opt.state_dict()))
        groups = [{"params": [params[0]]}, {"params": [params[1]]}]
        fresh = getattr(tg.optim, name)(groups, **{**kw, "lr": 123.0})
        fresh.load_state_dict(copy.deepcopy(sd))
        return fresh

    resumed, _ = _run(tg, name, kw, hook=reload)
    _close(straight, resumed, rtol=0)
    # PyTorch's state dict after 4 steps, loaded into tapegrad, continues as PyTorch does
    with _torch_float64():
        _, topt = _run(torch, name, kw, grads=GRADS[:4])
        tsd = copy.deepcopy(topt.state_dict())

    def load_torch(i, opt, params):
        if i == 3:
            opt.load_state_dict(tsd)
        return opt

    ours, _ = _run(tg, name, kw, hook=load_torch)
    _close(ours[4:], torch_runs[case][0][4:])


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adadelta", "ASGD"])
def test_training_with_backward_and_closure_matches_torch(name):
    """Six steps on a small quadratic, gradients by backward, one step through a closure."""
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    runs = []
    for lib in (tg, torch):
        with _torch_float64() if lib is torch else contextlib.nullcontext():
            w = lib.tensor([1.0, -1.5], requires_grad=True)
            opt = getattr(lib.optim, name)([w], lr=0.1)
            A = lib.tensor(a)
            seen = []

            def closure(w=w, opt=opt, A=A):
                opt.zero_grad()
                loss = (w * (A @ w)).sum() + w.sum()
                loss.backward()
                return loss

            for i in range(6):
                if i == 5:
                    seen.append(float(opt.step(closure)))
                else:
                    closure()
                    opt.step()
                seen.extend(w.detach().numpy().tolist())
            runs.append(seen)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


def _p(lib):
    return [lib.tensor([1.0], requires_grad=True)]


BAD_OPTIMIZERS = [
    ("Adamax", dict(lr=-0.1)),
    ("Adamax", dict(eps=-1.0)),
    ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))),
    ("Adamax", dict(weight_decay=-1.0)),
    ("NAdam", dict(momentum_decay=-0.1)),
    ("NAdam", dict(betas=(0.9, 1.0))),
    ("NAdam", dict(weight_decay=-0.5)),
    ("RAdam", dict(lr=-1.0)),
    ("RAdam", dict(betas=(-0.5, 0.9))),
    ("RAdam", dict(eps=-1e-8)),
    ("Adadelta", dict(rho=1.5)),
    ("Adadelta", dict(rho=-0.1)),
    ("Adadelta", dict(lr=-1.0)),
    ("Adadelta", dict(eps=-1.0)),
    ("ASGD", dict(lr=-0.1)),
    ("ASGD", dict(weight_decay=-0.1)),
]


@pytest.mark.parametrize("name,kw", BAD_OPTIMIZERS, ids=_ids(BAD_OPTIMIZERS))
def test_bad_hyper_parameters_raise_as_torch(name, kw):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)(_p(torch), **kw)
    with pytest.raises(ValueError) as ours:
        getattr(tg.optim, name)(_p(tg), **kw)
    assert str(ours.value) == str(theirs.value)


def test_asgd_takes_what_torch_takes():
    """PyTorch's ASGD checks only lr and weight_decay (a negative alpha, its eta decay's
    power, is taken), and its maximize may be given by position."""
    for lib in (tg, torch):
        opt = lib.optim.ASGD(_p(lib), 0.01, 1e-4, -0.5, 1e6, 0.0, None, True)
        assert opt.param_groups[0]["maximize"] is True
        assert opt.param_groups[0]["alpha"] == -0.5


def test_capturable_and_differentiable_are_not_taken():
    for name in ("Adamax", "NAdam", "RAdam", "Adadelta", "ASGD"):
        for flag in ("capturable", "differentiable", "fused"):
            with pytest.raises(TypeError):
                getattr(tg.optim, name)(_p(tg), **{flag: True})


# ---- schedulers ---------------------------------------------------------------------------

OPTS = {  # the optimizers the schedulers run on: momentum-like entries to cycle
    "SGD": dict(lr=0.1, momentum=0.9),
    "Adam": dict(lr=0.1),
    "NAdam": dict(lr=0.1),
    "RMSprop": dict(lr=0.1),
    "Adagrad": dict(lr=0.1),
}


def _opt(lib, name="SGD"):
    params = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.3}]
    return getattr(lib.optim, name)(groups, **OPTS[name])


def _momenta(opt):
    out = []
    for g in opt.param_groups:
        if "betas" in g:
            out.append(float(g["betas"][0]))
        elif "momentum" in g:
            out.append(float(g["momentum"]))
    return out


S = "lr_scheduler"
SCHEDULERS = [  # (name, keywords, optimizer): each makes its schedulers from (lib, opt)
    ("ConstantLR", dict(), "SGD"),
    ("ConstantLR", dict(factor=0.5, total_iters=3), "SGD"),
    ("ConstantLR", dict(factor=0.0, total_iters=50), "SGD"),
    ("LinearLR", dict(), "SGD"),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.7, total_iters=7), "SGD"),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.0, total_iters=10), "Adam"),
    ("PolynomialLR", dict(), "SGD"),
    ("PolynomialLR", dict(total_iters=12, power=2.5), "SGD"),
    ("PolynomialLR", dict(total_iters=20, power=0.5), "Adam"),
    ("CosineAnnealingWarmRestarts", dict(T_0=5), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=1, T_mult=3), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4), "SGD"),
    (
        "CyclicLR",
        dict(
            base_lr=[0.01, 0.02],
            max_lr=[0.1, 0.5],
            step_size_up=3,
            step_size_down=5,
            mode="triangular2",
        ),
        "SGD",
    ),  # fmt: skip
    (
        "CyclicLR",
        dict(
            base_lr=0.01,
            max_lr=0.2,
            step_size_up=2,
            mode="exp_range",
            gamma=0.9,
            base_momentum=0.7,
            max_momentum=0.95,
        ),
        "SGD",
    ),  # fmt: skip
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=4, step_size_down=0), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=3, mode="triangular2"), "Adam"),
    (
        "CyclicLR",
        dict(base_lr=0.01, max_lr=0.2, step_size_up=3, cycle_momentum=False),
        "Adagrad",
    ),  # fmt: skip
    (
        "CyclicLR",
        dict(
            base_lr=0.01,
            max_lr=0.2,
            step_size_up=3,
            scale_fn=lambda x: 0.8**x,
            scale_mode="iterations",
        ),
        "RMSprop",
    ),  # fmt: skip
    (
        "CyclicLR",
        dict(base_lr=0.01, max_lr=0.2, step_size_up=3, scale_fn=lambda x: 1 / x),
        "SGD",
    ),  # fmt: skip
    ("OneCycleLR", dict(max_lr=1.0, total_steps=31), "SGD"),
    (
        "OneCycleLR",
        dict(
            max_lr=[1.0, 0.5],
            epochs=3,
            steps_per_epoch=11,
            anneal_strategy="linear",
            pct_start=0.25,
        ),
        "SGD",
    ),  # fmt: skip
    (
        "OneCycleLR",
        dict(
            max_lr=0.3,
            total_steps=40,
            three_phase=True,
            div_factor=10.0,
            final_div_factor=100.0,
            base_momentum=[0.8, 0.7],
        ),
        "Adam",
    ),  # fmt: skip
    (
        "OneCycleLR",
        dict(max_lr=0.3, total_steps=35, three_phase=True, anneal_strategy="linear"),
        "NAdam",
    ),  # fmt: skip
    ("OneCycleLR", dict(max_lr=0.3, total_steps=31, cycle_momentum=False), "Adagrad"),
    ("SequentialLR", "linear-exp", "SGD"),
    ("SequentialLR", "const-cos-step", "SGD"),
    ("SequentialLR", "lambda-multistep-poly", "SGD"),
    ("SequentialLR", "linear-warm-restarts", "SGD"),
    ("SequentialLR", "linear-cyclic", "SGD"),
    ("ChainedScheduler", "const-exp", "SGD"),
    ("ChainedScheduler", "linear-poly-step", "SGD"),
]


def _make(lib, opt, name, kw):
    m = lib.optim.lr_scheduler
    if name == "SequentialLR":
        parts = {
            "linear-exp": (
                [m.LinearLR(opt, start_factor=0.2, total_iters=4), m.ExponentialLR(opt, 0.9)],
                [5],
            ),
            "const-cos-step": (
                [
                    m.ConstantLR(opt, factor=0.5, total_iters=4),
                    m.CosineAnnealingLR(opt, T_max=6, eta_min=0.001),
                    m.StepLR(opt, step_size=3, gamma=0.5),
                ],
                [3, 12],
            ),
            "lambda-multistep-poly": (
                [
                    m.LambdaLR(opt, lambda e: 0.9**e),
                    m.MultiStepLR(opt, milestones=[0, 2, 5], gamma=0.5),
                    m.PolynomialLR(opt, total_iters=8, power=2.0),
                ],
                [4, 15],
            ),
            "linear-warm-restarts": (
                [
                    m.LinearLR(opt, start_factor=0.5, total_iters=3),
                    m.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2),
                ],
                [3],
            ),
            "linear-cyclic": (
                [
                    m.LinearLR(opt, start_factor=0.5, total_iters=3),
                    m.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4),
                ],
                [6],
            ),
        }
        scheds, milestones = parts[kw]
        return m.SequentialLR(opt, scheds, milestones=milestones)
    if name == "ChainedScheduler":
        parts = {
            "const-exp": [m.ConstantLR(opt, factor=0.5, total_iters=4), m.ExponentialLR(opt, 0.9)],
            "linear-poly-step": [
                m.LinearLR(opt, start_factor=0.3, total_iters=6),
                m.PolynomialLR(opt, total_iters=20, power=1.5),
                m.StepLR(opt, step_size=4, gamma=0.7),
            ],
        }
        return m.ChainedScheduler(parts[kw])
    return getattr(m, name)(opt, **kw)


def _schedule(lib, name, kw, optname, steps=30):
    """(get_last_lr, the groups' lrs, their momenta) before each of ``steps`` steps."""
    opt = _opt(lib, optname)
    sched = _make(lib, opt, name, kw)
    seen = []
    for _ in range(steps):
        last = [float(x) for x in sched.get_last_lr()]
        seen.append((last, [float(g["lr"]) for g in opt.param_groups], _momenta(opt)))
        opt.step()
        sched.step()
    return seen, sched, opt


def _sched_ids(cases):
    return [f"{n}-{kw if isinstance(kw, str) else '-'.join(kw)}-{o}" for n, kw, o in cases]


@pytest.mark.parametrize("name,kw,optname", SCHEDULERS, ids=_sched_ids(SCHEDULERS))
def test_scheduler_lrs_and_momenta_agree_with_torch(name, kw, optname):
    ours, _, _ = _schedule(tg, name, kw, optname)
    theirs, _, _ = _schedule(torch, name, kw, optname)
    for k, ((a, b, c), (x, y, z)) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(a, x, rtol=1e-12, atol=1e-15, err_msg=f"step {k}")
        np.testing.assert_allclose(b, y, rtol=1e-12, atol=1e-15, err_msg=f"step {k}")
        np.testing.assert_allclose(c, z, rtol=1e-12, atol=1e-15, err_msg=f"step {k}")


def test_schedulers_drive_the_training_as_torch():
    """OneCycleLR cycling Adam's beta1 and lr while Adam trains: the same parameters."""
    runs = []
    for lib in (tg, torch):
        with _torch_float64():
            w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
            opt = lib.optim.Adam([w], lr=0.1)
            sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=8)
            for _ in range(8):
                opt.zero_grad()
                (w**4).sum().backward()
                opt.step()
                sched.step()
            runs.append(w.detach().numpy().copy())
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


@pytest.mark.parametrize(
    "name,kw,optname",
    [SCHEDULERS[i] for i in (1, 4, 7, 10, 13, 14, 21, 22, 26, 31)],
    ids=_sched_ids([SCHEDULERS[i] for i in (1, 4, 7, 10, 13, 14, 21, 22, 26, 31)]),
)
def test_scheduler_state_dict_resumes(name, kw, optname):
    """A scheduler and optimizer rebuilt after 11 steps from their (pickled) state dicts go
    on as the uninterrupted ones."""
    straight, _, _ = _schedule(tg, name, kw, optname)
    _, sched, opt = _schedule(tg, name, kw, optname, steps=11)
    ssd = pickle.loads(pickle.dumps(sched.state_dict()))
    osd = pickle.loads(pickle.dumps(opt.state_dict()))
    opt2 = _opt(tg, optname)
    sched2 = _make(tg, opt2, name, kw)
    opt2.load_state_dict(osd)
    sched2.load_state_dict(ssd)
    for k in range(11, 30):
        lrs = [float(x) for x in sched2.get_last_lr()]
        assert (lrs, [float(g["lr"]) for g in opt2.param_groups], _momenta(opt2)) == straight[k]
        opt2.step()
        sched2.step()


def test_cosine_warm_restarts_fractional_epochs_agree_with_torch():
    epochs = [0.0, 0.5, 1.25, 2.0, 3.99, 4.0, 7.5, 13.2, 2.5, 29.0, 45.0]
    rates = []
    for lib in (tg, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
        seen = []
        for e in epochs:
            opt.step()
            sched.step(e)
            seen.append(sched.get_last_lr() + [sched.last_epoch, sched.T_cur, sched.T_i])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="non-negative epoch"):
        sched = tg.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(tg), T_0=4)
        sched.step(-1)


def test_one_cycle_past_total_steps_raises():
    for lib in (tg, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(2):
            opt.step()
            sched.step()
        opt.step()
        sched.step()  # the 3rd step reaches total_steps: still fine
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            sched.step()


def _bad(lib, name, kw, optname="SGD"):
    m = lib.optim.lr_scheduler
    opt = _opt(lib, optname)
    if name in ("SequentialLR", "ChainedScheduler"):
        other = _opt(lib)
        kinds = {
            "empty": [],
            "plateau": [m.ReduceLROnPlateau(opt)],
            "other": [m.ExponentialLR(opt, 0.9), m.ExponentialLR(other, 0.9)],
        }
        scheds = kinds[kw.get("kind", "empty")]
        if name == "SequentialLR":
            return m.SequentialLR(opt, scheds, milestones=kw.get("milestones", []))
        return m.ChainedScheduler(scheds)
    return getattr(m, name)(opt, **kw)


BAD_SCHEDULERS = [
    ("ConstantLR", dict(factor=1.5)),
    ("ConstantLR", dict(factor=-0.1)),
    ("LinearLR", dict(start_factor=0.0)),
    ("LinearLR", dict(start_factor=1.2)),
    ("LinearLR", dict(end_factor=-0.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=1.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, eta_min="0")),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, mode="triangle")),
    ("CyclicLR", dict(base_lr=[0.1, 0.2, 0.3], max_lr=1.0)),
    ("CyclicLR", dict(base_lr=0.1, max_lr=[1.0])),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, base_momentum=[0.8])),
    ("OneCycleLR", dict(max_lr=1.0)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=0)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=5.0)),
    ("OneCycleLR", dict(max_lr=1.0, epochs=0, steps_per_epoch=3)),
    ("OneCycleLR", dict(max_lr=1.0, epochs=2, steps_per_epoch=-1)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, pct_start=1.5)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, pct_start=1)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, anneal_strategy="cosine")),
    ("OneCycleLR", dict(max_lr=[1.0, 2.0, 3.0], total_steps=10)),
    ("SequentialLR", dict(kind="empty")),
    ("SequentialLR", dict(kind="plateau")),
    ("SequentialLR", dict(kind="other", milestones=[3])),
    ("SequentialLR", dict(kind="other", milestones=[])),
    ("ChainedScheduler", dict(kind="empty")),
    ("ChainedScheduler", dict(kind="plateau")),
    ("ChainedScheduler", dict(kind="other")),
]


@pytest.mark.parametrize("name,kw", BAD_SCHEDULERS, ids=_ids(BAD_SCHEDULERS))
def test_bad_scheduler_arguments_raise_as_torch(name, kw):
    with pytest.raises(ValueError) as theirs:
        _bad(torch, name, kw)
    with pytest.raises(ValueError) as ours:
        _bad(tg, name, kw)
    if name not in ("SequentialLR", "ChainedScheduler") or kw["kind"] != "other":
        assert str(ours.value) == str(theirs.value)  # (else the optimizers' reprs differ)


@pytest.mark.parametrize("name", ["CyclicLR", "OneCycleLR"])
def test_cycle_momentum_needs_a_momentum(name):
    """Adagrad has neither momentum nor betas: cycle_momentum raises, as PyTorch's."""
    kw = dict(base_lr=0.1, max_lr=1.0) if name == "CyclicLR" else dict(max_lr=1.0, total_steps=5)
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="momentum or beta1"):
            getattr(lib.optim.lr_scheduler, name)(_opt(lib, "Adagrad"), **kw)


def test_constant_lr_factor_zero_raises_where_torch_divides_by_zero():
    for lib, err in ((torch, ZeroDivisionError), (tg, ValueError)):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.ConstantLR(opt, factor=0.0, total_iters=2)
        opt.step()
        sched.step()
        assert sched.get_last_lr() == [0.0, 0.0]
        with pytest.raises(err):
            sched.step()


def test_cyclic_step_sizes_are_refused_where_torch_fails():
    """PyTorch's CyclicLR fails with a bare ZeroDivisionError for step_size_up 0 (and
    cycles backwards for a negative one): tapegrad's raises a ValueError naming it."""
    with pytest.raises(ZeroDivisionError):
        torch.optim.lr_scheduler.CyclicLR(_opt(torch), 0.1, 1.0, step_size_up=0)
    for kw in (dict(step_size_up=0), dict(step_size_up=-2), dict(step_size_down=-1)):
        with pytest.raises(ValueError, match="CyclicLR: step_size"):
            tg.optim.lr_scheduler.CyclicLR(_opt(tg), 0.1, 1.0, **kw)


def test_cyclic_custom_scale_fn_state_dict_as_torch():
    """A function scale_fn is not saved (None); a callable object's attributes are."""

    class Scale:
        def __init__(self, r):
            self.r = r

        def __call__(self, x):
            return self.r**x

    for lib in (tg, torch):
        m = lib.optim.lr_scheduler
        sched = m.CyclicLR(_opt(lib), 0.1, 1.0, scale_fn=lambda x: 1.0)
        assert sched.state_dict()["_scale_fn_custom"] is None
        sched = m.CyclicLR(_opt(lib), 0.1, 1.0, step_size_up=2, scale_fn=Scale(0.5))
        sd = sched.state_dict()
        assert sd["_scale_fn_custom"] == {"r": 0.5}
        again = m.CyclicLR(_opt(lib), 0.1, 1.0, step_size_up=2, scale_fn=Scale(0.9))
        again.load_state_dict(sd)
        assert again._scale_fn_custom.r == 0.5


def test_one_cycle_closed_form():
    """OneCycleLR's cos schedule against its closed form written out."""
    opt = _opt(tg)
    sched = tg.optim.lr_scheduler.OneCycleLR(opt, max_lr=2.0, total_steps=20, pct_start=0.25)
    lo, hi = 2.0 / 25, 2.0
    end = lo / 1e4
    for step in range(20):
        up = 0.25 * 20 - 1
        if step <= up:
            want = hi + (lo - hi) / 2 * (1 + math.cos(math.pi * step / up))
        else:
            pct = (step - up) / (19 - up)
            want = end + (hi - end) / 2 * (1 + math.cos(math.pi * pct))
        assert math.isclose(sched.get_last_lr()[0], want, rel_tol=1e-13)
        opt.step()
        sched.step()


# ---- signatures, and what the hunt found -------------------------------------------------

ADDED = [("optim", n) for n in ("Adamax", "NAdam", "RAdam", "Adadelta", "ASGD")] + [
    ("lr_scheduler", n)
    for n in (
        "ConstantLR",
        "LinearLR",
        "PolynomialLR",
        "CosineAnnealingWarmRestarts",
        "CyclicLR",
        "OneCycleLR",
        "SequentialLR",
        "ChainedScheduler",
    )
]


@pytest.mark.parametrize("where,name", ADDED, ids=[n for _, n in ADDED])
def test_signatures_are_torch(where, name):
    """The same parameters, in the same order, kinds and defaults (but PyTorch's
    capturable / differentiable, which tapegrad does not take)."""
    import inspect

    ours = getattr(tg.optim if where == "optim" else tg.optim.lr_scheduler, name)
    theirs = getattr(torch.optim if where == "optim" else torch.optim.lr_scheduler, name)

    def params(cls):
        return [
            (p.name, p.kind, p.default)
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.name not in ("capturable", "differentiable")
        ]

    assert params(ours) == params(theirs)
    doc = " ".join(ours.__doc__.split())
    assert f"PyTorch's ``{name}" in doc or f"``torch.optim.{name}``" in doc


def test_shared_tensor_lr_is_scheduled_once_per_step():
    """Found: a Tensor lr given as the optimizer's default is one Tensor shared by every
    group; tapegrad's recursive schedulers read and filled it group by group, so ExponentialLR
    over two groups multiplied it by gamma twice a step (0.1 -> 0.0015625 after 3 steps,
    PyTorch 0.0125).  Now every new lr is computed before any is set, as PyTorch's."""
    m = "lr_scheduler"
    rates = []
    for lib in (tg, torch):
        with _torch_float64():
            ps = [lib.tensor([1.0], requires_grad=True), lib.tensor([2.0], requires_grad=True)]
            opt = lib.optim.SGD([{"params": ps[:1]}, {"params": ps[1:]}], lr=lib.tensor(0.1))
            scheds = [
                getattr(lib.optim, m).ExponentialLR(opt, 0.5),
                getattr(lib.optim, m).LinearLR(opt, 0.5, total_iters=4),
            ]
            seen = []
            for _ in range(6):
                opt.step()
                for s in scheds:
                    s.step()
                seen.append([float(g["lr"]) for g in opt.param_groups])
            rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("StepLR", dict(step_size=1)),
        ("ExponentialLR", dict(gamma=0.5)),
        ("MultiStepLR", dict(milestones=[1, 2])),
        ("LinearLR", dict()),
        ("ConstantLR", dict(total_iters=2)),
        ("PolynomialLR", dict()),
        ("CosineAnnealingLR", dict(T_max=5)),
    ],
)
def test_a_group_added_after_a_recursive_scheduler_follows_it_as_torch(name, kw):
    """Found: a parameter group added after the scheduler was made raised a bare "zip()
    argument 2 is shorter than argument 1"; PyTorch's recursive schedulers go on with it."""
    rates = []
    for lib in (tg, torch):
        opt = lib.optim.SGD([lib.tensor([1.0], requires_grad=True)], lr=0.1)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        opt.add_param_group({"params": [lib.tensor([2.0], requires_grad=True)], "lr": 0.2})
        seen = []
        for _ in range(4):
            opt.step()
            sched.step()
            seen.append([float(x) for x in sched.get_last_lr()])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("LambdaLR", dict(lr_lambda=lambda e: 0.5)),
        ("CosineAnnealingWarmRestarts", dict(T_0=3)),
        ("CyclicLR", dict(base_lr=0.1, max_lr=1.0)),
        ("OneCycleLR", dict(max_lr=1.0, total_steps=5)),
    ],
)
def test_a_group_added_after_a_closed_form_scheduler_is_refused_by_name(name, kw):
    """PyTorch fails here with a bare zip() ValueError or KeyError: tapegrad names it."""
    opt = tg.optim.SGD([tg.tensor([1.0], requires_grad=True)], lr=0.1, momentum=0.9)
    sched = getattr(tg.optim.lr_scheduler, name)(opt, **kw)
    opt.add_param_group({"params": [tg.tensor([2.0], requires_grad=True)]})
    opt.step()
    with pytest.raises(ValueError, match=f"{name}.step: the optimizer has 2 parameter groups"):
        sched.step()


def test_chained_scheduler_started_at_a_milestone_is_refused_by_name():
    """PyTorch's SequentialLR fails with a bare NotImplementedError when a ChainedScheduler
    is to start at a milestone (restarting its parts one by one would give the last one's
    lr, not their product)."""
    for lib, match in ((torch, ""), (tg, "ChainedScheduler cannot be started at a milestone")):
        m = lib.optim.lr_scheduler
        opt = _opt(lib)
        chained = m.ChainedScheduler([m.ExponentialLR(opt, 0.5), m.StepLR(opt, 2)])
        sched = m.SequentialLR(opt, [m.LinearLR(opt, 0.1, total_iters=3), chained], [2])
        opt.step()
        sched.step()
        with pytest.raises(NotImplementedError, match=match):
            sched.step()


def test_one_cycle_with_an_empty_phase_is_refused_by_name():
    """pct_start=1.0: the last step falls in a phase of no steps (PyTorch: a bare
    ZeroDivisionError)."""
    for lib, err, match in (
        (torch, ZeroDivisionError, ""),
        (tg, ValueError, "OneCycleLR: step 4 falls in phase 2"),
    ):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=4, pct_start=1.0)
        for _ in range(3):
            opt.step()
            sched.step()
        with pytest.raises(err, match=match):
            sched.step()


def test_state_of_another_optimizer_is_refused_when_loaded():
    """Adam's state loaded into NAdam (no mu_product): PyTorch's fails at the next step with
    a bare KeyError; tapegrad's load_state_dict names what is missing."""
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    adam = tg.optim.Adam([w])
    (w * w).sum().backward()
    adam.step()
    with pytest.raises(ValueError, match=r"NAdam.load_state_dict: .* no \['mu_product'\]"):
        tg.optim.NAdam([w]).load_state_dict(adam.state_dict())
