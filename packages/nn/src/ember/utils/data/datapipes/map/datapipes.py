"""The map-style DataPipes: ``SequenceWrapper``, and ``map``, ``batch``, ``concat``, ``zip`` and
``shuffle`` (which gives an IterDataPipe of the items in a random order)."""

from __future__ import annotations

import copy
import random
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from typing import Any

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import DataChunk, IterDataPipe, MapDataPipe
from ember.utils.data.datapipes.iter.combinatorics import _fresh_seed

__all__ = [
    "BatcherMapDataPipe",
    "ConcaterMapDataPipe",
    "MapperMapDataPipe",
    "SequenceWrapperMapDataPipe",
    "ShufflerIterDataPipe",
    "ZipperMapDataPipe",
]


def default_fn(data):
    return data


class SequenceWrapperMapDataPipe(MapDataPipe):
    """A sequence or mapping as a MapDataPipe (a deep copy of it by default)."""

    def __init__(self, sequence: Sequence | Mapping[Any, Any], deepcopy: bool = True) -> None:
        self.sequence = sequence
        if deepcopy:
            try:
                self.sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn(
                    "The input sequence can not be deepcopied, "
                    "please be aware of in-place modification would affect source data",
                    stacklevel=2,
                )

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``fn`` of each item."""

    def __init__(self, datapipe: MapDataPipe, fn: Callable = default_fn) -> None:
        super().__init__()
        self.datapipe = datapipe
        self.fn = fn

    def __len__(self) -> int:
        return len(self.datapipe)

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe[DataChunk]):
    """Item ``i`` is the ``i``-th batch of ``batch_size`` items."""

    def __init__(
        self, datapipe: MapDataPipe, batch_size: int, drop_last: bool = False, wrapper_class=DataChunk
    ) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index) -> DataChunk:
        batch: list = []
        try:
            for i in range(index * self.batch_size, (index + 1) * self.batch_size):
                batch.append(self.datapipe[i])
            return self.wrapper_class(batch)
        except IndexError as e:
            if not self.drop_last and batch:
                return self.wrapper_class(batch)
            raise IndexError(f"Index {index} is out of bound.") from e

    def __len__(self) -> int:
        if not isinstance(self.datapipe, Sized):
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        if self.drop_last:
            return len(self.datapipe) // self.batch_size
        return (len(self.datapipe) + self.batch_size - 1) // self.batch_size


def _check_inputs(datapipes) -> None:
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
        raise TypeError("Expected all inputs to be `MapDataPipe`")
    if not all(isinstance(dp, Sized) for dp in datapipes):
        raise TypeError("Expected all inputs to be `Sized`")


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The items of each MapDataPipe, one after the other."""

    def __init__(self, *datapipes: MapDataPipe) -> None:
        _check_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index):
        offset = 0
        for dp in self.datapipes:
            if index - offset < len(dp):
                return dp[index - offset]
            offset += len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Item ``i`` is the tuple of item ``i`` of each MapDataPipe."""

    def __init__(self, *datapipes: MapDataPipe) -> None:
        _check_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index) -> tuple:
        items = []
        for dp in self.datapipes:
            try:
                items.append(dp[index])
            except IndexError as e:
                raise IndexError(f"Index {index} is out of range for one of the input MapDataPipes {dp}.") from e
        return tuple(items)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


class ShufflerIterDataPipe(IterDataPipe):
    """The items of a MapDataPipe at ``indices`` (all by default) in a random order, reshuffled at
    each iteration (``set_seed`` fixes the next order; as PyTorch's for the same seed)."""

    def __init__(self, datapipe: MapDataPipe, *, indices: list | None = None) -> None:
        super().__init__()
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled = True
        self._seed: int | None = None
        self._rng = random.Random()
        self._shuffled_indices: list = self.indices

    def set_shuffle(self, shuffle: bool = True) -> ShufflerIterDataPipe:
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> ShufflerIterDataPipe:
        self._seed = seed
        return self

    def __iter__(self) -> Iterator:
        if not self._enabled:
            for index in self.indices:
                yield self.datapipe[index]
            return
        while self._shuffled_indices:
            yield self.datapipe[self._shuffled_indices.pop()]

    def reset(self) -> None:
        if self._enabled and self._seed is None:
            self._seed = _fresh_seed()
        self._rng.seed(self._seed)
        self._seed = None
        self._shuffled_indices = self._rng.sample(self.indices, len(self.indices))

    def __len__(self) -> int:
        return len(self.datapipe)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)
