"""``ember.accelerator.graphs``: ``Graph``, capture and replay of the accelerator's work, as
``torch.accelerator.Graph``. Without an accelerator it raises ``RuntimeError`` as PyTorch's CPU
build does; with one it wraps the device plugin's graph (``ember.cuda.CUDAGraph``), and a plugin
without graph capture is a ``NotImplementedError``."""

from __future__ import annotations

from typing import Any, Literal

import ember.accelerator as _accelerator

__all__ = ["Graph"]


class Graph:
    """A captured sequence of the accelerator's work; usable as ``with graph:`` to capture."""

    def __init__(
        self,
        keep_graph: bool = False,
        *,
        pool: tuple[int, int] | None = None,
        capture_error_mode: Literal["default", "global", "thread_local", "relaxed"] = "default",
    ) -> None:
        backend = _accelerator._require()
        graph_class = getattr(backend, "CUDAGraph", None)
        if graph_class is None:
            raise NotImplementedError("ember.accelerator.Graph: the accelerator's plugin offers no graph capture")
        self._graph = graph_class(keep_graph=keep_graph)
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode

    def capture_begin(self) -> None:
        self._graph.capture_begin(pool=self.graph_pool, capture_error_mode=self.capture_error_mode)

    def capture_end(self) -> None:
        self._graph.capture_end()

    def instantiate(self) -> None:
        self._graph.instantiate()

    def replay(self) -> None:
        self._graph.replay()

    def reset(self) -> None:
        self._graph.reset()

    def pool(self) -> tuple[int, int]:
        return self._graph.pool()

    def enable_debug_mode(self) -> None:
        self._graph.enable_debug_mode()

    def debug_dump(self, path: str) -> None:
        self._graph.debug_dump(path)

    def __enter__(self) -> None:
        _accelerator.synchronize()
        self.capture_begin()

    def __exit__(self, *exc_info: Any) -> None:
        self.capture_end()
