"""``compile_fx``: the ``inductor`` backend. AOT autograd's graphs in, C++ kernels and a wrapper out.

The pipeline, in order (each step a function of the one before):

    GraphLowering.run       FX nodes -> boxes and buffers (lowering.py)
    remove_dead             buffers nothing reads
    schedule                fused groups and extern calls (scheduler.py)
    group_kernel            one C++ kernel per group (codegen_cpp.py)
    compile_workers         compile in parallel (or take from the disk cache) and load
    CompiledGraph           the generated wrapper (wrapper.py), or StepGraph (wrapper_steps.py) for
                            symbolic sizes, scans and the check mode

A whole compiled graph of the generated wrapper is kept on disk (fx_graph_cache.py): a warm start
loads it and skips every step above. What AOT autograd made of a graph dynamo captured (the plan of
its forward and backward, naming their compiled graphs) is kept too (aot_cache.py): a warm start
skips AOT autograd's traces and partition as well.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from ember.core.dispatch import OpOverload
from ember.inductor import codegen_triton, compile_workers, config, cpp_builder, fx_graph_cache
from ember.inductor.aot_cache import GraphProgramCache
from ember.inductor.codegen_cpp import group_kernel, module_source
from ember.inductor.combo import combo_kernel, local_buffers
from ember.inductor.graph import GraphLowering, _is_static
from ember.inductor.inplace import MutationBuffer
from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, InputBuffer, MultiOutput, SizeInput
from ember.inductor.lifted_constants import lift_constants
from ember.inductor.lowering_random import RngGraph, as_rng_tensor, rng_inputs
from ember.inductor.lowering_scan import GeneratedKernel
from ember.inductor.runtime import triton_launch
from ember.inductor.scheduler import FusedGroup, extern_reads, remove_dead, schedule
from ember.inductor.size_binding import SizeAssumptionError, SizeBinder
from ember.inductor.sizevars import size_symbols
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
from ember.inductor.wrapper_steps import StepGraph
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
output_code_log = get_artifact_logger(__name__, "output_code")
schedule_log = get_artifact_logger(__name__, "schedule")
perf_log = get_artifact_logger(__name__, "perf_hints")


def compile_fx_inner(gm: Any, example_inputs: list, *, check: bool = False) -> CompiledGraph | StepGraph | RngGraph:
    """One functional graph of core ops compiled to C++ kernels and a wrapper (a boxed callable).

    The generated wrapper (``wrapper.py``: memory planning, the graph cache, kernels built in parallel)
    runs graphs of static sizes whose steps are kernels and eager ops; the step wrapper
    (``wrapper_steps.py``) runs the rest: symbolic sizes, scans' generated kernels and the check mode
    (``check``: every value an output, compared by ``check.py``)."""
    start = time.perf_counter()
    # the Philox seed and offset ints of AOT autograd's random ops travel as one-element buffers
    rng_in, rng_out = rng_inputs(gm)
    if rng_in:
        example_inputs = [as_rng_tensor(a) if i in rng_in else a for i, a in enumerate(example_inputs)]
    # cached: what the generated wrapper runs (symbolic sizes never reach it), and not
    # the check mode, freezing or max-autotune (its choices live in the autotune cache, measured here)
    autotuned = config.max_autotune or config.max_autotune_gemm
    cacheable = config.fx_graph_cache and not (check or config.freezing or autotuned)
    cacheable = cacheable and all(_is_static(a) for a in example_inputs)
    triton = config.cpu_backend == "triton"
    if triton:
        triton_launch.require_triton("cpu")
        cacheable = False  # the graph cache keeps the generated wrapper's plans, which run C++ kernels
    elif config.cpu_backend != "cpp":
        raise ValueError(f'ember._inductor.config.cpu_backend must be "cpp" or "triton", got {config.cpu_backend!r}')
    key = fx_graph_cache.graph_key(gm, example_inputs) if cacheable else None
    cached = cached_graph(key, type(gm).__name__) if key is not None else None
    if cached is not None:
        return RngGraph(cached, rng_in, rng_out) if rng_in or rng_out else cached
    graph = GraphLowering(gm, example_inputs)
    graph.run()
    out_names = {o.name for o in graph.outputs if isinstance(o, Buffer)}
    live = remove_dead([b for b in graph.buffers if not isinstance(b, InputBuffer)], out_names)
    steps = schedule(live) if triton else _combine(schedule(live))
    lowered = time.perf_counter()
    external = {b.name for b in graph.buffers if not isinstance(b, ComputedBuffer)}
    binder = _binder(graph)
    symbols = tuple(binder.symbols) if binder is not None else ()
    kernels = []
    for i, step in enumerate(steps):
        if isinstance(step, list):  # consecutive groups: one combo kernel (combo.py)
            name = f"kernel{len(kernels)}"
            parts = [
                group_kernel(g, f"{name}_{k}", graph.name_to_buffer, external, symbols) for k, g in enumerate(step)
            ]
            local = local_buffers(step, out_names | _reads_of(steps[i + 1 :]), graph.name_to_buffer)
            kernels.append(combo_kernel(parts, name, graph.name_to_buffer, local))
        elif isinstance(step, FusedGroup) and triton:
            kernels.append(_triton_kernel(step, f"kernel{len(kernels)}", graph.name_to_buffer, external, symbols))
        elif isinstance(step, FusedGroup):
            kernels.append(group_kernel(step, f"kernel{len(kernels)}", graph.name_to_buffer, external, symbols))
        elif _kernel_extern(step):
            kernels.append(step.op.spec(step.name))
    # scans and other kernels generated for one node, called as extern ops: their source joins the module
    generated = [b.op for b in live if isinstance(b, ExternBuffer) and isinstance(b.op, GeneratedKernel)]
    generated = [g for g in generated if not g.as_kernel]
    if check or binder is not None or generated or triton:
        compiled = _step_graph(gm, graph, steps, kernels, generated, binder)
        log.info("compiled a graph into %d kernels in %.2fs", len(kernels), time.perf_counter() - start)
        return RngGraph(compiled, rng_in, rng_out) if rng_in or rng_out else compiled
    source = module_source(kernels) if kernels else ""
    generated_at = time.perf_counter()
    library_of = compile_workers.build_all(kernels)
    built = time.perf_counter()
    plan = _plan(graph, steps, kernels, library_of, source)
    compiled = CompiledGraph(plan, compile_workers.load_all(set(library_of.values())))
    if key is not None and fx_graph_cache.store(key, plan):
        compiled.cache_key = key  # the name AOT autograd's disk cache keeps of it
    _log_code(type(gm).__name__, compiled.source, compiled.wrapper_source)
    log.info(
        "compiled a graph into %d kernels in %.2fs (lowering and scheduling %.2fs, C++ generation %.2fs, "
        "compiler %.2fs, wrapper %.2fs)", len(kernels), time.perf_counter() - start, lowered - start,
        generated_at - lowered, built - generated_at, time.perf_counter() - built,
    )  # fmt: skip
    return RngGraph(compiled, rng_in, rng_out) if rng_in or rng_out else compiled


def _triton_kernel(
    group: FusedGroup, name: str, buffers: dict, external: set[str], symbols: tuple
) -> codegen_triton.TritonKernelSpec | Any:
    """The Triton kernel of ``group``, or its C++ kernel where the Triton generator has no code for it."""
    try:
        return codegen_triton.group_kernel(group, name, buffers, external, symbols)
    except codegen_triton.TritonUnsupported as why:
        perf_log.info("%s stays a C++ kernel: %s", name, why)
        return group_kernel(group, name, buffers, external, symbols)


def cached_graph(key: str, name: str) -> CompiledGraph | None:
    """The compiled graph kept in the graph cache under ``key``, loaded (None: not there)."""
    start = time.perf_counter()
    plan = fx_graph_cache.load(key)
    if plan is None:
        return None
    compiled = CompiledGraph(plan, compile_workers.load_all(_libraries(plan)))
    compiled.cache_key = key
    for hint in plan.hints:
        perf_log.info("%s", hint)
    _log_code(name, compiled.source, compiled.wrapper_source)
    log.info("loaded a compiled graph of %d kernels in %.3fs", compiled.kernel_count, time.perf_counter() - start)
    return compiled


def _program_graph(key: str) -> CompiledGraph | None:
    """A compiled graph that a program of AOT autograd's disk cache names."""
    return cached_graph(key, "a graph of AOT autograd's cached program")


