"""Per-channel operands of (N, C, *spatial) arrays, laid out for NumPy's fast loops.

NumPy runs a binary ufunc over two contiguous operands, or a contiguous one and a 0-d scalar, in its
vector loops; an operand broadcast along the inner dims (a (1, C, 1, 1) scale) takes a strided loop
at under half that speed. Repeating the per-channel values over one sample's spatial extent gives a
(C*S,) block, 1/N of the array, that every sample's row of C*S elements meets contiguously: the
broadcast is then only over the samples. Batch norm's passes run this way.

Per-channel sums (a bias gradient, batch norm's mean) of float32 arrays run in the compiled kernel of
``conv_direct``; of other types they are products of the (sample, channel) rows by ones, much faster
than NumPy's reduction over the strided axes.
"""

from __future__ import annotations

import numpy as np

from ember.core.aten.nn import conv_direct


def fits(*arrays: np.ndarray) -> bool:
    """Whether the arrays are C-contiguous, not empty and with a spatial part: the layout the rows
    view needs."""
    return all(a.flags.c_contiguous and a.ndim > 2 and a.size for a in arrays)


def rows(x: np.ndarray) -> np.ndarray:
    """A C-contiguous (N, C, *spatial) array as (N, C*S): one row per sample."""
    return x.reshape(x.shape[0], -1)


def block(values: np.ndarray, shape: tuple) -> np.ndarray:
    """Per-channel ``values`` (any shape holding C of them) repeated over the spatial extent of
    ``shape``: a (C*S,) row to meet ``rows(x)``."""
    spatial = 1
    for n in shape[2:]:
        spatial *= n
    return values.reshape(-1).repeat(spatial)


def sums(x: np.ndarray) -> np.ndarray:
    """``x`` (N, C, ...) summed over all but dim 1, shaped (C,)."""
    if not x.flags.c_contiguous or x.size == 0:
        return x.sum(axis=(0, *range(2, x.ndim)))
    n, c = x.shape[0], x.shape[1]
    if conv_direct.usable(x):  # float32: the compiled kernel, which wakes no BLAS thread
        return conv_direct.channel_sums(x.reshape(n, c, -1))
    # One product of all (sample, channel) rows, not one per sample: a batch of 32 small products
    # woke BLAS's threads 32 times.
    row_sums = np.matmul(x.reshape(n * c, -1), np.ones(x.size // (n * c), x.dtype))
    return row_sums.reshape(n, c).sum(axis=0)
