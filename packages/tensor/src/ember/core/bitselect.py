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
_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_MIN_SIZE = 4096


def _bits(value: np.ndarray | np.generic, unsigned) -> np.ndarray:
    return np.asarray(value).view(unsigned)


def _is_zero_bits(value, unsigned) -> bool:
    """A scalar whose bits are all zero (``0``, ``+0.0``, ``False``; not ``-0.0``)."""
    return np.ndim(value) == 0 and not _bits(value, unsigned).item()


def _words(flags: np.ndarray, unsigned, chosen: bool) -> np.ndarray:
    """All-ones words where ``flags`` (0 or 1 bytes) is ``chosen``, zero words elsewhere, of the
    width of ``unsigned``. The bytes become 0 or -1 first and widen by sign extension: a cast
    NumPy does faster than a negation that widens."""
    small = np.negative(flags) if chosen else np.subtract(flags, 1, dtype=np.uint8)
    if unsigned is np.uint8:
        return small
    return small.view(np.int8).astype(_SIGNED[np.dtype(unsigned).itemsize]).view(unsigned)


def _masked(value, words: np.ndarray, unsigned) -> np.ndarray:
    """``value``'s bits and ``words``, written over ``words`` (a temporary) where it has the result's shape."""
    bits = _bits(value, unsigned)
    fits = np.broadcast_shapes(words.shape, bits.shape) == words.shape
    return np.bitwise_and(bits, words, out=words if fits else None)


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
        return _masked(a, _words(flags, unsigned, True), unsigned).view(dtype)
    if _is_zero_bits(a, unsigned):
        return _masked(b, _words(flags, unsigned, False), unsigned).view(dtype)
    a_bits, b_bits = _bits(a, unsigned), _bits(b, unsigned)
    # ``chosen`` has the full broadcast shape, so xor-ing b back in place is safe.
    chosen = np.bitwise_and(np.bitwise_xor(a_bits, b_bits), _words(flags, unsigned, True))
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
    change &= _words(np.asarray(condition).view(np.uint8), unsigned, True)
    bits ^= change
