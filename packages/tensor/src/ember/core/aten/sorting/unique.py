"""``unique`` (aten ``_unique2`` and ``unique_dim``) and ``unique_consecutive``.

Results are always sorted, as PyTorch's CPU kernels return them whatever ``sorted`` says. NaNs are
all distinct (``np.unique(..., equal_nan=False)``), as in PyTorch. An inverse or counts that was not
asked for comes back from the aten op as an empty int64 tensor and is left out by ``ember.unique``.
How many values come out depends on the data, so the meta kernels raise NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor, from_array

unique2 = define(
    "_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) "
    "-> (Tensor, Tensor, Tensor)",
    ("data_dependent_output", "core"),
)
unique_dim = define(
    "unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) "
    "-> (Tensor, Tensor, Tensor)",
    ("data_dependent_output", "core"),
)
unique_consecutive = define(
    "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) "
    "-> (Tensor, Tensor, Tensor)",
    ("data_dependent_output", "core"),
)


def _check(self: Tensor, name: str) -> np.ndarray:
    if self.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.SCALAR_TYPE_NAMES[self.dtype]}'")
    return self._array


def _long(array, wanted: bool, shape=None) -> Tensor:
    if not wanted:
        return from_array(np.empty(0, np.int64), D.int64)
    array = np.asarray(array, np.int64)
    return from_array(array if shape is None else array.reshape(shape), D.int64)


def _sortable(data: np.ndarray) -> np.ndarray:
    # ml_dtypes' bfloat16 sorts through float32 (exact), then converts back
    return data.astype(np.float32) if data.dtype == D.bfloat16.np else data


@unique2.register_kernel("cpu")
def _unique2(self: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False):
    data = _sortable(_check(self, "unique").reshape(-1))
    values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, equal_nan=False)
    return (
        from_array(values.astype(self.dtype.np), self.dtype),
        _long(inverse, return_inverse, self._shape),
        _long(counts, return_counts),
    )


@unique_dim.register_kernel("cpu")
def _unique_dim(self: Tensor, dim: int, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False):
    dim = normalize_dim(dim, self.ndim)
    data = np.moveaxis(_sortable(_check(self, "unique_dim")), dim, 0)
    if data.shape[0] == 0:
        values, inverse, counts = data, np.empty(0, np.int64), np.empty(0, np.int64)
    else:
        values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=0)
    return (
        _moved_back(values.astype(self.dtype.np), dim, self.dtype),
        _long(inverse.reshape(-1), return_inverse),
        _long(counts, return_counts),
    )


@unique_consecutive.register_kernel("cpu")
def _unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False, dim=None):
    data = _check(self, "unique_consecutive")
    if dim is None:
        flat = data.reshape(-1)
        starts = np.concatenate(([True], flat[1:] != flat[:-1])) if flat.size else np.zeros(0, np.bool_)
        values = flat[starts]
        shape = self._shape
    else:
        dim = normalize_dim(dim, self.ndim)
        moved = np.moveaxis(data, dim, 0)
        rows = moved.reshape(moved.shape[0], -1)
        changed = np.any(rows[1:] != rows[:-1], axis=1) if rows.shape[1] else np.zeros(rows.shape[0] - 1, np.bool_)
        starts = np.concatenate(([True], changed)) if rows.shape[0] else np.zeros(0, np.bool_)
        values = moved[starts]
        shape = None
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), starts.size))
    return (
        from_array(values, self.dtype) if dim is None else _moved_back(values, dim, self.dtype),
        _long(inverse, return_inverse, shape),
        _long(counts, return_counts),
    )


def _moved_back(values: np.ndarray, dim: int, dtype: D.dtype) -> Tensor:
    """Values computed with ``dim`` first, as a view with ``dim`` back in place (PyTorch's strides)."""
    from ember.core.aten.shape.views import movedim

    return movedim(from_array(np.ascontiguousarray(values), dtype), 0, dim)


def _data_dependent(name: str):
    def meta(*args, **kwargs):
        raise NotImplementedError(
            f"aten::{name} has a data-dependent output shape: a meta tensor has no data to compute it from"
        )

    return meta


for _op in (unique2, unique_dim, unique_consecutive):
    _op.register_meta(_data_dependent(_op.name))


def _pick(results, return_inverse: bool, return_counts: bool):
    values, inverse, counts = results
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values


@public("unique")
def unique_function(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    if dim is None:
        results = unique2(input, sorted, return_inverse, return_counts)
    else:
        results = unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _pick(results, return_inverse, return_counts)


@method("unique")
def _unique_method(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    return unique_function(self, sorted, return_inverse, return_counts, dim)


@public("unique_consecutive")
def unique_consecutive_function(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    return _pick(unique_consecutive(input, return_inverse, return_counts, dim), return_inverse, return_counts)


@method("unique_consecutive")
def _unique_consecutive_method(self, return_inverse: bool = False, return_counts: bool = False, dim=None):
    return unique_consecutive_function(self, return_inverse, return_counts, dim)
