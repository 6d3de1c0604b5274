"""``tg.*`` functions with PyTorch's names and meanings: ``tg.max(m, dim=1)`` is
``m.max(dim=1)``, ``tg.cat``, ``tg.from_numpy``, ``tg.as_tensor``, ``tg.all`` ...

The functions of ``tapegrad.numpy`` keep NumPy's meanings; the ``tg`` namespace is PyTorch's
(as the Tensor methods are), and takes ``dim=`` / ``keepdim=`` wherever it takes NumPy's
``axis=`` / ``keepdims=``.
"""

import functools
import inspect

import numpy as np

from . import functions as O
from . import torch_methods as P
from .methods import TensorMethods, _normalized, _numpy_code
from .tensor import TensorBase as Tensor
from .tensor import new_tensor, refuse_unsupported, shares_memory

# dtypes under PyTorch's names (NumPy dtypes: tg.tensor(x, dtype=tg.float64), x.to(tg.int64))
float64 = double = np.dtype(np.float64)
float32 = np.dtype(np.float32)
int64 = long = np.dtype(np.int64)
int32 = np.dtype(np.int32)


_REDUCTIONS = frozenset(("sum", "mean", "prod", "amax", "amin"))
_TORCH_DIMS = _REDUCTIONS | {"logsumexp"}  # dims checked and wrapped as PyTorch's
_NORMALIZED = frozenset(("softmax", "log_softmax"))


def with_dim(fn):
    """``fn`` (NumPy's ``axis=`` / ``keepdims=``) also taking PyTorch's ``dim=`` /
    ``keepdim=``, and a reduction PyTorch's ``dtype=`` (the input cast first).  A reduction
    over no dims (``dim=()`` or ``[]``) is over every dim, as in PyTorch, except inside NumPy
    code without ``dim=`` (NumPy's ``axis=()`` reduces over none), as the methods read it.
    PyTorch's dims are checked and wrapped as PyTorch's (``P.wrap_dim``: a 0-d tensor has dim
    0 / -1; out of range an IndexError naming the op, the dim and the shape), for the
    reductions, softmax / log_softmax and unsqueeze."""
    reduction = fn.__name__ in _REDUCTIONS
    torch_dims = fn.__name__ in _TORCH_DIMS

    def axes(args, dim):  # PyTorch's dims of the reduction of args[0], as an axis
        x = args[0] if args else None
        shape = np.shape(x._v if isinstance(x, Tensor) else x)
        out = P.torch_axes(dim, shape, fn.__name__)
        if fn.__name__ in ("amax", "amin") and isinstance(x, Tensor):
            P.nonempty_lanes(x, out, fn.__name__)
        return out

    @functools.wraps(fn)
    def call(*args, dim=None, keepdim=None, **kwargs):
        if not args:
            first = "tensors" if fn.__name__ in ("stack", "concatenate") else "input"
            raise TypeError(f"tg.{fn.__name__}: missing its first argument, {first}")
        if fn.__name__ in _NORMALIZED and (dim is not None or not _numpy_code()):
            # PyTorch's softmax (a 0-d input's dim 0 / -1 too, dims checked as PyTorch's)
            if dim is not None and (len(args) > 1 or "axis" in kwargs):
                raise TypeError(f"{fn.__name__}: give dim= or axis=, not both")
            axis = dim if dim is not None else args[1] if len(args) > 1 else kwargs.get("axis", -1)
            if isinstance(axis, (int, np.integer)):  # (SciPy's tuple of axes: fn's own)
                return _normalized(fn, args[0], axis, kwargs.get("dtype"))
        if fn.__name__ in ("stack", "concatenate") and not _numpy_code():
            axis = dim if dim is not None else args[1] if len(args) > 1 else kwargs.get("axis", 0)
            _check_list_dim(args[0], axis, "stack" if fn.__name__ == "stack" else "cat")
        if fn.__name__ == "expand_dims" and dim is None and len(args) == 2:
            if isinstance(args[1], (int, np.integer)) and not _numpy_code():
                args, dim = args[:1], args[1]  # tg.unsqueeze(x, 2): PyTorch's dim
        if fn.__name__ == "expand_dims" and isinstance(dim, (int, np.integer)):
            x = args[0]  # PyTorch's unsqueeze range, -ndim - 1 .. ndim
            dim = P.wrap_dim(dim, np.shape(x._v if isinstance(x, Tensor) else x), "unsqueeze", 1)
        dtype = kwargs.pop("dtype", None) if reduction else None
        if dtype is not None:  # the input cast first, as PyTorch's
            args = (P.convert(_as_tensor_arg(args[0]), dtype), *args[1:])
        if dim is not None:
            if "axis" in kwargs:
                raise TypeError(f"{fn.__name__}: give dim= or axis=, not both")
            kwargs["axis"] = axes(args, dim) if torch_dims else _listed(dim)
        elif torch_dims and not _numpy_code():
            if len(args) > 1:
                args = (args[0], axes(args, args[1]), *args[2:])
            elif "axis" in kwargs:
                kwargs["axis"] = axes(args, kwargs["axis"])
        if keepdim is not None:
            kwargs["keepdims"] = keepdim
        return fn(*args, **kwargs)

    return call


