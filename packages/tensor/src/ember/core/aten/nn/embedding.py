"""Lookups by index: ``embedding`` (rows of a weight matrix), ``embedding_renorm_`` (``max_norm``'s
in-place rescaling of the rows it will read) and ``one_hot``.

The embedding forward is one ``np.take`` of whole rows; ``padding_idx`` only matters to the gradient.
``embedding_renorm_`` scales each distinct referenced row whose ``norm_type``-norm exceeds
``max_norm`` by ``max_norm / (norm + 1e-7)``, as PyTorch does, and bumps the weight's version.
``one_hot`` checks the class values against ``num_classes`` (or infers it as max + 1).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor, empty, from_array

embedding_op = define(
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
    "bool sparse=False) -> Tensor",
    ("core",),
)
embedding_renorm_op = define(
    "embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)", ("inplace",)
)
# Without num_classes, the result's last size is the largest class value plus one.
one_hot_op = define("one_hot(Tensor self, int num_classes=-1) -> Tensor", ("data_dependent_output",))

_LEGACY_NAMES = {
    D.float32: "FloatTensor",
    D.float64: "DoubleTensor",
    D.float16: "HalfTensor",
    D.bfloat16: "BFloat16Tensor",
    D.int8: "CharTensor",
    D.int16: "ShortTensor",
    D.int32: "IntTensor",
    D.int64: "LongTensor",
    D.uint8: "ByteTensor",
    D.bool_: "BoolTensor",
    D.complex64: "ComplexFloatTensor",
}


def _check_indices(indices: Tensor, op: str) -> None:
    if indices.dtype is not D.int64 and indices.dtype is not D.int32:
        name = _LEGACY_NAMES.get(indices.dtype, type_name(indices.dtype) + "Tensor")
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got ember.{name} instead (while checking arguments for {op})"
        )


def _rows(weight: Tensor, indices: Tensor) -> np.ndarray:
    idx = indices._array
    rows = weight._shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        raise IndexError("index out of range in self")
    return idx


def _embedding_shape(weight: Tensor, indices: Tensor) -> tuple:
    _check_indices(indices, "embedding")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    return (*indices._shape, weight._shape[1])


@embedding_op.register_meta
def _embedding_meta(weight: Tensor, indices: Tensor, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return empty(_embedding_shape(weight, indices), weight.dtype, weight.device)


@embedding_op.register_kernel("cpu")
def _embedding(weight: Tensor, indices: Tensor, padding_idx=-1, scale_grad_by_freq=False, sparse=False) -> Tensor:
    shape = _embedding_shape(weight, indices)
    idx = _rows(weight, indices)
    return from_array(np.take(weight._array, idx.reshape(-1), axis=0).reshape(shape), weight.dtype)


@embedding_op.register_decomposition
def _embedding_decomposition(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return weight.index_select(0, indices.reshape(-1)).view(*indices.shape, weight.shape[1])


@embedding_renorm_op.register_kernel("cpu")
def _embedding_renorm(self: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    _check_indices(indices, "embedding_renorm_")
    if self.ndim != 2:
        raise RuntimeError("embedding_renorm_(): argument 'self' must be 2-D")
    rows = np.unique(_rows(self, indices))
    if rows.size:
        w = self._array
        selected = w[rows].astype(np.float64 if w.dtype == np.float64 else np.float32)
        p = float(norm_type)
        if p == np.inf:
            norms = np.max(np.abs(selected), axis=1)
        elif p == 0:
            norms = np.count_nonzero(selected, axis=1).astype(selected.dtype)
        else:
            norms = np.sum(np.abs(selected) ** p, axis=1) ** (1.0 / p)
        big = norms > max_norm
        scale = (max_norm / (norms[big] + 1e-7))[:, None]
        w[rows[big]] = (selected[big] * scale).astype(w.dtype)
        self._storage.version += 1
    return self


@embedding_renorm_op.register_meta
def _embedding_renorm_meta(self: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    _check_indices(indices, "embedding_renorm_")
    return self


@public("embedding")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``ember.embedding``: the rows of ``weight`` that ``indices`` name."""
    return embedding_op(weight, indices, padding_idx, scale_grad_by_freq, sparse)


@public("embedding_renorm_")
def embedding_renorm_(input, indices, max_norm, norm_type):
    """``ember.embedding_renorm_``: rescale the referenced rows of ``input`` to norm at most ``max_norm``."""
    return embedding_renorm_op(input, indices, float(max_norm), float(norm_type))


# -- one_hot ------------------------------------------------------------------------------------------------


def _check_one_hot(self: Tensor) -> None:
    if self.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")


@one_hot_op.register_meta
def _one_hot_meta(self: Tensor, num_classes: int = -1) -> Tensor:
    _check_one_hot(self)
    if num_classes == -1:
        raise RuntimeError("one_hot on a meta tensor needs num_classes: it cannot infer it without data")
    if num_classes < -1:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return empty((*self._shape, num_classes), D.int64, self.device)


@one_hot_op.register_kernel("cpu")
def _one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    _check_one_hot(self)
    values = self._array
    if values.size == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return from_array(np.zeros((*self._shape, num_classes), np.int64), D.int64)
    if values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(values.max()) + 1
    elif values.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros((values.size, num_classes), np.int64)
    out[np.arange(values.size), values.reshape(-1)] = 1
    return from_array(out.reshape(*self._shape, num_classes), D.int64)
