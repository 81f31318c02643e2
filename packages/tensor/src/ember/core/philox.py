"""Philox 4x32-10, the counter-based random stream every Ember random op draws from.

A counter-based generator maps (key, counter) to random bits with no hidden state, so any element of
a stream can be computed on its own: a CPU loop, a C++ kernel and a Triton kernel that agree on the
counter of each element produce the same numbers. The definitions here are the ones Triton's
``tl.randint4x``/``tl.rand``/``tl.randn`` use, bit for bit, so a Triton kernel given the same
``(seed, offset)`` reproduces them:

- key = (seed & 0xFFFFFFFF, seed >> 32); counter = (offset & 0xFFFFFFFF, offset >> 32, 0, 0);
- 10 rounds of Salmon et al.'s Philox round (SC'11), key bumped by the Weyl constants each round;
- ``rand``: the first output word read as int32, negative values bit-flipped, times 4.6566127342e-10
  (so the result is in [0, 1) as float32);
- ``randn``: Box-Muller on the first two words (u1 clamped to 1e-7), the cosine branch.

All functions take NumPy arrays of offsets (any shape, int64 or uint64). ``randint4x`` runs the
compiled kernel ``ember.core._philox`` (built at install, GIL released, long draws split over
Ember's CPU threads) when it is there, else the vectorized NumPy rounds below (64-bit products give
the high halves), which stay as the reference and the fallback; ``EMBER_PHILOX_NUMPY=1`` forces
them. Both give the same bits.
"""

from __future__ import annotations

import os

import numpy as np

from ember.core import threads

try:
    from ember.core import _philox as _compiled
except ImportError:  # built without a compiler: the NumPy rounds give the same bits
    _compiled = None
if os.environ.get("EMBER_PHILOX_NUMPY", "") not in ("", "0"):
    _compiled = None

_KEY_A = np.uint64(0x9E3779B9)
_KEY_B = np.uint64(0xBB67AE85)
_ROUND_A = np.uint64(0xD2511F53)
_ROUND_B = np.uint64(0xCD9E8D57)
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
ROUNDS = 10


def _split_seed(seed: int) -> tuple[np.uint64, np.uint64]:
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    return np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)


def philox4x32(
    seed: int, c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray, rounds: int = ROUNDS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four uint32 output words for counters ``(c0, c1, c2, c3)`` under key ``seed``."""
    return tuple(c.astype(np.uint32) for c in _rounds(seed, c0, c1, c2, c3, rounds))


def _rounds(seed: int, c0, c1, c2, c3, rounds: int = ROUNDS) -> tuple:
    """Philox's rounds on uint64 arrays holding 32-bit words; returns the four words as uint64."""
    k0, k1 = _split_seed(seed)
    counters = [np.asarray(c, dtype=np.uint64) & _LOW for c in (c0, c1, c2, c3)]  # fresh arrays, changed below
    shape = np.broadcast_shapes(*(c.shape for c in counters))
    c0, c1, c2, c3 = (c if c.shape == shape else np.broadcast_to(c, shape).copy() for c in counters)
    p0, p2 = np.empty(shape, np.uint64), np.empty(shape, np.uint64)
    # In place, with no temporaries: a round is ten ufunc calls over preallocated arrays.
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            np.multiply(c0, _ROUND_A, out=p0)
            np.multiply(c2, _ROUND_B, out=p2)
            np.right_shift(p2, _SHIFT, out=c0)
            c0 ^= c1
            c0 ^= k0
            np.bitwise_and(p2, _LOW, out=c1)
            np.right_shift(p0, _SHIFT, out=c2)
            c2 ^= c3
            c2 ^= k1
            np.bitwise_and(p0, _LOW, out=c3)
            k0 = (k0 + _KEY_A) & _LOW
            k1 = (k1 + _KEY_B) & _LOW
    return c0, c1, c2, c3


_BLOCK = 1 << 15  # counters per block: a block's working arrays stay in the CPU's cache


_PARALLEL = 1 << 16  # counters: a shorter draw runs in the calling thread (a handoff costs tens of us)


def _in_parts(n: int, draw) -> None:
    """``draw(start, stop)`` over ``range(n)`` in one contiguous piece per thread (each counter's bits
    are its own, so the pieces give the same bits as one pass)."""
    parts = threads.get_num_threads() if n > _PARALLEL else 1
    if parts == 1:
        draw(0, n)
    else:
        threads.run_parts(parts, lambda i: draw(n * i // parts, n * (i + 1) // parts))


def randint4x(seed: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four uint32 words per offset, as Triton's ``tl.randint4x(seed, offsets)`` with int64 offsets."""
    offsets = np.asarray(offsets).astype(np.uint64, copy=False)
    if _compiled is not None:
        flat = np.ascontiguousarray(offsets).reshape(-1)
        words = tuple(np.empty(flat.shape, np.uint32) for _ in range(4))
        key = int(seed) & 0xFFFFFFFFFFFFFFFF
        _in_parts(flat.size, lambda a, b: _compiled.randint4x(key, flat[a:b], *(w[a:b] for w in words)))
        return tuple(w.reshape(offsets.shape) for w in words)
    return _randint4x_numpy(seed, offsets)


def _randint4x_numpy(seed: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``randint4x`` by NumPy rounds over cache-sized blocks; ``offsets`` is a uint64 array."""
    flat = offsets.reshape(-1)
    words = tuple(np.empty(flat.shape, np.uint32) for _ in range(4))
    zero = np.zeros(min(flat.size, _BLOCK), np.uint64)
    for start in range(0, flat.size, _BLOCK):
        part = flat[start : start + _BLOCK]
        block = _rounds(seed, part, part >> _SHIFT, zero[: part.size], zero[: part.size])
        for out, w in zip(words, block, strict=True):
            out[start : start + part.size] = w
    return tuple(w.reshape(offsets.shape) for w in words)


def uint_to_uniform(words: np.ndarray) -> np.ndarray:
    """uint32 words to float32 in [0, 1), exactly as Triton's ``uint_to_uniform_float``."""
    x = words.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    """Uniform float32 in [0, 1) per offset; equals Triton's ``tl.rand(seed, offsets)``."""
    return uint_to_uniform(randint4x(seed, offsets)[0])


def rand_range(seed: int, offset: int, n: int) -> np.ndarray:
    """``rand`` for the ``n`` counters ``offset, offset + 1, ...`` (mod 2**64), fused into one compiled pass."""
    if _compiled is None:
        return rand(seed, np.uint64(int(offset) & 0xFFFFFFFFFFFFFFFF) + np.arange(n, dtype=np.uint64))
    out = np.empty(n, np.float32)
    key, first = int(seed) & 0xFFFFFFFFFFFFFFFF, int(offset)
    _in_parts(n, lambda a, b: _compiled.rand_range(key, (first + a) & 0xFFFFFFFFFFFFFFFF, out[a:b]))
    return out


def randn(seed: int, offsets: np.ndarray) -> np.ndarray:
    """Standard normal float32 per offset; equals Triton's ``tl.randn(seed, offsets)``."""
    w0, w1, _, _ = randint4x(seed, offsets)
    u1 = np.maximum(np.float32(1.0e-7), uint_to_uniform(w0))
    theta = np.float32(6.283185307179586) * uint_to_uniform(w1)
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    return (radius * np.cos(theta)).astype(np.float32)
