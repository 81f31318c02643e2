"""Derivatives of the view ops (``ember.core.families.views``): each puts the gradient back in place."""

from __future__ import annotations

from ember.autograd.registry import derivative, nondifferentiable
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.view.default, aten.reshape.default, jvp="linear")
def _view(grad, self, **_):
    return grad.reshape(self.shape)


@derivative(aten.alias.default, jvp="linear")
def _alias(grad, self, **_):
    return grad


@derivative(aten.expand.default, jvp="linear")
def _expand(grad, self, **_):
    return grad  # the engine sums it down to self's shape


@derivative(aten.select.int, jvp="linear")
def _select(grad, self, dim, index, **_):
    out = grad.new_zeros(self.shape)  # new_zeros, not zeros: batched like grad under vmap
    out.select(dim, index).copy_(grad)
    return out


@derivative(aten.slice.Tensor, jvp="linear")
def _slice(grad, self, dim, start, end, step, **_):
    out = grad.new_zeros(self.shape)  # new_zeros, not zeros: batched like grad under vmap
    aten.slice.Tensor(out, dim, start, end, step).copy_(grad)
    return out


nondifferentiable(aten.detach.default)
