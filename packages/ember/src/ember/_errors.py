"""PyTorch's top-level error types: ``AcceleratorError``, ``OutOfMemoryError``, ``FatalError``."""

from __future__ import annotations

__all__ = ["AcceleratorError", "FatalError", "OutOfMemoryError"]


class AcceleratorError(RuntimeError):
    """An error an accelerator's runtime reported."""


class OutOfMemoryError(RuntimeError):
    """A device allocator could not get the memory it was asked for."""


class FatalError(Exception):
    """An unrecoverable error of the runtime."""
