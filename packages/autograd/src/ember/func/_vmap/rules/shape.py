"""Views and shape ops: the batch stays at dim 0 and the lanes' dims move one to the right.

Dim arguments are normalized against a lane's rank (so errors name the lane's dims, as without
vmap) and shifted past the batch; size arguments get the batch size in front.
"""

from __future__ import annotations

from ember.core.aten.shape.joining import cat_function
from ember.func._vmap.common import Bound, aten, check_inplace, logical_ndim, loop, pad_to, shift, unsupported
from ember.func._vmap.table import register


def same(call):
    """Ops that act on each lane's own dims with no dim argument: the value goes through as it is."""
    check_inplace(call)
    return call.op(*call.args, **call.kwargs)


register(
    same,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh.default,
    aten.clone.default,
    aten._to_copy.default,
    aten.positive.default,
    aten.tril.default,
    aten.triu.default,
    aten.tril_.default,
    aten.triu_.default,
    aten.empty_like.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.full_like.default,
    aten.constant_pad_nd.default,
    aten.view_as_real.default,  # the batch dim sits in front; the view adds a last dim
)


def dims_rule(*names: str, extra: int = 0):
    """A rule for ops whose ``names`` arguments are dims (ints or lists) of a single batched ``self``.

    ``extra`` is added to the lane's rank for normalization (``unsqueeze`` may name one dim more).
    A 0-dim lane is given one dim of size 1 for the call and loses it again after.
    """

    def rule(call):
        check_inplace(call)
        bound = Bound(call)
        x = call.args[0]
        rank = x.ndim - 1 + extra
        lifted = rank == 0 and extra == 0
        if lifted:
            bound.set(call.op.schema.arguments[0].name, x.unsqueeze(1))
        for name in names:
            dim = bound.get(name)
            if dim is None:
                continue
            if isinstance(dim, int):
                bound.set(name, 1 if lifted and dim in (0, -1) else shift(dim, rank))
            else:
                bound.set(name, [1 if lifted and d in (0, -1) else shift(d, rank) for d in dim])
        result = bound.run()
        return _drop_lift(result) if lifted and not call.op.schema.is_inplace else result

    return rule


def _drop_lift(result):
    if isinstance(result, list | tuple):
        parts = [_drop_lift(r) for r in result]
        return type(result)(parts) if type(result) in (list, tuple) else type(result)(*parts)
    # The size-1 dim given to the lane sits at 1; ops that keep it (keepdim, cumsum, unfold) drop it again.
    if result.ndim >= 2:
        return result.squeeze(1)
    return result


register(dims_rule("dim0", "dim1"), aten.transpose.int)
register(
    dims_rule("dim"),
    aten.select.int,
    aten.slice.Tensor,
    aten.narrow.default,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    aten.unbind.int,
    aten.cumsum.default,
    aten.cumsum_.default,
    aten.cumprod.default,
    aten.cumprod_.default,
    aten._softmax.default,
    aten._log_softmax.default,
    aten.softmax.int,
    aten.log_softmax.int,
    aten.sort.default,
    aten.sort.stable,
    aten.topk.default,
    aten.kthvalue.default,
    aten.mode.default,
)
register(dims_rule("dim"), aten.squeeze.dims, aten.squeeze.dim)
register(dims_rule("dims"), aten.flip.default)

register(dims_rule("dim1", "dim2"), aten.diagonal.default)
register(dims_rule("dimension"), aten.unfold.default)
register(dims_rule("dim", extra=1), aten.unsqueeze.default)


def _permute(call):
    x, dims = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs["dims"]
    rank = x.ndim - 1
    if len(dims) != rank:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {rank} is not equal to len(dims) = {len(dims)}"
        )
    return aten.permute.default(x, [0, *(shift(d, rank) for d in dims)])


register(_permute, aten.permute.default)


def _t(call):
    x = call.args[0]
    rank = x.ndim - 1
    if rank > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {rank}D")
    return aten.alias.default(x) if rank < 2 else aten.transpose.int(x, 1, 2)


register(_t, aten.t.default)


def _squeeze(call):
    x = call.args[0]
    dims = [i + 1 for i, n in enumerate(x.shape[1:]) if n == 1]
    return aten.squeeze.dims(x, dims) if dims else aten.alias.default(x)


register(_squeeze, aten.squeeze.default)


def _with_size(name: str):
    """``view``/``reshape``/``new_zeros``...: the lanes' size gets the batch size in front."""

    def rule(call):
        bound = Bound(call)
        size = bound.get(name)
        size = (size,) if isinstance(size, int) else tuple(size)
        bound.set(name, (call.size, *size))
        return bound.run()

    return rule


register(_with_size("size"), aten.view.default, aten.new_zeros.default, aten.new_ones.default)
register(_with_size("size"), aten.new_empty.default, aten.new_full.default)
register(_with_size("shape"), aten.reshape.default)


