"""One differentiable case per op of the table: (function of tensors, input arrays).

Shared by the tests generated from the spec.  A public elementwise op (a declaration with an
``example``) has a case made from its declaration: its function on inputs drawn from its
declared domain, kept away from its kinks; ``CASES`` below overrides that where a case needs
more (kinks multiplied by x so higher orders are not all 0, ties, quadrants), and gives every
other op its case.  Inputs come from one seeded generator, in the spec's order."""

import numpy as np

import tapegrad as tg
from tapegrad.core import functions as O
from tapegrad.core import ufuncs
from tapegrad.ops.spec import OPS

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
