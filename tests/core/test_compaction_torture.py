"""Compaction under torture: random programs and realistic loops, each compared with the same
code run without compaction.

A compaction renumbers rows, gathers parameter blocks and moves values; any slip there reads
the wrong row or parameter and gives a wrong number, not a crash.  So every test here runs its
code twice, once with compaction switched off, and asserts the values and gradients agree
(to rounding: compaction must not change any arithmetic, but an equal tolerance is all the
comparison needs), and that compactions really happened."""

import numpy as np
import pytest
from custom_functions import Cube
from fresh_tape import on_fresh_tape

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.core import tape as T

RTOL, ATOL = 1e-12, 1e-13


def _close(got, want, what):
    np.testing.assert_allclose(
        np.asarray(got, float), np.asarray(want, float), rtol=RTOL, atol=ATOL, err_msg=what
    )


def _garbage(w, n):
    """An evaluation loop's rows: each result is held until the next replaces it, so the rows
    of all but the last sit below whatever is recorded while the last is held."""
    top = None
    for _ in range(n):
        top = (w * 1.5 + 0.25).sum()
    return top


# ---- random programs -------------------------------------------------------------------------

X_BIG = np.random.default_rng(11).standard_normal((100, 60))  # @ (60, 50): 5,000-value rows


def _leaves(rng):
    shapes = {"A": (6, 5), "B": (5,), "C": (6, 5), "v": (6,), "W": (60, 50)}
    return {k: rng.standard_normal(s) * (0.05 if k == "W" else 0.7) for k, s in shapes.items()}


def _pick(rng, pool, pred=lambda t: True):
    """A pool entry (recent ones more often) satisfying ``pred``, or None."""
    ok = [t for t in pool if pred(t)]
    if not ok:
        return None
    k = len(ok) - 1 - min(int(rng.geometric(0.25)) - 1, len(ok) - 1)
    return ok[k]


def _mask(rng, shape):
    m = rng.random(shape) < 0.6
    m.flat[:2] = True  # never empty
    return m


