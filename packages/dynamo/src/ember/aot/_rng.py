"""Random ops as functions of a Philox seed and offset given to the graph.

Every random op of ember draws from a Philox stream: counters from the generator's offset onward,
under its seed. A traced graph that calls ``rand_like`` reads the default generator's state when it
runs, so a backward that recomputes the op would draw other numbers than the forward did. Here each
random op drawing from the default generator becomes ``philox_call(seed, offset, op, ...)``, which
runs the op with the default generator at ``(seed, offset)`` and returns its output and the offset
after it; the graph takes ``seed`` and the first offset as its last two primal inputs and returns the
final offset as the output after the forward's own. A recomputation in the backward gets the same
``(seed, offset)`` as a saved value, so it draws the same numbers; the forward draws exactly what
eager would, and the runtime moves the default generator past them as eager does.
"""

from __future__ import annotations

import operator
from typing import Any

from ember.aot import config
from ember.core.dispatch import OpOverload
from ember.core.generator import default_generator
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node


def philox_call(seed: int, offset: int, op: OpOverload, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """``op(*args, **kwargs)`` drawing from the default generator at ``(seed, offset)``; the generator's
    state is restored afterwards. Returns the op's output and the offset after its draws."""
    generator = default_generator
    saved = (generator.initial_seed(), generator.get_offset())
    generator.manual_seed(seed)
    generator.set_offset(offset)
    try:
        out = op(*args, **kwargs)
        after = generator.get_offset()
    finally:
        generator.manual_seed(saved[0])
        generator.set_offset(saved[1])
    return out, after


def is_random(node: Node) -> bool:
    target = node.target
    return node.op == "call_function" and isinstance(target, OpOverload) and "random" in target.tags


def _draws_from_default(node: Node) -> bool:
    schema = node.target.schema
    for i, argument in enumerate(schema.arguments):
        if argument.name == "generator":
            value = node.args[i] if i < len(node.args) else node.kwargs.get("generator")
            return value is None
    return True


def is_recomputable(node: Node) -> bool:
    """A rewritten random op that writes no input may run again in the backward."""
    if node.target is not philox_call:
        return False
    return not node.args[2].schema.is_mutable


def functionalize_rng(gm: GraphModule, num_fwd_outputs: int | None = None) -> tuple[GraphModule, bool]:
    """Rewrite the random ops of ``gm``; returns the graph and whether it now takes the Philox state.

    ``num_fwd_outputs``: for a joint graph, where the final offset goes among the outputs (after the
    forward's outputs); for an inference graph, None (it goes last)."""
    graph = gm.graph
    randoms = [n for n in graph.nodes if is_random(n) and _draws_from_default(n)]
    if not randoms or not config.functionalize_rng_ops:
        return gm, False
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals = [n for n in placeholders if str(n.target).startswith("primals")] or placeholders
    where = graph.inserting_after(primals[-1]) if primals else graph.inserting_before(next(iter(graph.nodes)))
    with where:
        seed = graph.placeholder("primals_rng_seed")
    with graph.inserting_after(seed):
        offset = graph.placeholder("primals_rng_offset")
    seed.meta["val"] = default_generator.initial_seed()
    offset.meta["val"] = 0
    for node in randoms:
        with graph.inserting_before(node):
            call = graph.call_function(philox_call, (seed, offset, node.target, *node.args), dict(node.kwargs))
            out = graph.call_function(operator.getitem, (call, 0))
            offset = graph.call_function(operator.getitem, (call, 1))
        call.meta = dict(node.meta)
        call.meta["val"] = (node.meta.get("val"), 0)
        out.meta = dict(node.meta)
        offset.meta["val"] = 0
        node.replace_all_uses_with(out)
        graph.erase_node(node)
    (output,) = graph.find_nodes(op="output")
    outs = list(output.args[0])
    at = len(outs) if num_fwd_outputs is None else num_fwd_outputs
    outs.insert(at, offset)
    output.args = (outs,)
    gm.recompile()
    return gm, True
