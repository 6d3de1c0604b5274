"""Plain NumPy code computes under a transform what it computes on arrays.

Inside ``tg.grad`` & co. called with NumPy values, ``f`` is NumPy code: the Tensor methods
whose NumPy and PyTorch meanings differ (std, var, max, min, repeat, sort, nonzero, view,
item) follow NumPy's, as under JAX and HIPS autograd (PyTorch's unbiased ``a.std()`` or tiling
``a.repeat(2)`` would give another number without an error).  Called with Tensors, ``f`` is
PyTorch code and keeps PyTorch's meanings; a PyTorch-only keyword asks for them anywhere."""

import numpy as np
import pytest

import tapegrad as tg

A = np.array([[0.0, 1.0, 2.0], [3.0, 5.0, 4.5]])
W6 = np.arange(6.0).reshape(2, 3)


def _sorted_copy(a, axis):
    b = a * 1.0
    assert b.sort(axis=axis) is None  # NumPy's sort: in place, returns None
    return b


def _masked(a):
    return a * (A != 0)  # A's zeros whatever a is (finite differences keep its pattern)


NUMPY_CODE = {
    "std()": lambda a: a.std(),
    "var()": lambda a: a.var(),
    "std(0)": lambda a: (a.std(0) * np.arange(3)).sum(),
    "var(axis=1, keepdims=True)": lambda a: (a.var(axis=1, keepdims=True) * [[1.0], [2.0]]).sum(),
    "std(ddof=1)": lambda a: a.std(ddof=1),
    "var(0, None, None, 1)": lambda a: a.var(0, None, None, 1).sum(),
    "max(0)": lambda a: (a.max(0) * np.arange(3)).sum(),
    "min(axis=1)": lambda a: (a.min(axis=1) * [1.0, 2.0]).sum(),
    "max(1, None, True)": lambda a: (a.max(1, None, True) * [[1.0], [2.0]]).sum(),
    "max()": lambda a: a.max(),
    "np.sum(a.max(axis=0))": lambda a: np.sum(a.max(axis=0)),
    "repeat(2)": lambda a: (a.repeat(2) * np.arange(12)).sum(),
    "a[0].repeat(2)": lambda a: (a[0].repeat(2) * np.arange(6)).sum(),
    "repeat(2, axis=0)": lambda a: (a.repeat(2, axis=0) * np.arange(12).reshape(4, 3)).sum(),
    "repeat([1, 2], 0)": lambda a: (a.repeat([1, 2], 0) * np.arange(9).reshape(3, 3)).sum(),
    "sort() in place": lambda a: (_sorted_copy(a, -1) * W6).sum(),
    "sort(axis=0) in place": lambda a: (_sorted_copy(a[::-1], 0) * W6).sum(),
    "nonzero()": lambda a: (_masked(a)[_masked(a).nonzero()] ** 2 * np.arange(5)).sum(),
    "nonzero()[1]": lambda a: (a[0, 1:] * _masked(a)[0].nonzero()[0]).sum() + a.nonzero()[1].sum(),
    "view()": lambda a: (a.view() * W6).sum(),
    "view(a.dtype)": lambda a: (a.view(np.float64) * W6).sum(),
    # NumPy's positional order (axis, dtype, out, keepdims) and initial= / where=
    "sum(0, float)": lambda a: (a.sum(0, float) * np.arange(3)).sum(),
    "mean(1, None, None, True)": lambda a: (a.mean(1, None, None, True) * [[1.0], [2.0]]).sum(),
    "prod(axis=0, dtype=np.float64)": lambda a: (a.prod(axis=0, dtype=np.float64) * W6[1]).sum(),
    "sum(where=a > 2.5)": lambda a: a.sum(where=a > 2.5),
    "sum(1, initial=1.0)": lambda a: (a.sum(1, initial=1.0) ** 2).sum(),
    "mean(0, where=)": lambda a: (a.mean(0, where=A > 0.5) * [1, 2, 3]).sum(),
    "argsort(axis=None)": lambda a: (a.ravel()[a.argsort(axis=None)].ravel() * np.arange(6)).sum(),
    "argsort(None)": lambda a: (np.take(a, a.argsort(None)) * np.arange(6)).sum(),
    "argsort(0, 'stable')": lambda a: (np.take_along_axis(a, a.argsort(0, "stable"), 0) * W6).sum(),
    "argpartition(1)": lambda a: (
        np.take_along_axis(a, a.argpartition(1), -1)[:, 1] * W6[0, 1:]
    ).sum(),
    "partition(1) in place": lambda a: _partitioned_sum(a * 1.0),
    "diagonal(0, 1, 2) of 3-D": lambda a: (a.reshape(1, 2, 3).diagonal(0, 1, 2) * [[1, 2]]).sum(),
    "diagonal(offset=1, axis1=1, axis2=0)": lambda a: a.diagonal(offset=-1, axis1=1, axis2=0)[0],
    "trace(0, 1, 2) of 3-D": lambda a: (a.reshape(1, 2, 3).trace(0, 1, 2) * 2.0).sum(),
    "trace(offset=1)": lambda a: a.trace(offset=1),
    "take([0, 9], mode='clip')": lambda a: (a.take([0, 9], mode="clip") * [1, 2]).sum(),
    "take([3, -1], 1, mode='wrap')": lambda a: (a.take([3, -1], 1, mode="wrap") * W6[:, :2]).sum(),
    "compress([True, False, True], axis=1)": lambda a: (a.compress([1, 0, 1], axis=1) ** 2).sum(),
    "compress([False, True])": lambda a: a.compress([False, True]).sum() * 3.0,
    "choose([a, a * 2])": lambda a: ((a > 2.5).astype(int).choose([a, a * a]) * W6).sum(),
    "put([0, 4], [5, 6]) in place": lambda a: _put_sum(a * 1.0, [0, 4], [5.0, 6.0]),
    "put(traced values, repeated index)": lambda a: _put_sum(a * 1.0, [0, 0, -1], a[1] * 3.0),
    "put(mode='wrap', values repeated)": lambda a: _put_sum(a * 1.0, [7, -8], a[0, :1], "wrap"),
    "flat[1:4]": lambda a: (a.flat[1:4] * [1, 2, 3]).sum() + a.flat[-1] * 5.0,
    "iterating a.T.flat": lambda a: sum(x * i for i, x in enumerate(a.T.flat)),
    "a.flat[[0, 4]] = ...": lambda a: _flat_set_sum(a * 1.0),
    "x in a": lambda a: a.sum() * (True in (a > 4.0)) + a.sum() * (True in (a > 9.0)) * 2.0,
    "to_device, device, __array_namespace__": lambda a: (
        a.__array_namespace__().sum(a.to_device("cpu") ** 2) * (a.device == "cpu")
    ),
}


