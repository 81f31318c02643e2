"""``nn.utils.stateless.functional_call``: the deprecated spelling of ``ember.func.functional_call``."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["functional_call"]


def functional_call(
    module: Any, parameters_and_buffers: Any, args: Any = None, kwargs: dict | None = None, *,
    tie_weights: bool = True, strict: bool = False,
) -> Any:  # fmt: skip
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the given tensors."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a future "
        "version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    # Imported here: ember.func defines vmap's dispatching tensor subclass, which takes every op off the
    # dispatcher's fast path once defined, so importing ember.nn must not load it.
    from ember.func import functional_call as _functional_call

    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
