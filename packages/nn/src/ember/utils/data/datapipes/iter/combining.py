"""``concat``, ``zip``, ``mux``, ``fork`` and ``demux``.

``fork`` and ``demux`` return child DataPipes that read one source through a shared container:
each child has a queue of the items read for it but not yet taken; a child that finds its queue
empty reads the source on, routing what it reads (to every other child for ``fork``, to the
classified child for ``demux``). ``buffer_size`` bounds what waits in the queues (``BufferError``
beyond it; -1 for no bound). Starting a child's iteration a second time in one pass starts a new
pass for all the children (a warning if some had not finished) and invalidates their iterators.
"""

from __future__ import annotations

import copy as copymodule
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sized
from typing import Literal

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = [
    "ConcaterIterDataPipe",
    "DemultiplexerIterDataPipe",
    "ForkerIterDataPipe",
    "MultiplexerIterDataPipe",
    "ZipperIterDataPipe",
]


def _sized_all(datapipes) -> bool:
    return all(isinstance(dp, Sized) for dp in datapipes)


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The items of each DataPipe in turn."""

    def __init__(self, *datapipes: IterDataPipe) -> None:
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator:
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        if _sized_all(self.datapipes):
            return sum(len(dp) for dp in self.datapipes)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one item from each DataPipe, until the shortest ends."""

    def __init__(self, *datapipes: IterDataPipe) -> None:
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for `ZipIterDataPipe`.")
        super().__init__()
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[tuple]:
        yield from zip(*(iter(dp) for dp in self.datapipes), strict=False)

    def __len__(self) -> int:
        if _sized_all(self.datapipes):
            return min(len(dp) for dp in self.datapipes)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One item from each DataPipe in turn, round after round, until one of them ends (the
    incomplete last round is dropped)."""

    def __init__(self, *datapipes) -> None:
        self.datapipes = datapipes

    def __iter__(self) -> Iterator:
        iterators = [iter(dp) for dp in self.datapipes]
        while iterators:
            round_items = []
            for iterator in iterators:
                try:
                    round_items.append(next(iterator))
                except StopIteration:
                    return
            yield from round_items

    def __len__(self) -> int:
        if _sized_all(self.datapipes):
            return min(len(dp) for dp in self.datapipes) * len(self.datapipes)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


class _Container(IterDataPipe):
    """The shared state of the children of one ``fork`` or ``demux``."""

    _overflow_message = ""

    def __init__(self, datapipe: IterDataPipe, num_instances: int, buffer_size: int) -> None:
        self.main_datapipe = datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        if buffer_size < 0:
            warnings.warn(
                f"Unlimited buffer size is set for `{self._name}`, please be aware of OOM at random places",
                UserWarning,
                stacklevel=3,
            )
        self.reset()

    def reset(self) -> None:
        self._source: Iterator | None = None
        self._exhausted = False
        self._queues: list[deque] = [deque() for _ in range(self.num_instances)]
        self._started = [False] * self.num_instances
        self._finished = [False] * self.num_instances

    def _route(self, item, reader: int) -> bool:
        """Queue ``item`` for the children it goes to; whether ``reader`` gets it directly."""
        raise NotImplementedError

    def _buffered(self) -> int:
        return sum(len(q) for q in self._queues)

    def next_for(self, instance_id: int):
        """The next item of child ``instance_id``; StopIteration at the end."""
        queue = self._queues[instance_id]
        while not queue:
            if self._exhausted:
                raise StopIteration
            if self._source is None:
                self._source = iter(self.main_datapipe)
            try:
                item = next(self._source)
            except StopIteration:
                self._exhausted = True
                raise
            if self._route(item, instance_id):
                self._check_buffer()
                return item
            self._check_buffer()
        return queue.popleft()

    def _check_buffer(self) -> None:
        if self.buffer_size >= 0 and self._buffered() > self.buffer_size:
            raise BufferError(self._overflow_message.format(size=self.buffer_size))

    def start_child(self, instance_id: int) -> None:
        if self._started[instance_id]:  # a second pass: every child starts again from the beginning
            if not all(self._finished):
                warnings.warn(
                    "Some child DataPipes are not exhausted when __iter__ is called. We are resetting "
                    "the buffer and each child DataPipe will read from the start again.",
                    UserWarning,
                    stacklevel=4,
                )
            self._valid_iterator_id = (self._valid_iterator_id or 0) + 1
            self.reset()
        self._started[instance_id] = True

    def __iter__(self):
        raise RuntimeError(f"the {self._name} container is read through its child DataPipes")


class _ChildDataPipe(IterDataPipe):
    """One output of ``fork`` or ``demux``."""

    _is_child_datapipe = True

    def __init__(self, main_datapipe: _Container, instance_id: int) -> None:
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self) -> Iterator:
        container = self.main_datapipe
        while True:
            try:
                item = container.next_for(self.instance_id)
            except StopIteration:
                container._finished[self.instance_id] = True
                return
            yield item

    def _start_child_iteration(self) -> int:
        self.main_datapipe.start_child(self.instance_id)
        self._valid_iterator_id = self.main_datapipe._valid_iterator_id or 0
        return self._valid_iterator_id

    def _check_valid_iterator_id(self, iterator_id: int) -> bool:
        return iterator_id == self._valid_iterator_id == (self.main_datapipe._valid_iterator_id or 0)

    def __len__(self) -> int:
        return self.main_datapipe.length_of(self.instance_id)


class _ForkContainer(_Container):
    _name = "fork"
    _overflow_message = "ForkerIterDataPipe buffer overflow,buffer size {size} is insufficient."

    def __init__(self, datapipe, num_instances: int, buffer_size: int, copy) -> None:
        if copy is None:
            self.copy_fn = None
        elif copy == "shallow":
            self.copy_fn = copymodule.copy
        elif copy == "deep":
            self.copy_fn = copymodule.deepcopy
        else:
            raise ValueError(f"Unknown copy method `{copy}` requested, choose one of None, `shallow` or `deep`.")
        super().__init__(datapipe, num_instances, buffer_size)

    def next_for(self, instance_id: int):
        item = super().next_for(instance_id)
        return item if self.copy_fn is None else self.copy_fn(item)

    def _route(self, item, reader: int) -> bool:
        for index, queue in enumerate(self._queues):
            # A child that has finished this pass, or not started it while others have, still
            # reads every item from the start: queue it for all but the reader.
            if index != reader:
                queue.append(item)
        return True

    def _buffered(self) -> int:
        # Items wait once per slower child; the bound is on how far the fastest is ahead.
        return max(len(q) for q in self._queues)

    def length_of(self, instance_id: int) -> int:
        return len(self.main_datapipe)


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``num_instances`` DataPipes that each yield every item of ``datapipe`` (functional name
    ``fork``); ``copy`` ("shallow" or "deep") gives each its own copies."""

    def __new__(
        cls,
        datapipe: IterDataPipe,
        num_instances: int,
        buffer_size: int = 1000,
        copy: Literal["shallow", "deep"] | None = None,
    ):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is found")
        if num_instances == 1:
            return datapipe
        container = _ForkContainer(datapipe, num_instances, buffer_size, copy)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


