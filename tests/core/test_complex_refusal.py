"""Complex numbers are not supported: every complex value meeting a Tensor or a traced value
raises a TypeError that says so (converting it to float64 would drop its imaginary part)."""

import gc
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

Z = np.array([1 + 2j, 3 - 1j])
MSG = "tapegrad does not support complex numbers"


def _x():
    return tg.tensor([1.0, 2.0], requires_grad=True)


CASES = {
    "grad of abs(x * Z)": lambda: tg.grad(lambda x: np.sum(np.abs(x * Z)))(2.0),
    "a Python complex scalar": lambda: tg.grad(lambda x: x * (1 + 2j))(2.0),
    "a NumPy complex scalar": lambda: _x() + np.complex128(1j),
    "tg.tensor of complex data": lambda: tg.tensor(Z),
    "tg.tensor(1j)": lambda: tg.tensor(1j),
    "Tensor * Z": lambda: _x() * Z,
    "Z * Tensor": lambda: Z * _x(),
    "Tensor - Z": lambda: _x() - Z,
    "np.add": lambda: np.add(_x(), Z),
    "matmul": lambda: tg.tensor(np.eye(2), requires_grad=True) @ Z,
    "where": lambda: tg.where(np.array([True, False]), _x(), Z),
    "concatenate": lambda: tnp.concatenate([_x(), Z]),
    "stack": lambda: tnp.stack([_x(), Z]),
    "maximum": lambda: np.maximum(_x(), Z),
    "setitem": lambda: tg.grad(lambda x: (lambda y: (y.__setitem__(0, 1j), np.sum(y))[1])(x * 1.0))(
        np.ones(2)
    ),
    "grad argument": lambda: tg.grad(lambda x: np.sum(x * 2))(np.ones(2) + 1j),
    "trace recording": lambda: tg.trace(lambda x: np.sum(x * Z), np.ones(2)),
    "trace replay argument": lambda: tg.trace(lambda x: np.sum(x * 2), np.ones(2))(np.ones(2) + 1j),
    "trace replay gradient": lambda: tg.trace(lambda x: np.sum(x * 2), np.ones(2)).value_and_grad(
        np.ones(2) + 1j
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_values_are_refused(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # no silent cast either
        with pytest.raises(TypeError, match=MSG):
            CASES[name]()


def test_real_parts_of_real_tensors_keep_their_meaning():
    """np.real / np.imag / np.conj of a real Tensor are exact (x, 0, x): nothing is dropped."""
    x = np.array([0.5, -2.0])
    assert tg.grad(lambda v: np.sum(np.real(v) * 3.0))(x).tolist() == [3.0, 3.0]
    assert tg.grad(lambda v: np.sum(np.imag(v) + v))(x).tolist() == [1.0, 1.0]
    assert tg.grad(lambda v: np.sum(np.conj(v) ** 2))(x).tolist() == [1.0, -4.0]


def test_a_collected_closure_tensor_is_not_replayed_from_its_recorded_value():
    w = tg.tensor(2.0)
    box = {"w": w}
    tr = tg.trace(lambda x: x * box["w"], 1.5)
    assert tr.value_and_grad(3.0) == (6.0, 2.0)
    box["w"] = tg.tensor(5.0)  # rebound: the old Tensor is collected
    del w
    gc.collect()
    with pytest.raises(tg.RetraceRequired, match="no longer exists"):
        tr.value_and_grad(3.0)
    tr2 = tg.trace(lambda x: x * box["w"], 1.5, retrace=True)
    box["w"] = tg.tensor(7.0)
    gc.collect()
    assert tr2.value_and_grad(3.0) == (21.0, 7.0)  # re-recorded with the current Tensor
