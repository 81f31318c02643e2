"""``ember.backends.mps``: Apple's Metal backend, which Ember does not have."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