def _step(rng, pool, L):
    """Record one random op on pool entries; returns its result (ndim 1 or 2, size >= 2)."""
    x = _pick(rng, pool)
    two = x.ndim == 2
    k = int(rng.integers(24))
    if k == 0:
        f = [
            tg.tanh,
            tg.sin,
            lambda a: tg.exp(tg.tanh(a)),
            lambda a: tg.sqrt(a * a + 1.0),
            lambda a: tg.log1p(a * a),
            lambda a: a**2 * 0.5,
            lambda a: -a,
            lambda a: 1.0 / (1.0 + a * a),
            tg.abs,
            tg.sigmoid,
        ][int(rng.integers(10))]
        return f(x)
    if k == 1:  # same shape partner
        y = _pick(rng, pool, lambda t: t.shape == x.shape)
        op = int(rng.integers(5))
        return [x + y, x - y, x * y, tg.maximum(x, y), x / (1.0 + y * y)][op]
    if k == 2:  # broadcasting against smaller shapes
        if two:
            axis = int(rng.integers(2))
            r = [x.mean(axis=0), x.sum(axis=1, keepdims=True), tg.amax(x, axis=0)]
            r = r[axis + rng.integers(2)]
            vec = _pick(rng, pool, lambda t: t.shape == (x.shape[1],))
            if vec is not None and rng.random() < 0.5:
                r = vec
            return x * 0.5 + r if rng.random() < 0.5 else x * tg.tanh(r)
        return x - x.mean() + L["B"].sum() * 0.1
    if k == 3:  # small matmul
        if two:
            return tg.tanh(x @ x.T * 0.1) if rng.random() < 0.5 else x.T @ x * 0.05
        m = _pick(rng, pool, lambda t: t.ndim == 2 and t.shape[1] == x.shape[0])
        return tg.tanh(m @ x) if m is not None else tg.outer(x, x) * 0.1
    if k == 4:  # large matmul: lazy rows of 5,000 values
        h = tg.tanh(tg.tensor(X_BIG) @ L["W"] + x.sum() * 0.01)
        return [h, h[:6, :5], h.mean(axis=0), h[::7]][int(rng.integers(4))]
    if k == 5:  # reductions over an axis
        if not two:
            return tg.concatenate(
                [x.sum(keepdims=True), tg.amax(x, keepdims=True), x.mean(keepdims=True)]
            )
        axis = int(rng.integers(2))
        kd = bool(rng.integers(2))
        r = int(rng.integers(4))
        if r == 3:
            return (tg.tanh(x) * 0.5 + 1.0).prod(axis=axis, keepdims=kd)
        return [tg.sum, tg.mean, tg.amax][r](x, axis=axis, keepdims=kd)
    if k == 6:  # views
        v = int(rng.integers(5))
        if v == 0:
            return x.reshape(-1)
        if v == 1 and two:
            return x.T
        if v == 2 and two and x.size % 2 == 0:
            return x.reshape(2, -1)
        if v == 3 and x.shape[0] > 2:
            return x[1:]
        return x[::2] if x.shape[0] > 3 else x.reshape(1, -1)
    if k == 7:  # integer array indexing (repeats: gradients accumulate)
        idx = rng.integers(0, x.shape[0], size=int(rng.integers(2, 8)))
        return x[idx] if rng.random() < 0.5 or not two else x[:, idx % x.shape[1]]
    if k == 8:  # boolean mask
        return x[_mask(rng, x.shape)]
    if k == 9:  # setitem into a non-leaf result
        y = x * 1.0
        if x.shape[0] >= 3:
            z = _pick(rng, pool, lambda t: t.shape == x[1:3].shape)
            y[1:3] = tg.tanh(x[1:3] if z is None else z) * 2.0
        else:
            y[0] = x[-1] * 3.0
        return y
    if k == 10:  # in-place ops on non-leaf results
        y = tg.sin(x)
        op = int(rng.integers(4))
        if op == 0:
            y += 1.0
        elif op == 1:
            y *= _pick(rng, pool, lambda t: t.shape == x.shape)
        elif op == 2:
            y.relu_()
        else:
            y -= y.mean()
        return y
    if k == 11:  # where
        y = _pick(rng, pool, lambda t: t.shape == x.shape)
        return tg.where(x > 0.1, x * 2.0, tg.sin(y))
    if k == 12:
        y = _pick(rng, pool, lambda t: t.shape == x.shape)
        if rng.random() < 0.5:
            return tg.concatenate([x, y, x[:1]], axis=0)
        return tg.stack([x, y], axis=int(rng.integers(x.ndim + 1))).reshape(-1)
    if k == 13:
        lo = float(rng.uniform(-1.0, 0.0))
        return tg.clip(x, lo, lo + float(rng.uniform(0.3, 1.5)))
    if k == 14:
        axis = int(rng.integers(x.ndim))
        c = int(rng.integers(3))
        if c == 0:
            return tg.cumsum(x, axis=axis)
        if c == 1:
            return tg.cumprod(tg.tanh(x) * 0.3 + 1.0, axis=axis)
        return tg.logcumsumexp(x, axis=axis)
    if k == 15:
        return tg.sort(x, dim=int(rng.integers(x.ndim)))[0]
    if k == 16:
        return F.softmax(x, dim=-1) if rng.random() < 0.5 else F.log_softmax(x, dim=0)
    if k == 17:  # a leaf again, with a broadcast bias
        if rng.random() < 0.5:
            return L["A"] * L["C"] + L["B"]
        return tg.outer(L["v"], L["B"]) + x.sum() * 0.1
    if k == 18:
        return x.detach() * tg.tanh(x)  # a constant operand entered mid-program
    if k == 19:
        return tg.where(_mask(rng, x.shape), x, 0.0) + 0.5
    if k == 20:
        return tg.exp(-x * x) * x
    if k == 21 and two:
        return x[:, ::-1] + x[::-1]
    if k == 22:  # a scalar chain broadcast back
        return x * (tg.tanh(x).sum() * 0.1 + 1.0)
    return tg.minimum(x, 0.3) + tg.maximum(x, -0.2)


def _run_program(seed, compact, second_order, n_steps, garbage_n):
    """Run random program ``seed``; compact (or not) after stages separated by garbage.
    Returns (values to compare, or the error raised; compactions done)."""
    done = []
    try:
        return _program(seed, compact, second_order, n_steps, garbage_n, done), done
    except RuntimeError as e:  # (an in-place change of a value a backward reads)
        return [str(e)], done


