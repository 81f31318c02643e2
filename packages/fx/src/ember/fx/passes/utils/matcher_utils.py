"""``SubgraphMatcher``: find the places where a pattern graph occurs in a larger graph.

As PyTorch's ``torch.fx.passes.utils.matcher_utils``. The pattern is an ``ember.fx`` graph whose
placeholders are wildcards (unless ``match_placeholder``) and whose output names the values the
match returns. Matching walks backwards from the pattern's anchors, its sinks (the nodes whose only
user is the output), along arguments, in the pattern and in the graph at once: a value has one
producer but may have many users, so walking up the def chains is deterministic. Several anchors
(a pattern with several outputs) are matched one after another with backtracking over the
candidates of each.

A match is kept when it is self-contained (no value computed inside it but not returned is read
outside it), when fusing its nodes would not make a cycle, and, with
``remove_overlapping_matches``, when it shares no computed node with an earlier match.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ember.core.dispatch import OpOverload
from ember.core.tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.utils.fuser_utils import validate_partition

__all__ = ["InternalMatch", "SubgraphMatcher"]

logger = logging.getLogger(__name__)

# Stands for an argument left to its schema default, so that it compares equal only to itself.
_NO_DEFAULT = object()


@dataclass
class InternalMatch:
    """One occurrence of a pattern: which graph node each pattern node stands for."""

    # The pattern's anchors (its sink nodes) from which the match was found.
    anchors: list[Node]
    # Pattern node -> graph node (or, for a placeholder matched to a literal, that literal).
    nodes_map: dict[Node, Node] = field(default_factory=dict)
    # The graph values bound to the pattern's placeholders, in the pattern's order.
    placeholder_nodes: list[Node] = field(default_factory=list)
    # The graph nodes standing for the values the pattern returns.
    returning_nodes: list[Node] = field(default_factory=list)
    # Named graph nodes, filled by matchers that name their pattern's nodes.
    name_node_map: dict[str, Node] = field(default_factory=dict)

    def __copy__(self) -> InternalMatch:
        return InternalMatch(
            anchors=self.anchors,
            nodes_map=self.nodes_map.copy(),
            placeholder_nodes=self.placeholder_nodes.copy(),
            returning_nodes=self.returning_nodes.copy(),
        )


def _get_attr(module: Any, target: str) -> Any:
    value = module
    for atom in target.split("."):
        value = getattr(value, atom)
    return value


class SubgraphMatcher:
    """Matches one pattern graph against graphs; see the module's docstring for the rules."""

    def __init__(
        self,
        pattern: Graph,
        match_output: bool = False,
        match_placeholder: bool = False,
        remove_overlapping_matches: bool = True,
        ignore_literals: bool = False,
    ) -> None:
        """``match_output``: the pattern's output node must match the graph's output node.
        ``match_placeholder``: the pattern's placeholders must match placeholders (else they are
        wildcards for any value). ``remove_overlapping_matches``: of matches sharing computed nodes
        keep the first. ``ignore_literals``: literal arguments match any literal."""
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals

        if len(pattern.nodes) == 0:
            raise ValueError("SubgraphMatcher cannot be initialized with an empty pattern")
        for node in pattern.nodes:
            if node.op != "output" and not node.is_impure() and not node.users:
                raise AssertionError("SubgraphMatcher cannot be initialized with an pattern with dead code")

        self.pattern_placeholder_nodes = [n for n in pattern.nodes if n.op == "placeholder"]
        output_node = next(iter(reversed(pattern.nodes)))
        self.pattern_returning_nodes: list[Node] = output_node.all_input_nodes
        if match_output:
            self.pattern_anchors: list[Node] = [output_node]
        else:
            # A returned node read by nothing but the output is a sink of the pattern.
            self.pattern_anchors = [n for n in output_node.all_input_nodes if len(n.users) == 1]

    # -- comparing one pattern node with one graph node ----------------------------------------

    def _match_attributes(self, pn: Node, gn: Node) -> bool:
        # Only constant tensors are compared, and only by being tensors: their values may differ.
        if pn.graph.owning_module is None or gn.graph.owning_module is None:
            raise AssertionError("matching get_attr nodes needs graphs with an owning module")
        pn_value = _get_attr(pn.graph.owning_module, pn.target)  # type: ignore[arg-type]
        gn_value = _get_attr(gn.graph.owning_module, gn.target)  # type: ignore[arg-type]
        if type(pn_value) is not type(gn_value):
            return False
        if isinstance(pn_value, Tensor):
            return True
        raise RuntimeError(f"Unsupported type {pn_value} when matching attributes")

    def _nodes_are_equal(self, pn: Node, gn: Node, node_name_match: str = "") -> bool:
        if not self.match_placeholder and pn.op == "placeholder":
            return True
        if node_name_match and node_name_match in gn.name:
            return True
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return self._match_attributes(pn, gn)
        return pn.target == gn.target

    def _match_literals(self, pn: Any, gn: Any, match: InternalMatch) -> bool:
        if isinstance(pn, Node):
            if pn.op != "placeholder":
                return False
            # A placeholder stands for a literal too; bound once, it must stand for the same one.
            if pn in match.nodes_map:
                return match.nodes_map[pn] == gn
            match.nodes_map[pn] = gn
            return True
        if isinstance(gn, Node):
            return False
        return type(gn) is type(pn) and gn == pn

    def _match_args(self, pattern_args: Sequence[Any], graph_args: Sequence[Any], match: InternalMatch) -> bool:
        if len(pattern_args) != len(graph_args):
            return False
        for pa, ga in zip(pattern_args, graph_args, strict=True):
            if isinstance(pa, Node) and isinstance(ga, Node):
                ok = self._match_nodes(pa, ga, match)
            elif isinstance(pa, list | tuple) and isinstance(ga, list | tuple):
                ok = self._match_args(pa, ga, match)
            else:
                ok = self._match_literals(pa, ga, match) or self.ignore_literals
            if not ok:
                return False
        return True

    def _match_nodes(self, pn: Node, gn: Node, match: InternalMatch, node_name_match: str = "") -> bool:
        logger.debug("  matching %s to %s", pn, gn)
        if pn in match.nodes_map:
            return match.nodes_map[pn] is gn
        if any(v is gn for v in match.nodes_map.values()):
            return False
        if not self._nodes_are_equal(pn, gn, node_name_match):
            return False
        saved = dict(match.nodes_map)
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":  # a wildcard: any value, lists included
            return True

        same_layout = len(pn.args) == len(gn.args) and list(pn.kwargs) == list(gn.kwargs)
        if not same_layout and pn.op == "call_function" and isinstance(pn.target, OpOverload):
            # The same op called with arguments spelled differently: compare by schema position.
            pattern_args = _all_arguments(pn.target, pn.args, pn.kwargs)
            graph_args = _all_arguments(pn.target, gn.args, gn.kwargs)
        elif same_layout:
            pattern_args = [*pn.args, *pn.kwargs.values()]
            graph_args = [*gn.args, *gn.kwargs.values()]
        else:
            match.nodes_map = saved
            return False
        if not self._match_args(pattern_args, graph_args, match):
            match.nodes_map = saved
            return False
        return True

    # -- the search ------------------------------------------------------------------------------

    def _is_contained(self, nodes_map: dict[Node, Node]) -> bool:
        # Graph node -> pattern node, for the nodes the pattern computes (not its placeholders).
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn in self.pattern_returning_nodes:
                continue  # returned values may be read anywhere
            if any(user not in lookup for user in gn.users):
                return False
        return True

    def _remove_overlapping_matches(self, matches: list[InternalMatch]) -> list[InternalMatch]:
        kept: list[InternalMatch] = []
        taken: set[Node] = set()
        for match in matches:
            computed = [gn for pn, gn in match.nodes_map.items() if pn.op not in ("placeholder", "output")]
            if any(gn in taken for gn in computed):
                continue
            kept.append(match)
            taken.update(computed)
        return kept

    def match(self, graph: Graph, node_name_match: str = "") -> list[InternalMatch]:
        """Every occurrence of the pattern in ``graph``, in the order their anchors appear there.

        Each is self-contained: the nodes it computes, but for those the pattern returns, are read
        only by nodes of the match. ``node_name_match``: a graph node whose name contains this
        string matches any pattern node.
        """
        candidates: list[tuple[Node, list[Node]]] = []
        for anchor in self.pattern_anchors:
            found = [n for n in graph.nodes if self._nodes_are_equal(anchor, n, node_name_match)]
            if not found:
                return []
            candidates.append((anchor, found))

        matches: list[InternalMatch] = []

        def backtrack(index: int, match: InternalMatch) -> None:
            if index == len(candidates):
                match.placeholder_nodes = [match.nodes_map[pn] for pn in self.pattern_placeholder_nodes]
                match.returning_nodes = [match.nodes_map[pn] for pn in self.pattern_returning_nodes]
                matches.append(match)
                return
            anchor, nodes = candidates[index]
            for node in nodes:
                attempt = InternalMatch(anchors=match.anchors, nodes_map=dict(match.nodes_map))
                if self._match_nodes(anchor, node, attempt, node_name_match):
                    backtrack(index + 1, attempt)

        if candidates:
            backtrack(0, InternalMatch(anchors=self.pattern_anchors))

        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        matches = [
            m
            for m in matches
            if validate_partition([gn for pn, gn in m.nodes_map.items() if pn.op not in ("placeholder", "output")])
        ]
        if self.remove_overlapping_matches:
            matches = self._remove_overlapping_matches(matches)
        logger.debug("Matches returned: %s", matches)
        return matches


def _all_arguments(op: OpOverload, args: tuple, kwargs: dict) -> list[Any]:
    """The arguments of a call to ``op`` in schema order, defaults filled in."""
    values = []
    for i, arg in enumerate(op.schema.arguments):
        if arg.name in kwargs:
            values.append(kwargs[arg.name])
        elif not arg.kwarg_only and i < len(args):
            values.append(args[i])
        else:
            values.append(arg.default if arg.has_default else _NO_DEFAULT)
    return values
