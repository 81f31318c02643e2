"""Derivatives of the moments (``ember.core.aten.reductions.statistics``): ``var``, ``std`` and their
``_mean`` forms.

``var``'s gradient is ``2 / (N - correction) * grad * (x - mean)``. At ``N <= correction`` (the
forward's inf/NaN case) PyTorch's rule, kept here: reducing everything, the gradient is NaN where an
element equals the mean and inf elsewhere; along dims, the factor is ``2 / (N - correction)`` as it
falls (inf at zero degrees of freedom). ``dim=[]`` reduces everything, in the gradient too (PyTorch
2.13 divides by N = 1 there, a gradient of infinities; we keep the forward's meaning).
"""

from __future__ import annotations

import math

from ember.autograd.derivatives.reductions.reduction_common import count, expand_back, reduced_dims, restore
from ember.autograd.registry import derivative
from ember.core.aten.pointwise.ternary import where_function as where
from ember.core.dispatch import ops

aten = ops.aten


def _correction(correction) -> float:
    if correction is None:
        return 1.0
    if hasattr(correction, "item"):
        correction = correction.item()
    return float(correction)


def _all_dims(self, dim) -> bool:
    return self.ndim == 0 or dim is None or (not isinstance(dim, int) and len(dim) == 0)


def var_backward(grad, self, dim, correction, keepdim: bool):
    c = _correction(correction)
    if _all_dims(self, dim):
        dof = self.numel() - c
        if dof <= 0:
            mean = self.mean()
            return grad * where(self == mean, math.nan, math.inf)
        return (2.0 / dof) * grad * (self - self.mean())
    dof = count(self.shape, dim) - c
    factor = 2.0 / dof if dof != 0 else math.inf
    grad = restore(grad, self.shape, dim, keepdim)
    return factor * grad * (self - self.mean(list(reduced_dims(self.ndim, dim)), keepdim=True))


def std_backward(result, grad, self, dim, correction, keepdim: bool):
    # d std = d var / (2 std); where std is 0 the gradient is 0, as in PyTorch. The division is by a
    # safe denominator there, so that differentiating this (double backward, forward mode through
    # the transpose) meets no 0/0 in the discarded branch.
    zero = result == 0
    grad_var = where(zero, 0.0, grad / where(zero, 1.0, result * 2))
    return var_backward(grad_var, self, dim, correction, keepdim)


def mean_backward(grad, self, dim, keepdim: bool):
    n = self.numel() if _all_dims(self, dim) else count(self.shape, dim)
    return expand_back(grad, self.shape, None if _all_dims(self, dim) else dim, keepdim) / n


@derivative(aten.var.correction, save=("self",))
def _var(grad, self, dim, correction, keepdim, **_):
    return var_backward(grad, self, dim, correction, keepdim)


@derivative(aten.std.correction, save=("self", "result"))
def _std(grad, self, dim, correction, keepdim, result, **_):
    return std_backward(result, grad, self, dim, correction, keepdim)


def _add(a, b):
    return b if a is None else a if b is None else a + b


@derivative(aten.var_mean.correction, save=("self",))
def _var_mean(grads, self, dim, correction, keepdim, **_):
    grad_var, grad_mean = grads
    out = var_backward(grad_var, self, dim, correction, keepdim) if grad_var is not None else None
    return _add(out, mean_backward(grad_mean, self, dim, keepdim) if grad_mean is not None else None)


@derivative(aten.std_mean.correction, save=("self", "result"))
def _std_mean(grads, self, dim, correction, keepdim, result, **_):
    grad_std, grad_mean = grads
    out = std_backward(result[0], grad_std, self, dim, correction, keepdim) if grad_std is not None else None
    return _add(out, mean_backward(grad_mean, self, dim, keepdim) if grad_mean is not None else None)
