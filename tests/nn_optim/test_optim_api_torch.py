"""PyTorch's ``Optimizer`` API around the update rules, side by side with ``torch.optim``.

Hunted (every program run in tapegrad and in PyTorch, float64, values compared to rtol 1e-12):
``opt.state`` keyed by parameter (``opt.state[p]["exp_avg"]``, iteration, ``in``, a new
parameter's empty entry) for all ten stateful optimizers with ``maximize`` and two groups;
``param_groups`` edits taking effect mid-run (lr, momentum, betas, rho, lambd, weight_decay,
maximize) for the optimizers the older hunts do not edit; ``add_param_group`` mid-run (the
defaults filled, the new group stepped) and its refusals (a parameter in two groups, a set, no
"params", not a dict, a non-leaf); ``zero_grad(set_to_none=...)`` (a create_graph gradient
detached); step pre- and post-hooks (arguments seen, replaced by a pre-hook, a bad return,
removal) and the state-dict hooks (pre, post replacing the dict, prepend, load pre replacing
it, load post), compared as event logs; ``step(closure)`` under ``no_grad``; PyTorch's
``foreach`` / ``fused`` / ``capturable`` / ``differentiable`` keywords (taken where PyTorch
takes them; False / None accepted, True refused by name); ``repr``; ``LBFGS`` (fixed step and
strong Wolfe line search, history limits, state dict round trips, PyTorch's state dict loaded,
its errors).
"""

import collections
import copy
import inspect
import pickle

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-12, 1e-14
NAMES = (
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adamax",
    "NAdam",
    "RAdam",
    "Adadelta",
    "ASGD",
)
KW = {  # options with state: every buffer of the rule exists
    "SGD": dict(lr=0.1, momentum=0.9, nesterov=True),
    "Adam": dict(lr=0.1, amsgrad=True, weight_decay=0.1),
    "AdamW": dict(lr=0.1),
    "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.2),
    "Adamax": dict(lr=0.1, weight_decay=0.1),
    "NAdam": dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1),
    "RAdam": dict(lr=0.1, weight_decay=0.1),
    "Adadelta": dict(lr=1.0, weight_decay=0.1),
    "ASGD": dict(lr=0.1, t0=2.0, lambd=0.01),
}
P0 = [np.array([1.0, -2.0, 0.5]), np.array([[0.3, -0.7], [1.1, 0.2]]), np.array(0.4)]
TORCH_ONLY = {"foreach", "fused", "capturable", "differentiable"}  # switches tapegrad drops


