"""A two-operand elementwise op with an operand of one value records one row: the kernels
broadcast that value over the row (no VIEW row), and its gradient is the sum over the row.

Every result is compared with the same function computed through an explicit broadcast
(``tg.broadcast_to``: a VIEW row, the route every other broadcast takes), in every kernel
mode: compiled, the plain-Python twin and the NumPy stand-in of the reverse sweep."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.kernels import loader

from op_cases import BINARY_FN, CASES

SIDES = [k for k in CASES if k.split()[-1] in ("scalar-left", "scalar-right")]


def _via_view(fn, inputs):
    """``fn`` with its scalar operand broadcast to the other's shape by a VIEW row first."""
    i = next(k for k, x in enumerate(inputs) if np.ndim(x) == 0)
    shape = np.shape(inputs[1 - i])

    def g(*xs):
        xs = list(xs)
        xs[i] = tg.broadcast_to(xs[i], shape)
        return fn(*xs)

    return g


def _results(fn, inputs):
    """Value, reverse (Tensor.backward and tg.grad), forward, second and third order, the
    compiled Hessian and a traced replay at other inputs."""

    def loss(*xs):
        y = fn(*xs)
        return (y * np.linspace(0.5, 1.5, np.size(y)).reshape(np.shape(y))).sum()

    argnums = (0, 1)
    tangents = [0.3 + 0.1 * np.arange(np.size(x)).reshape(np.shape(x)) for x in inputs]
    out = {"value": fn(*[tg.tensor(x) for x in inputs]).numpy()}
    w = [tg.tensor(x, requires_grad=True) for x in inputs]
    loss(*w).backward()
    out["backward"] = [x.grad.numpy() for x in w]
    out["grad"] = tg.grad(loss, argnums=argnums)(*inputs)
    out["jvp"] = tg.jvp(fn, tuple(inputs), tuple(tangents))
    out["hessian"] = tg.hessian(loss, argnums=argnums)(*inputs)
    out["second (create_graph)"] = tg.grad(
        lambda *xs: tg.grad(loss, argnums=argnums)(*xs)[0].sum(), argnums=argnums
    )(*inputs)
    out["third (create_graph)"] = tg.grad(
        lambda *xs: tg.grad(lambda *ys: tg.grad(loss, argnums=0)(*ys).sum(), argnums=1)(*xs).sum(),
        argnums=argnums,
    )(*inputs)
    tr = tg.trace(loss, *inputs)
    moved = [x * 0.9 + 0.05 for x in inputs]
    out["replay"] = tr(*moved)
    out["replay grad"] = tr.grad(*moved)
    out["replay hvp"] = tr.hvp(*moved, tangents[0])
    return out


def _flat(tree):
    if isinstance(tree, (list, tuple)):
        return np.concatenate([_flat(x) for x in tree]) if tree else np.zeros(0)
    return np.ravel(np.asarray(tree, float))


@pytest.mark.parametrize("name", SIDES)
@pytest.mark.parametrize("mode", ["eager", "python", "numpy"])
def test_scalar_operand_equals_an_explicit_broadcast(name, mode):
    fn, inputs = CASES[name]
    with loader.mode(mode):
        got = _results(fn, inputs)
        want = _results(_via_view(fn, inputs), inputs)
    for key in want:
        np.testing.assert_allclose(
            _flat(got[key]), _flat(want[key]), rtol=1e-12, atol=1e-12, err_msg=f"{name}: {key}"
        )


@pytest.mark.parametrize("op", sorted(BINARY_FN))
def test_a_scalar_operand_records_no_broadcast_row(op):
    x = tg.tensor(np.linspace(0.6, 1.4, 6).reshape(2, 3), requires_grad=True)
    s = tg.tensor(1.3, requires_grad=True)
    for y in (BINARY_FN[op](x, s), BINARY_FN[op](s, x)):
        assert y.shape == (2, 3)
        # the op's node takes both leaves directly: no broadcast node between
        assert [type(f).__name__ for f, _ in y.grad_fn.next_functions] == ["AccumulateGrad"] * 2


def test_a_scalar_from_numpy_code_records_no_broadcast_row():
    """tg.grad of plain NumPy code: the scalar parameter times the data array."""
    x = np.linspace(-1.0, 1.0, 50)
    y = 0.5 * x + 0.2

    def mse(w, b):
        return np.mean((w * x + b - y) ** 2)

    gw, gb = tg.grad(mse, argnums=(0, 1))(1.5, -0.3)
    r = 1.5 * x - 0.3 - y
    np.testing.assert_allclose([gw, gb], [np.mean(2 * r * x), np.mean(2 * r)], rtol=1e-13)
