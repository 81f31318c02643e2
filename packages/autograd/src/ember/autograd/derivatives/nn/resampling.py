"""Derivatives of the upsampling ops (``ember.core.aten.nn.resampling``).

Both modes are separable, so each gradient is summed back one spatial axis at a time with
``index_add``: nearest sends each output's gradient to the input position it copied, bilinear sends
it to the two neighbours of each axis, times their weights. The source positions and weights come
from the forward kernel's own helpers (float32 positions for nearest, the compute dtype's arithmetic
for bilinear), so forward and backward agree on every edge and scale.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function
from ember.core.aten.nn.resampling import _linear_weights, _nearest_index
from ember.core.creation import as_tensor
from ember.core.dispatch import ops

aten = ops.aten


def _index(values: np.ndarray, device):
    return as_tensor(np.ascontiguousarray(values, dtype=np.int64), dtype=D.int64, device=device)


def _gather_back(grad, dim: int, size: int, terms):
    """Sum ``grad`` along ``dim`` into ``size`` positions: ``terms`` are (index, weight or None)."""
    if dim == grad.ndim - 1 and grad.ndim > 1:
        # index_add moves whole rows of the dims after ``dim``: along the last dim those rows are single
        # elements, so the sum runs on the transposed view instead (rows of the previous dim).
        return _gather_back(grad.transpose(-1, -2), dim - 1, size, terms).transpose(-1, -2)
    shape = list(grad.shape)
    shape[dim] = size
    total = zeros_function(shape, dtype=grad.dtype, device=grad.device)
    for index, weight in terms:
        part = grad
        if weight is not None:
            view = [1] * grad.ndim
            view[dim] = weight.shape[0]
            part = grad * as_tensor(weight, dtype=grad.dtype, device=grad.device).reshape(view)
        total = aten.index_add.default(total, dim, _index(index, grad.device), part)
    return total


def _nearest_grad(grad, input_shape, output_size, scales, exact: bool):
    spatial = tuple(input_shape[2:])
    k = len(spatial)
    for axis in range(k):
        index = _nearest_index(spatial[axis], output_size[axis], scales[axis], exact)
        grad = _gather_back(grad, 2 + axis, spatial[axis], [(index, None)])
    return grad


@derivative(aten.upsample_nearest1d.default, jvp="linear")
def _upsample_nearest1d(grad, self, output_size, scales, **_):
    return _nearest_grad(grad, self.shape, tuple(output_size), (scales,), exact=False)


@derivative(aten.upsample_nearest2d.default, jvp="linear")
def _upsample_nearest2d(grad, self, output_size, scales_h, scales_w, **_):
    return _nearest_grad(grad, self.shape, tuple(output_size), (scales_h, scales_w), exact=False)


@derivative(aten._upsample_nearest_exact1d.default, jvp="linear")
def _upsample_nearest_exact1d(grad, self, output_size, scales, **_):
    return _nearest_grad(grad, self.shape, tuple(output_size), (scales,), exact=True)


@derivative(aten._upsample_nearest_exact2d.default, jvp="linear")
def _upsample_nearest_exact2d(grad, self, output_size, scales_h, scales_w, **_):
    return _nearest_grad(grad, self.shape, tuple(output_size), (scales_h, scales_w), exact=True)


@derivative(aten.upsample_bilinear2d.default, jvp="linear")
def _upsample_bilinear2d(grad, self, output_size, align_corners, scales_h, scales_w, **_):
    # The weights in the forward's compute dtype: float32 for the half types, else the input's.
    dtype = np.dtype(np.float64) if self.dtype is D.float64 else np.dtype(np.float32)
    narrow = grad.dtype if grad.dtype in (D.float16, D.bfloat16) else None
    if narrow is not None:
        grad = grad.to(D.float32)
    for axis, scale in ((3, scales_w), (2, scales_h)):
        size, out = self.shape[axis], output_size[axis - 2]
        index0, index1, weight0, weight1 = _linear_weights(size, out, align_corners, scale, dtype)
        grad = _gather_back(grad, axis, size, [(index0, weight0), (index1, weight1)])
    return grad if narrow is None else grad.to(narrow)
