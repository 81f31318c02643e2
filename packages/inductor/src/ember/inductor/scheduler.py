"""Scheduling: dead buffers out, computed buffers fused into groups, one C++ kernel per group.

A group runs one parallel loop over ``rows``; each of its nodes runs, per row, its own inner loops
(a reduction's reduction loop, or a pointwise node's trailing dims). A node joins the group before
it when its outer dims multiply to the same ``rows`` and every value it reads from a node of the
group lies in the same row, so that one row's work needs nothing of other rows. Softmax (max, sum,
divide) and layer norm (statistics, normalize) become one kernel this way.

The legality test is exact for affine reads of contiguous buffers, and refuses the rest; with
symbolic sizes it fuses only what is legal for every size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy

from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, MultiOutput, index_symbols
from ember.inductor.sizevars import at_least_one, exact_div, statically_equal, statically_nonneg
from ember.inductor.virtualized import ReadsHandler, set_ops_handler


@dataclass
class ScheduledNode:
    buffer: ComputedBuffer
    split: int  # the first ``split`` dims of the buffer are the row dims
    reads: list[tuple[str, sympy.Expr]]
    index: list[sympy.Symbol]


@dataclass
class FusedGroup:
    rows: int
    nodes: list[ScheduledNode] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {n.buffer.name for n in self.nodes}


def node_reads(buf: ComputedBuffer) -> tuple[list[tuple[str, sympy.Expr]], list[sympy.Symbol]]:
    index = index_symbols("x", len(buf.size))
    rindex = index_symbols("r", len(buf.reduction_size))
    handler = ReadsHandler()
    with set_ops_handler(handler):
        buf.store_body(list(index), list(rindex))
    return handler.reads, index


def extern_reads(buf: Buffer) -> set[str]:
    if isinstance(buf, MultiOutput | AliasBuffer):
        return {buf.source.name}
    names: set[str] = set()

    def visit(a):
        if isinstance(a, Buffer):
            names.add(a.name)
        elif isinstance(a, list | tuple):
            for x in a:
                visit(x)

    if isinstance(buf, ExternBuffer):
        visit(buf.args)
        visit(list(buf.kwargs.values()))
    return names


def remove_dead(buffers: list[Buffer], outputs: set[str]) -> list[Buffer]:
    """Drop buffers nothing reads and the graph does not return, until none is left to drop."""
    reads: dict[str, set[str]] = {}
    for b in buffers:
        reads[b.name] = {n for n, _ in node_reads(b)[0]} if isinstance(b, ComputedBuffer) else extern_reads(b)
    live = list(buffers)
    while True:
        used = set(outputs).union(*[reads[b.name] for b in live]) if live else set(outputs)
        keep = [b for b in live if b.name in used]  # the graph is functional: no op runs for its effects
        if len(keep) == len(live):
            return keep
        live = keep


def _row_split(buf: ComputedBuffer, rows: int | None) -> int | None:
    """The number of leading dims whose product is ``rows`` (``rows=None``: this node's own choice)."""
    size = buf.size
    if buf.is_reduction:
        return len(size) if rows is None or statically_equal(math.prod(size), rows) else None
    if rows is None:
        return max(len(size) - 1, 0)
    for k in range(len(size), -1, -1):
        if statically_equal(math.prod(size[:k]), rows):
            return k
    return None


def _read_in_row(node: ScheduledNode, producer: ComputedBuffer, expr: sympy.Expr, rows: int) -> bool:
    """Whether every element ``node`` reads of ``producer`` at ``expr`` lies in the reader's own row."""
    if not producer.layout.is_contiguous():
        return False
    row_len = exact_div(math.prod(producer.size), rows) if not statically_equal(rows, 0) else 0
    size = node.buffer.size
    outer = node.index[: node.split]
    # the loop indexes (x*, r*); size symbols (s*) are coefficients
    free = sorted((s for s in expr.free_symbols if s.name[0] in "xr"), key=str)
    try:
        poly = sympy.Poly(expr, *free) if free else None
    except sympy.PolynomialError:
        return False
    if poly is not None and poly.total_degree() > 1:
        return False
    coeff = {s: expr.coeff(s) for s in free}
    const = expr.subs({s: 0 for s in free})
    # the outer dims must land on row starts: coefficient = row_len * (row-major stride of the dim)
    stride = 1
    for d in range(node.split - 1, -1, -1):
        if size[d] != 1 and not statically_equal(coeff.get(outer[d], 0), row_len * stride):
            return False
        stride = stride * size[d]
    lo, hi = const, const
    rsizes = dict(zip(index_symbols("r", len(node.buffer.reduction_size)), node.buffer.reduction_size, strict=True))
    inner_sizes = dict(zip(node.index[node.split :], size[node.split :], strict=True)) | rsizes
    for s, c in coeff.items():
        if s in outer:
            continue
        n = inner_sizes.get(s)
        if n is None:
            return False
        if statically_nonneg(c):
            hi += c * (n - 1)
        elif statically_nonneg(-c):
            lo += c * (n - 1)
        else:
            return False
    return statically_nonneg(lo) and statically_nonneg(at_least_one(row_len) - 1 - hi)


def schedule(buffers: list[Buffer]) -> list[FusedGroup | Buffer]:
    """The steps in order: fused groups of computed buffers, and extern buffers between them."""
    steps: list[FusedGroup | Buffer] = []
    producers: dict[str, ComputedBuffer] = {}
    for buf in buffers:
        if not isinstance(buf, ComputedBuffer):
            steps.append(buf)
            continue
        producers[buf.name] = buf
        reads, index = node_reads(buf)
        last = steps[-1] if steps and isinstance(steps[-1], FusedGroup) else None
        if last is not None:
            split = _row_split(buf, last.rows)
            if split is not None:
                node = ScheduledNode(buf, split, reads, index)
                names = last.names
                if all(_read_in_row(node, producers[n], e, last.rows) for n, e in reads if n in names):
                    last.nodes.append(node)
                    continue
        split = _row_split(buf, None)
        steps.append(FusedGroup(math.prod(buf.size[:split]), [ScheduledNode(buf, split, reads, index)]))
    return steps
