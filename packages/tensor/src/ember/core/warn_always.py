"""``ember.set_warn_always``: warnings that are given once per process, or every time.

Some of PyTorch's warnings are given only the first time (``TORCH_WARN_ONCE``); with
``set_warn_always(True)`` they are given every time, which helps when a test wants to see them.
Ember's warn-once sites ask ``should_warn(key)``.
"""

from __future__ import annotations

_state = {"always": False}
_given: set[str] = set()


def is_warn_always_enabled() -> bool:
    """Whether warn-once warnings are given every time."""
    return _state["always"]


def set_warn_always(b: bool, /) -> None:
    """Give warn-once warnings every time (True) or only the first time (False)."""
    _state["always"] = bool(b)


def should_warn(key: str) -> bool:
    """Whether the warn-once warning ``key`` is to be given now (and mark it given)."""
    first = key not in _given
    _given.add(key)
    return first or _state["always"]
