"""``ember.nn.parallel``: ``DataParallel`` (the module run on the one device Ember drives),
``DistributedDataParallel`` (provided by ``ember-distributed``, looked up on first use), and the
functions that move tensors between the devices of one process (``scatter``, ``gather``,
``replicate``, ``parallel_apply``, ``comm``), which refuse as PyTorch's CPU build does."""

import warnings
from typing import Any

from ember.nn.parallel import comm, distributed, scatter_gather  # noqa: F401  (PyTorch's submodule paths)
from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.parallel_apply import parallel_apply
from ember.nn.parallel.replicate import replicate
from ember.nn.parallel.scatter_gather import gather, scatter

__all__ = [
    "DataParallel",
    "DistributedDataParallel",
    "data_parallel",
    "gather",
    "parallel_apply",
    "replicate",
    "scatter",
]

_deprecated: list[type] = []


def _distributed_data_parallel_cpu() -> type:
    """``DistributedDataParallel`` under its deprecated name, warning on construction."""
    if not _deprecated:
        base = distributed.resolve()

        class DistributedDataParallelCPU(base):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                warnings.warn(
                    "`DistributedDataParallelCPU` is deprecated, please use `DistributedDataParallel` instead.",
                    FutureWarning,
                    stacklevel=2,
                )
                super().__init__(*args, **kwargs)

        DistributedDataParallelCPU.__module__ = __name__
        _deprecated.append(DistributedDataParallelCPU)
    return _deprecated[0]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        return distributed.resolve()
    if name == "DistributedDataParallelCPU":
        return _distributed_data_parallel_cpu()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "DistributedDataParallel", "DistributedDataParallelCPU"})
