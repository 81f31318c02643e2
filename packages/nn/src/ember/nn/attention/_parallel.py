"""Rows of FlexAttention tiles on several threads, with OpenBLAS kept to one thread meanwhile.

A tile's matmuls are small (a query block against a few hundred keys); OpenBLAS splitting each of
them over its own threads costs more in hand-offs than it gains, and on a busy machine its spinning
threads make it several times slower. So while the tiles run, OpenBLAS is set to one thread (through
the library NumPy loaded, when it can be found) and the query-block rows are shared out instead:
``get_num_threads()`` workers (the CPU kernels' pool and the caller) pull the next row until none is left. NumPy releases the GIL in its
arithmetic, so the rows run in parallel.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
from collections.abc import Callable, Iterator

import numpy as np

from ember.core.threads import _pool, get_num_threads

_blas: dict[str, object] = {}


def _openblas():
    if "lib" not in _blas:
        lib = None
        pattern = os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")
        for path in glob.glob(pattern):
            try:
                candidate = ctypes.CDLL(path)
                candidate.scipy_openblas_get_num_threads64_  # noqa: B018 - probes the symbol
                lib = candidate
                break
            except (OSError, AttributeError):
                continue
        _blas["lib"] = lib
    return _blas["lib"]


_lock = threading.Lock()
_depth = [0, 0]  # [nesting depth, OpenBLAS threads before the outermost entry]


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """OpenBLAS on one thread inside the block (nesting and concurrent use are safe); no-op without it."""
    lib = _openblas()
    if lib is None:
        yield
        return
    with _lock:
        if _depth[0] == 0:
            _depth[1] = lib.scipy_openblas_get_num_threads64_()
            lib.scipy_openblas_set_num_threads64_(1)
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0:
                lib.scipy_openblas_set_num_threads64_(_depth[1])


def run_rows(count: int, work: Callable[[int], None]) -> None:
    """Call ``work(i)`` for i in range(count) on up to ``get_num_threads()`` threads; re-raise the first error."""
    workers = min(get_num_threads(), count)
    if workers <= 1:
        for i in range(count):
            work(i)
        return
    next_row = iter(range(count))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def loop() -> None:
        while not errors:
            with lock:
                i = next(next_row, None)
            if i is None:
                return
            try:
                work(i)
            except BaseException as e:
                errors.append(e)

    # The CPU kernels' pool of ``ember.core.threads``: its workers outlive the call, so a small
    # attention pays no thread start-up.
    futures = [_pool().submit(loop) for _ in range(workers - 1)]
    loop()
    for future in futures:
        future.result()
    if errors:
        raise errors[0]
