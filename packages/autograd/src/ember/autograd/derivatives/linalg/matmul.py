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


def _column_major(m) -> bool:
    """A matrix stored transposed (a Linear's weight as ``mm`` sees it, ``w.t()``)."""
    (rows, _), (s0, s1) = m.shape, m.stride()
    return all(isinstance(v, int) for v in (rows, s0, s1)) and s0 == 1 and s1 == rows


def _mat1_grad(grad, mat1, mat2):
    """``grad @ mat2^H``, made in ``mat1``'s layout where ``mat1`` is stored transposed (as PyTorch's
    ``mm_mat1_backward``): the gradient of a transposed parameter then comes out in the parameter's
    own layout, which its ``.grad`` takes without a transposing copy."""
    if _column_major(mat1):
        return conj(mat2).mm(grad.t()).t()
    return grad.mm(_h(mat2))


def _mat2_grad(grad, mat1, mat2):
    """``mat1^H @ grad``, made in ``mat2``'s layout where it is stored transposed (a Linear's weight)."""
    if _column_major(mat2):
        return grad.t().mm(conj(mat1)).t()
    return _h(mat1).mm(grad)


@derivative(aten.mm.default, save=("self", "mat2"))
def _mm(grad, self, mat2, needs, **_):
    return (_mat1_grad(grad, self, mat2) if needs[0] else None), (_mat2_grad(grad, self, mat2) if needs[1] else None)


@derivative(aten.bmm.default, save=("self", "mat2"))
def _bmm(grad, self, mat2, needs, **_):
    return (grad.bmm(_h(mat2)) if needs[0] else None), (_h(self).bmm(grad) if needs[1] else None)


@derivative(aten.addmm.default, save=("mat1", "mat2"))
def _addmm(grad, self, mat1, mat2, beta, alpha, needs, **_):
    g_self = _scaled(grad, beta) if needs[0] else None
    g1 = _scaled(_mat1_grad(grad, mat1, mat2), alpha) if needs[1] else None
    g2 = _scaled(_mat2_grad(grad, mat1, mat2), alpha) if needs[2] else None
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
