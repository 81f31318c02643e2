"""The functions of ``ember.sparse`` (PyTorch's ``torch.sparse``): products with a sparse operand,
sums, softmaxes and the invariant-check switch. Each calls its op, so that autograd records it."""

from __future__ import annotations

import contextlib

from ember.core import dtypes as D
from ember.core.aten.sparse import coo_ops as C
from ember.core.sparse.coo import SparseTensor
from ember.core.tensor import Tensor


def sparse_mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """``mat1 @ mat2`` with a sparse ``mat1`` (``ember.sparse.mm``). Sparse @ dense is dense, sparse @
    sparse is sparse; the gradient of a sparse ``mat1`` is sparse, with ``mat1``'s indices."""
    if reduce is not None:
        raise NotImplementedError("sparse.mm(reduce=...) is for sparse CSR tensors, which Ember does not have")
    if type(mat1) is not SparseTensor:
        raise RuntimeError("sparse.mm: expected mat1 to be a sparse COO tensor")
    return C.sparse_mm_op(mat1, mat2)


def sparse_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (``ember.sparse.addmm``)."""
    if type(mat1) is not SparseTensor:
        raise RuntimeError("sparse.addmm: expected mat1 to be a sparse COO tensor")
    return C.sparse_addmm_op(input, mat1, mat2, beta=beta, alpha=alpha)


def sparse_sum(input: Tensor, dim=None, dtype: D.dtype | None = None) -> Tensor:
    """The sum of a sparse tensor's elements, over ``dim`` (an int or a sequence) or all of them.
    Summing every sparse dimension gives a dense tensor; otherwise the result is sparse."""
    if type(input) is not SparseTensor:
        raise RuntimeError("sparse.sum: expected a sparse COO tensor")
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return C.sparse_sum_op(input)
    return C.sparse_sum_dim_op(input, [dim] if isinstance(dim, int) else list(dim))


def _softmax(op, input: Tensor, dim: int, dtype: D.dtype | None) -> Tensor:
    if type(input) is not SparseTensor:
        raise RuntimeError("sparse softmax: expected a sparse COO tensor")
    if dtype is not None:
        input = input.to(dtype)
    return op(input, dim, False)


def sparse_softmax(input: Tensor, dim: int, dtype: D.dtype | None = None) -> Tensor:
    """Softmax along ``dim`` over the stored elements only (the others count as ``-inf``)."""
    return _softmax(C.sparse_softmax_op, input, dim, dtype)


def sparse_log_softmax(input: Tensor, dim: int, dtype: D.dtype | None = None) -> Tensor:
    """Log-softmax along ``dim`` over the stored elements only."""
    return _softmax(C.sparse_log_softmax_op, input, dim, dtype)


class check_sparse_tensor_invariants(contextlib.ContextDecorator):
    """PyTorch's switch for checking sparse tensors' invariants in ``sparse_coo_tensor``. Ember always
    checks the index bounds; the switch adds the check of ``is_coalesced=True``."""

    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved: bool | None = None

    def __enter__(self):
        self.saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc) -> None:
        check_sparse_tensor_invariants._enabled = self.saved
