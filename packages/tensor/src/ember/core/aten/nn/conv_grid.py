"""Stride-1 2-D convolutions on a flat grid: the NumPy array kernels behind ``convolution``'s forward
and ``convolution_backward``'s input and weight gradients.

The input (N, C, H, W) is laid out channel-major on a zeroed grid of row pitch ``R = W + gw`` and
image pitch ``S = (H + gh) * R`` and flattened: pixel (n, y, x) of channel ``c`` sits at ``base + n*S
+ y*R + x`` of row ``c`` of a (C, length) buffer. The gaps of ``gw`` columns after each row and ``gh``
rows after each image are zeros that serve as the right padding of one row (image) and the left
(top) padding of the next, so they need only be as wide as the padding, not twice. Output position
(n, y, x) is kept at ``q = n*S + y*R + x`` and kernel tap (i, j) reads the input at ``q + i*dh*R +
j*dw``: every tap is a shifted slice of one buffer. Stacking the shifts of all taps (one contiguous
copy) makes the whole convolution one GEMM over the batch, (O, C*kh*kw) by (C*kh*kw, positions),
which BLAS threads well; positions in the gaps are computed and dropped. Where the stack of all taps
would be large, each kernel row stacks only its ``kw`` shifts and is a GEMM of its own.

The gradients reuse the grid. The output gradient, scattered onto a zeroed grid of the same
geometry at the outputs' positions ("g on the grid"), is zero at every dropped position, so

- the weight gradient is that grid times the input's tap stack, transposed: one GEMM whose
  reduction runs over every position of the batch;
- the input gradient is the convolution of that grid, read backwards, by the weight with its two
  channel dims swapped and its taps reversed. Reads before a tap's reach land on the zeros of the
  gaps (and of a lead of zeros before the first image), so the same forward product gives the
  gradient at every pixel's position.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

# The largest all-taps stack a product builds; past it, each kernel row stacks its own taps. A few
# MiB: in the CNN benchmark a 3 MiB stack beats the rows while a 6 MiB one loses to them.
_STACK_BYTES = 4 << 20


class Grid(NamedTuple):
    """The geometry of an input's flat grid (see the module's docstring)."""

    row: int  # R: a row's pitch
    image: int  # S: an image's pitch
    base: int  # where pixel (0, 0, 0) sits
    reach: int  # how far past an output's position its last tap reads
    shape: tuple  # the input's (N, C, H, W)
    out: tuple  # the output's (Ho, Wo)


def grid(x_shape, kernel, padding, dilation) -> Grid:
    """The flat grid of an input of shape ``x_shape`` for a stride-1 convolution."""
    h, w = x_shape[2:]
    (kh, kw), (ph, pw), (dh, dw) = kernel, padding, dilation
    ho, wo = h + 2 * ph - dh * (kh - 1), w + 2 * pw - dw * (kw - 1)
    # A gap pads both sides and must hold the outputs past the input's edge (padding past the
    # kernel's reach makes more outputs than pixels).
    row = w + max(pw, wo - w)
    image = (h + max(ph, ho - h)) * row
    return Grid(row, image, ph * row + pw, (kh - 1) * dh * row + (kw - 1) * dw, tuple(x_shape), (ho, wo))


def _images(flat: np.ndarray, g: Grid) -> np.ndarray:
    """A (C, N*S) stretch of a grid buffer as (C, N, H + gh, R)."""
    return flat.reshape(flat.shape[0], g.shape[0], g.image // g.row, g.row)


def padded_grid(x: np.ndarray, g: Grid) -> np.ndarray:
    """``x`` (N, C, H, W) on its zeroed flat grid, with zeros past the end for the last taps' reads:
    shape (C, base + N*S + tail)."""
    n, c, h, w = x.shape
    tail = max(g.reach - g.base, 0)
    buffer = np.zeros((c, g.base + n * g.image + tail), x.dtype)
    _images(buffer[:, g.base : g.base + n * g.image], g)[:, :, :h, :w] = x.transpose(1, 0, 2, 3)
    return buffer


def _stack(rows: np.ndarray, taps: tuple, row: int, dilation, length: int, extra: int = 0) -> np.ndarray:
    """The shifted slices of ``rows`` (C, *) for ``count`` kernel rows from ``first`` and all ``kw``
    columns (``taps``), laid out (C*count*kw, length), contiguous, with ``extra`` more rows of ones
    at the end. ``as_strided`` checks no bounds: the callers size their buffers for the last tap's
    read past ``length``."""
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


def tap_products(buffer: np.ndarray, w: np.ndarray, row: int, dilation, length: int, groups: int, out, bias=None):
    """``out[:, :length]`` = the sum over taps (i, j) of ``w[:, :, i, j]`` by the slice of ``buffer``
    that starts ``i*dh*row + j*dw`` in, per group; plus ``bias`` per output channel (folded into the
    GEMM as a row of ones, which saves a pass over the result).

    ``buffer`` is (C, at least length + the taps' reach), ``w`` (O, C/groups, kh, kw), ``out`` (O, at
    least length), a view that may be strided.
    """
    o, cg, kh, kw = w.shape
    og = o // groups
    extra = 0 if bias is None else 1
    every_tap = cg * kh * kw * length * buffer.itemsize <= _STACK_BYTES
    for g in range(groups):
        rows = buffer[g * cg : (g + 1) * cg]
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
        partial = np.empty((og, length), buffer.dtype) if kh > 1 else None
        for i in range(kh):
            matrix = weight[:, :, i, :].reshape(og, cg * kw)
            if extra:
                column = bias[g * og : (g + 1) * og, None] if i == 0 else np.zeros((og, 1), buffer.dtype)
                matrix = np.concatenate([matrix, column], axis=1)
            start = i * dilation[0] * row
            np.matmul(matrix, stacked[:, start : start + length], out=acc if i == 0 else partial)
            if i:
                np.add(acc, partial, out=acc)
    return out


def forward(x: np.ndarray, w: np.ndarray, bias, padding, dilation, groups: int) -> np.ndarray:
    """The stride-1 convolution of ``x`` (N, C, H, W) by ``w`` (O, C/groups, kh, kw), plus ``bias``
    (O,) or None: an (N, O, Ho, Wo) view of a channel-major array."""
    g = grid(x.shape, w.shape[2:], padding, dilation)
    out = np.empty((w.shape[0], x.shape[0] * g.image), x.dtype)
    tap_products(padded_grid(x, g), w, g.row, dilation, out.shape[1], groups, out, bias)
    ho, wo = g.out
    return _images(out, g)[:, :, :ho, :wo].transpose(1, 0, 2, 3)


def output_grad_grid(grad: np.ndarray, x_shape, w: np.ndarray, padding, dilation) -> np.ndarray:
    """``grad`` (N, O, Ho, Wo) at its outputs' positions on the zeroed grid of an input of shape
    ``x_shape``, after a lead of zeros as long as a tap's reach and before a tail as long as the
    grid's base: shape (O, reach + N*S + base). ``grad`` may leave out the last rows and columns
    of outputs (a transposed convolution's output padding, seen from its input): they get 0."""
    g = grid(x_shape, w.shape[2:], padding, dilation)
    n, o, ho, wo = grad.shape
    buffer = np.zeros((o, g.reach + n * g.image + g.base), grad.dtype)
    _images(buffer[:, g.reach : g.reach + n * g.image], g)[:, :, :ho, :wo] = grad.transpose(1, 0, 2, 3)
    return buffer


def weight_grad(x: np.ndarray, g_grid: np.ndarray, w_shape, padding, dilation, groups: int) -> np.ndarray:
    """d(loss)/d(weight), shape ``w_shape`` = (O, C/groups, kh, kw), of the stride-1 convolution of
    ``x`` whose output gradient is ``g_grid`` (from ``output_grad_grid``)."""
    o, cg, kh, kw = w_shape
    og = o // groups
    g = grid(x.shape, (kh, kw), padding, dilation)
    length = x.shape[0] * g.image
    buffer = padded_grid(x, g)
    result = np.empty((o, cg, kh, kw), x.dtype)
    every_tap = cg * kh * kw * length * x.itemsize <= _STACK_BYTES
    for gi in range(groups):
        rows = buffer[gi * cg : (gi + 1) * cg]
        grads = g_grid[gi * og : (gi + 1) * og, g.reach : g.reach + length]
        target = result[gi * og : (gi + 1) * og]
        for i in [None] if every_tap else range(kh):
            taps = (0, kh, kw) if i is None else (i, 1, kw)
            stacked = _stack(rows, taps, g.row, dilation, length)
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
    g = grid(x_shape, (kh, kw), padding, dilation)
    # Each group's weight with its channel dims swapped and its taps reversed: (C, O/groups, kh, kw).
    flipped = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(c, og, kh, kw)[:, :, ::-1, ::-1]
    out = np.empty((c, n * g.image), g_grid.dtype)
    # The gradient at the pixel at base + t gathers the reversed taps from base + t on.
    tap_products(g_grid[:, g.base :], flipped, g.row, dilation, out.shape[1], groups, out)
    return _images(out, g)[:, :, :h, :wd].transpose(1, 0, 2, 3)
