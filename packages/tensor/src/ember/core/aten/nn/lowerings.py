"""Decompositions of losses, one_hot and circular padding into core ops (see
``ember.core.aten.lowering``). ``reduction`` is 0 (none), 1 (mean) or 2 (sum), as in the schemas.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.lowering import lowered
from ember.core.aten.nn import classification, embedding, losses, resampling
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


@lowered(aten.nll_loss_forward.default)
def _nll_loss_forward(self, target, weight, reduction, ignore_index):
    classification._nll_loss_plan(self, target, weight, reduction)  # the kernel's checks, on metadata
    wide = self.dtype in (D.float16, D.bfloat16)  # the kernel sums in float32
    x = aten._to_copy.default(self, dtype=D.float32) if wide else self
    channel = 0 if self.ndim == 1 else 1
    target = aten._to_copy.default(target, dtype=D.int64) if target.dtype is not D.int64 else target
    kept = aten.ne.Tensor(target, aten.full_like.default(target, ignore_index))
    safe = aten.where.self(kept, target, aten.full_like.default(target, 0))
    picked = aten.squeeze.dims(aten.gather.default(x, channel, aten.unsqueeze.default(safe, channel)), [channel])
    if weight is None:
        w = aten._to_copy.default(kept, dtype=x.dtype)
    else:
        w = aten.index.Tensor(aten._to_copy.default(weight, dtype=x.dtype), [safe])
        w = aten.where.self(kept, w, aten.full_like.default(w, 0))
    loss = -(picked * w)
    if reduction == classification.NONE:
        total = aten.full.default([], 0, dtype=x.dtype, device=x.device)
    else:
        total = aten.sum.dim_IntList(w, list(range(w.ndim)))
        loss = aten.sum.dim_IntList(loss, list(range(loss.ndim)))
        if reduction == classification.MEAN:
            loss = loss / total
    if wide:
        loss, total = aten._to_copy.default(loss, dtype=self.dtype), aten._to_copy.default(total, dtype=self.dtype)
    return loss, total


@lowered(aten.replication_pad1d.default)
def _replication_pad1d(self, padding):
    if len(padding) != 2:
        raise RuntimeError("padding size is expected to be 2")
    if self.ndim not in (2, 3) or any(n == 0 for n in self.shape[1:]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
            f"input, but got: {list(self.shape)}"
        )
    if self.dtype is D.bool_:
        raise NotImplementedError("\"replication_pad1d\" not implemented for 'Bool'")
    width = self.shape[-1]
    before, after = padding
    if width + before + after < 1:
        raise RuntimeError(
            f"input ({list(self.shape)}) is too small. Calculated output size along dimension {self.ndim - 1}: "
            f"{width + before + after}"
        )
    # Each output column reads the input column nearest to it: positions clamped to the edges.
    positions = aten.arange.start_step(-before, width + after, 1, dtype=D.int64, device=self.device)
    source = aten.clamp.default(positions, 0, width - 1)
    return aten.index_select.default(self, self.ndim - 1, source)


def _nearest_source(size, out, scale, exact, device):
    """The input position each output position reads, as the kernel computes it (in float32)."""
    if not exact and out in (size, 2 * size):
        index = aten.arange.start_step(0, out, 1, dtype=D.int64, device=device)
        return index if out == size else aten.div.Tensor_mode(index, 2, rounding_mode="floor")
    if scale is not None and scale > 0:
        step = aten.full.default([], 1.0 / scale, dtype=D.float32, device=device)
    else:
        step = aten.full.default([], size, dtype=D.float32, device=device) / out
    position = aten.arange.start_step(0, out, 1, dtype=D.float32, device=device)
    if exact:
        position = position + 0.5
    index = aten._to_copy.default(aten.floor.default(position * step), dtype=D.int64)
    return aten.clamp.default(index, None, size - 1)


def _nearest(self, output_size, scales, exact: bool, name: str):
    resampling._plan(self, tuple(output_size), name)  # the kernel's checks, on metadata
    out = self
    for i, (size, target, scale) in enumerate(zip(self.shape[2:], output_size, scales, strict=True)):
        out = aten.index_select.default(out, 2 + i, _nearest_source(size, target, scale, exact, self.device))
    return out


@lowered(aten.upsample_nearest1d.default)
def _upsample_nearest1d(self, output_size, scales=None):
    return _nearest(self, output_size, [scales], False, "upsample_nearest1d")


@lowered(aten._upsample_nearest_exact1d.default)
def _upsample_nearest_exact1d(self, output_size, scales=None):
    return _nearest(self, output_size, [scales], True, "_upsample_nearest_exact1d")


@lowered(aten._upsample_nearest_exact2d.default)
def _upsample_nearest_exact2d(self, output_size, scales_h=None, scales_w=None):
    return _nearest(self, output_size, [scales_h, scales_w], True, "_upsample_nearest_exact2d")
