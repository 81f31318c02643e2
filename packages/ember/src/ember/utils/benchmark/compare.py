"""``Compare``: many measurements as one table per label, laid out as PyTorch's ``Compare`` lays them out.

Rows are tasks (``sub_label``, else ``stmt``) grouped by thread count, columns are ``description``s;
each cell is a median in the unit that suits the table's fastest result. Options: trim each column
to the digits its measurements support (``trim_significant_figures``), color cells against the best
of their column or row (``colorize``), and mark noisy cells with their spread (``highlight_warnings``).
A measurement without a description gets a column with an empty heading (PyTorch's fails on it).
"""

from __future__ import annotations

import enum
import math

from ember.utils.benchmark.common import Measurement, select_unit, trim_sigfig, unit_to_english

_BEST, _GOOD, _BAD, _VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
_BOLD, _END = "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


def _paint(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + text + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + text + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + text + _END * 2
    if value >= best * 2:
        return _BAD + text + _END * 2
    return text


class _Table:
    """One label's measurements laid out; ``render()`` gives the text."""

    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool) -> None:
        self.results, self.colorize, self.trim, self.highlight = results, colorize, trim, highlight
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(r.median for r in results))
        row_keys = _unique([(r.num_threads, r.env, r.as_row_name) for r in results])
        self.row_keys = sorted(row_keys, key=lambda key: key[:2])  # stable: tasks keep their order
        self.column_keys = _unique([r.description for r in results])
        self.cells: list[list[Measurement | None]] = [[None] * len(self.column_keys) for _ in self.row_keys]
        for r in results:
            i = self.row_keys.index((r.num_threads, r.env, r.as_row_name))
            self.cells[i][self.column_keys.index(r.description)] = r
        self.formats = [self._column_format([row[j] for row in self.cells]) for j in range(len(self.column_keys))]

    def _column_format(self, column: list[Measurement | None]) -> tuple[str, bool]:
        present = [m for m in column if m is not None]
        warn = self.highlight and any(m.has_warnings for m in present)
        digits = {id(m): math.ceil(math.log10(m.median / self.scale)) for m in present}
        whole = max(digits.values())
        decimals = min(max(m.significant_figures - digits[id(m)], 0) for m in present) if self.trim else 1
        width = whole + decimals + (1 if decimals else 0)
        return f"{{:>{width}.{decimals}f}}{{:>{7 if warn else 0}}}", warn

    def _cell(self, j: int, m: Measurement | None) -> str:
        template, warn = self.formats[j]
        if m is None:
            return " " * len(template.format(1.0, ""))
        value = m.median / self.scale
        if self.trim:
            value = trim_sigfig(value, m.significant_figures)
        spread = f" (! {m.iqr / m.median * 100:.0f}%)" if warn and m.has_warnings else ""
        return template.format(value, spread)

    def render(self) -> str:
        envs = {r.env for r in self.results}
        show_env = len(envs) > 1
        env_width = max(len(e) for e in envs) if show_env else 0
        header = ["", *("" if c is None else c for c in self.column_keys)]
        text_rows, separators, previous_threads, previous_env = [], [], None, ""
        for (threads, env, name), row in zip(self.row_keys, self.cells, strict=True):
            new_group = threads != previous_threads
            if new_group:
                previous_threads, previous_env = threads, ""
            env_text = f"({env})" if show_env and env != previous_env else ""
            previous_env = env
            text_rows.append(
                ["  " + env_text.ljust(env_width + 4) + name, *(self._cell(j, m) for j, m in enumerate(row))]
            )
            separators.append(threads if new_group else None)
        widths = [max(len(r[k]) for r in [header, *text_rows]) for k in range(len(header))]
        lines = ["  |  ".join(h.center(w) for h, w in zip(header, widths, strict=True))]
        overall = len(lines[0])
        for threads, text, row in zip(separators, text_rows, self.cells, strict=True):
            if threads is not None:
                lines.append(f"{threads} threads: ".ljust(overall, "-"))
            lines.append("  |  ".join(self._finish_row(text, widths, row)))
        title = f"[{(' ' + (self.label or '') + ' ').center(overall - 2, '-')}]"
        footer = f"Times are in {unit_to_english(self.unit)}s ({self.unit})."
        if self.highlight and any(r.has_warnings for r in self.results):
            footer += "\n(! XX%) Measurement has high variance, where XX is the IQR / median * 100."
        return "\n".join([title, *lines, "", footer]) + "\n"

    def _finish_row(self, text: list[str], widths: list[int], row: list[Measurement | None]) -> list[str]:
        out = [text[0].ljust(widths[0])]
        for j, (cell, width, m) in enumerate(zip(text[1:], widths[1:], row, strict=True)):
            cell = cell.center(width)
            best = None
            if self.colorize is Colorize.ROWWISE:
                best = min(r.median for r in row if r is not None)
            elif self.colorize is Colorize.COLUMNWISE:
                group = self._group_of(row)
                column = [r[j].median for r in group if r[j] is not None]
                best = min(column) if column else None
            if best is not None and m is not None:
                cell = _paint(cell, m.median, best)
            out.append(cell)
        return out

    def _group_of(self, row: list[Measurement | None]) -> list[list[Measurement | None]]:
        """The rows that share this row's thread count (columnwise colors compare within one)."""
        threads = self.row_keys[self.cells.index(row)][0]
        return [r for key, r in zip(self.row_keys, self.cells, strict=True) if key[0] == threads]


class Compare:
    """Print many ``Measurement``s as tables, one per label."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results: list[Measurement]) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        options = (self._colorize, self._trim_significant_figures, self._highlight_warnings)
        return "\n".join(_Table(group, *options).render() for group in by_label.values())
