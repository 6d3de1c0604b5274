"""NumPy's shape, indexing, padding, convolution and einsum functions on Tensors: values equal
NumPy's, gradients and tangents against central finite differences for several argument forms,
second order and tg.trace replay for a few, plain arrays in and out."""

import warnings

import numpy as np
import pytest
from finite_differences import check_derivatives

import tapegrad as tg
import tapegrad.numpy as tnp

RNG = np.random.default_rng(11)


def _r(*shape):
    return RNG.uniform(-1.5, 1.5, size=shape)


def flat(out):
    """One 1-D array (or Tensor) of all the outputs (lists and tuples concatenated)."""
    if isinstance(out, (list, tuple)):
        parts = [tnp.ravel(o) for o in out]
        return tnp.concatenate(parts) if parts else np.zeros(0)
    return tnp.ravel(out)


def check(fn, xs, second_order=False):
    """Value against NumPy; tg.grad and tg.jvp against central differences, per argument."""

    def f(*a):
        return flat(fn(*a))

    want = np.asarray(f(*xs))
    got = f(*[tg.tensor(x, requires_grad=True) for x in xs])
    assert isinstance(got, tg.Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    check_derivatives(f, xs)
    w = RNG.standard_normal(want.shape)
    if second_order:  # the Hessian of a cubic in the output, against differences of grads

        def cube(*a):
            y = f(*a)
            return tnp.sum(y * y * y * w)

        x0 = xs[0]
        rest = xs[1:]
        H = tg.hessian(lambda v: cube(v.reshape(x0.shape), *rest))(x0.ravel())
        g = tg.grad(lambda v: cube(v.reshape(x0.shape), *rest))
        cols = [
            (g(x0.ravel() + 1e-6 * e) - g(x0.ravel() - 1e-6 * e)) / 2e-6 for e in np.eye(x0.size)
        ]
        np.testing.assert_allclose(H, np.array(cols).T, rtol=1e-5, atol=1e-6)


A23, A34, A234 = _r(2, 3), _r(3, 4), _r(2, 3, 4)
V5, V3 = _r(5), _r(3)
M = np.zeros((3, 4), dtype=bool)
M[0, 1] = M[2, 3] = M[1, 0] = True
N = ~M
N[0, 0] = False

# name -> (function of arrays or Tensors, inputs)
CASES = {
    "kron": (np.kron, [A23, _r(2, 2)]),
    "kron_1d_2d": (np.kron, [V3, _r(2, 2)]),
    "kron_3d_1d": (np.kron, [_r(2, 1, 2), _r(3)]),
    "diag_1d": (np.diag, [V3]),
    "diag_1d_k2": (lambda v: np.diag(v, 2), [V3]),
    "diag_1d_k-1": (lambda v: np.diag(v, k=-1), [V3]),
    "diag_2d_k1": (lambda m: np.diag(m, 1), [A34]),
    "diag_2d_k-2": (lambda m: np.diag(m, -2), [A34]),
    "diag_2d_k_beyond": (lambda m: np.diag(m, 7), [A34]),
    "diagonal": (np.diagonal, [A34]),
    "diagonal_3d_axes": (lambda a: np.diagonal(a, 1, 2, 0), [A234]),
    "diagonal_negative": (lambda a: np.diagonal(a, offset=-1, axis1=-1, axis2=1), [A234]),
    "trace_offset_axes": (lambda a: np.trace(a, 1, 1, 2), [A234]),
    "trace_2d": (np.trace, [A34]),
    "tril": (np.tril, [A34]),
    "tril_k-1": (lambda m: np.tril(m, -1), [A34]),
    "tril_3d_k2": (lambda m: np.tril(m, k=2), [A234]),
    "tril_1d": (np.tril, [V3]),
    "triu": (np.triu, [A34]),
    "triu_k1": (lambda m: np.triu(m, 1), [A234]),
    "triu_k_beyond": (lambda m: np.triu(m, -5), [A34]),
    "repeat_scalar": (lambda a: np.repeat(a, 2), [A23]),
    "repeat_per_element": (lambda a: np.repeat(a, [1, 0, 3], axis=1), [A23]),
    "repeat_axis0": (lambda a: np.repeat(a, 2, axis=-2), [A23]),
    "tile": (lambda a: np.tile(a, 2), [A23]),
    "tile_more_dims": (lambda a: np.tile(a, (2, 1, 2)), [A23]),
    "roll": (lambda a: np.roll(a, -1), [A23]),
    "roll_axis_none_big": (lambda a: np.roll(a, 8), [A23]),
    "roll_tuples": (lambda a: np.roll(a, (1, -2), axis=(0, 2)), [A234]),
    "flip": (np.flip, [A23]),
    "flip_axis": (lambda a: np.flip(a, 1), [A234]),
    "flip_axes": (lambda a: np.flip(a, (0, 2)), [A234]),
    "flipud": (np.flipud, [A23]),
    "fliplr": (np.fliplr, [A23]),
    "rot90": (np.rot90, [A23]),
    "rot90_k-1": (lambda a: np.rot90(a, -1), [A23]),
    "rot90_k2_axes": (lambda a: np.rot90(a, 2, (1, 0)), [A23]),
    "rot90_k3_3d": (lambda a: np.rot90(a, 3, axes=(1, 2)), [A234]),
    "rollaxis": (lambda a: np.rollaxis(a, 2), [A234]),
    "rollaxis_start": (lambda a: np.rollaxis(a, 0, 3), [A234]),
    "atleast_3d_1d": (np.atleast_3d, [V3]),
    "atleast_3d_2d": (np.atleast_3d, [A23]),
    "atleast_3d_many": (lambda a, b: np.atleast_3d(a, b), [V3, A23]),
    "atleast_1d_many": (lambda a, b: np.atleast_1d(a, b), [V3, A23]),
    "atleast_2d_many": (lambda a, b: np.atleast_2d(a, b), [V3, A23]),
    "split_sections": (lambda a: np.split(a, 2, axis=2), [A234]),
    "split_indices": (lambda a: np.split(a, [1, 3], axis=1), [A34]),
    "split_empty_pieces": (lambda a: np.split(a, [0, 2, 2, 9]), [V5]),
    "array_split": (lambda a: np.array_split(a, 3), [V5]),
    "array_split_axis": (lambda a: np.array_split(a, 3, axis=-1), [A34]),
    "hsplit": (lambda a: np.hsplit(a, 2), [A34]),
    "vsplit": (lambda a: np.vsplit(a, [1]), [A34]),
    "dsplit": (lambda a: np.dsplit(a, 2), [A234]),
    "column_stack": (lambda a, b: np.column_stack([a, b]), [V3, _r(3, 2)]),
    "dstack": (lambda a, b: np.dstack((a, b)), [V3, _r(1, 3)]),
    "append": (np.append, [V3, A23]),
    "append_axis": (lambda a, b: np.append(a, b, axis=0), [A23, _r(1, 3)]),
    "pad_int": (lambda a: np.pad(a, 1), [A23]),
    "pad_constants": (
        lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4))),
        [A23],
    ),
    "pad_traced_constant": (lambda a, c: np.pad(a, (2, 1), constant_values=c), [A23, _r()]),
    "pad_traced_pairs": (
        lambda a, c: np.pad(a, ((1, 1), (2, 0)), "constant", constant_values=c),
        [A23, _r(2, 2)],
    ),
    "pad_edge": (lambda a: np.pad(a, ((0, 2), (1, 1)), "edge"), [A23]),
    "pad_reflect": (lambda a: np.pad(a, 2, "reflect"), [A23]),
    "pad_reflect_multi_fold": (lambda a: np.pad(a, (7, 4), mode="reflect"), [V3]),
    "pad_symmetric": (lambda a: np.pad(a, ((3, 1), (2, 5)), "symmetric"), [A23]),
    "pad_wrap": (lambda a: np.pad(a, (4, 5), "wrap"), [V3]),
    "select": (lambda a, b: np.select([M, N], [a, b]), [A34, A34 * 2]),
    "select_default": (lambda a, b, d: np.select([M, N], [a, b], d), [A34, _r(4), _r(3, 1)]),
    "gradient_1d": (np.gradient, [V5]),
    "gradient_2d": (np.gradient, [A34]),
    "gradient_spacing": (lambda f: np.gradient(f, 0.3), [A34]),
    "gradient_axis": (lambda f: np.gradient(f, 0.5, axis=1), [A34]),
    "gradient_axes_spacings": (lambda f: np.gradient(f, 2.0, 0.25, axis=(2, 0)), [A234]),
    "gradient_edge2": (lambda f: np.gradient(f, 0.4, edge_order=2), [A34]),
    "gradient_coords": (lambda f: np.gradient(f, np.array([0.0, 0.3, 1.0, 1.1, 2.0])), [V5]),
    "gradient_coords_edge2": (
        lambda f: np.gradient(f, np.array([0.0, 0.3, 1.0, 1.1, 2.0]), edge_order=2),
        [V5],
    ),
    "gradient_traced_spacing": (lambda f, h: np.gradient(f, h, edge_order=2), [A34, _r() + 2]),
    "gradient_traced_spacings": (
        lambda f, h: np.gradient(f, 0.5, h, axis=(-1, 0)),
        [A34, _r() + 2],
    ),
    "gradient_traced_coords": (
        lambda f, x: np.gradient(f, x, edge_order=2),
        [V5, np.array([0.0, 0.3, 1.0, 1.1, 2.0])],
    ),
    "cross": (np.cross, [_r(4, 3), _r(4, 3)]),
    "cross_broadcast": (np.cross, [_r(2, 1, 3), _r(4, 3)]),
    "cross_axes": (lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), [_r(3, 2), _r(2, 3)]),
    "cross_axis": (lambda a, b: np.cross(a, b, axis=0), [_r(3, 4), _r(3, 4)]),
    "cross_2d": (np.cross, [_r(4, 2), _r(4, 2)]),
    "cross_2_3": (np.cross, [_r(4, 2), _r(4, 3)]),
    "cross_3_2": (np.cross, [_r(3), _r(2)]),
    "linspace": (lambda a, b: np.linspace(a, b, 5), [_r(), _r()]),
    "linspace_arrays_axis": (lambda a, b: np.linspace(a, b, 4, axis=1), [_r(3), _r(2, 3)]),
    "linspace_no_endpoint": (lambda a, b: np.linspace(a, b, num=6, endpoint=False), [_r(2), _r()]),
    "linspace_retstep": (lambda a, b: np.linspace(a, b, 3, retstep=True), [_r(2), _r(2)]),
    "linspace_one": (lambda a, b: np.linspace(a, b, 1), [_r(), _r()]),
    "linspace_axis_last": (lambda a, b: np.linspace(a, b, 3, axis=-1), [_r(2), _r(2)]),
    "convolve": (np.convolve, [V5, V3]),
    "convolve_short_long": (np.convolve, [V3, _r(6)]),
    "convolve_same": (lambda a, v: np.convolve(a, v, "same"), [V5, _r(2)]),
    "convolve_same_long": (lambda a, v: np.convolve(a, v, "same"), [_r(2), _r(5)]),
    "convolve_valid": (lambda a, v: np.convolve(a, v, mode="valid"), [V5, V3]),
    "convolve_valid_long": (lambda a, v: np.convolve(a, v, mode="valid"), [_r(2), V5]),
    "correlate": (np.correlate, [V5, V3]),
    "correlate_full": (lambda a, v: np.correlate(a, v, "full"), [V3, _r(4)]),
    "correlate_same": (lambda a, v: np.correlate(a, v, "same"), [_r(6), _r(4)]),
    "correlate_same_long": (lambda a, v: np.correlate(a, v, "same"), [_r(2), V5]),
    "correlate_valid_long": (lambda a, v: np.correlate(a, v, "valid"), [V3, _r(6)]),
    "take": (lambda a: np.take(a, [5, 0, 5, 2]), [A23]),
    "take_axis_clip": (lambda a: np.take(a, [[4, -1], [0, 1]], axis=1, mode="clip"), [A23]),
    "take_wrap": (lambda a: np.take(a, [7, -8], axis=2, mode="wrap"), [A234]),
    "take_along_axis": (lambda a: np.take_along_axis(a, np.array([[2, 0, 2, 1]] * 3), 1), [A34]),
    "compress": (lambda a: np.compress([True, False, True], a, axis=1), [A23]),
    "compress_flat": (lambda a: np.compress([False, True, True], a), [A23]),
    "extract": (lambda a: np.extract(M, a), [A34]),
    "delete": (lambda a: np.delete(a, [0, 2], axis=1), [A34]),
    "delete_flat": (lambda a: np.delete(a, slice(1, 9, 3)), [A34]),
    "insert": (lambda a, v: np.insert(a, 1, v), [V5, _r(3)]),
    "insert_axis": (lambda a, v: np.insert(a, [0, 2], v, axis=1), [A23, _r(2, 1)]),
    "insert_scalar_obj_axis": (lambda a, v: np.insert(a, 1, v, axis=0), [A23, _r(3)]),
    "resize": (lambda a: np.resize(a, (4, 4)), [A23]),
    "resize_smaller": (lambda a: np.resize(a, 4), [A23]),
    "unstack": (lambda a: np.unstack(a, axis=1), [A234]),
    "diagflat": (lambda a: np.diagflat(a, -1), [A23]),
    "ediff1d": (np.ediff1d, [A23]),
    "ediff1d_ends": (lambda a, e: np.ediff1d(a, to_end=e, to_begin=[1.0, 2.0]), [V5, _r(2)]),
    "block": (
        lambda a, b, c: np.block([[a, b], [c, np.ones((1, 3))]]),
        [_r(2, 2), _r(2, 3), _r(1, 2)],
    ),
    "block_1d_mixed": (lambda a, b: np.block([a, b, 3.0]), [V3, _r(2)]),
    "block_3d": (lambda a, b: np.block([[[a]], [[b]]]), [_r(2, 2), _r(1, 2, 2)]),
    "matrix_transpose": (np.matrix_transpose, [A234]),
    "cumulative_sum": (lambda a: np.cumulative_sum(a, axis=1, include_initial=True), [A34]),
    "cumulative_prod": (lambda a: np.cumulative_prod(a), [V5]),
    "trapezoid": (np.trapezoid, [A34]),
    "trapezoid_dx_axis": (lambda y: np.trapezoid(y, dx=0.3, axis=0), [A34]),
    "trapezoid_x": (lambda y, x: np.trapezoid(y, x), [A34, np.array([0.0, 0.2, 0.9, 1.0])]),
    "trapezoid_x_nd": (lambda y, x: np.trapezoid(y, x, axis=0), [A34, _r(3, 4)]),
    "linalg_diagonal": (lambda a: np.linalg.diagonal(a, offset=1), [A234]),
    "linalg_trace": (lambda a: np.linalg.trace(a, offset=-1), [A234]),
    "linalg_cross": (lambda a, b: np.linalg.cross(a, b, axis=0), [_r(3, 2), _r(3, 2)]),
    "linalg_outer": (np.linalg.outer, [V3, V5]),
    "linalg_matmul": (np.linalg.matmul, [A23, A34]),
    "linalg_tensordot": (lambda a, b: np.linalg.tensordot(a, b, axes=1), [A23, A34]),
    "linalg_vecdot": (lambda a, b: np.linalg.vecdot(a, b, axis=0), [A34, _r(3, 1)]),
    "linalg_matrix_transpose": (np.linalg.matrix_transpose, [A234]),
    "linalg_vector_norm": (np.linalg.vector_norm, [A234]),
    "linalg_vector_norm_axes": (
        lambda a: np.linalg.vector_norm(a, axis=(0, 2), keepdims=True, ord=3),
        [A234],
    ),
    "linalg_vector_norm_inf": (lambda a: np.linalg.vector_norm(a, axis=1, ord=np.inf), [A34]),
    "linalg_matrix_norm": (np.linalg.matrix_norm, [A234]),
    "linalg_matrix_norm_1": (lambda a: np.linalg.matrix_norm(a, ord=1, keepdims=True), [A234]),
    "broadcast_arrays": (
        lambda a, b: np.broadcast_arrays(a, b, np.ones((2, 1, 1))),
        [V3, _r(4, 1)],
    ),
    "meshgrid": (lambda a, b: np.meshgrid(a, b), [V3, _r(2)]),
    "meshgrid_ij_sparse": (
        lambda a, b, c: np.meshgrid(a, b, c, indexing="ij", sparse=True),
        [V3, _r(2), _r(2)],
    ),
    "choose": (lambda a, b: np.choose(np.array([[0, 1, 1], [1, 0, 0]]), [a, b]), [A23, V3]),
    "choose_clip": (
        lambda a, b, c: np.choose(np.array([3, -1, 1]), [a, b, c], mode="clip"),
        [V3, V3 * 2, _r()],
    ),
    "bincount": (lambda w: np.bincount(np.array([3, 0, 3, 1, 3]), w), [V5]),
    "bincount_minlength": (
        lambda w: np.bincount(np.array([1, 1]), weights=w, minlength=4),
        [_r(2)],
    ),
    "vander": (np.vander, [V3]),
    "vander_n_increasing": (lambda x: np.vander(x, 5, increasing=True), [V3]),
    "vander_n1": (lambda x: np.vander(x, 1), [V3]),
    "logspace": (lambda a, b: np.logspace(a, b, 4), [_r(), _r()]),
    "logspace_base_axis": (
        lambda a, b, c: np.logspace(a, b, 3, base=c, axis=-1),
        [V3, _r(2, 3), _r(3) + 3],
    ),
    "geomspace": (lambda a, b: np.geomspace(a, b, 5), [_r() + 3, _r() + 5]),
    "geomspace_negative_axis": (
        lambda a, b: np.geomspace(a, b, 4, endpoint=False, axis=1),
        [-2 - np.abs(_r(3)), -0.5 - np.abs(_r(3))],
    ),
}
SECOND_ORDER = {
    "kron",
    "diag_1d_k2",
    "pad_reflect",
    "roll_tuples",
    "cross",
    "linspace",
    "convolve_same",
    "gradient_traced_coords",
    "select_default",
    "rot90_k3_3d",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_tangents(name):
    fn, xs = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.cross of 2-vectors
        check(fn, xs, second_order=name in SECOND_ORDER)


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_arrays_give_numpy_results(name):
    fn, xs = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = fn(*xs)
        got = getattr(tnp, fn.__name__)(*xs) if getattr(np, fn.__name__, None) is fn else fn(*xs)
    assert type(got) is type(want)
    for g, w in zip(
        got if isinstance(got, (list, tuple)) else [got],
        want if isinstance(want, (list, tuple)) else [want],
        strict=True,
    ):
        assert type(g) is type(w)
        np.testing.assert_array_equal(g, w)


def test_results_are_views_or_gathers_as_numpy_copies():
    x = tg.tensor(A234, requires_grad=True)
    assert np.flip(x, 1).grad_fn.name() == "ViewBackward0"
    assert np.diagonal(x, 1, 2, 0).grad_fn.name() == "ViewBackward0"
    assert all(p.grad_fn.name() == "ViewBackward0" for p in np.split(x, 2, axis=2))
    assert np.roll(x, 1).grad_fn.name() == "IndexBackward0"
    assert np.tile(x, 2).grad_fn.name() == "IndexBackward0"


def test_split_pieces_and_empty_splits_match_numpy():
    x = tg.tensor(V5, requires_grad=True)
    for args in (([0, 2, 2, 9],), (5,), ([],), ([3, 1],)):
        got, want = np.split(x, *args), np.split(V5, *args)
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="equal division"):
        np.split(x, 2)
    pieces = np.array_split(x, 7)
    assert [p.shape for p in pieces] == [p.shape for p in np.array_split(V5, 7)]


