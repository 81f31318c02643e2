"""Choosing a GEMM implementation by measurement (``mode="max-autotune"``).

For one GEMM node the candidates are eager's kernel (an extern call: NumPy's BLAS) and the blocked C++
template under each blocking of ``gemm_template.configs_for``. Each is built (templates go through
``cpp_builder``, so their libraries land in the same disk cache as the other kernels) and timed on
random inputs of the node's sizes and layouts: one warm-up call, then the median of a few. The whole
measurement of one node stays within ``config.max_autotune_gemm_budget`` seconds: once it is spent,
the candidates not yet measured are skipped (at least one is always measured).

The choice is kept on disk (``<cache>/autotune/<key>.json``), keyed by the problem (op, sizes,
strides, dtype, alpha/beta), the candidates (and the templates' code), the compiler and flags and the
CPU's features, so a warm start takes it without measuring again. Every choice is logged with its timings under the ``kernel_choice``
artifact (``EMBER_LOGS=kernel_choice``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember.core.creation import from_numpy
from ember.inductor import config, cpp_builder
from ember.inductor.gemm_template import GemmConfig, GemmKernel, GemmProblem, Operand, configs_for, gemm_source
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
choice_log = get_artifact_logger(__name__, "kernel_choice")

EXTERN = "extern"  # the name of the eager (BLAS) candidate, prefixed by the op: "extern_mm"
# Choices made in this process, by cache key (the disk copy serves other processes).
_memo: dict[str, Choice] = {}
# Every choice made in this process, in order: (the problem, the choice); for reports.
history: list[tuple[GemmProblem, Choice]] = []
# Counts measurements (a warm start makes none); tests read it.
stats = {"measured": 0, "from_cache": 0}


@dataclass
class Choice:
    """The winner (a candidate's name) and the median seconds of each candidate measured."""

    name: str
    timings: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    cached: bool = False


def backends() -> set[str]:
    """The backends ``config.max_autotune_gemm_backends`` names (``ATEN``, ``CPP``; others are for GPUs)."""
    names = {b.strip().upper() for b in config.max_autotune_gemm_backends.split(",") if b.strip()}
    unknown = names - {"ATEN", "CPP", "TRITON", "CUTLASS", "CK", "CKTILE"}
    if unknown:
        raise ValueError(f"max_autotune_gemm_backends names unknown backends {sorted(unknown)}")
    if not names & {"ATEN", "CPP"}:
        raise ValueError(
            f"max_autotune_gemm_backends={config.max_autotune_gemm_backends!r} names no backend for the CPU "
            "(ATEN or CPP)"
        )
    return names


def candidates(problem: GemmProblem) -> list[str]:
    """The candidates' names, in the order they are measured."""
    names = backends()
    out = [f"{EXTERN}_{problem.op}"] if "ATEN" in names else []
    if "CPP" in names and problem.dtype in _template_dtypes():
        out += [c.name for c in configs_for(problem.dtype)]
    return out


def _template_dtypes() -> tuple:
    from ember.core import dtypes as D

    return (D.float32, D.float64)


def config_by_name(problem: GemmProblem, name: str) -> GemmConfig:
    for c in configs_for(problem.dtype):
        if c.name == name:
            return c
    raise KeyError(name)


def cache_key(problem: GemmProblem, names: list[str]) -> str:
    # the candidates' code too: a changed template is measured again
    sources = [gemm_source(n, problem, config_by_name(problem, n)) for n in names if not n.startswith(EXTERN)]
    parts = [
        "gemm-autotune-v1",
        repr(problem),
        repr(names),
        *sources,
        cpp_builder.compiler_identity(),
        " ".join(cpp_builder.compiler_flags()),
        cpp_builder.cpu_features(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cache_folder() -> str:
    """Where choices are kept: ``autotune/`` in the code generator's cache folder."""
    return os.path.join(config.cache_dir(), "autotune")


def _cache_path(key: str) -> str:
    return os.path.join(cache_folder(), f"{key}.json")


def _read_cached(key: str, names: list[str]) -> Choice | None:
    try:
        with open(_cache_path(key)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("choice") not in names:
        return None
    return Choice(data["choice"], dict(data.get("timings", {})), list(data.get("skipped", [])), cached=True)


def _write_cached(key: str, choice: Choice) -> None:
    path = _cache_path(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump({"choice": choice.name, "timings": choice.timings, "skipped": choice.skipped}, f)
    os.replace(tmp, path)  # atomic: a reader sees the old file or the new one


def _random_buffer(opnd: Operand, dtype: Any, rng: np.random.Generator) -> Any:
    """An ember tensor of ``opnd``'s buffer layout, filled with random values."""
    extent = 1 + sum((n - 1) * s for n, s in zip(opnd.buf_size, opnd.buf_stride, strict=True) if n > 0)
    flat = from_numpy(rng.standard_normal(extent)).to(dtype)
    return flat.as_strided(opnd.buf_size, opnd.buf_stride)


def _measure(fn: Callable[[], Any], deadline: float, runs: int) -> float:
    """The median seconds of ``fn()`` over up to ``runs`` calls after a warm-up (fewer past ``deadline``)."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return statistics.median(times)


def select(problem: GemmProblem, extern: Callable[..., Any], sizes: list[tuple[int, ...]]) -> Choice:
    """The fastest candidate for ``problem``: from this process's memo, the disk cache, or measured.
    ``extern(*inputs)`` runs eager's op on contiguous tensors of ``sizes`` (its inputs' sizes)."""
    names = candidates(problem)
    key = cache_key(problem, names)
    choice = _memo.get(key) or _read_cached(key, names)
    if choice is not None:
        stats["from_cache"] += 1
    else:
        choice = _measure_all(problem, names, extern, sizes)
        _write_cached(key, choice)
        stats["measured"] += 1
    _memo[key] = choice
    history.append((problem, choice))
    _log_choice(problem, choice)
    return choice


def _measure_all(problem: GemmProblem, names: list[str], extern: Callable[..., Any], sizes: list) -> Choice:
    start = time.perf_counter()
    deadline = start + config.max_autotune_gemm_budget
    rng = np.random.default_rng(0)
    buffers = [_random_buffer(o, problem.dtype, rng) for o in problem.operands]
    dense = [from_numpy(rng.standard_normal(s)).to(problem.dtype) for s in sizes]
    timings: dict[str, float] = {}
    skipped: list[str] = []
    for name in names:
        if timings and time.perf_counter() > deadline:
            skipped.append(name)
            continue
        if name.startswith(EXTERN):
            timings[name] = _measure(lambda: extern(*dense), deadline, config.max_autotune_gemm_runs)
        else:
            kernel = GemmKernel(problem, config_by_name(problem, name)).load()
            timings[name] = _measure(lambda k=kernel: k(*buffers), deadline, config.max_autotune_gemm_runs)
    best = min(timings, key=timings.__getitem__)
    log.info("autotuned %s in %.2fs", problem.describe(), time.perf_counter() - start)
    return Choice(best, timings, skipped)


def _log_choice(problem: GemmProblem, choice: Choice) -> None:
    if not choice_log.isEnabledFor(logging.INFO):
        return
    rows = [
        f"  {name}: {secs * 1e3:.4f} ms{'  <- chosen' if name == choice.name else ''}"
        for name, secs in sorted(choice.timings.items(), key=lambda kv: kv[1])
    ]
    rows += [f"  {name}: skipped (budget of {config.max_autotune_gemm_budget}s spent)" for name in choice.skipped]
    source = " (from the autotune cache, not measured again)" if choice.cached else ""
    choice_log.info("%s: chose %s%s\n%s", problem.describe(), choice.name, source, "\n".join(rows))


def clear_memo() -> None:
    """Forget this process's choices (the disk cache stays)."""
    _memo.clear()


__all__ = ["Choice", "cache_key", "candidates", "clear_memo", "history", "select"]
