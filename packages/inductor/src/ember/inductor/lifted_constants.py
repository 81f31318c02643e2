"""Tensor constants of a graph (``get_attr`` nodes: ``x * ember.tensor(2.0)`` traces to one) as inputs.

The code generator lowers placeholders, not module attributes. Each tensor a ``get_attr`` node reads
becomes a placeholder after the graph's own, and the compiled callable receives the tensors after
the caller's inputs; kernels read them like any input, and the graph, free of values, can be cached.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor


class WithConstants:
    """A boxed callable: the compiled graph, given the lifted constants after the caller's inputs."""

    _boxed_call = True

    def __init__(self, compiled: Callable, constants: list[Tensor]) -> None:
        self.compiled, self.constants = compiled, constants

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __call__(self, args: list) -> Any:
        return self.compiled([*args, *self.constants])


def _attribute(gm: Any, target: str) -> Any:
    return functools.reduce(getattr, target.split("."), gm)


def lift_constants(inner: Callable) -> Callable:
    """``inner(gm, inputs)`` for graphs whose ``get_attr`` nodes read tensors, with those as inputs."""

    def compile_lifted(gm: Any, example_inputs: list) -> Callable:
        if not any(node.op == "get_attr" for node in gm.graph.nodes):
            return inner(gm, example_inputs)
        from ember.fx.graph_module import GraphModule

        graph = copy.deepcopy(gm.graph)
        nodes = list(graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        constants: list[Tensor] = []
        for node in [n for n in nodes if n.op == "get_attr"]:
            value = _attribute(gm, node.target)
            if not isinstance(value, Tensor):
                raise NotImplementedError(
                    f"the code generator cannot lower a graph attribute that is not a tensor ({node.target})"
                )
            where = graph.inserting_after(placeholders[-1]) if placeholders else graph.inserting_before(nodes[0])
            with where:
                ph = graph.placeholder(f"constant_{len(constants)}")
            ph.meta = {**node.meta, "val": value}
            placeholders.append(ph)
            node.replace_all_uses_with(ph)
            graph.erase_node(node)
            constants.append(value)
        compiled = inner(GraphModule(gm, graph), [*example_inputs, *constants])
        return WithConstants(compiled, constants)

    return compile_lifted
