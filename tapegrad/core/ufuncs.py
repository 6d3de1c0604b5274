"""The elementwise functions (``tg.exp``, ``tg.hypot`` ...) and the scans (``tg.cumsum`` ...):
generated from the declarations in ``tapegrad/ops/elementwise.py`` and
``tapegrad/ops/structural/__init__.py`` by ``python tapegrad/kernels/generate.py``
(edit those, not this file)."""

import numpy as np

from .elementwise import make_binary, make_unary
from .scans import make_scan

neg = make_unary("NEG")
exp = make_unary("EXP")
log = make_unary("LOG")
log1p = make_unary("LOG1P")
expm1 = make_unary("EXPM1")
sqrt = make_unary("SQRT")
sin = make_unary("SIN")
cos = make_unary("COS")
tan = make_unary("TAN")
tanh = make_unary("TANH")
sigmoid = make_unary("SIGMOID")
relu = make_unary("RELU")
abs_ = make_unary("ABS")
arcsin = make_unary("ARCSIN")
arccos = make_unary("ARCCOS")
arctan = make_unary("ARCTAN")
arcsinh = make_unary("ARCSINH")
arccosh = make_unary("ARCCOSH")
arctanh = make_unary("ARCTANH")
sinh = make_unary("SINH")
cosh = make_unary("COSH")
log2 = make_unary("LOG2")
log10 = make_unary("LOG10")
exp2 = make_unary("EXP2")
cbrt = make_unary("CBRT")
sinc = make_unary("SINC")
sign = make_unary("SIGN")
floor = make_unary("FLOOR")
ceil = make_unary("CEIL")
rint = make_unary("RINT")
trunc = make_unary("TRUNC")
gamma = make_unary("GAMMA")
gammaln = make_unary("GAMMALN")
digamma = make_unary("DIGAMMA")
erf = make_unary("ERF")
erfc = make_unary("ERFC")
erfinv = make_unary("ERFINV")
erfcinv = make_unary("ERFCINV")
maximum = make_binary("MAXIMUM")
minimum = make_binary("MINIMUM")
arctan2 = make_binary("ARCTAN2")
hypot = make_binary("HYPOT")
logaddexp = make_binary("LOGADDEXP")
logaddexp2 = make_binary("LOGADDEXP2")
remainder = make_binary("REMAINDER")
fmod = make_binary("FMOD")
cumsum = make_scan("CUMSUM")
cumprod = make_scan("CUMPROD")
logcumsumexp = make_scan("LOGCUMSUMEXP")

# the NumPy ufuncs each serves on Tensors (tapegrad.numpy dispatch)
UFUNCS = {
    np.negative: neg,
    np.exp: exp,
    np.log: log,
    np.log1p: log1p,
    np.expm1: expm1,
    np.sqrt: sqrt,
    np.sin: sin,
    np.cos: cos,
    np.tan: tan,
    np.tanh: tanh,
    np.absolute: abs_,
    np.arcsin: arcsin,
    np.arccos: arccos,
    np.arctan: arctan,
    np.arcsinh: arcsinh,
    np.arccosh: arccosh,
    np.arctanh: arctanh,
    np.sinh: sinh,
    np.cosh: cosh,
    np.log2: log2,
    np.log10: log10,
    np.exp2: exp2,
    np.cbrt: cbrt,
    np.sign: sign,
    np.floor: floor,
    np.ceil: ceil,
    np.rint: rint,
    np.trunc: trunc,
    np.maximum: maximum,
    np.minimum: minimum,
    np.arctan2: arctan2,
    np.hypot: hypot,
    np.logaddexp: logaddexp,
    np.logaddexp2: logaddexp2,
    np.remainder: remainder,
    np.fmod: fmod,
}

# the ufunc.accumulate each scan is (np.add.accumulate is cumsum)
ACCUMULATE = {
    np.add: cumsum,
    np.multiply: cumprod,
    np.logaddexp: logcumsumexp,
}


class ElementwiseMethods:
    """``x.exp()``, ``x.hypot(y)``, ``x.cumsum(dim)`` ... (PyTorch's spellings too)."""

    neg = neg
    exp = exp
    log = log
    log1p = log1p
    expm1 = expm1
    sqrt = sqrt
    sin = sin
    cos = cos
    tan = tan
    tanh = tanh
    sigmoid = sigmoid
    relu = relu
    abs = abs_
    arcsin = arcsin
    asin = arcsin
    arccos = arccos
    acos = arccos
    arctan = arctan
    atan = arctan
    arcsinh = arcsinh
    asinh = arcsinh
    arccosh = arccosh
    acosh = arccosh
    arctanh = arctanh
    atanh = arctanh
    sinh = sinh
    cosh = cosh
    log2 = log2
    log10 = log10
    exp2 = exp2
    cbrt = cbrt
    sinc = sinc
    sign = sign
    floor = floor
    ceil = ceil
    rint = rint
    trunc = trunc
    gamma = gamma
    gammaln = gammaln
    lgamma = gammaln
    digamma = digamma
    erf = erf
    erfc = erfc
    erfinv = erfinv
    erfcinv = erfcinv
    maximum = maximum
    minimum = minimum
    arctan2 = arctan2
    atan2 = arctan2
    hypot = hypot
    logaddexp = logaddexp
    logaddexp2 = logaddexp2
    remainder = remainder
    fmod = fmod
    cumsum = cumsum
    cumprod = cumprod
    logcumsumexp = logcumsumexp


__all__ = [
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "digamma",
    "erf",
    "erfc",
    "erfcinv",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "fmod",
    "gamma",
    "gammaln",
    "hypot",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logcumsumexp",
    "maximum",
    "minimum",
    "neg",
    "relu",
    "remainder",
    "rint",
    "sigmoid",
    "sign",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]
