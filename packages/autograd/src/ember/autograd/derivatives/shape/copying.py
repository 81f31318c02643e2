"""Derivatives of copies and fills (``ember.core.aten.shape.copying``)."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.clone.default, jvp="linear")
def _clone(grad, self, **_):
    return grad


@derivative(aten._to_copy.default, jvp="linear")
def _to_copy(grad, self, **_):
    return grad.to(self.dtype) if grad.device == self.device else grad.to(self.device, self.dtype)


@derivative(aten.copy_.default, aten.copy.default, jvp="linear")
def _copy(grad, self, src, **_):
    # Zeros, not None, for the overwritten tensor: its history still gets a gradient (x.grad is zeros), as in PyTorch.
    return grad.new_zeros(grad.shape), grad


@derivative(aten.fill_.Scalar, aten.zero_.default, aten.fill.Scalar, aten.zero.default, jvp="linear")
def _fill(grad, self, **_):
    return grad.new_zeros(grad.shape)
