"""The 1-D pools as the 2-D ones over a unit height: (N, C, L) becomes (N, C, 1, L) and back.

The window, stride, padding and dilation get a unit first entry, so every output element and every
max index (a flat index over 1 x L, that is, the position in L) is the 1-D pool's.
"""

from __future__ import annotations

from typing import Any

from ember.core.functional import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ember.core.tensor import Tensor


def _single(value: Any) -> int:
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise RuntimeError(f"expected a single int or a tuple of one int, but got {tuple(value)}")
        return int(value[0])
    return int(value)


def _check_input(name: str, input: Tensor) -> None:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor for input, but got {tuple(input.shape)}")


def max_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:  # fmt: skip
    _check_input("max_pool1d", input)
    k = _single(kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _single(stride)
    out = max_pool2d(
        input.unsqueeze(-2), (1, k), (1, s), (0, _single(padding)), (1, _single(dilation)), ceil_mode,
        return_indices=return_indices,
    )  # fmt: skip
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:  # fmt: skip
    _check_input("avg_pool1d", input)
    k = _single(kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _single(stride)
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _single(padding)), ceil_mode, count_include_pad).squeeze(
        -2
    )


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    _check_input("adaptive_avg_pool1d", input)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _single(output_size))).squeeze(-2)
