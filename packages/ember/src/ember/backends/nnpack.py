"""``ember.backends.nnpack``: NNPACK, which Ember does not call. ``is_available()`` is False."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
