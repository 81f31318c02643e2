"""``embedding_bag``: sums, means or maxima of bags of embeddings without building the bags.

Each looked-up row is assigned its bag's number, and one scatter (``index_add`` for sum and mean,
``scatter_reduce`` for max) folds the rows into their bags. Rows equal to ``padding_idx`` do not
count; empty bags give zeros, as in PyTorch. ``sparse=True`` (sum and mean) makes the weight's gradient
a sparse COO tensor with one entry per looked-up row, through ``embedding``'s sparse rule.
"""

from __future__ import annotations

from ember.core import functional as F
from ember.nn._ops import ops

_MODES = ("sum", "mean", "max")


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx=None,
):
    if weight.dtype in (ops.int64, ops.int32) and input.is_floating_point():
        input, weight = weight, input  # PyTorch accepts the arguments in the old order too
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, then it must "
            f"have the same shape as the input ({tuple(input.shape)})"
        )
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                f"sequences. However, found offsets of type {type(offsets).__name__}"
            )
        bags, length = input.shape
        offsets = ops.arange(0, bags * length, length, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub."
        )
    num_embeddings = weight.shape[0]
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += num_embeddings
        if not 0 <= padding_idx < num_embeddings:
            raise AssertionError("padding_idx must be within num_embeddings")
    if max_norm is not None:
        with ops.no_grad():
            ops.embedding_renorm_(weight, input, max_norm, norm_type)

    starts = offsets[:-1] if include_last_offset else offsets
    count = starts.shape[0]
    n = input.shape[0]
    if count and int(starts[0]) != 0:
        raise RuntimeError(
            f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {int(starts[0])}"
        )
    if count and int(starts[-1]) > n:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length ({n}), but got offsets[-1] of {int(starts[-1])}"
        )
    bag = ops.searchsorted(starts.contiguous(), ops.arange(n, device=input.device), right=True) - 1
    # With sparse=True the weight's gradient comes from embedding's sparse rule (padding rows left out).
    rows = F.embedding(
        input, weight, padding_idx if sparse else None, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )
    keep = None if padding_idx is None else input != padding_idx
    dim = weight.shape[1]
    if mode == "max":
        if keep is not None:
            bag = ops.where(keep, bag, count)  # padding rows go to a bag that is dropped
        index = bag.unsqueeze(1).expand(n, dim)
        out = ops.zeros((count + 1, dim), dtype=weight.dtype, device=weight.device)
        return out.scatter_reduce(0, index, rows, "amax", include_self=False)[:count]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    if keep is not None:
        rows = rows * keep.unsqueeze(1).to(rows.dtype)
    out = ops.zeros((count, dim), dtype=weight.dtype, device=weight.device).index_add(0, bag, rows)
    if mode == "sum":
        return out
    ones = ops.ones(n, dtype=weight.dtype, device=weight.device) if keep is None else keep.to(weight.dtype)
    sizes = ops.zeros(count, dtype=weight.dtype, device=weight.device).index_add(0, bag, ones)
    return out / sizes.clamp(min=1).unsqueeze(1)
