"""Sparse COO tensors: ``SparseTensor``, the ``ember.sparse_coo`` layout, and the index arithmetic.

A sparse COO tensor of ``shape`` with ``sparse_dim`` sparse dimensions holds two dense tensors:
``indices``, int64 of shape ``(sparse_dim, nnz)``, one column per specified element, and
``values`` of shape ``(nnz, *shape[sparse_dim:])``, whose trailing (dense) dimensions make a hybrid
tensor. Indices may repeat and come in any order (uncoalesced); the element's value is then the sum
of its entries. ``coalesce()`` sorts the columns lexicographically and sums the duplicates.

``SparseTensor`` is a wrapper subclass of ``Tensor`` that holds no storage of its own. Its ops reach
``__ember_dispatch__`` (the dispatcher's python level), which looks them up in the sparse kernel table
(``ember.core.sparse.kernels``); an op missing there raises PyTorch's ``Could not run ... 'SparseCPU'
backend`` error rather than computing on data it does not have. The dispatch hook is attached after
the class is made and the dispatcher is told about dispatching subclasses only when the first sparse
tensor is built, so that programs without sparse tensors keep the dense fast path.
"""

from __future__ import annotations

import numpy as np

from ember.core import dispatch
from ember.core import dtypes as D
from ember.core.api import public
from ember.core.surface import layout
from ember.core.tensor import Tensor, from_array, make_wrapper_subclass

sparse_coo = public("sparse_coo")(layout("sparse_coo"))


class SparseTensor(Tensor):
    """A sparse COO tensor (``layout=ember.sparse_coo``); make one with ``ember.sparse_coo_tensor``
    or ``Tensor.to_sparse()``."""

    is_sparse = property(lambda self: True)
    layout = property(lambda self: sparse_coo)

    # PyTorch's answers for a tensor without strided storage: strides of zeros, offset 0, not contiguous.
    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def untyped_storage(self):
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")

    def storage_offset(self) -> int:
        return 0

    def _require_data(self, what: str):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __dlpack__(self, *, stream=None, **kwargs):
        raise RuntimeError("Cannot export a sparse tensor through DLPack; use Tensor.to_dense() first")

    def item(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self.to_dense().item()

    # -- what the tensor holds (metadata only: no op runs) ------------------------------------------

    def sparse_dim(self) -> int:
        return self._sp_indices._shape[0]

    def dense_dim(self) -> int:
        return len(self._sp_values._shape) - 1

    def _nnz(self) -> int:
        return self._sp_indices._shape[1]

    def is_coalesced(self) -> bool:
        return self._sp_coalesced

    def _coalesced_(self, coalesced: bool) -> SparseTensor:
        self._sp_coalesced = coalesced
        return self

    def __repr__(self) -> str:
        from ember.core.sparse.printing import sparse_repr

        return sparse_repr(self)

    def __reduce_ex__(self, protocol):
        # Plain pickle (copy, multiprocessing); ember.save writes PyTorch's form (see serialization).
        return (_rebuild_coo, (self._sp_indices, self._sp_values, tuple(self._shape), self._sp_coalesced))

    def __deepcopy__(self, memo):
        out = make_sparse(self._sp_indices.clone(), self._sp_values.detach().clone(), self._shape, self._sp_coalesced)
        if self.requires_grad:
            out.requires_grad_(True)
        memo[id(self)] = out
        return out


def _dispatch_sparse(cls, op, types, args, kwargs):
    from ember.core.sparse.kernels import run_sparse

    return run_sparse(op, args, kwargs)


# Attached after the class is made: see the module docstring.
SparseTensor.__ember_dispatch__ = classmethod(_dispatch_sparse)
SparseTensor._dispatches = True


def make_sparse(indices: Tensor, values: Tensor, shape: tuple, coalesced: bool = False) -> SparseTensor:
    """A sparse tensor over ``indices`` and ``values`` (taken as they are: no copy, no check)."""
    if not dispatch._flags.subclasses:
        dispatch._flags.subclasses = True  # from now on the dispatcher looks for dispatching subclasses
    shape = tuple(shape)
    t = make_wrapper_subclass(SparseTensor, shape, values.dtype, values.device, stride=(0,) * len(shape))
    t._sp_indices = indices
    t._sp_values = values
    t._sp_coalesced = bool(coalesced)
    return t


def is_sparse(t) -> bool:
    return type(t) is SparseTensor


def _rebuild_coo(indices: Tensor, values: Tensor, size: tuple, coalesced: bool) -> SparseTensor:
    return rebuild_sparse_tensor(sparse_coo, (indices, values, size, coalesced))


def rebuild_sparse_tensor(layout_, data) -> SparseTensor:
    """PyTorch's ``torch._utils._rebuild_sparse_tensor`` for the COO layout: checks the pieces."""
    if layout_ is not sparse_coo:
        raise NotImplementedError(f"rebuilding a sparse tensor of layout {layout_} is not supported by Ember")
    indices, values, size, coalesced = data
    from ember.core.sparse.construct import check_coo

    check_coo(indices, values, tuple(size), check_invariants=True, is_coalesced=bool(coalesced))
    return make_sparse(indices, values, tuple(size), coalesced)


# -- index arithmetic on NumPy arrays ----------------------------------------------------------------


def linear_index(indices: np.ndarray, sparse_shape: tuple) -> np.ndarray:
    """Each column of ``indices`` as one row-major position in ``sparse_shape`` (int64)."""
    lin = np.zeros(indices.shape[1], np.int64)
    for dim, size in enumerate(sparse_shape):
        lin = lin * size + indices[dim]
    return lin


def unravel(lin: np.ndarray, sparse_shape: tuple) -> np.ndarray:
    out = np.empty((len(sparse_shape), lin.shape[0]), np.int64)
    for dim in range(len(sparse_shape) - 1, -1, -1):
        size = sparse_shape[dim]
        out[dim] = lin % size if size else 0
        lin = lin // size if size else lin
    return out


def coalesce_arrays(indices: np.ndarray, values: np.ndarray, sparse_shape: tuple):
    """Sorted unique columns, and the values of equal columns summed in the order they come."""
    if indices.shape[1] == 0:
        return indices.copy(), values.copy()
    lin = linear_index(indices, sparse_shape)
    unique, inverse = np.unique(lin, return_inverse=True)
    summed = np.zeros((unique.shape[0], *values.shape[1:]), values.dtype)
    np.add.at(summed, inverse.reshape(-1), values)
    return unravel(unique, sparse_shape), summed


def dense_array(t: SparseTensor) -> np.ndarray:
    """The tensor's values laid out densely (duplicates summed)."""
    values = t._sp_values._array
    shape = tuple(t._shape)
    out = np.zeros(shape, values.dtype)
    nd = t.sparse_dim()
    if t._nnz():
        idx = tuple(t._sp_indices._array[d] for d in range(nd))
        if nd == 0:
            out += values.sum(axis=0)
        else:
            np.add.at(out, idx, values)
    return out


def coalesced(t: SparseTensor) -> SparseTensor:
    """``t`` itself when it is coalesced, else a coalesced copy (no autograd: a kernel helper)."""
    if t._sp_coalesced:
        return t
    nd = t.sparse_dim()
    idx, vals = coalesce_arrays(t._sp_indices._array, t._sp_values._array, tuple(t._shape[:nd]))
    return make_sparse(from_array(idx, D.int64), from_array(vals, t.dtype), t._shape, True)
