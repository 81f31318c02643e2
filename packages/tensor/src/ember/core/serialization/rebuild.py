"""PyTorch's pickled names, and Ember's objects behind them when a checkpoint is loaded.

A checkpoint's pickle names PyTorch's globals (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``, ``torch.Size``, ...). ``GLOBALS`` maps each name Ember
can honour to the Ember object that plays its part; both unpicklers resolve names through it, and
the weights-only one resolves nothing else. The rebuild functions check every size, stride and
offset against the storage before they make a tensor: a pickle cannot point a tensor outside its
bytes.
"""

from __future__ import annotations

import codecs
from collections import Counter, OrderedDict
from pickle import UnpicklingError

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import META, device
from ember.core.sparse.coo import rebuild_sparse_tensor, sparse_coo
from ember.core.storage import Storage
from ember.core.surface import strided
from ember.core.tensor import Size, Tensor, _array_view, _new

# PyTorch's legacy typed-storage class names, by element type.
STORAGE_NAMES = {
    D.float32: "FloatStorage",
    D.float64: "DoubleStorage",
    D.float16: "HalfStorage",
    D.bfloat16: "BFloat16Storage",
    D.int64: "LongStorage",
    D.int32: "IntStorage",
    D.int16: "ShortStorage",
    D.int8: "CharStorage",
    D.uint8: "ByteStorage",
    D.bool_: "BoolStorage",
    D.complex64: "ComplexFloatStorage",
    D.complex128: "ComplexDoubleStorage",
}


