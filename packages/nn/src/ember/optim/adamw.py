"""``ember.optim.adamw``: PyTorch's module path for ``AdamW``, which is defined beside ``Adam``."""

from ember.optim.adam import AdamW

__all__ = ["AdamW"]
