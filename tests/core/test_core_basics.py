import numpy as np
import pytest

import tapegrad as tg


def test_contract_first_example():
    x = tg.tensor([2.0, 3.0], requires_grad=True)
    (x**2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 6.0])


def test_scalar_chain_matches_analytic():
    x = tg.tensor(0.3, requires_grad=True)
    y = tg.sin(x) * x + tg.exp(x) / 2.0
    y.backward()
    expect = np.cos(0.3) * 0.3 + np.sin(0.3) + np.exp(0.3) / 2
    assert x.grad.item() == pytest.approx(expect, rel=1e-14)


def test_broadcast_gradient_sums_back():
    a = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (a * b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 5.0, 7.0])
    np.testing.assert_allclose(a.grad.numpy(), [[1, 2, 3], [1, 2, 3]])


def test_matmul_gradient():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3, 4))
    B = rng.standard_normal((4, 2))
    a = tg.tensor(A, requires_grad=True)
    b = tg.tensor(B, requires_grad=True)
    (a @ b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 2)) @ B.T)
    np.testing.assert_allclose(b.grad.numpy(), A.T @ np.ones((3, 2)))


@pytest.mark.parametrize(
    "sa, sb",
    [((5, 4), (4,)), ((4,), (4, 3)), ((4,), (4,)), ((300, 300), (300,)), ((300,), (300, 300))],
)
def test_matmul_with_a_vector_operand(sa, sb):
    """A vector operand is read as a row on the left, a column on the right: gradients,
    second order (create_graph) and the Hessian, small and through NumPy's BLAS (large)."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal(sa) * 0.1, rng.standard_normal(sb) * 0.1
    a, b = tg.tensor(A, requires_grad=True), tg.tensor(B, requires_grad=True)
    y = a @ b
    assert y.shape == np.shape(A @ B)
    (ga, gb) = tg.autograd.grad(tg.sin(y).sum(), (a, b), create_graph=True)
    c = np.cos(A @ B)
    np.testing.assert_allclose(
        ga.numpy(),
        np.multiply.outer(c, B) if A.ndim == 2 else B @ c if B.ndim == 2 else c * B,
        rtol=1e-12,
        atol=1e-15,
    )
    np.testing.assert_allclose(
        gb.numpy(),
        A.T @ c if A.ndim == 2 else np.multiply.outer(A, c) if B.ndim == 2 else c * A,
        rtol=1e-12,
        atol=1e-15,
    )
    if A.size <= 20:  # second order: the Hessian in b against its formula
        H = tg.hessian(lambda v: np.sum(np.sin(A @ v)))(B)
        s = -np.sin(A @ B)
        if A.ndim == 1 and B.ndim == 1:
            expect = s * np.outer(A, A)
        elif A.ndim == 2:
            expect = (A.T * s) @ A
        else:  # d2/dB[p,q]dB[r,t] of sum(sin(A @ B)) = -sin(y_q) A_p A_r [q == t]
            expect = np.einsum("q,pr,qt->pqrt", s, np.outer(A, A), np.eye(B.shape[1]))
        np.testing.assert_allclose(H, expect, rtol=1e-12, atol=1e-15)
    ((ga**2).sum() + (gb**2).sum()).backward()  # through the second-order graph
    if A.size <= 20:  # against central differences of the same sum of the analytic gradients

        def sq(A, B):
            c = np.cos(A @ B)
            ga = np.multiply.outer(c, B) if A.ndim == 2 else B @ c if B.ndim == 2 else c * B
            gb = A.T @ c if A.ndim == 2 else np.multiply.outer(A, c) if B.ndim == 2 else c * A
            return (ga**2).sum() + (gb**2).sum()

        h = 1e-6
        for X, grad, other in ((A, a.grad, 0), (B, b.grad, 1)):
            fd = np.zeros_like(X)
            for i in np.ndindex(X.shape):
                e = np.zeros_like(X)
                e[i] = h
                hi, lo = ((X + e, B), (X - e, B)) if other == 0 else ((A, X + e), (A, X - e))
                fd[i] = (sq(*hi) - sq(*lo)) / (2 * h)
            np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-9)


def test_gradcheck_runs():
    assert tg.gradcheck(lambda x: (tg.tanh(x) * x).sum(), [np.linspace(-1, 1, 5)])


def test_unary_rows_record_exactly_one_operand():
    x = tg.tensor(0.5, requires_grad=True)
    y = tg.sin(x * 2.0)
    t = tg.current_tape()
    assert t.operands(y._row)[1] == -1
    assert len(y.grad_fn.next_functions) == 1
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    assert len(y.grad_fn.next_functions[0][0].next_functions) == 1


def test_one_op_records_one_row():
    x = tg.tensor(0.5, requires_grad=True)
    y = x * 3.0
    t = tg.current_tape()
    n = len(t)
    z = tg.exp(y) + y
    assert len(t) == n + 2
    assert z.item() == pytest.approx(np.exp(1.5) + 1.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_backward_division_by_zero_follows_ieee_not_python():
    x = tg.tensor([1.0, 0.0], requires_grad=True)
    tg.log(x).sum().backward()  # d log(x) = 1/x: inf at 0, no ZeroDivisionError
    assert x.grad.numpy().tolist() == [1.0, np.inf]
    z = tg.tensor([0.0, 2.0], requires_grad=True)
    (1.0 / z).sum().backward()
    assert z.grad.numpy()[0] == -np.inf and z.grad.numpy()[1] == -0.25
    s = tg.tensor(0.0, requires_grad=True)
    tg.sqrt(s).backward()
    assert s.grad.item() == np.inf


def test_storing_traced_value_into_numpy_array_raises_instead_of_dropping_gradient():
    def scalar_store(x):
        out = np.zeros(2)
        out[0] = x[0] * x[1]
        return np.sum(out**2)

    def slice_store(x):
        out = np.zeros(2)
        out[:] = x * 2.0
        return np.sum(out)

    for f in (scalar_store, slice_store):
        with pytest.raises((TypeError, ValueError)) as info:
            tg.grad(f)(np.array([1.0, 2.0]))
        err = info.value if isinstance(info.value, TypeError) else info.value.__cause__
        assert "would silently drop its gradient" in str(err)


def test_deliberate_conversions_still_work():
    assert tg.grad(lambda x: x * 2.0 if x.item() > 0 else -x)(1.5) == 2.0
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])
    with pytest.raises(TypeError, match="requires grad"):
        np.asarray(x)  # as PyTorch: refused while it requires grad
    assert float(x[0]) == 1.0  # outside transforms float() reads the value
    y = tg.zeros(2)
    y[0] = x[0] * x[1]  # a Tensor destination keeps the gradient
    (y**2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 4.0])
    out = np.zeros(2)
    with tg.no_grad():
        out[0] = x[0]  # no gradient requested: allowed
    assert out[0] == 1.0


@pytest.mark.parametrize(
    "value,shape",
    [
        (0.5, (4,)),
        (np.arange(3.0), (2, 3)),
        (np.arange(2.0).reshape(2, 1), (3, 2, 4)),
        (np.arange(6.0).reshape(2, 3).T, (2, 3, 2)),  # not contiguous: NumPy's own
        (np.zeros((0, 1)), (0, 3)),
    ],
)
def test_broadcast_values_are_numpys(value, shape):
    """A broadcast operand's VIEW value is np.broadcast_to's, read-only, without a copy, and
    its gradient sums the copies back."""
    from tapegrad.core.elementwise import _broadcast_params, _broadcast_value

    a = np.asarray(value, np.float64)
    v = _broadcast_value(value, shape, _broadcast_params(a.shape, shape))
    np.testing.assert_array_equal(v, np.broadcast_to(a, shape))
    assert not v.flags.writeable
    if a.size and a.flags.c_contiguous and np.ndim(value):
        assert np.shares_memory(v, a)
    x = tg.tensor(value, requires_grad=True)
    (x * tg.tensor(np.ones(shape))).sum().backward()
    expect = np.broadcast_to(a, shape).size / max(a.size, 1) if a.size else 0.0
    np.testing.assert_allclose(x.grad.numpy(), np.full(a.shape, expect))


def test_a_scalar_parameter_accumulates_its_gradient_as_a_float_across_backwards():
    """A 0-d parameter's float ``.grad`` is added to in place of the array path (the same
    sum); a hook on it still sees and changes each contribution, and a zeroed grad restarts."""
    w = tg.tensor(0.5, requires_grad=True)
    x = tg.tensor([1.0, 2.0, 4.0])
    (w * x).sum().backward()
    (w * w * x).sum().backward()
    assert w.grad.shape == () and w.grad.item() == 7.0 + 2 * 0.5 * 7.0
    w.grad.zero_()
    (w * x).sum().backward()
    assert w.grad.item() == 7.0
    seen = []
    w.register_hook(lambda g: (seen.append(g.item()), g * 10.0)[1])
    (w * x).sum().backward()
    assert seen == [7.0] and w.grad.item() == 7.0 + 70.0
