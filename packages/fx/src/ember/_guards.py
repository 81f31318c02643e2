"""``ember._guards``: what tracing shares about its inputs; for now ``detect_fake_mode``."""

from __future__ import annotations

from typing import Any

__all__ = ["detect_fake_mode"]


def _flatten(value: Any) -> list:
    if isinstance(value, list | tuple):
        return [x for v in value for x in _flatten(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flatten(v)]
    return [value]


def detect_fake_mode(inputs: Any = None):
    """The ``FakeTensorMode`` in use: the active one, else the one of the fake tensors in ``inputs``
    (nested lists, tuples and dicts); None if there is none. All of them must be the same mode."""
    from ember._subclasses.fake_tensor import FakeTensor, active_fake_mode

    found = []
    mode = active_fake_mode()
    if mode is not None:
        found.append((mode, "active fake mode", 0))
    for i, value in enumerate(_flatten(inputs)):
        if isinstance(value, FakeTensor):
            found.append((value.fake_mode, "fake tensor input", i))
    if not found:
        return None
    first, first_desc, first_i = found[0]
    for mode, desc, i in found[1:]:
        if mode is not first:
            raise AssertionError(
                f"fake mode ({first}) from {first_desc} {first_i} doesn't match mode ({mode}) from {desc} {i}"
            )
    return first
