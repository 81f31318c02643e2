"""Triton source for one fused group: a program per block of rows, each node's inner loop inside.

The scheduler's groups (``scheduler.py``) are what the C++ kernels run: ``rows`` outer iterations,
each node running its own inner loop per row (a reduction's loop, or a pointwise node's trailing
dims). A Triton kernel takes them as they are: program ``p`` runs rows ``[p * XBLOCK, (p + 1) *
XBLOCK)`` as the first axis of its blocks, and each node walks its inner range ``RBLOCK`` lanes at a
time as the second. A reduction keeps an accumulator a lane and combines the lanes after its loop
(``triton_ops``), so softmax or layer norm is one kernel: statistics, then the normalized row. A node
that reads what an earlier node of the group wrote reads it within its own rows (the scheduler's
rule), which the program itself wrote; ``tl.debug_barrier()`` between the two makes those stores
visible to every thread of the program on a GPU.

The kernel's arguments: one pointer a buffer (inputs, then buffers written in place, then outputs),
the error block of index checks when the group has them, the graph's size symbols, and the
``XBLOCK``/``RBLOCK`` constants the launcher chooses (``runtime/triton_launch.py``). Indexes are
32-bit unless a buffer may span 2**31 elements or a size is symbolic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ember.inductor.ir import Buffer, index_symbols
from ember.inductor.scheduler import FusedGroup, ScheduledNode
from ember.inductor.sizevars import statically_equal
from ember.inductor.triton_ops import TritonOverrides, TritonUnsupported, storage_type, texpr
from ember.inductor.virtualized import set_ops_handler

HEADER = """import triton
import triton.language as tl

from ember.inductor.runtime import triton_helpers as th
"""


@dataclass
class TritonKernelSpec:
    name: str
    source: str  # the kernel alone (``HEADER`` makes a module of kernels)
    args: list[str]  # buffer names, in the order of the pointer arguments
    checked: list[str]  # buffers whose layout comes from outside: checked before each launch
    outputs: list[str]  # buffers the launcher allocates
    symbols: tuple = ()  # size symbols, arguments after the pointers
    rows: Any = 1  # the rows the grid covers (a size expression)
    inner: Any = 1  # the longest inner loop of its nodes (for the block sizes)
    checks_indexes: bool = False  # takes the error block ``err_ptr``
    mutates: bool = False  # writes a graph input in place (its launches cannot be repeated to time them)


def _static(n: Any) -> bool:
    return isinstance(n, int) or bool(getattr(n, "is_Integer", False))


def _extent(buf: Buffer) -> Any:
    layout = buf.layout
    return layout.offset + sum((n - 1) * s for n, s in zip(layout.size, layout.stride, strict=True))


def _wide_indexes(buffers: list[Buffer]) -> bool:
    """Whether an index may pass 2**31 - 1 (or is not known before the kernel runs)."""
    for buf in buffers:
        extent = _extent(buf)
        if not _static(extent) or int(extent) >= 2**31 - 1:
            return True
    return False


def _inner(node: ScheduledNode) -> tuple[list[Any], bool]:
    """The sizes of the node's inner loop and whether it has one (a reduction always does)."""
    buf = node.buffer
    if buf.is_reduction:
        return list(buf.reduction_size), True
    sizes = list(buf.size[node.split :])
    return sizes, bool(sizes) and not all(statically_equal(n, 1) for n in sizes)


