"""The small formula language elementwise ops are declared in, and what is made from it.

A formula is a Python expression over the symbols ``a``, ``b`` (the operands), ``out`` (the
op's own value), ``c``, ``c2`` (the op's scalar parameters), ``s`` (a scan's running value)
and the functions in ``FUNCS``.
From one formula this module makes:

- ``numba_code``: a scalar expression for the generated kernels (``exp`` -> ``np.exp``,
  ``where(k, x, y)`` -> ``(x if k else y)``);
- ``python_function``: a callable on floats (``math``) or arrays (``numpy``);
- ``tensor_function``: a callable on Tensors built from tapegrad's differentiable ops, so a
  derivative formula evaluated this way can itself be differentiated (every order);
- ``derivative``: the symbolic partial derivative with respect to one symbol, used by the
  generator for the compiled second-order sweep.

Conditions (the first argument of ``where``, comparisons, ``&``, ``|``) are never
differentiated: they select between branches, as the kinks of relu or abs do.
"""

from __future__ import annotations

import ast
import copy
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Union

import numpy as np

from . import specfuncs

SYMBOLS = ("a", "b", "out", "c", "c2", "s")
# the factor a partial derivative multiplies (an adjoint or a tangent), in ``scaled`` forms
SCALE = "g"
TWO_OVER_SQRT_PI, SQRT_PI_OVER_2 = 2.0 / math.sqrt(math.pi), math.sqrt(math.pi) / 2.0
LN2, LN10, PI = math.log(2.0), math.log(10.0), math.pi


def _sinc_series():
    """sinc'(x) = sum_k (-1)^k pi^2k 2k x^(2k-1) / (2k+1)! for k = 1..7, in Horner form in x*x:
    within an ulp or two of the closed form for |x| < 0.1, and exact at 0 at every order."""
    coefs = [(-1) ** k * PI ** (2 * k) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 8)]
    text = repr(coefs[-1])
    for c in reversed(coefs[:-1]):
        text = f"{c!r} + x * x * ({text})"
    return f"x * ({text})"


def arctan2_partials(x: str = "a", y: str = "b") -> tuple:
    """The partials of arctan2(x, y): y / r^2 and -x / r^2, divided twice by r = hypot(x, y)
    (x*x + y*y would underflow for tiny operands); 0 at the origin, where arctan2 jumps, and
    so are their derivatives there (the numerators are masked too, as hypot's: with r alone
    replaced by 1 the partials were y and -x near the origin, whose derivatives gave the
    Hessian [[0, 1], [-1, 0]] there, not even symmetric)."""
    zero = f"hypot({x}, {y}) == 0.0"
    r = f"where({zero}, 1.0, hypot({x}, {y}))"
    return f"where({zero}, 0.0, {y}) / {r} / {r}", f"-where({zero}, 0.0, {x}) / {r} / {r}"


def logaddexp_partials(x: str = "a", y: str = "b", scale: float = 1.0) -> tuple:
    """The partials of logaddexp (scale 1) and logaddexp2 (scale ln 2): the softmax weights
    sigmoid(+-scale (x - y)), each written as exp(-logaddexp(0, -z)) (SIGMOID's form): 1/2 at a
    tie, 1 far above, and far below the small weight itself to full precision (0.5 - 0.5 tanh
    cancels: it gave 0 for exp(-40)); finite at every order, as their derivatives are the
    same form again."""
    z = f"({x}) - ({y})" if scale == 1.0 else f"{scale!r} * (({x}) - ({y}))"
    return f"exp(-logaddexp(0.0, -({z})))", f"exp(-logaddexp(0.0, {z}))"


