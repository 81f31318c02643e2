"""Building a graph's kernels in parallel: the kernels split into a few shared libraries, each
built by its own compiler process at the same time.

The compiler runs as a subprocess, so plain threads suffice to keep several of them busy (a thread
waiting on a subprocess holds no lock). The split is deterministic (kernels dealt out by the
length of their source), so a warm start finds the same libraries in the disk cache.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

from ember.inductor import config, cpp_builder
from ember.inductor.codegen_cpp import KernelSpec, module_source
from ember.inductor.runtime import parallel

log = logging.getLogger(__name__)


def workers() -> int:
    """``config.compile_threads``, else the number of CPUs this process may use."""
    n = config.compile_threads
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, int(n))


def split(kernels: list[KernelSpec], parts: int) -> list[list[KernelSpec]]:
    """``kernels`` dealt into at most ``parts`` groups of about equal source length, in order."""
    parts = max(1, min(parts, len(kernels)))
    groups: list[list[KernelSpec]] = [[] for _ in range(parts)]
    sizes = [0] * parts
    for spec in sorted(kernels, key=lambda s: -len(s.source)):
        i = sizes.index(min(sizes))
        groups[i].append(spec)
        sizes[i] += len(spec.source)
    order = {spec.name: k for k, spec in enumerate(kernels)}
    return [sorted(g, key=lambda s: order[s.name]) for g in groups if g]


def build_all(kernels: list[KernelSpec]) -> dict[str, str]:
    """Each kernel's shared library path (built, or found in the disk cache)."""
    if not kernels:
        return {}
    start = time.perf_counter()
    compiles = cpp_builder.stats["compiles"]
    groups = split(kernels, workers())
    sources = [module_source(g) for g in groups]
    if len(sources) == 1:
        paths = [cpp_builder.build(sources[0])]
    else:
        with ThreadPoolExecutor(max_workers=len(sources), thread_name_prefix="ember-cxx") as pool:
            paths = list(pool.map(cpp_builder.build, sources))
    built = cpp_builder.stats["compiles"] - compiles
    log.info(
        "%d kernels in %d libraries: %d compiled, %d from the disk cache, in %.2fs",
        len(kernels), len(sources), built, len(sources) - built, time.perf_counter() - start,
    )  # fmt: skip
    return {spec.name: path for group, path in zip(groups, paths, strict=True) for spec in group}


def load_all(paths: set[str]) -> dict[str, ctypes.CDLL]:
    """The libraries at ``paths``, loaded, their parallel loops wired to the thread pool."""
    libraries = {p: ctypes.CDLL(p) for p in sorted(paths)}
    for lib in libraries.values():
        parallel.attach(lib)
    return libraries
