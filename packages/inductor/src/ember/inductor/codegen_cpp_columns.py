"""Column reductions: a reduction whose reduced elements lie a stride apart in memory while its
outputs are neighbours (a bias gradient, the sum over rows of a row-major matrix, batch norm's
per-channel statistics) runs with its loops interchanged.

The plain loop nest keeps one accumulator per output and walks the reduced dimension innermost,
one cache line per element. Interchanged, each thread takes a block of neighbouring outputs with an
accumulator each, walks the reduced dimensions outside, and updates the block in a vectorized inner
loop over contiguous memory. The sum is taken in the same order per output as before.
"""

from __future__ import annotations

import math
import re

import sympy

from ember.inductor import config
from ember.inductor.cpp_ops import CppOverrides, acc_init
from ember.inductor.ir import index_symbols
from ember.inductor.scheduler import FusedGroup
from ember.inductor.virtualized import is_indirect, set_ops_handler

# outputs per block: 64 floats are four cache lines
BLOCK = 64
_SIMPLE = ("sum", "prod", "max", "min", "any")


def _strided(node) -> bool | None:
    """Whether a reduction node reads with a stride along its reduction but not along its output
    (``None``: its reads do not fit the interchanged loops)."""
    x = node.index[0]
    r_inner = index_symbols("r", len(node.buffer.reduction_size))[-1]
    strided = False
    for _, expr in node.reads:
        if is_indirect(expr):
            return None
        expr = sympy.expand(expr)
        cx, cr = expr.coeff(x), expr.coeff(r_inner)
        if not (cx.is_Integer and cr.is_Integer) or int(cx) not in (0, 1):
            return None
        strided |= int(cx) == 1 and int(cr) != 1
    return strided


def _is_column(group: FusedGroup) -> bool:
    """A group of 1-D nodes (reductions of the simple kinds, and pointwise nodes over the same
    outputs), one reduction at least reading with a stride along its reduction."""
    strided = False
    if not isinstance(group.rows, int):
        return False  # symbolic sizes: the plain loop nest
    for node in group.nodes:
        buf = node.buffer
        if not all(isinstance(n, int) for n in (*buf.size, *buf.reduction_size)):
            return False
        if len(buf.size) != 1 or buf.size[0] != group.rows or group.rows < 2:
            return False
        if buf.is_reduction:
            if buf.reduction_type not in _SIMPLE:
                return False
            s = _strided(node)
            if s is None:
                return False
            strided |= s
    return strided


def column_reduction(group: FusedGroup, arg_of: dict, dtype_of: dict, decls: list[str]) -> list[str] | None:
    """The kernel body (after the pointer declarations) for a group of column reductions, else ``None``.

    Per block of outputs, each node in turn: a reduction's loops over its reduced dimensions outside,
    the block inside; then its results stored; a pointwise node over the block. A node reads the
    group's earlier nodes only at its own outputs (the scheduler's rule), stored by then. Blocks run on
    the thread pool when there is work enough, the pointers (``decls``) re-declared inside the lambda."""
    if not _is_column(group):
        return None
    n = group.rows
    work = max(n * math.prod(node.buffer.reduction_size) for node in group.nodes)
    blocks = -(-n // BLOCK)
    parallel = work >= config.cpp.parallel_threshold and n > BLOCK
    lines = []
    if parallel:
        lines.append(f"  ember_parallel(0, {blocks}, 1, [&](int64_t b_begin, int64_t b_end) {{")
        lines.extend("  " + d for d in decls)
    else:
        lines.append(f"  {{ const int64_t b_begin = 0, b_end = {blocks};")
    lines += [
        "  for (int64_t b = b_begin; b < b_end; ++b) {  // a column reduction",
        f"    const int64_t xb = b * {BLOCK};",
        f"    const int64_t xn = {n} - xb < {BLOCK} ? {n} - xb : {BLOCK};",
    ]
    for k, node in enumerate(group.nodes):
        lines += ["    " + line for line in _node_lines(node.buffer, k, arg_of, dtype_of)]
    lines.append("  }")
    lines.append("  });" if parallel else "  }")
    return lines


def _node_lines(buf, k: int, arg_of: dict, dtype_of: dict) -> list[str]:
    prefix = f"n{k}_"
    handler = CppOverrides(arg_of, dtype_of, f"{prefix}ridx", prefix)
    with set_ops_handler(handler):
        buf.store_body(list(index_symbols("x", 1)), list(index_symbols("r", len(buf.reduction_size))))
    out = [f"{{  // {buf.name}", *[f"  // {origin}" for origin in buf.origins]]
    if handler.reduction_info is None:
        out += ["  #pragma omp simd", "  for (int64_t xi = 0; xi < xn; ++xi) {", "    const int64_t x0 = xb + xi;"]
        out += ["    " + line for line in handler.body]
        return [*out, "  }", "}"]
    acc, rtype, acc_t = handler.reduction_info
    pattern = re.compile(rf"\b{acc}\b")

    def per_output(lines: list[str]) -> list[str]:
        return [pattern.sub(f"{acc}[xi]", line) for line in lines]

    out += [
        f"  {acc_t} {acc}[{BLOCK}];",
        f"  for (int64_t xi = 0; xi < {BLOCK}; ++xi) {acc}[xi] = {acc_init(rtype, acc_t)};",
    ]
    depth = 2
    for d, size in enumerate(buf.reduction_size):
        out.append(" " * depth + f"for (int64_t r{d} = 0; r{d} < {size}; ++r{d}) {{")
        depth += 2
    pad = " " * depth
    out += [
        pad + "#pragma omp simd",
        pad + "for (int64_t xi = 0; xi < xn; ++xi) {",
        pad + "  const int64_t x0 = xb + xi;",
    ]
    out += [pad + "  " + line for line in per_output(handler.body)]
    out.append(pad + "}")
    for _ in buf.reduction_size:
        depth -= 2
        out.append(" " * depth + "}")
    out += ["  for (int64_t xi = 0; xi < xn; ++xi) {", "    const int64_t x0 = xb + xi;"]
    out += ["    " + line for line in per_output(handler.post)]
    return [*out, "  }", "}"]
