"""``cosine_similarity``: the cosine of the angle between ``x1`` and ``x2`` along ``dim``.

As PyTorch 2.13 computes it: broadcast both, divide each by its 2-norm clamped below at ``eps``,
and sum the products, so that a zero vector gives 0 rather than NaN. Integer inputs are accepted
when the promoted dtype is floating (they are converted first). Half types compute in float32, with ``eps`` rounded to
the half type first as PyTorch's clamp does.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes, normalize_dim
from ember.core.promotion import result_type
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

cosine_similarity_op = define("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor")


def _plan(x1: Tensor, x2: Tensor, dim: int) -> tuple:
    """The result dtype, the broadcast shape, the reduced axis and the result's shape."""
    dtype = result_type(x1, x2)
    if dtype.category != D.FLOATING:
        raise RuntimeError(
            f"expected common dtype to be floating point, yet common dtype is {D.SCALAR_TYPE_NAMES[dtype]}"
        )
    shape = broadcast_shapes(x1._shape, x2._shape)
    axis = normalize_dim(dim, len(shape))
    return dtype, shape, axis, shape[:axis] + shape[axis + 1 :]


@cosine_similarity_op.register_meta
def _cosine_similarity_meta(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    dtype, _, _, out_shape = _plan(x1, x2, dim)
    return empty(out_shape, dtype, x1.device)


@cosine_similarity_op.register_kernel("cpu")
def _cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    dtype, shape, axis, _ = _plan(x1, x2, dim)
    compute = np.float32 if dtype.itemsize == 2 else dtype.np
    a = np.broadcast_to(x1._array.astype(compute, copy=False), shape)
    b = np.broadcast_to(x2._array.astype(compute, copy=False), shape)
    # PyTorch clamps with eps in the tensors' dtype: 1e-8 is 0 in float16, so zero vectors give NaN there.
    eps = float(np.asarray(eps, dtype.np).astype(compute))
    token = silence()
    try:
        na = np.maximum(np.sqrt(np.sum(a * a, axis=axis, keepdims=True)), eps)
        nb = np.maximum(np.sqrt(np.sum(b * b, axis=axis, keepdims=True)), eps)
        result = np.sum((a / na) * (b / nb), axis=axis)
    finally:
        restore(token)
    return from_array(np.asarray(result).astype(dtype.np), dtype)


@cosine_similarity_op.register_decomposition
def _cosine_similarity_decomposition(x1, x2, dim=1, eps=1e-08):
    dtype = result_type(x1, x2)
    shape = broadcast_shapes(x1._shape, x2._shape)
    x1, x2 = x1.to(dtype).expand(shape), x2.to(dtype).expand(shape)
    n1 = _clamped_norm(x1, dim, eps)
    n2 = _clamped_norm(x2, dim, eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _clamped_norm(x, dim, eps):
    """The 2-norm along ``dim`` raised to ``eps``, differentiated as the norm itself.

    PyTorch clamps the norm in place with gradients off, so its backward passes through the clamp
    unmasked (below ``eps`` the gradient still sees the norm). ``norm - norm.detach()`` is an exact
    zero that carries that gradient; NaN norms stay NaN as the clamp keeps them.
    """
    norm = x.norm(2, dim, keepdim=True)
    return where_function(norm >= eps, norm, (norm - norm.detach()) + eps)


@public("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """``ember.cosine_similarity``: ``sum(x1 * x2) / (max(|x1|, eps) * max(|x2|, eps))`` along ``dim``."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"cosine_similarity(): argument 'dim' must be int, not {type(dim).__name__}")
    return cosine_similarity_op(x1, x2, dim, float(eps))
