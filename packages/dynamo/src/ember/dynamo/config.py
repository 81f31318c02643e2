"""Options of graph capture that users set (``ember._dynamo.config.cache_size_limit = 16``)."""

from __future__ import annotations

# Compiled entries kept per code object; past this the frame runs eagerly, with a warning.
cache_size_limit: int = 8
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
# Turn ember.compile off everywhere: compiled functions run as they are (EMBER_COMPILE_DISABLE=1).
disable: bool = __import__("os").environ.get("EMBER_COMPILE_DISABLE", "0") not in ("", "0")
