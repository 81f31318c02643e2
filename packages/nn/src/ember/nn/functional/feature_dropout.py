"""Dropout's relatives: whole-channel dropout (``dropout1d/2d/3d``) and the self-normalizing
``alpha_dropout`` and ``feature_alpha_dropout``, composed from a Bernoulli mask.

Channel dropout draws one keep/drop sample per (sample, channel) and broadcasts it over the
spatial dimensions. Alpha dropout sets dropped elements to SELU's negative saturation value and
then applies the affine map ``a * x + b`` that keeps a zero-mean, unit-variance input so (with
PyTorch's constants); it runs only in training.
"""

from __future__ import annotations

import math
import warnings

from ember.autograd import no_grad
from ember.core.aten.factories.factories import empty_function
from ember.core.tensor import Tensor

__all__ = ["alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]

# -SELU's scale * alpha: the value SELU tends to for very negative inputs.
_ALPHA = 1.7580993408473766


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _mask(input: Tensor, p: float, feature: bool) -> Tensor:
    """1 where an element (or a whole channel, with ``feature``) is kept, 0 where dropped."""
    if feature:
        if input.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = (*input.shape[:2], *([1] * (input.ndim - 2)))
    else:
        shape = tuple(input.shape)
    with no_grad():
        return empty_function(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def _dropout_impl(input: Tensor, p: float, training: bool, inplace: bool, alpha: bool, feature: bool) -> Tensor:
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zeros = input.new_zeros(())
        return input.mul_(zeros) if inplace else input * zeros
    keep = _mask(input, p, feature)
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        shift = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
        scale = keep * a
        return input.mul_(scale).add_(shift) if inplace else input * scale + shift
    scale = keep / (1 - p)
    return input.mul_(scale) if inplace else input * scale


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    result = _dropout_impl(x, p, training, inplace, alpha=False, feature=True)
    if inplace:
        return input
    return result if batched else result.squeeze(0)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an ``(N, C, H, W)`` input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout instead. "
            "Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        # As PyTorch today: a 3-D input is taken as (N, C, L), one mask per (N, C).
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, alpha=False, feature=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout instead. "
            "Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    result = _dropout_impl(x, p, training, inplace, alpha=False, feature=True)
    if inplace:
        return input
    return result if batched else result.squeeze(0)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True, feature=True)
