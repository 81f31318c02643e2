"""The loader's iterator over worker processes.

The main process hands out tasks (one batch's keys each, numbered in order) round-robin to the
workers still active, keeping at most ``prefetch_factor`` tasks outstanding per worker. Results
come back on one shared queue in whatever order workers finish; ``_pending`` keeps early ones until
their turn (``in_order=False`` yields them as they come). The protocol a worker follows is in
``worker.py``.

Failure handling, so that nothing hangs: an exception in a worker is raised again in the main
process with the worker's traceback; a worker that dies is noticed within
``STATUS_CHECK_INTERVAL`` seconds and reported as a ``RuntimeError``; ``timeout`` > 0 bounds the
wait for each batch. The workers stop when the epoch ends (unless persistent), when the iterator is
garbage-collected, or when the main process exits (they are daemons and also watch their parent).

Batches travel by pickling through a ``multiprocessing.Queue``; PyTorch moves tensors through
shared memory instead, which is faster for large batches.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
from typing import Any

from ember.utils.data.iterators import BaseIter
from ember.utils.data.worker import STATUS_CHECK_INTERVAL, ExceptionWrapper, IterableEnd, Resume, worker_loop

# How long shutdown waits for a worker to exit by itself before terminating it, in seconds.
_JOIN_TIMEOUT = 5.0


class MultiProcessIter(BaseIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:
            # The loader accepts 0, but no task would ever be handed out.
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        context = loader.multiprocessing_context or multiprocessing
        self._done_event = context.Event()
        self._data_queue = context.Queue()
        self._index_queues = []
        self._workers = []
        self._shutdown = False  # before any worker starts: __del__ reads it if a start fails
        factory = loader._fetcher_factory()
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            # The index queues' feeder threads must not keep the main process alive at exit.
            index_queue.cancel_join_thread()
            process = context.Process(
                target=worker_loop,
                args=(
                    factory,
                    self._dataset,
                    index_queue,
                    self._data_queue,
                    self._done_event,
                    self._base_seed,
                    loader.worker_init_fn,
                    worker_id,
                    self._num_workers,
                ),
                daemon=True,
            )
            process.start()
            self._index_queues.append(index_queue)
            self._workers.append(process)
        self._reset(loader, first=True)

    def _reset(self, loader, first: bool = False) -> None:
        super()._reset(loader)
        self._sent = 0  # tasks handed out this epoch
        self._received = 0  # the task whose batch is yielded next
        self._owner: dict[int, int] = {}  # task -> worker, while its answer is awaited
        self._pending: dict[int, Any] = {}  # task -> batch that came early
        self._active = [True] * self._num_workers
        self._next_worker = itertools.cycle(range(self._num_workers))
        if not first:
            # Persistent workers: wait until each one acknowledges the new epoch; whatever arrives
            # before a worker's acknowledgement belongs to the epoch that was cut short.
            for index_queue in self._index_queues:
                index_queue.put(Resume())
            waiting = self._num_workers
            while waiting:
                task, _ = self._get()
                if isinstance(task, Resume):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._send()

    def _send(self) -> None:
        """Hand the next task to the next active worker, if keys and workers are left."""
        if not any(self._active):
            return
        try:
            keys = next(self._keys)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._next_worker)
            if self._active[worker]:
                break
        self._index_queues[worker].put((self._sent, keys))
        self._owner[self._sent] = worker
        self._sent += 1

    def _get(self) -> tuple[Any, Any]:
        """The next result from any worker, watching for a timeout and for dead workers."""
        if self._timeout > 0:
            try:
                return self._data_queue.get(timeout=self._timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        while True:
            try:
                return self._data_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                dead = [w for w, alive in zip(self._workers, self._active, strict=True) if alive and not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None

    def _next_data(self) -> Any:
        while True:
            # Tasks neither awaited nor pending were delivered or dropped: step over them.
            while self._received < self._sent and not self._awaited_or_pending(self._received):
                self._received += 1
            if self._in_order and self._received in self._pending:
                return self._deliver(self._received)
            if not self._in_order and self._pending:
                return self._deliver(next(iter(self._pending)))
            if not self._owner:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            task, answer = self._get()
            if isinstance(task, Resume):
                continue  # a late acknowledgement: nothing to do
            del self._owner[task]
            if isinstance(answer, IterableEnd):
                self._retire(answer.worker_id)
                self._send()
            else:
                self._pending[task] = answer

    def _awaited_or_pending(self, task: int) -> bool:
        return task in self._owner or task in self._pending

    def _deliver(self, task: int) -> Any:
        answer = self._pending.pop(task)
        self._send()
        if isinstance(answer, ExceptionWrapper):
            answer.reraise()
        return answer

    def _retire(self, worker_id: int) -> None:
        """A worker's iterable dataset is exhausted: it answers nothing more this epoch, so forget
        its other tasks and hand it no new ones."""
        self._active[worker_id] = False
        for task in [t for t, w in self._owner.items() if w == worker_id]:
            del self._owner[task]
        if not self._persistent:
            self._index_queues[worker_id].put(None)

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for index_queue in self._index_queues:
            index_queue.put(None)
        for process in self._workers:
            process.join(_JOIN_TIMEOUT)
            if process.is_alive():
                process.terminate()
        for index_queue in self._index_queues:
            index_queue.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    def __del__(self) -> None:
        if getattr(self, "_workers", None):
            self._shutdown_workers()
