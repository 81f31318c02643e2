"""``hash_tensor``: a cheap fingerprint of a tensor's values, reduced over some dims or all of them.

Mode 0, the only mode PyTorch defines, widens every element to its 64-bit equivalent (floats to
float64, signed integers and bool to int64, uint8 to uint64), reads those 64 bits as an unsigned
integer and xors them together. The result is always ``uint64``. Reducing over a dim of size 0 is
refused, as PyTorch refuses it (its reduction has no identity element declared). Integer results
are exact, so the value matches PyTorch's bit for bit.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name
from ember.core.reduction import fit_out, plan, write_out
from ember.core.tensor import Tensor, empty, from_array

hash_tensor = define(
    "hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor", ("core", "reduction")
)
hash_tensor_out = define(
    "hash_tensor.out(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0, Tensor(a!) out) -> Tensor(a!)",
    ("out",),
)

_HASHABLE = (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.bfloat16, D.float32, D.float64)


def _check(self: Tensor, dim, mode: int):
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if self.dtype not in _HASHABLE:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{type_name(self.dtype)}'")
    dims = [dim] if isinstance(dim, int) else list(dim or [])
    p = plan(self, dims, False)  # normalizes the dims (IndexError out of range)
    if numel(self._shape) == 0 and not dims:
        raise RuntimeError(
            "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    for axis in p.axes:
        if self._shape[axis] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {axis} to have non-zero size.")
    return dims


def _bits(self: Tensor) -> np.ndarray:
    """Each element as the 64 bits of its widened value, read as uint64."""
    array = self._array
    if self.dtype.category == D.FLOATING:
        return np.asarray(array, np.float64).view(np.uint64)
    if self.dtype is D.uint8:
        return np.asarray(array, np.uint64)
    return np.asarray(array, np.int64).view(np.uint64)


@hash_tensor.register_meta
def _hash_meta(self: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0) -> Tensor:
    dims = _check(self, dim, mode)
    return empty(plan(self, dims, keepdim).shape, D.uint64, self.device)


@hash_tensor.register_kernel("cpu")
def _hash_cpu(self: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0) -> Tensor:
    dims = _check(self, dim, mode)
    p = plan(self, dims, keepdim)
    hashed = np.bitwise_xor.reduce(_bits(self), axis=p.axes, keepdims=keepdim) if p.axes else _bits(self)
    return from_array(np.array(hashed, np.uint64, order="C").reshape(p.shape), D.uint64)


@hash_tensor_out.register_meta
def _hash_out_meta(self: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0, out: Tensor) -> Tensor:
    return fit_out(out, _hash_meta(self, dim, keepdim=keepdim, mode=mode))


@hash_tensor_out.register_kernel("cpu")
def _hash_out_cpu(self: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0, out: Tensor) -> Tensor:
    result = _hash_cpu(self, dim, keepdim=keepdim, mode=mode)
    if out.dtype is not D.uint64:
        raise RuntimeError(f"Expected out tensor to have dtype UInt64, but got {type_name(out.dtype)} instead")
    return write_out(out, result)


@public("hash_tensor")
def _hash_tensor_function(
    input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0, out: Tensor | None = None
) -> Tensor:
    """The xor of each element's 64 bits (mode 0), over ``dim`` or over every element; a ``uint64`` tensor."""
    dims = [] if dim is None else dim
    if out is not None:
        return hash_tensor_out(input, dims, keepdim=keepdim, mode=mode, out=out)
    return hash_tensor(input, dims, keepdim=keepdim, mode=mode)


@method("hash_tensor")
def _hash_tensor_method(self: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    return hash_tensor(self, [] if dim is None else dim, keepdim=keepdim, mode=mode)
