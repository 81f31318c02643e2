"""Callgrind results: ``FunctionCount``, ``FunctionCounts``, ``CallgrindStats`` and ``CopyIfCallgrind``.

A Callgrind profile is a list of ``(instruction count, function)`` pairs. ``FunctionCounts`` holds one
such list and combines lists by function name: ``+``/``-`` merge two profiles (dropping functions whose
counts cancel), ``*`` scales, ``transform`` renames and merges, ``filter`` keeps. ``CallgrindStats``
holds the four lists of a measurement (inclusive and exclusive counts for the statement and for an
empty baseline statement) and answers the questions asked of them (totals, diffs, standardized
function names).

Ember builds and manipulates these results as PyTorch does, but does not drive valgrind itself:
``Timer.collect_callgrind`` checks for valgrind and then says that collection is not available.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ember.utils.benchmark.common import TaskSpec

__all__ = ["CallgrindStats", "CopyIfCallgrind", "FunctionCount", "FunctionCounts"]


class FunctionCount(NamedTuple):
    count: int  # type: ignore[assignment]  # shadows tuple.count, as PyTorch's field does
    function: str


def _default_linewidth() -> int:
    from ember.core.printing_layout import OPTIONS

    return OPTIONS.linewidth


def _shorten(fn: str, width: int) -> str:
    """``fn`` cut in the middle to ``width`` characters, the cut marked by `` ... ``."""
    if len(fn) <= width:
        return fn
    head = (width - 5) // 2
    return f"{fn[:head]} ... {fn[-(width - head - 5) :]}"


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class FunctionCounts:
    """A Callgrind profile: ``FunctionCount`` rows, most instructions first when built by an operation."""

    _data: tuple[FunctionCount, ...]
    inclusive: bool
    truncate_rows: bool = True
    # Tests pin the width; otherwise the tensor print options' linewidth applies.
    _linewidth: int | None = None

    def __iter__(self) -> Iterator[FunctionCount]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, item: Any) -> FunctionCount | FunctionCounts:
        selected = self._data[item]
        if isinstance(item, slice):
            # A slice is something the caller chose to see whole.
            return FunctionCounts(selected, self.inclusive, truncate_rows=False)
        return selected

    def __repr__(self) -> str:
        # Width of the count column, a minus sign included.
        count_width = max((len(str(c)) + (c < 0) for c, _ in self._data), default=0)
        linewidth = self._linewidth or _default_linewidth()
        fn_width = max(linewidth - count_width - 4, 40)
        rows = [f"  {c:>{count_width}}  {_shorten(fn, fn_width)}" for c, fn in self._data]
        if self.truncate_rows and len(rows) > 18:
            rows = [*rows[:9], "...".rjust(count_width + 2), *rows[-9:]]
        if not self.inclusive:
            rows += ["", f"Total: {self.sum()}"]
        return "\n".join([object.__repr__(self), *rows])

    def __add__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, 1)

    def __sub__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, -1)

    def __mul__(self, other: int | float) -> FunctionCounts:
        return self._from_dict({fn: int(c * other) for c, fn in self._data}, self.inclusive)

    def transform(self, map_fn: Callable[[str], str]) -> FunctionCounts:
        """Rename every function with ``map_fn``; functions that get the same name add up."""
        totals: collections.defaultdict[str, int] = collections.defaultdict(int)
        for c, fn in self._data:
            totals[map_fn(fn)] += c
        return self._from_dict(totals, self.inclusive)

    def filter(self, filter_fn: Callable[[str], bool]) -> FunctionCounts:
        """The rows whose function name passes ``filter_fn``, in their order."""
        return FunctionCounts(tuple(row for row in self._data if filter_fn(row.function)), self.inclusive)

    def sum(self) -> int:
        return sum(c for c, _ in self._data)

    def denoise(self) -> FunctionCounts:
        """Drop CPython's unicode-keyed dict lookups: name lookups whose counts vary from run to run."""
        return self.filter(lambda fn: "dictobject.c:lookdict_unicode" not in fn)

    def _merge(self, other: FunctionCounts, sign: int) -> FunctionCounts:
        if self.inclusive != other.inclusive:
            raise AssertionError("Cannot merge inclusive and exclusive counts.")
        totals: collections.defaultdict[str, int] = collections.defaultdict(int)
        for c, fn in self._data:
            totals[fn] += c
        for c, fn in other._data:
            totals[fn] += sign * c
        return self._from_dict(totals, self.inclusive)

    @staticmethod
    def _from_dict(totals: dict[str, int], inclusive: bool) -> FunctionCounts:
        # Zero counts vanish; rows sort by count, then name, largest first.
        rows = sorted((FunctionCount(c, fn) for fn, c in totals.items() if c), reverse=True)
        return FunctionCounts(tuple(rows), inclusive)


# Rewrites that make function names independent of where PyTorch and CPython were built, and of the
# shared library a symbol came from, so that profiles from different builds cancel when diffed.
_STANDARDIZE = (
    (r"^.+build/\.\./", "build/../"),
    (r"^.+/" + re.escape("build/aten/"), "build/aten/"),
    (r"^.+/" + re.escape("Python/"), "Python/"),
    (r"^.+/" + re.escape("Objects/"), "Objects/"),
    (r"\s\[.+\]$", ""),
)


