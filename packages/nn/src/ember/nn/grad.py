"""``nn.grad``: the gradients of the convolutions with respect to their input or weight, given the
gradient of their output (what ``torch.nn.grad.conv2d_input`` and friends compute).

A convolution is linear in its input and in its weight, so each is the vector-Jacobian product of
the convolution at zeros of the given size, taken by autograd."""

from __future__ import annotations

from typing import Any

from ember.autograd import enable_grad
from ember.autograd import grad as _grad
from ember.core.aten.factories.factories import zeros_function
from ember.core.tensor import Tensor
from ember.nn import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]

_CONVS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _input_grad(k: int, input_size, weight: Tensor, grad_output: Tensor, stride, padding, dilation, groups) -> Tensor:
    with enable_grad():
        x = zeros_function(*input_size, dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
        out = _CONVS[k](x, weight.detach(), None, stride, padding, dilation, groups)
        return _grad(out, x, grad_output)[0]


def _weight_grad(k: int, input: Tensor, weight_size, grad_output: Tensor, stride, padding, dilation, groups) -> Tensor:
    with enable_grad():
        w = zeros_function(*weight_size, dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
        out = _CONVS[k](input.detach(), w, None, stride, padding, dilation, groups)
        return _grad(out, w, grad_output)[0]


def conv1d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