@pytest.fixture(autouse=True, scope="module")
def _torch_float64():
    """PyTorch's 0-d state Tensors (NAdam's mu_product, ASGD's eta and mu) in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _params(lib, values=P0):
    if lib is torch:
        return [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    return [tg.tensor(v, requires_grad=True) for v in values]


def _np(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _loss(ps, t=0):
    a, b, c = ps
    return (a * a).sum() * (1.0 + 0.1 * t) + (b.sin() * c).sum() + (a.sum() - c) ** 2 + b.sum()


def _backward(opt, ps, t=0):
    opt.zero_grad()
    _loss(ps, t).backward()


def _state_np(v):
    if hasattr(v, "detach"):
        return _np(v)
    if isinstance(v, list):
        return [None if x is None else _state_np(x) for x in v]
    return np.asarray(v, dtype=np.float64)


def _close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=what)


def _compare(tps, gps, topt, gopt, what):
    for i, (tp, gp) in enumerate(zip(tps, gps, strict=True)):
        _close(_np(gp), _np(tp), f"{what}: parameter {i}")
        tstate, gstate = topt.state[tp], gopt.state[gp]  # (both keyed by the parameter)
        assert set(gstate) == set(tstate), what
        for k in tstate:
            _close(_state_np(gstate[k]), _state_np(tstate[k]), f"{what}: state {i} {k}")


def _both(name, kw, groups=None):
    out = []
    for lib in (torch, tg):
        ps = _params(lib)
        params = ps if groups is None else groups(ps)
        out.append((ps, getattr(lib.optim, name)(params, **kw)))
    return out


def _two_groups(ps):
    return [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.05}]


# ---- the state, keyed by parameter ------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_state_keyed_by_parameter_maximize_and_groups_match_torch(name):
    (tps, topt), (gps, gopt) = _both(name, dict(KW[name], maximize=True), _two_groups)
    for t in range(4):
        for ps, opt in ((tps, topt), (gps, gopt)):
            _backward(opt, ps, t)
            opt.step()
        _compare(tps, gps, topt, gopt, f"{name} step {t}")
    # iteration, membership and items give the parameters themselves, as PyTorch's
    assert [id(k) for k in gopt.state] == [id(p) for p in gps]
    assert all(p in gopt.state for p in gps) and len(gopt.state) == 3
    assert [id(k) for k, _ in gopt.state.items()] == [id(p) for p in gps]
    assert gopt.state.get(id(gps[0])) is gopt.state[gps[0]]  # (tapegrad's id keys still read)


def test_state_of_a_parameter_without_state_is_an_empty_entry():
    for lib in (torch, tg):
        ps = _params(lib)
        opt = lib.optim.Adam(ps[:2], lr=0.1)
        assert opt.state[ps[2]] == {} and len(opt.state) == 1  # (a defaultdict, as PyTorch's)
        assert ps[0] not in opt.state
    assert opt.state_dict()["state"] == {}  # (PyTorch's state_dict fails: KeyError)


@pytest.mark.parametrize("fresh", ["defaultdict", "dict"])
def test_state_replaced_by_a_fresh_mapping_restarts_as_torch(fresh):
    """``opt.state = defaultdict(dict)`` (forget every buffer, as PyTorch users do); a plain
    dict is taken too (PyTorch's then fails with a bare KeyError)."""
    (tps, topt), (gps, gopt) = _both("Adam", KW["Adam"])
    for t in range(4):
        for ps, opt in ((tps, topt), (gps, gopt)):
            if t == 2:
                opt.state = (
                    collections.defaultdict(dict) if fresh == "defaultdict" or opt is topt else {}
                )
            _backward(opt, ps, t)
            opt.step()
        _compare(tps, gps, topt, gopt, f"step {t}")


def test_state_survives_deepcopy_and_pickle_keyed_by_the_new_parameters():
    ps = _params(tg)
    opt = tg.optim.Adam(ps, lr=0.1)
    _backward(opt, ps)
    opt.step()
    for new_ps, new in (
        copy.deepcopy((ps, opt)),
        pickle.loads(pickle.dumps((ps, opt))),
    ):
        assert [id(k) for k in new.state] == [id(p) for p in new.param_groups[0]["params"]]
        for p, q in zip(ps, new_ps, strict=True):
            _close(new.state[q]["exp_avg"], opt.state[p]["exp_avg"], "copied state")


def _momentum_class(lib):
    """A user's optimizer written as PyTorch's docs write one: ``self.state[p]`` filled on the
    first step, Tensors in the state, in-place Tensor updates under ``@no_grad()``."""

    class Momentum(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1, beta=0.9):
            super().__init__(params, dict(lr=lr, beta=beta))

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = lib.zeros_like(p)
                    state["step"] += 1
                    state["buf"].mul_(group["beta"]).add_(p.grad)
                    p.add_(state["buf"], alpha=-group["lr"])

    return Momentum


def test_a_torch_style_user_optimizer_runs_and_resumes_from_its_state_dict():
    """Found: ``self.state[p]`` raised KeyError (the state was keyed by ``id(p)``), and once
    keyed by parameter, ``load_state_dict`` turned the user's Tensor buffers into NumPy arrays
    (``state["buf"].mul_`` then raised AttributeError on 'numpy.ndarray')."""
    runs = []
    for lib in (torch, tg):
        ps = _params(lib)
        opt = _momentum_class(lib)(ps)
        for t in range(2):
            _backward(opt, ps, t)
            opt.step()
        saved, resumed = opt.state_dict(), _params(lib)
        with lib.no_grad():
            for p, q in zip(resumed, ps, strict=True):
                p.copy_(q)
        opt = _momentum_class(lib)(resumed)
        opt.load_state_dict(saved)
        for t in range(2):
            _backward(opt, resumed, t)
            opt.step()
        runs.append((resumed, opt))
    (tps, topt), (gps, gopt) = runs
    _compare(tps, gps, topt, gopt, "resumed user optimizer")


def test_a_parameter_appended_to_a_group_is_stepped_as_torch():
    (tps, topt), (gps, gopt) = _both("Adam", KW["Adam"], lambda ps: ps[:2])
    for t in range(3):
        for ps, opt in ((tps, topt), (gps, gopt)):
            if t == 1:
                opt.param_groups[0]["params"].append(ps[2])
            _backward(opt, ps, t)
            opt.step()
        _compare(tps, gps, topt, gopt, f"step {t}")
    assert gopt.state_dict()["param_groups"][0]["params"] == [0, 1, 2]


# ---- param_groups edited between steps --------------------------------------------------------
def _set(**values):
    def edit(lib, opt):
        for group in opt.param_groups:
            group.update({k: (v(group[k]) if callable(v) else v) for k, v in values.items()})

    return edit


EDITS = [
    ("SGD", "momentum", _set(momentum=0.3)),
    ("SGD", "dampening", _set(dampening=0.5, nesterov=False)),
    ("Adamax", "lr", _set(lr=lambda lr: lr * 0.5)),
    ("Adamax", "betas", _set(betas=(0.5, 0.9))),
    ("NAdam", "betas-momentum_decay", _set(betas=(0.8, 0.99), momentum_decay=0.01)),
    ("NAdam", "maximize", _set(maximize=True)),
    ("RAdam", "weight_decay", _set(weight_decay=0.3, decoupled_weight_decay=True)),
    ("RAdam", "betas", _set(betas=(0.9, 0.5))),
    ("Adadelta", "rho-lr", _set(rho=0.5, lr=0.3)),
    ("ASGD", "lambd-alpha", _set(lambd=0.1, alpha=0.5)),
    ("ASGD", "lr", _set(lr=0.02)),
    ("Adagrad", "lr_decay-eps", _set(lr_decay=0.5, eps=1e-3)),
    ("RMSprop", "alpha-momentum", _set(alpha=0.5, momentum=0.9)),
]


@pytest.mark.parametrize("name,what,edit", EDITS, ids=[f"{n}-{w}" for n, w, _ in EDITS])
def test_param_groups_edits_take_effect(name, what, edit):
    (tps, topt), (gps, gopt) = _both(name, KW[name])
    for t in range(5):
        for lib, ps, opt in ((torch, tps, topt), (tg, gps, gopt)):
            if t == 2:
                edit(lib, opt)
            _backward(opt, ps, t)
            opt.step()
        _compare(tps, gps, topt, gopt, f"{name} {what} step {t}")


# ---- add_param_group --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_add_param_group_fills_defaults_and_steps_the_group(name):
    (tps, topt), (gps, gopt) = _both(name, KW[name], lambda ps: ps[:2])
    for t in range(4):
        for ps, opt in ((tps, topt), (gps, gopt)):
            if t == 1:
                opt.add_param_group({"params": ps[2], "lr": 0.02})
            _backward(opt, ps, t)
            opt.step()
        _compare(tps, gps, topt, gopt, f"{name} step {t}")
    tgroup, ggroup = topt.param_groups[1], gopt.param_groups[1]
    assert set(tgroup) - set(ggroup) <= TORCH_ONLY and set(ggroup) <= set(tgroup)
    for k in ggroup:
        if k != "params":
            assert ggroup[k] == tgroup[k], k


def _non_leaf(lib, ps):
    return {"params": [ps[2] * 2.0]}


ADD_REFUSED = [  # (what, the group given, the error; the same in both libraries)
    ("in-another-group", lambda lib, ps: {"params": [ps[0]]}, ValueError),
    ("a-set", lambda lib, ps: {"params": {ps[2]}}, TypeError),
    ("no-params", lambda lib, ps: {"lr": 0.1}, KeyError),
    ("not-a-dict", lambda lib, ps: [ps[2]], TypeError),
    ("non-leaf", _non_leaf, ValueError),
]


@pytest.mark.parametrize("what,group,error", ADD_REFUSED, ids=[c[0] for c in ADD_REFUSED])
def test_add_param_group_refusals_as_torch(what, group, error):
    for lib in (torch, tg):
        ps = _params(lib)
        opt = lib.optim.SGD(ps[:2], lr=0.1)
        with pytest.raises(error) as info:
            opt.add_param_group(group(lib, ps))
        assert len(opt.param_groups) == 1
        if lib is tg:
            message = str(info.value)
            assert "param" in message, message  # (names what is wrong, never a bare key)


def test_a_parameter_twice_in_one_group_is_refused():
    """PyTorch warns and steps the parameter twice; tapegrad refuses, naming it."""
    ps = _params(tg)
    with pytest.raises(ValueError, match="appears twice"):
        tg.optim.SGD([ps[0], ps[0]], lr=0.1)


# ---- zero_grad --------------------------------------------------------------------------------
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("create_graph", [False, True])
def test_zero_grad_as_torch(set_to_none, create_graph):
    seen = []
    for lib in (torch, tg):
        ps = _params(lib)
        opt = lib.optim.SGD(ps[:2], lr=0.1)
        _loss(ps).backward(create_graph=create_graph)
        opt.zero_grad(set_to_none=set_to_none)
        row = []
        for p in ps:
            g = p.grad
            row.append(None if g is None else (_np(g).tolist(), g.requires_grad))
        seen.append(row)
        for p in ps:  # (a backward through the cleared gradient is not needed: detached)
            p.grad = None
    assert seen[0] == seen[1]


# ---- step(closure) ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["Adam", "RMSprop", "ASGD"])
def test_step_with_a_closure_under_no_grad(name):
    (tps, topt), (gps, gopt) = _both(name, KW[name])
    for t in range(3):
        losses = []
        for lib, ps, opt in ((torch, tps, topt), (tg, gps, gopt)):

            def closure(ps=ps, opt=opt, t=t):
                opt.zero_grad()
                loss = _loss(ps, t)
                loss.backward()
                return loss

            with lib.no_grad():  # (the closure still records, as PyTorch's)
                losses.append(float(opt.step(closure).detach()))
        assert losses[1] == pytest.approx(losses[0], rel=RTOL)
        _compare(tps, gps, topt, gopt, f"{name} step {t}")


# ---- hooks ------------------------------------------------------------------------------------
def _step_hook_program(lib):
    log = []
    ps = _params(lib)
    opt = lib.optim.SGD(ps, lr=0.1)

    def closure():
        log.append("closure")
        opt.zero_grad()
        loss = _loss(ps)
        loss.backward()
        return loss

    def seen(kind):
        return lambda o, args, kwargs: log.append(
            (kind, o is opt, args[0] is opt, len(args), sorted(kwargs))
        )

    pre, post = opt.register_step_pre_hook(seen("pre")), opt.register_step_post_hook(seen("post"))
    log.append(round(float(opt.step(closure).detach()), 10))
    opt.step(closure=closure)

    def swap(o, args, kwargs):
        log.append("swap")
        return (o, closure), {}

    swapper = opt.register_step_pre_hook(swap)
    opt.step()
    pre.remove(), post.remove(), swapper.remove(), swapper.remove()
    opt.step(closure)
    bad = opt.register_step_pre_hook(lambda o, args, kwargs: 5)
    try:
        opt.step(closure)
    except RuntimeError as e:
        log.append(("RuntimeError", "must return None or a tuple" in str(e)))
    bad.remove()
    with opt.register_step_post_hook(seen("ctx")):
        opt.step(closure)
    opt.step(closure)
    log.append([np.round(_np(p), 12).tolist() for p in ps])
    return log


def test_step_hooks_as_torch():
    assert _step_hook_program(tg) == _step_hook_program(torch)


def _state_dict_hook_program(lib):
    log = []
    ps = _params(lib)
    opt = lib.optim.Adam(ps, lr=0.1)
    _backward(opt, ps)
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: log.append("pre-1"))
    opt.register_state_dict_pre_hook(lambda o: log.append("pre-0"), prepend=True)

    def add_entry(o, sd):
        log.append("post-returns")
        return dict(sd, extra=1)

    def edit_in_place(o, sd):
        log.append("post-edits")
        sd["param_groups"][0]["lr"] = 0.5

    opt.register_state_dict_post_hook(add_entry)
    opt.register_state_dict_post_hook(edit_in_place)
    sd = opt.state_dict()
    log.append((sorted(sd), sd["param_groups"][0]["lr"], opt.param_groups[0]["lr"]))

    def load_pre(o, sd):
        log.append(("load-pre", sorted(sd)))
        groups = [dict(sd["param_groups"][0], lr=0.25)]
        return {"state": sd["state"], "param_groups": groups}

    opt.register_load_state_dict_pre_hook(load_pre)
    opt.register_load_state_dict_post_hook(lambda o: log.append(("load-post", o.param_groups)))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load-post-0"), prepend=True)
    opt.load_state_dict(sd)
    log[-1] = ("load-post", log[-1][1][0]["lr"])
    _backward(opt, ps)
    opt.step()
    log.append([np.round(_np(p), 12).tolist() for p in ps])
    return log


