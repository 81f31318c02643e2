"""Sparse kernels that move or convert data: ``to_dense``, ``coalesce``, the views of indices and
values, ``sparse_mask``, copies and casts, transposes, ``zero_`` and ``copy_``, ``index_select`` and
``cat``."""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.sparse import coo_ops as C
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim
from ember.core.promotion import promote_types
from ember.core.sparse.coo import SparseTensor, coalesced, dense_array, make_sparse
from ember.core.sparse.kernels import check_cpu, idx, new_sparse, sparse_kernel, vals
from ember.core.tensor import Tensor, from_array, make_view

aten = ops.aten


@sparse_kernel(C.to_dense_op)
def _to_dense(self: SparseTensor, dtype=None, *, masked_grad=None) -> Tensor:
    check_cpu(self, "to_dense")
    out = from_array(dense_array(self), self.dtype)
    return out if dtype is None or dtype is self.dtype else out.to(dtype)


@sparse_kernel(C.coalesce_op)
def _coalesce(self: SparseTensor) -> SparseTensor:
    if self._sp_coalesced:
        return new_sparse(idx(self), vals(self), self._shape, True, self.dtype)
    return coalesced(self)


def _view_of(t: Tensor) -> Tensor:
    """A new tensor object sharing ``t``'s memory: what the user gets, so that autograd's marks on it
    never reach the sparse tensor's own pieces."""
    return make_view(t, t._shape, t._stride, t._offset)


@sparse_kernel(C.raw_values_op)
def _raw_values(self: SparseTensor) -> Tensor:
    return _view_of(self._sp_values)


@sparse_kernel(C.raw_indices_op)
def _raw_indices(self: SparseTensor) -> Tensor:
    return _view_of(self._sp_indices)


@sparse_kernel(C.values_op)
def _values(self: SparseTensor) -> Tensor:
    if not self._sp_coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return _view_of(self._sp_values)


@sparse_kernel(C.indices_op)
def _indices(self: SparseTensor) -> Tensor:
    if not self._sp_coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return _view_of(self._sp_indices)


@sparse_kernel(C.sparse_mask_op)
def _sparse_mask(self: Tensor, mask: SparseTensor) -> SparseTensor:
    if type(mask) is not SparseTensor:
        raise RuntimeError("sparse_mask expects mask to be sparse COO")
    if type(self) is SparseTensor:
        self = _to_dense(self)
    if tuple(self._shape) != tuple(mask._shape):
        raise RuntimeError(
            f"sparse_mask(): operands have incompatible sizes; self has size {list(self._shape)} "
            f"but mask has size {list(mask._shape)}"
        )
    check_cpu(self, "sparse_mask")
    array = self._array
    if mask.sparse_dim():
        picked = array[tuple(idx(mask))]
    else:
        picked = np.broadcast_to(array, (mask._nnz(), *array.shape))
    return new_sparse(idx(mask), picked, mask._shape, mask._sp_coalesced, self.dtype)


@sparse_kernel(C.to_sparse_op)
def _sparse_to_sparse(self: SparseTensor, sparse_dim: int) -> SparseTensor:
    if sparse_dim != self.sparse_dim():
        raise RuntimeError(
            "to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self.sparse_dim() is not supported"
        )
    return new_sparse(idx(self), vals(self), self._shape, self._sp_coalesced, self.dtype)


@sparse_kernel(aten.clone.default)
def _clone(self: SparseTensor, memory_format=None) -> SparseTensor:
    return new_sparse(idx(self), vals(self), self._shape, self._sp_coalesced, self.dtype)


@sparse_kernel(aten.detach.default)
def _detach(self: SparseTensor) -> SparseTensor:
    return make_sparse(self._sp_indices, self._sp_values, self._shape, self._sp_coalesced)


@sparse_kernel(aten._to_copy.default)
def _to_copy(
    self: SparseTensor,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
) -> SparseTensor:
    if device is not None and str(device).split(":")[0] != "cpu":
        raise NotImplementedError(f"sparse COO tensors on the {device} device are not supported by Ember")
    if layout is not None and getattr(layout, "name", None) != "sparse_coo":
        raise NotImplementedError(f"converting a sparse COO tensor to {layout} with .to() is not supported")
    values = self._sp_values
    values = values.to(dtype) if dtype is not None else values.clone()
    return make_sparse(self._sp_indices.clone(), values, self._shape, self._sp_coalesced)


