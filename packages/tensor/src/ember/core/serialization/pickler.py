"""The pickler of ``ember.save``: Ember objects pickled under PyTorch's names.

PyTorch reads a checkpoint by the globals its pickle names, so a tensor must pickle exactly as
``torch.Tensor`` does: ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` where ``storage`` is a persistent id ``('storage',
torch.FloatStorage, key, location, numel)``. Python's pickler can only write a global it can import
and find again, and Ember must not need torch installed; so this pickler (the pure-Python one)
writes those names itself from ``TorchName`` markers. Each storage is written once, under the key
of the first tensor that uses it; views of it name the same key and so share it again on loading.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from typing import ClassVar

from ember.core import dtypes as D
from ember.core.devices import device
from ember.core.storage import Storage
from ember.core.surface import layout
from ember.core.tensor import Size, Tensor, _new

from .rebuild import STORAGE_NAMES, parameter_class


class TorchName:
    """A global of PyTorch's, written to the pickle by name."""

    __slots__ = ("module", "name")
    _cache: ClassVar[dict] = {}

    def __new__(cls, module: str, name: str) -> TorchName:
        key = (module, name)
        found = cls._cache.get(key)
        if found is None:
            found = cls._cache[key] = object.__new__(cls)
            found.module, found.name = module, name
        return found

    def __call__(self, *args):
        # The pickler only accepts callables in a reduction; a marker is never called.
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint, not a function")


class _StorageRef:
    __slots__ = ("dtype", "storage")

    def __init__(self, storage: Storage, dtype: D.dtype) -> None:
        self.storage = storage
        self.dtype = dtype


def location_tag(dev: device) -> str:
    if dev.type == "cpu":
        return "cpu"
    return f"{dev.type}:{dev.index or 0}"


class CheckpointPickler(pickle._Pickler):
    """Collects the storages it meets in ``storages`` (key -> (storage, byte count))."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int) -> None:
        super().__init__(file, protocol)
        self.storages: dict[str, tuple[Storage, int]] = {}
        self._keys: dict[int, tuple[str, D.dtype]] = {}

    def persistent_id(self, obj):
        if type(obj) is not _StorageRef:
            return None
        storage, dtype = obj.storage, obj.dtype
        known = self._keys.get(id(storage))
        if known is None:
            known = self._keys[id(storage)] = (str(len(self._keys)), dtype)
            self.storages[known[0]] = (storage, storage.nbytes // dtype.itemsize * dtype.itemsize)
        elif known[1] is not dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        if dtype not in STORAGE_NAMES:  # a dtype with no legacy storage class: bytes, as PyTorch writes them
            kind = TorchName("torch.storage", "UntypedStorage")
            return ("storage", kind, known[0], location_tag(storage.device), storage.nbytes)
        numel = storage.nbytes // dtype.itemsize
        return ("storage", TorchName("torch", STORAGE_NAMES[dtype]), known[0], location_tag(storage.device), numel)

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return _reduce_tensor(obj)
        if type(obj) is layout:
            return (TorchName("torch.serialization", "_get_layout"), (f"torch.{obj.name}",))
        if type(obj) is Size:
            return (TorchName("torch", "Size"), (tuple(obj),))
        if type(obj) is device:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (TorchName("torch", "device"), args)
        return NotImplemented

    def _save_torch_name(self, obj: TorchName) -> None:
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_dtype(self, obj: D.dtype) -> None:
        self.save(TorchName("torch", obj.name))

    dispatch[TorchName] = _save_torch_name
    dispatch[D.dtype] = _save_dtype


def _reduce_tensor(t: Tensor):
    parameter = parameter_class()
    if parameter is not None and isinstance(t, parameter):
        plain = _new(Tensor, t._storage, t._shape, t._stride, t._offset, t.dtype, t._array)
        return (TorchName("torch._utils", "_rebuild_parameter"), (plain, t.requires_grad, OrderedDict()))
    if t.is_sparse:
        data = (t._indices(), t._values(), Size(t._shape), t.is_coalesced())
        return (TorchName("torch._utils", "_rebuild_sparse_tensor"), (t.layout, data))
    if type(t) is not Tensor:
        raise pickle.PicklingError(f"ember.save cannot save a tensor of type {type(t).__name__}")
    if t.device.type == "meta":
        return (
            TorchName("torch._utils", "_rebuild_meta_tensor_no_storage"),
            (t.dtype, tuple(t._shape), tuple(t._stride), t.requires_grad),
        )
    if t.dtype not in STORAGE_NAMES:  # PyTorch's form for the dtypes without a legacy storage class
        return (
            TorchName("torch._utils", "_rebuild_tensor_v3"),
            (
                _StorageRef(t._storage, t.dtype),
                t._offset,
                tuple(t._shape),
                tuple(t._stride),
                t.requires_grad,
                OrderedDict(),
                t.dtype,
            ),
        )
    return (
        TorchName("torch._utils", "_rebuild_tensor_v2"),
        (
            _StorageRef(t._storage, t.dtype),
            t._offset,
            tuple(t._shape),
            tuple(t._stride),
            t.requires_grad,
            OrderedDict(),
        ),
    )
