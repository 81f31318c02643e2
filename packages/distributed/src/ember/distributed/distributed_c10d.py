"""Process groups: ``init_process_group`` and the functions that ask about or make groups
(``torch.distributed.distributed_c10d``). The collectives live in ``_collectives`` and
``_object_collectives`` and are re-exported here, under PyTorch's module path.

Start-up: the rendezvous store comes from ``init_method`` (``env://``: ``MASTER_ADDR``,
``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``; ``tcp://host:port``) or ``store=``; rank 0 serves a
``TCPStore``. MPI then starts through MPICH's PMI-1 protocol (``_mpi_init``): no ``mpiexec``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import warnings
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

from ember.distributed import flight_recorder
from ember.distributed._collectives import *  # noqa: F403  (PyTorch's module path for the collectives)
from ember.distributed._collectives import __all__ as _collective_names
from ember.distributed._mpi_backend import MPIBackend
from ember.distributed._mpi_init import init_mpi, mpi
from ember.distributed._object_collectives import *  # noqa: F403
from ember.distributed._object_collectives import __all__ as _object_names
from ember.distributed._types import Backend, GroupMember, ReduceOp, _make_nccl_premul_sum, default_pg_timeout
from ember.distributed._world import ProcessGroup, register_group, start_watchdog, world
from ember.distributed.prefix_store import PrefixStore
from ember.distributed.store import Store
from ember.distributed.tcp_store import TCPStore
from ember.logs import set_rank

log = logging.getLogger(__name__)

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "_make_nccl_premul_sum", "default_pg_timeout",
    "destroy_process_group", "get_backend", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "new_group", "new_subgroups", "new_subgroups_by_enumeration",
    *_collective_names, *_object_names,
]  # fmt: skip


class group:
    """``group.WORLD``: the default process group (``None`` before ``init_process_group``)."""

    WORLD: ProcessGroup | None = None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    try:
        mpi()
    except RuntimeError:
        return False
    return True


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return world.default_pg is not None


def _default_pg() -> ProcessGroup:
    if world.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    return world.default_pg


def _parse_backend(backend: str | None) -> dict[str, str]:
    """``None``, ``"mpi"``, ``"cpu:mpi,cuda:nccl"`` -> ``{device type: backend name}``."""
    if backend is None:
        return {"cpu": Backend.MPI}
    spec = str(backend).lower()
    if ":" not in spec:
        name = str(Backend(spec))
        if name == Backend.GLOO:
            warnings.warn("ember.distributed has no gloo; the cpu collectives run on MPI", stacklevel=3)
            name = Backend.MPI
        devices = Backend.backend_capability.get(name)
        if devices is None:
            raise ValueError(f"Invalid backend: '{backend}' (known: {', '.join(Backend.backend_list[1:])})")
        return dict.fromkeys(devices, name)
    pairs = {}
    for item in spec.split(","):
        device, _, name = item.strip().partition(":")
        if not device or not name:
            raise ValueError(f"Invalid backend string {backend!r}: expected 'device:backend' pairs like 'cpu:mpi'")
        pairs[device] = Backend.MPI if name == Backend.GLOO else name
    return pairs


def _make_backend(device: str, name: str, store: Store, rank: int, size: int, timeout: timedelta, comm: Any) -> Any:
    if name == Backend.MPI:
        if device != "cpu":
            raise RuntimeError(f"the mpi backend runs on cpu tensors, not {device}")
        return MPIBackend(comm, timeout)
    if name == Backend.NCCL:
        raise RuntimeError(
            "the nccl backend needs CUDA, and this installation has no CUDA device plugin (ember.cuda) with a GPU; "
            "use backend='mpi' (or None) for cpu tensors"
        )
    plugin = Backend._plugins.get(name.upper())
    if plugin is None:
        raise ValueError(f"Invalid backend: '{name}'")
    func, extended = plugin
    if extended:
        raise NotImplementedError(f"backend {name!r} uses the extended creator API, which ember does not offer yet")
    return func(store, rank, size, timeout)


def _rendezvous(init_method: str, rank: int, world_size: int, timeout: timedelta) -> tuple[Store, int, int]:
    url = urlparse(init_method)
    if url.scheme == "env":
        try:
            host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        except KeyError as error:
            raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {error.args[0]} expected, but not set") from None  # fmt: skip
        if rank < 0:
            rank = _env_int("RANK")
        if world_size < 0:
            world_size = _env_int("WORLD_SIZE")
    elif url.scheme == "tcp":
        if url.hostname is None or url.port is None:
            raise ValueError(f"tcp:// init_method needs a host and a port, got {init_method!r}")
        host, port = url.hostname, url.port
        if rank < 0 or world_size < 0:
            raise ValueError("tcp:// init_method needs rank and world_size arguments")
    else:
        raise ValueError(f"init_method {init_method!r} is not supported: use env://, tcp://HOST:PORT, or store=")
    store = TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)
    return store, rank, world_size


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {name} expected, but not set")  # fmt: skip
    return int(value)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Store | None = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Starts this process's part of the job and makes the default process group."""
    if world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
    devices = _parse_backend(backend)
    if store is not None:
        if init_method is not None:
            raise AssertionError("Cannot specify both init_method and store.")
        if world_size <= 0 or rank < 0:
            raise ValueError("world_size and rank must be given with store=")
    else:
        store, rank, world_size = _rendezvous(init_method or "env://", rank, world_size, timeout)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside the world of {world_size} ranks")
    prefixed = PrefixStore("default_pg", store)
    comm = init_mpi(prefixed, rank, world_size, timeout).Dup() if Backend.MPI in devices.values() else None
    pg = ProcessGroup(prefixed, rank, world_size, name="0", desc="default_pg", timeout=timeout,
                      backend_name=next(iter(devices.values())))  # fmt: skip
    for device, name in devices.items():
        pg._register_backend(device, name, _make_backend(device, name, prefixed, rank, world_size, timeout, comm))
    pg.bound_device_id = device_id
    world.default_pg, world.default_store = pg, prefixed
    world.group_count = 1
    GroupMember.WORLD = group.WORLD = pg
    register_group(pg)
    set_rank(rank)
    flight_recorder.recorder.rank, flight_recorder.recorder.world_size = rank, world_size
    flight_recorder.recorder.job = os.environ.get("EMBER_RUN_ID") or os.environ.get("MASTER_PORT") or "job"
    flight_recorder.install_signal_handlers(terminate_too=os.environ.get("EMBER_RUN_ID") is not None)
    start_watchdog(prefixed, rank)
    log.info("default process group: rank %d of %d, backends %s, timeout %s", rank, world_size, devices, timeout)


