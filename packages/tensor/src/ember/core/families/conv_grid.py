"""Stride-1 2-D convolutions on the padded grid: the NumPy array kernels behind ``convolution``'s
forward and ``convolution_backward``'s input and weight gradients.

The input (N, C, H, W), zero-padded to (Hp, Wp), is laid out channel-major and flattened: row ``c``
of a (C, N*Hp*Wp) buffer. Output position (n, y, x) is kept at the flat index ``q = n*Hp*Wp + y*Wp
+ x`` of the same grid, and kernel tap (i, j) reads the input at ``q + i*dh*Wp + j*dw``: every tap
is a shifted slice of one buffer. Stacking the shifts of all taps (one contiguous copy) makes the
whole convolution one GEMM over the batch, (O, C*kh*kw) by (C*kh*kw, positions), which BLAS
threads well; grid positions past each row's and each image's valid outputs are computed and
dropped. Where the stack of all taps would be large, each kernel row stacks only its ``kw`` shifts
and is a GEMM of its own.

The gradients reuse the grid. The output gradient, scattered top-left into a zeroed grid of the
input's shape ("g on the grid"), is zero at every dropped position, so

- the weight gradient is that grid times the input's tap stack, transposed: one GEMM whose
  reduction runs over every position of the batch;
- the input gradient is the convolution of that grid, read backwards, by the weight with its two
  channel dims swapped and its taps reversed. Positions before a tap's reach read the zeros of the
  rows and columns that the valid outputs leave at the end of each image (and of a lead of zeros
  before the first), so the same forward product over the padded input's grid gives the gradient at
  every padded position, of which the interior is kept.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

# The largest all-taps stack a product builds; past it, each kernel row stacks its own taps. A few
# MiB: in the CNN benchmark a 3 MiB stack beats the rows while a 6 MiB one loses to them.
_STACK_BYTES = 4 << 20


def padded_grid(x: np.ndarray, padding, lead: int = 0, tail: int = 0) -> np.ndarray:
    """``x`` (N, C, H, W) zero-padded by ``padding`` = (ph, pw), channel-major and flattened, after
    ``lead`` zeros and before ``tail`` more: shape (C, lead + N*Hp*Wp + tail)."""
    n, c, h, w = x.shape
    ph, pw = padding
    hp, wp = h + 2 * ph, w + 2 * pw
    grid = np.zeros((c, lead + n * hp * wp + tail), x.dtype)
    grid[:, lead : lead + n * hp * wp].reshape(c, n, hp, wp)[:, :, ph : ph + h, pw : pw + w] = x.transpose(1, 0, 2, 3)
    return grid


def _stack(rows: np.ndarray, taps: tuple, row: int, dilation, length: int, extra: int = 0) -> np.ndarray:
    """The shifted slices of ``rows`` (C, *) for kernel rows ``taps[0]`` and columns ``range(kw)``
    laid out (C*len(rows)*kw, length), contiguous, with ``extra`` more rows of ones at the end."""
    first, count, kw = taps
    c = rows.shape[0]
    dh, dw = dilation
    s0, s1 = rows.strides
    stacked = np.empty((c * count * kw + extra, length), rows.dtype)
    windows = as_strided(rows[:, first * dh * row :], (c, count, kw, length), (s0, dh * row * s1, dw * s1, s1))
    np.copyto(stacked[: c * count * kw].reshape(c, count, kw, length), windows)
    if extra:
        stacked[c * count * kw :] = 1
    return stacked


def tap_products(grid: np.ndarray, w: np.ndarray, row: int, dilation, length: int, groups: int, out, bias=None):
    """``out[:, :length]`` = the sum over taps (i, j) of ``w[:, :, i, j]`` by the slice of ``grid``
    that starts ``i*dh*row + j*dw`` in, per group; plus ``bias`` per output channel (folded into the
    GEMM as a row of ones, which saves a pass over the result).

    ``grid`` is (C, at least length + the taps' reach), ``w`` (O, C/groups, kh, kw), ``out`` (O, at
    least length), a view that may be strided.
    """
    o, cg, kh, kw = w.shape
    og = o // groups
    extra = 0 if bias is None else 1
    every_tap = cg * kh * kw * length * grid.itemsize <= _STACK_BYTES
    for g in range(groups):
        rows = grid[g * cg : (g + 1) * cg]
        acc = out[g * og : (g + 1) * og, :length]
        weight = w[g * og : (g + 1) * og]
        if every_tap:
            matrix = weight.reshape(og, cg * kh * kw)
            if bias is not None:
                matrix = np.concatenate([matrix, bias[g * og : (g + 1) * og, None]], axis=1)
            np.matmul(matrix, _stack(rows, (0, kh, kw), row, dilation, length, extra), out=acc)
            continue
        # One stack of the kw column shifts over the whole grid; kernel row i is its slice i*dh*row in.
        span = (kh - 1) * dilation[0] * row
        stacked = _stack(rows, (0, 1, kw), row, dilation, length + span, extra)
        partial = np.empty((og, length), grid.dtype) if kh > 1 else None
        for i in range(kh):
            matrix = weight[:, :, i, :].reshape(og, cg * kw)
            if extra:
                column = bias[g * og : (g + 1) * og, None] if i == 0 else np.zeros((og, 1), grid.dtype)
                matrix = np.concatenate([matrix, column], axis=1)
            start = i * dilation[0] * row
            np.matmul(matrix, stacked[:, start : start + length], out=acc if i == 0 else partial)
            if i:
                np.add(acc, partial, out=acc)
    return out


def forward(x: np.ndarray, w: np.ndarray, bias, padding, dilation, groups: int) -> np.ndarray:
    """The stride-1 convolution of ``x`` (N, C, H, W) by ``w`` (O, C/groups, kh, kw), plus ``bias``
    (O,) or None: an (N, O, Ho, Wo) view of a channel-major array."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    (ph, pw), (dh, dw) = padding, dilation
    hp, wp = h + 2 * ph, wd + 2 * pw
    ho, wo = hp - dh * (kh - 1), wp - dw * (kw - 1)
    total = n * hp * wp
    # A tail of zeros lets the last row of positions read its column shifts past the grid's end.
    grid = padded_grid(x, padding, tail=(kw - 1) * dw)
    out = np.empty((o, total), x.dtype)
    tap_products(grid, w, wp, dilation, total - (kh - 1) * dh * wp, groups, out, bias)
    return out.reshape(o, n, hp, wp)[:, :, :ho, :wo].transpose(1, 0, 2, 3)


