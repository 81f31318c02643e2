"""The registry of log components and artifacts.

A *component* is a short name that users type (``dynamo``) bound to one or more stdlib logger
names (``ember.dynamo``); giving it a level sets the level of those loggers, and so of every module
logger below them. An *artifact* is a named kind of record (``graph_code``) that any module emits
through its own artifact logger; an artifact is on or off, never levelled.

The registry only knows names. Which loggers are configured how lives in ``_state``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

# Names that the EMBER_LOGS grammar reserves for itself.
RESERVED = frozenset({"all", "help", "spec", "modules"})

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUALIFIED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def is_qualified_name(name: str) -> bool:
    return _QUALIFIED.fullmatch(name) is not None


@dataclass(frozen=True)
class Component:
    name: str
    description: str
    loggers: tuple[str, ...]


@dataclass(frozen=True)
class Artifact:
    name: str
    description: str
    off_by_default: bool


class Registry:
    def __init__(self) -> None:
        self.components: dict[str, Component] = {}
        self.artifacts: dict[str, Artifact] = {}

    def add_component(self, name: str, description: str, loggers: list[str] | tuple[str, ...]) -> Component:
        self._check_new_name(name)
        loggers = tuple(loggers)
        if not loggers:
            raise ValueError(f"component {name!r} needs at least one logger name")
        for qname in loggers:
            if not is_qualified_name(qname):
                raise ValueError(f"component {name!r}: {qname!r} is not a dotted logger name")
        component = Component(name, description, loggers)
        return self._insert(self.components, component, "component")

    def add_artifact(self, name: str, description: str, off_by_default: bool) -> Artifact:
        self._check_new_name(name)
        artifact = Artifact(name, description, bool(off_by_default))
        return self._insert(self.artifacts, artifact, "artifact")

    def _check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise ValueError(f"log name {name!r} must be a Python identifier")
        if name in RESERVED:
            raise ValueError(f"log name {name!r} is reserved by the EMBER_LOGS grammar")

    def _insert(self, table: dict, entry, kind: str):
        other_table = self.artifacts if table is self.components else self.components
        if entry.name in other_table:
            other = "artifact" if kind == "component" else "component"
            raise ValueError(f"{kind} {entry.name!r}: the name is already an {other}")
        existing = table.get(entry.name)
        if existing is not None and existing != entry:
            raise ValueError(f"{kind} {entry.name!r} is already registered differently: {existing}")
        table[entry.name] = entry
        return entry

    # -- lookups ---------------------------------------------------------------------------

    def component_loggers(self) -> list[str]:
        return [qname for c in self.components.values() for qname in c.loggers]

    def owning_logger(self, qname: str) -> str | None:
        """The registered component logger that ``qname`` lies under (the longest match)."""
        best = None
        for root in self.component_loggers():
            if (qname == root or qname.startswith(root + ".")) and (best is None or len(root) > len(best)):
                best = root
        return best

    def unknown(self, name: str, where: str) -> ValueError:
        known = ["all", *self.components, *self.artifacts]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return ValueError(
            f"{where}: unknown log name {name!r}{hint} (EMBER_LOGS=help lists every component and artifact)"
        )

    def help_text(self) -> str:
        width = max([len(n) for n in [*self.components, *self.artifacts, "all"]]) + 2
        lines = ["Components (a level each: +name is DEBUG, name is INFO, -name is ERROR):"]
        lines.append(f"  {'all':<{width}}every component below")
        for c in self.components.values():
            lines.append(f"  {c.name:<{width}}{c.description} [{', '.join(c.loggers)}]")
        lines.append("")
        lines.append("Artifacts (on when named; '*' marks those that +component does not turn on):")
        for a in self.artifacts.values():
            mark = "*" if a.off_by_default else " "
            lines.append(f" {mark}{a.name:<{width}}{a.description}")
        lines.append("")
        lines.append("Qualified module names set one module's logger: +ember.inductor.codegen")
        lines.append('Examples: EMBER_LOGS="+dynamo,graph_code"  EMBER_LOGS="all,-inductor"  EMBER_LOGS=help')
        return "\n".join(lines)
