"""From Philox words to the numbers each sampler needs, and how many counters each uses.

Element ``i`` of a result (in row-major order of its shape, whatever its strides) takes counter
``offset + i``, whose four 32-bit words ``w0..w3`` are ``philox.randint4x(seed, offset + i)``. So an
op on ``n`` elements uses the counters ``[offset, offset + n)`` and moves the generator's offset by
``n``; complex results count their real and imaginary parts as two elements. Per element:

- uniform float32: ``tl.rand`` (``w0``), clamped to just below 1 (Triton's int-to-float conversion
  rounds its top 64 of 2**31 values up to 1.0; ``rand`` never returns 1); float16 and bfloat16 round
  that down to their own precision (11 and 8 bits), so they stay below 1 too; float64 uses 53 bits,
  the top 27 of ``w0`` and the top 26 of ``w1``: ``((w0 >> 5) * 2**26 + (w1 >> 6)) * 2**-53``.
- normal float32 (and the half types, rounded from it): ``tl.randn`` (Box-Muller on ``w0``, ``w1``);
  float64: Box-Muller on two 53-bit uniforms, ``u1`` from ``w0, w1`` (taken as ``1 - u``, in (0, 1])
  and ``u2`` from ``w2, w3``: ``sqrt(-2 log u1) * cos(2 pi u2)``.
- integers in ``[low, high)``: ``w0 % range`` for a range up to 2**32, else the 64-bit word
  ``w0 + 2**32 * w1`` modulo the range (PyTorch's choice too; the bias is below 2**-32).
- 64-bit keys (``randperm``'s sort keys): ``w0 + 2**32 * w1``.

A Triton kernel reproduces any of these from ``tl.randint4x(seed, offset + i)`` (or ``tl.rand``/
``tl.randn`` for float32) with the same arithmetic.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import philox

_BELOW_ONE = np.float32(1.0 - 2.0**-24)
_HALF_BITS = {D.float16: 11, D.bfloat16: 8}
_MASK64 = (1 << 64) - 1


def counters(offset: int, n: int) -> np.ndarray:
    return (np.uint64(offset) + np.arange(n, dtype=np.uint64)).astype(np.uint64)


def _unit53(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    return ((high >> np.uint32(5)).astype(np.float64) * 67108864.0 + (low >> np.uint32(6)).astype(np.float64)) * (
        2.0**-53
    )


def uniform(seed: int, offset: int, n: int, dtype: D.dtype) -> np.ndarray:
    """``n`` uniform numbers in [0, 1): float64 for float64, else float32 already rounded to ``dtype``."""
    if dtype is D.float64:
        w0, w1, _, _ = philox.randint4x(seed, counters(offset, n))
        return _unit53(w0, w1)
    u = np.minimum(philox.rand_range(seed, offset, n), _BELOW_ONE)
    bits = _HALF_BITS.get(dtype)
    if bits is not None:
        scale = np.float32(2.0**bits)
        u = np.floor(u * scale) / scale
    return u


def normal(seed: int, offset: int, n: int, dtype: D.dtype) -> np.ndarray:
    """``n`` standard normal numbers: float64 for float64, else float32."""
    if dtype is D.float64:
        w0, w1, w2, w3 = philox.randint4x(seed, counters(offset, n))
        u1 = 1.0 - _unit53(w0, w1)
        u2 = _unit53(w2, w3)
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return philox.randn(seed, counters(offset, n))


def keys64(seed: int, offset: int, n: int) -> np.ndarray:
    w0, w1, _, _ = philox.randint4x(seed, counters(offset, n))
    return w0.astype(np.uint64) | (w1.astype(np.uint64) << np.uint64(32))


def integers(seed: int, offset: int, n: int, low: int, high: int) -> np.ndarray:
    """``n`` integers uniform in ``[low, high)`` (``low < high``, both within int64/uint64), as int64
    values wrapped to 64 bits (so a uint64 range above 2**63 comes back through a view)."""
    span = high - low
    if span <= 1 << 32:
        w0 = philox.randint4x(seed, counters(offset, n))[0]
        drawn = w0.astype(np.uint64) % np.uint64(span)
    else:
        drawn = keys64(seed, offset, n) % np.uint64(span)
    with np.errstate(over="ignore"):
        return (drawn + np.uint64(low & _MASK64)).view(np.int64)
