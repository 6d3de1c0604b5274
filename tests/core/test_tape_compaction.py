"""Compaction: a held graph above unreachable rows keeps only what it can reach, moved down.

Every test compares with the same program run without compaction (values and gradients), so
a row renumbered wrongly, a parameter block moved without its row or a handle that follows to
the wrong row shows as a wrong number, not just as a crash."""

import numpy as np
import pytest
from fresh_tape import on_fresh_tape

import tapegrad as tg
from tapegrad.core import compaction
from tapegrad.core import tape as T
from tapegrad.core.tensor import tape_of
from tapegrad.ops.spec import C

rng = np.random.default_rng(7)


@pytest.fixture
def explicit_compactions_only(monkeypatch):
    """Reclaims never reach compaction by themselves (they retry for ever), so a test
    compacts exactly where it says."""
    monkeypatch.setattr(T, "RECLAIM_RETRIES", 10**9)


def _garbage(w, n=2_000):
    """An evaluation loop's rows: each iteration's result is held until the next replaces
    it, so the rows of all but the last (6,000 rows: more than two token ranges of 2,048)
    are below a held graph and unreachable.  Returns the last result (the caller holds it)."""
    top = None
    for _ in range(n):
        top = (w * 1.5 + 0.25).sum()
    return top


def _compact():
    """Compact the current tape; returns the successor (None: nothing was done)."""
    return tg.current_tape().compact()


def _program(w, b, X, steps):
    """A program that keeps handles from many points of its recording: ops whose parameters
    name rows (where, concatenate, clip's float, shapes), large lazy rows, matmuls, and
    scalar rows; ``steps`` runs after each stage (garbage, and a compaction or not)."""
    h = tg.tanh(X @ w + b)  # matmul (ipool), a broadcast bias, a large lazy row
    steps(w)
    g = tg.where(h > 0, h * 2.0, -h)  # WHERE: a condition row in its parameters
    steps(w)
    c = tg.concatenate([g, h[:, :3]], axis=1)  # CONCAT: operand rows in its parameters
    steps(w)
    d = tg.clip(c, -0.5, 0.7).reshape(c.shape[0], -1, 1)  # CLIP's fpool, a shape block
    steps(w)
    s = (d * d).sum() + (w * w).sum() * 0.1 + tg.sin(b).sum()
    steps(w)
    return s


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_a_program_compacted_between_its_stages_gives_the_same_values_and_gradients():
    X = rng.standard_normal((80, 60))  # 80 x 40 results: rows of 3,200 values; 4,800 lazy
    w0 = rng.standard_normal((60, 40)) * 0.3
    b0 = rng.standard_normal(40) * 0.1

    def run(compact):
        w = tg.tensor(w0.copy(), requires_grad=True)
        b = tg.tensor(b0.copy(), requires_grad=True)
        done, below = [], []

        def steps(w):
            # the garbage recorded before the last stage is dropped, so that stage's rows
            # (and its parameters naming rows) move down and are renumbered
            below.clear()
            below.append(_garbage(w))  # held above the stage, like a loop's latest output
            if compact:
                done.append(_compact() is not None)

        steps(w)
        s = _program(w, b, tg.tensor(X), steps)
        s.backward()
        return s.item(), w.grad.numpy(), b.grad.numpy(), done

    want = run(False)
    got = run(True)
    assert got[3] and all(got[3]), got[3]  # every stage compacted
    assert got[0] == pytest.approx(want[0], rel=1e-14)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13, atol=1e-15)


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_handles_follow_through_successive_compactions():
    x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    a = tg.exp(x) * 2.0  # held across all three compactions
    top = _garbage(x)
    first = _compact()
    assert first is not None and a._tape is not first  # a follows when next used
    b = tg.sin(x) + a  # a's row is read on the successor
    top = _garbage(x)
    assert _compact() is not None
    c = a * b  # a, recorded two compactions ago, and b one ago
    top = _garbage(x)
    assert _compact() is not None
    del top
    loss = (c * c).sum()
    loss.backward()
    v = np.array([0.5, -1.0, 2.0])
    A, B = 2 * np.exp(v), np.sin(v) + 2 * np.exp(v)
    C = A * B
    dC = 2 * C
    want = dC * (2 * np.exp(v) * B + A * (np.cos(v) + 2 * np.exp(v)))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-13)
    assert loss.item() == pytest.approx(float((C * C).sum()), rel=1e-14)


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_a_freed_graph_still_refuses_a_second_backward_after_a_compaction():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    keep = (w * 3.0).sum()  # held and not yet swept: kept
    top = _garbage(w)
    assert _compact() is not None
    del top
    with pytest.raises(RuntimeError, match="second time|freed"):
        loss.backward()
    w.grad = None
    keep.backward()
    assert w.grad.tolist() == [3.0, 3.0]


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_leaves_move_with_their_rows_and_accumulate_once():
    w = tg.tensor([1.0, -2.0], requires_grad=True)
    y = (w * w).sum()  # w is entered below the garbage
    top = _garbage(w)
    t = _compact()
    assert t is not None and w._tape is t and t.entered(w._row) is w
    z = y + (w * 4.0).sum() + top * 0.0  # w's moved row is read again, not entered twice
    z.backward()
    assert w.grad.tolist() == [6.0, 0.0]


