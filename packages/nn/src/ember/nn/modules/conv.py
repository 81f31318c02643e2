"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` over ``ember.nn.functional``'s convolutions.

A non-zero ``padding_mode`` pads the input with ``F.pad`` first and convolves without padding, as
PyTorch does; ``padding='same'`` splits the total padding with the extra element on the right.
"""

from __future__ import annotations

import math
from typing import Any

from ember.autograd import no_grad
from ember.core.aten.factories.factories import empty_function
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value: Any, n: int) -> tuple:
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    _dims = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        transposed: bool,
        output_padding: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _ntuple(kernel_size, n), _ntuple(stride, n), _ntuple(dilation, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            pads: list[int] = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1), strict=True):
                    total = d * (k - 1)
                    left = total // 2
                    pads[2 * i] = left
                    pads[2 * i + 1] = total - left
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty_function(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty_function(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._dims
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv(self, input: Tensor, weight: Tensor, bias: Tensor | None, op) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return op(padded, weight, bias, self.stride, (0,) * self._dims, self.dilation, self.groups)
        return op(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class _PlainConvNd(_ConvNd):
    """Conv1d and Conv2d: the same constructor, and ``forward`` through ``_functional``."""

    _functional = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias, padding_mode,
            device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, self.weight, self.bias, type(self)._functional)


class Conv1d(_PlainConvNd):
    _dims = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_PlainConvNd):
    _dims = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_PlainConvNd):
    _dims = 3
    _functional = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions: ``forward(input, output_size=None)`` picks the output padding
    that gives ``output_size``."""

    _functional = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:
        if output_size is None:
            return self.output_padding
        n = self._dims
        non_spatial = 2 if input.dim() == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or {non_spatial + n} "
                f"elements (got {len(output_size)})"
            )
        low, high = [], []
        for d in range(n):
            size = (
                (input.size(d + non_spatial) - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            low.append(size)
            high.append(size + self.stride[d] - 1)
        for d in range(n):
            if not low[d] <= output_size[d] <= high[d]:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {low} to {high} "
                    f"(for an input of {input.size()[2:]})"
                )
        return tuple(output_size[d] - low[d] for d in range(n))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return type(self)._functional(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


class ConvTranspose1d(_ConvTransposeNd):
    _dims = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    _dims = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    _dims = 3
    _functional = staticmethod(F.conv_transpose3d)


class _LazyConvXdMixin(LazyModuleMixin):
    """The lazy convolutions: ``in_channels`` is read from the first input."""

    def _lazy_parameters(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        n = self._dims
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(
                f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {self._get_name()}, but got input of "
                f"size: {list(input.shape)}"
            )
        self.in_channels = input.shape[1] if input.dim() == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class _LazyPlainConv(_LazyConvXdMixin):
    def __init__(
        self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
        groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyTransposedConv(_LazyConvXdMixin):
    def __init__(
        self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
        groups: int = 1, bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros", device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self._lazy_parameters(out_channels, bias, device, dtype)


class LazyConv1d(_LazyPlainConv, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyPlainConv, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyPlainConv, Conv3d):
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyTransposedConv, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyTransposedConv, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyTransposedConv, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
