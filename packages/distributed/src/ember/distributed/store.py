"""The store interface every rendezvous store implements, its errors, and its argument rules.

A store is a small key-value map that the processes of one job share to find each other: keys are
``str``, values are ``bytes`` (a ``str`` value is encoded as UTF-8), and reads block until the key
exists or the store's timeout passes. ``Store`` fixes the method set and its semantics once, as
``torch.distributed.Store`` does; ``TCPStore``, ``HashStore`` and ``PrefixStore`` implement it.
``multi_get``, ``multi_set`` and ``append`` have plain default implementations here that a store
overrides when it can do better (``TCPStore`` does each in one round trip).

The argument checks live here too, so that every store rejects the same bad input with the same
error type as PyTorch: a key that is not a ``str`` or a value that is not ``str``/``bytes`` is a
``TypeError``, an ``add`` delta outside int64 is a ``TypeError`` (PyTorch's binding rejects it
the same way), and a timeout raises ``DistStoreError`` naming the keys and the timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta

__all__ = ["DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "Store"]

DEFAULT_TIMEOUT = timedelta(seconds=300)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class DistError(RuntimeError):
    """Base of the errors raised by ``ember.distributed`` (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective failed or did not finish in time (``torch.distributed.DistBackendError``)."""


class DistStoreError(DistError):
    """A store operation failed: a timeout, a protocol mismatch, a store that cannot be reached."""


class DistNetworkError(DistStoreError):
    """The connection to a store's server failed (refused, reset, closed).

    PyTorch makes this a sibling of ``DistStoreError``; here it is a subclass, so that
    ``except DistStoreError`` also covers a store that could not be reached.
    """


class Store:
    """A key-value store shared by the processes of a job (``torch.distributed.Store``).

    Subclasses implement ``set``, ``get``, ``add``, ``compare_set``, ``wait``, ``check``,
    ``delete_key`` and ``num_keys``; the base raises ``NotImplementedError`` (a RuntimeError, as
    PyTorch's base raises) for those.
    """

    def __init__(self, timeout: timedelta = DEFAULT_TIMEOUT) -> None:
        self._timeout = check_timeout(timeout)

    @property
    def timeout(self) -> timedelta:
        """How long ``get``, ``wait`` and ``multi_get`` block before raising ``DistStoreError``."""
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout = check_timeout(timeout)

    def set(self, key: str, value: str | bytes) -> None:
        raise self._missing("set")

    def get(self, key: str) -> bytes:
        raise self._missing("get")

    def add(self, key: str, amount: int) -> int:
        raise self._missing("add")

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        raise self._missing("compare_set")

    def wait(self, keys: Sequence[str], timeout: timedelta | None = None) -> None:
        raise self._missing("wait")

    def check(self, keys: Sequence[str]) -> bool:
        raise self._missing("check")

    def delete_key(self, key: str) -> bool:
        raise self._missing("delete_key")

    def num_keys(self) -> int:
        raise self._missing("num_keys")

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        return [self.get(key) for key in check_keys(keys)]

    def multi_set(self, keys: Sequence[str], values: Sequence[str | bytes]) -> None:
        for key, value in zip(check_keys(keys), check_values(keys, values), strict=True):
            self.set(key, value)

    def append(self, key: str, value: str | bytes) -> None:
        suffix = to_bytes(value)
        # compare_set only writes when nobody wrote in between, so the loop ends once it wins.
        current = b""
        while True:
            seen = self.compare_set(key, current, current + suffix)
            if seen == current + suffix:
                return
            current = seen

    def _missing(self, method: str) -> NotImplementedError:
        return NotImplementedError(f"{type(self).__name__} does not implement Store.{method}()")


# -- argument rules shared by every store ---------------------------------------------------------


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a store key must be a str, got {type(key).__name__}: {key!r}")
    return key


def check_keys(keys: object) -> list[str]:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise TypeError(f"keys must be a list of str, got {type(keys).__name__}: {keys!r}")
    return [check_key(key) for key in keys]


def to_bytes(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a store value must be str or bytes, got {type(value).__name__}: {value!r}")


def check_values(keys: Sequence[str], values: object) -> list[bytes]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"values must be a list of str or bytes, got {type(values).__name__}")
    if len(values) != len(keys):
        raise DistStoreError(f"multi_set got {len(keys)} keys but {len(values)} values; they must pair up")
    return [to_bytes(value) for value in values]


def check_amount(amount: object) -> int:
    if not isinstance(amount, int):
        raise TypeError(f"add() takes an int amount, got {type(amount).__name__}: {amount!r}")
    if not INT64_MIN <= amount <= INT64_MAX:
        raise TypeError(f"add() amount must fit in a signed 64-bit integer, got {amount}")
    return int(amount)


def wrap_int64(value: int) -> int:
    """Counters are int64 and wrap around on overflow, as PyTorch's do."""
    return (value - INT64_MIN) % 2**64 + INT64_MIN


def check_timeout(timeout: object) -> timedelta:
    if not isinstance(timeout, timedelta):
        raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}: {timeout!r}")
    if timeout < timedelta(0):
        raise ValueError(f"timeout must not be negative, got {timeout}")
    return timeout


def seconds(timeout: timedelta) -> float:
    """A timeout in seconds that threading's waits accept (they refuse ones past TIMEOUT_MAX)."""
    return min(timeout.total_seconds(), threading.TIMEOUT_MAX)


def plus(timeout: timedelta, extra: timedelta) -> timedelta:
    """``timeout + extra``, saturating at ``timedelta.max`` (a timeout of "forever" stays one)."""
    return timeout + extra if timeout <= timedelta.max - extra else timedelta.max


def format_ms(timeout: timedelta) -> str:
    return f"{round(timeout / timedelta(milliseconds=1))} ms"


def timeout_error(missing: Sequence[str], timeout: timedelta) -> DistStoreError:
    names = ", ".join(repr(key) for key in missing)
    return DistStoreError(f"wait timed out after {format_ms(timeout)}; keys not set: {names}")
