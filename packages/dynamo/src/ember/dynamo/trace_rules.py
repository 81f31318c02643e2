"""Which callables capture records as graph nodes instead of inlining them.

Ember's public op functions (``ember.add``, ``ember.nn.functional.relu``, ``ember.linalg.*``...)
become ``call_function`` nodes; so does anything passed to ``allow_in_graph``. A few ember
functions that read or change global state are answered at capture time or break the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

_allowed: dict[int, Any] = {}  # id -> callable: allow_in_graph registrations (kept alive here)
_ops: set[int] | None = None

# ember functions that must not be graph nodes: they change global state or need data.
_NOT_IN_GRAPH = {
    "manual_seed",
    "seed",
    "set_default_dtype",
    "set_default_device",
    "set_printoptions",
    "use_deterministic_algorithms",
    "set_num_threads",
    "save",
    "load",
    "compile",
}


# Modules whose functions act on the world (logs, warnings): a call to one breaks the graph.
SIDE_EFFECT_MODULES = frozenset({"logging", "warnings"})


def allow_in_graph(fn: Callable) -> Callable:
    """Record calls to ``fn`` as one graph node (run on fake tensors at capture), never inlined."""
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, got {type(fn).__name__}")
    _allowed[id(fn)] = fn
    return fn


def disallow_in_graph(fn: Callable) -> Callable:
    _allowed.pop(id(fn), None)
    return fn


def _op_ids() -> set[int]:
    global _ops
    if _ops is None:
        import sys

        import ember.linalg
        import ember.nn.functional as F
        from ember.core import api

        ids: set[int] = set()
        spaces: list[dict] = [api.functions, vars(F), vars(ember.linalg)]
        top = sys.modules.get("ember")  # the top-level package lies right of dynamo: read, never imported
        if top is not None:
            spaces.append({k: v for k, v in vars(top).items() if not k.startswith("_")})
            for sub in ("fft", "special"):
                mod = vars(top).get(sub)
                if mod is not None:
                    spaces.append(vars(mod))
        for space in spaces:
            for name, fn in space.items():
                if name.startswith("_") or name in _NOT_IN_GRAPH or isinstance(fn, type) or not callable(fn):
                    continue
                if type(fn).__name__ == "module":
                    continue
                mod = getattr(fn, "__module__", "") or ""
                if mod.startswith(("ember.dynamo", "ember._dynamo", "ember.compiler")):
                    continue
                ids.add(id(fn))
        _ops = ids
    return _ops


def api() -> SimpleNamespace:
    """The torch-like functions capture itself calls, from the packages below dynamo."""
    global _api
    if _api is None:
        import ember.autograd as autograd
        from ember.core import api as core_api
        from ember.core.promotion import get_default_dtype
        from ember.core.tensor import Tensor

        fns = core_api.functions
        _api = SimpleNamespace(
            is_grad_enabled=autograd.is_grad_enabled,
            set_grad_enabled=autograd.set_grad_enabled,
            no_grad=autograd.no_grad,
            enable_grad=autograd.enable_grad,
            get_default_dtype=get_default_dtype,
            Tensor=Tensor,
            maximum=fns["maximum"],
            minimum=fns["minimum"],
            round=fns["round"],
            numel=fns.get("numel"),
            is_tensor=fns.get("is_tensor"),
            is_floating_point=fns.get("is_floating_point"),
        )
    return _api


_api: SimpleNamespace | None = None


def is_graph_function(fn: Any) -> bool:
    """Whether a call to ``fn`` becomes a ``call_function`` node."""
    try:
        from ember.dynamo import decorators
    except ImportError:  # the user-facing API is not installed with the capture core
        decorators = None
    if decorators is not None:
        if decorators.is_disallowed_in_graph(fn):
            return False
        if decorators.is_allowed_in_graph(fn):
            return True
    return id(fn) in _allowed or id(fn) in _op_ids()


def is_disabled(fn: Any) -> bool:
    """``ember.compiler.disable``d functions run eagerly: a call to one breaks the graph."""
    return bool(getattr(fn, "_ember_dynamo_disable", False))


def is_allowed_in_graph(fn: Any) -> bool:
    return id(fn) in _allowed
