"""``DistributedDataParallel``: importable under PyTorch's path, so that scripts and pickles that
name it load; making one needs a process group, which ``ember.distributed`` does not have yet (it
has the stores: ``TCPStore``, ``HashStore``, ``PrefixStore``)."""

from __future__ import annotations

from typing import Any

from ember.nn.modules.module import Module


class DistributedDataParallel(Module):
    """Data parallelism over processes; not available until ``ember.distributed`` has process groups."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0, **kwargs: Any):
        raise RuntimeError(
            "DistributedDataParallel needs a process group (init_process_group), and ember.distributed does not "
            "offer process groups or collectives yet, only its stores (TCPStore, HashStore, PrefixStore). "
            "Train in one process, or wrap the module in ember.nn.DataParallel."
        )
