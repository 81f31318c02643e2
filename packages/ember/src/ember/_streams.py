"""``ember.Stream`` and ``ember.Event``: the device-agnostic stream and event (PyTorch 2's
``torch.Stream``/``torch.Event``).

On the CPU (and the meta device) work is done when it is issued: the one stream is always idle and
synchronizing does nothing. The CPU backend has no events, as in PyTorch: recording one raises
``RuntimeError``, and an unrecorded event is complete. For an accelerator with a device module
(``ember.cuda`` from the ember-cuda package), the constructors return that module's own stream or
event.
"""

from __future__ import annotations

from typing import Any

from ember.core.devices import check_backend, device, to_device

__all__ = ["Event", "Stream"]

_HOST = ("cpu", "meta")


def _resolve(value: Any) -> device:
    """The device a stream or event is for: ``value``, or the current accelerator, else the CPU."""
    if value is None:
        from ember import accelerator

        current = accelerator.current_accelerator()
        return current if current is not None else device("cpu")
    if isinstance(value, int) and not isinstance(value, bool):
        from ember import accelerator

        current = accelerator.current_accelerator()
        if current is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return device(current.type, value)
    return to_device(value)


def _device_module_class(d: device, name: str):
    check_backend(d)
    import ember

    cls = getattr(ember.get_device_module(d.type), name, None)
    if cls is None:
        raise RuntimeError(f"the {d.type} backend has no {name}")
    return cls


def _no_events(d: device) -> RuntimeError:
    return RuntimeError(f"{d.type} backend doesn't support events.")


class Stream:
    """An in-order queue of work on a device; ``with stream:`` makes it the current one."""

    def __new__(cls, device: Any = None, *, priority: int = 0) -> Any:
        d = _resolve(device)
        if d.type not in _HOST:
            return _device_module_class(d, "Stream")(device=d, priority=priority)
        self = super().__new__(cls)
        self._device, self.priority = d, priority
        return self

    @property
    def device(self) -> device:
        return self._device

    @property
    def device_type(self) -> str:
        return self._device.type

    @property
    def device_index(self) -> int:
        return -1 if self._device.index is None else self._device.index

    @property
    def stream_id(self) -> int:
        return 0  # the host's one stream

    @property
    def native_handle(self) -> int:
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def query(self) -> bool:
        """Whether all work on the stream is done: always, on the host."""
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work: none is pending on the host."""

    def is_capturing(self) -> bool:
        return False

    def wait_event(self, event: Event) -> None:
        """Make later work wait for ``event``: host work is done in order already."""

    def wait_stream(self, stream: Stream) -> None:
        raise _no_events(self._device)  # PyTorch records an event on `stream` to wait for

    def record_event(self, event: Event | None = None) -> Event:
        raise _no_events(self._device)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return False
        return (self.device_type, self.device_index, self.stream_id) == (
            other.device_type,
            other.device_index,
            other.stream_id,
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_index, self.stream_id))

    def __repr__(self) -> str:
        return (
            f"ember.Stream device_type={self.device_type}, device_index={self.device_index}, stream_id={self.stream_id}"
        )


class Event:
    """A marker in a stream, to wait for or time; the host backend records none."""

    def __new__(
        cls, device: Any = None, *, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> Any:
        d = _resolve(device)
        if d.type not in _HOST:
            make = _device_module_class(d, "Event")
            return make(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)
        self = super().__new__(cls)
        self._device, self.enable_timing = d, enable_timing
        self.blocking, self.interprocess = blocking, interprocess
        return self

    @property
    def device(self) -> device:
        return self._device

    @property
    def event_id(self) -> int:
        return 0  # never recorded

    def record(self, stream: Stream | None = None) -> None:
        raise _no_events(self._device)

    def query(self) -> bool:
        """Whether the work before the event is done: an unrecorded event is complete."""
        return True

    def synchronize(self) -> None:
        """Wait for the event: nothing to wait for."""

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream``'s later work wait for the event: nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")  # none can be, here

    def ipc_handle(self) -> Any:
        raise NotImplementedError("ember.Event ipc is not supported")

    @classmethod
    def from_ipc_handle(cls, device: Any, ipc_handle: Any) -> Event:
        raise NotImplementedError("ember.Event ipc is not supported")

    def __repr__(self) -> str:
        index = -1 if self._device.index is None else self._device.index
        return (
            f"ember.Event device_type={self._device.type}, device_index={index}, "
            f"event_flag={int(self.enable_timing)}, event_id={self.event_id}"
        )
