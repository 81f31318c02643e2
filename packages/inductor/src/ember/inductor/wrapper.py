"""The Python wrapper: a compiled graph's steps (kernels, extern calls) as one generated function.

At compile time the steps become a plan of plain data (``KernelStep``, ``ExternStep``, ...: no IR,
so the disk cache can keep it) and the plan becomes the source of one Python function, run with
``exec``: each buffer is a local variable, each kernel call fills a ctypes pointer array made once
and calls into the shared library, each extern call is a direct call of the eager op. A call of the
compiled graph allocates its outputs and nothing else in Python. It runs graphs of static sizes whose
steps are kernels (combo kernels included) and eager ops, random draws (the Philox seed and offset
come in as one-element buffers) and stores into inputs (an input a kernel writes must come with the
strides it was compiled for: a copy would take the stores away) included; graphs with symbolic
sizes, scans' generated kernels, and the check mode run on the step wrapper (``wrapper_steps.py``).

Memory planning: a buffer the wrapper allocates gives its storage, once its last reader has run, to
a later buffer of the same size in bytes and dtype (``config.memory_planning``). A buffer the graph
returns never gives its storage away, nor one an extern op may return a view of.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ember.core.devices import CPU
from ember.core.dtypes import dtype as DType
from ember.core.tensor import empty, make_view
from ember.inductor.indirect import raise_index_error
from ember.inductor.pointers import fill_pointers, pointer_array
from ember.logs import get_artifact_logger

# Above this many tensors a kernel's pointer array is filled by one C call (``pointers.py``): each
# ``data_ptr()`` asked in Python costs about 2 us, a few dozen of them more than the call.
_POINTERS_IN_PYTHON = 8

perf_log = get_artifact_logger(__name__, "perf_hints")


@dataclass
class Ref:
    """A buffer, by name, where a tensor goes in an extern call's arguments."""

    name: str


@dataclass
class KernelStep:
    """A C++ kernel: ``args`` (buffer names, reads then outputs), ``outputs`` allocated here with their
    ``(size, stride, dtype)``; ``checked`` the buffers whose sizes and strides go in ``meta`` (the
    generated wrapper passes them as traced: it has made its inputs and extern results so)."""

    name: str
    library: str
    args: list[str]
    outputs: dict[str, tuple[tuple[int, ...], tuple[int, ...], DType]]
    checked: list[str]
    checked_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]]
    fn: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "fn"} | {"fn": None}

    def meta(self, env: dict[str, Any]) -> Any:
        values: list[int] = []
        for name in self.checked:
            t = env[name]
            values += [*t._shape, *t._stride]
        return (ctypes.c_int64 * max(len(values), 1))(*values)

    def __call__(self, env: dict[str, Any]) -> None:
        """Run the kernel on buffers by name (the generated function does the same, faster)."""
        for name, (size, stride, dtype) in self.outputs.items():
            env[name] = empty(size, dtype, CPU, stride)
        ptrs = pointer_array([env[n] for n in self.args])
        rc = self.fn(ptrs, self.meta(env))
        if rc:
            kernel_error(self, rc, env)


@dataclass
class ExternStep:
    """``op(*args, **kwargs)`` run eagerly (``Ref`` where a buffer goes); ``op`` by its name."""

    name: str
    op: str
    args: tuple
    kwargs: dict
    reason: str = ""
    layout: tuple | None = None  # (size, stride) the graph traced, for a tensor result


@dataclass
class MultiOutputStep:
    name: str
    source: str
    index: int
    layout: tuple | None = None


@dataclass
class AliasStep:
    name: str
    source: str
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset_delta: int


@dataclass
class InputSpec:
    name: str
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: DType
    written: bool = False  # a kernel stores into it (an input mutation, inplace.py)