def _program(seed, compact, second_order, n_steps, garbage_n, done):
    rng = np.random.default_rng(seed)
    L = {k: tg.tensor(v, requires_grad=True) for k, v in _leaves(rng).items()}
    leaves = list(L.values())
    pool = [L["A"] * 1.0, tg.tanh(L["C"]), L["v"] * 2.0, L["B"] + 0.0]
    top = [None]

    def stage():
        # the garbage held above the last stage is dropped, this one is held above it
        g = leaves[int(rng.integers(len(leaves)))] if rng.random() < 0.7 else pool[-1]
        top[0] = _garbage(g, garbage_n)
        again = rng.random() < 0.2  # (drawn in both runs: the same program)
        if compact:
            t = tg.current_tape().compact()
            done.append(t is not None)
            if again:  # right after one: little or nothing more to drop
                tg.current_tape().compact()

    stage()
    for _ in range(n_steps):
        pool.append(_step(rng, pool, L))
        if rng.random() < 0.05:  # an earlier result changed in place: a later backward that
            # read its old value must refuse in both runs (the in-place records move too)
            x = pool[int(rng.integers(len(pool)))]
            if x._leaf:
                pass
            elif rng.random() < 0.5:
                x += 0.125
            else:
                x.mul_(1.5)
        if len(pool) > 12:
            del pool[int(rng.integers(len(pool) - 4))]  # dropped: its rows may be dropped
        if rng.random() < 0.6:
            stage()
    coef = rng.standard_normal(len(pool))
    loss = sum((tg.tanh(p) * float(c)).sum() for p, c in zip(pool, coef, strict=True))
    loss = loss + sum((w * w).sum() for w in leaves) * 0.01  # every leaf gets a gradient
    stage()
    out = [loss.item(), *(p.numpy().copy() for p in pool)]
    if second_order:
        grads = tg.autograd.grad(loss, leaves, create_graph=True)
        stage()
        pen = sum((g * g).sum() for g in grads)
        out.append(pen.item())
        pen.backward()
    else:
        loss.backward()
    out += [p.grad.numpy() for p in leaves]
    del top[0]
    return out


@pytest.fixture
def small_ranges(monkeypatch):
    """Short token ranges, so short bursts of garbage fill whole ranges (a range is dropped
    only whole)."""
    monkeypatch.setattr(T, "TOKEN_ROWS", 64)


def _counting_compact():
    """``Tape.compact`` that counts the compactions it makes (in ``count[0]``)."""
    real = T.Tape.compact
    count = [0]

    def counted(self):
        t = real(self)
        count[0] += t is not None
        return t

    return counted, count


def _programs(monkeypatch, seeds, garbage_n, second_every):
    """Run each program without compaction (``Tape.compact`` switched off, so reclaims
    cannot compact either) and with its explicit compactions (and any a reclaim makes);
    returns (explicit compactions done, attempted, all compactions, programs that raised)."""
    counted, count = _counting_compact()

    total, ran, errors = 0, 0, 0
    for seed in seeds:
        so = seed % second_every == 0
        n_steps = 8 + seed % 7
        with monkeypatch.context() as m:
            m.setattr(T.Tape, "compact", lambda self: None)
            want, _ = _run_program(seed, False, so, n_steps, garbage_n)
        with monkeypatch.context() as m:
            m.setattr(T.Tape, "compact", counted)
            got, done = _run_program(seed, True, so, n_steps, garbage_n)
        assert len(got) == len(want), (seed, got[:1], want[:1])
        if len(want) == 1:  # both refused a backward, with the same error
            errors += 1
            assert got == want, seed
            continue
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"program {seed}, output {k} (second order: {so})")
        total += sum(done)
        ran += len(done)
    return total, ran, count[0], errors


@pytest.mark.usefixtures("small_ranges")
@on_fresh_tape
def test_random_programs_compacted_between_their_steps_give_the_same_numbers(monkeypatch):
    total, ran, every, errors = _programs(monkeypatch, range(70), garbage_n=60, second_every=4)
    assert total >= 0.6 * ran, (total, ran)
    assert errors < 0.4 * 70, errors  # most programs reach their backward


