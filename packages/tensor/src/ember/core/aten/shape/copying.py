"""Copies: ``copy_``, ``clone``, ``contiguous``, ``_to_copy`` (``.to``, ``.float()``, ...),
``fill_`` and ``zero_``.

``clone`` keeps the source's strides when they are dense and non-overlapping (PyTorch's
``preserve_format``), and is contiguous otherwise. Copies between devices go through ``_to_copy``;
a plugin device registers its own kernels for it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.devices import CPU, META, to_device
from ember.core.dispatch import define
from ember.core.dtypes_extra import CONVERTED, SPECIAL_STORAGE, copy_special, fill_special
from ember.core.layout import broadcast_shapes, dense_strides_like, is_non_overlapping_and_dense
from ember.core.memory_formats import check_format, contiguous_format, memory_format_of, memory_format_strides
from ember.core.pointwise import check_no_internal_overlap
from ember.core.tensor import Tensor, empty


def _dense_strides(t: Tensor) -> tuple:
    return dense_strides_like(t._shape, t._stride)


# -- copy_ --------------------------------------------------------------------------------------

copy_ = define("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", ("inplace", "core"))


def _check_copy(self: Tensor, src) -> None:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    check_no_internal_overlap(self)
    shape = broadcast_shapes(self._shape, src._shape)
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
    _check_no_partial_overlap(self, src)


def _check_no_partial_overlap(self: Tensor, src: Tensor) -> None:
    """PyTorch refuses a copy between dense tensors whose memory overlaps without coinciding
    (``t[1:].copy_(t[:-1])``): the result would depend on the order elements are written in."""
    if self._storage is not src._storage or self.numel() == 0 or src.numel() == 0:
        return
    if not (
        is_non_overlapping_and_dense(self._shape, self._stride)
        and is_non_overlapping_and_dense(src._shape, src._stride)
    ):
        return  # too hard to tell, as in PyTorch
    a_begin, b_begin = self._offset * self.dtype.itemsize, src._offset * src.dtype.itemsize
    a_end, b_end = a_begin + self.nbytes, b_begin + src.nbytes
    if (a_begin, a_end) == (b_begin, b_end) and self._stride == src._stride:
        return
    if a_begin < b_end and b_begin < a_end:
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
            "memory location. Please clone() the tensor before performing the operation."
        )


@copy_.register_kernel("cpu")
def _copy_cpu(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    _check_copy(self, src)
    if src.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    source = src._require_data("copy")
    if self.dtype in CONVERTED or src.dtype in CONVERTED:
        copy_special(self._array, np.broadcast_to(source, self._shape), self.dtype, src.dtype)
        self._storage.version += 1
        return self
    if self.dtype.category != D.COMPLEX and src.dtype.category == D.COMPLEX:
        source = source.real  # PyTorch drops the imaginary part (with a warning)
    np.copyto(self._array, source, casting="unsafe")
    self._storage.version += 1
    return self


@copy_.register_meta
def _copy_meta(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    _check_copy(self, src)
    return self


# -- clone, _to_copy --------------------------------------------------------------------------------

clone = define("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", ("core",))


def _clone_layout(self: Tensor, memory_format, op: str = "clone") -> tuple:
    layout = check_format(memory_format, self.ndim, op)
    return _dense_strides(self) if layout == "preserve_format" else memory_format_strides(self._shape, layout)


@clone.register_kernel("cpu")
def _clone_cpu(self: Tensor, *, memory_format=None) -> Tensor:
    out = empty(self._shape, self.dtype, self.device, _clone_layout(self, memory_format))
    np.copyto(out._array, self._array)
    return out


@clone.register_meta
def _clone_meta(self: Tensor, *, memory_format=None) -> Tensor:
    return empty(self._shape, self.dtype, self.device, _clone_layout(self, memory_format))


def clone_preserving_strides(self: Tensor) -> Tensor:
    """A copy of ``self`` with its very strides, gaps included (PyTorch's ``clone_preserve_strides``, what
    the scatters and the functional forms of in-place ops return); dense when ``self`` overlaps itself.
    A CPU or meta kernel's helper: it calls kernels, not the dispatcher."""
    if any(s == 0 and n > 1 for n, s in zip(self._shape, self._stride, strict=True)):
        return _clone_meta(self) if self.device.type == "meta" else _clone_cpu(self)
    out = empty(self._shape, self.dtype, self.device, self._stride)
    if self.device.type != "meta":
        _copy_cpu(out, self)
    return out


to_copy = define(
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
    ("core",),
)


