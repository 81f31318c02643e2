"""``split_module``: cut a ``GraphModule`` into submodules, one per partition (``torch.fx.passes.split_module``).

``split_callback(node)`` names the partition of every computing node (placeholders, ``get_attr``
and the output belong to none). Each partition becomes a ``GraphModule`` child ``submod_<name>``
of the returned module, whose graph calls the children in an order that respects their data
dependencies:

- a value made in one partition and read in another is an output of the first and a placeholder
  of the second; a child with several outputs returns a tuple, which the parent unpacks with
  ``getitem``;
- the parent's placeholders and ``get_attr`` nodes stay in the parent and are passed to the
  children that read them, except ``get_attr`` of a submodule, which the child reads itself;
- submodules a partition calls are copied into it, their dotted paths flattened with ``_``.

Partitions are ordered topologically (a cycle between them is an error); with
``keep_original_order`` they are called in the order of their first node instead.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg
from ember.nn import Module

__all__ = ["Partition", "split_module"]


class Partition:
    """One partition: its nodes, the values it reads and returns, and the graph being built for it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names: list[str] = []
        # Names of the original nodes it reads from outside / that others read from it, in order.
        self.inputs: dict[str, None] = {}
        self.outputs: dict[str, None] = {}
        # Names of the partitions it depends on / that depend on it.
        self.dependencies: dict[str, None] = {}
        self.dependents: dict[str, None] = {}
        self.graph = Graph()
        # Original node -> its stand-in in this partition's graph.
        self.environment: dict[Node, Node] = {}
        # The attributes (submodules, tensors) its GraphModule is built from.
        self.targets: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"name: {self.name},\n"
            f" nodes: {self.node_names},\n"
            f" inputs: {self.inputs},\n"
            f" outputs: {self.outputs},\n"
            f" partitions depended on: {self.dependencies},\n"
            f" partition dependents: {self.dependents}"
        )


def _get_attr_from_qualname(mod: Module, qualname: str) -> Any:
    value: Any = mod
    for atom in qualname.split("."):
        if not hasattr(value, atom):
            raise AttributeError(f"Node target {qualname} not found!")
        value = getattr(value, atom)
    return value