@on_fresh_tape
def test_random_programs_with_long_garbage_on_default_ranges(monkeypatch):
    total, ran, every, errors = _programs(
        monkeypatch, range(1000, 1004), garbage_n=1200, second_every=3
    )
    assert total >= 0.3 * ran and every >= 2 * total, (total, ran, every)


# ---- automatic compaction inside realistic programs ------------------------------------------


def _twice(monkeypatch, program):
    """``program()`` on a fresh tape with compaction switched off, then with a reclaim (and a
    compaction) attempted whenever the values grow by 256, with no retries, and token ranges
    of 64 rows (a loop of a few hundred rows fills whole ranges); returns (the second run's
    results, the compactions done in it)."""
    import threading

    def fresh(fn):
        box = []

        def body():
            try:
                box.append(fn())
            except BaseException as e:  # noqa: B902 - re-raised in the test's thread
                box.append(e)

        th = threading.Thread(target=body)
        th.start()
        th.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    counted, count = _counting_compact()

    with monkeypatch.context() as m:
        m.setattr(T.Tape, "compact", lambda self: None)
        want = fresh(program)
    with monkeypatch.context() as m:
        m.setattr(T, "RECLAIM_RETRIES", 0)
        m.setattr(T, "RECLAIM_VALUES", 256)
        m.setattr(T, "TOKEN_ROWS", 64)
        m.setattr(T.Tape, "compact", counted)
        got = fresh(program)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        _close(g, w, f"result {k}")
    return got, count[0]


def _mlp(seed):
    rng = np.random.default_rng(seed)
    model = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.Tanh(), tg.nn.Linear(16, 3))
    for p in model.parameters():
        p.data = tg.tensor(rng.standard_normal(p.shape) * 0.4)
    return model, tg.tensor(rng.standard_normal((32, 8))), tg.tensor(rng.standard_normal((32, 3)))


def test_an_mlp_trained_with_evaluation_loops_between_its_steps(monkeypatch):
    """SGD steps with an evaluation loop holding its latest output between them: the loop's
    rows are compacted away under the held output and the parameters' next graph."""

    def program():
        model, X, Y = _mlp(1)
        opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        before = model(X)  # a handle made before the loops, used after them
        losses, evals = [], []
        for _ in range(6):
            opt.zero_grad()
            loss = ((model(X) - Y) ** 2).mean()
            for i in range(40):
                out = model(X[i % 8 :])  # held until replaced; loss still held too
            evals.append(out.sum().item())
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with tg.no_grad():
            final = model(X)
        return [
            losses,
            evals,
            final.numpy(),
            before.numpy(),
            *(p.numpy() for p in model.parameters()),
        ]

    _, n = _twice(monkeypatch, program)
    assert n >= 5, n


def test_an_evaluation_loop_then_a_backward_through_its_last_output_and_an_early_handle(
    monkeypatch,
):
    def program():
        model, X, _ = _mlp(2)
        early = tg.tanh(model(X)).sum(axis=0)  # recorded before the loop, used after it
        for i in range(200):
            out = model(X * (1.0 + 0.001 * i))
        (out.sum() + (early * out.mean(axis=0)).sum()).backward()
        return [out.numpy(), early.numpy(), *(p.grad.numpy() for p in model.parameters())]

    _, n = _twice(monkeypatch, program)
    assert n >= 3, n


def test_losses_kept_after_their_backward_with_cuts_and_compactions_mixed(monkeypatch):
    """A loss held after its backward makes reclaims cut under live handles (a retired tape
    forwarding by its cut); compactions then forward those tapes' handles too."""

    def program():
        x = tg.tensor(np.linspace(-1.0, 1.0, 7), requires_grad=True)
        a = tg.exp(x) * 2.0  # recorded first, read by every later graph
        res, losses = [], []
        for step in range(5):
            loss = (tg.sin(x * (step + 1.0)) * a).sum()
            loss.backward(retain_graph=True)  # (a's rows are read again)
            losses.append(loss)  # kept after its backward
            for i in range(50):
                out = tg.tanh(x * (i * 0.1)).sum() * a.sum()
            res += [x.grad.numpy().copy(), out.item()]
        x.grad = None
        final = (a * out).sum() + losses[0] * 0.5  # a graph a backward retained
        final.backward()
        return [*res, final.item(), x.grad.numpy()]

    _, n = _twice(monkeypatch, program)
    assert n >= 2, n


