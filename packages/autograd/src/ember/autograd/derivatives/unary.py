"""Derivatives of the unary pointwise ops (``ember.core.families.unary``)."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.neg.default, jvp="linear")
def _neg(grad, self, **_):
    return -grad


@derivative(aten.sin.default, save=("self",), jvp="elementwise")
def _sin(grad, self, **_):
    return grad * self.cos()