def _log_code(name: str, source: str, wrapper_source: str) -> None:
    if schedule_log.isEnabledFor(logging.INFO):
        schedule_log.info("schedule of %s:\n%s", name, wrapper_source)
    if output_code_log.isEnabledFor(logging.INFO):
        output_code_log.info("Output code:\n%s\n# wrapper:\n%s", source, wrapper_source)


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
    """The generated wrapper's plan: the scheduled steps as plain data."""
    buffers = graph.name_to_buffer
    specs = iter(kernels)
    out: list = []
    for step in steps:
        if isinstance(step, FusedGroup | list) or _kernel_extern(step):
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
    written = {b.target.name for b in graph.buffers if isinstance(b, MutationBuffer)}
    inputs = [
        InputSpec(b.name, b.layout.size, b.layout.stride, b.dtype, b.name in written)
        if isinstance(b, InputBuffer)
        else b
        for b in graph.inputs
    ]
    outputs = [Ref(o.name) if isinstance(o, Buffer) else o for o in graph.outputs]
    lowered = {str(op) for op in graph.lowered}
    return Plan(inputs, out, outputs, source, config.memory_planning, lowered, list(graph.fallbacks), graph.hints)


def _step_graph(
    gm: Any, graph: GraphLowering, steps: list, kernels: list, generated: list, binder: SizeBinder | None
) -> StepGraph:
    """The step wrapper: one library of the kernels and the generated kernels, steps run in turn."""
    from ember.inductor import wrapper_steps as ws

    symbols = tuple(binder.symbols) if binder is not None else ()
    cpp = [k for k in kernels if not isinstance(k, codegen_triton.TritonKernelSpec)]
    tri = [k for k in kernels if isinstance(k, codegen_triton.TritonKernelSpec)]
    source = module_source([*cpp, *generated]) if cpp or generated else ""
    lib = cpp_builder.load(source) if source else None
    triton_source = codegen_triton.module_source(tri) if tri else ""
    triton_module = triton_launch.load_module(triton_source) if tri else None
    for g in generated:
        g.bind(lib)
    run_steps = []
    specs = iter(kernels)
    lines = []
    for step in steps:
        if isinstance(step, FusedGroup | list) or _kernel_extern(step):
            spec = next(specs)
            if isinstance(spec, codegen_triton.TritonKernelSpec):
                run_steps.append(
                    triton_launch.TritonKernelStep(spec, getattr(triton_module, spec.name), graph.name_to_buffer)
                )
                lines.append(f"{', '.join(spec.outputs) or 'None'} = {spec.name}[grid]({', '.join(spec.args)})")
                continue
            fn = getattr(lib, spec.name)
            fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
            fn.restype = ctypes.c_int
            run_steps.append(ws.KernelStep(spec, fn, graph.name_to_buffer))
            inputs = spec.args[: len(spec.args) - len(spec.outputs)]
            lines.append(f"{', '.join(spec.outputs) or 'None'} = {spec.name}({', '.join(inputs)})")
        elif isinstance(step, AliasBuffer):
            run_steps.append(ws.AliasStep(step, symbols))
            lines.append(f"{step.name} = {step.source.name}.as_strided({step.layout.size}, {step.layout.stride})")
        elif isinstance(step, MultiOutput):
            run_steps.append(ws.MultiOutputStep(step, symbols))
            lines.append(f"{step.name} = {step.source.name}[{step.index}]")
        elif isinstance(step, ExternBuffer):
            run_steps.append(ws.ExternStep(step, symbols))
            lines.append(f"{step.name} = {step.op}(...)  # extern: {step.reason}")
    if binder is not None:
        lines.insert(0, "size symbols bound from the inputs by:\n" + binder.source.rstrip())
    outs = ", ".join(o.name if isinstance(o, Buffer) else repr(o) for o in graph.outputs)
    source = "\n".join(part for part in (triton_source, source) if part)
    _log_code(type(gm).__name__, source, "\n".join(lines) + f"\nreturn {outs}")
    compiled = StepGraph(graph.inputs, run_steps, graph.outputs, source, binder)
    compiled.lowered, compiled.fallbacks = graph.lowered, graph.fallbacks
    return compiled


