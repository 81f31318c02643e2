"""``ember.finfo`` and ``ember.iinfo``: the numeric limits of a dtype, with PyTorch's fields.

The numbers come from NumPy (``ml_dtypes`` for bfloat16) and are returned as Python numbers; the
``dtype`` field is the dtype's name, as in PyTorch. A complex dtype reports its real component's
limits.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dtypes_extra import float4_e2m1fn_x2, float8_e5m2fnuz
from ember.core.promotion import get_default_dtype


class finfo:
    """Limits of a floating-point (or complex) dtype; ``finfo()`` describes the default dtype."""

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: D.dtype | None = None) -> None:
        d = get_default_dtype() if type is None else type
        if not isinstance(d, D.dtype) or d.category not in (D.FLOATING, D.COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type, got {d!r}")
        real = d.to_real()
        if real is float4_e2m1fn_x2:  # two numbers per element: PyTorch has no limits for it
            raise TypeError("bad argument type for built-in operation")
        info = np.finfo(real.np) if real in (D.float16, D.float32, D.float64) else ml_dtypes.finfo(real.np)
        self.bits = real.itemsize * 8
        # PyTorch's epsilon of float8_e5m2fnuz is 2**-3, where the format's spacing at 1 is 2**-2.
        self.eps = 0.125 if real is float8_e5m2fnuz else float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # The decimal digits the mantissa holds, as a power of ten (not the float rounding of one).
        self.resolution = 10.0 ** -math.floor(int(info.nmant) * math.log10(2))
        self.dtype = real.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:
    """Limits of an integer dtype."""

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: D.dtype) -> None:
        if not isinstance(type, D.dtype) or type.category != D.INTEGRAL:
            raise TypeError(f"torch.iinfo() requires an integer input type, got {type!r}")
        info = np.iinfo(type.np)
        self.bits = type.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


public("finfo")(finfo)
public("iinfo")(iinfo)
