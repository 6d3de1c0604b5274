"""state_dict() / load_state_dict() of modules and optimizers: PyTorch's layouts and structure,
exact continuation of training after a save and load, and the errors that name what is wrong."""

import pickle

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

RNG = np.random.default_rng(11)
X = RNG.standard_normal((16, 4))
Y = RNG.integers(0, 3, 16)


def make_model(seed):
    tg.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def train(model, opt, steps):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


OPTIMIZERS = {
    "adam": lambda ps, lr=0.05: tg.optim.Adam(ps, lr=lr, betas=(0.8, 0.99), weight_decay=0.01),
    "sgd_momentum": lambda ps, lr=0.1: tg.optim.SGD(ps, lr=lr, momentum=0.9, nesterov=True),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_save_load_continues_exactly_like_the_original(name):
    make_opt = OPTIMIZERS[name]
    model = make_model(0)
    opt = make_opt(model.parameters())
    train(model, opt, 3)
    # through pickle, as a checkpoint on disk would go
    saved = pickle.loads(pickle.dumps((model.state_dict(), opt.state_dict())))

    fresh = make_model(1)  # other initial values, other learning rate: all overwritten
    fresh_opt = make_opt(fresh.parameters(), lr=123.0)
    assert fresh.load_state_dict(saved[0]) == ([], [])
    fresh_opt.load_state_dict(saved[1])
    assert fresh_opt.param_groups[0]["lr"] == opt.param_groups[0]["lr"]

    assert train(fresh, fresh_opt, 4) == train(model, opt, 4)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_module_state_dict_names_layout_and_copies():
    model = make_model(0)
    sd = model.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(type(v) is np.ndarray for v in sd.values())
    assert sd["0.weight"].shape == (8, 4) and sd["2.weight"].shape == (3, 8)
    sd["0.weight"][:] = 0.0  # a copy: the model is untouched
    assert np.all(model[0].weight.numpy() != 0.0)
    # values may also be Tensors or nested lists
    other = make_model(5)
    other.load_state_dict(
        {
            k: tg.tensor(v) if k.endswith("bias") else v.tolist()
            for k, v in make_model(0).state_dict().items()
        }
    )
    np.testing.assert_array_equal(other(X).numpy(), make_model(0)(X).numpy())


def test_old_in_out_layout_is_refused_with_the_fix():
    model = make_model(0)
    before = model.state_dict()
    old = model.state_dict()
    old["0.weight"] = old["0.weight"].T.copy()  # (4, 8): the layout before PyTorch's
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(old)
    msg = str(info.value)
    assert "size mismatch for 0.weight" in msg and "(4, 8)" in msg and "(8, 4)" in msg
    assert "PyTorch's (out_features, in_features)" in msg and "transpose it" in msg
    assert "2.weight" not in msg
    for k, v in model.state_dict().items():  # nothing was loaded
        np.testing.assert_array_equal(v, before[k])
    old["0.weight"] = old["0.weight"].T
    model.load_state_dict(old)


def test_strict_key_errors_name_the_keys():
    model = make_model(0)
    sd = model.state_dict()
    del sd["2.bias"]
    sd["3.weight"] = np.zeros((3, 3))
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(sd)
    msg = str(info.value)
    assert "Missing key(s) in state_dict: '2.bias'" in msg
    assert "Unexpected key(s) in state_dict: '3.weight'" in msg
    sd["0.bias"] = np.full(8, 0.5)
    assert model.load_state_dict(sd, strict=False) == (["2.bias"], ["3.weight"])
    np.testing.assert_array_equal(model[0].bias.numpy(), np.full(8, 0.5))


def test_optimizer_state_dict_structure_is_pytorchs():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    c = tg.tensor([[1.0]], requires_grad=True)
    opt = tg.optim.SGD([{"params": [a]}, {"params": [b, c], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.state_dict() == {
        "state": {},
        "param_groups": [
            {
                "lr": 0.1,
                "momentum": 0.9,
                "weight_decay": 0.0,
                "dampening": 0.0,
                "nesterov": False,
                "maximize": False,
                "params": [0],
            },
            {
                "lr": 0.5,
                "momentum": 0.9,
                "weight_decay": 0.0,
                "dampening": 0.0,
                "nesterov": False,
                "maximize": False,
                "params": [1, 2],
            },
        ],
    }
    (a.sum() * b).backward()  # c gets no gradient, so no state
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and list(sd["state"][0]) == ["momentum_buffer"]
    np.testing.assert_array_equal(sd["state"][0]["momentum_buffer"], [3.0, 3.0])
    np.testing.assert_array_equal(sd["state"][1]["momentum_buffer"], 3.0)
    sd["state"][0]["momentum_buffer"][:] = 0.0  # a copy
    assert opt.state[id(a)]["momentum_buffer"][0] == 3.0

    w = tg.tensor([1.0, -1.0], requires_grad=True)
    adam = tg.optim.Adam([w], lr=0.1)
    for _ in range(2):
        adam.zero_grad()
        (w * w).sum().backward()
        adam.step()
    st = adam.state_dict()
    assert st["param_groups"] == [
        {
            "lr": 0.1,
            "betas": (0.9, 0.999),
            "eps": 1e-8,
            "weight_decay": 0.0,
            "amsgrad": False,
            "maximize": False,
            "decoupled_weight_decay": False,
            "params": [0],
        }
    ]
    assert st["state"][0]["step"] == 2 and set(st["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    # betas saved through JSON come back as a list; loading restores the tuple
    st["param_groups"][0]["betas"] = [0.5, 0.9]
    adam.load_state_dict(st)
    assert adam.param_groups[0]["betas"] == (0.5, 0.9)


def test_optimizer_load_errors_change_nothing():
    p = tg.tensor([1.0, 2.0], requires_grad=True)
    q = tg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    opt = tg.optim.Adam([p, q], lr=0.1)
    (p.sum() + q.sum()).backward()
    opt.step()
    good = opt.state_dict()
    before = opt.state_dict()

    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})
    two_groups = dict(good, param_groups=good["param_groups"] * 2)
    with pytest.raises(ValueError, match="2 parameter groups, this optimizer has 1"):
        opt.load_state_dict(two_groups)
    short = dict(good, param_groups=[dict(good["param_groups"][0], params=[0])])
    with pytest.raises(ValueError, match="group \\(0\\) of 1 parameters.*\\(2\\)"):
        opt.load_state_dict(short)
    wrong = pickle.loads(pickle.dumps(good))
    wrong["state"][1]["exp_avg"] = np.zeros((3, 1))
    wrong["param_groups"][0]["lr"] = 9.0
    with pytest.raises(
        ValueError,
        match="parameter 1: 'exp_avg' has shape \\(3, 1\\), the parameter has shape \\(1, 3\\)",
    ):
        opt.load_state_dict(wrong)
    stray = dict(good, state={**good["state"], 7: {"step": 1}})
    with pytest.raises(ValueError, match="parameter\\(s\\) \\[7\\]"):
        opt.load_state_dict(stray)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for k in before["state"]:
        for name, v in before["state"][k].items():
            np.testing.assert_array_equal(after["state"][k][name], v)
