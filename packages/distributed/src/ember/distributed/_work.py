"""``Work`` (a collective in flight) and ``Future`` (its result), as ``torch.distributed`` has them.

A backend hands ``Work`` a list of pending MPI requests and a ``finish`` callback (copy results
back, convert dtypes, divide an average). ``wait`` polls the requests, yielding the CPU between
polls and then sleeping a little longer each time, until they complete or the group's timeout
passes; MPI's own blocking wait has no timeout (and spins, which starves ranks that share a core).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

__all__ = ["Future", "Work"]

# How long a wait polls (yielding between polls) before it starts sleeping, and the longest sleep.
_SPIN_S = 1e-3
_MAX_SLEEP_S = 1e-4


class Future:
    """A value that arrives later (``torch.futures.Future``): ``wait``, ``value``, ``then``, ``done``."""

    def __init__(self, wait: Callable[[], Any] | None = None) -> None:
        self._wait = wait
        self._done = wait is None
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], Any]] = []

    def done(self) -> bool:
        return self._done

    def set_result(self, value: Any) -> None:
        self._value, self._done = value, True
        self._run_callbacks()

    def set_exception(self, error: BaseException) -> None:
        self._error, self._done = error, True
        self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def wait(self) -> Any:
        if not self._done and self._wait is not None:
            wait, self._wait = self._wait, None
            try:
                value = wait()
            except BaseException as error:
                self.set_exception(error)
            else:
                self.set_result(value)
        return self.value()

    def value(self) -> Any:
        if not self._done:
            raise RuntimeError("Future.value() called before the future completed; call wait() first")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future of ``callback(self)``, run when this one completes."""
        parent = self

        def run() -> Any:
            parent.wait()
            return callback(parent)

        return Future(run)

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


class Work:
    """One collective in flight: ``wait``, ``is_completed``, ``is_success``, ``get_future``, ``result``.

    ``requests`` are MPI requests; ``finish()`` runs once they complete and returns the output
    tensors; ``on_timeout(elapsed)`` builds the error raised when ``timeout`` passes first.
    """

    def __init__(
        self,
        requests: list[Any],
        finish: Callable[[], list[Any]],
        timeout: timedelta,
        on_timeout: Callable[[float], BaseException] | None = None,
        on_complete: Callable[[], None] | None = None,
    ) -> None:
        self._requests = requests
        self._finish = finish
        self._timeout = timeout.total_seconds()
        self._started = time.monotonic()
        self._on_timeout = on_timeout
        self._on_complete = on_complete
        self._outputs: list[Any] | None = None
        self._error: BaseException | None = None
        self._future: Future | None = None

    def _poll(self) -> bool:
        return all(request.Test() for request in self._requests)

    def is_completed(self) -> bool:
        if self._outputs is None and self._error is None and self._poll():
            self._complete()
        return self._outputs is not None or self._error is not None

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def _complete(self) -> None:
        try:
            self._outputs = self._finish()
        except BaseException as error:
            self._error = error
        if self._on_complete is not None:
            self._on_complete()

    def wait(self, timeout: timedelta | None = None) -> bool:
        if self._outputs is None and self._error is None:
            limit = self._timeout if timeout is None else timeout.total_seconds()
            deadline = self._started + limit
            spin_until = time.monotonic() + _SPIN_S
            sleep = 0.0
            while not self._poll():
                now = time.monotonic()
                if now < spin_until:
                    os.sched_yield()  # MPI progresses only inside its calls: poll again soon
                    continue
                if now > deadline:
                    self._error = (
                        self._on_timeout(now - self._started)
                        if self._on_timeout is not None
                        else RuntimeError(f"collective timed out after {limit:.1f} s")
                    )
                    raise self._error
                # A long wait: the peers are late, or share this core. Sleep a little longer each
                # time, so that ranks waiting on a busy machine leave the cores to those working.
                sleep = min(_MAX_SLEEP_S, sleep + 5e-6)
                time.sleep(sleep)
            self._complete()
        if self._error is not None:
            raise self._error
        return True

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list[Any]:
        self.wait()
        return self._outputs or []

    def get_future(self) -> Future:
        if self._future is None:
            self._future = Future(self.result)
        return self._future

    def source_rank(self) -> int:
        return getattr(self, "_source_rank", -1)


class CompletedWork(Work):
    """A ``Work`` that has nothing left to do (ranks outside the group, empty ops)."""

    def __init__(self, outputs: list[Any] | None = None) -> None:
        super().__init__([], lambda: outputs or [], timedelta(seconds=1))
        self._outputs = outputs or []
