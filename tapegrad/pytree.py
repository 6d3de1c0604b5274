"""Pytrees: the containers tapegrad's transforms and traces walk through.

Lists, tuples, dicts (and their subclasses) and namedtuples are containers; ``None`` is an
empty subtree (it holds no leaf and comes back as ``None``, as in JAX); everything else is a
leaf.  Results come back as the same types, so a
function that returns a namedtuple gets a namedtuple from ``tg.grad``, ``tg.jacobian`` and
``tg.trace`` alike.  Traces store a namedtuple's type as ``"module:qualname"`` (JSON-able);
it is found again through a registry of the types seen in this process, or by import.
"""

import copy
import importlib

__all__ = [
    "map_leaves",
    "leaves",
    "unflatten",
    "is_namedtuple",
    "type_ref",
    "namedtuple_of",
    "BadLeaf",
    "dict_like",
]


class BadLeaf(Exception):
    """Raised at a leaf; containers on the way up prepend their keys to ``path``."""

    def __init__(self, why):
        super().__init__(why)
        self.why, self.path = why, ""


def is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def map_leaves(tree, fn):
    """Apply ``fn`` to the leaves of nested lists / tuples / dicts, keeping the structure
    (``None`` stays ``None``: it is no leaf).  (Every transform call maps its arguments in
    and its gradients out: a leaf is handled in its container's loop, without a call.)"""
    if tree is None:
        return None
    if not isinstance(tree, (list, tuple, dict)):
        return fn(tree)
    is_dict = isinstance(tree, dict)
    keys = list(tree) if is_dict else None
    vals = []
    for k, v in enumerate(tree.values() if is_dict else tree):
        try:
            if v is None:
                vals.append(None)
            elif isinstance(v, (list, tuple, dict)):
                vals.append(map_leaves(v, fn))
            else:
                vals.append(fn(v))
        except BadLeaf as e:
            e.path = f"[{(keys[k] if is_dict else k)!r}]{e.path}"
            raise
    cls = tree.__class__
    if cls is tuple:
        return tuple(vals)
    if is_dict:
        return dict(zip(keys, vals, strict=True)) if cls is dict else dict_like(tree, keys, vals)
    if is_namedtuple(tree):
        return cls(*vals)
    return vals  # a list (another list or tuple type comes back as a list)


def dict_like(tree, keys, vals):
    """A dict of ``tree``'s type and attributes holding ``keys`` -> ``vals``.  A subclass
    is not rebuilt by calling it on the items: ``defaultdict``'s first argument is its
    factory, ``Counter`` would count the (key, value) pairs, and a user's subclass would lose
    its attributes (a ``d.scale`` read inside ``f`` would silently be the class default).  A
    shallow copy of ``tree``, emptied and refilled through its own methods, keeps them."""
    try:
        new = copy.copy(tree)
        new.clear()
        for k, v in zip(keys, vals, strict=True):
            new[k] = v
    except Exception as e:
        raise TypeError(
            f"a pytree dict of type {type(tree).__name__} could not be rebuilt with new "
            f"values ({type(e).__name__}: {e}); pass a plain dict"
        ) from None
    return new


def leaves(tree):
    out = []
    map_leaves(tree, out.append)
    return out


def unflatten(tree, values):
    """The structure of ``tree`` with its leaves replaced, in order, by ``values``."""
    it = iter(values)
    return map_leaves(tree, lambda _: next(it))


_TYPES = {}  # "module:qualname" -> namedtuple class seen in this process


def type_ref(obj):
    """``"module:qualname"`` of a namedtuple (registered so this process can rebuild it)."""
    cls = type(obj)
    ref = f"{cls.__module__}:{cls.__qualname__}"
    _TYPES[ref] = cls
    return ref


def _resolve(ref):
    cls = _TYPES.get(ref)
    if cls is not None:
        return cls
    try:
        mod, _, qual = ref.partition(":")
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
            _TYPES[ref] = obj
            return obj
    except (ImportError, AttributeError, ValueError):
        pass
    return None


def namedtuple_of(ref, items):
    """``items`` as the namedtuple type ``ref`` (a plain tuple when the type cannot be found,
    e.g. a class local to a function, loaded in another process)."""
    cls = _resolve(ref) if isinstance(ref, str) else None
    if cls is None or len(cls._fields) != len(items):
        return tuple(items)
    return cls(*items)


def matched_leaves(like, other, none_is_zero=False):
    """The leaves of ``other`` in the order of ``like``'s leaves, for a tree that must have
    ``like``'s structure (a tangent for a primal, a cotangent for an output).  Dicts are
    matched by key, whatever their order; lists and tuples by position.  With
    ``none_is_zero``, ``None`` in ``other`` stands for every leaf of ``like``'s subtree (they
    come back as ``None``).  A mismatch raises ``ValueError`` naming where the trees differ."""
    out = []
    _match(like, other, none_is_zero, "", out)
    return out


def _match(like, other, none_is_zero, path, out):
    if other is None and none_is_zero:
        out.extend([None] * len(leaves(like)))
        return
    if like is None or other is None:
        if like is not other:
            raise ValueError(f"at {path or 'the top'}: expected {like!r:.40}, got {other!r:.40}")
        return
    if isinstance(like, dict):
        if not isinstance(other, dict) or set(other) != set(like):
            got = f"keys {list(other)}" if isinstance(other, dict) else type(other).__name__
            raise ValueError(
                f"at {path or 'the top'}: expected a dict with keys {list(like)}, got {got}"
            )
        for k in like:
            _match(like[k], other[k], none_is_zero, f"{path}[{k!r}]", out)
        return
    if isinstance(like, (list, tuple)):
        if not isinstance(other, (list, tuple)) or len(other) != len(like):
            got = (
                f"{type(other).__name__} of length {len(other)}"
                if isinstance(other, (list, tuple))
                else type(other).__name__
            )
            raise ValueError(
                f"at {path or 'the top'}: expected a {type(like).__name__} of length "
                f"{len(like)}, got {got}"
            )
        for k, (a, b) in enumerate(zip(like, other, strict=True)):
            _match(a, b, none_is_zero, f"{path}[{k}]", out)
        return
    if isinstance(other, (list, tuple, dict)):
        raise ValueError(
            f"at {path or 'the top'}: expected one array or float, got a "
            f"{type(other).__name__} (a container)"
        )
    out.append(other)
