"""Building C++ into a shared library, cached on disk by content hash, and loading it with ctypes.

The cache key is the hash of the source, the compiler's identity (path and ``--version``), the flags
and the CPU's features, so a library built for another machine or compiler is never reused. Files
are written under a temporary name and renamed into place: concurrent builds of the same key are
safe, and a crash never leaves half a library behind.

What the compiler is and accepts (``--version``, which flags build) is asked by running it, a tenth of
a second that a warm start would pay in every new process; the answers are kept in the cache folder
(``toolchain/``), keyed by the compiler binary (its real path, size and modification time), the base
flags and the CPU. A build that fails with remembered answers forgets them and builds once more with
fresh ones.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
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
# loops run on the core's pool, see ``runtime/parallel.py`` why). -fno-tree-pre: GCC's partial
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
        if _remembered(path, "builds", lambda path=path: _probe(path, ())):
            return path
        tried.append(f"{name} (cannot build a shared library with {' '.join(BASE_FLAGS)})")
    raise RuntimeError(
        "ember.compile's C++ code generator needs a C++17 compiler with OpenMP SIMD (-fopenmp-simd), and none works: tried "
        + ", ".join(tried)
        + ". Install g++ (Debian/Ubuntu: apt-get install g++) or set CXX to one; or use backend='aot_eager'."
    )


def _probe(cxx: str, flags: tuple[str, ...]) -> bool | None:
    """Whether ``cxx`` builds a shared library with these flags; None when it could not tell (the
    compiler did not start or timed out), which is not remembered."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.cpp")
        with open(src, "w") as f:
            f.write('extern "C" int probe() { return 1; }\n')
        cmd = [cxx, *BASE_FLAGS, *flags, src, "-o", os.path.join(d, "probe.so")]
        try:
            return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return None


@functools.cache
def compiler_flags() -> tuple[str, ...]:
    """Base flags, plus ``-march=native`` when the compiler takes it (probed once)."""
    cxx = find_compiler()
    flags = list(BASE_FLAGS)

    def accepts(*extra: str) -> bool:
        return bool(_remembered(cxx, " ".join(extra), lambda: _probe(cxx, extra)))

    if accepts("-march=native"):
        flags.append("-march=native")
        # GCC prefers 256-bit vectors even where the CPU has AVX-512; 512-bit ones made softmax
        # 1024x1024 a third faster (libmvec has 16-lane expf) on a CPU with AVX-512.
        if " avx512f" in cpu_features() and accepts("-march=native", "-mprefer-vector-width=512"):
            flags.append("-mprefer-vector-width=512")
    # glibc's vector math library, for vectorized exp/log/sin... (the prelude declares them)
    flags.append("-lmvec" if accepts("-lmvec") else "-DEMBER_NO_MVEC")
    return (*flags, *config.cpp.extra_flags)


@functools.cache
def compiler_identity() -> str:
    cxx = find_compiler()

    def version() -> str | None:
        try:
            return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None

    return f"{cxx}\n{_remembered(cxx, '--version', version) or ''}"


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


# toolchain file -> its answers, as read or written by this process
_answers: dict[str, dict] = {}
_from_disk: list[bool] = [False]  # whether any answer in use came from an earlier process


def _toolchain_file(cxx: str) -> str | None:
    try:
        real = os.path.realpath(cxx)
        st = os.stat(real)
    except OSError:
        return None
    parts = (real, str(st.st_mtime_ns), str(st.st_size), " ".join(BASE_FLAGS), cpu_features())
    tag = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    return os.path.join(config.cache_dir(), "toolchain", f"{tag}.json")


def _remembered(cxx: str, question: str, ask):
    """``ask()``'s answer about compiler ``cxx``, asked once per toolchain and kept on disk."""
    path = _toolchain_file(cxx)
    if path is None:
        return ask()
    answers = _answers.get(path)
    if answers is None:
        try:
            with open(path) as f:
                answers = json.load(f)
        except (OSError, ValueError):
            answers = {}
        _answers[path] = answers
    if question in answers:
        _from_disk[0] = True
        return answers[question]
    answer = ask()
    if answer is None:
        return None
    answers[question] = answer
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".toolchain-")
    with os.fdopen(fd, "w") as f:
        json.dump(answers, f)
    os.replace(tmp, path)
    return answers[question]


def forget_toolchain() -> None:
    """Drop the remembered answers about the compiler (in memory and on disk); they are asked again."""
    for path in list(_answers):
        with contextlib.suppress(OSError):
            os.remove(path)
    _answers.clear()
    _from_disk[0] = False
    for cached in (find_compiler, compiler_flags, compiler_identity):
        cached.cache_clear()


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
            if _from_disk[0]:
                # Answers remembered from another process may be stale (a compiler or library changed
                # without the compiler binary changing): ask afresh and build once more.
                forget_toolchain()
                return build(source)
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
