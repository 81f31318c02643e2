"""2-D pooling: ``max_pool2d_with_indices`` (and ``max_pool2d``), ``avg_pool2d``, ``_adaptive_avg_pool2d``
(and ``adaptive_avg_pool2d``), for batched (N, C, H, W) and unbatched (C, H, W) inputs.

Window pools run one vectorized step per kernel tap over strided views of the padded input, in
PyTorch's scan order: max keeps the first maximum of a window (and the last NaN, as PyTorch's
``val > max || isnan(val)`` does), and indices are flat positions ``h * W + w`` in each unpadded
input plane. Windows that tile the input (stride equal to the kernel, no padding nor dilation: the
usual 2x2 pool) skip the validity bookkeeping and choose through bits rather than boolean masks.
Average pools sum the taps and divide by PyTorch's per-window divisor (padding counted or not,
clipped at the padded edge, or ``divisor_override``). The adaptive average uses
PyTorch's windows ``[floor(i*In/Out), ceil((i+1)*In/Out))``, separably over rows then columns through
cumulative sums in float64. Half types compute in float32; results keep a channels-last layout.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.linalg.matmul import compute_array
from ember.core.aten.reductions import reductions
from ember.core.aten.shape import views
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.bitselect import copy_where
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name
from ember.core.quiet import restore, silence
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, empty

max_pool2d_with_indices = define(
    "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
    ("core",),
)
max_pool2d_op = define(
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
    "bool ceil_mode=False) -> Tensor"
)
avg_pool2d_op = define(
    "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
    "bool count_include_pad=True, int? divisor_override=None) -> Tensor",
    ("core",),
)
adaptive_avg_pool2d_core = define("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", ("core",))
adaptive_avg_pool2d_op = define("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")


def _pair(value, name: str, what: str, allow_empty: bool = False) -> tuple:
    if isinstance(value, INT_LIKE):
        return (value, value)
    value = tuple(value)
    if allow_empty and not value:
        return ()
    if len(value) == 1:
        return value * 2
    if len(value) != 2:
        raise RuntimeError(
            f"{name}: {what} must either be {'omitted, ' if allow_empty else ''}a single int, or a tuple of two ints"
        )
    return value


def _output_size(size: int, kernel: int, pad: int, stride: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: a last window that starts in the padding is dropped."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _window_plan(self: Tensor, name: str, kernel_size, stride, padding, dilation, ceil_mode):
    kh, kw = _pair(kernel_size, name, "kernel_size")
    stride = _pair(stride, name, "stride", allow_empty=True) or (kh, kw)
    ph, pw = _pair(padding, name, "padding")
    dh, dw = _pair(dilation, name, "dilation")
    sh, sw = stride
    if sh == 0 or sw == 0:
        raise RuntimeError("stride should not be zero")
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sh < 0 or sw < 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    for p, k, d in ((ph, kh, dh), (pw, kw, dw)):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and "
                f"dilation={d}"
            )
    if self.ndim not in (3, 4) or any(n == 0 for n in self._shape[-3:]):
        if self.ndim in (3, 4):
            raise RuntimeError(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                f"{list(self._shape)}"
            )
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if ph > kh // 2 or pw > kw // 2:
        raise RuntimeError(
            f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, padH = {ph}, "
            f"kW = {kw}, kH = {kh}"
        )
    c, h, w = self._shape[-3:]
    oh = _output_size(h, kh, ph, sh, dh, ceil_mode)
    ow = _output_size(w, kw, pw, sw, dw, ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). Output size is too small"
        )
    shape = (*self._shape[:-2], oh, ow)
    return shape, _layout(self, shape), (kh, kw), (sh, sw), (ph, pw), (dh, dw)


def _layout(self: Tensor, shape: tuple) -> tuple:
    return memory_format_strides(shape, suggest_memory_format(self))


def _refuse(name: str, self: Tensor, allowed) -> None:
    if not allowed(self.dtype):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")


def _padded(x: np.ndarray, shape: tuple, kernel, stride, padding, dilation, fill) -> np.ndarray:
    """``x`` padded on each side by ``padding`` and at the far end far enough for every window."""
    oh, ow = shape[-2:]
    h, w = x.shape[-2:]
    need_h = (oh - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1
    need_w = (ow - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1
    full_h, full_w = max(need_h, h + 2 * padding[0]), max(need_w, w + 2 * padding[1])
    if (full_h, full_w) == (h, w):
        return x
    out = np.full((*x.shape[:-2], full_h, full_w), fill, x.dtype)
    out[..., padding[0] : padding[0] + h, padding[1] : padding[1] + w] = x
    return out


def _taps(xp: np.ndarray, shape: tuple, kernel, stride, dilation):
    """(i, j, view of tap (i, j) at every output position), in the kernel's row-major order."""
    oh, ow = shape[-2:]
    for i in range(kernel[0]):
        rows = slice(i * dilation[0], i * dilation[0] + (oh - 1) * stride[0] + 1, stride[0])
        for j in range(kernel[1]):
            cols = slice(j * dilation[1], j * dilation[1] + (ow - 1) * stride[1] + 1, stride[1])
            yield i, j, xp[..., rows, cols]