def test_returned_containers_and_integer_tensors_follow_numpy():
    a = tg.tensor(V3, requires_grad=True)
    assert isinstance(np.atleast_3d(a, a), tuple)
    assert isinstance(np.gradient(tg.tensor(A34, requires_grad=True)), tuple)
    y, step = np.linspace(a, 2.0, 5, retstep=True)
    np.testing.assert_allclose(step.numpy(), (2.0 - V3) / 4)
    assert np.isnan(np.linspace(a, 2.0, 1, retstep=True)[1])
    i = tg.tensor(np.arange(6).reshape(2, 3))
    r = np.roll(i, 1)
    assert (
        r.dtype == np.arange(1).dtype
        and r.tolist() == np.roll(np.arange(6).reshape(2, 3), 1).tolist()
    )


def test_index_valued_helpers_run_on_the_values():
    x = tg.tensor(A34, requires_grad=True)
    for fn in (
        np.argwhere,
        lambda a: np.argpartition(a, 1),
        np.isneginf,
        np.isreal,
        lambda a: np.searchsorted(np.sort(a.ravel()), [0.0, 1.0]),
        lambda a: np.digitize(a, [-1.0, 0.0, 1.0]),
        np.tril_indices_from,
        lambda a: np.isin(a, [A34[0, 0]]),
    ):
        got, want = fn(x), fn(A34)
        for g, w in zip(
            got if isinstance(got, tuple) else [got],
            want if isinstance(want, tuple) else [want],
            strict=True,
        ):
            assert type(g) is np.ndarray and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_broadcast_to_a_0d_shape_keeps_it_0d():
    assert np.broadcast_to(tg.tensor(2.0), ()).shape == ()
    assert np.geomspace(tg.tensor(1.0, requires_grad=True), 8.0, 4).shape == (4,)


