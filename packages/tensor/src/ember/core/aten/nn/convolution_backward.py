"""``convolution_backward``: the input, weight and bias gradients of ``convolution`` in one kernel, as
PyTorch's op of that name.

The input's gradient is itself a convolution: a plain convolution's input gradient is the transposed
convolution of ``grad`` by the same weight (its ``output_padding`` restores the rows that the last
stride step skipped), and a transposed convolution's is the plain one, cropped to the input. The
weight's gradient is one GEMM per group over the unfolded input (im2col): the padded input's windows
laid out once as (group, Cg*taps, N*positions), multiplied by ``grad`` laid out as (group, Og,
N*positions). A transposed convolution relates ``grad`` to its input as a plain convolution relates
the input to its output, so its weight gradient is the same GEMM with the two roles swapped. With
stride 1 and float32, both gradients run the compiled direct kernels (``conv_direct``) instead. The
bias gradient sums ``grad`` over all but its channels. Gradients left out of ``output_mask`` come
back as None. 1-D convolutions run as 2-D ones of height 1, half types in float32.

The CPU kernel does all of it on NumPy arrays, one dispatched op where the same formula in core ops
took a couple of dozen (pads, unfolds, permutes, copies, a GEMM). That formula stays as the
decomposition, which autograd records when the backward is itself differentiated.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.core import channel_rows
from ember.core.aten.linalg.matmul import compute_array
from ember.core.aten.nn import conv_direct, conv_grid
from ember.core.aten.nn.convolution import _as_2d, _convolution_cpu, _expand_param, convolution
from ember.core.aten.nn.padding import constant_pad_nd
from ember.core.aten.shape import views
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.dispatch import define
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty

convolution_backward_op = define(
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, "
    "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, "
    "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    ("core",),
)


def _params(weight: Tensor, stride, padding, dilation, output_padding) -> tuple:
    k = weight.ndim - 2
    return tuple(
        _expand_param(name, value, k)
        for name, value in (
            ("stride", stride),
            ("padding", padding),
            ("dilation", dilation),
            ("output_padding", output_padding),
        )
    )


def _check(grad_output: Tensor, input: Tensor, weight: Tensor, transposed: bool, groups: int) -> None:
    if grad_output.ndim != input.ndim or input.ndim != weight.ndim or input.ndim not in (3, 4):
        raise RuntimeError(
            f"convolution_backward: expected grad_output, input and weight of 3 or 4 dims alike, got "
            f"{list(grad_output._shape)}, {list(input._shape)} and {list(weight._shape)}"
        )
    out_channels = weight._shape[1] * groups if transposed else weight._shape[0]
    if grad_output._shape[0] != input._shape[0] or grad_output._shape[1] != out_channels:
        raise RuntimeError(
            f"convolution_backward: grad_output of shape {list(grad_output._shape)} does not fit input "
            f"{list(input._shape)} and weight {list(weight._shape)}"
        )


def _outputs(grad_output: Tensor, input: Tensor, weight: Tensor, output_mask) -> tuple:
    """Empty results: the input's gradient laid out as the convolution that computes it lays out
    its result (channels-last when ``grad_output`` or the weight is), the others contiguous."""
    channels_last = input.ndim == 4 and "channels_last" in (
        suggest_memory_format(grad_output),
        suggest_memory_format(weight),
    )
    shape = tuple(input._shape)
    strides = memory_format_strides(shape, "channels_last" if channels_last else "contiguous_format")
    return (
        empty(shape, input.dtype, input.device, strides) if output_mask[0] else None,
        empty(tuple(weight._shape), weight.dtype, weight.device) if output_mask[1] else None,
        empty((grad_output._shape[1],), grad_output.dtype, grad_output.device) if output_mask[2] else None,
    )


@convolution_backward_op.register_meta
def _meta(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    _check(grad_output, input, weight, transposed, groups)
    return _outputs(grad_output, input, weight, output_mask)


def _reached(grad_output: Tensor, weight: Tensor, stride, padding, dilation) -> list:
    """How much of the input a plain convolution's windows reach, per spatial dim."""
    return [
        (g - 1) * s - 2 * p + d * (kk - 1) + 1
        for g, s, p, d, kk in zip(grad_output._shape[2:], stride, padding, dilation, weight._shape[2:], strict=True)
    ]


