"""Indexing and assignment, hunted in NumPy code inside the transforms and on Tensors.

NumPy code (``tg.grad`` & co.): basic, advanced and boolean reads (NumPy's rule that advanced
indices separated by a slice, None or Ellipsis put their dims first; 0-d, empty, negative and
repeated indices), ``np.take`` / ``take_along_axis`` / ``compress`` / ``extract`` /
``choose`` / ``select`` / ``diagonal`` / ``triu`` / ``roll`` / ``ix_`` / ``nonzero`` /
``delete`` / ``insert`` and writes (``a[idx] = v`` keeping the LAST of repeated writes,
``a[idx] += v``, ``a[mask] *= 2``, writes through views, overlapping ``a[1:] = a[:-1]``,
broadcast values).  Each program is linear in its input, so its exact Jacobian comes from
NumPy itself (the program run on plain NumPy basis vectors): tapegrad's value, ``tg.jacobian``,
``tg.jvp``, ``tg.hessian`` of a weighted square and a ``tg.trace`` replay at another point
are compared with it.  Programs that multiply through an index are compared with central
differences (``check_derivatives``).  Replays whose masks or data-dependent indices change
must raise ``tg.RetraceRequired``.

Tensor API: ``x[idx]``, ``x[idx] = v``, scatter / gather / take_along_dim / masked_fill /
masked_scatter / index_add / index_copy / index_fill / index_select / take, values and
gradients against PyTorch (float64, ``tests/torch_programs.py``), second order through
``create_graph=True``.  NumPy functions tapegrad does not differentiate (``np.put``,
``np.add.at``, ``out=``) must refuse with an error naming the function.

Each finding (fixed) keeps the wrong value it gave in a comment above its test.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tests.finite_differences import check_derivatives

torch = pytest.importorskip("torch")

from tests.torch_programs import _compare, _Lib, _raises  # noqa: E402

X = np.arange(1.0, 25.0).reshape(2, 3, 4) / 7
MASK = np.arange(24).reshape(2, 3, 4) % 5 < 2
RNG = np.random.default_rng(7)
T_DIR = RNG.standard_normal(X.shape)


def _set(key, value_of):
    """``b = a * 1.0; b[key] = value_of(a, b); return b``."""

    def f(a):
        b = a * 1.0
        b[key] = value_of(a, b)
        return b

    return f


def _iop(key, op, value_of):
    """``b = a * 1.0; b[key] op= value_of(a)`` (``op`` one of "+-*/")."""

    def f(a):
        b = a * 1.0
        v = value_of(a)
        if op == "+":
            b[key] += v
        elif op == "-":
            b[key] -= v
        else:
            b[key] *= v
        return b

    return f


def _view_write(a):
    b = a * 1.0
    c = b[:, ::2]
    c[:, 0] = a[0, 1] * 3
    c -= a[:, :2] * 0.5
    return b


def _view_chain_write(a):
    b = a * 1.0
    c = b.transpose(2, 0, 1)[::-1]
    c[0, 1] = a[0, :, 0]
    d = b.reshape(6, 4)
    d[[5, 0], 1:3] = a[1, 0, :2]
    return b


def _newaxis_view_write(a):
    b = a * 1.0
    c = b[None, 1, ..., 2:]
    c[0, :, 0] = a[0, :, 1] * 2
    c[...] *= 3
    return b


def _ravel_write(a):
    b = a * 1.0
    r = b.ravel()
    r[[1, 7]] = a[1, 2, :2]
    return b


def _flatten_is_a_copy(a):
    b = a * 1.0
    r = b.flatten()
    r[1] = a[1, 2, 3] * 7
    return b + r.reshape(2, 3, 4) * 2


def _transpose_reshape_is_a_copy(a):
    b = a * 1.0
    r = b.T.reshape(-1)
    r[1] = 100.0 * a[0, 0, 0]
    return b * 3 + r.reshape(4, 3, 2).T


def _swap_rows_views(a):
    b = a[0] * 1.0
    b[0], b[2] = b[2], b[0]  # NumPy: b[2] gets the new b[0] (a view): the old b[2]
    return b


def _swap_rows_fancy(a):
    b = a[0] * 1.0
    b[[0, 2]] = b[[2, 0]]
    return b


def _swap_scalars(a):
    b = a[0, 0] * 1.0
    b[0], b[3] = b[3], b[0]
    return b


def _flat_write(a):
    b = a * 1.0
    b.flat[[0, 4, 4, -1]] = a[1, 1, :4]
    return b


def _zero_d_writes(a):
    b = a * 1.0
    b[np.array(1), np.int64(2)] = a[0, 0] * 5
    b[np.int32(0), 1, np.array(3)] += a[1, 1, 1]
    return b


def _fill(a):
    b = a[0] * 1.0
    b[1].fill(2.0)
    return b + a[1]


def _sort_copy_then_write(a):
    b = a[0, 0] * 1.0
    c = b[::-1].copy()
    c[0] = 1.0
    return b + c


def _empty_writes(a):
    b = a * 1.0
    b[np.zeros(0, int)] = 5.0
    b[np.zeros(X.shape, bool)] = a[0, 0, :0]
    b[:, 3:1] = 1.0
    return b


def _triu_indices_write(a):
    b = a[0, :, :3] * 1.0
    b[np.triu_indices(3, 1)] = a[1, 0, :3] * 2
    return b


def _repeated_last_wins_2d(a):
    b = a[0] * 1.0
    b[[1, 1, 0, 1], [0, 0, 3, 0]] = a[1, 2] * np.array([1.0, 2.0, 3.0, 4.0])
    return b


def _repeated_negative_alias(a):
    b = a[0, 0] * 1.0
    b[[-1, 3, -4, 0]] = a[1, 1] * 2  # -1 and 3, -4 and 0 name the same element: last wins
    return b


def _overlap_chain(a):
    b = a * 1.0
    b[..., 1:] = b[..., :-1]
    b[:, :-1] += b[:, 1:]
    b[::-1] = b
    return b


READS = {
    "adv_sep_slice": lambda a: a[[1, 0], :, [3, 1]],
    "adv_sep_none": lambda a: a[[1, 0], None, [2, 0]],
    "adv_sep_ellipsis_none": lambda a: a[[1, 0], None, ..., [3, 1]],
    "int_sep_adv": lambda a: a[1, :, [0, 3, 3]],
    "adv_sep_int": lambda a: a[[1, 1], :, 2],
    "adv_adjacent": lambda a: a[:, [2, 0], [1, 1]],
    "adv_three": lambda a: a[[0, 1, 1], [2, 0, 2], [3, 3, 0]],
    "adv_three_sep": lambda a: a[[0, 1], None, [2, 0], None, [3, 3]],
    "adv_broadcast": lambda a: a[np.array([[0], [1]]), np.array([0, 2, 1])],
    "adv_broadcast_sep": lambda a: a[np.array([[0], [1]]), :, np.array([0, 2, 1])],
    "adv_list_of_lists": lambda a: a[0][[[0, 1], [2, 2]], [[3], [0]]],
    "adv_repeated": lambda a: a[[0, 0, 1, -1, -2]],
    "adv_negative": lambda a: a[-1, [-1, -3], -4],
    "adv_sep_bool": lambda a: a[[1, 0], :, np.array([True, False, False, True])],
    "bool_full": lambda a: a[MASK],
    "bool_leading": lambda a: a[np.array([[True, False, True], [False, False, True]]), 1:],
    "bool_trailing": lambda a: a[:, np.array([[1, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 1]], bool)],
    "bool_with_adv": lambda a: a[[1, 0], np.array([True, False, True])],
    "bool_list": lambda a: a[:, [True, False, True]],
    "bool_scalar_true": lambda a: a[True],
    "bool_scalar_false": lambda a: a[np.False_],
    "zero_d_adv": lambda a: a[np.array(1), np.array([2, 0]), np.array(3)],
    "zero_d_only": lambda a: a[np.array(1)],
    "zero_d_pair": lambda a: a[np.array(1), np.array(2)],
    "numpy_ints": lambda a: a[np.int32(1), np.int64(-1)],
    "empty_adv": lambda a: a[:, np.zeros(0, int)],
    "empty_bool": lambda a: a[np.zeros((2, 3), bool)],
    "empty_slice": lambda a: a[:, 3:1],
    "ellipsis_newaxis": lambda a: a[..., None, 1:3],
    "newaxis_ellipsis_int": lambda a: a[None, ..., -1, None],
    "negative_steps": lambda a: a[:, ::-2, 1::3],
    "flat_fancy": lambda a: a.flat[[0, 23, 23, 5]],
    "flat_slice": lambda a: a.flat[3:9:2],
    "ix": lambda a: a[np.ix_([1, 0], [2, 2], [0, 3])],
    "ix_bool": lambda a: a[0][np.ix_([True, False, True], [True, False, True, False])],
    "nonzero": lambda a: a[np.nonzero(np.arange(24).reshape(2, 3, 4) % 7 == 1)],
    "where_one_arg": lambda a: a[np.where(MASK)],
    "argwhere": lambda a: a[tuple(np.argwhere(np.arange(24).reshape(2, 3, 4) % 7 == 1).T)],
    "searchsorted": lambda a: a.ravel()[np.searchsorted([0.5, 1.5, 2.5], [0.1, 1.0, 3.0])],
    "unravel_index": lambda a: a[np.unravel_index([5, 22, 0], (2, 3, 4))],
    "ravel_multi_index": lambda a: a.ravel()[
        np.ravel_multi_index(([1, 0], [2, 2], [3, 0]), (2, 3, 4))
    ],
    "triu_indices": lambda a: a[0][np.triu_indices(3, 1, 4)],
    "diag_indices": lambda a: a[:, np.arange(3), np.arange(3)],
    "swapaxes_then_adv": lambda a: np.swapaxes(a, 0, 2)[[3, 0], :, [1, 0]],
    "T_then_adv": lambda a: a.T[1:, [2, 0]],
    "take_flat": lambda a: np.take(a, [23, 0, -24, 5]),
    "take_axis": lambda a: np.take(a, [[2, 0], [1, 1]], axis=-1),
    "take_scalar": lambda a: np.take(a, 5),
    "take_scalar_axis": lambda a: np.take(a, -1, axis=1),
    "take_wrap": lambda a: np.take(a, [5, -7], axis=2, mode="wrap"),
    "take_clip": lambda a: np.take(a, [5, -7], axis=2, mode="clip"),
    "take_method": lambda a: a.take([1, 1, 0], axis=1),
    "take_along_axis": lambda a: np.take_along_axis(a, np.array([[[0], [3], [3]]]), axis=2),
    "take_along_axis_0": lambda a: np.take_along_axis(a, np.array([[[1, 0, 0, 1]]]), axis=0),
    "take_along_axis_none": lambda a: np.take_along_axis(a, np.array([11, 0, 0]), axis=None),
    "take_along_argsort": lambda a: np.take_along_axis(a, np.argsort(-X, axis=1), axis=1),
    "compress": lambda a: np.compress([0, 1, 1], a, axis=1),
    "compress_short": lambda a: np.compress([1, 0, 0], a, axis=-1),
    "compress_flat": lambda a: np.compress([1, 0, 0, 1, 1], a),
    "extract": lambda a: np.extract(X > 2, a),
    "choose": lambda a: np.choose(np.array([[0], [1], [0]]), [a[0], a[1]]),
    "choose_wrap": lambda a: np.choose([0, 3, -1, 1], [a[0, 0], a[0, 1], a[1, 2]], mode="wrap"),
    "choose_clip": lambda a: np.choose([0, 3, -1, 1], [a[0, 0], a[0, 1], a[1, 2]], mode="clip"),
    "choose_scalar_choice": lambda a: np.choose(np.array([0, 1, 1, 0]), [a[0, 0], 0.5]),
    "select": lambda a: np.select([X > 2, X > 1], [a, -a], default=a * 3),
    "diagonal": lambda a: np.diagonal(a, 1, axis1=2, axis2=1),
    "diagonal_negative": lambda a: np.diagonal(a, -1, axis1=0, axis2=2),
    "diagonal_method": lambda a: a[0].diagonal(offset=-1),
    "diag": lambda a: np.diag(a[1], 1),
    "trace": lambda a: np.trace(a, 1, axis1=1, axis2=2),
    "triu": lambda a: np.triu(a, -1),
    "tril": lambda a: np.tril(a, 2),
    "roll_flat": lambda a: np.roll(a, 25),
    "roll_axis": lambda a: np.roll(a, -7, axis=2),
    "roll_same_axis_twice": lambda a: np.roll(a, (1, 1), axis=(2, 2)),
    "roll_two_axes": lambda a: np.roll(a, (1, -2), axis=(0, 1)),
    "delete": lambda a: np.delete(a, [0, 2], axis=2),
    "delete_flat": lambda a: np.delete(a, [0, -1, 5]),
    "delete_slice": lambda a: np.delete(a, slice(None, None, 2), axis=1),
    "delete_bool": lambda a: np.delete(a, [True, False, True], axis=1),
    "insert_constant": lambda a: np.insert(a, [1, 1], 0.0, axis=2),
    "insert_values": lambda a: np.insert(a, 2, a[:, :, 0] * 3, axis=2),
    "flip": lambda a: np.flip(a, (0, 2)),
    "rot90": lambda a: np.rot90(a, -1, axes=(1, 2)),
    "repeat": lambda a: np.repeat(a, [1, 0, 2], axis=1),
    "resize": lambda a: np.resize(a[0, 0], 7),
}

WRITES = {
    "set_int": _set(1, lambda a, b: a[0] * 2),
    "set_slice_broadcast": _set((slice(None), slice(1, 3)), lambda a, b: a[0, 0]),
    "set_leading_ones": _set((0, slice(1, 3), slice(None, 2)), lambda a, b: a[None, 1, :2, 2:]),
    "set_ellipsis_int": _set((Ellipsis, 0), lambda a, b: a[..., 3] * 2),
    "set_negative": _set((-1, slice(None), [-1, -4]), lambda a, b: a[0, :2, 1:]),
    "set_adv_sep": _set(([0, 1], slice(None), [1, 0]), lambda a, b: a[0, :2, :3] * 3),
    "set_int_sep_adv": _set((1, slice(None), [0, 3]), lambda a, b: a[0, :2, :3] * 2),
    "set_adv_broadcast": _set((slice(None), [0, 2]), lambda a, b: a[1, 1]),
    "set_mask_scalar_of_a": _set(MASK, lambda a, b: a[1, 2, 3]),
    "set_mask_values": _set(MASK, lambda a, b: -a[MASK] * 2),
    "set_bool_middle": _set((slice(None), np.array([True, False, True])), lambda a, b: a[:, 1:2]),
    "set_bool_list": _set((0, [True, False, True]), lambda a, b: a[1, 0]),
    "set_bool_scalar": _set(True, lambda a, b: a[::-1]),
    "set_ix": _set(np.ix_([1, 0], [2, 0], [3]), lambda a, b: a[0, :2, :2, None]),
    "set_nonzero": _set(np.nonzero(MASK), lambda a, b: a[MASK][::-1]),
    "set_ellipsis_all": _set(Ellipsis, lambda a, b: a[::-1, ::-1]),
    "set_negative_step": _set((slice(None), slice(None, None, -2)), lambda a, b: a[:, :2] * 4),
    "set_repeated_rows": _set([1, -1, 0, 1], lambda a, b: a[::-1][[0, 1, 1, 0]] * 3),
    "set_repeated_elements": _set(([0, 0, 1], [2, 2, 0], [1, 1, 3]), lambda a, b: a[1, 1, :3]),
    "set_repeated_columns": _set((slice(None), [1, 1]), lambda a, b: a[:, :2] * 5),
    "set_repeated_broadcast": _set([0, 1, 0], lambda a, b: a[1, 0]),
    "set_repeated_2d": _repeated_last_wins_2d,
    "set_repeated_negative_alias": _repeated_negative_alias,
    "set_overlap_shift": _set(slice(1, None), lambda a, b: b[:-1]),
    "set_overlap_last_axis": _set((Ellipsis, slice(1, None)), lambda a, b: b[..., :-1]),
    "set_overlap_reverse": _set(slice(None), lambda a, b: b[::-1, ::-1]),
    "set_overlap_row_reverse": _set(0, lambda a, b: b[0][::-1]),
    "set_overlap_transpose": _set((0, slice(0, 3), slice(0, 3)), lambda a, b: b[0, :3, :3].T),
    "set_overlap_chain": _overlap_chain,
    "iadd_slice": _iop((slice(None), slice(None, None, 2)), "+", lambda a: a[0, 0]),
    "isub_int": _iop((1, 2), "-", lambda a: a[0, 0] * 2),
    "imul_mask_constant": _iop(MASK, "*", lambda a: 3.0),
    "iadd_repeated": _iop(([0, 0, 1], [1, 1, 2], [3, 3, 0]), "+", lambda a: a[1, 0, :3] * 10),
    "iadd_repeated_rows": _iop([1, 0, 1], "+", lambda a: a[1, :, :1] * 2),
    "iadd_adv_sep": _iop(([0, 1], slice(None), [3, 3]), "+", lambda a: a[0, :2, :3]),
    "view_write": _view_write,
    "view_chain_write": _view_chain_write,
    "newaxis_view_write": _newaxis_view_write,
    "ravel_write": _ravel_write,
    "flatten_is_a_copy": _flatten_is_a_copy,
    "transpose_reshape_is_a_copy": _transpose_reshape_is_a_copy,
    "swap_rows_views": _swap_rows_views,
    "swap_rows_fancy": _swap_rows_fancy,
    "swap_scalars": _swap_scalars,
    "flat_write": _flat_write,
    "zero_d_writes": _zero_d_writes,
    "fill": _fill,
    "copy_then_write": _sort_copy_then_write,
    "empty_writes": _empty_writes,
    "triu_indices_write": _triu_indices_write,
}

LINEAR = {**READS, **WRITES}


def _exact_jacobian(f, x):
    """The Jacobian of a linear ``f`` from NumPy itself: ``f`` run on plain basis arrays."""
    out0 = np.asarray(f(np.zeros_like(x)), dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = 1.0
        cols.append((np.asarray(f(e.reshape(x.shape)), dtype=float) - out0).ravel())
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_numpy_code_value_jacobian_jvp_hessian_and_replay(name):
    f = LINEAR[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = np.asarray(f(X.copy()))
        J = _exact_jacobian(f, X)
        w = np.random.default_rng(len(name)).standard_normal(ref.shape)
        out, tan = tg.jvp(f, (X,), (T_DIR,))
        np.testing.assert_allclose(out, ref, rtol=1e-14, atol=0)
        assert np.shape(out) == ref.shape
        np.testing.assert_allclose(tan, (J @ T_DIR.ravel()).reshape(ref.shape), rtol=1e-12)
        jac = tg.jacobian(f)(X)
        np.testing.assert_allclose(np.reshape(jac, J.shape), J, rtol=1e-14, atol=0)

        def loss(a):
            return np.sum(w * f(a) ** 2)

        H = tg.hessian(loss)(X)
        href = 2 * J.T @ (w.reshape(-1)[:, None] * J)
        np.testing.assert_allclose(np.reshape(H, href.shape), href, rtol=1e-12, atol=1e-12)
        tr = tg.trace(loss, X)
        x2 = X * 1.5 - 0.25
        val, g = tr.value_and_grad(x2)
        y2 = np.asarray(f(x2.copy())).reshape(-1)
        np.testing.assert_allclose(val, np.sum(w.reshape(-1) * y2**2), rtol=1e-12)
        np.testing.assert_allclose(g, (2 * J.T @ (w.reshape(-1) * y2)).reshape(X.shape), rtol=1e-12)


# ---- programs that multiply through an index: central differences ---------------------------
V6 = np.array([0.3, 2.0, -1.0, 0.5, 1.2, 0.7])
M6 = np.array([1, 0, 1, 1, 0, 0], bool)


def _n_mask_imul(a):
    b = a * a[0]
    b[M6] *= a[2:5]
    return np.sin(b)


def _n_view_imul(a):
    b = a * 1.0
    c = b[::2]
    c *= a[3:] ** 2
    c[1] *= a[0]
    return np.exp(b) * a


def _n_repeated_imul(a):
    b = a * 1.0
    b[[2, 2, 2]] *= a[:3]  # buffered: once, by the last a[2]
    return np.sin(b) * b


def _n_repeated_iadd_products(a):
    b = a**2
    b[[0, 0, 3]] += a[1:4] * a[0]
    return np.sin(b)


def _n_setitem_of_products(a):
    b = a.reshape(2, 3) * 1.0
    b[:, 1:] = b[:, :2] * a[:2]
    b[::-1] = b
    b[0, ::-1] = b[0] ** 2
    return np.sin(b).ravel()


def _n_mask_from_data_write(a):
    b = a * 1.0
    b[a > 0.4] = a[a > 0.4] ** 3
    return b


def _n_where_index_write(a):
    b = a * 1.0
    b[np.where(a > 0.4)[0][:2]] *= a[-1]
    return b


def _n_view_of_view(a):
    b = a.reshape(2, 3) * 1.0
    c = b.T
    c[1] = a[:2] ** 2
    d = b[:, ::-1]
    d[:, 0] += a[3] * a[4]
    return b.ravel()


def _n_argsort_gather(a):
    return a[np.argsort(a)] * np.arange(6.0) + np.take_along_axis(a, np.argsort(-a), 0) ** 2


def _n_choose_select(a):
    return np.select([a > 1, a > 0], [a * a[1], a**2], default=-a) + np.choose(
        (a > 0.4).astype(int), [a, a**3]
    )


NONLINEAR = {
    "mask_imul": _n_mask_imul,
    "view_imul": _n_view_imul,
    "repeated_imul": _n_repeated_imul,
    "repeated_iadd_products": _n_repeated_iadd_products,
    "setitem_of_products": _n_setitem_of_products,
    "mask_from_data_write": _n_mask_from_data_write,
    "where_index_write": _n_where_index_write,
    "view_of_view": _n_view_of_view,
    "argsort_gather": _n_argsort_gather,
    "choose_select": _n_choose_select,
}


@pytest.mark.parametrize("name", sorted(NONLINEAR))
def test_numpy_code_with_products_against_central_differences(name):
    f = NONLINEAR[name]
    out = tg.jvp(f, (V6,), (np.ones(6),))[0]
    np.testing.assert_allclose(out, f(V6.copy()), rtol=1e-14, atol=0)
    check_derivatives(f, [V6])
    tr = tg.trace(lambda a: np.sum(f(a) * np.arange(1.0, 7.0)), V6)
    x2 = V6 * 1.0001  # same masks and orders: a replay is right or refuses
    g = tg.grad(lambda a: np.sum(f(a) * np.arange(1.0, 7.0)))(x2)
    try:
        replayed = tr.grad(x2)
    except tg.RetraceRequired:
        return
    np.testing.assert_allclose(replayed, g, rtol=1e-12)


# ---- replays at other masks and indices must refuse -----------------------------------------
def _r_mask_write(a):
    b = a * 1.0
    b[a > 0.4] *= 2
    return np.sum(b**2)


REPLAYS = {
    "argmax_index": lambda a: a[np.argmax(a)] * a[0],
    "argsort_index": lambda a: np.sum(a[np.argsort(a)] * np.arange(6.0)),
    "nonzero_index": lambda a: np.sum(a[np.nonzero(a > 0.4)] ** 2),
    "where_index": lambda a: np.sum(a[np.where(a > 0.4)[0]] ** 2),
    "mask_read": lambda a: np.sum(a[a > 0.4] ** 2),
    "mask_write": _r_mask_write,
    "searchsorted_index": lambda a: np.sum(a[np.searchsorted([-2.0, 0.0, 1.0], a)] ** 3),
    "count_as_slice_end": lambda a: np.sum(a[: np.count_nonzero(a > 0.4)]),
    "sum_of_mask_as_index": lambda a: a[np.sum(a > 0.4)],
    "choose_by_mask": lambda a: np.sum(np.choose((a > 0.4).astype(int), [a, a**2])),
    "take_by_argsort": lambda a: np.sum(np.take(a, np.argsort(-a)[:2]) * np.array([1.0, 10.0])),
    "compress_by_mask": lambda a: np.sum(np.compress(a > 0.4, a) ** 2),
    "extract_by_mask": lambda a: np.sum(np.extract(a > 0.4, a) ** 2),
    "roll_by_count": lambda a: np.sum(np.roll(a, int(np.sum(a > 0.4))) * np.arange(6.0)),
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_a_replay_at_another_mask_or_index_refuses(name):
    f = REPLAYS[name]
    tr = tg.trace(f, V6)
    np.testing.assert_allclose(tr.grad(V6), tg.grad(f)(V6), rtol=1e-14)
    with pytest.raises(tg.RetraceRequired):
        tr.grad(V6[::-1].copy())
    tr2 = tg.trace(f, V6, retrace=True)
    x1 = V6[::-1].copy()
    np.testing.assert_allclose(tr2.grad(x1), tg.grad(f)(x1), rtol=1e-14)


@pytest.mark.parametrize("arg", [1, np.array([1, 2]), M6])
def test_a_replay_with_another_index_argument_refuses(arg):
    def f(x, i):
        b = x * 1.0
        b[i] = 0.0
        return np.sum(b**2) * np.sum(x[i])

    tr = tg.trace(f, V6, arg)
    other = 3 if isinstance(arg, int) else (np.array([4, 4]) if arg.dtype.kind == "i" else ~arg)
    with pytest.raises(tg.RetraceRequired, match="argument 1"):
        tr.grad(V6, other)


NUMPY_RAISES = {
    "take_out_of_range": lambda a: np.take(a, [6]),
    "choose_out_of_range": lambda a: np.choose([0, 2], [a[:2], a[2:4]]),
    "take_along_axis_out_of_range": lambda a: np.take_along_axis(a, np.array([7]), 0),
    "compress_too_long": lambda a: np.compress([1, 0, 0, 0, 0, 0, 1], a),
    "float_array_index": lambda a: a[np.array([1.0])],
    "float_index": lambda a: a[1.0],
    "float_list_index": lambda a: a[[1.0, 2.0]],
    "tensor_float_index": lambda a: a[a[:1]],
    "mask_too_short": lambda a: a[np.array([True, False])],
    "set_shape_mismatch": lambda a: (a * 1.0).reshape(2, 3).__setitem__([0, 1], a[:2]),
}


@pytest.mark.parametrize("name", sorted(NUMPY_RAISES))
def test_numpy_code_raises_where_numpy_raises(name):
    f = NUMPY_RAISES[name]
    with pytest.raises((IndexError, ValueError)):
        f(V6.copy())
    with pytest.raises((IndexError, ValueError)):
        tg.grad(lambda a: np.sum(f(a)))(V6)


# ---- NumPy functions without a derivative refuse by name ------------------------------------
def _refused(call):
    def f(a):
        b = a * 1.0
        call(b, a)
        return np.sum(b)

    return f


REFUSED = {
    "numpy.put": _refused(lambda b, a: np.put(b, [0, 5], a[:2])),
    "numpy.put_along_axis": _refused(
        lambda b, a: np.put_along_axis(b, np.array([0, 2]), a[:2], axis=0)
    ),
    "numpy.place": _refused(lambda b, a: np.place(b, M6, a[:2])),
    "numpy.putmask": _refused(lambda b, a: np.putmask(b, M6, a)),
    "numpy.fill_diagonal": _refused(lambda b, a: np.fill_diagonal(b.reshape(2, 3), a[0])),
    "numpy.copyto": _refused(lambda b, a: np.copyto(b, a * 3, where=M6)),
    "numpy.add.at": _refused(lambda b, a: np.add.at(b, [0, 0, 2], a[:3])),
    "numpy.subtract.at": _refused(lambda b, a: np.subtract.at(b, [0, 0], a[:2])),
    "numpy.multiply.at": _refused(lambda b, a: np.multiply.at(b, [0, 0], a[:2])),
    "numpy.maximum.at": _refused(lambda b, a: np.maximum.at(b, [0, 0], a[:2])),
    "numpy.minimum.at": _refused(lambda b, a: np.minimum.at(b, [1, 1], a[:2])),
    "numpy.add.reduceat": _refused(lambda b, a: np.add.reduceat(b, [0, 4, 2])),
    "numpy.maximum.reduceat": _refused(lambda b, a: np.maximum.reduceat(b, [0, 4])),
    "numpy.multiply": _refused(lambda b, a: np.multiply(b, a, out=b)),
    "numpy.add": _refused(lambda b, a: np.add(a, 1.0, out=b, where=M6)),
    "numpy.cumsum": _refused(lambda b, a: np.cumsum(a, out=b)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_numpy_writes_without_a_derivative_refuse_by_name(name):
    with pytest.raises(TypeError, match=name.replace(".", r"\.")):
        tg.grad(REFUSED[name])(V6)


def test_a_tensor_stored_into_a_numpy_array_refuses():
    def f(a):
        b = np.zeros((3, 3))
        b[np.triu_indices(3)] = a
        return np.sum(b)

    with pytest.raises(TypeError, match="would silently drop its gradient"):
        tg.grad(f)(V6)


# ---- the Tensor API against PyTorch ---------------------------------------------------------
X34 = np.arange(1.0, 13.0).reshape(3, 4) / 5 + 0.1
V4 = np.array([0.7, -1.3, 2.1, 0.4])
M34 = X34 > 1.5


def _c(L):
    return L.T(X34) * 1.0


def _setitem(L, key, value, base=None):
    y = _c(L) if base is None else base
    y[key] = value
    return y


def _sep(L):
    return L.T(X34.reshape(3, 2, 2))


TENSOR = {
    "get_adv_sep_slice": lambda L: _sep(L)[L.I([0, 2]), :, L.I([1, 0])],
    "get_adv_sep_none": lambda L: _sep(L)[L.I([0, 1]), None, L.I([1, 0])],
    "get_adv_sep_ellipsis": lambda L: _sep(L)[L.I([0, 1]), ..., L.I([1, 0])],
    "get_adv_int_last": lambda L: _sep(L)[L.I([0, 2]), :, 1],
    "get_adv_int_slice_int": lambda L: _sep(L)[L.I([0, 2]), 1:, 0],
    "get_bool": lambda L: L.T(X34)[L.B(M34)],
    "get_bool_rows": lambda L: L.T(X34)[L.B([True, False, True]), 1:],
    "get_bool_and_adv": lambda L: L.T(X34)[L.B([True, False, True]), L.I([1, 3])],
    "get_list": lambda L: L.T(X34)[[0, 0, 2]],
    "get_two_lists": lambda L: L.T(X34)[[0, 2], [1, 1]],
    "get_negative": lambda L: L.T(X34)[-1, -2:],
    "get_ellipsis_none": lambda L: L.T(X34)[..., None, 1],
    "get_0d_tensor": lambda L: L.T(X34)[L.I(1)],
    "get_0d_and_adv": lambda L: L.T(X34)[L.I(1), L.I([2, 3])],
    "get_empty": lambda L: L.T(X34)[L.I(np.zeros(0, int))],
    "get_int32": lambda L: L.T(X34)[L.m.tensor(np.array([2, 0], np.int32))],
    "get_where": lambda L: L.T(X34)[L.m.where(L.T(X34, rg=False) > 1.2)],
    "set_int": lambda L: _setitem(L, 1, L.T(V4)),
    "set_mask_scalar": lambda L: _setitem(L, L.B(M34), L.T(V4)[0]),
    "set_mask_vector": lambda L: _setitem(L, L.B(np.arange(12).reshape(3, 4) % 3 == 0), L.T(V4)),
    "set_overlap_clone": lambda L: (lambda y: _setitem(L, slice(1, None), y[:-1].clone(), y))(
        _c(L)
    ),
    "set_broadcast": lambda L: _setitem(L, (slice(None), L.I([1, 3])), L.T(V4)[:2]),
    "set_adv_sep": lambda L: _setitem(
        L, (L.I([0, 2]), slice(None), L.I([1, 0])), L.T(V4).reshape(2, 2), _sep(L) * 1.0
    ),
    "set_negative": lambda L: _setitem(L, (-1, L.I([-1, -4])), L.T(V4)[:2]),
    "set_adv_plus_own": lambda L: (lambda y: _setitem(L, L.I([0, 2]), y[L.I([0, 2])] + 1, y))(
        _c(L)
    ),
    "set_mask_times_own": lambda L: (lambda y: _setitem(L, L.B(M34), y[L.B(M34)] * 2, y))(_c(L)),
    "set_value_requires_grad_into_constant": lambda L: _setitem(
        L, (slice(None), 0), L.T(V4)[:3], L.T(X34, rg=False) * 1.0
    ),
    "iadd_through_view": lambda L: (lambda y: (y[::2].__iadd__(L.T(V4)), y)[1])(_c(L)),
    "sub_through_view": lambda L: (lambda y: (y[:, ::2].sub_(L.T(V4)[:2]), y)[1])(_c(L)),
    "mul_through_diagonal": lambda L: (lambda y: (y.diagonal().mul_(3), y)[1])(_c(L)),
    "masked_fill_through_view": lambda L: (lambda y: (y[1:].masked_fill_(L.B(M34[1:]), 0.0), y)[1])(
        _c(L)
    ),
    "index_add_through_view": lambda L: (
        lambda y: (y[:, 1:].index_add_(1, L.I([0, 0]), L.T(X34[:, :2])), y)[1]
    )(_c(L)),
    "scatter_through_transpose": lambda L: (
        lambda y: (y.t().scatter_(0, L.I([[0, 1, 2]]), L.T(X34[:1, :3] * 7)), y)[1]
    )(_c(L)),
    "scatter": lambda L: _c(L).scatter_(1, L.I([[0, 1], [3, 2], [1, 0]]), L.T(X34[:, :2] * 3)),
    "scatter_value": lambda L: _c(L).scatter_(0, L.I([[2, 1, 0, 1]]), 5.0),
    "scatter_out_of_place": lambda L: _c(L).scatter(
        1, L.I([[0, 1], [3, 2], [1, 0]]), L.T(X34[:, 1:3] * 3)
    ),
    "scatter_add": lambda L: _c(L).scatter_add_(
        1, L.I([[0, 0], [3, 3], [1, 0]]), L.T(X34[:, :2] * 3)
    ),
    "scatter_add_rows": lambda L: _c(L).scatter_add(
        0, L.I([[0, 0, 1, 2], [0, 2, 2, 2]]), L.T(X34[:2] * 3)
    ),
    "gather": lambda L: L.m.gather(L.T(X34), 1, L.I([[0, 0], [3, 1], [2, 2]])),
    "gather_rows": lambda L: L.T(X34).gather(0, L.I([[0, 2, 1, 1], [2, 2, 2, 0]])),
    "gather_small_index": lambda L: L.T(X34).gather(1, L.I([[0], [3]])),
    "gather_negative_dim": lambda L: L.T(X34).gather(-2, L.I([[1, 0, 2, 2]])),
    "take_along_dim": lambda L: L.m.take_along_dim(L.T(X34), L.I([[0, 0], [3, 1], [2, 2]]), 1),
    "take_along_dim_flat": lambda L: L.m.take_along_dim(L.T(X34), L.I([11, 0, 0])),
    "take_along_dim_broadcast": lambda L: L.m.take_along_dim(L.T(X34), L.I([[0, 3]]), dim=1),
    "take_along_dim_negative": lambda L: L.m.take_along_dim(L.T(X34), L.I([[-1], [0], [1]]), 1),
    "masked_fill": lambda L: L.T(X34).masked_fill(L.B(M34), -1.0),
    "masked_fill_broadcast": lambda L: L.T(X34).masked_fill(L.B([True, False, False, True]), 2.0),
    "masked_fill_tensor": lambda L: L.T(X34).masked_fill(L.B(M34), L.T(2.5)),
    "masked_fill_inplace": lambda L: _c(L).masked_fill_(L.B(M34), 0.0),
    "masked_scatter": lambda L: L.T(X34).masked_scatter(
        L.B(M34), L.T(np.arange(12.0).reshape(3, 4) * 0.1)
    ),
    "masked_scatter_broadcast": lambda L: _c(L).masked_scatter_(
        L.B([[True, False, True, False]]), L.T(np.arange(12.0).reshape(3, 4) * 0.1)
    ),
    "masked_select": lambda L: L.T(X34).masked_select(L.B(M34)),
    "masked_select_broadcast": lambda L: L.m.masked_select(
        L.T(X34), L.B([True, False, False, True])
    ),
    "index_add": lambda L: _c(L).index_add_(0, L.I([0, 0, 2]), L.T(X34 * 2)),
    "index_add_alpha": lambda L: _c(L).index_add_(1, L.I([3, 3]), L.T(X34[:, :2]), alpha=-2.0),
    "index_add_out_of_place": lambda L: _c(L).index_add(1, L.I([3, 0]), L.T(X34[:, :2])),
    "index_add_negative_dim": lambda L: _c(L).index_add(-1, L.I([1, 1]), L.T(X34[:, :2])),
    "index_copy": lambda L: _c(L).index_copy_(0, L.I([2, 0]), L.T(X34[:2] * 2)),
    "index_copy_out_of_place": lambda L: _c(L).index_copy(1, L.I([2, 0]), L.T(X34[:, :2] * 2)),
    "index_fill": lambda L: _c(L).index_fill_(1, L.I([2, 0]), -1.0),
    "index_fill_repeated": lambda L: _c(L).index_fill(1, L.I([1, 1]), 3.0),
    "index_fill_negative": lambda L: _c(L).index_fill(1, L.I([-1]), 0.0),
    "index_select": lambda L: L.T(X34).index_select(1, L.I([3, 0, 3])),
    "index_select_rows": lambda L: L.m.index_select(L.T(X34), 0, L.I([2, 2])),
    "take": lambda L: L.T(X34).take(L.I([[0, 5], [-1, 5]])),
    "triu": lambda L: L.T(X34).triu(1),
    "tril": lambda L: L.m.tril(L.T(X34), -1),
    "roll": lambda L: L.m.roll(L.T(X34), (1, -2), (0, 1)),
    "roll_flat": lambda L: L.T(X34).roll(5),
    "flip": lambda L: L.T(X34).flip(0, 1),
    "rot90": lambda L: L.m.rot90(L.T(X34), 1, (0, 1)),
    "select_negative": lambda L: L.T(X34).select(1, -1),
    "narrow": lambda L: L.T(X34).narrow(1, 1, 2),
    "searchsorted_index": lambda L: L.T(X34).reshape(-1)[
        L.m.searchsorted(L.T([0.0, 1.0, 2.0], rg=False), L.T([0.5, 1.5], rg=False))
    ],
}


@pytest.mark.parametrize("name", sorted(TENSOR))
def test_tensor_indexing_same_values_and_gradients_as_torch(name):
    _compare(TENSOR[name])


TENSOR_RAISES = {
    "get_out_of_range": lambda L: L.T(X34)[L.I([3])],
    "get_negative_out_of_range": lambda L: L.T(X34)[L.I([-4])],
    "get_mask_too_short": lambda L: L.T(X34)[L.B([True, False])],
    "get_mask_wrong_shape": lambda L: L.T(X34)[L.B([[True, False, True, True]])],
    "get_float_index": lambda L: L.T(X34)[L.m.tensor([1.0])],
    "gather_out_of_range": lambda L: L.T(X34).gather(1, L.I([[4], [0], [1]])),
    "gather_index_too_big": lambda L: L.T(X34).gather(1, L.I([[0], [1], [2], [3]])),
    "index_add_out_of_range": lambda L: _c(L).index_add(0, L.I([3]), L.T(X34[:1])),
    "index_add_wrong_count": lambda L: _c(L).index_add(0, L.I([0, 1]), L.T(X34[:1])),
    "index_select_out_of_range": lambda L: L.T(X34).index_select(1, L.I([4])),
    "take_out_of_range": lambda L: L.T(X34).take(L.I([12])),
    "masked_fill_wrong_shape": lambda L: L.T(X34).masked_fill(L.B([True, False, True]), 0.0),
    "masked_fill_vector_value": lambda L: L.T(X34).masked_fill(
        L.B([1, 0, 1, 0]), L.m.tensor([1.0, 2.0], dtype=L.m.float64)
    ),
    "set_wrong_shape": lambda L: _setitem(L, L.I([0, 1]), L.T(X34)[:, :2]),
    "set_into_leaf": lambda L: _setitem(L, 0, 1.0, L.T(X34)),
    "select_out_of_range": lambda L: L.T(X34).select(1, 4),
}


@pytest.mark.parametrize("name", sorted(TENSOR_RAISES))
def test_tensor_indexing_raises_where_torch_raises(name):
    assert _raises(TENSOR_RAISES[name], "torch") is not None
    assert _raises(TENSOR_RAISES[name], "tg") is not None


def _second_order(prog, name):
    """x's and v's gradients of ``sum(w * prog(x, v) ** 2)`` with create_graph, then the
    gradients of the sum of their squares."""
    L = _Lib(name)
    x, v = L.T(X34), L.T(V4)
    y = prog(L, x, v)
    w = L.T(np.random.default_rng(3).standard_normal(tuple(y.shape)), rg=False)
    gx, gv = L.m.autograd.grad((y * y * w).sum(), [x, v], create_graph=True, allow_unused=True)
    s = sum((g * g).sum() for g in (gx, gv) if g is not None)
    hs = L.m.autograd.grad(s, [x, v], allow_unused=True)
    arr = [None if g is None else np.asarray(g.detach().numpy()) for g in (gx, gv, *hs)]
    return [np.zeros_like(X34 if k % 2 == 0 else V4) if a is None else a for k, a in enumerate(arr)]


def _write_into(y, key, value):
    y[key] = value
    return y


SECOND = {
    "getitem_repeated": lambda L, x, v: x[L.I([0, 0, 2]), L.I([1, 1, 3])] * v[:3],
    "getitem_mask": lambda L, x, v: x[L.B(M34)] ** 2 * v[0],
    "setitem_adv": lambda L, x, v: _write_into(x * x, (L.I([0, 2]), L.I([1, 3])), v[:2] * x[1, :2]),
    "setitem_mask": lambda L, x, v: _write_into(x * x, L.B(M34), v[0] ** 2),
    "setitem_slice": lambda L, x, v: _write_into(
        x * 1.0, (slice(None), slice(1, 3)), x[:, :2] * v[:2]
    ),
    "scatter": lambda L, x, v: (x * x).scatter(1, L.I([[0, 1], [3, 2], [1, 0]]), x[:, 1:3] * v[:2]),
    "scatter_add": lambda L, x, v: (x * x).scatter_add(
        1, L.I([[0, 0], [3, 3], [1, 0]]), x[:, 1:3] * v[:2]
    ),
    "gather": lambda L, x, v: (x * v).gather(1, L.I([[0, 0], [3, 1], [2, 2]])) ** 2,
    "index_add": lambda L, x, v: (x * x).index_add(0, L.I([0, 0, 2]), x * v),
    "index_copy": lambda L, x, v: (x * x).index_copy(1, L.I([2, 0]), x[:, 1:3] * v[:2]),
    "masked_fill": lambda L, x, v: (x * x).masked_fill(L.B(M34), 0.0) * v,
    "masked_scatter": lambda L, x, v: (x * x).masked_scatter(L.B(M34), x * v),
    "take_along_dim": lambda L, x, v: L.m.take_along_dim(x * v, L.I([[0, 0], [3, 1], [2, 2]]), 1),
    "index_select": lambda L, x, v: (x * v).index_select(1, L.I([3, 3, 0])) ** 2,
    "take": lambda L, x, v: (x * v).take(L.I([[0, 5], [-1, 5]])) ** 2,
    "add_through_view": lambda L, x, v: (lambda y: (y[::2].add_(v * x[1]), y)[1])(x * x),
    "mul_through_view": lambda L, x, v: (lambda y: (y[:, 1].mul_(v[:3]), y)[1])(x * x),
    "index_fill": lambda L, x, v: (x * v).index_fill(1, L.I([1, 1]), 3.0),
    "mul_through_diagonal": lambda L, x, v: (lambda y: (y.diagonal().mul_(v[:3]), y)[1])(x * x),
    "masked_select": lambda L, x, v: (x * v).masked_select(L.B(M34)) ** 2,
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_tensor_indexing_second_order_as_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _second_order(SECOND[name], "torch")
        got = _second_order(SECOND[name], "tg")
    for k, (a, b) in enumerate(zip(got, ref, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"result {k}")


# ---- findings --------------------------------------------------------------------------------
# PyTorch applies an int (or 0-d integer tensor) index as a select before the advanced ones, so
# ``x[1, :, idx]`` keeps idx's dim in place; NumPy counts the int as advanced, and advanced
# indices separated by a slice put their dims first.  Inside transforms NumPy's rule is right;
# on Tensors outside them tapegrad applies it too and gives NumPy's numbers.
A222 = np.arange(8.0).reshape(2, 2, 2)
VAL22 = np.array([[10.0, 20.0], [30.0, 40.0]])


def _torch_int_key(kind):
    def prog(L):
        x = L.T(A222)
        if kind == "get":
            return x[1, :, L.I([0, 1])]
        if kind == "get_0d":
            return x[L.I(1), :, L.I([0, 1])]
        if kind == "get_none":
            return L.T(X34)[None, L.I([2, 0]), None, 1]
        y = x * 1.0
        y[1, :, L.I([0, 1])] = L.T(VAL22)
        return y

    return prog


# was wrong: the Tensor API's x[1, :, idx] (int, slice, index array) gave NumPy's transposed
# [[4, 6], [5, 7]] where PyTorch gives [[4, 5], [6, 7]]; x[None, idx, None, 1] had shape
# (2, 1, 1), PyTorch's (1, 2, 1); x[1, :, idx] = v wrote v transposed
@pytest.mark.parametrize("kind", ["get", "get_0d", "get_none", "set"])
def test_tensor_int_and_index_array_split_by_a_slice_follow_torch(kind):
    _compare(_torch_int_key(kind))


def test_numpy_int_and_index_array_split_by_a_slice_keep_numpys_order():
    def f(a):
        return a[1, :, [0, 1]] * np.array([[1.0, 2.0], [3.0, 4.0]])

    np.testing.assert_array_equal(tg.jvp(f, (A222,), (A222,))[0], f(A222))
    g = np.zeros_like(A222)
    g[1, :, [0, 1]] = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(tg.grad(lambda a: np.sum(f(a)))(A222), g)


NEGATIVE = {
    "gather": lambda L: L.T(X34).gather(1, L.I([[-1], [0], [1]])),
    "scatter": lambda L: _c(L).scatter(1, L.I([[-1], [0], [1]]), 9.0),
    "scatter_add": lambda L: _c(L).scatter_add(1, L.I([[-1], [0], [1]]), L.T(X34[:, :1])),
    "index_add": lambda L: _c(L).index_add(0, L.I([-1]), L.T(X34[:1])),
    "index_copy": lambda L: _c(L).index_copy(0, L.I([-1]), L.T(X34[:1])),
    "index_select": lambda L: L.T(X34).index_select(1, L.I([-1])),
}


# was wrong: a negative index in gather / scatter / scatter_add / index_add / index_copy /
# index_select counted from the end (x.gather(1, [[-1], [0], [1]]) gave [[0.9], [1.1], [2.1]])
# where PyTorch raises 'index -1 is out of bounds'
@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_tensor_negative_index_raises_as_torch(name):
    assert _raises(NEGATIVE[name], "torch") is not None
    assert _raises(NEGATIVE[name], "tg") is not None


# was wrong: a uint8 Tensor index is PyTorch's (deprecated) mask, x[uint8([1, 0, 1])] rows 0
# and 2; tapegrad read rows 1, 0, 1 (NumPy's integer index): refused, naming .bool() / .long()
def test_tensor_uint8_index_is_refused_naming_mask_or_indices():
    x = tg.tensor(X34)
    u = np.array([1, 0, 1], np.uint8)
    for key in (tg.tensor(u), u, (tg.tensor(u), slice(None))):
        with pytest.raises(IndexError, match=r"index\.bool\(\)"):
            x[key]
        with pytest.raises(IndexError, match=r"index\.bool\(\)"):
            x.detach()[key] = 0.0
    np.testing.assert_array_equal(x[tg.tensor(u).bool()].numpy(), X34[[0, 2]])
    np.testing.assert_array_equal(x[tg.tensor(u).long()].numpy(), X34[[1, 0, 1]])
    # inside NumPy code a uint8 array is NumPy's integer index
    g = tg.grad(lambda a: np.sum(a[u]))(X34)
    want = np.zeros_like(X34)
    np.add.at(want, [1, 0, 1], 1.0)
    np.testing.assert_array_equal(g, want)
