"""``vmap``: a function mapped over a batch axis of its inputs, as a loop.

``func`` is called once per batch item on the item's slices of the batched inputs
(differentiable copies of basic-index views, written back into the input when ``func``
changes them in place) and each output is stacked along its out dimension (a differentiable
``stack``).  Nothing is vectorised: the cost is the batch size times one call,
and in exchange every transform composes with it (``tg.grad`` of a vmapped function, vmap of
``tg.grad``, nested vmap, ``create_graph``) and data-dependent Python inside ``func`` (an
``if`` on a value, ``.item()``) just works per item.  Two spellings share the loop:
PyTorch's ``torch.func.vmap(func, in_dims, out_dims, randomness, chunk_size)``
(``tg.func.vmap``; keyword arguments are passed unbatched) and JAX's
``jax.vmap(fun, in_axes, out_axes)`` (``tg.vmap``; keyword arguments are batched along
axis 0, as JAX's).
"""

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import pytree as _pytree
from ..core import creation as _creation
from ..core import functions as _ops
from ..core.tensor import STATE
from ..core.tensor import TensorBase as Tensor

__all__ = ["vmap", "vmap_jax"]

_UNBATCHED = object()  # a None in/out dim as a pytree leaf (None is an empty subtree)
_RANDOMNESS = ("error", "different", "same")


class _Spec:
    """The names and rules of one spelling: PyTorch's or JAX's."""

    def __init__(self, in_name, out_name, map_kwargs, containers):
        self.in_name, self.out_name = in_name, out_name
        self.map_kwargs = map_kwargs
        self.containers = containers  # the types in_dims may be at the top


_TORCH = _Spec("in_dims", "out_dims", False, (tuple,))
_JAX = _Spec("in_axes", "out_axes", True, (tuple, list))


def _func_name(func):
    return getattr(func, "__name__", repr(func))


def _is_dim(d):
    return d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))


def _dims_tree(dims, tree, prefix, what):
    """A tree with ``tree``'s structure whose leaves are the dims of ``tree``'s leaves
    (``_UNBATCHED`` for None): ``dims`` is a prefix of ``tree`` (an int or None stands for a
    whole subtree)."""
    if _is_dim(dims):
        d = _UNBATCHED if dims is None else int(dims)
        return _pytree.map_leaves(tree, lambda _: d)
    ok = (
        isinstance(dims, dict)
        and isinstance(tree, dict)
        and set(dims) == set(tree)
        or isinstance(dims, (list, tuple))
        and isinstance(tree, (list, tuple))
        and not isinstance(dims, dict)
        and len(dims) == len(tree)
    )
    if not ok:
        raise ValueError(
            f"{prefix}: {what} is not compatible with the structure of `inputs`. "
            f"{what} has structure {_structure(dims)} but inputs has structure "
            f"{_structure(tree)}."
        )
    if isinstance(tree, dict):
        return {k: _dims_tree(dims[k], tree[k], prefix, what) for k in tree}
    return tuple(_dims_tree(d, t, prefix, what) for d, t in zip(dims, tree, strict=True))


def _structure(tree):
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v)}" for k, v in tree.items()) + "}"
    if isinstance(tree, (list, tuple)):
        inner = ", ".join(_structure(v) for v in tree)
        return (
            f"({inner},)"
            if isinstance(tree, tuple) and len(tree) == 1
            else (f"({inner})" if isinstance(tree, tuple) else f"[{inner}]")
        )
    return "*"


def _batch_leaf(x):
    return isinstance(x, (Tensor, np.ndarray))


def _check_in(leaves, dims, prefix, in_name, spec):
    """The batch size of the batched leaves (PyTorch's errors for the others)."""
    sizes = []
    for x, d in zip(leaves, dims, strict=True):
        if d is _UNBATCHED:
            continue
        one = in_name[:-1] if in_name == "in_dims" else "in_axis"
        if not _batch_leaf(x):
            kind = "Tensor" if spec is _TORCH else "array"
            raise ValueError(
                f"{prefix}: Got {one}={d} for an input but the input is of type "
                f"{type(x)}. We cannot vmap over non-{kind} arguments, please use None as "
                f"the respective {one}"
            )
        n = np.ndim(x)
        if not -n <= d < n:
            raise ValueError(
                f"{prefix}: Got {one}={d} for some input, but that input is a Tensor of "
                f"dimensionality {n} so expected {one} to satisfy -{n} <= {one} < {n}."
            )
        sizes.append(int(np.shape(x)[d]))
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _item(x, d, i):
    """Batch item ``i`` of ``x`` along axis ``d`` (a view), or for ``i`` None a zero item
    (to learn the output shapes of an empty batch)."""
    d = d % np.ndim(x)
    if i is None:  # the sum over the empty batch axis: zeros, connected to x's graph
        return _ops.sum(x, axis=d) if isinstance(x, Tensor) else np.zeros_like(x.sum(axis=d))
    return x[(slice(None),) * d + (i,)]


