"""Intra-op parallelism: the CPU kernels' worker threads, as many as ``get_num_threads()``.

NumPy's arithmetic releases the GIL over large arrays, so a kernel that runs many passes over a big
array (GELU's erf is about twenty) runs each half of it in its own thread at nearly twice the speed
on two cores; PyTorch's CPU kernels split their work the same way. ``parallel_blocks`` cuts a flat
range into blocks (a few L2-sized ones per thread, so each pass stays in cache) and runs them on the
pool, the calling thread taking its share. Below ``GRAIN`` elements the call runs in the caller:
handing work to a thread costs tens of microseconds.

Inside a training step a worker that has slept costs about 60 us a round trip, and OpenBLAS's own
threads spin on the other core for a while after each GEMM, so only kernels with milliseconds of
arithmetic (GELU) use the pool: split over two threads, the CNN step's max pool, ReLU and im2col
copies (0.1-0.4 ms each) each became slower.

The direct convolutions, the per-channel sums and the code generator's loops run their pieces on
another pool, ``ember.core._parallel`` (csrc/parallel/pool.cpp): C++ threads that need no GIL, spin
for some tens of microseconds after a job so that the next kernel of a step finds them awake, and
leave unclaimed pieces to the calling thread. It follows the same count. (The flash attention and
Philox kernels still run their parts on this module's Python threads.)

The default is the number of cores this process may use, as PyTorch's is. The pool is made on first
use and made again in a forked child (a fork copies no threads, so the parent's pool would hang).
``set_num_threads`` also sets the thread count of NumPy's OpenBLAS, which runs the GEMMs, as PyTorch's
sets its BLAS's (found among the process's loaded libraries; other BLAS builds keep their own count).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

GRAIN = 1 << 17  # elements: below this a kernel runs in one thread
_BLOCK = 1 << 15  # elements a block: a dozen float32 temporaries of this size fit in L2


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_state = {"threads": _cores(), "pool": None}
try:
    from ember.core import _parallel as native_pool
except ImportError:  # built without a C++ compiler: the kernels it serves are absent too
    native_pool = None
else:
    native_pool.set_num_threads(_state["threads"])
    atexit.register(native_pool.shutdown)
_lock = threading.Lock()
# Other thread pools that follow the count (the code generator's kernels), told of each change.
_listeners: list[Callable[[int], None]] = []


def on_num_threads_change(listener: Callable[[int], None]) -> None:
    """Call ``listener(n)`` whenever ``set_num_threads(n)`` changes the count."""
    _listeners.append(listener)


def get_num_threads() -> int:
    """The number of threads CPU kernels use."""
    return _state["threads"]


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in CPU kernels (1 turns intra-op parallelism off)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads(): argument 'int' must be int, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("Number of threads must be positive")
    with _lock:
        pool, _state["pool"] = _state["pool"], None
        _state["threads"] = n
    if pool is not None:
        pool.shutdown(wait=False)
    if native_pool is not None:
        native_pool.set_num_threads(n)
    blas = openblas_threads()
    if blas is not None:
        blas[0](n)
    for listener in _listeners:
        listener(n)


@functools.cache
def openblas_threads() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set, get) of the thread count of the OpenBLAS NumPy loaded, or None (another BLAS, or not Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (
            ("scipy_openblas", "64_"),
            ("scipy_openblas", ""),
            ("openblas", "64_"),
            ("openblas", ""),
        ):
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


def _pool() -> ThreadPoolExecutor:
    pool = _state["pool"]
    if pool is None:
        with _lock:
            pool = _state["pool"]
            if pool is None:
                pool = _state["pool"] = ThreadPoolExecutor(_state["threads"] - 1, thread_name_prefix="ember-cpu")
    return pool


def _forget_pool() -> None:
    _state["pool"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_parts(parts: int, work: Callable[[int], None]) -> None:
    """Call ``work(i)`` for i in range(parts), part 0 in the caller and the others on the worker
    threads (for kernels that release the GIL); the first exception raised by a part is raised here."""
    futures = [_pool().submit(work, i) for i in range(1, parts)]
    error = None
    try:
        work(0)
    except BaseException as e:  # the workers' parts must finish before the caller's arrays go
        error = e
    for future in futures:
        try:
            future.result()
        except BaseException as e:
            error = error or e
    if error is not None:
        raise error


def parallel_blocks(size: int, work: Callable[[int, int], None]) -> None:
    """Call ``work(start, stop)`` over consecutive blocks covering ``range(size)``, on the worker
    threads and the caller together; the first exception raised by a block is raised here."""
    threads = _state["threads"]
    if threads == 1 or size < GRAIN:
        for start in range(0, size, _BLOCK):
            work(start, min(start + _BLOCK, size))
        return
    # One contiguous share per thread, each walked in blocks.
    share = -(-size // threads)

    def run_share(first: int) -> None:
        last = min(first + share, size)
        for start in range(first, last, _BLOCK):
            work(start, min(start + _BLOCK, last))

    run_parts(-(-size // share), lambda part: run_share(part * share))