def split_module(
    m: GraphModule,
    root_m: Module,
    split_callback: Callable[[Node], int],
    qualname_map: dict[str, str] | None = None,
    keep_original_order: bool | None = False,
    keep_original_node_name: bool | None = False,
    keep_original_input_name: bool = True,
    *,
    partition_affix: str | None = None,
    tuple_return: bool = False,
) -> GraphModule:
    """Split ``m`` into one child ``GraphModule`` per partition that ``split_callback`` names.

    ``root_m`` is the module ``m`` was traced from (unused, as in PyTorch). ``qualname_map``, if
    given, is filled with each copied submodule's new path -> its path in ``m``.
    ``keep_original_order``: call the children in the order of their first node, not in a
    topological order of partitions. ``keep_original_node_name``: the children's nodes (and the
    parent's placeholders) keep their names. ``keep_original_input_name``: the children's
    placeholders are named after the values they receive (else ``arg_0``, ``arg_1``...).
    ``partition_affix``: children are named ``submod_<affix>_<n>``. ``tuple_return``: every child
    returns a tuple, also of one value.

    Example::

        def by_position(node):  # the first two computing nodes, then the rest
            by_position.count = getattr(by_position, "count", -1) + 1
            return 0 if by_position.count < 2 else 1

        split = split_module(traced, model, by_position)  # children submod_0 and submod_1
    """
    partitions: dict[str, Partition] = {}
    orig_nodes: dict[str, Node] = {}
    partition_of: dict[Node, str] = {}

    def record_cross_partition_use(def_node: Node, use_node: Node | None) -> None:
        defined = partition_of.get(def_node)
        used = partition_of.get(use_node) if use_node is not None else None
        if defined == used:
            return
        if defined is not None:
            partitions[defined].outputs.setdefault(def_node.name)
            if used is not None:
                partitions[defined].dependents.setdefault(used)
        if used is not None:
            partitions[used].inputs.setdefault(def_node.name)
            if defined is not None:
                partitions[used].dependencies.setdefault(defined)

    # Assign partitions and record which values cross between them.
    for node in m.graph.nodes:
        orig_nodes[node.name] = node
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            map_arg(node.args[0], lambda n: record_cross_partition_use(n, None))
            continue
        name = str(split_callback(node))
        if partition_affix is not None:
            name = f"{partition_affix}_{name}"
        partition = partitions.get(name)
        if partition is None:
            partitions[name] = partition = Partition(name)
        partition.node_names.append(node.name)
        partition_of[node] = name
        map_arg(node.args, lambda def_node, node=node: record_cross_partition_use(def_node, node))  # type: ignore[misc]
        map_arg(node.kwargs, lambda def_node, node=node: record_cross_partition_use(def_node, node))  # type: ignore[misc]

    original_partition_order = list(partitions)
    sorted_partitions = _sort_partitions(partitions)

    # Each partition's placeholders: values first, then submodules it reads with get_attr itself.
    for name in sorted_partitions:
        partition = partitions[name]
        new_inputs: dict[str, None] = {}
        counter = 0
        values, submodules = [], []
        for inp in partition.inputs:
            orig = orig_nodes[inp]
            is_module = orig.op == "get_attr" and isinstance(_get_attr_from_qualname(m, orig.target), Module)  # type: ignore[arg-type]
            (submodules if is_module else values).append(inp)
        for inp in values + submodules:
            orig = orig_nodes[inp]
            if inp in submodules:
                stand_in = partition.graph.get_attr(orig.target)  # type: ignore[arg-type]
                partition.targets[orig.target] = _get_attr_from_qualname(m, orig.target)  # type: ignore[arg-type, index]
            else:
                if keep_original_input_name:
                    placeholder_name = inp
                else:
                    placeholder_name = f"arg_{counter}"
                    counter += 1
                stand_in = partition.graph.placeholder(placeholder_name, type_expr=orig.type)
                new_inputs[inp] = None
            stand_in.meta = orig.meta.copy()
            partition.environment[orig] = stand_in
        partition.inputs = new_inputs

    # Copy each computing node into its partition's graph.
    for node in m.graph.nodes:
        name = partition_of.get(node)
        if name is None:
            continue
        partition = partitions[name]
        env = partition.environment
        args = map_arg(node.args, lambda n, env=env: env[n])  # type: ignore[misc]
        kwargs = map_arg(node.kwargs, lambda n, env=env: env[n])  # type: ignore[misc]
        target = node.target
        if node.op == "call_module":
            target = node.target.replace(".", "_")  # type: ignore[union-attr]
            partition.targets[target] = _get_attr_from_qualname(m, node.target)  # type: ignore[arg-type]
            if qualname_map is not None:
                qualname_map[f"{partition.submod_name}.{target}"] = node.target  # type: ignore[assignment]
        new_node = partition.graph.create_node(
            node.op,
            target,
            args,  # type: ignore[arg-type]
            kwargs,  # type: ignore[arg-type]
            name=node.name if keep_original_node_name else None,
            type_expr=node.type,
        )
        new_node.meta = node.meta.copy()
        env[node] = new_node

    # The parent: its placeholders and get_attr nodes, then one call per partition.
    base_graph = Graph()
    base_env: dict[str, Node] = {}
    base_attrs: dict[str, Any] = {}
    constructed: set[Node] = set()

    def construct(node: Node) -> None:
        if node in constructed:
            return
        constructed.add(node)
        if node.op == "placeholder":
            default = node.args[0] if node.args else inspect.Signature.empty
            if keep_original_node_name:
                args = () if default is inspect.Signature.empty else (default,)
                new = base_graph.create_node("placeholder", node.name, args=args, type_expr=node.type)
            else:
                new = base_graph.placeholder(node.target, type_expr=node.type, default_value=default)  # type: ignore[arg-type]
        elif node.op == "get_attr":
            new = base_graph.get_attr(node.target)  # type: ignore[arg-type]
            base_attrs[node.target] = _get_attr_from_qualname(m, node.target)  # type: ignore[arg-type, index]
        else:
            return
        new.meta = node.meta.copy()
        base_env[node.name] = new

    if not keep_original_order:
        for node in m.graph.nodes:
            construct(node)
    original_placeholders = [n for n in m.graph.nodes if n.op == "placeholder"]

    for name in original_partition_order if keep_original_order else sorted_partitions:
        partition = partitions[name]
        outputs = tuple(partition.environment[orig_nodes[out]] for out in partition.outputs)
        partition.graph.output(outputs[0] if len(outputs) == 1 and not tuple_return else outputs)
        if keep_original_order:
            # The parent's signature keeps the original order; attributes come as first needed.
            for node in original_placeholders:
                construct(node)
            for inp in partition.inputs:
                construct(orig_nodes[inp])
        base_attrs[partition.submod_name] = GraphModule(partition.targets, partition.graph)
        call = base_graph.call_module(partition.submod_name, tuple(base_env[inp] for inp in partition.inputs))
        if len(partition.outputs) > 1 or (partition.outputs and tuple_return):
            for i, out in enumerate(partition.outputs):
                base_env[out] = base_graph.call_function(operator.getitem, (call, i))
        elif len(partition.outputs) == 1:
            base_env[next(iter(partition.outputs))] = call

    if keep_original_order and not base_env:  # no computing node: only inputs and attributes
        for node in m.graph.nodes:
            construct(node)
    base_graph.output(map_arg(m.graph.output_node().args[0], lambda n: base_env[n.name]))
    result = GraphModule(base_attrs, base_graph)
    result.meta["partition_names"] = {p.submod_name for p in partitions.values()}
    return result


def _sort_partitions(partitions: dict[str, Partition]) -> list[str]:
    """The partitions in a topological order of their dependencies; raises on a cycle."""
    remaining = {name: dict(p.dependencies) for name, p in partitions.items()}
    ready = [name for name, deps in remaining.items() if not deps]
    order: list[str] = []
    while ready:
        name = ready.pop()  # last in, first out, as PyTorch, so that the orders agree
        order.append(name)
        for dependent in partitions[name].dependents:
            remaining[dependent].pop(name)
            if not remaining[dependent]:
                ready.append(dependent)
    if len(order) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")
    return order
