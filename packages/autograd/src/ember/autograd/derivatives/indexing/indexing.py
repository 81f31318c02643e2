"""Derivatives of indexing by tensors (``ember.core.aten.indexing.advanced_indexing`` and ``index_ops``).

Reading by index sends the gradient back by an accumulating write to the same positions (a
position read twice gets both gradients); writing by index sends the written positions' gradient
to the values and zeros it for ``self`` (unless the write accumulated). With repeated positions and
no accumulation, every value written gets the gradient of the position, as in PyTorch, although
only one of them won. In-place forms (``index_add_``...) use these formulas too.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.aten.factories.factories import zeros_function
from ember.core.aten.sorting.unique import unique_function
from ember.core.dispatch import ops
from ember.core.tensor import Tensor

aten = ops.aten


def _zeros(shape, like):
    # ``like.new_zeros``, as PyTorch's formulas write it: under vmap the zeros are batched like the
    # gradient, so that writing the batched gradient into them is no in-place op of a batch into one lane.
    if type(like) is not Tensor:
        return like.new_zeros(tuple(shape))
    return zeros_function(tuple(shape), dtype=like.dtype, device=like.device)


@derivative(aten.index.Tensor, save=("indices",))
def _index(grad, self, indices, **_):
    return aten.index_put.default(_zeros(self.shape, grad), indices, grad, True), None


@derivative(aten.index_put.default, save=("indices",))
def _index_put(grad, self, indices, values, accumulate, needs, **_):
    grad_self = grad_values = None
    if needs[0]:
        grad_self = grad if accumulate else aten.index_put.default(grad, indices, _zeros(values.shape, grad), False)
    if needs[2]:
        grad_values = aten.index.Tensor(grad, indices)  # summed down to the values' shape where they broadcast
    return grad_self, None, grad_values


@derivative(aten.index_select.default, save=("index",))
def _index_select(grad, self, dim, index, **_):
    return _zeros(self.shape, grad).index_add(dim, index, grad), None


@derivative(aten.index_add.default, save=("index",))
def _index_add(grad, self, dim, index, source, alpha, needs, **_):
    grad_source = None
    if needs[2]:
        grad_source = grad.index_select(dim, index).reshape(source.shape)
        if alpha != 1:
            grad_source = grad_source * alpha
    return grad, None, grad_source


@derivative(aten.index_copy.default, save=("index",))
def _index_copy(grad, self, dim, index, source, needs, **_):
    grad_self = grad.index_fill(dim, index, 0) if needs[0] else None
    grad_source = grad.index_select(dim, index).reshape(source.shape) if needs[2] else None
    return grad_self, None, grad_source


@derivative(aten.index_fill.int_Scalar, save=("index",))
def _index_fill(grad, self, dim, index, **_):
    return grad.index_fill(dim, index, 0), None


@derivative(aten.index_fill.int_Tensor, save=("index",))
def _index_fill_tensor(grad, self, dim, index, value, needs, **_):
    grad_self = grad.index_fill(dim, index, 0) if needs[0] else None
    grad_value = None
    if needs[2]:
        # A position named twice was filled once: its gradient counts once.
        grad_value = grad.index_select(dim, unique_function(index.reshape(-1))).sum()
    return grad_self, None, grad_value


@derivative(aten.take.default, save=("index",))
def _take(grad, self, index, **_):
    return aten.put.default(_zeros(self.shape, grad), index, grad, True), None


@derivative(aten.put.default, save=("index",))
def _put(grad, self, index, source, accumulate, needs, **_):
    grad_self = grad_source = None
    if needs[0]:
        grad_self = grad if accumulate else aten.put.default(grad, index, _zeros(source.shape, grad), False)
    if needs[2]:
        grad_source = grad.take(index).reshape(source.shape)
    return grad_self, None, grad_source