def test_state_dict_hooks_as_torch():
    assert _state_dict_hook_program(tg) == _state_dict_hook_program(torch)


def test_step_hooks_run_once_around_a_subclass_step_calling_super():
    """A subclass's ``step`` calling ``super().step()`` runs the hooks once (PyTorch's
    patched step would run them again on an already patched base class)."""

    class Logged(tg.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    ps = _params(tg)
    opt, log = Logged(ps, lr=0.1), []
    opt.register_step_pre_hook(lambda o, args, kwargs: log.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))
    _backward(opt, ps)
    opt.step()
    assert log == ["pre", "post"]


def test_hooks_are_not_copied_or_pickled():
    ps = _params(tg)
    opt = tg.optim.SGD(ps, lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kwargs: None)  # (a lambda: unpicklable)
    opt.register_state_dict_post_hook(lambda o, sd: None)
    for new in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert not new._hooks("_step_pre_hooks") and not new._hooks("_state_dict_post_hooks")


# ---- PyTorch's implementation switches --------------------------------------------------------
def _takes(cls):
    return set(inspect.signature(cls.__init__).parameters)


@pytest.mark.parametrize("name", NAMES)
def test_implementation_switches_taken_where_torch_takes_them(name):
    ours, theirs = getattr(tg.optim, name), getattr(torch.optim, name)
    assert _takes(ours) == _takes(theirs)
    for flag in sorted(TORCH_ONLY & _takes(theirs)):
        for off in (False, None):
            opt = ours(_params(tg), **KW[name], **{flag: off})
            assert flag not in opt.param_groups[0] and flag not in opt.defaults
        if flag == "foreach":  # (the same update rule: accepted, changes nothing)
            ours(_params(tg), **KW[name], foreach=True)
            continue
        with pytest.raises(TypeError, match=f"{name}\\({flag}=True\\)"):
            ours(_params(tg), **KW[name], **{flag: True})