def _to_copy_plan(self: Tensor, dtype, device, memory_format) -> tuple:
    """The copy's dtype, device and strides."""
    dtype = self.dtype if dtype is None else D.to_dtype(dtype)
    target = self.device if device is None else to_device(device)
    return dtype, target, _clone_layout(self, memory_format, "to")


@to_copy.register_meta
def _to_copy_meta(
    self: Tensor, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None
):
    dtype, target, strides = _to_copy_plan(self, dtype, device, memory_format)
    if target.type == "meta":
        return empty(self._shape, dtype, META, strides)
    raise NotImplementedError("Cannot copy out of meta tensor; no data!")


@to_copy.register_kernel("cpu")
def _to_copy_cpu(
    self: Tensor, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None
):
    dtype, target, strides = _to_copy_plan(self, dtype, device, memory_format)
    if target.type == "meta":
        return empty(self._shape, dtype, META, strides)
    if target.type != "cpu" or self.device.type != "cpu":
        from ember.core.devices import check_backend

        check_backend(target)
        raise NotImplementedError(f"_to_copy from {self.device} to {target} needs the {target.type} backend's kernel")
    out = empty(self._shape, dtype, CPU, strides)
    source = self._array
    if dtype in CONVERTED or self.dtype in CONVERTED:
        copy_special(out._array, source, dtype, self.dtype)
        return out
    if dtype.category != D.COMPLEX and self.dtype.category == D.COMPLEX:
        source = source.real
    np.copyto(out._array, source, casting="unsafe")
    return out


# -- fill_, zero_ --------------------------------------------------------------------------------

fill_ = define("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", ("inplace", "core"))


def _scalar_value(value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
            )
        return value.item()
    return value


def _scalar_value_meta(value) -> None:
    if isinstance(value, Tensor) and value.ndim != 0:
        _scalar_value(value)


# The C++ type names PyTorch's overflow message uses.
_C_TYPES = {
    D.float16: "c10::Half",
    D.bfloat16: "c10::BFloat16",
    D.float32: "float",
    D.float64: "double",
    D.complex64: "c10::complex<float>",
    D.complex128: "c10::complex<double>",
    D.complex32: "c10::complex<c10::Half>",
}


def checked_scalar(value, dtype: D.dtype):
    """``value`` converted for storing in ``dtype``, refusing what does not fit (PyTorch's
    ``checked_convert``): a complex value with an imaginary part into a real type, NaN or
    infinity into an integer type, and a number out of the type's range. Bool takes anything;
    an unsigned type also takes negative integers down to minus its maximum (they wrap around),
    but no negative float."""
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        raise OverflowError("int too big to convert")  # beyond any 64-bit integer, as PyTorch says
    if dtype.category == D.BOOL:
        return np.bool_(value != 0)
    if dtype.category == D.COMPLEX:
        limit = float(np.finfo(dtype.to_real().np).max)
        parts = (complex(value).real, complex(value).imag)
        if any(np.isfinite(p) and abs(p) > limit for p in parts):
            raise RuntimeError(f"value cannot be converted to type {_C_TYPES[dtype]} without overflow")
        if dtype in SPECIAL_STORAGE:  # complex32: a structured pair of halves
            pair = np.empty((), dtype.np)
            fill_special(pair, dtype, value)
            return pair
        return np.asarray(value).astype(dtype.np)
    overflow = False
    if isinstance(value, complex):
        overflow, value = value.imag != 0, value.real
    if dtype.category == D.INTEGRAL:
        info = np.iinfo(dtype.np)
        if isinstance(value, float):  # a float must lie in the type's range; only integers wrap
            overflow = overflow or not (np.isfinite(value) and int(info.min) <= value <= int(info.max))
        else:
            low = -int(info.max) if not dtype.is_signed else int(info.min)
            overflow = overflow or not (low <= value <= int(info.max))
        if not overflow:
            value = np.asarray(int(value), np.int64).astype(dtype.np)
    else:
        limit = float(ml_dtypes.finfo(dtype.np).max)
        overflow = overflow or (np.isfinite(value) and abs(value) > limit)
        if not overflow:
            value = np.asarray(float(value)).astype(dtype.np)
    if overflow:
        name = _C_TYPES.get(dtype, f"{dtype.name}_t")
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return value


