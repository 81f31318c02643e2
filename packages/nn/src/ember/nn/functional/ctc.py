"""``ctc_loss``: the connectionist temporal classification loss, by the forward (alpha) recursion.

Each target ``l`` is extended with blanks, ``l' = (blank, l1, blank, l2, ..., blank)``; ``alpha_t(s)``
is the log-probability of all alignments of the first ``t`` frames that end at ``l'[s]``. One step
takes, for every batch element and position at once, the log-sum-exp of staying, moving one place
and skipping a blank (allowed onto a label different from the one two places back), plus the
frame's log-probability of ``l'[s]``; a sample whose input has ended keeps its alphas. The loss is
``-log(alpha(2S) + alpha(2S - 1))`` at the sample's last frame. Gradients come from autograd through
the recursion, plus the one term PyTorch's kernel adds: its gradient is ``exp(log_probs) -
posterior``, the loss's gradient through a log-softmax (it assumes ``log_probs`` are normalized),
where the recursion alone gives ``-posterior``. A zero-valued term ``exp(lp) - exp(lp).detach()``,
summed over each sample's frames, supplies the ``exp(log_probs)`` part.

Unreachable cells hold a large negative finite number instead of ``-inf``, so that the
log-sum-exp's gradient stays finite where no alignment passes; a loss at that level is infinite.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.pointwise.ternary import where_function as _where
from ember.core.aten.shape.joining import cat, stack
from ember.core.creation import tensor as make_tensor
from ember.core.functional._reduction import get_enum
from ember.core.tensor import Tensor

__all__ = ["ctc_loss"]

_UNREACHABLE = -1e30


def _lengths(value: Any, name: str) -> np.ndarray:
    if isinstance(value, Tensor):
        if value.is_floating_point():
            raise RuntimeError(f"{name} must be integral")
        return np.asarray(value.numpy(), dtype=np.int64).reshape(-1)
    return np.asarray(list(value) if isinstance(value, (list, tuple)) else [value], dtype=np.int64)


def ctc_loss(
    log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
    reduction: str = "mean", zero_infinity: bool = False,
) -> Tensor:  # fmt: skip
    """The CTC loss of ``log_probs`` ``(T, N, C)`` (or ``(T, C)``) against padded ``(N, S)`` or
    concatenated targets."""
    enum = get_enum(reduction)
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2D or 3D, but got {log_probs.dim()}D")
    frames, batch, classes = lp.shape
    in_len = _lengths(input_lengths, "input_lengths")
    tg_len = _lengths(target_lengths, "target_lengths")
    if len(in_len) != batch:
        raise RuntimeError(f"input_lengths must be of size batch_size, got {len(in_len)} for batch size {batch}")
    if len(tg_len) != batch:
        raise RuntimeError(f"target_lengths must be of size batch_size, got {len(tg_len)} for batch size {batch}")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    for length in in_len:
        if length > frames:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {frames}, but got value {length} (while checking "
                "arguments for ctc_loss_cpu)"
            )
    flat = np.asarray(targets.numpy(), dtype=np.int64)
    if not batched:
        flat = flat.reshape(1, -1)
    longest = int(tg_len.max()) if batch else 0
    labels = np.full((batch, longest), blank, dtype=np.int64)
    if flat.ndim == 1:  # the targets of all samples, one after the other
        offsets = np.concatenate([[0], np.cumsum(tg_len)[:-1]])
        for n in range(batch):
            labels[n, : tg_len[n]] = flat[offsets[n] : offsets[n] + tg_len[n]]
    else:
        if flat.shape[1] < longest:
            raise RuntimeError(
                f"Expected tensor to have size at least {longest} at dimension 1, but got size {flat.shape[1]} for "
                "argument #2 'targets' (while checking arguments for ctc_loss_cpu)"
            )
        for n in range(batch):
            labels[n, : tg_len[n]] = flat[n, : tg_len[n]]
    width = 2 * longest + 1
    extended = np.full((batch, width), blank, dtype=np.int64)
    extended[:, 1::2] = labels
    skip = np.zeros((batch, width), dtype=bool)
    skip[:, 2:] = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
    emissions = lp.gather(
        2, make_tensor(extended, dtype=D.int64, device=lp.device).unsqueeze(0).expand(frames, batch, width)
    )
    fill = lp.new_full((batch, width), _UNREACHABLE)
    start = np.zeros((batch, width), dtype=bool)
    start[:, 0] = True
    start[:, 1] = tg_len > 0
    alpha = _where(make_tensor(start, device=lp.device), emissions[0], fill)
    skip_mask = make_tensor(skip, device=lp.device)
    pad1 = lp.new_full((batch, 1), _UNREACHABLE)
    pad2 = lp.new_full((batch, 2), _UNREACHABLE)
    for t in range(1, frames):
        shifted1 = _cat_right(pad1, alpha[:, :-1])
        shifted2 = _where(skip_mask, _cat_right(pad2, alpha[:, :-2]), fill) if width > 2 else fill
        step = stack([alpha, shifted1, shifted2], 0).logsumexp(0) + emissions[t]
        running = make_tensor((t < in_len)[:, None], device=lp.device)
        alpha = _where(running, step, alpha)
    last = make_tensor(2 * tg_len, dtype=D.int64, device=lp.device).unsqueeze(1)
    before = make_tensor(np.maximum(2 * tg_len - 1, 0), dtype=D.int64, device=lp.device).unsqueeze(1)
    end = alpha.gather(1, last).squeeze(1)
    end_before = _where(
        make_tensor(tg_len > 0, device=lp.device),
        alpha.gather(1, before).squeeze(1),
        lp.new_full((batch,), _UNREACHABLE),
    )
    total = stack([end, end_before], 0).logsumexp(0)
    impossible = (total < _UNREACHABLE / 2) | make_tensor(in_len == 0, device=lp.device)
    losses = _where(impossible, lp.new_full((batch,), float("inf")), -total)
    if lp.requires_grad:
        frames_in = make_tensor((np.arange(frames)[:, None] < in_len[None, :])[:, :, None], device=lp.device)
        probs = lp.exp()
        losses = losses + _where(frames_in, probs - probs.detach(), lp.new_zeros(())).sum((0, 2))
    if zero_infinity:
        losses = _where(impossible, lp.new_zeros((batch,)), losses)
    if enum == 1:
        losses = (losses / make_tensor(np.maximum(tg_len, 1), device=lp.device).to(losses.dtype)).mean()
    elif enum == 2:
        losses = losses.sum()
    elif not batched:
        losses = losses.squeeze(0)
    return losses


def _cat_right(pad: Tensor, values: Tensor) -> Tensor:
    return cat([pad, values], 1)
