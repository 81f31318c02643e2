"""Scheduling: dead buffers out, computed buffers fused into groups, one C++ kernel per group.

A group runs one parallel loop over ``rows``; each of its nodes runs, per row, its own inner loops
(a reduction's reduction loop, or a pointwise node's trailing dims). A node joins a group when its
outer dims multiply to the same ``rows`` and every value it reads from a node of the group lies in
the same row, so that one row's work needs nothing of other rows. Softmax (max, sum, divide) and
layer norm (statistics, normalize) become one kernel this way (vertical fusion).

Horizontal fusion: a node that cannot join the last group may join an earlier one, over the same
range, when it depends on nothing the groups after that one write (and writes nothing they read):
independent loops then share one loop nest, as the per-parameter updates of an optimizer step do.
Groups that still differ in range become one combo kernel (``combo.py``) that runs them in turn.

Nodes that write a graph input in place (``inplace.MutationBuffer``) follow the same rules, with the
input's name as what they write: a loop that reads the old value must stay before the writer, or read
only its own row when both share a loop nest.

The legality test is exact for affine reads of contiguous buffers, and refuses the rest; with
symbolic sizes it fuses only what is legal for every size.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import sympy

from ember.inductor import config
from ember.inductor.inplace import MutationBuffer, written_name
from ember.inductor.ir import AliasBuffer, Buffer, ComputedBuffer, ExternBuffer, MultiOutput, index_symbols
from ember.inductor.sizevars import (
    at_least_one,
    decide_ge,
    exact_div,
    statically_equal,
    statically_ge,
    statically_nonneg,
)
from ember.inductor.virtualized import ReadsHandler, is_indirect, set_ops_handler
from ember.logs import get_artifact_logger

fusion_log = get_artifact_logger(__name__, "fusion")


@dataclass
class ScheduledNode:
    buffer: ComputedBuffer
    split: int  # the first ``split`` dims of the buffer are the row dims
    reads: list[tuple[str, sympy.Expr]]
    index: list[sympy.Symbol]

    @property
    def writes(self) -> str:
        return written_name(self.buffer)


@dataclass
class FusedGroup:
    rows: int
    nodes: list[ScheduledNode] = field(default_factory=list)
    # what the nodes write (their own buffers, and the inputs they update in place) and read, kept as nodes join
    names: set[str] = field(default_factory=set)
    read_names: set[str] = field(default_factory=set)
    # a transposing node's group takes no other node (see ``_transposing``)
    alone: bool = False

    def __post_init__(self) -> None:
        nodes, self.nodes = self.nodes, []
        for node in nodes:
            self.add(node)

    def add(self, node: ScheduledNode) -> None:
        self.nodes.append(node)
        self.names.add(node.writes)
        self.read_names.update(name for name, _ in node.reads)

    def reads(self) -> set[str]:
        return self.read_names

    def arguments(self, external: set[str]) -> tuple[list[str], list[str], list[str]]:
        """A kernel's buffers, in the order of its arguments: what it reads from outside the group, the
        graph inputs it writes in place (``inplace.MutationBuffer``: the wrapper does not allocate
        them; ``external`` names the buffers that come from outside), and the outputs it allocates."""
        reads: list[str] = []
        for node in self.nodes:
            for n, _ in node.reads:
                if n not in reads and n not in self.names:
                    reads.append(n)
        written = list(dict.fromkeys(node.writes for node in self.nodes))
        mutated = [n for n in written if n in external]
        return reads, mutated, [n for n in written if n not in mutated]


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
        # the graph is functional: no op runs for its effects, but the in-place stores into its inputs (and
        # an extern call of a mutating op, a copy_ the code generator could not lower)
        keep = [b for b in live if b.name in used or _has_effect(b)]
        if len(keep) == len(live):
            return keep
        live = keep


def _has_effect(buf: Buffer) -> bool:
    if isinstance(buf, MutationBuffer):
        return True
    schema = getattr(getattr(buf, "op", None), "schema", None)
    return isinstance(buf, ExternBuffer) and bool(getattr(schema, "is_mutable", False))


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
    if not producer.layout.is_contiguous() or is_indirect(expr):
        return False  # an indirect read may land anywhere in the producer: it needs all of it first
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


def _transposing(buf: ComputedBuffer, split: int, reads: list, index: list) -> bool:
    """Whether a pointwise node's inner loop walks memory a stride apart that its rows walk contiguously
    (a transposing copy, which AOT autograd's backward makes of a GEMM's gradient). The code generator
    walks such a node in tiles of rows (``codegen_cpp._tiled``), which it can only do for a node alone;
    and a column reduction beside it in a group would lose its interchanged loops
    (``codegen_cpp_columns``). So it keeps a group of its own."""
    if buf.is_reduction or split < 1 or len(buf.size) - split != 1:
        return False
    row = last_row_symbol(buf, index, split)
    if row is None:
        return False
    accesses = [e for _, e in reads] + [buf.layout.index(list(index))]
    return any(runs_across(e, index[-1], row) for e in accesses if not is_indirect(e))


def last_row_symbol(buf: Buffer, index: list, split: int):
    """The index symbol of a node's last row dim of more than one element (None: a single row)."""
    return next((index[d] for d in reversed(range(split)) if buf.size[d] != 1), None)


