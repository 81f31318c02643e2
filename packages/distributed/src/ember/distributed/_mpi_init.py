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
import time
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


def _host_of(store: Store) -> str:
    while isinstance(store, PrefixStore):
        store = store.underlying_store
    return store.host if isinstance(store, TCPStore) else "127.0.0.1"


def _serve_from_helper(store: Store, rank: int, world_size: int, local_world_size: int, timeout: timedelta) -> None:
    """Starts this rank's PMI helper; rank 0's also serves the helpers' store, whose address the
    ranks share through the job's store before anyone enters ``MPI_Init``."""
    ours, theirs = socket.socketpair()
    if rank == 0:
        host, port = _host_of(store), "0"
    else:
        host, _, port = store.get("pmi/helper_store").decode().rpartition(":")
    helper = subprocess.Popen(
        [sys.executable, "-m", "ember.distributed._pmi", str(theirs.fileno()), host, port, str(world_size),
         str(local_world_size), str(timeout.total_seconds())],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    theirs.close()
    if rank == 0:
        port = _read_line(ours, timeout)
        store.set("pmi/helper_store", f"{host}:{port}")
    if store.add("pmi/helpers_started", 1) == world_size:
        store.set("pmi/all_started", "1")
    store.wait(["pmi/all_started"])
    # Rank 0's store answers from a thread of rank 0, which stops inside MPI_Init: rank 0 goes in
    # only once every other rank has had its last answer from that store.
    if rank != 0:
        store.add("pmi/past_start", 1)
    else:
        while store.add("pmi/past_start", 0) < world_size - 1:
            time.sleep(0.001)
    _state["helper"] = (helper, ours)  # the socket must stay open for as long as MPI runs
    os.environ["PMI_FD"] = str(ours.fileno())


def _read_line(sock: socket.socket, timeout: timedelta) -> str:
    sock.settimeout(timeout.total_seconds())
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise RuntimeError("the MPI start-up helper process exited before serving its store")
        data += chunk
    sock.settimeout(None)
    return data.decode().strip()


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
        _serve_from_helper(store, rank, world_size, local_world, timeout)
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
