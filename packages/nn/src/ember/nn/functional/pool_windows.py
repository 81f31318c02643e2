"""Pooling windows as index tables, so that every pool without a kernel of its own is a gather.

A pool over ``k`` spatial dimensions reads, for each output position, the input positions of its
window. Here those positions are computed once, in NumPy, as a table ``(outputs, window)`` of flat
indices into the input's spatial elements; a window that reaches into padding (or a shorter
adaptive window) points at one extra element appended to the input, which holds the pool's
neutral value (``-inf`` for max, ``0`` for sums). A pool is then ``gather`` along the flattened
spatial dimension and a reduction over the window, so its gradient is the gather's (to the one
winning element for max pools, as PyTorch's kernels give it) and batching comes from the parts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.factories.factories import full_function
from ember.core.aten.shape.joining import cat
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor


def expand(name: str, value: Any, k: int) -> tuple[int, ...]:
    """An int or a sequence of ``k`` ints (a 1-sequence repeats), as PyTorch's ``_ntuple`` with its check."""
    values = (value,) if not isinstance(value, (tuple, list)) else tuple(value)
    if len(values) == 1:
        values = values * k
    if len(values) != k:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of {k} ints")
    return tuple(int(v) for v in values)


def pooled_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: with ``ceil_mode`` the last window must start inside the
    input or its left padding."""
    span = dilation * (kernel - 1) + 1
    numerator = size + 2 * pad - span + (stride - 1 if ceil_mode else 0)
    out = numerator // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def fixed_windows(
    name: str,
    sizes: tuple,
    kernel: tuple,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    ceil_mode: bool,
    channels: int | None = None,
) -> tuple[tuple, list[np.ndarray]]:
    """Per dimension, the input coordinates (``-1`` for padding) of every window: ``(out, kernel)``."""
    outs, coords = [], []
    for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation, strict=True):
        if k <= 0 or s <= 0 or d <= 0:
            raise RuntimeError(f"{name}: kernel_size, stride and dilation must be greater than zero")
        if p < 0 or p > k // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and "
                f"dilation={d}"
            )
        out = pooled_size(size, k, s, p, d, ceil_mode)
        if out < 1:
            outs_all = [
                pooled_size(*params, ceil_mode) for params in zip(sizes, kernel, stride, padding, dilation, strict=True)
            ]
            lead = [] if channels is None else [channels]
            raise RuntimeError(
                f"Given input size: ({'x'.join(map(str, [*lead, *sizes]))}). Calculated output size: "
                f"({'x'.join(map(str, [*lead, *outs_all]))}). Output size is too small"
            )
        c = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
        coords.append(np.where((c >= 0) & (c < size), c, -1))
        outs.append(out)
    return tuple(outs), coords


def adaptive_windows(sizes: tuple, outs: tuple) -> list[np.ndarray]:
    """Per dimension, PyTorch's adaptive windows ``[floor(i L / n), ceil((i + 1) L / n))``, padded with -1."""
    coords = []
    for size, out in zip(sizes, outs, strict=True):
        starts = (np.arange(out) * size) // out
        ends = -((-(np.arange(out) + 1) * size) // out)
        width = int((ends - starts).max()) if out else 0
        c = starts[:, None] + np.arange(width)[None, :]
        coords.append(np.where(c < ends[:, None], c, -1))
    return coords


def table(sizes: tuple, coords: list[np.ndarray]) -> np.ndarray:
    """The flat index table ``(prod(out), prod(kernel))`` over the spatial sizes; padding points at
    ``prod(sizes)``, the appended element."""
    total = int(np.prod(sizes))
    flat = np.zeros([1] * (2 * len(sizes)), dtype=np.int64)
    invalid = np.zeros_like(flat, dtype=bool)
    k = len(sizes)
    for dim, c in enumerate(coords):
        shape = [1] * (2 * k)
        shape[dim], shape[k + dim] = c.shape
        c = c.reshape(shape)
        stride = int(np.prod(sizes[dim + 1 :]))
        flat = flat + np.maximum(c, 0) * stride
        invalid = invalid | (c < 0)
    flat = np.where(invalid, total, flat)
    outs = [c.shape[0] for c in coords]
    return flat.reshape(int(np.prod(outs)), -1)


def gather_windows(input: Tensor, k: int, index: np.ndarray, fill: float) -> Tensor:
    """``(*lead, prod(out), window)``: the window elements of ``input``'s last ``k`` dims by ``index``
    (a table, or one table per leading plane), ``fill`` where it points past the input."""
    lead = tuple(input.shape[: input.ndim - k])
    flat = input.reshape(*lead, -1)
    pad = full_function((*lead, 1), fill, dtype=input.dtype, device=input.device)
    flat = cat([flat, pad], -1)
    rows, width = index.shape[-2], index.shape[-1]
    idx = make_tensor(
        np.ascontiguousarray(index.reshape(*index.shape[:-2], rows * width)), dtype=D.int64, device=input.device
    )
    if idx.ndim == 1:
        idx = idx.expand(*lead, rows * width)
    return flat.gather(-1, idx).reshape(*lead, rows, width)


def max_over_windows(input: Tensor, k: int, index: np.ndarray, outs: tuple, return_indices: bool) -> Any:
    windows = gather_windows(input, k, index, float("-inf"))
    values, arg = windows.max(-1)
    lead = tuple(input.shape[: input.ndim - k])
    values = values.reshape(*lead, *outs)
    if not return_indices:
        return values
    idx = make_tensor(np.ascontiguousarray(index), dtype=D.int64, device=input.device)
    if idx.ndim == 2:
        idx = idx.expand(*lead, *idx.shape)
    positions = idx.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return values, positions.reshape(*lead, *outs)


def check_batched(name: str, input: Tensor, k: int) -> None:
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(
            f"{name}: Expected {k + 1}D or {k + 2}D (batch mode) tensor for input, but got: {list(input.shape)}"
        )
    if any(n == 0 for n in input.shape[1:]):
        raise RuntimeError(
            f"{name}: Expected input's non-batch dimensions to have positive length, but got {list(input.shape)}"
        )


def windows_product(*arrays: np.ndarray) -> np.ndarray:
    """The outer product of per-dimension counts, flattened in output order."""
    out = np.ones(1)
    for a in arrays:
        out = np.multiply.outer(out, a)
    return out.reshape(-1)
