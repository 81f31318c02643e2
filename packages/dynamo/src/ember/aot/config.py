"""The settings of AOT autograd (PyTorch's ``torch._functorch.config`` names where they exist)."""

from __future__ import annotations

# Thread the default generator's Philox seed and offset through the graphs as inputs, so that a
# random op the backward runs again draws the numbers the forward drew, and the partitioner may
# recompute random ops. Off: random ops are always computed in the forward and their outputs saved.
functionalize_rng_ops: bool = True

# The example value a size symbol without a hint counts at when the min-cut partitioner weighs bytes.
unknown_size_hint: int = 4096
