"""``ember.autograd.profiler``: which ops ran and how long each took on the host.

While a ``profile`` is on, a dispatch mode (``_Recorder``) sits at the dispatcher's ``python`` level
and times every op that reaches it, forward and backward, with its input shapes when asked;
``record_function("name")`` adds a named range whose children are the ops (and ranges) inside it.
Ops are named as PyTorch names them (``aten::mm``). Ember's dispatcher hands a mode the parts of a
composite op (``linear`` as ``t`` and ``addmm``), so those parts are what the profile lists. Only
the CPU is profiled: ``use_cuda``/``ProfilerActivity.CUDA`` record no device time.
"""

from __future__ import annotations

import enum
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from ember.autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg
from ember.core.dispatch import DispatchMode, OpOverload
from ember.core.tensor import Tensor

__all__ = [
    "DeviceType",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerActivity",
    "ProfilerConfig",
    "ProfilerEvent",
    "ProfilerState",
    "kineto_available",
    "profile",
    "record_function",
]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 2
    XPU = 3
    MTIA = 4
    HPU = 5
    PrivateUse1 = 6


class DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1
    META = 9


class ProfilerState(enum.Enum):
    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8


class ProfilerConfig:
    """What a profile records (PyTorch's ``torch.autograd.ProfilerConfig``)."""

    def __init__(
        self,
        state: ProfilerState = ProfilerState.CPU,
        report_input_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
    ) -> None:
        self.state = state
        self.report_input_shapes = report_input_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config


ProfilerEvent = FunctionEvent


def kineto_available() -> bool:
    """Ember records with its own dispatcher mode, not with Kineto."""
    return False


def _shape_of(value: Any) -> list:
    if isinstance(value, Tensor):
        return list(value._shape)
    if isinstance(value, list | tuple) and value and all(isinstance(v, Tensor) for v in value):
        return [list(v._shape) for v in value]
    return []


class _Recorder(DispatchMode):
    """The mode that times each op; ``ranges`` is the stack of open events (ops and user ranges)."""

    def __init__(self, record_shapes: bool, with_stack: bool) -> None:
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.events: list[FunctionEvent] = []
        self.open: list[FunctionEvent] = []
        self.origin = time.perf_counter_ns()
        self.lock = threading.Lock()

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self.origin) / 1e3

    def begin(self, name: str, shapes: list, user: bool) -> FunctionEvent:
        parent = self.open[-1] if self.open else None
        stack = _python_stack() if self.with_stack else []
        with self.lock:
            event = FunctionEvent(
                id=len(self.events),
                name=name,
                thread=threading.get_ident(),
                start_us=self.now_us(),
                end_us=0.0,
                input_shapes=shapes,
                stack=stack,
                is_user_annotation=user,
                cpu_parent=parent,
            )
            self.events.append(event)
        if parent is not None:
            parent.cpu_children.append(event)
        self.open.append(event)
        return event

    def end(self, event: FunctionEvent) -> None:
        event.end_us = self.now_us()
        if self.open and self.open[-1] is event:
            self.open.pop()
        elif event in self.open:
            self.open.remove(event)

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        shapes = [_shape_of(a) for a in args] + [_shape_of(v) for v in kwargs.values()] if self.record_shapes else []
        event = self.begin(f"{func.namespace}::{func.name}", shapes, user=False)
        try:
            return func(*args, **kwargs)
        finally:
            self.end(event)


def _python_stack() -> list[str]:
    import traceback

    frames = traceback.extract_stack()[:-4]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames) if "ember/" not in f.filename][:5]


# The recorder of the profile that is on, if any (profiles do not nest: PyTorch refuses that too).
_active: list[_Recorder] = []


class profile:
    """``with ember.autograd.profiler.profile() as prof:`` records the ops run in the block;
    ``prof.key_averages().table(sort_by="self_cpu_time_total")`` prints them."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Callable | None = None,
    ) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.use_cuda = use_cuda
        self.acc_events = acc_events
        self.function_events: EventList | None = None
        self._recorder: _Recorder | None = None
        self._kept: list[FunctionEvent] = []
        self.entered = False

    def _start(self) -> None:
        if _active:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._recorder = _Recorder(self.record_shapes, self.with_stack)
        _active.append(self._recorder)
        self._recorder.__enter__()

    def _stop(self) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        recorder.__exit__(None, None, None)
        _active.remove(recorder)
        for event in list(recorder.open):  # ranges left open: closed where the profile stops
            recorder.end(event)
        events = recorder.events if not self.acc_events else self._kept + recorder.events
        self._kept = events if self.acc_events else []
        self.function_events = EventList(events)
        self._recorder = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self._stop()
        self.entered = False

    def _check_finished(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, **kwargs: Any) -> EventList:
        if group_by_input_shape and not self.record_shapes:
            raise AssertionError("record_shapes=True is needed to group by input shape")
        return self._check_finished().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._check_finished().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self) -> FunctionEventAvg:
        return self._check_finished().total_average()

    def export_chrome_trace(self, path: str) -> None:
        self._check_finished().export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._check_finished().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


class record_function:
    """A named range in the profile (``with record_function("forward"):`` or as a decorator); the
    ops inside it are its children. Outside a profile it records nothing."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._event: FunctionEvent | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self) -> record_function:
        if _active:
            self._recorder = _active[-1]
            self._event = self._recorder.begin(self.name, [], user=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._event is not None and self._recorder is not None:
            self._recorder.end(self._event)
        self._event = self._recorder = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
