"""One differentiable case per op of the table: (function of tensors, input arrays).

Shared by the higher-order and lazy-value tests; a new op needs a case here."""

import numpy as np

import tapegrad as tg
from tapegrad.core import functions as O

rng = np.random.default_rng(7)


def _u(lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape)


def away_from_zero(*shape):
    x = _u(0.3, 1.5, *shape)
    return x * rng.choice([-1.0, 1.0], size=shape)


# op name -> (function of tensors, list of input arrays)
CASES = {
    "NEG": (lambda x: -x, [_u(-2, 2, 3)]),
    "EXP": (tg.exp, [_u(-2, 2, 3)]),
    "LOG": (tg.log, [_u(0.3, 3, 3)]),
    "LOG1P": (tg.log1p, [_u(-0.5, 2, 3)]),
    "EXPM1": (tg.expm1, [_u(-2, 2, 3)]),
    "SQRT": (tg.sqrt, [_u(0.3, 3, 3)]),
    "SIN": (tg.sin, [_u(-2, 2, 3)]),
    "COS": (tg.cos, [_u(-2, 2, 3)]),
    "TAN": (tg.tan, [_u(-1, 1, 3)]),
    "TANH": (tg.tanh, [_u(-2, 2, 3)]),
    "SIGMOID": (tg.sigmoid, [_u(-2, 2, 3)]),
    "RELU": (lambda x: tg.relu(x) * x, [away_from_zero(4)]),
    "ABS": (lambda x: tg.abs(x) * x, [away_from_zero(4)]),
    "ARCSIN": (tg.arcsin, [_u(-0.8, 0.8, 3)]),
    "ARCCOS": (tg.arccos, [_u(-0.8, 0.8, 3)]),
    "ARCTAN": (tg.arctan, [_u(-2, 2, 3)]),
    "ARCSINH": (tg.arcsinh, [_u(-2, 2, 3)]),
    "ARCCOSH": (tg.arccosh, [_u(1.2, 3, 3)]),
    "ARCTANH": (tg.arctanh, [_u(-0.8, 0.8, 3)]),
    "SINH": (tg.sinh, [_u(-2, 2, 3)]),
    "COSH": (tg.cosh, [_u(-2, 2, 3)]),
    "LOG2": (tg.log2, [_u(0.3, 3, 3)]),
    "LOG10": (tg.log10, [_u(0.3, 3, 3)]),
    "EXP2": (tg.exp2, [_u(-2, 2, 3)]),
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
    "GAMMA": (tg.gamma, [_u(0.3, 3, 3)]),
    "GAMMALN": (tg.gammaln, [_u(0.3, 3, 3)]),
    "DIGAMMA": (tg.digamma, [_u(0.3, 3, 3)]),
    "POLYGAMMA": (lambda x: tg.polygamma(2, x) * x, [_u(0.3, 3, 3)]),
    "ERF": (tg.erf, [_u(-2, 2, 3)]),
    "ERFC": (tg.erfc, [_u(-2, 2, 3)]),
    "ERFINV": (tg.erfinv, [_u(-0.8, 0.8, 3)]),
    "ERFCINV": (tg.erfcinv, [_u(0.2, 1.8, 3)]),
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
