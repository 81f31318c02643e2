"""The Python-facing surface: which functions ``ember.<name>`` offers and which methods ``Tensor``
has. Family files register into these tables; ``ember.core`` attaches the methods once every
family is loaded, and the meta-package re-exports the functions."""

from __future__ import annotations

from collections.abc import Callable

functions: dict[str, Callable] = {}
methods: dict[str, Callable] = {}


def public(*names: str) -> Callable[[Callable], Callable]:
    """Offer the decorated function as ``ember.<name>`` for each name (default: its own name)."""

    def register(fn: Callable) -> Callable:
        for name in names or (fn.__name__,):
            if name in functions:
                raise RuntimeError(f"ember.{name} is defined twice")
            functions[name] = fn
        return fn

    return register


def method(*names: str) -> Callable[[Callable], Callable]:
    """Attach the decorated function as ``Tensor.<name>`` for each name (default: its own name)."""

    def register(fn: Callable) -> Callable:
        for name in names or (fn.__name__,):
            if name in methods:
                raise RuntimeError(f"Tensor.{name} is defined twice")
            methods[name] = fn
        return fn

    return register


def attach_methods(cls) -> None:
    for name, fn in methods.items():
        setattr(cls, name, fn)
