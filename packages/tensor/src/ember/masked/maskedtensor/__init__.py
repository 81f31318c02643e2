"""``ember.masked.maskedtensor``: the ``MaskedTensor`` class and its constructors."""

from ember.masked.maskedtensor.core import MaskedTensor, is_masked_tensor
from ember.masked.maskedtensor import rules as _rules  # installs MaskedTensor._rules
from ember.masked.maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]
