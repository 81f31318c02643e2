"""``native_batch_norm_backward``: the three gradients of batch norm in one kernel, as PyTorch's.

With ``M`` elements per channel, ``invstd`` the saved ``1/std`` (training) or
``1/sqrt(running_var + eps)`` (evaluation) and ``w`` the weight (1 without one)::

    train:  dx = (g - sum(g)/M - (x - mean) * sum(g*(x - mean)) * invstd^2 / M) * invstd * w
    eval:   dx = g * invstd * w
    dweight = sum(g * (x - mean)) * invstd,        dbias = sum(g)

(sums over every dim but the channels). Written as core ops this took about ten dispatched ops and
as many full-size passes; the kernel takes the per-channel sums first (the dot product of each
contiguous (sample, channel) row as one batched matmul) and then one short chain of in-place passes.
Gradients left out of ``output_mask`` come back as None, where PyTorch's are undefined.

The decomposition is the same formula in core ops, with the saved statistics (what a trace of a
backward, AOT autograd's, lowers). When the backward is itself differentiated, autograd records it
with statistics recomputed from the input instead (the saved ones carry no history of it), so that
their dependence on it is differentiated too (ember.autograd's normalization derivatives).
"""

from __future__ import annotations

import numpy as np

from ember.core import channel_rows
from ember.core import dtypes as D
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides
from ember.core.pointwise import unsupported
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

batch_norm_backward_op = define(
    "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, "
    "Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) "
    "-> (Tensor, Tensor, Tensor)",
    (),  # lowered by its decomposition, as in PyTorch
)

_HALF = (D.float16, D.bfloat16)


def _check(grad_out: Tensor, input: Tensor, weight, running_mean, running_var, save_mean, save_invstd, train: bool):
    if input.dtype.category != D.FLOATING:
        raise unsupported("batch_norm_backward_cpu", input.dtype)
    if input.ndim < 2:
        raise RuntimeError(f"batch_norm_backward: expected 2D or more input (got {input.ndim}D input)")
    if tuple(grad_out._shape) != tuple(input._shape):
        raise RuntimeError(
            f"batch_norm_backward: grad_out of shape {list(grad_out._shape)} does not match input of shape "
            f"{list(input._shape)}"
        )
    stats = (save_mean, save_invstd) if train else (running_mean, running_var)
    if any(s is None for s in stats):
        which = "save_mean and save_invstd" if train else "running_mean and running_var"
        raise RuntimeError(f"batch_norm_backward: {which} must be defined when train={train}")
    c = input._shape[1]
    for t in (weight, *stats):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"batch_norm_backward: expected {c} elements per statistic, got {t.numel()}")


def _param_dtype(input: Tensor, weight) -> D.dtype:
    if weight is not None:
        return weight.dtype
    return D.float32 if input.dtype in _HALF else input.dtype


def _outputs(input: Tensor, weight, output_mask) -> tuple:
    """Empty results of the right shapes, dtypes and layouts (None where the mask leaves one out)."""
    shape = tuple(input._shape)
    strides = memory_format_strides(shape, suggest_memory_format(input))
    c = shape[1]
    param = _param_dtype(input, weight)
    return (
        empty(shape, input.dtype, input.device, strides) if output_mask[0] else None,
        empty((c,), param, input.device) if output_mask[1] else None,
        empty((c,), param, input.device) if output_mask[2] else None,
    )


@batch_norm_backward_op.register_meta
def _meta(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask):
    _check(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train)
    return _outputs(input, weight, output_mask)


def _wide(t: Tensor) -> np.ndarray:
    array = t._array
    return array.astype(np.float32) if t.dtype in _HALF else array