def test_numpy_edge_cases_raise_as_numpy_does():
    x = tg.tensor(A23, requires_grad=True)
    with pytest.raises(ValueError):
        np.diag(tg.tensor(A234, requires_grad=True))
    with pytest.raises(ValueError, match="at least"):
        np.gradient(tg.tensor([1.0, 2.0], requires_grad=True), edge_order=2)
    with pytest.raises(ValueError, match="cannot be empty"):
        np.convolve(tg.tensor(np.zeros(0), requires_grad=True), V3)
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        np.cross(x, x[:, :1])
    with pytest.raises(ValueError, match="same length"):
        np.select([M], [x, x])
    with pytest.raises(ValueError, match="zero"):
        np.geomspace(x[0, 0], 0.0)
    with pytest.raises(ValueError, match="same length"):
        np.bincount([0, 1], x[0])
    with pytest.raises(TypeError, match="boolean"):
        np.select([np.ones((2, 3))], [x])
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        np.cross(x[:, :2], x[:, :2])


def test_unsupported_pad_modes_are_refused_clearly():
    x = tg.tensor(A23, requires_grad=True)
    for kw in (
        {"mode": "mean", "stat_length": 1},
        {"mode": "linear_ramp", "stat_length": 1},
        {"mode": "reflect", "reflect_type": "odd"},
        {"mode": lambda v, w, i, k: None},
    ):
        with pytest.raises(TypeError, match="numpy.pad"):
            np.pad(x, 1, **kw)