def _repr_lines(opt):
    """The repr's lines, numbers as floats (PyTorch's integer defaults: ``weight_decay: 0``)
    and without PyTorch's implementation switches."""
    out = []
    for line in repr(opt).splitlines():
        key, _, value = line.partition(": ")
        if key.strip() in TORCH_ONLY:
            continue
        try:
            value = repr(float(value))
        except ValueError:
            pass
        out.append((key, value))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_repr_is_torch_but_the_switches(name):
    ours = getattr(tg.optim, name)(_params(tg), **KW[name])
    theirs = getattr(torch.optim, name)(_params(torch), **KW[name])
    ours.add_param_group({"params": _params(tg, [np.array(1.0)]), "lr": 0.5})
    theirs.add_param_group({"params": _params(torch, [np.array(1.0)]), "lr": 0.5})
    assert _repr_lines(ours) == _repr_lines(theirs)


# ---- LBFGS ------------------------------------------------------------------------------------
A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])


def _lbfgs(lib, kw):
    w, s = _params(lib, [np.array([1.0, -2.0, 0.5]), np.array(0.3)])
    opt = lib.optim.LBFGS([w, s], **kw)
    a = lib.tensor(A)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (w * (a @ w)).sum() + (w.sin() * s).sum() + (s - 1) ** 4
        loss = loss + 0.1 * w.sum() ** 4
        loss.backward()
        return loss

    return [w, s], opt, closure


