"""Sparse kernels of products and reductions: ``mm``/``addmm`` with a sparse operand (and their
``ember.sparse`` forms), ``hspmm``, ``sum`` and ``ember.sparse.sum``, and the sparse softmax.

A sparse matrix times a dense one sums ``value * dense row`` per result row with one
``np.add.reduceat`` over the entries sorted by row: the work follows the number of stored entries,
not the matrix size. ``sparse.sum``
over every sparse dimension gives a dense tensor, over some of them a coalesced sparse one. The
sparse softmax treats the unstored elements as ``-inf`` (they take no share), as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.sparse import coo_ops as C
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim
from ember.core.promotion import promote_types
from ember.core.sparse.coo import SparseTensor, coalesce_arrays, coalesced, dense_array, linear_index
from ember.core.sparse.kernels import check_cpu, idx, new_sparse, sparse_kernel, vals, with_values
from ember.core.tensor import Tensor, from_array

aten = ops.aten


def _check_matrix(sparse: SparseTensor, dense: Tensor, what: str) -> None:
    if sparse.ndim != 2 or sparse.sparse_dim() != 2:
        raise RuntimeError(
            f"{what}: expected a 2-D sparse matrix with 2 sparse dimensions, got size "
            f"{list(sparse._shape)} with {sparse.sparse_dim()} sparse dimensions"
        )
    if dense.ndim != 2:
        raise RuntimeError(f"{what}: expected a 2-D dense matrix, got a {dense.ndim}-D tensor")
    if dense._shape[0] != sparse._shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {sparse._shape[1]}, got {dense._shape[0]}")
    check_cpu(dense, what)


def sparse_dense_mm(sparse: SparseTensor, dense: Tensor, what: str = "mm") -> np.ndarray:
    """``sparse @ dense`` as a NumPy array of the promoted dtype."""
    _check_matrix(sparse, dense, what)
    dtype = promote_types(sparse.dtype, dense.dtype)
    out = np.zeros((sparse._shape[0], dense._shape[1]), dtype.np)
    if sparse._nnz():
        rows, cols = idx(sparse)
        values = vals(sparse)
        if not sparse._sp_coalesced:  # sorted by row, the entries of each row are one segment
            order = np.argsort(rows, kind="stable")
            rows, cols, values = rows[order], cols[order], values[order]
        contributions = values.astype(dtype.np)[:, None] * dense._array[cols].astype(dtype.np)
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        out[rows[starts]] = np.add.reduceat(contributions, starts, axis=0)
    return out


def _sparse_sparse_mm(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    if a.ndim != 2 or b.ndim != 2 or a.dense_dim() or b.dense_dim():
        raise RuntimeError("mm(sparse, sparse): expected two 2-D sparse matrices without dense dimensions")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(
            f"mm(sparse, sparse): mat1 and mat2 shapes cannot be multiplied "
            f"({a._shape[0]}x{a._shape[1]} and {b._shape[0]}x{b._shape[1]})"
        )
    dtype = promote_types(a.dtype, b.dtype)
    product = dense_array(a).astype(dtype.np) @ dense_array(b).astype(dtype.np)
    # The result stores every position some pair of stored entries reaches, zero or not.
    pattern = (dense_array(_ones_like_pattern(a)) @ dense_array(_ones_like_pattern(b))) > 0
    index = np.stack(np.nonzero(pattern)).astype(np.int64).reshape(2, -1)
    return new_sparse(index, product[tuple(index)], (a._shape[0], b._shape[1]), True, dtype)


def _ones_like_pattern(t: SparseTensor) -> SparseTensor:
    return new_sparse(idx(t), np.ones(t._nnz(), np.float64), t._shape, t._sp_coalesced, D.float64)


@sparse_kernel(aten.mm.default, C.sparse_mm_op)
def _mm(self: Tensor, mat2: Tensor) -> Tensor:
    if type(self) is SparseTensor and type(mat2) is SparseTensor:
        return _sparse_sparse_mm(self, mat2)
    if type(self) is SparseTensor:
        return from_array(sparse_dense_mm(self, mat2), promote_types(self.dtype, mat2.dtype))
    # dense @ sparse = (sparse.T @ dense.T).T
    transposed = aten.t.default(mat2)
    out = sparse_dense_mm(transposed, aten.t.default(self)).T
    return from_array(np.ascontiguousarray(out), promote_types(self.dtype, mat2.dtype))


@sparse_kernel(aten.addmm.default, C.sparse_addmm_op)
def _addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    if type(mat1) is not SparseTensor or type(mat2) is SparseTensor:
        raise NotImplementedError("addmm with sparse operands: Ember supports a sparse mat1 with dense self and mat2")
    if type(self) is SparseTensor:
        self = from_array(dense_array(self), self.dtype)
    product = from_array(sparse_dense_mm(mat1, mat2, "addmm"), promote_types(mat1.dtype, mat2.dtype))
    scaled = product if alpha == 1 else aten.mul.Tensor(product, alpha)
    if beta == 0:  # self is ignored entirely, its NaNs included, as PyTorch's addmm does
        return scaled.expand(self._shape).contiguous() if tuple(self._shape) != tuple(scaled._shape) else scaled
    return aten.add.Tensor(self if beta == 1 else aten.mul.Tensor(self, beta), scaled)


@sparse_kernel(C.hspmm_op)
def _hspmm(mat1: SparseTensor, mat2: Tensor) -> SparseTensor:
    if type(mat1) is not SparseTensor or type(mat2) is SparseTensor:
        raise RuntimeError("hspmm: expected a sparse mat1 and a dense mat2")
    out = sparse_dense_mm(mat1, mat2, "hspmm")
    rows = np.unique(idx(mat1)[0]) if mat1._nnz() else np.zeros(0, np.int64)
    # Unique, sorted rows; PyTorch leaves the result marked uncoalesced all the same.
    return new_sparse(rows[None, :], out[rows], out.shape, False, D.from_numpy_dtype(out.dtype))


# -- sums -------------------------------------------------------------------------------------------------


@sparse_kernel(aten.sum.default, C.sparse_sum_op)
def _sum_all(self: SparseTensor, *, dtype=None) -> Tensor:
    check_cpu(self, "sum")
    return aten.sum.default(self._sp_values, dtype=dtype)


def sparse_sum_dims(self: SparseTensor, dims) -> Tensor:
    ndim, nd = self.ndim, self.sparse_dim()
    dims = sorted({normalize_dim(d, ndim) for d in ([dims] if isinstance(dims, int) else dims)})
    sparse_dims = [d for d in dims if d < nd]
    dense_axes = tuple(d - nd + 1 for d in dims if d >= nd)
    values = vals(self)
    if dense_axes:
        values = values.sum(axis=dense_axes)
    kept = [d for d in range(nd) if d not in sparse_dims]
    if not kept:
        total = values.sum(axis=0) if values.shape[0] else np.zeros(values.shape[1:], values.dtype)
        return from_array(np.asarray(total, values.dtype), self.dtype)
    shape = [self._shape[d] for d in range(ndim) if d not in dims]
    index, summed = coalesce_arrays(idx(self)[kept], values, tuple(self._shape[d] for d in kept))
    return new_sparse(index, summed, shape, True, self.dtype)


@sparse_kernel(C.sparse_sum_dim_op)
def _sparse_sum_dim(self: SparseTensor, dim) -> Tensor:
    check_cpu(self, "sparse.sum")
    return sparse_sum_dims(self, dim)


@sparse_kernel(aten.sum.dim_IntList)
def _sum_dim(self: SparseTensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if keepdim:
        raise NotImplementedError("sum(keepdim=True) of a sparse COO tensor is not supported")
    source = self if dtype is None else with_values(self, self._sp_values.to(dtype))
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return _sum_all(source)
    return sparse_sum_dims(source, dim)


# -- softmax ------------------------------------------------------------------------------------------------


def sparse_softmax(self: SparseTensor, dim: int, log: bool) -> SparseTensor:
    check_cpu(self, "softmax")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"softmax: expected a floating point sparse tensor, got {self.dtype}")
    source = coalesced(self)
    ndim, nd = self.ndim, self.sparse_dim()
    dim = normalize_dim(dim, ndim)
    values = vals(source).astype(np.float64 if self.dtype is D.float64 else np.float32)
    if dim >= nd:
        axis = dim - nd + 1
        shifted = values - values.max(axis=axis, keepdims=True) if values.size else values
        total = np.exp(shifted).sum(axis=axis, keepdims=True)
        out = shifted - np.log(total) if log else np.exp(shifted) / total
    else:
        # Entries that differ only in ``dim`` form one softmax group; unstored elements count as -inf.
        others = [d for d in range(nd) if d != dim]
        group = linear_index(idx(source)[others], tuple(self._shape[d] for d in others))
        _, group = np.unique(group, return_inverse=True)
        group = group.reshape(-1)
        count = int(group.max()) + 1 if group.size else 0
        peak = np.full((count, *values.shape[1:]), -np.inf, values.dtype)
        np.maximum.at(peak, group, values)
        shifted = values - peak[group]
        total = np.zeros_like(peak)
        np.add.at(total, group, np.exp(shifted))
        out = shifted - np.log(total[group]) if log else np.exp(shifted) / total[group]
    return new_sparse(idx(source), out.astype(self.dtype.np), self._shape, True, self.dtype)


# ember.softmax of a sparse tensor has no kernel in PyTorch (only ember.sparse.softmax): nor here.
@sparse_kernel(C.sparse_softmax_op)
def _softmax(self: SparseTensor, dim: int, half_to_float: bool) -> SparseTensor:
    return sparse_softmax(self, dim, log=False)


@sparse_kernel(C.sparse_log_softmax_op)
def _log_softmax(self: SparseTensor, dim: int, half_to_float: bool) -> SparseTensor:
    return sparse_softmax(self, dim, log=True)


__all__ = ["coalesced", "sparse_dense_mm", "sparse_softmax", "sparse_sum_dims"]