# -- max pooling ------------------------------------------------------------------------------------------


def _max_plan(self, kernel_size, stride, padding, dilation, ceil_mode):
    plan = _window_plan(self, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    if self.dtype in (D.bool_, D.complex64, D.complex128):
        raise NotImplementedError(f"\"max_pool2d\" not implemented for '{type_name(self.dtype)}'")
    return plan


def _tiles(x: np.ndarray, shape: tuple, kernel, stride, padding, dilation) -> bool:
    """Windows side by side, none overlapping nor reaching past the input (the usual 2x2 pool)."""
    oh, ow = shape[-2:]
    return (
        tuple(stride) == tuple(kernel)
        and tuple(padding) == (0, 0)
        and tuple(dilation) == (1, 1)
        and oh * kernel[0] <= x.shape[-2]
        and ow * kernel[1] <= x.shape[-1]
        and kernel[0] * kernel[1] < 256
        and x.dtype.kind in "iuf"
    )


def _has_negative_zero(x: np.ndarray) -> bool:
    sign_only = np.array(-0.0, x.dtype).view(f"i{x.itemsize}")  # the bits of -0.0 as an integer
    return bool((x.view(sign_only.dtype) == sign_only).any())


def _max_pool_tiled(x: np.ndarray, shape: tuple, kernel, values: np.ndarray, indices: np.ndarray) -> None:
    """Max and flat index of each tiling window, written into ``values`` and ``indices``: one pass
    per tap over a strided view, keeping a tap where ``tap > best or isnan(tap)`` as PyTorch does
    (first maximum, last nan). The tap's number and, where maximum would not do, its value are
    chosen through bits (``copy_where``), since ``np.where`` is slow on such random masks."""
    oh, ow = shape[-2:]
    kh, kw = kernel
    width = x.shape[-1]
    taps = [x[..., i : oh * kh : kh, j : ow * kw : kw] for i in range(kh) for j in range(kw)]
    # The result's own memory holds the running maximum unless it is of another (half) dtype.
    best = values if values.dtype == x.dtype else np.empty(values.shape, x.dtype)
    np.copyto(best, taps[0])
    tap = np.zeros(best.shape, np.uint8)  # which tap of the window holds ``best``
    # Without nan or -0.0, ``np.maximum`` gives the kept tap's bits (ties are equal bits); with
    # them, the kept tap is copied by its mask, since maximum may take +0.0 over an earlier -0.0.
    has_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    exact_max = x.dtype.kind != "f" or not (has_nan or _has_negative_zero(x))
    for n in range(1, len(taps)):
        better = taps[n] > best
        if has_nan:
            better |= np.isnan(taps[n])
        if exact_max:
            np.maximum(best, taps[n], out=best)
        else:
            copy_where(best, taps[n], better)
        copy_where(tap, np.uint8(n), better)
    if best is not values:
        token = silence()
        try:
            np.copyto(values, best, casting="unsafe")
        finally:
            restore(token)
    # The flat index h * W + w of tap (i, j) of window (r, c) is (r*kh + i) * W + c*kw + j.
    corner = (np.arange(oh) * (kh * width))[:, None] + np.arange(ow) * kw
    offsets = np.array([i * width + j for i in range(kh) for j in range(kw)], np.int64)
    np.add(corner, offsets.take(tap), out=indices)


@max_pool2d_with_indices.register_kernel("cpu")
def _max_pool_cpu(self: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    shape, strides, kernel, stride, padding, dilation = _max_plan(
        self, kernel_size, stride, padding, dilation, ceil_mode
    )
    values, indices = empty(shape, self.dtype, self.device, strides), empty(shape, D.int64, self.device, strides)
    if numel(shape) == 0:
        return values, indices
    x = compute_array(self)
    h, w = self._shape[-2:]
    oh, ow = shape[-2:]
    if _tiles(x, shape, kernel, stride, padding, dilation):
        _max_pool_tiled(x, shape, kernel, values._array, indices._array)
        return values, indices
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _padded(x, shape, kernel, stride, padding, dilation, low)
    # Which taps fall inside the input: PyTorch's window starts at its first such tap, whatever its value.
    row_start = np.arange(oh) * stride[0] - padding[0]
    col_start = np.arange(ow) * stride[1] - padding[1]
    best = np.full(xp[..., :oh, :ow].shape, low, x.dtype)
    best_tap = np.zeros(best.shape, np.int64)
    seen = np.zeros((oh, ow), bool)
    for i, j, tap in _taps(xp, shape, kernel, stride, dilation):
        r, c = row_start + i * dilation[0], col_start + j * dilation[1]
        valid = ((r >= 0) & (r < h))[:, None] & ((c >= 0) & (c < w))[None, :]
        better = tap > best
        if x.dtype.kind == "f":
            better |= np.isnan(tap)
        better = (better & valid) | (valid & ~seen)
        seen |= valid
        np.copyto(best, tap, where=better)
        best_tap[better] = i * kernel[1] + j
    rows = np.arange(oh)[:, None] * stride[0] - padding[0] + (best_tap // kernel[1]) * dilation[0]
    cols = np.arange(ow)[None, :] * stride[1] - padding[1] + (best_tap % kernel[1]) * dilation[1]
    token = silence()
    try:
        np.copyto(values._array, best, casting="unsafe")
    finally:
        restore(token)
    np.copyto(indices._array, rows * w + cols)
    return values, indices


@max_pool2d_with_indices.register_meta
def _max_pool_meta(self: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    shape, strides, *_ = _max_plan(self, kernel_size, stride, padding, dilation, ceil_mode)
    return empty(shape, self.dtype, self.device, strides), empty(shape, D.int64, self.device, strides)


@max_pool2d_op.register_decomposition
def _max_pool2d(self: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> Tensor:
    return max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


# -- average pooling --------------------------------------------------------------------------------------


def _avg_plan(self, kernel_size, stride, padding, ceil_mode, divisor_override):
    if self.ndim < 3:
        views.select(self, -3, 0)  # PyTorch's IndexError for the missing channel dimension
    plan = _window_plan(self, "avg_pool2d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _refuse("avg_pool2d", self, lambda d: d.category == D.FLOATING or d is D.int64)
    return plan


def _divisors(size: int, out: int, kernel: int, stride: int, pad: int, include_pad: bool) -> np.ndarray:
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    counted = end - start
    if not include_pad:
        counted = np.minimum(end, size) - np.maximum(start, 0)
    return counted


@avg_pool2d_op.register_kernel("cpu")
def _avg_pool_cpu(
    self: Tensor, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
) -> Tensor:
    shape, strides, kernel, stride, padding, dilation = _avg_plan(
        self, kernel_size, stride, padding, ceil_mode, divisor_override
    )
    out = empty(shape, self.dtype, self.device, strides)
    if numel(shape) == 0:
        return out
    x = compute_array(self)
    xp = _padded(x, shape, kernel, stride, padding, dilation, 0)
    total = None
    for _, _, tap in _taps(xp, shape, kernel, stride, dilation):
        total = tap.copy() if total is None else np.add(total, tap, out=total)
    h, w = self._shape[-2:]
    oh, ow = shape[-2:]
    if divisor_override is not None:
        divisor = np.asarray(divisor_override)
    else:
        rows = _divisors(h, oh, kernel[0], stride[0], padding[0], count_include_pad)
        cols = _divisors(w, ow, kernel[1], stride[1], padding[1], count_include_pad)
        divisor = rows[:, None] * cols[None, :]
    token = silence()
    try:
        if x.dtype.kind in "iu":
            result = np.floor_divide(total, divisor)  # PyTorch divides int64 sums with C's truncation
            result = np.where((total % divisor != 0) & ((total < 0) != (divisor < 0)), result + 1, result)
        else:
            result = np.divide(total, divisor.astype(x.dtype))
        np.copyto(out._array, result, casting="unsafe")
    finally:
        restore(token)
    return out


@avg_pool2d_op.register_meta
def _avg_pool_meta(
    self: Tensor, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
) -> Tensor:
    shape, strides, *_ = _avg_plan(self, kernel_size, stride, padding, ceil_mode, divisor_override)
    return empty(shape, self.dtype, self.device, strides)


# -- adaptive average pooling -----------------------------------------------------------------------------


def _adaptive_plan(self: Tensor, output_size) -> tuple:
    output_size = tuple(output_size)
    if len(output_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if any(s < 0 for s in output_size):
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received "
            f"{{{output_size[0]}, {output_size[1]}}}"
        )
    if self.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(self._shape)}")
    for d in range(1, self.ndim):
        if self._shape[d] == 0 and d >= self.ndim - 2:
            raise RuntimeError(
                f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input "
                f"has sizes {list(self._shape)} with dimension {d} being empty"
            )
    shape = (*self._shape[:-2], *output_size)
    if numel(shape):  # an empty result runs no kernel
        _refuse("adaptive_avg_pool2d", self, lambda d: d.category == D.FLOATING)
    return shape, _layout(self, shape)


def _adaptive_axis(x: np.ndarray, out: int, axis: int) -> np.ndarray:
    """Means over PyTorch's adaptive windows along ``axis``, from a cumulative sum."""
    size = x.shape[axis]
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(1, out + 1) * size)) // out)
    moved = np.moveaxis(x, axis, -1)
    cumulative = np.concatenate([np.zeros((*moved.shape[:-1], 1)), np.cumsum(moved, axis=-1, dtype=np.float64)], -1)
    means = (cumulative[..., ends] - cumulative[..., starts]) / (ends - starts)
    return np.moveaxis(means, -1, axis)


@adaptive_avg_pool2d_core.register_kernel("cpu")
def _adaptive_cpu(self: Tensor, output_size) -> Tensor:
    shape, strides = _adaptive_plan(self, output_size)
    out = empty(shape, self.dtype, self.device, strides)
    if numel(shape) == 0:
        return out
    x = compute_array(self)
    result = _adaptive_axis(_adaptive_axis(x, shape[-1], -1), shape[-2], -2)
    np.copyto(out._array, result.astype(x.dtype), casting="unsafe")
    return out


@adaptive_avg_pool2d_core.register_meta
def _adaptive_meta(self: Tensor, output_size) -> Tensor:
    shape, strides = _adaptive_plan(self, output_size)
    return empty(shape, self.dtype, self.device, strides)


@adaptive_avg_pool2d_op.register_decomposition
def _adaptive_avg_pool2d(self: Tensor, output_size) -> Tensor:
    if tuple(output_size) == (1, 1):
        # PyTorch's shortcut: the mean over the plane (so complex inputs work and ints get mean's error).
        out = reductions.mean_dim(self, [-1, -2], True)
        if suggest_memory_format(self) == "channels_last":
            n, c = self._shape[:2]
            out = views.as_strided(out, (n, c, 1, 1), (c, 1, c, c))
        return out
    return adaptive_avg_pool2d_core(self, output_size)


# -- the Python surface -----------------------------------------------------------------------------------


def max_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
) -> Tensor | tuple[Tensor, Tensor]:
    stride = () if stride is None else stride
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return max_pool2d_op(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
) -> Tensor:
    stride = () if stride is None else stride
    return avg_pool2d_op(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    if isinstance(output_size, INT_LIKE):
        output_size = (output_size, output_size)
    sizes = tuple(output_size)
    if len(sizes) == 2:
        sizes = tuple(input._shape[-2 + i] if s is None else s for i, s in enumerate(sizes))
    return adaptive_avg_pool2d_op(input, sizes)


@public("max_pool2d")
def _max_pool2d_function(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> Tensor:
    return max_pool2d_op(input, kernel_size, stride, padding, dilation, ceil_mode)
