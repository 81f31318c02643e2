"""Functional collectives (``torch.distributed._functional_collectives``): out of place, each returns
a new tensor and leaves its input alone, the form graph capture can record as ordinary ops.

``group`` is a ``ProcessGroup``, a list of global ranks naming an existing group (or the world), or
``None`` for the default group. Results come back complete (PyTorch returns
``AsyncCollectiveTensor``s that wait on first use); ``wait_tensor`` is there for code that calls it.
"""

from __future__ import annotations

from typing import Any

from ember.core.api import functions
from ember.core.tensor import Tensor
from ember.distributed import distributed_c10d as c10d
from ember.distributed._types import ReduceOp
from ember.distributed._world import ProcessGroup, world

__all__ = [
    "all_gather_tensor", "all_reduce", "all_reduce_coalesced", "all_to_all_single", "broadcast",
    "reduce_scatter_tensor", "wait_tensor",
]  # fmt: skip

_OPS = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "product": ReduceOp.PRODUCT, "min": ReduceOp.MIN,
        "max": ReduceOp.MAX, "band": ReduceOp.BAND, "bor": ReduceOp.BOR, "bxor": ReduceOp.BXOR}  # fmt: skip


def _op(name: str | Any) -> Any:
    if not isinstance(name, str):
        return name
    try:
        return _OPS[name.lower()]
    except KeyError:
        raise ValueError(f"reduce op {name!r} is not one of {sorted(_OPS)}") from None


def _resolve(group: Any) -> ProcessGroup:
    if group is None or isinstance(group, ProcessGroup):
        return c10d._group(group)
    if isinstance(group, (list, tuple)):
        ranks = sorted(int(r) for r in group)
        for pg in world.groups:
            if pg.global_ranks == ranks:
                return pg
        raise ValueError(f"no process group has exactly the ranks {ranks}; make one with new_group first")
    raise TypeError(f"group must be a ProcessGroup, a list of ranks or None, got {type(group).__name__}")


def wait_tensor(tensor: Tensor) -> Tensor:
    return tensor


def all_reduce(self: Tensor, reduceOp: str, group: Any, tag: str = "") -> Tensor:
    out = self.clone()
    c10d.all_reduce(out, op=_op(reduceOp), group=_resolve(group))
    return out


def all_reduce_coalesced(self: list[Tensor], reduceOp: str, group: Any, tag: str = "") -> list[Tensor]:
    return [all_reduce(t, reduceOp, group, tag) for t in self]


def broadcast(self: Tensor, src: int, group: Any, tag: str = "") -> Tensor:
    out = self.clone()
    c10d.broadcast(out, src=src, group=_resolve(group))
    return out


def all_gather_tensor(self: Tensor, gather_dim: int, group: Any, tag: str = "") -> Tensor:
    """Every rank's ``self`` concatenated along ``gather_dim``."""
    pg = _resolve(group)
    size = pg.size()
    source = self.contiguous()
    out = self.new_empty((source.shape[0] * size, *source.shape[1:]))
    c10d.all_gather_into_tensor(out, source, group=pg)
    if gather_dim % max(self.dim(), 1) != 0:
        out = functions["cat"](out.chunk(size, 0), gather_dim)
    return out


def reduce_scatter_tensor(self: Tensor, reduceOp: str, scatter_dim: int, group: Any, tag: str = "") -> Tensor:
    """The reduction of every rank's ``self``, of which this rank keeps its block along ``scatter_dim``."""
    pg = _resolve(group)
    size = pg.size()
    if self.shape[scatter_dim] % size:
        raise ValueError(f"reduce_scatter_tensor: dimension {scatter_dim} ({self.shape[scatter_dim]}) is not divisible by the group's size {size}")  # fmt: skip
    source = self
    if scatter_dim % max(self.dim(), 1) != 0:
        source = functions["cat"](self.chunk(size, scatter_dim), 0)
    source = source.contiguous()
    out = self.new_empty((source.shape[0] // size, *source.shape[1:]))
    c10d.reduce_scatter_tensor(out, source, op=_op(reduceOp), group=pg)
    if scatter_dim % max(self.dim(), 1) != 0:
        shape = list(self.shape)
        shape[scatter_dim] //= size
        out = out.reshape(shape) if out.is_contiguous() else out.contiguous().reshape(shape)
    return out


def all_to_all_single(
    self: Tensor, output_split_sizes: list[int] | None, input_split_sizes: list[int] | None, group: Any, tag: str = ""
) -> Tensor:
    pg = _resolve(group)
    rows = sum(output_split_sizes) if output_split_sizes else self.shape[0]
    out = self.new_empty((rows, *self.shape[1:]))
    c10d.all_to_all_single(out, self.contiguous(), output_split_sizes, input_split_sizes, group=pg)
    return out