def _binder(graph: GraphLowering) -> SizeBinder | None:
    """The size binding of a graph with symbolic sizes (None when every size is static)."""
    exprs = []
    for spec in graph.inputs:
        if isinstance(spec, InputBuffer):
            exprs += [*spec.layout.size, *spec.layout.stride]
        elif isinstance(spec, SizeInput):
            exprs.append(spec.expr)
    if not size_symbols(exprs):
        return None
    return SizeBinder(graph.inputs, graph.shape_env)


def _kernel_extern(step: Any) -> bool:
    """A generated kernel that runs as a kernel step (a scatter of static sizes), not as an extern call."""
    return isinstance(step, ExternBuffer) and isinstance(step.op, GeneratedKernel) and step.op.as_kernel


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


_AUTOTUNE_MODES = ("max-autotune", "max-autotune-no-cudagraphs")


def _check_options(mode: str | None, options: dict | None) -> None:
    if mode not in (None, "default", "reduce-overhead", *_AUTOTUNE_MODES):
        raise NotImplementedError(f"mode={mode!r} is not built yet in Ember's code generator")
    for key in options or {}:
        if key not in ("check", "max_autotune", "max_autotune_gemm"):
            raise NotImplementedError(f"options[{key!r}] is not built yet in Ember's code generator")


