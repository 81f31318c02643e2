"""Replace every occurrence of a pattern in a ``GraphModule`` with a replacement (``torch.fx.subgraph_rewriter``).

The pattern and the replacement are functions (traced with :func:`ember.fx.symbolic_trace`),
``GraphModule``s or ``Graph``s. Matching is by use-def structure, not by names
(:class:`~ember.fx.passes.utils.matcher_utils.SubgraphMatcher`): the pattern's parameters are
wildcards, and its return values may be read anywhere in the graph, while every other value it
computes must be read only inside the match. The replacement takes the pattern's parameters, in
order, and returns as many values as the pattern; its nodes are inserted before the first user of
the matched values, and the matched nodes are erased.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ember.fx._symbolic_trace import symbolic_trace
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node
from ember.fx.passes.utils.matcher_utils import InternalMatch, SubgraphMatcher
from ember.nn import Module

__all__ = ["Match", "ReplacedPatterns", "replace_pattern", "replace_pattern_with_filters"]


class Match(NamedTuple):
    """Where a pattern matched: the pattern's anchor node and the map pattern node -> graph node."""

    anchor: Node
    nodes_map: dict[Node, Node]


@dataclass
class ReplacedPatterns:
    """A match and the nodes the replacement inserted for it."""

    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


MatchFilter = Callable[[InternalMatch, Graph, Graph], bool]
ReplacementCallback = Callable[[InternalMatch, Graph, Graph], Graph]


def replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | GraphModule,
    replacement: Callable[..., Any] | GraphModule,
) -> list[Match]:
    """Replace each non-overlapping occurrence of ``pattern`` in ``gm`` with ``replacement``.

    Returns one :class:`Match` per replaced occurrence (empty if none). Of overlapping occurrences
    the first, in graph order, is replaced. ``pattern`` must use each of its parameters;
    ``replacement`` takes the same parameters (used or not) and returns as many values.

    Example::

        def pattern(w1, w2):
            return ember.cat([w1, w2])

        def replacement(w1, w2):
            return ember.stack([w1, w2])

        replace_pattern(ember.fx.symbolic_trace(model), pattern, replacement)
    """
    replaced = _replace_pattern(gm, pattern, replacement)
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map) for r in replaced]


def replace_pattern_with_filters(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule | None = None,
    match_filters: list[MatchFilter] | None = None,
    ignore_literals: bool = False,
    replacement_callback: ReplacementCallback | None = None,
    node_name_match: str = "",
) -> list[ReplacedPatterns]:
    """:func:`replace_pattern`, keeping only the matches every filter accepts.

    ``match_filters``: functions ``(match, original_graph, pattern_graph) -> bool``.
    ``ignore_literals``: literal arguments of the pattern match any literal.
    ``replacement_callback``: ``(match, original_graph, pattern_graph) -> Graph``, the replacement
    for that match (instead of ``replacement``). ``node_name_match``: a graph node whose name contains
    this string matches any pattern node.
    """
    return _replace_pattern(
        gm, pattern, replacement, match_filters, ignore_literals, replacement_callback, node_name_match
    )


def _as_graph(obj: Callable[..., Any] | Graph | GraphModule) -> Graph:
    if isinstance(obj, GraphModule):
        return obj.graph
    if isinstance(obj, Graph):
        return obj
    return symbolic_trace(obj).graph  # type: ignore[arg-type]


def _insert_point(graph: Graph, match: InternalMatch) -> Node:
    """Where the replacement goes: before the first user of a returned value, else after the last one."""
    users: set[Node] = set()
    for n in match.returning_nodes:
        users.update(n.users)
    if users:
        return next(n for n in graph.nodes if n in users)
    following = None
    for n in reversed(graph.nodes):
        if n in match.returning_nodes:
            if following is None:
                raise AssertionError("The insert point can't be None")
            return following
        following = n
    raise AssertionError("The insert point can't be None")