def _weight_grad_array(x: np.ndarray, g: np.ndarray, kernel, stride, padding, dilation, groups: int, transposed):
    """d(loss)/d(weight) of a strided 2-D convolution of ``x`` whose output gradient is ``g``: one
    GEMM per group over the windows of ``x`` (im2col). A transposed convolution's is the plain one's
    with the two roles swapped."""
    if transposed:
        x, g = g, x
    n, c, h, w = x.shape
    o, ho, wo = g.shape[1], g.shape[2], g.shape[3]
    kh, kw = kernel
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    cg, og = c // groups, o // groups
    if ph or pw:
        padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
        padded[:, :, ph : ph + h, pw : pw + w] = x
        x = padded
    s = x.strides
    windows = as_strided(
        x, (groups, cg, kh, kw, n, ho, wo), (cg * s[1], s[1], dh * s[2], dw * s[3], s[0], sh * s[2], sw * s[3])
    )
    columns = np.ascontiguousarray(windows).reshape(groups, cg * kh * kw, n * ho * wo)
    rows = np.ascontiguousarray(g.reshape(n, groups, og, ho * wo).transpose(1, 2, 0, 3)).reshape(groups, og, -1)
    return np.matmul(rows, columns.transpose(0, 2, 1)).reshape(o, cg, kh, kw)


def _unit_stride_grads(g: np.ndarray, x: np.ndarray, w: np.ndarray, padding, dilation, groups: int, mask, out) -> tuple:
    """The input and weight gradients (arrays, or None where ``mask`` leaves one out) of a plain
    stride-1 2-D convolution: by the direct kernels for float32 (the input's into ``out`` where it
    is given), else both from one scatter of ``g`` onto the input's padded grid."""
    if conv_direct.usable(g, x, w) and conv_direct.takes_input_grad(w.shape, padding, dilation):
        grad_input = conv_direct.input_grad(g, w, padding, dilation, groups, out) if mask[0] else None
        grad_weight = conv_direct.weight_grad(x, g, w.shape, padding, dilation, groups) if mask[1] else None
        return grad_input, grad_weight
    g_grid = conv_grid.output_grad_grid(g, x.shape, w, padding, dilation)
    grad_input = conv_grid.input_grad(g_grid, x.shape, w, padding, dilation, groups) if mask[0] else None
    grad_weight = conv_grid.weight_grad(x, g_grid, w.shape, padding, dilation, groups) if mask[1] else None
    return grad_input, grad_weight


def _strided_input_grad(grad_output: Tensor, input: Tensor, weight: Tensor, params: tuple, transposed, groups):
    """The input gradient as a convolution of ``grad_output`` (an array)."""
    stride, padding, dilation, _ = params
    k = weight.ndim - 2
    if transposed:
        full = _convolution_cpu(grad_output, weight, None, stride, padding, dilation, False, [0] * k, groups)
        # An output_padding at least the stride adds positions that no input position produced.
        return full._array[(slice(None), slice(None), *(slice(0, n) for n in input._shape[2:]))]
    reached = _reached(grad_output, weight, stride, padding, dilation)
    extra = [n - r for n, r in zip(input._shape[2:], reached, strict=True)]
    return _convolution_cpu(grad_output, weight, None, stride, padding, dilation, True, extra, groups)._array


