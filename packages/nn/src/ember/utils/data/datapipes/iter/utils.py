"""``IterableWrapper``: any iterable as an IterDataPipe (a deep copy per iteration by default)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Iterator, Sized

from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["IterableWrapperIterDataPipe"]


class IterableWrapperIterDataPipe(IterDataPipe):
    """Yields the items of ``iterable``; with ``deepcopy`` (the default) of a copy made at each
    iteration, so that changing the items in place does not change the source."""

    def __init__(self, iterable: Iterable, deepcopy: bool = True) -> None:
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self) -> Iterator:
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn(
                    "The input iterable can not be deepcopied, "
                    "please be aware of in-place modification would affect source data.",
                    stacklevel=2,
                )
        yield from source

    def __len__(self) -> int:
        if isinstance(self.iterable, Sized):
            return len(self.iterable)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
