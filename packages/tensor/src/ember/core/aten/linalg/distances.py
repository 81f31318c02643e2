"""``cdist``: the p-norm distance between each pair of rows of two batches of matrices.

A composite in PyTorch's two constructions: for p = 2 with more than 25 rows on either side (or
``compute_mode="use_mm_for_euclid_dist"``) the distances come from one matrix product,
``|a|^2 - 2 a.b + |b|^2`` clamped at 1e-30 before the square root, as PyTorch computes them (and so
with its rounding); otherwise from the differences of every pair. Autograd goes through the parts,
so the gradient at a zero distance is nan where PyTorch's own backward gives 0.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor

cdist = define("cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor")

_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _check(x1: Tensor, x2: Tensor, p: float) -> None:
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype not in (D.float32, D.float64):
            if x.dtype.category == D.FLOATING:
                raise NotImplementedError(f"\"cdist\" not implemented for '{type_name(x.dtype)}'")
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {type_name(x.dtype)}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1._shape[-1] != x2._shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1._shape[-1]} X2: {x2._shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x1.dtype)} but found {type_name(x2.dtype)}")


def _euclidean(x1: Tensor, x2: Tensor) -> Tensor:
    from ember.core.aten.shape.joining import cat

    x1_norm = x1.pow(2).sum(-1, keepdim=True)
    x2_norm = x2.pow(2).sum(-1, keepdim=True)
    left = cat([x1 * -2, x1_norm, x1_norm.new_ones(x1_norm.shape)], -1)
    right = cat([x2, x2_norm.new_ones(x2_norm.shape), x2_norm], -1)
    return left.matmul(right.transpose(-1, -2)).clamp_min(1e-30).sqrt()


def _direct(x1: Tensor, x2: Tensor, p: float) -> Tensor:
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        # The count of nonzero differences, through sign so that it carries a (zero) gradient as PyTorch's does.
        return diff.sign().sum(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return diff.pow(2).sum(-1).sqrt()
    if math.isinf(p):
        return diff.amax(-1)
    return diff.pow(p).sum(-1).pow(1.0 / p)


@cdist.register_decomposition
def _cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: int | None = None) -> Tensor:
    _check(x1, x2, p)
    batch = broadcast_shapes(tuple(x1._shape[:-2]), tuple(x2._shape[:-2]))
    r1, r2, c = x1._shape[-2], x2._shape[-2], x1._shape[-1]
    x1 = x1.expand((*batch, r1, c))
    x2 = x2.expand((*batch, r2, c))
    if c == 0:  # zeros, still attached to the inputs as PyTorch's result is
        return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).sum(-1)
    mode = 0 if compute_mode is None else compute_mode
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        return _euclidean(x1, x2)
    return _direct(x1, x2, p)


@public("cdist")
def _cdist_function(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    if compute_mode is not None and compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return cdist(x1, x2, p, None if compute_mode is None else _MODES[compute_mode])
