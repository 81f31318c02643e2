"""Starting MPI inside a rank that no ``mpiexec`` started.

``MPI_Init`` finds its job through MPICH's PMI-1 protocol (``_pmi``): under ``ember run`` the
launcher serves it and has set ``PMI_FD``; otherwise this module starts one helper process that
serves this rank from the job's rendezvous store. One rank alone needs no server.

MPICH names its shared-memory segments after the job and unlinks them only in ``MPI_Finalize``,
which a failing rank never reaches (and must not: it waits for every other rank). So once every
local rank has attached them, the segments' names are removed from ``/dev/shm``; the memory lives
on until the last rank exits, and a killed job leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from datetime import timedelta
from typing import Any

from ember.distributed.prefix_store import PrefixStore
from ember.distributed.store import Store
from ember.distributed.tcp_store import TCPStore

__all__ = ["init_mpi", "mpi"]

_state: dict[str, Any] = {}


def mpi() -> Any:
    """The ``mpi4py.MPI`` module, imported without initializing MPI."""
    module = _state.get("MPI")
    if module is None:
        try:
            import mpi4py
        except ImportError as error:
            raise RuntimeError("the MPI backend needs mpi4py and an MPI library (pip install mpi4py mpich)") from error
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False  # a failing rank must exit, not wait in MPI_Finalize for the others
        mpi4py.rc.threads = True
        from mpi4py import MPI

        module = _state["MPI"] = MPI
    return module


def _store_address(store: Store) -> tuple[str, int, str]:
    """Host, port and nested prefixes (joined by NUL) of a ``TCPStore``, maybe under ``PrefixStore``s."""
    prefixes: list[str] = []
    while isinstance(store, PrefixStore):
        prefixes.append(store._prefix[:-1])
        store = store.underlying_store
    if not isinstance(store, TCPStore):
        raise RuntimeError(
            f"starting MPI ranks needs a TCPStore that a helper process can reach, got {type(store).__name__}; "
            "launch with `ember run` (or pass a TCPStore)"
        )
    return store.host, store.port, "\0".join(reversed(prefixes))


def _serve_from_helper(store: Store, world_size: int, local_world_size: int, timeout: timedelta) -> None:
    host, port, prefix = _store_address(store)
    ours, theirs = socket.socketpair()
    helper = subprocess.Popen(
        [sys.executable, "-m", "ember.distributed._pmi", str(theirs.fileno()), host, str(port), prefix,
         str(world_size), str(local_world_size), str(timeout.total_seconds())],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    theirs.close()
    _state["helper"] = (helper, ours)  # the socket must stay open for as long as MPI runs
    os.environ["PMI_FD"] = str(ours.fileno())


def init_mpi(store: Store, rank: int, world_size: int, timeout: timedelta) -> Any:
    """Initializes MPI for this rank of ``world_size`` (once per process); returns ``MPI.COMM_WORLD``."""
    MPI = mpi()
    if MPI.Is_initialized():
        world = MPI.COMM_WORLD
        if (world.Get_rank(), world.Get_size()) != (rank, world_size):
            raise RuntimeError(
                f"MPI already runs this process as rank {world.Get_rank()} of {world.Get_size()}; it cannot "
                f"start again as rank {rank} of {world_size} (MPI starts once per process)"
            )
        return world
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    local_rank = int(os.environ.get("LOCAL_RANK", rank % max(local_world, 1)))
    if world_size > 1 and "PMI_FD" not in os.environ:
        _serve_from_helper(store, world_size, local_world, timeout)
    if "PMI_FD" in os.environ:
        os.environ.update(
            PMI_RANK=str(rank),
            PMI_SIZE=str(world_size),
            MPI_LOCALNRANKS=str(local_world),
            MPI_LOCALRANKID=str(local_rank),
        )
    MPI.Init_thread(MPI.THREAD_MULTIPLE)
    world = MPI.COMM_WORLD
    if (world.Get_rank(), world.Get_size()) != (rank, world_size):
        raise RuntimeError(
            f"MPI started this process as rank {world.Get_rank()} of {world.Get_size()}, "
            f"but init_process_group asked for rank {rank} of {world_size}"
        )
    world.Barrier()  # every local rank has attached the shared-memory segments now
    unlink_shared_memory()
    return world


def unlink_shared_memory() -> None:
    """Removes the names of MPICH's shared-memory segments that this process has mapped."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if "/dev/shm/mpich_" in line}
    except OSError:
        return
    for path in paths:
        path = path.removesuffix(" (deleted)")
        with contextlib.suppress(OSError):
            os.unlink(path)
