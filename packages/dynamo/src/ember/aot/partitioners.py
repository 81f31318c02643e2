"""Partitioners: a joint forward+backward graph split into a forward and a backward graph.

The joint graph takes ``(primals..., tangents...)`` (placeholders named ``primals_*`` and
``tangents_*``) and returns the forward's outputs followed by the gradients of the primals. A
partitioner chooses what the forward hands to the backward (the *saved values*: tensors, and the
symbolic sizes the backward computes with) and returns two graph modules:

- forward: ``(primals...) -> (*forward outputs, *saved tensors, *saved sizes)``;
- backward: ``(*saved tensors, *saved sizes, *tangents) -> (*gradients)``.

``default_partition`` saves whatever the backward reads from the forward, as eager autograd does.
``min_cut_rematerialization_partition`` treats the choice as a minimum cut: each node is split into
an in- and an out-vertex joined by an edge whose capacity is the bytes of its output (infinite for
what may not be saved or recomputed), so the cheapest set of values separating what must run in the
forward from what must run in the backward is saved, and cheap ops between them (pointwise ops,
views) are run again in the backward instead of being stored.
"""

from __future__ import annotations

import logging
import math
import operator
from collections.abc import Callable, Iterable

from ember.aot import _rng, config
from ember.aot._maxflow import FlowNetwork
from ember.core.dispatch import OpOverload
from ember.core.symbolic import SymBool, SymFloat, SymInt
from ember.core.tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node

__all__ = ["default_partition", "min_cut_rematerialization_partition"]

log = logging.getLogger("ember.aot")

_SYMBOLIC = (SymInt, SymFloat, SymBool)


# -- reading the joint graph ---------------------------------------------------------------------


def _is_primal(node: Node) -> bool:
    return node.op == "placeholder" and str(node.target).startswith("primals")


def _is_tangent(node: Node) -> bool:
    return node.op == "placeholder" and str(node.target).startswith("tangents")


def _is_sym(node: Node) -> bool:
    """A value that is no tensor: a size (SymInt), or an integer such as a Philox offset."""
    val = node.meta.get("val")
    return isinstance(val, (*_SYMBOLIC, int, float, bool))


def _outputs(joint: Graph, num_fwd_outputs: int) -> tuple[list, list]:
    (out,) = joint.find_nodes(op="output")
    flat = list(out.args[0])
    return flat[:num_fwd_outputs], flat[num_fwd_outputs:]


def _ancestors(roots: Iterable, stop: Callable[[Node], bool] = lambda n: False) -> set[Node]:
    seen: set[Node] = set()
    stack = [r for r in roots if isinstance(r, Node)]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if stop(node):
            continue
        stack.extend(node.all_input_nodes)
    return seen


def _backward_region(graph: Graph) -> tuple[set[Node], set[int]]:
    """The nodes that depend on the tangents, and the memory the backward writes.

    A node depends on the tangents through its inputs, or by reading memory that a node depending on
    them wrote in place before it (a gradient buffer filled through a view)."""
    region: set[Node] = set()
    tainted: set[int] = set()
    for node in graph.nodes:
        if node.op == "output":
            continue
        inputs = node.all_input_nodes
        if (
            _is_tangent(node)
            or any(n in region for n in inputs)
            or any(_storage(n.meta.get("val")) in tainted for n in inputs)
        ):
            region.add(node)
            tainted.update(_written(node))
    return region, tainted


def _extract(joint: GraphModule, inputs: list[Node], outputs: list, writes_here: Callable[[Node], bool]) -> GraphModule:
    """A graph computing ``outputs`` from ``inputs`` (placeholders in that order) with the joint's nodes;
    ``writes_here``: which of the joint's in-place ops belong to this graph."""
    graph = Graph()
    env: dict[Node, Node] = {}
    for node in inputs:
        copy = graph.placeholder(node.name)
        copy.meta = dict(node.meta)
        env[node] = copy
    needed = _ancestors(outputs, stop=lambda n: n in env)
    needed = _with_writes(joint.graph, needed, stop=lambda n: n in env, writes_here=writes_here)
    for node in joint.graph.nodes:
        if node in env or node not in needed or node.op == "output":
            continue
        if node.op == "placeholder":
            users = ", ".join(u.name for u in node.users if u in needed)
            raise RuntimeError(
                f"AOT autograd: the partitioned graph needs {node.name} (for {users}), which is not among its inputs"
            )
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[o] if isinstance(o, Node) else o for o in outputs))
    return GraphModule(joint, graph)


