"""Functional transforms over plain NumPy code (JAX / HIPS autograd style).

``grad``, ``value_and_grad``, ``vjp`` and ``jacobian`` wrap the float leaves of the chosen
arguments in fresh leaf Tensors, run ``f`` once (it records on the tape like any Tensor code)
and sweep the tape once; nothing is kept per op, so a transform costs one forward and one
backward plus a constant.  Inside another transform (an argument is already a Tensor that
requires grad, or ``f`` runs under an outer transform) gradients are taken with
``create_graph=True`` and returned as Tensors, so the outer transform can differentiate them.
So are they when ``f`` reads a Tensor that requires grad from outside (a parameter in its
closure), as torch.func's: ``tg.grad(lambda x: model(x).sum())(X)`` is a Tensor connected to
the model's parameters (a gradient penalty on it reaches them); under ``tg.no_grad()`` it is
an array.
"""

from collections.abc import Callable, Sequence
from typing import Any

import functools
import math
import threading

import numpy as np

from ..kernels import run as R
from ..ops.spec import C
from ..kernels import sweeps as K
from ..core import functions as _ops
from ..autograd import engine as autograd
from ..autograd import forward
from .. import pytree as _pytree
from ..core.tape import holding_rows
from ..core.tape_inspect import operand_rows
from ..core.tensor import (
    STATE,
    holds_tensor,
    _stands_in,
    raise_unwrapped,
    refuse_unsupported,
    stand_in,
    unsupported_array,
)
from ..core.tensor import TensorBase as Tensor

__all__ = ["grad", "value_and_grad", "vjp", "jacobian"]


class _Depth(threading.local):
    n = 0


_DEPTH = _Depth()  # how many transforms are running f on this thread


# ---- pytrees -----------------------------------------------------------------------------------

# ``_leaves``/``_unflatten``/``_map`` are imported from here by second_order and others
_BadLeaf = _pytree.BadLeaf
_map = _pytree.map_leaves
_leaves = _pytree.leaves
_unflatten = _pytree.unflatten


# ---- arguments -------------------------------------------------------------------------------


def _check_argnums(argnums, nargs):
    if argnums.__class__ is int and -nargs <= argnums < nargs:  # the common case, at every call
        return (argnums % nargs,), True
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not all(
        isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in nums
    ):
        raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(
                f"argnums {i} is out of range: the function was called with "
                f"{nargs} positional argument(s)"
            )
    return tuple(int(i) % nargs for i in nums), single


def _input(leaf, inputs):
    """A fresh Tensor standing for one argument leaf (appended to ``inputs``); ``None`` is no
    leaf (an empty subtree) and never gets here."""
    cls = leaf.__class__
    if cls is float:
        x = Tensor._const(leaf)
    elif isinstance(leaf, Tensor):
        if leaf.dtype.kind != "f":
            raise _BadLeaf(f"is an integer/boolean Tensor (dtype {leaf.dtype})")
        # a clone, not the Tensor itself: the inner gradient must not see the outer variable
        x = leaf.clone() if leaf._rg else Tensor._const(leaf._v)
    elif isinstance(leaf, np.ndarray) or isinstance(leaf, np.floating):
        problem = unsupported_array(leaf)  # masked, np.matrix, extended precision, complex
        if problem is not None:
            raise _BadLeaf(problem)
        if leaf.dtype.kind != "f":
            raise _BadLeaf(
                f"is an array of dtype {leaf.dtype}; only float arrays can be "
                "differentiated (pass it through a non-differentiated argument, "
                "or use .astype(float))"
            )
        x = Tensor._const(float(leaf) if leaf.ndim == 0 else leaf.astype(np.float64))
    elif isinstance(leaf, (bool, int, np.integer, np.bool_)):
        raise _BadLeaf(
            f"is {type(leaf).__name__} {leaf!r}; only floats can be differentiated "
            f"(write {float(leaf)!r}, or pass it in an argument that is not in "
            "argnums)"
        )
    else:
        raise _BadLeaf(
            f"has type {type(leaf).__name__}, which cannot be differentiated "
            "(expected floats, float arrays, Tensors or lists/tuples/dicts of them)"
        )
    if not x._rg:
        x._rg = True
    inputs.append(stand_in(x) if x._leaf else x)
    return x


