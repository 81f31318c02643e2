"""The Python wrapper: runs a compiled graph's steps in order (kernels and extern calls).

Each step is prepared once at compile time (pointer slots, allocation sizes), so a call does little
more than allocate outputs, fill a pointer array and call into the shared library.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core.devices import CPU
from ember.core.tensor import empty
from ember.inductor.codegen_cpp import KernelSpec
from ember.inductor.ir import AliasBuffer, Buffer, ExternBuffer, InputBuffer, MultiOutput
from ember.logs import get_artifact_logger

perf_log = get_artifact_logger(__name__, "perf_hints")


class KernelStep:
    def __init__(self, spec: KernelSpec, fn: Callable, buffers: dict[str, Buffer]) -> None:
        self.spec = spec
        self.fn = fn
        self.n = len(spec.args)
        self.allocs = [(name, buffers[name]) for name in spec.outputs]
        self.checked = spec.checked
        self.meta_len = sum(2 * len(buffers[n].size) for n in spec.checked)

    def __call__(self, env: dict[str, Any]) -> None:
        for name, buf in self.allocs:
            env[name] = empty(buf.layout.size, buf.dtype, CPU, buf.layout.stride)
        ptrs = (ctypes.c_void_p * self.n)(*[env[name].data_ptr() for name in self.spec.args])
        meta = np.empty(max(self.meta_len, 1), dtype=np.int64)
        pos = 0
        for name in self.checked:
            t = env[name]
            nd = len(t._shape)
            meta[pos : pos + nd] = t._shape
            meta[pos + nd : pos + 2 * nd] = t._stride
            pos += 2 * nd
        rc = self.fn(ptrs, meta.ctypes.data)
        if rc != 0:
            name = self.checked[rc - 1]
            t = env[name]
            raise RuntimeError(
                f"compiled kernel {self.spec.name} was specialized for {name} with sizes and strides other than "
                f"{tuple(t._shape)}/{tuple(t._stride)}: the code generator specializes kernels on sizes "
                "(dynamic shapes in kernels are not built yet); recompile for these inputs"
            )


class ExternStep:
    def __init__(self, buf: ExternBuffer) -> None:
        self.buf = buf

    def __call__(self, env: dict[str, Any]) -> None:
        def value(a):
            if isinstance(a, Buffer):
                return env[a.name]
            if isinstance(a, list | tuple):
                return type(a)(value(x) for x in a)
            return a

        b = self.buf
        env[b.name] = b.op(*value(b.args), **{k: value(v) for k, v in b.kwargs.items()})


class MultiOutputStep:
    def __init__(self, buf: MultiOutput) -> None:
        self.buf = buf

    def __call__(self, env: dict[str, Any]) -> None:
        env[self.buf.name] = env[self.buf.source.name][self.buf.index]


class AliasStep:
    def __init__(self, buf: AliasBuffer) -> None:
        self.buf = buf

    def __call__(self, env: dict[str, Any]) -> None:
        b = self.buf
        base = env[b.source.name]
        env[b.name] = base.as_strided(b.layout.size, b.layout.stride, base.storage_offset() + b.offset_delta)


def _same_strides(t: Any, spec: InputBuffer) -> bool:
    return all(a == b for a, b, n in zip(t._stride, spec.layout.stride, spec.size, strict=True) if n != 1)


def _restride(t: Any, spec: InputBuffer) -> Any:
    """A copy of ``t`` laid out as the kernels were specialized for (AOT autograd may hand the backward
    saved tensors or gradients whose strides differ from the ones it traced with)."""
    if perf_log.isEnabledFor(20):
        perf_log.info("input %s copied from strides %s to %s", spec.name, tuple(t._stride), spec.layout.stride)
    out = empty(spec.size, spec.dtype, CPU, spec.layout.stride)
    out.copy_(t)
    return out


class CompiledGraph:
    """A boxed callable (it takes its inputs as one list), as AOT autograd's compilers return."""

    _boxed_call = True

    def __init__(self, inputs: list, steps: list, outputs: list, source: str) -> None:
        self.inputs = inputs
        self.steps = steps
        self.outputs = outputs
        self.source = source
        # filled in by compile_fx_inner, for tests and debugging
        self.lowered: set = set()
        self.fallbacks: list[tuple[str, str]] = []

    @property
    def kernel_count(self) -> int:
        return sum(isinstance(s, KernelStep) for s in self.steps)

    def __call__(self, args: list) -> list:
        env: dict[str, Any] = {}
        for spec, a in zip(self.inputs, args, strict=True):
            if isinstance(spec, InputBuffer):
                if tuple(a._shape) != spec.size or a.dtype != spec.dtype:
                    raise RuntimeError(
                        f"compiled graph expected {spec.name} of sizes {spec.size} and {spec.dtype}, got "
                        f"{tuple(a._shape)} and {a.dtype}: kernels are specialized on sizes (dynamic shapes in "
                        "kernels are not built yet)"
                    )
                if not _same_strides(a, spec):
                    a = _restride(a, spec)
                env[spec.name] = a
            elif a != spec:
                raise RuntimeError(f"compiled graph was specialized for the value {spec!r}, got {a!r}")
        for step in self.steps:
            step(env)
        return [env[o.name] if isinstance(o, Buffer) else o for o in self.outputs]
