"""Which backward is running in this thread: the engine pushes a task per backward, and hooks
(``graph.register_multi_grad_hook``) and checkpointing read it. Kept apart from the engine so that
``graph`` can read it without importing the engine, which builds on ``graph``."""

from __future__ import annotations

import itertools
import threading


class _Tasks(threading.local):
    def __init__(self) -> None:
        # Per running backward: (task id, whether checkpointing may run a backward inside, (deps, roots, needed)).
        self.stack: list = []


tasks = _Tasks()
task_ids = itertools.count()


def current_graph_task_id() -> int:
    """The id of the backward running in this thread (innermost), or -1 outside of backward."""
    return tasks.stack[-1][0] if tasks.stack else -1


def is_checkpoint_valid() -> bool:
    """False inside ``autograd.grad`` or ``backward(inputs=...)``, whose captures a nested backward would miss."""
    return tasks.stack[-1][1] if tasks.stack else True
