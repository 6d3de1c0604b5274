"""Pytree utilities (JAX's ``jax.tree_util`` / HIPS autograd's ``flatten``).

Containers, and ``None`` as an empty subtree, are those of ``tapegrad.pytree``, the one walker
the transforms and traces use too (dicts in insertion order).  ``ravel`` packs every leaf into one
flat vector and gives the function that rebuilds the tree from such a vector; on Tensors it
records ordinary differentiable ops, so it works inside ``tg.grad`` and friends.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from . import pytree as _pytree
from .core import functions as O
from .core.tensor import TensorBase as Tensor

__all__ = [
    "ravel",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "PyTreeDef",
]


class _Leaf:
    """Placeholder for a leaf in a ``PyTreeDef`` skeleton."""

    def __repr__(self):
        return "*"


_LEAF = _Leaf()


class PyTreeDef:
    """The structure of a pytree: its containers with a placeholder ``*`` at each leaf."""

    __slots__ = ("skeleton", "num_leaves")

    def __init__(self, skeleton, num_leaves):
        self.skeleton = skeleton
        self.num_leaves = num_leaves

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and _same(self.skeleton, other.skeleton)

    def __hash__(self):
        return hash(repr(self.skeleton))

    def __repr__(self):
        return f"PyTreeDef({self.skeleton!r})"


def _same(a, b):
    if a is _LEAF or b is _LEAF or a is None or b is None:
        return a is b
    if type(a) is not type(b) or len(a) != len(b):
        return False
    if isinstance(a, dict):  # in order: equal structures flatten to leaves that pair up
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return all(_same(x, y) for x, y in zip(a, b, strict=True))


def tree_flatten(tree: Any) -> tuple[list, PyTreeDef]:
    """The leaves of ``tree`` (``None`` excluded) and its structure.

    >>> from tapegrad.tree import tree_flatten, tree_unflatten
    >>> leaves, treedef = tree_flatten({"w": [1.0, 2.0], "b": None})
    >>> leaves
    [1.0, 2.0]
    >>> tree_unflatten(treedef, [10.0, 20.0])
    {'w': [10.0, 20.0], 'b': None}
    """
    out = []

    def mark(leaf):
        out.append(leaf)
        return _LEAF

    skeleton = _pytree.map_leaves(tree, mark)
    return out, PyTreeDef(skeleton, len(out))


def tree_unflatten(treedef: PyTreeDef, leaves: Any) -> Any:
    """The tree of structure ``treedef`` with ``leaves`` in order (inverse of tree_flatten).

    >>> from tapegrad.tree import tree_flatten, tree_unflatten
    >>> tree_unflatten(tree_flatten((1.0, [2.0]))[1], ["a", "b"])
    ('a', ['b'])
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: the structure {treedef} has {treedef.num_leaves} "
            f"leaves but {len(leaves)} were given"
        )
    it = iter(leaves)
    return _pytree.map_leaves(treedef.skeleton, lambda _: next(it))


def tree_leaves(tree: Any) -> list:
    """The leaves of ``tree`` in flattening order (``None`` excluded).

    >>> from tapegrad.tree import tree_leaves
    >>> tree_leaves([1.0, (2.0, None), {"a": 3.0}])
    [1.0, 2.0, 3.0]
    """
    return tree_flatten(tree)[0]


def tree_structure(tree: Any) -> PyTreeDef:
    """The structure of ``tree`` (compare two with ``==``).

    >>> from tapegrad.tree import tree_structure
    >>> tree_structure([1.0, {"a": 2.0}]) == tree_structure([5.0, {"a": 6.0}])
    True
    """
    return tree_flatten(tree)[1]


def _aligned(other, like):
    """``other`` with each dict's keys in the order of the matching dict of ``like``: tree_map
    pairs dict entries by key, as JAX (which sorts the keys) does."""
    if isinstance(other, dict) and isinstance(like, dict) and other.keys() == like.keys():
        return _pytree.dict_like(other, list(like), [_aligned(other[k], like[k]) for k in like])
    if type(other) in (list, tuple) and type(like) is type(other) and len(other) == len(like):
        return type(other)(_aligned(o, x) for o, x in zip(other, like, strict=True))
    return other


