"""What AOT autograd logs: the joint graph (artifact ``aot_joint_graph``), the forward, backward
and inference graphs with the user's lines (artifact ``aot_graphs``); the partitioner's count of
saved tensors goes to the ``aot`` component at INFO."""

from __future__ import annotations

from ember.fx.graph_module import GraphModule
from ember.logs import get_artifact_logger

_loggers = {name: get_artifact_logger("ember.aot", name) for name in ("aot_graphs", "aot_joint_graph")}


def log_graph(kind: str, name: str, gm: GraphModule, artifact: str = "aot_graphs") -> None:
    logger = _loggers[artifact]
    if logger.isEnabledFor(20):
        code = gm.print_readable(print_output=False, include_stride=True, include_device=True)
        logger.info("AOT %s of %s:\n%s", kind, name, code)


def graphs_logged() -> bool:
    """Whether the logs ask for AOT autograd's graphs (a program from the disk cache has none to show)."""
    return any(logger.isEnabledFor(20) for logger in _loggers.values())
