"""Tensor subclasses as PyTorch writes them: ``__torch_dispatch__``, ``__torch_function__``,
``Tensor._make_subclass``, ``Tensor._make_wrapper_subclass`` and ``Tensor.as_subclass``.

Ember's dispatcher calls a subclass's ``__ember_dispatch__(func, types, args, kwargs)`` at its
``python`` level (below autograd), which is where PyTorch calls ``__torch_dispatch__`` with the same
arguments. A subclass that defines ``__torch_dispatch__`` gets an ``__ember_dispatch__`` that calls
it, so it takes part in the dispatcher unchanged. ``__torch_function__`` is PyTorch's protocol at
the level of the Python API; it lives in ``ember.core.function_protocol``.
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.core import dtypes as D
from ember.core import function_protocol as FP
from ember.core.devices import device as to_device
from ember.core.devices import get_default_device
from ember.core.tensor import Tensor, _new, make_wrapper_subclass


def _disabled_torch_dispatch_impl(func, types, args=(), kwargs=None):
    """``Tensor.__torch_dispatch__``: the op runs below the subclass level, as if it had none."""
    return func.call_below("python", *args, **(kwargs or {}))


def _via_torch_dispatch(cls, func, types, args, kwargs):
    return cls.__torch_dispatch__(func, types, args, kwargs)


_via_torch_dispatch.torch_dispatch_adapter = True


def _defines_torch_dispatch(cls: type) -> bool:
    impl = inspect.getattr_static(cls, "__torch_dispatch__", None)
    impl = getattr(impl, "__func__", impl)
    return impl is not None and impl is not _disabled_torch_dispatch_impl


def on_subclass(cls: type) -> None:
    """Called for every new Tensor subclass before the dispatcher looks at it."""
    if _defines_torch_dispatch(cls) and not any("__ember_dispatch__" in vars(k) for k in cls.__mro__):
        cls.__ember_dispatch__ = classmethod(_via_torch_dispatch)
    if FP.is_enabled_subclass(cls):
        FP.activate()


def _make_subclass(cls, data: Tensor, require_grad: bool = False, *args: Any, **kwargs: Any) -> Tensor:
    """An instance of ``cls`` sharing ``data``'s storage and layout, detached from its history."""
    if not isinstance(data, Tensor):
        raise TypeError(f"_make_subclass(): data must be a Tensor, not {type(data).__name__}")
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"_make_subclass(): cls must be a Tensor subclass, got {cls!r}")
    out = _new(cls, data._storage, data._shape, data._stride, data._offset, data.dtype, data._array)
    if require_grad:
        out.requires_grad_(True)
    return out


def _make_wrapper_subclass(
    cls,
    size,
    strides=None,
    storage_offset=None,
    memory_format=None,
    dtype=None,
    layout=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    dispatch_sizes_strides_policy=None,
    dispatch_device: bool = False,
    dispatch_layout: bool = False,
    _extra_dispatch_keys=None,
    storage_size=None,
) -> Tensor:
    """An instance of ``cls`` that reports this metadata and holds no data: every op on it reaches
    the subclass's ``__torch_dispatch__``."""
    if dispatch_sizes_strides_policy is not None:
        raise NotImplementedError("_make_wrapper_subclass: dispatch_sizes_strides_policy is not supported by Ember")
    from ember.core.promotion import get_default_dtype

    dtype = dtype if dtype is not None else get_default_dtype()
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"_make_wrapper_subclass(): dtype must be an ember.dtype, got {dtype!r}")
    dev = to_device(device) if device is not None else get_default_device()
    t = make_wrapper_subclass(cls, tuple(size), dtype, dev, strides, requires_grad)
    if storage_offset:
        t._offset = int(storage_offset)
    return t


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """``self`` viewed as an instance of ``cls``: the same storage, and attached to ``self``'s place in
    the autograd graph through an alias, as in PyTorch."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): cls must be a Tensor subclass, got {cls!r}")
    from ember.core.dispatch import ops

    with FP.DisableTorchFunctionSubclass():
        out = ops.aten.alias.default(self)
    try:
        out.__class__ = cls
    except TypeError:  # cls adds slots: a fresh instance over the same storage
        fresh = _new(cls, out._storage, out._shape, out._stride, out._offset, out.dtype, out._array)
        fresh.__dict__.update(out.__dict__)
        out = fresh
    return out


def install() -> None:
    """Give ``Tensor`` PyTorch's subclassing members and the hook new subclasses go through."""
    Tensor.__torch_function__ = classmethod(FP.default_torch_function)
    Tensor.__torch_dispatch__ = staticmethod(_disabled_torch_dispatch_impl)
    Tensor._make_subclass = staticmethod(_make_subclass)
    Tensor._make_wrapper_subclass = staticmethod(_make_wrapper_subclass)
    Tensor.as_subclass = as_subclass
    Tensor._subclass_hook = staticmethod(on_subclass)
