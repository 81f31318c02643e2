"""AOT autograd: a function compiled ahead of time into a forward graph and a backward graph.

The pipeline, for one call signature (input shapes, dtypes, what requires grad, grad mode):

1. the inputs become fake tensors (symbolic sizes with ``dynamic=True``);
2. one fake run describes the outputs (which require grad, which alias inputs) and finds input
   mutations (``_metadata``);
3. without grad, ``make_fx`` traces the function alone: the inference graph;
   with grad, it traces the joint function ``(primals, tangents) -> (outputs, gradients)`` that runs
   the function and ``ember.autograd.grad`` on it, with the decompositions given;
4. random ops are rewritten to draw from the Philox seed and offset given as graph inputs (``_rng``);
5. the partitioner splits the joint graph into forward and backward graphs;
6. each graph goes to its compiler, and the runtime (``_runtime``) runs them inside an
   ``autograd.Function``.

A backend whose compiled graphs another process can load passes a ``cache`` (``autograd_cache``):
a program an earlier process saved for the same graph and signature is loaded instead of steps 1-6.

Both traces run through ``ember.func.functionalize``: the graphs hold no in-place op, and the
``copy_`` onto an input a trace ends with (a buffer updated in place) becomes a forward output that
the runtime copies onto the real input.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from ember.aot import _rng
from ember.aot._logging import log_graph
from ember.aot._metadata import (
    collect_metadata,
    lift_input_mutations,
    mutated_inputs,
    unlifted_mutations,
)
from ember.aot._runtime import CompiledPlan, CompiledProgram
from ember.aot.autograd_cache import load_program, save_program
from ember.aot.partitioners import default_partition
from ember.autograd import enable_grad, is_grad_enabled, no_grad
from ember.autograd import grad as autograd_grad
from ember.core.api import functions as _functions
from ember.core.symbolic import SymInt
from ember.core.tensor import Tensor
from ember.func import functionalize
from ember.fx._codegen import CodeGen
from ember.fx.experimental.proxy_tensor import make_fx
from ember.fx.graph_module import GraphModule
from ember.nn import Module
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = [
    "aot_function",
    "aot_module",
    "aot_module_simplified",
    "make_boxed_compiler",
    "make_boxed_func",
]

log = logging.getLogger("ember.aot")


def make_boxed_func(f: Callable) -> Callable:
    """``f`` as a boxed function: it takes its arguments as one list."""

    def g(args):
        return f(*args)

    g._boxed_call = True
    return g


def make_boxed_compiler(compiler: Callable) -> Callable:
    """A compiler whose compiled functions are boxed."""

    @functools.wraps(compiler)
    def f(fx_g: GraphModule, inps):
        out = compiler(fx_g, inps)
        if not getattr(out, "_boxed_call", False):
            out = make_boxed_func(out)
        return out

    return f


class _Config:
    def __init__(
        self, fw_compiler, bw_compiler, partition_fn, decompositions, inference_compiler, dynamic, keep_mutations
    ):
        self.fw_compiler = fw_compiler
        self.bw_compiler = bw_compiler if bw_compiler is not None else fw_compiler
        self.inference_compiler = inference_compiler if inference_compiler is not None else fw_compiler
        self.partition_fn = partition_fn
        self.decompositions = dict(decompositions or {})
        self.dynamic = dynamic
        self.keep_inference_input_mutations = keep_mutations


# Values that pytree keeps as leaves: a call made only of them flattens to its own arguments.
_LEAVES = (Tensor, int, float, bool, type(None))


def _signature(value: Any, dynamic: bool) -> Any:
    if type(value) is Tensor:  # the common case, from the tensor's own fields (the same values)
        shape = len(value._shape) if dynamic else (value._shape, value._stride)
        return (Tensor, shape, value.dtype, value.device, value.requires_grad, value.grad_fn is None)
    if isinstance(value, Tensor):
        shape = len(value.shape) if dynamic else (tuple(value.shape), tuple(value.stride()))
        return (Tensor, shape, value.dtype, value.device, value.requires_grad, value.is_leaf)
    if isinstance(value, int | float | bool | str | type(None)):
        return (type(value), value)
    return (type(value), id(value))


def aot_function(
    fn: Callable,
    fw_compiler: Callable,
    bw_compiler: Callable | None = None,
    partition_fn: Callable = default_partition,
    decompositions: dict | None = None,
    num_params_buffers: int = 0,
    keep_inference_input_mutations: bool = False,
    inference_compiler: Callable | None = None,
    *,
    dynamic: bool = False,
    enable_log: bool = True,
    cache: Any = None,
) -> Callable:
    """``fn`` compiled on its first call (and again for each new input signature): the forward and
    backward graphs traced ahead of time, partitioned, and given to ``fw_compiler``/``bw_compiler``.
    ``cache`` keeps compiled programs across processes (``autograd_cache``)."""
    aot_config = _Config(
        fw_compiler,
        bw_compiler,
        partition_fn,
        decompositions,
        inference_compiler,
        dynamic,
        keep_inference_input_mutations,
    )
    programs: dict[Any, CompiledProgram] = {}

    @functools.wraps(fn)
    def returned(*args, **kwargs):
        if not kwargs and all(isinstance(a, _LEAVES) for a in args):
            # The common call (a compiled graph's flat inputs): the spec is the number of arguments,
            # so the key needs no flattening and no spec printed.
            flat_args, in_spec = list(args), len(args)
        else:
            flat_args, in_spec = tree_flatten((args, kwargs))
            in_spec = repr(in_spec)
        key = (in_spec, is_grad_enabled(), tuple(_signature(a, dynamic) for a in flat_args))
        compiled = programs.get(key)
        if compiled is None:
            compiled = load_program(cache, key) if cache is not None else None
            if compiled is None:
                compiled = _compile(fn, flat_args, tree_flatten((args, kwargs))[1], aot_config)
                if cache is not None:
                    save_program(cache, key, compiled)
            programs[key] = compiled
        return tree_unflatten(compiled(flat_args), compiled.out_spec)

    return returned


def _compile(fn: Callable, flat_args: list, in_spec, aot_config: _Config) -> CompiledProgram:
    from ember._subclasses.fake_tensor import FakeTensorMode
    from ember.fx.experimental.symbolic_shapes import ShapeEnv

    tensor_positions = [i for i, a in enumerate(flat_args) if isinstance(a, Tensor)]
    out_spec_box: list = []

    def flat_fn(*tensors):
        leaves = list(flat_args)
        for position, t in zip(tensor_positions, tensors, strict=True):
            leaves[position] = t
        args, kwargs = tree_unflatten(leaves, in_spec)
        out = fn(*args, **kwargs)
        outs, out_spec = tree_flatten(out)
        if not out_spec_box:
            out_spec_box.append(out_spec)
        return outs

    fake_mode = FakeTensorMode(shape_env=ShapeEnv() if aot_config.dynamic else None)
    fakes = []
    for position in tensor_positions:
        real = flat_args[position]
        fake = (
            fake_mode.from_tensor(real, source=f"arg{position}") if aot_config.dynamic else fake_mode.from_tensor(real)
        )
        with fake_mode, no_grad():
            fake = fake.detach()
        fakes.append(
            fake.requires_grad_(real.requires_grad) if fake.dtype.is_floating_point or fake.dtype.is_complex else fake
        )
    needs_autograd = is_grad_enabled() and any(f.requires_grad for f in fakes)
    with fake_mode, enable_grad() if needs_autograd else no_grad():
        meta = collect_metadata(flat_fn, fakes)
    needs_autograd = needs_autograd and bool(meta.tangent_outputs)
    tracing_mode = "symbolic" if aot_config.dynamic else "fake"
    name = getattr(fn, "__qualname__", type(fn).__name__)
    if meta.mutated_grad_inputs and needs_autograd:
        raise NotImplementedError(
            f"AOT autograd: the function changes its input(s) {meta.mutated_grad_inputs}, which require grad, in "
            "place; only inputs that require no grad (buffers) may be mutated"
        )
    if not needs_autograd:
        traced = functionalize(flat_fn)
        with no_grad():
            graph = make_fx(traced, aot_config.decompositions, tracing_mode)(*fakes)
        mutated = []
        if not aot_config.keep_inference_input_mutations:
            mutated = lift_input_mutations(graph, len(meta.outputs))
            _check_mutations(graph)
        graph, rng = _rng.functionalize_rng(graph, num_fwd_outputs=len(meta.outputs) + len(mutated))
        log_graph("inference graph", name, graph)
        compiled = aot_config.inference_compiler(graph, _example_inputs(graph))
        plan = CompiledPlan(meta, tensor_positions, [], 0, 0, rng, compiled, None, mutated)
        return CompiledProgram(plan, out_spec_box[0], False)

    grad_inputs = [i for i, f in enumerate(fakes) if f.requires_grad]
    tangents = []
    with fake_mode:
        for i in meta.tangent_outputs:
            out = meta.fake_outputs[i]
            tangents.append(_functions["empty"](tuple(out.shape), dtype=out.dtype, device=out.device))
    meta.fake_outputs = []

    def joint(primals, tangents):
        # Under functionalization the primals are new wrappers: they are the leaves to differentiate.
        for i in grad_inputs:
            if not primals[i].requires_grad:
                primals[i].requires_grad_(True)
        outs = flat_fn(*primals)
        differentiated = [outs[i] for i in meta.tangent_outputs]
        wrt = [primals[i] for i in grad_inputs]
        grads = autograd_grad(differentiated, wrt, tangents, allow_unused=True)
        return [*outs, *grads]

    traced = functionalize(joint)
    with enable_grad():
        joint_graph = make_fx(traced, aot_config.decompositions, tracing_mode)(fakes, tangents)
    joint_graph.graph.set_codegen(CodeGen())  # flat placeholders: primals_1, ..., tangents_1, ...
    mutated = lift_input_mutations(joint_graph, len(meta.outputs))
    _check_mutations(joint_graph)
    _drop_own_frames(joint_graph)
    joint_graph.recompile()
    num_fwd_outputs = len(meta.outputs) + len(mutated)
    joint_graph, rng = _rng.functionalize_rng(joint_graph, num_fwd_outputs=num_fwd_outputs)
    num_fwd_outputs += 1 if rng else 0
    log_graph("joint graph", name, joint_graph, artifact="aot_joint_graph")
    fw_graph, bw_graph = aot_config.partition_fn(joint_graph, [fakes, tangents], num_fwd_outputs=num_fwd_outputs)
    # The forward returns (*outputs, *saved tensors, *saved sizes), whichever partitioner made it.
    (fw_output,) = fw_graph.graph.find_nodes(op="output")
    saved = list(fw_output.args[0])[num_fwd_outputs:]
    num_saved_syms = sum(not isinstance(n.meta.get("val"), Tensor) for n in saved)
    num_saved_tensors = len(saved) - num_saved_syms
    log_graph("forward graph", name, fw_graph)
    log_graph("backward graph", name, bw_graph)
    fw = aot_config.fw_compiler(fw_graph, _example_inputs(fw_graph))
    bw = aot_config.bw_compiler(bw_graph, _example_inputs(bw_graph))
    plan = CompiledPlan(meta, tensor_positions, grad_inputs, num_saved_tensors, num_saved_syms, rng, fw, bw, mutated)
    return CompiledProgram(plan, out_spec_box[0], True)


def _check_mutations(gm: GraphModule) -> None:
    mutated = mutated_inputs(gm)
    if mutated:
        raise unlifted_mutations(mutated)


def _drop_own_frames(gm: GraphModule) -> None:
    """Backward nodes were traced under this module's ``joint``: their stacks lose those frames, so that
    only the user's lines remain (none for the gradient ops autograd added)."""
    here = __file__.rsplit("/", 1)[0]
    for node in gm.graph.nodes:
        stack = node.meta.get("stack_trace")
        if not stack or here not in stack:
            continue
        lines = stack.splitlines()
        kept: list[str] = []
        skip = False
        for line in lines:
            if line.startswith("  File "):
                skip = here in line
            if not skip:
                kept.append(line)
        if kept:
            node.meta["stack_trace"] = "\n".join(kept)
        else:
            del node.meta["stack_trace"]


