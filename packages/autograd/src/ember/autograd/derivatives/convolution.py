"""Derivative of ``convolution`` (``ember.core.families.convolution``): 1-D and 2-D, plain and
transposed, with any stride, padding, dilation and groups.

The input's gradient is itself a convolution: a plain convolution's input gradient is the transposed
convolution of ``grad`` by the same weight (its ``output_padding`` restores the rows that the last
stride step skipped), and a transposed convolution's is the plain one. The weight's gradient is one
GEMM per group over the unfolded input (im2col): the padded input's windows are taken with
``unfold`` (a view), laid out once as (group, Cg*taps, N*positions), and multiplied by ``grad``
laid out as (group, Og, N*positions). A transposed convolution relates ``grad`` to its input as a
plain convolution relates the input to its output, so its weight gradient is the same GEMM with the
two roles swapped. Everything is written with core ops, so the formulas differentiate again.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


def _per_dim(value, k: int) -> tuple:
    values = tuple(value)
    return values * k if len(values) == 1 else values


def _windows(input, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, count: tuple):
    """(N, C, *count, *kernel): the padded input's value under each tap of each of the first ``count``
    window positions (a view of the padded input)."""
    k = len(kernel)
    if any(padding):
        pad = []
        for p in reversed(padding):
            pad += [p, p]
        input = aten.constant_pad_nd.default(input, pad, 0)
    for j in range(k):
        span = dilation[j] * (kernel[j] - 1) + 1
        input = input.unfold(2 + j, span, stride[j])
        if input.shape[2 + j] != count[j]:
            input = aten.slice.Tensor(input, 2 + j, 0, count[j])
    for j in range(k):
        if dilation[j] != 1:
            input = aten.slice.Tensor(input, 2 + k + j, 0, None, dilation[j])
    return input


def _weight_grad(input, grad, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, groups: int):
    """d(loss)/d(weight) of the plain convolution of ``input`` whose output gradient is ``grad``:
    shape (grad channels, input channels / groups, *kernel)."""
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


def _input_grad(grad, weight, input_shape, stride, padding, dilation, transposed, groups):
    k = weight.ndim - 2
    spatial = tuple(input_shape[2:])
    if not transposed:
        kernel = tuple(weight.shape[2:])
        reached = [
            (g - 1) * s - 2 * p + d * (kk - 1) + 1
            for g, s, p, d, kk in zip(grad.shape[2:], stride, padding, dilation, kernel, strict=True)
        ]
        extra = [n - r for n, r in zip(spatial, reached, strict=True)]
        return aten.convolution.default(grad, weight, None, stride, padding, dilation, True, extra, groups)
    out = aten.convolution.default(grad, weight, None, stride, padding, dilation, False, [0] * k, groups)
    for j in range(k):
        # An output_padding at least the stride (allowed where below the dilation) adds positions that
        # no input position produced: the plain convolution sees them as extra windows.
        if out.shape[2 + j] != spatial[j]:
            out = aten.slice.Tensor(out, 2 + j, 0, spatial[j])
    return out


@derivative(aten.convolution.default, save=("input", "weight"))
def _convolution(grad, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, needs, **_):
    k = weight.ndim - 2
    stride, padding, dilation = _per_dim(stride, k), _per_dim(padding, k), _per_dim(dilation, k)
    g_input = g_weight = g_bias = None
    if needs[0]:
        g_input = _input_grad(grad, weight, input.shape, stride, padding, dilation, transposed, groups)
    if needs[1]:
        kernel = tuple(weight.shape[2:])
        if transposed:
            g_weight = _weight_grad(grad, input, kernel, stride, padding, dilation, groups)
        else:
            g_weight = _weight_grad(input, grad, kernel, stride, padding, dilation, groups)
    if needs[2]:
        g_bias = grad.sum([0, *range(2, grad.ndim)])
    return g_input, g_weight, g_bias