def _storage(value) -> int | None:
    return id(value._storage) if isinstance(value, Tensor) else None


def _written(node: Node) -> list[int]:
    """The storages an in-place op writes (none for a functional op)."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, OpOverload) or not target.schema.is_mutable:
        return []
    written = []
    for i, argument in enumerate(target.schema.arguments):
        if argument.is_write:
            value = node.args[i] if i < len(node.args) else node.kwargs.get(argument.name)
            if isinstance(value, Node):
                written.append(_storage(value.meta.get("val")))
    return [w for w in written if w is not None]


def _with_writes(
    graph: Graph, needed: set[Node], stop: Callable[[Node], bool], writes_here: Callable[[Node], bool]
) -> set[Node]:
    """``needed`` and the in-place ops that write, before a needed node reads it, into memory it reads.

    A joint graph that was not functionalized (one a caller traced) may fill a buffer through a view (``copy_`` into ``as_strided``
    of ``zeros``) and read it through another alias; such a write is no ancestor of the reader, yet
    the reader's value depends on it."""
    writes = [(i, n, _written(n)) for i, n in enumerate(graph.nodes)]
    writes = [(i, n, w) for i, n, w in writes if w and writes_here(n)]
    if not writes:
        return needed
    position = {n: i for i, n in enumerate(graph.nodes)}
    # Memory the graph's inputs hold was written, if at all, before this graph runs.
    given = {_storage(n.meta.get("val")) for n in graph.nodes if n in needed and stop(n)}
    changed = True
    while changed:
        changed = False
        last_read: dict[int, int] = {}
        for node in needed:
            for read in node.all_input_nodes:
                storage = _storage(read.meta.get("val"))
                if storage is not None:
                    last_read[storage] = max(last_read.get(storage, -1), position[node])
        for i, node, storages in writes:
            if node in needed:
                continue
            if any(last_read.get(s, -1) > i for s in storages if s not in given):
                needed |= _ancestors([node], stop=stop)
                changed = True
    return needed


def _split(joint: GraphModule, num_fwd_outputs: int, saved: list[Node]) -> tuple[GraphModule, GraphModule]:
    """The forward and backward modules for a choice of saved values (tensors first, then sizes)."""
    saved_tensors = [n for n in saved if not _is_sym(n)]
    saved_syms = [n for n in saved if _is_sym(n)]
    saved = saved_tensors + saved_syms
    primals = [n for n in joint.graph.nodes if _is_primal(n)]
    tangents = [n for n in joint.graph.nodes if _is_tangent(n)]
    fwd_outputs, bwd_outputs = _outputs(joint.graph, num_fwd_outputs)
    from_tangents, _ = _backward_region(joint.graph)
    fw = _extract(joint, primals, [*fwd_outputs, *saved], lambda n: n not in from_tangents)
    bw = _extract(joint, saved + tangents, bwd_outputs, lambda n: n in from_tangents)
    _report(saved_tensors, saved_syms)
    return fw, bw


def _report(saved_tensors: list[Node], saved_syms: list[Node]) -> None:
    if log.isEnabledFor(logging.INFO):
        nbytes = sum(_size_of(n) for n in saved_tensors)
        log.info(
            "the partitioner saved %d tensors (%s) and %d symbolic sizes for the backward",
            len(saved_tensors),
            _format_bytes(nbytes),
            len(saved_syms),
        )


def _format_bytes(n: float) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{int(n)} bytes"


def _size_of(node: Node) -> float:
    """The bytes of a node's value (of each of its values); sizes that are symbols count at their hint."""
    val = node.meta.get("val")
    values = val if isinstance(val, list | tuple) else [val]
    total = 0.0
    for value in values:
        if isinstance(value, Tensor):
            numel = 1
            for s in value.shape:
                numel *= _hint(s)
            total += float(numel * value.dtype.itemsize)
        else:
            total += 1.0
    return total


