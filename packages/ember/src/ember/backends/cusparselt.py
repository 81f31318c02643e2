"""``ember.backends.cusparselt``: NVIDIA's cuSPARSELt (2:4 structured-sparse matrix products), which
Ember does not use: ``is_available()`` is False and ``version()``/``get_max_alg_id()`` are None, as
in a PyTorch build without it."""

from __future__ import annotations

__all__ = ["get_max_alg_id", "is_available", "version"]


def version() -> int | None:
    """The cuSPARSELt version, or None where it is not available."""
    return None


def is_available() -> bool:
    return False


def get_max_alg_id() -> int | None:
    """The largest cuSPARSELt algorithm id, or None where it is not available."""
    return None
