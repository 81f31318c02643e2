"""Freezing (``ember._inductor.config.freezing = True``): parameters and buffers as constants of the graph.

For inference graphs only (compiled under ``no_grad``), as in PyTorch. The graph's inputs that are
module state (``nn.Parameter``s, and the tensors Dynamo read as attributes, such as buffers) become
constants: every node that depends only on them (a transposed weight, BatchNorm's
``weight * rsqrt(running_var + eps)``, a cast of a weight) is computed once, at compile time, by its
eager kernel, and the compiled graph takes the results as inputs that the wrapper passes itself, laid
out contiguous (the layout the GEMMs and kernels read best, chosen once).

The contract is PyTorch's: a frozen parameter or buffer changed after compiling is not noticed, and the
compiled program goes on using the values it froze. Compile again (``ember.compiler.reset()``, or a new
``ember.compile``) after changing weights.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor

log = logging.getLogger(__name__)


def is_module_state(node: Any, value: Any) -> bool:
    """Whether a Dynamo graph input is module state: a Parameter, or a tensor read as an attribute."""
    from ember.nn.parameter import Parameter

    if isinstance(value, Parameter):
        return True
    source = node.meta.get("source")
    return isinstance(value, Tensor) and type(source).__name__ == "AttrSource"


def _foldable(node: Any) -> bool:
    from ember.aot._rng import philox_call

    if node.op != "call_function" or node.target is philox_call or not node.all_input_nodes:
        return False
    return "random" not in getattr(node.target, "tags", ())


class FrozenGraph:
    """A boxed callable: the compiled graph, given the frozen constants after the caller's inputs."""

    _boxed_call = True

    def __init__(self, compiled: Callable, keep: list[int], constants: list[Tensor], folded: int) -> None:
        self.compiled, self.keep, self.constants, self.folded = compiled, keep, constants, folded

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __call__(self, args: list) -> list:
        return self.compiled([args[i] for i in self.keep] + self.constants)


def freeze(gm: Any, example_inputs: list, frozen: dict[int, Tensor], inner: Callable) -> FrozenGraph:
    """Fold what depends only on the placeholders at the positions of ``frozen`` (their real values),
    and compile the rest with ``inner``; the folded values become the graph's last inputs."""
    memo: dict = {}
    graph = copy.deepcopy(gm.graph, memo)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    known: dict[Any, Any] = {placeholders[i]: v for i, v in frozen.items()}
    folded = 0
    for node in list(graph.nodes):
        if not _foldable(node) or not all(a in known for a in node.all_input_nodes):
            continue
        args = _values(node.args, known)
        kwargs = _values(node.kwargs, known)
        known[node] = node.target(*args, **kwargs)
        folded += 1
    # the known values something else reads become the constants
    frontier = [n for n in known if any(u not in known for u in n.users)]
    frontier = [n for n in frontier if isinstance(known[n], Tensor)]
    constants = []
    last = placeholders[-1]
    for k, node in enumerate(frontier):
        with graph.inserting_after(last):
            ph = graph.placeholder(f"frozen_{k}")
        ph.meta = {"val": known[node]}
        last = ph
        node.replace_all_uses_with(ph)
        constants.append(known[node].contiguous())
    for node in reversed(list(graph.nodes)):
        if node in known and not node.users:
            graph.erase_node(node)
    from ember.fx.graph_module import GraphModule

    keep = [i for i in range(len(placeholders)) if i not in frozen]
    inputs = [example_inputs[i] for i in keep] + constants
    log.info("froze %d inputs: %d nodes folded into %d constants", len(frozen), folded, len(constants))
    return FrozenGraph(inner(GraphModule(gm, graph), inputs), keep, constants, folded)


def _values(a: Any, known: dict) -> Any:
    if hasattr(a, "op") and hasattr(a, "users"):
        return known[a]
    if isinstance(a, list | tuple):
        return type(a)(_values(x, known) for x in a)
    if isinstance(a, dict):
        return {k: _values(v, known) for k, v in a.items()}
    return a


def compile_frozen(model: Any, example_inputs: list, inner: Callable, decompositions: dict) -> Callable:
    """The backend under freezing: AOT autograd's inference graph of ``model``, module state folded."""
    from ember.aot.aot_autograd import aot_module_simplified

    placeholders = [n for n in model.graph.nodes if n.op == "placeholder"]
    tensors = [i for i, a in enumerate(example_inputs) if isinstance(a, Tensor)]
    state = {k: example_inputs[i] for k, i in enumerate(tensors) if is_module_state(placeholders[i], example_inputs[i])}

    def fw_compiler(gm: Any, inputs: list) -> Callable:
        if not state:
            return inner(gm, inputs)
        return freeze(gm, inputs, state, inner)

    return aot_module_simplified(
        model, example_inputs, fw_compiler=fw_compiler, bw_compiler=inner, decompositions=decompositions
    )


__all__ = ["FrozenGraph", "compile_frozen", "freeze", "is_module_state"]
