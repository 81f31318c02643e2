"""What users mark functions with: ``disable``, ``allow_in_graph``; and ``is_compiling``.

Capture reads these marks: a function wrapped by ``disable`` carries ``_ember_dynamo_disable``
(and PyTorch's ``_torchdynamo_disable``) and is never traced into (a call to it breaks the graph);
``is_allowed_in_graph(fn)`` says whether a call to ``fn`` goes into the graph as it is, untraced.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

_compiling = 0  # > 0 while a frame is being captured
_allowed_in_graph: dict[int, Callable] = {}
_disallowed_in_graph: dict[int, Callable] = {}


def is_compiling() -> bool:
    """True while Ember captures the code that calls it (capture records it as True in the graph)."""
    return _compiling > 0


is_compiling.__ember_is_compiling__ = True  # capture answers True without reading (and guarding on) the counter
is_dynamo_compiling = is_compiling


class compiling:
    """Context manager that the frame callback holds while it captures a frame."""

    def __enter__(self) -> None:
        global _compiling
        _compiling += 1

    def __exit__(self, *exc: object) -> None:
        global _compiling
        _compiling -= 1


def _hook():
    from ember.dynamo import _frame_hook

    return _frame_hook


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` without capture: as a decorator, with or without arguments.

    With ``recursive=True`` (the default) nothing ``fn`` calls is captured either; with
    ``recursive=False`` only ``fn``'s own frame is skipped, and the functions it calls may still be
    compiled.
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"disable() expects a callable, got {type(fn).__name__}")
    if isinstance(fn, type) and not recursive:
        raise TypeError("disable(recursive=False) takes a function, not a class")
    from ember.dynamo import frame_cache

    if not recursive:
        code = getattr(inspect.unwrap(fn), "__code__", None)
        if code is not None:
            frame_cache.skip_files_or_code(code, disabled=True)
        fn._ember_dynamo_disable = True  # capture reads this mark and breaks the graph
        return fn
    target = fn.forward if _is_module(fn) else fn
    code = getattr(inspect.unwrap(target), "__code__", None)
    if code is not None:
        frame_cache.skip_files_or_code(code, disabled=True)

    @functools.wraps(target)
    def run_disabled(*args: Any, **kwargs: Any):
        previous = _hook().set_eval_frame(None)
        try:
            return target(*args, **kwargs)
        finally:
            _hook().set_eval_frame(previous)

    run_disabled._ember_dynamo_disable = True
    run_disabled._torchdynamo_disable = True
    run_disabled._torchdynamo_disable_msg = reason
    run_disabled._torchdynamo_orig_callable = fn
    if _is_module(fn):
        fn.forward = run_disabled
        return fn
    return run_disabled


def _is_module(obj: Any) -> bool:
    from ember.nn import Module

    return isinstance(obj, Module)


def allow_in_graph(fn: Callable) -> Callable:
    """Record calls to ``fn`` in the graph as they are, without tracing into ``fn``."""
    if isinstance(fn, list | tuple):
        return [allow_in_graph(f) for f in fn]
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, got {type(fn).__name__}")
    _disallowed_in_graph.pop(id(fn), None)
    _allowed_in_graph[id(fn)] = fn
    return fn


def disallow_in_graph(fn: Callable) -> Callable:
    """Never put calls to ``fn`` in the graph: a call to it breaks the graph."""
    if not callable(fn):
        raise TypeError(f"disallow_in_graph expects a callable, got {type(fn).__name__}")
    _allowed_in_graph.pop(id(fn), None)
    _disallowed_in_graph[id(fn)] = fn
    return fn


def is_allowed_in_graph(fn: Any) -> bool:
    return id(fn) in _allowed_in_graph and _allowed_in_graph[id(fn)] is fn


def is_disallowed_in_graph(fn: Any) -> bool:
    return id(fn) in _disallowed_in_graph and _disallowed_in_graph[id(fn)] is fn


def is_disabled(fn: Any) -> bool:
    return bool(getattr(fn, "_ember_dynamo_disable", False))
