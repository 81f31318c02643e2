"""``ember.masked.maskedtensor``: the ``MaskedTensor`` class and its constructors."""

from ember.masked.maskedtensor import rules  # noqa: F401  (installs each op's rules on MaskedTensor)
from ember.masked.maskedtensor.core import MaskedTensor, is_masked_tensor
from ember.masked.maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]
