"""Factories: ``empty``, ``empty_strided``, ``zeros``, ``ones``, ``full``, ``arange``,
``linspace``, ``eye`` and the ``*_like`` forms.

With no tensor among their arguments, these dispatch on their ``device`` argument, or on the default
device (``ember.set_default_device``, ``with ember.device(...)``). ``arange`` computes ``start + i *
step`` in double precision and ``linspace`` from both ends in the result dtype, as PyTorch does.

Each factory has a pure meta function (its checks, result dtype and length, and an allocation)
beside its CPU kernel, which runs the same checks through the same helper and then fills.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.shape.copying import _dense_strides, fill_
from ember.core.devices import get_default_device, to_device
from ember.core.dispatch import define
from ember.core.dtypes_extra import SPECIAL_STORAGE
from ember.core.memory_formats import check_format, memory_format_strides
from ember.core.pointwise import unsupported
from ember.core.promotion import default_complex_dtype, get_default_dtype, scalar_dtype
from ember.core.symbolic import INT_LIKE, sym_max
from ember.core.tensor import Tensor, from_array
from ember.core.tensor import empty as allocate

FACTORY = ("factory", "core")
_OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"


def _device(device):
    return get_default_device() if device is None else to_device(device)


def _dtype(dtype, default=None):
    if dtype is None:
        return default or get_default_dtype()
    return D.to_dtype(dtype)


def _check_sizes(size) -> tuple:
    size = tuple(size)
    for s in size:
        if not isinstance(s, INT_LIKE) or isinstance(s, bool):
            raise TypeError(
                f"empty(): argument 'size' must be a tuple of ints, but found element of type {type(s).__name__}"
            )
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


empty = define(
    f"empty.memory_format(SymInt[] size, *, {_OPTIONS}, MemoryFormat? memory_format=None) -> Tensor", FACTORY
)
empty_strided = define(f"empty_strided(SymInt[] size, SymInt[] stride, *, {_OPTIONS}) -> Tensor", FACTORY)
full = define(f"full(SymInt[] size, Scalar fill_value, *, {_OPTIONS}) -> Tensor", FACTORY)
# zeros, ones, linspace and eye are not core: lowering writes them with full, arange and where
# (their decompositions are in ember._decomp.factories, which explains why they live there).
LOWERED = ("factory",)
zeros = define(f"zeros(SymInt[] size, *, {_OPTIONS}) -> Tensor", LOWERED)
ones = define(f"ones(SymInt[] size, *, {_OPTIONS}) -> Tensor", LOWERED)
arange = define(f"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, {_OPTIONS}) -> Tensor", FACTORY)
linspace = define(f"linspace(Scalar start, Scalar end, int steps, *, {_OPTIONS}) -> Tensor", LOWERED)
eye = define(f"eye.m(int n, int m, *, {_OPTIONS}) -> Tensor", LOWERED)


# -- empty, empty_strided ------------------------------------------------------------------------
# An allocation is all they do; the meta function and the kernel differ only in the device given.


def _empty_strides(size: tuple, memory_format) -> tuple | None:
    if memory_format is None or memory_format == "contiguous_format":
        return None
    if memory_format == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the empty operator")
    return memory_format_strides(size, check_format(memory_format, len(size), "empty"))


@empty.register_meta
def _empty_meta(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None) -> Tensor:
    size = _check_sizes(size)
    return allocate(size, _dtype(dtype), _device(device), _empty_strides(size, memory_format))


@empty.register_kernel("cpu")
def _empty_cpu(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None) -> Tensor:
    size = _check_sizes(size)
    return allocate(size, _dtype(dtype), _device(device), _empty_strides(size, memory_format))


def _check_strided(size, stride) -> tuple[tuple, tuple]:
    size, stride = _check_sizes(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} sizes and {len(stride)} strides")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"empty_strided: negative strides are not supported, got sizes={list(size)} strides={list(stride)}"
        )
    return size, stride


@empty_strided.register_meta
def _empty_strided_meta(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    size, stride = _check_strided(size, stride)
    return allocate(size, _dtype(dtype), _device(device), stride)


@empty_strided.register_kernel("cpu")
def _empty_strided_cpu(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    size, stride = _check_strided(size, stride)
    return allocate(size, _dtype(dtype), _device(device), stride)


# -- full, zeros, ones ------------------------------------------------------------------------------


def _fill_dtype(fill_value) -> D.dtype:
    if isinstance(fill_value, Tensor):
        return fill_value.dtype
    return scalar_dtype(fill_value)


def _full_empty(size, fill_value, dtype, device) -> Tensor:
    return allocate(_check_sizes(size), _dtype(dtype, _fill_dtype(fill_value)), _device(device))


@full.register_meta
def _full_meta(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    out = _full_empty(size, fill_value, dtype, device)
    return fill_.meta(out, fill_value)


@full.register_kernel("cpu")
def _full_cpu(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _fresh_fill(_full_empty(size, fill_value, dtype, device), fill_value)


def _fresh_fill(out: Tensor, value) -> Tensor:
    """A fresh tensor filled with ``value``; its version stays 0, as a new PyTorch tensor's does."""
    fill_(out, value)
    out._storage.version = 0
    return out


