"""``ember.storage``: PyTorch's ``torch.storage`` path to the storage classes."""

from ember.core.storages import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
