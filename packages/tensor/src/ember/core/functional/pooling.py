"""``torch.nn.functional``'s 2-D pools and ``interpolate``."""

from __future__ import annotations

from ember.core.families.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ember.core.families.resampling import interpolate

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "interpolate", "max_pool2d"]
