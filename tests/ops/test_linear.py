"""Linear ops declared by an index map (``ops/structural/index_maps.py``), on recorded rows: the
map's two spellings agree, each op's backward is the transpose of its forward (compiled and
Python twin), the lane kernels and the vectorised backward do what the one-lane kernels do, and
a sum replays in NumPy's pairwise order."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.core.functions import scatter_add
from tapegrad.kernels import sweeps
from tapegrad.ops.decl import Linear
from tapegrad.ops.spec import CODE, OPS

LINEAR = {o.name: o for o in OPS if isinstance(o, Linear)}

# (op recorded last, input shape, function): strided views of every kind, reductions whose
# reduced axes are inner, outer and mixed, indexing with repeats, a scatter with repeats
CASES = {
    "VIEW broadcast": ("VIEW", (4, 1), lambda x: tg.broadcast_to(x, (3, 4, 5))),
    "VIEW bias row": ("VIEW", (5,), lambda x: tg.broadcast_to(x, (6, 5))),
    "VIEW transpose": ("VIEW", (3, 4, 2), lambda x: tg.transpose(x, (2, 0, 1))),
    "VIEW reversed slice": ("VIEW", (5, 4), lambda x: x[1::2, ::-1]),
    "VIEW one entry": ("VIEW", (5, 4), lambda x: x[2, 1]),
    "RESHAPE": ("RESHAPE", (3, 4), lambda x: x.reshape(2, 6)),
    "SUM inner axes": ("SUM", (3, 4, 5), lambda x: x.sum(axis=(1, 2))),
    "SUM outer axis": ("SUM", (3, 4, 5), lambda x: x.sum(axis=0)),
    "SUM middle axis": ("SUM", (3, 40, 2), lambda x: x.sum(axis=1)),
    "SUM everything": ("SUM", (300,), lambda x: x.sum()),
    "SUM empty": ("SUM", (0, 3), lambda x: x.sum(axis=0)),
    "GATHER repeats": ("GATHER", (6,), lambda x: x[np.array([0, 5, 5, 2])]),
    "SCATTER repeats": ("SCATTER", (4,), lambda x: scatter_add(x, [1, 3, 1, 0], (2, 3))),
    "SCATTER to one entry": ("SCATTER", (5,), lambda x: scatter_add(x, [0] * 5, (1,))),
}


def _row(name):
    op_name, shape, f = CASES[name]
    rng = np.random.default_rng(len(name))
    x = tg.tensor(rng.standard_normal(shape), requires_grad=True)
    y = f(x)
    t = tg.current_tape()
    r = y._row
    assert int(t.code[r]) & 255 == CODE[op_name]
    na, n = int(np.prod(shape, dtype=np.int64)), int(np.asarray(y.numpy()).size)
    return LINEAR[op_name], t, r, na, n, x, y


def _kernels(op, compiled):
    low = op.name.lower()
    if compiled:
        return {k: getattr(sweeps, f"{low}_{k}") for k in ("forward", "backward")} | {
            "lanes": getattr(sweeps, f"{low}_tangent_lanes"),
            "back_lanes": getattr(sweeps, f"{low}_backward_tangent_lanes"),
        }
    return {
        "forward": op.forward,
        "backward": op.backward,
        "lanes": op.tangent_lanes,
        "back_lanes": op.backward_tangent_lanes,
    }


def test_every_linear_op_has_a_case():
    assert {c[0] for c in CASES.values()} == set(LINEAR)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_two_spellings_of_the_map_agree(name):
    op, t, r, na, n, *_ = _row(name)
    if op.index is None:
        assert op.offsets is None and na == n
        return
    p = int(t.ip[r])
    np.testing.assert_array_equal(np.asarray(op.offsets(t.ipool, p)), op.index(t.ipool, p))
    np.testing.assert_array_equal(
        np.asarray(getattr(sweeps, op.offsets.__name__)(t.ipool, p)), op.index(t.ipool, p)
    )


@pytest.mark.parametrize("compiled", [False, True], ids=["twin", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_is_the_transpose_of_forward(name, compiled):
    op, t, r, na, n, x, y = _row(name)
    k = _kernels(op, compiled)
    p, lo, pa = int(t.ip[r]), na, 0
    rng = np.random.default_rng(7)
    u, w = rng.standard_normal(na), rng.standard_normal(n)
    buf = np.concatenate([u, np.full(n, np.nan)])
    k["forward"](buf, buf, buf, buf, False, lo, n, pa, -1, p, t.voff, t.ipool, t.fpool)
    ju = buf[lo:]
    # the forward is the op: the recorded value from the recorded operand
    fwd = np.concatenate([np.asarray(x.numpy(), float).ravel(), np.zeros(n)])
    k["forward"](fwd, fwd, fwd, fwd, False, lo, n, pa, -1, p, t.voff, t.ipool, t.fpool)
    np.testing.assert_allclose(fwd[lo:], np.asarray(y.numpy(), float).ravel(), rtol=1e-14)
    # acc adds onto what is there
    acc = np.concatenate([u, np.ones(n)])
    k["forward"](acc, acc, acc, acc, True, lo, n, pa, -1, p, t.voff, t.ipool, t.fpool)
    np.testing.assert_allclose(acc[lo:], ju + 1.0, rtol=1e-14, atol=1e-15)
    # the backward adds J^T w into the operand's adjoint: <J u, w> = <u, J^T w>
    G = np.concatenate([np.zeros(na), w])
    adj = np.concatenate([np.full(na, 0.5), np.zeros(n)])
    state, rg = np.zeros(2, np.int64), np.ones(2, np.int8)
    status = k["backward"](
        G, G, G, G, adj, lo, n, pa, -1, 0, -1, p, t.voff, rg, state, t.ipool, t.fpool, 0
    )
    assert status == 0 and state[0] & 1
    jtw = adj[:na] - 0.5
    assert float(ju @ w) == pytest.approx(float(u @ jtw), rel=1e-12, abs=1e-12)
    # the lanes: every lane as the one-lane kernels (``ra``, the operand's row, gives its size
    # through voff: a sum to one entry reads it there)
    ra = ((int(t.code[r]) >> 8) & 0xFFFFFFF) - 1
    flag = np.ones(t.n, np.int8)
    lanes = np.stack([buf.copy() for _ in range(3)])
    lanes[1, :na] *= -2.0
    k["lanes"](buf, lanes, flag, lo, n, pa, -1, ra, -1, p, t.voff, t.ipool, t.fpool)
    np.testing.assert_allclose(lanes[0, lo:], ju, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(lanes[1, lo:], -2.0 * ju, rtol=1e-14, atol=1e-14)
    tadjs = np.stack([np.concatenate([np.zeros(na), w]), np.concatenate([np.zeros(na), 3 * w])])
    rg, state = np.ones(t.n, np.int8), np.zeros(t.n, np.int64)
    k["back_lanes"](
        adj, tadjs, buf, lanes, flag, lo, n, pa, -1, ra, -1, p, t.voff, rg, state, t.ipool,
        t.fpool,
    )  # fmt: skip
    np.testing.assert_allclose(tadjs[0, :na], jtw, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tadjs[1, :na], 3 * jtw, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_vectorised_backward_is_the_kernels(name):
    op, t, r, na, n, *_ = _row(name)
    p, lo = int(t.ip[r]), na
    w = np.random.default_rng(3).standard_normal(n)
    expected = np.concatenate([np.zeros(na), w])
    state, rg = np.zeros(2, np.int64), np.ones(2, np.int8)
    op.backward(
        expected, expected, expected, expected, expected, lo, n, 0, -1, 0, -1, p, t.voff, rg,
        state, t.ipool, t.fpool, 0,
    )  # fmt: skip
    got = np.concatenate([np.zeros(na), w])
    op.vectorised_backward(got, lo, n, 0, p, t.ipool)
    np.testing.assert_allclose(got[:na], expected[:na], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("shape,axis", [((3, 1000), 1), ((1000,), None), ((7, 300, 1), (1, 2))])
def test_a_replayed_sum_adds_in_numpys_order(shape, axis):
    """NumPy adds a reduced inner run pairwise; the SUM kernel follows it, so a trace's replay
    gives NumPy's value (to the last bit on one machine; here within an ulp or two)."""
    x = np.random.default_rng(1).standard_normal(shape) * 1e3 + 1e8
    tr = tg.trace(lambda v: tg.sum(v, axis=axis), x)
    z = x[::-1].copy() if x.ndim == 1 else x * 1.01
    np.testing.assert_allclose(tr(z), np.sum(z, axis=axis), rtol=4e-16, atol=0)
