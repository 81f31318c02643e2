"""Choosing between two arrays element by element through their bits, where ``np.where`` is slow.

``np.where`` branches on each element of its condition: on a condition that flips at random (a
ReLU's mask, where half the inputs are below zero) the mispredicted branches make it ten times
slower than an arithmetic ufunc over the same data. Viewing both operands as unsigned integers of
their width and the condition as all-ones or all-zeros words turns the choice into ``b ^ ((a ^ b) &
mask)``: three branch-free passes, and exact, since every element of the result is the unchanged
bits of one operand (nan payloads and signed zeros included). A zero operand (the common case:
ReLU, its gradient, masked fills with 0) needs one pass fewer.

Small arrays keep ``np.where``: one call costs less than the extra passes.
"""

from __future__ import annotations

import numpy as np

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MIN_SIZE = 4096


def _bits(value: np.ndarray | np.generic, unsigned) -> np.ndarray:
    return np.asarray(value).view(unsigned)


def _is_zero_bits(value, unsigned) -> bool:
    """A scalar whose bits are all zero (``0``, ``+0.0``, ``False``; not ``-0.0``)."""
    return np.ndim(value) == 0 and not _bits(value, unsigned).item()


def select(condition: np.ndarray, a, b) -> np.ndarray:
    """``np.where(condition, a, b)`` for a bool ``condition`` and operands of one dtype (arrays or
    NumPy scalars), broadcast together."""
    dtype = np.result_type(a)
    unsigned = _UNSIGNED.get(dtype.itemsize)
    if (
        unsigned is None
        or dtype.kind not in "biufc"
        or np.result_type(b) != dtype
        or max(np.size(condition), np.size(a), np.size(b)) < _MIN_SIZE
    ):
        return np.where(condition, a, b)
    flags = np.asarray(condition).view(np.uint8)  # 1 where a is chosen, 0 where b is
    if _is_zero_bits(b, unsigned):
        return np.bitwise_and(_bits(a, unsigned), np.negative(flags, dtype=unsigned)).view(dtype)
    if _is_zero_bits(a, unsigned):
        # flags - 1 is all ones where b is chosen.
        return np.bitwise_and(_bits(b, unsigned), np.subtract(flags, 1, dtype=unsigned)).view(dtype)
    a_bits, b_bits = _bits(a, unsigned), _bits(b, unsigned)
    # ``chosen`` has the full broadcast shape, so xor-ing b back in place is safe.
    chosen = np.bitwise_and(np.bitwise_xor(a_bits, b_bits), np.negative(flags, dtype=unsigned))
    return np.bitwise_xor(chosen, b_bits, out=chosen).view(dtype)


def copy_where(out: np.ndarray, value, condition: np.ndarray) -> None:
    """``np.copyto(out, value, where=condition)`` for a bool ``condition`` and a ``value`` (array or
    NumPy scalar) of ``out``'s dtype, which must be writable and of the full broadcast shape."""
    unsigned = _UNSIGNED.get(out.dtype.itemsize)
    if unsigned is None or out.dtype.kind not in "biufc" or out.size < _MIN_SIZE:
        np.copyto(out, value, where=condition)
        return
    bits = out.view(unsigned)
    change = np.bitwise_xor(_bits(value, unsigned), bits)
    change &= np.negative(np.asarray(condition).view(np.uint8), dtype=unsigned)
    bits ^= change
