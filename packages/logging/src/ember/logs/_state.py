"""The one place where settings become stdlib logger levels and handlers.

Component loggers (``ember.dynamo``) get our handlers, do not propagate to the root logger, and
default to WARNING. Module loggers below them only get a level when asked for by name.

Artifact loggers (``ember.dynamo.convert.__graph_code``) are configured one by one: such a logger
is at DEBUG when its records go somewhere (printed, because the artifact is on or because its
module's component is at DEBUG and the artifact is not off by default; or traced), and otherwise at
a level above CRITICAL, so that ``log.debug("%s", graph)`` returns after one cached level check and
never formats its arguments. They never propagate: their handlers are set here, explicitly.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from functools import lru_cache
from typing import Any

from ember.logs._format import EmberFormatter, RankFilter, StderrHandler, parse_ranks
from ember.logs._registry import Registry
from ember.logs._spec import LogSettings, parse_spec, settings_from_kwargs
from ember.logs._trace import TraceHandler, TraceWriter

DISABLED = logging.CRITICAL + 10
_ARTIFACT_SUFFIX = ".__"

registry = Registry()
_settings = LogSettings()
_artifact_loggers: dict[str, str] = {}  # logger name -> artifact name
_leveled_modules: set[str] = set()
_lock = threading.RLock()


@lru_cache(maxsize=4096)
def _display_name(qname: str) -> str:
    base = qname.split(_ARTIFACT_SUFFIX, 1)[0]
    return registry.owning_logger(base) or base


_formatter = EmberFormatter(_display_name)
_rank_filter = RankFilter(None)
_console = StderrHandler()
_console.setFormatter(_formatter)
_console.addFilter(_rank_filter)
_outputs: list[logging.Handler] = [_console]
_our_handlers: weakref.WeakSet[logging.Handler] = weakref.WeakSet([_console])
_trace: TraceWriter | None = None
_trace_handler: TraceHandler | None = None


# -- registration ---------------------------------------------------------------------------------


def register_component(name: str, description: str, loggers: list[str]) -> None:
    """Declare a component: a name for EMBER_LOGS and set_logs bound to these logger names."""
    with _lock:
        registry.add_component(name, description, loggers)
        _display_name.cache_clear()
        _apply()


def register_artifact(name: str, description: str, off_by_default: bool = False) -> None:
    """Declare an artifact. ``off_by_default`` ones show only when named, not with ``+component``."""
    with _lock:
        registry.add_artifact(name, description, off_by_default)


def get_artifact_logger(module_name: str, artifact: str) -> logging.Logger:
    """A logger for ``artifact`` records of the module ``module_name`` (pass ``__name__``).

    Its records show only when the artifact is on; while it is off, a call returns before
    formatting anything.
    """
    if artifact not in registry.artifacts:
        raise registry.unknown(artifact, "get_artifact_logger")
    qname = f"{module_name}{_ARTIFACT_SUFFIX}{artifact}"
    logger = logging.getLogger(qname)
    with _lock:
        if qname not in _artifact_loggers:
            _artifact_loggers[qname] = artifact
            logger.addFilter(_ArtifactTag(artifact))
            _configure_artifact_logger(logger, artifact)
    return logger


class _ArtifactTag(logging.Filter):
    def __init__(self, artifact: str) -> None:
        super().__init__()
        self.artifact = artifact

    def filter(self, record: logging.LogRecord) -> bool:
        record.artifact = self.artifact
        return True


# -- settings -------------------------------------------------------------------------------------


def set_logs(**settings: Any) -> None:
    """Set which logs show; each call replaces the settings of the previous one.

    ``set_logs(dynamo=logging.DEBUG, graph_code=True)``: a component takes a level (an int or its
    name), an artifact takes a bool, ``all=level`` sets every component not named, ``modules=
    {"ember.inductor.codegen": logging.DEBUG}`` sets single modules, and ``spec="+dynamo,guards"``
    takes the EMBER_LOGS grammar (``spec="help"`` prints every name). ``set_logs()`` restores the
    defaults: WARNING everywhere, every artifact off.
    """
    global _settings
    spec = settings.get("spec")
    if isinstance(spec, str) and spec.strip() == "help":
        print(registry.help_text(), file=sys.stderr)
        settings = {k: v for k, v in settings.items() if k != "spec"}
    with _lock:
        new = settings_from_kwargs(registry, settings)
        _settings = new
        _apply()


def get_settings() -> LogSettings:
    return _settings


def is_artifact_enabled(artifact: str) -> bool:
    """Whether the artifact was turned on by name (records may also show through ``+component``)."""
    return artifact in _settings.artifacts


def set_output_file(path: str | os.PathLike | None) -> None:
    """Also write printed records to ``path`` (EMBER_LOGS_OUT); None stops that."""
    with _lock:
        for handler in _outputs[1:]:
            handler.close()
        del _outputs[1:]
        if path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            handler = logging.FileHandler(path, encoding="utf-8")
            handler.setFormatter(_formatter)
            handler.addFilter(_rank_filter)
            _outputs.append(handler)
            _our_handlers.add(handler)
        _apply()


def set_ranks(ranks: str | frozenset[int] | None) -> None:
    """Print only in these ranks (EMBER_LOGS_RANKS); None prints in every rank."""
    _rank_filter.ranks = parse_ranks(ranks) if isinstance(ranks, str) else ranks


def set_trace_dir(directory: str | os.PathLike | None) -> None:
    """Write the structured trace to ``directory`` (EMBER_TRACE); None turns the trace off."""
    global _trace, _trace_handler
    with _lock:
        if _trace is not None:
            _trace.close()
        _trace = TraceWriter(directory) if directory is not None else None
        _trace_handler = TraceHandler(_trace, _display_name) if _trace is not None else None
        if _trace_handler is not None:
            _our_handlers.add(_trace_handler)
        _apply()


def trace_event(name: str, /, **fields: Any) -> None:
    """Record an event in the structured trace; does nothing when EMBER_TRACE is not set."""
    trace = _trace
    if trace is not None:
        trace.emit(name, fields)


# -- applying settings to loggers ------------------------------------------------------------------


def _apply() -> None:
    for qname in _leveled_modules:
        logging.getLogger(qname).setLevel(logging.NOTSET)
    _leveled_modules.clear()

    for component in registry.components.values():
        level = _settings.component_level(component.name)
        for qname in component.loggers:
            logger = logging.getLogger(qname)
            logger.setLevel(logging.WARNING if level is None else level)
            logger.propagate = False
            _set_our_handlers(logger, _outputs)

    for qname, level in _settings.modules.items():
        logging.getLogger(qname).setLevel(level)
        _leveled_modules.add(qname)

    for qname, artifact in _artifact_loggers.items():
        _configure_artifact_logger(logging.getLogger(qname), artifact)


def _configure_artifact_logger(logger: logging.Logger, artifact: str) -> None:
    module_logger = logging.getLogger(logger.name.split(_ARTIFACT_SUFFIX, 1)[0])
    printed = artifact in _settings.artifacts or (
        not registry.artifacts[artifact].off_by_default and module_logger.getEffectiveLevel() <= logging.DEBUG
    )
    handlers: list[logging.Handler] = list(_outputs) if printed else []
    if _trace_handler is not None:
        handlers.append(_trace_handler)
    logger.propagate = False
    _set_our_handlers(logger, handlers)
    logger.setLevel(logging.DEBUG if handlers else DISABLED)


def _set_our_handlers(logger: logging.Logger, handlers: list[logging.Handler]) -> None:
    """Replace the handlers we put on ``logger``, leaving any the user added."""
    for handler in list(logger.handlers):
        if handler in _our_handlers:
            logger.removeHandler(handler)
    for handler in handlers:
        logger.addHandler(handler)


# -- environment -----------------------------------------------------------------------------------


def init_from_environment() -> None:
    """Read EMBER_LOGS, EMBER_LOGS_OUT, EMBER_LOGS_RANKS and EMBER_TRACE (at import)."""
    global _settings
    spec = os.environ.get("EMBER_LOGS", "")
    if spec.strip() == "help":
        print(registry.help_text(), file=sys.stderr)
        spec = ""
    _settings = parse_spec(spec, registry)
    set_ranks(os.environ.get("EMBER_LOGS_RANKS") or None)
    out = os.environ.get("EMBER_LOGS_OUT")
    if out:
        set_output_file(out)
    trace = os.environ.get("EMBER_TRACE")
    if trace:
        set_trace_dir(trace)
    _apply()
