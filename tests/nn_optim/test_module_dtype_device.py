"""``module.to`` / ``double`` / ``float`` / ``cpu``: PyTorch code calls them on every model.
tapegrad computes in float64 on the CPU, so they return the module with its outputs and
gradients unchanged (compared with torch's float64 model); float32, half, int dtypes and
other devices are refused with a message, as PyTorch refuses int dtypes."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

X = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def _pair():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    tm = tm.double()
    gm = tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.Tanh(), tg.nn.Linear(5, 2))
    gm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, gm


@pytest.mark.parametrize(
    "call",
    [
        lambda m, lib: m.to("cpu"),
        lambda m, lib: m.to(lib.float64),
        lambda m, lib: m.to("cpu", lib.float64),
        lambda m, lib: m.to(device="cpu", dtype=lib.float64, non_blocking=True),
        lambda m, lib: m.to(lib.zeros(1, dtype=lib.float64)),
        lambda m, lib: m.double(),
        lambda m, lib: m.cpu(),
    ],
    ids=["device", "dtype", "both", "keywords", "tensor", "double", "cpu"],
)
def test_conversions_return_the_module_with_torchs_numbers(call):
    tm, gm = _pair()
    assert call(tm, torch) is tm and call(gm, tg) is gm
    yt = tm(torch.tensor(X)).square().sum()
    yg = gm(tg.tensor(X)).square().sum()
    yt.backward()
    yg.backward()
    np.testing.assert_allclose(yg.item(), yt.item(), rtol=1e-14)
    for pt, pg in zip(tm.parameters(), gm.parameters(), strict=True):
        assert pg.dtype == np.float64
        np.testing.assert_allclose(pg.grad.numpy(), pt.grad.numpy(), rtol=1e-13)


def test_float_keeps_float64_and_converts_a_float32_buffer():
    m = tg.nn.Linear(2, 2)
    m.register_buffer("scale", tg.tensor([1.0, 2.0], dtype=tg.float32))
    assert m.float() is m
    assert m.weight.dtype == np.float64 and m.scale.dtype == np.float64


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda m: m.to(np.int64), TypeError, "only accepts floating point"),
        (lambda m: m.to(np.float32), TypeError, "float64 values only"),
        (lambda m: m.to("cuda"), RuntimeError, "CPU only"),
        (lambda m: m.cuda(), RuntimeError, "CPU only"),
        (lambda m: m.half(), TypeError, "half.*float64 values only"),
        (lambda m: m.bfloat16(), TypeError, "bfloat16.*float64 values only"),
    ],
    ids=["int", "float32", "cuda_str", "cuda", "half", "bfloat16"],
)
def test_what_cannot_be_honoured_is_refused(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call(tg.nn.Linear(2, 2))


def test_int_dtype_is_refused_by_torch_too():
    with pytest.raises(TypeError, match="only accepts floating point"):
        torch.nn.Linear(2, 2).to(torch.int64)
