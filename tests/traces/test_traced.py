"""tg.traced: a cache of traces keyed by argument structure and branch; replays never return
what a fresh evaluation would not."""

import numpy as np
import pytest

import tapegrad as tg


def _piecewise(x):
    if np.sum(x) > 0:  # a Python branch on a traced value: a guard
        return np.sum(x**3)
    return np.sum(np.sin(x))


def test_one_trace_per_branch_and_shape_all_answers_exact():
    f = tg.traced(_piecewise)
    rng = np.random.default_rng(0)
    for k in range(60):
        x = rng.standard_normal(3 if k % 2 else 5)
        want = tg.value_and_grad(_piecewise)(x)
        got = f.value_and_grad(x)
        assert got[0] == pytest.approx(want[0], rel=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-14)
    assert f.records == 4  # two shapes x two branches
    assert f.replays == 60


def test_pytree_arguments_and_static_arguments():
    def loss(params, x, mode):
        w, b = params["w"], params["b"]
        r = w * x + b
        return np.sum(r * r) if mode == "sq" else np.sum(np.abs(r))

    f = tg.traced(loss)
    x = np.array([1.0, 2.0, 3.0])
    p = {"w": 0.5, "b": np.array([0.1, 0.2, 0.3])}
    for mode in ("sq", "abs", "sq"):
        got = f.value_and_grad(p, x, mode)
        want = tg.value_and_grad(loss)(p, x, mode)
        assert got[0] == pytest.approx(want[0], rel=1e-14)
        assert got[1]["w"] == pytest.approx(want[1]["w"], rel=1e-14)
        np.testing.assert_allclose(got[1]["b"], want[1]["b"], rtol=1e-14)
    assert f.records == 2  # a static argument is part of the key


def test_branches_and_structures_are_bounded():
    f = tg.traced(lambda x: np.sum(x) * 2.0, max_branches=2, max_structures=3)
    for n in range(1, 8):
        assert f.grad(np.ones(n)).tolist() == [2.0] * n
    assert len(f._cache) == 3

    g = tg.traced(lambda x: x * 3.0 if x > 1 else (x * 2.0 if x > 0 else -x), max_branches=2)
    for x in (2.0, 0.5, -1.0, 2.0, 0.5):
        want = tg.value_and_grad(lambda v: v * 3.0 if v > 1 else (v * 2.0 if v > 0 else -v))(x)
        assert g.value_and_grad(x) == want
    assert all(len(v) <= 2 for v in g._cache.values())


def test_training_loop_with_closure_parameters_follows_their_updates():
    w = tg.tensor(np.array([0.0, 0.0]), requires_grad=True)
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = x @ np.array([0.5, -0.25])

    def mse(inputs, targets):
        return np.mean((inputs @ w - targets) ** 2)

    f = tg.traced(mse)
    for _ in range(3):
        v = f(x, y)
        assert v == pytest.approx(float(np.mean((x @ w.numpy() - y) ** 2)), rel=1e-14)
        with tg.no_grad():
            w -= 0.01
    assert f.records == 1


def test_random_draws_are_refused_as_in_tg_trace():
    f = tg.traced(lambda x: np.sum(x * np.random.standard_normal(2)))
    with pytest.raises(RuntimeError, match="random"):
        f.grad(np.ones(2))


def test_retrace_true_records_again_for_a_new_shape_as_jax_jit_compiles_again():
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    tr = tg.trace(f, np.ones(3), retrace=True)
    for x in (np.linspace(0, 1, 5), np.ones((2, 2)), np.arange(3.0)):
        v, g = tr.value_and_grad(x)
        ve, ge = tg.value_and_grad(f)(x)
        assert v == pytest.approx(ve) and np.allclose(g, ge) and np.shape(g) == x.shape
    assert tr.retraces == 3
    strict = tg.trace(f, np.ones(3))
    with pytest.raises(ValueError, match="retrace=True"):  # without it: a clear error
        strict.grad(np.ones(5))
    with pytest.raises(ValueError, match="arguments"):
        strict.grad(np.ones(3), np.ones(3))


def _cube(x):
    return x**3


def _calls_of_a_replay_on_a_differentiated_value():
    tr = tg.trace(_cube, 2.0)
    tr_sum = tg.traced(lambda x: np.sum(x**3))
    return {
        "tg.grad of a trace": lambda: tg.grad(tr)(2.0),
        "a trace inside f": lambda: tg.grad(lambda x: tr(x) + x)(2.0),
        "tg.jvp of a trace": lambda: tg.jvp(tr, (2.0,), (1.0,)),
        "tg.vjp of a trace": lambda: tg.vjp(tr, 2.0),
        "tg.grad of tr.grad": lambda: tg.grad(lambda x: tr.grad(x))(2.0),
        "tg.grad of a traced function": lambda: tg.grad(tr_sum)(np.ones(3)),
        "tg.hessian of a traced function": lambda: tg.hessian(tr_sum)(np.ones(3)),
        "a trace inside a trace recording": lambda: tg.trace(lambda x: tr(x) + x, 2.0),
        "a Tensor that requires grad": lambda: tr(tg.tensor(2.0, requires_grad=True)),
        "in a pytree": lambda: tg.traced(lambda p: p[0] * p[1])(
            (tg.tensor(2.0, requires_grad=True), 3.0)
        ),
    }


@pytest.mark.parametrize("case", list(_calls_of_a_replay_on_a_differentiated_value()))
def test_a_replay_of_a_differentiated_value_raises_instead_of_dropping_its_derivative(case):
    """A replay runs outside the caller's tape: called on a value being differentiated, its
    result would be a constant (a gradient of 0 through it, silently): it raises, naming the
    fixes."""
    call = _calls_of_a_replay_on_a_differentiated_value()[case]
    with pytest.raises(TypeError, match="being differentiated.*tg.grad\\(f\\)"):
        call()


def test_a_replay_of_a_value_without_derivative_still_runs():
    tr = tg.trace(_cube, 2.0)
    assert tr(3.0) == 27.0 and tr.grad(3.0) == 27.0
    assert tr(tg.tensor(2.0, requires_grad=True).detach()) == 8.0
    with tg.no_grad():
        assert tr(tg.tensor(2.0, requires_grad=True)) == 8.0
    assert tg.grad(lambda x: x * tr(x.detach()))(2.0) == 8.0
