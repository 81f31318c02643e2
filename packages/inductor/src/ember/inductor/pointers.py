"""The argument array of a kernel call: each tensor's data pointer, in a ctypes ``void*`` array.

A compiled optimizer step hands a kernel hundreds of tensors per call; asking each for ``data_ptr()``
in Python cost about 2 us apiece. ``ember.core._fastpath.fill_data_ptrs`` writes them in one C call
for exact CPU tensors; anything else (or no extension) asks each tensor.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from ember.core.fastpath import native

_fill = getattr(native, "fill_data_ptrs", None)


def pointer_array(tensors: Sequence[Any]) -> ctypes.Array:
    """``(void*)[n]`` holding ``t.data_ptr()`` for each tensor."""
    ptrs = (ctypes.c_void_p * len(tensors))()
    fill_pointers(ptrs, tensors)
    return ptrs


def fill_pointers(ptrs: ctypes.Array, tensors: Sequence[Any]) -> None:
    """``ptrs[i] = tensors[i].data_ptr()`` for each tensor, in one C call where it can."""
    if _fill is None or not _fill(ptrs, tensors):
        ptrs[:] = [t.data_ptr() for t in tensors]
