"""``DistributedSampler``: each of ``num_replicas`` processes reads its own share of a map-style
dataset, the shares padded (or cut, with ``drop_last``) to one length so that every rank runs the
same number of steps.

Without ``num_replicas`` or ``rank`` the sampler asks the default process group of
``ember.distributed`` when that package is installed. It sits above this one in the layering, so it
is looked up when the sampler needs it, never imported when this module is.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator

from ember.core.aten.random.random_factories import randperm
from ember.core.generator import Generator
from ember.utils.data.dataset import Dataset
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_process_group(what: str) -> int:
    try:
        distributed = importlib.import_module("ember.distributed")
    except ImportError:
        raise RuntimeError(
            "Requires distributed package to be available (pass num_replicas and rank, or install ember-distributed)"
        ) from None
    return getattr(distributed, f"get_{what}")()


class DistributedSampler(Sampler[int]):
    """Rank ``rank``'s indices: every ``num_replicas``-th of a permutation (seeded by ``seed +
    epoch``; call ``set_epoch`` each epoch) or of ``range(len(dataset))`` with ``shuffle=False``."""

    def __init__(
        self,
        dataset: Dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _from_process_group("world_size")
        if rank is None:
            rank = _from_process_group("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            # Cut to the largest multiple of num_replicas below the length.
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            # Pad by repeating from the start, as many whole times as needed.
            padding = self.total_size - n
            indices += (indices * math.ceil(padding / n))[:padding] if padding else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reseed the permutation for ``epoch``: without it every epoch repeats the first's order."""
        self.epoch = epoch
