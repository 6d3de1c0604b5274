"""Checks generated from the op spec: every op, forward mode and second order.

For each op of ``tapegrad.ops.spec`` (one case each in ``op_cases.py``, plus special points:
products with zeros, max/min ties) these tests compare

- the compiled tangent sweep (``tg.jvp``) with central finite differences;
- forward and reverse mode through the transposition identity <u, J v> = <J^T u, v>;
- the Tensor-level JVP (nested use) with the compiled one, and ``grad`` of a jvp in the
  tangent with ``J^T w`` (the jvp is differentiable in its tangent);
- the compiled forward-over-reverse ``hvp`` with finite differences of the gradient, and
  ``hessian`` with the create_graph route (``jacobian(grad)``): both come from one declaration;
- a traced replay (``tg.trace``) with eager recording, at inputs other than the recorded ones.
"""

import zlib

import numpy as np
import pytest
from custom_functions import Cube

import tapegrad as tg
from tapegrad.kernels import generate
from tapegrad.ops.spec import FINGERPRINT, OPS

from op_cases import CASES, INTERNAL

SPECIAL = {
    "PROD one zero": (lambda x: x.prod(axis=1), [np.array([[0.0, 1.5, -2.0], [0.7, 1.2, 0.9]])]),
    "PROD two zeros": (lambda x: x.prod(), [np.array([0.0, 1.5, 0.0, 2.0])]),
    "CUMPROD one zero": (
        lambda x: tg.cumprod(x, axis=1) * x,
        [np.array([[1.3, 0.0, -0.8, 1.1], [0.7, 1.2, 0.0, 0.0]])],
    ),
    "CUMPROD zero first": (lambda x: tg.cumprod(x), [np.array([0.0, 1.5, -2.0, 0.5])]),
    "CUMSUM reversed axis": (
        lambda x: tg.cumsum(x, axis=0) * x,
        [np.array([[1.0, -2.0], [0.5, 3.0]])],
    ),
    "AMAX tie": (lambda x: x.amax(axis=0) * x.sum(), [np.array([[1.0, 2.0], [1.0, -3.0]])]),
    "AMIN tie": (lambda x: x.min() * x.sum(), [np.array([0.5, 0.5, 2.0])]),
    "MAXIMUM tie": (
        lambda x, y: tg.maximum(x, y) * x,
        [np.array([1.0, 2.0]), np.array([1.0, -1.0])],
    ),
    "MATMUL transposed operand": (
        lambda x, w: tg.tanh(tg.nn.functional.linear(x, w)),
        [np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(-0.5, 0.7, 12).reshape(4, 3)],
    ),
}
ALL = {**CASES, **SPECIAL}
SMOOTH = {k: v for k, v in ALL.items() if "tie" not in k}  # FD needs differentiable points


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))  # the same inputs every run


def _scalarized(f, out_shape, seed):
    w = np.random.default_rng(seed).standard_normal(out_shape)
    return lambda *xs: (f(*xs) * w).sum()


def _eval(f, xs):
    return np.array(f(*[tg.tensor(x) for x in xs]).numpy(), dtype=float)


def _fd_jvp(f, xs, vs, eps=1e-6):
    plus = _eval(f, [x + eps * v for x, v in zip(xs, vs)])
    minus = _eval(f, [x - eps * v for x, v in zip(xs, vs)])
    return (plus - minus) / (2 * eps)


def test_every_op_is_covered():
    assert {op.name for op in OPS} - INTERNAL <= {k.split()[0] for k in ALL}


def test_generated_kernels_are_current():
    with open(generate.TARGET) as fh:
        assert fh.read() == generate.render(), (
            "tapegrad/kernels/sweeps.py is stale: run python tapegrad/kernels/generate.py"
        )


def test_derived_facts_are_current_and_derive_again_the_same():
    """An import reads the facts it derives from the declarations (partials, the values each
    backward reads, the scans' kernels, the fingerprint) from ``ops/derived.py`` when the ops
    sources hash to the one it was generated from: it must be current here, and every entry
    must be what its rule derives now."""
    from tapegrad.ops import memo, spec

    with open(memo.GENERATED) as fh:
        assert fh.read() == generate.render_derived(), (
            "tapegrad/ops/derived.py is stale: run python tapegrad/kernels/generate.py"
        )
    assert memo.from_table()
    kinds = {kind for kind, _ in spec.DERIVED}
    assert kinds == {"partial", "reads", "saves", "scan kernels", "fingerprint"}
    for (kind, key), value in spec.DERIVED.items():
        assert memo.derive_again(kind, key) == value, (kind, key)
    assert spec.READS == tuple(spec.reads_of(o) for o in OPS)
    assert spec.FINGERPRINT == spec._fingerprint()


