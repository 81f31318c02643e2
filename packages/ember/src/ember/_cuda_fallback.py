"""``ember.cuda`` when the ember-cuda package is not installed: the answers of PyTorch's CPU build.

``import ember.cuda`` and ``ember.cuda.is_available()`` are the first lines of many scripts, so
they must work on a machine without CUDA. ``install_finder`` (called by ``ember/__init__.py``) adds
an import finder at the end of ``sys.meta_path`` that serves this module for the name
``ember.cuda``; being last, it is asked only when no installed package provides ``ember.cuda``, so
the real plugin always wins.

What it answers: ``is_available()`` is False, ``device_count()`` 0, seeding and ``empty_cache`` do
nothing, memory statistics are 0; everything that needs a device (``synchronize``,
``current_device``, ``get_device_name``...) raises ``AssertionError``, the error PyTorch's CPU
build raises.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

__all__ = [
    "OutOfMemoryError",
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "synchronize",
]

from ember._errors import OutOfMemoryError  # ember.OutOfMemoryError, as in PyTorch

_NO_CUDA = "Ember not compiled with CUDA enabled (install the ember-cuda package for CUDA devices)"


def _no_device(*args, **kwargs):
    raise AssertionError(_NO_CUDA)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed) -> None:
    """Seeding devices that do not exist does nothing, as in PyTorch's CPU build."""


def manual_seed_all(seed) -> None:
    """Seeding devices that do not exist does nothing, as in PyTorch's CPU build."""


def seed() -> None:
    """Nothing to seed."""


def seed_all() -> None:
    """Nothing to seed."""


def empty_cache() -> None:
    """No cache to empty."""


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


synchronize = _no_device
current_device = _no_device
get_device_name = _no_device
get_device_capability = _no_device
get_device_properties = _no_device
set_device = _no_device
get_rng_state = _no_device
set_rng_state = _no_device
get_rng_state_all = _no_device
set_rng_state_all = _no_device


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ember.cuda":
            return None
        # This file again, executed as a module of its own named ``ember.cuda``.
        return importlib.util.spec_from_file_location(fullname, __file__)


def install_finder() -> None:
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
