"""GEMM lowerings under max-autotune: ``mm``, ``addmm`` and ``bmm`` become the measured fastest of eager's
kernel and the generated C++ template (``autotune.py``, ``gemm_template.py``).

Without max-autotune, or for what the template does not cover (other dtypes, symbolic sizes), the
lowering raises ``NotImplementedError`` and the graph runs the op as an extern call of its eager
kernel, as it always did; except ``addmm`` with ``beta = alpha = 1`` (a ``Linear``), which becomes
eager's ``mm`` and the bias added in the kernels of what reads the product (the GELU after a
``Linear``): eager's ``addmm`` adds the bias in a pass of its own over the output. Eager rounds the
product to the output dtype and then adds, so the two give the same bits. An operand that is a strided view of a buffer (a transposed weight, a
slice) is read by the template through its strides; any other operand is computed into a buffer
first. When eager's kernel wins, the op is an extern call as without max-autotune.
"""

from __future__ import annotations

from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor import autotune, config
from ember.inductor.gemm_template import GemmKernel, GemmProblem, Operand
from ember.inductor.ir import Buffer, ExternBuffer, Layout, TensorBox, contiguous_strides, index_symbols
from ember.inductor.lowering import register
from ember.inductor.virtualized import CountHandler, set_ops_handler
from ember.logs import get_artifact_logger

output_code_log = get_artifact_logger(__name__, "output_code")
perf_log = get_artifact_logger(__name__, "perf_hints")


def enabled() -> bool:
    return bool(config.max_autotune or config.max_autotune_gemm)


class _LoadProbe(CountHandler):
    """Counts ops; a load returns ``("load", buffer, index)`` so a body that is one bare load shows as such."""

    def load(self, name, index):
        self.count += 1
        return ("load", name, index)


def _static(values: Any) -> tuple[int, ...]:
    out = []
    for v in values:
        if not isinstance(v, int) and not getattr(v, "is_Integer", False):
            raise NotImplementedError("max-autotune of a GEMM over symbolic sizes (the template is built per size)")
        out.append(int(v))
    return tuple(out)


def _view_of_buffer(ctx: Any, box: TensorBox) -> tuple[Buffer, int, tuple[int, ...]] | None:
    """``(buffer, offset, strides)`` when ``box`` reads one buffer at an affine index (a strided view)."""
    if box.buffer is not None and box.buffer.dtype == box.dtype:
        layout = box.buffer.layout
        strides = tuple(0 if n == 1 else s for s, n in zip(layout.stride, layout.size, strict=True))
        return box.buffer, int(layout.offset), _static(strides)
    probe = _LoadProbe()
    symbols = index_symbols("x", len(box.size))
    with set_ops_handler(probe):
        result = box.loader(list(symbols))
    if probe.count != 1 or not isinstance(result, tuple) or result[0] != "load":
        return None
    buf = ctx.name_to_buffer[result[1]]
    if buf.dtype != box.dtype:
        return None
    expr = sympy.expand(sympy.sympify(result[2]))
    offset = expr.xreplace(dict.fromkeys(symbols, 0))
    strides = [expr.coeff(s) for s in symbols]
    if sympy.expand(expr - offset - sum(c * s for c, s in zip(strides, symbols, strict=True))) != 0:
        return None
    if not all(getattr(v, "is_Integer", False) and v >= 0 for v in (offset, *strides)):
        return None
    strides = [0 if n == 1 else int(s) for s, n in zip(strides, box.size, strict=True)]
    return buf, int(offset), tuple(strides)


def _plan(ctx: Any, box: TensorBox, batched: bool) -> tuple[Operand, Any]:
    """How the template reads ``box`` (as a 3-d operand), and what to pass: a buffer, or the box itself
    when it must be computed into a contiguous buffer first."""
    size = _static(box.size)
    view = _view_of_buffer(ctx, box)
    if view is not None:
        buf, offset, strides = view
        src: Any = buf
        buf_size, buf_stride = _static(buf.layout.size), _static(buf.layout.stride)
    else:
        src, offset = box, 0
        buf_size, strides = size, tuple(0 if n == 1 else s for s, n in zip(contiguous_strides(size), size, strict=True))
        buf_stride = contiguous_strides(size)
    strides = tuple(strides)
    if not batched:
        strides = (0,) * (3 - len(strides)) + strides
    return Operand(buf_size, tuple(buf_stride), offset, strides), src


