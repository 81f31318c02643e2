"""``ember.backends.openmp``: OpenMP, which Ember's eager CPU kernels (NumPy) do not use; compiled C++ kernels bring their own. ``is_available()`` is False."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