def sinc_derivative(x: str = "a", out: str = "out") -> str:
    """d sinc(x)/dx as a formula, given the texts of x and of sinc(x): a series near 0 (the
    closed form (cos(pi x) - sinc(x)) / x cancels there), with a safe denominator so neither
    branch is NaN (a NaN in the branch not taken would still poison higher derivatives)."""
    near = f"abs({x}) < 0.1"
    # the series at a masked point: x ** 15 overflows for huge x, and an inf in the branch
    # not taken still poisons nested derivatives through it
    series = _sinc_series().replace("x", f"where({near}, {x}, 0.0)")
    return f"where({near}, {series}, (cos({PI!r} * ({x})) - ({out})) / where({near}, 1.0, {x}))"


def _fmin(x, y):
    return x if x != x else (y if y < x or y != y else x)


def _fmax(x, y):
    return x if x != x else (y if y > x or y != y else x)


def _fsign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x * 0.0)


def _fwhere(k, x, y):
    return x if k else y


def _fsinc(x):
    if x == 0.0:
        return 1.0
    y = math.pi * x
    return math.sin(y) / y


def _via_numpy(fn):
    """A NumPy ufunc on Python floats (where ``math`` has no equal, or differs in corner cases
    such as the sign of a zero)."""
    return lambda *xs: float(fn(*xs))


@dataclass(frozen=True)
class Fn:
    """A function of the formula language, declared once: its derivative rule, and what it
    is on floats, on arrays and in the kernels.

    ``d`` (one argument) is a formula in ``x`` (the argument) and ``f`` (the function's value),
    or a callable building that formula from their texts; a function of two arguments, or one
    with a rule of its own (``where``), has ``d=None`` and is differentiated in ``_d``."""

    d: Union[str, Callable, None]
    math: Callable
    numpy: Callable
    kernel: str  # what the generated kernels call: an np.* function, or a specfuncs helper


def _fn(name, d, on_floats=None, kernel=""):
    ufunc = getattr(np, name, None)
    if on_floats is None:
        on_floats = getattr(math, name, None) or _via_numpy(ufunc)
    if kernel.startswith("sf_"):
        on_arrays = np.vectorize(getattr(specfuncs, kernel), otypes=[np.float64])
        on_floats = getattr(specfuncs, kernel)
    elif kernel.startswith("math."):
        on_arrays = np.vectorize(on_floats, otypes=[np.float64])
    else:
        on_arrays = ufunc
    return name, Fn(d, on_floats, on_arrays, kernel or f"np.{name}")


