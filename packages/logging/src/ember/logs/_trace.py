"""The structured trace: ``EMBER_TRACE=DIR`` writes JSON lines, one file per process.

Each line is one event: its name, an ISO timestamp, pid, rank, a per-process sequence number and
the event's fields. A string field longer than ``PAYLOAD_INLINE_CHARS`` (a graph's code, a kernel)
goes to a side file under ``DIR/payloads/`` and the line keeps ``{"payload": path, "chars": n}``,
so the lines stay small enough to scan and grep.

The file is opened at the first event, and again after a fork (a child writes its own file). A
directory that cannot be written warns once and turns the trace off; the program goes on.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import structlog

from ember.logs._format import current_rank

PAYLOAD_INLINE_CHARS = 1024
PAYLOAD_DIR = "payloads"
RESERVED_FIELDS = frozenset({"event", "ts", "pid", "rank", "seq"})


def trace_file_stem(pid: int, rank: int | None) -> str:
    return f"ember_trace.pid{pid}" if rank is None else f"ember_trace.rank{rank}.pid{pid}"


class TraceWriter:
    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._rank: int | None = None
        self._seq = 0
        self._file = None
        self._logger: Any = None
        self.failed = False

    def emit(self, event: str, fields: dict[str, Any]) -> None:
        clash = RESERVED_FIELDS.intersection(fields)
        if clash:
            raise ValueError(f"trace_event({event!r}): field names {sorted(clash)} are reserved for the trace itself")
        with self._lock:
            if self.failed:
                return
            try:
                if self._pid != os.getpid():
                    self._open()
                self._seq += 1
                fields = {key: self._maybe_spill(key, value) for key, value in fields.items()}
                self._logger.msg(event, pid=self._pid, rank=self._rank, seq=self._seq, **fields)
            except OSError as error:
                self._fail(error)

    def close(self) -> None:
        with self._lock:
            if self._file is not None and self._pid == os.getpid():
                self._file.close()
            self._file = None
            self._pid = None

    def _open(self) -> None:
        # After a fork the parent's file object is shared; leave it to the parent.
        self._pid, self._rank, self._seq = os.getpid(), current_rank(), 0
        self._stem = trace_file_stem(self._pid, self._rank)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._file = open(self.directory / f"{self._stem}.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._logger = structlog.wrap_logger(
            structlog.WriteLogger(self._file),
            wrapper_class=structlog.BoundLogger,
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
                _event_first,
                structlog.processors.JSONRenderer(serializer=json.dumps, default=repr, sort_keys=False),
            ],
        )

    def _maybe_spill(self, key: str, value: Any) -> Any:
        if not isinstance(value, str) or len(value) <= PAYLOAD_INLINE_CHARS:
            return value
        relative = Path(PAYLOAD_DIR) / f"{self._stem}.{self._seq:06d}.{_safe(key)}.txt"
        target = self.directory / relative
        target.parent.mkdir(exist_ok=True)
        target.write_text(value, encoding="utf-8")
        return {"payload": relative.as_posix(), "chars": len(value)}

    def _fail(self, error: OSError) -> None:
        self.failed = True
        warnings.warn(
            f"EMBER_TRACE: cannot write the trace to {str(self.directory)!r} ({error}); tracing is off",
            RuntimeWarning,
            stacklevel=4,
        )


def _event_first(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    return {"event": event_dict.pop("event"), "ts": event_dict.pop("ts"), **event_dict}


def _safe(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in key)


class TraceHandler(logging.Handler):
    """Puts artifact records into the trace as ``artifact`` events."""

    def __init__(self, writer: TraceWriter, display_name) -> None:
        super().__init__()
        self.writer = writer
        self._display_name = display_name

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + logging.Formatter().formatException(record.exc_info)
            self.writer.emit(
                "artifact",
                {
                    "artifact": getattr(record, "artifact", None),
                    "logger": self._display_name(record.name),
                    "level": record.levelname,
                    "file": record.pathname,
                    "line": record.lineno,
                    "message": message,
                },
            )
        except Exception:
            self.handleError(record)