class StorageType:
    """What ``torch.FloatStorage`` and its kin stand for in a pickle: an element type."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: D.dtype) -> None:
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType(torch.{self.name}, dtype={self.dtype})"


class LoadedStorage:
    """A storage restored from a record, with the element type the pickle gave it."""

    __slots__ = ("dtype", "numel", "storage")

    def __init__(self, storage: Storage, dtype: D.dtype, numel: int) -> None:
        self.storage = storage
        self.dtype = dtype
        self.numel = numel


# -- checks --------------------------------------------------------------------------------------


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _int_tuple(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple | list) or not all(_is_int(v) for v in value):
        raise RuntimeError(f"rebuilding a tensor: {what} must be a sequence of ints, got {value!r}")
    out = tuple(int(v) for v in value)
    if any(v < 0 for v in out):
        raise RuntimeError(f"rebuilding a tensor: {what} must not be negative, got {list(out)}")
    return out


def _layout(size, stride, offset) -> tuple[tuple, tuple, int]:
    shape = _int_tuple(size, "size")
    strides = _int_tuple(stride, "stride")
    if len(shape) != len(strides):
        raise RuntimeError(f"rebuilding a tensor: size {list(shape)} and stride {list(strides)} have different lengths")
    if not _is_int(offset) or offset < 0:
        raise RuntimeError(f"rebuilding a tensor: storage offset must be a non-negative int, got {offset!r}")
    return shape, strides, int(offset)


def _check_bounds(shape: tuple, stride: tuple, offset: int, itemsize: int, numel: int) -> None:
    if 0 in shape:
        needed = 0
    else:
        needed = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    if needed > numel:
        raise RuntimeError(
            f"setStorage: sizes {list(shape)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {needed * itemsize} are out of bounds for storage of size "
            f"{numel * itemsize}"
        )


def _finish(t: Tensor, requires_grad, hooks) -> Tensor:
    if not isinstance(requires_grad, bool):
        raise RuntimeError(f"rebuilding a tensor: requires_grad must be a bool, got {requires_grad!r}")
    if hooks:
        raise RuntimeError("rebuilding a tensor: backward hooks in a checkpoint are not supported")
    if requires_grad:
        t.requires_grad_(True)
    return t


# -- the rebuild functions (PyTorch's names, Ember's tensors) ----------------------------------------


def rebuild_tensor(storage, storage_offset, size, stride, dtype: D.dtype | None = None) -> Tensor:
    if not isinstance(storage, LoadedStorage):
        raise UnpicklingError(f"rebuilding a tensor: expected a storage from the archive, got {type(storage).__name__}")
    dtype = storage.dtype if dtype is None else dtype
    if not isinstance(dtype, D.dtype):
        raise UnpicklingError(f"rebuilding a tensor: expected a dtype, got {dtype!r}")
    shape, strides, offset = _layout(size, stride, storage_offset)
    numel = storage.storage.nbytes // dtype.itemsize
    _check_bounds(shape, strides, offset, dtype.itemsize, numel)
    st = storage.storage
    return _new(Tensor, st, shape, strides, offset, dtype, _array_view(st, shape, strides, offset, dtype))


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if metadata:
        raise RuntimeError(f"rebuilding a tensor: unsupported tensor metadata {metadata!r}")
    t = rebuild_tensor(storage, storage_offset, size, stride)
    return _finish(t, requires_grad, backward_hooks)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if metadata:
        raise RuntimeError(f"rebuilding a tensor: unsupported tensor metadata {metadata!r}")
    t = rebuild_tensor(storage, storage_offset, size, stride, dtype)
    return _finish(t, requires_grad, backward_hooks)


def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad=False):
    if not isinstance(dtype, D.dtype):
        raise UnpicklingError(f"rebuilding a meta tensor: expected a dtype, got {dtype!r}")
    shape, strides, _ = _layout(size, stride, 0)
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if 0 not in shape else 0
    t = _new(Tensor, Storage(None, extent * dtype.itemsize, META), shape, strides, 0, dtype, None)
    return _finish(t, requires_grad, None)


# Set by the package that defines nn.Parameter (a later layer), through ``register_parameter_class``.
_parameter: list = []


def register_parameter_class(cls) -> None:
    """Let checkpoints save and load ``cls`` as ``torch.nn.Parameter``; called by the layer that defines it."""
    _parameter[:] = [cls]


def parameter_class():
    return _parameter[0] if _parameter else None


def rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    cls = parameter_class()
    if cls is None:
        raise RuntimeError("the checkpoint holds a torch.nn.Parameter: import ember.nn before loading it")
    if not isinstance(data, Tensor):
        raise UnpicklingError(f"rebuilding a Parameter: expected a tensor, got {type(data).__name__}")
    if not isinstance(requires_grad, bool):
        raise RuntimeError(f"rebuilding a Parameter: requires_grad must be a bool, got {requires_grad!r}")
    if backward_hooks or state:
        raise RuntimeError("rebuilding a Parameter: hooks and extra state are not supported")
    return cls(data, requires_grad)


def rebuild_from_type_v2(func, new_type, args, state):
    """A tensor pickled with its Python attributes (``t.name = ...``): rebuild, then set them."""
    if new_type is not Tensor and new_type is not parameter_class():
        raise UnpicklingError(f"rebuilding a tensor of type {new_type!r} is not supported")
    if func not in _TENSOR_REBUILDERS or not isinstance(args, tuple):
        raise UnpicklingError(f"rebuilding a tensor through {func!r} is not supported")
    t = func(*args)
    if state:
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise UnpicklingError("a tensor's pickled attributes must be a dict with str keys")
        for key, value in state.items():
            if hasattr(type(t), key) or key.startswith("__"):
                raise UnpicklingError(f"a pickled tensor attribute may not replace {type(t).__name__}.{key}")
            t.__dict__[key] = value
    return t


def rebuild_device(type_or_string, index=None) -> device:
    if not isinstance(type_or_string, str) or not (index is None or _is_int(index)):
        raise UnpicklingError(f"torch.device expects a string and an index, got {type_or_string!r}, {index!r}")
    return device(type_or_string, index)


def rebuild_size(values=()) -> Size:
    if not isinstance(values, tuple | list) or not all(_is_int(v) for v in values):
        raise UnpicklingError(f"torch.Size expects ints, got {values!r}")
    return Size(int(v) for v in values)


def encode_latin1(text, encoding="latin1") -> bytes:
    """``_codecs.encode``, which protocol 2 uses for ``bytes``; only that one use is honoured."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnpicklingError(f"_codecs.encode is only accepted as encode(str, 'latin1'), got encoding {encoding!r}")
    return codecs.encode(text, "latin1")


def make_bytearray(data=b"") -> bytearray:
    # bytearray(n) would allocate n bytes; a pickle only ever passes the contents.
    if not isinstance(data, bytes | bytearray | list | tuple):
        raise UnpicklingError(f"bytearray expects its contents, got {type(data).__name__}")
    return bytearray(data)


def make_complex(real=0.0, imag=0.0) -> complex:
    if not all(isinstance(v, int | float) for v in (real, imag)):
        raise UnpicklingError("complex expects two numbers")
    return complex(real, imag)