FUNCTIONS = dict(
    [
        _fn("exp", "f"),
        _fn("log", "1.0 / x"),
        _fn("log1p", "1.0 / (1.0 + x)"),
        _fn("expm1", "exp(x)"),  # not f + 1, which cancels for x << 0
        _fn("sqrt", "0.5 / f"),
        _fn("sin", "cos(x)"),
        _fn("cos", "-sin(x)"),
        _fn("tan", "1.0 + f * f"),
        # sech^2: 1 - tanh^2 near 0 (every order accurate there), from exp(-2|x|) beyond
        # |x| = 1, which keeps the tail (1 - tanh^2 is exactly 0 once tanh rounds to +-1)
        # and never overflows, so no order is inf / inf at |x| > 709.78
        _fn(
            "tanh",
            "where(x * x < 1.0, 1.0 - f * f, 4.0 * exp(-2.0 * where(x > 0.0, x, -x)) "
            "/ (1.0 + exp(-2.0 * where(x > 0.0, x, -x))) ** 2.0)",
        ),
        _fn("abs", "sign(x)", abs),
        _fn("sign", "0.0", _fsign),
        _fn("where", None, _fwhere),
        _fn("minimum", None, _fmin),
        _fn("maximum", None, _fmax),
        _fn("arcsin", "1.0 / sqrt(1.0 - x * x)", math.asin),
        _fn("arccos", "-1.0 / sqrt(1.0 - x * x)", math.acos),
        _fn("arctan", "1.0 / (1.0 + x * x)", math.atan),
        _fn("arcsinh", "1.0 / sqrt(x * x + 1.0)", math.asinh),
        # powers, not a quotient of roots: every order tends to 0 at +inf, not inf / inf
        _fn("arccosh", "(x - 1.0) ** -0.5 * (x + 1.0) ** -0.5", math.acosh),
        _fn("arctanh", "1.0 / (1.0 - x * x)", math.atanh),
        _fn("sinh", "cosh(x)"),
        _fn("cosh", "sinh(x)"),
        # a constant over x, not 1 / (x ln 2): applied as g / x * c, exact at denormal x
        _fn("log2", f"{1.0 / LN2!r} / x"),
        _fn("log10", f"{1.0 / LN10!r} / x"),
        _fn("exp2", f"f * {LN2!r}"),
        # a power, not 1 / (3 f f): every order tends to 0 at +-inf, not inf / inf
        _fn("cbrt", "f ** -2.0 / 3.0"),
        _fn("sinc", lambda x, f: sinc_derivative(x, f), _fsinc),
        # piecewise constant: derivative zero (almost everywhere), never differentiated
        _fn("floor", "0.0", _via_numpy(np.floor)),
        _fn("ceil", "0.0", _via_numpy(np.ceil)),
        _fn("rint", "0.0", _via_numpy(np.rint)),
        _fn("trunc", "0.0", _via_numpy(np.trunc)),
        _fn("arctan2", None, math.atan2),
        _fn("hypot", None, math.hypot),
        _fn("logaddexp", None),
        _fn("logaddexp2", None),
        _fn("remainder", None, _via_numpy(np.remainder)),  # not math.remainder (IEEE)
        _fn("fmod", None, _via_numpy(np.fmod)),
        # special functions: the kernels call math.* or a helper of specfuncs (copied into
        # them); polygamma(n, x) takes its order n from a scalar parameter
        _fn("gamma", "f * digamma(x)", kernel="sf_gamma"),
        _fn("gammaln", "digamma(x)", kernel="sf_gammaln"),
        _fn("digamma", "polygamma(1.0, x)", kernel="sf_digamma"),
        _fn("polygamma", None, kernel="sf_polygamma"),
        _fn("erf", f"{TWO_OVER_SQRT_PI!r} * exp(-(x * x))", math.erf, "math.erf"),
        _fn("erfc", f"{-TWO_OVER_SQRT_PI!r} * exp(-(x * x))", math.erfc, "math.erfc"),
        _fn("erfinv", f"{SQRT_PI_OVER_2!r} * exp(f * f)", kernel="sf_erfinv"),
        _fn("erfcinv", f"{-SQRT_PI_OVER_2!r} * exp(f * f)", kernel="sf_erfcinv"),
    ]
)
FUNCS = tuple(FUNCTIONS)
# piecewise-constant functions: derivative zero (almost everywhere), never differentiated
ZERO_DERIVATIVE = tuple(name for name, fn in FUNCTIONS.items() if fn.d == "0.0")
SPECIAL = {name: fn.kernel for name, fn in FUNCTIONS.items() if not fn.kernel.startswith("np.")}


@lru_cache(maxsize=None)
def parse(text: str) -> ast.expr:
    """The checked syntax tree of a formula."""
    node = ast.parse(text, mode="eval").body
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id not in SYMBOLS + (SCALE,) + FUNCS:
            raise ValueError(
                f"formula {text!r}: unknown name {sub.id!r}; symbols are "
                f"{SYMBOLS}, functions {FUNCS}"
            )
        if isinstance(sub, ast.Call) and not (
            isinstance(sub.func, ast.Name) and sub.func.id in FUNCS
        ):
            raise ValueError(f"formula {text!r}: only calls of {FUNCS} are allowed")
    return node


@lru_cache(maxsize=None)
def symbols(text: str) -> frozenset[str]:
    """The symbols a formula reads (what the backward must keep, for example)."""
    return frozenset(
        n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name) and n.id in SYMBOLS
    )


