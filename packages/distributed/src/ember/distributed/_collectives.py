"""The tensor collectives and point-to-point operations, with PyTorch's signatures.

Each one checks its arguments, takes the group's next sequence number, records a Flight Recorder
entry, starts the operation on the backend of its tensors' device and either returns the ``Work``
(``async_op=True``) or waits for it. Ranks are global ranks unless the argument says ``group_``.
A rank outside ``group`` returns ``None`` at once, as in PyTorch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ember.core.tensor import Tensor
from ember.distributed._types import GroupMember, ReduceOp
from ember.distributed._work import CompletedWork, Work
from ember.distributed._world import ProcessGroup, missing_ranks, world
from ember.distributed.flight_recorder import dump, recorder
from ember.distributed.store import DistBackendError
from ember.logs import get_artifact_logger, is_artifact_enabled

__all__ = [
    "P2POp", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
    "batch_isend_irecv", "broadcast", "gather", "irecv", "isend", "monitored_barrier", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
]  # fmt: skip

_log = get_artifact_logger(__name__, "collectives")


def _pg(group: ProcessGroup | None) -> ProcessGroup | None:
    """The group to run on, or None for a rank outside ``group``."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if group is None:
        if world.default_pg is None:
            raise ValueError(
                "Default process group has not been initialized, please make sure to call init_process_group."
            )
        return world.default_pg
    return group


def _check_tensor(value: Any, name: str) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor but got {type(value)} instead.")  # fmt: skip


def _check_tensor_list(value: Any, name: str) -> None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, Tensor) for t in value):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor] but got {type(value)} instead.")  # fmt: skip


def _group_rank(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"group_{what} {group_rank} is outside the group of {pg.size()} ranks")
        return group_rank
    if global_rank is None:
        global_rank = 0
    try:
        return pg.global_ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.group_name}") from None


def _run(
    pg: ProcessGroup,
    op: str,
    device_tensor: Tensor | None,
    inputs: Sequence[Tensor],
    outputs: Sequence[Tensor],
    launch: Callable[[Any], Work],
    async_op: bool,
    p2p: bool = False,
) -> Work | None:
    if pg.broken is not None:
        raise DistBackendError(f"process group {pg.group_name} cannot run {op}: {pg.broken}")
    if p2p:
        pg.p2p_seq += 1
    else:
        pg.seq += 1
    seq = pg.seq
    entry = recorder.record(pg.group_name, pg.group_desc, seq, pg.p2p_seq, op, list(inputs), list(outputs))
    backend = pg._get_backend(device_tensor.device if device_tensor is not None else "cpu")
    work = launch(backend)
    work._on_complete = entry.complete
    work._timeout = pg.timeout.total_seconds()
    work._on_timeout = lambda elapsed: _timed_out(pg, op, seq, p2p, entry, elapsed)
    if is_artifact_enabled("collectives"):
        sizes = [list(t.shape) for t in inputs]
        _log.debug("%s group=%s seq=%d sizes=%s dtypes=%s", op, pg.group_name, seq, sizes, entry.input_dtypes)
    if async_op:
        return work
    started = time.perf_counter()
    work.wait()
    if is_artifact_enabled("collectives"):
        _log.debug("%s group=%s seq=%d done in %.3f ms", op, pg.group_name, seq, (time.perf_counter() - started) * 1e3)
    return None


