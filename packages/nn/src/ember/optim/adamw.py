"""``ember.optim.adamw``: PyTorch's module path for ``AdamW`` and ``adamw``, which are defined beside Adam."""

from ember.optim.adam import AdamW, adamw

__all__ = ["AdamW", "adamw"]
