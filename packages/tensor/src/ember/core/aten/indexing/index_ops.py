"""Ops that pick or write whole slices by a vector of positions along one dimension: ``index_select``,
``index_add``, ``index_copy``, ``index_fill``; and by positions into the flattened tensor: ``take``,
``put_``. ``take_along_dim`` is ``gather`` after broadcasting (``aten/indexing/scatter_gather.py``).

Kernels move the indexed dimension to the front (a NumPy view) and work on rows: ``np.take`` to read,
assignment to copy, and ``advanced_indexing.add_at`` (sort and segment sums) to accumulate. Which
ops accept negative positions follows PyTorch: index_fill, take and put wrap them; the others refuse.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.indexing.advanced_indexing import add_at
from ember.core.aten.indexing.index_forms import (
    INDEX_NAMES,
    check_index_dtype,
    compute_dtype,
    define_writing,
    fit_out,
    out_of_bounds,
    write_out,
)
from ember.core.aten.shape.copying import checked_scalar
from ember.core.dispatch import define
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor, empty, from_array

LONG_OR_INT = (D.int64, D.int32)


def _rows(array: np.ndarray, dim: int) -> np.ndarray:
    """A view with ``dim`` first (a 0-dim tensor as one row)."""
    return array.reshape(1) if array.ndim == 0 else np.moveaxis(array, dim, 0)


def _vector(index: Tensor, name: str) -> None:
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")


def _positions(index: Tensor) -> np.ndarray:
    return index._require_data("index with it").reshape(-1)


# -- index_select -----------------------------------------------------------------------------------

index_select = define("index_select(Tensor self, int dim, Tensor index) -> Tensor", ("core",))
index_select_out = define(
    "index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)", ("out", "core")
)


def _select_shape(self: Tensor, dim: int, index: Tensor) -> tuple[int, tuple]:
    check_index_dtype(index, "index_select(): Expected dtype int32 or int64 for index", LONG_OR_INT)
    _vector(index, "index_select")
    dim = normalize_dim(dim, self.ndim)
    if self.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        return dim, ()
    return dim, self._shape[:dim] + (index.numel(),) + self._shape[dim + 1 :]


@index_select.register_kernel("cpu")
def _index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    dim, _shape = _select_shape(self, dim, index)
    positions = _positions(index)
    size = self._shape[dim] if self.ndim else 1
    bad = out_of_bounds(positions, size)
    if bad is not None:
        if dim == 1:  # PyTorch's kernel for dim 1 has its own words
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
        raise IndexError("index out of range in self")
    if self.ndim == 0:
        return from_array(self._array.reshape(1)[positions].reshape(()), self.dtype)
    return from_array(np.take(self._array, positions, axis=dim), self.dtype)


@index_select.register_meta
def _index_select_meta(self: Tensor, dim: int, index: Tensor) -> Tensor:
    return empty(_select_shape(self, dim, index)[1], self.dtype, self.device)


@index_select_out.register_kernel("cpu")
def _index_select_out(self: Tensor, dim: int, index: Tensor, *, out: Tensor) -> Tensor:
    return write_out(out, index_select(self, dim, index))


@index_select_out.register_meta
def _index_select_out_meta(self: Tensor, dim: int, index: Tensor, *, out: Tensor) -> Tensor:
    return fit_out(out, _index_select_meta(self, dim, index))


# -- index_add, index_copy, index_fill ----------------------------------------------------------------


def _check_source(name: str, self: Tensor, dim: int, index: Tensor, source: Tensor, count_error) -> int:
    if not isinstance(source, Tensor):
        raise TypeError(f"{name}(): argument 'source' must be Tensor, not {type(source).__name__}")
    dim = normalize_dim(dim, self.ndim)
    if source.ndim == 0 and index.numel() != 1:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = source._shape[dim] if source.ndim else 1
    if index.numel() != n:
        if name == "index_add_":
            raise RuntimeError(
                f"index_add_(): Number of indices ({index.numel()}) should be equal to source.size(dim): ({n}), "
                f"for dim: {dim}"
            )
        raise count_error(f"{name}(): Number of indices ({index.numel()}) should be equal to source.size(dim) ({n})")
    return dim


def _check_index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> None:
    check_index_dtype(index, "index_add_(): Expected dtype int32/int64 for index but got: {dtype}", LONG_OR_INT)
    _vector(index, "index_add_")
    dim = _check_source("index_add_", self, dim, index, source, RuntimeError)
    if source.dtype is not self.dtype:
        raise RuntimeError(
            f"index_add_(): self ({INDEX_NAMES[self.dtype]}) and source ({INDEX_NAMES[source.dtype]}) must have the "
            "same scalar type"
        )
    mismatch = source.ndim != self.ndim
    mismatch = mismatch or any(
        s != t for d, (s, t) in enumerate(zip(self._shape, source._shape, strict=False)) if d != dim
    )
    if mismatch:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
            f"{list(self._shape)} source.shape = {list(source._shape)}"
        )
    if self.dtype.category <= D.INTEGRAL and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> None:
    dim = normalize_dim(dim, self.ndim)
    positions = _positions(index)
    size = self._shape[dim] if self.ndim else 1
    bad = out_of_bounds(positions, size)
    if bad is not None:
        if self.ndim <= 1 or alpha != 1 or self.dtype is D.bool_:  # PyTorch's slower kernel says it so
            raise IndexError("index out of range in self")
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    values = _rows(source._array, dim)
    if alpha != 1:
        values = values.astype(compute_dtype(self.dtype)) * np.asarray(alpha).astype(compute_dtype(self.dtype))
    add_at(_rows(self._array, dim), (positions,), values, wide=True)


index_add, index_add_, index_add_out = define_writing(
    "index_add",
    "",
    "Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1",
    _index_add,
    _check_index_add,
    out_overload="out",
)


def _check_index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    check_index_dtype(index, "index_copy_(): Expected a long tensor for index, but got {dtype}")
    _vector(index, "index_copy_")
    dim = _check_source("index_copy_", self, dim, index, source, IndexError)
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{INDEX_NAMES[self.dtype]} and (source) {INDEX_NAMES[source.dtype]}"
        )
    for d in range(max(self.ndim, source.ndim)):
        s = self._shape[d] if d < self.ndim else 1
        t = source._shape[d] if d < source.ndim else 1
        if d != dim and s != t:
            raise RuntimeError(
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: "
                f"{s} at dimension {d} and source slice shape: {t} at dimension {d}."
            )


def _index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    dim = normalize_dim(dim, self.ndim)
    positions = _positions(index)
    size = self._shape[dim] if self.ndim else 1
    bad = out_of_bounds(positions, size)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {dim} with size {size}")
    _rows(self._array, dim)[positions] = _rows(source._array, dim)


index_copy, index_copy_, index_copy_out = define_writing(
    "index_copy", "", "Tensor self, int dim, Tensor index, Tensor source", _index_copy, _check_index_copy, "out"
)


def _check_index_fill(self: Tensor, dim: int, index: Tensor, value) -> None:
    check_index_dtype(index, "index_fill_(): Expected dtype int64 for index.", error=IndexError)
    normalize_dim(dim, self.ndim)
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)."
        )
    if isinstance(value, complex) and self.dtype.category != D.COMPLEX:
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")


def _index_fill(self: Tensor, dim: int, index: Tensor, value) -> None:
    dim = normalize_dim(dim, self.ndim)
    positions = _positions(index)
    size = self._shape[dim] if self.ndim else 1
    bad = out_of_bounds(positions, size, negative=True)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    if isinstance(value, Tensor):
        value = value.item()
    _rows(self._array, dim)[positions] = checked_scalar(value, self.dtype)


index_fill, index_fill_, _ = define_writing(
    "index_fill",
    "int_Scalar",
    "Tensor self, int dim, Tensor index, Scalar value",
    _index_fill,
    _check_index_fill,
    preserve=True,
    overlap_check=False,
)
index_fill_t, index_fill_t_, _ = define_writing(
    "index_fill",
    "int_Tensor",
    "Tensor self, int dim, Tensor index, Tensor value",
    _index_fill,
    _check_index_fill,
    preserve=True,
    overlap_check=False,
)


# -- take and put_ -------------------------------------------------------------------------------------

take = define("take(Tensor self, Tensor index) -> Tensor", ("core",))
take_out = define("take.out(Tensor self, Tensor index, *, Tensor(a!) out) -> Tensor(a!)", ("out", "core"))


def _flat_bounds(positions: np.ndarray, n: int) -> None:
    bad = out_of_bounds(positions, n, negative=True)
    if bad is not None or (n == 0 and positions.size):
        bad = int(positions.flat[0]) if bad is None else bad
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


@take.register_kernel("cpu")
def _take(self: Tensor, index: Tensor) -> Tensor:
    check_index_dtype(index, "take(): Expected a long tensor for index, but got {dtype}")
    positions = index._require_data("index with it")
    _flat_bounds(positions, self.numel())
    return from_array(np.take(self._array.reshape(-1), positions), self.dtype)


@take.register_meta
def _take_meta(self: Tensor, index: Tensor) -> Tensor:
    check_index_dtype(index, "take(): Expected a long tensor for index, but got {dtype}")
    return empty(index._shape, self.dtype, self.device)


@take_out.register_kernel("cpu")
def _take_out(self: Tensor, index: Tensor, *, out: Tensor) -> Tensor:
    return write_out(out, take(self, index))


@take_out.register_meta
def _take_out_meta(self: Tensor, index: Tensor, *, out: Tensor) -> Tensor:
    return fit_out(out, _take_meta(self, index))


def _check_put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> None:
    check_index_dtype(index, "put_(): Expected a long tensor for index, but got {dtype}")
    if not isinstance(source, Tensor):
        raise TypeError(f"put_(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{INDEX_NAMES[self.dtype]} and source.dtype = {INDEX_NAMES[source.dtype]}"
        )
    if source.numel() != index.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got source.numel() = "
            f"{source.numel()}, index.numel() = {index.numel()}"
        )


def _put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> None:
    positions = _positions(index)
    _flat_bounds(positions, self.numel())
    data = self._array
    flat = data.reshape(-1) if data.flags.c_contiguous else data.flatten()
    values = source._array.reshape(-1)
    if accumulate:
        add_at(flat, (positions,), values)
    else:
        flat[positions] = values
    if not data.flags.c_contiguous:
        data[...] = flat.reshape(data.shape)


put, put_, _ = define_writing(
    "put", "", "Tensor self, Tensor index, Tensor source, bool accumulate=False", _put, _check_put, preserve=True
)


# -- the Python surface -----------------------------------------------------------------------------


def _out_call(op, out_op, *args, out=None, **kwargs):
    return op(*args, **kwargs) if out is None else out_op(*args, out=out, **kwargs)


@public("index_select")
def index_select_function(input, dim, index, *, out=None) -> Tensor:
    return _out_call(index_select, index_select_out, input, dim, index, out=out)


@method("index_select")
def _index_select_method(self, dim, index) -> Tensor:
    return index_select(self, dim, index)


@public("index_add")
def index_add_function(input, dim, index, source, *, alpha=1, out=None) -> Tensor:
    return _out_call(index_add, index_add_out, input, dim, index, source, alpha=alpha, out=out)


@method("index_add")
def _index_add_method(self, dim, index, source, *, alpha=1) -> Tensor:
    return index_add(self, dim, index, source, alpha=alpha)


@method("index_add_")
def _index_add_inplace(self, dim, index, source, *, alpha=1) -> Tensor:
    return index_add_(self, dim, index, source, alpha=alpha)


@public("index_copy")
def index_copy_function(input, dim, index, source, *, out=None) -> Tensor:
    return _out_call(index_copy, index_copy_out, input, dim, index, source, out=out)


@method("index_copy")
def _index_copy_method(self, dim, index, source) -> Tensor:
    return index_copy(self, dim, index, source)


@method("index_copy_")
def _index_copy_inplace(self, dim, index, source) -> Tensor:
    return index_copy_(self, dim, index, source)


@public("index_fill")
def index_fill_function(input, dim, index, value) -> Tensor:
    return (index_fill_t if isinstance(value, Tensor) else index_fill)(input, dim, index, value)


@method("index_fill")
def _index_fill_method(self, dim, index, value) -> Tensor:
    return (index_fill_t if isinstance(value, Tensor) else index_fill)(self, dim, index, value)


@method("index_fill_")
def _index_fill_inplace(self, dim, index, value) -> Tensor:
    return (index_fill_t_ if isinstance(value, Tensor) else index_fill_)(self, dim, index, value)


@public("take")
def take_function(input, index, *, out=None) -> Tensor:
    return _out_call(take, take_out, input, index, out=out)


@method("take")
def _take_method(self, index) -> Tensor:
    return take(self, index)


@method("put_")
def _put_inplace(self, index, source, accumulate: bool = False) -> Tensor:
    return put_(self, index, source, accumulate)


@method("put")
def _put_method(self, index, source, accumulate: bool = False) -> Tensor:
    return put(self, index, source, accumulate)


@public("put")
def put_function(input, index, source, accumulate: bool = False) -> Tensor:
    return put(input, index, source, accumulate)
