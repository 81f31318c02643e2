"""Derivative of ``convolution`` (``ember.core.aten.nn.convolution``): 1-D and 2-D, plain and
transposed, with any stride, padding, dilation and groups.

All three gradients come from one op, ``convolution_backward``, as in PyTorch: its CPU kernel works
on NumPy arrays, and its decomposition (the same formulas in core ops, see
``ember.core.aten.nn.convolution_backward``) is what gets recorded when the backward is itself
differentiated.
"""

from __future__ import annotations

from ember.autograd.registry import derivative, through_decomposition
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.convolution.default, save=("input", "weight"))
def _convolution(grad, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, needs, **_):
    mask = [bool(needs[0]), bool(needs[1]), bool(needs[2])]
    bias_sizes = [grad.shape[1]] if mask[2] else None
    return aten.convolution_backward.default(
        grad, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask
    )


# Double backward records the parts of its decomposition.
through_decomposition(aten.convolution_backward.default)
