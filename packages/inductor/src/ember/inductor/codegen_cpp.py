"""C++ source for one fused group: a parallel loop over rows, each node's loops inside.

The kernel is ``extern "C" int name(void** args, const int64_t* meta)``: ``args`` are the buffers'
data pointers; ``meta`` holds first the values of the graph's size symbols (``s0``, ``s1``...: loop
bounds and index arithmetic read them, so one kernel serves every size), then the sizes and strides
of the buffers whose layout comes from outside (graph inputs, extern outputs). The kernel assumes
those layouts (as functions of the symbols) and returns ``k + 1`` when the ``k``-th of them differs,
before touching memory; the wrapper turns that into an error.

Parallel loops run on Ember's thread pool (``runtime/parallel.py``): the loop body becomes a C++
lambda over a range of rows (or of the node's outer loop, when there are few rows) handed to
``ember_parallel``. A long reduction is cut into fixed chunks whose partials are combined in
order, so its result does not depend on the thread count. A loop over a symbolic range whose size
decides whether it is worth threads is written as a parallel one: the pool runs a range shorter
than two pieces' grain inline. Transposing copies and reductions over
the rows of a matrix walk tiles of rows (``_tiled``).

Loops are written for GCC's vectorizer: the innermost loop is a plain counted loop over contiguous
memory with ``#pragma omp simd`` (and a ``reduction`` clause for sum, max, min and any); see
``-fopt-info-vec`` (``cpp_builder.vectorization_report``) for what the compiler did. What does not
change along the innermost loop is computed before it (``_hoist``: GCC left layer norm's rsqrt inside,
one vector sqrt and divide per 16 elements), and a costly value that two loops of a row both compute
is computed once, through a row buffer (``codegen_cpp_rows.py``). Reductions of a row over the same
loops, none reading another's result, run in one loop nest with an accumulator each (``_joins``):
batch norm's backward sums dy and dy * (x - mean) over a channel in one pass, not two. Adjacent
reduced dims that every index walks as one (an image's H and W) are one loop (``loop_merge.py``).
An innermost loop whose index the body divides by a small d (``x / 2``: a max pool's backward reads
the pooled gradient and indices there) runs over ``x / d`` with the body written d times
(``_split_innermost``): the loads become contiguous and interleaved ones, not gathers (the CNN's
batch-norm backward kernel 0.84 -> 0.54 ms).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import sympy

from ember.inductor import config
from ember.inductor.codegen_cpp_columns import column_reduction
from ember.inductor.codegen_cpp_rows import RowPlan, RowValues, plan_rows, row_handler
from ember.inductor.cpp_ops import PRELUDE, REDUCTION_COMBINE, CppOverrides, acc_init, cexpr, storage_ctype
from ember.inductor.indirect import CPP_DECLARE, CPP_RETURN
from ember.inductor.ir import Buffer, ComputedBuffer, index_symbols
from ember.inductor.loop_merge import merged_reduction_loops
from ember.inductor.runtime.parallel import KERNEL_PRELUDE
from ember.inductor.scheduler import FusedGroup, ScheduledNode, last_row_symbol, runs_across
from ember.inductor.sizevars import decide_ge, statically_equal, statically_ge
from ember.inductor.virtualized import is_indirect, set_ops_handler


@dataclass
class KernelSpec:
    name: str
    source: str  # the kernel alone (without the prelude)
    args: list[str]  # buffer names, in the order of ``args``
    checked: list[str]  # buffer names whose layout ``meta`` carries
    outputs: list[str]  # buffers this kernel writes
    symbols: tuple = ()  # the size symbols whose values lead ``meta``


# Reductions the vectorizer may reorder (max and min propagate NaN whatever the order), as
# ``reduction`` clauses of the innermost loop; each declared one starts its lanes from the
# accumulator's initial value, the identity of max and min.
_NUMBERS = ("float", "double", "int64_t", "int32_t")
_SIMD_REDUCTION = {
    "sum": ("+", _NUMBERS),
    "max": ("ember_max", _NUMBERS),
    "min": ("ember_min", _NUMBERS),
    "any": ("||", ("bool",)),
}
REDUCTION_PRELUDE = r"""
#pragma omp declare reduction(ember_max : float, double, int64_t, int32_t : omp_out = ember_max(omp_out, omp_in)) \
  initializer(omp_priv = omp_orig)
