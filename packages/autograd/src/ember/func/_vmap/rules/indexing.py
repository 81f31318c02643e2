"""Indexing ops: gather/scatter, index_*, advanced indexing, masks, searches.

Gather and scatter index every dim of their operands, so all operands are batched (unbatched ones
are expanded, a view) and the dim shifts past the batch. ``index_select`` and the ``index_*`` ops
with an unbatched index shift their dim; with a batched index each lane indexes differently, which
one call cannot express, so they loop over the lanes. Ops whose result shape depends on the data
(``nonzero``, ``masked_select``, ``unique``) cannot batch, as in PyTorch.
"""

from __future__ import annotations

from ember.core.layout import broadcast_shapes
from ember.func._vmap.common import (
    DYNAMIC_SHAPE,
    Bound,
    aten,
    check_inplace,
    logical_ndim,
    loop,
    pad_to,
    shift,
    unsupported,
)
from ember.func._vmap.rules.pointwise import pointwise
from ember.func._vmap.table import register


def _gather_like(call):
    """All tensor operands batched at 0 and the dim shifted: each lane gathers or scatters its own."""
    check_inplace(call)
    bound = Bound(call)
    x = call.args[0]
    rank = logical_ndim(call, x)
    for a in call.op.schema.arguments:
        if a.type.base == "Tensor":
            value = bound.get(a.name)
            if value is not None and not a.is_write:
                if rank == 0 and logical_ndim(call, value) == 0:
                    value = call.expand(value).unsqueeze(1)
                else:
                    value = call.expand(value)
                bound.set(a.name, value)
    if rank == 0:
        shift(bound.get("dim"), 0)
        bound.set(call.op.schema.arguments[0].name, call.expand(x).unsqueeze(1))
        bound.set("dim", 1)
        result = bound.run()
        return None if call.op.schema.is_inplace else result.reshape(result.shape[:1])
    bound.set("dim", shift(bound.get("dim"), rank))
    return bound.run()


register(
    _gather_like,
    aten.gather.default,
    aten.scatter.src,
    aten.scatter.value,
    aten.scatter.reduce,
    aten.scatter.value_reduce,
    aten.scatter_.src,
    aten.scatter_.value,
    aten.scatter_.reduce,
    aten.scatter_.value_reduce,
    aten.scatter_add.default,
    aten.scatter_add_.default,
    aten.scatter_reduce.two,
    aten.scatter_reduce_.two,
)


def _index_dim(call):
    """``index_select``/``index_add``/``index_copy``/``index_fill``: shift the dim when the index is shared.

    A batched index (or a batched ``value`` tensor of ``index_fill``) makes each lane index its own
    positions: the op loops over the lanes.
    """
    bound = Bound(call)
    index = bound.get("index")
    value = bound.get("value") if any(a.name == "value" for a in call.op.schema.arguments) else None
    if call.batched(index) or call.batched(value):
        return loop(call)
    check_inplace(call)
    x = call.args[0]
    rank = logical_ndim(call, x)
    if not call.op.schema.is_inplace:
        bound.set(call.op.schema.arguments[0].name, call.expand(x))
    source = bound.get("source") if any(a.name == "source" for a in call.op.schema.arguments) else None
    if source is not None:
        if logical_ndim(call, source) == 0 and rank > 0:
            source = call.expand(source).reshape((call.size, 1))
        bound.set("source", call.expand(source))
    if rank == 0:
        return loop(call)
    bound.set("dim", shift(bound.get("dim"), rank))
    return bound.run()


register(
    _index_dim,
    aten.index_select.default,
    aten.index_add.default,
    aten.index_add_.default,
    aten.index_copy.default,
    aten.index_copy_.default,
    aten.index_fill.int_Scalar,
    aten.index_fill.int_Tensor,
    aten.index_fill_.int_Scalar,
    aten.index_fill_.int_Tensor,
)


def _index(call):
    """``x[indices]``: with shared indices, a full slice for the batch goes in front of them.

    Advanced indices separated by a slice put their result dims first, ahead of the batch: the batch
    is moved back to dim 0 then. Batched indices loop over the lanes.
    """
    x, indices = call.args[0], list(call.args[1])
    if any(call.batched(i) for i in indices) or not call.batched(x):
        return loop(call)
    used = [k for k, i in enumerate(indices) if i is not None]
    result = aten.index.Tensor(x, [None, *indices])
    if used and used[-1] - used[0] + 1 != len(used):
        shapes = [tuple(indices[k].shape) for k in used]
        if any(indices[k].dtype.name == "bool" or indices[k].dtype.name == "uint8" for k in used):
            return loop(call)
        n = len(broadcast_shapes(*shapes))
        result = result.movedim(n, 0)
    return result


register(_index, aten.index.Tensor)
# A lane's write positions come from its own indices and mask; one call writes one tensor's.
register(loop, aten.index_put_.default, aten.take.default, aten.put.default, aten.put_.default)
register(loop, aten.masked_scatter.default, aten.masked_scatter_.default, aten.nonzero_static.default)
register(loop, aten.embedding_renorm_.default)
register(
    unsupported(DYNAMIC_SHAPE),
    aten.nonzero.default,
    aten.nonzero_numpy.default,
    aten.masked_select.default,
    aten._unique2.default,
    aten.unique_consecutive.default,
    aten.unique_dim.default,
)


def _masked_fill(call):
    """Pointwise in self and mask; a batched fill value becomes a ``where``."""
    bound = Bound(call)
    value = bound.get("value")
    if not call.batched(value):
        return pointwise(call)
    check_inplace(call)
    x, mask = call.args[0], bound.get("mask")
    rank = max(logical_ndim(call, x), logical_ndim(call, mask))
    x_p = pad_to(call, x, rank) if call.batched(x) else x
    m_p = pad_to(call, mask, rank) if call.batched(mask) else mask
    filled = aten.where.self(m_p, pad_to(call, value, rank).to(x.dtype), x_p)
    if call.op.schema.is_inplace:
        x_p.copy_(filled)
        return None
    return filled


register(
    _masked_fill,
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.masked_fill_.Scalar,
    aten.masked_fill_.Tensor,
)


def _one_hot(call):
    bound = Bound(call)
    if bound.get("num_classes") == -1:
        raise RuntimeError(
            "vmap: one_hot with num_classes=-1 infers the number of classes from each lane's data, so lanes could "
            "have different shapes. Pass num_classes explicitly."
        )
    return bound.run()


register(_one_hot, aten.one_hot.default)


def _bucketize(call):
    """The values batch pointwise; batched boundaries differ per lane, so those loop."""
    bound = Bound(call)
    for name in ("boundaries", "sorted_sequence", "sorter"):
        if any(a.name == name for a in call.op.schema.arguments) and call.batched(bound.get(name)):
            return loop(call)
    if call.op is aten.searchsorted.Tensor and logical_ndim(call, bound.get("sorted_sequence")) > 1:
        return loop(call)
    if call.op is aten.searchsorted.Scalar:
        return loop(call)
    return bound.run()


register(_bucketize, aten.bucketize.Tensor, aten.bucketize.Scalar, aten.searchsorted.Tensor, aten.searchsorted.Scalar)
