"""``pairwise_distance`` and ``pdist``, composed from ``norm``."""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor

__all__ = ["pairwise_distance", "pdist"]


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension (of the broadcast shapes)."""
    ndim = max(x1.ndim, x2.ndim)
    if ndim == 0:
        return (x1 - x2 + eps).abs()
    return (x1 - x2 + eps).norm(p, ndim - 1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, pairs ``i < j`` in row order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes, but got: {input.dtype}")
    rows, cols = np.triu_indices(input.shape[0], 1)
    first = input.index_select(0, make_tensor(rows, dtype=D.int64, device=input.device))
    second = input.index_select(0, make_tensor(cols, dtype=D.int64, device=input.device))
    return (first - second).norm(p, 1)