def _describe(tree):
    text = repr(tree)
    return f"{type(tree).__name__} {text if len(text) < 40 else text[:37] + '...'}"


def _value(y):
    """An output as a user sees it outside the transform: Tensors become floats / arrays."""
    return y._v if isinstance(y, Tensor) else y


def _like(orig, g):
    """Gradient array ``g`` in the type of argument leaf ``orig`` (a float gives a float)."""
    if orig.__class__ is float or isinstance(orig, Tensor):
        return float(g) if g.ndim == 0 else g
    if g.ndim == 0 and isinstance(orig, np.floating):
        return orig.dtype.type(g)
    return g.astype(orig.dtype, copy=False)


def _zeros(shape, nested):
    z = np.zeros(shape)
    return Tensor._const(float(z) if z.ndim == 0 else z) if nested else z


class _Call:
    """One call of ``f`` with fresh leaf Tensors for the float leaves of ``args[argnums]``."""

    __slots__ = ("trees", "inputs", "single", "nested", "out", "tape", "start")

    def __init__(self, f, args, kwargs, argnums):
        nums, self.single = _check_argnums(argnums, len(args))
        # the outermost transform decides: called with Tensors, f is PyTorch code; with NumPy
        # values, NumPy code (its Tensor methods keep NumPy's meanings: core.torch_methods)
        torch_code = STATE.torch_code
        new_torch_code = torch_code if STATE.transforms else holds_tensor((args, kwargs))
        args = list(args)
        self.trees = [args[i] for i in nums]  # the arguments as given
        self.inputs = []  # one input Tensor per leaf
        spans = {}
        for i in nums:
            start = len(self.inputs)
            if i in spans:  # argnums=(0, 0): the same leaves again, one gradient each
                self.inputs.extend(self.inputs[spans[i][0] : spans[i][1]])
                continue
            try:
                args[i] = _map(args[i], lambda leaf: _input(leaf, self.inputs))
            except _BadLeaf as e:
                raise TypeError(f"argument {i}{e.path} {e.why}") from None
            spans[i] = (start, len(self.inputs))
            if args[i] is None:  # (an empty container's gradient is that container)
                raise TypeError(
                    f"argument {i} has no float values to differentiate (got "
                    f"{_describe(args[i])}); pass floats such as 3.0 or float "
                    "arrays"
                )
        self.nested = _DEPTH.n > 0 or any(not x._leaf for x in self.inputs)
        prev, depth, transforms = STATE.enabled, _DEPTH.n, STATE.transforms
        tape = self.tape = STATE.tape
        start = self.start = tape.n
        tape.open_range()  # f's handles get token ranges of their own (see release)
        try:  # set inside the try and restored absolutely: an interrupt cannot skew them
            STATE.enabled = True
            _DEPTH.n = depth + 1
            STATE.transforms = transforms + 1
            STATE.torch_code = new_torch_code
            self.out = f(*args, **kwargs)
        except BaseException as e:  # (KeyboardInterrupt too: its rows are as unreachable)
            if STATE.tape is tape:  # f's rows can only be reached through its traceback
                tape.discard_from(start)
            if not isinstance(e, Exception):
                raise
            raise_unwrapped(e)
        finally:
            STATE.torch_code = torch_code
            STATE.transforms = transforms
            _DEPTH.n = depth
            STATE.enabled = prev
        if not self.nested and prev and self._reads_outer():  # (under no_grad: arrays)
            self.nested = True

    def _reads_outer(self):
        """Whether f read a Tensor that requires grad from outside the transform (a parameter
        in its closure, or a result computed from one).  The results depend on it, so with
        gradient recording on they are taken as in a nested call (Tensors, differentiable in
        it), as torch.func's are: as arrays they would carry no derivative in it (a gradient
        penalty built from ``tg.grad`` would add 0 to the parameter's gradient).  Under
        ``tg.no_grad()`` they are arrays, as torch.func's results then need no grad."""
        t, start = self.tape, self.start
        if STATE.tape is not t or t.n <= start:
            return False
        # a transform nested in f may have cut dead rows below ``start`` (tape.truncate), so
        # that f's later rows, its own inputs among them, now stand below it: f's inputs are
        # entered on first use inside f, so none of them stands below where f's rows begin
        entered = [x._row for x in self.inputs if x._tape is t and 0 <= x._row < start]
        if entered:
            start = min(entered)
        for r in reversed(t.leaf_rows):  # leaves first used inside f (ascending rows)
            if r < start:
                break
            h = t.entered(r)
            if h is not None and not _stands_in(h):
                return True
        if not start or not t.rg[:start].any():  # (a loop's calls start on an empty tape)
            return False
        w = t.code[start : t.n]  # operands recorded before f: the two fields of each row
        rows = np.concatenate((((w >> 8) & 0xFFFFFFF) - 1, (w >> 36) - 1))
        rows = rows[(rows >= 0) & (rows < start)]
        if rows.size and t.rg[rows].any():
            return True
        ops = w & 255  # (custom ops and concatenations keep their operand rows elsewhere)
        for k in np.flatnonzero((ops == C.CUSTOM) | (ops == C.CONCAT)).tolist():
            if any(0 <= r < start and t.rg[r] for r in operand_rows(t, start + k)):
                return True
        return False

    def backward(self, ys, cts, retain):
        """Gradients (arrays, or Tensors when nested; None if unreached) of the inputs."""
        ins = self.inputs
        pairs = [(y, ct) for y, ct in zip(ys, cts) if isinstance(y, Tensor) and y._rg]
        if not pairs:
            return [None] * len(ins)
        ys = [y for y, _ in pairs]
        cts = None if cts[0] is None else [ct for _, ct in pairs]
        if self.nested or _DEPTH.n > 0 or any(isinstance(c, Tensor) and c._rg for c in cts or ()):
            return list(
                autograd.grad(ys, ins, cts, retain_graph=True, create_graph=True, allow_unused=True)
            )
        return autograd.run_backward(
            ys, cts, ins, retain, False, accumulate=False, allow_unused=True
        )

    def release(self):
        """Cut what f recorded, its handles gone (the caller holds none of them any more): in
        place, whatever graph the user holds below it.  A handle of f that lives on (kept in
        a global) leaves the rows to the tape's next reclaim."""
        self.out = self.inputs = None
        tape = self.tape
        if STATE.tape is tape and not tape.drop_from(self.start):
            tape.maybe_reset(forward=False)

    def grads_tree(self, grads, shape=()):
        """Per-input gradients put back into the argument structures (``shape``: the output
        shape prefixed to each block, for Jacobians).  Tensors stay Tensors (nested use)."""
        it = iter(grads)
        leaves = []
        nested = self.nested or any(isinstance(g, Tensor) for g in grads)
        for x in self.inputs:
            g = next(it)
            leaves.append(_zeros(shape + x.shape, nested) if g is None else g)
        it = iter(leaves)

        def fill(orig):
            g = next(it)
            return g if g is None or nested else _like(orig, g)

        trees = [_map(tree, fill) for tree in self.trees]
        return trees[0] if self.single else tuple(trees)


