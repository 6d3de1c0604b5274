"""Arrays whose meaning a float64 value would change (a masked array's mask, np.matrix's
matrix product, extended precision) are refused wherever they meet tapegrad, and a Tensor
pickles as PyTorch's does (value and requires_grad), except a value being differentiated."""

import copy
import pickle

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
MATRIX = np.matrix([[1.0, 2.0, 3.0]])
LONG = np.array([1.0, 2.0, 3.0], dtype=np.longdouble)
EXTENDED = np.dtype(np.longdouble).itemsize > 8  # (float64 on some platforms)


def _leaf():
    return tg.tensor([1.0, 2.0, 3.0], requires_grad=True)


@pytest.mark.parametrize("value, fragment", [(MASKED, "masked"), (MATRIX, "np.matrix")])
@pytest.mark.parametrize(
    "make",
    [
        lambda v: tg.tensor(v),
        lambda v: tg.as_tensor(v),
        lambda v: tg.from_numpy(v),
        lambda v: _leaf() * v,
        lambda v: v * _leaf(),
        lambda v: _leaf() + v,
        lambda v: np.add(_leaf(), v),
        lambda v: np.dot(_leaf(), v.T),
        lambda v: tnp.concatenate([_leaf(), v]),
        lambda v: tg.grad(lambda x: np.sum(x * v))(np.ones(3)),
    ],
    ids=[
        "tensor",
        "as_tensor",
        "from_numpy",
        "x*v",
        "v*x",
        "x+v",
        "np.add",
        "np.dot",
        "concat",
        "grad",
    ],
)
def test_masked_arrays_and_matrices_are_refused(make, value, fragment):
    with pytest.raises(TypeError) as e:
        make(value)
    # (masked * x is NumPy's masked multiply, which refuses to convert x to an array)
    assert fragment in str(e.value) or "__array__" in str(e.value), str(e.value)


def test_the_refusal_names_the_numpy_function():
    with pytest.raises(TypeError, match=r"numpy\.dot: an argument is a masked array"):
        np.dot(_leaf(), MASKED)


@pytest.mark.skipif(not EXTENDED, reason="longdouble is float64 on this platform")
@pytest.mark.parametrize(
    "make",
    [
        lambda: tg.tensor(LONG),
        lambda: tg.as_tensor(LONG),
        lambda: tg.from_numpy(LONG),
        lambda: _leaf() * LONG,
        lambda: _leaf() * LONG[0],
        lambda: tg.grad(lambda x: np.sum(x**2))(LONG),
        lambda: tg.grad(lambda x: x**2)(LONG[0]),
        lambda: tg.trace(lambda x: np.sum(x**2), LONG),
        lambda: tg.trace(lambda x: np.sum(x**2), np.ones(3)).grad(LONG),
        lambda: tg.jvp(lambda x: x * 2.0, (np.ones(3),), (LONG,)),
    ],
)
def test_extended_precision_is_refused_not_rounded(make):
    with pytest.raises(TypeError, match="extended precision"):
        make()


def test_float32_and_float16_still_widen_exactly():
    for dtype in (np.float32, np.float16):
        x = np.array([1.5, -2.25], dtype=dtype)
        g = tg.grad(lambda v: np.sum(v**2))(x)
        assert g.dtype == dtype
        np.testing.assert_array_equal(g, 2 * x)


def test_masked_directions_and_seeds_are_refused():
    with pytest.raises(TypeError, match="masked"):
        (_leaf() * 2.0).backward(MASKED)
    with pytest.raises(TypeError, match="complex"):
        tg.autograd.grad(_leaf() * 2.0, [_leaf()], grad_outputs=[np.array([1j, 1, 1])])
    tr = tg.trace(lambda x: np.sum(x**3), np.ones(3))
    with pytest.raises(TypeError, match="masked"):
        tr.hvp(np.ones(3), MASKED)
    with pytest.raises(TypeError, match="masked"):
        tr.grad_many(np.ma.masked_array([[1.0, 2.0, 3.0]], mask=[[0, 1, 0]]))


def test_a_tensor_pickles_as_pytorch_pickles_it():
    x = _leaf()
    (x * 2.0).sum().backward()
    y = x * 3.0
    for t, want in ((x, [1.0, 2.0, 3.0]), (y, [3.0, 6.0, 9.0])):
        back = pickle.loads(pickle.dumps(t))
        np.testing.assert_array_equal(back.numpy(), want)
        assert back.requires_grad and back.is_leaf and back.grad is None and back.grad_fn is None
        (back * back).sum().backward()  # a leaf of its own graph
        np.testing.assert_array_equal(back.grad.numpy(), 2 * np.array(want))
    ints = pickle.loads(pickle.dumps(tg.tensor([2**60 + 1, 3])))
    assert ints.dtype == np.int64 and ints.tolist() == [2**60 + 1, 3]
    scalar = pickle.loads(pickle.dumps(tg.tensor(2.5)))
    assert scalar.shape == () and scalar.item() == 2.5 and not scalar.requires_grad


def test_a_module_pickles_and_deep_copies():
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
    model[0].bias = tg.nn.Parameter(np.zeros(4), requires_grad=False)  # a frozen parameter
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        np.testing.assert_array_equal(other(tg.tensor(x)).numpy(), model(tg.tensor(x)).numpy())
        assert [p.requires_grad for p in other.parameters()] == [True, False, True, True]
        assert all(p is not q for p, q in zip(other.parameters(), model.parameters(), strict=True))
        assert list(other.state_dict()) == list(model.state_dict())
        other[0].bias = tg.nn.Parameter(np.ones(4), requires_grad=False)  # still a parameter


@pytest.mark.parametrize(
    "run",
    [
        lambda f: tg.grad(f)(np.ones(3)),
        lambda f: tg.jvp(f, (np.ones(3),), (np.ones(3),)),
        lambda f: tg.trace(f, np.ones(3)),
    ],
    ids=["grad", "jvp", "trace"],
)
def test_pickling_a_value_being_differentiated_is_refused(run):
    def f(x):
        return np.sum(pickle.loads(pickle.dumps(x)) ** 2)

    with pytest.raises(TypeError, match="pickling"):
        run(f)


def test_deepcopy_of_tensors_is_pytorchs():
    """A leaf is copied as a new leaf (value and .grad copied, not shared; a parameter's
    .grad not copied); a result that requires grad is refused (deep-copying the handle
    copied the tape it was recorded on, and crashed after a backward)."""
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    w2 = copy.deepcopy(w)
    assert w2.is_leaf and w2.requires_grad and w2 is not w
    np.testing.assert_array_equal(w2.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(w2.grad.numpy(), [2.0, 4.0])
    w2.grad.numpy()[0] = 7.0
    assert w.grad.numpy()[0] == 2.0
    with pytest.raises(RuntimeError, match="only leaf Tensors"):
        copy.deepcopy(w * 2)
    with tg.no_grad():
        np.testing.assert_array_equal(copy.deepcopy(w * 3).numpy(), [3.0, 6.0])
    shared = copy.deepcopy({"a": w, "b": w})
    assert shared["a"] is shared["b"]
    p = tg.nn.Parameter([1.0, 2.0])
    (p * p).sum().backward()
    assert copy.deepcopy(p).grad is None
    assert copy.deepcopy(tg.tensor([1, 2])).dtype == tg.tensor([1, 2]).dtype