def _autotuned(inner: Callable) -> Callable:
    """``inner`` compiling with GEMMs chosen by measurement (``config.max_autotune`` on while it runs)."""

    def compile_autotuned(gm: Any, example_inputs: list) -> Any:
        saved = config.max_autotune
        config.max_autotune = True
        try:
            return inner(gm, example_inputs)
        finally:
            config.max_autotune = saved

    return compile_autotuned


def _has_symbolic_inputs(gm: Any) -> bool:
    from ember.inductor.graph import _is_static

    for node in getattr(getattr(gm, "graph", None), "nodes", ()):
        if node.op == "placeholder":
            value = node.meta.get("val", node.meta.get("example_value"))
            if value is not None and not _is_static(value):
                return True
    return False


class _Dynamic:
    """A graph with symbolic sizes, traced by AOT autograd with symbolic sizes: its kernels take the sizes
    as arguments and serve every size of its dynamic dimensions.

    AOT autograd's trace specializes sizes 0 and 1 and makes equal sizes one symbol, so each pattern of
    those (a cheap key of the inputs' sizes) gets its own trace; the sizes themselves do not. A call
    whose sizes break another assumption of a trace (a guard its meta kernels took, checked before any
    kernel runs) is traced again, as dynamo recompiles on a failed guard. Size inputs that are a tensor
    input's size (``x.size(0)``) are read from the tensor inside the graph instead, so that AOT autograd
    does not take them for constants.
    """

    def __init__(self, gm: Any, compile_one: Callable) -> None:
        self.gm, self.positions = _sizes_from_tensors(gm)
        self.compile_one = compile_one
        self.examples = [_example_value(n) for n in self.gm.graph.nodes if n.op == "placeholder"]
        self.compiled: dict[tuple, list[Callable]] = {}

    def __call__(self, *args: Any) -> Any:
        args = [args[i] for i in self.positions]
        key = _size_pattern(args)
        traced = self.compiled.setdefault(key, [])
        for fn in traced:
            try:
                return fn(*args)
            except SizeAssumptionError as e:
                log.info("%s: %s", type(self.gm).__name__, e)
        log.info("tracing %s with symbolic sizes for the size pattern %s", type(self.gm).__name__, key)
        fn = self.compile_one(self.gm, self.examples)
        traced.append(fn)
        return fn(*args)