def _standardize(counts: FunctionCounts) -> FunctionCounts:
    for pattern, replacement in _STANDARDIZE:
        counts = counts.transform(lambda fn, p=pattern, r=replacement: re.sub(p, r, fn))
    return counts


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class CallgrindStats:
    """The Callgrind counts of one measurement: the statement's and an empty baseline's."""

    task_spec: TaskSpec
    number_per_run: int
    built_with_debug_symbols: bool
    baseline_inclusive_stats: FunctionCounts
    baseline_exclusive_stats: FunctionCounts
    stmt_inclusive_stats: FunctionCounts
    stmt_exclusive_stats: FunctionCounts
    stmt_callgrind_out: str | None

    def __repr__(self) -> str:
        base = self.baseline_exclusive_stats
        threads = self.task_spec.num_threads
        lines = [
            object.__repr__(self),
            self.task_spec.summarize(),
            f"  {'':>25}All{'':>10}Noisy symbols removed",
            f"    Instructions: {self.counts(denoise=False):>12}{'':>15}{self.counts(denoise=True):>12}",
            f"    Baseline:     {base.sum():>12}{'':>15}{base.denoise().sum():>12}",
            f"{self.number_per_run} runs per measurement, {threads} thread{'s' if threads > 1 else ''}",
        ]
        text = "\n".join(lines)
        if not self.built_with_debug_symbols:
            text += (
                "\nWarning: PyTorch was not built with debug symbols."
                "\n         Source information may be limited. Rebuild with"
                "\n         REL_WITH_DEB_INFO=1 for more detailed results."
            )
        return text

    def stats(self, inclusive: bool = False) -> FunctionCounts:
        """The statement's counts (the baseline's are kept apart); ``inclusive`` counts callees' too."""
        return self.stmt_inclusive_stats if inclusive else self.stmt_exclusive_stats

    def counts(self, *, denoise: bool = False) -> int:
        """Total instructions of the statement (exclusive counts, baseline not subtracted)."""
        stats = self.stmt_exclusive_stats
        return (stats.denoise() if denoise else stats).sum()

    def delta(self, other: CallgrindStats, inclusive: bool = False) -> FunctionCounts:
        """Per-function change in instructions from ``other`` to this measurement."""
        return self.stats(inclusive=inclusive) - other.stats(inclusive=inclusive)

    def as_standardized(self) -> CallgrindStats:
        """The same stats with build paths and library names stripped from function names.

        The raw Callgrind output no longer matches the renamed functions, so ``stmt_callgrind_out`` is
        dropped.
        """
        return CallgrindStats(
            task_spec=self.task_spec,
            number_per_run=self.number_per_run,
            built_with_debug_symbols=self.built_with_debug_symbols,
            baseline_inclusive_stats=_standardize(self.baseline_inclusive_stats),
            baseline_exclusive_stats=_standardize(self.baseline_exclusive_stats),
            stmt_inclusive_stats=_standardize(self.stmt_inclusive_stats),
            stmt_exclusive_stats=_standardize(self.stmt_exclusive_stats),
            stmt_callgrind_out=None,
        )


class Serialization(enum.Enum):
    """How a ``CopyIfCallgrind`` value would cross into the valgrind process."""

    PICKLE = 0
    TORCH = 1
    TORCH_JIT = 2


def _allowed_types() -> dict[Serialization, tuple[type, ...]]:
    from ember import nn

    # Ember has no TorchScript, so no type travels as TORCH_JIT.
    return {
        Serialization.PICKLE: (str, bytes, bool, int, float, complex),
        Serialization.TORCH_JIT: (),
        Serialization.TORCH: (nn.Module,),
    }


class CopyIfCallgrind:
    """Mark a ``Timer`` global as one that ``collect_callgrind`` may replace with a serialized copy.

    Only builtin scalars, strings and bytes, and ``nn.Module``s are accepted.
    """

    def __init__(self, value: Any, *, setup: str | None = None) -> None:
        allowed = _allowed_types()
        for method, types in allowed.items():
            if isinstance(value, types):
                self._value: Any = value
                self._setup = setup
                self._serialization = method
                return
        names = "\n".join(t.__name__ for types in allowed.values() for t in types)
        raise ValueError(
            f"Unsupported type: {type(value)}\n"
            "`collect_callgrind` restricts globals to the following types:\n"
            f"{textwrap.indent(names, '  ')}"
        )

    @property
    def value(self) -> Any:
        return self._value

    @property
    def setup(self) -> str | None:
        return self._setup

    @property
    def serialization(self) -> Serialization:
        return self._serialization

    @staticmethod
    def unwrap_all(globals: dict[str, Any]) -> dict[str, Any]:
        """``globals`` with each ``CopyIfCallgrind`` replaced by its value."""
        return {k: v.value if isinstance(v, CopyIfCallgrind) else v for k, v in globals.items()}
