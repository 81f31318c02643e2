"""Ember's logs: which components speak, which artifacts show, and the structured trace.

    EMBER_LOGS="+dynamo,graph_code" python train.py    # dynamo at DEBUG, graph code on
    EMBER_LOGS=help python -c "import ember.logs"      # every name, with its description

From code, ``set_logs(dynamo=logging.DEBUG, graph_code=True)`` does the same. Modules log with
``logging.getLogger(__name__)`` and, for artifacts, ``get_artifact_logger(__name__, "graph_code")``.
``EMBER_TRACE=DIR`` writes every ``trace_event`` and every artifact record as JSON lines, which
``ember trace report DIR`` turns into an HTML page.
"""

from ember.logs import registrations as _registrations  # noqa: F401  (declares every name)
from ember.logs._format import current_rank, set_rank
from ember.logs._state import (
    get_artifact_logger,
    get_settings,
    is_artifact_enabled,
    register_artifact,
    register_component,
    registry,
    set_logs,
    set_output_file,
    set_ranks,
    set_trace_dir,
    trace_event,
)
from ember.logs._state import init_from_environment as _init_from_environment

__all__ = [
    "current_rank",
    "get_artifact_logger",
    "get_settings",
    "help_text",
    "is_artifact_enabled",
    "register_artifact",
    "register_component",
    "set_logs",
    "set_output_file",
    "set_rank",
    "set_ranks",
    "set_trace_dir",
    "trace_event",
]


def help_text() -> str:
    """Every component and artifact with its description, as ``EMBER_LOGS=help`` prints it."""
    return registry.help_text()


_init_from_environment()
