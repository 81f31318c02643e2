"""The step wrapper: runs a compiled graph's steps in order (kernels and extern calls), one object a step.

It runs the graphs the generated wrapper (``wrapper.py``) does not take: graphs with symbolic sizes,
scans' generated kernels, and the check mode.

Each step is prepared once at compile time (pointer slots, allocation sizes), so a call does little
more than allocate outputs, fill a pointer array and call into the shared library. With symbolic
sizes, the graph's size symbols are bound from the inputs once per call (``size_binding.py``) and
kept in the environment under ``SYMBOLS``; allocation sizes, extern arguments and views are
evaluated from them, and the kernels take them as arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core.devices import CPU
from ember.core.tensor import empty
from ember.inductor.codegen_cpp import KernelSpec
from ember.inductor.indirect import raise_index_error
from ember.inductor.ir import AliasBuffer, Buffer, ExternBuffer, InputBuffer, MultiOutput
from ember.inductor.pointers import pointer_array
from ember.inductor.sizevars import evaluator, is_symbolic
from ember.logs import get_artifact_logger

perf_log = get_artifact_logger(__name__, "perf_hints")
SYMBOLS = ""  # the environment's key for the values of the size symbols


def _layout_fn(layout: Any, symbols: list) -> Callable[[tuple], tuple]:
    """``f(values) -> (sizes, strides)`` of ``layout`` at the symbols' values."""
    size, stride = evaluator(symbols, layout.size), evaluator(symbols, layout.stride)
    return lambda values: (size(values), stride(values))


class KernelStep:
    kernel = True  # counted by ``StepGraph.kernel_count`` (as Triton's launch steps are)

    def __init__(self, spec: KernelSpec, fn: Callable, buffers: dict[str, Buffer]) -> None:
        self.spec = spec
        self.fn = fn
        self.n = len(spec.args)
        self.allocs = [(name, buffers[name]) for name in spec.outputs]
        self.checked = spec.checked
        self.layout_of = {n: buffers[n].layout for n in spec.checked}
        self.nsym = len(spec.symbols)
        self.meta_len = self.nsym + sum(2 * len(buffers[n].size) for n in spec.checked)
        self.layouts = [_layout_fn(buf.layout, spec.symbols) for _, buf in self.allocs] if self.nsym else None

    def __call__(self, env: dict[str, Any]) -> None:
        if self.layouts is None:
            for name, buf in self.allocs:
                env[name] = empty(buf.layout.size, buf.dtype, CPU, buf.layout.stride)
        else:
            values = env[SYMBOLS]
            for (name, buf), layout in zip(self.allocs, self.layouts, strict=True):
                size, stride = layout(values)
                env[name] = empty(size, buf.dtype, CPU, stride)
        ptrs = pointer_array([env[name] for name in self.spec.args])
        meta = np.empty(max(self.meta_len, 1), dtype=np.int64)
        pos = self.nsym
        if self.nsym:
            meta[: self.nsym] = env[SYMBOLS]
        for name in self.checked:
            t = env[name]
            nd = len(t._shape)
            meta[pos : pos + nd] = t._shape
            meta[pos + nd : pos + 2 * nd] = t._stride
            pos += 2 * nd
        rc = self.fn(ptrs, meta.ctypes.data)
        if rc < 0:
            raise_index_error(rc)
        if rc != 0:
            name = self.checked[rc - 1]
            t = env[name]
            raise RuntimeError(
                f"compiled kernel {self.spec.name} was specialized for {name} with sizes and strides other than "
                f"{tuple(t._shape)}/{tuple(t._stride)}: it supports only {buffers_layout(self, name)}; "
                "recompile for these inputs"
            )


def buffers_layout(step: KernelStep, name: str) -> str:
    layout = step.layout_of[name]
    return f"sizes {layout.size}, strides {layout.stride}"


def _stride_fn(buf: Buffer, symbols: list) -> Callable[[tuple], tuple] | None:
    """``f(values) -> strides`` the graph traced for an extern result (``None``: not a tensor)."""
    if buf.dtype is None or buf.layout is None:
        return None
    return evaluator(list(symbols), buf.layout.stride)


def _conform(t: Any, stride_fn: Callable | None, env: dict[str, Any], name: str) -> Any:
    """``t`` laid out with the strides the kernels were built for: an eager kernel may lay its result
    out otherwise than its meta kernel said (attention's outputs), and the kernels read those strides."""
    if stride_fn is None or not hasattr(t, "_stride"):
        return t
    stride = stride_fn(env.get(SYMBOLS, ()))
    if all(a == b for a, b, n in zip(t._stride, stride, t._shape, strict=True) if n != 1):
        return t
    if perf_log.isEnabledFor(20):
        perf_log.info("extern result %s copied from strides %s to %s", name, tuple(t._stride), stride)
    out = empty(tuple(t._shape), t.dtype, CPU, stride)
    out.copy_(t)
    return out