def _reach(w: np.ndarray, row: int, dilation) -> int:
    """How far past an output position its last tap reads on a grid of row length ``row``."""
    return (w.shape[2] - 1) * dilation[0] * row + (w.shape[3] - 1) * dilation[1]


def output_grad_grid(g: np.ndarray, x_shape, w: np.ndarray, padding, dilation) -> np.ndarray:
    """``g`` (N, O, Ho, Wo) scattered top-left into the zeroed padded grid of an input of shape
    ``x_shape``, after a lead of zeros as long as a tap's reach: shape (O, reach + N*Hp*Wp)."""
    n, _, h, wd = x_shape
    o, ho, wo = g.shape[1:]
    hp, wp = h + 2 * padding[0], wd + 2 * padding[1]
    lead = _reach(w, wp, dilation)
    grid = np.zeros((o, lead + n * hp * wp), g.dtype)
    grid[:, lead:].reshape(o, n, hp, wp)[:, :, :ho, :wo] = g.transpose(1, 0, 2, 3)
    return grid


def weight_grad(x: np.ndarray, g_grid: np.ndarray, w_shape, padding, dilation, groups: int) -> np.ndarray:
    """d(loss)/d(weight), shape ``w_shape`` = (O, C/groups, kh, kw), of the stride-1 convolution of
    ``x`` whose output gradient is ``g_grid`` (from ``output_grad_grid``)."""
    n, _, h, wd = x.shape
    o, cg, kh, kw = w_shape
    og = o // groups
    wp = wd + 2 * padding[1]
    total = n * (h + 2 * padding[0]) * wp
    lead = (kh - 1) * dilation[0] * wp + (kw - 1) * dilation[1]
    length = total - lead  # the last valid output position is the one before
    grid = padded_grid(x, padding)
    result = np.empty((o, cg, kh, kw), x.dtype)
    every_tap = cg * kh * kw * length * x.itemsize <= _STACK_BYTES
    for gi in range(groups):
        rows = grid[gi * cg : (gi + 1) * cg]
        grads = g_grid[gi * og : (gi + 1) * og, lead : lead + length]
        target = result[gi * og : (gi + 1) * og]
        for i in [None] if every_tap else range(kh):
            taps = (0, kh, kw) if i is None else (i, 1, kw)
            stacked = _stack(rows, taps, wp, dilation, length)
            # (taps, positions) by (positions, Og) runs faster in BLAS than the product the other way.
            product = np.matmul(stacked, grads.T).T
            if i is None:
                target[...] = product.reshape(og, cg, kh, kw)
            else:
                target[:, :, i, :] = product.reshape(og, cg, kw)
    return result


def input_grad(g_grid: np.ndarray, x_shape, w: np.ndarray, padding, dilation, groups: int) -> np.ndarray:
    """d(loss)/d(input), an (N, C, H, W) view, of the stride-1 convolution by ``w`` whose output
    gradient is ``g_grid`` (from ``output_grad_grid``)."""
    n, c, h, wd = x_shape
    o, cg, kh, kw = w.shape
    og = o // groups
    ph, pw = padding
    hp, wp = h + 2 * ph, wd + 2 * pw
    total = n * hp * wp
    # Each group's weight with its channel dims swapped and its taps reversed: (C, O/groups, kh, kw).
    flipped = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(c, og, kh, kw)[:, :, ::-1, ::-1]
    out = np.empty((c, total), g_grid.dtype)
    tap_products(g_grid, flipped, wp, dilation, total, groups, out)
    return out.reshape(c, n, hp, wp)[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3)