class _DemuxContainer(_Container):
    _name = "demux"
    _overflow_message = "DemultiplexerIterDataPipe buffer overflow, buffer size {size} is insufficient."

    def __init__(self, datapipe, num_instances: int, classifier_fn: Callable, drop_none: bool, buffer_size: int):
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none
        super().__init__(datapipe, num_instances, buffer_size)

    def _route(self, item, reader: int) -> bool:
        target = self.classifier_fn(item)
        if target is None and self.drop_none:
            return False
        if target is None or target >= self.num_instances or target < 0:
            raise ValueError(
                f"Output of the classification fn should be between 0 and {self.num_instances - 1}. "
                f"{target} is returned."
            )
        if target == reader:
            return True
        self._queues[target].append(item)
        return False

    def length_of(self, instance_id: int) -> int:
        raise TypeError("DemultiplexerIterDataPipe's child DataPipes have no valid length")


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """``num_instances`` DataPipes; item ``x`` goes to the one numbered ``classifier_fn(x)``
    (functional name ``demux``); items classified None are dropped with ``drop_none``."""

    def __new__(
        cls,
        datapipe: IterDataPipe,
        num_instances: int,
        classifier_fn: Callable,
        drop_none: bool = False,
        buffer_size: int = 1000,
    ):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is found")
        container = _DemuxContainer(datapipe, num_instances, classifier_fn, drop_none, buffer_size)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]
