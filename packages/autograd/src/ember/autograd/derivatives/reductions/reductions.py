"""Derivatives of the reductions (``ember.core.aten.reductions.reductions``).

``prod`` follows PyTorch's rule at zeros: with no zero the gradient is ``result / input``; with zeros
it is the product of every other element, from exclusive cumulative products both ways, so that one
zero gets the product of the rest and several zeros give zeros exactly (computed, not assumed, when
a graph is being built, so that the second derivative is right too).
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import conj
from ember.autograd.derivatives.reductions.reduction_common import (
    count,
    expand_back,
    reduced_dims,
    restore,
    values_readable,
)
from ember.autograd.grad_mode import state
from ember.autograd.registry import derivative, nondifferentiable
from ember.core.aten.factories.factories import ones_function, ones_like, zeros_like
from ember.core.aten.shape.joining import cat_function
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


@derivative(aten.sum.default, jvp="linear")
def _sum(grad, self, **_):
    return grad.expand(self.shape)


@derivative(aten.sum.dim_IntList, jvp="linear")
def _sum_dim(grad, self, dim, keepdim, **_):
    return expand_back(grad, self.shape, dim, keepdim)


# A mean's gradient divides the reduced gradient and then broadcasts it into a new tensor: the
# same values as dividing the broadcast, without a pass over a stride-0 operand.
@derivative(aten.mean.default, jvp="linear")
def _mean(grad, self, **_):
    return (grad / max(self.numel(), 1)).expand(self.shape).contiguous()


@derivative(aten.mean.dim, jvp="linear")
def _mean_dim(grad, self, dim, keepdim, **_):
    return expand_back(grad / max(count(self.shape, dim), 1), self.shape, dim, keepdim).contiguous()


@derivative(aten.nansum.default, save=("self",))
def _nansum(grad, self, dim, keepdim, **_):
    return expand_back(grad.to(self.dtype), self.shape, dim, keepdim) * self.isnan().logical_not()


@derivative(aten.nanmean.default, save=("self",))
def _nanmean(grad, self, dim, keepdim, **_):
    # nanmean is nansum / (number of non-NaN elements): a slice of NaNs only gets NaN, as in PyTorch.
    present = self.isnan().logical_not()
    counts = present.sum(list(reduced_dims(self.ndim, dim)), keepdim=True)
    return (restore(grad, self.shape, dim, keepdim) / counts) * present


@derivative(aten.logsumexp.default, save=("self", "result"))
def _logsumexp(grad, self, dim, keepdim, result, **_):
    grad = restore(grad, self.shape, dim, keepdim)
    result = restore(result, self.shape, dim, keepdim)
    return grad * conj((self - result).exp())


# -- prod ---------------------------------------------------------------------------------------------


def _exclusive_products(x, dim: int):
    """For each element along ``dim``, the product of all the others (no division, so zeros are exact)."""
    n = x.shape[dim]
    if x.numel() == 0:
        return ones_like(x)
    ones_shape = list(x.shape)
    ones_shape[dim] = 1
    ones = ones_function(ones_shape, dtype=x.dtype, device=x.device)
    before = cat_function([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    after = cat_function([ones, x.narrow(dim, 1, n - 1).flip([dim])], dim).cumprod(dim).flip([dim])
    return before * after


@derivative(aten.prod.default, save=("self", "result"))
def _prod(grad, self, result, **_):
    if self.ndim == 0:
        return grad
    x = self.to(grad.dtype)
    if not values_readable(x):
        return (grad * conj(_exclusive_products(x.reshape(-1), 0))).reshape(x.shape)
    zeros = int((x == 0).sum().item())
    if zeros == 0:
        return grad * conj(result / x)
    if zeros > 1 and not state.enabled:
        return zeros_like(x)
    return (grad * conj(_exclusive_products(x.reshape(-1), 0))).reshape(x.shape)


@derivative(aten.prod.dim_int, save=("self", "result"))
def _prod_dim(grad, self, dim, keepdim, result, **_):
    if self.ndim == 0:
        return grad
    x = self.to(grad.dtype)
    dim = normalize_dim(dim, x.ndim)
    grad = restore(grad, x.shape, dim, keepdim)
    if values_readable(x) and not bool((x == 0).any().item()):
        return grad * conj(restore(result, x.shape, dim, keepdim) / x)
    return grad * conj(_exclusive_products(x, dim))


nondifferentiable(
    aten.all.default,
    aten.all.dim,
    aten.all.dims,
    aten.any.default,
    aten.any.dim,
    aten.any.dims,
    aten.count_nonzero.default,
    aten.count_nonzero.dim_IntList,
)