@dataclass
class Plan:
    """Everything a compiled graph runs from: picklable, so a warm start reads it from disk."""

    inputs: list  # InputSpec, or the Python value the graph was specialized for
    steps: list
    outputs: list  # a buffer name (str wrapped in Ref), or a Python value
    source: str  # the C++ source of the kernels, for logs and tests
    reuse: bool = True
    lowered: set = field(default_factory=set)
    fallbacks: list = field(default_factory=list)
    hints: list = field(default_factory=list)  # the perf hints of the compile, logged again on a warm start


def kernel_error(step: KernelStep, rc: int, env: dict[str, Any]) -> None:
    if rc < 0:
        raise_index_error(rc)
    name = step.checked[rc - 1]
    t = env[name]
    raise RuntimeError(
        f"compiled kernel {step.name} was specialized for {name} with sizes and strides other than "
        f"{tuple(t._shape)}/{tuple(t._stride)}: recompile for these inputs (or compile with dynamic=True for "
        "kernels that serve every size)"
    )


def _may_alias(op: Any) -> bool:
    """Whether ``op`` may return a view of one of its arguments (an alias annotation on a return)."""
    returns = str(getattr(op, "schema", "")).partition("->")[2]
    return "(a" in returns or "(b" in returns or not returns


def lookup_op(name: Any) -> Any:
    """The op named ``name`` (``"aten.mm.default"``); a callable is returned as it is."""
    from ember.core.dispatch import lookup

    if not isinstance(name, str):
        return name

    namespace, _, rest = name.partition(".")
    packet, _, overload = rest.partition(".") if "::" not in name else ("", "", "")
    if packet:  # "aten.mm.default", "higher_order.flex_attention.default"
        from ember.core import ops

        return getattr(getattr(getattr(ops, namespace), packet), overload or "default")
    return lookup(name)


def _refs(a: Any) -> list[str]:
    if isinstance(a, Ref):
        return [a.name]
    if isinstance(a, list | tuple):
        return [n for x in a for n in _refs(x)]
    if isinstance(a, dict):
        return [n for x in a.values() for n in _refs(x)]
    return []


def _reads(step: Any) -> list[str]:
    if isinstance(step, KernelStep):
        return [n for n in step.args if n not in step.outputs]
    if isinstance(step, ExternStep):
        return _refs(step.args) + _refs(step.kwargs)
    return [step.source]


class _Source:
    """The generated function's text and the constants it names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}

    def const(self, prefix: str, value: Any) -> str:
        for name, v in self.consts.items():
            if v is value and name.startswith(prefix):
                return name
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)


def _arg_source(a: Any, src: _Source) -> str:
    if isinstance(a, Ref):
        return a.name
    if isinstance(a, list):
        return "[" + ", ".join(_arg_source(x, src) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + "".join(_arg_source(x, src) + ", " for x in a) + ")"
    if a is None or isinstance(a, bool | int | str) or (isinstance(a, float) and a == a and abs(a) != float("inf")):
        return repr(a)
    return src.const("c", a)


def memory_plan(plan: Plan, exclude: set[str] = frozenset()) -> dict[str, str]:
    """For each buffer that takes another's storage: ``{buffer: donor}`` (donors chain: the first
    holder's tensor is the storage). Donors are buffers the wrapper allocated whose last reader has run."""
    returned = set(_refs(plan.outputs))
    last_use: dict[str, int] = {}
    pinned = set(returned)
    for i, step in enumerate(plan.steps):
        for n in _reads(step):
            last_use[n] = i
        if isinstance(step, ExternStep) and _may_alias(lookup_op(step.op)):
            pinned |= set(_refs(step.args)) | set(_refs(step.kwargs))
        if isinstance(step, MultiOutputStep | AliasStep):
            pinned.add(step.source)
    layouts = {}
    free: dict[tuple, list[str]] = {}
    donor_of: dict[str, str] = {}
    released: dict[int, list[str]] = {}
    for n, i in last_use.items():
        released.setdefault(i, []).append(n)
    for i, step in enumerate(plan.steps):
        if isinstance(step, KernelStep):
            for name, (size, stride, dtype) in step.outputs.items():
                if name in exclude:
                    continue
                nbytes = _extent(size, stride) * dtype.itemsize
                key = (nbytes, dtype)
                layouts[name] = key
                if free.get(key):
                    donor_of[name] = free[key].pop()
            for name in step.outputs:  # written and never read: dead after this step
                last_use.setdefault(name, i)
                if last_use[name] == i and name not in released.get(i, []):
                    released.setdefault(i, []).append(name)
        for n in released.get(i, []):
            if n in layouts and n not in pinned:
                free.setdefault(layouts[n], []).append(n)
    return donor_of


