"""``HashStore``: the store in one process's memory, for tests and single-process jobs.

A dict and one condition variable: writers notify, blocking readers wait on the condition with
the timeout (no polling), exactly the semantics of ``TCPStore`` without a network.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta

from ember.distributed.store import (
    DEFAULT_TIMEOUT,
    Store,
    check_amount,
    check_key,
    check_keys,
    check_timeout,
    check_values,
    seconds,
    timeout_error,
    to_bytes,
    wrap_int64,
)

__all__ = ["HashStore"]


class HashStore(Store):
    """An in-process, thread-safe store (``torch.distributed.HashStore``)."""

    def __init__(self, timeout: timedelta = DEFAULT_TIMEOUT) -> None:
        super().__init__(timeout)
        self._data: dict[str, bytes] = {}
        self._changed = threading.Condition()

    def set(self, key: str, value: str | bytes) -> None:
        self._write(check_key(key), to_bytes(value))

    def get(self, key: str) -> bytes:
        name = check_key(key)
        with self._changed:
            self._wait_locked([name], self.timeout)
            return self._data[name]

    def add(self, key: str, amount: int) -> int:
        name, delta = check_key(key), check_amount(amount)
        with self._changed:
            current = self._data.get(name)
            if current is not None:
                try:
                    delta = wrap_int64(int(current) + delta)
                except ValueError:
                    raise ValueError(f"add() on key {name!r}, whose value {current[:64]!r} is not an integer") from None
            self._data[name] = str(delta).encode()
            self._changed.notify_all()
            return delta

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        name, expected, desired = check_key(key), to_bytes(expected_value), to_bytes(desired_value)
        with self._changed:
            current = self._data.get(name)
            if current is None and expected:
                return expected
            if current is None or current == expected:
                self._data[name] = desired
                self._changed.notify_all()
                return desired
            return current

    def wait(self, keys: Sequence[str], timeout: timedelta | None = None) -> None:
        names = check_keys(keys)
        wait_for = self.timeout if timeout is None else check_timeout(timeout)
        with self._changed:
            self._wait_locked(names, wait_for)

    def check(self, keys: Sequence[str]) -> bool:
        names = check_keys(keys)
        with self._changed:
            return all(name in self._data for name in names)

    def delete_key(self, key: str) -> bool:
        name = check_key(key)
        with self._changed:
            return self._data.pop(name, None) is not None

    def num_keys(self) -> int:
        with self._changed:
            return len(self._data)

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        names = check_keys(keys)
        with self._changed:
            self._wait_locked(names, self.timeout)
            return [self._data[name] for name in names]

    def multi_set(self, keys: Sequence[str], values: Sequence[str | bytes]) -> None:
        names = check_keys(keys)
        data = check_values(names, values)
        with self._changed:
            self._data.update(zip(names, data, strict=True))
            self._changed.notify_all()

    def append(self, key: str, value: str | bytes) -> None:
        name, suffix = check_key(key), to_bytes(value)
        with self._changed:
            self._data[name] = self._data.get(name, b"") + suffix
            self._changed.notify_all()

    def _write(self, name: str, value: bytes) -> None:
        with self._changed:
            self._data[name] = value
            self._changed.notify_all()

    def _wait_locked(self, names: list[str], timeout: timedelta) -> None:
        def ready() -> bool:
            return all(name in self._data for name in names)

        if not self._changed.wait_for(ready, seconds(timeout)):
            raise timeout_error([name for name in names if name not in self._data], timeout)
