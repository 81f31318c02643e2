"""Laying out convolution weights in a memory format (``nn.utils.convert_conv2d_weight_memory_format``).

A convolution runs channels-last when its input or its weight is (the core's convolution picks the
layout from its operands), so converting the weights once makes a whole network run channels-last.
"""

from __future__ import annotations

from typing import Any

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Any, memory_format: Any, kinds: tuple) -> Any:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """Lay out the weight of every ``Conv2d``/``ConvTranspose2d`` in ``module`` (itself included) in
    ``memory_format``, in place; returns ``module``."""
    from ember.nn import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """The same for ``Conv3d``/``ConvTranspose3d`` (``channels_last_3d``)."""
    from ember.nn import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
