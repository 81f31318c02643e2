"""Pieces the reduction derivatives share: putting reduced dims back, and routing a gradient to the
elements a reduction selected.

A reduction's gradient is computed at the input's rank: ``restore`` reshapes the incoming gradient
(or a saved result) so the reduced dims are back with size 1 and broadcasting does the rest. It
reshapes rather than unsqueezes so that the formulas stay differentiable through ``reshape``'s own
entry. ``dim`` arrives as the schema allows: ``None``, an int, or a list, where ``None`` and ``[]``
mean every dim (as for ``sum``, ``amax`` and ``vector_norm``).
"""

from __future__ import annotations

from ember.core.aten.factories.factories import zeros_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor


def reduced_dims(ndim: int, dim) -> tuple[int, ...]:
    """The dims ``dim`` names, non-negative and sorted; every dim for ``None`` or ``[]``."""
    if ndim == 0:
        return ()
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    return tuple(sorted({normalize_dim(d, ndim) for d in dims}))


def kept_shape(shape, dim) -> tuple[int, ...]:
    """``shape`` with the dims ``dim`` names as 1: the output's shape under ``keepdim=True``."""
    shape = tuple(shape)
    dims = reduced_dims(len(shape), dim)
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def count(shape, dim) -> int:
    """How many input elements meet in one output element."""
    shape = tuple(shape)
    n = 1
    for d in reduced_dims(len(shape), dim):
        n *= shape[d]
    return n


def restore(t, shape, dim, keepdim: bool):
    """``t`` (shaped as a reduction's output) with the reduced dims back as 1, at the input's rank."""
    if keepdim or len(tuple(shape)) == 0:
        return t
    return t.reshape(kept_shape(shape, dim))


def expand_back(grad, shape, dim, keepdim: bool):
    """The gradient of a sum: ``grad`` broadcast back over the reduced dims."""
    return restore(grad, shape, dim, keepdim).expand(tuple(shape))


def values_readable(*tensors) -> bool:
    """Whether a formula may read values (``.item()``) to choose its path. Not on the meta device
    (no values) nor for tensor subclasses (a vmap batch has one value per lane): there the formulas
    take the path that holds for every value, as PyTorch's do for subclasses."""
    return all(type(t) is Tensor and t.device.type != "meta" for t in tensors if t is not None)


def evenly_distribute(grad, input, value):
    """``grad`` of a reduction to one value (max, median): split evenly among the elements equal to
    it, or among the NaNs when the value is NaN, as PyTorch does."""
    if not values_readable(grad, input, value):
        # Every operand in grad's dtype: a vmap batch of 0-dim gradients meets no type promotion.
        mask = (input == value).logical_or(input.isnan().logical_and(value.isnan())).to(grad.dtype)
        return mask * (grad / mask.sum())
    mask = input.isnan() if bool(value.isnan().item()) else input == value
    return where_function(mask, grad / mask.sum(), 0.0)


def scale_by_count(grad, mask, dim):
    """``grad`` of amax/amin: split among the ties of each slice. A slice with a NaN has no element
    equal to its result, so its gradient is 0 * (grad / 0) = NaN, as in PyTorch."""
    dims = list(reduced_dims(mask.ndim, dim))
    return (grad / mask.sum(dims, keepdim=True)) * mask


def select_back(grad, dim: int, indices, shape, keepdim: bool):
    """``grad`` of an op that picks elements along ``dim`` (max.dim, sort, topk, ...): each gradient
    goes to the index it came from, the rest of the input gets zeros."""
    shape = tuple(shape)
    if not keepdim and shape:
        grad = restore(grad, shape, dim, False)
        indices = restore(indices, shape, dim, False)
    zeros = zeros_function(shape, dtype=grad.dtype, device=grad.device)
    return zeros.scatter(dim, indices, grad)
