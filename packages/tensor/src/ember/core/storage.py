"""Storage: the bytes behind one or more tensors, and their shared version counter.

CPU storage is a C-contiguous NumPy array, read as raw bytes: a kernel's result array is kept as it
came (no copy, no reshaping on the hot path), and each tensor sees the bytes through a NumPy view
of its own dtype, shape and strides. Meta storage has a size and no bytes. A device plugin keeps its own
handle in ``data``. The version counter lives here because every view of the same bytes must see
every in-place change: autograd compares it with the version it saved.
"""

from __future__ import annotations

import numpy as np

from ember.core.devices import device


class Storage:
    # ``handle``: the public ``UntypedStorage`` of these bytes, made on first use (core/storages.py).
    __slots__ = ("__weakref__", "data", "device", "handle", "nbytes", "version")

    def __init__(self, data, nbytes: int, device: device) -> None:
        self.data = data
        self.nbytes = nbytes
        self.device = device
        self.version = 0
        self.handle = None

    @classmethod
    def cpu(cls, nbytes: int, dev: device) -> Storage:
        return cls(np.empty(nbytes, dtype=np.uint8), nbytes, dev)

    @classmethod
    def wrap(cls, array: np.ndarray, dev: device) -> Storage:
        """Storage over an existing C-contiguous array's bytes (no copy)."""
        return cls(array, array.nbytes, dev)

    def bytes(self) -> np.ndarray:
        """The CPU bytes as a flat ``uint8`` array (a view)."""
        return self.data.reshape(-1).view(np.uint8)

    def data_ptr(self) -> int:
        if isinstance(self.data, np.ndarray):
            return self.data.ctypes.data if self.nbytes else 0
        return 0
