"""Offers ``ember.func.functionalize`` to the autograd package when ``ember.fx`` is imported.

The implementation (``ember._subclasses.functionalize``, which installs the dispatcher's
``functionalize`` level) is imported on the first call, so that importing ``ember.fx`` defines no
tensor subclass: the dispatcher's eager fast path holds until one is used.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd._providers import register_functionalize


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    from ember._subclasses.functionalize import functionalize as implementation

    return implementation(func, remove=remove)


register_functionalize(functionalize)
