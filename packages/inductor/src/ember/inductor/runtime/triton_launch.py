"""Loading and launching the generated Triton kernels (``codegen_triton.py``).

A graph's kernels are one Python module, written to ``<cache>/triton/<hash of the source>.py``
(atomically) and imported from there: Triton reads a kernel's source from its file. Each launch
takes the block sizes of a small list of candidates: the first launch for given sizes times every
candidate that fits (``config.triton.autotune_pointwise``) and keeps the fastest; a kernel that
writes a graph input in place is not launched more than once a call, so it takes the first.

Where the kernels run: Ember's tensors live in host memory (there is no CUDA device plugin yet), so
the kernels run on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``), which is what
``config.cpu_backend = "triton"`` compiles for. The interpreter reaches an argument's memory through
torch's storage methods; ``_HostPointer`` gives it an Ember tensor's address with those methods, the
memory being the host's already.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.devices import CPU
from ember.core.tensor import empty
from ember.inductor import config, indirect
from ember.inductor.codegen_triton import TritonKernelSpec
from ember.inductor.ir import Buffer
from ember.inductor.sizevars import evaluator
from ember.inductor.wrapper_steps import SYMBOLS
from ember.logs import get_artifact_logger

log = logging.getLogger(__name__)
choice_log = get_artifact_logger(__name__, "kernel_choice")


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def require_triton(device: str) -> None:
    """Raise a RuntimeError naming what is missing for Triton kernels on ``device``."""
    if importlib.util.find_spec("triton") is None:
        raise RuntimeError(
            "the Triton code generator needs Triton, which is not installed (pip install triton); "
            'or compile for the CPU with ember._inductor.config.cpu_backend = "cpp"'
        )
    if device == "cpu" and not interpreting():
        raise RuntimeError(
            'ember._inductor.config.cpu_backend = "triton" runs the Triton kernels on the CPU through '
            "Triton's interpreter: set TRITON_INTERPRET=1 in the environment before Python starts"
        )


def load_module(source: str) -> Any:
    """The module of ``source``, written once to the cache folder and imported from the file."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:32]
    name = f"ember_triton_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.join(config.cache_dir(), "triton")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{digest}.py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _HostPointer:
    """An address in host memory, with the storage methods Triton's interpreter calls on arguments.

    The interpreter copies each argument's storage to the host (``untyped_storage().cpu()``), views it
    (``new_empty`` and ``set_``), runs the kernel, and copies back (``copy_``): host memory needs none of
    it, so each is the identity on the same address."""

    __slots__ = ("address", "dtype")

    def __init__(self, address: int, dtype: Any) -> None:
        self.address, self.dtype = address, dtype

    def data_ptr(self) -> int:
        return self.address

    def untyped_storage(self) -> _HostPointer:
        return self

    def cpu(self) -> _HostPointer:
        return self

    def new_empty(self, *args: Any, **kwargs: Any) -> _HostPointer:
        return _HostPointer(0, self.dtype)

    def set_(self, storage: _HostPointer, *args: Any) -> _HostPointer:
        self.address = storage.address
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self) -> tuple:
        return ()

    def stride(self) -> tuple:
        return ()

    def copy_(self, other: Any) -> _HostPointer:
        return self


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def candidates(rows: int, inner: int, interpreter: bool | None = None) -> list[tuple[int, int, int]]:
    """(XBLOCK, RBLOCK, num_warps) to try for a grid of ``rows`` rows whose nodes loop ``inner`` lanes.

    For a GPU, a few shapes of block a timing chooses among. Under the interpreter, whose cost is per
    program and per operation rather than per element, one large block: timing there measures the
    interpreter, and the small blocks of a GPU's list would make thousands of programs."""
    rows, inner = max(1, rows), max(1, inner)
    if interpreting() if interpreter is None else interpreter:
        return [(min(64, _pow2(rows)), min(1024, _pow2(inner)), 4)]
    if inner == 1:
        wanted = [(1024, 1, 4), (256, 1, 4), (64, 1, 2)]
    else:
        wanted = [(1, 2048, 8), (8, 256, 4), (64, 16, 4)]
    out: list[tuple[int, int, int]] = []
    for x, r, warps in wanted:
        x, r = min(x, _pow2(rows)), min(r, _pow2(inner))
        if all((x, r) != c[:2] for c in out):
            out.append((x, r, warps))
    return out


