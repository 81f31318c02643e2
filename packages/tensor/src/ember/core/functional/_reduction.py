"""PyTorch's ``reduction`` argument of the losses: the strings 'none', 'mean', 'sum' as the enum the
ops take (0, 1, 2), and the deprecated ``size_average``/``reduce`` pair translated with a warning."""

from __future__ import annotations

import warnings

__all__: list[str] = []

NONE, MEAN, SUM = 0, 1, 2


def get_enum(reduction: str) -> int:
    if reduction == "none":
        return NONE
    if reduction == "mean":
        return MEAN
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.", stacklevel=3)
        return MEAN
    if reduction == "sum":
        return SUM
    raise ValueError(f"{reduction} is not a valid value for reduction")


def legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(
            f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.", stacklevel=3
        )
    return result


def resolve(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce)
    return reduction