@fill_.register_kernel("cpu")
def _fill_cpu(self: Tensor, value) -> Tensor:
    # PyTorch fills an expanded tensor from a number (every element gets the same value anyway) but
    # refuses to from a tensor, as it refuses any copy into one.
    if isinstance(value, Tensor):
        check_no_internal_overlap(self)
    if self.dtype in SPECIAL_STORAGE:
        fill_special(self._array, self.dtype, _scalar_value(value))
        self._storage.version += 1
        return self
    self._array[...] = checked_scalar(_scalar_value(value), self.dtype)
    self._storage.version += 1
    return self


@fill_.register_meta
def _fill_meta(self: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        check_no_internal_overlap(self)
    _scalar_value_meta(value)
    return self


zero_ = define("zero_(Tensor(a!) self) -> Tensor(a!)", ("inplace", "core"))


@zero_.register_decomposition
def _zero(self: Tensor) -> Tensor:
    return fill_(self, 0)


# -- the Python surface -----------------------------------------------------------------------------


@method("copy_")
def _copy_method(self, src, non_blocking: bool = False):
    return copy_(self, src, non_blocking)


@method("clone")
@public("clone")
def _clone(input, *, memory_format=None):
    return clone(input, memory_format=memory_format)


@method("contiguous")
def _contiguous(self, memory_format=contiguous_format):
    if self.is_contiguous(memory_format=memory_format):
        return self
    if memory_format == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return clone(self, memory_format=check_format(memory_format, self.ndim, "contiguous"))


@method("fill_")
def _fill_method(self, value):
    return fill_(self, value)


@method("zero_")
def _zero_method(self):
    return zero_(self)


def _parse_to(args, kwargs):
    """``to(dtype)``, ``to(device, dtype=None)``, ``to(tensor)`` and their keyword forms."""
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, bool):
            continue  # non_blocking or copy given positionally
        elif a is not None:
            device = to_device(a)
    return dtype, device, copy, memory_format


@method("to")
def _to(self, *args, **kwargs):
    dtype, device, copy, memory_format = _parse_to(args, dict(kwargs))
    dtype = self.dtype if dtype is None else D.to_dtype(dtype)
    target = self.device if device is None else to_device(device)
    same_device = target.type == self.device.type and (target.index is None or target.index == self.device.index)
    if dtype is self.dtype and same_device and not copy:
        # PyTorch's rule: the tensor itself when the format asked for is the one its strides suggest.
        if memory_format is None or memory_format == "preserve_format":
            return self
        if memory_format_of(self._shape, self._stride) == memory_format:
            return self
    return to_copy(self, dtype=dtype, device=target, memory_format=memory_format)


@method("type")
def _type(self, dtype=None, non_blocking=False, **kwargs):
    """The legacy type name ('torch.FloatTensor') without ``dtype``; else ``self`` cast to it, where
    ``dtype`` is a dtype or such a name ('torch.DoubleTensor', 'torch.cuda.FloatTensor')."""
    if dtype is None:
        return D.legacy_type_name(self.dtype, self.device.type)
    if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), D.dtype):  # ember.FloatTensor, ...
        return _to(self, dtype.dtype, non_blocking=non_blocking)
    if isinstance(dtype, str):
        parts = dtype.split(".")
        by_name = {f"{D.SCALAR_TYPE_NAMES[d]}Tensor": d for d in D.ALL}
        if len(parts) not in (2, 3) or parts[0] not in ("torch", "ember") or parts[-1] not in by_name:
            raise ValueError(f"invalid type: '{dtype}'")
        device = parts[1] if len(parts) == 3 else "cpu"
        return _to(self, device=device, dtype=by_name[parts[-1]], non_blocking=non_blocking)
    if isinstance(dtype, type):
        raise ValueError(f"invalid type: '{dtype.__name__}'")
    if not isinstance(dtype, D.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    return _to(self, dtype, non_blocking=non_blocking)


def _converter(name: str, dtype: D.dtype):
    def convert(self, memory_format=None):
        return _to(self, dtype) if memory_format is None else _to(self, dtype, memory_format=memory_format)

    convert.__name__ = convert.__qualname__ = name
    method(name)(convert)


for _name, _dtype in [
    ("float", D.float32),
    ("double", D.float64),
    ("half", D.float16),
    ("bfloat16", D.bfloat16),
    ("long", D.int64),
    ("int", D.int32),
    ("short", D.int16),
    ("char", D.int8),
    ("byte", D.uint8),
    ("bool", D.bool_),
    ("cfloat", D.complex64),
    ("cdouble", D.complex128),
]:
    _converter(_name, _dtype)


@method("cpu")
def _cpu(self, memory_format=None):
    return _to(self, CPU)


@method("type_as")
def _type_as(self, other):
    return _to(self, other.dtype)
