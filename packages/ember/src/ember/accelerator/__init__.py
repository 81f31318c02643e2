"""``ember.accelerator``: the device-agnostic questions scripts ask (``is_available``,
``current_accelerator``, ``device_count``, ...), as ``torch.accelerator`` answers them.

The one accelerator Ember knows is ``cuda``, given by the ember-cuda plugin; each function asks
``ember.cuda`` (the plugin, or without it the CPU-only fallback, whose ``is_available()`` is False).
With no accelerator, the questions about "the current device" raise ``RuntimeError`` as PyTorch's
CPU build does; the counts answer 0 and ``current_accelerator()`` answers None.
"""

from __future__ import annotations

import types
from typing import Any

__all__ = [
    "Graph",
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "current_stream",
    "device_count",
    "device_index",
    "empty_cache",
    "empty_host_cache",
    "get_device_capability",
    "get_memory_info",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device_idx",
    "set_device_index",
    "set_stream",
    "synchronize",
]

_NONE = "Cannot access accelerator device when none is available."


def _backend() -> types.ModuleType | None:
    """The device module of the available accelerator, or None."""
    import ember

    cuda = ember.cuda
    return cuda if cuda.is_available() else None


def _require() -> types.ModuleType:
    backend = _backend()
    if backend is None:
        raise RuntimeError(_NONE)
    return backend


def _call(name: str, *args: Any) -> Any:
    backend = _require()
    function = getattr(backend, name, None)
    if function is None:
        raise RuntimeError(f"ember.accelerator.{name}: the accelerator's plugin does not offer {name}()")
    return function(*args)


def _index(device: Any) -> int | None:
    """A device argument (None, an int, 'cuda:1', ember.device) as a device index; None means the current one."""
    import ember

    if device is None or isinstance(device, int):
        return device
    device = ember.device(device)
    accelerator = current_accelerator()
    if accelerator is not None and device.type != accelerator.type:
        raise ValueError(f"{device.type} doesn't match the current accelerator {accelerator}.")
    return device.index


def is_available() -> bool:
    """Whether an accelerator (for Ember: a CUDA device through the ember-cuda plugin) is present."""
    return _backend() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ``ember.device`` ('cuda'), or None when there is none."""
    import ember

    return ember.device("cuda") if is_available() else None


def device_count() -> int:
    backend = _backend()
    return 0 if backend is None else int(backend.device_count())


def current_device_index() -> int:
    return int(_call("current_device"))


def set_device_index(device: Any, /) -> None:
    index = _index(device)
    if index is not None:
        _call("set_device", index)


current_device_idx = current_device_index  # PyTorch's deprecated spellings
set_device_idx = set_device_index


def get_device_capability(device: Any = None, /) -> dict[str, Any]:
    """What the accelerator's device supports: ``{"supported_dtypes": set of dtypes}``, the dtypes its
    tensors may have (every Ember dtype: device storage is plain bytes, and conversions between the
    dtypes run there)."""
    from ember.core.dtypes import ALL

    _require()
    _index(device)  # checks that the device is the accelerator's
    return {"supported_dtypes": set(ALL)}


def synchronize(device: Any = None, /) -> None:
    _require()
    _call("synchronize", _index(device))


def current_stream(device: Any = None, /):
    _require()
    return _call("current_stream", _index(device))


def set_stream(stream: Any) -> None:
    _call("set_stream", stream)


class device_index:
    """``with ember.accelerator.device_index(i):`` makes device ``i`` current inside the block;
    ``None`` does nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.index = device
        self._previous: int | None = None

    def __enter__(self) -> None:
        if self.index is not None:
            self._previous = current_device_index()
            set_device_index(self.index)

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            set_device_index(self._previous)


from ember.accelerator import graphs  # noqa: E402, F401  (PyTorch's module path; uses the helpers above)
from ember.accelerator.graphs import Graph  # noqa: E402
from ember.accelerator.memory import (  # noqa: E402  (they use the helpers above)
    empty_cache,
    empty_host_cache,
    get_memory_info,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