def _extent(size: tuple[int, ...], stride: tuple[int, ...]) -> int:
    if any(n == 0 for n in size):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))


def _internal(plan: Plan) -> dict[str, tuple]:
    """Kernel outputs that live only within a call: not returned, not viewed, not passed to an op
    that may return a view of them. ``{name: (size, stride, dtype)}``."""
    returned = set(_refs(plan.outputs))
    pinned = set(returned)
    for step in plan.steps:
        if isinstance(step, ExternStep) and _may_alias(lookup_op(step.op)):
            pinned |= set(_refs(step.args)) | set(_refs(step.kwargs))
        if isinstance(step, MultiOutputStep | AliasStep):
            pinned.add(step.source)
    out = {}
    for step in plan.steps:
        if isinstance(step, KernelStep):
            out |= {n: lay for n, lay in step.outputs.items() if n not in pinned}
    return out


def arena_plan(plan: Plan, limit: int) -> dict[str, tuple]:
    """The small internal buffers a compiled graph allocates once and keeps (their pointers are
    written into the kernels' argument arrays once): at most ``limit`` bytes in all."""
    chosen, total = {}, 0
    for name, (size, stride, dtype) in _internal(plan).items():
        nbytes = _extent(size, stride) * dtype.itemsize
        if total + nbytes <= limit:
            chosen[name] = (size, stride, dtype)
            total += nbytes
    return chosen


