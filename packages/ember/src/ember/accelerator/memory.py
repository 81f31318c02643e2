"""``ember.accelerator.memory``: the accelerator's memory allocator statistics, as
``torch.accelerator.memory``. Each function asks the accelerator's device module; with no
accelerator, each raises ``RuntimeError`` as PyTorch's CPU build does."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import ember.accelerator as _accelerator

__all__ = [
    "empty_cache",
    "empty_host_cache",
    "get_memory_info",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]


def _ask(name: str, device_index: Any) -> Any:
    _accelerator._require()
    return _accelerator._call(name, _accelerator._index(device_index))


def empty_cache() -> None:
    """Give the allocator's unused cached device memory back to the device."""
    _accelerator._call("empty_cache")


def empty_host_cache() -> None:
    """Give the cached pinned host memory back; a no-op where the plugin keeps no such cache."""
    backend = _accelerator._require()
    release = getattr(backend, "empty_host_cache", None)
    if release is not None:
        release()


def memory_stats(device_index: Any = None, /) -> OrderedDict[str, Any]:
    """The allocator's statistics for a device, by name."""
    return OrderedDict(_ask("memory_stats", device_index))


def memory_allocated(device_index: Any = None, /) -> int:
    """Bytes held by tensors on the device now."""
    return int(_ask("memory_allocated", device_index))


def max_memory_allocated(device_index: Any = None, /) -> int:
    """The peak of ``memory_allocated`` since the start or the last reset."""
    return int(_ask("max_memory_allocated", device_index))


def memory_reserved(device_index: Any = None, /) -> int:
    """Bytes the allocator holds from the device (in use or cached)."""
    return int(_ask("memory_reserved", device_index))


def max_memory_reserved(device_index: Any = None, /) -> int:
    """The peak of ``memory_reserved`` since the start or the last reset."""
    return int(_ask("max_memory_reserved", device_index))


def reset_accumulated_memory_stats(device_index: Any = None, /) -> None:
    """Zero the allocator's accumulated counters."""
    _ask("reset_accumulated_memory_stats", device_index)


def reset_peak_memory_stats(device_index: Any = None, /) -> None:
    """Start the peaks afresh from the current values."""
    _ask("reset_peak_memory_stats", device_index)


def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the device."""
    return tuple(_ask("mem_get_info", device_index))
