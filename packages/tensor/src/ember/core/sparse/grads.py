"""Backward kernels of the sparse reductions, for autograd's formulas: each returns a sparse
gradient with the (coalesced) indices of the input, as PyTorch's do."""

from __future__ import annotations

import numpy as np

from ember.core.layout import normalize_dim
from ember.core.sparse.coo import SparseTensor, coalesced, linear_index
from ember.core.sparse.kernels import idx, new_sparse, vals
from ember.core.tensor import Tensor


def sum_backward(grad: Tensor, self: SparseTensor, dims) -> SparseTensor:
    """The gradient of ``sparse.sum(self, dims)`` (all dims when ``dims`` is None) for a dense ``grad``."""
    source = coalesced(self)
    nd, ndim = source.sparse_dim(), source.ndim
    values_shape = vals(source).shape
    g = grad._array
    if dims is None:
        out = np.broadcast_to(g, values_shape)
    else:
        dims = sorted({normalize_dim(d, ndim) for d in ([dims] if isinstance(dims, int) else dims)})
        kept = [d for d in range(nd) if d not in dims]
        picked = g[tuple(idx(source)[kept])] if kept else np.broadcast_to(g, (values_shape[0], *g.shape))
        # Put back the summed dense dimensions as size-1 axes, then broadcast over them.
        for d in dims:
            if d >= nd:
                picked = np.expand_dims(picked, d - nd + 1)
        out = np.broadcast_to(picked, values_shape)
    return new_sparse(idx(source), out.astype(source.dtype.np), source._shape, True, source.dtype)


def softmax_backward(grad: Tensor, output: SparseTensor, dim: int, log: bool) -> SparseTensor:
    """The gradient of the sparse (log-)softmax along ``dim``, at ``output``'s indices."""
    nd, ndim = output.sparse_dim(), output.ndim
    dim = normalize_dim(dim, ndim)
    y = vals(output)
    if type(grad) is SparseTensor:
        grad = grad.to_dense()
    g = grad._array[tuple(idx(output))] if nd else np.broadcast_to(grad._array, y.shape)
    weight = np.exp(y) if log else y
    if dim >= nd:
        total = (g if log else g * y).sum(axis=dim - nd + 1, keepdims=True)
    else:
        others = [d for d in range(nd) if d != dim]
        group = linear_index(idx(output)[others], tuple(output._shape[d] for d in others))
        _, group = np.unique(group, return_inverse=True)
        group = group.reshape(-1)
        sums = np.zeros((int(group.max()) + 1 if group.size else 0, *y.shape[1:]), y.dtype)
        np.add.at(sums, group, g if log else g * y)
        total = sums[group]
    out = g - weight * total if log else weight * (g - total)
    return new_sparse(idx(output), out.astype(output.dtype.np), output._shape, True, output.dtype)
