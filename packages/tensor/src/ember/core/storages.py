"""The public storage objects: ``ember.UntypedStorage``, ``ember.TypedStorage`` and the legacy
``ember.FloatStorage``-style classes (PyTorch's ``torch.storage``).

Inside Ember a tensor's bytes are a ``core.storage.Storage``, whose fields kernels read directly.
Programs see it through an ``UntypedStorage``: a handle that answers PyTorch's methods (``nbytes()``,
``size()``, ``data_ptr()``, indexing by byte). One storage has one handle, made on first use and kept
on the storage, so ``a.untyped_storage() is b.untyped_storage()`` tells whether two tensors share
bytes, as in PyTorch. ``Tensor.storage()`` gives the legacy ``TypedStorage``: the same bytes counted in
elements of the tensor's dtype.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.devices import CPU, to_device
from ember.core.storage import Storage
from ember.core.warn_always import should_warn

__all__ = ["TypedStorage", "UntypedStorage", "untyped"]


def untyped(storage: Storage) -> UntypedStorage:
    """The one handle of ``storage``."""
    handle = storage.handle
    if handle is None:
        handle = storage.handle = UntypedStorage._of(storage)
    return handle


def _index(i, n: int) -> int:
    if not isinstance(i, int):
        raise TypeError(f"can't index a storage with {type(i).__name__}")
    if not -n <= i < n:
        raise IndexError(f"index {i} out of range for storage of size {n}")
    return i + n if i < 0 else i


@public("UntypedStorage")
class UntypedStorage:
    """Bytes on a device: ``UntypedStorage(n)`` (uninitialized), ``UntypedStorage([1, 2, 3])``."""

    __slots__ = ("_storage",)

    def __init__(self, *args, device=None) -> None:
        dev = CPU if device is None else to_device(device)
        if dev.type not in ("cpu", "meta"):
            raise RuntimeError(f"UntypedStorage: device {dev} is not available in Ember")
        if len(args) > 1:
            raise TypeError("UntypedStorage(): expected at most one argument, a size or a sequence of bytes")
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            if arg < 0:
                raise RuntimeError(f"UntypedStorage: size must be non-negative, got {arg}")
            storage = Storage(None, arg, dev) if dev.type == "meta" else Storage.cpu(arg, dev)
        else:
            values = np.asarray(list(arg), dtype=np.int64)
            if values.size and (values.min() < 0 or values.max() > 255):
                raise RuntimeError("UntypedStorage: values must be bytes, in [0, 255]")
            storage = (
                Storage.wrap(values.astype(np.uint8), dev) if dev.type == "cpu" else Storage(None, len(values), dev)
            )
        storage.handle = self
        self._storage = storage

    @classmethod
    def _of(cls, storage: Storage) -> UntypedStorage:
        handle = object.__new__(cls)
        handle._storage = storage
        return handle

    # -- what it is ----------------------------------------------------------------------------

    def nbytes(self) -> int:
        return self._storage.nbytes

    def size(self) -> int:
        return self._storage.nbytes

    def __len__(self) -> int:
        return self._storage.nbytes

    def element_size(self) -> int:
        return 1

    @property
    def device(self):
        return self._storage.device

    @property
    def dtype(self):
        return D.uint8

    @property
    def is_cuda(self) -> bool:
        return self._storage.device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        return False

    def is_pinned(self, device=None) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def data_ptr(self) -> int:
        return self._storage.data_ptr()

    def type(self) -> str:
        return "torch.storage.UntypedStorage"

    def untyped(self) -> UntypedStorage:
        return self

    # -- the bytes -----------------------------------------------------------------------------

    def _bytes(self) -> np.ndarray:
        if self._storage.data is None:
            raise NotImplementedError("Cannot access data of a meta storage")
        return self._storage.bytes()[: self._storage.nbytes]

    def tolist(self) -> list[int]:
        return self._bytes().tolist()

    def __getitem__(self, i):
        data = self._bytes()
        if isinstance(i, slice):
            start, stop, step = i.indices(len(data))
            if step != 1:
                raise RuntimeError("slices of a storage must have step 1")
            part = data[start : max(start, stop)]
            return UntypedStorage._of(Storage.wrap(part, self._storage.device))  # shares the bytes
        return int(data[_index(i, len(data))])

    def __setitem__(self, i, value) -> None:
        data = self._bytes()
        if isinstance(i, slice):
            data[i] = value
        else:
            data[_index(i, len(data))] = value
        self._storage.version += 1

    def fill_(self, value: int) -> UntypedStorage:
        self._bytes()[:] = value
        self._storage.version += 1
        return self

    def copy_(self, source: UntypedStorage, non_blocking: bool = False) -> UntypedStorage:
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch: copying {source.nbytes()} bytes into a storage of {self.nbytes()}")
        self._bytes()[:] = source._bytes()
        self._storage.version += 1
        return self

    def clone(self) -> UntypedStorage:
        return UntypedStorage(self.tolist(), device=self.device) if self.device.type == "cpu" else self._meta_like()

    def _meta_like(self) -> UntypedStorage:
        return UntypedStorage(self.nbytes(), device=self.device)

    def cpu(self) -> UntypedStorage:
        if self.device.type == "cpu":
            return self
        raise NotImplementedError("Cannot copy out of meta storage; no data!")

    def resize_(self, size: int) -> UntypedStorage:
        if size != self.nbytes():
            # Tensors keep NumPy views of the bytes, so the bytes cannot move.
            raise RuntimeError("Trying to resize storage that is not resizable")
        return self

    def __repr__(self) -> str:
        head = "\n".join(f" {b}" for b in self.tolist()) if self.device.type == "cpu" else " ..."
        return f"{head}\n[torch.storage.UntypedStorage(device={self.device.type}) of size {self.nbytes()}]"

    def __iter__(self):
        return iter(self.tolist())


@public("TypedStorage")
class TypedStorage:
    """The legacy typed view of a storage: its bytes counted in elements of ``dtype``."""

    __slots__ = ("_untyped_storage", "dtype")
    _fixed_dtype: D.dtype | None = None

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None, _internal: bool = False) -> None:
        if not _internal:
            _warn_typed()
        dtype = self._fixed_dtype or (D.get_default_dtype() if dtype is None else D.to_dtype(dtype))
        if wrap_storage is not None:
            self._untyped_storage, self.dtype = wrap_storage, dtype
            return
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            untyped_storage = UntypedStorage(arg * dtype.itemsize, device=device)
        else:
            array = np.asarray(list(arg), dtype=dtype.np)
            untyped_storage = UntypedStorage._of(Storage.wrap(array, CPU if device is None else to_device(device)))
            untyped_storage._storage.handle = untyped_storage
        self._untyped_storage, self.dtype = untyped_storage, dtype

    def _elements(self) -> np.ndarray:
        raw = self._untyped_storage._bytes()
        usable = len(raw) // self.dtype.itemsize * self.dtype.itemsize
        return raw[:usable].view(self.dtype.np)

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def type(self) -> str:
        return f"torch.{D.SCALAR_TYPE_NAMES[self.dtype]}Storage"

    def tolist(self) -> list:
        return self._elements().tolist()

    def __getitem__(self, i):
        return self._elements()[_index(i, self.size())].item()

    def __setitem__(self, i, value) -> None:
        self._elements()[_index(i, self.size())] = value
        self._untyped_storage._storage.version += 1

    def fill_(self, value) -> TypedStorage:
        self._elements()[:] = value
        self._untyped_storage._storage.version += 1
        return self

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        head = "\n".join(f" {v}" for v in self.tolist()) if self.device.type == "cpu" else " ..."
        return (
            f"{head}\n[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device.type}) of size {self.size()}]"
        )


def _warn_typed() -> None:
    if should_warn("TypedStorage"):
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
            "storage class. To access UntypedStorage directly, use tensor.untyped_storage() instead of "
            "tensor.storage()",
            UserWarning,
            stacklevel=3,
        )


def _legacy_class(dtype: D.dtype) -> type:
    name = f"{D.SCALAR_TYPE_NAMES[dtype]}Storage"
    cls = type(name, (TypedStorage,), {"__slots__": (), "_fixed_dtype": dtype, "__module__": "ember"})
    return public(name)(cls)


LEGACY = {dtype: _legacy_class(dtype) for dtype in D.ALL}


@method("storage")
def _storage(self) -> TypedStorage:
    _warn_typed()
    return TypedStorage(wrap_storage=untyped(self._storage), dtype=self.dtype, _internal=True)


@method("storage_type")
def _storage_type(self) -> type:
    return LEGACY[self.dtype]
