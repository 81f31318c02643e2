"""Derivatives of the cumulative ops (``ember.core.aten.reductions.scans``).

``cumsum``'s gradient is the reversed cumulative sum of the incoming gradient. ``cumprod``'s is
``revcumsum(grad * result) / input`` when no input is zero, as in PyTorch. With zeros, PyTorch's rule
too: the elements before the first zero of a slice keep that form (summed only up to that zero),
the first zero gets the product before it times the products after it up to the second zero, and
later elements get nothing; linear in the dim's length. That form is exact but its own derivative
misses how the later elements depend on the first zero, so when a graph is being built (double
backward) every element's product of the others is formed explicitly instead, an n-by-n table per
slice, as PyTorch does in that case; so it is on the meta device and for tensor subclasses, where
no value can be read to choose.
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import conj
from ember.autograd.derivatives.reductions.reduction_common import values_readable
from ember.autograd.grad_mode import state
from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.factories.factories import eye_function, ones_function
from ember.core.aten.pointwise.ternary import where_function as where
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


def reversed_cumsum(t, dim: int):
    return t.flip([dim]).cumsum(dim).flip([dim])


@derivative(aten.cumsum.default, jvp="linear")
def _cumsum(grad, self, dim, **_):
    grad = grad.to(self.dtype)
    if grad.numel() <= 1 or grad.shape[normalize_dim(dim, grad.ndim)] == 1:
        return grad
    return reversed_cumsum(grad, normalize_dim(dim, grad.ndim))


@derivative(aten.cumprod.default, save=("self", "result"))
def _cumprod(grad, self, dim, result, **_):
    grad = grad.to(self.dtype)
    if self.numel() <= 1:
        return grad
    dim = normalize_dim(dim, self.ndim)
    if self.shape[dim] == 1:
        return grad
    if not values_readable(grad, self, result):
        return _with_zeros_differentiable(grad, self, dim)
    is_zero = self == 0
    if not bool(is_zero.any().item()):
        return reversed_cumsum(conj(result) * grad, dim) / conj(self)
    if state.enabled:
        return _with_zeros_differentiable(grad, self, dim)
    return _with_zeros(grad, self, dim, result, is_zero)


def _with_zeros(grad, x, dim: int, result, is_zero):
    zeros_so_far = is_zero.cumsum(dim)
    before = zeros_so_far == 0
    up_to_second = zeros_so_far == 1
    first_index = up_to_second.to(D.int8).argmax(dim, keepdim=True)
    first = is_zero.logical_and(up_to_second)
    between = up_to_second.logical_and(first.logical_not())
    # Before the first zero: d y_i / d x_j = y_i / x_j, summed over the i before that zero (the later
    # terms are 0 and are left out, so an inf there gives no NaN).
    head = reversed_cumsum(where(before, conj(result) * grad, 0.0), dim) / conj(where(before, x, 1.0))
    # At the first zero: the product before it times the products from it up to the second zero.
    after = (where(between, conj(x), 1.0).cumprod(dim) * where(up_to_second, grad, 0.0)).sum(dim, keepdim=True)
    prefix = conj(result).gather(dim, (first_index - 1).clamp(min=0))
    at_zero = after * where(first_index == 0, 1.0, prefix)
    return where(before, head, where(first, at_zero, 0.0))


def _with_zeros_differentiable(grad, x, dim: int):
    """sum over i >= j of grad_i * prod(x_l for l <= i, l != j), for every j, by an n x n table."""
    shape = tuple(x.shape)
    n = shape[dim]
    table_shape = (*shape[:dim], n, *shape[dim:])  # [..., j, l, ...]
    rows = x.reshape((*shape[:dim], 1, *shape[dim:])).expand(table_shape)
    tail = (1,) * (len(shape) - dim - 1)
    eye = eye_function(n, dtype=rows.dtype, device=x.device).bool().reshape((n, n, *tail))
    upper = ones_function((n, n), device=x.device).bool().triu().reshape((n, n, *tail))
    products = where(eye, 1.0, rows).cumprod(dim + 1)  # [.., j, i, ..]: prod over l <= i, l != j
    terms = conj(products) * grad.reshape((*shape[:dim], 1, *shape[dim:]))
    return where(upper, terms, 0.0).sum(dim + 1)