def _replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule | None = None,
    match_filters: list[MatchFilter] | None = None,
    ignore_literals: bool = False,
    replacement_callback: ReplacementCallback | None = None,
    node_name_match: str = "",
) -> list[ReplacedPatterns]:
    original_graph = gm.graph
    pattern_graph = _as_graph(pattern)
    matcher = SubgraphMatcher(
        pattern_graph, match_output=False, match_placeholder=False, remove_overlapping_matches=True,
        ignore_literals=ignore_literals,
    )  # fmt: skip
    matches = matcher.match(original_graph, node_name_match=node_name_match)
    matches = [m for m in matches if all(f(m, original_graph, pattern_graph) for f in match_filters or ())]

    if replacement is not None:
        common_replacement: Graph | None = _as_graph(replacement)
    elif replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement callback")
    else:
        common_replacement = None

    # A value an earlier replacement returned in place of a matched node that a later match uses.
    changed: dict[Node, Node] = {}
    results = []
    for match in matches:
        if replacement_callback is not None:
            replacement_graph = replacement_callback(match, original_graph, pattern_graph)
        else:
            assert common_replacement is not None
            replacement_graph = common_replacement
        placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(match.placeholder_nodes) != len(placeholders):
            raise AssertionError(
                f"Placeholder count mismatch: {len(match.placeholder_nodes)} vs {len(placeholders)}: the "
                "replacement must take the pattern's parameters"
            )
        val_map: dict[Node, Any] = {}
        for rn, gn in zip(placeholders, match.placeholder_nodes, strict=True):
            if isinstance(gn, Node) and gn in changed:
                new = changed[gn]
                match.placeholder_nodes[match.placeholder_nodes.index(gn)] = new
                for pn, mapped in match.nodes_map.items():
                    if mapped is gn:
                        match.nodes_map[pn] = new
                        break
                gn = new
            val_map[rn] = gn

        with original_graph.inserting_before(_insert_point(original_graph, match)):
            copied = original_graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        replacement_nodes = [v for v in val_map.values() if v not in match.placeholder_nodes]
        if len(match.returning_nodes) != len(copied):
            raise AssertionError(
                f"Returning nodes count mismatch: {len(match.returning_nodes)} vs {len(copied)}: the replacement "
                "must return as many values as the pattern"
            )
        for gn, new in zip(match.returning_nodes, copied, strict=True):
            gn.replace_all_uses_with(new)
            changed[gn] = new
        for pn in reversed(pattern_graph.nodes):
            if pn.op not in ("placeholder", "output"):
                original_graph.erase_node(match.nodes_map[pn])
        results.append(
            ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map, replacements=replacement_nodes)
        )

    gm.recompile()
    if isinstance(replacement, Module):
        _replace_attributes(gm, replacement)
    return results


def _replace_attributes(gm: GraphModule, replacement: Module) -> None:
    """Copy into ``gm`` the submodules and attributes the inserted nodes read from ``replacement``."""
    gm.delete_all_unused_submodules()
    if isinstance(replacement, GraphModule):
        replacement.graph.lint()

    def try_get_attr(module: Module, target: str) -> Any:
        path, _, name = target.rpartition(".")
        try:
            owner = module.get_submodule(path)
        except AttributeError:
            return None
        return getattr(owner, name, None)

    for node in gm.graph.nodes:
        if node.op not in ("call_module", "get_attr"):
            continue
        if try_get_attr(gm, node.target) is not None:  # type: ignore[arg-type]
            continue
        value = try_get_attr(replacement, node.target)  # type: ignore[arg-type]
        if value is None:
            raise RuntimeError(
                f'Attempted to create a "{node.op}" node during subgraph rewriting with target {node.target}, '
                "but the referenced attribute does not exist in the replacement GraphModule"
            )
        value = copy.deepcopy(value)
        if isinstance(value, Module):
            gm.add_submodule(node.target, value)  # type: ignore[arg-type]
        else:
            setattr(gm, node.target, value)  # type: ignore[arg-type]
    gm.graph.lint()
