"""Devices, the default device, and the registry of device backends.

``cpu`` (NumPy) and ``meta`` (shapes only) are built in. Other device types come from packages that
offer an entry point in the group ``ember.backends``; the entry point names a callable that is
called once, at first use, and registers the backend with ``register_backend``. Setting
``EMBER_DEVICE_BACKEND_AUTOLOAD=0`` skips the entry points (the plugin can still be imported and
registered by hand).
"""

from __future__ import annotations

import builtins
import os
import re
import threading
from importlib.metadata import entry_points

# The device types PyTorch knows; a device object may name any of them, a tensor only a registered one.
KNOWN_TYPES = ("cpu", "cuda", "meta", "mps", "xpu", "xla", "hpu", "privateuseone")
_DEVICE_STRING = re.compile(r"([a-z_]+)(?::(\d+))?")


class device:
    __slots__ = ("_previous", "index", "type")

    def __init__(self, type_or_string=None, index: int | None = None, *, type: str | None = None) -> None:
        # ``device(type="cpu", index=0)`` is how a device's repr reads (generated graph code uses it).
        if type is not None:
            if type_or_string is not None:
                raise TypeError("device() got multiple values for argument 'type'")
            type_or_string = type
        if isinstance(type_or_string, device):
            if index is not None:
                raise ValueError("device(): an index cannot be given with a device object")
            self.type, self.index = type_or_string.type, type_or_string.index
            return
        if isinstance(type_or_string, int) and not isinstance(type_or_string, bool):
            # An index alone names the accelerator's device; CUDA is the one accelerator type we have.
            type_or_string, index = "cuda", type_or_string
        if not isinstance(type_or_string, str):
            raise TypeError(f"device() expected a string or int, got {builtins.type(type_or_string).__name__}")
        match = _DEVICE_STRING.fullmatch(type_or_string)
        if match is None or match[1] not in KNOWN_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(KNOWN_TYPES)} device type at start of device string: {type_or_string}"
            )
        if match[2] is not None:
            if index is not None:
                raise RuntimeError(f"device(): type {type_or_string!r} already has an index")
            index = int(match[2])
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        if match[1] == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        self.type, self.index = match[1], index

    def __eq__(self, other) -> bool:
        # As in PyTorch, a device never equals a string: compare ``d.type`` or ``device("cuda:1")``.
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    # ``with ember.device("meta"):`` makes it the default device for factories.
    def __enter__(self) -> device:
        self._previous = _state.default
        _state.default = self
        return self

    def __exit__(self, *exc) -> None:
        _state.default = self._previous


CPU = device("cpu")
META = device("meta")


class _DefaultDevice(threading.local):
    default: device = CPU


_state = _DefaultDevice()


def get_default_device() -> device:
    return _state.default


def set_default_device(d) -> None:
    _state.default = CPU if d is None else to_device(d)


_cache: dict = {}


def to_device(value) -> device:
    """A device from a device, a string or an int (``"cuda:1"``, ``1``); cached, since parsing is slow."""
    if type(value) is device:
        return value
    try:
        return _cache[value]
    except KeyError:
        d = _cache[value] = device(value)
        return d
    except TypeError:  # unhashable
        return device(value)


# -- backends ------------------------------------------------------------------------------------

_backends: dict[str, object] = {"cpu": "builtin", "meta": "builtin"}
_autoloaded = False
_autoload_lock = threading.Lock()


def register_backend(device_type: str, backend: object) -> None:
    """Make ``device_type`` allocatable; ``backend`` is the plugin's module or object."""
    if device_type not in KNOWN_TYPES:
        raise ValueError(f"register_backend: unknown device type {device_type!r}; use one of {', '.join(KNOWN_TYPES)}")
    _backends[device_type] = backend


def autoload_backends() -> None:
    """Load the ``ember.backends`` entry points once, unless EMBER_DEVICE_BACKEND_AUTOLOAD=0."""
    global _autoloaded
    with _autoload_lock:
        if _autoloaded:
            return
        _autoloaded = True
        if os.environ.get("EMBER_DEVICE_BACKEND_AUTOLOAD", "1") == "0":
            return
        for entry in entry_points(group="ember.backends"):
            entry.load()()


def check_backend(d: device) -> None:
    """Raise the error PyTorch users expect when no installed package provides ``d``'s type."""
    if d.type in _backends:
        return
    autoload_backends()
    if d.type not in _backends:
        hint = "install ember-cuda" if d.type == "cuda" else "no installed package registers it"
        raise RuntimeError(f"device type '{d.type}' is not available: {hint} (ember.backends entry points)")


def registered_backends() -> list[str]:
    return list(_backends)


def get_backend(device_type: str) -> object | None:
    """The plugin registered for ``device_type`` (after autoloading the entry points), or None."""
    autoload_backends()
    return _backends.get(device_type)
