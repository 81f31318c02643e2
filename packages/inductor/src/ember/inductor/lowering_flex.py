"""``higher_order.flex_attention`` lowered to one generated C++ kernel (``flex_template.py``).

The score_mod and mask_mod are traced with ``make_fx`` on one-element inputs (the score in the
query's dtype; ``b``, ``h``, ``q_idx``, ``kv_idx`` as int32, as eager passes them), so what they compute
arrives as core ops; each op goes through the same lowerings as a pointwise kernel's, and the
result is written as scalar C++ by the ``ops`` handler (``cpp_ops.CppOverrides``), to be inlined in
the kernel's inner loop. Tensors a mod captures are graph constants of its trace: they become
inputs of the kernel, read at the index the mod computes (``aten.index.Tensor`` with integer index
values is lowered here as such a read; the index is checked against the size).

A mod the tracer or the lowerings cannot handle (data-dependent Python control flow, ops without a
lowering, dtypes other than float32/float64 for q, k, v), leaves the op an extern call of its eager
kernel, with the reason in ``perf_hints``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ember.core import dtypes as D
from ember.core import ops as core_ops
from ember.core.creation import from_numpy
from ember.inductor.cpp_ops import CppOverrides
from ember.inductor.flex_template import FlexKernel, FlexProblem, ModCode
from ember.inductor.flex_template_bwd import FlexBackwardKernel
from ember.inductor.ir import ExternBuffer, InputBuffer, Layout, MultiOutput, TensorBox
from ember.inductor.layouts import _dense_layout_of_extern
from ember.inductor.lowering import LOWERINGS, broadcast_shapes, make_box, numel
from ember.inductor.virtualized import ops, set_ops_handler
from ember.logs import get_artifact_logger

output_code_log = get_artifact_logger(__name__, "output_code")

_names = itertools.count()
# Tiles without a BlockMask (query rows x keys); with one, its block sizes.
DENSE_TILES = (64, 128)


class _ModHandler(CppOverrides):
    """The C++ handler, plus the checked index of a read of a captured tensor."""

    def flex_index(self, value: str, size: int) -> str:
        return self._var(f"ember_flex_index(int64_t({value}), {size})")


class _ModContext:
    """What a lowering reads of its context, for a mod's one-element graph (nothing is realized)."""

    def __init__(self) -> None:
        self.current: Any = None

    @property
    def out_dtype(self) -> Any:
        val = self.current.meta.get("val")
        return (val[0] if isinstance(val, list | tuple) else val).dtype

    def out_size(self) -> tuple:
        val = self.current.meta.get("val")
        return tuple((val[0] if isinstance(val, list | tuple) else val).shape)

    def hint(self, expr: Any) -> int:
        return int(expr)

    def realize(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the mod computes a value that would need a buffer of its own")

    new_buffer = realize


def _index(ctx: _ModContext, src: TensorBox, indices: list) -> TensorBox:
    """``src[i0, i1, ...]`` for one-element integer index values: a read at a computed index."""
    if not isinstance(src, TensorBox) or src.buffer is None:
        raise NotImplementedError("indexing a computed value in a mod (only captured tensors are read by index)")
    if any(i is None or not isinstance(i, TensorBox) or i.dtype.is_floating_point or i.dtype is D.bool_
           for i in indices):  # fmt: skip
        raise NotImplementedError("a mod indexes with something other than integer tensors")
    if numel(broadcast_shapes(*[i.size for i in indices])) != 1:
        raise NotImplementedError("a mod indexes with more than one index per position")
    sizes = [int(n) for n in src.size]
    rest = len(src.size) - len(indices)

    def loader(index: list) -> Any:
        subs = []
        for ix, n in zip(indices, sizes, strict=False):
            value = ops.to_dtype(ix.loader([sympy.Integer(0)] * len(ix.size)), D.int64)
            try:
                check = ops.flex_index
            except AttributeError:  # counting handlers: only the shape of the body matters
                subs.append(sympy.Integer(0))
                continue
            subs.append(sympy.Symbol(check(value, n), integer=True, nonnegative=True))
        return src.loader(subs + list(index[len(index) - rest :] if rest else []))

    out = (1, *src.size[len(indices) :])
    return make_box(out, src.dtype, loader)


def _joint(score_mod: Callable) -> Callable:
    """``(s, b, h, q, kv, g) -> (score_mod(s, ...), g · d score_mod / d s)``, for the backward."""
    from ember.autograd import grad
    from ember.autograd.grad_mode import enable_grad

    def joint(s, b, h, q, kv, g):
        with enable_grad():
            s = s.detach().requires_grad_(True)
            y = score_mod(s, b, h, q, kv)
            gs = grad(y, [s], grad_outputs=g, allow_unused=True)[0] if y.requires_grad else None
        return y.detach(), (s.detach() * 0 if gs is None else gs)

    return joint


def _trace(fn: Callable, dtype: Any, with_score: bool, with_grad: bool = False) -> Any:
    from ember.aot.backends import core_decompositions
    from ember.fx.experimental.proxy_tensor import make_fx

    args = [from_numpy(np.zeros(1, dtype=np.int32)) for _ in range(4)]
    if with_score:
        args.insert(0, from_numpy(np.zeros(1, dtype=dtype.np)))
    if with_grad:
        args.append(from_numpy(np.ones(1, dtype=dtype.np)))
        fn = _joint(fn)
    what = "score_mod" if with_score else "mask_mod"
    try:
        trace = make_fx(fn, core_decompositions(), tracing_mode="fake", _allow_non_fake_inputs=True)
        return trace(*args)
    except Exception as e:
        raise NotImplementedError(f"the {what} could not be traced ({type(e).__name__}: {e})") from None


def lower_mod(fn: Callable, dtype: Any, with_score: bool, prefix: str, gradient: bool = False) -> ModCode:
    """The C++ of ``fn`` (a score_mod when ``with_score``, else a mask_mod) for scores of ``dtype``; with
    ``gradient``, of the score_mod's gradient with respect to the score times ``fx_g``."""
    what = "score_mod" if with_score else "mask_mod"
    gm = _trace(fn, dtype, with_score, gradient)
    variables = ["fx_s", "fx_b", "fx_h", "fx_q", "fx_kv"] if with_score else ["fx_b", "fx_h", "fx_q", "fx_kv"]
    if gradient:
        variables.append("fx_g")
    ctx = _ModContext()
    env: dict[Any, Any] = {}
    captured: list = []
    names: list[str] = []
    placeholders = iter(variables)
    result: Any = None
    for node in gm.graph.nodes:
        ctx.current = node
        if node.op == "placeholder":
            var, val = next(placeholders), node.meta.get("val")
            env[node] = TensorBox((1,), val.dtype, lambda index, var=var: var)
        elif node.op == "get_attr":
            tensor = getattr(gm, node.target)
            if any(not isinstance(s, int) for s in (*tensor.shape, *tensor.stride())):
                raise NotImplementedError(f"the {what} captures a tensor of symbolic size")
            name = f"{prefix}cap{len(captured)}"
            captured.append(tensor)
            names.append(name)
            buf = InputBuffer(name, tensor.dtype, Layout(tuple(tensor.shape), tuple(tensor.stride()), 0))
            env[node] = TensorBox.of(buf)
        elif node.op == "call_function":
            args = _map(node.args, env)
            kwargs = {k: _map(v, env) for k, v in node.kwargs.items()}
            if node.target is core_ops.aten.index.Tensor:
                env[node] = _index(ctx, *args, **kwargs)
                continue
            lowering = LOWERINGS.get(node.target)
            if lowering is None:
                raise NotImplementedError(f"the {what} calls {node.target}, which has no lowering")
            out = lowering(ctx, *args, **kwargs)
            if not isinstance(out, TensorBox):
                raise NotImplementedError(f"the {what} calls {node.target}, whose lowering is not pointwise")
            env[node] = out
        elif node.op == "output":
            result = _map(node.args[0], env)
            if gradient:
                result = result[1]
        else:
            raise NotImplementedError(f"the {what}'s trace holds a {node.op} node")
    if isinstance(result, list | tuple) or not isinstance(result, TensorBox):
        raise NotImplementedError(f"the {what} returns {type(result).__name__}, not one tensor")
    if numel(result.size) != 1:
        raise NotImplementedError(f"the {what} returns a value of shape {tuple(result.size)} for one position")
    if not with_score and result.dtype is not D.bool_:
        raise RuntimeError(f"mask_mod must return a bool tensor, got dtype {result.dtype}")
    handler = _ModHandler({n: n for n in names}, {n: t.dtype for n, t in zip(names, captured, strict=True)}, "", prefix)
    with set_ops_handler(handler):
        value = result.loader([sympy.Integer(0)] * len(result.size))
    if handler.post or handler.reduction_info:
        raise NotImplementedError(f"the {what} reduces")
    return ModCode(tuple(handler.body), str(value), tuple(captured), tuple(names))


def _map(a: Any, env: dict) -> Any:
    if hasattr(a, "op") and hasattr(a, "users"):
        return env[a]
    if isinstance(a, list | tuple):
        return type(a)(_map(x, env) for x in a)
    return a


def _problem(query: Any, key: Any, value: Any, spec: str, scale: float) -> tuple[Any, FlexProblem, ModCode | None]:
    """The spec, the problem, and the mask_mod's code (None when no tile is partial)."""
    from ember.nn.attention._flex_op import lookup_spec

    s = lookup_spec(spec)
    dtype = query.dtype
    if dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"the FlexAttention kernel is generated for float32 and float64, not {dtype}")
    for t in (query, key, value):
        if any(not isinstance(n, int) and not getattr(n, "is_Integer", False) for n in t.size):
            raise NotImplementedError("FlexAttention over symbolic sizes (the kernel is generated per size)")
    b, hq, lq, e = (int(n) for n in query.size)
    hkv, skv, ev = int(key.size[1]), int(key.size[2]), int(value.size[3])
    if lq == 0 or skv == 0 or b * hq == 0:
        raise NotImplementedError("FlexAttention over empty inputs")
    mask = None
    status = s.status
    if status is not None:
        tq, tk = s.q_block, s.kv_block
        if status.shape[-2] < -(-lq // tq) or status.shape[-1] < -(-skv // tk):
            raise NotImplementedError(f"a block status of shape {status.shape} for L={lq} and S={skv}")
        if s.mask_mod is not None and (status == 1).any():
            mask = lower_mod(s.mask_mod, dtype, False, "mm_")
    else:
        tq, tk = DENSE_TILES
    problem = FlexProblem(dtype, b, hq, hkv, lq, skv, e, ev, tq, tk, float(scale),
                          None if status is None else tuple(status.shape))  # fmt: skip
    return s, problem, mask


def _extern(ctx: Any, kernel: Any, inputs: tuple) -> tuple:
    """The kernel's call as an extern buffer, and a box for each of its outputs (the node's values)."""
    bufs = tuple(None if x is None else ctx.realize(x) for x in inputs)
    node = ctx.current
    origin = [f"{node.name} = {node.target}"]
    reason = f"the generated FlexAttention kernel {kernel.name}"
    src = ExternBuffer(f"buf{len(ctx.buffers)}", None, Layout((), ()), kernel, bufs, {}, reason, origin)
    ctx._register(src)
    outs = []
    for i, val in enumerate(node.meta["val"]):
        m = MultiOutput(f"buf{len(ctx.buffers)}", val.dtype, _dense_layout_of_extern(val), src, i)
        outs.append(TensorBox.of(ctx._register(m)))
    return tuple(outs)


def lower_flex_attention(ctx: Any, query: Any, key: Any, value: Any, spec: str, scale: float) -> tuple:
    s, problem, mask = _problem(query, key, value, spec, scale)
    score = lower_mod(s.score_mod, problem.dtype, True, "sm_") if s.score_mod is not None else None
    kernel = FlexKernel(f"flex_attention_{next(_names)}", problem, score, mask, s.status).load()
    output_code_log.info("FlexAttention kernel %s for %s:\n%s", kernel.name, problem.describe(), kernel.source)
    return _extern(ctx, kernel, (query, key, value))


def fused_backward(problem: FlexProblem) -> bool:
    """One pass over (batch, key/value head) when there are enough of them to keep every thread busy."""
    from ember.core.threads import get_num_threads

    return problem.batch * problem.kv_heads >= get_num_threads()


def lower_flex_attention_backward(
    ctx: Any, grad_out: Any, grad_lse: Any, query: Any, key: Any, value: Any, out: Any, lse: Any, spec: str,
    scale: float,
) -> tuple:  # fmt: skip
    s, problem, mask = _problem(query, key, value, spec, scale)
    if any(x is not None and x.dtype != problem.dtype for x in (grad_out, grad_lse, out, lse)):
        raise NotImplementedError("a FlexAttention backward whose tensors differ in dtype")
    score = score_grad = None
    if s.score_mod is not None:
        score = lower_mod(s.score_mod, problem.dtype, True, "sm_")
        score_grad = lower_mod(s.score_mod, problem.dtype, True, "sg_", gradient=True)
    name = f"flex_attention_backward_{next(_names)}"
    fused = fused_backward(problem)
    kernel = FlexBackwardKernel(name, problem, score, score_grad, mask, s.status, grad_lse is not None, fused)
    kernel.load()
    output_code_log.info("FlexAttention backward kernel %s for %s:\n%s", name, problem.describe(), kernel.source)
    return _extern(ctx, kernel, (grad_out, grad_lse, query, key, value, out, lse))


def _register() -> None:
    from ember.nn.attention._flex_op import flex_attention_backward_op, flex_attention_op

    LOWERINGS[flex_attention_op] = lower_flex_attention
    LOWERINGS[flex_attention_backward_op] = lower_flex_attention_backward


_register()

__all__ = ["DENSE_TILES", "lower_flex_attention", "lower_flex_attention_backward", "lower_mod"]
