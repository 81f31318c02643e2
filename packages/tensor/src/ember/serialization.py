"""``ember.serialization``: PyTorch's ``torch.serialization`` names: ``save``, ``load`` and the
weights-only allow-list (``add_safe_globals``, ``safe_globals``, ``get_safe_globals``,
``clear_safe_globals``). The format and the unpicklers are in ``ember.core.serialization``."""

from ember.core.serialization.checkpoint import load, save
from ember.core.serialization.safe_globals import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

DEFAULT_PROTOCOL = 2

__all__ = [
    "DEFAULT_PROTOCOL",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]