def _rng_state():
    g = _creation.rng()
    return g, g.bit_generator.state


def _same_values(a, b):
    va = np.asarray(a._v if isinstance(a, Tensor) else a)
    vb = np.asarray(b._v if isinstance(b, Tensor) else b)
    return va.shape == vb.shape and np.array_equal(va, vb, equal_nan=va.dtype.kind in "fc")


def _stack(items, d, name, k, spec, n):
    prefix = f"vmap({name}, ...)"
    first = items[0]
    if not (isinstance(first, (Tensor, np.ndarray, np.generic))):
        if spec is _TORCH or not isinstance(first, (bool, int, float)):
            raise ValueError(
                f"{prefix}: `{name}` must only return Tensors, got type {type(first)}. Did "
                f"you mean to set {spec.out_name}= to None for output?"
            )
    nd = np.ndim(first._v if isinstance(first, Tensor) else first) + 1
    if not -nd <= d < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
        )
    shapes = {np.shape(x._v if isinstance(x, Tensor) else x) for x in items}
    if len(shapes) > 1:
        raise ValueError(
            f"{prefix}: output {k} has different shapes for different batch items "
            f"({sorted(shapes)}); vmap stacks the items, which needs one shape"
        )
    if any(isinstance(x, Tensor) for x in items):
        out = _ops.stack(items, axis=d)
    else:
        out = np.stack([np.asarray(x) for x in items], axis=d)
    if n == 0:  # the items were one call on zeros, for the shapes
        return out[(slice(None),) * (d % nd) + (slice(0, 0),)]
    return out


def _check_options(randomness, chunk_size):
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and not (
        isinstance(chunk_size, (int, np.integer))
        and not isinstance(chunk_size, bool)
        and chunk_size > 0
    ):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")


def _run(func, spec, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _func_name(func)
    prefix = f"vmap({name}, {spec.in_name}={in_dims}, ...)(<inputs>)"
    if not args and not (spec.map_kwargs and kwargs):
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
            "are trying to vmap over a function with no inputs. The latter is unsupported."
        )
    if not (_is_dim(in_dims) or isinstance(in_dims, spec.containers)):
        raise ValueError(
            f"{prefix}: expected `{spec.in_name}` to be int or a (potentially nested) tuple "
            f"matching the structure of inputs, got: {type(in_dims)}."
        )
    if in_dims is None and spec is _TORCH:
        raise ValueError(
            f"{prefix}: expected `in_dims` to be int or a (potentially nested) tuple matching "
            f"the structure of inputs, got: {type(in_dims)}."
        )
    top = tuple(in_dims) if isinstance(in_dims, list) else in_dims
    dims = _dims_tree(top, tuple(args), prefix, spec.in_name)
    mapped_kwargs = spec.map_kwargs and kwargs
    tree = (tuple(args), dict(kwargs)) if mapped_kwargs else tuple(args)
    if mapped_kwargs:
        dims = (dims, _pytree.map_leaves(kwargs, lambda _: 0))
    leaves = _pytree.leaves(tree)
    dim_leaves = _pytree.leaves(dims)
    n = _check_in(leaves, dim_leaves, prefix, spec.in_name, spec)
    # unbatched Tensor arguments, to refuse an in-place write to one (repeated per item)
    fixed = [
        (k, x, x._version)
        for k, (x, d) in enumerate(zip(leaves, dim_leaves, strict=True))
        if d is _UNBATCHED and isinstance(x, Tensor)
    ]
    g0, state0 = _rng_state()
    results = []
    for i in range(n) if n else [None]:
        if randomness == "same":
            g0.bit_generator.state = state0
        item_leaves, copies = [], []
        for x, d in zip(leaves, dim_leaves, strict=True):
            if d is _UNBATCHED:
                item_leaves.append(x)
            elif isinstance(x, Tensor) and i is not None:
                # a copy of the item, written back if func changes it in place: a view would
                # share x's version counter, so a write in a later item would invalidate what
                # an earlier item saved for its backward (PyTorch's vmap writes once)
                c = _item(x, d, i).clone()
                copies.append((x, d, c, c._version))
                item_leaves.append(c)
            else:
                item_leaves.append(_item(x, d, i))
        item = _pytree.unflatten(tree, item_leaves)
        STATE.vmapping += 1
        try:
            if mapped_kwargs:
                out = func(*item[0], **item[1])
            else:
                out = func(*item, **kwargs)
        finally:
            STATE.vmapping -= 1
        for x, d, c, version in copies:
            if c._version != version:
                _item(x, d, i).copy_(c)
        for k, x, version in fixed:
            if x._version != version:
                raise RuntimeError(
                    f"{prefix}: `{name}` wrote in place into an input that is not batched "
                    f"(input leaf {k}, shape {tuple(x.shape)}); tapegrad's vmap calls it once "
                    "per batch item, so the write would be repeated for every item (PyTorch's "
                    "vmap writes once, or refuses a batched value); write into a copy "
                    "(x.clone()) or outside vmap"
                )
        if randomness == "error":
            g1, state1 = _rng_state()
            if g1 is not g0 or state1 != state0:
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or "
                    "perform the randomness operation out of vmap"
                )
        results.append(out)
    return _assemble(results, out_dims, name, spec, n)


