"""``shuffle`` (``Shuffler``) and ``Sampler``.

The shuffler keeps a buffer of ``buffer_size`` items and yields a random one each time a new item
comes in (then drains the buffer in random order). Its random numbers come from Python's
``random.Random`` seeded at the start of each iteration: by ``set_seed(seed)`` when given (the same
order as PyTorch's for the same seed), else by a seed drawn from Ember's default generator (so
``ember.manual_seed`` makes the order reproducible).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sized

from ember.core import dtypes as _dtypes
from ember.core import functions as _f
from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe
from ember.utils.data.sampler import Sampler, SequentialSampler

__all__ = ["SamplerIterDataPipe", "ShufflerIterDataPipe"]


def _fresh_seed(generator=None) -> int:
    """A seed in [0, 2**63) from ``generator`` (Ember's default generator when None)."""
    return int(_f["empty"]((), dtype=_dtypes.int64).random_(generator=generator).item())


class SamplerIterDataPipe(IterDataPipe):
    """The items a sampler (``sampler(*sampler_args, data_source=datapipe, **sampler_kwargs)``) gives."""

    def __init__(
        self,
        datapipe: IterDataPipe,
        sampler: type[Sampler] = SequentialSampler,
        sampler_args: tuple | None = None,
        sampler_kwargs: dict | None = None,
    ) -> None:
        if not isinstance(datapipe, Sized):
            raise AssertionError("Sampler class requires input datapipe implemented `__len__`")
        super().__init__()
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else sampler_args
        self.sampler_kwargs = {} if sampler_kwargs is None else sampler_kwargs
        self.sampler_kwargs["data_source"] = self.datapipe
        self.sampler = sampler(*self.sampler_args, **self.sampler_kwargs)

    def __iter__(self) -> Iterator:
        return iter(self.sampler)

    def __len__(self) -> int:
        if isinstance(self.sampler, Sized):
            return len(self.sampler)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """The items in a random order, shuffled within a buffer of ``buffer_size`` (functional name
    ``shuffle``); ``unbatch_level`` unbatches first. ``set_shuffle(False)`` turns it off."""

    def __init__(self, datapipe: IterDataPipe, *, buffer_size: int = 10000, unbatch_level: int = 0) -> None:
        super().__init__()
        self._buffer: list = []
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(unbatch_level=unbatch_level)
        self.buffer_size = buffer_size
        self._enabled = True
        self._seed: int | None = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle: bool = True) -> ShufflerIterDataPipe:
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> ShufflerIterDataPipe:
        self._seed = seed
        return self

    def __iter__(self) -> Iterator:
        if not self._enabled:
            yield from self.datapipe
            return
        for item in self.datapipe:
            if len(self._buffer) == self.buffer_size:
                index = self._rng.randint(0, len(self._buffer) - 1)
                value, self._buffer[index] = self._buffer[index], item
                yield value
            else:
                self._buffer.append(item)
        while self._buffer:
            yield self._buffer.pop(self._rng.randint(0, len(self._buffer) - 1))

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")

    def reset(self) -> None:
        self._buffer = []
        if self._enabled:
            if self._seed is None:
                self._seed = _fresh_seed()
            self._rng.seed(self._seed)
            self._seed = None
