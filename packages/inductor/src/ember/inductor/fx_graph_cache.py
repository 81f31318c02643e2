"""The whole compiled graph on disk: a warm start skips lowering, code generation and the compiler.

The key hashes everything the compiled result depends on: the graph's code (FX prints every node,
target and constant argument), each input's sizes, strides, storage offset, dtype and device (or
its value), the code generator's settings, the compiler (its file and the flags asked for), the
CPU's features,
the Python and package versions, and the code generator's own source. The entry is the wrapper's
``Plan`` (plain data; kernels named by their shared library in the kernel cache), pickled and
written under a temporary name, then renamed into place. An entry whose libraries are gone is a
miss. Graphs holding tensor constants (``get_attr``) are not cached, nor graphs holding FlexAttention's ops
(their ``spec`` argument names mods kept by this process only).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ember.core.tensor import Tensor
from ember.inductor import config, cpp_builder
from ember.inductor.wrapper import ExternStep, KernelStep, Plan

log = logging.getLogger(__name__)

# hits, misses and stores of this process; tests read them
stats = {"hits": 0, "misses": 0, "stores": 0}


@functools.cache
def package_identity() -> str:
    parts = [sys.version]
    for dist in ("ember-tensor", "ember-autograd", "ember-nn", "ember-fx", "ember-dynamo", "ember-inductor"):
        try:
            parts.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} missing")
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    parts.append(h.hexdigest())
    return "\n".join(parts)


@functools.cache
def compiler_fingerprint() -> str:
    """The compilers the kernel builder may pick, by resolved path, size and modification time, and
    the flags asked for: no compiler runs (probing flags takes a compiler run each, which a warm
    start does without). The libraries a cached plan names were built under the full key of
    ``cpp_builder`` (identity, probed flags, CPU); the same compiler on the same CPU probes the same."""
    parts = [" ".join(cpp_builder.BASE_FLAGS), " ".join(config.cpp.extra_flags)]
    for name in [config.cpp.cxx] if config.cpp.cxx else list(config.cpp.candidates):
        path = shutil.which(name)
        if path is None:
            parts.append(f"{name}: none")
            continue
        real = os.path.realpath(path)
        st = os.stat(real)
        parts.append(f"{name}: {real} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(parts)


def settings() -> str:
    values = {k: v for k, v in vars(config).items() if not k.startswith("_") and isinstance(v, int | float | str)}
    return repr(sorted(values.items())) + repr(sorted(vars(config.cpp).items()))


def _input_key(value: Any) -> str:
    if isinstance(value, Tensor):
        return (f"T{tuple(value.shape)}{tuple(value.stride())}+{value.storage_offset()}"
                f"{value.dtype}{value.device}{value.requires_grad}")  # fmt: skip
    return f"{type(value).__name__}:{value!r}"


def _process_local(target: Any) -> bool:
    """An op whose arguments name objects of this process (FlexAttention's spec of its mods)."""
    return getattr(target, "namespace", None) == "higher_order"


def graph_key(gm: Any, example_inputs: list) -> str | None:
    """The cache key of compiling ``gm`` for ``example_inputs`` (``None``: not cacheable)."""
    graph = getattr(gm, "graph", None)
    code = getattr(gm, "code", None)
    if graph is None or code is None or any(n.op == "get_attr" or _process_local(n.target) for n in graph.nodes):
        return None
    h = hashlib.sha256()
    for part in (
        code,
        "|".join(_input_key(v) for v in example_inputs),
        settings(),
        compiler_fingerprint(),
        cpp_builder.cpu_features(),
        package_identity(),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(key: str) -> Path:
    return Path(config.cache_dir()) / "graphs" / key[:2] / f"{key}.plan"


def load(key: str) -> Plan | None:
    path = _path(key)
    try:
        with open(path, "rb") as f:
            plan = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        stats["misses"] += 1
        return None
    libraries = {s.library for s in plan.steps if isinstance(s, KernelStep)}
    if not all(os.path.exists(p) for p in libraries):
        stats["misses"] += 1
        return None
    stats["hits"] += 1
    log.info("compiled graph %s from the disk cache", key[:12])
    return plan


def store(key: str, plan: Plan) -> bool:
    """Keep ``plan`` under ``key``; False when it cannot be kept."""
    if any(isinstance(s, ExternStep) and not isinstance(s.op, str) for s in plan.steps):
        return False  # an extern call of something other than an op: not named across processes
    try:
        data = pickle.dumps(plan)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        log.debug("compiled graph %s not cached: %s", key[:12], e)
        return False
    write_atomic(_path(key), data)
    stats["stores"] += 1
    return True


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` written under a temporary name, then renamed to ``path``: readers see all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:12]}-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
