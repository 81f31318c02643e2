"""The Sobol' direction numbers of Joe and Kuo (``new-joe-kuo-6.21201``), read from the package data.

``sobol_directions.bin`` holds, for each dimension after the first, its primitive polynomial and its
initial direction integers ``m_1 .. m_s`` (the format is described in
``tools/make_sobol_directions.py``, which writes it). ``initial_state(dimension)`` runs the
recurrence of Bratley and Fox to give every dimension its ``MAXBIT`` direction numbers, each
shifted into the top bits of a ``MAXBIT``-bit integer, as PyTorch's ``sobolstate`` holds them.
"""

from __future__ import annotations

import functools
import zlib
from importlib import resources

import numpy as np

MAXBIT = 30
MAXDIM = 21201
_MAGIC = b"SOBOLJK1"


@functools.cache
def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(polynomials, degrees, bit stream) of dimensions 1 .. MAXDIM - 1; read once per process."""
    raw = zlib.decompress(resources.files("ember.quasirandom").joinpath("sobol_directions.bin").read_bytes())
    if not raw.startswith(_MAGIC):
        raise RuntimeError("ember.quasirandom: sobol_directions.bin is not a direction-number table")
    count = int(np.frombuffer(raw, dtype="<u4", count=1, offset=len(_MAGIC))[0])
    start = len(_MAGIC) + 4
    polys = np.frombuffer(raw, dtype="<u4", count=count - 1, offset=start).astype(np.int64)
    stream = np.unpackbits(np.frombuffer(raw, dtype=np.uint8, offset=start + 4 * (count - 1)))
    degrees = np.array([int(p).bit_length() - 1 for p in polys], dtype=np.int64)
    return polys, degrees, stream


def initial_state(dimension: int) -> np.ndarray:
    """The ``(dimension, MAXBIT)`` int64 direction numbers, column ``j`` shifted left by ``MAXBIT - 1 - j``."""
    polys, degrees, stream = _table()
    m = np.ones((dimension, MAXBIT), dtype=np.int64)  # the first dimension: every m_k is 1
    # Dimensions come in order of degree, so each degree is one contiguous run of rows, each row
    # taking s * (s - 1) / 2 bits of the stream: decode and recur a whole run at once.
    position, first = 0, 0
    while first < dimension - 1:
        s = int(degrees[first])
        last = min(int(np.searchsorted(degrees, s, side="right")), dimension - 1)
        count, row_bits = last - first, s * (s - 1) // 2
        bits = stream[position : position + count * row_bits].reshape(count, row_bits).astype(np.int64)
        rows = m[first + 1 : last + 1]
        offset = 0
        for k in range(1, s + 1):  # m_k is odd and below 2**k: its top k - 1 bits are stored
            width = k - 1
            weights = np.int64(1) << np.arange(width, 0, -1, dtype=np.int64)
            rows[:, k - 1] = bits[:, offset : offset + width] @ weights + 1
            offset += width
        coefficients = (polys[first:last, None] >> np.arange(s - 1, 0, -1, dtype=np.int64)) & 1  # a_1 .. a_{s-1}
        for k in range(s, MAXBIT):
            value = rows[:, k - s] ^ (rows[:, k - s] << s)
            for i in range(1, s):
                value ^= coefficients[:, i - 1] * (rows[:, k - i] << i)
            rows[:, k] = value
        position += count * row_bits
        first = last
    return m << (MAXBIT - 1 - np.arange(MAXBIT, dtype=np.int64))
