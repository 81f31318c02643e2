"""``DataLoader``: a dataset, a sampler of keys and a collate function, iterated in the main
process or in worker processes (``multiprocess.py``).

Which sampler: map-style datasets use ``sampler`` (default ``SequentialSampler``, or
``RandomSampler`` with ``shuffle=True``) grouped by a ``BatchSampler`` when ``batch_size`` is set;
a custom ``batch_sampler`` replaces both. Iterable datasets take no sampler: an endless sampler of
``None`` placeholders only says how many samples a batch holds. ``batch_size=None`` turns batching
off, and ``default_convert`` then replaces ``default_collate``.

``pin_memory`` is accepted and warned about as PyTorch's CPU build does: no accelerator is found,
so batches are not pinned.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, Generic, TypeVar

from ember.utils.data.collate import default_collate, default_convert
from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.fetch import make_fetcher
from ember.utils.data.iterators import SingleProcessIter
from ember.utils.data.multiprocess import MultiProcessIter
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ember.utils.data.worker import get_worker_info

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

# Set only once at the end of __init__: these attributes define the iteration and may not change.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler[None]):
    """``None`` forever: the keys of an iterable dataset, which the dataset ignores."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader`` does.

    >>> loader = DataLoader(TensorDataset(ember.arange(10.0)), batch_size=4, shuffle=True)
    >>> [len(x) for (x,) in loader]
    [4, 4, 2]
    """

    _initialized = False

    def __init__(
        self,
        dataset: Dataset[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            # Checked before the samplers, so that users learn first that the combination cannot work.
            if shuffle not in (False, None):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._len_called: int | None = None  # len() of an iterable dataset, to warn when it lied
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                    f"but got num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(
                        f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                        f"but got multiprocessing_context={context!r}"
                    )
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a string specifying "
                    f"the start method, but got multiprocessing_context={context}"
                )
        self._multiprocessing_context = context

    def __setattr__(self, name: str, value: Any) -> None:
        if self._initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterators draw keys from: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetcher_factory(self) -> Callable:
        return partial(make_fetcher, self._iterable, self._auto_collation, self.collate_fn, self.drop_last)

    def __iter__(self):
        # Persistent workers live as long as the loader: its one iterator is reset for each epoch.
        if self.persistent_workers and self.num_workers > 0:
            # A new one also when the workers were shut down (one died, say): they cannot resume.
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self):
        if self.num_workers == 0:
            return SingleProcessIter(self)
        self.check_worker_number_rationality()
        return MultiProcessIter(self)

    def __len__(self) -> int:
        if not self._iterable:
            return len(self._index_sampler)
        # An iterable dataset's own len() is trusted; iteration warns if it yields more.
        length = self._len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return length

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than this process may use CPUs."""
        if self.num_workers == 0:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:
            cpus = os.cpu_count()
        if cpus is not None and self.num_workers > cpus:
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested max "
                f"number of worker in current system is {cpus}, which is smaller than what this DataLoader is "
                "going to create. Please be aware that excessive worker creation might get DataLoader running "
                "slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=2,
            )