class ExternStep:
    def __init__(self, buf: ExternBuffer, symbols: list = ()) -> None:
        self.buf = buf
        self.symbols = list(symbols)
        self.stride = _stride_fn(buf, self.symbols)

    def __call__(self, env: dict[str, Any]) -> None:
        b = self.buf
        args = _value(b.args, env, self.symbols)
        out = b.op(*args, **{k: _value(v, env, self.symbols) for k, v in b.kwargs.items()})
        env[b.name] = _conform(out, self.stride, env, b.name)


def _value(a: Any, env: dict[str, Any], symbols: list) -> Any:
    """An extern call's argument at run time. A module-level function, not a closure over ``env``: a
    closure calling itself would be a reference cycle holding the call's buffers until the cyclic
    collector runs."""
    if isinstance(a, Buffer):
        return env[a.name]
    if is_symbolic(a):
        return int(a.xreplace(dict(zip(symbols, env[SYMBOLS], strict=True))))
    if isinstance(a, list | tuple):
        return type(a)(_value(x, env, symbols) for x in a)
    return a


class MultiOutputStep:
    def __init__(self, buf: MultiOutput, symbols: list = ()) -> None:
        self.buf = buf
        self.stride = _stride_fn(buf, list(symbols))

    def __call__(self, env: dict[str, Any]) -> None:
        out = env[self.buf.source.name][self.buf.index]
        env[self.buf.name] = _conform(out, self.stride, env, self.buf.name)


class AliasStep:
    def __init__(self, buf: AliasBuffer, symbols: list = ()) -> None:
        self.buf = buf
        self.layout = _layout_fn(buf.layout, list(symbols))
        self.delta = evaluator(list(symbols), [buf.offset_delta])

    def __call__(self, env: dict[str, Any]) -> None:
        b = self.buf
        base = env[b.source.name]
        values = env.get(SYMBOLS, ())
        size, stride = self.layout(values)
        env[b.name] = base.as_strided(size, stride, base.storage_offset() + self.delta(values)[0])


def _same_strides(t: Any, spec: InputBuffer, stride: tuple | None = None) -> bool:
    stride = spec.layout.stride if stride is None else stride
    return all(a == b for a, b, n in zip(t._stride, stride, t._shape, strict=True) if n != 1)


def _restride(t: Any, spec: InputBuffer, stride: tuple | None = None) -> Any:
    """A copy of ``t`` laid out as the kernels were specialized for (AOT autograd may hand the backward
    saved tensors or gradients whose strides differ from the ones it traced with)."""
    stride = spec.layout.stride if stride is None else stride
    if perf_log.isEnabledFor(20):
        perf_log.info("input %s copied from strides %s to %s", spec.name, tuple(t._stride), stride)
    out = empty(tuple(t._shape), spec.dtype, CPU, stride)
    out.copy_(t)
    return out


class StepGraph:
    """A boxed callable (it takes its inputs as one list), as AOT autograd's compilers return."""

    _boxed_call = True

    def __init__(self, inputs: list, steps: list, outputs: list, source: str, binder: Any = None) -> None:
        self.inputs = inputs
        self.steps = steps
        self.outputs = outputs
        self.source = source
        # symbolic sizes: ``binder.bind(args)`` gives the symbols' values (None: every size is static)
        self.binder = binder
        if binder is not None:
            symbols = binder.symbols
            self.tensor_inputs = [(i, spec.name) for i, spec in enumerate(inputs) if isinstance(spec, InputBuffer)]
            self.input_strides = [
                evaluator(symbols, spec.layout.stride) if isinstance(spec, InputBuffer) else None for spec in inputs
            ]
            self.output_values = [evaluator(symbols, [o]) if is_symbolic(o) else None for o in outputs]
        else:
            # Static sizes: each tensor input's exact sizes, dtype and strides as plain ints, so that an
            # input laid out as traced (the common call) is checked by three comparisons.
            self.expected = [
                (spec.name, tuple(map(int, spec.size)), spec.dtype, tuple(map(int, spec.layout.stride)))
                if isinstance(spec, InputBuffer)
                else None
                for spec in inputs
            ]
        # filled in by compile_fx_inner, for tests and debugging
        self.lowered: set = set()
        self.fallbacks: list[tuple[str, str]] = []

    @property
    def kernel_count(self) -> int:
        return sum(getattr(s, "kernel", False) for s in self.steps)

    def __call__(self, args: list) -> list:
        if self.binder is not None:
            return self._call_symbolic(args)
        env: dict[str, Any] = {}
        for spec, expected, a in zip(self.inputs, self.expected, args, strict=True):
            if expected is not None and a._shape == expected[1] and a.dtype is expected[2] and a._stride == expected[3]:
                env[expected[0]] = a
                continue
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

    def _call_symbolic(self, args: list) -> list:
        values, moved = self.binder.bind(args)  # checks every size the kernels assume, and the dtypes
        env: dict[str, Any] = {SYMBOLS: values}
        for i, name in self.tensor_inputs:
            env[name] = args[i]
        for i in moved or ():
            env[self.inputs[i].name] = _restride(args[i], self.inputs[i], self.input_strides[i](values))
        for step in self.steps:
            step(env)
        return [
            env[o.name] if isinstance(o, Buffer) else (o if f is None else f(values)[0])
            for o, f in zip(self.outputs, self.output_values, strict=True)
        ]
