"""Derivatives of the reductions (``ember.core.families.reductions``)."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


def _unsqueeze_dims(grad, shape: tuple, dim, keepdim: bool):
    """``grad`` of a reduction over ``dim`` given its input ``shape``, with the reduced dims back as 1."""
    ndim = len(shape)
    if keepdim or ndim == 0:
        return grad
    if dim is None or (isinstance(dim, list | tuple) and len(dim) == 0):
        return grad.reshape([1] * ndim)
    dims = sorted(d % ndim for d in ((dim,) if isinstance(dim, int) else dim))
    for d in dims:
        grad = grad.unsqueeze(d)
    return grad


@derivative(aten.sum.default, jvp="linear")
def _sum(grad, self, **_):
    return grad.expand(self.shape)


@derivative(aten.sum.dim_IntList, jvp="linear")
def _sum_dim(grad, self, dim, keepdim, **_):
    return _unsqueeze_dims(grad, tuple(self.shape), dim, keepdim).expand(self.shape)


@derivative(aten.mean.default, jvp="linear")
def _mean(grad, self, **_):
    return grad.expand(self.shape) / max(self.numel(), 1)


@derivative(aten.mean.dim, jvp="linear")
def _mean_dim(grad, self, dim, keepdim, **_):
    shape = tuple(self.shape)
    if dim is None or len(dim) == 0:
        count = self.numel()
    else:
        count = 1
        for d in dim:
            count *= shape[d % len(shape)] if shape else 1
    return _unsqueeze_dims(grad, shape, dim, keepdim).expand(self.shape) / max(count, 1)
