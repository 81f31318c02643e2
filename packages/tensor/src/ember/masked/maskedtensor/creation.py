"""``masked_tensor`` and ``as_masked_tensor``."""

from __future__ import annotations

from ember.core.tensor import Tensor
from ember.masked.maskedtensor.core import MaskedTensor

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor of copies of ``data`` and ``mask`` (a leaf: ``requires_grad`` as given)."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor of ``data`` and ``mask``. PyTorch's is differentiable in ``data`` (its gradient
    a MaskedTensor); Ember's plain tensors cannot hold such a gradient, so ``data`` that requires
    grad is refused: use ``masked_tensor(data, mask, requires_grad=True)``."""
    if isinstance(data, Tensor) and not isinstance(data, MaskedTensor) and data.requires_grad:
        raise NotImplementedError(
            "as_masked_tensor: gradients from a MaskedTensor back to a plain tensor are not supported in Ember; "
            "use masked_tensor(data.detach(), mask, requires_grad=True)"
        )
    return MaskedTensor(data, mask)
