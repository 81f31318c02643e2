"""Which ops the OpInfo samples reach, and with what arguments: one recorded run of every table.

Every ``opinfo_*`` entry runs in Ember (no oracle needed) under ``Recorder``, a dispatch mode that
notes each ``OpOverload`` called. The mode stays active inside kernels and decompositions, so an op
that a sample reaches only through another op (``_softmax`` under ``softmax.int``) counts as reached:
its values were compared with PyTorch's all the same. Tensors are built before the mode is entered,
so the builder's own ``reshape``/``permute``/``expand`` calls do not count.

For each op with a decomposition the first few calls per dtype are kept with their tensor arguments cloned before the
call (an in-place op mutates them), so that ``test_decompositions.py`` can replay them.

``test_op_coverage.py`` and ``test_decompositions.py`` share one recording (``recording()``), made
once per process.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import pathlib
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from opinfo import OpInfo, Sample, build, first_tensor

import ember
from ember.core.dispatch import DispatchMode, OpOverload, all_ops

TABLES = sorted(p.stem for p in pathlib.Path(__file__).parent.glob("opinfo_*.py"))
# Dtypes run besides each entry's first: the common ones, and half precision and bool, where
# decompositions and kernels differ most (upcasting, rounding of intermediates, promotion).
DTYPES = ("float32", "float64", "int64", "float16", "bfloat16", "bool")
# Calls kept per op and dtype of its first tensor argument, each with different shapes, strides or
# other arguments, for test_decompositions.py.
CALLS_PER_DTYPE = 4


def opinfos() -> list[OpInfo]:
    return [op for table in TABLES for op in importlib.import_module(table).OPS]


def files_named(reason: str) -> list[str]:
    """The test files a NOT_SAMPLED reason names that exist in no package's ``tests``."""
    folders = list(pathlib.Path(__file__).parents[2].glob("*/tests"))
    return [name for name in re.findall(r"test_\w+\.py", reason) if not any((f / name).exists() for f in folders)]


def key(op: OpOverload) -> str:
    """``aten::add.Tensor``, the name NOT_SAMPLED tables use."""
    return f"{op.namespace}::{op.name}.{op.overload}"


@dataclass
class Call:
    """One recorded call: arguments as they were before it ran, and whether it raised."""

    op: OpOverload
    args: tuple
    kwargs: dict
    dtype: str
    raised: bool = False


@dataclass
class Recording:
    reached: set[str] = field(default_factory=set)
    calls: dict[str, list[Call]] = field(default_factory=dict)
    kept: Counter = field(default_factory=Counter)  # (op, dtype) -> calls kept
    seen: set = field(default_factory=set)  # (op, signature) of the calls kept
    # Which OpInfo entries reached each op first (for messages).
    first_reached_by: dict[str, str] = field(default_factory=dict)
    # The OpInfo entries (names without the dtype) whose calls reach each op: ``direct`` where the
    # entry's own call is the op, ``nested`` where a kernel or decomposition calls it (the index
    # ``ember.ops describe`` reads, opinfo_index.json).
    direct: dict[str, set[str]] = field(default_factory=dict)
    nested: dict[str, set[str]] = field(default_factory=dict)


def clone(value: Any) -> Any:
    """A copy of ``value`` with each tensor's storage copied and its strides and offset kept, so that
    a replay sees the same layouts (transposed, sliced, expanded) as the recorded call."""
    if isinstance(value, ember.Tensor):
        value = value.detach()
        elements = value.untyped_storage().nbytes() // value.element_size()
        storage = value.as_strided((elements,), (1,), 0).clone()
        return storage.as_strided(value.shape, value.stride(), value.storage_offset())
    if isinstance(value, list | tuple):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value


def _first_tensor(value: Any):
    if isinstance(value, ember.Tensor):
        return value
    if isinstance(value, list | tuple):
        for v in value:
            found = _first_tensor(v)
            if found is not None:
                return found
    if isinstance(value, dict):
        return _first_tensor(list(value.values()))
    return None


def _first_tensor_of(args: tuple, kwargs: dict):
    tensor = _first_tensor(args)
    return tensor if tensor is not None else _first_tensor(kwargs)


def dtype_key(args: tuple, kwargs: dict) -> str:
    tensor = _first_tensor_of(args, kwargs)
    return str(tensor.dtype) if tensor is not None else str(kwargs.get("dtype"))


def signature(value: Any) -> Any:
    """What tells two calls apart for replay: shapes, strides and dtypes of tensors, other values."""
    if isinstance(value, ember.Tensor):
        return ("T", str(value.dtype), tuple(value.shape), value.stride())
    if isinstance(value, list | tuple):
        return tuple(signature(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, signature(v)) for k, v in value.items())
    return repr(value)


class RecorderFault(BaseException):
    """A fault in the recorder's own bookkeeping: a BaseException so that it cannot pass for the
    error a sample is expected to raise."""


