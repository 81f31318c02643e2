"""What packages to the right of autograd offer it, registered by them when imported (this package
never imports them): ``functionalize``, which the fx package implements and ``ember.func`` exposes."""

from __future__ import annotations

from collections.abc import Callable

_functionalize: Callable | None = None


def register_functionalize(implementation: Callable) -> None:
    """``implementation(func, remove=...)`` makes the functionalized function (``ember.func.functionalize``)."""
    global _functionalize
    _functionalize = implementation


def functionalize_implementation() -> Callable | None:
    return _functionalize
