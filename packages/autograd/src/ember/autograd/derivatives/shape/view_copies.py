"""Derivatives of the views' copies and of the scatters (``ember.core.aten.shape.view_copies``).

A ``*_copy`` op has its view's derivative: the copy changes where the values live, not what they
are. A scatter's gradient is the incoming gradient with the scattered region zeroed for ``self``,
and that region for ``src``.
"""

from __future__ import annotations

from ember.autograd.derivatives.shape import views as _views  # noqa: F401  (the views' formulas, reused)
from ember.autograd.registry import DERIVATIVES, NONDIFFERENTIABLE, derivative, nondifferentiable
from ember.core.aten.shape.view_copies import copy_of_view
from ember.core.dispatch import ops

aten = ops.aten

for _view, _copy in copy_of_view.items():
    _entry = DERIVATIVES.get(_view)
    if _entry is not None:
        derivative(_copy, save=_entry.save, jvp=_entry.jvp)(_entry.formula)
    elif _view in NONDIFFERENTIABLE:
        nondifferentiable(_copy)


def _zeros_like(t, grad):
    return grad.new_zeros(tuple(t.shape))


@derivative(aten.slice_scatter.default, jvp="linear")
def _slice_scatter(grad, self, src, dim, start, end, step, **_):
    return (
        aten.slice_scatter.default(grad, _zeros_like(src, grad), dim, start, end, step),
        aten.slice.Tensor(grad, dim, start, end, step),
    )


@derivative(aten.select_scatter.default, jvp="linear")
def _select_scatter(grad, self, src, dim, index, **_):
    return aten.select_scatter.default(grad, _zeros_like(src, grad), dim, index), grad.select(dim, index)


@derivative(aten.diagonal_scatter.default, jvp="linear")
def _diagonal_scatter(grad, self, src, offset, dim1, dim2, **_):
    return (
        aten.diagonal_scatter.default(grad, _zeros_like(src, grad), offset, dim1, dim2),
        grad.diagonal(offset, dim1, dim2),
    )


@derivative(aten.as_strided_scatter.default)
def _as_strided_scatter(grad, self, src, size, stride, storage_offset, **_):
    grad = grad.contiguous()
    return (
        aten.as_strided_scatter.default(grad, _zeros_like(src, grad), size, stride, storage_offset),
        grad.as_strided(size, stride, storage_offset),
    )
