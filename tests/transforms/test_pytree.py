"""``map_leaves``, which every transform call runs over its arguments and its gradients: the
structure and container types come back, ``None`` stays an empty subtree, and a bad leaf is
named by its path."""

import collections

import pytest

from tapegrad import pytree

P = collections.namedtuple("P", "a b")


def test_structure_and_types_come_back():
    tree = {
        "x": [1.0, (2.0, None), P(3.0, [4.0])],
        "y": collections.OrderedDict(b=5.0, a=6.0),
        "z": None,
    }
    out = pytree.map_leaves(tree, lambda v: v * 10)
    assert out == {
        "x": [10.0, (20.0, None), P(30.0, [40.0])],
        "y": collections.OrderedDict(b=50.0, a=60.0),
        "z": None,
    }
    assert type(out["x"][2]) is P and type(out["y"]) is collections.OrderedDict
    assert list(out["y"]) == ["b", "a"] and type(out["x"][1]) is tuple
    assert pytree.leaves(tree) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert pytree.unflatten(tree, range(6)) == {
        "x": [0, (1, None), P(2, [3])],
        "y": collections.OrderedDict(b=4, a=5),
        "z": None,
    }
    assert pytree.map_leaves(7.0, lambda v: -v) == -7.0
    assert pytree.map_leaves(None, lambda v: -v) is None


def test_a_bad_leaf_is_named_by_its_path():
    def refuse_ints(v):
        if isinstance(v, int):
            raise pytree.BadLeaf("is an int")
        return v

    with pytest.raises(pytree.BadLeaf) as e:
        pytree.map_leaves({"a": [1.0, (2.0, {"k": 3})]}, refuse_ints)
    assert e.value.path == "['a'][1][1]['k']" and e.value.why == "is an int"
