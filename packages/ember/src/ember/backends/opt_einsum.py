"""``ember.backends.opt_einsum``: opt_einsum, which Ember's einsum does not use. ``is_available()`` is False."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