def runs_across(expr, inner, row) -> bool:
    """Whether an access steps 1 from row to row and more than 1 along the inner loop."""
    expr = sympy.expand(expr)
    c_inner, c_row = expr.coeff(inner), expr.coeff(row)
    return c_inner.is_Integer and c_row.is_Integer and abs(int(c_inner)) > 1 and int(c_row) == 1


def _natural_rows(buf: ComputedBuffer) -> int:
    return math.prod(buf.size[: _row_split(buf, None)])


def _can_join(node: ScheduledNode, group: FusedGroup, buffers: dict[str, Buffer]) -> bool:
    """Whether ``node`` may run as the last node of ``group``, in its rows."""
    written = group.names
    if node.writes in written:
        return False
    new = {node.writes} | {name for name, _ in node.reads}
    if written.isdisjoint(new) and len(written | group.read_names | new) > config.max_group_buffers:
        return False  # an independent loop: joining would only add memory streams to the row loop
    for name, expr in node.reads:  # what it reads of the group: in its own row
        if name in written and not _read_in_row(node, buffers[name], expr, group.rows):
            return False
    if node.writes != node.buffer.name:  # an in-place store: the group's readers of the old value, in-row
        target = buffers[node.writes]
        for other in group.nodes:
            for name, expr in other.reads:
                if name == node.writes and not _read_in_row(other, target, expr, group.rows):
                    return False
    return True


def _independent_of_extern(step: Buffer, reads: set[str], writes: str) -> bool:
    """Whether a node may run before the extern step ``step``: it does not read its result, the step
    does not read what the node writes (an input it updates in place), and the step changes nothing.
    A graph's outputs are realized last, after every extern call: the pre-activation a GEMM's bias add
    makes, saved for the backward, then joins the kernel that computed the activation from the same
    product before the next GEMM, and the product is read once."""
    return step.name not in reads and writes not in extern_reads(step) and not _has_effect(step)


def _depends(reads: set[str], writes: str, group: FusedGroup) -> bool:
    """Whether a node must run after ``group``: it reads what the group writes, or writes what it reads."""
    written = group.names
    return not written.isdisjoint(reads) or writes in written or writes in group.read_names


def schedule(buffers: list[Buffer]) -> list[FusedGroup | Buffer]:
    """The steps in order: fused groups of computed buffers, and extern buffers between them.

    Each computed buffer joins the latest group it may join (same rows, reads in-row) among the groups
    since the last extern step that it does not depend on; else it starts a group of its own."""
    steps: list[FusedGroup | Buffer] = []
    known: dict[str, Buffer] = {}
    for buf in buffers:
        known[buf.name] = buf
        if isinstance(buf, MutationBuffer):
            known[buf.target.name] = buf.target
        if not isinstance(buf, ComputedBuffer):
            steps.append(buf)
            continue
        reads, index = node_reads(buf)
        read_names, writes = {name for name, _ in reads}, written_name(buf)
        natural = _natural_rows(buf)
        alone = _transposing(buf, _row_split(buf, None), reads, index)
        placed = False
        for pos in range(len(steps) - 1, -1, -1):
            group = steps[pos]
            if not isinstance(group, FusedGroup):
                if _independent_of_extern(group, read_names, writes):
                    continue  # a group before an extern call this node has nothing to do with may take it
                break
            split = None if alone or group.alone else _row_split(buf, group.rows)
            # joining a group of fewer rows would give up this node's parallel rows
            fewer = decide_ge(natural, config.cpp.min_parallel_rows) and not statically_ge(group.rows, natural)
            if split is not None and not fewer:
                node = ScheduledNode(buf, split, reads, index)
                if _can_join(node, group, known):
                    group.add(node)
                    placed = True
                    if fusion_log.isEnabledFor(logging.INFO):
                        how = "fused into" if pos == len(steps) - 1 else "fused horizontally into"
                        fusion_log.info("%s %s the group of %s (%d rows)", buf.name, how, group.nodes[0].buffer.name,
                                        group.rows)  # fmt: skip
                    break
            if _depends(read_names, writes, group):
                break
        if not placed:
            split = _row_split(buf, None)
            group = FusedGroup(math.prod(buf.size[:split]), [ScheduledNode(buf, split, reads, index)], alone=alone)
            steps.append(group)
    return steps
