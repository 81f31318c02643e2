"""``ember.backends.mha``: the switch of PyTorch's fused fast path for ``MultiheadAttention`` and
``TransformerEncoder`` inference. Ember's modules have one path, so the switch is recorded and
answers back, with no effect on what runs."""

from __future__ import annotations

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path is enabled (True by default)."""
    return _fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the fast path."""
    global _fastpath_enabled
    _fastpath_enabled = value
