"""The legacy tensor types: ``ember.FloatTensor``, ``ember.LongTensor``, ... and
``set_default_tensor_type``.

As in PyTorch, each is a class that no tensor is an instance of by construction: calling it builds
a plain ``Tensor`` of its dtype (``FloatTensor(2, 3)`` uninitialized, ``FloatTensor([1, 2])`` from
data, ``FloatTensor(t)`` an alias of a tensor of the same type), and ``isinstance(t, FloatTensor)``
asks whether ``t`` is a CPU tensor of that dtype. Their metaclass is ``tensortype``, which carries
``dtype``, ``is_cuda`` and ``is_sparse`` as PyTorch's does.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

from ember.core import dtypes as D
from ember.core.devices import device as _device


class tensortype(type):
    """The metaclass of the legacy tensor types."""

    dtype: D.dtype
    is_cuda = False
    is_sparse = False

    def __instancecheck__(cls, instance: Any) -> bool:
        from ember.core.tensor import Tensor

        return isinstance(instance, Tensor) and instance.dtype is cls.dtype and instance.device.type == "cpu"

    def __call__(cls, *args: Any, **kwargs: Any):
        return _construct(cls, args, kwargs)


def _construct(cls: tensortype, args: tuple, kwargs: dict):
    from ember.core.creation import empty_function, tensor
    from ember.core.tensor import Size, Tensor

    extra = kwargs.keys() - {"device"}
    if extra:
        raise TypeError(f"new() received an invalid combination of arguments: unexpected keywords {sorted(extra)}")
    if kwargs.get("device") is not None:
        dev = _device(kwargs["device"])
        if dev.type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {dev.type} was passed")
    if not args:
        return empty_function(0, dtype=cls.dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not cls.dtype or other.device.type != "cpu":
            raise TypeError(f"expected {cls.__name__} (got {D.legacy_type_name(other.dtype, other.device.type)})")
        return other.detach() if other.requires_grad else other.view(other.shape)
    if len(args) == 1 and isinstance(args[0], Size):
        return empty_function(*args[0], dtype=cls.dtype)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return empty_function(*args, dtype=cls.dtype)
    if len(args) == 1 and not isinstance(args[0], (str, bytes)):
        return tensor(args[0], dtype=cls.dtype)
    raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")


def _make(d: D.dtype) -> tensortype:
    name = f"{D.SCALAR_TYPE_NAMES[d]}Tensor"
    return tensortype(name, (), {"dtype": d, "__module__": "ember", "__qualname__": name})


LEGACY_TYPES: dict[str, tensortype] = {f"{D.SCALAR_TYPE_NAMES[d]}Tensor": _make(d) for d in D.ALL}


def dtype_of_type_name(name: str) -> D.dtype | None:
    """'torch.FloatTensor' or 'ember.FloatTensor' -> float32 (the CPU names only); None if unknown."""
    prefix, _, short = name.rpartition(".")
    if prefix not in ("torch", "ember") or short not in LEGACY_TYPES:
        return None
    return LEGACY_TYPES[short].dtype


def set_default_tensor_type(t: tensortype | str) -> None:
    """Deprecated in PyTorch 2.1 (use ``set_default_dtype``): set the default dtype from a legacy type."""
    from ember.core.promotion import set_default_dtype

    warnings.warn(
        "ember.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use ember.set_default_dtype() "
        "and ember.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if isinstance(t, str):
        d = dtype_of_type_name(t)
        if d is None:
            raise TypeError(f"invalid type: '{t}'")
    elif isinstance(t, tensortype):
        d = t.dtype
    else:
        raise TypeError(f"invalid type object: only floating-point types are supported as the default type, got {t}")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(d)