def test_a_changed_ops_source_derives_its_facts(tmp_path):
    """A copy of the ops package whose sources differ from the ones derived.py was generated
    from (a declaration edited without regenerating) derives the facts, not reads them."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from tapegrad.ops import memo

    src = Path(memo.__file__).parent
    copy = tmp_path / "tapegrad_ops_copy"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import importlib.util, sys\n"
        f"s = importlib.util.spec_from_file_location('opscopy', r'{copy / '__init__.py'}')\n"
        "m = sys.modules['opscopy'] = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
        "from opscopy import memo, spec\n"
        "print(memo.from_table(), spec.OPS[spec.CODE['EXP']].d)\n"
    )

    def run():
        res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-2000:]
        return res.stdout.split()

    assert run() == ["True", "('out',)"]
    ew = copy / "elementwise.py"
    ew.write_text(ew.read_text() + "\n# an edit\n")
    assert run() == ["False", "('out',)"]


def test_kernel_sources_are_what_inspect_reads():
    """The spec reads each kernel's source from one parse of its file (for the values a
    backward reads, and the fingerprint): it must be the text ``inspect.getsource`` gives."""
    import inspect

    from tapegrad.ops import spec

    checked = 0
    for o in OPS:
        fns = [getattr(o, k, None) for k in ("forward", "backward", "tangent", "backward_tangent")]
        fns += [getattr(o, "tangent_lanes", None), getattr(o, "backward_tangent_lanes", None)]
        for fn in [*fns, *getattr(o, "helpers", ())]:
            if callable(fn) and not isinstance(getattr(fn, "source", None), str):
                assert spec.source(fn) == inspect.getsource(fn), fn.__name__
                checked += 1
    assert checked > 40


def test_stale_fingerprint_is_refused():
    from tapegrad.kernels import drivers, sweeps

    # the generated module carries the spec's and the drivers' fingerprint together: a change
    # of either without regenerating is refused at import
    assert sweeps.FINGERPRINT == drivers.fingerprint(FINGERPRINT) != FINGERPRINT
    assert drivers.fingerprint(FINGERPRINT) != drivers.fingerprint(FINGERPRINT[::-1])


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_jvp_matches_finite_differences(name):
    f, xs = ALL[name]
    vs = [_rng(name).standard_normal(np.shape(x)) for x in xs]
    out, tangent = tg.jvp(f, tuple(xs), tuple(vs))
    np.testing.assert_allclose(out, _eval(f, xs), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tangent, _fd_jvp(f, xs, vs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALL))
def test_transposition_identity(name):
    f, xs = ALL[name]
    rng = _rng(name)
    vs = [rng.standard_normal(np.shape(x)) for x in xs]
    out, jv = tg.jvp(f, tuple(xs), tuple(vs))
    u = rng.standard_normal(np.shape(out))
    _, vjp_fn = tg.vjp(f, *xs)
    jtu = vjp_fn(u)
    lhs = float(np.sum(u * jv))
    rhs = sum(float(np.sum(g * v)) for g, v in zip(jtu, vs))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("name", sorted(ALL))
def test_nested_jvp_equals_compiled(name):
    """Inside another transform the JVP is the spec's rule evaluated on Tensors."""
    f, xs = ALL[name]
    vs = [_rng(name).standard_normal(np.shape(x)) for x in xs]
    _, compiled = tg.jvp(f, tuple(xs), tuple(vs))

    def outer(*ys):
        _, t = tg.jvp(f, ys, tuple(vs))
        return t

    nested = tg.jvp(outer, tuple(xs), tuple(np.zeros_like(x) for x in xs))[0]
    np.testing.assert_allclose(nested, compiled, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ALL))
