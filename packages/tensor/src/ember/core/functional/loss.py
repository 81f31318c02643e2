"""``torch.nn.functional``'s losses: argument handling as PyTorch's Python does (reduction strings,
the deprecated ``size_average``/``reduce``, size checks and warnings), then the ops."""

from __future__ import annotations

import warnings

from ember.core.aten.nn import classification as C
from ember.core.aten.nn import losses as L
from ember.core.functional._reduction import SUM, get_enum, resolve

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
]


def cross_entropy(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0
):
    """Cross entropy of logits ``input`` (class dim 1) against class indices or class probabilities."""
    reduction = resolve(size_average, reduce, reduction)
    return C.cross_entropy_op(input, target, weight, get_enum(reduction), ignore_index, float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` (class dim 1) at the target classes."""
    reduction = resolve(size_average, reduce, reduction)
    return C.nll_loss_nd_op(input, target, weight, get_enum(reduction), ignore_index)


def _warn_sizes(input, target) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def _weighted(errors, weight, input, reduction: str):
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    errors = errors * weight
    if reduction == "none":
        return errors
    if reduction == "sum":
        return errors.sum()
    if reduction == "mean":
        return errors.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _difference_loss(op, name: str):
    def loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
        _warn_sizes(input, target)
        reduction = resolve(size_average, reduce, reduction)
        shape = _broadcast_shape(input, target)
        input, target = input.expand(shape), target.expand(shape)
        if weight is not None:
            diff = input - target
            return _weighted(diff * diff if name == "mse_loss" else diff.abs(), weight, input, reduction)
        return op(input, target, get_enum(reduction))

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = f"``torch.nn.functional.{name}``: the {'squared' if name == 'mse_loss' else 'absolute'} error."
    return loss


def _broadcast_shape(a, b):
    from ember.core.layout import broadcast_shapes

    return broadcast_shapes(tuple(a.shape), tuple(b.shape))


mse_loss = _difference_loss(L.mse_loss_op, "mse_loss")
l1_loss = _difference_loss(L.l1_loss_op, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta`` (halved, over ``beta``), absolute error minus ``beta / 2`` above."""
    _warn_sizes(input, target)
    reduction = resolve(size_average, reduce, reduction)
    shape = _broadcast_shape(input, target)
    return L.smooth_l1_loss_op(input.expand(shape), target.expand(shape), get_enum(reduction), float(beta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``, each log clamped at -100."""
    reduction = resolve(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) is "
            "deprecated. Please ensure they have the same size."
        )
    if weight is not None:
        weight = weight.expand(_broadcast_shape(target, weight))
    return L.bce_op(input, target, weight, get_enum(reduction))


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits."""
    reduction = resolve(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return L.bce_logits_op(input, target, weight, pos_weight, get_enum(reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence of ``target`` from log-probabilities ``input``; 'batchmean' divides the sum by the batch."""
    if size_average is not None or reduce is not None:
        enum = get_enum(resolve(size_average, reduce, reduction))
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support size."
                "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                stacklevel=2,
            )
        enum = SUM if reduction == "batchmean" else get_enum(reduction)
    result = L.kl_div_op(input, target, enum, log_target=log_target)
    if reduction == "batchmean" and input.ndim != 0:
        result = result / input.shape[0]
    return result
