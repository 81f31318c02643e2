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
from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, InputBuffer, MultiOutput, SizeInput
from ember.inductor.lowering_random import RngGraph, as_rng_tensor, rng_inputs
from ember.inductor.lowering_scan import GeneratedKernel
from ember.inductor.scheduler import FusedGroup, extern_reads, remove_dead, schedule
from ember.inductor.size_binding import SizeAssumptionError, SizeBinder
from ember.inductor.sizevars import size_symbols
from ember.inductor.wrapper import AliasStep, CompiledGraph, ExternStep, KernelStep, MultiOutputStep
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
output_code_log = get_artifact_logger(__name__, "output_code")
schedule_log = get_artifact_logger(__name__, "schedule")


def compile_fx_inner(gm: Any, example_inputs: list) -> CompiledGraph | RngGraph:
    """One functional graph of core ops compiled to C++ kernels and a wrapper (a boxed callable)."""
    start = time.perf_counter()
    # the Philox seed and offset ints of AOT autograd's random ops travel as one-element buffers
    rng_in, rng_out = rng_inputs(gm)
    if rng_in:
        example_inputs = [as_rng_tensor(a) if i in rng_in else a for i, a in enumerate(example_inputs)]
    graph = GraphLowering(gm, example_inputs)
    graph.run()
    out_names = {o.name for o in graph.outputs if isinstance(o, Buffer)}
    live = remove_dead([b for b in graph.buffers if not isinstance(b, InputBuffer)], out_names)
    steps = _combine(schedule(live))
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
        elif isinstance(step, FusedGroup):
            kernels.append(group_kernel(step, f"kernel{len(kernels)}", graph.name_to_buffer, external, symbols))
    # scans and other kernels generated for one node, called as extern ops: their source joins the module
    generated = [b.op for b in live if isinstance(b, ExternBuffer) and isinstance(b.op, GeneratedKernel)]
    source = module_source([*kernels, *generated]) if kernels or generated else ""
    lib = cpp_builder.load(source) if source else None
    for g in generated:
        g.bind(lib)
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
            run_steps.append(AliasStep(step, symbols))
            lines.append(f"{step.name} = {step.source.name}.as_strided({step.layout.size}, {step.layout.stride})")
        elif isinstance(step, MultiOutput):
            run_steps.append(MultiOutputStep(step))
            lines.append(f"{step.name} = {step.source.name}[{step.index}]")
        elif isinstance(step, ExternBuffer):
            run_steps.append(ExternStep(step, symbols))
            lines.append(f"{step.name} = {step.op}(...)  # extern: {step.reason}")
    if binder is not None:
        lines.insert(0, "size symbols bound from the inputs by:\n" + binder.source.rstrip())
    if schedule_log.isEnabledFor(logging.INFO):
        schedule_log.info("schedule of %s:\n%s", gm.__class__.__name__, "\n".join(lines))
    if output_code_log.isEnabledFor(logging.INFO):
        outs = ", ".join(o.name if isinstance(o, Buffer) else repr(o) for o in graph.outputs)
        output_code_log.info("Output code:\n%s\n// wrapper:\n// %s\n// return %s", source, "\n// ".join(lines), outs)
    log.info("compiled a graph into %d kernels in %.2fs", len(kernels), time.perf_counter() - start)
    compiled = CompiledGraph(graph.inputs, run_steps, graph.outputs, source, binder)
    compiled.lowered, compiled.fallbacks = graph.lowered, graph.fallbacks
    return RngGraph(compiled, rng_in, rng_out) if rng_in or rng_out else compiled


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
        if key != "check":
            raise NotImplementedError(f"options[{key!r}] is not built yet in Ember's code generator")
    if config.max_autotune:
        raise NotImplementedError("ember._inductor.config.max_autotune is not built yet")


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
    from ember.aot.backends import core_decompositions
    from ember.autograd import is_grad_enabled

    _check_options(mode, options)
    inner: Callable = compile_fx_inner
    check = bool((options or {}).get("check"))
    if check:
        from ember.inductor.check import compile_checked as inner
        from ember.inductor.check import with_user_frames

    def compile_one(gm: Any, inputs: list) -> Callable:
        if check:
            gm = with_user_frames(gm)
        if config.freezing and not is_grad_enabled():
            from ember.inductor.freezing import compile_frozen

            return compile_frozen(gm, inputs, inner, core_decompositions())
        # input mutations stay in the graph (copy_ at its end): they become in-place stores (inplace.py)
        return aot_module_simplified(
            gm, inputs, fw_compiler=inner, bw_compiler=inner, decompositions=core_decompositions(),
            keep_inference_input_mutations=not check,
        )  # fmt: skip

    if _has_symbolic_inputs(model):
        return _Dynamic(model, compile_one)
    return compile_one(model, example_inputs)


inductor = compile_fx
