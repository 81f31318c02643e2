"""``DistributedDataParallel`` under PyTorch's path. The class lives in ``ember-distributed``, which
sits above this package: the name is looked up when first asked for, through the entry point
``DistributedDataParallel`` of the group ``ember.nn.parallel`` (this package never imports
``ember.distributed``). Without ``ember-distributed`` installed the name still answers, with a class
that raises on construction, so that scripts and pickles that name it load.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]  # noqa: F822  (module __getattr__ provides it)

_resolved: list[type] = []


class _DistributedDataParallelUnavailable(Module):
    """Data parallelism over processes; needs the ``ember-distributed`` package."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0, **kwargs: Any):
        raise RuntimeError(
            "DistributedDataParallel needs ember.distributed (pip install ember-distributed), which provides "
            "process groups and the class itself. Train in one process, or wrap the module in ember.nn.DataParallel."
        )


def resolve() -> type:
    """The real class from ``ember-distributed`` when installed, else the one that explains it is not."""
    if not _resolved:
        found = entry_points(group="ember.nn.parallel", name="DistributedDataParallel")
        cls: type = _DistributedDataParallelUnavailable
        for entry in found:
            cls = entry.load()
            break
        _resolved.append(cls)
    return _resolved[0]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        return resolve()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
