"""Odd inputs to the transforms, traces and Tensor constructors: right numbers or clear errors.

Hunted, with ``tg.grad`` / ``value_and_grad`` / ``jacobian`` / ``hessian`` / ``jvp`` / ``vjp`` /
``hvp``, ``tg.trace`` (replay, ``grad``, ``jvp``, ``hvp``, ``hessian``, ``grad_many``),
``tg.traced`` and the Tensor API: zero-size arrays ((0,), (3, 0), (0, 0)), 0-d arrays, NumPy
scalars, Python ints and bools, 10-32 dimensions, a 10^7-element gradient, Fortran-ordered,
non-contiguous, negative-stride, read-only, stride-0 (``np.broadcast_to``) and memmap
arrays, ndarray subclasses; float16 / float32 / longdouble / integer / bool / complex /
object / string / datetime dtypes, ``np.matrix`` and masked arrays; reductions over empty
axes, ties; outputs of ``f`` that are ints, bools, None or strings; replays at other
shapes, dtypes, numbers of arguments and at non-numbers; ``argnums`` and ``has_aux``
misuse; cotangents, tangents and ``backward(gradient=)`` seeds of the wrong shape or kind.

References: closed forms and NumPy (the values), PyTorch (reductions on empty tensors,
``backward`` seeds, ties; skipped without torch), ``tg.grad`` itself for the replays (a
replay must equal a fresh evaluation), central finite differences for the memmap and
strided programs.  Where the input cannot be read right, the program must raise a
TypeError / ValueError whose message names the function and the fix (the fragment is
asserted).  Programs that could crash the interpreter (many dimensions, a huge gradient)
run in a subprocess.
"""

import decimal
import fractions
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from finite_differences import central_gradient

import tapegrad as tg

X3 = np.array([1.0, -2.0, 3.0])
W6 = np.arange(6.0).reshape(2, 3)
RNG = np.random.default_rng(7)


def _sq(x):
    return np.sum(x * x)


class _Sub(np.ndarray):
    """A plain ndarray subclass (no other meaning)."""


def _ro(a):
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def _nd(nd):
    """An array of ``nd`` dimensions, 2 x 2 x 2 x 1 x ... x 1."""
    return RNG.standard_normal(tuple(2 if i < 3 else 1 for i in range(nd)))


ND = {nd: (_nd(nd), _nd(nd)) for nd in (10, 20, 32)}


