"""Freezing (``ember._inductor.config.freezing = True``): parameters and buffers as constants of the graph.

For inference graphs only (compiled under ``no_grad``), as in PyTorch. The graph's inputs that are
module state (``nn.Parameter``s, and the tensors Dynamo read as attributes, such as buffers) become
constants: every node that depends only on them (a transposed weight, BatchNorm's
``weight * rsqrt(running_var + eps)``, a cast of a weight) is computed once, at compile time, by its
eager kernel, and the compiled graph takes the results as inputs that the wrapper passes itself, laid
out contiguous (the layout the GEMMs and kernels read best, chosen once). An inference batch norm
after a convolution is folded into the convolution's weight and bias; elsewhere it becomes a
multiply-add by constants, fused into the kernels around it.

The contract is PyTorch's: a frozen parameter or buffer changed after compiling is not noticed, and the
compiled program goes on using the values it froze. Compile again (``ember.compiler.reset()``, or a new
``ember.compile``) after changing weights.
"""

from __future__ import annotations

import copy
import logging
import operator
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
    from ember.fx.graph_module import GraphModule

    graph = copy.deepcopy(gm.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    known: dict[Any, Any] = {placeholders[i]: v for i, v in frozen.items()}
    folded = _fold(graph, known)
    constants: list[Tensor] = []
    last = [placeholders[-1]]

    def add_constant(value: Tensor) -> Any:
        with graph.inserting_after(last[0]):
            ph = graph.placeholder(f"frozen_{len(constants)}")
        ph.meta = {"val": value}
        last[0] = ph
        constants.append(value.contiguous())  # the layout kernels and GEMMs read best, chosen once
        return ph

    batch_norms = fold_batch_norms(graph, known, add_constant)
    # the known values something else reads become the constants
    for node in [n for n in known if isinstance(known[n], Tensor) and any(u not in known for u in n.users)]:
        node.replace_all_uses_with(add_constant(known[node]))
    for node in reversed(list(graph.nodes)):
        if node in known and not node.users:
            graph.erase_node(node)
    keep = [i for i in range(len(placeholders)) if i not in frozen]
    inputs = [example_inputs[i] for i in keep] + constants
    log.info(
        "froze %d inputs: %d nodes folded, %d batch norms folded, %d constants",
        len(frozen), folded, batch_norms, len(constants),
    )  # fmt: skip
    compiled = inner(GraphModule(gm, graph), inputs)
    return FrozenGraph(compiled, keep, constants, folded + batch_norms)


def _fold(graph: Any, known: dict) -> int:
    """Compute, by their eager kernels, the nodes whose inputs are all known; how many."""
    folded = 0
    for node in list(graph.nodes):
        if not _foldable(node) or not all(a in known for a in node.all_input_nodes):
            continue
        known[node] = node.target(*_values(node.args, known), **_values(node.kwargs, known))
        folded += 1
    return folded


def _batch_norm_ops() -> tuple:
    from ember.core import ops

    names = ("_native_batch_norm_legit", "native_batch_norm", "_native_batch_norm_legit_no_training")
    return tuple(getattr(ops.aten, n).default for n in names if hasattr(ops.aten, n))


def _batch_norm_arguments(node: Any) -> tuple:
    """``(input, weight, bias, mean, var, training, eps)`` of a batch norm node of any of the forms."""
    from ember.core import ops

    if node.target is ops.aten._native_batch_norm_legit_no_training.default:  # (..., momentum, eps)
        x, w, b, mean, var, _, eps = node.args[:7]
        return x, w, b, mean, var, False, eps
    x, w, b, mean, var, training, _, eps = node.args[:8]  # (..., training, momentum, eps)
    return x, w, b, mean, var, training, eps


def fold_batch_norms(graph: Any, known: dict, add_constant: Callable[[Tensor], Any]) -> int:
    """Inference batch norms with known statistics and affine parameters become ``x * scale + shift``
    with constant ``scale``/``shift``; after a convolution with known weights (its only reader), they
    fold into the convolution's weight and bias instead. Returns how many were folded."""
    from ember.core import ops

    aten = ops.aten
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _batch_norm_ops():
            continue
        x, w, b, mean, var, training, eps = _batch_norm_arguments(node)
        users = list(node.users)
        if training or any(a is not None and a not in known for a in (w, b, mean, var)):
            continue
        if any(u.target is not operator.getitem or (u.args[1] != 0 and u.users) for u in users):
            continue
        scale = (known[var] + eps).rsqrt()
        if w is not None:
            scale = scale * known[w]
        shift = -known[mean] * scale
        if b is not None:
            shift = shift + known[b]
        conv = x if x.op == "call_function" and x.target is aten.convolution.default else None
        if (
            conv is not None
            and len(conv.users) == 1
            and not conv.args[6]
            and conv.args[1] in known
            and (conv.args[2] is None or conv.args[2] in known)
        ):
            weight = known[conv.args[1]]
            bias = shift if conv.args[2] is None else known[conv.args[2]] * scale + shift
            args = list(conv.args)
            args[1] = add_constant(weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1)))
            args[2] = add_constant(bias)
            conv.args = tuple(args)
            replacement = conv
        else:
            out = next(u for u in users if u.args[1] == 0)
            shape = (-1,) + (1,) * (out.meta["val"].ndim - 2)
            with graph.inserting_before(node):
                mul = graph.call_function(aten.mul.Tensor, (x, add_constant(scale.reshape(shape))))
                replacement = graph.call_function(aten.add.Tensor, (mul, add_constant(shift.reshape(shape))))
            mul.meta = {"val": out.meta["val"]}
            replacement.meta = dict(out.meta)
        for u in users:
            if u.args[1] == 0:
                u.replace_all_uses_with(replacement)
            graph.erase_node(u)
        graph.erase_node(node)
        count += 1
    return count


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


__all__ = ["FrozenGraph", "compile_frozen", "fold_batch_norms", "freeze", "is_module_state"]
