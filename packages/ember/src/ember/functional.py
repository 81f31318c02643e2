"""``ember.functional``: PyTorch's ``torch.functional`` module path. Each name here is the top-level
function of the same name (``ember.functional.einsum is ember.einsum``); a name that the top level
does not have yet is absent here too."""

from __future__ import annotations

import ember

# torch.functional.__all__; a name the top level lacks (yet) is left out of this module's __all__.
_NAMES = (
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_shapes",
    "broadcast_tensors",
    "cartesian_prod",
    "block_diag",
    "cdist",
    "chain_matmul",
    "einsum",
    "istft",
    "lu",
    "norm",
    "meshgrid",
    "pca_lowrank",
    "split",
    "stft",
    "svd_lowrank",
    "tensordot",
    "unique",
    "unique_consecutive",
    "unravel_index",
)
__all__ = [name for name in _NAMES if hasattr(ember, name)]


def __getattr__(name: str):
    # Looked up on use, not copied at import: the top level may gain a name later (or lazily).
    if name in _NAMES:
        try:
            return getattr(ember, name)
        except AttributeError:
            pass
    raise AttributeError(f"module 'ember.functional' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(name for name in _NAMES if hasattr(ember, name))
