"""PyTorch's ``torch._dynamo`` paths; the code lives in ``ember.dynamo``.

``ember._dynamo.config`` (and ``.testing``, ``.exc``, ``.eval_frame``, ...) are the very modules of
``ember.dynamo``, so that ``ember._dynamo.config.cache_size_limit = 16`` is what capture reads.
"""

from ember._dynamo import config, eval_frame, exc, testing  # noqa: F401  (PyTorch's submodule paths)
from ember.dynamo.automatic_dynamic import mark_dynamic, mark_static, maybe_mark_dynamic
from ember.dynamo.backends import list_backends, lookup_backend, register_backend
from ember.dynamo.decorators import (
    allow_in_graph,
    disable,
    disallow_in_graph,
    is_compiling,
    is_dynamo_compiling,
)
from ember.dynamo.eval_frame import OptimizedModule, optimize, reset, run
from ember.dynamo.explain import ExplainOutput, explain

__all__ = [
    "ExplainOutput",
    "OptimizedModule",
    "allow_in_graph",
    "config",
    "disable",
    "disallow_in_graph",
    "explain",
    "is_compiling",
    "is_dynamo_compiling",
    "list_backends",
    "lookup_backend",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "optimize",
    "register_backend",
    "reset",
    "run",
]