def _example_inputs(gm: GraphModule) -> list:
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def aot_module(mod: Module, fw_compiler: Callable, *args: Any, **kwargs: Any) -> Module:
    """A module whose forward runs ``mod`` through ``aot_function``, parameters and buffers as inputs."""
    from ember.func import functional_call

    def functional(params_and_buffers, *call_args, **call_kwargs):
        return functional_call(mod, params_and_buffers, call_args, call_kwargs)

    named = _named_state(mod)
    compiled = aot_function(functional, fw_compiler, *args, num_params_buffers=len(named), **kwargs)

    class AOTModule(Module):
        def __init__(self) -> None:
            super().__init__()
            self.orig_module = mod

        def forward(self, *call_args, **call_kwargs):
            return compiled(_named_state(mod), *call_args, **call_kwargs)

    return AOTModule()


def _named_state(mod: Module) -> dict[str, Tensor]:
    return {**dict(mod.named_parameters(remove_duplicate=False)), **dict(mod.named_buffers(remove_duplicate=False))}


def aot_module_simplified(
    mod: Module,
    args: list | tuple,
    fw_compiler: Callable,
    bw_compiler: Callable | None = None,
    partition_fn: Callable = default_partition,
    decompositions: dict | None = None,
    keep_inference_input_mutations: bool = False,
    inference_compiler: Callable | None = None,
    cudagraphs: Any = None,
    *,
    cache: Any = None,
) -> Callable:
    """What a compile backend does with the graph it receives: ``mod``'s parameters and buffers are
    lifted as inputs before ``args``, and the compiled function takes ``args`` only. ``cache``: see
    ``aot_function``."""
    from ember.func import functional_call

    _refuse_unbacked(mod)
    named = dict(mod.named_parameters(remove_duplicate=False))
    named.update(dict(mod.named_buffers(remove_duplicate=False)))
    names = list(named)

    def functional(*full_args):
        state = dict(zip(names, full_args[: len(names)], strict=True))
        out = functional_call(mod, state, tuple(full_args[len(names) :]))
        return out

    compiled = aot_function(
        functional,
        fw_compiler,
        bw_compiler,
        partition_fn,
        decompositions,
        num_params_buffers=len(names),
        keep_inference_input_mutations=keep_inference_input_mutations,
        inference_compiler=inference_compiler,
        dynamic=any(isinstance(s, SymInt) for a in args if isinstance(a, Tensor) for s in a.shape),
        cache=cache,
    )
    params = [named[n] for n in names]

    def forward(*runtime_args):
        return compiled(*params, *runtime_args)

    return forward