def _node_code(node: ScheduledNode, k: int, arg_of: dict, dtype_of: dict) -> tuple[list[str], bool]:
    buf = node.buffer
    prefix = f"n{k}_"
    sizes, looped = _inner(node)
    rl = f"{prefix}rl"
    handler = TritonOverrides(arg_of, dtype_of, prefix, rl, looped)
    index, rindex = index_symbols("x", len(buf.size)), index_symbols("r", len(buf.reduction_size))
    with set_ops_handler(handler):
        buf.store_body(list(index), list(rindex))
    lines = [f"# {buf.name}", *(f"# {origin}" for origin in buf.origins)]
    split, size = node.split, buf.size
    for d in range(split):
        if statically_equal(size[d], 1):
            lines.append(f"x{d} = izero")
            continue
        stride = math.prod(size[d + 1 : split])
        expr = "xr" if statically_equal(stride, 1) else f"(xr // {texpr(stride)})"
        lines.append(f"x{d} = {expr if d == 0 else f'({expr} % {texpr(size[d])})'}")
    if not looped:
        for d in range(split, len(size)):
            lines.append(f"x{d} = izero")
        lines.append(f"{prefix}mask = xmask")
        return [*lines, *handler.body, *handler.post], handler.checks_indexes
    names = [f"r{d}" for d in range(len(sizes))] if buf.is_reduction else [f"x{d}" for d in range(split, len(size))]
    numel = texpr(math.prod(sizes))
    lines.extend(handler.init)
    lines.append(f"for {prefix}roff in range(0, {numel}, RBLOCK):")
    loop = [f"{rl} = {prefix}roff + tl.arange(0, RBLOCK)[None, :] + izero", f"{prefix}mask = xmask & ({rl} < {numel})"]
    for d, (name, n) in enumerate(zip(names, sizes, strict=True)):
        if statically_equal(n, 1):
            loop.append(f"{name} = izero")
            continue
        stride = math.prod(sizes[d + 1 :])
        expr = rl if statically_equal(stride, 1) else f"({rl} // {texpr(stride)})"
        loop.append(f"{name} = {expr if d == 0 else f'({expr} % {texpr(n)})'}")
    lines.extend(["    " + line for line in loop + handler.body])
    lines.extend(handler.post)
    return lines, handler.checks_indexes


def group_kernel(
    group: FusedGroup, name: str, buffers: dict[str, Buffer], external: set[str], symbols: tuple = ()
) -> TritonKernelSpec:
    """The Triton kernel of ``group`` (raises ``TritonUnsupported`` for what it cannot write)."""
    reads, mutated, outputs = group.arguments(external)
    args = reads + mutated + outputs
    for n in args:
        storage_type(buffers[n].dtype)  # refuses dtypes without a Triton type
    arg_of = {n: f"ptr{i}" for i, n in enumerate(args)}
    dtype_of = {n: buffers[n].dtype for n in args}
    body: list[str] = []
    checks = False
    written_so_far: set[str] = set()
    for k, node in enumerate(group.nodes):
        if any(n in written_so_far for n, _ in node.reads):
            body.append("tl.debug_barrier()")
        code, node_checks = _node_code(node, k, arg_of, dtype_of)
        body.extend(code)
        checks |= node_checks
        written_so_far.add(node.writes)
    wide = _wide_indexes([buffers[n] for n in args]) or bool(symbols)
    params = [f"ptr{i}" for i in range(len(args))] + (["err_ptr"] if checks else [])
    params += [s.name for s in symbols] + ["XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr"]
    index_t = "tl.int64" if wide else "tl.int32"
    pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
    lines = [
        "@triton.jit",
        f"def {name}({', '.join(params)}):",
        *(f"    # {n}: {tuple(buffers[n].layout.size)} strides {tuple(buffers[n].layout.stride)}" for n in args),
        f"    izero = tl.zeros([1, 1], {index_t})",
        f"    xr = {pid} * XBLOCK + tl.arange(0, XBLOCK)[:, None] + izero",
        f"    xmask = xr < {texpr(group.rows)}",
        f"    xzero = tl.zeros([XBLOCK, 1], {index_t})",
        f"    rzero = tl.zeros([XBLOCK, RBLOCK], {index_t})",
        *("    " + line for line in body),
    ]
    inner = [math.prod(_inner(node)[0]) if _inner(node)[1] else 1 for node in group.nodes]
    checked = [n for n in reads + mutated if n in external]
    return TritonKernelSpec(
        name,
        "\n".join(lines) + "\n",
        args,
        checked,
        outputs,
        tuple(symbols),
        group.rows,
        max(inner, key=lambda n: int(n) if _static(n) else 1 << 20),
        checks,
        bool(mutated),
    )


def module_source(kernels: list[TritonKernelSpec]) -> str:
    return HEADER + "\n\n" + "\n\n".join(k.source for k in kernels)


__all__ = ["TritonKernelSpec", "TritonUnsupported", "group_kernel", "module_source"]
