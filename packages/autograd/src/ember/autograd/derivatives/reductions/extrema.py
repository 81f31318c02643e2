"""Derivatives of the extrema (``ember.core.aten.reductions.extrema``).

Reducing to one value (``max()``, ``amax``, ``aminmax``) splits the gradient evenly among the
elements equal to the result, as PyTorch does; along a dim with indices (``max(x, dim)``) the whole
gradient goes to the index returned. ``argmax``/``argmin`` give integers and carry none.
"""

from __future__ import annotations

from ember.autograd.derivatives.reductions.reduction_common import (
    evenly_distribute,
    restore,
    scale_by_count,
    select_back,
)
from ember.autograd.registry import derivative, nondifferentiable
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


def _extreme_backward(grad, self, dim, keepdim, result):
    shape = self.shape
    mask = restore(result, shape, dim, keepdim) == self
    return scale_by_count(restore(grad, shape, dim, keepdim), mask, dim)


@derivative(aten.amax.default, aten.amin.default, save=("self", "result"))
def _amax(grad, self, dim, keepdim, result, **_):
    return _extreme_backward(grad, self, dim, keepdim, result)


@derivative(aten.max.default, aten.min.default, save=("self", "result"))
def _max(grad, self, result, **_):
    return evenly_distribute(grad, self, result)


@derivative(aten.max.dim, aten.min.dim, save=("result",))
def _max_dim(grads, self, dim, keepdim, result, **_):
    grad = grads[0]
    if grad is None:
        return None
    return select_back(grad, normalize_dim(dim, self.ndim), result[1], self.shape, keepdim)


@derivative(aten.aminmax.default, save=("self", "result"))
def _aminmax(grads, self, dim, keepdim, result, **_):
    total = None
    for grad, value in zip(grads, result, strict=True):
        if grad is not None:
            part = _extreme_backward(grad, self, dim, keepdim, value)
            total = part if total is None else total + part
    return total


nondifferentiable(aten.argmax.default, aten.argmin.default)
