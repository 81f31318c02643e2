"""The thread pool of the generated kernels: the core's ``ember.core._parallel``, which the core's
direct convolutions share, so that workers woken by one kernel are still spinning when the next of
a step starts.

Why not OpenMP: the kernels used to be ``#pragma omp parallel for`` loops on libgomp, and the GEMMs
between them run on NumPy's OpenBLAS, another pool on the same cores. libgomp's threads spin for
a long while after each parallel region (``GOMP_SPINCOUNT``), so a GEMM after a kernel found its
cores taken: a compiled MLP block ran several times slower than eager on two cores. Only
``OMP_WAIT_POLICY=PASSIVE`` cured it, and libgomp reads that when it loads, before Ember could set
it. The pool's workers spin for some tens of microseconds (enough to catch the next kernel of a
sequence) and then sleep on a condition variable, and its caller runs the pieces no worker has
claimed, so a job never waits for a sleeper to wake. Kernels keep ``#pragma omp simd`` for
vectorization, compiled with ``-fopenmp-simd`` (no OpenMP runtime).

Each kernel library gets the pool's entry point, ``ember_parallel_for(begin, end, grain, fn,
ctx)``, as a function pointer when it is loaded (``ember_set_parallel_for``), so kernels need no
link-time dependency on the pool. The thread count follows ``ember.get_num_threads()``; a forked
child makes a fresh pool; the workers are joined at exit.
"""

from __future__ import annotations

import ctypes

from ember.core import threads as _threads
from ember.inductor import indirect

# Declarations the kernels are compiled with: a pointer to the pool's entry point (filled in at
# load), and ``ember_parallel(begin, end, grain, lambda)``, which runs a C++ callable over pieces.
KERNEL_PRELUDE = r"""
#include <vector>
typedef void (*ember_task_fn)(void* ctx, int64_t begin, int64_t end);
typedef void (*ember_parallel_for_fn)(int64_t begin, int64_t end, int64_t grain, ember_task_fn fn, void* ctx);
static ember_parallel_for_fn ember_parallel_for_ptr = nullptr;
extern "C" void ember_set_parallel_for(void* fn) { ember_parallel_for_ptr = (ember_parallel_for_fn)fn; }
// Steps of `w` elements each that make `g` elements (at least 1): a piece's least length.
static inline int64_t ember_grain(int64_t g, int64_t w) { return w <= 0 || w >= g ? 1 : (g + w - 1) / w; }
template <typename F> static inline void ember_parallel(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (ember_parallel_for_ptr == nullptr || end - begin <= grain) { f(begin, end); return; }
  ember_parallel_for_ptr(begin, end, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<const F*>(ctx))(b, e); },
                         const_cast<void*>(static_cast<const void*>(&f)));
}
"""


def library():
    """The pool's module (``ember.core._parallel``); a clear error where ember-tensor was built without it."""
    if _threads.native_pool is None:
        raise RuntimeError(
            "ember.compile's C++ code generator needs Ember's thread pool, ember.core._parallel, which was "
            "not built: reinstall ember-tensor with a C++17 compiler available"
        )
    return _threads.native_pool


def entry_point() -> int:
    """The address of ``ember_parallel_for``, for the kernels."""
    return library().entry_point()


def attach(kernels: ctypes.CDLL) -> None:
    """Hand a freshly loaded kernel library the pool's entry point."""
    kernels.ember_set_parallel_for.argtypes = [ctypes.c_void_p]
    kernels.ember_set_parallel_for.restype = None
    kernels.ember_set_parallel_for(entry_point())
    indirect.attach(kernels)  # the slot index errors write their value into


def worker_count() -> int:
    """Worker threads alive now (0 before the first parallel loop, ``threads - 1`` after)."""
    return library().worker_count()


def set_spin_ns(ns: int) -> None:
    """How long an idle worker spins before it sleeps (50 us by default)."""
    library().set_spin_ns(ns)


__all__ = ["KERNEL_PRELUDE", "attach", "entry_point", "library", "set_spin_ns", "worker_count"]