def _filled(size, value: int, dtype, device) -> Tensor:
    size, dtype, device = _check_sizes(size), _dtype(dtype), _device(device)
    if device.type == "cpu" and (value == 0 or dtype not in SPECIAL_STORAGE):
        # NumPy's own zeros/ones: the commonest factories, kept cheap. (NumPy's "one" of complex32's
        # pair of halves would be 1+1j, and the storage-only types have none: fill_ handles those.)
        return from_array((np.zeros if value == 0 else np.ones)(size, dtype.np), dtype)
    if device.type == "cpu":
        return _fresh_fill(allocate(size, dtype, device), value)
    return allocate(size, dtype, device)


@zeros.register_meta
@ones.register_meta
def _zeros_meta(size, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return allocate(_check_sizes(size), _dtype(dtype), _device(device))


@zeros.register_kernel("cpu")
def _zeros_cpu(size, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _filled(size, 0, dtype, device)


@ones.register_kernel("cpu")
def _ones_cpu(size, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    return _filled(size, 1, dtype, device)


# -- arange ---------------------------------------------------------------------------------------


def _arange_dtype(*values) -> D.dtype:
    for v in values:
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, float):
            return get_default_dtype()
    return D.int64


def _arange_plan(start, end, step, dtype) -> tuple:
    """The checked bounds, the length and the dtype of ``arange(start, end, step)``."""
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    dtype = _dtype(dtype, _arange_dtype(start, end, step))
    for _name, v in (("start", start), ("end", end)):
        # An int is finite; asking a symbolic one (float() of it) would specialize it.
        if not isinstance(v, INT_LIKE) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if dtype is D.bool_:
        raise unsupported("arange", dtype)
    integral = dtype.category <= D.INTEGRAL
    if integral and dtype is D.int64 and not all(isinstance(v, INT_LIKE) for v in (start, end, step)):
        # PyTorch reads int64 bounds as int64 first (truncating), so a fractional step can vanish.
        if step != 0 and int(step) == 0:
            raise ValueError("step must be nonzero")
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if all(isinstance(v, INT_LIKE) for v in (start, end, step)):
        n = sym_max(0, -((start - end) // step))
    else:
        n = max(0, math.ceil((end - start) / step))
    return start, step, n, dtype


@arange.register_meta
def _arange_meta(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _, _, n, dtype = _arange_plan(start, end, step, dtype)
    return allocate((n,), dtype, _device(device))


@arange.register_kernel("cpu")
def _arange_cpu(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    start, step, n, dtype = _arange_plan(start, end, step, dtype)
    out = allocate((n,), dtype, _device(device))
    if n:
        if dtype.category <= D.INTEGRAL:
            # Other integer types count the length in double but step from the truncated bounds.
            values = int(start) + np.arange(n, dtype=np.int64) * int(step)
        else:
            values = start + np.arange(n, dtype=np.float64) * step
        out._array[...] = values.astype(dtype.np)
    return out


# -- linspace, eye ----------------------------------------------------------------------------------


def _linspace_plan(start, end, steps, dtype) -> tuple:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    complex_bounds = isinstance(start, complex) or isinstance(end, complex)
    dtype = _dtype(dtype, default_complex_dtype() if complex_bounds else None)
    if dtype is D.bool_:
        raise unsupported("linspace", dtype)
    return start, end, dtype


@linspace.register_meta
def _linspace_meta(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _, _, dtype = _linspace_plan(start, end, steps, dtype)
    return allocate((steps,), dtype, _device(device))


@linspace.register_kernel("cpu")
def _linspace_cpu(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    start, end, dtype = _linspace_plan(start, end, steps, dtype)
    out = allocate((steps,), dtype, _device(device))
    if steps == 0:
        return out
    if steps == 1:
        out._array[...] = np.asarray(start).astype(dtype.np)
        return out
    if dtype.category <= D.INTEGRAL:
        work, first, last = np.float64, np.asarray(int(start)), np.asarray(int(end))
    else:
        work = np.float32 if dtype in (D.float16, D.bfloat16) else dtype.np
        first, last = np.asarray(start).astype(dtype.np).astype(work), np.asarray(end).astype(dtype.np).astype(work)
    step = (np.asarray(last, work) - np.asarray(first, work)) / np.asarray(steps - 1, work)
    index = np.arange(steps).astype(work)
    halfway = steps // 2
    values = np.where(
        np.arange(steps) < halfway, first + step * index, last - step * (np.asarray(steps - 1, work) - index)
    )
    out._array[...] = values.astype(dtype.np)
    return out


def _check_eye(n, m) -> None:
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")


@eye.register_meta
def _eye_meta(n, m, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    _check_eye(n, m)
    return allocate((n, m), _dtype(dtype), _device(device))


@eye.register_kernel("cpu")
def _eye_cpu(n, m, *, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    out = _eye_meta(n, m, dtype=dtype, device=device)
    out._array[...] = 0
    k = min(n, m)
    out._array[np.arange(k), np.arange(k)] = 1
    return out


# -- the Python surface -----------------------------------------------------------------------------


def _size_args(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], list | tuple):
        return tuple(size[0])
    return tuple(size)


def _finish(t: Tensor, requires_grad: bool, out: Tensor | None) -> Tensor:
    if out is not None:
        from ember.core.pointwise import resize_out

        if out._shape != t._shape:
            resize_out(out, t._shape)
        from ember.core.aten.shape.copying import copy_

        copy_(out, t)
        return out
    if requires_grad:
        t.requires_grad_(True)
    return t


@public("empty")
def empty_function(
    *size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, memory_format=None
):
    if memory_format is not None:
        return _finish(
            empty(_size_args(size), dtype=dtype, device=device, memory_format=memory_format), requires_grad, out
        )
    return _finish(empty(_size_args(size), dtype=dtype, device=device), requires_grad, out)


@public("zeros")
def zeros_function(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return _finish(zeros(_size_args(size), dtype=dtype, device=device), requires_grad, out)


@public("ones")
def ones_function(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return _finish(ones(_size_args(size), dtype=dtype, device=device), requires_grad, out)


@public("full")
def full_function(
    size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    return _finish(full(tuple(size), fill_value, dtype=dtype, device=device), requires_grad, out)


@public("empty_strided")
def empty_strided_function(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    return _finish(empty_strided(tuple(size), tuple(stride), dtype=dtype, device=device), requires_grad, None)


@public("arange")
def arange_function(
    start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    if end is None:
        start, end = 0, start
    return _finish(arange(start, end, step, dtype=dtype, device=device), requires_grad, out)


@public("linspace")
def linspace_function(
    start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    return _finish(linspace(start, end, steps, dtype=dtype, device=device), requires_grad, out)


@public("eye")
def eye_function(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return _finish(eye(n, n if m is None else m, dtype=dtype, device=device), requires_grad, out)


def _like(input: Tensor, dtype, device, memory_format) -> tuple:
    dtype = input.dtype if dtype is None else D.to_dtype(dtype)
    device = input.device if device is None else to_device(device)
    layout = check_format(memory_format, input.ndim, "empty_like")
    strides = _dense_strides(input) if layout == "preserve_format" else memory_format_strides(input._shape, layout)
    return dtype, device, strides


_LIKE = f"*, {_OPTIONS}, MemoryFormat? memory_format=None"
# Each decomposes into the factory of its name: the code generator sees that one.
empty_like_op = define(f"empty_like(Tensor self, {_LIKE}) -> Tensor", ("factory",))
# full_like is core, as in PyTorch: zeros_like and ones_like lower to it (ember._decomp.factories).
full_like_op = define(f"full_like(Tensor self, Scalar fill_value, {_LIKE}) -> Tensor", ("factory", "core"))
zeros_like_op = define(f"zeros_like(Tensor self, {_LIKE}) -> Tensor", ("factory",))
ones_like_op = define(f"ones_like(Tensor self, {_LIKE}) -> Tensor", ("factory",))


# Decompositions only: they allocate with ``empty_strided`` and fill with ``fill_``, so every device
# with those two kernels has the ``*_like`` ops too, and a mode sees ``zeros_like`` as one op.
@empty_like_op.register_decomposition
def _empty_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dtype, device, strides = _like(self, dtype, device, memory_format)
    return empty_strided(self._shape, strides, dtype=dtype, device=device)


@full_like_op.register_decomposition
def _full_like(self, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    out = _empty_like(self, dtype=dtype, device=device, memory_format=memory_format)
    return _fresh_fill(out, fill_value)


@full_like_op.register_meta
def _full_like_meta(self, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # A core op needs a meta function of its own: the decomposition's result, from metadata alone.
    dtype, device, strides = _like(self, dtype, device, memory_format)
    return allocate(self._shape, dtype, device, strides)


@zeros_like_op.register_decomposition
def _zeros_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _full_like(self, 0, dtype=dtype, device=device, memory_format=memory_format)


@ones_like_op.register_decomposition
def _ones_like(self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _full_like(self, 1, dtype=dtype, device=device, memory_format=memory_format)


@public("empty_like")
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = empty_like_op(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(out, requires_grad, None)


@public("full_like")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = full_like_op(input, fill_value, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(out, requires_grad, None)


@public("zeros_like")
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = zeros_like_op(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(out, requires_grad, None)


@public("ones_like")
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    out = ones_like_op(input, dtype=dtype, device=device, memory_format=memory_format)
    return _finish(out, requires_grad, None)
