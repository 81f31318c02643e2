"""Derivatives of the 2-D pools (``ember.core.aten.nn.pooling``).

Max pooling sends each output's gradient to the input position its index names (summed where
windows overlap): PyTorch's ``max_pool2d_with_indices_backward``. Average pooling is a convolution of
each plane by a kernel of ones, divided by PyTorch's per-window divisor: its gradient divides
``grad`` by the same divisors and runs the transposed convolution by ones, then crops the padding
(and pads with zeros the rows and columns no window reached). With ``ceil_mode`` the last window
may pass the padded edge; the crop takes care of it. Adaptive average pooling is separable: the
gradient is ``A_h^T @ grad @ A_w`` where ``A`` holds ``1 / window length`` over each of PyTorch's
adaptive windows ``[floor(i*In/Out), ceil((i+1)*In/Out))``.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.registry import derivative, through_decomposition
from ember.core.aten.factories.factories import ones_function
from ember.core.aten.linalg.matmul import matmul_function
from ember.core.creation import as_tensor
from ember.core.dispatch import ops

aten = ops.aten


def _pair(value) -> tuple:
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    return value * 2 if len(value) == 1 else value


@derivative(aten.max_pool2d_with_indices.default, save=("self", "result"), output_differentiable=(True, False))
def _max_pool2d(grad, self, kernel_size, stride, padding, dilation, ceil_mode, result, **_):
    return aten.max_pool2d_with_indices_backward.default(
        grad[0], self, kernel_size, stride, padding, dilation, ceil_mode, result[1]
    )


def _divisors(size: int, out: int, kernel: int, stride: int, pad: int, include_pad: bool) -> np.ndarray:
    """PyTorch's divisor of each window along one dim: its length clipped at the padded edge, or
    only its part inside the input when padding does not count."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


@derivative(aten.avg_pool2d.default)
def _avg_pool2d(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, **_):
    kernel = _pair(kernel_size)
    stride = _pair(stride) if isinstance(stride, int) or len(stride) else kernel  # [] means the kernel
    padding = _pair(padding)
    h, w = self.shape[-2:]
    oh, ow = grad.shape[-2:]
    if divisor_override is not None:
        scaled = grad / divisor_override
    else:
        rows = _divisors(h, oh, kernel[0], stride[0], padding[0], count_include_pad)
        cols = _divisors(w, ow, kernel[1], stride[1], padding[1], count_include_pad)
        scaled = grad / as_tensor(rows[:, None] * cols[None, :], dtype=grad.dtype, device=grad.device)
    ones = ones_function((1, 1, *kernel), dtype=grad.dtype, device=grad.device)
    planes = scaled.reshape(-1, 1, oh, ow)
    spread = aten.convolution.default(planes, ones, None, list(stride), [0, 0], [1, 1], True, [0, 0], 1)
    full_h, full_w = spread.shape[-2:]
    # The canvas starts at the padded origin: crop the padding and fit the far edge to the input.
    fit = [-padding[1], padding[1] + w - full_w, -padding[0], padding[0] + h - full_h]
    return aten.constant_pad_nd.default(spread, fit, 0).reshape(self.shape)


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    """(out, size): row i averages PyTorch's adaptive window i."""
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(1, out + 1) * size)) // out)
    positions = np.arange(size)
    inside = (positions[None, :] >= starts[:, None]) & (positions[None, :] < ends[:, None])
    return inside / (ends - starts)[:, None]


@derivative(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool2d(grad, self, output_size, **_):
    h, w = self.shape[-2:]
    oh, ow = grad.shape[-2:]
    left = as_tensor(np.ascontiguousarray(_adaptive_matrix(h, oh).T), dtype=grad.dtype, device=grad.device)
    right = as_tensor(_adaptive_matrix(w, ow), dtype=grad.dtype, device=grad.device)
    return matmul_function(matmul_function(left, grad), right)


# Double backward records the parts of its decomposition.
through_decomposition(aten.max_pool2d_with_indices_backward.default)
