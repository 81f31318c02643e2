"""``ember.nn.parallel``: ``DataParallel`` (the module run on the one device Ember drives) and
``DistributedDataParallel`` (provided by ``ember-distributed``, looked up on first use)."""

from typing import Any

from ember.nn.parallel import distributed
from ember.nn.parallel.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        return distributed.resolve()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "DistributedDataParallel"})
