"""tg.nn.utils, tg.nn.init's fans and gains, and the containers' names against PyTorch
(float64)."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def close(actual, expect, rtol=1e-12, atol=0.0):
    expect = expect.detach().numpy() if isinstance(expect, torch.Tensor) else expect
    actual = actual.detach().numpy() if isinstance(actual, tg.Tensor) else actual
    assert np.shape(actual) == np.shape(expect)
    np.testing.assert_allclose(actual, expect, rtol=rtol, atol=atol)


def _params(values, grads):
    tp, pp = [], []
    for v, g in zip(values, grads, strict=True):
        a, b = tg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        if g is not None:
            a.grad, b.grad = tg.tensor(g), torch.tensor(g)
        tp.append(a)
        pp.append(b)
    return tp, pp


SHAPES = [(3, 4), (4,), (2, 2, 2)]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    values = [RNG.standard_normal(s) for s in SHAPES]
    grads = [RNG.standard_normal(s) * 2 for s in SHAPES[:2]] + [None]
    tp, pp = _params(values, grads)
    t = nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    r = torch.nn.utils.clip_grad_norm_(pp, max_norm, norm_type=norm_type)
    close(t, r)
    for a, b in zip(tp, pp, strict=True):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            close(a.grad, b.grad)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_clip_grad_norm_nonfinite_matches_torch():
    tp, pp = _params([np.zeros(2)], [np.array([np.inf, 1.0])])
    t = nn.utils.clip_grad_norm_(tp, 1.0)
    r = torch.nn.utils.clip_grad_norm_(pp, 1.0)
    close(t, r)
    close(tp[0].grad, pp[0].grad)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(pp, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True)


def test_clip_grad_value_matches_torch():
    values = [RNG.standard_normal(s) for s in SHAPES]
    grads = [RNG.standard_normal(s) * 2 for s in SHAPES]
    tp, pp = _params(values, grads)
    nn.utils.clip_grad_value_(tp, 0.7)
    torch.nn.utils.clip_grad_value_(pp, 0.7)
    for a, b in zip(tp, pp, strict=True):
        close(a.grad, b.grad)


def test_parameters_to_vector_and_back_match_torch():
    values = [RNG.standard_normal(s) for s in SHAPES]
    tp, pp = _params(values, [None] * 3)
    tv, pv = nn.utils.parameters_to_vector(tp), torch.nn.utils.parameters_to_vector(pp)
    close(tv, pv)
    w = RNG.standard_normal(tv.shape)
    (tv * tg.tensor(w)).sum().backward()
    (pv * torch.tensor(w)).sum().backward()
    for a, b in zip(tp, pp, strict=True):
        close(a.grad, b.grad)
    new = RNG.standard_normal(tv.shape)
    nn.utils.vector_to_parameters(tg.tensor(new), tp)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), pp)
    for a, b in zip(tp, pp, strict=True):
        close(a, b)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2), (8, 3, 5, 5), (2, 6, 1, 3, 2), (3, 0, 2)])
def test_fans_match_torch(shape):
    expect = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    assert nn.init._calculate_fan_in_and_fan_out(tg.zeros(*shape)) == expect
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        got = nn.init._calculate_correct_fan(tg.zeros(*shape), mode)
        assert got == torch.nn.init._calculate_correct_fan(torch.zeros(shape), mode)


def test_fans_refuse_what_torch_refuses():
    with pytest.raises(ValueError) as tg_err:
        nn.init._calculate_fan_in_and_fan_out(tg.zeros(3))
    with pytest.raises(ValueError) as torch_err:
        torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(3))
    assert str(tg_err.value) == str(torch_err.value)


@pytest.mark.parametrize(
    "args",
    [
        ("linear",),
        ("conv1d",),
        ("conv_transpose3d",),
        ("sigmoid",),
        ("tanh",),
        ("relu",),
        ("leaky_relu",),
        ("leaky_relu", 0.2),
        ("leaky_relu", 3),
        ("selu",),
    ],
)
def test_gains_match_torch(args):
    assert nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("args", [("swish",), ("leaky_relu", True), ("leaky_relu", "a")])
def test_gain_errors_match_torch(args):
    with pytest.raises(ValueError) as tg_err:
        nn.init.calculate_gain(*args)
    with pytest.raises(ValueError) as torch_err:
        torch.nn.init.calculate_gain(*args)
    assert str(tg_err.value) == str(torch_err.value)


@pytest.mark.parametrize(
    "name, kw",
    [
        ("xavier_uniform_", dict(gain=1.7)),
        ("kaiming_uniform_", dict(a=math.sqrt(5))),
        ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu")),
    ],
)
def test_uniform_bounds_match_torch(name, kw):
    """The support of each uniform initialiser: torch's and tapegrad's samples, on the same
    shape, reach (within 1%) the same bound and never pass it."""
    tg.manual_seed(2)
    torch.manual_seed(2)
    shape = (64, 32, 3, 3)
    a = getattr(nn.init, name)(tg.zeros(*shape), **kw).numpy()
    b = getattr(torch.nn.init, name)(torch.zeros(shape, dtype=torch.float64), **kw).numpy()
    assert abs(np.abs(a).max() / np.abs(b).max() - 1) < 0.01
    assert abs(a.std() / b.std() - 1) < 0.02


@pytest.mark.parametrize(
    "name, kw",
    [
        ("xavier_normal_", dict(gain=0.5)),
        ("kaiming_normal_", dict()),
        ("kaiming_normal_", dict(mode="fan_out", nonlinearity="selu")),
    ],
)
def test_normal_std_matches_torch(name, kw):
    tg.manual_seed(4)
    torch.manual_seed(4)
    shape = (64, 32, 3, 3)
    a = getattr(nn.init, name)(tg.zeros(*shape), **kw).numpy()
    b = getattr(torch.nn.init, name)(torch.zeros(shape, dtype=torch.float64), **kw).numpy()
    assert abs(a.std() / b.std() - 1) < 0.02


def test_eye_matches_torch():
    close(nn.init.eye_(tg.zeros(3, 5)), torch.nn.init.eye_(torch.zeros(3, 5, dtype=torch.float64)))


class _TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 3), torch.nn.Linear(3, 1)])
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(1, 1), "drop": torch.nn.Dropout()})
        self.scales = torch.nn.ParameterList([torch.ones(1), torch.ones(1)])
        self.extra = torch.nn.ParameterDict({"shift": torch.zeros(1)})


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 1)])
        self.heads = nn.ModuleDict({"a": nn.Linear(1, 1), "drop": nn.Dropout()})
        self.scales = nn.ParameterList([tg.ones(1), tg.ones(1)])
        self.extra = nn.ParameterDict({"shift": tg.zeros(1)})


def test_container_state_dict_ports_to_and_from_torch():
    tnet, pnet = _Net(), _TorchNet().double()
    assert list(tnet.state_dict()) == list(pnet.state_dict())
    assert [n for n, _ in tnet.named_parameters()] == [n for n, _ in pnet.named_parameters()]
    tnet.load_state_dict({k: v.numpy() for k, v in pnet.state_dict().items()})
    for (k, a), b in zip(tnet.state_dict().items(), pnet.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b.numpy(), err_msg=k)
