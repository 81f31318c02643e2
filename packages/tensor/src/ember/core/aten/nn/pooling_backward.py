"""``max_pool2d_with_indices_backward``: the input gradient of a 2-D max pool, as PyTorch's op of that
name.

Each output's gradient goes to the input position its index names, summed where windows overlap:
one ``np.add.at`` over the flattened planes, which adds in the order of the outputs as PyTorch's CPU
kernel does. The indices are trusted to be those the forward returned (flat positions ``h * W + w``
in each input plane). As one op this replaces a zeros, three reshapes and a general ``scatter_add``
(with its bounds checks) in the derivative; that formula stays as the decomposition, which autograd
records when the backward is itself differentiated.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros
from ember.core.aten.linalg.matmul import compute_array
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty

max_pool2d_backward_op = define(
    "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
    "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
    ("core",),
)


def _check(grad_output: Tensor, self: Tensor, indices: Tensor) -> None:
    if self.ndim not in (3, 4) or grad_output.ndim != self.ndim:
        raise RuntimeError(
            f"max_pool2d_with_indices_backward: expected 3-D or 4-D self and grad_output alike, got "
            f"{list(self._shape)} and {list(grad_output._shape)}"
        )
    if tuple(indices._shape) != tuple(grad_output._shape):
        raise RuntimeError(
            f"max_pool2d_with_indices_backward: indices of shape {list(indices._shape)} do not match grad_output "
            f"of shape {list(grad_output._shape)}"
        )
    if indices.dtype is not D.int64:
        raise RuntimeError(f"max_pool2d_with_indices_backward: expected int64 indices, got {indices.dtype}")
    if tuple(grad_output._shape[:-2]) != tuple(self._shape[:-2]):
        raise RuntimeError(
            f"max_pool2d_with_indices_backward: grad_output of shape {list(grad_output._shape)} does not match "
            f"self of shape {list(self._shape)}"
        )


def _result(grad_output: Tensor, self: Tensor) -> Tensor:
    shape = tuple(self._shape)
    return empty(shape, grad_output.dtype, self.device, memory_format_strides(shape, suggest_memory_format(self)))


@max_pool2d_backward_op.register_meta
def _meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    _check(grad_output, self, indices)
    return _result(grad_output, self)


@max_pool2d_backward_op.register_kernel("cpu")
def _cpu(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    _check(grad_output, self, indices)
    out = _result(grad_output, self)
    h, w = self._shape[-2:]
    oh, ow = grad_output._shape[-2:]
    planes = numel(self._shape[:-2])
    g = compute_array(grad_output)
    # The result's own memory collects the sums where it is laid out as planes of g's dtype.
    direct = out._array.dtype == g.dtype and out._array.flags.c_contiguous
    work = out._array.reshape(planes, h * w) if direct else np.empty((planes, h * w), g.dtype)
    work.fill(0)
    if planes and oh * ow:
        index = indices._array.reshape(planes, oh * ow)
        if index.min() < 0 or index.max() >= h * w:
            raise RuntimeError(f"max_pool2d_with_indices_backward: an index lies outside the {h}x{w} input plane")
        linear = index + (np.arange(planes, dtype=np.int64) * (h * w))[:, None]
        np.add.at(work.reshape(-1), linear.reshape(-1), g.reshape(-1))
    if not direct:
        token = silence()  # float32 sums beyond float16's range round to inf, as in PyTorch
        try:
            np.copyto(out._array, work.reshape(self._shape), casting="unsafe")
        finally:
            restore(token)
    return out


@max_pool2d_backward_op.register_decomposition
def _decomposition(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    _check(grad_output, self, indices)
    h, w = self.shape[-2:]
    oh, ow = indices.shape[-2:]
    planes = indices.numel() // max(oh * ow, 1)
    total = zeros((planes, h * w), dtype=grad_output.dtype, device=grad_output.device)
    flat = total.scatter_add(1, indices.reshape(planes, oh * ow), grad_output.reshape(planes, oh * ow))
    return flat.reshape(self.shape)
