"""``ember.sparse``: PyTorch's ``torch.sparse`` for sparse COO tensors (``ember.sparse_coo_tensor``,
``Tensor.to_sparse()``). The tensor type and its kernels live in ``ember.core.sparse``."""

from ember.core.sparse.api import check_sparse_tensor_invariants
from ember.core.sparse.api import sparse_addmm as addmm
from ember.core.sparse.api import sparse_log_softmax as log_softmax
from ember.core.sparse.api import sparse_mm as mm
from ember.core.sparse.api import sparse_softmax as softmax
from ember.core.sparse.api import sparse_sum as sum
from ember.core.sparse.coo import SparseTensor

__all__ = ["SparseTensor", "addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]
