"""``vmap`` and its batching rules; importing this package registers every rule."""

from ember.func._vmap import (  # noqa: F401  (each rule file registers its rules on import)
    rules_indexing,
    rules_matmul,
    rules_nn,
    rules_out,
    rules_pointwise,
    rules_random,
    rules_reductions,
    rules_shape,
)
from ember.func._vmap.api import vmap
from ember.func._vmap.autograd_function import install as _install_function_handler
from ember.func._vmap.batched import BatchedTensor
from ember.func._vmap.table import RULES, batch_rule, missing

_install_function_handler()

__all__ = ["RULES", "BatchedTensor", "batch_rule", "missing", "vmap"]
