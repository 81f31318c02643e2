"""``ember.nn.functional``: ``torch.nn.functional``'s names.

The nn ops that the core defines come from ``ember.core.functional``; the activations, the losses
and attention that are composites of other ops are written here (``activation.py``, ``loss.py``,
``attention.py``), so their gradients come from their parts.
"""

from ember.core.functional import *  # noqa: F403
from ember.core.functional import __all__ as _core_all
from ember.nn.functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmin,
    softplus,
    softsign,
    tanh,
)
from ember.nn.functional.attention import scaled_dot_product_attention
from ember.nn.functional.bilinear_form import bilinear
from ember.nn.functional.embedding_bag import embedding_bag
from ember.nn.functional.loss import huber_loss
from ember.nn.functional.multi_head_attention import multi_head_attention_forward
from ember.nn.functional.pooling1d import adaptive_avg_pool1d, avg_pool1d, max_pool1d

__all__ = [
    *_core_all,
    "adaptive_avg_pool1d",
    "avg_pool1d",
    "bilinear",
    "celu",
    "elu",
    "gelu",
    "glu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "huber_loss",
    "leaky_relu",
    "logsigmoid",
    "max_pool1d",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "scaled_dot_product_attention",
    "embedding_bag",
    "multi_head_attention_forward",
    "selu",
    "sigmoid",
    "silu",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
]
