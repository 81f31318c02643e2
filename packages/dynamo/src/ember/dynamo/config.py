"""Options of graph capture that users set (``ember._dynamo.config.cache_size_limit = 16``)."""

from __future__ import annotations

import os
import sys
import types

# Compiled entries per code object made for the same arguments (the same module, the same kind of
# object: entries whose identity and type guards on the arguments pass); past this the frame runs
# eagerly, with a warning. ``accumulated_cache_size_limit`` bounds all entries of one code object.
cache_size_limit: int = 8
accumulated_cache_size_limit: int = 256
# After a compile error, run the frame eagerly (with a logged warning) instead of raising.
suppress_errors: bool = False
# Record ``tensor.item()`` and friends in the graph as symbolic scalars instead of breaking it.
capture_scalar_outputs: bool = False
# Record ops whose output size depends on data (nonzero, unique, ...) instead of breaking the graph.
capture_dynamic_output_shape_ops: bool = False
# A size that changes between calls becomes dynamic at the recompile (PyTorch's automatic dynamic).
automatic_dynamic_shapes: bool = True
# Sizes are static at the first compile unless marked dynamic or dynamic=True.
assume_static_by_default: bool = True
# Parameters keep static sizes, even under dynamic=True or after their sizes changed.
force_parameter_static_shapes: bool = True
# Turn ember.compile off everywhere: compiled functions run as they are (EMBER_COMPILE_DISABLE=1).
disable: bool = os.environ.get("EMBER_COMPILE_DISABLE", "0") not in ("", "0")


# PyTorch's newer names for two settings.
_ALIASES = {"recompile_limit": "cache_size_limit", "accumulated_recompile_limit": "accumulated_cache_size_limit"}


class _Config(types.ModuleType):
    """This module, answering to the aliases too."""

    def __getattr__(self, name: str):
        if name in _ALIASES:
            return getattr(self, _ALIASES[name])
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(_ALIASES.get(name, name), value)


sys.modules[__name__].__class__ = _Config