@convolution_backward_op.register_kernel("cpu")
def _cpu(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    _check(grad_output, input, weight, transposed, groups)
    params = _params(weight, stride, padding, dilation, output_padding)
    grad_input, grad_weight, grad_bias = _outputs(grad_output, input, weight, output_mask)
    k = weight.ndim - 2
    x, g, w = compute_array(input), compute_array(grad_output), compute_array(weight)
    if k == 1:
        x, g, w = x[:, :, None, :], g[:, :, None, :], w[:, :, None, :]
    stride, padding, dilation = _as_2d(params[0], k, 1), _as_2d(params[1], k, 0), _as_2d(params[2], k, 1)
    input_array = weight_array = None
    if x.size == 0 or g.size == 0:  # nothing reaches the weight; the input gradient is a convolution
        weight_array = np.zeros(w.shape, w.dtype)
    elif stride == (1, 1) and not transposed:
        into = conv_direct.target(None if grad_input is None else grad_input._array, x.dtype, k == 1)
        input_array, weight_array = _unit_stride_grads(g, x, w, padding, dilation, groups, output_mask[:2], into)
    elif output_mask[1] and stride == (1, 1) and conv_direct.usable(g, x):  # transposed: the roles swap
        weight_array = conv_direct.weight_grad(g, x, w.shape, padding, dilation, groups)
    elif output_mask[1] and stride == (1, 1):  # transposed: the plain convolution of g into x's
        weight_array = conv_grid.weight_grad(
            g, conv_grid.output_grad_grid(x, g.shape, w, padding, dilation), w.shape, padding, dilation, groups
        )
    elif output_mask[1]:
        weight_array = _weight_grad_array(x, g, w.shape[2:], stride, padding, dilation, groups, transposed)
    token = silence()  # float32 beyond float16's range rounds to inf, as in PyTorch
    try:
        if grad_input is not None:
            if input_array is None:
                input_array = _strided_input_grad(grad_output, input, weight, params, transposed, groups)
            elif k == 1:
                input_array = input_array[:, :, 0, :]
            if not np.may_share_memory(input_array, grad_input._array):  # else written there in place
                np.copyto(grad_input._array, input_array, casting="unsafe")
        if grad_weight is not None:
            np.copyto(grad_weight._array, weight_array.reshape(weight._shape), casting="unsafe")
        if grad_bias is not None:
            np.copyto(grad_bias._array, channel_rows.sums(g), casting="unsafe")
    finally:
        restore(token)
    return grad_input, grad_weight, grad_bias


# -- the same formula in core ops, for autograd to record -------------------------------------------------


def _windows(input, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, count: tuple):
    """(N, C, *count, *kernel): the padded input's value under each tap of each of the first ``count``
    window positions (a view of the padded input)."""
    k = len(kernel)
    if any(padding):
        pad = []
        for p in reversed(padding):
            pad += [p, p]
        input = constant_pad_nd(input, pad, 0)
    for j in range(k):
        span = dilation[j] * (kernel[j] - 1) + 1
        input = input.unfold(2 + j, span, stride[j])
        if input.shape[2 + j] != count[j]:
            input = views.slice_(input, 2 + j, 0, count[j])
    for j in range(k):
        if dilation[j] != 1:
            input = views.slice_(input, 2 + k + j, 0, None, dilation[j])
    return input


def _weight_grad(input, grad, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, groups: int):
    k = len(kernel)
    n, c = input.shape[0], input.shape[1]
    o = grad.shape[1]
    count = tuple(grad.shape[2:])
    cg, og = c // groups, o // groups
    positions, taps = 1, 1
    for s in count:
        positions *= s
    for s in kernel:
        taps *= s
    windows = _windows(input, kernel, stride, padding, dilation, count).reshape(n, groups, cg, *count, *kernel)
    # (G, Cg, *kernel, N, *count): each row one (channel, tap), contiguous over batch and positions.
    order = (1, 2, *range(3 + k, 3 + 2 * k), 0, *range(3, 3 + k))
    columns = windows.permute(order).reshape(groups, cg * taps, n * positions)
    rows = grad.reshape(n, groups, og, positions).permute(1, 2, 0, 3).reshape(groups, og, n * positions)
    if groups == 1:
        product = rows[0].mm(columns[0].transpose(0, 1))
    else:
        product = rows.bmm(columns.transpose(1, 2))
    return product.reshape(o, cg, *kernel)


@convolution_backward_op.register_decomposition
def _decomposition(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    _check(grad_output, input, weight, transposed, groups)
    stride, padding, dilation, output_padding = _params(weight, stride, padding, dilation, output_padding)
    k = weight.ndim - 2
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if transposed:
            grad_input = convolution(grad_output, weight, None, stride, padding, dilation, False, [0] * k, groups)
            for j in range(k):
                if grad_input.shape[2 + j] != input.shape[2 + j]:
                    grad_input = views.slice_(grad_input, 2 + j, 0, input.shape[2 + j])
        else:
            reached = _reached(grad_output, weight, stride, padding, dilation)
            extra = [n - r for n, r in zip(input.shape[2:], reached, strict=True)]
            grad_input = convolution(grad_output, weight, None, stride, padding, dilation, True, extra, groups)
    if output_mask[1]:
        kernel = tuple(weight.shape[2:])
        if transposed:
            grad_weight = _weight_grad(grad_output, input, kernel, stride, padding, dilation, groups)
        else:
            grad_weight = _weight_grad(input, grad_output, kernel, stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = grad_output.sum([0, *range(2, grad_output.ndim)])
    return grad_input, grad_weight, grad_bias
