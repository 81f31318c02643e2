"""Derivative of ``cosine_similarity`` (``ember.core.aten.nn.similarity``).

PyTorch's composite divides each operand by its norm along ``dim``, clamped below at ``eps`` out of
autograd's sight (``clamp_min_`` under no-grad), and sums the products. Its gradient is therefore
that of ``sum((x1 / c1) * (x2 / c2))`` with ``c = max(|x|, eps)`` differentiated as if it were
``|x|`` (whose own gradient ``x / |x|`` is 0 at a zero vector). The formula follows that chain term
by term, after broadcasting the operands to a common shape, as the composite does.
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import where
from ember.autograd.registry import derivative
from ember.core.dispatch import ops
from ember.core.layout import broadcast_shapes
from ember.core.promotion import result_type

aten = ops.aten


def _through_norm(g_scaled, x, scaled, clamped, norm, dim: int):
    """The gradient of ``x`` from ``scaled = x / clamped``: direct, and through ``clamped`` taken as
    the norm of ``x``."""
    direct = g_scaled / clamped
    g_clamped = (-g_scaled * ((x / clamped) / clamped)).sum([dim], keepdim=True)
    return direct + x * where(norm == 0, 0, g_clamped / norm)


@derivative(aten.cosine_similarity.default, save=("x1", "x2"))
def _cosine_similarity(grad, x1, x2, dim, eps, needs, **_):
    dtype = result_type(x1, x2)
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    a, b = x1.to(dtype).expand(shape), x2.to(dtype).expand(shape)
    dim = dim % len(shape)
    n1 = (a * a).sum([dim], keepdim=True).sqrt()
    n2 = (b * b).sum([dim], keepdim=True).sqrt()
    c1, c2 = n1.clamp_min(eps), n2.clamp_min(eps)
    u, v = a / c1, b / c2
    g = grad.unsqueeze(dim)
    g1 = _through_norm(g * v, a, u, c1, n1, dim) if needs[0] else None
    g2 = _through_norm(g * u, b, v, c2, n2, dim) if needs[1] else None
    return g1, g2
