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

OPS = (
    # ---- one operand ----
    E("NEG", "-a", numpy=("negative", "__neg__")),
    E("EXP", "exp(a)", numpy=("exp",)),
    E("LOG", "log(a)", numpy=("log",), domain=(0.2, 3.0)),
    E(
        "LOG1P",
        "log1p(a)",
        graph="Log1pBackward0",
        numpy=("log1p",),
        domain=(-0.7, 2.0),
    ),
    E("EXPM1", "expm1(a)", numpy=("expm1",)),  # out + 1 cancels for a << 0
    E("SQRT", "sqrt(a)", numpy=("sqrt",), domain=(0.2, 3.0)),
    E("SIN", "sin(a)", numpy=("sin",)),
    E("COS", "cos(a)", numpy=("cos",)),
    E("TAN", "tan(a)", numpy=("tan",), domain=(-1.2, 1.2)),
    E("TANH", "tanh(a)", numpy=("tanh",)),
    # 1 / (1 + exp(-a)) with both tails kept: 1 - out and 0.5 * (tanh(a / 2) + 1) round to
    # 0 or 1 long before sigmoid does (expit(-50) is 1.9e-22, not 0)
    E(
        "SIGMOID",
        "exp(-logaddexp(0.0, -a))",
        ("out * exp(-logaddexp(0.0, a))",),
        numpy=("scipy.special.expit",),
    ),
    E("RELU", "maximum(a, 0.0)", ("where(a > 0.0, 1.0, 0.0)",), kinks=(0.0,)),
    E("ABS", "abs(a)", numpy=("absolute", "abs", "__abs__"), kinks=(0.0,)),
    E("ARCSIN", "arcsin(a)", numpy=("arcsin",), domain=(-0.8, 0.8)),
    E("ARCCOS", "arccos(a)", numpy=("arccos",), domain=(-0.8, 0.8)),
    E("ARCTAN", "arctan(a)", numpy=("arctan",)),
    E("ARCSINH", "arcsinh(a)", numpy=("arcsinh",)),
    E(
        "ARCCOSH",
        "arccosh(a)",
        numpy=("arccosh",),
        domain=(1.2, 3.0),
    ),
    E("ARCTANH", "arctanh(a)", numpy=("arctanh",), domain=(-0.8, 0.8)),
    E("SINH", "sinh(a)", numpy=("sinh",)),
    E("COSH", "cosh(a)", numpy=("cosh",)),
    E("LOG2", "log2(a)", numpy=("log2",), domain=(0.2, 3.0)),
    E("LOG10", "log10(a)", numpy=("log10",), domain=(0.2, 3.0)),
    E("EXP2", "exp2(a)", numpy=("exp2",)),
    E("CBRT", "cbrt(a)", numpy=("cbrt",), kinks=(0.0,)),
    # NumPy's normalized sinc; the derivative switches to a series near 0 (exact there)
    E("SINC", "sinc(a)", numpy=("sinc",)),
    # piecewise constant: NumPy's value, derivative 0 at every order (as JAX and PyTorch)
    E("SIGN", "sign(a)", numpy=("sign",), kinks=(0.0,)),
    E("FLOOR", "floor(a)", numpy=("floor",), kinks=_INTEGERS),
    E("CEIL", "ceil(a)", numpy=("ceil",), kinks=_INTEGERS),
    E("RINT", "rint(a)", numpy=("rint", "round", "around"), kinks=(-1.5, -0.5, 0.5, 1.5)),
    E("TRUNC", "trunc(a)", numpy=("trunc", "fix"), kinks=_INTEGERS),
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
    E("RDIVS", "c / a", ("-out / a",), params=1, graph="DivBackward0", domain=(0.3, 2.0)),
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
    # ---- two operands (broadcasting is an explicit VIEW row before them) ----
    E("ADD", "a + b", ("1.0", "1.0"), numpy=("add", "__add__")),
    E("SUB", "a - b", ("1.0", "-1.0"), numpy=("subtract", "__sub__")),
    E("MUL", "a * b", ("b", "a"), numpy=("multiply", "__mul__")),
    E(
        "DIV",
        "a / b",
        ("1.0 / b", "-out / b"),
        numpy=("divide", "true_divide", "__truediv__"),
        domain=(0.3, 2.0),
    ),
    E(
        "POW",
        "a ** b",
        (
            # b * a ** (b - 1), 0 at b = 0 for every a (0 * inf and 0 * nan are masked in
            # the base, so the derivative in b, a ** (b - 1) = 1 / a there, survives)
            "b * where((b == 0.0) & ((a == 0.0) | (a != a)), 1.0, a) ** (b - 1.0)",
            "where(a == 0.0, where(b > 0.0, 0.0, log(a)), out * log(where(a == 0.0, 1.0, a)))",
        ),
        numpy=("power", "__pow__"),
        domain=(0.3, 2.0),
    ),
    E(
        "MAXIMUM",
        "maximum(a, b)",
        (
            "where(a == b, 0.5, where(a > b, 1.0, 0.0))",
            "where(a == b, 0.5, where(a > b, 0.0, 1.0))",
        ),
        numpy=("maximum",),
    ),
    E(
        "MINIMUM",
        "minimum(a, b)",
        (
            "where(a == b, 0.5, where(a < b, 1.0, 0.0))",
            "where(a == b, 0.5, where(a < b, 0.0, 1.0))",
        ),
        numpy=("minimum",),
    ),
    # angle of (b, a): the partials are 0 at the origin, where arctan2 jumps
    E("ARCTAN2", "arctan2(a, b)", arctan2_partials("a", "b"), numpy=("arctan2",)),
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
    ),
    # NumPy's stable forms; the partials are sigmoids, exactly 1/2 at a == b
    E("LOGADDEXP", "logaddexp(a, b)", logaddexp_partials("a", "b"), numpy=("logaddexp",)),
    E("LOGADDEXP2", "logaddexp2(a, b)", logaddexp_partials("a", "b", LN2), numpy=("logaddexp2",)),
    # out = a - q * b with q integer (floor(a / b), trunc(a / b)): d/db = -q, read back from out
    E(
        "REMAINDER",
        "remainder(a, b)",
        ("1.0", "-floor((a - out) / b + 0.5)"),
        numpy=("remainder", "mod", "__mod__"),
        domain=(0.3, 2.0),
    ),
    E(
        "FMOD",
        "fmod(a, b)",
        ("1.0", "-floor((a - out) / b + 0.5)"),
        numpy=("fmod",),
        domain=(0.3, 2.0),
    ),
    # ---- special functions (SciPy's values and conventions; see specfuncs.py) ----
    E("GAMMA", "gamma(a)", domain=(0.3, 3.0)),
    E("GAMMALN", "gammaln(a)", domain=(0.3, 3.0)),
    E("DIGAMMA", "digamma(a)", domain=(0.3, 3.0)),
    E("POLYGAMMA", "polygamma(c, a)", ("polygamma(c + 1.0, a)",), params=1, domain=(0.3, 3.0)),
    E("ERF", "erf(a)"),
    E("ERFC", "erfc(a)"),
    E("ERFINV", "erfinv(a)", domain=(-0.8, 0.8)),
    E("ERFCINV", "erfcinv(a)", domain=(0.2, 1.8)),
)