def test_trace_replays_shape_functions_in_compiled_code():
    def f(a, v):
        y = np.convolve(np.pad(np.roll(a, 1), (1, 2), "reflect"), v, "same")
        z = np.kron(np.tril(np.rot90(np.outer(y, v))), np.ones(2))
        return np.sum(
            np.cross(np.reshape(np.linspace(a[0], a[1], 6), (2, 3)), np.tile(v, (2, 1)))
        ) + np.sum(z * z)

    a, v = _r(4), _r(3)
    tr = tg.trace(f, a, v)
    assert "CUSTOM" not in tr.tape.stats()["by_op"] and "VIEW" in tr.tape.stats()["by_op"]
    for k in range(3):
        a2, v2 = _r(4), _r(3)
        val, g = tr.value_and_grad(a2, v2)
        np.testing.assert_allclose(val, f(a2, v2), rtol=1e-12)
        np.testing.assert_allclose(g, tg.grad(f)(a2, v2), rtol=1e-12, atol=1e-14)
        del k


@pytest.mark.parametrize(
    "name",
    [
        "pad_traced_pairs",
        "insert_axis",
        "block",
        "gradient_coords",
        "select_default",
        "linspace_arrays_axis",
        "correlate_same",
        "take_axis_clip",
        "split_indices",
        "diag_1d_k-1",
    ],
)
def test_trace_replays_with_new_inputs(name):
    fn, xs = CASES[name]
    w = RNG.standard_normal(np.shape(flat(fn(*xs))))

    def f(*a):
        return tnp.sum(flat(fn(*a)) * w)

    argnums = tuple(range(len(xs)))
    tr = tg.trace(f, *xs, argnums=argnums)
    assert "CUSTOM" not in tr.tape.stats()["by_op"]
    new = [x + RNG.uniform(-0.3, 0.3, np.shape(x)) for x in xs]
    val, grads = tr.value_and_grad(*new)
    np.testing.assert_allclose(val, f(*new), rtol=1e-12)
    for g, want in zip(grads, tg.grad(f, argnums=argnums)(*new), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


# ---- einsum: every form, with broadcasting ------------------------------------------------------
EINSUM = {
    "ij,ij->i broadcast": ("ij,ij->i", [_r(3, 1), _r(3, 4)]),
    "ij,ij->ij broadcast": ("ij,ij->ij", [_r(3, 1), _r(1, 4)]),
    "i,i broadcast": ("i,i", [_r(1), _r(4)]),
    "ii->i": ("ii->i", [_r(3, 3)]),
    "ii": ("ii", [_r(3, 3)]),
    "iji->j": ("iji->j", [_r(3, 2, 3)]),
    "implicit matmul": ("ij,jk", [_r(2, 3), _r(3, 4)]),
    "implicit transpose": ("ba", [_r(2, 3)]),
    "ellipsis": ("...ij,...jk->...ik", [_r(2, 2, 3), _r(3, 4)]),
    "ellipsis broadcast": ("...i,...i->...", [_r(2, 1, 3), _r(4, 3)]),
    "ellipsis implicit": ("...j,j", [_r(2, 3), _r(3)]),
    "sum all": ("ijk->", [_r(2, 3, 4)]),
    "scalar operand": (",ij->ij", [_r(), _r(2, 3)]),
    "three operands": ("ij,jk,kl->il", [_r(2, 3), _r(3, 4), _r(4, 2)]),
    "outer": ("i,j->ij", [_r(2), _r(3)]),
    "batch diag": ("bii->bi", [_r(2, 3, 3)]),
    "repeated output in two": ("ij,ij,ij->j", [_r(2, 3), _r(1, 3), _r(2, 1)]),
    "uppercase": ("Ab,bC->AC", [_r(2, 3), _r(3, 2)]),
}


@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_forms(name):
    spec, xs = EINSUM[name]
    check(lambda *a: np.einsum(spec, *a), xs)


def test_einsum_interleaved_sublists():
    a, b = _r(2, 3), _r(3, 4)
    check(lambda x, y: np.einsum(x, [0, 1], y, [1, 2], [0, 2]), [a, b])
    check(lambda x: np.einsum(x, [0, 0]), [_r(3, 3)])
    check(lambda x, y: np.einsum(x, [Ellipsis, 0], y, [Ellipsis, 0]), [_r(2, 3), _r(3)])
    check(lambda x, y: np.einsum(x, [5, 7], y, [7, 9]), [a, b])


def test_einsum_size_mismatch_still_raises():
    with pytest.raises(ValueError, match="einsum"):
        np.einsum("ij,ij->i", tg.tensor(_r(3, 2), requires_grad=True), _r(3, 4))
