"""Collectives of picklable Python objects, built on the tensor collectives: each object is pickled
into a ``uint8`` tensor, the sizes travel first, then the bytes. As in PyTorch, unpickling runs
whatever the sender's pickle says: use these only between processes that trust each other."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ember.core.tensor import Tensor, from_array
from ember.distributed._collectives import (
    _group_rank,
    _pg,
    all_gather,
    all_gather_into_tensor,
    broadcast,
    gather,
    scatter,
)
from ember.distributed._world import ProcessGroup

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list"]


def _to_tensor(obj: Any) -> Tensor:
    return from_array(np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy())


def _from_tensor(tensor: Tensor, size: int) -> Any:
    return pickle.loads(tensor.numpy()[:size].tobytes())


def _sizes(values: list[int]) -> Tensor:
    return from_array(np.array(values, dtype=np.int64))


def broadcast_object_list(
    object_list: list[Any], src: int | None = None, group: ProcessGroup | None = None, device: Any = None,
    group_src: int | None = None,
) -> None:  # fmt: skip
    """Replaces ``object_list``'s items on every rank by the source rank's."""
    pg = _pg(group)
    if pg is None:
        return
    root = _group_rank(pg, src, group_src, "src")
    if pg.rank() == root:
        pickled = [_to_tensor(obj) for obj in object_list]
        sizes = _sizes([t.numel() for t in pickled])
    else:
        sizes = _sizes([0] * len(object_list))
    broadcast(sizes, group=pg, group_src=root)
    counts = sizes.numpy().tolist()
    if pg.rank() == root:
        payload = from_array(np.concatenate([t.numpy() for t in pickled]) if pickled else np.empty(0, np.uint8))
    else:
        payload = from_array(np.empty(sum(counts), dtype=np.uint8))
    broadcast(payload, group=pg, group_src=root)
    if pg.rank() != root:
        data, start = payload.numpy(), 0
        for i, count in enumerate(counts):
            object_list[i] = pickle.loads(data[start : start + count].tobytes())
            start += count


def _padded(obj: Any, pg: ProcessGroup) -> tuple[Tensor, list[int], int]:
    """This rank's pickle padded to the longest in the group, every rank's length, and that longest."""
    mine = _to_tensor(obj)
    lengths = [_sizes([0]) for _ in range(pg.size())]
    all_gather(lengths, _sizes([mine.numel()]), group=pg)
    sizes = [int(t.item()) for t in lengths]
    longest = max(sizes)
    padded = np.zeros(longest, dtype=np.uint8)
    padded[: mine.numel()] = mine.numpy()
    return from_array(padded), sizes, longest


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """Fills ``object_list`` (one slot per rank) with every rank's ``obj``."""
    pg = _pg(group)
    if pg is None:
        return
    mine, sizes, longest = _padded(obj, pg)
    out = from_array(np.empty(longest * pg.size(), dtype=np.uint8))
    all_gather_into_tensor(out, mine, group=pg)
    data = out.numpy()
    for i, size in enumerate(sizes):
        object_list[i] = pickle.loads(data[i * longest : i * longest + size].tobytes())


def gather_object(
    obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None,
    group: ProcessGroup | None = None, group_dst: int | None = None,
) -> None:  # fmt: skip
    pg = _pg(group)
    if pg is None:
        return
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
    mine, sizes, longest = _padded(obj, pg)
    outputs = [from_array(np.empty(longest, dtype=np.uint8)) for _ in range(pg.size())] if pg.rank() == root else None
    gather(mine, outputs, group=pg, group_dst=root)
    if outputs is not None and object_gather_list is not None:
        for i, (tensor, size) in enumerate(zip(outputs, sizes, strict=True)):
            object_gather_list[i] = _from_tensor(tensor, size)


def scatter_object_list(
    scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
    src: int | None = None, group: ProcessGroup | None = None, group_src: int | None = None,
) -> None:  # fmt: skip
    """Puts the source rank's ``scatter_object_input_list[rank]`` into ``scatter_object_output_list[0]``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _pg(group)
    if pg is None:
        return
    root = _group_rank(pg, src, group_src, "src")
    sizes = _sizes([0] * pg.size())
    if pg.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError("scatter_object_list: the source needs one object per rank of the group")
        pickled = [_to_tensor(obj) for obj in scatter_object_input_list]
        sizes = _sizes([t.numel() for t in pickled])
    broadcast(sizes, group=pg, group_src=root)
    counts = sizes.numpy().tolist()
    longest = max(counts)
    inputs = None
    if pg.rank() == root:
        inputs = []
        for t in pickled:
            padded = np.zeros(longest, dtype=np.uint8)
            padded[: t.numel()] = t.numpy()
            inputs.append(from_array(padded))
    out = from_array(np.empty(longest, dtype=np.uint8))
    scatter(out, inputs, group=pg, group_src=root)
    scatter_object_output_list[0] = _from_tensor(out, counts[pg.rank()])
