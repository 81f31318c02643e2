"""``torch.nn.functional``'s convolutions and padding: the same functions as ``ember.conv2d`` etc."""

from __future__ import annotations

from ember.core.aten.nn.convolution import conv1d, conv2d, conv_transpose2d
from ember.core.aten.nn.padding import pad_op
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "pad"]


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    pad = list(pad)
    for i, p in enumerate(pad):
        if not isinstance(p, INT_LIKE) or isinstance(p, bool):
            raise TypeError(
                f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                f"{type(p).__name__} at pos {i}"
            )
    return pad_op(input, pad, mode, value)
