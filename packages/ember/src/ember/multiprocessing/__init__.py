"""``ember.multiprocessing``: Python's ``multiprocessing`` with PyTorch's additions, ``spawn`` and
``start_processes`` (how single-machine training scripts start one process per rank).

Tensors cross process boundaries by pickling, so a child gets a copy: Ember has no shared-memory
tensors (``Tensor.share_memory_`` does not exist), so the Hogwild pattern of training one model in
shared memory from several processes is not available.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403  (PyTorch's module re-exports the standard one)

from ember.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    *multiprocessing.__all__,
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
    "spawn",
    "start_processes",
]

_STRATEGIES = {"file_system", "file_descriptor"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set[str]:
    """The strategies PyTorch offers; Ember pickles tensors by value under either."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"invalid sharing strategy {new_strategy!r}; expected one of {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy
