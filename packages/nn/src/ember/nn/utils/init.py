"""``nn.utils.skip_init``: build a module without running its parameter initialization."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """``module_cls(*args, **kwargs)`` built on the meta device, then given uninitialized storage on
    the requested device (``kwargs['device']``, the CPU by default)."""
    from ember.nn.modules.module import Module

    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
