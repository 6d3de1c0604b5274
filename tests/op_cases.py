"""The op case database: every test of an op reads its cases from here.

``ALL_CASES``: ``Case`` records (the op it must record, a label, a function of Tensors, input
arrays, a NumPy reference for the value), many per op: shapes, broadcasting, axes, methods,
NumPy and PyTorch spellings (the gradient checks run every one).  ``CASES``: each op's main
case, ``op -> (function, inputs)``, the one the tests generated from the spec run at every order
(forward mode, Hessians, third order, trace replay, the Python twin); it is in ``ALL_CASES``
too.  A public elementwise op (a declaration with an ``example``) gets its main case from its
declaration (its function on inputs drawn from its declared domain, kept away from its kinks),
and a one-operand one its per-shape and method cases too, so a new elementwise op needs no edit
here; the entries below override main cases where one needs more (kinks multiplied by x so
higher orders are not all 0, ties, quadrants) and give every other op its cases.  Inputs come
from seeded generators in a fixed order: the same every run."""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

import tapegrad as tg
from tapegrad.core import functions as O
from tapegrad.core import ufuncs
from tapegrad.ops import formula
from tapegrad.ops.decl import Elementwise
from tapegrad.ops.spec import CODE, OPS

rng = np.random.default_rng(7)


def _u(lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape)


def away_from_zero(*shape):
    x = _u(0.3, 1.5, *shape)
    return x * rng.choice([-1.0, 1.0], size=shape)


def off_kinks(op, v):
    """``v`` with every value within 0.1 of one of the op's declared kinks moved 0.1 away."""
    for k in getattr(op, "kinks", ()):
        v = np.where(np.abs(v - k) < 0.1, k + np.where(v >= k, 0.1, -0.1), v)
    return v


def _from_domain(op, shape):
    """Inputs of ``shape`` from the op's declared domain, kept 0.1 away from its kinks."""
    lo, hi = op.domain
    return off_kinks(op, rng.uniform(lo, hi, size=shape))


def _declared():
    """The case of each public elementwise op, from its declaration (a two-operand op gets a
    (2, 3) and a (3,) operand: broadcasting)."""
    out = {}
    for op in OPS:
        if op.family == "elementwise" and op.example:
            fn = getattr(ufuncs, op.function or op.name.lower())
            shapes = [(3,)] if op.arity == 1 else [(2, 3), (3,)]
            out[op.name] = (fn, [_from_domain(op, s) for s in shapes])
    return out