LBFGS_KW = [
    dict(),
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=4, history_size=2),
    dict(lr=0.3, max_iter=7, history_size=3, line_search_fn="strong_wolfe"),
    dict(lr=tg.tensor(0.5), max_iter=3, max_eval=2),
    dict(max_iter=50, tolerance_grad=1e-3, tolerance_change=1e-5),
]


@pytest.mark.parametrize("kw", LBFGS_KW, ids=[str(i) for i in range(len(LBFGS_KW))])
def test_lbfgs_matches_torch(kw):
    runs = []
    for lib in (torch, tg):
        lib_kw = dict(kw)
        if isinstance(kw.get("lr"), tg.Tensor):
            lib_kw["lr"] = lib.tensor(0.5)
        ps, opt, closure = _lbfgs(lib, lib_kw)
        losses = [float(opt.step(closure).detach()) for _ in range(3)]
        st = opt.state[ps[0]]
        runs.append((ps, losses, st["func_evals"], st["n_iter"], opt))
    (tps, tl, tf, tn, topt), (gps, gl, gf, gn, gopt) = runs
    assert (gf, gn) == (tf, tn)
    np.testing.assert_allclose(gl, tl, rtol=1e-11)
    for tp, gp in zip(tps, gps, strict=True):
        np.testing.assert_allclose(_np(gp), _np(tp), rtol=1e-10, atol=1e-12)
    tstate, gstate = topt.state[tps[0]], gopt.state[gps[0]]
    assert set(gstate) == set(tstate)


