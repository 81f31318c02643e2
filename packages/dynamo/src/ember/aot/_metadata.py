"""What one run of the user's function on fake tensors says about its inputs and outputs.

Before the joint graph is traced, AOT autograd runs the function once on fake tensors with grad
mode as the caller has it: that decides which outputs get a tangent (those that require grad and
are not views of inputs) and which outputs alias an input (returned later as real views of the real
input). Whether the function mutates an input is read from the traced graph (``mutated_inputs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ember.autograd import is_grad_enabled
from ember.core import ops as _ops
from ember.core.tensor import Tensor


@dataclass
class OutputInfo:
    is_tensor: bool
    requires_grad: bool = False
    # The index of the input whose storage the output shares, or None.
    alias_of_input: int | None = None


@dataclass
class ViewAndMutationMeta:
    outputs: list[OutputInfo] = field(default_factory=list)
    # The fake outputs of the run (the tangents are made in their image).
    fake_outputs: list[Any] = field(default_factory=list)
    # Inputs that require grad and were changed in place (their version moved).
    mutated_grad_inputs: list[int] = field(default_factory=list)

    @property
    def tangent_outputs(self) -> list[int]:
        """The outputs the joint graph differentiates: tensors that require grad and alias no input."""
        return [i for i, o in enumerate(self.outputs) if o.requires_grad and o.alias_of_input is None]


def unlifted_mutations(mutated: list[int]) -> RuntimeError:
    return RuntimeError(
        f"AOT autograd: the functionalized graph still writes its input(s) {mutated} in place; "
        "an op that functionalization leaves in place cannot mutate an input"
    )


def mutated_inputs(gm) -> list[int]:
    """The placeholders (by position) whose memory an op of the traced graph writes."""
    from ember.core.dispatch import OpOverload

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    storages = {
        id(n.meta["val"]._storage): i for i, n in enumerate(placeholders) if isinstance(n.meta.get("val"), Tensor)
    }
    mutated: set[int] = set()
    for node in gm.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, OpOverload) or not target.schema.is_mutable:
            continue
        if target is _ops.aten._native_batch_norm_legit.default and not _argument(node, 5, "training"):
            continue  # without training the running statistics are only read (PyTorch's ..._no_training)
        for i, argument in enumerate(target.schema.arguments):
            if not argument.is_write:
                continue
            value = node.args[i] if i < len(node.args) else node.kwargs.get(argument.name)
            val = getattr(value, "meta", {}).get("val")
            if isinstance(val, Tensor) and id(val._storage) in storages:
                mutated.add(storages[id(val._storage)])
    return sorted(mutated)


def _argument(node, index: int, name: str):
    return node.args[index] if index < len(node.args) else node.kwargs.get(name)


def collect_metadata(flat_fn, fake_args: list[Any]) -> ViewAndMutationMeta:
    """Run ``flat_fn`` on the fake inputs once and describe its outputs and input mutations."""
    storages = {id(a._storage): i for i, a in enumerate(fake_args) if isinstance(a, Tensor)}
    versions = [a._version if isinstance(a, Tensor) else None for a in fake_args]
    outs = flat_fn(*fake_args)
    meta = ViewAndMutationMeta(fake_outputs=list(outs))
    meta.mutated_grad_inputs = [
        i for i, a in enumerate(fake_args) if isinstance(a, Tensor) and a.requires_grad and a._version != versions[i]
    ]
    for out in outs:
        if not isinstance(out, Tensor):
            meta.outputs.append(OutputInfo(is_tensor=False))
            continue
        requires_grad = out.requires_grad and is_grad_enabled()
        meta.outputs.append(OutputInfo(True, requires_grad, storages.get(id(out._storage))))
    return meta


def lift_input_mutations(gm, num_outputs: int) -> list[int]:
    """Turn the ``copy_`` onto inputs a functionalized trace ends with into outputs.

    Each ``copy_(input, value)`` is removed and ``value`` becomes an output right after the first
    ``num_outputs`` outputs; returns the positions (among the placeholders) of the mutated inputs,
    in the order of their new values. The runtime copies the values onto the real inputs."""
    graph = gm.graph
    placeholders = {n: i for i, n in enumerate(n for n in graph.nodes if n.op == "placeholder")}
    mutated: list[int] = []
    values = []
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _ops.aten.copy_.default:
            continue
        target = node.args[0]
        if target not in placeholders:
            continue
        if placeholders[target] in mutated:
            raise RuntimeError(f"AOT autograd: the input {target.name} is written twice at the end of the trace")
        mutated.append(placeholders[target])
        values.append(node.args[1])
        node.replace_all_uses_with(target)
        graph.erase_node(node)
    if mutated:
        (output,) = graph.find_nodes(op="output")
        outs = list(output.args[0])
        output.args = (outs[:num_outputs] + values + outs[num_outputs:],)
        gm.recompile()
    return mutated
