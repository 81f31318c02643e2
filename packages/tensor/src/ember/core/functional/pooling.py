"""``torch.nn.functional``'s 2-D pools and ``interpolate``."""

from __future__ import annotations

from ember.core.aten.nn.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ember.core.aten.nn.resampling import interpolate
from ember.core.tensor import Tensor

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "interpolate", "max_pool2d", "max_pool2d_with_indices"]


def max_pool2d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
) -> tuple[Tensor, Tensor]:
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
