"""``Tensor``: storage + shape + strides (in elements) + storage offset + dtype + device.

On the CPU a tensor also keeps ``_array``, a NumPy view of its storage with its own shape and
strides, built once when the tensor is made; kernels work on it directly. Meta tensors and tensors
of plugin devices have none. Methods that run ops are attached by ``ember.core.methods``; this
module holds what a tensor is, not what it does.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ember.core import dispatch, fastpath
from ember.core import dtypes as D
from ember.core.devices import CPU, check_backend, device
from ember.core.dtypes_extra import complex32_as_complex64, float4_e2m1fn_x2
from ember.core.fastpath import MISS, native
from ember.core.layout import contiguous_strides, int_contiguous_strides, is_contiguous, numel
from ember.core.storage import Storage
from ember.core.symbolic import GuardOnDataDependentSymNode


class Size(tuple):
    """``tensor.shape``: a tuple of ints that prints as ``ember.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        return numel(self)

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + other)

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(other + tuple(self))

    def __mul__(self, times):
        return Size(tuple(self) * times)

    __rmul__ = __mul__


class Tensor:
    __slots__ = (
        "__dict__",
        "__weakref__",
        "_array",
        "_contig",
        "_offset",
        "_shape",
        "_storage",
        "_stride",
        "device",
        "dtype",
    )
    # True on subclasses that define __ember_dispatch__: their calls leave the fast path.
    _dispatches = False
    # Set on the few tensors that differ, so that making a tensor stays cheap.
    requires_grad = False
    grad = None
    grad_fn = None
    _base = None
    _views = None  # a ViewRefs once a view of this tensor is taken (see make_view)
    _subclass_hook = staticmethod(lambda cls: None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Tensor._subclass_hook(cls)  # PyTorch's protocols (ember.core.subclassing.on_subclass)
        cls._dispatches = callable(getattr(cls, "__ember_dispatch__", None))
        if cls._dispatches:
            dispatch._flags.subclasses = True

    def __new__(cls, *args: Any, **kwargs: Any):
        if cls is not Tensor and not args and not kwargs:
            return object.__new__(cls)
        from ember.core.creation import legacy_tensor

        return legacy_tensor(cls, *args, **kwargs)

    # -- metadata --------------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._shape)
        from ember.core.layout import normalize_dim

        return self._shape[normalize_dim(dim, len(self._shape))]

    def stride(self, dim: int | None = None):
        if dim is None:
            return self._stride
        from ember.core.layout import normalize_dim

        return self._stride[normalize_dim(dim, len(self._shape))]

    def storage_offset(self) -> int:
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        return numel(self._shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return numel(self._shape) * self.dtype.itemsize

    def is_contiguous(self, memory_format: Any = None) -> bool:
        if memory_format == "channels_last" or memory_format == "channels_last_3d":
            return _is_contiguous_as(self, memory_format)
        contig = self._contig
        if contig is None:
            contig = self._contig = is_contiguous(self._shape, self._stride)
        return contig

    def is_floating_point(self) -> bool:
        return self.dtype.category == D.FLOATING

    def is_complex(self) -> bool:
        return self.dtype.category == D.COMPLEX

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    # Devices Ember has no plugin for: each flag is True only for a tensor of that device type.
    is_xpu = property(lambda self: self.device.type == "xpu")
    is_mps = property(lambda self: self.device.type == "mps")
    is_xla = property(lambda self: self.device.type == "xla")
    is_ipu = property(lambda self: self.device.type == "ipu")
    is_hpu = property(lambda self: self.device.type == "hpu")
    is_mtia = property(lambda self: self.device.type == "mtia")
    is_maia = property(lambda self: self.device.type == "maia")
    is_vulkan = property(lambda self: self.device.type == "vulkan")
    # Layouts and kinds of tensor Ember does not have (see the package README): always False.
    is_mkldnn = property(lambda self: False)
    is_quantized = property(lambda self: False)
    is_sparse = property(lambda self: False)
    is_sparse_csr = property(lambda self: False)
    is_nested = property(lambda self: False)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._storage.version

    def _bump_version(self) -> None:
        self._storage.version += 1

    def data_ptr(self) -> int:
        base = self._storage.data_ptr()
        return base + self._offset * self.dtype.itemsize if base else 0

    def untyped_storage(self):
        """The public handle of this tensor's bytes (``ember.UntypedStorage``), one per storage."""
        handle = self._storage.handle
        if handle is None:
            from ember.core.storages import untyped

            handle = untyped(self._storage)
        return handle

    # -- autograd's methods: the autograd package installs them with its dispatch level ---------

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        _needs_autograd("backward")

    def register_hook(self, hook):
        _needs_autograd("register_hook")

    def register_post_accumulate_grad_hook(self, hook):
        _needs_autograd("register_post_accumulate_grad_hook")

    def retain_grad(self) -> None:
        _needs_autograd("retain_grad")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
                "subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad and self.dtype.category not in (D.FLOATING, D.COMPLEX):
            raise RuntimeError(
                "only Tensors of floating point dtype can require gradients"
            )  # PyTorch's words for this method
        if requires_grad and not dispatch.has_autograd():
            raise RuntimeError(
                "requires_grad=True needs the autograd level of the dispatcher: import ember.autograd "
                "(the ember-autograd package)"
            )
        self.requires_grad = requires_grad
        return self

    # -- leaving ember -----------------------------------------------------------------------

    def _require_data(self, what: str) -> np.ndarray:
        if self._array is None:
            if self.device.type == "meta":
                raise NotImplementedError(f"Cannot {what} of a meta tensor; it has no data")
            raise TypeError(
                f"can't {what} of a {self.device.type} device type tensor; use Tensor.cpu() to copy it to host memory first"
            )
        return self._array

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's data as a NumPy array sharing its memory."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.dtype is D.bfloat16 and not force:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._require_data("convert to numpy")

    def __array__(self, dtype=None, copy=None):
        array = self._require_data("convert to numpy")
        return array if dtype is None else array.astype(dtype)

    def item(self):
        n = numel(self._shape)
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        value = self._require_data("read the value").reshape(())
        return _to_python(value[()], self.dtype)

    def tolist(self):
        array = self._require_data("read the values")
        if self.dtype is D.bfloat16:
            array = array.astype(np.float32)
        elif self.dtype is D.complex32:
            array = complex32_as_complex64(array)
        elif self.dtype in D.STORAGE_ONLY:
            raise RuntimeError("load_scalar: invalid type")
        return array.tolist()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        n = numel(self._shape)
        if n != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} is ambiguous"
            )
        return bool(self.item())

    def _scalar(self):
        if numel(self._shape) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self.dtype.category not in (D.BOOL, D.INTEGRAL) or numel(self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        from ember.core.printing import tensor_repr

        return tensor_repr(self)

    def __dlpack__(self, *, stream=None, **kwargs):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self._require_data("export through DLPack").__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.device.type == "cpu":
            return (1, 0)  # kDLCPU
        if self.device.type == "cuda":
            return (2, self.device.index or 0)  # kDLCUDA
        raise BufferError(f"DLPack cannot describe a {self.device.type} tensor")

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.tolist() if self._array is not None else None, self.dtype.name, str(self.device)))


