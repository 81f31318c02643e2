"""``nll_loss_backward``: the input gradient of ``nll_loss_forward``, as PyTorch's op of that name.

Each row's gradient is ``-weight[target] * grad`` at its target class and zero elsewhere, zero for
rows whose target is ``ignore_index``; under ``mean`` it is divided by ``total_weight`` (the
forward's second output). Rows are the input's (N, C) rows, one (C,) row, or the positions of an
(N, C, d1, ...) input. The CPU kernel writes the picked entries into zeros through their flat
positions, one op where the formula in core ops (a class-index comparison, masks, a ``where``) took
eight; that formula stays as the decomposition, which autograd records when the backward is itself
differentiated. Half types compute in float32.
"""

from __future__ import annotations

import numpy as np

from ember.core.aten.factories.factories import arange_function
from ember.core.aten.nn.classification import MEAN, NONE, _check_indices_target, _check_reduction, _compute_dtype
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import define
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

nll_loss_backward_op = define(
    "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, "
    "SymInt ignore_index, Tensor total_weight) -> Tensor",
    (),  # lowered by its decomposition, as in PyTorch
)


def _check(grad_output: Tensor, self: Tensor, target: Tensor, weight, reduction: int, total_weight: Tensor) -> None:
    _check_reduction(reduction)
    _check_indices_target(self, target, weight)
    expected = tuple(target._shape) if reduction == NONE and self.ndim > 1 else ()
    if tuple(grad_output._shape) != expected and not (expected == () and grad_output.numel() == 1):
        raise RuntimeError(
            f"nll_loss_backward: expected grad_output of shape {list(expected)}, got {list(grad_output._shape)}"
        )
    if total_weight.numel() != 1:
        raise RuntimeError(
            f"expected total_weight to be a single element tensor, got: {list(total_weight._shape)} "
            f"({total_weight.numel()} elements)"
        )
    if grad_output.dtype is not self.dtype:
        raise RuntimeError(f"nll_loss_backward: expected grad_output of dtype {self.dtype}, got {grad_output.dtype}")


@nll_loss_backward_op.register_meta
def _meta(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    _check(grad_output, self, target, weight, reduction, total_weight)
    return empty(tuple(self._shape), self.dtype, self.device)


@nll_loss_backward_op.register_kernel("cpu")
def _cpu(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    _check(grad_output, self, target, weight, reduction, total_weight)
    shape = tuple(self._shape)
    dtype = _compute_dtype(self.dtype)
    out = np.zeros(shape, dtype)
    classes = shape[0] if self.ndim == 1 else shape[1]
    spatial = out.size // max(classes * (1 if self.ndim == 1 else shape[0]), 1)
    t = target._array.astype(np.int64, copy=False).reshape(-1)
    counted = t != ignore_index
    token = silence()  # a mean over no counted rows divides by 0, as PyTorch's does
    try:
        if t.size and counted.any():
            rows = np.flatnonzero(counted)
            picked = t[rows]
            if picked.min() < 0 or picked.max() >= classes:
                raise IndexError(f"Target {int(picked[(picked < 0) | (picked >= classes)][0])} is out of bounds.")
            g = grad_output._array.astype(dtype, copy=False).reshape(-1)
            g = g[rows] if reduction == NONE and self.ndim > 1 else g[0]
            if reduction == MEAN:
                g = g / total_weight._array.astype(dtype).reshape(())
            values = -g if weight is None else -g * weight._array.astype(dtype).reshape(-1)[picked]
            # Row r of an (N, C, S) input is sample r // S at position r % S; its class t sits at
            # (r // S) * C * S + t * S + r % S of the flat input.
            flat = (rows // spatial) * (classes * spatial) + picked * spatial + rows % spatial
            out.reshape(-1)[flat] = values
    finally:
        restore(token)
    return from_array(out.astype(self.dtype.np, copy=False), self.dtype)


@nll_loss_backward_op.register_decomposition
def _decomposition(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    _check(grad_output, self, target, weight, reduction, total_weight)
    if self.ndim == 1:  # one row: class dim 0, a 0-dim target
        class_dim, row_target = 0, target
    else:
        class_dim, row_target = 1, target.unsqueeze(1)
    classes = self.shape[class_dim]
    view = [1] * self.ndim
    view[class_dim] = classes
    labels = arange_function(classes, device=grad_output.device).reshape(view)
    picked = (labels == row_target) & (row_target != ignore_index)
    g = grad_output if reduction == NONE else grad_output.reshape(()).expand(tuple(target.shape))
    if reduction == MEAN:
        g = g / total_weight
    if self.ndim != 1:
        g = g.unsqueeze(1)
    scale = -g if weight is None else -g * weight.reshape(view)
    # ``where`` rather than a product by the mask: a nan or inf scale off the target stays out.
    return where_function(picked, scale, 0)
