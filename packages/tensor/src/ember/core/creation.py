"""Tensors from Python data, NumPy arrays and DLPack: ``tensor``, ``as_tensor``, ``from_numpy``,
``from_dlpack``, and the legacy ``Tensor(...)`` constructor.

Dtype inference follows PyTorch: Python bools give ``bool``, ints ``int64``, floats the default
dtype, complex numbers the default complex dtype; NumPy data keeps its dtype.
"""

from __future__ import annotations

import builtins
import numbers
from functools import reduce

import numpy as np

from ember.core import dispatch
from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_function
from ember.core.devices import get_default_device, to_device
from ember.core.dtypes_extra import CONVERTED, copy_special
from ember.core.promotion import default_complex_dtype, get_default_dtype, promote_types
from ember.core.tensor import Tensor, from_array, share_numpy


def _infer_python_dtype(data) -> D.dtype | None:
    """The dtype of nested Python data, or None when it holds NumPy data or tensors.

    Errors follow PyTorch: a sequence next to a number at the same depth is a TypeError, and an
    object that is no number a RuntimeError (a string a TypeError). Ragged sequences of equal depth
    pass here and fail in NumPy with the ValueError."""
    kind = -1
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor | np.ndarray | np.generic):
            return None  # checked first: np.float64 is also a Python float, and keeps its own dtype
        if isinstance(item, list | tuple):
            nested = [isinstance(x, list | tuple) for x in item]
            if any(nested) and not all(nested):
                raise TypeError(
                    "tensor(): expected a sequence at every position of a level, got a number next to a sequence"
                )
            stack.extend(item)
        elif isinstance(item, builtins.bool):
            kind = max(kind, 0)
        elif isinstance(item, builtins.int):
            kind = max(kind, 1)
        elif isinstance(item, builtins.float):
            kind = max(kind, 2)
        elif isinstance(item, builtins.complex):
            kind = max(kind, 3)
        elif isinstance(item, Tensor | np.ndarray | np.generic):
            return None
        elif isinstance(item, str | bytes):
            raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(item).__name__}")
    if kind == -1:
        return get_default_dtype()  # an empty list
    return (D.bool_, D.int64, get_default_dtype(), default_complex_dtype())[kind]


def _to_array(data, dtype: D.dtype | None, inside: bool = False) -> tuple[np.ndarray, D.dtype]:
    if isinstance(data, Tensor):
        array = data._require_data("read the values")
        inferred = data.dtype
        if inside:
            # Inside a list, PyTorch reads a tensor as the one number it holds, whatever its shape.
            if array.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            array = array.reshape(())
    elif isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
        inferred = D.from_numpy_dtype(array.dtype)
    else:
        inferred = _infer_python_dtype(data)
        if inferred is None:  # lists holding tensors or arrays
            parts = [_to_array(x, None, inside=True) for x in data]
            # The items' dtypes promote as PyTorch's inference does: [tensor(1), 2.5] is float32.
            inferred = reduce(promote_types, (d for _, d in parts)) if parts else get_default_dtype()
            array = np.stack([a.astype(inferred.np) for a, _ in parts]) if parts else np.empty(0, inferred.np)
        else:
            if dtype is not None and inferred.category == D.COMPLEX and dtype.category in (D.INTEGRAL, D.FLOATING):
                raise TypeError(f"can't convert complex numbers to {dtype.name} (take .real first)")
            array = _python_array(data, inferred if dtype is None or dtype.category < D.FLOATING else dtype, dtype)
            if dtype is not None and dtype.category == D.INTEGRAL:
                _check_fits(array, dtype)
    target = dtype or inferred
    if array.dtype != target.np:
        if target in CONVERTED or inferred in CONVERTED:  # NumPy cannot convert these itself
            converted = np.empty(array.shape, target.np)
            copy_special(converted, array, target, inferred)
            return converted, target
        array = array.astype(target.np)
    return array, target


# Python numbers are read at full width and rounded once, into the target dtype.
_WIDEST = {D.BOOL: np.bool_, D.INTEGRAL: np.int64, D.FLOATING: np.float64, D.COMPLEX: np.complex128}


