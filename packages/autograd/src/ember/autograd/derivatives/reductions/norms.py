"""Derivatives of the norms (``ember.core.aten.reductions.norms``).

``linalg_vector_norm`` follows PyTorch's rule per order, including at zero: ord 0 has no gradient;
ord 1 gives ``sgn(x)``; ord 2 gives ``x / norm`` (0 where the norm is 0); ord +-inf splits the
gradient among the elements whose magnitude is the result (and the NaNs); other orders give
``sgn(x) |x|^(p-1) / norm^(p-1)``, with 0 where the norm is 0 (p > 1) or where x is 0 (p < 1).
``nuclear_norm`` (the sum of singular values) goes through the SVD's derivative: ``U @ Vh`` per
matrix, times the gradient.
"""

from __future__ import annotations

import math

from ember.autograd.derivatives.linalg.svd import svd_backward
from ember.autograd.derivatives.reductions.reduction_common import reduced_dims, restore
from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.pointwise.ternary import where_function as where
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


def sgn(x):
    """``x / |x|`` (0 at 0): the sign of a real number, the direction of a complex one."""
    if x.dtype.category != D.COMPLEX:
        return x.sign()
    magnitude = x.abs()
    return where(magnitude == 0, 0.0, x / where(magnitude == 0, 1.0, magnitude))


@derivative(aten.linalg_vector_norm.default, save=("self", "result"))
def _vector_norm(grad, self, ord, dim, keepdim, result, **_):
    p = float(ord.item() if hasattr(ord, "item") else ord)
    if p == 0.0:
        return None
    grad = restore(grad, self.shape, dim, keepdim)
    norm = restore(result, self.shape, dim, keepdim)
    if p == 1.0:
        return sgn(self) * grad
    if p == 2.0:
        return grad * where(norm == 0, 0.0, self / norm)
    if math.isinf(p):
        magnitude = self.abs()
        mask = (magnitude == norm).logical_or(magnitude.isnan())
        dims = list(reduced_dims(self.ndim, dim))
        return sgn(self) * ((grad / mask.sum(dims, keepdim=True)) * mask)
    if p < 1.0:
        scaled = sgn(self) * where(self == 0, 0.0, self.abs().pow(p - 1))
        return scaled * grad * norm.pow(1 - p)
    scaled = sgn(self) * self.abs().pow(p - 1) if p < 2.0 else self * self.abs().pow(p - 2)
    return scaled * where(norm == 0, 0.0, grad / norm.pow(p - 1))


@derivative(aten.nuclear_norm.dim, save=("self",))
def _nuclear_norm(grad, self, dim, keepdim, **_):
    # The sum of the singular values of the matrices over ``dim``: U @ Vh per matrix, scaled by grad.
    first, second = (normalize_dim(d, self.ndim) for d in dim)
    matrices = self.movedim((first, second), (-2, -1))
    U, S, Vh = aten._linalg_svd.default(matrices, False, True)
    grad = restore(grad, self.shape, [first, second], keepdim).movedim((first, second), (-2, -1))
    gS = grad.squeeze(-1).expand(S.shape)
    return svd_backward(None, gS, None, U, S, Vh).movedim((-2, -1), (first, second))
