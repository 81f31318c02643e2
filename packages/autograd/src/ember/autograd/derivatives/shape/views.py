"""Derivatives of the view ops (``ember.core.aten.shape.views``): each puts the gradient back in place.

A view's gradient is its input's shape again: the inverse permutation, the dims put back, or the
view's region of zeros filled with the gradient. ``as_strided`` goes through storage positions
(``ember.autograd.as_strided``), which serves overlapping and gapped strides alike.
"""

from __future__ import annotations

from ember.autograd.as_strided import as_strided_backward
from ember.autograd.registry import derivative, nondifferentiable
from ember.core.aten.factories.factories import arange_function
from ember.core.aten.shape.joining import _stack_function as stack_function
from ember.core.aten.shape.joining import cat_function
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


def _zeros(shape, grad):
    return grad.new_zeros(tuple(shape))  # new_zeros, not zeros: batched like grad under vmap


@derivative(aten.view.default, aten.reshape.default, jvp="linear")
def _view(grad, self, **_):
    return grad.reshape(self.shape)


@derivative(aten.alias.default, jvp="linear")
def _alias(grad, self, **_):
    return grad


@derivative(aten.expand.default, jvp="linear")
def _expand(grad, self, **_):
    return grad  # the engine sums it down to self's shape


@derivative(aten.select.int, jvp="linear")
def _select(grad, self, dim, index, **_):
    out = _zeros(self.shape, grad)
    out.select(dim, index).copy_(grad)
    return out


@derivative(aten.slice.Tensor, jvp="linear")
def _slice(grad, self, dim, start, end, step, **_):
    out = _zeros(self.shape, grad)
    aten.slice.Tensor(out, dim, start, end, step).copy_(grad)
    return out


@derivative(aten.narrow.default, jvp="linear")
def _narrow(grad, self, dim, start, length, **_):
    out = _zeros(self.shape, grad)
    out.narrow(dim, start, length).copy_(grad)
    return out


# No "linear" forward rule: geometry is absolute in self's storage, which a tangent does not share.
@derivative(aten.as_strided.default)
def _as_strided(grad, self, size, stride, storage_offset, **_):
    offset = self.storage_offset() if storage_offset is None else storage_offset
    geometry = (tuple(self.shape), tuple(self.stride()), self.storage_offset())
    return as_strided_backward(grad, geometry, (tuple(size), tuple(stride), offset))


@derivative(aten.permute.default, jvp="linear")
def _permute(grad, self, dims, **_):
    ndim = self.ndim
    inverse = [0] * ndim
    for i, d in enumerate(dims):
        inverse[normalize_dim(d, ndim)] = i
    return grad.permute(inverse)


@derivative(aten.transpose.int, jvp="linear")
def _transpose(grad, self, dim0, dim1, **_):
    return grad.transpose(dim0, dim1) if self.ndim else grad


@derivative(aten.t.default, jvp="linear")
def _t(grad, self, **_):
    return grad.t()


@derivative(aten.squeeze.default, aten.squeeze.dims, aten.squeeze.dim, jvp="linear")
def _squeeze(grad, self, **_):
    return grad.reshape(self.shape)


@derivative(aten.unsqueeze.default, jvp="linear")
def _unsqueeze(grad, self, dim, **_):
    return grad.squeeze(normalize_dim(dim, self.ndim + 1))


@derivative(aten.diagonal.default, jvp="linear")
def _diagonal(grad, self, offset, dim1, dim2, **_):
    out = _zeros(self.shape, grad)
    out.diagonal(offset, dim1, dim2).copy_(grad)
    return out


@derivative(aten.unfold.default, jvp="linear")
def _unfold(grad, self, dimension, size, step, **_):
    """Windows overlap where ``step < size``: each input element sums the gradients of its copies."""
    from ember.core import dtypes as D

    if self.ndim == 0:
        return grad.reshape(())
    d = normalize_dim(dimension, self.ndim)
    count = grad.shape[d]
    where = arange_function(count, dtype=D.int64, device=grad.device).reshape(count, 1) * step
    where = (where + arange_function(size, dtype=D.int64, device=grad.device)).reshape(-1)
    windows = grad.movedim(-1, d + 1).flatten(d, d + 1)
    return _zeros(self.shape, grad).index_add(d, where, windows)


def _filled(grads, like):
    """The outputs' gradients with zeros where an output got none."""
    return [_zeros(shape, like) if g is None else g for g, shape in grads]


@derivative(aten.unbind.int, jvp="linear")
def _unbind(grads, self, dim, **_):
    if not isinstance(grads, tuple):
        grads = (grads,)
    d = normalize_dim(dim, self.ndim)
    like = next(g for g in grads if g is not None)
    shape = tuple(self.shape[:d]) + tuple(self.shape[d + 1 :])
    return stack_function(_filled([(g, shape) for g in grads], like), d)


def _cat_pieces(grads, self, dim, sizes):
    d = normalize_dim(dim, self.ndim)
    like = next(g for g in grads if g is not None)
    shapes = [tuple(self.shape[:d]) + (n,) + tuple(self.shape[d + 1 :]) for n in sizes]
    return cat_function(_filled(list(zip(grads, shapes, strict=True)), like), d)


@derivative(aten.split.Tensor, jvp="linear")
def _split(grads, self, split_size, dim, **_):
    if not isinstance(grads, tuple):
        grads = (grads,)
    total = self.shape[normalize_dim(dim, self.ndim)]
    sizes = [min(split_size, total - start) for start in range(0, total, split_size)] if total else [0]
    return _cat_pieces(grads, self, dim, sizes)


@derivative(aten.split_with_sizes.default, jvp="linear")
def _split_with_sizes(grads, self, split_sizes, dim, **_):
    if not isinstance(grads, tuple):
        grads = (grads,)
    return _cat_pieces(grads, self, dim, list(split_sizes))


nondifferentiable(aten.detach.default, aten.view.dtype)


@derivative(aten.slice_inverse.default, jvp="linear")
def _slice_inverse(grad, self, src, dim, start, end, step, **_):
    # The view reads self laid out as src: self gets the slice it was, src the rest (PyTorch's rule).
    rest = aten.slice_scatter.default(grad, _zeros(self.shape, grad), dim, start, end, step)
    return aten.slice.Tensor(grad, dim, start, end, step), rest
