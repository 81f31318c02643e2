"""What the tracers log: a line per traced graph on the ``fx`` component (``EMBER_LOGS=+fx``) and
the graph's code, with the user's line of each node, on the ``fx_graphs`` artifact."""

from __future__ import annotations

import logging
import time

from ember.logs import get_artifact_logger

log = logging.getLogger("ember.fx")
graphs_log = get_artifact_logger("ember.fx", "fx_graphs")


def log_traced(kind: str, name: str, gm, started: float) -> None:
    """Report ``gm``, made by ``kind`` (``symbolic_trace``, ``make_fx(symbolic)``) from ``name``."""
    if log.isEnabledFor(logging.DEBUG):
        nodes = len(gm.graph.nodes)
        log.debug("%s traced %s: %d nodes in %.1f ms", kind, name, nodes, (time.perf_counter() - started) * 1e3)
    if graphs_log.isEnabledFor(logging.INFO):
        code = gm.print_readable(print_output=False, include_stride=True, include_device=True)
        graphs_log.info("%s of %s:\n%s", kind, name, code)
