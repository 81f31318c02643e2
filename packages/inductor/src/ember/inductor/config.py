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
    # A costly value that a row's reduction loop and a later loop of the same row both compute (softmax's
    # exp) is stored by the first into a buffer of one row, read back by the later ones: at most this
    # many bytes of such buffers per fused group (they live on the stack of each piece of rows).
    max_row_buffer_bytes=65536,
    # Buffers of at most this many bytes that only one combo kernel uses live on its stack.
    max_local_bytes=4096,
    # Extra flags, appended (and part of the cache key).
    extra_flags=(),
)


# What kernels CPU tensors get: "cpp" (C++ with the thread pool) or "triton" (the Triton kernels, run
# through Triton's interpreter: TRITON_INTERPRET=1 must be set; slow, for testing the Triton code
# generator without a GPU). Loops the Triton generator cannot write stay C++, logged under perf_hints.
cpu_backend = os.environ.get("EMBER_INDUCTOR_CPU_BACKEND", "cpp")

triton = SimpleNamespace(
    # The first launch of a Triton kernel for given sizes times each of its block-size candidates
    # (runtime/triton_launch.py) and keeps the fastest; off: the first candidate.
    autotune_pointwise=True,
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

# Compiler processes run at once for one graph's kernels (None: one per CPU this process may use).
compile_threads: int | None = None
# A buffer whose last reader has run gives its storage to a later buffer of the same size and dtype.
memory_planning = True
# Whole compiled graphs (the wrapper's plan) kept on disk beside the kernels: a warm start skips
# lowering, code generation and the compiler.
fx_graph_cache = os.environ.get("EMBER_INDUCTOR_FX_GRAPH_CACHE", "1") != "0"
# Small internal buffers (not returned) a compiled graph allocates once and keeps between calls, at
# most this many bytes per graph: calls of graphs of small ops then allocate only their outputs.
wrapper_arena_bytes = 1 << 20
# GEMMs (mm, addmm, bmm) chosen by measurement among eager's BLAS and the generated C++ template's
# blockings (autotune.py); ``ember.compile(..., mode="max-autotune")`` turns it on for one compile.
max_autotune = False
# The same, for GEMMs only (as PyTorch's flag of that name; on the CPU GEMMs are all it tunes).
max_autotune_gemm = False
# Which implementations are candidates: ATEN (eager's kernel, an extern call) and CPP (the template).
# GPU backends (TRITON, CUTLASS...) may be named and are ignored on the CPU.
max_autotune_gemm_backends = "ATEN,CPP"
# Seconds of building and timing per GEMM node; candidates not reached by then are skipped.
max_autotune_gemm_budget = 20.0
# Timed calls per candidate (after a warm-up); the median is kept.
max_autotune_gemm_runs = 10
