"""Elementwise ops: one line of formulas each (see ``formula.py`` for the language).

``fwd`` is the value, ``d`` the partial derivative of ``out`` with respect to each operand.
Kinks pick one side (``relu'(0) = 0``, ``abs'(0) = 0``); ties of maximum / minimum split the
gradient evenly, at every order, because every order evaluates these same formulas.
"""

from . import formula as F
from .decl import Elementwise as E
from .formula import LN2, LN10, arctan2_partials, logaddexp_partials, sinc_derivative

_INTEGERS = (-2.0, -1.0, 0.0, 1.0, 2.0)

OPS = (
    # ---- one operand ----
    E("NEG", "-a", ("-1.0",), numpy=("negative", "__neg__")),
    E("EXP", "exp(a)", ("out",), numpy=("exp",)),
    E("LOG", "log(a)", ("1.0 / a",), numpy=("log",), domain=(0.2, 3.0)),
    E(
        "LOG1P",
        "log1p(a)",
        ("1.0 / (1.0 + a)",),
        graph="Log1pBackward0",
        numpy=("log1p",),
        domain=(-0.7, 2.0),
    ),
    E("EXPM1", "expm1(a)", ("exp(a)",), numpy=("expm1",)),  # out + 1 cancels for a << 0
    E("SQRT", "sqrt(a)", ("0.5 / out",), numpy=("sqrt",), domain=(0.2, 3.0)),
    E("SIN", "sin(a)", ("cos(a)",), numpy=("sin",)),
    E("COS", "cos(a)", ("-sin(a)",), numpy=("cos",)),
    E("TAN", "tan(a)", ("1.0 + out * out",), numpy=("tan",), domain=(-1.2, 1.2)),
    # sech^2 from exponentials: 1 - out * out is 0 once tanh rounds to +-1 (from |a| = 19)
    E("TANH", "tanh(a)", ("(2.0 / (exp(a) + exp(-a))) ** 2.0",), numpy=("tanh",)),
    # 1 / (1 + exp(-a)) with both tails kept: 1 - out and 0.5 * (tanh(a / 2) + 1) round to
    # 0 or 1 long before sigmoid does (expit(-50) is 1.9e-22, not 0)
    E(
        "SIGMOID",
        "exp(-logaddexp(0.0, -a))",
        ("out * exp(-logaddexp(0.0, a))",),
        numpy=("scipy.special.expit",),
    ),
    E("RELU", "maximum(a, 0.0)", ("where(a > 0.0, 1.0, 0.0)",), kinks=(0.0,)),
    E("ABS", "abs(a)", ("sign(a)",), numpy=("absolute", "abs", "__abs__"), kinks=(0.0,)),
    E("ARCSIN", "arcsin(a)", ("1.0 / sqrt(1.0 - a * a)",), numpy=("arcsin",), domain=(-0.8, 0.8)),
    E("ARCCOS", "arccos(a)", ("-1.0 / sqrt(1.0 - a * a)",), numpy=("arccos",), domain=(-0.8, 0.8)),
    E("ARCTAN", "arctan(a)", ("1.0 / (1.0 + a * a)",), numpy=("arctan",)),
    E("ARCSINH", "arcsinh(a)", ("1.0 / sqrt(a * a + 1.0)",), numpy=("arcsinh",)),
    E(
        "ARCCOSH",
        "arccosh(a)",
        ("(a - 1.0) ** -0.5 * (a + 1.0) ** -0.5",),
        numpy=("arccosh",),
        domain=(1.2, 3.0),
    ),
    E("ARCTANH", "arctanh(a)", ("1.0 / (1.0 - a * a)",), numpy=("arctanh",), domain=(-0.8, 0.8)),
    E("SINH", "sinh(a)", ("cosh(a)",), numpy=("sinh",)),
    E("COSH", "cosh(a)", ("sinh(a)",), numpy=("cosh",)),
    E("LOG2", "log2(a)", (f"1.0 / (a * {LN2!r})",), numpy=("log2",), domain=(0.2, 3.0)),
    E("LOG10", "log10(a)", (f"1.0 / (a * {LN10!r})",), numpy=("log10",), domain=(0.2, 3.0)),
    E("EXP2", "exp2(a)", (f"out * {LN2!r}",), numpy=("exp2",)),
    # (powers, not quotients: the derivatives of every order tend to 0 at +-inf, not inf/inf)
    E("CBRT", "cbrt(a)", ("out ** -2.0 / 3.0",), numpy=("cbrt",), kinks=(0.0,)),
    # NumPy's normalized sinc; the derivative switches to a series near 0 (exact there)
    E("SINC", "sinc(a)", (sinc_derivative("a", "out"),), numpy=("sinc",)),
    # piecewise constant: NumPy's value, derivative 0 at every order (as JAX and PyTorch)
    E("SIGN", "sign(a)", ("0.0",), numpy=("sign",), kinks=(0.0,)),
    E("FLOOR", "floor(a)", ("0.0",), numpy=("floor",), kinks=_INTEGERS),
    E("CEIL", "ceil(a)", ("0.0",), numpy=("ceil",), kinks=_INTEGERS),
    E("RINT", "rint(a)", ("0.0",), numpy=("rint", "round", "around"), kinks=(-1.5, -0.5, 0.5, 1.5)),
    E("TRUNC", "trunc(a)", ("0.0",), numpy=("trunc", "fix"), kinks=_INTEGERS),
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
    E("GAMMA", "gamma(a)", ("out * digamma(a)",), domain=(0.3, 3.0)),
    E("GAMMALN", "gammaln(a)", ("digamma(a)",), domain=(0.3, 3.0)),
    E("DIGAMMA", "digamma(a)", ("polygamma(1.0, a)",), domain=(0.3, 3.0)),
    E("POLYGAMMA", "polygamma(c, a)", ("polygamma(c + 1.0, a)",), params=1, domain=(0.3, 3.0)),
    E("ERF", "erf(a)", (f"{F.TWO_OVER_SQRT_PI!r} * exp(-(a * a))",)),
    E("ERFC", "erfc(a)", (f"{-F.TWO_OVER_SQRT_PI!r} * exp(-(a * a))",)),
    E("ERFINV", "erfinv(a)", (f"{F.SQRT_PI_OVER_2!r} * exp(out * out)",), domain=(-0.8, 0.8)),
    E("ERFCINV", "erfcinv(a)", (f"{-F.SQRT_PI_OVER_2!r} * exp(out * out)",), domain=(0.2, 1.8)),
)
