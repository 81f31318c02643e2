"""AOT autograd's programs of the code generator's graphs on disk (``ember.aot.autograd_cache``).

A warm start of a graph dynamo captured loads what AOT autograd made of it: the runtime's plan and
the graph-cache keys of the compiled forward and backward. It skips the fake run, the joint trace
with functionalization and decompositions, the partition, and the graph-cache keys of both graphs.

The key: dynamo's graph (its code); the call signature (each input's sizes, strides, dtype, device
and requires_grad; grad mode); the default dtype, autocast's state and the attention backends
enabled; the settings of the code generator and of AOT autograd; the compiler and the CPU (as the
graph cache has them); and the code that traces, partitions and lowers: every source file of
Ember's packages by path, size and modification time (reading them all would cost a warm start more
than it saves). Graphs the key cannot describe are not kept: those that read module attributes
(``get_attr``, ``call_module``), call functions from outside Ember (a user's function's body is
not in the code) or ops outside ATen, or take symbolic sizes.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ember.aot import config as aot_config
from ember.aot.autograd_cache import SavedProgram
from ember.core import promotion
from ember.core.dispatch import OpOverload, OpOverloadPacket
from ember.core.tensor import Tensor
from ember.dynamo.guards import autocast_state
from ember.inductor import config, cpp_builder, fx_graph_cache
from ember.inductor.lowering_random import RngGraph
from ember.inductor.wrapper import CompiledGraph
from ember.sdpa import backends as sdpa_backends

log = logging.getLogger(__name__)

_SCALARS = (int, float, bool, str, type(None))


@functools.cache
def _sources() -> str:
    """Every ``.py`` file of the ``ember`` namespace's folders: path, size and modification time."""
    h = hashlib.sha256()
    # the namespace package's folders (one per distribution when installed editable); read from the
    # module already loaded, as the top-level package lies right of this one
    stack = sorted(sys.modules["ember"].__path__, reverse=True)
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                found = sorted(entries, key=lambda e: e.name)
        except OSError:  # a folder of the namespace that is gone: no files of it to describe
            continue
        for entry in reversed(found):
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                stack.append(entry.path)
        for entry in found:
            if entry.name.endswith(".py"):
                st = entry.stat()
                h.update(f"{entry.path} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _safe_target(target: Any) -> bool:
    """A call that the graph's code names fully: an ATen op, or a function of Ember or of Python's
    own modules (a user's function's body is not in the code)."""
    if isinstance(target, OpOverload):
        return target.namespace == "aten"
    if isinstance(target, OpOverloadPacket):
        return target._namespace == "aten"
    module = getattr(target, "__module__", None) or ""
    return module.split(".")[0] in ("ember", "operator", "_operator", "math", "builtins")


def _describable(gm: Any, example_inputs: list) -> bool:
    graph = getattr(gm, "graph", None)
    if graph is None or getattr(gm, "code", None) is None:
        return False
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            return False
        if node.op == "call_function" and not _safe_target(node.target):
            return False
    for value in example_inputs:
        if isinstance(value, Tensor):
            if not all(isinstance(s, int) for s in (*value.shape, *value.stride())):
                return False
        elif not isinstance(value, _SCALARS):
            return False
    return True


def _stable(signature: tuple) -> bool:
    """Whether one input's signature (``aot_autograd._signature``) means the same in another process."""
    kind = signature[0]
    return isinstance(kind, type) and (issubclass(kind, Tensor) or kind in _SCALARS)


class GraphProgramCache:
    """The ``cache`` of ``aot_module_simplified`` for one graph (``ember.aot.autograd_cache``)."""

    def __init__(self, base: str, restore: Callable[[str], CompiledGraph | None]) -> None:
        self.base, self._restore = base, restore

    @classmethod
    def for_graph(
        cls, gm: Any, example_inputs: list, restore: Callable[[str], CompiledGraph | None]
    ) -> GraphProgramCache | None:
        """The cache of ``gm``, or None when its key would not describe it (or caching is off).
        ``restore`` loads a compiled graph by its graph-cache key."""
        if not (config.fx_graph_cache and aot_config.enable_autograd_cache and config.cpu_backend == "cpp"):
            return None
        if not _describable(gm, example_inputs):
            return None
        aot_settings = {k: v for k, v in vars(aot_config).items() if not k.startswith("_") and isinstance(v, _SCALARS)}
        parts = (
            gm.code,
            repr(sorted(aot_settings.items())),
            fx_graph_cache.settings(),
            fx_graph_cache.compiler_fingerprint(),
            cpp_builder.cpu_features(),
            sys.version,
            _sources(),
        )
        return cls("\0".join(parts), restore)

    def key(self, signature: tuple) -> str | None:
        in_spec, grad_enabled, inputs = signature
        if not all(_stable(s) for s in inputs):
            return None
        h = hashlib.sha256(self.base.encode())
        # the global state a trace reads: factories' dtype and autocast's casts (as dynamo's guards have
        # them), and the attention backends enabled (which kernel a trace of attention chose)
        enabled, order = sdpa_backends.state()
        attention = (sorted((b.name, on) for b, on in enabled.items()), [b.name for b in order])
        state = (promotion.get_default_dtype(), autocast_state(), attention)
        h.update(repr((in_spec, grad_enabled, inputs, state)).encode())
        return h.hexdigest()

    def load(self, key: str) -> SavedProgram | None:
        try:
            with open(_path(key), "rb") as f:
                saved = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None  # none kept, or unreadable: compiled again and written anew
        return saved if isinstance(saved, SavedProgram) else None

    def save(self, key: str, saved: SavedProgram) -> None:
        try:
            data = pickle.dumps(saved)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            log.debug("AOT program %s not cached: %s", key[:12], e)
            return
        fx_graph_cache.write_atomic(_path(key), data)

    def handle(self, compiled: Any) -> str | tuple | None:
        """A compiled graph's key in the graph cache; with the positions of its seed and offset when
        it draws random numbers."""
        if type(compiled) is RngGraph:
            inner = self.handle(compiled.compiled)
            return None if inner is None else (inner, tuple(compiled.rng_inputs), tuple(compiled.rng_outputs))
        return compiled.cache_key if type(compiled) is CompiledGraph else None

    def restore(self, handle: str | tuple) -> CompiledGraph | RngGraph | None:
        if isinstance(handle, tuple):
            key, rng_in, rng_out = handle
            compiled = self._restore(key)
            return None if compiled is None else RngGraph(compiled, list(rng_in), list(rng_out))
        return self._restore(handle)


def _path(key: str) -> Path:
    return Path(config.cache_dir()) / "aot" / key[:2] / f"{key}.program"
