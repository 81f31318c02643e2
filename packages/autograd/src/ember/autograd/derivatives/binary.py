"""Derivatives of the binary pointwise ops (``ember.core.families.binary``)."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.add.Tensor, jvp="linear")
def _add(grad, self, other, alpha, **_):
    return grad, (grad if alpha == 1 else grad * alpha)


@derivative(aten.sub.Tensor, jvp="linear")
def _sub(grad, self, other, alpha, **_):
    return grad, (-grad if alpha == 1 else grad * -alpha)


@derivative(aten.mul.Tensor, save=("self", "other"))
def _mul(grad, self, other, needs, **_):
    return (grad * other if needs[0] else None), (grad * self if needs[1] else None)


@derivative(aten.div.Tensor, save=("self", "other"))
def _div(grad, self, other, needs, **_):
    g_self = grad / other if needs[0] else None
    g_other = -grad * self / (other * other) if needs[1] else None
    return g_self, g_other
