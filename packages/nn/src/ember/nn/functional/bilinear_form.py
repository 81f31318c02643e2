"""``F.bilinear``: ``y[..., o] = x1 W[o] x2ᵀ + b[o]``, an einsum over the leading dimensions."""

from __future__ import annotations

from ember.core.aten.linalg.einsum import einsum_function
from ember.core.tensor import Tensor


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``F.bilinear`` as an einsum over the leading dimensions."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {tuple(input1.shape[:-1])} and "
            f"{tuple(input2.shape[:-1])}"
        )
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected {weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected {weight.shape[2]}"
        )
    out = einsum_function("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out
