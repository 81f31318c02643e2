"""Derivatives of the matrix products (``ember.core.families.matmul``)."""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.mm.default, save=("self", "mat2"))
def _mm(grad, self, mat2, needs, **_):
    return (grad.mm(mat2.t()) if needs[0] else None), (self.t().mm(grad) if needs[1] else None)
