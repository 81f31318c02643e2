"""``PrefixStore``: a view of another store in which every key is ``prefix + "/" + key``.

Process groups use it to give each group its own corner of one rendezvous store. It owns nothing:
the timeout, ``num_keys`` (which counts every key of the underlying store, as PyTorch's does) and
all data belong to the underlying store. Prefixes nest: ``PrefixStore("b", PrefixStore("a", s))``
writes ``a/b/key`` into ``s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from ember.distributed.store import Store, check_key, check_keys

__all__ = ["PrefixStore"]


class PrefixStore(Store):
    """Prefixes every key with ``prefix + "/"`` before handing it to ``store``.

    >>> from ember.distributed import HashStore
    >>> base = HashStore()
    >>> PrefixStore("group1", base).set("rank", "0")
    >>> base.get("group1/rank")
    b'0'
    """

    def __init__(self, prefix: str, store: Store) -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}: {prefix!r}")
        if not isinstance(store, Store):
            raise TypeError(f"store must be an ember.distributed.Store, got {type(store).__name__}")
        self._prefix = prefix + "/"
        self._store = store

    @property
    def underlying_store(self) -> Store:
        return self._store

    @property
    def timeout(self) -> timedelta:
        return self._store.timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self._store.set_timeout(timeout)

    def set(self, key: str, value: str | bytes) -> None:
        self._store.set(self._key(key), value)

    def get(self, key: str) -> bytes:
        return self._store.get(self._key(key))

    def add(self, key: str, amount: int) -> int:
        return self._store.add(self._key(key), amount)

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        return self._store.compare_set(self._key(key), expected_value, desired_value)

    def wait(self, keys: Sequence[str], timeout: timedelta | None = None) -> None:
        self._store.wait(self._keys(keys), timeout)

    def check(self, keys: Sequence[str]) -> bool:
        return self._store.check(self._keys(keys))

    def delete_key(self, key: str) -> bool:
        return self._store.delete_key(self._key(key))

    def num_keys(self) -> int:
        return self._store.num_keys()

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        return self._store.multi_get(self._keys(keys))

    def multi_set(self, keys: Sequence[str], values: Sequence[str | bytes]) -> None:
        self._store.multi_set(self._keys(keys), values)

    def append(self, key: str, value: str | bytes) -> None:
        self._store.append(self._key(key), value)

    def __repr__(self) -> str:
        return f"PrefixStore({self._prefix[:-1]!r}, {self._store!r})"

    def _key(self, key: str) -> str:
        return self._prefix + check_key(key)

    def _keys(self, keys: Sequence[str]) -> list[str]:
        return [self._prefix + key for key in check_keys(keys)]