def _hint(s) -> int:
    if isinstance(s, SymInt):
        hint = getattr(s.node, "hint", None)
        return int(hint) if hint is not None else config.unknown_size_hint
    return int(s)


# -- the two partitioners ------------------------------------------------------------------------


def _forward_nodes(joint: GraphModule, num_fwd_outputs: int) -> set[Node]:
    """What the forward must compute: its outputs' ancestors, and sizes computed from primals only."""
    fwd_outputs, _ = _outputs(joint.graph, num_fwd_outputs)
    forward = _ancestors(fwd_outputs) | {n for n in joint.graph.nodes if _is_primal(n)}
    from_tangents, _ = _backward_region(joint.graph)
    for node in joint.graph.nodes:
        if _is_sym(node) and node not in from_tangents:
            forward |= _ancestors([node])
    # Every output of a node the forward runs comes from the forward, even one only the backward
    # reads (a batch norm's saved mean): else the node itself would be saved, all of its outputs with it.
    for node in joint.graph.nodes:
        if node.target is operator.getitem and node.args[0] in forward and _is_multi_output(node.args[0]):
            forward.add(node)
    return {n for n in forward if n.op != "output" and not _is_tangent(n)}


def default_partition(
    joint_module: GraphModule, _joint_inputs, *, num_fwd_outputs: int, **_: object
) -> tuple[GraphModule, GraphModule]:
    """Save every forward value the backward reads (eager autograd's choice)."""
    forward = _forward_nodes(joint_module, num_fwd_outputs)
    # Only backward nodes that reach a gradient or a write count: a dead node of the joint graph (a
    # batch norm's unused output read by a gradient formula's discarded branch) would keep a whole
    # activation alive for nothing.
    backward = _backward_needs(joint_module.graph, num_fwd_outputs) - forward
    saved: list[Node] = []
    for node in joint_module.graph.nodes:
        if node not in forward:
            continue
        if any(u in backward for u in node.users):
            saved.append(node)
    saved = _resolve_multi_outputs(saved)
    return _split(joint_module, num_fwd_outputs, saved)


def _resolve_multi_outputs(saved: list[Node]) -> list[Node]:
    """A node with several outputs is saved through its ``getitem`` users, never as a tuple."""
    resolved: list[Node] = []
    for node in saved:
        if isinstance(node.meta.get("val"), list | tuple):
            for user in node.users:
                if user.target is operator.getitem and user not in resolved:
                    resolved.append(user)
        elif node not in resolved:
            resolved.append(node)
    return resolved


# Ops besides pointwise ops and views that the min-cut partitioner may run again in the backward.
_RECOMPUTABLE_NAMES = frozenset(
    {
        "_to_copy",
        "to",
        "clone",
        "expand",
        "view",
        "reshape",
        "_unsafe_view",
        "alias",
        "detach",
        "squeeze",
        "unsqueeze",
        "permute",
        "transpose",
        "t",
        "select",
        "slice",
        "split",
        "split_with_sizes",
        "as_strided",
        "full",
        "zeros",
        "ones",
        "full_like",
        "zeros_like",
        "ones_like",
        "empty",
        "empty_like",
        "empty_strided",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "scalar_tensor",
        "where",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
    }
)


def _recomputable(node: Node, written: set[int] = frozenset()) -> bool:
    if node.op != "call_function":
        return False
    if written and any(_storage(n.meta.get("val")) in written for n in node.all_input_nodes):
        return False  # its inputs change later: running it again would read other values
    target = node.target
    if target is operator.getitem:
        return _recomputable(node.args[0])
    if target is _rng.philox_call:
        return _rng.is_recomputable(node)
    if not isinstance(target, OpOverload):
        return _is_sym(node)  # arithmetic on sizes
    tags = target.tags
    if "random" in tags or target.schema.is_mutable:
        return False
    if "pointwise" in tags or "view" in tags:
        return True
    if target.name in _REDUCTIONS:
        return not _shrinks(node)
    return target.name in _RECOMPUTABLE_NAMES