def _cotangent_leaves(ct, like):
    """The leaves of a cotangent for an output ``like``, matched by structure (dicts by key):
    ``None`` where the output has a subtree stands for zeros for each of its leaves
    (PyTorch's ``None`` grad_outputs)."""
    try:
        cts = _pytree.matched_leaves(like, ct, none_is_zero=True)
    except ValueError as e:
        raise ValueError(
            f"vjp_fn: the cotangent does not have the structure of f's output ({e}); pass "
            "one array per output leaf, in its structure"
        ) from None
    for k, c in enumerate(cts):
        _check_real(c, f"vjp_fn: cotangent leaf {k}")
    path = _none_at_one_element(like, ct, "")
    if path is not None:
        raise ValueError(
            f"vjp_fn: the cotangent is None at {path or 'the top'}, an output of one "
            "element; torch.func.vjp and torch.autograd.grad read None there as 1 (the "
            "implicit gradient of a scalar), while None elsewhere stands for zeros; pass "
            "1.0 or 0.0"
        )
    return cts


def _none_at_one_element(like, ct, path):
    """The path of a ``None`` cotangent standing for one output leaf of one element (the
    trees already matched), or None.  ``None`` for a subtree or a larger output means zeros,
    unambiguously; for a scalar PyTorch means 1, so a zero there would differ silently."""
    if ct is None:
        if like is None or isinstance(like, (list, tuple, dict)):
            return None
        return path if np.size(_value(like)) == 1 else None
    if isinstance(like, dict):
        items = ((f"[{k!r}]", like[k], ct[k]) for k in like)
    elif isinstance(like, (list, tuple)):
        items = ((f"[{k}]", a, b) for k, (a, b) in enumerate(zip(like, ct)))
    else:
        return None
    for key, a, b in items:
        found = _none_at_one_element(a, b, path + key)
        if found is not None:
            return found
    return None


