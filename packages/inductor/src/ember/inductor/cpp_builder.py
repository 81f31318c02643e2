"""Building C++ into a shared library, cached on disk by content hash, and loading it with ctypes.

The cache key is the hash of the source, the compiler's identity (path and ``--version``), the flags
and the CPU's features, so a library built for another machine or compiler is never reused. Files
are written under a temporary name and renamed into place: concurrent builds of the same key are
safe, and a crash never leaves half a library behind.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import time

from ember.inductor import config
from ember.inductor.runtime import parallel
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
perf_log = get_artifact_logger(__name__, "perf_hints")

# -fopenmp-simd: the kernels' ``#pragma omp simd`` loops, without the OpenMP runtime (their parallel
# loops run on ``runtime/parallel.cpp``'s pool, see there why). -fno-tree-pre: GCC's partial
# redundancy elimination moves loads of a row's statistics (softmax's max and sum, layer norm's
# mean and variance) into the loop latch of the last pass over the row, and that loop is then not
# vectorized ("latch block not empty"): softmax 1024x1024 took 3.0 ms on one thread instead of 0.9.
BASE_FLAGS = (
    "-O3", "-shared", "-fPIC", "-pthread", "-fopenmp-simd", "-std=c++17", "-fno-math-errno", "-fno-trapping-math",
    "-fno-tree-pre",
)  # fmt: skip
# Counts real compiler runs (a warm start makes none); tests read it.
stats = {"compiles": 0, "cache_hits": 0}


class CppCompileError(RuntimeError):
    pass


@functools.cache
def find_compiler() -> str:
    """The C++ compiler to use; a clear error when none works."""
    names = [config.cpp.cxx] if config.cpp.cxx else list(config.cpp.candidates)
    tried = []
    for name in names:
        path = shutil.which(name)
        if path is None:
            tried.append(f"{name} (not found on PATH)")
            continue
        if _probe(path, ()):
            return path
        tried.append(f"{name} (cannot build a shared library with {' '.join(BASE_FLAGS)})")
    raise RuntimeError(
        "ember.compile's C++ code generator needs a C++17 compiler with OpenMP SIMD (-fopenmp-simd), and none works: tried "
        + ", ".join(tried)
        + ". Install g++ (Debian/Ubuntu: apt-get install g++) or set CXX to one; or use backend='aot_eager'."
    )


def _probe(cxx: str, flags: tuple[str, ...]) -> bool:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.cpp")
        with open(src, "w") as f:
            f.write('extern "C" int probe() { return 1; }\n')
        cmd = [cxx, *BASE_FLAGS, *flags, src, "-o", os.path.join(d, "probe.so")]
        try:
            return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


@functools.cache
def compiler_flags() -> tuple[str, ...]:
    """Base flags, plus ``-march=native`` when the compiler takes it (probed once)."""
    cxx = find_compiler()
    flags = list(BASE_FLAGS)
    if _probe(cxx, ("-march=native",)):
        flags.append("-march=native")
        # GCC prefers 256-bit vectors even where the CPU has AVX-512; 512-bit ones made softmax
        # 1024x1024 a third faster (libmvec has 16-lane expf) on a CPU with AVX-512.
        if " avx512f" in cpu_features() and _probe(cxx, ("-march=native", "-mprefer-vector-width=512")):
            flags.append("-mprefer-vector-width=512")
    # glibc's vector math library, for vectorized exp/log/sin... (the prelude declares them)
    flags.append("-lmvec" if _probe(cxx, ("-lmvec",)) else "-DEMBER_NO_MVEC")
    return (*flags, *config.cpp.extra_flags)


@functools.cache
def compiler_identity() -> str:
    cxx = find_compiler()
    try:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        version = ""
    return f"{cxx}\n{version}"


@functools.cache
def cpu_features() -> str:
    """The CPU's model and feature flags (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        lines = [ln for ln in text.splitlines() if ln.startswith(("flags", "model name", "Features"))]
        return "\n".join(sorted(set(lines)))
    except OSError:
        return f"{platform.machine()} {platform.processor()}"


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_identity(), " ".join(compiler_flags()), cpu_features()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def build(source: str) -> str:
    """The path of the shared library built from ``source`` (from the cache when it is there)."""
    key = cache_key(source)
    folder = os.path.join(config.cache_dir(), key[:2])
    lib = os.path.join(folder, f"{key}.so")
    if os.path.exists(lib):
        stats["cache_hits"] += 1
        return lib
    os.makedirs(folder, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = os.path.join(tmp, "kernel.cpp")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(tmp, "kernel.so")
        cmd = [find_compiler(), *compiler_flags(), src, "-o", out]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CppCompileError(f"C++ compile failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
        shutil.copy(src, os.path.join(folder, f"{key}.cpp.tmp{os.getpid()}"))
        os.replace(os.path.join(folder, f"{key}.cpp.tmp{os.getpid()}"), os.path.join(folder, f"{key}.cpp"))
        os.replace(out, lib)
    stats["compiles"] += 1
    log.info("compiled %s in %.2fs", lib, time.perf_counter() - start)
    return lib


def load(source: str) -> ctypes.CDLL:
    """The kernels of ``source``, loaded, their parallel loops wired to the thread pool."""
    lib = ctypes.CDLL(build(source))
    parallel.attach(lib)
    return lib


def vectorization_report(source: str) -> str:
    """What GCC vectorized in ``source`` (``-fopt-info-vec-optimized``), for tests and debugging."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "kernel.cpp")
        with open(src, "w") as f:
            f.write(source)
        cmd = [find_compiler(), *compiler_flags(), "-fopt-info-vec-optimized", src, "-o", os.path.join(d, "k.so")]
        return subprocess.run(cmd, capture_output=True, text=True).stderr
