"""Ops steered by a bool mask or by where a tensor is nonzero: ``masked_fill``, ``masked_scatter``,
``masked_select``, ``nonzero`` (and ``argwhere``, ``nonzero_static`` with its given size, and ``where(condition)`` through
``nonzero(..., as_tuple=True)``).

The mask broadcasts against ``self`` (the in-place forms only towards ``self``'s shape). How many
elements ``masked_select`` and ``nonzero`` return depends on the data, so their meta kernels raise
NotImplementedError, as PyTorch's do. ``nonzero`` lays its ``(n, ndim)`` result out column by column
(strides ``(1, n)``), as PyTorch's CPU kernel does.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.indexing.index_forms import write_out
from ember.core.aten.shape.copying import checked_scalar
from ember.core.devices import CPU
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes
from ember.core.pointwise import check_no_internal_overlap
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, empty, from_array

# -- masked_fill --------------------------------------------------------------------------------------

masked_fill_s = define("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", ("core",))
masked_fill_t = define("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", ("core",))
masked_fill_s_ = define(
    "masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", ("inplace", "core")
)
masked_fill_t_ = define(
    "masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)", ("inplace", "core")
)


def _check_mask(name: str, mask, byte_name: str) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {byte_name}")


def _check_fill(mask: Tensor, value) -> None:
    _check_mask("masked_fill_", mask, D.CPP_TYPE_NAMES.get(mask.dtype, mask.dtype.name))
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)."
        )


def _check_inplace_shape(self: Tensor, other_shape: tuple) -> None:
    shape = broadcast_shapes(self._shape, other_shape)
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")


def _check_fill_inplace(self: Tensor, mask: Tensor) -> None:
    _check_inplace_shape(self, mask._shape)
    if any(st == 0 and n > 1 for n, st in zip(self._shape, self._stride, strict=True)):
        warnings.warn(  # PyTorch still fills an expanded tensor, with this warning
            "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this "
            "operation. This also applies to advanced indexing e.g. tensor[mask] = scalar",
            UserWarning,
            stacklevel=4,
        )


def _masked_fill_inplace(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_fill(mask, value)
    if isinstance(value, Tensor):
        value = value.item()
    _check_fill_inplace(self, mask)
    np.copyto(self._array, checked_scalar(value, self.dtype), where=np.broadcast_to(mask._array, self._shape))
    self._storage.version += 1
    return self


def _masked_fill_inplace_meta(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_fill(mask, value)
    _check_fill_inplace(self, mask)
    return self


def _masked_fill(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_fill(mask, value)
    result = empty(broadcast_shapes(self._shape, mask._shape), self.dtype, self.device)
    np.copyto(result._array, self._array)
    return _masked_fill_inplace(result, mask, value)


def _masked_fill_meta(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_fill(mask, value)
    return empty(broadcast_shapes(self._shape, mask._shape), self.dtype, self.device)


for _op in (masked_fill_s, masked_fill_t):
    _op.register_kernel("cpu")(_masked_fill)
    _op.register_meta(_masked_fill_meta)
for _op in (masked_fill_s_, masked_fill_t_):
    _op.register_kernel("cpu")(_masked_fill_inplace)
    _op.register_meta(_masked_fill_inplace_meta)


# -- masked_scatter ------------------------------------------------------------------------------------

masked_scatter = define("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", ("core",))
masked_scatter_ = define(
    "masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)", ("inplace", "core")
)


def _check_scatter(self: Tensor, mask: Tensor, source: Tensor) -> None:
    _check_mask("masked_scatter_", mask, D.SCALAR_TYPE_NAMES.get(mask.dtype, mask.dtype.name))
    if not isinstance(source, Tensor):
        raise TypeError(f"masked_scatter_(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "masked_scatter_: expected self and source to have same dtypes but got"
            f"{D.SCALAR_TYPE_NAMES[self.dtype]} and {D.SCALAR_TYPE_NAMES[source.dtype]}"
        )


def _check_scatter_inplace(self: Tensor, mask: Tensor, source: Tensor) -> None:
    _check_scatter(self, mask, source)
    _check_inplace_shape(self, mask._shape)
    check_no_internal_overlap(self)


@masked_scatter_.register_meta
def _masked_scatter_inplace_meta(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    _check_scatter_inplace(self, mask, source)
    return self


@masked_scatter_.register_kernel("cpu")
def _masked_scatter_inplace(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    _check_scatter_inplace(self, mask, source)
    where = np.broadcast_to(mask._array, self._shape)
    n = int(np.count_nonzero(where))
    if n > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    self._array[where] = source._array.reshape(-1)[:n]
    self._storage.version += 1
    return self


@masked_scatter.register_meta
def _masked_scatter_meta(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    _check_scatter(self, mask, source)
    return empty(broadcast_shapes(self._shape, mask._shape), self.dtype, self.device)


@masked_scatter.register_kernel("cpu")
def _masked_scatter(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    _check_scatter(self, mask, source)
    result = empty(broadcast_shapes(self._shape, mask._shape), self.dtype, self.device)
    np.copyto(result._array, self._array)
    return _masked_scatter_inplace(result, mask, source)


# -- masked_select and nonzero (data-dependent shapes) -------------------------------------------------------

_DATA = "data_dependent_output"
masked_select = define("masked_select(Tensor self, Tensor mask) -> Tensor", ("core", _DATA))
masked_select_out = define(
    "masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)", ("out", "core", _DATA)
)
nonzero = define("nonzero(Tensor self) -> Tensor", ("core", _DATA))
nonzero_out = define("nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", ("out", "core", _DATA))
nonzero_numpy = define("nonzero_numpy(Tensor self) -> Tensor[]", (_DATA,))
argwhere = define("argwhere(Tensor self) -> Tensor", (_DATA,))
nonzero_static = define("nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor", ("core",))


def _data_dependent(name: str):
    def meta(*args, **kwargs):
        raise NotImplementedError(
            f"aten::{name} has a data-dependent output shape: a meta tensor has no data to compute it from"
        )

    return meta


@masked_select.register_kernel("cpu")
def _masked_select(self: Tensor, mask: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(self._shape, mask._shape)
    data = np.broadcast_to(self._array, shape)
    return from_array(np.ascontiguousarray(data[np.broadcast_to(mask._array, shape)]), self.dtype)


@nonzero.register_kernel("cpu")
def _nonzero(self: Tensor) -> Tensor:
    data = self._array
    if data.ndim == 0:
        out = empty((1 if data != 0 else 0, 0), D.int64, CPU, (1, 1))
        return out
    columns = np.nonzero(data)
    n = columns[0].size
    if n == 0:
        return empty((0, data.ndim), D.int64, CPU, (1, 1))
    # one column after another in memory: the (ndim, n) stack seen transposed
    return from_array(np.stack(columns).astype(np.int64, copy=False), D.int64).t()


@nonzero_numpy.register_kernel("cpu")
def _nonzero_numpy(self: Tensor) -> list[Tensor]:
    data = self._array.reshape(1) if self.ndim == 0 else self._array
    return [from_array(np.ascontiguousarray(c, np.int64), D.int64) for c in np.nonzero(data)]


def _check_static(self: Tensor, size) -> None:
    if not isinstance(size, INT_LIKE) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")


@nonzero_static.register_kernel("cpu")
def _nonzero_static(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    _check_static(self, size)
    out = np.full((size, self.ndim), fill_value, np.int64)
    found = np.argwhere(self._array)[:size]
    out[: len(found)] = found
    return from_array(out, D.int64)


@nonzero_static.register_meta
def _nonzero_static_meta(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    # The size is given, so the meta tensor needs no data; laid out as the CPU result (PyTorch's meta differs).
    _check_static(self, size)
    return empty((size, self.ndim), D.int64, self.device)


@argwhere.register_decomposition
def _argwhere(self: Tensor) -> Tensor:
    return nonzero(self)


for _op, _name in ((masked_select, "masked_select"), (nonzero, "nonzero"), (nonzero_numpy, "nonzero_numpy")):
    _op.register_meta(_data_dependent(_name))


@masked_select_out.register_kernel("cpu")
def _masked_select_out(self: Tensor, mask: Tensor, *, out: Tensor) -> Tensor:
    return write_out(out, masked_select(self, mask))


@nonzero_out.register_kernel("cpu")
def _nonzero_out(self: Tensor, *, out: Tensor) -> Tensor:
    return write_out(out, nonzero(self))


masked_select_out.register_meta(_data_dependent("masked_select"))
nonzero_out.register_meta(_data_dependent("nonzero"))


# -- the Python surface ---------------------------------------------------------------------------------


def _fill_op(value, scalar_op, tensor_op):
    return tensor_op if isinstance(value, Tensor) else scalar_op


@public("masked_fill")
def masked_fill_function(input, mask, value) -> Tensor:
    return _fill_op(value, masked_fill_s, masked_fill_t)(input, mask, value)


@method("masked_fill")
def _masked_fill_method(self, mask, value) -> Tensor:
    return _fill_op(value, masked_fill_s, masked_fill_t)(self, mask, value)


@method("masked_fill_")
def _masked_fill_inplace_method(self, mask, value) -> Tensor:
    return _fill_op(value, masked_fill_s_, masked_fill_t_)(self, mask, value)


@public("masked_scatter")
def masked_scatter_function(input, mask, source) -> Tensor:
    return masked_scatter(input, mask, source)


@method("masked_scatter")
def _masked_scatter_method(self, mask, source) -> Tensor:
    return masked_scatter(self, mask, source)


@method("masked_scatter_")
def _masked_scatter_inplace_method(self, mask, source) -> Tensor:
    return masked_scatter_(self, mask, source)


@public("masked_select")
def masked_select_function(input, mask, *, out=None) -> Tensor:
    return masked_select(input, mask) if out is None else masked_select_out(input, mask, out=out)


@method("masked_select")
def _masked_select_method(self, mask) -> Tensor:
    return masked_select(self, mask)


@public("nonzero")
def nonzero_function(input, *, out=None, as_tuple: bool = False):
    if not isinstance(input, Tensor):
        raise TypeError(f"nonzero(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if as_tuple:
        if out is not None:
            raise RuntimeError("nonzero(): out= is not supported with as_tuple=True")
        return tuple(nonzero_numpy(input))
    return nonzero(input) if out is None else nonzero_out(input, out=out)


@method("nonzero")
def _nonzero_method(self, *, as_tuple: bool = False):
    return nonzero_function(self, as_tuple=as_tuple)


@public("nonzero_static")
def nonzero_static_function(input, *, size: int, fill_value: int = -1) -> Tensor:
    return nonzero_static(input, size=size, fill_value=fill_value)


@method("nonzero_static")
def _nonzero_static_method(self, *, size: int, fill_value: int = -1) -> Tensor:
    return nonzero_static(self, size=size, fill_value=fill_value)


@public("argwhere")
def argwhere_function(input) -> Tensor:
    return argwhere(input)


@method("argwhere")
def _argwhere_method(self) -> Tensor:
    return argwhere(self)
