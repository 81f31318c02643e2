"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and join them.

When a process fails, the others are terminated and the parent raises: ``ProcessRaisedException``
with the child's traceback when ``fn`` raised, ``ProcessExitedException`` with the exit code or
signal when the process died otherwise. A child writes its traceback to a file the parent names,
since an exception object may not pickle.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """``fn`` raised in process ``error_index``; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """Process ``error_index`` ended without raising: a non-zero exit code or a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping the job
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds; True once every process has ended well. The first failure
        terminates the others and raises."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            alive = [p for p in self.processes if p.exitcode is None]
            for i, p in enumerate(self.processes):
                if p.exitcode not in (None, 0):
                    self._fail(i)
            if not alive:
                self._cleanup()
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=0.1)

    def _fail(self, index: int) -> None:
        failed = self.processes[index]
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
        text = ""
        if os.path.exists(self.error_files[index]):
            with open(self.error_files[index]) as f:
                text = f.read()
        self._cleanup()
        if text:
            msg = f"\n\n-- Process {index} terminated with the following error:\n{text}"
            raise ProcessRaisedException(msg, index, failed.pid)
        code = failed.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(
                f"process {index} terminated with signal {name}", index, failed.pid, code, name
            )
        raise ProcessExitedException(f"process {index} terminated with exit code {code}", index, failed.pid, code)

    def _cleanup(self) -> None:
        for path in self.error_files:
            if os.path.exists(path):
                os.unlink(path)


def start_processes(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; join them when
    ``join`` (raising on the first failure), else return their ``ProcessContext``."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="ember-spawn-", suffix=".err")
        os.close(fd)
        os.unlink(path)  # the child creates it only when it fails
        process = context.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(path)
    ctx = ProcessContext(processes, error_files)
    if not join:
        return ctx
    while not ctx.join():
        pass
    return None


def spawn(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> Any:
    """``start_processes`` as PyTorch's ``spawn``: the same arguments."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
