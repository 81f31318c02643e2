"""``batch``, ``unbatch``, ``groupby`` and ``sharding_filter``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sized
from enum import IntEnum
from typing import Any

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe

__all__ = [
    "SHARDING_PRIORITIES",
    "BatcherIterDataPipe",
    "GrouperIterDataPipe",
    "ShardingFilterIterDataPipe",
    "UnBatcherIterDataPipe",
]


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe[DataChunk]):
    """Items in batches of ``batch_size`` (``DataChunk``s); the last may be short unless ``drop_last``."""

    def __init__(
        self, datapipe: IterDataPipe, batch_size: int, drop_last: bool = False, wrapper_class=DataChunk
    ) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self) -> Iterator[DataChunk]:
        batch: list = []
        for item in self.datapipe:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self) -> int:
        if not isinstance(self.datapipe, Sized):
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        if self.drop_last:
            return len(self.datapipe) // self.batch_size
        return (len(self.datapipe) + self.batch_size - 1) // self.batch_size


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """The items of each batch, ``unbatch_level`` levels deep (-1: all the way down)."""

    def __init__(self, datapipe: IterDataPipe, unbatch_level: int = 1) -> None:
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self) -> Iterator:
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element, level: int) -> Iterator:
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == 0 or (level == -1 and not isinstance(element, list)):
            yield element
        elif isinstance(element, list):  # DataChunk is a list
            for item in element:
                yield from self._dive(item, level if level == -1 else level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the DataPipe")


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe[DataChunk]):
    """Items grouped by ``group_key_fn`` in a buffer of ``buffer_size``: a group is yielded when it
    reaches ``group_size``, or (the largest one) when the buffer is full, and the rest at the end.
    Groups below ``guaranteed_group_size`` are an error, or dropped with ``drop_remaining``."""

    def __init__(
        self,
        datapipe: IterDataPipe,
        group_key_fn: Callable[[Any], Any],
        *,
        keep_key: bool = False,
        buffer_size: int = 10000,
        group_size: int | None = None,
        guaranteed_group_size: int | None = None,
        drop_remaining: bool = False,
    ) -> None:
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.buffer_elements: defaultdict[Any, list] = defaultdict(list)
        self.curr_buffer_size = 0
        self.group_size = group_size
        self.guaranteed_group_size = None
        if group_size is not None and buffer_size is not None:
            if not 0 < group_size <= buffer_size:
                raise AssertionError("group_size must be > 0 and <= buffer_size")
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            if group_size is None or not 0 < guaranteed_group_size <= group_size:
                raise AssertionError("guaranteed_group_size must be > 0 and <= group_size and group_size must be set")
            self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk

    def _emit(self, key, items):
        result = self.wrapper_class(items)
        return (key, result) if self.keep_key else result

    def _remove_biggest_group(self):
        key = max(self.buffer_elements, key=lambda k: len(self.buffer_elements[k]))
        items = self.buffer_elements.pop(key)
        self.curr_buffer_size -= len(items)
        if self.guaranteed_group_size is not None and len(items) < self.guaranteed_group_size:
            if not self.drop_remaining:
                raise RuntimeError("Failed to group items", str(items))
            return None
        return items

    def __iter__(self) -> Iterator:
        for item in self.datapipe:
            key = self.group_key_fn(item)
            self.buffer_elements[key].append(item)
            self.curr_buffer_size += 1
            if self.group_size is not None and self.group_size == len(self.buffer_elements[key]):
                items = self.buffer_elements.pop(key)
                self.curr_buffer_size -= len(items)
                yield self._emit(key, items)
            if self.curr_buffer_size == self.max_buffer_size:
                items = self._remove_biggest_group()
                if items is not None:
                    # PyTorch pairs the evicted group with the key of the item just read.
                    yield self._emit(key, items)
        for key in tuple(self.buffer_elements):
            items = self.buffer_elements.pop(key)
            self.curr_buffer_size -= len(items)
            yield self._emit(key, items)

    def reset(self) -> None:
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)


class SHARDING_PRIORITIES(IntEnum):
    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Every ``num_of_instances``-th item from ``instance_id``, as set by ``apply_sharding``; sharding
    groups (distributed, multiprocessing) combine, the lower priority varying fastest."""

    def __init__(self, source_datapipe: IterDataPipe, sharding_group_filter=None) -> None:
        super().__init__()
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups: dict[int, tuple[int, int]] = {}
        self.num_of_instances = 1
        self.instance_id = 0

    def is_shardable(self) -> bool:
        return True

    def apply_sharding(self, num_of_instances: int, instance_id: int, sharding_group=SHARDING_PRIORITIES.DEFAULT):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than num_of_instances({num_of_instances})")
        default = SHARDING_PRIORITIES.DEFAULT
        if (sharding_group == default and self.groups and default not in self.groups) or (
            sharding_group != default and default in self.groups
        ):
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self.num_of_instances, self.instance_id = 1, 0
        for key in sorted(self.groups, reverse=True):
            if self.sharding_group_filter is None or key == self.sharding_group_filter:
                count, index = self.groups[key]
                self.instance_id += self.num_of_instances * index
                self.num_of_instances *= count

    def __iter__(self) -> Iterator:
        for index, item in enumerate(self.source_datapipe):
            if index % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self) -> int:
        if isinstance(self.source_datapipe, Sized):
            n = len(self.source_datapipe)
            return n // self.num_of_instances + (1 if self.instance_id < n % self.num_of_instances else 0)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