def _transposed(self: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    ndim = self.ndim
    d0, d1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
    nd = self.sparse_dim()
    if d0 >= nd or d1 >= nd:
        raise RuntimeError(
            f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: {nd}, d0: {d0}, d1: {d1}"
        )
    perm = list(range(nd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    shape = list(self._shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    coalesced = self._sp_coalesced and (d0 == d1 or self._nnz() <= 1)
    return new_sparse(idx(self)[perm], vals(self), shape, coalesced, self.dtype)


@sparse_kernel(aten.transpose.int)
def _transpose(self: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    return _transposed(self, dim0, dim1)


@sparse_kernel(aten.t.default)
def _t(self: SparseTensor) -> SparseTensor:
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {self.ndim}")
    return _transposed(self, 0, self.ndim - 1) if self.ndim == 2 else _clone(self)


@sparse_kernel(aten.permute.default)
def _permute(self: SparseTensor, dims) -> SparseTensor:
    ndim, nd = self.ndim, self.sparse_dim()
    dims = [normalize_dim(d, ndim) for d in dims]
    if sorted(dims) != list(range(ndim)):
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{ndim} is not equal to len(dims) = {len(dims)}"
        )
    if any(d < nd for d in dims[nd:]):
        raise RuntimeError(
            "permute(sparse_coo): transpositions between sparse and dense dimensions are not allowed."
            "Only transpositions within sparse and dense dimensions are supported."
        )
    values = np.transpose(vals(self), (0, *[d - nd + 1 for d in dims[nd:]]))
    shape = [self._shape[d] for d in dims]
    coalesced = self._sp_coalesced and dims[:nd] == list(range(nd))
    return new_sparse(idx(self)[dims[:nd]], values, shape, coalesced, self.dtype)


@sparse_kernel(aten.zero_.default)
def _zero_(self: SparseTensor) -> SparseTensor:
    nd = self.sparse_dim()
    self._sp_indices = from_array(np.zeros((nd, 0), np.int64), D.int64)
    self._sp_values = from_array(np.zeros((0, *self._shape[nd:]), self.dtype.np), self.dtype)
    self._sp_coalesced = True
    self._bump_version()
    return self


@sparse_kernel(aten.copy_.default)
def _copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    if type(self) is not SparseTensor or type(src) is not SparseTensor:
        raise RuntimeError(
            "copy_(): copying between a sparse and a dense tensor is not supported; use to_dense() or to_sparse() first"
        )
    if tuple(self._shape) != tuple(src._shape):
        raise RuntimeError(f"copy_(): sizes do not match: {list(self._shape)} and {list(src._shape)}")
    self._sp_indices = from_array(np.array(idx(src)), D.int64)
    self._sp_values = from_array(np.array(vals(src)), src.dtype).to(self.dtype)
    self._sp_coalesced = src._sp_coalesced
    self._bump_version()
    return self


# -- selecting and joining -------------------------------------------------------------------------------------


@sparse_kernel(aten.index_select.default)
def _index_select(self: SparseTensor, dim: int, index: Tensor) -> SparseTensor:
    if type(self) is not SparseTensor or type(index) is SparseTensor:
        raise RuntimeError("index_select: expected a sparse COO self and a dense index")
    if index.ndim > 1 or index.dtype not in (D.int64, D.int32):
        raise IndexError("index_select(): Index is supposed to be a vector of integers")
    ndim, nd = self.ndim, self.sparse_dim()
    dim = normalize_dim(dim, ndim)
    chosen = index._array.reshape(-1).astype(np.int64)
    size = self._shape[dim]
    if chosen.size and (chosen.min() < -size or chosen.max() >= size):
        raise IndexError(f"index_select(): index out of range for dimension {dim} of size {size}")
    chosen = np.where(chosen < 0, chosen + size, chosen)
    shape = list(self._shape)
    shape[dim] = chosen.shape[0]
    if dim >= nd:
        values = np.take(vals(self), chosen, axis=dim - nd + 1)
        return new_sparse(idx(self), values, shape, False, self.dtype)  # PyTorch marks it uncoalesced
    # For each chosen position in turn, the entries at that position, in their stored order.
    old = idx(self)[dim]
    order = np.argsort(old, kind="stable")
    first = np.searchsorted(old[order], chosen, side="left")
    last = np.searchsorted(old[order], chosen, side="right")
    counts = last - first
    picks = order[np.concatenate([np.arange(a, b) for a, b in zip(first, last, strict=True)] or [[]]).astype(np.int64)]
    indices = idx(self)[:, picks].copy()
    indices[dim] = np.repeat(np.arange(chosen.shape[0]), counts)
    return new_sparse(indices, vals(self)[picks], shape, False, self.dtype)


@sparse_kernel(aten.cat.default)
def _cat(tensors, dim: int = 0) -> SparseTensor:
    tensors = list(tensors)
    if any(type(t) is not SparseTensor for t in tensors):
        raise RuntimeError("cat: a sparse COO tensor can be concatenated only with sparse COO tensors")
    first = tensors[0]
    ndim, nd, dense = first.ndim, first.sparse_dim(), first.dense_dim()
    dim = normalize_dim(dim, ndim)
    for t in tensors[1:]:
        if t.sparse_dim() != nd or t.dense_dim() != dense:
            raise RuntimeError(
                "concatenating sparse tensors with different sparse_dim or dense_dim is not supported: "
                f"({nd}, {dense}) and ({t.sparse_dim()}, {t.dense_dim()})"
            )
        if any(a != b for d, (a, b) in enumerate(zip(t._shape, first._shape, strict=True)) if d != dim):
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {dim}: {list(first._shape)} and {list(t._shape)}"
            )
    dtype = first.dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    shape = list(first._shape)
    shape[dim] = sum(t._shape[dim] for t in tensors)
    pieces_i, pieces_v, offset = [], [], 0
    for t in tensors:
        indices, values = idx(t).copy(), vals(t).astype(dtype.np)
        if dim < nd:
            indices[dim] += offset
        else:
            # Along a dense dim each tensor's values fill their slice and zeros the rest.
            axis = dim - nd + 1
            widths = [(0, 0)] * values.ndim
            widths[axis] = (offset, shape[dim] - offset - t._shape[dim])
            values = np.pad(values, widths)
        pieces_i.append(indices)
        pieces_v.append(values)
        offset += t._shape[dim]
    return new_sparse(np.concatenate(pieces_i, axis=1), np.concatenate(pieces_v), shape, False, dtype)
