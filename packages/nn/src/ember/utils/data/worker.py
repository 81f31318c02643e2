"""What runs inside a loader's worker process: ``worker_loop``, and ``get_worker_info`` for the
dataset code that runs there.

Protocol. Each worker reads ``(task, keys)`` pairs from its own index queue and answers
``(task, batch)`` on the queue all workers share; ``task`` numbers let the main process put
batches back in order. Besides batches a worker may answer:

- an ``ExceptionWrapper`` when fetching failed (the main process raises it again there);
- ``IterableEnd(worker_id)`` once its copy of an iterable dataset is exhausted; it then ignores
  the rest of its index queue until it is told to start over;
- ``(Resume(), None)`` to acknowledge a ``Resume`` request (persistent workers starting a new
  epoch), so that the main process can tell the new epoch's batches from stale ones.

``None`` on the index queue means "exit". A worker also exits when its parent process is gone.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.core.generator import manual_seed

__all__ = ["WorkerInfo", "get_worker_info"]

# How often a waiting worker (and the main process) looks up from its queue to check that the
# other side is still alive, in seconds.
STATUS_CHECK_INTERVAL = 0.5


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """Where this worker stands: ``id`` in ``range(num_workers)``, the ``seed`` its generators got,
    and ``dataset``, this process's copy of the dataset. ``rng`` and ``worker_method`` are PyTorch's
    fields for thread workers, which Ember does not have: always None and "multiprocessing"."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of the current loader worker process; ``None`` in the main process.

    An ``IterableDataset`` uses it in ``__iter__`` to read only its share of the stream, for example
    ``itertools.islice(stream, info.id, None, info.num_workers)``.
    """
    return _worker_info


@dataclass(frozen=True)
class IterableEnd:
    """A worker's copy of an iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class Resume:
    """Start the dataset over for a new epoch (persistent workers)."""


class KeyErrorMessage(str):
    """A ``KeyError`` prints its argument's ``repr``, which would show a traceback's newlines as
    ``\\n``; this string's ``repr`` is itself."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its type and formatted
    traceback (exception objects and tracebacks do not all pickle)."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = KeyErrorMessage(message)
        elif getattr(self.exc_type, "message", None) is not None:
            # Some exception types take keyword arguments only; they cannot be rebuilt from a message.
            raise self.exc_type(message=message)
        try:
            exception = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        raise exception


def _seed_everything(base_seed: int, worker_id: int) -> int:
    """Seed Python's, numpy's and Ember's default generators for this worker: distinct per worker,
    and reproducible from the loader's generator."""
    seed = (base_seed + worker_id) & ((1 << 64) - 1)
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


class _ParentWatch:
    def __init__(self) -> None:
        self.parent = os.getppid()

    def alive(self) -> bool:
        return os.getppid() == self.parent


def worker_loop(
    fetcher_factory,
    dataset,
    index_queue,
    data_queue,
    done_event,
    base_seed: int,
    init_fn,
    worker_id: int,
    num_workers: int,
) -> None:
    """Body of worker ``worker_id``: answer index requests until told to stop."""
    global _worker_info
    try:
        seed = _seed_everything(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_factory(dataset)
        except Exception:
            # Reported with the first batch asked for, where the main process can raise it.
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        exhausted = False
        watch = _ParentWatch()
        while watch.alive():
            try:
                request = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                # The exit request may never arrive: the main process can shut us down from a
                # garbage collection that runs in the very thread that would send it, or at exit.
                if done_event.is_set():
                    break
                continue
            if request is None:
                break
            if isinstance(request, Resume):
                data_queue.put((request, None))
                exhausted = False
                if init_error is None:
                    fetcher = fetcher_factory(dataset)
                continue
            if done_event.is_set() or exhausted:
                continue  # drain without answering
            task, keys = request
            if init_error is not None:
                answer = init_error  # every request gets it: a loader that goes on must not hang
            else:
                try:
                    answer = fetcher.fetch(keys)
                except StopIteration:
                    if not fetcher.iterable:  # a map-style dataset raised it: an error like any other
                        answer = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                    else:
                        answer = IterableEnd(worker_id)
                        exhausted = True
                except Exception:
                    answer = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((task, answer))
            del answer  # drop this process's reference before blocking on the queue again
    except KeyboardInterrupt:
        pass  # the main process handles the interrupt and shuts us down
    if done_event.is_set():
        # Let our queue's feeder thread go without waiting for the main process to read.
        data_queue.cancel_join_thread()
        data_queue.close()
