"""Rearranging and windowing functions of ``torch.nn.functional``: ``pixel_shuffle``,
``pixel_unshuffle``, ``channel_shuffle``, ``unfold`` (im2col) and ``fold`` (col2im).

All are reshapes, permutes and gathers of the core's ops. ``unfold`` gathers each sliding block
through the pooling window tables (zero where a block reaches into padding); ``fold`` is its
adjoint, a ``scatter_add`` of every block element into the padded output, cropped afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor
from ember.nn.functional import pool_windows as W

__all__ = ["channel_shuffle", "fold", "native_channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "unfold"]


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C r², H, W)`` to ``(*, C, H r, W r)``."""
    if input.ndim < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if upscale_factor <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {upscale_factor}")
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r)`` to ``(*, C r², H, W)``."""
    if input.ndim < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if downscale_factor <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {downscale_factor}")
    r = downscale_factor
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h} is not "
            f"divisible by {r}"
        )
    if w % r:
        raise RuntimeError(
            f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w} is not "
            f"divisible by {r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: ``(N, g, C/g, *)`` transposed to ``(N, C/g, g, *)``."""
    if input.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def _block_params(name: str, kernel_size, dilation, padding, stride) -> tuple:
    return tuple(W.expand(n, v, 2) for n, v in (("kernel_size", kernel_size), ("dilation", dilation),
                                                  ("padding", padding), ("stride", stride)))  # fmt: skip


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sliding blocks of a ``(N, C, H, W)`` (or ``(C, H, W)``) input as columns ``(N, C kh kw, L)``."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    kernel, dil, pad, strides = _block_params("unfold", kernel_size, dilation, padding, stride)
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    sizes = tuple(x.shape[2:])
    coords = []
    for size, k, d, p, s in zip(sizes, kernel, dil, pad, strides, strict=True):
        out = (size + 2 * p - d * (k - 1) - 1) // s + 1
        if out < 1:
            raise RuntimeError(
                f"Given input with spatial size ({sizes[0]}, {sizes[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
                f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), calculated shape of the array of "
                "sliding blocks is non-positive"
            )
        c = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
        coords.append(np.where((c >= 0) & (c < size), c, -1))
    blocks = W.gather_windows(x, 2, W.table(sizes, coords), 0.0)  # (N, C, L, kh kw)
    n, c, length = x.shape[0], x.shape[1], blocks.shape[2]
    out = blocks.permute(0, 1, 3, 2).reshape(n, c * kernel[0] * kernel[1], length)
    return out if batched else out.squeeze(0)


def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Sum columns ``(N, C kh kw, L)`` of sliding blocks back into an ``(N, C, H, W)`` image."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {input.ndim}D)"
        )
    sizes = W.expand("output_size", output_size, 2)
    kernel, dil, pad, strides = _block_params("fold", kernel_size, dilation, padding, stride)
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    n, ck, length = x.shape
    window = kernel[0] * kernel[1]
    if ck % window:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={ck} and kernel_size=({kernel[0]}, {kernel[1]})"
        )
    padded = tuple(s + 2 * p for s, p in zip(sizes, pad, strict=True))
    coords, blocks = [], []
    for size, k, d, s in zip(padded, kernel, dil, strides, strict=True):
        out = (size - d * (k - 1) - 1) // s + 1
        blocks.append(out)
        coords.append(np.arange(out)[:, None] * s + np.arange(k)[None, :] * d)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size=({sizes[0]}, {sizes[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
            f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({strides[0]}, {strides[1]}), "
            f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
            f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={length}."
        )
    c = ck // window
    index = W.table(padded, coords)  # (L, kh kw) flat positions in the padded image
    idx = make_tensor(np.ascontiguousarray(index.T.reshape(-1)), dtype=D.int64, device=x.device).expand(
        n, c, window * length
    )
    values = x.reshape(n, c, window * length)
    image = x.new_zeros((n, c, padded[0] * padded[1])).scatter_add(-1, idx, values)
    image = image.reshape(n, c, *padded)[:, :, pad[0] : pad[0] + sizes[0], pad[1] : pad[1] + sizes[1]]
    return image if batched else image.squeeze(0)
