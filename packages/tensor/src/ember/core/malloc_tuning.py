"""glibc's malloc tuned for array workloads, once, when ``ember.core`` is imported.

By default glibc serves blocks above 128 KiB (a threshold it raises as such blocks are freed) with
``mmap`` and gives freed heap memory back to the system beyond 128 KiB: every activation and
gradient of a training step is then fresh memory from the kernel, zero-filled page by page on first
touch. That doubled the time of a small CNN's training step. Serving blocks up to 32 MiB from the
heap and keeping up to 128 MiB of freed heap for reuse makes each step reuse the last step's
memory, as PyTorch's allocators do.

Nothing changes where the allocator is not glibc's, where the user has set any ``MALLOC_*``
variable (their choice wins), or where ``EMBER_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def tune() -> bool:
    """Apply the settings above; True when they were applied."""
    if not sys.platform.startswith("linux") or os.environ.get("EMBER_MALLOC_TUNING", "1") == "0":
        return False
    if any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it)
    except (OSError, AttributeError):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


applied = tune()