def generate(plan: Plan, arena: dict[str, tuple] | None = None) -> tuple[str, dict[str, Any], int]:
    """The wrapper function's source, its constants, and the number of tensors a call allocates.

    Buffers in ``arena`` are the graph's own (allocated once, names bound in the function's scope)."""
    arena = arena or {}
    src = _Source()
    donor_of = {k: v for k, v in memory_plan(plan, set(arena)).items()} if plan.reuse else {}
    storage_of: dict[str, str] = {}
    allocations = 0
    names = [s.name if isinstance(s, InputSpec) else f"_c{i}" for i, s in enumerate(plan.inputs)]
    src.emit(f"({''.join(n + ', ' for n in names)}) = args")
    for i, spec in enumerate(plan.inputs):
        if isinstance(spec, InputSpec):
            dt = src.const("dt", spec.dtype)
            src.emit(f"if {spec.name}._shape != {spec.size!r} or {spec.name}._stride != {spec.stride!r} "
                     f"or {spec.name}.dtype is not {dt}:")  # fmt: skip
            src.emit(f"{spec.name} = check_input(INPUTS[{i}], {spec.name})", 2)
        else:
            src.emit(f"check_value(INPUTS[{i}], _c{i})")
    arrays: list[tuple[int, int]] = []
    prefilled: list[list[tuple[int, str]]] = []
    # buffers dropped once their last reader has run (their memory goes back at once), except those
    # the graph returns and those whose storage a later buffer takes (the view is made from them)
    keep = set(_refs(plan.outputs)) | set(donor_of.values()) | set(arena)
    dead_after: dict[int, list[str]] = {}
    last_use: dict[str, int] = {}
    for i, step in enumerate(plan.steps):
        for n in _reads(step):
            last_use[n] = i
    for n, i in last_use.items():
        if n not in keep and not any(isinstance(s, InputSpec) and s.name == n for s in plan.inputs):
            dead_after.setdefault(i, []).append(n)
    pointer: set[str] = set()
    for i, step in enumerate(plan.steps):
        if isinstance(step, KernelStep):
            for name, (size, stride, dtype) in step.outputs.items():
                if name in arena:
                    continue
                donor = donor_of.get(name)
                if donor is not None:
                    storage_of[name] = storage_of.get(donor, donor)
                    src.emit(f"{name} = make_view({storage_of[name]}, {size!r}, {stride!r}, 0)")
                else:
                    allocations += 1
                    src.emit(f"{name} = empty({size!r}, {src.const('dt', dtype)}, CPU, {stride!r})")
            k = len(arrays)
            arrays.append((len(step.args), max(sum(2 * len(lay[0]) for lay in step.checked_layouts), 1)))
            prefilled.append([(j, n) for j, n in enumerate(step.args) if n in arena])
            if len(step.args) > _POINTERS_IN_PYTHON:
                # a kernel of many tensors (a compiled optimizer step's): their pointers in one C call
                names = "".join(f"{n}, " for n in step.args)
                src.emit(f"P{k} = arrays[{2 * k}]; fill_pointers(P{k}, ({names}))")
            else:
                for n in step.args:
                    if n not in arena and n not in pointer:
                        pointer.add(n)
                        src.emit(f"p_{n} = {n}.data_ptr()")
                fill = "".join(f"; P{k}[{j}] = p_{n}" for j, n in enumerate(step.args) if n not in arena)
                src.emit(f"P{k} = arrays[{2 * k}]{fill}")
            kernel = src.const("k", step)
            src.emit(f"rc = {kernel}.fn(P{k}, arrays[{2 * k + 1}])")
            src.emit(f"if rc: kernel_error({kernel}, rc, {{**globals(), **locals()}})")
        elif isinstance(step, ExternStep):
            op = src.const("op", lookup_op(step.op))
            args = "".join(_arg_source(a, src) + ", " for a in step.args)
            kwargs = "".join(f"{k}={_arg_source(v, src)}, " for k, v in step.kwargs.items())
            src.emit(f"{step.name} = {op}({args}{kwargs})")
            _emit_layout_fix(step, src)
        elif isinstance(step, MultiOutputStep):
            src.emit(f"{step.name} = {step.source}[{step.index}]")
            _emit_layout_fix(step, src)
        elif isinstance(step, AliasStep):
            src.emit(f"{step.name} = make_view({step.source}, {step.size!r}, {step.stride!r}, "
                     f"{step.source}._offset + {step.offset_delta})")  # fmt: skip
        if dead_after.get(i):
            src.emit(f"del {', '.join(n for n in dead_after[i] if n not in arena)}" if any(
                n not in arena for n in dead_after[i]) else "pass")  # fmt: skip
    outs = "".join(_arg_source(o, src) + ", " for o in plan.outputs)
    src.emit(f"return [{outs}]")
    text = "def call(args, arrays):\n" + "\n".join(src.lines) + "\n"
    src.consts["_array_shapes"] = arrays
    src.consts["_prefilled"] = prefilled
    return text, src.consts, allocations


def _emit_layout_fix(step: ExternStep | MultiOutputStep, src: _Source) -> None:
    # the kernels were specialized for the layout the graph traced (the op's meta kernel); an eager
    # kernel that lays its result out otherwise has it copied to that layout
    if step.layout is not None:
        size, stride = step.layout
        src.emit(f"if {step.name}._stride != {stride!r}: {step.name} = fix_layout({step.name}, {size!r}, "
                 f"{stride!r}, {step.name!r})")  # fmt: skip


def fix_layout(t: Any, size: tuple, stride: tuple, name: str) -> Any:
    return check_input(InputSpec(name, size, stride, t.dtype), t)


