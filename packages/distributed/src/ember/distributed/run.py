"""``ember run`` / ``python -m ember.distributed.run``: start the ranks of a job, as ``torchrun`` does.

    ember run --nproc-per-node 4 train.py --lr 0.1

Each rank is a child process with torchrun's variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``).
On one node the launcher also serves MPICH's start-up protocol to its ranks (``_pmi``, one socket
per rank in ``PMI_FD``), so ``init_process_group`` starts MPI without ``mpiexec``; with several
nodes each rank's ``init_process_group`` serves itself from the job's store.

When a rank fails, the launcher stops the others (``SIGTERM``, which makes them dump their Flight
Recorder, then ``SIGKILL`` after ``--stop-timeout`` seconds) and prints the failing rank's
traceback, each line prefixed with ``[rankN]:``; it exits with that rank's exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ember.distributed._pmi import PMIServer, job_environment
from ember.distributed.hash_store import HashStore

__all__ = ["get_args_parser", "main", "run"]


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember run", description="Start the ranks of a distributed job (torchrun's flags).", allow_abbrev=False
    )
    add = parser.add_argument
    add("--nnodes", type=str, default="1", help="number of nodes (an int; MIN:MAX ranges are not supported)")
    add("--nproc-per-node", "--nproc_per_node", type=str, default="1", help="ranks per node: an int, or 'cpu'")
    add("--node-rank", "--node_rank", type=int, default=0, help="this node's rank")
    add("--master-addr", "--master_addr", default="127.0.0.1", help="the address of rank 0's node")
    add("--master-port", "--master_port", type=int, default=None, help="rank 0's store port (default: a free one)")
    add("--rdzv-endpoint", "--rdzv_endpoint", default="", help="HOST:PORT of the store (same as master addr/port)")
    add("--rdzv-backend", "--rdzv_backend", default="static", help="only 'static' and 'c10d' (as static) are known")
    add("--rdzv-id", "--rdzv_id", default="", help="the job's id (default: a fresh one)")
    add("--standalone", action="store_true", help="one node, a free local port")
    add("--max-restarts", "--max_restarts", type=int, default=0, help="restarts are not supported (0)")
    add("--monitor-interval", "--monitor_interval", type=float, default=0.1, help="seconds between checks of ranks")
    add("--stop-timeout", type=float, default=5.0, help="seconds the other ranks get to stop after one fails")
    add("--run-path", "--run_path", action="store_true", help="run the script with runpy.run_path (the default)")
    add("-m", "--module", action="store_true", help="the script is a module name, as python -m")
    add("--no-python", "--no_python", action="store_true", help="run the script as a command, not with Python")
    add("training_script", help="the script (or module, or command) each rank runs")
    add("training_script_args", nargs=argparse.REMAINDER)
    return parser


@dataclass
class Rank:
    rank: int
    local_rank: int
    process: subprocess.Popen
    error_file: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        raise ValueError("--nproc-per-node gpu: this machine's ranks run on the CPU; give a number")
    return int(value)


def _command(args: argparse.Namespace) -> list[str]:
    if args.no_python:
        if args.module:
            raise ValueError("Don't use both the '--no-python' flag and the '--module' flag at the same time.")
        return [args.training_script, *args.training_script_args]
    flag = ["-m"] if args.module else []
    return [
        sys.executable,
        "-m",
        "ember.distributed._bootstrap",
        *flag,
        args.training_script,
        *args.training_script_args,
    ]


def run(args: argparse.Namespace) -> int:
    if args.max_restarts:
        raise ValueError("--max-restarts: restarting failed ranks is not supported; use 0")
    nnodes = int(args.nnodes.split(":")[0]) if ":" not in args.nnodes else _fixed_nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    if nproc <= 0 or nnodes <= 0:
        raise ValueError("--nnodes and --nproc-per-node must be positive")
    host, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, given = args.rdzv_endpoint.rpartition(":")
        host, port = host or args.rdzv_endpoint, int(given) if given.isdigit() else port
    if args.standalone:
        host, port, nnodes = "127.0.0.1", None, 1
    if port is None:
        if nnodes > 1:
            raise ValueError("several nodes need a fixed --master-port (or --rdzv-endpoint HOST:PORT)")
        port = _free_port()
    world = nnodes * nproc
    run_id = args.rdzv_id or uuid.uuid4().hex[:12]
    workdir = Path(tempfile.mkdtemp(prefix="ember-run-"))
    pmi = _LocalPMI(world, nproc) if nnodes == 1 else None
    ranks: list[Rank] = []
    base = dict(os.environ)
    base.update(
        MASTER_ADDR=host, MASTER_PORT=str(port), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(nproc),
        GROUP_RANK=str(args.node_rank), ROLE_WORLD_SIZE=str(world), ROLE_NAME="default", TORCHELASTIC_RUN_ID=run_id,
        EMBER_RUN_ID=run_id, TORCHELASTIC_RESTART_COUNT="0", TORCHELASTIC_MAX_RESTARTS="0",
    )  # fmt: skip
    if nproc > 1:
        base.setdefault("OMP_NUM_THREADS", "1")
    command = _command(args)
    try:
        for local_rank in range(nproc):
            rank = args.node_rank * nproc + local_rank
            env = dict(base, RANK=str(rank), LOCAL_RANK=str(local_rank), ROLE_RANK=str(rank))
            error_file = workdir / f"error_{rank}.json"
            env["EMBER_ERROR_FILE"] = str(error_file)
            fds: list[int] = []
            if pmi is not None:
                fd = pmi.socket_for(rank)
                env.update(job_environment(fd, rank, world, local_rank, nproc))
                fds.append(fd)
            process = subprocess.Popen(command, env=env, pass_fds=fds)
            if pmi is not None:
                pmi.started(rank)
            ranks.append(Rank(rank, local_rank, process, error_file))
        if pmi is not None:
            pmi.start()
        return _monitor(ranks, args.monitor_interval, args.stop_timeout)
    finally:
        for r in ranks:
            if r.process.poll() is None:
                r.process.kill()
                r.process.wait()
        if pmi is not None:
            pmi.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _fixed_nnodes(value: str) -> int:
    low, high = value.split(":")
    if low != high:
        raise ValueError(f"--nnodes {value}: elastic ranges are not supported; give one number")
    return int(low)


class _LocalPMI:
    """The PMI server of a one-node job, in a thread of the launcher (which is not a rank)."""

    def __init__(self, world: int, local_world: int) -> None:
        store = HashStore()
        self.server = PMIServer(store, world, local_world, PMIServer.new_kvsname(store))
        self.theirs: dict[int, socket.socket] = {}
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self._serve, name="ember-run-pmi", daemon=True)

    def socket_for(self, rank: int) -> int:
        ours, theirs = socket.socketpair()
        self.server.add(ours)
        self.theirs[rank] = theirs
        return theirs.fileno()

    def started(self, rank: int) -> None:
        self.theirs.pop(rank).close()  # the child has its copy

    def start(self) -> None:
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.server.serve(stop_fd=self.stop_r)
        except Exception as error:  # the ranks see their sockets close and fail in MPI_Init
            print(f"ember run: the MPI start-up server failed: {error}", file=sys.stderr)

    def stop(self) -> None:
        os.write(self.stop_w, b"x")
        self.thread.join(timeout=5)
        for sock in list(self.server.buffers):
            sock.close()
        os.close(self.stop_r)
        os.close(self.stop_w)


def _monitor(ranks: list[Rank], interval: float, stop_timeout: float) -> int:
    stopping = {"signal": 0}

    def forward(signum: int, frame: object) -> None:
        stopping["signal"] = signum

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            if stopping["signal"]:
                _stop(ranks, stop_timeout)
                return 128 + stopping["signal"]
            codes = [r.process.poll() for r in ranks]
            failed = [r for r, code in zip(ranks, codes, strict=True) if code not in (None, 0)]
            if failed:
                first = min(failed, key=lambda r: _failure_time(r))
                _stop(ranks, stop_timeout)
                _report(first, ranks)
                code = first.process.returncode
                return code if code > 0 else 128 - code
            if all(code == 0 for code in codes):
                return 0
            time.sleep(interval)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _failure_time(rank: Rank) -> float:
    try:
        return json.loads(rank.error_file.read_text())["timestamp"]
    except (OSError, ValueError, KeyError):
        return float("inf")


def _stop(ranks: list[Rank], stop_timeout: float) -> None:
    for r in ranks:
        if r.process.poll() is None:
            r.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + stop_timeout
    for r in ranks:
        remaining = max(deadline - time.monotonic(), 0)
        try:
            r.process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            r.process.kill()
            r.process.wait()


def _report(first: Rank, ranks: list[Rank]) -> None:
    code = first.process.returncode
    how = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
    lines = [
        f"ember run: rank {first.rank} (local rank {first.local_rank}, pid {first.process.pid}) failed with {how}; "
        f"stopped the other {len(ranks) - 1} rank(s)"
    ]
    try:
        trace = json.loads(first.error_file.read_text())["traceback"]
        lines += [f"[rank{first.rank}]: {line}" for line in trace.rstrip().splitlines()]
    except (OSError, ValueError, KeyError):
        lines.append(f"[rank{first.rank}]: (no Python traceback: the process ended without raising)")
    print("\n".join(lines), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    args = get_args_parser().parse_args(argv)
    try:
        code = run(args)
    except ValueError as error:
        print(f"ember run: {error}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
