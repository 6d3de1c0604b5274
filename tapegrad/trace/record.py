"""Recording a trace: the private tape, the guards Python's looks at a traced value leave, and
the specs of the arguments and outputs (pytrees of float leaves and static values)."""

import functools
import linecache
import math
import numbers
import os
import random
import sys
import types

import numpy as np

from .. import pytree
from ..core import creation as _creation
from ..core import tape as T
from ..core.functions import as_shape
from ..core.tensor import (
    refuse_complex,
    refuse_non_real,
    refuse_unsupported,
    row_of,
    STATE,
    value_of,
)
from ..core.tensor import (
    TensorBase as Tensor,
)
from ..kernels.sweeps import RetraceRequired

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tapegrad/
_CMP = {"__lt__": 0, "__le__": 1, "__gt__": 2, "__ge__": 3, "__eq__": 4, "__ne__": 5}
_CMP_TEXT = ("<", "<=", ">", ">=", "==", "!=", "pinned (float()/.item()/.numpy())")
PIN = 6


# ---- recording -----------------------------------------------------------------------------


class _TraceTape(T.ScratchTape):
    """A tape owned by one trace: never reset, and it notices grad mode being switched off."""

    __slots__ = ("_on", "grad_off")
    REPLAYS = True

    @property
    def enabled(self):
        return self._on

    @enabled.setter
    def enabled(self, flag):
        if not flag:
            self.grad_off = True
        self._on = flag

    def pause(self, flag):
        self._on = flag  # tapegrad's own no-grad (a custom op's forward, run again at replays)