def _same(got, want, rtol=1e-12, atol=1e-14):
    """Structure, shape and values (NaN equal to NaN); a float must stay a float."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (got, want)
        for k in want:
            _same(got[k], want[k], rtol, atol)
    elif isinstance(want, tuple) or (
        isinstance(want, list) and not all(isinstance(w, (int, float)) for w in want)
    ):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (got, want)
        for a, b in zip(got, want, strict=True):
            _same(a, b, rtol, atol)
    elif want is None:
        assert got is None, got
    else:
        if isinstance(want, float):
            assert isinstance(got, float), (type(got), got)
        assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
        np.testing.assert_allclose(
            np.asarray(got, float), np.asarray(want, float), rtol=rtol, atol=atol
        )


# ---- the transforms on odd but valid inputs: (program, expected) --------------------------------

E = np.zeros(0)
GRADS = {
    # zero-size and 0-d arguments
    "grad at (0,)": (lambda: tg.grad(_sq)(np.zeros(0)), np.zeros(0)),
    "grad at (3, 0)": (lambda: tg.grad(_sq)(np.zeros((3, 0))), np.zeros((3, 0))),
    "grad at (0, 0)": (lambda: tg.grad(_sq)(np.zeros((0, 0))), np.zeros((0, 0))),
    "value_and_grad sum of empty is 0": (lambda: tg.value_and_grad(np.sum)(E), (0.0, E)),
    "value_and_grad prod of empty is 1": (lambda: tg.value_and_grad(np.prod)(E), (1.0, E)),
    "sum over the empty axis 0 of (0, 3)": (
        lambda: tg.value_and_grad(lambda x: np.sum(np.sum(x, axis=0) ** 2 + 1.0))(np.zeros((0, 3))),
        (3.0, np.zeros((0, 3))),
    ),
    "max along axis 1 of (0, 3) is empty": (
        lambda: tg.value_and_grad(lambda x: np.sum(np.max(x, axis=1)))(np.zeros((0, 3))),
        (0.0, np.zeros((0, 3))),
    ),
    "mean of empty is nan, gradient empty": (
        lambda: tg.value_and_grad(lambda x: np.mean(x) * 1.0)(E),
        (np.nan, E),
    ),
    "grad at a 0-d array is 0-d": (lambda: tg.grad(lambda x: x**3)(np.array(2.0)), np.array(12.0)),
    "grad of x returning x (0-d)": (lambda: tg.grad(lambda x: x)(np.array(2.0)), np.array(1.0)),
    "grad at np.float64 scalar": (lambda: tg.grad(lambda x: x**3)(np.float64(2)), 12.0),
    "grad at np.float32 scalar": (lambda: float(tg.grad(lambda x: x**3)(np.float32(2))), 12.0),
    "grad at np.float16 scalar": (lambda: float(tg.grad(lambda x: x**3)(np.float16(2))), 12.0),
    "grad at float32 array": (
        lambda: tg.grad(_sq)(np.array([1.0, 2.0], np.float32)),
        np.array([2.0, 4.0]),
    ),
    "grad at float16 array": (
        lambda: tg.grad(_sq)(np.array([1.0, 2.0], np.float16)),
        np.array([2.0, 4.0]),
    ),
    # memory layouts
    "grad at a Fortran-ordered array": (
        lambda: tg.grad(lambda x: np.sum(x * W6))(np.asfortranarray(np.ones((2, 3)))),
        W6,
    ),
    "grad at a non-contiguous view": (
        lambda: tg.grad(lambda x: np.sum(x**2 * W6.T))(np.arange(12.0).reshape(3, 4)[:, ::2]),
        2 * np.arange(12.0).reshape(3, 4)[:, ::2] * W6.T,
    ),
    "grad at a negative-stride view": (
        lambda: tg.grad(lambda x: np.sum(x**2 * np.arange(4.0)))(np.arange(4.0)[::-1]),
        2 * np.arange(4.0)[::-1] * np.arange(4.0),
    ),
    "grad at a transposed (F) view": (
        lambda: tg.grad(lambda x: np.sum(x * W6.T))(np.ones((2, 3)).T),
        W6.T,
    ),
    "grad at a read-only array": (lambda: tg.grad(_sq)(_ro(X3)), 2 * X3),
    "grad at np.broadcast_to (stride 0)": (
        lambda: tg.grad(lambda x: np.sum(x * W6))(np.broadcast_to(np.arange(3.0), (2, 3))),
        W6,
    ),
    "grad at an ndarray subclass": (lambda: tg.grad(_sq)(X3.view(_Sub)), 2 * X3),
    # many dimensions
    **{
        f"grad in {nd} dimensions: elementwise, transpose, reductions": (
            lambda nd=nd: tg.grad(
                lambda v: (
                    np.sum(np.transpose(v) * ND[nd][1].T)
                    + np.sum(np.sum(v, axis=(0, 2)) ** 2)
                    + np.max(v[::-1])
                )
            )(ND[nd][0]),
            ND[nd][1]
            + np.broadcast_to(2 * np.sum(ND[nd][0], axis=(0, 2), keepdims=True), ND[nd][0].shape)
            + (ND[nd][0] == ND[nd][0].max()),
        )
        for nd in ND
    },
    # jacobians, hessians, jvp / vjp at zero sizes
    "jacobian (0,) -> (0,)": (lambda: tg.jacobian(lambda x: x * 2)(E), np.zeros((0, 0))),
    "jacobian (3,) -> (0,)": (lambda: tg.jacobian(lambda x: x[:0] * 2)(X3), np.zeros((0, 3))),
    "jacobian (0,) -> (2,)": (
        lambda: tg.jacobian(lambda x: np.ones(2) * np.sum(x))(E),
        np.zeros((2, 0)),
    ),
    "jacobian of a constant": (lambda: tg.jacobian(lambda x: np.ones(2))(X3), np.zeros((2, 3))),
    "jacobian at float32": (
        lambda: tg.jacobian(lambda x: x * 2)(np.ones(2, np.float32)),
        2 * np.eye(2),
    ),
    "jacobian with a tuple output": (
        lambda: tg.jacobian(lambda x: (x * 2, x[0]))(X3),
        (2 * np.eye(3), np.array([1.0, 0.0, 0.0])),
    ),
    "hessian at (0,)": (lambda: tg.hessian(_sq)(E), np.zeros((0, 0))),
    "hessian at (2, 0)": (lambda: tg.hessian(_sq)(np.zeros((2, 0))), np.zeros((2, 0, 2, 0))),
    "hessian at 0-d": (lambda: tg.hessian(lambda x: x**3)(np.array(2.0)), np.array(12.0)),
    "hessian at float32": (
        lambda: tg.hessian(lambda x: np.sum(x**3))(np.ones(2, np.float32)),
        6 * np.eye(2),
    ),
    "jvp at (0,)": (lambda: tg.jvp(lambda x: x * 2, (E,), (E,)), (E, E)),
    "jvp with an int tangent for a float": (
        lambda: tg.jvp(lambda x: x * 2, (1.0,), (1,)),
        (2.0, 2.0),
    ),
    "jvp with a float32 tangent": (
        lambda: tg.jvp(lambda x: x * x, (X3,), (np.ones(3, np.float32),)),
        (X3 * X3, 2 * X3),
    ),
    "vjp at (0,)": (lambda: tg.vjp(lambda x: x * 2, E)[1](E), (E,)),
    "vjp with an int cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.array([1, 2, 3])),
        (np.array([2.0, 4.0, 6.0]),),
    ),
    "vjp with a bool cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.array([True, False, True])),
        (np.array([2.0, 0.0, 2.0]),),
    ),
    "vjp with None: zeros (PyTorch's None grad_outputs)": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](None),
        (np.zeros(3),),
    ),
    "vjp of two arguments": (
        lambda: tg.vjp(lambda x, y: x * y, X3, 2.0)[1](np.ones(3)),
        (np.full(3, 2.0), float(X3.sum())),
    ),
    "hvp at (0,)": (lambda: tg.hvp(_sq, (E,), (E,)), E),
    # argnums, has_aux, outputs
    "argnums=-1": (lambda: tg.grad(lambda a, b: a * b, argnums=-1)(2.0, 3.0), 2.0),
    "argnums=(0, 0)": (lambda: tg.grad(lambda a, b: a * b, argnums=(0, 0))(2.0, 3.0), (3.0, 3.0)),
    "argnums=()": (lambda: tg.grad(lambda a, b: a * b, argnums=())(2.0, 3.0), ()),
    "argnums=[0, 1]": (lambda: tg.grad(lambda a, b: a * b, argnums=[0, 1])(2.0, 3.0), (3.0, 2.0)),
    "argnums=np.int64(1)": (
        lambda: tg.grad(lambda a, b: a * b, argnums=np.int64(1))(2.0, 3.0),
        2.0,
    ),
    "keyword argument passed through": (lambda: tg.grad(lambda x, y=2.0: x * y)(3.0, y=4.0), 4.0),
    "has_aux with a list pair": (
        lambda: tg.grad(lambda x: [_sq(x), 1], has_aux=True)(X3),
        (2 * X3, 1),
    ),
    "has_aux with a Tensor aux": (
        lambda: tg.value_and_grad(lambda x: (_sq(x), {"a": x * 2}), has_aux=True)(X3),
        ((14.0, {"a": 2 * X3}), 2 * X3),
    ),
    "f returning a constant float: zero gradient": (lambda: tg.grad(lambda x: 2.0)(1.0), 0.0),
    "f returning shape (1,) (one element)": (lambda: tg.grad(lambda x: x[:1] * 2)(X3), [2, 0, 0]),
    "f returning a float32 scalar times x": (
        lambda: tg.value_and_grad(lambda x: np.float32(2.0) * np.sum(x))(X3),
        (4.0, np.full(3, 2.0)),
    ),
    "pytree with a None leaf": (
        lambda: tg.grad(lambda d: d["a"] * 2)({"a": 2.0, "b": None}),
        {"a": 2.0, "b": None},
    ),
    "empty list argument": (lambda: tg.grad(lambda v: 1.0)([]), []),
    "nested pytree with a 0-d leaf": (
        lambda: tg.grad(lambda t: t[0][0] * t[1]["k"])(([2.0], {"k": np.array(3.0)})),
        ([3.0], {"k": np.array(2.0)}),
    ),
    # ties and empty reductions
    "x[argmax(x)] at a tie: NumPy's first index": (
        lambda: tg.grad(lambda x: x[np.argmax(x)])(np.array([1.0, 3.0, 3.0])),
        [0.0, 1.0, 0.0],
    ),
    "max at a tie splits evenly": (
        lambda: tg.grad(np.max)(np.array([1.0, 3.0, 3.0])),
        [0.0, 0.5, 0.5],
    ),
    "max with initial above every element": (
        lambda: tg.value_and_grad(lambda x: np.max(x, initial=5.0))(X3),
        (5.0, np.zeros(3)),
    ),
    "max of empty with initial": (
        lambda: tg.value_and_grad(lambda x: np.max(x, initial=-1.0))(E),
        (-1.0, E),
    ),
    "sum where nothing is selected": (
        lambda: tg.value_and_grad(lambda x: np.sum(x, where=np.zeros(3, bool)))(X3),
        (0.0, np.zeros(3)),
    ),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_transform_values(name):
    program, want = GRADS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (mean of empty)
        got = program()
    _same(got, want)


def test_grad_keeps_float_scalar_types():
    """A NumPy float scalar gives a gradient of its type, a float array one of its dtype."""
    assert type(tg.grad(lambda x: x * x)(np.float32(2))) is np.float32
    assert type(tg.grad(lambda x: x * x)(np.float16(2))) is np.float16
    assert tg.grad(_sq)(np.ones(2, np.float32)).dtype == np.float32


def test_grad_at_memmap(tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = X3
    g = tg.grad(lambda x: np.sum(np.sin(x) * x))(mm)
    np.testing.assert_allclose(g, np.cos(X3) * X3 + np.sin(X3), rtol=1e-13)
    tr = tg.trace(lambda x: np.sum(np.sin(x) * x), mm)
    np.testing.assert_allclose(tr.grad(mm), g, rtol=1e-13)


def test_strided_views_match_finite_differences():
    base = RNG.standard_normal((4, 6))
    f = lambda x: np.sum(np.tanh(x) @ np.ones((x.shape[1], 2)) ** 2)  # noqa: E731
    for x in (base[::2, ::3], base[::-1, 1::2], base.T[::2], np.asfortranarray(base)[1:, :3]):
        np.testing.assert_allclose(tg.grad(f)(x), central_gradient(f, x), rtol=1e-6, atol=1e-8)


# ---- the transforms refuse what they cannot read right: (program, error, fragment) -------------

REFUSED = {
    "grad at an int": (lambda: tg.grad(_sq)(3), TypeError, "only floats can be differentiated"),
    "grad at np.int64": (
        lambda: tg.grad(_sq)(np.int64(3)),
        TypeError,
        "only floats can be differentiated",
    ),
    "grad at a bool": (lambda: tg.grad(_sq)(True), TypeError, "write 1.0"),
    "grad at np.bool_": (lambda: tg.grad(_sq)(np.bool_(True)), TypeError, "write 1.0"),
    "grad at an int array": (lambda: tg.grad(_sq)(np.arange(3)), TypeError, ".astype(float)"),
    "grad at a bool array": (
        lambda: tg.grad(_sq)(np.array([True, False])),
        TypeError,
        ".astype(float)",
    ),
    "grad at a uint8 array": (
        lambda: tg.grad(_sq)(np.array([200, 3], np.uint8)),
        TypeError,
        ".astype(float)",
    ),
    "grad at longdouble": (
        lambda: tg.grad(_sq)(np.ones(2, np.longdouble)),
        TypeError,
        "extended precision",
    ),
    "grad at a longdouble scalar": (
        lambda: tg.grad(_sq)(np.longdouble(2)),
        TypeError,
        "extended precision",
    ),
    "grad at complex": (lambda: tg.grad(_sq)(np.ones(2, complex)), TypeError, "complex"),
    "grad at a complex scalar": (lambda: tg.grad(_sq)(2 + 0j), TypeError, "complex"),
    "grad at an object array": (
        lambda: tg.grad(_sq)(np.array([2.0, 3.0], object)),
        TypeError,
        "dtype object",
    ),
    "grad at a str array": (lambda: tg.grad(_sq)(np.array(["2"])), TypeError, "dtype <U1"),
    "grad at None": (lambda: tg.grad(_sq)(None), TypeError, "no float values"),
    "grad at a str": (lambda: tg.grad(_sq)("abc"), TypeError, "cannot be differentiated"),
    "grad at datetime64": (
        lambda: tg.grad(_sq)(np.array(["2020-01-01"], "M8[D]")),
        TypeError,
        "datetime64",
    ),
    "grad at np.matrix": (
        lambda: tg.grad(_sq)(np.matrix([[1.0, 2.0], [3.0, 4.0]])),
        TypeError,
        "np.matrix",
    ),
    "grad at a masked array": (
        lambda: tg.grad(_sq)(np.ma.array(X3, mask=[0, 1, 0])),
        TypeError,
        "masked array",
    ),
    "grad at a list of ints": (
        lambda: tg.grad(lambda v: v[0] * v[1])([2, 3]),
        TypeError,
        "argument 0[0] is int",
    ),
    "grad at a dict with a str": (
        lambda: tg.grad(lambda d: d["a"])({"a": 2.0, "b": "s"}),
        TypeError,
        "argument 0['b']",
    ),
    "f returns an int": (lambda: tg.grad(lambda x: 3)(1.0), TypeError, "real-valued"),
    "f returns a bool": (lambda: tg.grad(lambda x: x > 0)(1.0), TypeError, "real-valued"),
    "f returns None": (lambda: tg.grad(lambda x: None)(1.0), TypeError, "got NoneType"),
    "f returns a str": (lambda: tg.grad(lambda x: "a")(1.0), TypeError, "got str"),
    "f returns an argmax": (lambda: tg.grad(np.argmax)(X3), TypeError, "real-valued"),
    "f returns a count": (lambda: tg.grad(lambda x: np.sum(x > 1))(X3), TypeError, "real-valued"),
    "f returns shape (0,)": (lambda: tg.grad(lambda x: x[:0])(X3), TypeError, "shape (0,)"),
    "f returns a vector": (lambda: tg.grad(lambda x: x * 2)(X3), TypeError, "tg.jacobian"),
    "f returns a tuple without has_aux": (
        lambda: tg.grad(lambda x: (_sq(x), 1))(X3),
        TypeError,
        "got tuple",
    ),
    "value_and_grad of an int": (
        lambda: tg.value_and_grad(lambda x: 3)(1.0),
        TypeError,
        "real-valued",
    ),
    "max of empty": (lambda: tg.grad(np.max)(E), ValueError, "no identity"),
    "max over the empty axis": (
        lambda: tg.grad(lambda x: np.sum(np.max(x, axis=0)))(np.zeros((0, 3))),
        ValueError,
        "no identity",
    ),
    "argnums=(5,)": (lambda: tg.grad(_sq, argnums=(5,))(X3), ValueError, "out of range"),
    "argnums=5": (lambda: tg.grad(_sq, argnums=5)(X3), ValueError, "out of range"),
    "argnums with no arguments": (lambda: tg.grad(lambda: 1.0)(), ValueError, "out of range"),
    "argnums=1.0": (lambda: tg.grad(_sq, argnums=1.0)(X3), TypeError, "argnums must be an int"),
    "argnums=True": (lambda: tg.grad(_sq, argnums=True)(X3), TypeError, "argnums must be an int"),
    "has_aux but one value": (
        lambda: tg.grad(_sq, has_aux=True)(X3),
        TypeError,
        "has_aux=True requires f to return a pair",
    ),
    "has_aux with three values": (
        lambda: tg.grad(lambda x: (_sq(x), 1, 2), has_aux=True)(X3),
        TypeError,
        "has_aux=True requires f to return a pair",
    ),
    "jacobian at an int": (lambda: tg.jacobian(lambda x: x * 2)(3), TypeError, "write 3.0"),
    "jacobian of a bool output": (
        lambda: tg.jacobian(lambda x: x > 1)(X3),
        TypeError,
        "real-valued",
    ),
    "hessian of a vector output": (
        lambda: tg.hessian(lambda x: x**3)(X3),
        TypeError,
        "needs f to return a scalar",
    ),
    "jvp tangent of another shape": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.ones(2),)),
        ValueError,
        "tangent 0 has shape (2,)",
    ),
    "jvp tangent broadcastable but not the shape": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.ones(1),)),
        ValueError,
        "tangent 0 has shape (1,)",
    ),
    "jvp scalar tangent for an array": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (1.0,)),
        ValueError,
        "tangent 0 has shape ()",
    ),
    "jvp array tangent for a float": (
        lambda: tg.jvp(lambda x: x * 2, (1.0,), (np.ones(3),)),
        ValueError,
        "its primal has shape ()",
    ),
    "jvp complex tangent": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.ones(3) * 1j,)),
        TypeError,
        "complex",
    ),
    "jvp None tangent": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (None,)),
        ValueError,
        "structure of primal 0",
    ),
    "jvp str tangent": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.array(["1"] * 3),)),
        TypeError,
        "has dtype <U1",
    ),
    "jvp datetime tangent": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.array(["2020-01-01"] * 3, "M8[D]"),)),
        TypeError,
        "datetime64",
    ),
    "jvp masked tangent": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), (np.ma.array(X3, mask=[0, 1, 0]),)),
        TypeError,
        "masked array",
    ),
    "jvp list tangent for an array": (
        lambda: tg.jvp(lambda x: x * 2, (X3,), ([1.0, 1.0, 1.0],)),
        ValueError,
        "structure",
    ),
    "jvp primals not a tuple": (
        lambda: tg.jvp(lambda x: x * 2, X3, X3),
        TypeError,
        "as tuples",
    ),
    "jvp fewer tangents": (
        lambda: tg.jvp(lambda x, y: x * y, (X3, X3), (X3,)),
        ValueError,
        "2 primals but 1 tangents",
    ),
    "vjp cotangent of another shape": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.ones(2)),
        ValueError,
        "cotangent leaf 0 has shape (2,)",
    ),
    "vjp cotangent broadcastable but not the shape": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.ones(1)),
        ValueError,
        "cotangent leaf 0 has shape (1,)",
    ),
    "vjp scalar cotangent for a vector": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](1.0),
        ValueError,
        "has shape ()",
    ),
    "vjp str cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.array(["1"] * 3)),
        TypeError,
        "dtype <U1",
    ),
    "vjp datetime cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.array(["2020-01-01"] * 3, "M8[D]")),
        TypeError,
        "datetime64",
    ),
    "vjp masked cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.ma.array(X3, mask=[0, 1, 0])),
        TypeError,
        "masked array",
    ),
    "vjp np.matrix cotangent": (
        lambda: tg.vjp(lambda x: x * 2, np.ones((1, 3)))[1](np.matrix([[1.0, 2.0, 3.0]])),
        TypeError,
        "np.matrix",
    ),
    "vjp longdouble cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.ones(3, np.longdouble)),
        TypeError,
        "extended precision",
    ),
    "vjp complex cotangent": (
        lambda: tg.vjp(lambda x: x * 2, X3)[1](np.ones(3) * 1j),
        TypeError,
        "complex",
    ),
    "vjp of an int output": (lambda: tg.vjp(lambda x: 3, X3), TypeError, "real-valued"),
    "vjp cotangent tuple too short": (
        lambda: tg.vjp(lambda x: (x, x), X3)[1]((X3,)),
        ValueError,
        "structure of f's output",
    ),
    "vjp tuple cotangent for one output": (
        lambda: tg.vjp(lambda x: x, X3)[1]((X3,)),
        ValueError,
        "structure of f's output",
    ),
    "hvp tangent of another shape": (
        lambda: tg.hvp(_sq, (X3,), (np.ones(2),)),
        ValueError,
        "tangent 0 has shape (2,)",
    ),
    "hvp scalar tangent for an array": (
        lambda: tg.hvp(_sq, (X3,), (1.0,)),
        ValueError,
        "tangent 0 has shape ()",
    ),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_transform_refusals(name):
    program, error, fragment = REFUSED[name]
    with pytest.raises(error) as info:
        program()
    assert fragment in str(info.value), str(info.value)


# ---- trace replays at odd inputs equal fresh evaluations ----------------------------------------


def _tr(f=_sq, x=X3, **kw):
    return tg.trace(f, x, **kw)


def _fresh(f, x):
    """(value, gradient) of a fresh evaluation, at x as float64."""
    v, g = tg.value_and_grad(f)(np.asarray(x, float) if np.ndim(x) else float(x))
    return v, g


REPLAYS = {
    # (f, recorded example, replayed argument)
    "int array": (_sq, X3, np.array([1, 2, 3])),
    "uint8 array": (_sq, X3, np.array([200, 2, 3], np.uint8)),
    "float32 array": (_sq, X3, np.array([1.5, 2, 3], np.float32)),
    "float16 array": (_sq, X3, np.array([1.5, 2, 3], np.float16)),
    "non-contiguous view": (_sq, X3, np.arange(6.0)[::2]),
    "negative-stride view": (_sq, X3, np.arange(3.0)[::-1]),
    "broadcast_to (stride 0)": (_sq, X3, np.broadcast_to(np.array(2.0), (3,))),
    "read-only array": (_sq, X3, _ro(X3 + 1)),
    "ndarray subclass": (_sq, X3, (X3 + 1).view(_Sub)),
    "Tensor without grad": (_sq, X3, tg.tensor(X3 + 1)),
    "2-D Fortran order": (
        lambda x: np.sum(x * W6 * x),
        np.ones((2, 3)),
        np.asfortranarray(RNG.standard_normal((2, 3))),
    ),
    "2-D transposed view": (
        lambda x: np.sum(np.tanh(x) * W6),
        np.ones((2, 3)),
        RNG.standard_normal((3, 2)).T,
    ),
    "2-D with a negative step": (
        lambda x: np.sum(x @ W6.T),
        np.ones((2, 3)),
        RNG.standard_normal((2, 3))[:, ::-1],
    ),
    "empty (0,)": (_sq, E, np.zeros(0)),
    "empty (3, 0)": (_sq, np.zeros((3, 0)), np.zeros((3, 0))),
    "float at np.float32": (lambda v: v * v * v, 1.5, np.float32(2)),
    "float at np.int64": (lambda v: v * v * v, 1.5, np.int64(2)),
    "float at an int": (lambda v: v * v * v, 1.5, 2),
    "float at a 0-d array": (lambda v: v * v * v, 1.5, np.array(2.0)),
    "float at a Fraction": (lambda v: v * v * v, 1.5, fractions.Fraction(5, 2)),
    "float at a Decimal": (lambda v: v * v * v, 1.5, decimal.Decimal("2.5")),
    "float at 2**70": (lambda v: v * 3.0, 1.5, 2**70),
    "nan in the input": (_sq, X3, np.array([np.nan, 1.0, 2.0])),
    **{
        f"{nd} dimensions": (
            lambda v, nd=nd: np.sum(np.transpose(v) * ND[nd][1].T) + np.max(v[::-1]) ** 2,
            ND[nd][0],
            ND[nd][0] + 0.25,
        )
        for nd in ND
    },
}


def _as_float(x):
    if isinstance(x, (fractions.Fraction, decimal.Decimal, int)) or np.ndim(x) == 0:
        return float(x)
    return np.asarray(x._v if isinstance(x, tg.Tensor) else x, dtype=float)


@pytest.mark.parametrize("name", list(REPLAYS))
def test_replay_equals_fresh_evaluation(name):
    f, example, x = REPLAYS[name]
    tr = tg.trace(f, example)
    v, g = tg.value_and_grad(f)(_as_float(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cast warnings
        got_v, got_g = tr.value_and_grad(x)
        got_call = tr(x)
    _same(got_v, v)
    _same(got_call, v)
    np.testing.assert_allclose(got_g, g, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("nd", list(ND))
def test_replay_forward_modes_in_many_dimensions(nd):
    x, w = ND[nd]

    def f(v):
        return np.sum(np.sum(np.transpose(v) * w.T, axis=(1, 3)) ** 2) + np.max(v[::-1])

    tr = tg.trace(f, x)
    x2 = x + 0.1
    np.testing.assert_allclose(tr.jvp(x2, w)[1], tg.jvp(f, (x2,), (w,))[1], rtol=1e-12)
    np.testing.assert_allclose(tr.hvp(x2, w), tg.hvp(f, (x2,), (w,)), rtol=1e-12)


def test_empty_trace_every_method():
    tr = _tr(x=E)
    assert tr(E) == 0.0
    _same(tr.grad(E), E)
    _same(tr.hessian(E), np.zeros((0, 0)))
    _same(tr.grad_many(np.zeros((2, 0))), np.zeros((2, 0)))
    _same(tr.jvp(E, E), (0.0, 0.0))
    _same(_tr().grad_many(np.zeros((0, 3))), np.zeros((0, 3)))


def test_grad_many_at_odd_batches():
    tr = _tr()
    X = np.arange(12.0).reshape(2, 6)[:, ::2]  # non-contiguous
    _same(tr.grad_many(X), 2 * X)
    _same(tr.grad_many([[1.0, 2.0, 3.0]]), np.array([[2.0, 4.0, 6.0]]))
    _same(tr.grad_many(np.ones((2, 3), np.float32)), np.full((2, 3), 2.0))


def test_traced_cache_at_odd_inputs():
    f = tg.traced(_sq)
    for x in (X3, np.array([1, 2, 3]), np.ones(3, np.float32), X3[::-1], _ro(X3)):
        _same(f.value_and_grad(x), _fresh(_sq, x))
    g = tg.traced(lambda a, b: a * b, argnums=-1)
    _same(g.value_and_grad(2.0, 3), (6.0, 2.0))  # an int in argnums (given as -1) is a float


# ---- trace replays refuse what they cannot read right -------------------------------------------

TR_REFUSED = {
    "another shape": (lambda: _tr()(np.ones(4)), ValueError, "recorded with shape (3,)"),
    "another ndim": (lambda: _tr()(np.ones((3, 1))), ValueError, "has shape (3, 1)"),
    "a 0-d array for (3,)": (lambda: _tr()(np.array(2.0)), ValueError, "has shape ()"),
    "a list": (lambda: _tr()([1.0, 2.0, 3.0]), ValueError, "has list"),
    "a tuple": (lambda: _tr().grad((1.0, 2.0, 3.0)), ValueError, "has tuple"),
    "(1,) for a float": (
        lambda: _tr(lambda v: v * v, 1.5).grad(np.array([2.0])),
        ValueError,
        "has shape (1,)",
    ),
    "(0, 3) for (3, 0)": (
        lambda: _tr(x=np.zeros((3, 0)))(np.zeros((0, 3))),
        ValueError,
        "recorded with shape (3, 0)",
    ),
    "too many arguments": (lambda: _tr()(X3, X3), ValueError, "called with 2 arguments"),
    "too few arguments": (lambda: _tr()(), ValueError, "called with 0 arguments"),
    "a keyword argument": (lambda: _tr()(x=X3), TypeError, "unexpected keyword"),
    "a str array": (lambda: _tr().grad(np.array(["1", "2", "3"])), TypeError, "dtype <U1"),
    "a bytes array": (lambda: _tr().grad(np.array([b"1", b"2", b"3"])), TypeError, "dtype |S1"),
    "a datetime64 array": (
        lambda: _tr().grad(np.array(["2020-01-01"] * 3, "M8[D]")),
        TypeError,
        "datetime64[D] is not a number",
    ),
    "a timedelta64 array": (
        lambda: _tr()(np.array([1, 2, 3], "m8[s]")),
        TypeError,
        "timedelta64[s] is not a number",
    ),
    "None": (lambda: _tr(lambda v: v * v, 1.5)(None), TypeError, "None is not a number"),
    "a str for a float": (lambda: _tr(lambda v: v * v, 1.5).grad("2.0"), TypeError, "'2.0'"),
    "a datetime64 scalar": (
        lambda: _tr(lambda v: v * v, 1.5)(np.datetime64("2020-01-01")),
        TypeError,
        "is not a number",
    ),
    "an object array": (
        lambda: _tr().grad(np.array([1.0, None, 3.0], object)),
        TypeError,
        "dtype object",
    ),
    "a structured array": (
        lambda: _tr()(np.ones(3, dtype=[("a", "f8")])),
        TypeError,
        "is not a number",
    ),
    "np.matrix": (lambda: _tr()(np.matrix([1.0, 2.0, 3.0])), TypeError, "np.matrix"),
    "a masked array": (
        lambda: _tr()(np.ma.array(X3, mask=[0, 1, 0])),
        TypeError,
        "masked array",
    ),
    "longdouble": (lambda: _tr().grad(np.ones(3, np.longdouble)), TypeError, "extended"),
    "a longdouble scalar": (
        lambda: _tr(lambda v: v * v, 1.5)(np.longdouble(2)),
        TypeError,
        "extended",
    ),
    "complex": (lambda: _tr().grad(np.ones(3, complex)), TypeError, "complex"),
    "a complex scalar": (lambda: _tr(lambda v: v * v, 1.5)(2 + 0j), TypeError, "complex"),
    "a Tensor that requires grad": (
        lambda: _tr().grad(tg.tensor(X3, requires_grad=True)),
        TypeError,
        "being differentiated",
    ),
    "jvp tangent of another shape": (
        lambda: _tr().jvp(X3, np.ones(2)),
        ValueError,
        "tangents must have the structure and shapes",
    ),
    "jvp scalar tangent": (lambda: _tr().jvp(X3, 1.0), ValueError, "structure and shapes"),
    "jvp str tangent": (
        lambda: _tr().jvp(X3, np.array(["1"] * 3)),
        TypeError,
        "is not a number",
    ),
    "jvp datetime tangent": (
        lambda: _tr().jvp(X3, np.array(["2020-01-01"] * 3, "M8[D]")),
        TypeError,
        "is not a number",
    ),
    "jvp None tangent": (lambda: _tr().jvp(X3, None), TypeError, "None is not a number"),
    "jvp complex tangent": (lambda: _tr().jvp(X3, np.ones(3) * 1j), TypeError, "complex"),
    "hvp vector of another shape": (
        lambda: _tr().hvp(X3, np.ones(4)),
        ValueError,
        "structure and shapes",
    ),
    "hvp None vector": (lambda: _tr().hvp(X3, None), TypeError, "None is not a number"),
    "hessian at a list": (lambda: _tr().hessian([1.0, 2.0, 3.0]), ValueError, "has list"),
    "grad_many of another shape": (
        lambda: _tr().grad_many(np.ones((2, 4))),
        ValueError,
        "X has shape (2, 4)",
    ),
    "grad_many without the batch axis": (
        lambda: _tr().grad_many(np.ones(3)),
        ValueError,
        "X has shape (3,)",
    ),
    "grad_many of strings": (
        lambda: _tr().grad_many(np.array([["1", "1", "1"]])),
        TypeError,
        "trace.grad_many: X: an array of dtype <U1 is not a number",
    ),
    "grad_many of dates": (
        lambda: _tr().grad_many(np.array([["2020-01-01"] * 3], "M8[D]")),
        TypeError,
        "trace.grad_many: X: an array of dtype datetime64[D]",
    ),
    "grad_many of None": (
        lambda: _tr().grad_many(None),
        TypeError,
        "trace.grad_many: X: None is not a number",
    ),
    "grad_many of complex": (
        lambda: _tr().grad_many(np.ones((1, 3), complex)),
        TypeError,
        "complex",
    ),
    "grad_many masked": (
        lambda: _tr().grad_many(np.ma.array(np.ones((1, 3)), mask=True)),
        TypeError,
        "masked",
    ),
    "flat_input of strings": (
        lambda: _tr().flat_input(np.array(["1", "1", "1"])),
        TypeError,
        "is not a number",
    ),
    # outputs of f that have no derivative
    "grad of an int output": (
        lambda: _tr(lambda v: 3, 1.0).grad(2.0),
        TypeError,
        "f returned dtype int64",
    ),
    "grad of a bool output": (
        lambda: _tr(lambda v: v > 0, 1.0).grad(2.0),
        TypeError,
        "f returned dtype bool",
    ),
    "grad of a None output": (
        lambda: _tr(lambda v: None, 1.0).grad(2.0),
        ValueError,
        "must return a scalar",
    ),
    "grad of a str output": (
        lambda: _tr(lambda v: "s", 1.0).grad(2.0),
        ValueError,
        "must return a scalar",
    ),
    "grad of an argmax output": (
        lambda: _tr(np.argmax, X3).grad(X3),
        TypeError,
        "f returned dtype int64",
    ),
    "grad of an empty output": (
        lambda: _tr(lambda v: v[:0] * 2).grad(X3),
        ValueError,
        "it returned shape (0,)",
    ),
    # guards
    "a comparison output at the other branch": (
        lambda: _tr(lambda v: v > 0, 1.0)(-2.0),
        tg.RetraceRequired,
        "another branch",
    ),
    "a mask at the other branch": (
        lambda: _tr(lambda v: np.where(v > 0, v, 0.0).sum(), np.array([1.0, -1.0]))(
            np.array([-1.0, 1.0])
        ),
        tg.RetraceRequired,
        "another branch",
    ),
    "an argmax at another position": (
        lambda: _tr(lambda v: np.argmax(v) * v[0], np.array([1.0, 3.0])).grad(np.array([3.0, 1.0])),
        tg.RetraceRequired,
        "another branch",
    ),
    # argnums
    "argnums out of range": (
        lambda: tg.trace(lambda v: v, 1.0, argnums=3),
        ValueError,
        "argnums 3 is out of range",
    ),
    "no example arguments": (lambda: tg.trace(lambda: 2.0), ValueError, "out of range"),
}


@pytest.mark.parametrize("name", list(TR_REFUSED))
def test_replay_refusals(name):
    program, error, fragment = TR_REFUSED[name]
    with pytest.raises(error) as info:
        program()
    assert fragment in str(info.value), str(info.value)


# ---- regressions of the findings (each was a silent value or a bare error) ---------------------

# A trace whose argnums argument holds a value tg.grad refuses (a bool, an array of booleans,
# objects or strings, a Fraction, a complex number) recorded it as a constant: tr.grad
# returned None for it, silently.
TR_ARGNUMS_REFUSED = {
    "a bool": (lambda v: v * 1.5, True, "is bool True"),
    "a bool array": (lambda v: np.sum(v * 1.5), np.array([True, False]), "dtype bool"),
    "an object array": (lambda v: np.sum(v * 1.5), np.array([1.0, 2.0], object), "dtype object"),
    "a str array": (lambda v: v, np.array(["1"]), "dtype <U1"),
    "a Fraction": (lambda v: v * 1.5, fractions.Fraction(1, 2), "is Fraction"),
    "a Decimal": (lambda v: v, decimal.Decimal("0.5"), "is Decimal"),
    "a complex number": (lambda v: v * v, 2 + 1j, "complex"),
    "a bool in a dict": (lambda d: d["a"] * 1.5, {"a": 1.0, "b": True}, "is bool True"),
}


@pytest.mark.parametrize("name", list(TR_ARGNUMS_REFUSED))
def test_trace_refuses_non_float_argnums_leaves(name):
    f, x, fragment = TR_ARGNUMS_REFUSED[name]
    with pytest.raises(TypeError) as info:
        tg.trace(f, x).grad(x)
    msg = str(info.value)
    assert "tg.trace" in msg and fragment in msg, msg
    if "complex" not in name:
        assert "not in argnums" in msg, msg


def test_trace_keeps_none_and_static_leaves_beside_floats():
    """None in a differentiated pytree stays an empty leaf (as in tg.grad); a non-float
    argument outside argnums stays a constant."""
    tr = tg.trace(lambda d: d["a"] * 1.5, {"a": 1.0, "b": None})
    assert tr.grad({"a": 2.0, "b": None}) == {"a": 1.5, "b": None}
    tr = tg.trace(lambda x, flag: x * (2.0 if flag else 3.0), 1.0, True)
    assert tr.grad(2.0, True) == 2.0


# tg.trace took argnums=1.0 / np.int64(1) / True / "0" with a bare "'float' object is not
# iterable", a wrong acceptance, or the characters of a string
@pytest.mark.parametrize(
    "argnums, error",
    [(1.0, "got 1.0"), (True, "got True"), ("0", "got '0'"), ((0, 1.5), "got (0, 1.5)")],
)
def test_trace_argnums_must_be_ints(argnums, error):
    for make in (
        lambda: tg.trace(lambda a, b: a * b, 1.0, 2.0, argnums=argnums),
        lambda: tg.traced(lambda a, b: a * b, argnums=argnums),
    ):
        with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints") as info:
            make()
        assert error in str(info.value) and "tg.trace" in str(info.value)


def test_trace_argnums_numpy_int_and_list():
    assert tg.trace(lambda a, b: a * b, 1.0, 2.0, argnums=np.int64(1)).grad(1.0, 2.0) == 1.0
    assert tg.trace(lambda a, b: a * b, 1.0, 2.0, argnums=[0, 1]).grad(1.0, 2.0) == (2.0, 1.0)


# tr.grad_many read a string array as numbers ("1" -> 1.0) and dates as days since 1970
def test_grad_many_refuses_non_numbers():
    tr = _tr()
    for X in (np.array([["1", "1", "1"]]), np.array([["2020-01-01"] * 3], "M8[D]")):
        with pytest.raises(TypeError, match="trace.grad_many: X"):
            tr.grad_many(X)


# A replay at a datetime64 array, a string array or None was read as numbers (days since
# 1970, float("1.0"), NaN); Fraction, Decimal and ints beyond int64 still replay as floats
def test_replay_reads_numbers_only():
    tr = _tr(lambda v: v * v, 1.5)
    with pytest.raises(TypeError, match="None is not a number"):
        tr(None)
    with pytest.raises(TypeError, match="datetime64"):
        _tr()(np.array(["2020-01-01"] * 3, "M8[D]"))
    with pytest.raises(TypeError, match="is not a number"):
        _tr()(np.array(["1.0", "2.0", "3.0"]))
    assert tr.value_and_grad(fractions.Fraction(5, 2)) == (6.25, 5.0)
    assert tr.value_and_grad(decimal.Decimal("2.5")) == (6.25, 5.0)
    assert tr(2**70) == float(2**70) ** 2


# tg.traced took a masked array, an np.matrix or longdouble at a cached shape as its float
# data: the masked values used, a matrix product computed elementwise (30 for NumPy's 54),
# the extra digits rounded; a complex number in argnums gave (3.0, None) with a warning
TRACED_REFUSED = {
    "masked": (_sq, np.ma.array(X3, mask=[0, 1, 0]), "masked array"),
    "np.matrix": (
        lambda x: np.sum(x * x),
        np.matrix([[1.0, 2.0], [3.0, 4.0]]),
        "np.matrix",
    ),
    "longdouble array": (_sq, np.array([1, 2, 3], np.longdouble), "extended precision"),
    "longdouble scalar": (lambda v: v * v, np.longdouble(2), "extended precision"),
    "complex scalar": (lambda v: v * v, 2 + 1j, "complex"),
    "bool scalar": (lambda v: v * 1.5, True, "is bool True"),
    "Fraction": (lambda v: v * 1.5, fractions.Fraction(1, 2), "is Fraction"),
}


@pytest.mark.parametrize("name", list(TRACED_REFUSED))
def test_traced_refuses_what_the_trace_refuses(name):
    f, x, fragment = TRACED_REFUSED[name]
    cached = tg.traced(f)
    first = np.ones(np.shape(x)) if np.ndim(x) else 2.0
    cached.value_and_grad(first)  # a trace of this structure is in the cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("value_and_grad", "__call__"):
            with pytest.raises(TypeError) as info:
                getattr(cached, method)(x)
            assert fragment in str(info.value), str(info.value)


# ---- Tensor API: constructors and seeds ---------------------------------------------------------

CREATION_REFUSED = {
    # tg.full(shape, np.uint64(2**64 - 1)) was tensor([-1, -1]) (int64 wrapped around)
    "full with a uint64 beyond int64": (
        lambda: tg.full((2,), np.uint64(2**64 - 1)),
        OverflowError,
        "tg.full: the integer fill_value 18446744073709551615 does not fit in int64",
    ),
    "full with 2**70": (
        lambda: tg.full((2,), 2**70),
        OverflowError,
        "tg.full: the integer fill_value",
    ),
    # rounded silently
    "full with longdouble": (
        lambda: tg.full((2,), np.longdouble("1.1")),
        TypeError,
        "tg.full: fill_value has dtype float128",
    ),
    "full with None": (lambda: tg.full((2,), None), TypeError, "tg.full: fill_value: None"),
    "full with a str": (lambda: tg.full((2,), "1"), TypeError, "tg.full: fill_value: '1'"),
    "full with a date": (
        lambda: tg.full((2,), np.datetime64("2020-01-01")),
        TypeError,
        "tg.full: fill_value",
    ),
    "full with 1j": (lambda: tg.full((2,), 1j), TypeError, "tapegrad does not support complex"),
    # tg.linspace(0, 1j, 3) was tensor([0., 0., 0.]) with a ComplexWarning
    "linspace to 1j": (lambda: tg.linspace(0, 1j, 3), TypeError, "tg.linspace"),
    "linspace longdouble": (
        lambda: tg.linspace(np.longdouble(0), 1, 3),
        TypeError,
        "extended precision",
    ),
    # a bare ZeroDivisionError
    "arange with step 0": (lambda: tg.arange(0, 5, 0), ValueError, "tg.arange: step"),
    "arange with step 0.0": (lambda: tg.arange(0.0, 5.0, 0.0), ValueError, "tg.arange: step"),
    "arange complex": (lambda: tg.arange(0, 3 + 1j), TypeError, "complex"),
    "arange of dates": (
        lambda: tg.arange(np.datetime64("2020-01-01"), np.datetime64("2020-01-03")),
        TypeError,
        "datetime64",
    ),
    # zeros_like(None) / ("abc") / (complex array) were float tensors
    "zeros_like None": (lambda: tg.zeros_like(None), TypeError, "tg.zeros_like: None"),
    "ones_like a str": (lambda: tg.ones_like("abc"), TypeError, "tg.ones_like: 'abc'"),
    "zeros_like complex": (
        lambda: tg.zeros_like(np.ones(2) * 1j),
        TypeError,
        "tg.zeros_like: the argument is complex",
    ),
    "ones_like dates": (
        lambda: tg.ones_like(np.array(["2020-01-01"], "M8[D]")),
        TypeError,
        "tg.ones_like: an array of dtype datetime64",
    ),
    "zeros of dtype complex": (lambda: tg.zeros(2, dtype=complex), TypeError, "complex"),
    "zeros of dtype str": (lambda: tg.zeros(2, dtype=str), TypeError, "is not a number"),
    "ones of dtype longdouble": (
        lambda: tg.ones(2, dtype=np.longdouble),
        TypeError,
        "extended precision",
    ),
    "zeros int requiring grad": (
        lambda: tg.zeros(2, dtype=np.int64, requires_grad=True),
        RuntimeError,
        "floating point",
    ),
    "tensor of None": (lambda: tg.tensor(None), TypeError, "None is not a number"),
    "tensor of a str": (lambda: tg.tensor("1.0"), TypeError, "is not a number"),
    "tensor of a dict": (lambda: tg.tensor({"a": 1.0}), TypeError, "is not a number"),
    "tensor of np.matrix": (lambda: tg.tensor(np.matrix([[1.0, 2.0]])), TypeError, "np.matrix"),
    "tensor of a masked array": (
        lambda: tg.tensor(np.ma.array([1.0, 2.0], mask=[0, 1])),
        TypeError,
        "masked array",
    ),
    "tensor of longdouble": (
        lambda: tg.tensor(np.ones(2, np.longdouble)),
        TypeError,
        "extended precision",
    ),
    "tensor of 2**63": (lambda: tg.tensor([2**63]), OverflowError, "does not fit in int64"),
    "bool tensor requiring grad": (
        lambda: tg.tensor([True], requires_grad=True),
        RuntimeError,
        "floating point",
    ),
    "from_numpy of strings": (
        lambda: tg.from_numpy(np.array(["1"])),
        TypeError,
        "from_numpy: arrays of dtype <U1",
    ),
    "from_numpy of a masked array": (
        lambda: tg.from_numpy(np.ma.array([1.0, 2.0], mask=[0, 1])),
        TypeError,
        "masked array",
    ),
}


@pytest.mark.parametrize("name", list(CREATION_REFUSED))
def test_creation_refusals(name):
    program, error, fragment = CREATION_REFUSED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # a silent cast
        with pytest.raises(error) as info:
            program()
    assert fragment in str(info.value), str(info.value)


CREATION_VALUES = {
    "full with a Fraction": (lambda: tg.full((2,), fractions.Fraction(1, 4)), [0.25, 0.25]),
    "full with a Decimal": (lambda: tg.full((2,), decimal.Decimal("0.5")), [0.5, 0.5]),
    "full with 2**70 as float": (
        lambda: tg.full((1,), 2**70, dtype=np.float64),
        [float(2**70)],
    ),
    "full with a uint64 that fits": (lambda: tg.full((1,), np.uint64(7)), [7]),
    "full with float32": (lambda: tg.full((1,), np.float32(1.5)), [1.5]),
    "zeros(0)": (lambda: tg.zeros(0), np.zeros(0)),
    "zeros((0, 3)) requiring grad": (
        lambda: tg.zeros((0, 3), requires_grad=True),
        np.zeros((0, 3)),
    ),
    "ones(np.int64(2))": (lambda: tg.ones(np.int64(2)), [1.0, 1.0]),
    "eye(0)": (lambda: tg.eye(0), np.zeros((0, 0))),
    "eye(2, 0)": (lambda: tg.eye(2, 0), np.zeros((2, 0))),
    "arange(5, 0) is empty": (lambda: tg.arange(5, 0), np.zeros(0, int)),
    "linspace with 0 values": (lambda: tg.linspace(0, 1, 0), np.zeros(0)),
    "linspace with 1 value": (lambda: tg.linspace(0, 1, 1), [0.0]),
    "zeros_like a masked array's shape": (
        lambda: tg.zeros_like(np.ma.array([1.0, 2.0], mask=[0, 1])),
        [0.0, 0.0],
    ),
    "tensor of a broadcast_to": (
        lambda: tg.tensor(np.broadcast_to(np.arange(3.0), (2, 3))),
        np.broadcast_to(np.arange(3.0), (2, 3)),
    ),
    "tensor of []": (lambda: tg.tensor([], requires_grad=True), np.zeros(0)),
    "tensor of range": (lambda: tg.tensor(range(3)), [0, 1, 2]),
    "tensor of 0-d arrays": (lambda: tg.tensor([np.array(1.0), np.array(2.0)]), [1.0, 2.0]),
    "from_numpy of a negative stride": (lambda: tg.from_numpy(np.arange(3.0)[::-1]), [2, 1, 0]),
    "from_numpy of a read-only array": (lambda: tg.from_numpy(_ro([1.0, 2.0])), [1.0, 2.0]),
}


@pytest.mark.parametrize("name", list(CREATION_VALUES))
def test_creation_values(name):
    program, want = CREATION_VALUES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = program()
    _same(got.numpy(), np.asarray(want, dtype=got.dtype))
    if got.dtype.kind in "iu":
        assert np.asarray(want).dtype.kind in "iu"


def test_tensor_copies_and_from_numpy_shares():
    a = np.arange(3.0)
    t, s = tg.tensor(a), tg.from_numpy(a)
    a[0] = 99.0
    assert t.numpy()[0] == 0.0 and s.numpy()[0] == 99.0


def test_tensor_in_32_and_33_dimensions():
    for nd in (32, 33):
        t = tg.tensor(np.ones((1,) * nd), requires_grad=True)
        (t * 3.0).sum().backward()
        assert t.grad.shape == (1,) * nd and float(t.grad.numpy().ravel()[0]) == 3.0


# ---- Tensor API against PyTorch: seeds and reductions on empty tensors --------------------------


def _torch():
    return pytest.importorskip("torch")


SEEDS = {  # output shape, seed (None: implicit)
    "(3,) seeded with (2,)": ((3,), np.ones(2)),
    "(3,) seeded with (1,)": ((3,), np.ones(1)),
    "(3,) seeded with ()": ((3,), np.array(2.0)),
    "(3,) seeded with (3, 1)": ((3,), np.ones((3, 1))),
    "(3,) seeded with (1, 3)": ((3,), np.ones((1, 3))),
    "(1, 3) seeded with (3,)": ((1, 3), np.ones(3)),
    "(3,) without a seed": ((3,), None),
    "(1,) without a seed": ((1,), None),
    "(3,) seeded with (3,)": ((3,), np.array([1.0, 2.0, 3.0])),
    "(0,) seeded with (0,)": ((0,), np.zeros(0)),
    "() seeded with ()": ((), np.array(2.0)),
    "() seeded with (3,)": ((), np.ones(3)),
}


def _seed_run(lib, shape, seed):
    torch = _torch()
    if lib == "tg":
        t = tg.tensor(np.ones(shape), requires_grad=True)
        g = None if seed is None else tg.tensor(seed)
    else:
        t = torch.ones(shape, dtype=torch.float64, requires_grad=True)
        g = None if seed is None else torch.tensor(seed)
    try:
        (t * 2).backward(gradient=g)
    except RuntimeError:
        return "raises"
    return np.array(t.grad.numpy())


@pytest.mark.parametrize("name", list(SEEDS))
def test_backward_seed_shapes_as_pytorch(name):
    shape, seed = SEEDS[name]
    want = _seed_run("torch", shape, seed)
    got = _seed_run("tg", shape, seed)
    if isinstance(want, str):
        assert isinstance(got, str), f"PyTorch raises; tapegrad gave {got}"
    else:
        _same(got, want)


def test_scalar_backward_with_a_seed_of_shape_1_is_the_0d_seed():
    """PyTorch raises 'Mismatch in shape'; tapegrad reads a one-element seed of a one-element
    output as that number (an extension kept on purpose, see the PyTorch-semantics hunt)."""
    t = tg.tensor(np.ones(3), requires_grad=True)
    t.sum().backward(gradient=np.array([3.0]))
    np.testing.assert_array_equal(t.grad.numpy(), [3.0, 3.0, 3.0])


EMPTY = {  # a program on a Tensor ``t`` of shape (0,) or (0, 3); None where both must raise
    "sum": ((0,), lambda t: t.sum()),
    "mean": ((0,), lambda t: t.mean()),
    "prod": ((0,), lambda t: t.prod()),
    "std": ((0,), lambda t: t.std()),
    "var": ((0,), lambda t: t.var()),
    "norm": ((0,), lambda t: t.norm()),
    "max": ((0,), lambda t: t.max()),
    "min": ((0,), lambda t: t.min()),
    "amax over the empty dim": ((0, 3), lambda t: t.amax(dim=0).sum()),
    "max over the empty dim": ((0, 3), lambda t: t.max(dim=0)[0].sum()),
    "max over the full dim": ((0, 3), lambda t: t.max(dim=1)[0].sum()),
    "sum over dim 0": ((0, 3), lambda t: (t.sum(dim=0) ** 2).sum()),
    "mean over dim 0": ((0, 3), lambda t: t.mean(dim=0).sum()),
    "logsumexp": ((0,), lambda t: t.logsumexp(dim=0)),
    "cumsum": ((0,), lambda t: t.cumsum(0).sum()),
    "cumprod": ((0,), lambda t: t.cumprod(0).sum()),
    "reshape to (0, 5)": ((0,), lambda t: t.reshape(0, 5).sum()),
    "index with an empty list": ((0, 3), lambda t: t[[]].sum()),
    "a mask of no element": ((0,), lambda t: t[t > 0].sum()),
    "std of one element": ((1,), lambda t: t.std()),
}


def _empty_run(lib, shape, program):
    torch = _torch()
    if lib == "tg":
        t = tg.tensor(np.zeros(shape), requires_grad=True)
    else:
        t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    try:
        y = program(t)
        y.backward()
    except (RuntimeError, ValueError, IndexError):
        return "raises"
    return float(y.detach().numpy()), np.array(t.grad.numpy())


@pytest.mark.parametrize("name", list(EMPTY))
def test_empty_reductions_as_pytorch(name):
    shape, program = EMPTY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _empty_run("torch", shape, program)
        got = _empty_run("tg", shape, program)
    if isinstance(want, str):
        assert isinstance(got, str), f"PyTorch raises; tapegrad gave {got}"
    else:
        assert not isinstance(got, str), "tapegrad raises; PyTorch computes"
        _same(got, want)


@pytest.mark.parametrize(
    "values, method",
    [([1.0, 3.0, 3.0], "max"), ([3.0, 1.0, 3.0], "min_neg"), ([2.0, 2.0], "amax")],
)
def test_ties_as_pytorch(values, method):
    torch = _torch()
    out = []
    for lib in ("tg", "torch"):
        t = (
            tg.tensor(values, requires_grad=True)
            if lib == "tg"
            else torch.tensor(values, dtype=torch.float64, requires_grad=True)
        )
        if method == "max":
            y = t.max(dim=0)[0] + t.max()
        elif method == "min_neg":
            y = (-t).min() + t.argmax() * 0.0
        else:
            y = t.amax(dim=0)
        y.backward()
        out.append(np.array(t.grad.numpy()))
    _same(out[0], out[1])


# was NaN without NumPy's warning
def test_mean_of_empty_warns_as_numpy():
    with pytest.warns(RuntimeWarning):
        tg.grad(np.mean)(np.zeros(0))


# ---- in a subprocess: a huge gradient, many dimensions through every replay ---------------------

_SUBPROCESS = textwrap.dedent(
    """
    import numpy as np
    import tapegrad as tg

    x = np.linspace(0.0, 1.0, 10**7)
    f = lambda v: np.sum(np.sin(v))
    assert np.allclose(tg.grad(f)(x), np.cos(x), rtol=1e-13, atol=0)
    assert np.allclose(tg.trace(f, x[:5]).grad(x[:5]), np.cos(x[:5]))
    tr = tg.trace(f, x)
    assert np.allclose(tr.grad(x[::-1]), np.cos(x[::-1]), rtol=1e-13, atol=0)
    rng = np.random.default_rng(0)
    for nd in (33, 40, 64):
        shape = tuple(2 if i < 3 else 1 for i in range(nd))
        a, w = rng.standard_normal(shape), rng.standard_normal(shape)
        g = lambda v: np.sum(v * w * v) + np.sum(np.sum(v, axis=(0, 2)) ** 2)
        want = 2 * w * a + 2 * np.broadcast_to(np.sum(a, axis=(0, 2), keepdims=True), shape)
        assert np.allclose(tg.grad(g)(a), want, rtol=1e-12)
        assert np.allclose(tg.trace(g, a).grad(a), want, rtol=1e-12)
    print("done")
    """
)


# was a bare NumPy RuntimeError ('this function only supports up to 32 dimensions')
@pytest.mark.parametrize("view", ["transpose", "reverse"])
def test_views_beyond_32_dimensions(view):
    a = RNG.standard_normal((2, 2) + (1,) * 38)
    w = RNG.standard_normal(a.shape)
    if view == "transpose":
        g = tg.grad(lambda v: np.sum(np.transpose(v) * w.T))(a)
        np.testing.assert_allclose(g, w, rtol=1e-13)
    else:
        g = tg.grad(lambda v: np.sum(v[::-1] * w))(a)
        np.testing.assert_allclose(g, w[::-1], rtol=1e-13)


def test_huge_and_very_high_ndim_in_a_subprocess():
    r = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("done"), (r.returncode, r.stderr)