def torch_scan(scan):
    """``tg.cumsum`` / ``tg.cumprod``: PyTorch's ``(input, dim, *, dtype=None)`` outside NumPy
    code: a positional dim is PyTorch's (a 0-d tensor's dim 0 keeps its shape (), NumPy's
    axis 0 gives (1,)), an integer or boolean input scans exactly to int64 (the method's), and
    ``dtype=`` casts the input first.  Inside NumPy code, and for
    ``np.cumsum`` on a Tensor (dispatched to ``scan`` itself), NumPy's axis."""

    name = scan.__name__

    @functools.wraps(scan)
    def call(*args, dim=None, dtype=None, **kwargs):
        if not args:
            raise TypeError(f"tg.{name}: missing its first argument, input")
        if len(args) == 2 and dim is None and args[1] is not None and not _numpy_code():
            args, dim = args[:1], args[1]
        if dim is not None and len(args) == 1 and not kwargs and not _numpy_code():
            # the method's: an integer or boolean input scans exactly, to int64 (PyTorch's)
            return getattr(_as_tensor_arg(args[0]), name)(dim, dtype=dtype)
        if dtype is not None:
            args = (P.convert(_as_tensor_arg(args[0]), dtype), *args[1:])
        return scan(*args, dim=dim, **kwargs)

    return call


def torch_keywords(fn, names, label=None):
    """``fn`` also taking PyTorch's keyword names ``names`` for its leading positional
    parameters: ``tg.exp(input=x)``, ``tg.pow(x, exponent=2)``, ``tg.stack(tensors=[a, b])``,
    ``tg.where(condition=c, input=x, other=y)``, ``tg.transpose(x, dim0=0, dim1=1)``."""
    if not names:
        return fn
    keys, label = frozenset(names), label or fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs and not keys.isdisjoint(kwargs):
            args = list(args)
            for i, name in enumerate(names):
                if name not in kwargs:
                    continue
                if i < len(args):
                    raise TypeError(f"tg.{label}: got multiple values for {name!r}")
                if i > len(args):
                    raise TypeError(
                        f"tg.{label}: {name}= given without {names[len(args)]!r} "
                        f"(PyTorch's order: {', '.join(names)})"
                    )
                args.append(kwargs.pop(name))
        return fn(*args, **kwargs)

    return call


# the names PyTorch gives the leading arguments of tg's functions whose own names are NumPy's
# (x, x1, x2, xs, a, cond ...); a function of one argument ``x`` takes ``input=``
_TORCH_NAMES = {
    **dict.fromkeys(
        (
            "sum mean prod amax amin logsumexp softmax log_softmax unsqueeze expand_dims diff "
            "cumsum cumprod logcumsumexp angle round around nan_to_num quantile"
        ).split(),
        ("input",),
    ),
    **dict.fromkeys(
        (
            "mul matmul arctan2 atan2 fmod hypot logaddexp logaddexp2 maximum minimum remainder"
        ).split(),
        ("input", "other"),
    ),
    "pow": ("input", "exponent"),
    "dot": ("input", "tensor"),
    "outer": ("input", "vec2"),
    "stack": ("tensors",),
    "concatenate": ("tensors",),
    "where": ("condition", "input", "other"),
    "reshape": ("input", "shape"),
    "broadcast_to": ("input", "size"),
    "transpose": ("input", "dim0", "dim1"),
    "tensordot": ("a", "b"),
    "polygamma": ("n", "input"),
}


def _parameter_names(f):
    """The names of ``f``'s parameters, from its code object (``inspect.signature`` costs
    ~20 us a function, at every ``import tapegrad``; a wrapper is asked for its signature)."""
    code = getattr(f, "__code__", None)
    if code is None or hasattr(f, "__wrapped__"):
        try:
            return tuple(inspect.signature(f).parameters)
        except (TypeError, ValueError):
            return None
    names, pos, kw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    star = bool(code.co_flags & inspect.CO_VARARGS)
    starstar = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    # (signature's order: positional, *args, keyword-only, **kwargs)
    return (
        names[:pos]
        + names[pos + kw : pos + kw + star]
        + names[pos : pos + kw]
        + names[pos + kw + star : pos + kw + star + starstar]
    )


