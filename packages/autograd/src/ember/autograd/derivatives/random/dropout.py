"""Derivative of ``native_dropout`` (``ember.core.aten.random.dropout``): ``grad * mask * scale`` with the
op's own mask and PyTorch's scale (``1 / (1 - p)``, 0 when ``p == 1``; 1 when not training, where
the mask is all True). ``dropout`` and ``dropout_`` differentiate through their decompositions into
``native_dropout``, which draw the same numbers as their kernels.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.native_dropout.default, save=("result",), output_differentiable=(True, False))
def _native_dropout(grad, input, p, train, result, **_):
    grad = grad[0]
    mask = result[1]
    if train is False:
        return grad * mask
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return grad * mask * scale
