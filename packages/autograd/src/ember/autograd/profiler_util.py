"""What a profile holds and how it prints: ``FunctionEvent`` (one op call or ``record_function``
range), ``FunctionEventAvg`` (the events of one name summed), ``EventList`` (with
``key_averages()``, ``table()`` and ``export_chrome_trace()``). Times are in microseconds, as in
PyTorch's ``torch.autograd.profiler_util``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]


@dataclass(eq=False)
class FunctionEvent:
    """One recorded call: an op through the dispatcher (``aten::add``) or a user range."""

    id: int
    name: str
    thread: int
    start_us: float
    end_us: float
    input_shapes: list = field(default_factory=list)
    stack: list = field(default_factory=list)
    is_user_annotation: bool = False
    cpu_parent: FunctionEvent | None = None
    cpu_children: list = field(default_factory=list)
    sequence_nr: int = -1
    device_type: str = "CPU"
    count: int = 1

    @property
    def key(self) -> str:
        return self.name

    @property
    def time_range(self) -> tuple[float, float]:
        return (self.start_us, self.end_us)

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    # No device activity is recorded: Ember profiles the host.
    device_time_total = self_device_time_total = device_time = 0.0
    cuda_time_total = self_cuda_time_total = cuda_time = 0.0

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
            f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """The events of one key (a name, with ``group_by_input_shape`` a name and its input shapes)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes: list | None = None
        self.stack: list | None = None
        self.is_user_annotation = False
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise AssertionError(f"cannot average events of different keys: {self.key} and {other.key}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
            f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events, printable as PyTorch's profiler table."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args)
        # Averages grouped by input shape print an "Input Shapes" column.
        self.with_input_shapes = False

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One ``FunctionEventAvg`` per name (and per input shapes / stack when asked), in the order
        the keys first occur."""
        groups: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            key: tuple = (event.key,)
            if group_by_input_shape:
                key += (str(event.input_shapes),)
            if group_by_stack_n:
                key += tuple(event.stack[:group_by_stack_n])
            groups.setdefault(key, FunctionEventAvg()).add(event)
        out = EventList(groups.values())
        out.with_input_shapes = group_by_input_shape
        return out

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for event in self:
            total.count += event.count
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
        total.key = "Total"
        return total

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        return build_table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
            time_unit=time_unit,
            with_shapes=self.with_input_shapes,
        )

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): one complete event each."""
        events = [
            {
                "ph": "X",
                "cat": "user_annotation" if getattr(e, "is_user_annotation", False) else "cpu_op",
                "name": e.name,
                "pid": os.getpid(),
                "tid": e.thread,
                "ts": e.start_us,
                "dur": e.cpu_time_total,
                "args": {"Input Dims": e.input_shapes} if e.input_shapes else {},
            }
            for e in self
            if isinstance(e, FunctionEvent)
        ]
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


def _format_time(us: float, unit: str | None = None) -> str:
    if unit == "s" or (unit is None and us >= 1e6):
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and us >= 1e3):
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole > 0 else "0.00%"


_SORT_KEYS = {
    "cpu_time_total",
    "self_cpu_time_total",
    "cpu_time",
    "count",
    "device_time_total",
    "self_device_time_total",
    "cuda_time_total",
    "self_cuda_time_total",
}


def build_table(
    events: Iterable,
    sort_by: str | None = None,
    row_limit: int = 100,
    max_name_column_width: int = 55,
    max_shapes_column_width: int = 80,
    header: str | None = None,
    top_level_events_only: bool = False,
    time_unit: str | None = None,
    with_shapes: bool = False,
) -> str:
    """The profiler's table: one row per event (or averaged key), the busiest first when sorted."""
    rows = list(events)
    if not rows:
        return ""
    if top_level_events_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"sort_by must be one of {sorted(_SORT_KEYS)}, got {sort_by!r}")
        rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    # The whole profile's time: the sum of self times is each microsecond counted once.
    total = sum(e.self_cpu_time_total for e in events)
    names = [e.key if len(e.key) <= max_name_column_width else e.key[: max_name_column_width - 3] + "..." for e in rows]
    name_width = max(len("Name"), *(len(n) for n in names)) + 4
    columns = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [12] * len(columns)
    if with_shapes:
        columns.append("Input Shapes")
        widths.append(min(max_shapes_column_width, max(len(str(e.input_shapes)) for e in rows) + 2))
    line = "-" * name_width + "  " + "  ".join("-" * w for w in widths) + "  "

    def row(cells: list[str]) -> str:
        return (
            cells[0].rjust(name_width)
            + "  "
            + "  ".join(c.rjust(w) for c, w in zip(cells[1:], widths, strict=True))
            + "  "
        )

    out = []
    if header:
        out += ["=" * len(line), header]
    out += [line, row(["Name", *columns]), line]
    for name, e in list(zip(names, rows, strict=True))[: row_limit if row_limit and row_limit > 0 else None]:
        cells = [
            name,
            _percent(e.self_cpu_time_total, total),
            _format_time(e.self_cpu_time_total, time_unit),
            _percent(e.cpu_time_total, total),
            _format_time(e.cpu_time_total, time_unit),
            _format_time(e.cpu_time_total / max(e.count, 1), time_unit),
            str(e.count),
        ]
        if with_shapes:
            cells.append(str(e.input_shapes)[: max_shapes_column_width - 2])
        out.append(row(cells))
    out += [line, f"Self CPU time total: {_format_time(total, time_unit)}", ""]
    return "\n".join(out)