def torch_keyword_names(namespace):
    """Rebind the functions of ``namespace`` (tapegrad's) to take PyTorch's keyword names
    (``torch_keywords``); ``np.exp`` & co. dispatch to the functions themselves."""
    for name, f in list(namespace.items()):
        if name.startswith("_") or not inspect.isfunction(f):
            continue
        params = _parameter_names(f)
        if params is None:
            continue
        names = _TORCH_NAMES.get(name)
        if names is None:
            names = ("input",) if params == ("x",) else None
        # (the generated elementwise functions take PyTorch's names themselves: no wrapper
        # call on the hot path)
        if names and params[: len(names)] != names:
            g = namespace[name] = torch_keywords(f, names, name)
            g.__module__, g.__qualname__ = namespace["__name__"], name  # (pickled by name)


def _check_list_dim(tensors, dim, name):
    """PyTorch's range for the ``dim`` of ``tg.stack`` / ``tg.cat`` of ``tensors``: out of
    range an IndexError (NumPy's AxisError) naming the op, the dim and the first shape."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        return
    if not isinstance(tensors, (list, tuple)) or not tensors:
        return
    first = tensors[0]
    shape = np.shape(first._v if isinstance(first, Tensor) else first)
    P.wrap_dim(dim, shape, f"tg.{name}", 1 if name == "stack" else 0)


def _listed(dim):
    return tuple(dim) if isinstance(dim, list) else dim


def _as_tensor_arg(x):
    return x if isinstance(x, Tensor) else O.tensor_of(x)


def max(input, *args, **kwargs):  # noqa: A001 - PyTorch's name
    """``tg.max(x)``, ``tg.max(x, dim, keepdim=False)`` -> ``(values, indices)``,
    ``tg.max(x, other)``: ``x.max(...)`` (PyTorch's meanings).

    >>> import tapegrad as tg
    >>> tg.max(tg.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=1)
    max(values=tensor([3., 4.]), indices=tensor([1, 0]))
    """
    return P._max(_as_tensor_arg(input), *args, **kwargs)


def min(input, *args, **kwargs):  # noqa: A001 - PyTorch's name
    """``tg.min(x, ...)`` is ``x.min(...)`` (PyTorch's meanings).

    >>> import tapegrad as tg
    >>> tg.min(tg.tensor([[1.0, 3.0], [4.0, 2.0]]), 0).indices
    tensor([0, 1])
    """
    return P._min(_as_tensor_arg(input), *args, **kwargs)


def all_(input, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, out=None):  # noqa: A002
    """``tg.all(input, dim=None, keepdim=False)``: PyTorch's ``torch.all``, whether every
    element (along ``dim``) is nonzero, a boolean Tensor (``input.all(dim, keepdim)``).

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1.0, 0.0], [2.0, 3.0]])
    >>> tg.all(x), tg.all(x, dim=1)
    (tensor(False), tensor([False,  True]))
    """
    if out is not None:
        raise TypeError("tg.all: out= is not supported; use the returned Tensor")
    return _as_tensor_arg(input).all(dim, keepdim)


def any_(input, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, out=None):  # noqa: A002
    """``tg.any(input, dim=None, keepdim=False)``: PyTorch's ``torch.any``, whether some
    element (along ``dim``) is nonzero, a boolean Tensor (``input.any(dim, keepdim)``).

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1.0, 0.0], [0.0, 0.0]])
    >>> tg.any(x), tg.any(x, 1, keepdim=True)
    (tensor(True), tensor([[ True],
            [False]]))
    """
    if out is not None:
        raise TypeError("tg.any: out= is not supported; use the returned Tensor")
    return _as_tensor_arg(input).any(dim, keepdim)


all_.__name__ = all_.__qualname__ = "all"
any_.__name__ = any_.__qualname__ = "any"


def std(input, *args, **kwargs):
    """``tg.std(x, dim=None, unbiased=True, keepdim=False, *, correction=1)``: PyTorch's
    unbiased standard deviation, ``x.std(...)`` (``tnp.std`` keeps NumPy's ddof=0).

    >>> import tapegrad as tg
    >>> tg.std(tg.tensor([1.0, 3.0])).item(), tg.std(tg.tensor([1.0, 3.0]), correction=0).item()
    (1.4142135623730951, 1.0)
    """
    return P._std(_as_tensor_arg(input), *args, **kwargs)


def var(input, *args, **kwargs):
    """``tg.var(x, ...)``: PyTorch's unbiased variance, ``x.var(...)``.

    >>> import tapegrad as tg
    >>> tg.var(tg.tensor([1.0, 3.0])).item()
    2.0
    """
    return P._var(_as_tensor_arg(input), *args, **kwargs)


def sort(input, *args, **kwargs):
    """``tg.sort(x, dim=-1, descending=False)`` -> ``(values, indices)``, ``x.sort(...)``.

    >>> import tapegrad as tg
    >>> tg.sort(tg.tensor([3.0, 1.0, 2.0])).values
    tensor([1., 2., 3.])
    """
    return P._sort(_as_tensor_arg(input), *args, **kwargs)


def median(input, *args, **kwargs):
    """``tg.median(x)`` / ``tg.median(x, dim)``: PyTorch's median, ``x.median(...)`` (the lower
    middle value; ``tnp.median`` is NumPy's, which averages the two).

    >>> import tapegrad as tg
    >>> tg.median(tg.tensor([3.0, 1.0, 2.0, 4.0]))
    tensor(2.)
    """
    return P._median(_as_tensor_arg(input), *args, **kwargs)


def norm(input, *args, **kwargs):
    """``tg.norm(x, p="fro", dim=None, keepdim=False)``: PyTorch's vector norm, ``x.norm(...)``
    (``tnp.linalg.norm`` is NumPy's, with its matrix norms).

    >>> import tapegrad as tg
    >>> tg.norm(tg.tensor([[1.0, -2.0], [2.0, 4.0]]), 1)
    tensor(9.)
    """
    return P._norm(_as_tensor_arg(input), *args, **kwargs)


def argsort(input, *args, **kwargs):
    """``tg.argsort(x, dim=-1, descending=False)``: ``x.argsort(...)``.

    >>> import tapegrad as tg
    >>> tg.argsort(tg.tensor([3.0, 1.0, 2.0]), descending=True)
    tensor([0, 2, 1])
    """
    return P._argsort(_as_tensor_arg(input), *args, **kwargs)


def argmax(input, *args, **kwargs):
    """``tg.argmax(x, dim=None, keepdim=False)``: ``x.argmax(...)``.

    >>> import tapegrad as tg
    >>> tg.argmax(tg.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=1)
    tensor([1, 0])
    """
    return P._argmax(_as_tensor_arg(input), *args, **kwargs)


def argmin(input, *args, **kwargs):
    """``tg.argmin(x, dim=None, keepdim=False)``: ``x.argmin(...)``.

    >>> import tapegrad as tg
    >>> tg.argmin(tg.tensor([3.0, 1.0, 2.0])).item()
    1
    """
    return P._argmin(_as_tensor_arg(input), *args, **kwargs)


def cat(tensors, dim=0, *, axis=None):
    """``tg.cat(tensors, dim=0)``: PyTorch's name for ``tg.concatenate``.

    >>> import tapegrad as tg
    >>> a = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = tg.cat([a, tg.tensor([3.0])]); y
    tensor([1., 2., 3.], grad_fn=<CatBackward0>)
    >>> (y * y).sum().backward(); a.grad
    tensor([2., 4.])
    """
    dim = P._dim(dim, axis, "cat")
    _check_list_dim(tensors, dim, "cat")
    return O.concatenate(tensors, dim)


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """``tg.clamp(x, min=None, max=None)`` (also ``tg.clip``): ``x.clamp(min, max)``,
    PyTorch's; np.clip's rules inside NumPy code.

    >>> import tapegrad as tg
    >>> tg.clamp(tg.tensor([-2.0, 0.5, 3.0]), min=0.0)
    tensor([0.0000, 0.5000, 3.0000])
    """
    if _numpy_code():  # np.clip's rules, as NumPy code computes on arrays
        if min is None and max is None:
            raise ValueError("clamp: at least one of min= and max= must be given")
        return O.clip(input, min, max)
    return P.clamp(_as_tensor_arg(input), min, max)


def add(input, other, *, alpha=1):
    """``tg.add(x, y, alpha=1)``: x + alpha * y (PyTorch's ``alpha=``), NumPy broadcasting.

    >>> import tapegrad as tg
    >>> tg.add(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]), alpha=10)
    tensor([11., 12.])
    """
    return O.add(input, other if alpha == 1 else O.mul(other, alpha))


def sub(input, other, *, alpha=1):
    """``tg.sub(x, y, alpha=1)``: x - alpha * y (PyTorch's ``alpha=``), NumPy broadcasting.

    >>> import tapegrad as tg
    >>> tg.sub(tg.tensor([1.0, 2.0]), 1.0, alpha=2)
    tensor([-1.,  0.])
    """
    return O.sub(input, other if alpha == 1 else O.mul(other, alpha))


def div(input, other, *, rounding_mode=None):
    """``tg.div(x, y, rounding_mode=None)``: x / y; ``"trunc"`` or ``"floor"`` rounds the
    quotient (exact for integers), as ``x.div(y, rounding_mode=...)``.

    >>> import tapegrad as tg
    >>> tg.div(tg.tensor([7.0, -7.0]), 2.0, rounding_mode="trunc")
    tensor([ 3., -3.])
    """
    if rounding_mode is None:
        return O.div(input, other)
    return P._div(_as_tensor_arg(input), other, rounding_mode=rounding_mode)


_MISSING = object()


def nonzero_alone(where):
    """``where`` (``(condition, x, y)``, an elementwise choice) also taking the condition
    alone, as PyTorch's and NumPy's do: the indices of its nonzero elements, one int64 Tensor
    per dim (``x.nonzero(as_tuple=True)``)."""

    @functools.wraps(where)
    def call(condition, x=_MISSING, y=_MISSING):
        if x is _MISSING and y is _MISSING:
            return P._nonzero(_as_tensor_arg(condition), as_tuple=True)
        if x is _MISSING or y is _MISSING:
            raise TypeError(
                "where: give both x and y, or the condition alone (its nonzero indices)"
            )
        return P.where_keeping_dtype(where, condition, x, y)

    return call


def operand_list(einsum):
    """``einsum`` also taking PyTorch's operands as one list (``tg.einsum("ij,jk", [a, b])``)
    outside NumPy code (where a list is one array operand, as NumPy reads it)."""

    @functools.wraps(einsum)
    def call(*args, **kwargs):
        if args and not isinstance(args[0], str):
            args = _sublist_equation(args)
        if len(args) == 2 and isinstance(args[0], str) and not _numpy_code():
            ops = args[1]
            if isinstance(ops, (list, tuple)) and ops and all(isinstance(o, Tensor) for o in ops):
                args = (args[0], *ops)
        return einsum(*args, **kwargs)

    return call


def _sublist_equation(args):
    """PyTorch's and NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as the
    equation form ``("ab,bc->ac", a, b)`` (integers name subscripts, ``...`` an ellipsis)."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def subscripts(sub):
        if isinstance(sub, Tensor) or not isinstance(sub, (list, tuple)):
            raise TypeError(
                "einsum: the sublist form takes operands each followed by a list of integer "
                f"subscripts, got {type(sub).__name__} in a subscript's place"
            )
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < len(letters):
                out.append(letters[s])
            else:
                raise ValueError(f"einsum: a subscript must be an integer in [0, 52), got {s!r}")
        return "".join(out)

    operands = args[0::2][: len(args) // 2]
    inputs = ",".join(subscripts(sub) for sub in args[1::2][: len(args) // 2])
    equation = inputs + ("->" + subscripts(args[-1]) if len(args) % 2 else "")
    return (equation, *operands)


def dims_keyword(tensordot):
    """``tensordot`` also taking PyTorch's ``dims=`` for NumPy's ``axes=``."""

    @functools.wraps(tensordot)
    def call(a, b, *args, dims=None, **kwargs):
        if dims is not None:
            if args or "axes" in kwargs:
                raise TypeError("tensordot: give dims= or axes=, not both")
            kwargs["axes"] = dims
        return tensordot(a, b, *args, **kwargs)

    return call


_NUMPY_QUANTILE_KEYWORDS = frozenset(
    ("axis", "out", "overwrite_input", "method", "keepdims", "weights")
)


def torch_quantile(numpy_quantile):
    """``tg.quantile``: PyTorch's ``(input, q, dim=None, keepdim=False, *,
    interpolation="linear")`` on a Tensor (``x.quantile``); NumPy's ``numpy_quantile`` inside
    NumPy code, on arrays, and when called with NumPy's keywords (``axis=``, ``method=`` ...)."""

    @functools.wraps(numpy_quantile)
    def call(a, q, *args, **kwargs):
        torch_form = "dim" in kwargs or "keepdim" in kwargs
        numpy_form = not _NUMPY_QUANTILE_KEYWORDS.isdisjoint(kwargs)
        if numpy_form or not isinstance(a, Tensor) or (_numpy_code() and not torch_form):
            return numpy_quantile(a, q, *args, **kwargs)
        return P._quantile(a, q, *args, **kwargs)

    return call


def torch_vectors(function):
    """``tg.dot`` / ``tg.outer``: PyTorch's, of two 1-D Tensors, outside NumPy code (NumPy's
    ``function``, which reads a matrix as a matrix product or flattens it, a number where
    torch.dot / torch.outer raise); NumPy's inside NumPy code and on arrays."""
    name = function.__name__

    @functools.wraps(function)
    def call(x, y, *args, **kwargs):
        if (isinstance(x, Tensor) or isinstance(y, Tensor)) and not _numpy_code():
            if np.ndim(x) != 1 or np.ndim(y) != 1:
                raise RuntimeError(
                    f"tg.{name}: 1-D tensors expected, got shapes {np.shape(x)} and "
                    f"{np.shape(y)} (as torch.{name}); for NumPy's meaning call np.{name}, "
                    "for a matrix product x @ y"
                )
        return function(x, y, *args, **kwargs)

    return call


def torch_nan_to_num(numpy_nan_to_num):
    """``tg.nan_to_num(x, nan, posinf, neginf)``: PyTorch's positional order on a Tensor
    outside NumPy code (NumPy's second positional argument is ``copy``: tg.nan_to_num(x,
    1.0, 9.0) put 9 for NaN); NumPy's signature inside NumPy code and on arrays."""

    @functools.wraps(numpy_nan_to_num)
    def call(x, *args, **kwargs):
        if args and isinstance(x, Tensor) and not _numpy_code():
            if len(args) > 3:
                raise TypeError("nan_to_num(input, nan=0.0, posinf=None, neginf=None)")
            for key, value in zip(("nan", "posinf", "neginf"), args, strict=False):
                if key in kwargs:
                    raise TypeError(f"nan_to_num: {key} given twice")
                kwargs[key] = value
            args = ()
            if kwargs["nan"] is None:  # (PyTorch's nan=None: its default, 0)
                kwargs["nan"] = 0.0
        return numpy_nan_to_num(x, *args, **kwargs)

    return call


def recorder(trace):
    """``tg.trace(f, *example_args)``, tapegrad's recorder, refusing a Tensor or an array in
    the place of ``f`` with a message naming the matrix trace (PyTorch's ``torch.trace``)."""

    @functools.wraps(trace)
    def call(f, *args, **kwargs):
        if isinstance(f, (Tensor, np.ndarray)):
            raise TypeError(
                "tg.trace(f, *example_args) records the function f for replay; it is not "
                "PyTorch's torch.trace. For the trace of a matrix use x.trace(), np.trace(x) "
                "or tnp.linalg.trace(x)"
            )
        return trace(f, *args, **kwargs)

    return call


def from_numpy(array: np.ndarray) -> Tensor:
    """A Tensor sharing ``array``'s memory (as PyTorch's): writes through either show in
    both, and its dtype is kept.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> a = np.array([1.0, 2.0]); t = tg.from_numpy(a)
    >>> a[0] = 5.0; t
    tensor([5., 2.])
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    refuse_unsupported(array, "from_numpy: the array")
    if array.dtype.kind not in "fiub":
        raise TypeError(
            f"from_numpy: arrays of dtype {array.dtype} are not supported (float, integer or "
            "bool arrays are)"
        )
    if array.ndim == 0:
        return new_tensor(array)
    return shares_memory(Tensor._const(array))


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a Tensor without a copy when it already is one (of ``dtype``) or a NumPy
    array of that dtype; otherwise a new Tensor, as ``tg.tensor``.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> x = tg.tensor([1.0, 2.0]); tg.as_tensor(x) is x
    True
    >>> tg.as_tensor([1, 2], dtype=tg.float64)
    tensor([1., 2.])
    """
    if device is not None:
        P._device("as_tensor", device)
    if isinstance(data, Tensor):
        return data if dtype is None else P.convert(data, dtype)
    if isinstance(data, np.ndarray) and data.ndim and (dtype is None or data.dtype == dtype):
        refuse_unsupported(data, "as_tensor: the data")
        if data.dtype.kind in "fiub":
            return from_numpy(
                data if data.dtype.kind != "f" else data.astype(np.float64, copy=False)
            )
    return new_tensor(data, dtype=dtype)


def transpose(input, *dims, axes=None):
    """``tg.transpose(x, dim0, dim1)``: PyTorch's, the two dims swapped (a view, as
    ``x.transpose(dim0, dim1)``); ``tg.transpose(x)`` and ``tg.transpose(x, axes)`` keep
    NumPy's meaning (the axes reversed, or permuted as ``axes`` says).

    >>> import tapegrad as tg
    >>> x = tg.zeros(2, 3, 4)
    >>> tg.transpose(x, 0, 1).shape, tg.transpose(x).shape, tg.transpose(x, (1, 2, 0)).shape
    ((3, 2, 4), (4, 3, 2), (3, 4, 2))
    """
    x = _as_tensor_arg(input)
    if len(dims) == 2 and all(isinstance(d, (int, np.integer)) for d in dims):
        if axes is not None:
            raise TypeError("tg.transpose: give dim0, dim1 or axes=, not both")
        return x.transpose(int(dims[0]), int(dims[1]))
    if len(dims) > 1:
        raise TypeError(
            f"tg.transpose: takes (x, dim0, dim1) with two int dims, or NumPy's (x, axes); "
            f"got {dims}"
        )
    if dims:
        if axes is not None:
            raise TypeError("tg.transpose: give axes positionally or as axes=, not both")
        axes = dims[0]
    return O.transpose(x, None if axes is None else tuple(axes))


def squeeze(input, dim=None, *, axis=None):
    """``tg.squeeze(x, dim=None)``: PyTorch's, ``x.squeeze(dim)``: the dims of size 1 dropped
    (all of them, or those of ``dim``); a named dim of another size is left as it is.

    >>> import tapegrad as tg
    >>> x = tg.zeros(1, 2)
    >>> tg.squeeze(x).shape, tg.squeeze(x, 1).shape, tg.squeeze(x, dim=0).shape
    ((2,), (1, 2), (2,))
    """
    return _as_tensor_arg(input).squeeze(dim=P._dim(dim, axis, "squeeze"))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:  # noqa: A002
    return P._bucketize(input, boundaries, out_int32=out_int32, right=right)


bucketize.__doc__ = P._bucketize.__doc__


def _method_function(name, method=None):
    """``tg.<name>(input, ...)``: ``input.<name>(...)`` (PyTorch's functions of the Tensor
    methods), documented with the method's example (``method``: one defined above this
    layer)."""

    def f(input, *args, **kwargs):
        return getattr(_as_tensor_arg(input), name)(*args, **kwargs)

    method = method or getattr(TensorMethods, name, None) or getattr(Tensor, name)
    f.__name__ = f.__qualname__ = name
    usage = f"``tg.{name}(input, ...)`` is ``input.{name}(...)``."
    f.__doc__ = f"{usage}\n\n{inspect.cleandoc(method.__doc__)}"
    return f


addbmm = _method_function("addbmm")
addcdiv = _method_function("addcdiv")
addcmul = _method_function("addcmul")
addmm = _method_function("addmm")
addmv = _method_function("addmv")
addr = _method_function("addr")
allclose = _method_function("allclose")
aminmax = _method_function("aminmax")
argwhere = _method_function("argwhere")
baddbmm = _method_function("baddbmm")
bmm = _method_function("bmm")
chunk = _method_function("chunk")
clamp_max = _method_function("clamp_max")
clamp_min = _method_function("clamp_min")
count_nonzero = _method_function("count_nonzero")
cross = _method_function("cross")
cummax = _method_function("cummax")
cummin = _method_function("cummin")
diag = _method_function("diag")
diag_embed = _method_function("diag_embed")
diagflat = _method_function("diagflat")
divide = _method_function("divide")
dsplit = _method_function("dsplit")
eq = _method_function("eq")
equal = _method_function("equal")
fix = _method_function("fix")
flatten = _method_function("flatten")
flip = _method_function("flip")
fliplr = _method_function("fliplr")
flipud = _method_function("flipud")
float_power = _method_function("float_power")
floor_divide = _method_function("floor_divide")
fmax = _method_function("fmax")
fmin = _method_function("fmin")
frac = _method_function("frac")
gather = _method_function("gather")
ge = _method_function("ge")
ger = _method_function("ger")
greater = _method_function("greater")
greater_equal = _method_function("greater_equal")
gt = _method_function("gt")
histc = _method_function("histc")
hsplit = _method_function("hsplit")
index_add = _method_function("index_add")
index_copy = _method_function("index_copy")
index_fill = _method_function("index_fill")
index_put = _method_function("index_put")
index_select = _method_function("index_select")
inner = _method_function("inner")
is_floating_point = _method_function("is_floating_point")
isclose = _method_function("isclose")
isfinite = _method_function("isfinite")
isinf = _method_function("isinf")
isnan = _method_function("isnan")
isneginf = _method_function("isneginf")
isposinf = _method_function("isposinf")
kron = _method_function("kron")
kthvalue = _method_function("kthvalue")
le = _method_function("le")
lerp = _method_function("lerp")
less = _method_function("less")
less_equal = _method_function("less_equal")
logical_and = _method_function("logical_and")
logical_not = _method_function("logical_not")
logical_or = _method_function("logical_or")
logical_xor = _method_function("logical_xor")
logit = _method_function("logit")
lt = _method_function("lt")
masked_fill = _method_function("masked_fill")
masked_scatter = _method_function("masked_scatter")
masked_select = _method_function("masked_select")
mode = _method_function("mode")
mm = _method_function("mm")
moveaxis = _method_function("moveaxis")
movedim = _method_function("movedim")
msort = _method_function("msort")
multiply = _method_function("multiply")
mv = _method_function("mv")
nanmean = _method_function("nanmean")
nanmedian = _method_function("nanmedian")
nanquantile = _method_function("nanquantile")
nansum = _method_function("nansum")
narrow = _method_function("narrow")
ne = _method_function("ne")
negative = _method_function("negative")
not_equal = _method_function("not_equal")
numel = _method_function("numel")
permute = _method_function("permute")
positive = _method_function("positive")


def put(input, index, source, accumulate: bool = False) -> Tensor:  # noqa: A002
    return P._torch_put(_as_tensor_arg(input), index, source, accumulate)


put.__doc__ = (
    f"``tg.put(input, ...)`` is ``input.put(...)``.\n\n{inspect.cleandoc(P._torch_put.__doc__)}"
)


repeat_interleave = _method_function("repeat_interleave")


def _repeats_alone(function):
    """``tg.repeat_interleave(repeats)`` (PyTorch's form without the input): each index
    ``i`` repeated ``repeats[i]`` times, ``arange(len(repeats)).repeat_interleave(repeats)``."""

    @functools.wraps(function)
    def call(input, *args, **kwargs):
        if not args and "repeats" not in kwargs:
            repeats = _as_tensor_arg(input)
            if repeats.ndim != 1 or repeats.dtype.kind not in "iu":
                raise RuntimeError(
                    "repeat_interleave: repeats alone must be a 1-D integer tensor, got "
                    f"shape {repeats.shape} of dtype {repeats.dtype}"
                )
            return new_tensor(np.arange(len(repeats))).repeat_interleave(repeats)
        return function(input, *args, **kwargs)

    return call


repeat_interleave = _repeats_alone(repeat_interleave)
roll = _method_function("roll")
rot90 = _method_function("rot90")
rsqrt = _method_function("rsqrt")
scatter = _method_function("scatter")
scatter_add = _method_function("scatter_add")
scatter_reduce = _method_function("scatter_reduce")
searchsorted = _method_function("searchsorted")
select = _method_function("select")
sgn = _method_function("sgn")
signbit = _method_function("signbit")
split = _method_function("split")
std_mean = _method_function("std_mean")
subtract = _method_function("subtract")
swapaxes = _method_function("swapaxes")
swapdims = _method_function("swapdims")
take_along_dim = _method_function("take_along_dim")
tensor_split = _method_function("tensor_split")
tile = _method_function("tile")
topk = _method_function("topk")
tril = _method_function("tril")
triu = _method_function("triu")
true_divide = _method_function("true_divide")
unbind = _method_function("unbind")
unflatten = _method_function("unflatten")
unique = _method_function("unique")
unique_consecutive = _method_function("unique_consecutive")
var_mean = _method_function("var_mean")
vsplit = _method_function("vsplit")
xlogy = _method_function("xlogy")

# PyTorch's functions of the Tensor methods added with their in-place variants
absolute = _method_function("absolute")
adjoint = _method_function("adjoint")
copysign = _method_function("copysign")
heaviside = _method_function("heaviside")
frexp = _method_function("frexp")
ldexp = _method_function("ldexp")
nextafter = _method_function("nextafter")
gcd = _method_function("gcd")
lcm = _method_function("lcm")
bitwise_and = _method_function("bitwise_and")
bitwise_or = _method_function("bitwise_or")
bitwise_xor = _method_function("bitwise_xor")
bitwise_not = _method_function("bitwise_not")
bitwise_left_shift = _method_function("bitwise_left_shift")
bitwise_right_shift = _method_function("bitwise_right_shift")
matrix_power = _method_function("matrix_power")
matrix_exp = _method_function("matrix_exp")
renorm = _method_function("renorm")
vdot = _method_function("vdot")
cov = _method_function("cov")
corrcoef = _method_function("corrcoef")
bincount = _method_function("bincount")
histogram = _method_function("histogram")
mvlgamma = _method_function("mvlgamma")
lgamma = _method_function("lgamma")
split_with_sizes = _method_function("split_with_sizes")
slice_scatter = _method_function("slice_scatter")
select_scatter = _method_function("select_scatter")
diagonal_scatter = _method_function("diagonal_scatter")
index_reduce = _method_function("index_reduce")
is_complex = _method_function("is_complex")
is_signed = _method_function("is_signed")
is_same_size = _method_function("is_same_size")
is_nonzero = _method_function("is_nonzero")
isreal = _method_function("isreal")
