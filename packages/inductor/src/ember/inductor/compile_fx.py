"""``compile_fx``: the ``inductor`` backend. AOT autograd's graphs in, C++ kernels and a wrapper out.

The pipeline, in order (each step a function of the one before):

    GraphLowering.run       FX nodes -> boxes and buffers (lowering.py)
    remove_dead             buffers nothing reads
    schedule                fused groups and extern calls (scheduler.py)
    group_kernel            one C++ kernel per group (codegen_cpp.py)
    cpp_builder.load        compile (or take from the disk cache) and load
    CompiledGraph           the wrapper that runs the steps (wrapper.py)
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Callable
from typing import Any

from ember.inductor import config, cpp_builder
from ember.inductor.codegen_cpp import group_kernel, module_source
from ember.inductor.combo import combo_kernel, local_buffers
from ember.inductor.graph import GraphLowering
from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, InputBuffer, MultiOutput
from ember.inductor.scheduler import FusedGroup, extern_reads, remove_dead, schedule
from ember.inductor.wrapper import AliasStep, CompiledGraph, ExternStep, KernelStep, MultiOutputStep
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
output_code_log = get_artifact_logger(__name__, "output_code")
schedule_log = get_artifact_logger(__name__, "schedule")


def compile_fx_inner(gm: Any, example_inputs: list) -> CompiledGraph:
    """One functional graph of core ops compiled to C++ kernels and a wrapper (a boxed callable)."""
    start = time.perf_counter()
    graph = GraphLowering(gm, example_inputs)
    graph.run()
    out_names = {o.name for o in graph.outputs if isinstance(o, Buffer)}
    live = remove_dead([b for b in graph.buffers if not isinstance(b, InputBuffer)], out_names)
    steps = _combine(schedule(live))
    external = {b.name for b in graph.buffers if not isinstance(b, ComputedBuffer)}
    kernels = []
    for i, step in enumerate(steps):
        if isinstance(step, list):  # consecutive groups: one combo kernel (combo.py)
            name = f"kernel{len(kernels)}"
            parts = [group_kernel(g, f"{name}_{k}", graph.name_to_buffer, external) for k, g in enumerate(step)]
            local = local_buffers(step, out_names | _reads_of(steps[i + 1 :]), graph.name_to_buffer)
            kernels.append(combo_kernel(parts, name, graph.name_to_buffer, local))
        elif isinstance(step, FusedGroup):
            kernels.append(group_kernel(step, f"kernel{len(kernels)}", graph.name_to_buffer, external))
    source = module_source(kernels) if kernels else ""
    lib = cpp_builder.load(source) if kernels else None
    run_steps = []
    specs = iter(kernels)
    lines = []
    for step in steps:
        if isinstance(step, FusedGroup | list):
            spec = next(specs)
            fn = getattr(lib, spec.name)
            fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
            fn.restype = ctypes.c_int
            run_steps.append(KernelStep(spec, fn, graph.name_to_buffer))
            inputs = spec.args[: len(spec.args) - len(spec.outputs)]
            lines.append(f"{', '.join(spec.outputs) or 'None'} = {spec.name}({', '.join(inputs)})")
        elif isinstance(step, AliasBuffer):
            run_steps.append(AliasStep(step))
            lines.append(f"{step.name} = {step.source.name}.as_strided({step.layout.size}, {step.layout.stride})")
        elif isinstance(step, MultiOutput):
            run_steps.append(MultiOutputStep(step))
            lines.append(f"{step.name} = {step.source.name}[{step.index}]")
        elif isinstance(step, ExternBuffer):
            run_steps.append(ExternStep(step))
            lines.append(f"{step.name} = {step.op}(...)  # extern: {step.reason}")
    if schedule_log.isEnabledFor(logging.INFO):
        schedule_log.info("schedule of %s:\n%s", gm.__class__.__name__, "\n".join(lines))
    if output_code_log.isEnabledFor(logging.INFO):
        outs = ", ".join(o.name if isinstance(o, Buffer) else repr(o) for o in graph.outputs)
        output_code_log.info("Output code:\n%s\n// wrapper:\n// %s\n// return %s", source, "\n// ".join(lines), outs)
    log.info("compiled a graph into %d kernels in %.2fs", len(kernels), time.perf_counter() - start)
    compiled = CompiledGraph(graph.inputs, run_steps, graph.outputs, source)
    compiled.lowered, compiled.fallbacks = graph.lowered, graph.fallbacks
    return compiled


def _reads_of(steps: list) -> set[str]:
    names: set[str] = set()
    for step in steps:
        for group in step if isinstance(step, list) else [step]:
            names |= group.reads() if isinstance(group, FusedGroup) else extern_reads(group)
    return names


def _combine(steps: list) -> list:
    """Runs of consecutive fused groups as lists (combo kernels), when ``config.combo_kernels`` is on."""
    if not config.combo_kernels:
        return steps
    out: list = []
    for step in steps:
        if isinstance(step, FusedGroup) and out and isinstance(out[-1], FusedGroup | list):
            last = out[-1] if isinstance(out[-1], list) else [out[-1]]
            out[-1] = [*last, step]
        else:
            out.append(step)
    return out


def _check_options(mode: str | None, options: dict | None) -> None:
    if mode not in (None, "default", "reduce-overhead"):
        raise NotImplementedError(f"mode={mode!r} is not built yet in Ember's code generator (max-autotune, ...)")
    for key in options or {}:
        raise NotImplementedError(f"options[{key!r}] is not built yet in Ember's code generator (the check mode, ...)")
    if config.freezing or config.max_autotune:
        raise NotImplementedError("ember._inductor.config.freezing and max_autotune are not built yet")


def _has_symbolic_inputs(gm: Any) -> bool:
    from ember.inductor.graph import _is_static

    for node in getattr(getattr(gm, "graph", None), "nodes", ()):
        if node.op == "placeholder":
            value = node.meta.get("val", node.meta.get("example_value"))
            if value is not None and not _is_static(value):
                return True
    return False


class _PerSizes:
    """A graph with symbolic sizes, compiled again for each set of concrete input sizes it is called with:
    kernels are specialized on sizes (one kernel serving every size is not built yet)."""

    def __init__(self, gm: Any, compile_one: Callable) -> None:
        self.gm, self.compile_one = gm, compile_one
        self.compiled: dict[tuple, Callable] = {}

    def __call__(self, *args: Any) -> Any:
        key = tuple(
            (tuple(a.shape), tuple(a.stride()), a.dtype) if hasattr(a, "stride") else (type(a), a) for a in args
        )
        fn = self.compiled.get(key)
        if fn is None:
            log.info("compiling %s for the sizes %s", type(self.gm).__name__, key)
            fn = self.compiled[key] = self.compile_one(self.gm, list(args))
        return fn(*args)


def compile_fx(
    model: Any, example_inputs: list, *, mode: str | None = None, options: dict | None = None, **kwargs: Any
) -> Callable:
    """The ``inductor`` backend: ``model``'s forward and backward graphs (AOT autograd, core ops)
    compiled to C++/OpenMP kernels. Kernels are specialized on the sizes of ``example_inputs``."""
    from ember.aot.aot_autograd import aot_module_simplified
    from ember.aot.backends import core_decompositions

    _check_options(mode, options)

    def compile_one(gm: Any, inputs: list) -> Callable:
        # input mutations stay in the graph (copy_ at its end): they become in-place stores (inplace.py)
        return aot_module_simplified(
            gm, inputs, fw_compiler=compile_fx_inner, bw_compiler=compile_fx_inner, decompositions=core_decompositions(),
            keep_inference_input_mutations=True,
        )  # fmt: skip

    if _has_symbolic_inputs(model):
        return _PerSizes(model, compile_one)
    return compile_one(model, example_inputs)


inductor = compile_fx