class Recorder(DispatchMode):
    """Records every op call, nested calls from kernels and decompositions included."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.entry = ""
        self.op_name = ""  # the entry's name without its dtype
        self.depth = 0  # ops running below the one the entry called

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        try:
            call = self._record(func, args, kwargs)
        except Exception as fault:
            raise RecorderFault(f"recording {func} failed") from fault
        # Run the op below this mode, as the dispatcher would, with the mode back on for the ops its
        # kernel or decomposition calls.
        self.depth += 1
        try:
            with self:
                return func.redispatch_backend(_first_tensor_of(args, kwargs), args, kwargs)
        except Exception:
            if call is not None:
                call.raised = True
            raise
        finally:
            self.depth -= 1

    def _record(self, func: OpOverload, args: tuple, kwargs: dict) -> Call | None:
        name = key(func)
        rec = self.recording
        if name not in rec.reached:
            rec.reached.add(name)
            rec.first_reached_by[name] = self.entry
        (rec.direct if self.depth == 0 else rec.nested).setdefault(name, set()).add(self.op_name)
        if func.decomposition is None:  # only test_decompositions.py replays calls
            return None
        dtype = dtype_key(args, kwargs)
        if rec.kept[name, dtype] >= CALLS_PER_DTYPE:
            return None
        sig = (name, signature(args), signature(kwargs))
        if sig in rec.seen:
            return None
        rec.seen.add(sig)
        rec.kept[name, dtype] += 1
        call = Call(func, clone(args), clone(kwargs), dtype)
        rec.calls.setdefault(name, []).append(call)
        return call


def _samples(op: OpInfo, dtype: str) -> list[Sample]:
    return op.samples(dtype, np.random.default_rng(1234))


def _attempt(fn, *args, **kwargs) -> Any:
    """``fn``'s result, or None where it raises: samples that raise are compared with PyTorch's
    errors in test_ops.py, and here only reaching the op matters."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except Exception:
            return None


def run_entry(op: OpInfo, dtype: str, recorder: Recorder) -> None:
    """One entry's samples for one dtype: the call, its in-place variant and its ``out=`` variant.

    Each sample is built once (building from Python lists is the slow part); the variants get clones.
    """
    recorder.entry = f"{op.name}-{dtype}"
    recorder.op_name = op.name
    for sample in _samples(op, dtype):
        built = build(sample.args, ember), build(sample.kwargs, ember)
        args, kwargs = clone(built)
        with recorder:
            result = _attempt(op.call, ember, *args, **kwargs)
        if op.inplace is not None and first_tensor(sample.args) is not None:
            args, kwargs = clone(built)
            with recorder:
                _attempt(op.inplace, ember, *args, **kwargs)
        if op.out and isinstance(result, ember.Tensor):
            # As test_ops.py does: an empty tensor of the result's dtype, resized by the op.
            out = ember.empty(0, dtype=result.dtype)
            args, kwargs = clone(built)
            with recorder:
                _attempt(op.call, ember, *args, **kwargs, out=out)


def dtypes_of(op: OpInfo) -> list[str]:
    """An entry's first dtype and those of ``DTYPES`` it lists."""
    return [op.dtypes[0], *(d for d in DTYPES if d in op.dtypes and d != op.dtypes[0])]


def _observed(op: OpOverload, decomposition, recorder: Recorder):
    def run(*args, **kwargs):
        call = recorder._record(op, args, kwargs)
        recorder.depth += 1
        try:
            return decomposition(*args, **kwargs)
        except Exception:
            if call is not None:
                call.raised = True
            raise
        finally:
            recorder.depth -= 1

    return run


@contextlib.contextmanager
def observing_composites(recorder: Recorder):
    """A mode sees an implicit composite as its parts (the dispatcher decomposes it first), so the
    recorder sees the composite itself through its decomposition, wrapped for the recording."""
    wrapped = {op: op.decomposition for op in all_ops() if op.decomposition is not None}
    wrapped = {op: fn for op, fn in wrapped.items() if op.kind == "composite_implicit"}
    for op, fn in wrapped.items():
        op.decomposition = _observed(op, fn, recorder)
    try:
        yield
    finally:
        for op, fn in wrapped.items():
            op.decomposition = fn


@functools.cache
def recording() -> Recording:
    rec = Recording()
    recorder = Recorder(rec)
    ember.manual_seed(0)  # random ops draw from the default generator: the same draws every run
    with observing_composites(recorder):
        for op in opinfos():
            for dtype in dtypes_of(op):
                run_entry(op, dtype, recorder)
    return rec


INDEX = pathlib.Path(__file__).with_name("opinfo_index.json")


def index(rec: Recording) -> dict[str, dict[str, list[str]]]:
    """The OpInfo entries keyed by op overload: ``{"aten::add.Tensor": {"direct": [...], "nested":
    [...]}}``, entries that call the op themselves and entries that reach it through other ops."""
    out = {}
    for name in sorted(rec.reached):
        direct = sorted(rec.direct.get(name, ()))
        nested = sorted(rec.nested.get(name, set()) - set(direct))
        out[name] = {"direct": direct, "nested": nested}
    return out


def write_index() -> None:
    """Rewrite opinfo_index.json from a fresh recording (``python op_calls.py``)."""
    lines = [f"{json.dumps(name)}: {json.dumps(entries)}" for name, entries in sorted(index(recording()).items())]
    INDEX.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # one op per line: diffs read per op


if __name__ == "__main__":
    write_index()
    print(f"wrote {INDEX}")
