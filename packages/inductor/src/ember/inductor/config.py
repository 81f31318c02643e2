"""Settings of the code generator (``ember._inductor.config`` is this module).

Environment overrides: ``EMBER_CACHE_DIR`` (where compiled kernels are kept), ``CXX`` (the C++
compiler to use).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

# A pointwise value read by more than one consumer is kept in memory once its body has this many
# ops; below that it is recomputed in each consumer (fused into it).
realize_reads_threshold = 8
# Any value whose body grows past this many ops is kept in memory.
realize_ops_threshold = 96
# Most distinct buffers a fused group may read and write for an independent loop to join it: each is a
# stream of memory that the row loop walks, and past a few dozen the CPU's prefetchers lose track (a
# group that fused every update of a 100-parameter optimizer step ran at a third of the bandwidth).
max_group_buffers = 24
# Consecutive fused groups (no extern call between them) compiled into one kernel that runs them in turn.
combo_kernels = True

cpp = SimpleNamespace(
    # The compiler: $CXX, else the first of these found on PATH.
    cxx=os.environ.get("CXX") or None,
    candidates=("g++", "c++", "clang++"),
    # Elements below which a loop runs on one thread.
    parallel_threshold=32768,
    # Elements a piece of a parallel loop has at least (the pool hands out a few pieces a thread).
    grain=16384,
    # A long reduction is summed in chunks of this many elements, combined in order: its result does
    # not depend on the thread count.
    reduction_chunk=16384,
    # Rows below which the row loop is not the parallel one (the node's own loop is).
    min_parallel_rows=16,
    # Buffers of at most this many bytes that only one combo kernel uses live on its stack.
    max_local_bytes=4096,
    # Extra flags, appended (and part of the cache key).
    extra_flags=(),
)


def cache_dir() -> str:
    """``EMBER_CACHE_DIR``, else ``~/.cache/ember``; kernels live under ``inductor/`` in it."""
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "ember"
    )
    return os.path.join(base, "inductor")


# Random ops run as their eager kernels instead of generated Philox code (generated code gives
# eager's numbers for rand/randint/bernoulli/dropout already; randn only to a few ulps).
fallback_random = False

# Inference under no_grad: parameters and buffers become constants of the graph, and what depends
# only on them is computed once at compile time (freezing.py). A frozen parameter changed later is
# not noticed, as in PyTorch: compile again after changing weights.
freezing = False

# Not built yet; setting it raises where it would be used.
max_autotune = False
