"""Pytrees: nested Python containers whose leaves are flattened to a list and rebuilt from one.

``tree_flatten(tree)`` gives the leaves in order and a ``TreeSpec`` of the containers around them;
``tree_unflatten(leaves, spec)`` rebuilds the same containers around new leaves. Graph capture,
``make_fx`` and ``ember.func`` use it to move between a program's nested arguments and the flat list
of values a graph takes. Containers known out of the box are PyTorch's: ``tuple``, ``list``,
``dict``, named tuples (``ember.return_types`` among them), ``OrderedDict``, ``defaultdict``,
``deque``; ``register_pytree_node`` adds more. Everything else, ``None`` included, is a leaf.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], tuple[list, Context]]
UnflattenFunc = Callable[[Iterable, Context], PyTree]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    serialized_type_name: str | None


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(
    cls: type,
    flatten_fn: FlattenFunc,
    unflatten_fn: UnflattenFunc,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Callable | None = None,
    from_dumpable_context: Callable | None = None,
    flatten_with_keys_fn: Callable | None = None,
) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``. ``context`` must compare with ``==``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, serialized_type_name)


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and cls is not tuple


def _node_type(tree: PyTree) -> type | None:
    """The registered type ``tree`` flattens as, or None for a leaf."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if _is_namedtuple(cls):
        return _NamedTuple
    return None


class _NamedTuple:
    """Stands for every named tuple class: the class itself is the context."""


@dataclasses.dataclass(init=True, frozen=True, eq=True, repr=False)
class TreeSpec:
    """The containers of a pytree without its leaves: a node type, its context and one spec per child."""

    type: Any
    context: Context
    children_specs: list[TreeSpec]

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_nodes", 1 + sum(c.num_nodes for c in self.children_specs))
        leaves = 1 if self.type is None else sum(c.num_leaves for c in self.children_specs)
        object.__setattr__(self, "num_leaves", leaves)
        object.__setattr__(self, "num_children", len(self.children_specs))

    def is_leaf(self) -> bool:
        return self.type is None

    def __repr__(self, indent: int = 0) -> str:
        if self.is_leaf():
            return "*"
        name = "namedtuple" if self.type is _NamedTuple else getattr(self.type, "__name__", str(self.type))
        if not self.children_specs:
            return f"TreeSpec({name}, {self.context!r}, [])"
        pad = " " * (indent + 2)
        children = f",\n{pad}".join(c.__repr__(indent + 2) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{children}])"

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this spec's containers)."""
        if self.is_leaf():
            return [tree]
        kind = _node_type(tree)
        if kind is not self.type:
            raise ValueError(f"Node type mismatch; expected {self.type}, but got {type(tree)}.")
        children, context = _flatten_one(kind, tree)
        if context != self.context:
            raise ValueError(f"Node context mismatch for {self.type}: expected {self.context!r}, but got {context!r}.")
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
        out = []
        for child, spec in zip(children, self.children_specs, strict=True):
            out.extend(spec.flatten_up_to(child))
        return out

    def unflatten(self, leaves: Iterable) -> PyTree:
        return tree_unflatten(leaves, self)


class LeafSpec(TreeSpec):
    """The spec of a leaf (prints as ``*``)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])


_LEAF = LeafSpec()


def _flatten_one(kind: type, tree: PyTree) -> tuple[list, Context]:
    if kind is _NamedTuple:
        return list(tree), type(tree)
    return SUPPORTED_NODES[kind].flatten_fn(tree)


def _unflatten_one(kind: type, children: list, context: Context) -> PyTree:
    if kind is _NamedTuple:
        return context(*children)
    return SUPPORTED_NODES[kind].unflatten_fn(children, context)


def _walk(node: PyTree, is_leaf: Callable[[PyTree], bool] | None, leaves: list) -> TreeSpec:
    kind = None if is_leaf is not None and is_leaf(node) else _node_type(node)
    if kind is None:
        leaves.append(node)
        return _LEAF
    children, context = _flatten_one(kind, node)
    return TreeSpec(kind, context, [_walk(c, is_leaf, leaves) for c in children])


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list, TreeSpec]:
    # Module-level recursion, not a closure that calls itself: such a closure is a reference cycle
    # that would keep the leaves (a compiled graph's inputs and outputs) alive until the cyclic
    # collector runs, instead of freeing them when the caller drops them.
    leaves: list = []
    return leaves, _walk(tree, is_leaf, leaves)


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> PyTree:
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got {type(treespec)}"
        )
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(
            f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree "
            f"that holds {treespec.num_leaves} items ({treespec})."
        )
    return _build(treespec, iter(leaves))


def _build(spec: TreeSpec, it: Iterator) -> PyTree:
    if spec.is_leaf():
        return next(it)
    return _unflatten_one(spec.type, [_build(c, it) for c in spec.children_specs], spec.context)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None):
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``func`` applied to each leaf of ``tree`` (and the matching leaves of ``rests``, which must
    have ``tree``'s containers, or more below its leaves)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(*columns, strict=True)], spec)


def _only(types: type | tuple, func: Callable) -> Callable:
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(types: type | tuple, func: Callable, tree: PyTree, is_leaf=None) -> PyTree:
    return tree_map(_only(types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(types: type | tuple, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def tree_any_only(types: type | tuple, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


# -- the containers every program uses --------------------------------------------------------


def _dict_flatten(d: dict) -> tuple[list, Context]:
    return list(d.values()), list(d.keys())


def _dict_unflatten(values: Iterable, keys: Context) -> dict:
    return dict(zip(keys, values, strict=True))


def _ordered_dict_unflatten(values: Iterable, keys: Context) -> OrderedDict:
    return OrderedDict(zip(keys, values, strict=True))


def _defaultdict_flatten(d: defaultdict) -> tuple[list, Context]:
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_unflatten(values: Iterable, context: Context) -> defaultdict:
    factory, keys = context
    return defaultdict(factory, zip(keys, values, strict=True))


def _deque_flatten(d: deque) -> tuple[list, Context]:
    return list(d), d.maxlen


register_pytree_node(tuple, lambda t: (list(t), None), lambda v, _: tuple(v), serialized_type_name="builtins.tuple")
register_pytree_node(list, lambda t: (list(t), None), lambda v, _: list(v), serialized_type_name="builtins.list")
register_pytree_node(dict, _dict_flatten, _dict_unflatten, serialized_type_name="builtins.dict")
register_pytree_node(
    OrderedDict, _dict_flatten, _ordered_dict_unflatten, serialized_type_name="collections.OrderedDict"
)
register_pytree_node(
    defaultdict, _defaultdict_flatten, _defaultdict_unflatten, serialized_type_name="collections.defaultdict"
)
register_pytree_node(
    deque, _deque_flatten, lambda v, maxlen: deque(v, maxlen=maxlen), serialized_type_name="collections.deque"
)
