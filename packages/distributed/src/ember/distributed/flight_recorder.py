"""The Flight Recorder: every rank remembers its last collectives, to explain a hang after the fact.

Each collective appends one entry to a ring buffer (``EMBER_FR_BUFFER_SIZE`` entries, 2000 by default,
``0`` turns it off): op, group, sequence number, sizes and dtypes, state, timestamps, and the Python
stack as code objects and line numbers (formatted only when dumped, so recording stays cheap).
The buffer is written, one JSON file per rank (``rank_N.json``), on a collective's timeout, on
``SIGUSR1`` (and on ``SIGTERM`` under ``ember run``, which stops the other ranks that way when one
fails), and on ``dump()``; into ``EMBER_FR_DUMP_DIR``, else the ``EMBER_TRACE`` directory, else a
directory under the system's temporary directory named after the job. ``ember fr analyze DIR``
reads the files and names the rank that never joined a collective, or the ranks that disagree.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["dump", "dump_dir", "recorder"]

_FRAMES = 24


class Entry:
    __slots__ = (
        "frames",
        "input_dtypes",
        "input_sizes",
        "op",
        "output_dtypes",
        "output_sizes",
        "p2p_seq",
        "pg_desc",
        "pg_name",
        "record_id",
        "seq",
        "state",
        "time_completed_ns",
        "time_created_ns",
    )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__ if name != "frames"}
        out["frames"] = _format_frames(self.frames)
        return out

    def complete(self) -> None:
        self.state = "completed"
        self.time_completed_ns = time.time_ns()


def _capture_frames(depth: int) -> list[tuple[Any, int]]:
    frames = []
    frame = sys._getframe(depth)
    while frame is not None and len(frames) < _FRAMES:
        frames.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return frames


def _format_frames(frames: list[tuple[Any, int]]) -> list[dict[str, Any]]:
    return [{"file": code.co_filename, "line": line, "name": code.co_name} for code, line in frames]


class FlightRecorder:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: collections.deque[Entry] = collections.deque(maxlen=max(capacity, 1))
        self.next_id = 0
        self.groups: dict[str, dict[str, Any]] = {}
        self.rank = 0
        self.world_size = 1
        self.job = str(os.getpid())

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def record(
        self, pg_name: str, pg_desc: str, seq: int, p2p_seq: int, op: str, inputs: list[Any], outputs: list[Any]
    ) -> Entry:
        entry = Entry()
        entry.record_id = self.next_id
        self.next_id += 1
        entry.pg_name, entry.pg_desc, entry.seq, entry.p2p_seq, entry.op = pg_name, pg_desc, seq, p2p_seq, op
        entry.input_sizes = [list(t.shape) for t in inputs]
        entry.input_dtypes = [t.dtype.name for t in inputs]
        entry.output_sizes = [list(t.shape) for t in outputs]
        entry.output_dtypes = [t.dtype.name for t in outputs]
        entry.state = "scheduled"
        entry.time_created_ns = time.time_ns()
        entry.time_completed_ns = None
        entry.frames = _capture_frames(4)  # from the caller of the public collective on
        if self.enabled:
            self.entries.append(entry)
        return entry

    def snapshot(self, reason: str) -> dict[str, Any]:
        main = sys._current_frames().get(threading.main_thread().ident or 0)
        stack = []
        if main is not None:
            frame = main
            while frame is not None and len(stack) < _FRAMES:
                stack.append((frame.f_code, frame.f_lineno))
                frame = frame.f_back
        return {
            "version": 1,
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": os.getpid(),
            "reason": reason,
            "dumped_at_ns": time.time_ns(),
            "groups": self.groups,
            "stack": _format_frames(stack),
            "entries": [entry.to_json() for entry in list(self.entries)],
        }


recorder = FlightRecorder(int(os.environ.get("EMBER_FR_BUFFER_SIZE", "2000")))


def dump_dir() -> Path:
    """Where dumps go: ``EMBER_FR_DUMP_DIR``, else ``EMBER_TRACE``, else a temporary directory of the job."""
    for variable in ("EMBER_FR_DUMP_DIR", "EMBER_TRACE"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / f"ember-fr-{recorder.job}"


def dump(path: str | os.PathLike[str] | None = None, reason: str = "dump() called") -> Path:
    """Writes this rank's Flight Recorder buffer as JSON; returns the file's path."""
    directory = Path(path) if path is not None else dump_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"rank_{recorder.rank}.json"
    temporary = target.with_suffix(f".tmp{os.getpid()}")
    temporary.write_text(json.dumps(recorder.snapshot(reason)))
    os.replace(temporary, target)
    return target


def _on_signal(signum: int, frame: Any) -> None:
    try:
        dump(reason=f"signal {signal.Signals(signum).name}")
    except OSError as error:
        print(f"[rank{recorder.rank}]: flight recorder dump failed: {error}", file=sys.stderr)
    if signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def install_signal_handlers(terminate_too: bool) -> None:
    """Dump on ``SIGUSR1`` (and ``SIGTERM`` when asked), where the program has not claimed them."""
    if threading.current_thread() is not threading.main_thread():
        return
    wanted = [signal.SIGUSR1] + ([signal.SIGTERM] if terminate_too else [])
    for signum in wanted:
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, _on_signal)
