"""ember.utils._pytree against PyTorch's torch.utils._pytree (leaves, specs, rebuilding)."""

from __future__ import annotations

import collections

import pytest

import ember.utils._pytree as pytree

Point = collections.namedtuple("Point", "x y")

TREES = [
    1,
    None,
    (1, 2),
    [1, (2, [3, None])],
    {"b": 1, "a": (2, 3)},
    collections.OrderedDict(z=1, y=[2]),
    collections.defaultdict(list, k=[1, 2]),
    collections.deque([1, 2], maxlen=4),
    Point(1, (2, 3)),
    {"nested": [Point(1, {"q": 2}), ()], "empty": {}},
]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_flatten_matches_pytorch(tree):
    torch_pytree = pytest.importorskip("torch.utils._pytree", reason="the oracle, PyTorch, is not installed")
    leaves, spec = pytree.tree_flatten(tree)
    expected_leaves, expected_spec = torch_pytree.tree_flatten(tree)
    assert leaves == expected_leaves
    assert spec.num_leaves == expected_spec.num_leaves
    assert spec.num_nodes == expected_spec.num_nodes
    assert repr(spec) == repr(expected_spec)


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_unflatten_rebuilds_the_containers(tree):
    leaves, spec = pytree.tree_flatten(tree)
    rebuilt = pytree.tree_unflatten([("leaf", x) for x in leaves], spec)
    assert pytree.tree_leaves(rebuilt, is_leaf=lambda x: isinstance(x, tuple) and x[:1] == ("leaf",)) == [
        ("leaf", x) for x in leaves
    ]
    assert pytree.tree_unflatten(leaves, spec) == tree
    assert type(pytree.tree_unflatten(leaves, spec)) is type(tree)


def test_tree_map_over_several_trees():
    assert pytree.tree_map(lambda a, b: a + b, (1, [2, {"k": 3}]), (10, [20, {"k": 30}])) == (11, [22, {"k": 33}])
    assert pytree.tree_map_only(int, lambda a: -a, [1, "s", 2.5]) == [-1, "s", 2.5]
    assert pytree.tree_all(lambda x: x > 0, [1, (2,)]) and not pytree.tree_any(lambda x: x > 5, [1, (2,)])


def test_errors_name_the_mismatch():
    spec = pytree.tree_structure((1, 2))
    with pytest.raises(ValueError, match="length 3"):
        pytree.tree_unflatten([1, 2, 3], spec)
    with pytest.raises(ValueError, match="mismatch"):
        pytree.tree_map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(TypeError, match="TreeSpec"):
        pytree.tree_unflatten([1], "spec")
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_pytree_node(tuple, lambda t: (list(t), None), lambda v, c: tuple(v))


def test_registered_node():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda v, _: Pair(*v))
    try:
        leaves, spec = pytree.tree_flatten([Pair(1, (2, 3))])
        assert leaves == [1, 2, 3]
        back = pytree.tree_unflatten([4, 5, 6], spec)
        assert (back[0].a, back[0].b) == (4, (5, 6))
    finally:
        del pytree.SUPPORTED_NODES[Pair]
