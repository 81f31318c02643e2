"""``vmap`` and its batching rules; importing this package registers every rule."""

from ember.func._vmap import rules  # noqa: F401  (each rule module registers its rules on import)
from ember.func._vmap.api import vmap
from ember.func._vmap.autograd_function import install as _install_function_handler
from ember.func._vmap.batched import BatchedTensor
from ember.func._vmap.table import RULES, batch_rule, missing

_install_function_handler()

__all__ = ["RULES", "BatchedTensor", "batch_rule", "missing", "vmap"]
