"""``huber_loss``, a composite: ``0.5 d²`` where ``|d| < delta``, ``delta (|d| - delta/2)`` elsewhere."""

from __future__ import annotations

import warnings

from ember.core.aten.pointwise.ternary import where_function
from ember.core.tensor import Tensor


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=2,
        )
    diff = input - target
    z = diff.abs()
    loss = where_function(z < delta, diff * diff * 0.5, (z - 0.5 * delta) * delta)
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
        if reduction == "mean":
            return loss.sum() / weight.sum()
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")