def _check_real(v, what):
    """Refuse a complex (or non-numeric) tangent or cotangent: converting it to float would
    drop its imaginary part silently."""
    if v is None or isinstance(v, Tensor):
        return
    refuse_unsupported(v, what)  # masked, np.matrix, extended precision, complex
    kind = np.asarray(v).dtype.kind
    if kind == "c":
        refuse_unsupported(np.asarray(v), what)  # (a list of complex numbers)
    if kind not in "biuf":
        raise TypeError(f"{what} has dtype {np.asarray(v).dtype}; pass a float array")


def _split_aux(out, has_aux):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"has_aux=True requires f to return a pair (output, aux), got {_describe(out)}"
        )
    return out[0], out[1]


def output_dtype(out):
    """The dtype of an output of ``f`` (a Tensor, an array, a NumPy or Python number), or None
    for anything else."""
    if isinstance(out, (Tensor, np.ndarray, np.generic)):
        return out.dtype
    if isinstance(out, (bool, int, float)):
        return np.dtype(type(out))
    return None


def _check_float(out, what="grad"):
    """Refuse integer / boolean outputs (as JAX does): their derivative is not defined, and a
    zero would look like an answer."""
    dt = output_dtype(out)
    if dt is not None and dt.kind not in "f":
        fix = (
            "use has_aux=True to return it alongside the value to differentiate"
            if what in ("grad", "vjp")
            else f"return it outside f ({what} has no has_aux)"
        )
        raise TypeError(
            f"{what} requires real-valued (float) outputs, but f returned dtype "
            f"{dt} (e.g. a comparison or a count); return a float, or {fix}"
        )


def _check_scalar(out, what="grad"):
    """Refuse what is not one float (a count, a comparison, None, a vector): its derivative
    is not the transform's (a zero would look like an answer)."""
    _check_float(out, what)
    if isinstance(out, Tensor):
        shape = out.shape
    elif isinstance(out, (float, int, np.number, np.ndarray)):
        shape = np.shape(out)
    else:
        raise TypeError(
            f"{what} needs f to return a scalar (a float or a 0-d Tensor), got {_describe(out)}"
        )
    if math.prod(shape) != 1:  # (np.prod of a short tuple costs ~5 us)
        raise TypeError(
            f"{what} needs f to return a scalar, but it returned shape {shape}; use "
            "tg.jacobian(f) for the full Jacobian or tg.vjp(f, x) for "
            "vector-Jacobian products"
        )


# ---- transforms ----------------------------------------------------------------------------------


