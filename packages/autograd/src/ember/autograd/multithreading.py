"""``set_multithreading_enabled``: PyTorch's switch for running backward on per-device worker
threads. Ember's engine runs backward on the calling thread in either case (as PyTorch does for the
CPU), so the flag is kept, thread-local, for code that reads it back."""

from __future__ import annotations

import threading


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = True


_state = _State()


def is_multithreading_enabled() -> bool:
    return _state.enabled


class set_multithreading_enabled:
    """Context manager (or plain call) setting whether backward may use worker threads."""

    def __init__(self, mode: bool) -> None:
        self.prev = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self.prev

    def clone(self) -> set_multithreading_enabled:
        return self.__class__(self.mode)
