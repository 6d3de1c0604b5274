"""Finite-difference gradient checks of every case of the op case database (``op_cases.py``).

Every non-internal op of the spec must have cases there: a new row without one fails
``test_every_op_has_gradcheck_cases``.  Each case names the op it exercises and the test checks
that the op really lands on the tape, that the forward value matches NumPy, and that
``tg.gradcheck`` agrees with central differences.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops.spec import CODE, OPS

from op_cases import ALL_CASES, INTERNAL

TESTED_OPS = [op.name for op in OPS if op.name not in INTERNAL]


# ---- the tests ---------------------------------------------------------------------------------


def _recorded_ops(fn, inputs):
    """Names of the ops that calling ``fn`` on fresh leaves records (the rows its output's
    graph reaches: a reclaim of earlier rows mid-case renumbers the tape), and its output."""
    for _ in range(2):  # a full tape may reset mid-case: then record again on the new one
        leaves = [tg.tensor(a, requires_grad=True) for a in inputs]
        tape = tg.current_tape()
        out = fn(*leaves)
        if tg.current_tape() is tape and getattr(out, "_tape", None) is tape:
            names, seen, todo = set(), set(), [out._row]
            while todo:
                r = todo.pop()
                if r < 0 or r in seen:
                    continue
                seen.add(r)
                names.add(OPS[tape.op(r)].name)
                todo.extend(tape.operands(r))
            return names, out
    raise AssertionError("the tape was reset twice while recording one small case")


@pytest.mark.parametrize("name", TESTED_OPS)
def test_every_op_has_gradcheck_cases(name):
    assert any(c.op == name for c in ALL_CASES), f"op {name} of the table has no gradcheck case"


@pytest.mark.parametrize("c", ALL_CASES, ids=[f"{c.op}-{c.label}" for c in ALL_CASES])
def test_gradcheck(c):
    names, out = _recorded_ops(c.fn, c.inputs)
    assert c.op in names, f"case {c.label!r} does not record {c.op} (recorded {sorted(names)})"
    if c.ref is not None:
        with np.errstate(all="ignore"):
            expect = c.ref(*[a.copy() for a in c.inputs])
        assert out.shape == np.shape(expect)
        np.testing.assert_allclose(out.numpy(), expect, rtol=1e-12, atol=1e-12)
    assert tg.gradcheck(c.fn, [a.copy() for a in c.inputs])


# ---- exact values where finite differences cannot look -------------------------------------------


def _grad_of(fn, value):
    x = tg.tensor(value, requires_grad=True)
    fn(x).backward()
    return x.grad.numpy()


def test_max_min_ties_split_the_gradient_evenly():
    v = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(
        _grad_of(lambda x: x.amax(axis=1).sum(), v), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]
    )
    np.testing.assert_array_equal(
        _grad_of(lambda x: x.amin(axis=0).sum(), v), [[1.0, 0, 0], [0, 1.0, 1.0]]
    )
    np.testing.assert_array_equal(
        _grad_of(lambda x: x.amin(axis=0).sum(), v[::-1].T.copy()),
        [[1 / 3, 1.0], [1 / 3, 0], [1 / 3, 0]],
    )
    np.testing.assert_array_equal(_grad_of(lambda x: x.max(), v), [[0, 0.5, 0.5], [0, 0, 0]])
    np.testing.assert_array_equal(
        _grad_of(lambda x: x.amin(), [[2.0, 2.0], [5.0, 2.0]]), [[1 / 3, 1 / 3], [0, 1 / 3]]
    )


def test_maximum_minimum_ties_split_the_gradient_evenly():
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tg.tensor([1.0, 5.0, 0.0], requires_grad=True)
    (tg.maximum(a, b) * tg.tensor([1.0, 2.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 2.0, 0.0])
    a.grad = b.grad = None
    tg.minimum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0, 1.0])


def test_prod_gradient_with_zeros_is_exact():
    np.testing.assert_array_equal(_grad_of(lambda x: x.prod(), [2.0, 0.0, 3.0]), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(_grad_of(lambda x: x.prod(), [2.0, 0.0, 0.0]), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(
        _grad_of(lambda x: x.prod(axis=1).sum(), [[2.0, 0.0, 5.0], [1.0, 2.0, 3.0]]),
        [[0.0, 10.0, 0.0], [6.0, 3.0, 2.0]],
    )


def test_repeated_integer_indices_accumulate():
    np.testing.assert_array_equal(
        _grad_of(lambda x: x[[0, 0, 2, 0]].sum(), [1.0, 2.0, 3.0]), [3.0, 0.0, 1.0]
    )
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    np.testing.assert_array_equal(
        _grad_of(lambda x: (x[np.array([[1, 1], [0, 1]])].reshape(4) * w).sum(), [5.0, 7.0]),
        [100.0, 1011.0],
    )


def test_boolean_mask_gradient_scatters_back():
    m = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(
        _grad_of(lambda x: (x[m] * np.array([2.0, 3.0])).sum(), [[1.0, 2.0], [3.0, 4.0]]),
        [[2.0, 0.0], [0.0, 3.0]],
    )


def test_where_routes_gradient_to_the_chosen_branch_only():
    a = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = tg.tensor([4.0, 5.0, 6.0], requires_grad=True)
    tg.where(a > 0, a * 2.0, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 1.0, 0.0])


def test_clip_gradient_is_one_inside_zero_outside():
    np.testing.assert_array_equal(
        _grad_of(lambda x: tg.clip(x, -1.0, 1.0).sum(), [-3.0, -0.5, 0.5, 3.0]),
        [0.0, 1.0, 1.0, 0.0],
    )


def test_pow_scalar_exponent_zero_and_rpow_values():
    np.testing.assert_array_equal(_grad_of(lambda x: (x**0).sum(), [0.0, 2.0]), [0.0, 0.0])
    np.testing.assert_allclose(
        _grad_of(lambda x: (2.0**x).sum(), [0.0, 3.0]), [np.log(2.0), 8.0 * np.log(2.0)], rtol=1e-15
    )
    np.testing.assert_allclose(_grad_of(lambda x: (x**3).sum(), [-2.0, 0.0]), [12.0, 0.0])
    # a zero base: d/dy 0 ** y is 0 for y > 0 (0 ** y is constant there) and the one-sided
    # limit -inf at y = 0 (0 ** 0 = 1 jumps to 0), scalar or tensor base alike; PyTorch takes
    # 0 there too, which makes d/dx x ** x at 0 come out 0 instead of -inf
    want = [-np.inf, 0.0, 0.0]
    np.testing.assert_array_equal(_grad_of(lambda y: (0.0**y).sum(), [0.0, 1.0, 2.5]), want)
    np.testing.assert_array_equal(
        _grad_of(lambda y: (tg.zeros(3) ** y).sum(), [0.0, 1.0, 2.5]), want
    )


# ---- gradcheck must be able to fail --------------------------------------------------------------


def test_gradcheck_catches_a_wrong_gradient_and_names_input_and_element():
    # d/db of b * b.detach() is b on the tape but 2b numerically: wrong only at b[2]
    def f(a, b):
        return a * b + b[2] * b[2].detach()

    with pytest.raises(AssertionError, match=r"input 1 .*element \(2,\)") as err:
        tg.gradcheck(f, [np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])])
    assert "analytic" in str(err.value) and "numeric" in str(err.value)


def test_gradcheck_catches_a_custom_op_with_a_bad_backward():
    from tapegrad.core.tensor import record_unary

    def bad_exp2(x):  # records EXP (backward: adj * value) for exp(2x): off by a factor 2
        return record_unary(x, CODE["EXP"], np.exp(2.0 * np.asarray(x._v)))

    with pytest.raises(AssertionError, match=r"input 0 \(shape \(2, 2\)\)"):
        tg.gradcheck(bad_exp2, [np.full((2, 2), 0.3)])
    # the same function written with correct ops passes
    assert tg.gradcheck(lambda x: tg.exp(2.0 * x), [np.full((2, 2), 0.3)])


def test_gradcheck_catches_a_missing_gradient():
    with pytest.raises(AssertionError, match="input 0"):
        tg.gradcheck(lambda x: x.detach() * 3.0 + 0.0 * x, [np.array([1.0, 2.0])])


def test_gradcheck_tolerances_are_used_and_inputs_left_alone():
    def slightly_wrong(x):  # gradient off by 1e-4 * x
        return x * x + 1e-4 * x * x.detach()

    x0 = np.array([1.0, -2.0, 0.5])
    kept = x0.copy()
    assert tg.gradcheck(slightly_wrong, [x0], atol=1e-3, rtol=1e-3)
    with pytest.raises(AssertionError, match=r"input 0 .*element \(\d,\)"):
        tg.gradcheck(slightly_wrong, [x0], atol=1e-7, rtol=0.0)
    np.testing.assert_array_equal(x0, kept)
    t = tg.tensor([0.3, 0.7], requires_grad=True)  # Tensor inputs are accepted too
    assert tg.gradcheck(lambda a, b: (a * b).sin(), [t, tg.tensor([1.5, -1.0])])
    assert t.grad is None


def test_gradcheck_flags_a_nan_gradient():
    with np.errstate(all="ignore"):
        with pytest.raises(AssertionError, match="input 0"):
            tg.gradcheck(lambda x: x * (x.detach() * np.inf - np.inf) + x, [np.array([1.0])])
