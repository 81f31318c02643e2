"""MPICH's start-up protocol (PMI-1), served without ``mpiexec``.

When MPICH's ``MPI_Init`` finds ``PMI_FD``, ``PMI_RANK`` and ``PMI_SIZE`` in its environment, it asks
the process manager at the other end of that socket for its job's key-value space: one text line per
request (``cmd=get kvsname=... key=...``), one per answer. This module is that process manager for
the ranks of one job, backed by a rendezvous ``Store`` so that ranks on several hosts (each with its
own server) share one key space:

- ``put`` is kept locally and published to the store at the next ``barrier_in`` (as PMI asks: a put
  is visible to others only after a barrier);
- ``barrier_in`` completes once every rank of the job has entered it, counted in the store;
- ``get`` answers from the local puts, then the store; a key nobody put answers ``rc=-1``.

The server must not run in a thread of a rank: ``mpi4py`` holds the GIL during ``MPI_Init_thread``.
The launcher (``ember run``) serves its local ranks from its own process; a rank started some other
way (several nodes, or another launcher) starts one helper process with ``python -m
ember.distributed._pmi`` that serves it alone; rank 0's helper also serves the store the helpers share.
"""

from __future__ import annotations

import os
import selectors
import socket
import sys
import uuid
from datetime import timedelta

from ember.distributed.store import Store

__all__ = ["PMIServer", "job_environment", "process_mapping"]

_MAXES = "kvsname_max=256 keylen_max=256 vallen_max=1024"


def process_mapping(world_size: int, local_world_size: int) -> str:
    """PMI's block mapping: ``world_size / local_world_size`` hosts with ``local_world_size`` ranks each."""
    if local_world_size <= 0 or world_size % local_world_size:
        local_world_size = world_size
    return f"(vector,(0,{world_size // local_world_size},{local_world_size}))"


def job_environment(fd: int, rank: int, world_size: int, local_rank: int, local_world_size: int) -> dict[str, str]:
    """The variables a rank needs for ``MPI_Init`` to talk to a ``PMIServer`` over ``fd``."""
    return {
        "PMI_FD": str(fd),
        "PMI_RANK": str(rank),
        "PMI_SIZE": str(world_size),
        "MPI_LOCALNRANKS": str(local_world_size),
        "MPI_LOCALRANKID": str(local_rank),
    }


