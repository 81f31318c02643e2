"""In-place epilogues: the ``copy_`` onto a graph input that a functional graph ends with, lowered to
stores into that input's own memory.

AOT autograd's functionalization turns ``param.add_(update)`` into ``new = add(param, update)`` and,
at the end of the graph, ``copy_(param, new)`` (``keep_inference_input_mutations``). Eager would then
copy every new value onto its input: one more pass over memory per mutated tensor, and for an
optimizer step over 100 parameters some 300 separate copies. Here each such ``copy_`` becomes a
``MutationBuffer``: a pointwise loop that computes ``new`` and stores it straight into the input's
buffer (in-place reuse of the input), fused and scheduled like any other loop.

Order matters once memory is shared: a loop that writes an input must run after every loop that still
reads the input's old value (``param``'s update reads the old moments that the moments' own updates
overwrite). The mutations are therefore lowered after the graph's outputs, writers after readers
(``emit_mutations``); when two mutations each read the other's input, one value goes through a
temporary buffer first. The scheduler keeps the same rule when it moves loops (``scheduler.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ember.inductor.ir import ComputedBuffer, Index, InputBuffer, TensorBox, index_symbols
from ember.inductor.lowering import as_loader, register
from ember.inductor.virtualized import ReadsHandler, ops, set_ops_handler


@dataclass(eq=False)
class MutationBuffer(ComputedBuffer):
    """A pointwise loop that stores ``body(index)`` into the graph input ``target`` (in place); the
    buffer's own name is only its name in the schedule: it allocates nothing."""

    target: InputBuffer = None  # type: ignore[assignment]

    @property
    def store_name(self) -> str:
        return self.target.name

    def store_body(self, index: Index, rindex: Index) -> None:
        ops.store(self.target.name, self.target.layout.index(index), self.body(index, rindex))


def written_name(buf: Any) -> str:
    """The buffer a loop's stores go to: its own, or the input a mutation writes."""
    return buf.target.name if isinstance(buf, MutationBuffer) else buf.name


@register("copy_.default")
def copy_(ctx, target, value, non_blocking=False):
    """``copy_`` onto a graph input: deferred to the end of the graph (``emit_mutations``)."""
    if not isinstance(target, TensorBox) or not isinstance(target.buffer, InputBuffer):
        raise NotImplementedError("copy_ into a value that is not a graph input (only input mutations are lowered)")
    if any(t is target.buffer for t, _ in ctx.mutations):
        raise NotImplementedError(f"the graph input {target.buffer.name} is written twice")
    box = value if isinstance(value, TensorBox) else None
    loader = as_loader(value, target.size, target.dtype)
    ctx.mutations.append(
        (target.buffer, TensorBox(target.size, target.dtype, loader, None, 0, box.origins if box else []))
    )
    return TensorBox(target.size, target.dtype, loader)


def _reads(box: TensorBox) -> set[str]:
    handler = ReadsHandler()
    with set_ops_handler(handler):
        box.loader(list(index_symbols("x", len(box.size))))
    return {name for name, _ in handler.reads}


def _ready(pending: list, reads: dict) -> int | None:
    """The first pending mutation whose target no other pending mutation still reads."""
    for i, (target, _) in enumerate(pending):
        if not any(target.name in reads[id(t)] for t, _ in pending if t is not target):
            return i
    return None


def emit_mutations(ctx) -> list[MutationBuffer]:
    """The deferred input mutations as ``MutationBuffer``s, each after every mutation that reads the old
    value of its target."""
    pending = list(ctx.mutations)
    reads = {id(t): _reads(box) for t, box in pending}
    out: list[MutationBuffer] = []
    while pending:
        i = _ready(pending, reads)
        if i is None:
            # a cycle: the first one's value goes through a temporary first, which breaks it
            target, box = pending[0]
            tmp = ctx.realize(box)
            pending[0] = (target, TensorBox.of(tmp))
            reads[id(target)] = {tmp.name}
            continue
        target, box = pending.pop(i)
        loader = box.loader
        origins = [*box.origins, f"copy_ into {target.name} (in place)"]
        buf = MutationBuffer(
            f"buf{len(ctx.buffers)}", target.dtype, target.layout, lambda index, rindex, ld=loader: ld(index),
            origins=origins, target=target,
        )  # fmt: skip
        out.append(ctx._register(buf))
    ctx.mutations.clear()
    return out


__all__ = ["MutationBuffer", "emit_mutations", "written_name"]
