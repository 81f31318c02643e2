"""Running compiled graphs: the autograd.Function around a compiled forward and backward.

The forward graph returns ``(*outputs, *saved tensors, *saved sizes)``; the Function hands the
outputs to the caller and keeps the rest for the backward graph, which takes
``(*saved tensors, *saved sizes, *tangents)`` and returns a gradient per input that requires one.
Outputs that alias an input are not the Function's outputs: the caller's wrapper makes them again as
views of the real inputs (``as_strided`` with the sizes the forward produced), so autograd sees
them as what they are. The random state (Philox seed and offset of the default generator) enters the
forward as two trailing inputs and leaves it as one trailing output, the offset to continue from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ember.aot._metadata import ViewAndMutationMeta
from ember.autograd import Function, is_grad_enabled, no_grad
from ember.core.generator import default_generator
from ember.core.tensor import Tensor

DOUBLE_BACKWARD = "aot_function does not support double backward"

# The forward's full outputs of the call in progress on this thread (views of inputs included).
_last_outputs = threading.local()


def call_boxed(compiled: Callable, args: list) -> Any:
    """Call a compiled graph: boxed ones take the argument list itself (and may clear it)."""
    if getattr(compiled, "_boxed_call", False):
        return compiled(args)
    return compiled(*args)


@dataclass
class CompiledPlan:
    """Everything the runtime needs about one compiled program."""

    meta: ViewAndMutationMeta
    tensor_positions: list[int]  # which flat inputs are tensors (the graphs' inputs)
    grad_inputs: list[int]  # which graph inputs receive gradients
    num_saved_tensors: int
    num_saved_syms: int
    rng: bool  # the forward takes (seed, offset) and returns the final offset
    forward: Callable
    backward: Callable | None
    # Graph inputs the program mutates: the forward returns their new values after its outputs.
    mutated_inputs: list[int] = field(default_factory=list)


def _regenerate_aliases(plan: CompiledPlan, flat_args: list, outs: list) -> list:
    """Outputs that alias inputs, remade as views of the real inputs."""
    result = list(outs)
    for i, info in enumerate(plan.meta.outputs):
        if info.is_tensor and info.alias_of_input is not None:
            out = outs[i]
            base = flat_args[info.alias_of_input]
            result[i] = _alias_of(base, out)
    return result


def _alias_of(base: Tensor, out: Tensor) -> Tensor:
    """``out``'s geometry as a view of ``base``. A view of another dtype (``view_as_real``,
    ``view_as_complex``, ``view(dtype)``) reads the base's storage in ``out``'s dtype first; between
    complex and real dtypes through the complex views, which autograd differentiates."""
    from ember.core.aten.shape.complex_views import view_as_complex, view_as_real

    geometry = (tuple(out.shape), tuple(out.stride()), out.storage_offset())
    if out.dtype is base.dtype:
        return base.as_strided(*geometry)
    elements = base._storage.nbytes // base.dtype.itemsize  # the whole storage, in the base's dtype
    if base.dtype.is_complex and out.dtype is base.dtype.to_real():
        return view_as_real(base).as_strided(*geometry)
    if out.dtype.is_complex and base.dtype is out.dtype.to_real():
        return view_as_complex(base.as_strided((elements // 2, 2), (2, 1), 0)).as_strided(*geometry)
    return base.as_strided((elements,), (1,), 0).view(out.dtype).as_strided(*geometry)


def _with_rng(plan: CompiledPlan, args: list) -> list:
    if plan.rng:
        args = [*args, default_generator.initial_seed(), default_generator.get_offset()]
    return args


def _finish(plan: CompiledPlan, inputs: list, outs: list) -> list:
    """What follows the forward's outputs: the new values of mutated inputs, copied onto the real
    inputs as eager's in-place ops would have left them, then the Philox offset after the graph's
    draws, which the default generator moves to. Returns the outputs without them."""
    at = len(plan.meta.outputs)
    extra = len(plan.mutated_inputs)
    if extra:
        with no_grad():
            for position, value in zip(plan.mutated_inputs, outs[at : at + extra], strict=True):
                target = inputs[position]
                if tuple(target.shape) != tuple(value.shape):
                    target.resize_(tuple(value.shape))
                target.copy_(value)
    if plan.rng:
        default_generator.set_offset(int(outs[at + extra]))
        extra += 1
    return outs[:at] + outs[at + extra :] if extra else outs


def run_inference(plan: CompiledPlan, flat_args: list) -> list:
    tensors = [flat_args[i] for i in plan.tensor_positions]
    outs = list(call_boxed(plan.forward, _with_rng(plan, tensors)))
    outs = _finish(plan, tensors, outs)
    # Views of inputs that require grad are differentiable as eager's are (grad mode permitting).
    return _regenerate_aliases(plan, flat_args, outs)


def autograd_function(plan: CompiledPlan) -> type[Function]:
    """The Function class that runs ``plan``'s graphs (made once per compiled program)."""
    num_outputs = len(plan.meta.outputs)
    num_inputs = len(plan.tensor_positions)
    tangent_outputs = plan.meta.tangent_outputs

    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx, *inputs):
            outs = list(call_boxed(plan.forward, _with_rng(plan, list(inputs))))
            outs = _finish(plan, list(inputs), outs)
            user = outs[:num_outputs]
            saved = outs[num_outputs : num_outputs + plan.num_saved_tensors]
            ctx.save_for_backward(*saved)
            ctx.symints = outs[num_outputs + plan.num_saved_tensors :]
            _last_outputs.value = user  # for run_autograd: the outputs apply() does not return
            # The Function's own outputs: the tensors that are not views of inputs.
            returned = [user[i] for i, o in enumerate(plan.meta.outputs) if o.is_tensor and o.alias_of_input is None]
            differentiable = {id(user[i]) for i in tangent_outputs}
            ctx.mark_non_differentiable(*[t for t in returned if id(t) not in differentiable])
            ctx.returned_kinds = [id(t) in differentiable for t in returned]
            return tuple(returned)

        @staticmethod
        def backward(ctx, *grads):
            kinds = ctx.returned_kinds
            tangents = [_as_tangent(g) for g, differentiable in zip(grads, kinds, strict=True) if differentiable]
            saved = list(ctx.saved_tensors)
            args = [*saved, *ctx.symints, *tangents]
            if is_grad_enabled():
                with no_grad():
                    results = list(call_boxed(plan.backward, args))
                results = _NoDoubleBackward.wrap(results, [*saved, *tangents])
            else:
                results = list(call_boxed(plan.backward, args))
            per_input: list = [None] * num_inputs
            for position, grad in zip(plan.grad_inputs, results, strict=True):
                per_input[position] = grad
            return tuple(per_input)

    return CompiledFunction