def _channel_sums(x: np.ndarray, g: np.ndarray, axes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``sum(g)`` and ``sum(x * g)`` per channel, shaped (C,): for C-contiguous operands dot
    products per (sample, channel) row (by ones, and by ``x``), with no full-size product in
    memory."""
    n, c = x.shape[:2]
    if x.flags.c_contiguous and g.flags.c_contiguous and x.ndim > 2 and x.size:
        rows_x, rows_g = x.reshape(n, c, 1, -1), g.reshape(n, c, -1, 1)
        ones = np.ones((1, rows_g.shape[2]), g.dtype)
        return np.matmul(ones, rows_g).sum(axis=(0, 2, 3)), np.matmul(rows_x, rows_g).sum(axis=0).reshape(c)
    return g.sum(axis=axes), np.multiply(x, g).sum(axis=axes)


def _fill(out: Tensor, array: np.ndarray) -> Tensor:
    """``out`` holding ``array``; the array itself where it already has ``out``'s dtype and layout."""
    if array.dtype == out.dtype.np and array.flags.c_contiguous and out._stride == contiguous_strides(out._shape):
        return from_array(array, out.dtype)
    np.copyto(out._array, array, casting="unsafe")
    return out


@batch_norm_backward_op.register_kernel("cpu")
def _cpu(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask):
    _check(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train)
    grad_input, grad_weight, grad_bias = _outputs(input, weight, output_mask)
    x, g = _wide(input), _wide(grad_out)
    c = x.shape[1]
    count = x.size // c if c else 0
    axes = (0, *range(2, x.ndim))
    view = (1, c) + (1,) * (x.ndim - 2)
    token = silence()
    try:
        if train:
            mean = _wide(save_mean).astype(x.dtype, copy=False).reshape(view)
            invstd = _wide(save_invstd).astype(x.dtype, copy=False).reshape(view)
        else:
            mean = _wide(running_mean).astype(x.dtype, copy=False).reshape(view)
            invstd = 1 / np.sqrt(_wide(running_var).astype(x.dtype, copy=False).reshape(view) + x.dtype.type(eps))
        scale = invstd if weight is None else invstd * _wide(weight).astype(x.dtype, copy=False).reshape(view)
        # Per-channel operands as blocks that each sample's row meets (``channel_rows``), where the
        # layouts allow; else broadcast as (1, C, 1, ...).
        rows = channel_rows.fits(x, g)

        def per_channel(values: np.ndarray) -> np.ndarray:
            return channel_rows.block(values, x.shape) if rows else values.reshape(view)

        xs, gs = (channel_rows.rows(x), channel_rows.rows(g)) if rows else (x, g)
        centered = dot = None
        if output_mask[1] or (output_mask[0] and train):
            centered = np.subtract(xs, per_channel(mean))
            sum_g, dot = _channel_sums(centered.reshape(x.shape), g, axes)
        else:
            sum_g = g.sum(axis=axes)
        if grad_input is not None:
            if train:
                # dx = g*scale - (x - mean) * (dot * invstd^2 / M * scale) - sum(g)/M * scale
                n = x.dtype.type(max(count, 1))
                centered *= per_channel((dot.reshape(view) * invstd * invstd / n) * scale)
                result = np.multiply(gs, per_channel(scale))
                result -= centered
                result -= per_channel((sum_g.reshape(view) / n) * scale)
            else:
                result = np.multiply(gs, per_channel(scale))
            grad_input = _fill(grad_input, result.reshape(x.shape))
        if grad_weight is not None:
            np.copyto(grad_weight._array, dot * invstd.reshape(c), casting="unsafe")
        if grad_bias is not None:
            np.copyto(grad_bias._array, sum_g, casting="unsafe")
    finally:
        restore(token)
    return grad_input, grad_weight, grad_bias


@batch_norm_backward_op.register_decomposition
def _decomposition(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask):
    _check(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train)
    wide = D.float32 if input.dtype in _HALF else input.dtype
    x, g = input.to(wide), grad_out.to(wide)
    c = input.shape[1]
    view = [1, c] + [1] * (input.ndim - 2)
    dims = [0, *range(2, input.ndim)]
    count = input.numel() // c if c else 0
    if train:
        mean, invstd = save_mean.to(wide).reshape(view), save_invstd.to(wide).reshape(view)
    else:
        mean = running_mean.to(wide).reshape(view)
        invstd = (running_var.to(wide).reshape(view) + eps).rsqrt()
    scale = invstd if weight is None else invstd * weight.to(wide).reshape(view)
    sum_g = g.sum(dims, keepdim=True)
    centered = dot = None
    if output_mask[1] or (output_mask[0] and train):
        centered = x - mean
        dot = (centered * g).sum(dims, keepdim=True)
    param = _param_dtype(input, weight)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if train:
            projection = dot * invstd * invstd / max(count, 1)
            grad_input = (g - centered * projection - sum_g / max(count, 1)) * scale
        else:
            grad_input = g * scale
        grad_input = grad_input.to(input.dtype)
    if output_mask[1]:
        grad_weight = (dot * invstd).reshape(c).to(param)
    if output_mask[2]:
        grad_bias = sum_g.reshape(c).to(param)
    return grad_input, grad_weight, grad_bias
