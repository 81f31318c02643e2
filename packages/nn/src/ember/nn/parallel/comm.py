"""``ember.nn.parallel.comm``: collectives between the accelerators of one process (broadcast, reduce,
scatter, gather of tensors across devices). Ember drives at most one device per process, so each
refuses as PyTorch's CPU build does; ``ember.distributed`` provides collectives across processes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.tensor import Tensor
from ember.nn.parallel._devices import check_on_accelerator, check_targets, no_several_devices

__all__ = ["broadcast", "broadcast_coalesced", "gather", "reduce_add", "reduce_add_coalesced", "scatter"]


def broadcast(tensor: Tensor, devices: Sequence[Any] | None = None, *, out: Sequence[Tensor] | None = None) -> tuple:
    """Copy ``tensor`` to each of ``devices`` (or into ``out``)."""
    if (devices is None) == (out is None):
        raise RuntimeError(
            f"Exactly one of 'devices' and 'out' must be specified, but got devices={devices} and out={out}"
        )
    check_targets(devices)
    raise no_several_devices("broadcast")


def broadcast_coalesced(tensors: Sequence[Tensor], devices: Sequence[Any], buffer_size: int = 10485760) -> tuple:
    """``broadcast`` of several tensors at once."""
    check_targets(devices)
    raise no_several_devices("broadcast_coalesced")


def reduce_add(inputs: Sequence[Tensor], destination: Any = None) -> Tensor:
    """The sum of tensors that live on different devices, on ``destination``."""
    for i, t in enumerate(inputs):
        if t.device.type == "cpu":
            raise AssertionError(f"reduce_add expects all inputs to be on GPUs, but input {i} is on CPU")
    raise no_several_devices("reduce_add")


def reduce_add_coalesced(inputs: Sequence[Sequence[Tensor]], destination: Any = None, buffer_size: int = 10485760):
    """``reduce_add`` of several tensors per device at once."""
    for group in inputs:
        reduce_add(group, destination)
    raise no_several_devices("reduce_add_coalesced")


def scatter(
    tensor: Tensor,
    devices: Sequence[Any] | None = None,
    chunk_sizes: Sequence[int] | None = None,
    dim: int = 0,
    streams: Any = None,
    *,
    out: Sequence[Tensor] | None = None,
) -> tuple:
    """Split ``tensor`` along ``dim`` over ``devices``."""
    check_targets(devices)
    raise no_several_devices("scatter")


def gather(tensors: Sequence[Tensor], dim: int = 0, destination: Any = None, *, out: Tensor | None = None) -> Tensor:
    """Concatenate tensors of several devices along ``dim`` on ``destination``."""
    check_on_accelerator(tensors, "Gather function not implemented for CPU tensors")
    raise no_several_devices("gather")
