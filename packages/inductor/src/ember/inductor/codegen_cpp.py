"""C++/OpenMP source for one fused group: a parallel loop over rows, each node's loops inside.

The kernel is ``extern "C" int name(void** args, const int64_t* meta)``: ``args`` are the buffers'
data pointers, ``meta`` the sizes and strides of the buffers whose layout comes from outside (graph
inputs, extern outputs). The kernel was specialized for those layouts and returns ``k + 1`` when the
``k``-th of them differs, before touching memory; the wrapper turns that into an error.

Loops are written for GCC's vectorizer: the innermost loop is a plain counted loop over contiguous
memory with ``#pragma omp simd`` (and a ``reduction`` clause for sums); see ``-fopt-info-vec``
(``cpp_builder.vectorization_report``) for what the compiler did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ember.inductor import config
from ember.inductor.codegen_cpp_columns import column_reduction
from ember.inductor.cpp_ops import PRELUDE, REDUCTION_COMBINE, CppOverrides, acc_init, storage_ctype
from ember.inductor.ir import Buffer, ComputedBuffer, index_symbols
from ember.inductor.scheduler import FusedGroup, ScheduledNode
from ember.inductor.virtualized import set_ops_handler


@dataclass
class KernelSpec:
    name: str
    source: str  # the kernel alone (without the prelude)
    args: list[str]  # buffer names, in the order of ``args``
    checked: list[str]  # buffer names whose layout ``meta`` carries
    outputs: list[str]  # buffers this kernel writes


def _loop(var: str, n: int) -> str:
    return f"for (int64_t {var} = 0; {var} < {n}; ++{var})"


def _node_code(node: ScheduledNode, k: int, arg_of: dict, dtype_of: dict, rows: int, parallel_inner: bool) -> list[str]:
    buf = node.buffer
    prefix = f"n{k}_"
    ridx = f"{prefix}ridx"
    handler = CppOverrides(arg_of, dtype_of, ridx, prefix)
    index = index_symbols("x", len(buf.size))
    rindex = index_symbols("r", len(buf.reduction_size))
    with set_ops_handler(handler):
        buf.store_body(list(index), list(rindex))
    lines = [f"{{  // {buf.name}"] + [f"  // {origin}" for origin in buf.origins]
    # the row dims, from the row number
    split, size = node.split, buf.size
    for d in range(split):
        stride = math.prod(size[d + 1 : split])
        expr = "xr" if stride == 1 else f"(xr / {stride})"
        if d > 0:
            expr = f"({expr} % {size[d]})"
        lines.append(f"  const int64_t x{d} = {expr if size[d] != 1 else '0'};")
    loops = [(f"x{d}", size[d]) for d in range(split, len(size))]
    if buf.is_reduction:
        loops = [(f"r{d}", n) for d, n in enumerate(buf.reduction_size)]
    body = list(handler.body)
    info = handler.reduction_info
    if info and info[1] in ("argmax", "argmin"):
        rs = buf.reduction_size
        linear = " + ".join(f"r{d} * {math.prod(rs[d + 1 :])}" for d in range(len(rs))) or "0"
        body.insert(0, f"const int64_t {ridx} = {linear};")
    work = math.prod(n for _, n in loops)
    parallel = parallel_inner and loops and work >= config.cpp.parallel_threshold
    inner_pragma = ""
    if info is None:
        inner_pragma = "#pragma omp simd"
    elif info[1] == "sum" and info[2] in ("float", "double", "int64_t"):
        inner_pragma = f"#pragma omp simd reduction(+:{info[0]})"
    simple_sum = info is not None and info[1] == "sum" and info[2] in ("float", "double", "int64_t")
    manual = parallel and info is not None and not (simple_sum and len(loops) == 1)
    simple_sum = simple_sum and len(loops) == 1
    out: list[str] = []
    if info is not None:
        acc, rtype, acc_t = info
        if manual:
            out.append(f"{acc_t} {acc}_all = {acc_init(rtype, acc_t)};")
            out.append("#pragma omp parallel")
            out.append("{")
        out.append(f"{acc_t} {acc} = {acc_init(rtype, acc_t)};")
    for depth, (var, n) in enumerate(loops):
        last = depth == len(loops) - 1
        if depth == 0 and parallel:
            if info is None:
                out.append("#pragma omp parallel for simd" if last else "#pragma omp parallel for")
            elif simple_sum:
                out.append(f"#pragma omp parallel for simd reduction(+:{info[0]})")
            else:
                out.append("#pragma omp for nowait")
        elif last and inner_pragma:
            out.append(inner_pragma)
        out.append(_loop(var, n) + " {")
    out.extend(body)
    out.extend("}" for _ in loops)
    if info is not None:
        acc, rtype, acc_t = info
        if manual:
            out.append("#pragma omp critical")
            out.append("{ " + REDUCTION_COMBINE[rtype].format(acc=f"{acc}_all", other=acc) + " }")
            out.append("}")
            out.append(f"{{ auto& {acc} = {acc}_all;")
            out.extend(handler.post)
            out.append("}")
        else:
            out.extend(handler.post)
    lines.extend("  " + line for line in out)
    lines.append("}")
    return lines


def group_kernel(group: FusedGroup, name: str, buffers: dict[str, Buffer], external: set[str]) -> KernelSpec:
    """The C++ kernel of ``group``; ``external`` names buffers whose layout is checked at each call."""
    reads: list[str] = []
    for node in group.nodes:
        for n, _ in node.reads:
            if n not in reads and n not in group.names:
                reads.append(n)
    outputs = [node.buffer.name for node in group.nodes]
    args = reads + outputs
    arg_of = {n: f"a{i}" for i, n in enumerate(args)}
    dtype_of = {n: buffers[n].dtype for n in args}
    checked = [n for n in reads if n in external]
    lines = [f'extern "C" int {name}(void** args, const int64_t* meta) {{']
    pos = 0
    for j, n in enumerate(checked):
        layout = buffers[n].layout
        conds = [f"meta[{pos + i}] != {v}" for i, v in enumerate(layout.size)]
        pos += len(layout.size)
        conds += [f"meta[{pos + i}] != {v}" for i, (v, s) in enumerate(zip(layout.stride, layout.size, strict=True))
                  if s != 1]  # fmt: skip
        pos += len(layout.size)
        if conds:
            lines.append(
                f"  if ({' || '.join(conds)}) return {j + 1};  // {n}: sizes {layout.size}, strides {layout.stride}"
            )
    for i, n in enumerate(args):
        const = "const " if n in reads else ""
        t = storage_ctype(buffers[n].dtype)
        lines.append(f"  {const}{t}* __restrict__ a{i} = ({const}{t}*)args[{i}];  // {n}")
    column = column_reduction(group, arg_of, dtype_of)  # loops interchanged: see codegen_cpp_columns
    if column is not None:
        return KernelSpec(name, "\n".join([*lines, *column, "  return 0;", "}"]), args, checked, outputs)
    work = max(
        math.prod(node.buffer.size[node.split :]) * math.prod(node.buffer.reduction_size) for node in group.nodes
    )
    parallel_rows = group.rows >= config.cpp.min_parallel_rows and group.rows * work >= config.cpp.parallel_threshold
    if parallel_rows:
        lines.append("  #pragma omp parallel for")
    lines.append(f"  {_loop('xr', group.rows)} {{")
    for k, node in enumerate(group.nodes):
        code = _node_code(node, k, arg_of, dtype_of, group.rows, parallel_inner=not parallel_rows and group.rows == 1)
        lines.extend("    " + line for line in code)
    lines.append("  }")
    lines.append("  return 0;")
    lines.append("}")
    return KernelSpec(name, "\n".join(lines), args, checked, outputs)


def module_source(kernels: list[KernelSpec]) -> str:
    return PRELUDE + "\n\n".join(k.source for k in kernels) + "\n"


__all__ = ["ComputedBuffer", "KernelSpec", "group_kernel", "module_source"]
