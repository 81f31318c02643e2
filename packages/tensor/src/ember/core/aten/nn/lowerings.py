"""Decompositions of losses, one_hot and circular padding into core ops (see
``ember.core.aten.lowering``). ``reduction`` is 0 (none), 1 (mean) or 2 (sum), as in the schemas.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.lowering import lowered
from ember.core.aten.nn import embedding, losses, padding  # noqa: F401  (defines the ops)
from ember.core.dispatch import ops

aten = ops.aten


def _reduce(loss, reduction: int):
    losses._check_reduction(reduction)
    if reduction == losses.MEAN:
        return aten.mean.dim(loss, list(range(loss.ndim)))
    if reduction == losses.SUM:
        return aten.sum.dim_IntList(loss, list(range(loss.ndim)))
    return loss


@lowered(aten.mse_loss.default)
def _mse_loss(self, target, reduction=losses.MEAN):
    difference = self - target
    return _reduce(difference * difference, reduction)


@lowered(aten.smooth_l1_loss.default)
def _smooth_l1_loss(self, target, reduction=losses.MEAN, beta=1.0):
    distance = aten.abs.default(self - target)
    if beta == 0:
        return _reduce(distance, reduction)
    quadratic = distance * distance * (0.5 / beta)
    return _reduce(aten.where.self(distance < beta, quadratic, distance - 0.5 * beta), reduction)


@lowered(aten.binary_cross_entropy.default)
def _binary_cross_entropy(self, target, weight=None, reduction=losses.MEAN):
    # The logarithms are clamped at -100, as PyTorch's kernel does, so that 0 and 1 give finite losses.
    log_p = aten.clamp.default(aten.log.default(self), -100)
    log_q = aten.clamp.default(aten.log1p.default(-self), -100)
    loss = (target - 1) * log_q - target * log_p
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@lowered(aten.binary_cross_entropy_with_logits.default)
def _bce_with_logits(self, target, weight=None, pos_weight=None, reduction=losses.MEAN):
    # log(1 + exp(-x)) written to stay finite: max(-x, 0) + log(exp(-max) + exp(-x - max)).
    shift = aten.clamp.default(-self, 0)
    log_sigmoid_neg = shift + aten.log.default(aten.exp.default(-shift) + aten.exp.default(-self - shift))
    if pos_weight is not None:
        scale = (pos_weight - 1) * target + 1
        loss = (1 - target) * self + scale * log_sigmoid_neg
    else:
        loss = (1 - target) * self + log_sigmoid_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@lowered(aten.kl_div.default)
def _kl_div(self, target, reduction=losses.MEAN, *, log_target=False):
    if log_target:
        loss = aten.exp.default(target) * (target - self)
    else:
        zero = aten.full_like.default(target, 0)
        safe = aten.where.self(target > 0, target, aten.full_like.default(target, 1))
        loss = aten.where.self(target > 0, target * (aten.log.default(safe) - self), zero)
    return _reduce(loss, reduction)


@lowered(aten.one_hot.default)
def _one_hot(self, num_classes=-1):
    embedding._check_one_hot(self)
    if num_classes == -1:
        # The number of classes is read from the data, as PyTorch does: a trace without data (fake
        # tensors) stops here with its data-dependent error.
        num_classes = int(aten.amax.default(self, list(range(self.ndim)))) + 1
    classes = aten.arange.start_step(0, num_classes, 1, dtype=D.int64, device=self.device)
    return aten._to_copy.default(aten.eq.Tensor(aten.unsqueeze.default(self, -1), classes), dtype=D.int64)


@lowered(aten._pad_circular.default)
def _pad_circular(self, pad):
    out = self
    for i in range(len(pad) // 2):
        dim = self.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        # A negative pad crops first; the wrapped parts come from what remains.
        size = out.shape[dim]
        center = aten.slice.Tensor(out, dim, max(-before, 0), size - max(-after, 0))
        kept = center.shape[dim]
        parts = [center]
        if before > 0:
            parts.insert(0, aten.slice.Tensor(center, dim, kept - before, kept))
        if after > 0:
            parts.append(aten.slice.Tensor(center, dim, 0, after))
        out = aten.cat.default(parts, dim) if len(parts) > 1 else aten.clone.default(parts[0])
    return out