# ---- symbolic differentiation ------------------------------------------------------------------


def _num(v: float) -> ast.expr:
    return ast.Constant(float(v))


def _is(node: ast.expr, v: float) -> bool:
    return isinstance(node, ast.Constant) and node.value == v


def _call(name: str, *args: ast.expr) -> ast.expr:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _add(x, y):
    if _is(x, 0.0):
        return y
    if _is(y, 0.0):
        return x
    return ast.BinOp(x, ast.Add(), y)


def _sub(x, y):
    if _is(y, 0.0):
        return x
    if _is(x, 0.0):
        return _neg(y)
    return ast.BinOp(x, ast.Sub(), y)


def _mul(x, y):
    if _is(x, 0.0) or _is(y, 0.0):
        return _num(0.0)
    if _is(x, 1.0):
        return y
    if _is(y, 1.0):
        return x
    return ast.BinOp(x, ast.Mult(), y)


def _div(x, y):
    if _is(x, 0.0):
        return _num(0.0)
    if _is(y, 1.0):
        return x
    return ast.BinOp(x, ast.Div(), y)


def _neg(x):
    if isinstance(x, ast.Constant):
        return _num(-x.value)
    return ast.UnaryOp(ast.USub(), x)


def _depends(node: ast.expr, sym: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == sym for n in ast.walk(node))


def _d(node: ast.expr, sym: str) -> ast.expr:
    if not _depends(node, sym):
        return _num(0.0)
    if isinstance(node, ast.Name):
        return _num(1.0)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _neg(_d(node.operand, sym))
    if isinstance(node, ast.BinOp):
        x, y = node.left, node.right
        dx, dy = _d(x, sym), _d(y, sym)
        if isinstance(node.op, ast.Add):
            return _add(dx, dy)
        if isinstance(node.op, ast.Sub):
            return _sub(dx, dy)
        if isinstance(node.op, ast.Mult):
            return _add(_mul(dx, y), _mul(x, dy))
        if isinstance(node.op, ast.Div):  # (dx - (x / y) dy) / y: no y * y to under/overflow
            return _div(_sub(dx, _mul(node, dy)), y)
        if isinstance(node.op, ast.Pow):
            if not _depends(y, sym):  # x ** n: n * x ** (n - 1) * dx
                if _is(y, 0.0):
                    return _num(0.0)
                d = _mul(y, ast.BinOp(x, ast.Pow(), _sub(y, _num(1.0))))
                if not isinstance(y, ast.Constant):  # a parameter: x ** 0 is 1 also at x = 0,
                    # so its derivative is exactly 0 there, not 0 * 0 ** -1 (nan)
                    d = _call("where", ast.Compare(y, [ast.Eq()], [_num(0.0)]), _num(0.0), d)
                return _mul(d, dx)
            if not _depends(x, sym):  # k ** y: k ** y * log(k) * dy
                return _mul(_mul(node, _log_base(x, y)), dy)
            return _mul(node, _add(_mul(dy, _log_base(x, y)), _div(_mul(y, dx), x)))
    if isinstance(node, ast.Call):
        name = node.func.id
        args = node.args
        if name == "where":  # piecewise constant branches: a symbolic zero, not where(k, 0, 0)
            d1, d2 = _d(args[1], sym), _d(args[2], sym)
            if _is(d1, 0.0) and _is(d2, 0.0):
                return _num(0.0)
            return _call("where", args[0], d1, d2)
        if name in ZERO_DERIVATIVE:
            return _num(0.0)
        if len(args) == 2:
            return _d_binary(node, name, args[0], args[1], sym)
        x = args[0]
        return _mul(_d(x, sym), _rule(name, x, node))
    raise ValueError(f"cannot differentiate {ast.unparse(node)!r}")


