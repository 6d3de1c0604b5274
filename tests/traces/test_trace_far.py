"""A trace replays far from where it was recorded exactly as eager evaluation computes there:
nothing computed from a traced value is frozen into the trace as a constant (the stabilising
shift of logsumexp and its family is a tape row; masks are guarded)."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

from op_cases import CASES

try:  # the floor run installs no extras: the tests that need SciPy say so
    import tapegrad.scipy.special as tsp
except ImportError:
    tsp = None
needs_scipy = pytest.mark.skipif(tsp is None, reason="tapegrad.scipy needs the scipy extra")


MOVES = {"+800": lambda v: v + 800.0, "-800": lambda v: v - 800.0, "x400": lambda v: v * 400.0}


def _same(got, want, what="", rtol=1e-9, atol=1e-300):
    """Equal as IEEE values: the same non-finite values, finite ones within rtol."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, what
    fin = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    inf = ~fin & ~np.isnan(want)
    np.testing.assert_array_equal(got[inf], want[inf], err_msg=what)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol, err_msg=what)


def _check_far(f, xs, argnums=0):
    """Record f at xs; at each move, the replay equals eager value_and_grad (or refuses)."""
    tr = tg.trace(f, *xs, argnums=argnums)
    replays = 0
    for move in MOVES.values():
        ys = [move(x) for x in xs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                got = tr.value_and_grad(*ys)
            except tg.RetraceRequired:
                continue  # a guard saw another branch: refusing is right
            want = tg.value_and_grad(f, argnums=argnums)(*ys)
        _same(got[0], want[0])
        for g, w in zip(
            got[1] if isinstance(argnums, tuple) else [got[1]],
            want[1] if isinstance(argnums, tuple) else [want[1]],
            strict=True,
        ):
            _same(g, w)
        replays += 1
    return replays


STABILISED = {
    "tg.logsumexp": lambda x: tg.logsumexp(x),
    "tg.softmax": lambda x: tg.softmax(x)[2],
    "F.log_softmax": lambda x: F.log_softmax(x)[0],
    "cross_entropy": lambda x: F.cross_entropy(tg.reshape(x, (1, 3)), np.array([1])),
}
if tsp is not None:
    STABILISED.update(
        {
            "logsumexp": lambda x: tsp.logsumexp(x),
            "logsumexp_b": lambda x: tsp.logsumexp(x, b=np.array([1.0, 0.5, 2.0])),
            "softmax": lambda x: tsp.softmax(x)[0],
            "log_softmax": lambda x: tsp.log_softmax(x)[1],
        }
    )


@pytest.mark.parametrize("name", sorted(STABILISED))
def test_stabilising_shift_follows_the_replayed_input(name):
    f = STABILISED[name]
    tr = tg.trace(f, np.array([0.1, 0.2, 0.3]))
    x = np.array([800.0, 801.0, 799.0])
    v, g = tr.value_and_grad(x)
    ve, ge = tg.value_and_grad(f)(x)
    assert np.isfinite(v) and np.all(np.isfinite(g))
    assert v == pytest.approx(ve, rel=1e-14)
    np.testing.assert_allclose(g, ge, rtol=1e-13, atol=1e-300)
    if name == "logsumexp":
        assert v == pytest.approx(801.4076059644444, rel=1e-15)


def test_an_all_minus_inf_slice_at_replay_is_refused_not_shifted_to_nan():
    tr = tg.trace(lambda x: tg.logsumexp(x), np.array([0.1, 0.2]))
    with pytest.raises(tg.RetraceRequired):
        tr.value_and_grad(np.array([-np.inf, -np.inf]))


@needs_scipy
def test_logsumexp_entries_with_zero_weight_do_not_set_the_shift():
    x = np.array([1.0, 1000.0])
    v, g = tg.value_and_grad(lambda a: tsp.logsumexp(a, b=np.array([1.0, 0.0])))(x)
    assert v == 1.0 and g.tolist() == [1.0, 0.0]  # SciPy: 1.0
    gb = tg.grad(lambda b: tsp.logsumexp(np.array([1.0, 2.0]), b=b))(np.array([1.0, 0.0]))
    np.testing.assert_allclose(gb, [1.0, np.e], rtol=1e-15)  # d/db = exp(a - out), at b = 0 too


def test_nan_to_num_masks_are_guarded():
    f = lambda x: np.sum(np.nan_to_num(x * x, posinf=5.0))  # noqa: E731
    tr = tg.trace(f, np.array([1.0, 2.0, 3.0]))
    got = tr.value_and_grad(np.array([2.0, 1.0, 0.5]))
    assert got[0] == 5.25 and got[1].tolist() == [4.0, 2.0, 1.0]
    for x in ([1.0, np.nan, 3.0], [np.inf, 1.0, 2.0]):  # a replaced entry: eager's or retrace
        with pytest.raises(tg.RetraceRequired):
            tr.value_and_grad(np.array(x))
    tr_nan = tg.trace(f, np.array([1.0, np.nan, 3.0]), retrace=True)
    v, g = tr_nan.value_and_grad(np.array([1.0, 2.0, 3.0]))  # the recorded NaN is gone
    assert v == 14.0 and g.tolist() == [2.0, 4.0, 6.0]


def test_binary_cross_entropy_masks_are_guarded():
    t = np.array([1.0, 0.0])
    f = lambda p: F.binary_cross_entropy(p, t)  # noqa: E731
    tr = tg.trace(f, np.array([0.3, 0.6]))
    p = np.array([0.2, 0.9])
    got, want = tr.value_and_grad(p), tg.value_and_grad(f)(p)
    assert got[0] == pytest.approx(want[0], rel=1e-14)
    with pytest.raises(tg.RetraceRequired):  # p reaches 0: the clamped-log branch changes
        tr.value_and_grad(np.array([0.0, 0.9]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_op_replays_far_from_its_recording_as_eager(name):
    f, xs = CASES[name]
    xs = [np.asarray(x, np.float64) for x in xs]

    def scalar(*a):
        return tg.sum(f(*a))

    assert _check_far(scalar, xs, argnums=tuple(range(len(xs)))) >= 1  # not all refused


SHAPE_ONLY = {
    "zeros_like": lambda x: np.sum(x * 2 + np.zeros_like(x)),
    "ones_like": lambda x: np.sum(x * np.ones_like(x)),
    "full_like": lambda x: np.sum(x * np.full_like(x, 2.0)),
    "empty_like": lambda x: np.sum(x + 0.0 * np.zeros(np.shape(np.empty_like(x)))),
    "shape": lambda x: np.sum(x) * np.shape(x)[0],
    "ndim": lambda x: np.sum(x) * np.ndim(x),
    "size": lambda x: np.sum(x) * np.size(x),
}


@pytest.mark.parametrize("name", sorted(SHAPE_ONLY))
def test_shape_only_numpy_functions_do_not_pin_values(name):
    f = SHAPE_ONLY[name]
    tr = tg.trace(f, np.array([1.0, 2.0]))
    x = np.array([3.0, -4.0])
    got, want = tr.value_and_grad(x), tg.value_and_grad(f)(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_grad_many_of_an_empty_batch_is_empty():
    tr = tg.trace(lambda x: np.sum(x**2), np.array([1.0, 2.0]))
    assert tr.grad_many(np.zeros((0, 2))).shape == (0, 2)
    assert tr.grad_many(np.zeros(0)).shape == (0, 2)
    tr1 = tg.trace(lambda x: x**2, 1.0)
    assert tr1.grad_many(np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(tr1.grad_many(np.array([1.0, 2.0])), [2.0, 4.0])


def _public_functions():
    """(name, f) for the public functions of nn.functional and tapegrad.scipy.special called
    on one array (or with a constant second argument), and the scipy.stats densities."""
    import tapegrad.nn.functional as nnf

    mods = [("F", nnf)] + ([] if tsp is None else [("tsp", tsp)])
    out = []
    for mname, m in mods:
        for name in sorted(getattr(m, "__all__", [])):
            fn = getattr(m, name)
            if callable(fn) and not isinstance(fn, type):
                out.append((f"{mname}.{name}", fn))
                out.append((f"{mname}.{name}(x, 2)", lambda x, fn=fn: fn(x, 2.0)))
                out.append((f"{mname}.{name}(2, x)", lambda x, fn=fn: fn(2.0, x)))
    if tsp is not None:
        import tapegrad.scipy.stats as tst

        shapes = {"t": (3.0,), "gamma": (2.0,), "beta": (2.0, 3.0), "chi2": (3.0,)}
        for dist in ("norm", "t", "gamma", "beta", "expon", "chi2", "logistic", "laplace"):
            for meth in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
                fn = getattr(getattr(tst, dist, None), meth, None)
                if fn is not None:
                    args = shapes.get(dist, ())
                    out.append((f"{dist}.{meth}", lambda x, fn=fn, a=args: fn(x, *a)))
    return out


def test_public_functions_replay_as_eager_at_new_inputs():
    """No public function freezes a value read at record time: each one that records on one
    array replays at other inputs to eager's value and gradient (or refuses to replay)."""
    x0 = np.array([0.2, 0.45, 0.7, 0.3, 0.55, 0.6])
    xs = [x0 * 1.7 + 0.02, x0[::-1] * 0.9, np.array([0.9, 0.1, 0.5, 0.8, 0.05, 0.33])]
    replayed = set()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name, fn in _public_functions():
            f = lambda x, fn=fn: tg.sum(fn(x))  # noqa: E731
            try:
                tr = tg.trace(f, x0)
            except (TypeError, ValueError, RuntimeError, NotImplementedError, tg.ConversionError):
                continue  # needs other arguments, or is refused with a message
            for x in xs:
                try:
                    got = tr.value_and_grad(x)
                except tg.RetraceRequired:
                    continue
                want = tg.value_and_grad(f)(x)
                _same(got[0], want[0], name)
                _same(got[1], want[1], name, atol=1e-12)  # (sum of softmax: 0 and 1e-17)
                replayed.add(name)
    assert len(replayed) >= (10 if tsp is None else 40), sorted(replayed)


# inputs where composites branch on values: zeros, signs, NaN, infinities, tiny values
SPECIAL = {
    "zeros": np.zeros(6),
    "negative": -np.array([0.6, 0.55, 0.3, 0.7, 0.45, 0.2]),
    "nan": np.array([0.2, np.nan, 0.7, 0.3, 0.55, 0.6]),
    "inf": np.array([np.inf, 0.45, -np.inf, 0.3, 0.55, 0.6]),
    "mixed": np.array([0.0, -0.45, 0.7, 0.0, -2.0, 1e-300]),
}
# order statistics pick one of equal values for the gradient (each choice a subgradient):
# at all-equal inputs the replay's sort and NumPy's may pick another
_TIE_CHOOSERS = ("median", "quantile", "percentile")
_NOT_FUNCTIONS = {  # transforms, constructors, random draws and context managers
    "grad", "value_and_grad", "jacobian", "hessian", "jvp", "vjp", "hvp", "jacfwd", "jacrev",
    "trace", "traced", "checkpoint", "custom_jvp", "custom_vjp", "fixed_point", "load_trace",
    "gradcheck", "no_grad", "enable_grad", "set_grad_enabled", "detect_anomaly",
    "current_tape", "manual_seed", "rand", "randn", "randint", "randperm", "tensor",
    "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
}  # fmt: skip


def _tg_functions_and_methods():
    import inspect

    import tapegrad.numpy as tnp

    out = []
    for prefix, ns, names in [
        ("tg", tg, tg.__all__),
        ("tnp", tnp, [n for n in dir(tnp) if not n.startswith("_")]),
    ]:
        for name in sorted(names):
            fn = getattr(ns, name)
            if name in _NOT_FUNCTIONS or isinstance(fn, type) or inspect.ismodule(fn):
                continue
            if callable(fn):
                out.append((f"{prefix}.{name}", lambda x, fn=fn: fn(x)))
                out.append((f"{prefix}.{name}(x, 1)", lambda x, fn=fn: fn(x, 1)))
    for m in dir(tg.tensor([1.0])):
        if not m.startswith("_") and not m.endswith("_"):
            out.append((f"x.{m}()", lambda x, m=m: getattr(x, m)()))
            out.append((f"x.{m}(0)", lambda x, m=m: getattr(x, m)(0)))
    return out


def test_functions_and_methods_replay_at_zeros_nan_inf_and_signs_as_eager():
    """What a composite decides from values (a mask of zeros, NaN, infinities, a sign) is a
    guarded comparison: a replay at such inputs gives eager's value and gradient, or
    retraces; it never reuses the recorded choice (a norm recorded away from 0 gave a nan
    gradient at 0, one recorded at 0 gave 0 everywhere)."""
    x0 = np.array([0.2, 0.45, 0.7, 0.3, 0.55, 0.6])
    replayed = set()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name, fn in _tg_functions_and_methods() + _public_functions():
            f = lambda x, fn=fn: tg.sum(fn(x) * 1.0)  # noqa: E731
            try:
                tr = tg.trace(f, x0)
                tr(x0)
            except Exception:  # needs other arguments, returns no array, or is refused
                continue
            for case, x in SPECIAL.items():
                try:
                    got = tr.value_and_grad(x)
                except tg.RetraceRequired:
                    continue
                except (ValueError, np.linalg.LinAlgError) as e:  # a refusal: eager's too
                    with pytest.raises(type(e)):
                        tg.value_and_grad(f)(x)
                    continue
                try:
                    want = tg.value_and_grad(f)(x)
                except (ValueError, ZeroDivisionError, np.linalg.LinAlgError):
                    continue  # eager refuses this input (the replay's NaN shows it too)
                _same(got[0], want[0], f"{name} at {case}")
                if not (case == "zeros" and any(t in name for t in _TIE_CHOOSERS)):
                    _same(got[1], want[1], f"{name} at {case}", atol=1e-12)
                replayed.add(name)
    assert len(replayed) >= (300 if tsp is None else 550), len(replayed)
