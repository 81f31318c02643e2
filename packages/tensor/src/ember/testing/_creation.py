"""``make_tensor``: a tensor of random values in ``[low, high)`` for tests, as ``torch.testing.make_tensor``.

Defaults: ``[-9, 10)`` for integers (clamped to the dtype, so ``[0, 10)`` for ``uint8``), ``[0, 2)``
for ``bool``, ``[-9, 9)`` for floating and complex dtypes (both parts of a complex value). Bounds
given outside the dtype's range are clamped to it; integer bounds are rounded up.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from ember.core import dtypes as D
from ember.core.dtype_info import finfo, iinfo

_INTEGRAL = {D.uint8, D.int8, D.int16, D.int32, D.int64}
_FLOATING_OR_COMPLEX = {D.float16, D.bfloat16, D.float32, D.float64, D.complex64, D.complex128}


def _bounds(low, high, dtype: D.dtype, lowest: float, highest: float, default_low: float, default_high: float):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING_OR_COMPLEX:
        warnings.warn(
            "Passing `low==high` to `ember.testing.make_tensor` for floating or complex types is deprecated; "
            "use `ember.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), "
            f"but {dtype} only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype not in _FLOATING_OR_COMPLEX:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape: int | Sequence[int],
    dtype: D.dtype,
    device: Any = None,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Example::

        >>> ember.testing.make_tensor((2, 3), dtype=ember.float32, low=-1, high=1).shape
        ember.Size([2, 3])
    """
    from ember.core.api import functions

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
            f"but got noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    if requires_grad and dtype not in _FLOATING_OR_COMPLEX:
        raise ValueError(
            f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}"
        )
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        # Twice the last size, so that the strided view skips values that differ from the kept ones.
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is D.bool_:
        low, high = _bounds(low, high, dtype, 0, 2, 0, 2)
        result = functions["randint"](low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = iinfo(dtype)
        # randint cannot draw int64's maximum, so its highest bound stays exclusive there.
        highest = info.max + (1 if dtype is not D.int64 else 0)
        low, high = _bounds(low, high, dtype, info.min, highest, -9, 10)
        result = functions["randint"](low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING_OR_COMPLEX:
        info = finfo(dtype)
        low, high = _bounds(low, high, dtype, info.min, info.max, -9, 9)
        result = functions["empty"](shape, device=device, dtype=dtype)
        target = result.view(dtype.to_real()) if dtype.is_complex else result  # both parts of each value
        if high - low >= info.max:  # the width itself would overflow: draw half of it and double
            target.uniform_(low / 2, high / 2).mul_(2)
        else:
            target.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by ember.testing.make_tensor().")

    if noncontiguous:
        result = result[..., 1::2]  # offset by one, to also catch offset mistakes
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype not in _FLOATING_OR_COMPLEX else finfo(dtype).tiny
    if dtype in _FLOATING_OR_COMPLEX and requires_grad:
        result.requires_grad_(True)
    return result
