"""The backend ``eager``: runs the captured graph as it is, in Python (for testing capture alone)."""

from __future__ import annotations

from collections.abc import Callable

from ember.dynamo.backends.registry import register_backend


@register_backend
def eager(gm, example_inputs: list, **kwargs) -> Callable:
    if kwargs:
        raise TypeError(f"the backend 'eager' takes no options, got {sorted(kwargs)}")
    return gm.forward
