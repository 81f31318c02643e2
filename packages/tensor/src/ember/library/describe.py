"""``describe(op)``: every place an op's rules live, as one printable report.

The core knows an op's schema, tags, kind, linked forms, meta function, kernels and decomposition.
Packages to its right add what they keep about it (the autograd package: its derivative, forward
rule and batching rule) by registering a ``describer``: ``fn(op) -> [(label, text), ...]``.

    python -m ember.ops describe aten.mm.default
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import types
from collections.abc import Callable
from pathlib import Path

from ember.core.dispatch import OpOverload, lookup

Describer = Callable[[OpOverload], list[tuple[str, str]]]
_describers: list[Describer] = []


def register_describer(describer: Describer) -> None:
    """Add what a package knows of ops to ``describe``'s report."""
    if describer not in _describers:
        _describers.append(describer)


def _short(path: str) -> str:
    for marker in (f"{os.sep}src{os.sep}", f"{os.sep}site-packages{os.sep}"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def where(fn: object) -> str:
    """``module.function (path:line)`` of a Python function, for reports."""
    bound = getattr(fn, "__self__", None)
    if isinstance(fn, types.BuiltinFunctionType) and isinstance(bound, tuple) and bound and callable(bound[0]):
        # A kernel of ember.core._fastpath: C bound to the Python kernel it hands other calls to.
        return f"{fn.__name__} in C (ember.core._fastpath), else {where(bound[0])}"
    fn = inspect.unwrap(fn) if callable(fn) else fn
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    try:
        path = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return name
    return f"{name} ({_short(path)}:{line})" if path else name


def resolve(op: OpOverload | str) -> OpOverload:
    """An op from itself, ``"aten::mm"``, ``"aten.mm.default"`` or ``"mm.default"``."""
    if isinstance(op, OpOverload):
        return op
    text = op.replace("::", ".")
    parts = text.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "aten"):
        parts = [*(["aten"] if parts[0] != "aten" else []), *parts, "default"]
    elif parts[0] != "aten" and len(parts) == 2:
        parts = ["aten", *parts]
    namespace, name, overload = parts[0], parts[1], parts[2] if len(parts) > 2 else "default"
    qualified = name if overload == "default" else f"{name}.{overload}"
    try:
        return lookup(f"{namespace}::{qualified}")
    except KeyError:
        raise ValueError(f"no op named {op!r}") from None


def rows(op: OpOverload | str) -> list[tuple[str, str]]:
    op = resolve(op)
    forms = ", ".join(f"{f}: {getattr(op, f)}" for f in ("functional", "inplace", "out") if getattr(op, f) is not None)
    kernels = [(f"kernel[{d}]", where(fn)) for d, fn in sorted(op._kernels.items()) if d != "meta"]
    out = [
        ("op", str(op)),
        ("schema", str(op.schema)),
        ("defined", f"{_short(op.defined_at[0])}:{op.defined_at[1]}" if op.defined_at else "(unknown)"),
        ("kind", op.kind),
        ("tags", ", ".join(sorted(op.tags)) or "(none)"),
        ("forms", forms or "(none)"),
        ("meta", where(op.meta) if op.meta is not None else "(none)"),
        *(kernels or [("kernels", "(none)")]),
        ("decomposition", where(op.decomposition) if op.decomposition is not None else "(none)"),
    ]
    for describer in _describers:
        out.extend(describer(op))
    out.append(("OpInfo", opinfo_entries(op)))
    return out


# The OpInfo tables are tests: in a source checkout their index by overload sits in the tensor
# package's tests folder (written by tests/op_calls.py, checked current by test_op_coverage.py).
OPINFO_INDEX = Path(__file__).resolve().parents[3] / "tests" / "opinfo_index.json"


@functools.cache
def _opinfo_index() -> dict | None:
    try:
        return json.loads(OPINFO_INDEX.read_text())
    except (OSError, ValueError):
        return None


def opinfo_entries(op: OpOverload) -> str:
    """The OpInfo entries whose samples reach ``op``: those calling it, then those reaching it through
    other ops; or where the tables are, when this is not a source checkout."""
    table = _opinfo_index()
    if table is None:
        return "(the index of the OpInfo tables, tests/opinfo_index.json, is in the source tree of ember-tensor)"
    entry = table.get(f"{op.namespace}::{op.name}.{op.overload}")
    if entry is None:
        return "(no sample reaches it: see NOT_SAMPLED in tests/test_op_coverage.py)"
    parts = [", ".join(entry["direct"]) if entry["direct"] else ""]
    if entry["nested"]:
        parts.append("through other ops: " + ", ".join(entry["nested"]))
    return "; ".join(p for p in parts if p)


def describe(op: OpOverload | str) -> str:
    """Every place the rules of ``op`` live: schema, tags, kind, forms, meta, kernels per device,
    decomposition, and what other packages registered (derivative, forward rule, batching rule)."""
    table = rows(op)
    width = max(len(label) for label, _ in table)
    return "\n".join(f"{label:<{width}}  {text}" for label, text in table)