class _Put(ast.NodeTransformer):
    """Puts the argument (``x``) and the call (``f``) into a derivative rule."""

    def __init__(self, x, f):
        self.put = {"x": x, "f": f}

    def visit_Name(self, node):
        sub = self.put.get(node.id)
        return copy.deepcopy(sub) if sub is not None else node


def _log_base(x: ast.expr, y: ast.expr) -> ast.expr:
    """log(x) as the factor of x ** y in a derivative in y: x ** y * log(x) tends to 0 as x
    does for y > 0, so there the log reads 1 (not 0 * -inf = nan at x = 0, e.g. in the mixed
    second derivative of a ** b at a = 0)."""
    if isinstance(x, ast.Constant) and x.value > 0:
        return _call("log", x)
    xs, ys = ast.unparse(x), ast.unparse(y)
    return parse(f"log(where(({xs} == 0.0) & ({ys} > 0.0), 1.0, {xs}))")


def _rule(name: str, x: ast.expr, call: ast.expr) -> ast.expr:
    """d name(x) / dx at the call ``call`` = ``name(x)``, from the function's declared rule."""
    rule = FUNCTIONS[name].d
    if rule is None:
        raise ValueError(f"no derivative rule for {name}() in a derivative formula")
    if callable(rule):
        rule = rule(ast.unparse(x), ast.unparse(call))
        return parse(rule)
    return _Put(x, call).visit(ast.parse(rule, mode="eval").body)


def _d_binary(node, name, x, y, sym):
    """Rules for the two-argument functions: dx * d/dx f + dy * d/dy f."""
    dx, dy = _d(x, sym), _d(y, sym)
    if name == "polygamma":  # d/dx psi^(n)(x) = psi^(n+1)(x); n is an order
        if not _is(dx, 0.0):
            raise ValueError("polygamma(n, x): the order n is not differentiable")
        return _mul(dy, _call("polygamma", _add(x, _num(1.0)), y))
    if name in ("remainder", "fmod"):  # f = x - q y with q integer: df = dx - q dy
        q = _call("floor", _add(_div(_sub(x, node), y), _num(0.5)))
        return _sub(dx, _mul(dy, q))
    if name in ("minimum", "maximum"):
        raise ValueError(f"{name}() in a derivative formula: write it with where()")
    if name == "hypot":  # x / f, y / f (0 at the origin, like abs'(0))
        safe = _call("where", ast.Compare(node, [ast.Eq()], [_num(0.0)]), _num(1.0), node)
        return _div(_add(_mul(dx, x), _mul(dy, y)), safe)
    if name == "arctan2":
        px, py = arctan2_partials(f"({ast.unparse(x)})", f"({ast.unparse(y)})")
        return _add(_mul(dx, parse(px)), _mul(dy, parse(py)))
    if name in ("logaddexp", "logaddexp2"):
        px, py = logaddexp_partials(
            ast.unparse(x), ast.unparse(y), 1.0 if name == "logaddexp" else LN2
        )
        return _add(_mul(dx, parse(px)), _mul(dy, parse(py)))
    raise ValueError(f"no derivative rule for {name}() in a derivative formula")


def _scaled(node: ast.expr) -> ast.expr:
    g = ast.Name(SCALE, ast.Load())
    if _is(node, 0.0):
        return _num(0.0)
    if _is(node, 1.0):
        return g
    if _is(node, -1.0):
        return ast.UnaryOp(ast.USub(), g)
    if isinstance(node, ast.Call) and node.func.id == "where":
        return _call("where", node.args[0], _scaled(node.args[1]), _scaled(node.args[2]))
    q = _scaled_quotient(node, g)
    if q is not None:
        return q
    return ast.BinOp(g, ast.Mult(), node)


