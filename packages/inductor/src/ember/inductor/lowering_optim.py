"""Lowerings that optimizer updates need beyond ``lowering.py``'s table.

A compiled optimizer step keeps its step counts as tensors, so its bias corrections are
``beta ** step``: ``pow.Scalar`` (a Python number raised to a tensor). The core has no
``_foreach_*`` multi-tensor ops: the optimizers' ``foreach`` form runs one per-tensor op per
parameter and stage, so its graphs hold the same per-tensor pointwise ops as the loop form, and the
scheduler's horizontal fusion and combo kernels (``scheduler.py``, ``combo.py``) do what lowering
``_foreach_*`` ops into per-tensor loops would.
"""

from __future__ import annotations

from ember.inductor.lowering import as_loader, make_box, pointwise, register
from ember.inductor.virtualized import ops


@register("pow.Scalar")
def pow_scalar(ctx, base, exponent):
    return pointwise(ctx, [base, exponent], lambda b, e: ops.pow(b, e))


@register("copy.default")
def copy(ctx, dst, src, non_blocking=False):
    """The functional ``copy``: ``src`` broadcast to ``dst``'s sizes, in ``dst``'s dtype (amsgrad's
    running maximum is updated by ``copy_``, which functionalization turns into this)."""
    return make_box(dst.size, ctx.out_dtype, as_loader(src, dst.size, ctx.out_dtype))


__all__ = ["copy", "pow_scalar"]
