"""The settings of AOT autograd (PyTorch's ``torch._functorch.config`` names where they exist)."""

from __future__ import annotations

import os

# Thread the default generator's Philox seed and offset through the graphs as inputs, so that a
# random op the backward runs again draws the numbers the forward drew, and the partitioner may
# recompute random ops. Off: random ops are always computed in the forward and their outputs saved.
functionalize_rng_ops: bool = True

# The example value a size symbol without a hint counts at when the min-cut partitioner weighs bytes.
unknown_size_hint: int = 4096

# Keep the programs compiled for a backend that can name its compiled graphs across processes (the
# code generator) on disk, so that a new process skips the traces and the partition
# (``autograd_cache``). ``EMBER_INDUCTOR_AUTOGRAD_CACHE=0`` turns it off.
enable_autograd_cache: bool = os.environ.get("EMBER_INDUCTOR_AUTOGRAD_CACHE", "1") != "0"