class TritonKernelStep:
    """One kernel launch of the step wrapper: outputs allocated, layouts checked, the grid launched."""

    kernel = True

    def __init__(self, spec: TritonKernelSpec, fn: Any, buffers: dict[str, Buffer]) -> None:
        self.spec = spec
        self.fn = fn
        symbols = list(spec.symbols)
        self.allocs = [(name, buffers[name]) for name in spec.outputs]
        self.layout_of = {n: buffers[n].layout for n in spec.checked}
        self.sizes = evaluator(symbols, [spec.rows, spec.inner])
        self.alloc_layouts = [
            (evaluator(symbols, list(b.layout.size)), evaluator(symbols, list(b.layout.stride))) for _, b in self.allocs
        ]
        self.checked = [
            (n, evaluator(symbols, list(buffers[n].layout.size)), evaluator(symbols, list(buffers[n].layout.stride)))
            for n in spec.checked
        ]
        self.chosen: dict[tuple[int, int], tuple[int, int, int]] = {}

    def __call__(self, env: dict[str, Any]) -> None:
        values = tuple(env.get(SYMBOLS, ()))
        for (name, buf), (size, stride) in zip(self.allocs, self.alloc_layouts, strict=True):
            env[name] = empty(tuple(size(values)), buf.dtype, CPU, tuple(stride(values)))
        for name, size, stride in self.checked:
            t = env[name]
            want_size, want_stride = tuple(size(values)), tuple(stride(values))
            strides_ok = all(a == b for a, b, n in zip(t._stride, want_stride, t._shape, strict=True) if n != 1)
            if tuple(t._shape) != want_size or not strides_ok:
                layout = self.layout_of[name]
                raise RuntimeError(
                    f"compiled kernel {self.spec.name} was specialized for {name} with sizes and strides other "
                    f"than {tuple(t._shape)}/{tuple(t._stride)}: it supports only sizes {layout.size}, strides "
                    f"{layout.stride}; recompile for these inputs"
                )
        rows, inner = (int(v) for v in self.sizes(values))
        if rows == 0:
            return
        tensors = [env[name] for name in self.spec.args]
        args: list[Any] = [_HostPointer(t.data_ptr(), t.dtype) for t in tensors]
        err = np.zeros(3, dtype=np.int64) if self.spec.checks_indexes else None
        if err is not None:
            args.append(_HostPointer(err.ctypes.data, dtypes.int64))
        args.extend(int(v) for v in values)
        block = self._choose(rows, inner, args)
        self._launch(rows, block, args)
        if err is not None and err[0] != 0:
            indirect.DETAIL[0], indirect.DETAIL[1] = int(err[1]), int(err[2])
            raise indirect.index_error(int(err[0]))

    def _launch(self, rows: int, block: tuple[int, int, int], args: list) -> None:
        xblock, rblock, warps = block
        # The interpreter computes masked-off lanes too (a division of the zeros loaded there): NumPy's
        # warnings about them say nothing of the values stored.
        with np.errstate(all="ignore"):
            self.fn[(-(-rows // xblock),)](*args, XBLOCK=xblock, RBLOCK=rblock, num_warps=warps)

    def _choose(self, rows: int, inner: int, args: list) -> tuple[int, int, int]:
        key = (rows, inner)
        block = self.chosen.get(key)
        if block is not None:
            return block
        options = candidates(rows, inner)
        if len(options) == 1 or self.spec.mutates or not config.triton.autotune_pointwise:
            block = options[0]
        else:
            timings = [(_time(lambda b=b: self._launch(rows, b, args)), b) for b in options]
            block = min(timings)[1]
            if choice_log.isEnabledFor(logging.INFO):
                shown = ", ".join(f"XBLOCK={b[0]} RBLOCK={b[1]}: {t * 1e3:.3f} ms" for t, b in timings)
                choice_log.info("%s (rows %d, inner %d): %s; chose %s", self.spec.name, rows, inner, shown, block)
        self.chosen[key] = block
        return block


def _time(run: Callable[[], None], repeat: int = 3) -> float:
    """The best of ``repeat`` timed launches after one untimed (the first compiles). Host-synchronous:
    the interpreter runs a launch before returning."""
    run()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