def _group(group: ProcessGroup | None) -> ProcessGroup:
    return _default_pg() if group is None else group


def _not_member(pg: Any) -> bool:
    return pg is GroupMember.NON_GROUP_MEMBER


def get_rank(group: ProcessGroup | None = None) -> int:
    if _not_member(group):
        return -1
    return _group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    if _not_member(group):
        return -1
    return _group(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    if _not_member(group):
        raise ValueError("Invalid process group specified")
    return Backend(_group(group).backend_name)


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    return list(_group(group).global_ranks)


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    pg = _group(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.group_name}")
    return pg.global_ranks[group_rank]


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    pg = _group(group)
    try:
        return pg.global_ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.group_name}") from None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment; launch with `ember run` or pass fallback_rank")


def new_group(
    ranks: list[int] | None = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
) -> ProcessGroup | Any:
    """A group of ``ranks`` (global ranks); every rank of the world calls it, unless
    ``use_local_synchronization``, where only the members do. Others get ``GroupMember.NON_GROUP_MEMBER``."""
    default = _default_pg()
    world_size = default.size()
    members = sorted(set(range(world_size) if ranks is None else ranks))
    for r in members:
        if not 0 <= r < world_size:
            raise ValueError(f"new_group: rank {r} is outside the world of {world_size} ranks")
    timeout = timeout or default.timeout
    devices = _parse_backend(backend) if backend is not None else {d: default.backend_name for d in default.backends}
    if use_local_synchronization:
        name = "local_" + hashlib.sha1(repr(members).encode()).hexdigest()[:16]
    else:
        name = str(world.group_count)
        world.group_count += 1
    me = default.rank()
    world_comm = default._get_backend("cpu").comm if "cpu" in default.backends else None
    comm = None
    if world_comm is not None:
        MPI = mpi()
        mpi_group = world_comm.Get_group().Incl(members)
        if use_local_synchronization:
            comm = world_comm.Create_group(mpi_group) if me in members else None
        else:
            comm = world_comm.Create(mpi_group)
        mpi_group.Free()
        if comm is not None and comm == MPI.COMM_NULL:
            comm = None
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    store = PrefixStore(f"group_{name}", world.default_store or default.store)
    pg = ProcessGroup(store, members.index(me), len(members), name=name, desc=group_desc or "undefined",
                      global_ranks=members, timeout=timeout, backend_name=next(iter(devices.values())))  # fmt: skip
    for device, backend_name in devices.items():
        pg._register_backend(device, backend_name,
                             _make_backend(device, backend_name, store, pg.rank(), pg.size(), timeout, comm))  # fmt: skip
    pg.bound_device_id = device_id
    register_group(pg)
    log.info("process group %s (%s): ranks %s, backends %s", name, pg.group_desc, members, devices)
    return pg