# op name -> (function of tensors, list of input arrays)
CASES = _declared()
CASES |= {
    "NEG": (lambda x: -x, [_u(-2, 2, 3)]),
    "RELU": (lambda x: tg.relu(x) * x, [away_from_zero(4)]),
    "ABS": (lambda x: tg.abs(x) * x, [away_from_zero(4)]),
    "CBRT": (tg.cbrt, [away_from_zero(4)]),
    # both branches of the derivative: the series near 0 and the closed form
    "SINC": (tg.sinc, [np.array([0.0, 0.03, -0.07, 0.4, -1.3, 2.2])]),
    "SIGN": (lambda x: tg.sign(x) * x * x, [away_from_zero(4)]),
    "FLOOR": (lambda x: tg.floor(x) * x, [np.array([-1.7, -0.4, 0.3, 1.6])]),
    "CEIL": (lambda x: tg.ceil(x) * x, [np.array([-1.7, -0.4, 0.3, 1.6])]),
    "RINT": (lambda x: tg.rint(x) * x, [np.array([-1.7, -0.3, 0.3, 1.2])]),
    "TRUNC": (lambda x: tg.trunc(x) * x, [np.array([-1.7, -0.4, 0.3, 1.6])]),
    "LEAKY_RELU": (lambda x: tg.leaky_relu(x, 0.2) * x, [away_from_zero(4)]),
    "ADDS": (lambda x: (x + 1.5) * x, [_u(-2, 2, 3)]),
    "MULS": (lambda x: (x * 2.5) * x, [_u(-2, 2, 3)]),
    "RSUBS": (lambda x: (1.5 - x) * x, [_u(-2, 2, 3)]),
    "RDIVS": (lambda x: 2.0 / x, [_u(0.5, 2, 3)]),
    "POWS": (lambda x: x**3.5, [_u(0.5, 2, 3)]),
    "RPOWS": (lambda x: 2.0**x, [_u(-1, 1, 3)]),
    "CLIP": (lambda x: tg.clip(x, -0.5, 0.5) * x, [np.array([-1.0, -0.2, 0.3, 0.9])]),
    "ADD": (lambda x, y: (x + y) * x * y, [_u(-2, 2, 2, 3), _u(-2, 2, 3)]),
    "SUB": (lambda x, y: (x - y) * x * y, [_u(-2, 2, 2, 3), _u(-2, 2, 2, 1)]),
    "MUL": (lambda x, y: x * y * y, [_u(-2, 2, 3), _u(-2, 2, 3)]),
    "DIV": (lambda x, y: x / y, [_u(-2, 2, 3), _u(0.5, 2, 3)]),
    "POW": (lambda x, y: x**y, [_u(0.5, 2, 3), _u(-1, 2, 3)]),
    "MAXIMUM": (
        lambda x, y: tg.maximum(x, y) * x,
        [np.array([0.1, 2.0, -1.0]), np.array([1.0, -1.0, 0.5])],
    ),
    "MINIMUM": (
        lambda x, y: tg.minimum(x, y) * y,
        [np.array([0.1, 2.0, -1.0]), np.array([1.0, -1.0, 0.5])],
    ),
    # all four quadrants
    "ARCTAN2": (tg.arctan2, [np.array([0.5, 1.2, -0.7, -1.1]), np.array([1.3, -0.4, -0.9, 0.6])]),
    "HYPOT": (lambda x, y: tg.hypot(x, y) * x, [_u(-2, 2, 2, 3), _u(-2, 2, 3)]),
    "LOGADDEXP": (tg.logaddexp, [np.array([0.5, -1.0, 3.0, 0.2]), np.array([0.5, 2.0, -1.0, 0.3])]),
    "LOGADDEXP2": (
        tg.logaddexp2,
        [np.array([0.5, -1.0, 3.0, 0.2]), np.array([0.5, 2.0, -1.0, 0.3])],
    ),
    # negative operands: NumPy's floor semantics (the sign of the divisor)
    "REMAINDER": (
        lambda x, y: tg.remainder(x, y) * y,
        [np.array([2.3, -2.3, 2.3, -2.3, 0.4]), np.array([0.7, 0.7, -0.7, -0.7, 1.1])],
    ),
    "FMOD": (
        lambda x, y: tg.fmod(x, y) * y,
        [np.array([2.3, -2.3, 2.3, -2.3, 0.4]), np.array([0.7, 0.7, -0.7, -0.7, 1.1])],
    ),
    "POLYGAMMA": (lambda x: tg.polygamma(2, x) * x, [_u(0.3, 3, 3)]),
    "WHERE": (
        lambda x, y: tg.where(np.array([True, False, True]), x * y, y * y),
        [_u(-2, 2, 3), _u(-2, 2, 3)],
    ),
    "VIEW": (lambda x: (x[1:, ::-1][:, :2] * x.T[::2, :2].T).sum() * x, [_u(-2, 2, 3, 3)]),
    "RESHAPE": (lambda x: x.reshape(2, 3) * x.reshape(2, 3), [_u(-2, 2, 6)]),
    "SUM": (lambda x: x.sum(axis=0) ** 2, [_u(-2, 2, 3, 2)]),
    "PROD": (lambda x: x.prod(axis=1), [_u(0.5, 2, 2, 3)]),
    "AMAX": (lambda x: x.amax(axis=0) ** 2, [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "AMIN": (lambda x: x.amin(axis=1) ** 2, [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "MATMUL": (lambda a, b: tg.tanh(a @ b), [_u(-1, 1, 2, 3), _u(-1, 1, 3, 2)]),
    "CONCAT": (
        lambda x, y: tg.concatenate([x * y, y], axis=1) ** 2,
        [_u(-2, 2, 2, 2), _u(-2, 2, 2, 2)],
    ),
    "GATHER": (lambda x: x[np.array([0, 2, 0])] ** 3, [_u(-2, 2, 3)]),
    "SETITEM": (
        lambda x, y: O.setitem(x * x, np.array([1]), y * x[0]),
        [_u(-2, 2, 3), _u(-2, 2, 1)],
    ),
    "CUMSUM": (lambda x: tg.cumsum(x, axis=1) ** 2, [_u(-2, 2, 2, 3)]),
    "CUMPROD": (lambda x: tg.cumprod(x, axis=0) * x, [_u(0.5, 2, 3, 2)]),
    "LOGCUMSUMEXP": (lambda x: tg.logcumsumexp(x, axis=1) * x, [_u(-2, 2, 2, 3)]),
    # the linear recurrence s_k = a_k s_(k-1) + b_k, backwards along the middle axis
    "LINREC": (
        lambda a, b: O.scan("LINREC", (a, b), (1, 3, 2), 1) ** 2,
        [_u(-1, 1, 3, 2), _u(-2, 2, 3, 2)],
    ),
    "SCATTER": (lambda x: O.scatter_add(x * x, [0, 2, 0], (4,)) ** 2, [_u(-2, 2, 3)]),
}
INTERNAL = {"LEAF", "CONST", "FREED", "CUSTOM", "GUARD"}

# ---- every case, many per op -----------------------------------------------------------------


@dataclass
class Case:
    op: str  # op (table name) the case must record
    label: str
    fn: Callable  # Tensors -> Tensor
    inputs: tuple  # numpy arrays
    ref: Optional[Callable] = None  # numpy arrays -> expected forward value


# the main cases first (no NumPy reference: several multiply by x to keep higher orders alive)
ALL_CASES = [Case(k.split()[0], "main", fn, tuple(xs)) for k, (fn, xs) in CASES.items()]
SAME = object()  # ref=SAME: the case function itself, run on NumPy arrays, is the reference


def case(op, label, fn, *inputs, ref=SAME):
    ALL_CASES.append(
        Case(
            op,
            label,
            fn,
            tuple(np.array(a, dtype=np.float64) for a in inputs),
            fn if ref is SAME else ref,
        )
    )


_seed = [0]


def sample(name, shape, lo=None, hi=None):
    """Inputs for op ``name`` from its table domain, kept 0.1 away from its kinks."""
    op = OPS[CODE[name]]
    dlo, dhi = op.domain
    _seed[0] += 1
    rng = np.random.default_rng(_seed[0])
    v = rng.uniform(dlo if lo is None else lo, dhi if hi is None else hi, size=shape)
    return off_kinks(op, v)


SHAPES = [(), (4,), (2, 3), (2, 3, 2)]
BROADCAST = [
    ((3, 1), (1, 4)),
    ((2, 3), (3,)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((2, 1, 3), (4, 1)),
    ((2, 3), (2, 3)),
]


def distinct(name, shape):
    """Values without ties (for max/min): a shuffled grid plus jitter, inside the domain."""
    _seed[0] += 1
    rng = np.random.default_rng(_seed[0])
    n = int(np.prod(shape, dtype=np.int64))
    lo, hi = OPS[CODE[name]].domain
    grid = np.linspace(lo + 0.1, hi - 0.1, max(n, 1))[:n]
    return rng.permutation(grid).reshape(shape)


# ---- elementwise unary ops, generated from the table ----------------------------------------
UNARY_FN = {"NEG": tg.neg, "ABS": tg.abs}
for _op in OPS:
    if not (isinstance(_op, Elementwise) and _op.arity == 1 and _op.params == 0):
        continue
    _ref = formula.python_function(_op.fwd, ("a",))
    _fn = UNARY_FN.get(_op.name) or getattr(tg, _op.name.lower())
    for _shape in SHAPES:
        case(_op.name, f"fn{_shape}", _fn, sample(_op.name, _shape), ref=_ref)
    _method = {"NEG": lambda x: -x, "ABS": lambda x: abs(x)}.get(
        _op.name,
        lambda x, _n=_op.name.lower(): getattr(x, _n)(),  # noqa: B008  (binds _op now)
    )
    case(_op.name, "method", _method, sample(_op.name, (3,)), ref=_ref)

for _shape in SHAPES:
    case(
        "LEAKY_RELU",
        f"default{_shape}",
        tg.leaky_relu,
        sample("LEAKY_RELU", _shape),
        ref=lambda x: np.where(x > 0, x, 0.01 * x),
    )
case(
    "LEAKY_RELU",
    "slope0.2",
    lambda x: tg.leaky_relu(x, 0.2),
    sample("LEAKY_RELU", (2, 3)),
    ref=lambda x: np.where(x > 0, x, 0.2 * x),
)
case(
    "LEAKY_RELU",
    "method",
    lambda x: x.leaky_relu(negative_slope=0.3),
    sample("LEAKY_RELU", (5,)),
    ref=lambda x: np.where(x > 0, x, 0.3 * x),
)

_polygamma = formula.python_function("polygamma(c, a)", ("a", "c"))
for _n in (0, 1, 3):
    case(
        "POLYGAMMA",
        f"n={_n}",
        lambda x, n=_n: tg.polygamma(n, x),
        sample("POLYGAMMA", (2, 3)),
        ref=lambda x, n=_n: _polygamma(x, float(n)),
    )
case(
    "POLYGAMMA",
    "method",
    lambda x: x.polygamma(2),
    sample("POLYGAMMA", (3,)),
    ref=lambda x: _polygamma(x, 2.0),
)

# ---- ops with a Python / numpy scalar --------------------------------------------------------
for _shape in SHAPES:
    case("ADDS", f"x+2.5{_shape}", lambda x: x + 2.5, sample("ADDS", _shape))
    case("ADDS", f"2.5+x{_shape}", lambda x: 2.5 + x, sample("ADDS", _shape))
    case("ADDS", f"x-1.5{_shape}", lambda x: x - 1.5, sample("ADDS", _shape))
    case("MULS", f"x*3{_shape}", lambda x: x * 3, sample("MULS", _shape))
    case("MULS", f"-0.5*x{_shape}", lambda x: -0.5 * x, sample("MULS", _shape))
    case("MULS", f"x/4{_shape}", lambda x: x / 4.0, sample("MULS", _shape))
    case("RSUBS", f"1.5-x{_shape}", lambda x: 1.5 - x, sample("RSUBS", _shape))
    case("RDIVS", f"2/x{_shape}", lambda x: 2.0 / x, sample("RDIVS", _shape))
    case("POWS", f"x**2.5{_shape}", lambda x: x**2.5, sample("POWS", _shape))
    case("RPOWS", f"2**x{_shape}", lambda x: 2.0**x, sample("RPOWS", _shape))
case("ADDS", "np.float64", lambda x: x + np.float64(0.7), sample("ADDS", (3,)))
case("ADDS", "tg.add", lambda x: tg.add(x, 2), sample("ADDS", (3,)), ref=lambda x: x + 2)
case("MULS", "np.float64*x", lambda x: np.float64(2.0) * x, sample("MULS", (3,)))
case("MULS", "int", lambda x: 3 * x, sample("MULS", (2, 2)))
case("MULS", "tg.div", lambda x: tg.div(x, 8), sample("MULS", (2, 2)), ref=lambda x: x / 8)
case("RSUBS", "int", lambda x: 1 - x, sample("RSUBS", (3,)))
case("RSUBS", "tg.sub", lambda x: tg.sub(2.0, x), sample("RSUBS", (3,)), ref=lambda x: 2.0 - x)
case("RDIVS", "negative", lambda x: -3.0 / x, sample("RDIVS", (2, 3)))
case("RDIVS", "int", lambda x: 1 / x, sample("RDIVS", (3,)))
for _c in (3, 2.0, -1.5, 0.5, 1, 0):
    case("POWS", f"x**{_c}", lambda x, c=_c: x**c, sample("POWS", (2, 3)))
case("POWS", "int power of negatives", lambda x: x**3, sample("POWS", (4,), -2.0, -0.3))
case("POWS", "tg.pow", lambda x: tg.pow(x, 1.7), sample("POWS", (3,)), ref=lambda x: x**1.7)
case("POWS", "method", lambda x: x.pow(2), sample("POWS", (3,)), ref=lambda x: x**2)
case("POWS", "sqrt-ish", lambda x: x**0.5, sample("POWS", (3,)))
for _c in (0.5, 3.0, np.e):
    case("RPOWS", f"{_c:.3}**x", lambda x, c=_c: c**x, sample("RPOWS", (2, 3)))
case("RPOWS", "np.float64", lambda x: np.float64(1.5) ** x, sample("RPOWS", (3,)))
for _lo, _hi in ((-0.5, 0.5), (None, 0.5), (-0.5, None)):
    for _shape in ((), (3,), (2, 4)):
        case(
            "CLIP",
            f"clip({_lo},{_hi}){_shape}",
            lambda x, a=_lo, b=_hi: tg.clip(x, a, b),
            sample("CLIP", _shape),
            ref=lambda x, a=_lo, b=_hi: np.clip(x, a, b),
        )
case(
    "CLIP",
    "clamp method",
    lambda x: x.clamp(min=-0.5, max=0.5),
    sample("CLIP", (2, 3)),
    ref=lambda x: np.clip(x, -0.5, 0.5),
)
case(
    "CLIP",
    "tg.clamp",
    lambda x: tg.clamp(x, -0.5, 0.5),
    sample("CLIP", (5,)),
    ref=lambda x: np.clip(x, -0.5, 0.5),
)

# ---- binary ops with broadcasting --------------------------------------------------------------
BINARY_FN = {
    "ADD": (lambda x, y: x + y),
    "SUB": (lambda x, y: x - y),
    "MUL": (lambda x, y: x * y),
    "DIV": (lambda x, y: x / y),
    "POW": (lambda x, y: x**y),
    "MAXIMUM": tg.maximum,
    "MINIMUM": tg.minimum,
    "ARCTAN2": tg.arctan2,
    "HYPOT": tg.hypot,
    "LOGADDEXP": tg.logaddexp,
    "LOGADDEXP2": tg.logaddexp2,
    "REMAINDER": (lambda x, y: x % y),
    "FMOD": tg.fmod,
}
BINARY_REF = {
    "MAXIMUM": np.maximum,
    "MINIMUM": np.minimum,
    "ARCTAN2": np.arctan2,
    "HYPOT": np.hypot,
    "LOGADDEXP": np.logaddexp,
    "LOGADDEXP2": np.logaddexp2,
    "FMOD": np.fmod,
}


def _apart(x, y, name):
    """Keep maximum/minimum operands apart (their kink is x == y)."""
    if name not in ("MAXIMUM", "MINIMUM"):
        return y
    xb, yb = np.broadcast_arrays(x, y)
    close = np.abs(xb - yb) < 0.1
    if not close.any():
        return y
    return (
        sample(name, np.shape(y), 2.5, 3.0)
        if np.ndim(y) < np.ndim(xb)
        else np.where(close, yb + 0.3, yb)
    )


for _name in BINARY_FN:
    for _sa, _sb in BROADCAST:
        _x = sample(_name, _sa)
        _y = _apart(_x, sample(_name, _sb), _name)
        case(
            _name,
            f"{_sa}op{_sb}",
            BINARY_FN[_name],
            _x,
            _y,
            ref=BINARY_REF.get(_name, BINARY_FN[_name]),
        )
    case(
        _name,
        "same operand",
        lambda x, f=BINARY_FN[_name]: f(x, x * 1.5),
        sample(_name, (2, 3)),
        ref=lambda x, f=BINARY_REF.get(_name, BINARY_FN[_name]): (  # noqa: B008
            f(x, x * 1.5)
        ),
    )
case("ADD", "tg.add", tg.add, sample("ADD", (2, 3)), sample("ADD", (3,)), ref=np.add)
case("SUB", "tg.sub", tg.sub, sample("SUB", (2, 1)), sample("SUB", (3,)), ref=np.subtract)
case("MUL", "tg.mul", tg.mul, sample("MUL", ()), sample("MUL", (3,)), ref=np.multiply)
case("DIV", "tg.div", tg.div, sample("DIV", (3,)), sample("DIV", (2, 1)), ref=np.divide)
case("POW", "zero base 0.0 ** x", lambda x: 0.0**x, sample("POW", (3,)))
case("POW", "tg.pow", tg.pow, sample("POW", (3,)), sample("POW", (2, 1)), ref=np.power)
case("ADD", "scalar tensor + x", lambda s, x: s + x, sample("ADD", ()), sample("ADD", (2, 2)))
case("MUL", "x * scalar tensor", lambda x, s: x * s, sample("MUL", (2, 2)), sample("MUL", ()))
case("ADD", "numpy array + x", lambda x: np.ones(3) + x, sample("ADD", (2, 3)))
case("MUL", "x * numpy array", lambda x: x * np.arange(3.0), sample("MUL", (2, 3)))
case("SUB", "numpy array - x", lambda x: np.array([1.0, -2.0, 3.0]) - x, sample("SUB", (3,)))
case("DIV", "numpy array / x", lambda x: np.array([1.0, 2.0]) / x, sample("DIV", (2,)))
case(
    "MAXIMUM",
    "method",
    lambda x, y: x.maximum(y),
    sample("MAXIMUM", (4,), 0.5, 1.0),
    sample("MAXIMUM", (4,), -1.0, 0.0),
    ref=np.maximum,
)
case(
    "MINIMUM",
    "method",
    lambda x, y: x.minimum(y),
    sample("MINIMUM", (4,), 0.5, 1.0),
    sample("MINIMUM", (4,), -1.0, 0.0),
    ref=np.minimum,
)
case(
    "MAXIMUM",
    "np.clip with tensor bound",
    lambda x, lo: np.clip(x, lo, None),
    sample("MAXIMUM", (2, 3), 0.0, 1.0),
    sample("MAXIMUM", (3,), -1.5, -0.5),
    ref=lambda x, lo: np.maximum(x, lo),
)
case(
    "MINIMUM",
    "np.clip with tensor bound",
    lambda x, hi: np.clip(x, None, hi),
    sample("MINIMUM", (2, 3), 0.0, 1.0),
    sample("MINIMUM", (3,), 1.5, 2.0),
    ref=lambda x, hi: np.minimum(x, hi),
)
case(
    "MAXIMUM",
    "max(a, b) method",
    lambda x, y: x.max(y),
    sample("MAXIMUM", (3,), 0.5, 1.0),
    sample("MAXIMUM", (3,), -1.0, 0.0),
    ref=np.maximum,
)

# ---- where -------------------------------------------------------------------------------------
_COND = np.array([[True, False, True], [False, False, True]])
case(
    "WHERE",
    "same shapes",
    lambda x, y: tg.where(_COND, x, y),
    sample("WHERE", (2, 3)),
    sample("WHERE", (2, 3)),
    ref=lambda x, y: np.where(_COND, x, y),
)
case(
    "WHERE",
    "broadcast",
    lambda x, y: tg.where(_COND, x, y),
    sample("WHERE", (3,)),
    sample("WHERE", (2, 1)),
    ref=lambda x, y: np.where(_COND, x, y),
)
case(
    "WHERE",
    "scalar branch",
    lambda x: tg.where(_COND, x, 0.0),
    sample("WHERE", (2, 3)),
    ref=lambda x: np.where(_COND, x, 0.0),
)
case(
    "WHERE",
    "cond from tensor",
    lambda x: tg.where(x > 0, x, x * x),
    sample("WHERE", (2, 3)),
    ref=lambda x: np.where(x > 0, x, x * x),
)
case(
    "WHERE",
    "scalar cond",
    lambda x, y: tg.where(np.array(False), x, y),
    sample("WHERE", (3,)),
    sample("WHERE", (3,)),
    ref=lambda x, y: y,
)

# ---- views: transpose / permute / broadcast / basic indexing ------------------------------------
case("VIEW", "transpose 2-D", tg.transpose, sample("VIEW", (2, 3)), ref=np.transpose)
case("VIEW", ".T", lambda x: x.T, sample("VIEW", (2, 3)))
case("VIEW", ".T 3-D", lambda x: x.T, sample("VIEW", (2, 3, 2)))
case(
    "VIEW",
    "transpose axes",
    lambda x: tg.transpose(x, (1, 2, 0)),
    sample("VIEW", (2, 3, 2)),
    ref=lambda x: np.transpose(x, (1, 2, 0)),
)
case(
    "VIEW",
    "transpose(0, 2)",
    lambda x: x.transpose(0, 2),
    sample("VIEW", (2, 3, 4)),
    ref=lambda x: np.swapaxes(x, 0, 2),
)
case(
    "VIEW", "transpose(1, 0)", lambda x: x.transpose(1, 0), sample("VIEW", (2, 3)), ref=np.transpose
)
case(
    "VIEW",
    "permute",
    lambda x: x.permute(2, 0, 1),
    sample("VIEW", (2, 3, 2)),
    ref=lambda x: np.transpose(x, (2, 0, 1)),
)
case(
    "VIEW",
    "broadcast_to",
    lambda x: tg.broadcast_to(x, (2, 3, 4)),
    sample("VIEW", (3, 1)),
    ref=lambda x: np.broadcast_to(x, (2, 3, 4)),
)
case(
    "VIEW",
    "broadcast scalar",
    lambda x: tg.broadcast_to(x, (2, 2)),
    sample("VIEW", ()),
    ref=lambda x: np.broadcast_to(x, (2, 2)),
)
case(
    "VIEW",
    "expand",
    lambda x: x.expand(2, -1),
    sample("VIEW", (3,)),
    ref=lambda x: np.broadcast_to(x, (2, 3)),
)
BASIC_KEYS = [
    ("int", (3, 4), 1),
    ("negative int", (3, 4), -1),
    ("int, int", (3, 4), (2, -3)),
    ("slice", (5,), slice(1, 4)),
    ("negative step", (6,), slice(None, None, -2)),
    ("negative step 2-D", (3, 4), (slice(None, None, -1), slice(3, 0, -2))),
    ("None", (2, 3), (None, slice(None), 1)),
    ("Ellipsis", (2, 3, 4), (Ellipsis, 1)),
    ("Ellipsis slice", (2, 3, 4), (0, Ellipsis, slice(1, 3))),
    ("0-d Ellipsis", (), Ellipsis),
    ("0-d None", (), None),
    ("empty slice", (4,), slice(2, 2)),
]
for _label, _shape, _key in BASIC_KEYS:
    case("VIEW", f"getitem {_label}", lambda x, k=_key: x[k], sample("VIEW", _shape))

# ---- reshape family ----------------------------------------------------------------------------
case("RESHAPE", "reshape", lambda x: x.reshape(3, 2), sample("RESHAPE", (2, 3)))
case("RESHAPE", "reshape tuple -1", lambda x: x.reshape((-1, 4)), sample("RESHAPE", (2, 3, 2)))
case(
    "RESHAPE",
    "tg.reshape",
    lambda x: tg.reshape(x, (6,)),
    sample("RESHAPE", (2, 3)),
    ref=lambda x: x.reshape(6),
)
case("RESHAPE", "scalar to (1, 1)", lambda x: x.reshape(1, 1), sample("RESHAPE", ()))
case(
    "RESHAPE",
    "view",
    lambda x: x.view(3, 2),
    sample("RESHAPE", (6,)),
    ref=lambda x: x.reshape(3, 2),
)
case("RESHAPE", "flatten", lambda x: x.flatten(), sample("RESHAPE", (2, 3, 2)))
case("RESHAPE", "squeeze all", tg.squeeze, sample("RESHAPE", (1, 3, 1)), ref=np.squeeze)
case(
    "RESHAPE",
    "squeeze axis",
    lambda x: tg.squeeze(x, 0),
    sample("RESHAPE", (1, 3, 1)),
    ref=lambda x: np.squeeze(x, 0),
)
case(
    "RESHAPE",
    "squeeze dim=",
    lambda x: x.squeeze(dim=-1),
    sample("RESHAPE", (1, 3, 1)),
    ref=lambda x: np.squeeze(x, -1),
)
for _ax in (0, 1, -1):
    case(
        "RESHAPE",
        f"expand_dims {_ax}",
        lambda x, a=_ax: tg.expand_dims(x, a),
        sample("RESHAPE", (2, 3)),
        ref=lambda x, a=_ax: np.expand_dims(x, a),
    )
    case(
        "RESHAPE",
        f"unsqueeze {_ax}",
        lambda x, a=_ax: x.unsqueeze(a),
        sample("RESHAPE", (2, 3)),
        ref=lambda x, a=_ax: np.expand_dims(x, a),
    )
case(
    "RESHAPE",
    "tg.unsqueeze",
    lambda x: tg.unsqueeze(x, 0),
    sample("RESHAPE", (3,)),
    ref=lambda x: x[None],
)

# ---- reductions ----------------------------------------------------------------------------------
AXES = [None, 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2)]
REDUCE = {
    "SUM": (lambda x, a, k: x.sum(axis=a, keepdims=k), np.sum),
    "PROD": (lambda x, a, k: x.prod(axis=a, keepdims=k), np.prod),
    "AMAX": (lambda x, a, k: x.amax(axis=a, keepdims=k), np.max),
    "AMIN": (lambda x, a, k: x.amin(axis=a, keepdims=k), np.min),
}
_METHOD = {"SUM": "sum", "PROD": "prod", "AMAX": "amax", "AMIN": "amin"}
for _name, (_f, _npf) in REDUCE.items():
    for _ax in AXES:
        for _keep in (False, True):
            case(
                _name,
                f"axis={_ax} keepdims={_keep}",
                lambda x, a=_ax, k=_keep, f=_f: f(x, a, k),
                distinct(_name, (2, 3, 2)),
                ref=lambda x, a=_ax, k=_keep, f=_npf: f(x, axis=a, keepdims=k),
            )
    case(
        _name,
        "1-D",
        lambda x, f=_f: f(x, None, False),
        distinct(_name, (5,)),
        ref=lambda x, f=_npf: f(x),
    )
    case(
        _name,
        "0-d",
        lambda x, f=_f: f(x, None, False),
        distinct(_name, ()),
        ref=lambda x, f=_npf: f(x),
    )
    case(
        _name,
        "dim=",
        lambda x, m=_METHOD[_name]: getattr(x, m)(dim=1),
        distinct(_name, (2, 3)),
        ref=lambda x, f=_npf: f(x, axis=1),
    )
case(
    "SUM",
    "tg.sum",
    lambda x: tg.sum(x, (0, 1)),
    sample("SUM", (2, 3, 2)),
    ref=lambda x: np.sum(x, (0, 1)),
)
case(
    "SUM",
    "keepdim=",
    lambda x: x.sum(dim=0, keepdim=True),
    sample("SUM", (2, 3)),
    ref=lambda x: np.sum(x, 0, keepdims=True),
)
case(
    "PROD",
    "with one zero",
    lambda x: x.prod(axis=1),
    np.array([[0.5, 0.0, -1.5], [1.2, 0.7, -0.4]]),
    ref=lambda x: np.prod(x, axis=1),
)
case(
    "PROD",
    "with two zeros",
    lambda x: x.prod(axis=None),
    np.array([[0.5, 0.0, -1.5], [1.2, 0.0, -0.4]]),
    ref=np.prod,
)
case(
    "PROD", "tg.prod", lambda x: tg.prod(x, 0), sample("PROD", (3, 2)), ref=lambda x: np.prod(x, 0)
)
case(
    "AMAX",
    "tg.max",
    lambda x: tg.amax(x, axis=-1),
    distinct("AMAX", (2, 3)),
    ref=lambda x: np.max(x, axis=-1),
)
case(
    "AMIN",
    "tg.min",
    lambda x: tg.amin(x, axis=0, keepdims=True),
    distinct("AMIN", (2, 3)),
    ref=lambda x: np.min(x, axis=0, keepdims=True),
)
case("AMAX", "tg.amax", lambda x: tg.amax(x), distinct("AMAX", (4,)), ref=np.max)
case(
    "AMIN",
    "amin method",
    lambda x: x.amin(axis=1),
    distinct("AMIN", (2, 3)),
    ref=lambda x: np.min(x, axis=1),
)

# composite reductions (each records SUM)


def _np_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


for _ax in (None, 0, -1, (0, 2)):
    for _keep in (False, True):
        case(
            "SUM",
            f"mean axis={_ax} keepdims={_keep}",
            lambda x, a=_ax, k=_keep: x.mean(axis=a, keepdims=k),
            sample("SUM", (2, 3, 2)),
        )
        case(
            "SUM",
            f"logsumexp axis={_ax} keepdims={_keep}",
            lambda x, a=_ax, k=_keep: tg.logsumexp(x, a, k),
            sample("SUM", (2, 3, 2)),
            ref=lambda x, a=_ax, k=_keep: _np_logsumexp(x, a, k),
        )
for _ax in (0, 1, -1):
    case(
        "SUM",
        f"softmax axis={_ax}",
        lambda x, a=_ax: tg.softmax(x, a),
        sample("SUM", (2, 3)),
        ref=lambda x, a=_ax: _np_softmax(x, a),
    )
    case(
        "SUM",
        f"log_softmax axis={_ax}",
        lambda x, a=_ax: tg.log_softmax(x, a),
        sample("SUM", (2, 3)),
        ref=lambda x, a=_ax: np.log(_np_softmax(x, a)),
    )
case("SUM", "softmax 1-D", tg.softmax, sample("SUM", (4,)), ref=_np_softmax)
case(
    "SUM",
    "softmax dim=",
    lambda x: x.softmax(dim=0),
    sample("SUM", (2, 3)),
    ref=lambda x: _np_softmax(x, 0),
)
case(
    "SUM",
    "log_softmax method",
    lambda x: x.log_softmax(),
    sample("SUM", (2, 3)),
    ref=lambda x: np.log(_np_softmax(x)),
)
case(
    "SUM",
    "logsumexp method",
    lambda x: x.logsumexp(dim=1),
    sample("SUM", (2, 3)),
    ref=lambda x: _np_logsumexp(x, 1),
)
case("SUM", "mean 0-d", lambda x: x.mean(), sample("SUM", ()))
case(
    "SUM", "mean dim=", lambda x: x.mean(dim=1), sample("SUM", (2, 3)), ref=lambda x: x.mean(axis=1)
)
for _ax in (None, 0, -1):
    for _dd in (0, 1):
        case(
            "SUM",
            f"var axis={_ax} ddof={_dd}",
            lambda x, a=_ax, d=_dd: x.var(axis=a, ddof=d),
            sample("SUM", (3, 4)),
        )
        case(
            "SUM",
            f"std axis={_ax} ddof={_dd}",
            lambda x, a=_ax, d=_dd: x.std(axis=a, ddof=d),
            sample("SUM", (3, 4)),
        )
case("SUM", "var keepdims", lambda x: x.var(axis=1, keepdims=True, ddof=0), sample("SUM", (3, 4)))

# ---- matmul / dot --------------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((4,), (4,)),
    ((4,), (4, 3)),
    ((2, 4), (4,)),
    ((2, 4), (4, 3)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((4, 3), (2, 3, 2)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((1, 1), (1, 1)),
]
for _sa, _sb in MATMUL_SHAPES:
    case("MATMUL", f"{_sa}@{_sb}", lambda x, y: x @ y, sample("MATMUL", _sa), sample("MATMUL", _sb))
case(
    "MATMUL",
    "tg.matmul",
    tg.matmul,
    sample("MATMUL", (2, 3)),
    sample("MATMUL", (3, 2)),
    ref=np.matmul,
)
case(
    "MATMUL",
    "method",
    lambda x, y: x.matmul(y),
    sample("MATMUL", (2, 3)),
    sample("MATMUL", (3,)),
    ref=np.matmul,
)
case("MATMUL", "numpy @ x", lambda x: np.ones((2, 3)) @ x, sample("MATMUL", (3, 2)))
case("MATMUL", "x @ numpy", lambda x: x @ np.arange(6.0).reshape(3, 2), sample("MATMUL", (2, 3)))
for _sa, _sb in (((4,), (4,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4))):
    case(
        "MATMUL",
        f"dot {_sa}.{_sb}",
        O.dot,  # NumPy's (tg.dot is PyTorch's: 1-D only outside NumPy code)
        sample("MATMUL", _sa),
        sample("MATMUL", _sb),
        ref=np.dot,
    )
case(
    "MATMUL",
    "dot method",
    lambda x, y: x.dot(y),
    sample("MATMUL", (3,)),
    sample("MATMUL", (3,)),
    ref=np.dot,
)

# ---- concatenate / stack -----------------------------------------------------------------------
for _ax, _sa, _sb in (
    (0, (2, 3), (1, 3)),
    (1, (2, 3), (2, 1)),
    (-1, (2, 3, 2), (2, 3, 1)),
    (0, (3,), (2,)),
    (1, (2, 1, 2), (2, 3, 2)),
):
    case(
        "CONCAT",
        f"concatenate axis={_ax} {_sa}+{_sb}",
        lambda x, y, a=_ax: tg.concatenate([x, y], axis=a),
        sample("CONCAT", _sa),
        sample("CONCAT", _sb),
        ref=lambda x, y, a=_ax: np.concatenate([x, y], axis=a),
    )
case(
    "CONCAT",
    "three pieces, one constant",
    lambda x, y: tg.concatenate([x, np.ones((2, 2)), y], axis=1),
    sample("CONCAT", (2, 1)),
    sample("CONCAT", (2, 3)),
    ref=lambda x, y: np.concatenate([x, np.ones((2, 2)), y], axis=1),
)
case(
    "CONCAT",
    "axis=None flattens",
    lambda x, y: tg.concatenate([x, y], axis=None),
    sample("CONCAT", (2, 2)),
    sample("CONCAT", (3,)),
    ref=lambda x, y: np.concatenate([x, y], axis=None),
)
case(
    "CONCAT",
    "same tensor twice",
    lambda x: tg.concatenate([x, x * 2.0]),
    sample("CONCAT", (3,)),
    ref=lambda x: np.concatenate([x, x * 2.0]),
)
for _ax in (0, 1, 2, -1, -3):
    case(
        "CONCAT",
        f"stack axis={_ax}",
        lambda x, y, a=_ax: tg.stack([x, y], axis=a),
        sample("CONCAT", (2, 3)),
        sample("CONCAT", (2, 3)),
        ref=lambda x, y, a=_ax: np.stack([x, y], axis=a),
    )
case(
    "CONCAT",
    "stack scalars",
    lambda x, y: tg.stack([x, y, x]),
    sample("CONCAT", ()),
    sample("CONCAT", ()),
    ref=lambda x, y: np.stack([x, y, x]),
)

# ---- advanced indexing (GATHER) ----------------------------------------------------------------
ADV_KEYS = [
    ("int list", (5,), [0, 3, 1]),
    ("repeated ints", (4,), [1, 1, 3, 1]),
    ("int array 2-D", (3, 4), np.array([[0, 2], [2, 2]])),
    ("negative ints", (5,), [-1, -1, 0]),
    ("row ints", (3, 4), ([0, 2, 0],)),
    ("pair of int arrays", (3, 4), ([0, 2, 2], [1, 3, 3])),
    ("ints and slice", (3, 4), (slice(None), [3, 0, 3])),
    ("bool mask", (2, 3), np.array([[True, False, True], [False, True, True]])),
    ("bool row mask", (3, 2), np.array([True, False, True])),
    ("bool mask all False", (4,), np.zeros(4, bool)),
]
for _label, _shape, _key in ADV_KEYS:
    case("GATHER", f"getitem {_label}", lambda x, k=_key: x[k], sample("GATHER", _shape))
case(
    "GATHER",
    "index with int tensor",
    lambda x: x[tg.tensor([2, 0, 2])],
    sample("GATHER", (3,)),
    ref=lambda x: x[np.array([2, 0, 2])],
)
case("GATHER", "mask from comparison", lambda x: x[x > 0.0], sample("GATHER", (2, 4)))

case(
    "GATHER",
    "gather_flat",
    lambda x: O.gather_flat(x, [5, 0, 5, 2], (2, 2)),
    sample("GATHER", (2, 3)),
    ref=lambda x: x.reshape(-1)[[5, 0, 5, 2]].reshape(2, 2),
)


# ---- scatter_add (SCATTER, the adjoint of gather) ------------------------------------------------
def _np_scatter_add(g, idx, shape):
    out = np.zeros(int(np.prod(shape, dtype=np.int64)))
    np.add.at(out, np.asarray(idx, dtype=np.int64), g.reshape(-1))
    return out.reshape(shape)


for _label, _gs, _idx, _shape in (
    ("distinct", (3,), [4, 0, 2], (5,)),
    ("repeated accumulate", (2, 2), [1, 1, 3, 1], (2, 2)),
    ("into 0 rows", (0,), [], (3,)),
):
    case(
        "SCATTER",
        f"scatter_add {_label}",
        lambda g, i=_idx, s=_shape: O.scatter_add(g, i, s),
        sample("SCATTER", _gs),
        ref=lambda g, i=_idx, s=_shape: _np_scatter_add(g, i, s),
    )


# ---- indexed assignment (SETITEM) --------------------------------------------------------------
def _assigned(key):
    def f(x, v):
        z = x * 1.0
        z[key] = v
        return z * z

    return f


for _label, _xs, _key, _vs in (
    ("slice", (5,), slice(1, 3), (2,)),
    ("int", (2, 3), 1, (3,)),
    ("broadcast value", (2, 3), (slice(None), 1), ()),
    ("int array", (5,), [4, 0], (2,)),
    ("bool mask", (2, 3), np.array([[True, False, True], [False, False, True]]), (3,)),
    ("negative step", (6,), slice(None, None, -3), (2,)),
):
    case(
        "SETITEM",
        f"z[{_label}] = v",
        _assigned(_key),
        sample("SETITEM", _xs),
        sample("SETITEM", _vs),
    )


def _assign_const(x):
    z = x + 0.0
    z[0] = 5.0
    return z * x


case("SETITEM", "constant value", _assign_const, sample("SETITEM", (3,)))


def _assign_into_const(v):
    z = tg.zeros(4)
    z[1:3] = v
    return z * 2.0


case(
    "SETITEM",
    "into a constant",
    _assign_into_const,
    sample("SETITEM", (2,)),
    ref=lambda v: np.array([0.0, v[0], v[1], 0.0]) * 2.0,
)


# ---- scans ------------------------------------------------------------------------------------
for _shape, _axis in (((5,), None), ((2, 3), 0), ((2, 3), 1), ((2, 3, 2), -2), ((2, 3), None)):
    case(
        "CUMSUM",
        f"cumsum{_shape} axis={_axis}",
        lambda x, a=_axis: tg.cumsum(x, a),
        sample("CUMSUM", _shape),
        ref=lambda x, a=_axis: np.cumsum(x, a),
    )
    case(
        "CUMPROD",
        f"cumprod{_shape} axis={_axis}",
        lambda x, a=_axis: tg.cumprod(x, a),
        sample("CUMPROD", _shape),
        ref=lambda x, a=_axis: np.cumprod(x, a),
    )
    case(
        "LOGCUMSUMEXP",
        f"logcumsumexp{_shape} axis={_axis}",
        lambda x, a=_axis: tg.logcumsumexp(x, a),
        sample("LOGCUMSUMEXP", _shape),
        ref=lambda x, a=_axis: np.logaddexp.accumulate(x.ravel() if a is None else x, a or 0),
    )
case(
    "LOGCUMSUMEXP",
    "method, dim, far apart (no overflow)",
    lambda x: x.logcumsumexp(dim=1),
    np.array([[-800.0, 0.0, 700.0], [1.0, 1.0, -3.0]]),
    ref=lambda x: np.logaddexp.accumulate(x, 1),
)


def _linrec(a, b, reverse):
    """s_k = a_k s_(k-1) + b_k along axis 0, by hand."""
    a, b = (a[::-1], b[::-1]) if reverse else (a, b)
    out, s = np.empty_like(b), np.zeros(b.shape[1:])
    for k in range(b.shape[0]):
        s = a[k] * s + b[k]
        out[k] = s
    return out[::-1] if reverse else out


for _rev in (0, 1):
    case(
        "LINREC",
        f"linear recurrence reverse={_rev}",
        lambda a, b, r=_rev: O.scan("LINREC", (a, b), (1, 4, 2), r),
        sample("LINREC", (4, 2)),
        sample("LINREC", (4, 2)),
        ref=lambda a, b, r=_rev: _linrec(a, b, r),
    )
case(
    "CUMSUM",
    "method",
    lambda x: x.cumsum(axis=1),
    sample("CUMSUM", (2, 3)),
    ref=lambda x: x.cumsum(axis=1),
)
case(
    "CUMPROD",
    "with zeros",
    lambda x: tg.cumprod(x, 1),
    np.array([[0.0, 1.5, -0.5], [1.2, 0.0, 0.0]]),
    ref=lambda x: np.cumprod(x, 1),
)
case(
    "CUMPROD",
    "method",
    lambda x: x.cumprod(0),
    sample("CUMPROD", (3, 2)),
    ref=lambda x: x.cumprod(0),
)

# ---- an operand of one value -------------------------------------------------------------------
# A scalar Tensor with an array is one row: the kernels broadcast the single value over it (no
# VIEW row). Main cases for both sides of every two-operand op, so every sweep, the twin, the
# NumPy stand-in, traces and every order run that path; the factors s * x make the second
# and third derivatives in both operands nonzero.
for _name, _f in BINARY_FN.items():
    _x = sample(_name, (2, 3))
    _s = _apart(_x, sample(_name, ()), _name)
    CASES[f"{_name} scalar-right"] = (lambda x, s, f=_f: f(x, s) * s * x, [_x, _s])
    _x = sample(_name, (4,))
    _s = _apart(_x, sample(_name, ()), _name)
    CASES[f"{_name} scalar-left"] = (lambda s, x, f=_f: f(s, x) * s * x, [_s, _x])
