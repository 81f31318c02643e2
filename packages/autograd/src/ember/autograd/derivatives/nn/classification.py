"""Derivative of ``nll_loss_forward`` (``ember.core.aten.nn.classification``).

The input's gradient is PyTorch's ``nll_loss_backward`` op (``ember.core.aten.nn.nll_loss_backward``),
whose decomposition autograd records when the backward is itself differentiated. ``total_weight``
carries no gradient, and the class weights refuse to require grad, as in PyTorch.
``cross_entropy_loss`` differentiates through its decomposition (``log_softmax`` then this op).
Forward mode has its own rule, which ignores the weights' tangents (the reverse-over-reverse rule
would need them to require grad).
"""

from __future__ import annotations

from ember.autograd.registry import derivative, through_decomposition
from ember.core.dispatch import ops

aten = ops.aten


def _nll_loss_forward_jvp(tangents, self, target, weight, reduction, ignore_index, **_):
    """Linear in ``self`` (the weights and ``total_weight`` do not depend on it); the weights'
    tangents are ignored, as PyTorch's forward formula does."""
    if tangents[0] is None:
        return None, None
    return aten.nll_loss_forward.default(tangents[0], target, weight, reduction, ignore_index)[0], None


@derivative(
    aten.nll_loss_forward.default,
    save=("target", "weight", "result"),
    output_differentiable=(True, False),
    refuse=("weight",),
    jvp=_nll_loss_forward_jvp,
)
def _nll_loss_forward(grad, self, target, weight, reduction, ignore_index, result, **_):
    return aten.nll_loss_backward.default(grad[0], self, target, weight, reduction, ignore_index, result[1]), None, None


# Double backward records the parts of its decomposition.
through_decomposition(aten.nll_loss_backward.default)