dispatch.Tensor = Tensor


def _rebuild(data, dtype_name: str, device_str: str) -> Tensor:
    from ember.core.creation import tensor

    return tensor(data, dtype=D.BY_NAME[dtype_name], device=device_str)


def _to_python(value, dtype: D.dtype):
    if dtype.category == D.BOOL:
        if dtype is not D.bool_:  # a storage-only dtype (bits8, int4, ...) has no Python value
            raise NotImplementedError(f"\"_local_scalar_dense_cpu\" not implemented for '{D.SCALAR_TYPE_NAMES[dtype]}'")
        return bool(value)
    if dtype.category == D.INTEGRAL:
        return int(value)
    if dtype.category == D.COMPLEX:
        if isinstance(value, np.void):  # complex32: a (real, imag) pair of halves
            return complex(float(value[0]), float(value[1]))
        return complex(value)
    if dtype is float4_e2m1fn_x2:  # two packed numbers per element
        raise NotImplementedError("\"_local_scalar_dense_cpu\" not implemented for 'Float4_e2m1fn_x2'")
    return float(value)


# -- making tensors ------------------------------------------------------------------------------


AUTOGRAD_ATTRIBUTES = frozenset(
    {"backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "retains_grad", "grad", "data"}
    | {"grad_dtype", "_grad_accumulator_cls", "_output_nr", "_inference"}
)


def _needs_autograd(name: str):
    raise RuntimeError(
        f"Tensor.{name} needs the autograd level of the dispatcher: import ember.autograd (the ember-autograd package)"
    )


def install_autograd_attributes(attributes: dict) -> None:
    """The autograd package's ``Tensor`` attributes (backward, hooks, ``grad`` and ``data`` with their
    checks, the recorder's defaults), installed together with its dispatch level; only those names."""
    unknown = set(attributes) - AUTOGRAD_ATTRIBUTES
    if unknown:
        raise ValueError(f"not autograd's Tensor attributes: {sorted(unknown)}")
    for name, value in attributes.items():
        setattr(Tensor, name, value)


def _new(cls, storage: Storage, shape: tuple, stride: tuple, offset: int, dtype: D.dtype, array) -> Tensor:
    t = object.__new__(cls)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t.dtype = dtype
    t.device = storage.device
    t._array = array
    t._contig = None
    return t


def _array_view(storage: Storage, shape: tuple, stride: tuple, offset: int, dtype: D.dtype):
    if type(storage.data) is not np.ndarray:
        return None
    size = dtype.itemsize
    return np.ndarray(shape, dtype.np, storage.data, offset * size, [s * size for s in stride])


def empty(shape: tuple, dtype: D.dtype, dev: device, stride: tuple | None = None) -> Tensor:
    """An uninitialized tensor; with ``stride``, laid out as given (like ``empty_strided``)."""
    if stride is None:
        stride = contiguous_strides(shape)
    try:
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if numel(shape) else 0
    except GuardOnDataDependentSymNode:  # sizes computed from data: taken to be non-empty (size-oblivious)
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    nbytes = extent * dtype.itemsize
    if dev.type == "cpu":
        storage = Storage.cpu(nbytes, dev)
    elif dev.type == "meta":
        storage = Storage(None, nbytes, dev)
    else:
        check_backend(dev)
        raise NotImplementedError(f"allocation on {dev.type} must go through its backend's empty kernel")
    t = _new(Tensor, storage, shape, stride, 0, dtype, None)
    t._array = _array_view(storage, shape, stride, 0, dtype)
    return t


def from_array(array: np.ndarray, dtype: D.dtype | None = None) -> Tensor:
    """A CPU tensor owning a fresh C-contiguous array (a kernel's result); no copy when possible."""
    if type(array) is not np.ndarray:
        array = np.asarray(array)  # NumPy gives a scalar for a 0-d operation: views need an array
    if dtype is None:
        dtype = D.from_numpy_dtype(array.dtype)
    elif array.dtype != dtype.np:
        array = array.astype(dtype.np)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    shape = array.shape
    return _wrap(array, array.nbytes, CPU, shape, int_contiguous_strides(shape), dtype)


def _wrap(array: np.ndarray, nbytes: int, dev: device, shape: tuple, stride: tuple, dtype: D.dtype) -> Tensor:
    """A CPU tensor whose storage is ``array`` itself."""
    return _new(Tensor, Storage(array, nbytes, dev), shape, stride, 0, dtype, array)


def share_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing ``array``'s memory (``ember.from_numpy``)."""
    dtype = D.from_numpy_dtype(array.dtype)
    size = dtype.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative; such arrays are not supported. "
            "(You can probably work around this by making a copy of your array with array.copy().)"
        )
    if any(s % size for s in array.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size; copy the array first")
    stride = tuple(s // size for s in array.strides)
    shape = array.shape
    if numel(shape) == 0:
        storage = Storage(np.empty(0, np.uint8), 0, CPU)
    else:
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
        flat = np.lib.stride_tricks.as_strided(array, shape=(extent,), strides=(size,))
        storage = Storage(flat.view(np.uint8), extent * size, CPU)
    return _new(Tensor, storage, shape, stride, 0, dtype, array)


class ViewRefs(list):
    """Weak references to the views of one base tensor (``base._views``).

    A view taken while its base does not require grad does not require grad either; when the base
    later gains a history through an in-place op, PyTorch's views follow it (their ``requires_grad``
    and ``grad_fn`` come from their base). Autograd reads this list at that moment, which is rare,
    so that nothing is checked when ops run. References to dead views are dropped whenever the list
    grows past twice the length it had after the last such pass.
    """

    __slots__ = ("limit",)

    def prune(self) -> None:
        self[:] = [r for r in self if r() is not None]
        self.limit = max(16, 2 * len(self))

    def alive(self) -> list:
        return [v for v in (r() for r in self) if v is not None]


_ref = weakref.ref


def note_view(view: Tensor, base: Tensor) -> None:
    """Make ``view`` a view of ``base`` for autograd (``view._base``), remembered by ``base`` (see ``ViewRefs``).

    ``base`` must not be a view itself. Tensor subclasses that make their own views call this.
    """
    view._base = base
    refs = base._views
    if refs is None:
        base._views = refs = ViewRefs()
        refs.limit = 16
    refs.append(_ref(view))
    if len(refs) > refs.limit:
        refs.prune()


def make_view(base: Tensor, shape: tuple, stride: tuple, offset: int) -> Tensor:
    """A tensor sharing ``base``'s storage with new sizes, strides and offset."""
    storage = base._storage
    dtype = base.dtype
    # ``_new`` inlined, and ``numel`` only for an offset: every view op pays for this function.
    t = object.__new__(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t.dtype = dtype
    t.device = storage.device
    t._contig = None
    data = storage.data
    if type(data) is np.ndarray:
        size = dtype.itemsize
        # An empty view reads nothing; NumPy refuses an offset past the end of an empty buffer.
        start = offset * size if offset and numel(shape) else 0
        t._array = np.ndarray(shape, dtype.np, data, start, [s * size for s in stride])
    else:
        t._array = None
    root = base._base
    if root is None:
        root = base
    # note_view, inlined for the same reason.
    t._base = root
    refs = root._views
    if refs is None:
        root._views = refs = ViewRefs()
        refs.limit = 16
    refs.append(_ref(t))
    if len(refs) > refs.limit:
        refs.prune()
    return t


# The slots the C functions fill when they make tensors and storages (as _new and Storage.__init__ do).
# A class with other slots keeps the Python path until the C learns them.
_C_SLOTS = (
    {"__dict__", "__weakref__", "_array", "_contig", "_offset", "_shape", "_storage", "_stride", "device", "dtype"},
    {"__weakref__", "data", "device", "handle", "nbytes", "version"},
)
if native is not None and (set(Tensor.__slots__), set(Storage.__slots__)) != _C_SLOTS:
    fastpath.native = native = dispatch._native_call = None

if native is not None:
    # The C versions: the same work for exact Tensors with int metadata; they call the Python
    # ``make_view`` above for anything else.
    native.init(Tensor, Storage, np.ndarray, ViewRefs, dispatch._flags, MISS, make_view)
    native.init_arrays(from_array, CPU)
    _make_view_python, _wrap_python, _from_array_python = make_view, _wrap, from_array
    make_view, _wrap, from_array = native.make_view, native.wrap, native.from_array


def make_wrapper_subclass(
    cls, shape, dtype: D.dtype, dev: device, stride: tuple | None = None, requires_grad: bool = False
) -> Tensor:
    """An instance of a dispatching subclass that reports this metadata and holds no data itself.

    Its ops all reach its ``__ember_dispatch__``, which computes with whatever it wraps.
    """
    shape = tuple(shape)
    stride = contiguous_strides(shape) if stride is None else tuple(stride)
    t = _new(cls, Storage(None, numel(shape) * dtype.itemsize, dev), shape, stride, 0, dtype, None)
    t.requires_grad = requires_grad
    return t


def _is_contiguous_as(t: Tensor, memory_format: Any) -> bool:
    from ember.core.memory_formats import is_contiguous_as

    return is_contiguous_as(t._shape, t._stride, memory_format)
