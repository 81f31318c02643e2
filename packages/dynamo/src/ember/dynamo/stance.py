"""``ember.compiler.set_stance``: how compiled functions behave for a while, without recompiling them.

- ``"default"``: compile and run compiled code as usual;
- ``"force_eager"``: run everything as it is, ignoring compiled code;
- ``"eager_on_recompile"``: run compiled code whose guards pass, and the rest eagerly (no new compile);
- ``"fail_on_recompile"``: raise instead of recompiling (a first compile is still allowed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")

current = "default"


class set_stance:
    """Set the stance: called, for good; in a ``with`` block or as a decorator, for that scope."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend: Any = None):
        global current
        if stance not in STANCES:
            raise RuntimeError(f"invalid torch.compile stance {stance!r}; expected one of {', '.join(STANCES)}")
        if skip_guard_eval_unsafe or force_backend is not None:
            raise NotImplementedError("set_stance: skip_guard_eval_unsafe and force_backend are not supported")
        self.previous = current
        self.stance = stance
        current = stance

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        global current
        current = self.previous

    def __call__(self, fn: Callable) -> Callable:
        global current
        current = self.previous  # as a decorator, the stance holds only while fn runs
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args: Any, **kwargs: Any) -> Any:
            global current
            saved, current = current, stance
            try:
                return fn(*args, **kwargs)
            finally:
                current = saved

        return with_stance


def callback_for(callback: Any) -> Any:
    """The hook callback a compiled function sets under the current stance."""
    if current == "force_eager":
        return None
    if current == "eager_on_recompile" and callable(callback):
        return False
    return callback
