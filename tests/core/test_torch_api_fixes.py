"""PyTorch meanings the hunt (test_torch_api_hunt.py) asks for, on the sides it does not check:
NumPy code keeps NumPy's meaning of the same spellings, and what stays refused says why."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

A = np.arange(6.0).reshape(2, 3)


def test_empty_dims_reduce_over_none_in_numpy_code():
    """NumPy's axis=() reduces over no axis: the methods and tg.sum keep that in NumPy code;
    dim= (PyTorch's keyword) still means every dim there."""

    def f(a):
        kept = a.sum(()) + a.mean(()) + tg.sum(a, ()) + a.std(())
        assert kept.shape == a.shape
        assert a.sum(dim=()).shape == ()
        return kept.sum()

    np.testing.assert_allclose(tg.grad(f)(A), np.full(A.shape, 3.0))


def test_empty_dims_reduce_over_all_in_torch_code():
    x = tg.tensor(A)
    for y in (x.sum(()), x.mean([]), x.amax(()), x.std(()), tg.sum(x, ()), tg.mean(x, dim=[])):
        assert y.shape == ()
    assert x.count_nonzero(()).item() == 5


def test_numpy_code_keeps_numpy_scans_and_clip():
    def f(a):
        assert a[0, 0].cumsum().shape == (1,)  # NumPy's: a 0-d value scanned flat
        return a.cumsum(0).sum()

    np.testing.assert_allclose(tg.grad(f)(A), [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    # np.clip at a tie with an array bound shares the gradient (PyTorch's clamp gives x all)
    ga, gb = tg.grad(lambda a, b: a.clip(b, 10.0).sum(), argnums=(0, 1))(A, A.copy())
    np.testing.assert_allclose(ga, np.full(A.shape, 0.5))
    np.testing.assert_allclose(gb, np.full(A.shape, 0.5))


def test_integer_results_are_exact_int64():
    big = tg.tensor([2**53 + 1, 2])
    assert big.cumsum(0).tolist() == [2**53 + 1, 2**53 + 3]
    assert big.cumprod(0).tolist() == [2**53 + 1, 2**54 + 2]
    assert big.div(2, rounding_mode="floor").tolist() == [2**52, 1]
    assert tg.tensor([-7, 7]).div(2, rounding_mode="trunc").tolist() == [-3, 3]
    assert tg.tensor([-7, 7]).div(2, rounding_mode="floor").tolist() == [-4, 3]
    assert tg.tensor([1, 5, -3]).clamp(0, 2).dtype == np.int64
    assert tg.round(tg.tensor([1, 2])).dtype == np.int64
    assert np.round(tg.tensor([15, 25]), -1).tolist() == [20, 20]  # NumPy's integer rounding
    with pytest.raises(ZeroDivisionError, match="rounding_mode"):
        tg.tensor([1]).div(0, rounding_mode="floor")


def test_creation_dtypes():
    assert tg.full((2,), 3).dtype == np.int64
    assert tg.full((2,), True).dtype == bool
    assert tg.full((2,), 3, requires_grad=True).dtype == np.float64
    assert tg.zeros_like(tg.tensor([1, 2])).dtype == np.int64
    assert tg.zeros_like([1, 2]).dtype == np.float64
    assert tg.ones(2, dtype=tg.int64).tolist() == [1, 1]
    assert tg.linspace(0, 1, steps=3).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(TypeError, match="linspace.*steps"):  # steps is PyTorch's third
        tg.linspace(0, 1, 3, steps=3)


def test_clamp_with_crossed_bounds_gives_max_and_no_gradient():
    x = tg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y = x.clamp(0.5, -0.5)
    assert y.tolist() == [-0.5, -0.5, -0.5]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_clamp_at_a_tensor_bound_gives_x_the_gradient():
    x = tg.tensor([0.5, -0.5], requires_grad=True)
    lo = tg.tensor([0.5, -1.0], requires_grad=True)
    hi = tg.tensor([1.0, -0.5], requires_grad=True)
    x.clamp(lo, hi).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert lo.grad.tolist() == [0.0, 0.0] and hi.grad.tolist() == [0.0, 0.0]


def test_median_ties_share_the_gradient():
    x = tg.tensor([2.0, 1.0, 2.0, 3.0, 2.0], requires_grad=True)
    m = x.median()
    assert m.item() == 2.0
    m.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3, 0.0, 1 / 3, 0.0, 1 / 3])


def test_where_with_the_condition_alone_is_nonzero():
    rows, cols = tg.where(tg.tensor([[True, False], [False, True]]))
    assert rows.tolist() == [0, 1] and cols.tolist() == [0, 1]
    with pytest.raises(TypeError, match="both x and y"):
        tg.where(tg.tensor([True]), 1.0)


def test_einsum_list_only_outside_numpy_code():
    a, b = tg.tensor(A), tg.tensor(A.T)
    np.testing.assert_allclose(tg.einsum("ij,jk", [a, b]).numpy(), A @ A.T)


def test_quantile_keeps_numpy_with_its_keywords_and_in_numpy_code():
    assert float(tg.quantile(A, 0.5)) == 2.5
    np.testing.assert_allclose(tg.quantile(tg.tensor(A), 0.5, dim=1).numpy(), [1.0, 4.0])
    np.testing.assert_allclose(tg.quantile(tg.tensor(A), 0.5, axis=1).numpy(), [1.0, 4.0])
    g = tg.grad(lambda a: tg.quantile(a, 0.5, 1).sum())(A)  # NumPy's (a, q, axis)
    np.testing.assert_allclose(g, [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


def test_trace_of_a_tensor_names_the_matrix_trace():
    with pytest.raises(TypeError, match=r"x\.trace\(\)"):
        tg.trace(tg.eye(2))
    tr = tg.trace(lambda x: (x * x).sum(), np.array([1.0, 2.0]))  # the recorder is unchanged
    assert tr(np.array([3.0, 4.0])) == 25.0


def test_diagonal_of_a_3d_tensor_is_a_view():
    x = tg.tensor(np.arange(24.0).reshape(2, 3, 4))
    d = x.diagonal(1, 0, 2)
    np.testing.assert_array_equal(d.numpy(), np.diagonal(x.numpy(), 1, 0, 2))
    d.mul_(0.0)
    assert x[0, 0, 1].item() == 0.0 and x[1, 2, 2].item() == 0.0
    with pytest.raises(RuntimeError, match="dim1 and dim2"):
        x.diagonal(0, 1, 1)


def test_pad_refusals_name_the_limit():
    x = tg.tensor([[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="less than the size"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="no value="):
        F.pad(x, (1, 0), mode="replicate", value=1.0)
    with pytest.raises(ValueError, match="wraps around more than once"):
        F.pad(x, (-1, 3), mode="circular")


def test_matrix_power_0_backward_runs():
    a = tg.tensor(np.eye(2) * 2.0, requires_grad=True)
    tg.linalg.matrix_power(a, 0).sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
