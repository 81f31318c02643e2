"""Fetchers: turn what the index sampler yields (a key, or a list of keys when the loader batches)
into a collated batch. Shared by the single-process iterator and the workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class MapFetcher:
    iterable = False

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, keys) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[keys])
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(keys) if getitems else [self.dataset[key] for key in keys]
        return self.collate_fn(samples)


class IterableFetcher:
    """Reads the next samples of the dataset's iterator; ``keys`` only says how many (a batch of
    placeholders). Raises ``StopIteration`` once nothing (or, with ``drop_last``, too little) is
    left."""

    iterable = True

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.samples = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, keys) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.samples))
        batch = []
        for _ in keys:
            try:
                batch.append(next(self.samples))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(keys)):
            raise StopIteration
        return self.collate_fn(batch)


def make_fetcher(iterable: bool, auto_collation: bool, collate_fn: Callable, drop_last: bool, dataset) -> Any:
    """A fetcher for ``dataset``; a module-level function so that a ``functools.partial`` of it
    pickles into spawned workers."""
    cls = IterableFetcher if iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