def check_input(spec: InputSpec, a: Any) -> Any:
    if tuple(a._shape) != spec.size or a.dtype != spec.dtype:
        raise RuntimeError(
            f"compiled graph expected {spec.name} of sizes {spec.size} and {spec.dtype}, got "
            f"{tuple(a._shape)} and {a.dtype}: kernels are specialized on sizes (compile with dynamic=True for "
            "kernels that serve every size)"
        )
    if all(x == y for x, y, n in zip(a._stride, spec.stride, spec.size, strict=True) if n != 1):
        return a
    if spec.written:  # the kernels store into it: a copy would take the stores away from the caller's tensor
        raise RuntimeError(
            f"compiled graph writes {spec.name} in place and was specialized for its strides {spec.stride}, got "
            f"{tuple(a._stride)}"
        )
    # AOT autograd may hand the backward saved tensors or gradients whose strides differ from the
    # ones it traced with: a copy laid out as the kernels were specialized for
    if perf_log.isEnabledFor(20):
        perf_log.info("input %s copied from strides %s to %s", spec.name, tuple(a._stride), spec.stride)
    out = empty(spec.size, spec.dtype, CPU, spec.stride)
    out.copy_(a)
    return out


def check_value(expected: Any, got: Any) -> None:
    if got != expected:
        raise RuntimeError(f"compiled graph was specialized for the value {expected!r}, got {got!r}")


class CompiledGraph:
    """A boxed callable (it takes its inputs as one list), as AOT autograd's compilers return.

    The graph's small internal buffers and the kernels' argument arrays are its own, made once: a
    call holds a lock (calls of one compiled graph from several threads run one at a time)."""

    _boxed_call = True
    cache_key: str | None = None  # its key in the graph cache, once kept there

    def __init__(self, plan: Plan, libraries: dict[str, Any]) -> None:
        from ember.inductor import config

        self.plan = plan
        self.inputs, self.outputs, self.source = plan.inputs, plan.outputs, plan.source
        self.lowered, self.fallbacks = plan.lowered, plan.fallbacks
        self.steps = plan.steps
        for step in plan.steps:
            if isinstance(step, KernelStep):
                fn = getattr(libraries[step.library], step.name)
                # no argtypes: the two ctypes arrays pass as pointers as they are, at half the cost
                fn.restype = ctypes.c_int
                step.fn = fn
        arena_layouts = arena_plan(plan, config.wrapper_arena_bytes) if plan.reuse else {}
        self.wrapper_source, consts, self.allocations = generate(plan, arena_layouts)
        self.arena = {n: empty(size, dtype, CPU, stride) for n, (size, stride, dtype) in arena_layouts.items()}
        shapes, prefilled = consts.pop("_array_shapes"), consts.pop("_prefilled")
        self._arrays = []
        kernels = [s for s in self.steps if isinstance(s, KernelStep)]
        for (nptr, nmeta), step, fixed in zip(shapes, kernels, prefilled, strict=True):
            ptrs, meta = (ctypes.c_void_p * nptr)(), (ctypes.c_int64 * nmeta)()
            for j, name in fixed:
                ptrs[j] = self.arena[name].data_ptr()
            # the meta is fixed: the wrapper has checked (or copied) graph inputs and extern results
            pos = 0
            for size, stride in step.checked_layouts:
                meta[pos : pos + 2 * len(size)] = (*size, *stride)
                pos += 2 * len(size)
            self._arrays += [ptrs, meta]
        scope = {"empty": empty, "make_view": make_view, "CPU": CPU, "INPUTS": plan.inputs, "fill_pointers": fill_pointers,
                 "check_input": check_input, "check_value": check_value, "fix_layout": fix_layout,
                 "kernel_error": _kernel_error, **consts, **self.arena}  # fmt: skip
        exec(compile(self.wrapper_source, f"<ember.inductor wrapper {id(self):x}>", "exec"), scope)
        self._call: Callable = scope["call"]
        self._lock = threading.Lock()

    @property
    def kernel_count(self) -> int:
        return sum(isinstance(s, KernelStep) for s in self.steps)

    def __call__(self, args: list) -> list:
        with self._lock:
            return self._call(args, self._arrays)


def _kernel_error(step: KernelStep, rc: int, scope: dict[str, Any]) -> None:
    kernel_error(step, rc, scope)
