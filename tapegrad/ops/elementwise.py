"""Elementwise ops: one line of formulas each (see ``formula.py`` for the language).

``fwd`` is the value, ``d`` the partial derivative of ``out`` with respect to each operand.
An op that is one function of the language (``exp(a)``) gives no ``d``: its partial is that
function's derivative rule in ``formula.py``, the same rule every formula calling it uses.
Kinks pick one side (``relu'(0) = 0``, ``abs'(0) = 0``); ties of maximum / minimum split the
gradient evenly, at every order, because every order evaluates these same formulas.
"""

from .decl import Elementwise as E
from .formula import LN2, arctan2_partials, logaddexp_partials

_INTEGERS = (-2.0, -1.0, 0.0, 1.0, 2.0)
_PIECEWISE_CONSTANT = (
    "Elementwise {} (NumPy's value); its derivative is 0 at every order (almost everywhere, "
    "as in JAX and PyTorch)."
)

OPS = (
    # ---- one operand ----
    E(
        "NEG",
        "-a",
        numpy=("negative", "__neg__"),
        example=("[0.5, 2.0]", "[-0.5000, -2.0000]", "[-1., -1.]", "-1"),
    ),
    E(
        "EXP",
        "exp(a)",
        numpy=("exp",),
        example=("[0.5, 2.0]", "[1.6487, 7.3891]", "[1.6487, 7.3891]", "exp(x)"),
    ),
    E(
        "LOG",
        "log(a)",
        numpy=("log",),
        domain=(0.2, 3.0),
        example=("[0.5, 2.0]", "[-0.6931, 0.6931]", "[2.0000, 0.5000]", "1 / x"),
    ),
    E(
        "LOG1P",
        "log1p(a)",
        graph="Log1pBackward0",
        numpy=("log1p",),
        domain=(-0.7, 2.0),
        example=("[0.5, 2.0]", "[0.4055, 1.0986]", "[0.6667, 0.3333]", "1 / (1 + x)"),
    ),
    E(
        "EXPM1",
        "expm1(a)",
        numpy=("expm1",),
        saved=("out",),
        example=("[0.5, 2.0]", "[0.6487, 6.3891]", "[1.6487, 7.3891]", "exp(x)"),
    ),  # out + 1 cancels for a << 0
    E(
        "SQRT",
        "sqrt(a)",
        numpy=("sqrt",),
        domain=(0.2, 3.0),
        example=("[0.25, 4.0]", "[0.5000, 2.0000]", "[1.0000, 0.2500]", "1 / (2 sqrt(x))"),
    ),
    E(
        "SIN",
        "sin(a)",
        numpy=("sin",),
        example=("[0.5, 2.0]", "[0.4794, 0.9093]", "[0.8776, -0.4161]", "cos(x)"),
    ),
    E(
        "COS",
        "cos(a)",
        numpy=("cos",),
        example=("[0.5, 2.0]", "[0.8776, -0.4161]", "[-0.4794, -0.9093]", "-sin(x)"),
    ),
    E(
        "TAN",
        "tan(a)",
        numpy=("tan",),
        domain=(-1.2, 1.2),
        example=("[0.5, 1.0]", "[0.5463, 1.5574]", "[1.2984, 3.4255]", "1 / cos(x)**2"),
    ),
    E(
        "TANH",
        "tanh(a)",
        numpy=("tanh",),
        saved=("out",),
        example=("[0.5, 2.0]", "[0.4621, 0.9640]", "[0.7864, 0.0707]", "1 - tanh(x)**2"),
    ),
    # 1 / (1 + exp(-a)) with both tails kept: 1 - out and 0.5 * (tanh(a / 2) + 1) round to
    # 0 or 1 long before sigmoid does (expit(-50) is 1.9e-22, not 0)
    E(
        "SIGMOID",
        "exp(-logaddexp(0.0, -a))",
        ("out * exp(-logaddexp(0.0, a))",),
        numpy=("scipy.special.expit",),
        saved=("out",),
        example=(
            "[-1.0, 2.0]",
            "[0.2689, 0.8808]",
            "[0.1966, 0.1050]",
            "sigmoid(x) (1 - sigmoid(x))",
        ),
    ),
    E(
        "RELU",
        "maximum(a, 0.0)",
        ("where(a > 0.0, 1.0, 0.0)",),
        kinks=(0.0,),
        saved=("out",),
        example=("[-1.5, 2.0]", "[0., 2.]", "[0., 1.]", "1 where x > 0, else 0"),
    ),
    E(
        "ABS",
        "abs(a)",
        numpy=("absolute", "abs", "__abs__"),
        kinks=(0.0,),
        example=("[-1.5, 2.0]", "[1.5000, 2.0000]", "[-1., 1.]", "sign(x)"),
        function="abs_",
    ),
    E(
        "ARCSIN",
        "arcsin(a)",
        numpy=("arcsin",),
        domain=(-0.8, 0.8),
        example=("[-0.5, 0.25]", "[-0.5236, 0.2527]", "[1.1547, 1.0328]", "1 / sqrt(1 - x**2)"),
        methods=("asin",),
    ),
    E(
        "ARCCOS",
        "arccos(a)",
        numpy=("arccos",),
        domain=(-0.8, 0.8),
        example=("[-0.5, 0.25]", "[2.0944, 1.3181]", "[-1.1547, -1.0328]", "-1 / sqrt(1 - x**2)"),
        methods=("acos",),
    ),
    E(
        "ARCTAN",
        "arctan(a)",
        numpy=("arctan",),
        example=("[0.5, 2.0]", "[0.4636, 1.1071]", "[0.8000, 0.2000]", "1 / (1 + x**2)"),
        methods=("atan",),
    ),
    E(
        "ARCSINH",
        "arcsinh(a)",
        numpy=("arcsinh",),
        example=("[0.5, 2.0]", "[0.4812, 1.4436]", "[0.8944, 0.4472]", "1 / sqrt(x**2 + 1)"),
        methods=("asinh",),
    ),
    E(
        "ARCCOSH",
        "arccosh(a)",
        numpy=("arccosh",),
        domain=(1.2, 3.0),
        example=("[1.5, 2.0]", "[0.9624, 1.3170]", "[0.8944, 0.5774]", "1 / sqrt(x**2 - 1)"),
        methods=("acosh",),
    ),
    E(
        "ARCTANH",
        "arctanh(a)",
        numpy=("arctanh",),
        domain=(-0.8, 0.8),
        example=("[-0.5, 0.25]", "[-0.5493, 0.2554]", "[1.3333, 1.0667]", "1 / (1 - x**2)"),
        methods=("atanh",),
    ),
    E(
        "SINH",
        "sinh(a)",
        numpy=("sinh",),
        example=("[0.5, 2.0]", "[0.5211, 3.6269]", "[1.1276, 3.7622]", "cosh(x)"),
    ),
    E(
        "COSH",
        "cosh(a)",
        numpy=("cosh",),
        example=("[0.5, 2.0]", "[1.1276, 3.7622]", "[0.5211, 3.6269]", "sinh(x)"),
    ),
    E(
        "LOG2",
        "log2(a)",
        numpy=("log2",),
        domain=(0.2, 3.0),
        example=("[0.5, 4.0]", "[-1., 2.]", "[2.8854, 0.3607]", "1 / (x ln 2)"),
    ),
    E(
        "LOG10",
        "log10(a)",
        numpy=("log10",),
        domain=(0.2, 3.0),
        example=("[0.5, 10.0]", "[-0.3010, 1.0000]", "[0.8686, 0.0434]", "1 / (x ln 10)"),
    ),
    E(
        "EXP2",
        "exp2(a)",
        numpy=("exp2",),
        example=("[0.5, 3.0]", "[1.4142, 8.0000]", "[0.9803, 5.5452]", "2**x ln 2"),
    ),
    E(
        "CBRT",
        "cbrt(a)",
        numpy=("cbrt",),
        kinks=(0.0,),
        example=("[0.125, 8.0]", "[0.5000, 2.0000]", "[1.3333, 0.0833]", "1 / (3 cbrt(x)**2)"),
    ),
    # NumPy's normalized sinc; the derivative switches to a series near 0 (exact there)
    E(
        "SINC",
        "sinc(a)",
        numpy=("sinc",),
        example=(
            "[0.5, 0.25]",
            "[0.6366, 0.9003]",
            "[-1.2732, -0.7728]",
            "(cos(pi x) pi x - sin(pi x)) / (pi x**2)",
        ),
        doc="NumPy's normalized sinc, sin(pi x) / (pi x), 1 at 0; its derivatives are exact "
        "at 0 at every order (a series is used near 0).",
    ),
    # piecewise constant: NumPy's value, derivative 0 at every order (as JAX and PyTorch)
    E(
        "SIGN",
        "sign(a)",
        numpy=("sign",),
        kinks=(0.0,),
        example=("[-1.5, 2.0]", "[-1., 1.]", "[0., 0.]", "0"),
        doc=_PIECEWISE_CONSTANT.format("sign"),
    ),
    E(
        "FLOOR",
        "floor(a)",
        numpy=("floor",),
        kinks=_INTEGERS,
        example=("[-1.3, 2.7]", "[-2., 2.]", "[0., 0.]", "0"),
        doc=_PIECEWISE_CONSTANT.format("floor"),
    ),
    E(
        "CEIL",
        "ceil(a)",
        numpy=("ceil",),
        kinks=_INTEGERS,
        example=("[-1.3, 2.7]", "[-1., 3.]", "[0., 0.]", "0"),
        doc=_PIECEWISE_CONSTANT.format("ceil"),
    ),
    E(
        "RINT",
        "rint(a)",
        numpy=("rint", "round", "around"),
        kinks=(-1.5, -0.5, 0.5, 1.5),
        example=("[-1.3, 2.7]", "[-1., 3.]", "[0., 0.]", "0"),
        doc=_PIECEWISE_CONSTANT.format("rint"),
    ),
    E(
        "TRUNC",
        "trunc(a)",
        numpy=("trunc", "fix"),
        kinks=_INTEGERS,
        example=("[-1.3, 2.7]", "[-1., 2.]", "[0., 0.]", "0"),
        doc=_PIECEWISE_CONSTANT.format("trunc"),
    ),
    # ---- one operand and scalar parameters c (and c2) ----
    E(
        "LEAKY_RELU",
        "where(a > 0.0, a, a * c)",
        ("where(a > 0.0, 1.0, c)",),
        params=1,
        kinks=(0.0,),
    ),
    E("ADDS", "a + c", ("1.0",), params=1, graph="AddBackward0"),
    E("MULS", "a * c", ("c",), params=1, graph="MulBackward0"),
    E("RSUBS", "c - a", ("-1.0",), params=1, graph="RsubBackward0"),
    E(
        "RDIVS",
        "c / a",
        ("-out / a",),
        params=1,
        graph="DivBackward0",
        domain=(0.3, 2.0),
        saved=(),  # PyTorch's c / a is c * reciprocal(a): it keeps a value of its own
    ),
    E(
        "POWS",
        "a ** c",
        ("where(c == 0.0, 0.0, c * a ** (c - 1.0))",),
        params=1,
        graph="PowBackward0",
        domain=(0.3, 2.0),
    ),
    # 0 ** a: its derivative is 0 for a > 0, -inf at 0 (one-sided) and below; the masked log
    # keeps the unselected branch finite, so nested derivatives do not turn 0 * inf into nan
    E(
        "RPOWS",
        "c ** a",
        ("where(c == 0.0, where(a > 0.0, 0.0, log(c)), out * log(where(c == 0.0, 1.0, c)))",),
        params=1,
        graph="PowBackward0",
    ),
    E(
        "CLIP",
        "minimum(maximum(a, c), c2)",
        ("where((a >= c) & (a <= c2), 1.0, 0.0)",),
        params=2,
        graph="ClampBackward0",
        numpy=("clip",),
        kinks=(-0.5, 0.5),
    ),
    # ---- two operands (an operand of one value is broadcast by the kernels; any other
    # broadcast is an explicit VIEW row before the op) ----
    E("ADD", "a + b", ("1.0", "1.0"), numpy=("add", "__add__")),
    E("SUB", "a - b", ("1.0", "-1.0"), numpy=("subtract", "__sub__")),
    E("MUL", "a * b", ("b", "a"), numpy=("multiply", "__mul__")),
    E(
        "DIV",
        "a / b",
        ("1.0 / b", "-out / b"),
        numpy=("divide", "true_divide", "__truediv__"),
        saved=("a", "b"),
        domain=(0.3, 2.0),
    ),
    E(
        "POW",
        "a ** b",
        (
            # b * a ** (b - 1), 0 at b = 0 for every a (0 * inf and 0 * nan are masked in
            # the base, so the derivative in b, a ** (b - 1) = 1 / a there, survives)
            "b * where((b == 0.0) & ((a == 0.0) | (a != a)), 1.0, a) ** (b - 1.0)",
            # at a zero base: 0 for b > 0, log(0) = -inf below; the log reads a only
            # where it is taken (JAX's double where), else its derivative 1 / a = inf
            # times the zero the unselected branch gets back made the second derivatives
            # in a NaN (reverse over reverse: d2/da2 of a ** 2 at 0 was NaN, not 2)
            "where(a == 0.0, where(b > 0.0, 0.0, log(where(b > 0.0, 1.0, a))), "
            "out * log(where(a == 0.0, 1.0, a)))",
        ),
        numpy=("power", "__pow__"),
        domain=(0.3, 2.0),
    ),
    E(
        "MAXIMUM",
        "maximum(a, b)",
        (
            # "did not lose" rather than "won": at a NaN, which wins neither comparison, the
            # gradient goes to both operands, whichever order they come in (as PyTorch's)
            "where(a == b, 0.5, where(b > a, 0.0, 1.0))",
            "where(a == b, 0.5, where(a > b, 0.0, 1.0))",
        ),
        numpy=("maximum",),
        doc="Elementwise larger of x1 and x2; the gradient goes to the operand that won "
        "(half to each at a tie, all to both where one is NaN).",
        example=("[1.0, 4.0]", "[3.0, 2.0]", "[3., 4.]", "[0., 1.]", "[1., 0.]"),
    ),
    E(
        "MINIMUM",
        "minimum(a, b)",
        (
            "where(a == b, 0.5, where(b < a, 0.0, 1.0))",
            "where(a == b, 0.5, where(a < b, 0.0, 1.0))",
        ),
        numpy=("minimum",),
        doc="Elementwise smaller of x1 and x2; the gradient goes to the operand that won "
        "(half to each at a tie, all to both where one is NaN).",
        example=("[1.0, 4.0]", "[3.0, 2.0]", "[1., 2.]", "[1., 0.]", "[0., 1.]"),
    ),
    # angle of (b, a): the partials are 0 at the origin, where arctan2 jumps
    E(
        "ARCTAN2",
        "arctan2(a, b)",
        arctan2_partials("a", "b"),
        numpy=("arctan2",),
        doc="Elementwise angle of the point (x2, x1), NumPy's quadrants; the partials "
        "x2 / r**2 and -x1 / r**2 are taken as 0 at the origin, where arctan2 jumps.",
        example=(
            "[1.0, 1.0]",
            "[1.0, -1.0]",
            "[0.7854, 2.3562]",
            "[0.5000, -0.5000]",
            "[-0.5000, -0.5000]",
        ),
        methods=("atan2",),
    ),
    E(
        "HYPOT",
        "hypot(a, b)",
        # 0 at the origin, and so are the partials' derivatives there (as JAX's hypot): no
        # branch divides by zero, so nested derivatives agree with the compiled second order
        (
            "where(out == 0.0, 0.0, a) / where(out == 0.0, 1.0, out)",
            "where(out == 0.0, 0.0, b) / where(out == 0.0, 1.0, out)",
        ),
        numpy=("hypot",),
        doc="sqrt(x1**2 + x2**2) without overflow (NumPy's value); the partials x1 / hypot "
        "and x2 / hypot are 0 at the origin.",
        example=("[3.0, 5.0]", "[4.0, 12.0]", "[ 5., 13.]", "[0.6000, 0.3846]", "[0.8000, 0.9231]"),
    ),
    # NumPy's stable forms; the partials are sigmoids, exactly 1/2 at a == b
    E(
        "LOGADDEXP",
        "logaddexp(a, b)",
        logaddexp_partials("a", "b"),
        numpy=("logaddexp",),
        doc="log(exp(x1) + exp(x2)), computed stably (NumPy's value); the gradients are the "
        "softmax weights sigmoid(x1 - x2) and sigmoid(x2 - x1): exactly 1/2 each at a tie.",
        example=(
            "[0.0, 1.0]",
            "[0.0, 3.0]",
            "[0.6931, 3.1269]",
            "[0.5000, 0.1192]",
            "[0.5000, 0.8808]",
        ),
    ),
    E(
        "LOGADDEXP2",
        "logaddexp2(a, b)",
        logaddexp_partials("a", "b", LN2),
        numpy=("logaddexp2",),
        doc="log2(2**x1 + 2**x2), computed stably (NumPy's value).",
        example=(
            "[1.0, 3.0]",
            "[1.0, 2.0]",
            "[2.0000, 3.5850]",
            "[0.5000, 0.6667]",
            "[0.5000, 0.3333]",
        ),
    ),
    # out = a - q * b with q integer (floor(a / b), trunc(a / b)): d/db = -q, read back from out
    E(
        "REMAINDER",
        "remainder(a, b)",
        ("1.0", "-floor((a - out) / b + 0.5)"),
        numpy=("remainder", "mod", "__mod__"),
        domain=(0.3, 2.0),
        doc="NumPy's (and Python's) ``x1 % x2``: the sign of the divisor. d/dx1 = 1 and "
        "d/dx2 = -floor(x1 / x2) (piecewise; at the jumps, the side NumPy's value is on).",
        example=("[5.0, -5.0]", "[3.0, 3.0]", "[2., 1.]", "[1., 1.]", "[-1.,  2.]"),
    ),
    E(
        "FMOD",
        "fmod(a, b)",
        ("1.0", "-floor((a - out) / b + 0.5)"),
        numpy=("fmod",),
        saved=("a", "b"),
        domain=(0.3, 2.0),
        doc="C's fmod: the sign of the dividend. d/dx1 = 1, d/dx2 = -trunc(x1 / x2).",
        example=("[5.0, -5.0]", "[3.0, 3.0]", "[ 2., -2.]", "[1., 1.]", "[-1.,  1.]"),
    ),
    # ---- special functions (SciPy's values and conventions; see specfuncs.py) ----
    E(
        "GAMMA",
        "gamma(a)",
        domain=(0.3, 3.0),
        example=("[0.5, 3.0]", "[1.7725, 2.0000]", "[-3.4802, 1.8456]", "gamma(x) digamma(x)"),
    ),
    E(
        "GAMMALN",
        "gammaln(a)",
        domain=(0.3, 3.0),
        example=("[0.5, 3.0]", "[0.5724, 0.6931]", "[-1.9635, 0.9228]", "digamma(x)"),
        methods=("lgamma",),
    ),
    E(
        "DIGAMMA",
        "digamma(a)",
        domain=(0.3, 3.0),
        example=("[0.5, 3.0]", "[-1.9635, 0.9228]", "[4.9348, 0.3949]", "polygamma(1, x)"),
    ),
    E("POLYGAMMA", "polygamma(c, a)", ("polygamma(c + 1.0, a)",), params=1, domain=(0.3, 3.0)),
    E(
        "ERF",
        "erf(a)",
        example=("[0.5, 2.0]", "[0.5205, 0.9953]", "[0.8788, 0.0207]", "2 exp(-x**2) / sqrt(pi)"),
    ),
    E(
        "ERFC",
        "erfc(a)",
        example=(
            "[0.5, 2.0]",
            "[0.4795, 0.0047]",
            "[-0.8788, -0.0207]",
            "-2 exp(-x**2) / sqrt(pi)",
        ),
    ),
    E(
        "ERFINV",
        "erfinv(a)",
        domain=(-0.8, 0.8),
        example=(
            "[-0.5, 0.25]",
            "[-0.4769, 0.2253]",
            "[1.1126, 0.9324]",
            "sqrt(pi) exp(erfinv(x)**2) / 2",
        ),
    ),
    E(
        "ERFCINV",
        "erfcinv(a)",
        domain=(0.2, 1.8),
        example=(
            "[0.5, 1.25]",
            "[0.4769, -0.2253]",
            "[-1.1126, -0.9324]",
            "-sqrt(pi) exp(erfcinv(x)**2) / 2",
        ),
    ),
)
