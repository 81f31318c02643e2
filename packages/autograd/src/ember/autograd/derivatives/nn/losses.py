"""Derivatives of the elementwise losses (``ember.core.aten.nn.losses``).

Each formula is PyTorch's backward kernel written in core ops, in its order of operations: the
elementwise gradient times ``grad`` (and ``weight``), divided by the input's element count under
``reduction=mean``. Special points follow PyTorch: ``smooth_l1_loss`` sends ``-grad`` where the
difference is exactly ``-beta`` (so ``beta=0`` gives ``-1`` at equality), ``binary_cross_entropy``
divides by ``max(x * (1 - x), 1e-12)`` and its target's gradient is ``-logit(x)``, unclamped.
``kl_div`` is a composite in PyTorch (``xlogy(t, t) - t * x``): its target gradient is NaN where the
target is 0, as autograd through ``xlogy`` gives. The weights of ``binary_cross_entropy`` and
``binary_cross_entropy_with_logits`` and the latter's ``pos_weight`` refuse to require grad; their
forward-mode rules ignore those arguments' tangents, as PyTorch's do.
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import where
from ember.autograd.registry import derivative
from ember.core.dispatch import ops
from ember.core.layout import broadcast_shapes

aten = ops.aten

NONE, MEAN, SUM = 0, 1, 2
EPSILON = 9.999999960041972e-13  # PyTorch's 1e-12 is a float constant: float32(1e-12), exactly


def _norm(reduction: int, count: int) -> float:
    if reduction != MEAN:
        return 1.0
    return 1.0 / count if count else float("inf")  # an empty input: C++'s 1.0 / 0, over no elements


def _mean(g, reduction: int, count: int):
    """PyTorch divides the elementwise gradient by the element count last, under ``mean``."""
    return g / count if reduction == MEAN else g


@derivative(aten.mse_loss.default, save=("self", "target"))
def _mse_loss(grad, self, target, reduction, needs, **_):
    norm = 2.0 * _norm(reduction, self.numel())
    g_self = norm * (self - target) * grad if needs[0] else None
    g_target = norm * (target - self) * grad if needs[1] else None
    return g_self, g_target


def _smooth_l1_grad(grad, x, y, reduction: int, beta: float):
    norm = _norm(reduction, x.numel())
    d = x - y
    inner = norm * d * grad / beta if beta else d * grad  # the middle branch is empty when beta is 0
    return where(d <= -beta, -norm * grad, where(d >= beta, norm * grad, inner))


@derivative(aten.smooth_l1_loss.default, save=("self", "target"))
def _smooth_l1_loss(grad, self, target, reduction, beta, needs, **_):
    g_self = _smooth_l1_grad(grad, self, target, reduction, beta) if needs[0] else None
    # PyTorch runs the same backward with the operands swapped, not negated.
    g_target = _smooth_l1_grad(grad, target, self, reduction, beta) if needs[1] else None
    return g_self, g_target


def _reduced(loss, reduction: int):
    if loss is None or reduction == NONE:
        return loss
    return loss.sum() if reduction == SUM else loss.mean()


def _plus(a, b):
    return b if a is None else a if b is None else a + b


def _binary_cross_entropy_jvp(tangents, self, target, weight, reduction, **_):
    t_self, t_target = tangents[0], tangents[1]
    out = None
    if t_self is not None:
        out = t_self * (self - target) / ((1 - self) * self).clamp_min(EPSILON)
    if t_target is not None:
        out = _plus(out, -(self / (1 - self)).log() * t_target)
    if out is not None and weight is not None:
        out = out * weight
    return _reduced(out, reduction)


@derivative(
    aten.binary_cross_entropy.default,
    save=("self", "target", "weight"),
    refuse=("weight",),
    jvp=_binary_cross_entropy_jvp,
)
def _binary_cross_entropy(grad, self, target, weight, reduction, needs, **_):
    g_self = g_target = None
    if needs[0]:
        denominator = ((1 - self) * self).clamp_min(EPSILON)
        g_self = grad * (self - target) / denominator
        if weight is not None:
            g_self = g_self * weight
        g_self = _mean(g_self, reduction, self.numel())
    if needs[1]:
        g_target = -(self / (1 - self)).log() * grad
        if weight is not None:
            g_target = g_target * weight
        g_target = _mean(g_target, reduction, self.numel())
    return g_self, g_target, None


def _log_sigmoid(x):
    """``min(x, 0) - log1p(exp(-|x|))``, PyTorch's stable form."""
    return where(x < 0, x, 0) - (-x.abs()).exp().log1p()


def _binary_cross_entropy_with_logits_jvp(tangents, self, target, weight, pos_weight, reduction, **_):
    t_self, t_target = tangents[0], tangents[1]
    out = None
    if t_self is not None:
        if pos_weight is not None:
            scaled = pos_weight * target
            out = t_self * ((scaled + 1 - target) * self.sigmoid() - scaled)
        else:
            out = t_self * (self.sigmoid() - target)
    if t_target is not None:
        if pos_weight is not None:
            out = _plus(out, t_target * (_log_sigmoid(-self) - _log_sigmoid(self) * pos_weight))
        else:
            out = _plus(out, t_target * -self)
    if out is not None and weight is not None:
        out = out * weight
    return _reduced(out, reduction)


@derivative(
    aten.binary_cross_entropy_with_logits.default,
    save=("self", "target", "weight", "pos_weight"),
    refuse=("weight", "pos_weight"),
    jvp=_binary_cross_entropy_with_logits_jvp,
)
def _binary_cross_entropy_with_logits(grad, self, target, weight, pos_weight, reduction, needs, **_):
    g_self = g_target = None
    if needs[0]:
        if pos_weight is not None:
            scaled = pos_weight * target
            g_self = (scaled + 1 - target) * self.sigmoid() - scaled
        else:
            g_self = self.sigmoid() - target
        g_self = g_self * grad
        if weight is not None:
            g_self = g_self * weight
        g_self = _mean(g_self, reduction, self.numel())
    if needs[1]:
        if pos_weight is not None:
            g_target = _log_sigmoid(-self) - _log_sigmoid(self) * pos_weight
        else:
            g_target = -self
        g_target = g_target * grad
        if weight is not None:
            g_target = g_target * weight
        g_target = _mean(g_target, reduction, self.numel())
    return g_self, g_target, None, None


@derivative(aten.kl_div.default, save=("self", "target"))
def _kl_div(grad, self, target, reduction, log_target, needs, **_):
    shape = broadcast_shapes(tuple(self.shape), tuple(target.shape))
    count = 1
    for s in shape:
        count *= s
    g = grad.expand(shape) if reduction != NONE else grad
    if reduction == MEAN:
        g = g / count
    g_self = g_target = None
    if log_target:
        e = target.exp()
        if needs[0]:
            g_self = -(g * e)
        if needs[1]:
            g_target = g * (target - self) * e + g * e
    else:
        if needs[0]:
            g_self = -(g * target)
        if needs[1]:
            log_t = where(target != 0, target.log(), 0)
            g_target = g * log_t + g * target / target - g * self
    return g_self, g_target
