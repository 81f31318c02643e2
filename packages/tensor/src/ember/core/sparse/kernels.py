"""The sparse kernel table: which ops run on sparse COO tensors, and the door to it.

``SparseTensor.__ember_dispatch__`` sends every op with a sparse argument here. The table maps op
objects to kernels that compute on the tensors' NumPy indices and values; the kernels live in the
modules of their kind (``structure``, ``pointwise``, ``products``) and register with
``sparse_kernel``. An op the table lacks raises PyTorch's error for an op without a SparseCPU kernel,
so that no dense kernel ever runs on a tensor whose data it cannot see. A composite op without a
sparse kernel of its own runs its decomposition, whose parts meet the same table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.dispatch import OpOverload
from ember.core.sparse.coo import SparseTensor, make_sparse
from ember.core.tensor import Tensor, from_array

SPARSE_KERNELS: dict[OpOverload, Callable] = {}


def sparse_kernel(*ops: OpOverload | None) -> Callable[[Callable], Callable]:
    """Register the decorated function as the sparse kernel of each op (``None`` entries are skipped:
    ops that this build of the core does not define)."""

    def register(fn: Callable) -> Callable:
        for op in ops:
            if op is not None:
                SPARSE_KERNELS[op] = fn
        return fn

    return register


def _backend(args: tuple, kwargs: dict) -> str:
    for a in (*args, *kwargs.values()):
        if type(a) is SparseTensor:
            return "Sparse" + a.device.type.upper()
    return "SparseCPU"


def run_sparse(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    kernel = SPARSE_KERNELS.get(op)
    if kernel is None and op.decomposition is not None and op.kind == "composite_implicit":
        # An op that is its parts (matmul is mm here): the parts find their sparse kernels, or refuse.
        return op.decomposition(*args, **kwargs)
    if kernel is None:
        name = op.name if op.overload == "default" else f"{op.name}.{op.overload}"
        raise NotImplementedError(
            f"Could not run '{op.namespace}::{name}' with arguments from the '{_backend(args, kwargs)}' backend. "
            "Ember's sparse COO tensors have no kernel for this op; convert with Tensor.to_dense() first."
        )
    return kernel(*args, **kwargs)


# -- helpers for kernels -------------------------------------------------------------------------------


def idx(t: SparseTensor) -> np.ndarray:
    return t._sp_indices._array


def vals(t: SparseTensor) -> np.ndarray:
    return t._sp_values._array


def new_sparse(indices: np.ndarray, values: np.ndarray, shape: tuple, coalesced: bool, dtype: D.dtype) -> SparseTensor:
    """A sparse tensor owning fresh copies of ``indices`` and ``values``; with fewer than two entries it
    is coalesced whatever the caller says, as PyTorch's are."""
    coalesced = coalesced or indices.shape[1] <= 1
    return make_sparse(
        from_array(np.array(indices, np.int64, copy=True), D.int64),
        from_array(np.array(values, copy=True), dtype),
        tuple(shape),
        coalesced,
    )


def with_values(t: SparseTensor, values: Tensor, coalesced: bool | None = None) -> SparseTensor:
    """``t``'s indices (shared) with new values."""
    return make_sparse(t._sp_indices, values, t._shape, t._sp_coalesced if coalesced is None else coalesced)


def is_scalar(x) -> bool:
    """A Python number or a 0-d dense tensor: what multiplies every stored value alike."""
    if isinstance(x, bool | int | float | complex):
        return True
    return type(x) is not SparseTensor and isinstance(x, Tensor) and x.ndim == 0


def check_cpu(t: Tensor, what: str) -> None:
    if t.device.type != "cpu":
        raise NotImplementedError(f"{what}: Ember's sparse kernels run on the CPU; got a {t.device.type} tensor")
