"""Log settings and the EMBER_LOGS grammar.

    EMBER_LOGS="+dynamo,-inductor,graph_code,+ember.fx.passes"

Entries are comma separated. A component takes a level: ``+name`` is DEBUG, ``-name`` is ERROR,
a bare name is INFO. ``all`` is every component; any component named explicitly overrides it,
wherever it stands. An artifact is turned on by naming it. A dotted name under a component's
logger sets that one module's level. Later entries override earlier ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ember.logs._registry import Registry, is_qualified_name

_LEVEL_NAMES = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING}
_LEVEL_NAMES |= {"ERROR": logging.ERROR, "CRITICAL": logging.CRITICAL}


@dataclass
class LogSettings:
    """What the user asked for, by name; ``_state`` turns it into logger levels and handlers."""

    all_level: int | None = None
    components: dict[str, int] = field(default_factory=dict)
    modules: dict[str, int] = field(default_factory=dict)
    artifacts: set[str] = field(default_factory=set)

    def component_level(self, name: str) -> int | None:
        return self.components.get(name, self.all_level)


def parse_spec(spec: str, registry: Registry, where: str = "EMBER_LOGS") -> LogSettings:
    settings = LogSettings()
    if not spec.strip():
        return settings
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            raise ValueError(f"{where}: empty entry in {spec!r} (entries are separated by single commas)")
        sign, name = (entry[0], entry[1:]) if entry[0] in "+-" else ("", entry)
        level = {"+": logging.DEBUG, "-": logging.ERROR, "": logging.INFO}[sign]
        if not is_qualified_name(name):
            raise ValueError(f"{where}: {entry!r} is not a log name (expected [+|-]name)")
        if name == "all":
            settings.all_level = level
        elif name in registry.components:
            settings.components[name] = level
        elif name in registry.artifacts:
            if sign == "-":
                raise ValueError(f"{where}: artifact {name!r} is turned on by naming it; '-{name}' means nothing")
            settings.artifacts.add(name)
        elif "." in name:
            settings.modules[_module_name(name, registry, where)] = level
        else:
            raise registry.unknown(name, where)
    return settings


def settings_from_kwargs(registry: Registry, kwargs: dict[str, object]) -> LogSettings:
    """``set_logs(spec=..., all=..., modules={...}, <component>=level, <artifact>=bool)``."""
    kwargs = dict(kwargs)
    spec = kwargs.pop("spec", None)
    if spec is not None and not isinstance(spec, str):
        raise TypeError(f"set_logs(spec=...) takes a string, got {type(spec).__name__}")
    settings = parse_spec(spec, registry, "set_logs(spec=...)") if spec else LogSettings()

    all_level = kwargs.pop("all", None)
    if all_level is not None:
        settings.all_level = to_level(all_level, "all")

    modules = kwargs.pop("modules", None) or {}
    if not isinstance(modules, dict):
        raise TypeError(f"set_logs(modules=...) takes a dict of module name to level, got {type(modules).__name__}")
    for qname, level in modules.items():
        if level is not None:
            settings.modules[_module_name(qname, registry, "set_logs(modules=...)")] = to_level(level, qname)

    for name, value in kwargs.items():
        if name in registry.components:
            if value is not None:
                settings.components[name] = to_level(value, name)
        elif name in registry.artifacts:
            if not isinstance(value, bool):
                raise ValueError(f"set_logs({name}=...): an artifact is on or off; pass True or False, not {value!r}")
            (settings.artifacts.add if value else settings.artifacts.discard)(name)
        else:
            raise registry.unknown(name, "set_logs")
    return settings


def to_level(value: object, name: str) -> int:
    """A stdlib level from an int level or a level's name (case-insensitive)."""
    if isinstance(value, str) and value.upper() in _LEVEL_NAMES:
        return _LEVEL_NAMES[value.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in _LEVEL_NAMES.values():
        return value
    known = ", ".join(f"logging.{n}" for n in _LEVEL_NAMES)
    raise ValueError(f"set_logs({name}=...): {value!r} is not a log level; use one of {known} or None")


def _module_name(qname: object, registry: Registry, where: str) -> str:
    if not isinstance(qname, str) or not is_qualified_name(qname):
        raise ValueError(f"{where}: {qname!r} is not a dotted module name")
    if registry.owning_logger(qname) is None:
        roots = ", ".join(registry.component_loggers())
        raise ValueError(
            f"{where}: {qname!r} is not under any registered component's logger ({roots}); "
            "register a component for it first"
        )
    return qname
