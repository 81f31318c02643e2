"""The ``torch.<name>`` forms of functions PyTorch also offers in ``torch.nn.functional``
(``ember.pixel_shuffle``, ``ember.selu``, ``ember.max_pool1d``, ...), with the top-level signatures.

They live in ember-nn, which the core cannot import; ``ember`` reaches them here on first use.
"""

from __future__ import annotations

import ember.nn.functional as F
from ember.core.tensor import Tensor

# Same signature at the top level as in nn.functional (the top-level ones have no ``inplace``).
SAME = (
    "adaptive_avg_pool1d",
    "alpha_dropout",
    "avg_pool1d",
    "bilinear",
    "celu",
    "channel_shuffle",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose3d",
    "feature_alpha_dropout",
    "hardshrink",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool3d",
    "native_channel_shuffle",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "rrelu",
    "selu",
    "threshold",
)
globals().update({name: getattr(F, name) for name in SAME})


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """The pooled values and their indices (the top-level form always returns both)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def selu_(input: Tensor) -> Tensor:
    return F.selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return F.rrelu(input, lower, upper, training, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return F.threshold(input, threshold, value, inplace=True)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.feature_alpha_dropout(input, p, train, inplace=True)


NAMES = (
    *SAME,
    "adaptive_max_pool1d",
    "selu_",
    "celu_",
    "rrelu_",
    "threshold_",
    "alpha_dropout_",
    "feature_alpha_dropout_",
)
