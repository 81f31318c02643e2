"""How a record looks, and which process prints it.

    [rank0]:[I1122 12:00:00.123 ember.dynamo convert.py:42] message

The level letter and date are glog's; the name is the component logger the record came under, so
that lines from one package line up; an artifact record adds ``[artifact]``. A multi-line message
repeats the prefix on every line, so grep finds every line of a graph. The rank prefix appears only
in a distributed run.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

# Launchers that start ranks say so in these variables: ours and torchrun (RANK), Open MPI, MPICH.
_RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")

_explicit_rank: int | None = None


def set_rank(rank: int | None) -> None:
    """Tell the logs this process's rank (process groups call this); None goes back to the environment."""
    global _explicit_rank
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 0):
        raise ValueError(f"set_rank: a rank is a non-negative int, got {rank!r}")
    _explicit_rank = rank


def current_rank() -> int | None:
    if _explicit_rank is not None:
        return _explicit_rank
    for variable in _RANK_VARIABLES:
        value = os.environ.get(variable)
        if value is not None and value.strip().isdigit():
            return int(value)
    return None


def parse_ranks(value: str) -> frozenset[int]:
    """``EMBER_LOGS_RANKS=0,3``."""
    try:
        ranks = frozenset(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"EMBER_LOGS_RANKS: expected comma-separated ranks like '0,3', got {value!r}") from None
    if not ranks or min(ranks) < 0:
        raise ValueError(f"EMBER_LOGS_RANKS: expected comma-separated non-negative ranks, got {value!r}")
    return ranks


class EmberFormatter(logging.Formatter):
    def __init__(self, display_name: Callable[[str], str]) -> None:
        super().__init__()
        self._display_name = display_name

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            message += "\n" + self.formatStack(record.stack_info)
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(record.created))
        millis = int(record.msecs)
        name = self._display_name(record.name)
        prefix = f"[{record.levelname[0]}{stamp}.{millis:03d} {name} {record.filename}:{record.lineno}]"
        artifact = getattr(record, "artifact", None)
        if artifact is not None:
            prefix += f" [{artifact}]"
        rank = current_rank()
        if rank is not None:
            prefix = f"[rank{rank}]:{prefix}"
        return "\n".join(f"{prefix} {line}" for line in message.split("\n"))


class RankFilter(logging.Filter):
    """Drop records in ranks that EMBER_LOGS_RANKS leaves out; a process with no rank prints."""

    def __init__(self, ranks: frozenset[int] | None) -> None:
        super().__init__()
        self.ranks = ranks

    def filter(self, record: logging.LogRecord) -> bool:
        if self.ranks is None:
            return True
        rank = current_rank()
        return rank is None or rank in self.ranks


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record, so redirection works."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass
