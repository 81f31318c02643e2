"""Process groups and the state they share: the default group, every group's ranks and backends.

A ``ProcessGroup`` holds one backend per device type (``cpu`` -> ``mpi``, ``cuda`` -> ``nccl``); a
collective picks the backend of its tensors' device. Every collective of a group gets the next
sequence number of that group (point-to-point operations count separately), which the Flight
Recorder and the timeout errors name; a watchdog thread publishes each group's last sequence
number to the store a few times a second, so that a rank whose collective times out can tell which
ranks never entered it.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from ember.distributed._types import Backend, GroupMember
from ember.distributed.flight_recorder import recorder
from ember.distributed.store import Store

__all__ = ["ProcessGroup", "world"]

_PUBLISH_PERIOD_S = 0.2


class ProcessGroup:
    """A set of ranks that run collectives together (``torch.distributed.ProcessGroup``)."""

    def __init__(
        self,
        store: Store,
        rank: int,
        size: int,
        *,
        name: str = "0",
        desc: str = "default_pg",
        global_ranks: list[int] | None = None,
        timeout: timedelta = timedelta(minutes=30),
        backend_name: str = "mpi",
    ) -> None:
        self.store = store
        self._rank = rank
        self._size = size
        self.group_name = name
        self.group_desc = desc
        self.global_ranks = list(global_ranks if global_ranks is not None else range(size))
        self.timeout = timeout
        self.backend_name = backend_name
        self.backends: dict[str, Any] = {}
        self.seq = 0
        self.p2p_seq = 0
        self.bound_device_id: Any = None
        self.broken: str | None = None

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return self.backend_name

    @property
    def group_ranks(self) -> list[int]:
        return list(self.global_ranks)

    def _register_backend(self, device_type: str, backend_type: Any, backend: Any) -> None:
        self.backends[device_type] = backend

    def _get_backend(self, device: Any) -> Any:
        device_type = getattr(device, "type", device)
        backend = self.backends.get(device_type)
        if backend is None:
            raise RuntimeError(
                f"No backend type associated with device type {device_type} in the process group {self.group_name!r} "
                f"(it has {sorted(self.backends) or 'none'})"
            )
        return backend

    def _get_backend_name(self) -> str:
        return self.backend_name

    def __repr__(self) -> str:
        return f"ProcessGroup(name={self.group_name!r}, rank={self._rank}, size={self._size}, backend={self.backend_name!r})"


class _World:
    """The process's distributed state (PyTorch's ``_world``)."""

    def __init__(self) -> None:
        self.default_pg: ProcessGroup | None = None
        self.default_store: Store | None = None
        self.groups: dict[ProcessGroup, dict[int, int]] = {}  # group -> {global rank: group rank}
        self.group_count = 0
        self.watchdog: _Watchdog | None = None

    def reset(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        self.__init__()  # type: ignore[misc]
        GroupMember.WORLD = None


class _Watchdog(threading.Thread):
    """Publishes each group's last entered sequence number to the store when it changes."""

    def __init__(self, store: Store, rank: int) -> None:
        super().__init__(name="ember-distributed-watchdog", daemon=True)
        self.store = store
        self.rank = rank
        self.stopping = threading.Event()
        self.published: dict[str, int] = {}

    def run(self) -> None:
        while not self.stopping.wait(_PUBLISH_PERIOD_S):
            self.publish()

    def publish(self) -> None:
        for group in list(world.groups):
            if self.published.get(group.group_name) != group.seq:
                try:
                    self.store.set(progress_key(group.group_name, self.rank), str(group.seq))
                except Exception:  # the store is gone at shutdown; the next round tries again
                    return
                self.published[group.group_name] = group.seq

    def stop(self) -> None:
        self.stopping.set()


def progress_key(group_name: str, rank: int) -> str:
    return f"ember/progress/{group_name}/{rank}"


def missing_ranks(group: ProcessGroup, seq: int) -> list[int]:
    """The global ranks of ``group`` that, as far as the store knows, never entered collective ``seq``."""
    store = world.default_store
    if store is None:
        return []
    if world.watchdog is not None:
        world.watchdog.publish()
    missing = []
    for rank in group.global_ranks:
        key = progress_key(group.group_name, rank)
        try:
            entered = int(store.get(key)) if store.check([key]) else 0
        except Exception:
            entered = 0
        if entered < seq:
            missing.append(rank)
    return missing


def start_watchdog(store: Store, rank: int) -> None:
    world.watchdog = _Watchdog(store, rank)
    world.watchdog.start()


def register_group(group: ProcessGroup) -> None:
    world.groups[group] = {g: i for i, g in enumerate(group.global_ranks)}
    recorder.groups[group.group_name] = {"desc": group.group_desc, "ranks": group.global_ranks}


world = _World()


def default_backend_for(device_type: str) -> str:
    return Backend.default_device_backend_map.get(device_type, Backend.MPI)