def _timed_out(pg: ProcessGroup, op: str, seq: int, p2p: bool, entry: Any, elapsed: float) -> BaseException:
    entry.state = "timed_out"
    missing = [] if p2p else missing_ranks(pg, seq)
    pg.broken = f"{op} (sequence number {seq}) timed out"
    try:
        where = f"Flight Recorder dumped to {dump(reason=f'{op} #{seq} of group {pg.group_name} timed out')}"
    except OSError as error:
        where = f"Flight Recorder dump failed: {error}"
    never = f"ranks that never entered it: {missing}" if missing else "every rank entered it"
    rank = world.default_pg.rank() if world.default_pg is not None else pg.rank()
    return DistBackendError(
        f"[rank{rank}]: collective {op} (sequence number {seq}) of process group {pg.group_name} "
        f"({pg.group_desc}, ranks {pg.global_ranks}) did not finish within the group's timeout of "
        f"{pg.timeout.total_seconds():g} s (waited {elapsed:.1f} s); {never}. {where}"
    )


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False):
    """Reduces ``tensor`` over the group's ranks, in place on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    return _run(pg, "all_reduce", tensor, [tensor], [tensor], lambda b: b.all_reduce(tensor, op), async_op)


def broadcast(
    tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
    group_src: int | None = None,
):  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    return _run(pg, "broadcast", tensor, [tensor], [tensor], lambda b: b.broadcast(tensor, root), async_op)


def reduce(
    tensor: Tensor, dst: int | None = None, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
    async_op: bool = False, group_dst: int | None = None,
):  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    return _run(pg, "reduce", tensor, [tensor], [tensor], lambda b: b.reduce(tensor, root, op), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False):
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the group has {pg.size()} ranks")
    _same_dtype(tensor_list, tensor, "all_gather")
    return _run(pg, "all_gather", tensor, [tensor], tensor_list, lambda b: b.all_gather(tensor_list, tensor), async_op)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
):
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _pg(group)
    if pg is None:
        return None
    _same_dtype([output_tensor], input_tensor, "all_gather_into_tensor")
    return _run(pg, "all_gather_into_tensor", input_tensor, [input_tensor], [output_tensor],
                lambda b: b.all_gather_into_tensor(output_tensor, input_tensor), async_op)  # fmt: skip


def reduce_scatter(
    output: Tensor, input_list: list[Tensor], op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
    async_op: bool = False,
):  # fmt: skip
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _pg(group)
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, the group has {pg.size()} ranks")
    _same_dtype(input_list, output, "reduce_scatter")
    return _run(pg, "reduce_scatter", output, input_list, [output],
                lambda b: b.reduce_scatter(output, input_list, op), async_op)  # fmt: skip


def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False
):
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _pg(group)
    if pg is None:
        return None
    _same_dtype([input], output, "reduce_scatter_tensor")
    return _run(pg, "reduce_scatter_tensor", input, [input], [output],
                lambda b: b.reduce_scatter_tensor(output, input, op), async_op)  # fmt: skip


def all_to_all_single(
    output: Tensor, input: Tensor, output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None, async_op: bool = False,
):  # fmt: skip
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _pg(group)
    if pg is None:
        return None
    _same_dtype([output], input, "all_to_all_single")
    out_splits = list(output_split_sizes) if output_split_sizes is not None else None
    in_splits = list(input_split_sizes) if input_split_sizes is not None else None
    return _run(pg, "all_to_all_single", input, [input], [output],
                lambda b: b.all_to_all_single(output, input, out_splits, in_splits), async_op)  # fmt: skip


def all_to_all(
    output_tensor_list: list[Tensor], input_tensor_list: list[Tensor], group: ProcessGroup | None = None,
    async_op: bool = False,
):  # fmt: skip
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = _pg(group)
    if pg is None:
        return None
    if len(output_tensor_list) != pg.size() or len(input_tensor_list) != pg.size():
        raise ValueError(f"all_to_all: both lists need one tensor per rank of the group ({pg.size()})")
    _same_dtype(output_tensor_list + input_tensor_list, input_tensor_list[0], "all_to_all")
    return _run(pg, "all_to_all", input_tensor_list[0], input_tensor_list, output_tensor_list,
                lambda b: b.all_to_all(output_tensor_list, input_tensor_list), async_op)  # fmt: skip


def gather(
    tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
    group: ProcessGroup | None = None, async_op: bool = False, group_dst: int | None = None,
):  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if not gather_list or len(gather_list) != pg.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        _same_dtype(gather_list, tensor, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    outputs = list(gather_list or [])
    return _run(pg, "gather", tensor, [tensor], outputs, lambda b: b.gather(gather_list, tensor, root), async_op)


def scatter(
    tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
    group: ProcessGroup | None = None, async_op: bool = False, group_src: int | None = None,
):  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    if pg.rank() == root:
        if not scatter_list or len(scatter_list) != pg.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        _same_dtype(scatter_list, tensor, "scatter")
        for t in scatter_list:
            if t.numel() != tensor.numel():
                raise ValueError("scatter: every tensor of scatter_list must have the output tensor's size")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    inputs = list(scatter_list or [])
    return _run(pg, "scatter", tensor, inputs, [tensor], lambda b: b.scatter(tensor, scatter_list, root), async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None):
    pg = _pg(group)
    if pg is None:
        return None
    return _run(pg, "barrier", None, [], [], lambda b: b.barrier(), async_op)


def monitored_barrier(group: ProcessGroup | None = None, timeout: Any = None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it within ``timeout``; rank 0 checks them."""
    pg = _pg(group)
    if pg is None:
        return None
    original = pg.timeout
    if timeout is not None:
        pg.timeout = timeout
    try:
        _run(pg, "monitored_barrier", None, [], [], lambda b: b.barrier(), False)
    except DistBackendError as error:
        missing = missing_ranks(pg, pg.seq)
        shown = missing if wait_all_ranks else missing[:1]
        raise DistBackendError(
            f"[Rank {pg.rank()}]: Ranks {', '.join(map(str, shown))} failed to pass monitoredBarrier in "
            f"{pg.timeout.total_seconds():g} s ({error})"
        ) from None
    finally:
        pg.timeout = original
    return None


# -- point to point ---------------------------------------------------------------------------


def _peer(pg: ProcessGroup, peer: int | None, group_peer: int | None, what: str) -> int:
    rank = _group_rank(pg, peer, group_peer, what)
    if rank == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank of the current process.")
    return rank


def isend(
    tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    return _run(pg, "send", tensor, [tensor], [], lambda b: b.send(tensor, peer, tag), True, p2p=True)


def irecv(
    tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
    group_src: int | None = None,
) -> Work | None:  # fmt: skip
    _check_tensor(tensor, "tensor")
    pg = _pg(group)
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src")
    return _run(pg, "recv", tensor, [], [tensor], lambda b: b.recv(tensor, peer, tag), True, p2p=True)


def send(
    tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
    group_dst: int | None = None,
) -> None:  # fmt: skip
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(
    tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
    group_src: int | None = None,
) -> int:  # fmt: skip
    """Receives into ``tensor``; returns the sender's global rank (-1 outside ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = _pg(group)
    return pg.global_ranks[work.source_rank()] if pg is not None else -1


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(
        self, op: Callable[..., Any], tensor: Tensor, peer: int | None = None, group: ProcessGroup | None = None,
        tag: int = 0, group_peer: int | None = None,
    ) -> None:  # fmt: skip
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or ``torch.distributed.irecv``."
            )
        _check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = (
            op,
            tensor,
            peer,
            group,
            tag,
            group_peer,
        )

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__} peer={self.peer} shape={tuple(self.tensor.shape)})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Starts every send and receive of the list (all non-blocking, so their order cannot deadlock)."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            work = isend(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        else:
            work = irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer)
        works.append(work if work is not None else CompletedWork())
    return works


def _same_dtype(tensors: Sequence[Tensor], reference: Tensor, op: str) -> None:
    for t in tensors:
        if t.dtype is not reference.dtype:
            raise ValueError(f"{op}: every tensor must have the same dtype, got {t.dtype} and {reference.dtype}")
