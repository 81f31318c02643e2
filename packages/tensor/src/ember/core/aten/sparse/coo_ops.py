"""The ops of sparse COO tensors that dense tensors do not have, and their Python surface.

Each op is registered here by PyTorch's schema. Ops whose first tensor argument is dense (making a
sparse tensor from dense pieces) have a CPU kernel and a meta function that refuses: Ember has no
sparse meta tensors. Ops on a sparse tensor reach the sparse kernel table through the dispatcher's
python level (``ember.core.sparse.kernels``); so do the dense ops (``add``, ``mm``, ``sum``, ...)
that the table lists for sparse arguments. Autograd's rules for these ops live with the other
derivatives (``ember.autograd.derivatives.sparse``).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.sparse.coo import SparseTensor, make_sparse, sparse_coo
from ember.core.tensor import Tensor, from_array

coo_tensor_op = define(
    "_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, int dense_dim, SymInt[] size, Tensor indices, "
    "Tensor values, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, "
    "bool? is_coalesced=None) -> Tensor"
)
to_dense_op = define("to_dense(Tensor self, ScalarType? dtype=None, *, bool? masked_grad=None) -> Tensor")
to_sparse_op = define("_to_sparse.sparse_dim(Tensor self, int sparse_dim) -> Tensor")
coalesce_op = define("_coalesce(Tensor self) -> Tensor")
values_op = define("values(Tensor self) -> Tensor")
indices_op = define("indices(Tensor self) -> Tensor")
raw_values_op = define("_values(Tensor self) -> Tensor")
raw_indices_op = define("_indices(Tensor self) -> Tensor")
sparse_mask_op = define("sparse_mask(Tensor self, Tensor mask) -> Tensor")
sparse_mm_op = define("_sparse_mm(Tensor sparse, Tensor dense) -> Tensor")
sparse_addmm_op = define(
    "_sparse_addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
)
sparse_sum_op = define("_sparse_sum(Tensor self) -> Tensor")
sparse_sum_dim_op = define("_sparse_sum.dim(Tensor self, int[1] dim) -> Tensor")
sparse_softmax_op = define("_sparse_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
sparse_log_softmax_op = define("_sparse_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor")
hspmm_op = define("hspmm(Tensor mat1, Tensor mat2) -> Tensor")
# Fresh copies of indices() and values() (what functionalization emits for those views).
indices_copy_op = define("indices_copy(Tensor self) -> Tensor")
values_copy_op = define("values_copy(Tensor self) -> Tensor")

SPARSE_OPS = (
    coo_tensor_op,
    to_dense_op,
    to_sparse_op,
    coalesce_op,
    values_op,
    indices_op,
    raw_values_op,
    raw_indices_op,
    sparse_mask_op,
    sparse_mm_op,
    sparse_addmm_op,
    sparse_sum_op,
    sparse_sum_dim_op,
    sparse_softmax_op,
    sparse_log_softmax_op,
    hspmm_op,
)


def _no_sparse_meta(*args, **kwargs):
    raise NotImplementedError("sparse COO tensors on the meta device are not supported by Ember")


@coo_tensor_op.register_kernel("cpu")
def _coo_tensor(
    sparse_dim,
    dense_dim,
    size,
    indices,
    values,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    is_coalesced=None,
) -> SparseTensor:
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    nnz = indices._shape[1]
    coalesced = nnz <= 1 if is_coalesced is None else bool(is_coalesced)
    # The pieces are held detached: the tensor's own history is its node (see the derivative).
    return make_sparse(indices.detach(), values.detach(), tuple(size), coalesced)


@to_sparse_op.register_kernel("cpu")
def _dense_to_sparse(self: Tensor, sparse_dim: int) -> SparseTensor:
    ndim = self.ndim
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(
            f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, but {sparse_dim} is given"
        )
    if ndim > 0 and sparse_dim == 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    array = self._array
    if sparse_dim == 0:  # a 0-d tensor: one entry when it is nonzero
        nnz = int(bool(array != 0))
        idx, values = np.zeros((0, nnz), np.int64), array[None][:nnz]
    else:
        dense_numel = int(np.prod(self._shape[sparse_dim:], dtype=np.int64))
        lead = array.reshape((*self._shape[:sparse_dim], dense_numel))
        # A position of the sparse dims is kept when any element of its dense slice is nonzero.
        idx = np.stack(np.nonzero((lead != 0).any(axis=-1))).astype(np.int64).reshape(sparse_dim, -1)
        values = array[tuple(idx)]
    return make_sparse(from_array(idx, D.int64), from_array(np.array(values), self.dtype), self._shape, True)


for _op in (coo_tensor_op, to_sparse_op):
    _op.register_meta(_no_sparse_meta)


@indices_copy_op.register_decomposition
def _indices_copy(self: Tensor) -> Tensor:
    return indices_op(self).clone()


@values_copy_op.register_decomposition
def _values_copy(self: Tensor) -> Tensor:
    return values_op(self).clone()


# -- the Python surface ------------------------------------------------------------------------------


def _check_sparse(self: Tensor, what: str) -> None:
    if type(self) is SparseTensor:
        return
    if what.startswith("_"):  # the raw accessors have no dense kernel in PyTorch
        raise NotImplementedError(
            f"Could not run 'aten::{what}' with arguments from the '{self.device.type.upper()}' backend."
        )
    kind = "sparse tensor layout" if what == "values" else "sparse coordinate tensor layout"
    raise RuntimeError(f"{what} expected {kind} but got Strided")


@method("to_dense")
def to_dense(self: Tensor, dtype: D.dtype | None = None, *, masked_grad: bool | None = None) -> Tensor:
    """A dense (strided) tensor with the same elements; a dense tensor returns itself."""
    if type(self) is not SparseTensor:
        return self if dtype is None or dtype is self.dtype else self.to(dtype)
    return to_dense_op(self, dtype, masked_grad=masked_grad)


@method("to_sparse")
def to_sparse(
    self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim: int | None = None
) -> Tensor:
    """A sparse COO tensor with this tensor's nonzero elements (``sparse_dim`` sparse dimensions, by
    default all of them; the rest are dense dimensions of the values)."""
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"to_sparse(layout={layout}): Ember has only the sparse COO layout")
    if blocksize is not None:
        raise NotImplementedError("to_sparse(blocksize=...): block sparse layouts are not supported by Ember")
    if sparse_dim is None:
        sparse_dim = self.ndim - (dense_dim or 0) if dense_dim is not None else None
    if type(self) is SparseTensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(
                "to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self.sparse_dim() "
                "is not supported"
            )
        return self
    return to_sparse_op(self, self.ndim if sparse_dim is None else sparse_dim)


@method("to_sparse_coo")
def to_sparse_coo(self: Tensor) -> Tensor:
    return to_sparse(self)


@method("coalesce")
def coalesce(self: Tensor) -> Tensor:
    """The tensor with sorted, unique indices (duplicates summed); itself when already coalesced."""
    _check_sparse(self, "coalesce")
    if self._sp_coalesced:
        return self
    return coalesce_op(self)


@method("is_coalesced")
def is_coalesced(self: Tensor) -> bool:
    _check_sparse(self, "is_coalesced")
    return self._sp_coalesced


@method("indices")
def indices(self: Tensor) -> Tensor:
    _check_sparse(self, "indices")
    return indices_op(self)


@method("values")
def values(self: Tensor) -> Tensor:
    _check_sparse(self, "values")
    return values_op(self)


@method("_indices")
def _indices(self: Tensor) -> Tensor:
    _check_sparse(self, "_indices")
    return raw_indices_op(self)


@method("_values")
def _values(self: Tensor) -> Tensor:
    _check_sparse(self, "_values")
    return raw_values_op(self)


@public("indices_copy")
def indices_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """A fresh copy of a coalesced sparse tensor's ``indices()``."""
    _check_sparse(input, "indices")
    result = indices_copy_op(input)
    return result if out is None else _write_out(out, result)