def test_gradient_penalties_with_create_graph_between_evaluation_loops(monkeypatch):
    def program():
        model, X, Y = _mlp(3)
        x = tg.tensor(X.numpy(), requires_grad=True)
        res = []
        for _ in range(4):
            loss = ((model(x) - Y) ** 2).mean()
            (gx,) = tg.autograd.grad(loss, [x], create_graph=True)
            for i in range(30):
                out = model(x[i:]) * 1.0  # held while gx's graph waits below
            pen = (gx * gx).sum() * 10.0
            (loss + pen + out.mean() * 0.0).backward()
            res += [loss.item(), pen.item(), x.grad.numpy().copy()]
            res += [p.grad.numpy().copy() for p in model.parameters()]
            for p in model.parameters():
                p.grad = None
            x.grad = None
        return res

    _, n = _twice(monkeypatch, program)
    assert n >= 3, n


def test_hooks_and_retain_grad_refuse_compaction_and_stay_right(monkeypatch):
    def program():
        model, X, _ = _mlp(4)
        seen = []
        h = model(X)
        h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
        mid = tg.tanh(h)
        mid.retain_grad()
        refused = tg.current_tape().compact() is None
        for _ in range(60):
            out = model(X) * 1.0
        (mid.sum() + out.sum()).backward()
        return [
            float(refused),
            seen[0],
            mid.grad.numpy(),
            *(p.grad.numpy() for p in model.parameters()),
        ]

    got, _ = _twice(monkeypatch, program)
    assert got[0] == 1.0  # a hook on the tape: no compaction


def test_checkpoint_and_a_custom_function_among_evaluation_loops(monkeypatch):
    def program():
        model, X, _ = _mlp(5)
        res = []
        for _ in range(3):
            for _ in range(40):
                out = model(X)
            a = tg.checkpoint(lambda z: tg.tanh(model(z)) * 2.0, X, use_reentrant=False)
            for _ in range(40):
                out = model(X) * 0.5
            b = Cube.apply(a * 0.5)
            for _ in range(40):
                out = model(X)
            loss = b.sum() + (a * out).mean()
            loss.backward()
            res += [loss.item(), *(p.grad.numpy().copy() for p in model.parameters())]
            for p in model.parameters():
                p.grad = None
        return res

    _, n = _twice(monkeypatch, program)
    assert n >= 1, n


def test_jax_style_transforms_around_evaluation_loops(monkeypatch):
    """Transforms of NumPy functions (no compaction inside them) with compacting loops
    between them, and a vjp function called after a loop."""

    def f(v):
        return np.sum(np.sin(v) * np.cumsum(v)) + np.prod(np.tanh(v) + 1.5) + np.max(v**2)

    def program():
        model, X, _ = _mlp(6)
        v = np.linspace(-0.8, 1.1, 5)
        d = np.linspace(0.3, -0.2, 5)
        res = []

        def loop():
            for i in range(40):
                out = model(X * (1.0 + i))
            return out

        held = loop()
        res.append(tg.grad(f)(v))
        held = loop()
        val, g = tg.value_and_grad(f)(v)
        res += [val, g]
        held = loop()
        res += list(tg.jvp(f, (v,), (d,)))
        held = loop()
        res.append(tg.hessian(f)(v))
        held = loop()
        res += list(tg.hvp(f, (v,), (d,)))
        out, vjp_fn = tg.vjp(lambda u: np.sin(u) * np.sum(u**2), v)
        held = loop()
        res += [out, *vjp_fn(d)]
        held = loop()
        res += [*vjp_fn(d * 2.0), held.numpy()]
        # Tensors through the transforms, with a handle from before the loops
        w = tg.tensor(v, requires_grad=True)
        early = tg.sin(w) * 3.0
        held = loop()
        gw = tg.grad(lambda u: (tg.tanh(u) ** 2).sum())(w)
        held = loop()
        ((gw * early).sum() + held.sum() * 0.0).backward()
        res += [gw.numpy(), w.grad.numpy()]
        return res

    _, n = _twice(monkeypatch, program)
    assert n >= 3, n