def _expand(call):
    x = call.args[0]
    size = tuple(call.args[1]) if len(call.args) > 1 else tuple(call.kwargs["size"])
    rank = x.ndim - 1
    if len(size) < rank:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(x.shape[1:])}}}, size=[{', '.join(map(str, size))}]): the number of "
            f"sizes provided ({len(size)}) must be greater or equal to the number of dimensions in the tensor ({rank})"
        )
    return aten.expand.default(pad_to(call, x, len(size)), (call.size, *size))


register(_expand, aten.expand.default)


def _repeat(call):
    x = call.args[0]
    repeats = tuple(call.args[1]) if len(call.args) > 1 else tuple(call.kwargs["repeats"])
    rank = x.ndim - 1
    if len(repeats) < rank:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return aten.repeat.default(pad_to(call, x, len(repeats)), (1, *repeats))


register(_repeat, aten.repeat.default)


def _cat(call):
    bound = Bound(call)
    tensors = list(bound.get("tensors"))
    dim = bound.get("dim")
    # A 1-D empty lane is skipped by cat whatever the others' shapes (legacy behavior kept by PyTorch).
    kept = [t for t in tensors if not (logical_ndim(call, t) == 1 and t.shape[-1] == 0)] or tensors[:1]
    rank = max(logical_ndim(call, t) for t in kept)
    if rank == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = shift(dim, rank)
    return cat_function([call.expand(t) for t in kept], d)


register(_cat, aten.cat.default)


def _copy(call):
    from ember.func._vmap.rules.pointwise import pointwise

    return pointwise(call)


register(_copy, aten.copy_.default)


def _scatter_rule(*names: str):
    """The scatters that invert views: ``self`` and ``src`` batched at 0 (each lane its own copy of an
    unbatched one), the dims shifted past the batch."""

    def rule(call):
        bound = Bound(call)
        self_name, src_name = (a.name for a in call.op.schema.arguments[:2])
        x = call.expand(bound.get(self_name))
        bound.set(self_name, x)
        bound.set(src_name, call.expand(bound.get(src_name)))
        rank = x.ndim - 1
        for name in names:
            bound.set(name, shift(bound.get(name), rank))
        return bound.run()

    return rule


register(_scatter_rule("dim"), aten.slice_scatter.default, aten.select_scatter.default)
register(_scatter_rule("dim1", "dim2"), aten.diagonal_scatter.default)


def _as_strided(call):
    raise RuntimeError(
        "vmap: as_strided is not supported inside vmap: its sizes and strides describe one lane's memory, which "
        "a batch does not have. Use view, expand or unfold instead."
    )


register(_as_strided, aten.as_strided.default, aten.as_strided_scatter.default)


def _fill(call):
    """``fill_`` with a batched 0-dim value fills each lane with its own value."""
    check_inplace(call)
    x, value = call.args[0], call.args[1]
    if call.batched(value):
        x.copy_(pad_to(call, value, x.ndim - 1))
        return None
    return call.op(x, value)


register(_fill, aten.fill_.Scalar)


def _view_dtype(call):
    """A dtype view reinterprets a lane's last dim, which must be contiguous: the batch cannot sit there."""
    x, dtype = call.args[0], call.args[1]
    if x.dtype.itemsize != dtype.itemsize and x.ndim > 1 and x.stride(-1) != 1:
        raise RuntimeError(
            "vmap: view(dtype) with a different element size needs each lane's last dim contiguous in memory; "
            "map over another dim, or call .contiguous() first"
        )
    return call.op(x, dtype)


register(_view_dtype, aten.view.dtype)


def _view_as_complex(call):
    """The pairs a complex view reads are each lane's last dim, which must be contiguous: the batch cannot sit there."""
    x = call.args[0]
    if x.ndim > 1 and x.stride(-1) != 1:
        raise RuntimeError(
            "vmap: view_as_complex needs each lane's last dim contiguous in memory; map over another dim, or call "
            ".contiguous() first"
        )
    return call.op(x)


register(_view_as_complex, aten.view_as_complex.default)


def _lane_metadata(call):
    """A lane's sizes, strides and element count: the value's, past its batch dim at 0."""
    x = call.args[0]
    rank = x.ndim - 1
    if call.op is aten.sym_numel.default:
        return x.numel() // x.size(0) if x.size(0) else 0
    if call.op is aten.sym_storage_offset.default:
        return x.storage_offset()
    return call.op(x, shift(call.args[1], rank))


register(
    _lane_metadata,
    aten.sym_size.int,
    aten.sym_stride.int,
    aten.sym_numel.default,
    aten.sym_storage_offset.default,
)


# slice_inverse reads one lane's storage laid out as that lane's src: run per lane.
register(loop, aten.slice_inverse.default)

# resize_ re-lays-out a tensor's storage: a batch of lanes sharing one storage cannot each be resized.
register(
    unsupported("resize_ changes the layout of the storage the lanes share; resize outside vmap"),
    aten.resize_.default,
    aten.resize_as_.default,
)
