"""The frame-evaluation hook of ``ember.compile``: a PEP 523 evaluation function, in C.

While a callback is set in a thread, every Python function frame that thread starts goes through the
hook first (frames of module and class bodies, generators, coroutines and async generators always
run as they are; so do frames of code marked with ``skip_code``, at the cost of a few loads):

1. the frame's arguments (positional, keyword-only, ``*args``, ``**kwargs``, defaults filled in) and
   its free variables (the contents of its closure's cells) become a dict by name, ``f_locals``;
2. the code's cache entries are tried in order, newest first: the first whose
   ``check_fn(f_locals)`` is true runs its ``code`` in place of the frame's, with the same arguments,
   globals, builtins and closure (its code must take the same arguments and have the same free
   variables; other locals, cells and stack size may differ). No Python runs for this but check_fn;
3. when none passes, run-only mode (callback ``False``) runs the frame as it is; otherwise
   ``callback(frame, entries)`` is called with a ``Frame`` (``f_code``, ``f_globals``, ``f_builtins``,
   ``f_locals``, ``closure``, ``f_func``) and a copy of the entries. It answers with a ``CacheEntry``
   to run now (the hook puts it first among the code's entries unless it is already one of them:
   the callback need not call ``add_cache_entry``), ``None`` (run the frame as it is) or
   ``SKIP_RECURSIVE`` (run the frame, and every frame it enters, as they are).

check_fn runs with the hook off in its thread, and the callback with the thread's callback set to
None: frames they enter run normally (a compiled function the callback calls may set its own callback).
Frames entered by an entry's code (callees, resume functions) see the hook again. An entry's code is
marked as a replacement when it first runs and from then on always runs as it is when entered (it is
meant to be a code object made for the entry, not another function's code).

An entry's code runs through a function object made from it with the frame's globals, builtins and
closure (kept on the entry while they stay the same), called with the frame's arguments: tracebacks,
``sys.settrace``, ``sys.monitoring`` and the recursion limit see an ordinary call of that code, and
the frame the hook received is discarded without running. While the hook is installed the
interpreter does not inline calls between Python functions (PEP 523), so every Python call also
uses the C stack: on 3.12, whose C recursion limit counts them, RecursionError comes at about three
quarters of the usual depth (747 instead of 997 frames with the default limit of 1000).

The callback belongs to the thread that sets it, as in PyTorch: ``set_eval_frame`` in one thread
never changes what another thread's frames do. The evaluation function is installed for the
interpreter while some thread has a callback (a thread that ends with its callback still set keeps it
installed: the other threads then pay the pass-through). Entries and skip flags belong to code
objects and are shared by all threads (under the GIL). Exceptions raised by check_fn, the callback or an entry's code
propagate from the call of the function, with the entry's code in the traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType
from typing import Any

__all__ = [
    "SKIP_RECURSIVE",
    "CacheEntry",
    "Frame",
    "add_cache_entry",
    "cache_entries",
    "get_eval_frame_callback",
    "hook_installed",
    "is_skipped",
    "reset_code",
    "reset_code_caches",
    "set_eval_frame",
    "skip_code",
]


def _unavailable_reason() -> str | None:
    if sys.implementation.name != "cpython":
        return f"it needs CPython, and this is {sys.implementation.name}"
    if not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return f"it supports CPython 3.11 to 3.13, and this is {sys.version.split()[0]}"
    if getattr(sys, "_is_gil_enabled", lambda: True)() is False:
        return "it does not support the free-threaded build of CPython"
    return None


_reason = _unavailable_reason()
if _reason is not None:
    raise ImportError(
        f"ember.dynamo's frame-evaluation hook (the C extension ember.dynamo._eval_frame) is unavailable: {_reason}"
    )
try:
    from ember.dynamo import _eval_frame as _C
except ImportError as exc:
    raise ImportError(
        "ember.dynamo._eval_frame, the C extension holding the frame-evaluation hook of ember.compile, is not "
        "built: it needs a C compiler and the Python headers when packages/dynamo is installed "
        "(`pip install -e packages/dynamo`; the build prints why it failed)"
    ) from exc

#: ``CacheEntry(check_fn, code, **attributes)``: ``code`` runs in place of the frame's when
#: ``check_fn(f_locals)`` is true; further keyword arguments become attributes (guards, ids, ...).
CacheEntry: type = _C.CacheEntry
#: The frame the callback receives: ``f_code``, ``f_globals``, ``f_builtins``, ``f_locals``, ``closure``, ``f_func``.
Frame: type = _C.Frame
#: The callback's answer for "run this frame and everything it calls as they are".
SKIP_RECURSIVE: Any = _C.SKIP_RECURSIVE

Callback = Callable[[Any, list[Any]], Any]

# The C functions are exported as they are: set_eval_frame runs on every call of a compiled function.
set_eval_frame: Callable[[Callback | bool | None], Callback | bool | None] = _C.set_eval_frame
"""set_eval_frame(callback) -> previous: this thread's callback, None (off), False (run-only) or a callable."""
get_eval_frame_callback: Callable[[], Callback | bool | None] = _C.get_eval_frame_callback
"""get_eval_frame_callback() -> this thread's callback (None, False or the callable)."""
hook_installed: Callable[[], bool] = _C.hook_installed
"""hook_installed() -> whether the interpreter runs frames through the hook (some thread has a callback)."""
skip_code: Callable[[CodeType], None] = _C.skip_code
"""skip_code(code): frames of this code run as they are, at C speed, until reset_code / reset_code_caches."""
is_skipped: Callable[[CodeType], bool] = _C.is_skipped
"""is_skipped(code) -> whether skip_code(code) is in effect."""
cache_entries: Callable[[CodeType], list[Any]] = _C.cache_entries
"""cache_entries(code) -> a copy of the code's entries, newest first."""
add_cache_entry: Callable[[CodeType, Any], None] = _C.add_cache_entry
"""add_cache_entry(code, entry): puts entry first among the code's entries."""
reset_code: Callable[[CodeType], None] = _C.reset_code
"""reset_code(code): drops the code's entries and its skip flag."""
reset_code_caches: Callable[[], None] = _C.reset_code_caches
"""reset_code_caches(): drops the entries and skip flags of every code object (ember._dynamo.reset())."""
