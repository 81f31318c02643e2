"""``ember trace report DIR``: one self-contained HTML page for an EMBER_TRACE directory.

The page has a summary (events by name, one column per process) and, per process, the events
grouped by name (artifact records by artifact), each group folded, each large payload readable in
place. Lines that are not JSON are counted and shown, never fatal: a trace is often read after a
crash cut its last line short.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; margin: 0; }
summary { cursor: pointer; } .bad { color: #a00; } .field { color: #555; }
"""


@dataclass
class TraceFile:
    name: str
    events: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0

    @property
    def title(self) -> str:
        first = self.events[0] if self.events else {}
        rank = first.get("rank")
        where = f"rank {rank}, pid {first.get('pid')}" if rank is not None else f"pid {first.get('pid')}"
        return f"{where} ({self.name})"


def group_key(event: dict[str, Any]) -> str:
    name = str(event.get("event"))
    return f"artifact:{event.get('artifact')}" if name == "artifact" else name


def load_trace(directory: str | Path) -> list[TraceFile]:
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"no trace directory at {str(directory)!r}")
    files = []
    for path in sorted(directory.glob("*.jsonl")):
        trace = TraceFile(path.name)
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                trace.bad_lines += 1
                continue
            if isinstance(event, dict):
                trace.events.append(event)
            else:
                trace.bad_lines += 1
        files.append(trace)
    return files


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """Write the report for ``directory`` to ``out`` (default ``DIR/index.html``) and return its path."""
    directory = Path(directory)
    files = load_trace(directory)
    out = Path(out) if out is not None else directory / "index.html"
    out.write_text(render(directory, files), encoding="utf-8")
    return out


def render(directory: Path, files: list[TraceFile]) -> str:
    total = sum(len(f.events) for f in files)
    parts = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>Ember trace: {escape(str(directory))}</title><style>{_STYLE}</style></head><body>",
        "<h1>Ember trace</h1>",
        f'<p id="totals">{total} events from {len(files)} processes in <code>{escape(str(directory))}</code></p>',
        _summary(files),
    ]
    for index, trace in enumerate(files):
        parts.append(_process_section(directory, index, trace))
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary(files: list[TraceFile]) -> str:
    counts = [Counter(group_key(e) for e in f.events) for f in files]
    keys = sorted(set().union(*counts)) if counts else []
    head = "".join(f"<th>{escape(f.title)}</th>" for f in files)
    rows = [f'<table id="summary"><tr><th>event</th>{head}<th>total</th></tr>']
    for key in keys:
        cells = "".join(f"<td>{c[key]}</td>" for c in counts)
        rows.append(
            f'<tr data-event="{escape(key)}"><td>{escape(key)}</td>{cells}<td>{sum(c[key] for c in counts)}</td></tr>'
        )
    rows.append("</table>")
    return "\n".join(rows)


def _process_section(directory: Path, index: int, trace: TraceFile) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in trace.events:
        groups[group_key(event)].append(event)
    parts = [f'<section class="process" id="process-{index}" data-file="{escape(trace.name)}">']
    parts.append(f"<h2>{escape(trace.title)}</h2>")
    if trace.bad_lines:
        parts.append(f'<p class="bad">{trace.bad_lines} lines could not be read as JSON events</p>')
    for key in sorted(groups):
        events = groups[key]
        parts.append(
            f'<details class="group" data-event="{escape(key)}"><summary>{escape(key)} ({len(events)})</summary>'
        )
        parts.append("<table><tr><th>seq</th><th>time</th><th>fields</th></tr>")
        for event in events:
            parts.append(_event_row(directory, event))
        parts.append("</table></details>")
    parts.append("</section>")
    return "\n".join(parts)


def _event_row(directory: Path, event: dict[str, Any]) -> str:
    fields = []
    for key, value in event.items():
        if key in ("event", "ts", "seq", "pid", "rank"):
            continue
        fields.append(f'<div><span class="field">{escape(key)}</span>: {_value(directory, key, value)}</div>')
    seq = escape(str(event.get("seq", "")))
    return f'<tr class="event" data-seq="{seq}"><td>{seq}</td><td>{escape(str(event.get("ts", "")))}</td><td>{"".join(fields)}</td></tr>'


def _value(directory: Path, key: str, value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"payload", "chars"}:
        path = directory / str(value["payload"])
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return f'<span class="bad">payload {escape(str(value["payload"]))} is missing</span>'
        label = f"{escape(key)}: {value['chars']} characters ({escape(str(value['payload']))})"
        return f'<details class="payload" data-field="{escape(key)}"><summary>{label}</summary><pre>{escape(text)}</pre></details>'
    if isinstance(value, str) and "\n" in value:
        return f"<pre>{escape(value)}</pre>"
    return escape(value if isinstance(value, str) else json.dumps(value))
