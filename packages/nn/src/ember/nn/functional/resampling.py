"""``interpolate`` for the modes and ranks the core has no op for, and the deprecated ``upsample*``.

Linear and nearest resampling are separable: a 1-D linear resize is the core's bilinear one over a
unit height, and a 3-D (trilinear or nearest) resize is two 2-D ones, first over (H, W) with the
depth folded into the channels, then over depth with (H x W) flattened into one axis that keeps its
size (a resize to the same size with scale 1 reads each element exactly). ``area`` is an adaptive
average pool. ``bicubic`` (4-D) is separable too: one matrix of cubic-convolution weights per
axis (PyTorch's ``A = -0.75``, taps clamped at the border), applied as two matrix products. Other
calls go to the core's ``interpolate`` unchanged. ``antialias=True`` (bilinear and bicubic) widens
each axis's filter by the downscaling factor (a triangle, or a cubic with ``A = -0.5``, normalized
per output), again one weight matrix per axis.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ember.core.aten.nn.resampling import interpolate as _core_interpolate
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]


def _per_dim(value: Any, k: int) -> list | None:
    if value is None:
        return None
    return list(value) if isinstance(value, (list, tuple)) else [value] * k


def interpolate(
    input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None, antialias: bool = False,
) -> Tensor:  # fmt: skip
    k = input.ndim - 2
    needs = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}.get(mode)
    if needs is not None and input.ndim in (3, 4, 5) and input.ndim != needs:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs}D input")
    if mode in ("bilinear", "bicubic") and k == 2 and antialias:
        return _separable(input, size, scale_factor, align_corners, recompute_scale_factor, _antialias_matrix(mode))
    if mode == "bicubic" and k == 2:
        return _separable(input, size, scale_factor, align_corners, recompute_scale_factor, _cubic_matrix)
    separable = (mode == "linear" and k == 1) or (mode in ("trilinear", "nearest", "nearest-exact") and k == 3)
    if not separable and not (mode == "area" and k in (1, 3)):
        return _core_interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"
        )
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    sizes, scales = _per_dim(size, k), _per_dim(scale_factor, k)
    if (sizes is not None and len(sizes) != k) or (scales is not None and len(scales) != k):
        raise ValueError(
            f"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions "
            f"of {list(input.shape[2:])} and output size of {size if size is not None else scale_factor}. Please "
            "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
        )
    if mode == "area":
        from ember.nn.functional.pooling1d import adaptive_avg_pool1d
        from ember.nn.functional.pooling_nd import adaptive_avg_pool3d

        if sizes is None:
            sizes = [math.floor(n * float(s)) for n, s in zip(input.shape[2:], scales, strict=True)]
        return (adaptive_avg_pool1d if k == 1 else adaptive_avg_pool3d)(input, sizes)
    plane = "bilinear" if mode in ("linear", "trilinear") else mode
    corners = align_corners if plane == "bilinear" else None
    if k == 1:
        out = _core_interpolate(
            input.unsqueeze(-2), None if sizes is None else [1, sizes[0]], None if scales is None else [1.0, scales[0]],
            plane, corners, recompute_scale_factor,
        )  # fmt: skip
        return out.squeeze(-2)
    n, c, d, h, w = input.shape
    step = _core_interpolate(
        input.reshape(n, c * d, h, w), None if sizes is None else sizes[1:], None if scales is None else scales[1:],
        plane, corners, recompute_scale_factor,
    )  # fmt: skip
    h2, w2 = step.shape[2], step.shape[3]
    out = _core_interpolate(
        step.reshape(n, c, d, h2 * w2), None if sizes is None else [sizes[0], h2 * w2],
        None if scales is None else [scales[0], 1.0], plane, corners, recompute_scale_factor,
    )  # fmt: skip
    return out.reshape(n, c, out.shape[2], h2, w2)


_A = -0.75


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four cubic-convolution weights of taps ``-1, 0, 1, 2`` at fractional offsets ``t``."""

    def near(x):  # |x| <= 1
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], -1)


def _cubic_matrix(size: int, out: int, align_corners: bool, scale: float | None) -> np.ndarray:
    """``(out, size)``: row ``i`` holds the weights of output ``i`` over the input positions."""
    if align_corners:
        ratio = (size - 1) / (out - 1) if out > 1 else 0.0
        source = np.arange(out) * ratio
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else size / out
        source = (np.arange(out) + 0.5) * ratio - 0.5
    base = np.floor(source)
    weights = _cubic_weights(source - base)
    matrix = np.zeros((out, size))
    for tap in range(4):
        np.add.at(matrix, (np.arange(out), np.clip(base.astype(np.int64) - 1 + tap, 0, size - 1)), weights[:, tap])
    return matrix


def _antialias_matrix(mode: str):
    """PyTorch's antialiased weights: the filter stretched by the downscaling factor, normalized per output."""
    half_width = 1.0 if mode == "bilinear" else 2.0

    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        if mode == "bilinear":
            return np.where(x < 1, 1 - x, 0.0)
        a = -0.5
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))

    def matrix(size: int, out: int, align_corners: bool, scale: float | None) -> np.ndarray:
        if align_corners:
            ratio = (size - 1) / (out - 1) if out > 1 else 0.0
        else:
            ratio = 1.0 / scale if scale is not None and scale > 0 else size / out
        support = half_width * ratio if ratio >= 1.0 else half_width
        inverse = 1.0 / ratio if ratio >= 1.0 else 1.0
        weights = np.zeros((out, size))
        for i in range(out):
            center = ratio * (i + 0.5)
            low = max(int(center - support + 0.5), 0)
            high = min(int(center + support + 0.5), size)
            w = kernel((np.arange(low, high) - center + 0.5) * inverse)
            total = w.sum()
            weights[i, low:high] = w / total if total != 0 else w
        return weights

    return matrix


def _separable(
    input: Tensor, size: Any, scale_factor: Any, align_corners: bool | None, recompute: bool | None, matrix
) -> Tensor:
    """Resize the last two dimensions by one weight matrix each, ``matrix(in, out, align_corners, scale)``."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    align_corners = bool(align_corners)
    height, width = input.shape[2], input.shape[3]
    scales = _per_dim(scale_factor, 2)
    if size is not None:
        outs, scales = _per_dim(size, 2), [None, None]
    else:
        outs = [math.floor(n * float(s)) for n, s in zip((height, width), scales, strict=True)]
        if recompute:
            scales = [None, None]
    rows = make_tensor(matrix(height, outs[0], align_corners, scales[0]), dtype=input.dtype, device=input.device)
    cols = make_tensor(matrix(width, outs[1], align_corners, scales[1]), dtype=input.dtype, device=input.device)
    return rows.matmul(input).matmul(cols.t())


def upsample(
    input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None
) -> Tensor:
    """Deprecated: ``interpolate``."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
