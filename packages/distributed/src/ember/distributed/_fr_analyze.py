"""``ember fr analyze DIR``: read every rank's Flight Recorder dump and say what went wrong.

For each group, collective ``N`` should appear on every rank of the group with the same op, sizes and
dtypes. The first ``N`` where that fails names the culprit: the ranks that never entered it (and
where each of them was instead: the innermost frame of its stack when it dumped that is not in
``ember.distributed``, else its last collective), or the ranks whose op, sizes or dtypes disagree.
A collective that every rank entered but some did not finish is reported too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["analyze"]

_OURS = ("/ember/distributed/", "<frozen ", "/threading.py", "/runpy.py")


def _user_frame(frames: list[dict[str, Any]]) -> str | None:
    for frame in frames:
        if not any(part in frame["file"] for part in _OURS):
            return f"{frame['file']}:{frame['line']} in {frame['name']}"
    return None


def _load(directory: Path) -> dict[int, dict[str, Any]]:
    dumps = {}
    for path in sorted(directory.glob("rank_*.json")):
        data = json.loads(path.read_text())
        dumps[int(data["rank"])] = data
    return dumps


def _signature(entry: dict[str, Any]) -> str:
    return json.dumps([entry["op"], entry["input_sizes"], entry["input_dtypes"]])


def analyze(directory: Path) -> tuple[str, bool]:
    """The report, and whether it found a culprit."""
    dumps = _load(directory)
    if not dumps:
        return f"no Flight Recorder dumps (rank_N.json) in {directory}", False
    lines = [f"Flight Recorder dumps of {len(dumps)} rank(s) in {directory}"]
    world = max(d.get("world_size", 1) for d in dumps.values())
    absent = sorted(set(range(world)) - set(dumps))
    if absent:
        lines.append(f"no dump from rank(s) {absent}")
    groups: dict[str, list[int]] = {}
    for data in dumps.values():
        for name, info in data.get("groups", {}).items():
            groups.setdefault(name, info["ranks"])
    found = False
    for name, ranks in sorted(groups.items()):
        problem = _group_problem(name, [r for r in ranks if r in dumps], dumps)
        if problem:
            lines.extend(problem)
            found = True
            break
    if not found:
        lines.append("every rank entered the same collectives with the same ops and sizes; no culprit found")
    return "\n".join(lines), found


def _group_problem(name: str, ranks: list[int], dumps: dict[int, dict[str, Any]]) -> list[str]:
    by_rank = {r: {e["seq"]: e for e in dumps[r]["entries"] if e["pg_name"] == name and e["op"] not in ("send", "recv")}
               for r in ranks}  # fmt: skip
    seqs = sorted({seq for entries in by_rank.values() for seq in entries})
    oldest = max((min(entries) for entries in by_rank.values() if entries), default=0)  # older ones rolled out
    for seq in seqs:
        if seq < oldest:
            continue
        present = {r: by_rank[r][seq] for r in ranks if seq in by_rank[r]}
        missing = [r for r in ranks if seq not in by_rank[r]]
        some = next(iter(present.values()))
        where = f"{some['op']} #{seq} of group {name}"
        if missing:
            out = [f"CULPRIT: rank(s) {missing} never entered {where}; ranks {sorted(present)} did"]
            for r in missing:
                out.append(f"  rank {r} was at {_whereabouts(dumps[r], by_rank[r])}")
            frame = _user_frame(some["frames"])
            if frame:
                out.append(f"  the others called it from {frame}")
            return out
        signatures: dict[str, list[int]] = {}
        for r, entry in present.items():
            signatures.setdefault(_signature(entry), []).append(r)
        if len(signatures) > 1:
            out = [f"CULPRIT: the ranks disagree on collective #{seq} of group {name}:"]
            for signature, members in sorted(signatures.items(), key=lambda kv: len(kv[1])):
                op, sizes, dtypes = json.loads(signature)
                frame = _user_frame(present[members[0]]["frames"]) or "?"
                out.append(f"  rank(s) {members}: {op} sizes={sizes} dtypes={dtypes} at {frame}")
            return out
        unfinished = [r for r, e in present.items() if e["state"] != "completed"]
        if (unfinished and len(unfinished) < len(present)) or (unfinished and seq == seqs[-1]):
            states = {r: present[r]["state"] for r in unfinished}
            return [f"{where} was entered by every rank but did not complete on {states}"]
    return []


def _whereabouts(dump: dict[str, Any], entries: dict[int, dict[str, Any]]) -> str:
    frame = _user_frame(dump.get("stack", []))
    last = entries[max(entries)] if entries else None
    after = f" (its last collective: {last['op']} #{last['seq']})" if last else " (it ran no collective of this group)"
    return (frame or "an unknown place: its dump has no stack outside ember.distributed") + after