def _assemble(results, out_dims, name, spec, n):
    prefix = f"vmap({name}, ...)"
    first = results[0]
    is_leaf = not isinstance(first, (list, tuple, dict)) and first is not None
    if first is None:
        raise ValueError(
            f"{prefix}: `{name}` must only return Tensors, got type {type(None)}. Did you mean "
            f"to set {spec.out_name}= to None for output?"
        )
    if not (_is_dim(out_dims) or isinstance(out_dims, (tuple, list, dict))):
        raise ValueError(
            f"{prefix}: {spec.out_name} must be an int, None or a tuple of int representing "
            f"where in the outputs the vmapped dimension should appear, got {out_dims!r}"
        )
    if is_leaf and isinstance(out_dims, (tuple, list)) and len(out_dims) == 1:
        out_dims = out_dims[0]  # out_dims=(0,) for a single output, as PyTorch accepts
    try:
        dims = _dims_tree(out_dims, first, "", spec.out_name)
    except ValueError:
        raise ValueError(
            f"vmap({name}, ..., {spec.out_name}={out_dims})(<inputs>): {spec.out_name} is not "
            f"compatible with the structure of `outputs`. {spec.out_name} has structure "
            f"{_structure(out_dims)} but outputs has structure {_structure(first)}."
        ) from None
    dim_leaves = _pytree.leaves(dims)
    per_item = []
    for r in results:
        lv = _pytree.leaves(r)
        if len(lv) != len(dim_leaves) or _structure(r) != _structure(first):
            raise ValueError(
                f"{prefix}: `{name}` returned outputs of different structures for different "
                "batch items; vmap needs the same structure for every item"
            )
        per_item.append(lv)
    out_leaves = []
    for k, d in enumerate(dim_leaves):
        items = [lv[k] for lv in per_item]
        if d is _UNBATCHED:
            if not all(_same_values(items[0], x) for x in items[1:]):
                raise ValueError(
                    f"{prefix}: `{name}` can not return a BatchedTensor when out_dim is None "
                    f"(output {k} differs between batch items)"
                )
            out_leaves.append(items[0])
        else:
            out_leaves.append(_stack(items, d, name, k, spec, n))
    return _pytree.unflatten(first, out_leaves)


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """PyTorch's ``torch.func.vmap``: ``func`` mapped over dimension ``in_dims`` of its
    inputs, the outputs stacked along ``out_dims``.  Implemented as a loop over the batch
    (one call of ``func`` per item, then a differentiable stack), so it composes with every
    transform and with Python control flow in ``func``; it is not faster than the loop.

    ``in_dims``: an int, or a tuple matching the positional arguments (nested like them; an
    entry may be None: that argument is passed whole to every call; a negative dim counts
    from the end).  Keyword arguments are passed unbatched, as PyTorch's.  ``out_dims``: an
    int, or a tuple matching the outputs (None: the output must be the same for every item).
    ``randomness="error"`` raises if ``func`` draws from tapegrad's generator, ``"different"``
    draws afresh per item, ``"same"`` gives every item the same draws.  ``chunk_size`` is
    accepted (the loop runs one item at a time).  An in-place write into an unbatched
    argument raises (it would be repeated per item); one into a Tensor ``func`` reads from
    elsewhere (a closure, a module's buffer) is repeated per item, unlike PyTorch's.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> tg.func.vmap(lambda row: row.dot(row))(x)
        tensor([ 5., 25.])
        >>> tg.func.vmap(lambda a, b: a * b, in_dims=(1, None))(x, tg.tensor(10.0))
        tensor([[10., 30.],
                [20., 40.]])
    """

    _check_options(randomness, chunk_size)

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        return _run(func, _TORCH, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return vmapped


def vmap_jax(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    *,
    randomness: str = "error",
    chunk_size: int | None = None,
) -> Callable:
    """JAX's ``jax.vmap`` with its argument names (``tg.vmap``): ``fun`` mapped over axis
    ``in_axes`` of its inputs (Tensors or NumPy arrays), the outputs stacked along
    ``out_axes``.  A loop over the batch, as ``tg.func.vmap`` (which see); keyword arguments
    are batched along axis 0, as JAX's; outputs may be arrays and numbers (stacked into an
    array) or Tensors.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.vmap(tg.grad(lambda x: (x ** 3).sum()))(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([[ 3., 12.],
               [27., 48.]])
    """

    _check_options(randomness, chunk_size)

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        return _run(fun, _JAX, in_axes, out_axes, randomness, chunk_size, args, kwargs)

    return vmapped
