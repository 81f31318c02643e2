"""``ember.futures``: ``Future``, a value that another thread sets later, and ``collect_all`` /
``wait_all`` over several (PyTorch's ``torch.futures``).

A future is completed once, with a result or an exception. ``wait()`` blocks until then; callbacks
added with ``then`` (which returns a future of the callback's result) or ``add_done_callback`` run
in the thread that completes the future, or at once if it is already complete.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")
_log = logging.getLogger(__name__)


class Future(Generic[T]):
    """A result that arrives later. ``devices`` names the accelerators its tensors may live on."""

    def __init__(self, *, devices: Sequence[Any] | None = None) -> None:
        from ember.core.devices import to_device

        self._devices = []
        for d in devices or ():
            d = to_device(d)
            if d.index is None:
                raise ValueError(f"Expected devices to have indices, got {d}")
            self._devices.append(d)
        self._condition = threading.Condition()
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []

    def done(self) -> bool:
        """Whether the future has a result or an exception."""
        return self._done

    def wait(self) -> T:
        """Block until the future completes; its result, or its exception raised."""
        with self._condition:
            while not self._done:
                self._condition.wait()
        return self.value()

    def value(self) -> T:
        """The result of a completed future (its exception is raised)."""
        if not self._done:
            raise RuntimeError("Future.value() called on a future that has not completed; call wait() first")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A future of ``callback(self)``, run when this one completes; an exception in the
        callback completes the new future with that exception."""
        child: Future[S] = Future(devices=self._devices)

        def run(parent: Future[T]) -> None:
            try:
                result = callback(parent)
            except BaseException as error:  # handed to the child future, as PyTorch does
                child.set_exception(
                    RuntimeError(f"Got the following error when running the callback: {type(error).__name__}: {error}")
                )
            else:
                child.set_result(result)

        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes; its exceptions are logged, not raised."""
        with self._condition:
            if not self._done:
                self._callbacks.append(callback)
                return
        self._run(callback)

    def set_result(self, result: T) -> None:
        """Complete the future with ``result``, waking its waiters and running its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception, which ``wait`` and ``value`` raise."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._condition:
            if self._done:
                raise RuntimeError(
                    "Attempting to mark a completed Future as complete again. Note that a Future can only be marked "
                    "completed once."
                )
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._condition.notify_all()
        for callback in callbacks:
            self._run(callback)

    def _run(self, callback: Callable[[Future[T]], None]) -> None:
        try:
            callback(self)
        except Exception:
            _log.exception("Got an error when running a Future's done callback")


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future that completes, with the list of ``futures``, once all of them have completed."""
    futures = list(futures)
    combined: Future[list[Future]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        combined.set_result([])
        return combined

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(futures)

    for future in futures:
        future.add_done_callback(one_done)
    return combined


def wait_all(futures: list[Future]) -> list:
    """Wait for every future; their results in order, or the first one's exception raised."""
    return [future.wait() for future in collect_all(futures).wait()]
