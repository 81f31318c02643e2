"""``ember.profiler``: PyTorch's ``torch.profiler`` over ``ember.autograd.profiler``'s recorder.

``with ember.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:`` records the ops run in
the block; with a ``schedule``, ``prof.step()`` marks the end of a training step and recording
follows the schedule's wait / warmup / active cycle, handing each finished cycle to
``on_trace_ready``. Only host (CPU) time is recorded.
"""

from __future__ import annotations

import enum
import gzip
import os
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

from ember.autograd.profiler import ProfilerActivity, record_function
from ember.autograd.profiler import profile as _legacy_profile
from ember.autograd.profiler_util import EventList

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0
) -> Callable[[int], ProfilerAction]:
    """The action for each step: ``skip_first`` steps off, then cycles of ``wait`` steps off,
    ``warmup`` steps warming up, ``active`` steps recorded (the last one saves); ``repeat`` cycles,
    or forever with 0. ``skip_first_wait=1`` drops the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("invalid profiler schedule arguments: active must be positive and the rest non-negative")
    if warmup == 0:
        import warnings

        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError("the step must be non-negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU}


class profile:
    """PyTorch's ``torch.profiler.profile``: a context manager (or ``start()``/``stop()``)."""

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback: Callable | None = None,
    ) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(0)
        self.profiler: _legacy_profile | None = None
        self._finished: EventList | None = None

    # -- recording -------------------------------------------------------------------------------

    def _begin(self) -> None:
        self.profiler = _legacy_profile(record_shapes=self.record_shapes, with_stack=self.with_stack)
        self.profiler.__enter__()

    def _finish(self) -> None:
        if self.profiler is None:
            return
        self.profiler.__exit__(None, None, None)
        events = self.profiler.function_events
        if self.acc_events and self._finished is not None:
            events = EventList([*self._finished, *events])
        self._finished = events
        self.profiler = None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self) -> None:
        if self.current_action in _RECORDING:
            self._begin()

    def stop(self) -> None:
        if self.profiler is not None:
            self._finish()

    def step(self) -> None:
        """The end of a step: move to the schedule's next action."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        was, now = previous in _RECORDING, self.current_action in _RECORDING
        if was and (not now or previous is ProfilerAction.RECORD_AND_SAVE):
            self._finish()
        if now and self.profiler is None:
            self._begin()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- results -----------------------------------------------------------------------------------

    def events(self) -> EventList:
        if self._finished is None:
            raise RuntimeError("Profiler didn't finish running: no recorded step has ended yet")
        return self._finished

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, **kwargs: Any) -> EventList:
        if group_by_input_shape and not self.record_shapes:
            raise AssertionError("record_shapes=True is needed to group by input shape")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False) -> Callable:
    """An ``on_trace_ready`` that writes each finished cycle as a Chrome trace file into ``dir_name``."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json")
        if not use_gzip:
            prof.export_chrome_trace(path)
            return
        tmp = path + ".tmp"
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
            dst.write(src.read())
        os.remove(tmp)

    return handler
