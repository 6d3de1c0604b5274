"""The small formula language elementwise ops are declared in, and what is made from it.

A formula is a Python expression over the symbols ``a``, ``b`` (the operands), ``out`` (the
op's own value), ``c``, ``c2`` (the op's scalar parameters) and the functions in ``FUNCS``.
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
from functools import lru_cache
from typing import Callable

import numpy as np

SYMBOLS = ("a", "b", "out", "c", "c2")
FUNCS = ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "abs", "sign",
         "where", "minimum", "maximum")


@lru_cache(maxsize=None)
def parse(text: str) -> ast.expr:
    """The checked syntax tree of a formula."""
    node = ast.parse(text, mode="eval").body
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id not in SYMBOLS and sub.id not in FUNCS:
            raise ValueError(f"formula {text!r}: unknown name {sub.id!r}; symbols are "
                             f"{SYMBOLS}, functions {FUNCS}")
        if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name)
                                              and sub.func.id in FUNCS):
            raise ValueError(f"formula {text!r}: only calls of {FUNCS} are allowed")
    return node


def symbols(text: str) -> set[str]:
    """The symbols a formula reads (what the backward must keep, for example)."""
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name) and n.id in SYMBOLS}


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
        if isinstance(node.op, ast.Div):
            return _sub(_div(dx, y), _div(_mul(x, dy), _mul(y, y)))
        if isinstance(node.op, ast.Pow):
            if not _depends(y, sym):      # x ** n: n * x ** (n - 1) * dx
                return _mul(_mul(y, ast.BinOp(x, ast.Pow(), _sub(y, _num(1.0)))), dx)
            if not _depends(x, sym):      # k ** y: k ** y * log(k) * dy
                return _mul(_mul(node, _call("log", x)), dy)
            return _mul(node, _add(_mul(dy, _call("log", x)), _div(_mul(y, dx), x)))
    if isinstance(node, ast.Call):
        name = node.func.id
        args = node.args
        if name == "where":
            return _call("where", args[0], _d(args[1], sym), _d(args[2], sym))
        if name == "sign":
            return _num(0.0)
        x = args[0]
        if name == "abs":
            return _mul(_d(x, sym), _call("sign", x))
        dx = _d(x, sym)
        local = {
            "exp": lambda: node,
            "log": lambda: _div(_num(1.0), x),
            "log1p": lambda: _div(_num(1.0), _add(_num(1.0), x)),
            "expm1": lambda: _call("exp", x),
            "sqrt": lambda: _div(_num(0.5), node),
            "sin": lambda: _call("cos", x),
            "cos": lambda: _neg(_call("sin", x)),
            "tan": lambda: _add(_num(1.0), _mul(node, node)),
            "tanh": lambda: _sub(_num(1.0), _mul(node, node)),
        }.get(name)
        if local is None:
            raise ValueError(f"no derivative rule for {name}() in a derivative formula")
        return _mul(dx, local())
    raise ValueError(f"cannot differentiate {ast.unparse(node)!r}")


@lru_cache(maxsize=None)
def derivative(text: str, sym: str) -> str:
    """d(formula)/d(sym), treating the other symbols as independent (``out`` included)."""
    return ast.unparse(_d(parse(text), sym))


# ---- code for the kernels -----------------------------------------------------------------------

class _ToNumba(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], ast.Load()), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.id
        if name == "where":
            return ast.IfExp(node.args[0], node.args[1], node.args[2])
        if name == "sign":   # NaN stays NaN (x * 0.0), like np.sign
            x = node.args[0]
            return ast.IfExp(ast.Compare(x, [ast.Gt()], [_num(0.0)]), _num(1.0),
                             ast.IfExp(ast.Compare(x, [ast.Lt()], [_num(0.0)]), _num(-1.0),
                                       _mul_raw(x, _num(0.0))))
        if name in ("maximum", "minimum"):   # NaN propagates, as in NumPy
            x, y = node.args
            keep = ast.BoolOp(ast.Or(), [ast.Compare(x, [ast.GtE() if name == "maximum"
                                                         else ast.LtE()], [y]),
                                         ast.Compare(x, [ast.NotEq()], [x])])
            return ast.IfExp(keep, x, y)
        node.func = ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load())
        return node


def _mul_raw(x, y):
    return ast.BinOp(x, ast.Mult(), y)


def numba_code(text: str, names: dict[str, str]) -> str:
    """The formula as a scalar expression for a kernel; ``names`` renames the symbols to the
    kernel's local variables."""
    tree = _ToNumba(names).visit(copy.deepcopy(parse(text)))
    return ast.unparse(ast.fix_missing_locations(tree))


# ---- Python callables ---------------------------------------------------------------------------

def _fmin(x, y):
    return x if x != x else (y if y < x or y != y else x)


def _fmax(x, y):
    return x if x != x else (y if y > x or y != y else x)


def _fsign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x * 0.0)


def _fwhere(k, x, y):
    return x if k else y


_MATH = {"exp": math.exp, "log": math.log, "log1p": math.log1p, "expm1": math.expm1,
         "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan,
         "tanh": math.tanh, "abs": abs, "sign": _fsign, "where": _fwhere, "minimum": _fmin,
         "maximum": _fmax}
_NUMPY = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
          "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "abs": np.abs, "sign": np.sign,
          "where": np.where, "minimum": np.minimum, "maximum": np.maximum}


def python_function(text: str, args: tuple[str, ...], on: str = "numpy") -> Callable:
    """The formula as ``f(*args)`` on floats (``on="math"``) or arrays (``on="numpy"``).

    A formula that is one call of a function on ``a`` returns that function itself."""
    ns = _MATH if on == "math" else _NUMPY
    node = parse(text)
    if (isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "a" and args == ("a",)):
        return ns[node.func.id]
    return eval(f"lambda {', '.join(args)}: {text}", dict(ns))  # noqa: S307 - our own formulas


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


def tensor_function(text: str, ops) -> Callable:
    """The formula as ``f(a, b, out, c, c2)`` on Tensors, written with the differentiable ops
    in namespace ``ops`` (tapegrad's op module: exp, log, ..., where, value_of, sign)."""
    tree = _ValuesInConditions().visit(copy.deepcopy(parse(text)))
    src = ast.unparse(ast.fix_missing_locations(tree))
    ns = {name: getattr(ops, name) for name in FUNCS}
    ns["V"] = ops.value_of
    return eval(f"lambda a, b, out, c, c2: {src}", ns)  # noqa: S307 - our own formulas
