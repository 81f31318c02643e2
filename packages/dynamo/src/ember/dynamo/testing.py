"""Backends for tests: count what capture hands over, record the graphs (``torch._dynamo.testing``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.dynamo.backends import lookup_backend


def _op_count(gm: Any) -> int:
    return sum(1 for node in gm.graph.nodes if node.op in ("call_function", "call_method", "call_module"))


class CompileCounter:
    """A backend that counts graphs (``frame_count``) and their calls (``op_count``) and runs them as they are."""

    def __init__(self) -> None:
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.frame_count += 1
        self.op_count += _op_count(gm)
        return gm.forward

    def clear(self) -> None:
        self.frame_count = 0
        self.op_count = 0


class CompileCounterWithBackend:
    """As ``CompileCounter``, compiling each graph with ``backend`` and keeping the graphs."""

    def __init__(self, backend: str | Callable) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.backend = backend
        self.graphs: list[Any] = []

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.frame_count += 1
        self.op_count += _op_count(gm)
        self.graphs.append(gm)
        return lookup_backend(self.backend)(gm, example_inputs)

    def clear(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs.clear()


class EagerAndRecordGraphs:
    """A backend that keeps every graph it gets (``graphs``) and runs it as it is."""

    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.graphs.append(gm)
        return gm.forward
