"""Derivatives of the lookups (``ember.core.aten.nn.embedding``).

``embedding``'s weight gradient sums each looked-up row's gradient into that row (one
``index_add``). Rows at ``padding_idx`` get none; with ``scale_grad_by_freq`` each contribution is
divided by how often its row was looked up in this call, as PyTorch's dense backward does.
With ``sparse=True`` the weight's gradient is a sparse COO tensor with one entry per lookup.
``embedding_renorm_`` rescales rows in place outside autograd (``max_norm`` runs it under no-grad).
"""

from __future__ import annotations

from ember.autograd.registry import derivative, nondifferentiable
from ember.core.aten.factories.factories import ones_function, zeros_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import ops
from ember.core.dtypes import int64
from ember.core.sparse.construct import _sparse_coo_tensor_unsafe

aten = ops.aten


@derivative(aten.embedding.default, save=("indices",))
def _embedding(grad, weight, indices, padding_idx, scale_grad_by_freq, sparse, **_):
    if sparse and scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    rows, dim = weight.shape
    flat = indices.reshape(-1)
    g = grad.reshape(-1, dim)
    if sparse and padding_idx >= 0:
        keep = flat != padding_idx  # PyTorch's sparse gradient leaves the padding rows out
        flat, g = flat[keep], g[keep]
    elif padding_idx >= 0:
        g = where_function((flat != padding_idx).unsqueeze(1), g, 0)
    if scale_grad_by_freq:
        ones = ones_function(flat.shape, dtype=g.dtype, device=g.device)
        counts = aten.index_add.default(zeros_function((rows,), dtype=g.dtype, device=g.device), 0, flat, ones)
        g = g / counts.index_select(0, flat).unsqueeze(1)
    if sparse:
        # One entry per lookup, duplicates and all (uncoalesced), as PyTorch's embedding_sparse_backward.
        return _sparse_coo_tensor_unsafe(flat.unsqueeze(0).to(dtype=int64), g, (rows, dim)), None
    total = zeros_function((rows, dim), dtype=g.dtype, device=g.device)
    return aten.index_add.default(total, 0, flat, g), None


nondifferentiable(aten.embedding_renorm_.default, aten.embedding_renorm.default)