def _example_value(node: Any) -> Any:
    return node.meta.get("example_value", node.meta.get("val"))


def _sizes_from_tensors(gm: Any) -> tuple[Any, list[int]]:
    """A copy of ``gm`` whose size inputs that are sizes of its tensor inputs read them from the tensor,
    and the positions of the inputs it keeps."""
    import copy

    from ember.fx import GraphModule

    graph = copy.deepcopy(gm.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    by_source = {}
    for n in placeholders:
        source = n.meta.get("source")
        if source is not None and hasattr(_example_value(n), "shape"):
            by_source[source.name()] = n
    keep = []
    for i, n in enumerate(placeholders):
        source = n.meta.get("source")
        base = getattr(source, "base", None)
        if getattr(source, "prop", None) == "size" and base is not None and base.name() in by_source:
            with graph.inserting_before(n):  # after its tensor (made first), before its uses
                size = graph.call_method("size", (by_source[base.name()], source.index))
            size.meta = dict(n.meta)
            n.replace_all_uses_with(size)
            graph.erase_node(n)
        else:
            keep.append(i)
    if len(keep) == len(placeholders):
        return gm, keep
    return GraphModule(gm, graph), keep


def _size_pattern(args: list) -> tuple:
    """Which sizes are 0 or 1, and which are equal to an earlier one: what AOT autograd specializes."""
    first: dict[int, int] = {}
    out = []
    for a in args:
        for n in getattr(a, "_shape", ()):
            if n in (0, 1):
                out.append(n)
            else:
                out.append(-1 - first.setdefault(n, len(first)))
        out.append(None)
    return tuple(out)


def compile_fx(
    model: Any, example_inputs: list, *, mode: str | None = None, options: dict | None = None, **kwargs: Any
) -> Callable:
    """The ``inductor`` backend: ``model``'s forward and backward graphs (AOT autograd, core ops)
    compiled to C++ kernels (parallel loops on the runtime pool). A graph with symbolic sizes gets kernels that serve every size of
    its dynamic dimensions; other graphs are specialized on the sizes of ``example_inputs``."""
    from ember.aot.aot_autograd import aot_module_simplified
    from ember.aot.partitioners import min_cut_rematerialization_partition
    from ember.autograd import is_grad_enabled

    _check_options(mode, options)
    inner: Callable = compile_fx_inner
    check = bool((options or {}).get("check"))
    if check:
        from ember.inductor.check import compile_checked, with_user_frames

        inner = functools.partial(compile_checked, functools.partial(compile_fx_inner, check=True))
    autotuned = mode in _AUTOTUNE_MODES or any((options or {}).get(k) for k in ("max_autotune", "max_autotune_gemm"))
    if autotuned:
        inner = _autotuned(inner)
    inner = lift_constants(inner)

    decompositions = _inductor_decompositions()

    def compile_one(gm: Any, inputs: list) -> Callable:
        if check:
            gm = with_user_frames(gm)
        if config.freezing and not is_grad_enabled():
            from ember.inductor.freezing import compile_frozen

            return compile_frozen(gm, inputs, inner, decompositions)
        # a new process loads what AOT autograd made of this graph (aot_cache.py), unless the compile
        # runs eager alongside (check) or measures GEMMs (their choices are not in the graph cache)
        cache = None if check or autotuned else GraphProgramCache.for_graph(gm, inputs, _program_graph)
        # input mutations stay in the graph (copy_ at its end): they become in-place stores (inplace.py);
        # the forward saves the fewest bytes for the backward, which runs cheap ops again (min cut)
        return aot_module_simplified(
            gm, inputs, fw_compiler=inner, bw_compiler=inner, decompositions=decompositions,
            partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=not check, cache=cache,
        )  # fmt: skip

    if _has_symbolic_inputs(model):
        return _Dynamic(model, compile_one)
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