# programs whose traces pin the values they read (positions, masks): replayed at A
PINNED = ("nonzero", "sum(where", "argsort", "argpartition", "choose", "x in a")


def _partitioned_sum(b):
    assert b.partition(1) is None  # NumPy's partition: in place, returns None
    return (b[:, 1] * [1.0, 2.0]).sum() + b[:, 0].sum() * 5.0  # (the kth and those below)


def _put_sum(b, ind, v, mode="raise"):
    assert b.put(ind, v, mode) is None  # in place
    return (b * W6).sum()


def _flat_set_sum(b):
    b.flat[[0, 4]] = b.flat[[1, 2]] * 3.0
    return (b * W6).sum()


def _fd(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[i] += eps
        am[i] -= eps
        g[i] = (f(ap) - f(am)) / (2 * eps)
    return g


@pytest.mark.parametrize("name", NUMPY_CODE)
def test_numpy_code_under_grad_is_numpy(name):
    f = NUMPY_CODE[name]
    value, grad = tg.value_and_grad(f)(A.copy())
    np.testing.assert_allclose(value, f(A.copy()), rtol=1e-13)
    np.testing.assert_allclose(grad, _fd(f, A), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", NUMPY_CODE)
def test_numpy_code_in_a_trace_and_in_nested_transforms_is_numpy(name):
    f = NUMPY_CODE[name]
    tr = tg.trace(f, A.copy())
    B = A if name.startswith(PINNED) else A * 1.5  # (a replay guard pins these values)
    np.testing.assert_allclose(tr(B), f(B.copy()), rtol=1e-13)
    np.testing.assert_allclose(tr.grad(B), _fd(f, B), rtol=1e-6, atol=1e-7)
    # the inner transform's arguments are Tensors, but f is still the outer NumPy code
    inner = tg.grad(lambda a: f(a) * 1.0)
    np.testing.assert_allclose(tg.jacobian(inner)(A)[0, 0].shape, A.shape)
    np.testing.assert_allclose(inner(A), _fd(f, A), rtol=1e-6, atol=1e-7)


def test_tensor_arguments_make_pytorch_code():
    x = tg.tensor(A)
    value, grad = tg.value_and_grad(lambda t: t.std())(x)
    assert value == pytest.approx(np.std(A, ddof=1), rel=1e-14)  # PyTorch's unbiased std
    np.testing.assert_allclose(grad, (A - A.mean()) / (A.size - 1) / np.std(A, ddof=1))
    grad = tg.grad(lambda t: t.max(0).values.sum())(x)  # (values, indices) along dim 0
    np.testing.assert_allclose(grad, [[0, 0, 0], [1, 1, 1]])
    assert tg.trace(lambda t: t.std(), x)(A) == pytest.approx(np.std(A, ddof=1), rel=1e-14)
    assert tg.trace(lambda t: t.repeat(2, 1)[2:].sum(), x)(A) == pytest.approx(A.sum())
    assert tg.grad(lambda t: (t * 1.0).sort()[0][-1, -1])(x)[1, 1] == 1.0  # (values, indices)


def test_pytorch_keywords_keep_pytorch_meanings_inside_numpy_code():
    def f(a):
        values, indices = a.max(dim=1)
        assert list(indices.tolist()) == [2, 1]
        s = a.sort(dim=0, descending=True).values
        return values.sum() + a.std(dim=0).sum() + a.var(unbiased=True) + s[0, 0]

    want = A.max(1).sum() + A.std(0, ddof=1).sum() + A.var(ddof=1) + A[:, 0].max()
    assert tg.value_and_grad(f)(A)[0] == pytest.approx(want, rel=1e-14)
    assert len(tg.grad(lambda a: a.nonzero(as_tuple=False).sum() * 0.0 + a.sum())(A)) == 2


def test_outside_transforms_the_methods_are_pytorch_s():
    x = tg.tensor(A)
    assert x.std().item() == pytest.approx(np.std(A, ddof=1), rel=1e-14)
    assert x.max(0).indices.tolist() == [1, 1, 1]
    assert x.repeat(2, 1).shape == (4, 3)
    assert tuple(x.nonzero().shape) == (5, 2)
    assert x.item(1, 0) == 3.0


def test_numpy_methods_refuse_what_they_cannot_do():
    with pytest.raises(TypeError, match="initial= and where="):
        tg.grad(lambda a: a.max(axis=0, initial=1.0).sum())(A)
    with pytest.raises(TypeError, match="ndarray.std"):
        tg.grad(lambda a: a.std(dtype=np.float32))(A)
    with pytest.raises(RuntimeError, match="in-place change of a differentiated input"):
        tg.grad(lambda a: (a.sort(), a.sum())[1])(A)  # sorting f's own argument in place


def test_numpy_methods_a_tensor_cannot_have_say_what_to_use():
    for name, fix in [("resize", "np.resize"), ("strides", "a.shape"), ("tobytes", "buffer")]:
        with pytest.raises(AttributeError, match=f"ndarray.{name} is not supported.*{fix}"):
            tg.grad(lambda a, name=name: getattr(a, name) and a.sum())(A)
    with pytest.raises(IndexError, match="put: index out of bounds"):
        tg.grad(lambda a: (a * 1.0).put([6], 1.0))(A)
    with pytest.raises(TypeError, match="take: out= is not supported"):
        tg.grad(lambda a: a.take([0], out=np.zeros(1)).sum())(A)
    assert not hasattr(tg.tensor(A), "strides")  # (AttributeError: hasattr stays False)
    for name in ("device",):  # NumPy's inside NumPy code only (PyTorch's differs)
        with pytest.raises(AttributeError, match=f"PyTorch's Tensor.{name} is not supported"):
            getattr(tg.tensor(A), name)
        with pytest.raises(AttributeError, match=f"PyTorch's Tensor.{name} is not supported"):
            tg.grad(lambda x, name=name: getattr(x, name) and x.sum())(tg.tensor(A))
    # put: NumPy's (in place, None) in NumPy code, PyTorch's (a new Tensor) elsewhere
    t = tg.tensor(A).put(tg.tensor([0]), tg.tensor([9.0]))
    assert t.numpy().flat[0] == 9.0 and tg.tensor(A).numpy().flat[0] == A.flat[0]


def test_the_new_numpy_methods_keep_pytorch_s_meaning_in_pytorch_code():
    torch = pytest.importorskip("torch")
    t = torch.tensor(A)
    for f in [
        lambda x: x.sum(0, True),  # keepdim, not dtype
        lambda x: x.mean(1, True),
        lambda x: x.prod(dim=0, keepdim=True),
        lambda x: x.argsort(1, True),  # descending, not kind
        lambda x: x.argsort(dim=0),
        lambda x: x.diagonal(1),
        lambda x: x.trace(),
    ]:
        want = f(t).numpy()
        for got in (f(tg.tensor(A)).numpy(), tg.trace(f, tg.tensor(A))(A)):
            np.testing.assert_allclose(got, want, rtol=1e-15)
    # the gradients of PyTorch code called with Tensors, as torch's
    tt = torch.tensor(A, requires_grad=True)
    (tt.sum(0, True) * torch.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    g = tg.grad(lambda x: (x.sum(0, True) * tg.tensor([[1.0, 2.0, 3.0]])).sum())(tg.tensor(A))
    np.testing.assert_array_equal(g, tt.grad.numpy())