def _scaled_quotient(node: ast.expr, g: ast.expr) -> ast.expr | None:
    """``g * node`` as quotients when the node is a constant divided by one expression or
    more (``1.0 / a``, ``-1.0 / x``, ``-(1.0 / a) / a``): ``g / x * c / y``, else None.  The
    constant multiplies the quotient, not g, which may be denormal (c * g loses its bits)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _scaled_quotient(node.operand, g)
        return None if inner is None else ast.UnaryOp(ast.USub(), inner)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return None
    top, sign = node.left, 1.0
    if isinstance(top, ast.UnaryOp) and isinstance(top.op, ast.USub):
        top, sign = top.operand, -1.0
    if isinstance(top, ast.Constant) and float(top.value) != 0.0:
        q = _mul(ast.BinOp(g, ast.Div(), node.right), _num(float(top.value)))
        return ast.UnaryOp(ast.USub(), q) if sign < 0.0 else q
    inner = _scaled_quotient(node.left, g)
    return None if inner is None else ast.BinOp(inner, ast.Div(), node.right)


def is_quotient(text: str) -> bool:
    """Is the formula a constant divided by expressions (``scaled`` then applies a factor
    as ``g / x * c``)?"""
    return _scaled_quotient(parse(text), ast.Name(SCALE, ast.Load())) is not None


@lru_cache(maxsize=None)
def scaled(text: str) -> str:
    """``g * (text)`` with the factor taken into the branches of a ``where``: a branch that
    is 0 gives a symbolic zero, not ``g * 0`` (NaN for an infinite or NaN ``g``), so a
    piecewise partial selects as JAX's ``select`` and PyTorch's masks do (clip, relu at an
    infinite adjoint).  A partial ``c / x`` (log's ``1.0 / a``) gives the quotient
    ``g / x * c``: ``g * (1 / x)`` overflows at tiny x where the quotient is finite (the
    derivative of x log x at 1e-320 is log(x) + 1, not inf).  The factor is the name
    ``SCALE``; a literal 0 gives ``0.0``."""
    return ast.unparse(ast.fix_missing_locations(_scaled(parse(text))))


class _OutFor(ast.NodeTransformer):
    """Replaces each copy of the op's value expression by the symbol ``out``."""

    def __init__(self, value):
        self.key = ast.dump(value)

    def visit(self, node):
        if isinstance(node, ast.expr) and ast.dump(node) == self.key:
            return ast.Name("out", ast.Load())
        return self.generic_visit(node)


@lru_cache(maxsize=None)
def partial(fwd: str) -> str:
    """The partial derivative of a one-operand op ``fwd`` (in ``a``) by the language's rules,
    reading the op's own value as ``out`` (``exp(a)`` gives ``out``): the one place a
    function's derivative is written, for the op of that function and for every formula
    that calls it."""
    value = parse(fwd)
    d = _OutFor(value).visit(_d(copy.deepcopy(value), "a"))
    return ast.unparse(ast.fix_missing_locations(d))


@lru_cache(maxsize=None)
def derivative(text: str, sym: str) -> str:
    """d(formula)/d(sym), treating the other symbols as independent (``out`` included)."""
    return ast.unparse(_d(parse(text), sym))


# ---- code for the kernels -----------------------------------------------------------------------


class _ToNumba(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_BinOp(self, node):
        """A power with an exponent known only at run time (POWS's ``a ** c``, its derivative
        ``a ** (c - 1.0)``) calls ``sf_pow``: a constant exponent is folded by LLVM, a
        runtime one is a libm call (~20 ns an element) that sf_pow skips for 2, 1 and 0.5."""
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow) and _depends_on_symbols(node.right):
            return ast.Call(ast.Name("sf_pow", ast.Load()), [node.left, node.right], [])
        return node

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], ast.Load()), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.id
        if name == "where":
            return ast.IfExp(node.args[0], node.args[1], node.args[2])
        if name == "sign":  # NaN stays NaN (x * 0.0), like np.sign
            x = node.args[0]
            return ast.IfExp(
                ast.Compare(x, [ast.Gt()], [_num(0.0)]),
                _num(1.0),
                ast.IfExp(
                    ast.Compare(x, [ast.Lt()], [_num(0.0)]), _num(-1.0), _mul_raw(x, _num(0.0))
                ),
            )
        if name in ("maximum", "minimum"):  # NaN propagates, as in NumPy
            x, y = node.args
            keep = ast.BoolOp(
                ast.Or(),
                [
                    ast.Compare(x, [ast.GtE() if name == "maximum" else ast.LtE()], [y]),
                    ast.Compare(x, [ast.NotEq()], [x]),
                ],
            )
            return ast.IfExp(keep, x, y)
        module, _, fn = FUNCTIONS[name].kernel.rpartition(".")
        node.func = (
            ast.Attribute(ast.Name(module, ast.Load()), fn, ast.Load())
            if module
            else ast.Name(fn, ast.Load())
        )
        return node


