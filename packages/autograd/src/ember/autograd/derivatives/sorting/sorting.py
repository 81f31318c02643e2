"""Derivatives of the selecting ops of ``ember.core.aten.sorting.sorting``: each value returned came
from one input element, named by the returned indices, and its gradient goes back there.

``median()``/``nanmedian()`` (of everything, no indices) split the gradient evenly among the elements
equal to the result (among the NaNs when it is NaN), as PyTorch does.
"""

from __future__ import annotations

from ember.autograd.derivatives.reductions.reduction_common import evenly_distribute, select_back
from ember.autograd.registry import derivative
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


@derivative(aten.median.default, aten.nanmedian.default, save=("self", "result"))
def _median(grad, self, result, **_):
    return evenly_distribute(grad, self, result)


def _back(grads, self, dim, keepdim, result):
    grad = grads[0]
    if grad is None:
        return None
    return select_back(grad, normalize_dim(dim, self.ndim), result[1], self.shape, keepdim)


@derivative(aten.median.dim, aten.nanmedian.dim, aten.mode.default, save=("result",))
def _median_dim(grads, self, dim, keepdim, result, **_):
    return _back(grads, self, dim, keepdim, result)


@derivative(aten.kthvalue.default, save=("result",))
def _kthvalue(grads, self, k, dim, keepdim, result, **_):
    return _back(grads, self, dim, keepdim, result)


@derivative(aten.sort.default, aten.sort.stable, aten.topk.default, save=("result",))
def _sort(grads, self, dim, result, **_):
    return _back(grads, self, dim, True, result)
