"""C++/OpenMP source for one fused group: a parallel loop over rows, each node's loops inside.

The kernel is ``extern "C" int name(void** args, const int64_t* meta)``: ``args`` are the buffers'
data pointers; ``meta`` holds first the values of the graph's size symbols (``s0``, ``s1``...: loop
bounds and index arithmetic read them, so one kernel serves every size), then the sizes and strides
of the buffers whose layout comes from outside (graph inputs, extern outputs). The kernel assumes
those layouts (as functions of the symbols) and returns ``k + 1`` when the ``k``-th of them differs,
before touching memory; the wrapper turns that into an error. Parallel loops over a symbolic range
carry an OpenMP ``if`` clause: they go parallel when the run-time size is large enough.

Loops are written for GCC's vectorizer: the innermost loop is a plain counted loop over contiguous
memory with ``#pragma omp simd`` (and a ``reduction`` clause for sums); see ``-fopt-info-vec``
(``cpp_builder.vectorization_report``) for what the compiler did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import sympy

from ember.inductor import config
from ember.inductor.cpp_ops import PRELUDE, REDUCTION_COMBINE, CppOverrides, acc_init, cexpr, storage_ctype
from ember.inductor.ir import Buffer, ComputedBuffer, index_symbols
from ember.inductor.scheduler import FusedGroup, ScheduledNode
from ember.inductor.sizevars import decide_ge, statically_equal, statically_ge
from ember.inductor.virtualized import set_ops_handler


@dataclass
class KernelSpec:
    name: str
    source: str  # the kernel alone (without the prelude)
    args: list[str]  # buffer names, in the order of ``args``
    checked: list[str]  # buffer names whose layout ``meta`` carries
    outputs: list[str]  # buffers this kernel writes
    symbols: tuple = ()  # the size symbols whose values lead ``meta``


def _loop(var: str, n: int) -> str:
    return f"for (int64_t {var} = 0; {var} < {cexpr(n)}; ++{var})"


def _when(*conditions: tuple) -> bool | str:
    """Whether every ``a >= b`` of ``conditions`` holds: True/False when decided for every size, else the
    OpenMP ``if`` clause that decides it at run time."""
    runtime = []
    for a, b in conditions:
        known = decide_ge(a, b)
        if known is False:
            return False
        if known is None:
            runtime.append(f"{cexpr(a)} >= {cexpr(b)}")
    return f" if({' && '.join(runtime)})" if runtime else True


def _largest(values: list) -> Any:
    """The largest of ``values`` for every size (``Max`` when no one of them is)."""
    for v in values:
        if all(statically_ge(v, w) for w in values):
            return v
    return sympy.Max(*values)


def _clause(decision: bool | str) -> str:
    return decision if isinstance(decision, str) else ""


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
        expr = "xr" if statically_equal(stride, 1) else f"(xr / {cexpr(stride)})"
        if d > 0:
            expr = f"({expr} % {cexpr(size[d])})"
        lines.append(f"  const int64_t x{d} = {expr if size[d] != 1 else '0'};")
    loops = [(f"x{d}", size[d]) for d in range(split, len(size))]
    if buf.is_reduction:
        loops = [(f"r{d}", n) for d, n in enumerate(buf.reduction_size)]
    body = list(handler.body)
    info = handler.reduction_info
    if info and info[1] in ("argmax", "argmin"):
        rs = buf.reduction_size
        linear = " + ".join(f"r{d} * {cexpr(math.prod(rs[d + 1 :]))}" for d in range(len(rs))) or "0"
        body.insert(0, f"const int64_t {ridx} = {linear};")
    work = math.prod(n for _, n in loops)
    parallel = bool(parallel_inner and loops) and _when((work, config.cpp.parallel_threshold))
    clause = _clause(parallel)
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
            out.append("#pragma omp parallel" + clause)
            out.append("{")
        out.append(f"{acc_t} {acc} = {acc_init(rtype, acc_t)};")
    for depth, (var, n) in enumerate(loops):
        last = depth == len(loops) - 1
        if depth == 0 and parallel:
            if info is None:
                out.append(("#pragma omp parallel for simd" if last else "#pragma omp parallel for") + clause)
            elif simple_sum:
                out.append(f"#pragma omp parallel for simd reduction(+:{info[0]})" + clause)
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


def group_kernel(
    group: FusedGroup, name: str, buffers: dict[str, Buffer], external: set[str], symbols: tuple = ()
) -> KernelSpec:
    """The C++ kernel of ``group``; ``external`` names buffers whose layout is checked at each call;
    ``symbols`` are the graph's size symbols, whose values come first in ``meta``."""
    reads: list[str] = []
    for node in group.nodes:
        for n, _ in node.reads:
            if n not in reads and n not in group.names:
                reads.append(n)
    # graph inputs written in place (inplace.MutationBuffer) are arguments the wrapper does not allocate
    written = list(dict.fromkeys(node.writes for node in group.nodes))
    mutated = [n for n in written if n in external]
    outputs = [n for n in written if n not in mutated]
    args = reads + mutated + outputs
    arg_of = {n: f"a{i}" for i, n in enumerate(args)}
    dtype_of = {n: buffers[n].dtype for n in args}
    checked = [n for n in reads + mutated if n in external]
    lines = [f'extern "C" int {name}(void** args, const int64_t* meta) {{']
    for i, sym in enumerate(symbols):
        lines.append(f"  const int64_t {sym.name} = meta[{i}]; (void){sym.name};")
    pos = len(symbols)
    for j, n in enumerate(checked):
        layout = buffers[n].layout
        conds = [f"meta[{pos + i}] != {cexpr(v)}" for i, v in enumerate(layout.size)]
        pos += len(layout.size)
        conds += [f"meta[{pos + i}] != {cexpr(v)}" for i, (v, s) in
                  enumerate(zip(layout.stride, layout.size, strict=True)) if s != 1]  # fmt: skip
        pos += len(layout.size)
        if conds:
            lines.append(
                f"  if ({' || '.join(conds)}) return {j + 1};  // {n}: sizes {layout.size}, strides {layout.stride}"
            )
    for i, n in enumerate(args):
        const = "const " if n in reads else ""
        t = storage_ctype(buffers[n].dtype)
        lines.append(f"  {const}{t}* __restrict__ a{i} = ({const}{t}*)args[{i}];  // {n}")
    work = _largest(
        [math.prod(node.buffer.size[node.split :]) * math.prod(node.buffer.reduction_size) for node in group.nodes]
    )
    parallel_rows = _when(
        (group.rows, config.cpp.min_parallel_rows), (group.rows * work, config.cpp.parallel_threshold)
    )
    if parallel_rows:
        lines.append("  #pragma omp parallel for" + _clause(parallel_rows))
    lines.append(f"  {_loop('xr', group.rows)} {{")
    inner = parallel_rows is False and statically_equal(group.rows, 1)
    for k, node in enumerate(group.nodes):
        code = _node_code(node, k, arg_of, dtype_of, group.rows, parallel_inner=inner)
        lines.extend("    " + line for line in code)
    lines.append("  }")
    lines.append("  return 0;")
    lines.append("}")
    return KernelSpec(name, "\n".join(lines), args, checked, outputs, tuple(symbols))


def module_source(kernels: list[KernelSpec]) -> str:
    return PRELUDE + "\n\n".join(k.source for k in kernels) + "\n"


__all__ = ["ComputedBuffer", "KernelSpec", "group_kernel", "module_source"]