class PMIServer:
    """Serves PMI-1 to the ranks whose sockets it is given, with ``store`` as the shared key space.

    ``kvsname`` must be the same for every server of one job and unique across jobs (MPICH names
    its shared-memory segments after it); ``new_kvsname`` agrees on one through the store.
    """

    def __init__(self, store: Store, world_size: int, local_world_size: int, kvsname: str) -> None:
        self.store = store
        self.world_size = world_size
        self.kvsname = kvsname
        self.local: dict[str, str] = {"PMI_process_mapping": process_mapping(world_size, local_world_size)}
        self.pending: dict[str, str] = {}
        self.waiting: list[socket.socket] = []
        self.barriers = 0
        self.selector = selectors.DefaultSelector()
        self.buffers: dict[socket.socket, bytes] = {}

    @staticmethod
    def new_kvsname(store: Store) -> str:
        candidate = f"kvs_{os.getpid()}_{uuid.uuid4().hex[:12]}"
        return store.compare_set("pmi/kvsname", "", candidate).decode()

    def add(self, sock: socket.socket) -> None:
        self.buffers[sock] = b""
        self.selector.register(sock, selectors.EVENT_READ)

    def serve(self, stop_fd: int | None = None) -> None:
        """Answers requests until every rank has closed its socket (or ``stop_fd`` is readable)."""
        if stop_fd is not None:
            self.selector.register(stop_fd, selectors.EVENT_READ)
        while self.buffers:
            for key, _ in self.selector.select():
                if key.fileobj == stop_fd:
                    return
                self._read(key.fileobj)  # type: ignore[arg-type]

    def _read(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(sock)
            del self.buffers[sock]
            sock.close()
            return
        buffer = self.buffers[sock] + data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            self._answer(sock, line.decode())
        self.buffers[sock] = buffer

    def _answer(self, sock: socket.socket, line: str) -> None:
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        cmd = fields.get("cmd", "")
        if cmd == "init":
            reply = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"
        elif cmd == "get_maxes":
            reply = f"cmd=maxes rc=0 {_MAXES}"
        elif cmd == "get_appnum":
            reply = "cmd=appnum rc=0 appnum=0"
        elif cmd == "get_my_kvsname":
            reply = f"cmd=my_kvsname rc=0 kvsname={self.kvsname}"
        elif cmd == "get_universe_size":
            reply = f"cmd=universe_size rc=0 size={self.world_size}"
        elif cmd == "put":
            self.pending[fields["key"]] = fields.get("value", "")
            reply = "cmd=put_result rc=0"
        elif cmd == "get":
            reply = self._get(fields["key"])
        elif cmd == "barrier_in":
            self.waiting.append(sock)
            if len(self.waiting) == len(self.buffers):
                self._barrier()
            return
        elif cmd == "finalize":
            reply = "cmd=finalize_ack rc=0"
        elif cmd == "abort":
            reply = "cmd=abort_ack rc=0"
        else:
            reply = f"cmd={cmd or 'unknown'}_result rc=-1 msg=unsupported"
        sock.sendall(reply.encode() + b"\n")

    def _get(self, key: str) -> str:
        value = self.local.get(key, self.pending.get(key))
        if value is None and self.store.check([f"pmi/{self.kvsname}/kv/{key}"]):
            value = self.store.get(f"pmi/{self.kvsname}/kv/{key}").decode()
        if value is None:
            return "cmd=get_result rc=-1 msg=key_not_found"
        return f"cmd=get_result rc=0 value={value}"

    def _barrier(self) -> None:
        """All local ranks are in the barrier: publish their puts, then meet the other hosts' ranks."""
        prefix = f"pmi/{self.kvsname}"
        if self.pending:
            keys = list(self.pending)
            self.store.multi_set([f"{prefix}/kv/{k}" for k in keys], [self.pending[k] for k in keys])
            self.local.update(self.pending)
            self.pending.clear()
        self.barriers += 1
        arrived = self.store.add(f"{prefix}/barrier{self.barriers}", len(self.waiting))
        if arrived == self.world_size:
            self.store.set(f"{prefix}/barrier{self.barriers}/done", "1")
        else:
            self.store.wait([f"{prefix}/barrier{self.barriers}/done"])
        for sock in self.waiting:
            sock.sendall(b"cmd=barrier_out rc=0\n")
        self.waiting.clear()


def main(argv: list[str]) -> None:
    """``python -m ember.distributed._pmi FD HOST PORT WORLD LOCAL_WORLD TIMEOUT``: serve one rank.

    With ``PORT`` 0 this helper also serves the job's PMI store (a ``TCPStore`` master in this
    process, whose port it writes to the rank as the first line on ``FD``); the other ranks' helpers
    connect to it. The job's own store cannot serve start-up: rank 0 serves it from a thread, and
    that thread stops while rank 0 is inside ``MPI_Init``.
    """
    from ember.distributed.tcp_store import TCPStore

    fd, host, port, world, local_world, timeout_s = argv
    sock = socket.socket(fileno=int(fd))
    timeout = timedelta(seconds=float(timeout_s))
    if int(port) == 0:
        store = TCPStore(host, 0, is_master=True, wait_for_workers=False, timeout=timeout)
        sock.sendall(f"{store.port}\n".encode())
    else:
        store = TCPStore(host, int(port), timeout=timeout)
    server = PMIServer(store, int(world), int(local_world), PMIServer.new_kvsname(store))
    server.add(sock)
    try:
        server.serve()
    except Exception as error:  # the rank sees its socket close and fails MPI_Init with this reason
        print(f"ember.distributed: PMI server for the rank failed: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