@pytest.mark.parametrize("how", ["own", "pickled", "torch's"])
def test_lbfgs_state_dict_round_trip_continues_as_torch(how):
    kw = dict(lr=0.5, max_iter=3, history_size=2)
    tps, topt, tclosure = _lbfgs(torch, kw)
    gps, gopt, gclosure = _lbfgs(tg, kw)
    topt.step(tclosure)
    gopt.step(gclosure)
    sd = {
        "own": lambda: gopt.state_dict(),
        "pickled": lambda: pickle.loads(pickle.dumps(gopt.state_dict())),
        "torch's": lambda: topt.state_dict(),
    }[how]()
    nps, nopt, nclosure = _lbfgs(tg, kw)
    with tg.no_grad():
        for p, q in zip(nps, gps, strict=True):
            p.copy_(q)
    nopt.load_state_dict(sd)
    for _ in range(2):
        topt.step(tclosure)
        nopt.step(nclosure)
    for tp, gp in zip(tps, nps, strict=True):
        np.testing.assert_allclose(_np(gp), _np(tp), rtol=1e-10, atol=1e-12)


def test_lbfgs_under_a_scheduler_as_torch():
    runs = []
    for lib in (torch, tg):
        ps, opt, closure = _lbfgs(lib, dict(max_iter=3))
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        for _ in range(3):
            opt.step(closure)
            sched.step()
        runs.append(([_np(p) for p in ps], opt.param_groups[0]["lr"]))
    assert runs[1][1] == runs[0][1]
    for a, b in zip(runs[1][0], runs[0][0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


LBFGS_REFUSED = [
    ("groups", lambda ps: tg.optim.LBFGS([{"params": ps[:1]}, {"params": ps[1:]}]), ValueError),
    ("added-group", lambda ps: tg.optim.LBFGS(ps[:1]).add_param_group({"params": ps[1:]}), None),
    ("lr", lambda ps: tg.optim.LBFGS(ps, lr=-1.0), ValueError),
    ("line-search", lambda ps: tg.optim.LBFGS(ps, line_search_fn="wolfe"), ValueError),
    ("no-closure", lambda ps: tg.optim.LBFGS(ps).step(None), TypeError),
    # (PyTorch fails later, with a bare IndexError at the second iteration)
    ("history", lambda ps: tg.optim.LBFGS(ps, history_size=0), ValueError),
]


@pytest.mark.parametrize("what,call,error", LBFGS_REFUSED, ids=[c[0] for c in LBFGS_REFUSED])
def test_lbfgs_refusals(what, call, error):
    with pytest.raises(error or ValueError, match="LBFGS|learning rate"):
        call(_params(tg, [np.array([1.0]), np.array([2.0])]))


def test_lbfgs_closure_is_evaluated_with_grad_under_no_grad():
    seen = []
    for lib in (torch, tg):
        ps, opt, closure = _lbfgs(lib, dict(max_iter=4))
        with lib.no_grad():
            loss = opt.step(closure)
        state = opt.state[ps[0]]
        seen.append((loss.requires_grad, state["n_iter"], state["func_evals"]))
    assert seen[0] == seen[1] and seen[1][0]