def _depends_on_symbols(node) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


def _mul_raw(x, y):
    return ast.BinOp(x, ast.Mult(), y)


def numba_code(text: str, names: dict[str, str]) -> str:
    """The formula as a scalar expression for a kernel; ``names`` renames the symbols to the
    kernel's local variables."""
    tree = _ToNumba(names).visit(copy.deepcopy(parse(text)))
    return ast.unparse(ast.fix_missing_locations(tree))


# ---- Python callables ---------------------------------------------------------------------------


_MATH = {name: fn.math for name, fn in FUNCTIONS.items()}
_NUMPY = {name: fn.numpy for name, fn in FUNCTIONS.items()}


def python_function(text: str, args: tuple[str, ...], on: str = "numpy") -> Callable:
    """The formula as ``f(*args)`` on floats (``on="math"``) or arrays (``on="numpy"``).

    A formula that is one call of a function on ``a`` returns that function itself."""
    ns = _MATH if on == "math" else _NUMPY
    node = parse(text)
    if (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "a"
        and args == ("a",)
    ):
        return ns[node.func.id]
    return eval(f"lambda {', '.join(args)}: {text}", dict(ns))  # noqa: S307 - our own formulas


def _tensor_op(ops, name):
    fn = getattr(ops, name, None)
    if fn is None:
        raise ValueError(f"formula function {name}() has no Tensor version in {ops!r}")
    return fn


class _ValuesInConditions(ast.NodeTransformer):
    """Inside a ``where`` condition, symbols are read as plain values (``V(a)``)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if node.func.id == "where":
            node.args[0] = _Wrap().visit(node.args[0])
        return node


class _Wrap(ast.NodeTransformer):
    def visit_Name(self, node):
        if node.id in SYMBOLS:
            return _call("V", node)
        return node


class _ParameterChoices(ast.NodeTransformer):
    """A ``where`` whose condition reads only the parameters (``c == 0.0``) picks one branch
    in Python: the other is never evaluated, so its infinities (``0 ** -1`` of ``c * a **
    (c - 1)`` at ``c = 0``) cannot reach a derivative as ``0 * inf``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if node.func.id == "where" and formula_symbols(node.args[0]) <= {"c", "c2"}:
            return ast.IfExp(node.args[0], node.args[1], node.args[2])
        return node


def formula_symbols(node: ast.expr) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in SYMBOLS}


def tensor_function(text: str, ops, args: str = "a, b, out, c, c2") -> Callable:
    """The formula as ``f(a, b, out, c, c2)`` (or the given ``args``) on Tensors, written with
    the differentiable ops in namespace ``ops`` (tapegrad's op module: exp, log, ..., where,
    value_of, sign)."""
    tree = _ParameterChoices().visit(copy.deepcopy(parse(text)))
    tree = _ValuesInConditions().visit(tree)
    src = ast.unparse(ast.fix_missing_locations(tree))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    ns = {name: _tensor_op(ops, name) for name in called if name in FUNCS}
    ns["V"] = ops.value_of
    return eval(f"lambda {args}: {src}", ns)  # noqa: S307 - our own formulas
