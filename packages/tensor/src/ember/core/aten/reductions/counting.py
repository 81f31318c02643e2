"""Counting into bins: ``bincount`` and ``histc``.

``bincount``'s length is the largest value plus one (at least ``minlength``), so it depends on the
data: its meta kernel raises, as ``nonzero``'s does, and it is tagged ``data_dependent_output``.
``histc`` always has ``bins`` entries, so its meta kernel answers from metadata; with ``min ==
max`` (the default) the range is read from the values, the smallest and largest element. Both
count on NumPy, each element's bin computed in the input's dtype as PyTorch's kernel does, so
values on a bin's edge fall where PyTorch puts them.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor, empty, from_array

bincount = define(
    "bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor", ("data_dependent_output",)
)
histc = define("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor")
histc_out = define(
    "histc.out(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, Tensor(a!) out) -> Tensor(a!)", ("out",)
)

_INTEGRAL = (D.uint8, D.int8, D.int16, D.int32, D.int64)


def _check_bincount(self: Tensor, weights: Tensor | None, minlength) -> D.dtype:
    if self.dtype not in _INTEGRAL:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{type_name(self.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if self.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights._shape[0] != self._shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        return D.int64
    return D.float32 if weights.dtype is D.float32 else D.float64


@bincount.register_meta
def _bincount_meta(self: Tensor, weights: Tensor | None = None, minlength=0) -> Tensor:
    _check_bincount(self, weights, minlength)
    raise NotImplementedError(
        "aten::bincount has a data-dependent output shape: a meta tensor has no data to compute it from"
    )


@bincount.register_kernel("cpu")
def _bincount_cpu(self: Tensor, weights: Tensor | None = None, minlength=0) -> Tensor:
    dtype = _check_bincount(self, weights, minlength)
    data = self._array
    if data.size and data.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else weights._array.astype(dtype.np)
    counts = np.bincount(data.astype(np.int64), weights=w, minlength=int(minlength))
    return from_array(np.ascontiguousarray(counts.astype(dtype.np)), dtype)


def _check_histc(self: Tensor, bins: int, low, high) -> None:
    if self.dtype not in (D.float32, D.float64, D.float16, D.bfloat16):
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{type_name(self.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")


@histc.register_meta
def _histc_meta(self: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    _check_histc(self, bins, min, max)
    return empty((bins,), self.dtype, self.device)


def _fmt(x: float) -> str:
    if np.isnan(x):
        return "-nan" if np.signbit(x) else "nan"
    return f"{x:g}"


def histogram_range(data: np.ndarray, low, high) -> tuple[float, float]:
    """PyTorch's range: the given one, or the data's extremes where ``min == max`` (widened by one
    on each side when those are equal too)."""
    low, high = float(low), float(high)
    if low == high and data.size:
        low, high = float(data.min()), float(data.max())
        if np.isnan(data).any():
            low = high = float(np.nan)
    if low == high:
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(low)}, {_fmt(high)}] is not finite")
    return low, high


@histc.register_kernel("cpu")
def _histc_cpu(self: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    _check_histc(self, bins, min, max)
    compute = np.dtype(self.dtype.np).type  # every step rounds in the input dtype, 16-bit floats included
    data = self._array.astype(compute).reshape(-1)
    low, high = histogram_range(data, min, max)
    inside = data[(data >= low) & (data <= high)]
    # Each element's bin in the compute dtype: (x - low) * bins / (high - low), the top edge in the last bin.
    position = (inside - compute(low)) * compute(bins) / (compute(high) - compute(low))
    index = np.minimum(position.astype(np.int64), bins - 1)
    counts = np.bincount(index, minlength=bins).astype(self.dtype.np)
    return from_array(np.ascontiguousarray(counts), self.dtype)


@histc_out.register_meta
def _histc_out_meta(self: Tensor, bins: int = 100, min=0, max=0, *, out: Tensor) -> Tensor:
    from ember.core.reduction import fit_out

    return fit_out(out, _histc_meta(self, bins, min, max))


@histc_out.register_kernel("cpu")
def _histc_out_cpu(self: Tensor, bins: int = 100, min=0, max=0, *, out: Tensor) -> Tensor:
    from ember.core.reduction import check_out_dtype, write_out

    result = _histc_cpu(self, bins, min, max)
    check_out_dtype(out, result.dtype)
    return write_out(out, result)


@public("bincount")
def _bincount_function(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    return bincount(input, weights, minlength)


method("bincount")(_bincount_function)


@public("histc")
def _histc_function(input: Tensor, bins: int = 100, min=0, max=0, *, out: Tensor | None = None) -> Tensor:
    return histc(input, bins, min, max) if out is None else histc_out(input, bins, min, max, out=out)


@method("histc")
def _histc_method(self: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    return histc(self, bins, min, max)
