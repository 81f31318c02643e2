"""Derivative of ``nll_loss_forward`` (``ember.core.families.classification``).

The gradient of row ``i`` is ``-weight[target_i] * grad_i`` at its target class and zero elsewhere
(and zero for rows whose target is ``ignore_index``); under ``mean`` it is divided by the
``total_weight`` output. It is built as a comparison of the targets with the class indices (a
one-hot mask the input's shape), so it needs no scatter. ``total_weight`` carries no gradient, and
the class weights refuse to require grad, as in PyTorch. ``cross_entropy_loss`` differentiates
through its decomposition (``log_softmax`` then this op). Forward mode has its own rule, which
ignores the weights' tangents (the reverse-over-reverse rule would need them to require grad).
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.api import functions
from ember.core.dispatch import ops

aten = ops.aten

NONE, MEAN = 0, 1


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
    grad = grad[0]
    if self.ndim == 1:  # one row: class dim 0, a 0-dim target
        class_dim, row_target = 0, target
    else:
        class_dim, row_target = 1, target.unsqueeze(1)
    classes = self.shape[class_dim]
    view = [1] * self.ndim
    view[class_dim] = classes
    labels = functions["arange"](classes, device=grad.device).reshape(view)
    counted = row_target != ignore_index
    picked = (labels == row_target) & counted
    g = grad if reduction == NONE else grad.expand(tuple(target.shape))
    if reduction == MEAN:
        g = g / result[1]
    if self.ndim != 1:
        g = g.unsqueeze(1)
    scale = -g if weight is None else -g * weight.reshape(view)
    return where_zero(picked, scale), None, None


def where_zero(mask, values):
    """``values`` where ``mask``, else 0: a NaN or inf scale off the target stays out."""
    return functions["where"](mask, values, 0)
