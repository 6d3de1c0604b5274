"""tg.nn.utils, tg.nn.init and the containers (ModuleList, ModuleDict, ParameterList,
ParameterDict) on worked examples, without PyTorch."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


def _param_with_grad(value, grad):
    p = tg.tensor(value, requires_grad=True)
    p.grad = tg.tensor(grad)
    return p


# ---- nn.utils -----------------------------------------------------------------------------


def test_clip_grad_norm_worked_example():
    a = _param_with_grad([0.0, 0.0], [3.0, 0.0])
    b = _param_with_grad([0.0], [4.0])
    c = tg.tensor([1.0], requires_grad=True)  # no grad: skipped
    ga = a.grad
    total = nn.utils.clip_grad_norm_([a, b, c], max_norm=1.0)
    assert isinstance(total, tg.Tensor) and float(total) == 5.0
    coef = 1.0 / (5.0 + 1e-6)
    assert a.grad is ga  # scaled in place
    np.testing.assert_allclose(a.grad.numpy(), [3.0 * coef, 0.0], rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), [4.0 * coef], rtol=1e-15)
    assert c.grad is None


def test_clip_grad_norm_below_max_leaves_grads_and_inf_norm():
    a = _param_with_grad([0.0, 0.0], [0.3, -0.4])
    assert float(nn.utils.clip_grad_norm_(a, 10.0)) == pytest.approx(0.5, rel=1e-15)
    np.testing.assert_array_equal(a.grad.numpy(), [0.3, -0.4])
    total = nn.utils.clip_grad_norm_(a, 0.2, norm_type=math.inf)
    assert float(total) == 0.4
    np.testing.assert_allclose(a.grad.numpy(), np.array([0.3, -0.4]) * (0.2 / (0.4 + 1e-6)))
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == 0.0


def test_clip_grad_norm_nonfinite():
    a = _param_with_grad([0.0, 0.0], [np.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(a, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(a.grad.numpy(), [np.inf, 1.0])  # nothing scaled


def test_clip_grad_value_and_vectors():
    a = _param_with_grad([[1.0, 2.0]], [[-3.0, 0.5]])
    nn.utils.clip_grad_value_([a], 1.0)
    np.testing.assert_array_equal(a.grad.numpy(), [[-1.0, 0.5]])
    b = tg.tensor([3.0], requires_grad=True)
    v = nn.utils.parameters_to_vector([a, b])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])
    (v * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [3.0])
    nn.utils.vector_to_parameters(tg.tensor([7.0, 8.0, 9.0]), [a, b])
    np.testing.assert_array_equal(a.numpy(), [[7.0, 8.0]])
    assert a.requires_grad and a.is_leaf
    with pytest.raises(TypeError, match="expected tapegrad.Tensor"):
        nn.utils.vector_to_parameters(np.zeros(3), [a, b])
    with pytest.raises(RuntimeError, match="elements"):
        nn.utils.vector_to_parameters(tg.zeros(2), [a, b])


# ---- nn.init -------------------------------------------------------------------------------


def test_init_fills_in_place_and_returns_the_tensor():
    lin = nn.Linear(3, 2)
    w = lin.weight
    assert nn.init.constant_(w, 0.25) is w and lin.weight is w
    np.testing.assert_array_equal(w.numpy(), np.full((2, 3), 0.25))
    assert w.is_leaf and w.requires_grad and w.grad is None
    np.testing.assert_array_equal(nn.init.ones_(lin.bias).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(nn.init.zeros_(lin.bias).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(nn.init.eye_(w).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.eye_(lin.bias)


def test_init_draws_from_the_seeded_generator():
    tg.manual_seed(3)
    a = nn.init.normal_(tg.zeros(5)).numpy().copy()
    tg.manual_seed(3)
    np.testing.assert_array_equal(nn.init.normal_(tg.zeros(5)).numpy(), a)
    g = np.random.default_rng(1)
    b = nn.init.uniform_(tg.zeros(4), generator=g).numpy()
    np.testing.assert_array_equal(b, np.random.default_rng(1).uniform(0, 1, 4))
    with pytest.raises(TypeError, match="generator"):
        nn.init.uniform_(tg.zeros(4), generator=7)


def test_fans_and_gains_worked_example():
    w = tg.zeros(8, 3, 5, 5)  # conv: fan_in 3 * 25, fan_out 8 * 25
    assert nn.init._calculate_fan_in_and_fan_out(w) == (75, 200)
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    assert nn.init.calculate_gain("leaky_relu", 0.5) == math.sqrt(2 / 1.25)
    assert nn.init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(tg.zeros(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        nn.init.kaiming_uniform_(w, mode="fan_avg")


@pytest.mark.parametrize(
    "init, bound",
    [
        (lambda t: nn.init.uniform_(t, -0.5, 2.0), (-0.5, 2.0)),
        (nn.init.xavier_uniform_, math.sqrt(6 / (400 + 300))),
        (lambda t: nn.init.xavier_uniform_(t, gain=2.0), 2 * math.sqrt(6 / (400 + 300))),
        (lambda t: nn.init.kaiming_uniform_(t, a=math.sqrt(5)), math.sqrt(6 / 6 / 400)),
        (
            lambda t: nn.init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
            math.sqrt(6 / 300),
        ),
    ],
)
def test_uniform_inits_bounds_and_std(init, bound):
    tg.manual_seed(0)
    lo, hi = bound if isinstance(bound, tuple) else (-bound, bound)
    w = init(tg.zeros(300, 400)).numpy()
    assert lo <= w.min() and w.max() <= hi
    assert w.min() < lo + 0.01 * (hi - lo) and w.max() > hi - 0.01 * (hi - lo)
    # 120,000 draws: the sample std is within 1% of (hi - lo) / sqrt(12)
    assert abs(w.std() / ((hi - lo) / math.sqrt(12)) - 1) < 0.01


@pytest.mark.parametrize(
    "init, mean, std",
    [
        (lambda t: nn.init.normal_(t, 1.5, 0.2), 1.5, 0.2),
        (nn.init.xavier_normal_, 0.0, math.sqrt(2 / 700)),
        (nn.init.kaiming_normal_, 0.0, math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(400)),
        (
            lambda t: nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"),
            0.0,
            5 / 3 / math.sqrt(300),
        ),
    ],
)
def test_normal_inits_std(init, mean, std):
    tg.manual_seed(1)
    w = init(tg.zeros(300, 400)).numpy()
    assert abs(w.mean() - mean) < 0.02 * std
    assert abs(w.std() / std - 1) < 0.01


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal(shape):
    w = nn.init.orthogonal_(tg.zeros(*shape), gain=2.0).numpy().reshape(shape[0], -1)
    small = min(w.shape)
    gram = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-12)


# ---- containers ----------------------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 1)])
        self.heads = nn.ModuleDict({"a": nn.Linear(1, 1), "drop": nn.Dropout(0.5)})
        self.scales = nn.ParameterList([tg.ones(1), tg.tensor([2.0], requires_grad=True)])
        self.extra = nn.ParameterDict({"shift": tg.zeros(1)})

    def forward(self, x):
        for layer in self.layers:
            x = tg.tanh(layer(x))
        x = self.heads["a"](x) * self.scales[0] * self.scales[1]
        return x + self.extra["shift"]


def test_containers_register_their_contents():
    net = _Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "heads.a.weight",
        "heads.a.bias",
        "scales.0",
        "scales.1",
        "extra.shift",
    ]
    assert list(net.state_dict()) == names
    net.eval()
    assert not net.heads["drop"].training and not net.layers[1].training
    net.train()
    assert net.heads["drop"].training
    net(tg.ones(4, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    other = _Net()
    other.load_state_dict(net.state_dict())
    x = tg.tensor([[0.3, -0.2]])
    np.testing.assert_array_equal(other(x).numpy(), net(x).numpy())


def test_module_list_operations():
    a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Tanh()
    ml = nn.ModuleList([a])
    ml.append(b).extend([c])
    assert len(ml) == 3 and ml[-1] is c and list(ml) == [a, b, c]
    ml.insert(0, c)
    assert list(ml._modules) == ["0", "1", "2", "3"] and ml[0] is c and ml[1] is a
    del ml[0]
    assert list(ml) == [a, b, c] and list(ml._modules) == ["0", "1", "2"]
    assert isinstance(ml[1:], nn.ModuleList) and list(ml[1:]) == [b, c]
    ml[1] = nn.Identity()
    assert isinstance(ml[1], nn.Identity)
    assert ml.pop(0) is a and len(ml) == 2
    with pytest.raises(IndexError):
        ml[5]
    with pytest.raises(NotImplementedError):
        ml(tg.ones(1))


def test_module_dict_and_parameter_containers():
    md = nn.ModuleDict()
    md["x"] = nn.ReLU()
    md.update([("y", nn.Tanh())])
    assert list(md) == ["x", "y"] and "y" in md and len(md) == 2
    assert isinstance(md.pop("x"), nn.ReLU) and list(md.keys()) == ["y"]
    pl = nn.ParameterList()
    pl.append(np.array([1.0, 2.0]))
    p = tg.tensor([3.0], requires_grad=True)
    pl.append(p)
    assert pl[1] is p and pl[0].requires_grad and pl[0].is_leaf
    pd = nn.ParameterDict()
    pd["w"] = p
    pd.update({"v": tg.zeros(2)})
    assert list(pd) == ["w", "v"] and pd["w"] is p and pd["v"].requires_grad
    assert [n for n, _ in pd.named_parameters()] == ["w", "v"]
    with pytest.raises(TypeError, match="string"):
        pd[0] = p
