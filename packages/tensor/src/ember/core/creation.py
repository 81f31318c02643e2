"""Tensors from Python data, NumPy arrays and DLPack: ``tensor``, ``as_tensor``, ``from_numpy``,
``from_dlpack``, and the legacy ``Tensor(...)`` constructor.

Dtype inference follows PyTorch: Python bools give ``bool``, ints ``int64``, floats the default
dtype, complex numbers the default complex dtype; NumPy data keeps its dtype.
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import get_default_device, to_device
from ember.core.promotion import default_complex_dtype, get_default_dtype
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


def _to_array(data, dtype: D.dtype | None) -> tuple[np.ndarray, D.dtype]:
    if isinstance(data, Tensor):
        array = data._require_data("read the values")
        inferred = data.dtype
    elif isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
        inferred = D.from_numpy_dtype(array.dtype)
    else:
        inferred = _infer_python_dtype(data)
        if inferred is None:  # lists holding tensors or arrays
            items = [_to_array(x, None)[0] for x in data] if isinstance(data, list | tuple) else [data]
            array = np.stack(items) if items else np.empty(0)
            inferred = D.from_numpy_dtype(array.dtype)
        else:
            try:
                array = np.array(data, dtype=(dtype or inferred).np if (dtype or inferred) is not D.bfloat16 else None)
            except ValueError as error:
                raise ValueError(f"expected a rectangular nested sequence of numbers: {error}") from None
    target = dtype or inferred
    if array.dtype != target.np:
        array = array.astype(target.np)
    return array, target


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data``."""
    dtype = D.to_dtype(dtype) if dtype is not None else None
    array, dtype = _to_array(data, dtype)
    result = from_array(np.array(array, copy=True, order="C"), dtype)
    result = _move(result, device)
    if requires_grad:
        result.requires_grad_(True)
    return result


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory when it already is one of the right dtype and device."""
    dtype = D.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        return data.to(dtype=dtype or data.dtype, device=device or data.device)
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype) and device in (None, "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory; changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return share_numpy(array)


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
    from ember.core.api import functions

    if kwargs.keys() - {"device"}:
        raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs.keys() - {'device'})}")
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tensor(args[0], dtype=get_default_dtype(), **kwargs)
    if all(isinstance(a, numbers.Integral) for a in args):
        return functions["empty"](*args, dtype=get_default_dtype(), **kwargs)
    raise TypeError("Tensor(): expected a sequence of data or integer sizes")