def test_grad_of_jvp_in_the_tangent_is_vjp(name):
    f, xs = ALL[name]
    rng = _rng(name)
    out = _eval(f, xs)
    w = rng.standard_normal(out.shape)
    vs = [rng.standard_normal(np.shape(x)) for x in xs]

    def along(*ts):
        _, t = tg.jvp(f, tuple(xs), ts)
        return (t * w).sum()

    got = tg.grad(along, argnums=tuple(range(len(xs))))(*vs)
    want = tg.vjp(f, *xs)[1](w)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_jvp_of_jvp_matches_finite_differences(name):
    f, xs = ALL[name]
    rng = _rng(name)
    v1 = [rng.standard_normal(np.shape(x)) for x in xs]
    v2 = [rng.standard_normal(np.shape(x)) for x in xs]

    def directional(*ys):
        return tg.jvp(f, ys, tuple(v1))[1]

    got = tg.jvp(directional, tuple(xs), tuple(v2))[1]
    eps = 1e-5
    plus = tg.jvp(f, tuple(x + eps * v for x, v in zip(xs, v2)), tuple(v1))[1]
    minus = tg.jvp(f, tuple(x - eps * v for x, v in zip(xs, v2)), tuple(v1))[1]
    np.testing.assert_allclose(got, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_compiled_hvp_matches_finite_differences(name):
    f, xs = ALL[name]
    s = _scalarized(f, _eval(f, xs).shape, 11)
    rng = _rng(name)
    vs = [rng.standard_normal(np.shape(x)) for x in xs]
    argnums = tuple(range(len(xs)))
    hv = tg.hvp(s, tuple(xs), tuple(vs))
    hv = hv if len(xs) > 1 else (hv,)
    eps = 1e-5
    gp = tg.grad(s, argnums)(*[x + eps * v for x, v in zip(xs, vs)])
    gm = tg.grad(s, argnums)(*[x - eps * v for x, v in zip(xs, vs)])
    for h, a, b in zip(hv, gp, gm):
        np.testing.assert_allclose(h, (a - b) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALL))
def test_compiled_hessian_equals_reverse_over_reverse(name):
    """Forward-over-reverse (generated second-order rules) and create_graph (the same
    formulas on Tensors) agree, at special points too (zeros in prod, ties)."""
    f, xs = ALL[name]
    s = _scalarized(f, _eval(f, xs).shape, 5)
    for k in range(len(xs)):
        compiled = tg.hessian(s, argnums=k)(*xs)
        via_graph = tg.jacobian(tg.grad(s, argnums=k), argnums=k, mode="rev")(*xs)
        np.testing.assert_allclose(compiled, via_graph, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_trace_replay_equals_eager(name):
    f, xs = ALL[name]
    s = _scalarized(f, _eval(f, xs).shape, 3)
    argnums = tuple(range(len(xs)))
    tr = tg.trace(s, *xs, argnums=argnums) if len(xs) > 1 else tg.trace(s, *xs)
    rng = _rng(name)
    moved = [x * (1 + 1e-3 * rng.standard_normal(np.shape(x))) for x in xs]
    value, grads = tr.value_and_grad(*moved)
    ev, eg = tg.value_and_grad(s, argnums)(*moved)
    assert value == pytest.approx(ev, rel=1e-13, abs=1e-13)
    for g, h in zip(grads if len(xs) > 1 else (grads,), eg):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-13)


def test_prod_hessian_at_zeros_is_exact():
    x = np.array([0.0, 2.0, 3.0])
    H = tg.hessian(lambda v: np.prod(v))(x)
    # d2/dxi dxj prod = product of the others but i and j
    want = np.array([[0, 3, 2], [3, 0, 0], [2, 0, 0]], float)
    np.testing.assert_array_equal(H, want)
    H2 = tg.hessian(lambda v: np.prod(v))(np.array([0.0, 0.0, 5.0]))
    np.testing.assert_array_equal(H2, [[0, 5, 0], [5, 0, 0], [0, 0, 0]])


def test_max_ties_split_evenly_at_every_order():
    x = np.array([2.0, 2.0, 1.0])
    g = tg.grad(lambda v: np.max(v) ** 2)(x)
    np.testing.assert_allclose(g, [2.0, 2.0, 0.0])
    H = tg.hessian(lambda v: np.max(v) ** 2)(x)
    np.testing.assert_allclose(H, [[0.5, 0.5, 0], [0.5, 0.5, 0], [0, 0, 0]])
    _, t = tg.jvp(lambda v: np.max(v), (x,), (np.array([1.0, 3.0, 5.0]),))
    assert t == pytest.approx(2.0)


