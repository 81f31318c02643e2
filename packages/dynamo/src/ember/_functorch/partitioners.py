"""``torch._functorch.partitioners``'s names, from ``ember.aot``."""

from ember.aot.partitioners import default_partition, min_cut_rematerialization_partition

__all__ = ["default_partition", "min_cut_rematerialization_partition"]
