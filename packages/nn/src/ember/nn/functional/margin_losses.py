"""The losses ``torch.nn.functional`` computes in ATen that the core has no op for, composed from
ops with derivatives: Poisson and Gaussian negative log likelihoods, the hinge, margin, ranking
and triplet losses, and the (multi-label) soft-margin losses. Each reduces as PyTorch's
``apply_loss_reduction`` does; ``size_average``/``reduce`` are the deprecated spellings."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.aten.pointwise.ternary import where_function as _where
from ember.core.creation import tensor as make_tensor
from ember.core.functional._reduction import get_enum, legacy_get_string
from ember.core.tensor import Tensor
from ember.nn.functional.activation import logsigmoid
from ember.nn.functional.distance import pairwise_distance

__all__ = [
    "cosine_embedding_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce, emit_warning=True)
    get_enum(reduction)  # PyTorch's ValueError for an unknown string
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
    reduce=None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Negative log likelihood of ``target`` under a Poisson of rate ``exp(input)`` (or ``input``)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_get_string(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        # Stirling's approximation of log(target!), counted only where target > 1.
        stirling = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """Negative log likelihood of ``target`` under Gaussians of mean ``input`` and variance ``var``."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * input.new_ones(input.shape)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape, strict=True) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """``input`` where ``target`` is 1 and ``max(0, margin - input)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = input.new_zeros(input.shape)
    margin_part = _where(target != 1, (margin - input).clamp_min(0), zeros)
    self_part = _where(target != -1, input, zeros)
    return _reduce(margin_part + self_part, reduction)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None, reduce=None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``max(0, -target (input1 - input2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: "
            f"{input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target input))``."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None, reduce=None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Binary cross entropy of ``sigmoid(input)`` per class, averaged over the classes."""
    if size_average is not None or reduce is not None:
        reduction = legacy_get_string(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


_EPSILON = 1e-12


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None, reduce=None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``1 - cos(x1, x2)`` where ``target`` is 1 and ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(
            f"1D target tensor expects 2D input tensors, but found inputs with sizes {list(input1.shape)} and "
            f"{list(input2.shape)}."
        )
    if dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(
            f"0D target tensor expects 1D input tensors, but found inputs with sizes {list(input1.shape)} and "
            f"{list(input2.shape)}."
        )
    products = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + _EPSILON
    squares2 = (input2 * input2).sum(dim) + _EPSILON
    cos = products / (squares1 * squares2).sqrt()
    zeros = cos.new_zeros(cos.shape)
    loss = _where(target == 1, 1 - cos, zeros) + _where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(loss, reduction)


def multi_margin_loss(
    input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, size_average=None,
    reduce=None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Per sample ``sum_{i != y} max(0, margin - x[y] + x[i])^p w[y] / C`` for class indices ``y``."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2:
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {list(input.shape)}"
        )
    rows = input.reshape(1, -1) if input.dim() <= 1 else input
    classes = rows.shape[1]
    y = target.reshape(-1)
    if y.numel() != rows.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {rows.shape[0]} but got {list(target.shape)}")
    values = np.asarray(y.numpy())
    if values.size and (values.min() < 0 or values.max() >= classes):
        raise RuntimeError("target out of range")
    picked = rows.gather(1, y.unsqueeze(1))
    terms = (margin - picked + rows).clamp_min(0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.index_select(0, y).unsqueeze(1)
    others = make_tensor(np.arange(classes)[None, :] != values[:, None], device=rows.device)
    loss = (terms * others.to(terms.dtype)).sum(1) / classes
    if input.dim() <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Per sample ``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``; each row of
    ``target`` lists the target classes and ends at its first -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if input.dim() > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    rows = input.reshape(1, -1) if input.dim() <= 1 else input
    n, classes = rows.shape
    labels = np.asarray(target.reshape(n, classes).numpy())
    valid = np.zeros((n, classes), dtype=bool)
    is_target = np.zeros((n, classes), dtype=bool)
    for r in range(n):
        for j, label in enumerate(labels[r]):
            if label < 0:
                break
            if label >= classes:
                raise RuntimeError(f"Expected 0 <= target < {classes}, but got target = {label}")
            valid[r, j] = True
            is_target[r, label] = True
    index = make_tensor(np.where(valid, labels, 0), dtype=D.int64, device=rows.device)
    picked = rows.gather(1, index)  # (N, C): x at each listed target
    pairs = (1 - picked.unsqueeze(2) + rows.unsqueeze(1)).clamp_min(0)
    mask = make_tensor(valid[:, :, None] & ~is_target[:, None, :], device=rows.device).to(rows.dtype)
    loss = (pairs * mask).sum((1, 2)) / classes
    if input.dim() <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
    swap: bool = False, size_average=None, reduce=None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the ``p``-norm pairwise distance."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _check_triplet(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
            f"got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs"
        )


def triplet_margin_with_distance_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0, swap: bool = False,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """The triplet loss under any distance function (``pairwise_distance`` by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)
