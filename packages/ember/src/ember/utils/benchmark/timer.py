"""``Timer``: time a statement as ``torch.utils.benchmark.Timer`` does.

``stmt`` and ``setup`` are Python source, compiled once and run in a namespace made of ``globals``
(with ``ember`` and ``torch`` bound to Ember unless given). Each measured run repeats ``stmt``
``number`` times between two readings of the clock; the accelerator, when there is one, is
synchronized before each reading so that queued kernels are counted. ``num_threads`` sets Ember's
intra-op thread count for the measurement and restores it after.

``collect_callgrind`` checks its arguments and the valgrind tools as PyTorch does, then raises
``NotImplementedError``: Ember does not run statements under valgrind. The result containers
(``CallgrindStats``, ``FunctionCounts``) are complete and can be built from counts directly.
"""

from __future__ import annotations

import contextlib
import enum
import shutil
import statistics
import sys
import timeit
from collections.abc import Callable, Iterator
from typing import Any

from ember.utils.benchmark.common import Measurement, TaskSpec
from ember.utils.benchmark.utils.valgrind_wrapper.timer_interface import CallgrindStats, CopyIfCallgrind


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def timer() -> float:
    """The clock: ``time.perf_counter`` after synchronizing the accelerator, when one is available."""
    import time

    import ember

    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return time.perf_counter()


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    import ember

    previous = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        yield
    finally:
        ember.set_num_threads(previous)


class Timer:
    """Measure the run time of ``stmt`` (after ``setup``)."""

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Ember's Timer times Python statements only, not language={language!r}")
        if global_setup:
            raise ValueError("global_setup is C++ only; Ember's Timer runs Python statements")
        import ember

        namespace = {"ember": ember, "torch": ember}
        namespace.update(CopyIfCallgrind.unwrap_all(globals or {}))
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=namespace)
        self._task_spec = TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # Even an empty statement takes a measurable time; a floor keeps ratios finite.
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One run of ``number`` repetitions, after a warm-up of ``number // 100`` (at least 2)."""
        with _threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return Measurement(number_per_run=number, raw_times=[self._timeit(number)], task_spec=self._task_spec)

    def _estimate_block_size(self, min_run_time: float) -> int:
        with _threads(self._task_spec.num_threads):
            overhead = statistics.median(self._timeit(0) for _ in range(5))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def _loop(
        self,
        number: int,
        stop: Callable[[list[float]], bool],
        min_run_time: float,
        max_run_time: float | None,
        callback: Callable[[int, float], Any] | None,
    ) -> list[float]:
        times: list[float] = []
        total, can_stop = 0.0, False
        with _threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback is not None:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(
        self, callback: Callable[[int, float], Any] | None = None, min_run_time: float = 0.2
    ) -> Measurement:
        """Runs of a block size large enough that the clock's overhead is negligible, for ``min_run_time``."""
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda times: True, min_run_time, None, callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], Any] | None = None,
    ) -> Measurement:
        """Runs until the interquartile range is under ``threshold`` of the median (or ``max_run_time``)."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float]) -> bool:
            if len(times) <= 3:
                return False
            return Measurement(number, times, self._task_spec).meets_confidence(threshold=threshold)

        times = self._loop(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(
        self,
        number: int = 100,
        *,
        repeats: int | None = None,
        collect_baseline: bool = True,
        retain_out_file: bool = False,
    ) -> CallgrindStats | tuple[CallgrindStats, ...]:
        """Instruction counts of ``stmt`` under valgrind's Callgrind: not available in Ember.

        The arguments and the presence of ``valgrind``, ``callgrind_control`` and ``callgrind_annotate``
        are checked as PyTorch checks them (``OSError`` naming what is missing), then
        ``NotImplementedError`` is raised.
        """
        if not isinstance(self._task_spec.stmt, str):
            raise ValueError("`collect_callgrind` currently only supports string `stmt`")
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        # A faulty stmt or setup fails here, in this process, before any tool is looked for.
        self._timeit(1)
        if not sys.platform.startswith("linux"):
            raise OSError("Valgrind is not supported on this platform.")
        missing = [cmd for cmd in ("valgrind", "callgrind_control", "callgrind_annotate") if shutil.which(cmd) is None]
        if missing:
            raise OSError("Missing: " + ", ".join(missing))
        raise NotImplementedError(
            "Timer.collect_callgrind: Ember does not run statements under valgrind; build CallgrindStats "
            "from FunctionCounts directly to analyse counts collected elsewhere"
        )
