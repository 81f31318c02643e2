"""``TaskSpec`` (what was timed) and ``Measurement`` (the times and their statistics).

A measurement keeps the raw time of each run of ``number_per_run`` repetitions; ``times`` are per
repetition. Median and quartiles interpolate linearly, and the printed form is PyTorch's: the
task, the median (or the single time), the interquartile range when there are four runs or more,
and a warning when that range is over 10% (25%: "significant environmental influence") of the median.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def select_unit(t: float) -> tuple[str, float]:
    """The unit ('ns', 'us', 'ms' or 's') that shows ``t`` seconds with one to three integer digits."""
    exponent = math.floor(math.log10(t) / 3) if t > 0 else 0
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(exponent, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@dataclass(frozen=True)
class TaskSpec:
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" not in self.setup:
            return f"setup: {self.setup}"
        return f"setup:\n{textwrap.indent(self.setup, '  ')}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return round(x / scale) * scale


def unit_to_english(unit: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[unit]


def _quantile(sorted_values: list[float], q: float) -> float:
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass
class Measurement:
    """The result of a ``Timer`` run: ``raw_times`` of runs of ``number_per_run`` repetitions each."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None
    _sorted: list[float] = field(default_factory=list, repr=False)

    def _times_sorted(self) -> list[float]:
        if not self._sorted:
            self._sorted = sorted(self.times)
        return self._sorted

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return _quantile(self._times_sorted(), 0.5)

    @property
    def iqr(self) -> float:
        values = self._times_sorted()
        return _quantile(values, 0.75) - _quantile(values, 0.25)

    @property
    def significant_figures(self) -> int:
        """How many leading digits of the median its spread supports (1 to 4), for ``Compare``'s trimming.

        Only the middle half of the sorted times counts (the tails are skewed); the interval is
        1.645 standard errors of that half, and never under 25 ns (the clock's resolution).
        """
        values = self._times_sorted()
        n = len(values)
        middle = values[n // 4 : math.ceil(3 * n / 4)]
        interval = max(1.645 * statistics.pstdev(middle) / math.sqrt(len(middle)), 25e-9)
        return min(max(math.floor(math.log10(self.median / interval)), 1), 4)

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One measurement per task: the times of replicates, as times of one repetition each."""
        groups: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec) for spec, times in groups.items()]

    @property
    def as_row_name(self) -> str:
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def stmt(self) -> str:
        return self.task_spec.stmt

    @property
    def label(self) -> str | None:
        return self.task_spec.label

    @property
    def sub_label(self) -> str | None:
        return self.task_spec.sub_label

    @property
    def description(self) -> str | None:
        return self.task_spec.description

    @property
    def num_threads(self) -> int:
        return self.task_spec.num_threads

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def _warnings(self) -> list[str]:
        if len(self.times) < 4 or self.meets_confidence(_IQR_WARN_THRESHOLD):
            return []
        why = (
            "This suggests significant environmental influence."
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
            else "This could indicate system fluctuation."
        )
        relative = self.iqr / self.median * 100
        return [f"  WARNING: Interquartile range is {relative:.1f}% of the median measurement.\n           {why}"]

    def __repr__(self) -> str:
        values = self._times_sorted()
        n = len(values)
        unit, scale = select_unit(self.median)
        lines = [f"<{type(self).__module__}.{type(self).__qualname__} object at {hex(id(self))}>"]
        lines += self.task_spec.summarize().split("\n")
        lines.append(f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}")
        if n >= 4:
            p25, p75 = _quantile(values, 0.25) / scale, _quantile(values, 0.75) / scale
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25:.2f} to {p75:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {threads}"
        )
        lines += self._warnings()
        return "\n".join(lines)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in the order they first appear."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads (``ember.set_num_threads``), then restore the count."""
    import ember

    previous = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(previous)
