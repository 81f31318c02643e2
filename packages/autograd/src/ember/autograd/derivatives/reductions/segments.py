"""The derivative of ``segment_reduce`` (``ember.core.aten.reductions.segments``): PyTorch's backward op,
``_segment_reduce_backward``, for every reduction, with ``data``'s gradient only (the segment tensors
are integers). The backward op itself has no derivative, as in PyTorch."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.segment_reduce.default, save=("data", "lengths", "offsets", "result"))
def _segment_reduce(grad, data, reduce, lengths, offsets, axis, initial, result, **_):
    backward = aten._segment_reduce_backward.default
    grad_data = backward(grad, result, data, reduce, lengths=lengths, offsets=offsets, axis=axis, initial=initial)
    return grad_data, None, None, None