#pragma omp declare reduction(ember_min : float, double, int64_t, int32_t : omp_out = ember_min(omp_out, omp_in)) \
  initializer(omp_priv = omp_orig)
"""


def _loop(var: str, n: Any) -> str:
    return f"for (int64_t {var} = 0; {var} < {cexpr(n)}; ++{var})"


def _when(*conditions: tuple) -> bool | str:
    """Whether every ``a >= b`` of ``conditions`` holds: True/False when decided for every size, else the
    C++ condition that decides it at run time (the loop is then written as a parallel one)."""
    runtime = []
    for a, b in conditions:
        known = decide_ge(a, b)
        if known is False:
            return False
        if known is None:
            runtime.append(f"{cexpr(a)} >= {cexpr(b)}")
    return " && ".join(runtime) if runtime else True


def _largest(values: list) -> Any:
    """The largest of ``values`` for every size (``Max`` when no one of them is)."""
    for v in values:
        if all(statically_ge(v, w) for w in values):
            return v
    return sympy.Max(*values)


def _is_static(n: Any) -> bool:
    return isinstance(n, int) or bool(getattr(n, "is_Integer", False))


def _grain(elements: int, per_step: Any) -> str:
    """Steps of a loop whose step covers ``per_step`` elements that make ``elements`` (at least 1), as
    C++ (a number when the sizes are static)."""
    if _is_static(per_step):
        return str(max(1, -(-elements // max(int(per_step), 1))))
    return f"ember_grain({elements}, {cexpr(per_step)})"


def _pieces_grain(loops: list[tuple[str, Any]]) -> str:
    """Iterations of the outer loop a piece of a parallel loop has at least (``config.cpp.grain``
    elements)."""
    return _grain(config.cpp.grain, math.prod(n for _, n in loops[1:]))


_DEFINES = re.compile(r"^(?:auto|int64_t|const int64_t) (\w+) = ")
_NAMES = re.compile(r"[A-Za-z_]\w*")


def _hoist(body: list[str], inner_var: str) -> tuple[list[str], list[str]]:
    """``body`` split into the definitions that depend neither on ``inner_var`` nor on a definition that
    does (computed once before the innermost loop), and the rest, in order. Used for bodies with
    indirect indexes: the index of an embedding row is read and bounds-checked once per row, and the
    inner loop over the row stays a plain vectorizable loop."""
    depends, hoisted, kept = {inner_var}, [], []
    for line in body:
        m = _DEFINES.match(line)
        if m is not None and not (set(_NAMES.findall(line)) - {m.group(1)}) & depends:
            hoisted.append(line)
            continue
        if m is not None:
            depends.add(m.group(1))
        kept.append(line)
    return hoisted, kept


_DIVIDED = re.compile(r"\((\w+) / (\d+)\)")


def _index_divisor(handler: Any, loops: list, tiled: bool) -> int:
    """The d by which the body's indexes divide the innermost loop's index (a max pool's backward
    reads its pooled gradient at ``(x / 2)``), where the loop is a plain one whose static length d
    divides; else 0. Such an index makes the vectorizer gather element by element."""
    if tiled or type(handler) is not CppOverrides or any("ember_index_fail" in line for line in handler.body):
        return 0
    info = handler.reduction_info
    if info is not None and (info[1] not in _SIMD_REDUCTION or info[2] not in _SIMD_REDUCTION[info[1]][1]):
        return 0
    if not loops or not _is_static(loops[-1][1]):
        return 0
    var, n = loops[-1][0], int(loops[-1][1])
    divisors = {int(d) for v, d in _DIVIDED.findall("\n".join(handler.body + handler.post)) if v == var}
    if len(divisors) != 1:
        return 0
    (d,) = divisors
    return d if 1 < d <= 8 and n % d == 0 and n > d else 0


def _split_innermost(
    loops: list, d: int, node: ScheduledNode, k: int, arg_of: dict, dtype_of: dict, ridx: str, index, rindex, first
) -> tuple[list, list[str]]:
    """The innermost loop over ``v`` as a loop over ``q`` with the body written ``d`` times, for
    ``v = d*q``, ..., ``d*q + d - 1``: each ``v / d`` is then ``q``, a contiguous load, and the loads
    along ``v`` are groups the vectorizer interleaves. A reduction adds its terms in the same order
    within each copy; its simd lanes take other terms than before (the order already depends on the
    vector width)."""
    var, n = loops[-1]
    q = sympy.Symbol(f"{var}q", integer=True, nonnegative=True)
    old = sympy.Symbol(var, integer=True, nonnegative=True)
    body, count = [], first._n
    for step in range(d):
        handler = CppOverrides(arg_of, dtype_of, ridx, f"n{k}_")
        handler._n = count
        with set_ops_handler(handler):
            node.buffer.store_body(
                [sympy.sympify(e).subs(old, d * q + step) for e in index],
                [sympy.sympify(e).subs(old, d * q + step) for e in rindex],
            )
        count = handler._n
        body.extend(handler.body)
    return [*loops[:-1], (q.name, int(n) // d)], body


def _parallel_pointwise(
    loops: list[tuple[str, int]], body: list[str], inner_pragma: str, decls: list[str], hoisted: list[str] = ()
) -> list[str]:
    """The outer loop split into pieces on the thread pool; the pointers re-declared ``__restrict__``
    inside the lambda (captured ones lose that, and with it the vectorizer's freedom)."""
    (var, n), rest = loops[0], loops[1:]
    out = [f"ember_parallel(0, {cexpr(n)}, {_pieces_grain(loops)}, [&](int64_t {var}_begin, int64_t {var}_end) {{"]
    out.extend(decls)
    if not rest:
        out.extend(hoisted)
        out.append(inner_pragma)
    out.append(f"for (int64_t {var} = {var}_begin; {var} < {var}_end; ++{var}) {{")
    for depth, (v, m) in enumerate(rest):
        if depth == len(rest) - 1:
            out.extend(hoisted)
            out.append(inner_pragma)
        out.append(_loop(v, m) + " {")
    out.extend(body)
    out.extend("}" for _ in loops)
    out.append("});")
    return out


def _parallel_reduction(
    loops: list[tuple[str, int]],
    body: list[str],
    inner_pragma: str,
    decls: list[str],
    info: tuple,
    prefix: str,
    hoisted: list[str] = (),
) -> list[str]:
    """A long reduction over fixed chunks of ``config.cpp.reduction_chunk`` elements, whatever the
    thread count: each chunk's partial is kept, and the partials are combined in chunk order, so
    the result is the same bits on any number of threads."""
    acc, rtype, acc_t = info
    (var, n), rest = loops[0], loops[1:]
    init = acc_init(rtype, acc_t)
    parts, c = f"{prefix}parts", f"{prefix}c"
    chunk = _grain(config.cpp.reduction_chunk, math.prod(m for _, m in rest))
    n = cexpr(n)
    chunks = f"{prefix}chunks"
    out = [
        f"const int64_t {chunks} = ({n} + {chunk} - 1) / {chunk};",
        f"std::vector<{acc_t}> {parts}({chunks}, {init});",
        f"ember_parallel(0, {chunks}, 1, [&](int64_t {c}_begin, int64_t {c}_end) {{",
        *decls,
        f"for (int64_t {c} = {c}_begin; {c} < {c}_end; ++{c}) {{",
        f"{acc_t} {acc} = {init};",
        f"const int64_t {var}_end = {c} * {chunk} + {chunk} < {n} ? {c} * {chunk} + {chunk} : {n};",
    ]
    if not rest:
        out.extend(hoisted)
    if not rest and inner_pragma:
        out.append(inner_pragma)
    out.append(f"for (int64_t {var} = {c} * {chunk}; {var} < {var}_end; ++{var}) {{")
    for depth, (v, m) in enumerate(rest):
        if depth == len(rest) - 1:
            out.extend(hoisted)
        if depth == len(rest) - 1 and inner_pragma:
            out.append(inner_pragma)
        out.append(_loop(v, m) + " {")
    out.extend(body)
    out.extend("}" for _ in loops)
    out.append(f"{parts}[{c}] = {acc};")
    out.append("}")
    out.append("});")
    out.append(f"{acc_t} {acc} = {init};")
    combine = REDUCTION_COMBINE[rtype].format(acc=acc, other=f"{parts}[{c}]")
    out.append(f"for (int64_t {c} = 0; {c} < {chunks}; ++{c}) {{ {combine} }}")
    return out


@dataclass
class _PlainLoops:
    """One node's code before it is written out as plain (one-thread) loops: ``head`` opens its block
    (its name, origins and row dims), ``hoisted`` goes before the innermost loop, ``body`` inside it
    and ``post`` after the loops."""

    node: ScheduledNode
    head: list[str]
    loops: list[tuple[str, Any]]
    hoisted: list[str]
    body: list[str]
    post: list[str]
    info: tuple | None
    pragma: str
    shares_rows: bool  # reads or writes row buffers (``codegen_cpp_rows``)


def _node_code(
    node: ScheduledNode,
    k: int,
    arg_of: dict,
    dtype_of: dict,
    parallel_inner: bool,
    decls: list[str],
    tiled=False,
    rows: RowPlan | None = None,
) -> list[str] | _PlainLoops:
    """Node ``k``'s lines, or, where they are plain loops, their parts (``_plain_code`` writes them)."""
    buf = node.buffer
    prefix = f"n{k}_"
    ridx = f"{prefix}ridx"
    handler = row_handler(node, k, arg_of, dtype_of, ridx, prefix, rows)
    index = index_symbols("x", len(buf.size))
    rindex = index_symbols("r", len(buf.reduction_size))
    rloops = [(f"r{d}", n) for d, n in enumerate(buf.reduction_size)]
    if buf.is_reduction and not tiled and not isinstance(handler, RowValues):
        rindex, rloops = merged_reduction_loops(buf, list(index))
    with set_ops_handler(handler):
        buf.store_body(list(index), list(rindex))
    if isinstance(handler, RowValues):
        handler.drop_unused()
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
        loops = rloops
    body = list(handler.body)
    info = handler.reduction_info
    divisor = _index_divisor(handler, loops, tiled)
    if divisor:
        loops, body = _split_innermost(loops, divisor, node, k, arg_of, dtype_of, ridx, index, rindex, handler)
    if info and info[1] in ("argmax", "argmin"):
        rs = [n for _, n in rloops]
        linear = " + ".join(f"{v} * {cexpr(math.prod(rs[d + 1 :]))}" for d, (v, _) in enumerate(rloops)) or "0"
        body.insert(0, f"const int64_t {ridx} = {linear};")
    if tiled:
        return _tiled_code(lines[0], lines[1:], loops[0], handler, body, _interchanged(node))
    hoisted: list[str] = []
    if loops and (decide_ge(loops[-1][1], 1) or any("ember_index_fail" in line or "ind_" in line for line in body)):
        # what does not change along the innermost loop is computed once before it: a row's statistic
        # turned into a factor (layer norm's rstd, log_softmax's log of the sum, batch norm's per-channel
        # scales in its backward), an embedding row's index; only where the loop runs at least once, so
        # that no load is hoisted out of a loop that makes none
        hoisted, body = _hoist(body, loops[-1][0])
    work = math.prod(n for _, n in loops)
    parallel = bool(parallel_inner and loops) and _when((work, config.cpp.parallel_threshold)) is not False
    inner_pragma = ""
    if any("ember_index_fail" in line for line in body):
        pass  # a bounds check in the innermost loop (a gather along it): a plain loop, not a simd one
    elif info is None:
        inner_pragma = "#pragma omp simd"
    elif info[1] in _SIMD_REDUCTION and info[2] in _SIMD_REDUCTION[info[1]][1]:
        inner_pragma = f"#pragma omp simd reduction({_SIMD_REDUCTION[info[1]][0]}:{info[0]})"
    if not parallel:
        rows_shared = isinstance(handler, RowValues)
        return _PlainLoops(node, lines, loops, hoisted, body, handler.post, info, inner_pragma, rows_shared)
    if info is None:
        out = _parallel_pointwise(loops, body, inner_pragma, decls, hoisted)
    else:
        out = _parallel_reduction(loops, body, inner_pragma, decls, info, prefix, hoisted) + handler.post
    lines.extend("  " + line for line in out)
    lines.append("}")
    return lines


def _plain_code(parts: list[_PlainLoops]) -> list[str]:
    """One block of plain loops running the bodies of ``parts`` (one node, or reductions that
    ``_joins`` let share their loops) together."""
    first = parts[0]
    lines = [f"{{  // {', '.join(p.node.buffer.name for p in parts)}"]
    lines += list(dict.fromkeys(line for p in parts for line in p.head[1:] if line.lstrip().startswith("//")))
    lines += [line for line in first.head[1:] if not line.lstrip().startswith("//")]
    out = [f"{p.info[2]} {p.info[0]} = {acc_init(p.info[1], p.info[2])};" for p in parts if p.info is not None]
    loops = first.loops
    pragma = first.pragma
    for p in parts[1:]:
        pragma += p.pragma[p.pragma.index(" reduction(") :]
    for depth, (var, n) in enumerate(loops):
        if depth == len(loops) - 1:
            out.extend(line for p in parts for line in p.hoisted)
        if depth == len(loops) - 1 and pragma:
            out.append(pragma)
        out.append(_loop(var, n) + " {")
    if not loops:
        out.extend(line for p in parts for line in p.hoisted)
    out.extend(line for p in parts for line in p.body)
    out.extend("}" for _ in loops)
    out.extend(line for p in parts for line in p.post)
    lines.extend("  " + line for line in out)
    lines.append("}")
    return lines


def _joins(run: list[_PlainLoops], other: _PlainLoops) -> bool:
    """Whether reduction ``other`` may run in the loops of the reductions of ``run`` (the nodes before
    it in the group): the same loops and row dims, simd reductions each, no row buffers, and no
    value passing between them (``other`` reads none of their results, writes nothing they read).
    Each accumulator then adds up the same terms in the same order as in loops of its own (the
    same bits), while the loads and the values the bodies share are made once (batch norm's
    backward: the sums of dy and of dy * (x - mean) over a channel)."""
    first = run[0]
    if first.info is None or other.info is None or first.shares_rows or other.shares_rows:
        return False
    if not first.pragma or " reduction(" not in first.pragma or " reduction(" not in other.pragma:
        return False
    if len(first.loops) != len(other.loops) or not first.loops:
        return False
    if any(a != b or not statically_equal(n, m) for (a, n), (b, m) in zip(first.loops, other.loops, strict=True)):
        return False
    rows = [line for line in first.head[1:] if not line.lstrip().startswith("//")]
    if rows != [line for line in other.head[1:] if not line.lstrip().startswith("//")]:
        return False
    written = {p.node.writes for p in run}
    read = {name for p in run for name, _ in p.node.reads}
    return not any(name in written for name, _ in other.node.reads) and other.node.writes not in read


_TILE_ROWS = 16  # rows of a tile: a cache line of float32 read at a time
_TILE_INNER = 64  # the inner loop's steps a tile of a transposing copy takes at a time
_ACROSS_ROWS = 256  # rows of a tile walked across (a few KiB of each access: in L1 for the next step)


def _tiled(group: FusedGroup, buffers: dict[str, Buffer]) -> bool:
    """Whether ``group`` is a lone node with one inner loop (pointwise or reduction) that reads an
    input (or writes its output) across its last row dim (unit stride there) while its inner loop
    walks it with a large stride: a transpose (AOT autograd's backward materializes ``permute`` +
    ``clone`` before a GEMM, and the clone of a permuted tensor keeps its strides) or a sum over the
    rows of a matrix (a bias's gradient). Walked row by row, each element is on its own cache line
    and page; ``_tiled_code`` walks tiles of rows instead."""
    if len(group.nodes) != 1:
        return False
    node = group.nodes[0]
    if any(is_indirect(expr) for _, expr in node.reads):
        return False
    buf = node.buffer
    if not all(_is_static(n) for n in (group.rows, *buf.size, *buf.reduction_size, *buf.layout.stride)):
        return False
    if node.split < 1 or group.rows < 2 * _TILE_ROWS:
        return False
    if buf.is_reduction:
        if len(buf.reduction_size) != 1 or node.split != len(buf.size) or buf.reduction_size[0] < 2:
            return False
        inner = index_symbols("r", 1)[0]
    else:
        if len(buf.size) - node.split != 1 or buf.size[-1] < 2:
            return False
        inner = node.index[-1]
    # consecutive rows step the last row dim longer than 1
    row = last_row_symbol(buf, node.index, node.split)
    if row is None:
        return False
    return any(runs_across(index, inner, row) for index in _accesses(node))


def _accesses(node: ScheduledNode) -> list:
    """The index of each read of ``node`` and, for a pointwise node, of its store."""
    accesses = [index for _, index in node.reads]
    if not node.buffer.is_reduction:  # a copy into a transposed layout (a permuted clone) stores across rows
        accesses.append(node.buffer.layout.index(list(node.index)))
    return accesses


def _interchanged(node: ScheduledNode) -> bool:
    """Whether every access of a ``_tiled`` pointwise node runs across its rows: then its loops are
    interchanged, the rows of a tile the inner (vectorized, contiguous) loop."""
    if node.buffer.is_reduction or any(is_indirect(e) for _, e in node.reads):
        return False
    row = last_row_symbol(node.buffer, node.index, node.split)
    return row is not None and all(runs_across(index, node.index[-1], row) for index in _accesses(node))


def _tiled_code(
    head: str, row_defs: list[str], loop: tuple[str, int], handler: CppOverrides, body: list[str], across: bool
) -> list[str]:
    """A ``_tiled`` node over the rows ``[xr_begin, xr_end)``, in tiles of ``_TILE_ROWS`` rows.

    Pointwise: blocks of ``_TILE_INNER`` inner steps, each row of the tile in turn, the inner loop
    vectorized (stores contiguous, loads from a few cache lines each used for the whole tile); or,
    ``across`` (every access contiguous across the rows), each inner step in turn over the rows of a
    tile of ``_ACROSS_ROWS``, vectorized along them.
    Reduction: the reduction loop outside, the rows of the tile inside (vectorized: the loads are
    contiguous), one accumulator a row."""
    var, n = loop
    if across:
        tile = _ACROSS_ROWS
        out = [head, f"for (int64_t xr_t = xr_begin; xr_t < xr_end; xr_t += {tile}) {{"]
        out.append(f"const int64_t xr_te = xr_t + {tile} < xr_end ? xr_t + {tile} : xr_end;")
        out.append(_loop(var, n) + " {")
        out.append("#pragma omp simd")
        out.append("for (int64_t xr = xr_t; xr < xr_te; ++xr) {")
        out.extend(row_defs)
        out.extend(body)
        out.append("}}}}")
        return out
    out = [head, f"for (int64_t xr_t = xr_begin; xr_t < xr_end; xr_t += {_TILE_ROWS}) {{"]
    out.append(f"const int64_t xr_te = xr_t + {_TILE_ROWS} < xr_end ? xr_t + {_TILE_ROWS} : xr_end;")
    info = handler.reduction_info
    if info is None:
        step = _TILE_INNER
        out.append(f"for (int64_t {var}_t = 0; {var}_t < {n}; {var}_t += {step}) {{")
        out.append(f"const int64_t {var}_te = {var}_t + {step} < {n} ? {var}_t + {step} : {n};")
        out.append("for (int64_t xr = xr_t; xr < xr_te; ++xr) {")
        out.extend(row_defs)
        out.append("#pragma omp simd")
        out.append(f"for (int64_t {var} = {var}_t; {var} < {var}_te; ++{var}) {{")
        out.extend(body)
        out.append("}}}}}")
        return out
    acc, rtype, acc_t = info
    accs = f"{acc}_tile"
    out.append(f"{acc_t} {accs}[{_TILE_ROWS}];")
    out.append(f"for (int i = 0; i < {_TILE_ROWS}; ++i) {accs}[i] = {acc_init(rtype, acc_t)};")
    out.append(_loop(var, n) + " {")
    out.append("#pragma omp simd")
    out.append("for (int64_t xr = xr_t; xr < xr_te; ++xr) {")
    out.extend(row_defs)
    out.append(f"{acc_t} {acc} = {accs}[xr - xr_t];")
    out.extend(body)
    out.append(f"{accs}[xr - xr_t] = {acc};")
    out.append("}}")
    out.append("for (int64_t xr = xr_t; xr < xr_te; ++xr) {")
    out.extend(row_defs)
    out.append(f"{acc_t} {acc} = {accs}[xr - xr_t];")
    out.extend(handler.post)
    out.append("}}}")
    return out


def group_kernel(
    group: FusedGroup, name: str, buffers: dict[str, Buffer], external: set[str], symbols: tuple = ()
) -> KernelSpec:
    """The C++ kernel of ``group``; ``external`` names buffers whose layout is checked at each call;
    ``symbols`` are the graph's size symbols, whose values come first in ``meta``."""
    reads, mutated, outputs = group.arguments(external)
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
    lines.append("  " + CPP_DECLARE)
    decls = []
    for i, n in enumerate(args):
        const = "const " if n in reads else ""
        t = storage_ctype(buffers[n].dtype)
        decls.append(f"{const}{t}* __restrict__ a{i} = ({const}{t}*)args[{i}];  // {n}")
    lines.extend("  " + d for d in decls)
    # column reductions that a lone tiled loop does not take (groups, several reduced dims): interchanged
    column = None if _tiled(group, buffers) else column_reduction(group, arg_of, dtype_of, decls)
    if column is not None:
        return KernelSpec(
            name, "\n".join([*lines, *column, "  " + CPP_RETURN, "}"]), args, checked, outputs, tuple(symbols)
        )
    work = _largest(
        [math.prod(node.buffer.size[node.split :]) * math.prod(node.buffer.reduction_size) for node in group.nodes]
    )
    parallel_rows = (
        _when((group.rows, config.cpp.min_parallel_rows), (group.rows * work, config.cpp.parallel_threshold))
        is not False
    )
    indent = "  "
    tiled = _tiled(group, buffers)
    inner = not parallel_rows and statically_equal(group.rows, 1)
    # values the loops of a row share (row buffers): only where each node's loops run whole in one thread
    rows = None if tiled or inner or len(group.nodes) < 2 else plan_rows(group.nodes, arg_of, dtype_of)
    if parallel_rows:
        grain = _grain(config.cpp.grain, work)
        lines.append(f"  ember_parallel(0, {cexpr(group.rows)}, {grain}, [&](int64_t xr_begin, int64_t xr_end) {{")
        lines.extend("    " + d for d in decls)
        indent = "    "
    elif tiled or rows is not None:
        lines.append("  {" + ("" if rows is not None else f" const int64_t xr_begin = 0, xr_end = {group.rows};"))
    if rows is not None:
        lines.extend(indent + d for d in rows.decls)
    if tiled:
        code = _node_code(group.nodes[0], 0, arg_of, dtype_of, False, decls, tiled=True)
        lines.extend(indent + line for line in code)
    else:
        if parallel_rows:
            lines.append("    for (int64_t xr = xr_begin; xr < xr_end; ++xr) {")
        else:
            lines.append(f"  {_loop('xr', group.rows)} {{")
        run: list[_PlainLoops] = []  # plain loops not yet written: reductions that share their loops
        for k, node in enumerate(group.nodes):
            code = _node_code(node, k, arg_of, dtype_of, inner, decls, rows=rows)
            if run and not (isinstance(code, _PlainLoops) and _joins(run, code)):
                lines.extend(indent + "  " + line for line in _plain_code(run))
                run = []
            if isinstance(code, _PlainLoops):
                run.append(code)
            else:
                lines.extend(indent + "  " + line for line in code)
        if run:
            lines.extend(indent + "  " + line for line in _plain_code(run))
        lines.append(indent + "}")
    if parallel_rows:
        lines.append("  });")
    elif tiled or rows is not None:
        lines.append("  }")
    lines.append("  " + CPP_RETURN)
    lines.append("}")
    return KernelSpec(name, "\n".join(lines), args, checked, outputs, tuple(symbols))


def module_source(kernels: list[KernelSpec]) -> str:
    return PRELUDE + REDUCTION_PRELUDE + KERNEL_PRELUDE + "\n\n".join(k.source for k in kernels) + "\n"


__all__ = ["ComputedBuffer", "KernelSpec", "group_kernel", "module_source"]
