"""The standard DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``):
``hook(process_group, bucket)`` returns a ``Future`` of the bucket's averaged gradients.

The compression hooks send the bucket in 16 bits (half the bytes) and decompress the sum into the
bucket's own dtype: the average is divided before the reduction, as PyTorch does, so the 16-bit sum
cannot overflow where the float32 one would not.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.tensor import Tensor
from ember.distributed import distributed_c10d as c10d
from ember.distributed._work import Future

__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]


def _group(process_group: Any) -> Any:
    return process_group if process_group is not None else c10d._default_pg()


def allreduce_hook(process_group: Any, bucket: Any) -> Future:
    """Divides the bucket by the group's size, then sums it over the group: the average."""
    group = _group(process_group)
    buffer: Tensor = bucket.buffer()
    buffer._array /= group.size()
    work = c10d.all_reduce(buffer, group=group, async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


def _compress_hook(dtype: Any, process_group: Any, bucket: Any) -> Future:
    group = _group(process_group)
    buffer: Tensor = bucket.buffer()
    compressed = (buffer / group.size()).to(dtype)
    work = c10d.all_reduce(compressed, group=group, async_op=True)

    def decompress(future: Future) -> Tensor:
        buffer._array[...] = future.value()[0]._array.astype(buffer._array.dtype)
        return buffer

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: Any) -> Future:
    """All-reduces the bucket in float16 and returns it in its own dtype."""
    return _compress_hook(D.float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: Any) -> Future:
    """All-reduces the bucket in bfloat16 and returns it in its own dtype."""
    return _compress_hook(D.bfloat16, process_group, bucket)
