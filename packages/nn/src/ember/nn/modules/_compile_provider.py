"""The slot through which ``Module.compile()`` reaches ``ember.compile``.

Graph capture lives in a package to the right of ``ember.nn`` (ember-dynamo), which nn may not
import; it fills this slot when it is imported. Until then, ``Module.compile()`` loads it through
the entry point ``compile_in_place`` of the group ``ember.compile`` that ember-dynamo declares (a
plugin, as the layering allows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_provider: Callable[..., None] | None = None


def register(fn: Callable[..., None]) -> None:
    """Set ``fn(module, *args, **kwargs)``: compile ``module``'s calls in place."""
    global _provider
    _provider = fn


def compile_in_place(module: Any, *args: Any, **kwargs: Any) -> None:
    if _provider is None:
        from importlib.metadata import entry_points

        for entry in entry_points(group="ember.compile", name="compile_in_place"):
            register(entry.load())
    if _provider is None:
        raise RuntimeError("Module.compile() needs graph capture (the ember-dynamo package), which is not installed")
    _provider(module, *args, **kwargs)
