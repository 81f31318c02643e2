"""Derivatives of the sparse COO ops.

Where PyTorch's gradient of a sparse input is sparse, so is ours, with the input's (coalesced)
indices: ``to_dense``, ``sparse.mm``/``sparse.addmm`` (for the sparse matrix), ``sparse.sum`` and the
sparse softmaxes. The constructor's values get the gradient at their own indices (a gather, so that
duplicate indices each get the whole gradient of their element). ``values()`` sends its gradient
back as a sparse tensor with the input's indices.
"""

from __future__ import annotations

from ember.autograd.registry import derivative, nondifferentiable
from ember.core.aten.sparse import coo_ops as C
from ember.core.dispatch import ops
from ember.core.sparse.coo import SparseTensor
from ember.core.sparse.grads import softmax_backward, sum_backward

aten = ops.aten


def _dense(grad):
    return grad.to_dense() if type(grad) is SparseTensor else grad


def _masked(grad, like: SparseTensor):
    """``grad`` (dense or sparse) at ``like``'s coalesced indices, as a sparse tensor."""
    return C.sparse_mask_op(_dense(grad), like.coalesce())


@derivative(C.coo_tensor_op, save=("indices",))
def _coo_tensor(grad, sparse_dim, dense_dim, size, indices, values, **_):
    g = _dense(grad)
    if sparse_dim == 0:
        return None, g.unsqueeze(0).expand(values.shape)
    return None, aten.index.Tensor(g, list(indices.unbind(0)))


@derivative(C.to_dense_op, save=("self",))
def _to_dense(grad, self, dtype=None, masked_grad=None, **_):
    if masked_grad is False:
        return grad.to_sparse(self.sparse_dim())
    return _masked(grad, self)


@derivative(C.to_sparse_op)
def _to_sparse(grad, self, sparse_dim, **_):
    return _dense(grad)


@derivative(C.coalesce_op)
def _coalesce(grad, self, **_):
    return grad


@derivative(C.values_op, save=("self",))
def _values(grad, self, **_):
    indices = self._indices()
    return C.coo_tensor_op(indices.shape[0], grad.ndim - 1, tuple(self.shape), indices, grad, is_coalesced=True)


@derivative(C.sparse_mask_op)
def _sparse_mask(grad, self, mask, **_):
    return _dense(grad), None


@derivative(C.sparse_mm_op, save=("sparse", "dense"))
def _sparse_mm(grad, sparse, dense, needs, **_):
    g_sparse = _masked(_dense(grad).mm(dense.t()), sparse) if needs[0] else None
    g_dense = sparse.t().mm(_dense(grad)) if needs[1] else None
    return g_sparse, g_dense


@derivative(C.hspmm_op)
def _hspmm(grad, mat1, mat2, **_):
    raise RuntimeError("derivative for aten::hspmm is not implemented")  # as in PyTorch


@derivative(C.sparse_addmm_op, save=("mat1", "mat2"))
def _sparse_addmm(grad, self, mat1, mat2, beta, alpha, needs, **_):
    g = _dense(grad)
    g_self = (g if beta == 1 else g * beta) if needs[0] else None
    g1 = _masked(g.mm(mat2.t()) * alpha, mat1) if needs[1] else None
    g2 = mat1.t().mm(g) * alpha if needs[2] else None
    return g_self, g1, g2


@derivative(C.sparse_sum_op, save=("self",))
def _sparse_sum(grad, self, **_):
    return sum_backward(_dense(grad), self, None)


@derivative(C.sparse_sum_dim_op, save=("self",))
def _sparse_sum_dim(grad, self, dim, **_):
    return sum_backward(_dense(grad), self, dim)


@derivative(C.sparse_softmax_op, save=("result",))
def _sparse_softmax(grad, self, dim, half_to_float, result, **_):
    return softmax_backward(grad, result, dim, log=False)


@derivative(C.sparse_log_softmax_op, save=("result",))
def _sparse_log_softmax(grad, self, dim, half_to_float, result, **_):
    return softmax_backward(grad, result, dim, log=True)


nondifferentiable(C.indices_op, C.raw_indices_op, C.raw_values_op)
