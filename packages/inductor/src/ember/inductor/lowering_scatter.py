"""Scatters as generated kernels: ``index_put`` (with ``accumulate`` or not), ``scatter`` and
``scatter_add`` along a dimension, and ``embedding_dense_backward``.

A scatter writes where its index tensors say, which a loop body (a function from an output index to
a value) cannot express. Each one is a C++ kernel of its own (``lowering_scan.GeneratedKernel``, called
like an extern op): it first writes the base tensor into the output (a parallel pointwise loop that
reads the base through its loader, so a ``zeros`` base is a fill, not a copy), then, for each position
of the broadcast index tensors in order, stores (or adds) the value slice into the output row it
indexes.

Deterministic whatever the thread count: the threads split the positions of the dimensions that are
not indexed (an embedding's columns; for ``scatter``, every dimension but ``dim``), each thread walks
every index position in order, so an element hit by several duplicates sums them in the same order on
any number of threads, and no two threads write one element. Index values are bounds-checked as for
loads (``indirect.py``; negative ones count from the end for ``index_put`` only, as eager). Over
symbolic sizes the kernel reads the size symbols from ``meta``, each bound from an input's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor import config
from ember.inductor.codegen_cpp import _grain, _hoist
from ember.inductor.cpp_ops import CppOverrides, cexpr, storage_ctype
from ember.inductor.indirect import ADVANCED, CPP_DECLARE, CPP_RETURN, EMBEDDING, GATHER
from ember.inductor.ir import ExternBuffer, Index, Layout, TensorBox, contiguous_strides
from ember.inductor.lowering import as_loader, broadcast_shapes, compute_dtype, make_box, register
from ember.inductor.lowering_indirect import advanced_geometry, advanced_source, indirect
from ember.inductor.lowering_scan import GeneratedKernel
from ember.inductor.sizevars import is_symbolic, size_symbols, sort_symbols, statically_equal, statically_ge
from ember.inductor.virtualized import ReadsHandler, ops, set_ops_handler


def _coords(var: sympy.Symbol, sizes: list[int]) -> list[sympy.Expr]:
    """The row-major coordinates of the flat index ``var`` over ``sizes``."""
    out = []
    for j, n in enumerate(sizes):
        inner = math.prod(sizes[j + 1 :])
        c = sympy.floor(var / inner) if inner != 1 else var
        out.append(sympy.Mod(c, n) if j > 0 and n != 1 else (sympy.Integer(0) if n == 1 else c))
    return out


def _loops_code(handler_lines: tuple[list[str], list[str]], inner: str, n: Any, simd: bool) -> list[str]:
    hoisted, body = handler_lines
    out = list(hoisted)
    if simd:
        out.append("#pragma omp simd")
    out.append(f"for (int64_t {inner} = {inner}_begin; {inner} < {inner}_end; ++{inner}) {{")
    out.extend("  " + line for line in body)
    out.append("}")
    return out


def _parallel(var: str, n: Any, work_per_step: Any, inner: list[str]) -> list[str]:
    """``inner`` (a loop over ``[var_begin, var_end)``) over ``[0, n)``, on the thread pool when large
    (over symbolic sizes always: the pool runs a range too short for two pieces inline)."""
    symbolic = is_symbolic(n) or is_symbolic(work_per_step)
    if symbolic or (n * work_per_step >= config.cpp.parallel_threshold and n >= 2):
        grain = _grain(config.cpp.grain, work_per_step)
        head = f"ember_parallel(0, {cexpr(n)}, {grain}, [&](int64_t {var}_begin, int64_t {var}_end) {{"
        return [head, *("  " + line for line in inner), "});"]
    return [f"{{ const int64_t {var}_begin = 0, {var}_end = {n};", *("  " + line for line in inner), "}"]


def _symbols(inputs: list, out: Layout) -> list:
    """The size symbols a scatter kernel reads (from ``meta``)."""
    exprs = [*out.size, *out.stride, out.offset]
    for b in inputs:
        exprs += [*b.layout.size, *b.layout.stride, b.layout.offset]
    return sort_symbols(size_symbols(exprs))


def scatter(ctx, base: TensorBox, indices: list, values: Any, accumulate: bool, kind: int, reason: str) -> TensorBox:
    """``base`` with ``values`` stored (or added) at ``base[indices]``, as one generated kernel."""
    size = tuple(base.size)
    dtype = _scatter_dtype(ctx, reason)
    dims, b, rsize, adjacent = advanced_geometry(size, indices)
    if isinstance(values, TensorBox) and broadcast_shapes(values.size, rsize) != tuple(rsize):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.size)} cannot be broadcast to "
                           f"indexing result of shape {list(rsize)}")  # fmt: skip
    rest = [d for d in range(len(size)) if d not in dims]
    lv = as_loader(values, tuple(rsize), dtype)

    def value_index(pc: list, qc: list) -> list:
        if adjacent:
            before = len([d for d in rest if d < dims[0]])
            return [*qc[:before], *pc, *qc[before:]]
        return [*pc, *qc]

    def dest(ri: list) -> list:
        return advanced_source(size, indices, dims, b, adjacent, ri, kind)

    return _scatter_kernel(ctx, base, list(b), [size[d] for d in rest], value_index, dest, lv, accumulate, reason)


def scatter_along(ctx, base: TensorBox, dim: int, index: TensorBox, values: Any, accumulate: bool, reason: str):
    """``base`` with ``values[i]`` stored (or added) at ``i`` with ``i[dim]`` replaced by ``index[i]``, for
    each position ``i`` of ``index`` (``scatter``, ``scatter_add``), as one generated kernel."""
    size = tuple(base.size)
    dtype = _scatter_dtype(ctx, reason)
    if index.dtype not in (D.int64, D.int32):
        raise NotImplementedError(f"{reason} with {index.dtype} indices (only int64 and int32 are generated)")
    if not size:
        raise NotImplementedError(f"{reason} of a 0-dimensional tensor")
    if len(index.size) != len(size):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    dim = dim % len(size)
    isize = list(index.size)
    for d, k in enumerate(isize):
        # self is written directly along the other dims and src read directly along every dim: in bounds
        # only where the index is no larger (the meta kernel checks it; the kernel relies on it, so it is
        # decided here for every size)
        if (d != dim and not statically_ge(size[d], k)) or (
            isinstance(values, TensorBox) and not statically_ge(values.size[d], k)
        ):
            raise NotImplementedError(f"{reason} with an index larger than self or src at dimension {d}")
    if isinstance(size[dim], int) and size[dim] == 0:
        raise NotImplementedError(f"{reason} into an empty dimension")
    rest = [d for d in range(len(size)) if d != dim]
    li = index.loader
    # src is read at the index's positions (it may be larger than the index, never broadcast)
    lv = as_loader(values, tuple(values.size) if isinstance(values, TensorBox) else tuple(isize), dtype)

    def value_index(pc: list, qc: list) -> list:
        return [*qc[:dim], *pc, *qc[dim:]]

    def dest(ri: list) -> list:
        out = list(ri)
        out[dim] = indirect(li, list(ri), size[dim], GATHER, dim)
        return out

    return _scatter_kernel(ctx, base, [isize[dim]], [isize[d] for d in rest], value_index, dest, lv, accumulate, reason)


def _scatter_dtype(ctx, reason: str) -> Any:
    dtype = ctx.out_dtype
    if dtype not in (D.float32, D.float64, D.int64, D.int32):
        raise NotImplementedError(f"{reason} of {dtype} tensors (generated for float32, float64, int32, int64)")
    return dtype


def _scatter_kernel(
    ctx,
    base: TensorBox,
    pos_sizes: list,
    rest_sizes: list,
    value_index: Callable[[list, list], list],
    dest: Callable[[list], list],
    lv: Callable[[Index], Any],
    accumulate: bool,
    reason: str,
) -> TensorBox:
    """The kernel of a scatter into a copy of ``base``: for each position ``p`` over ``pos_sizes`` (the
    dims whose values may repeat, walked in order by every thread) and ``q`` over ``rest_sizes`` (split
    among the threads), the value ``lv(ri)`` at ``ri = value_index(p's coordinates, q's)`` goes to
    ``dest(ri)`` (added to what is there with ``accumulate``)."""
    size = tuple(base.size)
    dtype = ctx.out_dtype
    n_pos, n_rest = math.prod(pos_sizes), math.prod(rest_sizes)
    layout = Layout(size, contiguous_strides(size))
    name = f"buf{len(ctx.buffers)}"
    kname = f"scatter_{name}"
    lbase = as_loader(base, size, dtype)
    p, q = sympy.Symbol("p", integer=True, nonnegative=True), sympy.Symbol("q", integer=True, nonnegative=True)
    ri = value_index(_coords(p, list(pos_sizes)), _coords(q, list(rest_sizes)))
    row = sympy.Symbol("xr", integer=True, nonnegative=True)
    last = sympy.Symbol("xl", integer=True, nonnegative=True)
    rows = math.prod(size[:-1]) if size else 1
    xi = [*_coords(row, list(size[:-1])), last] if size else []

    def fill() -> None:
        ops.store(name, layout.index(xi), lbase(xi))

    def scatter_body() -> None:
        where = layout.index(dest(ri))
        v = lv(ri)
        if accumulate:
            v = ops.add(ops.load(name, where), v)
        ops.store(name, where, v)

    reads = ReadsHandler()
    with set_ops_handler(reads):
        fill()
        scatter_body()
    inputs = list(dict.fromkeys(n for n, _ in reads.reads if n != name))
    args = [*inputs, name]
    arg_of = {n: f"a{i}" for i, n in enumerate(args)}
    dtype_of = {n: ctx.name_to_buffer[n].dtype for n in inputs} | {name: dtype}
    in_bufs = [ctx.name_to_buffer[n] for n in inputs]
    symbols = _symbols(in_bufs, layout)
    fill_h, scat_h = CppOverrides(arg_of, dtype_of, "", "f_"), CppOverrides(arg_of, dtype_of, "", "s_")
    with set_ops_handler(fill_h):
        fill()
    with set_ops_handler(scat_h):
        scatter_body()
    lines = [f'extern "C" int {kname}(void** args, const int64_t* meta) {{', "  " + CPP_DECLARE]
    decls = []
    for i, n in enumerate(args):
        const = "const " if n in inputs else ""
        t = storage_ctype(dtype_of[n])
        decls.append(f"{const}{t}* __restrict__ a{i} = ({const}{t}*)args[{i}];  // {n}")
    lines.extend("  " + d for d in decls)
    n_last = size[-1] if size else 1
    lines[1:1] = [f"  const int64_t {sym.name} = meta[{k}]; (void){sym.name};" for k, sym in enumerate(symbols)]
    if not statically_equal(math.prod(size), 0):
        # the base: rows in parallel, the last dim a vectorized loop
        fill_loop = ["for (int64_t xr = xr_begin; xr < xr_end; ++xr) {", "#pragma omp simd",
                     f"for (int64_t xl = 0; xl < {cexpr(n_last)}; ++xl) {{", *fill_h.body, "}", "}"]  # fmt: skip
        lines.extend("  " + line for line in _parallel("xr", rows, n_last, fill_loop))
    if not statically_equal(n_pos, 0) and not statically_equal(n_rest, 0):
        hoisted, body = _hoist(scat_h.body, "q")
        simd = not any("ember_index_fail" in line for line in body)
        # each thread: its range of the non-indexed positions, every index position in order
        inner = [
            f"for (int64_t p = 0; p < {cexpr(n_pos)}; ++p) {{",
            *_loops_code((hoisted, body), "q", n_rest, simd),
            "}",
        ]
        lines.extend("  " + line for line in _parallel("q", n_rest, n_pos, inner))
    lines += ["  " + CPP_RETURN, "}"]
    source = "\n".join(lines)
    kernel = GeneratedKernel(kname, source, in_bufs, [(dtype, layout)], symbols)
    # its inputs are graph buffers the wrappers lay out as traced: a kernel step (memory planning, the graph cache)
    kernel.as_kernel = not symbols
    origin = [f"{ctx.current.name} = {ctx.current.target}"]
    # the symbols' values come last: the step wrapper evaluates size expressions among an extern call's arguments
    buf = ExternBuffer(name, dtype, layout, kernel, (*in_bufs, *symbols), {}, reason, origin)
    return TensorBox.of(ctx._register(buf))


@register("index_put.default")
def index_put(ctx, x, indices, values, accumulate=False):
    if len(indices) > len(x.size):
        raise IndexError(f"too many indices for tensor of dimension {len(x.size)} (got {len(indices)})")
    how = "index_put with accumulate" if accumulate else "index_put"
    return scatter(ctx, x, list(indices), values, accumulate, ADVANCED, f"{how} in a generated scatter kernel")


@register("embedding_dense_backward.default")
def embedding_dense_backward(ctx, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_dense_backward with scale_grad_by_freq")
    dim = grad_output.size[-1]
    dt = compute_dtype(ctx.out_dtype)
    zeros = make_box((num_weights, dim), ctx.out_dtype, lambda i: ops.constant(0, dt))
    values = grad_output
    if padding_idx is not None and padding_idx >= 0:
        li, lg = indices.loader, as_loader(grad_output, grad_output.size, ctx.out_dtype)
        nd = len(indices.size)

        def masked(i: Index) -> Any:
            pad = ops.eq(li(list(i[:nd])), ops.constant(padding_idx, indices.dtype))
            return ops.where(pad, ops.constant(0, dt), lg(i))

        values = make_box(grad_output.size, ctx.out_dtype, masked)
    return scatter(ctx, zeros, [indices], values, True, EMBEDDING, "embedding_dense_backward in a generated kernel")


@register("scatter.src")
def scatter_src(ctx, x, dim, index, src):
    return scatter_along(ctx, x, dim, index, src, False, "scatter in a generated scatter kernel")


@register("scatter.value")
def scatter_value(ctx, x, dim, index, value):
    return scatter_along(ctx, x, dim, index, value, False, "scatter of a value in a generated scatter kernel")


@register("scatter_add.default")
def scatter_add(ctx, x, dim, index, src):
    return scatter_along(ctx, x, dim, index, src, True, "scatter_add in a generated scatter kernel")