def value_and_grad(
    f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable:
    """``f``'s value and its gradient with respect to ``args[argnums]`` (same structure).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
        (5.0, array([2., 4.]))
    """

    @functools.wraps(f)
    @holding_rows
    def value_and_grad_f(*args, **kwargs):
        c = _Call(f, args, kwargs, argnums)
        out, aux = _split_aux(c.out, has_aux)
        _check_scalar(out)
        if c.nested:
            g = c.grads_tree(c.backward([out], [None], False))
            return ((out, aux), g) if has_aux else (out, g)
        # the rows are cut once f's handles are gone (c.release), not freed by the backward
        # while they are alive: a cut under live handles would retire the tape
        g = c.grads_tree(c.backward([out], [None], True))
        value = _value(out)
        if has_aux:
            aux = _map(aux, _value)
        del out
        c.release()
        return ((value, aux), g) if has_aux else (value, g)

    return value_and_grad_f


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar ``f`` with respect to ``args[argnums]`` (``(grad, aux)`` with
    has_aux); arguments may be floats, arrays, Tensors or lists / tuples / dicts of them.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.grad(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))      # 3 x**2
        array([ 3., 12.])
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def elementwise_grad(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """HIPS autograd's ``elementwise_grad``: the gradient of ``sum(f(x))``, that is ``f``'s
    vector-Jacobian product with ones.  For an ``f`` acting elementwise, each element's
    derivative in its own input; for any other ``f``, the column sums of its Jacobian.
    Nests like ``grad`` (second derivatives of elementwise functions).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> d_tanh = tg.elementwise_grad(np.tanh)
        >>> x = np.array([0.0, 1.0])
        >>> np.allclose(d_tanh(x), 1 - np.tanh(x) ** 2)
        True
        >>> np.allclose(tg.elementwise_grad(d_tanh)(x), -2 * np.tanh(x) * (1 - np.tanh(x) ** 2))
        True
    """
    g = grad(lambda *args, **kwargs: np.sum(f(*args, **kwargs)), argnums)
    return functools.wraps(f)(lambda *args, **kwargs: g(*args, **kwargs))


@holding_rows
def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` (same structure as the output) returns
    one cotangent per primal and may be called any number of times.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> y, vjp_fn = tg.vjp(lambda x: x ** 2, np.array([1.0, 2.0, 3.0]))
        >>> y, vjp_fn(np.ones(3))                                         # 2 x * cotangent
        (array([1., 4., 9.]), (array([2., 4., 6.]),))
    """
    c = _Call(f, primals, {}, tuple(range(len(primals))))
    out, aux = _split_aux(c.out, has_aux)
    ys = _leaves(out)
    for y in ys:
        _check_float(y, "vjp")

    @holding_rows
    def vjp_fn(cotangent):
        cts = _cotangent_leaves(cotangent, out)
        if len(cts) != len(ys):
            raise ValueError(
                f"vjp_fn: the cotangent has {len(cts)} leaves but f's output has "
                f"{len(ys)}; pass one array per output leaf, in its structure"
            )
        for k, (y, ct) in enumerate(zip(ys, cts)):
            shape = np.shape(_value(y))
            if ct is not None and np.shape(_value(ct)) != shape:
                raise ValueError(
                    f"vjp_fn: cotangent leaf {k} has shape "
                    f"{np.shape(_value(ct))} but the output has shape {shape}"
                )
        cts = [np.zeros(np.shape(_value(y))) if ct is None else ct for y, ct in zip(ys, cts)]
        return c.grads_tree(c.backward(ys, cts, True))

    value = out if c.nested else _map(out, _own_value)
    if has_aux:
        return value, vjp_fn, aux if c.nested else _map(aux, _own_value)
    return value, vjp_fn


def _own_value(y):
    """``_value`` as an array of the caller's own: vjp_fn's backward reads the recorded
    values (``exp``'s output, a product's operands), which may be the very arrays of f's
    outputs; a write into a returned output or aux would change its gradient silently."""
    v = _value(y)
    return v.copy() if isinstance(y, Tensor) and isinstance(v, np.ndarray) else v


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, mode: str = "auto") -> Callable:
    """The Jacobian: for each output leaf of shape S and argument leaf of shape A an array
    of shape S + A, in the output structure of argument structures.

    ``mode="rev"`` sweeps once per output element, ``"fwd"`` once per input element (both in
    one compiled call); ``"auto"`` picks the one with fewer sweeps.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))          # diag(2 x)
        array([[2., 0.],
               [0., 4.]])
    """
    if mode not in ("auto", "rev", "fwd"):
        raise ValueError(f"jacobian: mode must be 'auto', 'rev' or 'fwd', got {mode!r}")

    @functools.wraps(f)
    @holding_rows
    def jacobian_f(*args, **kwargs):
        c = _Call(f, args, kwargs, argnums)
        for y in _leaves(c.out):
            _check_float(y, "jacobian")
        rows_fn = _jacobian_rows
        if c.nested or _DEPTH.n > 0:  # (differentiable rows; forward mode when asked for)
            if mode == "fwd":
                rows_fn = _nested_forward_rows
        elif mode != "rev":
            n_out = sum(int(np.size(_value(y))) for y in _leaves(c.out))
            n_in = sum(x.size for x in c.inputs)
            if mode == "fwd" or n_out > n_in:
                rows_fn = _forward_rows
        return _jacobian_blocks(c, rows_fn)

    return jacobian_f


def _jacobian_blocks(c, rows_fn):
    """Assemble the Jacobian of call ``c`` from ``rows_fn(c, ys, sizes)`` (per input, the
    (M, *x.shape) derivatives of all M output values)."""
    ys = _leaves(c.out)
    shapes = [np.shape(_value(y)) for y in ys]
    sizes = [int(np.prod(s)) for s in shapes]
    rows = rows_fn(c, ys, sizes)
    blocks, off = [], 0
    for shape, m in zip(shapes, sizes):
        blocks.append(
            c.grads_tree(
                [
                    None if J is None else J[off : off + m].reshape(shape + x.shape)
                    for J, x in zip(rows, c.inputs)
                ],
                shape,
            )
        )
        off += m
    return _unflatten(c.out, blocks)


def _forward_rows(c, ys, sizes):
    """Like ``_jacobian_rows``, by forward mode (one tangent sweep per input element)."""
    t = STATE.tape
    ins = c.inputs
    keep = [
        k
        for k, y in enumerate(ys)
        if isinstance(y, Tensor) and y._rg and (y._tape is t or any(y is x for x in ins))
    ]
    out_rows = [autograd.row_for(t, ys[k]) for k in keep]  # an output may be an input
    m = sum(sizes)
    J = np.zeros((m, sum(x.size for x in ins)))
    if keep:
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        sel = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in keep])
        J[sel] = forward.jacobian_forward(
            t,
            [x._row if x._tape is t else -1 for x in ins],
            [x.size for x in ins],
            out_rows,
            [sizes[k] for k in keep],
        )
        t.maybe_reset()
    cols = np.concatenate([[0], np.cumsum([x.size for x in ins])]).astype(int)
    return [J[:, cols[k] : cols[k + 1]].reshape((m,) + x.shape) for k, x in enumerate(ins)]


def _nested_forward_rows(c, ys, sizes):
    """``_forward_rows`` inside another transform: one Tensor-level tangent pass
    (``forward.tangent_graph``) per input element, so the Jacobian can be differentiated
    again and is forward mode's: an output that no tangent reaches has the derivative 0,
    where a reverse pass multiplies its zero cotangent by the partials of other outputs
    (0 * NaN = NaN next to a NaN output, as PyTorch's and JAX's jacrev give)."""
    t = STATE.tape
    ins = c.inputs
    m = sum(sizes)
    if not m:
        return [None for _ in ins]
    keep = [
        k
        for k, y in enumerate(ys)
        if isinstance(y, Tensor) and y._rg and (y._tape is t or any(y is x for x in ins))
    ]
    out_rows = [autograd.row_for(t, ys[k]) for k in keep]
    rows = []
    for x in ins:
        columns = []
        for j in range(x.size):
            tans = [None] * len(keep)
            if keep and x._tape is t and x._row >= 0:
                seed = np.zeros(x.shape)
                seed.flat[j] = 1.0
                seed = Tensor._const(float(seed) if seed.ndim == 0 else seed)
                tans = forward.tangent_graph(t, {x._row: seed}, out_rows)
            by_k = dict(zip(keep, tans))
            parts = [
                _zeros((n,), True) if by_k.get(k) is None else _ops.reshape(by_k[k], (n,))
                for k, n in enumerate(sizes)
            ]
            columns.append(parts[0] if len(parts) == 1 else _ops.concatenate(parts))
        rows.append(_ops.reshape(_ops.stack(columns, axis=-1), (m,) + x.shape))
    return rows


def _jacobian_rows(c, ys, sizes):
    """For each input x, the (M, *x.shape) Jacobian of all output values (M in all)."""
    ins = c.inputs
    m = sum(sizes)
    eye = np.eye(m)
    if c.nested or _DEPTH.n > 0:  # differentiable rows, one create_graph backward per row
        per_row = []
        for r in range(m):
            cts = np.split(eye[r], np.cumsum(sizes)[:-1])
            cts = [ct.reshape(np.shape(_value(y))) for ct, y in zip(cts, ys)]
            per_row.append(c.backward(ys, cts, True))
        return [
            _ops.stack([_zeros(x.shape, True) if row[k] is None else row[k] for row in per_row])
            if m
            else None
            for k, x in enumerate(ins)
        ]
    keep = [k for k, y in enumerate(ys) if isinstance(y, Tensor) and y._rg]
    J = np.zeros((m, sum(x.size for x in ins)))
    if keep:
        starts = np.concatenate([[0], np.cumsum(sizes)])
        sel = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in keep])
        J[sel] = _sweep_all([ys[k] for k in keep], ins, len(sel))
    cols = np.concatenate([[0], np.cumsum([x.size for x in ins])])
    return [J[:, cols[k] : cols[k + 1]].reshape((m,) + x.shape) for k, x in enumerate(ins)]


def _sweep_all(ys, ins, m):
    """(m, N) Jacobian of the graph outputs ``ys``: one compiled call sweeps every cotangent;
    a custom Function on the way falls back to one Python-driven backward per row."""
    t = STATE.tape
    for i, y in enumerate(ys):
        autograd.check_root(t, y, i)
    out_rows = np.array([autograd.row_for(t, y) for y in ys], np.int64)
    top = int(out_rows.max())
    cols = np.concatenate([[0], np.cumsum([x.size for x in ins])])
    used = [k for k, x in enumerate(ins) if x._tape is t and x._row <= top]
    res = np.zeros((m, int(sum(ins[k].size for k in used))))
    status, row = R.jacobian(
        t, top, out_rows, np.eye(m), np.array([ins[k]._row for k in used], np.int64), res
    )
    J = np.zeros((m, int(cols[-1])))
    if status == K.DONE:
        ucols = np.concatenate([[0], np.cumsum([ins[k].size for k in used])])
        for j, k in enumerate(used):
            J[:, cols[k] : cols[k + 1]] = res[:, ucols[j] : ucols[j + 1]]
        autograd.release_swept(t, top)
        return J
    if status == K.HIT_FREED:
        raise RuntimeError(autograd.FREED_MSG)
    if status != K.HIT_CUSTOM:
        raise RuntimeError(
            f"tapegrad internal error: jacobian sweep stopped with status "
            f"{status} at tape row {row}"
        )
    splits = np.cumsum([y.size for y in ys])[:-1]
    for r, seed in enumerate(np.eye(m)):
        cts = [ct.reshape(y.shape) for ct, y in zip(np.split(seed, splits), ys)]
        grads = autograd.run_backward(
            ys, cts, ins, r < m - 1, False, accumulate=False, allow_unused=True
        )
        for k, g in enumerate(grads):
            if g is not None:
                J[r, cols[k] : cols[k + 1]] = g.ravel()
    return J
