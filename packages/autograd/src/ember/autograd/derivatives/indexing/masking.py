"""Derivatives of the masked ops (``ember.core.aten.indexing.masking``).

The mask broadcasts against ``self`` (and ``masked_select``'s against the result's shape); a filled
or scattered position gives ``self`` no gradient. ``nonzero`` and its forms return indices.
"""

from __future__ import annotations

from ember.autograd.registry import derivative, nondifferentiable
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.aten.pointwise.ternary import where_function
from ember.core.aten.shape.joining import cat_function
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.masked_fill.Scalar, save=("mask",))
def _masked_fill(grad, self, mask, **_):
    return grad.masked_fill(mask, 0), None


@derivative(aten.masked_fill.Tensor, save=("mask",))
def _masked_fill_tensor(grad, self, mask, value, needs, **_):
    grad_self = grad.masked_fill(mask, 0) if needs[0] else None
    grad_value = None
    if needs[2]:
        grad_value = where_function(mask, grad, zeros_like(grad)).sum()
    return grad_self, None, grad_value


@derivative(aten.masked_scatter.default, save=("mask",))
def _masked_scatter(grad, self, mask, source, needs, **_):
    grad_self = grad.masked_fill(mask, 0) if needs[0] else None
    grad_source = None
    if needs[2]:
        # The source's first elements went to the masked positions, in order; the rest were unused.
        picked = grad.masked_select(mask)
        rest = source.numel() - picked.numel()
        if rest > 0:
            picked = cat_function([picked, picked.new_zeros(rest)])
        grad_source = picked.reshape(source.shape)
    return grad_self, None, grad_source


@derivative(aten.masked_select.default, save=("mask",))
def _masked_select(grad, self, mask, **_):
    from ember.core.layout import broadcast_shapes

    shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    zeros = zeros_function(shape, dtype=grad.dtype, device=grad.device)
    return zeros.masked_scatter(mask, grad), None  # summed down to self's shape where it broadcast


nondifferentiable(aten.nonzero.default, aten.nonzero_numpy.default, aten.nonzero_static.default)