def _python_array(data, inferred: D.dtype, target: D.dtype | None = None) -> np.ndarray:
    """Nested Python numbers as an array of the widest dtype of ``inferred``'s category (the
    target's, for floating targets: ints too wide for int64 still convert to them)."""
    try:
        return np.array(data, dtype=_WIDEST[inferred.category])
    except OverflowError:
        if target is D.uint64:  # the one type whose values go beyond int64's
            try:
                return np.array(data, dtype=np.uint64)
            except OverflowError:
                pass
        # PyTorch reads Python ints as int64.
        raise ValueError("Overflow when unpacking long long") from None
    except ValueError as error:
        raise ValueError(f"expected a rectangular nested sequence of numbers: {error}") from None


def _check_fits(array: np.ndarray, dtype: D.dtype) -> None:
    """PyTorch's checked conversion into an integer type: unsigned types take negatives down to
    minus their maximum (they wrap), and NaN, infinities and other out-of-range values are refused."""
    if array.size == 0:
        return
    info = np.iinfo(dtype.np)
    low = -int(info.max) if not dtype.is_signed else int(info.min)
    values = array.real if array.dtype.kind == "c" else array
    if array.dtype.kind == "c" and np.any(array.imag != 0):
        bad = True
    elif values.dtype.kind == "f":
        bad = not np.all(np.isfinite(values)) or values.min() < low or values.max() > int(info.max)
    else:
        bad = int(values.min()) < low or int(values.max()) > int(info.max)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow")


# A tensor made here from data is made without an op: ``lift_fresh`` shows it to the active dispatch
# modes (a fake tensor mode makes it a fake, a tracer a constant), as PyTorch's tensor(), as_tensor()
# and from_numpy() do; functionalization makes it a functional tensor. It is called only while a mode or
# the functionalize level is active, so eager creation pays nothing.
lift_fresh = dispatch.define("lift_fresh(Tensor(a) self) -> Tensor(a)")


@lift_fresh.register_kernel("*")
def _lift_fresh(self: Tensor) -> Tensor:
    return self


def _lift(t: Tensor) -> Tensor:
    return lift_fresh(t) if dispatch._state.modes or dispatch._enabled["functionalize"] else t


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data``."""
    dtype = D.to_dtype(dtype) if dtype is not None else None
    array, dtype = _to_array(data, dtype)
    result = _lift(from_array(np.array(array, copy=True, order="C"), dtype))
    result = _move(result, device)
    if requires_grad:
        result.requires_grad_(True)
    return result


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory when it already is one of the right dtype and device."""
    dtype = D.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        return data.to(dtype=dtype or data.dtype, device=device or data.device)
    on_cpu = (get_default_device() if device is None else to_device(device)).type == "cpu"
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype) and on_cpu:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory; changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return _lift(share_numpy(array))


def from_dlpack(obj) -> Tensor:
    """A tensor sharing the memory of any object that exports DLPack (NumPy, PyTorch, ...)."""
    if isinstance(obj, Tensor):
        return obj
    device_type, _ = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
    if device_type != 1:
        raise RuntimeError(
            f"from_dlpack: only CPU memory (DLPack device 1) is supported here, got device {device_type}"
        )
    return share_numpy(np.from_dlpack(obj))


def _move(t: Tensor, device) -> Tensor:
    if device is None:
        target = get_default_device()
        return t if target.type == "cpu" else t.to(device=target)
    target = to_device(device)
    return t if target.type == "cpu" else t.to(device=target)


def legacy_tensor(cls, *args, **kwargs) -> Tensor:
    """``ember.Tensor([1, 2])`` (data, as float) or ``ember.Tensor(2, 3)`` (uninitialized sizes)."""
    if kwargs.keys() - {"device"}:
        raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs.keys() - {'device'})}")
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tensor(args[0], dtype=get_default_dtype(), **kwargs)
    if all(isinstance(a, numbers.Integral) for a in args):
        return empty_function(*args, dtype=get_default_dtype(), **kwargs)
    raise TypeError("Tensor(): expected a sequence of data or integer sizes")