def _lower(ctx: Any, op: str, mats: list[TensorBox], bias: TensorBox | None = None, **scalars: Any) -> TensorBox:
    if not enabled():
        raise NotImplementedError(f"a GEMM ({op}) runs as an extern kernel (eager's)")
    target, dtype = ctx.current.target, ctx.out_dtype
    if dtype not in (D.float32, D.float64) or any(x.dtype != dtype for x in [*mats, *([bias] if bias else [])]):
        raise NotImplementedError(f"the GEMM template is built for float32 and float64 operands, not {dtype}")
    batched = op == "bmm"
    a_size, b_size = _static(mats[0].size), _static(mats[1].size)
    batch, m, k = a_size if batched else (1, *a_size)
    n = b_size[-1]
    plans = [_plan(ctx, x, batched) for x in mats]
    bias_plan = None
    # a bias is read broadcast: its strides right-aligned onto the output's dims, 0 where its size is 1
    bias_plan = _plan(ctx, bias, batched=False) if bias is not None else None
    alpha, beta = scalars.get("alpha", 1), scalars.get("beta", 1)
    problem = GemmProblem(
        op, dtype, batch, m, n, k, plans[0][0], plans[1][0], bias_plan[0] if bias_plan else None, alpha, beta
    )
    sizes = [*([_static(bias.size)] if bias is not None else []), a_size, b_size]
    choice = autotune.select(problem, lambda *ts: target(*ts, **scalars), sizes)
    timing = choice.timings.get(choice.name)
    when = f"{timing * 1e3:.3f} ms" if timing is not None else "from the autotune cache"
    if choice.name.startswith(autotune.EXTERN):
        raise NotImplementedError(f"max-autotune chose eager's kernel for this {op} ({when})")
    kernel = GemmKernel(problem, autotune.config_by_name(problem, choice.name)).load()
    output_code_log.info("GEMM kernel %s for %s:\n%s", kernel.name, problem.describe(), kernel.source)
    srcs = [src for _, src in [*plans, *([bias_plan] if bias_plan else [])]]
    bufs = tuple(ctx.realize(s) if isinstance(s, TensorBox) else s for s in srcs)
    out_size = problem.out_size
    layout = Layout(out_size, contiguous_strides(out_size))
    reason = f"max-autotune chose the C++ GEMM template {choice.name} ({when})"
    origin = [f"{ctx.current.name} = {ctx.current.target}"]
    buf = ExternBuffer(f"buf{len(ctx.buffers)}", dtype, layout, kernel, bufs, {}, reason, origin)
    return TensorBox.of(ctx._register(buf))


@register("mm.default")
def mm(ctx, a, b):
    return _lower(ctx, "mm", [a, b])


@register("bmm.default")
def bmm(ctx, a, b):
    return _lower(ctx, "bmm", [a, b])


@register("addmm.default")
def addmm(ctx, bias, a, b, *, beta=1, alpha=1):
    if enabled():
        try:
            return _lower(ctx, "addmm", [a, b], bias, beta=beta, alpha=alpha)
        except NotImplementedError:
            if not splits(bias, a, b, beta, alpha):
                raise
    if not splits(bias, a, b, beta, alpha):
        raise NotImplementedError("an addmm with beta or alpha other than 1 runs as an extern kernel (eager's)")
    from ember.core.dispatch import ops as aten_ops
    from ember.inductor.lowering import pointwise
    from ember.inductor.virtualized import ops

    operands = tuple(ctx._strided_view(x) or ctx.realize(x) for x in (a, b))
    size = (a.size[0], b.size[1])
    reason = (
        "a GEMM runs as an extern kernel (eager's mm of an addmm, whose bias joins the kernels that read the product)"
    )
    origin = [f"{ctx.current.name} = {ctx.current.target}"]
    layout = Layout(size, contiguous_strides(size))
    product = ExternBuffer(
        f"buf{len(ctx.buffers)}", a.dtype, layout, aten_ops.aten.mm.default, operands, {}, reason, origin
    )
    ctx.fallbacks.append(("aten.mm.default", reason))
    ctx.hints.append(f"{ctx.current.name} (aten.addmm.default) runs eager's mm as an extern call: {reason}")
    perf_log.info("%s", ctx.hints[-1])
    out = pointwise(ctx, [TensorBox.of(ctx._register(product)), bias], lambda p, c: ops.add(p, c))
    if _viewed_with_gaps(ctx.current):
        # attention's heads split off a projection: in memory, so that the heads stay views of it with the
        # strides the graph traced, as of eager's addmm result
        return TensorBox.of(ctx.realize(out))
    return out


_RESHAPES = ("view", "reshape")


def _viewed_with_gaps(node: Any) -> bool:
    """Whether a view other than a reshape (a slice, a transpose, a split) reads ``node``'s result, through
    reshapes only. A reshape keeps the result dense (a 3-D Linear's output), so the bias add can still
    join the pointwise kernels that read it."""
    users = list(node.users)
    while users:
        user = users.pop()
        target = user.target
        if not getattr(target, "is_view", False):
            continue
        if getattr(target, "name", None) in _RESHAPES:
            users.extend(user.users)
            continue
        return True
    return False


def splits(bias: Any, a: Any, b: Any, beta: Any = 1, alpha: Any = 1) -> bool:
    """Whether an ``addmm`` lowers to ``mm`` and an add: a plain ``Linear`` (``beta = alpha = 1``) of one
    floating dtype."""
    dtypes = {getattr(x, "dtype", None) for x in (bias, a, b)}
    return beta == 1 and alpha == 1 and len(dtypes) == 1 and dtypes.pop() in (D.float32, D.float64)


__all__ = ["enabled"]