def run_autograd(plan: CompiledPlan, function: type[Function], flat_args: list) -> list:
    tensors = [flat_args[i] for i in plan.tensor_positions]
    returned = function.apply(*tensors)
    if not isinstance(returned, tuple):
        returned = (returned,)
    outs = list(_last_outputs.value)
    _last_outputs.value = None
    it = iter(returned)
    for i, info in enumerate(plan.meta.outputs):
        if info.is_tensor and info.alias_of_input is None:
            outs[i] = next(it)
    return _regenerate_aliases(plan, flat_args, outs)


def _as_tangent(grad: Tensor) -> Tensor:
    # The backward graph was traced with contiguous tangents; its view ops assume that layout.
    return grad.contiguous()


class _NoDoubleBackward(Function):
    """Gradients that refuse to be differentiated again (the backward graph was not traced twice)."""

    @staticmethod
    def forward(ctx, results_box, *inputs):
        return tuple(r.clone() if isinstance(r, Tensor) else r for r in results_box)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(DOUBLE_BACKWARD)

    @classmethod
    def wrap(cls, results: list, inputs: list) -> list:
        needing = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
        if not needing:
            return results
        tensors = [r for r in results if isinstance(r, Tensor)]
        out = cls.apply(tensors, *needing)
        out = list(out) if isinstance(out, tuple) else [out]
        it = iter(out)
        return [next(it) if isinstance(r, Tensor) else r for r in results]


class CompiledProgram:
    """One compiled program: its plan and how it is run (with autograd or without)."""

    def __init__(self, plan: CompiledPlan, out_spec: Any, needs_autograd: bool) -> None:
        self.plan = plan
        self.out_spec = out_spec
        self.needs_autograd = needs_autograd
        self.function = autograd_function(plan) if needs_autograd else None

    def __call__(self, flat_args: list) -> list:
        if self.needs_autograd:
            return run_autograd(self.plan, self.function, flat_args)
        return run_inference(self.plan, flat_args)