def _site():
    """file:line (and the line's text) of the innermost caller outside tapegrad."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    if f is None:
        return "<unknown>", ""
    fn, ln = f.f_code.co_filename, f.f_lineno
    return f"{fn}:{ln}", linecache.getline(fn, ln).strip()


class _Recorder:
    def __init__(self, tape):
        self.tape = tape
        self.sites = {}  # guard row -> [site, source text, what was seen]

    def traced(self, x):
        """A value a replay may change: a traced value, or any other Tensor (one from f's
        closure is read again at every replay; one made inside f is a harmless pin)."""
        return isinstance(x, Tensor)

    def guard(self, x, kind, other=None, res=None):
        t = self.tape
        if kind in _CMP:
            if not (self.traced(x) or self.traced(other)):
                return
            try:
                ov = other if isinstance(other, Tensor) else value_of(other)
            except (TypeError, ValueError):
                return  # comparing with a non-number: the outcome does not depend on x
            seen = np.asarray(res._v if isinstance(res, Tensor) else res, np.float64)
            shape = seen.shape
            xa = x if isinstance(x, Tensor) else Tensor._const(value_of(x))
            ra = as_shape(t, xa, shape)
            if not isinstance(ov, Tensor) and np.ndim(ov) == 0:
                rb, c = -1, float(ov)
            else:
                rb, c = (
                    as_shape(t, ov if isinstance(ov, Tensor) else Tensor._const(ov), shape),
                    0.0,
                )
            code = _CMP[kind]
            value = float(seen) if seen.ndim == 0 else seen
            what = f"x {_CMP_TEXT[code]} y was {_outcome(seen)}"
        elif not self.traced(x):
            return
        elif kind == "bool":
            ra, rb, c, code = row_of(t, x), -1, 0.0, 5
            value = (
                float(x._v != 0)
                if x._v.__class__ is float
                else np.asarray(x._v != 0, np.float64).reshape(-1)
            )
            what = f"bool(x) was {bool(np.all(value))}"
        else:
            ra, rb, c, code = row_of(t, x), -1, 0.0, PIN
            value = x._v if x._v.__class__ is float else np.array(x._v, np.float64)
            what = f"{kind}() read the value {_short(value)}"
        if value.__class__ is not float and value.size == 1 and np.ndim(value) == 0:
            value = float(value)
        row = t.push(T.GUARD, ra, rb, value, None, 0, c, t.add_ints([code]))
        site, text = _site()
        self.sites[row] = [site, text, what]


def _outcome(seen):
    return (
        bool(seen)
        if seen.ndim == 0
        else f"the mask {seen.astype(bool).tolist()}"
        if seen.size <= 8
        else f"a mask of shape {seen.shape}"
    )


def _short(v):
    if v.__class__ is float or np.ndim(v) == 0:
        return repr(float(v))
    return f"array of shape {np.shape(v)}"


# random generators f may draw from: their states are compared around the recording
_RNG_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)


def _rng_state(g):
    if isinstance(g, np.random.Generator):
        g = g.bit_generator
    if isinstance(g, np.random.BitGenerator):
        return repr(g.state)
    if isinstance(g, np.random.RandomState):
        return repr(g.get_state(legacy=False))
    return g.getstate()


def _rng_states(generators=()):
    """NumPy's global random state, Python's (``random``), tapegrad's generator state and
    the states of ``generators`` (those f reaches from its closure), to notice draws."""
    st = np.random.get_state(legacy=False)
    return (
        st["bit_generator"],
        repr(st["state"]),
        st.get("has_gauss"),
        repr(_creation.rng().bit_generator.state),
        random.getstate(),
        *[_rng_state(g) for g in generators],
    )


def _reachable_tensors(f, depth=4, budget=20000, generators=None):
    """The leaf Tensors not requiring grad that ``f`` can reach by name: in its closure
    cells, defaults and the globals its code names (nested code included), through bound
    methods, partials, containers and objects' attributes, and the same for the functions
    found there, ``depth`` levels deep (modules and classes are not entered).  The random
    generators met on the way (NumPy's Generator / RandomState, a ``random.Random``) are
    appended to ``generators``."""
    found, seen = {}, set()
    todo = [(f, depth)]
    while todo and len(seen) < budget:
        obj, level = todo.pop()
        if id(obj) in seen or level < 0:
            continue
        seen.add(id(obj))
        if isinstance(obj, _RNG_TYPES):
            if generators is not None:
                generators.append(obj)
            continue
        if isinstance(obj, Tensor):
            v = obj._v
            # integer and boolean ones too (class labels, indices, masks)
            if obj._leaf and not obj._rg and (v.__class__ is float or v.dtype.kind in "fiub"):
                found[id(obj)] = obj
            continue
        if isinstance(obj, _OPAQUE):
            continue
        try:
            subs = _parts(obj)
        except Exception:  # noqa: BLE001 - an object whose attributes cannot be read
            continue
        todo += [(o, level - 1) for o in subs[:1000]]
    return list(found.values())


def _parts(obj):
    """What ``obj`` refers to, for ``_reachable_tensors``."""
    code = getattr(obj, "__code__", None)
    if isinstance(obj, types.MethodType):
        subs = [obj.__func__, obj.__self__]
    elif isinstance(code, types.CodeType):
        g = getattr(obj, "__globals__", None) or {}
        subs = [g[n] for n in _code_names(code) if n in g]
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                subs.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        subs += list(getattr(obj, "__defaults__", None) or ())
        subs += list((getattr(obj, "__kwdefaults__", None) or {}).values())
    elif isinstance(obj, functools.partial):
        subs = [obj.func, *obj.args, *obj.keywords.values()]
    elif isinstance(obj, dict):
        subs = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        subs = list(obj)
    else:
        subs = list(getattr(obj, "__dict__", {}).values())
        call = type(obj).__call__ if callable(obj) else None
        if isinstance(getattr(call, "__code__", None), types.CodeType):
            subs.append(call)  # a callable object: what its __call__ reads
    return subs


_OPAQUE = (
    str, bytes, int, float, complex, bool, type(None), np.ndarray, np.generic, type,
    types.ModuleType, types.BuiltinFunctionType, np.ufunc,
)  # fmt: skip


def _code_names(code):
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _code_names(c)
    return names


def _begin(rec):
    """Make ``rec`` the recorder of this thread (the caller keeps the one it replaces)."""
    STATE.guard = rec.guard


def _end(prev):
    """Put back the recorder ``_begin`` replaced (idempotent, also after an interruption)."""
    STATE.guard = prev


# ---- pytrees ---------------------------------------------------------------------------------
# A spec is JSON data: ["f", shape, pyfloat] a traced float leaf, ["s", value] a static leaf,
# ["a", dtype, shape, values] a static integer/bool array, ["l"|"t", children] (a tuple spec
# may end with its namedtuple type, "module:qualname", see tapegrad.pytree), ["d", keys,
# children].  Output specs carry the row: ["f", shape, pyfloat, row].


def _spec(obj, diff, leaves):
    if isinstance(obj, Tensor):
        obj = obj._v
    refuse_unsupported(obj, "tg.trace: an argument")  # masked, np.matrix, longdouble, complex
    if diff:
        _refuse_not_differentiable(obj)
    if isinstance(obj, dict):
        keys = list(obj)
        return ["d", keys, [_spec(obj[k], diff, leaves) for k in keys]]
    if isinstance(obj, (list, tuple)):
        return [
            "t" if isinstance(obj, tuple) else "l",
            [_spec(o, diff, leaves) for o in obj],
            *_tuple_type(obj),
        ]
    if isinstance(obj, (float, np.floating)) or (
        diff and isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_))
    ):
        leaves.append(float(obj))
        return ["f", [], True]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f" or (diff and obj.dtype.kind in "iu"):
            leaves.append(np.array(obj, np.float64))
            return ["f", list(obj.shape), False]
        return ["a", obj.dtype.str, list(obj.shape), obj.ravel().tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    return ["s", obj]


def _refuse_not_differentiable(obj):
    """Refuse, in an argument of ``argnums``, a leaf that tg.grad refuses too: a bool, a
    complex or non-float number (Fraction, Decimal), an array of booleans, objects, strings
    or dates.  Recorded as a constant, its gradient would be a silent None."""
    if isinstance(obj, (complex, np.complexfloating)):
        refuse_complex(f"tg.trace: an argument in argnums ({obj!r})")
    if isinstance(obj, (bool, np.bool_)):
        why = f"is bool {obj!r}; only floats can be differentiated (write {float(obj)!r}"
    elif isinstance(obj, np.ndarray) and obj.dtype.kind not in "fiu":
        why = f"is an array of dtype {obj.dtype}; only float arrays can be differentiated (use "
        why += ".astype(float)"
    elif isinstance(obj, numbers.Number) and not isinstance(obj, (int, float, np.number)):
        why = f"is {type(obj).__name__} {obj!r}; only floats can be differentiated (use float(x)"
    else:
        return
    raise TypeError(
        f"tg.trace: an argument in argnums {why}, or pass it in an argument that is not in argnums)"
    )


def _tuple_type(obj):
    """A tuple spec's optional third entry: the namedtuple type (see tapegrad.pytree)."""
    return [pytree.type_ref(obj)] if pytree.is_namedtuple(obj) else []


def _tuple_of(spec, items):
    return pytree.namedtuple_of(spec[2], items) if len(spec) > 2 else tuple(items)


class ArgumentsChanged(ValueError):
    """Arguments of another shape or structure than the recorded ones (with
    ``retrace=True`` the trace records again for them, as ``jax.jit`` compiles again)."""


def refuse_differentiated(x, path):
    """A replay is not recorded on the caller's tape: a value being differentiated (a Tensor
    that requires grad, with grad mode on: inside tg.grad, an outer trace, or a graph of
    the Tensor API) would lose its gradient there, so it is refused."""
    if x._rg and STATE.enabled:
        raise TypeError(
            f"trace: {f'argument {path}' if path != '' else 'an argument'} is a Tensor being "
            "differentiated (requires_grad, or an input of an enclosing tg.grad / tg.jvp / "
            "tg.trace); a replay runs outside the caller's tape, so the result would carry "
            "no derivative. Differentiate f itself (tg.grad(f)), use the trace's own "
            "tr.grad / tr.vjp / tr.jvp at plain values, or pass x.detach() if no derivative "
            "through the replay is wanted"
        )


def _collect(spec, obj, out, path):
    """Append the float leaves of ``obj`` (checked against ``spec``) to ``out``."""
    kind = spec[0]
    if isinstance(obj, Tensor):
        refuse_differentiated(obj, path)
        obj = obj._v
    if kind == "f":
        if spec[2] and obj.__class__ is float:
            out.append(obj)
            return
        a = None
        if not isinstance(obj, (dict, list, tuple)):
            refuse_unsupported(obj, f"trace: argument {path}")
            a = np.asarray(obj)
            if a.dtype.kind == "O" and isinstance(obj, numbers.Number):  # Fraction, 2**70
                a = np.asarray(float(obj))
            # (None, datetime64, strings: the recording refuses them too)
            refuse_non_real(obj, a.dtype, f"trace: argument {path}")
            a = a.astype(np.float64, copy=False)
        if a is None or list(a.shape) != spec[1]:
            got = f"shape {a.shape}" if a is not None else type(obj).__name__
            raise ArgumentsChanged(
                f"trace: argument {path} has {got}, but the trace was recorded "
                f"with shape {tuple(spec[1])}; make a new trace for new shapes (or create "
                "it with retrace=True)"
            )
        out.append(float(a) if spec[2] else a)
    elif kind in "lt":
        if not isinstance(obj, (list, tuple)) or len(obj) != len(spec[1]):
            raise ArgumentsChanged(
                f"trace: argument {path} is {_describe(obj)}, but the trace was "
                f"recorded with a {'list' if kind == 'l' else 'tuple'} of "
                f"{len(spec[1])} items"
            )
        for i, (s, o) in enumerate(zip(spec[1], obj)):
            _collect(s, o, out, f"{path}[{i}]")
    elif kind == "d":
        if not isinstance(obj, dict) or set(obj) != set(spec[1]):
            raise ArgumentsChanged(
                f"trace: argument {path} is {_describe(obj)}, but the trace was "
                f"recorded with a dict of keys {spec[1]}"
            )
        for k, s in zip(spec[1], spec[2]):
            _collect(s, obj[k], out, f"{path}[{k!r}]")
    else:
        same = _spec(obj, False, []) == spec
        if not same:
            raise RetraceRequired(
                f"trace: argument {path} is {_describe(obj)}, but the trace "
                f"was recorded with the non-float value {_static_text(spec)}; "
                "Python may take other branches for it, so record a new "
                "trace (or create it with retrace=True)"
            )


def _describe(obj):
    if isinstance(obj, dict):
        return f"a dict of keys {list(obj)}"
    if isinstance(obj, (list, tuple)):
        return f"a {type(obj).__name__} of {len(obj)} items"
    return repr(obj) if np.ndim(obj) == 0 else f"an array of shape {np.shape(obj)}"


def _static_text(spec):
    return repr(spec[1]) if spec[0] == "s" else f"array {spec[3]}"


def _build(spec, flat, pos):
    """Rebuild a pytree of gradients (or outputs) from the flat vector; returns (obj, pos)."""
    kind = spec[0]
    if kind == "f":
        if spec[2]:
            return float(flat[pos]), pos + 1
        size = math.prod(spec[1])
        return flat[pos : pos + size].reshape(spec[1]), pos + size
    if kind in "lt":
        items = []
        for s in spec[1]:
            o, pos = _build(s, flat, pos)
            items.append(o)
        return (_tuple_of(spec, items) if kind == "t" else items), pos
    if kind == "d":
        out = {}
        for k, s in zip(spec[1], spec[2]):
            out[k], pos = _build(s, flat, pos)
        return out, pos
    return None, pos


def _leaf_tensors(spec, leaves, it):
    """The argument with each float leaf replaced by the next leaf Tensor of ``it``."""
    kind = spec[0]
    if kind == "f":
        return next(it)
    if kind in "lt":
        items = [_leaf_tensors(s, leaves, it) for s in spec[1]]
        return _tuple_of(spec, items) if kind == "t" else items
    if kind == "d":
        return {k: _leaf_tensors(s, leaves, it) for k, s in zip(spec[1], spec[2])}
    if kind == "a":
        return np.array(spec[3], dtype=np.dtype(spec[1])).reshape(spec[2])
    return spec[1]


def _out_spec(obj, t):
    if isinstance(obj, dict):
        keys = list(obj)
        return ["d", keys, [_out_spec(obj[k], t) for k in keys]]
    if isinstance(obj, (list, tuple)):
        return [
            "t" if isinstance(obj, tuple) else "l",
            [_out_spec(o, t) for o in obj],
            *_tuple_type(obj),
        ]
    if isinstance(obj, Tensor):
        v = obj._v
        if obj._tape is t and obj._rg:
            row = obj._row
        else:
            row = t.push(
                T.CONST, -1, -1, v if v.__class__ is float else np.asarray(v, np.float64), None, 0
            )
        return ["f", list(np.shape(v)), v.__class__ is float, row]
    if isinstance(obj, (float, int, np.number)) and not isinstance(obj, bool):
        return ["f", [], True, t.push(T.CONST, -1, -1, float(obj), None, 0)]
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "fiu":
        return [
            "f",
            list(obj.shape),
            False,
            t.push(T.CONST, -1, -1, np.array(obj, np.float64), None, 0),
        ]
    return ["s", obj]


def _out_value(spec, val, voff):
    kind = spec[0]
    if kind == "f":
        r = spec[3]
        v = val[voff[r] : voff[r + 1]]
        return float(v[0]) if spec[2] else v.reshape(spec[1]).copy()
    if kind in "lt":
        items = [_out_value(s, val, voff) for s in spec[1]]
        return _tuple_of(spec, items) if kind == "t" else items
    if kind == "d":
        return {k: _out_value(s, val, voff) for k, s in zip(spec[1], spec[2])}
    return spec[1]
