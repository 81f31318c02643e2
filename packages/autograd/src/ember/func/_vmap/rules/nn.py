"""Neural-network ops: convolution, pooling, padding, resampling, normalization, losses.

These ops already take a leading batch dim ``N``: a batched input folds the vmap batch into ``N``
(``(B, N, C, ...)`` runs as ``(B*N, C, ...)``), and a lane without ``N`` simply uses the batch as
``N``. Where the parameters are batched (per-lane weights), or where an op reduces across ``N``
(batch norm's statistics, losses' means), lanes must not mix, and the op loops over them.
"""

from __future__ import annotations

from ember.func._vmap.common import aten, loop
from ember.func._vmap.table import register


def fold_rule(full_rank: int):
    """Ops on ``(N, C, *spatial)`` input with ``full_rank`` dims that also accept one dim fewer."""

    def rule(call):
        x = call.args[0]
        others = [a for a in (*call.args[1:], *call.kwargs.values()) if call.batched(a)]
        if others or not call.batched(x):
            return loop(call)
        rank = x.ndim - 1
        if rank == full_rank - 1:
            return call.op(*call.args, **call.kwargs)
        if rank != full_rank:
            return loop(call)  # the op's own error names the lane's shape
        n = x.shape[1]
        folded = x.reshape((call.size * n, *tuple(x.shape[2:])))
        result = call.op(folded, *call.args[1:], **call.kwargs)
        if isinstance(result, tuple):
            return tuple(r.reshape((call.size, n, *tuple(r.shape[1:]))) for r in result)
        return result.reshape((call.size, n, *tuple(result.shape[1:])))

    return rule


register(fold_rule(4), aten._adaptive_avg_pool2d.default, aten.avg_pool2d.default)
register(fold_rule(4), aten.max_pool2d_with_indices.default)
register(fold_rule(4), aten.upsample_nearest2d.default, aten._upsample_nearest_exact2d.default)
register(fold_rule(4), aten.upsample_bilinear2d.default)
register(fold_rule(3), aten.upsample_nearest1d.default, aten._upsample_nearest_exact1d.default)
register(fold_rule(3), aten.reflection_pad1d.default, aten.replication_pad1d.default)
register(fold_rule(4), aten.reflection_pad2d.default, aten.replication_pad2d.default)
register(fold_rule(5), aten.reflection_pad3d.default, aten.replication_pad3d.default)


def _convolution(call):
    """A batched input with shared weights folds into N; per-lane weights or bias loop over lanes."""
    x, weight, bias = call.args[:3]
    if call.batched(weight) or call.batched(bias) or not call.batched(x):
        return loop(call)
    n = x.shape[1]
    folded = x.reshape((call.size * n, *tuple(x.shape[2:])))
    out = call.op(folded, *call.args[1:], **call.kwargs)
    return out.reshape((call.size, n, *tuple(out.shape[1:])))


register(_convolution, aten.convolution.default)
# Lanes must not share statistics (batch norm, group norm over N) or a reduction (losses), and
# circular padding has no single-call form for an extra leading dim: these loop over the lanes.
register(
    loop,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats,
    aten._native_batch_norm_legit_no_training.default,
    aten.native_group_norm.default,
    aten._pad_circular.default,
    aten.binary_cross_entropy.default,
    aten.binary_cross_entropy_with_logits.default,
    aten.kl_div.default,
    aten.smooth_l1_loss.default,
    aten.nll_loss_forward.default,
)
# The backward kernels: each lane has its own input, gradient and statistics or indices. Results an
# output mask leaves out are None in every lane, which ``loop`` keeps.
register(
    loop,
    aten.max_pool2d_with_indices_backward.default,
    aten.native_batch_norm_backward.default,
    aten.convolution_backward.default,
    aten.nll_loss_backward.default,
)