# Reductions the partitioner may run again unless they shrink their input (``_shrinks``).
_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin"})


def _shrinks(node: Node) -> bool:
    """Whether a reduction's output is under a quarter of its inputs' bytes: a batch norm's
    statistics are a read of the whole activation to make a few numbers, cheaper saved than run
    again in the backward (PyTorch's partitioner draws the line at the same ratio)."""
    inputs = sum(_size_of(n) for n in node.all_input_nodes if not _is_sym(n))
    return 4 * _size_of(node) < inputs


def _backward_needs(graph: Graph, num_fwd_outputs: int) -> set[Node]:
    """The nodes the backward's gradients and in-place writes are computed from."""
    _, bwd_outputs = _outputs(graph, num_fwd_outputs)
    from_tangents, _ = _backward_region(graph)
    return _ancestors([*bwd_outputs, *(n for n in from_tangents if _written(n))])


def min_cut_rematerialization_partition(
    joint_module: GraphModule,
    _joint_inputs,
    compiler: str = "inductor",
    *,
    num_fwd_outputs: int,
    **_: object,
) -> tuple[GraphModule, GraphModule]:
    """Save the fewest bytes: a minimum cut between the forward's and the backward's required nodes."""
    graph = joint_module.graph
    forward = _forward_nodes(joint_module, num_fwd_outputs)
    from_tangents, backward_written = _backward_region(graph)
    # In-place writes of the backward (gradient buffers filled through views) count as its outputs.
    backward_needs = _backward_needs(graph, num_fwd_outputs)
    relevant = (forward | backward_needs) - from_tangents
    # Memory the forward writes in place: what reads it may not run again later.
    written = {s for node in graph.nodes if node not in from_tangents for s in _written(node)}
    steps = _steps_to_backward(graph, from_tangents)
    network = FlowNetwork()
    for node in graph.nodes:
        if node not in relevant or node.op == "output":
            continue
        inside, outside = (node, "in"), (node, "out")
        if _storage(node.meta.get("val")) in backward_written and not _is_primal(node):
            # A buffer the backward fills in place: made in the backward, never saved.
            network.add_edge(inside, "sink", math.inf)
        elif _is_primal(node) or not _recomputable(node, written):
            # Computed in the forward no matter what.
            network.add_edge("source", inside, math.inf)
        if any(u in from_tangents for u in node.users):
            # A backward node reads it: it crosses to the backward, saved or recomputed there.
            network.add_edge(outside, "sink", math.inf)
        capacity = math.inf if _is_multi_output(node) else _cost(node) * 1.1 ** min(steps[node], 100)
        network.add_edge(inside, outside, capacity)
        for user in node.users:
            if user in relevant:
                network.add_edge(outside, (user, "in"), math.inf)
    if "sink" not in network:
        return _split(joint_module, num_fwd_outputs, [])
    if math.isinf(network.max_flow("source", "sink")):
        raise RuntimeError("min_cut_rematerialization_partition: a value must be both in the forward and recomputed")
    reachable = network.source_side("source")
    saved = [
        node
        for node in graph.nodes
        if node in relevant and (node, "in") in reachable and (node, "out") not in reachable
    ]
    return _split(joint_module, num_fwd_outputs, _resolve_multi_outputs(saved))


def _steps_to_backward(graph: Graph, backward: set[Node]) -> dict[Node, int]:
    """For each node, the fewest edges from it to a node of ``backward`` (at least 1; a large number
    where none leads there). A value's bytes cost more to save the farther it is from the backward, so
    that of two equal cuts the one nearer the backward wins: saving a ReLU's output, not its input,
    leaves the backward nothing to run again."""
    steps: dict[Node, int] = {}
    for node in reversed(graph.nodes):
        near = [1 if u in backward else steps.get(u, 10**6) + 1 for u in node.users]
        steps[node] = min(near, default=10**6)
    return steps


def _is_multi_output(node: Node) -> bool:
    return isinstance(node.meta.get("val"), list | tuple)


def _cost(node: Node) -> float:
    """Bytes to save a node's value; a size or an offset costs almost nothing."""
    if _is_sym(node):
        return 1.0
    return _size_of(node)
