"""Helpers for looking inside the transforms: ``debug_unwrap`` and ``replace_all_batch_norm_modules_``."""

from __future__ import annotations

from typing import Any

from ember.core.tensor import Tensor
from ember.func._vmap.batched import BatchedTensor

__all__ = ["debug_unwrap", "replace_all_batch_norm_modules_"]


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The tensor a vmap wrapper holds, with its batch dimension (all levels when ``recurse``);
    a tensor that is not wrapped is returned as it is. For debugging only: the result escapes the
    transform."""
    while type(tensor) is BatchedTensor:
        tensor = tensor._value
        if not recurse:
            break
    return tensor


def _is_batch_norm(module: Any) -> bool:
    # By class name, as ember.nn sits above this package: BatchNorm1d/2d/3d, their lazy forms and
    # SyncBatchNorm all derive from nn.modules.batchnorm._BatchNorm.
    return any(cls.__name__ == "_BatchNorm" for cls in type(module).__mro__)


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Make every batch-norm module under ``root`` (itself included) stop tracking running stats, in
    place, so that it can run under ``vmap``; returns ``root``."""
    for module in root.modules():
        if _is_batch_norm(module):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
