"""``ember.autograd.backward`` and ``ember.autograd.grad``: argument handling over the engine."""

from __future__ import annotations

from ember.autograd.engine import run_backward
from ember.autograd.graph import GradientEdge
from ember.core.aten.factories.factories import zeros_like
from ember.core.tensor import Tensor


def _as_tuple(value, what: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, Tensor | GradientEdge):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(value)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(value).__name__}")


def _grads_for(outputs: tuple, grad_outputs) -> list:
    if grad_outputs is None:
        return [None] * len(outputs)
    grads = list(_as_tuple(grad_outputs, "grad_outputs")) if not isinstance(grad_outputs, Tensor) else [grad_outputs]
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} tensors and {len(outputs)} gradients")
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors, "tensors")
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    run_backward(outputs, _grads_for(outputs, grad_tensors), retain_graph, create_graph, inputs=inputs)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated."""
    outs = _as_tuple(outputs, "outputs")
    ins = _as_tuple(inputs, "inputs")
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    grads = _grads_for(outs, grad_outputs)
    if is_grads_batched:
        return _batched_grad(outs, ins, grads, retain_graph, create_graph, allow_unused, materialize_grads)
    result = run_backward(
        outs, grads, retain_graph, create_graph, inputs=ins, allow_unused=allow_unused, accumulate=False
    )
    if materialize_grads:
        result = tuple(zeros_like(t) if g is None else g for t, g in zip(ins, result, strict=True))
    return result


def _batched_grad(outs, ins, grads, retain_graph, create_graph, allow_unused, materialize_grads):
    """``is_grads_batched``: the first dimension of each grad_output is a batch, mapped with vmap."""
    from ember.func import vmap

    def one(*gs):
        return grad(
            outs,
            ins,
            gs,
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
        )

    return tuple(vmap(one)(*grads))