def new_subgroups(
    group_size: int | None = None,
    group: ProcessGroup | None = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    group_desc: str | None = None,
) -> tuple[ProcessGroup, list[ProcessGroup]]:
    """Splits the world (or ``group``) into consecutive subgroups of ``group_size`` ranks; returns
    this rank's subgroup and all of them."""
    if group_size is None:
        group_size = int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or None
        if group_size is None:
            raise ValueError("new_subgroups needs group_size on a machine without CUDA devices")
    ranks = get_process_group_ranks(group)
    if group_size <= 0:
        raise ValueError("The arg 'group_size' must be positive")
    if group_size > len(ranks):
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size ({len(ranks)})")
    if len(ranks) % group_size:
        raise ValueError("The world size must be divisible by 'group_size'")
    lists = [ranks[i : i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(lists, timeout, backend, pg_options, group_desc)


def new_subgroups_by_enumeration(
    ranks_per_subgroup_list: list[list[int]],
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    group_desc: str | None = None,
) -> tuple[ProcessGroup | None, list[ProcessGroup]]:
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    me = get_rank()
    current = None
    subgroups = []
    for index, ranks in enumerate(ranks_per_subgroup_list):
        desc = f"{group_desc}_{index}" if group_desc else None
        pg = new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options, group_desc=desc)
        subgroups.append(pg)
        if me in ranks:
            if current is not None:
                raise ValueError(f"Rank {me} has appeared in both subgroup {current.global_ranks} and {ranks}")
            current = pg
    return current, subgroups


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Frees ``group``, or every group (the default one included) when ``group`` is None."""
    if _not_member(group):
        return
    if group is None or group is world.default_pg:
        if world.default_pg is None:
            raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")  # fmt: skip
        for pg in list(world.groups):
            _free(pg)
        world.reset()
        group_cls = globals()["group"]
        group_cls.WORLD = None
        return
    if group not in world.groups:
        raise ValueError("Invalid process group specified")
    _free(group)
    del world.groups[group]


def _free(pg: ProcessGroup) -> None:
    for backend in pg.backends.values():
        comm = getattr(backend, "comm", None)
        if comm is not None:
            with contextlib.suppress(Exception):  # a communicator a timeout left broken may not free
                comm.Free()
    pg.backends.clear()