def test_custom_function_forward_mode_uses_its_jvp_or_refuses():
    class CubeJvp(Cube):
        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * t

    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    _, t = tg.jvp(lambda a: CubeJvp.apply(a), (x,), (v,))
    np.testing.assert_allclose(t, 3 * x**2 * v)
    with pytest.raises(tg.ForwardModeError, match="Cube.*jvp"):
        tg.jvp(lambda a: Cube.apply(a), (x,), (v,))
    with pytest.raises(NotImplementedError):  # what PyTorch and HIPS autograd raise here
        tg.jvp(lambda a: Cube.apply(a), (x,), (v,))
    # reverse mode still works without jvp, and hvp falls back to reverse-over-reverse
    np.testing.assert_allclose(tg.hvp(lambda a: Cube.apply(a).sum(), (x,), (v,)), 6 * x * v)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_trace_jvp_and_hvp_replay_equal_eager(name):
    f, xs = ALL[name]
    s = _scalarized(f, _eval(f, xs).shape, 9)
    argnums = tuple(range(len(xs)))
    tr = tg.trace(s, *xs, argnums=argnums) if len(xs) > 1 else tg.trace(s, *xs)
    rng = _rng(name)
    moved = [x * (1 + 1e-3 * rng.standard_normal(np.shape(x))) for x in xs]
    vs = [rng.standard_normal(np.shape(x)) for x in xs]
    tangents = tuple(vs) if len(xs) > 1 else vs[0]
    value, tangent = tr.jvp(*moved, tangents)
    ev, et = tg.jvp(s, tuple(moved), tuple(vs))
    assert value == pytest.approx(ev, rel=1e-13, abs=1e-13)
    assert tangent == pytest.approx(et, rel=1e-11, abs=1e-12)
    hv = tr.hvp(*moved, tangents)
    ehv = tg.hvp(s, tuple(moved), tuple(vs))
    for a, b in zip(hv if len(xs) > 1 else (hv,), ehv if len(xs) > 1 else (ehv,)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_trace_jvp_hvp_hessian_respect_guards():
    def f(x):
        return np.sum(x**3) if x[0] > 0 else np.sum(np.sin(x))

    x = np.array([0.5, -1.0])
    tr = tg.trace(f, x)
    np.testing.assert_allclose(tr.hessian(x), np.diag(6 * x))
    with pytest.raises(tg.RetraceRequired):
        tr.jvp(-x, np.ones(2))
    with pytest.raises(tg.RetraceRequired):
        tr.hvp(-x, np.ones(2))
    tr2 = tg.trace(f, x, retrace=True)
    np.testing.assert_allclose(tr2.hvp(-x, np.ones(2)), -np.sin(-x))


def test_large_transposed_matmul_backward_through_blas():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((8, 300)), rng.standard_normal((120, 300))  # > SMALL_MATMUL
    f = lambda a, b: (tg.nn.functional.linear(a, b) ** 2).sum()  # noqa: E731
    gx, gw = tg.grad(f, argnums=(0, 1))(x, w)
    y = x @ w.T
    np.testing.assert_allclose(gx, 2 * y @ w, rtol=1e-12)
    np.testing.assert_allclose(gw, 2 * y.T @ x, rtol=1e-12)


def test_forward_mode_of_a_function_returning_its_argument():
    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    np.testing.assert_array_equal(tg.jvp(lambda a: a, (x,), (v,))[1], v)
    outs = tg.jvp(lambda a, b: (a, b * 2.0), (x, x), (v, v))[1]
    np.testing.assert_array_equal(outs[0], v)
    np.testing.assert_array_equal(outs[1], 2 * v)
    np.testing.assert_array_equal(tg.jacfwd(lambda a: a)(x), np.eye(2))
    inner = tg.jvp(lambda a: tg.jvp(lambda b: b, (a,), (v,))[1], (x,), (v,))
    np.testing.assert_array_equal(inner[0], v)
    np.testing.assert_array_equal(inner[1], np.zeros(2))
