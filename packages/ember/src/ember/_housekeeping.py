"""PyTorch's top-level housekeeping: warn-always, the deprecated per-device autocast functions,
thread and denormal settings, build flags, and small helpers (``get_file_path``, ``classproperty``,
``thread_safe_generator``).

``set_flush_denormal`` really sets the CPU's flush-to-zero and denormals-are-zero bits (MXCSR) of
the calling thread on x86-64 Linux, through the C library's ``fegetenv``/``fesetenv`` (glibc's
``fenv_t`` ends with the MXCSR there); elsewhere it returns False, as PyTorch does on CPUs without
them. Ember's kernels run in the calling thread below ``ember.core.threads.GRAIN`` elements; the
intra-op pool's threads keep their own setting, as OpenMP's threads do in PyTorch.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import warnings
from typing import Any

from ember.core.warn_always import is_warn_always_enabled, set_warn_always

__all__ = [
    "classproperty",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "get_file_path",
    "has_lapack",
    "has_openmp",
    "has_spectral",
    "init_num_threads",
    "is_autocast_cpu_enabled",
    "is_warn_always_enabled",
    "prepare_multiprocessing_environment",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_gpu_dtype",
    "set_flush_denormal",
    "set_warn_always",
    "thread_safe_generator",
]

# Build flags, as in PyTorch: LAPACK through NumPy's linear algebra; no OpenMP in the eager kernels
# (NumPy and a thread pool; the compiled C++ kernels use only `omp simd`); FFTs through NumPy.
has_lapack = True
has_openmp = False
has_spectral = True


# -- the deprecated per-device autocast functions -----------------------------------------------


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"ember.{old} is deprecated. Please use ember.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    from ember.amp.autocast_mode import is_autocast_enabled

    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    from ember.amp.autocast_mode import set_autocast_enabled

    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    from ember.amp.autocast_mode import get_autocast_dtype

    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    from ember.amp.autocast_mode import set_autocast_dtype

    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    from ember.amp.autocast_mode import get_autocast_dtype

    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    from ember.amp.autocast_mode import set_autocast_dtype

    set_autocast_dtype("cuda", dtype)


# -- threads and denormals ----------------------------------------------------------------------


def init_num_threads() -> None:
    """Set up intra-op parallelism for the calling thread. Ember's pool is shared by all threads and
    made on first use, so there is nothing to do per thread."""


_FTZ_DAZ = 0x8040  # MXCSR: flush-to-zero (bit 15) and denormals-are-zero (bit 6)
_FENV_SIZE, _MXCSR_OFFSET = 32, 28  # glibc's fenv_t on x86-64


def _libm():
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        libm = ctypes.CDLL("libm.so.6")
        return libm if hasattr(libm, "fegetenv") and hasattr(libm, "fesetenv") else None
    except OSError:
        return None


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero (``True``) or keep them (``False``) in the calling thread's
    arithmetic; returns whether the CPU's setting could be changed."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' must be bool, not {type(mode).__name__}")
    libm = _libm()
    if libm is None:
        return False
    env = ctypes.create_string_buffer(_FENV_SIZE)
    if libm.fegetenv(env) != 0:
        return False
    mxcsr = int.from_bytes(env.raw[_MXCSR_OFFSET : _MXCSR_OFFSET + 4], "little")
    mxcsr = mxcsr | _FTZ_DAZ if mode else mxcsr & ~_FTZ_DAZ
    ctypes.memmove(ctypes.addressof(env) + _MXCSR_OFFSET, mxcsr.to_bytes(4, "little"), 4)
    return libm.fesetenv(env) == 0


# -- small helpers ------------------------------------------------------------------------------


def get_file_path(*path_components: str) -> str:
    """A path under the directory that holds the ``ember`` package."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), *path_components)


def prepare_multiprocessing_environment(path: str) -> None:
    """A hook PyTorch calls before starting worker processes; nothing to prepare in Ember."""


class _ClassProperty(property):
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self.fget(owner if owner is not None else type(instance))


def classproperty(func):
    """A read-only property of the class: ``@classproperty def name(cls): ...`` reads as ``C.name``."""
    if not isinstance(func, classmethod | staticmethod):
        func = classmethod(func)
    return _ClassProperty(func.__func__)


def thread_safe_generator():
    """The generator of the current data-loader thread worker, else ``None`` (the global one).
    Ember's loader workers are processes, which have their own global generator: ``None``."""
    from ember.utils.data import get_worker_info

    info = get_worker_info()
    if info is not None and info.worker_method == "thread":
        return info.rng
    return None
