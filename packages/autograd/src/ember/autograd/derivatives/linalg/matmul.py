"""Derivatives of the matrix products (``ember.core.aten.linalg.matmul``).

Complex operands take conjugates as PyTorch's formulas do (the gradient of ``a @ b`` with respect to
``a`` is ``grad @ b^H``). ``addmm`` and ``baddbmm`` scale by ``conj(beta)`` and ``conj(alpha)``; a zero
``beta`` gives ``self`` a gradient of zeros (the forward ignores ``self``, nan included).
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import conj
from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


def _h(m):
    """The conjugate transpose of the last two dims."""
    return conj(m.transpose(-2, -1))


def _scaled(t, factor):
    return t if factor == 1 else t * conj(factor)


@derivative(aten.mm.default, save=("self", "mat2"))
def _mm(grad, self, mat2, needs, **_):
    return (grad.mm(_h(mat2)) if needs[0] else None), (_h(self).mm(grad) if needs[1] else None)


@derivative(aten.bmm.default, save=("self", "mat2"))
def _bmm(grad, self, mat2, needs, **_):
    return (grad.bmm(_h(mat2)) if needs[0] else None), (_h(self).bmm(grad) if needs[1] else None)


@derivative(aten.addmm.default, save=("mat1", "mat2"))
def _addmm(grad, self, mat1, mat2, beta, alpha, needs, **_):
    g_self = _scaled(grad, beta) if needs[0] else None
    g1 = _scaled(grad.mm(_h(mat2)), alpha) if needs[1] else None
    g2 = _scaled(_h(mat1).mm(grad), alpha) if needs[2] else None
    return g_self, g1, g2


@derivative(aten.baddbmm.default, save=("batch1", "batch2"))
def _baddbmm(grad, self, batch1, batch2, beta, alpha, needs, **_):
    g_self = _scaled(grad, beta) if needs[0] else None
    g1 = _scaled(grad.bmm(_h(batch2)), alpha) if needs[1] else None
    g2 = _scaled(_h(batch1).bmm(grad), alpha) if needs[2] else None
    return g_self, g1, g2


@derivative(aten.dot.default, save=("self", "tensor"))
def _dot(grad, self, tensor, needs, **_):
    return (grad * conj(tensor) if needs[0] else None), (grad * conj(self) if needs[1] else None)


@derivative(aten.vdot.default, save=("self", "other"))
def _vdot(grad, self, other, needs, **_):
    # vdot(a, b) = sum(conj(a) * b): the gradient of a is conj(grad) * b, that of b grad * a.
    return (conj(grad) * other if needs[0] else None), (grad * self if needs[1] else None)


@derivative(aten.mv.default, save=("self", "vec"))
def _mv(grad, self, vec, needs, **_):
    g_self = grad.unsqueeze(1) * conj(vec).unsqueeze(0) if needs[0] else None
    g_vec = _h(self).mv(grad) if needs[1] else None
    return g_self, g_vec
