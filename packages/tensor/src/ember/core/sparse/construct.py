"""``ember.sparse_coo_tensor`` and the checks a COO tensor's pieces must pass.

The shape checks (indices of shape ``(sparse_dim, nnz)``, values of shape ``(nnz, *dense_shape)``,
``len(size) == sparse_dim + dense_dim``) raise PyTorch's errors. Unlike PyTorch, Ember also checks
the index bounds when ``check_invariants`` is off (it costs one pass over the indices): PyTorch then
builds a tensor that later reads out of bounds. ``check_invariants=True`` adds the check that
``is_coalesced=True`` is true of the indices.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.tensor import Tensor


def _as_tensor(data, dtype=None, device=None) -> Tensor:
    from ember.core.creation import tensor

    if isinstance(data, Tensor):
        return data
    return tensor(data, dtype=dtype, device=device)


def check_coo(
    indices: Tensor, values: Tensor, size: tuple, *, check_invariants: bool = False, is_coalesced: bool = False
) -> None:
    """PyTorch's checks of a COO tensor's pieces (``_validate_sparse_coo_tensor_args``)."""
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sparse_dim, nnz = indices._shape
    dense_dim = max(values.ndim - 1, 0)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(
            f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
            f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}"
        )
    if values.ndim == 0 or values._shape[0] != nnz:
        got = values._shape[0] if values.ndim else 1
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: {got}"
        )
    expected = [nnz, *size[sparse_dim:]]
    if list(values._shape) != expected:
        raise RuntimeError(f"values has incorrect size, expected {expected}, got {list(values._shape)}")
    idx = indices._array
    if nnz:
        low = idx.min(axis=1)
        high = idx.max(axis=1)
        for dim in range(sparse_dim):
            if low[dim] < 0:
                raise RuntimeError(f"found negative index {int(low[dim])} for dim {dim}")
            if high[dim] >= size[dim]:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} "
                    f"but found index {int(high[dim])}"
                )
    if check_invariants and is_coalesced and nnz > 1:
        from ember.core.sparse.coo import linear_index

        lin = linear_index(idx, tuple(size[:sparse_dim]))
        if not bool(np.all(lin[1:] > lin[:-1])):
            raise RuntimeError("cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor")


@public("sparse_coo_tensor")
def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype: D.dtype | None = None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> Tensor:
    """A sparse COO tensor with ``values`` at the columns of ``indices`` (duplicates add up).

    >>> i = ember.tensor([[0, 1, 1], [2, 0, 2]])
    >>> ember.sparse_coo_tensor(i, ember.tensor([3.0, 4.0, 5.0]), (2, 3)).to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    """
    from ember.ops import aten

    values = _as_tensor(values, dtype, device)
    indices = _as_tensor(indices, D.int64, values.device)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if indices.dtype is not D.int64:
        indices = indices.to(D.int64)
    if indices.device != values.device:
        raise RuntimeError(
            f"indices and values must be on the same device, but got {indices.device} and {values.device}"
        )
    if device is not None and values.device.type != str(device).split(":")[0]:
        values = values.to(device)
        indices = indices.to(device)
    if values.device.type != "cpu":
        raise NotImplementedError(f"sparse COO tensors on the {values.device.type} device are not supported by Ember")
    if indices.ndim == 1:
        indices = indices.reshape(-1, 1)  # PyTorch reads 1-D indices as one column
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if size is None:
        # Each sparse size is one past the largest index (0 when there are none); dense sizes from values.
        idx = indices._array
        if idx.size and idx.min() < 0:
            dim = int(np.argmin(idx.min(axis=1)))
            raise RuntimeError(f"found negative index {int(idx[dim].min())} for dim {dim}")
        sparse_sizes = [int(r.max()) + 1 if r.size else 0 for r in idx]
        size = (*sparse_sizes, *values._shape[1:])
    size = tuple(int(s) for s in size)
    if check_invariants is None:
        from ember.core.sparse.api import check_sparse_tensor_invariants

        check_invariants = check_sparse_tensor_invariants.is_enabled()
    check_coo(indices, values, size, check_invariants=check_invariants, is_coalesced=bool(is_coalesced))
    sparse_dim = indices._shape[0]
    out = aten._sparse_coo_tensor_with_dims_and_tensors.default(
        sparse_dim, len(size) - sparse_dim, size, indices, values, is_coalesced=is_coalesced
    )
    if requires_grad:
        out.requires_grad_(True)
    return out


@public("_sparse_coo_tensor_unsafe")
def _sparse_coo_tensor_unsafe(indices: Tensor, values: Tensor, size, *, dtype=None, device=None, **_) -> Tensor:
    """A COO tensor from pieces the caller vouches for: only the shapes are checked."""
    from ember.ops import aten

    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    size = tuple(int(s) for s in size)
    sparse_dim = indices._shape[0]
    return aten._sparse_coo_tensor_with_dims_and_tensors.default(
        sparse_dim, len(size) - sparse_dim, size, indices, values
    )