def make_set(items=()) -> set:
    if not isinstance(items, list | tuple | set | frozenset):
        raise UnpicklingError(f"set expects a list of items, got {type(items).__name__}")
    return set(items)


def _unsupported(name: str, why: str):
    def refuse(*args, **kwargs):
        raise UnpicklingError(f"{name}: {why}")

    refuse.__qualname__ = name
    return refuse


_TENSOR_REBUILDERS = {rebuild_tensor_v2, rebuild_tensor_v3, rebuild_tensor, rebuild_meta_tensor_no_storage}


# The names a checkpoint may use, and what each stands for. This is the weights-only allow-list.
GLOBALS: dict[str, object] = {
    "collections.OrderedDict": OrderedDict,
    "collections.Counter": Counter,
    "torch._utils._rebuild_tensor": rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
    "torch._utils._rebuild_meta_tensor_no_storage": rebuild_meta_tensor_no_storage,
    "torch._utils._rebuild_parameter": rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
    "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
    "torch.Tensor": Tensor,
    "torch.Size": rebuild_size,
    "torch.device": rebuild_device,
    "_codecs.encode": encode_latin1,
    "builtins.bytearray": make_bytearray,
    "builtins.set": make_set,
    "builtins.complex": make_complex,
    "torch.UntypedStorage": StorageType("UntypedStorage", D.uint8),
    "torch.storage.UntypedStorage": StorageType("UntypedStorage", D.uint8),
}
GLOBALS.update({f"torch.{d.name}": d for d in D.ALL + D.EXTRA})
GLOBALS.update({f"torch.{name}": StorageType(name, d) for d, name in STORAGE_NAMES.items()})
for _name in (
    "_rebuild_qtensor",
    "_rebuild_nested_tensor",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
):
    GLOBALS[f"torch._utils.{_name}"] = _unsupported(
        f"torch._utils.{_name}", "this kind of tensor (quantized, nested, subclass) is not supported by Ember"
    )


def get_layout(name: str):
    """``torch.serialization._get_layout``: a layout by its printed name (``"torch.sparse_coo"``)."""
    layouts = {"torch.sparse_coo": sparse_coo, "torch.strided": strided}
    if name not in layouts:
        raise UnpicklingError(f"the layout {name} is not supported by Ember")
    return layouts[name]


def load_sparse_tensor(layout_, data):
    """``torch._utils._rebuild_sparse_tensor`` in a checkpoint: the pieces are checked (types, shapes,
    index bounds, the coalesced flag) before a COO tensor is made of them."""
    name = "torch._utils._rebuild_sparse_tensor"
    if layout_ is not sparse_coo:
        raise UnpicklingError(f"{name}: the layout {layout_!r} is not supported by Ember (only sparse_coo)")
    if type(data) is not tuple or len(data) != 4:
        raise UnpicklingError(f"{name}: expected (indices, values, size, is_coalesced)")
    indices, values, size, coalesced = data
    if type(indices) is not Tensor or type(values) is not Tensor or indices.dtype is not D.int64:
        raise UnpicklingError(f"{name}: indices must be an int64 tensor and values a tensor")
    if not isinstance(size, tuple) or not all(type(n) is int and n >= 0 for n in size) or type(coalesced) is not bool:
        raise UnpicklingError(f"{name}: size must be a tuple of sizes and is_coalesced a bool")
    try:
        return rebuild_sparse_tensor(layout_, data)
    except RuntimeError as error:
        raise UnpicklingError(f"{name}: {error}") from None


# Sparse COO tensors, pickled as PyTorch pickles them: the layout and (indices, values, size, coalesced).
GLOBALS["torch._utils._rebuild_sparse_tensor"] = load_sparse_tensor
GLOBALS["torch.serialization._get_layout"] = get_layout

# The classes that NEWOBJ may instantiate and the containers BUILD may update.
NEWOBJ_CLASSES = {OrderedDict: OrderedDict, Counter: Counter}
# dtypes PyTorch has and Ember does not: named so the error says which.
_TORCH_ONLY_DTYPES = (
    [f"uint{n}" for n in (16, 32, 64)]
    + ["complex32", "qint8", "quint8", "qint32", "quint4x2", "quint2x4"]
    + ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2"]
)
UNSUPPORTED_DTYPES = {f"torch.{n}" for n in _TORCH_ONLY_DTYPES}