def _refuse_unbacked(mod: Any) -> None:
    """AOT autograd cannot trace values known only at run time (``item()`` under
    ``capture_scalar_outputs``, sizes of ``nonzero`` and the like under
    ``capture_dynamic_output_shape_ops``): say so instead of failing inside the trace."""
    from ember.fx.experimental.symbolic_shapes import free_symbols

    graph = getattr(mod, "graph", None)
    for node in graph.nodes if graph is not None else ():
        value = node.meta.get("example_value")
        for sym in _sym_scalars(value):
            env = getattr(sym.node, "shape_env", None)
            known = getattr(env, "var_to_val", {})
            if any(s not in known for s in free_symbols(sym)):
                raise NotImplementedError(
                    f"AOT autograd does not support data-dependent (unbacked) values: node {node.name!r} "
                    f"({node.format_node()}) has {sym}; use backend='eager', or turn off "
                    "ember._dynamo.config.capture_scalar_outputs / capture_dynamic_output_shape_ops"
                )


def _sym_scalars(value: Any) -> list:
    from ember.fx.experimental.symbolic_shapes import SymBool, SymFloat, SymInt

    if isinstance(value, SymInt | SymFloat | SymBool):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _sym_scalars(v)]
    if isinstance(value, Tensor):
        return [s for s in (*value.shape, *value.stride()) if isinstance(s, SymInt)]
    return []