def tree_map(f: Callable, tree: Any, *rest: Any) -> Any:
    """``f`` applied leafwise to ``tree`` and the trees in ``rest`` (which must share its
    structure), in ``tree``'s structure.

    >>> import numpy as np
    >>> from tapegrad.tree import tree_map
    >>> tree_map(lambda a, b: a + b, {"w": np.ones(2), "b": 1.0}, {"w": np.ones(2), "b": 2.0})
    {'w': array([2., 2.]), 'b': 3.0}
    """
    leaves, treedef = tree_flatten(tree)
    others = []
    for k, other in enumerate(rest):
        ls, td = tree_flatten(_aligned(other, tree))
        if td != treedef:
            raise ValueError(
                f"tree_map: tree {k + 1} has structure {td}, but the first tree "
                f"has {treedef}; all trees must have the same structure"
            )
        others.append(ls)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others, strict=True)])


def _leaf_info(leaf):
    """(shape, kind, dtype) of a leaf: how unravel gives it back."""
    if isinstance(leaf, Tensor):
        return leaf.shape, "tensor", leaf.dtype
    if isinstance(leaf, (bool, int, float, complex)):
        return (), "python", np.result_type(leaf)
    a = np.asarray(leaf)
    if a.dtype.kind not in "biufc":
        raise TypeError(
            f"ravel: a leaf of type {type(leaf).__name__} (dtype {a.dtype}) is "
            "not numeric; only numbers, numeric arrays and Tensors can be raveled"
        )
    return a.shape, "scalar" if isinstance(leaf, np.generic) else "array", a.dtype


def _restore(piece, shape, kind, dtype):
    """One unraveled piece (flat, numpy) in its leaf's original form."""
    v = piece.reshape(shape)
    if kind == "tensor":
        return Tensor._const(float(v) if v.ndim == 0 else v.astype(np.float64))
    if dtype.kind in "fc" and np.can_cast(v.dtype, dtype, "same_kind"):
        v = v.astype(dtype, copy=False)  # float32 stays float32; ints stay floats (no
    if kind == "python":  # silent truncation of updated values)
        return v.item()
    if kind == "scalar":
        return v.dtype.type(v[()])
    return v


def ravel(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: every leaf of ``tree`` raveled into one 1-D vector, and the
    function that rebuilds the tree (same containers, shapes and float dtypes) from a vector.

    Integer leaves come back as floats (an update must not be truncated).  With Tensors among
    the leaves ``flat`` is a Tensor built by differentiable ops, and ``unravel`` of a Tensor
    gives Tensors, so both can be used inside ``tg.grad``.

    >>> import numpy as np
    >>> from tapegrad.tree import ravel
    >>> flat, unravel = ravel({"w": np.ones((2, 2)), "b": (3.0, None)})
    >>> flat
    array([1., 1., 1., 1., 3.])
    >>> unravel(np.arange(5.0))
    {'w': array([[0., 1.],
           [2., 3.]]), 'b': (4.0, None)}
    """
    leaves, treedef = tree_flatten(tree)
    infos = [_leaf_info(leaf) for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape, _, _ in infos]
    total = int(sum(sizes))
    if any(isinstance(leaf, Tensor) for leaf in leaves):
        flat = O.concatenate(
            [
                O.reshape(leaf, (-1,))
                if isinstance(leaf, Tensor)
                else Tensor._const(np.ravel(np.asarray(leaf, dtype=np.float64)))
                for leaf in leaves
            ]
        )
    elif leaves:
        flat = np.concatenate([np.ravel(leaf) for leaf in leaves])
    else:
        flat = np.zeros(0)
    splits = np.cumsum([0] + sizes)

    def unravel(flat_vector: Any) -> Any:
        """The tree rebuilt from a vector of the raveled size."""
        shape = flat_vector.shape if isinstance(flat_vector, Tensor) else np.shape(flat_vector)
        if shape != (total,):
            raise ValueError(
                f"unravel: expected a 1-D vector of size {total} (the raveled "
                f"tree), got shape {shape}"
            )
        if isinstance(flat_vector, Tensor):
            pieces = [
                O.reshape(flat_vector[splits[k] : splits[k + 1]], info[0])
                for k, info in enumerate(infos)
            ]
        else:
            vec = np.asarray(flat_vector)
            pieces = [
                _restore(vec[splits[k] : splits[k + 1]], *info) for k, info in enumerate(infos)
            ]
        return tree_unflatten(treedef, pieces)

    return flat, unravel