@on_fresh_tape
def test_nothing_is_compacted_inside_a_transform_or_while_a_backward_records():
    seen = []

    def f(v):
        acc = 0.0
        for k in range(40):
            acc = acc + np.sum(np.sin(v * (k + 1.0)))
            seen.append(tg.current_tape().compact())
        return acc

    v = np.array([0.3, 0.7])
    g = tg.grad(f)(v)
    want = sum((k + 1.0) * np.cos(v * (k + 1.0)) for k in range(40))
    np.testing.assert_allclose(g, want, rtol=1e-13)
    assert seen and all(s is None for s in seen)
    H = tg.hessian(f)(v)
    np.testing.assert_allclose(
        H, np.diag([-sum((k + 1.0) ** 2 * np.sin(x * (k + 1.0)) for k in range(40)) for x in v])
    )


@on_fresh_tape
def test_a_loop_holding_its_latest_output_compacts_and_its_last_graph_still_differentiates():
    lin = tg.nn.Linear(20, 30)
    X = tg.tensor(rng.standard_normal((50, 20)))
    t0 = tg.current_tape()
    most = 0
    for _ in range(2_000):
        out = tg.relu(lin(X))  # held until the next iteration replaces it
        most = max(most, len(tg.current_tape()))
    assert tg.current_tape() is not t0  # compacted (or reset) on the way
    assert most < 6_000, most  # 2,000 iterations of 4+ rows otherwise
    out.sum().backward()
    want = (X.numpy() @ lin.weight.numpy().T + lin.bias.numpy() > 0).sum(0)
    np.testing.assert_allclose(lin.bias.grad.numpy(), want)


def _row(op, a=-1, b=-1):
    return op | (a + 1) << 8 | (b + 1) << 36


def test_compaction_keeps_the_closure_of_what_is_held():
    # rows: 0 LEAF, 1 CONST, 2 EXP(0), 3 EXP(1), 4 EXP(2), 5 EXP(3), 6 ADD(4, 0), 7 EXP(5);
    # row 6 is held: it reads row 4 (of a dead range), which reads row 2, which reads the leaf
    code = np.array(
        [
            _row(C.LEAF),
            _row(C.CONST),
            _row(C.EXP, 0),
            _row(C.EXP, 1),
            _row(C.EXP, 2),
            _row(C.EXP, 3),
            _row(C.ADD, 4, 0),
            _row(C.EXP, 5),
        ],
        np.int64,
    )
    ip, pool = np.zeros(8, np.int64), np.zeros(4, np.int64)
    held = np.zeros(8, bool)
    held[6] = True
    assert compaction.reachable(code, ip, pool, held).tolist() == [0, 2, 4, 6]
    # a custom op's rows reach others through a Python payload: never moved
    custom = code.copy()
    custom[4] = _row(C.CUSTOM)
    assert compaction.reachable(custom, ip, pool, held) is None
    # a chain longer than MAX_ROUNDS below the held rows: nothing to gain
    n = compaction.MAX_ROUNDS + 4
    chain = np.array([_row(C.LEAF)] + [_row(C.EXP, k) for k in range(n - 1)], np.int64)
    held = np.zeros(n, bool)
    held[-1] = True
    assert compaction.reachable(chain, np.zeros(n, np.int64), pool, held) is None


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_moved_rows_keep_their_shapes_and_a_second_order_backward_through_them():
    A0 = rng.standard_normal((3, 4, 5))

    def run(compact):
        w = tg.tensor(A0.copy(), requires_grad=True)
        below = _garbage(w.sum())
        y = tg.exp(w * 0.1).reshape(4, 15)  # 3-d and 2-d rows: shapes in spool
        z = tg.tanh(y.T)
        del below
        top = _garbage(w.sum())
        if compact:
            t = _compact()
            assert t is not None
            rows = [tape_of(h) and h._row for h in (y, z)]
            assert [t.shape(r) for r in rows] == [(4, 15), (15, 4)]
        (g,) = tg.autograd.grad((z * z).sum(), [w], create_graph=True)
        (g * g).sum().backward()
        del top
        return g.numpy(), w.grad.numpy()

    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.usefixtures("explicit_compactions_only")
@on_fresh_tape
def test_an_in_place_change_is_still_caught_or_allowed_after_a_compaction():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    below = _garbage(w)
    a = w * 2.0
    b = (a * a).sum()  # reads a's value in its backward
    a += 1.0  # ...which is changed afterwards: b's backward must refuse
    c = w * 3.0
    c += 1.0  # changed before it is read: fine
    d = (c * c).sum()
    del below
    top = _garbage(w)
    assert _compact() is not None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.backward()
    d.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (3 * np.array([1.0, 2.0]) + 1) * 3)
    del top


def test_threads_sharing_parameters_each_compact_their_own_tape():
    # a model served from several threads without no_grad: each thread holds its latest
    # output; the parameters are entered on both tapes (the second one notes them in its
    # ``shared`` table, which compaction renumbers)
    import threading

    lin = tg.nn.Linear(12, 6)
    X = rng.standard_normal((20, 12))
    results, errors = {}, []

    def serve(k):
        try:
            x = tg.tensor(X * (k + 1))
            most = 0
            for _ in range(3_000):
                out = tg.tanh(lin(x))
                most = max(most, len(tg.current_tape()))
            (gw,) = tg.autograd.grad(out.sum(), [lin.weight])
            results[k] = (most, gw.numpy())
        except BaseException as e:  # noqa: B902 - reported in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=serve, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    W, b = lin.weight.numpy(), lin.bias.numpy()
    for k in range(2):
        most, gw = results[k]
        assert most < 9_000, (k, most)  # 3,000 passes of 4+ rows otherwise
        x = X * (k + 1)
        t = np.tanh(x @ W.T + b)
        np.testing.assert_allclose(gw, (1 - t * t).T @ x, rtol=1e-12)
