"""The logs of graph capture, declared in one place.

The component ``dynamo`` (``EMBER_LOGS=dynamo``: one INFO line per compiled frame with its time;
``+dynamo`` for DEBUG) and the artifacts ``bytecode``, ``graph``, ``graph_code``, ``graph_breaks``,
``guards``, ``recompiles`` and ``dynamic`` (which sizes became symbolic, and why), declared with the
others in ``ember.logs``'s registry.
"""

from __future__ import annotations

import logging

from ember.logs import get_artifact_logger

ARTIFACTS = ("bytecode", "graph", "graph_code", "graph_breaks", "guards", "recompiles", "dynamic")

log = logging.getLogger("ember.dynamo")
bytecode_log = get_artifact_logger("ember.dynamo", "bytecode")
graph_log = get_artifact_logger("ember.dynamo", "graph")
graph_code_log = get_artifact_logger("ember.dynamo", "graph_code")
graph_breaks_log = get_artifact_logger("ember.dynamo", "graph_breaks")
guards_log = get_artifact_logger("ember.dynamo", "guards")
recompiles_log = get_artifact_logger("ember.dynamo", "recompiles")
dynamic_log = get_artifact_logger("ember.dynamo", "dynamic")


def artifact_logger(name: str) -> logging.Logger:
    """The logger of one of ``ARTIFACTS`` (an unknown name raises, as the registry does)."""
    if name not in ARTIFACTS:
        raise ValueError(f"ember.dynamo logs no artifact {name!r}; its artifacts: {', '.join(ARTIFACTS)}")
    return get_artifact_logger("ember.dynamo", name)
