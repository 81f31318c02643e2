"""The multi-tensor steps' grouping: parameters and their state split by (device, dtype).

PyTorch's ``foreach=True`` path runs each update stage over a whole group of tensors before the
next stage (``_foreach_mul_``, ``_foreach_addcmul_``, ...), which on a GPU is one fused launch per
stage. The core has no multi-tensor kernels, so a stage here is a loop of the per-tensor op; the
order of operations, and so every rounding, is the one PyTorch's multi-tensor path uses, which is
what makes ``foreach=True`` give PyTorch's ``foreach=True`` numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def group_by_device_and_dtype(*lists: Sequence[Any]) -> list[tuple[list[Any], ...]]:
    """Split parallel lists (params first) into groups whose params share device and dtype, order kept."""
    groups: dict[tuple, tuple[list[Any], ...]] = {}
    for i, param in enumerate(lists[0]):
        key = (str(param.device), param.dtype)
        if key not in groups:
            groups[key] = tuple([] for _ in lists)
        for out, values in zip(groups[key], lists, strict=True):
            out.append(values[i])
    return list(groups.values())