@public("values_copy")
def values_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """A fresh copy of a coalesced sparse tensor's ``values()``."""
    _check_sparse(input, "values")
    result = values_copy_op(input)
    return result if out is None else _write_out(out, result)


def _write_out(out: Tensor, result: Tensor) -> Tensor:
    from ember.core.reduction import write_out

    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    return write_out(out, result)


@method("sparse_dim")
def sparse_dim(self: Tensor) -> int:
    """The number of sparse dimensions (0 for a dense tensor, as in PyTorch)."""
    return self._sp_indices._shape[0] if type(self) is SparseTensor else 0


@method("dense_dim")
def dense_dim(self: Tensor) -> int:
    """The number of dense dimensions (all of them for a dense tensor)."""
    return len(self._sp_values._shape) - 1 if type(self) is SparseTensor else self.ndim


@method("_nnz")
def _nnz(self: Tensor) -> int:
    _check_sparse(self, "_nnz")
    return self._sp_indices._shape[1]


@method("sparse_mask")
def sparse_mask(self: Tensor, mask: Tensor) -> Tensor:
    """This (dense) tensor's elements at the indices of the sparse tensor ``mask``, as a sparse tensor."""
    return sparse_mask_op(self, mask)


@public("hspmm")
@method("hspmm")
def hspmm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` for a sparse ``mat1``: a hybrid sparse tensor holding the rows ``mat1`` has."""
    return hspmm_op(mat1, mat2)


@public("smm")
@method("smm")
def smm(input: Tensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a sparse ``input`` as a sparse matrix: every column of each row ``input`` has."""
    from ember.core.sparse.construct import _sparse_coo_tensor_unsafe

    rows = hspmm_op(input, mat2)
    values = rows._sp_values._array
    count, width = values.shape
    index = np.stack([np.repeat(rows._sp_indices._array[0], width), np.tile(np.arange(width), count)])
    flat = from_array(np.ascontiguousarray(values).reshape(-1), rows.dtype)
    return _sparse_coo_tensor_unsafe(from_array(index.astype(np.int64), D.int64), flat, rows.shape)


@public("sspaddmm")
@method("sspaddmm")
def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for sparse ``input`` and ``mat1``, as a sparse matrix
    holding ``input``'s entries then the product's (uncoalesced)."""
    if type(input) is not SparseTensor:
        raise RuntimeError("sspaddmm: expected self to be a sparse COO tensor")
    product = smm(mat1, mat2)
    if tuple(product.shape) != tuple(input.shape):
        raise RuntimeError(
            f"sspaddmm: Argument #1: Expected dim 0 size {product.shape[0]}, got {input.shape[0]}"
            if product.shape[0] != input.shape[0]
            else f"sspaddmm: Argument #1: Expected dim 1 size {product.shape[1]}, got {input.shape[1]}"
        )
    scaled = input * beta if beta != 1 else input
    return scaled.add(product, alpha=alpha)


@public("saddmm")
def saddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out: Tensor | None = None) -> Tensor:
    """``sspaddmm`` under its old name: ``beta * input + alpha * (mat1 @ mat2)`` for sparse ``input`` and
    ``mat1``, as a sparse matrix."""
    if out is not None:
        raise NotImplementedError("saddmm(out=...): Ember has no out= form of the sparse products")
    if type(input) is not SparseTensor:
        raise RuntimeError("saddmm: expected input to be a sparse COO tensor")
    if type(mat1) is not SparseTensor:
        raise RuntimeError("sspaddmm: expected 'mat1' to have sparse layout, got 'mat1' with layout Strided")
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


@public("dsmm")
def dsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a sparse ``input``, as a dense matrix (an old name of ``ember.sparse.mm``)."""
    return sparse_mm_op(input, mat2)


@public("hsmm")
def hsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``ember.hspmm`` under its old name."""
    return hspmm_op(input, mat2)


@public("spmm")
def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    from ember.core.sparse.api import sparse_mm

    return sparse_mm(input, mat2)


def _resize_hint() -> str:
    return (
        "\nTo get an empty sparse tensor of the new size, use sparse_resize_and_clear_ or "
        "ember.sparse_coo_tensor(size); to keep the entries, build a new tensor from indices() and values()."
    )


@method("sparse_resize_")
def sparse_resize_(self: Tensor, size, sparse_dim: int, dense_dim: int) -> Tensor:
    """Give this sparse tensor ``size`` with ``sparse_dim`` sparse dimensions, keeping its entries: a
    non-empty tensor may only grow its sparse sizes."""
    _check_sparse(self, "sparse_resize_")
    size = tuple(int(n) for n in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(
            f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but got {len(size)}"
        )
    if self._nnz() == 0:
        return sparse_resize_and_clear_(self, size, sparse_dim, dense_dim)
    old_sparse, old_dense = self.sparse_dim(), self.dense_dim()
    if sparse_dim != old_sparse:
        raise RuntimeError(
            f"changing the number of sparse dimensions (from {old_sparse} to {sparse_dim}) on a non-empty sparse "
            "tensor is not supported." + _resize_hint()
        )
    if dense_dim != old_dense:
        raise RuntimeError(
            f"changing the number of dense dimensions (from {old_dense} to {dense_dim}) on a non-empty sparse "
            "tensor is not supported." + _resize_hint()
        )
    old, new = list(self._shape[:sparse_dim]), list(size[:sparse_dim])
    if any(n < o for n, o in zip(new, old, strict=True)):
        raise RuntimeError(
            f"shrinking the size of sparse dimensions (from {old} to {new}) on a non-empty sparse tensor is not "
            "supported." + _resize_hint()
        )
    if tuple(size[sparse_dim:]) != tuple(self._shape[sparse_dim:]):
        raise RuntimeError(
            f"changing the size of dense dimensions (from {list(self._shape[sparse_dim:])} to "
            f"{list(size[sparse_dim:])}) on a non-empty sparse tensor is not supported by Ember." + _resize_hint()
        )
    self._shape = size
    self._stride = (0,) * len(size)
    self._bump_version()
    return self


@public("resize_as_sparse_")
@method("resize_as_sparse_")
def resize_as_sparse_(self: Tensor, the_template: Tensor) -> Tensor:
    """``sparse_resize_`` to the size and sparse/dense dimensions of the sparse tensor ``the_template``."""
    _check_sparse(the_template, "resize_as_sparse_")
    return sparse_resize_(self, the_template.shape, the_template.sparse_dim(), the_template.dense_dim())


@method("sparse_resize_and_clear_")
def sparse_resize_and_clear_(self: Tensor, size, sparse_dim: int, dense_dim: int) -> Tensor:
    """Empty this sparse tensor and give it ``size`` with ``sparse_dim`` sparse dimensions."""
    _check_sparse(self, "sparse_resize_and_clear_")
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(
            f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but got {len(size)}"
        )
    self._sp_indices = from_array(np.zeros((sparse_dim, 0), np.int64), D.int64)
    self._sp_values = from_array(np.zeros((0, *size[sparse_dim:]), self.dtype.np), self.dtype)
    self._sp_coalesced = True
    self._shape = size
    self._stride = (0,) * len(size)
    self._bump_version()
    return self


from ember.core.sparse import api as _api  # noqa: E402, F401  (ember.sparse's functions)
from ember.core.sparse import construct as _construct  # noqa: E402, F401  (ember.sparse_coo_tensor)
from ember.core.sparse import pointwise as _pointwise  # noqa: E402, F401  (the kernel table's entries)
from ember.core.sparse import products as _products  # noqa: E402, F401
from ember.core.sparse import structure as _structure  # noqa: E402, F401
