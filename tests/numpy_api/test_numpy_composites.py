"""NumPy functions built as composites of tapegrad ops (tapegrad/numpy/composites.py and the
statistic pad modes and quantile methods): each against NumPy's value and central
differences of the plain NumPy function."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X0 = np.array([0.3, -1.2, 2.0, 0.7, 1.4, -0.4])
W = np.linspace(-1.0, 2.0, 64)


def _nan_above(x, c=1.0):
    return np.where(x > c, np.nan, x)


def _scalar(out):
    """A scalar of the result with distinct weights (so a wrong placement shows)."""
    flat = np.ravel(out)
    return np.sum(flat * W[: np.size(flat)]) if np.ndim(out) else out


CASES = {
    "fftshift": lambda x: np.fft.fftshift(x),
    "ifftshift": lambda x: np.fft.ifftshift(x.reshape(2, 3), axes=1),
    "full_like": lambda x: np.full_like(x, x[0]) * x,
    "swapaxes keywords": lambda x: np.swapaxes(x.reshape(2, 3), axis1=0, axis2=1),
    "sum where": lambda x: np.sum(x**2, where=np.array([1, 0, 1, 1, 0, 1], bool)),
    "sum initial": lambda x: np.sum(x.reshape(2, 3) ** 2, axis=1, initial=1.5),
    "prod where": lambda x: np.prod(x, where=np.array([1, 0, 1, 1, 0, 1], bool)),
    "mean where": lambda x: np.mean(
        x.reshape(2, 3), axis=0, where=np.array([[1, 0, 1], [1, 1, 0]], bool)
    ),
    "max initial": lambda x: np.max(x, initial=5.0) + np.max(x, initial=-5.0),
    "min where": lambda x: np.min(x, where=x > 0.0, initial=10.0),
    "interp": lambda x: np.interp(x, [-2.0, 0.0, 1.0, 3.0], [0.0, 1.0, 4.0, 2.0]),
    "interp outside": lambda x: np.interp(x * 3, [-2.0, 0.0, 1.0], [0.0, 1.0, 4.0], -1.0, 7.0),
    "interp fp": lambda x: np.interp([0.5, 1.5, 4.5], [-2.0, 0.0, 1.0, 3.0, 4.0, 5.0], x),
    "polyval coefficients": lambda x: np.polyval(x, 1.5),
    "polyval points": lambda x: np.polyval([1.0, -2.0, 3.0], x),
    "nansum": lambda x: np.nansum(_nan_above(x) ** 2),
    "nanmean": lambda x: np.nanmean(_nan_above(x).reshape(2, 3), axis=1),
    "nanvar": lambda x: np.nanvar(_nan_above(x), ddof=1),
    "nanstd": lambda x: np.nanstd(_nan_above(x)),
    "nanmax": lambda x: np.nanmax(_nan_above(x).reshape(3, 2), axis=0),
    "nanmin": lambda x: np.nanmin(_nan_above(x)),
    "nanprod": lambda x: np.nanprod(_nan_above(x)),
    "nancumsum": lambda x: np.nancumsum(_nan_above(x)),
    "nanmedian": lambda x: np.nanmedian(_nan_above(x, 0.5).reshape(2, 3), axis=1),
    "nanquantile": lambda x: np.nanquantile(_nan_above(x), [0.2, 0.5, 0.95]),
    "nanpercentile nearest": lambda x: np.nanpercentile(
        _nan_above(x).reshape(3, 2), 40.0, axis=0, method="nearest"
    ),
    "nancumprod": lambda x: np.nancumprod(_nan_above(x)),
    "cov": lambda x: np.cov(np.stack([x, x**2, np.sin(x)])),
    "cov columns, bias": lambda x: np.cov(x.reshape(3, 2), rowvar=False, bias=True),
    "cov of a vector": lambda x: np.cov(x),
    "corrcoef": lambda x: np.corrcoef(x, x**2),
    "i0": lambda x: np.i0(x * 3.0),
    "heaviside": lambda x: np.heaviside(x, 0.5) * x,
    "heaviside at 0": lambda x: np.heaviside(np.array([0.0, 1.0, -1.0]), x[:3]),
    "copysign": lambda x: np.copysign(x, -1.0) + np.copysign(2.0, x) * x,
    "ldexp": lambda x: np.ldexp(x, 3),
    "piecewise": lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v**2]),
    "piecewise default": lambda x: np.piecewise(x, [x < -1.0], [0.5, lambda v: v**3]),
    "apply_along_axis": lambda x: np.apply_along_axis(lambda r: r**2 * r[0], 1, x.reshape(2, 3)),
    "apply_along_axis vector": lambda x: np.apply_along_axis(
        lambda r: np.stack([r.sum(), (r**2).sum()]), 0, x.reshape(3, 2)
    ),
}
for _m in ("lower", "higher", "nearest", "midpoint"):
    CASES[f"quantile {_m}"] = lambda x, m=_m: np.quantile(x, [0.0, 0.3, 0.5, 0.9], method=m)
for _m in ("maximum", "minimum", "mean", "median"):
    CASES[f"pad {_m}"] = lambda x, m=_m: np.pad(x.reshape(2, 3), ((1, 0), (2, 1)), mode=m)
CASES["pad linear_ramp"] = lambda x: np.pad(
    x.reshape(2, 3), ((1, 2), (2, 1)), mode="linear_ramp", end_values=((1.0, -2.0), (0.5, 3.0))
)


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_numpy(name):
    fn = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's all-NaN and degrees-of-freedom warnings
        got = fn(tg.tensor(X0))
        want = fn(X0)
        np.testing.assert_allclose(np.asarray(tg.tensor(got).numpy()), want, rtol=1e-12)
        g = tg.grad(lambda x: _scalar(fn(x)))(X0)
        np.testing.assert_allclose(g, _fd(lambda x: _scalar(fn(x)), X0), rtol=1e-6, atol=1e-6)


def test_full_like_with_a_traced_fill_value_keeps_its_value_and_gradient():
    # a shape-only shortcut once filled with zeros and dropped the gradient of the fill value
    x = tg.tensor([2.0, 3.0], requires_grad=True)
    y = np.full_like(x, x[0])
    assert y.tolist() == [2.0, 2.0]
    (y * x).sum().backward()
    assert x.grad.tolist() == [2.0 + 2.0 + 3.0, 2.0]
    assert np.full_like(x, 7.0).tolist() == [7.0, 7.0]  # a plain fill value: NumPy's array
    assert isinstance(np.full_like(x, 7.0), np.ndarray)


def test_full_r_and_c_keep_the_graph_in_tapegrad_numpy():
    g = tg.grad(lambda x: tnp.sum(tnp.full((3,), x[0]) * x[:3]))(X0)
    np.testing.assert_allclose(g, [X0[:3].sum() + X0[0], X0[0], X0[0], 0, 0, 0])
    f = lambda x: tnp.sum(tnp.r_[x, 1.0, x[:2] * 2, 0:3] ** 2)  # noqa: E731
    assert float(tg.tensor(f(tg.tensor(X0))).numpy()) == pytest.approx(
        np.sum(np.r_[X0, 1.0, X0[:2] * 2, 0:3] ** 2)
    )
    np.testing.assert_allclose(tg.grad(f)(X0), _fd(f, X0), rtol=1e-6)
    c = tnp.c_[tg.tensor(X0[:3]), np.ones(3)]
    np.testing.assert_array_equal(c.numpy(), np.c_[X0[:3], np.ones(3)])
    with pytest.raises(tg.ConversionError):  # NumPy's own r_ converts: refused, not dropped
        np.r_[tg.tensor(X0, requires_grad=True), 1.0]


SEQUENCES = {
    # lists of arrays of different shapes: tapegrad.numpy once stacked each list into one
    # array (as for np.sum([x, y])) and refused them; np.* on Tensors took them
    "row_stack": lambda m, x: m.row_stack((x.reshape(2, 3), x[:3], np.ones((1, 3)))),
    "select": lambda m, x: m.select([x > 0.5, x < 0.0], [x**2, x[0] * 3.0], default=x[1]),
    "choose": lambda m, x: m.choose(np.array([0, 1, 2, 0, 1, 2]), [x, x[2] * 2.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_sequences_of_arrays_of_other_shapes_in_tapegrad_numpy(name):
    def fn(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # np.row_stack
            return SEQUENCES[name](tnp, x)

    want = fn(X0)  # tapegrad.numpy on plain arrays: NumPy's call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert np.array_equal(want, SEQUENCES[name](np, X0))
    np.testing.assert_allclose(fn(tg.tensor(X0)).numpy(), want, rtol=1e-15)
    g = tg.grad(lambda x: _scalar(fn(x)))(X0)
    np.testing.assert_allclose(g, _fd(lambda x: _scalar(fn(x)), X0), rtol=1e-6, atol=1e-6)


def test_diag_embed_and_make_diagonal():
    x = np.arange(6.0).reshape(2, 3)
    for offset in (0, 1, -2):
        got = tnp.diag_embed(tg.tensor(x), offset).numpy()
        want = np.stack([np.diag(r, offset) for r in x])
        np.testing.assert_array_equal(got, want)
    got = tnp.make_diagonal(tg.tensor(x), axis1=0, axis2=2).numpy()  # matrices in axes 0 and 2
    np.testing.assert_array_equal(got, np.moveaxis(np.stack([np.diag(r) for r in x]), 0, 1))
    g = tg.grad(lambda v: tnp.sum(tnp.diag_embed(v) * np.arange(9.0).reshape(3, 3)))(x[0])
    np.testing.assert_array_equal(g, [0.0, 4.0, 8.0])


def test_decisions_read_from_values_are_guarded_in_a_trace():
    f = lambda x: np.sum(np.interp(x, [-2.0, 0.0, 1.0, 3.0], [0.0, 1.0, 4.0, 2.0]))  # noqa: E731
    tr = tg.trace(f, np.array([0.5, 2.0]))
    v, g = tr.value_and_grad(np.array([0.6, 2.5]))  # the same segments: replayed
    ve, ge = tg.value_and_grad(f)(np.array([0.6, 2.5]))
    assert v == pytest.approx(ve) and np.allclose(g, ge)
    with pytest.raises(tg.RetraceRequired):  # another segment
        tr.value_and_grad(np.array([-0.5, 2.5]))
    h = lambda x: np.nansum(np.where(x > 1.0, np.nan, x) ** 2)  # noqa: E731
    tr = tg.trace(h, np.array([0.5, 2.0]))
    with pytest.raises(tg.RetraceRequired):  # another entry is NaN
        tr.value_and_grad(np.array([1.5, 0.5]))


def test_edges_and_refusals():
    with pytest.warns(RuntimeWarning):  # NumPy warns too
        assert np.isnan(np.nanmax(tg.tensor([np.nan, np.nan])).item())  # all-NaN: NaN, as NumPy
    with pytest.raises(ValueError, match="initial"):
        np.max(tg.tensor(X0), where=np.zeros(6, bool))
    with pytest.raises(TypeError, match="xp"):
        tg.grad(lambda p: np.sum(np.interp(0.5, p, [0.0, 1.0])))(np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="integers"):
        np.ldexp(tg.tensor(X0), tg.tensor(np.full(6, 0.5)))
    with pytest.raises(NotImplementedError, match="inverted_cdf"):
        np.quantile(tg.tensor(X0), 0.5, method="inverted_cdf")
    with pytest.raises(TypeError, match="stat_length"):
        np.pad(tg.tensor(X0, requires_grad=True), 1, mode="mean", stat_length=2)


def test_tree_map_pairs_dict_entries_by_key():
    a = {"w": 1.0, "b": [2.0, {"y": 1.0, "x": 2.0}]}
    b = {"b": [20.0, {"x": 5.0, "y": 7.0}], "w": 10.0}
    out = tg.tree.tree_map(lambda u, v: u + v, a, b)
    assert out == {"w": 11.0, "b": [22.0, {"y": 8.0, "x": 7.0}]}
    assert list(out) == ["w", "b"]  # in the first tree's order
    with pytest.raises(ValueError, match="structure"):
        tg.tree.tree_map(lambda u, v: u + v, {"w": 1.0}, {"v": 1.0})


def test_i0_against_mpmath_to_the_third_derivative():
    """np.i0 by the trapezoidal rule: value and derivatives (I1, I0 - I1/x, ...) at 0, in the
    bulk, past the 30 and 700 switches and next to the overflow, to ~1e-13 relative."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    xs = [0.0, 1e-3, -0.5, 2.0, 29.9, 30.5, -100.0, 699.0, 701.0, -713.0]
    for k, fn in enumerate([np.i0, tg.grad(np.i0), tg.grad(tg.grad(np.i0))]):
        for x in xs:
            want = float(mp.diff(lambda z: mp.besseli(0, z), x, k))
            got = fn(x) if k else float(np.i0(tg.tensor(x)))
            assert got == pytest.approx(want, rel=1e-13, abs=1e-300), (k, x)
    # third order at 0 is exactly 0 (odd derivative of an even function), the Hessian agrees
    assert tg.grad(tg.grad(tg.grad(np.i0)))(0.0) == 0.0
    x = np.array([0.0, 3.0, -40.0])
    np.testing.assert_allclose(
        np.diag(tg.hessian(lambda x: np.sum(np.i0(x)))(x)),
        [tg.grad(tg.grad(np.i0))(v) for v in x],
        rtol=1e-14,
    )
    assert np.isinf(np.i0(tg.tensor(714.0)).item())
    assert np.isnan(np.i0(tg.tensor(np.nan)).item())


def test_i0_node_count_is_a_guard_in_a_trace():
    tr = tg.trace(lambda x: np.sum(np.i0(x)), np.array([1.0, 2.0]))
    np.testing.assert_allclose(
        tr.grad(np.array([3.0, -4.0])),
        tg.grad(lambda x: np.sum(np.i0(x)))(np.array([3.0, -4.0])),
        rtol=1e-14,
    )
    with pytest.raises(tg.RetraceRequired):
        tr.grad(np.array([300.0, 1.0]))


def test_where_with_one_branch_refuses_as_numpy():
    # np.where(cond, x) has no value where cond is False: NumPy raises; a NaN there would
    # look like an answer
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    for call in (lambda: np.where(x, 1.0), lambda: np.where(x > 0, None, x)):
        with pytest.raises(ValueError, match="both or neither"):
            call()
    with pytest.raises(ValueError, match="both or neither"):
        tg.grad(lambda v: np.sum(np.where(v, v)))(np.ones(2))
