"""What a DataLoader's iterators share (``BaseIter``), and the single-process one; the worker
processes' iterator is ``multiprocess.MultiProcessIter``."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_function

if TYPE_CHECKING:
    from ember.utils.data.dataloader import DataLoader


class BaseIter:
    """What the single- and multi-process iterators share: the keys, the base seed, the count of
    batches yielded (to warn when an iterable dataset yields more than its ``len``)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        if loader.pin_memory:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )
        self._keys = iter(self._index_sampler)
        # One draw per epoch from the loader's generator, whether or not workers use it, so that the
        # generator advances the same way with any num_workers, as in PyTorch.
        self._base_seed = empty_function((), dtype=D.int64).random_(generator=loader.generator).item()
        self._len_called = loader._len_called
        self._yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader) -> None:
        self._keys = iter(self._index_sampler)
        self._yielded = 0
        self._len_called = loader._len_called

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._yielded += 1
        if self._iterable and self._len_called is not None and self._yielded > self._len_called:
            message = (
                f"Length of IterableDataset {self._dataset} was reported to be {self._len_called}"
                f"(when accessing len(dataloader)), but {self._yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker (see ember.utils.data.get_worker_info)."
                )
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class SingleProcessIter(BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = loader._fetcher_factory()(self._dataset)

    def _next_data(self) -> Any:
        keys = next(self._keys)  # StopIteration ends the epoch
        return self._fetcher.fetch(keys)  # so does an exhausted iterable dataset
