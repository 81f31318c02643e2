"""Flattening nested tuples, lists and dicts of values (the transforms' inputs and outputs)."""

from __future__ import annotations

from typing import Any


def flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of ``tree`` in order, and a spec that ``unflatten`` rebuilds it from."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        leaves, specs = _flatten_all(tree)
        return leaves, ("namedtuple", type(tree), specs)
    if isinstance(tree, list | tuple):
        leaves, specs = _flatten_all(tree)
        return leaves, (type(tree).__name__, None, specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = _flatten_all([tree[k] for k in keys])
        return leaves, ("dict", keys, specs)
    return [tree], None


def _flatten_all(items) -> tuple[list, list]:
    leaves, specs = [], []
    for item in items:
        sub, spec = flatten(item)
        leaves.extend(sub)
        specs.append((len(sub), spec))
    return leaves, specs


def unflatten(leaves: list, spec: Any) -> Any:
    if spec is None:
        return leaves[0]
    kind, extra, specs = spec
    items, i = [], 0
    for n, sub in specs:
        items.append(unflatten(leaves[i : i + n], sub))
        i += n
    if kind == "namedtuple":
        return extra(*items)
    if kind == "dict":
        return dict(zip(extra, items, strict=True))
    return tuple(items) if kind == "tuple" else items
