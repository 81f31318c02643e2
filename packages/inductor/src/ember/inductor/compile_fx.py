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

import logging
import time
from collections.abc import Callable
from typing import Any

from ember.core.dispatch import OpOverload
from ember.inductor import compile_workers, config, fx_graph_cache
from ember.inductor.codegen_cpp import group_kernel, module_source
from ember.inductor.graph import GraphLowering
from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, InputBuffer, MultiOutput
from ember.inductor.scheduler import FusedGroup, remove_dead, schedule
from ember.inductor.wrapper import (
    AliasStep,
    CompiledGraph,
    ExternStep,
    InputSpec,
    KernelStep,
    MultiOutputStep,
    Plan,
    Ref,
)
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
output_code_log = get_artifact_logger(__name__, "output_code")
schedule_log = get_artifact_logger(__name__, "schedule")
perf_log = get_artifact_logger(__name__, "perf_hints")


def compile_fx_inner(gm: Any, example_inputs: list) -> CompiledGraph:
    """One functional graph of core ops compiled to C++ kernels and a wrapper (a boxed callable)."""
    start = time.perf_counter()
    key = fx_graph_cache.graph_key(gm, example_inputs) if config.fx_graph_cache else None
    plan = fx_graph_cache.load(key) if key is not None else None
    if plan is not None:
        compiled = CompiledGraph(plan, compile_workers.load_all(_libraries(plan)))
        for hint in plan.hints:
            perf_log.info("%s", hint)
        _log_code(gm, compiled)
        log.info("loaded a compiled graph of %d kernels in %.3fs", compiled.kernel_count, time.perf_counter() - start)
        return compiled
    graph = GraphLowering(gm, example_inputs)
    graph.run()
    out_names = {o.name for o in graph.outputs if isinstance(o, Buffer)}
    live = remove_dead([b for b in graph.buffers if not isinstance(b, InputBuffer)], out_names)
    steps = schedule(live)
    lowered = time.perf_counter()
    external = {b.name for b in graph.buffers if not isinstance(b, ComputedBuffer)}
    kernels = []
    for step in steps:
        if isinstance(step, FusedGroup):
            kernels.append(group_kernel(step, f"kernel{len(kernels)}", graph.name_to_buffer, external))
    source = module_source(kernels) if kernels else ""
    generated = time.perf_counter()
    library_of = compile_workers.build_all(kernels)
    built = time.perf_counter()
    plan = _plan(graph, steps, kernels, library_of, source)
    compiled = CompiledGraph(plan, compile_workers.load_all(set(library_of.values())))
    if key is not None:
        fx_graph_cache.store(key, plan)
    _log_code(gm, compiled)
    log.info(
        "compiled a graph into %d kernels in %.2fs (lowering and scheduling %.2fs, C++ generation %.2fs, "
        "compiler %.2fs, wrapper %.2fs)", len(kernels), time.perf_counter() - start, lowered - start,
        generated - lowered, built - generated, time.perf_counter() - built,
    )  # fmt: skip
    return compiled


def _log_code(gm: Any, compiled: CompiledGraph) -> None:
    if schedule_log.isEnabledFor(logging.INFO):
        schedule_log.info("schedule of %s:\n%s", gm.__class__.__name__, compiled.wrapper_source)
    if output_code_log.isEnabledFor(logging.INFO):
        output_code_log.info("Output code:\n%s\n# wrapper:\n%s", compiled.source, compiled.wrapper_source)


def _libraries(plan: Plan) -> set[str]:
    return {s.library for s in plan.steps if isinstance(s, KernelStep)}


def _layout(buf: Buffer) -> tuple | None:
    return (buf.layout.size, buf.layout.stride) if buf.dtype is not None else None


def _ref(a: Any) -> Any:
    if isinstance(a, Buffer):
        return Ref(a.name)
    if isinstance(a, list | tuple):
        return type(a)(_ref(x) for x in a)
    return a


def _plan(graph: GraphLowering, steps: list, kernels: list, library_of: dict[str, str], source: str) -> Plan:
    """The wrapper's plan: the scheduled steps as plain data."""
    buffers = graph.name_to_buffer
    specs = iter(kernels)
    out: list = []
    for step in steps:
        if isinstance(step, FusedGroup):
            spec = next(specs)
            outputs = {n: (buffers[n].layout.size, buffers[n].layout.stride, buffers[n].dtype) for n in spec.outputs}
            layouts = [(buffers[n].layout.size, buffers[n].layout.stride) for n in spec.checked]
            out.append(KernelStep(spec.name, library_of[spec.name], spec.args, outputs, spec.checked, layouts))
        elif isinstance(step, AliasBuffer):
            out.append(AliasStep(step.name, step.source.name, step.layout.size, step.layout.stride, step.offset_delta))
        elif isinstance(step, MultiOutput):
            out.append(MultiOutputStep(step.name, step.source.name, step.index, _layout(step)))
        elif isinstance(step, ExternBuffer):
            op = str(step.op) if isinstance(step.op, OpOverload) else step.op
            kwargs = {k: _ref(v) for k, v in step.kwargs.items()}
            out.append(ExternStep(step.name, op, _ref(step.args), kwargs, step.reason, _layout(step)))
    inputs = [
        InputSpec(b.name, b.layout.size, b.layout.stride, b.dtype) if isinstance(b, InputBuffer) else b
        for b in graph.inputs
    ]
    outputs = [Ref(o.name) if isinstance(o, Buffer) else o for o in graph.outputs]
    lowered = {str(op) for op in graph.lowered}
    return Plan(inputs, out, outputs, source, config.memory_planning, lowered, list(graph.fallbacks), graph.hints)


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

    _check_options(mode, options)

    decompositions = _inductor_decompositions()

    def compile_one(gm: Any, inputs: list) -> Callable:
        return aot_module_simplified(
            gm, inputs, fw_compiler=compile_fx_inner, bw_compiler=compile_fx_inner, decompositions=decompositions
        )

    if _has_symbolic_inputs(model):
        return _PerSizes(model, compile_one)
    return compile_one(model, example_inputs)


inductor = compile_fx


def _attention_ops() -> list:
    from ember.core import ops

    names = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward")
    return [getattr(ops.aten, n).default for n in names if hasattr(ops.aten, n)]


_EXTERN_ATTENTION = _attention_ops()


def _inductor_decompositions() -> dict:
    """The core decompositions, less attention's: it stays one extern call of the flash kernel."""
    from ember.aot.backends import core_decompositions

    table = core_decompositions()
    for op in _EXTERN_ATTENTION:
        table.pop(op, None)
    return table
