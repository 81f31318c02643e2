"""``ember.nn.parallel``: ``DataParallel`` (the module run on the one device Ember drives) and
``DistributedDataParallel`` (importable; it needs process groups, which ``ember.distributed`` does
not have yet)."""

from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
