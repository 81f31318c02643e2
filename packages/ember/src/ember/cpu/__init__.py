"""``ember.cpu``: the CPU as a device module, for code written against any device.

Programs write ``ember.get_device_module(device).synchronize()`` or ``getattr(ember, device.type)``
and expect the same functions on every device. On the CPU an op has finished when it returns, so
synchronizing does nothing and a stream is a placeholder: there is one CPU device and it runs one
stream.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "device_count",
    "is_available",
    "is_initialized",
    "set_device",
    "stream",
    "synchronize",
]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def synchronize(device: Any = None) -> None:
    """Nothing to wait for: CPU ops are done when they return."""


def current_device() -> str:
    return "cpu"


def device_count() -> int:
    return 1


def set_device(device: Any) -> None:
    """Only the CPU can be chosen; anything else is an error."""
    from ember.core.devices import to_device

    if to_device(device).type != "cpu":
        raise ValueError(f"ember.cpu.set_device: expected a cpu device, got {device!r}")


class Stream:
    """The CPU's one stream: its work is always done."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def record_event(self, event: Event | None = None) -> Event:
        return event if event is not None else Event()


class Event:
    """An event on the CPU stream: complete as soon as it is recorded."""

    def query(self) -> bool:
        return True

    def record(self, stream: Stream | None = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Stream | None = None) -> None:
        pass


_CURRENT = Stream()


def current_stream(device: Any = None) -> Stream:
    return _CURRENT


class StreamContext(AbstractContextManager):
    """``with ember.cpu.stream(s):`` runs its body on the CPU's one stream."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __exit__(self, *exc: object) -> None:
        return None


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
